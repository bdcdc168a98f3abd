package tests

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The MIGRATE command (actor/migrate.go; not `cellar migrate`, whose tests
// are migrate_test.go): from Cellar to a real redis-server and to another
// Cellar, and from a redis-server to Cellar, with Redis 7.0's reply bytes,
// pinned here and checked against redis-server as a source too.

// migrateEnd is a server on either side of a MIGRATE.
type migrateEnd struct {
	name       string
	host, port string // its TCP address, as MIGRATE names a target
	conn       string // what dialRaw takes
	client     func(db int) *redis.Client
}

func cellarEnd(t *testing.T) migrateEnd {
	s := startServer(t)
	needCellar(t, s)
	host, port, _ := net.SplitHostPort(s.addr)
	return migrateEnd{name: "cellar", host: host, port: port, conn: s.addr,
		client: func(db int) *redis.Client { return s.client(func(o *redis.Options) { o.DB = db }) }}
}

func redisEnd(t *testing.T) migrateEnd {
	r := redistest.StartTCP(t)
	host, port, _ := net.SplitHostPort(r.Addr)
	return migrateEnd{name: "redis", host: host, port: port, conn: r.Sock,
		client: func(db int) *redis.Client {
			c := redis.NewClient(&redis.Options{Network: "unix", Addr: r.Sock, DB: db, ReadTimeout: replyTimeout})
			t.Cleanup(func() { c.Close() })
			return c
		}}
}

// closedPort is a TCP port on 127.0.0.1 nobody listens on: one the kernel
// handed out, and closed.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	return port
}

// Keys of every type (redistest.Fill), some with a time to live, moved
// whole: COPY leaves them, a second MIGRATE without REPLACE meets BUSYKEY
// and deletes nothing, REPLACE moves them. The target holds the same
// values, with a time to live no longer than the source's.
func TestMigrateCommandEveryType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, pair := range []struct {
		name     string
		src, dst func(*testing.T) migrateEnd
	}{
		{"cellar-to-redis", cellarEnd, redisEnd},
		{"cellar-to-cellar", cellarEnd, cellarEnd},
		{"redis-to-cellar", redisEnd, cellarEnd},
	} {
		t.Run(pair.name, func(t *testing.T) {
			t.Parallel()
			src, dst := pair.src(t), pair.dst(t)
			sc, dc := src.client(0), dst.client(5)
			keys := redistest.Fill(t, ctx, sc, "mig:")
			want := map[string]string{}
			ttl := map[string]int64{}
			for i, k := range keys {
				if i%3 == 0 {
					if err := sc.PExpire(ctx, k, time.Hour).Err(); err != nil {
						t.Fatal(err)
					}
				}
				d, err := redistest.Describe(ctx, sc, k)
				if err != nil {
					t.Fatal(err)
				}
				want[k] = d
				ttl[k] = sc.Do(ctx, "PTTL", k).Val().(int64)
			}
			migrate := func(opts ...string) []string {
				return append(append([]string{"MIGRATE", dst.host, dst.port, "", "5", "10000"}, opts...), append([]string{"KEYS"}, keys...)...)
			}
			check := func(what string, atSource bool) {
				t.Helper()
				for _, k := range keys {
					if d, _ := redistest.Describe(ctx, dc, k); d != want[k] {
						t.Fatalf("%s: %s on the target: %.200s, want %.200s", what, k, d, want[k])
					}
					got := dc.Do(ctx, "PTTL", k).Val().(int64)
					if ttl[k] < 0 && got != ttl[k] || ttl[k] >= 0 && (got <= 0 || got > ttl[k]) {
						t.Fatalf("%s: %s's PTTL on the target %d, on the source %d", what, k, got, ttl[k])
					}
					if d, _ := redistest.Describe(ctx, sc, k); (d == want[k]) != atSource {
						t.Fatalf("%s: %s on the source: %.200s", what, k, d)
					}
				}
			}
			r := dialRaw(t, src.conn)
			r.expect(status("OK"), migrate("COPY")...)
			check("COPY", true)
			r.expect(errr("ERR Target instance replied with error: BUSYKEY Target key name already exists."), migrate()...)
			check("BUSYKEY", true)
			r.expect(status("OK"), migrate("REPLACE")...)
			check("REPLACE", false)
			r.expect(status("NOKEY"), migrate()...)
		})
	}
}

