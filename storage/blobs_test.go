package storage

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
)

// blobCount is the number of blobs stored, after garbage collection.
func blobCount(t testing.TB, s *Store) int64 {
	t.Helper()
	st, err := s.c.prepare("SELECT count(*) FROM blobs")
	must(t, err)
	defer st.close()
	if _, err := st.step(); err != nil {
		t.Fatal(err)
	}
	n := st.colInt(0)
	st.reset()
	return n
}

// Large values round-trip through strings, lists and hashes, are freed
// when overwritten or deleted, and are never shared by COPY.
func TestLargeValues(t *testing.T) {
	s := openTest(t)
	big := func(c byte) []byte { return bytes.Repeat([]byte{c}, 100_000) }
	small := []byte("small")
	inTx(t, s, func() {
		must(t, s.SetString(0, []byte("s"), big('a'), 0, false))
		_, err := s.ListPush(0, []byte("l"), Right, [][]byte{big('b'), small, big('c')}, false)
		must(t, err)
		h, err := s.OpenOrCreateColl(0, []byte("h"), TypeHash)
		must(t, err)
		_, err = s.HashSet(h, []byte("f"), big('d'), HashReplace)
		must(t, err)
		_, err = s.HashSet(h, []byte("g"), small, HashReplace)
		must(t, err)
		must(t, s.EndCommand())
	})
	if n := blobCount(t, s); n != 4 {
		t.Fatalf("%d blobs for 4 large values", n)
	}
	v, _, err := s.GetString(0, []byte("s"), nil)
	if err != nil || !bytes.Equal(v, big('a')) {
		t.Fatalf("string: %d bytes, %v", len(v), err)
	}
	if n, _, _ := s.StringLen(0, []byte("s")); n != 100_000 {
		t.Fatalf("STRLEN of a large value: %d", n)
	}
	// LPOS/LREM compare against the stored bytes, wherever they live.
	found := false
	_, err = s.ListPos(0, []byte("l"), big('c'), 1, 1, 0, func(i int64) { found = i == 2 })
	if err != nil || !found {
		t.Fatalf("LPOS of a large value: %v %v", found, err)
	}
	inTx(t, s, func() {
		// Overwrite the string, pop a large list element, copy everything.
		must(t, s.SetString(0, []byte("s"), big('e'), 0, false))
		vals, err := s.ListPop(0, []byte("l"), Left, 1)
		must(t, err)
		if len(vals) != 1 || !bytes.Equal(vals[0], big('b')) {
			t.Fatalf("popped %d values", len(vals))
		}
		for _, k := range []string{"s", "l", "h"} {
			ok, err := s.Copy(0, []byte(k), 1, []byte(k), false)
			must(t, err)
			if !ok {
				t.Fatalf("COPY %s refused", k)
			}
		}
	})
	// e (s), c (l), d (h), and their three copies.
	if n := blobCount(t, s); n != 6 {
		t.Fatalf("%d blobs after overwrite, pop and copy, want 6", n)
	}
	inTx(t, s, func() {
		for _, k := range []string{"s", "l", "h"} {
			_, err := s.Delete(0, []byte(k))
			must(t, err)
		}
	})
	// The copies stand on their own.
	if v, _, _ := s.GetString(1, []byte("s"), nil); !bytes.Equal(v, big('e')) {
		t.Fatal("the copy of a large string lost its value when the original went")
	}
	h, err := s.OpenColl(1, []byte("h"), TypeHash)
	must(t, err)
	if v, ok, err := s.HashGet(h, []byte("f"), nil); err != nil || !ok || !bytes.Equal(v, big('d')) {
		t.Fatalf("copied hash value: %d bytes %v %v", len(v), ok, err)
	}
	if n := blobCount(t, s); n != 3 {
		t.Fatalf("%d blobs after deleting the originals, want 3", n)
	}
	inTx(t, s, func() { must(t, s.FlushDB(1)) })
	if n := blobCount(t, s); n != 0 {
		t.Fatalf("%d blobs left after FLUSHDB", n)
	}
}

