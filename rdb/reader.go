package rdb

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// ErrCorrupt wraps every error about malformed input.
var ErrCorrupt = errors.New("rdb: corrupt data")

// ErrModule is the error for a value of a module type (wrapped with the key).
var ErrModule = errors.New("rdb: module types cannot be loaded")

// maxAlloc bounds what a length field alone may make the decoder allocate
// before the bytes are there: a corrupt length must fail on the missing
// bytes, not on an allocation of its size.
const maxAlloc = 1 << 20

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// decoder reads the RDB primitives from a buffered reader and keeps the
// running checksum of everything it consumed (and nothing more, so the
// bytes after an RDB, such as a replication stream, stay in the reader).
type decoder struct {
	br  *bufio.Reader
	crc uint64
	n   int64 // bytes consumed
	tmp [16]byte
}

func (d *decoder) byte() (byte, error) {
	b, err := d.br.ReadByte()
	if err != nil {
		return 0, eof(err)
	}
	d.crc = crcTable[0][byte(d.crc)^b] ^ d.crc>>8
	d.n++
	return b, nil
}

func eof(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// full reads exactly len(p) bytes.
func (d *decoder) full(p []byte) error {
	if _, err := io.ReadFull(d.br, p); err != nil {
		return eof(err)
	}
	d.crc = CRC64(d.crc, p)
	d.n += int64(len(p))
	return nil
}

// bytesN reads n bytes into a new slice, growing it as bytes arrive so a
// corrupt length cannot allocate more than the input holds.
func (d *decoder) bytesN(n uint64) ([]byte, error) {
	if n <= maxAlloc {
		p := make([]byte, n)
		return p, d.full(p)
	}
	p := make([]byte, 0, maxAlloc)
	for uint64(len(p)) < n {
		k := min(n-uint64(len(p)), maxAlloc)
		start := len(p)
		p = append(p, make([]byte, k)...)
		if err := d.full(p[start:]); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// length reads a length; encoded reports a special string encoding, whose
// kind is then the returned value.
func (d *decoder) length() (n uint64, encoded bool, err error) {
	b, err := d.byte()
	if err != nil {
		return 0, false, err
	}
	switch b >> 6 {
	case len6:
		return uint64(b & 0x3f), false, nil
	case len14:
		b2, err := d.byte()
		return uint64(b&0x3f)<<8 | uint64(b2), false, err
	case lenEncoded:
		return uint64(b & 0x3f), true, nil
	}
	switch b {
	case 0x80:
		err = d.full(d.tmp[:4])
		return uint64(binary.BigEndian.Uint32(d.tmp[:4])), false, err
	case 0x81:
		err = d.full(d.tmp[:8])
		return binary.BigEndian.Uint64(d.tmp[:8]), false, err
	}
	return 0, false, corrupt("unknown length encoding 0x%02x", b)
}

// plainLen reads a length that may not be an encoded string.
func (d *decoder) plainLen() (uint64, error) {
	n, enc, err := d.length()
	if err == nil && enc {
		err = corrupt("unexpected encoded length")
	}
	return n, err
}

// str reads a string (plain, integer-encoded or LZF-compressed).
func (d *decoder) str() ([]byte, error) {
	n, enc, err := d.length()
	if err != nil {
		return nil, err
	}
	if !enc {
		return d.bytesN(n)
	}
	switch n {
	case encInt8:
		b, err := d.byte()
		return strconv.AppendInt(nil, int64(int8(b)), 10), err
	case encInt16:
		err := d.full(d.tmp[:2])
		return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(d.tmp[:2]))), 10), err
	case encInt32:
		err := d.full(d.tmp[:4])
		return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(d.tmp[:4]))), 10), err
	case encLZF:
		clen, err := d.plainLen()
		if err != nil {
			return nil, err
		}
		ulen, err := d.plainLen()
		if err != nil {
			return nil, err
		}
		comp, err := d.bytesN(clen)
		if err != nil {
			return nil, err
		}
		if ulen > 90*clen+64 { // LZF expands at most 264 bytes from 3
			return nil, corrupt("LZF length %d from %d bytes", ulen, clen)
		}
		return lzfDecompress(comp, int(ulen))
	}
	return nil, corrupt("unknown string encoding %d", n)
}