// migrateSteps runs MIGRATE's cases from src to the target behind dst (an
// admin connection) and checks each reply; they hold for Cellar and for
// redis-server, as sources and as targets.
func migrateSteps(t *testing.T, src, dst *rawConn, host, port, closed string) {
	mig := func(args ...string) []string { return append([]string{"MIGRATE", host, port}, args...) }
	// Nothing to migrate, and the argument errors, in Redis's order.
	src.expect(status("NOKEY"), mig("nokey", "0", "1000")...)
	src.expect(status("NOKEY"), mig("", "0", "1000", "KEYS", "a", "b")...)
	src.expect(status("NOKEY"), mig("", "0", "1000", "COPY", "KEYS")...)
	src.expect(errr("ERR syntax error"), mig("k", "0", "1000", "NOSUCH")...)
	src.expect(errr("ERR syntax error"), mig("k", "x", "y", "COPY", "NOSUCH")...)
	src.expect(errr("ERR syntax error"), mig("k", "0", "1000", "AUTH")...)
	src.expect(errr("ERR syntax error"), mig("k", "0", "1000", "AUTH2", "u")...)
	src.expect(errr("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"), mig("k", "0", "1000", "KEYS", "a")...)
	src.expect(errr("ERR value is not an integer or out of range"), mig("k", "0", "x")...)
	src.expect(errr("ERR value is not an integer or out of range"), mig("k", "x", "1000")...)
	src.expect(errr("ERR wrong number of arguments for 'migrate' command"), mig("k", "0")...)

	// A target that is not there, a database it lacks: the key stays.
	// Redis connects without blocking and finds a refused connection
	// when it writes; only an address it cannot connect to at all fails
	// the connect.
	src.expect(status("OK"), "SET", "k", "v")
	src.expect(errr("IOERR error or timeout writing to target instance"), "MIGRATE", "127.0.0.1", closed, "k", "0", "1000")
	src.expect(errr("IOERR error or timeout connecting to the client"), "MIGRATE", "127.0.0.1", "-1", "k", "0", "1000")
	src.expect(errr("ERR Target instance replied with error: ERR DB index is out of range"), mig("k", "99", "1000")...)
	src.expect(bulk("v"), "GET", "k")
	// The RESTORE after the failed SELECT ran, in the target's database 0.
	dst.expect(bulk("v"), "GET", "k")
	dst.expect(integer(1), "DEL", "k")

	// A move, with its time to live; the key is gone here.
	src.expect(integer(1), "PEXPIRE", "k", "100000")
	src.expect(status("OK"), mig("k", "0", "0")...) // timeout 0: Redis's 1000 ms
	src.expect(integer(0), "EXISTS", "k")
	dst.expect(bulk("v"), "GET", "k")
	if n, _ := strconv.Atoi(strings.Trim(dst.do("PTTL", "k"), ":\r\n")); n <= 0 || n > 100000 {
		t.Fatalf("PTTL on the target: %d", n)
	}

	// BUSYKEY for one of two keys: the other, acknowledged, is deleted.
	src.expect(status("OK"), "MSET", "a", "1", "b", "2")
	dst.expect(status("OK"), "SET", "b", "x")
	src.expect(errr("ERR Target instance replied with error: BUSYKEY Target key name already exists."), mig("", "0", "1000", "KEYS", "a", "nokey", "b")...)
	src.expect(integer(0), "EXISTS", "a")
	src.expect(bulk("2"), "GET", "b")
	dst.expect(bulk("1"), "GET", "a")
	dst.expect(bulk("x"), "GET", "b")
	src.expect(status("OK"), mig("", "0", "1000", "copy", "replace", "KEYS", "b")...)
	src.expect(bulk("2"), "GET", "b")
	dst.expect(bulk("2"), "GET", "b")

	// AUTH and AUTH2 to a target that asks for a password. The connection
	// MIGRATE keeps to its target, just used, was authenticated before the
	// password: it goes on without AUTH. It lives 10 s unused (Redis's
	// MIGRATE_SOCKET_CACHE_TTL): on a machine so slow that a few commands
	// took half of that, it may be gone, and its reuse is not checked.
	src.expect(status("OK"), "SET", "d", "4")
	src.expect(status("OK"), "SET", "e", "5")
	used := time.Now()
	src.expect(status("OK"), mig("e", "0", "1000")...)
	dst.expect(status("OK"), "CONFIG", "SET", "requirepass", "sekret")
	dst.expect(status("OK"), "ACL", "SETUSER", "mover", "on", ">pw", "~*", "+@all")
	if cached := time.Since(used) < 5*time.Second; cached {
		src.expect(status("OK"), mig("d", "0", "1000")...)
		if info := src.do("INFO", "stats"); !strings.Contains(info, "\r\nmigrate_cached_sockets:1\r\n") {
			t.Fatalf("INFO stats after a MIGRATE: %s", info)
		}
		// Once it is gone, the next MIGRATE finds it broken, tries again
		// on a new connection, which must authenticate.
		dst.expect(integer(1), "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	} else {
		t.Logf("%v passed since the last MIGRATE: the reuse of its connection is not checked", time.Since(used))
		src.expect(status("OK"), mig("d", "0", "1000", "AUTH", "sekret")...)
		dst.do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	}
	src.expect(integer(0), "EXISTS", "d")
	dst.expect(bulk("4"), "GET", "d")
	src.expect(errr("ERR Target instance replied with error: NOAUTH Authentication required."), mig("b", "0", "1000", "REPLACE")...)
	src.expect(errr("ERR Target instance replied with error: WRONGPASS invalid username-password pair or user is disabled."), mig("b", "0", "1000", "REPLACE", "AUTH", "nope")...)
	src.expect(errr("ERR Target instance replied with error: WRONGPASS invalid username-password pair or user is disabled."), mig("b", "0", "1000", "REPLACE", "AUTH2", "mover", "nope")...)
	src.expect(errr("ERR Target instance replied with error: WRONGPASS invalid username-password pair or user is disabled."), mig("b", "0", "1000", "REPLACE", "AUTH2", "", "pw")...)
	src.expect(bulk("2"), "GET", "b")
	src.expect(status("OK"), mig("b", "0", "1000", "REPLACE", "AUTH", "sekret")...)
	src.expect(integer(0), "EXISTS", "b")
	src.expect(status("OK"), "SET", "c", "3")
	src.expect(status("OK"), mig("", "1", "1000", "AUTH2", "mover", "pw", "KEYS", "c")...)
	src.expect(integer(0), "EXISTS", "c")
	dst.expect(status("OK"), "SELECT", "1")
	dst.expect(bulk("3"), "GET", "c")

	// Failures count in INFO errorstats by their code.
	info := src.do("INFO", "errorstats")
	for _, want := range []string{"errorstat_IOERR:count=2\r\n", "errorstat_ERR:count=14\r\n"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO errorstats lacks %s: %s", want, info)
		}
	}
}

