package actor

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
)

// The budget evicts the client using the most, skipping NO-EVICT ones,
// until the total is within it; an evicted client stops counting at once,
// and its later charges and release change nothing.
func TestMemBudgetEvictsLargest(t *testing.T) {
	b := NewMemBudget(1000, zerolog.Nop())
	var evicted []uint64
	reg := func(id uint64) *ClientMem {
		return b.Register(id, func() { evicted = append(evicted, id) })
	}
	small, big, exempt := reg(1), reg(2), reg(3)
	exempt.SetNoEvict(true)
	small.Add(MemQuery, 100)
	exempt.Add(MemReplies, 700)
	if len(evicted) != 0 || b.Used() != 800 {
		t.Fatalf("evicted %v, used %d before the budget was passed", evicted, b.Used())
	}
	big.Add(MemOutput, 300) // 1100 > 1000: big (300) goes, not exempt (700)
	if len(evicted) != 1 || evicted[0] != 2 {
		t.Fatalf("evicted %v, want [2]", evicted)
	}
	if !big.Gone() || b.Used() != 800 || b.Evicted() != 1 {
		t.Fatalf("gone %v, used %d, evicted %d", big.Gone(), b.Used(), b.Evicted())
	}
	big.Add(MemOutput, 5000) // no longer counted
	b.Release(big)
	if b.Used() != 800 {
		t.Fatalf("used %d after an evicted client's charge and release", b.Used())
	}
	// Only the exempt client is left to hold too much: nobody is evicted
	// once small is gone.
	exempt.Add(MemReplies, 1000)
	if len(evicted) != 2 || evicted[1] != 1 {
		t.Fatalf("evicted %v, want [2 1]", evicted)
	}
	if b.Used() != 1700 || exempt.Gone() {
		t.Fatalf("used %d, exempt gone %v", b.Used(), exempt.Gone())
	}
	b.Release(exempt)
	if b.Used() != 0 {
		t.Fatalf("used %d after every client left", b.Used())
	}
}

// chargeReply reports the client's output (built plus unsent) and whether
// it is still counted.
func TestChargeReply(t *testing.T) {
	b := NewMemBudget(0, zerolog.Nop())
	m := b.Register(1, func() {})
	m.Set(MemOutput, 40)
	if out, ok := m.chargeReply(60); out != 100 || !ok {
		t.Fatalf("chargeReply: %d %v", out, ok)
	}
	if m.Total() != 100 || m.Output() != 100 || m.Part(MemReplies) != 60 {
		t.Fatalf("total %d output %d replies %d", m.Total(), m.Output(), m.Part(MemReplies))
	}
	b.Release(m)
	if _, ok := m.chargeReply(1); ok {
		t.Fatal("a released client is still counted")
	}
}

// Charges, evictions and releases from many goroutines at once leave the
// total equal to what the counted clients hold (run with -race).
func TestMemBudgetConcurrent(t *testing.T) {
	b := NewMemBudget(50_000, zerolog.Nop())
	var evictions atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				m := b.Register(uint64(g*1000+i), func() { evictions.Add(1) })
				for p := range memParts {
					m.Add(p, int64(100*(p+1)))
				}
				if i%2 == 0 {
					b.Release(m)
				}
			}
		}()
	}
	wg.Wait()
	var sum int64
	b.mu.Lock()
	for _, m := range b.clients {
		sum += m.Total()
	}
	b.mu.Unlock()
	if sum != b.Used() {
		t.Fatalf("used %d, counted clients hold %d", b.Used(), sum)
	}
	if b.Used() > 50_000 {
		t.Fatalf("used %d over the budget with evictable clients left", b.Used())
	}
	if evictions.Load() == 0 || uint64(evictions.Load()) != b.Evicted() {
		t.Fatalf("evictions %d, Evicted %d", evictions.Load(), b.Evicted())
	}
}
