package storage

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// BenchmarkZSet1M measures the sorted-set operations whose cost the issue
// asks about on one 1 000 000-member sorted set (scores 0..999 999, members
// inserted in random order): point operations, an index-seek score range,
// and the rank operations SQLite can only count row by row.
//
//	go test ./storage -run '^$' -bench ZSet1M -benchtime 2000x
func BenchmarkZSet1M(b *testing.B) {
	const n = 1_000_000
	s, err := Open(Options{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.Now = 1
	member := func(i int) []byte { return fmt.Appendf(nil, "member:%07d", i) }
	rng := rand.New(rand.NewPCG(1, 2))
	perm := rng.Perm(n)
	for lo := 0; lo < n; lo += 50_000 {
		must(b, s.Begin())
		c, err := s.OpenOrCreateColl(0, []byte("z"), TypeZSet)
		must(b, err)
		for _, i := range perm[lo : lo+50_000] {
			must(b, s.ZSet(c, member(i), float64(i), false))
		}
		must(b, s.EndCommand())
		_, _, err = s.Commit()
		must(b, err)
	}
	open := func(b *testing.B) *Coll {
		c, err := s.OpenColl(0, []byte("z"), TypeZSet)
		if err != nil || c == nil || c.Len < n {
			b.Fatalf("zset: %+v %v", c, err)
		}
		return c
	}
	// inRounds runs op inside transactions of 64 operations, as the actor
	// batches a busy client's commands.
	inRounds := func(b *testing.B, op func(c *Coll, i int)) {
		must(b, s.Begin())
		c := open(b)
		for i := 0; i < b.N; i++ {
			op(c, i)
			if i%64 == 63 {
				must(b, s.EndCommand())
				if _, _, err := s.Commit(); err != nil {
					b.Fatal(err)
				}
				must(b, s.Begin())
				c = open(b)
			}
		}
		must(b, s.EndCommand())
		if _, _, err := s.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("ZSCORE", func(b *testing.B) {
		c := open(b)
		for i := 0; i < b.N; i++ {
			if _, ok, err := s.ZScore(c, member(rng.IntN(n))); !ok || err != nil {
				b.Fatal("missing member", err)
			}
		}
	})
	b.Run("ZRANGEBYSCORE-10", func(b *testing.B) {
		c := open(b)
		for i := 0; i < b.N; i++ {
			lo := float64(rng.IntN(n - 20))
			got := 0
			must(b, s.ZRangeElems(c, ZRange{Kind: ZByScore, Min: lo, Max: lo + 9, Limit: -1}, func(*Elem) bool { got++; return true }))
			if got < 10 {
				b.Fatalf("range gave %d", got)
			}
		}
	})
	for _, rank := range []int{10, 100_000, 500_000, 999_990} {
		b.Run(fmt.Sprintf("ZRANK-rank-%d", rank), func(b *testing.B) {
			c := open(b)
			for i := 0; i < b.N; i++ {
				r, err := s.ZRank(c, member(rank), float64(rank), false)
				if err != nil || r != int64(rank) {
					b.Fatalf("rank %d: %d %v", rank, r, err)
				}
			}
		})
		b.Run(fmt.Sprintf("ZREVRANK-rank-%d", rank), func(b *testing.B) {
			c := open(b)
			for i := 0; i < b.N; i++ {
				if _, err := s.ZRank(c, member(rank), float64(rank), true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, off := range []int64{0, 100_000, 500_000, 900_000} {
		b.Run(fmt.Sprintf("ZRANGE-offset-%d-count-10", off), func(b *testing.B) {
			c := open(b)
			for i := 0; i < b.N; i++ {
				got := 0
				must(b, s.ZRangeElems(c, ZRange{Kind: ZByRank, Start: off, Stop: off + 9}, func(*Elem) bool { got++; return true }))
				if got != 10 {
					b.Fatalf("range gave %d", got)
				}
			}
		})
	}
	b.Run("ZRANGEBYSCORE-LIMIT-offset-500000", func(b *testing.B) {
		c := open(b)
		for i := 0; i < b.N; i++ {
			must(b, s.ZRangeElems(c, ZRange{Kind: ZByScore, Min: 0, Max: n, Offset: 500_000, Limit: 10}, func(*Elem) bool { return true }))
		}
	})
	// Writes last: they change the set the reads above expect.
	b.Run("ZADD-new", func(b *testing.B) {
		inRounds(b, func(c *Coll, i int) {
			m := fmt.Appendf(nil, "new:%d", i)
			_, ok, _ := s.ZScore(c, m)
			must(b, s.ZSet(c, m, rng.Float64()*n, ok))
		})
	})
	b.Run("ZADD-update", func(b *testing.B) {
		inRounds(b, func(c *Coll, i int) {
			k := rng.IntN(n)
			must(b, s.ZSet(c, member(k), float64(k), true))
		})
	})
	b.Run("ZPOPMIN+ZADD", func(b *testing.B) {
		inRounds(b, func(c *Coll, i int) {
			es, err := s.ZPop(c, 1, false)
			must(b, err)
			must(b, s.ZSet(c, es[0].Member, es[0].Score, false))
		})
	})
}
