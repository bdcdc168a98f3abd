package actor

// The collector's tuning, which the actor runs once a second
// (housekeeping.go): Go's soft memory limit, the collector's percent, and
// returning a burst's garbage once the server idles. MEMORY STATS
// (memory.go) reports what it set.

import (
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// The collector's headroom: the garbage Go lets grow between two cycles.
// At Go's default (GOGC=100) a heap with L bytes live grows to 2L before
// the next cycle, which for a keyspace of a few hundred MB doubles the
// process's RSS, and for a small one collects every few MB of garbage;
// the actor sets the percent so that the heap grows by about the headroom
// (Config.GCHeadroom) whatever is live, but not below minGCPercent (each
// cycle marks the whole live heap: below that the cycles would cost more
// CPU than the memory is worth) nor above maxGCPercent (an almost empty
// heap).
const (
	defaultGCHeadroom = 64 << 20
	minGCPercent      = 25
	maxGCPercent      = 800
)

// gcPercentFor is the collector's percent (GOGC) for a live heap and a
// headroom.
func gcPercentFor(live, headroom uint64) int {
	return min(max(minGCPercent, int(100*headroom/max(live, 1))), maxGCPercent)
}

// liveHeap reads the bytes the last cycle found live.
func liveHeap() uint64 { return readMetric("/gc/heap/live:bytes") }

// gcPercent is the collector's percent now (GOGC; -1: off).
func gcPercent() int { return int(int64(readMetric("/gc/gogc:percent"))) }

func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// followMemoryLimit keeps Go's soft memory limit at Config.GoMemoryLimit
// plus twice what the in-memory engine holds, once a second; it moves
// the limit only when that changed by more than 1/32. With Config.TuneGC
// it also keeps the collector's percent at gcPercentFor the live heap.
func (a *Actor) followMemoryLimit() {
	if a.cfg.TuneGC {
		if pct := gcPercentFor(liveHeap(), a.gcHeadroom()); pct != a.gcPercent {
			debug.SetGCPercent(pct)
			a.gcPercent = pct
		}
	}
	if a.cfg.TuneGC {
		a.returnIdleMemory()
	}
	if a.cfg.GoMemoryLimit <= 0 {
		return
	}
	_, bytes, _, _ := a.st.MemStats()
	want := a.cfg.GoMemoryLimit + 2*bytes
	if d := want - a.goLimit; d > a.goLimit/32 || -d > a.goLimit/32 {
		debug.SetMemoryLimit(want)
		a.goLimit = want
	}
}

// gcHeadroom is Config.GCHeadroom, or its default.
func (a *Actor) gcHeadroom() uint64 {
	if a.cfg.GCHeadroom > 0 {
		return uint64(a.cfg.GCHeadroom)
	}
	return defaultGCHeadroom
}

// idleCommands is how many commands a second still count as idle for
// returnIdleMemory: a client polling INFO or PING is no load.
const idleCommands = 1000

// idleMemory is what returnIdleMemory keeps: whether a return is running
// and the heap's resident bytes after the last one, written by the
// goroutine that returns.
type idleMemory struct {
	running  atomic.Bool
	resident atomic.Uint64
	returns  atomic.Int64 // MEMORY STATS go.idle-returns
	commands uint64       // a.stats.commands at the last look (actor only)
}

// returnIdleMemory gives the OS back the garbage of a burst once the
// server is idle. Go collects only as the heap grows: after a bulk load
// the batches a flush wrote and the replies sent stay resident, often a
// third of the process, until the collector's forced cycle two minutes
// later (measured with 1 M keys: 399 MB resident after the load, 323 MB
// after one cycle). So once a second, when fewer than idleCommands
// commands ran, SQLite holds every change (storage.Store.Settled: a
// flight keeps its frozen batch until it lands; a return between a
// load's last two flights kept about 60 MB of 1 M keys' 280 resident),
// and the heap holds more than the
// collector's headroom beyond what it held after the last return, a
// goroutine runs a cycle and returns the free pages (debug.FreeOSMemory),
// one at a time, off the actor.
func (a *Actor) returnIdleMemory() {
	busy := a.stats.commands-a.idleMem.commands >= idleCommands
	a.idleMem.commands = a.stats.commands
	if busy || !a.st.Settled() || a.idleMem.running.Load() {
		return
	}
	if heapResident() < a.idleMem.resident.Load()+a.gcHeadroom() {
		return
	}
	a.st.Trim()
	a.idleMem.running.Store(true)
	go func() {
		debug.FreeOSMemory()
		a.idleMem.resident.Store(heapResident())
		a.idleMem.returns.Add(1)
		a.idleMem.running.Store(false)
	}()
}

// heapResident is the heap's bytes the OS holds for Go: its objects, live
// or not yet collected, and its free pages not yet returned.
func heapResident() uint64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	metrics.Read(s)
	var n uint64
	for _, v := range s {
		if v.Value.Kind() == metrics.KindUint64 {
			n += v.Value.Uint64()
		}
	}
	return n
}
