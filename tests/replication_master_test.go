package tests

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/cellar-db/cellar/internal/wait"
)

// Cellar as a master (actor/master.go): a real Redis 7.0 replica of it.

// masterInfo reads one field of INFO section from c ("" when absent).
func masterInfo(t testing.TB, c *redis.Client, section, field string) string {
	t.Helper()
	info, err := c.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// resumedPartially waits for replica rc to come back to the restarted
// master c with a partial resync (sync_partial_ok:1) and catch up, and
// fails if it resynced in full instead.
func resumedPartially(t testing.TB, c, rc *redis.Client) {
	t.Helper()
	wait.For(t, 120*time.Second, "the replica to come back to the restarted master with a partial resync (sync_partial_ok:1)", func() bool {
		return masterInfo(t, c, "stats", "sync_partial_ok") == "1"
	})
	caughtUp(t, c, rc)
	if got := masterInfo(t, c, "stats", "sync_full"); got != "0" {
		t.Fatalf("sync_full %s after the restart: the replica resynced in full", got)
	}
}

// dbKeys lists database db's keys on c, sorted.
func dbKeys(t testing.TB, c *redis.Client) []string {
	t.Helper()
	keys, err := c.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	return keys
}

// caughtUp waits until the replica's offset is the master's (both read
// anew each time: the master's PING moves it every few seconds).
func caughtUp(t testing.TB, master, replica *redis.Client) {
	t.Helper()
	wait.For(t, 120*time.Second, "the replica's master_repl_offset to equal Cellar's, with the link up", func() bool {
		if masterInfo(t, replica, "replication", "master_link_status") != "up" {
			return false
		}
		m := masterInfo(t, master, "replication", "master_repl_offset")
		r := masterInfo(t, replica, "replication", "master_repl_offset")
		return m != "" && m != "0" && m == r
	})
}

// sameKeys checks that database db holds the same keys with the same
// types, values and TTLs (within a second) on Cellar and on the replica.
func sameKeys(t testing.TB, db int, cellarAddr, replicaAddr string) int {
	t.Helper()
	ctx := context.Background()
	cc := redis.NewClient(&redis.Options{Addr: cellarAddr, DB: db})
	defer cc.Close()
	rc := redis.NewClient(&redis.Options{Addr: replicaAddr, DB: db})
	defer rc.Close()
	ck, rk := dbKeys(t, cc), dbKeys(t, rc)
	if strings.Join(ck, "\n") != strings.Join(rk, "\n") {
		t.Fatalf("db %d: Cellar has %d keys, the replica %d\nCellar: %.2000q\nreplica: %.2000q", db, len(ck), len(rk), ck, rk)
	}
	for _, k := range ck {
		want, err := redistest.Describe(ctx, cc, k)
		if err != nil {
			t.Fatal(err)
		}
		got, err := redistest.Describe(ctx, rc, k)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("db %d key %q:\nCellar:  %.500s\nreplica: %.500s", db, k, want, got)
		}
		// Unix times, so that the moments of the two reads do not matter.
		ct, _ := cc.Do(ctx, "PEXPIRETIME", k).Int64()
		rt, _ := rc.Do(ctx, "PEXPIRETIME", k).Int64()
		if (ct < 0) != (rt < 0) || ct-rt > 1000 || rt-ct > 1000 {
			t.Errorf("db %d key %q: expires at %d (ms) on Cellar, %d on the replica", db, k, ct, rt)
		}
	}
	return len(ck)
}

