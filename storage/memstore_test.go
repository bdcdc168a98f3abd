package storage

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar/internal/wait"
)

func openMemAt(t *testing.T, path string, maxBytes int64) *Store {
	t.Helper()
	s, err := Open(Options{Path: path, MaxMemory: maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	s.Now = 1_000_000
	return s
}

// Strings on the in-memory engine: written in memory, flushed by Commit,
// read back by a fresh Store from SQLite; overwrites, deletions, expiries
// and large values (blobs) included, with a bound so small that almost
// every key is evicted and loaded again.
func TestMemStringsFlushAndReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	for _, bound := range []int64{0, 2000} {
		t.Run(fmt.Sprintf("max %d", bound), func(t *testing.T) {
			s := openMemAt(t, path, bound)
			model := map[string]string{}
			val := func(i, round int) string {
				if i%7 == 0 {
					return strings.Repeat(fmt.Sprint(round), 1500) // a blob
				}
				return fmt.Sprintf("v%d-%d", i, round)
			}
			for round := 0; round < 6; round++ {
				for i := 0; i < 200; i++ {
					k := fmt.Sprintf("k%d", i)
					switch (i + round) % 5 {
					case 0:
						if _, err := s.Delete(0, []byte(k)); err != nil {
							t.Fatal(err)
						}
						delete(model, k)
					default:
						if err := s.SetString(0, []byte(k), []byte(val(i, round)), 0, false); err != nil {
							t.Fatal(err)
						}
						model[k] = val(i, round)
					}
					s.EndCommand()
				}
				if _, _, err := s.Commit(); err != nil {
					t.Fatal(err)
				}
				if got := s.DBSize(0); got != int64(len(model)) {
					t.Fatalf("round %d: DBSIZE %d, model %d", round, got, len(model))
				}
			}
			// An expiry, then a Store that starts from the file alone.
			if err := s.SetExpire(0, []byte("k1"), 1_000_500); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openMemAt(t, path, bound)
			defer s.Close()
			if got := s.DBSize(0); got != int64(len(model)) {
				t.Fatalf("after reopening: DBSIZE %d, model %d", got, len(model))
			}
			for i := 0; i < 200; i++ {
				k := fmt.Sprintf("k%d", i)
				got, found, err := s.GetString(0, []byte(k), nil)
				want, ok := model[k]
				if err != nil || found != ok || string(got) != want {
					t.Fatalf("%s: got %.20q (%v, %v), want %.20q (%v)", k, got, found, err, want, ok)
				}
				s.EndCommand()
			}
			if m, ok, _ := s.Lookup(0, []byte("k1")); !ok || m.ExpireAt != 1_000_500 {
				t.Fatalf("k1's expiry: %+v %v", m, ok)
			}
			s.Now = 1_000_501
			if _, ok, _ := s.Lookup(0, []byte("k1")); ok {
				t.Fatal("k1 outlived its expiry")
			}
			if _, _, err := s.Commit(); err != nil {
				t.Fatal(err)
			}
			var blobs, garbage int64
			st := s.mem.r.q("SELECT (SELECT count(*) FROM blobs), (SELECT count(*) FROM blob_garbage)")
			if _, err := st.step(); err != nil {
				t.Fatal(err)
			}
			blobs, garbage = st.colInt(0), st.colInt(1)
			st.reset()
			wantBlobs := 0
			for k, v := range model {
				if k != "k1" && stringIsRef(k, []byte(v)) {
					wantBlobs++
				}
			}
			if blobs != int64(wantBlobs) || garbage != 0 {
				t.Fatalf("%d blobs (want %d) and %d garbage refs", blobs, wantBlobs, garbage)
			}
			delete(model, "k1")
			if bound > 0 && s.mem.bytes > bound+4000 {
				t.Fatalf("the engine holds %d bytes, bound %d", s.mem.bytes, bound)
			}
		})
	}
}

// Without a memory bound, reads of keys that do not exist leave nothing in
// memory: a client cannot grow the engine by asking for missing keys.
func TestMemMissesLeaveNothing(t *testing.T) {
	s := openMemAt(t, filepath.Join(t.TempDir(), "cellar.db"), 0)
	defer s.Close()
	for i := 0; i < 1000; i++ {
		if _, found, err := s.GetString(0, []byte(fmt.Sprint("missing", i)), nil); err != nil || found {
			t.Fatalf("GET of a missing key: %v %v", found, err)
		}
		s.EndCommand()
	}
	if n := s.mem.dbs[0].keys.len(); n != 0 || s.mem.bytes != 0 {
		t.Fatalf("the engine holds %d entries, %d bytes, after reads of missing keys", n, s.mem.bytes)
	}
	// A deletion is kept until it is flushed, then may go too.
	s.SetString(0, []byte("k"), []byte("v"), 0, false)
	s.EndCommand()
	if _, _, err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	s.Delete(0, []byte("k"))
	s.EndCommand()
	if s.mem.dbs[0].keys.get("k") == nil {
		t.Fatal("a deletion not yet flushed left memory")
	}
}

// A miss of a name SQLite has never held reads nothing once the presence
// filter is built (mempresence.go); a name SQLite holds, or held, is read.
// Names written after the filter's scan are found too.
func TestMemPresenceFilter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	s := openMemAt(t, path, 0)
	for i := 0; i < 300; i++ {
		must(t, s.Begin())
		must(t, s.SetString(i%3, []byte(fmt.Sprint("k", i)), []byte("v"), 0, false))
		must(t, s.EndCommand())
	}
	_, _, err := s.Commit()
	must(t, err)
	s.Close()

	s = openMemAt(t, path, 1) // a bound of a byte: every key read is let go
	defer s.Close()
	wait.For(t, time.Minute, "the presence filter to be built", func() bool { return s.mem.pres.ready.Load() })
	get := func(db int, key string) bool {
		t.Helper()
		must(t, s.Begin())
		_, ok, err := s.GetString(db, []byte(key), nil)
		must(t, err)
		must(t, s.EndCommand())
		return ok
	}
	reads := s.mem.reads
	for i := 0; i < 1000; i++ {
		if get(0, fmt.Sprint("absent", i)) {
			t.Fatalf("absent%d found", i)
		}
	}
	// 1000 absent names at 1 in ~1 700 false "maybe"s: a few reads at most.
	if n := s.mem.reads - reads; n > 10 {
		t.Fatalf("%d of 1000 misses of names SQLite never held read SQLite", n)
	}
	for i := 0; i < 300; i++ {
		if !get(i%3, fmt.Sprint("k", i)) {
			t.Fatalf("k%d not found in db %d", i, i%3)
		}
	}
	// A name written now, flushed and let go, is read back from SQLite.
	must(t, s.Begin())
	must(t, s.SetString(0, []byte("new"), []byte("v"), 0, false))
	must(t, s.EndCommand())
	_, _, err = s.Commit()
	must(t, err)
	must(t, s.Begin())
	must(t, s.EndCommand()) // the bound lets "new" go now that it is flushed
	if s.mem.dbs[0].keys.get("new") != nil {
		t.Fatal("the flushed key is still held: the test reads no SQLite")
	}
	if !get(0, "new") {
		t.Fatal("a key flushed after the filter was built was not found")
	}

	// Past twice the names it was sized for, a larger filter is built
	// beside it and takes its place; nothing SQLite holds is lost on the
	// way, written before, during or after its scan.
	old := s.mem.pres
	old.cap = 10
	write := func(name string) {
		t.Helper()
		must(t, s.Begin())
		must(t, s.SetString(0, []byte(name), []byte("v"), 0, false))
		must(t, s.EndCommand())
		_, _, err := s.Commit()
		must(t, err)
	}
	for i := 0; i < 30; i++ {
		write(fmt.Sprint("grow", i))
	}
	wait.For(t, time.Minute, "the larger filter to take over", func() bool {
		write("during")
		return s.mem.pres != old
	})
	write("after")
	reads = s.mem.reads
	for i := 0; i < 1000; i++ {
		if get(0, fmt.Sprint("absent", i)) {
			t.Fatalf("absent%d found", i)
		}
	}
	if n := s.mem.reads - reads; n > 10 {
		t.Fatalf("the new filter: %d of 1000 misses read SQLite", n)
	}
	for _, k := range []string{"new", "grow0", "grow29", "during", "after", "k3", "k299"} {
		db := 0
		if k == "k299" {
			db = 2
		}
		if !get(db, k) {
			t.Fatalf("%s not found after the filter grew", k)
		}
	}
}

