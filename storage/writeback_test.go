package storage

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
)

// rowInSQLite reads key's count and version straight from SQLite, past the
// write-back barrier: what a reader of the file would see.
func rowInSQLite(t *testing.T, s *Store, key string) (n, version int64) {
	t.Helper()
	st, err := s.c.prepare("SELECT value, version FROM keys WHERE db = 0 AND key = ?1")
	must(t, err)
	defer st.close()
	st.blob(1, []byte(key))
	row, err := st.step()
	must(t, err)
	if !row {
		t.Fatalf("%s: no row in SQLite", key)
	}
	n, version = st.colInt(0), st.colInt(1)
	st.reset()
	return n, version
}

func sadd(t *testing.T, s *Store, key string, members ...string) {
	t.Helper()
	c, err := s.OpenOrCreateColl(0, []byte(key), TypeSet)
	must(t, err)
	for _, m := range members {
		_, err := s.SetAdd(c, []byte(m))
		must(t, err)
	}
	must(t, s.EndCommand())
}

func scard(t *testing.T, s *Store, key string) int64 {
	t.Helper()
	c, err := s.OpenColl(0, []byte(key), TypeSet)
	must(t, err)
	if c == nil {
		return 0
	}
	return c.Len
}

// A hot collection's count and version wait in the cache, and reach SQLite
// before anything could read SQLite's copy: a statement on the keys table,
// a commit, a savepoint. A rollback or an undo discards them.
func TestWriteBack(t *testing.T) {
	s := openTest(t)
	inTx(t, s, func() { sadd(t, s, "s", "a") })
	n0, v0 := rowInSQLite(t, s, "s")
	if n0 != 1 {
		t.Fatalf("committed count %d, want 1", n0)
	}

	must(t, s.Begin())
	sadd(t, s, "s", "b", "c")
	if s.PendingRows() != 1 {
		t.Fatalf("%d pending rows after SADD to a cached set, want 1", s.PendingRows())
	}
	if n, _ := rowInSQLite(t, s, "s"); n != 1 {
		t.Fatalf("SQLite's count %d before write-back, want it behind (1)", n)
	}
	if got := scard(t, s, "s"); got != 3 {
		t.Fatalf("SCARD through the cache: %d, want 3", got)
	}
	// A statement on another key's row leaves them pending; one on the
	// keys table at large (here SCAN's) writes them back first.
	if _, _, err := s.Lookup(0, []byte("other")); err != nil {
		t.Fatal(err)
	}
	if n, _ := rowInSQLite(t, s, "s"); n != 1 || s.PendingRows() != 1 {
		t.Fatalf("a lookup of another key wrote s back: count %d, %d pending", n, s.PendingRows())
	}
	if _, _, err := s.Scan(0, 0, 10, nil); err != nil {
		t.Fatal(err)
	}
	if n, v := rowInSQLite(t, s, "s"); n != 3 || v <= v0 {
		t.Fatalf("after a keys statement: count %d version %d, want 3 and > %d", n, v, v0)
	}
	if s.PendingRows() != 0 {
		t.Fatalf("%d rows still pending", s.PendingRows())
	}
	// A rollback discards what is pending.
	sadd(t, s, "s", "d")
	s.Rollback()
	if got := scard(t, s, "s"); got != 1 {
		t.Fatalf("after rollback: SCARD %d, want the committed 1", got)
	}

	// A savepoint writes back first; an undo discards only what followed.
	must(t, s.Begin())
	sadd(t, s, "s", "b")
	must(t, s.Savepoint())
	sadd(t, s, "s", "c")
	if !s.Undo() {
		t.Fatal("undo refused")
	}
	if got := scard(t, s, "s"); got != 2 {
		t.Fatalf("after undo: SCARD %d, want 2", got)
	}
	_, _, err := s.Commit()
	must(t, err)
	if n, _ := rowInSQLite(t, s, "s"); n != 2 {
		t.Fatalf("committed count %d, want 2", n)
	}
}

