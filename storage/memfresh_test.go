package storage

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFreshIndexModel runs random adds (mostly past the last id, as new
// keys are; some in the middle and some repeating an id, as moved keys
// and collisions are), removals (present and absent) and ascents against
// a sorted slice, checking the chunks' shape after every step.
func TestFreshIndexModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := newFresh()
	var model []freshKey // sorted by id; equal ids in the order added
	next := int64(1)
	for step := 0; step < 200000; step++ {
		op := rng.IntN(10)
		if step >= 120000 && op < 6 && rng.IntN(4) > 0 {
			op = 7 // the second part mostly removes, so that chunks thin out and merge
		}
		switch {
		case op < 5 || len(model) == 0: // a new key
			k := freshKey{id: next, e: &entry{}}
			next += 1 + int64(rng.IntN(3))
			x.add(k)
			model = append(model, k)
		case op < 6: // an old id, or one shared with another entry
			k := freshKey{id: 1 + rng.Int64N(next), e: &entry{}}
			x.add(k)
			i, _ := slices.BinarySearchFunc(model, k.id+1, func(a freshKey, id int64) int { return cmpInt(a.id, id) })
			model = slices.Insert(model, i, k)
		case op < 9: // remove one held, the oldest often (a flush landing)
			i := 0
			if step >= 120000 || rng.IntN(2) == 0 {
				i = rng.IntN(len(model))
			}
			k := model[i]
			if !x.remove(k.id, k.e) {
				t.Fatalf("step %d: remove(%d) did not find an entry it holds", step, k.id)
			}
			model = slices.Delete(model, i, i+1)
		default: // remove one not held, under a held id
			k := model[rng.IntN(len(model))]
			if x.remove(k.id, &entry{}) {
				t.Fatalf("step %d: remove(%d) found an entry it does not hold", step, k.id)
			}
		}
		if step%97 == 0 {
			from := rng.Int64N(next + 1)
			limit := 1 + rng.IntN(300)
			var got []freshKey
			x.ascend(from, func(k freshKey) bool {
				got = append(got, k)
				return len(got) < limit
			})
			i, _ := slices.BinarySearchFunc(model, from, func(a freshKey, id int64) int { return cmpInt(a.id, id) })
			want := model[i:min(len(model), i+limit)]
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: ascend(%d) gave %d entries, want %d (or other entries)", step, from, len(got), len(want))
			}
			checkFreshShape(t, x, len(model))
		}
	}
	checkFreshShape(t, x, len(model))
	for len(model) > 0 {
		k := model[len(model)-1]
		if !x.removeAny(k.e) {
			t.Fatal("removeAny did not find an entry it holds")
		}
		model = model[:len(model)-1]
	}
	if x.len() != 0 || len(x.chunks) != 0 {
		t.Fatalf("emptied, the index still has %d entries in %d chunks", x.len(), len(x.chunks))
	}
}

func cmpInt(a, b int64) int { return int(max(min(a-b, 1), -1)) }

// checkFreshShape checks what every step keeps: n entries, no chunk empty
// or past freshChunk, no two neighbours both below a quarter (they would
// have been merged), ids ascending throughout.
func checkFreshShape(t *testing.T, x *freshIndex, n int) {
	t.Helper()
	count, last := 0, int64(-1)
	for ci, c := range x.chunks {
		if len(c) == 0 || len(c) > freshChunk {
			t.Fatalf("chunk %d has %d entries", ci, len(c))
		}
		if ci > 0 && len(c) < freshChunk/4 && len(x.chunks[ci-1]) < freshChunk/4 {
			t.Fatalf("chunks %d and %d have %d and %d entries, not merged", ci-1, ci, len(x.chunks[ci-1]), len(c))
		}
		for _, k := range c {
			if k.id < last {
				t.Fatalf("chunk %d: id %d after %d", ci, k.id, last)
			}
			last = k.id
		}
		count += len(c)
	}
	if count != n || x.len() != n {
		t.Fatalf("the chunks hold %d entries, len %d, want %d", count, x.len(), n)
	}
}

// TestFreshIndexFillsChunks: keys added in id order, as a bulk load of
// new keys adds them, fill every chunk but the last whole — what the index
// is for (a B-tree kept its nodes half full).
func TestFreshIndexFillsChunks(t *testing.T) {
	x := newFresh()
	const n = 100000
	for i := range n {
		x.add(freshKey{id: int64(i + 1), e: &entry{}})
	}
	if want := (n + freshChunk - 1) / freshChunk; len(x.chunks) != want {
		t.Fatalf("%d keys in %d chunks, want %d", n, len(x.chunks), want)
	}
	for ci, c := range x.chunks[:len(x.chunks)-1] {
		if len(c) != freshChunk || cap(c) != freshChunk {
			t.Fatalf("chunk %d: %d entries, capacity %d, want %d", ci, len(c), cap(c), freshChunk)
		}
	}
	// The oldest first, as flushes land: the index empties chunk by chunk.
	for i := range n {
		if !x.remove(int64(i+1), x.chunks[0][0].e) {
			t.Fatalf("key %d not found", i+1)
		}
	}
	if x.len() != 0 || len(x.chunks) != 0 {
		t.Fatalf("emptied, the index still has %d entries in %d chunks", x.len(), len(x.chunks))
	}
}
