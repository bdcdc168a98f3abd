package storage

import (
	"bytes"
	"math"
)

// Sorted sets: one row per member in the zsets table, (id, h, member) ->
// score, plus the index zsets_by_score on (id, score, member), which gives
// Redis's order (score, then member bytes) for ranges, ranks and pops.
// Member lookups (ZSCORE, ZADD, ZREM) are point lookups on the primary key;
// a member's new score waits for the flush (elems.go), so the lookups look
// at the pending members first. Score ranges are index seeks. Ranks and rank offsets are counted along the
// index: SQLite's B-trees keep no subtree counts, so ZRANK and ZRANGE with a
// large offset cost O(rank) (see README, Performance).

var (
	qZScore = newElemLookup("SELECT score FROM zsets WHERE id = ?1 AND h = ?2 AND member = ?3")
	qZDel   = newQuery("DELETE FROM zsets WHERE id = ?1 AND h = ?2 AND member = ?3")
	// A rank is counted in two parts: members with a lower score, then
	// members with the same score and lower bytes. Measured, that is 1.6x
	// faster per row than one row-value comparison ((score, member) < ...).
	qZBelow    = newQuery("SELECT count(*) FROM zsets WHERE id = ?1 AND score < ?2")
	qZAbove    = newQuery("SELECT count(*) FROM zsets WHERE id = ?1 AND score > ?2")
	qZTieBelow = newQuery("SELECT count(*) FROM zsets WHERE id = ?1 AND score = ?2 AND member < ?3")
	qZTieAbove = newQuery("SELECT count(*) FROM zsets WHERE id = ?1 AND score = ?2 AND member > ?3")
	qZMinimum  = newQuery("SELECT score FROM zsets WHERE id = ?1 ORDER BY score, member LIMIT 1")
	qZMaximum  = newQuery("SELECT score FROM zsets WHERE id = ?1 ORDER BY score DESC, member DESC LIMIT 1")

	zCols = "SELECT h, member, score FROM zsets WHERE id = ?1"
	// By rank: ?2 offset, ?3 limit.
	qZRank = [2]*query{
		newQuery(zCols + " ORDER BY score, member LIMIT ?3 OFFSET ?2"),
		newQuery(zCols + " ORDER BY score DESC, member DESC LIMIT ?3 OFFSET ?2"),
	}
	// The ends, for pops: no LIMIT, the caller stops (a LIMIT bound to a
	// value that changes between calls makes SQLite prepare the statement
	// again).
	qZEnd = [2]*query{
		newQuery(zCols + " ORDER BY score, member"),
		newQuery(zCols + " ORDER BY score DESC, member DESC"),
	}
	qZDelRank = newQuery("DELETE FROM zsets WHERE id = ?1 AND (h, member) IN (SELECT h, member FROM zsets WHERE id = ?1 ORDER BY score, member LIMIT ?3 OFFSET ?2)")
	// By score, both bounds inclusive: ?2 min, ?3 max, ?4 offset, ?5 limit.
	qZScore2 = [2]*query{
		newQuery(zCols + " AND score >= ?2 AND score <= ?3 ORDER BY score, member LIMIT ?5 OFFSET ?4"),
		newQuery(zCols + " AND score >= ?2 AND score <= ?3 ORDER BY score DESC, member DESC LIMIT ?5 OFFSET ?4"),
	}
	qZCountScore = newQuery("SELECT count(*) FROM zsets WHERE id = ?1 AND score >= ?2 AND score <= ?3")
	qZDelScore   = newQuery("DELETE FROM zsets WHERE id = ?1 AND score >= ?2 AND score <= ?3")
	// By member within one score (the lexicographic commands on a sorted
	// set whose members all share a score): ?2 score, ?3 lowest member
	// (inclusive), ?4 highest member, ?5 offset, ?6 limit; indexed by the
	// upper bound's kind (LexOpen, LexIncl, LexExcl) then direction.
	qZLex      [3][2]*query
	qZCountLex [3]*query
	qZDelLex   [3]*query
)

func init() {
	for k, hi := range []string{"", " AND member <= ?4", " AND member < ?4"} {
		where := " AND score = ?2 AND member >= ?3" + hi
		qZLex[k][0] = newQuery(zCols + where + " ORDER BY member LIMIT ?6 OFFSET ?5")
		qZLex[k][1] = newQuery(zCols + where + " ORDER BY member DESC LIMIT ?6 OFFSET ?5")
		qZCountLex[k] = newQuery("SELECT count(*) FROM zsets WHERE id = ?1" + where)
		qZDelLex[k] = newQuery("DELETE FROM zsets WHERE id = ?1" + where)
	}
}

