package tests

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A blocked BLPOP/BRPOP returns after a push, from the right end. This and
// the tests after it pin the blocking model of docs/architecture.md,
// "Blocked clients".
func TestBlockingHappyPath(t *testing.T) {
	t.Parallel()
	newBlockingTest(t).servedAfterPush(
		wakeCase{block: "BLPOP q 0", cmd: "RPUSH q a b", reply: integer(2), woken: popReply("q", "a"),
			then: []check{{"LRANGE q 0 -1", array(bulk("b"))}}},
		wakeCase{block: "BRPOP q2 0", cmd: "LPUSH q2 x y z", reply: integer(3), woken: popReply("q2", "x"), // z y x
			then: []check{{"LRANGE q2 0 -1", array(bulk("z"), bulk("y"))}}},
		// The list the waiter emptied is gone, not an empty list.
		wakeCase{block: "BLPOP q3 0", cmd: "LPUSH q3 only", reply: integer(1), woken: popReply("q3", "only"),
			then: []check{{"TYPE q3", status("none")}, {"EXISTS q3", integer(0)}}},
	)
}

// Timeouts, decimal and integer, in both protocols; timeout 0
// waits until a push.
func TestBlockingTimeouts(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.timeouts(timeouts{
		nulls: []check{{"BLPOP none 0.1", nullArray}, {"BRPOP none none2 0.05", nullArray}, {"BLPOP none 1", nullArray},
			{"BRPOPLPUSH none dst 0.05", nullArray}, {"BLMOVE none dst LEFT RIGHT 0.05", nullArray},
			{"BLMPOP 0.05 1 none LEFT", nullArray}, {"EXISTS dst", integer(0)}},
		resp3:   []string{"BLPOP none 0.05", "BLMOVE none dst LEFT RIGHT 0.05"},
		short:   "BLPOP other 0.05",
		forever: wakeCase{block: "BLPOP q 0", cmd: "RPUSH q go", reply: integer(1), woken: popReply("q", "go")},
	})
	// A sub-millisecond timeout rounds up to a millisecond, as in Redis;
	// a negative one rounding to 0 waits forever.
	bt.expect(check{"BLPOP none 0.0001", "_\r\n"})
	bt.wake(wakeCase{block: "BLPOP q -0.0001", cmd: "RPUSH q x", reply: integer(1), woken: popReply("q", "x")})
}

// Keys are scanned in the order given, at the call and on wake.
func TestBlockingMultiKeyOrder(t *testing.T) {
	t.Parallel()
	newBlockingTest(t).multiKeyOrder(multiKeyOrder{
		// Only k2 has an element when it arrives: the waiter takes it, and
		// k1's later element stays.
		first: wakeCase{block: "BLPOP k1 k2 0", cmd: "RPUSH k2 from-k2", reply: integer(1), woken: popReply("k2", "from-k2"),
			then: []check{{"RPUSH k1 from-k1", integer(1)}, {"LLEN k1", integer(1)}}},
		// Both lists present at the call: the first key wins.
		atCall: []check{{"RPUSH k2 second", integer(1)},
			{"BLPOP k1 k2 0", popReply("k1", "from-k1")}, {"BLPOP k1 k2 0", popReply("k2", "second")}},
		// Both become available in one step (SWAPDB brings two lists at
		// once): at wake time the first key in the waiter's order wins,
		// whichever key's readiness was noticed first.
		setup: []check{{"RPUSH k1 one", integer(1)}, {"RPUSH k2 two", integer(1)}},
		swap: wakeCase{block: "BLPOP k2 k1 0", cmd: "SWAPDB 0 1", reply: status("OK"), woken: popReply("k2", "two"),
			then: []check{{"LRANGE k1 0 -1", array(bulk("one"))}, {"DEL k1", integer(1)}}},
	})
}

// Waiters on a key are served oldest first; one element serves
// one waiter.
func TestBlockingFIFO(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.fifo(repeat("BLPOP q 0", 2),
		serve{"RPUSH q e1", integer(1), []string{popReply("q", "e1")}},
		serve{"RPUSH q e2", integer(1), []string{popReply("q", "e2")}})

	// 100 waiters, then one push of 100 elements: waiter i gets element i.
	const n = 100
	push, woken := "RPUSH fifo", []string{}
	for i := 0; i < n; i++ {
		push += fmt.Sprintf(" e%03d", i)
		woken = append(woken, popReply("fifo", fmt.Sprintf("e%03d", i)))
	}
	bt.fifo(repeat("BLPOP fifo 0", n), serve{push, integer(n), woken})
	bt.expect(check{"EXISTS fifo", integer(0)})

	// A push wakes no more waiters than it brought elements.
	bt.fifo(repeat("BRPOP few 0", 3),
		serve{"RPUSH few a b", integer(2), []string{popReply("few", "b"), popReply("few", "a")}},
		serve{"RPUSH few c", integer(1), []string{popReply("few", "c")}})
}

