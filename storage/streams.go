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

var (
	qStreamOpen   = newQuery("SELECT k.type, k.id, coalesce(k.expire_at, 0), coalesce(k.value, 0), s.last_ms, s.last_seq, s.del_ms, s.del_seq, s.entries_added FROM keys k LEFT JOIN streams s ON s.id = k.id AND k.type = 6 WHERE k.db = ?1 AND k.key = ?2")
	qStreamNew    = newQuery("INSERT INTO streams (id, last_ms, last_seq, del_ms, del_seq, entries_added) VALUES (?1, ?2, ?2, ?2, ?2, 0)")
	qStreamSave   = newQuery("UPDATE streams SET last_ms = ?2, last_seq = ?3, del_ms = ?4, del_seq = ?5, entries_added = ?6 WHERE id = ?1")
	qStreamInsert = newQuery("INSERT INTO stream_entries (id, ms, seq, fields) VALUES (?1, ?2, ?3, ?4)")
	qStreamDelOne = newQuery("DELETE FROM stream_entries WHERE id = ?1 AND ms = ?2 AND seq = ?3")
	qStreamHas    = newQuery("SELECT 1 FROM stream_entries WHERE id = ?1 AND ms = ?2 AND seq = ?3")
	// Ranges, both bounds inclusive: ?2,?3 the lowest ID, ?4,?5 the
	// highest, ?6 the limit (-1: none).
	qStreamRange = [2]*query{
		newQuery("SELECT ms, seq, fields FROM stream_entries WHERE id = ?1 AND (ms, seq) >= (?2, ?3) AND (ms, seq) <= (?4, ?5) ORDER BY ms, seq LIMIT ?6"),
		newQuery("SELECT ms, seq, fields FROM stream_entries WHERE id = ?1 AND (ms, seq) >= (?2, ?3) AND (ms, seq) <= (?4, ?5) ORDER BY ms DESC, seq DESC LIMIT ?6"),
	}
	qStreamIDs = newQuery("SELECT ms, seq FROM stream_entries WHERE id = ?1 AND (ms, seq) >= (?2, ?3) ORDER BY ms, seq LIMIT ?4")
	// The ID of the entry at an offset from the start.
	qStreamNth     = newQuery("SELECT ms, seq FROM stream_entries WHERE id = ?1 ORDER BY ms, seq LIMIT 1 OFFSET ?2")
	qStreamCountLT = newQuery("SELECT count(*) FROM (SELECT 1 FROM stream_entries WHERE id = ?1 AND (ms, seq) < (?2, ?3) LIMIT ?4)")
	qStreamDelLT   = newQuery("DELETE FROM stream_entries WHERE id = ?1 AND (ms, seq) < (?2, ?3)")
	qStreamFirst   = newQuery("SELECT ms, seq FROM stream_entries WHERE id = ?1 ORDER BY ms, seq LIMIT 1")
	qStreamLast    = newQuery("SELECT ms, seq FROM stream_entries WHERE id = ?1 ORDER BY ms DESC, seq DESC LIMIT 1")

	qGroupGet    = newQuery("SELECT last_ms, last_seq, entries_read FROM stream_groups WHERE id = ?1 AND name = ?2")
	qGroupAll    = newQuery("SELECT name, last_ms, last_seq, entries_read FROM stream_groups WHERE id = ?1 ORDER BY name")
	qGroupCount  = newQuery("SELECT count(*) FROM stream_groups WHERE id = ?1")
	qGroupNew    = newQuery("INSERT INTO stream_groups (id, name, last_ms, last_seq, entries_read) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING")
	qGroupSave   = newQuery("UPDATE stream_groups SET last_ms = ?3, last_seq = ?4, entries_read = ?5 WHERE id = ?1 AND name = ?2")
	qGroupDel    = newQuery("DELETE FROM stream_groups WHERE id = ?1 AND name = ?2")
	qGroupDelCon = newQuery("DELETE FROM stream_consumers WHERE id = ?1 AND grp = ?2")
	qGroupDelPEL = newQuery("DELETE FROM stream_pel WHERE id = ?1 AND grp = ?2")

	qConsumerGet   = newQuery("SELECT seen FROM stream_consumers WHERE id = ?1 AND grp = ?2 AND name = ?3")
	qConsumerNew   = newQuery("INSERT INTO stream_consumers (id, grp, name, seen) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING")
	qConsumerSeen  = newQuery("INSERT INTO stream_consumers (id, grp, name, seen) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (id, grp, name) DO UPDATE SET seen = excluded.seen")
	qConsumerDel   = newQuery("DELETE FROM stream_consumers WHERE id = ?1 AND grp = ?2 AND name = ?3")
	qConsumerAll   = newQuery("SELECT name, seen, (SELECT count(*) FROM stream_pel p WHERE p.id = c.id AND p.grp = c.grp AND p.consumer = c.name) FROM stream_consumers c WHERE id = ?1 AND grp = ?2 ORDER BY name")
	qConsumerCount = newQuery("SELECT count(*) FROM stream_consumers WHERE id = ?1 AND grp = ?2")

	qPELGet      = newQuery("SELECT consumer, delivered, count FROM stream_pel WHERE id = ?1 AND grp = ?2 AND ms = ?3 AND seq = ?4")
	qPELPut      = newQuery("INSERT INTO stream_pel (id, grp, ms, seq, consumer, delivered, count) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (id, grp, ms, seq) DO UPDATE SET consumer = excluded.consumer, delivered = excluded.delivered, count = excluded.count")
	qPELDel      = newQuery("DELETE FROM stream_pel WHERE id = ?1 AND grp = ?2 AND ms = ?3 AND seq = ?4")
	qPELCount    = newQuery("SELECT count(*) FROM stream_pel WHERE id = ?1 AND grp = ?2")
	qPELDelOwned = newQuery("DELETE FROM stream_pel WHERE id = ?1 AND grp = ?2 AND consumer = ?3")
	qPELEnds     = [2]*query{
		newQuery("SELECT ms, seq FROM stream_pel WHERE id = ?1 AND grp = ?2 ORDER BY ms, seq LIMIT 1"),
		newQuery("SELECT ms, seq FROM stream_pel WHERE id = ?1 AND grp = ?2 ORDER BY ms DESC, seq DESC LIMIT 1"),
	}
	qPELPerConsumer = newQuery("SELECT consumer, count(*) FROM stream_pel WHERE id = ?1 AND grp = ?2 GROUP BY consumer ORDER BY consumer")
	// Ranges of a PEL: ?3,?4 lowest, ?5,?6 highest, ?7 delivered at or
	// before, ?8 limit; the second form for one consumer (?9).
	qPELRange = [2]*query{
		newQuery("SELECT ms, seq, consumer, delivered, count FROM stream_pel WHERE id = ?1 AND grp = ?2 AND (ms, seq) >= (?3, ?4) AND (ms, seq) <= (?5, ?6) AND delivered <= ?7 ORDER BY ms, seq LIMIT ?8"),
		newQuery("SELECT ms, seq, consumer, delivered, count FROM stream_pel WHERE id = ?1 AND grp = ?2 AND consumer = ?9 AND (ms, seq) >= (?3, ?4) AND (ms, seq) <= (?5, ?6) AND delivered <= ?7 ORDER BY ms, seq LIMIT ?8"),
	}

	qDropStream = []*query{
		newQuery("DELETE FROM streams WHERE id = ?1"),
		newQuery("DELETE FROM stream_entries WHERE id = ?1"),
		newQuery("DELETE FROM stream_groups WHERE id = ?1"),
		newQuery("DELETE FROM stream_consumers WHERE id = ?1"),
		newQuery("DELETE FROM stream_pel WHERE id = ?1"),
	}
	qCopyStream = []*query{
		newQuery("INSERT INTO streams (id, last_ms, last_seq, del_ms, del_seq, entries_added) SELECT ?2, last_ms, last_seq, del_ms, del_seq, entries_added FROM streams WHERE id = ?1"),
		newQuery("INSERT INTO stream_entries (id, ms, seq, fields) SELECT ?2, ms, seq, fields FROM stream_entries WHERE id = ?1"),
		newQuery("INSERT INTO stream_groups (id, name, last_ms, last_seq, entries_read) SELECT ?2, name, last_ms, last_seq, entries_read FROM stream_groups WHERE id = ?1"),
		newQuery("INSERT INTO stream_consumers (id, grp, name, seen) SELECT ?2, grp, name, seen FROM stream_consumers WHERE id = ?1"),
		newQuery("INSERT INTO stream_pel (id, grp, ms, seq, consumer, delivered, count) SELECT ?2, grp, ms, seq, consumer, delivered, count FROM stream_pel WHERE id = ?1"),
	}
	qDropAllStreams = []*query{
		newQuery("DELETE FROM streams WHERE id IN (SELECT id FROM keys WHERE db = ?1 AND type = 6)"),
		newQuery("DELETE FROM stream_entries WHERE id IN (SELECT id FROM keys WHERE db = ?1 AND type = 6)"),
		newQuery("DELETE FROM stream_groups WHERE id IN (SELECT id FROM keys WHERE db = ?1 AND type = 6)"),
		newQuery("DELETE FROM stream_consumers WHERE id IN (SELECT id FROM keys WHERE db = ?1 AND type = 6)"),
		newQuery("DELETE FROM stream_pel WHERE id IN (SELECT id FROM keys WHERE db = ?1 AND type = 6)"),
	}
)