// A lookup does not read a large value stored under a nearby key: its cost
// stays that of any lookup (it used to read the whole value each time).
func BenchmarkLookupNextToLargeValue(b *testing.B) {
	s := openTest(b)
	inTx(b, s, func() {
		for i := 0; i < 1000; i++ {
			must(b, s.SetString(0, []byte(fmt.Sprintf("k%04d", i)), []byte("v"), 0, false))
		}
		must(b, s.SetString(0, []byte("k0500x"), bytes.Repeat([]byte("x"), 8<<20), 0, false))
	})
	b.ResetTimer()
	var buf []byte
	for i := 0; i < b.N; i++ {
		buf, _, _ = s.GetString(0, []byte("k0501"), buf[:0])
	}
}

// A string's replaced blob is freed whichever way a flush rewrites the
// row: a large value overwritten by another (the same size or far larger),
// by INCR-style rewrites to a small value, and after a RENAME made its key
// short (a ref is no longer predictable from lengths).
func TestStringBlobsFreedOnOverwrite(t *testing.T) {
	s, err := Open(Options{Path: filepath.Join(t.TempDir(), "cellar.db")})
	must(t, err)
	defer s.Close()
	s.Now = 1
	set := func(key string, v []byte) {
		t.Helper()
		inTx(t, s, func() { must(t, s.SetString(0, []byte(key), v, 0, false)) })
	}
	get := func(key string) {
		t.Helper()
		if _, _, err := s.GetString(0, []byte(key), nil); err != nil {
			t.Fatal(err)
		}
	}
	want := func(n int64, what string) {
		t.Helper()
		if got := blobCount(t, s); got != n {
			t.Fatalf("%s: %d blobs, want %d", what, got, n)
		}
	}
	mid := bytes.Repeat([]byte{'m'}, 2000)   // a ref
	huge := bytes.Repeat([]byte{'h'}, 1<<17) // a ref, 128 KB
	longName := string(bytes.Repeat([]byte{'k'}, 899))

	set("a", mid)
	want(1, "a large value")
	set("a", mid)
	want(1, "a large value overwritten")
	set("a", []byte("1"))
	want(0, "a large value overwritten by a small one")

	set("b", huge)
	set("b", huge)
	want(1, "a 128 KB value overwritten")
	set("b", []byte("x"))
	want(0, "a 128 KB value overwritten by a small one")

	set(longName, []byte("ab")) // 901 bytes of key and value: a ref
	want(1, "a small value under a long name")
	inTx(t, s, func() { must(t, s.Rename(0, []byte(longName), []byte("c"))) })
	get("c")
	set("c", []byte("ab"))
	want(0, "a renamed key's ref overwritten")
}

// Every way a list deletes elements (a single pop, a pop of several,
// LTRIM, LREM, DEL and FLUSHDB) frees the large values it deletes, and no
// others: no trigger does it for them (migration 10).
func TestListBlobsFreedOnEveryDelete(t *testing.T) {
	s := openTest(t)
	big := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 1000+i) }
	key := []byte("l")
	push := func(n int) {
		t.Helper()
		vals := make([][]byte, n)
		for i := range vals {
			vals[i] = big(i)
		}
		inTx(t, s, func() {
			_, err := s.ListPush(0, key, Right, vals, false)
			must(t, err)
			must(t, s.EndCommand())
		})
	}
	want := func(n int64, what string) {
		t.Helper()
		if got := blobCount(t, s); got != n {
			t.Fatalf("%s: %d blobs, want %d", what, got, n)
		}
	}
	push(10)
	want(10, "ten large elements")
	inTx(t, s, func() {
		vals, err := s.ListPop(0, key, Left, 1)
		must(t, err)
		if len(vals) != 1 || !bytes.Equal(vals[0], big(0)) {
			t.Fatalf("popped %d values", len(vals))
		}
		vals, err = s.ListPop(0, key, Right, 2)
		must(t, err)
		if len(vals) != 2 || !bytes.Equal(vals[0], big(9)) || !bytes.Equal(vals[1], big(8)) {
			t.Fatalf("popped %d values", len(vals))
		}
		must(t, s.EndCommand())
	})
	want(7, "after popping one and two")
	inTx(t, s, func() {
		must(t, s.ListTrim(0, key, 1, -2)) // keeps big(2)..big(6)
		must(t, s.EndCommand())
	})
	want(5, "after LTRIM 1 -2")
	inTx(t, s, func() {
		n, err := s.ListRem(0, key, 0, big(4))
		must(t, err)
		if n != 1 {
			t.Fatalf("LREM removed %d", n)
		}
		must(t, s.EndCommand())
	})
	want(4, "after LREM")
	if v, ok, err := s.ListIndex(0, key, 2, nil); err != nil || !ok || !bytes.Equal(v, big(5)) {
		t.Fatalf("LINDEX 2 after LREM: %d bytes %v %v", len(v), ok, err)
	}
	inTx(t, s, func() {
		_, err := s.Delete(0, key)
		must(t, err)
	})
	want(0, "after DEL")
	push(3)
	inTx(t, s, func() { must(t, s.FlushDB(0)) })
	want(0, "after FLUSHDB")
}

