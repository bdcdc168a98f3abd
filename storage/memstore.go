package storage

import (
	"errors"
	"fmt"

	sqlite3 "modernc.org/sqlite/lib"
)

// The Store's operations on the engine's entries (memkeys.go): each Store
// method hands over to its version here or in the other mem*.go files.

// errMemUnsupported is an operation the engine does not run through the
// generic collection handle (lists and streams have operations of their
// own).
var errMemUnsupported = errors.New("storage: not supported on this type through a collection handle")

// openMem opens the engine's two connections on the Store's file.
func (s *Store) openMem(maxBytes int64) error {
	rc, err := openConn(s.path, sqlite3.SQLITE_OPEN_READONLY)
	if err != nil {
		return err
	}
	wc, err := openConn(s.path, sqlite3.SQLITE_OPEN_READWRITE)
	if err != nil {
		rc.close()
		return err
	}
	// The flush writes rows all over the keys table and the element
	// tables: its cache keeps the B-trees' interior pages and what it can
	// of the leaves it rewrites, sized to the file before each flush
	// (sizeCache), up to Options.CacheKB. The loads off the actor read
	// one key at a time: a quarter of that bound keeps their interior
	// pages (docs/architecture.md, "Storage engine").
	cacheKB := flushCacheKB(0, s.cacheKB)
	if err := wc.exec(fmt.Sprintf("PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = -%d;", cacheKB)); err != nil {
		rc.close()
		wc.close()
		return fmt.Errorf("storage: the flush's connection: %w", err)
	}
	lc, err := openConn(s.path, sqlite3.SQLITE_OPEN_READONLY)
	if err != nil {
		rc.close()
		wc.close()
		return err
	}
	// The actor's reader serves the scans, the expiry sweep and the rare
	// load on the spot: SQLite's default 2 MB cache.
	for _, r := range []struct {
		c  *conn
		kb int
	}{{lc, max(s.cacheKB/4, 2000)}, {rc, 2000}} {
		if err := r.c.exec(fmt.Sprintf("PRAGMA busy_timeout = 5000; PRAGMA cache_size = -%d;", r.kb)); err != nil {
			rc.close()
			wc.close()
			lc.close()
			return fmt.Errorf("storage: the loads' connection: %w", err)
		}
	}
	pos, err := s.RedoPosition()
	if err != nil {
		rc.close()
		wc.close()
		lc.close()
		return err
	}
	s.mem = newMemEngine(s, newSQLC(rc), newSQLC(wc), maxBytes)
	s.mem.cacheKB = cacheKB
	s.mem.ld.r = newSQLC(lc)
	s.mem.pos = pos
	s.mem.ckptBytes = s.ckptBytes
	var keys int64
	for _, n := range s.mem.sqlKeys {
		keys += n
	}
	s.mem.ld.mayMiss = keys > 0
	if err := s.mem.countColdExpiring(); err != nil {
		rc.close()
		wc.close()
		lc.close()
		return err
	}
	s.mem.pres = newPresence(2 * keys)
	s.mem.pres.build(s.path)
	return nil
}

func (m *memEngine) close() {
	m.pres.close()
	if m.nextPres != nil {
		m.nextPres.close()
	}
	m.land()
	m.ld.run.Wait()
	m.wMu.Lock() // a checkpoint after the last flight
	defer m.wMu.Unlock()
	m.r.close()
	m.ld.r.close()
	m.w.close()
}

func (m *memEngine) lookup(db int, key []byte) (Meta, bool, error) {
	e, err := m.live(db, key)
	if err != nil || e == nil {
		return Meta{}, false, err
	}
	return Meta{Type: e.typ, ID: e.id, ExpireAt: m.expOf(e)}, true, nil
}

func (m *memEngine) delete(db int, key []byte) (bool, error) {
	e, err := m.live(db, key)
	if err != nil || e == nil {
		return false, err
	}
	m.remove(e, Deleted)
	return true, nil
}

func (m *memEngine) setExpire(db int, key []byte, at int64) error {
	e, err := m.live(db, key)
	if err != nil || e == nil {
		return err
	}
	m.setExp(e, at)
	e.ver = m.s.nextVersion()
	m.changed(e)
	m.s.record(db, key, ExpiryChanged, 0)
	return nil
}

func (m *memEngine) keyVersion(db int, key []byte) (int64, bool, error) {
	e, err := m.entryAt(db, key)
	if err != nil || e.typ == TypeNone || m.expiredEntry(e) {
		return 0, false, err
	}
	return e.ver, true, nil
}

func (m *memEngine) getString(db int, key, dst []byte) ([]byte, bool, error) {
	e, err := m.live(db, key)
	switch {
	case err != nil || e == nil:
		return dst, false, err
	case e.typ != TypeString:
		return dst, false, ErrWrongType
	}
	return append(dst, e.str()...), true, nil
}

