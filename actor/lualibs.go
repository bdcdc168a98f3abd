package actor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// The libraries Redis bundles with its Lua, written for gopher-lua with
// the behaviour (and the error texts, where scripts can see them) of the
// versions Redis 7.0 ships: LuaBitOp's bit, lua-cjson 2.1.0's cjson,
// lua-cmsgpack 0.4.0's cmsgpack and Roberto Ierusalimschy's struct.

// openLuaLibs adds bit, cjson, cmsgpack and struct to the state.
func openLuaLibs(L *lua.LState) {
	g := L.G.Global
	g.RawSetString("bit", newBitLib(L))
	g.RawSetString("cjson", newCJSONLib(L))
	g.RawSetString("cmsgpack", newMsgpackLib(L))
	g.RawSetString("struct", newStructLib(L))
}

// argError raises Lua's "bad argument" error for argument n of the
// library function fname.
func argError(L *lua.LState, n int, fname, msg string) {
	L.RaiseError("bad argument #%d to '%s' (%s)", n, fname, msg)
}

func luaLib(L *lua.LState, fns map[string]lua.LGFunction) *lua.LTable {
	t := L.NewTable()
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}

// ---- bit (LuaBitOp) ----

// toBit normalises a number to a signed 32-bit integer as LuaBitOp does:
// rounded to the nearest integer (ties to even), then taken modulo 2^32.
func toBit(f float64) int32 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	r := math.Mod(math.RoundToEven(f), 4294967296)
	if r < 0 {
		r += 4294967296
	}
	return int32(uint32(r))
}

// bitArg is argument i of bit.<fname> as a 32-bit value; anything but a
// number (or a string that converts) fails with Lua's text.
func bitArg(L *lua.LState, fname string, i int) uint32 {
	switch v := L.Get(i).(type) {
	case lua.LNumber:
		return uint32(toBit(float64(v)))
	case lua.LString:
		if f, err := strconv.ParseFloat(strings.TrimSpace(string(v)), 64); err == nil {
			return uint32(toBit(f))
		}
	}
	got := "no value"
	if i <= L.GetTop() {
		got = L.Get(i).Type().String()
	}
	argError(L, i, fname, "number expected, got "+got)
	return 0
}

func pushBit(L *lua.LState, v uint32) int {
	L.Push(lua.LNumber(int32(v)))
	return 1
}

func newBitLib(L *lua.LState) *lua.LTable {
	fold := func(name string, op func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			v := bitArg(L, name, 1)
			for i := 2; i <= L.GetTop(); i++ {
				v = op(v, bitArg(L, name, i))
			}
			return pushBit(L, v)
		}
	}
	shift := func(name string, op func(v uint32, n uint) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			return pushBit(L, op(bitArg(L, name, 1), uint(bitArg(L, name, 2)&31)))
		}
	}
	return luaLib(L, map[string]lua.LGFunction{
		"tobit":   func(L *lua.LState) int { return pushBit(L, bitArg(L, "tobit", 1)) },
		"bnot":    func(L *lua.LState) int { return pushBit(L, ^bitArg(L, "bnot", 1)) },
		"band":    fold("band", func(a, b uint32) uint32 { return a & b }),
		"bor":     fold("bor", func(a, b uint32) uint32 { return a | b }),
		"bxor":    fold("bxor", func(a, b uint32) uint32 { return a ^ b }),
		"lshift":  shift("lshift", func(v uint32, n uint) uint32 { return v << n }),
		"rshift":  shift("rshift", func(v uint32, n uint) uint32 { return v >> n }),
		"arshift": shift("arshift", func(v uint32, n uint) uint32 { return uint32(int32(v) >> n) }),
		"rol":     shift("rol", func(v uint32, n uint) uint32 { return v<<n | v>>(32-n) }),
		"ror":     shift("ror", func(v uint32, n uint) uint32 { return v>>n | v<<(32-n) }),
		"bswap": func(L *lua.LState) int {
			v := bitArg(L, "bswap", 1)
			return pushBit(L, v>>24|(v>>8)&0xff00|(v&0xff00)<<8|v<<24)
		},
		"tohex": func(L *lua.LState) int {
			v := bitArg(L, "tohex", 1)
			n := 8
			if L.GetTop() >= 2 {
				n = int(int32(bitArg(L, "tohex", 2)))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n, digits = -n, "0123456789ABCDEF"
			}
			if n > 8 {
				n = 8
			}
			buf := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				buf[i] = digits[v&15]
				v >>= 4
			}
			L.Push(lua.LString(buf))
			return 1
		},
	})
}

// ---- cjson (lua-cjson 2.1.0 as Redis builds it) ----

type cjsonConfig struct {
	null                    lua.LValue
	precision               int
	maxEncodeDepth          int
	maxDecodeDepth          int
	sparseConvert           bool
	sparseRatio, sparseSafe int
	encodeInvalid           bool
	decodeInvalid           bool
}

