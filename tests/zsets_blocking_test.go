package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BZPOPMIN, BZPOPMAX and BZMPOP over the wire: the cases of the list
// blocking tests, for sorted-set pops, plus what Redis does when waiters
// of lists and of sorted sets share a key.

// double is a RESP3 double.
func double(s string) string { return "," + s + "\r\n" }

// A blocked BZPOPMIN/BZPOPMAX returns after a ZADD, with the lowest or
// highest member; a sorted set its waiter emptied is deleted.
func TestBZPopHappyPath(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.servedAfterPush(
		wakeCase{block: "BZPOPMIN z 0", cmd: "ZADD z 3 c 1 a 2 b", reply: integer(3), woken: zpopReply("z", "a", "1"),
			then: []check{{"ZRANGE z 0 -1", array(bulk("b"), bulk("c"))}}},
		wakeCase{block: "BZPOPMAX z2 0", cmd: "ZADD z2 1.5 x 2.5 y -inf w", reply: integer(3), woken: zpopReply("z2", "y", "2.5"),
			then: []check{{"ZRANGE z2 0 -1 WITHSCORES", array(bulk("w"), bulk("-inf"), bulk("x"), bulk("1.5"))}}},
		wakeCase{block: "BZPOPMIN z3 0", cmd: "ZADD z3 7 only", reply: integer(1), woken: zpopReply("z3", "only", "7"),
			then: []check{{"TYPE z3", status("none")}, {"EXISTS z3", integer(0)}}},
	)

	// A key with members answers at once, without blocking.
	bt.expect(check{"ZADD now 1 a 2 b", integer(2)}, check{"BZPOPMAX none now 0", zpopReply("now", "b", "2")},
		check{"BZMPOP 0 2 none now MIN COUNT 5", array(bulk("now"), array(array(bulk("a"), bulk("1"))))},
		check{"EXISTS now", integer(0)})
}

// Timeouts, decimal and integer, in both protocols; timeout 0 waits until
// a ZADD.
func TestBZPopTimeouts(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.timeouts(timeouts{
		nulls: []check{{"BZPOPMIN none 0.1", nullArray}, {"BZPOPMAX none none2 0.05", nullArray}, {"BZPOPMIN none 1", nullArray},
			{"BZMPOP 0.05 2 none none2 MAX COUNT 3", nullArray},
			{"BZPOPMIN none 0.0001", nullArray}, // rounds up to 1 ms
			{"EXISTS none none2", integer(0)}},
		resp3:   []string{"BZPOPMIN none 0.05", "BZMPOP 0.05 1 none MIN"},
		short:   "BZPOPMIN other 0.05",
		forever: wakeCase{block: "BZPOPMAX z 0", cmd: "ZADD z 5 go", reply: integer(1), woken: zpopReply("z", "go", "5")},
	})
	// A timed waiter is in the timeout table until it is served.
	timed := bt.block(1, "BZMPOP 100.5 1 z MIN")
	bt.expectClients("clients_in_timeout_table", 1, "for a timed waiter")
	bt.expect(check{"ZADD z 1 m", integer(1)})
	expectWoken(timed, array(bulk("z"), array(array(bulk("m"), bulk("1")))), "BZMPOP 100.5")
	bt.expectClients("clients_in_timeout_table", 0, "after the wake")
}

// Keys are scanned in the order given, at the call and on wake.
func TestBZPopMultiKeyOrder(t *testing.T) {
	t.Parallel()
	newBlockingTest(t).multiKeyOrder(multiKeyOrder{
		first: wakeCase{block: "BZPOPMIN k1 k2 0", cmd: "ZADD k2 2 from-k2", reply: integer(1), woken: zpopReply("k2", "from-k2", "2"),
			then: []check{{"ZADD k1 1 from-k1", integer(1)}, {"ZCARD k1", integer(1)}}},
		// Both present at the call: the first key wins.
		atCall: []check{{"ZADD k2 0 second", integer(1)},
			{"BZPOPMIN k1 k2 0", zpopReply("k1", "from-k1", "1")}, {"BZPOPMIN k1 k2 0", zpopReply("k2", "second", "0")}},
		// Both become available in one step (SWAPDB brings two sorted sets
		// at once): the first key in the waiter's order wins (Redis
		// 7.0 serves the key whose readiness it handles first, a documented
		// deviation).
		swapOnly: true,
		setup:    []check{{"ZADD k1 1 one", integer(1)}, {"ZADD k2 2 two", integer(1)}},
		swap: wakeCase{block: "BZMPOP 0 2 k2 k1 MAX COUNT 2", cmd: "SWAPDB 0 1", reply: status("OK"),
			woken: array(bulk("k2"), array(array(bulk("two"), bulk("2")))),
			then:  []check{{"ZRANGE k1 0 -1", array(bulk("one"))}, {"DEL k1", integer(1)}}},
	})
}

