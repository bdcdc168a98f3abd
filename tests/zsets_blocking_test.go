package tests

import (
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

// BZPOPMIN, BZPOPMAX and BZMPOP over the wire: the cases tests/lists_test.go
// runs for the blocking list pops (docs/architecture.md, "Blocked
// clients"), plus what Redis does when waiters of lists and of sorted sets
// share a key.

// zpopReply is a RESP2 BZPOPMIN/BZPOPMAX reply.
func zpopReply(key, member, score string) string {
	return array(bulk(key), bulk(member), bulk(score))
}

// double is a RESP3 double.
func double(s string) string { return "," + s + "\r\n" }

const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// A blocked BZPOPMIN/BZPOPMAX returns after a ZADD, with the lowest or
// highest member; a sorted set its waiter emptied is deleted.
func TestBZPopHappyPath(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()

	b := blockOn(t, s, admin, 1, "BZPOPMIN", "z", "0")
	r.expect(integer(3), "ZADD", "z", "3", "c", "1", "a", "2", "b")
	if got := b.read(); got != zpopReply("z", "a", "1") {
		t.Fatalf("BZPOPMIN after ZADD = %q", got)
	}
	r.expect(array(bulk("b"), bulk("c")), "ZRANGE", "z", "0", "-1")

	b = blockOn(t, s, admin, 1, "BZPOPMAX", "z2", "0")
	r.expect(integer(3), "ZADD", "z2", "1.5", "x", "2.5", "y", "-inf", "w")
	if got := b.read(); got != zpopReply("z2", "y", "2.5") {
		t.Fatalf("BZPOPMAX after ZADD = %q", got)
	}
	r.expect(array(bulk("w"), bulk("-inf"), bulk("x"), bulk("1.5")), "ZRANGE", "z2", "0", "-1", "WITHSCORES")

	b = blockOn(t, s, admin, 1, "BZPOPMIN", "z3", "0")
	r.expect(integer(1), "ZADD", "z3", "7", "only")
	if got := b.read(); got != zpopReply("z3", "only", "7") {
		t.Fatalf("BZPOPMIN after ZADD = %q", got)
	}
	r.expect(status("none"), "TYPE", "z3")
	r.expect(integer(0), "EXISTS", "z3")
	b.expect("+PONG\r\n", "PING")
	waitBlocked(t, admin, 0)

	// A key with members answers at once, without blocking.
	r.expect(integer(2), "ZADD", "now", "1", "a", "2", "b")
	r.expect(zpopReply("now", "b", "2"), "BZPOPMAX", "none", "now", "0")
	r.expect(array(bulk("now"), array(array(bulk("a"), bulk("1")))), "BZMPOP", "0", "2", "none", "now", "MIN", "COUNT", "5")
	r.expect(integer(0), "EXISTS", "now")
}

// Timeouts, decimal and integer, in both protocols; timeout 0 waits until
// a ZADD.
func TestBZPopTimeouts(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	r.expect(nullArray, "BZPOPMIN", "none", "0.1")
	r.expect(nullArray, "BZPOPMAX", "none", "none2", "0.05")
	r.expect(nullArray, "BZPOPMIN", "none", "1")
	r.expect(nullArray, "BZMPOP", "0.05", "2", "none", "none2", "MAX", "COUNT", "3")
	r.expect(nullArray, "BZPOPMIN", "none", "0.0001") // rounds up to 1 ms
	r.expect(integer(0), "EXISTS", "none", "none2")
	r.do("HELLO", "3")
	r.expect("_\r\n", "BZPOPMIN", "none", "0.05")
	r.expect("_\r\n", "BZMPOP", "0.05", "1", "none", "MIN")
	r.expect("+PONG\r\n", "PING")
	if n := infoInt(t, admin, "clients", "blocked_clients"); n != 0 {
		t.Fatalf("blocked_clients = %d after the timeouts", n)
	}

	// Timeout 0 never expires: a waiter with a short timeout registered
	// after it times out first, and it is still blocked; a ZADD then
	// releases it.
	forever := blockOn(t, s, admin, 1, "BZPOPMAX", "z", "0")
	r.expect("_\r\n", "BZPOPMIN", "other", "0.05")
	if n := infoInt(t, admin, "clients", "blocked_clients"); n != 1 {
		t.Fatalf("the timeout-0 waiter is gone: blocked_clients = %d", n)
	}
	if n := infoInt(t, admin, "clients", "clients_in_timeout_table"); n != 0 {
		t.Fatalf("clients_in_timeout_table = %d for a timeout-0 waiter", n)
	}
	r.expect(":1\r\n", "ZADD", "z", "5", "go")
	if got := forever.read(); got != zpopReply("z", "go", "5") {
		t.Fatalf("timeout-0 BZPOPMAX = %q", got)
	}
	// A timed waiter is in the timeout table until it is served.
	timed := blockOn(t, s, admin, 1, "BZMPOP", "100.5", "1", "z", "MIN")
	if n := infoInt(t, admin, "clients", "clients_in_timeout_table"); n != 1 {
		t.Fatalf("clients_in_timeout_table = %d", n)
	}
	r.expect(":1\r\n", "ZADD", "z", "1", "m")
	if got := timed.read(); got != array(bulk("z"), array(array(bulk("m"), bulk("1")))) {
		t.Fatalf("BZMPOP 100.5 = %q", got)
	}
	if n := infoInt(t, admin, "clients", "clients_in_timeout_table"); n != 0 {
		t.Fatalf("clients_in_timeout_table = %d after the wake", n)
	}
}

// Keys are scanned in the order given, at the call and on wake.
func TestBZPopMultiKeyOrder(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()

	b := blockOn(t, s, admin, 1, "BZPOPMIN", "k1", "k2", "0")
	r.expect(integer(1), "ZADD", "k2", "2", "from-k2")
	if got := b.read(); got != zpopReply("k2", "from-k2", "2") {
		t.Fatalf("BZPOPMIN k1 k2 after a ZADD to k2 = %q", got)
	}
	r.expect(integer(1), "ZADD", "k1", "1", "from-k1")
	r.expect(integer(1), "ZCARD", "k1")

	// Both present at the call: the first key wins.
	r.expect(integer(1), "ZADD", "k2", "0", "second")
	r.expect(zpopReply("k1", "from-k1", "1"), "BZPOPMIN", "k1", "k2", "0")
	r.expect(zpopReply("k2", "second", "0"), "BZPOPMIN", "k1", "k2", "0")

	// Both become available in one step (SWAPDB brings two sorted sets at
	// once): the first key in the waiter's order wins, because a woken
	// waiter re-scans its own keys in its own order (docs/architecture.md,
	// "Blocked clients"; Redis 7.0 serves the key whose readiness it handles
	// first, a documented deviation).
	if s.external {
		return
	}
	for i := 0; i < 5; i++ {
		r.expect(status("OK"), "SELECT", "1")
		r.expect(integer(1), "ZADD", "k1", "1", "one")
		r.expect(integer(1), "ZADD", "k2", "2", "two")
		r.expect(status("OK"), "SELECT", "0")
		b = blockOn(t, s, admin, 1, "BZMPOP", "0", "2", "k2", "k1", "MAX", "COUNT", "2")
		r.expect(status("OK"), "SWAPDB", "0", "1")
		if got := b.read(); got != array(bulk("k2"), array(array(bulk("two"), bulk("2")))) {
			t.Fatalf("BZMPOP k2 k1 woken by SWAPDB = %q", got)
		}
		r.expect(array(bulk("one")), "ZRANGE", "k1", "0", "-1")
		r.expect(integer(1), "DEL", "k1")
	}
}

// Waiters on a key are served oldest first, one member each; a ZADD wakes
// no more waiters than members it brought.
func TestBZPopFIFO(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()

	first := blockOn(t, s, admin, 1, "BZPOPMIN", "q", "0")
	second := blockOn(t, s, admin, 2, "BZPOPMIN", "q", "0")
	r.expect(integer(1), "ZADD", "q", "1", "e1")
	if got := first.read(); got != zpopReply("q", "e1", "1") {
		t.Fatalf("first waiter got %q", got)
	}
	waitBlocked(t, admin, 1)
	r.expect(integer(1), "ZADD", "q", "2", "e2")
	if got := second.read(); got != zpopReply("q", "e2", "2") {
		t.Fatalf("second waiter got %q", got)
	}

	// 100 waiters, then one ZADD of 100 members: waiter i gets the i-th
	// lowest.
	const n = 100
	var ws []*rawConn
	for i := 0; i < n; i++ {
		ws = append(ws, blockOn(t, s, admin, i+1, "BZPOPMIN", "fifo", "0"))
	}
	args := []string{"ZADD", "fifo"}
	for i := n - 1; i >= 0; i-- {
		args = append(args, strconv.Itoa(i), fmt.Sprintf("e%03d", i))
	}
	r.expect(integer(n), args...)
	for i, w := range ws {
		if got, want := w.read(), zpopReply("fifo", fmt.Sprintf("e%03d", i), strconv.Itoa(i)); got != want {
			t.Fatalf("waiter %d got %q, want %q", i, got, want)
		}
	}
	r.expect(integer(0), "EXISTS", "fifo")

	w1 := blockOn(t, s, admin, 1, "BZPOPMAX", "few", "0")
	w2 := blockOn(t, s, admin, 2, "BZMPOP", "0", "1", "few", "MAX")
	w3 := blockOn(t, s, admin, 3, "BZPOPMAX", "few", "0")
	r.expect(integer(2), "ZADD", "few", "1", "a", "2", "b")
	got1, got2 := w1.read(), w2.read()
	if got1 != zpopReply("few", "b", "2") || got2 != array(bulk("few"), array(array(bulk("a"), bulk("1")))) {
		t.Fatalf("waiters got %q and %q", got1, got2)
	}
	waitBlocked(t, admin, 1)
	r.expect(integer(1), "ZADD", "few", "3", "c")
	if got := w3.read(); got != zpopReply("few", "c", "3") {
		t.Fatalf("third waiter got %q", got)
	}
}

// A client that disconnects while blocked is cancelled; the next waiter
// gets the member, and nothing is popped for the one that left.
func TestBZPopDisconnect(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	gone := blockOn(t, s, admin, 1, "BZPOPMIN", "q", "0")
	next := blockOn(t, s, admin, 2, "BZPOPMIN", "q", "0")
	gone.c.Close()
	waitBlocked(t, admin, 1)
	r.expect(integer(1), "ZADD", "q", "1", "x")
	if got := next.read(); got != zpopReply("q", "x", "1") {
		t.Fatalf("next waiter got %q", got)
	}
	alone := blockOn(t, s, admin, 1, "BZMPOP", "0", "2", "q2", "q", "MIN", "COUNT", "10")
	alone.c.Close()
	waitBlocked(t, admin, 0)
	r.expect(integer(1), "ZADD", "q", "1", "kept")
	r.expect(array(bulk("kept")), "ZRANGE", "q", "0", "-1")

	killed := blockOn(t, s, admin, 1, "BZPOPMAX", "q3", "0")
	list := r.do("CLIENT", "LIST")
	m := regexp.MustCompile(`id=(\d+) [^\n]*flags=b [^\n]*cmd=bzpopmax `).FindStringSubmatch(list)
	if m == nil {
		t.Fatalf("no blocked BZPOPMAX in CLIENT LIST:\n%s", list)
	}
	r.expect(integer(1), "CLIENT", "KILL", "ID", m[1])
	killed.expectClosed()
	waitBlocked(t, admin, 0)
	r.expect(integer(1), "ZADD", "q3", "1", "kept")
	r.expect(integer(1), "ZCARD", "q3")
	if s.logBuf != nil && strings.Contains(s.logBuf.String(), `"level":"error"`) {
		t.Fatalf("the server logged errors:\n%s", s.logBuf.String())
	}
}

// Every write that brings a non-empty sorted set to a watched key wakes
// its waiters: ZADD INCR, ZINCRBY, the STORE commands, RENAME, COPY, MOVE.
// Writes that leave the key missing wake nobody.
func TestBZPopWokenByWrites(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	for _, c := range []struct {
		cmd    []string
		want   string
		member string
		score  string
	}{
		{[]string{"ZINCRBY", "w", "2.5", "inc"}, bulk("2.5"), "inc", "2.5"},
		{[]string{"ZADD", "w", "INCR", "3", "inc"}, bulk("3"), "inc", "3"},
		{[]string{"ZADD", "w", "NX", "CH", "4", "nx"}, integer(1), "nx", "4"},
		{[]string{"ZUNIONSTORE", "w", "2", "src", "nokey"}, integer(2), "s2", "2"},
		{[]string{"ZINTERSTORE", "w", "1", "src", "WEIGHTS", "3"}, integer(2), "s2", "6"},
		{[]string{"ZDIFFSTORE", "w", "2", "src", "nokey"}, integer(2), "s2", "2"},
		{[]string{"ZRANGESTORE", "w", "src", "0", "0"}, integer(1), "s1", "1"},
		{[]string{"ZRANGESTORE", "w", "src", "(1", "+inf", "BYSCORE"}, integer(1), "s2", "2"},
		{[]string{"RENAME", "src", "w"}, status("OK"), "s2", "2"},
		{[]string{"COPY", "src", "w"}, integer(1), "s2", "2"},
	} {
		r.do("DEL", "src", "w")
		r.expect(integer(2), "ZADD", "src", "1", "s1", "2", "s2")
		b := blockOn(t, s, admin, 1, "BZPOPMAX", "w", "0")
		r.expect(c.want, c.cmd...)
		if got := b.read(); got != zpopReply("w", c.member, c.score) {
			t.Fatalf("%v: waiter got %q", c.cmd, got)
		}
	}
	r.do("DEL", "w")
	r.expect(status("OK"), "SELECT", "1")
	r.do("DEL", "w")
	r.expect(integer(1), "ZADD", "w", "1", "from-db1")
	b := blockOn(t, s, admin, 1, "BZPOPMIN", "w", "0")
	r.expect(integer(1), "MOVE", "w", "0")
	if got := b.read(); got != zpopReply("w", "from-db1", "1") {
		t.Fatalf("MOVE: waiter got %q", got)
	}
	r.expect(status("OK"), "SELECT", "0")

	// Nothing arrives: the waiter stays blocked through each of these.
	r.do("DEL", "src", "w")
	b = blockOn(t, s, admin, 1, "BZPOPMIN", "w", "0")
	r.expect(integer(0), "ZADD", "w", "XX", "1", "a")
	r.expect(nullBulk, "ZADD", "w", "XX", "INCR", "1", "a")
	r.expect(integer(0), "ZUNIONSTORE", "w", "1", "nokey")
	r.expect(integer(0), "ZRANGESTORE", "w", "nokey", "0", "-1")
	r.expect(integer(1), "ZADD", "src", "5", "m")
	r.expect(integer(0), "ZINTERSTORE", "w", "2", "src", "nokey")
	r.expect(integer(0), "EXISTS", "w")
	if n := infoInt(t, admin, "clients", "blocked_clients"); n != 1 {
		t.Fatalf("blocked_clients = %d", n)
	}
	r.expect(integer(1), "ZUNIONSTORE", "w", "1", "src")
	if got := b.read(); got != zpopReply("w", "m", "5") {
		t.Fatalf("waiter got %q", got)
	}
}

// BZMPOP takes up to its count, from the low or the high end; a count
// beyond the set's size takes everything and deletes the key.
func TestBZMPopCount(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	b := blockOn(t, s, admin, 1, "BZMPOP", "0", "2", "m1", "m2", "MAX", "COUNT", "2")
	r.expect(integer(3), "ZADD", "m2", "1", "a", "2", "b", "3", "c")
	if got := b.read(); got != array(bulk("m2"), array(array(bulk("c"), bulk("3")), array(bulk("b"), bulk("2")))) {
		t.Fatalf("BZMPOP MAX COUNT 2 = %q", got)
	}
	r.expect(array(bulk("a")), "ZRANGE", "m2", "0", "-1")

	b = blockOn(t, s, admin, 1, "BZMPOP", "0", "1", "m3", "MIN", "COUNT", "10")
	r.expect(integer(2), "ZADD", "m3", "2", "y", "1", "x")
	if got := b.read(); got != array(bulk("m3"), array(array(bulk("x"), bulk("1")), array(bulk("y"), bulk("2")))) {
		t.Fatalf("BZMPOP MIN COUNT 10 = %q", got)
	}
	r.expect(integer(0), "EXISTS", "m3")

	// Without COUNT, one member.
	b = blockOn(t, s, admin, 1, "BZMPOP", "0", "1", "m4", "MIN")
	r.expect(integer(2), "ZADD", "m4", "2", "y", "1", "x")
	if got := b.read(); got != array(bulk("m4"), array(array(bulk("x"), bulk("1")))) {
		t.Fatalf("BZMPOP MIN = %q", got)
	}
	r.expect(array(bulk("y")), "ZRANGE", "m4", "0", "-1")
}

// In RESP3 scores are doubles, in the immediate and in the woken reply;
// go-redis reads both.
func TestBZPopRESP3(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	b := s.raw()
	b.do("HELLO", "3")
	r.expect(integer(3), "ZADD", "now", "1.5", "a", "inf", "b", "-inf", "c")
	b.expect(array(bulk("now"), bulk("c"), double("-inf")), "BZPOPMIN", "now", "0")
	b.expect(array(bulk("now"), bulk("b"), double("inf")), "BZPOPMAX", "now", "0")
	b.expect(array(bulk("now"), array(array(bulk("a"), double("1.5")))), "BZMPOP", "0", "1", "now", "MAX", "COUNT", "3")

	b.send(encode("BZPOPMAX", "z", "0"))
	waitBlocked(t, admin, 1)
	r.expect(integer(2), "ZADD", "z", "0.1", "x", "2", "y")
	if got := b.read(); got != array(bulk("z"), bulk("y"), double("2")) {
		t.Fatalf("woken BZPOPMAX in RESP3 = %q", got)
	}
	b.send(encode("BZMPOP", "0", "1", "z2", "MIN", "COUNT", "2"))
	waitBlocked(t, admin, 1)
	r.expect(integer(2), "ZADD", "z2", "0.1", "x", "2", "y")
	// Scores print as Redis 7.0 prints them (%.17g).
	if got := b.read(); got != array(bulk("z2"), array(array(bulk("x"), double("0.10000000000000001")), array(bulk("y"), double("2")))) {
		t.Fatalf("woken BZMPOP in RESP3 = %q", got)
	}

	c := s.client()
	done := make(chan *redis.ZWithKey, 1)
	go func() {
		z, err := c.BZPopMin(ctx, 0, "g").Result()
		if err != nil {
			t.Errorf("BZPopMin: %v", err)
		}
		done <- z
	}()
	waitBlocked(t, admin, 1)
	admin.ZAdd(ctx, "g", redis.Z{Score: 2.25, Member: "m"})
	if z := <-done; z == nil || z.Key != "g" || z.Member != "m" || z.Score != 2.25 {
		t.Fatalf("go-redis BZPopMin = %+v", z)
	}
	admin.ZAdd(ctx, "g", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"})
	key, zs, err := c.BZMPop(ctx, 0, "max", 5, "nokey", "g").Result()
	if err != nil || key != "g" || len(zs) != 2 || zs[0] != (redis.Z{Score: 2, Member: "b"}) || zs[1] != (redis.Z{Score: 1, Member: "a"}) {
		t.Fatalf("go-redis BZMPop = %q %v %v", key, zs, err)
	}
}

// WRONGTYPE at the call for a key of another type met before a sorted set
// with members; on wake, a key that has become another type is skipped.
// Waiters for lists and for sorted sets on one key: a sorted set serves
// the sorted-set waiters, oldest first, and the list waiters keep waiting
// (and the other way round), as in Redis.
func TestBZPopTypes(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	r.expect(status("OK"), "SET", "str", "v")
	r.expect(integer(1), "RPUSH", "lst", "e")
	r.expect(integer(1), "ZADD", "zs", "1", "m")
	for _, cmd := range [][]string{
		{"BZPOPMIN", "str", "0"},
		{"BZPOPMAX", "nokey", "lst", "zs", "0"},
		{"BZMPOP", "0", "2", "nokey", "str", "MIN"},
		{"BLPOP", "zs", "0"},
	} {
		r.expect(errr(wrongType), cmd...)
	}
	r.expect(zpopReply("zs", "m", "1"), "BZPOPMIN", "zs", "str", "0")

	b := blockOn(t, s, admin, 1, "BZPOPMIN", "k1", "k2", "0")
	r.expect(status("OK"), "SET", "k1", "now a string")
	r.expect(integer(1), "ZADD", "k2", "1", "a")
	if got := b.read(); got != zpopReply("k2", "a", "1") {
		t.Fatalf("waiter got %q", got)
	}

	// A list arriving on a key a sorted-set waiter watches leaves it
	// waiting; the sorted set that replaces it wakes it.
	b = blockOn(t, s, admin, 1, "BZPOPMIN", "k", "0")
	r.expect(integer(1), "LPUSH", "k", "x")
	r.expect(integer(2), "RPUSH", "k", "y") // signals again
	r.expect(bulk("x"), "LPOP", "k")
	r.expect(bulk("y"), "LPOP", "k")
	if n := infoInt(t, admin, "clients", "blocked_clients"); n != 1 {
		t.Fatalf("blocked_clients = %d after a list came and went", n)
	}
	r.expect(integer(1), "ZADD", "k", "1", "m")
	if got := b.read(); got != zpopReply("k", "m", "1") {
		t.Fatalf("waiter got %q", got)
	}

	// Interleaved waiters: sorted-set, list, sorted-set.
	w1 := blockOn(t, s, admin, 1, "BZPOPMIN", "mix", "0")
	w2 := blockOn(t, s, admin, 2, "BLPOP", "mix", "0")
	w3 := blockOn(t, s, admin, 3, "BZPOPMAX", "mix", "0")
	r.expect(integer(3), "ZADD", "mix", "1", "a", "2", "b", "3", "c")
	if got := w1.read(); got != zpopReply("mix", "a", "1") {
		t.Fatalf("first sorted-set waiter got %q", got)
	}
	if got := w3.read(); got != zpopReply("mix", "c", "3") {
		t.Fatalf("second sorted-set waiter got %q", got)
	}
	waitBlocked(t, admin, 1)
	r.expect(array(bulk("b")), "ZRANGE", "mix", "0", "-1")
	// The list waiter waits on, behind nobody: a later sorted-set waiter
	// on another key is served, then a list serves it.
	w4 := blockOn(t, s, admin, 2, "BZPOPMIN", "mix2", "0")
	r.expect(status("OK"), "RENAME", "mix", "mix2")
	if got := w4.read(); got != zpopReply("mix2", "b", "2") {
		t.Fatalf("BZPOPMIN woken by RENAME got %q", got)
	}
	r.expect(integer(1), "RPUSH", "mix", "L")
	if got := w2.read(); got != popReply("mix", "L") {
		t.Fatalf("list waiter got %q", got)
	}

	// A sorted set arriving where a list waiter waits wakes nobody.
	b = blockOn(t, s, admin, 1, "BRPOP", "k", "0")
	r.expect(integer(1), "ZADD", "k", "1", "m")
	r.expect(integer(2), "ZADD", "k", "2", "n", "3", "o")
	if n := infoInt(t, admin, "clients", "blocked_clients"); n != 1 {
		t.Fatalf("blocked_clients = %d after a ZADD to a list waiter's key", n)
	}
	r.expect(integer(1), "DEL", "k")
	r.expect(integer(1), "RPUSH", "k", "z")
	if got := b.read(); got != popReply("k", "z") {
		t.Fatalf("list waiter got %q", got)
	}
}

// CLIENT UNBLOCK ends a BZPOPMIN/BZMPOP as a timeout or an error; the
// unblocked client takes nothing afterwards.
func TestBZPopClientUnblock(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	for _, c := range []struct {
		cmd  []string
		args []string
		want string
	}{
		{[]string{"BZPOPMIN", "q", "0"}, nil, nullArray},
		{[]string{"BZMPOP", "0", "1", "q", "MAX"}, []string{"TIMEOUT"}, nullArray},
		{[]string{"BZPOPMAX", "q", "10"}, []string{"ERROR"}, errr("UNBLOCKED client unblocked via CLIENT UNBLOCK")},
	} {
		b := s.raw()
		id := strings.TrimSuffix(strings.TrimPrefix(b.do("CLIENT", "ID"), ":"), "\r\n")
		b.send(encode(c.cmd...))
		waitBlocked(t, admin, 1)
		r.expect(integer(1), append([]string{"CLIENT", "UNBLOCK", id}, c.args...)...)
		if got := b.read(); got != c.want {
			t.Fatalf("%v, UNBLOCK %v: client got %q", c.cmd, c.args, got)
		}
		r.expect(integer(0), append([]string{"CLIENT", "UNBLOCK", id}, c.args...)...)
		b.expect("+PONG\r\n", "PING")
	}
	r.expect(integer(1), "ZADD", "q", "1", "kept")
	r.expect(integer(1), "ZCARD", "q")
}

// An expired sorted set is absent: nothing is popped from it, and a ZADD
// that recreates the key serves the waiter.
func TestBZPopTTL(t *testing.T) {
	s := startServer(t, func(c *cellar.Config) { c.Expiry.Interval = time.Hour }) // lazy expiry only
	admin := s.client()
	r := s.raw()
	r.expect(integer(1), "ZADD", "k", "1", "phantom")
	at := time.Now().Add(50 * time.Millisecond).UnixMilli()
	r.expect(integer(1), "PEXPIREAT", "k", strconv.FormatInt(at, 10))
	waitFor(t, 5*time.Second, "the key's expiry to pass", func() bool { return time.Now().UnixMilli() > at+2 })
	r.expect(nullArray, "BZPOPMIN", "k", "0.05")
	b := blockOn(t, s, admin, 1, "BZPOPMIN", "k", "0")
	r.expect(integer(1), "ZADD", "k", "2", "fresh")
	if got := b.read(); got != zpopReply("k", "fresh", "2") {
		t.Fatalf("BZPOPMIN on an expired sorted set = %q", got)
	}
	r.expect(integer(-2), "TTL", "k")
}

// The ZADD, the wake and the pop are one step: a pipelined ZPOPMIN right
// after the ZADD finds nothing.
func TestBZPopNoStealing(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	r := s.raw()
	b := blockOn(t, s, admin, 1, "BZPOPMIN", "q", "0")
	r.send(append(encode("ZADD", "q", "1", "x"), encode("ZPOPMIN", "q")...))
	if got := r.read(); got != integer(1) {
		t.Fatalf("ZADD = %q", got)
	}
	if got := r.read(); got != array() {
		t.Fatalf("ZPOPMIN after the ZADD took %q from the waiter", got)
	}
	if got := b.read(); got != zpopReply("q", "x", "1") {
		t.Fatalf("waiter got %q", got)
	}
}

// The blocking limits count every waiter on a key, list or sorted set.
func TestBZPopLimits(t *testing.T) {
	s := startServer(t, func(c *cellar.Config) {
		c.Blocking.MaxWaitersPerKey = 2
		c.Blocking.MaxKeysPerWait = 2
	})
	needCellar(t, s)
	admin := s.client()
	r := s.raw()
	tooMany := errr("ERR too many blocked clients")
	r.expect(tooMany, "BZPOPMIN", "a", "b", "c", "0")
	r.expect(tooMany, "BZMPOP", "0", "3", "a", "b", "c", "MIN")
	l := blockOn(t, s, admin, 1, "BLPOP", "a", "0")
	z := blockOn(t, s, admin, 2, "BZPOPMIN", "a", "b", "a", "0")
	r.expect(tooMany, "BZPOPMAX", "a", "0")
	r.expect(tooMany, "BLPOP", "a", "0")
	r.expect(integer(1), "ZADD", "a", "1", "m")
	if got := z.read(); got != zpopReply("a", "m", "1") {
		t.Fatalf("sorted-set waiter got %q", got)
	}
	z = blockOn(t, s, admin, 2, "BZPOPMAX", "a", "0")
	r.expect(integer(1), "RPUSH", "a", "e")
	if got := l.read(); got != popReply("a", "e") {
		t.Fatalf("list waiter got %q", got)
	}
	r.expect(integer(1), "ZADD", "a", "1", "n")
	if got := z.read(); got != zpopReply("a", "n", "1") {
		t.Fatalf("sorted-set waiter got %q", got)
	}
}

// With durability "always", a woken waiter's reply waits for the fsync
// that covers its pop.
func TestBZPopDurabilityAlways(t *testing.T) {
	s := startServer(t, func(c *cellar.Config) { c.Durability = "always" })
	needCellar(t, s)
	admin := s.client()
	r := s.raw()
	var ws []*rawConn
	for i := 0; i < 3; i++ {
		ws = append(ws, blockOn(t, s, admin, i+1, "BZPOPMIN", "q", "0"))
	}
	fsyncs := infoInt(t, admin, "persistence", "fsyncs")
	r.expect(integer(3), "ZADD", "q", "0", "a", "1", "b", "2", "c")
	for i, w := range ws {
		if got, want := w.read(), zpopReply("q", string(rune('a'+i)), strconv.Itoa(i)); got != want {
			t.Fatalf("waiter %d got %q, want %q", i, got, want)
		}
	}
	if n := infoInt(t, admin, "persistence", "fsyncs"); n <= fsyncs {
		t.Fatalf("no fsync ran for the ZADD and the pops (fsyncs %d -> %d)", fsyncs, n)
	}
}

// Many ZADDers and many blocking consumers (BZPOPMIN, BZPOPMAX, BZMPOP and
// a non-blocking ZPOPMIN): every member is delivered exactly once and the
// sorted sets end empty.
func TestBZPopConcurrency(t *testing.T) {
	s := startServer(t)
	admin := s.client()
	const adders, perAdder, consumers = 4, 300, 8
	total := adders * perAdder
	delivered := newDeliveries()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, adders+consumers)
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
				var got []string
				var err error
				switch i % 4 {
				case 0:
					var z *redis.ZWithKey
					if z, err = c.BZPopMin(ctx, time.Second, "za", "zb").Result(); err == nil {
						got = append(got, z.Member.(string))
					}
				case 1:
					var z *redis.ZWithKey
					if z, err = c.BZPopMax(ctx, time.Second, "zb", "za").Result(); err == nil {
						got = append(got, z.Member.(string))
					}
				case 2:
					var zs []redis.Z
					if _, zs, err = c.BZMPop(ctx, time.Second, "min", 3, "za", "zb").Result(); err == nil {
						for _, z := range zs {
							got = append(got, z.Member.(string))
						}
					}
				case 3:
					var zs []redis.Z
					if zs, err = c.ZPopMin(ctx, "za", 2).Result(); err == nil {
						for _, z := range zs {
							got = append(got, z.Member.(string))
						}
					}
				}
				if err == redis.Nil {
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("consumer %d: %w", i, err)
					return
				}
				delivered.record(got...)
			}
		}(i)
	}
	var aw sync.WaitGroup
	for p := 0; p < adders; p++ {
		aw.Add(1)
		go func(p int) {
			defer aw.Done()
			c := s.client()
			for j := 0; j < perAdder; j++ {
				key := "za"
				if j%3 == 0 {
					key = "zb"
				}
				m := fmt.Sprintf("p%d-%d", p, j)
				var err error
				if j%5 == 0 {
					err = c.ZIncrBy(ctx, key, float64(j), m).Err()
				} else {
					err = c.ZAdd(ctx, key, redis.Z{Score: float64(j % 7), Member: m}).Err()
				}
				if err != nil {
					errs <- fmt.Errorf("adder %d: %w", p, err)
					return
				}
			}
		}(p)
	}
	aw.Wait()
	waitFor(t, 60*time.Second, fmt.Sprintf("%d members consumed", total), func() bool {
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		return delivered.count() >= total
	})
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	delivered.exactlyOnce(t, total)
	for _, k := range []string{"za", "zb"} {
		if n := admin.ZCard(ctx, k).Val(); n != 0 {
			t.Fatalf("ZCARD %s = %d at the end", k, n)
		}
	}
	waitBlocked(t, admin, 0)
}

// COMMAND DOCS names the group as Redis does ("sorted-set"), with Cellar's
// own summary.
func TestBZPopCommandDocs(t *testing.T) {
	s := startServer(t)
	needCellar(t, s)
	r := s.raw()
	for _, name := range []string{"bzpopmin", "bzpopmax", "bzmpop", "zadd"} {
		got := r.do("COMMAND", "DOCS", name)
		if !strings.Contains(got, bulk("group")+bulk("sorted-set")) {
			t.Fatalf("COMMAND DOCS %s: no group sorted-set in %q", name, got)
		}
	}
}
