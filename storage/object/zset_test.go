package object

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// zmodel is the reference a ZSet is checked against: its members in a
// slice kept sorted by (score, member bytes), every operation a linear
// scan.
type zmodel struct{ s []Scored }

func (m *zmodel) find(member string) int {
	for i := range m.s {
		if m.s[i].Member == member {
			return i
		}
	}
	return -1
}

func (m *zmodel) add(member string, score float64) {
	if score == 0 {
		score = 0
	}
	if i := m.find(member); i >= 0 {
		m.s = slices.Delete(m.s, i, i+1)
	}
	m.s = append(m.s, Scored{member, score})
	slices.SortFunc(m.s, func(a, b Scored) int {
		if a.Score != b.Score {
			if a.Score < b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Member, b.Member)
	})
}

func (m *zmodel) remove(member string) {
	if i := m.find(member); i >= 0 {
		m.s = slices.Delete(m.s, i, i+1)
	}
}

// reversed returns s highest first when rev is set.
func reversed(s []Scored, rev bool) []Scored {
	s = slices.Clone(s)
	if rev {
		slices.Reverse(s)
	}
	return s
}

// page applies a LIMIT offset count to s, as Redis does.
func page(s []Scored, offset, count int) []Scored {
	if offset < 0 || offset >= len(s) {
		return nil
	}
	s = s[offset:]
	if count >= 0 && count < len(s) {
		s = s[:count]
	}
	return s
}

// byRank is the model's ZRANGE start stop [REV].
func (m *zmodel) byRank(start, stop int, rev bool) []Scored {
	s, n := reversed(m.s, rev), len(m.s)
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	if start < 0 {
		start = 0
	}
	if stop >= n {
		stop = n - 1
	}
	if start > stop {
		return nil
	}
	return s[start : stop+1]
}

func inScore(r ScoreRange, v float64) bool {
	lo := v > r.Min.Value || (v == r.Min.Value && !r.Min.Excl)
	hi := v < r.Max.Value || (v == r.Max.Value && !r.Max.Excl)
	return lo && hi
}

// byScore is the model's ZRANGE BYSCORE: every member tested.
func (m *zmodel) byScore(r ScoreRange) []Scored {
	var out []Scored
	for _, s := range m.s {
		if inScore(r, s.Score) {
			out = append(out, s)
		}
	}
	return out
}

func geLex(b LexBound, m string) bool {
	switch b.Kind {
	case LexMinusInf:
		return true
	case LexPlusInf:
		return false
	case LexIncl:
		return strings.Compare(m, string(b.Member)) >= 0
	}
	return strings.Compare(m, string(b.Member)) > 0
}

func leLex(b LexBound, m string) bool {
	switch b.Kind {
	case LexMinusInf:
		return false
	case LexPlusInf:
		return true
	case LexIncl:
		return strings.Compare(m, string(b.Member)) <= 0
	}
	return strings.Compare(m, string(b.Member)) < 0
}

// byLex is the model's ZRANGE BYLEX as Redis's compact encoding runs it,
// whatever the scores: rule out a range that misses the ends; walk from
// the start to the first member on the inner side of the near bound; stop
// if it is past the far bound; skip offset members unseen; then go on
// while the far bound holds.
func (m *zmodel) byLex(r LexRange, rev bool, offset, count int) []Scored {
	s := m.s
	if offset < 0 || len(s) == 0 || !geLex(r.Min, s[len(s)-1].Member) || !leLex(r.Max, s[0].Member) {
		return nil
	}
	near, far := func(x string) bool { return geLex(r.Min, x) }, func(x string) bool { return leLex(r.Max, x) }
	if rev {
		s = reversed(s, true)
		near, far = far, near
	}
	i := 0
	for i < len(s) && !near(s[i].Member) {
		i++
	}
	if i == len(s) || !far(s[i].Member) {
		return nil
	}
	var out []Scored
	for i += offset; i < len(s) && far(s[i].Member) && (count < 0 || len(out) < count); i++ {
		out = append(out, s[i])
	}
	return out
}

