package storage

import (
	"errors"
	"fmt"
	"strings"

	sqlite3 "modernc.org/sqlite/lib"
)

// The physical full sync of a Cellar replica (docs/replication.md, "How a
// Cellar replica back-fills"): the master sends the copy Snapshot made of
// its database, and the replica replaces its 16 databases with the copy's
// in one transaction of its flush, instead of decoding an RDB and writing
// every key through the engine, then moving the loaded rows from the
// staging databases (SwapDB rewrites every row's database number). When
// the flush writes nothing but the import, and neither file has what the
// other would lose (search indexes, staging keys), the copy takes the
// whole file's place, page by page (swapIn); otherwise its rows are
// copied — the old rows deleted as FLUSHDB does, the copy's attached and
// inserted with a few INSERT ... SELECT statements, rows to rows in key
// order (writeImport).
//
// Until that transaction commits, SQLite's last commit and memory hold the
// old data, which clients read as before; when the flush lands on the
// actor (land), memory lets go of every entry of the 16 databases and the
// changes made to them meanwhile (expiries: a replica takes no other
// writes during its sync), so that from then on every key is read from
// the new rows. Nothing is applied on top of the copy before: a change
// frozen after the import in the same flight is left out of it.
//
// Ids, versions and blob refs are numbers of one file: copied rows have
// theirs moved past the ones this file has handed out (ImportSnapshot
// reserves the ids and versions on the actor; the flush moves the refs
// past the largest one in its own transaction), so that no number is
// shared and a key's version never repeats for its name. A swapped-in
// copy keeps its own, past which the same reservation starts the next. The copy's staging databases (a master that
// is itself in a full sync) and its search tables are not imported.

// SnapshotInfo is what CheckSnapshot read of a copy.
type SnapshotInfo struct {
	// Keys counts the keys of each database (its dbstats), Expiring
	// those with an expiry.
	Keys, Expiring [NumDBs]int64
	// MaxID is the largest key id of the copy (any database), MaxVersion
	// its version high-water mark.
	MaxID, MaxVersion int64
	// Functions are its function libraries' code.
	Functions [][]byte
	// Staged: the copy has keys in its staging databases (a master in a
	// full sync of its own), whose element rows the import must leave out
	// by id; without, every element row belongs to a key it imports.
	Staged bool
	// Searches counts its search indexes.
	Searches int64
}

// SnapshotPosition is the redo log position the database file at path
// covers (a copy Snapshot wrote), read without opening it as a Store.
func SnapshotPosition(path string) (uint64, error) {
	c, err := openConn(path, sqlite3.SQLITE_OPEN_READONLY)
	if err != nil {
		return 0, fmt.Errorf("storage: snapshot position: %w", err)
	}
	defer c.close()
	var pos int64
	err = queryRows(c, "SELECT value FROM counters WHERE name = 'redo_position'", func(st *stmt) { pos = st.colInt(0) })
	if err != nil {
		return 0, fmt.Errorf("storage: snapshot position: %w", err)
	}
	return uint64(pos), nil
}

