package tests

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/cellar-db/cellar/internal/wait"
)

// FAILOVER (actor/failover.go): Redis 6.2's coordinated switch of a
// master and one of its replicas, with Redis 7.0's replies.

// TestFailoverReplies pins FAILOVER's errors and states byte for byte:
// its syntax, a master without replicas, a replica, FORCE without a
// timeout and target, a target that is not a replica; while a failover
// waits for its replica (a raw replica that never acknowledges), REPLICAOF
// and PSYNC are refused and writes wait, INFO says waiting-for-sync, and
// FAILOVER ABORT releases the writes; a TIMEOUT without FORCE aborts; with
// FORCE the master becomes a replica of the target even so, and ABORT
// makes it a master again with a new replication ID; PSYNC ... FAILOVER
// to a master or with another ID is refused.
func TestFailoverReplies(t *testing.T) {
	t.Parallel()
	a := startServer(t)
	needCellar(t, a)
	ctx := context.Background()
	ac := a.client()
	r := a.raw()
	r.expect(errr("ERR FAILOVER requires connected replicas."), "FAILOVER")
	r.expect(errr("ERR No failover in progress."), "FAILOVER", "ABORT")
	r.expect(errr("ERR FAILOVER timeout must be greater than 0"), "FAILOVER", "TIMEOUT", "0")
	r.expect(errr("ERR FAILOVER timeout must be greater than 0"), "FAILOVER", "TIMEOUT", "-5")
	r.expect(errr("ERR value is not an integer or out of range"), "FAILOVER", "TIMEOUT", "soon")
	r.expect(errr("ERR value is not an integer or out of range"), "FAILOVER", "TO", "127.0.0.1", "port")
	r.expect(errr("ERR syntax error"), "FAILOVER", "BOGUS")
	r.expect(errr("ERR syntax error"), "FAILOVER", "ABORT", "TIMEOUT", "5")
	r.expect(errr("ERR syntax error"), "FAILOVER", "TIMEOUT", "5", "TIMEOUT", "6")
	r.expect(errr("ERR syntax error"), "FAILOVER", "TO", "127.0.0.1")
	r.expect(errr("ERR syntax error"), "FAILOVER", "FORCE", "FORCE")
	r.expect(errr("ERR PSYNC FAILOVER can't be sent to a master."), "PSYNC", "0123456789012345678901234567890123456789", "1", "FAILOVER")

	b := startServer(t)
	bc := b.client()
	ahost, aport, _ := net.SplitHostPort(a.addr)
	_, bport, _ := net.SplitHostPort(b.addr)
	if err := bc.Do(ctx, "REPLICAOF", ahost, aport).Err(); err != nil {
		t.Fatal(err)
	}
	if err := ac.Set(ctx, "k", "v0", 0).Err(); err != nil {
		t.Fatal(err)
	}
	caughtUp(t, ac, bc)
	b.raw().expect(errr("ERR FAILOVER is not valid when server is a replica."), "FAILOVER")
	b.raw().expect(errr("ERR PSYNC FAILOVER replid must match my replid."), "PSYNC", "0123456789012345678901234567890123456789", "1", "FAILOVER")
	r.expect(errr("ERR FAILOVER with force option requires both a timeout and target HOST and IP."), "FAILOVER", "FORCE", "TIMEOUT", "100")
	r.expect(errr("ERR FAILOVER with force option requires both a timeout and target HOST and IP."), "FAILOVER", "TO", "127.0.0.1", bport, "FORCE")
	r.expect(errr("ERR FAILOVER target HOST and PORT is not a replica."), "FAILOVER", "TO", "10.9.9.9", bport)
	r.expect(errr("ERR FAILOVER target HOST and PORT is not a replica."), "FAILOVER", "TO", "127.0.0.1", "1")

	// A raw replica (a tap) is online and never acknowledges: a failover
	// to it waits. It announced no port: 0.
	tp := startTap(t, a.addr, "?", -1)
	wait.For(t, 30*time.Second, "the tap to be an online replica", func() bool {
		return strings.Contains(masterInfo(t, ac, "replication", "slave1"), "state=online")
	})
	// The tap acknowledged the offset of its sync once: a write moves the
	// master past it, or the tap would count as caught up (as in Redis).
	if err := ac.Set(ctx, "past-the-tap", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 30*time.Second, "the master's offset to pass the tap's", func() bool {
		off, _ := strconv.ParseInt(masterInfo(t, ac, "replication", "master_repl_offset"), 10, 64)
		return off > tp.offset
	})
	r.expect(status("OK"), "FAILOVER", "TO", "127.0.0.1", "0", "TIMEOUT", "600000")
	if got := masterInfo(t, ac, "replication", "master_failover_state"); got != "waiting-for-sync" {
		t.Fatalf("master_failover_state %q during a failover", got)
	}
	r.expect(errr("ERR FAILOVER already in progress."), "FAILOVER")
	r.expect(errr("ERR REPLICAOF not allowed while failing over."), "REPLICAOF", "NO", "ONE")
	r.expect(errr("ERR REPLICAOF not allowed while failing over."), "REPLICAOF", "127.0.0.1", bport)
	a.raw().expect(errr("NOMASTERLINK Can't SYNC while failing over"), "PSYNC", "?", "-1")
	writer := a.raw()
	writer.send(encode("SET", "k", "v1"))
	r.expect(bulk("v0"), "GET", "k") // reads go on
	r.expect(status("OK"), "FAILOVER", "ABORT")
	if got := writer.read(); got != status("OK") {
		t.Fatalf("the write held by the failover: %q", got)
	}
	r.expect(bulk("v1"), "GET", "k")
	if got := masterInfo(t, ac, "replication", "master_failover_state"); got != "no-failover" {
		t.Fatalf("master_failover_state %q after ABORT", got)
	}

	// TIMEOUT without FORCE: the failover aborts by itself.
	r.expect(status("OK"), "FAILOVER", "TO", "127.0.0.1", "0", "TIMEOUT", "100")
	wait.For(t, 30*time.Second, "the failover to time out", func() bool {
		return masterInfo(t, ac, "replication", "master_failover_state") == "no-failover"
	})
	r.expect(status("OK"), "SET", "k", "v2")
	if got := masterInfo(t, ac, "replication", "role"); got != "master" {
		t.Fatalf("role %q after a failover timed out", got)
	}

	// FORCE: at the timeout the master switches anyway, to a target that
	// is no server (the tap's port 0): it stays in progress until ABORT,
	// which makes it a master with a new ID.
	id := masterInfo(t, ac, "replication", "master_replid")
	r.expect(status("OK"), "FAILOVER", "TO", "127.0.0.1", "0", "TIMEOUT", "100", "FORCE")
	wait.For(t, 30*time.Second, "the forced failover to switch", func() bool {
		return masterInfo(t, ac, "replication", "master_failover_state") == "failover-in-progress"
	})
	if got := masterInfo(t, ac, "replication", "role"); got != "slave" {
		t.Fatalf("role %q during the forced failover", got)
	}
	r.expect(errr("ERR FAILOVER already in progress."), "FAILOVER")
	r.expect(status("OK"), "FAILOVER", "ABORT")
	if got := masterInfo(t, ac, "replication", "role"); got != "master" {
		t.Fatalf("role %q after aborting the forced failover", got)
	}
	if got := masterInfo(t, ac, "replication", "master_replid2"); got != id {
		t.Fatalf("master_replid2 %q after the abort, want the old ID %q", got, id)
	}
	r.expect(status("OK"), "SET", "k", "v3")
}

