package storage

import (
	"github.com/cellar-db/cellar/storage/object"
)

// Loads: a key the engine does not hold is read whole from SQLite's last
// commit through the reader (memkeys.go, invariants).

// load fills e, which has only its name, from what SQLite's last commit
// holds for it in db, as the database operations not committed yet see
// it: nothing (e stays absent), a string, or a collection with all its
// elements. It returns the key's expiry, which hold indexes.
func (m *memEngine) load(db int, e *entry) (exp int64, err error) {
	m.readMu.Lock()
	sqlDB, empty := m.view(db, m.committed.Load())
	if empty || m.sqlKeys[sqlDB] == 0 || !m.pres.mayHold(e.key()) {
		m.readMu.Unlock()
		return 0, nil
	}
	m.reads++
	return readKey(m, m.r, sqlDB, e)
}

// readKey fills e from SQLite database sqlDB through r, and returns the
// key's expiry. The caller holds m.readMu, which readKey lets go once the
// key's row is read. It touches nothing of the actor's but e (a Load runs
// it off the actor): hold puts e in memory.
func readKey(m *memEngine, r *sqlc, sqlDB int, e *entry) (exp int64, err error) {
	// The row's statement stays open (not reset) until the elements are
	// read: SQLite keeps one read transaction for the connection while a
	// statement is active, so the row and its elements come from the
	// commit the row's first step saw, under readMu.
	st := r.q("SELECT type, id, coalesce(expire_at, 0), version, value FROM keys WHERE db = ?1 AND key = ?2")
	st.int(1, int64(sqlDB))
	st.blob(2, []byte(e.key()))
	row, err := st.step()
	m.readMu.Unlock()
	if err != nil || !row {
		st.reset()
		return 0, err
	}
	t := Type(st.colInt(0))
	e.id, e.ver, exp = st.colInt(1), st.colInt(3), st.colInt(2)
	e.set(flagRowStored|flagIDStored, true)
	e.set(flagExpStored, exp != 0)
	if t == TypeString {
		e.set(flagRefStored, colIsRef(st, 4))
		var v []byte
		v, err = r.colValue(st, 4, nil)
		e.setStr(v)
		st.reset()
		if err != nil {
			return 0, err
		}
		e.typ = t
		return exp, nil
	}
	o, err := loadObject(r, t, e.id)
	st.reset()
	e.setObject(o)
	if err != nil {
		return 0, err
	}
	e.typ = t
	e.set(flagElemsStored, true)
	return exp, nil
}

// loadObject reads collection id of type t whole.
func loadObject(r *sqlc, t Type, id int64) (memObject, error) {
	switch t {
	case TypeHash:
		rows, err := loadElems(r, hashTable, id)
		return object.Loaded(rows), err
	case TypeSet:
		rows, err := loadElems(r, setTable, id)
		return object.Loaded(rows), err
	case TypeZSet:
		rows, err := loadElems(r, zsetTable, id)
		return object.LoadedZSet(rows), err
	case TypeList:
		return loadList(r, id)
	case TypeStream:
		return loadStream(r, id)
	}
	return nil, &Error{Code: codeCorrupt, Msg: "a key of a type the in-memory engine cannot load yet"}
}

// stringIsRef reports whether the flush stores a string's value as a blob
// ref (bindValue with the key as the row's other bytes).
func stringIsRef(key string, val []byte) bool { return len(val)+len(key) > inlineBudget }

// EachStored calls fn with every key of db in SQLite's committed database,
// in key order: its name, type and expiry (0: none) and, for a string, its
// value, read in one pass over the keys table instead of a lookup a key.
// It is for a Store that nothing writes (a full sync's copy), where what
// memory holds of a key is what its row says. fn may read a key's object
// through the Store; name and str are valid during the call only.
func (s *Store) EachStored(db int, fn func(name []byte, t Type, exp int64, str []byte) error) error {
	m := s.mem
	m.readMu.Lock()
	sqlDB, empty := m.view(db, m.committed.Load())
	if empty {
		m.readMu.Unlock()
		return nil
	}
	st := m.r.q("SELECT key, type, coalesce(expire_at, 0), value FROM keys WHERE db = ?1")
	st.int(1, int64(sqlDB))
	defer st.reset()
	var name, str []byte
	for first := true; ; first = false {
		row, err := st.step()
		if first {
			m.readMu.Unlock()
		}
		if err != nil || !row {
			return err
		}
		name = st.colBlob(0, name[:0])
		t := Type(st.colInt(1))
		str = str[:0]
		if t == TypeString {
			if str, err = m.r.colValue(st, 3, str); err != nil {
				return err
			}
		}
		if err := fn(name, t, st.colInt(2), str); err != nil {
			return err
		}
	}
}
