package redo

import "testing"

// BenchmarkAppendWrite is one actor round: 20 records of about 100 bytes
// appended, then one Write (one pwrite of the round). No fsync.
func BenchmarkAppendWrite(b *testing.B) {
	l, _ := mustOpen(b, b.TempDir(), Options{})
	defer l.Close()
	p := make([]byte, 100)
	for i := range p {
		p[i] = byte(i)
	}
	b.SetBytes(20 * int64(len(p)+frameSize))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for range 20 {
			if err := l.Append(p); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := l.Write(); err != nil {
			b.Fatal(err)
		}
		if i%8192 == 0 {
			// Keep the disk bounded, as flushes will: only sealed
			// segments go.
			l.Truncate(l.Written())
		}
	}
}

// BenchmarkAppendWriteSync adds a Sync per round: the cost of
// durability "always" when no other round shares the fsync.
func BenchmarkAppendWriteSync(b *testing.B) {
	l, _ := mustOpen(b, b.TempDir(), Options{})
	defer l.Close()
	p := make([]byte, 100)
	b.ReportAllocs()
	for b.Loop() {
		for range 20 {
			if err := l.Append(p); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := l.Write(); err != nil {
			b.Fatal(err)
		}
		if _, err := l.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
