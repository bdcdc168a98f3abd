package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/wait"
)

// TestInfoSectionRules checks INFO's 7.0 section rules against a real
// redis-server: several sections in one call, default/all/everything,
// names in any case and order, unknown names ignored; the sections come
// out in Redis's order (Cellar's own Offload section aside).
func TestInfoSectionRules(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cel, red := dialRaw(t, s.addr), dialRaw(t, startRedis(t))
	// Make errorstats and latencystats have something to print on both.
	for _, r := range []*rawConn{cel, red} {
		r.do("GET", "k")
		r.do("NOSUCHCOMMAND")
	}
	for _, args := range [][]string{
		{"INFO"}, {"INFO", "all"}, {"INFO", "everything"}, {"INFO", "default"},
		{"INFO", "keyspace", "server", "nosuchsection"}, {"INFO", "nosuchsection"},
		{"INFO", "default", "commandstats"}, {"INFO", "ERRORSTATS"}, {"INFO", "latencystats"},
		{"INFO", "latencystats", "commandstats", "Errorstats", "server"}, {"INFO", "all", "default"},
	} {
		got, want := cel.do(args...), red.do(args...)
		g := slices.DeleteFunc(headers(got), func(h string) bool { return h == "Offload" })
		if w := headers(want); strings.Join(g, ",") != strings.Join(w, ",") {
			t.Errorf("%v: sections %v, Redis's %v", args, g, w)
		}
	}
	info := cel.do("INFO", "errorstats", "stats")
	for _, want := range []string{"errorstat_ERR:count=1\r\n", "total_error_replies:1\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO errorstats stats lacks %q:\n%s", want, info)
		}
	}
	lat := cel.do("INFO", "latencystats")
	if !strings.Contains(lat, "latency_percentiles_usec_get:p50=") || !strings.Contains(lat, ",p99.9=") {
		t.Errorf("INFO latencystats has no line for GET with Redis's percentiles:\n%s", lat)
	}
}

// slowScript runs for at least ms milliseconds, by the wall clock TIME
// reads. The server times commands by the monotonic clock, which a
// virtual machine's wall clock may not match to the millisecond (a
// 25 ms script was once timed at 24 ms): the tests spin twice as long as
// the duration they then expect.
func slowScript(ms int) string {
	return fmt.Sprintf("local t=redis.call('time') local s=t[1]*1000000+t[2] "+
		"while true do local n=redis.call('time') if n[1]*1000000+n[2]-s >= %d then break end end return 1", ms*1000)
}

