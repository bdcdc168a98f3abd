package proto

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// Reply is one complete reply as a server sent it, RESP2 or RESP3: what a
// client (a test, a script's redis.call, a replica) reads back.
type Reply struct {
	// Type is the reply's type byte: '+' simple string, '-' error, ':'
	// integer, '$' bulk string, '*' array, '_' null, ',' double, '#'
	// boolean, '!' bulk error, '=' verbatim string, '(' big number, '%'
	// map, '~' set, '>' push.
	Type byte
	// Raw is the reply's exact bytes, attribute included.
	Raw []byte
	// Text is the line of a simple string, error, integer, double, boolean
	// or big number, or the payload of a bulk string, bulk error or
	// verbatim string (its "txt:" format prefix included).
	Text []byte
	// Null is set for RESP3's null and RESP2's null bulk "$-1" and null
	// array "*-1".
	Null bool
	// Elems are the elements of an array, set or push, or a map's keys and
	// values, alternating.
	Elems []Reply
	// Attrs is the RESP3 attribute ("|") sent before the reply, keys and
	// values alternating; nil without one.
	Attrs []Reply
}

// ErrBadReply is wrapped by the errors ReadReply returns for bytes that are
// not RESP.
var ErrBadReply = errors.New("proto: malformed reply")

// ReadReply reads one complete reply from r. Raw and Text are the caller's
// own: they do not alias r's buffer.
//
// At end of input before the first byte it returns io.EOF; in the middle of
// a reply, io.ErrUnexpectedEOF. On any error, Raw holds the bytes read so
// far, for the caller's diagnostics.
func ReadReply(r *bufio.Reader) (Reply, error) {
	rr := replyReader{r: r}
	n, err := rr.reply()
	if err != nil {
		if err == io.EOF && len(rr.buf) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return Reply{Raw: rr.buf}, err
	}
	return n.build(rr.buf), nil
}

// replyReader collects the bytes of one reply in buf. Its nodes record
// offsets into buf, which may move while it grows; build makes the slices
// once the reply is complete.
type replyReader struct {
	r   *bufio.Reader
	buf []byte
}

type replyNode struct {
	typ          byte
	lo, hi       int // the reply's bytes in buf
	textLo, text int // Text is buf[textLo:textLo+text]
	null         bool
	elems, attrs []replyNode
}

func (n *replyNode) build(buf []byte) Reply {
	rep := Reply{Type: n.typ, Raw: buf[n.lo:n.hi:n.hi], Null: n.null}
	if !n.null && n.text >= 0 {
		end := n.textLo + n.text
		rep.Text = buf[n.textLo:end:end]
	}
	rep.Elems = buildAll(n.elems, buf)
	rep.Attrs = buildAll(n.attrs, buf)
	return rep
}

func buildAll(ns []replyNode, buf []byte) []Reply {
	if ns == nil {
		return nil
	}
	out := make([]Reply, len(ns))
	for i := range ns {
		out[i] = ns[i].build(buf)
	}
	return out
}

func badReply(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadReply}, args...)...)
}

// line appends one CRLF-terminated line to buf and returns the offsets of
// its body, between the type byte and the CRLF.
func (rr *replyReader) line() (lo, hi int, err error) {
	start := len(rr.buf)
	for {
		chunk, err := rr.r.ReadSlice('\n')
		rr.buf = append(rr.buf, chunk...)
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			return 0, 0, err
		}
	}
	end := len(rr.buf)
	if end-start < 3 || rr.buf[end-2] != '\r' {
		return 0, 0, badReply("line %q", rr.buf[start:])
	}
	return start + 1, end - 2, nil
}