// A client that disconnects while blocked is cancelled; the next
// waiter gets the element, and nothing is popped for the one that left.
func TestBlockingDisconnect(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.disconnect(disconnect{
		block: "BLPOP q 0",
		serve: serve{"RPUSH q x", integer(1), []string{popReply("q", "x")}},
		// Alone, a departed waiter leaves the element in the list.
		alone: "BLPOP q2 q 0",
		kept:  []check{{"RPUSH q kept", integer(1)}, {"LRANGE q 0 -1", array(bulk("kept"))}},
	})

	// A waiter with commands pipelined behind its BLPOP is no longer read
	// (its input waits in the socket), yet its disconnect is noticed.
	piped := bt.block(1, "BLPOP q4 0")
	piped.send(bytes.Repeat(encode("PING"), 1000))
	waitFor(t, 10*time.Second, "the pipelined input to be held", func() bool {
		return infoInt(t, bt.admin, "stats", "held_input_bytes") > 0
	})
	piped.c.Close()
	bt.blocked(0)
	bt.expect(check{"RPUSH q4 kept", integer(1)}, check{"LLEN q4", integer(1)})

	// CLIENT KILL ends a blocked client without a reply.
	bt.clientKill("BLPOP q3 0", `id=(\d+) [^\n]*flags=b`, check{"RPUSH q3 kept", integer(1)}, check{"LLEN q3", integer(1)})
}

// An expired list is absent before and while waiting; a key that
// expires while a client waits is recreated by a push and served.
func TestBlockingTTL(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t, lazyExpiry)
	bt.expiredKey("RPUSH k phantom", "BLPOP k 0.05",
		wakeCase{block: "BLPOP k 0", cmd: "RPUSH k fresh", reply: integer(1), woken: popReply("k", "fresh")})

	// While a client waits on k, k becomes a string with a TTL: pushes are
	// refused and the waiter keeps waiting; once the string expired, a
	// push recreates k as a list and the waiter gets that element.
	b := bt.block(1, "BLPOP k 0")
	bt.expect(check{"SET k str PX 100", status("OK")},
		check{"RPUSH k refused", errr(wrongType)})
	bt.expectClients("blocked_clients", 1, "while k is a string")
	at := time.Now().Add(100 * time.Millisecond).UnixMilli()
	waitFor(t, 5*time.Second, "the string's expiry to pass", func() bool { return time.Now().UnixMilli() > at+2 })
	bt.expect(check{"RPUSH k after", integer(1)})
	expectWoken(b, popReply("k", "after"), "the waiter")
	bt.expect(check{"TTL k", integer(-2)})
}

// Blocking state is not persisted; clients re-issue after a restart.
func TestBlockingRestart(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	needCellar(t, bt.s)
	bt.expect(check{"RPUSH other kept", integer(1)})
	b := bt.block(1, "BLPOP q 0")
	bt.s.restart()
	b.expectClosed()
	bt.admin, bt.r = bt.s.client(), bt.s.raw()
	bt.expectClients("blocked_clients", 0, "after a restart")
	bt.expect(check{"RPUSH q x", integer(1)}, check{"LLEN q", integer(1)}) // nobody was waiting for it any more
	bt.wake(wakeCase{block: "BLPOP q2 0", cmd: "RPUSH q2 y", reply: integer(1), woken: popReply("q2", "y"),
		then: []check{{"LRANGE other 0 -1", array(bulk("kept"))}}})
}

