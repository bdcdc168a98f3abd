package redo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Small segments so that a few hundred records span many of them.
var small = Options{SegmentSize: 1024}

func TestRoundTripSegmentsRestart(t *testing.T) {
	dir := t.TempDir()
	l, rec := mustOpen(t, dir, small)
	if rec.Torn != nil || rec.End != 0 || rec.Segments != 1 {
		t.Fatalf("fresh log: %+v", rec)
	}
	ends := writeRecords(t, l, 0, 400)
	if n := len(segFiles(t, dir)); n < 10 {
		t.Fatalf("%d segments, want many", n)
	}
	checkReplay(t, replayAll(t, l, 0), 0, ends)

	// From a record boundary in the middle: the suffix.
	k := 123
	checkReplay(t, replayAll(t, l, ends[k-1]), k, ends[k:])

	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l, rec = mustOpen(t, dir, small)
	if rec.Torn != nil || rec.End != ends[len(ends)-1] || rec.Oldest != 0 {
		t.Fatalf("reopen: %+v", rec)
	}
	checkReplay(t, replayAll(t, l, 0), 0, ends)

	// Writing goes on where it stopped; close without Sync (a killed
	// process keeps what Write handed to the kernel).
	ends = append(ends, writeRecords(t, l, 400, 300)...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, rec = mustOpen(t, dir, small)
	defer l.Close()
	if rec.Torn != nil || rec.End != ends[len(ends)-1] {
		t.Fatalf("second reopen: %+v", rec)
	}
	checkReplay(t, replayAll(t, l, 0), 0, ends)
	for _, p := range segFiles(t, dir) {
		if strings.HasSuffix(p, ".pending") {
			t.Fatalf("pending segment left after Open: %s", p)
		}
	}
}

func TestPositionsMonotonic(t *testing.T) {
	dir := t.TempDir()
	var last Position
	for restart := 0; restart < 4; restart++ {
		l, rec := mustOpen(t, dir, Options{SegmentSize: 300})
		if rec.End != last {
			t.Fatalf("restart %d: log resumes at %d, last write ended at %d", restart, rec.End, last)
		}
		for i := 0; i < 100; i++ {
			if err := l.Append(payload(restart*100 + i)); err != nil {
				t.Fatal(err)
			}
			p, err := l.Write()
			if err != nil {
				t.Fatal(err)
			}
			if p <= last {
				t.Fatalf("position went from %d to %d", last, p)
			}
			last = p
		}
		// An empty Write changes nothing and writes nothing.
		if p, err := l.Write(); err != nil || p != last {
			t.Fatalf("empty Write: %d, %v", p, err)
		}
		if restart%2 == 0 {
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
	}
	// Segment names are the positions where they begin: increasing, each
	// one where the previous ended.
	files := segFiles(t, dir)
	if len(files) < 20 {
		t.Fatalf("only %d segments", len(files))
	}
	for i := 1; i < len(files); i++ {
		size := fileSize(t, files[i-1]) - headerSize
		if baseOf(t, files[i-1])+Position(size) != baseOf(t, files[i]) {
			t.Fatalf("%s does not continue %s", files[i], files[i-1])
		}
	}
}

// TestTornTailEveryOffset cuts the last segment at every byte offset
// within its header and its last records: Open succeeds, exactly the
// records wholly before the cut come back, and the log takes writes again.
func TestTornTailEveryOffset(t *testing.T) {
	for _, synced := range []bool{true, false} {
		name := "final"
		if !synced {
			name = "pending"
		}
		t.Run(name, func(t *testing.T) {
			opt := Options{SegmentSize: 2048, fs: fastFS()}
			src := t.TempDir()
			l, _ := mustOpen(t, src, opt)
			// Sync once the second segment is started, so that with
			// synced false only the last segment is pending.
			ends := writeFilling(t, l, 0, 2, 1)
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			ends = append(ends, writeFilling(t, l, len(ends), 3, 1000)...)
			if synced {
				if _, err := l.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			l.Close()
			files := segFiles(t, src)
			lastFile := files[len(files)-1]
			if strings.HasSuffix(lastFile, ".pending") == synced {
				t.Fatalf("last segment %s, synced %v", lastFile, synced)
			}
			base := baseOf(t, lastFile)
			size := fileSize(t, lastFile)
			// The cut starts inside the header, then every offset up to the
			// end of the file (its records, at least the last several).
			records := 0
			for _, e := range ends {
				if e > base {
					records++
				}
			}
			if records < 6 {
				t.Fatalf("last segment holds only %d records", records)
			}
			// Every offset of the header, then every offset of the last
			// records (the last eight, or all if fewer).
			offs := recordOffsets(t, lastFile, ends)
			from := offs[max(len(offs)-8, 0)]
			dir := t.TempDir()
			for cut := int64(0); cut < size; cut++ {
				if cut > headerSize && cut < from {
					cut = from
				}
				restoreDir(t, src, dir)
				path := filepath.Join(dir, filepath.Base(lastFile))
				if err := os.Truncate(path, cut); err != nil {
					t.Fatal(err)
				}
				l, rec, err := Open(dir, opt)
				if err != nil {
					t.Fatalf("cut at %d: Open: %v", cut, err)
				}
				cutPos := base
				if cut > headerSize {
					cutPos = base + Position(cut-headerSize)
				}
				want := 0
				for want < len(ends) && ends[want] <= cutPos {
					want++
				}
				end := base
				if want > 0 {
					end = ends[want-1]
				}
				if end < base {
					t.Fatalf("cut at %d: kept records end at %d before the segment's base %d", cut, end, base)
				}
				boundary := cut >= headerSize && end == cutPos
				if boundary != (rec.Torn == nil) {
					t.Fatalf("cut at %d (boundary %v): torn %v", cut, boundary, rec.Torn)
				}
				if rec.Torn != nil {
					wantBytes := cut // a header cut: the file goes whole
					if cut >= headerSize {
						wantBytes = cut - headerSize - int64(end-base)
					}
					if rec.Torn.At != end || rec.Torn.Bytes != wantBytes {
						t.Fatalf("cut at %d: torn %+v, want at %d, %d bytes", cut, rec.Torn, end, wantBytes)
					}
				}
				if rec.End != end {
					t.Fatalf("cut at %d: log ends at %d, want %d", cut, rec.End, end)
				}
				checkReplay(t, replayAll(t, l, 0), 0, ends[:want])
				// The log takes writes after the cut, and they survive.
				if err := l.Append(payload(want)); err != nil {
					t.Fatal(err)
				}
				if p, err := l.Write(); err != nil || p != end+frameLen(want) {
					t.Fatalf("cut at %d: Write after recovery: %d, %v", cut, p, err)
				}
				l.Close()
				l, rec = mustOpen(t, dir, opt)
				if rec.Torn != nil {
					t.Fatalf("cut at %d: second Open found a torn tail: %v", cut, rec.Torn)
				}
				checkReplay(t, replayAll(t, l, 0), 0, append(ends[:want:want], end+frameLen(want)))
				l.Close()
			}
		})
	}
}

// recordOffsets returns the file offsets of the records in a segment.
func recordOffsets(t testing.TB, path string, ends []Position) []int64 {
	t.Helper()
	base := baseOf(t, path)
	var offs []int64
	start := Position(0)
	for _, e := range ends {
		if start >= base && e <= base+Position(fileSize(t, path)-headerSize) {
			offs = append(offs, headerSize+int64(start-base))
		}
		start = e
	}
	return offs
}

// TestFlippedByteInTheMiddle damages every byte of a record in the middle
// of a segment (frame fields and payload), in an early segment and in the
// last one: Open refuses, naming the file and the record's offset.
func TestFlippedByteInTheMiddle(t *testing.T) {
	src := t.TempDir()
	l, _ := mustOpen(t, src, Options{SegmentSize: 2048})
	ends := writeFilling(t, l, 0, 4, 1000)
	l.Sync()
	l.Close()
	files := segFiles(t, src)
	dir := t.TempDir()
	for _, which := range []int{1, len(files) - 1} {
		offs := recordOffsets(t, files[which], ends)
		mid := len(offs) / 2
		from, to := offs[mid], offs[mid+1]
		for off := from; off < to; off++ {
			restoreDir(t, src, dir)
			path := filepath.Join(dir, filepath.Base(files[which]))
			flipByte(t, path, off)
			_, _, err := Open(dir, Options{SegmentSize: 2048})
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("segment %d, byte %d flipped: Open: %v, want a CorruptError", which, off, err)
			}
			if ce.File != path || ce.Offset != from {
				t.Fatalf("segment %d, byte %d flipped: error names %s offset %d, want %s offset %d", which, off, ce.File, ce.Offset, path, from)
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "offset") {
				t.Fatalf("message does not name file and offset: %s", msg)
			}
		}
	}
	// A damaged header of a segment before the last.
	restoreDir(t, src, dir)
	path := filepath.Join(dir, filepath.Base(files[1]))
	flipByte(t, path, 20)
	_, _, err := Open(dir, Options{})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.File != path || ce.Offset != 0 {
		t.Fatalf("damaged header: %v", err)
	}
}

// TestFlippedByteInLastRecord: damage confined to the last record is a
// torn tail.
func TestFlippedByteInLastRecord(t *testing.T) {
	src := t.TempDir()
	l, _ := mustOpen(t, src, Options{SegmentSize: 2048})
	ends := writeFilling(t, l, 0, 4, 1000)
	l.Sync()
	l.Close()
	files := segFiles(t, src)
	last := files[len(files)-1]
	offs := recordOffsets(t, last, ends)
	from := offs[len(offs)-1]
	size := fileSize(t, last)
	for off := from; off < size; off++ {
		dir := copyDir(t, src)
		path := filepath.Join(dir, filepath.Base(last))
		flipByte(t, path, off)
		l, rec, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("byte %d flipped: %v", off, err)
		}
		if rec.Torn == nil || rec.Torn.File != path || rec.Torn.Offset != from || rec.Torn.Bytes != size-from || rec.Torn.At != ends[len(ends)-2] {
			t.Fatalf("byte %d flipped: torn %+v", off, rec.Torn)
		}
		checkReplay(t, replayAll(t, l, 0), 0, ends[:len(ends)-1])
		if fileSize(t, path) != from {
			t.Fatalf("file not cut to %d", from)
		}
		l.Close()
	}
}

func TestMissingOrForeignSegment(t *testing.T) {
	src := t.TempDir()
	l, _ := mustOpen(t, src, small)
	writeRecords(t, l, 0, 200)
	l.Sync()
	l.Close()
	files := segFiles(t, src)

	dir := copyDir(t, src)
	os.Remove(filepath.Join(dir, filepath.Base(files[3])))
	_, _, err := Open(dir, small)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.File != filepath.Join(dir, filepath.Base(files[4])) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing segment: %v", err)
	}

	// An intact header that says another version is refused even at the
	// end: a newer format is not a torn write.
	dir = copyDir(t, src)
	path := filepath.Join(dir, filepath.Base(files[len(files)-1]))
	data, _ := os.ReadFile(path)
	data[8] = 2
	putHeaderCRC(data)
	os.WriteFile(path, data, 0o644)
	if _, _, err := Open(dir, small); !errors.As(err, &ce) || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("foreign version: %v", err)
	}

	// A segment renamed to the wrong place.
	dir = copyDir(t, src)
	os.Rename(filepath.Join(dir, filepath.Base(files[len(files)-1])), filepath.Join(dir, segName(baseOf(t, files[len(files)-1])+1, false)))
	if _, _, err := Open(dir, small); !errors.As(err, &ce) {
		t.Fatalf("renamed segment: %v", err)
	}
}