// failoverNode is one server of the planned failover: Cellar in-process
// or a redis-server.
type failoverNode struct {
	name string
	addr string
	c    *redis.Client
}

func startFailoverNode(t *testing.T, kind, name string) *failoverNode {
	t.Helper()
	n := &failoverNode{name: name}
	if kind == "redis" {
		n.addr = redistest.StartTCP(t).Addr
	} else {
		s := startServer(t)
		needCellar(t, s)
		// A's backlog must hold every write its replicas miss meanwhile.
		s.raw().expect(status("OK"), "CONFIG", "SET", "repl-backlog-size", "16mb")
		n.addr = s.addr
	}
	n.c = redis.NewClient(&redis.Options{Addr: n.addr, Protocol: 2})
	t.Cleanup(func() { n.c.Close() })
	return n
}

// onlineReplicas waits until the master's INFO lists n replicas online
// (Redis's diskless sync starts seconds after a replica asks).
func onlineReplicas(t *testing.T, master *redis.Client, n int) {
	t.Helper()
	wait.For(t, 2*time.Minute, strconv.Itoa(n)+" replicas online", func() bool {
		got := 0
		for i := range n {
			if strings.Contains(infoOf(context.Background(), master, "replication", "slave"+strconv.Itoa(i)), "state=online") {
				got++
			}
		}
		return got == n
	})
}

func (n *failoverNode) stat(t *testing.T, field string) int64 {
	t.Helper()
	return replInt(t, n.c, "stats", field)
}

// TestPlannedFailover: a master A with two replicas B and C, a writer on
// A throughout; FAILOVER TO B: A pauses writes, waits until B has its
// whole stream, becomes B's replica (PSYNC ... FAILOVER), B a master.
// The writer's writes held by the pause get -READONLY and it goes on on
// B. Every write A or B confirmed is on B, A and C (C continues from A,
// then from B); nobody resynced in full (sync_full unchanged on every
// node) and B accepted A's partial resync. Between Cellar nodes, and with
// Redis 7.0 as the master or the target.
func TestPlannedFailover(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, a, b string }{
		{"cellar-to-cellar", "cellar", "cellar"},
		{"cellar-to-redis", "cellar", "redis"},
		{"redis-to-cellar", "redis", "cellar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plannedFailover(t, tc.a, tc.b)
		})
	}
}