// Many pushers and many blocking consumers: every element is
// delivered exactly once and the lists end empty.
func TestBlockingConcurrency(t *testing.T) {
	t.Parallel()
	newBlockingTest(t).concurrently(concurrentLoad{
		producers: 4, perProducer: 400, consumers: 8,
		produce: func(c *redis.Client, key, v string, j int) error {
			if j%2 == 0 {
				return c.RPush(ctx, key, v).Err()
			}
			return c.LPush(ctx, key, v).Err()
		},
		// go-redis sends blocking timeouts in whole seconds (a shorter one
		// is logged and rounded up), so the consumers wait 1 s at most.
		consume: func(c *redis.Client, i int) ([]string, error) {
			switch i % 4 {
			case 0:
				kv, err := c.BLPop(ctx, time.Second, "qa", "qb").Result()
				if len(kv) == 2 {
					return kv[1:], err
				}
				return nil, err
			case 1:
				kv, err := c.BRPop(ctx, time.Second, "qb", "qa").Result()
				if len(kv) == 2 {
					return kv[1:], err
				}
				return nil, err
			case 2:
				_, vals, err := c.BLMPop(ctx, time.Second, "left", 3, "qa", "qb").Result()
				return vals, err
			}
			vals, err := c.LPopCount(ctx, "qa", 2).Result()
			if err == redis.Nil {
				vals, err = c.RPopCount(ctx, "qb", 2).Result()
			}
			return vals, err
		},
		keys:   []string{"qa", "qb"},
		left:   func(c *redis.Client, key string) int64 { return c.LLen(ctx, key).Val() },
		within: 30 * time.Second,
	})
}

// BLMOVE chains: each move wakes the waiter on its destination in the same
// step; a destination of the wrong type answers WRONGTYPE and leaves the
// element where it was.
func TestBlockingMoveChain(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	ab := bt.block(1, "BLMOVE a b LEFT RIGHT 0")
	bc := bt.block(2, "BRPOPLPUSH b c 0")
	cd := bt.block(3, "BLMOVE c d RIGHT LEFT 0")
	end := bt.block(4, "BLPOP d 0")
	bt.expect(check{"RPUSH a x", integer(1)})
	for i, c := range []*rawConn{ab, bc, cd} {
		expectWoken(c, bulk("x"), fmt.Sprintf("mover %d", i))
	}
	expectWoken(end, popReply("d", "x"), "the end of the chain")
	bt.expect(check{"EXISTS a b c d", integer(0)})

	// A rotation onto itself.
	bt.wake(wakeCase{block: "BLMOVE ring ring LEFT RIGHT 0", cmd: "RPUSH ring r1", reply: integer(1), woken: bulk("r1"),
		then: []check{{"LRANGE ring 0 -1", array(bulk("r1"))}}})

	wrong := bt.block(1, "BLMOVE src str LEFT RIGHT 0")
	bt.expect(check{"SET str v", status("OK")}, check{"RPUSH src stays", integer(1)})
	expectWoken(wrong, errr(wrongType), "BLMOVE to a string")
	bt.expect(check{"LRANGE src 0 -1", array(bulk("stays"))})

	// BLMPOP takes up to its count.
	bt.wake(wakeCase{block: "BLMPOP 0 2 m1 m2 RIGHT COUNT 2", cmd: "RPUSH m2 1 2 3", reply: integer(3),
		woken: array(bulk("m2"), array(bulk("3"), bulk("2"))), then: []check{{"LRANGE m2 0 -1", array(bulk("1"))}}})
}

// Keyspace commands that bring a list to a watched key wake its waiters.
func TestBlockingWokenByKeyspaceCommands(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	for _, c := range []struct{ setup, cmd, want, elem string }{
		{"RPUSH src renamed", "RENAME src w", status("OK"), "renamed"},
		{"RPUSH src copied", "COPY src w", integer(1), "copied"},
		{"LPUSH src moved", "LMOVE src w LEFT RIGHT", bulk("moved"), "moved"},
		{"LPUSH src pivot", "RPOPLPUSH src w", bulk("pivot"), "pivot"},
	} {
		bt.r.do("DEL", "src", "w")
		bt.expect(check{c.setup, integer(1)})
		bt.wake(wakeCase{block: "BLPOP w 0", cmd: c.cmd, reply: c.want, woken: popReply("w", c.elem)})
	}
	bt.expect(check{"SELECT 1", status("OK")}, check{"RPUSH w from-db1", integer(1)})
	bt.wake(wakeCase{block: "BLPOP w 0", cmd: "MOVE w 0", reply: integer(1), woken: popReply("w", "from-db1")})
}

// The push, the wake and the pop are one step: a pipelined LPOP right
// after the push finds nothing, the waiter has the element.
func TestBlockingNoStealing(t *testing.T) {
	t.Parallel()
	newBlockingTest(t).noStealing(wakeCase{block: "BLPOP q 0", cmd: "RPUSH q x", reply: integer(1), woken: popReply("q", "x")},
		"LPOP q", nullBulk)
}