// TestSlowlog produces slow-log entries on purpose and checks them: ids,
// arguments truncated as Redis truncates them (32 arguments, 128 bytes
// each), the client's address and name, the length bound, RESET, and
// the error and help texts byte for byte against a real redis-server.
func TestSlowlog(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	red := dialRaw(t, startRedis(t))
	for _, args := range [][]string{{"SLOWLOG", "HELP"}, {"SLOWLOG", "GET", "-2"}, {"SLOWLOG", "GET", "x"},
		{"SLOWLOG", "GET", "1", "2"}, {"SLOWLOG", "NOPE"}, {"SLOWLOG", "LEN", "x"}, {"SLOWLOG"}} {
		if got, want := r.do(args...), red.do(args...); got != want {
			t.Errorf("%v: got %q, Redis %q", args, got, want)
		}
	}

	// A slow command is logged with the default threshold (10 ms).
	r.expect(":1\r\n", "EVAL", slowScript(30), "0")
	ctx := context.Background()
	c := s.client()
	entries, err := c.SlowLogGet(ctx, -1).Result()
	var first int64 = -1
	for _, e := range entries { // a loaded machine may make other commands slow too
		if e.Args[0] == "EVAL" && e.Duration.Milliseconds() >= 15 {
			first = e.ID
		}
	}
	if err != nil || first < 0 {
		t.Fatalf("after a 30 ms EVAL (logged at 15 ms or more): %+v, %v", entries, err)
	}

	// Everything is logged at 0; long argument lists and values are cut.
	r.expect("+OK\r\n", "CONFIG", "SET", "slowlog-log-slower-than", "0")
	r.expect("+OK\r\n", "CLIENT", "SETNAME", "slowpoke")
	args := []string{"RPUSH", "list"}
	for i := 0; i < 40; i++ {
		args = append(args, strconv.Itoa(i))
	}
	r.do(args...)
	long := strings.Repeat("v", 200)
	r.do("SET", "k", long)
	r.do("AUTH", "secret")
	addr := strings.Fields(strings.TrimPrefix(r.do("CLIENT", "INFO"), "$"))[2] // "addr=..."
	entries, err = c.SlowLogGet(ctx, 4).Result()
	if err != nil || len(entries) != 4 {
		t.Fatalf("SLOWLOG GET 4: %+v, %v", entries, err)
	}
	auth, set, push := entries[1], entries[2], entries[3] // [0] is CLIENT INFO
	if !(push.ID > first && set.ID == push.ID+1 && auth.ID == set.ID+1) {
		t.Errorf("ids %d %d %d after %d: not increasing by one", push.ID, set.ID, auth.ID, first)
	}
	if len(push.Args) != 32 || push.Args[31] != "... (11 more arguments)" || push.Args[30] != "28" {
		t.Errorf("42 arguments logged as %q", push.Args)
	}
	if set.Args[2] != strings.Repeat("v", 128)+"... (72 more bytes)" {
		t.Errorf("a 200-byte value logged as %q", set.Args[2])
	}
	if strings.Join(auth.Args, " ") != "AUTH (redacted)" {
		t.Errorf("AUTH logged as %q", auth.Args)
	}
	r.do("ACL", "SETUSER", "bob", "on", ">pw")
	if e, err := c.SlowLogGet(ctx, 1).Result(); err != nil || len(e) != 1 || strings.Join(e[0].Args, " ") != "ACL SETUSER (redacted) (redacted) (redacted)" {
		t.Errorf("ACL SETUSER logged as %+v (%v)", e, err)
	}
	r.do("HELLO", "2", "AUTH", "bob", "wrong", "SETNAME", "slowpoke")
	if e, err := c.SlowLogGet(ctx, 1).Result(); err != nil || len(e) != 1 || strings.Join(e[0].Args, " ") != "HELLO 2 AUTH (redacted) (redacted) SETNAME slowpoke" {
		t.Errorf("HELLO AUTH logged as %+v (%v)", e, err)
	}
	r.expect("+OK\r\n", "CONFIG", "SET", "slowlog-max-len", "128", "requirepass", "")
	if e, err := c.SlowLogGet(ctx, 1).Result(); err != nil || len(e) != 1 || strings.Join(e[0].Args, " ") != "CONFIG SET slowlog-max-len 128 requirepass (redacted)" {
		t.Errorf("CONFIG SET requirepass logged as %+v (%v)", e, err)
	}
	if "addr="+push.ClientAddr != addr || push.ClientName != "slowpoke" {
		t.Errorf("client %q %q, want %s and slowpoke", push.ClientAddr, push.ClientName, addr)
	}

	// A script's calls are logged with Redis's script client's address;
	// EXEC is not logged, what it ran is.
	r.do("EVAL", "redis.call('set', 'a', 'b') return 1", "0")
	r.do("MULTI")
	r.do("INCR", "n")
	r.do("EXEC")
	entries, err = c.SlowLogGet(ctx, 4).Result()
	if err != nil || len(entries) != 4 {
		t.Fatalf("SLOWLOG GET 4: %+v, %v", entries, err)
	}
	var shape []string
	for _, e := range entries {
		shape = append(shape, strings.ToLower(strings.Join(e.Args, " "))+"@"+e.ClientAddr)
	}
	want := []string{"incr n@" + push.ClientAddr, "multi@" + push.ClientAddr, "eval redis.call('set', 'a', 'b') return 1 0@" + push.ClientAddr, "set a b@?:0"}
	if strings.Join(shape, "|") != strings.Join(want, "|") {
		t.Errorf("slow log of a script and a transaction:\n%q\nwant\n%q", shape, want)
	}

	// The length bound, then RESET.
	r.expect("+OK\r\n", "CONFIG", "SET", "slowlog-max-len", "5")
	r.expect(":5\r\n", "SLOWLOG", "LEN")
	for i := 0; i < 20; i++ {
		r.do("PING")
	}
	r.expect(":5\r\n", "SLOWLOG", "LEN")
	r.expect("+OK\r\n", "SLOWLOG", "RESET")
	if got := r.do("SLOWLOG", "LEN"); got != ":1\r\n" { // the RESET itself, logged after it ran
		t.Errorf("after RESET: %q", got)
	}
	r.expect("+OK\r\n", "CONFIG", "SET", "slowlog-log-slower-than", "-1")
	r.expect("+OK\r\n", "SLOWLOG", "RESET")
	r.do("PING")
	r.expect(":0\r\n", "SLOWLOG", "LEN")
}

