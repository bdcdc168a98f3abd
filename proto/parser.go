package proto

import (
	"bytes"
	"math"
)

// Limits bound what one request may make the server hold. They mirror
// Redis's proto-max-bulk-len and PROTO_INLINE_MAX_SIZE.
type Limits struct {
	// MaxBulkLen is the largest bulk string accepted (proto-max-bulk-len).
	MaxBulkLen int64
	// MaxInline is the longest inline request, and the longest length line
	// ("*N\r\n", "$N\r\n") that may be pending without its CR.
	MaxInline int
}

// DefaultLimits are Redis 7's defaults: 512 MB bulks, 64 KB inline lines.
var DefaultLimits = Limits{MaxBulkLen: 512 << 20, MaxInline: 64 << 10}

// maxMultibulk is the largest element count of a request, as in Redis 7.0
// (INT_MAX); arguments are never preallocated from it.
const maxMultibulk = math.MaxInt32

// ProtocolError is malformed input. Its text is Redis's reply text without
// the "ERR " prefix; after replying with it the server closes the connection.
type ProtocolError string

func (e ProtocolError) Error() string { return string(e) }

// The protocol errors Redis 7 sends, by condition.
const (
	ErrInvalidMultibulkLen ProtocolError = "Protocol error: invalid multibulk length"
	ErrInvalidBulkLen      ProtocolError = "Protocol error: invalid bulk length"
	ErrTooBigMbulkCount    ProtocolError = "Protocol error: too big mbulk count string"
	ErrTooBigBulkCount     ProtocolError = "Protocol error: too big bulk count string"
	ErrTooBigInline        ProtocolError = "Protocol error: too big inline request"
	ErrUnbalancedQuotes    ProtocolError = "Protocol error: unbalanced quotes in request"
	// Before authentication (Parser.SetUnauthenticated).
	ErrUnauthMultibulkLen ProtocolError = "Protocol error: unauthenticated multibulk length"
	ErrUnauthBulkLen      ProtocolError = "Protocol error: unauthenticated bulk length"
)

// Redis's limits for a client that has not authenticated yet: at most
// this many arguments, each at most this long.
const (
	UnauthMaxArgs    = 10
	UnauthMaxBulkLen = 16384
)

// expectedDollar is Redis's "expected '$', got 'c'" error.
func expectedDollar(c byte) ProtocolError {
	return ProtocolError("Protocol error: expected '$', got '" + string([]byte{c}) + "'")
}

// Parser reads requests, one at a time, from a buffer that the caller keeps
// for it: after Parse reports an incomplete request, the next call must get
// a buffer that starts with the same bytes (and usually more). That lets the
// parser resume where it stopped instead of re-scanning a large pipeline or
// bulk from its start, so the total work stays linear in the input.
//
// The zero value is not ready; use NewParser.
type Parser struct {
	lim Limits
	// unauth holds requests to Redis's limits before authentication.
	unauth bool

	// State of a multibulk request that is only partly buffered.
	partial bool
	want    int     // elements announced by "*N"
	pos     int     // parse position within the request
	offs    []int32 // start,end pairs of the elements read so far

	inline []byte // unescaped inline arguments, valid until the next Parse
}

// NewParser returns a parser enforcing lim.
func NewParser(lim Limits) *Parser { return &Parser{lim: lim} }

// SetUnauthenticated turns the limits before authentication on or off
// (multibulks of more than UnauthMaxArgs, bulks longer than
// UnauthMaxBulkLen are protocol errors while on).
func (p *Parser) SetUnauthenticated(on bool) { p.unauth = on }

// Pending reports whether a request is partly parsed.
func (p *Parser) Pending() bool { return p.partial }

// Reset forgets any partly parsed request.
func (p *Parser) Reset() {
	p.partial, p.want, p.pos, p.offs = false, 0, 0, p.offs[:0]
}

// Parse reads one request from the start of buf and appends its arguments to
// args[:0]. The arguments alias buf (or the parser's inline scratch) and are
// valid until buf changes or Parse is called again.
//
//   - A complete request: n > 0 bytes consumed; args may be empty for a
//     request Redis skips (an empty line, "*0", "*-1").
//   - An incomplete one: n == 0 and need is the buffer length worth waiting
//     for before calling again (len(buf)+1 when it cannot tell).
//   - Malformed input: err is a ProtocolError.
func (p *Parser) Parse(buf []byte, args [][]byte) (_ [][]byte, n, need int, err error) {
	args = args[:0]
	if len(buf) == 0 {
		return args, 0, 1, nil
	}
	if !p.partial && buf[0] != '*' {
		return p.parseInline(buf, args)
	}
	return p.parseMultibulk(buf, args)
}