// OpenStream finds the live stream key: nil when missing, ErrWrongType
// when the key holds another type. One statement reads the key's row and
// the stream's metadata.
func (s *Store) OpenStream(db int, key []byte) (*Stream, error) {
	if s.mem != nil {
		return s.mem.openStream(db, key)
	}
	q := s.qKey(qStreamOpen, db, key)
	row, err := q.step()
	if err != nil || !row {
		q.reset()
		return nil, err
	}
	t, id, exp := Type(q.colInt(0)), q.colInt(1), q.colInt(2)
	st := &Stream{DB: db, Key: key, ID: id, Len: q.colInt(3)}
	hasMeta := !q.colNull(4)
	if hasMeta {
		st.Last = StreamID{Ms: uncol(q.colInt(4)), Seq: uncol(q.colInt(5))}
		st.MaxDeleted = StreamID{Ms: uncol(q.colInt(6)), Seq: uncol(q.colInt(7))}
		st.EntriesAdded = q.colInt(8)
	}
	q.reset()
	if expired(exp, s.Now) {
		_, err := s.Delete(db, key)
		return nil, err
	}
	if t != TypeStream {
		return nil, ErrWrongType
	}
	if !hasMeta {
		return nil, errors.New("storage: stream without its metadata row")
	}
	return st, nil
}

