package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cellar-db/cellar/storage/object"
)

// memConns opens the in-memory engine's two connections on a fresh
// database: the flush's writer and the loads' reader.
func memConns(t *testing.T) (w, r *sqlc) {
	t.Helper()
	s := openTest(t)
	wc, err := openConn(s.Path(), sqlite3.SQLITE_OPEN_READWRITE)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := openConn(s.Path(), sqlite3.SQLITE_OPEN_READONLY)
	if err != nil {
		t.Fatal(err)
	}
	w, r = newSQLC(wc), newSQLC(rc)
	t.Cleanup(func() { r.close(); w.close() })
	return w, r
}

// flushTx runs fn in one transaction of w, as a flush does.
func flushTx(t *testing.T, w *sqlc, fn func() error) {
	t.Helper()
	if err := w.c.exec("BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if err := fn(); err != nil {
		t.Fatal(err)
	}
	if err := w.freeGarbage(); err != nil {
		t.Fatal(err)
	}
	if err := w.c.exec("COMMIT"); err != nil {
		t.Fatal(err)
	}
}

// A hash changed at random, frozen and flushed at random points, loads back
// as the model says after every flush — small and large, values inline and
// in blobs, fields deleted and set again — and no blob outlives its row.
func TestElemsFlushAndLoad(t *testing.T) {
	w, r := memConns(t)
	for _, tc := range []struct {
		name   string
		tbl    *elemTable
		fields int
	}{{"small hash", hashTable, 40}, {"large hash", hashTable, 600}, {"set", setTable, 400}, {"zset", zsetTable, 300}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.fields)))
			id := int64(tc.fields)
			e := object.NewElems()
			model := map[string]object.Elem{}
			check := func() {
				t.Helper()
				rows, err := loadElems(r, tc.tbl, id)
				if err != nil {
					t.Fatal(err)
				}
				got := object.Loaded(rows)
				if got.Len() != len(model) {
					t.Fatalf("loaded %d elements, the model has %d", got.Len(), len(model))
				}
				for name, want := range model {
					el, ok := got.Get([]byte(name))
					if !ok || !bytes.Equal(el.Value, want.Value) || el.Score != want.Score || el.Ord != want.Ord || el.Exp != want.Exp {
						t.Fatalf("%q: loaded %+v (%v), want %+v", name, el, ok, want)
					}
				}
			}
			for step := 0; step < 4000; step++ {
				name := fmt.Sprintf("f%d", rng.IntN(tc.fields))
				switch n := rng.IntN(10); {
				case n < 6:
					el := object.Elem{Name: name}
					switch tc.tbl {
					case hashTable:
						el.Ord = int64(step + 1)
						el.Value = bytes.Repeat([]byte{byte('a' + step%26)}, []int{0, 5, 2000}[rng.IntN(3)])
						el.Exp = int64(rng.IntN(2) * step)
					case zsetTable:
						el.Score = float64(rng.IntN(100)) / 4
					}
					e.Put(el)
					el.H = object.Hash([]byte(name))
					model[name] = el
				case n < 9:
					_, had := model[name]
					if _, ok := e.Delete([]byte(name)); ok != had {
						t.Fatalf("Delete(%q) = %v, model %v", name, ok, had)
					}
					delete(model, name)
				default:
					d := e.Freeze()
					flushTx(t, w, func() error { return flushElems(w, tc.tbl, id, d) })
					check()
				}
			}
			flushTx(t, w, func() error { return flushElems(w, tc.tbl, id, e.Freeze()) })
			check()
			flushTx(t, w, func() error { return dropElems(w, tc.tbl, id) })
			model = map[string]object.Elem{}
			check()
			var blobs, garbage int64
			st := r.q("SELECT (SELECT count(*) FROM blobs), (SELECT count(*) FROM blob_garbage)")
			if _, err := st.step(); err != nil {
				t.Fatal(err)
			}
			blobs, garbage = st.colInt(0), st.colInt(1)
			st.reset()
			if blobs != 0 || garbage != 0 {
				t.Fatalf("%d blobs and %d garbage refs outlive their rows", blobs, garbage)
			}
		})
	}
}
