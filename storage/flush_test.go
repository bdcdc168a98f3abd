package storage

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// A flush commits the frozen transaction and pending rows on another
// goroutine while the actor goes on: writes to cached strings meanwhile
// stay pending for the next flush, a statement waits for the connection
// and then sees what the flush wrote, and what is committed after a
// restart is exactly what the flushes covered.
func TestFlushOffTheActor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	s, err := Open(Options{Path: path, HotCacheBytes: 1 << 20})
	must(t, err)
	s.Now = 1
	inTx(t, s, func() {
		for i := range 50 {
			setStr(t, s, fmt.Sprint("k", i), "v0")
		}
	})
	must(t, s.Begin())
	sadd(t, s, "s", "a")      // a collection: elements in the transaction
	setStr(t, s, "new", "n1") // a new key: written in the transaction
	for i := range 50 {
		setStr(t, s, fmt.Sprint("k", i), "v1") // cached: pending
	}
	if s.PendingRows() < 50 {
		t.Fatalf("%d pending rows, want the 50 strings", s.PendingRows())
	}
	f, err := s.StartFlush(1234)
	must(t, err)
	if f == nil || !s.Flying() || s.PendingRows() != 0 || s.InTx() {
		t.Fatalf("after StartFlush: flush %v flying %v pending %d inTx %v", f, s.Flying(), s.PendingRows(), s.InTx())
	}
	// The connection is lent: the next round's Begin and writes to cached
	// strings go on without it.
	must(t, s.Begin())
	setStr(t, s, "k0", "v2")
	setStr(t, s, "k1", "v2")
	if got := getStr(t, s, "k2"); got != "v1" {
		t.Fatalf("cached GET during the flush: %q", got)
	}
	if !s.Flying() {
		t.Fatal("a cached write took the connection back")
	}
	done := make(chan struct{})
	go func() { f.Run(); close(done) }()
	// A statement on SQLite waits for the flush, then sees its rows.
	if n, _ := rowInSQLite(t, s, "s"); n != 1 {
		t.Fatalf("set's count after the flush: %d", n)
	}
	<-done
	if s.Flying() {
		t.Fatal("still flying after a statement waited")
	}
	if got := s.Land(); got != f || got.Err() != nil {
		t.Fatalf("Land: %v (%v), want the flush", got, got.Err())
	}
	if s.Land() != nil {
		t.Fatal("a flush landed twice")
	}
	if pos, err := s.RedoPosition(); err != nil || pos != 1234 {
		t.Fatalf("redo position %d (%v), want 1234", pos, err)
	}
	if s.PendingRows() != 2 {
		t.Fatalf("%d pending rows after the flush, want k0 and k1", s.PendingRows())
	}
	// What a restart finds: the flush's rows, not the later pending ones
	// (the transaction they belong to never committed).
	must(t, s.Close())
	s, err = Open(Options{Path: path, HotCacheBytes: 1 << 20})
	must(t, err)
	defer s.Close()
	s.Now = 1
	for key, want := range map[string]string{"k0": "v1", "k1": "v1", "k2": "v1", "k49": "v1", "new": "n1"} {
		if got := getStr(t, s, key); got != want {
			t.Fatalf("after restart %s = %q, want %q", key, got, want)
		}
	}
	if got := scard(t, s, "s"); got != 1 {
		t.Fatalf("after restart SCARD %d", got)
	}
	if n := s.DBSize(0); n != 52 {
		t.Fatalf("after restart DBSIZE %d, want 52", n)
	}
}

