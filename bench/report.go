package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// results is everything one run measured; latest.json is this, verbatim.
type results struct {
	Generated string   `json:"generated"`
	Command   string   `json:"command"`
	Mode      string   `json:"mode"`
	Rounds    int      `json:"rounds"`
	Duration  string   `json:"duration"`
	Machine   machine  `json:"machine"`
	Settings  []string `json:"settings"`
	Tables    []*table `json:"tables"`
	Goals     []goal   `json:"goals"`
	Notes     []string `json:"notes,omitempty"`
	Chart     string   `json:"chart,omitempty"`
}

func writeJSON(path string, res *results) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// fmtNum prints a figure with three significant digits and a k/M suffix.
func fmtNum(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.3g", v/1e6) + "M"
	case v >= 1e3:
		return fmt.Sprintf("%.3g", v/1e3) + "k"
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func fmtKB(v float64) string { return fmt.Sprintf("%.1f MiB", v/1024) }

func fmtRatio(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f×", *v)
}

func fmtMs(v float64) string {
	if v <= 0 {
		return "—"
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	if v >= 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// cellText is a cell's figure with its spread, or its status.
func (t *table) cellText(c *cell, rounds int) string {
	if c == nil {
		return "—"
	}
	if c.Status != statusOK {
		return "**" + c.Status + "**"
	}
	f := fmtNum
	if t.Metric == "RSS KiB" {
		f = fmtKB
	}
	if len(c.Samples) > 1 {
		return fmt.Sprintf("%s (%s–%s)", f(c.Median), f(c.Min), f(c.Max))
	}
	return f(c.Median)
}

func writeMarkdown(path string, res *results) error {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	m := res.Machine
	w("# Cellar benchmark results\n\n")
	w("Generated %s by `%s` in %s (%s mode, %d round(s) per benchmark).\n\n", res.Generated, orDefault(res.Command, "make bench"), res.Duration, res.Mode, res.Rounds)
	w("- Machine: %d cores, %s, Linux %s, %s RAM; load average at start %s\n", m.Cores, m.Model, m.Kernel, m.MemTotal, m.LoadAvg)
	w("- Cellar: %s (branch %s); %s; %s; Redka: %s; %s\n", m.Cellar, m.Branch, m.Redis, m.RedisBM, m.Redka, m.Go)
	for _, s := range res.Settings {
		w("- %s\n", s)
	}
	w("\nEvery figure is from this one run: the servers ran on this machine at the same time (idle while another was measured), ")
	w("each test was run against each server in turn, the order rotating every round, and a figure is the median over rounds ")
	w("with the min–max spread in brackets. Ratios are between medians of this run; compare ratios, not absolute numbers across runs. ")
	w("redis-benchmark shares the CPU with the server it measures. **unsupported** means the server answered the test's command ")
	w("with an unknown-command error, **stalled** that replies stopped arriving and the client was killed, **failed** any other error; ")
	w("none of those is ever turned into a number.\n\n")
	if res.Chart != "" {
		w("![ratios to Redis](%s)\n\n", res.Chart)
	}

	writeSummary(&b, res)

	w("## Goals\n\n| group | goal | measured | result |\n|---|---|---|---|\n")
	for _, g := range res.Goals {
		meas := "—"
		if g.Measured != nil {
			meas = fmt.Sprintf("%.2f×", *g.Measured)
		}
		result := g.Status
		if g.Status == goalMet {
			result = "✅ met"
		} else if g.Status == goalMissed {
			result = "❌ missed"
		}
		if g.Detail != "" {
			result += ": " + mdEscape(g.Detail)
		}
		w("| %s | %s | %s | %s |\n", g.Group, g.Goal, meas, result)
	}
	w("\n")

	for _, t := range res.Tables {
		writeTable(&b, t, res.Rounds)
	}
	if len(res.Notes) > 0 {
		w("## Notes\n\n")
		for _, n := range res.Notes {
			w("- %s\n", n)
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func writeTable(b *strings.Builder, t *table, rounds int) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("## %s\n\n%s. Figures: %s", t.Title, t.Params, t.Metric)
	if t.Lower {
		w(" (lower is better)")
	}
	w(".\n\n")
	if t.Note != "" {
		w("%s\n\n", t.Note)
	}
	hasLat := false
	for _, r := range t.Rows {
		for _, c := range r.Cells {
			hasLat = hasLat || c.P99Ms > 0
		}
	}
	w("| test |")
	for _, s := range t.Servers {
		w(" %s |", t.Labels[s])
	}
	for _, p := range t.Ratios {
		w(" %s / %s |", t.Labels[p[0]], t.Labels[p[1]])
	}
	var labels []string
	for _, s := range t.Servers {
		labels = append(labels, t.Labels[s])
	}
	if hasLat {
		w(" p50 ms (%s) | p99 ms (%s) |", strings.Join(labels, " / "), strings.Join(labels, " / "))
	}
	w("\n|---|")
	for range t.Servers {
		w("---:|")
	}
	for range t.Ratios {
		w("---:|")
	}
	if hasLat {
		w("---:|---:|")
	}
	w("\n")
	var notes []string
	for _, r := range t.Rows {
		w("| %s |", r.Test)
		for _, s := range t.Servers {
			c := r.Cells[s]
			w(" %s |", t.cellText(c, rounds))
			if c != nil && c.Status != statusOK {
				notes = append(notes, fmt.Sprintf("%s, %s: %s: %s", r.Test, t.Labels[s], c.Status, c.Detail))
			}
		}
		for _, p := range t.Ratios {
			w(" %s |", fmtRatio(r.Ratio[ratioKey(p)]))
		}
		if hasLat {
			var p50, p99 []string
			for _, s := range t.Servers {
				if c := r.Cells[s]; c != nil && c.Status == statusOK {
					p50, p99 = append(p50, fmtMs(c.P50Ms)), append(p99, fmtMs(c.P99Ms))
				} else {
					p50, p99 = append(p50, "—"), append(p99, "—")
				}
			}
			w(" %s | %s |", strings.Join(p50, " / "), strings.Join(p99, " / "))
		}
		w("\n")
	}
	w("\n")
	if len(notes) > 0 {
		for _, n := range notes {
			w("- %s\n", mdEscape(n))
		}
		w("\n")
	}
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

func outPaths(cfg config) (md, js, png string) {
	base := filepath.Join(cfg.outDir, cfg.outName)
	return base + ".md", base + ".json", base + ".png"
}

// writeSummary is one line per test with every ratio of the main
// comparison: the table docs/performance.md shows.
func writeSummary(b *strings.Builder, res *results) {
	type col struct {
		t    *table
		pair [2]string
		head string
	}
	var cols []col
	for _, t := range res.Tables {
		if len(t.ID) < 2 || (t.ID[0] != 'p' && t.ID[0] != 'c') {
			continue
		}
		for _, p := range t.Ratios {
			cols = append(cols, col{t, p, fmt.Sprintf("%s / %s, %s", t.Labels[p[0]], t.Labels[p[1]], t.Title)})
		}
	}
	if len(cols) == 0 {
		return
	}
	var tests []string
	seen := map[string]bool{}
	for _, c := range cols {
		for _, r := range c.t.Rows {
			if !seen[r.Test] {
				seen[r.Test] = true
				tests = append(tests, r.Test)
			}
		}
	}
	fmt.Fprintf(b, "## Summary: Cellar's throughput as a ratio\n\n| test |")
	for _, c := range cols {
		fmt.Fprintf(b, " %s |", c.head)
	}
	b.WriteString("\n|---|")
	for range cols {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, name := range tests {
		fmt.Fprintf(b, "| %s |", name)
		for _, c := range cols {
			var r *row
			for _, x := range c.t.Rows {
				if x.Test == name {
					r = x
				}
			}
			switch {
			case r == nil:
				b.WriteString(" |")
			case r.Ratio[ratioKey(c.pair)] != nil:
				fmt.Fprintf(b, " %s |", fmtRatio(r.Ratio[ratioKey(c.pair)]))
			default:
				fmt.Fprintf(b, " %s |", summaryStatus(r, c.pair))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// summaryStatus names why a ratio is missing: the numerator's status
// first (Cellar's), then the denominator's.
func summaryStatus(r *row, pair [2]string) string {
	for _, s := range pair {
		if c := r.Cells[s]; c != nil && c.Status != statusOK {
			return c.Status
		}
	}
	return "—"
}

// render rewrites the markdown and the chart from a results JSON file
// (after a change to the report's layout; no figure is recomputed).
func render(jsonPath string) error {
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		return err
	}
	// The goals are evaluated again, as today's code states them, with the
	// settings the run was made with.
	if args, ok := argsOf(res.Command); ok {
		cfg, err := parseConfig(args)
		if err != nil {
			return fmt.Errorf("%s: its command %q: %w", jsonPath, res.Command, err)
		}
		res.Goals = evaluateGoals(cfg, res.Tables)
	}
	base := strings.TrimSuffix(jsonPath, ".json")
	if err := writeJSON(base+".json", &res); err != nil {
		return err
	}
	if res.Chart != "" {
		if err := writeChart(base+".png", &res); err != nil {
			return err
		}
	}
	return writeMarkdown(base+".md", &res)
}
