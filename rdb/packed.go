package rdb

import (
	"encoding/binary"
	"strconv"
)

// The compact encodings stored as one blob. Items returned alias the blob
// where they are strings (the blob belongs to the Object being built) and
// are formatted into new slices where they are integers.

// listpackItems appends a listpack's elements to out (src/listpack.c).
func listpackItems(lp []byte, out [][]byte) ([][]byte, error) {
	if len(lp) < 7 || int(binary.LittleEndian.Uint32(lp)) != len(lp) || lp[len(lp)-1] != 0xff {
		return nil, corrupt("bad listpack header")
	}
	p := lp[6 : len(lp)-1]
	for len(p) > 0 {
		b := p[0]
		var n int // bytes of encoding and data
		switch {
		case b&0x80 == 0: // 7-bit unsigned
			out = append(out, strconv.AppendInt(nil, int64(b&0x7f), 10))
			n = 1
		case b&0xc0 == 0x80: // 6-bit string length
			l := int(b & 0x3f)
			if 1+l > len(p) {
				return nil, corrupt("listpack string out of bounds")
			}
			out = append(out, p[1:1+l:1+l])
			n = 1 + l
		case b&0xe0 == 0xc0: // 13-bit signed
			if len(p) < 2 {
				return nil, corrupt("listpack truncated")
			}
			v := int64(b&0x1f)<<8 | int64(p[1])
			if v >= 1<<12 {
				v -= 1 << 13
			}
			out = append(out, strconv.AppendInt(nil, v, 10))
			n = 2
		case b&0xf0 == 0xe0: // 12-bit string length
			if len(p) < 2 {
				return nil, corrupt("listpack truncated")
			}
			l := int(b&0x0f)<<8 | int(p[1])
			if 2+l > len(p) {
				return nil, corrupt("listpack string out of bounds")
			}
			out = append(out, p[2:2+l:2+l])
			n = 2 + l
		case b == 0xf0: // 32-bit string length
			if len(p) < 5 {
				return nil, corrupt("listpack truncated")
			}
			l := int(binary.LittleEndian.Uint32(p[1:]))
			if l < 0 || 5+l > len(p) {
				return nil, corrupt("listpack string out of bounds")
			}
			out = append(out, p[5:5+l:5+l])
			n = 5 + l
		case b >= 0xf1 && b <= 0xf4:
			size := [...]int{2, 3, 4, 8}[b-0xf1]
			if 1+size > len(p) {
				return nil, corrupt("listpack truncated")
			}
			out = append(out, strconv.AppendInt(nil, leInt(p[1:1+size]), 10))
			n = 1 + size
		default:
			return nil, corrupt("listpack encoding 0x%02x", b)
		}
		n += backlenSize(n)
		if n > len(p) {
			return nil, corrupt("listpack truncated")
		}
		p = p[n:]
	}
	return out, nil
}

// backlenSize is the size of the back-length listpack stores after an
// element of n bytes.
func backlenSize(n int) int {
	switch {
	case n <= 127:
		return 1
	case n < 16383:
		return 2
	case n < 2097151:
		return 3
	case n < 268435455:
		return 4
	}
	return 5
}

// leInt reads a little-endian two's complement integer of len(b) bytes.
func leInt(b []byte) int64 {
	var u uint64
	for i := len(b) - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	shift := 64 - 8*uint(len(b))
	return int64(u<<shift) >> shift
}