// TestLatencyMonitor produces latency spikes on purpose (a script that
// runs for 25 ms by the server's clock) and reads them back with LATENCY
// LATEST, HISTORY, DOCTOR and RESET; LATENCY HISTOGRAM and the texts
// that do not depend on timing are compared with a real redis-server.
func TestLatencyMonitor(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	red := dialRaw(t, startRedis(t))
	for _, args := range [][]string{{"LATENCY", "HELP"}, {"LATENCY", "DOCTOR"}, {"LATENCY", "LATEST"},
		{"LATENCY", "HISTORY", "command"}, {"LATENCY", "GRAPH", "command"}, {"LATENCY", "RESET"},
		{"LATENCY", "RESET", "command", "nosuch"}, {"LATENCY", "HISTOGRAM", "nosuchcommand"}, {"LATENCY", "HISTORY"}} {
		if got, want := r.do(args...), red.do(args...); got != want {
			t.Errorf("%v: got %q, Redis %q", args, got, want)
		}
	}
	// On, with nothing seen (no event takes 100 s).
	r.expect("+OK\r\n", "CONFIG", "SET", "latency-monitor-threshold", "100000")
	red.do("CONFIG", "SET", "latency-monitor-threshold", "100000")
	if got, want := r.do("LATENCY", "DOCTOR"), red.do("LATENCY", "DOCTOR"); got != want {
		t.Errorf("LATENCY DOCTOR with nothing seen: got %q, Redis %q", got, want)
	}
	r.expect("+OK\r\n", "CONFIG", "SET", "latency-monitor-threshold", "5")
	r.expect(":1\r\n", "EVAL", slowScript(50), "0")
	c := s.client()
	ctx := context.Background()
	latest, err := c.Do(ctx, "LATENCY", "LATEST").Slice()
	if err != nil {
		t.Fatal(err)
	}
	events := map[string][]any{}
	for _, e := range latest {
		ev := e.([]any)
		events[ev[0].(string)] = ev
	}
	for _, name := range []string{"command", "actor-round"} {
		ev := events[name]
		if ev == nil || ev[3].(int64) < 25 { // the all-time max (a later, smaller spike may be the latest)
			t.Errorf("LATENCY LATEST %s: %v (all: %v)", name, ev, latest)
		}
	}
	// Conditions that hold however loaded the machine is (a slow moment
	// may add samples of its own).
	hist, err := c.Do(ctx, "LATENCY", "HISTORY", "command").Slice()
	found := false
	for _, h := range hist {
		found = found || h.([]any)[1].(int64) >= 25
	}
	if err != nil || !found {
		t.Errorf("LATENCY HISTORY command: %v, %v", hist, err)
	}
	doc := r.do("LATENCY", "DOCTOR")
	if !strings.Contains(doc, "1. actor-round: ") || !strings.Contains(doc, " command: ") || !strings.Contains(doc, "latency spikes (average ") {
		t.Errorf("LATENCY DOCTOR:\n%s", doc)
	}
	if g := r.do("LATENCY", "GRAPH", "command"); !strings.Contains(g, "command - high ") {
		t.Errorf("LATENCY GRAPH command: %q", g)
	}
	// At least the two events above (a loaded machine may have seen a slow
	// flush or fsync too).
	if n, err := c.Do(ctx, "LATENCY", "RESET").Int(); err != nil || n < len(latest) {
		t.Errorf("LATENCY RESET: %d, %v (LATEST had %d events)", n, err, len(latest))
	}

	h, err := c.Do(ctx, "LATENCY", "HISTOGRAM", "eval", "set").Result()
	m, ok := h.(map[any]any)
	if err != nil || !ok || len(m) != 1 {
		t.Fatalf("LATENCY HISTOGRAM eval set: %#v, %v", h, err)
	}
	ev := m["eval"].(map[any]any)
	buckets := ev["histogram_usec"].(map[any]any)
	if ev["calls"].(int64) != 1 || len(buckets) != 1 {
		t.Errorf("eval's histogram: %#v", ev)
	}
	for bound, n := range buckets {
		if bound.(int64) < 25000 || n.(int64) != 1 {
			t.Errorf("eval's bucket %v: %v", bound, n)
		}
	}
}

