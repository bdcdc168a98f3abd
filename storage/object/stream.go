package object

import (
	"errors"
	"math"

	"github.com/tidwall/btree"
)

// A stream in memory: its entries in ID order in a tree, its metadata, and
// its consumer groups (stream_groups.go), each with its consumers and
// pending entries list (PEL). What changed since the last Freeze is
// recorded as stream_delta.go describes.

// StreamID is a stream entry ID: two unsigned numbers, ordered ms first.
type StreamID struct{ Ms, Seq uint64 }

// MaxStreamID is the largest ID ("+").
var MaxStreamID = StreamID{math.MaxUint64, math.MaxUint64}

// Cmp compares a and b: -1, 0 or 1.
func (a StreamID) Cmp(b StreamID) int {
	switch {
	case a.Ms < b.Ms:
		return -1
	case a.Ms > b.Ms:
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// IsZero reports whether a is 0-0.
func (a StreamID) IsZero() bool { return a.Ms == 0 && a.Seq == 0 }

// Next is the ID right after a; ok is false for MaxStreamID.
func (a StreamID) Next() (StreamID, bool) {
	switch {
	case a.Seq < math.MaxUint64:
		return StreamID{a.Ms, a.Seq + 1}, true
	case a.Ms < math.MaxUint64:
		return StreamID{a.Ms + 1, 0}, true
	}
	return a, false
}

// Prev is the ID right before a; ok is false for 0-0.
func (a StreamID) Prev() (StreamID, bool) {
	switch {
	case a.Seq > 0:
		return StreamID{a.Ms, a.Seq - 1}, true
	case a.Ms > 0:
		return StreamID{a.Ms - 1, math.MaxUint64}, true
	}
	return a, false
}

// StreamEntry is one entry: its ID and field/value pairs, alternating.
type StreamEntry struct {
	ID     StreamID
	Fields [][]byte
}

// entryOverhead is what one entry costs beyond its fields, the StreamEntry
// in a tree node with the node's slack; fieldOverhead is each field's slice
// header and allocator rounding. Measured: 137 bytes an entry of two
// 5-byte fields.
const (
	entryOverhead = 72
	fieldOverhead = 28
)

// size is e's footprint.
func (e *StreamEntry) size() int64 {
	n := int64(entryOverhead)
	for _, f := range e.Fields {
		n += int64(len(f) + fieldOverhead)
	}
	return n
}

// entryOrder is ID order, the rows' primary key.
func entryOrder(a, b StreamEntry) bool { return a.ID.Cmp(b.ID) < 0 }

// newEntryTree returns an empty tree of entries.
func newEntryTree() *btree.BTreeG[StreamEntry] {
	return btree.NewBTreeGOptions(entryOrder, treeOptions)
}

// StreamMeta is a stream's metadata, its streams row: Last is the last ID
// generated (0-0 for a stream that never had one), MaxDeleted the largest
// ID XDEL removed, EntriesAdded every entry ever added (XSETID may set
// it). The entry count is Len, the first and last entries' IDs End.
type StreamMeta struct {
	Last         StreamID
	MaxDeleted   StreamID
	EntriesAdded int64
}

// ErrStreamIDTooSmall is Add's error for an ID not above the stream's last
// one.
var ErrStreamIDTooSmall = errors.New("object: stream ID equal or smaller than the last one")

// Stream is a stream key: entries, metadata and consumer groups. Unlike
// the other collections a stream may exist empty (Redis keeps an empty
// stream, its last ID and its groups).
type Stream struct {
	entries *btree.BTreeG[StreamEntry]
	meta    StreamMeta
	groups  []*group // in name order
	size    int64    // entries' and groups' sizes

	// Changes since the last Freeze (stream_delta.go). When all, nothing
	// else is recorded: every row is written.
	all       bool
	metaDirty bool
	touched   []StreamID // entry IDs added or deleted one by one
	trimmed   bool       // every entry up to trimTo was removed from the front
	trimTo    StreamID
	dropped   [][]byte // names of the groups destroyed
	changed   []*group // the groups with changes recorded (queued set)
}

// NewStream returns an empty stream whose rows are all new (a new key).
func NewStream() *Stream { return &Stream{entries: newEntryTree(), all: true} }

// streamOverhead is a stream's own footprint with no entry or group
// (measured).
const streamOverhead = 312

// Len is the number of entries.
func (s *Stream) Len() int64 { return int64(s.entries.Len()) }

// Size is the footprint in bytes (package doc).
func (s *Stream) Size() int64 { return streamOverhead + s.size }

// Meta returns the stream's metadata.
func (s *Stream) Meta() StreamMeta { return s.meta }

// SetMeta stores m as the caller set it (XSETID, which checks it against
// the entries first).
func (s *Stream) SetMeta(m StreamMeta) {
	s.meta = m
	s.metaDirty = true
}

// touch records that the entry with id was added or deleted.
func (s *Stream) touch(id StreamID) {
	if !s.all {
		s.touched = append(s.touched, id)
	}
}

// Add appends an entry with id, which must be above the last ID, and makes
// it the last ID. It takes fields.
func (s *Stream) Add(id StreamID, fields [][]byte) error {
	if id.Cmp(s.meta.Last) <= 0 {
		return ErrStreamIDTooSmall
	}
	e := StreamEntry{ID: id, Fields: fields}
	// Every entry is at or below the last ID: this is an append, which
	// Load does without a descent.
	s.entries.Load(e)
	s.size += e.size()
	s.meta.Last = id
	s.meta.EntriesAdded++
	s.metaDirty = true
	s.touch(id)
	return nil
}

// Range calls fn with the entries from lo to hi (inclusive), in ID order
// or, with rev, reversed; at most limit of them (limit <= 0: all), until fn
// returns false. The entry passed is reused between calls; its Fields are
// the stream's. fn must not change s.
func (s *Stream) Range(lo, hi StreamID, rev bool, limit int64, fn func(e *StreamEntry) bool) {
	if lo.Cmp(hi) > 0 {
		return
	}
	var cur StreamEntry
	n := int64(0)
	visit := func(e StreamEntry) bool {
		if rev && e.ID.Cmp(lo) < 0 || !rev && e.ID.Cmp(hi) > 0 {
			return false
		}
		cur = e
		n++
		return fn(&cur) && (limit <= 0 || n < limit)
	}
	if rev {
		s.entries.Descend(StreamEntry{ID: hi}, visit)
	} else {
		s.entries.Ascend(StreamEntry{ID: lo}, visit)
	}
}

// EntryAt returns the entry with id; found is false when there is none.
// Its Fields are the stream's.
func (s *Stream) EntryAt(id StreamID) (e StreamEntry, found bool) {
	return s.entries.Get(StreamEntry{ID: id})
}

// Has reports whether an entry with id exists.
func (s *Stream) Has(id StreamID) bool {
	_, ok := s.entries.Get(StreamEntry{ID: id})
	return ok
}

// End is the first (or, with last, the last) entry's ID; ok is false for an
// empty stream.
func (s *Stream) End(last bool) (StreamID, bool) {
	var e StreamEntry
	var ok bool
	if last {
		e, ok = s.entries.Max()
	} else {
		e, ok = s.entries.Min()
	}
	return e.ID, ok
}

// Delete removes the entries with the given IDs (XDEL) and reports how
// many there were. The largest one removed becomes MaxDeleted if it is
// above it.
func (s *Stream) Delete(ids []StreamID) int64 {
	var n int64
	for _, id := range ids {
		e, ok := s.entries.Delete(StreamEntry{ID: id})
		if !ok {
			continue
		}
		n++
		s.size -= e.size()
		s.touch(id)
		if id.Cmp(s.meta.MaxDeleted) > 0 {
			s.meta.MaxDeleted = id
			s.metaDirty = true
		}
	}
	return n
}

// Trim strategies.
const (
	TrimNone = iota
	TrimMaxLen
	TrimMinID
)

// StreamTrim says how XADD and XTRIM trim.
type StreamTrim struct {
	Strategy int
	MaxLen   int64
	MinID    StreamID
	// Approx ("~") trims only whole nodes of NodeSize entries, as Redis
	// removes only whole listpack nodes; Limit (> 0) caps the entries
	// removed.
	Approx bool
	Limit  int64
	// NodeSize is the entries per node (stream-node-max-entries); 0 or
	// less: NodeEntries.
	NodeSize int64
}

// NodeEntries is Redis's stream-node-max-entries default, the node size
// approximate trimming works in when none is given.
//
// The nodes are modelled, not stored: a stream is taken to be cut into
// nodes of NodeSize entries from its first entry, which is where Redis's
// nodes fall for a stream made by appends and trimmed by whole nodes
// ("~"), with stream-node-max-entries unchanged since the entries were
// added and no node filled by stream-node-max-bytes first. After XDEL, an
// exact trim that cut a node, a change of the setting, a node cut by its
// bytes, or a RESTORE of Redis's own nodes, Redis's nodes are elsewhere
// and "~" may remove other entries than Redis would (always whole model
// nodes from the start, never more than asked).
const NodeEntries = 100

// nodeSize is t's node size.
func (t *StreamTrim) nodeSize() int64 {
	if t.NodeSize > 0 {
		return t.NodeSize
	}
	return NodeEntries
}

// Trim removes entries from the start of s as t says and reports how many
// went. Its cost is O(log² n) to find how many, then the entries removed.
func (s *Stream) Trim(t StreamTrim) int64 {
	length := s.Len()
	var n int64
	switch t.Strategy {
	case TrimMaxLen:
		n = max(length-t.MaxLen, 0)
	case TrimMinID:
		n = int64(partition(s.entries, func(e StreamEntry) bool { return e.ID.Cmp(t.MinID) < 0 }))
		if t.Limit > 0 {
			n = min(n, t.Limit)
		}
	default:
		return 0
	}
	if t.Approx {
		// Whole nodes only: nodeSize each from the first entry, the last
		// one partial, which goes only with everything before it; LIMIT
		// stops before the first node that would pass it.
		size := t.nodeSize()
		if n < length {
			n -= n % size
		}
		if t.Limit > 0 && n > t.Limit {
			n = t.Limit - t.Limit%size
		}
	} else if t.Limit > 0 {
		n = min(n, t.Limit)
	}
	if n <= 0 {
		return 0
	}
	s.trimFront(int(n))
	return n
}

// trimFront removes the first n (0 < n <= Len) entries, recorded as one
// range of rows to delete.
func (s *Stream) trimFront(n int) {
	first, _ := s.entries.Min()
	last, _ := s.entries.GetAt(n - 1)
	i := 0
	s.entries.Ascend(first, func(e StreamEntry) bool {
		s.size -= e.size()
		i++
		return i < n
	})
	s.entries.DeleteRange(first, last, &btree.DeleteRangeOptions{NoReturn: true, MaxInclusive: true})
	if !s.all && (!s.trimmed || last.ID.Cmp(s.trimTo) > 0) {
		s.trimmed, s.trimTo = true, last.ID
	}
}

// partition is the number of items of tr for which pred holds, pred being
// true for a prefix of tr's order and false after it: a binary search over
// the tree's positions, O(log² n).
func partition[T any](tr *btree.BTreeG[T], pred func(T) bool) int {
	lo, hi := 0, tr.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if it, _ := tr.GetAt(mid); pred(it) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// Clone returns a copy whose rows are all new (COPY's destination): it
// shares the stored values (they are never written to) and the trees'
// nodes until either side changes (copy on write).
func (s *Stream) Clone() *Stream {
	c := &Stream{entries: s.entries.Copy(), meta: s.meta, size: s.size, all: true}
	c.groups = make([]*group, len(s.groups))
	for i, g := range s.groups {
		c.groups[i] = g.clone()
	}
	return c
}
