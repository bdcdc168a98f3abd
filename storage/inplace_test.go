package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// A string too large for the hot cache is read and patched in place; a
// short or cached one, a range past its end, another type or a missing
// key is left to the ordinary path.
func TestStringInPlace(t *testing.T) {
	s := openTest(t)
	big := bytes.Repeat([]byte{0x0f}, 100_000)
	inTx(t, s, func() {
		must(t, s.SetString(0, []byte("big"), big, 0, false))
		must(t, s.SetString(0, []byte("small"), []byte("abc"), 0, false))
		_, err := s.ListPush(0, []byte("l"), Right, [][]byte{[]byte("x")}, false)
		must(t, err)
	})
	inTx(t, s, func() {
		var b [3]byte
		size, ok, err := s.StringAt(0, []byte("big"), 99_999, b[:])
		must(t, err)
		if !ok || size != 100_000 || b != [3]byte{0x0f, 0, 0} {
			t.Fatalf("StringAt(big) = %d %v %x", size, ok, b)
		}
		done, err := s.PatchString(0, []byte("big"), Patch{50_000, []byte{0xf0}}, Patch{50_001, []byte{0xaa}})
		must(t, err)
		if !done {
			t.Fatal("PatchString(big) not done in place")
		}
		if done, _ := s.PatchString(0, []byte("big"), Patch{0, []byte{1}}, Patch{99_999, []byte{1, 2}}); done {
			t.Fatal("PatchString past the end done")
		}
		for _, k := range []string{"small", "l", "missing"} {
			if _, ok, err := s.StringAt(0, []byte(k), 0, b[:]); ok || err != nil {
				t.Fatalf("StringAt(%s) in place: %v %v", k, ok, err)
			}
		}
		if got := s.Touched(); len(got) != 1 || string(got[0].Key) != "big" || got[0].Kind != Written {
			t.Fatalf("change record %+v", got)
		}
	})
	want := bytes.Clone(big)
	want[50_000], want[50_001] = 0xf0, 0xaa
	var got []byte
	inTx(t, s, func() {
		var err error
		got, _, err = s.GetString(0, []byte("big"), nil)
		must(t, err)
	})
	if !bytes.Equal(got, want) {
		t.Fatal("the patched value reads back different")
	}
}

// A large string read in place while a flush has the actor's connection:
// its row may be read aside the flush, but the blob handle is the actor's
// connection, so StringAt and PatchString wait for the flush to land (the
// race detector saw SETBIT's blob read beside a flush's commit).
func TestStringInPlaceWaitsForFlush(t *testing.T) {
	s := openTest(t)
	big := bytes.Repeat([]byte{0x0f}, 100_000)
	inTx(t, s, func() {
		must(t, s.SetString(0, []byte("big"), big, 0, false))
	})
	for _, patch := range []bool{false, true} {
		must(t, s.Begin())
		must(t, s.SetString(0, []byte("other"), []byte("x"), 0, false))
		must(t, s.Reload()) // the lookup goes to SQLite, aside the flight
		f, err := s.StartFlush(1)
		must(t, err)
		must(t, s.Begin())
		go f.Run()
		var b [1]byte
		if patch {
			done, err := s.PatchString(0, []byte("big"), Patch{10, []byte{0xf0}})
			must(t, err)
			if !done {
				t.Fatal("PatchString aside a flush not done in place")
			}
		} else {
			size, ok, err := s.StringAt(0, []byte("big"), 10, b[:])
			must(t, err)
			if !ok || size != 100_000 || b[0] != 0x0f {
				t.Fatalf("StringAt aside a flush = %d %v %x", size, ok, b)
			}
		}
		if s.Flying() {
			t.Fatal("the blob was opened on the connection the flush holds")
		}
		if got := s.Land(); got != f || got.Err() != nil {
			t.Fatalf("Land: %v", got)
		}
		_, _, err = s.Commit()
		must(t, err)
	}
	var got []byte
	inTx(t, s, func() {
		var err error
		got, _, err = s.GetString(0, []byte("big"), nil)
		must(t, err)
	})
	if got[10] != 0xf0 {
		t.Fatalf("the patch made aside a flush reads back %x", got[10])
	}
}

// A patch of a 1 MB string writes about a page to the WAL, where writing
// the value again writes all of it: what makes SETBIT on a long bitmap
// O(1) in I/O.
func TestStringPatchWritesAPage(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Path: filepath.Join(dir, "cellar.db"), HotCacheBytes: testHotCache})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	s.Now = 1_000_000
	big := bytes.Repeat([]byte{0x55}, 1<<20)
	walGrowth := func(fn func()) int64 {
		t.Helper()
		must(t, s.c.exec("PRAGMA wal_checkpoint(TRUNCATE)"))
		inTx(t, s, fn)
		fi, err := os.Stat(filepath.Join(dir, "cellar.db-wal"))
		must(t, err)
		return fi.Size()
	}
	whole := walGrowth(func() { must(t, s.SetString(0, []byte("k"), big, 0, false)) })
	patch := walGrowth(func() {
		done, err := s.PatchString(0, []byte("k"), Patch{700_000, []byte{0xff}})
		must(t, err)
		if !done {
			t.Fatal("not patched in place")
		}
	})
	t.Logf("WAL after writing 1 MB: %d bytes; after patching a byte of it: %d bytes", whole, patch)
	if whole < 1<<20 || patch > 32<<10 {
		t.Fatalf("WAL growth: whole value %d bytes, patch %d bytes", whole, patch)
	}
}
