package tests

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/cellar-db/cellar/internal/wait"
)

// PUBLISH and SPUBLISH reach the replicas (actor/pubsub.go, toReplicas),
// as Redis propagates them: subscribers on a replica get what is published
// on its master.

// subscribed subscribes to channel on addr (SSUBSCRIBE when shard) and
// returns the messages' channel once the subscription is confirmed.
func subscribed(t *testing.T, addr, channel string, shard bool) <-chan *redis.Message {
	t.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	var ps *redis.PubSub
	if shard {
		ps = c.SSubscribe(ctx, channel)
	} else {
		ps = c.Subscribe(ctx, channel)
	}
	t.Cleanup(func() { ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatalf("subscribing on %s: %v", addr, err)
	}
	return ps.Channel()
}

// received waits for payload on ch.
func received(t *testing.T, who string, ch <-chan *redis.Message, payload string) {
	t.Helper()
	select {
	case m := <-ch:
		if m.Payload != payload {
			t.Errorf("%s got %q, want %q", who, m.Payload, payload)
		}
	case <-time.After(time.Minute):
		t.Errorf("%s never got %q", who, payload)
	}
}

// TestPublishReachesReplicas: a message published on Cellar reaches
// subscribers on its Redis replica and on its Cellar replica, alone, in
// MULTI and from a script; the stream holds PUBLISH as the client sent it
// (a hand-made replica reads its exact bytes), counted in the offset, so
// that every replica reaches the master's offset.
func TestPublishReachesReplicas(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	needCellar(t, srv)
	ctx := context.Background()
	c := srv.client()
	r := srv.raw()
	r.expect(status("OK"), "CONFIG", "SET", "repl-diskless-sync-delay", "0")
	host, port, _ := net.SplitHostPort(srv.addr)
	red := redistest.StartTCP(t, "--replicaof", host, port)
	rc := redis.NewClient(&redis.Options{Addr: red.Addr})
	defer rc.Close()
	cel := startServer(t, func(c *cellar.Config) { c.ReplicaOf = host + " " + port })
	cc := cel.client()
	hand := dialReplica(t, srv.addr, false)
	off, _, _ := hand.fullSync()
	caughtUp(t, c, rc)
	caughtUp(t, c, cc)

	onRedis, onCellar := subscribed(t, red.Addr, "news", false), subscribed(t, cel.addr, "news", false)
	shardRedis, shardCellar := subscribed(t, red.Addr, "shard", true), subscribed(t, cel.addr, "shard", true)

	before := replInt(t, c, "replication", "master_repl_offset")
	r.expect(integer(0), "PUBLISH", "news", "one") // no subscriber on the master itself
	after := replInt(t, c, "replication", "master_repl_offset")
	msg := encode("PUBLISH", "news", "one")
	if after-before < int64(len(msg)) {
		t.Errorf("master_repl_offset moved by %d for PUBLISH (%d bytes)", after-before, len(msg))
	}
	hand.c.Write(encode("REPLCONF", "ACK", strconv.FormatInt(off, 10)))
	hand.until(msg)
	received(t, "the Redis replica's subscriber", onRedis, "one")
	received(t, "the Cellar replica's subscriber", onCellar, "one")

	c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "k", "v", 0)
		p.Publish(ctx, "news", "two")
		return nil
	})
	c.Eval(ctx, "redis.call('PUBLISH', 'news', 'three'); return 1", nil)
	r.expect(integer(0), "SPUBLISH", "shard", "four")
	for _, m := range []string{"two", "three"} {
		received(t, "the Redis replica's subscriber", onRedis, m)
		received(t, "the Cellar replica's subscriber", onCellar, m)
	}
	received(t, "the Redis replica's shard subscriber", shardRedis, "four")
	received(t, "the Cellar replica's shard subscriber", shardCellar, "four")
	caughtUp(t, c, rc)
	caughtUp(t, c, cc)
	if got := rc.Get(ctx, "k").Val(); got != "v" {
		t.Errorf("the Redis replica has k = %q", got)
	}
}

// TestPublishFromRedisMaster: a Cellar replica of Redis delivers what the
// Redis master publishes to its own subscribers.
func TestPublishFromRedisMaster(t *testing.T) {
	t.Parallel()
	master := redistest.StartTCP(t)
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	host, port, _ := net.SplitHostPort(master.Addr)
	cel := startServer(t, func(c *cellar.Config) { c.ReplicaOf = host + " " + port })
	needCellar(t, cel)
	cc := cel.client()
	wait.For(t, 2*time.Minute, "the Cellar replica's link to come up", func() bool {
		return masterInfo(t, cc, "replication", "master_link_status") == "up"
	})
	ch := subscribed(t, cel.addr, "news", false)
	mc.Publish(context.Background(), "news", "from redis")
	received(t, "the Cellar replica's subscriber", ch, "from redis")
}
