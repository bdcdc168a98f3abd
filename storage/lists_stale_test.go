package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// Pops from cached lists leave stale rows for the write-back (lists.go).
// Random list commands, pops among them, on a few keys, with flushes
// flying while they go on, checked against a model (every few steps as a
// whole, and by LINDEX of a random index): every command sees the list as
// it should whatever is stale, savepoints undone bring the popped elements
// back, and once all is committed no stale row and no blob of a popped
// element is left.
func TestListStaleRowsMatchModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { listModelRun(t, seed) })
	}
}

func listModelRun(t *testing.T, seed uint64) {
	s := openTest(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	keys := []string{"a", "b", "c"}
	model := map[string][][]byte{}
	val := func() []byte {
		if rng.IntN(8) == 0 { // a large value: a blob
			return bytes.Repeat([]byte{byte('A' + rng.IntN(26))}, 901+rng.IntN(100))
		}
		return []byte{byte('a' + rng.IntN(4))}
	}
	set := func(k string, l [][]byte) {
		if len(l) == 0 {
			delete(model, k)
		} else {
			model[k] = l
		}
	}
	check := func(step int, what string) {
		t.Helper()
		for _, k := range keys {
			var got [][]byte
			_, err := s.ListRange(0, []byte(k), 0, -1, func(int64) {}, func(v []byte) { got = append(got, bytes.Clone(v)) })
			must(t, err)
			if !slices.EqualFunc(got, model[k], bytes.Equal) {
				t.Fatalf("step %d (%s): list %s is %q, want %q", step, what, k, got, model[k])
			}
		}
	}
	var saved map[string][][]byte
	var fl flyer
	must(t, s.Begin())
	for step := 0; step < 1500; step++ {
		k := keys[rng.IntN(len(keys))]
		key := []byte(k)
		l := model[k]
		var what string
		switch op := rng.IntN(14); {
		case op < 3:
			v := val()
			end := End(rng.IntN(2))
			what = fmt.Sprintf("push %d", end)
			_, err := s.ListPush(0, key, end, [][]byte{v}, false)
			must(t, err)
			if end == Left {
				set(k, append([][]byte{v}, l...))
			} else {
				set(k, append(slices.Clone(l), v))
			}
		case op < 7:
			end := End(rng.IntN(2))
			n := int64(1)
			if rng.IntN(4) == 0 {
				n = int64(1 + rng.IntN(3))
			}
			what = fmt.Sprintf("pop %d %d", end, n)
			got, err := s.ListPop(0, key, end, n)
			must(t, err)
			n = min(n, int64(len(l)))
			var want [][]byte
			rest := slices.Clone(l)
			for range n {
				if end == Left {
					want, rest = append(want, rest[0]), rest[1:]
				} else {
					want, rest = append(want, rest[len(rest)-1]), rest[:len(rest)-1]
				}
			}
			if !slices.EqualFunc(got, want, bytes.Equal) {
				t.Fatalf("step %d: %s popped %q, want %q", step, what, got, want)
			}
			set(k, rest)
		case op == 7 && len(l) > 0:
			i := rng.IntN(len(l))
			v := val()
			what = "lset"
			must(t, s.ListSet(0, key, int64(i), v))
			l = slices.Clone(l)
			l[i] = v
			set(k, l)
		case op == 8 && len(l) > 0:
			pivot := l[rng.IntN(len(l))]
			v := val()
			before := rng.IntN(2) == 0
			what = "linsert"
			_, err := s.ListInsert(0, key, before, pivot, v)
			must(t, err)
			i := slices.IndexFunc(l, func(x []byte) bool { return bytes.Equal(x, pivot) })
			if !before {
				i++
			}
			set(k, slices.Insert(slices.Clone(l), i, v))
		case op == 9:
			v := []byte{byte('a' + rng.IntN(4))}
			what = "lrem"
			_, err := s.ListRem(0, key, 0, v)
			must(t, err)
			set(k, slices.DeleteFunc(slices.Clone(l), func(x []byte) bool { return bytes.Equal(x, v) }))
		case op == 10 && len(l) > 0:
			start, stop := rng.IntN(2), len(l)-1-rng.IntN(2)
			what = fmt.Sprintf("ltrim %d %d of %d", start, stop, len(l))
			must(t, s.ListTrim(0, key, int64(start), int64(stop)))
			if stop < 0 {
				stop += len(l) // as Redis counts a negative index
			}
			if start > stop {
				set(k, nil)
			} else {
				set(k, slices.Clone(l[start:stop+1]))
			}
		case op == 11:
			other := keys[(slices.Index(keys, k)+1+rng.IntN(len(keys)-1))%len(keys)]
			what = "copy " + other
			ok, err := s.Copy(0, key, 0, []byte(other), true)
			must(t, err)
			if ok != (len(l) > 0) {
				t.Fatalf("step %d: COPY %s %s: %v", step, k, other, ok)
			}
			if ok {
				set(other, slices.Clone(l))
			}
		case op == 12 && rng.IntN(2) == 0:
			what = "flush"
			must(t, s.EndCommand())
			if fl.start(t, s, step) {
				saved = nil // the flush commits the transaction: no savepoint is left
			}
		case op == 12:
			what = "commit"
			must(t, s.EndCommand())
			fl.land(t, s, step)
			_, _, err := s.Commit()
			must(t, err)
			must(t, s.Begin())
			saved = nil
		default:
			must(t, s.EndCommand())
			fl.land(t, s, step)
			if saved == nil {
				what = "savepoint"
				must(t, s.Savepoint())
				saved = map[string][][]byte{}
				for k, l := range model {
					saved[k] = slices.Clone(l)
				}
			} else {
				what = "undo"
				if !s.Undo() {
					t.Fatal("undo refused")
				}
				model, saved = saved, nil
			}
		}
		must(t, s.EndCommand())
		if l := model[k]; len(l) > 0 {
			i := rng.IntN(len(l))
			got, ok, err := s.ListIndex(0, key, int64(i), nil)
			must(t, err)
			if !ok || !bytes.Equal(got, l[i]) {
				t.Fatalf("step %d (%s): LINDEX %s %d is %q %v, want %q", step, what, k, i, got, ok, l[i])
			}
		}
		if rng.IntN(4) == 0 {
			check(step, what) // a range read writes the pending items
		}
	}
	fl.land(t, s, 1500)
	check(1500, "the end")
	_, _, err := s.Commit()
	must(t, err)
	// Nothing stale is left: the rows are the lists' elements, and the
	// blobs their large values.
	var rows, large int64
	for _, l := range model {
		rows += int64(len(l))
		for _, v := range l {
			if len(v) > inlineBudget {
				large++
			}
		}
	}
	st, err := s.c.prepare("SELECT count(*) FROM list_items")
	must(t, err)
	defer st.close()
	if _, err := st.step(); err != nil {
		t.Fatal(err)
	}
	if n := st.colInt(0); n != rows {
		t.Fatalf("%d rows in list_items after the commit, the lists hold %d", n, rows)
	}
	st.reset()
	if n := blobCount(t, s); n != large {
		t.Fatalf("%d blobs after the commit, the lists hold %d large values", n, large)
	}
}