// Waiters on a key are served oldest first, one member each; a ZADD wakes
// no more waiters than members it brought.
func TestBZPopFIFO(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.fifo(repeat("BZPOPMIN q 0", 2),
		serve{"ZADD q 1 e1", integer(1), []string{zpopReply("q", "e1", "1")}},
		serve{"ZADD q 2 e2", integer(1), []string{zpopReply("q", "e2", "2")}})

	// 100 waiters, then one ZADD of 100 members: waiter i gets the i-th
	// lowest.
	const n = 100
	zadd, woken := "ZADD fifo", make([]string, n)
	for i := n - 1; i >= 0; i-- {
		zadd += fmt.Sprintf(" %d e%03d", i, i)
		woken[i] = zpopReply("fifo", fmt.Sprintf("e%03d", i), fmt.Sprint(i))
	}
	bt.fifo(repeat("BZPOPMIN fifo 0", n), serve{zadd, integer(n), woken})
	bt.expect(check{"EXISTS fifo", integer(0)})

	bt.fifo([]string{"BZPOPMAX few 0", "BZMPOP 0 1 few MAX", "BZPOPMAX few 0"},
		serve{"ZADD few 1 a 2 b", integer(2), []string{zpopReply("few", "b", "2"), array(bulk("few"), array(array(bulk("a"), bulk("1"))))}},
		serve{"ZADD few 3 c", integer(1), []string{zpopReply("few", "c", "3")}})
}

// A client that disconnects while blocked is cancelled; the next waiter
// gets the member, and nothing is popped for the one that left.
func TestBZPopDisconnect(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.disconnect(disconnect{
		block: "BZPOPMIN q 0",
		serve: serve{"ZADD q 1 x", integer(1), []string{zpopReply("q", "x", "1")}},
		alone: "BZMPOP 0 2 q2 q MIN COUNT 10",
		kept:  []check{{"ZADD q 1 kept", integer(1)}, {"ZRANGE q 0 -1", array(bulk("kept"))}},
	})
	bt.clientKill("BZPOPMAX q3 0", `id=(\d+) [^\n]*flags=b [^\n]*cmd=bzpopmax `, check{"ZADD q3 1 kept", integer(1)}, check{"ZCARD q3", integer(1)})
}

