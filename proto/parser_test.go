package proto

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

type parsed struct {
	reqs [][]string
	err  error
}

// parseAll parses buf whole, the way a connection with everything buffered
// does.
func parseAll(lim Limits, buf []byte) parsed {
	p := NewParser(lim)
	var out parsed
	var args [][]byte
	for len(buf) > 0 {
		var n int
		var err error
		args, n, _, err = p.Parse(buf, args)
		if err != nil {
			out.err = err
			return out
		}
		if n == 0 {
			return out
		}
		if len(args) > 0 {
			out.reqs = append(out.reqs, strs(args))
		}
		buf = buf[n:]
	}
	return out
}

// parseFed parses buf arriving in the given chunk boundaries, keeping unparsed
// bytes the way the loop does (the parser sees the same prefix again).
func parseFed(lim Limits, buf []byte, cuts []int) parsed {
	p := NewParser(lim)
	var out parsed
	var pending []byte
	var args [][]byte
	prev := 0
	cuts = append(cuts, len(buf))
	for _, c := range cuts {
		pending = append(pending, buf[prev:c]...)
		prev = c
		for len(pending) > 0 {
			var n int
			var err error
			args, n, _, err = p.Parse(pending, args)
			if err != nil {
				out.err = err
				return out
			}
			if n == 0 {
				break
			}
			if len(args) > 0 {
				out.reqs = append(out.reqs, strs(args))
			}
			pending = pending[n:]
		}
	}
	return out
}

func strs(args [][]byte) []string {
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = string(a)
	}
	return s
}

func equalParsed(a, b parsed) bool {
	if (a.err == nil) != (b.err == nil) || (a.err != nil && a.err.Error() != b.err.Error()) {
		return false
	}
	if len(a.reqs) != len(b.reqs) {
		return false
	}
	for i := range a.reqs {
		if strings.Join(a.reqs[i], "\x00|") != strings.Join(b.reqs[i], "\x00|") {
			return false
		}
	}
	return true
}

func TestParseCases(t *testing.T) {
	cases := []struct {
		in   string
		reqs [][]string
		err  string
	}{
		{in: "*1\r\n$4\r\nPING\r\n", reqs: [][]string{{"PING"}}},
		{in: "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", reqs: [][]string{{"ECHO", ""}}},
		{in: "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\na\x00b\r\n", reqs: [][]string{{"SET", "k", "a\x00b"}}},
		// Redis skips the two bytes after a bulk without looking at them.
		{in: "*1\r\n$4\r\nPINGxx", reqs: [][]string{{"PING"}}},
		{in: "*0\r\n*-5\r\n*1\r\n$4\r\nPING\r\n", reqs: [][]string{{"PING"}}},
		{in: "\r\n\r\nPING\r\n", reqs: [][]string{{"PING"}}},
		{in: "ping\n", reqs: [][]string{{"ping"}}},
		{in: "  SET  k   v  \r\n", reqs: [][]string{{"SET", "k", "v"}}},
		{in: `ECHO "a\x41\n\"q\""` + "\r\n", reqs: [][]string{{"ECHO", "aA\n\"q\""}}},
		{in: `ECHO 'it\'s' "" ''` + "\r\n", reqs: [][]string{{"ECHO", "it's", "", ""}}},
		{in: `SET a"b c"d` + "\n", err: "Protocol error: unbalanced quotes in request"},
		{in: `SET a"b c" d` + "\n", reqs: [][]string{{"SET", "ab c", "d"}}},
		{in: `PING "a` + "\r\n", err: "Protocol error: unbalanced quotes in request"},
		{in: `ECHO "a"b` + "\r\n", err: "Protocol error: unbalanced quotes in request"},
		{in: "*x\r\n", err: "Protocol error: invalid multibulk length"},
		{in: "*01\r\n", err: "Protocol error: invalid multibulk length"},
		{in: "*+1\r\n", err: "Protocol error: invalid multibulk length"},
		{in: "*2147483648\r\n", err: "Protocol error: invalid multibulk length"},
		{in: "*1\r\n$-1\r\n", err: "Protocol error: invalid bulk length"},
		{in: "*1\r\n$abc\r\n", err: "Protocol error: invalid bulk length"},
		{in: "*1\r\n$4\nPING\r\n", err: "Protocol error: invalid bulk length"},
		{in: "*1\r\n:4\r\n", err: "Protocol error: expected '$', got ':'"},
		{in: "*1\r\n$536870913\r\n", err: "Protocol error: invalid bulk length"},
		// Incomplete input waits.
		{in: "*2\r\n$3\r\nGET\r\n$1\r\n"},
		{in: "*2000000\r\n"},
	}
	for _, c := range cases {
		got := parseAll(DefaultLimits, []byte(c.in))
		want := parsed{reqs: c.reqs}
		if c.err != "" {
			want.err = ProtocolError(c.err)
		}
		if !equalParsed(got, want) {
			t.Errorf("%q: got %+v, want %+v", c.in, got, want)
		}
	}
}

