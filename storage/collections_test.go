package storage

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func openColl(t testing.TB, s *Store, key string, typ Type) *Coll {
	t.Helper()
	c, err := s.OpenOrCreateColl(0, []byte(key), typ)
	must(t, err)
	return c
}

func TestHashFieldsAndCount(t *testing.T) {
	s := openTest(t)
	big := bytes.Repeat([]byte("x\x00"), 1<<19) // 1 MiB
	inTx(t, s, func() {
		c := openColl(t, s, "h", TypeHash)
		for _, f := range []string{"a", "b\x00", "", "a"} {
			_, err := s.HashSet(c, []byte(f), []byte("v"+f), HashReplace)
			must(t, err)
		}
		added, err := s.HashSet(c, []byte("big"), big, HashReplace)
		must(t, err)
		if !added || c.Len != 4 {
			t.Fatalf("added %v len %d", added, c.Len)
		}
		added, err = s.HashSet(c, []byte("a"), []byte("no"), HashKeepNew)
		must(t, err)
		if added {
			t.Fatal("HSETNX semantics: existing field replaced")
		}
		must(t, s.EndCommand())
	})
	c, err := s.OpenColl(0, []byte("h"), TypeHash)
	must(t, err)
	if c == nil || c.Len != 4 {
		t.Fatalf("reopened: %+v", c)
	}
	v, ok, err := s.HashGet(c, []byte("big"), nil)
	if err != nil || !ok || !bytes.Equal(v, big) {
		t.Fatalf("big value: ok %v err %v len %d", ok, err, len(v))
	}
	v, _, _ = s.HashGet(c, []byte("a"), nil)
	if string(v) != "va" {
		t.Fatalf("a = %q", v)
	}
	if n, _ := s.HashStrLen(c, []byte("b\x00")); n != 3 {
		t.Fatalf("strlen %d", n)
	}
	if _, err := s.OpenColl(0, []byte("h"), TypeSet); err != ErrWrongType {
		t.Fatalf("wrong type: %v", err)
	}
	// Deleting every field deletes the key.
	inTx(t, s, func() {
		c, _ := s.OpenColl(0, []byte("h"), TypeHash)
		for _, f := range []string{"a", "b\x00", "", "big", "nope"} {
			_, err := s.HashDel(c, []byte(f))
			must(t, err)
		}
		must(t, s.EndCommand())
	})
	if c, _ := s.OpenColl(0, []byte("h"), TypeHash); c != nil {
		t.Fatalf("emptied hash still there: %+v", c)
	}
	if n := s.DBSize(0); n != 0 {
		t.Fatalf("DBSize %d", n)
	}
	assertNoRows(t, s, "hashes")
}

// assertNoRows checks that a table has no rows left behind.
func assertNoRows(t *testing.T, s *Store, table string) {
	t.Helper()
	st, err := s.c.prepare("SELECT count(*) FROM " + table)
	must(t, err)
	defer st.close()
	st.step()
	if n := st.colInt(0); n != 0 {
		t.Fatalf("%s has %d rows left", table, n)
	}
}

func TestCollectionsFollowKeyLifecycle(t *testing.T) {
	s := openTest(t)
	inTx(t, s, func() {
		for _, typ := range []Type{TypeHash, TypeSet, TypeZSet} {
			c := openColl(t, s, fmt.Sprint("k", typ), typ)
			for i := 0; i < 10; i++ {
				m := []byte(fmt.Sprint("m", i))
				switch typ {
				case TypeHash:
					s.HashSet(c, m, m, HashReplace)
				case TypeSet:
					s.SetAdd(c, m)
				case TypeZSet:
					s.ZSet(c, m, float64(i), false)
				}
			}
			must(t, s.EndCommand())
		}
	})
	inTx(t, s, func() {
		for _, typ := range []Type{TypeHash, TypeSet, TypeZSet} {
			k := fmt.Sprint("k", typ)
			ok, err := s.Copy(0, []byte(k), 1, []byte(k), false)
			must(t, err)
			if !ok {
				t.Fatal("copy refused")
			}
			must(t, s.Rename(0, []byte(k), []byte(k+"r")))
			c, _ := s.OpenColl(1, []byte(k), typ)
			all, err := s.AllElements(c)
			must(t, err)
			if len(all) != 10 || c.Len != 10 {
				t.Fatalf("copy of %v: %d elements, len %d", typ, len(all), c.Len)
			}
		}
		// Overwriting a collection with a string drops its elements.
		must(t, s.SetString(0, []byte(fmt.Sprint("k", TypeHash, "r")), []byte("s"), 0, false))
	})
	inTx(t, s, func() { must(t, s.FlushDB(1)) })
	inTx(t, s, func() { must(t, s.FlushDB(0)) })
	for _, tb := range []string{"hashes", "sets", "zsets"} {
		assertNoRows(t, s, tb)
	}
}