// lzfDecompress expands LZF data (liblzf's format, as Redis writes it).
func lzfDecompress(in []byte, ulen int) ([]byte, error) {
	out := make([]byte, 0, ulen)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 {
			n := ctrl + 1
			if i+n > len(in) || len(out)+n > ulen {
				return nil, corrupt("LZF literal out of bounds")
			}
			out = append(out, in[i:i+n]...)
			i += n
			continue
		}
		n := ctrl >> 5
		if n == 7 {
			if i >= len(in) {
				return nil, corrupt("LZF truncated")
			}
			n += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, corrupt("LZF truncated")
		}
		ref := len(out) - (ctrl&0x1f)<<8 - 1 - int(in[i])
		i++
		n += 2
		if ref < 0 || len(out)+n > ulen {
			return nil, corrupt("LZF back reference out of bounds")
		}
		for k := range n {
			out = append(out, out[ref+k])
		}
	}
	if len(out) != ulen {
		return nil, corrupt("LZF length %d, expected %d", len(out), ulen)
	}
	return out, nil
}

// textDouble reads the text double of old sorted sets (RDB_TYPE_ZSET).
func (d *decoder) textDouble() (float64, error) {
	n, err := d.byte()
	if err != nil {
		return 0, err
	}
	switch n {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	buf := d.tmp[:0]
	var big [255]byte
	buf = big[:n]
	if err := d.full(buf); err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(buf), 64)
	if err != nil {
		return 0, corrupt("bad score %q", buf)
	}
	return f, nil
}

func (d *decoder) binaryDouble() (float64, error) {
	if err := d.full(d.tmp[:8]); err != nil {
		return 0, err
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(d.tmp[:8])), nil
}

func (d *decoder) millis() (int64, error) {
	if err := d.full(d.tmp[:8]); err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(d.tmp[:8])), nil
}

func (d *decoder) rawID() (StreamID, error) {
	if err := d.full(d.tmp[:16]); err != nil {
		return StreamID{}, err
	}
	return StreamID{binary.BigEndian.Uint64(d.tmp[:8]), binary.BigEndian.Uint64(d.tmp[8:16])}, nil
}

func (d *decoder) lenID() (id StreamID, err error) {
	if id.Ms, err = d.plainLen(); err != nil {
		return id, err
	}
	id.Seq, err = d.plainLen()
	return id, err
}

// count reads an element count and caps the capacity it may preallocate.
func (d *decoder) count() (n uint64, capHint int, err error) {
	n, err = d.plainLen()
	return n, int(min(n, 4096)), err
}

// object reads a value of RDB type t.
func (d *decoder) object(t byte) (*Object, error) {
	o := &Object{Encoding: t}
	var err error
	switch t {
	case TypeString:
		o.Kind = KindString
		o.Str, err = d.str()
		return o, err
	case TypeList, TypeSet:
		o.Kind = KindList
		if t == TypeSet {
			o.Kind = KindSet
		}
		n, c, err := d.count()
		if err != nil {
			return nil, err
		}
		o.Items = make([][]byte, 0, c)
		for range n {
			s, err := d.str()
			if err != nil {
				return nil, err
			}
			o.Items = append(o.Items, s)
		}
	case TypeZSet, TypeZSet2:
		o.Kind = KindZSet
		n, c, err := d.count()
		if err != nil {
			return nil, err
		}
		o.Items, o.Scores = make([][]byte, 0, c), make([]float64, 0, c)
		for range n {
			s, err := d.str()
			if err != nil {
				return nil, err
			}
			var f float64
			if t == TypeZSet {
				f, err = d.textDouble()
			} else {
				f, err = d.binaryDouble()
			}
			if err != nil {
				return nil, err
			}
			if math.IsNaN(f) {
				return nil, corrupt("NaN score")
			}
			o.Items, o.Scores = append(o.Items, s), append(o.Scores, f)
		}
	case TypeHash:
		o.Kind = KindHash
		n, c, err := d.count()
		if err != nil {
			return nil, err
		}
		o.Items = make([][]byte, 0, 2*c)
		for range 2 * n {
			s, err := d.str()
			if err != nil {
				return nil, err
			}
			o.Items = append(o.Items, s)
		}
	case TypeListQuicklist, TypeListQuicklist2:
		o.Kind = KindList
		n, err := d.plainLen()
		if err != nil {
			return nil, err
		}
		for range n {
			container := uint64(quicklistNodePacked)
			if t == TypeListQuicklist2 {
				if container, err = d.plainLen(); err != nil {
					return nil, err
				}
			}
			blob, err := d.str()
			if err != nil {
				return nil, err
			}
			switch {
			case container == quicklistNodePlain:
				o.Items = append(o.Items, blob)
			case container != quicklistNodePacked:
				return nil, corrupt("quicklist container %d", container)
			case t == TypeListQuicklist:
				o.Items, err = ziplistItems(blob, o.Items)
			default:
				o.Items, err = listpackItems(blob, o.Items)
			}
			if err != nil {
				return nil, err
			}
		}
	case TypeHashZipmap, TypeListZiplist, TypeSetIntset, TypeZSetZiplist, TypeHashZiplist,
		TypeHashListpack, TypeZSetListpack, TypeSetListpack:
		blob, err := d.str()
		if err != nil {
			return nil, err
		}
		if err := o.fromBlob(t, blob); err != nil {
			return nil, err
		}
	case TypeStreamListpacks, TypeStreamListpacks2, TypeStreamListpacks3:
		o.Kind = KindStream
		o.Stream, err = d.stream(t)
		if err != nil {
			return nil, err
		}
		return o, nil
	case TypeModule, TypeModule2:
		return nil, ErrModule
	default:
		return nil, corrupt("unknown value type %d", t)
	}
	if len(o.Items) == 0 {
		return nil, corrupt("empty %s", o.Kind)
	}
	return o, nil
}

