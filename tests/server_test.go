package tests

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
)

// go-redis v9 with its defaults sends HELLO 3 and CLIENT SETINFO; HELLO
// must work, SETINFO fails as in Redis 7.0 (go-redis ignores that), and
// commands then speak RESP3.
func TestGoRedisDefaults(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET: %q %v", v, err)
	}
	if _, err := c.Get(ctx, "missing").Result(); err != redis.Nil {
		t.Fatalf("GET missing: %v", err)
	}
	info, err := c.ClientInfo(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if info.Resp != 3 {
		t.Fatalf("HELLO 3 not recorded: %+v", info)
	}
	if n, err := c.IncrByFloat(ctx, "f", 10.5).Result(); err != nil || n != 10.5 {
		t.Fatalf("INCRBYFLOAT: %v %v", n, err)
	}
	if n, err := c.IncrByFloat(ctx, "f", 0.1).Result(); err != nil || n != 10.6 {
		t.Fatalf("INCRBYFLOAT: %v %v", n, err)
	}
}

// SELECT gives real, separate logical databases.
func TestLogicalDatabases(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.expect("+OK\r\n", "SET", "k", "zero")
	r.expect("+OK\r\n", "SELECT", "3")
	r.expect(nullBulk, "GET", "k")
	r.expect("+OK\r\n", "SET", "k", "three")
	r.expect(":1\r\n", "DBSIZE")
	r.expect("+OK\r\n", "SWAPDB", "0", "3")
	r.expect(bulk("zero"), "GET", "k")
	r.expect("+OK\r\n", "SELECT", "0")
	r.expect(bulk("three"), "GET", "k")
	r.expect(":1\r\n", "MOVE", "k", "5")
	r.expect(":0\r\n", "EXISTS", "k")
	r.expect("+OK\r\n", "FLUSHALL")
	r.expect("+OK\r\n", "SELECT", "5")
	r.expect(":0\r\n", "DBSIZE")
	// A new connection starts in database 0.
	s.raw().expect(":0\r\n", "DBSIZE")
}

func TestQuitAndReset(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.send(append(encode("QUIT"), encode("PING")...))
	if got := r.read(); got != "+OK\r\n" {
		t.Fatalf("QUIT: %q", got)
	}
	r.expectClosed()

	r = s.raw()
	r.expect("+OK\r\n", "SELECT", "2")
	r.expect("+OK\r\n", "CLIENT", "SETNAME", "n")
	r.do("HELLO", "3")
	r.expect("+RESET\r\n", "RESET")
	r.expect("$-1\r\n", "CLIENT", "GETNAME") // RESP2 again, name gone
	r.expect("+OK\r\n", "SET", "in0", "v")
	r.expect("+OK\r\n", "SELECT", "0")
	r.expect(":1\r\n", "EXISTS", "in0")
}

func TestAuth(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.RequirePass = "s3cret" })
	r := s.raw()
	r.expect("-NOAUTH Authentication required.\r\n", "GET", "k")
	r.expect("-NOAUTH Authentication required.\r\n", "PING")
	r.expect("-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n", "HELLO", "3")
	r.expect("-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH", "wrong")
	r.expect("-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH", "bob", "s3cret")
	r.expect("+OK\r\n", "AUTH", "s3cret")
	r.expect("+PONG\r\n", "PING")
	r.expect("+RESET\r\n", "RESET") // RESET logs the client out again
	r.expect("-NOAUTH Authentication required.\r\n", "PING")
	if got := r.do("HELLO", "3", "AUTH", "default", "s3cret"); !strings.HasPrefix(got, "%7\r\n") {
		t.Fatalf("HELLO 3 AUTH: %q", got)
	}
	r.expect("+PONG\r\n", "PING")
	// go-redis with a password authenticates through HELLO.
	c := s.client(func(o *redis.Options) { o.Password = "s3cret" })
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestMaxClients(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.MaxClients = 2 })
	a, b := s.raw(), s.raw()
	a.expect("+PONG\r\n", "PING")
	b.expect("+PONG\r\n", "PING")
	c := s.raw()
	if got := c.read(); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("third client: %q", got)
	}
	c.expectClosed()
	a.c.Close()
	waitFor(t, 5*time.Second, "a slot to free up", func() bool {
		d := s.raw()
		defer d.c.Close()
		d.send(encode("PING"))
		return d.read() == "+PONG\r\n"
	})
	a.expectClosed()
	b.expect("+PONG\r\n", "PING")
}

func TestClientKillAndList(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	victim, killer := s.raw(), s.raw()
	victim.expect("+OK\r\n", "CLIENT", "SETNAME", "victim")
	id := victim.clientID()
	list := killer.do("CLIENT", "LIST")
	if !strings.Contains(list, "id="+id+" ") || !strings.Contains(list, "name=victim ") || strings.Count(list, "id=") != 2 {
		t.Fatalf("CLIENT LIST: %q", list)
	}
	killer.expect(":1\r\n", "CLIENT", "KILL", "ID", id)
	victim.expectClosed()
	waitFor(t, 5*time.Second, "the killed client to leave CLIENT LIST", func() bool {
		return !strings.Contains(killer.do("CLIENT", "LIST"), "name=victim")
	})
	killer.expect(":0\r\n", "CLIENT", "KILL", "ID", id)
	// SKIPME no lets a client kill itself, after its reply.
	self := killer.clientID()
	killer.expect(":1\r\n", "CLIENT", "KILL", "ID", self, "SKIPME", "no")
	killer.expectClosed()
}