// Every write that brings a non-empty sorted set to a watched key wakes
// its waiters: ZADD INCR, ZINCRBY, the STORE commands, RENAME, COPY, MOVE.
// Writes that leave the key missing wake nobody.
func TestBZPopWokenByWrites(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	for _, c := range []struct{ cmd, want, member, score string }{
		{"ZINCRBY w 2.5 inc", bulk("2.5"), "inc", "2.5"},
		{"ZADD w INCR 3 inc", bulk("3"), "inc", "3"},
		{"ZADD w NX CH 4 nx", integer(1), "nx", "4"},
		{"ZUNIONSTORE w 2 src nokey", integer(2), "s2", "2"},
		{"ZINTERSTORE w 1 src WEIGHTS 3", integer(2), "s2", "6"},
		{"ZDIFFSTORE w 2 src nokey", integer(2), "s2", "2"},
		{"ZRANGESTORE w src 0 0", integer(1), "s1", "1"},
		{"ZRANGESTORE w src (1 +inf BYSCORE", integer(1), "s2", "2"},
		{"RENAME src w", status("OK"), "s2", "2"},
		{"COPY src w", integer(1), "s2", "2"},
	} {
		bt.r.do("DEL", "src", "w")
		bt.expect(check{"ZADD src 1 s1 2 s2", integer(2)})
		bt.wake(wakeCase{block: "BZPOPMAX w 0", cmd: c.cmd, reply: c.want, woken: zpopReply("w", c.member, c.score)})
	}
	bt.r.do("DEL", "w")
	bt.expect(check{"SELECT 1", status("OK")})
	bt.r.do("DEL", "w")
	bt.expect(check{"ZADD w 1 from-db1", integer(1)})
	bt.wake(wakeCase{block: "BZPOPMIN w 0", cmd: "MOVE w 0", reply: integer(1), woken: zpopReply("w", "from-db1", "1"),
		then: []check{{"SELECT 0", status("OK")}}})

	// Nothing arrives: the waiter stays blocked through each of these.
	bt.r.do("DEL", "src", "w")
	b := bt.block(1, "BZPOPMIN w 0")
	bt.expect(check{"ZADD w XX 1 a", integer(0)}, check{"ZADD w XX INCR 1 a", nullBulk},
		check{"ZUNIONSTORE w 1 nokey", integer(0)}, check{"ZRANGESTORE w nokey 0 -1", integer(0)},
		check{"ZADD src 5 m", integer(1)}, check{"ZINTERSTORE w 2 src nokey", integer(0)}, check{"EXISTS w", integer(0)})
	bt.expectClients("blocked_clients", 1, "after writes that leave w missing")
	bt.expect(check{"ZUNIONSTORE w 1 src", integer(1)})
	expectWoken(b, zpopReply("w", "m", "5"), "the waiter")
}

// BZMPOP takes up to its count, from the low or the high end; a count
// beyond the set's size takes everything and deletes the key.
func TestBZMPopCount(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.wake(wakeCase{block: "BZMPOP 0 2 m1 m2 MAX COUNT 2", cmd: "ZADD m2 1 a 2 b 3 c", reply: integer(3),
		woken: array(bulk("m2"), array(array(bulk("c"), bulk("3")), array(bulk("b"), bulk("2")))),
		then:  []check{{"ZRANGE m2 0 -1", array(bulk("a"))}}})
	bt.wake(wakeCase{block: "BZMPOP 0 1 m3 MIN COUNT 10", cmd: "ZADD m3 2 y 1 x", reply: integer(2),
		woken: array(bulk("m3"), array(array(bulk("x"), bulk("1")), array(bulk("y"), bulk("2")))),
		then:  []check{{"EXISTS m3", integer(0)}}})
	// Without COUNT, one member.
	bt.wake(wakeCase{block: "BZMPOP 0 1 m4 MIN", cmd: "ZADD m4 2 y 1 x", reply: integer(2),
		woken: array(bulk("m4"), array(array(bulk("x"), bulk("1")))),
		then:  []check{{"ZRANGE m4 0 -1", array(bulk("y"))}}})
}

