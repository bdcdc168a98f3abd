package storage

import (
	"fmt"
	"slices"
	"testing"
)

// takeRecord formats the change record as "db/key kind" lines, with "->other"
// for the changes that name another database, and resets it.
func takeRecord(s *Store) []string {
	var out []string
	for _, t := range s.Touched() {
		line := fmt.Sprintf("%d/%s %s", t.DB, t.Key, t.Kind)
		switch t.Kind {
		case MovedFrom, MovedTo, CopiedTo, Swapped:
			line += fmt.Sprintf(" %d", t.Other)
		}
		out = append(out, line)
	}
	s.ResetTouched()
	return out
}

// TestChangeRecord: each kind of write records what it changed, once, and
// nothing else.
func TestChangeRecord(t *testing.T) {
	s := openTest(t)
	must(t, s.Begin())
	defer s.Rollback()
	b := func(v string) []byte { return []byte(v) }
	vals := func(vs ...string) [][]byte {
		out := make([][]byte, len(vs))
		for i, v := range vs {
			out[i] = b(v)
		}
		return out
	}
	check := func(what string, fn func(), want ...string) {
		t.Helper()
		s.ResetTouched()
		fn()
		must(t, s.EndCommand())
		if got := takeRecord(s); !slices.Equal(got, want) {
			t.Errorf("%s: recorded %q, want %q", what, got, want)
		}
	}
	nothing := []string(nil)
	// existing opens a collection the test made earlier.
	existing := func(key string, typ Type) *Coll {
		t.Helper()
		c, err := s.OpenColl(0, b(key), typ)
		if err != nil || c == nil {
			t.Fatalf("open %s: %v %v", key, c, err)
		}
		return c
	}

	// Strings and keys.
	check("SET new", func() { must(t, s.SetString(0, b("s"), b("v"), 0, false)) }, "0/s written")
	check("SET over a string", func() { must(t, s.SetString(0, b("s"), b("w"), 0, false)) }, "0/s written")
	check("EXPIRE", func() { must(t, s.SetExpire(0, b("s"), s.Now+5)) }, "0/s expiry-changed")
	check("DEL", func() {
		if ok, err := s.Delete(0, b("s")); err != nil || !ok {
			t.Fatalf("DEL: %v %v", ok, err)
		}
	}, "0/s deleted")
	check("DEL of a missing key", func() {
		_, err := s.Delete(0, b("s"))
		must(t, err)
	}, nothing...)
	check("SET with expiry", func() { must(t, s.SetString(0, b("e"), b("v"), s.Now+5, false)) }, "0/e written")
	s.Now += 10
	check("lookup of an expired key", func() {
		if _, ok, err := s.Lookup(0, b("e")); err != nil || ok {
			t.Fatalf("expired key found: %v %v", ok, err)
		}
	}, "0/e expired")
	check("RENAME onto a new name", func() {
		must(t, s.SetString(0, b("a"), b("1"), 0, false))
		must(t, s.Rename(0, b("a"), b("b")))
	}, "0/a written", "0/a renamed-from", "0/b renamed-to")
	check("RENAME onto an existing key", func() {
		must(t, s.SetString(0, b("c"), b("1"), 0, false))
		must(t, s.Rename(0, b("b"), b("c")))
	}, "0/c written", "0/b renamed-from", "0/c renamed-to")
	check("MOVE", func() { must(t, s.Move(0, b("c"), 3)) }, "0/c moved-from 3", "3/c moved-to 0")
	check("COPY", func() {
		if ok, err := s.Copy(3, b("c"), 0, b("d"), false); err != nil || !ok {
			t.Fatalf("COPY: %v %v", ok, err)
		}
	}, "0/d copied-to 3")
	check("COPY REPLACE", func() {
		if ok, err := s.Copy(0, b("d"), 3, b("c"), true); err != nil || !ok {
			t.Fatalf("COPY: %v %v", ok, err)
		}
	}, "3/c copied-to 0")
	check("SET over a list", func() {
		_, err := s.ListPush(0, b("d"), Right, vals("x"), false)
		if err != ErrWrongType {
			t.Fatalf("push onto a string: %v", err)
		}
		_, err = s.ListPush(0, b("l0"), Right, vals("x"), false)
		must(t, err)
		must(t, s.SetString(0, b("l0"), b("v"), 0, false))
	}, "0/l0 added", "0/l0 written")

	// Lists.
	check("RPUSH new", func() {
		_, err := s.ListPush(0, b("l"), Right, vals("a", "b", "c", "d", "e"), false)
		must(t, err)
	}, "0/l added")
	check("LPUSHX of a missing key", func() {
		_, err := s.ListPush(0, b("nope"), Left, vals("a"), true)
		must(t, err)
	}, nothing...)
	check("LPOP", func() {
		_, err := s.ListPop(0, b("l"), Left, 1)
		must(t, err)
	}, "0/l removed")
	check("LSET", func() { must(t, s.ListSet(0, b("l"), 0, b("B"))) }, "0/l modified")
	check("LINSERT", func() {
		_, err := s.ListInsert(0, b("l"), true, b("c"), b("x"))
		must(t, err)
	}, "0/l added")
	check("LINSERT of a missing pivot", func() {
		_, err := s.ListInsert(0, b("l"), true, b("nope"), b("x"))
		must(t, err)
	}, nothing...)
	check("LREM", func() {
		_, err := s.ListRem(0, b("l"), 0, b("x"))
		must(t, err)
	}, "0/l removed")
	check("LTRIM keeping all", func() { must(t, s.ListTrim(0, b("l"), 0, -1)) }, "0/l modified")
	check("LTRIM", func() { must(t, s.ListTrim(0, b("l"), 0, 2)) }, "0/l removed")
	check("LMOVE onto itself", func() {
		_, _, err := s.ListMove(0, b("l"), b("l"), Left, Right)
		must(t, err)
	}, "0/l modified")
	check("LMOVE", func() {
		_, _, err := s.ListMove(0, b("l"), b("l2"), Left, Right)
		must(t, err)
	}, "0/l removed", "0/l2 added")
	check("RPOP emptying the list", func() {
		_, err := s.ListPop(0, b("l"), Right, 10)
		must(t, err)
	}, "0/l deleted")

	// Collections: recorded when the command ends, once per key.
	check("HSET new", func() {
		c := openColl(t, s, "h", TypeHash)
		for _, f := range []string{"f", "g", "h"} {
			_, err := s.HashSet(c, b(f), b("v"), HashReplace)
			must(t, err)
		}
		if n := len(s.Touched()); n != 0 {
			t.Errorf("collection changes recorded before the command ended: %d", n)
		}
	}, "0/h added")
	check("HSET of existing fields", func() {
		c := existing("h", TypeHash)
		_, err := s.HashSet(c, b("f"), b("w"), HashReplace)
		must(t, err)
	}, "0/h modified")
	check("HSETNX of an existing field", func() {
		c := existing("h", TypeHash)
		_, err := s.HashSet(c, b("f"), b("w"), HashKeepNew)
		must(t, err)
	}, nothing...)
	check("HDEL", func() {
		c := existing("h", TypeHash)
		_, err := s.HashDel(c, b("f"))
		must(t, err)
	}, "0/h removed")
	check("HDEL of every field", func() {
		c := existing("h", TypeHash)
		for _, f := range []string{"g", "h"} {
			_, err := s.HashDel(c, b(f))
			must(t, err)
		}
	}, "0/h deleted")
	check("a collection created and left empty", func() {
		c := openColl(t, s, "z", TypeZSet)
		must(t, s.ZSet(c, b("m"), 1, false))
		_, err := s.ZRem(c, b("m"))
		must(t, err)
	}, nothing...)
	if _, ok, _ := s.Lookup(0, b("z")); ok {
		t.Fatal("an empty collection outlived its command")
	}
	check("ZADD", func() {
		c := openColl(t, s, "z", TypeZSet)
		must(t, s.ZSet(c, b("m"), 1, false))
		must(t, s.ZSet(c, b("n"), 2, false))
	}, "0/z added")
	check("ZADD changing a score", func() {
		c := existing("z", TypeZSet)
		must(t, s.ZSet(c, b("m"), 3, true))
	}, "0/z modified")
	check("ZPOPMIN", func() {
		c := existing("z", TypeZSet)
		_, err := s.ZPop(c, 1, false)
		must(t, err)
	}, "0/z removed")
	check("SADD of a member already there", func() {
		c := openColl(t, s, "st", TypeSet)
		_, err := s.SetAdd(c, b("a"))
		must(t, err)
		must(t, s.EndCommand())
		s.ResetTouched()
		_, err = s.SetAdd(c, b("a"))
		must(t, err)
	}, nothing...)
	check("a STORE over an existing key", func() {
		c, err := s.ReplaceColl(0, b("z"), TypeSet)
		must(t, err)
		_, err = s.SetAdd(c, b("x"))
		must(t, err)
	}, "0/z written")
	check("a STORE with an empty result over an existing key", func() {
		_, err := s.ReplaceColl(0, b("z"), TypeSet)
		must(t, err)
	}, "0/z deleted")
	check("a STORE with an empty result over a missing key", func() {
		_, err := s.ReplaceColl(0, b("z"), TypeSet)
		must(t, err)
	}, nothing...)

	// Whole databases.
	check("FLUSHDB", func() { must(t, s.FlushDB(3)) }, "3/ flushed")
	check("SWAPDB", func() { must(t, s.SwapDB(0, 5)) }, "0/ swapped 5")
	check("SWAPDB of a database with itself", func() { must(t, s.SwapDB(2, 2)) }, nothing...)

	// The sweeper's deletions, in no particular order (Redis's sweep
	// samples keys at random).
	s.ResetTouched()
	must(t, s.SetString(1, b("x"), b("v"), s.Now+1, false))
	must(t, s.SetString(1, b("y"), b("v"), s.Now+2, false))
	s.ResetTouched()
	s.Now += 5
	if n, err := s.SweepExpired(10); err != nil || n != 2 {
		t.Fatalf("swept %d, %v", n, err)
	}
	must(t, s.EndCommand())
	got := takeRecord(s)
	slices.Sort(got)
	if want := []string{"1/x expired", "1/y expired"}; !slices.Equal(got, want) {
		t.Errorf("expiry sweep: recorded %q, want %q", got, want)
	}
}