// fromBlob decodes the single-blob encodings.
func (o *Object) fromBlob(t byte, blob []byte) (err error) {
	switch t {
	case TypeHashZipmap:
		o.Kind = KindHash
		o.Items, err = zipmapItems(blob)
	case TypeListZiplist:
		o.Kind = KindList
		o.Items, err = ziplistItems(blob, nil)
	case TypeSetIntset:
		o.Kind = KindSet
		o.Items, err = intsetItems(blob)
	case TypeSetListpack:
		o.Kind = KindSet
		o.Items, err = listpackItems(blob, nil)
	case TypeHashZiplist, TypeHashListpack:
		o.Kind = KindHash
		if t == TypeHashZiplist {
			o.Items, err = ziplistItems(blob, nil)
		} else {
			o.Items, err = listpackItems(blob, nil)
		}
		if err == nil && len(o.Items)%2 != 0 {
			err = corrupt("hash with an odd number of items")
		}
	case TypeZSetZiplist, TypeZSetListpack:
		o.Kind = KindZSet
		var flat [][]byte
		if t == TypeZSetZiplist {
			flat, err = ziplistItems(blob, nil)
		} else {
			flat, err = listpackItems(blob, nil)
		}
		if err != nil {
			return err
		}
		if len(flat)%2 != 0 {
			return corrupt("sorted set with an odd number of items")
		}
		o.Items = make([][]byte, 0, len(flat)/2)
		o.Scores = make([]float64, 0, len(flat)/2)
		for i := 0; i < len(flat); i += 2 {
			f, perr := strconv.ParseFloat(string(flat[i+1]), 64)
			if perr != nil || math.IsNaN(f) {
				return corrupt("bad score %q", flat[i+1])
			}
			o.Items, o.Scores = append(o.Items, flat[i]), append(o.Scores, f)
		}
	}
	return err
}