func putHeaderCRC(h []byte) {
	binary.LittleEndian.PutUint32(h[28:32], crc32.Checksum(h[:28], crc32.MakeTable(crc32.Castagnoli)))
}

// TestPendingSegments: segments started since the last Sync are pending;
// intact, they are promoted at Open; behind a torn tail, discarded.
func TestPendingSegments(t *testing.T) {
	src := t.TempDir()
	l, _ := mustOpen(t, src, small)
	ends := writeRecords(t, l, 0, 60)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, p := range segFiles(t, src) {
		if strings.HasSuffix(p, ".pending") {
			t.Fatalf("pending after Sync: %s", p)
		}
	}
	ends = append(ends, writeRecords(t, l, 60, 60)...)
	l.Close()
	files := segFiles(t, src)
	var pending []string
	for _, p := range files {
		if strings.HasSuffix(p, ".pending") {
			pending = append(pending, p)
		}
	}
	if len(pending) < 2 {
		t.Fatalf("want several pending segments, have %v", files)
	}

	// Intact: promoted, nothing lost.
	dir := copyDir(t, src)
	l, rec := mustOpen(t, dir, small)
	if rec.Torn != nil || len(rec.Promoted) != len(pending) {
		t.Fatalf("intact pending: %+v", rec)
	}
	checkReplay(t, replayAll(t, l, 0), 0, ends)
	l.Close()

	// The last final segment lost its last record (a crash before the
	// fsync that would have promoted the next one): the tail from there
	// is torn, the pending segments after it go.
	lastFinal := files[len(files)-len(pending)-1]
	offs := recordOffsets(t, lastFinal, ends)
	for _, cut := range []int64{offs[len(offs)-1], offs[len(offs)-1] + 5} {
		dir = copyDir(t, src)
		path := filepath.Join(dir, filepath.Base(lastFinal))
		os.Truncate(path, cut)
		l, rec = mustOpen(t, dir, small)
		if rec.Torn == nil || len(rec.Torn.Discarded) != len(pending) {
			t.Fatalf("cut at %d: %+v", cut, rec)
		}
		keep := 0
		for keep < len(ends) && ends[keep] <= baseOf(t, lastFinal)+Position(offs[len(offs)-1]-headerSize) {
			keep++
		}
		checkReplay(t, replayAll(t, l, 0), 0, ends[:keep])
		if len(segFiles(t, dir)) != len(files)-len(pending) {
			t.Fatalf("pending segments not removed: %v", segFiles(t, dir))
		}
		l.Close()
	}

	// A flaw in a pending segment followed by valid records is damage.
	dir = copyDir(t, src)
	path := filepath.Join(dir, filepath.Base(pending[0]))
	flipByte(t, path, headerSize+3)
	var ce *CorruptError
	if _, _, err := Open(dir, small); !errors.As(err, &ce) || ce.File != path {
		t.Fatalf("damaged pending segment: %v", err)
	}
}

