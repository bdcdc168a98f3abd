package tests

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
)

// infoInt reads one integer field of INFO.
func infoInt(t testing.TB, c *redis.Client, section, field string) int {
	t.Helper()
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	m := regexp.MustCompile(`(?m)^` + field + `:(\d+)\r?$`).FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("INFO %s has no %s:\n%s", section, field, info)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// waitBlocked waits until INFO reports n blocked clients.
func waitBlocked(t testing.TB, c *redis.Client, n int) {
	t.Helper()
	waitFor(t, 20*time.Second, fmt.Sprintf("%d blocked clients", n), func() bool {
		return infoInt(t, c, "clients", "blocked_clients") == n
	})
}

// blockOn sends a blocking command on a fresh raw connection and waits
// until the server reports it blocked (blocked clients reach want).
func blockOn(t testing.TB, s *testServer, admin *redis.Client, want int, args ...string) *rawConn {
	t.Helper()
	r := s.raw()
	r.send(encode(args...))
	waitBlocked(t, admin, want)
	return r
}

func popReply(key, val string) string { return array(bulk(key), bulk(val)) }

const nullArray = "*-1\r\n"

// A blocked BLPOP/BRPOP returns after a push, from the right end. This and
// the tests after it pin the blocking model of docs/architecture.md,
// "Blocked clients".
func TestBlockingHappyPath(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()

	b := blockOn(t, s, admin, 1, "BLPOP", "q", "0")
	r.expect(integer(2), "RPUSH", "q", "a", "b")
	if got := b.read(); got != popReply("q", "a") {
		t.Fatalf("BLPOP after RPUSH = %q", got)
	}
	r.expect(array(bulk("b")), "LRANGE", "q", "0", "-1")

	b = blockOn(t, s, admin, 1, "BRPOP", "q2", "0")
	r.expect(integer(3), "LPUSH", "q2", "x", "y", "z") // z y x
	if got := b.read(); got != popReply("q2", "x") {
		t.Fatalf("BRPOP after LPUSH = %q", got)
	}
	r.expect(array(bulk("z"), bulk("y")), "LRANGE", "q2", "0", "-1")

	b = blockOn(t, s, admin, 1, "BLPOP", "q3", "0")
	r.expect(integer(1), "LPUSH", "q3", "only")
	if got := b.read(); got != popReply("q3", "only") {
		t.Fatalf("BLPOP after LPUSH = %q", got)
	}
	// The list the waiter emptied is gone, not an empty list.
	r.expect(status("none"), "TYPE", "q3")
	r.expect(integer(0), "EXISTS", "q3")
	b.expect("+PONG\r\n", "PING")
	waitBlocked(t, admin, 0)
}

// Timeouts, decimal and integer, in both protocols; timeout 0
// waits until a push.
func TestBlockingTimeouts(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	r.expect(nullArray, "BLPOP", "none", "0.1")
	r.expect(nullArray, "BRPOP", "none", "none2", "0.05")
	r.expect(nullArray, "BLPOP", "none", "1")
	r.expect(nullArray, "BRPOPLPUSH", "none", "dst", "0.05")
	r.expect(nullArray, "BLMOVE", "none", "dst", "LEFT", "RIGHT", "0.05")
	r.expect(nullArray, "BLMPOP", "0.05", "1", "none", "LEFT")
	r.expect(integer(0), "EXISTS", "dst")
	r.do("HELLO", "3")
	r.expect("_\r\n", "BLPOP", "none", "0.05")
	r.expect("_\r\n", "BLMOVE", "none", "dst", "LEFT", "RIGHT", "0.05")
	r.expect("+PONG\r\n", "PING")
	if n := infoInt(t, admin, "clients", "blocked_clients"); n != 0 {
		t.Fatalf("blocked_clients = %d after the timeouts", n)
	}

	// Timeout 0 never expires: a waiter with a short timeout registered
	// after it times out first, and it is still blocked; then a push
	// releases it.
	forever := blockOn(t, s, admin, 1, "BLPOP", "q", "0")
	r.expect("_\r\n", "BLPOP", "other", "0.05")
	if n := infoInt(t, admin, "clients", "blocked_clients"); n != 1 {
		t.Fatalf("the timeout-0 waiter is gone: blocked_clients = %d", n)
	}
	if n := infoInt(t, admin, "clients", "clients_in_timeout_table"); n != 0 {
		t.Fatalf("clients_in_timeout_table = %d for a timeout-0 waiter", n)
	}
	r.expect(":1\r\n", "RPUSH", "q", "go")
	if got := forever.read(); got != popReply("q", "go") {
		t.Fatalf("timeout-0 BLPOP = %q", got)
	}
	// A sub-millisecond timeout rounds up to a millisecond, as in Redis;
	// a negative one rounding to 0 waits forever.
	r.expect("_\r\n", "BLPOP", "none", "0.0001")
	neg := blockOn(t, s, admin, 1, "BLPOP", "q", "-0.0001")
	r.expect(":1\r\n", "RPUSH", "q", "x")
	if got := neg.read(); got != popReply("q", "x") {
		t.Fatalf("BLPOP -0.0001 = %q", got)
	}
}

// Keys are scanned in the order given, at the call and on wake.
func TestBlockingMultiKeyOrder(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()

	// Only k2 has an element when it arrives: the waiter takes it, and
	// k1's later element stays.
	b := blockOn(t, s, admin, 1, "BLPOP", "k1", "k2", "0")
	r.expect(integer(1), "RPUSH", "k2", "from-k2")
	if got := b.read(); got != popReply("k2", "from-k2") {
		t.Fatalf("BLPOP k1 k2 after a push to k2 = %q", got)
	}
	r.expect(integer(1), "RPUSH", "k1", "from-k1")
	r.expect(integer(1), "LLEN", "k1")

	// Both lists present at the call: the first key wins.
	r.expect(integer(1), "RPUSH", "k2", "second")
	r.expect(popReply("k1", "from-k1"), "BLPOP", "k1", "k2", "0")
	r.expect(popReply("k2", "second"), "BLPOP", "k1", "k2", "0")

	// Both become available in one step (SWAPDB brings two lists at once):
	// at wake time the first key in the waiter's order wins, whichever
	// key's readiness was noticed first.
	for i := 0; i < 5; i++ {
		r.expect(status("OK"), "SELECT", "1")
		r.expect(integer(1), "RPUSH", "k1", "one")
		r.expect(integer(1), "RPUSH", "k2", "two")
		r.expect(status("OK"), "SELECT", "0")
		b = blockOn(t, s, admin, 1, "BLPOP", "k2", "k1", "0")
		r.expect(status("OK"), "SWAPDB", "0", "1")
		if got := b.read(); got != popReply("k2", "two") {
			t.Fatalf("BLPOP k2 k1 woken by SWAPDB = %q", got)
		}
		r.expect(array(bulk("one")), "LRANGE", "k1", "0", "-1")
		r.expect(integer(1), "DEL", "k1")
	}
}

// Waiters on a key are served oldest first; one element serves
// one waiter.
func TestBlockingFIFO(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()

	first := blockOn(t, s, admin, 1, "BLPOP", "q", "0")
	second := blockOn(t, s, admin, 2, "BLPOP", "q", "0")
	r.expect(integer(1), "RPUSH", "q", "e1")
	if got := first.read(); got != popReply("q", "e1") {
		t.Fatalf("first waiter got %q", got)
	}
	waitBlocked(t, admin, 1)
	r.expect(integer(1), "RPUSH", "q", "e2")
	if got := second.read(); got != popReply("q", "e2") {
		t.Fatalf("second waiter got %q", got)
	}

	// 100 waiters, then one push of 100 elements: waiter i gets element i.
	const n = 100
	var ws []*rawConn
	for i := 0; i < n; i++ {
		ws = append(ws, blockOn(t, s, admin, i+1, "BLPOP", "fifo", "0"))
	}
	args := []string{"RPUSH", "fifo"}
	for i := 0; i < n; i++ {
		args = append(args, fmt.Sprintf("e%03d", i))
	}
	r.expect(integer(n), args...)
	for i, w := range ws {
		if got, want := w.read(), popReply("fifo", fmt.Sprintf("e%03d", i)); got != want {
			t.Fatalf("waiter %d got %q, want %q", i, got, want)
		}
	}
	r.expect(integer(0), "EXISTS", "fifo")

	// A push wakes no more waiters than it brought elements.
	w1 := blockOn(t, s, admin, 1, "BRPOP", "few", "0")
	w2 := blockOn(t, s, admin, 2, "BRPOP", "few", "0")
	w3 := blockOn(t, s, admin, 3, "BRPOP", "few", "0")
	r.expect(integer(2), "RPUSH", "few", "a", "b")
	got1, got2 := w1.read(), w2.read()
	if got1 != popReply("few", "b") || got2 != popReply("few", "a") {
		t.Fatalf("BRPOP waiters got %q and %q", got1, got2)
	}
	waitBlocked(t, admin, 1)
	r.expect(integer(1), "RPUSH", "few", "c")
	if got := w3.read(); got != popReply("few", "c") {
		t.Fatalf("third waiter got %q", got)
	}
}

// A client that disconnects while blocked is cancelled; the next
// waiter gets the element, and nothing is popped for the one that left.
func TestBlockingDisconnect(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	gone := blockOn(t, s, admin, 1, "BLPOP", "q", "0")
	next := blockOn(t, s, admin, 2, "BLPOP", "q", "0")
	gone.c.Close()
	waitBlocked(t, admin, 1)
	r.expect(integer(1), "RPUSH", "q", "x")
	if got := next.read(); got != popReply("q", "x") {
		t.Fatalf("next waiter got %q", got)
	}
	// Alone, a departed waiter leaves the element in the list.
	alone := blockOn(t, s, admin, 1, "BLPOP", "q2", "q", "0")
	alone.c.Close()
	waitBlocked(t, admin, 0)
	r.expect(integer(1), "RPUSH", "q", "kept")
	r.expect(array(bulk("kept")), "LRANGE", "q", "0", "-1")

	// A waiter with commands pipelined behind its BLPOP is no longer read
	// (its input waits in the socket), yet its disconnect is noticed.
	piped := blockOn(t, s, admin, 1, "BLPOP", "q4", "0")
	piped.send(bytes.Repeat(encode("PING"), 1000))
	waitFor(t, 10*time.Second, "the pipelined input to be held", func() bool {
		return infoInt(t, admin, "stats", "held_input_bytes") > 0
	})
	piped.c.Close()
	waitBlocked(t, admin, 0)
	r.expect(integer(1), "RPUSH", "q4", "kept")
	r.expect(integer(1), "LLEN", "q4")

	// CLIENT KILL ends a blocked client without a reply.
	killed := blockOn(t, s, admin, 1, "BLPOP", "q3", "0")
	list := r.do("CLIENT", "LIST")
	m := regexp.MustCompile(`id=(\d+) [^\n]*flags=b`).FindStringSubmatch(list)
	if m == nil {
		t.Fatalf("no blocked client in CLIENT LIST:\n%s", list)
	}
	r.expect(integer(1), "CLIENT", "KILL", "ID", m[1])
	killed.expectClosed()
	waitBlocked(t, admin, 0)
	r.expect(integer(1), "RPUSH", "q3", "kept")
	r.expect(integer(1), "LLEN", "q3")
	// Nothing was written to (or attempted on) a closed connection.
	if s.logBuf != nil && strings.Contains(s.logBuf.String(), `"level":"error"`) {
		t.Fatalf("the server logged errors:\n%s", s.logBuf.String())
	}
}

// An expired list is absent before and while waiting; a key that
// expires while a client waits is recreated by a push and served.
func TestBlockingTTL(t *testing.T) {
	s := startServer(t, func(c *cellar.Config) { c.Expiry.Interval = time.Hour }) // lazy expiry only
	admin := s.client()
	r := s.raw()

	r.expect(integer(1), "RPUSH", "k", "phantom")
	at := time.Now().Add(50 * time.Millisecond).UnixMilli()
	r.expect(integer(1), "PEXPIREAT", "k", strconv.FormatInt(at, 10))
	waitFor(t, 5*time.Second, "the key's expiry to pass", func() bool { return time.Now().UnixMilli() > at+2 })
	r.expect(nullArray, "BLPOP", "k", "0.05")
	b := blockOn(t, s, admin, 1, "BLPOP", "k", "0")
	r.expect(integer(1), "RPUSH", "k", "fresh")
	if got := b.read(); got != popReply("k", "fresh") {
		t.Fatalf("BLPOP on an expired list = %q", got)
	}

	// While a client waits on k, k becomes a string with a TTL: pushes are
	// refused and the waiter keeps waiting; once the string expired, a
	// push recreates k as a list and the waiter gets that element.
	b = blockOn(t, s, admin, 1, "BLPOP", "k", "0")
	r.expect(status("OK"), "SET", "k", "str", "PX", "100")
	r.expect(errr("WRONGTYPE Operation against a key holding the wrong kind of value"), "RPUSH", "k", "refused")
	if n := infoInt(t, admin, "clients", "blocked_clients"); n != 1 {
		t.Fatalf("blocked_clients = %d while k is a string", n)
	}
	at = time.Now().Add(100 * time.Millisecond).UnixMilli()
	waitFor(t, 5*time.Second, "the string's expiry to pass", func() bool { return time.Now().UnixMilli() > at+2 })
	r.expect(integer(1), "RPUSH", "k", "after")
	if got := b.read(); got != popReply("k", "after") {
		t.Fatalf("waiter got %q", got)
	}
	r.expect(integer(-2), "TTL", "k")
}

// Blocking state is not persisted; clients re-issue after a restart.
func TestBlockingRestart(t *testing.T) {
	s := startServer(t)
	needCellar(t, s)
	admin := s.client()
	r := s.raw()
	r.expect(integer(1), "RPUSH", "other", "kept")
	b := blockOn(t, s, admin, 1, "BLPOP", "q", "0")
	s.restart()
	b.expectClosed()
	admin = s.client()
	r = s.raw()
	if n := infoInt(t, admin, "clients", "blocked_clients"); n != 0 {
		t.Fatalf("blocked_clients = %d after a restart", n)
	}
	r.expect(integer(1), "RPUSH", "q", "x")
	r.expect(integer(1), "LLEN", "q") // nobody was waiting for it any more
	again := blockOn(t, s, admin, 1, "BLPOP", "q2", "0")
	r.expect(integer(1), "RPUSH", "q2", "y")
	if got := again.read(); got != popReply("q2", "y") {
		t.Fatalf("re-issued BLPOP = %q", got)
	}
	r.expect(array(bulk("kept")), "LRANGE", "other", "0", "-1")
}

// Many pushers and many blocking consumers: every element is
// delivered exactly once and the lists end empty.
func TestBlockingConcurrency(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	const pushers, perPusher, consumers = 4, 400, 8
	total := pushers * perPusher
	got := newDeliveries()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, pushers+consumers)
	for i := 0; i < consumers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := s.client(func(o *redis.Options) { o.ReadTimeout = 5 * time.Second })
			for {
				select {
				case <-stop:
					return
				default:
				}
				var vals []string
				var err error
				switch i % 4 {
				case 0:
					var kv []string
					kv, err = c.BLPop(ctx, 50*time.Millisecond, "qa", "qb").Result()
					if len(kv) == 2 {
						vals = kv[1:]
					}
				case 1:
					var kv []string
					kv, err = c.BRPop(ctx, 50*time.Millisecond, "qb", "qa").Result()
					if len(kv) == 2 {
						vals = kv[1:]
					}
				case 2:
					_, vals, err = c.BLMPop(ctx, 50*time.Millisecond, "left", 3, "qa", "qb").Result()
				case 3:
					vals, err = c.LPopCount(ctx, "qa", 2).Result()
					if err == redis.Nil {
						vals, err = c.RPopCount(ctx, "qb", 2).Result()
					}
				}
				if err == redis.Nil {
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("consumer %d: %w", i, err)
					return
				}
				for _, v := range vals {
					got.record(v)
				}
			}
		}(i)
	}
	var pw sync.WaitGroup
	for p := 0; p < pushers; p++ {
		pw.Add(1)
		go func(p int) {
			defer pw.Done()
			c := s.client()
			for j := 0; j < perPusher; j++ {
				key := "qa"
				if j%3 == 0 {
					key = "qb"
				}
				v := fmt.Sprintf("p%d-%d", p, j)
				var err error
				if j%2 == 0 {
					err = c.RPush(ctx, key, v).Err()
				} else {
					err = c.LPush(ctx, key, v).Err()
				}
				if err != nil {
					errs <- fmt.Errorf("pusher %d: %w", p, err)
					return
				}
			}
		}(p)
	}
	pw.Wait()
	waitFor(t, 30*time.Second, fmt.Sprintf("%d elements consumed", total), func() bool {
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		return got.count() >= total
	})
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got.exactlyOnce(t, total)
	for _, k := range []string{"qa", "qb"} {
		if n := admin.LLen(ctx, k).Val(); n != 0 {
			t.Fatalf("LLEN %s = %d at the end", k, n)
		}
	}
	waitBlocked(t, admin, 0)
}