// Pending rows evicted from a small cache, renamed, deleted or emptied are
// still written right (and never onto a key created since), so every count
// is right after a restart.
func TestWriteBackSurvivesEvictionAndKeyChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	s, err := Open(Options{Path: path, HotCacheBytes: 2 << 10}) // a few entries
	must(t, err)
	s.Now = 1
	want := map[string]int64{}
	inTx(t, s, func() {
		for i := range 200 {
			key := fmt.Sprintf("set:%d", i%40)
			sadd(t, s, key, fmt.Sprint(i))
			want[key]++
		}
		// Rename a pending set, delete another and re-create it.
		sadd(t, s, "set:0", "x")
		want["set:0"]++
		must(t, s.Rename(0, []byte("set:0"), []byte("renamed")))
		want["renamed"], want["set:0"] = want["set:0"], 0
		sadd(t, s, "set:1", "y")
		_, err := s.Delete(0, []byte("set:1"))
		must(t, err)
		sadd(t, s, "set:1", "z")
		want["set:1"] = 1
		// Empty one through its elements: the key goes.
		c, err := s.OpenColl(0, []byte("set:2"), TypeSet)
		must(t, err)
		for i := 2; i < 200; i += 40 {
			_, err := s.SetRem(c, []byte(fmt.Sprint(i)))
			must(t, err)
		}
		must(t, s.EndCommand())
		want["set:2"] = 0
	})
	must(t, s.Close())
	s, err = Open(Options{Path: path})
	must(t, err)
	defer s.Close()
	s.Now = 1
	for key, n := range want {
		if got := scard(t, s, key); got != n {
			t.Errorf("%s: SCARD %d after restart, want %d", key, got, n)
		}
		if n > 0 {
			if c, _ := rowInSQLite(t, s, key); c != n {
				t.Errorf("%s: row count %d, want %d", key, c, n)
			}
		}
	}
}

// A hot list's pushes and pops keep its positions in the cache and its
// version pending; other list writes drop the cached row; the file holds
// the right list after a restart.
func TestWriteBackLists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	s, err := Open(Options{Path: path, HotCacheBytes: 1 << 20})
	must(t, err)
	s.Now = 1
	push := func(end End, vals ...string) {
		t.Helper()
		var b [][]byte
		for _, v := range vals {
			b = append(b, []byte(v))
		}
		_, err := s.ListPush(0, []byte("l"), end, b, false)
		must(t, err)
	}
	pop := func(end End, want string) {
		t.Helper()
		got, err := s.ListPop(0, []byte("l"), end, 1)
		must(t, err)
		if len(got) != 1 || string(got[0]) != want {
			t.Fatalf("pop: %q, want %q", got, want)
		}
	}
	inTx(t, s, func() { push(Right, "a", "b") })
	_, v0 := rowInSQLite(t, s, "l")
	must(t, s.Begin())
	push(Left, "z")  // z a b
	push(Right, "c") // z a b c
	pop(Left, "z")   // a b c
	if s.PendingRows() != 1 {
		t.Fatalf("%d pending rows, want 1", s.PendingRows())
	}
	if _, v := rowInSQLite(t, s, "l"); v != v0 {
		t.Fatalf("SQLite's version moved before write-back: %d, was %d", v, v0)
	}
	_, err = s.ListInsert(0, []byte("l"), true, []byte("b"), []byte("ab")) // a ab b c
	must(t, err)
	if _, v := rowInSQLite(t, s, "l"); v <= v0 {
		t.Fatalf("version %d after LINSERT, want > %d", v, v0)
	}
	pop(Right, "c") // a ab b
	push(Left, "0") // 0 a ab b
	must(t, s.ListTrim(0, []byte("l"), 0, 2))
	pop(Right, "ab") // 0 a
	_, _, err = s.Commit()
	must(t, err)
	must(t, s.Close())

	s, err = Open(Options{Path: path})
	must(t, err)
	defer s.Close()
	s.Now = 1
	var got []string
	_, err = s.ListRange(0, []byte("l"), 0, -1, func(int64) {}, func(v []byte) { got = append(got, string(v)) })
	must(t, err)
	if fmt.Sprint(got) != "[0 a]" {
		t.Fatalf("after restart: %q, want [0 a]", got)
	}
}

