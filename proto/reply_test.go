package proto

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// show renders a Reply's structure (not its Raw) for comparisons.
func show(r Reply) string {
	var b strings.Builder
	if r.Attrs != nil {
		b.WriteString("attrs[")
		for _, a := range r.Attrs {
			b.WriteString(show(a) + " ")
		}
		b.WriteString("]")
	}
	fmt.Fprintf(&b, "%c", r.Type)
	switch {
	case r.Null:
		b.WriteString("null")
	case r.Elems != nil:
		b.WriteString("[")
		for i, e := range r.Elems {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(show(e))
		}
		b.WriteString("]")
	default:
		fmt.Fprintf(&b, "%q", r.Text)
	}
	return b.String()
}

func TestReadReplyTypes(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"+OK\r\n", `+"OK"`},
		{"+\r\n", `+""`},
		{"-ERR bad thing\r\n", `-"ERR bad thing"`},
		{":0\r\n", `:"0"`},
		{":-42\r\n", `:"-42"`},
		{"$5\r\nhello\r\n", `$"hello"`},
		{"$0\r\n\r\n", `$""`},
		{"$4\r\na\r\nb\r\n", `$"a\r\nb"`},
		{"$-1\r\n", `$null`},
		{"*-1\r\n", `*null`},
		{"_\r\n", `_null`},
		{"*0\r\n", `*[]`},
		{"*2\r\n$1\r\na\r\n:1\r\n", `*[$"a" :"1"]`},
		{"*2\r\n*1\r\n+x\r\n$-1\r\n", `*[*[+"x"] $null]`},
		{",1.5\r\n", `,"1.5"`},
		{",inf\r\n", `,"inf"`},
		{",-inf\r\n", `,"-inf"`},
		{",nan\r\n", `,"nan"`},
		{",1e+20\r\n", `,"1e+20"`},
		{"#t\r\n", `#"t"`},
		{"#f\r\n", `#"f"`},
		{"!10\r\nERR broken\r\n", `!"ERR broken"`},
		{"=6\r\ntxt:hi\r\n", `="txt:hi"`},
		{"(3492890328409238509324850943850943825024385\r\n", `("3492890328409238509324850943850943825024385"`},
		{"(-1\r\n", `("-1"`},
		{"%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n", `%[+"a" :"1" +"b" :"2"]`},
		{"%0\r\n", `%[]`},
		{"~2\r\n+a\r\n+b\r\n", `~[+"a" +"b"]`},
		{">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n", `>[$"message" $"ch" $"hi"]`},
		{"|1\r\n+ttl\r\n:3600\r\n$1\r\nv\r\n", `attrs[+"ttl" :"3600" ]$"v"`},
		{"*1\r\n|1\r\n+a\r\n#t\r\n:7\r\n", `*[attrs[+"a" #"t" ]:"7"]`},
	} {
		in := c.in + "+NEXT\r\n" // a following reply stays unread
		r := bufio.NewReader(strings.NewReader(in))
		got, err := ReadReply(r)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if string(got.Raw) != c.in {
			t.Errorf("%q: Raw %q", c.in, got.Raw)
		}
		if s := show(got); s != c.want {
			t.Errorf("%q: %s, want %s", c.in, s, c.want)
		}
		if next, err := ReadReply(r); err != nil || string(next.Raw) != "+NEXT\r\n" {
			t.Errorf("%q: the next reply: %q %v", c.in, next.Raw, err)
		}
	}
}

// Every element's Raw is its own bytes within the whole.
func TestReadReplyElementRaw(t *testing.T) {
	in := "*3\r\n$3\r\nfoo\r\n%1\r\n+k\r\n*-1\r\n_\r\n"
	got, err := ReadReply(bufio.NewReader(strings.NewReader(in)))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"$3\r\nfoo\r\n", "%1\r\n+k\r\n*-1\r\n", "_\r\n"}
	for i, e := range got.Elems {
		if string(e.Raw) != want[i] {
			t.Errorf("element %d: %q, want %q", i, e.Raw, want[i])
		}
	}
	if string(got.Elems[1].Elems[1].Raw) != "*-1\r\n" {
		t.Errorf("map value: %q", got.Elems[1].Elems[1].Raw)
	}
}

