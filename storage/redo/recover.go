package redo

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Recovery is what Open found and did, for the caller to log.
type Recovery struct {
	Oldest   Position // first position held after recovery
	End      Position // position the next record will get
	Segments int      // segment files held
	// Torn is the torn tail that was cut off, nil if none.
	Torn *TornTail
	// Obsolete lists the segment files removed because they lay wholly
	// before Options.Start.
	Obsolete []string
	// Restarted is set when the log ended before Options.Start (or was
	// empty or missing while Start > 0): every old segment was removed
	// and the log began afresh at Start.
	Restarted bool
	// Promoted lists the pending segments that Open found intact and
	// renamed to their final names.
	Promoted []string
}

// TornTail describes a cut: the log now ends at At, which is Offset bytes
// into File; Bytes bytes were discarded in all, including the Discarded
// pending segments that followed.
type TornTail struct {
	File      string
	Offset    int64
	At        Position
	Bytes     int64
	Reason    string
	Discarded []string
}

func (t *TornTail) String() string {
	s := fmt.Sprintf("cut a torn tail of %d bytes at position %d (%s, offset %d): %s", t.Bytes, t.At, t.File, t.Offset, t.Reason)
	if len(t.Discarded) > 0 {
		s += "; discarded " + strings.Join(t.Discarded, ", ")
	}
	return s
}

func (r Recovery) String() string {
	s := fmt.Sprintf("redo log: positions %d to %d in %d segments", r.Oldest, r.End, r.Segments)
	if r.Torn != nil {
		s += "; " + r.Torn.String()
	}
	if len(r.Obsolete) > 0 {
		s += fmt.Sprintf("; removed %d segments before the start position", len(r.Obsolete))
	}
	if r.Restarted {
		s += fmt.Sprintf("; the log ended before the start position and restarted at %d", r.End)
	}
	if len(r.Promoted) > 0 {
		s += "; promoted " + strings.Join(r.Promoted, ", ")
	}
	return s
}

// segFile is a segment file found on disk.
type segFile struct {
	base    Position
	pending bool
	path    string
	size    int64
}

// recover reads the directory, checks every segment, cuts a torn tail,
// and leaves l.segs and l.end ready for writing. See doc.go, "Recovery".
func (l *Log) recover() (Recovery, error) {
	var rec Recovery
	files, err := l.listSegments()
	if err != nil {
		return rec, err
	}

	// Segments wholly before Start are covered by the caller already.
	for len(files) > 1 && files[1].base <= l.opt.Start {
		if err := os.Remove(files[0].path); err != nil {
			return rec, fmt.Errorf("redo: %w", err)
		}
		rec.Obsolete = append(rec.Obsolete, files[0].path)
		files = files[1:]
	}

	// The tail zone is the last final segment and the pending ones after
	// it. Segments before it were fsynced before their successor was
	// promoted, so they must be perfect; in the tail zone the first flaw
	// is a torn tail, provided nothing valid follows it in its file.
	tailFrom := 0
	for i, f := range files {
		if !f.pending {
			tailFrom = i
		}
	}
	keep := len(files)
	var end Position
	var torn *TornTail
	for i, f := range files {
		if i > 0 && f.base != end {
			prev := files[i-1]
			switch {
			case end > f.base:
				return rec, &CorruptError{File: f.path, Offset: 0, Pos: f.base,
					Reason: fmt.Sprintf("segment overlaps %s, which ends at position %d", prev.path, end)}
			case !f.pending:
				return rec, &CorruptError{File: f.path, Offset: 0, Pos: f.base,
					Reason: fmt.Sprintf("log missing between position %d (end of %s) and %d (start of this segment)", end, prev.path, f.base)}
			}
			// A pending segment whose predecessor ends short: the
			// predecessor's last records did not survive (they were never
			// fsynced), so nothing after them may count either.
			torn = &TornTail{File: prev.path, Offset: prev.size, At: end,
				Reason: fmt.Sprintf("%s starts at position %d but the log before it ends at %d", filepath.Base(f.path), f.base, end)}
			keep = i
			break
		}
		data, err := os.ReadFile(f.path)
		if err != nil {
			return rec, fmt.Errorf("redo: %w", err)
		}
		segEnd, bad, why, err := scanSegment(f.path, data, f.base)
		if err != nil {
			return rec, err
		}
		end = segEnd
		if bad < 0 {
			continue
		}
		ce := &CorruptError{File: f.path, Offset: int64(bad), Pos: segEnd, Reason: why}
		if i < tailFrom {
			return rec, ce
		}
		if off := findFrame(data, bad, f.base); off >= 0 {
			ce.Reason += fmt.Sprintf(", yet a valid record follows at offset %d", off)
			return rec, ce
		}
		// A torn tail: the write cut short was the last thing in the log.
		torn = &TornTail{File: f.path, Offset: int64(bad), At: segEnd, Reason: why}
		if bad < headerSize {
			keep = i // not even the header survived: the file goes whole
		} else {
			if err := os.Truncate(f.path, int64(bad)); err != nil {
				return rec, fmt.Errorf("redo: cut torn tail: %w", err)
			}
			torn.Bytes = int64(len(data) - bad)
			files[i].size = int64(bad)
			keep = i + 1
		}
		break
	}
	for _, f := range files[keep:] {
		if err := os.Remove(f.path); err != nil {
			return rec, fmt.Errorf("redo: %w", err)
		}
		torn.Bytes += f.size
		torn.Discarded = append(torn.Discarded, f.path)
	}
	files = files[:keep]
	rec.Torn = torn

	if len(files) == 0 || end < l.opt.Start {
		// Nothing the caller has not applied already: begin afresh, at
		// Start or where the log ended, whichever is later, so positions
		// never go back.
		for _, f := range files {
			if err := os.Remove(f.path); err != nil {
				return rec, fmt.Errorf("redo: %w", err)
			}
		}
		rec.Restarted = end < l.opt.Start
		end = max(end, l.opt.Start)
		if err := l.fresh(end); err != nil {
			return rec, err
		}
	} else if err := l.adopt(files, tailFrom, &rec); err != nil {
		return rec, err
	}
	l.end = end
	rec.Oldest = l.segs[0].base
	rec.End = end
	rec.Segments = len(l.segs)
	return rec, nil
}