// CheckSnapshot checks the database file at path, a master's copy
// received for a physical full sync, before it is imported: SQLite's
// PRAGMA quick_check must find nothing wrong, and its schema must be this
// build's (a master of another version falls back to an RDB). It reads
// what ImportSnapshot needs. Any goroutine: a connection of its own.
func CheckSnapshot(path string) (SnapshotInfo, error) {
	var info SnapshotInfo
	c, err := openConn(path, sqlite3.SQLITE_OPEN_READONLY)
	if err != nil {
		return info, fmt.Errorf("storage: checking the snapshot: %w", err)
	}
	defer c.close()
	var problems []string
	err = queryRows(c, "PRAGMA quick_check", func(st *stmt) { problems = append(problems, string(st.colBlob(0, nil))) })
	if err != nil {
		return info, fmt.Errorf("storage: checking the snapshot: %w", err)
	}
	if len(problems) != 1 || problems[0] != "ok" {
		return info, fmt.Errorf("storage: the snapshot fails PRAGMA quick_check: %s", strings.Join(problems[:min(len(problems), 5)], "; "))
	}
	version := int64(-1)
	if err := queryRows(c, "SELECT max(version) FROM cellar_schema", func(st *stmt) { version = st.colInt(0) }); err != nil {
		return info, fmt.Errorf("storage: the snapshot has no Cellar schema: %w", err)
	}
	if version != int64(schemaVersion()) {
		return info, fmt.Errorf("storage: the snapshot has schema version %d, this build %d", version, schemaVersion())
	}
	steps := []struct {
		sql string
		row func(st *stmt)
	}{
		{"SELECT db, keys FROM dbstats WHERE db < " + fmt.Sprint(NumDBs), func(st *stmt) {
			if db := st.colInt(0); db >= 0 && db < NumDBs {
				info.Keys[db] = st.colInt(1)
			}
		}},
		{sqlExpiringByDB, func(st *stmt) {
			if db := st.colInt(0); db >= 0 && db < NumDBs {
				info.Expiring[db] = st.colInt(1)
			}
		}},
		{"SELECT coalesce(max(id), 0) FROM keys", func(st *stmt) { info.MaxID = st.colInt(0) }},
		{"SELECT EXISTS (SELECT 1 FROM keys WHERE db >= " + fmt.Sprint(NumDBs) + ")", func(st *stmt) { info.Staged = st.colInt(0) != 0 }},
		{"SELECT value FROM counters WHERE name = 'version'", func(st *stmt) { info.MaxVersion = st.colInt(0) }},
		{"SELECT count(*) FROM search_indexes", func(st *stmt) { info.Searches = st.colInt(0) }},
		{"SELECT code FROM function_libraries ORDER BY name", func(st *stmt) { info.Functions = append(info.Functions, st.colBlob(0, nil)) }},
	}
	for _, s := range steps {
		if err := queryRows(c, s.sql, s.row); err != nil {
			return info, fmt.Errorf("storage: reading the snapshot: %w", err)
		}
	}
	return info, nil
}

// queryRows runs sql on c, calling row for each row.
func queryRows(c *conn, sql string, row func(st *stmt)) error {
	st, err := c.prepare(sql)
	if err != nil {
		return err
	}
	defer st.close()
	for {
		ok, err := st.step()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		row(st)
	}
}

// memImport is a database operation replacing databases 0..15 with a
// copy's (dbImport).
type memImport struct {
	path          string
	idOff, verOff int64
	staged        bool  // SnapshotInfo.Staged
	searches      int64 // SnapshotInfo.Searches
	// counts and expiring are SnapshotInfo's Keys and Expiring.
	counts, expiring [NumDBs]int64
	// swap: the flight may put the copy in place of the whole file
	// (swapIn), decided at its freeze; mark is then the version
	// high-water mark the file is to store. swapped: the flush did so
	// (written by the flush before its flight is done).
	swap, swapped bool
	mark          int64
}

// ErrFlushing: ImportSnapshot was called while a flush is under way.
var ErrFlushing = errors.New("storage: a flush is under way")

// ImportSnapshot replaces databases 0..15 with those of the copy at path
// (checked by CheckSnapshot, which gave info), in the next flush, which
// the caller starts now (StartFlush), before anything else changes: with
// no flush under way (ErrFlushing otherwise), so that the flight holds
// the import and nothing after it. The old data is read until that flush
// lands; the file must stay until then (Committed reaches the generation
// returned). On the actor.
func (s *Store) ImportSnapshot(path string, info SnapshotInfo) (uint64, error) {
	m := s.mem
	if m.flight != nil {
		return 0, ErrFlushing
	}
	imp := &memImport{path: path, idOff: s.nextID, verOff: s.version, staged: info.Staged, searches: info.Searches, counts: info.Keys, expiring: info.Expiring}
	s.nextID += info.MaxID + 1
	s.version += info.MaxVersion + 1
	m.dbOp(memDBOp{kind: dbImport, imp: imp})
	return m.gen, nil
}

