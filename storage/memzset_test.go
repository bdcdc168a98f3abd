package storage

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cellar-db/cellar/storage/object"
)

// zsetOrder sorts a model's members as Redis does: score, then bytes.
func zsetOrder(model map[string]float64) []object.Scored {
	out := make([]object.Scored, 0, len(model))
	for m, s := range model {
		out = append(out, object.Scored{Member: m, Score: s})
	}
	slices.SortFunc(out, func(a, b object.Scored) int {
		return cmp.Or(cmp.Compare(a.Score, b.Score), strings.Compare(a.Member, b.Member))
	})
	return out
}

// A sorted set changed at random — members added, rescored and removed,
// ranges removed by rank, score and member, pops from both ends — frozen
// at random points and flushed later (the Delta is written while the set
// goes on changing), is after every flush what the model was at the last
// Freeze: in SQLite's rows, in Redis's order (score, member), and loaded back
// whole (its order, ranks and ZSCORE). A set loaded back is sometimes
// changed further in place of the one in memory, as after an eviction.
func TestZSetFlushAndLoad(t *testing.T) {
	w, r := memConns(t)
	for _, tc := range []struct {
		name    string
		members int
		steps   int
	}{{"small", 60, 3000}, {"large", 700, 5000}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, uint64(tc.members)))
			id := int64(1000 + tc.members)
			names := []string{"", "\x00", "a", "a\x00", "B", "\xff"}
			for i := 0; len(names) < tc.members; i++ {
				names = append(names, fmt.Sprintf("m%d", i))
			}
			scores := []float64{math.Inf(-1), -1.5, math.Copysign(0, -1), 0, 0.25, 2, 1e300, math.Inf(1), 3, 4, 5, 6}
			z := object.NewZSet()
			model := map[string]float64{}
			type frozen struct {
				d    *object.Delta
				want []object.Scored
			}
			var pending []frozen
			changed := false // z changed since the last Freeze
			flushes, reloads, most := 0, 0, 0
			check := func(want []object.Scored) {
				t.Helper()
				st := r.q("SELECT h, member, score FROM zsets WHERE id = ?1 ORDER BY score, member")
				st.int(1, id)
				var rows []object.Scored
				for {
					row, err := st.step()
					if err != nil {
						st.reset()
						t.Fatal(err)
					}
					if !row {
						break
					}
					m, s := string(st.colBlob(1, nil)), st.colFloat(2)
					if h := st.colInt(0); h != object.Hash([]byte(m)) {
						st.reset()
						t.Fatalf("row %q has h %d", m, h)
					}
					if s == 0 && math.Signbit(s) {
						st.reset()
						t.Fatalf("row %q stores -0", m)
					}
					rows = append(rows, object.Scored{Member: m, Score: s})
				}
				st.reset()
				if !slices.Equal(rows, want) && len(rows)+len(want) > 0 {
					t.Fatalf("SQLite holds %d rows, want %d:\n%v\n%v", len(rows), len(want), rows, want)
				}
				loaded, err := loadElems(r, zsetTable, id)
				if err != nil {
					t.Fatal(err)
				}
				l := object.LoadedZSet(loaded)
				if l.Changed() {
					t.Fatal("a loaded set has changes to flush")
				}
				var got []object.Scored
				l.RangeByRank(0, -1, false, func(s object.Scored) bool {
					got = append(got, s)
					return true
				})
				if !slices.Equal(got, want) && len(got)+len(want) > 0 {
					t.Fatalf("loaded %v, want %v", got, want)
				}
				for i, s := range want {
					score, ok := l.Score([]byte(s.Member))
					rank, _ := l.Rank([]byte(s.Member), false)
					if !ok || score != s.Score || rank != i {
						t.Fatalf("loaded %q: score %v (%v), rank %d; want %v, %d", s.Member, score, ok, rank, s.Score, i)
					}
				}
				if !changed && len(pending) == 0 && rng.IntN(3) == 0 {
					z = l // evicted and loaded again
					reloads++
				}
			}
			// The first flush writes the whole set: a large one from the
			// Delta's snapshot of its tree.
			// freeze takes a Delta for a later flush; flush writes every
			// Delta taken, oldest first, in one transaction, and checks the
			// file against the model at the last Freeze.
			freeze := func() {
				pending = append(pending, frozen{z.Freeze(), zsetOrder(model)})
				changed = false
			}
			flush := func() {
				t.Helper()
				flushTx(t, w, func() error {
					for _, f := range pending {
						if err := flushElems(w, zsetTable, id, f.d); err != nil {
							return err
						}
					}
					return nil
				})
				want := pending[len(pending)-1].want
				pending = nil
				flushes++
				check(want)
			}
			add := func() {
				m, s := names[rng.IntN(len(names))], scores[rng.IntN(len(scores))]
				z.Add([]byte(m), s)
				if s == 0 {
					s = 0 // the sign of -0 is dropped
				}
				if old, ok := model[m]; !ok || old != s {
					changed = true
				}
				model[m] = s
			}
			for range tc.members / 2 {
				add()
			}
			for step := 0; step < tc.steps; step++ {
				order := zsetOrder(model)
				switch n := rng.IntN(100); {
				case n < 60:
					add()
				case n < 78:
					m := names[rng.IntN(len(names))]
					if _, ok := z.Remove([]byte(m)); ok {
						changed = true
					}
					delete(model, m)
				case n < 86:
					var gone []object.Scored
					switch rng.IntN(8) {
					case 0:
						start := rng.IntN(len(order)+4) - 3
						stop := start + rng.IntN(3)
						lo, hi := start, stop
						if lo < 0 {
							lo += len(order)
						}
						if hi < 0 {
							hi += len(order)
						}
						lo, hi = max(lo, 0), min(hi, len(order)-1)
						if lo <= hi {
							gone = order[lo : hi+1]
						}
						if got := z.RemoveRangeByRank(start, stop); got != len(gone) {
							t.Fatalf("RemoveRangeByRank(%d, %d) = %d, want %d", start, stop, got, len(gone))
						}
					case 1, 2:
						s := scores[rng.IntN(len(scores))]
						z.RemoveRangeByScore(object.ScoreRange{Min: object.ScoreBound{Value: s}, Max: object.ScoreBound{Value: s}})
						for _, o := range order {
							if o.Score == s {
								gone = append(gone, o)
							}
						}
					case 3:
						// Over mixed scores [m [m removes m and the run of
						// members at or below m that follows it (the object
						// tests check which): the model follows z.
						m := names[rng.IntN(len(names))]
						got := z.RemoveRangeByLex(object.LexRange{
							Min: object.LexBound{Kind: object.LexIncl, Member: []byte(m)},
							Max: object.LexBound{Kind: object.LexIncl, Member: []byte(m)},
						})
						for _, o := range order {
							if _, ok := z.Score([]byte(o.Member)); !ok {
								gone = append(gone, o)
							}
						}
						if got != len(gone) || (got > 0 && gone[0].Member != m) {
							t.Fatalf("RemoveRangeByLex [%q [%q = %d, removed %v", m, m, got, gone)
						}
					default:
						k, top := rng.IntN(4), rng.IntN(2) == 0
						popped := z.Pop(k, top)
						gone = order[:min(k, len(order))]
						if top {
							gone = slices.Clone(order[len(order)-min(k, len(order)):])
							slices.Reverse(gone)
						}
						if !slices.Equal(popped, gone) && len(popped)+len(gone) > 0 {
							t.Fatalf("Pop(%d, %v) = %v, want %v", k, top, popped, gone)
						}
					}
					for _, o := range gone {
						delete(model, o.Member)
					}
					changed = changed || len(gone) > 0
				case n < 95:
					freeze()
				default:
					if rng.IntN(2) == 0 {
						freeze()
					}
					if len(pending) > 0 {
						flush()
					}
				}
				if z.Len() != len(model) {
					t.Fatalf("step %d: Len %d, model %d", step, z.Len(), len(model))
				}
				most = max(most, len(model))
			}
			if flushes < 20 || reloads < 3 || (tc.members > 2*object.SmallMax) != (most > object.SmallMax) {
				t.Fatalf("%d flushes, %d reloads, %d members at most: the test lost its reach", flushes, reloads, most)
			}
			freeze()
			flush()
			for _, m := range slices.Sorted(maps.Keys(model)) {
				if s, ok := z.Score([]byte(m)); !ok || s != model[m] {
					t.Fatalf("ZSCORE %q = %v (%v), model %v", m, s, ok, model[m])
				}
			}
		})
	}
}