// BLMOVE chains: each move wakes the waiter on its destination in the same
// step; a destination of the wrong type answers WRONGTYPE and leaves the
// element where it was.
func TestBlockingMoveChain(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	ab := blockOn(t, s, admin, 1, "BLMOVE", "a", "b", "LEFT", "RIGHT", "0")
	bc := blockOn(t, s, admin, 2, "BRPOPLPUSH", "b", "c", "0")
	cd := blockOn(t, s, admin, 3, "BLMOVE", "c", "d", "RIGHT", "LEFT", "0")
	end := blockOn(t, s, admin, 4, "BLPOP", "d", "0")
	r.expect(integer(1), "RPUSH", "a", "x")
	for i, c := range []*rawConn{ab, bc, cd} {
		if got := c.read(); got != bulk("x") {
			t.Fatalf("mover %d got %q", i, got)
		}
	}
	if got := end.read(); got != popReply("d", "x") {
		t.Fatalf("end of chain got %q", got)
	}
	r.expect(integer(0), "EXISTS", "a", "b", "c", "d")

	// A rotation onto itself.
	rot := blockOn(t, s, admin, 1, "BLMOVE", "ring", "ring", "LEFT", "RIGHT", "0")
	r.expect(integer(1), "RPUSH", "ring", "r1")
	if got := rot.read(); got != bulk("r1") {
		t.Fatalf("rotation got %q", got)
	}
	r.expect(array(bulk("r1")), "LRANGE", "ring", "0", "-1")

	wrong := blockOn(t, s, admin, 1, "BLMOVE", "src", "str", "LEFT", "RIGHT", "0")
	r.expect(status("OK"), "SET", "str", "v")
	r.expect(integer(1), "RPUSH", "src", "stays")
	if got := wrong.read(); got != errr("WRONGTYPE Operation against a key holding the wrong kind of value") {
		t.Fatalf("BLMOVE to a string = %q", got)
	}
	r.expect(array(bulk("stays")), "LRANGE", "src", "0", "-1")

	// BLMPOP takes up to its count.
	mp := blockOn(t, s, admin, 1, "BLMPOP", "0", "2", "m1", "m2", "RIGHT", "COUNT", "2")
	r.expect(integer(3), "RPUSH", "m2", "1", "2", "3")
	if got := mp.read(); got != array(bulk("m2"), array(bulk("3"), bulk("2"))) {
		t.Fatalf("BLMPOP = %q", got)
	}
	r.expect(array(bulk("1")), "LRANGE", "m2", "0", "-1")
}

