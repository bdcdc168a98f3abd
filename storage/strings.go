package storage

import (
	"fmt"

	sqlite3 "modernc.org/sqlite/lib"
)

var (
	qGetString = newAsideQuery("SELECT type, coalesce(expire_at, 0), value FROM keys WHERE db = ?1 AND key = ?2")
	qStrLen    = newAsideQuery("SELECT type, coalesce(expire_at, 0), " + lengthExpr + " FROM keys WHERE db = ?1 AND key = ?2")
	// SET of a key the hot cache does not know reads what is there first:
	// a lookup and a plain INSERT or UPDATE cost SQLite less than an
	// upsert, whose RETURNING (needed to tell a new key from an old one)
	// builds a temporary table, plus the statement that moved a replaced
	// value's blob ref to the garbage.
	qStringRow    = newAsideQuery("SELECT type, coalesce(expire_at, 0), typeof(value) = 'integer' FROM keys WHERE db = ?1 AND key = ?2")
	qInsertString = newQuery("INSERT INTO keys (db, key, id, type, expire_at, version, value) VALUES (?1, ?2, ?3, 1, nullif(?4, 0), ?5, ?6)")
	// The fast path for a key the hot cache knows to be a live string: a
	// plain UPDATE (an upsert's RETURNING costs SQLite a temporary table).
	qUpdateString = newQuery(`UPDATE keys SET value = ?3, version = ?6,
		expire_at = CASE WHEN ?5 THEN expire_at ELSE nullif(?4, 0) END
		WHERE db = ?1 AND key = ?2 AND type = 1`)
)

// GetString appends the value of a live string key to dst. found is false
// for a missing key; a key of another type is ErrWrongType.
func (s *Store) GetString(db int, key, dst []byte) (val []byte, found bool, err error) {
	if s.mem != nil {
		return s.mem.getString(db, key, dst)
	}
	if e := s.cache.get(db, key, s.Now); e != nil {
		switch {
		case e.absent:
			return dst, false, nil
		case e.coll != 0:
			return dst, false, ErrWrongType
		}
		return append(dst, e.v...), true, nil
	}
	if r := s.flyingString(db, key); r != nil {
		return append(dst, r.v...), true, nil
	}
	st := s.qKey(qGetString, db, key)
	row, err := st.step()
	if err != nil || !row {
		st.reset()
		if err == nil {
			s.cache.putAbsent(db, key)
		}
		return dst, false, err
	}
	t, exp := Type(st.colInt(0)), st.colInt(1)
	if expired(exp, s.Now) {
		st.reset()
		_, err := s.Delete(db, key)
		return dst, false, err
	}
	if t != TypeString {
		st.reset()
		return dst, false, ErrWrongType
	}
	start := len(dst)
	ref := st.colType(2) == sqlite3.SQLITE_INTEGER
	dst, err = s.colValue(st, 2, dst)
	st.reset()
	if err == nil {
		s.cache.put(db, key, dst[start:], exp, ref)
	}
	return dst, err == nil, err
}

// StringLen is the length of a live string key's value; found is false
// (and n 0) when the key is missing.
func (s *Store) StringLen(db int, key []byte) (n int64, found bool, err error) {
	if s.mem != nil {
		return s.mem.stringLen(db, key)
	}
	st := s.qKey(qStrLen, db, key)
	row, err := st.step()
	if err != nil || !row {
		st.reset()
		return 0, false, err
	}
	t, exp, n := Type(st.colInt(0)), st.colInt(1), st.colInt(2)
	st.reset()
	if expired(exp, s.Now) {
		_, err := s.Delete(db, key)
		return 0, false, err
	}
	if t != TypeString {
		return 0, false, ErrWrongType
	}
	return n, true, nil
}

