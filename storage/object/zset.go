package object

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/tidwall/btree"
)

// scoredOverhead is what one member costs in a sorted set's score index
// beyond what its Elem costs: the Scored in a slice or tree node (its name
// shares the Elem's bytes), the nodes' spare room, allocator slack;
// measured at about 70 bytes in a slice and in a tree alike.
const scoredOverhead = 72

// Scored is a sorted-set member with its score: an entry of the score
// index, as ranges and pops give them. Member shares the bytes of the
// member's Elem.Name.
type Scored struct {
	Member string
	Score  float64
}

// compareScored is Redis's order of a sorted set: score, then the member's
// bytes. Scores are never NaN and a zero is never negative, so the float
// comparison is a total order.
func compareScored(a, b Scored) int {
	if a.Score != b.Score {
		if a.Score < b.Score {
			return -1
		}
		return 1
	}
	return strings.Compare(a.Member, b.Member)
}

func lessScored(a, b Scored) bool { return compareScored(a, b) < 0 }

// ScoreBound is one end of a score range: Value, included unless Excl.
// ±Inf are allowed ("-inf", "(+inf"); NaN is not.
type ScoreBound struct {
	Value float64
	Excl  bool
}

// ScoreRange selects the members whose scores lie between Min and Max, as
// ZRANGEBYSCORE's min and max do (Min above Max selects nothing).
type ScoreRange struct {
	Min, Max ScoreBound
}

// aboveMin reports whether s is on the upper side of r's minimum.
func (r *ScoreRange) aboveMin(s float64) bool {
	if r.Min.Excl {
		return s > r.Min.Value
	}
	return s >= r.Min.Value
}

// belowMax reports whether s is on the lower side of r's maximum.
func (r *ScoreRange) belowMax(s float64) bool {
	if r.Max.Excl {
		return s < r.Max.Value
	}
	return s <= r.Max.Value
}

// LexKind is the kind of one end of a lexicographic range.
type LexKind uint8

// The kinds of a lexicographic bound, as ZRANGEBYLEX writes them.
const (
	LexMinusInf LexKind = iota // "-": below every member
	LexPlusInf                 // "+": above every member
	LexIncl                    // "[member"
	LexExcl                    // "(member"
)

// LexBound is one end of a lexicographic range: Member is used by LexIncl
// and LexExcl only.
type LexBound struct {
	Kind   LexKind
	Member []byte
}

// LexRange selects members by their bytes between Min and Max, as
// ZRANGEBYLEX's min and max do ("+" as Min or "-" as Max selects nothing).
// Its result is what Redis defines only for a sorted set whose members all
// share one score; for one whose scores differ, the methods give what
// Redis's compact encoding gives (RangeByLex says what).
type LexRange struct {
	Min, Max LexBound
}

// geMin reports whether m is on the upper side of r's minimum.
func (r *LexRange) geMin(m string) bool {
	switch r.Min.Kind {
	case LexMinusInf:
		return true
	case LexIncl:
		return m >= string(r.Min.Member)
	case LexExcl:
		return m > string(r.Min.Member)
	}
	return false
}

// leMax reports whether m is on the lower side of r's maximum.
func (r *LexRange) leMax(m string) bool {
	switch r.Max.Kind {
	case LexPlusInf:
		return true
	case LexIncl:
		return m <= string(r.Max.Member)
	case LexExcl:
		return m < string(r.Max.Member)
	}
	return false
}

// lexClass places a bound's kind on the line of strings: -1 below every
// string, 1 above every one, 0 a string.
func lexClass(k LexKind) int {
	switch k {
	case LexMinusInf:
		return -1
	case LexPlusInf:
		return 1
	}
	return 0
}

// empty reports the ranges Redis treats as empty whatever the set holds:
// a minimum above the maximum, or equal ends either of which excludes
// itself ("-" and "+" exclude themselves).
func (r *LexRange) empty() bool {
	c := cmp.Compare(lexClass(r.Min.Kind), lexClass(r.Max.Kind))
	if c == 0 && lexClass(r.Min.Kind) == 0 {
		c = bytes.Compare(r.Min.Member, r.Max.Member)
	}
	return c > 0 || (c == 0 && (r.Min.Kind != LexIncl || r.Max.Kind != LexIncl))
}

