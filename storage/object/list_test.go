package object

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func bs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// items returns l's items head to tail, through Ascend.
func items(l *List) [][]byte {
	var out [][]byte
	l.Ascend(0, func(i int, v []byte) bool {
		out = append(out, v)
		return true
	})
	return out
}

func equalItems(a, b [][]byte) bool { return slices.EqualFunc(a, b, bytes.Equal) }

// modelRange is LRANGE start stop over a plain slice, as Redis defines it.
func modelRange(m [][]byte, start, stop int) [][]byte {
	n := len(m)
	if start < 0 {
		start = max(n+start, 0)
	}
	if stop < 0 {
		stop = n + stop
	}
	if stop >= n {
		stop = n - 1
	}
	if start > stop || start >= n {
		return nil
	}
	return m[start : stop+1]
}

// modelRem is LREM over a plain slice: the indexes to remove, then a copy
// without them.
func modelRem(m [][]byte, count int, v []byte) ([][]byte, int) {
	drop := map[int]bool{}
	for j := range m {
		i := j
		if count < 0 {
			i = len(m) - 1 - j
		}
		if bytes.Equal(m[i], v) && (count == 0 || len(drop) < abs(count)) {
			drop[i] = true
		}
	}
	var out [][]byte
	for i, x := range m {
		if !drop[i] {
			out = append(out, x)
		}
	}
	return out, len(drop)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// modelPos is LPOS over a plain slice: every match in scan order, then
// rank, count and maxlen applied.
func modelPos(m [][]byte, v []byte, rank, limit, maxlen int) []int {
	var scan []int
	for j := range m {
		if maxlen > 0 && j >= maxlen {
			break
		}
		i := j
		if rank < 0 {
			i = len(m) - 1 - j
		}
		if bytes.Equal(m[i], v) {
			scan = append(scan, i)
		}
	}
	skip := abs(rank) - 1
	if skip >= len(scan) {
		return nil
	}
	scan = scan[skip:]
	if limit > 0 && limit < len(scan) {
		scan = scan[:limit]
	}
	return scan
}

func positions(l *List, v []byte, rank, limit, maxlen int) []int {
	var got []int
	l.Pos(v, rank, limit, maxlen, func(i int) { got = append(got, i) })
	return got
}

func TestListEdges(t *testing.T) {
	l := NewList()
	if v, ok := l.Index(0); ok || v != nil {
		t.Fatalf("Index(0) of an empty list = %q, %v", v, ok)
	}
	if got := l.Pop(Left, 3); got != nil {
		t.Fatalf("Pop of an empty list = %q", got)
	}
	if l.Set(0, []byte("x")) || l.Set(-1, []byte("x")) {
		t.Fatal("Set on an empty list succeeded")
	}
	if n := l.Insert(true, []byte("a"), []byte("x")); n != -1 {
		t.Fatalf("Insert on an empty list = %d", n)
	}
	if n := l.Push(Right, bs("a", "b", "c")...); n != 3 {
		t.Fatalf("Push = %d", n)
	}
	if n := l.Push(Left, bs("y", "z")...); n != 5 {
		t.Fatalf("Push = %d", n)
	}
	if want := bs("z", "y", "a", "b", "c"); !equalItems(items(l), want) {
		t.Fatalf("items %q, want %q", items(l), want)
	}
	for _, tc := range []struct {
		i    int
		want string
		ok   bool
	}{{0, "z", true}, {4, "c", true}, {5, "", false}, {-1, "c", true}, {-5, "z", true}, {-6, "", false}, {math.MinInt, "", false}, {math.MaxInt, "", false}} {
		v, ok := l.Index(tc.i)
		if ok != tc.ok || string(v) != tc.want {
			t.Errorf("Index(%d) = %q, %v; want %q, %v", tc.i, v, ok, tc.want, tc.ok)
		}
	}
	if got := l.Pop(Left, 0); got != nil {
		t.Fatalf("Pop 0 = %q", got)
	}
	if got := l.Pop(Right, -1); got != nil {
		t.Fatalf("Pop -1 = %q", got)
	}
	if got := l.Pop(Right, 2); !equalItems(got, bs("c", "b")) {
		t.Fatalf("Pop right 2 = %q", got)
	}
	if got := l.Pop(Left, 10); !equalItems(got, bs("z", "y", "a")) {
		t.Fatalf("Pop left 10 = %q", got)
	}
	if l.Len() != 0 || l.Size() != 0 {
		t.Fatalf("emptied list: Len %d, Size %d", l.Len(), l.Size())
	}
	for _, tc := range []struct{ start, stop, from, n int }{
		{0, -1, 0, 0}, {0, 0, 0, 0}, {-1, -1, 0, 0},
	} {
		if from, n := l.Span(tc.start, tc.stop); from != tc.from || n != tc.n {
			t.Errorf("empty Span(%d, %d) = %d, %d", tc.start, tc.stop, from, n)
		}
	}
	l.Push(Right, bs("a", "b", "c", "d", "e")...)
	for _, tc := range []struct{ start, stop, from, n int }{
		{0, -1, 0, 5}, {0, 0, 0, 1}, {-1, -1, 4, 1}, {-100, 100, 0, 5}, {2, 1, 0, 0},
		{5, 10, 0, 0}, {-2, -3, 0, 0}, {1, -2, 1, 3}, {math.MinInt, math.MaxInt, 0, 5},
		{math.MaxInt, math.MinInt, 0, 0}, {-6, -5, 0, 1}, {-7, -6, 0, 0},
	} {
		if from, n := l.Span(tc.start, tc.stop); from != tc.from || n != tc.n {
			t.Errorf("Span(%d, %d) = %d, %d; want %d, %d", tc.start, tc.stop, from, n, tc.from, tc.n)
		}
	}
	var got [][]byte
	l.Range(1, 3, func(v []byte) bool { got = append(got, v); return len(got) < 2 })
	if !equalItems(got, bs("b", "c")) {
		t.Fatalf("Range stopped after 2: %q", got)
	}
	got = nil
	l.Descend(10, func(i int, v []byte) bool { got = append(got, v); return i > 2 })
	if !equalItems(got, bs("e", "d", "c")) {
		t.Fatalf("Descend from 10: %q", got)
	}
	got = nil
	l.Ascend(3, func(i int, v []byte) bool { got = append(got, v); return false })
	if !equalItems(got, bs("d")) {
		t.Fatalf("Ascend from 3, stopped: %q", got)
	}
	got = nil
	l.Ascend(-3, func(i int, v []byte) bool { got = append(got, v); return true })
	if !equalItems(got, bs("a", "b", "c", "d", "e")) {
		t.Fatalf("Ascend from -3: %q", got)
	}
	l.Trim(1, -2)
	if want := bs("b", "c", "d"); !equalItems(items(l), want) {
		t.Fatalf("after Trim(1, -2): %q", items(l))
	}
	l.Trim(5, 10)
	if l.Len() != 0 {
		t.Fatalf("Trim(5, 10) left %q", items(l))
	}
}

// LPOS's examples from the Redis documentation.
func TestListPosRedis(t *testing.T) {
	l := NewList()
	l.Push(Right, bs("a", "b", "c", "d", "1", "2", "3", "4", "3", "3", "3")...)
	for _, tc := range []struct {
		rank, limit, maxlen int
		want                []int
	}{
		{1, 1, 0, []int{6}},
		{2, 0, 0, []int{8, 9, 10}},
		{-1, 1, 0, []int{10}},
		{-1, 2, 0, []int{10, 9}},
		{1, 0, 0, []int{6, 8, 9, 10}},
		{1, 0, 7, []int{6}},
		{1, 0, 6, nil},
		{-1, 0, 2, []int{10, 9}},
		{5, 0, 0, nil},
	} {
		if got := positions(l, []byte("3"), tc.rank, tc.limit, tc.maxlen); !slices.Equal(got, tc.want) {
			t.Errorf("LPOS 3 RANK %d COUNT %d MAXLEN %d = %v, want %v", tc.rank, tc.limit, tc.maxlen, got, tc.want)
		}
	}
}

func TestListInsertRem(t *testing.T) {
	l := NewList()
	l.Push(Right, bs("a", "x", "b", "x", "c", "x")...)
	if n := l.Insert(true, []byte("x"), []byte("1")); n != 7 {
		t.Fatalf("Insert = %d", n)
	}
	if n := l.Insert(false, []byte("c"), []byte("2")); n != 8 {
		t.Fatalf("Insert = %d", n)
	}
	if n := l.Insert(false, []byte("nope"), []byte("3")); n != -1 {
		t.Fatalf("Insert without pivot = %d", n)
	}
	if want := bs("a", "1", "x", "b", "x", "c", "2", "x"); !equalItems(items(l), want) {
		t.Fatalf("items %q, want %q", items(l), want)
	}
	if n := l.Rem(-2, []byte("x")); n != 2 {
		t.Fatalf("Rem -2 = %d", n)
	}
	if want := bs("a", "1", "x", "b", "c", "2"); !equalItems(items(l), want) {
		t.Fatalf("items %q, want %q", items(l), want)
	}
	if n := l.Rem(0, []byte("nope")); n != 0 {
		t.Fatalf("Rem of a missing value = %d", n)
	}
	l.Push(Left, bs("b", "b")...)
	if n := l.Rem(1, []byte("b")); n != 1 {
		t.Fatalf("Rem 1 = %d", n)
	}
	if n := l.Rem(0, []byte("b")); n != 2 {
		t.Fatalf("Rem 0 = %d", n)
	}
	if n := l.Rem(math.MinInt, []byte("a")); n != 1 {
		t.Fatalf("Rem MinInt = %d", n)
	}
	if want := bs("1", "x", "c", "2"); !equalItems(items(l), want) {
		t.Fatalf("items %q, want %q", items(l), want)
	}
}

// rows is what SQLite would hold for one list: position to value.
type rows map[int64][]byte

// apply applies d as the flush does and returns how many rows it wrote
// and deleted.
func (r rows) apply(d *ListDelta) (written, deleted int) {
	if d.All {
		deleted += len(r)
		clear(r)
	}
	for _, g := range d.Del {
		for p := g.Lo; p <= g.Hi; p++ {
			if _, ok := r[p]; !ok {
				panic(fmt.Sprintf("the delta deletes row %d, which is not there", p))
			}
			delete(r, p)
			deleted++
		}
	}
	last := int64(math.MinInt64)
	for _, run := range d.Put {
		if run.Pos <= last {
			panic("the delta's runs are not ascending")
		}
		for i, v := range run.Vals {
			r[run.Pos+int64(i)] = v
			written++
		}
		last = run.Pos + int64(len(run.Vals)) - 1
	}
	return written, deleted
}

// check reports whether r holds exactly want at contiguous positions.
func (r rows) check(want [][]byte) error {
	if len(r) != len(want) {
		return fmt.Errorf("%d rows, want %d", len(r), len(want))
	}
	lo := int64(math.MaxInt64)
	for p := range r {
		lo = min(lo, p)
	}
	for i, v := range want {
		got, ok := r[lo+int64(i)]
		if !ok {
			return fmt.Errorf("no row at %d (index %d)", lo+int64(i), i)
		}
		if !bytes.Equal(got, v) {
			return fmt.Errorf("row %d (index %d) = %q, want %q", lo+int64(i), i, got, v)
		}
	}
	return nil
}

// Every operation at random against a plain slice, with every index,
// ranges, searches and the footprint checked after each, and the deltas of
// random Freezes applied to a model of the rows, which must always hold the
// list at contiguous positions.
func TestListModel(t *testing.T) {
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 7))
		l := NewList()
		var m [][]byte
		db := rows{}
		val := func() []byte {
			return []byte(fmt.Sprintf("v%d", rng.IntN(8)))
		}
		idx := func() int { return rng.IntN(2*len(m)+5) - len(m) - 2 }
		steps := 3000
		for step := 0; step < steps; step++ {
			op := rng.IntN(100)
			switch {
			case op < 25:
				end := End(rng.IntN(2))
				vals := make([][]byte, rng.IntN(4))
				for i := range vals {
					vals[i] = val()
				}
				n := l.Push(end, vals...)
				for _, v := range vals {
					if end == Left {
						m = append([][]byte{v}, m...)
					} else {
						m = append(m, v)
					}
				}
				if n != len(m) {
					t.Fatalf("Push = %d, want %d", n, len(m))
				}
			case op < 45:
				end, n := End(rng.IntN(2)), rng.IntN(5)-1
				got := l.Pop(end, n)
				var want [][]byte
				for i := 0; i < n && len(m) > 0; i++ {
					if end == Left {
						want, m = append(want, m[0]), m[1:]
					} else {
						want, m = append(want, m[len(m)-1]), m[:len(m)-1]
					}
				}
				if !equalItems(got, want) {
					t.Fatalf("Pop(%d, %d) = %q, want %q", end, n, got, want)
				}
			case op < 55:
				i, v := idx(), val()
				ok := l.Set(i, v)
				j := i
				if j < 0 {
					j += len(m)
				}
				if want := j >= 0 && j < len(m); ok != want {
					t.Fatalf("Set(%d) = %v, want %v", i, ok, want)
				} else if ok {
					m[j] = v
				}
			case op < 65:
				before, pivot, v := rng.IntN(2) == 0, val(), val()
				n := l.Insert(before, pivot, v)
				k := slices.IndexFunc(m, func(x []byte) bool { return bytes.Equal(x, pivot) })
				want := -1
				if k >= 0 {
					if !before {
						k++
					}
					m = slices.Insert(m, k, v)
					want = len(m)
				}
				if n != want {
					t.Fatalf("Insert = %d, want %d", n, want)
				}
			case op < 75:
				count, v := rng.IntN(7)-3, val()
				n := l.Rem(count, v)
				var want int
				m, want = modelRem(m, count, v)
				if n != want {
					t.Fatalf("Rem(%d, %q) = %d, want %d", count, v, n, want)
				}
			case op < 78:
				start, stop := idx(), idx()
				l.Trim(start, stop)
				m = slices.Clone(modelRange(m, start, stop))
			case op < 80:
				// Grow back past the ring's shrinking thresholds.
				for range 40 {
					v := val()
					l.Push(Right, v)
					m = append(m, v)
				}
			case op < 82:
				l.Rewrite()
			default:
				w, d := db.apply(l.Freeze())
				if l.Changed() {
					t.Fatal("Changed right after Freeze")
				}
				if err := db.check(m); err != nil {
					t.Fatalf("step %d: rows after %d written, %d deleted: %v", step, w, d, err)
				}
			}
			if !equalItems(items(l), m) {
				t.Fatalf("step %d (op %d): items %q, want %q", step, op, items(l), m)
			}
			var size int64
			for _, v := range m {
				size += int64(len(v)) + itemOverhead
			}
			if l.Len() != len(m) || l.Size() != size {
				t.Fatalf("Len %d, Size %d; want %d, %d", l.Len(), l.Size(), len(m), size)
			}
			for i := -len(m) - 1; i <= len(m); i++ {
				v, ok := l.Index(i)
				j := i
				if j < 0 {
					j += len(m)
				}
				if ok != (j >= 0 && j < len(m)) || ok && !bytes.Equal(v, m[j]) {
					t.Fatalf("Index(%d) = %q, %v", i, v, ok)
				}
			}
			start, stop := idx(), idx()
			var got [][]byte
			l.Range(start, stop, func(v []byte) bool { got = append(got, v); return true })
			if want := modelRange(m, start, stop); !equalItems(got, want) {
				t.Fatalf("Range(%d, %d) = %q, want %q", start, stop, got, want)
			}
			if from, n := l.Span(start, stop); n != len(got) || n > 0 && !bytes.Equal(m[from], got[0]) {
				t.Fatalf("Span(%d, %d) = %d, %d", start, stop, from, n)
			}
			got = nil
			l.Descend(len(m)-1, func(i int, v []byte) bool {
				if !bytes.Equal(v, m[i]) {
					t.Fatalf("Descend: index %d = %q, want %q", i, v, m[i])
				}
				got = append(got, v)
				return true
			})
			if len(got) != len(m) {
				t.Fatalf("Descend visited %d items of %d", len(got), len(m))
			}
			rank := rng.IntN(3) + 1
			if rng.IntN(2) == 0 {
				rank = -rank
			}
			limit, maxlen, v := rng.IntN(3), rng.IntN(len(m)+2), val()
			if got, want := positions(l, v, rank, limit, maxlen), modelPos(m, v, rank, limit, maxlen); !slices.Equal(got, want) {
				t.Fatalf("Pos(%q, %d, %d, %d) = %v, want %v", v, rank, limit, maxlen, got, want)
			}
		}
	}
}

