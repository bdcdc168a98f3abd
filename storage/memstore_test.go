package storage

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func openMemAt(t *testing.T, path string, maxBytes int64) *Store {
	t.Helper()
	s, err := Open(Options{Path: path, Memory: true, MaxMemory: maxBytes})
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
	if n := len(s.mem.dbs[0].keys); n != 0 || s.mem.bytes != 0 {
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
	if _, ok := s.mem.dbs[0].keys["k"]; !ok {
		t.Fatal("a deletion not yet flushed left memory")
	}
}