func TestTruncate(t *testing.T) {
	dir := t.TempDir()
	l, _ := mustOpen(t, dir, small)
	ends := writeRecords(t, l, 0, 300)
	files := segFiles(t, dir)
	k := 150
	cutAt := ends[k-1]
	wantGone := 0
	for i := 1; i < len(files); i++ {
		if baseOf(t, files[i]) <= cutAt {
			wantGone++
		}
	}
	n, err := l.Truncate(cutAt)
	if err != nil || n != wantGone || n == 0 {
		t.Fatalf("Truncate removed %d (%v), want %d", n, err, wantGone)
	}
	oldest := l.Oldest()
	if oldest > cutAt || oldest != baseOf(t, files[wantGone]) {
		t.Fatalf("oldest %d after Truncate(%d)", oldest, cutAt)
	}
	if err := l.Replay(0, func(Position, []byte) error { return nil }); !errors.Is(err, ErrTruncated) {
		t.Fatalf("Replay before the oldest: %v", err)
	}
	checkReplay(t, replayAll(t, l, cutAt), k, ends[k:])

	// Never the segment being written, whatever the position.
	if _, err := l.Truncate(1 << 60); err != nil {
		t.Fatal(err)
	}
	if got := segFiles(t, dir); len(got) != 1 {
		t.Fatalf("after Truncate past the end: %v", got)
	}
	more := writeRecords(t, l, 300, 20)
	last := l.Oldest()
	l.Close()
	l, rec := mustOpen(t, dir, small)
	defer l.Close()
	if rec.Oldest != last || rec.End != more[len(more)-1] {
		t.Fatalf("reopen after Truncate: %+v", rec)
	}
	var first int
	for first = 0; first < len(ends) && ends[first] <= last; first++ {
	}
	all := append(ends[:len(ends):len(ends)], more...)
	checkReplay(t, replayAll(t, l, last), first, all[first:])
}

