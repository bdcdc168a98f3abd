package actor

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cellar-db/cellar/internal/wait"
	"github.com/cellar-db/cellar/offload"
	"github.com/cellar-db/cellar/storage"
)

// harness drives one actor directly, as the loop would: it opens
// connections, submits their batches and takes the completions the actor
// delivers, which lets a test reach what the wire cannot arrange (several
// messages in one round, a blocking command that is not last in its batch,
// a failed commit).
type harness struct {
	t          *testing.T
	a          *Actor
	deliveries chan delivery
	seq        map[uint64]uint64
}

// delivery is one completion with the number of commits known fsynced
// when the actor handed it to the loop.
type delivery struct {
	Completion
	durable uint64
}

// newHarness starts an actor with cfg on a fresh database, stopped at the
// end of the test.
func newHarness(t *testing.T, cfg Config) *harness { return newHarnessWith(t, cfg, nil) }

// newHarnessWith is newHarness with setup run on the actor before it runs
// (SetReplicator).
func newHarnessWith(t *testing.T, cfg Config, setup func(*Actor)) *harness {
	st, err := storage.Open(storage.Options{Path: filepath.Join(t.TempDir(), "cellar.db")})
	if err != nil {
		t.Fatal(err)
	}
	pool := offload.New(offload.Config{})
	a, err := New(cfg, st, pool, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(a)
	}
	go a.Run()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a.Stop(ctx)
		pool.Close(ctx)
		st.Close()
	})
	return &harness{t: t, a: a, deliveries: make(chan delivery, 1000), seq: map[uint64]uint64{}}
}

// Deliver is the loop's side of every connection the harness opens.
func (h *harness) Deliver(cs []Completion) {
	d := h.a.durable.durable.Load()
	for _, c := range cs {
		h.deliveries <- delivery{c, d}
	}
}

func (h *harness) open(id uint64) { h.a.Open(ConnInfo{ID: id, Sink: h}) }

// submit sends one batch of commands for conn id.
func (h *harness) submit(id uint64, cmds ...[]string) {
	h.seq[id]++
	b := &Batch{ConnID: id, Seq: h.seq[id]}
	for _, cmd := range cmds {
		for _, arg := range cmd {
			b.Args = append(b.Args, []byte(arg))
		}
		b.Ends = append(b.Ends, int32(len(b.Args)))
	}
	h.a.Submit(b)
}

// hold stops the actor between rounds until the returned func is called,
// so that the messages sent meanwhile are taken in one round.
func (h *harness) hold() func() {
	entered, release := make(chan struct{}), make(chan struct{})
	h.a.in.put(message{kind: msgCall, fn: func() { close(entered); <-release }})
	<-entered
	return func() { close(release) }
}

// replies takes the next n completions, by connection.
func (h *harness) replies(n int) map[uint64]string {
	h.t.Helper()
	got := map[uint64]string{}
	for i := 0; i < n; i++ {
		c := h.next()
		got[c.ConnID] = string(c.Reply)
	}
	return got
}

func (h *harness) next() Completion {
	h.t.Helper()
	return h.nextDelivery().Completion
}

func (h *harness) nextDelivery() delivery {
	h.t.Helper()
	select {
	case d := <-h.deliveries:
		return d
	case <-time.After(10 * time.Second):
		h.t.Fatal("no completion")
	}
	return delivery{}
}

func (h *harness) expect(id uint64, want string) {
	h.t.Helper()
	c := h.next()
	if c.ConnID != id || string(c.Reply) != want {
		h.t.Fatalf("completion for %d: %q, want %q for %d", c.ConnID, c.Reply, want, id)
	}
}

func (h *harness) expectNothing() {
	h.t.Helper()
	// A PING on a fresh connection is answered after everything submitted
	// before it: anything owed would have arrived first.
	h.open(999)
	h.submit(999, []string{"PING"})
	h.expect(999, "+PONG\r\n")
	h.a.Closed(999)
}

// waitWaiters waits until n waiters are registered.
func (h *harness) waitWaiters(n int) {
	h.t.Helper()
	wait.For(h.t, 10*time.Second, fmt.Sprintf("%d waiters", n), func() bool { return h.waiters() == n })
}

func (h *harness) waiters() int {
	var n int
	h.a.Call(func() { n = h.a.blk.waiters })
	return n
}