// TestRedisReplicaOfCellar: redis-server --replicaof Cellar gets a full
// resync (an RDB of every type, in two databases, with TTLs, while a
// writer runs) and then the stream; every key is the same on both; WAIT
// counts its acknowledgement; after CLIENT KILL TYPE replica it continues
// with +CONTINUE (Cellar's sync_partial_ok) and no second RDB.
func TestRedisReplicaOfCellar(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	needCellar(t, srv)
	ctx := context.Background()
	c0 := srv.client()
	c5 := srv.client(func(o *redis.Options) { o.DB = 5 })

	// Before the sync: every type and encoding, in two databases, and TTLs.
	redistest.Fill(t, ctx, c0, "pre:")
	redistest.Fill(t, ctx, c5, "pre5:")
	for i := range 50 {
		c0.Set(ctx, fmt.Sprintf("pre:ttl:%d", i), i, time.Duration(100+i)*time.Second)
		c5.HSet(ctx, fmt.Sprintf("pre5:httl:%d", i), "f", i)
		c5.Expire(ctx, fmt.Sprintf("pre5:httl:%d", i), time.Duration(200+i)*time.Second)
	}

	// During the sync: a writer in both databases.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var written atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			c0.Set(ctx, fmt.Sprintf("during:%d", i%500), i, 0)
			c0.Set(ctx, fmt.Sprintf("during:ttl:%d", i%100), i, time.Hour)
			c5.RPush(ctx, "during5:list", i)
			c5.HIncrBy(ctx, "during5:hash", strconv.Itoa(i%20), 1)
			c5.ZIncrBy(ctx, "during5:zset", 1, strconv.Itoa(i%30))
			c0.SAdd(ctx, "during:set", i%77)
			c0.XAdd(ctx, &redis.XAddArgs{Stream: "during:stream", Values: []any{"i", i}})
			written.Add(1)
		}
	}()
	wait.For(t, 30*time.Second, "the writer to start", func() bool { return written.Load() > 10 })

	host, port, _ := net.SplitHostPort(srv.addr)
	red := redistest.StartTCP(t, "--replicaof", host, port)
	rc := redis.NewClient(&redis.Options{Addr: red.Addr})
	defer rc.Close()
	wait.For(t, 120*time.Second, "the Redis replica's link to Cellar to come up", func() bool {
		return masterInfo(t, rc, "replication", "master_link_status") == "up"
	})
	at := written.Load()
	wait.For(t, 60*time.Second, "the writer to go on after the sync", func() bool { return written.Load() > at+20 })

	// After the sync, through the stream: every type again, expiries,
	// a transaction and a script.
	redistest.Fill(t, ctx, c0, "live:")
	redistest.Fill(t, ctx, c5, "live5:")
	c0.Expire(ctx, "pre:str:raw", time.Hour)
	c0.Do(ctx, "SET", "live:setex", "v", "EX", 500)
	c0.Do(ctx, "SETEX", "live:setex2", 600, "v")
	c0.Do(ctx, "GETEX", "pre:str:empty", "PX", 700000)
	c0.Do(ctx, "SPOP", "pre:set:small", 2)
	c0.Do(ctx, "INCRBYFLOAT", "live:float", "1.25")
	c5.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "live5:tx", "1", 0)
		p.LPush(ctx, "live5:txlist", "a", "b")
		return nil
	})
	c0.Eval(ctx, "redis.call('SET', KEYS[1], 'fromscript'); redis.call('EXPIRE', KEYS[1], 900)", []string{"live:script"})
	stop.Store(true)
	wg.Wait()

	caughtUp(t, c0, rc)
	n := sameKeys(t, 0, srv.addr, red.Addr) + sameKeys(t, 5, srv.addr, red.Addr)
	t.Logf("%d keys the same on Cellar and its Redis replica; %d rounds of writes during the sync", n, written.Load())

	// INFO and ROLE on the master.
	if got := masterInfo(t, c0, "replication", "connected_slaves"); got != "1" {
		t.Errorf("connected_slaves: %q, want 1", got)
	}
	slave0 := masterInfo(t, c0, "replication", "slave0")
	_, rport, _ := net.SplitHostPort(red.Addr)
	if !strings.HasPrefix(slave0, "ip=127.0.0.1,port="+rport+",state=online,offset=") {
		t.Errorf("slave0: %q", slave0)
	}
	raw := srv.raw()
	role := raw.do("ROLE")
	if !strings.HasPrefix(role, "*3\r\n$6\r\nmaster\r\n:") || !strings.Contains(role, "*1\r\n*3\r\n$9\r\n127.0.0.1\r\n"+bulk(rport)) {
		t.Errorf("ROLE: %q", role)
	}

	// WAIT counts the replica once it acknowledged the write before it.
	raw.expect(status("OK"), "SET", "waited", "1")
	raw.expect(integer(1), "WAIT", "1", "0")

	// A partial resync after the link is cut.
	replID := masterInfo(t, rc, "replication", "master_replid")
	raw.expect(integer(1), "CLIENT", "KILL", "TYPE", "replica")
	c0.Set(ctx, "after:kill", "v", 0)
	wait.For(t, 120*time.Second, "Cellar to count a partial resync (sync_partial_ok:1)", func() bool {
		return masterInfo(t, c0, "stats", "sync_partial_ok") == "1"
	})
	caughtUp(t, c0, rc)
	if got := masterInfo(t, c0, "stats", "sync_full"); got != "1" {
		t.Errorf("sync_full: %q after the partial resync, want 1 (no second RDB)", got)
	}
	if got := masterInfo(t, rc, "replication", "master_replid"); got != replID {
		t.Errorf("the replica's master_replid changed from %s to %s", replID, got)
	}
	if got := rc.Get(ctx, "after:kill").Val(); got != "v" {
		t.Errorf("after the partial resync the replica has after:kill = %q", got)
	}
	sameKeys(t, 0, srv.addr, red.Addr)
	sameKeys(t, 5, srv.addr, red.Addr)
}

