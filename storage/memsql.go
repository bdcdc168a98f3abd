package storage

import (
	sqlite3 "modernc.org/sqlite/lib"
)

// The in-memory engine (docs/architecture.md, "Storage engine") reaches
// SQLite through two connections of its own: a read-only one that loads a
// key whole on a miss and scans what memory does not hold, and the flush's,
// the only one that writes. Both are used by one goroutine at a time: the
// reader by the loads, the writer by the flush job on the offload pool.
// sqlc is either, with its statements prepared once and kept.
type sqlc struct {
	c     *conn
	stmts map[string]*stmt
}

func newSQLC(c *conn) *sqlc { return &sqlc{c: c, stmts: make(map[string]*stmt)} }

// q returns the prepared statement for sql, preparing it on first use. A
// statement that fails to prepare is a programming error in Cellar's own
// SQL, or a database that is not Cellar's: it panics with SQLite's text.
func (x *sqlc) q(sql string) *stmt {
	if st, ok := x.stmts[sql]; ok {
		return st
	}
	st, err := x.c.prepare(sql)
	if err != nil {
		panic("storage: preparing " + sql + ": " + err.Error())
	}
	x.stmts[sql] = st
	return st
}

func (x *sqlc) close() error {
	for _, st := range x.stmts {
		st.close()
	}
	x.stmts = nil
	return x.c.close()
}

// colValue appends column i's value to dst, reading it from blobs when the
// row holds a ref (blobs.go).
func (x *sqlc) colValue(st *stmt, i int, dst []byte) ([]byte, error) {
	if st.colType(i) != sqlite3.SQLITE_INTEGER {
		return st.colBlob(i, dst), nil
	}
	get := x.q("SELECT data FROM blobs WHERE ref = ?1")
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

// colIsRef reports whether column i holds a blob ref rather than a value.
func colIsRef(st *stmt, i int) bool { return st.colType(i) == sqlite3.SQLITE_INTEGER }

// bindValue binds v as parameter i: inline when v and the row's other
// variable-length columns (other bytes) fit inlineBudget, else stored in
// blobs and bound as its ref. It reports whether v went to blobs.
func (x *sqlc) bindValue(st *stmt, i int, v []byte, other int) (ref bool, err error) {
	if len(v)+other <= inlineBudget {
		st.blob(i, v)
		return false, nil
	}
	put := x.q("INSERT INTO blobs (data) VALUES (?1)")
	put.blob(1, v)
	if err := put.exec(); err != nil {
		return false, err
	}
	st.int(i, x.c.lastInsertRowid())
	return true, nil
}

// keepRefs moves the blob refs held by the rows sel selects (a SELECT of
// one column, value, bound by bind) to blob_garbage, before the flush
// deletes or replaces those rows; freeGarbage frees them at the end of the
// flush, in its transaction.
func (x *sqlc) keepRefs(sel string, bind func(st *stmt)) error {
	st := x.q("INSERT INTO blob_garbage " + sel + " AND typeof(value) = 'integer'")
	bind(st)
	return st.exec()
}

// freeGarbage frees the blobs whose rows the flush deleted or replaced.
func (x *sqlc) freeGarbage() error {
	if err := x.q("DELETE FROM blobs WHERE ref IN (SELECT ref FROM blob_garbage)").exec(); err != nil {
		return err
	}
	return x.q("DELETE FROM blob_garbage").exec()
}