// In RESP3 scores are doubles, in the immediate and in the woken reply;
// go-redis reads both.
func TestBZPopRESP3(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	b := bt.s.raw()
	b.do("HELLO", "3")
	bt.expect(check{"ZADD now 1.5 a inf b -inf c", integer(3)})
	b.expect(array(bulk("now"), bulk("c"), double("-inf")), "BZPOPMIN", "now", "0")
	b.expect(array(bulk("now"), bulk("b"), double("inf")), "BZPOPMAX", "now", "0")
	b.expect(array(bulk("now"), array(array(bulk("a"), double("1.5")))), "BZMPOP", "0", "1", "now", "MAX", "COUNT", "3")

	b.send(encode("BZPOPMAX", "z", "0"))
	bt.blocked(1)
	bt.expect(check{"ZADD z 0.1 x 2 y", integer(2)})
	expectWoken(b, array(bulk("z"), bulk("y"), double("2")), "BZPOPMAX in RESP3")
	b.send(encode("BZMPOP", "0", "1", "z2", "MIN", "COUNT", "2"))
	bt.blocked(1)
	bt.expect(check{"ZADD z2 0.1 x 2 y", integer(2)})
	// Scores print as Redis 7.0 prints them (%.17g).
	expectWoken(b, array(bulk("z2"), array(array(bulk("x"), double("0.10000000000000001")), array(bulk("y"), double("2")))), "BZMPOP in RESP3")

	admin, c := bt.admin, bt.s.client()
	done := make(chan *redis.ZWithKey, 1)
	go func() {
		z, err := c.BZPopMin(ctx, 0, "g").Result()
		if err != nil {
			t.Errorf("BZPopMin: %v", err)
		}
		done <- z
	}()
	bt.blocked(1)
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
	t.Parallel()
	bt := newBlockingTest(t)
	bt.expect(check{"SET str v", status("OK")}, check{"RPUSH lst e", integer(1)}, check{"ZADD zs 1 m", integer(1)})
	for _, cmd := range []string{"BZPOPMIN str 0", "BZPOPMAX nokey lst zs 0", "BZMPOP 0 2 nokey str MIN", "BLPOP zs 0"} {
		bt.expect(check{cmd, errr(wrongType)})
	}
	bt.expect(check{"BZPOPMIN zs str 0", zpopReply("zs", "m", "1")})

	b := bt.block(1, "BZPOPMIN k1 k2 0")
	bt.r.expect(status("OK"), "SET", "k1", "now a string")
	bt.expect(check{"ZADD k2 1 a", integer(1)})
	expectWoken(b, zpopReply("k2", "a", "1"), "the waiter")

	// A list arriving on a key a sorted-set waiter watches leaves it
	// waiting; the sorted set that replaces it wakes it.
	b = bt.block(1, "BZPOPMIN k 0")
	bt.expect(check{"LPUSH k x", integer(1)},
		check{"RPUSH k y", integer(2)}, // signals again
		check{"LPOP k", bulk("x")}, check{"LPOP k", bulk("y")})
	bt.expectClients("blocked_clients", 1, "after a list came and went")
	bt.expect(check{"ZADD k 1 m", integer(1)})
	expectWoken(b, zpopReply("k", "m", "1"), "the waiter")

	// Interleaved waiters: sorted-set, list, sorted-set.
	w1 := bt.block(1, "BZPOPMIN mix 0")
	w2 := bt.block(2, "BLPOP mix 0")
	w3 := bt.block(3, "BZPOPMAX mix 0")
	bt.expect(check{"ZADD mix 1 a 2 b 3 c", integer(3)})
	expectWoken(w1, zpopReply("mix", "a", "1"), "the first sorted-set waiter")
	expectWoken(w3, zpopReply("mix", "c", "3"), "the second sorted-set waiter")
	bt.blocked(1)
	bt.expect(check{"ZRANGE mix 0 -1", array(bulk("b"))})
	// The list waiter waits on, behind nobody: a later sorted-set waiter
	// on another key is served, then a list serves it.
	w4 := bt.block(2, "BZPOPMIN mix2 0")
	bt.expect(check{"RENAME mix mix2", status("OK")})
	expectWoken(w4, zpopReply("mix2", "b", "2"), "BZPOPMIN woken by RENAME")
	bt.expect(check{"RPUSH mix L", integer(1)})
	expectWoken(w2, popReply("mix", "L"), "the list waiter")

	// A sorted set arriving where a list waiter waits wakes nobody.
	b = bt.block(1, "BRPOP k 0")
	bt.expect(check{"ZADD k 1 m", integer(1)}, check{"ZADD k 2 n 3 o", integer(2)})
	bt.expectClients("blocked_clients", 1, "after a ZADD to a list waiter's key")
	bt.expect(check{"DEL k", integer(1)}, check{"RPUSH k z", integer(1)})
	expectWoken(b, popReply("k", "z"), "the list waiter")
}

// CLIENT UNBLOCK ends a BZPOPMIN/BZMPOP as a timeout or an error; the
// unblocked client takes nothing afterwards.
func TestBZPopClientUnblock(t *testing.T) {
	t.Parallel()
	newBlockingTest(t).clientUnblock([]unblockCase{
		{"BZPOPMIN q 0", nil, nullArray},
		{"BZMPOP 0 1 q MAX", []string{"TIMEOUT"}, nullArray},
		{"BZPOPMAX q 10", []string{"ERROR"}, errr("UNBLOCKED client unblocked via CLIENT UNBLOCK")},
	}, check{"ZADD q 1 kept", integer(1)}, check{"ZCARD q", integer(1)})
}

