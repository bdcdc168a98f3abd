package redo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
)

// Position is a point in the logical log: the number of record bytes
// (frames and payloads, not segment headers) before it since the log
// began. A Position between two records names the boundary there; Write,
// Sync and Replay report the position just after the records they
// covered. See doc.go for why byte offsets and not sequence numbers.
type Position uint64

// Defaults for Options.
const (
	DefaultSegmentSize = 64 << 20
	DefaultMaxRecord   = 512 << 20 // Redis's proto-max-bulk-len default
	DefaultMaxBuffered = 1 << 30
)

// Options configures a Log. Zero values take the defaults.
type Options struct {
	// SegmentSize is the size past which the next Write starts a new
	// segment file. A segment holds whole Writes, so it can exceed
	// SegmentSize by one Write.
	SegmentSize int64
	// MaxRecord is the largest payload Append takes (at most
	// MaxRecordLimit).
	MaxRecord int
	// MaxBuffered bounds the bytes Append may gather before a Write
	// (frames included); at least MaxRecord plus one frame.
	MaxBuffered int
	// Start is the position the caller has already applied elsewhere (the
	// position stored in SQLite), 0 for a new database. Open drops
	// segments wholly before it, as Truncate(Start) would; and if the log
	// ends before Start (or there is none), the log restarts at Start, so
	// that positions never go back behind what the caller has applied.
	Start Position

	fs *fsys // tests only: nil means the real file system
}

var (
	// ErrTooLarge: Append was given a payload over Options.MaxRecord.
	ErrTooLarge = errors.New("redo: record too large")
	// ErrBufferFull: Append would gather more than Options.MaxBuffered
	// bytes before a Write.
	ErrBufferFull = errors.New("redo: too much appended before a Write")
	// ErrTruncated: a read asked for a position older than the oldest the
	// log still holds (Truncate removed it).
	ErrTruncated = errors.New("redo: position truncated from the log")
	// ErrBeyondEnd: a read asked for a position past the end of the log.
	ErrBeyondEnd = errors.New("redo: position beyond the end of the log")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("redo: log closed")
)

// CorruptError reports damage the log refuses to start with (or that a
// Reader met): the file, the byte offset in it, the position, and why.
type CorruptError struct {
	File   string   // path of the segment file
	Offset int64    // byte offset in the file
	Pos    Position // logical position at that offset
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("redo: corrupt log: %s at offset %d (position %d): %s", e.File, e.Offset, e.Pos, e.Reason)
}

// Log is the redo log. See doc.go for which goroutine may call what.
type Log struct {
	dir string
	opt Options
	fs  *fsys

	// Writer-owned: touched only by the goroutine calling Append and Write.
	buf []byte   // buf[:headerSize] is room for a new segment's header; frames follow
	end Position // position after the last written record
	cur *segment // segment being written; the last of segs, never truncated

	written atomic.Uint64         // end, published after each Write for other goroutines
	synced  atomic.Uint64         // everything before it is durable; stored by Sync (and Open)
	failed  atomic.Pointer[error] // sticky fsync (or unrecoverable write) error
	closed  atomic.Bool           // set under syncMu and mu
	syncMu  sync.Mutex            // one Sync (or Close) at a time
	syncBuf []*segment            // Sync's scratch list (syncMu)
	mu      sync.Mutex            // guards segs and the segment fields marked "mu"
	segs    []*segment            // oldest first; never empty while open
	lock    *os.File              // holds the directory's lock until Close
}

// segment is one segment file.
type segment struct {
	base Position

	// end is the position after the segment's last record once it is
	// sealed (a later segment was started), 0 while it is being written.
	// A sealed segment always holds at least one record, so its end is
	// never 0. Atomic because Readers load it without the mutex.
	end atomic.Uint64

	size int64 // bytes in the file; writer-owned, meaningful for the current segment only

	f       file // open for write and fsync; nil once closed (mu)
	pending bool // named *.log.pending: predecessors not yet known fsynced (mu)
	durable bool // sealed and fsynced to its end (mu)
	syncing bool // a Sync is using f right now; nobody else may close it (mu)
	removed bool // Truncate deleted the file (mu)
}

func (s *segment) sealedEnd() (Position, bool) {
	e := s.end.Load()
	return Position(e), e != 0
}

