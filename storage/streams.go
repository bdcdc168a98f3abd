package storage

import (
	"encoding/binary"
	"errors"

	"github.com/cellar-db/cellar/storage/object"
)

// Streams (migration 7): entries keyed by (key id, ms, seq) in
// stream_entries, so a range is an index range, an append goes at the end
// of the key's run and a trim deletes a range at its start; one row per
// stream in streams for its metadata; consumer groups, consumers and the
// pending entries lists (PEL) in tables of their own. The entry count is
// the keys row's value, as for the other collections. Unlike them, a
// stream may exist empty (Redis keeps an empty stream, its last ID and its
// groups).
//
// Every operation here writes what it changed at once (the entry rows, the
// stream's row, the count and version of its keys row) and records the
// change: a stream is not saved by EndCommand. Changes to groups,
// consumers and PELs are recorded as Modified (nothing new to read, but
// the key changed: the redo log records the command).

// The stream types are package object's (the in-memory engine's), so that
// both engines and the actor share them.
type (
	StreamID       = object.StreamID
	StreamEntry    = object.StreamEntry
	StreamGroup    = object.StreamGroup
	StreamConsumer = object.StreamConsumer
	StreamPending  = object.StreamPending
	StreamTrim     = object.StreamTrim
)

// MaxStreamID is the largest ID ("+").
var MaxStreamID = object.MaxStreamID

// col is an ID part as stored: shifted by -2^63 so that SQLite's signed
// order is the unsigned order.
func col(u uint64) int64 { return int64(u ^ 1<<63) }

func uncol(v int64) uint64 { return uint64(v) ^ 1<<63 }

// Stream is a stream key opened by one command, with its metadata. It is
// valid within the command that opened it.
type Stream struct {
	DB  int
	Key []byte
	ID  int64
	// Len is the number of entries; Last the last ID generated (0-0 for a
	// stream that never had one); MaxDeleted the largest ID XDEL removed;
	// EntriesAdded every entry ever added (XSETID may set it).
	Len          int64
	Last         StreamID
	MaxDeleted   StreamID
	EntriesAdded int64
	// versioned: this command already bumped the key's version and
	// recorded a change, so a further change to groups, consumers or
	// PELs (which leaves the count alone) needs neither again.
	versioned bool
	e         *entry // the in-memory engine's entry of the key
}

// ErrStreamIDTooSmall is XADD's error for an ID not above the stream's
// last one.
var ErrStreamIDTooSmall = object.ErrStreamIDTooSmall

// OpenStream finds the live stream key: nil when missing, ErrWrongType
// when the key holds another type. One statement reads the key's row and
// the stream's metadata.
func (s *Store) OpenStream(db int, key []byte) (*Stream, error) {
	return s.mem.openStream(db, key)
}

// CreateStream makes key an empty stream; the caller knows no live key of
// that name exists.
func (s *Store) CreateStream(db int, key []byte) (*Stream, error) {
	return s.mem.createStream(db, key)
}

// encodeFields packs field/value pairs: each a uvarint length and its
// bytes.
func encodeFields(dst []byte, fields [][]byte) []byte {
	for _, f := range fields {
		dst = binary.AppendUvarint(dst, uint64(len(f)))
		dst = append(dst, f...)
	}
	return dst
}

// decodeFields unpacks what encodeFields packed; the slices alias p.
func decodeFields(p []byte, out [][]byte) ([][]byte, error) {
	out = out[:0]
	for len(p) > 0 {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return nil, errors.New("storage: malformed stream entry")
		}
		out = append(out, p[k:k+int(n):k+int(n)])
		p = p[k+int(n):]
	}
	return out, nil
}

// StreamAdd appends an entry with id, which the caller made greater than
// st.Last, and makes it the last ID.
func (s *Store) StreamAdd(st *Stream, id StreamID, fields [][]byte) error {
	return s.mem.streamAdd(st, id, fields)
}

