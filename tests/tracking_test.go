package tests

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
	"github.com/redis/go-redis/v9"
	gopush "github.com/redis/go-redis/v9/push"
	"github.com/redis/rueidis"
)

// Client-side caching over the wire: CLIENT TRACKING in its modes, the
// invalidation pushes (RESP3) and messages (RESP2 through REDIRECT) byte
// for byte against Cellar and a real redis-server alike, the tracking
// table's limit, cleanup, and real clients' caches (rueidis DoCache,
// go-redis push handlers).

// inv is a RESP3 invalidation push of keys; invNull the flush one.
func inv(keys ...string) string {
	items := make([]string, len(keys))
	for i, k := range keys {
		items[i] = bulk(k)
	}
	return ">2\r\n" + bulk("invalidate") + array(items...)
}

const invNull = ">2\r\n$10\r\ninvalidate\r\n_\r\n"

// invMsg is the RESP2 message a redirect target subscribed to
// __redis__:invalidate gets for keys.
func invMsg(keys ...string) string {
	items := make([]string, len(keys))
	for i, k := range keys {
		items[i] = bulk(k)
	}
	return "*3\r\n" + bulk("message") + bulk("__redis__:invalidate") + array(items...)
}

// clientID asks r for its client id.
func clientID(r *rawConn) string {
	got := r.do("CLIENT", "ID")
	return strings.TrimSuffix(strings.TrimPrefix(got, ":"), "\r\n")
}

// hello3 switches r to RESP3.
func hello3(r *rawConn) { r.do("HELLO", "3") }

// quiet checks that nothing is waiting for r before the reply to PING:
// anything due to it from commands that already answered comes first.
func quiet(r *rawConn) {
	r.t.Helper()
	r.expect(status("PONG"), "PING")
}

var flagsRe = regexp.MustCompile(`flags=(\S+)`)

// clientFlags is CLIENT INFO's flags of r, without Redis's U (a unix
// socket client: the real Redis of these tests listens on one).
func clientFlags(r *rawConn) string {
	m := flagsRe.FindStringSubmatch(r.do("CLIENT", "INFO"))
	if m == nil {
		r.t.Fatal("CLIENT INFO without flags")
	}
	return strings.ReplaceAll(m[1], "U", "")
}

