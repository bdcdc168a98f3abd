package redo

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// Reader reads records in order from a position, through its own file
// descriptors, up to whatever has been written when it gets there: it can
// replay the log at start-up, or follow the writer (a replica's feed) and
// resume later from the position it reached. Several Readers may run at
// once, on any goroutines, concurrently with the writer, Sync and
// Truncate; one Reader is used by one goroutine at a time.
//
// A Reader only reads what Write has completed (the log's Written
// position, loaded before each read), and never buffers bytes beyond it:
// a write(2) still in progress may be only partly visible to another
// descriptor.
type Reader struct {
	l     *Log
	pos   Position // next record's position
	first bool     // no record read yet: a bad frame may mean pos is not a boundary

	seg  *segment // segment being read, nil before the first read
	f    *os.File
	path string

	buf []byte // read buffer; win is its unread part
	win []byte // bytes of seg from pos on, all before the written end when read
	err error  // sticky: corruption, truncation, close
}

const readChunk = 256 << 10

// NewReader returns a Reader whose first record is the one at from, which
// must be a record boundary: a position returned by Write, Sync or a
// previous read, or Oldest. Any goroutine.
func (l *Log) NewReader(from Position) (*Reader, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	if w := l.Written(); from > w {
		return nil, fmt.Errorf("%w: position %d, the log ends at %d", ErrBeyondEnd, from, w)
	}
	if o := l.Oldest(); from < o {
		return nil, fmt.Errorf("%w: position %d, the oldest held is %d", ErrTruncated, from, o)
	}
	return &Reader{l: l, pos: from, first: true}, nil
}

// Pos is the position of the next record: where a new Reader would resume.
func (r *Reader) Pos() Position { return r.pos }

// Next returns the next record's payload and the position after it. The
// payload is valid until the next call. At the end of what has been
// written it returns io.EOF; Next may be called again later for records
// written since. A damaged record is a *CorruptError; a segment removed
// by Truncate before the Reader got to it, ErrTruncated.
func (r *Reader) Next() ([]byte, Position, error) {
	if r.err != nil {
		return nil, r.pos, r.err
	}
	w := Position(r.l.written.Load())
	if r.pos >= w {
		return nil, r.pos, io.EOF
	}
	limit := w
	if r.seg != nil {
		// Loaded after written: a segment sealed before that Write is
		// seen sealed here.
		if e, sealed := r.seg.sealedEnd(); sealed {
			limit = min(limit, e)
		}
	}
	if r.seg == nil || r.pos >= limit {
		if err := r.open(); err != nil {
			r.err = err
			return nil, r.pos, err
		}
		limit = w
		if e, sealed := r.seg.sealedEnd(); sealed {
			limit = min(limit, e)
		}
	}

	if err := r.fill(frameSize, limit); err != nil {
		return nil, r.pos, r.corrupt(whyShort, err)
	}
	n, why := frameHeader(r.win, r.pos)
	if why != "" {
		return nil, r.pos, r.corrupt(why, nil)
	}
	if Position(frameSize+n) > limit-r.pos {
		return nil, r.pos, r.corrupt(whyPastEnd, nil)
	}
	if err := r.fill(frameSize+n, limit); err != nil {
		return nil, r.pos, r.corrupt(whyPastEnd, err)
	}
	frame := r.win[:frameSize+n]
	if !payloadOK(frame, r.pos) {
		return nil, r.pos, r.corrupt(whyChecksum, nil)
	}
	r.win = r.win[frameSize+n:]
	r.pos += Position(frameSize + n)
	r.first = false
	return frame[frameSize:], r.pos, nil
}

// corrupt makes a sticky CorruptError for the frame at r.pos.
func (r *Reader) corrupt(why string, ioErr error) error {
	if ioErr != nil && !errors.Is(ioErr, io.ErrUnexpectedEOF) {
		r.err = fmt.Errorf("redo: read %s: %w", r.path, ioErr)
		return r.err
	}
	if r.first {
		why += fmt.Sprintf(" (or position %d is not a record boundary)", r.pos)
	}
	r.err = &CorruptError{File: r.path, Offset: headerSize + int64(r.pos-r.seg.base), Pos: r.pos, Reason: why}
	return r.err
}

// open switches to the segment holding r.pos and checks its header.
func (r *Reader) open() error {
	l := r.l
	l.mu.Lock()
	if l.closed.Load() {
		l.mu.Unlock()
		return ErrClosed
	}
	if len(l.segs) == 0 || r.pos < l.segs[0].base {
		var o Position
		if len(l.segs) > 0 {
			o = l.segs[0].base
		}
		l.mu.Unlock()
		return fmt.Errorf("%w: position %d, the oldest held is %d", ErrTruncated, r.pos, o)
	}
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > r.pos }) - 1
	s := l.segs[i]
	// Opened under the mutex: Sync may rename a pending segment and
	// Truncate may remove one, both under it too.
	path := segPath(l.dir, s.base, s.pending)
	f, err := os.Open(path)
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("redo: %w", err)
	}
	var h [headerSize]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		f.Close()
		return &CorruptError{File: path, Offset: 0, Pos: s.base, Reason: fmt.Sprintf("reading segment header: %v", err)}
	}
	if st, why := checkHeader(h[:], s.base); st != headerOK {
		f.Close()
		return &CorruptError{File: path, Offset: 0, Pos: s.base, Reason: why}
	}
	if r.f != nil {
		r.f.Close()
	}
	r.seg, r.f, r.path = s, f, path
	r.win = nil
	return nil
}

// fill makes r.win hold at least need bytes, reading from the segment no
// further than position limit.
func (r *Reader) fill(need int, limit Position) error {
	if len(r.win) >= need {
		return nil
	}
	have := len(r.win)
	if Position(need) > limit-r.pos {
		return io.ErrUnexpectedEOF
	}
	if cap(r.buf) < need || cap(r.buf) < readChunk {
		nb := make([]byte, max(need, readChunk))
		copy(nb, r.win)
		r.buf = nb
	} else {
		copy(r.buf[:cap(r.buf)], r.win)
	}
	r.buf = r.buf[:cap(r.buf)]
	from := r.pos + Position(have)
	n := min(Position(len(r.buf)-have), limit-from)
	if _, err := r.f.ReadAt(r.buf[have:have+int(n)], headerSize+int64(from-r.seg.base)); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	r.win = r.buf[:have+int(n)]
	return nil
}

// Close releases the Reader's file.
func (r *Reader) Close() error {
	r.err = ErrClosed
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// Replay calls fn with every record from position from to the end of what
// has been written, in order; next is the position just after the record
// (what to store as "applied up to"). The payload is valid only during the
// call. It stops at the first error fn returns and returns it. Any
// goroutine (at start-up, before the writer begins, it replays everything).
func (l *Log) Replay(from Position, fn func(next Position, payload []byte) error) error {
	r, err := l.NewReader(from)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		p, next, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(next, p); err != nil {
			return err
		}
	}
}
