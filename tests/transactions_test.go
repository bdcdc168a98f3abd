package tests

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
)

// Transactions over the wire: what testdata/compat/transactions.txt cannot
// express (a second client, expiry, blocked clients, limits, CLIENT REPLY,
// pipelines), with exact bytes. The WATCH cases follow Redis's
// tests/unit/multi.tcl.

// pong is EXEC's reply to MULTI, PING, EXEC.
const pong = "*1\r\n+PONG\r\n"

// execAfter runs MULTI, PING, EXEC on r and returns EXEC's reply.
func execAfter(r *rawConn) string {
	r.expect(status("OK"), "MULTI")
	r.expect(status("QUEUED"), "PING")
	return r.do("EXEC")
}

// noActiveExpiry keeps the expiry sweep from deleting keys during a test,
// as Redis's tests do with DEBUG SET-ACTIVE-EXPIRE 0.
func noActiveExpiry(c *cellar.Config) { c.Expiry.Interval = time.Hour }

// staleKey sets key (in r's database) to expire within a millisecond and
// waits until it has: it stays stored, expired, until something looks.
func staleKey(t *testing.T, r *rawConn, key string) {
	t.Helper()
	at := time.Now().UnixMilli() + 1
	r.expect(status("OK"), "SET", key, "foo", "PXAT", strconv.FormatInt(at, 10))
	waitFor(t, 5*time.Second, "the key's expiry to pass", func() bool { return time.Now().UnixMilli() > at+1 })
}

// watchExpiring sets key with a short TTL and watches it while it is still
// alive (a key already expired when WATCH runs is not watched as modified, as
// in Redis). A busy machine may take longer than the TTL between SET and
// WATCH, so the TTL doubles until PTTL, after WATCH, finds the key alive.
// It returns a time by which the key has expired.
func watchExpiring(t *testing.T, r *rawConn, key string) time.Time {
	t.Helper()
	for ttl := 20; ; ttl *= 2 {
		if ttl > 60_000 {
			t.Fatal("WATCH never ran within a minute of SET")
		}
		r.expect(status("OK"), "SET", key, "1", "PX", strconv.Itoa(ttl))
		r.expect(status("OK"), "WATCH", key)
		if pttl := r.do("PTTL", key); pttl != integer(-2) && pttl != integer(0) {
			// The server set the expiry before this moment.
			return time.Now().Add(time.Duration(ttl+2) * time.Millisecond)
		}
		r.expect(status("OK"), "UNWATCH")
	}
}

func TestWatchOtherClients(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	a, b := s.raw(), s.raw()

	// Another client's write, in the same database or another.
	a.expect(status("OK"), "SET", "x", "30")
	a.expect(status("OK"), "WATCH", "x")
	b.expect(status("OK"), "SET", "x", "40")
	if got := execAfter(a); got != nullArray {
		t.Fatalf("EXEC after another client's write: %q", got)
	}
	a.expect(status("OK"), "WATCH", "x")
	b.expect(status("OK"), "SELECT", "1")
	b.expect(status("OK"), "SET", "x", "40")
	if got := execAfter(a); got != pong {
		t.Fatalf("EXEC after a write to x in another database: %q", got)
	}

	// A dirty watch shows in CLIENT LIST as flag d; MULTI adds x.
	a.expect(status("OK"), "WATCH", "x")
	b.expect(status("OK"), "SELECT", "0")
	b.expect(integer(1), "DEL", "x")
	list := b.do("CLIENT", "LIST")
	if !strings.Contains(list, " flags=d ") {
		t.Fatalf("CLIENT LIST after a watched key changed:\n%s", list)
	}
	a.expect(status("OK"), "MULTI")
	if list := b.do("CLIENT", "LIST"); !strings.Contains(list, " flags=xd ") {
		t.Fatalf("CLIENT LIST in MULTI with a dirty watch:\n%s", list)
	}
	a.expect(nullArray, "EXEC")

	// RESP3's null.
	a.expect(status("OK"), "SET", "x", "1")
	a.do("HELLO", "3")
	a.expect(status("OK"), "WATCH", "x")
	b.expect(status("OK"), "SET", "x", "2")
	a.expect(status("OK"), "MULTI")
	a.expect(status("QUEUED"), "GET", "x")
	a.expect("_\r\n", "EXEC")
}