// stream reads a stream of format 1, 2 or 3.
func (d *decoder) stream(t byte) (*Stream, error) {
	s := &Stream{}
	nodes, err := d.plainLen()
	if err != nil {
		return nil, err
	}
	for range nodes {
		key, err := d.str()
		if err != nil {
			return nil, err
		}
		if len(key) != 16 {
			return nil, corrupt("stream node key of %d bytes", len(key))
		}
		master := StreamID{binary.BigEndian.Uint64(key[:8]), binary.BigEndian.Uint64(key[8:])}
		lp, err := d.str()
		if err != nil {
			return nil, err
		}
		if s.Entries, err = streamNode(master, lp, s.Entries); err != nil {
			return nil, err
		}
	}
	if s.Length, err = d.plainLen(); err != nil {
		return nil, err
	}
	if s.LastID, err = d.lenID(); err != nil {
		return nil, err
	}
	if len(s.Entries) > 0 {
		s.FirstID = s.Entries[0].ID
	}
	s.EntriesAdded = s.Length
	if t >= TypeStreamListpacks2 {
		if s.FirstID, err = d.lenID(); err != nil {
			return nil, err
		}
		if s.MaxDeletedID, err = d.lenID(); err != nil {
			return nil, err
		}
		if s.EntriesAdded, err = d.plainLen(); err != nil {
			return nil, err
		}
	}
	if uint64(len(s.Entries)) != s.Length {
		return nil, corrupt("stream length %d but %d entries", s.Length, len(s.Entries))
	}
	ngroups, err := d.plainLen()
	if err != nil {
		return nil, err
	}
	for range ngroups {
		g := StreamGroup{EntriesRead: -1}
		if g.Name, err = d.str(); err != nil {
			return nil, err
		}
		if g.LastID, err = d.lenID(); err != nil {
			return nil, err
		}
		if t >= TypeStreamListpacks2 {
			n, err := d.plainLen()
			if err != nil {
				return nil, err
			}
			g.EntriesRead = int64(n)
		}
		npel, c, err := d.count()
		if err != nil {
			return nil, err
		}
		g.Pending = make([]StreamPending, 0, c)
		byID := make(map[StreamID]int, c)
		for range npel {
			var p StreamPending
			if p.ID, err = d.rawID(); err != nil {
				return nil, err
			}
			if p.DeliveryTime, err = d.millis(); err != nil {
				return nil, err
			}
			if p.DeliveryCount, err = d.plainLen(); err != nil {
				return nil, err
			}
			byID[p.ID] = len(g.Pending)
			g.Pending = append(g.Pending, p)
		}
		ncons, err := d.plainLen()
		if err != nil {
			return nil, err
		}
		for range ncons {
			c := StreamConsumer{ActiveTime: -1}
			if c.Name, err = d.str(); err != nil {
				return nil, err
			}
			if c.SeenTime, err = d.millis(); err != nil {
				return nil, err
			}
			if t >= TypeStreamListpacks3 {
				if c.ActiveTime, err = d.millis(); err != nil {
					return nil, err
				}
			}
			n, err := d.plainLen()
			if err != nil {
				return nil, err
			}
			for range n {
				id, err := d.rawID()
				if err != nil {
					return nil, err
				}
				i, ok := byID[id]
				if !ok || g.Pending[i].Consumer != nil {
					return nil, corrupt("consumer's pending entry not in its group's list")
				}
				g.Pending[i].Consumer = c.Name
				c.Pending = append(c.Pending, id)
			}
			g.Consumers = append(g.Consumers, c)
		}
		for _, p := range g.Pending {
			if p.Consumer == nil {
				return nil, corrupt("pending entry without a consumer")
			}
		}
		s.Groups = append(s.Groups, g)
	}
	return s, nil
}

// streamNode decodes one listpack of stream entries (t_stream.c's layout):
// a master entry (count, deleted, field count, fields, 0), then per entry
// flags, ms and seq differences from the master ID, its fields (or values
// only, with the master's fields), and the entry's element count.
func streamNode(master StreamID, lp []byte, out []StreamEntry) ([]StreamEntry, error) {
	items, err := listpackItems(lp, nil)
	if err != nil {
		return nil, err
	}
	next := func() ([]byte, error) {
		if len(items) == 0 {
			return nil, corrupt("stream listpack truncated")
		}
		v := items[0]
		items = items[1:]
		return v, nil
	}
	num := func() (int64, error) {
		v, err := next()
		if err != nil {
			return 0, err
		}
		n, perr := strconv.ParseInt(string(v), 10, 64)
		if perr != nil {
			return 0, corrupt("stream listpack: %q is not a number", v)
		}
		return n, nil
	}
	count, err := num()
	if err != nil {
		return nil, err
	}
	deleted, err := num()
	if err != nil {
		return nil, err
	}
	nf, err := num()
	if err != nil || nf < 0 || nf > int64(len(items)) {
		return nil, corrupt("stream listpack: bad master field count")
	}
	fields := items[:nf]
	items = items[nf:]
	if _, err := next(); err != nil { // the master entry's terminator
		return nil, err
	}
	for total := count + deleted; total > 0; total-- {
		flags, err := num()
		if err != nil {
			return nil, err
		}
		ms, err := num()
		if err != nil {
			return nil, err
		}
		seq, err := num()
		if err != nil {
			return nil, err
		}
		e := StreamEntry{ID: StreamID{master.Ms + uint64(ms), master.Seq + uint64(seq)}}
		if flags&streamItemSameFields != 0 {
			if len(items) < len(fields) {
				return nil, corrupt("stream listpack truncated")
			}
			e.Fields = make([][]byte, 0, 2*len(fields))
			for i, f := range fields {
				e.Fields = append(e.Fields, f, items[i])
			}
			items = items[len(fields):]
		} else {
			n, err := num()
			if err != nil || n < 0 || 2*n > int64(len(items)) {
				return nil, corrupt("stream listpack: bad field count")
			}
			e.Fields = items[: 2*n : 2*n]
			items = items[2*n:]
		}
		if _, err := next(); err != nil { // lp-count
			return nil, err
		}
		if flags&streamItemDeleted == 0 {
			out = append(out, e)
		}
	}
	if len(items) != 0 {
		return nil, corrupt("stream listpack has %d extra items", len(items))
	}
	return out, nil
}
