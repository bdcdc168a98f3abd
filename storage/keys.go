package storage

import (
	"math/rand/v2"
)

// Meta describes a live key.
type Meta struct {
	Type     Type
	ID       int64
	ExpireAt int64 // unix milliseconds; 0 when the key is persistent
}

// expired reports whether a key with this expiry is gone at now. Like Redis,
// a key lives through the millisecond of its expiry.
func expired(expireAt, now int64) bool { return expireAt != 0 && now > expireAt }

var (
	qLookup   = newAsideQuery("SELECT type, id, coalesce(expire_at, 0) FROM keys WHERE db = ?1 AND key = ?2")
	qDelete   = newQuery("DELETE FROM keys WHERE db = ?1 AND key = ?2 RETURNING type, id, coalesce(expire_at, 0)")
	qSetTTL   = newQuery("UPDATE keys SET expire_at = nullif(?3, 0), version = ?4 WHERE db = ?1 AND key = ?2")
	qRename   = newQuery("UPDATE keys SET key = ?3, version = ?4 WHERE db = ?1 AND key = ?2")
	qMove     = newQuery("UPDATE keys SET db = ?3, version = ?4 WHERE db = ?1 AND key = ?2")
	qCopyRow  = newQuery("INSERT INTO keys (db, key, id, type, expire_at, version, value) SELECT ?3, ?4, ?5, type, expire_at, ?7, coalesce(?6, value) FROM keys WHERE db = ?1 AND key = ?2")
	qValueRef = newQuery("SELECT value FROM keys WHERE db = ?1 AND key = ?2 AND type = 1 AND typeof(value) = 'integer'")
	qScan     = newQuery("SELECT id, key, type, coalesce(expire_at, 0) FROM keys WHERE db = ?1 AND id > ?2 ORDER BY id LIMIT ?3")
	qKeysAll  = newQuery("SELECT key, coalesce(expire_at, 0) FROM keys WHERE db = ?1")
	qKeysFrom = newQuery("SELECT key, coalesce(expire_at, 0) FROM keys WHERE db = ?1 AND key >= ?2 ORDER BY key")
	qIDRange  = newQuery("SELECT min(id), max(id) FROM keys WHERE db = ?1")
	qRandom   = newQuery("SELECT key, coalesce(expire_at, 0) FROM keys WHERE db = ?1 AND id >= ?2 ORDER BY id LIMIT 1")
	qExpiring = newQuery("SELECT count(*) FROM keys WHERE db = ?1 AND expire_at IS NOT NULL")
	qSweep    = newQuery("DELETE FROM keys WHERE (db, key) IN (SELECT db, key FROM keys WHERE expire_at < ?1 AND db < 16 ORDER BY expire_at LIMIT ?2) RETURNING db, type, id, key") // not the staging databases (StagingDB)
	// Whether the sweep has anything to do. It runs without the write-back
	// (prepared, not q): a pending row's expiry may be behind in SQLite,
	// and either way is safe. A row SQLite thinks expired makes the sweep
	// run, and the sweep writes everything back before it deletes; a
	// pending expiry SQLite does not have yet waits for a later sweep (the
	// hot cache never serves an expired entry, and a lookup deletes it).
	qSweepDue = newQuery("SELECT 1 FROM keys WHERE expire_at < ?1 AND db < 16 LIMIT 1")
	qFlushDB  = newQuery("DELETE FROM keys WHERE db = ?1")
	qMoveDB   = newQuery("UPDATE keys SET db = ?2 WHERE db = ?1")
)

// Lookup finds a live key. A key found expired is deleted (lazy expiry) and
// reported missing.
func (s *Store) Lookup(db int, key []byte) (Meta, bool, error) {
	if s.mem != nil {
		return s.mem.lookup(db, key)
	}
	st := s.qKey(qLookup, db, key)
	row, err := st.step()
	if err != nil || !row {
		st.reset()
		return Meta{}, false, err
	}
	m := Meta{Type: Type(st.colInt(0)), ID: st.colInt(1), ExpireAt: st.colInt(2)}
	st.reset()
	if expired(m.ExpireAt, s.Now) {
		_, err := s.Delete(db, key)
		return Meta{}, false, err
	}
	return m, true, nil
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
	if s.mem != nil {
		return s.mem.delete(db, key)
	}
	return s.remove(db, key, Deleted)
}