// ZSet is a sorted set: its members by name in an Elems (Elem.Score holds
// the score), which gives storage order for ZSCAN and sampling and records
// the changes a Freeze hands the flush, plus a score index in Redis's
// order (score, then member bytes) for ranks, ranges and pops: a sorted
// slice while the set has at most SmallMax members, a tree once past it,
// for good. Both hold exactly the same members with the same scores; the
// index lives in memory only.
type ZSet struct {
	elems *Elems
	small []Scored              // sorted by compareScored while big is nil
	big   *btree.BTreeG[Scored] // the index past SmallMax members
}

// NewZSet returns an empty sorted set whose rows are all new (a new key).
func NewZSet() *ZSet { return &ZSet{elems: NewElems()} }

// LoadedZSet makes a sorted set from rows read in storage order (a key
// loaded from SQLite, which stores no negative zero and no NaN): nothing is
// dirty. It takes rows. Building the index sorts the members once.
func LoadedZSet(rows []Elem) *ZSet {
	idx := make([]Scored, len(rows))
	for i := range rows {
		if rows[i].Score == 0 {
			rows[i].Score = 0 // drop the sign of -0
		}
		idx[i] = Scored{Member: rows[i].Name, Score: rows[i].Score}
	}
	slices.SortFunc(idx, compareScored)
	z := &ZSet{elems: Loaded(rows)}
	if len(idx) <= SmallMax {
		z.small = idx
		return z
	}
	z.big = newScoreTree()
	for _, s := range idx {
		z.big.Load(s)
	}
	return z
}

func newScoreTree() *btree.BTreeG[Scored] {
	return btree.NewBTreeGOptions(lessScored, btree.Options{NoLocks: true, Degree: 32})
}

// Len is the number of members.
func (z *ZSet) Len() int { return z.elems.Len() }

// Size is the footprint in bytes (package doc): the members' Elems and
// their entries in the score index.
func (z *ZSet) Size() int64 { return z.elems.Size() + int64(z.Len())*scoredOverhead }

// Score returns member's score; ok is false when it is not a member.
func (z *ZSet) Score(member []byte) (score float64, ok bool) {
	el, ok := z.elems.Get(member)
	return el.Score, ok
}

// Add sets member's score, adding the member if it is new (its bytes are
// copied), and returns the score it replaces (0 for a new member). A
// negative zero is stored as zero, as Redis's compact sorted sets store
// it; setting the score a member has already changes nothing (no row is
// rewritten). score must not be NaN: Add panics, since a NaN would break
// the index's order.
func (z *ZSet) Add(member []byte, score float64) (old float64, existed bool) {
	if math.IsNaN(score) {
		panic("object: a sorted set score is NaN")
	}
	if score == 0 {
		score = 0
	}
	cur, existed := z.elems.Get(member)
	if existed && cur.Score == score {
		return score, true
	}
	name := cur.Name
	if !existed {
		name = string(member)
	}
	z.elems.Put(Elem{Name: name, Score: score})
	if existed {
		z.unindex(Scored{Member: name, Score: cur.Score})
	}
	z.index(Scored{Member: name, Score: score})
	return cur.Score, existed
}

// Remove removes member and returns its score; existed is false when it
// was not a member.
func (z *ZSet) Remove(member []byte) (score float64, existed bool) {
	old, existed := z.elems.Delete(member)
	if existed {
		z.unindex(Scored{Member: old.Name, Score: old.Score})
	}
	return old.Score, existed
}

// index adds s to the score index, moving a small index to its tree when
// it passes SmallMax entries.
func (z *ZSet) index(s Scored) {
	if z.big != nil {
		z.big.Set(s)
		return
	}
	i, _ := slices.BinarySearchFunc(z.small, s, compareScored)
	z.small = slices.Insert(z.small, i, s)
	if len(z.small) > SmallMax {
		z.big = newScoreTree()
		for _, s := range z.small {
			z.big.Load(s)
		}
		z.small = nil
	}
}