// A pop by a woken blocked client changes the keys it pops from and moves
// to, as any write does.
func TestWatchWokenPop(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	a, blocked, pusher := s.raw(), s.raw(), s.raw()
	a.expect(status("OK"), "WATCH", "dst")
	blocked.send(encode("BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"))
	waitFor(t, 10*time.Second, "the client to block", func() bool {
		return strings.Contains(pusher.do("INFO", "clients"), "blocked_clients:1\r\n")
	})
	pusher.expect(integer(1), "RPUSH", "src", "job")
	if got := blocked.read(); got != bulk("job") {
		t.Fatalf("BLMOVE: %q", got)
	}
	if got := execAfter(a); got != nullArray {
		t.Fatalf("EXEC after a woken client moved onto the watched key: %q", got)
	}
}

// Expiry and WATCH, as Redis 7.0 has it: a key that expires after WATCH
// changed (lazily noticed or deleted by the sweep); a key already expired
// when watched did not, when it is deleted, flushed or swapped away.
func TestWatchExpiry(t *testing.T) {
	t.Parallel()
	s := startServer(t, noActiveExpiry)
	r := s.raw()

	t.Run("lazy expired after WATCH", func(t *testing.T) {
		// Waits on the clock, not on a command that would expire the key
		// itself: EXEC must notice by itself that a watched key expired.
		gone := watchExpiring(t, r, "key")
		waitFor(t, 2*time.Minute, "the watched key's expiry to pass", func() bool { return time.Now().After(gone) })
		r.expect(status("OK"), "MULTI")
		r.expect(status("QUEUED"), "INCR", "key")
		r.expect(nullArray, "EXEC")
	})
	t.Run("stale when watched", func(t *testing.T) {
		staleKey(t, r, "x")
		r.expect(status("OK"), "WATCH", "x")
		if got := execAfter(r); got != pong {
			t.Fatalf("EXEC: %q", got)
		}
	})
	t.Run("stale when watched, then deleted", func(t *testing.T) {
		staleKey(t, r, "x")
		r.expect(status("OK"), "WATCH", "x")
		r.expect(integer(0), "EXISTS", "x") // deletes it
		if got := execAfter(r); got != pong {
			t.Fatalf("EXEC: %q", got)
		}
	})
	t.Run("FLUSHDB while watching a stale key", func(t *testing.T) {
		staleKey(t, r, "x")
		r.expect(status("OK"), "WATCH", "x")
		r.expect(status("OK"), "FLUSHDB")
		if got := execAfter(r); got != pong {
			t.Fatalf("EXEC: %q", got)
		}
	})
	t.Run("SWAPDB does not touch watched stale keys", func(t *testing.T) {
		r.expect(status("OK"), "FLUSHALL")
		r.expect(status("OK"), "SELECT", "1")
		staleKey(t, r, "x")
		r.expect(status("OK"), "WATCH", "x")
		r.expect(status("OK"), "SWAPDB", "0", "1")
		if got := execAfter(r); got != pong {
			t.Fatalf("EXEC: %q", got)
		}
	})
	t.Run("SWAPDB does not touch a missing key replaced with a stale one", func(t *testing.T) {
		r.expect(status("OK"), "FLUSHALL")
		r.expect(status("OK"), "SELECT", "0")
		staleKey(t, r, "x")
		r.expect(status("OK"), "SELECT", "1")
		r.expect(status("OK"), "WATCH", "x")
		r.expect(status("OK"), "SWAPDB", "0", "1")
		if got := execAfter(r); got != pong {
			t.Fatalf("EXEC: %q", got)
		}
	})
	t.Run("SWAPDB does not touch a stale key replaced with another stale key", func(t *testing.T) {
		r.expect(status("OK"), "FLUSHALL")
		r.expect(status("OK"), "SELECT", "1")
		staleKey(t, r, "x")
		r.expect(status("OK"), "SELECT", "0")
		staleKey(t, r, "x")
		r.expect(status("OK"), "SELECT", "1")
		r.expect(status("OK"), "WATCH", "x")
		r.expect(status("OK"), "SWAPDB", "0", "1")
		if got := execAfter(r); got != pong {
			t.Fatalf("EXEC: %q", got)
		}
	})
	t.Run("SWAPDB touches a stale key replaced with a live one", func(t *testing.T) {
		r.expect(status("OK"), "FLUSHALL")
		r.expect(status("OK"), "SELECT", "0")
		r.expect(status("OK"), "SET", "x", "live")
		r.expect(status("OK"), "SELECT", "1")
		staleKey(t, r, "x")
		r.expect(status("OK"), "WATCH", "x")
		r.expect(status("OK"), "SWAPDB", "0", "1")
		if got := execAfter(r); got != nullArray {
			t.Fatalf("EXEC: %q", got)
		}
		r.expect(status("OK"), "SELECT", "0")
	})
}

