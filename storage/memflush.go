package storage

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cellar-db/cellar/storage/object"
)

// The engine's flush: the actor freezes the batch (startFlush), an offload
// job writes it in one transaction of the flush's own connection (run), and
// the actor takes the outcome back (land). A flush that fails is written
// again, whole and first, by the next one: the batch is immutable and the
// memory holds everything after it, so nothing is redone from the log.

// dbCount is a database's key count, stored by a flush in dbstats.
type dbCount struct{ db, n int64 }

// memFlight is one flush: the batch, frozen, and what it covers.
type memFlight struct {
	gen    uint64
	steps  []memStep
	pos    uint64    // the redo log position it makes SQLite cover
	counts []dbCount // the key counts to store
	mark   int64     // the version high-water mark to store; 0: none
	fresh  []*entry  // the fresh entries it writes (memkeyspace.go)
	// pres and nextPres are the presence filters as it was frozen: an
	// import adds the names it writes to them (physical.go).
	pres, nextPres *presence
	done           chan struct{}
	err            error
	took           time.Duration
}

// addPresence puts the names of the new rows f writes into the presence
// filters it was frozen with, before its commit: a name is in them before
// its row is, and until that commit lands its entry stays in memory, so
// no load asks the filters about it. On the flush's goroutine, so that a
// freeze after a bulk load, on the actor, does not pay for a million
// names' eight bits each.
func (f *memFlight) addPresence() {
	for _, st := range f.steps {
		if st.seg == nil {
			continue
		}
		for i := range st.seg.keys {
			k := &st.seg.keys[i]
			if k.typ == TypeNone || k.is(frozenInPlace) {
				continue
			}
			name := k.key()
			f.pres.add(name)
			if f.nextPres != nil {
				f.nextPres.add(name)
			}
		}
	}
}

// Pre-freezing. A freeze runs on the actor and touches every entry that
// changed since the last one: after a bulk load, while the flush before it
// ran for seconds, half a million of them, in one round of several
// hundred milliseconds that every client waits out. So while a flight is
// under way, the end of each round freezes the oldest changes already
// (preFreeze, at most preFreezeMost entries a round once preFreezeAt
// wait): segments for the next flight, which its own freeze then only
// completes. A key changed again after it was frozen early is frozen
// again and written twice, so pre-freezing starts only past a number of
// changed keys that a working set of hot keys rarely reaches between two
// flushes (at 4 096, -P 16 HSET over 100 000 keys ran at 0.6× the speed
// of none), and what it bounds is the freeze of a bulk load's new keys:
// the longest round after loading 1 M keys went from 490-566 ms to
// 116-143 ms (two runs each). A batch frozen in parts writes its segments in order, as
// one frozen whole (a database operation splits it so too); what a part
// cannot be is a key whose row is written before the deletion of the
// row that held its id before it (writeSegment deletes first within a
// segment): so after a RENAME or MOVE (moveTo) nothing is frozen early
// until the next whole freeze.
const (
	preFreezeAt   = 128 << 10
	preFreezeMost = 16 << 10
)

// PreFreeze freezes, while a flush is under way, the oldest changes of the
// batch the next one will write, once enough of them wait (preFreeze). On
// the actor, at the end of a round.
func (s *Store) PreFreeze() { s.mem.preFreeze(preFreezeAt, preFreezeMost) }

// preFreeze freezes, with a flight under way and at least atLeast changed
// entries waiting, up to most of them (the oldest of each database first)
// into a segment of the next flight's batch.
func (m *memEngine) preFreeze(atLeast, most int) {
	if m.flight == nil || m.moved {
		return
	}
	if n := m.dirtyCount(); n == 0 || n < atLeast {
		return
	}
	m.steps = append(m.steps, memStep{seg: m.freezeDirty(most)})
}

// hasWork reports whether anything changed since the last freeze.
func (m *memEngine) hasWork() bool {
	if len(m.steps) > 0 || len(m.drops) > 0 {
		return true
	}
	for _, d := range m.dbs {
		if len(d.dirty) > 0 {
			return true
		}
	}
	return false
}

