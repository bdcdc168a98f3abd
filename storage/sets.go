package storage

// Sets: one row per member in the sets table, (id, h, member). Membership
// is a point lookup on the primary key.

var (
	qSIsMember = newQuery("SELECT 1 FROM sets WHERE id = ?1 AND h = ?2 AND member = ?3")
	qSAdd      = newQuery("INSERT OR IGNORE INTO sets (id, h, member) VALUES (?1, ?2, ?3)")
	qSRem      = newQuery("DELETE FROM sets WHERE id = ?1 AND h = ?2 AND member = ?3")
)

// SetHas reports whether member is in the set.
func (s *Store) SetHas(c *Coll, member []byte) (bool, error) {
	st := s.q(qSIsMember)
	bindElem(st, c.ID, member)
	row, err := st.step()
	st.reset()
	return row, err
}

// SetAdd adds member; added is false when it was there already.
func (s *Store) SetAdd(c *Coll, member []byte) (added bool, err error) {
	st := s.q(qSAdd)
	bindElem(st, c.ID, member)
	if err := st.exec(); err != nil {
		return false, err
	}
	if s.c.changes() == 0 {
		return false, nil
	}
	c.Len++
	s.changed(c, false)
	return true, nil
}

// SetRem removes member; removed is false when it was not there.
func (s *Store) SetRem(c *Coll, member []byte) (removed bool, err error) {
	return s.removeElem(c, qSRem, member)
}