// trackingWire is the exact-bytes script, run against the server at addr.
func trackingWire(t *testing.T, addr string) {
	w := dialRaw(t, addr) // a writer that does not track
	w.expect(status("OK"), "FLUSHALL")

	// Errors and the state they leave, as Redis 7.0 words them.
	e := dialRaw(t, addr)
	e.expect(errr("ERR PREFIX option requires BCAST mode to be enabled"), "CLIENT", "TRACKING", "ON", "PREFIX", "x")
	e.expect(errr("ERR You can't specify both OPTIN mode and OPTOUT mode"), "CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT")
	e.expect(errr("ERR OPTIN and OPTOUT are not compatible with BCAST"), "CLIENT", "TRACKING", "ON", "BCAST", "OPTIN")
	e.expect(errr("ERR The client ID you want redirect to does not exist"), "CLIENT", "TRACKING", "ON", "REDIRECT", "987654")
	e.expect(errr("ERR value is not an integer or out of range"), "CLIENT", "TRACKING", "ON", "REDIRECT", "x")
	e.expect(errr("ERR syntax error"), "CLIENT", "TRACKING", "ON", "PREFIX")
	e.expect(errr("ERR syntax error"), "CLIENT", "TRACKING", "MAYBE")
	e.expect(errr("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"), "CLIENT", "CACHING", "YES")
	e.expect(integer(-1), "CLIENT", "GETREDIR")
	e.expect("*6\r\n"+bulk("flags")+array(bulk("off"))+bulk("redirect")+integer(-1)+bulk("prefixes")+"*0\r\n", "CLIENT", "TRACKINGINFO")
	e.expect(status("OK"), "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a")
	e.expect(errr("ERR Prefix 'ab' overlaps with an existing prefix 'a'. Prefixes for a single client must not overlap."), "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab")
	e.expect(errr("ERR Prefix 'b' overlaps with another provided prefix 'bc'. Prefixes for a single client must not overlap."), "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "b", "PREFIX", "bc")
	// Redis 7.0's quirk: an overlap among the new prefixes found from the
	// second on is reported, and tracking is enabled and OK replied too.
	e.send(encode("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x", "PREFIX", "y", "PREFIX", "yz"))
	for _, want := range []string{errr("ERR Prefix 'y' overlaps with another provided prefix 'yz'. Prefixes for a single client must not overlap."), status("OK")} {
		if got := e.read(); got != want {
			t.Fatalf("overlap quirk: got %q, want %q", got, want)
		}
	}
	e.expect("*6\r\n"+bulk("flags")+array(bulk("on"), bulk("bcast"))+bulk("redirect")+integer(0)+bulk("prefixes")+array(bulk("a"), bulk("x"), bulk("y"), bulk("yz")), "CLIENT", "TRACKINGINFO")
	e.expect(errr("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."), "CLIENT", "TRACKING", "ON")
	e.expect(status("OK"), "CLIENT", "TRACKING", "OFF")
	e.expect(status("OK"), "CLIENT", "TRACKING", "ON", "OPTIN")
	e.expect(errr("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."), "CLIENT", "CACHING", "NO")
	e.expect(errr("ERR syntax error"), "CLIENT", "CACHING", "MAYBE")
	e.expect(errr("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."), "CLIENT", "TRACKING", "ON", "OPTOUT")
	e.expect(status("OK"), "CLIENT", "CACHING", "YES")
	// CLIENT commands keep the CACHING flag; any other command ends it.
	e.expect("*6\r\n"+bulk("flags")+array(bulk("on"), bulk("optin"), bulk("caching-yes"))+bulk("redirect")+integer(0)+bulk("prefixes")+"*0\r\n", "CLIENT", "TRACKINGINFO")
	e.expect(status("PONG"), "PING")
	e.expect("*6\r\n"+bulk("flags")+array(bulk("on"), bulk("optin"))+bulk("redirect")+integer(0)+bulk("prefixes")+"*0\r\n", "CLIENT", "TRACKINGINFO")
	e.expect(status("RESET"), "RESET")
	e.expect(integer(-1), "CLIENT", "GETREDIR")

	// RESP3, default mode: the client's own write invalidates after its
	// reply, before the next command's; another client's write pushes.
	c := dialRaw(t, addr)
	hello3(c)
	c.expect(status("OK"), "CLIENT", "TRACKING", "ON")
	c.expect("_\r\n", "GET", "k")
	c.send(append(append(encode("SET", "k", "v"), encode("GET", "k")...), encode("PING")...))
	for _, want := range []string{status("OK"), inv("k"), bulk("v"), status("PONG")} {
		if got := c.read(); got != want {
			t.Fatalf("own write: got %q, want %q", got, want)
		}
	}
	w.expect(status("OK"), "SET", "k", "w")
	if got := c.read(); got != inv("k") {
		t.Fatalf("other's write: got %q", got)
	}
	quiet(c)
	// Invalidated means forgotten: a second write sends nothing.
	w.expect(status("OK"), "SET", "k", "x")
	quiet(c)
	// Keys of every read-only command, hits and misses; in MULTI the
	// invalidation of its own write follows EXEC's reply.
	c.expect("*2\r\n_\r\n_\r\n", "MGET", "m1", "m2")
	c.expect(status("OK"), "MULTI")
	c.expect(status("QUEUED"), "GET", "m3")
	c.expect(status("QUEUED"), "SET", "m3", "1")
	c.expect("*2\r\n_\r\n+OK\r\n", "EXEC")
	if got := c.read(); got != inv("m3") {
		t.Fatalf("after EXEC: got %q", got)
	}
	w.expect(status("OK"), "MSET", "m1", "1", "m2", "2", "m3", "3") // m3: c no longer holds it
	for _, k := range []string{"m1", "m2"} {
		if got := c.read(); got != inv(k) {
			t.Fatalf("MSET: got %q, want %q", got, inv(k))
		}
	}
	quiet(c)
	// A flush invalidates everything with a null.
	c.expect("_\r\n", "GET", "f")
	w.expect(status("OK"), "FLUSHALL")
	if got := c.read(); got != invNull {
		t.Fatalf("FLUSHALL: got %q", got)
	}
	c.expect(status("OK"), "FLUSHDB")
	if got := c.read(); got != invNull {
		t.Fatalf("own FLUSHDB: got %q", got)
	}
	// CLIENT REPLY OFF and SKIP drop replies, never invalidations.
	c.expect("_\r\n", "GET", "r")
	c.send(encode("CLIENT", "REPLY", "OFF"))
	c.send(encode("SET", "r", "1"))
	c.expect(inv("r"), "GET", "r") // GET's reply is off too: the push is all there is
	c.send(encode("CLIENT", "REPLY", "ON"))
	c.expect(status("OK"), "CLIENT", "REPLY", "ON") // the first ON's +OK
	if got := c.read(); got != status("OK") {
		t.Fatalf("second ON: got %q", got)
	}
	c.send(append(append(encode("CLIENT", "REPLY", "SKIP"), encode("SET", "r", "2")...), encode("PING")...))
	if got := c.read(); got != inv("r") {
		t.Fatalf("skipped SET: got %q", got)
	}
	if got := c.read(); got != status("PONG") {
		t.Fatalf("after skip: got %q", got)
	}
	c.expect(status("OK"), "CLIENT", "TRACKING", "OFF")

	// RESP2 through REDIRECT: messages on __redis__:invalidate, the flush
	// one with a RESP2 null.
	r := dialRaw(t, addr)
	rid := clientID(r)
	r.expect(push(2, 1, "subscribe", "__redis__:invalidate"), "SUBSCRIBE", "__redis__:invalidate")
	tr := dialRaw(t, addr)
	tr.expect(status("OK"), "CLIENT", "TRACKING", "ON", "REDIRECT", rid)
	tr.expect(":"+rid+"\r\n", "CLIENT", "GETREDIR")
	tr.expect(array(nullBulk, nullBulk), "MGET", "a", "b")
	w.expect(status("OK"), "MSET", "a", "1", "b", "2")
	for _, k := range []string{"a", "b"} {
		if got := r.read(); got != invMsg(k) {
			t.Fatalf("redirected: got %q, want %q", got, invMsg(k))
		}
	}
	tr.expect(status("OK"), "FLUSHALL")
	if got := r.read(); got != "*3\r\n"+bulk("message")+bulk("__redis__:invalidate")+nullBulk {
		t.Fatalf("redirected flush: got %q", got)
	}
	if f := clientFlags(tr); f != "t" {
		t.Fatalf("flags %q, want t", f)
	}
	if info := tr.do("CLIENT", "INFO"); !strings.Contains(info, " redir="+rid+" ") {
		t.Fatalf("CLIENT INFO without redir=%s: %q", rid, info)
	}
	if info := r.do("PING"); info != push(2, -1, "pong", "") {
		t.Fatalf("subscribed PING: %q", info)
	}

	// RESP3 target, NOLOOP: the tracking client's own writes are skipped.
	t3 := dialRaw(t, addr)
	hello3(t3)
	t3id := clientID(t3)
	nl := dialRaw(t, addr)
	hello3(nl)
	nl.expect(status("OK"), "CLIENT", "TRACKING", "ON", "REDIRECT", t3id, "NOLOOP")
	nl.expect("_\r\n", "GET", "x")
	nl.expect(status("OK"), "SET", "x", "1")
	nl.expect(bulk("1"), "GET", "x")
	quiet(t3)
	w.expect(status("OK"), "SET", "x", "2")
	if got := t3.read(); got != inv("x") {
		t.Fatalf("redirect to RESP3: got %q", got)
	}
	// The target leaves: the next invalidation reports the broken
	// redirect to the tracking client, and CLIENT LIST shows R.
	t3.send(encode("QUIT"))
	t3.read()
	t3.expectClosed()
	waitFor(t, 10*time.Second, "the target to be gone", func() bool {
		return !strings.Contains(w.do("CLIENT", "LIST"), "id="+t3id+" ")
	})
	nl.expect("_\r\n", "GET", "y")
	w.expect(status("OK"), "SET", "y", "1")
	if got, want := nl.read(), ">2\r\n"+bulk("tracking-redir-broken")+":"+t3id+"\r\n"; got != want {
		t.Fatalf("broken redirect: got %q, want %q", got, want)
	}
	nl.expect("%3\r\n"+bulk("flags")+"~3\r\n"+bulk("on")+bulk("noloop")+bulk("broken_redirect")+bulk("redirect")+":"+t3id+"\r\n"+bulk("prefixes")+"*0\r\n", "CLIENT", "TRACKINGINFO")
	if f := clientFlags(nl); f != "tR" {
		t.Fatalf("flags %q, want tR", f)
	}

	// BCAST with prefixes: one message per prefix per round of changes
	// (Redis: per event loop iteration), after the replies of the commands
	// read together; NOLOOP leaves out the client's own keys.
	b := dialRaw(t, addr)
	hello3(b)
	b.expect(status("OK"), "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "obj:")
	bn := dialRaw(t, addr)
	hello3(bn)
	bn.expect(status("OK"), "CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP")
	w.expect(status("OK"), "MSET", "user:2", "a", "user:1", "b", "obj:9", "c", "other", "d")
	for _, want := range []string{inv("obj:9"), inv("user:1", "user:2")} {
		if got := b.read(); got != want {
			t.Fatalf("BCAST: got %q, want %q", got, want)
		}
	}
	if got := bn.read(); got != inv("obj:9", "other", "user:1", "user:2") {
		t.Fatalf("BCAST, empty prefix: got %q", got)
	}
	bn.expect(status("OK"), "SET", "user:3", "x")
	if got := b.read(); got != inv("user:3") {
		t.Fatalf("BCAST of another's write: got %q", got)
	}
	quiet(bn)
	b.send(append(encode("SET", "user:5", "1"), encode("GET", "user:5")...))
	for _, want := range []string{status("OK"), bulk("1"), inv("user:5")} {
		if got := b.read(); got != want {
			t.Fatalf("BCAST own write: got %q, want %q", got, want)
		}
	}
	b.expect("%3\r\n"+bulk("flags")+"~2\r\n"+bulk("on")+bulk("bcast")+bulk("redirect")+integer(0)+bulk("prefixes")+array(bulk("obj:"), bulk("user:")), "CLIENT", "TRACKINGINFO")
	if f := clientFlags(b); f != "tB" {
		t.Fatalf("flags %q, want tB", f)
	}

	// OPTIN: only the command after CLIENT CACHING YES (a whole MULTI);
	// OPTOUT: all but the command after CLIENT CACHING NO.
	o := dialRaw(t, addr)
	hello3(o)
	o.expect(status("OK"), "CLIENT", "TRACKING", "ON", "OPTIN")
	o.expect("_\r\n", "GET", "p1")
	o.expect(status("OK"), "CLIENT", "CACHING", "YES")
	o.expect("_\r\n", "GET", "p2")
	o.expect("_\r\n", "GET", "p3")
	w.expect(status("OK"), "MSET", "p1", "1", "p2", "2", "p3", "3")
	if got := o.read(); got != inv("p2") {
		t.Fatalf("OPTIN: got %q", got)
	}
	quiet(o)
	o.expect(status("OK"), "CLIENT", "CACHING", "YES")
	o.expect(status("OK"), "MULTI")
	o.expect(status("QUEUED"), "GET", "q1")
	o.expect(status("QUEUED"), "GET", "q2")
	o.expect("*2\r\n_\r\n_\r\n", "EXEC")
	w.expect(status("OK"), "MSET", "q1", "1", "q2", "2")
	for _, k := range []string{"q1", "q2"} {
		if got := o.read(); got != inv(k) {
			t.Fatalf("OPTIN MULTI: got %q, want %q", got, inv(k))
		}
	}
	oo := dialRaw(t, addr)
	hello3(oo)
	oo.expect(status("OK"), "CLIENT", "TRACKING", "ON", "OPTOUT")
	oo.expect(status("OK"), "CLIENT", "CACHING", "NO")
	oo.expect("_\r\n", "GET", "s1")
	oo.expect("_\r\n", "GET", "s2")
	w.expect(status("OK"), "MSET", "s1", "1", "s2", "2")
	if got := oo.read(); got != inv("s2") {
		t.Fatalf("OPTOUT: got %q", got)
	}
	quiet(oo)

	// A RESP2 client without REDIRECT is tracked but gets nothing.
	p2 := dialRaw(t, addr)
	p2.expect(status("OK"), "CLIENT", "TRACKING", "ON")
	p2.expect(nullBulk, "GET", "n")
	p2.expect(status("OK"), "SET", "n", "1")
	quiet(p2)

	// A subscribed client whose replies are off still gets its messages.
	ps := dialRaw(t, addr)
	hello3(ps)
	ps.expect(push(3, 1, "subscribe", "ch"), "SUBSCRIBE", "ch")
	ps.send(encode("CLIENT", "REPLY", "OFF"))
	w.expect(integer(1), "PUBLISH", "ch", "hi")
	if got := ps.read(); got != push(3, -1, "message", "ch", "hi") {
		t.Fatalf("message under REPLY OFF: got %q", got)
	}
	ps.send(append(encode("PUBLISH", "ch", "self"), encode("CLIENT", "REPLY", "ON")...))
	for _, want := range []string{push(3, -1, "message", "ch", "self"), status("OK")} {
		if got := ps.read(); got != want {
			t.Fatalf("own message under REPLY OFF: got %q, want %q", got, want)
		}
	}
}

func TestTrackingWire(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	redisAddr := startRedis(t)
	t.Run("cellar", func(t *testing.T) { trackingWire(t, s.addr) })
	t.Run("redis", func(t *testing.T) { trackingWire(t, redisAddr) })
}

// trackingLimit fills the table past tracking-table-max-keys: before the
// next command, keys over the limit are evicted, each with an
// invalidation (which ones is random, in Redis as in Cellar).
func trackingLimit(t *testing.T, addr string) {
	w := dialRaw(t, addr)
	w.expect(status("OK"), "FLUSHALL")
	w.expect(status("OK"), "CONFIG", "SET", "tracking-table-max-keys", "3")
	w.expect(array(bulk("tracking-table-max-keys"), bulk("3")), "CONFIG", "GET", "tracking-table-max-keys")
	c := dialRaw(t, addr)
	hello3(c)
	c.expect(status("OK"), "CLIENT", "TRACKING", "ON")
	c.expect("*3\r\n_\r\n_\r\n_\r\n", "MGET", "k1", "k2", "k3")
	if got := infoField(t, w, "stats", "tracking_total_keys"); got != "3" {
		t.Fatalf("at the limit: %s keys", got)
	}
	c.expect("*2\r\n_\r\n_\r\n", "MGET", "k4", "k5") // 5 keys until the next command
	keys := map[string]bool{"k1": true, "k2": true, "k3": true, "k4": true, "k5": true}
	// The next command of c evicts two keys first: their invalidations
	// come before its reply.
	c.send(encode("PING"))
	evicted := map[string]bool{}
	for len(evicted) < 2 {
		got := c.read()
		var key string
		for k := range keys {
			if got == inv(k) {
				key = k
			}
		}
		if key == "" || evicted[key] {
			t.Fatalf("eviction %d: got %q", len(evicted)+1, got)
		}
		evicted[key] = true
	}
	if got := c.read(); got != status("PONG") {
		t.Fatalf("after the evictions: got %q", got)
	}
	if got := infoField(t, w, "stats", "tracking_total_keys"); got != "3" {
		t.Fatalf("after eviction: %s keys", got)
	}
	// The evicted keys are forgotten; the others still invalidate.
	for k := range keys {
		w.expect(status("OK"), "SET", k, "v")
		if !evicted[k] {
			if got := c.read(); got != inv(k) {
				t.Fatalf("kept key %s: got %q", k, got)
			}
		}
		quiet(c)
	}
	w.expect(errr("ERR CONFIG SET failed (possibly related to argument 'tracking-table-max-keys') - argument must be between 0 and 9223372036854775807 inclusive"), "CONFIG", "SET", "tracking-table-max-keys", "-1")
	w.expect(errr("ERR CONFIG SET failed (possibly related to argument 'tracking-table-max-keys') - argument couldn't be parsed into an integer"), "CONFIG", "SET", "tracking-table-max-keys", "x")
	w.expect(status("OK"), "CONFIG", "SET", "tracking-table-max-keys", "0") // no limit
	c.expect("*5\r\n$1\r\nv\r\n$1\r\nv\r\n$1\r\nv\r\n$1\r\nv\r\n$1\r\nv\r\n", "MGET", "k1", "k2", "k3", "k4", "k5")
	quiet(c)
	if got := infoField(t, w, "stats", "tracking_total_keys"); got != "5" {
		t.Fatalf("without a limit: %s keys", got)
	}
}

func TestTrackingTableLimit(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	redisAddr := startRedis(t)
	t.Run("cellar", func(t *testing.T) { trackingLimit(t, s.addr) })
	t.Run("redis", func(t *testing.T) { trackingLimit(t, redisAddr) })
}

// The configuration key sets the limit from the start.
func TestTrackingTableLimitConfig(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.TrackingTableMaxKeys = 2 })
	needCellar(t, s)
	w := s.raw()
	w.expect(array(bulk("tracking-table-max-keys"), bulk("2")), "CONFIG", "GET", "tracking-table-max-keys")
	c := s.raw()
	hello3(c)
	c.expect(status("OK"), "CLIENT", "TRACKING", "ON")
	c.expect("*3\r\n_\r\n_\r\n_\r\n", "MGET", "a", "b", "c")
	c.send(encode("PING"))
	if got := c.read(); got != inv("a") && got != inv("b") && got != inv("c") {
		t.Fatalf("eviction: got %q", got)
	}
	if got := c.read(); got != status("PONG") {
		t.Fatalf("after the eviction: got %q", got)
	}
	if got := infoField(t, w, "stats", "tracking_total_keys"); got != "2" {
		t.Fatalf("after eviction: %s keys", got)
	}
}