func newCJSONLib(L *lua.LState) *lua.LTable {
	cfg := &cjsonConfig{precision: 14, maxEncodeDepth: 1000, maxDecodeDepth: 1000, sparseRatio: 2, sparseSafe: 10, decodeInvalid: true}
	null := L.NewUserData()
	cfg.null = null
	boolOpt := func(p *bool) lua.LGFunction {
		return func(L *lua.LState) int {
			if L.GetTop() >= 1 {
				*p = lua.LVAsBool(L.Get(1))
			}
			L.Push(lua.LBool(*p))
			return 1
		}
	}
	intOpt := func(p *int, lo, hi int) lua.LGFunction {
		return func(L *lua.LState) int {
			if L.GetTop() >= 1 {
				n := L.CheckInt(1)
				if n < lo || n > hi {
					L.ArgError(1, "expected integer between "+strconv.Itoa(lo)+" and "+strconv.Itoa(hi))
				}
				*p = n
			}
			L.Push(lua.LNumber(*p))
			return 1
		}
	}
	keep := true
	t := luaLib(L, map[string]lua.LGFunction{
		"encode": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				argError(L, 1, "encode", "expected 1 argument")
			}
			var b []byte
			b = cfg.encode(L, b, L.Get(1), 0)
			L.Push(lua.LString(b))
			return 1
		},
		"decode": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				argError(L, 1, "decode", "expected 1 argument")
			}
			s := L.CheckString(1)
			d := jsonDecoder{L: L, cfg: cfg, s: s}
			v := d.value(0)
			d.space()
			if d.pos < len(d.s) {
				d.fail("the end", d.tokenName())
			}
			L.Push(v)
			return 1
		},
		"encode_keep_buffer":      boolOpt(&keep),
		"encode_max_depth":        intOpt(&cfg.maxEncodeDepth, 1, math.MaxInt32),
		"decode_max_depth":        intOpt(&cfg.maxDecodeDepth, 1, math.MaxInt32),
		"encode_number_precision": intOpt(&cfg.precision, 1, 14),
		"encode_invalid_numbers":  boolOpt(&cfg.encodeInvalid),
		"decode_invalid_numbers":  boolOpt(&cfg.decodeInvalid),
		"encode_sparse_array": func(L *lua.LState) int {
			if L.GetTop() >= 1 {
				cfg.sparseConvert = lua.LVAsBool(L.Get(1))
			}
			if L.GetTop() >= 2 {
				cfg.sparseRatio = L.CheckInt(2)
			}
			if L.GetTop() >= 3 {
				cfg.sparseSafe = L.CheckInt(3)
			}
			L.Push(lua.LBool(cfg.sparseConvert))
			L.Push(lua.LNumber(cfg.sparseRatio))
			L.Push(lua.LNumber(cfg.sparseSafe))
			return 3
		},
	})
	t.RawSetString("null", null)
	t.RawSetString("new", L.NewFunction(func(L *lua.LState) int {
		L.Push(newCJSONLib(L)) // a module of its own settings
		return 1
	}))
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	return t
}

// cjsonFormatNumber is lua-cjson's "%.14g" (or the configured precision).
func cjsonFormatNumber(f float64, precision int) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 && precision >= 14 {
		if f == 0 && math.Signbit(f) {
			return "-0"
		}
		return strconv.FormatInt(int64(f), 10)
	}
	return formatG(f, precision)
}

// formatG is C's printf("%.<p>g").
func formatG(f float64, p int) string {
	s := strconv.FormatFloat(f, 'g', p, 64)
	// Go omits trailing zeros as C's %g does; exponents need two digits.
	if i := strings.IndexAny(s, "e"); i >= 0 {
		mant, exp := s[:i], s[i+1:]
		sign := exp[0]
		digits := exp[1:]
		if len(digits) < 2 {
			digits = "0" + digits
		}
		s = mant + "e" + string(sign) + digits
	}
	return s
}

func (cfg *cjsonConfig) encodeErr(L *lua.LState, typ, msg string) {
	L.RaiseError("Cannot serialise %s: %s", typ, msg)
}

func (cfg *cjsonConfig) encode(L *lua.LState, b []byte, v lua.LValue, depth int) []byte {
	switch v := v.(type) {
	case *lua.LNilType:
		return append(b, "null"...)
	case lua.LBool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case lua.LNumber:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			if !cfg.encodeInvalid {
				cfg.encodeErr(L, "number", "must not be NaN or Inf")
			}
			if math.IsNaN(f) {
				return append(b, "nan"...)
			}
			if f > 0 {
				return append(b, "inf"...)
			}
			return append(b, "-inf"...)
		}
		return append(b, cjsonFormatNumber(f, cfg.precision)...)
	case lua.LString:
		return jsonQuote(b, string(v))
	case *lua.LUserData:
		if lua.LValue(v) == cfg.null {
			return append(b, "null"...)
		}
	case *lua.LTable:
		depth++
		if depth > cfg.maxEncodeDepth {
			L.RaiseError("Cannot serialise, excessive nesting (%d)", depth)
		}
		n, isArray := cfg.arrayLength(L, v)
		if isArray {
			b = append(b, '[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b = append(b, ',')
				}
				b = cfg.encode(L, b, v.RawGetInt(i), depth)
			}
			return append(b, ']')
		}
		b = append(b, '{')
		first := true
		v.ForEach(func(k, e lua.LValue) {
			if !first {
				b = append(b, ',')
			}
			first = false
			switch k := k.(type) {
			case lua.LString:
				b = jsonQuote(b, string(k))
			case lua.LNumber:
				b = append(b, '"')
				b = append(b, cjsonFormatNumber(float64(k), cfg.precision)...)
				b = append(b, '"')
			default:
				L.RaiseError("Cannot serialise %s: table key must be a number or string", k.Type().String())
			}
			b = append(b, ':')
			b = cfg.encode(L, b, e, depth)
		})
		return append(b, '}')
	}
	cfg.encodeErr(L, v.Type().String(), "type not supported")
	return b
}

