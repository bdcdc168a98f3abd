package storage

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkHashOrder measures what keeping a hash's insertion order costs
// (migration 11): HSET of a new field into hashes of 10 fields, an update
// of an existing field, and reading a whole 10-field and a 100-field hash
// the way HGETALL does (small hashes in insertion order, a sort of their
// rows).
//
//	go test ./storage -run '^$' -bench HashOrder -benchtime 200000x
func BenchmarkHashOrder(b *testing.B) {
	s, err := Open(Options{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.Now = 1
	fill := func(key string, n int) {
		must(b, s.Begin())
		c, err := s.OpenOrCreateColl(0, []byte(key), TypeHash)
		must(b, err)
		for i := 0; i < n; i++ {
			_, err := s.HashSet(c, fmt.Appendf(nil, "field:%03d", i), []byte("value"), HashReplace)
			must(b, err)
		}
		must(b, s.EndCommand())
		_, _, err = s.Commit()
		must(b, err)
	}
	fill("h10", 10)
	fill("h100", 100)
	// inRounds runs op inside transactions of 64 operations, as the actor
	// batches a busy client's commands.
	inRounds := func(b *testing.B, op func(i int)) {
		must(b, s.Begin())
		for i := 0; i < b.N; i++ {
			op(i)
			if i%64 == 63 {
				must(b, s.EndCommand())
				if _, _, err := s.Commit(); err != nil {
					b.Fatal(err)
				}
				must(b, s.Begin())
			}
		}
		must(b, s.EndCommand())
		_, _, err := s.Commit()
		must(b, err)
	}
	b.Run("HSET new field", func(b *testing.B) {
		inRounds(b, func(i int) {
			c, err := s.OpenOrCreateColl(0, fmt.Appendf(nil, "new:%d", i/10), TypeHash)
			must(b, err)
			_, err = s.HashSet(c, fmt.Appendf(nil, "f%d", i%10), []byte("value"), HashReplace)
			must(b, err)
		})
	})
	b.Run("HSET existing field", func(b *testing.B) {
		inRounds(b, func(i int) {
			c, err := s.OpenColl(0, []byte("h10"), TypeHash)
			must(b, err)
			_, err = s.HashSet(c, fmt.Appendf(nil, "field:%03d", i%10), fmt.Appendf(nil, "v%d", i), HashReplace)
			must(b, err)
		})
	})
	for _, key := range []string{"h10", "h100"} {
		b.Run("HGETALL "+key, func(b *testing.B) {
			inRounds(b, func(i int) {
				c, err := s.OpenColl(0, []byte(key), TypeHash)
				must(b, err)
				n := 0
				must(b, s.OrderedElements(c, func(e *Elem) bool { n++; return true }))
				if int64(n) != c.Len {
					b.Fatalf("read %d of %d", n, c.Len)
				}
			})
		})
	}
}
