package object

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// Elems changed at random — small, growing past SmallMax, large and split
// across the table's shards (table.go), names deleted and set again
// between Freezes, Rewrites — and each Delta applied to a copy of the
// rows as the flush applies it: after every Freeze the
// rows are the model, a Delta names each element once (never in both its
// puts and its Gone), and in storage order; Changed says whether a write
// came since the last Freeze (the flush freezes only what says so).
func TestElemsFreezeModel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		names  int
		loaded int // elements the set starts with, as loaded from rows
	}{{"small", 60, 0}, {"grows", 400, 100}, {"large", 2000, 1000}, {"split", 12000, 6000}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(tc.names)))
			model := map[string]string{}
			rows := map[string]string{}
			var loaded []Elem
			for i := range tc.loaded {
				name := fmt.Sprintf("f%d", i)
				loaded = append(loaded, Elem{H: Hash([]byte(name)), Name: name, Value: []byte("v0"), Ord: int64(i + 1)})
				model[name], rows[name] = "v0", "v0"
			}
			e := Loaded(loaded)
			wrote := tc.loaded == 0 // every row of a new set is to be written
			if wrote {
				e = NewElems()
			}
			freeze := func() {
				t.Helper()
				if e.Changed() != wrote {
					t.Fatalf("Changed() = %v after writes: %v", e.Changed(), wrote)
				}
				wrote = false
				d := e.Freeze()
				if d.All {
					clear(rows)
				}
				seen := map[string]bool{}
				var last Elem
				for i, el := range d.Gone {
					if seen[el.Name] || el.H != Hash([]byte(el.Name)) || i > 0 && compareStorage(last, el) >= 0 {
						t.Fatalf("Gone %q: listed twice, wrong h or out of order", el.Name)
					}
					seen[el.Name], last = true, el
					delete(rows, el.Name)
				}
				i := 0
				d.Each(func(el *Elem) error {
					if seen[el.Name] || el.H != Hash([]byte(el.Name)) || i > 0 && compareStorage(last, *el) >= 0 {
						t.Fatalf("put %q: listed twice, wrong h or out of order", el.Name)
					}
					seen[el.Name], last = true, *el
					rows[el.Name] = string(el.Value)
					i++
					return nil
				})
				if len(rows) != len(model) || e.Len() != len(model) {
					t.Fatalf("%d rows and Len %d, the model has %d", len(rows), e.Len(), len(model))
				}
				for name, v := range model {
					if rows[name] != v {
						t.Fatalf("row %q = %q, the model has %q", name, rows[name], v)
					}
				}
				if e.Changed() {
					t.Fatal("changed right after Freeze")
				}
			}
			for step := 0; step < 20000; step++ {
				name := fmt.Sprintf("f%d", rng.IntN(tc.names))
				switch n := rng.IntN(100); {
				case n < 55:
					v := fmt.Sprintf("v%d", step)
					_, had := model[name]
					if _, existed := e.Put(Elem{Name: name, Value: []byte(v)}); existed != had {
						t.Fatalf("Put(%q) replaced %v, the model %v", name, existed, had)
					}
					model[name], wrote = v, true
				case n < 95:
					_, had := model[name]
					if old, ok := e.Delete([]byte(name)); ok != had || ok && string(old.Value) != model[name] {
						t.Fatalf("Delete(%q) = %q, %v; the model %q, %v", name, old.Value, ok, model[name], had)
					}
					delete(model, name)
					wrote = wrote || had
				case n < 96:
					e.Rewrite()
					wrote = true
				default:
					freeze()
				}
				if el, ok := e.Get([]byte(name)); ok != (model[name] != "") || !bytes.Equal(el.Value, []byte(model[name])) {
					t.Fatalf("Get(%q) = %q, %v; the model %q", name, el.Value, ok, model[name])
				}
			}
			freeze()
		})
	}
}

// SetField and Add look a name up once: a field set again keeps its
// insertion number (and its expiry when asked), a new one takes the next;
// a member there is not added twice; and the name, given as the caller's
// bytes, is copied before it is kept (the caller reuses its buffer). Both
// forms.
func TestElemsSetFieldAndAdd(t *testing.T) {
	for _, n := range []int{10, SmallMax * 3} {
		e, next := NewElems(), int64(0)
		ord := func() int64 { next++; return next }
		buf := make([]byte, 0, 16)
		for i := range n {
			buf = fmt.Appendf(buf[:0], "f%d", i)
			if !e.SetField(buf, []byte("v"), false, ord) {
				t.Fatalf("n=%d: SetField(%q) not new", n, buf)
			}
		}
		e.Put(Elem{Name: "f3", Value: []byte("v"), Exp: 99, Ord: 4})
		buf = append(buf[:0], "f3"...)
		if e.SetField(buf, []byte("w"), true, ord) {
			t.Fatalf("n=%d: f3 set again counted as new", n)
		}
		buf[0] = 'x' // the caller's buffer changes: nothing kept may see it
		if el, ok := e.Get([]byte("f3")); !ok || el.Name != "f3" || string(el.Value) != "w" || el.Ord != 4 || el.Exp != 99 {
			t.Fatalf("n=%d: f3 = %+v after SetField keeping its expiry", n, el)
		}
		if e.SetField([]byte("f3"), []byte("z"), false, ord); next != int64(n) {
			t.Fatalf("n=%d: %d numbers taken for %d new fields", n, next, n)
		}
		if el, _ := e.Get([]byte("f3")); el.Exp != 0 || el.Ord != 4 {
			t.Fatalf("n=%d: f3 = %+v after SetField dropping its expiry", n, el)
		}
		for i := range n {
			name := fmt.Sprintf("f%d", i)
			if el, ok := e.Get([]byte(name)); !ok || el.Name != name {
				t.Fatalf("n=%d: %q kept as %q", n, name, el.Name)
			}
		}
		s := NewElems()
		for i := range n {
			buf = fmt.Appendf(buf[:0], "m%d", i)
			if !s.Add(buf) || s.Add(buf) {
				t.Fatalf("n=%d: Add(%q) twice", n, buf)
			}
		}
		buf[0] = 'x'
		if s.Len() != n || !s.Has(fmt.Appendf(nil, "m%d", n-1)) {
			t.Fatalf("n=%d: %d members after %d Adds", n, s.Len(), n)
		}
	}
}
