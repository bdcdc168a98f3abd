package storage

// Hashes: an object.Elems in memory; one row per field in the hashes
// table, (id, h, field) -> value, written by the flush.

// HashGet appends the value of field to dst; found is false when the hash
// has no such field.
func (s *Store) HashGet(c *Coll, field, dst []byte) (val []byte, found bool, err error) {
	val, found = s.mem.hashGet(c, field, dst)
	return val, found, nil
}

// HashHas reports whether the hash has field.
func (s *Store) HashHas(c *Coll, field []byte) (bool, error) {
	return c.elems().Has(field), nil
}

// HashStrLen is the length of field's value, 0 when there is none.
func (s *Store) HashStrLen(c *Coll, field []byte) (int64, error) {
	el, _ := c.elems().Get(field)
	return int64(len(el.Value)), nil
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
	return s.mem.hashSet(c, field, value, mode), nil
}

// HashDel removes field; removed is false when there was none.
func (s *Store) HashDel(c *Coll, field []byte) (removed bool, err error) {
	return s.mem.removeElem(c, field), nil
}
