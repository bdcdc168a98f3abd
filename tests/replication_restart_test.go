package tests

import (
	"context"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/cellar-db/cellar/internal/wait"
)

// TestReplicaContinuesAfterRestart: a Cellar replica stopped cleanly
// keeps its master's replication ID, its offset and the database the
// stream had selected (actor/master.go, "Across a restart"); started
// again with replicaof, it continues with +CONTINUE (the master's
// sync_partial_ok, no new sync_full) and gets what the master wrote
// meanwhile — in database 5, which the master's stream had selected
// before and does not select again. Started without replicaof, it is a
// master with a history of its own from its first write (the saved ID
// becomes master_replid2). With Cellar and Redis 7.0 as the master.
func TestReplicaContinuesAfterRestart(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"cellar", "redis"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			replicaRestart(t, kind)
		})
	}
}

func replicaRestart(t *testing.T, kind string) {
	ctx := context.Background()
	a := startFailoverNode(t, kind, "A")
	ac5 := redis.NewClient(&redis.Options{Addr: a.addr, DB: 5, Protocol: 2})
	defer ac5.Close()
	ahost, aport, _ := net.SplitHostPort(a.addr)
	redistest.Fill(t, ctx, a.c, "pre:")
	b := startServer(t, func(c *cellar.Config) { c.ReplicaOf = ahost + " " + aport })
	needCellar(t, b)
	bc := b.client()
	onlineReplicas(t, a.c, 1)
	redistest.Fill(t, ctx, ac5, "five:")
	sameOffset(t, "B to reach A's offset", a.c, bc)
	aID := masterInfo(t, a.c, "replication", "master_replid")
	full, partial := a.stat(t, "sync_full"), a.stat(t, "sync_partial_ok")

	b.stop()
	// Written while B is down: the stream still has database 5 selected.
	for _, k := range []string{"gap:1", "gap:2", "gap:3"} {
		if err := ac5.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	b.start()
	bc = b.client()
	sameOffset(t, "B, restarted, to reach A's offset", a.c, bc)
	if got := a.stat(t, "sync_full"); got != full {
		t.Fatalf("A's sync_full %d after B's restart, %d before: B resynced in full", got, full)
	}
	if got := a.stat(t, "sync_partial_ok"); got != partial+1 {
		t.Fatalf("A's sync_partial_ok %d after B's restart, %d before: B did not continue", got, partial)
	}
	if got := masterInfo(t, bc, "replication", "master_replid"); got != aID {
		t.Fatalf("B's master_replid %q, A's %q", got, aID)
	}
	compareAll(t, ctx, a.addr, b.addr)
	b5 := b.client(func(o *redis.Options) { o.DB = 5 })
	if got := b5.Get(ctx, "gap:3").Val(); got != "gap:3" {
		t.Fatalf("B's database 5 gap:3 = %q: the write made while B was down", got)
	}

	// Started without replicaof: a master, whose first write starts a
	// history of its own.
	b.stop()
	b.cfg.ReplicaOf = ""
	b.start()
	bc = b.client()
	if got := masterInfo(t, bc, "replication", "role"); got != "master" {
		t.Fatalf("B's role %q without replicaof", got)
	}
	if err := bc.Set(ctx, "own", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	id, id2 := masterInfo(t, bc, "replication", "master_replid"), masterInfo(t, bc, "replication", "master_replid2")
	if id == aID || id2 != aID || strings.Trim(id, "0") == "" {
		t.Fatalf("B as a master after its first write: master_replid %q, master_replid2 %q (A's ID %q)", id, id2, aID)
	}
}

// TestMasterBacklogSurvivesRestart: a clean stop (SIGTERM) of a Cellar
// process keeps its backlog with its replication ID and offset
// (actor/replstate.go), so a Redis 7.0 replica that was behind when the
// master stopped — stopped itself (SIGSTOP), its link cut, while the
// master took writes — continues after the master's restart with
// +CONTINUE from the restored backlog: the restarted master counts a
// sync_partial_ok and no sync_full, and the replica has the writes it
// missed.
func TestMasterBacklogSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	port := strconv.Itoa(freePort(t))
	args := []string{"--port", port, "--dir", t.TempDir()}
	p := runCellar(t, true, args...)
	c := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 2})
	defer c.Close()
	redistest.Fill(t, ctx, c, "pre:")
	host, _, _ := net.SplitHostPort(p.addr)
	red := redistest.StartTCP(t, "--replicaof", host, port)
	rc := redis.NewClient(&redis.Options{Addr: red.Addr, Protocol: 2})
	defer rc.Close()
	caughtUp(t, c, rc)
	replID := masterInfo(t, c, "replication", "master_replid")

	if err := red.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			red.Signal(syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	if n := c.ClientKillByFilter(ctx, "TYPE", "replica").Val(); n != 1 {
		t.Fatalf("CLIENT KILL TYPE replica: %d", n)
	}
	wait.For(t, 60*time.Second, "the master to list no replica after CLIENT KILL", func() bool {
		return masterInfo(t, c, "replication", "connected_slaves") == "0"
	})
	for i := range 100 {
		if err := c.Set(ctx, "gap:"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	histlen := replInt(t, c, "replication", "repl_backlog_histlen")
	c.Close()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.exitCode(); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, p.stderr.String())
	}

	p = runCellar(t, true, args...)
	c = redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 2})
	if got := masterInfo(t, c, "replication", "master_replid"); got != replID {
		t.Fatalf("master_replid after the restart %q, before %q", got, replID)
	}
	if got := replInt(t, c, "replication", "repl_backlog_histlen"); got != histlen {
		t.Fatalf("repl_backlog_histlen after the restart %d, before %d", got, histlen)
	}
	resume()
	resumedPartially(t, c, rc)
	if got := rc.Get(ctx, "gap:99").Val(); got != "99" {
		t.Fatalf("the replica's gap:99 = %q: a write it missed before the restart", got)
	}
	sameKeys(t, 0, p.addr, red.Addr)
}

