package tests

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/cellar-db/cellar"
)

// TestBitsMatchRedis runs seeded random sequences of bitmap and bit field
// commands (SETBIT, GETBIT, BITCOUNT and BITPOS with BYTE and BIT ranges,
// BITFIELD with every type width and overflow behaviour, BITOP), mixed
// with the string commands that see the same bytes (GET, SETRANGE,
// APPEND), against Cellar and a real redis-server, and requires identical
// reply bytes after every command. Like TestCollectionsMatchRedis it runs
// with the defaults and with a 1-byte memory bound, flushed every round.
func TestBitsMatchRedis(t *testing.T) {
	t.Parallel()
	againstRedis(t, func(t *testing.T, cel, red *rawConn, seed uint64) {
		g := &bitGen{r: rand.New(rand.NewPCG(seed, 17))}
		for i := 0; i < steps(5000); i++ {
			sameReply(t, cel, red, i, g.next())
		}
	})
}

func sameReply(t *testing.T, cel, red *rawConn, i int, args []string) {
	t.Helper()
	got, err1 := cel.tryDo(args...)
	want, err2 := red.tryDo(args...)
	if err1 != nil || err2 != nil {
		t.Fatalf("command %d %q: cellar err %v, redis err %v", i, args, err1, err2)
	}
	if !compatEqual(0, got, want) {
		t.Fatalf("command %d %q:\n cellar: %q\n redis:  %q", i, args, got, want)
	}
}

// bitGen makes random bit commands over a few keys of up to a few hundred
// bytes.
type bitGen struct{ r *rand.Rand }

func (g *bitGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *bitGen) key() string { return g.pick("b1", "b2", "b3", "b1", "b2", "nokey", "list") }

// offset is a bit offset, mostly inside the keys' few hundred bytes.
func (g *bitGen) offset() int { return g.r.IntN(2400) }

// index is a BITCOUNT/BITPOS range end: negative or positive, sometimes
// far out.
func (g *bitGen) index() string {
	switch g.r.IntN(6) {
	case 0:
		return strconv.Itoa(-g.r.IntN(400))
	case 1:
		return strconv.Itoa(g.r.IntN(100000) - 50000)
	default:
		return strconv.Itoa(g.r.IntN(400))
	}
}

func (g *bitGen) unit() []string {
	switch g.r.IntN(3) {
	case 0:
		return nil
	case 1:
		return []string{g.pick("BYTE", "byte")}
	}
	return []string{g.pick("BIT", "bit")}
}

// fieldType is a bit field type, i1..i64 or u1..u63, rarely invalid.
func (g *bitGen) fieldType() string {
	if g.r.IntN(40) == 0 {
		return g.pick("u64", "i65", "i0", "x8")
	}
	if g.r.IntN(2) == 0 {
		return "i" + strconv.Itoa(1+g.r.IntN(64))
	}
	return "u" + strconv.Itoa(1+g.r.IntN(63))
}

// value is a bit field argument: small, near a power of two, or extreme.
func (g *bitGen) value() string {
	switch g.r.IntN(5) {
	case 0:
		return strconv.FormatInt(g.r.Int64(), 10)
	case 1:
		return strconv.FormatInt(-g.r.Int64(), 10)
	case 2:
		p := int64(1) << g.r.IntN(63)
		return strconv.FormatInt(p+int64(g.r.IntN(3))-1, 10)
	case 3:
		return g.pick("9223372036854775807", "-9223372036854775808", "0", "-1")
	}
	return strconv.Itoa(g.r.IntN(200) - 100)
}

func (g *bitGen) fieldOffset(typ string) string {
	if g.r.IntN(4) == 0 {
		return "#" + strconv.Itoa(g.r.IntN(40))
	}
	return strconv.Itoa(g.offset())
}