// A cached string's SETs wait in the cache: SQLite's row keeps its old
// value until a write-back, which also moves a replaced blob to the
// garbage and writes the expiry; a rollback discards them.
func TestWriteBackStrings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	s, err := Open(Options{Path: path, HotCacheBytes: 1 << 20})
	must(t, err)
	s.Now = 1
	set := func(key string, v []byte, exp int64) {
		t.Helper()
		must(t, s.SetString(0, []byte(key), v, exp, false))
	}
	inSQLite := func(key string) (v []byte, exp int64) {
		t.Helper()
		st, err := s.c.prepare("SELECT " + valueExpr + ", coalesce(expire_at, 0) FROM keys WHERE db = 0 AND key = ?1")
		must(t, err)
		defer st.close()
		st.blob(1, []byte(key))
		if row, err := st.step(); err != nil || !row {
			t.Fatalf("%s: no row (%v)", key, err)
		}
		v, exp = st.colBlob(0, nil), st.colInt(1)
		st.reset()
		return v, exp
	}
	big := func(c byte) []byte { return bytes.Repeat([]byte{c}, 2000) } // a blob ref, cached

	inTx(t, s, func() { set("k", []byte("v0"), 0); set("b", big('a'), 0) })
	must(t, s.Begin())
	for i := range 100 {
		set("k", fmt.Appendf(nil, "v%d", i+1), 0)
	}
	set("b", big('b'), 0)
	set("b", big('c'), 5000)
	if s.PendingRows() != 2 {
		t.Fatalf("%d pending rows, want 2", s.PendingRows())
	}
	if v, _ := inSQLite("k"); string(v) != "v0" {
		t.Fatalf("SQLite holds %q before write-back, want the old v0", v)
	}
	if v, _, err := s.GetString(0, []byte("k"), nil); err != nil || string(v) != "v100" {
		t.Fatalf("GET: %q %v, want v100", v, err)
	}
	if _, _, err := s.Lookup(0, []byte("x")); err != nil { // another key's row
		t.Fatal(err)
	}
	if v, _ := inSQLite("k"); string(v) != "v0" {
		t.Fatalf("a lookup of another key wrote k back: SQLite holds %q", v)
	}
	if _, _, err := s.Lookup(0, []byte("k")); err != nil { // k's own row
		t.Fatal(err)
	}
	if v, _ := inSQLite("k"); string(v) != "v100" {
		t.Fatalf("after write-back SQLite holds %q, want v100", v)
	}
	if v, exp := inSQLite("b"); !bytes.Equal(v, big('c')) || exp != 5000 {
		t.Fatalf("after write-back b is %d bytes of %q expiring at %d", len(v), v[:1], exp)
	}
	set("k", []byte("rolled back"), 0)
	s.Rollback()
	if v, _, _ := s.GetString(0, []byte("k"), nil); string(v) != "v0" {
		t.Fatalf("after rollback GET %q, want the committed v0", v)
	}
	if n := blobCount(t, s); n != 1 {
		t.Fatalf("%d blobs after the rollback, want b's committed one", n)
	}
	inTx(t, s, func() { set("b", big('d'), 0); set("b", []byte("small"), 0) })
	if n := blobCount(t, s); n != 0 {
		t.Fatalf("%d blobs after b became small, want 0", n)
	}
	must(t, s.Close())
	s, err = Open(Options{Path: path})
	must(t, err)
	defer s.Close()
	s.Now = 1
	if v, _, _ := s.GetString(0, []byte("b"), nil); string(v) != "small" {
		t.Fatalf("after restart b = %q", v)
	}
}

