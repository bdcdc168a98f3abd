package storage

import (
	"bytes"
	"math/rand/v2"
	"slices"

	"github.com/cellar-db/cellar/storage/object"
)

// The whole keyspace on the in-memory engine: what walks every key (SCAN,
// KEYS, RANDOMKEY, the expiry sweep) sees SQLite's last commit and memory as
// one keyspace, memory winning for every name it holds; and the database
// operations (FLUSHDB, SWAPDB) and the key moves (RENAME, MOVE, COPY).
//
// A key whose row SQLite's last commit may not hold under its name and id
// (created, renamed, moved or copied since, or given a new id) is in its
// database's fresh index, by id, so that SCAN finds it in id order; it
// leaves the index once the flush that wrote it has landed.

// freshKey is an entry of a database's fresh index.
type freshKey struct {
	id int64
	e  *entry
}

// markFresh puts e in its database's fresh index under its id (it has a
// new name, database or id).
func (m *memEngine) markFresh(e *entry) {
	m.unfresh(e)
	e.set(flagFresh, true)
	e.freshPar = 0
	m.dbOf(e).fresh.add(freshKey{id: e.id, e: e})
}

// unfresh takes e out of the fresh index. An entry's id changes only once
// it is out of it (newKey, setString, moveTo call unfresh first), so it is
// found under its id; were it not, a walk of the index finds it, and
// freshMissed counts it for the tests.
func (m *memEngine) unfresh(e *entry) {
	if !e.is(flagFresh) {
		return
	}
	e.set(flagFresh, false)
	if m.dbOf(e).fresh.remove(e.id, e) {
		return
	}
	m.freshMissed++
	m.dbOf(e).fresh.removeAny(e)
}

// genParity is what an entry keeps of a flush generation (freshPar).
func genParity(gen uint64) uint8 { return uint8(gen&1) + 1 }

// landFresh takes out of the fresh index the entries whose rows the flight
// f wrote.
func (m *memEngine) landFresh(f *memFlight) {
	for _, e := range f.fresh {
		if e.is(flagFresh) && e.freshPar == genParity(f.gen) {
			m.unfresh(e)
		}
	}
}

// sqlRow is a keys row a walk read from SQLite.
type sqlRow struct {
	id  int64
	key []byte
	typ Type
	exp int64
}

// readRows runs a walk's statement on the reader, binding the view's
// database as ?1 (and what bind adds), and returns its rows (id, key, type,
// expire_at). An emptied database has none.
func (m *memEngine) readRows(db int, sql string, bind func(st *stmt)) ([]sqlRow, error) {
	m.readMu.Lock()
	sqlDB, empty := m.view(db, m.committed.Load())
	if empty {
		m.readMu.Unlock()
		return nil, nil
	}
	st := m.r.q(sql)
	st.int(1, int64(sqlDB))
	if bind != nil {
		bind(st)
	}
	var rows []sqlRow
	err := m.eachRow(st, func() {
		rows = append(rows, sqlRow{id: st.colInt(0), key: st.colBlob(1, nil), typ: Type(st.colInt(2)), exp: st.colInt(3)})
	})
	return rows, err
}

// eachRow steps st, a statement of the reader, to its end, calling fn on
// each row, and resets it. The caller holds readMu, which eachRow lets go
// once the first step has taken the read's snapshot (memkeys.go).
func (m *memEngine) eachRow(st *stmt, fn func()) error {
	defer st.reset()
	first := true
	for {
		row, err := st.step()
		if first {
			m.readMu.Unlock()
			first = false
		}
		if err != nil || !row {
			return err
		}
		fn()
	}
}

// shadowed reports whether memory decides about SQLite's row r of db: it
// holds the name (whatever it holds now is the truth), or moved r's key
// away.
func (m *memEngine) shadowed(db int, r *sqlRow) bool {
	return m.dbs[db].keys.get(string(r.key)) != nil
}