// startFlush freezes the batch for a flush covering the log up to pos; nil
// when nothing changed (no flush, no disk write) or a flush is under way.
// The caller runs f on the offload pool (run), then lands it on the actor.
func (m *memEngine) startFlush(pos uint64, force bool) *memFlight {
	if m.flight != nil || !(m.hasWork() || force) {
		return nil
	}
	m.growPresence()
	m.freezeSegment()
	if pos != 0 {
		m.pos = pos // the log's position (0: the last stored, for a Store without a log)
	}
	pos = m.pos
	f := &memFlight{gen: m.gen, steps: m.steps, pos: pos, fresh: m.freshFrozen, pres: m.pres, nextPres: m.nextPres, done: make(chan struct{})}
	for _, e := range f.fresh {
		if e.is(flagFresh) && e.freshPar != 0 {
			e.freshPar = genParity(f.gen) // a failed flight's, written again by this one
		}
	}
	m.steps, m.freshFrozen = nil, nil
	m.gen++
	for _, d := range m.dbs {
		f.counts = append(f.counts, dbCount{int64(d.num), d.count})
	}
	if s := m.s; s.version > s.versionMark {
		f.mark = s.version + versionBlock
	}
	m.freezeImport(f)
	m.flight = f
	return f
}

// run writes f in one transaction of w and commits it under readMu, then
// checkpoints when the WAL is due. It runs on the offload pool and touches
// nothing of the actor's but f. The flight is done (the actor may land it,
// and start the next) before the checkpoint: an actor waiting for room
// (back-pressure) waits for the commit, not for the checkpoint, which the
// next flight waits out on its own goroutine (wMu).
func (m *memEngine) run(f *memFlight) {
	m.wMu.Lock()
	defer m.wMu.Unlock()
	began := time.Now()
	f.err = m.write(f)
	f.took = time.Since(began)
	close(f.done)
	if f.err == nil {
		m.checkpoint()
	}
}

// sizeCache sizes the flush's page cache to the database before a flush
// (flushCacheKB).
func (m *memEngine) sizeCache(w *sqlc) error {
	st := w.q("PRAGMA page_count")
	row, err := st.step()
	if err != nil {
		return err
	}
	var pages int64
	if row {
		pages = st.colInt(0)
	}
	st.reset()
	kb := flushCacheKB(pages, m.s.cacheKB)
	if kb == m.cacheKB {
		return nil
	}
	if err := w.c.exec(fmt.Sprintf("PRAGMA cache_size = -%d", kb)); err != nil {
		return err
	}
	m.cacheKB = kb
	return nil
}

// flushCacheKB is the flush's page cache, in KiB, for a database of pages
// 4 KiB pages: a 32nd of the file — the B-trees' interior pages are about
// a hundredth of them, and what the flush rewrites of the leaves it reads
// again from the OS's cache — as a power of two from 4 MiB, and never
// more than most (Options.CacheKB). Measured with 1 M keys (a 120 MB file)
// loaded: the 32 MiB a smaller file filled cost 30 MB of resident memory,
// and a fixed 4 MiB left -P 16 SET and HSET over 100 000 keys as fast (4
// rounds, medians within 2%).
func flushCacheKB(pages int64, most int) int {
	kb := 4 << 10
	for int64(kb) < pages*4/32 && kb < most {
		kb *= 2
	}
	return min(kb, most)
}