// freezeImport adjusts flight f if it holds an import: the key counts it
// stores for databases 0..15 are the copy's, and a segment after the
// import leaves out its keys of those databases (changes made before the
// import landed: a flight that failed, written again with what changed
// since), which the landing forgets.
func (m *memEngine) freezeImport(f *memFlight) {
	at := -1
	for i, st := range f.steps {
		if st.op != nil && st.op.kind == dbImport {
			at = i
		}
	}
	if at < 0 {
		return
	}
	imp := f.steps[at].op.imp
	imp.swap = !imp.staged && imp.searches == 0 && onlyImported(f, at)
	imp.mark = max(f.mark, m.s.versionMark)
	for i := range f.counts {
		if db := f.counts[i].db; db < NumDBs {
			f.counts[i].n = imp.counts[db]
		}
	}
	for i := at + 1; i < len(f.steps); i++ {
		seg := f.steps[i].seg
		if seg == nil {
			continue
		}
		kept := &memSegment{drops: seg.drops}
		for _, k := range seg.keys {
			if int(k.db) >= NumDBs {
				kept.keys = append(kept.keys, k)
			}
		}
		f.steps[i].seg = kept
	}
}

// onlyImported reports whether flight f, whose step at imports, touches
// nothing but databases 0..15 and holds no other import: what the import
// replaces is all it writes, so the copy may take the whole file's place.
func onlyImported(f *memFlight, at int) bool {
	for i, st := range f.steps {
		switch {
		case i == at:
		case st.op != nil:
			if st.op.kind == dbImport || st.op.a >= NumDBs || (st.op.kind == dbSwap && st.op.b >= NumDBs) {
				return false
			}
		default:
			for _, k := range st.seg.keys {
				if int(k.db) >= NumDBs {
					return false
				}
			}
		}
	}
	for _, c := range f.counts {
		if c.db >= NumDBs && c.n != 0 {
			return false
		}
	}
	return true
}

// landImport is the landing of a flight that imported: memory lets go of
// every entry of databases 0..15, and of what changed in them since the
// freeze; their counts are the copy's; the loads under way are stale.
// After a swap the copy's ids are the file's, so the element rows of the
// old objects deleted since the freeze, which share their numbers, must
// not be deleted by the next flush: those deletions are dropped.
func (m *memEngine) landImport(f *memFlight) {
	for _, st := range f.steps {
		if st.op == nil || st.op.kind != dbImport {
			continue
		}
		if st.op.imp.swapped {
			m.swaps++
			m.forgetOldDrops()
		}
		for db := range NumDBs {
			d := m.dbs[db]
			for _, e := range d.dirty {
				e.set(flagDirty, false)
			}
			d.dirty = nil
			d.keys.each(func(e *entry) bool {
				m.forget(e)
				return true
			})
			d.keys = newKeyTable()
			d.count, d.coldExpiring = st.op.imp.counts[db], st.op.imp.expiring[db]
		}
		m.ld.epoch++
	}
}

// Committed is the generation of the last flush committed (ImportSnapshot).
// Any goroutine.
func (s *Store) Committed() uint64 { return s.mem.committed.Load() }

