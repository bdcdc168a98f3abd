package actor

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cellar-db/cellar/offload"
	"github.com/cellar-db/cellar/storage"
)

// durableSink records, for each completion, how many commits were known
// fsynced when it was handed over.
type durableSink struct {
	a  **Actor
	ch chan durableAt
}

type durableAt struct {
	c       Completion
	durable uint64
}

func (s durableSink) Deliver(cs []Completion) {
	d := (*s.a).durable.durable.Load()
	for _, c := range cs {
		s.ch <- durableAt{c, d}
	}
}

func newAlwaysActor(t *testing.T) (*Actor, durableSink) {
	st, err := storage.Open(storage.Options{Path: filepath.Join(t.TempDir(), "cellar.db")})
	if err != nil {
		t.Fatal(err)
	}
	pool := offload.New(offload.Config{})
	a, err := New(Config{Durability: Always}, st, pool, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	go a.Run()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a.Stop(ctx)
		pool.Close(ctx)
		st.Close()
	})
	return a, durableSink{a: &a, ch: make(chan durableAt, 1000)}
}

func batchOf(id, seq uint64, args ...string) *Batch {
	b := &Batch{ConnID: id, Seq: seq}
	for _, a := range args {
		b.Args = append(b.Args, []byte(a))
	}
	b.Ends = []int32{int32(len(b.Args))}
	return b
}

// With durability always, a write's reply is handed to the loop only once
// an fsync covers its commit: the n-th write, each in a round of its own,
// finds at least n commits fsynced.
func TestAlwaysRepliesFollowFsync(t *testing.T) {
	a, sink := newAlwaysActor(t)
	a.Open(ConnInfo{ID: 1, Sink: sink})
	for n := uint64(1); n <= 20; n++ {
		a.Submit(batchOf(1, n, "SET", fmt.Sprint("k", n), "v"))
		got := <-sink.ch
		if string(got.c.Reply) != "+OK\r\n" {
			t.Fatalf("reply %q", got.c.Reply)
		}
		if got.durable < n {
			t.Fatalf("write %d acknowledged with only %d commits fsynced", n, got.durable)
		}
	}
}

// Writes that arrive while one fsync runs share the next: many clients'
// writes in one round make one commit and one fsync.
func TestGroupCommit(t *testing.T) {
	a, sink := newAlwaysActor(t)
	const clients = 50
	entered, release := make(chan struct{}), make(chan struct{})
	a.in.put(message{kind: msgCall, fn: func() { close(entered); <-release }})
	<-entered
	for id := uint64(1); id <= clients; id++ {
		a.Open(ConnInfo{ID: id, Sink: sink})
		a.Submit(batchOf(id, 1, "SET", fmt.Sprint("k", id), "v"))
	}
	before := a.durable.fsyncs.Load()
	close(release)
	for i := 0; i < clients; i++ {
		if got := <-sink.ch; got.durable < 1 {
			t.Fatalf("acknowledged before any fsync: %+v", got)
		}
	}
	if n := a.durable.fsyncs.Load() - before; n < 1 || n > 2 {
		t.Fatalf("%d fsyncs for %d writes held in one round", n, clients)
	}
	// Read after the replies arrived, so after the actor counted them.
	if a.stats.writes != clients {
		t.Fatalf("INFO would count %d writes, want %d", a.stats.writes, clients)
	}
}
