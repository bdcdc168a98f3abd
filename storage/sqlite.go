package storage

import (
	"errors"
	"fmt"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"

	// The driver's init applies modernc's patches to the transpiled library;
	// Cellar also uses it through database/sql for its side connections.
	_ "modernc.org/sqlite"
)

// This file is a thin layer over SQLite's C API as transpiled by modernc.org.
// It exists because the database/sql path allocates on every statement (a
// rows object, a C copy of every blob argument, a Go copy of every blob
// result): here a bound blob is copied into a C buffer the statement keeps,
// and a result column is appended straight into the caller's buffer.
//
// A conn and its statements belong to one goroutine at a time (libc.TLS is
// not safe for concurrent use). C memory (libc.Xmalloc) is not Go heap, so
// pointers to it are invisible to the garbage collector and never move.

// Error is an SQLite error with its (extended) result code.
type Error struct {
	Code int32
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("sqlite: %s (%d)", e.Msg, e.Code) }

// Primary result codes Cellar reacts to.
const (
	codeFull    = sqlite3.SQLITE_FULL
	codeIOErr   = sqlite3.SQLITE_IOERR
	codeCorrupt = sqlite3.SQLITE_CORRUPT
	codeNotADB  = sqlite3.SQLITE_NOTADB
	codeBusy    = sqlite3.SQLITE_BUSY
)

// primary returns err's primary SQLite result code, or 0.
func primary(err error) int32 {
	var e *Error
	if errors.As(err, &e) {
		return e.Code & 0xff
	}
	return 0
}

// cptr turns a C address into an unsafe.Pointer. The address is C memory
// (libc's allocator or SQLite's), never Go heap, so the conversion cannot
// hide a Go pointer from the collector; going through memory keeps vet's
// uintptr check from flagging what is here deliberate.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// cbytes views n bytes of C memory at p.
func cbytes(p uintptr, n int) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(cptr(p)), n)
}

type conn struct {
	tls *libc.TLS
	db  uintptr
}

// openConn opens path with the given SQLITE_OPEN_* flags.
func openConn(path string, flags int32) (*conn, error) {
	c := &conn{tls: libc.NewTLS()}
	zPath, err := libc.CString(path)
	if err != nil {
		c.tls.Close()
		return nil, err
	}
	defer libc.Xfree(c.tls, zPath)
	pp := libc.Xmalloc(c.tls, 8)
	defer libc.Xfree(c.tls, pp)
	rc := sqlite3.Xsqlite3_open_v2(c.tls, zPath, pp, flags|sqlite3.SQLITE_OPEN_NOMUTEX, 0)
	c.db = *(*uintptr)(cptr(pp))
	if rc != sqlite3.SQLITE_OK {
		err := c.err(rc)
		if c.db != 0 {
			sqlite3.Xsqlite3_close_v2(c.tls, c.db)
		}
		c.tls.Close()
		return nil, err
	}
	sqlite3.Xsqlite3_extended_result_codes(c.tls, c.db, 1)
	return c, nil
}

func (c *conn) err(rc int32) error {
	msg := ""
	if c.db != 0 {
		msg = libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db))
	}
	if msg == "" {
		msg = libc.GoString(sqlite3.Xsqlite3_errstr(c.tls, rc))
	}
	return &Error{Code: rc, Msg: msg}
}

// exec runs one or more SQL statements that return no rows.
func (c *conn) exec(sql string) error {
	z, err := libc.CString(sql)
	if err != nil {
		return err
	}
	defer libc.Xfree(c.tls, z)
	if rc := sqlite3.Xsqlite3_exec(c.tls, c.db, z, 0, 0, 0); rc != sqlite3.SQLITE_OK {
		return c.err(rc)
	}
	return nil
}

// cacheFlush writes the open write transaction's dirty pages to the WAL
// without committing it (sqlite3_db_cacheflush): readers do not see
// them, and the COMMIT after it writes only the pages changed since. A
// page held by an active statement stays (SQLITE_BUSY): the COMMIT
// writes it.
func (c *conn) cacheFlush() error {
	if rc := sqlite3.Xsqlite3_db_cacheflush(c.tls, c.db); rc != sqlite3.SQLITE_OK && rc != sqlite3.SQLITE_BUSY {
		return c.err(rc)
	}
	return nil
}

