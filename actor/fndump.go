package actor

import "encoding/binary"

// FUNCTION DUMP's payload, in Redis's DUMP format so that a dump moves
// between Cellar and Redis 7.0 either way: for each library the RDB opcode
// FUNCTION2 (245) and its code as an RDB string, then the RDB version (2
// bytes, little endian) and a CRC64 (Jones, as Redis's crc64.c) of all
// that (8 bytes, little endian). Strings are LZF-compressed as Redis
// compresses them (rdbcompression), so a dump is Redis's bytes.

const (
	rdbOpFunction2 = 245
	rdbVersion     = 10 // Redis 7.0's
	rdbEncLZF      = 3  // RDB_ENC_LZF
)

func dumpFunctions(codes [][]byte, compress bool) []byte {
	var b []byte
	for _, c := range codes {
		b = append(b, rdbOpFunction2)
		// Redis's rdbSaveRawString: LZF for a string over 20 bytes when
		// rdbcompression is on, if that saves at least 4 bytes.
		if compress && len(c) > 20 {
			if z := lzfCompress(c, len(c)-4); z != nil {
				b = append(b, 0xc0|rdbEncLZF)
				b = appendRDBLen(b, uint64(len(z)))
				b = appendRDBLen(b, uint64(len(c)))
				b = append(b, z...)
				continue
			}
		}
		b = appendRDBLen(b, uint64(len(c)))
		b = append(b, c...)
	}
	b = binary.LittleEndian.AppendUint16(b, rdbVersion)
	return binary.LittleEndian.AppendUint64(b, crc64Jones(0, b))
}

func appendRDBLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|0x40, byte(n))
	case n <= 0xFFFFFFFF:
		return binary.BigEndian.AppendUint32(append(b, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0x81), n)
}

// undumpFunctions returns the libraries' code in a payload.
func undumpFunctions(p []byte) ([][]byte, error) {
	if len(p) < 10 {
		return nil, ErrFnDumpPayload
	}
	body := p[:len(p)-8]
	if v := binary.LittleEndian.Uint16(body[len(body)-2:]); v > rdbVersion {
		return nil, ErrFnDumpPayload
	}
	if crc := binary.LittleEndian.Uint64(p[len(p)-8:]); crc != 0 && crc != crc64Jones(0, body) {
		return nil, ErrFnDumpPayload
	}
	r := rdbReader{b: body[:len(body)-2]}
	var codes [][]byte
	for r.pos < len(r.b) {
		if r.b[r.pos] != rdbOpFunction2 {
			return nil, ErrFnDumpType
		}
		r.pos++
		code, ok := r.str()
		if !ok {
			return nil, ErrFnDumpPayload
		}
		codes = append(codes, code)
	}
	return codes, nil
}

type rdbReader struct {
	b   []byte
	pos int
}

// length reads an RDB length; enc reports the special encodings (0xC0..).
func (r *rdbReader) length() (n uint64, enc bool, ok bool) {
	if r.pos >= len(r.b) {
		return 0, false, false
	}
	c := r.b[r.pos]
	r.pos++
	switch c >> 6 {
	case 0:
		return uint64(c & 0x3F), false, true
	case 1:
		if r.pos >= len(r.b) {
			return 0, false, false
		}
		n = uint64(c&0x3F)<<8 | uint64(r.b[r.pos])
		r.pos++
		return n, false, true
	case 3:
		return uint64(c & 0x3F), true, true
	}
	switch c {
	case 0x80:
		if r.pos+4 > len(r.b) {
			return 0, false, false
		}
		n = uint64(binary.BigEndian.Uint32(r.b[r.pos:]))
		r.pos += 4
	case 0x81:
		if r.pos+8 > len(r.b) {
			return 0, false, false
		}
		n = binary.BigEndian.Uint64(r.b[r.pos:])
		r.pos += 8
	default:
		return 0, false, false
	}
	return n, false, true
}

// str reads an RDB string: plain or LZF-compressed (integer encodings do
// not occur for library code).
func (r *rdbReader) str() ([]byte, bool) {
	n, enc, ok := r.length()
	if !ok {
		return nil, false
	}
	if !enc {
		if n > uint64(len(r.b)-r.pos) {
			return nil, false
		}
		s := r.b[r.pos : r.pos+int(n)]
		r.pos += int(n)
		return s, true
	}
	if n != 3 { // RDB_ENC_LZF
		return nil, false
	}
	clen, e1, ok1 := r.length()
	ulen, e2, ok2 := r.length()
	if !ok1 || !ok2 || e1 || e2 || clen > uint64(len(r.b)-r.pos) || ulen > 512<<20 {
		return nil, false
	}
	out, ok := lzfDecompress(r.b[r.pos:r.pos+int(clen)], int(ulen))
	r.pos += int(clen)
	return out, ok
}