// Tracking ends with the session's other state: TRACKING OFF, RESET and a
// disconnect take the client out of the counters and the prefix table;
// the ids of a gone client leave the table once they are half its items.
func TestTrackingCleanup(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	w := s.raw()
	field := func(section, name string) string { return infoField(t, w, section, name) }
	a := s.raw()
	hello3(a)
	a.expect(status("OK"), "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p", "PREFIX", "q")
	if field("clients", "tracking_clients") != "1" || field("stats", "tracking_total_prefixes") != "2" {
		t.Fatal("BCAST client not counted")
	}
	a.expect(status("RESET"), "RESET")
	if field("clients", "tracking_clients") != "0" || field("stats", "tracking_total_prefixes") != "0" {
		t.Fatal("RESET left tracking on")
	}
	b := s.raw()
	hello3(b)
	b.expect(status("OK"), "CLIENT", "TRACKING", "ON")
	b.expect("*2\r\n_\r\n_\r\n", "MGET", "x", "y")
	if field("stats", "tracking_total_keys") != "2" || field("stats", "tracking_total_items") != "2" {
		t.Fatal("reads not tracked")
	}
	// Off, the ids stay (as in Redis: on again, they still invalidate).
	b.expect(status("OK"), "CLIENT", "TRACKING", "OFF")
	if field("clients", "tracking_clients") != "0" || field("stats", "tracking_total_items") != "2" {
		t.Fatal("TRACKING OFF")
	}
	b.expect(status("OK"), "CLIENT", "TRACKING", "ON")
	w.expect(status("OK"), "SET", "x", "1")
	if got := b.read(); got != inv("x") {
		t.Fatalf("revived id: got %q", got)
	}
	b.c.Close()
	waitFor(t, 10*time.Second, "the client's ids to be purged", func() bool {
		return field("clients", "tracking_clients") == "0" && field("stats", "tracking_total_items") == "0" &&
			field("stats", "tracking_total_keys") == "0"
	})
}