// A flush that fails rolls its transaction back, and every statement
// fails with its error until the actor's Rollback; the database then
// holds what was committed before, and covers the log as far as then.
func TestFlushFailureFailsUntilRollback(t *testing.T) {
	s := openTest(t)
	inTx(t, s, func() {
		setStr(t, s, "a", "a0")
		setStr(t, s, "gone", "g0")
		must(t, s.SetRedoPosition(10))
	})
	must(t, s.Begin())
	setStr(t, s, "a", "a1")
	setStr(t, s, "gone", "g1")
	setStr(t, s, "b", "b1")
	// The row of a pending key vanishes behind the cache's back: the
	// flush's write of it finds nothing and fails.
	must(t, s.c.exec("DELETE FROM keys WHERE key = CAST('gone' AS BLOB)"))
	f, err := s.StartFlush(20)
	must(t, err)
	f.Run()
	if f.Err() == nil {
		t.Fatal("the flush did not fail")
	}
	if _, _, err := s.Lookup(0, []byte("zzz")); err == nil {
		t.Fatal("a statement after the failed flush succeeded")
	}
	n0 := s.DBSize(0)
	if _, _, err := s.Lookup(0, []byte("zzz")); err == nil {
		t.Fatal("the failure was not sticky")
	}
	if got := s.Land(); got != f || got.Err() == nil {
		t.Fatalf("Land after the failed flush: %v", got)
	}
	if n0 != 2 {
		t.Fatalf("DBSIZE after the failed flush %d, want the committed 2", n0)
	}
	s.Rollback()
	if pos, err := s.RedoPosition(); err != nil || pos != 10 {
		t.Fatalf("redo position %d (%v), want the committed 10", pos, err)
	}
	for key, want := range map[string]string{"a": "a0", "b": ""} {
		v, _, err := s.GetString(0, []byte(key), nil)
		must(t, err)
		if string(v) != want {
			t.Fatalf("after rollback %s = %q, want %q", key, v, want)
		}
	}
	inTx(t, s, func() { setStr(t, s, "b", "b2") })
	if v, _, _ := s.GetString(0, []byte("b"), nil); string(v) != "b2" {
		t.Fatalf("writes after the rollback: b = %q", v)
	}
}

// Random string and set writes on a cache too small for them, with
// commits and flushes (some with writes while they run) at random points:
// every read agrees with a model, and after each commit or flush SQLite's
// rows hold exactly the model, pending rows included.
func TestPendingRowsMatchModel(t *testing.T) {
	for seed := range int64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { pendingModelRun(t, seed) })
	}
}

func pendingModelRun(t *testing.T, seed int64) {
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	s, err := Open(Options{Path: filepath.Join(t.TempDir(), "cellar.db"), HotCacheBytes: 1200})
	must(t, err)
	defer s.Close()
	s.Now = 1
	strs := map[string]string{}
	sets := map[string]map[string]bool{}
	committed := func() {
		t.Helper()
		st, err := s.c.prepare("SELECT key, type, value FROM keys WHERE db = 0 ORDER BY key")
		must(t, err)
		defer st.close()
		got := map[string]string{}
		for {
			row, err := st.step()
			must(t, err)
			if !row {
				break
			}
			k := string(st.colBlob(0, nil))
			if Type(st.colInt(1)) == TypeString {
				got[k] = "s:" + string(st.colBlob(2, nil))
			} else {
				got[k] = fmt.Sprint("n:", st.colInt(2))
			}
		}
		st.reset()
		want := map[string]string{}
		for k, v := range strs {
			want[k] = "s:" + v
		}
		for k, m := range sets {
			want[k] = fmt.Sprint("n:", len(m))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("SQLite holds\n%v\nthe model\n%v", got, want)
		}
	}
	var fl flyer
	must(t, s.Begin())
	for step := range 3000 {
		k := fmt.Sprint("k", rng.IntN(12))
		sk := fmt.Sprint("s", rng.IntN(6))
		switch r := rng.IntN(100); {
		case r < 35:
			v := fmt.Sprint(step)
			must(t, s.SetString(0, []byte(k), []byte(v), 0, false))
			delete(sets, k)
			strs[k] = v
		case r < 40:
			n, found, err := s.StringLen(0, []byte(k))
			want, ok := strs[k]
			if err != nil || found != ok || n != int64(len(want)) {
				t.Fatalf("step %d STRLEN %s: %d %v %v, want %d %v", step, k, n, found, err, len(want), ok)
			}
		case r < 55:
			v, found, err := s.GetString(0, []byte(k), nil)
			want, ok := strs[k]
			if err != nil || found != ok || string(v) != want {
				t.Fatalf("step %d GET %s: %q %v %v, want %q %v", step, k, v, found, err, want, ok)
			}
		case r < 70:
			if _, ok := strs[sk]; ok {
				break
			}
			c, err := s.OpenOrCreateColl(0, []byte(sk), TypeSet)
			must(t, err)
			m := fmt.Sprint(rng.IntN(8))
			_, err = s.SetAdd(c, []byte(m))
			must(t, err)
			// Reads of other keys in the same command, as a multi-key
			// command makes, may evict the set's entry before its end.
			for range rng.IntN(4) {
				o := fmt.Sprint("k", rng.IntN(12))
				if _, _, err := s.GetString(0, []byte(o), nil); err != nil && err != ErrWrongType {
					t.Fatal(err)
				}
			}
			must(t, s.EndCommand())
			if sets[sk] == nil {
				sets[sk] = map[string]bool{}
			}
			sets[sk][m] = true
		case r < 80:
			c, err := s.OpenColl(0, []byte(sk), TypeSet)
			must(t, err)
			n := int64(0)
			if c != nil {
				n = c.Len
			}
			if n != int64(len(sets[sk])) {
				t.Fatalf("step %d SCARD %s: %d, want %d", step, sk, n, len(sets[sk]))
			}
		case r < 86:
			key := k
			if rng.IntN(2) == 0 {
				key = sk
			}
			_, err := s.Delete(0, []byte(key))
			must(t, err)
			delete(strs, key)
			delete(sets, key)
		case r < 93:
			fl.start(t, s, step)
		default:
			fl.land(t, s, step)
			_, _, err := s.Commit()
			must(t, err)
			committed()
			must(t, s.Begin())
		}
	}
	fl.land(t, s, 3000)
	_, _, err = s.Commit()
	must(t, err)
	committed()
}

