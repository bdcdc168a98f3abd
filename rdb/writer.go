package rdb

import (
	"encoding/binary"
	"math"
	"sort"
	"strconv"
)

// AppendDump appends the DUMP payload of o to dst: the value in RDB
// version 10 (Redis 7.0's), the version in 2 bytes and the CRC-64 of all
// before it, as Redis's DUMP writes them. Strings, lists, sets, hashes and
// sorted sets use the plain encodings (RESTORE on Redis rebuilds its
// compact encodings from them); streams use format 2 (Redis 7.0's).
func AppendDump(dst []byte, o *Object) []byte {
	start := len(dst)
	switch o.Kind {
	case KindString:
		dst = append(dst, TypeString)
		dst = appendString(dst, o.Str)
	case KindList, KindSet:
		t := byte(TypeList)
		if o.Kind == KindSet {
			t = TypeSet
		}
		dst = append(dst, t)
		dst = appendLen(dst, uint64(len(o.Items)))
		for _, it := range o.Items {
			dst = appendString(dst, it)
		}
	case KindHash:
		dst = append(dst, TypeHash)
		dst = appendLen(dst, uint64(len(o.Items)/2))
		for _, it := range o.Items {
			dst = appendString(dst, it)
		}
	case KindZSet:
		dst = append(dst, TypeZSet2)
		dst = appendLen(dst, uint64(len(o.Items)))
		for i, it := range o.Items {
			dst = appendString(dst, it)
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(o.Scores[i]))
		}
	case KindStream:
		dst = append(dst, TypeStreamListpacks2)
		dst = appendStream(dst, o.Stream)
	}
	dst = binary.LittleEndian.AppendUint16(dst, Version)
	return binary.LittleEndian.AppendUint64(dst, CRC64(0, dst[start:]))
}

func appendLen(dst []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(dst, byte(n))
	case n < 1<<14:
		return append(dst, byte(n>>8)|0x40, byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0x81), n)
}

// canonicalInt reports whether s is an integer written the way Redis
// writes it (no sign on 0, no leading zeros or spaces), and its value.
func canonicalInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil {
		return 0, false
	}
	var buf [20]byte
	return v, string(strconv.AppendInt(buf[:0], v, 10)) == string(s)
}

// appendString writes s, as an integer encoding when Redis would
// (rdbTryIntegerEncoding: a canonical integer that fits 32 bits).
func appendString(dst, s []byte) []byte {
	if len(s) <= 11 {
		if v, ok := canonicalInt(s); ok {
			switch {
			case v >= math.MinInt8 && v <= math.MaxInt8:
				return append(dst, 0xc0|encInt8, byte(v))
			case v >= math.MinInt16 && v <= math.MaxInt16:
				return binary.LittleEndian.AppendUint16(append(dst, 0xc0|encInt16), uint16(v))
			case v >= math.MinInt32 && v <= math.MaxInt32:
				return binary.LittleEndian.AppendUint32(append(dst, 0xc0|encInt32), uint32(v))
			}
		}
	}
	return append(appendLen(dst, uint64(len(s))), s...)
}

// listpack builds a listpack (src/listpack.c), storing canonical integers
// in integer encodings as Redis does.
type listpack struct {
	b []byte
	n int
}

func newListpack() *listpack { return &listpack{b: make([]byte, 6, 256)} }

func (lp *listpack) addInt(v int64) {
	start := len(lp.b)
	switch {
	case v >= 0 && v <= 127:
		lp.b = append(lp.b, byte(v))
	case v >= -4096 && v <= 4095:
		u := uint16(v) & 0x1fff
		lp.b = append(lp.b, 0xc0|byte(u>>8), byte(u))
	case v >= math.MinInt16 && v <= math.MaxInt16:
		lp.b = binary.LittleEndian.AppendUint16(append(lp.b, 0xf1), uint16(v))
	case v >= -1<<23 && v < 1<<23:
		u := uint32(v)
		lp.b = append(lp.b, 0xf2, byte(u), byte(u>>8), byte(u>>16))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		lp.b = binary.LittleEndian.AppendUint32(append(lp.b, 0xf3), uint32(v))
	default:
		lp.b = binary.LittleEndian.AppendUint64(append(lp.b, 0xf4), uint64(v))
	}
	lp.backlen(start)
}

func (lp *listpack) add(s []byte) {
	if v, ok := canonicalInt(s); ok {
		lp.addInt(v)
		return
	}
	start := len(lp.b)
	switch n := len(s); {
	case n < 64:
		lp.b = append(lp.b, 0x80|byte(n))
	case n < 4096:
		lp.b = append(lp.b, 0xe0|byte(n>>8), byte(n))
	default:
		lp.b = binary.LittleEndian.AppendUint32(append(lp.b, 0xf0), uint32(n))
	}
	lp.b = append(lp.b, s...)
	lp.backlen(start)
}