// The flush's page cache is sized to the file, within its bound.
func TestFlushCacheKB(t *testing.T) {
	for _, c := range []struct {
		pages int64
		most  int
		want  int
	}{
		{0, 32 << 10, 4 << 10},        // a new file: the floor
		{32 << 10, 32 << 10, 4 << 10}, // 128 MiB: a 32nd is 4 MiB
		{40 << 10, 32 << 10, 8 << 10}, // a little more: the next power of two
		{1 << 30, 32 << 10, 32 << 10}, // 4 TiB: the bound
		{0, 2 << 10, 2 << 10},         // a bound below the floor wins
		{1 << 20, 20 << 10, 20 << 10}, // and one that is no power of two
	} {
		if got := flushCacheKB(c.pages, c.most); got != c.want {
			t.Errorf("flushCacheKB(%d pages, %d KiB) = %d KiB, want %d", c.pages, c.most, got, c.want)
		}
	}
	// A flush sizes its connection's cache (here from a size it did not
	// choose), and has what it says it has.
	for _, most := range []int{32 << 10, 3000} {
		s, err := Open(Options{Path: filepath.Join(t.TempDir(), "cellar.db"), CacheKB: most})
		if err != nil {
			t.Fatal(err)
		}
		must(t, s.mem.w.c.exec("PRAGMA cache_size = -100"))
		s.mem.cacheKB = 100
		must(t, s.SetString(0, []byte("k"), []byte("v"), 0, false))
		s.EndCommand()
		if _, _, err := s.Commit(); err != nil {
			t.Fatal(err)
		}
		st := s.mem.w.q("PRAGMA cache_size")
		if _, err := st.step(); err != nil {
			t.Fatal(err)
		}
		got := st.colInt(0)
		st.reset()
		if want := -int64(min(4<<10, most)); got != want || s.mem.cacheKB != int(-want) {
			t.Errorf("bound %d KiB: the flush's connection has cache_size %d (cacheKB %d), want %d", most, got, s.mem.cacheKB, want)
		}
		s.Close()
	}
}