// ziplistItems appends a ziplist's elements to out (src/ziplist.c).
func ziplistItems(zl []byte, out [][]byte) ([][]byte, error) {
	if len(zl) < 11 || int(binary.LittleEndian.Uint32(zl)) != len(zl) || zl[len(zl)-1] != 0xff {
		return nil, corrupt("bad ziplist header")
	}
	p := zl[10 : len(zl)-1]
	for len(p) > 0 {
		// previous entry length: 1 byte, or 0xfe and 4 bytes
		if p[0] == 0xfe {
			if len(p) < 5 {
				return nil, corrupt("ziplist truncated")
			}
			p = p[5:]
		} else {
			p = p[1:]
		}
		if len(p) == 0 {
			return nil, corrupt("ziplist truncated")
		}
		b := p[0]
		switch {
		case b>>6 == 0, b>>6 == 1, b>>6 == 2:
			var l, h int
			switch b >> 6 {
			case 0:
				l, h = int(b&0x3f), 1
			case 1:
				if len(p) < 2 {
					return nil, corrupt("ziplist truncated")
				}
				l, h = int(b&0x3f)<<8|int(p[1]), 2
			default:
				if len(p) < 5 {
					return nil, corrupt("ziplist truncated")
				}
				l, h = int(binary.BigEndian.Uint32(p[1:])), 5
			}
			if l < 0 || h+l > len(p) {
				return nil, corrupt("ziplist string out of bounds")
			}
			out = append(out, p[h:h+l:h+l])
			p = p[h+l:]
		default:
			var size int
			switch b {
			case 0xc0:
				size = 2
			case 0xd0:
				size = 4
			case 0xe0:
				size = 8
			case 0xf0:
				size = 3
			case 0xfe:
				size = 1
			default:
				if b >= 0xf1 && b <= 0xfd {
					out = append(out, strconv.AppendInt(nil, int64(b&0x0f)-1, 10))
					p = p[1:]
					continue
				}
				return nil, corrupt("ziplist encoding 0x%02x", b)
			}
			if 1+size > len(p) {
				return nil, corrupt("ziplist truncated")
			}
			out = append(out, strconv.AppendInt(nil, leInt(p[1:1+size]), 10))
			p = p[1+size:]
		}
	}
	return out, nil
}

// intsetItems returns an intset's members (src/intset.c).
func intsetItems(is []byte) ([][]byte, error) {
	if len(is) < 8 {
		return nil, corrupt("intset truncated")
	}
	width := int(binary.LittleEndian.Uint32(is))
	n := int(binary.LittleEndian.Uint32(is[4:]))
	if width != 2 && width != 4 && width != 8 || n < 0 || 8+width*n != len(is) {
		return nil, corrupt("bad intset header")
	}
	out := make([][]byte, 0, n)
	for i := range n {
		out = append(out, strconv.AppendInt(nil, leInt(is[8+i*width:8+(i+1)*width]), 10))
	}
	return out, nil
}

// zipmapItems returns a zipmap's fields and values, alternating
// (src/zipmap.c, written by Redis before 2.6).
func zipmapItems(zm []byte) ([][]byte, error) {
	if len(zm) < 2 {
		return nil, corrupt("zipmap truncated")
	}
	p := zm[1:]
	var out [][]byte
	readLen := func() (int, bool) {
		if len(p) == 0 {
			return 0, false
		}
		if p[0] < 254 {
			l := int(p[0])
			p = p[1:]
			return l, true
		}
		if p[0] == 254 && len(p) >= 5 {
			l := int(binary.LittleEndian.Uint32(p[1:]))
			p = p[5:]
			return l, true
		}
		return 0, false
	}
	for len(p) > 0 && p[0] != 0xff {
		kl, ok := readLen()
		if !ok || kl > len(p) {
			return nil, corrupt("zipmap key out of bounds")
		}
		out = append(out, p[:kl:kl])
		p = p[kl:]
		vl, ok := readLen()
		if !ok || len(p) < 1 {
			return nil, corrupt("zipmap value out of bounds")
		}
		free := int(p[0])
		p = p[1:]
		if vl+free > len(p) {
			return nil, corrupt("zipmap value out of bounds")
		}
		out = append(out, p[:vl:vl])
		p = p[vl+free:]
	}
	if len(p) == 0 {
		return nil, corrupt("zipmap without its end")
	}
	return out, nil
}
