package storage

import (
	"math"
)

// Sorted sets: an object.ZSet in memory (members plus a score index in
// Redis's order: score, then member bytes); one row per member in the
// zsets table, (id, h, member) -> score, written by the flush. SQLite
// keeps no score index: a load reads the members by primary key and the
// object orders them.

// ZScore is member's score; found is false when it is not in the set.
func (s *Store) ZScore(c *Coll, member []byte) (score float64, found bool, err error) {
	score, found = c.zset().Score(member)
	return score, found, nil
}

// ZSet stores member with score: exists says whether the member is there
// already (the caller looked it up with ZScore). Scores are never NaN; a
// negative zero is stored as zero, as Redis's small sorted sets do.
func (s *Store) ZSet(c *Coll, member []byte, score float64, exists bool) error {
	s.mem.zSet(c, member, score, exists)
	return nil
}

// ZRem removes member; removed is false when it was not there.
func (s *Store) ZRem(c *Coll, member []byte) (removed bool, err error) {
	return s.mem.zRem(c, member), nil
}

// ZRank is the 0-based rank of a member that has the given score, counted
// from the lowest (or, with rev, the highest). It costs O(rank).
func (s *Store) ZRank(c *Coll, member []byte, score float64, rev bool) (int64, error) {
	rank, _ := c.zset().Rank(member, rev)
	return int64(rank), nil
}

// Range kinds.
const (
	ZByRank = iota
	ZByScore
	ZByLex
)

// Kinds of a lexicographic bound.
const (
	LexOpen = iota // "-" or "+": no bound
	LexIncl        // "[member"
	LexExcl        // "(member"
)

// LexBound is one end of a lexicographic range.
type LexBound struct {
	Kind   int
	Member []byte
}

// ZRange selects part of a sorted set, in Redis's order (score, then
// member), or reversed.
type ZRange struct {
	Kind int
	Rev  bool
	// ZByRank: Start..Stop, 0-based and inclusive, counted from the end
	// Rev names; the caller has clamped them to 0 <= Start <= Stop < Len.
	Start, Stop int64
	// ZByScore: inclusive bounds. The caller turns an exclusive bound into
	// the next double inward (math.Nextafter), which selects the same
	// scores.
	Min, Max float64
	// ZByLex: member bounds (Min below Max whatever Rev).
	LexMin, LexMax LexBound
	// ZByScore and ZByLex: skip Offset elements, then return at most Limit
	// (Limit < 0: all).
	Offset, Limit int64
}

// ZRangeElems calls fn with the elements r selects, in order; the Elem is
// reused between calls. fn returning false stops early.
func (s *Store) ZRangeElems(c *Coll, r ZRange, fn func(e *Elem) bool) error {
	s.mem.zRangeElems(c, r, fn)
	return nil
}

// ZCount counts the members a score or lexicographic range selects (its
// Offset, Limit and Rev are ignored). It costs O(count).
func (s *Store) ZCount(c *Coll, r ZRange) (int64, error) {
	return s.mem.zCount(c, r), nil
}

// ZDeleteRange removes the members r selects (Offset, Limit and Rev are
// ignored) and reports how many went.
func (s *Store) ZDeleteRange(c *Coll, r ZRange) (int64, error) {
	return s.mem.zDeleteRange(c, r), nil
}

// ZPop removes and returns up to n members from the low end of c (the high
// end with max), in pop order. ZPOPMIN, ZPOPMAX, ZMPOP and their blocking
// forms use it.
func (s *Store) ZPop(c *Coll, n int64, max bool) ([]Elem, error) {
	return s.mem.zPop(c, n, max), nil
}

// ZNextUp and ZNextDown turn an exclusive score bound into the inclusive
// bound that selects the same doubles.
func ZNextUp(v float64) float64   { return math.Nextafter(v, math.Inf(1)) }
func ZNextDown(v float64) float64 { return math.Nextafter(v, math.Inf(-1)) }