// Settled is true only once SQLite holds every change: not while changes
// wait for a freeze, not while a flight holds them, and again once it
// landed. Trim then lets go of the emptied list of changed entries.
func TestSettledAndTrim(t *testing.T) {
	s := openMemAt(t, filepath.Join(t.TempDir(), "cellar.db"), 0)
	defer s.Close()
	if !s.Settled() {
		t.Fatal("a new store is not settled")
	}
	for i := 0; i < 5000; i++ {
		if err := s.SetString(0, []byte(fmt.Sprintf("k%d", i)), []byte("v"), 0, false); err != nil {
			t.Fatal(err)
		}
		s.EndCommand()
	}
	if s.Settled() {
		t.Fatal("settled with 5000 changed keys")
	}
	f, err := s.StartFlush(1)
	if err != nil || f == nil {
		t.Fatalf("StartFlush: %v, %v", f, err)
	}
	if s.Settled() {
		t.Fatal("settled with a flight in the air")
	}
	f.Run()
	if s.Settled() {
		t.Fatal("settled before the flight landed")
	}
	if got := s.Land(); got == nil || got.Err() != nil {
		t.Fatalf("Land: %v", got)
	}
	if !s.Settled() {
		t.Fatal("not settled after the flight landed")
	}
	if c := cap(s.mem.dbs[0].dirty); c < 5000 {
		t.Fatalf("the changed list kept %d slots, want the load's", c)
	}
	s.Trim()
	if c := cap(s.mem.dbs[0].dirty); c != 0 {
		t.Fatalf("Trim left %d slots", c)
	}
	if got, found, err := s.GetString(0, []byte("k4999"), nil); err != nil || !found || string(got) != "v" {
		t.Fatalf("k4999 after Trim: %q %v %v", got, found, err)
	}
	s.EndCommand()
}
