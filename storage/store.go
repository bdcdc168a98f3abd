package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	sqlite3 "modernc.org/sqlite/lib"
)

// Type is a key's Redis type as stored in keys.type. The numbers are part of
// the file format.
type Type uint8

const (
	TypeNone   Type = 0
	TypeString Type = 1
	TypeList   Type = 2
	TypeHash   Type = 3
	TypeSet    Type = 4
	TypeZSet   Type = 5
	TypeStream Type = 6
)

// String is the name TYPE replies with.
func (t Type) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeList:
		return "list"
	case TypeHash:
		return "hash"
	case TypeSet:
		return "set"
	case TypeZSet:
		return "zset"
	case TypeStream:
		return "stream"
	}
	return "none"
}

// Domain errors. The actor maps each to Redis's reply text.
var (
	ErrWrongType = errors.New("storage: operation against a key holding the wrong kind of value")
	ErrNoSuchKey = errors.New("storage: no such key")
)

// NumDBs is the number of logical databases (SELECT 0..15).
const NumDBs = 16

// StagingDB is the first of NumDBs staging databases (StagingDB+db stages
// db), which no client can select: a replica's full sync loads the
// master's data there and swaps it in only once complete
// (actor/replication.go). The expiry sweep leaves them alone.
const StagingDB = NumDBs

// allDBs counts the logical and the staging databases.
const allDBs = 2 * NumDBs

// Options configure a Store.
type Options struct {
	// Path of the database file; its directory is created if missing.
	Path string
	// CacheKB is the most the flush's page cache holds, in KiB: it is
	// sized to the database before each flush (flushCacheKB), and the
	// loads' connection gets a quarter of it (openMem). 0: 32 MB.
	CacheKB int
	// CheckpointPages is the WAL size, in pages, above which the flush
	// checkpoints after its commit (memflush.go). SQLite's own
	// autocheckpoint is turned off.
	CheckpointPages int
	// MaxPageCount caps the database file at this many pages
	// (SQLite's max_page_count); 0 leaves it unlimited.
	MaxPageCount int64
	// MaxMemory bounds what the engine holds in memory, in bytes; 0 for no
	// bound.
	MaxMemory int64
}

// Store is the keyspace in one SQLite database. See the package doc for who
// may call what.
type Store struct {
	// OnCheckpoint, when set, is told how long each WAL checkpoint took.
	// It is called on the flush's goroutine; set it before the first
	// write.
	OnCheckpoint func(took time.Duration)

	// RecordNew makes writes record Created in the change record when
	// they create a key (keyspace notifications' "new" event; the owner
	// sets it while someone wants those, so that nobody else pays).
	RecordNew bool

	path    string
	cacheKB int        // the flush connection's page cache (Options.CacheKB)
	mem     *memEngine // the engine: the keyspace in memory (memkeys.go)
	// landedMem is a flush that Commit ran and nobody has landed (Land
	// returns it).
	landedMem *Flush
	c         *conn
	stmts     []*stmt // prepared lazily, indexed by query.idx

	inTx  bool
	dirty bool // the open transaction wrote something
	// commits counts transactions that wrote; what SyncWAL covers is named
	// by this number.
	commits uint64

	nextID    int64
	hfe       map[int64]int64 // hashes with field expiries: id -> earliest (hashfe.go)
	keyCounts [allDBs]int64
	keyDeltas [allDBs]int64
	saved     int // open Savepoints

	// version is the last key version handed out, versionMark the
	// high-water mark persisted for it (versions.go).
	version, versionMark int64

	// The change record (touched.go): its entries and the arena their keys
	// are copied into.
	touches   []Touch
	touchKeys []byte
	// open is the collections changed by the running command, to be saved
	// by EndCommand (collections.go).
	open []*Coll

	// Now is the time, in unix milliseconds, that expiry is judged against.
	// The actor sets it before each command, like Redis's command time
	// snapshot, so one command sees one instant.
	Now int64

	wal walFile

	ckptBytes int64

	searchStmts map[string]*stmt // statements over the search tables (search.go)
}

// query is a SQL statement known at compile time, run on the actor's
// connection. Each is prepared once per Store, on first use, and kept.
type query struct {
	sql string
	idx int
}

var queries []*query

func newQuery(sql string) *query {
	q := &query{sql: sql, idx: len(queries)}
	queries = append(queries, q)
	return q
}

// q returns the prepared statement for qq, ready to bind.
func (s *Store) q(qq *query) *stmt { return s.prepared(qq) }

// prepared returns qq's prepared statement.
func (s *Store) prepared(qq *query) *stmt {
	if qq.idx < len(s.stmts) && s.stmts[qq.idx] != nil {
		return s.stmts[qq.idx]
	}
	if qq.idx >= len(s.stmts) {
		s.stmts = append(s.stmts, make([]*stmt, len(queries)-len(s.stmts))...)
	}
	st, err := s.c.prepare(qq.sql)
	if err != nil {
		// Every query is a constant; failing to prepare one is a bug that
		// the tests catch, not a runtime condition.
		panic(err)
	}
	s.stmts[qq.idx] = st
	return st
}