func TestStartPosition(t *testing.T) {
	dir := t.TempDir()
	l, _ := mustOpen(t, dir, small)
	ends := writeRecords(t, l, 0, 200)
	l.Sync()
	l.Close()
	files := segFiles(t, dir)

	// Segments wholly before Start are dropped at Open.
	start := ends[100]
	l, rec := mustOpen(t, dir, Options{SegmentSize: 1024, Start: start})
	if len(rec.Obsolete) == 0 || rec.Oldest > start || rec.Restarted {
		t.Fatalf("Start inside the log: %+v", rec)
	}
	checkReplay(t, replayAll(t, l, start), 101, ends[101:])
	l.Close()
	if len(segFiles(t, dir)) != len(files)-len(rec.Obsolete) {
		t.Fatal("obsolete files still there")
	}

	// A log that ends before Start restarts there.
	start = ends[len(ends)-1] + 5000
	l, rec = mustOpen(t, dir, Options{SegmentSize: 1024, Start: start})
	if !rec.Restarted || rec.End != start || rec.Oldest != start || rec.Segments != 1 {
		t.Fatalf("Start past the end: %+v", rec)
	}
	more := writeRecords(t, l, 500, 10)
	l.Close()
	l, _ = mustOpen(t, dir, Options{SegmentSize: 1024, Start: start})
	checkReplay(t, replayAll(t, l, start), 500, more)
	l.Close()

	// A new directory with Start > 0.
	l, rec = mustOpen(t, filepath.Join(t.TempDir(), "redo"), Options{Start: 777})
	if !rec.Restarted || rec.End != 777 || l.Written() != 777 {
		t.Fatalf("fresh with Start: %+v", rec)
	}
	l.Close()
}