// Commands pipelined before and after a blocking command get their replies
// in order once it completes.
func TestBlockingInPipeline(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	b := bt.s.raw()
	b.send(append(append(encode("SET", "a", "1"), encode("BLPOP", "q", "0")...), encode("GET", "a")...))
	bt.blocked(1)
	bt.expect(check{"RPUSH q x", integer(1)})
	for _, want := range []string{status("OK"), popReply("q", "x"), bulk("1")} {
		expectWoken(b, want, "the pipeline")
	}
}

// CLIENT UNBLOCK ends a blocked command as a timeout or an error; the
// unblocked client gets no element afterwards.
func TestClientUnblock(t *testing.T) {
	t.Parallel()
	blmove := "BLMOVE q dst LEFT RIGHT 0"
	newBlockingTest(t).clientUnblock([]unblockCase{
		{blmove, nil, nullArray},
		{blmove, []string{"TIMEOUT"}, nullArray},
		{blmove, []string{"ERROR"}, errr("UNBLOCKED client unblocked via CLIENT UNBLOCK")},
	}, check{"RPUSH q kept", integer(1)}, check{"LLEN q", integer(1)}, check{"EXISTS dst", integer(0)})
}

// Limits (blocking.*): over each, "ERR too many blocked clients"; under
// them again, blocking works.
func TestBlockingLimits(t *testing.T) {
	t.Parallel()
	bt := newLimitsTest(t, 3, "BLPOP a b c 0", "BLMPOP 0 3 a b c LEFT")
	// Repeated keys count once.
	ab := bt.block(1, "BLPOP a b a b 0")
	a2 := bt.block(2, "BLPOP a 0")
	bt.refused("BLPOP a 0", "BRPOP c a 0")
	c1 := bt.block(3, "BLPOP c 0")
	bt.refused("BLPOP d 0")
	// A refused command blocks nothing and leaves nothing queued.
	bt.expectClients("blocked_clients", 3, "at the limit")
	bt.expect(check{"RPUSH a 1 2", integer(2)})
	expectWoken(ab, popReply("a", "1"), "the first waiter")
	expectWoken(a2, popReply("a", "2"), "the second waiter")
	// Below the limits again.
	d := bt.block(2, "BLPOP d 0")
	bt.expect(check{"RPUSH d x", integer(1)})
	d.read()
	bt.expect(check{"RPUSH c y", integer(1)})
	c1.read()
	// The limits can be changed at run time.
	bt.expect(check{"CONFIG GET blocking-max-total-waiters", array(bulk("blocking-max-total-waiters"), bulk("3"))},
		check{"CONFIG SET blocking-max-total-waiters 1", status("OK")})
	b1 := bt.block(1, "BLPOP e 0")
	bt.refused("BLPOP f 0")
	bt.expect(check{"CONFIG SET blocking-max-total-waiters 0",
		errr("ERR CONFIG SET failed (possibly related to argument 'blocking-max-total-waiters') - argument must be a positive integer")})
	bt.expect(check{"RPUSH e z", integer(1)})
	b1.read()
}

// INFO and CLIENT LIST show blocked clients.
func TestBlockingIntrospection(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	b := bt.block(1, "BRPOP q 100")
	bt.expectClients("clients_in_timeout_table", 1, "for a waiter with a timeout")
	list := bt.r.do("CLIENT", "LIST")
	if !regexp.MustCompile(`flags=b db=0 .* cmd=brpop `).MatchString(list) {
		t.Fatalf("CLIENT LIST does not show the blocked client:\n%s", list)
	}
	if n := strings.Count(list, "flags=b"); n != 1 {
		t.Fatalf("%d clients flagged blocked:\n%s", n, list)
	}
	bt.expect(check{"RPUSH q x", integer(1)})
	b.read()
	bt.expectClients("clients_in_timeout_table", 0, "after the wake")
}

// With durability "always", a woken waiter's reply waits for the fsync
// that covers its pop, like any write's.
func TestBlockingDurabilityAlways(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t, durabilityAlways)
	needCellar(t, bt.s)
	got := bt.fsyncCovers(repeat("BLPOP q 0", 5), "RPUSH q 0 1 2 3 4", integer(5))
	sort.Strings(got)
	for i, g := range got {
		if g != popReply("q", strconv.Itoa(i)) {
			t.Fatalf("waiter replies %q", got)
		}
	}
}
