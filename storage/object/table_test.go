package object

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// checkTable holds the table's invariants against the model (names by
// H): every element once, the slots sorted by (H, Name) across shards in
// directory order, each element at or after its home with no empty slot
// between, counts right, and every name found by find.
func checkTable(t *testing.T, tb *table, model map[string]int64) {
	t.Helper()
	var got []slot
	total := 0
	tb.eachShard(func(s *tshard) {
		n := 0
		for i, sl := range s.slots {
			if sl.p == nil {
				continue
			}
			n++
			if sl.h != sl.p.H {
				t.Fatalf("slot %d holds h %d for a node of H %d", i, sl.h, sl.p.H)
			}
			for j := s.home(sl.h); j < i; j++ {
				if s.slots[j].p == nil {
					t.Fatalf("slot %d empty between %q's home %d and its slot %d", j, sl.p.Name, s.home(sl.h), i)
				}
			}
		}
		if n != s.n {
			t.Fatalf("a shard counts %d elements, holds %d", s.n, n)
		}
		total += n
		got = s.elems(got)
	})
	if total != tb.n || total != len(model) {
		t.Fatalf("table counts %d, holds %d, model %d", tb.n, total, len(model))
	}
	if !slices.IsSortedFunc(got, func(a, b slot) int {
		if c := cmp.Compare(a.h, b.h); c != 0 {
			return c
		}
		return strings.Compare(a.p.Name, b.p.Name)
	}) {
		t.Fatal("slots out of storage order")
	}
	for name, h := range model {
		if p := tb.get(h, name); p == nil || p.Name != name {
			t.Fatalf("%q not found", name)
		}
	}
}

// A table changed at random past several splits and back (inserts,
// removals, lookups of absent names), checked against a model after each
// phase; ascend from random cursors gives exactly the model's elements of
// H at least the cursor, in order.
func TestTableModel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names int
		hash  func(i int) int64
	}{
		{"uniform", 40000, func(i int) int64 { return Hash(fmt.Appendf(nil, "f%d", i)) }},
		// Hs that share their top 20 bits: every split puts them all on one
		// side, so a shard grows past tshardMax (its homes crowd into a
		// sixteenth of it: a long run per insert, so fewer names).
		{"crafted", 8000, func(i int) int64 { return 0x5a5a5<<43 | Hash(fmt.Appendf(nil, "f%d", i))>>20 }},
		// Runs of equal Hs, ordered by name.
		{"collisions", 40000, func(i int) int64 { return Hash(fmt.Appendf(nil, "f%d", i/7)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 9))
			model := map[string]int64{}
			tb := newTable(nil)
			// change adds name i (add) or removes it, checking find
			// against the model first.
			change := func(i int, add bool) {
				name := fmt.Sprintf("f%d", i)
				h := tc.hash(i)
				s, at, ok := tb.find(h, name)
				if _, in := model[name]; ok != in {
					t.Fatalf("find(%q) = %v, model %v", name, ok, in)
				}
				switch {
				case add && !ok:
					tb.insert(s, at, &node{Elem: Elem{H: h, Name: name}})
					model[name] = h
				case !add && ok:
					tb.remove(s, at)
					delete(model, name)
				}
			}
			add := func(i int) { change(i, true) }
			del := func(i int) { change(i, false) }
			for range tc.names * 3 / 4 {
				add(rng.IntN(tc.names))
			}
			checkTable(t, tb, model)
			if tc.name == "uniform" && tb.depth < 2 {
				t.Fatalf("%d elements left the directory at depth %d: no splits tested", len(model), tb.depth)
			}
			biggest := 0
			tb.eachShard(func(s *tshard) { biggest = max(biggest, s.base) })
			if tc.name == "crafted" && biggest <= tshardMax {
				t.Fatalf("crafted Hs left no shard past %d slots (the biggest has %d)", tshardMax, biggest)
			}
			if tb.depth > tdepthMax {
				t.Fatalf("directory depth %d past %d", tb.depth, tdepthMax)
			}
			for range 3 {
				from := rng.Int64()
				var want []string
				for name, h := range model {
					if h >= from {
						want = append(want, name)
					}
				}
				var got []string
				tb.ascend(from, func(p *node) bool { got = append(got, p.Name); return true })
				slices.Sort(want)
				sorted := slices.Clone(got)
				slices.Sort(sorted)
				if !slices.Equal(sorted, want) {
					t.Fatalf("ascend(%d): %d elements, want %d", from, len(got), len(want))
				}
			}
			for range tc.names * 3 / 2 {
				if rng.IntN(4) == 0 {
					add(rng.IntN(tc.names))
				} else {
					del(rng.IntN(tc.names))
				}
			}
			checkTable(t, tb, model)
			for i := range tc.names {
				del(i)
			}
			checkTable(t, tb, model)
		})
	}
}

// pick chooses every element with the same odds, however uneven the
// shards: 200 000 picks of 3 000 elements across split shards, each
// element's count within 6 standard deviations of the mean.
func TestTablePickUniform(t *testing.T) {
	var els []slot
	for i := range 3000 {
		name := fmt.Sprintf("m%d", i)
		els = append(els, slot{Hash([]byte(name)), &node{Elem: Elem{H: Hash([]byte(name)), Name: name}}})
	}
	slices.SortFunc(els, func(a, b slot) int { return cmp.Compare(a.h, b.h) })
	tb := newTable(nil)
	for _, sl := range els {
		s, i, _ := tb.find(sl.h, sl.p.Name)
		tb.insert(s, i, sl.p)
	}
	if tb.depth == 0 {
		t.Fatal("one shard: the test needs shards of different sizes")
	}
	counts := map[string]int{}
	const picks = 200000
	for range picks {
		p := tb.pick(1000, func(*node) bool { return true })
		if p == nil {
			t.Fatal("no pick in 1 000 tries")
		}
		counts[p.Name]++
	}
	mean := float64(picks) / 3000
	for name, c := range counts {
		if d := float64(c) - mean; d*d > 36*mean {
			t.Fatalf("%q picked %d times, mean %.0f", name, c, mean)
		}
	}
	if len(counts) != 3000 {
		t.Fatalf("%d of 3000 elements ever picked", len(counts))
	}
}

// eachShard calls fn with every shard once, in order.
func (t *table) eachShard(fn func(s *tshard)) {
	for d := 0; d < len(t.dir); {
		s := t.dir[d]
		fn(s)
		d += 1 << (t.depth - s.depth)
	}
}