// lexRun is the model's ZLEXCOUNT and ZREMRANGEBYLEX selection.
func (m *zmodel) lexRun(r LexRange) []Scored { return m.byLex(r, false, 0, -1) }

// between is the members whose bytes lie between r's bounds, the
// definition Redis gives for a set of one score.
func (m *zmodel) between(r LexRange) []Scored {
	var out []Scored
	for _, s := range m.s {
		if geLex(r.Min, s.Member) && leLex(r.Max, s.Member) {
			out = append(out, s)
		}
	}
	return out
}

func collect(f func(fn func(Scored) bool)) []Scored {
	var out []Scored
	f(func(s Scored) bool {
		out = append(out, s)
		return true
	})
	return out
}

func sameScored(t *testing.T, what string, got, want []Scored) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// checkZSet compares everything z holds with the model: its order both
// ways, every member's score and rank, its length and size.
func checkZSet(t *testing.T, z *ZSet, m *zmodel) {
	t.Helper()
	if z.Len() != len(m.s) {
		t.Fatalf("Len = %d, model %d", z.Len(), len(m.s))
	}
	sameScored(t, "whole range", collect(func(fn func(Scored) bool) { z.RangeByRank(0, -1, false, fn) }), m.s)
	sameScored(t, "whole range reversed", collect(func(fn func(Scored) bool) { z.RangeByRank(0, -1, true, fn) }), reversed(m.s, true))
	for i, s := range m.s {
		if got, ok := z.Score([]byte(s.Member)); !ok || got != s.Score || (got == 0 && math.Signbit(got)) {
			t.Fatalf("Score(%q) = %v, %v; want %v", s.Member, got, ok, s.Score)
		}
		if r, ok := z.Rank([]byte(s.Member), false); !ok || r != i {
			t.Fatalf("Rank(%q) = %d, %v; want %d", s.Member, r, ok, i)
		}
		if r, ok := z.Rank([]byte(s.Member), true); !ok || r != len(m.s)-1-i {
			t.Fatalf("reverse Rank(%q) = %d, %v; want %d", s.Member, r, ok, len(m.s)-1-i)
		}
	}
	var size int64
	z.elems.Each(func(el *Elem) bool {
		size += el.size() + scoredOverhead
		if z.elems.big != nil {
			size += bigExtra
		}
		return true
	})
	if z.Size() != size {
		t.Fatalf("Size = %d, its members add up to %d", z.Size(), size)
	}
}

// zgen draws members, scores and bounds for the random tests.
type zgen struct {
	rng     *rand.Rand
	members []string
	scores  []float64 // nil: every member gets score 7
}

var specialMembers = []string{"", "\x00", "a", "a\x00", "ab", "B", "\xff", "\xff\xff"}

func newZGen(seed uint64, pool int, uniform bool) *zgen {
	g := &zgen{rng: rand.New(rand.NewPCG(seed, uint64(pool)))}
	g.members = append(g.members, specialMembers...)
	for i := 0; len(g.members) < pool; i++ {
		g.members = append(g.members, fmt.Sprintf("m%d", i))
	}
	if !uniform {
		g.scores = []float64{math.Inf(-1), -2.5, -1, math.Copysign(0, -1), 0, 0.5, 1, 3, 1e300, math.Inf(1)}
		for i := 0; i < 10; i++ {
			g.scores = append(g.scores, float64(i))
		}
	}
	return g
}

func (g *zgen) member() string { return g.members[g.rng.IntN(len(g.members))] }

func (g *zgen) score() float64 {
	if g.scores == nil {
		return 7
	}
	return g.scores[g.rng.IntN(len(g.scores))]
}

func (g *zgen) scoreRange() ScoreRange {
	b := func() ScoreBound {
		v := g.score()
		if g.rng.IntN(6) == 0 {
			v = []float64{math.Inf(-1), math.Inf(1)}[g.rng.IntN(2)]
		}
		return ScoreBound{Value: v, Excl: g.rng.IntN(3) == 0}
	}
	return ScoreRange{Min: b(), Max: b()}
}

