package storage

import "encoding/binary"

// Hash field expiration (Redis 7.4's HEXPIRE family). A field's expiry is
// the expire_at column of its row (unix ms, NULL when it has none;
// migration 11), indexed for the sweep. A field past its expiry is removed
// before any command sees its hash: on open (lazily) and by the sweep
// (actively), both through expireFields, which records one FieldsExpired
// change naming the fields, so that the redo log has them as an HDEL and
// keyspace notifications as "hexpired".
//
// Whether a hash may hold a field due for expiry is known without a query:
// hfe maps the id of every hash with fields that have expiries to a time
// at or before the earliest of them (a lower bound: a later expiry set, an
// expiry removed or a field deleted leaves it early, and the next look at
// the hash moves it on). With no field expiries anywhere, opening a hash
// costs one length test.

var (
	qHFieldTTL    = newQuery("SELECT coalesce(expire_at, 0) FROM hashes WHERE id = ?1 AND h = ?2 AND field = ?3")
	qHFieldSetTTL = newQuery("UPDATE hashes SET expire_at = ?4 WHERE id = ?1 AND h = ?2 AND field = ?3")
	qHFieldClear  = newQuery("UPDATE hashes SET expire_at = NULL WHERE id = ?1 AND h = ?2 AND field = ?3")
	qHExpireDue   = newQuery("DELETE FROM hashes WHERE id = ?1 AND expire_at < ?2 RETURNING field")
	qHNextExpiry  = newQuery("SELECT min(expire_at) FROM hashes WHERE id = ?1 AND expire_at IS NOT NULL")
	qHLoadExpiry  = newQuery("SELECT id, min(expire_at) FROM hashes WHERE expire_at IS NOT NULL GROUP BY id")
	qHDueHashes   = newQuery("SELECT id FROM hashes WHERE expire_at < ?1 ORDER BY expire_at LIMIT ?2")
	qKeyByID      = newQuery("SELECT db, key FROM keys WHERE db IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15) AND id = ?1")
)

// loadFieldExpiries fills hfe from the database (on open).
func (s *Store) loadFieldExpiries() error {
	s.hfe = map[int64]int64{}
	st := s.q(qHLoadExpiry)
	defer st.reset()
	for {
		row, err := st.step()
		if err != nil || !row {
			return err
		}
		s.hfe[st.colInt(0)] = st.colInt(1)
	}
}

// noteFieldExpiry keeps hfe a lower bound after an expiry at was set on a
// field of hash id.
func (s *Store) noteFieldExpiry(id, at int64) {
	if cur, ok := s.hfe[id]; !ok || at < cur {
		s.hfe[id] = at
	}
}

// HashFieldExpiry is field's expiry (unix ms; 0 for none); found is false
// when the hash has no such field.
func (s *Store) HashFieldExpiry(c *Coll, field []byte) (at int64, found bool, err error) {
	if s.mem != nil {
		at, found = s.mem.hashFieldExpiry(c, field)
		return at, found, nil
	}
	st := s.q(qHFieldTTL)
	bindElem(st, c.ID, field)
	row, err := st.step()
	if row {
		at = st.colInt(0)
	}
	st.reset()
	return at, row, err
}

// HashSetFieldExpiry sets field's expiry to at (unix ms), or removes it
// (at 0). The field must exist.
func (s *Store) HashSetFieldExpiry(c *Coll, field []byte, at int64) error {
	if s.mem != nil {
		s.mem.hashSetFieldExpiry(c, field, at)
		return nil
	}
	var st *stmt
	if at == 0 {
		st = s.q(qHFieldClear)
		bindElem(st, c.ID, field)
	} else {
		st = s.q(qHFieldSetTTL)
		bindElem(st, c.ID, field)
		st.int(4, at)
	}
	if err := st.exec(); err != nil {
		return err
	}
	if at != 0 {
		s.noteFieldExpiry(c.ID, at)
	}
	s.changed(c, true)
	return nil
}