// writeImport is the flush's part of an import: the copy is attached as
// schema (write attached it, outside the transaction); databases 0..15
// are emptied as FLUSHDB empties them, the copy's rows of those databases
// go in with their numbers moved, and every name it imports is added to
// the presence filters, before the commit, as every flush adds the names it
// writes.
func writeImport(w *sqlc, f *memFlight, imp *memImport, schema string) error {
	for db := range NumDBs {
		if err := writeDBOp(w, &memDBOp{kind: dbFlush, a: db}); err != nil {
			return err
		}
	}
	if err := w.freeGarbage(); err != nil { // the refs the deleted rows held
		return err
	}
	var roff int64
	if err := queryRows(w.c, "SELECT coalesce(max(ref), 0) FROM main.blobs", func(st *stmt) { roff = st.colInt(0) }); err != nil {
		return err
	}
	// Which element rows go: those of the keys imported. A copy without
	// staging keys has no others (an element row never outlives its
	// key), and a plain scan of each table is much cheaper than a filter
	// built from the keys.
	where := func(t Type) string {
		if !imp.staged {
			return ""
		}
		return fmt.Sprintf(" WHERE id IN (SELECT id FROM %s.keys WHERE db < %d AND type = %d)", schema, NumDBs, t)
	}
	refs := func(t Type) string {
		if !imp.staged {
			return ""
		}
		return fmt.Sprintf(" AND id IN (SELECT id FROM %s.keys WHERE db < %d AND type = %d)", schema, NumDBs, t)
	}
	ref := func(col string) string {
		return fmt.Sprintf("CASE WHEN typeof(%[1]s) = 'integer' THEN %[1]s + %[2]d ELSE %[1]s END", col, roff)
	}
	id := fmt.Sprintf("id + %d", imp.idOff)
	src := func(tbl string) string { return schema + "." + tbl }
	blobs := fmt.Sprintf("INSERT INTO main.blobs (ref, data) SELECT ref + %d, data FROM %s", roff, src("blobs"))
	if imp.staged {
		blobs += fmt.Sprintf(` WHERE ref IN (
			SELECT value FROM %s WHERE db < %d AND type = %d AND typeof(value) = 'integer'
			UNION ALL SELECT value FROM %s WHERE typeof(value) = 'integer'%s
			UNION ALL SELECT value FROM %s WHERE typeof(value) = 'integer'%s)`,
			src("keys"), NumDBs, TypeString, src("list_items"), refs(TypeList), src("hashes"), refs(TypeHash))
	}
	stmts := []string{
		blobs,
		fmt.Sprintf(`INSERT INTO main.keys (db, key, id, type, expire_at, version, value)
			SELECT db, key, %s, type, expire_at, version + %d,
				CASE WHEN type = %d AND typeof(value) = 'integer' THEN value + %d ELSE value END
			FROM %s WHERE db < %d`, id, imp.verOff, TypeString, roff, src("keys"), NumDBs),
		fmt.Sprintf(`INSERT INTO main.list_items (id, pos, value) SELECT %s, pos, %s FROM %s%s`,
			id, ref("value"), src("list_items"), where(TypeList)),
		fmt.Sprintf(`INSERT INTO main.hashes (id, h, field, value, ord, expire_at) SELECT %s, h, field, %s, ord + %d, expire_at FROM %s%s`,
			id, ref("value"), imp.verOff, src("hashes"), where(TypeHash)),
		fmt.Sprintf(`INSERT INTO main.sets (id, h, member) SELECT %s, h, member FROM %s%s`, id, src("sets"), where(TypeSet)),
		fmt.Sprintf(`INSERT INTO main.zsets (id, h, member, score) SELECT %s, h, member, score FROM %s%s`, id, src("zsets"), where(TypeZSet)),
		fmt.Sprintf(`INSERT INTO main.streams (id, last_ms, last_seq, del_ms, del_seq, entries_added)
			SELECT %s, last_ms, last_seq, del_ms, del_seq, entries_added FROM %s%s`, id, src("streams"), where(TypeStream)),
		fmt.Sprintf(`INSERT INTO main.stream_entries (id, ms, seq, fields) SELECT %s, ms, seq, fields FROM %s%s`,
			id, src("stream_entries"), where(TypeStream)),
		fmt.Sprintf(`INSERT INTO main.stream_groups (id, name, last_ms, last_seq, entries_read) SELECT %s, name, last_ms, last_seq, entries_read FROM %s%s`,
			id, src("stream_groups"), where(TypeStream)),
		fmt.Sprintf(`INSERT INTO main.stream_consumers (id, grp, name, seen) SELECT %s, grp, name, seen FROM %s%s`,
			id, src("stream_consumers"), where(TypeStream)),
		fmt.Sprintf(`INSERT INTO main.stream_pel (id, grp, ms, seq, consumer, delivered, count) SELECT %s, grp, ms, seq, consumer, delivered, count FROM %s%s`,
			id, src("stream_pel"), where(TypeStream)),
	}
	for _, q := range stmts {
		if err := w.c.exec(q); err != nil {
			return fmt.Errorf("storage: importing the snapshot: %w", err)
		}
	}
	var buf []byte
	return queryRows(w.c, fmt.Sprintf("SELECT key FROM %s WHERE db < %d", src("keys"), NumDBs), func(st *stmt) {
		buf = st.colBlob(0, buf[:0])
		name := string(buf)
		f.pres.add(name)
		if f.nextPres != nil {
			f.nextPres.add(name)
		}
	})
}

