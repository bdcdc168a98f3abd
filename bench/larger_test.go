package main

import "testing"

// The larger-than-memory goals read the scenario's two tables: the peak
// against the bound plus largerPast, the hot p99 with cold traffic
// against twice the p99 alone; a failed cell fails its goal.
func TestLargerGoals(t *testing.T) {
	tables := func(peakKB, aloneUs, coldUs float64, coldStatus string) []*table {
		rss := &table{ID: "larger-rss", Servers: []string{"cellar"}, Labels: map[string]string{"cellar": "Cellar"}}
		lat := &table{ID: "larger-hot", Servers: []string{"cellar"}, Labels: map[string]string{"cellar": "Cellar"}}
		for _, r := range []string{"peak RSS", "max_memory"} {
			rss.row(r)
		}
		lat.row("hot p99, alone")
		lat.row("hot p99, with cold traffic")
		rss.add("peak RSS", "cellar", sample{Status: statusOK, Value: peakKB})
		rss.add("max_memory", "cellar", sample{Status: statusOK, Value: 16 << 10})
		lat.add("hot p99, alone", "cellar", sample{Status: statusOK, Value: aloneUs})
		lat.add("hot p99, with cold traffic", "cellar", sample{Status: coldStatus, Value: coldUs, Detail: "why"})
		rss.finish()
		lat.finish()
		return []*table{rss, lat}
	}
	gs := largerGoals(config{}, tables((16+160)<<10, 100, 200, statusOK))
	if gs[0].Status != goalMet || gs[1].Status != goalMet {
		t.Fatalf("at the limits: %+v", gs)
	}
	gs = largerGoals(config{}, tables((16+161)<<10, 100, 201, statusOK))
	if gs[0].Status != goalMissed || gs[1].Status != goalMissed {
		t.Fatalf("past the limits: %+v", gs)
	}
	gs = largerGoals(config{}, tables(1, 100, 100, statusFailed))
	if gs[0].Status != goalMet || gs[1].Status != statusFailed || gs[1].Detail != "why" {
		t.Fatalf("a failed cold row: %+v", gs)
	}
	if gs := largerGoals(config{}, nil); gs[0].Status != goalNotMeasured || gs[1].Status != goalNotMeasured {
		t.Fatalf("not run: %+v", gs)
	}
}