func (m *memEngine) write(f *memFlight) (err error) {
	w := m.w
	if n := m.maxPages.Load(); n != m.pagesSet {
		if err := w.c.exec(fmt.Sprintf("PRAGMA max_page_count = %d", n)); err != nil {
			return err
		}
		m.pagesSet = n
	}
	if err := m.sizeCache(w); err != nil {
		return err
	}
	if imp := f.swapImport(); imp != nil {
		if done, err := m.swapIn(w, f, imp); done || err != nil {
			return err
		}
	}
	f.addPresence()
	schemas, detach, err := attachImports(w, f)
	if err != nil {
		return err
	}
	defer detach()
	if err := w.q("BEGIN IMMEDIATE").exec(); err != nil {
		return err
	}
	defer func() {
		if err != nil && !w.c.autocommit() {
			w.q("ROLLBACK").exec()
		}
	}()
	for _, st := range f.steps {
		switch {
		case st.op != nil && st.op.kind == dbImport:
			err = writeImport(w, f, st.op.imp, schemas[st.op.imp])
		case st.op != nil:
			err = writeDBOp(w, st.op)
		default:
			err = writeSegment(w, st.seg)
		}
		if err != nil {
			return err
		}
	}
	for _, c := range f.counts {
		st := w.q("INSERT INTO dbstats (db, keys) VALUES (?1, ?2) ON CONFLICT (db) DO UPDATE SET keys = excluded.keys WHERE keys <> excluded.keys")
		st.int(1, c.db)
		st.int(2, c.n)
		if err := st.exec(); err != nil {
			return err
		}
	}
	if f.mark != 0 {
		st := w.q("UPDATE counters SET value = ?1 WHERE name = 'version'")
		st.int(1, f.mark)
		if err := st.exec(); err != nil {
			return err
		}
	}
	st := w.q("UPDATE counters SET value = ?1 WHERE name = 'redo_position'")
	st.int(1, int64(f.pos))
	if err := st.exec(); err != nil {
		return err
	}
	if err := w.freeGarbage(); err != nil {
		return err
	}
	// The transaction's pages go to the WAL before readMu is taken, so
	// that the loads, which wait for readMu, wait only for the commit
	// frame (a flush of 16 MB held them for 100s of ms).
	if err := w.c.cacheFlush(); err != nil {
		return err
	}
	m.readMu.Lock()
	if err := w.q("COMMIT").exec(); err != nil {
		m.readMu.Unlock()
		return err
	}
	m.committed.Store(f.gen)
	for _, c := range f.counts {
		m.sqlKeys[c.db] = c.n
	}
	m.readMu.Unlock()
	return nil
}

// checkpoint copies the WAL into the database once it has grown past
// ckptBytes, and starts it over (TRUNCATE): the flush's connection is the
// only writer, so nothing else writes meanwhile; a load's short read waits
// it out through busy_timeout. A checkpoint that cannot finish (a reader
// held on) is tried again after the next flush: the commit stands either
// way.
func (m *memEngine) checkpoint() {
	if m.s.WALSize() <= m.ckptBytes {
		return
	}
	m.checkpointing.Store(true)
	began := time.Now()
	if err := m.w.c.exec("PRAGMA wal_checkpoint(TRUNCATE)"); err == nil {
		m.checkpoints.Add(1)
		if fn := m.s.OnCheckpoint; fn != nil {
			fn(time.Since(began))
		}
	}
	m.checkpointing.Store(false)
}

// Checkpointing reports whether the in-memory engine's flush is
// checkpointing the WAL right now (INFO's checkpoint_in_progress). Any
// goroutine.
func (s *Store) Checkpointing() bool {
	return s.mem.checkpointing.Load()
}