// Every way a hash lets go of a large field value (overwritten by another
// large one or by a small one, HDEL, the key deleted, FLUSHDB, the hash
// rewritten whole) frees its blob, and no other: the triggers do it
// (schema.go), the flush never reads a field back to find its ref.
func TestHashBlobsFreedOnEveryDelete(t *testing.T) {
	s := openTest(t)
	big := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 1000+i) }
	key := []byte("h")
	hset := func(field string, v []byte) {
		t.Helper()
		inTx(t, s, func() {
			h, err := s.OpenOrCreateColl(0, key, TypeHash)
			must(t, err)
			_, err = s.HashSet(h, []byte(field), v, HashReplace)
			must(t, err)
			must(t, s.EndCommand())
		})
	}
	want := func(n int64, what string) {
		t.Helper()
		if got := blobCount(t, s); got != n {
			t.Fatalf("%s: %d blobs, want %d", what, got, n)
		}
	}
	for i := 0; i < 4; i++ {
		hset(fmt.Sprint("f", i), big(i))
	}
	want(4, "four large fields")
	hset("f0", big(10))
	want(4, "a large field overwritten by a large one")
	hset("f1", []byte("small"))
	want(3, "a large field overwritten by a small one")
	hset("f1", big(11))
	want(4, "a small field overwritten by a large one")
	inTx(t, s, func() {
		h, err := s.OpenColl(0, key, TypeHash)
		must(t, err)
		removed, err := s.HashDel(h, []byte("f2"))
		must(t, err)
		if !removed {
			t.Fatal("HDEL removed nothing")
		}
		must(t, s.EndCommand())
	})
	want(3, "after HDEL")
	if v, found, err := s.HashGet(mustColl(t, s, key), []byte("f0"), nil); err != nil || !found || !bytes.Equal(v, big(10)) {
		t.Fatalf("HGET f0: %d bytes %v %v", len(v), found, err)
	}
	inTx(t, s, func() {
		_, err := s.Delete(0, key)
		must(t, err)
	})
	want(0, "after DEL")
	hset("a", big(1))
	hset("b", big(2))
	inTx(t, s, func() { must(t, s.FlushDB(0)) })
	want(0, "after FLUSHDB")
	hset("a", big(1))
	inTx(t, s, func() {
		_, err := s.Delete(0, key)
		must(t, err)
		h, err := s.OpenOrCreateColl(0, key, TypeHash) // the same name, new rows
		must(t, err)
		_, err = s.HashSet(h, []byte("a"), big(3), HashReplace)
		must(t, err)
		must(t, s.EndCommand())
	})
	want(1, "a hash deleted and made again in one flush")
}

func mustColl(t *testing.T, s *Store, key []byte) *Coll {
	t.Helper()
	c, err := s.OpenColl(0, key, TypeHash)
	must(t, err)
	return c
}