// Data written before a graceful shutdown is there after a restart,
// binary-safe, with its TTL.
func TestRestartKeepsData(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	c := s.client()
	val := "a\x00b\r\n" + strings.Repeat("z", 100000)
	c.Set(ctx, "bin\x00key", val, 0)
	c.Set(ctx, "ttl", "v", time.Hour)
	c.Do(ctx, "SELECT", 7)
	for i := 0; i < 100; i++ {
		c.Set(ctx, fmt.Sprint("n", i), i, 0)
	}
	s.restart()
	c = s.client()
	if v, err := c.Get(ctx, "bin\x00key").Result(); err != nil || v != val {
		t.Fatalf("binary value after restart: %v (len %d)", err, len(v))
	}
	if ttl, err := c.TTL(ctx, "ttl").Result(); err != nil || ttl < 59*time.Minute {
		t.Fatalf("TTL after restart: %v %v", ttl, err)
	}
	r := s.raw()
	r.expect("+OK\r\n", "SELECT", "7")
	r.expect(":100\r\n", "DBSIZE")
	r.expect(bulk("42"), "GET", "n42")
}

// Keys expire on access (lazily) and on their own (the active sweeper).
func TestExpiry(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client()
	c.Set(ctx, "lazy", "v", 30*time.Millisecond)
	waitFor(t, 5*time.Second, "GET to stop seeing an expired key", func() bool {
		return c.Get(ctx, "lazy").Err() == redis.Nil
	})
	for i := 0; i < 1000; i++ {
		c.Set(ctx, fmt.Sprint("active", i), "v", time.Duration(1+i%20)*time.Millisecond)
	}
	c.Set(ctx, "stays", "v", 0)
	// Nobody reads the keys: only the sweeper can remove them.
	waitFor(t, 10*time.Second, "the sweeper to delete 1000 expired keys", func() bool {
		return c.DBSize(ctx).Val() == 1
	})
	if n, _ := c.Exists(ctx, "stays").Result(); n != 1 {
		t.Fatal("the sweeper deleted a key without expiry")
	}
	info := c.Info(ctx, "stats").Val()
	if !strings.Contains(info, "expired_keys:") || strings.Contains(info, "expired_keys:0\r") {
		t.Fatalf("INFO does not count expired keys: %s", info)
	}
	// TTL edge cases: zero and negative delete at once; overflow is an error.
	r := s.raw()
	for _, ttl := range []string{"0", "-5"} {
		r.expect("+OK\r\n", "SET", "e", "v")
		r.expect(":1\r\n", "EXPIRE", "e", ttl)
		r.expect(":0\r\n", "EXISTS", "e")
	}
	r.expect("+OK\r\n", "SET", "e", "v")
	r.expect("-ERR invalid expire time in 'expire' command\r\n", "EXPIRE", "e", "9223372036854775807")
	r.expect("-ERR invalid expire time in 'pexpire' command\r\n", "PEXPIRE", "e", "9223372036854775807")
	r.expect("-ERR invalid expire time in 'set' command\r\n", "SET", "e", "v", "PX", "9223372036854775807")
	r.expect(":-1\r\n", "TTL", "e")
	r.expect(":1\r\n", "PEXPIRE", "e", "100000")
	var pttl int
	if got := r.do("PTTL", "e"); func() bool { _, err := fmt.Sscanf(got, ":%d\r\n", &pttl); return err != nil }() || pttl < 90000 || pttl > 100000 {
		t.Fatalf("PTTL: %q", got)
	}
}

// SCAN returns every key that exists for the whole iteration, while other
// clients insert, overwrite and delete keys concurrently.
func TestScanUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client()
	const stable = 2000
	pipe := c.Pipeline()
	for i := 0; i < stable; i++ {
		pipe.Set(ctx, fmt.Sprint("stable:", i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			wc := s.client()
			for i := 0; !stop.Load(); i++ {
				wc.Set(ctx, fmt.Sprintf("churn:%d:%d", w, i), "x", 0)
				wc.Set(ctx, fmt.Sprint("stable:", i%stable), "overwritten", 0)
				wc.Del(ctx, fmt.Sprintf("churn:%d:%d", w, i-3))
			}
		}(w)
	}
	seen := map[string]int{}
	var cursor uint64
	for first := true; first || cursor != 0; first = false {
		keys, next, err := c.Scan(ctx, cursor, "stable:*", 50).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k]++
		}
		cursor = next
	}
	stop.Store(true)
	wg.Wait()
	for i := 0; i < stable; i++ {
		if seen[fmt.Sprint("stable:", i)] == 0 {
			t.Fatalf("SCAN missed stable:%d", i)
		}
	}
	// TYPE filter.
	keys, _, err := c.ScanType(ctx, 0, "*", 100000, "string").Result()
	if err != nil || len(keys) < stable {
		t.Fatalf("SCAN TYPE string: %d keys, %v", len(keys), err)
	}
	keys, _, _ = c.ScanType(ctx, 0, "*", 100000, "list").Result()
	if len(keys) != 0 {
		t.Fatalf("SCAN TYPE list: %v", keys)
	}
}

