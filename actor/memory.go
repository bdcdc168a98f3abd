package actor

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/cellar-db/cellar/storage"
)

// MEMORY reports where memory goes. Cellar's data lives in SQLite, on
// disk, not in the process's heap as Redis's does; so MEMORY USAGE is the
// bytes a key takes in the database (estimated from its rows, with
// nested values sampled as Redis samples them), and MEMORY STATS reports
// the Go heap, the client buffers, the storage engine and SQLite's files next
// to Redis's fields that apply.

var memoryCommands = registerCommands([]*Command{
	{Name: "memory", Summary: "Reports memory and storage use.", Subs: []*Command{
		{Name: "memory|usage", Summary: "Estimates the bytes a key takes in the database.", Handler: cmdMemoryUsage, noTouch: true},
		{Name: "memory|stats", Summary: "Reports the heap, client buffers, caches and database files.", Handler: cmdMemoryStats},
		{Name: "memory|doctor", Summary: "Looks for memory problems.", Handler: cmdMemoryDoctor},
		{Name: "memory|purge", Summary: "Returns freed heap memory to the operating system.", Handler: cmdMemoryPurge},
		{Name: "memory|malloc-stats", Summary: "Reports the Go allocator's statistics.", Handler: cmdMemoryMallocStats},
		{Name: "memory|help", Summary: "Lists the MEMORY subcommands.", Handler: cmdMemoryHelp},
	}},
})

// Estimated SQLite overheads: a key's row (the record header, the db and
// id columns, the B-tree cell) and an element's row.
const (
	keyRowBytes  = 40
	elemRowBytes = 24
)

// MEMORY USAGE key [SAMPLES count]
func cmdMemoryUsage(c *Ctx) error {
	samples := int64(5)
	for i := 3; i < len(c.args); i++ {
		if !c.argEq(i, "samples") || i+1 >= len(c.args) {
			return ErrSyntax
		}
		n, ok := parseIntOK(c.args[i+1])
		switch {
		case !ok:
			return ErrNotInteger
		case n < 0:
			return ErrSyntax
		case n == 0:
			n = 1 << 62
		}
		samples = n
		i++
	}
	key := c.args[2]
	m, ok, err := c.readKey(key) // a hit or a miss, as Redis's lookup counts it
	if err != nil {
		return err
	}
	if !ok {
		c.w.Null()
		return nil
	}
	size, err := keyBytes(c, key, m.Type, samples)
	if err != nil {
		return err
	}
	c.w.Int(size)
	return nil
}

// keyBytes estimates what key takes in the database: its row, and its
// elements' sizes, averaged over the first samples elements and scaled to
// the element count.
func keyBytes(c *Ctx, key []byte, t storage.Type, samples int64) (int64, error) {
	base := int64(keyRowBytes + len(key))
	var n, seen, sum int64
	switch t {
	case storage.TypeString:
		l, _, err := c.st.StringLen(c.db, key)
		return base + l, err
	case storage.TypeList:
		var err error
		if n, err = c.st.ListLen(c.db, key); err != nil {
			return 0, err
		}
		_, err = c.st.ListRange(c.db, key, 0, min(samples, n)-1, func(int64) {}, func(v []byte) {
			seen++
			sum += int64(len(v)) + elemRowBytes
		})
		if err != nil {
			return 0, err
		}
	case storage.TypeHash, storage.TypeSet, storage.TypeZSet:
		coll, err := c.st.OpenColl(c.db, key, t)
		if err != nil || coll == nil {
			return base, err
		}
		n = coll.Len
		var cursor uint64
		for seen < min(samples, n) {
			cursor, err = c.st.ScanElements(coll, cursor, int(min(samples-seen, 1024)), func(e *storage.Elem) {
				if seen < samples {
					seen++
					sum += int64(len(e.Member)+len(e.Value)) + elemRowBytes
					if t == storage.TypeZSet {
						sum += 8 + elemRowBytes // the score index's row
					}
				}
			})
			if err != nil || cursor == 0 {
				break
			}
		}
		if err != nil {
			return 0, err
		}
	case storage.TypeStream:
		st, err := c.st.OpenStream(c.db, key)
		if err != nil || st == nil {
			return base, err
		}
		n = st.Len
		err = c.st.StreamRange(st, storage.StreamID{}, storage.MaxStreamID, false, min(samples, n), func(e *storage.StreamEntry) bool {
			seen++
			sum += 16 + elemRowBytes
			for _, f := range e.Fields {
				sum += int64(len(f))
			}
			return true
		})
		if err != nil {
			return 0, err
		}
	}
	if seen == 0 {
		return base, nil
	}
	return base + sum*n/seen, nil
}

