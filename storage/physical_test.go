package storage

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportSnapshot: a copy of one store, imported in place of another's
// databases, reads the same there — strings, lists and
// hashes with values in blobs, sets, several databases, function libraries
// — beside ids and blob refs the importing store had handed out already;
// the copy's own staging databases are left out; it survives a reopen and
// takes changes after.
func TestImportSnapshot(t *testing.T) {
	for _, staged := range []bool{false, true} {
		t.Run(fmt.Sprintf("staged=%v", staged), func(t *testing.T) { testImportSnapshot(t, staged) })
	}
}

func testImportSnapshot(t *testing.T, staged bool) {
	dir := t.TempDir()
	big := func(i int) []byte { return []byte(strings.Repeat(fmt.Sprint(i), 1200)) }
	write := func(s *Store, db int, prefix string, n int) {
		t.Helper()
		inTx(t, s, func() {
			for i := range n {
				k := fmt.Sprintf("%s%d", prefix, i)
				exp := int64(0)
				if i%3 == 0 {
					exp = 9_000_000_000 // INFO keyspace's expires= counts these
				}
				must(t, s.SetString(db, []byte(k+":s"), big(i), exp, false))
				_, err := s.ListPush(db, []byte(k+":l"), Right, [][]byte{[]byte("a"), big(i)}, false)
				must(t, err)
				c, err := s.OpenOrCreateColl(db, []byte(k+":h"), TypeHash)
				must(t, err)
				_, err = s.HashSet(c, []byte("f"), big(i), HashReplace)
				must(t, err)
				c, err = s.OpenOrCreateColl(db, []byte(k+":set"), TypeSet)
				must(t, err)
				_, err = s.SetAdd(c, []byte(k))
				must(t, err)
				must(t, s.EndCommand())
			}
		})
	}
	src := openMemAt(t, filepath.Join(dir, "src.db"), 0)
	write(src, 0, "m", 30)
	write(src, 5, "five", 10)
	if staged {
		write(src, StagingDB+1, "staged", 5) // the master's own full sync: not imported
	}
	inTx(t, src, func() { must(t, src.SaveFunctionLibrary("lib", []byte("#!lua name=lib"))) })
	copyPath := filepath.Join(dir, "copy.db")
	must(t, Snapshot(src.Path(), copyPath))
	src.Close()

	dstPath := filepath.Join(dir, "dst.db")
	dst := openMemAt(t, dstPath, 0)
	write(dst, 0, "own", 20) // ids and blob refs of its own, and keys the swap replaces
	info, err := CheckSnapshot(copyPath)
	must(t, err)
	if info.Keys[0] != 120 || info.Keys[5] != 40 || info.Keys[1] != 0 || len(info.Functions) != 1 || info.Staged != staged {
		t.Fatalf("CheckSnapshot: %+v", info)
	}
	// The old data, held in memory (one key changed and not flushed
	// yet, which the import forgets), until the import lands.
	must(t, dst.SetString(0, []byte("own1:s"), []byte("changed"), 0, false))
	must(t, dst.EndCommand())
	gen, err := dst.ImportSnapshot(copyPath, info)
	must(t, err)

	if v, _, _ := dst.GetString(0, []byte("own0:s"), nil); !bytes.Equal(v, big(0)) {
		t.Fatalf("before the import landed own0:s is %d bytes", len(v))
	}
	must(t, dst.EndCommand())
	inTx(t, dst, func() {})
	if dst.Committed() < gen {
		t.Fatalf("committed %d, the import's generation %d", dst.Committed(), gen)
	}
	// A copy with staging keys is imported row by row (writeImport),
	// leaving them out; any other takes the file's place (swapIn).
	if want := map[bool]uint64{false: 1, true: 0}[staged]; dst.mem.swaps != want {
		t.Fatalf("%d imports swapped in, want %d", dst.mem.swaps, want)
	}
	check := func(s *Store) {
		t.Helper()
		for _, c := range []struct {
			db     int
			prefix string
			n      int
		}{{0, "m", 30}, {5, "five", 10}} {
			if got := s.DBSize(c.db); got != int64(4*c.n) {
				t.Fatalf("db %d: DBSIZE %d, want %d", c.db, got, 4*c.n)
			}
			if got, err := s.CountExpiring(c.db); err != nil || got != int64((c.n+2)/3) {
				t.Fatalf("db %d: %d keys with an expiry (%v), want %d", c.db, got, err, (c.n+2)/3)
			}
			for i := range c.n {
				k := fmt.Sprintf("%s%d", c.prefix, i)
				v, ok, err := s.GetString(c.db, []byte(k+":s"), nil)
				if err != nil || !ok || !bytes.Equal(v, big(i)) {
					t.Fatalf("db %d %s:s: %v %v (%d bytes)", c.db, k, ok, err, len(v))
				}
				var items [][]byte
				_, err = s.ListRange(c.db, []byte(k+":l"), 0, -1, func(int64) {}, func(v []byte) { items = append(items, bytes.Clone(v)) })
				if err != nil || len(items) != 2 || !bytes.Equal(items[1], big(i)) {
					t.Fatalf("db %d %s:l: %d items, %v", c.db, k, len(items), err)
				}
				h, err := s.OpenColl(c.db, []byte(k+":h"), TypeHash)
				if err != nil || h == nil {
					t.Fatalf("db %d %s:h: %v", c.db, k, err)
				}
				if v, ok, err := s.HashGet(h, []byte("f"), nil); err != nil || !ok || !bytes.Equal(v, big(i)) {
					t.Fatalf("db %d %s:h f: %v %v", c.db, k, ok, err)
				}
				set, err := s.OpenColl(c.db, []byte(k+":set"), TypeSet)
				if err != nil || set == nil {
					t.Fatalf("db %d %s:set: %v", c.db, k, err)
				}
				if ok, err := s.SetHas(set, []byte(k)); err != nil || !ok {
					t.Fatalf("db %d %s:set member: %v %v", c.db, k, ok, err)
				}
				must(t, s.EndCommand())
			}
		}
		for _, k := range []string{"own0:s", "own1:s", "own2:h"} {
			if _, ok, _ := s.GetString(0, []byte(k), nil); ok {
				t.Fatalf("%s, which the store had before the import, is still there", k)
			}
			must(t, s.EndCommand())
		}
		if n := s.DBSize(1); n != 0 {
			t.Fatalf("db 1 holds %d keys: the copy's staging database was imported", n)
		}
	}
	check(dst)
	dst.Close()
	dst = openMemAt(t, dstPath, 0)
	defer dst.Close()
	check(dst)
	// The imported rows take changes: a blob replaced, a key deleted, a
	// list pushed to, then read back from SQLite.
	inTx(t, dst, func() {
		must(t, dst.SetString(0, []byte("m0:s"), []byte("small now"), 0, false))
		_, err := dst.Delete(0, []byte("m1:s"))
		must(t, err)
		_, err = dst.ListPush(0, []byte("m2:l"), Left, [][]byte{[]byte("head")}, false)
		must(t, err)
		must(t, dst.EndCommand())
	})
	dst.Close()
	dst = openMemAt(t, dstPath, 0)
	defer dst.Close()
	if v, _, _ := dst.GetString(0, []byte("m0:s"), nil); string(v) != "small now" {
		t.Fatalf("m0:s after the change: %q", v)
	}
	if _, ok, _ := dst.GetString(0, []byte("m1:s"), nil); ok {
		t.Fatal("m1:s is back")
	}
	if n, err := dst.ListLen(0, []byte("m2:l")); err != nil || n != 3 {
		t.Fatalf("m2:l length %d %v", n, err)
	}
}