// CLIENT PAUSE WRITE holds PUBLISH (flagged may_replicate), as in Redis
// 7.0; the message goes out when the pause ends.
func pauseHoldsPublish(t *testing.T, addr string) {
	sub, pub, ctl := dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr)
	sub.expect(push(2, 1, "subscribe", "ch"), "SUBSCRIBE", "ch")
	ctl.expect(status("OK"), "CLIENT", "PAUSE", "100000", "WRITE")
	pub.send(encode("PUBLISH", "ch", "held"))
	waitFor(t, 10*time.Second, "PUBLISH to be held", func() bool { return infoField(t, ctl, "clients", "blocked_clients") == "1" })
	ctl.expect(status("OK"), "CLIENT", "UNPAUSE")
	if got := pub.read(); got != integer(1) {
		t.Fatalf("PUBLISH after the pause: got %q", got)
	}
	if got := sub.read(); got != push(2, -1, "message", "ch", "held") {
		t.Fatalf("message: got %q", got)
	}
}

func TestPublishHeldByPauseWrite(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	redisAddr := startRedis(t)
	t.Run("cellar", func(t *testing.T) { pauseHoldsPublish(t, s.addr) })
	t.Run("redis", func(t *testing.T) { pauseHoldsPublish(t, redisAddr) })
}

