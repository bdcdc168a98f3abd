package actor

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cellar-db/cellar/internal/wait"
	"github.com/cellar-db/cellar/offload"
	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

// recording starts recording effects on h's actor.
func (h *harness) recording() {
	h.a.Call(func() { h.a.recordEffects(true) })
}

// takeRecords takes the records gathered so far, copied.
func (h *harness) takeRecords() [][]byte {
	var out [][]byte
	h.a.Call(func() {
		for _, r := range h.a.takeEffects() {
			out = append(out, bytes.Clone(r))
		}
	})
	return out
}

// showRecords renders records as "db command args...", a woken retry's
// command marked with "~".
func showRecords(t *testing.T, recs [][]byte) []string {
	t.Helper()
	var out []string
	for _, r := range recs {
		e, err := decodeEffect(r, nil)
		if err != nil {
			t.Fatalf("record %q: %v", r, err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d ", e.db)
		if e.woken {
			b.WriteByte('~')
		}
		for i, a := range e.args {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.Write(a)
		}
		out = append(out, b.String())
	}
	return out
}

func expectRecords(t *testing.T, recs [][]byte, want ...string) {
	t.Helper()
	got := showRecords(t, recs)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// replayed opens a fresh store and actor (never Run), replays recs into it
// with ReplayEffects, and returns its store.
func replayed(t *testing.T, recs [][]byte) *storage.Store {
	t.Helper()
	st, err := storage.Open(storage.Options{Path: filepath.Join(t.TempDir(), "replay.db")})
	if err != nil {
		t.Fatal(err)
	}
	pool := offload.New(offload.Config{})
	t.Cleanup(func() {
		pool.Close(context.Background())
		st.Close()
	})
	a, err := New(Config{}, st, pool, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	n, err := a.ReplayEffects(func() ([]byte, bool, error) {
		if i == len(recs) {
			return nil, false, nil
		}
		i++
		return recs[i-1], true, nil
	})
	if err != nil || n != len(recs) {
		t.Fatalf("replayed %d of %d records: %v", n, len(recs), err)
	}
	return st
}

// dump renders every database of st in full, sorted: each key with its
// type, absolute expiry and value (a list's elements in order; a hash's,
// set's or sorted set's sorted, scores exactly), and each database's key
// count. Expired keys not yet deleted are included (Now is 0): replay must
// leave them in place too.
func dump(t *testing.T, st *storage.Store) string {
	t.Helper()
	st.Now = 0
	var b strings.Builder
	for db := 0; db < storage.NumDBs; db++ {
		var keys []string
		if err := st.Keys(db, nil, func(k []byte) bool { keys = append(keys, string(k)); return true }); err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 && st.DBSize(db) == 0 {
			continue
		}
		fmt.Fprintf(&b, "db %d: %d keys\n", db, st.DBSize(db))
		slices.Sort(keys)
		for _, k := range keys {
			key := []byte(k)
			m, ok, err := st.Lookup(db, key)
			if err != nil || !ok {
				t.Fatalf("%d %q: %v %v", db, k, ok, err)
			}
			fmt.Fprintf(&b, "  %q %v exp=%d:", k, m.Type, m.ExpireAt)
			var vals []string
			switch m.Type {
			case storage.TypeString:
				v, _, err := st.GetString(db, key, nil)
				if err != nil {
					t.Fatal(err)
				}
				vals = append(vals, strconv.Quote(string(v)))
			case storage.TypeList:
				if _, err := st.ListRange(db, key, 0, -1, func(int64) {}, func(v []byte) { vals = append(vals, strconv.Quote(string(v))) }); err != nil {
					t.Fatal(err)
				}
			case storage.TypeStream:
				vals = append(vals, dumpStream(t, st, db, key))
			default:
				c, err := st.OpenColl(db, key, m.Type)
				if err != nil || c == nil {
					t.Fatalf("%d %q: %v", db, k, err)
				}
				es, err := st.AllElements(c)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range es {
					vals = append(vals, fmt.Sprintf("%q=%q/%x", e.Member, e.Value, math.Float64bits(e.Score)))
				}
				slices.Sort(vals)
				fmt.Fprintf(&b, " len=%d", c.Len)
			}
			fmt.Fprintf(&b, " %s\n", strings.Join(vals, " "))
		}
	}
	return b.String()
}

// dumpStream renders a stream whole: its metadata, entries, groups,
// consumers and pending entries.
func dumpStream(t *testing.T, st *storage.Store, db int, key []byte) string {
	t.Helper()
	x, err := st.OpenStream(db, key)
	if err != nil || x == nil {
		t.Fatalf("%d %q: %v", db, key, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "len=%d last=%v maxdel=%v added=%d [", x.Len, x.Last, x.MaxDeleted, x.EntriesAdded)
	if err := st.StreamRange(x, storage.StreamID{}, storage.MaxStreamID, false, 0, func(e *storage.StreamEntry) bool {
		fmt.Fprintf(&b, " %v%q", e.ID, e.Fields)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	gs, err := st.Groups(x)
	if err != nil {
		t.Fatal(err)
	}
	for i := range gs {
		g := &gs[i]
		fmt.Fprintf(&b, " ] group %q last=%v read=%d consumers", g.Name, g.Last, g.EntriesRead)
		cs, err := st.Consumers(x, g)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			fmt.Fprintf(&b, " %q/%d/%d", c.Name, c.Seen, c.Pending)
		}
		ps, err := st.PendingRange(x, g, nil, storage.StreamID{}, storage.MaxStreamID, math.MaxInt64, 0)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(" pel")
		for _, p := range ps {
			fmt.Fprintf(&b, " %v/%q/%d/%d", p.ID, p.Consumer, p.Delivered, p.Count)
		}
	}
	return b.String()
}

// SPOP is recorded as SREM of the members it popped, whatever the form of
// its reply; an SPOP that popped nothing records nothing.
func TestEffectsSPopAsSRem(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.recording()
	h.submit(1, []string{"SADD", "s", "a", "b", "c", "d", "e"})
	h.next()
	h.takeRecords()
	members := func(reply string) []string {
		var ms []string
		for _, l := range strings.Split(reply, "\r\n") {
			if len(l) == 1 && l[0] >= 'a' && l[0] <= 'e' {
				ms = append(ms, l)
			}
		}
		return ms
	}
	check := func(reply string) {
		t.Helper()
		recs := h.takeRecords()
		expectRecords(t, recs, "0 SREM s "+strings.Join(members(reply), " "))
	}
	h.submit(1, []string{"SPOP", "s"})
	check(string(h.next().Reply))
	h.submit(1, []string{"SPOP", "s", "2"})
	check(string(h.next().Reply))
	h.submit(1, []string{"HELLO", "3"})
	h.next()
	h.submit(1, []string{"SPOP", "s", "10"}) // the rest, as a RESP3 set; the key goes
	reply := string(h.next().Reply)
	if !strings.HasPrefix(reply, "~2\r\n") {
		t.Fatalf("SPOP's RESP3 reply %q", reply)
	}
	check(reply)
	h.submit(1, []string{"SPOP", "s"}, []string{"SPOP", "s", "3"}, []string{"EXISTS", "s"})
	if got := string(h.next().Reply); got != "_\r\n~0\r\n:0\r\n" {
		t.Fatalf("SPOP of nothing: %q", got)
	}
	expectRecords(t, h.takeRecords())
}

// A woken retry is recorded as its client's command, flagged woken, after
// the write that woke it; replayed, it takes the same element from the
// same key, passing over a key of another type as the retry did.
func TestEffectsWokenReplays(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.open(2)
	h.open(3)
	h.recording()
	h.submit(2, []string{"BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"})
	h.submit(3, []string{"BLPOP", "str", "l", "0"})
	h.waitWaiters(2)
	h.submit(1, []string{"SET", "str", "x"}, []string{"RPUSH", "src", "a", "b"}, []string{"RPUSH", "l", "v1", "v2"})
	got := h.replies(3)
	if got[1] != "+OK\r\n:2\r\n:2\r\n" || got[2] != "$1\r\na\r\n" || got[3] != "*2\r\n$1\r\nl\r\n$2\r\nv1\r\n" {
		t.Fatalf("replies %v", got)
	}
	recs := h.takeRecords()
	expectRecords(t, recs,
		"0 SET str x",
		"0 RPUSH src a b",
		"0 ~BLMOVE src dst LEFT RIGHT 0",
		"0 RPUSH l v1 v2",
		"0 ~BLPOP str l 0")
	want := `db 0: 4 keys
  "dst" list exp=0: "a"
  "l" list exp=0: "v2"
  "src" list exp=0: "b"
  "str" string exp=0: "x"
`
	var live string
	h.a.Call(func() { live = dump(t, h.a.st) })
	if live != want {
		t.Fatalf("live keyspace:\n%s", live)
	}
	if got := dump(t, replayed(t, recs)); got != want {
		t.Fatalf("replayed keyspace:\n%s\nwant:\n%s", got, want)
	}
}

// A key found expired is recorded as a DEL before the command that found
// it, by a read (which records nothing else) as by a write.
func TestEffectsExpiredDelFirst(t *testing.T) {
	h := newHarness(t, Config{SweepInterval: time.Hour})
	h.open(1)
	h.recording()
	at := time.Now().UnixMilli() + 1
	ats := strconv.FormatInt(at, 10)
	h.submit(1, []string{"SET", "r", "1", "PXAT", ats}, []string{"SET", "w", "1", "PXAT", ats})
	h.next()
	h.takeRecords()
	wait.For(t, 5*time.Second, "the expiry to pass", func() bool { return time.Now().UnixMilli() > at+1 })
	h.submit(1, []string{"GET", "r"}, []string{"APPEND", "w", "zz"}, []string{"GET", "nothing"})
	if got := string(h.next().Reply); got != "$-1\r\n:2\r\n$-1\r\n" {
		t.Fatalf("replies %q", got)
	}
	expectRecords(t, h.takeRecords(), "0 DEL r", "0 DEL w", "0 APPEND w zz")
}

func TestEffectRoundTrip(t *testing.T) {
	args := [][]byte{[]byte("SET"), []byte(""), bytes.Repeat([]byte{0xff}, 300)}
	for _, c := range []struct {
		woken bool
		db    int
		now   int64
	}{{false, 0, 0}, {true, 15, 1700000000123}, {false, 3, -5}, {true, 1, math.MaxInt64}, {false, 2, math.MinInt64}} {
		p := encodeEffect([]byte("junk"), c.woken, c.db, c.now, args)[4:]
		e, err := decodeEffect(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if e.woken != c.woken || e.db != c.db || e.now != c.now || len(e.args) != 3 ||
			!bytes.Equal(e.args[0], args[0]) || len(e.args[1]) != 0 || !bytes.Equal(e.args[2], args[2]) {
			t.Fatalf("%+v decoded as %+v", c, e)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		buf := make([]byte, 0, 1024)
		_ = encodeEffect(buf, false, 0, 1, args)
	}); n > 1 {
		t.Fatalf("encodeEffect allocates %v times into a large enough buffer", n)
	}
}

// decodeEffect refuses every malformed payload with an error.
func TestDecodeEffectRejects(t *testing.T) {
	good := encodeEffect(nil, true, 2, 1700000000000, [][]byte{[]byte("LPUSH"), []byte("k"), []byte("v")})
	for i := 0; i < len(good); i++ {
		if _, err := decodeEffect(good[:i], nil); err == nil {
			t.Fatalf("a record cut to %d of %d bytes decoded", i, len(good))
		}
	}
	cases := map[string][]byte{
		"trailing":      append(bytes.Clone(good), 0),
		"version":       append([]byte{2}, good[1:]...),
		"flags":         append([]byte{1, 2}, good[2:]...),
		"db 16":         encodeEffect(nil, false, 16, 1, [][]byte{[]byte("PING")}),
		"argc 0":        encodeEffect(nil, false, 0, 1, nil),
		"long db":       {1, 0, 0x80, 0x00, 2, 1, 1, 'x'},
		"long now":      {1, 0, 0, 0x82, 0x00, 1, 1, 'x'},
		"long argc":     {1, 0, 0, 2, 0x81, 0x00, 1, 'x'},
		"long length":   {1, 0, 0, 2, 1, 0x81, 0x00, 'x'},
		"argc too big":  {1, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 'x'},
		"length beyond": {1, 0, 0, 2, 1, 5, 'x'},
		"overflow":      {1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	}
	for name, p := range cases {
		if e, err := decodeEffect(p, nil); err == nil {
			t.Errorf("%s: %x decoded as %+v", name, p, e)
		}
	}
}

func FuzzDecodeEffect(f *testing.F) {
	f.Add(encodeEffect(nil, true, 2, 1700000000000, [][]byte{[]byte("BLPOP"), []byte("a"), []byte("0")}))
	f.Add(encodeEffect(nil, false, 0, -1, [][]byte{[]byte("SET"), []byte(""), []byte("v")}))
	f.Add([]byte{1, 0, 0, 2, 1, 5, 'x'})
	f.Fuzz(func(t *testing.T, p []byte) {
		e, err := decodeEffect(p, nil)
		if err != nil {
			return
		}
		// One encoding per record: what decodes re-encodes to itself.
		if again := encodeEffect(nil, e.woken, e.db, e.now, e.args); !bytes.Equal(again, p) {
			t.Fatalf("%x decoded as %+v, which encodes as %x", p, e, again)
		}
	})
}

// The proof that replaying what a server recorded rebuilds its keyspace:
// a seeded random workload of every type's writes, expiry (lazy and by the
// sweeper), database moves and swaps, SPOP, and blocked clients woken by
// another connection's writes (some waiting across keys of another type)
// runs on a live actor that records its effects; a fresh store replays
// them; both keyspaces, dumped in full, must be identical.
func TestEffectsReplayDeterminism(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { replayDeterminism(t, seed, 3000) })
	}
}

const (
	workKeys  = 40
	blockers  = 6
	firstConn = 10
)

func replayDeterminism(t *testing.T, seed uint64, ops int) {
	h := newHarness(t, Config{SweepInterval: 10 * time.Millisecond, SweepBatch: 3})
	r := rand.New(rand.NewPCG(seed, 99))
	h.open(1)
	for i := range blockers {
		h.open(uint64(firstConn + i))
	}
	h.recording()
	var recs [][]byte
	busy := map[uint64]bool{}
	// await reads completions until conn 1's, freeing blockers served
	// meanwhile.
	await := func() {
		for {
			c := h.next()
			if c.ConnID == 1 {
				return
			}
			delete(busy, c.ConnID)
		}
	}
	g := &workload{r: r}
	for i := range ops {
		if i%200 == 199 {
			recs = append(recs, h.takeRecords()...)
		}
		if r.IntN(10) == 0 {
			var free []uint64
			for id := uint64(firstConn); id < firstConn+blockers; id++ {
				if !busy[id] {
					free = append(free, id)
				}
			}
			if len(free) > 0 {
				id := free[r.IntN(len(free))]
				busy[id] = true
				h.submit(id, g.blocking())
				continue
			}
		}
		if r.IntN(12) == 0 {
			// A transaction: its writes become one record.
			h.submit(1, []string{"multi"}, g.command(), g.command(), g.command(), []string{"exec"})
		} else {
			h.submit(1, g.command())
		}
		await()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h.a.Stop(ctx) // after Run returns, the actor's state is the test's
	recs = append(recs, h.takeEffectsStopped()...)
	live := dump(t, h.a.st)

	var woken, expired, srem, spop, txs, xadds, wokenGroups, fieldTTLs, expiredFields int
	var flat [][]byte
	for _, r := range recs {
		if r[1] == effectGroup {
			inner, err := decodeTx(r)
			if err != nil {
				t.Fatal(err)
			}
			flat = append(flat, inner...)
			txs++
			continue
		}
		flat = append(flat, r)
	}
	for _, r := range flat {
		e, err := decodeEffect(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The workload sends lower case: upper case is the actor's own.
		switch name := string(e.args[0]); {
		case e.woken && name == "xreadgroup":
			woken++
			wokenGroups++
		case name == "xadd":
			for _, a := range e.args {
				if string(a) == "*" || strings.HasSuffix(string(a), "-*") {
					t.Fatalf("XADD recorded with a generated ID: %q", e.args)
				}
			}
			xadds++
		case e.woken:
			woken++
		case name == "DEL":
			expired++
		case name == "SREM":
			srem++
		case name == "HPEXPIREAT":
			fieldTTLs++
		case name == "HDEL":
			expiredFields++
		case strings.EqualFold(name, "hexpire"), strings.EqualFold(name, "hpexpire"):
			fieldTTLs = -1 << 30 // recorded as sent, not with its absolute time
			spop++
		}
	}
	t.Logf("%d records: %d woken retries, %d expired keys, %d SPOPs as SREM, %d transactions; %d bytes of keyspace",
		len(recs), woken, expired, srem, txs, len(live))
	t.Logf("%d XADDs with their IDs, %d woken XREADGROUPs", xadds, wokenGroups)
	t.Logf("%d field expiries as HPEXPIREAT, %d expired fields as HDEL", fieldTTLs, expiredFields)
	// (Expired fields depend on how fast the run goes: they are counted,
	// not required; tests/hashfe_test.go waits for them.)
	if woken == 0 || expired == 0 || srem == 0 || spop != 0 || txs == 0 || xadds == 0 || wokenGroups == 0 ||
		fieldTTLs <= 0 {
		t.Fatalf("the workload did not exercise what it is for (or SPOP was recorded as sent)")
	}
	if got := dump(t, replayed(t, recs)); got != live {
		t.Fatalf("the replayed keyspace differs from the live one:\n%s", diffLines(live, got))
	}
}

// takeEffectsStopped takes the remaining records once Run has returned.
func (h *harness) takeEffectsStopped() [][]byte {
	var out [][]byte
	for _, r := range h.a.takeEffects() {
		out = append(out, bytes.Clone(r))
	}
	return out
}

// diffLines shows the first lines where a and b differ.
func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	shown := 0
	for i := 0; i < max(len(al), len(bl)) && shown < 20; i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			fmt.Fprintf(&out, "live:     %s\nreplayed: %s\n", x, y)
			shown++
		}
	}
	return out.String()
}

// workload generates the random commands, in lower case. Key i usually
// holds type i%5 (string, list, hash, set, sorted set), but any command
// may pick any key, so types collide now and then.
type workload struct {
	r *rand.Rand
}

func (g *workload) key(typ int) string {
	if g.r.IntN(8) == 0 {
		return fmt.Sprint("k", g.r.IntN(workKeys))
	}
	return fmt.Sprint("k", typ+5*g.r.IntN(workKeys/5))
}

func (g *workload) val() string { return fmt.Sprint("v", g.r.IntN(12)) }
func (g *workload) num() string { return fmt.Sprint(g.r.IntN(20) - 5) }
func (g *workload) end() string { return []string{"left", "right"}[g.r.IntN(2)] }

// command is one command of the connection that writes.
func (g *workload) command() []string {
	r := g.r
	if r.IntN(6) == 0 {
		return g.stream()
	}
	s, l, hs, st, z := g.key(0), g.key(1), g.key(2), g.key(3), g.key(4)
	any := g.key(r.IntN(5))
	switch n := r.IntN(100); {
	// Strings.
	case n < 4:
		return []string{"set", s, g.val()}
	case n < 6:
		return []string{"incr", s}
	case n < 7:
		return []string{"incrbyfloat", s, "1.5"}
	case n < 9:
		return []string{"append", s, g.val()}
	case n < 10:
		return []string{"setrange", s, fmt.Sprint(r.IntN(6)), g.val()}
	case n < 12:
		return []string{"set", any, g.val(), "px", fmt.Sprint(1 + r.IntN(60))}
	case n < 13:
		return []string{"set", s, g.val(), "ex", "100"}
	case n < 15:
		return []string{"set", s, g.val(), "pxat", fmt.Sprint(time.Now().UnixMilli() + int64(r.IntN(80)))}
	case n < 18:
		return []string{"pexpire", any, fmt.Sprint(1 + r.IntN(80))}
	case n < 19:
		return []string{"expire", any, "100"}
	case n < 20:
		return []string{"persist", any}
	// Keys and databases.
	case n < 22:
		return []string{"del", any}
	case n < 23:
		return []string{"rename", any, g.key(r.IntN(5))}
	case n < 24:
		return []string{"copy", any, g.key(r.IntN(5)), "replace"}
	case n < 25:
		return []string{"copy", any, any, "db", fmt.Sprint(1 + r.IntN(2))}
	case n < 26:
		return []string{"move", any, fmt.Sprint(r.IntN(3))}
	case n < 27:
		if r.IntN(4) == 0 {
			return []string{"swapdb", "0", fmt.Sprint(1 + r.IntN(2))}
		}
		return []string{"select", []string{"0", "0", "0", "1", "2"}[r.IntN(5)]}
	case n < 28:
		if r.IntN(8) == 0 {
			return []string{"flushdb"}
		}
		return []string{"get", any}
	// Lists.
	case n < 33:
		return []string{"lpush", l, g.val(), g.val()}
	case n < 38:
		return []string{"rpush", l, g.val()}
	case n < 40:
		return []string{"lpop", l}
	case n < 41:
		return []string{"rpop", l, "2"}
	case n < 43:
		return []string{"lmove", l, g.key(1), g.end(), g.end()}
	case n < 44:
		return []string{"linsert", l, []string{"before", "after"}[r.IntN(2)], g.val(), g.val()}
	case n < 45:
		return []string{"lrem", l, g.num(), g.val()}
	case n < 46:
		return []string{"ltrim", l, g.num(), g.num()}
	case n < 47:
		return []string{"lset", l, g.num(), g.val()}
	// Hashes.
	case n < 50:
		return []string{"hset", hs, g.val(), g.val(), g.val(), g.val()}
	case n < 51:
		return []string{"hdel", hs, g.val()}
	case n < 53:
		// Field expiries of a few ms: they pass during the run, so the
		// sweep and lookups expire fields (recorded as HDEL).
		return []string{[]string{"hpexpire", "hexpire"}[r.IntN(2)], hs, fmt.Sprint(r.IntN(6)), "fields", "2", g.val(), g.val()}
	case n < 55:
		return []string{"hincrby", hs, "n" + g.val(), g.num()}
	// Sets.
	case n < 60:
		return []string{"sadd", st, g.val(), g.val(), g.val()}
	case n < 62:
		return []string{"srem", st, g.val()}
	case n < 64:
		return []string{"spop", st}
	case n < 66:
		return []string{"spop", st, fmt.Sprint(r.IntN(4))}
	case n < 67:
		return []string{"smove", st, g.key(3), g.val()}
	case n < 68:
		return []string{"sinterstore", g.key(3), st, g.key(3)}
	// Sorted sets.
	case n < 74:
		return []string{"zadd", z, g.num(), g.val(), g.num() + ".25", g.val()}
	case n < 76:
		return []string{"zincrby", z, "0.5", g.val()}
	case n < 78:
		return []string{"zrem", z, g.val()}
	case n < 80:
		return []string{"zpopmin", z, fmt.Sprint(1 + r.IntN(2))}
	case n < 81:
		return []string{"zunionstore", g.key(4), "2", z, g.key(4), "weights", "1", "2"}
	case n < 82:
		return []string{"zremrangebyscore", z, "-inf", g.num()}
	// Reads, which record only the expired keys they meet.
	case n < 90:
		return []string{[]string{"get", "llen", "hgetall", "smembers", "zcard", "exists", "type"}[r.IntN(7)], any}
	default:
		// Pushes onto the keys blocked clients wait on.
		if r.IntN(2) == 0 {
			return []string{"zadd", z, g.num(), g.val()}
		}
		return []string{"rpush", l, g.val(), g.val()}
	}
}

// xkey is a stream key: x0..x3 usually, now and then a key of another
// type.
func (g *workload) xkey() string {
	if g.r.IntN(10) == 0 {
		return g.key(g.r.IntN(5))
	}
	return fmt.Sprint("x", g.r.IntN(4))
}

// stream is one stream command: XADD with "*" (whose ID depends on the
// time, and must be recorded as the ID made), consumer groups read,
// claimed and trimmed.
func (g *workload) stream() []string {
	r := g.r
	x := g.xkey()
	switch n := r.IntN(22); {
	case n < 19 && r.IntN(3) == 0:
		return []string{"xgroup", "create", x, "g", "$", "mkstream"}
	case n < 5:
		return []string{"xadd", x, "*", "f", g.val()}
	case n < 6:
		return []string{"xadd", x, "maxlen", "~", "3", "*", "f", g.val()}
	case n < 7:
		return []string{"xadd", x, "minid", "1", fmt.Sprint(r.IntN(3), "-*"), "f", g.val()}
	case n < 8:
		return []string{"xtrim", x, "maxlen", fmt.Sprint(r.IntN(4))}
	case n < 10:
		return []string{"xgroup", "create", x, "g", []string{"$", "0"}[r.IntN(2)], "mkstream"}
	case n < 13:
		return []string{"xreadgroup", "group", "g", g.val(), "count", "2", "streams", x, ">"}
	case n < 14:
		return []string{"xreadgroup", "group", "g", g.val(), "streams", x, "0"}
	case n < 15:
		return []string{"xautoclaim", x, "g", g.val(), "0", "0", "count", "2"}
	case n < 16:
		return []string{"xgroup", "delconsumer", x, "g", g.val()}
	case n < 17:
		return []string{"xgroup", "setid", x, "g", "0"}
	case n < 18:
		if r.IntN(3) == 0 {
			return []string{"xgroup", "destroy", x, "g"}
		}
		return []string{"xadd", x, "*", "f", g.val()}
	case n < 19:
		return []string{"xsetid", x, "99999999999999-0"}
	default:
		return []string{"xrange", x, "-", "+", "count", "3"}
	}
}

// blocking is one blocked client's command. Its keys may hold another
// type when it parks (a WRONGTYPE reply) or come to hold one while it
// waits (its retry passes over them); a few time out.
func (g *workload) blocking() []string {
	r := g.r
	timeout := "0"
	if r.IntN(6) == 0 {
		timeout = "0.02"
	}
	l1, l2, z1, z2 := g.key(1), g.key(1), g.key(4), g.key(4)
	if r.IntN(4) == 0 {
		l1 = g.key(r.IntN(5)) // perhaps of another type
	}
	if r.IntN(4) == 0 {
		z1 = g.key(r.IntN(5))
	}
	switch r.IntN(9) {
	case 6, 8:
		return []string{"xreadgroup", "group", "g", g.val(), "block", "0", "streams", g.xkey(), ">"}
	case 7:
		return []string{"xread", "block", "20", "streams", g.xkey(), "$"}
	case 0:
		return []string{"blpop", l1, l2, timeout}
	case 1:
		return []string{"brpop", l2, l1, timeout}
	case 2:
		return []string{"blmove", l1, g.key(1), g.end(), g.end(), timeout}
	case 3:
		return []string{"blmpop", timeout, "2", l1, l2, g.end(), "count", "2"}
	case 4:
		return []string{"bzpopmin", z1, z2, timeout}
	default:
		return []string{"bzmpop", timeout, "2", z1, z2, []string{"min", "max"}[r.IntN(2)], "count", "2"}
	}
}

// Commands run by a command (Ctx.call, as EXEC does and EVAL will) each record
// themselves, at their own level; the command that ran them, which changed
// nothing itself, records nothing.
func TestEffectsNested(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.recording()
	h.submit(1, []string{"SADD", "s", "m"}, []string{"SELECT", "2"})
	h.next()
	h.takeRecords()
	h.a.Call(func() {
		a := h.a
		s := a.sessions[1]
		f := a.enter()
		defer a.leave()
		outer := &f.ctx
		*outer = Ctx{a: a, f: f, s: s, st: a.st, db: s.db, now: a.nowMs, args: [][]byte{[]byte("OUTER")}}
		// Every call goes to the slow log, which asks whether its caller
		// is a script: the outer frame has no command (a busy machine made
		// this test's calls slow enough to find that out).
		a.slow.slowerThan = 0
		for _, cmd := range [][]string{{"SET", "a", "1"}, {"GET", "a"}, {"SELECT", "0"}, {"SPOP", "s"}, {"BLPOP", "none", "0"}} {
			argv := make([][]byte, len(cmd))
			for i, arg := range cmd {
				argv[i] = []byte(arg)
			}
			w := proto.Writer{Proto: 2, Buf: []byte("earlier replies")}
			outer.call(argv, &w)
		}
		a.keysTouched() // the outer command's own step: nothing is left
	})
	expectRecords(t, h.takeRecords(), "2 SET a 1", "0 SREM s m")
}
