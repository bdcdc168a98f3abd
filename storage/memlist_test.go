package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cellar-db/cellar/storage/object"
)

// listRows reads how many rows list id has, its lowest and highest
// positions, and how many blobs and garbage refs exist that no row of any
// list holds.
func listRows(t *testing.T, r *sqlc, id int64) (n, lo, hi, strayBlobs, garbage int64) {
	t.Helper()
	st := r.q(`SELECT count(*), coalesce(min(pos), 0), coalesce(max(pos), -1),
		(SELECT count(*) FROM blobs WHERE ref NOT IN (SELECT value FROM list_items WHERE typeof(value) = 'integer')),
		(SELECT count(*) FROM blob_garbage)
		FROM list_items WHERE id = ?1`)
	st.int(1, id)
	if _, err := st.step(); err != nil {
		t.Fatal(err)
	}
	n, lo, hi, strayBlobs, garbage = st.colInt(0), st.colInt(1), st.colInt(2), st.colInt(3), st.colInt(4)
	st.reset()
	return n, lo, hi, strayBlobs, garbage
}

// A list changed at random at both ends and in the middle, frozen and
// flushed at random points, loads back as the model says after every
// flush, at contiguous positions, with values inline and in blobs, and no
// blob outlives its row.
func TestListFlushAndLoad(t *testing.T) {
	w, r := memConns(t)
	for _, tc := range []struct {
		name    string
		id      int64
		initial int
		large   bool
	}{{"inline", 1, 0, false}, {"blobs", 2, 0, true}, {"long", 3, 1000, true}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.id), 9))
			seq := 0
			val := func() []byte {
				seq++
				if tc.large && rng.IntN(3) == 0 {
					return bytes.Repeat([]byte{byte('a' + seq%26)}, 2000)
				}
				return []byte(fmt.Sprintf("v%d", rng.IntN(10)))
			}
			l := object.NewList()
			var model [][]byte
			for range tc.initial {
				v := val()
				l.Push(object.Right, v)
				model = append(model, v)
			}
			check := func() {
				t.Helper()
				got, err := loadList(r, tc.id)
				if err != nil {
					t.Fatal(err)
				}
				var items [][]byte
				got.Ascend(0, func(i int, v []byte) bool { items = append(items, v); return true })
				if !slices.EqualFunc(items, model, bytes.Equal) {
					t.Fatalf("loaded %d items, the model has %d: %.40q, want %.40q", len(items), len(model), items, model)
				}
				n, lo, hi, stray, garbage := listRows(t, r, tc.id)
				if n != int64(len(model)) || hi-lo+1 != n {
					t.Fatalf("%d rows at positions %d..%d, want %d contiguous", n, lo, hi, len(model))
				}
				if stray != 0 || garbage != 0 {
					t.Fatalf("%d blobs and %d garbage refs outlive their rows", stray, garbage)
				}
			}
			for step := 0; step < 3000; step++ {
				switch n := rng.IntN(100); {
				case n < 25:
					end, v := object.End(rng.IntN(2)), val()
					l.Push(end, v)
					if end == object.Left {
						model = slices.Insert(model, 0, v)
					} else {
						model = append(model, v)
					}
				case n < 45:
					end, k := object.End(rng.IntN(2)), rng.IntN(3)
					l.Pop(end, k)
					k = min(k, len(model))
					if end == object.Left {
						model = model[k:]
					} else {
						model = model[:len(model)-k]
					}
				case n < 55:
					if len(model) > 0 {
						i, v := rng.IntN(len(model)), val()
						l.Set(i, v)
						model[i] = v
					}
				case n < 65:
					pivot, v := []byte(fmt.Sprintf("v%d", rng.IntN(10))), val()
					if k := slices.IndexFunc(model, func(x []byte) bool { return bytes.Equal(x, pivot) }); k >= 0 {
						model = slices.Insert(model, k+1, v)
					}
					l.Insert(false, pivot, v)
				case n < 72:
					v := []byte(fmt.Sprintf("v%d", rng.IntN(10)))
					count := rng.IntN(5) - 2
					l.Rem(count, v)
					var drop []int
					for j := range model {
						i := j
						if count < 0 {
							i = len(model) - 1 - j
						}
						if bytes.Equal(model[i], v) && (count == 0 || len(drop) < max(count, -count)) {
							drop = append(drop, i)
						}
					}
					slices.Sort(drop)
					for k := len(drop) - 1; k >= 0; k-- {
						model = slices.Delete(model, drop[k], drop[k]+1)
					}
				case n < 74:
					start := rng.IntN(3)
					stop := -1 - rng.IntN(3)
					l.Trim(start, stop)
					if start > len(model)+stop {
						model = nil
					} else {
						model = model[start : len(model)+stop+1]
					}
				case n < 76:
					l.Rewrite()
				case n < 90:
					// Refill a short list, so that it does not stay empty.
					for len(model) < 30 && rng.IntN(6) > 0 {
						v := val()
						l.Push(object.Right, v)
						model = append(model, v)
					}
				default:
					if l.Len() != len(model) {
						t.Fatalf("step %d: %d items, the model has %d", step, l.Len(), len(model))
					}
					d := l.Freeze()
					flushTx(t, w, func() error { return flushList(w, tc.id, d) })
					check()
				}
			}
			flushTx(t, w, func() error { return flushList(w, tc.id, l.Freeze()) })
			check()
			flushTx(t, w, func() error { return dropList(w, tc.id) })
			model = nil
			check()
		})
	}
}

// A queue's flush writes the rows pushed and deletes the rows popped since
// the last one, whatever the list's length.
func TestListFlushQueue(t *testing.T) {
	w, r := memConns(t)
	const id, long, pushes, pops = 7, 20000, 40, 25
	l := object.NewList()
	for i := range long {
		l.Push(object.Right, []byte(fmt.Sprintf("item%d", i)))
	}
	flushTx(t, w, func() error { return flushList(w, id, l.Freeze()) })
	total := func() int64 {
		st := w.q("SELECT total_changes()")
		defer st.reset()
		if _, err := st.step(); err != nil {
			t.Fatal(err)
		}
		return st.colInt(0)
	}
	for round := range 3 {
		for i := range pushes {
			l.Push(object.Left, []byte(fmt.Sprintf("r%d-%d", round, i)))
		}
		l.Pop(object.Right, pops)
		d := l.Freeze()
		var written, deleted int64
		for _, run := range d.Put {
			written += int64(len(run.Vals))
		}
		for _, g := range d.Del {
			deleted += g.Hi - g.Lo + 1
		}
		if d.All || written != pushes || deleted != pops {
			t.Fatalf("round %d: the delta writes %d rows and deletes %d (all %v), want %d and %d", round, written, deleted, d.All, pushes, pops)
		}
		before := total()
		flushTx(t, w, func() error { return flushList(w, id, d) })
		if changed := total() - before; changed != pushes+pops {
			t.Fatalf("round %d: the flush changed %d rows, want %d", round, changed, pushes+pops)
		}
		got, err := loadList(r, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Len() != l.Len() {
			t.Fatalf("round %d: loaded %d items, want %d", round, got.Len(), l.Len())
		}
		for _, i := range []int{0, pushes - 1, pushes, l.Len() - 1} {
			a, _ := got.Index(i)
			b, _ := l.Index(i)
			if !bytes.Equal(a, b) {
				t.Fatalf("round %d: index %d loaded %q, want %q", round, i, a, b)
			}
		}
	}
}
