package storage

// GetString appends the value of a live string key to dst. found is false
// for a missing key; a key of another type is ErrWrongType.
func (s *Store) GetString(db int, key, dst []byte) (val []byte, found bool, err error) {
	return s.mem.getString(db, key, dst)
}

// StringLen is the length of a live string key's value; found is false
// (and n 0) when the key is missing.
func (s *Store) StringLen(db int, key []byte) (n int64, found bool, err error) {
	return s.mem.stringLen(db, key)
}

// SetString makes key a string holding val, whatever it was before. expireAt
// (unix ms, 0 for none) is the new expiry; with keepTTL a live key keeps its
// current expiry instead.
func (s *Store) SetString(db int, key, val []byte, expireAt int64, keepTTL bool) error {
	return s.mem.setString(db, key, val, expireAt, keepTTL)
}