// Keyspace commands that bring a list to a watched key wake its waiters.
func TestBlockingWokenByKeyspaceCommands(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	for _, c := range []struct {
		setup []string
		cmd   []string
		want  string
	}{
		{[]string{"RPUSH", "src", "renamed"}, []string{"RENAME", "src", "w"}, status("OK")},
		{[]string{"RPUSH", "src", "copied"}, []string{"COPY", "src", "w"}, integer(1)},
		{[]string{"LPUSH", "src", "moved"}, []string{"LMOVE", "src", "w", "LEFT", "RIGHT"}, bulk("moved")},
		{[]string{"LPUSH", "src", "pivot"}, []string{"RPOPLPUSH", "src", "w"}, bulk("pivot")},
	} {
		r.do("DEL", "src", "w")
		r.expect(integer(1), c.setup...)
		b := blockOn(t, s, admin, 1, "BLPOP", "w", "0")
		r.expect(c.want, c.cmd...)
		if got := b.read(); got != popReply("w", c.setup[2]) {
			t.Fatalf("%v: waiter got %q", c.cmd, got)
		}
	}
	r.expect(status("OK"), "SELECT", "1")
	r.expect(integer(1), "RPUSH", "w", "from-db1")
	b := blockOn(t, s, admin, 1, "BLPOP", "w", "0")
	r.expect(integer(1), "MOVE", "w", "0")
	if got := b.read(); got != popReply("w", "from-db1") {
		t.Fatalf("MOVE: waiter got %q", got)
	}
}