// attachImports attaches the copy of every import f writes (before its
// transaction: SQLite attaches outside one) and returns the schema names,
// by step, and the function that detaches them.
func attachImports(w *sqlc, f *memFlight) (map[*memImport]string, func(), error) {
	schemas := map[*memImport]string{}
	detach := func() {
		for _, name := range schemas {
			w.c.exec("DETACH DATABASE " + name)
		}
	}
	for _, st := range f.steps {
		if st.op == nil || st.op.kind != dbImport {
			continue
		}
		name := fmt.Sprintf("snap%d", len(schemas))
		if err := w.c.exec("ATTACH DATABASE '" + strings.ReplaceAll(st.op.imp.path, "'", "''") + "' AS " + name); err != nil {
			detach()
			return nil, func() {}, fmt.Errorf("storage: attaching the snapshot: %w", err)
		}
		schemas[st.op.imp] = name
	}
	return schemas, detach, nil
}

// forgetOldDrops drops every deletion of element rows not yet written:
// after a swap they name objects of the file the copy replaced (swapIn).
func (m *memEngine) forgetOldDrops() {
	m.drops = nil
	for i, st := range m.steps {
		if st.seg == nil {
			continue
		}
		kept := &memSegment{}
		for _, k := range st.seg.keys {
			if int(k.db) >= NumDBs {
				kept.keys = append(kept.keys, k)
			}
		}
		m.steps[i].seg = kept
	}
}

// swapChunk is how many pages swapIn copies a step.
const swapChunk = 1024