func (g *zgen) lexBound() LexBound {
	switch g.rng.IntN(10) {
	case 0:
		return LexBound{Kind: LexMinusInf}
	case 1:
		return LexBound{Kind: LexPlusInf}
	}
	m := g.member()
	if g.rng.IntN(4) == 0 {
		m = m[:g.rng.IntN(len(m)+1)] // a prefix: not always a member
	}
	return LexBound{Kind: LexIncl + LexKind(g.rng.IntN(2)), Member: []byte(m)}
}

func (g *zgen) lexRange() LexRange {
	r := LexRange{Min: g.lexBound(), Max: g.lexBound()}
	if g.rng.IntN(2) == 0 && strings.Compare(string(r.Min.Member), string(r.Max.Member)) > 0 {
		r.Min.Member, r.Max.Member = r.Max.Member, r.Min.Member // mostly non-empty
	}
	return r
}

func (g *zgen) limit(n int) (offset, count int) {
	offset, count = 0, -1
	if g.rng.IntN(2) == 0 {
		offset, count = g.rng.IntN(n+3)-1, g.rng.IntN(12)-1
	}
	return offset, count
}

func (g *zgen) rank(n int) int { return g.rng.IntN(2*n+6) - n - 3 }

// checkQueries runs one random query of every kind against z and m.
func checkQueries(t *testing.T, g *zgen, z *ZSet, m *zmodel, uniform bool) {
	t.Helper()
	n := len(m.s)
	name := g.member()
	want, wantOK := -1, false
	if i := m.find(name); i >= 0 {
		want, wantOK = i, true
	}
	if r, ok := z.Rank([]byte(name), false); ok != wantOK || (ok && r != want) {
		t.Fatalf("Rank(%q) = %d, %v; want %d, %v", name, r, ok, want, wantOK)
	}
	if _, ok := z.Score([]byte(name)); ok != wantOK {
		t.Fatalf("Score(%q) found %v, want %v", name, ok, wantOK)
	}

	start, stop, rev := g.rank(n), g.rank(n), g.rng.IntN(2) == 0
	sameScored(t, fmt.Sprintf("RangeByRank(%d, %d, %v)", start, stop, rev),
		collect(func(fn func(Scored) bool) { z.RangeByRank(start, stop, rev, fn) }), m.byRank(start, stop, rev))

	sr := g.scoreRange()
	off, cnt := g.limit(n)
	sameScored(t, fmt.Sprintf("RangeByScore(%+v, %v, %d, %d)", sr, rev, off, cnt),
		collect(func(fn func(Scored) bool) { z.RangeByScore(sr, rev, off, cnt, fn) }), page(reversed(m.byScore(sr), rev), off, cnt))
	if got, want := z.CountByScore(sr), len(m.byScore(sr)); got != want {
		t.Fatalf("CountByScore(%+v) = %d, want %d", sr, got, want)
	}

	lr := g.lexRange()
	off, cnt = g.limit(n)
	what := fmt.Sprintf("RangeByLex(%q, %q, %v, %d, %d)", lr.Min, lr.Max, rev, off, cnt)
	got := collect(func(fn func(Scored) bool) { z.RangeByLex(lr, rev, off, cnt, fn) })
	sameScored(t, what, got, m.byLex(lr, rev, off, cnt))
	if uniform {
		sameScored(t, what+" against the bounds", got, page(reversed(m.between(lr), rev), off, cnt))
	}
	if got, want := z.CountByLex(lr), len(m.lexRun(lr)); got != want {
		t.Fatalf("CountByLex(%q, %q) = %d, want %d", lr.Min, lr.Max, got, want)
	}
}