// The sweep deleting a watched key that expired after WATCH is a change.
func TestWatchActiveExpiry(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.Expiry.Interval = 10 * time.Millisecond })
	r := s.raw()
	watchExpiring(t, r, "x")
	waitFor(t, 10*time.Second, "the sweep to delete the key", func() bool { return r.do("DBSIZE") == integer(0) })
	if got := execAfter(r); got != nullArray {
		t.Fatalf("EXEC: %q", got)
	}
}

// Watches are bounded per client; watching a key twice counts once; every
// way out of a transaction releases them, disconnecting included.
func TestWatchLimitAndRelease(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.Transactions.MaxWatchedKeys = 3 })
	r, other := s.raw(), s.raw()
	info := func() (int, int) {
		t.Helper()
		text := other.do("INFO", "clients")
		var n [2]int
		for i, field := range []string{"watching_clients", "total_watched_keys"} {
			m := regexp.MustCompile(field + `:(\d+)`).FindStringSubmatch(text)
			if m == nil {
				t.Fatalf("INFO clients has no %s:\n%s", field, text)
			}
			n[i], _ = strconv.Atoi(m[1])
		}
		return n[0], n[1]
	}
	tooMany := errr("ERR too many watched keys: a client may watch at most 3 (transactions.max_watched_keys)")
	r.expect(status("OK"), "WATCH", "a", "b")
	r.expect(status("OK"), "WATCH", "a", "c") // a again: still three keys
	if c, k := info(); c != 1 || k != 3 {
		t.Fatalf("watching %d clients, %d keys; want 1, 3", c, k)
	}
	r.expect(tooMany, "WATCH", "d")
	r.expect(status("OK"), "WATCH", "b")
	r.expect(status("OK"), "UNWATCH")
	r.expect(status("OK"), "WATCH", "d", "e", "f")
	r.expect(tooMany, "WATCH", "g")
	r.expect(status("OK"), "UNWATCH")

	for _, end := range [][]string{{"EXEC"}, {"DISCARD"}, {"RESET"}} {
		r.expect(status("OK"), "WATCH", "a", "b")
		if end[0] != "RESET" {
			r.expect(status("OK"), "MULTI")
		}
		r.do(end...)
		if c, k := info(); c != 0 || k != 0 {
			t.Fatalf("after %s: watching %d clients, %d keys", end[0], c, k)
		}
	}
	// A watch made dirty goes at once.
	r.expect(status("OK"), "WATCH", "a", "b")
	other.expect(status("OK"), "SET", "a", "1")
	if c, k := info(); c != 0 || k != 0 {
		t.Fatalf("after a change: watching %d clients, %d keys", c, k)
	}
	r.expect(status("OK"), "UNWATCH")
	// Disconnecting releases them.
	gone := s.raw()
	gone.expect(status("OK"), "WATCH", "a", "b", "c")
	if c, k := info(); c != 1 || k != 3 {
		t.Fatalf("watching %d clients, %d keys; want 1, 3", c, k)
	}
	gone.c.Close()
	waitFor(t, 10*time.Second, "the watches to go with the connection", func() bool {
		c, k := info()
		return c == 0 && k == 0
	})
}