// TestImportSwapKeepsNewRows: after a copy took the file's place, the old
// objects deleted while its flush ran must not take the copy's element
// rows with them: the copy's ids are the old file's numbers again (both
// hand them out from 1), and their rows' deletion is still to be written.
func TestImportSwapKeepsNewRows(t *testing.T) {
	dir := t.TempDir()
	hashes := func(s *Store, prefix string, n int) {
		t.Helper()
		inTx(t, s, func() {
			for i := range n {
				c, err := s.OpenOrCreateColl(0, []byte(fmt.Sprint(prefix, i)), TypeHash)
				must(t, err)
				_, err = s.HashSet(c, []byte("f"), []byte(fmt.Sprint(prefix, i)), HashReplace)
				must(t, err)
				must(t, s.EndCommand())
			}
		})
	}
	src := openMemAt(t, filepath.Join(dir, "src.db"), 0)
	hashes(src, "new", 20)
	copyPath := filepath.Join(dir, "copy.db")
	must(t, Copy(src.Path(), copyPath))
	src.Close()

	dst := openMemAt(t, filepath.Join(dir, "dst.db"), 0)
	defer dst.Close()
	hashes(dst, "old", 20) // ids 1..20 as well, their rows in SQLite
	info, err := CheckSnapshot(copyPath)
	must(t, err)
	gen, err := dst.ImportSnapshot(copyPath, info)
	must(t, err)
	f, err := dst.StartFlush(0)
	must(t, err)
	if f == nil {
		t.Fatal("no flush for the import")
	}
	// The old data is what clients see until the import lands: deleted
	// now, its element rows are to go with the next flush.
	for i := range 20 {
		if _, err := dst.Delete(0, []byte(fmt.Sprint("old", i))); err != nil {
			t.Fatal(err)
		}
		must(t, dst.EndCommand())
	}
	f.Run()
	if l := dst.Land(); l == nil || l.Err() != nil || dst.Committed() < gen {
		t.Fatalf("the import's flush: %+v, committed %d, want %d", l, dst.Committed(), gen)
	}
	if dst.mem.swaps != 1 {
		t.Fatalf("%d imports swapped in, want 1", dst.mem.swaps)
	}
	inTx(t, dst, func() {}) // the next flush
	dst.Close()
	dst = openMemAt(t, filepath.Join(dir, "dst.db"), 0)
	defer dst.Close()
	for i := range 20 {
		name := []byte(fmt.Sprint("new", i))
		c, err := dst.OpenColl(0, name, TypeHash)
		if err != nil || c == nil {
			t.Fatalf("%s: %v", name, err)
		}
		if v, ok, err := dst.HashGet(c, []byte("f"), nil); err != nil || !ok || string(v) != string(name) {
			t.Fatalf("%s f: %q %v %v", name, v, ok, err)
		}
		must(t, dst.EndCommand())
	}
	if n := dst.DBSize(0); n != 20 {
		t.Fatalf("DBSIZE %d, want 20", n)
	}
}