// MEMORY STATS: Redis's fields that apply, then Cellar's own.
func cmdMemoryStats(c *Ctx) error {
	a := c.a
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := residentBytes()
	var keys int64
	for db := 0; db < numDBs; db++ {
		keys += a.st.DBSize(db)
	}
	dbBytes := fileSize(a.st.Path())
	_, engineBytes, _, _ := a.st.MemStats()
	clients := a.cfg.Clients.Used()
	overhead := int64(a.startHeap) + clients
	perKey := int64(0)
	if keys > 0 {
		perKey = dbBytes / keys
	}
	pct := func(x, y float64) float64 {
		if y == 0 {
			return 0
		}
		return x * 100 / y
	}
	type field struct {
		name string
		v    any
	}
	fields := []field{
		{"peak.allocated", int64(ms.HeapSys)},
		{"total.allocated", int64(ms.HeapAlloc)},
		{"startup.allocated", int64(a.startHeap)},
		{"replication.backlog", int64(0)},
		{"clients.slaves", int64(0)},
		{"clients.normal", clients},
		{"cluster.links", int64(0)},
		{"aof.buffer", int64(0)},
		{"overhead.total", overhead},
		{"keys.count", keys},
		{"keys.bytes-per-key", perKey},
		{"dataset.bytes", dbBytes},
		{"peak.percentage", pct(float64(ms.HeapAlloc), float64(ms.HeapSys))},
		{"fragmentation", float64(rss) / float64(max(ms.HeapAlloc, 1))},
		{"fragmentation.bytes", int64(rss) - int64(ms.HeapAlloc)},
		// Cellar's own.
		{"rss.bytes", int64(rss)},
		{"go.heap.inuse", int64(ms.HeapInuse)},
		{"go.heap.idle", int64(ms.HeapIdle)},
		{"go.heap.released", int64(ms.HeapReleased)},
		{"go.stack.inuse", int64(ms.StackInuse)},
		{"go.sys", int64(ms.Sys)},
		{"go.gc.count", int64(ms.NumGC)},
		{"go.memory-limit", debug.SetMemoryLimit(-1)},
		{"go.gc-percent", int64(gcPercent())},
		{"go.idle-returns", a.idleMem.returns.Load()},
		{"engine.bytes", engineBytes},
		{"clients.limit", a.cfg.Clients.Limit()},
		{"sqlite.database.bytes", dbBytes},
		{"sqlite.wal.bytes", a.st.WALSize()},
	}
	if l := a.cfg.Log; l != nil {
		fields = append(fields, field{"redo-log.bytes", int64(l.Written() - l.Oldest())})
	}
	c.w.Map(len(fields))
	for _, f := range fields {
		c.w.BulkString(f.name)
		switch v := f.v.(type) {
		case int64:
			c.w.Int(v)
		case float64:
			c.w.Double(v)
		}
	}
	return nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// MEMORY DOCTOR
func cmdMemoryDoctor(c *Ctx) error {
	a := c.a
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var keys int64
	for db := 0; db < numDBs; db++ {
		keys += a.st.DBSize(db)
	}
	var b strings.Builder
	if keys == 0 {
		b.WriteString("Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n")
		c.w.Verbatim("txt", b.String())
		return nil
	}
	var issues []string
	if lim := a.cfg.Clients.Limit(); lim > 0 && a.cfg.Clients.Used() > lim/2 {
		issues = append(issues, fmt.Sprintf(" * Clients: client buffers hold %d bytes, more than half of maxmemory_clients (%d). Clients that do not read their replies, or huge pipelines, are the usual cause; past the limit the biggest client is evicted.", a.cfg.Clients.Used(), lim))
	}
	if limit := debug.SetMemoryLimit(-1); limit > 0 && limit != 1<<63-1 && int64(ms.HeapAlloc) > limit*9/10 {
		issues = append(issues, fmt.Sprintf(" * Go heap: %d bytes in use, near the collector's soft limit (%d); the collector is working hard. Check the client buffers and storage.max_memory.", ms.HeapAlloc, limit))
	}
	if wal := a.st.WALSize(); wal > 1<<30 {
		issues = append(issues, fmt.Sprintf(" * SQLite WAL: %d bytes. Checkpoints are not keeping up (see LATENCY DOCTOR and the checkpoint metrics).", wal))
	}
	if len(issues) == 0 {
		b.WriteString("Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n")
	} else {
		b.WriteString("Sam, I detected a few issues in this Cellar instance memory implants:\n\n")
		b.WriteString(strings.Join(issues, "\n\n"))
		b.WriteString("\n\nI'm here to keep you safe, Sam. I want to help you.\n")
	}
	c.w.Verbatim("txt", b.String())
	return nil
}

// MEMORY PURGE: returns freed Go heap to the operating system.
func cmdMemoryPurge(c *Ctx) error {
	debug.FreeOSMemory()
	c.w.OK()
	return nil
}

// MEMORY MALLOC-STATS: Go's allocator statistics (Redis prints jemalloc's).
func cmdMemoryMallocStats(c *Ctx) error {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var b strings.Builder
	fmt.Fprintf(&b, "Go runtime %s memory statistics\n", runtime.Version())
	for _, kv := range []struct {
		k string
		v uint64
	}{
		{"heap_alloc", ms.HeapAlloc}, {"heap_sys", ms.HeapSys}, {"heap_idle", ms.HeapIdle}, {"heap_inuse", ms.HeapInuse},
		{"heap_released", ms.HeapReleased}, {"heap_objects", ms.HeapObjects}, {"total_alloc", ms.TotalAlloc},
		{"mallocs", ms.Mallocs}, {"frees", ms.Frees}, {"stack_inuse", ms.StackInuse}, {"stack_sys", ms.StackSys},
		{"mspan_inuse", ms.MSpanInuse}, {"mcache_inuse", ms.MCacheInuse}, {"gc_sys", ms.GCSys}, {"other_sys", ms.OtherSys},
		{"sys", ms.Sys}, {"next_gc", ms.NextGC}, {"num_gc", uint64(ms.NumGC)},
	} {
		fmt.Fprintf(&b, "%s: %d\n", kv.k, kv.v)
	}
	c.w.Verbatim("txt", b.String())
	return nil
}

// MEMORY HELP
func cmdMemoryHelp(c *Ctx) error {
	return helpReply(c, "memory", []string{
		"DOCTOR",
		"    Return memory problems reports.",
		"MALLOC-STATS",
		"    Return internal statistics report from the memory allocator.",
		"PURGE",
		"    Attempt to purge dirty pages for reclamation by the allocator.",
		"STATS",
		"    Return information about the memory usage of the server.",
		"USAGE <key> [SAMPLES <count>]",
		"    Return memory in bytes used by <key> and its value. Nested values are",
		"    sampled up to <count> times (default: 5, 0 means sample all).",
		"HELP",
		"    Prints this help.",
	})
}
