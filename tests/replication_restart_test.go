package tests

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/redistest"
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