// What MULTI queues is bounded, counted in CLIENT LIST (multi, multi-mem,
// tot-mem), and given back when the transaction ends.
func TestMultiQueueLimit(t *testing.T) {
	t.Parallel()
	const limit = 1000
	s := startServer(t, func(c *cellar.Config) { c.Transactions.MaxQueuedBytes = limit })
	r, other := s.raw(), s.raw()
	id := r.clientID()
	mine := func(name string) int64 {
		t.Helper()
		line := other.do("CLIENT", "LIST", "ID", id)
		m := regexp.MustCompile(` ` + name + `=(-?\d+) `).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("CLIENT LIST has no %s:\n%s", name, line)
		}
		v, _ := strconv.ParseInt(m[1], 10, 64)
		return v
	}
	if n := mine("multi"); n != -1 {
		t.Fatalf("multi=%d outside MULTI", n)
	}
	r.expect(status("OK"), "MULTI")
	value := strings.Repeat("v", 100)
	// Each SET k<i> <value> is charged 24 + 3*24 + its bytes.
	per := int64(24 + 3*24 + 3 + 2 + len(value))
	queued := 0
	for ; int64(queued+1)*per <= limit; queued++ {
		r.expect(status("QUEUED"), "SET", fmt.Sprintf("k%d", queued), value)
	}
	if n, m := mine("multi"), mine("multi-mem"); n != int64(queued) || m != int64(queued)*per {
		t.Fatalf("multi=%d multi-mem=%d, want %d and %d", n, m, queued, int64(queued)*per)
	}
	if tot := mine("tot-mem"); tot < int64(queued)*per {
		t.Fatalf("tot-mem=%d does not count multi-mem", tot)
	}
	r.expect(errr(fmt.Sprintf("ERR MULTI queue would exceed %d bytes (transactions.max_queued_bytes)", limit)), "SET", "over", value)
	r.expect(errr("EXECABORT Transaction discarded because of previous errors."), "EXEC")
	if n, m := mine("multi"), mine("multi-mem"); n != -1 || m != 0 {
		t.Fatalf("after EXEC: multi=%d multi-mem=%d", n, m)
	}
	other.expect(integer(0), "EXISTS", "k0")
	// A queue within the limit runs.
	r.expect(status("OK"), "MULTI")
	r.expect(status("QUEUED"), "SET", "k0", value)
	r.expect(array(status("OK")), "EXEC")
}

// MULTI in a pipeline: every reply in order, in RESP2 and RESP3, with a
// run-time error inside EXEC's array and a blocking command answering
// at once.
func TestMultiPipelined(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, proto := range []string{"2", "3"} {
		r := s.raw()
		var in []byte
		k := "s" + proto
		cmds := [][]string{{"HELLO", proto}, {"DEL", "q", k}, {"MULTI"}, {"SET", k, "1"}, {"INCR", k}, {"LPUSH", k, "x"},
			{"BLPOP", "q", "0"}, {"GET", k}, {"EXEC"}, {"GET", k}}
		for _, c := range cmds {
			in = append(in, encode(c...)...)
		}
		r.send(in)
		r.read() // HELLO
		null := "*-1\r\n"
		if proto == "3" {
			null = "_\r\n"
		}
		want := []string{integer(0), status("OK"), status("QUEUED"), status("QUEUED"), status("QUEUED"), status("QUEUED"), status("QUEUED"),
			"*5\r\n+OK\r\n:2\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n" + null + "$1\r\n2\r\n",
			bulk("2")}
		for i, w := range want {
			if got := r.read(); got != w {
				t.Fatalf("RESP%s reply %d: %q, want %q", proto, i, got, w)
			}
		}
	}
}

// CLIENT REPLY OFF, ON and SKIP, alone and around a transaction.
func TestClientReply(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	var in []byte
	for _, c := range [][]string{
		{"CLIENT", "REPLY", "OFF"}, {"SET", "a", "1"}, {"GET", "a"}, {"CLIENT", "REPLY", "ON"}, {"GET", "a"},
		{"CLIENT", "REPLY", "SKIP"}, {"INCR", "a"}, {"GET", "a"},
		{"CLIENT", "REPLY", "SKIP"}, {"MULTI"}, {"INCR", "a"}, {"EXEC"},
		{"CLIENT", "REPLY", "OFF"}, {"MULTI"}, {"INCR", "a"}, {"EXEC"}, {"CLIENT", "REPLY", "ON"}, {"GET", "a"},
		{"CLIENT", "REPLY", "OFF"}, {"RESET"}, {"GET", "a"},
		{"CLIENT", "REPLY", "MAYBE"},
	} {
		in = append(in, encode(c...)...)
	}
	r.send(in)
	for i, w := range []string{status("OK"), bulk("1"), bulk("2"), status("QUEUED"), array(integer(3)),
		status("OK"), bulk("4"), status("RESET"), bulk("4"), errr("ERR syntax error")} {
		if got := r.read(); got != w {
			t.Fatalf("reply %d: %q, want %q", i, got, w)
		}
	}
}

