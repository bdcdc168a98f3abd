package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// XREAD BLOCK and XREADGROUP BLOCK over the wire: the cases of the list
// blocking tests (blocking_test.go's shared scenarios), plus what only
// streams have: a reader that does not consume (every XREAD waiter gets
// the entry), a group that hands each entry to exactly one consumer, and
// waiters told that their stream or group is gone.

// entry is a RESP2 stream entry [id, [field, value]].
func entry(id, field, value string) string {
	return array(bulk(id), array(bulk(field), bulk(value)))
}

// streamRead is a RESP2 XREAD/XREADGROUP reply for one stream.
func streamRead(key string, entries ...string) string {
	return array(array(bulk(key), array(entries...)))
}

// A blocked XREAD returns after an XADD with the new entries; a blocked
// XREADGROUP too, and the entry is then pending for its consumer.
func TestXReadBlockHappyPath(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.servedAfterPush(
		wakeCase{block: "XREAD BLOCK 0 STREAMS s $", cmd: "XADD s 1-0 f v", reply: bulk("1-0"), woken: streamRead("s", entry("1-0", "f", "v"))},
		wakeCase{block: "XREAD BLOCK 0 STREAMS s 1-0", cmd: "XADD s 2-0 f w", reply: bulk("2-0"), woken: streamRead("s", entry("2-0", "f", "w"))},
	)
	bt.expect(check{"XGROUP CREATE g g $ MKSTREAM", status("OK")})
	bt.servedAfterPush(wakeCase{block: "XREADGROUP GROUP g alice BLOCK 0 STREAMS g >", cmd: "XADD g 5-0 f x", reply: bulk("5-0"),
		woken: streamRead("g", entry("5-0", "f", "x")),
		then: []check{{"XPENDING g g", array(integer(1), bulk("5-0"), bulk("5-0"), array(array(bulk("alice"), bulk("1"))))},
			{"XINFO GROUPS g", array(array(bulk("name"), bulk("g"), bulk("consumers"), integer(1), bulk("pending"), integer(1),
				bulk("last-delivered-id"), bulk("5-0"), bulk("entries-read"), integer(1), bulk("lag"), integer(0)))}}})
	// Entries already there answer at once.
	bt.expect(check{"XREAD BLOCK 0 STREAMS s 0", streamRead("s", entry("1-0", "f", "v"), entry("2-0", "f", "w"))},
		check{"XADD g 6-0 f y", bulk("6-0")},
		check{"XREADGROUP GROUP g bob BLOCK 0 STREAMS g >", streamRead("g", entry("6-0", "f", "y"))})
}

// Timeouts in milliseconds, both protocols; BLOCK 0 waits until an XADD.
func TestXReadBlockTimeouts(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.expect(check{"XGROUP CREATE q g $ MKSTREAM", status("OK")})
	bt.timeouts(timeouts{
		nulls: []check{{"XREAD BLOCK 50 STREAMS none $", nullArray}, {"XREAD BLOCK 1 STREAMS none none2 0 0", nullArray},
			{"XREADGROUP GROUP g c BLOCK 20 STREAMS q >", nullArray}, {"EXISTS none none2", integer(0)}},
		resp3:   []string{"XREAD BLOCK 30 STREAMS none $", "XREADGROUP GROUP g c BLOCK 10 STREAMS q >"},
		short:   "XREAD BLOCK 50 STREAMS other $",
		forever: wakeCase{block: "XREAD BLOCK 0 STREAMS s $", cmd: "XADD s 1-0 f v", reply: bulk("1-0"), woken: "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n" + entry("1-0", "f", "v")},
	})
}

// Keys are scanned in the order given.
func TestXReadBlockMultiKeyOrder(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.wake(wakeCase{block: "XREAD BLOCK 0 STREAMS k1 k2 $ $", cmd: "XADD k2 1-0 f v", reply: bulk("1-0"), woken: streamRead("k2", entry("1-0", "f", "v"))})
	bt.expect(check{"XADD k1 1-0 f w", bulk("1-0")},
		check{"XREAD BLOCK 0 STREAMS k1 k2 0 0", array(array(bulk("k1"), array(entry("1-0", "f", "w"))), array(bulk("k2"), array(entry("1-0", "f", "v"))))})
}