// A queue's Freeze writes the rows pushed and deletes the rows popped,
// whatever the list's length; a pop then a push at the same end rewrites
// the position; a Set rewrites one row; an Insert near an end rewrites the
// rows of the short side only.
func TestListDeltaSize(t *testing.T) {
	items := make([][]byte, 100000)
	for i := range items {
		items[i] = []byte(fmt.Sprintf("item%d", i))
	}
	l := LoadedList(-500, items)
	db := rows{}
	for i, v := range items {
		db[int64(-500+i)] = v
	}
	model := slices.Clone(items)
	freeze := func(wantW, wantD int) {
		t.Helper()
		d := l.Freeze()
		if d.All {
			t.Fatal("delta rewrites every row")
		}
		w, del := db.apply(d)
		if w != wantW || del != wantD {
			t.Fatalf("delta writes %d rows and deletes %d, want %d and %d", w, del, wantW, wantD)
		}
		if err := db.check(model); err != nil {
			t.Fatal(err)
		}
	}
	freeze(0, 0)
	for i := range 30 {
		v := []byte(fmt.Sprintf("new%d", i))
		l.Push(Left, v)
		model = append([][]byte{v}, model...)
	}
	l.Pop(Right, 20)
	model = model[:len(model)-20]
	freeze(30, 20)
	// Pop 3 at the tail, push 5 there: 3 rows rewritten, 2 added.
	l.Pop(Right, 3)
	model = model[:len(model)-3]
	for i := range 5 {
		v := []byte(fmt.Sprintf("again%d", i))
		l.Push(Right, v)
		model = append(model, v)
	}
	freeze(5, 0)
	l.Set(50000, []byte("set"))
	l.Set(-50000, []byte("set2"))
	l.Set(50000, []byte("set3"))
	model[50000] = []byte("set3")
	model[len(model)-50000] = []byte("set2")
	freeze(2, 0)
	l.Insert(false, model[2], []byte("ins"))
	model = slices.Insert(model, 3, []byte("ins"))
	freeze(4, 0)
	l.Rem(1, model[len(model)-2])
	model = slices.Delete(model, len(model)-2, len(model)-1)
	freeze(1, 1)
	l.Trim(10, -11)
	model = model[10 : len(model)-10]
	freeze(0, 20)
	if l.Changed() {
		t.Fatal("Changed with nothing changed")
	}
	freeze(0, 0)
	l.Pop(Left, l.Len())
	model = nil
	freeze(0, len(db))
}