// RESET ends MULTI and WATCH.
func TestResetEndsTransaction(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r, other := s.raw(), s.raw()
	r.expect(status("OK"), "MULTI")
	r.expect(status("QUEUED"), "SET", "a", "1")
	r.expect(status("RESET"), "RESET")
	r.expect(errr("ERR EXEC without MULTI"), "EXEC")
	r.expect(status("OK"), "WATCH", "x")
	r.expect(status("RESET"), "RESET")
	other.expect(status("OK"), "SET", "x", "1")
	if got := execAfter(r); got != pong {
		t.Fatalf("EXEC after RESET dropped the watch: %q", got)
	}
	other.expect(integer(0), "EXISTS", "a")
}

// EXEC refused before it runs ends the transaction with EXECABORT naming
// why (Redis's execCommandAbort), before AUTH too.
func TestExecRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.RequirePass = "pw" })
	r := s.raw()
	r.expect(errr("EXECABORT Transaction discarded because of: NOAUTH Authentication required."), "EXEC")
	r.expect(errr("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command"), "EXEC", "x")
	r.expect(errr("NOAUTH Authentication required."), "MULTI")
	r.expect(status("OK"), "AUTH", "pw")
	r.expect(status("OK"), "MULTI")
	r.expect(status("QUEUED"), "SET", "a", "1")
	r.expect(errr("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command"), "EXEC", "x")
	r.expect(errr("ERR EXEC without MULTI"), "EXEC")
	r.expect(integer(0), "EXISTS", "a")
}

// go-redis: TxPipelined, and Watch with its retry loop under contention:
// N clients add one to a counter with WATCH/GET/MULTI/SET/EXEC; the final
// value is the number of EXECs that succeeded, and every client got there.
func TestGoRedisTransactions(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client()
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a", "1", 0)
		p.Incr(ctx, "a")
		p.LPush(ctx, "a", "x")
		p.Get(ctx, "a")
		return nil
	})
	if len(cmds) != 4 || cmds[1].(*redis.IntCmd).Val() != 2 || cmds[3].(*redis.StringCmd).Val() != "2" ||
		cmds[2].Err() == nil || !strings.HasPrefix(cmds[2].Err().Error(), "WRONGTYPE") {
		t.Fatalf("TxPipelined: %v, %v", cmds, err)
	}

	const clients, each = 8, 25
	var succeeded, conflicts sync.Map
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := s.client()
			done, lost := 0, 0
			for done < each {
				err := cl.Watch(ctx, func(tx *redis.Tx) error {
					n, err := tx.Get(ctx, "counter").Int()
					if err != nil && err != redis.Nil {
						return err
					}
					_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, "counter", n+1, 0)
						return nil
					})
					return err
				}, "counter")
				switch {
				case err == nil:
					done++
				case errors.Is(err, redis.TxFailedErr):
					lost++
				default:
					errs <- err
					return
				}
			}
			succeeded.Store(i, done)
			conflicts.Store(i, lost)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total, lost := 0, 0
	succeeded.Range(func(_, v any) bool { total += v.(int); return true })
	conflicts.Range(func(_, v any) bool { lost += v.(int); return true })
	if got, _ := c.Get(ctx, "counter").Int(); got != total || total != clients*each {
		t.Fatalf("counter %d after %d successful EXECs (want %d)", got, total, clients*each)
	}
	t.Logf("%d successful EXECs, %d aborted by a concurrent write", total, lost)
}

// CLIENT PAUSE WRITE holds writes (and EXEC of a queue with writes, and a
// write queued in MULTI) until CLIENT UNPAUSE; reads go on; a paused
// client's later commands wait behind its first; paused clients count in
// blocked_clients.
func TestClientPauseWrite(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	admin, writer, reader, txc := s.raw(), s.raw(), s.raw(), s.raw()
	blocked := func(n int) {
		t.Helper()
		want := fmt.Sprintf("blocked_clients:%d\r\n", n)
		waitFor(t, 10*time.Second, want, func() bool { return strings.Contains(reader.do("INFO", "clients"), want) })
	}
	admin.expect(status("OK"), "SET", "k", "before")
	admin.expect(status("OK"), "CLIENT", "PAUSE", "100000", "WRITE")
	writer.send(append(encode("SET", "k", "paused"), encode("GET", "k")...))
	txc.expect(status("OK"), "MULTI")
	txc.send(encode("INCR", "n"))
	blocked(2)
	reader.expect(bulk("before"), "GET", "k")
	reader.expect(integer(1), "EXISTS", "k")
	admin.expect(bulk("before"), "GET", "k")
	admin.expect(status("OK"), "CLIENT", "UNPAUSE")
	if got := writer.read(); got != status("OK") {
		t.Fatalf("SET after UNPAUSE: %q", got)
	}
	if got := writer.read(); got != bulk("paused") {
		t.Fatalf("GET behind the SET: %q", got)
	}
	if got := txc.read(); got != status("QUEUED") {
		t.Fatalf("INCR in MULTI after UNPAUSE: %q", got)
	}
	blocked(0)
	// An EXEC whose queue holds a write waits too; one with reads does not.
	admin.expect(status("OK"), "CLIENT", "PAUSE", "100000", "WRITE")
	reader.expect(status("OK"), "MULTI")
	reader.expect(status("QUEUED"), "GET", "k")
	reader.expect(array(bulk("paused")), "EXEC")
	txc.send(encode("EXEC"))
	blocked(1)
	admin.expect(status("OK"), "CLIENT", "UNPAUSE")
	if got := txc.read(); got != array(integer(1)) {
		t.Fatalf("EXEC after UNPAUSE: %q", got)
	}
}