// listSegments lists the segment files in the directory, oldest first.
// Other files are ignored.
func (l *Log) listSegments() ([]segFile, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("redo: %w", err)
	}
	var files []segFile
	for _, e := range entries {
		base, pending, ok := parseSegName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("redo: %w", err)
		}
		files = append(files, segFile{base: base, pending: pending, path: filepath.Join(l.dir, e.Name()), size: info.Size()})
	}
	slices.SortFunc(files, func(a, b segFile) int {
		switch {
		case a.base < b.base:
			return -1
		case a.base > b.base:
			return 1
		}
		return 0
	})
	for i := 1; i < len(files); i++ {
		if files[i].base == files[i-1].base {
			return nil, fmt.Errorf("redo: %s and %s start at the same position", files[i-1].path, files[i].path)
		}
		if files[i-1].pending && !files[i].pending {
			// Pending segments are promoted oldest first, so a final one
			// never follows a pending one.
			return nil, fmt.Errorf("redo: %s is final but %s before it is still pending", files[i].path, files[i-1].path)
		}
	}
	return files, nil
}

// scanSegment checks a segment's header and records. It returns the
// position after the last good record and, if it met a flaw, the file
// offset of the flaw (else -1) and why. A header that is intact but not
// ours is an error whatever the segment's place.
func scanSegment(path string, data []byte, base Position) (end Position, bad int, why string, err error) {
	switch st, why := checkHeader(data, base); st {
	case headerDamaged:
		return base, 0, why, nil
	case headerForeign:
		return base, 0, "", &CorruptError{File: path, Offset: 0, Pos: base, Reason: why}
	}
	off := headerSize
	for off < len(data) {
		pos := base + Position(off-headerSize)
		n, why := checkFrame(data[off:], pos)
		if why != "" {
			return pos, off, why, nil
		}
		off += n
	}
	return base + Position(off-headerSize), -1, "", nil
}

// findFrame returns the offset of the first valid record that starts
// after offset bad in a segment (at its own position), or -1. It tells a
// torn tail (nothing valid after the flaw) from damage in the middle. The
// header check makes each try cheap: the payload is read only when the
// 12-byte frame header is valid for that exact position.
func findFrame(data []byte, bad int, base Position) int {
	for off := max(bad+1, headerSize); off+frameSize <= len(data); off++ {
		if _, why := checkFrame(data[off:], base+Position(off-headerSize)); why == "" {
			return off
		}
	}
	return -1
}

// fresh starts a log with no records at base: a final segment holding
// just its header, fsynced, its directory entry fsynced.
func (l *Log) fresh(base Position) error {
	path := segPath(l.dir, base, false)
	f, err := l.fs.create(path)
	if err != nil {
		return fmt.Errorf("redo: %w", err)
	}
	var h [headerSize]byte
	putHeader(h[:], base)
	if _, err := f.WriteAt(h[:], 0); err != nil {
		f.Close()
		return fmt.Errorf("redo: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("redo: fsync %s: %w", path, err)
	}
	if err := l.fs.syncDir(l.dir); err != nil {
		f.Close()
		return fmt.Errorf("redo: fsync directory %s: %w", l.dir, err)
	}
	l.segs = []*segment{{base: base, f: f, size: headerSize}}
	return nil
}

// adopt takes over the checked segments: fsyncs the tail zone (the last
// run may have been killed before it could), promotes pending segments,
// fsyncs the directory, and opens the last segment for writing.
func (l *Log) adopt(files []segFile, tailFrom int, rec *Recovery) error {
	last := len(files) - 1
	var lastFile file
	for i := min(tailFrom, last); i <= last; i++ {
		f, err := l.fs.open(files[i].path)
		if err != nil {
			return fmt.Errorf("redo: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("redo: fsync %s: %w", files[i].path, err)
		}
		if i == last {
			lastFile = f
		} else if err := f.Close(); err != nil {
			return fmt.Errorf("redo: %w", err)
		}
	}
	// All fsynced, oldest first: every pending segment's predecessors are
	// durable now, so it can take its final name.
	for i := range files {
		if !files[i].pending {
			continue
		}
		final := segPath(l.dir, files[i].base, false)
		if err := os.Rename(files[i].path, final); err != nil {
			lastFile.Close()
			return fmt.Errorf("redo: promote pending segment: %w", err)
		}
		rec.Promoted = append(rec.Promoted, files[i].path)
		files[i].path, files[i].pending = final, false
	}
	if err := l.fs.syncDir(l.dir); err != nil {
		lastFile.Close()
		return fmt.Errorf("redo: fsync directory %s: %w", l.dir, err)
	}
	l.segs = make([]*segment, len(files))
	for i, f := range files {
		s := &segment{base: f.base, size: f.size}
		if i < last {
			s.end.Store(uint64(files[i+1].base))
			s.durable = true
		} else {
			s.f = lastFile
		}
		l.segs[i] = s
	}
	return nil
}
