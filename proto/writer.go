package proto

import (
	"math"
	"slices"
	"strconv"
)

// Writer appends RESP replies to Buf in the connection's protocol version.
// RESP3 types degrade to their RESP2 forms when Proto is 2, as Redis does:
// maps become flat arrays, sets arrays, nulls "$-1"/"*-1", doubles bulks,
// booleans integers.
type Writer struct {
	Buf   []byte
	Proto int // 2 or 3
}

// Resp3 reports whether replies use RESP3 types.
func (w *Writer) Resp3() bool { return w.Proto == 3 }

// Simple appends a status reply: +s.
func (w *Writer) Simple(s string) {
	w.Buf = append(w.Buf, '+')
	w.Buf = append(w.Buf, s...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// OK appends +OK.
func (w *Writer) OK() { w.Buf = append(w.Buf, "+OK\r\n"...) }

// Error appends an error reply: -s. s carries its own code ("ERR ...",
// "WRONGTYPE ..."). Like Redis, CR and LF inside s become spaces so that the
// reply stays one line whatever the client sent.
func (w *Writer) Error(s string) {
	w.Buf = append(w.Buf, '-')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		w.Buf = append(w.Buf, c)
	}
	w.Buf = append(w.Buf, '\r', '\n')
}

// Int appends an integer reply: :n.
func (w *Writer) Int(n int64) {
	w.Buf = append(w.Buf, ':')
	w.Buf = strconv.AppendInt(w.Buf, n, 10)
	w.Buf = append(w.Buf, '\r', '\n')
}

// Bulk appends a bulk string.
func (w *Writer) Bulk(b []byte) {
	w.grow(len(b) + 32)
	w.header('$', len(b))
	w.Buf = append(w.Buf, b...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// BulkString appends a bulk string.
func (w *Writer) BulkString(s string) {
	w.grow(len(s) + 32)
	w.header('$', len(s))
	w.Buf = append(w.Buf, s...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// BulkInt appends n as a bulk string of its decimal digits.
func (w *Writer) BulkInt(n int64) {
	var d [20]byte
	w.Bulk(strconv.AppendInt(d[:0], n, 10))
}

// Null appends the null reply: "$-1" in RESP2, "_" in RESP3.
func (w *Writer) Null() {
	if w.Proto == 3 {
		w.Buf = append(w.Buf, "_\r\n"...)
		return
	}
	w.Buf = append(w.Buf, "$-1\r\n"...)
}

// NullArray appends the null array: "*-1" in RESP2, "_" in RESP3.
func (w *Writer) NullArray() {
	if w.Proto == 3 {
		w.Buf = append(w.Buf, "_\r\n"...)
		return
	}
	w.Buf = append(w.Buf, "*-1\r\n"...)
}

// Array appends an array header for n elements.
func (w *Writer) Array(n int) { w.header('*', n) }

// Map appends a map header for n key/value pairs ("*2n" in RESP2).
func (w *Writer) Map(n int) {
	if w.Proto == 3 {
		w.header('%', n)
		return
	}
	w.header('*', 2*n)
}

// Set appends a set header for n elements ("*n" in RESP2).
func (w *Writer) Set(n int) {
	if w.Proto == 3 {
		w.header('~', n)
		return
	}
	w.header('*', n)
}

// Push appends a push header for n elements ("*n" in RESP2).
func (w *Writer) Push(n int) {
	if w.Proto == 3 {
		w.header('>', n)
		return
	}
	w.header('*', n)
}

// Bool appends a boolean: "#t"/"#f" in RESP3, ":1"/":0" in RESP2.
func (w *Writer) Bool(b bool) {
	switch {
	case w.Proto == 3 && b:
		w.Buf = append(w.Buf, "#t\r\n"...)
	case w.Proto == 3:
		w.Buf = append(w.Buf, "#f\r\n"...)
	case b:
		w.Buf = append(w.Buf, ":1\r\n"...)
	default:
		w.Buf = append(w.Buf, ":0\r\n"...)
	}
}

// Double appends a double the way Redis 7.0 does: RESP3 ",<%.17g>", RESP2 a
// bulk string of the same digits; infinities are "inf" and "-inf".
func (w *Writer) Double(f float64) {
	var d [32]byte
	b := AppendDouble(d[:0], f)
	if w.Proto == 3 {
		w.Buf = append(w.Buf, ',')
		w.Buf = append(w.Buf, b...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	w.Bulk(b)
}

// Verbatim appends a verbatim string ("=len\r\ntxt:...") in RESP3 and a bulk
// string in RESP2. format is the three-letter type, such as "txt".
func (w *Writer) Verbatim(format, s string) {
	if w.Proto != 3 {
		w.BulkString(s)
		return
	}
	w.header('=', len(s)+4)
	w.Buf = append(w.Buf, format...)
	w.Buf = append(w.Buf, ':')
	w.Buf = append(w.Buf, s...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// Raw appends already encoded RESP.
func (w *Writer) Raw(b []byte) {
	w.grow(len(b))
	w.Buf = append(w.Buf, b...)
}

// grow makes room for n more bytes. Past 64 KiB the buffer doubles rather
// than grow by append's quarter: a batch of large replies (a pipeline of
// GETs of big values) then copies itself a few times instead of dozens,
// and leaves that much less garbage behind. (slices.Grow clears only the
// new room; make and copy cleared the copied bytes too.)
func (w *Writer) grow(n int) {
	if cap(w.Buf)-len(w.Buf) >= n || len(w.Buf)+n < 64<<10 {
		return
	}
	w.Buf = slices.Grow(w.Buf, max(cap(w.Buf), n))
}

func (w *Writer) header(t byte, n int) {
	w.Buf = append(w.Buf, t)
	w.Buf = strconv.AppendInt(w.Buf, int64(n), 10)
	w.Buf = append(w.Buf, '\r', '\n')
}

// AppendDouble formats f as C's printf("%.17g") does, with Redis's spelling
// of the infinities.
func AppendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}
