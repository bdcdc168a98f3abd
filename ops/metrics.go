package ops

import (
	"context"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellar-db/cellar/actor"
)

// infoMetric maps one INFO field to a metric.
type infoMetric struct {
	field string
	name  string
	help  string
	kind  prometheus.ValueType
	scale float64 // multiplies the field's value (ms → s); 0 means 1
}

const (
	counter = prometheus.CounterValue
	gauge   = prometheus.GaugeValue
)

// infoMetrics are the INFO counters and gauges the endpoint exports, named
// in Prometheus's conventions.
var infoMetrics = []infoMetric{
	{"uptime_in_seconds", "cellar_uptime_seconds", "Seconds since the server started.", gauge, 0},
	{"connected_clients", "cellar_connected_clients", "Client connections open now.", gauge, 0},
	{"blocked_clients", "cellar_blocked_clients", "Clients waiting in a blocking command (or paused).", gauge, 0},
	{"tracking_clients", "cellar_tracking_clients", "Clients with client-side caching tracking on.", gauge, 0},
	{"clients_memory", "cellar_clients_memory_bytes", "Memory held for clients: input, queued commands, replies not yet sent.", gauge, 0},
	{"maxmemory_clients", "cellar_clients_memory_limit_bytes", "maxmemory_clients: the budget of all clients' memory (0: none).", gauge, 0},
	{"used_memory", "cellar_memory_heap_bytes", "Go heap in use.", gauge, 0},
	{"used_memory_rss", "cellar_memory_resident_bytes", "Resident set size of the process.", gauge, 0},
	{"total_connections_received", "cellar_connections_received_total", "Connections accepted.", counter, 0},
	{"rejected_connections", "cellar_rejected_connections_total", "Connections refused at maxclients.", counter, 0},
	{"evicted_clients", "cellar_evicted_clients_total", "Clients disconnected because all clients' memory passed maxmemory_clients.", counter, 0},
	{"total_commands_processed", "cellar_commands_processed_total", "Commands run.", counter, 0},
	{"total_error_replies", "cellar_error_replies_total", "Error replies sent.", counter, 0},
	{"actor_rounds", "cellar_actor_rounds_total", "Rounds the actor ran.", counter, 0},
	{"backlog_bytes", "cellar_backlog_bytes", "Requests waiting for the actor.", gauge, 0},
	{"held_input_bytes", "cellar_held_input_bytes", "Input held by the loops for paused clients.", gauge, 0},
	{"total_net_input_bytes", "cellar_net_input_bytes_total", "Bytes read from clients.", counter, 0},
	{"total_net_output_bytes", "cellar_net_output_bytes_total", "Bytes written to clients.", counter, 0},
	{"expired_keys", "cellar_expired_keys_total", "Keys deleted because they expired.", counter, 0},
	{"keyspace_hits", "cellar_keyspace_hits_total", "Key lookups that found the key.", counter, 0},
	{"keyspace_misses", "cellar_keyspace_misses_total", "Key lookups that did not.", counter, 0},
	{"pubsub_channels", "cellar_pubsub_channels", "Channels with subscribers.", gauge, 0},
	{"pubsub_patterns", "cellar_pubsub_patterns", "Patterns with subscribers.", gauge, 0},
	{"pubsub_clients_disconnected", "cellar_pubsub_clients_disconnected_total", "Subscribers disconnected at their output limits.", counter, 0},
	{"tracking_total_keys", "cellar_tracking_keys", "Keys in the client-side caching tracking table.", gauge, 0},
	{"commits", "cellar_commits_total", "SQLite commits.", counter, 0},
	{"log_fsyncs", "cellar_fsyncs_total", "fsyncs of the redo log (or of the WAL).", counter, 0},
	{"checkpoints", "cellar_checkpoints_total", "WAL checkpoints.", counter, 0},
	{"wal_bytes", "cellar_wal_bytes", "Size of SQLite's WAL file.", gauge, 0},
	{"log_bytes", "cellar_redo_log_bytes", "Redo log kept on disk.", gauge, 0},
	{"flushes", "cellar_flushes_total", "Flushes of the redo log's writes to SQLite.", counter, 0},
	{"unflushed_log_bytes", "cellar_unflushed_log_bytes", "Redo log written and not yet flushed to SQLite.", gauge, 0},
	{"flush_lag_ms", "cellar_flush_lag_seconds", "Age of the oldest write not yet flushed to SQLite.", gauge, 0.001},
	{"failed_commits", "cellar_failed_commits_total", "Commits that failed (disk full, I/O error).", counter, 0},
	{"failed_writes", "cellar_failed_writes_total", "Write commands refused because storage failed.", counter, 0},
	{"flush_failing", "cellar_flush_failing", "1 while flushes to SQLite fail (a full disk): their changes wait in memory and the redo log.", gauge, 0},
	{"rdb_saves", "cellar_snapshots_total", "Snapshots written (SAVE, BGSAVE).", counter, 0},
	{"rdb_bgsave_in_progress", "cellar_snapshot_in_progress", "1 while a snapshot is being written.", gauge, 0},
}