func (p *Parser) parseMultibulk(buf []byte, args [][]byte) (_ [][]byte, n, need int, err error) {
	if !p.partial {
		ll, valid, next, ok, err := p.lengthLine(buf, 0, ErrTooBigMbulkCount)
		if err != nil || !ok {
			return args, 0, len(buf) + 1, err
		}
		if !valid || ll > maxMultibulk {
			return args, 0, 0, ErrInvalidMultibulkLen
		}
		if ll > UnauthMaxArgs && p.unauth {
			return args, 0, 0, ErrUnauthMultibulkLen
		}
		if ll <= 0 {
			return args, next, 0, nil
		}
		p.partial, p.want, p.pos, p.offs = true, int(ll), next, p.offs[:0]
	}
	for len(p.offs)/2 < p.want {
		pos := p.pos
		ll, valid, next, ok, err := p.lengthLine(buf, pos, ErrTooBigBulkCount)
		if err != nil {
			p.Reset()
			return args, 0, 0, err
		}
		if !ok {
			return args, 0, len(buf) + 1, nil
		}
		if buf[pos] != '$' {
			p.Reset()
			return args, 0, 0, expectedDollar(buf[pos])
		}
		if !valid || ll < 0 || ll > p.lim.MaxBulkLen {
			p.Reset()
			return args, 0, 0, ErrInvalidBulkLen
		}
		if ll > UnauthMaxBulkLen && p.unauth {
			p.Reset()
			return args, 0, 0, ErrUnauthBulkLen
		}
		end := next + int(ll)
		if len(buf) < end+2 {
			// Wait for the whole bulk and the two bytes after it. Redis
			// skips those two bytes without checking them; so does Cellar.
			return args, 0, end + 2, nil
		}
		p.offs = append(p.offs, int32(next), int32(end))
		p.pos = end + 2
	}
	for i := 0; i < len(p.offs); i += 2 {
		args = append(args, buf[p.offs[i]:p.offs[i+1]:p.offs[i+1]])
	}
	n = p.pos
	p.Reset()
	return args, n, 0, nil
}

// lengthLine reads a "<type><int>\r\n" line starting at pos. ok is false when
// the line is not complete yet; tooBig is the error for a line that stays
// without its CR past the inline limit.
func (p *Parser) lengthLine(buf []byte, pos int, tooBig ProtocolError) (ll int64, valid bool, next int, ok bool, err error) {
	cr := bytes.IndexByte(buf[pos:], '\r')
	if cr < 0 {
		if len(buf)-pos > p.lim.MaxInline {
			return 0, false, 0, false, tooBig
		}
		return 0, false, 0, false, nil
	}
	cr += pos
	// Like Redis, the line counts as complete once one byte follows the CR.
	if cr+2 > len(buf) {
		return 0, false, 0, false, nil
	}
	if cr > pos { // else buf[pos] is the CR itself and the caller reports it
		ll, valid = parseInt(buf[pos+1 : cr])
	}
	return ll, valid, cr + 2, true, nil
}

// parseInt parses a decimal int64 exactly as Redis's string2ll: an optional
// minus sign, no plus sign, no leading zeros, no spaces, no overflow.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	if b[0] == '-' {
		neg = true
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// ParseInt parses b as Redis's string2ll does (see parseInt).
func ParseInt(b []byte) (int64, bool) { return parseInt(b) }

func (p *Parser) parseInline(buf []byte, args [][]byte) (_ [][]byte, n, need int, err error) {
	nl := bytes.IndexByte(buf, '\n')
	if nl < 0 {
		if len(buf) > p.lim.MaxInline {
			return args, 0, 0, ErrTooBigInline
		}
		return args, 0, len(buf) + 1, nil
	}
	line := buf[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok := p.splitArgs(line, args)
	if !ok {
		return args[:0], 0, 0, ErrUnbalancedQuotes
	}
	return args, nl + 1, 0, nil
}

// SplitArgs splits line as Redis's sdssplitargs does (see splitArgs), for
// the places that read a redis-cli style line outside a request, such as a
// function library's "#!" line. ok is false on unbalanced quotes. The
// arguments are fresh copies.
func SplitArgs(line []byte) (args [][]byte, ok bool) {
	var p Parser
	return p.splitArgs(line, nil)
}

// splitArgs splits an inline request the way Redis's sdssplitargs does:
// blanks separate arguments; "double quotes" understand \n \r \t \b \a \xHH
// and \<c>; 'single quotes' understand \'; a closing quote must be followed
// by a blank or the end. A NUL byte ends the line, as in C.
func (p *Parser) splitArgs(line []byte, args [][]byte) ([][]byte, bool) {
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	p.inline = p.inline[:0]
	type span struct{ start, end int }
	var spans [16]span
	list := spans[:0]
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			break
		}
		start := len(p.inline)
		inDouble, inSingle := false, false
		for done := false; !done; {
			var c byte
			if i < len(line) {
				c = line[i]
			}
			switch {
			case inDouble:
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					p.inline = append(p.inline, unhex(line[i+2])<<4|unhex(line[i+3]))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					p.inline = append(p.inline, unescape(line[i]))
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return args, false
					}
					done = true
				case i >= len(line):
					return args, false
				default:
					p.inline = append(p.inline, c)
				}
			case inSingle:
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					p.inline = append(p.inline, '\'')
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return args, false
					}
					done = true
				case i >= len(line):
					return args, false
				default:
					p.inline = append(p.inline, c)
				}
			default:
				switch {
				case i >= len(line), c == ' ', c == '\n', c == '\r', c == '\t':
					done = true
				case c == '"':
					inDouble = true
				case c == '\'':
					inSingle = true
				default:
					p.inline = append(p.inline, c)
				}
			}
			if i < len(line) {
				i++
			}
		}
		list = append(list, span{start, len(p.inline)})
	}
	// p.inline may have moved while growing; slice it only now.
	for _, s := range list {
		args = append(args, p.inline[s.start:s.end:s.end])
	}
	return args, true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