// XREAD waiters read without consuming: one XADD serves every one of
// them. XREADGROUP waiters of one group consume: each entry goes to the
// oldest waiter, exactly one, and the others keep waiting.
func TestXReadBlockFIFO(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.fifo(repeat("XREAD BLOCK 0 STREAMS r $", 3),
		serve{"XADD r 1-0 f v", bulk("1-0"), repeat(streamRead("r", entry("1-0", "f", "v")), 3)})

	bt.expect(check{"XGROUP CREATE q g $ MKSTREAM", status("OK")})
	bt.fifo([]string{"XREADGROUP GROUP g c1 BLOCK 0 STREAMS q >", "XREADGROUP GROUP g c2 BLOCK 0 STREAMS q >", "XREADGROUP GROUP g c3 BLOCK 0 COUNT 5 STREAMS q >"},
		serve{"XADD q 1-0 f a", bulk("1-0"), []string{streamRead("q", entry("1-0", "f", "a"))}},
		serve{"XADD q 2-0 f b", bulk("2-0"), []string{streamRead("q", entry("2-0", "f", "b"))}},
		serve{"XADD q 3-0 f c", bulk("3-0"), []string{streamRead("q", entry("3-0", "f", "c"))}})
	bt.expect(check{"XPENDING q g", array(integer(3), bulk("1-0"), bulk("3-0"),
		array(array(bulk("c1"), bulk("1")), array(bulk("c2"), bulk("1")), array(bulk("c3"), bulk("1"))))})

	// Two groups on one stream each get the entry, once.
	bt.expect(check{"XGROUP CREATE q h $", status("OK")})
	bt.fifo([]string{"XREADGROUP GROUP g x BLOCK 0 STREAMS q >", "XREADGROUP GROUP h y BLOCK 0 STREAMS q >", "XREADGROUP GROUP g z BLOCK 0 STREAMS q >"},
		serve{"XADD q 4-0 f d", bulk("4-0"), []string{streamRead("q", entry("4-0", "f", "d")), streamRead("q", entry("4-0", "f", "d"))}},
		serve{"XADD q 5-0 f e", bulk("5-0"), []string{streamRead("q", entry("5-0", "f", "e"))}})
}

// A client that disconnects while blocked gets nothing and loses nothing:
// the next waiter gets the entry, and the PEL names it.
func TestXReadGroupBlockDisconnect(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.expect(check{"XGROUP CREATE q g $ MKSTREAM", status("OK")})
	bt.disconnect(disconnect{
		block: "XREADGROUP GROUP g c BLOCK 0 STREAMS q >",
		serve: serve{"XADD q 1-0 f v", bulk("1-0"), []string{streamRead("q", entry("1-0", "f", "v"))}},
		alone: "XREADGROUP GROUP g gone BLOCK 0 STREAMS q >",
		kept: []check{{"XADD q 2-0 f w", bulk("2-0")}, {"XPENDING q g", array(integer(1), bulk("1-0"), bulk("1-0"), array(array(bulk("c"), bulk("1"))))},
			{"XREADGROUP GROUP g next STREAMS q >", streamRead("q", entry("2-0", "f", "w"))}},
	})
	bt.clientKill("XREADGROUP GROUP g k BLOCK 0 STREAMS q >", `id=(\d+) [^\n]*flags=b [^\n]*cmd=xreadgroup `,
		check{"XADD q 3-0 f x", bulk("3-0")},
		check{"XPENDING q g", array(integer(2), bulk("1-0"), bulk("2-0"), array(array(bulk("c"), bulk("1")), array(bulk("next"), bulk("1"))))})
}