func (m *memEngine) scan(db int, cursor uint64, count int, out []ScanEntry) ([]ScanEntry, uint64, error) {
	count = max(count, 1)
	rows, err := m.readRows(db, "SELECT id, key, type, coalesce(expire_at, 0) FROM keys WHERE db = ?1 AND id > ?2 ORDER BY id LIMIT ?3", func(st *stmt) {
		st.int(2, int64(cursor))
		st.int(3, int64(count))
	})
	if err != nil {
		return out, 0, err
	}
	// Up to count entries of the fresh index past the cursor.
	var fresh []freshKey
	m.dbs[db].fresh.ascend(int64(cursor)+1, func(k freshKey) bool {
		fresh = append(fresh, k)
		return len(fresh) < count
	})
	// Only ids up to the smaller of the two pages' last are known whole.
	bound := int64(-1)
	if len(rows) == count {
		bound = rows[len(rows)-1].id
	}
	if len(fresh) == count && (bound < 0 || fresh[len(fresh)-1].id < bound) {
		bound = fresh[len(fresh)-1].id
	}
	type cand struct {
		id  int64
		key []byte
		typ Type
	}
	var cands []cand
	for i := range rows {
		r := &rows[i]
		if bound >= 0 && r.id > bound {
			continue
		}
		if e := m.dbs[db].keys.get(string(r.key)); e != nil {
			// Memory decides: the key as it is now, if it still has the
			// row's id (under another, it is in the fresh index).
			if e.typ != TypeNone && e.id == r.id && !e.is(flagFresh) && !m.expiredEntry(e) {
				cands = append(cands, cand{r.id, r.key, e.typ})
			}
			continue
		}
		if !expired(r.exp, m.s.Now) {
			cands = append(cands, cand{r.id, r.key, r.typ})
		}
	}
	for _, k := range fresh {
		e := k.e
		if (bound >= 0 && k.id > bound) || e.typ == TypeNone || e.id != k.id || m.expiredEntry(e) {
			continue
		}
		cands = append(cands, cand{k.id, []byte(e.key()), e.typ})
	}
	slices.SortFunc(cands, func(a, b cand) int { return int(max(min(a.id-b.id, 1), -1)) })
	for _, c := range cands {
		out = append(out, ScanEntry{Key: c.key, Type: c.typ})
	}
	if bound < 0 {
		return out, 0, nil
	}
	return out, uint64(bound), nil
}

// keys calls fn with every live key of db starting with prefix: SQLite's
// that memory does not hold, then memory's, each part in key order.
func (m *memEngine) keys(db int, prefix []byte, fn func(key []byte) bool) error {
	sql, bind := "SELECT id, key, type, coalesce(expire_at, 0) FROM keys WHERE db = ?1", (func(*stmt))(nil)
	if len(prefix) > 0 {
		sql += " AND key >= ?2 ORDER BY key"
		bind = func(st *stmt) { st.blob(2, prefix) }
	}
	rows, err := m.readRows(db, sql, bind)
	if err != nil {
		return err
	}
	var all [][]byte
	for i := range rows {
		r := &rows[i]
		if len(prefix) > 0 && !bytes.HasPrefix(r.key, prefix) {
			break
		}
		if !m.shadowed(db, r) && !expired(r.exp, m.s.Now) {
			all = append(all, r.key)
		}
	}
	m.dbs[db].keys.each(func(e *entry) bool {
		if e.typ != TypeNone && !m.expiredEntry(e) && bytes.HasPrefix(bytesOf(e.key()), prefix) {
			all = append(all, []byte(e.key()))
		}
		return true
	})
	if len(prefix) > 0 {
		slices.SortFunc(all, bytes.Compare)
	}
	for _, k := range all {
		if !fn(k) {
			return nil
		}
	}
	return nil
}

// randomKey picks a live key of db: from memory or SQLite in proportion to
// what each holds (roughly: memory's share is the entries it holds).
func (m *memEngine) randomKey(db int) ([]byte, bool, error) {
	d := m.dbs[db]
	for tries := 0; tries < 100; tries++ {
		if n := d.keys.len(); n > 0 && (d.count == 0 || rand.Int64N(max(d.count, 1)) < int64(n)) {
			var pick *entry
			d.keys.sample(func(e *entry) bool { pick = e; return false })
			if pick.typ != TypeNone && !m.expiredEntry(pick) {
				return []byte(pick.key()), true, nil
			}
			continue
		}
		rows, err := m.readRows(db, "SELECT min(id), '', 0, 0 FROM keys WHERE db = ?1 UNION ALL SELECT max(id), '', 0, 0 FROM keys WHERE db = ?1", nil)
		if err != nil || len(rows) < 2 || rows[1].id < rows[0].id {
			return nil, false, err
		}
		lo, hi := rows[0].id, rows[1].id
		pick, err := m.readRows(db, "SELECT id, key, type, coalesce(expire_at, 0) FROM keys WHERE db = ?1 AND id >= ?2 ORDER BY id LIMIT 1", func(st *stmt) {
			st.int(2, lo+rand.Int64N(hi-lo+1))
		})
		if err != nil {
			return nil, false, err
		}
		if len(pick) == 1 && !m.shadowed(db, &pick[0]) && !expired(pick[0].exp, m.s.Now) {
			return pick[0].key, true, nil
		}
		if d.keys.len() == 0 && d.count == 0 {
			return nil, false, nil
		}
	}
	return nil, false, nil
}