func (g *bitGen) next() []string {
	k := g.key()
	switch g.r.IntN(16) {
	case 0, 1, 2:
		return []string{"SETBIT", k, strconv.Itoa(g.offset()), g.pick("0", "1", "1")}
	case 3:
		return []string{"GETBIT", k, strconv.Itoa(g.offset())}
	case 4, 5:
		args := []string{"BITCOUNT", k}
		if g.r.IntN(4) != 0 {
			args = append(args, g.index(), g.index())
			args = append(args, g.unit()...)
		}
		return args
	case 6, 7:
		args := []string{"BITPOS", k, g.pick("0", "1")}
		if n := g.r.IntN(4); n > 0 {
			args = append(args, g.index())
			if n > 1 {
				args = append(args, g.index())
				if n > 2 {
					args = append(args, g.pick("BIT", "BYTE"))
				}
			}
		}
		return args
	case 8, 9, 10:
		cmd := "BITFIELD"
		ro := g.r.IntN(8) == 0
		if ro {
			cmd = "BITFIELD_RO"
		}
		args := []string{cmd, k}
		for n := g.r.IntN(4) + 1; n > 0; n-- {
			if !ro && g.r.IntN(3) == 0 {
				args = append(args, "OVERFLOW", g.pick("WRAP", "SAT", "FAIL", "sat"))
			}
			typ := g.fieldType()
			switch op := g.r.IntN(3); {
			case op == 0 || ro:
				args = append(args, "GET", typ, g.fieldOffset(typ))
			case op == 1:
				args = append(args, "SET", typ, g.fieldOffset(typ), g.value())
			default:
				args = append(args, "INCRBY", typ, g.fieldOffset(typ), g.value())
			}
		}
		return args
	case 11:
		op := g.pick("AND", "OR", "XOR", "NOT")
		args := []string{"BITOP", op, g.pick("b1", "b2", "b3", "dest")}
		n := 1
		if op != "NOT" {
			n += g.r.IntN(3)
		}
		for ; n > 0; n-- {
			args = append(args, g.key())
		}
		return args
	case 12:
		return []string{"GET", g.pick("b1", "b2", "b3", "dest")}
	case 13:
		return []string{"SETRANGE", k, strconv.Itoa(g.r.IntN(300)), g.pick("\xff", "\x00\x01", "abc", "\x80\x80\x80\x80")}
	case 14:
		return []string{"APPEND", k, g.pick("\xff", "x", "\x00\x00\x00")}
	}
	if g.r.IntN(3) == 0 {
		return []string{"RPUSH", "list", "x"}
	}
	return []string{"DEL", g.pick("b1", "b2", "b3", "dest")}
}

