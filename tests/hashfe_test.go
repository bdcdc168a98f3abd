package tests

import (
	"strconv"
	"testing"
	"time"
)

// Hash field expiration: Redis 7.4's HEXPIRE family. The redis-server the
// suite compares with is 7.0, which has none of these commands, so the
// expected replies are written out here, from Redis 7.4's documentation
// and source (t_hash.c): per field -2 (no such field, or no key), 0 (NX,
// XX, GT or LT held it back), 1 (set; HPERSIST: removed), 2 (deleted: the
// time was not in the future); HTTL's -1 for a field without expiry.

func ints(ns ...int64) string {
	items := make([]string, len(ns))
	for i, n := range ns {
		items[i] = integer(n)
	}
	return array(items...)
}

func TestHashFieldExpiryReplies(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.raw()
	far := strconv.FormatInt(time.Now().Add(24*time.Hour).Unix(), 10)
	farMs := strconv.FormatInt(time.Now().Add(48*time.Hour).UnixMilli(), 10)
	c.expect(integer(3), "HSET", "h", "a", "1", "b", "2", "c", "3")

	// Missing key: -2 for every field.
	c.expect(ints(-2, -2), "HEXPIRE", "nokey", "100", "FIELDS", "2", "a", "b")
	c.expect(ints(-2), "HTTL", "nokey", "FIELDS", "1", "a")
	c.expect(ints(-2), "HPERSIST", "nokey", "FIELDS", "1", "a")

	// Set, read back, conditions.
	c.expect(ints(1, -2), "HEXPIREAT", "h", far, "FIELDS", "2", "a", "nope")
	c.expect(ints(mustInt(t, far), -1, -2), "HEXPIRETIME", "h", "FIELDS", "3", "a", "b", "nope")
	c.expect(ints(mustInt(t, far)*1000, -1), "HPEXPIRETIME", "h", "FIELDS", "2", "a", "b")
	c.expect(ints(0, 1), "HEXPIREAT", "h", far, "NX", "FIELDS", "2", "a", "b")
	c.expect(ints(1, 0), "HPEXPIREAT", "h", farMs, "XX", "FIELDS", "2", "a", "c")
	c.expect(ints(mustInt(t, farMs)), "HPEXPIRETIME", "h", "FIELDS", "1", "a")
	c.expect(ints(0, 0), "HEXPIREAT", "h", far, "GT", "FIELDS", "2", "a", "c")
	c.expect(ints(1, 1), "HEXPIREAT", "h", far, "LT", "FIELDS", "2", "a", "c")
	c.expect(ints(1), "HEXPIRE", "h", "100", "FIELDS", "1", "c")
	c.expect(ints(100, -2), "HTTL", "h", "FIELDS", "2", "c", "nope")
	c.expect(integer(1), "HSET", "h", "d", "4")
	c.expect(ints(1, -1, -2), "HPERSIST", "h", "FIELDS", "3", "a", "d", "y")
	c.expect(integer(1), "HDEL", "h", "d")
	c.expect(ints(-1), "HTTL", "h", "FIELDS", "1", "a")

	// HSET drops a field's expiry; HINCRBY keeps it.
	c.expect(ints(1, 1), "HEXPIRE", "h", "100", "FIELDS", "2", "a", "b")
	c.expect(integer(0), "HSET", "h", "a", "10")
	c.expect(integer(3), "HINCRBY", "h", "b", "1")
	c.expect(ints(-1, 100), "HTTL", "h", "FIELDS", "2", "a", "b")

	// A time not in the future deletes the field; the last one, the key.
	c.expect(ints(2), "HEXPIRE", "h", "0", "FIELDS", "1", "a")
	c.expect(ints(2), "HPEXPIREAT", "h", "1", "FIELDS", "1", "b")
	c.expect(integer(1), "HLEN", "h")
	c.expect(ints(2), "HEXPIREAT", "h", "0", "FIELDS", "1", "c")
	c.expect(integer(0), "EXISTS", "h")

	// Errors, in Redis 7.4's order and words.
	c.expect(integer(1), "HSET", "h", "a", "1")
	c.expect(errr("ERR wrong number of arguments for 'hexpire' command"), "HEXPIRE", "h", "10", "FIELDS", "1")
	c.expect(errr("ERR wrong number of arguments for 'httl' command"), "HTTL", "h", "FIELDS", "1")
	c.expect(errr("ERR value is not an integer or out of range"), "HEXPIRE", "h", "ten", "FIELDS", "1", "a")
	c.expect(errr("ERR invalid expire time, must be >= 0"), "HEXPIRE", "h", "-1", "FIELDS", "1", "a")
	c.expect(errr("ERR invalid expire time in 'hexpire' command"), "HEXPIRE", "h", "70368744177", "FIELDS", "1", "a")
	c.expect(errr("ERR invalid expire time in 'hpexpireat' command"), "HPEXPIREAT", "h", "70368744177664", "FIELDS", "1", "a")
	c.expect(errr("ERR Mandatory argument FIELDS is missing or not at the right position"), "HEXPIRE", "h", "10", "FIELD", "1", "a")
	c.expect(errr("ERR Mandatory argument FIELDS is missing or not at the right position"), "HEXPIRE", "h", "10", "XX", "NX", "FIELDS", "1", "a")
	c.expect(errr("ERR Parameter `numFields` should be greater than 0"), "HEXPIRE", "h", "10", "FIELDS", "0", "a")
	c.expect(errr("ERR Parameter `numFields` should be greater than 0"), "HEXPIRE", "h", "10", "NX", "FIELDS", "x", "a")
	c.expect(errr("ERR The `numfields` parameter must match the number of arguments"), "HEXPIRE", "h", "10", "FIELDS", "2", "a")
	c.expect(errr("ERR Number of fields must be a positive integer"), "HTTL", "h", "FIELDS", "-1", "a")
	c.expect(errr("ERR The `numfields` parameter must match the number of arguments"), "HPERSIST", "h", "FIELDS", "1", "a", "b")
	c.expect(errr("ERR Mandatory argument FIELDS is missing or not at the right position"), "HPTTL", "h", "fieldz", "1", "a")
	c.expect(status("OK"), "SET", "str", "x")
	c.expect(errr("WRONGTYPE Operation against a key holding the wrong kind of value"), "HEXPIRE", "str", "x", "FIELDS", "1", "a")
	c.expect(errr("WRONGTYPE Operation against a key holding the wrong kind of value"), "HTTL", "str", "FIELDS", "0", "a")

	// COMMAND INFO knows them (from cmdgen/extra).
	c.expect(array(array(bulk("hpersist"), integer(-5), array(status("write"), status("fast")), integer(1), integer(1), integer(1),
		array(status("@write"), status("@hash"), status("@fast")), array(), array(array(bulk("flags"), array(status("RW"), status("update")),
			bulk("begin_search"), array(bulk("type"), bulk("index"), bulk("spec"), array(bulk("index"), integer(1))),
			bulk("find_keys"), array(bulk("type"), bulk("range"), bulk("spec"), array(bulk("lastkey"), integer(0), bulk("keystep"), integer(1), bulk("limit"), integer(0))))),
		array())), "COMMAND", "INFO", "hpersist")
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// An expired field is gone for every hash command, before the sweep gets
// to it; the sweep removes the rest and deletes a hash it empties, with
// Redis 7.4's events ("hexpired", then "del").
func TestHashFieldExpiryHidesAndSweeps(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.raw()
	c.expect(integer(3), "HSET", "h", "a", "1", "b", "2", "c", "3")
	c.expect(ints(1), "HPEXPIRE", "h", "1", "FIELDS", "1", "a")
	waitFor(t, 10*time.Second, "field a to expire", func() bool {
		return c.do("HTTL", "h", "FIELDS", "1", "a") == ints(-2)
	})
	c.expect("$-1\r\n", "HGET", "h", "a")
	c.expect(integer(0), "HEXISTS", "h", "a")
	c.expect(integer(2), "HLEN", "h")
	c.expect(array(bulk("b"), bulk("2"), bulk("c"), bulk("3")), "HGETALL", "h")
	c.expect(array(bulk("b"), bulk("c")), "HKEYS", "h")

	// Active expiry: nobody reads the hash, the sweep empties and deletes
	// it. EXISTS does not look at fields (as in Redis 7.4).
	sub := s.raw()
	c.expect(status("OK"), "CONFIG", "SET", "notify-keyspace-events", "KEhg")
	sub.expect(push(2, 1, "psubscribe", "__keyevent@0__:*"), "PSUBSCRIBE", "__keyevent@0__:*")
	c.expect(integer(2), "HSET", "gone", "x", "1", "y", "2")
	expectRead(t, sub, push(2, -1, "pmessage", "__keyevent@0__:*", "__keyevent@0__:hset", "gone"))
	c.expect(ints(1, 1), "HPEXPIRE", "gone", "1", "FIELDS", "2", "x", "y")
	// Redis 7.4.5 names the event "hexpire" whichever command set it.
	expectRead(t, sub, push(2, -1, "pmessage", "__keyevent@0__:*", "__keyevent@0__:hexpire", "gone"))
	waitFor(t, 10*time.Second, "the sweep to delete the emptied hash", func() bool {
		return c.do("EXISTS", "gone") == integer(0)
	})
	expectRead(t, sub, push(2, -1, "pmessage", "__keyevent@0__:*", "__keyevent@0__:hexpired", "gone"))
	expectRead(t, sub, push(2, -1, "pmessage", "__keyevent@0__:*", "__keyevent@0__:del", "gone"))

	// The commands' own events, as Redis 7.4.5's hashTypeSetExDone sends
	// them: "hdel" when a past time deleted fields (and "del" when that
	// emptied the hash), else "hexpire"; HPERSIST "hpersist".
	ev := func(name, key string) string {
		return push(2, -1, "pmessage", "__keyevent@0__:*", "__keyevent@0__:"+name, key)
	}
	c.expect(integer(3), "HSET", "e", "x", "1", "y", "2", "z", "3")
	expectRead(t, sub, ev("hset", "e"))
	c.expect(ints(1, -2), "HPEXPIREAT", "e", "60000000000000", "FIELDS", "2", "x", "nope")
	expectRead(t, sub, ev("hexpire", "e"))
	c.expect(ints(1), "HPERSIST", "e", "FIELDS", "1", "x")
	expectRead(t, sub, ev("hpersist", "e"))
	c.expect(ints(2, -2), "HEXPIREAT", "e", "0", "FIELDS", "2", "x", "nope")
	expectRead(t, sub, ev("hdel", "e"))
	c.expect(ints(2, 2), "HEXPIRE", "e", "0", "FIELDS", "2", "y", "z")
	expectRead(t, sub, ev("hdel", "e"))
	expectRead(t, sub, ev("del", "e"))
}

// A watched hash whose field expires is a changed key: EXEC fails.
func TestHashFieldExpiryTouchesWatch(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, other := s.raw(), s.raw()
	c.expect(integer(2), "HSET", "h", "a", "1", "b", "2")
	c.expect(ints(1), "HPEXPIRE", "h", "1", "FIELDS", "1", "a")
	c.expect(status("OK"), "WATCH", "h")
	// Another client's look at the hash finds the field expired.
	waitFor(t, 10*time.Second, "field a to expire", func() bool {
		return other.do("HGET", "h", "a") == "$-1\r\n"
	})
	c.expect(status("OK"), "MULTI")
	c.expect(status("QUEUED"), "HSET", "h", "c", "3")
	c.expect("*-1\r\n", "EXEC")
	c.expect(array(bulk("b")), "HKEYS", "h")
}

// Field expiries survive a restart (and the redo log's replay), as
// absolute times.
func TestHashFieldExpiryRestart(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.raw()
	at := time.Now().Add(time.Hour).UnixMilli()
	c.expect(integer(3), "HSET", "h", "a", "1", "b", "2", "c", "3")
	c.expect(ints(1), "HPEXPIREAT", "h", strconv.FormatInt(at, 10), "FIELDS", "1", "a")
	c.expect(ints(1), "HEXPIRE", "h", "7200", "FIELDS", "1", "b")
	bAt := c.do("HPEXPIRETIME", "h", "FIELDS", "1", "b")
	c.expect(ints(1), "HPEXPIRE", "h", "1", "FIELDS", "1", "c")
	waitFor(t, 10*time.Second, "field c to expire", func() bool {
		return c.do("HTTL", "h", "FIELDS", "1", "c") == ints(-2)
	})
	s.restart()
	c = s.raw()
	c.expect(ints(at, -2), "HPEXPIRETIME", "h", "FIELDS", "2", "a", "c")
	c.expect(bAt, "HPEXPIRETIME", "h", "FIELDS", "1", "b")
	c.expect(array(bulk("a"), bulk("b")), "HKEYS", "h")
}

// expectRead reads the next reply or push and requires it to be want.
func expectRead(t *testing.T, r *rawConn, want string) {
	t.Helper()
	if got := r.read(); got != want {
		t.Fatalf("read %q, want %q", got, want)
	}
}

// go-redis's own HEXPIRE family (it speaks Redis 7.4's syntax) against
// Cellar.
func TestHashFieldExpiryGoRedis(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client()
	c.HSet(ctx, "h", "a", "1", "b", "2")
	if got, err := c.HExpire(ctx, "h", time.Hour, "a", "nope").Result(); err != nil || len(got) != 2 || got[0] != 1 || got[1] != -2 {
		t.Fatalf("HExpire: %v %v", got, err)
	}
	if got, err := c.HTTL(ctx, "h", "a", "b").Result(); err != nil || got[0] != 3600 || got[1] != -1 {
		t.Fatalf("HTTL: %v %v", got, err)
	}
	if got, err := c.HPersist(ctx, "h", "a").Result(); err != nil || got[0] != 1 {
		t.Fatalf("HPersist: %v %v", got, err)
	}
	if got, err := c.HPExpire(ctx, "h", time.Millisecond, "a", "b").Result(); err != nil || got[0] != 1 || got[1] != 1 {
		t.Fatalf("HPExpire: %v %v", got, err)
	}
	waitFor(t, 10*time.Second, "the hash's fields to expire", func() bool { return c.Exists(ctx, "h").Val() == 0 })
}
