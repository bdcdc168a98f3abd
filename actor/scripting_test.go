package actor

import (
	"math/rand/v2"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// groupRecords renders a round's records, a group's members indented
// under "group".
func groupRecords(t *testing.T, recs [][]byte) []string {
	t.Helper()
	var out []string
	for _, r := range recs {
		members, ok, err := splitGroup(r, nil)
		if err != nil {
			t.Fatalf("group %q: %v", r, err)
		}
		if !ok {
			out = append(out, showRecords(t, [][]byte{r})...)
			continue
		}
		out = append(out, "group")
		for _, m := range showRecords(t, members) {
			out = append(out, "  "+m)
		}
	}
	return out
}

// A script's writes are one group record (all or none after a crash),
// recorded as the commands it ran (with SPOP as SREM), never as the
// EVAL; a script with one write records just that write, one that wrote
// nothing records nothing. Replayed, the records rebuild the same
// keyspace without running Lua.
func TestEffectsScriptIsOneGroup(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.recording()
	h.submit(1, []string{"SADD", "s", "m"})
	h.next()
	before := h.takeRecords()
	h.submit(1,
		[]string{"EVAL", "redis.call('set', KEYS[1], 'x'); redis.call('rpush', KEYS[2], 'a', 'b'); redis.call('spop', 's'); redis.call('select', '3'); redis.call('incr', 'n'); return 1", "2", "k", "l"},
		[]string{"EVAL", "return redis.call('incr', 'one')", "0"},
		[]string{"EVAL", "return redis.call('get', 'k')", "0"},
		[]string{"EVAL", "redis.call('set', 'half', '1'); error('stop')", "0"},
	)
	reply := string(h.next().Reply)
	if !strings.HasPrefix(reply, ":1\r\n:1\r\n$1\r\nx\r\n-ERR user_script:1: stop script: ") {
		t.Fatalf("replies %q", reply)
	}
	recs := h.takeRecords()
	got := strings.Join(groupRecords(t, recs), "\n")
	want := strings.Join([]string{
		"group",
		"  0 set k x",
		"  0 rpush l a b",
		"  0 SREM s m",
		"  3 incr n",
		"0 incr one",
		"0 set half 1",
	}, "\n")
	if got != want {
		t.Fatalf("records:\n%s\nwant:\n%s", got, want)
	}
	var live string
	h.a.Call(func() { live = dump(t, h.a.st) })
	if d := dump(t, replayed(t, append(before, recs...))); d != live {
		t.Fatalf("replayed keyspace:\n%s\nwant:\n%s", d, live)
	}
}

// A malformed group is refused whole: nothing of it runs.
func TestSplitGroupRejects(t *testing.T) {
	one := encodeEffect(nil, false, 0, 1, [][]byte{[]byte("SET"), []byte("a"), []byte("1")})
	good := []byte{effectVersion, effectGroup, 2}
	for range 2 {
		good = append(good, byte(len(one)))
		good = append(good, one...)
	}
	if recs, ok, err := splitGroup(good, nil); !ok || err != nil || len(recs) != 2 {
		t.Fatalf("good group: %d %v %v", len(recs), ok, err)
	}
	for name, p := range map[string][]byte{
		"count one":      append([]byte{effectVersion, effectGroup, 1, byte(len(one))}, one...),
		"short":          good[:len(good)-1],
		"trailing":       append(append([]byte(nil), good...), 0),
		"group in group": {effectVersion, effectGroup, 2, 3, effectVersion, effectGroup, 0, 3, effectVersion, effectGroup, 0},
	} {
		if _, ok, err := splitGroup(p, nil); !ok || err == nil {
			t.Errorf("%s: ok %v err %v", name, ok, err)
		}
	}
}

// The bundled libraries' decoders take any bytes a script passes them:
// random input makes a script error at worst, never a Go panic that
// escapes the interpreter.
func TestLuaLibsRandomInput(t *testing.T) {
	h := newHarness(t, Config{})
	r := rand.New(rand.NewPCG(1, 2))
	h.a.Call(func() {
		env := h.a.newLuaEnv(false)
		defer env.close()
		L := env.L
		calls := []string{
			"return cmsgpack.unpack(ARGV[1])",
			"return cmsgpack.unpack_limit(ARGV[1], 3, 1)",
			"return cjson.decode(ARGV[1])",
			"return struct.unpack(ARGV[1], ARGV[1])",
			"return struct.unpack('bc0', ARGV[1])",
			"return struct.pack(ARGV[1], 1, 2, 3)",
			"return string.format(ARGV[1], 1, 'a', 2.5)",
		}
		for i := 0; i < 3000; i++ {
			b := make([]byte, r.IntN(24))
			for j := range b {
				if r.IntN(2) == 0 {
					b[j] = byte(r.IntN(256))
				} else {
					b[j] = "[]{}\\\"0123456789.eE-+,:nulltrfs%dxbBhHiIlLcs<>!"[r.IntN(46)]
				}
			}
			src := calls[i%len(calls)]
			fn, err := env.compile([]byte(src), "user_script")
			if err != nil {
				t.Fatal(err)
			}
			argv := L.NewTable()
			argv.RawSetInt(1, lua.LString(b))
			env.globals.RawSetString("ARGV", argv)
			if err, broken := protectedCall(L, lua.P{Fn: fn, NRet: 1, Protect: true, Handler: env.errHandler}); broken {
				t.Fatalf("%s with %q: the interpreter broke: %v", src, b, err)
			}
			L.SetTop(0)
		}
	})
}
