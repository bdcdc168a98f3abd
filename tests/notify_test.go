package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/rdb"

	cellar "github.com/cellar-db/cellar"
)

// stringDump is DUMP's payload of a string holding v, as Redis 7.0 writes
// it: the value, RDB version 10, and the CRC64 of both.
func stringDump(v string) string {
	p := append([]byte{0, byte(len(v))}, v...)
	p = append(p, 10, 0)
	crc := rdb.CRC64(0, p)
	for i := 0; i < 8; i++ {
		p = append(p, byte(crc>>(8*i)))
	}
	return string(p)
}

// Keyspace notifications: a representative command of every family, the
// events compared with a real redis-server's; lazy and active expiry; a
// woken blocking pop; and nothing published with notifications off.

// notifyScript is run on one connection; every line's events are compared
// with Redis's.
var notifyScript = [][]string{
	// strings
	{"SET", "s", "v", "EX", "100"}, {"SETNX", "s", "w"}, {"MSET", "a", "1", "b", "2"}, {"INCR", "n"},
	{"INCRBYFLOAT", "n", "1.5"}, {"APPEND", "s", "x"}, {"SETRANGE", "s", "1", "y"}, {"GETSET", "a", "3"},
	{"SETEX", "b", "100", "x"}, {"GETEX", "b", "PERSIST"}, {"GETEX", "b", "EX", "50"}, {"GETDEL", "b"},
	// generic
	{"EXPIRE", "a", "100"}, {"PERSIST", "a"}, {"RENAME", "a", "a2"}, {"COPY", "a2", "a3"},
	{"MOVE", "a3", "1"}, {"DEL", "a2", "missing"}, {"SET", "gone", "1"}, {"EXPIRE", "gone", "-1"},
	{"SET", "u", "1"}, {"UNLINK", "u"}, {"RESTORE", "r", "100000", stringDump("v")},
	// lists
	{"LPUSH", "l", "a", "b", "c"}, {"RPUSH", "l", "d"}, {"LINSERT", "l", "BEFORE", "a", "z"}, {"LSET", "l", "0", "q"},
	{"LREM", "l", "1", "z"}, {"LMOVE", "l", "l2", "LEFT", "RIGHT"}, {"RPOPLPUSH", "l2", "l2"},
	{"LTRIM", "l", "0", "0"}, {"LMPOP", "2", "l", "l2", "RIGHT", "COUNT", "9"}, {"LPOP", "l"}, {"RPOP", "l2"},
	// hashes
	{"HSET", "h", "f", "1", "g", "2"}, {"HSETNX", "h", "k", "3"}, {"HINCRBY", "h", "f", "1"},
	{"HINCRBYFLOAT", "h", "g", "0.5"}, {"HDEL", "h", "f", "g"}, {"HDEL", "h", "k"},
	// sets
	{"SADD", "x", "1", "2"}, {"SADD", "y", "2"}, {"SREM", "x", "1"}, {"SMOVE", "x", "y", "2"},
	{"SINTERSTORE", "st", "y", "y"}, {"SUNIONSTORE", "st2", "y", "missing"}, {"SDIFFSTORE", "st", "missing"},
	{"SPOP", "st2"},
	// sorted sets
	{"ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"}, {"ZINCRBY", "z", "1", "a"}, {"ZREM", "z", "b"},
	{"ZREMRANGEBYSCORE", "z", "0", "0"}, {"ZPOPMIN", "z"}, {"ZPOPMAX", "z"}, {"ZMPOP", "1", "z", "MIN"},
	{"ZADD", "z2", "1", "a", "2", "b"}, {"ZUNIONSTORE", "z3", "1", "z2"}, {"ZRANGESTORE", "z4", "z2", "0", "0"},
	{"ZINTERSTORE", "z5", "1", "z2"}, {"ZDIFFSTORE", "z6", "1", "z2"}, {"ZREMRANGEBYRANK", "z2", "0", "-1"},
	// geo
	{"GEOADD", "g", "13.36", "38.11", "p", "15.08", "37.5", "c"}, {"GEOADD", "g", "13.36", "38.11", "p"},
	{"GEOSEARCHSTORE", "gs", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"},
	{"GEORADIUS", "g", "15", "37", "200", "km", "STOREDIST", "gs2"}, {"GEORADIUS", "g", "0", "0", "1", "km", "STORE", "gs2"},
	{"GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"}, {"GEOSEARCHSTORE", "gs", "nokey", "FROMMEMBER", "x", "BYBOX", "1", "1", "km"},
	// streams
	{"XADD", "xs", "1-1", "f", "v"}, {"XADD", "xs", "MAXLEN", "1", "2-1", "f", "v"}, {"XTRIM", "xs", "MAXLEN", "0"},
	{"XADD", "xs", "3-1", "f", "v"}, {"XDEL", "xs", "3-1", "9-9"}, {"XGROUP", "CREATE", "xs", "g", "0"},
	{"XGROUP", "CREATE", "xs2", "g", "$", "MKSTREAM"}, {"XGROUP", "CREATECONSUMER", "xs", "g", "c"},
	{"XGROUP", "SETID", "xs", "g", "0"}, {"XADD", "xs", "4-1", "f", "v"},
	{"XREADGROUP", "GROUP", "g", "c2", "STREAMS", "xs", ">"}, {"XCLAIM", "xs", "g", "c3", "0", "4-1", "JUSTID"},
	{"XAUTOCLAIM", "xs", "g", "c4", "0", "0", "JUSTID"}, {"XACK", "xs", "g", "4-1"},
	{"XGROUP", "DELCONSUMER", "xs", "g", "c"}, {"XSETID", "xs", "10-1"}, {"XGROUP", "DESTROY", "xs", "g"},
	{"XADD", "xs3", "NOMKSTREAM", "5-1", "f", "v"},
	// bitmaps, HyperLogLogs, SORT ... STORE
	{"SETBIT", "bm", "3", "1"}, {"SETBIT", "bm", "3", "1"}, {"BITFIELD", "bm", "SET", "u8", "0", "1"},
	{"BITFIELD", "bm", "SET", "u8", "0", "1"}, {"BITFIELD", "bm", "GET", "u8", "0"}, {"BITOP", "NOT", "bm2", "bm"},
	{"BITOP", "AND", "bm2", "nokey"}, {"PFADD", "hl", "a"}, {"PFADD", "hl", "a"}, {"PFCOUNT", "hl"},
	{"PFMERGE", "hl2", "hl"}, {"RPUSH", "sl", "2", "1"}, {"SORT", "sl", "STORE", "sl"}, {"SORT", "sl", "STORE", "sl2"},
	{"SORT", "nokey", "STORE", "sl2"},
	// reads of missing keys: "keymiss" (class m)
	{"GET", "nokey"}, {"STRLEN", "nokey"}, {"EXISTS", "nokey", "s"}, {"LRANGE", "nokey", "0", "-1"}, {"LLEN", "nokey"},
	{"LINDEX", "nokey", "0"}, {"HGET", "nokey", "f"}, {"SMEMBERS", "nokey"}, {"ZSCORE", "nokey", "a"}, {"TTL", "nokey"},
	{"MGET", "nokey", "s"}, {"TYPE", "nokey"}, {"SINTER", "nokey", "x"}, {"ZRANGE", "nokey", "0", "-1"},
	// whole databases: no events
	{"SWAPDB", "0", "1"}, {"FLUSHDB"},
}

// notifyEvents runs notifyScript on the server at addr with every event on
// and returns, per script line, the (channel, message) pairs it published.
func notifyEvents(t *testing.T, addr string) [][]string {
	c, sub := dialRaw(t, addr), dialRaw(t, addr)
	c.expect(status("OK"), "CONFIG", "SET", "notify-keyspace-events", "KEAmn")
	sub.expect(push(2, 1, "psubscribe", "__key*__:*"), "PSUBSCRIBE", "__key*__:*")
	sub.expect(push(2, 2, "subscribe", "marker"), "SUBSCRIBE", "marker")
	var all [][]string
	for _, cmd := range notifyScript {
		c.do(cmd...)
		c.do("PUBLISH", "marker", "next")
		var evs []string
		sub.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			r, err := proto.ReadReply(sub.r)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Elems) == 3 { // the marker's message
				break
			}
			evs = append(evs, string(r.Elems[2].Text)+" "+string(r.Elems[3].Text))
		}
		all = append(all, evs)
	}
	c.expect(status("OK"), "CONFIG", "SET", "notify-keyspace-events", "")
	return all
}