// writeSegment writes one segment: the dead objects' elements go, then
// the deleted keys' rows, then every other key's row and elements in key
// order (neighbouring rows share pages). Deletions go first because a
// renamed key's new row carries its old row's id: written first, its
// REPLACE would delete the old row through keys_by_id, and the blob that
// row refers to would never reach blob_garbage.
func writeSegment(w *sqlc, seg *memSegment) error {
	gone := func(k frozenKey) int {
		if k.typ == TypeNone {
			return 1
		}
		return 0
	}
	for _, d := range seg.drops {
		if err := dropRows(w, d.typ, d.id); err != nil {
			return err
		}
	}
	// The order is sorted rather than the keys themselves: a frozenKey is
	// 56 bytes, and moving them was a quarter of a large flush.
	type place struct {
		key  string
		rank int32 // deletions first, then by database
		i    int32
	}
	order := make([]place, len(seg.keys))
	for i := range seg.keys {
		k := &seg.keys[i]
		order[i] = place{k.key(), int32(int(k.db) + allDBs*(1-gone(*k))), int32(i)}
	}
	slices.SortFunc(order, func(a, b place) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), strings.Compare(a.key, b.key))
	})
	batch := make([]*frozenKey, 0, keysBatch)
	for _, o := range order {
		k := &seg.keys[o.i]
		if k.is(frozenInPlace) && !k.is(frozenKeepRef) && k.typ != TypeNone {
			if batch = append(batch, k); len(batch) == keysBatch {
				if err := writeKeysInPlace(w, batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
			continue
		}
		if err := writeKey(w, k); err != nil {
			return err
		}
	}
	for _, k := range batch { // the tail, one statement each
		if err := writeKey(w, k); err != nil {
			return err
		}
	}
	return nil
}

// keysBatch is how many rows updated in place one statement writes: a
// statement's own cost (its binds, step, reset and halt, a third of a
// row's cost in the flush's profile) is paid once for all of them.
const keysBatch = 32

// keysInPlace is the upsert of keysBatch rows SQLite holds under the same
// names and ids. No trigger frees a blob ref a row lets go of (migration
// 7 dropped keys_blob_replaced): a row that holds one is written by
// writeKey, which moves the ref to blob_garbage first.
var keysInPlace = "INSERT INTO keys (db, key, id, type, expire_at, version, value) VALUES " +
	valuesRows("(?%d, ?%d, ?%d, ?%d, nullif(?%d, 0), ?%d, ?%d)", keysBatch) +
	" ON CONFLICT (db, key) DO UPDATE SET type = excluded.type, expire_at = excluded.expire_at, version = excluded.version, value = excluded.value"

// writeKeysInPlace writes keysBatch rows updated in place, then their
// objects' changes.
func writeKeysInPlace(w *sqlc, ks []*frozenKey) error {
	st := w.q(keysInPlace)
	for i, k := range ks {
		if err := bindKeyRow(w, st, i*7, k); err != nil {
			st.reset()
			return err
		}
	}
	if err := st.exec(); err != nil {
		return err
	}
	for _, k := range ks {
		if d := k.delta(); d != nil {
			if err := writeDelta(w, k.typ, k.id, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// bindKeyRow binds k's keys row as parameters at+1 .. at+7 of st.
func bindKeyRow(w *sqlc, st *stmt, at int, k *frozenKey) error {
	st.int(at+1, int64(k.db))
	st.blob(at+2, bytesOf(k.key()))
	st.int(at+3, k.id)
	st.int(at+4, int64(k.typ))
	st.int(at+5, k.exp)
	st.int(at+6, k.ver)
	switch k.typ {
	case TypeString:
		_, err := w.bindValue(st, at+7, bytesOf(k.str()), int(k.klen))
		return err
	case TypeList:
		st.null(at + 7) // a list's length is its rows' (lists.go)
	default:
		st.int(at+7, k.coll.count)
	}
	return nil
}

func writeKey(w *sqlc, k *frozenKey) error {
	if k.is(frozenKeepRef) {
		err := w.keepRefs("SELECT value FROM keys WHERE db = ?1 AND key = ?2 AND type = 1", func(st *stmt) {
			st.int(1, int64(k.db))
			st.blob(2, bytesOf(k.key()))
		})
		if err != nil {
			return err
		}
	}
	if k.typ == TypeNone {
		if !k.is(frozenDel) {
			return nil
		}
		st := w.q("DELETE FROM keys WHERE db = ?1 AND key = ?2")
		st.int(1, int64(k.db))
		st.blob(2, bytesOf(k.key()))
		return st.exec()
	}
	// A row SQLite has under the same id is updated in place: REPLACE
	// would delete it and insert it again, through every index.
	q := "INSERT OR REPLACE INTO keys (db, key, id, type, expire_at, version, value) VALUES (?1, ?2, ?3, ?4, nullif(?5, 0), ?6, ?7)"
	if k.is(frozenInPlace) {
		q = "UPDATE keys SET type = ?4, expire_at = nullif(?5, 0), version = ?6, value = ?7 WHERE db = ?1 AND key = ?2 AND id = ?3"
	}
	st := w.q(q)
	if err := bindKeyRow(w, st, 0, k); err != nil {
		st.reset()
		return err
	}
	if err := st.exec(); err != nil {
		return err
	}
	if k.is(frozenInPlace) && w.c.changes() != 1 {
		return fmt.Errorf("storage: the flush found no row for key %q (id %d) to update", k.key(), k.id)
	}
	d := k.delta()
	if d == nil {
		return nil
	}
	return writeDelta(w, k.typ, k.id, d)
}

// writeDelta writes what changed in object id of type t.
func writeDelta(w *sqlc, t Type, id int64, d any) error {
	switch d := d.(type) {
	case *object.Delta:
		return flushElems(w, tableOf(t), id, d)
	case *object.ListDelta:
		return flushList(w, id, d)
	case *object.StreamDelta:
		return flushStream(w, id, d)
	}
	return errors.New("storage: flushing changes of an unknown kind")
}

func tableOf(t Type) *elemTable {
	switch t {
	case TypeHash:
		return hashTable
	case TypeSet:
		return setTable
	case TypeZSet:
		return zsetTable
	}
	return nil
}

// dropRows deletes every element row of object id of type t.
func dropRows(w *sqlc, t Type, id int64) error {
	if tbl := tableOf(t); tbl != nil {
		return dropElems(w, tbl, id)
	}
	switch t {
	case TypeList:
		return dropList(w, id)
	case TypeStream:
		return dropStream(w, id)
	}
	return errors.New("storage: dropping the rows of an object of an unknown type")
}

// The element tables by type, for the database operations.
var typeTables = []struct {
	typ    Type
	tables []string
	refs   string // the table whose value column may hold refs no trigger frees
}{
	{TypeString, nil, ""},
	{TypeList, []string{"list_items"}, "list_items"},
	{TypeHash, []string{"hashes"}, ""}, // hash_blob_deleted frees them
	{TypeSet, []string{"sets"}, ""},
	{TypeZSet, []string{"zsets"}, ""},
	{TypeStream, []string{"stream_entries", "stream_groups", "stream_consumers", "stream_pel", "streams"}, ""},
}

// writeDBOp applies a FLUSHDB or SWAPDB to SQLite's rows.
func writeDBOp(w *sqlc, op *memDBOp) error {
	if op.kind == dbSwap {
		for _, mv := range [][2]int{{op.a, -1}, {op.b, op.a}, {-1, op.b}} {
			st := w.q("UPDATE keys SET db = ?2 WHERE db = ?1")
			st.int(1, int64(mv[0]))
			st.int(2, int64(mv[1]))
			if err := st.exec(); err != nil {
				return err
			}
		}
		return nil
	}
	bind := func(st *stmt) { st.int(1, int64(op.a)) }
	if err := w.keepRefs("SELECT value FROM keys WHERE db = ?1 AND type = 1", bind); err != nil {
		return err
	}
	for _, tt := range typeTables {
		of := "(SELECT id FROM keys WHERE db = ?1 AND type = " + string(rune('0'+tt.typ)) + ")"
		if tt.refs != "" {
			if err := w.keepRefs("SELECT value FROM "+tt.refs+" WHERE id IN "+of, bind); err != nil {
				return err
			}
		}
		for _, t := range tt.tables {
			st := w.q("DELETE FROM " + t + " WHERE id IN " + of)
			bind(st)
			if err := st.exec(); err != nil {
				return err
			}
		}
	}
	st := w.q("DELETE FROM keys WHERE db = ?1")
	bind(st)
	return st.exec()
}

// land takes back the flight's outcome on the actor; it waits for the
// flight if it is still under way. A failed flight's batch goes first in
// the next one.
func (m *memEngine) land() *memFlight {
	f := m.flight
	if f == nil {
		return nil
	}
	<-f.done
	m.flight = nil
	if f.err != nil {
		m.steps = append(f.steps, m.steps...)
		m.freshFrozen = append(f.fresh, m.freshFrozen...)
		return f
	}
	m.landFresh(f)
	m.landImport(f)
	if f.mark != 0 {
		m.s.versionMark = f.mark
	}
	n := 0
	for _, op := range m.dbops {
		if op.gen > f.gen {
			m.dbops[n] = op
			n++
		}
	}
	m.dbops = m.dbops[:n]
	m.evict()
	return f
}
