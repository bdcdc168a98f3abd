package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// table is one comparison: the same tests against several servers, with
// ratios between chosen pairs of them.
type table struct {
	ID      string            `json:"id"`
	Title   string            `json:"title"`
	Params  string            `json:"params"`
	Metric  string            `json:"metric"` // unit of the primary figure: "ops/s", "items/s", "RSS KiB"
	Lower   bool              `json:"lower_is_better,omitempty"`
	Servers []string          `json:"servers"`
	Labels  map[string]string `json:"labels"`
	Ratios  [][2]string       `json:"ratios"` // numerator, denominator server names
	Rows    []*row            `json:"rows"`
	Note    string            `json:"note,omitempty"`
}

// row is one test of a table.
type row struct {
	Test   string              `json:"test"`
	Cells  map[string]*cell    `json:"cells"`
	Ratio  map[string]*float64 `json:"ratio"`               // "cellar/redis" -> median ratio, nil if not measurable
	P99Rat map[string]*float64 `json:"p99_ratio,omitempty"` // same pairs, p99 latency ratio
}

// cell is what one server did in one test over all rounds.
type cell struct {
	Samples []sample `json:"samples"`
	Status  string   `json:"status"`
	Detail  string   `json:"detail,omitempty"`
	Median  float64  `json:"median,omitempty"`
	Min     float64  `json:"min,omitempty"`
	Max     float64  `json:"max,omitempty"`
	P50Ms   float64  `json:"p50_ms,omitempty"`
	P99Ms   float64  `json:"p99_ms,omitempty"`
}

func ratioKey(p [2]string) string { return p[0] + "/" + p[1] }

func (t *table) row(test string) *row {
	for _, r := range t.Rows {
		if r.Test == test {
			return r
		}
	}
	r := &row{Test: test, Cells: map[string]*cell{}}
	t.Rows = append(t.Rows, r)
	return r
}

// add records one round's sample.
func (t *table) add(test, server string, s sample) {
	r := t.row(test)
	c := r.Cells[server]
	if c == nil {
		c = &cell{}
		r.Cells[server] = c
	}
	c.Samples = append(c.Samples, s)
}

// finish aggregates every cell and computes the ratios.
func (t *table) finish() {
	for _, r := range t.Rows {
		for _, c := range r.Cells {
			c.aggregate()
		}
		r.Ratio = map[string]*float64{}
		r.P99Rat = map[string]*float64{}
		for _, p := range t.Ratios {
			a, b := r.Cells[p[0]], r.Cells[p[1]]
			if a == nil || b == nil || a.Status != statusOK || b.Status != statusOK {
				r.Ratio[ratioKey(p)] = nil
				r.P99Rat[ratioKey(p)] = nil
				continue
			}
			r.Ratio[ratioKey(p)] = ratio(a.Median, b.Median)
			if a.P99Ms > 0 && b.P99Ms > 0 {
				r.P99Rat[ratioKey(p)] = ratio(a.P99Ms, b.P99Ms)
			} else {
				r.P99Rat[ratioKey(p)] = nil
			}
		}
	}
}

func ratio(a, b float64) *float64 {
	if b <= 0 || math.IsNaN(a) || math.IsInf(a, 0) {
		return nil
	}
	v := a / b
	return &v
}

// aggregate sets the cell's status and figures. A cell is ok only when
// every round was: a benchmark that failed in one round is reported as
// failed, with the other rounds' median in the detail for a human, and
// is kept out of ratios and goals.
func (c *cell) aggregate() {
	var vals, p50s, p99s []float64
	var bad []string
	worst := ""
	for i, s := range c.Samples {
		if s.Status != statusOK {
			bad = append(bad, fmt.Sprintf("round %d: %s: %s", i+1, s.Status, s.Detail))
			if worst == "" || worst == statusUnsupported {
				worst = s.Status
			}
			continue
		}
		vals = append(vals, s.Value)
		if s.P50Ms > 0 {
			p50s = append(p50s, s.P50Ms)
		}
		if s.P99Ms > 0 {
			p99s = append(p99s, s.P99Ms)
		}
	}
	if len(vals) > 0 {
		c.Median = median(vals)
		c.Min, c.Max = minMax(vals)
	}
	if len(p50s) > 0 {
		c.P50Ms = median(p50s)
	}
	if len(p99s) > 0 {
		c.P99Ms = median(p99s)
	}
	switch {
	case len(c.Samples) == 0:
		c.Status, c.Detail = statusFailed, "not run"
	case len(bad) == 0:
		c.Status = statusOK
	default:
		c.Status = worst
		if allSame(c.Samples) || allUnsupported(c.Samples) {
			c.Detail = c.Samples[0].Detail
		} else {
			c.Detail = strings.Join(bad, "; ")
		}
		if len(vals) > 0 {
			c.Detail += fmt.Sprintf(" (%d of %d rounds ok, their median %.0f)", len(vals), len(c.Samples), c.Median)
		}
	}
}

// allUnsupported: every round hit a missing command (which one may vary
// with who raced first, as in the queue scenario).
func allUnsupported(ss []sample) bool {
	for _, s := range ss {
		if s.Status != statusUnsupported {
			return false
		}
	}
	return true
}

func allSame(ss []sample) bool {
	for _, s := range ss[1:] {
		if s.Status != ss[0].Status || s.Detail != ss[0].Detail {
			return false
		}
	}
	return true
}

// median of xs (the mean of the two middle values for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func minMax(xs []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// percentile of xs by nearest rank (p in 0..100); xs need not be sorted.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	return s[rank-1]
}