func TestMigrateCommandReplies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		resp     string
		src, dst func(*testing.T) migrateEnd
	}{
		{"cellar-to-redis", "2", cellarEnd, redisEnd},
		{"cellar-to-cellar", "2", cellarEnd, cellarEnd},
		{"redis-to-redis", "2", redisEnd, redisEnd},
		{"redis-to-cellar", "2", redisEnd, cellarEnd},
		{"cellar-to-redis-resp3", "3", cellarEnd, redisEnd},
		{"redis-to-redis-resp3", "3", redisEnd, redisEnd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src, dst := tc.src(t), tc.dst(t)
			s := dialRaw(t, src.conn)
			if tc.resp == "3" {
				s.do("HELLO", "3")
			}
			migrateSteps(t, s, dialRaw(t, dst.conn), dst.host, dst.port, closedPort(t))
		})
	}
}

// fakeTarget is a target whose answers the test decides: once a
// connection's requests are read (SELECT and the RESTOREs), serve returns
// what to answer (it may wait first), then the connection is closed.
type fakeTarget struct {
	ln    net.Listener
	mu    sync.Mutex
	conns int
	got   chan []string // each connection's request names, once read
}

func startFakeTarget(t *testing.T, requests int, serve func(conn int) string) *fakeTarget {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeTarget{ln: ln, got: make(chan []string, 16)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conns++
			n := f.conns
			f.mu.Unlock()
			go func() {
				defer c.Close()
				r := rawOn(t, c)
				var names []string
				for range requests {
					req, err := r.reply()
					if err != nil {
						return
					}
					_, rest, _ := strings.Cut(req, "\r\n$")
					_, rest, _ = strings.Cut(rest, "\r\n")
					name, _, _ := strings.Cut(rest, "\r\n")
					names = append(names, name)
				}
				f.got <- names
				c.Write([]byte(serve(n)))
			}()
		}
	}()
	return f
}