// ZScore is member's score; found is false when it is not in the set.
func (s *Store) ZScore(c *Coll, member []byte) (score float64, found bool, err error) {
	if s.mem != nil {
		score, found = c.zset().Score(member)
		return score, found, nil
	}
	e, st := s.lookupElem(qZScore, c, member)
	if e != nil {
		return e.score, !e.gone, nil
	}
	row, err := st.step()
	if row {
		score = st.colFloat(0)
	}
	st.reset()
	return score, row, err
}

// ZSet stores member with score: exists says whether the member is there
// already (the caller looked it up with ZScore). Scores are never NaN; a
// negative zero is stored as zero, as Redis's small sorted sets do.
func (s *Store) ZSet(c *Coll, member []byte, score float64, exists bool) error {
	if s.mem != nil {
		s.mem.zSet(c, member, score, exists)
		return nil
	}
	if score == 0 {
		score = 0 // drop the sign of -0
	}
	e, err := s.pendElem(c, member, exists) // written by the flush (elems.go)
	if err != nil {
		return err
	}
	if e.gone {
		s.revive(e) // removed, added again
	}
	e.score = score
	if !exists {
		c.Len++
	}
	s.changed(c, exists)
	return nil
}

// ZRem removes member; removed is false when it was not there.
func (s *Store) ZRem(c *Coll, member []byte) (removed bool, err error) {
	if s.mem != nil {
		return s.mem.zRem(c, member), nil
	}
	return s.removeElem(c, member)
}

// ZRank is the 0-based rank of a member that has the given score, counted
// from the lowest (or, with rev, the highest). It costs O(rank).
func (s *Store) ZRank(c *Coll, member []byte, score float64, rev bool) (int64, error) {
	if s.mem != nil {
		rank, _ := c.zset().Rank(member, rev)
		return int64(rank), nil
	}
	q, tie := qZBelow, qZTieBelow
	if rev {
		q, tie = qZAbove, qZTieAbove
	}
	rank := int64(0)
	for _, qq := range []*query{q, tie} {
		st := s.q(qq)
		st.int(1, c.ID)
		st.float(2, score)
		if qq == tie {
			st.blob(3, member)
		}
		_, err := st.step()
		rank += st.colInt(0)
		st.reset()
		if err != nil {
			return 0, err
		}
	}
	return rank, nil
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
	if s.mem != nil {
		s.mem.zRangeElems(c, r, fn)
		return nil
	}
	switch r.Kind {
	case ZByRank:
		return s.zRangeByRank(c, r, fn)
	case ZByScore:
		st := s.q(qZScore2[dir(r.Rev)])
		st.int(1, c.ID)
		st.float(2, r.Min)
		st.float(3, r.Max)
		st.int(4, r.Offset)
		st.int(5, r.Limit)
		return s.each(zsetElems, st, fn)
	}
	return s.zRangeByLex(c, r, fn)
}

func dir(rev bool) int {
	if rev {
		return 1
	}
	return 0
}

// zRangeByRank reads a rank range. SQLite counts an OFFSET row by row, so
// a range in the far half is read from the other end, backwards, and
// reversed: the cost is O(min(rank, N-rank) + count).
func (s *Store) zRangeByRank(c *Coll, r ZRange, fn func(e *Elem) bool) error {
	n := r.Stop - r.Start + 1
	if n <= 0 {
		return nil
	}
	if r.Start <= c.Len-1-r.Stop {
		st := s.q(qZRank[dir(r.Rev)])
		st.int(1, c.ID)
		st.int(2, r.Start)
		st.int(3, n)
		return s.each(zsetElems, st, fn)
	}
	st := s.q(qZRank[dir(!r.Rev)])
	st.int(1, c.ID)
	st.int(2, c.Len-1-r.Stop)
	st.int(3, n)
	buf := make([]Elem, 0, min(n, 1<<16))
	err := s.each(zsetElems, st, func(e *Elem) bool {
		buf = append(buf, e.clone())
		return true
	})
	if err != nil {
		return err
	}
	for i := len(buf) - 1; i >= 0; i-- {
		if !fn(&buf[i]) {
			break
		}
	}
	return nil
}

// uniformScore reports whether every member of c has the same score, and
// which: the lexicographic commands are then index seeks.
func (s *Store) uniformScore(c *Coll) (float64, bool, error) {
	lo, ok, err := s.zEnd(c, qZMinimum)
	if err != nil || !ok {
		return 0, false, err
	}
	hi, _, err := s.zEnd(c, qZMaximum)
	return lo, err == nil && lo == hi, err
}