// TestConcurrentSyncWriteRead runs the writer, a syncer, a Reader that
// follows the writer, and a truncater at once (meant for -race). Every
// Sync must cover every Write that completed before it started.
func TestConcurrentSyncWriteRead(t *testing.T) {
	dir := t.TempDir()
	l, _ := mustOpen(t, dir, Options{SegmentSize: 4096})
	const n = 20000
	var done atomic.Bool
	var lastWrite atomic.Uint64 // position of the last completed Write
	var readerAt atomic.Uint64
	var syncs, removed atomic.Int64 // for the log: how much overlapped
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}

	wg.Add(1)
	go func() { // the writer
		defer wg.Done()
		defer done.Store(true)
		for i := 0; i < n; {
			for j := 0; j < 1+i%5 && i < n; j++ {
				if err := l.Append(payload(i)); err != nil {
					fail(err)
					return
				}
				i++
			}
			p, err := l.Write()
			if err != nil {
				fail(err)
				return
			}
			lastWrite.Store(uint64(p))
		}
	}()

	wg.Add(1)
	go func() { // the syncer
		defer wg.Done()
		for !done.Load() {
			before := Position(lastWrite.Load())
			p, err := l.Sync()
			if err != nil {
				fail(err)
				return
			}
			if p < before {
				fail(errors.New("Sync covered less than a Write completed before it"))
				return
			}
			if p > l.Written() {
				fail(errors.New("Sync covered more than was written"))
				return
			}
			syncs.Add(1)
		}
	}()

	wg.Add(1)
	go func() { // a replica-style reader: follows, then resumes from Pos
		defer wg.Done()
		r, err := l.NewReader(0)
		if err != nil {
			fail(err)
			return
		}
		defer func() { r.Close() }()
		for i := 0; i < n; {
			p, next, err := r.Next()
			if err == io.EOF {
				if i%97 == 0 { // reopen at the position reached
					r.Close()
					if r, err = l.NewReader(r.Pos()); err != nil {
						fail(err)
						return
					}
				}
				continue
			}
			if err != nil {
				fail(err)
				return
			}
			if !bytes.Equal(p, payload(i)) {
				fail(errors.New("reader: payload differs"))
				return
			}
			readerAt.Store(uint64(next))
			i++
		}
	}()

	wg.Add(1)
	go func() { // truncate behind both the reader and the syncer
		defer wg.Done()
		for !done.Load() {
			k, err := l.Truncate(min(Position(readerAt.Load()), l.Synced()))
			if err != nil {
				fail(err)
				return
			}
			removed.Add(int64(k))
		}
	}()

	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d Syncs and %d segments truncated during %d writes", syncs.Load(), removed.Load(), n)
	end := l.Written()
	if p, err := l.Sync(); err != nil || p != end {
		t.Fatalf("final Sync: %d, %v", p, err)
	}
	oldest := l.Oldest()
	l.Close()
	l, rec := mustOpen(t, dir, Options{SegmentSize: 4096})
	defer l.Close()
	if rec.Torn != nil || rec.End != end || rec.Oldest != oldest || len(rec.Promoted) != 0 {
		t.Fatalf("reopen: %+v", rec)
	}
}