// dueRow is a row of SQLite's last commit past its expiry, with the
// database that holds it now.
// The expiry sweeps' reads of SQLite's due keys and hash fields, through
// the partial indexes keys_by_expiry and hashes_by_expiry. SQLite uses a
// partial index only for a query that says its condition: "expire_at <
// ?1" alone does not, and the hashes' read scanned the whole table on the
// actor every sweep (TestSweepReadsUseTheExpiryIndexes).
const (
	sqlDueKeys    = "SELECT id, key, type, expire_at, db FROM keys WHERE expire_at < ?1 AND expire_at IS NOT NULL AND db < 16 ORDER BY expire_at LIMIT ?2"
	sqlDueHashIDs = "SELECT DISTINCT id FROM hashes WHERE expire_at < ?1 AND expire_at IS NOT NULL LIMIT ?2"
	// The keys with an expiry in each database, at start: through the
	// index, or SQLite reads every key row.
	sqlExpiringByDB = "SELECT db, count(*) FROM keys INDEXED BY keys_by_expiry WHERE expire_at IS NOT NULL GROUP BY db"
)

type dueRow struct {
	db int
	sqlRow
}

// dueRows reads up to limit keys SQLite's last commit holds as expired,
// soonest first, through the expiry index (one query for every database:
// by database, SQLite would walk each one's keys). A database whose rows a
// FLUSHDB or SWAPDB not yet committed has moved is left for a later sweep.
func (m *memEngine) dueRows(limit int) ([]dueRow, error) {
	m.readMu.Lock()
	var logical [NumDBs]int // SQLite's database → the one holding its rows now; -1 none
	for i := range logical {
		logical[i] = -1
	}
	for db := 0; db < NumDBs; db++ {
		if sqlDB, empty := m.view(db, m.committed.Load()); !empty && sqlDB == db {
			logical[db] = db
		}
	}
	st := m.r.q(sqlDueKeys)
	st.int(1, m.s.Now)
	st.int(2, int64(limit))
	var out []dueRow
	err := m.eachRow(st, func() {
		if db := logical[st.colInt(4)]; db >= 0 {
			out = append(out, dueRow{db, sqlRow{id: st.colInt(0), key: st.colBlob(1, nil), typ: Type(st.colInt(2)), exp: st.colInt(3)}})
		}
	})
	return out, err
}

// countExpiring is how many keys of db have an expiry: those memory holds
// and those only SQLite does.
func (m *memEngine) countExpiring(db int) (int64, error) {
	d := m.dbs[db]
	return d.coldExpiring + int64(len(d.expires)), nil
}

// countColdExpiring sets every database's coldExpiring from SQLite's
// rows, with nothing of them in memory (the engine's start and reset).
func (m *memEngine) countColdExpiring() error {
	for _, d := range m.dbs {
		d.coldExpiring = 0
	}
	m.readMu.Lock() // eachRow lets it go
	st := m.r.q(sqlExpiringByDB)
	return m.eachRow(st, func() {
		if db := st.colInt(0); db >= 0 && db < allDBs {
			m.dbs[db].coldExpiring = st.colInt(1)
		}
	})
}

// sweep deletes up to limit keys past their expiry: those SQLite's last
// commit holds as due (loaded and expired as any lookup does), then those
// memory holds.
func (m *memEngine) sweep(limit int) (int, error) {
	n := 0
	due, err := m.dueRows(limit)
	if err != nil {
		return 0, err
	}
	for _, r := range due {
		if m.shadowed(r.db, &r.sqlRow) {
			continue
		}
		e, err := m.entryAt(r.db, r.key)
		if err != nil {
			return n, err
		}
		if e.typ != TypeNone && m.expiredEntry(e) {
			m.remove(e, Expired)
			n++
		}
	}
	for db := 0; db < NumDBs && n < limit; db++ {
		// Memory's keys with an expiry, a sample of them from a random
		// point (Go's map order), as Redis's active expiry samples.
		looked := 0
		for e, at := range m.dbs[db].expires {
			if n >= limit || looked >= 4*limit {
				break
			}
			looked++
			if expired(at, m.s.Now) {
				m.remove(e, Expired)
				n++
			}
		}
	}
	return n, nil
}

// flushDB deletes every key of db: the changes so far close a segment, the
// database's rows go after it, and until that flush commits a load finds
// db empty (view).
func (m *memEngine) flushDB(db int) {
	m.dbOp(memDBOp{kind: dbFlush, a: db})
	d := m.dbs[db]
	d.keys.each(func(e *entry) bool {
		m.forget(e)
		return true
	})
	d.keys = newKeyTable() // let its slots go too
	d.count, d.coldExpiring = 0, 0
	m.s.record(db, nil, Flushed, 0)
}