// A sorted set changed at random agrees with the model after every step:
// its order, scores, ranks and size, and a random query of every kind —
// small, across SmallMax, large, with ties and with one score for all.
func TestZSetModel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pool    int
		steps   int
		uniform bool
		every   int // steps between full checks
	}{
		{"small", 40, 3000, false, 1},
		{"across SmallMax", 300, 4000, false, 1},
		{"large", 1500, 6000, false, 97},
		{"one score small", 60, 2000, true, 1},
		{"one score large", 700, 4000, true, 31},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newZGen(7, tc.pool, tc.uniform)
			z, m := NewZSet(), &zmodel{}
			most := 0
			for step := 0; step < tc.steps; step++ {
				switch op := g.rng.IntN(100); {
				case op < 60:
					name, score := g.member(), g.score()
					old, existed := z.Add([]byte(name), score)
					if i := m.find(name); existed != (i >= 0) || (existed && old != m.s[i].Score) {
						t.Fatalf("Add(%q) = %v, %v; model has it at %d", name, old, existed, i)
					}
					m.add(name, score)
				case op < 85:
					name := g.member()
					score, existed := z.Remove([]byte(name))
					if i := m.find(name); existed != (i >= 0) || (existed && score != m.s[i].Score) {
						t.Fatalf("Remove(%q) = %v, %v; model has it at %d", name, score, existed, i)
					}
					m.remove(name)
				case op < 88:
					start := g.rank(len(m.s))
					stop := start + g.rng.IntN(4)
					want := m.byRank(start, stop, false)
					if got := z.RemoveRangeByRank(start, stop); got != len(want) {
						t.Fatalf("RemoveRangeByRank(%d, %d) = %d, want %d", start, stop, got, len(want))
					}
					for _, s := range want {
						m.remove(s.Member)
					}
				case op < 91:
					v := g.score()
					r := ScoreRange{Min: ScoreBound{Value: v}, Max: ScoreBound{Value: v, Excl: g.rng.IntN(2) == 0}}
					want := m.byScore(r)
					if got := z.RemoveRangeByScore(r); got != len(want) {
						t.Fatalf("RemoveRangeByScore(%+v) = %d, want %d", r, got, len(want))
					}
					for _, s := range want {
						m.remove(s.Member)
					}
				case op < 94:
					name := g.member()
					r := LexRange{Min: LexBound{Kind: LexIncl, Member: []byte(name)}, Max: LexBound{Kind: LexIncl, Member: []byte(name + "\x01")}}
					want := m.lexRun(r)
					if got := z.RemoveRangeByLex(r); got != len(want) {
						t.Fatalf("RemoveRangeByLex(%q, %q) = %d, want %d", r.Min.Member, r.Max.Member, got, len(want))
					}
					for _, s := range want {
						m.remove(s.Member)
					}
				case op < 97:
					n, max := g.rng.IntN(5)-1, g.rng.IntN(2) == 0
					want := slices.Clone(m.byRank(0, n-1, max))
					if n <= 0 {
						want = nil
					}
					sameScored(t, fmt.Sprintf("Pop(%d, %v)", n, max), z.Pop(n, max), want)
					for _, s := range want {
						m.remove(s.Member)
					}
				default:
					z.Freeze()
				}
				most = max(most, len(m.s))
				if (most > SmallMax) != (z.big != nil) || (z.big == nil && len(z.small) != len(m.s)) || (z.big != nil && z.small != nil) {
					t.Fatalf("after %d members at most, the index is small %v, a tree %v", most, z.small != nil, z.big != nil)
				}
				checkQueries(t, g, z, m, tc.uniform)
				if step%tc.every == 0 {
					checkZSet(t, z, m)
				}
			}
			checkZSet(t, z, m)
			if tc.name == "across SmallMax" && most <= SmallMax {
				t.Fatalf("the set never passed SmallMax (%d members at most)", most)
			}
		})
	}
}