// rueidis's client-side cache: DoCache serves a read from its cache after
// the first, an invalidation drops it when another client writes, and the
// next DoCache reads the new value from the server.
func TestTrackingRueidisDoCache(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, name := range []string{"cellar", "redis"} {
		addr := s.addr
		if name == "redis" {
			addr = startRedis(t)
		}
		t.Run(name, func(t *testing.T) {
			opt := rueidis.ClientOption{InitAddress: []string{addr}, DisableRetry: true}
			if strings.HasPrefix(addr, "/") {
				opt.DialCtxFn = func(ctx context.Context, _ string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
					return d.DialContext(ctx, "unix", addr)
				}
			}
			client, err := rueidis.NewClient(opt)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			w := dialRaw(t, addr)
			w.expect(status("OK"), "SET", "cached", "v1")
			get := func() (string, bool) {
				resp := client.DoCache(ctx, client.B().Get().Key("cached").Cache(), time.Minute)
				v, err := resp.ToString()
				if err != nil {
					t.Fatal(err)
				}
				return v, resp.IsCacheHit()
			}
			if v, hit := get(); v != "v1" || hit {
				t.Fatalf("first read: %q, cache hit %v", v, hit)
			}
			if v, hit := get(); v != "v1" || !hit {
				t.Fatalf("second read: %q, cache hit %v", v, hit)
			}
			w.expect(status("OK"), "SET", "cached", "v2")
			waitFor(t, 10*time.Second, "the invalidation to reach rueidis", func() bool {
				v, hit := get()
				return v == "v2" && !hit
			})
			if v, hit := get(); v != "v2" || !hit {
				t.Fatalf("read after the refresh: %q, cache hit %v", v, hit)
			}
		})
	}
}

// go-redis (RESP3) reads invalidation pushes through its push notification
// handlers.
type invalidations struct {
	mu   sync.Mutex
	keys []string
}

func (h *invalidations) HandlePushNotification(_ context.Context, _ gopush.NotificationHandlerContext, n []interface{}) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(n) == 2 {
		if keys, ok := n[1].([]interface{}); ok {
			for _, k := range keys {
				h.keys = append(h.keys, fmt.Sprint(k))
			}
		} else {
			h.keys = append(h.keys, "<all>")
		}
	}
	return nil
}

func (h *invalidations) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.keys...)
}

func TestTrackingGoRedisPushes(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client(func(o *redis.Options) { o.Protocol = 3; o.PoolSize = 1 })
	h := &invalidations{}
	if err := c.RegisterPushNotificationHandler("invalidate", h, false); err != nil {
		t.Fatal(err)
	}
	conn := c.Conn()
	defer conn.Close()
	if err := conn.Do(ctx, "CLIENT", "TRACKING", "ON").Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Get(ctx, "gk").Err(); err != redis.Nil {
		t.Fatal(err)
	}
	other := s.client()
	if err := other.Set(ctx, "gk", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// go-redis handles pushes as it reads the connection's next reply.
	waitFor(t, 10*time.Second, "go-redis to see the invalidation", func() bool {
		conn.Ping(ctx)
		return strings.Join(h.seen(), ",") == "gk"
	})
	if err := other.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "go-redis to see the flush", func() bool {
		conn.Ping(ctx)
		return strings.Join(h.seen(), ",") == "gk,<all>"
	})
}