func TestParseLimits(t *testing.T) {
	lim := Limits{MaxBulkLen: 10, MaxInline: 16}
	for in, want := range map[string]string{
		"*1\r\n$11\r\n":                     "Protocol error: invalid bulk length",
		"PING " + strings.Repeat("x", 20):   "Protocol error: too big inline request",
		"*" + strings.Repeat("1", 20):       "Protocol error: too big mbulk count string",
		"*1\r\n$" + strings.Repeat("1", 20): "Protocol error: too big bulk count string",
	} {
		got := parseAll(lim, []byte(in))
		var pe ProtocolError
		if !errors.As(got.err, &pe) || string(pe) != want {
			t.Errorf("%q: got %v, want %q", in, got.err, want)
		}
	}
	if got := parseAll(lim, []byte("*1\r\n$10\r\n0123456789\r\n")); got.err != nil || len(got.reqs) != 1 {
		t.Errorf("a bulk of exactly the limit: %+v", got)
	}
}

// TestParseNeed checks that a partial bulk tells the caller how many bytes to
// wait for, so a huge bulk is not re-parsed on every read.
func TestParseNeed(t *testing.T) {
	p := NewParser(DefaultLimits)
	buf := []byte("*2\r\n$3\r\nSET\r\n$100\r\nabc")
	_, n, need, err := p.Parse(buf, nil)
	if err != nil || n != 0 {
		t.Fatalf("n=%d err=%v", n, err)
	}
	if want := len("*2\r\n$3\r\nSET\r\n$100\r\n") + 102; need != want {
		t.Fatalf("need = %d, want %d", need, want)
	}
	if !p.Pending() {
		t.Fatal("parser forgot the partial request")
	}
}