// backup is SQLite's online backup of one connection's database into
// another's (sqlite3_backup_*): the destination's pages become the
// source's, in one write transaction of the destination that step
// commits when it copies the last page. Both connections belong to the
// caller's goroutine for as long as it runs; the destination's must not
// be used meanwhile.
type backup struct {
	dst *conn
	h   uintptr
}

// startBackup prepares the copy of src's main database into c's.
func (c *conn) startBackup(src *conn) (*backup, error) {
	zMain, err := libc.CString("main")
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(c.tls, zMain)
	h := sqlite3.Xsqlite3_backup_init(c.tls, c.db, zMain, src.db, zMain)
	if h == 0 {
		return nil, c.err(sqlite3.Xsqlite3_errcode(c.tls, c.db))
	}
	return &backup{dst: c, h: h}, nil
}

// step copies up to n pages (n < 0: all that are left); done once the last
// is copied and the destination's transaction committed. The first step
// takes the destination's write lock (n = 0 takes it and copies nothing),
// held until the backup is done or finished.
func (b *backup) step(n int) (done bool, err error) {
	switch rc := sqlite3.Xsqlite3_backup_step(b.dst.tls, b.h, int32(n)); rc {
	case sqlite3.SQLITE_OK:
		return false, nil
	case sqlite3.SQLITE_DONE:
		return true, nil
	default:
		return false, b.dst.err(rc)
	}
}

// remaining is the number of pages left after the last step.
func (b *backup) remaining() int {
	return int(sqlite3.Xsqlite3_backup_remaining(b.dst.tls, b.h))
}

// finish ends the backup; one not done rolls the destination back.
func (b *backup) finish() error {
	if rc := sqlite3.Xsqlite3_backup_finish(b.dst.tls, b.h); rc != sqlite3.SQLITE_OK {
		return b.dst.err(rc)
	}
	return nil
}

func (c *conn) close() error {
	if c.db == 0 {
		return nil
	}
	rc := sqlite3.Xsqlite3_close_v2(c.tls, c.db)
	var err error
	if rc != sqlite3.SQLITE_OK {
		err = c.err(rc)
	}
	c.db = 0
	c.tls.Close()
	return err
}

// lastInsertRowid is the rowid of the last row inserted into a rowid table.
func (c *conn) lastInsertRowid() int64 {
	return sqlite3.Xsqlite3_last_insert_rowid(c.tls, c.db)
}

// changes is the number of rows the last INSERT, UPDATE or DELETE changed.
func (c *conn) changes() int64 {
	return sqlite3.Xsqlite3_changes64(c.tls, c.db)
}

// autocommit reports whether no transaction is open.
func (c *conn) autocommit() bool {
	return sqlite3.Xsqlite3_get_autocommit(c.tls, c.db) != 0
}

// stmt is a prepared statement with one reusable C buffer per parameter.
type stmt struct {
	c    *conn
	h    uintptr
	sql  string
	bufs []cbuf
}

type cbuf struct {
	p   uintptr
	cap int
}

// largeBind is the size above which a parameter's C buffer is released after
// use instead of being kept for the next call.
const largeBind = 1 << 20

func (c *conn) prepare(sql string) (*stmt, error) {
	z, err := libc.CString(sql)
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(c.tls, z)
	pp := libc.Xmalloc(c.tls, 8)
	defer libc.Xfree(c.tls, pp)
	rc := sqlite3.Xsqlite3_prepare_v3(c.tls, c.db, z, -1, sqlite3.SQLITE_PREPARE_PERSISTENT, pp, 0)
	if rc != sqlite3.SQLITE_OK {
		return nil, fmt.Errorf("prepare %q: %w", sql, c.err(rc))
	}
	h := *(*uintptr)(cptr(pp))
	n := int(sqlite3.Xsqlite3_bind_parameter_count(c.tls, h))
	return &stmt{c: c, h: h, sql: sql, bufs: make([]cbuf, n+1)}, nil
}

