package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

func vals(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func listAll(t testing.TB, s *Store, db int, key string) []string {
	t.Helper()
	var out []string
	n := int64(-1)
	_, err := s.ListRange(db, []byte(key), 0, -1, func(c int64) { n = c }, func(v []byte) { out = append(out, string(v)) })
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(out)) != n {
		t.Fatalf("ListRange announced %d elements, gave %d", n, len(out))
	}
	return out
}

func TestListBasics(t *testing.T) {
	s := openTest(t)
	k := []byte("q\x00\xff")
	inTx(t, s, func() {
		n, err := s.ListPush(0, k, Right, vals("a", "b"), false)
		if err != nil || n != 2 {
			t.Fatalf("RPUSH = %d %v", n, err)
		}
		n, _ = s.ListPush(0, k, Left, vals("x", "y"), false)
		if n != 4 {
			t.Fatalf("LPUSH = %d", n)
		}
		n, _ = s.ListPush(0, []byte("none"), Left, vals("x"), true)
		if n != 0 {
			t.Fatalf("LPUSHX on a missing key = %d", n)
		}
		if _, ok, _ := s.Lookup(0, []byte("none")); ok {
			t.Fatal("LPUSHX created a key")
		}
		if _, err := s.ListPush(0, k, Right, [][]byte{{}, []byte("\x00\r\n")}, true); err != nil {
			t.Fatal(err)
		}
	})
	if got := listAll(t, s, 0, string(k)); !slices.Equal(got, []string{"y", "x", "a", "b", "", "\x00\r\n"}) {
		t.Fatalf("list = %q", got)
	}
	if m, ok, _ := s.Lookup(0, k); !ok || m.Type != TypeList {
		t.Fatalf("TYPE = %v %v", m.Type, ok)
	}
	for _, c := range []struct {
		i    int64
		want string
		ok   bool
	}{{0, "y", true}, {-1, "\x00\r\n", true}, {4, "", true}, {6, "", false}, {-7, "", false}} {
		v, ok, err := s.ListIndex(0, k, c.i, nil)
		if err != nil || ok != c.ok || string(v) != c.want {
			t.Errorf("LINDEX %d = %q %v %v", c.i, v, ok, err)
		}
	}
	inTx(t, s, func() {
		got, err := s.ListPop(0, k, Left, 1)
		if err != nil || len(got) != 1 || string(got[0]) != "y" {
			t.Fatalf("LPOP = %q %v", got, err)
		}
		got, _ = s.ListPop(0, k, Right, 2)
		if len(got) != 2 || string(got[0]) != "\x00\r\n" || string(got[1]) != "" {
			t.Fatalf("RPOP 2 = %q", got)
		}
		got, _ = s.ListPop(0, k, Left, 10)
		if len(got) != 3 || string(got[2]) != "b" {
			t.Fatalf("LPOP 10 = %q", got)
		}
	})
	if _, ok, _ := s.Lookup(0, k); ok {
		t.Fatal("an emptied list still exists")
	}
	if n := s.DBSize(0); n != 0 {
		t.Fatalf("DBSize after emptying = %d", n)
	}
	inTx(t, s, func() {
		must(t, s.SetString(0, []byte("str"), []byte("v"), 0, false))
		if _, err := s.ListPush(0, []byte("str"), Left, vals("a"), false); !errors.Is(err, ErrWrongType) {
			t.Fatalf("LPUSH on a string: %v", err)
		}
		if err := s.ListSet(0, []byte("nokey"), 0, []byte("v")); !errors.Is(err, ErrNoSuchKey) {
			t.Fatalf("LSET on a missing key: %v", err)
		}
		s.ListPush(0, []byte("l"), Right, vals("a"), false)
		if err := s.ListSet(0, []byte("l"), 1, []byte("v")); !errors.Is(err, ErrIndexRange) {
			t.Fatalf("LSET out of range: %v", err)
		}
	})
}

// model is the reference list the randomized test compares storage with.
type model []string

func (m model) norm(start, stop int64) (int64, int64, bool) {
	n := int64(len(m))
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	if start > stop || start >= n {
		return 0, 0, false
	}
	return start, min(stop, n-1), true
}

