package storage

// Sets: one row per member in the sets table, (id, h, member). Membership
// is a point lookup on the primary key; a new member and a removed one
// wait for the flush (elems.go), so the lookup looks at the pending members
// first.

var (
	qSIsMember = newElemLookup("SELECT 1 FROM sets WHERE id = ?1 AND h = ?2 AND member = ?3")
	qSRem      = newQuery("DELETE FROM sets WHERE id = ?1 AND h = ?2 AND member = ?3")
)

// SetHas reports whether member is in the set.
func (s *Store) SetHas(c *Coll, member []byte) (bool, error) {
	if s.mem != nil {
		return c.elems().Has(member), nil
	}
	if e := s.pendingElem(c, member); e != nil {
		return !e.gone, nil
	}
	return s.hasStored(qSIsMember, c, member)
}

// SetAdd adds member; added is false when it was there already.
func (s *Store) SetAdd(c *Coll, member []byte) (added bool, err error) {
	if s.mem != nil {
		return s.mem.setAdd(c, member), nil
	}
	switch e := s.pendingElem(c, member); {
	case e != nil && !e.gone:
		return false, nil
	case e != nil:
		s.revive(e) // removed, added again
	default:
		if had, err := s.hasStored(qSIsMember, c, member); err != nil || had {
			return false, err
		}
		if _, err := s.newPendElem(c, member, false); err != nil {
			return false, err
		}
	}
	c.Len++
	s.changed(c, false)
	return true, nil
}

// SetRem removes member; removed is false when it was not there.
func (s *Store) SetRem(c *Coll, member []byte) (removed bool, err error) {
	if s.mem != nil {
		return s.mem.removeElem(c, member), nil
	}
	return s.removeElem(c, member)
}