// An expired sorted set is absent: nothing is popped from it, and a ZADD
// that recreates the key serves the waiter.
func TestBZPopTTL(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t, lazyExpiry)
	bt.expiredKey("ZADD k 1 phantom", "BZPOPMIN k 0.05",
		wakeCase{block: "BZPOPMIN k 0", cmd: "ZADD k 2 fresh", reply: integer(1), woken: zpopReply("k", "fresh", "2"),
			then: []check{{"TTL k", integer(-2)}}})
}

// The ZADD, the wake and the pop are one step: a pipelined ZPOPMIN right
// after the ZADD finds nothing.
func TestBZPopNoStealing(t *testing.T) {
	t.Parallel()
	newBlockingTest(t).noStealing(wakeCase{block: "BZPOPMIN q 0", cmd: "ZADD q 1 x", reply: integer(1), woken: zpopReply("q", "x", "1")},
		"ZPOPMIN q", array())
}

// The blocking limits count every waiter on a key, list or sorted set.
func TestBZPopLimits(t *testing.T) {
	t.Parallel()
	bt := newLimitsTest(t, 0, "BZPOPMIN a b c 0", "BZMPOP 0 3 a b c MIN")
	l := bt.block(1, "BLPOP a 0")
	z := bt.block(2, "BZPOPMIN a b a 0")
	bt.refused("BZPOPMAX a 0", "BLPOP a 0")
	bt.expect(check{"ZADD a 1 m", integer(1)})
	expectWoken(z, zpopReply("a", "m", "1"), "the sorted-set waiter")
	z = bt.block(2, "BZPOPMAX a 0")
	bt.expect(check{"RPUSH a e", integer(1)})
	expectWoken(l, popReply("a", "e"), "the list waiter")
	bt.expect(check{"ZADD a 1 n", integer(1)})
	expectWoken(z, zpopReply("a", "n", "1"), "the sorted-set waiter")
}

// With durability "always", a woken waiter's reply waits for the fsync
// that covers its pop.
func TestBZPopDurabilityAlways(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t, durabilityAlways)
	needCellar(t, bt.s)
	got := bt.fsyncCovers(repeat("BZPOPMIN q 0", 3), "ZADD q 0 a 1 b 2 c", integer(3))
	for i, g := range got {
		if want := zpopReply("q", string(rune('a'+i)), fmt.Sprint(i)); g != want {
			t.Fatalf("waiter %d got %q, want %q", i, g, want)
		}
	}
}

// Many ZADDers and many blocking consumers (BZPOPMIN, BZPOPMAX, BZMPOP and
// a non-blocking ZPOPMIN): every member is delivered exactly once and the
// sorted sets end empty.
func TestBZPopConcurrency(t *testing.T) {
	t.Parallel()
	members := func(zs []redis.Z, err error) ([]string, error) {
		var got []string
		for _, z := range zs {
			got = append(got, z.Member.(string))
		}
		return got, err
	}
	newBlockingTest(t).concurrently(concurrentLoad{
		producers: 4, perProducer: 300, consumers: 8,
		produce: func(c *redis.Client, key, m string, j int) error {
			if j%5 == 0 {
				return c.ZIncrBy(ctx, key, float64(j), m).Err()
			}
			return c.ZAdd(ctx, key, redis.Z{Score: float64(j % 7), Member: m}).Err()
		},
		consume: func(c *redis.Client, i int) ([]string, error) {
			switch i % 4 {
			case 0:
				z, err := c.BZPopMin(ctx, time.Second, "za", "zb").Result()
				if err != nil {
					return nil, err
				}
				return []string{z.Member.(string)}, nil
			case 1:
				z, err := c.BZPopMax(ctx, time.Second, "zb", "za").Result()
				if err != nil {
					return nil, err
				}
				return []string{z.Member.(string)}, nil
			case 2:
				_, zs, err := c.BZMPop(ctx, time.Second, "min", 3, "za", "zb").Result()
				return members(zs, err)
			}
			return members(c.ZPopMin(ctx, "za", 2).Result())
		},
		keys:   []string{"za", "zb"},
		left:   func(c *redis.Client, key string) int64 { return c.ZCard(ctx, key).Val() },
		within: 60 * time.Second,
	})
}

// COMMAND DOCS names the group as Redis does ("sorted-set"), with Cellar's
// own summary.
func TestBZPopCommandDocs(t *testing.T) {
	t.Parallel()
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
