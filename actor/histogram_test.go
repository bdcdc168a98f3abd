package actor

import (
	"strings"
	"testing"
	"time"
)

func TestHistogramBucketsCoverEveryDuration(t *testing.T) {
	prev := -1
	for _, ns := range []uint64{0, 1, 7, 8, 9, 15, 16, 1000, 1023, 1024, 1025, 123456789, 1 << 44, 1<<45 - 1} {
		i := histIndex(ns)
		if i < prev {
			t.Fatalf("index of %d is %d, below the previous %d", ns, i, prev)
		}
		prev = i
		if up := histUpper(i); up < ns || (i > 0 && histUpper(i-1) >= ns) {
			t.Fatalf("%d ns in bucket %d whose range ends at %d (previous ends at %d)", ns, i, up, histUpper(i-1))
		}
	}
	for i := 1; i < histBuckets; i++ {
		if histIndex(histUpper(i)) != i || histIndex(histUpper(i-1)+1) != i {
			t.Fatalf("bucket %d's bounds do not map back to it", i)
		}
	}
}

func TestHistogramPercentilesAndCumulative(t *testing.T) {
	var h Histogram
	for i := 0; i < 90; i++ {
		h.Record(3 * time.Microsecond)
	}
	for i := 0; i < 10; i++ {
		h.Record(100 * time.Microsecond)
	}
	if p := h.Percentile(50); p < 3000 || p > 3300 {
		t.Fatalf("p50 = %d ns, want about 3000", p)
	}
	if p := h.Percentile(99); p < 100000 || p > 110000 {
		t.Fatalf("p99 = %d ns, want about 100000", p)
	}
	var got [][2]uint64
	h.Cumulative(func(b, n uint64) { got = append(got, [2]uint64{b / 1024, n}) })
	want := [][2]uint64{{4, 90}, {128, 100}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("cumulative = %v, want %v", got, want)
	}
}

// TestLatencyGraphMatchesRedis: the drawing of one 20 ms sample a second
// old is what Redis 7.0 printed for the same sample.
func TestLatencyGraphMatchesRedis(t *testing.T) {
	e := &latencyEvent{max: 20}
	e.samples[0] = latencySample{at: 1000, ms: 20}
	e.idx = 1
	want := "command - high 20 ms, low 20 ms (all time high 20 ms)\n" +
		strings.Repeat("-", 80) + "\n" +
		" \n \n \n_\n \n1\ns\n"
	if got := latencyGraph("command", e, 1001); got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	// Several samples: the highest reaches the top row, '|' fills below.
	e = &latencyEvent{max: 90}
	for i, ms := range []int64{10, 50, 90} {
		e.samples[i] = latencySample{at: 1000 + int64(i), ms: ms}
	}
	e.idx = 3
	got := latencyGraph("fsync", e, 1002)
	if !strings.Contains(got, "\n  #\n") || !strings.Contains(got, "\n_||\n") || !strings.HasSuffix(got, "210\nsss\n") {
		t.Fatalf("three samples drawn as\n%s", got)
	}
}

// BenchmarkTimeCommand is what each command pays for SLOWLOG, LATENCY and
// the latency histograms (with the slow log on at its default threshold
// and the latency monitor off).
func BenchmarkTimeCommand(b *testing.B) {
	a := &Actor{}
	a.slow.slowerThan = 10000
	s := &session{}
	cmd := &Command{Name: "get"}
	st := &cmdStat{}
	args := [][]byte{[]byte("get"), []byte("k")}
	for i := 0; b.Loop(); i++ {
		a.timeCommand(s, cmd, args, st, time.Duration(i&1023)*time.Microsecond/100)
	}
}