func (s *stmt) close() {
	s.clear()
	for i := range s.bufs {
		if s.bufs[i].p != 0 {
			libc.Xfree(s.c.tls, s.bufs[i].p)
			s.bufs[i] = cbuf{}
		}
	}
	sqlite3.Xsqlite3_finalize(s.c.tls, s.h)
}

func (s *stmt) int(i int, v int64) {
	sqlite3.Xsqlite3_bind_int64(s.c.tls, s.h, int32(i), v)
}

func (s *stmt) float(i int, v float64) {
	sqlite3.Xsqlite3_bind_double(s.c.tls, s.h, int32(i), v)
}

func (s *stmt) null(i int) { sqlite3.Xsqlite3_bind_null(s.c.tls, s.h, int32(i)) }

// blob binds a copy of b (an empty b is a zero-length blob, never NULL).
// The copy lives in the parameter's C buffer until the next bind of i.
func (s *stmt) blob(i int, b []byte) {
	if len(b) == 0 {
		sqlite3.Xsqlite3_bind_zeroblob(s.c.tls, s.h, int32(i), 0)
		return
	}
	buf := &s.bufs[i]
	if buf.cap < len(b) {
		if buf.p != 0 {
			libc.Xfree(s.c.tls, buf.p)
		}
		n := max(len(b), 64)
		buf.p = libc.Xmalloc(s.c.tls, libc.Tsize_t(n))
		if buf.p == 0 {
			panic("storage: out of C memory")
		}
		buf.cap = n
	}
	copy(cbytes(buf.p, len(b)), b)
	// SQLITE_STATIC: the buffer outlives the binding (it is only reused by
	// the next bind of the same parameter).
	sqlite3.Xsqlite3_bind_blob(s.c.tls, s.h, int32(i), buf.p, int32(len(b)), 0)
}

// step advances the statement: true when a row is ready.
func (s *stmt) step() (bool, error) {
	switch rc := sqlite3.Xsqlite3_step(s.c.tls, s.h); rc {
	case sqlite3.SQLITE_ROW:
		return true, nil
	case sqlite3.SQLITE_DONE:
		return false, nil
	default:
		err := s.c.err(rc)
		sqlite3.Xsqlite3_reset(s.c.tls, s.h)
		return false, err
	}
}

// exec steps a statement that returns no rows, then resets it.
func (s *stmt) exec() error {
	_, err := s.step()
	s.reset()
	return err
}

// reset makes the statement ready to run again and releases large bind
// buffers, so one huge value does not pin its copy for the process's life.
func (s *stmt) reset() {
	sqlite3.Xsqlite3_reset(s.c.tls, s.h)
	for i := range s.bufs {
		if s.bufs[i].cap > largeBind {
			s.clear()
			libc.Xfree(s.c.tls, s.bufs[i].p)
			s.bufs[i] = cbuf{}
		}
	}
}

func (s *stmt) clear() { sqlite3.Xsqlite3_clear_bindings(s.c.tls, s.h) }

func (s *stmt) colInt(i int) int64 { return sqlite3.Xsqlite3_column_int64(s.c.tls, s.h, int32(i)) }

func (s *stmt) colFloat(i int) float64 {
	return sqlite3.Xsqlite3_column_double(s.c.tls, s.h, int32(i))
}

// colType is column i's SQLite storage class (SQLITE_INTEGER, _BLOB, ...).
func (s *stmt) colType(i int) int32 {
	return sqlite3.Xsqlite3_column_type(s.c.tls, s.h, int32(i))
}

func (s *stmt) colNull(i int) bool {
	return sqlite3.Xsqlite3_column_type(s.c.tls, s.h, int32(i)) == sqlite3.SQLITE_NULL
}

// colBlob appends column i to dst.
func (s *stmt) colBlob(i int, dst []byte) []byte {
	p := sqlite3.Xsqlite3_column_blob(s.c.tls, s.h, int32(i))
	n := int(sqlite3.Xsqlite3_column_bytes(s.c.tls, s.h, int32(i)))
	if p == 0 || n == 0 {
		return dst
	}
	return append(dst, cbytes(p, n)...)
}
