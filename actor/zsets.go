package actor

import (
	"math"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

var zsetCommands = registerCommands([]*Command{
	{Name: "zadd", Summary: "Adds members to a sorted set or updates their scores, with conditions.", Handler: cmdZAdd},
	{Name: "zincrby", Summary: "Adds to the score of a sorted-set member.", Handler: cmdZIncrBy},
	{Name: "zrem", Summary: "Removes members from a sorted set.", Handler: cmdRemove(storage.TypeZSet, (*storage.Store).ZRem)},
	{Name: "zcard", Summary: "Returns the number of members of a sorted set.", Handler: cmdZCard},
	{Name: "zscore", Summary: "Returns the score of a sorted-set member.", Handler: cmdZScore},
	{Name: "zmscore", Summary: "Returns the scores of several sorted-set members.", Handler: cmdZMScore},
	{Name: "zcount", Summary: "Counts the members of a sorted set within a score range.", Handler: cmdZCount(scoreRange)},
	{Name: "zlexcount", Summary: "Counts the members of a sorted set within a lexicographic range.", Handler: cmdZCount(lexRange)},
	{Name: "zrank", Summary: "Returns the rank of a member, lowest score first.", Handler: cmdZRank(lowestFirst)},
	{Name: "zrevrank", Summary: "Returns the rank of a member, highest score first.", Handler: cmdZRank(highestFirst)},
	{Name: "zrange", Summary: "Returns a range of a sorted set by rank, score or member.", Handler: cmdZRange(rangeAuto, lowestFirst, replyResult)},
	{Name: "zrangestore", Summary: "Stores a range of a sorted set in another key.", Handler: cmdZRange(rangeAuto, lowestFirst, storeResult)},
	{Name: "zrangebyscore", Summary: "Returns the members of a sorted set within a score range.", Handler: cmdZRange(storage.ZByScore, lowestFirst, replyResult)},
	{Name: "zrevrangebyscore", Summary: "Returns the members of a sorted set within a score range, highest first.", Handler: cmdZRange(storage.ZByScore, highestFirst, replyResult)},
	{Name: "zrangebylex", Summary: "Returns the members of a sorted set within a lexicographic range.", Handler: cmdZRange(storage.ZByLex, lowestFirst, replyResult)},
	{Name: "zrevrangebylex", Summary: "Returns the members of a sorted set within a lexicographic range, highest first.", Handler: cmdZRange(storage.ZByLex, highestFirst, replyResult)},
	{Name: "zrevrange", Summary: "Returns a range of a sorted set by rank, highest score first.", Handler: cmdZRange(storage.ZByRank, highestFirst, replyResult)},
	{Name: "zremrangebyrank", Summary: "Removes the members of a sorted set within a rank range.", Handler: cmdZRemRange(rankBounds)},
	{Name: "zremrangebyscore", Summary: "Removes the members of a sorted set within a score range.", Handler: cmdZRemRange(scoreRange)},
	{Name: "zremrangebylex", Summary: "Removes the members of a sorted set within a lexicographic range.", Handler: cmdZRemRange(lexRange)},
	{Name: "zpopmin", Summary: "Removes and returns the members with the lowest scores.", Handler: cmdZPop(lowestFirst)},
	{Name: "zpopmax", Summary: "Removes and returns the members with the highest scores.", Handler: cmdZPop(highestFirst)},
	{Name: "zmpop", Summary: "Removes and returns members from the first non-empty sorted set of several.", Handler: cmdZMPop},
	{Name: "bzpopmin", Summary: "Removes and returns the lowest-scored member of the first non-empty sorted set, waiting for one if none has any.", Handler: cmdBZPop(lowestFirst)},
	{Name: "bzpopmax", Summary: "Removes and returns the highest-scored member of the first non-empty sorted set, waiting for one if none has any.", Handler: cmdBZPop(highestFirst)},
	{Name: "bzmpop", Summary: "Removes and returns members from the first non-empty sorted set of several, waiting for one.", Handler: cmdBZMPop},
	{Name: "zrandmember", Summary: "Returns random members of a sorted set, optionally with their scores.", Handler: cmdZRandMember},
	{Name: "zunion", Summary: "Returns the union of sorted sets (and sets), with weights and aggregation.", Handler: cmdZSetOp(zunionOp, replyResult)},
	{Name: "zinter", Summary: "Returns the intersection of sorted sets (and sets), with weights and aggregation.", Handler: cmdZSetOp(zinterOp, replyResult)},
	{Name: "zdiff", Summary: "Returns the members of the first sorted set that are in none of the others.", Handler: cmdZSetOp(zdiffOp, replyResult)},
	{Name: "zunionstore", Summary: "Stores the union of sorted sets (and sets) in a key.", Handler: cmdZSetOp(zunionOp, storeResult)},
	{Name: "zinterstore", Summary: "Stores the intersection of sorted sets (and sets) in a key.", Handler: cmdZSetOp(zinterOp, storeResult)},
	{Name: "zdiffstore", Summary: "Stores the difference of sorted sets (and sets) in a key.", Handler: cmdZSetOp(zdiffOp, storeResult)},
	{Name: "zintercard", Summary: "Counts the members of the intersection of sorted sets, up to a limit.", Handler: cmdZInterCard},
	{Name: "zscan", Summary: "Iterates over the members and scores of a sorted set with a cursor.", Handler: func(c *Ctx) error { return cmdScanColl(c, storage.TypeZSet) }},
})

// The keyspace notification events of what these commands write
// (notify.go, eventSpec).
var _ = addEvents(map[string]*eventSpec{
	"zadd":             {class: notifyZSet, event: "zadd"},
	"zincrby":          {class: notifyZSet, event: "zincr"},
	"zrem":             {class: notifyZSet, event: "zrem", popDel: true},
	"zremrangebyrank":  {class: notifyZSet, event: "zremrangebyrank", popDel: true},
	"zremrangebyscore": {class: notifyZSet, event: "zremrangebyscore", popDel: true},
	"zremrangebylex":   {class: notifyZSet, event: "zremrangebylex", popDel: true},
	"zpopmin":          {class: notifyZSet, event: "zpopmin", popDel: true},
	"zpopmax":          {class: notifyZSet, event: "zpopmax", popDel: true},
	"bzpopmin":         {class: notifyZSet, event: "zpopmin", popDel: true},
	"bzpopmax":         {class: notifyZSet, event: "zpopmax", popDel: true},
	"zmpop":            {class: notifyZSet, popDel: true, ends: mpopEnd(1, "zpopmin", "zpopmax", "MIN")},
	"bzmpop":           {class: notifyZSet, popDel: true, ends: mpopEnd(2, "zpopmin", "zpopmax", "MIN")},
	"zunionstore":      {class: notifyZSet, event: "zunionstore"},
	"zinterstore":      {class: notifyZSet, event: "zinterstore"},
	"zdiffstore":       {class: notifyZSet, event: "zdiffstore"},
	"zrangestore":      {class: notifyZSet, event: "zrangestore"},
})

// writeScored writes sorted-set members, with their scores when
// withScores is set (flat in RESP2, [member, score] pairs in RESP3).
func writeScored(c *Ctx, es []storage.Elem, withScores bool) {
	writePairs(c, es, withScores, func(e *storage.Elem) { c.w.Double(e.Score) })
}

// writeGathered replies with the members b gathered, and their scores when
// with, as writeScored does, without making a list of them first.
func writeGathered(c *Ctx, b *elemBuf, with bool) {
	writePairsHeader(c, len(b.ends), with)
	pair := with && c.w.Resp3()
	start := 0
	for i, end := range b.ends {
		if pair {
			c.w.Array(2)
		}
		c.w.Bulk(b.arena[start:end])
		if with {
			c.w.Double(b.scores[i])
		}
		start = end
	}
}

// zaddArgs is a parsed ZADD, or ZINCRBY (ZADD INCR with one pair).
type zaddArgs struct {
	nx, xx, gt, lt, ch, incr bool
	scores                   []float64
	members                  [][]byte
}

// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
func cmdZAdd(c *Ctx) error {
	var a zaddArgs
	i := 2
opts:
	for ; i < len(c.args); i++ {
		switch {
		case c.argEq(i, "nx"):
			a.nx = true
		case c.argEq(i, "xx"):
			a.xx = true
		case c.argEq(i, "ch"):
			a.ch = true
		case c.argEq(i, "incr"):
			a.incr = true
		case c.argEq(i, "gt"):
			a.gt = true
		case c.argEq(i, "lt"):
			a.lt = true
		default:
			break opts
		}
	}
	if err := a.parsePairs(c.args[i:]); err != nil {
		return err
	}
	return zadd(c, &a)
}

// ZINCRBY key increment member
func cmdZIncrBy(c *Ctx) error {
	a := zaddArgs{incr: true}
	if err := a.parsePairs(c.args[2:]); err != nil {
		return err
	}
	return zadd(c, &a)
}

// parsePairs parses the score-member pairs, after checking them and the
// options in Redis's order.
func (a *zaddArgs) parsePairs(args [][]byte) error {
	n := len(args)
	if n == 0 || n%2 != 0 {
		return ErrSyntax
	}
	if a.nx && a.xx {
		return ErrNXAndXX
	}
	if (a.gt && a.nx) || (a.lt && a.nx) || (a.gt && a.lt) {
		return ErrZAddGTLTNX
	}
	if a.incr && n > 2 {
		return ErrZAddIncrPair
	}
	a.scores, a.members = make([]float64, n/2), make([][]byte, n/2)
	for j := range a.scores {
		v, ok := parseScore(args[2*j])
		if !ok {
			return ErrNotFloat
		}
		a.scores[j], a.members[j] = v, args[2*j+1]
	}
	return nil
}

// zadd runs a parsed ZADD or ZINCRBY and replies: with how many members
// it added (and updated, with CH), or with INCR the member's new score
// (nil when a condition held it back).
func zadd(c *Ctx, a *zaddArgs) error {
	r, err := a.apply(c, c.args[1])
	if err != nil {
		return err
	}
	switch {
	case !a.incr && a.ch:
		c.w.Int(r.added + r.updated)
	case !a.incr:
		c.w.Int(r.added)
	case r.scored:
		c.w.Double(r.score)
	default:
		c.w.Null()
	}
	return nil
}

// zaddResult is what a ZADD did: how many members it added and updated,
// and the last score it set or found already set (scored).
type zaddResult struct {
	added, updated int64
	score          float64
	scored         bool
}

// apply adds a's members to the sorted set at key, or updates their
// scores, as a's conditions allow, and wakes the set's waiters if it
// changed. With XX a missing key stays missing.
func (a *zaddArgs) apply(c *Ctx, key []byte) (r zaddResult, err error) {
	z, err := c.st.OpenColl(c.db, key, storage.TypeZSet)
	if err != nil || (z == nil && a.xx) {
		return r, err
	}
	if z == nil {
		if z, err = c.st.OpenOrCreateColl(c.db, key, storage.TypeZSet); err != nil {
			return r, err
		}
	}
	for j, s := range a.scores {
		m := a.members[j]
		cur, exists, err := c.st.ZScore(z, m)
		if err != nil {
			return r, err
		}
		switch {
		case exists:
			if a.nx {
				continue
			}
			if a.incr {
				s += cur
				if math.IsNaN(s) {
					return r, ErrResultNaN
				}
			}
			if (a.lt && s >= cur) || (a.gt && s <= cur) {
				continue
			}
			r.score, r.scored = s, true
			if s != cur {
				if err := c.st.ZSet(z, m, s, true); err != nil {
					return r, err
				}
				r.updated++
			}
		case !a.xx:
			if err := c.st.ZSet(z, m, s, false); err != nil {
				return r, err
			}
			r.score, r.scored = s, true
			r.added++
		}
	}
	return r, nil
}

// ZCARD key
func cmdZCard(c *Ctx) error {
	z, err := c.readColl(c.args[1], storage.TypeZSet)
	if err != nil {
		return err
	}
	if z == nil {
		c.w.Int(0)
		return nil
	}
	c.w.Int(z.Len)
	return nil
}

// scoreOf looks member up in the sorted set at key: its score, and ok
// false when the key or the member is missing.
func (c *Ctx) scoreOf(key, member []byte) (z *storage.Coll, score float64, ok bool, err error) {
	z, err = c.readColl(key, storage.TypeZSet)
	if err != nil || z == nil {
		return nil, 0, false, err
	}
	score, ok, err = c.st.ZScore(z, member)
	return z, score, ok, err
}

// ZSCORE key member
func cmdZScore(c *Ctx) error {
	_, s, ok, err := c.scoreOf(c.args[1], c.args[2])
	if err != nil {
		return err
	}
	if !ok {
		c.w.Null()
		return nil
	}
	c.w.Double(s)
	return nil
}

// ZMSCORE key member [member ...]
func cmdZMScore(c *Ctx) error {
	z, err := c.readColl(c.args[1], storage.TypeZSet)
	if err != nil {
		return err
	}
	c.w.Array(len(c.args) - 2)
	for _, m := range c.args[2:] {
		if z == nil {
			c.w.Null()
			continue
		}
		s, ok, err := c.st.ZScore(z, m)
		if err != nil {
			return err
		}
		if ok {
			c.w.Double(s)
		} else {
			c.w.Null()
		}
	}
	return nil
}

// scoreRange parses a score range as Redis's zslParseRange and turns it
// into storage's inclusive form; empty is set for a range that can select
// nothing whatever the set holds.
func scoreRange(minArg, maxArg []byte) (r storage.ZRange, empty bool, err error) {
	lo, loEx, ok1 := parseScoreBound(minArg)
	hi, hiEx, ok2 := parseScoreBound(maxArg)
	if !ok1 || !ok2 {
		return r, false, ErrMinMaxNotFloat
	}
	if loEx {
		if math.IsInf(lo, 1) {
			empty = true
		}
		lo = storage.ZNextUp(lo)
	}
	if hiEx {
		if math.IsInf(hi, -1) {
			empty = true
		}
		hi = storage.ZNextDown(hi)
	}
	return storage.ZRange{Kind: storage.ZByScore, Min: lo, Max: hi, Limit: -1}, empty || lo > hi, nil
}

// lexItem parses one end of a lexicographic range as Redis's
// zslParseLexRangeItem: "+" and "-" (the greatest and least strings), or a
// member after "[" (inclusive) or "(" (exclusive).
func lexItem(b []byte) (kind int, member []byte, special byte, ok bool) {
	if len(b) == 0 {
		return 0, nil, 0, false
	}
	switch b[0] {
	case '+', '-':
		// Redis compares the rest as a C string: "+" must end there.
		if len(b) > 1 && b[1] != 0 {
			return 0, nil, 0, false
		}
		return storage.LexOpen, nil, b[0], true
	case '[':
		return storage.LexIncl, b[1:], 0, true
	case '(':
		return storage.LexExcl, b[1:], 0, true
	}
	return 0, nil, 0, false
}

// lexRange parses a lexicographic range; empty is set for one that can
// select nothing ("+" as the minimum, "-" as the maximum).
func lexRange(minArg, maxArg []byte) (r storage.ZRange, empty bool, err error) {
	k1, m1, s1, ok1 := lexItem(minArg)
	k2, m2, s2, ok2 := lexItem(maxArg)
	if !ok1 || !ok2 {
		return r, false, ErrMinMaxLex
	}
	r = storage.ZRange{Kind: storage.ZByLex, LexMin: storage.LexBound{Kind: k1, Member: m1},
		LexMax: storage.LexBound{Kind: k2, Member: m2}, Limit: -1}
	return r, s1 == '+' || s2 == '-', nil
}

// The order of a sorted set that a command follows: lowest scores first
// (ZPOPMIN, ZRANK, ZRANGE), or highest (ZPOPMAX, ZREVRANK, ZREVRANGE).
const (
	lowestFirst  = false
	highestFirst = true
)

// zrangeParser parses the min and max of a range of one kind (ranks,
// scores or members); empty is set for a range that can select nothing
// whatever the set holds.
type zrangeParser func(minArg, maxArg []byte) (r storage.ZRange, empty bool, err error)

// rangeParser is the parser of ranges of kind.
func rangeParser(kind int) zrangeParser {
	switch kind {
	case storage.ZByScore:
		return scoreRange
	case storage.ZByLex:
		return lexRange
	}
	return rankBounds
}

// rankBounds parses a rank range: start and stop, negative from the end.
// They are clamped to the set once it is open (clampRanks).
func rankBounds(minArg, maxArg []byte) (r storage.ZRange, empty bool, err error) {
	r.Kind = storage.ZByRank
	if r.Start, err = parseInt(minArg); err == nil {
		r.Stop, err = parseInt(maxArg)
	}
	return r, false, err
}

// clampRanks clamps a rank range to a set of n members, as rankRange does,
// and reports whether it still selects anything. Other kinds pass as they
// are.
func clampRanks(r *storage.ZRange, n int64) bool {
	if r.Kind != storage.ZByRank {
		return true
	}
	var ok bool
	r.Start, r.Stop, ok = rankRange(r.Start, r.Stop, n)
	return ok
}

// ZCOUNT key min max / ZLEXCOUNT key min max, parse parsing the range.
func cmdZCount(parse zrangeParser) Handler {
	return func(c *Ctx) error {
		r, empty, err := parse(c.args[2], c.args[3])
		if err != nil {
			return err
		}
		z, err := c.readColl(c.args[1], storage.TypeZSet)
		if err != nil {
			return err
		}
		n := int64(0)
		if z != nil && !empty {
			if n, err = c.st.ZCount(z, r); err != nil {
				return err
			}
		}
		c.w.Int(n)
		return nil
	}
}

// ZRANK key member / ZREVRANK key member (rev: highestFirst)
func cmdZRank(rev bool) Handler {
	return func(c *Ctx) error {
		z, s, ok, err := c.scoreOf(c.args[1], c.args[2])
		if err != nil || !ok {
			if err == nil {
				c.w.Null()
			}
			return err
		}
		rank, err := c.st.ZRank(z, c.args[2], s, rev)
		if err != nil {
			return err
		}
		c.w.Int(rank)
		return nil
	}
}

// rankRange clamps Redis rank indexes (negative from the end) to
// 0 <= start <= stop < n; ok is false for an empty range.
func rankRange(start, stop, n int64) (int64, int64, bool) {
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

// Range kinds as ZRANGE's options set them: auto until BYSCORE or BYLEX.
const rangeAuto = -1

// zrangeArgs is a parsed command of the ZRANGE family.
type zrangeArgs struct {
	key        []byte
	r          storage.ZRange // ranks not yet clamped
	empty      bool           // selects nothing whatever the set holds
	withScores bool
}

// parseZRange parses a command of the ZRANGE family the way Redis's
// zrangeGenericCommand does. Its form fixes kind (or leaves it to BYSCORE
// and BYLEX: rangeAuto, which also allows REV), the order rev, and whether
// it stores (ZRANGESTORE: destination first, no WITHSCORES).
func parseZRange(c *Ctx, kind int, rev, store bool) (a zrangeArgs, err error) {
	revSet := kind != rangeAuto
	first := 1
	if store {
		first = 2
	}
	a.key = c.args[first]
	offset, limit := int64(0), int64(-1)
	for j := first + 3; j < len(c.args); j++ {
		left := len(c.args) - j - 1
		switch {
		case !store && c.argEq(j, "withscores"):
			a.withScores = true
		case c.argEq(j, "limit") && left >= 2:
			if offset, err = c.intArg(j + 1); err != nil {
				return a, err
			}
			if limit, err = c.intArg(j + 2); err != nil {
				return a, err
			}
			j += 2
		case !revSet && c.argEq(j, "rev"):
			rev, revSet = true, true
		case kind == rangeAuto && c.argEq(j, "bylex"):
			kind = storage.ZByLex
		case kind == rangeAuto && c.argEq(j, "byscore"):
			kind = storage.ZByScore
		default:
			return a, ErrSyntax
		}
	}
	if kind == rangeAuto {
		kind = storage.ZByRank
	}
	if limit != -1 && kind == storage.ZByRank {
		return a, ErrLimitNeedsByScore
	}
	if a.withScores && kind == storage.ZByLex {
		return a, ErrWithScoresByLex
	}
	minArg, maxArg := c.args[first+1], c.args[first+2]
	if rev && kind != storage.ZByRank {
		minArg, maxArg = maxArg, minArg
	}
	if a.r, a.empty, err = rangeParser(kind)(minArg, maxArg); err != nil {
		return a, err
	}
	a.r.Rev, a.r.Offset, a.r.Limit = rev, offset, limit
	// Redis skips a negative offset's worth of elements forever (a rank
	// range has no offset: LIMIT -1 -1 passes there unnoticed).
	a.empty = a.empty || (offset < 0 && kind != storage.ZByRank)
	return a, nil
}

// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count]
// [WITHSCORES], ZRANGESTORE dst src min max [...] (store), and the older
// forms that fix the kind and the order: ZRANGEBYSCORE, ZREVRANGEBYSCORE,
// ZRANGEBYLEX, ZREVRANGEBYLEX and ZREVRANGE.
func cmdZRange(kind int, rev, store bool) Handler {
	return func(c *Ctx) error {
		a, err := parseZRange(c, kind, rev, store)
		if err != nil {
			return err
		}
		z, err := c.readColl(a.key, storage.TypeZSet)
		if err != nil {
			return err
		}
		buf := &c.f.elems
		defer buf.release()
		if z != nil && clampRanks(&a.r, z.Len) && !a.empty {
			err := c.st.ZRangeElems(z, a.r, func(e *storage.Elem) bool {
				buf.add(e)
				return true
			})
			if err != nil {
				return err
			}
		}
		if store {
			return storeZSet(c, c.args[1], buf.list())
		}
		writeGathered(c, buf, a.withScores)
		return nil
	}
}

// storeZSet replaces key with a sorted set of es (no key when es is empty)
// and replies with its size.
func storeZSet(c *Ctx, key []byte, es []storage.Elem) error {
	dst, err := c.st.ReplaceColl(c.db, key, storage.TypeZSet)
	if err != nil {
		return err
	}
	for i := range es {
		if err := c.st.ZSet(dst, es[i].Member, es[i].Score, false); err != nil {
			return err
		}
	}
	c.w.Int(int64(len(es)))
	return nil
}

// ZREMRANGEBYRANK key start stop, ZREMRANGEBYSCORE key min max,
// ZREMRANGEBYLEX key min max, parse parsing the range.
func cmdZRemRange(parse zrangeParser) Handler {
	return func(c *Ctx) error {
		r, empty, err := parse(c.args[2], c.args[3])
		if err != nil {
			return err
		}
		z, err := c.st.OpenColl(c.db, c.args[1], storage.TypeZSet)
		if err != nil || z == nil {
			if err == nil {
				c.w.Int(0)
			}
			return err
		}
		n := int64(0)
		if clampRanks(&r, z.Len) && !empty {
			if n, err = c.st.ZDeleteRange(z, r); err != nil {
				return err
			}
		}
		c.w.Int(n)
		return nil
	}
}

// zpop pops up to count members (lowest scores first, or highest with max)
// from the first of keys that exists, checking the types of the keys up to
// that one (a retry passes over those of another type). key is nil when
// none exists.
func zpop(c *Ctx, keys [][]byte, max bool, count int64) (key []byte, popped []storage.Elem, err error) {
	for _, k := range keys {
		popped, ok, err := zpopKey(c, k, max, count)
		switch {
		case c.passOver(err):
		case err != nil:
			return nil, nil, err
		case ok:
			return k, popped, nil
		}
	}
	return nil, nil, nil
}

// zpopKey pops up to count members from the sorted set at key (none for a
// count <= 0) and deletes it if that emptied it; ok is false when key is
// missing, and another type is storage.ErrWrongType.
func zpopKey(c *Ctx, key []byte, max bool, count int64) (popped []storage.Elem, ok bool, err error) {
	z, err := c.st.OpenColl(c.db, key, storage.TypeZSet)
	if err != nil || z == nil {
		return nil, false, err
	}
	if count <= 0 {
		return nil, true, nil
	}
	if popped, err = c.st.ZPop(z, count, max); err != nil {
		return nil, false, err
	}
	if len(popped) == 0 {
		// A stored sorted set is never empty; this one's count is wrong.
		return nil, false, errCountMismatch(key, int(z.Len), 0)
	}
	return popped, true, nil
}

// popZSet is the work of ZMPOP, BZPOPMIN, BZPOPMAX and BZMPOP: it pops up
// to count members from the first of keys that holds a sorted set and
// replies with reply.
func popZSet(max bool, count int64, reply func(w *proto.Writer, key []byte, popped []storage.Elem)) retry {
	return func(c *Ctx, keys [][]byte) (bool, error) {
		key, popped, err := zpop(c, keys, max, count)
		if err != nil || key == nil {
			return false, err
		}
		reply(c.w, key, popped)
		return true, nil
	}
}

// ZPOPMIN key [count] / ZPOPMAX key [count] (max: highestFirst)
func cmdZPop(max bool) Handler {
	return func(c *Ctx) error {
		if len(c.args) > 3 {
			return ErrSyntax
		}
		count := int64(1)
		if len(c.args) == 3 {
			v, ok := parseIntOK(c.args[2])
			if !ok || v < 0 {
				return ErrCountNegative
			}
			count = v
		}
		_, popped, err := zpop(c, c.args[1:2], max, count)
		if err != nil {
			return err
		}
		// Without a count the reply is flat [member, score] in every
		// protocol; with one, RESP3 nests pairs.
		if len(c.args) == 3 {
			writeScored(c, popped, true)
			return nil
		}
		c.w.Array(2 * len(popped))
		for i := range popped {
			c.w.Bulk(popped[i].Member)
			c.w.Double(popped[i].Score)
		}
		return nil
	}
}

// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]
func cmdZMPop(c *Ctx) error {
	keys, max, count, err := mpopArgs(c, 1, minMax)
	if err != nil {
		return err
	}
	return c.tryOnce(keys, popZSet(max, count, writeKeyMembers), (*proto.Writer).NullArray)
}

// BZPOPMIN|BZPOPMAX key [key ...] timeout (max: highestFirst)
func cmdBZPop(max bool) Handler {
	return func(c *Ctx) error {
		last := len(c.args) - 1
		return c.tryOrPark(last, storage.TypeZSet, c.args[1:last], popZSet(max, 1, writeKeyMember), (*proto.Writer).NullArray)
	}
}

// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]. Like Redis it
// checks the rest of the syntax before the timeout.
func cmdBZMPop(c *Ctx) error {
	keys, max, count, err := mpopArgs(c, 2, minMax)
	if err != nil {
		return err
	}
	return c.tryOrPark(1, storage.TypeZSet, keys, popZSet(max, count, writeKeyMembers), (*proto.Writer).NullArray)
}

// minMax parses the MIN|MAX of ZMPOP and BZMPOP.
func minMax(b []byte) (max bool, err error) {
	switch {
	case eqFold(b, "min"):
		return lowestFirst, nil
	case eqFold(b, "max"):
		return highestFirst, nil
	}
	return false, ErrSyntax
}

// writeKeyMember is the reply of BZPOPMIN and BZPOPMAX: [key, member,
// score], the score a double in RESP3.
func writeKeyMember(w *proto.Writer, key []byte, popped []storage.Elem) {
	w.Array(3)
	w.Bulk(key)
	w.Bulk(popped[0].Member)
	w.Double(popped[0].Score)
}

// writeKeyMembers is the reply of ZMPOP and BZMPOP: [key, [[member, score],
// ...]], the scores doubles in RESP3.
func writeKeyMembers(w *proto.Writer, key []byte, popped []storage.Elem) {
	w.Array(2)
	w.Bulk(key)
	w.Array(len(popped))
	for i := range popped {
		w.Array(2)
		w.Bulk(popped[i].Member)
		w.Double(popped[i].Score)
	}
}

// ZRANDMEMBER key [count [WITHSCORES]]
func cmdZRandMember(c *Ctx) error {
	if len(c.args) == 2 {
		z, err := c.readColl(c.args[1], storage.TypeZSet)
		if err != nil || z == nil {
			if err == nil {
				c.w.Null()
			}
			return err
		}
		es, err := c.st.Sample(z, 1)
		if err != nil {
			return err
		}
		c.w.Bulk(es[0].Member)
		return nil
	}
	withScores := len(c.args) == 4
	if len(c.args) > 4 || (withScores && !c.argEq(3, "withscores")) {
		if _, err := randomCountArg(c, 2, false); err != nil {
			return err
		}
		return ErrSyntax
	}
	count, err := randomCountArg(c, 2, withScores)
	if err != nil {
		return err
	}
	z, err := c.readColl(c.args[1], storage.TypeZSet)
	if err != nil {
		return err
	}
	if z == nil || count == 0 {
		c.w.Array(0)
		return nil
	}
	return c.writeRandom(z, count, withScores, func(e *storage.Elem) { c.w.Double(e.Score) })
}
