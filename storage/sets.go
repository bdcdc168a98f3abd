package storage

// Sets: an object.Elems in memory; one row per member in the sets table,
// (id, h, member), written by the flush.

// SetHas reports whether member is in the set.
func (s *Store) SetHas(c *Coll, member []byte) (bool, error) {
	return c.elems().Has(member), nil
}

// SetAdd adds member; added is false when it was there already.
func (s *Store) SetAdd(c *Coll, member []byte) (added bool, err error) {
	return s.mem.setAdd(c, member), nil
}

// SetRem removes member; removed is false when it was not there.
func (s *Store) SetRem(c *Coll, member []byte) (removed bool, err error) {
	return s.mem.removeElem(c, member), nil
}