// trackedReads runs each read-only command on a tracking RESP3 client,
// deletes its key from another client, and reports which commands left
// the key tracked (an invalidation came).
func trackedReads(t *testing.T, addr string) map[string]bool {
	w, c := dialRaw(t, addr), dialRaw(t, addr)
	w.expect(status("OK"), "FLUSHALL")
	hello3(c)
	c.expect(status("OK"), "CLIENT", "TRACKING", "ON")
	cases := []struct {
		setup string
		reads []string
	}{
		{"SET s v", []string{"GET s", "STRLEN s", "GETRANGE s 0 1", "GETRANGE s a b", "SUBSTR s 0 1", "EXISTS s",
			"TYPE s", "TTL s", "PTTL s", "EXPIRETIME s", "PEXPIRETIME s", "TOUCH s", "OBJECT ENCODING s", "MGET s none",
			"GET s extra", "LRANGE s 0 -1", "SMEMBERS s", "OBJECT FOO s", "EXISTS s s2", "GETRANGE s 0"}},
		{"XADD x 1-1 f v", []string{"XRANGE x - +", "XRANGE x a b", "XREVRANGE x + -", "XLEN x", "XREAD STREAMS x 0",
			"XREAD COUNT x STREAMS x 0", "XREAD COUNT 1 STREAMS x y", "XREAD STREAMS x", "XINFO STREAM x"}},
		{"RPUSH l a b", []string{"LRANGE l 0 -1", "LLEN l", "LINDEX l 0", "LINDEX l x", "LPOS l a", "LPOS l a RANK 0",
			"LRANGE l a b"}},
		{"HSET h f v", []string{"HGET h f", "HMGET h f g", "HLEN h", "HGETALL h", "HKEYS h", "HVALS h", "HEXISTS h f",
			"HSTRLEN h f", "HRANDFIELD h", "HRANDFIELD h x", "HSCAN h 0", "HSCAN h 0 COUNT x", "HMGET h"}},
		{"SADD st a", []string{"SMEMBERS st", "SCARD st", "SISMEMBER st a", "SMISMEMBER st a b", "SRANDMEMBER st",
			"SINTER st", "SINTERCARD 1 st", "SINTERCARD 1 st LIMIT x", "SINTERCARD 2 st", "SUNION st", "SDIFF st",
			"SSCAN st 0", "SSCAN st x", "SRANDMEMBER st x"}},
		{"ZADD z 1 a", []string{"ZRANGE z 0 -1", "ZRANGE z a b", "ZREVRANGE z 0 -1", "ZCARD z", "ZSCORE z a",
			"ZMSCORE z a", "ZRANK z a", "ZCOUNT z 0 1", "ZRANGEBYSCORE z 0 1", "ZLEXCOUNT z - +", "ZRANDMEMBER z",
			"ZSCAN z 0", "ZINTER 1 z", "ZUNION 1 z", "ZDIFF 1 z", "ZINTERCARD 1 z", "ZINTER 1 z BADARG",
			"ZUNION 1 z WEIGHTS x", "ZINTERCARD 1 z LIMIT x", "ZINTER 0 z", "ZINTER 5 z", "ZINTER x z", "ZSCORE z",
			"ZRANGEBYSCORE z x 1", "ZCOUNT z x 1", "ZRANDMEMBER z x"}},
	}
	tracked := map[string]bool{}
	for _, tc := range cases {
		setup := strings.Fields(tc.setup)
		key := setup[1]
		for _, read := range tc.reads {
			w.do(setup...)
			c.do(strings.Fields(read)...)
			w.expect(integer(1), "DEL", key)
			got := c.do("PING")
			switch got {
			case inv(key):
				tracked[read] = true
				if got := c.read(); got != status("PONG") {
					t.Fatalf("%s: got %q after the invalidation", read, got)
				}
			case status("PONG"):
			default:
				t.Fatalf("%s: got %q", read, got)
			}
		}
	}
	return tracked
}

// A tracking client's read-only commands track the keys Redis's do:
// every key they look up, hit or miss, and the keys of one that failed on
// its arguments.
func TestTrackingReadCommands(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	want := trackedReads(t, startRedis(t))
	got := trackedReads(t, s.addr)
	if len(want) < 50 {
		t.Fatalf("redis tracked only %d reads", len(want))
	}
	for read := range want {
		if !got[read] {
			t.Errorf("%s: Redis tracks its key, Cellar does not", read)
		}
	}
	for read := range got {
		if !want[read] {
			t.Errorf("%s: Cellar tracks its key, Redis does not", read)
		}
	}
}

// A RESP3 tracking client that never reads its invalidations is bounded by
// the normal output limits (it is not a subscriber): past the hard limit
// it is closed with a log line, and the writer never waits for it.
func TestTrackingSlowClientHardLimit(t *testing.T) {
	t.Parallel()
	s := startServer(t, outputLimits(1<<20, 0, 0))
	needCellar(t, s)
	slow := s.raw()
	hello3(slow)
	slow.expect(status("OK"), "CLIENT", "TRACKING", "ON")
	const keys, chunk = 40000, 1000
	name := func(i int) string { return fmt.Sprintf("%0500d", i) }
	for i := 0; i < keys; i += chunk {
		args := []string{"MGET"}
		for j := i; j < i+chunk; j++ {
			args = append(args, name(j))
		}
		if got := slow.do(args...); !strings.HasPrefix(got, "*1000\r\n_\r\n") {
			t.Fatalf("MGET: got %.40q", got)
		}
	}
	w := s.raw()
	owed := 0
	for i := 0; i < keys; i += chunk {
		args := []string{"MSET"}
		for j := i; j < i+chunk; j++ {
			args = append(args, name(j), "v")
			owed += len(inv(name(j)))
		}
		w.expect(status("OK"), args...)
	}
	waitFor(t, 20*time.Second, "the hard limit to be logged", func() bool {
		return strings.Contains(s.logBuf.String(), "closing client whose replies reached the output buffer hard limit")
	})
	if n := drainUntilClosed(t, slow); n >= int64(owed) {
		t.Fatalf("read all %d bytes of invalidations: the client was not cut off", n)
	}
	waitFor(t, 10*time.Second, "the closed client's tracking to end", func() bool {
		return infoField(t, w, "clients", "tracking_clients") == "0"
	})
}