// TestHLLMatchRedis compares HyperLogLogs with a real redis-server: random
// PFADD, PFCOUNT (one key and several), PFMERGE and GET of the raw value
// over a few keys, under several hll-sparse-max-bytes settings, must give
// the same bytes (so the sparse and dense representations and the cached
// cardinality are Redis's exactly); then a million random elements added
// in batches must give the same PFCOUNT and the same HLL string; and HLL
// strings copied from Redis to Cellar with GET and SET, and back, count
// the same on both sides.
func TestHLLMatchRedis(t *testing.T) {
	t.Parallel()
	redisAddr := startRedis(t)
	s := startServer(t)
	cel, red := dialRaw(t, s.addr), dialRaw(t, redisAddr)
	both := func(args ...string) {
		t.Helper()
		for _, c := range []*rawConn{cel, red} {
			if _, err := c.tryDo(args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("random", func(t *testing.T) {
		for seed := uint64(1); seed <= 3; seed++ {
			both("FLUSHALL")
			both("CONFIG", "SET", "hll-sparse-max-bytes", []string{"3000", "100", "20000"}[seed-1])
			r := rand.New(rand.NewPCG(seed, 99))
			key := func() string { return []string{"h1", "h2", "h3", "nokey"}[r.IntN(4)] }
			for i := 0; i < steps(3000); i++ {
				var args []string
				switch r.IntN(10) {
				case 0, 1, 2, 3:
					args = []string{"PFADD", key()}
					for n := r.IntN(20); n > 0; n-- {
						args = append(args, strconv.Itoa(r.IntN(50000)))
					}
				case 4, 5:
					args = []string{"PFCOUNT", key()}
				case 6:
					args = []string{"PFCOUNT", key(), key(), key()}
				case 7:
					// PFMERGE into a sparse key costs both servers a
					// scan of the key per register (100-400 ms near
					// 20000 bytes on a busy machine): a third of the
					// draws still merge a few hundred times a seed.
					if r.IntN(3) == 0 {
						args = []string{"PFMERGE", key(), key(), key()}
					} else {
						args = []string{"PFCOUNT", key(), key()}
					}
				case 8:
					args = []string{"GET", key()}
				default:
					args = []string{"PFDEBUG", "ENCODING", key()}
				}
				sameReply(t, cel, red, i, args)
			}
		}
		both("CONFIG", "SET", "hll-sparse-max-bytes", "3000")
	})
	t.Run("a million elements", func(t *testing.T) {
		both("FLUSHALL")
		r := rand.New(rand.NewPCG(7, 7))
		for i := 0; i < 500; i++ {
			args := []string{"PFADD", "big"}
			for n := 0; n < 2000; n++ {
				args = append(args, strconv.FormatUint(r.Uint64(), 36))
			}
			sameReply(t, cel, red, i, args)
			if i%50 == 0 || i == 499 {
				sameReply(t, cel, red, i, []string{"PFCOUNT", "big"})
				sameReply(t, cel, red, i, []string{"GET", "big"})
			}
		}
		want, err := red.tryDo("PFCOUNT", "big")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("PFCOUNT of 1000000 random elements: %q on both", want)
	})
	t.Run("copied between servers", func(t *testing.T) {
		both("FLUSHALL")
		r := rand.New(rand.NewPCG(3, 3))
		sizes := []int{0, 5, 300, 3000, 100000}
		for _, n := range sizes {
			key := "src" + strconv.Itoa(n)
			for added := 0; added < n || added == 0; {
				args := []string{"PFADD", key}
				for j := 0; j < 1000 && added < n; j++ {
					args = append(args, strconv.Itoa(r.IntN(1<<30)))
					added++
				}
				if _, err := red.tryDo(args...); err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
			}
			// Redis's string into Cellar, and Cellar's copy back to Redis.
			raw, err := red.tryDo("GET", key)
			if err != nil {
				t.Fatal(err)
			}
			val := bulkBody(t, raw)
			if _, err := cel.tryDo("SET", key, val); err != nil {
				t.Fatal(err)
			}
			sameReply(t, cel, red, n, []string{"PFCOUNT", key})
			sameReply(t, cel, red, n, []string{"PFDEBUG", "ENCODING", key})
			sameReply(t, cel, red, n, []string{"PFADD", key, "one", "more"})
			sameReply(t, cel, red, n, []string{"PFCOUNT", key})
			back, err := cel.tryDo("GET", key)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := red.tryDo("SET", key+"back", bulkBody(t, back)); err != nil {
				t.Fatal(err)
			}
			sameReply(t, cel, red, n, []string{"GET", key})
			got, _ := red.tryDo("PFCOUNT", key+"back")
			want, _ := red.tryDo("PFCOUNT", key)
			if got != want {
				t.Fatalf("%s copied back from Cellar counts %q on Redis, the original %q", key, got, want)
			}
		}
		args := []string{"PFCOUNT"}
		for _, n := range sizes {
			args = append(args, "src"+strconv.Itoa(n))
		}
		sameReply(t, cel, red, 0, args)
	})
}

// bulkBody is the payload of a RESP bulk string reply.
func bulkBody(t *testing.T, raw string) string {
	t.Helper()
	s := raw
	if len(s) < 5 || s[0] != '$' {
		t.Fatalf("not a bulk string: %q", raw)
	}
	i := 1
	for s[i] != '\r' {
		i++
	}
	n, err := strconv.Atoi(s[1:i])
	if err != nil || i+2+n > len(s) {
		t.Fatalf("bad bulk string: %q", raw)
	}
	return s[i+2 : i+2+n]
}

// TestBitAndLCSLimits checks the limits these commands share with Redis at
// a small proto-max-bulk-len (1 MB on both servers): the last bit offset a
// SETBIT or BITFIELD may reach and the first it may not, and LCS's table of
// (len1+1)×(len2+1) 32-bit lengths just under and just over the limit.
func TestBitAndLCSLimits(t *testing.T) {
	t.Parallel()
	redisAddr := startRedis(t, "--proto-max-bulk-len", "1mb")
	s := startServer(t, func(c *cellar.Config) { c.ProtoMaxBulkLen = 1 << 20 })
	cel, red := dialRaw(t, s.addr), dialRaw(t, redisAddr)
	a500, b500 := strings.Repeat("ab", 250), strings.Repeat("ba", 250)
	a600, b600 := strings.Repeat("ab", 300), strings.Repeat("ba", 300)
	for i, args := range [][]string{
		{"SETBIT", "big", "8388607", "1"}, {"STRLEN", "big"}, {"GETBIT", "big", "8388607"},
		{"SETBIT", "big", "8388608", "1"}, {"GETBIT", "big", "8388608"},
		{"BITFIELD", "big", "SET", "u8", "8388600", "255"}, {"BITFIELD", "big", "GET", "u8", "8388608"},
		{"BITFIELD", "big", "SET", "u8", "#1048576", "1"}, {"BITFIELD", "big", "SET", "u8", "#1048575", "1"},
		{"STRLEN", "big"}, {"BITCOUNT", "big"}, {"BITPOS", "big", "1", "-2"},
		{"MSET", "a500", a500, "b500", b500, "a600", a600, "b600", b600},
		{"LCS", "a500", "b500", "LEN"}, {"LCS", "a600", "b600", "LEN"}, {"LCS", "a600", "b500", "LEN"},
	} {
		sameReply(t, cel, red, i, args)
	}
	for args, want := range map[[5]string]string{
		{"SETBIT", "big", "8388608", "1"}: "-ERR bit offset is not an integer or out of range\r\n",
		{"LCS", "a600", "b600", "LEN"}:    "-ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len\r\n",
		{"LCS", "a500", "b500", "LEN"}:    ":499\r\n",
	} {
		cmd := args[:]
		if cmd[4] == "" {
			cmd = cmd[:4]
		}
		if got, err := cel.tryDo(cmd...); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", cmd, got, err, want)
		}
	}
}

// TestLargeBitmapMatchesRedis works on large bitmaps (128 KB and 1 MB),
// whose values live in SQLite's blobs table: random SETBIT and GETBIT over them, mixed
// with the commands that read or rewrite the whole value (BITCOUNT, GET,
// SETRANGE, APPEND, BITFIELD), must answer as Redis does, and the bytes
// must be Redis's after a restart.
func TestLargeBitmapMatchesRedis(t *testing.T) {
	t.Parallel()
	redisAddr := startRedis(t)
	s := startServer(t)
	cel, red := dialRaw(t, s.addr), dialRaw(t, redisAddr)
	r := rand.New(rand.NewPCG(11, 11))
	keys := []string{"big1", "big2"}
	sizes := []int{128 << 10, 1 << 20}
	for i, k := range keys {
		sameReply(t, cel, red, i, []string{"SETBIT", k, strconv.Itoa(sizes[i]*8 - 1), "1"})
	}
	for i := 0; i < steps(6000); i++ {
		k := r.IntN(2)
		off := strconv.Itoa(r.IntN(sizes[k] * 8))
		var args []string
		switch n := r.IntN(100); {
		case n < 50:
			args = []string{"SETBIT", keys[k], off, []string{"0", "1"}[r.IntN(2)]}
		case n < 90:
			args = []string{"GETBIT", keys[k], off}
		case n < 93:
			args = []string{"BITCOUNT", keys[k]}
		case n < 95:
			args = []string{"BITFIELD", keys[k], "INCRBY", "u16", off, "12345", "GET", "i32", off}
		case n < 96:
			// Overlapping fields in one command: each sees the ones before.
			w := strconv.Itoa(1 + r.IntN(64))
			args = []string{"BITFIELD", keys[k], "OVERFLOW", []string{"WRAP", "SAT", "FAIL"}[r.IntN(3)],
				"INCRBY", "i" + w, off, strconv.FormatInt(r.Int64()-r.Int64(), 10), "SET", "u8", off, strconv.Itoa(r.IntN(300)),
				"GET", "u" + strconv.Itoa(1+r.IntN(63)), off, "INCRBY", "u7", "#" + strconv.Itoa(r.IntN(1000)), "100"}
		case n < 97:
			args = []string{"BITFIELD_RO", keys[k], "GET", "i64", off, "GET", "u3", off}
		case n < 98:
			args = []string{"SETRANGE", keys[k], strconv.Itoa(r.IntN(sizes[k])), "\xff\x00\xaa"}
		case n < 99:
			args = []string{"APPEND", keys[k], "x"}
			sizes[k]++
		default:
			args = []string{"GET", keys[k]}
		}
		sameReply(t, cel, red, i, args)
	}
	s.stop()
	s.start()
	cel = dialRaw(t, s.addr)
	for _, k := range keys {
		sameReply(t, cel, red, 0, []string{"GET", k})
	}
}