// payload appends a bulk payload of n bytes and its CRLF to buf, growing
// buf only as the bytes arrive, so that a huge announced length costs
// nothing until it is sent.
func (rr *replyReader) payload(n int64) error {
	want := n + 2
	for want > 0 {
		chunk := want
		if chunk > 64<<10 {
			chunk = 64 << 10
		}
		at := len(rr.buf)
		rr.buf = slices.Grow(rr.buf, int(chunk))[:at+int(chunk)]
		if n, err := io.ReadFull(rr.r, rr.buf[at:]); err != nil {
			rr.buf = rr.buf[:at+n]
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		want -= chunk
	}
	if rr.buf[len(rr.buf)-2] != '\r' || rr.buf[len(rr.buf)-1] != '\n' {
		return badReply("bulk of %d bytes not followed by CRLF", n)
	}
	return nil
}

func (rr *replyReader) reply() (replyNode, error) {
	start := len(rr.buf)
	lo, hi, err := rr.line()
	if err != nil {
		return replyNode{}, err
	}
	n := replyNode{typ: rr.buf[start], lo: start, textLo: lo, text: hi - lo}
	body := rr.buf[lo:hi]
	switch n.typ {
	case '+', '-':
	case ':':
		if _, ok := parseInt(body); !ok {
			return n, badReply("integer %q", body)
		}
	case '(':
		if !isBigNumber(body) {
			return n, badReply("big number %q", body)
		}
	case ',':
		if _, err := strconv.ParseFloat(string(body), 64); err != nil {
			return n, badReply("double %q", body)
		}
	case '#':
		if len(body) != 1 || (body[0] != 't' && body[0] != 'f') {
			return n, badReply("boolean %q", body)
		}
	case '_':
		if len(body) != 0 {
			return n, badReply("null %q", body)
		}
		n.null = true
	case '$', '!', '=', '*', '~', '>', '%', '|':
		size, ok := parseInt(body)
		if ok && size == -1 && (n.typ == '$' || n.typ == '*') {
			n.null = true // RESP2's null bulk string and null array
			break
		}
		if !ok || size < 0 {
			return n, badReply("length %q", rr.buf[start:hi])
		}
		if n.typ == '$' || n.typ == '!' || n.typ == '=' {
			if err := rr.bulk(&n, size); err != nil {
				return n, err
			}
			break
		}
		return rr.aggregate(n, size)
	default:
		return n, badReply("type byte %q", n.typ)
	}
	n.hi = len(rr.buf)
	if n.null {
		n.text = -1
	}
	return n, nil
}

// bulk reads the payload of n, a bulk string, bulk error or verbatim
// string of size bytes whose length line ends buf.
func (rr *replyReader) bulk(n *replyNode, size int64) error {
	n.textLo, n.text = len(rr.buf), int(size)
	if err := rr.payload(size); err != nil {
		return err
	}
	if n.typ == '=' && (size < 4 || rr.buf[n.textLo+3] != ':') {
		return badReply("verbatim string without its format")
	}
	return nil
}

// aggregate reads the size elements of n (pairs for a map or an
// attribute) and, after an attribute, the reply it describes.
func (rr *replyReader) aggregate(n replyNode, size int64) (replyNode, error) {
	if n.typ == '%' || n.typ == '|' {
		size *= 2
	}
	elems := make([]replyNode, 0, min(size, 1024))
	for i := int64(0); i < size; i++ {
		e, err := rr.reply()
		if err != nil {
			return n, err
		}
		elems = append(elems, e)
	}
	if n.typ == '|' {
		// An attribute precedes the reply it describes: both are one reply
		// to the reader.
		next, err := rr.reply()
		if err != nil {
			return n, err
		}
		next.lo = n.lo
		next.attrs = append(elems, next.attrs...)
		return next, nil
	}
	n.elems, n.text, n.hi = elems, -1, len(rr.buf)
	return n, nil
}

// isBigNumber reports whether b is an optionally signed run of digits.
func isBigNumber(b []byte) bool {
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// FirstError returns the text of the first error in b, a run of complete
// replies as a server writes them (RESP2 or RESP3): a simple or bulk
// error at the top level or inside an aggregate, such as one command's
// failure inside EXEC's array. It reads the replies' structure, so a bulk
// string whose payload starts a line with '-' is not an error. It reports
// false when b holds no error, and stops at the first bytes that are not
// a complete reply. It does not allocate.
func FirstError(b []byte) ([]byte, bool) {
	// Every reply is a line, and a bulk's line is followed by its payload:
	// walking the lines in order and skipping payloads visits each reply,
	// nested ones included, without counting an aggregate's elements.
	for len(b) > 0 {
		i := bytes.Index(b, crlf)
		if i < 1 {
			return nil, false
		}
		typ, body := b[0], b[1:i]
		b = b[i+2:]
		switch typ {
		case '-':
			return body, true
		case '$', '!', '=':
			size, ok := parseInt(body)
			if !ok || size < 0 {
				continue // RESP2's null bulk string: no payload follows
			}
			if int64(len(b)) < size+2 {
				return nil, false
			}
			if typ == '!' {
				return b[:size], true
			}
			b = b[size+2:]
		}
	}
	return nil, false
}

var crlf = []byte("\r\n")