// CLIENT UNBLOCK ends a stream waiter as a timeout or with the UNBLOCKED
// error; nothing is delivered to it.
func TestXReadBlockClientUnblock(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.expect(check{"XGROUP CREATE q g $ MKSTREAM", status("OK")})
	bt.clientUnblock([]unblockCase{
		{"XREAD BLOCK 0 STREAMS q $", nil, nullArray},
		{"XREADGROUP GROUP g c BLOCK 0 STREAMS q >", []string{"TIMEOUT"}, nullArray},
		{"XREADGROUP GROUP g c BLOCK 0 STREAMS q >", []string{"ERROR"}, errr("UNBLOCKED client unblocked via CLIENT UNBLOCK")},
	}, check{"XPENDING q g", array(integer(0), "$-1\r\n", "$-1\r\n", nullArray)})
}

// A stream deleted, overwritten, renamed away or whose group is destroyed
// answers its XREADGROUP waiters with Redis's errors; XREAD waiters keep
// waiting and are served by the stream made anew.
func TestXReadGroupBlockStreamGone(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	gone := errr("UNBLOCKED the stream key no longer exists")
	for _, c := range []struct{ kill, want string }{
		{"DEL q", gone}, {"SET q x", gone}, {"RENAME q q2", gone}, {"XGROUP DESTROY q g", errr("NOGROUP the consumer group this client was blocked on no longer exists")},
	} {
		bt.r.do("DEL", "q", "q2")
		bt.expect(check{"XGROUP CREATE q g $ MKSTREAM", status("OK")})
		reader := bt.block(1, "XREAD BLOCK 0 STREAMS q 0")
		b := bt.block(2, "XREADGROUP GROUP g c BLOCK 0 STREAMS q >")
		bt.r.do(strings.Fields(c.kill)...)
		expectWoken(b, c.want, "the group reader after "+c.kill)
		bt.blocked(1)
		bt.r.do("DEL", "q")
		bt.expect(check{"XADD q 1-0 f v", bulk("1-0")})
		expectWoken(reader, streamRead("q", entry("1-0", "f", "v")), "the XREAD waiter after "+c.kill)
		bt.blocked(0)
	}
	// An expired stream too: its TTL is set once the reader is blocked (on
	// a busy machine 30 ms could pass before the reader blocked, and a
	// stream already gone answers NOGROUP at once).
	bt.r.do("DEL", "q")
	bt.expect(check{"XGROUP CREATE q g $ MKSTREAM", status("OK")})
	b := bt.block(1, "XREADGROUP GROUP g c BLOCK 0 STREAMS q >")
	bt.expect(check{"PEXPIRE q 30", integer(1)})
	waitFor(t, 5*time.Second, "the stream to expire", func() bool { return bt.r.do("EXISTS", "q") == integer(0) })
	expectWoken(b, gone, "the group reader of an expired stream")
}

// The write, the wake and the delivery are one step: an XREADGROUP
// pipelined right after the XADD that serves a waiter finds nothing.
func TestXReadGroupBlockNoStealing(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.expect(check{"XGROUP CREATE q g $ MKSTREAM", status("OK")})
	bt.noStealing(wakeCase{block: "XREADGROUP GROUP g c BLOCK 0 STREAMS q >", cmd: "XADD q 1-0 f v", reply: bulk("1-0"), woken: streamRead("q", entry("1-0", "f", "v"))},
		"XREADGROUP GROUP g thief STREAMS q >", nullArray)
}

// The blocking limits apply to stream waiters.
func TestXReadBlockLimits(t *testing.T) {
	t.Parallel()
	bt := newLimitsTest(t, 0, "XREAD BLOCK 0 STREAMS a b c 0 0 0")
	bt.block(1, "XREAD BLOCK 0 STREAMS k $")
	bt.block(2, "XREAD BLOCK 0 STREAMS k $")
	bt.refused("XREAD BLOCK 0 STREAMS k $")
	bt.expect(check{"XGROUP CREATE k g $ MKSTREAM", status("OK")})
	bt.refused("XREADGROUP GROUP g c BLOCK 0 STREAMS k >")
}