// TestMemoryCommands compares MEMORY's texts and errors with a real
// redis-server, and checks that USAGE and STATS report real sizes.
func TestMemoryCommands(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	red := dialRaw(t, startRedis(t))
	for _, args := range [][]string{{"MEMORY", "HELP"}, {"MEMORY", "USAGE", "missing"}, {"MEMORY", "USAGE", "k", "SAMPLES", "x"},
		{"MEMORY", "USAGE", "k", "SAMPLES", "-1"}, {"MEMORY", "USAGE", "k", "SAMPLES"}, {"MEMORY", "USAGE", "k", "FOO", "1"},
		{"MEMORY", "DOCTOR"}, {"MEMORY", "PURGE"}, {"MEMORY", "NOPE"}, {"MEMORY", "USAGE"}} {
		if got, want := r.do(args...), red.do(args...); got != want {
			t.Errorf("%v: got %q, Redis %q", args, got, want)
		}
	}
	ctx := context.Background()
	c := s.client()
	c.Set(ctx, "str", strings.Repeat("x", 1000), 0)
	for i := 0; i < 200; i++ {
		c.HSet(ctx, "h", "field"+strconv.Itoa(i), strings.Repeat("v", 100))
		c.RPush(ctx, "l", strings.Repeat("e", 50))
		c.ZAdd(ctx, "z", redis.Z{Score: float64(i), Member: "m" + strconv.Itoa(i)})
		c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"f", strings.Repeat("s", 40)}})
	}
	for key, least := range map[string]int64{"str": 1000, "h": 200 * 105, "l": 200 * 50, "z": 200 * 2, "s": 200 * 41} {
		n, err := c.MemoryUsage(ctx, key).Result()
		if err != nil || n < least || n > 1<<24 {
			t.Errorf("MEMORY USAGE %s: %d, %v (want at least %d)", key, n, err, least)
		}
		all, err := c.MemoryUsage(ctx, key, 0).Result()
		if err != nil || all < least {
			t.Errorf("MEMORY USAGE %s SAMPLES 0: %d, %v", key, all, err)
		}
	}
	stats, err := c.Do(ctx, "MEMORY", "STATS").Result()
	m, ok := stats.(map[any]any)
	if err != nil || !ok {
		t.Fatalf("MEMORY STATS: %#v, %v", stats, err)
	}
	if m["keys.count"] != int64(5) || m["clients.normal"].(int64) <= 0 || m["dataset.bytes"].(int64) <= 0 || m["total.allocated"].(int64) <= 0 {
		t.Errorf("MEMORY STATS: %v", m)
	}
	if doc := r.do("MEMORY", "DOCTOR"); !strings.Contains(doc, "Hi Sam, I can't find any memory issue") {
		t.Errorf("MEMORY DOCTOR with data: %q", doc)
	}
	if ms := r.do("MEMORY", "MALLOC-STATS"); !strings.Contains(ms, "heap_alloc: ") {
		t.Errorf("MEMORY MALLOC-STATS: %q", ms)
	}
}

// monitorAddr is the client part of a MONITOR line.
var monitorAddr = regexp.MustCompile(`^\[(\d+) [^\]]+\]`)

// monitorLines reads n MONITOR lines from m and returns them without the
// timestamp, with the client's address (but "lua") replaced by ADDR.
func monitorLines(t *testing.T, m *rawConn, n int) []string {
	t.Helper()
	var out []string
	for i := 0; i < n; i++ {
		line := m.read()
		_, rest, ok := strings.Cut(line, " ")
		if !strings.HasPrefix(line, "+") || !ok {
			t.Fatalf("MONITOR line %q", line)
		}
		if !strings.HasPrefix(rest[strings.IndexByte(rest, ' ')+1:], "lua]") {
			rest = monitorAddr.ReplaceAllString(rest, "[$1 ADDR]")
		}
		out = append(out, rest)
	}
	return out
}

