package actor

import (
	"bytes"
	"math"
	"sort"

	"github.com/cellar-db/cellar/storage"
)

// The set algebra of sorted sets: ZUNION, ZINTER, ZDIFF, their STORE
// forms and ZINTERCARD. Their inputs may be sets as well as sorted sets (a
// set's members score 1); the results are sorted as a sorted set's range
// would be.

// Aggregations of ZUNION and ZINTER.
const (
	aggSum = iota
	aggMin
	aggMax
)

// zsrc is one input of a sorted-set operation: a sorted set or a set (its
// members score 1), nil when the key is missing.
type zsrc struct {
	coll   *storage.Coll
	weight float64
}

func (s *zsrc) size() int64 {
	if s.coll == nil {
		return 0
	}
	return s.coll.Len
}

// score looks member up in s: its weighted score, and whether it is
// there. Like Redis's ZINTER, it leaves a NaN product for aggregate.
func (s *zsrc) score(c *Ctx, member []byte) (float64, bool, error) {
	if s.coll == nil {
		return 0, false, nil
	}
	if s.coll.Type == storage.TypeSet {
		ok, err := c.st.SetHas(s.coll, member)
		return s.weight * 1, ok, err
	}
	v, ok, err := c.st.ZScore(s.coll, member)
	return s.weight * v, ok, err
}

// weigh multiplies a score by a weight, NaN (0 × inf) counting as 0 as in
// Redis.
func weigh(w, v float64) float64 {
	if r := w * v; !math.IsNaN(r) {
		return r
	}
	return 0
}

// aggregate folds b into a as Redis's zunionInterAggregate does, C
// comparisons included: a NaN b (a weight of ±inf times a score of 0)
// leaves MIN and MAX unchanged and makes SUM 0.
func aggregate(agg int, a, b float64) float64 {
	switch agg {
	case aggMin:
		if b < a {
			return b
		}
		return a
	case aggMax:
		if b > a {
			return b
		}
		return a
	}
	if r := a + b; !math.IsNaN(r) {
		return r
	}
	return 0
}

// zsetOp is how ZUNION, ZINTER or ZDIFF (and its STORE form) combines its
// inputs; a weighted one takes WEIGHTS and AGGREGATE.
type zsetOp struct {
	combine  func(c *Ctx, srcs []zsrc, agg int) ([]storage.Elem, error)
	weighted bool
}

var (
	zunionOp = zsetOp{combine: zunion, weighted: true}
	zinterOp = zsetOp{combine: func(c *Ctx, srcs []zsrc, agg int) ([]storage.Elem, error) {
		return zinter(c, srcs, agg, 0)
	}, weighted: true}
	zdiffOp = zsetOp{combine: func(c *Ctx, srcs []zsrc, _ int) ([]storage.Elem, error) {
		return zdiff(c, srcs)
	}}
)

// zsetInputs opens the inputs that numkeys at args[at] counts, and returns
// them with the index of the argument after them.
func zsetInputs(c *Ctx, at int) (srcs []zsrc, next int, err error) {
	n, err := c.intArg(at)
	if err != nil {
		return nil, 0, err
	}
	if n < 1 {
		return nil, 0, errAtLeastOneKey(c.cmd.Name)
	}
	if n > int64(len(c.args)-at-1) {
		return nil, 0, ErrSyntax
	}
	srcs = make([]zsrc, n)
	for i := range srcs {
		coll, err := c.readColl(c.args[at+1+i], storage.TypeZSet, storage.TypeSet)
		if err != nil {
			return nil, 0, err
		}
		srcs[i] = zsrc{coll: coll, weight: 1}
	}
	return srcs, at + 1 + int(n), nil
}

