package redo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
)

// payload i is deterministic, of varying size (zero-length ones included),
// and names i in its first bytes so a misplaced record shows.
func payload(i int) []byte {
	n := (i * 7919) % 251
	if i%50 == 7 {
		n = 0
	}
	p := make([]byte, n)
	for j := range p {
		p[j] = byte(i*31 + j)
	}
	if n >= 8 {
		binary.LittleEndian.PutUint64(p, uint64(i))
	}
	return p
}

// frameLen is the size a payload takes in the log.
func frameLen(i int) Position { return Position(frameSize + len(payload(i))) }

func mustOpen(t testing.TB, dir string, opt Options) (*Log, Recovery) {
	t.Helper()
	l, rec, err := Open(dir, opt)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l, rec
}

// writeRecords appends payloads first..first+n-1 in rounds of 1 to 7
// records and returns the position after each record (not only after each
// round: a round's records are contiguous, so these follow).
func writeRecords(t testing.TB, l *Log, first, n int) []Position {
	t.Helper()
	var ends []Position
	pos := l.Written()
	for i := first; i < first+n; {
		round := 1 + i%7
		for j := 0; j < round && i < first+n; j++ {
			if err := l.Append(payload(i)); err != nil {
				t.Fatalf("Append %d: %v", i, err)
			}
			pos += frameLen(i)
			ends = append(ends, pos)
			i++
		}
		got, err := l.Write()
		if err != nil {
			t.Fatalf("Write: %v", err)
		}
		if got != pos {
			t.Fatalf("Write returned %d, want %d", got, pos)
		}
	}
	return ends
}

// writeFilling writes records from first on until the log has at least
// segs segments and the last one holds at least lastBytes of records; it
// returns the ends as writeRecords does.
func writeFilling(t testing.TB, l *Log, first, segs int, lastBytes Position) []Position {
	t.Helper()
	var ends []Position
	for i := first; len(l.segs) < segs || l.Written()-l.cur.base < lastBytes; i += 1 + i%7 {
		ends = append(ends, writeRecords(t, l, i, 1+i%7)...)
	}
	return ends
}

type replayed struct {
	next    Position
	payload []byte
}

func replayAll(t testing.TB, l *Log, from Position) []replayed {
	t.Helper()
	var out []replayed
	err := l.Replay(from, func(next Position, p []byte) error {
		out = append(out, replayed{next, bytes.Clone(p)})
		return nil
	})
	if err != nil {
		t.Fatalf("Replay(%d): %v", from, err)
	}
	return out
}

// checkReplay requires the records replayed from the log's oldest
// position to be payloads first.. with ends ends.
func checkReplay(t testing.TB, got []replayed, first int, ends []Position) {
	t.Helper()
	if len(got) != len(ends) {
		t.Fatalf("replayed %d records, want %d", len(got), len(ends))
	}
	for k, r := range got {
		if r.next != ends[k] {
			t.Fatalf("record %d: next %d, want %d", first+k, r.next, ends[k])
		}
		if !bytes.Equal(r.payload, payload(first+k)) {
			t.Fatalf("record %d: payload differs", first+k)
		}
	}
}

// segFiles lists the segment files in dir, oldest first.
func segFiles(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, _, ok := parseSegName(e.Name()); ok {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out
}

func baseOf(t testing.TB, path string) Position {
	t.Helper()
	b, _, ok := parseSegName(filepath.Base(path))
	if !ok {
		t.Fatalf("not a segment: %s", path)
	}
	return b
}

// copyDir copies the segment files of src into a new directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	for _, p := range segFiles(t, src) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(p)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// restoreDir makes the segment files of dst those of src again,
// rewriting files in place where it can: creating a file costs far more
// than rewriting one on some file systems, and the torn-tail test
// restores thousands of times.
func restoreDir(t testing.TB, src, dst string) {
	t.Helper()
	want := map[string]bool{}
	for _, p := range segFiles(t, src) {
		want[filepath.Base(p)] = true
	}
	for _, p := range segFiles(t, dst) {
		if !want[filepath.Base(p)] {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, p := range segFiles(t, src) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// Not os.WriteFile: ext4 flushes a file truncated to zero and
		// rewritten when it is closed (auto_da_alloc), which would make
		// this test wait on the disk thousands of times.
		f, err := os.OpenFile(filepath.Join(dst, filepath.Base(p)), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(int64(len(data))); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

func flipByte(t testing.TB, path string, off int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[off] ^= 0x40
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// faultFS wraps real files so a test can make Sync, WriteAt, Truncate or
// the directory fsync fail.
type faultFS struct {
	failSync    atomic.Bool
	failDirSync atomic.Bool
	failWrite   atomic.Bool // the next WriteAt writes half and fails
	failTrunc   atomic.Bool
	noSync      atomic.Bool  // Sync and the directory fsync do nothing: for speed where durability is not the point
	syncs       atomic.Int64 // file Sync calls that reached the file
}

// fastFS skips fsyncs: for tests of recovery logic that open logs by the
// thousand.
func fastFS() *fsys {
	ff := &faultFS{}
	ff.noSync.Store(true)
	return ff.fsys()
}

var errInjected = errors.New("injected I/O error")

func (ff *faultFS) fsys() *fsys {
	wrap := func(f file, err error) (file, error) {
		if err != nil {
			return nil, err
		}
		return &faultFile{File: f.(*os.File), ff: ff}, nil
	}
	return &fsys{
		create: func(p string) (file, error) { return wrap(osFS.create(p)) },
		open:   func(p string) (file, error) { return wrap(osFS.open(p)) },
		syncDir: func(dir string) error {
			if ff.failDirSync.Load() {
				return errInjected
			}
			if ff.noSync.Load() {
				return nil
			}
			return osFS.syncDir(dir)
		},
	}
}

type faultFile struct {
	*os.File
	ff *faultFS
}

func (f *faultFile) Sync() error {
	f.ff.syncs.Add(1)
	if f.ff.failSync.Load() {
		return errInjected
	}
	if f.ff.noSync.Load() {
		return nil
	}
	return f.File.Sync()
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if f.ff.failWrite.Swap(false) {
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, errInjected
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Truncate(size int64) error {
	if f.ff.failTrunc.Load() {
		return errInjected
	}
	return f.File.Truncate(size)
}