// TestMonitor compares what MONITOR shows with a real redis-server's
// (timestamps aside): quoting, the database, the client's address, "lua"
// for a script's calls, the commands of an EXEC, administrative commands
// left out; a second MONITOR is ignored and RESET ends it.
func TestMonitor(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	red := startRedis(t)
	run := func(addr string) []string {
		m, c := dialRaw(t, addr), dialRaw(t, addr)
		m.expect("+OK\r\n", "MONITOR")
		c.do("CLIENT", "INFO")
		c.do("SET", "a b", "x\ny\"\\\x01")
		c.do("SELECT", "3")
		c.do("GET", "k")
		c.do("CONFIG", "GET", "maxclients") // administrative: not shown
		c.do("EVAL", "return redis.call('get', KEYS[1])", "1", "k")
		c.do("MULTI")
		c.do("INCR", "n")
		c.do("EXEC")
		c.do("SELECT", "0")
		// CLIENT INFO above, then these; CONFIG is left out.
		return monitorLines(t, m, 10)
	}
	got, want := run(s.addr), run(red)
	if strings.Join(got, "") != strings.Join(want, "") {
		t.Errorf("MONITOR:\n%q\nRedis:\n%q", got, want)
	}

	m := s.raw()
	m.expect("+OK\r\n", "MONITOR")
	m.send(encode("MONITOR")) // ignored, no reply
	m.expect("+RESET\r\n", "RESET")
	s.raw().do("SET", "after", "reset")
	m.expect("+PONG\r\n", "PING") // nothing from the SET came before
}

// TestMonitorBounded: a monitor that does not read while another client
// writes hard is disconnected at the output hard limit, and the writer
// goes on unhindered.
func TestMonitorBounded(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) {
		c.OutputBuffer.HardLimit = 1 << 20
		c.OutputBuffer.SoftLimit = 0
	})
	needCellar(t, s)
	m := s.raw()
	m.expect("+OK\r\n", "MONITOR")
	// The monitor now reads nothing. 20 000 SETs of 1000 bytes make about
	// 20 MB of MONITOR lines, far more than loopback's socket buffers
	// (autotuned to a few MB each way) and the 1 MB hard limit together.
	w := s.raw()
	val := strings.Repeat("v", 1000)
	var batch []byte
	for i := 0; i < 20000; i++ {
		batch = append(batch, encode("SET", "k"+strconv.Itoa(i), val)...)
	}
	w.send(batch)
	for i := 0; i < 20000; i++ {
		if got := w.read(); got != "+OK\r\n" {
			t.Fatalf("SET %d: %q", i, got)
		}
	}
	c := s.client()
	wait.For(t, 20*time.Second, "the monitor to be disconnected", func() bool {
		list, _ := c.ClientList(context.Background()).Result()
		return !strings.Contains(list, "flags=O")
	})
	if !strings.Contains(s.logBuf.String(), "output buffer hard limit") {
		t.Errorf("no log line for the disconnected monitor:\n%s", s.logBuf.String())
	}
	// It got some lines, then the connection closed.
	m.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	n := 0
	for {
		if _, err := m.reply(); err != nil {
			break
		}
		n++
	}
	if n >= 20000 {
		t.Errorf("the monitor got all %d lines: not bounded", n)
	}
}

// TestClientListBufferFields: CLIENT LIST's qbuf-free, obl, oll and omem
// come from the loops: a client that does not read its replies shows
// them unsent (obl, omem) and queued (oll); an idle one shows none, and
// room in its query buffer.
func TestClientListBufferFields(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.OutputBuffer.SoftLimit = 0 })
	needCellar(t, s)
	admin := s.client(func(o *redis.Options) { o.PoolSize = 1 })
	r := s.raw()
	r.expect("+OK\r\n", "SET", "big", strings.Repeat("x", 1<<20))
	id := r.clientID()
	if free := clientField(t, admin, id, "qbuf-free"); free <= 0 {
		t.Errorf("qbuf-free of an idle client: %d", free)
	}
	for _, f := range []string{"obl", "oll", "omem"} {
		if n := clientField(t, admin, id, f); n != 0 {
			t.Errorf("%s of an idle client: %d", f, n)
		}
	}
	// 32 MB of replies the client does not read.
	var batch []byte
	for i := 0; i < 32; i++ {
		batch = append(batch, encode("GET", "big")...)
	}
	r.send(batch)
	wait.For(t, 20*time.Second, "unsent replies in CLIENT LIST", func() bool {
		return clientField(t, admin, id, "obl") > 0 && clientField(t, admin, id, "oll") > 0 &&
			clientField(t, admin, id, "omem") >= clientField(t, admin, id, "obl")
	})
	for i := 0; i < 32; i++ {
		r.read()
	}
	wait.For(t, 20*time.Second, "the replies to be gone from CLIENT LIST", func() bool {
		return clientField(t, admin, id, "obl") == 0 && clientField(t, admin, id, "oll") == 0
	})
}