// A reply arriving a byte at a time, or larger than the reader's buffer,
// reads the same.
func TestReadReplySplitAndLarge(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	line := strings.Repeat("y", 10<<10)
	in := "*4\r\n$" + fmt.Sprint(len(big)) + "\r\n" + big + "\r\n+" + line + "\r\n=8\r\ntxt:a\r\nb\r\n%1\r\n:1\r\n_\r\n"
	for name, r := range map[string]*bufio.Reader{
		"one byte at a time": bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(in)), 16),
		"small buffer":       bufio.NewReaderSize(strings.NewReader(in), 16),
	} {
		got, err := ReadReply(r)
		if err != nil || string(got.Raw) != in {
			t.Fatalf("%s: %v, %d bytes", name, err, len(got.Raw))
		}
		if string(got.Elems[0].Text) != big || string(got.Elems[1].Text) != line || string(got.Elems[2].Text) != "txt:a\r\nb" {
			t.Fatalf("%s: element texts differ", name)
		}
	}
}

// What the Writer writes, ReadReply reads back byte for byte.
func TestReadReplyReadsWriter(t *testing.T) {
	for _, proto := range []int{2, 3} {
		w := Writer{Proto: proto}
		w.Array(9)
		w.OK()
		w.Error("ERR x")
		w.Int(-7)
		w.BulkString("bulk")
		w.Null()
		w.NullArray()
		w.Map(1)
		w.BulkString("k")
		w.Double(2.5)
		w.Set(2)
		w.Bool(true)
		w.Verbatim("txt", "v")
		w.Push(0)
		got, err := ReadReply(bufio.NewReader(bytes.NewReader(w.Buf)))
		if err != nil || !bytes.Equal(got.Raw, w.Buf) || len(got.Elems) != 9 {
			t.Fatalf("RESP%d: %q, %v", proto, got.Raw, err)
		}
	}
}

// Raw and Text are the caller's, not views of the bufio buffer.
func TestReadReplyDoesNotAlias(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("$3\r\nabc\r\n$3\r\nxyz\r\n"), 16)
	first, err := ReadReply(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadReply(r); err != nil {
		t.Fatal(err)
	}
	if string(first.Raw) != "$3\r\nabc\r\n" || string(first.Text) != "abc" {
		t.Fatalf("first reply changed to %q / %q", first.Raw, first.Text)
	}
}

func TestReadReplyErrors(t *testing.T) {
	for _, c := range []struct {
		in   string
		want error
		read string // Raw on error: what was read
	}{
		{"", io.EOF, ""},
		{"+OK", io.ErrUnexpectedEOF, "+OK"},
		{"$5\r\nhel", io.ErrUnexpectedEOF, "$5\r\nhel"},
		{"*2\r\n:1\r\n", io.ErrUnexpectedEOF, "*2\r\n:1\r\n"},
		{"|1\r\n+a\r\n+b\r\n", io.ErrUnexpectedEOF, "|1\r\n+a\r\n+b\r\n"},
		{"+OK\n", ErrBadReply, "+OK\n"},
		{"\r\n", ErrBadReply, "\r\n"},
		{"hello\r\n", ErrBadReply, "hello\r\n"},
		{":abc\r\n", ErrBadReply, ":abc\r\n"},
		{":\r\n", ErrBadReply, ":\r\n"},
		{"$-2\r\n", ErrBadReply, "$-2\r\n"},
		{"$x\r\n", ErrBadReply, "$x\r\n"},
		{"!-1\r\n", ErrBadReply, "!-1\r\n"},
		{"$3\r\nabcd\r\n", ErrBadReply, "$3\r\nabcd\r"},
		{"=3\r\ntxt\r\n", ErrBadReply, "=3\r\ntxt\r\n"},
		{"=5\r\ntxt-a\r\n", ErrBadReply, "=5\r\ntxt-a\r\n"},
		{"%-1\r\n", ErrBadReply, "%-1\r\n"},
		{"*-5\r\n", ErrBadReply, "*-5\r\n"},
		{"#x\r\n", ErrBadReply, "#x\r\n"},
		{"_x\r\n", ErrBadReply, "_x\r\n"},
		{",one\r\n", ErrBadReply, ",one\r\n"},
		{"(12a\r\n", ErrBadReply, "(12a\r\n"},
		{"(\r\n", ErrBadReply, "(\r\n"},
		{"*1\r\n?\r\n", ErrBadReply, "*1\r\n?\r\n"},
	} {
		got, err := ReadReply(bufio.NewReader(strings.NewReader(c.in)))
		if !errors.Is(err, c.want) {
			t.Errorf("%q: error %v, want %v", c.in, err, c.want)
		}
		if string(got.Raw) != c.read {
			t.Errorf("%q: Raw %q, want %q", c.in, got.Raw, c.read)
		}
	}
}