// Members of one score come in the order of their bytes, scores order
// first, -0 is stored as 0, and ±Inf are scores like others.
func TestZSetOrder(t *testing.T) {
	z := NewZSet()
	for _, s := range []Scored{
		{"b", 1}, {"\xff", 1}, {"a\x00", 1}, {"", 1}, {"B", 1}, {"a", 1},
		{"top", math.Inf(1)}, {"bottom", math.Inf(-1)}, {"negzero", math.Copysign(0, -1)}, {"zero", 0},
	} {
		z.Add([]byte(s.Member), s.Score)
	}
	want := []Scored{
		{"bottom", math.Inf(-1)}, {"negzero", 0}, {"zero", 0},
		{"", 1}, {"B", 1}, {"a", 1}, {"a\x00", 1}, {"b", 1}, {"\xff", 1},
		{"top", math.Inf(1)},
	}
	sameScored(t, "order", collect(func(fn func(Scored) bool) { z.RangeByRank(0, -1, false, fn) }), want)
	if s, _ := z.Score([]byte("negzero")); math.Signbit(s) {
		t.Fatal("-0 is stored with its sign")
	}
	if old, existed := z.Add([]byte("zero"), math.Copysign(0, -1)); !existed || old != 0 {
		t.Fatalf("Add(zero, -0) = %v, %v", old, existed)
	}
	z.Freeze()
	if z.Add([]byte("zero"), 0); z.Changed() {
		t.Fatal("setting the score a member has marks it changed")
	}
	if z.Add([]byte("zero"), math.Copysign(0, -1)); z.Changed() {
		t.Fatal("setting -0 over 0 marks the member changed")
	}
	r := ScoreRange{Min: ScoreBound{Value: math.Inf(1)}, Max: ScoreBound{Value: math.Inf(1)}}
	sameScored(t, "[+inf +inf]", collect(func(fn func(Scored) bool) { z.RangeByScore(r, false, 0, -1, fn) }), want[9:])
	r = ScoreRange{Min: ScoreBound{Value: math.Inf(-1), Excl: true}, Max: ScoreBound{Value: 0}}
	sameScored(t, "(-inf 0]", collect(func(fn func(Scored) bool) { z.RangeByScore(r, true, 0, -1, fn) }), reversed(want[1:3], true))
	defer func() {
		if recover() == nil {
			t.Fatal("a NaN score was accepted")
		}
	}()
	z.Add([]byte("nan"), math.NaN())
}