// remove deletes key's row and elements and records the change: as kind
// when the key was live (Deleted; 0 for a key about to be overwritten,
// whose new value records the change), as Expired when its expiry had
// passed. live reports which it was (false too when there was no row).
func (s *Store) remove(db int, key []byte, kind Change) (live bool, err error) {
	s.cache.drop(db, key)
	st := s.qKey(qDelete, db, key)
	row, err := st.step()
	if err != nil || !row {
		st.reset()
		return false, err
	}
	t, id, exp := Type(st.colInt(0)), st.colInt(1), st.colInt(2)
	// Drain RETURNING to completion before running other statements.
	for row && err == nil {
		row, err = st.step()
	}
	st.reset()
	if err != nil {
		return false, err
	}
	s.dirty = true
	s.keyDeltas[db]--
	if t == TypeHash {
		delete(s.hfe, id) // hashfe.go
	}
	if err := s.dropElements(t, id); err != nil {
		return false, err
	}
	live = !expired(exp, s.Now)
	switch {
	case !live:
		s.record(db, key, Expired, 0)
	case kind != 0:
		s.record(db, key, kind, 0)
	}
	return live, nil
}

// dropElements removes a collection's elements, if the type has any.
func (s *Store) dropElements(t Type, id int64) error {
	switch t {
	case TypeString:
		return nil
	case TypeList:
		return s.dropList(id)
	case TypeHash, TypeSet, TypeZSet:
		return s.dropCollElements(t, id)
	case TypeStream:
		return s.dropStream(id)
	}
	return nil
}

// copyElements copies a collection's elements from one key id to another.
func (s *Store) copyElements(t Type, from, to int64) error {
	switch t {
	case TypeString:
		return nil
	case TypeList:
		return s.copyList(from, to)
	case TypeHash, TypeSet, TypeZSet:
		return s.copyCollElements(t, from, to)
	case TypeStream:
		return s.copyStream(from, to)
	}
	return nil
}

// SetExpire sets (at > 0) or removes (at == 0) a live key's expiry.
func (s *Store) SetExpire(db int, key []byte, at int64) error {
	if s.mem != nil {
		return s.mem.setExpire(db, key, at)
	}
	s.cache.setExpiry(db, key, at)
	st := s.qKey(qSetTTL, db, key)
	st.int(3, at)
	st.int(4, s.nextVersion())
	if err := st.exec(); err != nil {
		return err
	}
	s.record(db, key, ExpiryChanged, 0)
	return nil
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
	if s.mem != nil {
		return s.mem.rename(db, src, dst)
	}
	s.cache.drop(db, src)
	if _, err := s.remove(db, dst, 0); err != nil {
		return err
	}
	st := s.q(qRename)
	st.int(1, int64(db))
	st.blob(2, src)
	st.blob(3, dst)
	st.int(4, s.nextVersion())
	if err := st.exec(); err != nil {
		return err
	}
	s.recordNew(db, dst) // RENAME makes dst anew, as Redis does
	s.record(db, src, RenamedFrom, 0)
	s.record(db, dst, RenamedTo, 0)
	return nil
}

// Move moves key from db to dstDB. The caller has checked that key exists
// in db and not in dstDB.
func (s *Store) Move(db int, key []byte, dstDB int) error {
	if s.mem != nil {
		return s.mem.move(db, key, dstDB)
	}
	s.cache.drop(db, key)
	s.cache.drop(dstDB, key)
	st := s.q(qMove)
	st.int(1, int64(db))
	st.blob(2, key)
	st.int(3, int64(dstDB))
	st.int(4, s.nextVersion())
	if err := st.exec(); err != nil {
		return err
	}
	s.keyDeltas[db]--
	s.keyDeltas[dstDB]++
	s.recordNew(dstDB, key)
	s.record(db, key, MovedFrom, dstDB)
	s.record(dstDB, key, MovedTo, db)
	return nil
}