type collector struct{ s *Server }

// Describe sends nothing: the collector is unchecked (the per-command
// and per-database series depend on what ran).
func (c *collector) Describe(chan<- *prometheus.Desc) {}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	emit := func(name, help string, kind prometheus.ValueType, v float64, labels ...string) {
		var keys, vals []string
		for i := 0; i+1 < len(labels); i += 2 {
			keys, vals = append(keys, labels[i]), append(vals, labels[i+1])
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, keys, nil), kind, v, vals...)
	}
	hist := func(name, help string, h actor.Histogram, labels ...string) {
		var keys, vals []string
		for i := 0; i+1 < len(labels); i += 2 {
			keys, vals = append(keys, labels[i]), append(vals, labels[i+1])
		}
		buckets := map[float64]uint64{}
		h.Buckets(func(le float64, n uint64) { buckets[le] = n })
		ch <- prometheus.MustNewConstHistogram(prometheus.NewDesc(name, help, keys, nil), h.Count(), h.Sum().Seconds(), buckets, vals...)
	}

	emit("cellar_ready", "1 when /readyz answers ready.", gauge, b2f(s.ready.Load() && !s.draining.Load() && s.act.Writable()))
	emit("cellar_writable", "0 once an fsync or a redo log write failed (writes are refused until restart).", gauge, b2f(s.act.Writable()))
	hist("cellar_fsync_duration_seconds", "fsyncs of the redo log (or of the WAL), on the offload pool.", s.act.FsyncHistogram())
	hist("cellar_flush_duration_seconds", "Flushes of the redo log's writes to SQLite (commits), on the actor.", s.act.FlushHistogram())
	hist("cellar_checkpoint_duration_seconds", "WAL checkpoints' first phase, on the offload pool.", s.act.CheckpointHistogram())
	hist("cellar_actor_round_duration_seconds", "Rounds of the actor: every command that arrived together, and the redo log write.", s.act.RoundHistogram())

	p := s.pool.Stats()
	emit("cellar_offload_tasks_submitted_total", "Jobs submitted to the offload pool.", counter, float64(p.Submitted))
	emit("cellar_offload_tasks_rejected_total", "Jobs the offload pool refused because its queue was full.", counter, float64(p.Rejected))
	emit("cellar_offload_tasks_timed_out_total", "Jobs dropped at their deadline before they started.", counter, float64(p.Timeouts))
	emit("cellar_offload_tasks_canceled_total", "Jobs canceled before they started.", counter, float64(p.Canceled))
	emit("cellar_offload_tasks_completed_total", "Jobs the offload pool ran.", counter, float64(p.Completed))
	emit("cellar_offload_workers", "Offload workers alive.", gauge, float64(p.Workers))
	emit("cellar_offload_queue_depth", "Jobs queued on the offload pool.", gauge, float64(p.QueueDepth))
	emit("cellar_offload_threads_spawned_total", "Offload workers started.", counter, float64(p.ThreadsSpawned))

	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.HealthTimeout)
	defer cancel()
	o, err := s.act.Observe(ctx)
	if err != nil {
		emit("cellar_actor_answering", "0 when the actor did not answer the scrape in time.", gauge, 0)
		return
	}
	emit("cellar_actor_answering", "0 when the actor did not answer the scrape in time.", gauge, 1)
	for _, m := range infoMetrics {
		v, ok := o.Info[m.field]
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		if m.scale != 0 {
			f *= m.scale
		}
		emit(m.name, m.help, m.kind, f)
	}
	emit("cellar_fsync_failed", "1 once an fsync failed (INFO fsync_status:err).", gauge, b2f(o.Info["fsync_status"] == "err"))
	for k, v := range o.Info {
		db, ok := strings.CutPrefix(k, "db")
		if _, err := strconv.Atoi(db); !ok || err != nil {
			continue
		}
		for _, kv := range strings.Split(v, ",") {
			name, n, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(n, 64)
			switch name {
			case "keys":
				emit("cellar_keys", "Keys in a database.", gauge, f, "db", db)
			case "expires":
				emit("cellar_expiring_keys", "Keys with a time to live in a database.", gauge, f, "db", db)
			}
		}
	}
	for code, n := range o.Errors {
		emit("cellar_errors_total", "Error replies by error code (INFO errorstats).", counter, float64(n), "code", code)
	}
	for _, cmd := range o.Commands {
		emit("cellar_command_calls_total", "Calls of a command.", counter, float64(cmd.Calls), "command", cmd.Name)
		emit("cellar_command_rejected_calls_total", "Calls refused before running (arity, authentication, ...).", counter, float64(cmd.Rejected), "command", cmd.Name)
		emit("cellar_command_failed_calls_total", "Calls that ran and replied with an error.", counter, float64(cmd.Failed), "command", cmd.Name)
		if cmd.Latency.Count() > 0 {
			hist("cellar_command_duration_seconds", "Execution time of a command on the actor.", cmd.Latency, "command", cmd.Name)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
