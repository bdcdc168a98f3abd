package storage

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(Options{Path: filepath.Join(t.TempDir(), "cellar.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.Now = 1_000_000
	return s
}

// inTx runs fn inside a committed transaction, as the actor's rounds do.
func inTx(t testing.TB, s *Store, fn func()) {
	t.Helper()
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	fn()
	if _, _, err := s.Commit(); err != nil {
		t.Fatal(err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestStringRoundTrip(t *testing.T) {
	s := openTest(t)
	val := []byte("a\x00b\r\nc")
	inTx(t, s, func() {
		must(t, s.SetString(0, []byte("k\x00"), val, 0, false))
		must(t, s.SetString(0, []byte("empty"), []byte{}, 0, false))
	})
	got, ok, err := s.GetString(0, []byte("k\x00"), nil)
	if err != nil || !ok || !bytes.Equal(got, val) {
		t.Fatalf("GetString = %q %v %v", got, ok, err)
	}
	got, ok, _ = s.GetString(0, []byte("empty"), nil)
	if !ok || len(got) != 0 {
		t.Fatalf("empty value: %q %v", got, ok)
	}
	if _, ok, _ := s.GetString(1, []byte("k\x00"), nil); ok {
		t.Fatal("key visible from another database")
	}
	if n := s.DBSize(0); n != 2 {
		t.Fatalf("DBSize = %d", n)
	}
}

func TestExpiryIsNeverVisible(t *testing.T) {
	s := openTest(t)
	inTx(t, s, func() {
		must(t, s.SetString(0, []byte("k"), []byte("v"), s.Now+10, false))
	})
	s.Now += 10 // the millisecond of expiry still sees the key
	if _, ok, _ := s.GetString(0, []byte("k"), nil); !ok {
		t.Fatal("key gone at its expiry millisecond")
	}
	s.Now++
	inTx(t, s, func() {
		if _, ok, _ := s.GetString(0, []byte("k"), nil); ok {
			t.Fatal("expired key visible")
		}
	})
	if n := s.DBSize(0); n != 0 {
		t.Fatalf("lazy expiry left DBSize = %d", n)
	}
}

func TestKeepTTL(t *testing.T) {
	s := openTest(t)
	inTx(t, s, func() {
		must(t, s.SetString(0, []byte("k"), []byte("v"), s.Now+100, false))
		must(t, s.SetString(0, []byte("k"), []byte("w"), 0, true))
	})
	m, ok, err := s.Lookup(0, []byte("k"))
	if err != nil || !ok || m.ExpireAt != s.Now+100 {
		t.Fatalf("KEEPTTL lost the expiry: %+v %v %v", m, ok, err)
	}
	inTx(t, s, func() { must(t, s.SetString(0, []byte("k"), []byte("x"), 0, false)) })
	if m, _, _ := s.Lookup(0, []byte("k")); m.ExpireAt != 0 {
		t.Fatalf("plain SET kept the expiry: %+v", m)
	}
}

func TestSweepExpired(t *testing.T) {
	s := openTest(t)
	inTx(t, s, func() {
		for i := 0; i < 100; i++ {
			must(t, s.SetString(0, []byte(fmt.Sprint("k", i)), []byte("v"), s.Now+int64(i%2), false))
		}
	})
	s.Now += 5
	total := 0
	for {
		var n int
		inTx(t, s, func() {
			var err error
			n, err = s.SweepExpired(7)
			must(t, err)
		})
		if n == 0 {
			break
		}
		if n > 7 {
			t.Fatalf("swept %d keys in a slice of 7", n)
		}
		total += n
	}
	if total != 100 || s.DBSize(0) != 0 {
		t.Fatalf("swept %d, DBSize %d", total, s.DBSize(0))
	}
}

func TestScanReturnsEveryStableKeyOnce(t *testing.T) {
	s := openTest(t)
	inTx(t, s, func() {
		for i := 0; i < 250; i++ {
			must(t, s.SetString(0, []byte(fmt.Sprint("k", i)), []byte("v"), 0, false))
		}
	})
	seen := map[string]int{}
	var cursor uint64
	var out []ScanEntry
	for first := true; first || cursor != 0; first = false {
		var err error
		out, cursor, err = s.Scan(0, cursor, 10, out[:0])
		must(t, err)
		for _, e := range out {
			seen[string(e.Key)]++
		}
		// Churn between calls: new keys, and overwrites of old ones.
		inTx(t, s, func() {
			must(t, s.SetString(0, []byte(fmt.Sprint("new", cursor)), []byte("v"), 0, false))
			must(t, s.SetString(0, []byte("k3"), []byte("w"), 0, false))
		})
	}
	for i := 0; i < 250; i++ {
		if n := seen[fmt.Sprint("k", i)]; n != 1 {
			t.Fatalf("k%d returned %d times", i, n)
		}
	}
}

func TestTypesAndWrongType(t *testing.T) {
	s := openTest(t)
	_, _, err := s.LookupType(0, []byte("nokey"), TypeList)
	must(t, err)
	inTx(t, s, func() { must(t, s.SetString(0, []byte("s"), []byte("v"), 0, false)) })
	if _, _, err := s.LookupType(0, []byte("s"), TypeList); !errors.Is(err, ErrWrongType) {
		t.Fatalf("LookupType on a string as a list: %v", err)
	}
}

func TestRenameCopyMoveSwapFlush(t *testing.T) {
	s := openTest(t)
	inTx(t, s, func() {
		must(t, s.SetString(0, []byte("a"), []byte("1"), s.Now+1000, false))
		must(t, s.SetString(0, []byte("b"), []byte("2"), 0, false))
		must(t, s.Rename(0, []byte("a"), []byte("b")))
	})
	if v, _, _ := s.GetString(0, []byte("b"), nil); string(v) != "1" {
		t.Fatalf("rename: b = %q", v)
	}
	if m, _, _ := s.Lookup(0, []byte("b")); m.ExpireAt != s.Now+1000 {
		t.Fatal("rename lost the TTL")
	}
	if s.DBSize(0) != 1 {
		t.Fatalf("DBSize after rename = %d", s.DBSize(0))
	}
	inTx(t, s, func() {
		ok, err := s.Copy(0, []byte("b"), 3, []byte("c"), false)
		must(t, err)
		if !ok {
			t.Fatal("copy refused")
		}
		must(t, s.Move(0, []byte("b"), 5))
	})
	if s.DBSize(0) != 0 || s.DBSize(3) != 1 || s.DBSize(5) != 1 {
		t.Fatalf("sizes %d %d %d", s.DBSize(0), s.DBSize(3), s.DBSize(5))
	}
	inTx(t, s, func() { must(t, s.SwapDB(3, 5)) })
	if v, _, _ := s.GetString(5, []byte("c"), nil); string(v) != "1" {
		t.Fatal("swapdb")
	}
	inTx(t, s, func() { must(t, s.FlushDB(5)) })
	if s.DBSize(5) != 0 || s.DBSize(3) != 1 {
		t.Fatal("flushdb")
	}
}

func TestRollbackForgetsCounts(t *testing.T) {
	s := openTest(t)
	must(t, s.Begin())
	must(t, s.SetString(0, []byte("k"), []byte("v"), 0, false))
	s.Rollback()
	if s.DBSize(0) != 0 {
		t.Fatal("rolled back insert still counted")
	}
	if _, ok, _ := s.GetString(0, []byte("k"), nil); ok {
		t.Fatal("rolled back insert visible")
	}
}

func TestReopenKeepsDataAndCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	s, err := Open(Options{Path: path})
	must(t, err)
	inTx(t, s, func() {
		for i := 0; i < 10; i++ {
			must(t, s.SetString(2, []byte(fmt.Sprint(i)), []byte("v"), 0, false))
		}
	})
	must(t, s.SyncWAL())
	must(t, s.Close())
	s, err = Open(Options{Path: path})
	must(t, err)
	defer s.Close()
	if s.DBSize(2) != 10 {
		t.Fatalf("DBSize after reopen = %d", s.DBSize(2))
	}
	inTx(t, s, func() { must(t, s.SetString(2, []byte("new"), []byte("v"), 0, false)) })
	var out []ScanEntry
	out, _, err = s.Scan(2, 0, 100, out)
	must(t, err)
	if len(out) != 11 {
		t.Fatalf("scan after reopen: %d keys (ids reused?)", len(out))
	}
}

func TestRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	must(t, os.WriteFile(garbage, []byte(strings.Repeat("not a database ", 400)), 0o644))
	if _, err := Open(Options{Path: garbage}); err == nil || !strings.Contains(err.Error(), "not a database") {
		t.Fatalf("garbage file: %v", err)
	}
	foreign := filepath.Join(dir, "foreign.db")
	c, err := openConn(foreign, 6) // READWRITE|CREATE
	must(t, err)
	must(t, c.exec("CREATE TABLE t (x)"))
	c.close()
	if _, err := Open(Options{Path: foreign}); err == nil || !strings.Contains(err.Error(), "no Cellar schema") {
		t.Fatalf("foreign database: %v", err)
	}
}

func BenchmarkGetString(b *testing.B) {
	s := openTest(b)
	inTx(b, s, func() {
		for i := 0; i < 100000; i++ {
			must(b, s.SetString(0, []byte(fmt.Sprintf("key:%08d", i)), bytes.Repeat([]byte("x"), 64), 0, false))
		}
	})
	must(b, s.Begin())
	var buf []byte
	key := []byte("key:00000000")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(key[4:], fmt.Appendf(nil, "%08d", i%100000))
		buf, _, _ = s.GetString(0, key, buf[:0])
	}
}

func BenchmarkSetStringBatch16(b *testing.B) {
	s := openTest(b)
	val := bytes.Repeat([]byte("x"), 64)
	key := []byte("key:00000000")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%16 == 0 {
			if i > 0 {
				s.Commit()
			}
			s.Begin()
		}
		copy(key[4:], fmt.Appendf(nil, "%08d", (i*7919)%100000))
		val[0] = byte(i)
		s.SetString(0, key, val, 0, false)
	}
	s.Commit()
}

// EachStored reads every key SQLite holds, reopened with nothing in
// memory: each database's names, types and expiries, and strings' values
// (a value too large for its row read from its blob).
func TestEachStoredReadsEveryRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	s, err := Open(Options{Path: path})
	must(t, err)
	big := bytes.Repeat([]byte("0123456789"), 1000)
	inTx(t, s, func() {
		must(t, s.SetString(0, []byte("a"), []byte("1"), 0, false))
		must(t, s.SetString(0, []byte("ttl"), []byte("2"), 4102444800000, false))
		must(t, s.SetString(3, []byte("big"), big, 0, false))
		_, err := s.ListPush(3, []byte("list"), Right, [][]byte{[]byte("x")}, false)
		must(t, err)
	})
	must(t, s.SyncWAL())
	must(t, s.Close())
	s, err = Open(Options{Path: path})
	must(t, err)
	defer s.Close()
	type row struct {
		t   Type
		exp int64
		str string
	}
	read := func(db int) map[string]row {
		got := map[string]row{}
		must(t, s.EachStored(db, func(name []byte, ty Type, exp int64, str []byte) error {
			got[string(name)] = row{ty, exp, string(str)}
			return nil
		}))
		return got
	}
	if got, want := read(0), map[string]row{"a": {TypeString, 0, "1"}, "ttl": {TypeString, 4102444800000, "2"}}; !maps.Equal(got, want) {
		t.Fatalf("db 0: %v, want %v", got, want)
	}
	if got, want := read(3), map[string]row{"big": {TypeString, 0, string(big)}, "list": {TypeList, 0, ""}}; !maps.Equal(got, want) {
		t.Fatalf("db 3: %d rows, want %d", len(got), len(want))
	}
	if got := read(1); len(got) != 0 {
		t.Fatalf("db 1: %v", got)
	}
}