// Copy copies the live key src in srcDB to dst in dstDB, elements and
// expiry included, replacing dst when replace is set. copied is false when
// src is missing or dst exists and replace is not set.
func (s *Store) Copy(srcDB int, src []byte, dstDB int, dst []byte, replace bool) (copied bool, err error) {
	if s.mem != nil {
		return s.mem.copyKey(srcDB, src, dstDB, dst, replace)
	}
	m, ok, err := s.Lookup(srcDB, src)
	if err != nil || !ok {
		return false, err
	}
	if _, exists, err := s.Lookup(dstDB, dst); err != nil {
		return false, err
	} else if exists {
		if !replace {
			return false, nil
		}
		if _, err := s.remove(dstDB, dst, 0); err != nil {
			return false, err
		}
	}
	// A large string value gets a blob of its own (refs are never shared).
	var ref int64
	rq := s.q(qValueRef)
	rq.int(1, int64(srcDB))
	rq.blob(2, src)
	row, err := rq.step()
	if row {
		ref = rq.colInt(0)
	}
	rq.reset()
	if err != nil {
		return false, err
	}
	if ref != 0 {
		if ref, err = s.dupBlob(ref); err != nil {
			return false, err
		}
	}
	s.cache.drop(dstDB, dst)
	id := s.NewID()
	st := s.q(qCopyRow)
	st.int(1, int64(srcDB))
	st.blob(2, src)
	st.int(3, int64(dstDB))
	st.blob(4, dst)
	st.int(5, id)
	if ref != 0 {
		st.int(6, ref)
	} else {
		st.null(6)
	}
	st.int(7, s.nextVersion())
	if err := st.exec(); err != nil {
		return false, err
	}
	s.Created(dstDB)
	if err := s.copyElements(m.Type, m.ID, id); err != nil {
		return false, err
	}
	s.recordNew(dstDB, dst)
	s.record(dstDB, dst, CopiedTo, srcDB)
	return true, nil
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
	if s.mem != nil {
		return s.mem.scan(db, cursor, count, out)
	}
	st := s.q(qScan)
	st.int(1, int64(db))
	st.int(2, int64(cursor))
	st.int(3, int64(count))
	defer st.reset()
	n := 0
	last := cursor
	for {
		row, err := st.step()
		if err != nil {
			return out, 0, err
		}
		if !row {
			break
		}
		n++
		last = uint64(st.colInt(0))
		if expired(st.colInt(3), s.Now) {
			continue
		}
		out = append(out, ScanEntry{Key: st.colBlob(1, nil), Type: Type(st.colInt(2))})
	}
	if n < count {
		return out, 0, nil
	}
	return out, last, nil
}

// Keys calls fn for every live key of db that starts with prefix, in key
// order when a prefix is given. fn returning false stops the walk.
func (s *Store) Keys(db int, prefix []byte, fn func(key []byte) bool) error {
	if s.mem != nil {
		return s.mem.keys(db, prefix, fn)
	}
	var st *stmt
	if len(prefix) > 0 {
		st = s.q(qKeysFrom)
		st.int(1, int64(db))
		st.blob(2, prefix)
	} else {
		st = s.q(qKeysAll)
		st.int(1, int64(db))
	}
	defer st.reset()
	var buf []byte
	for {
		row, err := st.step()
		if err != nil || !row {
			return err
		}
		buf = st.colBlob(0, buf[:0])
		if len(prefix) > 0 && !hasPrefix(buf, prefix) {
			return nil
		}
		if expired(st.colInt(1), s.Now) {
			continue
		}
		if !fn(buf) {
			return nil
		}
	}
}

func hasPrefix(b, prefix []byte) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == string(prefix)
}

// RandomKey returns a random live key of db.
func (s *Store) RandomKey(db int) ([]byte, bool, error) {
	if s.mem != nil {
		return s.mem.randomKey(db)
	}
	st := s.q(qIDRange)
	st.int(1, int64(db))
	row, err := st.step()
	if err != nil || !row || st.colNull(0) {
		st.reset()
		return nil, false, err
	}
	lo, hi := st.colInt(0), st.colInt(1)
	st.reset()
	// A random point in the id range, then the first key at or after it;
	// expired keys are skipped a bounded number of times, as in Redis.
	for tries := 0; tries < 100; tries++ {
		r := s.q(qRandom)
		r.int(1, int64(db))
		r.int(2, lo+rand.Int64N(hi-lo+1))
		row, err := r.step()
		if err != nil {
			r.reset()
			return nil, false, err
		}
		if !row {
			r.reset()
			continue
		}
		key, exp := r.colBlob(0, nil), r.colInt(1)
		r.reset()
		if !expired(exp, s.Now) {
			return key, true, nil
		}
	}
	return nil, false, nil
}

// DBSize is the number of keys in db, expired ones not yet deleted included
// (as in Redis).
func (s *Store) DBSize(db int) int64 {
	if s.mem != nil {
		return s.mem.dbSize(db)
	}
	return s.keyCounts[db] + s.keyDeltas[db]
}

