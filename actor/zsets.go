package actor

import (
	"math"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

var zsetCommands = []*Command{
	{Name: "zadd", Summary: "Adds members to a sorted set or updates their scores, with conditions.", Handler: cmdZAdd},
	{Name: "zincrby", Summary: "Adds to the score of a sorted-set member.", Handler: cmdZAdd},
	{Name: "zrem", Summary: "Removes members from a sorted set.", Handler: cmdZRem},
	{Name: "zcard", Summary: "Returns the number of members of a sorted set.", Handler: cmdZCard},
	{Name: "zscore", Summary: "Returns the score of a sorted-set member.", Handler: cmdZScore},
	{Name: "zmscore", Summary: "Returns the scores of several sorted-set members.", Handler: cmdZMScore},
	{Name: "zcount", Summary: "Counts the members of a sorted set within a score range.", Handler: cmdZCount},
	{Name: "zlexcount", Summary: "Counts the members of a sorted set within a lexicographic range.", Handler: cmdZCount},
	{Name: "zrank", Summary: "Returns the rank of a member, lowest score first.", Handler: cmdZRank},
	{Name: "zrevrank", Summary: "Returns the rank of a member, highest score first.", Handler: cmdZRank},
	{Name: "zrange", Summary: "Returns a range of a sorted set by rank, score or member.", Handler: cmdZRange},
	{Name: "zrangestore", Summary: "Stores a range of a sorted set in another key.", Handler: cmdZRange},
	{Name: "zrangebyscore", Summary: "Returns the members of a sorted set within a score range.", Handler: cmdZRange},
	{Name: "zrevrangebyscore", Summary: "Returns the members of a sorted set within a score range, highest first.", Handler: cmdZRange},
	{Name: "zrangebylex", Summary: "Returns the members of a sorted set within a lexicographic range.", Handler: cmdZRange},
	{Name: "zrevrangebylex", Summary: "Returns the members of a sorted set within a lexicographic range, highest first.", Handler: cmdZRange},
	{Name: "zrevrange", Summary: "Returns a range of a sorted set by rank, highest score first.", Handler: cmdZRange},
	{Name: "zremrangebyrank", Summary: "Removes the members of a sorted set within a rank range.", Handler: cmdZRemRange},
	{Name: "zremrangebyscore", Summary: "Removes the members of a sorted set within a score range.", Handler: cmdZRemRange},
	{Name: "zremrangebylex", Summary: "Removes the members of a sorted set within a lexicographic range.", Handler: cmdZRemRange},
	{Name: "zpopmin", Summary: "Removes and returns the members with the lowest scores.", Handler: cmdZPop(lowest)},
	{Name: "zpopmax", Summary: "Removes and returns the members with the highest scores.", Handler: cmdZPop(highest)},
	{Name: "zmpop", Summary: "Removes and returns members from the first non-empty sorted set of several.", Handler: cmdZMPop},
	{Name: "bzpopmin", Summary: "Removes and returns the lowest-scored member of the first non-empty sorted set, waiting for one if none has any.", Handler: cmdBZPop(lowest)},
	{Name: "bzpopmax", Summary: "Removes and returns the highest-scored member of the first non-empty sorted set, waiting for one if none has any.", Handler: cmdBZPop(highest)},
	{Name: "bzmpop", Summary: "Removes and returns members from the first non-empty sorted set of several, waiting for one.", Handler: cmdBZMPop},
	{Name: "zrandmember", Summary: "Returns random members of a sorted set, optionally with their scores.", Handler: cmdZRandMember},
	{Name: "zunion", Summary: "Returns the union of sorted sets (and sets), with weights and aggregation.", Handler: cmdZSetOp},
	{Name: "zinter", Summary: "Returns the intersection of sorted sets (and sets), with weights and aggregation.", Handler: cmdZSetOp},
	{Name: "zdiff", Summary: "Returns the members of the first sorted set that are in none of the others.", Handler: cmdZSetOp},
	{Name: "zunionstore", Summary: "Stores the union of sorted sets (and sets) in a key.", Handler: cmdZSetOp},
	{Name: "zinterstore", Summary: "Stores the intersection of sorted sets (and sets) in a key.", Handler: cmdZSetOp},
	{Name: "zdiffstore", Summary: "Stores the difference of sorted sets (and sets) in a key.", Handler: cmdZSetOp},
	{Name: "zintercard", Summary: "Counts the members of the intersection of sorted sets, up to a limit.", Handler: cmdZSetOp},
	{Name: "zscan", Summary: "Iterates over the members and scores of a sorted set with a cursor.", Handler: func(c *Ctx) error { return cmdScanColl(c, storage.TypeZSet) }},
}

// elemBuf gathers sorted-set elements read from storage (their bytes are
// valid only during the callback) for a reply that must count them first:
// the members go into one arena rather than an allocation each. The actor
// keeps one and reuses it; release drops a large one.
type elemBuf struct {
	arena  []byte
	ends   []int
	scores []float64
	es     []storage.Elem
}

func (b *elemBuf) add(e *storage.Elem) {
	b.arena = append(b.arena, e.Member...)
	b.ends = append(b.ends, len(b.arena))
	b.scores = append(b.scores, e.Score)
}

// list returns the gathered elements, valid until release.
func (b *elemBuf) list() []storage.Elem {
	b.es = b.es[:0]
	start := 0
	for i, end := range b.ends {
		b.es = append(b.es, storage.Elem{Member: b.arena[start:end:end], Score: b.scores[i]})
		start = end
	}
	return b.es
}

// release empties b for the next command, and lets go of buffers that a
// large reply grew.
func (b *elemBuf) release() {
	if cap(b.arena) > 1<<20 || cap(b.ends) > 1<<16 {
		*b = elemBuf{}
		return
	}
	clear(b.es)
	b.arena, b.ends, b.scores, b.es = b.arena[:0], b.ends[:0], b.scores[:0], b.es[:0]
}

// writeScored writes sorted-set members, with their scores when
// withScores is set (flat in RESP2, [member, score] pairs in RESP3).
func writeScored(c *Ctx, es []storage.Elem, withScores bool) {
	writePairs(c, es, withScores, func(e *storage.Elem) { c.w.Double(e.Score) })
}

// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
// and ZINCRBY key increment member.
func cmdZAdd(c *Ctx) error {
	var nx, xx, gt, lt, ch, incr bool
	i := 2
	if c.cmd.Name == "zincrby" {
		incr = true
	} else {
	opts:
		for ; i < len(c.args); i++ {
			switch {
			case c.argEq(i, "nx"):
				nx = true
			case c.argEq(i, "xx"):
				xx = true
			case c.argEq(i, "ch"):
				ch = true
			case c.argEq(i, "incr"):
				incr = true
			case c.argEq(i, "gt"):
				gt = true
			case c.argEq(i, "lt"):
				lt = true
			default:
				break opts
			}
		}
	}
	rest := len(c.args) - i
	if rest == 0 || rest%2 != 0 {
		return ErrSyntax
	}
	if nx && xx {
		return ErrNXAndXX
	}
	if (gt && nx) || (lt && nx) || (gt && lt) {
		return ErrZAddGTLTNX
	}
	if incr && rest > 2 {
		return ErrZAddIncrPair
	}
	scores := make([]float64, rest/2)
	for j := range scores {
		v, ok := parseScore(c.args[i+2*j])
		if !ok {
			return ErrNotFloat
		}
		scores[j] = v
	}
	z, err := c.st.OpenColl(c.db, c.args[1], storage.TypeZSet)
	if err != nil {
		return err
	}
	var added, updated, processed int64
	var score float64
	if z != nil || !xx {
		if z == nil {
			if z, err = c.st.OpenOrCreateColl(c.db, c.args[1], storage.TypeZSet); err != nil {
				return err
			}
		}
		for j, s := range scores {
			m := c.args[i+2*j+1]
			cur, exists, err := c.st.ZScore(z, m)
			if err != nil {
				return err
			}
			switch {
			case exists:
				if nx {
					continue
				}
				if incr {
					s += cur
					if math.IsNaN(s) {
						if err := c.st.SaveColl(z, false); err != nil {
							return err
						}
						return ErrResultNaN
					}
				}
				if (lt && s >= cur) || (gt && s <= cur) {
					continue
				}
				score = s
				processed++
				if s != cur {
					if err := c.st.ZSet(z, m, s, true); err != nil {
						return err
					}
					updated++
				}
			case !xx:
				if err := c.st.ZSet(z, m, s, false); err != nil {
					return err
				}
				score = s
				processed++
				added++
			}
		}
		if err := c.st.SaveColl(z, updated > 0); err != nil {
			return err
		}
		if added > 0 || updated > 0 {
			// The set may have just been created: its waiters can pop.
			c.a.signalReady(c.db, c.args[1])
		}
	}
	switch {
	case !incr && ch:
		c.w.Int(added + updated)
	case !incr:
		c.w.Int(added)
	case processed > 0:
		c.w.Double(score)
	default:
		c.w.Null()
	}
	return nil
}

// ZREM key member [member ...]
func cmdZRem(c *Ctx) error {
	z, err := c.st.OpenColl(c.db, c.args[1], storage.TypeZSet)
	if err != nil {
		return err
	}
	n := int64(0)
	if z != nil {
		for _, m := range c.args[2:] {
			ok, err := c.st.ZRem(z, m)
			if err != nil {
				return err
			}
			if ok {
				n++
			}
		}
		if err := c.st.SaveColl(z, false); err != nil {
			return err
		}
	}
	c.w.Int(n)
	return nil
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

// ZSCORE key member
func cmdZScore(c *Ctx) error {
	z, err := c.readColl(c.args[1], storage.TypeZSet)
	if err != nil || z == nil {
		if err == nil {
			c.w.Null()
		}
		return err
	}
	s, ok, err := c.st.ZScore(z, c.args[2])
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

// ZCOUNT key min max / ZLEXCOUNT key min max
func cmdZCount(c *Ctx) error {
	var r storage.ZRange
	var empty bool
	var err error
	if c.cmd.Name == "zcount" {
		r, empty, err = scoreRange(c.args[2], c.args[3])
	} else {
		r, empty, err = lexRange(c.args[2], c.args[3])
	}
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

// ZRANK key member / ZREVRANK key member
func cmdZRank(c *Ctx) error {
	z, err := c.readColl(c.args[1], storage.TypeZSet)
	if err != nil || z == nil {
		if err == nil {
			c.w.Null()
		}
		return err
	}
	s, ok, err := c.st.ZScore(z, c.args[2])
	if err != nil || !ok {
		if err == nil {
			c.w.Null()
		}
		return err
	}
	rank, err := c.st.ZRank(z, c.args[2], s, c.cmd.Name == "zrevrank")
	if err != nil {
		return err
	}
	c.w.Int(rank)
	return nil
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

// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count]
// [WITHSCORES], ZRANGESTORE dst src min max [...] (no WITHSCORES), and the
// older fixed-kind forms ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZRANGEBYLEX,
// ZREVRANGEBYLEX and ZREVRANGE, all parsed the way Redis's
// zrangeGenericCommand does.
func cmdZRange(c *Ctx) error {
	kind, rev, revSet := rangeAuto, false, false
	switch c.cmd.Name {
	case "zrangebyscore":
		kind, revSet = storage.ZByScore, true
	case "zrevrangebyscore":
		kind, rev, revSet = storage.ZByScore, true, true
	case "zrangebylex":
		kind, revSet = storage.ZByLex, true
	case "zrevrangebylex":
		kind, rev, revSet = storage.ZByLex, true, true
	case "zrevrange":
		kind, rev, revSet = storage.ZByRank, true, true
	}
	store := c.cmd.Name == "zrangestore"
	first := 1
	if store {
		first = 2
	}
	key := c.args[first]
	withScores := false
	offset, limit := int64(0), int64(-1)
	for j := first + 3; j < len(c.args); j++ {
		left := len(c.args) - j - 1
		switch {
		case !store && c.argEq(j, "withscores"):
			withScores = true
		case c.argEq(j, "limit") && left >= 2:
			var err error
			if offset, err = c.intArg(j + 1); err != nil {
				return err
			}
			if limit, err = c.intArg(j + 2); err != nil {
				return err
			}
			j += 2
		case !revSet && c.argEq(j, "rev"):
			rev, revSet = true, true
		case kind == rangeAuto && c.argEq(j, "bylex"):
			kind = storage.ZByLex
		case kind == rangeAuto && c.argEq(j, "byscore"):
			kind = storage.ZByScore
		default:
			return ErrSyntax
		}
	}
	if kind == rangeAuto {
		kind = storage.ZByRank
	}
	if limit != -1 && kind == storage.ZByRank {
		return ErrLimitNeedsByScore
	}
	if withScores && kind == storage.ZByLex {
		return ErrWithScoresByLex
	}
	minArg, maxArg := c.args[first+1], c.args[first+2]
	if rev && kind != storage.ZByRank {
		minArg, maxArg = maxArg, minArg
	}
	var r storage.ZRange
	var start, stop int64
	empty := false
	var err error
	switch kind {
	case storage.ZByRank:
		if start, stop, err = c.rangeArgs(first + 1); err != nil {
			return err
		}
	case storage.ZByScore:
		r, empty, err = scoreRange(minArg, maxArg)
	case storage.ZByLex:
		r, empty, err = lexRange(minArg, maxArg)
	}
	if err != nil {
		return err
	}
	r.Rev, r.Offset, r.Limit = rev, offset, limit
	// Redis skips a negative offset's worth of elements forever (a rank
	// range has no offset: LIMIT -1 -1 passes there unnoticed).
	empty = empty || (offset < 0 && kind != storage.ZByRank)
	z, err := c.readColl(key, storage.TypeZSet)
	if err != nil {
		return err
	}
	if z != nil && kind == storage.ZByRank {
		var ok bool
		r.Start, r.Stop, ok = rankRange(start, stop, z.Len)
		empty = empty || !ok
	}
	buf := &c.a.elems
	defer buf.release()
	if z != nil && !empty {
		err := c.st.ZRangeElems(z, r, func(e *storage.Elem) bool {
			buf.add(e)
			return true
		})
		if err != nil {
			return err
		}
	}
	es := buf.list()
	if store {
		return storeZSet(c, c.args[1], es)
	}
	writeScored(c, es, withScores)
	return nil
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
	if err := c.st.SaveColl(dst, false); err != nil {
		return err
	}
	if len(es) > 0 {
		c.a.signalReady(c.db, key)
	}
	c.w.Int(int64(len(es)))
	return nil
}

// ZREMRANGEBYRANK key start stop, ZREMRANGEBYSCORE key min max,
// ZREMRANGEBYLEX key min max
func cmdZRemRange(c *Ctx) error {
	var r storage.ZRange
	var start, stop int64
	empty := false
	var err error
	switch c.cmd.Name {
	case "zremrangebyrank":
		start, stop, err = c.rangeArgs(2)
		r.Kind = storage.ZByRank
	case "zremrangebyscore":
		r, empty, err = scoreRange(c.args[2], c.args[3])
	default:
		r, empty, err = lexRange(c.args[2], c.args[3])
	}
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
	if r.Kind == storage.ZByRank {
		var ok bool
		r.Start, r.Stop, ok = rankRange(start, stop, z.Len)
		empty = empty || !ok
	}
	n := int64(0)
	if !empty {
		if n, err = c.st.ZDeleteRange(z, r); err != nil {
			return err
		}
		if err := c.st.SaveColl(z, false); err != nil {
			return err
		}
	}
	c.w.Int(n)
	return nil
}

// The end a sorted-set pop takes from: the lowest scores (ZPOPMIN,
// BZPOPMIN, MIN) or the highest (ZPOPMAX, BZPOPMAX, MAX).
const (
	lowest  = false
	highest = true
)

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
	return popped, true, c.st.SaveColl(z, false)
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

// ZPOPMIN key [count] / ZPOPMAX key [count] (max: highest)
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

// BZPOPMIN|BZPOPMAX key [key ...] timeout (max: highest)
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
		return lowest, nil
	case eqFold(b, "max"):
		return highest, nil
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