// CreateStream makes key an empty stream; the caller knows no live key of
// that name exists.
func (s *Store) CreateStream(db int, key []byte) (*Stream, error) {
	if s.mem != nil {
		return s.mem.createStream(db, key)
	}
	c, err := s.createColl(db, key, TypeStream)
	if err != nil {
		return nil, err
	}
	// createColl noted c for EndCommand, which would delete it as empty:
	// a stream may be empty, so it is not left open.
	s.forget(c)
	q := s.q(qStreamNew)
	q.int(1, c.ID)
	q.int(2, col(0))
	if err := q.exec(); err != nil {
		return nil, err
	}
	s.recordNew(db, key)
	s.record(db, key, Written, 0)
	return &Stream{DB: db, Key: key, ID: c.ID}, nil
}

// forget takes c out of the collections EndCommand saves.
func (s *Store) forget(c *Coll) {
	for i, o := range s.open {
		if o == c {
			c.open = false
			s.open = append(s.open[:i], s.open[i+1:]...)
			return
		}
	}
}

// saveStream stores st's metadata and count, bumps the key's version and
// records kind.
func (s *Store) saveStream(st *Stream, kind Change) error {
	q := s.q(qStreamSave)
	q.int(1, st.ID)
	q.int(2, col(st.Last.Ms))
	q.int(3, col(st.Last.Seq))
	q.int(4, col(st.MaxDeleted.Ms))
	q.int(5, col(st.MaxDeleted.Seq))
	q.int(6, st.EntriesAdded)
	if err := q.exec(); err != nil {
		return err
	}
	return s.touchStream(st, kind)
}

// touchStream stores the count, bumps the version and records kind; once
// per command for changes that leave the count alone (Modified).
func (s *Store) touchStream(st *Stream, kind Change) error {
	if kind == Modified && st.versioned {
		s.dirty = true
		return nil
	}
	st.versioned = true
	q := s.q(qCollSave)
	q.int(1, int64(st.DB))
	q.blob(2, st.Key)
	q.int(3, st.Len)
	q.int(4, s.nextVersion())
	if err := q.exec(); err != nil {
		return err
	}
	s.dirty = true
	s.record(st.DB, st.Key, kind, 0)
	return nil
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
	if s.mem != nil {
		return s.mem.streamAdd(st, id, fields)
	}
	if id.Cmp(st.Last) <= 0 {
		return ErrStreamIDTooSmall
	}
	s.scratch = encodeFields(s.scratch[:0], fields)
	q := s.q(qStreamInsert)
	q.int(1, st.ID)
	q.int(2, col(id.Ms))
	q.int(3, col(id.Seq))
	q.blob(4, s.scratch)
	if err := q.exec(); err != nil {
		return err
	}
	st.Len++
	st.EntriesAdded++
	st.Last = id
	return s.saveStream(st, Added)
}