// The push, the wake and the pop are one step: a pipelined LPOP right
// after the push finds nothing, the waiter has the element.
func TestBlockingNoStealing(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	b := blockOn(t, s, admin, 1, "BLPOP", "q", "0")
	r.send(append(encode("RPUSH", "q", "x"), encode("LPOP", "q")...))
	if got := r.read(); got != integer(1) {
		t.Fatalf("RPUSH = %q", got)
	}
	if got := r.read(); got != nullBulk {
		t.Fatalf("LPOP after the push took %q from the waiter", got)
	}
	if got := b.read(); got != popReply("q", "x") {
		t.Fatalf("waiter got %q", got)
	}
}

// Commands pipelined before and after a blocking command get their replies
// in order once it completes.
func TestBlockingInPipeline(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	b := s.raw()
	b.send(append(append(encode("SET", "a", "1"), encode("BLPOP", "q", "0")...), encode("GET", "a")...))
	waitBlocked(t, admin, 1)
	r.expect(integer(1), "RPUSH", "q", "x")
	for _, want := range []string{status("OK"), popReply("q", "x"), bulk("1")} {
		if got := b.read(); got != want {
			t.Fatalf("pipeline reply %q, want %q", got, want)
		}
	}
}

// CLIENT UNBLOCK ends a blocked command as a timeout or an error; the
// unblocked client gets no element afterwards.
func TestClientUnblock(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, nullArray},
		{[]string{"TIMEOUT"}, nullArray},
		{[]string{"ERROR"}, errr("UNBLOCKED client unblocked via CLIENT UNBLOCK")},
	} {
		b := s.raw()
		id := strings.TrimSuffix(strings.TrimPrefix(b.do("CLIENT", "ID"), ":"), "\r\n")
		b.send(encode("BLMOVE", "q", "dst", "LEFT", "RIGHT", "0"))
		waitBlocked(t, admin, 1)
		r.expect(integer(1), append([]string{"CLIENT", "UNBLOCK", id}, c.args...)...)
		if got := b.read(); got != c.want {
			t.Fatalf("UNBLOCK %v: client got %q", c.args, got)
		}
		r.expect(integer(0), append([]string{"CLIENT", "UNBLOCK", id}, c.args...)...)
		b.expect("+PONG\r\n", "PING")
	}
	r.expect(integer(1), "RPUSH", "q", "kept")
	r.expect(integer(1), "LLEN", "q")
	r.expect(integer(0), "EXISTS", "dst")
}