func TestSetSampleAndScan(t *testing.T) {
	s := openTest(t)
	const n = 3000
	inTx(t, s, func() {
		c := openColl(t, s, "s", TypeSet)
		for i := 0; i < n; i++ {
			s.SetAdd(c, []byte(fmt.Sprint(i)))
		}
		must(t, s.EndCommand())
	})
	c, _ := s.OpenColl(0, []byte("s"), TypeSet)
	seen := map[string]int{}
	cursor := uint64(0)
	calls := 0
	for {
		next, err := s.ScanElements(c, cursor, 100, func(e *Elem) { seen[string(e.Member)]++ })
		must(t, err)
		calls++
		if next == 0 {
			break
		}
		if next <= cursor {
			t.Fatalf("cursor went back: %d after %d", next, cursor)
		}
		cursor = next
	}
	if len(seen) != n || calls < n/100 {
		t.Fatalf("scan saw %d members in %d calls", len(seen), calls)
	}
	for m, k := range seen {
		if k != 1 {
			t.Fatalf("%s returned %d times", m, k)
		}
	}
	for _, k := range []int64{1, 5, 999, 2999, 3000, 5000} {
		got, err := s.Sample(c, k)
		must(t, err)
		distinct := map[string]bool{}
		for _, e := range got {
			distinct[string(e.Member)] = true
		}
		if want := min(k, n); int64(len(got)) != want || int64(len(distinct)) != want {
			t.Fatalf("distinct sample of %d: %d elements, %d distinct", k, len(got), len(distinct))
		}
	}
	picks := 0
	must(t, s.SampleRepeats(c, 10000, func(e *Elem) bool {
		if ok, _ := s.SetHas(c, e.Member); !ok {
			t.Fatalf("picked %q, not a member", e.Member)
		}
		picks++
		return true
	}))
	if picks != 10000 {
		t.Fatalf("sample with repeats: %d", picks)
	}
}

func zsetOf(t *testing.T, s *Store, key string, pairs ...any) {
	t.Helper()
	inTx(t, s, func() {
		c := openColl(t, s, key, TypeZSet)
		for i := 0; i < len(pairs); i += 2 {
			m := []byte(pairs[i].(string))
			_, ok, err := s.ZScore(c, m)
			must(t, err)
			must(t, s.ZSet(c, m, pairs[i+1].(float64), ok))
		}
		must(t, s.EndCommand())
	})
}

func members(t *testing.T, s *Store, c *Coll, r ZRange) string {
	t.Helper()
	var out []string
	must(t, s.ZRangeElems(c, r, func(e *Elem) bool {
		out = append(out, string(e.Member))
		return true
	}))
	return strings.Join(out, ",")
}

func TestZSetOrderRanksAndRanges(t *testing.T) {
	s := openTest(t)
	zsetOf(t, s, "z", "a", 1.0, "b", 1.0, "c", 2.0, "d", math.Inf(-1), "e", math.Inf(1), "f", -0.0, "b\x00", 1.0)
	c, _ := s.OpenColl(0, []byte("z"), TypeZSet)
	if c.Len != 7 {
		t.Fatalf("len %d", c.Len)
	}
	all := members(t, s, c, ZRange{Kind: ZByRank, Start: 0, Stop: 6})
	if all != "d,f,a,b,b\x00,c,e" {
		t.Fatalf("order %q", all)
	}
	if got := members(t, s, c, ZRange{Kind: ZByRank, Rev: true, Start: 4, Stop: 6}); got != "a,f,d" {
		t.Fatalf("far reverse range %q", got)
	}
	if got := members(t, s, c, ZRange{Kind: ZByRank, Start: 5, Stop: 6}); got != "c,e" {
		t.Fatalf("far range %q", got)
	}
	for i, m := range []string{"d", "f", "a", "b", "b\x00", "c", "e"} {
		score, _, _ := s.ZScore(c, []byte(m))
		r, err := s.ZRank(c, []byte(m), score, false)
		must(t, err)
		rr, _ := s.ZRank(c, []byte(m), score, true)
		if r != int64(i) || rr != int64(6-i) {
			t.Fatalf("rank of %q: %d/%d", m, r, rr)
		}
	}
	if sc, _, _ := s.ZScore(c, []byte("f")); math.Signbit(sc) {
		t.Fatal("-0 kept its sign")
	}
	r := ZRange{Kind: ZByScore, Min: 1, Max: ZNextDown(2), Limit: -1}
	if got := members(t, s, c, r); got != "a,b,b\x00" {
		t.Fatalf("score range %q", got)
	}
	r.Rev, r.Offset, r.Limit = true, 1, 1
	if got := members(t, s, c, r); got != "b" {
		t.Fatalf("reverse score range with limit %q", got)
	}
	if n, _ := s.ZCount(c, ZRange{Kind: ZByScore, Min: math.Inf(-1), Max: math.Inf(1)}); n != 7 {
		t.Fatalf("count %d", n)
	}
	// Mixed scores: Redis walks from the first member >= "b" in score order ("d").
	lex := ZRange{Kind: ZByLex, LexMin: LexBound{LexIncl, []byte("b")}, LexMax: LexBound{LexOpen, nil}, Limit: -1}
	if got := members(t, s, c, lex); got != "d,f,a,b,b\x00,c,e" {
		t.Fatalf("mixed lex %q", got)
	}
	popped, err := s.ZPop(c, 2, true)
	must(t, err)
	if len(popped) != 2 || string(popped[0].Member) != "e" || string(popped[1].Member) != "c" || c.Len != 5 {
		t.Fatalf("pop %v len %d", popped, c.Len)
	}
}

