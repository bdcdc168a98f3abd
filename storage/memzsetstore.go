package storage

import (
	"math"

	"github.com/cellar-db/cellar/storage/object"
)

// Sorted sets on the in-memory engine: the Z operations of zsets.go, run on
// the key's object.ZSet.

func (c *Coll) zset() *object.ZSet { return c.e.zset() }

func lexBound(b LexBound, min bool) object.LexBound {
	switch {
	case b.Kind == LexIncl:
		return object.LexBound{Kind: object.LexIncl, Member: b.Member}
	case b.Kind == LexExcl:
		return object.LexBound{Kind: object.LexExcl, Member: b.Member}
	case min:
		return object.LexBound{Kind: object.LexMinusInf}
	}
	return object.LexBound{Kind: object.LexPlusInf}
}

func scoreRange(r ZRange) object.ScoreRange {
	return object.ScoreRange{Min: object.ScoreBound{Value: r.Min}, Max: object.ScoreBound{Value: r.Max}}
}

func lexRange(r ZRange) object.LexRange {
	return object.LexRange{Min: lexBound(r.LexMin, true), Max: lexBound(r.LexMax, false)}
}

// window is an offset and limit in int's range.
func window(r ZRange) (offset, count int) {
	offset = int(min(r.Offset, math.MaxInt32))
	count = -1
	if r.Limit >= 0 {
		count = int(min(r.Limit, math.MaxInt32))
	}
	return offset, count
}

func (m *memEngine) zSet(c *Coll, member []byte, score float64, exists bool) {
	c.zset().Add(member, score)
	if !exists {
		c.Len++
	}
	m.s.changed(c, exists)
}

func (m *memEngine) zRem(c *Coll, member []byte) bool {
	if _, ok := c.zset().Remove(member); !ok {
		return false
	}
	c.Len--
	m.s.changed(c, false)
	return true
}

func (m *memEngine) zRangeElems(c *Coll, r ZRange, fn func(e *Elem) bool) {
	var out Elem
	each := func(s object.Scored) bool {
		out.Member, out.Value, out.Score = bytesOf(s.Member), nil, s.Score
		return fn(&out)
	}
	z := c.zset()
	offset, count := window(r)
	switch r.Kind {
	case ZByRank:
		z.RangeByRank(int(clampIndex(r.Start)), int(clampIndex(r.Stop)), r.Rev, each)
	case ZByScore:
		z.RangeByScore(scoreRange(r), r.Rev, offset, count, each)
	default:
		z.RangeByLex(lexRange(r), r.Rev, offset, count, each)
	}
}

func (m *memEngine) zCount(c *Coll, r ZRange) int64 {
	switch r.Kind {
	case ZByScore:
		return int64(c.zset().CountByScore(scoreRange(r)))
	case ZByLex:
		return int64(c.zset().CountByLex(lexRange(r)))
	}
	return r.Stop - r.Start + 1
}

func (m *memEngine) zDeleteRange(c *Coll, r ZRange) int64 {
	z := c.zset()
	var n int
	switch r.Kind {
	case ZByRank:
		if r.Stop < r.Start {
			return 0
		}
		n = z.RemoveRangeByRank(int(clampIndex(r.Start)), int(clampIndex(r.Stop)))
	case ZByScore:
		n = z.RemoveRangeByScore(scoreRange(r))
	default:
		n = z.RemoveRangeByLex(lexRange(r))
	}
	if n > 0 {
		c.Len -= int64(n)
		m.s.changed(c, false)
	}
	return int64(n)
}

func (m *memEngine) zPop(c *Coll, n int64, max bool) []Elem {
	popped := c.zset().Pop(int(min(n, math.MaxInt32)), max)
	if len(popped) == 0 {
		return nil
	}
	out := make([]Elem, len(popped))
	for i, s := range popped {
		out[i] = Elem{Member: []byte(s.Member), Score: s.Score}
	}
	c.Len -= int64(len(out))
	m.s.changed(c, false)
	return out
}