// TestConfigRewrite: CONFIG REWRITE writes what CONFIG SET changed into
// the YAML file Cellar was started with, keeping its comments and the keys
// it does not touch, adding keys the file lacked; the file then loads
// with those values. Without a file it refuses with Redis's text.
func TestConfigRewrite(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.raw().expect("-ERR The server is running without a config file\r\n", "CONFIG", "REWRITE")

	path := filepath.Join(t.TempDir(), "cellar.yaml")
	orig := "# Cellar for the rewrite test.\n" +
		"durability: everysec # the default, said aloud\n" +
		"\n" +
		"# Blocked clients.\n" +
		"blocking:\n" +
		"  max_keys_per_wait: 64 # kept\n" +
		"  max_total_waiters: 50000\n" +
		"loglevel: warn\n"
	if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	var usage strings.Builder
	loaded, err := cellar.LoadConfig([]string{"--config", path}, nil, &usage)
	if err != nil {
		t.Fatal(err)
	}
	f := startServer(t, func(c *cellar.Config) {
		dir, port := c.Dir, c.Port
		*c = loaded
		c.Dir, c.Port = dir, port
	})
	r := f.raw()
	r.expect("+OK\r\n", "CONFIG", "SET", "durability", "always", "blocking-max-total-waiters", "100",
		"slowlog-log-slower-than", "5", "maxmemory-clients", "64mb", "busy-reply-threshold", "2000")
	r.expect("+OK\r\n", "CONFIG", "REWRITE")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{"# Cellar for the rewrite test.", "durability: always # the default, said aloud",
		"# Blocked clients.", "max_keys_per_wait: 64 # kept", "max_total_waiters: 100", "loglevel: warn",
		"slowlog:\n  log_slower_than: 5\n", "maxmemory_clients: 67108864", "busy_reply_threshold: 2s"} {
		if !strings.Contains(text, want) {
			t.Errorf("the rewritten file lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "max_len") || strings.Contains(text, "tracking_table_max_keys") {
		t.Errorf("the rewrite added settings at their defaults:\n%s", text)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("the file's mode became %v", fi.Mode().Perm())
	}
	again, err := cellar.LoadConfig([]string{"--config", path}, nil, &usage)
	if err != nil {
		t.Fatalf("the rewritten file does not load: %v\n%s", err, text)
	}
	if again.Durability != "always" || again.Blocking.MaxTotalWaiters != 100 || again.Slowlog.LogSlowerThan != 5 ||
		again.MaxMemoryClients != 64<<20 || again.Lua.BusyReplyThreshold != 2*time.Second || again.Blocking.MaxKeysPerWait != 64 {
		t.Errorf("the rewritten file loads as %+v", again)
	}
	// A second rewrite with nothing changed leaves the file as it is.
	r.expect("+OK\r\n", "CONFIG", "REWRITE")
	if data2, _ := os.ReadFile(path); string(data2) != text {
		t.Errorf("a second rewrite changed the file:\n%s\nthen:\n%s", text, data2)
	}
	// A server started from the rewritten file has the values.
	g := startServer(t, func(c *cellar.Config) {
		dir, port := c.Dir, c.Port
		*c = again
		c.Dir, c.Port = dir, port
	})
	g.raw().expect("*2\r\n$23\r\nslowlog-log-slower-than\r\n$1\r\n5\r\n", "CONFIG", "GET", "slowlog-log-slower-than")
	g.raw().expect("*2\r\n$10\r\ndurability\r\n$6\r\nalways\r\n", "CONFIG", "GET", "durability")
}