// lzfDecompress undoes LZF (liblzf's format, as Redis writes it).
func lzfDecompress(in []byte, ulen int) ([]byte, bool) {
	out := make([]byte, 0, ulen)
	for ip := 0; ip < len(in); {
		ctrl := int(in[ip])
		ip++
		if ctrl < 32 {
			n := ctrl + 1
			if ip+n > len(in) || len(out)+n > ulen {
				return nil, false
			}
			out = append(out, in[ip:ip+n]...)
			ip += n
			continue
		}
		n := ctrl >> 5
		ref := len(out) - (ctrl&0x1F)<<8 - 1
		if n == 7 {
			if ip >= len(in) {
				return nil, false
			}
			n += int(in[ip])
			ip++
		}
		if ip >= len(in) {
			return nil, false
		}
		ref -= int(in[ip])
		ip++
		n += 2
		if ref < 0 || len(out)+n > ulen {
			return nil, false
		}
		for i := 0; i < n; i++ {
			out = append(out, out[ref+i])
		}
	}
	return out, len(out) == ulen
}

var crc64Table = func() (t [256]uint64) {
	const poly = 0x95AC9329AC4BC9B5 // Jones, reflected
	for i := range t {
		c := uint64(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ poly
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc64Jones is Redis's crc64 (CRC-64/Jones, reflected, no final xor).
func crc64Jones(crc uint64, b []byte) uint64 {
	for _, c := range b {
		crc = crc64Table[byte(crc)^c] ^ crc>>8
	}
	return crc
}

// lzfMaxLit is the longest run of literal bytes one LZF control byte
// introduces.
const lzfMaxLit = 1 << 5

// lzfLiteral appends literal byte b at out[op], in the run of lit bytes
// whose control byte precedes it, closing the run (and leaving room for
// the next control byte) once it is lzfMaxLit long; it returns the new op
// and lit.
func lzfLiteral(out []byte, b byte, op, lit int) (int, int) {
	lit++
	out[op] = b
	op++
	if lit == lzfMaxLit {
		out[op-lit-1] = byte(lit - 1)
		lit = 0
		op++
	}
	return op, lit
}

// lzfCompress is liblzf's lzf_compress as Redis 7.0 builds it (HLOG 16,
// VERY_FAST, the hash table zeroed), so that Cellar's compressed strings
// are Redis's bytes: in compressed into at most outLen bytes, or nil when
// it does not fit (Redis then writes the string as it is).
func lzfCompress(in []byte, outLen int) []byte {
	const (
		hlog   = 16
		hsize  = 1 << hlog
		maxOff = 1 << 13
		maxRef = (1 << 8) + (1 << 3)
	)
	if len(in) == 0 || outLen == 0 {
		return nil
	}
	htab := make([]int32, hsize) // positions + 1; 0 is empty
	out := make([]byte, outLen)
	idx := func(h uint32) uint32 { return ((h >> (3*8 - hlog)) - h*5) & (hsize - 1) }
	inEnd := len(in)
	ip, op, lit := 0, 1, 0 // op++: start run
	hval := uint32(in[0])<<8 | uint32(at(in, 1))
	for ip < inEnd-2 {
		hval = hval<<8 | uint32(in[ip+2])
		slot := idx(hval)
		ref := int(htab[slot]) - 1
		htab[slot] = int32(ip + 1)
		if ref > 0 && ip-ref-1 < maxOff && in[ref+2] == in[ip+2] && in[ref] == in[ip] && in[ref+1] == in[ip+1] {
			off := ip - ref - 1
			n := 2
			maxlen := inEnd - ip - n
			if maxlen > maxRef {
				maxlen = maxRef
			}
			if op+3+1 >= outLen {
				notLit := 0
				if lit == 0 {
					notLit = 1
				}
				if op-notLit+3+1 >= outLen {
					return nil
				}
			}
			out[op-lit-1] = byte(lit - 1) // stop run
			if lit == 0 {
				op-- // undo run if length is zero
			}
			// liblzf's loop, unrolled for the first 16 bytes without the
			// maxlen test: a match may run 2 bytes past maxlen there.
			more := true
			if maxlen > 16 {
				for range 16 {
					n++
					if in[ref+n] != in[ip+n] {
						more = false
						break
					}
				}
			}
			for more {
				n++
				more = n < maxlen && in[ref+n] == in[ip+n]
			}
			n -= 2 // octets - 1
			ip++
			if n < 7 {
				out[op] = byte(off>>8 + n<<5)
				op++
			} else {
				out[op] = byte(off>>8 + 7<<5)
				out[op+1] = byte(n - 7)
				op += 2
			}
			out[op] = byte(off)
			op++
			lit = 0
			op++ // start run
			ip += n + 1
			if ip >= inEnd-2 {
				break
			}
			ip -= 2
			hval = uint32(in[ip])<<8 | uint32(in[ip+1])
			hval = hval<<8 | uint32(in[ip+2])
			htab[idx(hval)] = int32(ip + 1)
			ip++
			hval = hval<<8 | uint32(in[ip+2])
			htab[idx(hval)] = int32(ip + 1)
			ip++
			continue
		}
		if op >= outLen {
			return nil
		}
		op, lit = lzfLiteral(out, in[ip], op, lit)
		ip++
	}
	if op+3 > outLen {
		return nil
	}
	for ip < inEnd {
		op, lit = lzfLiteral(out, in[ip], op, lit)
		ip++
	}
	out[op-lit-1] = byte(lit - 1) // end run
	if lit == 0 {
		op--
	}
	return out[:op]
}

// at is b[i], 0 past its end (lzf_compress reads one byte past a 1-byte
// input for its first hash; it never uses it).
func at(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}