// Open opens (creating if needed) the database at o.Path, migrates its
// schema and makes it ready. A file that is not a readable Cellar database
// is an error, never a silent fresh start.
func Open(o Options) (*Store, error) {
	if dir := filepath.Dir(o.Path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("storage: create data directory: %w", err)
		}
	}
	if fi, err := os.Stat(o.Path); err == nil {
		if fi.IsDir() {
			return nil, fmt.Errorf("storage: %s is a directory, not a database file", o.Path)
		}
		f, err := os.Open(o.Path)
		if err != nil {
			return nil, fmt.Errorf("storage: cannot read %s: %w", o.Path, err)
		}
		f.Close()
	}
	c, err := openConn(o.Path, sqlite3.SQLITE_OPEN_READWRITE|sqlite3.SQLITE_OPEN_CREATE)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", o.Path, err)
	}
	s := &Store{path: o.Path, c: c}
	if err := s.init(o); err != nil {
		c.close()
		return nil, fmt.Errorf("storage: %s: %w", o.Path, err)
	}
	if err := s.openMem(o.MaxMemory); err != nil {
		s.Close()
		return nil, fmt.Errorf("storage: %s: %w", o.Path, err)
	}
	s.mem.maxPages.Store(o.MaxPageCount)
	return s, nil
}

func (s *Store) init(o Options) error {
	s.cacheKB = o.CacheKB
	if s.cacheKB <= 0 {
		s.cacheKB = 32 << 10
	}
	// This connection serves only the actor's own few statements (the
	// schema, counters, function libraries): SQLite's default cache.
	pragmas := fmt.Sprintf(`
		PRAGMA busy_timeout = 5000;
		PRAGMA journal_mode = WAL;
		PRAGMA synchronous = NORMAL;
		PRAGMA temp_store = MEMORY;
		PRAGMA foreign_keys = OFF;`)
	// Checkpoints are the flush's business (memflush.go), never a commit's.
	s.ckptBytes = int64(o.CheckpointPages) * 4096
	if s.ckptBytes <= 0 {
		s.ckptBytes = 1000 * 4096
	}
	// When the WAL starts over, SQLite cuts the file back to this size, so
	// the file's length tells how much of it is in use.
	pragmas += fmt.Sprintf("PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = %d;", s.ckptBytes)
	if o.MaxPageCount > 0 {
		pragmas += fmt.Sprintf("PRAGMA max_page_count = %d;", o.MaxPageCount)
	}
	if err := s.c.exec(pragmas); err != nil {
		if c := primary(err); c == codeNotADB || c == codeCorrupt {
			return fmt.Errorf("not a database or corrupt (%w); refusing to start with it", err)
		}
		return err
	}
	if err := s.checkWAL(); err != nil {
		return err
	}
	if err := s.migrate(); err != nil {
		if c := primary(err); c == codeNotADB || c == codeCorrupt {
			return fmt.Errorf("not a database or corrupt (%w); refusing to start with it", err)
		}
		return err
	}
	if err := s.loadFieldExpiries(); err != nil {
		return err
	}
	if err := s.loadCounters(); err != nil {
		return err
	}
	if err := s.loadVersion(); err != nil {
		return err
	}
	return s.wal.open(s.path + "-wal")
}

// checkWAL makes sure journal_mode really is WAL (it silently stays
// something else on filesystems that cannot share memory).
func (s *Store) checkWAL() error {
	st, err := s.c.prepare("PRAGMA journal_mode")
	if err != nil {
		return err
	}
	defer st.close()
	if _, err := st.step(); err != nil {
		return err
	}
	mode := string(st.colBlob(0, nil))
	st.reset()
	if mode != "wal" {
		return fmt.Errorf("journal_mode is %q, want wal", mode)
	}
	return nil
}

var (
	qMaxID     = newQuery("SELECT coalesce(max(id), 0) FROM keys WHERE db = ?1")
	qLoadStats = newQuery("SELECT db, keys FROM dbstats")
	qSavepoint = newQuery("SAVEPOINT cmd")
	qRelease   = newQuery("RELEASE cmd")
	qUndo      = newQuery("ROLLBACK TO cmd")
)

func (s *Store) loadCounters() error {
	for db := 0; db < allDBs; db++ {
		st := s.q(qMaxID)
		st.int(1, int64(db))
		if _, err := st.step(); err != nil {
			return err
		}
		s.nextID = max(s.nextID, st.colInt(0)+1)
		st.reset()
	}
	st := s.q(qLoadStats)
	defer st.reset()
	for {
		row, err := st.step()
		if err != nil {
			return err
		}
		if !row {
			return nil
		}
		if db := st.colInt(0); db >= 0 && db < allDBs {
			s.keyCounts[db] = st.colInt(1)
		}
	}
}

