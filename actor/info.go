package actor

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// infoSections are INFO's sections in Redis 7.0's order, with Cellar's
// "offload" after "cpu". "cluster" is there because clients and tools read
// cluster_enabled from it; "modules" is empty (Cellar has no modules).
var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "offload", "modules", "commandstats", "errorstats", "latencystats", "cluster", "keyspace"}

// notDefault are the sections INFO and INFO default leave out, as Redis
// does: only "all", "everything" or their name print them.
var notDefault = map[string]bool{"commandstats": true, "latencystats": true}

// INFO [section [section ...]], with Redis 7.0's rules: no section is
// "default"; several may be named; "all" and "everything" are every
// section, "default" the default ones; names are case-insensitive, and
// unknown ones are ignored. Sections come out in Redis's order whatever
// the order asked.
func cmdInfo(c *Ctx) error {
	var all, def bool
	var named []string
	if len(c.args) == 1 {
		def = true
	}
	for _, arg := range c.args[1:] {
		switch name := lower(arg); name {
		case "all", "everything":
			all = true
		case "default":
			def = true
		default:
			named = append(named, name)
		}
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if !all && !(def && !notDefault[sec]) && !slices.Contains(named, sec) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		c.a.infoSection(&b, sec)
	}
	c.w.Verbatim("txt", b.String())
	return nil
}

