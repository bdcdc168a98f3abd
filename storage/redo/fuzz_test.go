package redo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

// refFrame decodes the frame at data[off:] for a record at pos, written
// from the format description independently of format.go, so that the
// fuzz test does not check the code against itself.
func refFrame(data []byte, off int, pos Position) ([]byte, bool) {
	if off < 0 || off+12 > len(data) {
		return nil, false
	}
	stored := binary.LittleEndian.Uint32(data[off:])
	if stored == 0 || uint64(stored-1) > uint64(len(data)-off-12) {
		return nil, false
	}
	payload := data[off+12 : off+12+int(stored-1)]
	tab := crc32.MakeTable(crc32.Castagnoli)
	var pl [12]byte
	binary.LittleEndian.PutUint64(pl[:8], uint64(pos))
	binary.LittleEndian.PutUint32(pl[8:], stored)
	if binary.LittleEndian.Uint32(data[off+4:]) != crc32.Checksum(pl[:], tab) {
		return nil, false
	}
	whole := append(pl[:], payload...)
	if binary.LittleEndian.Uint32(data[off+8:]) != crc32.Checksum(whole, tab) {
		return nil, false
	}
	return payload, true
}

// segmentBytes builds a valid segment at base 0 holding payloads 0..n-1.
func segmentBytes(n int) []byte {
	b := make([]byte, headerSize)
	putHeader(b, 0)
	for i := 0; i < n; i++ {
		b = appendFrame(b, Position(len(b)-headerSize), payload(i))
	}
	return b
}

// FuzzReplay feeds arbitrary bytes to Open as the only segment file. Open
// must not panic; it either refuses with a CorruptError naming the file,
// or opens, and then Replay yields exactly the valid records at the start
// of the file, and whatever was cut was reported as a torn tail with
// nothing valid after it.
func FuzzReplay(f *testing.F) {
	full := segmentBytes(12)
	f.Add(full)
	f.Add(full[:len(full)-7])
	f.Add(full[:headerSize+5])
	f.Add(full[:headerSize])
	f.Add(full[:10])
	f.Add([]byte{})
	flipped := bytes.Clone(full)
	flipped[headerSize+40] ^= 1
	f.Add(flipped)
	flippedLast := bytes.Clone(full)
	flippedLast[len(full)-2] ^= 1
	f.Add(flippedLast)
	zeros := append(bytes.Clone(full), make([]byte, 100)...)
	f.Add(zeros)

	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, segName(0, false))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		headerOK := len(data) >= headerSize && bytes.Equal(data[:headerSize], full[:headerSize])

		// The reference walk: valid records from the start, then the
		// first flaw.
		off := headerSize
		var want [][]byte
		if headerOK {
			for {
				p, ok := refFrame(data, off, Position(off-headerSize))
				if !ok {
					break
				}
				want = append(want, p)
				off += 12 + len(p)
			}
		}
		validAfter := false
		if headerOK && off < len(data) {
			for o := off + 1; o+12 <= len(data); o++ {
				if _, ok := refFrame(data, o, Position(o-headerSize)); ok {
					validAfter = true
					break
				}
			}
		}

		l, rec, err := Open(dir, Options{fs: fastFS()})
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.File != path {
				t.Fatalf("Open: %v, want a CorruptError naming %s", err, path)
			}
			if headerOK && (!validAfter || ce.Offset != int64(off)) {
				t.Fatalf("Open refused (%v) but the reference finds the first flaw at %d, valid records after it: %v", err, off, validAfter)
			}
			return
		}
		if headerOK && validAfter {
			t.Fatalf("Open accepted damage at offset %d followed by a valid record", off)
		}
		var got [][]byte
		if err := l.Replay(l.Oldest(), func(_ Position, p []byte) error {
			got = append(got, bytes.Clone(p))
			return nil
		}); err != nil {
			t.Fatalf("Replay after a successful Open: %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("replayed %d records, the reference finds %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("record %d differs", i)
			}
		}
		switch {
		case !headerOK:
			// (A header that checks but is not ours was refused above.)
			if rec.Torn == nil || rec.Torn.Bytes != int64(len(data)) || len(got) != 0 {
				t.Fatalf("damaged header: %+v", rec)
			}
		case off == len(data):
			if rec.Torn != nil {
				t.Fatalf("torn tail reported for an intact segment: %v", rec.Torn)
			}
		default:
			if rec.Torn == nil || rec.Torn.Offset != int64(off) || rec.Torn.Bytes != int64(len(data)-off) {
				t.Fatalf("tail from %d: %+v", off, rec.Torn)
			}
		}
		end := l.Written()
		l.Close()

		l, rec = mustOpen(t, dir, Options{fs: fastFS()})
		defer l.Close()
		if rec.Torn != nil || rec.End != end {
			t.Fatalf("second Open: %+v", rec)
		}
	})
}