// Close closes the database. The WAL stays for SQLite to checkpoint on its
// next open, or is checkpointed here when possible.
func (s *Store) Close() error {
	if s.mem != nil {
		s.mem.close() // lands the flight, closes the engine's connections
		s.mem = nil
	}
	for _, st := range s.stmts {
		if st != nil {
			st.close()
		}
	}
	s.stmts = nil
	s.closeSearchStmts()
	s.wal.close()
	// The actor's connection is the last one open, so that closing it
	// checkpoints the whole WAL and removes it.
	return s.c.close()
}

// Path is the database file's path.
func (s *Store) Path() string { return s.path }

// Begin opens the transaction that the actor's next round runs in.
func (s *Store) Begin() error {
	s.inTx = true
	return nil
}

// Commit ends the round's transaction. wrote reports whether it changed
// anything; seq then names the commit for SyncWAL and durability tracking.
func (s *Store) Commit() (wrote bool, seq uint64, err error) {
	return s.mem.commit()
}

// Rollback abandons the round's transaction and its counter changes.
func (s *Store) Rollback() {
	s.dropOpen()
	s.ResetTouched()
	s.mem.rollback()
}

// Savepoint marks the state of the actor's own SQLite statements (function
// libraries, search tables: they are written on its connection, not by
// the flush) that Undo goes back to, and Release forgets the mark.
// FUNCTION RESTORE uses them: a restore applies whole or not at all.
// Savepoints nest; Release and Undo act on the innermost one.
func (s *Store) Savepoint() error {
	if err := s.q(qSavepoint).exec(); err != nil {
		return err
	}
	s.saved++
	return nil
}

// Release forgets the innermost Savepoint, keeping what was done since.
func (s *Store) Release() error {
	if s.saved > 0 {
		s.saved--
	}
	return s.q(qRelease).exec()
}

// Undo rolls back to the innermost Savepoint and forgets it. It reports
// false when SQLite has already abandoned the transaction (it does so for
// some failures), in which case the caller must treat the round as failed.
func (s *Store) Undo() bool {
	if s.c.autocommit() || s.saved == 0 {
		return false
	}
	s.saved--
	return s.q(qUndo).exec() == nil && s.q(qRelease).exec() == nil
}

// MaxPageCount is the database size cap in pages.
func (s *Store) MaxPageCount() (int64, error) { return s.SetMaxPageCount(-1) }

// SetMaxPageCount changes the database size cap (0: unlimited; negative:
// leave it) and reports the cap in effect (SQLite never sets it below the
// current size).
func (s *Store) SetMaxPageCount(n int64) (int64, error) {
	sql := "PRAGMA max_page_count"
	switch {
	case n == 0:
		sql += " = 4294967294" // SQLite's largest: no cap
	case n > 0:
		sql += fmt.Sprintf(" = %d", n)
	}
	st, err := s.c.prepare(sql)
	if err != nil {
		return 0, err
	}
	defer st.close()
	if _, err := st.step(); err != nil {
		return 0, err
	}
	got := st.colInt(0)
	st.reset()
	if n >= 0 {
		s.mem.maxPages.Store(got) // the flush's connection writes: it takes the cap
	}
	return got, nil
}

// InTx reports whether a round's transaction is open.
func (s *Store) InTx() bool {
	return s.mem.hasWork()
}

// Dirty reports whether the open transaction has written anything.
func (s *Store) Dirty() bool { return s.dirty }

// Commits is the number of writing transactions committed so far.
func (s *Store) Commits() uint64 { return s.commits }

// DiskFull reports whether err is SQLite running out of space.
func DiskFull(err error) bool { return primary(err) == codeFull }

// walFile keeps an fd on the WAL so that its fsync can run on another
// goroutine while the actor goes on committing. SQLite holds no POSIX locks
// on the -wal file, so opening and closing our own fd on it is harmless
// (unlike on the main database file).
type walFile struct {
	mu   sync.Mutex
	path string
	f    *os.File
	ino  uint64
}

func (w *walFile) open(path string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.path = path
	return w.reopenLocked()
}

func (w *walFile) reopenLocked() error {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	f, err := os.OpenFile(w.path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("open WAL for fsync: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	w.f, w.ino = f, fi.Sys().(*syscall.Stat_t).Ino
	return nil
}

func (w *walFile) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
}

// SyncWAL makes every commit made before the call durable by fsyncing the
// WAL (and, if SQLite recreated the file, reopening it first). It is safe to
// call from any goroutine, concurrently with commits. An error means the
// durability of those commits is unknown: the caller must stop
// acknowledging writes, never retry and pretend.
func (s *Store) SyncWAL() error { return s.wal.sync() }

func (w *walFile) sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if fi, err := os.Stat(w.path); err == nil {
		if ino := fi.Sys().(*syscall.Stat_t).Ino; ino != w.ino || w.f == nil {
			if err := w.reopenLocked(); err != nil {
				return err
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if w.f == nil {
		return nil
	}
	if err := syscall.Fdatasync(int(w.f.Fd())); err != nil {
		return fmt.Errorf("storage: fdatasync WAL: %w", err)
	}
	return nil
}