func (s *Store) zEnd(c *Coll, q *query) (float64, bool, error) {
	st := s.q(q)
	st.int(1, c.ID)
	row, err := st.step()
	v := 0.0
	if row {
		v = st.colFloat(0)
	}
	st.reset()
	return v, row, err
}

// bindLex binds a lexicographic range as the qZLex statements take it.
func bindLex(st *stmt, c *Coll, score float64, r ZRange) {
	st.int(1, c.ID)
	st.float(2, score)
	lo := r.LexMin.Member
	switch r.LexMin.Kind {
	case LexOpen:
		lo = nil
	case LexExcl:
		// The smallest blob above m is m followed by a zero byte.
		lo = append(append(make([]byte, 0, len(lo)+1), lo...), 0)
	}
	st.blob(3, lo)
	if r.LexMax.Kind != LexOpen {
		st.blob(4, r.LexMax.Member)
	}
}

// lexEmpty reports the ranges Redis treats as empty without looking.
func lexEmpty(r ZRange) bool {
	if r.LexMin.Kind == LexOpen || r.LexMax.Kind == LexOpen {
		return false
	}
	cmp := bytes.Compare(r.LexMin.Member, r.LexMax.Member)
	return cmp > 0 || (cmp == 0 && (r.LexMin.Kind == LexExcl || r.LexMax.Kind == LexExcl))
}

func (s *Store) zRangeByLex(c *Coll, r ZRange, fn func(e *Elem) bool) error {
	if lexEmpty(r) {
		return nil
	}
	score, uniform, err := s.uniformScore(c)
	if err != nil {
		return err
	}
	if uniform {
		st := s.q(qZLex[r.LexMax.Kind][dir(r.Rev)])
		bindLex(st, c, score, r)
		st.int(5, r.Offset)
		st.int(6, r.Limit)
		return s.each(zsetElems, st, fn)
	}
	all, start, err := s.lexStart(c, r)
	if err != nil || start < 0 {
		return err
	}
	// Redis skips the offset without looking, then goes on while the
	// bound ahead holds.
	step, ahead := 1, r.leMax
	if r.Rev {
		step, ahead = -1, r.geMin
	}
	i := start + step*int(min(r.Offset, int64(len(all))))
	for n := int64(0); i >= 0 && i < len(all) && (r.Limit < 0 || n < r.Limit); i, n = i+step, n+1 {
		if !ahead(all[i].Member) || !fn(&all[i]) {
			break
		}
	}
	return nil
}

// geMin and leMax test a member against a lexicographic range's bounds.
func (r ZRange) geMin(m []byte) bool {
	switch r.LexMin.Kind {
	case LexIncl:
		return bytes.Compare(m, r.LexMin.Member) >= 0
	case LexExcl:
		return bytes.Compare(m, r.LexMin.Member) > 0
	}
	return true
}

func (r ZRange) leMax(m []byte) bool {
	switch r.LexMax.Kind {
	case LexIncl:
		return bytes.Compare(m, r.LexMax.Member) <= 0
	case LexExcl:
		return bytes.Compare(m, r.LexMax.Member) < 0
	}
	return true
}

// lexStart is where Redis starts a lexicographic range over a sorted set
// whose scores differ (its documentation leaves the result unspecified;
// this is what its compact encoding does): walking in (score, member)
// order, the first member at or above the minimum, if that one is at or
// below the maximum (reversed: from the end, the first member at or below
// the maximum, if it is at or above the minimum). start is -1 when there is
// none. It reads the whole set.
func (s *Store) lexStart(c *Coll, r ZRange) (all []Elem, start int, err error) {
	err = s.zRangeByRank(c, ZRange{Kind: ZByRank, Start: 0, Stop: c.Len - 1}, func(e *Elem) bool {
		all = append(all, e.clone())
		return true
	})
	if err != nil || len(all) == 0 {
		return nil, -1, err
	}
	// Redis first rules out ranges that miss the set's ends.
	if !r.geMin(all[len(all)-1].Member) || !r.leMax(all[0].Member) {
		return nil, -1, nil
	}
	if !r.Rev {
		for i := range all {
			if r.geMin(all[i].Member) {
				if r.leMax(all[i].Member) {
					return all, i, nil
				}
				break
			}
		}
		return nil, -1, nil
	}
	for i := len(all) - 1; i >= 0; i-- {
		if r.leMax(all[i].Member) {
			if r.geMin(all[i].Member) {
				return all, i, nil
			}
			break
		}
	}
	return nil, -1, nil
}