// INFO has Redis's sections and field names.
func TestInfo(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client()
	c.Set(ctx, "k", "v", time.Hour)
	info := c.Info(ctx).Val()
	for _, want := range []string{"# Server\r\nredis_version:7.0.15\r\n", "# Clients\r\nconnected_clients:", "# Memory\r\nused_memory:",
		"# Persistence\r\n", "# Stats\r\ntotal_connections_received:", "# Replication\r\nrole:master\r\n", "# CPU\r\n",
		"# Keyspace\r\ndb0:keys=1,expires=1,avg_ttl=0\r\n", "block_tasks_submitted:"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q", want)
		}
	}
	if got := c.Info(ctx, "keyspace").Val(); strings.Contains(got, "# Server") {
		t.Errorf("INFO keyspace returned other sections: %q", got)
	}
}

// CONFIG SET changes what it can at run time, atomically.
func TestConfigSet(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.expect("*2\r\n$10\r\ndurability\r\n$8\r\neverysec\r\n", "CONFIG", "GET", "durability")
	r.expect("+OK\r\n", "CONFIG", "SET", "durability", "always")
	r.expect("*2\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n", "CONFIG", "GET", "appendfsync")
	r.expect("-ERR CONFIG SET failed (possibly related to argument 'durability') - must be always, everysec or off, not \"never\"\r\n",
		"CONFIG", "SET", "durability", "never")
	r.expect("-ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config\r\n", "CONFIG", "SET", "databases", "1")
	// The listener cannot move: a new port fails as Redis fails to listen.
	r.expect("-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.\r\n", "CONFIG", "SET", "port", "1")
	// appendfsync is Redis's name for the durability modes.
	r.expect("+OK\r\n", "CONFIG", "SET", "appendfsync", "no")
	r.expect("*2\r\n$10\r\ndurability\r\n$3\r\noff\r\n", "CONFIG", "GET", "durability")
	r.expect("-ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) must be one of the following: everysec, always, no\r\n",
		"CONFIG", "SET", "appendfsync", "sometimes")
	// All or nothing across applied and stored settings: a bad value
	// undoes the durability change made before it.
	r.expect("-ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer\r\n",
		"CONFIG", "SET", "appendfsync", "everysec", "timeout", "abc")
	r.expect("*2\r\n$10\r\ndurability\r\n$3\r\noff\r\n", "CONFIG", "GET", "durability")
	r.expect("+OK\r\n", "CONFIG", "SET", "appendfsync", "always", "timeout", "30", "maxmemory", "1gb")
	r.expect("*2\r\n$10\r\ndurability\r\n$6\r\nalways\r\n", "CONFIG", "GET", "durability")
	r.expect("*2\r\n$7\r\ntimeout\r\n$2\r\n30\r\n", "CONFIG", "GET", "timeout")
	if info := s.client().Info(ctx, "memory").Val(); !strings.Contains(info, "maxmemory:1073741824\r\n") {
		t.Errorf("INFO memory does not report the maxmemory set: %q", info)
	}
	r.expect("+OK\r\n", "SET", "k", "v")
	r.expect("+OK\r\n", "CONFIG", "SET", "requirepass", "pw")
	other := s.raw()
	other.expect("-NOAUTH Authentication required.\r\n", "GET", "k")
	other.expect("+OK\r\n", "AUTH", "pw")
	other.expect(bulk("v"), "GET", "k")
}

// A client killed by another is no longer listed by CLIENT LIST, at once,
// as in Redis (go-redis's "ClientKillByFilter with kill myself" spec).
func TestClientKillGoneFromList(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	admin, victim := s.raw(), s.raw()
	victim.expect("+OK\r\n", "CLIENT", "SETNAME", "victim")
	id := victim.clientID()
	for i := 0; i < 20; i++ {
		admin.expect(":1\r\n", "CLIENT", "KILL", "ID", id)
		for _, args := range [][]string{{"CLIENT", "LIST"}, {"CLIENT", "LIST", "ID", id}, {"CLIENT", "LIST", "TYPE", "normal"}} {
			if got := admin.do(args...); strings.Contains(got, "name=victim") {
				t.Fatalf("%v after CLIENT KILL lists the killed client: %q", args, got)
			}
		}
		victim = s.raw()
		victim.expect("+OK\r\n", "CLIENT", "SETNAME", "victim")
		id = victim.clientID()
	}
}