// TestListOpsAgainstModel applies random operations to two lists in
// storage and to a plain slice model, and compares them after every step.
// Seeds alternate between no memory bound, a bound of one byte (every
// list, once flushed, is let go and loaded from SQLite again by the next
// command that needs it) and one that holds both lists.
func TestListOpsAgainstModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			bound := []int64{0, 1, 64 << 10}[seed%3]
			s, err := Open(Options{Path: filepath.Join(t.TempDir(), "cellar.db"), MaxMemory: bound})
			must(t, err)
			defer s.Close()
			s.Now = 1_000_000
			rng := rand.New(rand.NewPCG(seed, 7))
			models := map[string]model{"a": nil, "b": nil}
			names := []string{"a", "b"}
			elem := func() string { return string(rune('p' + rng.IntN(5))) }
			end := func() End { return End(rng.IntN(2)) }
			for step := 0; step < 1500; step++ {
				key := names[rng.IntN(2)]
				m := models[key]
				var desc string
				must(t, s.Begin())
				switch op := rng.IntN(10); op {
				case 0, 1:
					e, n := end(), 1+rng.IntN(4)
					var vs []string
					for i := 0; i < n; i++ {
						vs = append(vs, elem())
					}
					desc = fmt.Sprintf("push %v %q", e, vs)
					got, err := s.ListPush(0, []byte(key), e, vals(vs...), false)
					must(t, err)
					for _, v := range vs {
						if e == Left {
							m = append(model{v}, m...)
						} else {
							m = append(m, v)
						}
					}
					if got != int64(len(m)) {
						t.Fatalf("%s: length %d, want %d", desc, got, len(m))
					}
				case 2:
					e, n := end(), int64(1+rng.IntN(3))
					desc = fmt.Sprintf("pop %v %d", e, n)
					got, err := s.ListPop(0, []byte(key), e, n)
					must(t, err)
					var want []string
					for i := int64(0); i < n && len(m) > 0; i++ {
						if e == Left {
							want, m = append(want, m[0]), m[1:]
						} else {
							want, m = append(want, m[len(m)-1]), m[:len(m)-1]
						}
					}
					var gs []string
					for _, g := range got {
						gs = append(gs, string(g))
					}
					if !slices.Equal(gs, want) {
						t.Fatalf("%s: got %q, want %q", desc, gs, want)
					}
				case 3:
					before, pivot, v := rng.IntN(2) == 0, elem(), elem()
					desc = fmt.Sprintf("insert before=%v %s %s", before, pivot, v)
					got, err := s.ListInsert(0, []byte(key), before, []byte(pivot), []byte(v))
					must(t, err)
					want := int64(0)
					if len(m) > 0 {
						want = -1
						if i := slices.Index(m, pivot); i >= 0 {
							if !before {
								i++
							}
							m = slices.Insert(m, i, v)
							want = int64(len(m))
						}
					}
					if got != want {
						t.Fatalf("%s: got %d, want %d", desc, got, want)
					}
				case 4:
					count, v := int64(rng.IntN(7)-3), elem()
					desc = fmt.Sprintf("lrem %d %s", count, v)
					got, err := s.ListRem(0, []byte(key), count, []byte(v))
					must(t, err)
					removed := int64(0)
					if count >= 0 {
						for i := 0; i < len(m); {
							if m[i] == v && (count == 0 || removed < count) {
								m = slices.Delete(m, i, i+1)
								removed++
							} else {
								i++
							}
						}
					} else {
						for i := len(m) - 1; i >= 0; i-- {
							if m[i] == v && removed < -count {
								m = slices.Delete(m, i, i+1)
								removed++
							}
						}
					}
					if got != removed {
						t.Fatalf("%s: removed %d, want %d", desc, got, removed)
					}
				case 5:
					start, stop := int64(rng.IntN(8)-3), int64(rng.IntN(12)-4)
					if rng.IntN(4) == 0 {
						stop = -1
					}
					desc = fmt.Sprintf("ltrim %d %d", start, stop)
					must(t, s.ListTrim(0, []byte(key), start, stop))
					if lo, hi, ok := m.norm(start, stop); ok {
						m = slices.Clone(m[lo : hi+1])
					} else {
						m = nil
					}
				case 6:
					if len(m) == 0 {
						break
					}
					i, v := int64(rng.IntN(2*len(m))-len(m)), elem()
					desc = fmt.Sprintf("lset %d %s", i, v)
					must(t, s.ListSet(0, []byte(key), i, []byte(v)))
					if i < 0 {
						i += int64(len(m))
					}
					m[i] = v
				case 7, 8:
					other := names[rng.IntN(2)]
					from, to := end(), end()
					desc = fmt.Sprintf("lmove %s %s %v %v", key, other, from, to)
					got, ok, err := s.ListMove(0, []byte(key), []byte(other), from, to)
					must(t, err)
					if ok != (len(m) > 0) {
						t.Fatalf("%s: ok=%v with %d elements", desc, ok, len(m))
					}
					if !ok {
						break
					}
					var v string
					if from == Left {
						v, m = m[0], m[1:]
					} else {
						v, m = m[len(m)-1], m[:len(m)-1]
					}
					if string(got) != v {
						t.Fatalf("%s: moved %q, want %q", desc, got, v)
					}
					models[key] = m
					d := models[other]
					if to == Left {
						d = append(model{v}, d...)
					} else {
						d = append(d, v)
					}
					models[other] = d
					m = models[key]
				case 9:
					v := elem()
					rank := int64(rng.IntN(5) - 2)
					if rank == 0 {
						rank = 1
					}
					limit, maxlen := int64(rng.IntN(3)), int64(rng.IntN(6))
					desc = fmt.Sprintf("lpos %s rank %d count %d maxlen %d", v, rank, limit, maxlen)
					var got []int64
					_, err := s.ListPos(0, []byte(key), []byte(v), rank, limit, maxlen, func(i int64) { got = append(got, i) })
					must(t, err)
					var want []int64
					matches := int64(0)
					for j := 0; j < len(m) && (maxlen == 0 || int64(j) < maxlen); j++ {
						i := j
						if rank < 0 {
							i = len(m) - 1 - j
						}
						if m[i] != v {
							continue
						}
						matches++
						if matches >= max(rank, -rank) && (limit == 0 || int64(len(want)) < limit) {
							want = append(want, int64(i))
						}
					}
					if !slices.Equal(got, want) {
						t.Fatalf("%s on %q: got %v, want %v", desc, m, got, want)
					}
				}
				if key != "" {
					models[key] = m
				}
				if _, _, err := s.Commit(); err != nil {
					t.Fatal(err)
				}
				for _, name := range names {
					want := []string(models[name])
					got := listAll(t, s, 0, name)
					if len(want) == 0 {
						want = nil
					}
					if !slices.Equal(got, want) {
						t.Fatalf("step %d (%s): %s = %q, want %q", step, desc, name, got, want)
					}
					_, exists, _ := s.Lookup(0, []byte(name))
					if exists != (len(want) > 0) {
						t.Fatalf("step %d (%s): %s exists=%v with %d elements", step, desc, name, exists, len(want))
					}
				}
				want := int64(0)
				for _, m := range models {
					if len(m) > 0 {
						want++
					}
				}
				if got := s.DBSize(0); got != want {
					t.Fatalf("step %d (%s): DBSize %d, want %d", step, desc, got, want)
				}
			}
		})
	}
}