func (m *memEngine) stringLen(db int, key []byte) (int64, bool, error) {
	e, err := m.live(db, key)
	switch {
	case err != nil || e == nil:
		return 0, false, err
	case e.typ != TypeString:
		return 0, false, ErrWrongType
	}
	return int64(len(e.str())), true, nil
}

func (m *memEngine) setString(db int, key, val []byte, expireAt int64, keepTTL bool) error {
	e, err := m.live(db, key)
	if err != nil {
		return err
	}
	if e == nil {
		e = m.dbs[db].keys.get(string(key)) // live made sure it is held
		m.create(e, TypeString)
	} else {
		if e.typ != TypeString {
			m.dropObject(e)
			m.unfresh(e)
			e.typ, e.id = TypeString, m.s.NewID()
			e.set(flagIDStored, false)
			m.markFresh(e)
		}
		if keepTTL {
			expireAt = m.expOf(e)
		}
		e.ver = m.s.nextVersion()
	}
	m.setExp(e, expireAt)
	e.setStr(val)
	m.changed(e)
	m.s.record(db, key, Written, 0)
	return nil
}

func (m *memEngine) dbSize(db int) int64 { return m.dbs[db].count }

// endCommand lets entries go once a command is done with them (never
// during one: it holds entries).
func (m *memEngine) endCommand() {
	if m.max == 0 {
		for _, e := range m.misses {
			if e.typ == TypeNone && m.evictable(e) && m.dbOf(e).keys.get(e.key()) == e {
				m.forget(e)
			}
		}
	}
	clear(m.misses)
	m.misses = m.misses[:0]
	if m.max > 0 && m.bytes > m.max {
		m.evict()
	}
}

// commit is Commit on the engine, for a Store without a redo log: it
// flushes now and waits, so that SQLite holds every write when it returns.
func (m *memEngine) commit() (wrote bool, seq uint64, err error) {
	s := m.s
	if f := m.land(); f != nil && f.err != nil {
		return false, s.commits, f.err
	}
	f := m.startFlush(0, false) // no log: the position stays as it is
	s.inTx = false
	if f == nil {
		return false, s.commits, nil
	}
	m.run(f)
	m.land()
	if f.err != nil {
		return false, s.commits, f.err
	}
	s.commits++
	return true, s.commits, nil
}

// reload flushes everything and lets every key go, so that each is next
// loaded from SQLite (DEBUG RELOAD).
func (m *memEngine) reload() error {
	if f := m.land(); f != nil && f.err != nil {
		return f.err
	}
	if f := m.startFlush(m.pos, true); f != nil {
		m.run(f)
		if f = m.land(); f.err != nil {
			return f.err
		}
	}
	for _, d := range m.dbs {
		d.keys.each(func(e *entry) bool {
			if m.evictable(e) {
				m.forget(e)
			}
			return true
		})
	}
	return nil
}

// OverMemory reports whether the in-memory engine holds more than factor
// times its bound (never without a bound). Only a flush lets changed keys
// go, so the actor starts one once the bound is passed and waits for
// flushes past twice the bound.
func (s *Store) OverMemory(factor int64) bool {
	return s.mem != nil && s.mem.max > 0 && s.mem.bytes > factor*s.mem.max
}

// MemStats reports what the in-memory engine holds: its entries (keys,
// and names known to be absent), their bytes as its bound counts them, the
// bound (0: none), and the keys it has let go for it. Zeros on the SQLite
// engine.
func (s *Store) MemStats() (entries int, bytes, bound int64, evicted uint64) {
	for _, d := range s.mem.dbs {
		entries += d.keys.len()
	}
	return entries, s.mem.bytes, s.mem.max, s.mem.evicted
}

// rollback goes back to SQLite's last commit: every change no flush has
// committed is forgotten, with everything memory holds (the caller redoes
// the rounds since from the redo log, as after a rollback on SQLite). A
// flight under way lands first; one that failed is forgotten too.
func (m *memEngine) rollback() {
	m.land()
	m.steps, m.drops, m.dbops, m.freshFrozen = nil, nil, nil, nil
	if pos, err := m.s.RedoPosition(); err == nil {
		m.pos = pos
	}
	counts := make(map[int]int64)
	m.readMu.Lock()
	st := m.r.q("SELECT db, keys FROM dbstats")
	m.eachRow(st, func() { counts[int(st.colInt(0))] = st.colInt(1) })
	for i := range m.dbs {
		m.dbs[i] = &memDB{num: i, slot: uint8(i), keys: newKeyTable(), count: counts[i], fresh: newFresh(), expires: make(map[*entry]int64)}
		m.slots[i] = m.dbs[i]
		m.sqlKeys[i] = counts[i]
	}
	m.hfe = make(map[*entry]int64)
	m.huge = make(map[*entry]int64)
	m.bytes = 0
	m.ld.epoch++ // what the loads under way read may be newer than this
	m.ld.mayMiss = true
	m.countColdExpiring() // as the counts above: a failed read leaves 0
}