// go-redis's own client-side cache (RESP3, CLIENT TRACKING under the
// hood): a second read is a cache hit, another client's write invalidates
// it, and the next read has the new value.
func TestTrackingGoRedisClientSideCache(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client(func(o *redis.Options) {
		o.Protocol = 3
		o.ClientSideCacheConfig = &redis.ClientSideCacheConfig{MaxEntries: 1000}
	})
	other := s.client()
	if err := other.Set(ctx, "csc", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "csc").Result(); err != nil || v != "v1" {
		t.Fatalf("first read: %q, %v", v, err)
	}
	hits := c.CSCStats().Hits
	if v, err := c.Get(ctx, "csc").Result(); err != nil || v != "v1" {
		t.Fatalf("second read: %q, %v", v, err)
	}
	if c.CSCStats().Hits != hits+1 {
		t.Fatalf("second read was not a cache hit: %+v", c.CSCStats())
	}
	if n := infoField(t, s.raw(), "stats", "tracking_total_keys"); n != "1" {
		t.Fatalf("tracking_total_keys %s", n)
	}
	if err := other.Set(ctx, "csc", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the invalidation to reach go-redis", func() bool {
		v, err := c.Get(ctx, "csc").Result()
		return err == nil && v == "v2"
	})
}

// serverMs is the server's clock (TIME), in milliseconds.
func serverMs(t *testing.T, r *rawConn) int64 {
	rep := strings.Split(r.do("TIME"), "\r\n") // *2, $n, secs, $n, micros
	if len(rep) < 5 {
		t.Fatalf("TIME: %q", rep)
	}
	secs, err1 := strconv.ParseInt(rep[2], 10, 64)
	micros, err2 := strconv.ParseInt(rep[4], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("TIME: %q", rep)
	}
	return secs*1000 + micros/1000
}

// trackingLazyExpiry: a tracking client's read that finds its own tracked
// key expired is told after the read's reply (after EXEC's in MULTI), as
// Redis 7.0.15 holds invalidations for the running client.
func trackingLazyExpiry(t *testing.T, addr string, redis bool) {
	w, c := dialRaw(t, addr), dialRaw(t, addr)
	w.expect(status("OK"), "FLUSHALL")
	if redis {
		w.expect(status("OK"), "DEBUG", "SET-ACTIVE-EXPIRE", "0")
		defer w.do("DEBUG", "SET-ACTIVE-EXPIRE", "1")
	}
	hello3(c)
	c.expect(status("OK"), "CLIENT", "TRACKING", "ON")
	start := serverMs(t, w)
	w.expect(status("OK"), "SET", "e1", "1", "PX", "1000")
	w.expect(status("OK"), "SET", "e2", "1", "PX", "1000")
	c.expect(array(bulk("1"), bulk("1")), "MGET", "e1", "e2")
	waitFor(t, 10*time.Second, "the keys' expiry time", func() bool { return serverMs(t, w) > start+1100 })
	c.send(append(encode("GET", "e1"), encode("PING")...))
	for _, want := range []string{"_\r\n", inv("e1"), status("PONG")} {
		if got := c.read(); got != want {
			t.Fatalf("GET of an expired key: got %q, want %q", got, want)
		}
	}
	c.expect(status("OK"), "MULTI")
	c.expect(status("QUEUED"), "GET", "e2")
	c.expect("*1\r\n_\r\n", "EXEC")
	if got := c.read(); got != inv("e2") {
		t.Fatalf("after EXEC: got %q", got)
	}
	quiet(c)
}

func TestTrackingLazyExpiry(t *testing.T) {
	t.Parallel()
	s := startServer(t, noActiveExpiry)
	redisAddr := startRedis(t, "--enable-debug-command", "yes")
	t.Run("cellar", func(t *testing.T) { trackingLazyExpiry(t, s.addr, false) })
	t.Run("redis", func(t *testing.T) { trackingLazyExpiry(t, redisAddr, true) })
}

// trackingWokenWaiter: a tracking client blocked in BLMOVE on a key it
// tracks is told of the push that wakes it before its reply, and of its
// own move into a tracked key after it (NOLOOP: not at all), as Redis
// 7.0.15 does.
func trackingWokenWaiter(t *testing.T, addr string, noloop bool) {
	w, c := dialRaw(t, addr), dialRaw(t, addr)
	w.expect(status("OK"), "FLUSHALL")
	hello3(c)
	if noloop {
		c.expect(status("OK"), "CLIENT", "TRACKING", "ON", "NOLOOP")
	} else {
		c.expect(status("OK"), "CLIENT", "TRACKING", "ON")
	}
	c.expect("*0\r\n", "LRANGE", "q", "0", "-1")
	c.expect("*0\r\n", "LRANGE", "q2", "0", "-1")
	c.send(encode("BLMOVE", "q", "q2", "LEFT", "LEFT", "0"))
	waitFor(t, 10*time.Second, "BLMOVE to block", func() bool { return infoField(t, w, "clients", "blocked_clients") == "1" })
	w.expect(integer(1), "LPUSH", "q", "x")
	want := []string{inv("q"), bulk("x")}
	if !noloop {
		want = append(want, inv("q2"))
	}
	for _, wt := range want {
		if got := c.read(); got != wt {
			t.Fatalf("woken waiter: got %q, want %q", got, wt)
		}
	}
	quiet(c)
}

func TestTrackingWokenWaiter(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	redisAddr := startRedis(t)
	for _, noloop := range []bool{false, true} {
		t.Run(fmt.Sprintf("cellar/noloop=%v", noloop), func(t *testing.T) { trackingWokenWaiter(t, s.addr, noloop) })
		t.Run(fmt.Sprintf("redis/noloop=%v", noloop), func(t *testing.T) { trackingWokenWaiter(t, redisAddr, noloop) })
	}
}