// Open opens the log in dir, creating the directory and a fresh log if
// there is none, and recovers it: a torn tail is cut and reported in the
// returned Recovery; damage anywhere else is a *CorruptError and the log
// does not open. See doc.go, "Recovery".
func Open(dir string, opt Options) (*Log, Recovery, error) {
	if err := opt.fill(); err != nil {
		return nil, Recovery{}, err
	}
	fsys := opt.fs
	if fsys == nil {
		fsys = osFS
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, Recovery{}, fmt.Errorf("redo: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, Recovery{}, err
	}
	l := &Log{dir: dir, opt: opt, fs: fsys, lock: lock}
	rec, err := l.recover()
	if err != nil {
		l.closeFiles()
		return nil, rec, err
	}
	l.buf = make([]byte, headerSize, 64<<10)
	l.cur = l.segs[len(l.segs)-1]
	l.written.Store(uint64(l.end))
	l.synced.Store(uint64(l.end))
	return l, rec, nil
}

func (o *Options) fill() error {
	if o.SegmentSize <= 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.MaxRecord <= 0 {
		o.MaxRecord = DefaultMaxRecord
	}
	if o.MaxRecord > MaxRecordLimit {
		return fmt.Errorf("redo: MaxRecord %d is over the format's limit %d", o.MaxRecord, MaxRecordLimit)
	}
	if o.MaxBuffered <= 0 {
		o.MaxBuffered = max(DefaultMaxBuffered, o.MaxRecord+frameSize)
	}
	if o.MaxBuffered < o.MaxRecord+frameSize {
		return fmt.Errorf("redo: MaxBuffered %d cannot hold one record of MaxRecord %d bytes", o.MaxBuffered, o.MaxRecord)
	}
	return nil
}

// Append buffers one record. Nothing reaches the file until Write. Writer
// goroutine only. The payload is copied; the caller may reuse it at once.
func (l *Log) Append(payload []byte) error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	if l.closed.Load() {
		return ErrClosed
	}
	if len(payload) > l.opt.MaxRecord {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(payload), l.opt.MaxRecord)
	}
	buffered := len(l.buf) - headerSize
	if buffered+frameSize+len(payload) > l.opt.MaxBuffered {
		return fmt.Errorf("%w: %d bytes buffered, the limit is %d", ErrBufferFull, buffered, l.opt.MaxBuffered)
	}
	l.buf = appendFrame(l.buf, l.end+Position(buffered), payload)
	return nil
}

// Buffered is the number of bytes (frames included) appended since the
// last Write. Writer goroutine only.
func (l *Log) Buffered() int { return len(l.buf) - headerSize }

// Pending is the position the log will be at once what is buffered is
// written: positions count record bytes only, so it is known before the
// Write (a caller can store it with the data the records describe, and
// write them after). Writer goroutine only.
func (l *Log) Pending() Position { return l.end + Position(len(l.buf)-headerSize) }

// Discard drops what was appended since the last Write: those records are
// never logged (the data they describe was not kept). Writer goroutine
// only.
func (l *Log) Discard() { l.reset() }

// Write writes every record appended since the last Write with one
// write(2) and returns the position after them. If it starts a new segment
// first (the current one reached SegmentSize), the new segment's header
// goes in the same write. Writer goroutine only.
//
// On error nothing appended since the last Write is in the log (a partial
// write is cut off again) and the returned position is unchanged; the
// caller must treat those records as never logged. If the partial write
// cannot be cut off, or an fsync failed earlier, the error is sticky.
func (l *Log) Write() (Position, error) {
	if p := l.failed.Load(); p != nil {
		l.reset()
		return l.end, *p
	}
	if l.closed.Load() {
		l.reset()
		return l.end, ErrClosed
	}
	if len(l.buf) == headerSize {
		return l.end, nil
	}
	if l.cur.size >= l.opt.SegmentSize && l.end > l.cur.base {
		// Only a segment holding records is sealed: a sealed segment's
		// end is then always past its base, and never 0.
		if err := l.roll(); err != nil {
			l.reset()
			return l.end, err
		}
	}
	s := l.cur
	data := l.buf[headerSize:]
	if s.size == 0 {
		// A segment's header is written with its first records.
		putHeader(l.buf[:headerSize], s.base)
		data = l.buf
	}
	if _, err := s.f.WriteAt(data, s.size); err != nil {
		err = fmt.Errorf("redo: write segment %d at offset %d: %w", uint64(s.base), s.size, err)
		if terr := s.f.Truncate(s.size); terr != nil {
			// Garbage may stay behind the last record; writing more after
			// it would turn a torn tail into damage in the middle.
			err = l.fail(fmt.Errorf("%w; cutting the partial write off failed too: %v", err, terr))
		}
		l.reset()
		return l.end, err
	}
	s.size += int64(len(data))
	l.end += Position(len(l.buf) - headerSize)
	l.written.Store(uint64(l.end))
	l.reset()
	return l.end, nil
}

// reset empties the buffer, letting go of it if a big round grew it.
func (l *Log) reset() {
	if cap(l.buf) > 4<<20 {
		l.buf = make([]byte, headerSize, 64<<10)
		return
	}
	l.buf = l.buf[:headerSize]
}

// roll seals the current segment and starts a pending one at l.end.
// Writer goroutine, between writes.
func (l *Log) roll() error {
	f, err := l.fs.create(segPath(l.dir, l.end, true))
	if err != nil {
		return fmt.Errorf("redo: start segment: %w", err)
	}
	next := &segment{base: l.end, f: f, pending: true}
	old := l.cur
	l.mu.Lock()
	old.end.Store(uint64(l.end))
	if Position(l.synced.Load()) >= l.end && !old.syncing && old.f != nil {
		// Fsynced to its end already: nothing more will ever be written
		// to it, so its descriptor can go.
		old.durable = true
		old.f.Close()
		old.f = nil
	}
	l.segs = append(l.segs, next)
	l.mu.Unlock()
	l.cur = next
	return nil
}

