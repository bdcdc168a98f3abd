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

// ZUNION numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX]
// [WITHSCORES], ZINTER (the same), ZDIFF numkeys key [key ...]
// [WITHSCORES], their STORE forms (destination first, no WITHSCORES) and
// ZINTERCARD numkeys key [key ...] [LIMIT limit].
func cmdZSetOp(c *Ctx) error {
	name := c.cmd.Name
	store := name == "zunionstore" || name == "zinterstore" || name == "zdiffstore"
	card := name == "zintercard"
	diff := name == "zdiff" || name == "zdiffstore"
	inter := name == "zinter" || name == "zinterstore" || card
	numIdx := 1
	if store {
		numIdx = 2
	}
	n, err := c.intArg(numIdx)
	if err != nil {
		return err
	}
	if n < 1 {
		return errAtLeastOneKey(name)
	}
	if n > int64(len(c.args)-numIdx-1) {
		return ErrSyntax
	}
	srcs := make([]zsrc, n)
	for i := range srcs {
		coll, err := c.st.OpenAnyColl(c.db, c.args[numIdx+1+i], storage.TypeZSet, storage.TypeSet)
		if err != nil {
			return err
		}
		srcs[i] = zsrc{coll: coll, weight: 1}
	}
	agg, withScores, limit := aggSum, false, int64(0)
	for j := numIdx + 1 + int(n); j < len(c.args); {
		left := len(c.args) - j
		switch {
		case !diff && !card && left >= int(n)+1 && c.argEq(j, "weights"):
			for i := range srcs {
				w, ok := parseScore(c.args[j+1+i])
				if !ok {
					return ErrWeightNotFloat
				}
				srcs[i].weight = w
			}
			j += int(n) + 1
		case !diff && !card && left >= 2 && c.argEq(j, "aggregate"):
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
		case !store && !card && c.argEq(j, "withscores"):
			withScores = true
			j++
		case card && left >= 2 && c.argEq(j, "limit"):
			v, ok := parseIntOK(c.args[j+1])
			if !ok || v < 0 {
				return ErrLimitNegative
			}
			limit = v
			j += 2
		default:
			return ErrSyntax
		}
	}
	var es []storage.Elem
	switch {
	case diff:
		es, err = zdiff(c, srcs)
	case inter:
		es, err = zinter(c, srcs, agg, limit, card)
	default:
		es, err = zunion(c, srcs, agg)
	}
	if err != nil {
		return err
	}
	if card {
		c.w.Int(int64(len(es)))
		return nil
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
// With countOnly it stops after limit members (limit 0: no limit).
func zinter(c *Ctx, srcs []zsrc, agg int, limit int64, countOnly bool) ([]storage.Elem, error) {
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
			if countOnly && limit > 0 && int64(len(out)) >= limit {
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