// A list's elements follow its key through RENAME, COPY, MOVE, SWAPDB,
// expiry and FLUSHDB, and survive a reopen.
func TestListKeyspaceOperations(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/cellar.db"
	s, err := Open(Options{Path: path})
	must(t, err)
	s.Now = 1000
	inTx(t, s, func() {
		s.ListPush(0, []byte("l"), Right, vals("a", "b", "c"), false)
		must(t, s.Rename(0, []byte("l"), []byte("m")))
		ok, err := s.Copy(0, []byte("m"), 1, []byte("c"), false)
		if err != nil || !ok {
			t.Fatalf("copy: %v %v", ok, err)
		}
		s.ListPush(1, []byte("c"), Left, vals("z"), false)
		must(t, s.Move(0, []byte("m"), 2))
		must(t, s.SwapDB(2, 3))
		s.ListPush(4, []byte("gone"), Right, vals("x"), false)
		must(t, s.FlushDB(4))
		s.ListPush(5, []byte("ttl"), Right, vals("x"), false)
		must(t, s.SetExpire(5, []byte("ttl"), 1500))
	})
	if got := listAll(t, s, 3, "m"); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("renamed, moved, swapped list = %q", got)
	}
	if got := listAll(t, s, 1, "c"); !slices.Equal(got, []string{"z", "a", "b", "c"}) {
		t.Fatalf("copy = %q (must not share elements with the original)", got)
	}
	s.Now = 2000
	inTx(t, s, func() {
		if n, _ := s.SweepExpired(10); n != 1 {
			t.Fatalf("swept %d", n)
		}
	})
	must(t, s.Close())
	s, err = Open(Options{Path: path})
	must(t, err)
	defer s.Close()
	if got := listAll(t, s, 3, "m"); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("after reopen = %q", got)
	}
	// Nothing is left behind by deleted, flushed or expired lists.
	st, _ := s.c.prepare("SELECT count(*) FROM list_items")
	defer st.close()
	st.step()
	if n := st.colInt(0); n != 7 {
		t.Fatalf("%d element rows, want 7 (3 + 4)", n)
	}
	st.reset()
}