// TestReplconfReplies pins REPLCONF's and PSYNC's replies against Redis's
// texts (replicationCommand's checks), and WAIT with no replica.
func TestReplconfReplies(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	needCellar(t, srv)
	r := srv.raw()
	r.expect(status("OK"), "REPLCONF", "listening-port", "1234")
	r.expect(status("OK"), "REPLCONF", "capa", "eof", "capa", "psync2")
	r.expect(errr("ERR syntax error"), "REPLCONF", "capa")
	r.expect(errr("ERR Unrecognized REPLCONF option: foo"), "REPLCONF", "foo", "bar")
	r.expect(errr("ERR value is not an integer or out of range"), "REPLCONF", "listening-port", "x")
	r.expect(errr("ERR wrong number of arguments for 'psync' command"), "PSYNC", "?")
	r.expect(integer(0), "WAIT", "0", "0")
	r.expect(integer(0), "WAIT", "1", "10")
}

// TestMinReplicasToWrite: with min-replicas-to-write 1, Cellar refuses
// writes with -NOREPLICAS until a replica is online, and again once it is
// gone; a new replica makes them succeed again.
func TestMinReplicasToWrite(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	needCellar(t, srv)
	ctx := context.Background()
	r := srv.raw()
	r.expect(status("OK"), "CONFIG", "SET", "min-replicas-to-write", "1")
	r.expect(status("OK"), "CONFIG", "SET", "min-replicas-max-lag", "10")
	noReplicas := errr("NOREPLICAS Not enough good replicas to write.")
	r.expect(noReplicas, "SET", "k", "v")
	r.expect("$-1\r\n", "GET", "k")
	writes := func(want string) func() bool {
		return func() bool {
			got, err := r.tryDo("SET", "k", "v")
			if err != nil {
				t.Fatal(err)
			}
			return got == want
		}
	}
	host, port, _ := net.SplitHostPort(srv.addr)
	first := redistest.StartTCP(t, "--replicaof", host, port)
	wait.For(t, 120*time.Second, "SET to succeed once the first replica is online", writes(status("OK")))
	c := srv.client()
	if got := masterInfo(t, c, "replication", "min_slaves_good_slaves"); got != "1" {
		t.Errorf("min_slaves_good_slaves: %q, want 1", got)
	}
	fc := redis.NewClient(&redis.Options{Addr: first.Addr})
	defer fc.Close()
	fc.Do(ctx, "SHUTDOWN", "NOSAVE") // its connection closes with it
	wait.For(t, 120*time.Second, "SET to be refused with -NOREPLICAS once the replica is gone", writes(noReplicas))
	redistest.StartTCP(t, "--replicaof", host, port)
	wait.For(t, 120*time.Second, "SET to succeed again with a new replica", writes(status("OK")))
}