func TestKeyspaceNotificationsLikeRedis(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	got := notifyEvents(t, s.addr)
	want := notifyEvents(t, startRedis(t))
	for i := range notifyScript {
		if strings.Join(got[i], "\n") != strings.Join(want[i], "\n") {
			t.Errorf("%q:\ncellar: %q\nredis:  %q", notifyScript[i], got[i], want[i])
		}
	}
	// The comparison is not vacuous: a sample of what Redis publishes.
	flat := ""
	for _, evs := range got {
		flat += strings.Join(evs, "\n") + "\n"
	}
	for _, ev := range []string{"__keyspace@0__:s set", "__keyevent@0__:expire s", "__keyevent@0__:lpush l",
		"__keyevent@0__:rename_from a", "__keyspace@1__:a3 move_to", "__keyevent@0__:hincrbyfloat h",
		"__keyevent@0__:srem x", "__keyevent@0__:zincr z", "__keyevent@0__:del h", "__keyevent@0__:zpopmin z",
		"__keyevent@0__:keymiss nokey", "__keyevent@0__:new l2", "__keyevent@0__:restore r"} {
		if !strings.Contains(flat, ev+"\n") {
			t.Errorf("no event %q in:\n%s", ev, flat)
		}
	}
}

// expiredEvent waits for the "expired" event of key on sub.
func expiredEvent(t *testing.T, sub *rawConn, key string) {
	t.Helper()
	want := push(2, -1, "pmessage", "__keyevent@*", "__keyevent@0__:expired", key)
	if got := sub.read(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// A key found expired when a command looks it up publishes "expired".
func TestKeyspaceNotificationLazyExpiry(t *testing.T) {
	t.Parallel()
	// No active expiry during the test: only the lookup can find it.
	s := startServer(t, func(c *cellar.Config) { c.Expiry.Interval = time.Hour })
	needCellar(t, s)
	c, sub := s.raw(), s.raw()
	c.expect(status("OK"), "CONFIG", "SET", "notify-keyspace-events", "Ex")
	sub.expect(push(2, 1, "psubscribe", "__keyevent@*"), "PSUBSCRIBE", "__keyevent@*")
	c.expect(status("OK"), "SET", "k", "v", "PX", "1") // "set" is not in class x: no event
	waitFor(t, 10*time.Second, "k to expire", func() bool { return c.do("PTTL", "k") == integer(-2) })
	expiredEvent(t, sub, "k")
}

// A key the expiry sweep deletes publishes "expired" with nobody looking.
func TestKeyspaceNotificationActiveExpiry(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	c, sub := s.raw(), s.raw()
	c.expect(status("OK"), "CONFIG", "SET", "notify-keyspace-events", "Ex")
	sub.expect(push(2, 1, "psubscribe", "__keyevent@*"), "PSUBSCRIBE", "__keyevent@*")
	c.expect(status("OK"), "SET", "k", "v", "PX", "20")
	expiredEvent(t, sub, "k")
	if n := c.do("DBSIZE"); n != integer(0) {
		t.Fatalf("DBSIZE %q after the sweep", n)
	}
}

// A blocked pop woken by a push publishes the push's and the pop's events,
// in that order; with notifications off, nothing is published.
func TestKeyspaceNotificationWokenPopAndOff(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c, sub, blocked := s.raw(), s.raw(), s.raw()
	c.expect(status("OK"), "CONFIG", "SET", "notify-keyspace-events", "El")
	sub.expect(push(2, 1, "psubscribe", "__keyevent@0__:*"), "PSUBSCRIBE", "__keyevent@0__:*")
	blocked.send(encode("BLPOP", "q", "0"))
	waitFor(t, 10*time.Second, "the pop to block", func() bool { return strings.Contains(c.do("CLIENT", "LIST"), "cmd=blpop") })
	c.expect(integer(1), "RPUSH", "q", "x")
	if got := blocked.read(); got != "*2\r\n$1\r\nq\r\n$1\r\nx\r\n" {
		t.Fatalf("BLPOP: %q", got)
	}
	for _, ev := range []string{"rpush", "lpop"} {
		if got, want := sub.read(), push(2, -1, "pmessage", "__keyevent@0__:*", "__keyevent@0__:"+ev, "q"); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	// "del" is class g, which is off.
	c.expect(status("OK"), "CONFIG", "SET", "notify-keyspace-events", "")
	c.expect(integer(1), "RPUSH", "q", "y")
	c.expect(integer(1), "PUBLISH", "__keyevent@0__:marker", "m")
	if got, want := sub.read(), push(2, -1, "pmessage", "__keyevent@0__:*", "__keyevent@0__:marker", "m"); got != want {
		t.Fatalf("with notifications off: got %q, want only the marker %q", got, want)
	}
}