// arrayLength decides, as lua-cjson does, whether a table is an array:
// every key a positive integer, not too sparse. An empty table is an
// object.
func (cfg *cjsonConfig) arrayLength(L *lua.LState, t *lua.LTable) (int, bool) {
	max, items := 0, 0
	array := true
	t.ForEach(func(k, _ lua.LValue) {
		if !array {
			return
		}
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) != math.Floor(float64(n)) || n < 1 {
			array = false
			return
		}
		if int(n) > max {
			max = int(n)
		}
		items++
	})
	if !array || items == 0 {
		return 0, false
	}
	if cfg.sparseRatio > 0 && max > items*cfg.sparseRatio && max > cfg.sparseSafe {
		if !cfg.sparseConvert {
			L.RaiseError("Cannot serialise table: excessively sparse array")
		}
		return 0, false
	}
	return max, true
}

// jsonQuote appends s as a JSON string, escaped as lua-cjson does (it
// escapes '/' and DEL too).
func jsonQuote(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '/':
			b = append(b, '\\', '/')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			if c < 0x20 || c == 0x7f {
				b = append(b, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

type jsonDecoder struct {
	L   *lua.LState
	cfg *cjsonConfig
	s   string
	pos int
}

func (d *jsonDecoder) space() {
	for d.pos < len(d.s) {
		switch d.s[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *jsonDecoder) tokenName() string {
	if d.pos >= len(d.s) {
		return "T_END"
	}
	switch d.s[d.pos] {
	case '{':
		return "T_OBJ_BEGIN"
	case '}':
		return "T_OBJ_END"
	case '[':
		return "T_ARR_BEGIN"
	case ']':
		return "T_ARR_END"
	case ',':
		return "T_COMMA"
	case ':':
		return "T_COLON"
	case '"':
		return "T_STRING"
	case 't', 'f':
		if strings.HasPrefix(d.s[d.pos:], "true") || strings.HasPrefix(d.s[d.pos:], "false") {
			return "T_BOOLEAN"
		}
	case 'n':
		if strings.HasPrefix(d.s[d.pos:], "null") {
			return "T_NULL"
		}
	}
	if c := d.s[d.pos]; c == '-' || ('0' <= c && c <= '9') {
		return "T_NUMBER"
	}
	return "invalid token"
}

func (d *jsonDecoder) fail(expected, found string) {
	d.L.RaiseError("Expected %s but found %s at character %d", expected, found, d.pos+1)
}

func (d *jsonDecoder) value(depth int) lua.LValue {
	d.space()
	if d.pos >= len(d.s) {
		d.fail("value", "T_END")
	}
	L := d.L
	switch c := d.s[d.pos]; {
	case c == '{':
		depth++
		if depth > d.cfg.maxDecodeDepth {
			L.RaiseError("Found too many nested data structures (%d) at character %d", depth, d.pos+1)
		}
		d.pos++
		t := L.NewTable()
		d.space()
		if d.pos < len(d.s) && d.s[d.pos] == '}' {
			d.pos++
			return t
		}
		for {
			d.space()
			if d.pos >= len(d.s) || d.s[d.pos] != '"' {
				d.fail("object key string", d.tokenName())
			}
			k := d.str()
			d.space()
			if d.pos >= len(d.s) || d.s[d.pos] != ':' {
				d.fail("colon", d.tokenName())
			}
			d.pos++
			t.RawSetString(k, d.value(depth))
			d.space()
			if d.pos < len(d.s) && d.s[d.pos] == '}' {
				d.pos++
				return t
			}
			if d.pos >= len(d.s) || d.s[d.pos] != ',' {
				d.fail("comma or object end", d.tokenName())
			}
			d.pos++
		}
	case c == '[':
		depth++
		if depth > d.cfg.maxDecodeDepth {
			L.RaiseError("Found too many nested data structures (%d) at character %d", depth, d.pos+1)
		}
		d.pos++
		t := L.NewTable()
		d.space()
		if d.pos < len(d.s) && d.s[d.pos] == ']' {
			d.pos++
			return t
		}
		for i := 1; ; i++ {
			t.RawSetInt(i, d.value(depth))
			d.space()
			if d.pos < len(d.s) && d.s[d.pos] == ']' {
				d.pos++
				return t
			}
			if d.pos >= len(d.s) || d.s[d.pos] != ',' {
				d.fail("comma or array end", d.tokenName())
			}
			d.pos++
		}
	case c == '"':
		return lua.LString(d.str())
	case c == '-' || ('0' <= c && c <= '9') || c == 'i' || c == 'I' || c == 'n' && strings.HasPrefix(d.s[d.pos:], "nan") || c == 'N' || c == '+':
		if c == 'n' && !strings.HasPrefix(d.s[d.pos:], "nan") {
			break
		}
		return d.number()
	case strings.HasPrefix(d.s[d.pos:], "true"):
		d.pos += 4
		return lua.LTrue
	case strings.HasPrefix(d.s[d.pos:], "false"):
		d.pos += 5
		return lua.LFalse
	case strings.HasPrefix(d.s[d.pos:], "null"):
		d.pos += 4
		return d.cfg.null
	}
	d.fail("value", d.tokenName())
	return lua.LNil
}

// number reads a number as lua-cjson does, with C's strtod (float.go):
// the longest prefix that is a number, hexadecimal and inf included.
func (d *jsonDecoder) number() lua.LValue {
	f, n, _ := strtod([]byte(d.s[d.pos:]))
	if n == 0 || ((math.IsNaN(f) || math.IsInf(f, 0)) && !d.cfg.decodeInvalid) {
		d.fail("value", "invalid number")
	}
	d.pos += n
	return lua.LNumber(f)
}

func (d *jsonDecoder) str() string {
	d.pos++ // the opening quote
	var b []byte
	for {
		if d.pos >= len(d.s) {
			d.fail("value", "unexpected end of string")
		}
		c := d.s[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(b)
		case c == '\\':
			if d.pos+1 >= len(d.s) {
				d.fail("value", "invalid escape code")
			}
			esc := d.pos
			e := d.s[d.pos+1]
			d.pos += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := d.hex4()
				if ok && r >= 0xD800 && r < 0xDC00 && strings.HasPrefix(d.s[d.pos:], "\\u") {
					d.pos += 2
					lo, ok2 := d.hex4()
					if !ok2 || lo < 0xDC00 || lo > 0xDFFF {
						d.pos = esc
						d.fail("value", "invalid unicode escape code")
					}
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				} else if !ok || (r >= 0xD800 && r <= 0xDFFF) {
					d.pos = esc
					d.fail("value", "invalid unicode escape code")
				}
				b = utf8.AppendRune(b, rune(r))
			default:
				d.pos = esc
				d.fail("value", "invalid escape code")
			}
		default:
			b = append(b, c)
			d.pos++
		}
	}
}

func (d *jsonDecoder) hex4() (int, bool) {
	if d.pos+4 > len(d.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(d.s[d.pos:d.pos+4], 16, 32)
	if err != nil {
		return 0, false
	}
	d.pos += 4
	return int(v), true
}

// ---- cmsgpack (lua-cmsgpack 0.4.0) ----

const msgpackMaxNesting = 16

func newMsgpackLib(L *lua.LState) *lua.LTable {
	t := luaLib(L, map[string]lua.LGFunction{
		"pack": func(L *lua.LState) int {
			n := L.GetTop()
			if n == 0 {
				argError(L, 0, "pack", "MessagePack pack needs input.")
			}
			var b []byte
			for i := 1; i <= n; i++ {
				b = msgpackEncode(L, b, L.Get(i), 0)
			}
			L.Push(lua.LString(b))
			return 1
		},
		"unpack": func(L *lua.LState) int { return msgpackUnpack(L, 0, 0, false) },
		"unpack_one": func(L *lua.LState) int {
			return msgpackUnpack(L, 1, L.OptInt(2, 0), true)
		},
		"unpack_limit": func(L *lua.LState) int {
			limit := L.CheckInt(2)
			return msgpackUnpack(L, limit, L.OptInt(3, 0), limit > 0)
		},
	})
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	t.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	t.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	return t
}

func msgpackEncode(L *lua.LState, b []byte, v lua.LValue, depth int) []byte {
	switch v := v.(type) {
	case lua.LBool:
		if v {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(v)
		if f == math.Trunc(f) && !math.IsInf(f, 0) && f >= -9.223372036854775808e18 && f < 9.223372036854775808e18 {
			return msgpackInt(b, int64(f))
		}
		if float64(float32(f)) == f || math.IsNaN(f) {
			b = append(b, 0xca)
			return binary.BigEndian.AppendUint32(b, math.Float32bits(float32(f)))
		}
		b = append(b, 0xcb)
		return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
	case lua.LString:
		n := len(v)
		switch {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n <= 0xff:
			b = append(b, 0xd9, byte(n))
		case n <= 0xffff:
			b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
		default:
			b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
		}
		return append(b, v...)
	case *lua.LTable:
		if depth >= msgpackMaxNesting {
			return append(b, 0xc0)
		}
		n, isArray := msgpackArrayLen(v)
		if isArray {
			b = msgpackHeader(b, n, 0x90, 0xdc, 0xdd)
			for i := 1; i <= n; i++ {
				b = msgpackEncode(L, b, v.RawGetInt(i), depth+1)
			}
			return b
		}
		count := 0
		v.ForEach(func(lua.LValue, lua.LValue) { count++ })
		b = msgpackHeader(b, count, 0x80, 0xde, 0xdf)
		v.ForEach(func(k, e lua.LValue) {
			b = msgpackEncode(L, b, k, depth+1)
			b = msgpackEncode(L, b, e, depth+1)
		})
		return b
	}
	return append(b, 0xc0)
}

func msgpackHeader(b []byte, n int, fix, b16, b32 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, b16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, b32), uint32(n))
}

func msgpackInt(b []byte, n int64) []byte {
	switch {
	case n >= 0 && n <= 127:
		return append(b, byte(n))
	case n >= 0 && n <= 0xff:
		return append(b, 0xcc, byte(n))
	case n >= 0 && n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n >= 0 && n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	case n >= 0:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	case n >= -32:
		return append(b, byte(int8(n)))
	case n >= -128:
		return append(b, 0xd0, byte(int8(n)))
	case n >= -32768:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(int16(n)))
	case n >= -2147483648:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(int32(n)))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// msgpackArrayLen is lua-cmsgpack's table_is_an_array: keys 1..n, no
// holes.
func msgpackArrayLen(t *lua.LTable) (int, bool) {
	count, max := 0, 0
	array := true
	t.ForEach(func(k, _ lua.LValue) {
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) != math.Floor(float64(n)) || n < 1 {
			array = false
			return
		}
		count++
		if int(n) > max {
			max = int(n)
		}
	})
	return max, array && max == count
}

// msgpackUnpack decodes up to limit objects (0: all) of the string at
// argument 1 from offset; with offsets it returns the next offset first
// (-1 at the end), as unpack_one and unpack_limit do.
func msgpackUnpack(L *lua.LState, limit, offset int, offsets bool) int {
	s := L.CheckString(1)
	if offset < 0 || limit < 0 {
		L.RaiseError("Invalid request to unpack with offset of %d and limit of %d.", offset, len(s))
	}
	if offset > len(s) {
		L.RaiseError("Start offset %d greater than input length %d.", offset, len(s))
	}
	d := msgpackDecoder{L: L, s: s, pos: offset}
	var vals []lua.LValue
	for d.pos < len(s) && (limit == 0 || len(vals) < limit) {
		vals = append(vals, d.value())
	}
	if offsets {
		next := d.pos
		if next >= len(s) {
			next = -1
		}
		L.Push(lua.LNumber(next))
	}
	for _, v := range vals {
		L.Push(v)
	}
	if offsets {
		return len(vals) + 1
	}
	return len(vals)
}

type msgpackDecoder struct {
	L   *lua.LState
	s   string
	pos int
}

func (d *msgpackDecoder) need(n int) string {
	if d.pos+n > len(d.s) {
		d.L.RaiseError("Missing bytes in input.")
	}
	b := d.s[d.pos : d.pos+n]
	d.pos += n
	return b
}

func (d *msgpackDecoder) u(n int) uint64 {
	b := d.need(n)
	var v uint64
	for i := 0; i < n; i++ {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func (d *msgpackDecoder) value() lua.LValue {
	L := d.L
	c := d.need(1)[0]
	switch {
	case c <= 0x7f:
		return lua.LNumber(c)
	case c >= 0xe0:
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		return lua.LString(d.need(int(c & 0x1f)))
	case c&0xf0 == 0x90:
		return d.array(int(c & 0x0f))
	case c&0xf0 == 0x80:
		return d.mapping(int(c & 0x0f))
	}
	switch c {
	case 0xc0:
		return lua.LNil
	case 0xc2:
		return lua.LFalse
	case 0xc3:
		return lua.LTrue
	case 0xca:
		return lua.LNumber(math.Float32frombits(uint32(d.u(4))))
	case 0xcb:
		return lua.LNumber(math.Float64frombits(d.u(8)))
	case 0xcc:
		return lua.LNumber(d.u(1))
	case 0xcd:
		return lua.LNumber(d.u(2))
	case 0xce:
		return lua.LNumber(d.u(4))
	case 0xcf:
		return lua.LNumber(d.u(8))
	case 0xd0:
		return lua.LNumber(int8(d.u(1)))
	case 0xd1:
		return lua.LNumber(int16(d.u(2)))
	case 0xd2:
		return lua.LNumber(int32(d.u(4)))
	case 0xd3:
		return lua.LNumber(int64(d.u(8)))
	case 0xc4, 0xd9:
		return lua.LString(d.need(int(d.u(1))))
	case 0xc5, 0xda:
		return lua.LString(d.need(int(d.u(2))))
	case 0xc6, 0xdb:
		return lua.LString(d.need(int(d.u(4))))
	case 0xdc:
		return d.array(int(d.u(2)))
	case 0xdd:
		return d.array(int(d.u(4)))
	case 0xde:
		return d.mapping(int(d.u(2)))
	case 0xdf:
		return d.mapping(int(d.u(4)))
	}
	L.RaiseError("Bad data format in input.")
	return lua.LNil
}

func (d *msgpackDecoder) array(n int) lua.LValue {
	if n > len(d.s)-d.pos {
		d.L.RaiseError("Missing bytes in input.")
	}
	t := d.L.CreateTable(n, 0)
	for i := 1; i <= n; i++ {
		t.RawSetInt(i, d.value())
	}
	return t
}

func (d *msgpackDecoder) mapping(n int) lua.LValue {
	if 2*n > len(d.s)-d.pos {
		d.L.RaiseError("Missing bytes in input.")
	}
	t := d.L.CreateTable(0, n)
	for i := 0; i < n; i++ {
		k := d.value()
		v := d.value()
		if k != lua.LNil {
			t.RawSet(k, v)
		}
	}
	return t
}

// ---- struct (Roberto Ierusalimschy's library, as in Redis) ----

const structMaxIntSize = 32

type structHeader struct {
	little bool
	align  int
}

func newStructLib(L *lua.LState) *lua.LTable {
	return luaLib(L, map[string]lua.LGFunction{
		"pack":   structPack,
		"unpack": structUnpack,
		"size":   structSize,
	})
}

// structOption reads the next option of fmt at *i: its letter and size
// (0 for options without one).
func structOption(L *lua.LState, fname, fmt string, i *int, h *structHeader) (opt byte, size int) {
	for *i < len(fmt) {
		opt = fmt[*i]
		*i++
		num := func(def int) int {
			if *i >= len(fmt) || fmt[*i] < '0' || fmt[*i] > '9' {
				return def
			}
			n := 0
			for *i < len(fmt) && fmt[*i] >= '0' && fmt[*i] <= '9' {
				n = n*10 + int(fmt[*i]-'0')
				*i++
				if n > 1<<20 {
					argError(L, 1, fname, "integral size overflow")
				}
			}
			return n
		}
		switch opt {
		case 'B', 'b':
			return opt, 1
		case 'H', 'h':
			return opt, 2
		case 'L', 'l', 'T':
			return opt, 8
		case 'f':
			return opt, 4
		case 'd':
			return opt, 8
		case 'x':
			return opt, 1
		case 'c':
			return opt, num(1)
		case 'i', 'I':
			n := num(4)
			if n > structMaxIntSize {
				L.RaiseError("integral size %d is larger than limit of %d", n, structMaxIntSize)
			}
			return opt, n
		case 's':
			return opt, 0
		case ' ':
			continue
		case '>':
			h.little = false
			continue
		case '<', '=':
			h.little = true
			continue
		case '!':
			h.align = num(8)
			continue
		default:
			argError(L, 1, fname, "invalid format option '"+string(opt)+"'")
		}
	}
	return 0, 0
}

func structAlign(total, size int, opt byte, h *structHeader) int {
	if opt == 'c' || opt == 's' || opt == 'x' || h.align <= 1 {
		return 0
	}
	if size > h.align {
		size = h.align
	}
	if size&(size-1) != 0 {
		return 0
	}
	return (size - (total & (size - 1))) & (size - 1)
}

func structPutInt(b []byte, v uint64, little bool, size int) []byte {
	buf := make([]byte, size)
	for i := 0; i < size; i++ {
		var byt byte
		if i < 8 {
			byt = byte(v >> (8 * i))
		} else if int64(v) < 0 {
			byt = 0xff
		}
		if little {
			buf[i] = byt
		} else {
			buf[size-1-i] = byt
		}
	}
	return append(b, buf...)
}

func structPack(L *lua.LState) int {
	const fname = "pack"
	fmt := L.CheckString(1)
	h := structHeader{little: true, align: 1}
	arg := 2
	var b []byte
	for i := 0; i < len(fmt); {
		opt, size := structOption(L, fname, fmt, &i, &h)
		if opt == 0 {
			break
		}
		for n := structAlign(len(b), size, opt, &h); n > 0; n-- {
			b = append(b, 0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			f := float64(L.CheckNumber(arg))
			arg++
			var v uint64
			if f < 0 {
				v = uint64(int64(f))
			} else {
				v = uint64(f)
			}
			b = structPutInt(b, v, h.little, size)
		case 'x':
			b = append(b, 0)
		case 'f':
			v := math.Float32bits(float32(L.CheckNumber(arg)))
			arg++
			b = structPutInt(b, uint64(v), h.little, 4)
		case 'd':
			v := math.Float64bits(float64(L.CheckNumber(arg)))
			arg++
			b = structPutInt(b, v, h.little, 8)
		case 'c', 's':
			s := L.CheckString(arg)
			arg++
			l := len(s)
			if opt == 'c' {
				if size == 0 {
					size = l
				}
				if l < size {
					argError(L, arg-1, fname, "string too short")
				}
				l = size
			}
			b = append(b, s[:l]...)
			if opt == 's' {
				b = append(b, 0)
			}
		}
	}
	L.Push(lua.LString(b))
	return 1
}

func structUnpack(L *lua.LState) int {
	const fname = "unpack"
	fmt := L.CheckString(1)
	data := L.CheckString(2)
	pos := L.OptInt(3, 1) - 1
	if pos < 0 || pos > len(data) {
		argError(L, 3, fname, "offset out of range")
	}
	h := structHeader{little: true, align: 1}
	n := 0
	for i := 0; i < len(fmt); {
		opt, size := structOption(L, fname, fmt, &i, &h)
		if opt == 0 {
			break
		}
		pos += structAlign(pos, size, opt, &h)
		if size > len(data)-pos && opt != 's' {
			argError(L, 2, fname, "data string too short")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			var v uint64
			for k := 0; k < size; k++ {
				var byt byte
				if h.little {
					byt = data[pos+size-1-k]
				} else {
					byt = data[pos+k]
				}
				v = v<<8 | uint64(byt)
			}
			signed := opt == 'b' || opt == 'h' || opt == 'l' || opt == 'i'
			if signed && size < 8 {
				shift := uint(64 - 8*size)
				L.Push(lua.LNumber(int64(v<<shift) >> shift))
			} else if signed {
				L.Push(lua.LNumber(int64(v)))
			} else {
				L.Push(lua.LNumber(v))
			}
			n++
		case 'x':
		case 'f':
			var v uint32
			if h.little {
				v = binary.LittleEndian.Uint32([]byte(data[pos : pos+4]))
			} else {
				v = binary.BigEndian.Uint32([]byte(data[pos : pos+4]))
			}
			L.Push(lua.LNumber(math.Float32frombits(v)))
			n++
		case 'd':
			var v uint64
			if h.little {
				v = binary.LittleEndian.Uint64([]byte(data[pos : pos+8]))
			} else {
				v = binary.BigEndian.Uint64([]byte(data[pos : pos+8]))
			}
			L.Push(lua.LNumber(math.Float64frombits(v)))
			n++
		case 'c':
			if size == 0 {
				if n == 0 {
					L.RaiseError("format 'c0' needs a previous size")
				}
				prev, ok := L.Get(-1).(lua.LNumber)
				if !ok {
					L.RaiseError("format 'c0' needs a previous size")
				}
				L.Pop(1)
				n--
				size = int(prev)
				if size < 0 || size > len(data)-pos {
					argError(L, 2, fname, "data string too short")
				}
			}
			L.Push(lua.LString(data[pos : pos+size]))
			n++
		case 's':
			e := strings.IndexByte(data[pos:], 0)
			if e < 0 {
				L.RaiseError("unfinished string in data")
			}
			size = e + 1
			L.Push(lua.LString(data[pos : pos+e]))
			n++
		}
		pos += size
	}
	L.Push(lua.LNumber(pos + 1))
	return n + 1
}

func structSize(L *lua.LState) int {
	const fname = "size"
	fmt := L.CheckString(1)
	h := structHeader{little: true, align: 1}
	total := 0
	for i := 0; i < len(fmt); {
		opt, size := structOption(L, fname, fmt, &i, &h)
		if opt == 0 {
			break
		}
		if opt == 's' {
			argError(L, 1, fname, "option 's' has no fixed size")
		}
		if opt == 'c' && size == 0 {
			argError(L, 1, fname, "option 'c0' has no fixed size")
		}
		total += structAlign(total, size, opt, &h) + size
	}
	L.Push(lua.LNumber(total))
	return 1
}

// ---- Lua 5.1 base and string functions gopher-lua does differently ----

// luaStringChar is Lua 5.1's string.char: every value a byte.
func luaStringChar(L *lua.LState) int {
	n := L.GetTop()
	b := make([]byte, n)
	for i := 1; i <= n; i++ {
		v := L.CheckInt(i)
		if v < 0 || v > 255 {
			argError(L, i, "char", "invalid value")
		}
		b[i-1] = byte(v)
	}
	L.Push(lua.LString(b))
	return 1
}

// luaUnpack is Lua 5.1's unpack, with its limit on how many values one
// call returns.
func luaUnpack(L *lua.LState) int {
	t := L.CheckTable(1)
	start := L.OptInt(2, 1)
	end := L.OptInt(3, t.Len())
	if start > end {
		return 0
	}
	n := end - start + 1
	if n <= 0 || n+L.GetTop() > luaMaxResults {
		L.RaiseError("too many results to unpack")
	}
	for i := start; i <= end; i++ {
		L.Push(t.RawGetInt(i))
	}
	return n
}

// luaPcall is Redis's pcall (luaRedisPcall): an error table caught is
// returned as its err string, so that scripts see redis.call's errors as
// strings.
func luaPcall(L *lua.LState) int {
	if L.GetTop() == 0 {
		// Redis's pcall calls its own result placeholder then.
		L.Push(lua.LFalse)
		L.Push(lua.LString("attempt to call a boolean value"))
		return 2
	}
	v := L.Get(1)
	if v.Type() != lua.LTFunction && L.GetMetaField(v, "__call").Type() != lua.LTFunction {
		L.Push(lua.LFalse)
		L.Push(lua.LString("attempt to call a " + v.Type().String() + " value"))
		return 2
	}
	if err := L.PCall(L.GetTop()-1, lua.MultRet, nil); err != nil {
		var e lua.LValue = lua.LString(err.Error())
		var ae *lua.ApiError
		if errors.As(err, &ae) {
			e = ae.Object
		}
		if t, ok := e.(*lua.LTable); ok {
			if s, ok := t.RawGetString("err").(lua.LString); ok {
				e = s
			}
		}
		L.Push(lua.LFalse)
		L.Push(e)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// luaToNumber is Lua 5.1's tonumber: C's strtod in base 10 (exponents,
// hexadecimal, surrounding white space), strtoul in another base.
func luaToNumber(L *lua.LState) int {
	v := L.CheckAny(1)
	if L.Get(2) == lua.LNil || (L.Get(2).Type() == lua.LTNumber && L.CheckInt(2) == 10) {
		switch v := v.(type) {
		case lua.LNumber:
			L.Push(v)
			return 1
		case lua.LString:
			if f, ok := luaStr2Number(string(v)); ok {
				L.Push(lua.LNumber(f))
				return 1
			}
		}
		L.Push(lua.LNil)
		return 1
	}
	base := L.CheckInt(2)
	if base < 2 || base > 36 {
		argError(L, 2, "tonumber", "base out of range")
	}
	s := strings.TrimLeft(L.CheckString(1), " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	var n uint64
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		var d int
		switch {
		case '0' <= c && c <= '9':
			d = int(c - '0')
		case 'a' <= c && c <= 'z':
			d = int(c-'a') + 10
		case 'A' <= c && c <= 'Z':
			d = int(c-'A') + 10
		default:
			d = 99
		}
		if d >= base {
			break
		}
		n = n*uint64(base) + uint64(d)
	}
	if i == 0 || strings.TrimLeft(s[i:], " \t\n\v\f\r") != "" {
		L.Push(lua.LNil)
		return 1
	}
	if neg {
		n = -n
	}
	L.Push(lua.LNumber(n))
	return 1
}

// luaStr2Number converts s as Lua 5.1's luaO_str2d: strtod, then
// strtoul in base 16 for "0x", trailing white space allowed.
func luaStr2Number(s string) (float64, bool) {
	f, n, _ := strtod([]byte(s))
	if n == 0 {
		return 0, false
	}
	if strings.TrimRight(s[n:], " \t\n\v\f\r") != "" {
		return 0, false
	}
	return f, true
}

// luaFormat is Lua 5.1's string.format, whose conversions are C's
// printf's: numbers in %s are %.14g, %d truncates, %x of a negative
// number is its two's complement, %g defaults to 6 digits.
func luaFormat(L *lua.LState) int {
	const fname = "format"
	fmtStr := L.CheckString(1)
	arg := 1
	var b strings.Builder
	for i := 0; i < len(fmtStr); i++ {
		c := fmtStr[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i < len(fmtStr) && fmtStr[i] == '%' {
			b.WriteByte('%')
			continue
		}
		start := i
		for i < len(fmtStr) && strings.IndexByte("-+ #0", fmtStr[i]) >= 0 {
			i++
		}
		if i-start > 5 {
			L.RaiseError("invalid format (repeated flags)")
		}
		for n := 0; i < len(fmtStr) && fmtStr[i] >= '0' && fmtStr[i] <= '9'; n++ {
			if n == 2 {
				L.RaiseError("invalid format (width or precision too long)")
			}
			i++
		}
		if i < len(fmtStr) && fmtStr[i] == '.' {
			i++
			for n := 0; i < len(fmtStr) && fmtStr[i] >= '0' && fmtStr[i] <= '9'; n++ {
				if n == 2 {
					L.RaiseError("invalid format (width or precision too long)")
				}
				i++
			}
		}
		if i >= len(fmtStr) {
			L.RaiseError("invalid option '%%' to 'format'")
		}
		spec := fmtStr[start:i]
		conv := fmtStr[i]
		arg++
		if arg > L.GetTop() && strings.IndexByte("diuoxXceEfgGqs", conv) >= 0 {
			argError(L, arg, fname, "no value")
		}
		num := func() float64 {
			switch v := L.Get(arg).(type) {
			case lua.LNumber:
				return float64(v)
			case lua.LString:
				if f, ok := luaStr2Number(string(v)); ok {
					return f
				}
			}
			got := "no value"
			if arg <= L.GetTop() {
				got = L.Get(arg).Type().String()
			}
			argError(L, arg, fname, "number expected, got "+got)
			return 0
		}
		switch conv {
		case 'd', 'i':
			b.WriteString(fmt.Sprintf("%"+spec+"d", int64(num())))
		case 'u':
			b.WriteString(fmt.Sprintf("%"+spec+"d", uint64(int64(num()))))
		case 'o', 'x', 'X':
			b.WriteString(fmt.Sprintf("%"+spec+string(conv), uint64(int64(num()))))
		case 'c':
			b.WriteByte(byte(int64(num())))
		case 'e', 'E', 'f', 'g', 'G':
			f := num()
			sp := spec
			if !strings.Contains(sp, ".") && (conv == 'g' || conv == 'G') {
				sp += ".6"
			}
			switch {
			case math.IsInf(f, 0) || math.IsNaN(f):
				b.WriteString(fmt.Sprintf("%"+strings.Split(spec, ".")[0]+"s", luaNumberString(f)))
			default:
				b.WriteString(fmt.Sprintf("%"+sp+string(conv), f))
			}
		case 'q':
			s := L.CheckString(arg)
			b.WriteByte('"')
			for j := 0; j < len(s); j++ {
				switch ch := s[j]; ch {
				case '"', '\\', '\n':
					b.WriteByte('\\')
					b.WriteByte(ch)
				case '\r':
					b.WriteString("\\r")
				case 0:
					b.WriteString("\\000")
				default:
					b.WriteByte(ch)
				}
			}
			b.WriteByte('"')
		case 's':
			var s string
			switch v := L.Get(arg).(type) {
			case lua.LString:
				s = string(v)
			case lua.LNumber:
				s = luaNumberString(float64(v))
			default:
				got := "no value"
				if arg <= L.GetTop() {
					got = v.Type().String()
				}
				argError(L, arg, fname, "string expected, got "+got)
			}
			b.WriteString(fmt.Sprintf("%"+spec+"s", s))
		default:
			L.RaiseError("invalid option '%%%c' to 'format'", conv)
		}
	}
	L.Push(lua.LString(b.String()))
	return 1
}