// trackedWrites reports, for each write, whether it invalidated the key a
// tracking client had read (Redis: whether it signals the key modified).
func trackedWrites(t *testing.T, addr string) map[string]bool {
	w, c := dialRaw(t, addr), dialRaw(t, addr)
	w.expect(status("OK"), "FLUSHALL")
	hello3(c)
	c.expect(status("OK"), "CLIENT", "TRACKING", "ON")
	cases := []struct {
		key, setup, read string
		writes           []string
	}{
		{"s", "SET s v", "GET s", []string{"SET s v", "APPEND s x", "APPEND s \"\"", "SETRANGE s 0 v", "INCR s2",
			"EXPIRE s 100", "PERSIST s", "EXPIRE s 100 GT", "SET s v NX", "SETNX s v", "GETSET s v", "GETDEL s", "DEL s",
			"RENAME s s3", "COPY s s4", "MOVE s 1", "UNLINK s", "GETEX s PX 100", "GETEX s", "TOUCH s"}},
		{"l", "RPUSH l a b", "LRANGE l 0 -1", []string{"LSET l 0 a", "LTRIM l 0 -1", "LREM l 0 z", "LPUSH l c",
			"RPOP l", "LPUSHX l d", "LINSERT l BEFORE z q", "LMOVE l l LEFT RIGHT"}},
		{"h", "HSET h f v", "HGETALL h", []string{"HSET h f v", "HSETNX h f v", "HDEL h z", "HINCRBY h n 1"}},
		{"st", "SADD st a", "SMEMBERS st", []string{"SADD st a", "SREM st z", "SMOVE st st a", "SPOP st 0"}},
		{"z", "ZADD z 1 a", "ZRANGE z 0 -1", []string{"ZADD z 1 a", "ZADD z 2 a", "ZINCRBY z 0 a", "ZREM z b",
			"ZREMRANGEBYSCORE z 5 6", "ZPOPMIN z 0"}},
		{"x", "XADD x 1-1 f v", "XRANGE x - +", []string{"XADD x 2-1 f v", "XGROUP CREATE x g 0", "XGROUP CREATE x g2 0 MKSTREAM",
			"XSETID x 9-9", "XTRIM x MAXLEN 5", "XTRIM x MAXLEN 0", "XDEL x 9-9", "XDEL x 1-1"}},
	}
	invalidated := map[string]bool{}
	for _, tc := range cases {
		for _, write := range tc.writes {
			w.do("DEL", tc.key, "s2", "s3", "s4")
			w.do(strings.Fields(tc.setup)...)
			if strings.HasPrefix(write, "XGROUP CREATE x g ") || strings.HasPrefix(write, "XSETID") {
				w.do("XGROUP", "DESTROY", "x", "g")
			}
			c.do(strings.Fields(tc.read)...)
			args := strings.Fields(write)
			for i, a := range args {
				if a == `""` {
					args[i] = ""
				}
			}
			w.do(args...)
			got := c.do("PING")
			switch got {
			case inv(tc.key):
				invalidated[write] = true
				if got := c.read(); got != status("PONG") {
					t.Fatalf("%s: got %q after the invalidation", write, got)
				}
			case status("PONG"):
			default:
				t.Fatalf("%s: got %q", write, got)
			}
			// Leave the key untracked for the next write.
			w.do("DEL", tc.key)
			if got := c.do("PING"); got == inv(tc.key) {
				c.read()
			}
		}
	}
	return invalidated
}

// The writes that invalidate a tracked key are Redis's: those that signal
// it modified (stream group changes and XSETID do not, in Redis 7.0).
func TestTrackingWrites(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	want := trackedWrites(t, startRedis(t))
	got := trackedWrites(t, s.addr)
	if len(want) < 20 {
		t.Fatalf("redis invalidated on only %d writes", len(want))
	}
	for wr := range want {
		if !got[wr] {
			t.Errorf("%s: Redis invalidates the key, Cellar does not", wr)
		}
	}
	for wr := range got {
		if !want[wr] {
			t.Errorf("%s: Cellar invalidates the key, Redis does not", wr)
		}
	}
}

// trackingBlockedXRead: XREAD BLOCK tracks its keys when it runs; the XADD
// that serves it invalidates them (before the XREAD's reply), and serving
// tracks nothing again.
func trackingBlockedXRead(t *testing.T, addr string) {
	w, c := dialRaw(t, addr), dialRaw(t, addr)
	w.expect(status("OK"), "FLUSHALL")
	hello3(c)
	c.expect(status("OK"), "CLIENT", "TRACKING", "ON")
	c.send(encode("XREAD", "BLOCK", "0", "STREAMS", "xs", "$"))
	waitFor(t, 10*time.Second, "XREAD to block", func() bool { return infoField(t, w, "clients", "blocked_clients") == "1" })
	w.expect(bulk("1-1"), "XADD", "xs", "1-1", "f", "v")
	if got := c.read(); got != inv("xs") {
		t.Fatalf("before the XREAD reply: got %q", got)
	}
	if got := c.read(); !strings.HasPrefix(got, "%1\r\n$2\r\nxs\r\n") {
		t.Fatalf("XREAD reply: got %q", got)
	}
	w.expect(bulk("2-1"), "XADD", "xs", "2-1", "f", "v")
	quiet(c)
	if got := infoField(t, w, "stats", "tracking_total_keys"); got != "0" {
		t.Fatalf("tracking_total_keys %s after serving", got)
	}
}

func TestTrackingBlockedXRead(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	redisAddr := startRedis(t)
	t.Run("cellar", func(t *testing.T) { trackingBlockedXRead(t, s.addr) })
	t.Run("redis", func(t *testing.T) { trackingBlockedXRead(t, redisAddr) })
}