// While a flush has the connection, a lookup of a key the flying
// transaction did not change is answered by the reader without waiting
// (a SET of a key never seen, a GET or SET of one the cache let go), and
// one of a key it did change waits for the flush and sees what it wrote:
// a key it deleted or created, and every key once it flushed a database.
func TestReadsAsideFlush(t *testing.T) {
	s := openTest(t)
	inTx(t, s, func() {
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			setStr(t, s, k, k+"0")
		}
	})
	// flight starts a flush of a transaction that ran fn, with nothing
	// cached, and checks that it is still flying after check.
	flight := func(fn, check func()) *Flush {
		t.Helper()
		must(t, s.Begin())
		fn()
		must(t, s.Reload()) // every lookup goes to SQLite
		f, err := s.StartFlush(1)
		must(t, err)
		must(t, s.Begin())
		check()
		if !s.Flying() {
			t.Fatal("a lookup aside waited for the flush")
		}
		return f
	}
	land := func(f *Flush) {
		t.Helper()
		if got := s.Land(); got != f || got.Err() != nil {
			t.Fatalf("Land: %v", got)
		}
		_, _, err := s.Commit()
		must(t, err)
	}

	reads := s.AsideReads()
	f := flight(func() {
		setStr(t, s, "a", "a1")
		if _, err := s.Delete(0, []byte("d")); err != nil {
			t.Fatal(err)
		}
		setStr(t, s, "n", "n1")
	}, func() {
		if got := getStr(t, s, "b"); got != "b0" {
			t.Fatalf("GET b aside: %q", got)
		}
		setStr(t, s, "c", "c1")     // an uncached string, overwritten
		setStr(t, s, "fresh", "f1") // a key nobody had
		if got := getStr(t, s, "c"); got != "c1" {
			t.Fatalf("GET c after its SET aside: %q", got)
		}
	})
	if s.AsideReads() == reads {
		t.Fatal("nothing was read aside")
	}
	// Keys the flight changed: reading them waits, and sees the flush.
	for _, key := range []string{"a", "d", "n"} {
		if st := s.aside(qGetString, 0, []byte(key)); st != nil {
			st.reset()
			f.Run() // for the cleanup's Close
			t.Fatalf("%s, changed by the flight, would be read aside", key)
		}
	}
	reads = s.AsideReads()
	go f.Run()
	for key, want := range map[string]string{"a": "a1", "d": "", "n": "n1"} {
		if got := getStr(t, s, key); got != want {
			t.Fatalf("GET %s changed by the flight: %q, want %q", key, got, want)
		}
	}
	if s.AsideReads() != reads {
		t.Fatal("a key the flight changed was read aside")
	}
	land(f)
	for key, want := range map[string]string{"b": "b0", "c": "c1", "fresh": "f1"} {
		if got := getStr(t, s, key); got != want {
			t.Fatalf("after the flush %s = %q, want %q", key, got, want)
		}
	}

	// A flight that flushed the database: nothing is read aside.
	must(t, s.Begin())
	must(t, s.FlushDB(0))
	f, err := s.StartFlush(2)
	must(t, err)
	must(t, s.Begin())
	if st := s.aside(qGetString, 0, []byte("b")); st != nil {
		st.reset()
		f.Run()
		t.Fatal("a key of a flushed database would be read aside")
	}
	reads = s.AsideReads()
	go f.Run()
	if got := getStr(t, s, "b"); got != "" {
		t.Fatalf("GET b after FLUSHDB: %q", got)
	}
	if s.AsideReads() != reads {
		t.Fatal("a key of a flushed database was read aside")
	}
	land(f)
}

// setStr makes key of database 0 the string v.
func setStr(t *testing.T, s *Store, key, v string) {
	t.Helper()
	must(t, s.SetString(0, []byte(key), []byte(v), 0, false))
}

