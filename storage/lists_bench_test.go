package storage

import (
	"path/filepath"
	"testing"
)

// BenchmarkListPop measures a queue's pop from the head of a long list, in
// transactions of 1024 pops as the actor's flushes group them.
//
//	go test ./storage -run '^$' -bench ListPop -benchtime 200000x
func BenchmarkListPop(b *testing.B) {
	s, err := Open(Options{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.Now = 1
	key := []byte("queue")
	val := make([]byte, 3)
	vals := make([][]byte, 1000)
	for i := range vals {
		vals[i] = val
	}
	for pushed := 0; pushed < b.N+1; pushed += len(vals) {
		must(b, s.Begin())
		_, err := s.ListPush(0, key, Right, vals, false)
		must(b, err)
		must(b, s.EndCommand())
		_, _, err = s.Commit()
		must(b, err)
	}
	b.ResetTimer()
	must(b, s.Begin())
	for i := 0; i < b.N; i++ {
		got, err := s.ListPop(0, key, Left, 1)
		if err != nil || len(got) != 1 {
			b.Fatalf("pop: %q %v", got, err)
		}
		must(b, s.EndCommand())
		if i%1024 == 1023 {
			_, _, err = s.Commit()
			must(b, err)
			must(b, s.Begin())
		}
	}
	must(b, s.EndCommand())
	_, _, err = s.Commit()
	must(b, err)
}
