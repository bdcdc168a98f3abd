package tests

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar/internal/redistest"
)

// Keys' access clocks (actor/access.go): OBJECT IDLETIME under an LRU
// policy, OBJECT FREQ under an LFU one, which commands touch a key and
// which do not, TOUCH, RESTORE's IDLETIME and FREQ. The same steps run
// against Cellar and a throw-away redis-server, and both must give the
// pinned replies.

// accessSteps runs the steps on addr and returns their replies.
func accessSteps(t *testing.T, addr string) []string {
	t.Helper()
	r := dialRaw(t, addr)
	var out []string
	do := func(args ...string) { out = append(out, r.do(args...)) }
	r.expect(status("OK"), "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	r.expect(status("OK"), "SET", "k", "v")
	// A second passes: the idle time grows while nothing touches k (OBJECT
	// does not touch it).
	waitFor(t, 10*time.Second, "k to be idle for a second", func() bool {
		n, _ := strconv.Atoi(strings.Trim(r.do("OBJECT", "IDLETIME", "k"), ":\r\n"))
		return n >= 1
	})
	// Commands that look the key up without touching it, or not at all.
	for _, cmd := range []string{"EXISTS k", "TYPE k", "TTL k", "PTTL k", "EXPIRETIME k", "OBJECT ENCODING k",
		"OBJECT REFCOUNT k", "WATCH k", "UNWATCH", "MEMORY USAGE k"} {
		r.do(strings.Fields(cmd)...)
	}
	idle := r.do("OBJECT", "IDLETIME", "k")
	out = append(out, map[bool]string{true: "idle", false: idle}[idle != integer(0)])
	// A read touches it (in one transaction: the same second).
	do("MULTI")
	do("GET", "k")
	do("OBJECT", "IDLETIME", "k")
	do("EXEC")
	// RESTORE IDLETIME sets the idle time.
	dump := r.do("DUMP", "k")
	payload := dump[strings.Index(dump, "\r\n")+2 : len(dump)-2]
	do("MULTI")
	do("RESTORE", "r", "0", payload, "IDLETIME", "1000")
	do("OBJECT", "IDLETIME", "r")
	do("EXEC")
	do("OBJECT", "FREQ", "k")

	// LFU, without decay (lfu-decay-time 0), so that no minute's end
	// changes a counter.
	r.expect(status("OK"), "CONFIG", "SET", "maxmemory-policy", "allkeys-lfu", "lfu-decay-time", "0")
	do("SET", "f", "v")
	do("OBJECT", "FREQ", "f") // a new key's counter: 5
	for _, cmd := range []string{"EXISTS f", "TYPE f", "TTL f", "PTTL f", "OBJECT ENCODING f", "WATCH f", "UNWATCH"} {
		r.do(strings.Fields(cmd)...)
	}
	// A script touches the keys its commands look up, not the ones it names.
	r.expect(integer(1), "EVAL", "return 1", "1", "f")
	r.expect(integer(1), "EVAL_RO", "return 1", "1", "f")
	do("OBJECT", "FREQ", "f")
	do("GET", "f")
	do("OBJECT", "FREQ", "f") // the first access counts for sure: 6
	do("SET", "g", "v")
	do("TOUCH", "g")
	do("OBJECT", "FREQ", "g")
	do("SET", "g", "w") // an overwrite keeps the counter, incremented
	do("DEL", "g")
	do("SET", "g", "v") // created again: a new key's counter
	do("OBJECT", "FREQ", "g")
	do("RESTORE", "h", "0", payload, "FREQ", "100")
	do("OBJECT", "FREQ", "h")
	do("OBJECT", "IDLETIME", "h")
	do("OBJECT", "FREQ", "nokey")
	r.expect(status("OK"), "CONFIG", "SET", "maxmemory-policy", "noeviction", "lfu-decay-time", "1")
	do("OBJECT", "FREQ", "f")
	return out
}

func TestAccessClocks(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	red := redistest.StartTCP(t)
	noLFU := errr("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	lfuSelected := errr("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	want := []string{
		"idle",
		status("OK"), status("QUEUED"), status("QUEUED"), array(bulk("v"), integer(0)),
		status("OK"), status("QUEUED"), status("QUEUED"), array(status("OK"), integer(1000)),
		noLFU,
		status("OK"), integer(5), integer(5), bulk("v"), integer(6),
		status("OK"), integer(1), integer(6),
		status("OK"), integer(1), status("OK"), integer(5),
		status("OK"), integer(100), lfuSelected, "_",
		noLFU,
	}
	for _, c := range []struct{ name, addr string }{{"cellar", s.addr}, {"redis", red.Addr}} {
		got := accessSteps(t, c.addr)
		if len(got) != len(want) {
			t.Fatalf("%s: %d replies, want %d: %q", c.name, len(got), len(want), got)
		}
		for i := range want {
			w := want[i]
			if w == "_" {
				w = "$-1\r\n"
			}
			if got[i] != w {
				t.Errorf("%s: reply %d: got %q, want %q", c.name, i, got[i], w)
			}
		}
	}
}

// CLIENT NO-TOUCH (Redis 7.2): the connection's commands leave the keys'
// access clocks alone, except TOUCH. Under LFU without decay a new key's
// counter is 5 and its first access makes it 6 for sure, so each step's
// effect is exact.
func TestClientNoTouch(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := dialRaw(t, s.addr)
	r.expect(status("OK"), "CONFIG", "SET", "maxmemory-policy", "allkeys-lfu", "lfu-decay-time", "0")
	r.expect(status("OK"), "SET", "k", "v")
	r.expect(status("OK"), "CLIENT", "NO-TOUCH", "ON")
	r.expect(bulk("v"), "GET", "k")
	r.expect(integer(5), "OBJECT", "FREQ", "k")
	r.expect(integer(1), "TOUCH", "k")
	r.expect(integer(6), "OBJECT", "FREQ", "k")
	r.expect(status("OK"), "CLIENT", "NO-TOUCH", "OFF")
	r.expect(status("OK"), "SET", "n", "v")
	r.expect(bulk("v"), "GET", "n")
	r.expect(integer(6), "OBJECT", "FREQ", "n")
}
