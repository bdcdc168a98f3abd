package actor

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram is a latency histogram in nanoseconds with eight buckets per
// power of two (about 9% resolution), from 1 ns to about 10 hours. It backs
// LATENCY HISTOGRAM and INFO latencystats (per command, recorded by the
// actor with Record) and the metrics endpoint's fsync, flush and checkpoint
// histograms (recorded from any goroutine with RecordAtomic). Recording is
// one index computation and one increment; reading sums the buckets.
type Histogram struct {
	counts [histBuckets]uint64
	sumNs  uint64
}

const (
	histSubBits = 3
	histSub     = 1 << histSubBits
	histMaxExp  = 45 // 2^45 ns is about 9.8 hours; longer lands in the last bucket
	histBuckets = (histMaxExp - histSubBits + 1) * histSub
)

// histIndex is the bucket of a duration of ns nanoseconds.
func histIndex(ns uint64) int {
	if ns < histSub {
		return int(ns)
	}
	e := bits.Len64(ns) - 1 // ns is in [2^e, 2^(e+1))
	if e > histMaxExp {
		return histBuckets - 1
	}
	sub := int(ns>>(e-histSubBits)) & (histSub - 1)
	return (e-histSubBits+1)*histSub + sub
}

// histUpper is the largest duration, in nanoseconds, bucket i holds.
func histUpper(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	e := i/histSub + histSubBits - 1
	sub := uint64(i % histSub)
	return (histSub+sub+1)<<(e-histSubBits) - 1
}

// Record counts one duration; the owner's goroutine only.
func (h *Histogram) Record(d time.Duration) {
	ns := uint64(max(d, 0))
	h.counts[histIndex(ns)]++
	h.sumNs += ns
}

// RecordAtomic counts one duration; safe from any goroutine, and beside
// readers that use Load.
func (h *Histogram) RecordAtomic(d time.Duration) {
	ns := uint64(max(d, 0))
	atomic.AddUint64(&h.counts[histIndex(ns)], 1)
	atomic.AddUint64(&h.sumNs, ns)
}

// Load copies the histogram with atomic reads (for one recorded with
// RecordAtomic).
func (h *Histogram) Load() Histogram {
	var c Histogram
	for i := range h.counts {
		c.counts[i] = atomic.LoadUint64(&h.counts[i])
	}
	c.sumNs = atomic.LoadUint64(&h.sumNs)
	return c
}

// Count is how many durations were recorded.
func (h *Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.counts {
		n += c
	}
	return n
}

// Sum is the recorded durations added up.
func (h *Histogram) Sum() time.Duration { return time.Duration(h.sumNs) }

// Percentile is the upper bound, in nanoseconds, of the bucket holding the
// p-th percentile (0 < p <= 100), or 0 when nothing was recorded.
func (h *Histogram) Percentile(p float64) uint64 {
	total := h.Count()
	if total == 0 {
		return 0
	}
	want := uint64(p / 100 * float64(total))
	if float64(want) < p/100*float64(total) || want == 0 {
		want++
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= want {
			return histUpper(i)
		}
	}
	return histUpper(histBuckets - 1)
}

// Cumulative calls f for each power-of-two bound, in nanoseconds, from
// 1024 ns up, with the number of durations at or under it, as Redis's
// LATENCY HISTOGRAM lists them (bounds whose count did not grow are left
// out). Durations of 1024 ns or less all count under the first bound.
func (h *Histogram) Cumulative(f func(boundNs, count uint64)) {
	var seen, last uint64
	i := 0
	for e := 10; e <= histMaxExp+1; e++ {
		bound := uint64(1) << e
		for ; i < histBuckets && histUpper(i) < bound; i++ {
			seen += h.counts[i]
		}
		if seen > last {
			f(bound, seen)
			last = seen
		}
	}
}

// Buckets calls f for each power-of-two bound in seconds (from 2^-20 s,
// about 1 µs, to 2^15 s) with the count of durations at or under it: a
// Prometheus histogram's cumulative buckets.
func (h *Histogram) Buckets(f func(upperSeconds float64, count uint64)) {
	var seen uint64
	i := 0
	for e := 10; e <= histMaxExp; e++ { // 2^10 ns ≈ 1 µs
		bound := uint64(1) << e
		for ; i < histBuckets && histUpper(i) < bound; i++ {
			seen += h.counts[i]
		}
		f(float64(bound)/1e9, seen)
	}
}