// Ranges that select nothing: an empty set, ranks past the end or out of
// order, a minimum above the maximum, excluded equal ends, offsets past
// the end, a zero count, and the lexicographic ranges Redis rules out.
func TestZSetEmptyRanges(t *testing.T) {
	none := func(t *testing.T, what string, f func(fn func(Scored) bool)) {
		t.Helper()
		if got := collect(f); len(got) != 0 {
			t.Fatalf("%s selects %v", what, got)
		}
	}
	incl := func(v float64) ScoreBound { return ScoreBound{Value: v} }
	excl := func(v float64) ScoreBound { return ScoreBound{Value: v, Excl: true} }
	lex := func(k LexKind, m string) LexBound { return LexBound{Kind: k, Member: []byte(m)} }
	for _, n := range []int{0, 5, 500} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			z := NewZSet()
			for i := 0; i < n; i++ {
				z.Add([]byte(fmt.Sprintf("m%03d", i)), float64(i%5))
			}
			for _, rr := range [][2]int{{n, n + 5}, {3, 2}, {-1, -2}, {-n - 10, -n - 1}, {n + 1, -1}} {
				none(t, fmt.Sprint("ranks ", rr), func(fn func(Scored) bool) { z.RangeByRank(rr[0], rr[1], false, fn) })
				none(t, fmt.Sprint("reverse ranks ", rr), func(fn func(Scored) bool) { z.RangeByRank(rr[0], rr[1], true, fn) })
			}
			for _, r := range []ScoreRange{
				{incl(3), incl(2)}, {excl(2), incl(2)}, {incl(2), excl(2)}, {excl(2), excl(2)},
				{excl(math.Inf(1)), incl(math.Inf(1))}, {incl(math.Inf(-1)), excl(math.Inf(-1))}, {incl(10), incl(20)}, {incl(-20), incl(-10)},
			} {
				for _, rev := range []bool{false, true} {
					none(t, fmt.Sprintf("scores %+v", r), func(fn func(Scored) bool) { z.RangeByScore(r, rev, 0, -1, fn) })
				}
				if c := z.CountByScore(r); c != 0 {
					t.Fatalf("CountByScore(%+v) = %d", r, c)
				}
			}
			all := ScoreRange{incl(math.Inf(-1)), incl(math.Inf(1))}
			for _, rev := range []bool{false, true} {
				none(t, "offset past the end", func(fn func(Scored) bool) { z.RangeByScore(all, rev, n, -1, fn) })
				none(t, "negative offset", func(fn func(Scored) bool) { z.RangeByScore(all, rev, -1, -1, fn) })
				none(t, "zero count", func(fn func(Scored) bool) { z.RangeByScore(all, rev, 0, 0, fn) })
				none(t, "lex offset past the end", func(fn func(Scored) bool) {
					z.RangeByLex(LexRange{lex(LexMinusInf, ""), lex(LexPlusInf, "")}, rev, n, -1, fn)
				})
			}
			for _, tc := range []struct {
				r     LexRange
				ruled bool // ruled out whatever the set holds
			}{
				{LexRange{lex(LexPlusInf, ""), lex(LexPlusInf, "")}, true},
				{LexRange{lex(LexMinusInf, ""), lex(LexMinusInf, "")}, true},
				{LexRange{lex(LexPlusInf, ""), lex(LexMinusInf, "")}, true},
				{LexRange{lex(LexPlusInf, ""), lex(LexIncl, "m001")}, true},
				{LexRange{lex(LexIncl, "m001"), lex(LexMinusInf, "")}, true},
				{LexRange{lex(LexIncl, "m002"), lex(LexIncl, "m001")}, true},
				{LexRange{lex(LexExcl, "m001"), lex(LexIncl, "m001")}, true},
				{LexRange{lex(LexIncl, "m001"), lex(LexExcl, "m001")}, true},
				{LexRange{lex(LexIncl, "zzz"), lex(LexPlusInf, "")}, false},
				{LexRange{lex(LexMinusInf, ""), lex(LexExcl, "m000")}, false},
			} {
				r := tc.r
				if r.empty() != tc.ruled {
					t.Fatalf("%q %q: ruled out %v, want %v", r.Min, r.Max, r.empty(), tc.ruled)
				}
				for _, rev := range []bool{false, true} {
					none(t, fmt.Sprintf("lex %q %q", r.Min, r.Max), func(fn func(Scored) bool) { z.RangeByLex(r, rev, 0, -1, fn) })
				}
				if c := z.CountByLex(r); c != 0 {
					t.Fatalf("CountByLex(%q, %q) = %d", r.Min, r.Max, c)
				}
				if c := z.RemoveRangeByLex(r); c != 0 {
					t.Fatalf("RemoveRangeByLex(%q, %q) = %d", r.Min, r.Max, c)
				}
			}
			if c := z.RemoveRangeByRank(n, n+3); c != 0 {
				t.Fatalf("RemoveRangeByRank past the end = %d", c)
			}
			if got := z.Pop(0, false); got != nil || z.Len() != n {
				t.Fatalf("Pop(0) = %v", got)
			}
			if c := z.CountByScore(all); c != n {
				t.Fatalf("CountByScore(-inf, +inf) = %d, want %d", c, n)
			}
		})
	}
}

// A lexicographic range over a set whose scores differ gives what Redis
// gives for it (checked against Redis 7: ZADD z 1 b 2 a 3 c).
func TestZSetLexMixedScores(t *testing.T) {
	z := NewZSet()
	z.Add([]byte("b"), 1)
	z.Add([]byte("a"), 2)
	z.Add([]byte("c"), 3)
	lex := func(k LexKind, m string) LexBound { return LexBound{Kind: k, Member: []byte(m)} }
	names := func(s []Scored) string {
		var b strings.Builder
		for _, x := range s {
			b.WriteString(x.Member)
		}
		return b.String()
	}
	for _, tc := range []struct {
		r          LexRange
		rev        bool
		off, count int
		want       string
	}{
		{LexRange{lex(LexIncl, "a"), lex(LexIncl, "c")}, false, 0, -1, "bac"},
		{LexRange{lex(LexIncl, "b"), lex(LexIncl, "b")}, false, 0, -1, "ba"},
		{LexRange{lex(LexIncl, "a"), lex(LexPlusInf, "")}, false, 0, -1, "bac"},
		{LexRange{lex(LexIncl, "a"), lex(LexIncl, "c")}, true, 0, -1, "cab"},
		{LexRange{lex(LexIncl, "b"), lex(LexPlusInf, "")}, false, 1, 5, "ac"},
	} {
		got := names(collect(func(fn func(Scored) bool) { z.RangeByLex(tc.r, tc.rev, tc.off, tc.count, fn) }))
		if got != tc.want {
			t.Fatalf("RangeByLex(%q, %q, %v, %d, %d) = %q, want %q", tc.r.Min, tc.r.Max, tc.rev, tc.off, tc.count, got, tc.want)
		}
	}
	if c := z.CountByLex(LexRange{lex(LexIncl, "b"), lex(LexIncl, "b")}); c != 2 {
		t.Fatalf("ZLEXCOUNT [b [b = %d, want 2 as Redis counts", c)
	}
}