// ZUNION numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX]
// [WITHSCORES], ZINTER (the same), ZDIFF numkeys key [key ...]
// [WITHSCORES], and their STORE forms (store: destination first, no
// WITHSCORES).
func cmdZSetOp(op zsetOp, store bool) Handler {
	return func(c *Ctx) error {
		at := 1
		if store {
			at = 2
		}
		srcs, j, err := zsetInputs(c, at)
		if err != nil {
			return err
		}
		agg, withScores, n := aggSum, false, len(srcs)
		for j < len(c.args) {
			left := len(c.args) - j
			switch {
			case op.weighted && left >= n+1 && c.argEq(j, "weights"):
				for i := range srcs {
					w, ok := parseScore(c.args[j+1+i])
					if !ok {
						return ErrWeightNotFloat
					}
					srcs[i].weight = w
				}
				j += n + 1
			case op.weighted && left >= 2 && c.argEq(j, "aggregate"):
				switch {
				case c.argEq(j+1, "sum"):
					agg = aggSum
				case c.argEq(j+1, "min"):
					agg = aggMin
				case c.argEq(j+1, "max"):
					agg = aggMax
				default:
					return ErrSyntax
				}
				j += 2
			case !store && c.argEq(j, "withscores"):
				withScores = true
				j++
			default:
				return ErrSyntax
			}
		}
		es, err := op.combine(c, srcs, agg)
		if err != nil {
			return err
		}
		sort.Slice(es, func(i, j int) bool {
			if es[i].Score != es[j].Score {
				return es[i].Score < es[j].Score
			}
			return bytes.Compare(es[i].Member, es[j].Member) < 0
		})
		if store {
			return storeZSet(c, c.args[1], es)
		}
		writeScored(c, es, withScores)
		return nil
	}
}

// ZINTERCARD numkeys key [key ...] [LIMIT limit]
func cmdZInterCard(c *Ctx) error {
	srcs, j, err := zsetInputs(c, 1)
	if err != nil {
		return err
	}
	limit := int64(0)
	for ; j < len(c.args); j += 2 {
		if len(c.args)-j < 2 || !c.argEq(j, "limit") {
			return ErrSyntax
		}
		v, ok := parseIntOK(c.args[j+1])
		if !ok || v < 0 {
			return ErrLimitNegative
		}
		limit = v
	}
	es, err := zinter(c, srcs, aggSum, limit)
	if err != nil {
		return err
	}
	c.w.Int(int64(len(es)))
	return nil
}

// bySize orders inputs smallest first, as Redis does before combining them
// (which also fixes the order scores are added in).
func bySize(srcs []zsrc) []zsrc {
	sorted := append([]zsrc(nil), srcs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].size() < sorted[j].size() })
	return sorted
}

// elems reads every member of s with its weighted score.
func (s *zsrc) elems(c *Ctx) ([]storage.Elem, error) {
	if s.coll == nil {
		return nil, nil
	}
	es, err := c.st.AllElements(s.coll)
	for i := range es {
		v := es[i].Score
		if s.coll.Type == storage.TypeSet {
			v = 1
		}
		es[i].Score = weigh(s.weight, v)
	}
	return es, err
}

// zinter walks the smallest input and looks each member up in the others.
// It stops after limit members (ZINTERCARD's LIMIT; 0: no limit).
func zinter(c *Ctx, srcs []zsrc, agg int, limit int64) ([]storage.Elem, error) {
	srcs = bySize(srcs)
	if srcs[0].size() == 0 {
		return nil, nil
	}
	cand, err := srcs[0].elems(c)
	if err != nil {
		return nil, err
	}
	out := cand[:0]
	for _, e := range cand {
		score, in := e.Score, true
		for i := 1; i < len(srcs) && in; i++ {
			v, ok, err := srcs[i].score(c, e.Member)
			if err != nil {
				return nil, err
			}
			if in = ok; ok {
				score = aggregate(agg, score, v)
			}
		}
		if in {
			out = append(out, storage.Elem{Member: e.Member, Score: score})
			if limit > 0 && int64(len(out)) >= limit {
				break
			}
		}
	}
	return out, nil
}

// zunion accumulates every input, smallest first.
func zunion(c *Ctx, srcs []zsrc, agg int) ([]storage.Elem, error) {
	var out []storage.Elem
	at := map[string]int{}
	for _, s := range bySize(srcs) {
		es, err := s.elems(c)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if i, ok := at[string(e.Member)]; ok {
				out[i].Score = aggregate(agg, out[i].Score, e.Score)
				continue
			}
			at[string(e.Member)] = len(out)
			out = append(out, e)
		}
	}
	return out, nil
}

// zdiff keeps the members of the first input that no other input has,
// with their scores in the first.
func zdiff(c *Ctx, srcs []zsrc) ([]storage.Elem, error) {
	first := srcs[0]
	first.weight = 1
	cand, err := first.elems(c)
	if err != nil {
		return nil, err
	}
	out := cand[:0]
	for _, e := range cand {
		in := false
		for i := 1; i < len(srcs) && !in; i++ {
			if srcs[i].coll != nil && srcs[i].coll.ID == first.coll.ID {
				in = true
				break
			}
			_, ok, err := srcs[i].score(c, e.Member)
			if err != nil {
				return nil, err
			}
			in = ok
		}
		if !in {
			out = append(out, e)
		}
	}
	return out, nil
}
