package storage

import (
	"github.com/cellar-db/cellar/storage/object"
)

// Streams on the in-memory engine: the stream operations of streams.go, run
// on the key's object.Stream. A Stream handle carries the metadata the
// actor reads and sets (XSETID), kept in step with the object.

func (st *Stream) obj() *object.Stream { return st.e.stream() }

// sync copies the object's count and metadata into the handle.
func (st *Stream) sync() {
	o := st.obj()
	meta := o.Meta()
	st.Len, st.Last, st.MaxDeleted, st.EntriesAdded = o.Len(), meta.Last, meta.MaxDeleted, meta.EntriesAdded
}

func (m *memEngine) openStream(db int, key []byte) (*Stream, error) {
	e, err := m.live(db, key)
	switch {
	case err != nil || e == nil:
		return nil, err
	case e.typ != TypeStream:
		return nil, ErrWrongType
	}
	st := &Stream{DB: db, Key: key, ID: e.id, e: e}
	st.sync()
	return st, nil
}

func (m *memEngine) createStream(db int, key []byte) (*Stream, error) {
	e, err := m.entryAt(db, key)
	if err != nil {
		return nil, err
	}
	m.create(e, TypeStream)
	e.setObject(object.NewStream())
	m.changed(e)
	m.s.record(db, key, Written, 0)
	return &Stream{DB: db, Key: key, ID: e.id, e: e}, nil
}

// touchStream ends a change to st: its version moves and kind is recorded,
// once per command for changes that leave the count alone (Modified).
func (m *memEngine) touchStream(st *Stream, kind Change) {
	st.sync()
	m.changed(st.e)
	if kind == Modified && st.versioned {
		return
	}
	st.versioned = true
	st.e.ver = m.s.nextVersion()
	m.s.record(st.DB, st.Key, kind, 0)
}

func (m *memEngine) streamAdd(st *Stream, id StreamID, fields [][]byte) error {
	if err := st.obj().Add(id, owned(fields)); err != nil {
		return err
	}
	m.touchStream(st, Added)
	return nil
}

func (m *memEngine) streamEntryAt(st *Stream, id StreamID) (StreamEntry, bool) {
	e, ok := st.obj().EntryAt(id)
	if ok {
		e.Fields = owned(e.Fields) // fresh slices, as on SQLite
	}
	return e, ok
}

func (m *memEngine) streamDelete(st *Stream, ids []StreamID) int64 {
	n := st.obj().Delete(ids)
	if n > 0 {
		m.touchStream(st, Removed)
	}
	return n
}

func (m *memEngine) streamTrimmed(st *Stream, t StreamTrim) int64 {
	n := st.obj().Trim(t)
	if n > 0 {
		m.touchStream(st, Removed)
	}
	return n
}

func (m *memEngine) streamSetMeta(st *Stream) {
	st.obj().SetMeta(object.StreamMeta{Last: st.Last, MaxDeleted: st.MaxDeleted, EntriesAdded: st.EntriesAdded})
	m.touchStream(st, Modified)
}

// streamChanged ends a change to groups, consumers or PELs: recorded as
// kind when it happened (changed), nothing otherwise.
func (m *memEngine) streamChanged(st *Stream, changed bool, kind Change) {
	if changed {
		m.touchStream(st, kind)
	}
}