// TestParseSplitEverywhere feeds a mixed stream in two pieces cut at every
// byte; parsing in pieces must equal parsing whole.
func TestParseSplitEverywhere(t *testing.T) {
	stream := []byte("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\n" +
		"PING\r\nECHO \"x y\"\n*0\r\n*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n")
	whole := parseAll(DefaultLimits, stream)
	if whole.err != nil || len(whole.reqs) != 5 {
		t.Fatalf("whole: %+v", whole)
	}
	for cut := 1; cut < len(stream); cut++ {
		if got := parseFed(DefaultLimits, stream, []int{cut}); !equalParsed(got, whole) {
			t.Fatalf("cut at %d: %+v, want %+v", cut, got, whole)
		}
	}
	// One byte at a time.
	cuts := make([]int, 0, len(stream))
	for i := 1; i < len(stream); i++ {
		cuts = append(cuts, i)
	}
	if got := parseFed(DefaultLimits, stream, cuts); !equalParsed(got, whole) {
		t.Fatalf("byte by byte: %+v", got)
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	buf := []byte("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n")
	p := NewParser(DefaultLimits)
	args := make([][]byte, 0, 8)
	p.Parse(buf, args) // warm the offsets slice
	allocs := testing.AllocsPerRun(1000, func() {
		args, _, _, _ = p.Parse(buf, args)
	})
	if allocs != 0 {
		t.Fatalf("Parse allocated %.1f times per request", allocs)
	}
}

func TestParseInt(t *testing.T) {
	good := map[string]int64{"0": 0, "1": 1, "-1": -1, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63}
	for s, want := range good {
		if v, ok := ParseInt([]byte(s)); !ok || v != want {
			t.Errorf("ParseInt(%q) = %d, %v", s, v, ok)
		}
	}
	for _, s := range []string{"", "-", "+1", "01", "-0", " 1", "1 ", "9223372036854775808", "-9223372036854775809", "1a", "18446744073709551616"} {
		if _, ok := ParseInt([]byte(s)); ok {
			t.Errorf("ParseInt(%q) accepted", s)
		}
	}
}

func FuzzParseSplit(f *testing.F) {
	f.Add([]byte("*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\nPING\r\n"), 5)
	f.Add([]byte("ECHO \"a\\x41\" 'b'\r\n*1\r\n$4\r\nPING\r\n"), 3)
	f.Add([]byte("*1\r\n$-1\r\n"), 2)
	f.Fuzz(func(t *testing.T, in []byte, cut int) {
		lim := Limits{MaxBulkLen: 1 << 20, MaxInline: 1 << 10}
		whole := parseAll(lim, in)
		if len(in) == 0 {
			return
		}
		if cut < 0 {
			cut = -cut
		}
		cut %= len(in)
		if got := parseFed(lim, in, []int{cut}); !equalParsed(got, whole) {
			t.Fatalf("split at %d: %+v, whole %+v", cut, got, whole)
		}
	})
}

func TestWriter(t *testing.T) {
	for _, c := range []struct {
		proto int
		fn    func(w *Writer)
		want  string
	}{
		{2, func(w *Writer) { w.Null() }, "$-1\r\n"},
		{3, func(w *Writer) { w.Null() }, "_\r\n"},
		{2, func(w *Writer) { w.NullArray() }, "*-1\r\n"},
		{2, func(w *Writer) { w.Map(2) }, "*4\r\n"},
		{3, func(w *Writer) { w.Map(2) }, "%2\r\n"},
		{3, func(w *Writer) { w.Set(1) }, "~1\r\n"},
		{2, func(w *Writer) { w.Double(1.5) }, "$3\r\n1.5\r\n"},
		{3, func(w *Writer) { w.Double(1.1) }, ",1.1000000000000001\r\n"},
		{3, func(w *Writer) { w.Double(1e-5) }, ",1.0000000000000001e-05\r\n"},
		{3, func(w *Writer) { w.Double(1e20) }, ",1e+20\r\n"},
		{3, func(w *Writer) { w.Double(100) }, ",100\r\n"},
		{2, func(w *Writer) { w.Double(-1 * inf()) }, "$4\r\n-inf\r\n"},
		{2, func(w *Writer) { w.Bool(true) }, ":1\r\n"},
		{3, func(w *Writer) { w.Bool(false) }, "#f\r\n"},
		{2, func(w *Writer) { w.Error("ERR a\r\nb") }, "-ERR a  b\r\n"},
		{3, func(w *Writer) { w.Verbatim("txt", "hi") }, "=6\r\ntxt:hi\r\n"},
		{2, func(w *Writer) { w.Verbatim("txt", "hi") }, "$2\r\nhi\r\n"},
		{2, func(w *Writer) { w.BulkInt(-12) }, "$3\r\n-12\r\n"},
	} {
		w := Writer{Proto: c.proto}
		c.fn(&w)
		if !bytes.Equal(w.Buf, []byte(c.want)) {
			t.Errorf("got %q, want %q", w.Buf, c.want)
		}
	}
}

func inf() float64 { var z float64; return 1 / z }
