package storage

import (
	"path/filepath"
	"testing"
	"unsafe"
)

// An entry is what every key in memory costs besides its name and value:
// it must stay in Go's 64-byte size class (the next is 80).
func TestEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n > 64 {
		t.Fatalf("entry is %d bytes: past Go's 64-byte size class, every key in memory costs 16 bytes more", n)
	}
}

func TestFrozenKeySize(t *testing.T) {
	if n := unsafe.Sizeof(frozenKey{}); n > 56 {
		t.Fatalf("frozenKey is %d bytes, was 56: a flush holds one per key it writes", n)
	}
}

// An entry counting 4 GiB or more keeps its exact size beside it: growing
// past, shrinking back and leaving memory bring the engine's bytes back.
func TestEntryHugeSize(t *testing.T) {
	s := openMemAt(t, filepath.Join(t.TempDir(), "cellar.db"), 0)
	defer s.Close()
	m := s.mem
	e, err := m.entryAt(0, []byte("big"))
	if err != nil {
		t.Fatal(err)
	}
	base := m.bytes - m.sizeOf(e)
	for _, n := range []int64{5 << 30, 1 << 40, 100, 6 << 30} {
		m.resizeTo(e, n) // collections too large to build here
		want := n + int64(len(e.kv)+memEntryOverhead)
		if got := m.bytes - base; got != want || m.sizeOf(e) != want {
			t.Fatalf("object of %d: engine bytes %d, entry %d, want %d", n, got, m.sizeOf(e), want)
		}
		if huge := len(m.huge) == 1; huge != (want >= sizeHuge) {
			t.Fatalf("object of %d: %d sizes beside the entries", n, len(m.huge))
		}
	}
	m.forget(e)
	if m.bytes != base || len(m.huge) != 0 {
		t.Fatalf("after the entry left: engine bytes %d (want %d), %d sizes beside", m.bytes, base, len(m.huge))
	}
}

// A flush generation is kept modulo 2^32 in an entry: the flushes not yet
// committed read as in flight across the wrap, the committed ones not.
func TestInFlightAcrossTheWrap(t *testing.T) {
	s := openMemAt(t, filepath.Join(t.TempDir(), "cellar.db"), 0)
	defer s.Close()
	m := s.mem
	for _, committed := range []uint64{5, 1<<32 - 2, 1<<32 - 1, 1 << 32, 7<<32 + 3} {
		m.committed.Store(committed)
		m.gen = committed + 2 // one flight in the air, one batch collecting
		for g, want := range map[uint64]bool{
			committed - 3: false, committed - 1: false, committed: false,
			committed + 1: true, committed + 2: true, committed + 3: false,
		} {
			if got := m.inFlight(uint32(g)); got != want {
				t.Errorf("committed %d, collecting %d: inFlight(%d) = %v", committed, m.gen, g, got)
			}
		}
	}
}
