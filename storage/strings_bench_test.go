package storage

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkSetString measures SET through the Store, committed every
// 16384 writes: new keys (in a scattered order over a large key space),
// and existing ones overwritten.
//
//	go test ./storage -run '^$' -bench SetString -benchtime 200000x
func BenchmarkSetString(b *testing.B) {
	open := func(b *testing.B) *Store {
		s, err := Open(Options{Path: filepath.Join(b.TempDir(), "bench.db")})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		s.Now = 1
		return s
	}
	key := func(i int) []byte { return fmt.Appendf(nil, "key:%012d", uint64(i)*2654435761%1_000_000_007) }
	val := []byte("xxx")
	run := func(b *testing.B, s *Store) {
		must(b, s.Begin())
		for i := 0; i < b.N; i++ {
			must(b, s.SetString(0, key(i), val, 0, false))
			must(b, s.EndCommand())
			if i%16384 == 16383 {
				_, _, err := s.Commit()
				must(b, err)
				must(b, s.Begin())
			}
		}
		_, _, err := s.Commit()
		must(b, err)
	}
	b.Run("new", func(b *testing.B) { run(b, open(b)) })
	b.Run("existing", func(b *testing.B) {
		s := open(b)
		run(b, s)
		b.ResetTimer()
		run(b, s)
	})
}

// BenchmarkMemFlushOverwrite is the in-memory engine's flush of keys
// SQLite already holds, each overwritten once since the last flush (the
// case of INCR and SET over a working set): ns/op is per key flushed.
func BenchmarkMemFlushOverwrite(b *testing.B) { benchMemFlush(b, false) }

// BenchmarkMemFlushInsert is the same for keys SQLite does not hold yet,
// in random order (SET over a growing key space).
func BenchmarkMemFlushInsert(b *testing.B) { benchMemFlush(b, true) }

func benchMemFlush(b *testing.B, fresh bool) {
	s, err := Open(Options{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	s.Now = 1
	const keys = 50_000
	key := func(round, i int) []byte {
		if fresh {
			return fmt.Appendf(nil, "key:%012d", uint64(round*keys+i)*2654435761%1_000_000_007)
		}
		return fmt.Appendf(nil, "key:%012d", i)
	}
	flush := func(round int) {
		must(b, s.Begin())
		for i := 0; i < keys; i++ {
			must(b, s.SetString(0, key(round, i), fmt.Appendf(nil, "%d", round), 0, false))
			must(b, s.EndCommand())
		}
		b.StartTimer()
		f, err := s.StartFlush(uint64(round + 1))
		must(b, err)
		f.Run()
		if f := s.Land(); f == nil || f.Err() != nil {
			b.Fatalf("flush: %v", f)
		}
		b.StopTimer()
	}
	b.StopTimer()
	flush(0)
	b.ResetTimer()
	b.StopTimer()
	for round := 1; round <= b.N/keys+1; round++ {
		flush(round)
	}
}
