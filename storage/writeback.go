package storage

import (
	"fmt"
	"regexp"
	"strings"
)

// Write-back of collection key rows.
//
// A write to a hash, set or sorted set used to cost three B-tree
// operations: find the key's row (id, type, count), change the element,
// and store the new count and version in the key's row. The element is the
// only one a Redis user asked for. So the hot cache (cache.go) keeps the key
// rows of recently used collections, and EndCommand stores a new count and
// version in the cached row, marking it pending, instead of in SQLite. A
// command on a hot collection then costs one B-tree operation. Lists are
// cached with their first and last positions (which cost two more index
// descents to find), so a push or pop on a hot list is one B-tree
// operation too; a list's pending row is just its version. A SET of a
// cached string (the hot cache holds its value anyway) keeps the new value,
// expiry and version pending the same way: a hot key written many times
// between flushes reaches SQLite once.
//
// The pending rows reach SQLite before anything could see SQLite's copy:
//   - before any statement that reads or writes the keys table (every query
//     is classified when it is declared, below, so a new query cannot
//     forget), which covers every key-level command, SCAN, the sweeper,
//     FLUSHDB, SWAPDB and the snapshot queries; except that a statement on
//     one key's row alone (Store.qKey: a lookup, SET's insert or update, a
//     delete, an expiry) writes back first only if that row may be behind:
//     its entry is pending, or a pending entry has left the cache, whose
//     key no lookup can tell (hotCache.stale). Eviction spares pending
//     entries while it can (spareRotations), so pending rows wait for the
//     flush and a key written many times in between is written once;
//   - before Commit and before a Savepoint, so what is committed, and what
//     an Undo restores, is complete.
//
// A rollback, or an Undo (which follows a Savepoint, so everything pending
// then was written after it), discards them with the rest of the cache. A
// pending row that leaves the cache (evicted, dropped by another write)
// stays in the pending list and is written all the same; the write names
// the row's id too, so it can never land on a key re-created since.

var (
	qSaveCollRow = newQuery("UPDATE keys SET value = ?4, version = ?5 WHERE db = ?1 AND key = ?2 AND id = ?3")
	qSaveListRow = newQuery("UPDATE keys SET version = ?5 WHERE db = ?1 AND key = ?2 AND id = ?3")
	qSaveString  = newQuery("UPDATE keys SET value = ?3, expire_at = nullif(?4, 0), version = ?5 WHERE db = ?1 AND key = ?2 AND type = 1")

	// readsKeys matches SQL that reads or writes the keys table, or ends or
	// marks a transaction.
	readsKeys = regexp.MustCompile(`(?i)\bkeys\b|^\s*(BEGIN|COMMIT|SAVEPOINT|RELEASE|ROLLBACK)\b`)
)

// needsRows reports whether sql must see the pending rows written first.
func needsRows(sql string) bool { return readsKeys.MatchString(strings.TrimSpace(sql)) }

// pend marks e's count and version as ahead of SQLite.
func (s *Store) pend(e *centry, n, version int64) {
	e.n, e.version = n, version
	if e.exp != 0 && (s.pendingExp == 0 || e.exp < s.pendingExp) {
		s.pendingExp = e.exp // the sweeper's cue (SweepExpired)
	}
	if !e.pending {
		e.pending = true
		s.pendSeq++
		e.pseq = s.pendSeq
		s.pending = append(s.pending, e)
		if e.gone {
			// Evicted while its command ran: a lookup must still find
			// its key stale (hotCache.stale).
			s.cache.pendingGone(e)
		}
	}
}

// abandoned reports whether SQLite abandoned the open transaction after a
// failure: writing now would commit on its own, and the caller's rollback
// discards it all. It waits for a flush that has the connection.
func (s *Store) abandoned() bool { return s.inTx && s.c.autocommit() }

// writeBack stores every pending row in SQLite.
func (s *Store) writeBack() error {
	s.c.ready() // a flush landing now must not swap s.spare under us
	if s.abandoned() {
		s.discardPending()
		return nil
	}
	b := &s.spare
	err := s.freezePending(b, false)
	if err == nil {
		err = b.write(s.prepared, s.c, false)
	}
	b.reset()
	return err
}

// saveString writes a cached string's pending value, expiry and version to
// its row, moving the blob ref of the value it replaces to the garbage, or
// inserts the row of a pending insert.
func (s *Store) saveString(e *centry) error {
	db, key := int64(e.k[0]), []byte(e.k[1:])
	if e.insert {
		st := s.prepared(qInsertString)
		st.int(1, db)
		st.blob(2, key)
		st.int(3, e.id)
		st.int(4, e.exp)
		st.int(5, e.version)
		ref, err := s.bindValue(st, 6, e.v, len(key))
		if err != nil {
			st.reset()
			return err
		}
		if err := st.exec(); err != nil {
			return err
		}
		e.insert, e.ref = false, ref != 0
		return nil
	}
	if e.ref {
		st := s.prepared(qKeepKeyRef)
		st.int(1, db)
		st.blob(2, key)
		if err := st.exec(); err != nil {
			return err
		}
	}
	st := s.prepared(qSaveString)
	st.int(1, db)
	st.blob(2, key)
	ref, err := s.bindValue(st, 3, e.v, len(key))
	if err != nil {
		st.reset()
		return err
	}
	st.int(4, e.exp)
	st.int(5, e.version)
	if err := st.exec(); err != nil {
		return err
	}
	if s.c.changes() != 1 {
		// The cache said a live string was there: a bug, refused loudly
		// rather than written anywhere else.
		s.dropBlob(ref)
		return fmt.Errorf("storage: write-back found no string row for cached key %q", key)
	}
	e.ref = ref != 0
	return nil
}

// discardPending forgets the pending rows: the transaction that made them
// is being rolled back (or the part of it after a Savepoint undone).
func (s *Store) discardPending() {
	for i, e := range s.pending {
		e.pending = false
		e.lstale, e.rstale = 0, 0 // undone: the rows are the list's again
		s.pending[i] = nil
	}
	s.pending = s.pending[:0]
	s.pendingExp = 0
	s.cache.written()
	s.discardElems()
}

// Overlay is what waits in memory for the next flush (INFO persistence's
// overlay_*): the key rows ahead of SQLite (they live in the hot cache),
// the pending elements, and the bytes of both.
func (s *Store) Overlay() (rows, elems int, bytes int64) {
	bytes = s.elemBytes
	for _, e := range s.pending {
		bytes += e.size()
	}
	return s.PendingRows(), len(s.elems), bytes
}

// PendingRows is how many collection key rows are ahead of SQLite.
func (s *Store) PendingRows() int { return len(s.pending) }
