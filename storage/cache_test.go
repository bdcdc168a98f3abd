package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// A store with the hot cache and one without, driven through the same
// random writes, reads (which leave negative entries for absent keys), list
// and set creations, expiries, renames, copies, moves, deletes, sweeps,
// flushes, swaps and rolled-back transactions, must read the same values
// at every step. A small cache makes evictions frequent too.
func TestHotCacheNeverChangesReads(t *testing.T) {
	open := func(cache int64) *Store {
		s, err := Open(Options{Path: filepath.Join(t.TempDir(), "c.db"), HotCacheBytes: cache})
		must(t, err)
		t.Cleanup(func() { s.Close() })
		s.Now = 1_000_000
		return s
	}
	cached, plain := open(4<<10), open(0)
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() []byte { return []byte(fmt.Sprint("k", rng.IntN(40))) }
	db := func() int { return rng.IntN(3) }
	for step := 0; step < 6000; step++ {
		k, d := key(), db()
		val := bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, rng.IntN(300))
		exp := int64(0)
		if rng.IntN(4) == 0 {
			exp = cached.Now + int64(rng.IntN(20))
		}
		op := rng.IntN(16)
		rollback := rng.IntN(20) == 0
		keep := rng.IntN(2) == 0
		flush := rng.IntN(10) == 0
		for _, s := range []*Store{cached, plain} {
			must(t, s.Begin())
			switch op {
			case 0, 1, 2, 3:
				must(t, s.SetString(d, k, val, exp, keep))
			case 4:
				_, err := s.Delete(d, k)
				must(t, err)
			case 5:
				must(t, s.SetExpire(d, k, exp))
			case 6:
				if _, ok, _ := s.Lookup(d, k); ok {
					must(t, s.Rename(d, k, []byte("renamed")))
				}
			case 7:
				_, err := s.Copy(d, k, (d+1)%3, k, true)
				must(t, err)
			case 8:
				if _, ok, _ := s.Lookup(d, k); ok {
					if _, exists, _ := s.Lookup((d+1)%3, k); !exists {
						must(t, s.Move(d, k, (d+1)%3))
					}
				}
			case 9:
				_, err := s.SweepExpired(5)
				must(t, err)
			case 10:
				if flush {
					must(t, s.FlushDB(d))
				}
			case 11:
				must(t, s.SwapDB(d, (d+1)%3))
			case 12, 13:
				// a read, through the cache on one side
				s.GetString(d, k, nil)
			case 14:
				// creates a list where a GET may have found nothing
				_, err := s.ListPush(d, k, Left, [][]byte{val}, false)
				if err != nil && !errors.Is(err, ErrWrongType) {
					t.Fatal(err)
				}
			case 15:
				// creates a set where a GET may have found nothing
				c, err := s.OpenOrCreateColl(d, k, TypeSet)
				if err == nil {
					_, err = s.SetAdd(c, val)
					must(t, err)
					must(t, s.EndCommand())
				} else if !errors.Is(err, ErrWrongType) {
					t.Fatal(err)
				}
			}
			if rollback {
				s.Rollback()
			} else {
				_, _, err := s.Commit()
				must(t, err)
			}
		}
		// Advance time for both.
		if rng.IntN(3) == 0 {
			cached.Now += int64(rng.IntN(8))
			plain.Now = cached.Now
		}
		check := [][]byte{k, []byte("renamed")}
		if step%10 == 0 {
			for i := 0; i < 40; i++ {
				check = append(check, []byte(fmt.Sprint("k", i)))
			}
		}
		for _, rk := range check {
			for rd := 0; rd < 3; rd++ {
				a, aok, aerr := cached.GetString(rd, rk, nil)
				b, bok, berr := plain.GetString(rd, rk, nil)
				if !bytes.Equal(a, b) || aok != bok || (aerr == nil) != (berr == nil) {
					t.Fatalf("step %d op %d: db %d key %s: cached %q %v %v, plain %q %v %v",
						step, op, rd, rk, a, aok, aerr, b, bok, berr)
				}
			}
		}
	}
	_, _, hits, _ := cached.CacheStats()
	if hits == 0 {
		t.Fatal("the cache was never hit: the test does not exercise it")
	}
}
