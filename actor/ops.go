package actor

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// opsCommands are the commands operators run to see what the server is
// doing: the slow log (slowlog.go), the latency monitor and histograms
// (latency.go), MONITOR (monitor.go). Memory reports are memory.go's.
var opsCommands = registerCommands([]*Command{
	{Name: "slowlog", Summary: "Reads and resets the log of slow commands.", Subs: []*Command{
		{Name: "slowlog|get", Summary: "Returns the newest entries of the slow log.", Handler: cmdSlowlogGet},
		{Name: "slowlog|len", Summary: "Returns the number of entries in the slow log.", Handler: cmdSlowlogLen},
		{Name: "slowlog|reset", Summary: "Empties the slow log.", Handler: cmdSlowlogReset},
		{Name: "slowlog|help", Summary: "Lists the SLOWLOG subcommands.", Handler: cmdSlowlogHelp},
	}},
	{Name: "latency", Summary: "Reports latency spikes and command latency histograms.", Subs: []*Command{
		{Name: "latency|latest", Summary: "Returns the latest spike of every event.", Handler: cmdLatencyLatest},
		{Name: "latency|history", Summary: "Returns an event's spikes.", Handler: cmdLatencyHistory},
		{Name: "latency|reset", Summary: "Forgets the spikes of events.", Handler: cmdLatencyReset},
		{Name: "latency|graph", Summary: "Draws an event's spikes as text.", Handler: cmdLatencyGraph},
		{Name: "latency|doctor", Summary: "Explains the spikes seen, with advice.", Handler: cmdLatencyDoctor},
		{Name: "latency|histogram", Summary: "Returns commands' cumulative latency distributions.", Handler: cmdLatencyHistogram},
		{Name: "latency|help", Summary: "Lists the LATENCY subcommands.", Handler: cmdLatencyHelp},
	}},
	{Name: "monitor", Summary: "Streams every command the server runs to this client.", Handler: cmdMonitor},
})

// applyOpsParams reads the settings of the slow log and the latency
// monitor from their stored CONFIG values; CONFIG SET of any stored
// parameter calls it (configparams.go).
func (a *Actor) applyOpsParams() {
	a.slow.slowerThan, _ = strconv.ParseInt(a.storedParamValue("slowlog-log-slower-than"), 10, 64)
	a.slow.maxLen, _ = strconv.Atoi(a.storedParamValue("slowlog-max-len"))
	a.slow.trim()
	th, _ := strconv.ParseInt(a.storedParamValue("latency-monitor-threshold"), 10, 64)
	a.lat.thresholdMs.Store(th)
	a.applyClientsPct()
	a.applyReplParams()
	a.applyAccessParams() // maxmemory-policy, lfu-* (access.go)
}

// applyClientsPct makes the client memory budget the percentage of
// maxmemory (stored: Cellar has no maxmemory of its own) that
// maxmemory-clients names, as Redis computes it; nothing when it names a
// size.
func (a *Actor) applyClientsPct() {
	if a.clientsPct == "" {
		return
	}
	pct, _ := strconv.ParseUint(strings.TrimSuffix(a.clientsPct, "%"), 10, 64)
	maxmem, _ := strconv.ParseUint(a.storedParamValue("maxmemory"), 10, 64)
	a.setClientsLimit(int64(min(maxmem/100*pct+maxmem%100*pct/100, math.MaxInt64)))
}

// setClientsLimit sets the client memory budget, at the end of the CONFIG
// SET running now if one is (Actor.clientsLimit).
func (a *Actor) setClientsLimit(n int64) {
	if a.configSetting {
		a.clientsLimit = n
		return
	}
	a.cfg.Clients.SetLimit(n)
}

// maxErrorCodes bounds INFO errorstats' table (a client sending scripts
// that fail with made-up codes cannot grow it): past it, new codes are
// counted only in total_error_replies.
const maxErrorCodes = 128

// countError counts an error reply (INFO errorstats): by its code, the
// text up to the first space.
func (a *Actor) countError(reply string) {
	a.errorReplies++
	code, _, _ := strings.Cut(reply, " ")
	if n, ok := a.errorStats[code]; ok {
		a.errorStats[code] = n + 1
	} else if len(a.errorStats) < maxErrorCodes {
		a.errorStats[code] = 1
	}
}

// timeCommand records a command's execution time: its histogram, the
// latency monitor's command events, the slow log.
func (a *Actor) timeCommand(s *session, cmd *Command, args [][]byte, st *cmdStat, took time.Duration) {
	if st.hist == nil {
		st.hist = new(Histogram)
	}
	st.hist.Record(took)
	if cmd.Is(FlagFast) {
		a.lat.sample(evFastCommand, took)
	} else {
		a.lat.sample(evCommand, took)
	}
	if a.slow.slowerThan >= 0 {
		a.logSlow(s, cmd, args, took)
	}
}

// instant is INFO's instantaneous_* figures, as Redis computes them: every
// housekeeping tick (about 100 ms) a rate since the last tick goes into a
// ring of 16, and INFO reports their mean.
type instant struct {
	lastT           time.Time
	lastOps, lastIn uint64
	lastOut         uint64
	ops, in, out    [16]float64
	idx             int
}

func (a *Actor) sampleInstant(now time.Time) {
	m := &a.inst
	var in, out uint64
	if a.net != nil {
		in, out = a.net.NetInputBytes(), a.net.NetOutputBytes()
	}
	if !m.lastT.IsZero() {
		if secs := now.Sub(m.lastT).Seconds(); secs > 0 {
			m.ops[m.idx] = float64(a.stats.commands-m.lastOps) / secs
			m.in[m.idx] = float64(in-m.lastIn) / secs / 1024
			m.out[m.idx] = float64(out-m.lastOut) / secs / 1024
			m.idx = (m.idx + 1) % len(m.ops)
		}
	}
	m.lastT, m.lastOps, m.lastIn, m.lastOut = now, a.stats.commands, in, out
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