// The index is a sorted slice up to SmallMax members and a tree from the
// next one on, for good; the order holds across the move.
func TestZSetSmallMax(t *testing.T) {
	for _, loaded := range []bool{false, true} {
		z, m := NewZSet(), &zmodel{}
		for i := 0; i < SmallMax; i++ {
			name := fmt.Sprintf("m%d", i)
			z.Add([]byte(name), float64(i%7))
			m.add(name, float64(i%7))
		}
		if loaded {
			var rows []Elem
			z.ScanFrom(0, func(el *Elem) bool {
				rows = append(rows, *el)
				return true
			})
			z = LoadedZSet(rows)
		}
		if z.big != nil || len(z.small) != SmallMax {
			t.Fatalf("%d members are not in a slice", SmallMax)
		}
		checkZSet(t, z, m)
		z.Add([]byte("one more"), 3)
		m.add("one more", 3)
		if z.big == nil || z.small != nil {
			t.Fatalf("%d members are not in a tree", SmallMax+1)
		}
		checkZSet(t, z, m)
		for _, s := range z.Pop(100, false) {
			m.remove(s.Member)
		}
		if z.big == nil {
			t.Fatal("the tree went back to a slice")
		}
		checkZSet(t, z, m)
	}
}

// LoadedZSet rebuilds the index from rows in storage order, small and
// large, with nothing to flush; a -0 row is read as 0.
func TestLoadedZSet(t *testing.T) {
	for _, n := range []int{0, 1, 50, SmallMax + 1, 1000} {
		g := newZGen(3, n+len(specialMembers), false)
		z, m := NewZSet(), &zmodel{}
		for _, name := range g.members[:n] {
			s := g.score()
			z.Add([]byte(name), s)
			m.add(name, s)
		}
		var rows []Elem
		z.ScanFrom(0, func(el *Elem) bool {
			rows = append(rows, *el)
			return true
		})
		if n > 0 {
			rows[0].Score = math.Copysign(0, -1)
			m.add(rows[0].Name, 0)
		}
		l := LoadedZSet(rows)
		if l.Changed() {
			t.Fatal("a loaded set has changes to flush")
		}
		checkZSet(t, l, m)
		var scanned zmodel
		l.ScanFrom(0, func(el *Elem) bool {
			scanned.add(el.Name, el.Score)
			return true
		})
		sameScored(t, "members by ScanFrom", scanned.s, m.s)
	}
}