func (f *fakeTarget) port() string {
	_, port, _ := net.SplitHostPort(f.ln.Addr().String())
	return port
}

func (f *fakeTarget) connections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns
}

// While the target has not answered, Cellar serves its other clients; a
// key written meanwhile is kept (in its new state) when the target
// acknowledges it, the others are deleted.
func TestMigrateCommandInFlight(t *testing.T) {
	t.Parallel()
	src := cellarEnd(t)
	release := make(chan struct{})
	f := startFakeTarget(t, 4, func(int) string {
		<-release
		return "+OK\r\n+OK\r\n+OK\r\n+OK\r\n"
	})
	r, other := dialRaw(t, src.conn), dialRaw(t, src.conn)
	r.expect(status("OK"), "MSET", "a", "1", "b", "2", "c", "3")
	r.send(encode("MIGRATE", "127.0.0.1", f.port(), "", "0", "100000", "KEYS", "a", "b", "c"))
	if got := strings.Join(<-f.got, " "); got != "SELECT RESTORE RESTORE RESTORE" {
		t.Fatalf("the target got %s", got)
	}
	// The MIGRATE waits for its target; the server does not.
	other.expect(status("PONG"), "PING")
	other.expect(status("OK"), "SET", "b", "changed")
	other.expect(integer(1), "DEL", "c")
	other.expect(status("OK"), "SET", "c", "again")
	other.expect(bulk("1"), "GET", "a")
	close(release)
	if got := r.read(); got != status("OK") {
		t.Fatalf("MIGRATE: %q", got)
	}
	r.expect(integer(0), "EXISTS", "a")
	r.expect(bulk("changed"), "GET", "b")
	r.expect(bulk("again"), "GET", "c")
}

// A target that closes the connection unanswered is tried once more, as
// Redis does; one that does not answer in time is not. Both end in Redis's
// IOERR, and the keys stay.
func TestMigrateCommandTargetSilent(t *testing.T) {
	t.Parallel()
	for _, mk := range []func(*testing.T) migrateEnd{cellarEnd, redisEnd} {
		src := mk(t)
		t.Run(src.name, func(t *testing.T) {
			r := dialRaw(t, src.conn)
			r.expect(status("OK"), "SET", "k", "v")

			closing := startFakeTarget(t, 2, func(int) string { return "" })
			r.expect(errr("IOERR error or timeout reading to target instance"), "MIGRATE", "127.0.0.1", closing.port(), "k", "0", "1000")
			if n := closing.connections(); n != 2 {
				t.Fatalf("connections to a target that closes: %d, want 2", n)
			}

			never := make(chan struct{})
			t.Cleanup(func() { close(never) })
			silent := startFakeTarget(t, 2, func(int) string { <-never; return "" })
			r.expect(errr("IOERR error or timeout reading to target instance"), "MIGRATE", "127.0.0.1", silent.port(), "k", "0", "50")
			if n := silent.connections(); n != 1 {
				t.Fatalf("connections to a target that does not answer: %d, want 1", n)
			}

			// An answer cut after SELECT's: tried again, as nothing was
			// acknowledged.
			cut := startFakeTarget(t, 2, func(int) string { return "+OK\r\n" })
			r.expect(errr("IOERR error or timeout reading to target instance"), "MIGRATE", "127.0.0.1", cut.port(), "k", "0", "1000")
			if n := cut.connections(); n != 2 {
				t.Fatalf("connections to a target that answers SELECT only: %d, want 2", n)
			}
			r.expect(bulk("v"), "GET", "k")
		})
	}
}