func TestStickyFsyncError(t *testing.T) {
	ff := &faultFS{}
	dir := t.TempDir()
	l, _ := mustOpen(t, dir, Options{SegmentSize: 1024, fs: ff.fsys()})
	ends := writeRecords(t, l, 0, 50)
	p, err := l.Sync()
	if err != nil || p != ends[len(ends)-1] {
		t.Fatalf("Sync: %d, %v", p, err)
	}
	writeRecords(t, l, 50, 10)

	ff.failSync.Store(true)
	_, err = l.Sync()
	if !errors.Is(err, errInjected) {
		t.Fatalf("failing Sync: %v", err)
	}
	calls := ff.syncs.Load()
	ff.failSync.Store(false) // the disk "recovers": the log must not believe it

	if p2, err2 := l.Sync(); err2 != err || p2 != p {
		t.Fatalf("Sync after failure: %d, %v; want %d and the same error", p2, err2, p)
	}
	if ff.syncs.Load() != calls {
		t.Fatal("Sync retried an fsync after a failure")
	}
	if _, err2 := l.Write(); err2 != err {
		t.Fatalf("Write after fsync failure: %v", err2)
	}
	if err2 := l.Append([]byte("x")); err2 != err {
		t.Fatalf("Append after fsync failure: %v", err2)
	}
	if l.Err() != err || l.Synced() != p {
		t.Fatalf("Err %v, Synced %d", l.Err(), l.Synced())
	}
	l.Close()

	// A failed directory fsync (promoting pending segments) is just as
	// final.
	ff = &faultFS{}
	l, _ = mustOpen(t, t.TempDir(), Options{SegmentSize: 1024, fs: ff.fsys()})
	writeRecords(t, l, 0, 50)
	ff.failDirSync.Store(true)
	if _, err := l.Sync(); !errors.Is(err, errInjected) {
		t.Fatalf("Sync with failing directory fsync: %v", err)
	}
	ff.failDirSync.Store(false)
	if _, err := l.Sync(); !errors.Is(err, errInjected) {
		t.Fatalf("second Sync: %v", err)
	}
	l.Close()
}