// Freeze hands over the members added, changed and removed since the last
// Freeze, with their scores — all of them for a new set — and a range
// removal or pop is recorded member by member.
func TestZSetFreeze(t *testing.T) {
	type row struct {
		name  string
		score float64
	}
	delta := func(d *Delta) (put, gone []row) {
		d.Each(func(el *Elem) error {
			if el.H != Hash([]byte(el.Name)) {
				t.Fatalf("%q has h %d", el.Name, el.H)
			}
			put = append(put, row{el.Name, el.Score})
			return nil
		})
		for _, el := range d.Gone {
			gone = append(gone, row{el.Name, 0})
		}
		byName := func(a, b row) int { return strings.Compare(a.name, b.name) }
		slices.SortFunc(put, byName)
		slices.SortFunc(gone, byName)
		return put, gone
	}
	for _, n := range []int{20, 300} {
		z := NewZSet()
		var all []row
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("m%03d", i)
			z.Add([]byte(name), float64(i))
			all = append(all, row{name, float64(i)})
		}
		d := z.Freeze()
		if put, gone := delta(d); !d.All || !slices.Equal(put, all) || gone != nil {
			t.Fatalf("a new set's Delta: All %v, %d put, %v gone", d.All, len(put), gone)
		}
		if z.Changed() {
			t.Fatal("changed right after Freeze")
		}
		z.Add([]byte("m001"), -5)   // changed
		z.Add([]byte("new"), 2.5)   // added
		z.Remove([]byte("m002"))    // removed
		z.Add([]byte("m003"), 3)    // unchanged
		z.RemoveRangeByRank(-2, -1) // the two highest
		z.Pop(1, false)             // m001, now the lowest
		z.RemoveRangeByScore(ScoreRange{Min: ScoreBound{Value: 10}, Max: ScoreBound{Value: 11}})
		z.Add([]byte("m000"), 0.25)
		d = z.Freeze()
		put, gone := delta(d)
		last1, last2 := fmt.Sprintf("m%03d", n-2), fmt.Sprintf("m%03d", n-1)
		wantGone := []row{{"m001", 0}, {"m002", 0}, {"m010", 0}, {"m011", 0}, {last1, 0}, {last2, 0}}
		slices.SortFunc(wantGone, func(a, b row) int { return strings.Compare(a.name, b.name) })
		if d.All || !slices.Equal(put, []row{{"m000", 0.25}, {"new", 2.5}}) || !slices.Equal(gone, wantGone) {
			t.Fatalf("Delta: All %v, put %v, gone %v", d.All, put, gone)
		}
	}
}

// A clone is a new set with the same members; changing either leaves the
// other as it was.
func TestZSetClone(t *testing.T) {
	for _, n := range []int{10, 400} {
		z, m := NewZSet(), &zmodel{}
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("m%d", i)
			z.Add([]byte(name), float64(i%9))
			m.add(name, float64(i%9))
		}
		z.Freeze()
		c, cm := z.Clone(), &zmodel{s: slices.Clone(m.s)}
		if d := c.Freeze(); !d.All {
			t.Fatal("a clone's rows are not all new")
		}
		z.Add([]byte("m1"), 100)
		m.add("m1", 100)
		z.Pop(3, true)
		m.s = m.s[:len(m.s)-3]
		c.RemoveRangeByRank(0, 4)
		cm.s = cm.s[5:]
		c.Add([]byte("x"), -1)
		cm.add("x", -1)
		checkZSet(t, z, m)
		checkZSet(t, c, cm)
	}
}

// Reading a range of a large set allocates nothing, however many members
// it reads; a rank allocates only the key Elems looks the member up with.
func TestZSetRangeAllocs(t *testing.T) {
	z := NewZSet()
	for i := 0; i < 5000; i++ {
		z.Add([]byte(fmt.Sprintf("m%d", i)), float64(i%50))
	}
	r := ScoreRange{Min: ScoreBound{Value: 3}, Max: ScoreBound{Value: 40}}
	lr := LexRange{Min: LexBound{Kind: LexIncl, Member: []byte("m1")}, Max: LexBound{Kind: LexPlusInf}}
	var sum float64
	fn := func(s Scored) bool { sum += s.Score; return true }
	for _, tc := range []struct {
		name string
		f    func()
		most float64
	}{
		{"RangeByScore", func() { z.RangeByScore(r, false, 10, -1, fn) }, 0},
		{"RangeByScore from the top", func() { z.RangeByScore(r, true, 0, -1, fn) }, 0},
		{"RangeByScore from the bottom", func() { z.RangeByScore(r, false, 0, -1, fn) }, 0},
		{"RangeByRank", func() { z.RangeByRank(100, 4000, true, fn) }, 0},
		{"RangeByLex", func() { z.RangeByLex(lr, true, 0, 100, fn) }, 0},
		{"CountByScore", func() { z.CountByScore(r) }, 0},
		{"Rank", func() { z.Rank([]byte("m777"), false) }, 1},
	} {
		if a := testing.AllocsPerRun(20, tc.f); a > tc.most {
			t.Errorf("%s allocates %v times", tc.name, a)
		}
	}
	if sum == 0 {
		t.Fatal("the ranges read nothing")
	}
}
