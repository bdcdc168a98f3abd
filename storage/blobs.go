package storage

import sqlite3 "modernc.org/sqlite/lib"

// Large values live outside their rows.
//
// keys, list_items and hashes are WITHOUT ROWID tables: their rows sit in
// the primary key's B-tree. When a row is larger than a B-tree cell can hold
// locally (about 1000 bytes with 4 KiB pages), SQLite reads the WHOLE row,
// overflow pages and all, every time a search compares against it; one 8 MB
// value made every lookup that passed its key read 8 MB. So a value that
// would make its row that large is stored in blobs (a rowid table, whose
// lookups never compare payloads) and the row holds its ref, an INTEGER
// where a value is otherwise always a BLOB.
//
// Refs are never shared. When a row holding one is deleted or its value
// replaced, its ref moves to blob_garbage, and CollectGarbage (run by the
// actor's housekeeping) frees the blobs: until then, a command that just
// deleted a row (a pop's DELETE ... RETURNING) can still read it. Triggers
// move the refs of deleted rows and of replaced list and hash values. A
// string's value is replaced by SetString alone, which moves the old ref
// itself (keepGarbage): a trigger on every UPDATE of keys.value cost each
// SET about a quarter of its time, and fired for every collection's count
// too (migration 7 dropped it). COPY duplicates blobs rather than sharing
// refs.

// inlineBudget is how many bytes of element and value a row may hold before
// the value moves to blobs.
const inlineBudget = 900

var (
	qBlobPut    = newQuery("INSERT INTO blobs (data) VALUES (?1)")
	qBlobGet    = newQuery("SELECT data FROM blobs WHERE ref = ?1")
	qBlobDup    = newQuery("INSERT INTO blobs (data) SELECT data FROM blobs WHERE ref = ?1")
	qBlobDrop   = newQuery("DELETE FROM blobs WHERE ref = ?1")
	qBlobFree   = newQuery("DELETE FROM blobs WHERE ref IN (SELECT ref FROM blob_garbage)")
	qBlobClear  = newQuery("DELETE FROM blob_garbage")
	qKeepRef    = newQuery("INSERT INTO blob_garbage VALUES (?1)")
	qKeepKeyRef = newQuery("INSERT INTO blob_garbage SELECT value FROM keys WHERE db = ?1 AND key = ?2 AND type = 1 AND typeof(value) = 'integer'")
)

// keepGarbage moves the blob ref of string key's row, if it holds one, to
// blob_garbage: SetString calls it before it replaces the value.
func (s *Store) keepGarbage(db int, key []byte) error {
	st := s.q(qKeepKeyRef)
	st.int(1, int64(db))
	st.blob(2, key)
	return st.exec()
}

// keepRef moves a ref whose row a command deletes to blob_garbage.
func (s *Store) keepRef(ref int64) error {
	st := s.q(qKeepRef)
	st.int(1, ref)
	return st.exec()
}

// valueExpr is SQL for a row's value whatever way it is stored.
const valueExpr = "(CASE typeof(value) WHEN 'integer' THEN (SELECT data FROM blobs WHERE ref = value) ELSE value END)"

// lengthExpr is SQL for the length of a row's value.
const lengthExpr = "(CASE typeof(value) WHEN 'integer' THEN (SELECT length(data) FROM blobs WHERE ref = value) ELSE length(value) END)"

// bindValue binds v as parameter i: inline when v and the row's other
// variable-length columns (other bytes) fit the budget, otherwise stored in
// blobs and bound as its ref, which is returned (0 when inline). A caller
// whose statement then stores nothing must drop the ref.
func (s *Store) bindValue(st *stmt, i int, v []byte, other int) (ref int64, err error) {
	if len(v)+other <= inlineBudget {
		st.blob(i, v)
		return 0, nil
	}
	put := s.q(qBlobPut)
	put.blob(1, v)
	if err := put.exec(); err != nil {
		return 0, err
	}
	ref = s.c.lastInsertRowid()
	st.int(i, ref)
	return ref, nil
}

// dropBlob frees a blob that no row ended up holding.
func (s *Store) dropBlob(ref int64) error {
	if ref == 0 {
		return nil
	}
	st := s.q(qBlobDrop)
	st.int(1, ref)
	return st.exec()
}

// colValue appends column i's value to dst, fetching it from blobs when
// the row holds a ref.
func (s *Store) colValue(st *stmt, i int, dst []byte) ([]byte, error) {
	if st.colType(i) != sqlite3.SQLITE_INTEGER {
		return st.colBlob(i, dst), nil
	}
	get := s.q(qBlobGet)
	get.int(1, st.colInt(i))
	defer get.reset()
	row, err := get.step()
	if err != nil {
		return dst, err
	}
	if !row {
		return dst, &Error{Code: codeCorrupt, Msg: "a row refers to a missing blob"}
	}
	return get.colBlob(0, dst), nil
}

// dupBlob copies a blob and returns the copy's ref.
func (s *Store) dupBlob(ref int64) (int64, error) {
	st := s.q(qBlobDup)
	st.int(1, ref)
	if err := st.exec(); err != nil {
		return 0, err
	}
	return s.c.lastInsertRowid(), nil
}

// CollectGarbage frees the blobs whose rows are gone. On the in-memory
// engine each flush frees them in its own transaction (freeGarbage), and
// the actor writes nothing: an idle server then writes nothing at all.
func (s *Store) CollectGarbage() error {
	if s.mem != nil {
		return nil
	}
	if err := s.q(qBlobFree).exec(); err != nil {
		return err
	}
	return s.q(qBlobClear).exec()
}

// refRow is a row holding a blob ref: its position (a list's pos, a hash's
// h), the ref, and for hashes the field.
type refRow struct {
	pos  int64
	ref  int64
	elem []byte
	ord  int64 // a hash field's insertion order
	exp  int64 // and its expiry (0: none)
}

// refRows collects the rows of element table query q (columns: position,
// value ref[, element]) for key id: all of them first, since the caller
// then inserts into the same table.
func (s *Store) refRows(q *query, id int64) ([]refRow, error) {
	st := s.q(q)
	st.int(1, id)
	defer st.reset()
	var rows []refRow
	for {
		row, err := st.step()
		if err != nil || !row {
			return rows, err
		}
		r := refRow{pos: st.colInt(0), ref: st.colInt(1)}
		if q == qHashRefs {
			r.elem = st.colBlob(2, nil)
			r.ord = st.colInt(3)
			r.exp = st.colInt(4)
		}
		rows = append(rows, r)
	}
}
