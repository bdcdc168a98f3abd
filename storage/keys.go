package storage

// Meta describes a live key.
type Meta struct {
	Type     Type
	ID       int64
	ExpireAt int64 // unix milliseconds; 0 when the key is persistent
}

// expired reports whether a key with this expiry is gone at now. Like Redis,
// a key lives through the millisecond of its expiry.
func expired(expireAt, now int64) bool { return expireAt != 0 && now > expireAt }

// Lookup finds a live key. A key found expired is deleted (lazy expiry) and
// reported missing.
func (s *Store) Lookup(db int, key []byte) (Meta, bool, error) {
	return s.mem.lookup(db, key)
}

// LookupType finds a live key and checks its type: a key of another type is
// ErrWrongType, a missing key is (Meta{}, false, nil).
func (s *Store) LookupType(db int, key []byte, t Type) (Meta, bool, error) {
	m, ok, err := s.Lookup(db, key)
	if err != nil || !ok {
		return m, ok, err
	}
	if m.Type != t {
		return m, false, ErrWrongType
	}
	return m, true, nil
}

// Delete removes a key and its elements. existed is false when there was no
// live key (an expired one is still removed, and recorded as Expired).
func (s *Store) Delete(db int, key []byte) (existed bool, err error) {
	return s.mem.delete(db, key)
}

// SetExpire sets (at > 0) or removes (at == 0) a live key's expiry.
func (s *Store) SetExpire(db int, key []byte, at int64) error {
	return s.mem.setExpire(db, key, at)
}

// NewID allocates the id of a new key.
func (s *Store) NewID() int64 {
	id := s.nextID
	s.nextID++
	return id
}

// Created records that a write inserted a new key row in db.
func (s *Store) Created(db int) { s.keyDeltas[db]++; s.dirty = true }

// Rename moves src to dst within db, replacing dst. The caller has checked
// that src exists and, for RENAMENX, that dst does not.
func (s *Store) Rename(db int, src, dst []byte) error {
	return s.mem.rename(db, src, dst)
}

// Move moves key from db to dstDB. The caller has checked that key exists
// in db and not in dstDB.
func (s *Store) Move(db int, key []byte, dstDB int) error {
	return s.mem.move(db, key, dstDB)
}

// Copy copies the live key src in srcDB to dst in dstDB, elements and
// expiry included, replacing dst when replace is set. copied is false when
// src is missing or dst exists and replace is not set.
func (s *Store) Copy(srcDB int, src []byte, dstDB int, dst []byte, replace bool) (copied bool, err error) {
	return s.mem.copyKey(srcDB, src, dstDB, dst, replace)
}

// ScanEntry is one key returned by Scan.
type ScanEntry struct {
	Key  []byte
	Type Type
}

// Scan returns up to count live keys of db whose id is above cursor, in id
// order, and the cursor to continue from (0 at the end). Keys keep their id
// for life, so a key present for a whole iteration is returned exactly
// once; keys created meanwhile have larger ids and may be returned.
func (s *Store) Scan(db int, cursor uint64, count int, out []ScanEntry) ([]ScanEntry, uint64, error) {
	return s.mem.scan(db, cursor, count, out)
}

// Keys calls fn for every live key of db that starts with prefix, in key
// order when a prefix is given. fn returning false stops the walk.
func (s *Store) Keys(db int, prefix []byte, fn func(key []byte) bool) error {
	return s.mem.keys(db, prefix, fn)
}

// RandomKey returns a random live key of db.
func (s *Store) RandomKey(db int) ([]byte, bool, error) {
	return s.mem.randomKey(db)
}

// DBSize is the number of keys in db, expired ones not yet deleted included
// (as in Redis).
func (s *Store) DBSize(db int) int64 {
	return s.mem.dbSize(db)
}

// CountExpiring is the number of keys in db that have an expiry.
func (s *Store) CountExpiring(db int) (int64, error) {
	return s.mem.countExpiring(db)
}

// SweepExpired deletes up to limit keys whose expiry has passed, oldest
// expiry first, and reports how many it deleted.
func (s *Store) SweepExpired(limit int) (int, error) {
	return s.mem.sweep(limit)
}

// FlushDB deletes every key of db.
func (s *Store) FlushDB(db int) error {
	s.mem.flushDB(db)
	return nil
}

// SwapDB exchanges the contents of two databases.
func (s *Store) SwapDB(a, b int) error {
	s.mem.swapDB(a, b)
	return nil
}

// Peek reports whether key has a row in db and whether that row's expiry
// has passed at Now (stale), without expiring it or recording anything:
// WATCH looks at a key this way, as Redis's keyIsExpired does.
func (s *Store) Peek(db int, key []byte) (present, stale bool, err error) {
	return s.mem.peek(db, key)
}