func TestFailedWriteLeavesLogConsistent(t *testing.T) {
	ff := &faultFS{}
	dir := t.TempDir()
	l, _ := mustOpen(t, dir, Options{SegmentSize: 1024, fs: ff.fsys()})
	ends := writeRecords(t, l, 0, 30)
	before := l.Written()
	for i := 1000; i < 1005; i++ {
		l.Append(payload(i))
	}
	ff.failWrite.Store(true)
	p, err := l.Write()
	if !errors.Is(err, errInjected) || p != before || l.Written() != before || l.Err() != nil || l.Buffered() != 0 {
		t.Fatalf("failed Write: %d, %v, sticky %v", p, err, l.Err())
	}
	ends = append(ends, writeRecords(t, l, 30, 40)...)
	l.Close()
	l, rec := mustOpen(t, dir, Options{SegmentSize: 1024})
	if rec.Torn != nil {
		t.Fatalf("torn tail after a failed write was cut off: %v", rec.Torn)
	}
	checkReplay(t, replayAll(t, l, 0), 0, ends)

	// If the partial write cannot be cut off, the log stops.
	ff = &faultFS{}
	l.Close()
	l, _ = mustOpen(t, dir, Options{SegmentSize: 1024, fs: ff.fsys()})
	l.Append(payload(1))
	ff.failWrite.Store(true)
	ff.failTrunc.Store(true)
	if _, err := l.Write(); !errors.Is(err, errInjected) || l.Err() == nil {
		t.Fatalf("failed Write and cut: %v, sticky %v", err, l.Err())
	}
	if err := l.Append(payload(2)); err == nil {
		t.Fatal("Append after an unrecoverable write error succeeded")
	}
	l.Close()
}

func TestLimits(t *testing.T) {
	l, _ := mustOpen(t, t.TempDir(), Options{MaxRecord: 100, MaxBuffered: 300})
	defer l.Close()
	if err := l.Append(make([]byte, 101)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized record: %v", err)
	}
	if err := l.Append(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(make([]byte, 100)); !errors.Is(err, ErrBufferFull) {
		t.Fatalf("over MaxBuffered: %v", err)
	}
	if l.Buffered() != 2*(100+frameSize) {
		t.Fatalf("buffered %d", l.Buffered())
	}
	if _, err := l.Write(); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(make([]byte, 100)); err != nil {
		t.Fatalf("after Write: %v", err)
	}
	if _, _, err := Open(t.TempDir(), Options{MaxRecord: 100, MaxBuffered: 50}); err == nil {
		t.Fatal("MaxBuffered below one record accepted")
	}
}

func TestReaderPositions(t *testing.T) {
	l, _ := mustOpen(t, t.TempDir(), small)
	defer l.Close()
	ends := writeRecords(t, l, 0, 50)
	r, err := l.NewReader(ends[10] + 3)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = r.Next()
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "not a record boundary") {
		t.Fatalf("reading between records: %v", err)
	}
	r.Close()
	if _, err := l.NewReader(l.Written() + 1); !errors.Is(err, ErrBeyondEnd) {
		t.Fatalf("past the end: %v", err)
	}
	r, err = l.NewReader(l.Written())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
	// Records written later are read by the same Reader.
	more := writeRecords(t, l, 50, 3)
	for k := range more {
		p, next, err := r.Next()
		if err != nil || next != more[k] || !bytes.Equal(p, payload(50+k)) {
			t.Fatalf("following: %v", err)
		}
	}
	r.Close()
	if err := l.Replay(0, func(Position, []byte) error { return io.ErrShortWrite }); err != io.ErrShortWrite {
		t.Fatalf("Replay does not return fn's error: %v", err)
	}
}

func TestOtherFilesIgnored(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "README"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "12.log"), []byte("x"), 0o644)
	l, rec := mustOpen(t, dir, Options{})
	if rec.Segments != 1 || rec.End != 0 {
		t.Fatalf("%+v", rec)
	}
	l.Close()
}

func TestOneLogPerDirectory(t *testing.T) {
	dir := t.TempDir()
	l, _ := mustOpen(t, dir, Options{})
	if _, _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open of one directory: %v", err)
	}
	l.Close()
	l, _ = mustOpen(t, dir, Options{})
	l.Close()
}