// StreamRange calls fn with the entries from lo to hi (inclusive), in ID
// order or, with rev, reversed; at most limit of them (limit <= 0: all).
// The entry and its slices are reused between calls; fn returning false
// stops early. fn must not change the stream.
func (s *Store) StreamRange(st *Stream, lo, hi StreamID, rev bool, limit int64, fn func(e *StreamEntry) bool) error {
	if s.mem != nil {
		st.obj().Range(lo, hi, rev, limit, fn)
		return nil
	}
	if lo.Cmp(hi) > 0 {
		return nil
	}
	if limit <= 0 {
		limit = -1
	}
	q := s.q(qStreamRange[dir(rev)])
	q.int(1, st.ID)
	q.int(2, col(lo.Ms))
	q.int(3, col(lo.Seq))
	q.int(4, col(hi.Ms))
	q.int(5, col(hi.Seq))
	q.int(6, limit)
	defer q.reset()
	var e StreamEntry
	var raw []byte
	for {
		row, err := q.step()
		if err != nil || !row {
			return err
		}
		e.ID = StreamID{Ms: uncol(q.colInt(0)), Seq: uncol(q.colInt(1))}
		raw = q.colBlob(2, raw[:0])
		if e.Fields, err = decodeFields(raw, e.Fields); err != nil {
			return err
		}
		if !fn(&e) {
			return nil
		}
	}
}

// StreamEntryAt reads the entry with id; found is false when there is none.
// The entry's slices are fresh.
func (s *Store) StreamEntryAt(st *Stream, id StreamID) (e StreamEntry, found bool, err error) {
	if s.mem != nil {
		e, found = s.mem.streamEntryAt(st, id)
		return e, found, nil
	}
	err = s.StreamRange(st, id, id, false, 1, func(x *StreamEntry) bool {
		e.ID = x.ID
		for _, f := range x.Fields {
			e.Fields = append(e.Fields, append([]byte{}, f...))
		}
		found = true
		return false
	})
	return e, found, err
}

// StreamHas reports whether an entry with id exists.
func (s *Store) StreamHas(st *Stream, id StreamID) (bool, error) {
	if s.mem != nil {
		return st.obj().Has(id), nil
	}
	q := s.q(qStreamHas)
	q.int(1, st.ID)
	q.int(2, col(id.Ms))
	q.int(3, col(id.Seq))
	row, err := q.step()
	q.reset()
	return row, err
}

// StreamEnd is the first (or, with last, the last) entry's ID; ok is false
// for an empty stream.
func (s *Store) StreamEnd(st *Stream, last bool) (StreamID, bool, error) {
	if s.mem != nil {
		id, ok := st.obj().End(last)
		return id, ok, nil
	}
	qq := qStreamFirst
	if last {
		qq = qStreamLast
	}
	q := s.q(qq)
	q.int(1, st.ID)
	row, err := q.step()
	var id StreamID
	if row {
		id = StreamID{Ms: uncol(q.colInt(0)), Seq: uncol(q.colInt(1))}
	}
	q.reset()
	return id, row, err
}