// swapIn writes flight f, which imports imp and nothing else (onlyImported),
// by putting the copy in place of the whole database file: SQLite's online
// backup copies its pages into the file through the flush's connection, in
// one write transaction, where writeImport copies its rows (a few µs a row
// against a page copy at disk speed). First the copy is made what the
// flight is to leave: its counters (the redo log position the flight
// covers, the version high-water mark) and key counts are the flight's,
// and its names go into the presence filters before the commit, as
// writeImport adds them. The copy's ids stay its own: no id of the
// replaced file survives in SQLite, and the next ones handed out are past
// both (ImportSnapshot); the deletions of old objects' rows that memory
// still holds are dropped as the flight lands (landImport).
//
// done is false, with nothing written, when the file holds what the copy
// would lose: search indexes or staging keys (checked while the backup
// holds the write lock, so that nothing is added after the look); the
// caller writes the flight with writeImport then. The last pages are
// copied and committed under readMu, as writeFlight commits.
func (m *memEngine) swapIn(w *sqlc, f *memFlight, imp *memImport) (done bool, err error) {
	c, err := openConn(imp.path, sqlite3.SQLITE_OPEN_READWRITE)
	if err != nil {
		return false, fmt.Errorf("storage: opening the snapshot: %w", err)
	}
	defer c.close()
	var b strings.Builder
	fmt.Fprintf(&b, "BEGIN; UPDATE counters SET value = max(value, %d) WHERE name = 'version';", imp.mark)
	fmt.Fprintf(&b, "UPDATE counters SET value = %d WHERE name = 'redo_position';", f.pos)
	for _, n := range f.counts {
		fmt.Fprintf(&b, "INSERT INTO dbstats (db, keys) VALUES (%d, %d) ON CONFLICT (db) DO UPDATE SET keys = excluded.keys;", n.db, n.n)
	}
	b.WriteString("COMMIT")
	if err := c.exec(b.String()); err != nil {
		return false, fmt.Errorf("storage: preparing the snapshot: %w", err)
	}
	var name []byte
	err = queryRows(c, fmt.Sprintf("SELECT key FROM keys WHERE db < %d", NumDBs), func(st *stmt) {
		name = st.colBlob(0, name[:0])
		f.pres.addBytes(name)
		if f.nextPres != nil {
			f.nextPres.addBytes(name)
		}
	})
	if err != nil {
		return false, fmt.Errorf("storage: reading the snapshot: %w", err)
	}
	bk, err := w.c.startBackup(c)
	if err != nil {
		return false, fmt.Errorf("storage: swapping the snapshot in: %w", err)
	}
	finished := false
	defer func() {
		if !finished {
			if ferr := bk.finish(); err == nil && ferr != nil {
				err = fmt.Errorf("storage: swapping the snapshot in: %w", ferr)
			}
		}
	}()
	if _, err := bk.step(0); err != nil { // the write lock
		return false, fmt.Errorf("storage: swapping the snapshot in: %w", err)
	}
	if keep, err := m.holdsMoreThanImported(); err != nil || keep {
		return false, err
	}
	for {
		if bk.remaining() > swapChunk {
			if _, err := bk.step(swapChunk); err != nil {
				return false, fmt.Errorf("storage: swapping the snapshot in: %w", err)
			}
			continue
		}
		m.readMu.Lock()
		ok, err := bk.step(-1)
		if ok {
			m.committed.Store(f.gen)
			for _, c := range f.counts {
				m.sqlKeys[c.db] = c.n
			}
		}
		m.readMu.Unlock()
		if err != nil {
			return false, fmt.Errorf("storage: swapping the snapshot in: %w", err)
		}
		if !ok {
			return false, errors.New("storage: swapping the snapshot in: the backup did not end")
		}
		break
	}
	finished = true
	bk.finish() // after the last step's commit, which stands whatever it says
	imp.swapped = true
	return true, nil
}

// holdsMoreThanImported reports whether SQLite's last commit holds search
// indexes or staging keys, which a swap would lose; through a connection
// of its own, since the flush's is the backup's.
func (m *memEngine) holdsMoreThanImported() (bool, error) {
	c, err := openConn(m.s.path, sqlite3.SQLITE_OPEN_READONLY)
	if err != nil {
		return false, fmt.Errorf("storage: swapping the snapshot in: %w", err)
	}
	defer c.close()
	more := false
	q := fmt.Sprintf("SELECT EXISTS (SELECT 1 FROM search_indexes) OR EXISTS (SELECT 1 FROM keys WHERE db >= %d)", NumDBs)
	if err := queryRows(c, q, func(st *stmt) { more = st.colInt(0) != 0 }); err != nil {
		return false, fmt.Errorf("storage: swapping the snapshot in: %w", err)
	}
	return more, nil
}

// swapImport is the import of flight f when it may be swapped in
// (memImport.swap), or nil.
func (f *memFlight) swapImport() *memImport {
	for _, st := range f.steps {
		if st.op != nil && st.op.kind == dbImport && st.op.imp.swap {
			return st.op.imp
		}
	}
	return nil
}