// What a MIGRATE that moves a key does beside the move, on Cellar as on
// redis-server: the keyspace notification of the deletion (none for a
// COPY), and the ACL checks of its keys.
func TestMigrateCommandNotifiesAndChecksKeys(t *testing.T) {
	t.Parallel()
	for _, mk := range []func(*testing.T) migrateEnd{cellarEnd, redisEnd} {
		src := mk(t)
		t.Run(src.name, func(t *testing.T) {
			dst := redisEnd(t)
			r, sub := dialRaw(t, src.conn), dialRaw(t, src.conn)
			r.expect(status("OK"), "CONFIG", "SET", "notify-keyspace-events", "KEA")
			sub.do("SUBSCRIBE", "__keyevent@0__:del", "__keyspace@0__:a", "__keyspace@0__:b")
			sub.read()
			sub.read()
			r.expect(status("OK"), "MSET", "a", "1", "b", "2")
			r.expect(status("OK"), "MIGRATE", dst.host, dst.port, "", "0", "1000", "COPY", "KEYS", "b")
			r.expect(status("OK"), "MIGRATE", dst.host, dst.port, "", "0", "1000", "REPLACE", "KEYS", "a", "b")
			// The first events are MSET's: set on a, set on b.
			for _, want := range []string{
				"*3\r\n" + bulk("message") + bulk("__keyspace@0__:a") + bulk("set"),
				"*3\r\n" + bulk("message") + bulk("__keyspace@0__:b") + bulk("set"),
				"*3\r\n" + bulk("message") + bulk("__keyspace@0__:a") + bulk("del"),
				"*3\r\n" + bulk("message") + bulk("__keyevent@0__:del") + bulk("a"),
				"*3\r\n" + bulk("message") + bulk("__keyspace@0__:b") + bulk("del"),
				"*3\r\n" + bulk("message") + bulk("__keyevent@0__:del") + bulk("b"),
			} {
				if got := sub.read(); got != want {
					t.Fatalf("event: got %q, want %q", got, want)
				}
			}
			r.expect(status("OK"), "CONFIG", "SET", "notify-keyspace-events", "")

			// A user allowed the keys a* only.
			r.expect(status("OK"), "ACL", "SETUSER", "amover", "on", ">pw", "~a*", "+@all")
			u := dialRaw(t, src.conn)
			u.expect(status("OK"), "AUTH", "amover", "pw")
			r.expect(status("OK"), "MSET", "a1", "1", "b1", "2")
			noperm := errr("NOPERM this user has no permissions to access one of the keys used as arguments")
			u.expect(noperm, "MIGRATE", dst.host, dst.port, "b1", "0", "1000")
			u.expect(noperm, "MIGRATE", dst.host, dst.port, "", "0", "1000", "KEYS", "a1", "b1")
			// AUTH's password is no key. The target has no password: AUTH
			// fails there, the RESTORE after it runs, the key stays here.
			u.expect(errr("ERR Target instance replied with error: ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"),
				"MIGRATE", dst.host, dst.port, "", "0", "1000", "AUTH", "b1", "KEYS", "a1")
			r.expect(integer(1), "EXISTS", "a1")
			u.expect(status("OK"), "MIGRATE", dst.host, dst.port, "", "0", "1000", "REPLACE", "KEYS", "a1")
			r.expect(integer(0), "EXISTS", "a1")
			r.expect(integer(1), "EXISTS", "b1")

			// SLOWLOG and MONITOR hide AUTH's and AUTH2's arguments.
			r.expect(status("OK"), "CONFIG", "SET", "slowlog-log-slower-than", "0")
			r.expect(status("OK"), "SLOWLOG", "RESET")
			mon := dialRaw(t, src.conn)
			mon.expect(status("OK"), "MONITOR")
			r.expect(status("NOKEY"), "MIGRATE", "127.0.0.1", "1", "", "0", "1000", "COPY", "AUTH2", "user", "secret", "AUTH", "pw2", "KEYS", "nokey")
			r.expect(status("NOKEY"), "MIGRATE", "127.0.0.1", "1", "", "0", "1000", "AUTH", "KEYS", "COPY", "KEYS", "nokey")
			r.expect(errr("ERR syntax error"), "MIGRATE", "127.0.0.1", "1", "k", "0", "1000", "AUTH", "p", "NOSUCH", "AUTH2", "u", "s")
			logged, err := src.client(0).SlowLogGet(context.Background(), 10).Result()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range logged {
				if strings.EqualFold(e.Args[0], "migrate") {
					got = append([]string{strings.Join(e.Args, " ")}, got...)
				}
			}
			want := []string{"MIGRATE 127.0.0.1 1  0 1000 COPY AUTH2 (redacted) (redacted) AUTH (redacted) KEYS nokey",
				"MIGRATE 127.0.0.1 1  0 1000 AUTH (redacted) COPY KEYS nokey",
				"MIGRATE 127.0.0.1 1 k 0 1000 AUTH (redacted) NOSUCH AUTH2 u s"}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("SLOWLOG's MIGRATEs:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, w := range []string{`"MIGRATE" "127.0.0.1" "1" "" "0" "1000" "COPY" "AUTH2" "(redacted)" "(redacted)" "AUTH" "(redacted)" "KEYS" "nokey"`,
				`"MIGRATE" "127.0.0.1" "1" "" "0" "1000" "AUTH" "(redacted)" "COPY" "KEYS" "nokey"`,
				`"MIGRATE" "127.0.0.1" "1" "k" "0" "1000" "AUTH" "(redacted)" "NOSUCH" "AUTH2" "u" "s"`} {
				line := mon.read()
				if !strings.HasSuffix(strings.TrimSuffix(line, "\r\n"), w) {
					t.Fatalf("MONITOR: %q, want it to end with %s", line, w)
				}
			}
			r.expect(status("OK"), "CONFIG", "SET", "slowlog-log-slower-than", "10000")
		})
	}
}