// Pending strings evicted for room wait out of the cache until the flush:
// a GET of one takes it back with its latest value, a statement on another
// key's row writes none of them back, a statement on an evicted key's own
// row writes them back first, and past their bound any key counts as
// stale again.
func TestEvictedPendingRows(t *testing.T) {
	s, err := Open(Options{Path: filepath.Join(t.TempDir(), "cellar.db"), HotCacheBytes: 4 << 10})
	must(t, err)
	defer s.Close()
	s.Now = 1
	s.cache.outMax = 2 << 10 // room for the evicted ones below
	inTx(t, s, func() {
		for i := range 50 {
			must(t, s.SetString(0, fmt.Appendf(nil, "k%d", i), []byte("old"), 0, false))
		}
	})
	pendingOut := func() int {
		n := 0
		for _, e := range s.pending {
			if e.gone {
				n++
			}
		}
		return n
	}
	must(t, s.Begin())
	for i := range 50 {
		must(t, s.SetString(0, fmt.Appendf(nil, "k%d", i), []byte("new"), 0, false))
	}
	// More keys than the cache holds: the first pending ones leave it.
	for i := range 50 {
		if _, _, err := s.GetString(0, fmt.Appendf(nil, "other%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if pendingOut() == 0 || s.cache.outLost {
		t.Fatalf("%d pending rows out of the cache (lost: %v); the test needs some, recorded", pendingOut(), s.cache.outLost)
	}
	out := 0
	for i := range 50 {
		if s.cache.m["\x00"+fmt.Sprintf("k%d", i)] == nil {
			out = i
			break
		}
	}
	pending := s.PendingRows()
	if _, _, err := s.Lookup(0, []byte("another")); err != nil {
		t.Fatal(err)
	}
	if s.PendingRows() != pending {
		t.Fatalf("a lookup of another key wrote back %d pending rows", pending-s.PendingRows())
	}
	key := fmt.Appendf(nil, "k%d", out)
	if v, _, err := s.GetString(0, key, nil); err != nil || string(v) != "new" {
		t.Fatalf("GET of an evicted pending key: %q %v, want new", v, err)
	}
	if s.cache.m["\x00"+string(key)] == nil {
		t.Fatal("the GET did not take the evicted entry back")
	}
	// A key dropped while pending stays stale: its row goes back first.
	e := s.cache.get(0, []byte("k49"), s.Now)
	if e == nil || !e.pending {
		t.Fatal("k49 is not a cached pending entry")
	}
	s.cache.unlink(e)
	if !s.cache.stale(0, []byte("k49")) {
		t.Fatal("a dropped pending key is not stale")
	}
	if _, _, err := s.Lookup(0, []byte("k49")); err != nil {
		t.Fatal(err)
	}
	if s.PendingRows() != 0 || len(s.cache.out) != 0 {
		t.Fatalf("a lookup of a stale key left %d pending rows, %d out", s.PendingRows(), len(s.cache.out))
	}
	// Past the bound, every key is stale.
	for i := 0; !s.cache.outLost; i++ {
		if i == 1000 {
			t.Fatal("the evicted pending entries never overflowed their bound")
		}
		must(t, s.SetString(0, fmt.Appendf(nil, "n%d", i), []byte("new"), 0, false))
	}
	if s.cache.outBytes != 0 || !s.cache.stale(0, []byte("nothing")) {
		t.Fatal("an overflowed cache does not count every key stale")
	}
	_, _, err = s.Commit()
	must(t, err)
	for i := range 50 {
		if v, _, err := s.GetString(0, fmt.Appendf(nil, "k%d", i), nil); err != nil || string(v) != "new" {
			t.Fatalf("k%d = %q %v after commit", i, v, err)
		}
	}
}