// StreamRange calls fn with the entries from lo to hi (inclusive), in ID
// order or, with rev, reversed; at most limit of them (limit <= 0: all).
// The entry and its slices are reused between calls; fn returning false
// stops early. fn must not change the stream.
func (s *Store) StreamRange(st *Stream, lo, hi StreamID, rev bool, limit int64, fn func(e *StreamEntry) bool) error {
	st.obj().Range(lo, hi, rev, limit, fn)
	return nil
}

// StreamEntryAt reads the entry with id; found is false when there is none.
// The entry's slices are fresh.
func (s *Store) StreamEntryAt(st *Stream, id StreamID) (e StreamEntry, found bool, err error) {
	e, found = s.mem.streamEntryAt(st, id)
	return e, found, nil
}

// StreamHas reports whether an entry with id exists.
func (s *Store) StreamHas(st *Stream, id StreamID) (bool, error) {
	return st.obj().Has(id), nil
}

// StreamEnd is the first (or, with last, the last) entry's ID; ok is false
// for an empty stream.
func (s *Store) StreamEnd(st *Stream, last bool) (StreamID, bool, error) {
	id, ok := st.obj().End(last)
	return id, ok, nil
}

// StreamDelete removes the entries with the given IDs (XDEL) and reports
// how many there were. The largest one removed becomes MaxDeleted if it is
// above it.
func (s *Store) StreamDelete(st *Stream, ids []StreamID) (int64, error) {
	return s.mem.streamDelete(st, ids), nil
}

// Trim strategies.
const (
	TrimNone   = object.TrimNone
	TrimMaxLen = object.TrimMaxLen
	TrimMinID  = object.TrimMinID
)

// NodeEntries is Redis's stream-node-max-entries default (object.NodeEntries
// says how approximate trimming models nodes).
const NodeEntries = object.NodeEntries

// StreamTrimmed removes entries from the start of st as t says, with one
// range delete, and reports how many went.
func (s *Store) StreamTrimmed(st *Stream, t StreamTrim) (int64, error) {
	return s.mem.streamTrimmed(st, t), nil
}

// StreamSetMeta stores st's Last, EntriesAdded and MaxDeleted as the
// caller set them (XSETID).
func (s *Store) StreamSetMeta(st *Stream) error {
	s.mem.streamSetMeta(st)
	return nil
}

// Group reads a consumer group; nil when st has none of that name.
func (s *Store) Group(st *Stream, name []byte) (*StreamGroup, error) {
	return st.obj().Group(name), nil
}

// Groups lists st's groups in name order.
func (s *Store) Groups(st *Stream) ([]StreamGroup, error) {
	return st.obj().Groups(), nil
}

// GroupCount is the number of st's groups.
func (s *Store) GroupCount(st *Stream) (int64, error) {
	return st.obj().GroupCount(), nil
}

// CreateGroup adds a group; created is false when one of that name exists.
func (s *Store) CreateGroup(st *Stream, g StreamGroup) (created bool, err error) {
	created = st.obj().CreateGroup(g)
	s.mem.streamChanged(st, created, Modified)
	return created, nil
}

// SaveGroup stores g's last ID and read counter.
func (s *Store) SaveGroup(st *Stream, g *StreamGroup) error {
	st.obj().SaveGroup(g)
	s.mem.streamChanged(st, true, Modified)
	return nil
}

// DestroyGroup removes a group with its consumers and PEL; destroyed is
// false when there was none. It is recorded as GroupDestroyed, which
// wakes the clients blocked reading through the group.
func (s *Store) DestroyGroup(st *Stream, name []byte) (destroyed bool, err error) {
	destroyed = st.obj().DestroyGroup(name)
	s.mem.streamChanged(st, destroyed, GroupDestroyed)
	return destroyed, nil
}

// Consumer reads a consumer's seen time; found is false when the group has
// no consumer of that name.
func (s *Store) Consumer(st *Stream, g *StreamGroup, name []byte) (seen int64, found bool, err error) {
	seen, found = st.obj().Consumer(g, name)
	return seen, found, nil
}