// backlen appends the element's length, most significant 7 bits first,
// every byte but the first flagged with the high bit (lpEncodeBacklen).
func (lp *listpack) backlen(start int) {
	l := uint64(len(lp.b) - start)
	k := backlenSize(int(l))
	for i := k - 1; i >= 0; i-- {
		b := byte(l >> (7 * uint(i)) & 127)
		if i != k-1 {
			b |= 128
		}
		lp.b = append(lp.b, b)
	}
	lp.n++
}

func (lp *listpack) bytes() []byte {
	b := append(lp.b, 0xff)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	binary.LittleEndian.PutUint16(b[4:], uint16(min(lp.n, 65535)))
	return b
}

// Stream nodes are cut as Redis's defaults cut them
// (stream-node-max-entries 100, stream-node-max-bytes 4096).
const (
	streamNodeEntries = 100
	streamNodeBytes   = 4096
)

func appendID(dst []byte, id StreamID) []byte {
	return appendLen(appendLen(dst, id.Ms), id.Seq)
}

func appendRawID(dst []byte, id StreamID) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(dst, id.Ms), id.Seq)
}

// appendStream writes a stream in format 2 (RDB_TYPE_STREAM_LISTPACKS_2).
func appendStream(dst []byte, s *Stream) []byte {
	var nodes [][]byte
	var keys []StreamID
	for i := 0; i < len(s.Entries); {
		master := s.Entries[i]
		fields := make([][]byte, 0, len(master.Fields)/2)
		for k := 0; k < len(master.Fields); k += 2 {
			fields = append(fields, master.Fields[k])
		}
		var entries []StreamEntry
		size := 0
		for i < len(s.Entries) && len(entries) < streamNodeEntries && (size < streamNodeBytes || len(entries) == 0) {
			e := s.Entries[i]
			entries = append(entries, e)
			for _, f := range e.Fields {
				size += len(f) + 2
			}
			i++
		}
		lp := newListpack()
		lp.addInt(int64(len(entries)))
		lp.addInt(0)
		lp.addInt(int64(len(fields)))
		for _, f := range fields {
			lp.add(f)
		}
		lp.addInt(0)
		for _, e := range entries {
			same := len(e.Fields) == 2*len(fields)
			for k := 0; same && k < len(fields); k++ {
				same = string(e.Fields[2*k]) == string(fields[k])
			}
			flags := int64(0)
			if same {
				flags = streamItemSameFields
			}
			lp.addInt(flags)
			lp.addInt(int64(e.ID.Ms - master.ID.Ms))
			lp.addInt(int64(e.ID.Seq - master.ID.Seq))
			n := len(e.Fields) / 2
			if same {
				for k := 1; k < len(e.Fields); k += 2 {
					lp.add(e.Fields[k])
				}
				lp.addInt(int64(n + 3))
			} else {
				lp.addInt(int64(n))
				for _, f := range e.Fields {
					lp.add(f)
				}
				lp.addInt(int64(2*n + 4))
			}
		}
		nodes = append(nodes, lp.bytes())
		keys = append(keys, master.ID)
	}
	dst = appendLen(dst, uint64(len(nodes)))
	for i, n := range nodes {
		dst = appendString(dst, appendRawID(nil, keys[i]))
		dst = appendString(dst, n)
	}
	dst = appendLen(dst, uint64(len(s.Entries)))
	dst = appendID(dst, s.LastID)
	dst = appendID(dst, s.FirstID)
	dst = appendID(dst, s.MaxDeletedID)
	dst = appendLen(dst, s.EntriesAdded)
	dst = appendLen(dst, uint64(len(s.Groups)))
	for _, g := range s.Groups {
		dst = appendString(dst, g.Name)
		dst = appendID(dst, g.LastID)
		dst = appendLen(dst, uint64(g.EntriesRead))
		pel := append([]StreamPending(nil), g.Pending...)
		sort.Slice(pel, func(a, b int) bool {
			return pel[a].ID.Ms < pel[b].ID.Ms || pel[a].ID.Ms == pel[b].ID.Ms && pel[a].ID.Seq < pel[b].ID.Seq
		})
		dst = appendLen(dst, uint64(len(pel)))
		for _, p := range pel {
			dst = appendRawID(dst, p.ID)
			dst = binary.LittleEndian.AppendUint64(dst, uint64(p.DeliveryTime))
			dst = appendLen(dst, p.DeliveryCount)
		}
		dst = appendLen(dst, uint64(len(g.Consumers)))
		for _, c := range g.Consumers {
			dst = appendString(dst, c.Name)
			dst = binary.LittleEndian.AppendUint64(dst, uint64(c.SeenTime))
			var mine []StreamID
			for _, p := range pel {
				if string(p.Consumer) == string(c.Name) {
					mine = append(mine, p.ID)
				}
			}
			dst = appendLen(dst, uint64(len(mine)))
			for _, id := range mine {
				dst = appendRawID(dst, id)
			}
		}
	}
	return dst
}
