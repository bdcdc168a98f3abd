package storage

// Hashes: one row per field in the hashes table, (id, h, field) -> value.
// Every operation on a field is a point lookup on the primary key; an HSET
// of a value held inline waits for the flush (elems.go), so the lookups
// look at the pending fields first.

var (
	qHGet    = newElemLookup("SELECT value FROM hashes WHERE id = ?1 AND h = ?2 AND field = ?3")
	qHExists = newElemLookup("SELECT 1 FROM hashes WHERE id = ?1 AND h = ?2 AND field = ?3")
	qHStrLen = newElemLookup("SELECT " + lengthExpr + " FROM hashes WHERE id = ?1 AND h = ?2 AND field = ?3")
	qHInsert = newQuery("INSERT OR IGNORE INTO hashes (id, h, field, value, ord) VALUES (?1, ?2, ?3, ?4, ?5)")
	// HSET replaces a field, expiry included (Redis 7.4); HINCRBY keeps it.
	qHUpdate        = newQuery("UPDATE hashes SET value = ?4, expire_at = NULL WHERE id = ?1 AND h = ?2 AND field = ?3")
	qHUpdateKeepTTL = newQuery("UPDATE hashes SET value = ?4 WHERE id = ?1 AND h = ?2 AND field = ?3")
	qHDel           = newQuery("DELETE FROM hashes WHERE id = ?1 AND h = ?2 AND field = ?3")
)

// bindElem binds (id, h, element) as ?1, ?2, ?3.
func bindElem(st *stmt, id int64, elem []byte) {
	st.int(1, id)
	st.int(2, elemHash(elem))
	st.blob(3, elem)
}

// HashGet appends the value of field to dst; found is false when the hash
// has no such field.
func (s *Store) HashGet(c *Coll, field, dst []byte) (val []byte, found bool, err error) {
	if s.mem != nil {
		val, found = s.mem.hashGet(c, field, dst)
		return val, found, nil
	}
	if e := s.pendingElem(c, field); e != nil {
		if e.gone {
			return dst, false, nil
		}
		return append(dst, e.v...), true, nil
	}
	st := s.q(qHGet)
	bindElem(st, c.ID, field)
	row, err := st.step()
	if err != nil || !row {
		st.reset()
		return dst, false, err
	}
	dst, err = s.colValue(st, 0, dst)
	st.reset()
	return dst, err == nil, err
}

// HashHas reports whether the hash has field.
func (s *Store) HashHas(c *Coll, field []byte) (bool, error) {
	if s.mem != nil {
		return c.elems().Has(field), nil
	}
	if e := s.pendingElem(c, field); e != nil {
		return !e.gone, nil
	}
	return s.hasStored(qHExists, c, field)
}

// HashStrLen is the length of field's value, 0 when there is none.
func (s *Store) HashStrLen(c *Coll, field []byte) (int64, error) {
	if s.mem != nil {
		el, _ := c.elems().Get(field)
		return int64(len(el.Value)), nil
	}
	if e := s.pendingElem(c, field); e != nil {
		return int64(len(e.v)), nil // none when gone
	}
	st := s.q(qHStrLen)
	bindElem(st, c.ID, field)
	row, err := st.step()
	n := int64(0)
	if row {
		n = st.colInt(0)
	}
	st.reset()
	return n, err
}

// How HashSet treats a field that exists.
const (
	HashReplace = iota // a new value, and no expiry (HSET)
	HashKeepNew        // left alone (HSETNX)
	HashKeepTTL        // a new value, the expiry kept (HINCRBY)
)

// HashSet sets field to value; added is true when the field is new. mode
// says what happens to a field that exists.
func (s *Store) HashSet(c *Coll, field, value []byte, mode int) (added bool, err error) {
	if s.mem != nil {
		return s.mem.hashSet(c, field, value, mode), nil
	}
	if mode == HashReplace && len(field)+len(value) <= inlineBudget {
		return s.hashPut(c, field, value)
	}
	st := s.q(qHInsert)
	bindElem(st, c.ID, field)
	ref, err := s.bindValue(st, 4, value, len(field))
	if err != nil {
		st.reset()
		return false, err
	}
	st.int(5, s.nextVersion())
	if err := st.exec(); err != nil {
		return false, err
	}
	if s.c.changes() == 1 {
		c.Len++
		s.changed(c, false)
		return true, nil
	}
	if err := s.dropBlob(ref); err != nil {
		return false, err
	}
	if mode == HashKeepNew {
		return false, nil
	}
	st = s.q(qHUpdate)
	if mode == HashKeepTTL {
		st = s.q(qHUpdateKeepTTL)
	}
	bindElem(st, c.ID, field)
	if _, err := s.bindValue(st, 4, value, len(field)); err != nil {
		st.reset()
		return false, err
	}
	if err := st.exec(); err != nil {
		return false, err
	}
	s.changed(c, true)
	return false, nil
}

// HashDel removes field; removed is false when there was none.
func (s *Store) HashDel(c *Coll, field []byte) (removed bool, err error) {
	if s.mem != nil {
		return s.mem.removeElem(c, field), nil
	}
	return s.removeElem(c, field)
}

// hashPut is HSET of a value held inline: the new field or value waits for
// the flush (elems.go).
func (s *Store) hashPut(c *Coll, field, value []byte) (added bool, err error) {
	e := s.pendingElem(c, field)
	switch {
	case e != nil && e.gone: // removed: set again, it goes to the end
		s.revive(e)
		e.ord, added = s.nextVersion(), true
		c.Len++
	case e == nil:
		had, err := s.hasStored(qHExists, c, field)
		if err != nil {
			return false, err
		}
		if e, err = s.newPendElem(c, field, had); err != nil {
			return false, err
		}
		if !had {
			e.ord, added = s.nextVersion(), true
			c.Len++
		}
	}
	s.setElemValue(e, value)
	s.changed(c, !added)
	return added, nil
}