func plannedFailover(t *testing.T, akind, bkind string) {
	ctx := context.Background()
	a := startFailoverNode(t, akind, "A")
	b := startFailoverNode(t, bkind, "B")
	c := startFailoverNode(t, "cellar", "C")
	ahost, aport, _ := net.SplitHostPort(a.addr)
	bhost, bport, _ := net.SplitHostPort(b.addr)
	redistest.Fill(t, ctx, a.c, "pre:")
	for _, r := range []*failoverNode{b, c} {
		if err := r.c.Do(ctx, "REPLICAOF", ahost, aport).Err(); err != nil {
			t.Fatal(err)
		}
	}
	onlineReplicas(t, a.c, 2)
	sameOffset(t, "B and C to reach A's offset", a.c, b.c, c.c)

	// The writer: SET w:<i> <i>, each confirmed one remembered; a
	// -READONLY moves it to B (the held writes get it once A is a
	// replica). No retries and no read timeout: a write held by the
	// pause is answered when the pause ends.
	opts := func(addr string) *redis.Options {
		return &redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, ReadTimeout: -1}
	}
	var (
		mu        sync.Mutex
		confirmed []int
		onB       int
		werr      error
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		cur := redis.NewClient(opts(a.addr))
		defer func() { cur.Close() }()
		moved := false
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			err := cur.Set(ctx, "w:"+strconv.Itoa(i), i, 0).Err()
			if err != nil && !moved && strings.HasPrefix(err.Error(), "READONLY") {
				cur.Close()
				cur, moved = redis.NewClient(opts(b.addr)), true
				err = cur.Set(ctx, "w:"+strconv.Itoa(i), i, 0).Err()
			}
			mu.Lock()
			if err != nil {
				werr = err
				mu.Unlock()
				return
			}
			confirmed = append(confirmed, i)
			if moved {
				onB++
			}
			mu.Unlock()
		}
	}()
	writes := func() int {
		mu.Lock()
		defer mu.Unlock()
		if werr != nil {
			t.Fatalf("writer: %v", werr)
		}
		return len(confirmed)
	}
	wait.For(t, 60*time.Second, "the writer to make 200 writes on A", func() bool { return writes() >= 200 })

	fullBefore := []int64{a.stat(t, "sync_full"), b.stat(t, "sync_full"), c.stat(t, "sync_full")}
	partialB := b.stat(t, "sync_partial_ok")
	start := time.Now()
	if err := a.c.Do(ctx, "FAILOVER", "TO", bhost, bport).Err(); err != nil {
		t.Fatalf("FAILOVER TO B: %v\n%s", err, a.c.Info(ctx, "replication").Val())
	}
	wait.For(t, 2*time.Minute, "A to be B's replica, the failover over", func() bool {
		return infoOf(ctx, a.c, "replication", "master_failover_state") == "no-failover" &&
			infoOf(ctx, a.c, "replication", "role") == "slave" &&
			infoOf(ctx, b.c, "replication", "role") == "master"
	})
	switched := time.Since(start)
	wait.For(t, 60*time.Second, "the writer to make 200 writes on B", func() bool {
		writes()
		mu.Lock()
		defer mu.Unlock()
		return onB >= 200
	})
	close(stop)
	<-done
	writes()

	// C followed A; it is moved to B, as Sentinel would.
	if err := c.c.Do(ctx, "REPLICAOF", bhost, bport).Err(); err != nil {
		t.Fatal(err)
	}
	sameOffset(t, "A and C to reach B's offset", b.c, a.c, c.c)
	for _, n := range []*failoverNode{b, a, c} {
		mu.Lock()
		ws := append([]int(nil), confirmed...)
		mu.Unlock()
		pipe := n.c.Pipeline()
		cmds := make([]*redis.StringCmd, len(ws))
		for j, i := range ws {
			cmds[j] = pipe.Get(ctx, "w:"+strconv.Itoa(i))
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		for j, i := range ws {
			if got := cmds[j].Val(); got != strconv.Itoa(i) {
				t.Fatalf("%s: confirmed write w:%d reads %q", n.name, i, got)
			}
		}
	}
	compareAll(t, ctx, b.addr, a.addr)
	compareAll(t, ctx, b.addr, c.addr)
	for i, n := range []*failoverNode{a, b, c} {
		if got := n.stat(t, "sync_full"); got != fullBefore[i] {
			t.Errorf("%s: sync_full %d after the failover, %d before: a full resync", n.name, got, fullBefore[i])
		}
	}
	if got := b.stat(t, "sync_partial_ok"); got < partialB+1 {
		t.Errorf("B: sync_partial_ok %d, %d before the failover: A did not continue from B", got, partialB)
	}
	t.Logf("%s: the switch took %v (FAILOVER to A a replica); %d writes confirmed, %d of them on B after it",
		akind+"->"+bkind, switched.Round(time.Millisecond), len(confirmed), onB)
}