// fail records err as the sticky error (the first one wins) and returns
// the sticky error.
func (l *Log) fail(err error) error {
	l.failed.CompareAndSwap(nil, &err)
	return *l.failed.Load()
}

// Err is the sticky error, nil if none. Any goroutine.
func (l *Log) Err() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Written is the position after the last completed Write. Any goroutine.
func (l *Log) Written() Position { return Position(l.written.Load()) }

// Synced is the position before which everything is known fsynced. Any
// goroutine.
func (l *Log) Synced() Position { return Position(l.synced.Load()) }

// Oldest is the first position the log still holds. Any goroutine.
func (l *Log) Oldest() Position {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.segs) == 0 {
		return 0
	}
	return l.segs[0].base
}

// Dir is the directory the log lives in.
func (l *Log) Dir() string { return l.dir }

// Sync makes everything written before it started durable and returns the
// position it covers: every Write that returned before Sync was called is
// before that position (group commit: one fsync covers all of them). It
// may run on any goroutine, concurrently with Append and Write; Syncs run
// one at a time. It fsyncs every segment that holds unsynced data before
// that position, then promotes pending segments (rename and a directory
// fsync; see doc.go, "Rollover").
//
// An error is sticky: this and every later Sync, Write and Append return
// it. The log never retries an fsync: after a failure the kernel may have
// dropped the dirty pages, so a later success would prove nothing.
func (l *Log) Sync() (Position, error) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if p := l.failed.Load(); p != nil {
		return l.Synced(), *p
	}
	if l.closed.Load() {
		return l.Synced(), ErrClosed
	}
	w := Position(l.written.Load())
	if w <= l.Synced() {
		return l.Synced(), nil
	}

	todo := l.syncBuf[:0]
	l.mu.Lock()
	for _, s := range l.segs {
		if s.base >= w {
			break
		}
		if s.f != nil && !s.durable {
			s.syncing = true
			todo = append(todo, s)
		}
	}
	l.mu.Unlock()

	var err error
	for _, s := range todo {
		if err = s.f.Sync(); err != nil {
			err = fmt.Errorf("redo: fsync segment %d: %w", uint64(s.base), err)
			break
		}
	}

	l.mu.Lock()
	for i, s := range todo {
		s.syncing = false
		if e, sealed := s.sealedEnd(); err == nil && sealed && e <= w {
			s.durable = true
		}
		if (s.durable || s.removed) && s.f != nil {
			s.f.Close()
			s.f = nil
		}
		todo[i] = nil
	}
	l.syncBuf = todo[:0]
	if err != nil {
		l.mu.Unlock()
		return l.Synced(), l.fail(err)
	}
	renamed := false
	for _, s := range l.segs {
		if s.base > w {
			break
		}
		if !s.pending {
			continue
		}
		// Everything before s.base is fsynced, so s may now count as part
		// of the log whatever happens to it (doc.go, "Rollover").
		if err = os.Rename(segPath(l.dir, s.base, true), segPath(l.dir, s.base, false)); err != nil {
			break
		}
		s.pending = false
		renamed = true
	}
	l.mu.Unlock()
	if err != nil {
		return l.Synced(), l.fail(fmt.Errorf("redo: promote pending segment: %w", err))
	}
	if renamed {
		// The new names, and with them the files, survive a crash only
		// once the directory is fsynced.
		if err := l.fs.syncDir(l.dir); err != nil {
			return l.Synced(), l.fail(fmt.Errorf("redo: fsync directory %s: %w", l.dir, err))
		}
	}
	l.synced.Store(uint64(w))
	return w, nil
}

// Truncate removes the segment files that lie wholly before the position
// (every record in them ends at or before it) and reports how many it
// removed. The segment being written is never removed. Any goroutine;
// it unlinks files and never fsyncs (doc.go, "Truncate").
func (l *Log) Truncate(before Position) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	n := 0
	for len(l.segs) > 1 && l.segs[1].base <= before {
		s := l.segs[0]
		// Oldest first, so an interrupted Truncate leaves the log
		// contiguous.
		if err := os.Remove(segPath(l.dir, s.base, s.pending)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("redo: truncate: %w", err)
		}
		s.removed = true
		if s.f != nil && !s.syncing {
			s.f.Close()
			s.f = nil
		}
		l.segs[0] = nil
		l.segs = l.segs[1:]
		n++
	}
	return n, nil
}

// Close closes the log's files without fsyncing them: call Sync first for
// durability. It waits for a running Sync. The writer must not Append or
// Write concurrently with Close; Readers still open fail from then on.
func (l *Log) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Swap(true) {
		return nil
	}
	return l.closeFiles()
}

func (l *Log) closeFiles() error {
	var err error
	if l.lock != nil {
		err = l.lock.Close() // releases the flock
		l.lock = nil
	}
	for _, s := range l.segs {
		if s.f != nil {
			if e := s.f.Close(); e != nil && err == nil {
				err = e
			}
			s.f = nil
		}
	}
	return err
}