// CLIENT PAUSE ALL holds every command, the pausing client's and CLIENT
// UNPAUSE included, until its timeout.
func TestClientPauseAll(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	admin, other := s.raw(), s.raw()
	const pause = 300 * time.Millisecond
	start := time.Now()
	admin.expect(status("OK"), "CLIENT", "PAUSE", strconv.Itoa(int(pause/time.Millisecond)), "ALL")
	other.send(encode("CLIENT", "UNPAUSE"))
	admin.send(encode("PING"))
	if got := other.read(); got != status("OK") {
		t.Fatalf("CLIENT UNPAUSE: %q", got)
	}
	if got := admin.read(); got != status("PONG") {
		t.Fatalf("PING: %q", got)
	}
	// A lower bound only (the pause cannot end early), never an upper one;
	// the server counts the pause from its clock in whole milliseconds, as
	// Redis does, so it may end up to 1 ms before this clock says.
	if elapsed := time.Since(start); elapsed < pause-time.Millisecond {
		t.Fatalf("replies came %v after a %v pause began", elapsed, pause)
	}
}

// A MULTI queue counts in the client memory budget: a client that queues
// more than maxmemory_clients allows is evicted (closed, with a log line)
// before transactions.max_queued_bytes is reached, and nothing it queued
// runs.
func TestMultiQueueEvictedByClientMemory(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.MaxMemoryClients = 1 << 20 })
	needCellar(t, s)
	r, other := s.raw(), s.raw()
	other.expect(status("OK"), "CLIENT", "NO-EVICT", "on")
	r.expect(status("OK"), "MULTI")
	value := strings.Repeat("v", 100<<10)
	for i := 0; i < 40; i++ { // 4 MB if nothing stopped it
		got, err := r.tryDo("SET", fmt.Sprintf("k%d", i), value)
		if err != nil {
			break // closed
		}
		if got != status("QUEUED") {
			t.Fatalf("SET %d: %q", i, got)
		}
	}
	r.expectClosed()
	waitFor(t, 10*time.Second, "the eviction's log line", func() bool {
		return strings.Contains(s.logBuf.String(), "evicting the client using the most memory")
	})
	other.expect(integer(0), "EXISTS", "k0")
}

// Watched keys count in the client's memory (tot-mem) until the watches
// end.
func TestWatchedKeysCharged(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r, other := s.raw(), s.raw()
	id := r.clientID()
	totMem := func() int64 {
		t.Helper()
		line := other.do("CLIENT", "LIST", "ID", id)
		m := regexp.MustCompile(` tot-mem=(\d+) `).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("CLIENT LIST: %s", line)
		}
		v, _ := strconv.ParseInt(m[1], 10, 64)
		return v
	}
	before := totMem()
	key := strings.Repeat("k", 100<<10)
	r.expect(status("OK"), "WATCH", key+"1", key+"2")
	if got := totMem(); got < before+200<<10 {
		t.Fatalf("tot-mem %d watching 200 KB of keys (%d before)", got, before)
	}
	r.expect(status("OK"), "UNWATCH")
	if got := totMem(); got >= before+200<<10 {
		t.Fatalf("tot-mem %d after UNWATCH (%d before)", got, before)
	}
}

