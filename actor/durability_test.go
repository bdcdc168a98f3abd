package actor

import (
	"fmt"
	"testing"
)

// With durability always, a write's reply is handed to the loop only once
// an fsync covers its commit: the n-th write, each in a round of its own,
// finds at least n commits fsynced.
func TestAlwaysRepliesFollowFsync(t *testing.T) {
	h := newHarness(t, Config{Durability: Always})
	h.open(1)
	for n := uint64(1); n <= 20; n++ {
		h.submit(1, []string{"SET", fmt.Sprint("k", n), "v"})
		got := h.nextDelivery()
		if string(got.Reply) != "+OK\r\n" {
			t.Fatalf("reply %q", got.Reply)
		}
		if got.durable < n {
			t.Fatalf("write %d acknowledged with only %d commits fsynced", n, got.durable)
		}
	}
}

// Writes that arrive while one fsync runs share the next: many clients'
// writes in one round make one commit and one fsync.
func TestGroupCommit(t *testing.T) {
	h := newHarness(t, Config{Durability: Always})
	a := h.a
	const clients = 50
	release := h.hold()
	for id := uint64(1); id <= clients; id++ {
		h.open(id)
		h.submit(id, []string{"SET", fmt.Sprint("k", id), "v"})
	}
	before := a.durable.fsyncs.Load()
	release()
	for i := 0; i < clients; i++ {
		if got := h.nextDelivery(); got.durable < 1 {
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

// An EXEC's reply takes the same path as any write's: with durability
// always, the n-th EXEC of writes, each in a round of its own, finds at
// least n commits fsynced.
func TestAlwaysExecFollowsFsync(t *testing.T) {
	h := newHarness(t, Config{Durability: Always})
	h.open(1)
	for n := uint64(1); n <= 10; n++ {
		h.submit(1, []string{"MULTI"}, []string{"SET", fmt.Sprint("a", n), "v"}, []string{"INCR", "n"}, []string{"EXEC"})
		got := h.nextDelivery()
		if want := fmt.Sprintf("+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n:%d\r\n", n); string(got.Reply) != want {
			t.Fatalf("reply %q, want %q", got.Reply, want)
		}
		if got.durable < n {
			t.Fatalf("EXEC %d acknowledged with only %d commits fsynced", n, got.durable)
		}
	}
}