// lexRun is the members a lexicographic range over a sorted set with
// differing scores counts and removes (ZLEXCOUNT, ZREMRANGEBYLEX): from
// the forward start, the run of members at or below the maximum.
func (s *Store) lexRun(c *Coll, r ZRange) ([]Elem, error) {
	r.Rev = false
	all, start, err := s.lexStart(c, r)
	if err != nil || start < 0 {
		return nil, err
	}
	end := start
	for end < len(all) && r.leMax(all[end].Member) {
		end++
	}
	return all[start:end], nil
}

// ZCount counts the members a score or lexicographic range selects (its
// Offset, Limit and Rev are ignored). It costs O(count).
func (s *Store) ZCount(c *Coll, r ZRange) (int64, error) {
	if s.mem != nil {
		return s.mem.zCount(c, r), nil
	}
	var st *stmt
	switch r.Kind {
	case ZByScore:
		if math.IsInf(r.Min, -1) && math.IsInf(r.Max, 1) {
			return c.Len, nil // the whole set: no need to count rows
		}
		st = s.q(qZCountScore)
		st.int(1, c.ID)
		st.float(2, r.Min)
		st.float(3, r.Max)
	case ZByLex:
		if lexEmpty(r) {
			return 0, nil
		}
		if r.LexMin.Kind == LexOpen && r.LexMax.Kind == LexOpen {
			return c.Len, nil
		}
		score, uniform, err := s.uniformScore(c)
		if err != nil {
			return 0, err
		}
		if !uniform {
			run, err := s.lexRun(c, r)
			return int64(len(run)), err
		}
		st = s.q(qZCountLex[r.LexMax.Kind])
		bindLex(st, c, score, r)
	default:
		return r.Stop - r.Start + 1, nil
	}
	defer st.reset()
	if _, err := st.step(); err != nil {
		return 0, err
	}
	return st.colInt(0), nil
}

// ZDeleteRange removes the members r selects (Offset, Limit and Rev are
// ignored) and reports how many went.
func (s *Store) ZDeleteRange(c *Coll, r ZRange) (int64, error) {
	if s.mem != nil {
		return s.mem.zDeleteRange(c, r), nil
	}
	var st *stmt
	switch r.Kind {
	case ZByRank:
		if r.Stop < r.Start {
			return 0, nil
		}
		st = s.q(qZDelRank)
		st.int(1, c.ID)
		st.int(2, r.Start)
		st.int(3, r.Stop-r.Start+1)
	case ZByScore:
		st = s.q(qZDelScore)
		st.int(1, c.ID)
		st.float(2, r.Min)
		st.float(3, r.Max)
	case ZByLex:
		if lexEmpty(r) {
			return 0, nil
		}
		score, uniform, err := s.uniformScore(c)
		if err != nil {
			return 0, err
		}
		if !uniform {
			run, err := s.lexRun(c, r)
			if err != nil {
				return 0, err
			}
			for i := range run {
				if _, err := s.ZRem(c, run[i].Member); err != nil {
					return 0, err
				}
			}
			return int64(len(run)), nil
		}
		st = s.q(qZDelLex[r.LexMax.Kind])
		bindLex(st, c, score, r)
	}
	if err := st.exec(); err != nil {
		return 0, err
	}
	n := s.c.changes()
	if n > 0 {
		c.Len -= n
		s.changed(c, false)
	}
	return n, nil
}

// ZPop removes and returns up to n members from the low end of c (the high
// end with max), in pop order. ZPOPMIN, ZPOPMAX, ZMPOP and their blocking
// forms use it.
func (s *Store) ZPop(c *Coll, n int64, max bool) ([]Elem, error) {
	if s.mem != nil {
		return s.mem.zPop(c, n, max), nil
	}
	n = min(n, c.Len)
	if n <= 0 {
		return nil, nil
	}
	out := make([]Elem, 0, n)
	st, skip := s.elemRows(qZEnd[dir(max)], c)
	st.int(1, c.ID)
	err := s.eachLive(zsetElems, st, c, skip, func(e *Elem) bool {
		out = append(out, e.clone())
		return int64(len(out)) < n
	})
	if err != nil {
		return nil, err
	}
	return out, s.RemoveRead(c, out)
}

// ZNextUp and ZNextDown turn an exclusive score bound into the inclusive
// bound that selects the same doubles.
func ZNextUp(v float64) float64   { return math.Nextafter(v, math.Inf(1)) }
func ZNextDown(v float64) float64 { return math.Nextafter(v, math.Inf(-1)) }