// The WATCH cases of Redis's tests/unit/multi.tcl, by name, on one
// connection (a second where the test has one): each runs its commands,
// then MULTI, PING, EXEC, and expects PONG or the null array. (The cases
// needing expiry are in TestWatchExpiry; transactions.txt compares the
// same and more against redis-server.)
func TestWatchMultiTcl(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cases := []struct {
		name    string
		cmds    [][]string
		aborted bool
	}{
		{"EXEC works on WATCHed key not modified", [][]string{{"WATCH", "x", "y", "z"}, {"WATCH", "k"}}, false},
		{"EXEC fail on WATCHed key modified (1 key of 1 watched)", [][]string{{"SET", "x", "30"}, {"WATCH", "x"}, {"SET", "x", "40"}}, true},
		{"EXEC fail on WATCHed key modified (1 key of 5 watched)", [][]string{{"SET", "x", "30"}, {"WATCH", "a", "b", "x", "k", "z"}, {"SET", "x", "40"}}, true},
		{"After successful EXEC key is no longer watched", [][]string{{"SET", "x", "30"}, {"WATCH", "x"}, {"MULTI"}, {"PING"}, {"EXEC"}, {"SET", "x", "40"}}, false},
		{"After failed EXEC key is no longer watched", [][]string{{"SET", "x", "30"}, {"WATCH", "x"}, {"SET", "x", "40"}, {"MULTI"}, {"PING"}, {"EXEC"}, {"SET", "x", "40"}}, false},
		{"It is possible to UNWATCH", [][]string{{"SET", "x", "30"}, {"WATCH", "x"}, {"SET", "x", "40"}, {"UNWATCH"}}, false},
		{"FLUSHALL is able to touch the watched keys", [][]string{{"SET", "x", "30"}, {"WATCH", "x"}, {"FLUSHALL"}}, true},
		{"FLUSHALL does not touch non affected keys", [][]string{{"DEL", "x"}, {"WATCH", "x"}, {"FLUSHALL"}}, false},
		{"FLUSHDB is able to touch the watched keys", [][]string{{"SET", "x", "30"}, {"WATCH", "x"}, {"FLUSHDB"}}, true},
		{"FLUSHDB does not touch non affected keys", [][]string{{"DEL", "x"}, {"WATCH", "x"}, {"FLUSHDB"}}, false},
		{"SWAPDB is able to touch the watched keys that exist", [][]string{{"FLUSHALL"}, {"SET", "x", "30"}, {"WATCH", "x"}, {"SWAPDB", "0", "1"}}, true},
		{"SWAPDB is able to touch the watched keys that do not exist", [][]string{{"FLUSHALL"}, {"SELECT", "1"}, {"SET", "x", "30"}, {"SELECT", "0"}, {"WATCH", "x"}, {"SWAPDB", "0", "1"}}, true},
		{"WATCH is able to remember the DB a key belongs to", [][]string{{"SELECT", "5"}, {"SET", "x", "30"}, {"WATCH", "x"}, {"SELECT", "1"}, {"SET", "x", "10"}, {"SELECT", "5"}}, false},
		{"WATCH will consider touched keys target of EXPIRE", [][]string{{"DEL", "x"}, {"SET", "x", "foo"}, {"WATCH", "x"}, {"EXPIRE", "x", "10"}}, true},
		{"DISCARD should clear the WATCH dirty flag on the client", [][]string{{"WATCH", "x"}, {"SET", "x", "10"}, {"MULTI"}, {"DISCARD"}}, false},
		{"Flushall while watching several keys by one client", [][]string{{"FLUSHALL"}, {"MSET", "a", "a", "b", "b"}, {"WATCH", "b", "a"}, {"FLUSHALL"}, {"PING"}}, true},
		{"RENAME touches both keys", [][]string{{"SET", "src", "v"}, {"WATCH", "src"}, {"RENAME", "src", "dst"}}, true},
		{"MOVE touches the key", [][]string{{"SET", "m", "v"}, {"WATCH", "m"}, {"MOVE", "m", "2"}}, true},
		{"DEL of a missing key touches nothing", [][]string{{"WATCH", "missing"}, {"DEL", "missing"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := s.raw()
			r.expect(status("OK"), "SELECT", "0")
			for _, c := range tc.cmds {
				r.do(c...)
			}
			want := pong
			if tc.aborted {
				want = nullArray
			}
			if got := execAfter(r); got != want {
				t.Fatalf("EXEC: %q, want %q", got, want)
			}
		})
	}
}
