package storage

import (
	"fmt"
	"testing"

	sqlite3 "modernc.org/sqlite/lib"
)

// vmSteps is the number of virtual-machine steps SQLite ran for every
// prepared statement since the last call: a count of the work done, in
// rows visited and opcodes run, that does not depend on timing.
func vmSteps(s *Store) int64 {
	var n int64
	for _, st := range s.stmts {
		if st != nil {
			n += int64(sqlite3.Xsqlite3_stmt_status(st.c.tls, st.h, sqlite3.SQLITE_STMTSTATUS_VM_STEP, 1))
		}
	}
	return n
}

func fill(t testing.TB, s *Store, key string, n int) {
	t.Helper()
	inTx(t, s, func() {
		st, err := s.CreateStream(0, []byte(key))
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= n; i++ {
			if err := s.StreamAdd(st, StreamID{Ms: uint64(i), Seq: 0}, [][]byte{[]byte("f"), []byte("v")}); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestStreamCostDoesNotGrow: an XADD, a page of XRANGE (at the start, in
// the middle, at the end, forwards and back), a trim of one entry and a
// lookup of the last entry cost the same number of SQLite steps on a stream of 100 000
// entries as on one of 30. The entries are an index range, never a scan.
func TestStreamCostDoesNotGrow(t *testing.T) {
	s := openTest(t)
	const small, large = 30, 100_000
	fill(t, s, "small", small)
	fill(t, s, "large", large)

	cost := func(key string, n int) map[string]int64 {
		out := map[string]int64{}
		inTx(t, s, func() {
			measure := func(name string, fn func(st *Stream) error) {
				st, err := s.OpenStream(0, []byte(key))
				if err != nil || st == nil {
					t.Fatal(err)
				}
				vmSteps(s)
				if err := fn(st); err != nil {
					t.Fatalf("%s on %s: %v", name, key, err)
				}
				out[name] = vmSteps(s)
			}
			measure("open", func(st *Stream) error { _, err := s.OpenStream(0, []byte(key)); return err })
			measure("xadd", func(st *Stream) error {
				return s.StreamAdd(st, StreamID{Ms: uint64(n + 1), Seq: 0}, [][]byte{[]byte("f"), []byte("v")})
			})
			page := func(lo, hi StreamID, rev bool) func(st *Stream) error {
				return func(st *Stream) error {
					got := 0
					err := s.StreamRange(st, lo, hi, rev, 10, func(*StreamEntry) bool { got++; return true })
					if err == nil && got != 10 {
						err = fmt.Errorf("page of %d", got)
					}
					return err
				}
			}
			measure("xrange first page", page(StreamID{}, MaxStreamID, false))
			measure("xrange middle page", page(StreamID{Ms: uint64(n / 2), Seq: 0}, MaxStreamID, false))
			measure("xrevrange last page", page(StreamID{}, MaxStreamID, true))
			measure("xtrim one", func(st *Stream) error {
				removed, err := s.StreamTrimmed(st, StreamTrim{Strategy: TrimMaxLen, MaxLen: st.Len - 1})
				if err == nil && removed != 1 {
					err = fmt.Errorf("trimmed %d", removed)
				}
				return err
			})
			measure("xtrim minid", func(st *Stream) error {
				_, err := s.StreamTrimmed(st, StreamTrim{Strategy: TrimMinID, MinID: StreamID{Ms: 4, Seq: 0}})
				return err
			})
			measure("last entry", func(st *Stream) error { _, _, err := s.StreamEnd(st, true); return err })
		})
		return out
	}
	cs, cl := cost("small", small), cost("large", large)
	for name, a := range cs {
		b := cl[name]
		t.Logf("%-20s %4d steps at %d entries, %4d at %d", name, a, small, b, large)
		if b > a+a/10+4 {
			t.Errorf("%s: %d steps at %d entries, %d at %d: the cost grows with the stream", name, a, small, b, large)
		}
	}
}

// TestStreamKeyOperations: a stream's entries, groups, consumers and PEL
// go with DEL and FLUSHDB, follow RENAME and MOVE, and COPY copies them
// all.
func TestStreamKeyOperations(t *testing.T) {
	s := openTest(t)
	fill(t, s, "a", 5)
	inTx(t, s, func() {
		st, _ := s.OpenStream(0, []byte("a"))
		g := StreamGroup{Name: []byte("g"), Last: StreamID{Ms: 2, Seq: 0}, EntriesRead: 2}
		if ok, err := s.CreateGroup(st, g); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if err := s.SeeConsumer(st, &g, []byte("c"), 7); err != nil {
			t.Fatal(err)
		}
		if err := s.SetPending(st, &g, StreamPending{ID: StreamID{Ms: 1, Seq: 0}, Consumer: []byte("c"), Delivered: 7, Count: 1}); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Copy(0, []byte("a"), 1, []byte("b"), false); !ok || err != nil {
			t.Fatal(ok, err)
		}
	})
	check := func(db int, key string, entries int64, pending int) {
		t.Helper()
		inTx(t, s, func() {
			st, err := s.OpenStream(db, []byte(key))
			if err != nil || st == nil {
				t.Fatalf("%d %s: %v %v", db, key, st, err)
			}
			g, err := s.Group(st, []byte("g"))
			if err != nil || g == nil || g.Last != (StreamID{Ms: 2, Seq: 0}) {
				t.Fatalf("%d %s: group %+v %v", db, key, g, err)
			}
			ps, err := s.PendingRange(st, g, []byte("c"), StreamID{}, MaxStreamID, 1<<62, 0)
			if st.Len != entries || len(ps) != pending || err != nil {
				t.Fatalf("%d %s: %d entries, %d pending, %v", db, key, st.Len, len(ps), err)
			}
		})
	}
	check(0, "a", 5, 1)
	check(1, "b", 5, 1)
	inTx(t, s, func() {
		if err := s.Rename(0, []byte("a"), []byte("r")); err != nil {
			t.Fatal(err)
		}
	})
	check(0, "r", 5, 1)
	rows := func() (n int64) {
		inTx(t, s, func() {
			for _, tbl := range []string{"stream_entries", "stream_groups", "stream_consumers", "stream_pel", "streams"} {
				st, err := s.c.prepare("SELECT count(*) FROM " + tbl)
				if err != nil {
					t.Fatal(err)
				}
				st.step()
				n += st.colInt(0)
				st.close()
			}
		})
		return n
	}
	if n := rows(); n != 2*(5+1+1+1+1) {
		t.Fatalf("%d stream rows for two streams", n)
	}
	inTx(t, s, func() {
		if ok, err := s.Delete(0, []byte("r")); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if err := s.FlushDB(1); err != nil {
			t.Fatal(err)
		}
	})
	if n := rows(); n != 0 {
		t.Fatalf("%d stream rows left after DEL and FLUSHDB", n)
	}
}

// TestStreamApproxTrim: "~" removes whole nodes of NodeEntries entries (a
// partial last node only with everything before it), within LIMIT.
func TestStreamApproxTrim(t *testing.T) {
	for _, c := range []struct {
		n    int
		trim StreamTrim
		want int64
	}{
		{250, StreamTrim{Strategy: TrimMaxLen, MaxLen: 10, Approx: true, Limit: 10000}, 200},
		{250, StreamTrim{Strategy: TrimMaxLen, MaxLen: 10, Approx: true, Limit: 150}, 100},
		{250, StreamTrim{Strategy: TrimMaxLen, MaxLen: 10, Approx: true, Limit: 99}, 0},
		{50, StreamTrim{Strategy: TrimMaxLen, MaxLen: 10, Approx: true, Limit: 10000}, 0},
		{50, StreamTrim{Strategy: TrimMaxLen, MaxLen: 0, Approx: true, Limit: 10000}, 50},
		{250, StreamTrim{Strategy: TrimMinID, MinID: StreamID{Ms: 230, Seq: 0}, Approx: true, Limit: 10000}, 200},
		{250, StreamTrim{Strategy: TrimMinID, MinID: StreamID{Ms: 300, Seq: 0}, Approx: true, Limit: 10000}, 250},
		{250, StreamTrim{Strategy: TrimMinID, MinID: StreamID{Ms: 230, Seq: 0}}, 229},
		{250, StreamTrim{Strategy: TrimMaxLen, MaxLen: 10}, 240},
	} {
		s := openTest(t)
		fill(t, s, "s", c.n)
		inTx(t, s, func() {
			st, _ := s.OpenStream(0, []byte("s"))
			got, err := s.StreamTrimmed(st, c.trim)
			if err != nil || got != c.want {
				t.Errorf("%d entries, %+v: trimmed %d, %v; want %d", c.n, c.trim, got, err, c.want)
			}
			if again, _ := s.OpenStream(0, []byte("s")); again.Len != int64(c.n)-got {
				t.Errorf("%+v: count %d after trimming %d of %d", c.trim, again.Len, got, c.n)
			}
		})
	}
}