// Four producers XADD to two streams while four consumers XREADGROUP BLOCK
// from one group and XACK what they get: every entry is delivered exactly
// once and nothing stays pending.
func TestXReadGroupBlockConcurrency(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	for _, k := range []string{"k1", "k2"} {
		bt.expect(check{"XGROUP CREATE " + k + " g $ MKSTREAM", status("OK")})
	}
	bt.concurrently(concurrentLoad{
		producers: 4, perProducer: 250, consumers: 4, keys: []string{"k1", "k2"}, within: 60 * time.Second,
		produce: func(c *redis.Client, key, item string, _ int) error {
			return c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"item", item}}).Err()
		},
		consume: func(c *redis.Client, i int) ([]string, error) {
			res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: fmt.Sprint("c", i),
				Streams: []string{"k1", "k2", ">", ">"}, Count: 10, Block: time.Second}).Result()
			if err != nil {
				return nil, err
			}
			var items []string
			for _, st := range res {
				var ids []string
				for _, m := range st.Messages {
					items = append(items, m.Values["item"].(string))
					ids = append(ids, m.ID)
				}
				if err := c.XAck(ctx, st.Stream, "g", ids...).Err(); err != nil {
					return nil, err
				}
			}
			return items, nil
		},
		left: func(c *redis.Client, key string) int64 {
			p, err := c.XPending(ctx, key, "g").Result()
			if err != nil {
				return -1
			}
			return p.Count
		},
	})
}

// With durability "always", woken readers get their entries after an
// fsync that covers the XADD and the group's deliveries.
func TestXReadGroupBlockDurabilityAlways(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t, durabilityAlways)
	needCellar(t, bt.s)
	bt.expect(check{"XGROUP CREATE q g $ MKSTREAM", status("OK")})
	got := bt.fsyncCovers([]string{"XREADGROUP GROUP g a BLOCK 0 STREAMS q >", "XREAD BLOCK 0 STREAMS q $"}, "XADD q 1-0 f v", bulk("1-0"))
	for i, g := range got {
		if want := streamRead("q", entry("1-0", "f", "v")); g != want {
			t.Fatalf("waiter %d got %q, want %q", i, g, want)
		}
	}
}

// A stream that expires while a client waits with XREAD is gone for it
// (the XREAD times out), and a new stream of that name serves a new
// waiter from its first entry.
func TestXReadBlockTTL(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t, lazyExpiry)
	bt.expect(check{"XADD k 1-0 f phantom", bulk("1-0")})
	at := time.Now().Add(50 * time.Millisecond).UnixMilli()
	bt.r.expect(integer(1), "PEXPIREAT", "k", fmt.Sprint(at))
	waitFor(t, 5*time.Second, "the key's expiry to pass", func() bool { return time.Now().UnixMilli() > at+2 })
	bt.expect(check{"XREAD BLOCK 50 STREAMS k 0", nullArray})
	bt.wake(wakeCase{block: "XREAD BLOCK 0 STREAMS k 0", cmd: "XADD k 2-0 f fresh", reply: bulk("2-0"), woken: streamRead("k", entry("2-0", "f", "fresh")),
		then: []check{{"TTL k", integer(-1)}, {"XLEN k", integer(1)}}})
}

// Blocking state is not persisted: after a restart the client re-issues
// its XREADGROUP, and the group, which is persisted, goes on where it was.
func TestXReadGroupBlockRestart(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	needCellar(t, bt.s)
	bt.expect(check{"XGROUP CREATE q g $ MKSTREAM", status("OK")})
	bt.block(1, "XREADGROUP GROUP g c BLOCK 0 STREAMS q >")
	bt.s.restart()
	r := bt.s.raw()
	r.expect(bulk("1-0"), "XADD", "q", "1-0", "f", "v")
	r.expect(array(integer(0), "$-1\r\n", "$-1\r\n", nullArray), "XPENDING", "q", "g")
	r.expect(streamRead("q", entry("1-0", "f", "v")), "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "q", ">")
}