// SetString makes key a string holding val, whatever it was before. expireAt
// (unix ms, 0 for none) is the new expiry; with keepTTL a live key keeps its
// current expiry instead.
func (s *Store) SetString(db int, key, val []byte, expireAt int64, keepTTL bool) error {
	if s.mem != nil {
		return s.mem.setString(db, key, val, expireAt, keepTTL)
	}
	e := s.cache.get(db, key, s.Now)
	if e != nil && !e.absent && e.coll == 0 && len(val) <= maxCached {
		// A cached live string: the new value waits in the cache and is
		// written back later (writeback.go).
		if keepTTL {
			expireAt = e.exp
		}
		s.cache.setValue(e, val, expireAt) // e.ref stays: the row's old value
		s.pend(e, 0, s.nextVersion())
		s.record(db, key, Written, 0)
		return nil
	}
	var t Type // the key's type, 0 for none
	var ref bool
	switch {
	case e == nil:
		var exp int64
		var err error
		if t, exp, ref, err = s.stringRow(db, key); err != nil {
			return err
		}
		if t != 0 && keepTTL {
			expireAt = exp
		}
	case e.absent:
	case e.coll == 0:
		t, ref = TypeString, e.ref
		if keepTTL {
			expireAt = e.exp
		}
	default:
		t = e.coll
		if keepTTL {
			expireAt = e.exp
		}
	}
	// KEEPTTL keeps a live key's expiry whatever its type, as in Redis.
	keepTTL = false
	switch t {
	case 0:
	case TypeString:
		if !ref && s.cache != nil && len(val)+len(key) <= inlineBudget {
			// A string SQLite holds inline, not cached: like a cached
			// one, the new value waits in the cache for the write-back.
			e := s.cache.putNew(db, key, val, expireAt)
			s.pend(e, 0, s.nextVersion())
			s.record(db, key, Written, 0)
			return nil
		}
		ok, err := s.updateString(db, key, val, expireAt, keepTTL, ref)
		if err != nil || ok {
			return err
		}
		return fmt.Errorf("storage: SetString found no string row for key %q where it had read one", key)
	default:
		if _, err := s.remove(db, key, 0); err != nil {
			return err
		}
	}
	if s.cache != nil && len(val)+len(key) <= inlineBudget {
		// A new key: its row waits in the hot cache as a pending insert,
		// written by the next flush (or before a statement that needs it)
		// in key order with the others (writeback.go).
		e := s.cache.putNew(db, key, val, expireAt)
		e.id, e.insert = s.nextID, true
		s.nextID++
		s.pend(e, 0, s.nextVersion())
		s.keyDeltas[db]++
		s.recordNew(db, key)
		s.dirty = true
		s.record(db, key, Written, 0)
		return nil
	}
	st := s.qKey(qInsertString, db, key)
	st.int(3, s.nextID)
	st.int(4, expireAt)
	st.int(5, s.nextVersion())
	ref2, err := s.bindValue(st, 6, val, len(key))
	if err != nil {
		st.reset()
		return err
	}
	if err := st.exec(); err != nil {
		return err
	}
	s.nextID++
	s.keyDeltas[db]++
	s.recordNew(db, key)
	s.dirty = true
	s.cacheSet(db, key, val, expireAt, false, ref2 != 0)
	s.record(db, key, Written, 0)
	return nil
}

// stringRow reads the type, expiry and value kind (a blob ref or not) of
// key's row for SetString; an expired key is deleted and reported as none.
func (s *Store) stringRow(db int, key []byte) (t Type, exp int64, ref bool, err error) {
	if r := s.flyingString(db, key); r != nil {
		return TypeString, r.exp, false, nil // the flush holds values inline
	}
	st := s.qKey(qStringRow, db, key)
	row, err := st.step()
	if row {
		t, exp, ref = Type(st.colInt(0)), st.colInt(1), st.colInt(2) != 0
	}
	st.reset()
	if err != nil || !row {
		return 0, 0, false, err
	}
	if expired(exp, s.Now) {
		_, err := s.Delete(db, key)
		return 0, 0, false, err
	}
	return t, exp, ref, nil
}

// cacheSet writes a SET through to the hot cache. With keepTTL the new
// expiry is the cached one if the key is cached (and live); otherwise it
// is unknown here and the entry is dropped.
func (s *Store) cacheSet(db int, key, val []byte, expireAt int64, keepTTL, ref bool) {
	if s.cache == nil {
		return
	}
	if keepTTL {
		e := s.cache.get(db, key, s.Now)
		if e == nil || e.absent {
			s.cache.drop(db, key)
			return
		}
		expireAt = e.exp
	}
	s.cache.put(db, key, val, expireAt, ref)
}

// updateString overwrites a key known to be a live string, whose row holds
// its value as a blob ref if oldRef; ok is false if it was not one after all
// (nothing changed then). It writes the change through to the hot cache and
// the change record.
func (s *Store) updateString(db int, key, val []byte, expireAt int64, keepTTL, oldRef bool) (ok bool, err error) {
	if oldRef {
		if err := s.keepGarbage(db, key); err != nil {
			return false, err
		}
	}
	st := s.qKey(qUpdateString, db, key)
	ref, err := s.bindValue(st, 3, val, len(key))
	if err != nil {
		st.reset()
		return false, err
	}
	st.int(4, expireAt)
	keep := int64(0)
	if keepTTL {
		keep = 1
	}
	st.int(5, keep)
	st.int(6, s.nextVersion())
	if err := st.exec(); err != nil {
		return false, err
	}
	if s.c.changes() != 1 {
		return false, s.dropBlob(ref)
	}
	s.dirty = true
	s.cacheSet(db, key, val, expireAt, keepTTL, ref != 0)
	s.record(db, key, Written, 0)
	return true, nil
}