// A length announced but never sent allocates only what arrives.
func TestReadReplyHugeLength(t *testing.T) {
	in := "$1099511627776\r\nshort"
	allocs := testing.AllocsPerRun(1, func() {
		if _, err := ReadReply(bufio.NewReader(strings.NewReader(in))); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatal(err)
		}
	})
	if allocs > 20 {
		t.Fatalf("%v allocations", allocs)
	}
	if _, err := ReadReply(bufio.NewReader(strings.NewReader("*1099511627776\r\n:1\r\n"))); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatal(err)
	}
}

func FuzzReadReply(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n+a\r\n_\r\n", "|1\r\n+a\r\n+b\r\n#t\r\n", "=6\r\ntxt:hi\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ReadReply(bufio.NewReader(bytes.NewReader(in)))
		if !bytes.HasPrefix(in, got.Raw) {
			t.Fatalf("Raw %q is not a prefix of the input", got.Raw)
		}
		if err == nil {
			// What was read reads again the same, alone.
			again, err := ReadReply(bufio.NewReader(bytes.NewReader(got.Raw)))
			if err != nil || !bytes.Equal(again.Raw, got.Raw) || show(again) != show(got) {
				t.Fatalf("%q re-read: %q %v", got.Raw, again.Raw, err)
			}
		}
	})
}

func TestFirstError(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{in: "+OK\r\n:1\r\n", ok: false},
		{in: "-ERR no such key\r\n", want: "ERR no such key", ok: true},
		{in: "+OK\r\n-WRONGTYPE x\r\n", want: "WRONGTYPE x", ok: true},
		// A bulk string's payload that starts with '-' is a value, not an
		// error (GETSET of "-1", an EXEC element).
		{in: "$2\r\n-1\r\n:5\r\n", ok: false},
		{in: "*2\r\n$3\r\n-no\r\n:-1\r\n", ok: false},
		{in: "$-1\r\n*-1\r\n", ok: false},
		// Inside EXEC's array, one command's failure.
		{in: "*3\r\n+OK\r\n-ERR value is not an integer or out of range\r\n:2\r\n",
			want: "ERR value is not an integer or out of range", ok: true},
		{in: "!9\r\nSYNTAX xy\r\n", want: "SYNTAX xy", ok: true},
		{in: "|1\r\n+a\r\n$2\r\n-b\r\n%1\r\n+k\r\n-E v\r\n", want: "E v", ok: true},
		// Bytes that are not complete replies end the walk.
		{in: "$10\r\n-abc\r\n", ok: false},
		{in: "+OK", ok: false},
	} {
		got, ok := FirstError([]byte(tc.in))
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("FirstError(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if n := testing.AllocsPerRun(100, func() { FirstError([]byte("*2\r\n$2\r\n-1\r\n-E\r\n")) }); n != 0 {
		t.Errorf("FirstError allocates %v times per call", n)
	}
}