// TestCellarReplicaOfCellar: a Cellar replica (package replica) follows a
// Cellar master over the same protocol: the full resync's RDB (every type,
// two databases, TTLs, a function library), the stream, and +CONTINUE
// after CLIENT KILL TYPE replica.
func TestCellarReplicaOfCellar(t *testing.T) {
	t.Parallel()
	master := startServer(t)
	needCellar(t, master)
	ctx := context.Background()
	m0 := master.client()
	m5 := master.client(func(o *redis.Options) { o.DB = 5 })
	redistest.Fill(t, ctx, m0, "pre:")
	redistest.Fill(t, ctx, m5, "pre5:")
	m0.Set(ctx, "pre:ttl", "v", time.Hour)
	if err := m0.Do(ctx, "FUNCTION", "LOAD", "#!lua name=masterlib\nredis.register_function('answer', function() return 42 end)").Err(); err != nil {
		t.Fatal(err)
	}

	replica := startServer(t)
	rc := replica.client()
	host, port, _ := net.SplitHostPort(master.addr)
	if err := rc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	offsets := func(what string) {
		t.Helper()
		wait.For(t, 120*time.Second, what, func() bool {
			m := masterInfo(t, m0, "replication", "master_repl_offset")
			return masterInfo(t, rc, "replication", "master_link_status") == "up" &&
				m != "0" && m == masterInfo(t, rc, "replication", "slave_repl_offset")
		})
	}
	offsets("the Cellar replica's slave_repl_offset to reach the master's")
	redistest.Fill(t, ctx, m0, "live:")
	m5.Expire(ctx, "pre5:str:raw", time.Hour)
	offsets("the Cellar replica to apply the stream")
	sameKeys(t, 0, master.addr, replica.addr)
	sameKeys(t, 5, master.addr, replica.addr)
	if got, err := rc.Do(ctx, "FCALL", "answer", 0).Int(); err != nil || got != 42 {
		t.Errorf("FCALL answer on the replica: %v %v", got, err)
	}

	master.raw().expect(integer(1), "CLIENT", "KILL", "TYPE", "replica")
	m0.Set(ctx, "after:kill", "v", 0)
	wait.For(t, 120*time.Second, "the master to count a partial resync (sync_partial_ok:1)", func() bool {
		return masterInfo(t, m0, "stats", "sync_partial_ok") == "1"
	})
	offsets("the Cellar replica to catch up after the partial resync")
	if got := masterInfo(t, m0, "stats", "sync_full"); got != "1" {
		t.Errorf("sync_full: %q, want 1", got)
	}
	if got := rc.Get(ctx, "after:kill").Val(); got != "v" {
		t.Errorf("after:kill on the replica: %q", got)
	}
}

// TestRedisReplicaContinuesAfterCellarRestart: a clean restart of Cellar
// keeps its replication ID and offset, so its Redis replica, which had the
// whole stream, continues with +CONTINUE rather than a new full resync.
func TestRedisReplicaContinuesAfterCellarRestart(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	srv := startServer(t, func(c *cellar.Config) { c.Port = port })
	needCellar(t, srv)
	ctx := context.Background()
	c := srv.client()
	redistest.Fill(t, ctx, c, "pre:")
	host, p, _ := net.SplitHostPort(srv.addr)
	red := redistest.StartTCP(t, "--replicaof", host, p)
	rc := redis.NewClient(&redis.Options{Addr: red.Addr})
	defer rc.Close()
	c.Set(ctx, "before:restart", "v", 0)
	caughtUp(t, c, rc)
	replID := masterInfo(t, c, "replication", "master_replid")

	srv.restart()
	c = srv.client()
	if got := masterInfo(t, c, "replication", "master_replid"); got != replID {
		t.Fatalf("master_replid after the restart: %s, before: %s", got, replID)
	}
	c.Set(ctx, "after:restart", "v", 0)
	resumedPartially(t, c, rc)
	if got := rc.Get(ctx, "after:restart").Val(); got != "v" {
		t.Errorf("after:restart on the replica: %q", got)
	}
	sameKeys(t, 0, srv.addr, red.Addr)
}