// CreateConsumer adds a consumer seen at now; created is false when it
// exists (its seen time is left alone).
func (s *Store) CreateConsumer(st *Stream, g *StreamGroup, name []byte, now int64) (created bool, err error) {
	created = st.obj().CreateConsumer(g, name, now)
	s.mem.streamChanged(st, created, ConsumerCreated)
	return created, nil
}

// SeeConsumer creates the consumer if needed and sets its seen time to now
// (what Redis does whenever a consumer acts).
func (s *Store) SeeConsumer(st *Stream, g *StreamGroup, name []byte, now int64) error {
	kind := Modified
	if st.obj().SeeConsumer(g, name, now) {
		kind = ConsumerCreated // a new consumer is its own change
	}
	s.mem.streamChanged(st, true, kind)
	return nil
}

// DeleteConsumer removes a consumer and its pending entries and reports
// how many were pending (0 when there was no such consumer).
func (s *Store) DeleteConsumer(st *Stream, g *StreamGroup, name []byte) (int64, error) {
	seen := false
	if _, ok := st.obj().Consumer(g, name); ok {
		seen = true
	}
	n := st.obj().DeleteConsumer(g, name)
	s.mem.streamChanged(st, seen, Modified)
	return n, nil
}

// Consumers lists a group's consumers in name order, with their pending
// counts.
func (s *Store) Consumers(st *Stream, g *StreamGroup) ([]StreamConsumer, error) {
	return st.obj().Consumers(g), nil
}

// ConsumerCount is the number of a group's consumers.
func (s *Store) ConsumerCount(st *Stream, g *StreamGroup) (int64, error) {
	return st.obj().ConsumerCount(g), nil
}

// Pending reads one PEL entry; found is false when id is not pending.
func (s *Store) Pending(st *Stream, g *StreamGroup, id StreamID) (p StreamPending, found bool, err error) {
	p, found = st.obj().Pending(g, id)
	return p, found, nil
}

// SetPending stores a PEL entry, replacing the one with the same ID.
func (s *Store) SetPending(st *Stream, g *StreamGroup, p StreamPending) error {
	st.obj().SetPending(g, p)
	s.mem.streamChanged(st, true, Modified)
	return nil
}

// Ack removes id from the group's PEL; acked is false when it was not
// pending.
func (s *Store) Ack(st *Stream, g *StreamGroup, id StreamID) (acked bool, err error) {
	acked = st.obj().Ack(g, id)
	s.mem.streamChanged(st, acked, Modified)
	return acked, nil
}

// PendingCount is the size of a group's PEL.
func (s *Store) PendingCount(st *Stream, g *StreamGroup) (int64, error) {
	return st.obj().PendingCount(g), nil
}

// PendingEnds is the smallest and largest pending ID; ok is false when
// nothing is pending.
func (s *Store) PendingEnds(st *Stream, g *StreamGroup) (lo, hi StreamID, ok bool, err error) {
	lo, hi, ok = st.obj().PendingEnds(g)
	return lo, hi, ok, nil
}

// PendingPerConsumer calls fn with each consumer that has pending entries,
// in name order, and their number.
func (s *Store) PendingPerConsumer(st *Stream, g *StreamGroup, fn func(name []byte, n int64)) error {
	st.obj().PendingPerConsumer(g, fn)
	return nil
}

// PendingRange lists PEL entries from lo to hi (inclusive) in ID order,
// delivered at or before deliveredBy, of consumer only when it is not nil;
// at most limit (<= 0: all).
func (s *Store) PendingRange(st *Stream, g *StreamGroup, consumer []byte, lo, hi StreamID, deliveredBy, limit int64) ([]StreamPending, error) {
	return st.obj().PendingRange(g, consumer, lo, hi, deliveredBy, limit), nil
}