// Limits (blocking.*): over each, "ERR too many blocked clients"; under
// them again, blocking works.
func TestBlockingLimits(t *testing.T) {
	s := startServer(t, func(c *cellar.Config) {
		c.Blocking.MaxWaitersPerKey = 2
		c.Blocking.MaxTotalWaiters = 3
		c.Blocking.MaxKeysPerWait = 2
	})
	needCellar(t, s)
	admin := s.client()
	r := s.raw()
	tooMany := errr("ERR too many blocked clients")
	r.expect(tooMany, "BLPOP", "a", "b", "c", "0")
	r.expect(tooMany, "BLMPOP", "0", "3", "a", "b", "c", "LEFT")
	// Repeated keys count once.
	ab := blockOn(t, s, admin, 1, "BLPOP", "a", "b", "a", "b", "0")
	a2 := blockOn(t, s, admin, 2, "BLPOP", "a", "0")
	r.expect(tooMany, "BLPOP", "a", "0")
	r.expect(tooMany, "BRPOP", "c", "a", "0")
	c1 := blockOn(t, s, admin, 3, "BLPOP", "c", "0")
	r.expect(tooMany, "BLPOP", "d", "0")
	// A refused command blocks nothing and leaves nothing queued.
	if n := infoInt(t, admin, "clients", "blocked_clients"); n != 3 {
		t.Fatalf("blocked_clients = %d", n)
	}
	r.expect(integer(2), "RPUSH", "a", "1", "2")
	if got := ab.read(); got != popReply("a", "1") {
		t.Fatalf("first waiter got %q", got)
	}
	if got := a2.read(); got != popReply("a", "2") {
		t.Fatalf("second waiter got %q", got)
	}
	// Below the limits again.
	d := blockOn(t, s, admin, 2, "BLPOP", "d", "0")
	r.expect(integer(1), "RPUSH", "d", "x")
	d.read()
	r.expect(integer(1), "RPUSH", "c", "y")
	c1.read()
	// The limits can be changed at run time.
	r.expect(array(bulk("blocking-max-total-waiters"), bulk("3")), "CONFIG", "GET", "blocking-max-total-waiters")
	r.expect(status("OK"), "CONFIG", "SET", "blocking-max-total-waiters", "1")
	b1 := blockOn(t, s, admin, 1, "BLPOP", "e", "0")
	r.expect(tooMany, "BLPOP", "f", "0")
	r.expect(errr("ERR CONFIG SET failed (possibly related to argument 'blocking-max-total-waiters') - argument must be a positive integer"),
		"CONFIG", "SET", "blocking-max-total-waiters", "0")
	r.expect(integer(1), "RPUSH", "e", "z")
	b1.read()
}