// expireFieldsIfDue removes the fields of the hash c whose expiry has
// passed, when hfe says some may have. gone is true when that emptied the
// hash, which is then deleted.
func (s *Store) expireFieldsIfDue(c *Coll) (gone bool, err error) {
	at, ok := s.hfe[c.ID]
	if !ok || at >= s.Now {
		return false, nil
	}
	st := s.q(qHExpireDue)
	st.int(1, c.ID)
	st.int(2, s.Now)
	var fields []byte // uvarint length, bytes; repeated
	n := int64(0)
	for {
		row, err := st.step()
		if err != nil {
			st.reset()
			return false, err
		}
		if !row {
			break
		}
		f := st.colBlob(0, nil)
		fields = binary.AppendUvarint(fields, uint64(len(f)))
		fields = append(fields, f...)
		n++
	}
	st.reset()
	// The next expiry of what remains, if any.
	nx := s.q(qHNextExpiry)
	nx.int(1, c.ID)
	row, err := nx.step()
	next := int64(0)
	if row {
		next = nx.colInt(0)
	}
	nx.reset()
	if err != nil {
		return false, err
	}
	if next == 0 {
		delete(s.hfe, c.ID)
	} else {
		s.hfe[c.ID] = next
	}
	if n == 0 {
		return false, nil
	}
	s.dirty = true
	c.Len -= n
	c.saved -= n
	gone = c.Len <= 0
	if gone {
		if _, err := s.remove(c.DB, c.Key, 0); err != nil {
			return false, err
		}
	} else if e := s.cache.coll(c.DB, c.Key, c.ID); e != nil {
		s.pend(e, c.Len, s.nextVersion())
	} else {
		st := s.q(qCollSave)
		st.int(1, int64(c.DB))
		st.blob(2, c.Key)
		st.int(3, c.Len)
		st.int(4, s.nextVersion())
		if err := st.exec(); err != nil {
			return false, err
		}
	}
	s.recordFields(c.DB, c.Key, fields, gone)
	return gone, nil
}

// recordFields records a FieldsExpired change: fields in its Effect
// (uvarint-prefixed names), Other 1 when the hash went with them.
func (s *Store) recordFields(db int, key, fields []byte, gone bool) {
	other := 0
	if gone {
		other = 1
	}
	s.record(db, key, FieldsExpired, other)
	start := len(s.touchKeys)
	s.touchKeys = append(s.touchKeys, fields...)
	s.touches[len(s.touches)-1].Effect = s.touchKeys[start:len(s.touchKeys):len(s.touchKeys)]
}

// ExpiredFields splits a FieldsExpired change's Effect into field names
// (appended to dst).
func ExpiredFields(effect []byte, dst [][]byte) [][]byte {
	for len(effect) > 0 {
		n, k := binary.Uvarint(effect)
		if k <= 0 || uint64(len(effect)-k) < n {
			return dst
		}
		dst = append(dst, effect[k:k+int(n)])
		effect = effect[k+int(n):]
	}
	return dst
}

// SweepExpiredFields removes the expired fields of up to limit hashes whose
// fields expire first (deleting a hash left empty) and reports how many
// hashes it expired fields of (rows of no key, which no write leaves, are
// not counted, so that they cannot keep the sweep going).
func (s *Store) SweepExpiredFields(limit int) (int, error) {
	if s.mem != nil {
		return s.mem.sweepFields(limit)
	}
	if len(s.hfe) == 0 {
		return 0, nil
	}
	st := s.q(qHDueHashes)
	st.int(1, s.Now)
	st.int(2, int64(limit))
	var ids []int64
	for {
		row, err := st.step()
		if err != nil {
			st.reset()
			return 0, err
		}
		if !row {
			break
		}
		id := st.colInt(0)
		if len(ids) == 0 || ids[len(ids)-1] != id {
			ids = append(ids, id)
		}
	}
	st.reset()
	done := 0
	for _, id := range ids {
		k := s.q(qKeyByID)
		k.int(1, id)
		row, err := k.step()
		if err != nil || !row {
			k.reset()
			if err != nil {
				return 0, err
			}
			continue
		}
		db, key := int(k.colInt(0)), k.colBlob(1, nil)
		k.reset()
		// Opening the hash expires its due fields (or the whole key, if
		// that expired first).
		s.noteFieldExpiry(id, s.Now-1)
		if _, err := s.OpenColl(db, key, TypeHash); err != nil && err != ErrWrongType {
			return 0, err
		}
		done++
	}
	return done, nil
}