// swapDB exchanges two databases: their entries, counts and fresh indexes
// in memory, their rows in SQLite after the segment the swap closes.
func (m *memEngine) swapDB(a, b int) {
	if a == b {
		return
	}
	m.dbOp(memDBOp{kind: dbSwap, a: a, b: b})
	m.dbs[a], m.dbs[b] = m.dbs[b], m.dbs[a]
	m.dbs[a].num, m.dbs[b].num = a, b
	m.s.record(a, nil, Swapped, b)
}

func (m *memEngine) dbOp(op memDBOp) {
	m.freezeSegment()
	op.gen = m.gen
	m.steps = append(m.steps, memStep{op: &op})
	m.dbops = append(m.dbops, op)
	m.ld.epoch++ // the loads under way read the databases as they were
	m.s.dirty = true
}

// moveTo gives the absent entry to the key of e, whatever e holds, under
// the same id (RENAME, MOVE); e is left absent.
func (m *memEngine) moveTo(e, to *entry) {
	m.moved = true
	m.unfresh(to)
	to.typ, to.id, to.obj = e.typ, e.id, e.obj // the same type: no check needed
	to.setStr(bytesOf(e.str()))
	to.set(flagIDStored, false)
	m.setExp(to, m.expOf(e))
	to.set(flagElemsStored, e.is(flagElemsStored))
	if at, ok := m.hfe[e]; ok {
		m.hfe[to] = at
		delete(m.hfe, e)
	}
	to.ver = m.s.nextVersion()
	m.dbOf(to).count++
	e.typ = TypeNone
	e.setObject(nil)
	e.clearStr()
	e.set(flagElemsStored, false)
	m.setExp(e, 0)
	m.dbOf(e).count--
	m.unfresh(e)
	m.markFresh(to)
	m.changed(e)
	m.changed(to)
}

func (m *memEngine) rename(db int, src, dst []byte) error {
	from, err := m.live(db, src)
	if err != nil || from == nil || bytes.Equal(src, dst) {
		return err
	}
	to, err := m.entryAt(db, dst)
	if err != nil {
		return err
	}
	if to.typ != TypeNone {
		m.remove(to, 0)
	}
	m.moveTo(from, to)
	m.s.recordNew(db, dst)
	m.s.record(db, src, RenamedFrom, 0)
	m.s.record(db, dst, RenamedTo, 0)
	return nil
}

func (m *memEngine) move(db int, key []byte, dstDB int) error {
	from, err := m.live(db, key)
	if err != nil || from == nil {
		return err
	}
	to, err := m.entryAt(dstDB, key)
	if err != nil {
		return err
	}
	if to.typ != TypeNone {
		m.remove(to, 0)
	}
	m.moveTo(from, to)
	m.s.recordNew(dstDB, key)
	m.s.record(db, key, MovedFrom, dstDB)
	m.s.record(dstDB, key, MovedTo, db)
	return nil
}

func (m *memEngine) copyKey(srcDB int, src []byte, dstDB int, dst []byte, replace bool) (bool, error) {
	from, err := m.live(srcDB, src)
	if err != nil || from == nil {
		return false, err
	}
	to, err := m.live(dstDB, dst)
	if err != nil {
		return false, err
	}
	if to != nil {
		if !replace {
			return false, nil
		}
		m.remove(to, 0)
	} else {
		to = m.dbs[dstDB].keys.get(string(dst))
	}
	m.create(to, from.typ)
	m.setExp(to, m.expOf(from))
	to.setStr(bytesOf(from.str()))
	switch o := from.object().(type) {
	case *object.Elems:
		to.setObject(o.Clone())
	case *object.ZSet:
		to.setObject(o.Clone())
	case *object.Stream:
		to.setObject(o.Clone())
	case *object.List:
		l := object.NewList()
		o.Ascend(0, func(_ int, v []byte) bool {
			l.Push(object.Right, v) // values are never written to: shared
			return true
		})
		to.setObject(l)
	}
	if at, ok := m.hfe[from]; ok {
		m.hfe[to] = at
	}
	m.markFresh(to)
	m.changed(to)
	m.s.record(dstDB, dst, CopiedTo, srcDB)
	return true, nil
}

func (m *memEngine) peek(db int, key []byte) (present, stale bool, err error) {
	e, err := m.entryAt(db, key)
	if err != nil || e.typ == TypeNone {
		return false, false, err
	}
	return true, m.expiredEntry(e), nil
}