// TestImportSwapLeavesSearch: a store with a search index imports a copy
// row by row, so that the index stays; so does one importing a copy that
// has one (a search index's tables are not imported).
func TestImportSwapLeavesSearch(t *testing.T) {
	for _, where := range []string{"dst", "src"} {
		t.Run(where, func(t *testing.T) {
			dir := t.TempDir()
			index := func(s *Store) {
				inTx(t, s, func() { must(t, s.SaveSearchIndex(SearchIndexRow{Name: "idx", ID: 1, Spec: []byte("spec")})) })
			}
			src := openMemAt(t, filepath.Join(dir, "src.db"), 0)
			inTx(t, src, func() { must(t, src.SetString(0, []byte("k"), []byte("v"), 0, false)) })
			if where == "src" {
				index(src)
			}
			copyPath := filepath.Join(dir, "copy.db")
			must(t, Copy(src.Path(), copyPath))
			src.Close()
			dst := openMemAt(t, filepath.Join(dir, "dst.db"), 0)
			defer dst.Close()
			if where == "dst" {
				index(dst)
			}
			info, err := CheckSnapshot(copyPath)
			must(t, err)
			_, err = dst.ImportSnapshot(copyPath, info)
			must(t, err)
			inTx(t, dst, func() {})
			if dst.mem.swaps != 0 {
				t.Fatalf("%d imports swapped in, want 0", dst.mem.swaps)
			}
			rows, err := dst.SearchIndexes()
			must(t, err)
			if want := map[string]int{"dst": 1, "src": 0}[where]; len(rows) != want {
				t.Fatalf("%d search indexes after the import, want %d", len(rows), want)
			}
			if v, ok, _ := dst.GetString(0, []byte("k"), nil); !ok || string(v) != "v" {
				t.Fatalf("k: %q %v", v, ok)
			}
		})
	}
}