func (a *Actor) infoSection(b *strings.Builder, sec string) {
	kv := func(k string, v any) { fmt.Fprintf(b, "%s:%v\r\n", k, v) }
	now := time.Now()
	switch sec {
	case "server":
		b.WriteString("# Server\r\n")
		kv("redis_version", RedisVersion)
		kv("redis_git_sha1", "00000000")
		kv("redis_git_dirty", 0)
		kv("redis_mode", "standalone")
		kv("os", runtime.GOOS+" "+runtime.GOARCH)
		kv("arch_bits", 64)
		kv("multiplexing_api", "epoll")
		kv("process_id", os.Getpid())
		supervised := "no"
		if os.Getenv("NOTIFY_SOCKET") != "" {
			supervised = "systemd"
		}
		kv("process_supervised", supervised)
		kv("run_id", a.runID)
		kv("tcp_port", a.cfg.Port)
		kv("server_time_usec", now.UnixMicro())
		up := int64(now.Sub(a.start) / time.Second)
		kv("uptime_in_seconds", up)
		kv("uptime_in_days", up/86400)
		kv("hz", int(time.Second/a.cfg.SweepInterval))
		kv("configured_hz", int(time.Second/a.cfg.SweepInterval))
		kv("executable", executable())
		kv("config_file", a.cfg.ConfigFile)
		kv("io_threads_active", 0)
		a.infoShutdown(kv, now)
		kv("cellar_version", a.cfg.Version)
		kv("cellar_storage", "sqlite "+a.st.Path())
	case "clients":
		b.WriteString("# Clients\r\n")
		kv("connected_clients", len(a.sessions)-len(a.master.replicas)) // as Redis: replicas are not counted
		kv("cluster_connections", 0)
		for _, p := range a.cfg.Params {
			if p.Name == "maxclients" {
				kv("maxclients", p.Get())
			}
		}
		// The largest input and output a client holds now (Redis: over
		// the last few seconds).
		var maxIn, maxOut int64
		for _, s := range a.sessions {
			maxIn = max(maxIn, s.mem.Part(MemQuery))
			maxOut = max(maxOut, s.mem.Output())
		}
		kv("client_recent_max_input_buffer", maxIn)
		kv("client_recent_max_output_buffer", maxOut)
		kv("blocked_clients", a.blk.waiters+a.pause.sessions) // paused clients count, as in Redis
		kv("tracking_clients", a.track.clients)
		kv("clients_in_timeout_table", len(a.blk.timers))
		kv("clients_memory", a.cfg.Clients.Used())
		kv("maxmemory_clients", a.cfg.Clients.Limit())
		// Redis 7.2's fields for WATCH (multi.go).
		watching := 0
		for _, s := range a.sessions {
			if len(s.watched) > 0 {
				watching++
			}
		}
		kv("watching_clients", watching)
		kv("total_watched_keys", a.watches.n)
	case "memory":
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rss := residentBytes()
		b.WriteString("# Memory\r\n")
		kv("used_memory", ms.HeapAlloc)
		kv("used_memory_human", human(ms.HeapAlloc))
		kv("used_memory_rss", rss)
		kv("used_memory_rss_human", human(rss))
		kv("used_memory_peak", ms.HeapSys)
		kv("used_memory_peak_human", human(ms.HeapSys))
		kv("used_memory_startup", a.startHeap)
		sysMem := SystemMemory()
		kv("total_system_memory", sysMem)
		kv("total_system_memory_human", human(sysMem))
		// maxmemory and its policy are stored, not applied (configparams.go).
		maxmem, _ := strconv.ParseUint(a.storedParamValue("maxmemory"), 10, 64)
		kv("maxmemory", maxmem)
		kv("maxmemory_human", human(maxmem))
		kv("maxmemory_policy", a.storedParamValue("maxmemory-policy"))
		// The storage engine (storage.max_memory): what it holds.
		entries, bytes, bound, _ := a.st.MemStats()
		kv("engine_entries", entries)
		kv("engine_bytes", bytes)
		kv("engine_max_bytes", bound)
		kv("mem_clients_normal", a.cfg.Clients.Used())
		kv("maxmemory_clients", a.cfg.Clients.Limit())
		kv("mem_fragmentation_ratio", strconv.FormatFloat(float64(rss)/float64(max(ms.HeapAlloc, 1)), 'f', 2, 64))
		kv("mem_allocator", "go-"+runtime.Version())
	case "persistence":
		y := a.durable
		fsyncs, covered := y.fsyncs.Load(), y.covered.Load()
		perFsync := func(n uint64) string {
			if fsyncs == 0 {
				return "0.00"
			}
			return strconv.FormatFloat(float64(n)/float64(fsyncs), 'f', 2, 64)
		}
		status := "ok"
		if y.failure() != nil {
			status = "err"
		}
		b.WriteString("# Persistence\r\n")
		kv("loading", 0)
		kv("async_loading", 0)
		kv("rdb_changes_since_last_save", 0)
		kv("rdb_bgsave_in_progress", boolInt(a.snap.running))
		kv("rdb_last_save_time", a.snap.lastSave)
		kv("rdb_last_bgsave_status", map[bool]string{true: "ok", false: "err"}[a.snap.lastOK])
		kv("rdb_saves", a.snap.saves)
		kv("rdb_snapshot_file", a.cfg.SnapshotPath)
		kv("aof_enabled", 0)
		kv("aof_rewrite_in_progress", 0)
		kv("durability", a.cfg.Durability)
		kv("commits", a.st.Commits())
		kv("log_fsyncs", fsyncs)
		if a.logging() {
			// Rounds written to the log: what the fsyncs are shared by.
			covered = a.stats.logWrites
		}
		kv("commits_per_fsync", perFsync(covered))
		kv("writes_per_fsync", perFsync(a.stats.writes))
		kv("last_fsync_latency_usec", y.fsyncNs.Load()/1000)
		kv("last_fsync_time", y.lastSyncT.Load())
		kv("fsync_status", status)
		kv("checkpoints", a.st.Checkpoints())
		kv("checkpoint_in_progress", boolInt(a.st.Checkpointing()))
		kv("wal_bytes", a.st.WALSize())
		if l := a.cfg.Log; l != nil {
			// The redo log: where it ends, how much of it is fsynced, and
			// how much is kept (what the database may not durably cover).
			kv("redo_log_position", uint64(l.Written()))
			kv("redo_log_synced", uint64(l.Synced()))
			kv("log_bytes", uint64(l.Written()-l.Oldest()))
			kv("redo_log_writes", a.stats.logWrites)
			kv("flushes", a.stats.flushes)
			kv("last_flush_usec", a.stats.lastFlushUsec)
			// A flush commits on the offload pool (storage/memflush.go).
			kv("flush_in_progress", boolInt(a.st.Flying()))
			kv("unflushed_log_bytes", a.unflushed)
			kv("uncovered_log_bytes", a.uncovered())
			kv("flush_holds", a.stats.flushHolds)
			lag := int64(0)
			if a.unflushed > 0 {
				lag = time.Since(a.unflushedT).Milliseconds()
			}
			kv("flush_lag_ms", lag)
		}
		kv("failed_commits", a.stats.failedCommits)
		kv("failed_writes", a.stats.failedWrites)
		kv("flush_failing", boolInt(a.flushFailed != nil))
	case "stats":
		var in, out, rejected uint64
		var held int64
		if a.net != nil {
			in, out, rejected = a.net.NetInputBytes(), a.net.NetOutputBytes(), a.net.RejectedConns()
			held = a.net.HeldInputBytes()
		}
		b.WriteString("# Stats\r\n")
		kv("total_connections_received", a.stats.connsReceived)
		kv("total_commands_processed", a.stats.commands)
		kv("instantaneous_ops_per_sec", int64(mean(a.inst.ops[:])))
		kv("actor_rounds", a.stats.rounds)
		kv("backlog_bytes", a.Backlog())
		kv("total_net_input_bytes", in)
		kv("total_net_output_bytes", out)
		kv("instantaneous_input_kbps", strconv.FormatFloat(mean(a.inst.in[:]), 'f', 2, 64))
		kv("instantaneous_output_kbps", strconv.FormatFloat(mean(a.inst.out[:]), 'f', 2, 64))
		kv("rejected_connections", rejected)
		kv("sync_full", a.master.fullSyncs)
		kv("sync_partial_ok", a.master.partialOK)
		kv("sync_partial_err", a.master.partialErr)
		kv("sync_full_physical", a.master.physicalSyncs)
		kv("evicted_clients", a.cfg.Clients.Evicted())
		kv("held_input_bytes", held)
		kv("expired_keys", a.stats.expiredKeys)
		_, _, _, evicted := a.st.MemStats()
		kv("evicted_keys", evicted)
		loaded, waited := a.st.LoadStats()
		kv("loaded_keys", loaded)
		kv("load_waits", waited)
		kv("keyspace_hits", a.stats.keyspaceHits)
		kv("keyspace_misses", a.stats.keyspaceMisses)
		kv("pubsub_channels", len(a.ps.tables[subChannel]))
		kv("pubsub_patterns", len(a.ps.tables[subPattern]))
		kv("pubsubshard_channels", len(a.ps.tables[subShard]))
		kv("migrate_cached_sockets", a.migrateSockets.Len())
		kv("pubsub_clients_disconnected", a.stats.pubsubDisconnects)
		kv("tracking_total_keys", len(a.track.keys))
		kv("tracking_total_items", a.track.items)
		kv("tracking_total_prefixes", len(a.track.prefixes))
		kv("unexpected_error_replies", 0)
		kv("total_error_replies", a.errorReplies)
	case "replication":
		b.WriteString("# Replication\r\n")
		a.infoReplication(kv)
	case "cpu":
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		secs := func(t syscall.Timeval) string {
			return strconv.FormatFloat(float64(t.Sec)+float64(t.Usec)/1e6, 'f', 6, 64)
		}
		b.WriteString("# CPU\r\n")
		kv("used_cpu_sys", secs(ru.Stime))
		kv("used_cpu_user", secs(ru.Utime))
	case "offload":
		s := a.pool.Stats()
		b.WriteString("# Offload\r\n")
		kv("block_tasks_submitted", s.Submitted)
		kv("block_tasks_rejected", s.Rejected)
		kv("block_threads_spawned", s.ThreadsSpawned)
		kv("block_threads_retired", s.ThreadsRetired)
		kv("block_queue_depth_peak", s.QueueDepthPeak)
		kv("block_tasks_timed_out", s.Timeouts)
		kv("block_tasks_canceled", s.Canceled)
		kv("block_tasks_completed", s.Completed)
		kv("block_threads", s.Workers)
		kv("block_queue_depth", s.QueueDepth)
	case "commandstats":
		b.WriteString("# Commandstats\r\n")
		line := func(cmd *Command) {
			st := a.cmdStats[cmd.idx]
			if st.calls == 0 && st.rejected == 0 && st.failed == 0 {
				return
			}
			usec := st.took.Microseconds()
			perCall := 0.0
			if st.calls > 0 {
				perCall = float64(usec) / float64(st.calls)
			}
			fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
				cmd.Name, st.calls, usec, perCall, st.rejected, st.failed)
		}
		for _, cmd := range commands.list {
			line(cmd)
			for _, sub := range cmd.Subs {
				line(sub)
			}
		}
	case "modules":
		b.WriteString("# Modules\r\n")
	case "errorstats":
		b.WriteString("# Errorstats\r\n")
		codes := make([]string, 0, len(a.errorStats))
		for code := range a.errorStats {
			codes = append(codes, code)
		}
		sort.Strings(codes)
		for _, code := range codes {
			fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", code, a.errorStats[code])
		}
	case "latencystats":
		b.WriteString("# Latencystats\r\n")
		if a.storedParamValue("latency-tracking") != "yes" {
			break
		}
		pcts := strings.Fields(a.storedParamValue("latency-tracking-info-percentiles"))
		line := func(cmd *Command) {
			h := a.cmdStats[cmd.idx].hist
			if h == nil || h.Count() == 0 {
				return
			}
			fmt.Fprintf(b, "latency_percentiles_usec_%s:", cmd.Name)
			for i, p := range pcts {
				f, _ := strconv.ParseFloat(p, 64)
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(b, "p%s=%.3f", strconv.FormatFloat(f, 'f', -1, 64), float64(h.Percentile(f))/1000)
			}
			b.WriteString("\r\n")
		}
		for _, cmd := range commands.list {
			line(cmd)
			for _, sub := range cmd.Subs {
				line(sub)
			}
		}
	case "cluster":
		b.WriteString("# Cluster\r\n")
		kv("cluster_enabled", 0)
	case "keyspace":
		b.WriteString("# Keyspace\r\n")
		for db := 0; db < numDBs; db++ {
			n := a.st.DBSize(db)
			if n == 0 {
				continue
			}
			exp, _ := a.st.CountExpiring(db)
			fmt.Fprintf(b, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", db, n, exp)
		}
	}
	for _, h := range a.fam.infoers {
		h.info(sec, kv) // the families' fields (registry.go)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func executable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

// residentBytes reads the process's resident set size from /proc.
func residentBytes() uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// SystemMemory is the machine's memory, from /proc/meminfo (0 if unknown).
func SystemMemory() uint64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseUint(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// human formats bytes as Redis's bytesToHuman does (B, K, M, G with two
// decimals).
func human(n uint64) string {
	f := float64(n)
	switch {
	case n < 1024:
		return strconv.FormatUint(n, 10) + "B"
	case n < 1<<20:
		return strconv.FormatFloat(f/1024, 'f', 2, 64) + "K"
	case n < 1<<30:
		return strconv.FormatFloat(f/(1<<20), 'f', 2, 64) + "M"
	default:
		return strconv.FormatFloat(f/(1<<30), 'f', 2, 64) + "G"
	}
}