func TestZSetLexSameScore(t *testing.T) {
	s := openTest(t)
	zsetOf(t, s, "z", "a", 0.0, "b", 0.0, "c", 0.0, "d", 0.0, "e\x00", 0.0, "e", 0.0)
	c, _ := s.OpenColl(0, []byte("z"), TypeZSet)
	cases := []struct {
		lo, hi LexBound
		rev    bool
		want   string
	}{
		{LexBound{LexOpen, nil}, LexBound{LexOpen, nil}, false, "a,b,c,d,e,e\x00"},
		{LexBound{LexIncl, []byte("b")}, LexBound{LexExcl, []byte("d")}, false, "b,c"},
		{LexBound{LexExcl, []byte("b")}, LexBound{LexIncl, []byte("e")}, true, "e,d,c"},
		{LexBound{LexExcl, []byte("e")}, LexBound{LexOpen, nil}, false, "e\x00"},
		{LexBound{LexIncl, []byte("c")}, LexBound{LexExcl, []byte("c")}, false, ""},
	}
	for _, tc := range cases {
		r := ZRange{Kind: ZByLex, LexMin: tc.lo, LexMax: tc.hi, Rev: tc.rev, Limit: -1}
		if got := members(t, s, c, r); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc, got, tc.want)
		}
		n, err := s.ZCount(c, r)
		must(t, err)
		if want := len(slices.DeleteFunc(strings.Split(tc.want, ","), func(x string) bool { return x == "" })); n != int64(want) {
			t.Errorf("%+v: count %d, want %d", tc, n, want)
		}
	}
	inTx(t, s, func() {
		c, _ := s.OpenColl(0, []byte("z"), TypeZSet)
		n, err := s.ZDeleteRange(c, ZRange{Kind: ZByLex, LexMin: LexBound{LexIncl, []byte("b")}, LexMax: LexBound{LexIncl, []byte("d")}})
		must(t, err)
		if n != 3 || c.Len != 3 {
			t.Fatalf("deleted %d, len %d", n, c.Len)
		}
		n, err = s.ZDeleteRange(c, ZRange{Kind: ZByRank, Start: 0, Stop: 0})
		must(t, err)
		if n != 1 || c.Len != 2 {
			t.Fatalf("deleted by rank %d, len %d", n, c.Len)
		}
		must(t, s.EndCommand())
	})
	c, _ = s.OpenColl(0, []byte("z"), TypeZSet)
	if got := members(t, s, c, ZRange{Kind: ZByRank, Start: 0, Stop: c.Len - 1}); got != "e,e\x00" {
		t.Fatalf("left %q", got)
	}
}

// TestExpiredCollectionIsGone: an expired collection is never visible, and
// its elements go with it (lazily on access, or by the sweeper).
func TestExpiredCollectionIsGone(t *testing.T) {
	s := openTest(t)
	inTx(t, s, func() {
		for _, k := range []string{"lazy", "swept"} {
			c := openColl(t, s, k, TypeSet)
			s.SetAdd(c, []byte("m"))
			must(t, s.EndCommand())
			must(t, s.SetExpire(0, []byte(k), s.Now+10))
		}
	})
	s.Now += 11
	inTx(t, s, func() {
		c, err := s.OpenColl(0, []byte("lazy"), TypeSet)
		if err != nil || c != nil {
			t.Fatalf("expired set opened: %+v %v", c, err)
		}
		if n, err := s.SweepExpired(10); err != nil || n != 1 {
			t.Fatalf("sweep: %d %v", n, err)
		}
		c = openColl(t, s, "lazy", TypeSet)
		if c.Len != 0 {
			t.Fatalf("recreated set has %d elements", c.Len)
		}
		must(t, s.EndCommand())
	})
	assertNoRows(t, s, "sets")
	if n := s.DBSize(0); n != 0 {
		t.Fatalf("DBSize %d", n)
	}
}
