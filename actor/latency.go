package actor

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The latency monitor, as Redis's: while latency-monitor-threshold (in
// milliseconds) is above 0, every event that took at least that long is
// sampled into its event's history (the last 160 samples, one per second:
// a second's samples keep the highest). Cellar's events are the ones that
// can stall clients: "command" and "fast-command" (a command's execution,
// as in Redis), "actor-round" (a whole round of the actor: every command
// run in it and the redo log write), "flush" (a flush's SQLite commit, on
// the offload pool: a round waits for it only at storage.max_unflushed),
// "checkpoint" (a WAL checkpoint after a flush, on the offload pool),
// "fsync" (the redo log's or the WAL's fsync on the offload pool, which
// replies wait for with durability always), and "expire-cycle" (a slice
// of the active expiry, as in Redis).
//
// The timings of rounds, flushes, fsyncs and checkpoints also go to
// histograms (always, threshold or not) that the metrics endpoint reads.
// Samples and histograms are goroutine-safe: fsyncs and checkpoints are
// timed on offload workers.

const (
	evCommand = iota
	evFastCommand
	evRound
	evFlush
	evFsync
	evCheckpoint
	evExpireCycle
	numEvents
)

var eventNames = [numEvents]string{"command", "fast-command", "actor-round", "flush", "fsync", "checkpoint", "expire-cycle"}

const latencySamples = 160

type latencySample struct {
	at, ms int64
}

type latencyEvent struct {
	samples [latencySamples]latencySample
	idx     int
	max     int64
}

type latencyMonitor struct {
	thresholdMs atomic.Int64
	mu          sync.Mutex
	events      [numEvents]*latencyEvent
	// hists are the durations of every round, flush, fsync and checkpoint
	// (RecordAtomic), for the metrics endpoint.
	hists [numEvents]Histogram
}

// observe records one occurrence of event ev that took d: into its
// histogram, and as a sample when the monitor is on and d reaches the
// threshold.
func (m *latencyMonitor) observe(ev int, d time.Duration) {
	if m == nil {
		return
	}
	m.hists[ev].RecordAtomic(d)
	m.sample(ev, d)
}

// sample adds d to ev's history if the monitor is on and d reaches the
// threshold (Redis's latencyAddSampleIfNeeded).
func (m *latencyMonitor) sample(ev int, d time.Duration) {
	th := m.thresholdMs.Load()
	ms := d.Milliseconds()
	if th == 0 || ms < th {
		return
	}
	now := time.Now().Unix()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.events[ev]
	if e == nil {
		e = &latencyEvent{}
		m.events[ev] = e
	}
	if ms > e.max {
		e.max = ms
	}
	prev := &e.samples[(e.idx+latencySamples-1)%latencySamples]
	if prev.at == now {
		prev.ms = max(prev.ms, ms)
		return
	}
	e.samples[e.idx] = latencySample{at: now, ms: ms}
	e.idx = (e.idx + 1) % latencySamples
}

// history is ev's samples, oldest first.
func (e *latencyEvent) history() []latencySample {
	var out []latencySample
	for j := 0; j < latencySamples; j++ {
		s := e.samples[(e.idx+j)%latencySamples]
		if s.at != 0 {
			out = append(out, s)
		}
	}
	return out
}

// FsyncHistogram, FlushHistogram, CheckpointHistogram and RoundHistogram
// are copies of the timings the metrics endpoint exports. Safe from any
// goroutine.
func (a *Actor) FsyncHistogram() Histogram      { return a.lat.hists[evFsync].Load() }
func (a *Actor) FlushHistogram() Histogram      { return a.lat.hists[evFlush].Load() }
func (a *Actor) RoundHistogram() Histogram      { return a.lat.hists[evRound].Load() }
func (a *Actor) CheckpointHistogram() Histogram { return a.lat.hists[evCheckpoint].Load() }

// eventByName finds an event's index; -1 if Cellar has no such event.
func eventByName(name string) int {
	for i, n := range eventNames {
		if strings.EqualFold(n, name) {
			return i
		}
	}
	return -1
}