// TestPromotedReplicaKeepsHistoryAcrossRestart: a Cellar replica B
// promoted with REPLICAOF NO ONE (its master A's ID becomes its
// master_replid2) and then restarted cleanly keeps both IDs,
// second_repl_offset and its backlog; so A, restarted and made B's
// replica, continues its own history from B with +CONTINUE (B's
// sync_partial_ok, no sync_full) and gets what B wrote as a master.
func TestPromotedReplicaKeepsHistoryAcrossRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := startServer(t)
	needCellar(t, a)
	ac := a.client()
	redistest.Fill(t, ctx, ac, "pre:")
	ahost, aport, _ := net.SplitHostPort(a.addr)
	b := startServer(t, func(c *cellar.Config) { c.ReplicaOf = ahost + " " + aport })
	bc := b.client()
	sameOffset(t, "B to reach A's offset", ac, bc)
	redistest.Fill(t, ctx, ac, "post:") // in A's stream, not in B's RDB
	sameOffset(t, "B to reach A's offset after A's writes", ac, bc)
	aID := masterInfo(t, ac, "replication", "master_replid")
	a.stop()

	if err := bc.SlaveOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := bc.Set(ctx, "b:own", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	fields := []string{"master_replid", "master_replid2", "second_repl_offset", "master_repl_offset", "repl_backlog_first_byte_offset", "repl_backlog_histlen"}
	before := map[string]string{}
	for _, f := range fields {
		before[f] = masterInfo(t, bc, "replication", f)
	}
	if before["master_replid2"] != aID {
		t.Fatalf("B's master_replid2 %q after REPLICAOF NO ONE, A's ID %q", before["master_replid2"], aID)
	}
	b.cfg.ReplicaOf = ""
	b.restart()
	bc = b.client()
	for _, f := range fields {
		if got := masterInfo(t, bc, "replication", f); got != before[f] {
			t.Errorf("B's %s after its restart %q, before %q", f, got, before[f])
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	a.start()
	ac = a.client()
	bhost, bport, _ := net.SplitHostPort(b.addr)
	if err := ac.SlaveOf(ctx, bhost, bport).Err(); err != nil {
		t.Fatal(err)
	}
	sameOffset(t, "A, B's replica now, to reach B's offset", bc, ac)
	if got := masterInfo(t, bc, "stats", "sync_partial_ok"); got != "1" {
		t.Errorf("B's sync_partial_ok %s: A did not continue with B's second ID", got)
	}
	if got := masterInfo(t, bc, "stats", "sync_full"); got != "0" {
		t.Errorf("B's sync_full %s: A resynced in full", got)
	}
	if got := ac.Get(ctx, "b:own").Val(); got != "1" {
		t.Errorf("A's b:own = %q: B's write as a master", got)
	}
	compareAll(t, ctx, b.addr, a.addr)
}