// CountExpiring is the number of keys in db that have an expiry.
func (s *Store) CountExpiring(db int) (int64, error) {
	if s.mem != nil {
		return s.mem.countExpiring(db)
	}
	st := s.q(qExpiring)
	st.int(1, int64(db))
	defer st.reset()
	if _, err := st.step(); err != nil {
		return 0, err
	}
	return st.colInt(0), nil
}

// SweepExpired deletes up to limit keys whose expiry has passed, oldest
// expiry first, and reports how many it deleted.
func (s *Store) SweepExpired(limit int) (int, error) {
	if s.mem != nil {
		return s.mem.sweep(limit)
	}
	if len(s.pending) > 0 && !expired(s.pendingExp, s.Now) {
		// Nothing pending is due: write back only if SQLite has a key
		// that is.
		due := s.prepared(qSweepDue)
		due.int(1, s.Now)
		row, err := due.step()
		due.reset()
		if err != nil || !row {
			return 0, err
		}
	}
	st := s.q(qSweep)
	st.int(1, s.Now)
	st.int(2, int64(limit))
	type gone struct {
		db int
		t  Type
		id int64
	}
	var buf [64]gone
	list := buf[:0]
	for {
		row, err := st.step()
		if err != nil {
			st.reset()
			return 0, err
		}
		if !row {
			break
		}
		db := int(st.colInt(0))
		list = append(list, gone{db, Type(st.colInt(1)), st.colInt(2)})
		s.scratch = st.colBlob(3, s.scratch[:0])
		s.cache.drop(db, s.scratch)
		s.record(db, s.scratch, Expired, 0)
	}
	st.reset()
	for _, g := range list {
		s.dirty = true
		s.keyDeltas[g.db]--
		if err := s.dropElements(g.t, g.id); err != nil {
			return 0, err
		}
	}
	return len(list), nil
}

// FlushDB deletes every key of db.
func (s *Store) FlushDB(db int) error {
	if s.mem != nil {
		s.mem.flushDB(db)
		return nil
	}
	s.cache.clear()
	if err := s.dropAllElements(db); err != nil {
		return err
	}
	st := s.q(qFlushDB)
	st.int(1, int64(db))
	if err := st.exec(); err != nil {
		return err
	}
	s.dirty = true
	s.keyDeltas[db] = -s.keyCounts[db]
	s.record(db, nil, Flushed, 0)
	return nil
}

// dropAllElements removes the elements of every collection in db.
func (s *Store) dropAllElements(db int) error {
	if err := s.dropAllLists(db); err != nil {
		return err
	}
	if err := s.dropAllStreams(db); err != nil {
		return err
	}
	if err := s.dropAllCollElements(db); err != nil {
		return err
	}
	return s.loadFieldExpiries() // the flushed hashes leave hfe

}

// SwapDB exchanges the contents of two databases.
func (s *Store) SwapDB(a, b int) error {
	if s.mem != nil {
		s.mem.swapDB(a, b)
		return nil
	}
	if a == b {
		return nil
	}
	s.cache.clear()
	// Three moves through a database number no client can select: SQLite
	// checks (db, key) uniqueness row by row, so a one-statement swap would
	// collide on keys present in both.
	const parked = -1
	for _, mv := range [][2]int{{a, parked}, {b, a}, {parked, b}} {
		st := s.q(qMoveDB)
		st.int(1, int64(mv[0]))
		st.int(2, int64(mv[1]))
		if err := st.exec(); err != nil {
			return err
		}
	}
	s.dirty = true
	ca, cb := s.DBSize(a), s.DBSize(b)
	s.keyDeltas[a] += cb - ca
	s.keyDeltas[b] += ca - cb
	s.record(a, nil, Swapped, b)
	return nil
}

// Peek reports whether key has a row in db and whether that row's expiry
// has passed at Now (stale), without expiring it or recording anything:
// WATCH looks at a key this way, as Redis's keyIsExpired does.
func (s *Store) Peek(db int, key []byte) (present, stale bool, err error) {
	if s.mem != nil {
		return s.mem.peek(db, key)
	}
	st := s.qKey(qLookup, db, key)
	row, err := st.step()
	if err != nil || !row {
		st.reset()
		return false, false, err
	}
	at := st.colInt(2)
	st.reset()
	return true, expired(at, s.Now), nil
}