// unindex removes s, which is in the index, from it.
func (z *ZSet) unindex(s Scored) {
	if z.big != nil {
		z.big.Delete(s)
		return
	}
	if i, ok := slices.BinarySearchFunc(z.small, s, compareScored); ok {
		z.small = slices.Delete(z.small, i, i+1)
	}
}

// at returns the entry of rank i (0 <= i < Len), lowest first: a tree
// walks to it in O(log n).
func (z *ZSet) at(i int) Scored {
	if z.big != nil {
		s, _ := z.big.GetAt(i)
		return s
	}
	return z.small[i]
}

// search returns the lowest rank whose entry satisfies f, or Len if none
// does; f must be false, then true, along the index. The tree keeps subtree
// counts but no way to ask for an entry's rank, so a tree is bisected by
// rank: O(log n) GetAt calls of O(log n) each.
func (z *ZSet) search(f func(s Scored) bool) int {
	lo, hi := 0, z.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if f(z.at(mid)) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// walk calls fn with the entries from rank i (0 <= i < Len) towards the
// highest, or with reverse towards the lowest, until fn returns false or
// the index ends. fn must not change z.
func (z *ZSet) walk(i int, reverse bool, fn func(s Scored) bool) {
	if z.big != nil {
		pivot := z.at(i)
		if reverse {
			z.big.Descend(pivot, fn)
		} else {
			z.big.Ascend(pivot, fn)
		}
		return
	}
	if reverse {
		for ; i >= 0; i-- {
			if !fn(z.small[i]) {
				return
			}
		}
		return
	}
	for ; i < len(z.small); i++ {
		if !fn(z.small[i]) {
			return
		}
	}
}

// walkFrom calls fn with the entries at or above key, lowest first, until
// fn returns false: one descent of a tree by key, where a walk from a rank
// first bisects for it. fn must not change z.
func (z *ZSet) walkFrom(key Scored, fn func(s Scored) bool) {
	if z.big != nil {
		z.big.Ascend(key, fn)
		return
	}
	if i, _ := slices.BinarySearchFunc(z.small, key, compareScored); i < len(z.small) {
		z.walk(i, false, fn)
	}
}

// walkBelow calls fn with the entries below key (all of them when key is
// nil), highest first, until fn returns false. fn must not change z.
func (z *ZSet) walkBelow(key *Scored, fn func(s Scored) bool) {
	switch {
	case z.Len() == 0:
	case key == nil:
		z.walk(z.Len()-1, true, fn)
	case z.big != nil:
		z.big.Descend(*key, func(s Scored) bool { return s == *key || fn(s) })
	default:
		if i, _ := slices.BinarySearchFunc(z.small, *key, compareScored); i > 0 {
			z.walk(i-1, true, fn)
		}
	}
}

// Rank returns member's 0-based rank, counted from the lowest score (with
// reverse, from the highest); ok is false when it is not a member. It
// costs O(log n) tree lookups (search).
func (z *ZSet) Rank(member []byte, reverse bool) (rank int, ok bool) {
	el, ok := z.elems.Get(member)
	if !ok {
		return 0, false
	}
	key := Scored{Member: el.Name, Score: el.Score}
	rank = z.search(func(s Scored) bool { return compareScored(s, key) >= 0 })
	if reverse {
		rank = z.Len() - 1 - rank
	}
	return rank, true
}

// clampRanks turns Redis's rank indexes (negative ones count from the end)
// into 0 <= lo <= hi < n, as ZRANGE does; ok is false for an empty range.
func clampRanks(start, stop, n int) (lo, hi int, ok bool) {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	if start > stop || start >= n {
		return 0, 0, false
	}
	return start, min(stop, n-1), true
}

// limited wraps fn for a walk: the walk stops after count calls of fn
// (count < 0: no limit), at the first entry in rejects (the range's bound
// ahead), or when fn returns false.
func limited(count int, in func(s Scored) bool, fn func(s Scored) bool) func(s Scored) bool {
	return func(s Scored) bool {
		if count == 0 || !in(s) {
			return false
		}
		count--
		return fn(s)
	}
}

// RangeByRank calls fn with the members of ranks start..stop, inclusive,
// in order (with reverse, ranks count from the highest score and the
// members come highest first), until fn returns false. start and stop are
// Redis's: negative ones count from the end, and they are clamped to the
// set. fn must not change z.
func (z *ZSet) RangeByRank(start, stop int, reverse bool, fn func(s Scored) bool) {
	lo, hi, ok := clampRanks(start, stop, z.Len())
	if !ok {
		return
	}
	all := func(Scored) bool { return true }
	if reverse {
		z.walk(z.Len()-1-lo, true, limited(hi-lo+1, all, fn))
		return
	}
	z.walk(lo, false, limited(hi-lo+1, all, fn))
}

// scoreSpan is the ranks [lo, hi) whose scores r selects.
func (z *ZSet) scoreSpan(r *ScoreRange) (lo, hi int) {
	lo = z.search(func(s Scored) bool { return r.aboveMin(s.Score) })
	hi = z.search(func(s Scored) bool { return !r.belowMax(s.Score) })
	return lo, max(lo, hi)
}

// RangeByScore calls fn with the members whose scores r selects, lowest
// first (with reverse, highest first), after skipping offset of them and
// then at most count (count < 0: all; offset < 0 selects nothing, as in
// Redis), until fn returns false. Without an offset the start is one
// descent of the tree by key; an offset is skipped by rank, in O(log n)
// tree lookups, not O(offset). fn must not change z.
func (z *ZSet) RangeByScore(r ScoreRange, reverse bool, offset, count int, fn func(s Scored) bool) {
	switch {
	case offset < 0:
	case offset == 0 && !reverse:
		// The first entry at or above (min, ""): a member above an
		// excluded min has at least the next double.
		lo := r.Min.Value
		if r.Min.Excl {
			if math.IsInf(lo, 1) {
				return
			}
			lo = math.Nextafter(lo, math.Inf(1))
		}
		z.walkFrom(Scored{Score: lo}, limited(count, func(s Scored) bool { return r.belowMax(s.Score) }, fn))
	case offset == 0:
		// Entries below (max, "") have a lower score; below (the next
		// double above max, "") one at most max.
		var key *Scored
		if hi := r.Max.Value; r.Max.Excl {
			key = &Scored{Score: hi}
		} else if !math.IsInf(hi, 1) {
			key = &Scored{Score: math.Nextafter(hi, math.Inf(1))}
		}
		z.walkBelow(key, limited(count, func(s Scored) bool { return r.aboveMin(s.Score) }, fn))
	case reverse:
		if i := z.search(func(s Scored) bool { return !r.belowMax(s.Score) }) - 1 - offset; i >= 0 {
			z.walk(i, true, limited(count, func(s Scored) bool { return r.aboveMin(s.Score) }, fn))
		}
	default:
		if i := z.search(func(s Scored) bool { return r.aboveMin(s.Score) }) + offset; i < z.Len() {
			z.walk(i, false, limited(count, func(s Scored) bool { return r.belowMax(s.Score) }, fn))
		}
	}
}

// CountByScore counts the members whose scores r selects, in O(log n)
// tree lookups.
func (z *ZSet) CountByScore(r ScoreRange) int {
	lo, hi := z.scoreSpan(&r)
	return hi - lo
}

// RemoveRangeByScore removes the members whose scores r selects and
// returns how many it removed.
func (z *ZSet) RemoveRangeByScore(r ScoreRange) int {
	lo, hi := z.scoreSpan(&r)
	return z.removeSpan(lo, hi)
}

// RemoveRangeByRank removes the members of ranks start..stop (Redis's
// indexes, as RangeByRank takes them, lowest first) and returns how many
// it removed.
func (z *ZSet) RemoveRangeByRank(start, stop int) int {
	lo, hi, ok := clampRanks(start, stop, z.Len())
	if !ok {
		return 0
	}
	return z.removeSpan(lo, hi+1)
}

// ends returns the lowest and the highest entries; the set is not empty.
func (z *ZSet) ends() (lo, hi Scored) {
	if z.big != nil {
		lo, _ = z.big.Min()
		hi, _ = z.big.Max()
		return lo, hi
	}
	return z.small[0], z.small[len(z.small)-1]
}

// uniform reports whether every member has the same score (Redis's lex
// commands are defined for such sets only); the set is not empty.
func (z *ZSet) uniform() bool {
	lo, hi := z.ends()
	return lo.Score == hi.Score
}

// lexOutside reports whether r selects nothing as Redis's first checks
// find: an empty range, an empty set, or one whose ends r misses.
func (z *ZSet) lexOutside(r *LexRange) bool {
	if r.empty() || z.Len() == 0 {
		return true
	}
	lo, hi := z.ends()
	return !r.geMin(hi.Member) || !r.leMax(lo.Member)
}

// lexFirst is the rank a forward lexicographic range starts at, or -1
// when r selects nothing. Walking up from the lowest, it is the first
// member at or above the minimum, if that one is at or below the maximum:
// what Redis's compact encoding does, which for a set of one score is the
// range's lowest member. That set is bisected; one whose scores differ is
// walked, O(n).
func (z *ZSet) lexFirst(r *LexRange) int {
	if z.lexOutside(r) {
		return -1
	}
	i := 0
	if z.uniform() {
		i = z.search(func(s Scored) bool { return r.geMin(s.Member) })
	} else {
		z.walk(0, false, func(s Scored) bool {
			if r.geMin(s.Member) {
				return false
			}
			i++
			return true
		})
	}
	if i == z.Len() || !r.leMax(z.at(i).Member) {
		return -1
	}
	return i
}

// lexLast is lexFirst from the other end: walking down from the highest,
// the first member at or below the maximum, if that one is at or above the
// minimum.
func (z *ZSet) lexLast(r *LexRange) int {
	if z.lexOutside(r) {
		return -1
	}
	i := z.Len() - 1
	if z.uniform() {
		i = z.search(func(s Scored) bool { return !r.leMax(s.Member) }) - 1
	} else {
		z.walk(i, true, func(s Scored) bool {
			if r.leMax(s.Member) {
				return false
			}
			i--
			return true
		})
	}
	if i < 0 || !r.geMin(z.at(i).Member) {
		return -1
	}
	return i
}

// lexSpan is the ranks [lo, hi) that ZLEXCOUNT counts and ZREMRANGEBYLEX
// removes: from lexFirst, the run of members at or below the maximum.
func (z *ZSet) lexSpan(r *LexRange) (lo, hi int) {
	lo = z.lexFirst(r)
	if lo < 0 {
		return 0, 0
	}
	if z.uniform() {
		return lo, z.search(func(s Scored) bool { return !r.leMax(s.Member) })
	}
	hi = lo
	z.walk(lo, false, func(s Scored) bool {
		if !r.leMax(s.Member) {
			return false
		}
		hi++
		return true
	})
	return lo, hi
}

// RangeByLex calls fn with the members r selects, lowest first (with
// reverse, highest first), after skipping offset of them and then at most
// count (count < 0: all; offset < 0 selects nothing), until fn returns
// false. From the start lexFirst (lexLast with reverse) finds, Redis skips
// offset members without looking at them, then goes on while the bound
// ahead holds; for a set of one score that is the members between the
// bounds, found by one descent of the tree by key without an offset, by
// rank in O(log n) tree lookups with one. fn must not change z.
func (z *ZSet) RangeByLex(r LexRange, reverse bool, offset, count int, fn func(s Scored) bool) {
	switch {
	case offset < 0 || r.empty() || z.Len() == 0:
	case offset == 0 && z.uniform():
		// One score: the members between the bounds, from a descent by
		// key.
		score := z.at(0).Score
		if reverse {
			var key *Scored
			switch r.Max.Kind {
			case LexIncl:
				key = &Scored{Member: string(r.Max.Member) + "\x00", Score: score}
			case LexExcl:
				key = &Scored{Member: string(r.Max.Member), Score: score}
			}
			z.walkBelow(key, limited(count, func(s Scored) bool { return r.geMin(s.Member) }, fn))
			return
		}
		key := Scored{Score: score}
		switch r.Min.Kind {
		case LexIncl:
			key.Member = string(r.Min.Member)
		case LexExcl:
			key.Member = string(r.Min.Member) + "\x00"
		}
		z.walkFrom(key, limited(count, func(s Scored) bool { return r.leMax(s.Member) }, fn))
	case reverse:
		if i := z.lexLast(&r); i >= 0 && i-offset >= 0 {
			z.walk(i-offset, true, limited(count, func(s Scored) bool { return r.geMin(s.Member) }, fn))
		}
	default:
		if i := z.lexFirst(&r); i >= 0 && i+offset < z.Len() {
			z.walk(i+offset, false, limited(count, func(s Scored) bool { return r.leMax(s.Member) }, fn))
		}
	}
}

// CountByLex counts the members r selects (lexSpan): O(log n) tree
// lookups for a set of one score, O(n) for one whose scores differ.
func (z *ZSet) CountByLex(r LexRange) int {
	lo, hi := z.lexSpan(&r)
	return hi - lo
}

// RemoveRangeByLex removes the members r selects (lexSpan) and returns how
// many it removed.
func (z *ZSet) RemoveRangeByLex(r LexRange) int {
	lo, hi := z.lexSpan(&r)
	return z.removeSpan(lo, hi)
}

// removeSpan removes the members of ranks [lo, hi) from both indexes and
// returns how many it removed. A tree drops the span in one DeleteRange.
func (z *ZSet) removeSpan(lo, hi int) int {
	n := hi - lo
	if n <= 0 {
		return 0
	}
	var gone []Scored
	if z.big != nil {
		gone = make([]Scored, 0, n)
		z.walk(lo, false, limited(n, func(Scored) bool { return true }, func(s Scored) bool {
			gone = append(gone, s)
			return true
		}))
		if n == z.big.Len() {
			z.big = newScoreTree()
		} else {
			z.big.DeleteRange(gone[0], gone[n-1], &btree.DeleteRangeOptions{NoReturn: true, MaxInclusive: true})
		}
	} else {
		gone = slices.Clone(z.small[lo:hi])
		z.small = slices.Delete(z.small, lo, hi)
	}
	for _, s := range gone {
		z.elems.Delete([]byte(s.Member))
	}
	return n
}

// Pop removes up to n members from the lowest scores (with max, the
// highest) and returns them in that order: ZPOPMIN, ZPOPMAX, ZMPOP and
// their blocking forms. n <= 0 removes nothing.
func (z *ZSet) Pop(n int, max bool) []Scored {
	n = min(n, z.Len())
	if n <= 0 {
		return nil
	}
	out := make([]Scored, n)
	switch {
	case z.big != nil:
		for i := range out {
			if max {
				out[i], _ = z.big.PopMax()
			} else {
				out[i], _ = z.big.PopMin()
			}
		}
	case max:
		k := len(z.small) - n
		for i := range out {
			out[i] = z.small[len(z.small)-1-i]
		}
		z.small = slices.Delete(z.small, k, len(z.small))
	default:
		copy(out, z.small)
		z.small = slices.Delete(z.small, 0, n)
	}
	for _, s := range out {
		z.elems.Delete([]byte(s.Member))
	}
	return out
}

// ScanFrom calls fn with the members of h >= from in storage order (ZSCAN's
// cursor order; Elem.Score holds the score) until it returns false. fn
// must not change z.
func (z *ZSet) ScanFrom(from int64, fn func(el *Elem) bool) { z.elems.ScanFrom(from, fn) }

// Clone returns a copy whose rows are all new (COPY's destination); it
// shares the stored names and, for trees, their nodes until either side
// changes (copy on write).
func (z *ZSet) Clone() *ZSet {
	c := &ZSet{elems: z.elems.Clone()}
	if z.big != nil {
		c.big = z.big.Copy()
	} else {
		c.small = slices.Clone(z.small)
	}
	return c
}

// Changed reports whether anything changed since the last Freeze.
func (z *ZSet) Changed() bool { return z.elems.Changed() }

// Freeze returns what changed since the last Freeze (the rows to write and
// delete; Elem.Score is the score) and starts recording afresh. It costs
// the number of changed members, never the set's size.
func (z *ZSet) Freeze() *Delta { return z.elems.Freeze() }

// Elems is the set's members by name, for reads in storage order (ZSCAN,
// sampling, whole reads); changes go through the ZSet's own methods, which
// keep the score index in step.
func (z *ZSet) Elems() *Elems { return z.elems }