// getStr is key's string in database 0 ("" when there is none).
func getStr(t *testing.T, s *Store, key string) string {
	t.Helper()
	v, _, err := s.GetString(0, []byte(key), nil)
	must(t, err)
	return string(v)
}

// flyer runs one flush at a time on its own goroutine for the model tests,
// while they go on with commands.
type flyer struct {
	f     *Flush
	flown chan struct{}
}

// start starts a flush unless one flies, and reports whether it did.
func (fl *flyer) start(t *testing.T, s *Store, step int) bool {
	t.Helper()
	if fl.f != nil {
		return false
	}
	f, err := s.StartFlush(uint64(step))
	must(t, err)
	fl.f, fl.flown = f, make(chan struct{})
	go func() { f.Run(); close(fl.flown) }()
	must(t, s.Begin())
	return true
}

// land waits for the flying flush, if any, and lands it.
func (fl *flyer) land(t *testing.T, s *Store, step int) {
	t.Helper()
	if fl.f == nil {
		return
	}
	<-fl.flown
	if f := s.Land(); f != fl.f || f.Err() != nil {
		t.Fatalf("step %d: landed %v", step, f)
	}
	fl.f = nil
}

// A checkpoint's phase 2 asked for while a flush flies runs when it lands,
// between its commit and the next transaction's BEGIN, and the writes of
// that transaction go on.
func TestCheckpointRestAtLand(t *testing.T) {
	s := openTest(t)
	inTx(t, s, func() {
		for i := range 200 {
			setStr(t, s, fmt.Sprint("k", i), "v")
		}
	})
	must(t, s.Checkpointer().Passive())
	must(t, s.Begin())
	setStr(t, s, "a", "1")
	f, err := s.StartFlush(1)
	must(t, err)
	must(t, s.Begin())
	if err := s.CheckpointRest(); err == nil {
		t.Fatal("phase 2 ran inside the open transaction")
	}
	s.CheckpointRestAtLand()
	setStr(t, s, "b", "2") // pending: needs no connection
	if _, _, ran := s.TakeCheckpointRest(); ran {
		t.Fatal("phase 2 ran before the flush landed")
	}
	f.Run()
	if got := s.Land(); got != f || got.Err() != nil {
		t.Fatalf("Land: %v", got)
	}
	if _, err, ran := s.TakeCheckpointRest(); !ran || err != nil {
		t.Fatalf("phase 2 at the landing: ran %v, %v", ran, err)
	}
	if s.Checkpoints() != 1 {
		t.Fatalf("%d checkpoints, want 1", s.Checkpoints())
	}
	setStr(t, s, "c", "3")
	_, _, err = s.Commit()
	must(t, err)
	for k, want := range map[string]string{"a": "1", "b": "2", "c": "3", "k7": "v"} {
		if got := getStr(t, s, k); got != want {
			t.Fatalf("%s = %q, want %q", k, got, want)
		}
	}
}

// A GET or SET of a key the flush in flight wrote, and the hot cache has
// let go, is answered from the flight's own row without waiting for it.
func TestFlyingStringRows(t *testing.T) {
	s := openTest(t)
	inTx(t, s, func() { setStr(t, s, "old", "o1") })
	must(t, s.Begin())
	setStr(t, s, "old", "o2") // an update
	setStr(t, s, "new", "n1") // an insert
	f, err := s.StartFlush(1)
	must(t, err)
	must(t, s.Begin())
	s.cache.drop(0, []byte("old"))
	s.cache.drop(0, []byte("new"))
	waits := s.FlushWaits()
	if got := getStr(t, s, "old"); got != "o2" {
		t.Fatalf("GET old while its flush flies: %q", got)
	}
	setStr(t, s, "new", "n2")
	if got := getStr(t, s, "new"); got != "n2" {
		t.Fatalf("GET new after its SET: %q", got)
	}
	if !s.Flying() || s.FlushWaits() != waits {
		t.Fatal("a key the flight wrote waited for it")
	}
	runAndCommit(t, s, f)
	s.cache.drop(0, []byte("old"))
	s.cache.drop(0, []byte("new"))
	for k, want := range map[string]string{"old": "o2", "new": "n2"} {
		if got := getStr(t, s, k); got != want {
			t.Fatalf("after the flush %s = %q, want %q", k, got, want)
		}
	}
}

// runAndCommit runs flush f here, lands it and commits what followed it.
func runAndCommit(t *testing.T, s *Store, f *Flush) {
	t.Helper()
	f.Run()
	if got := s.Land(); got != f || got.Err() != nil {
		t.Fatalf("Land: %v", got)
	}
	_, _, err := s.Commit()
	must(t, err)
}