// An expired list is never visible, and pushing to it starts a new list.
func TestListExpiry(t *testing.T) {
	s := openTest(t)
	inTx(t, s, func() {
		s.ListPush(0, []byte("l"), Right, vals("old"), false)
		must(t, s.SetExpire(0, []byte("l"), s.Now+5))
	})
	s.Now += 6
	inTx(t, s, func() {
		if n, err := s.ListLen(0, []byte("l")); n != 0 || err != nil {
			t.Fatalf("LLEN of an expired list = %d %v", n, err)
		}
		got, err := s.ListPop(0, []byte("l"), Left, 1)
		if len(got) != 0 || err != nil {
			t.Fatalf("popped %q from an expired list", got)
		}
		s.ListPush(0, []byte("l"), Right, vals("new"), false)
	})
	if got := listAll(t, s, 0, "l"); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("list = %q", got)
	}
	if m, _, _ := s.Lookup(0, []byte("l")); m.ExpireAt != 0 {
		t.Fatal("the new list inherited the old TTL")
	}
}

// The benchmarks below back the claim that the ends of a list cost the
// same whatever its length. Each operation runs in its own transaction, as
// a lone client's command does in the actor.
func benchList(b *testing.B, n int) (*Store, []byte) {
	s := openTest(b)
	key := []byte("list")
	must(b, s.Begin())
	batch := make([][]byte, 0, 10000)
	for i := 0; i < n; i++ {
		batch = append(batch, fmt.Appendf(nil, "element-%08d", i))
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.ListPush(0, key, Right, batch, false); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, _, err := s.Commit(); err != nil {
		b.Fatal(err)
	}
	return s, key
}

var benchSizes = []int{10, 1_000_000}

func BenchmarkListPushPop(b *testing.B) {
	for _, n := range benchSizes {
		s, key := benchList(b, n)
		for _, c := range []struct {
			name      string
			push, pop End
		}{{"LPUSH+LPOP", Left, Left}, {"RPUSH+RPOP", Right, Right}, {"RPUSH+LPOP", Right, Left}, {"LPUSH+RPOP", Left, Right}} {
			b.Run(fmt.Sprintf("%s/len=%d", c.name, n), func(b *testing.B) {
				v := [][]byte{nil}
				for i := 0; b.Loop(); i++ {
					v[0] = fmt.Appendf(v[0][:0], "new-%d", i)
					s.Begin()
					if _, err := s.ListPush(0, key, c.push, v, false); err != nil {
						b.Fatal(err)
					}
					if _, _, err := s.Commit(); err != nil {
						b.Fatal(err)
					}
					s.Begin()
					if got, err := s.ListPop(0, key, c.pop, 1); err != nil || len(got) != 1 {
						b.Fatal(err)
					}
					if _, _, err := s.Commit(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkListRead(b *testing.B) {
	for _, n := range []int{100, 1_000_000} {
		s, key := benchList(b, n)
		b.Run(fmt.Sprintf("LINDEX 5/len=%d", n), func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				v, ok, err := s.ListIndex(0, key, 5, buf[:0])
				if err != nil || !ok {
					b.Fatal(err)
				}
				buf = v
			}
		})
		b.Run(fmt.Sprintf("LINDEX -5/len=%d", n), func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				v, ok, err := s.ListIndex(0, key, -5, buf[:0])
				if err != nil || !ok {
					b.Fatal(err)
				}
				buf = v
			}
		})
		b.Run(fmt.Sprintf("LSET -5/len=%d", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				s.Begin()
				if err := s.ListSet(0, key, -5, fmt.Appendf(nil, "v%d", i)); err != nil {
					b.Fatal(err)
				}
				s.Commit()
			}
		})
		b.Run(fmt.Sprintf("LRANGE 0 99/len=%d", n), func(b *testing.B) {
			for b.Loop() {
				got := 0
				_, err := s.ListRange(0, key, 0, 99, func(int64) {}, func(v []byte) { got += len(v) })
				if err != nil || got == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}

// Renumbering at scale: LREM of scattered elements and LINSERT in the
// middle of a few thousand elements keep order and contiguity.
func TestListRenumberLarge(t *testing.T) {
	s := openTest(t)
	const n = 5000
	var m []string
	var vs [][]byte
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("e%d", i%7)
		if i%97 == 0 {
			v = "x"
		}
		m = append(m, v)
		vs = append(vs, []byte(v))
	}
	inTx(t, s, func() {
		if _, err := s.ListPush(0, []byte("big"), Right, vs, false); err != nil {
			t.Fatal(err)
		}
	})
	check := func(what string) {
		t.Helper()
		if got := listAll(t, s, 0, "big"); !slices.Equal(got, m) {
			t.Fatalf("%s: list differs from the model (len %d vs %d)", what, len(got), len(m))
		}
	}
	inTx(t, s, func() {
		removed, err := s.ListRem(0, []byte("big"), 0, []byte("x"))
		must(t, err)
		m = slices.DeleteFunc(m, func(v string) bool { return v == "x" })
		if removed != n/97+1 {
			t.Fatalf("removed %d", removed)
		}
	})
	check("LREM 0 x")
	inTx(t, s, func() {
		removed, err := s.ListRem(0, []byte("big"), -300, []byte("e3"))
		must(t, err)
		k := 0
		for i := len(m) - 1; i >= 0 && k < 300; i-- {
			if m[i] == "e3" {
				m = slices.Delete(m, i, i+1)
				k++
			}
		}
		if removed != 300 {
			t.Fatalf("removed %d", removed)
		}
	})
	check("LREM -300 e3")
	for _, pivot := range []string{"e5", "e6"} {
		inTx(t, s, func() {
			// The first e5 is near the head, so the head side moves; to
			// move the tail side, insert before an element near the end.
			_, err := s.ListInsert(0, []byte("big"), true, []byte(pivot), []byte("new-"+pivot))
			must(t, err)
			i := slices.Index(m, pivot)
			m = slices.Insert(m, i, "new-"+pivot)
		})
		check("LINSERT BEFORE " + pivot)
	}
	inTx(t, s, func() {
		must(t, s.ListSet(0, []byte("big"), -2, []byte("tailpivot")))
		m[len(m)-2] = "tailpivot"
		_, err := s.ListInsert(0, []byte("big"), false, []byte("tailpivot"), []byte("after"))
		must(t, err)
		m = slices.Insert(m, len(m)-1, "after")
	})
	check("LINSERT AFTER near the tail")
	inTx(t, s, func() {
		_, err := s.ListRem(0, []byte("big"), 1, []byte("e0"))
		must(t, err)
		m = slices.Delete(m, slices.Index(m, "e0"), slices.Index(m, "e0")+1)
	})
	check("LREM 1 e0")
}