// INFO and CLIENT LIST show blocked clients.
func TestBlockingIntrospection(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	b := blockOn(t, s, admin, 1, "BRPOP", "q", "100")
	if n := infoInt(t, admin, "clients", "clients_in_timeout_table"); n != 1 {
		t.Fatalf("clients_in_timeout_table = %d", n)
	}
	list := r.do("CLIENT", "LIST")
	if !regexp.MustCompile(`flags=b db=0 .* cmd=brpop `).MatchString(list) {
		t.Fatalf("CLIENT LIST does not show the blocked client:\n%s", list)
	}
	if n := strings.Count(list, "flags=b"); n != 1 {
		t.Fatalf("%d clients flagged blocked:\n%s", n, list)
	}
	r.expect(integer(1), "RPUSH", "q", "x")
	b.read()
	if n := infoInt(t, admin, "clients", "clients_in_timeout_table"); n != 0 {
		t.Fatalf("clients_in_timeout_table = %d after the wake", n)
	}
}

// With durability "always", a woken waiter's reply waits for the fsync
// that covers its pop, like any write's.
func TestBlockingDurabilityAlways(t *testing.T) {
	s := startServer(t, func(c *cellar.Config) { c.Durability = "always" })
	needCellar(t, s)
	admin := s.client()
	r := s.raw()
	var ws []*rawConn
	for i := 0; i < 5; i++ {
		ws = append(ws, blockOn(t, s, admin, i+1, "BLPOP", "q", "0"))
	}
	fsyncs := infoInt(t, admin, "persistence", "fsyncs")
	r.expect(integer(5), "RPUSH", "q", "0", "1", "2", "3", "4")
	got := []string{}
	for _, w := range ws {
		got = append(got, w.read())
	}
	sort.Strings(got)
	for i, g := range got {
		if g != popReply("q", strconv.Itoa(i)) {
			t.Fatalf("waiter replies %q", got)
		}
	}
	if n := infoInt(t, admin, "persistence", "fsyncs"); n <= fsyncs {
		t.Fatalf("no fsync ran for the push and the pops (fsyncs %d -> %d)", fsyncs, n)
	}
}