// sortedEvents calls f for each event with samples, by name.
func (m *latencyMonitor) sortedEvents(f func(name string, e *latencyEvent)) {
	idx := make([]int, 0, numEvents)
	for i, e := range m.events {
		if e != nil {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(x, y int) bool { return eventNames[idx[x]] < eventNames[idx[y]] })
	for _, i := range idx {
		f(eventNames[i], m.events[i])
	}
}

// LATENCY LATEST
func cmdLatencyLatest(c *Ctx) error {
	m := &c.a.lat
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.events {
		if e != nil {
			n++
		}
	}
	c.w.Array(n)
	m.sortedEvents(func(name string, e *latencyEvent) {
		last := e.samples[(e.idx+latencySamples-1)%latencySamples]
		c.w.Array(4)
		c.w.BulkString(name)
		c.w.Int(last.at)
		c.w.Int(last.ms)
		c.w.Int(e.max)
	})
	return nil
}

// LATENCY HISTORY event
func cmdLatencyHistory(c *Ctx) error {
	m := &c.a.lat
	m.mu.Lock()
	defer m.mu.Unlock()
	var h []latencySample
	if i := eventByName(string(c.args[2])); i >= 0 && m.events[i] != nil {
		h = m.events[i].history()
	}
	c.w.Array(len(h))
	for _, s := range h {
		c.w.Array(2)
		c.w.Int(s.at)
		c.w.Int(s.ms)
	}
	return nil
}

// LATENCY RESET [event [event ...]]
func cmdLatencyReset(c *Ctx) error {
	m := &c.a.lat
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	if len(c.args) == 2 {
		for i, e := range m.events {
			if e != nil {
				m.events[i] = nil
				n++
			}
		}
	}
	for _, arg := range c.args[min(len(c.args), 2):] {
		if i := eventByName(string(arg)); i >= 0 && m.events[i] != nil {
			m.events[i] = nil
			n++
		}
	}
	c.w.Int(int64(n))
	return nil
}

// LATENCY GRAPH event: Redis's ASCII sparkline of the event's samples,
// 80 columns by 4 rows, each labelled with how long ago it was.
func cmdLatencyGraph(c *Ctx) error {
	m := &c.a.lat
	m.mu.Lock()
	defer m.mu.Unlock()
	i := eventByName(string(c.args[2]))
	if i < 0 || m.events[i] == nil {
		return errNoLatencySamples(string(c.args[2]))
	}
	c.w.Verbatim("txt", latencyGraph(eventNames[i], m.events[i], time.Now().Unix()))
	return nil
}

// latencyGraph draws e's samples as Redis's LATENCY GRAPH does.
func latencyGraph(name string, e *latencyEvent, now int64) string {
	h := e.history()
	lo, hi := h[0].ms, h[0].ms
	labels := make([]string, len(h))
	values := make([]float64, len(h))
	for j, s := range h {
		lo, hi = min(lo, s.ms), max(hi, s.ms)
		ago := now - s.at
		switch {
		case ago < 60:
			labels[j] = strconv.FormatInt(ago, 10) + "s"
		case ago < 3600:
			labels[j] = strconv.FormatInt(ago/60, 10) + "m"
		case ago < 86400:
			labels[j] = strconv.FormatInt(ago/3600, 10) + "h"
		default:
			labels[j] = strconv.FormatInt(ago/86400, 10) + "d"
		}
		values[j] = float64(s.ms)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", name, hi, lo, e.max)
	b.WriteString(strings.Repeat("-", graphCols) + "\n")
	for j := 0; j < len(h); j += graphCols {
		if j != 0 {
			b.WriteByte('\n')
		}
		end := min(j+graphCols, len(h))
		sparkline(&b, values[j:end], labels[j:end], float64(lo), float64(hi), graphRows)
	}
	return b.String()
}

const (
	graphCols = 80
	graphRows = 4
)

// sparkline renders values (between lo and hi) as rows of "_o#" filled
// columns, '|' below the top, then each value's label written downwards
// under a blank line: the layout of Redis's sparklines.
func sparkline(b *strings.Builder, values []float64, labels []string, lo, hi float64, rows int) {
	const fill = "_o#"
	steps := len(fill) * rows
	rel := hi - lo
	if rel == 0 {
		rel = 1
	}
	line := make([]byte, len(values))
	for row := 0; ; row++ {
		more := false
		for j := range line {
			line[j] = ' '
		}
		for j, v := range values {
			step := int((v - lo) * float64(steps) / rel)
			step = max(0, min(step, steps-1))
			switch {
			case row < rows:
				more = true
				k := step - (rows-row-1)*len(fill)
				if k >= 0 && k < len(fill) {
					line[j] = fill[k]
				} else if k >= len(fill) {
					line[j] = '|'
				}
			case row-rows < 1: // the blank line above the labels
				more = true
			default:
				if k := row - rows - 1; k < len(labels[j]) {
					more = true
					line[j] = labels[j][k]
				}
			}
		}
		if !more {
			return
		}
		b.Write(line)
		b.WriteByte('\n')
	}
}

// LATENCY DOCTOR: Redis's report, for Cellar's events, with advice about
// Cellar's settings.
func cmdLatencyDoctor(c *Ctx) error {
	m := &c.a.lat
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	switch {
	case m.thresholdMs.Load() == 0:
		b.WriteString("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n")
	default:
		n := 0
		m.sortedEvents(func(string, *latencyEvent) { n++ })
		if n == 0 {
			b.WriteString("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n")
			break
		}
		b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
		seen := map[string]bool{}
		k := 0
		m.sortedEvents(func(name string, e *latencyEvent) {
			k++
			h := e.history()
			var sum int64
			for _, s := range h {
				sum += s.ms
			}
			avg := sum / int64(len(h))
			var dev int64
			for _, s := range h {
				d := s.ms - avg
				dev += max(d, -d)
			}
			period := 0.0
			if len(h) > 1 {
				period = float64(h[len(h)-1].at-h[0].at) / float64(len(h)-1)
			}
			fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.\n",
				k, name, len(h), avg, dev/int64(len(h)), max(period, 1), e.max)
			seen[name] = true
		})
		b.WriteString("\nI have a few advices for you:\n\n")
		if seen["command"] || seen["fast-command"] {
			b.WriteString("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n")
		}
		if seen["actor-round"] {
			b.WriteString("- A round of the actor runs every command that arrived together; long rounds come from slow commands (see the Slow Log) or from long scripts.\n")
		}
		if seen["flush"] {
			b.WriteString("- Flushes run on the offload pool, and rounds wait for them once storage.max_unflushed of the redo log waits: a smaller storage.flush_interval or storage.flush_bytes makes each flush shorter.\n")
		}
		if seen["fsync"] || seen["checkpoint"] {
			b.WriteString("- Slow fsyncs and checkpoints point at the disk: with durability always every write waits for an fsync; consider a faster disk, or durability everysec.\n")
		}
	}
	c.w.Verbatim("txt", b.String())
	return nil
}

// LATENCY HISTOGRAM [command ...]: each command's calls and the
// cumulative count of its execution times at or under each power of two
// of microseconds, as Redis 7.0 replies (a map). Commands never called,
// and names that are no command, are left out.
func cmdLatencyHistogram(c *Ctx) error {
	a := c.a
	var cmds []*Command
	add := func(cmd *Command) {
		if a.cmdStats[cmd.idx].hist != nil && a.cmdStats[cmd.idx].hist.Count() > 0 {
			cmds = append(cmds, cmd)
		}
	}
	if len(c.args) == 2 {
		for _, cmd := range commands.list {
			add(cmd)
			for _, sub := range cmd.Subs {
				add(sub)
			}
		}
	} else {
		seen := map[*Command]bool{}
		for _, arg := range c.args[2:] {
			cmd := lookupFull(arg)
			if cmd == nil || seen[cmd] {
				continue
			}
			seen[cmd] = true
			if len(cmd.Subs) > 0 {
				for _, sub := range cmd.Subs {
					add(sub)
				}
				continue
			}
			add(cmd)
		}
	}
	c.w.Map(len(cmds))
	for _, cmd := range cmds {
		h := a.cmdStats[cmd.idx].hist
		c.w.BulkString(cmd.Name)
		c.w.Map(2)
		c.w.BulkString("calls")
		c.w.Int(int64(h.Count()))
		c.w.BulkString("histogram_usec")
		var pairs [][2]uint64
		h.Cumulative(func(bound, n uint64) { pairs = append(pairs, [2]uint64{bound / 1000, n}) })
		c.w.Map(len(pairs))
		for _, p := range pairs {
			c.w.Int(int64(p[0]))
			c.w.Int(int64(p[1]))
		}
	}
	return nil
}

// LATENCY HELP
func cmdLatencyHelp(c *Ctx) error {
	return helpReply(c, "latency", []string{
		"DOCTOR",
		"    Return a human readable latency analysis report.",
		"GRAPH <event>",
		"    Return an ASCII latency graph for the <event> class.",
		"HISTORY <event>",
		"    Return time-latency samples for the <event> class.",
		"LATEST",
		"    Return the latest latency samples for all events.",
		"RESET [<event> ...]",
		"    Reset latency data of one or more <event> classes.",
		"    (default: reset all data for all event classes)",
		"HISTOGRAM [COMMAND ...]",
		"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
		"    If no commands are specified then all histograms are replied.",
		"HELP",
		"    Prints this help.",
	})
}