// StreamDelete removes the entries with the given IDs (XDEL) and reports
// how many there were. The largest one removed becomes MaxDeleted if it is
// above it.
func (s *Store) StreamDelete(st *Stream, ids []StreamID) (int64, error) {
	if s.mem != nil {
		return s.mem.streamDelete(st, ids), nil
	}
	var n int64
	for _, id := range ids {
		q := s.q(qStreamDelOne)
		q.int(1, st.ID)
		q.int(2, col(id.Ms))
		q.int(3, col(id.Seq))
		if err := q.exec(); err != nil {
			return n, err
		}
		if s.c.changes() == 0 {
			continue
		}
		n++
		st.Len--
		if id.Cmp(st.MaxDeleted) > 0 {
			st.MaxDeleted = id
		}
	}
	if n == 0 {
		return 0, nil
	}
	return n, s.saveStream(st, Removed)
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

// nodeSize is t's node size.
func nodeSize(t *StreamTrim) int64 {
	if t.NodeSize > 0 {
		return t.NodeSize
	}
	return NodeEntries
}

// StreamTrimmed removes entries from the start of st as t says, with one
// range delete, and reports how many went.
func (s *Store) StreamTrimmed(st *Stream, t StreamTrim) (int64, error) {
	if s.mem != nil {
		return s.mem.streamTrimmed(st, t), nil
	}
	var n int64
	switch t.Strategy {
	case TrimMaxLen:
		n = max(st.Len-t.MaxLen, 0)
	case TrimMinID:
		// How many entries sit below MinID, counted no further than the
		// stream can lose.
		q := s.q(qStreamCountLT)
		q.int(1, st.ID)
		q.int(2, col(t.MinID.Ms))
		q.int(3, col(t.MinID.Seq))
		lim := st.Len
		if t.Limit > 0 {
			lim = min(lim, t.Limit)
		}
		q.int(4, lim)
		_, err := q.step()
		n = q.colInt(0)
		q.reset()
		if err != nil {
			return 0, err
		}
	default:
		return 0, nil
	}
	if t.Approx {
		// Whole nodes only: nodeSize each from the first entry, the last
		// one partial, which goes only with everything before it; LIMIT
		// stops before the first node that would pass it.
		size := nodeSize(&t)
		if n < st.Len {
			n -= n % size
		}
		if t.Limit > 0 && n > t.Limit {
			n = t.Limit - t.Limit%size
		}
	} else if t.Limit > 0 {
		n = min(n, t.Limit)
	}
	if n <= 0 {
		return 0, nil
	}
	// Everything below the n-th entry goes.
	bound := StreamID{}
	if n < st.Len {
		q := s.q(qStreamNth)
		q.int(1, st.ID)
		q.int(2, n)
		row, err := q.step()
		if row {
			bound = StreamID{Ms: uncol(q.colInt(0)), Seq: uncol(q.colInt(1))}
		}
		q.reset()
		if err != nil {
			return 0, err
		}
	} else {
		bound = MaxStreamID
	}
	q := s.q(qStreamDelLT)
	q.int(1, st.ID)
	q.int(2, col(bound.Ms))
	q.int(3, col(bound.Seq))
	if err := q.exec(); err != nil {
		return 0, err
	}
	removed := s.c.changes()
	if bound == MaxStreamID {
		// The range is exclusive: the entry at MaxStreamID, if any, too.
		q := s.q(qStreamDelOne)
		q.int(1, st.ID)
		q.int(2, col(bound.Ms))
		q.int(3, col(bound.Seq))
		if err := q.exec(); err != nil {
			return 0, err
		}
		removed += s.c.changes()
	}
	st.Len -= removed
	return removed, s.touchStream(st, Removed)
}

// StreamSetMeta stores st's Last, EntriesAdded and MaxDeleted as the
// caller set them (XSETID).
func (s *Store) StreamSetMeta(st *Stream) error {
	if s.mem != nil {
		s.mem.streamSetMeta(st)
		return nil
	}
	return s.saveStream(st, Modified)
}

// Group reads a consumer group; nil when st has none of that name.
func (s *Store) Group(st *Stream, name []byte) (*StreamGroup, error) {
	if s.mem != nil {
		return st.obj().Group(name), nil
	}
	q := s.q(qGroupGet)
	q.int(1, st.ID)
	q.blob(2, name)
	row, err := q.step()
	var g *StreamGroup
	if row {
		g = &StreamGroup{Name: name, Last: StreamID{Ms: uncol(q.colInt(0)), Seq: uncol(q.colInt(1))}, EntriesRead: q.colInt(2)}
	}
	q.reset()
	return g, err
}

// Groups lists st's groups in name order.
func (s *Store) Groups(st *Stream) ([]StreamGroup, error) {
	if s.mem != nil {
		return st.obj().Groups(), nil
	}
	q := s.q(qGroupAll)
	q.int(1, st.ID)
	defer q.reset()
	var out []StreamGroup
	for {
		row, err := q.step()
		if err != nil || !row {
			return out, err
		}
		out = append(out, StreamGroup{Name: q.colBlob(0, nil), Last: StreamID{Ms: uncol(q.colInt(1)), Seq: uncol(q.colInt(2))}, EntriesRead: q.colInt(3)})
	}
}

// countOf runs a one-row count query bound to (id[, blob]).
func (s *Store) countOf(qq *query, id int64, b []byte) (int64, error) {
	q := s.q(qq)
	q.int(1, id)
	if b != nil {
		q.blob(2, b)
	}
	_, err := q.step()
	n := q.colInt(0)
	q.reset()
	return n, err
}

// GroupCount is the number of st's groups.
func (s *Store) GroupCount(st *Stream) (int64, error) {
	if s.mem != nil {
		return st.obj().GroupCount(), nil
	}
	return s.countOf(qGroupCount, st.ID, nil)
}

// CreateGroup adds a group; created is false when one of that name exists.
func (s *Store) CreateGroup(st *Stream, g StreamGroup) (created bool, err error) {
	if s.mem != nil {
		created = st.obj().CreateGroup(g)
		s.mem.streamChanged(st, created, Modified)
		return created, nil
	}
	q := s.q(qGroupNew)
	q.int(1, st.ID)
	q.blob(2, g.Name)
	q.int(3, col(g.Last.Ms))
	q.int(4, col(g.Last.Seq))
	q.int(5, g.EntriesRead)
	if err := q.exec(); err != nil {
		return false, err
	}
	if s.c.changes() == 0 {
		return false, nil
	}
	return true, s.touchStream(st, Modified)
}

// SaveGroup stores g's last ID and read counter.
func (s *Store) SaveGroup(st *Stream, g *StreamGroup) error {
	if s.mem != nil {
		st.obj().SaveGroup(g)
		s.mem.streamChanged(st, true, Modified)
		return nil
	}
	q := s.q(qGroupSave)
	q.int(1, st.ID)
	q.blob(2, g.Name)
	q.int(3, col(g.Last.Ms))
	q.int(4, col(g.Last.Seq))
	q.int(5, g.EntriesRead)
	if err := q.exec(); err != nil {
		return err
	}
	return s.touchStream(st, Modified)
}

// DestroyGroup removes a group with its consumers and PEL; destroyed is
// false when there was none. It is recorded as GroupDestroyed, which
// wakes the clients blocked reading through the group.
func (s *Store) DestroyGroup(st *Stream, name []byte) (destroyed bool, err error) {
	if s.mem != nil {
		destroyed = st.obj().DestroyGroup(name)
		s.mem.streamChanged(st, destroyed, GroupDestroyed)
		return destroyed, nil
	}
	q := s.q(qGroupDel)
	q.int(1, st.ID)
	q.blob(2, name)
	if err := q.exec(); err != nil {
		return false, err
	}
	if s.c.changes() == 0 {
		return false, nil
	}
	for _, qq := range []*query{qGroupDelCon, qGroupDelPEL} {
		q := s.q(qq)
		q.int(1, st.ID)
		q.blob(2, name)
		if err := q.exec(); err != nil {
			return false, err
		}
	}
	return true, s.touchStream(st, GroupDestroyed)
}

// Consumer reads a consumer's seen time; found is false when the group has
// no consumer of that name.
func (s *Store) Consumer(st *Stream, g *StreamGroup, name []byte) (seen int64, found bool, err error) {
	if s.mem != nil {
		seen, found = st.obj().Consumer(g, name)
		return seen, found, nil
	}
	q := s.q(qConsumerGet)
	q.int(1, st.ID)
	q.blob(2, g.Name)
	q.blob(3, name)
	row, err := q.step()
	if row {
		seen = q.colInt(0)
	}
	q.reset()
	return seen, row, err
}

// CreateConsumer adds a consumer seen at now; created is false when it
// exists (its seen time is left alone).
func (s *Store) CreateConsumer(st *Stream, g *StreamGroup, name []byte, now int64) (created bool, err error) {
	if s.mem != nil {
		created = st.obj().CreateConsumer(g, name, now)
		s.mem.streamChanged(st, created, ConsumerCreated)
		return created, nil
	}
	q := s.q(qConsumerNew)
	q.int(1, st.ID)
	q.blob(2, g.Name)
	q.blob(3, name)
	q.int(4, now)
	if err := q.exec(); err != nil {
		return false, err
	}
	if s.c.changes() == 0 {
		return false, nil
	}
	return true, s.touchStream(st, ConsumerCreated)
}

// SeeConsumer creates the consumer if needed and sets its seen time to now
// (what Redis does whenever a consumer acts).
func (s *Store) SeeConsumer(st *Stream, g *StreamGroup, name []byte, now int64) error {
	if s.mem != nil {
		kind := Modified
		if st.obj().SeeConsumer(g, name, now) {
			kind = ConsumerCreated // a new consumer is its own change
		}
		s.mem.streamChanged(st, true, kind)
		return nil
	}
	// A new consumer is its own change (keyspace notifications name it).
	if created, err := s.CreateConsumer(st, g, name, now); err != nil || created {
		return err
	}
	q := s.q(qConsumerSeen)
	q.int(1, st.ID)
	q.blob(2, g.Name)
	q.blob(3, name)
	q.int(4, now)
	if err := q.exec(); err != nil {
		return err
	}
	return s.touchStream(st, Modified)
}

// DeleteConsumer removes a consumer and its pending entries and reports
// how many were pending (0 when there was no such consumer).
func (s *Store) DeleteConsumer(st *Stream, g *StreamGroup, name []byte) (int64, error) {
	if s.mem != nil {
		seen := false
		if _, ok := st.obj().Consumer(g, name); ok {
			seen = true
		}
		n := st.obj().DeleteConsumer(g, name)
		s.mem.streamChanged(st, seen, Modified)
		return n, nil
	}
	q := s.q(qConsumerDel)
	q.int(1, st.ID)
	q.blob(2, g.Name)
	q.blob(3, name)
	if err := q.exec(); err != nil {
		return 0, err
	}
	if s.c.changes() == 0 {
		return 0, nil
	}
	d := s.q(qPELDelOwned)
	d.int(1, st.ID)
	d.blob(2, g.Name)
	d.blob(3, name)
	if err := d.exec(); err != nil {
		return 0, err
	}
	n := s.c.changes()
	return n, s.touchStream(st, Modified)
}

// Consumers lists a group's consumers in name order, with their pending
// counts.
func (s *Store) Consumers(st *Stream, g *StreamGroup) ([]StreamConsumer, error) {
	if s.mem != nil {
		return st.obj().Consumers(g), nil
	}
	q := s.q(qConsumerAll)
	q.int(1, st.ID)
	q.blob(2, g.Name)
	defer q.reset()
	var out []StreamConsumer
	for {
		row, err := q.step()
		if err != nil || !row {
			return out, err
		}
		out = append(out, StreamConsumer{Name: q.colBlob(0, nil), Seen: q.colInt(1), Pending: q.colInt(2)})
	}
}

// ConsumerCount is the number of a group's consumers.
func (s *Store) ConsumerCount(st *Stream, g *StreamGroup) (int64, error) {
	if s.mem != nil {
		return st.obj().ConsumerCount(g), nil
	}
	return s.countOf(qConsumerCount, st.ID, g.Name)
}

// Pending reads one PEL entry; found is false when id is not pending.
func (s *Store) Pending(st *Stream, g *StreamGroup, id StreamID) (p StreamPending, found bool, err error) {
	if s.mem != nil {
		p, found = st.obj().Pending(g, id)
		return p, found, nil
	}
	q := s.q(qPELGet)
	q.int(1, st.ID)
	q.blob(2, g.Name)
	q.int(3, col(id.Ms))
	q.int(4, col(id.Seq))
	row, err := q.step()
	if row {
		p = StreamPending{ID: id, Consumer: q.colBlob(0, nil), Delivered: q.colInt(1), Count: q.colInt(2)}
	}
	q.reset()
	return p, row, err
}

// SetPending stores a PEL entry, replacing the one with the same ID.
func (s *Store) SetPending(st *Stream, g *StreamGroup, p StreamPending) error {
	if s.mem != nil {
		st.obj().SetPending(g, p)
		s.mem.streamChanged(st, true, Modified)
		return nil
	}
	q := s.q(qPELPut)
	q.int(1, st.ID)
	q.blob(2, g.Name)
	q.int(3, col(p.ID.Ms))
	q.int(4, col(p.ID.Seq))
	q.blob(5, p.Consumer)
	q.int(6, p.Delivered)
	q.int(7, p.Count)
	if err := q.exec(); err != nil {
		return err
	}
	return s.touchStream(st, Modified)
}

// Ack removes id from the group's PEL; acked is false when it was not
// pending.
func (s *Store) Ack(st *Stream, g *StreamGroup, id StreamID) (acked bool, err error) {
	if s.mem != nil {
		acked = st.obj().Ack(g, id)
		s.mem.streamChanged(st, acked, Modified)
		return acked, nil
	}
	q := s.q(qPELDel)
	q.int(1, st.ID)
	q.blob(2, g.Name)
	q.int(3, col(id.Ms))
	q.int(4, col(id.Seq))
	if err := q.exec(); err != nil {
		return false, err
	}
	if s.c.changes() == 0 {
		return false, nil
	}
	return true, s.touchStream(st, Modified)
}

// PendingCount is the size of a group's PEL.
func (s *Store) PendingCount(st *Stream, g *StreamGroup) (int64, error) {
	if s.mem != nil {
		return st.obj().PendingCount(g), nil
	}
	return s.countOf(qPELCount, st.ID, g.Name)
}

// PendingEnds is the smallest and largest pending ID; ok is false when
// nothing is pending.
func (s *Store) PendingEnds(st *Stream, g *StreamGroup) (lo, hi StreamID, ok bool, err error) {
	if s.mem != nil {
		lo, hi, ok = st.obj().PendingEnds(g)
		return lo, hi, ok, nil
	}
	for i, qq := range qPELEnds {
		q := s.q(qq)
		q.int(1, st.ID)
		q.blob(2, g.Name)
		row, err := q.step()
		if row {
			id := StreamID{Ms: uncol(q.colInt(0)), Seq: uncol(q.colInt(1))}
			if i == 0 {
				lo = id
			} else {
				hi = id
			}
		}
		q.reset()
		if err != nil || !row {
			return lo, hi, false, err
		}
	}
	return lo, hi, true, nil
}

// PendingPerConsumer calls fn with each consumer that has pending entries,
// in name order, and their number.
func (s *Store) PendingPerConsumer(st *Stream, g *StreamGroup, fn func(name []byte, n int64)) error {
	if s.mem != nil {
		st.obj().PendingPerConsumer(g, fn)
		return nil
	}
	q := s.q(qPELPerConsumer)
	q.int(1, st.ID)
	q.blob(2, g.Name)
	defer q.reset()
	var name []byte
	for {
		row, err := q.step()
		if err != nil || !row {
			return err
		}
		name = q.colBlob(0, name[:0])
		fn(name, q.colInt(1))
	}
}

// PendingRange lists PEL entries from lo to hi (inclusive) in ID order,
// delivered at or before deliveredBy, of consumer only when it is not nil;
// at most limit (<= 0: all).
func (s *Store) PendingRange(st *Stream, g *StreamGroup, consumer []byte, lo, hi StreamID, deliveredBy, limit int64) ([]StreamPending, error) {
	if s.mem != nil {
		return st.obj().PendingRange(g, consumer, lo, hi, deliveredBy, limit), nil
	}
	if lo.Cmp(hi) > 0 {
		return nil, nil
	}
	if limit <= 0 {
		limit = -1
	}
	i := 0
	if consumer != nil {
		i = 1
	}
	q := s.q(qPELRange[i])
	q.int(1, st.ID)
	q.blob(2, g.Name)
	q.int(3, col(lo.Ms))
	q.int(4, col(lo.Seq))
	q.int(5, col(hi.Ms))
	q.int(6, col(hi.Seq))
	q.int(7, deliveredBy)
	q.int(8, limit)
	if consumer != nil {
		q.blob(9, consumer)
	}
	defer q.reset()
	var out []StreamPending
	for {
		row, err := q.step()
		if err != nil || !row {
			return out, err
		}
		out = append(out, StreamPending{
			ID:       StreamID{Ms: uncol(q.colInt(0)), Seq: uncol(q.colInt(1))},
			Consumer: q.colBlob(2, nil), Delivered: q.colInt(3), Count: q.colInt(4),
		})
	}
}

// dropStream removes a stream's entries, groups, consumers and PEL.
func (s *Store) dropStream(id int64) error {
	for _, qq := range qDropStream {
		q := s.q(qq)
		q.int(1, id)
		if err := q.exec(); err != nil {
			return err
		}
	}
	s.dirty = true
	return nil
}

// copyStream copies everything of a stream to another key id.
func (s *Store) copyStream(from, to int64) error {
	for _, qq := range qCopyStream {
		q := s.q(qq)
		q.int(1, from)
		q.int(2, to)
		if err := q.exec(); err != nil {
			return err
		}
	}
	s.dirty = true
	return nil
}

// dropAllStreams removes everything of every stream of db (FLUSHDB),
// before their key rows go.
func (s *Store) dropAllStreams(db int) error {
	for _, qq := range qDropAllStreams {
		q := s.q(qq)
		q.int(1, int64(db))
		if err := q.exec(); err != nil {
			return err
		}
	}
	s.dirty = true
	return nil
}