// A MIGRATE's deletion reaches Cellar's replicas (a redis-server here) as
// a DEL, and stays deleted across a restart; a COPY deletes nothing.
func TestMigrateCommandReplicatesDeletion(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	needCellar(t, srv)
	host, port, _ := net.SplitHostPort(srv.addr)
	replica := redistest.StartTCP(t, "--replicaof", host, port)
	rc := redis.NewClient(&redis.Options{Network: "unix", Addr: replica.Sock})
	defer rc.Close()
	c := srv.client()
	r := srv.raw()
	r.expect(status("OK"), "MSET", "moved", "1", "copied", "2", "kept", "3")
	caughtUp(t, c, rc)
	dst := redisEnd(t)
	r.expect(status("OK"), "MIGRATE", dst.host, dst.port, "", "0", "1000", "KEYS", "moved")
	r.expect(status("OK"), "MIGRATE", dst.host, dst.port, "", "0", "1000", "COPY", "KEYS", "copied")
	caughtUp(t, c, rc)
	if got := strings.Join(dbKeys(t, rc), " "); got != "copied kept" {
		t.Fatalf("the replica's keys: %s", got)
	}
	srv.restart()
	if got := strings.Join(dbKeys(t, srv.client()), " "); got != "copied kept" {
		t.Fatalf("keys after a restart: %s", got)
	}
}
