package actor

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/cellar-db/cellar/internal/wait"
	"github.com/cellar-db/cellar/proto"
)

// heldTarget is a MIGRATE target that reads n requests on its first
// connection, says so on got, and answers answer once release is closed.
func heldTarget(t *testing.T, n int, answer string) (port string, got, release chan struct{}) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got, release = make(chan struct{}), make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		for range n {
			if _, err := proto.ReadReply(r); err != nil {
				return
			}
		}
		close(got)
		<-release
		c.Write([]byte(answer))
		proto.ReadReply(r) // until the source closes
	}()
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	return port, got, release
}

// migrationsDone waits until no MIGRATE waits for its target.
func (h *harness) migrationsDone() {
	h.t.Helper()
	wait.For(h.t, 10*time.Second, "no MIGRATE in flight", func() bool {
		n := 0
		h.a.Call(func() { n = len(h.a.migr().keys) })
		return n == 0
	})
}

// A client that goes away while its MIGRATE waits for the target deletes
// nothing, even when the target acknowledges the keys: the keys stay.
func TestMigrateClientGone(t *testing.T) {
	h := newHarness(t, Config{})
	port, got, release := heldTarget(t, 2, "+OK\r\n+OK\r\n")
	h.open(1)
	h.submit(1, []string{"SET", "k", "v"})
	h.expect(1, "+OK\r\n")
	h.submit(1, []string{"MIGRATE", "127.0.0.1", port, "k", "0", "10000"})
	<-got
	h.waitWaiters(1)
	h.a.Closed(1)
	h.waitWaiters(0)
	close(release)
	h.migrationsDone()
	h.open(2)
	h.submit(2, []string{"GET", "k"})
	h.expect(2, "$1\r\nv\r\n")
	h.expectNothing()
}

// CLIENT UNBLOCK leaves a MIGRATE alone (it waits for no key), and the
// MIGRATE answers once its target does.
func TestMigrateClientUnblock(t *testing.T) {
	h := newHarness(t, Config{})
	port, got, release := heldTarget(t, 2, "+OK\r\n+OK\r\n")
	h.open(1)
	h.open(2)
	h.submit(1, []string{"SET", "k", "v"})
	h.expect(1, "+OK\r\n")
	h.submit(1, []string{"CLIENT", "ID"})
	h.expect(1, ":1\r\n")
	h.submit(1, []string{"MIGRATE", "127.0.0.1", port, "k", "0", "10000"})
	<-got
	h.submit(2, []string{"CLIENT", "UNBLOCK", "1", "ERROR"})
	h.expect(2, ":0\r\n")
	close(release)
	h.expect(1, "+OK\r\n")
	h.submit(2, []string{"EXISTS", "k"})
	h.expect(2, ":0\r\n")
}

// Inside MULTI MIGRATE cannot wait for its target: it answers an error in
// EXEC's array (Redis blocks the whole server instead), unless there is
// nothing to migrate.
func TestMigrateInsideMulti(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.submit(1, []string{"SET", "k", "v"}, []string{"MULTI"},
		[]string{"MIGRATE", "127.0.0.1", "1", "nokey", "0", "1000"},
		[]string{"MIGRATE", "127.0.0.1", "1", "k", "0", "1000"}, []string{"EXEC"})
	want := "+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+NOKEY\r\n" +
		"-ERR migrate cannot wait here (inside MULTI or behind a blocked command)\r\n"
	if got := string(h.next().Reply); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// idleReplicator is a replica link that never connects.
type idleReplicator struct{}

func (idleReplicator) Follow(FollowSpec)     {}
func (idleReplicator) Unfollow()             {}
func (idleReplicator) Status() ReplicaStatus { return ReplicaStatus{State: "connect"} }

// A server that became a replica while a MIGRATE waited deletes nothing
// when the target acknowledges: its data is its master's.
func TestMigrateBecameReplica(t *testing.T) {
	h := newHarnessWith(t, Config{}, func(a *Actor) { a.SetReplicator(idleReplicator{}) })
	port, got, release := heldTarget(t, 2, "+OK\r\n+OK\r\n")
	h.open(1)
	h.open(2)
	h.submit(1, []string{"SET", "k", "v"})
	h.expect(1, "+OK\r\n")
	h.submit(1, []string{"MIGRATE", "127.0.0.1", port, "k", "0", "10000"})
	<-got
	h.submit(2, []string{"REPLICAOF", "127.0.0.1", "1"})
	h.expect(2, "+OK\r\n")
	close(release)
	h.expect(1, "+OK\r\n")
	h.submit(2, []string{"GET", "k"})
	h.expect(2, "$1\r\nv\r\n")
}
