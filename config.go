package cellar

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/structs"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/cellar-db/cellar/actor"
)

// Config is every setting Cellar has, in one place. Each field's koanf key is
// its name in the YAML file; the environment variable is CELLAR_ and the key
// in upper case with "__" between nesting levels (CELLAR_SQLITE__CACHE_KB).
// deploy/cellar.yaml documents every key; a test keeps the two in step.
type Config struct {
	Bind       string `koanf:"bind"`
	Port       int    `koanf:"port"`
	Dir        string `koanf:"dir"`
	DBFilename string `koanf:"dbfilename"`
	// SnapshotFilename is the file in Dir that SAVE and BGSAVE write.
	SnapshotFilename string `koanf:"snapshot_filename"`
	Durability       string `koanf:"durability"`
	RequirePass      string `koanf:"requirepass"`
	// Users are ACL users, each in Redis's "user" line format without
	// the word "user" ("alice on >secret ~app:* +@read"); ACLFile is an
	// ACL file in Redis's format instead (read at start and by ACL LOAD,
	// written by ACL SAVE). requirepass stays the default user's password.
	Users   []string `koanf:"users"`
	ACLFile string   `koanf:"aclfile"`
	// ProtectedMode is Redis's protected-mode: while the default user has
	// no password, clients from addresses other than 127.0.0.1 and ::1
	// are refused with Redis's -DENIED text and closed.
	ProtectedMode bool `koanf:"protected_mode"`
	// ProxyProtocol: connections from the load balancers named in
	// ProxyProtocolFrom (addresses or CIDR networks) must start with a
	// PROXY protocol header, version 1 or 2 (HAProxy's send-proxy,
	// send-proxy-v2); the client's address it names is the one CLIENT
	// LIST, ACL LOG, protected mode and the logs see. An invalid header,
	// or a header from another address, closes the connection with a log
	// line; other addresses connect directly as usual.
	ProxyProtocol     bool     `koanf:"proxy_protocol"`
	ProxyProtocolFrom []string `koanf:"proxy_protocol_from"`
	// RenameCommands is Redis's rename-command: command name → its new
	// name, or "" to disable it ({flushall: "", config: "cfg-3f9a"}). The
	// old name is then unknown everywhere (clients, MULTI, scripts); ACL
	// rules keep using the real names.
	RenameCommands map[string]string `koanf:"rename_commands"`
	LogLevel       string            `koanf:"loglevel"`
	// LogFormat is "json" (one JSON object per line, for log collectors)
	// or "console" (human-readable, for a terminal).
	LogFormat string `koanf:"log_format"`

	MaxClients             int           `koanf:"maxclients"`
	Loops                  int           `koanf:"loops"`
	ProtoMaxBulkLen        int64         `koanf:"proto_max_bulk_len"`
	EnableDebugCommand     string        `koanf:"enable_debug_command"`
	ClientQueryBufferLimit int           `koanf:"client_query_buffer_limit"`
	TCPKeepAlive           time.Duration `koanf:"tcp_keepalive"`
	// Timeout is Redis's timeout: a client idle this long is closed
	// (blocked and subscribed clients excepted); 0 never. Whole seconds.
	Timeout         time.Duration `koanf:"timeout"`
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout"`
	// DebugAddr, when set (host:port), serves Go's pprof profiles over HTTP
	// there, for profiling a running server. Keep it on loopback.
	DebugAddr string `koanf:"debug_addr"`

	OutputBuffer OutputBufferConfig `koanf:"output_buffer"`
	// MaxBacklog is how many bytes of requests may wait for the actor
	// before the loops stop reading from sockets (TCP pushes back on the
	// clients until it catches up).
	MaxBacklog int64 `koanf:"max_backlog"`
	// MaxMemoryClients is the memory budget of all clients together
	// (Redis's maxmemory-clients): input received and not yet parsed (a bulk
	// still arriving included), commands waiting for the actor, replies
	// being built, in flight or unsent. Above it the client using the most
	// is disconnected with a log line; CLIENT NO-EVICT ON exempts one.
	// 0 counts without a limit.
	MaxMemoryClients int64 `koanf:"maxmemory_clients"`
	// NotifyKeyspaceEvents is Redis's notify-keyspace-events: which
	// keyspace notifications are published ("" for none; flags K E g $ l s
	// h z x e t m n d A, as in Redis).
	NotifyKeyspaceEvents string `koanf:"notify_keyspace_events"`
	// TrackingTableMaxKeys is Redis's tracking-table-max-keys: how many
	// keys client-side caching's tracking table may hold; past it keys are
	// evicted with invalidation messages. 0 means no limit.
	TrackingTableMaxKeys int `koanf:"tracking_table_max_keys"`

	Storage  StorageConfig  `koanf:"storage"`
	SQLite   SQLiteConfig   `koanf:"sqlite"`
	Offload  OffloadConfig  `koanf:"offload"`
	Expiry   ExpiryConfig   `koanf:"expiry"`
	Blocking BlockingConfig `koanf:"blocking"`
	// Transactions bounds what MULTI and WATCH let one client hold.
	Transactions TransactionsConfig `koanf:"transactions"`
	Lua          LuaConfig          `koanf:"lua"`

	// HTTP is the port for metrics and health checks (ops/).
	HTTP HTTPConfig `koanf:"http"`
	// Slowlog is Redis's slow log (SLOWLOG): commands that ran for at
	// least LogSlowerThan microseconds (negative: none; 0: all) are kept,
	// the last MaxLen of them. CONFIG SET slowlog-* changes them.
	Slowlog SlowlogConfig `koanf:"slowlog"`
	// LatencyMonitorThreshold is Redis's latency-monitor-threshold, in
	// milliseconds: events that take at least that long are sampled for
	// LATENCY (0: off).
	LatencyMonitorThreshold int64 `koanf:"latency_monitor_threshold"`

	// ReplicaOf makes Cellar a replica of a Redis master at start-up
	// ("host port" or "host:port"; empty: a master), as REPLICAOF does.
	ReplicaOf string `koanf:"replicaof"`
	// MasterAuth and MasterUser authenticate the replica to its master
	// (Redis's masterauth and masteruser).
	MasterAuth string        `koanf:"masterauth"`
	MasterUser string        `koanf:"masteruser"`
	Replica    ReplicaConfig `koanf:"replica"`
	// Master is how Cellar serves replicas of its own.
	Master MasterConfig `koanf:"master"`

	// File is the YAML file the configuration was loaded from ("" when
	// none); CONFIG REWRITE writes to it.
	File string `koanf:"-"`
	// ManageGoMemory says the server owns its process's Go memory limit
	// (the cellar command, without GOMEMLIMIT): it keeps it at
	// GoMemoryLimit plus what the in-memory engine holds. Servers sharing
	// a process (tests) leave it alone.
	ManageGoMemory bool `koanf:"-"`
	// ManageGCPercent says the server owns the collector's percent (the
	// cellar command, without GOGC): it lowers it as the live heap grows
	// (actor.Config.TuneGC).
	ManageGCPercent bool `koanf:"-"`
}

// ReplicaConfig tunes the replica's link (package replica).
type ReplicaConfig struct {
	// BacklogMaxBytes bounds the waitlist: the master's commands that
	// arrive while its RDB is loaded. Past it the sync is abandoned, with
	// a log line, and started again.
	BacklogMaxBytes int64 `koanf:"backlog_max_bytes"`
	// AnnounceIP is replica-announce-ip: the address (an IP or a DNS name)
	// the replica gives its master in REPLCONF ip-address, which the
	// master lists in INFO replication and Sentinel then uses ("": the
	// address the master sees the connection come from).
	AnnounceIP string `koanf:"announce_ip"`
	// PhysicalSync: a full sync from a Cellar master takes its database's
	// copy (REPLCONF capa cellar-physical: the SQLite snapshot, imported
	// at SQLite's speed) instead of an RDB loaded key by key; false asks
	// for an RDB, as from Redis.
	PhysicalSync bool `koanf:"physical_sync"`
}

// MasterConfig is how Cellar serves its replicas (actor/master.go,
// actor/shutdown.go): the start values of Redis's parameters of the same
// names, which CONFIG SET changes.
type MasterConfig struct {
	// DisklessSync is repl-diskless-sync: a replica that announced
	// REPLCONF capa eof gets its RDB as "$EOF:<mark>\r\n<rdb><mark>"
	// instead of "$<length>\r\n<rdb>", after DisklessSyncDelay so that
	// replicas arriving meanwhile share its snapshot.
	DisklessSync bool `koanf:"diskless_sync"`
	// DisklessSyncDelay is repl-diskless-sync-delay, whole seconds.
	DisklessSyncDelay time.Duration `koanf:"diskless_sync_delay"`
	// DisklessSyncMaxReplicas is repl-diskless-sync-max-replicas: with
	// that many waiting the sync starts before the delay (0: no such
	// count).
	DisklessSyncMaxReplicas int `koanf:"diskless_sync_max_replicas"`
	// ShutdownWait is shutdown-timeout, whole seconds: how long SHUTDOWN,
	// SIGTERM and SIGINT wait (writes held) for lagging replicas to
	// acknowledge every write before the graceful stop; 0 does not wait.
	ShutdownWait time.Duration `koanf:"shutdown_wait"`
}

// SlowlogConfig is the slow log's settings.
type SlowlogConfig struct {
	LogSlowerThan int64 `koanf:"log_slower_than"`
	MaxLen        int64 `koanf:"max_len"`
}

// HTTPConfig is Cellar's HTTP port: /metrics (Prometheus), /healthz,
// /readyz and, with Pprof, /debug/pprof/. Off unless Enabled.
type HTTPConfig struct {
	Enabled bool   `koanf:"enabled"`
	Bind    string `koanf:"bind"`
	// Port 0 picks a free port (tests).
	Port  int  `koanf:"port"`
	Pprof bool `koanf:"pprof"`
	// HealthTimeout is how long /healthz and /metrics wait for the actor
	// to answer.
	HealthTimeout time.Duration `koanf:"health_timeout"`
	// DrainDelay is how long, after SIGTERM, /readyz answers 503 while
	// Cellar still serves, before the graceful stop begins: time for a
	// load balancer's health check to take it out of rotation.
	DrainDelay time.Duration `koanf:"drain_delay"`
}

// LuaConfig tunes scripting (EVAL, FCALL).
type LuaConfig struct {
	// BusyReplyThreshold is how long a script may run before other
	// clients are answered -BUSY and SCRIPT KILL / FUNCTION KILL can stop
	// it (Redis's busy-reply-threshold, alias lua-time-limit; CONFIG SET
	// changes it at run time).
	BusyReplyThreshold time.Duration `koanf:"busy_reply_threshold"`
	// MaxScripts bounds the cache of compiled scripts (SCRIPT LOAD and
	// EVAL); when it is full the oldest goes, and EVALSHA of it answers
	// NOSCRIPT.
	MaxScripts int `koanf:"max_scripts"`
}

// OutputBufferConfig bounds what a client that does not read its replies
// can make the server hold (Redis's client-output-buffer-limit for normal
// clients, which Redis leaves unlimited by default).
type OutputBufferConfig struct {
	// HardLimit: a client with more unsent output is disconnected at once.
	HardLimit int64 `koanf:"hard_limit"`
	// SoftLimit: while a client has more unsent output, Cellar reads
	// nothing more from it; if it stays above for SoftSeconds it is
	// disconnected. 0 disables both.
	SoftLimit   int64         `koanf:"soft_limit"`
	SoftSeconds time.Duration `koanf:"soft_seconds"`
	// PubsubHardLimit, PubsubSoftLimit and PubsubSoftSeconds are the same
	// limits for subscribed clients (Redis's pubsub class, by default
	// 32mb 8mb 60): a subscriber past the hard limit, or above the soft
	// limit for longer than PubsubSoftSeconds, is disconnected. 0 disables
	// a limit.
	PubsubHardLimit   int64         `koanf:"pubsub_hard_limit"`
	PubsubSoftLimit   int64         `koanf:"pubsub_soft_limit"`
	PubsubSoftSeconds time.Duration `koanf:"pubsub_soft_seconds"`
	// ReplicaHardLimit, ReplicaSoftLimit and ReplicaSoftSeconds bound a
	// replica's stream (Redis's replica class, by default 256mb 64mb 60):
	// what it has not read yet, and what waits for it during its full
	// resync. 0 disables a limit.
	ReplicaHardLimit   int64         `koanf:"replica_hard_limit"`
	ReplicaSoftLimit   int64         `koanf:"replica_soft_limit"`
	ReplicaSoftSeconds time.Duration `koanf:"replica_soft_seconds"`
}

// StorageConfig sets the storage engine (docs/architecture.md, "Storage
// engine"): the keys clients touched are held in memory as whole objects,
// and SQLite is written only by the flush. A write is durable once it is
// in the redo log; rounds of writes reach SQLite in batches (flushes): at
// most FlushInterval apart, or sooner once FlushBytes of log records wait
// (0: sized from MaxMemory, FlushWindow).
// MaxMemory bounds what the engine holds, in bytes; 0 (the default) takes
// a quarter of the memory Cellar may use (MemoryBound).
// MaxUnflushed bounds what waits for its flushes, in bytes of redo log
// SQLite does not cover yet (0: four times FlushBytes): at the bound,
// writes wait for the flush (and the loops stop reading), or, while
// flushes fail, writes that need room are refused.
type StorageConfig struct {
	FlushInterval time.Duration `koanf:"flush_interval"`
	FlushBytes    int64         `koanf:"flush_bytes"`
	MaxMemory     int64         `koanf:"max_memory"`
	MaxUnflushed  int64         `koanf:"max_unflushed"`
}

// SQLiteConfig tunes the database.
type SQLiteConfig struct {
	CacheKB int `koanf:"cache_kb"`
	// CheckpointPages: when the WAL grows past this many pages, Cellar
	// checkpoints it (mostly on the offload pool).
	CheckpointPages int `koanf:"checkpoint_pages"`
	// MaxPageCount caps the database at this many pages (0: no cap); at
	// the cap, writes fail with an error and reads go on.
	MaxPageCount int64 `koanf:"max_page_count"`
}

// OffloadConfig sizes the pool for blocking disk work.
type OffloadConfig struct {
	QueueSize   int           `koanf:"queue_size"`
	MinWorkers  int           `koanf:"min_workers"`
	MaxWorkers  int           `koanf:"max_workers"`
	IdleTimeout time.Duration `koanf:"idle_timeout"`
}

// ExpiryConfig tunes the active expiry sweeper.
type ExpiryConfig struct {
	Interval time.Duration `koanf:"interval"`
	Batch    int           `koanf:"batch"`
}

// BlockingConfig bounds blocked clients (BLPOP, BZPOPMIN and the other
// blocking list and sorted-set commands). A blocking command that would
// pass a limit is refused with "ERR too many blocked clients".
type BlockingConfig struct {
	MaxWaitersPerKey int `koanf:"max_waiters_per_key"`
	MaxTotalWaiters  int `koanf:"max_total_waiters"`
	MaxKeysPerWait   int `koanf:"max_keys_per_wait"`
	// WakeupBatchSize is how many waiters one ready key serves before
	// other ready keys get their turn.
	WakeupBatchSize int `koanf:"wakeup_batch_size"`
}

// TransactionsConfig bounds MULTI's queue and WATCH's keys per client
// (Redis has no such limits). Past either, the command is refused with an
// error, and a command refused while queuing makes EXEC fail.
type TransactionsConfig struct {
	MaxQueuedBytes int64 `koanf:"max_queued_bytes"`
	MaxWatchedKeys int   `koanf:"max_watched_keys"`
}

// DefaultConfig is Cellar's configuration when nothing is set: the embedded
// SQLite database in ./data, on 127.0.0.1:6379, durability everysec.
func DefaultConfig() Config {
	return Config{
		Bind:                   "127.0.0.1",
		Port:                   6379,
		Dir:                    "./data",
		DBFilename:             "cellar.db",
		SnapshotFilename:       "cellar-snapshot.db",
		Durability:             "everysec",
		Users:                  []string{},
		ProtectedMode:          true,
		ProxyProtocolFrom:      []string{},
		RenameCommands:         map[string]string{},
		LogLevel:               "info",
		LogFormat:              "json",
		MaxClients:             10000,
		ProtoMaxBulkLen:        512 << 20,
		EnableDebugCommand:     "no",
		ClientQueryBufferLimit: 1 << 30,
		OutputBuffer: OutputBufferConfig{HardLimit: 256 << 20, SoftLimit: 32 << 20, SoftSeconds: 60 * time.Second,
			PubsubHardLimit: 32 << 20, PubsubSoftLimit: 8 << 20, PubsubSoftSeconds: 60 * time.Second,
			ReplicaHardLimit: 256 << 20, ReplicaSoftLimit: 64 << 20, ReplicaSoftSeconds: 60 * time.Second},
		MaxBacklog:           8 << 20,
		MaxMemoryClients:     256 << 20,
		TrackingTableMaxKeys: 1000000,
		TCPKeepAlive:         300 * time.Second,
		ShutdownTimeout:      10 * time.Second,
		Storage:              StorageConfig{FlushInterval: 2 * time.Second},
		SQLite:               SQLiteConfig{CheckpointPages: 16384},
		Offload:              OffloadConfig{QueueSize: 1024, MinWorkers: 1, MaxWorkers: 8, IdleTimeout: 10 * time.Second},
		Expiry:               ExpiryConfig{Interval: 100 * time.Millisecond, Batch: 200},
		Blocking:             BlockingConfig{MaxWaitersPerKey: 10000, MaxTotalWaiters: 50000, MaxKeysPerWait: 128, WakeupBatchSize: 1},
		Transactions:         TransactionsConfig{MaxQueuedBytes: 64 << 20, MaxWatchedKeys: 10000},
		Lua:                  LuaConfig{BusyReplyThreshold: 5 * time.Second, MaxScripts: 10000},
		Replica:              ReplicaConfig{BacklogMaxBytes: 256 << 20, PhysicalSync: true},
		Master:               MasterConfig{DisklessSync: true, DisklessSyncDelay: 5 * time.Second, ShutdownWait: 10 * time.Second},
		HTTP:                 HTTPConfig{Bind: "127.0.0.1", Port: 9379, HealthTimeout: time.Second},
		Slowlog:              SlowlogConfig{LogSlowerThan: 10000, MaxLen: 128},
	}
}

// GoMemoryLimit is the soft memory limit Cellar gives Go's garbage
// collector (runtime/debug.SetMemoryLimit), derived from what the settings
// let Cellar hold: client memory (maxmemory_clients) and half as much
// again — a reply is built, then copied into the socket's buffer, and the
// first copy is garbage until collected — and a base for everything
// else. Near it the collector works harder rather than let the heap double (measured:
// with twice the budget instead, the attacks in tests/clientmem_test.go
// peaked ~300 MB higher). 0 when maxmemory_clients
// is 0 (nothing to derive it from). SQLite's page cache lives outside Go's
// heap.
//
// The keys the storage engine holds come on top, and change: with
// ManageGoMemory the actor keeps the limit at this plus twice what the
// engine holds (actor.Config.GoMemoryLimit).
func (c Config) GoMemoryLimit() int64 {
	if c.MaxMemoryClients == 0 {
		return 0
	}
	return c.MaxMemoryClients + c.MaxMemoryClients/2 + goMemoryBase
}

// MemoryBound is the in-memory engine's bound (storage.max_memory): as set,
// or by default a quarter of the memory Cellar may use — the machine's, or
// its cgroup's limit when it has a lower one (a container) — and at least
// 64 MB. A quarter, since Go holds the keys in about twice the bytes the
// bound counts, and clients, SQLite's page cache and the collector's
// headroom need the rest.
func (c Config) MemoryBound() int64 {
	if c.Storage.MaxMemory > 0 {
		return c.Storage.MaxMemory
	}
	avail := int64(actor.SystemMemory())
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(f); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (avail == 0 || n < avail) {
				avail = n // "max" (no limit) does not parse
			}
		}
	}
	if avail == 0 {
		avail = 4 << 30 // unknown: assume a small machine
	}
	return max(avail/4, 64<<20)
}

// FlushWindow is how many bytes of redo log start a flush
// (storage.flush_bytes) and how many may wait for the flushes
// (storage.max_unflushed). At 0 they are sized from the memory bound: a
// thirty-second of it, between 16 MB and 64 MB, and four times that. What
// waits for a flush cannot leave memory and is what a restart after a
// crash replays, so a small bound keeps the window small; a wider one lets
// more writes of a key reach SQLite as one row (docs/performance.md).
func (c Config) FlushWindow() (flushBytes, maxUnflushed int64) {
	flushBytes, maxUnflushed = c.Storage.FlushBytes, c.Storage.MaxUnflushed
	if flushBytes == 0 {
		flushBytes = min(max(c.MemoryBound()/32, 16<<20), 64<<20)
	}
	if maxUnflushed == 0 {
		maxUnflushed = 4 * flushBytes
	}
	return flushBytes, maxUnflushed
}

// MemoryNeeded is what the settings let Cellar hold at most, for a
// container's memory request: Go's limit (GoMemoryLimit), twice the
// in-memory engine's bound on top (the limit follows what the engine
// holds), and SQLite's page caches, which live outside Go's heap: the
// flush's cache_kb, a quarter of it for the loads off the actor, and
// SQLite's default 2 MB for each of the actor's two connections (its own,
// and the engine's reader; storage.Options.CacheKB).
func (c Config) MemoryNeeded() int64 {
	kb := int64(c.FlushCacheKB())
	return c.GoMemoryLimit() + 2*c.MemoryBound() + (kb+max(kb/4, 2000)+2*2000)<<10
}

// FlushCacheKB is the most the flush connection's SQLite page cache holds,
// in KiB: sqlite.cache_kb, or when that is 0 a quarter of the storage
// engine's bound (MemoryBound) between 2 and 32 MiB. A bound set small
// asks for a small process, and SQLite's caches live outside Go's heap and
// its limit; 32 MiB holds the interior pages of tables far larger than the
// bound's keys. Below it the flush sizes its cache to the file: a 32nd of
// it, from 4 MiB (storage's flushCacheKB).
func (c Config) FlushCacheKB() int {
	if c.SQLite.CacheKB > 0 {
		return c.SQLite.CacheKB
	}
	return int(min(max(c.MemoryBound()/4, 2<<20), 32<<20) >> 10)
}

// GCHeadroom is the garbage Go's heap may grow by between two collections
// once the live heap is larger (actor.Config.GCHeadroom): the storage
// engine's bound, between 16 and 64 MiB.
func (c Config) GCHeadroom() int64 { return min(max(c.MemoryBound(), 16<<20), 64<<20) }

// goMemoryBase is the Go heap Cellar needs besides clients and the keys: command metadata, sessions, waiters, SQLite's driver buffers.
const goMemoryBase = 128 << 20

// DBPath is the database file's path.
func (c Config) DBPath() string { return filepath.Join(c.Dir, c.DBFilename) }

// ConfigError is an invalid setting; the command exits with status 2.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return "invalid configuration: " + e.Msg }

// ErrHelp and ErrVersion are returned by LoadConfig for --help and
// --version; the caller prints what was asked and exits 0.
var (
	ErrHelp    = errors.New("help requested")
	ErrVersion = errors.New("version requested")
)

// flagKeys are the command-line flags and the keys they set.
var flagKeys = []struct{ flag, key, usage string }{
	{"bind", "bind", "address to listen on"},
	{"port", "port", "TCP port to listen on"},
	{"dir", "dir", "data directory (holds the SQLite database)"},
	{"durability", "durability", "always | everysec | off"},
	{"requirepass", "requirepass", "password clients must AUTH with"},
	{"loglevel", "loglevel", "debug | info | warn | error"},
	{"replicaof", "replicaof", "replicate a Redis master: host:port"},
}

// LoadConfig builds the configuration from, in increasing precedence:
// defaults, the YAML file (--config, or CELLAR_CONFIG), CELLAR_*
// environment variables, and flags. usage receives the flag help text.
func LoadConfig(args, environ []string, usage *strings.Builder) (Config, error) {
	fs := pflag.NewFlagSet("cellar", pflag.ContinueOnError)
	fs.SetOutput(usage)
	configFile := fs.String("config", "", "YAML configuration file")
	showVersion := fs.Bool("version", false, "print the version and exit")
	def := DefaultConfig()
	for _, f := range flagKeys {
		fs.String(f.flag, "", f.usage+" (default "+defaultString(def, f.key)+")")
	}
	if usage != nil {
		fs.Usage = func() {
			fmt.Fprintf(usage, "Usage: cellar [flags]\n\nA Redis-compatible server that keeps every byte in SQLite.\n\nFlags:\n%s\nEvery setting can also come from the YAML file and from CELLAR_<KEY>\nenvironment variables (nested keys joined by __); see deploy/cellar.yaml.\n", fs.FlagUsages())
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return def, ErrHelp
		}
		return def, &ConfigError{Msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return def, &ConfigError{Msg: fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *showVersion {
		return def, ErrVersion
	}

	k := koanf.New(".")
	if err := k.Load(structs.Provider(def, "koanf"), nil); err != nil {
		return def, err
	}
	path := *configFile
	if path == "" {
		path = envValue(environ, "CELLAR_CONFIG")
	}
	if path != "" {
		if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
			return def, &ConfigError{Msg: fmt.Sprintf("config file %s: %v", path, err)}
		}
	}
	envOpt := env.Opt{
		Prefix: "CELLAR_",
		TransformFunc: func(key, v string) (string, any) {
			key = strings.TrimPrefix(key, "CELLAR_")
			if key == "CONFIG" {
				return "", nil
			}
			return strings.ReplaceAll(strings.ToLower(key), "__", "."), v
		},
		EnvironFunc: func() []string { return environ },
	}
	if err := k.Load(env.Provider(".", envOpt), nil); err != nil {
		return def, err
	}
	for _, f := range flagKeys {
		if fs.Changed(f.flag) {
			v, _ := fs.GetString(f.flag)
			k.Set(f.key, v)
		}
	}
	if err := checkKeys(k); err != nil {
		return def, err
	}
	var cfg Config
	if err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		return def, &ConfigError{Msg: strings.ReplaceAll(err.Error(), "\n", " ")}
	}
	cfg.File = path
	return cfg, cfg.Validate()
}

func envValue(environ []string, name string) string {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// knownKeys lists every configuration key.
func knownKeys() map[string]bool {
	k := koanf.New(".")
	k.Load(structs.Provider(DefaultConfig(), "koanf"), nil)
	known := map[string]bool{}
	for _, key := range k.Keys() {
		known[key] = true
	}
	return known
}

// removedKeys are keys Cellar once had, with what to do about them: a file
// written for an older Cellar gets that rather than "unknown key".
var removedKeys = map[string]string{
	"storage.engine":            "removed: the in-memory engine is the only one (docs/architecture.md, \"Storage engine\"); delete the key",
	"storage.overlay_max_bytes": "removed with the SQLite engine's overlay; storage.max_unflushed bounds what waits for a flush",
	"sqlite.hot_cache_bytes":    "removed with the SQLite engine's hot cache; storage.max_memory bounds what Cellar holds",
}

// checkKeys refuses keys Cellar does not have (a typo in the YAML file or an
// environment variable), naming them.
func checkKeys(k *koanf.Koanf) error {
	known := knownKeys()
	var unknown []string
	for _, key := range k.Keys() {
		if why, ok := removedKeys[key]; ok {
			return &ConfigError{Msg: key + ": " + why}
		}
		// rename_commands is a map whose keys are command names.
		if !known[key] && !strings.HasPrefix(key, "rename_commands.") {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return &ConfigError{Msg: "unknown key " + strings.Join(unknown, ", ")}
	}
	return nil
}

func defaultString(c Config, key string) string {
	k := koanf.New(".")
	k.Load(structs.Provider(c, "koanf"), nil)
	return k.String(key)
}

// Validate checks every setting, naming the key and the reason.
func (c Config) Validate() error {
	bad := func(key, format string, a ...any) error {
		return &ConfigError{Msg: key + ": " + fmt.Sprintf(format, a...)}
	}
	switch {
	case c.Port < 0 || c.Port > 65535:
		return bad("port", "must be between 0 and 65535, not %d", c.Port)
	case c.Bind == "":
		return bad("bind", "must not be empty")
	case c.HTTP.Enabled && (c.HTTP.Port < 0 || c.HTTP.Port > 65535):
		return bad("http.port", "must be between 0 and 65535, not %d", c.HTTP.Port)
	case c.HTTP.Enabled && c.HTTP.Bind == "":
		return bad("http.bind", "must not be empty")
	case c.HTTP.HealthTimeout <= 0:
		return bad("http.health_timeout", "must be positive, not %s", c.HTTP.HealthTimeout)
	case c.Slowlog.LogSlowerThan < -1:
		return bad("slowlog.log_slower_than", "must be -1 (off) or more, not %d", c.Slowlog.LogSlowerThan)
	case c.Slowlog.MaxLen < 0:
		return bad("slowlog.max_len", "must not be negative, not %d", c.Slowlog.MaxLen)
	case c.LatencyMonitorThreshold < 0:
		return bad("latency_monitor_threshold", "must not be negative, not %d", c.LatencyMonitorThreshold)
	case c.HTTP.DrainDelay < 0:
		return bad("http.drain_delay", "must not be negative, not %s", c.HTTP.DrainDelay)
	case c.Dir == "":
		return bad("dir", "must not be empty")
	case c.DBFilename == "" || strings.ContainsRune(c.DBFilename, '/'):
		return bad("dbfilename", "must be a plain file name, not %q", c.DBFilename)
	case c.SnapshotFilename == "" || strings.ContainsRune(c.SnapshotFilename, '/') || c.SnapshotFilename == c.DBFilename:
		return bad("snapshot_filename", "must be a plain file name other than dbfilename, not %q", c.SnapshotFilename)
	case c.MaxClients < 1:
		return bad("maxclients", "must be at least 1, not %d", c.MaxClients)
	case c.Loops < 0:
		return bad("loops", "must be 0 (one per core but the actor's) or more, not %d", c.Loops)
	case c.ProtoMaxBulkLen < 1<<20:
		return bad("proto_max_bulk_len", "must be at least 1048576, not %d", c.ProtoMaxBulkLen)
	case c.EnableDebugCommand != "no" && c.EnableDebugCommand != "yes" && c.EnableDebugCommand != "local":
		return bad("enable_debug_command", "must be no, yes or local, not %q", c.EnableDebugCommand)
	case c.ClientQueryBufferLimit < 1<<20:
		return bad("client_query_buffer_limit", "must be at least 1048576, not %d", c.ClientQueryBufferLimit)
	case c.OutputBuffer.HardLimit < 1<<20:
		return bad("output_buffer.hard_limit", "must be at least 1048576, not %d", c.OutputBuffer.HardLimit)
	case c.OutputBuffer.SoftLimit < 0 || c.OutputBuffer.SoftLimit > c.OutputBuffer.HardLimit:
		return bad("output_buffer.soft_limit", "must be between 0 and output_buffer.hard_limit (%d), not %d", c.OutputBuffer.HardLimit, c.OutputBuffer.SoftLimit)
	case c.Master.DisklessSyncDelay < 0 || c.Master.DisklessSyncDelay%time.Second != 0:
		return bad("master.diskless_sync_delay", "must be 0 or a whole number of seconds, not %s", c.Master.DisklessSyncDelay)
	case c.Master.DisklessSyncMaxReplicas < 0:
		return bad("master.diskless_sync_max_replicas", "must be 0 (no such count) or more, not %d", c.Master.DisklessSyncMaxReplicas)
	case c.Master.ShutdownWait < 0 || c.Master.ShutdownWait%time.Second != 0:
		return bad("master.shutdown_wait", "must be 0 (no wait) or a whole number of seconds, not %s", c.Master.ShutdownWait)
	case c.Replica.BacklogMaxBytes <= 0:
		return bad("replica.backlog_max_bytes", "must be more than 0, not %d", c.Replica.BacklogMaxBytes)
	case c.ReplicaOf != "" && func() bool { _, _, err := c.ReplicaOfAddr(); return err != nil }():
		_, _, err := c.ReplicaOfAddr()
		return bad("replicaof", "%v", err)
	case c.TrackingTableMaxKeys < 0:
		return bad("tracking_table_max_keys", "must be 0 (no limit) or more, not %d", c.TrackingTableMaxKeys)
	case notifyErr(c.NotifyKeyspaceEvents) != nil:
		return bad("notify_keyspace_events", "%v", notifyErr(c.NotifyKeyspaceEvents))
	case c.OutputBuffer.PubsubHardLimit < 0:
		return bad("output_buffer.pubsub_hard_limit", "must not be negative")
	case c.OutputBuffer.PubsubSoftLimit < 0:
		return bad("output_buffer.pubsub_soft_limit", "must not be negative")
	case c.OutputBuffer.PubsubSoftSeconds < 0:
		return bad("output_buffer.pubsub_soft_seconds", "must not be negative")
	case c.OutputBuffer.SoftSeconds < 0:
		return bad("output_buffer.soft_seconds", "must not be negative")
	case c.MaxBacklog < 1<<20:
		return bad("max_backlog", "must be at least 1048576, not %d", c.MaxBacklog)
	case c.MaxMemoryClients != 0 && c.MaxMemoryClients < 1<<20:
		return bad("maxmemory_clients", "must be 0 (no limit) or at least 1048576, not %d", c.MaxMemoryClients)
	case c.TCPKeepAlive < 0:
		return bad("tcp_keepalive", "must not be negative")
	case c.Timeout < 0 || c.Timeout%time.Second != 0:
		return bad("timeout", "must be 0 (never) or a whole number of seconds, not %s", c.Timeout)
	case c.ShutdownTimeout <= 0:
		return bad("shutdown_timeout", "must be positive")
	case c.Storage.FlushInterval <= 0 || c.Storage.FlushInterval > time.Minute:
		return bad("storage.flush_interval", "must be more than 0 and at most 1m, not %s", c.Storage.FlushInterval)
	case c.Storage.FlushBytes != 0 && c.Storage.FlushBytes < 1<<20:
		return bad("storage.flush_bytes", "must be 0 (sized from storage.max_memory) or at least 1048576, not %d", c.Storage.FlushBytes)
	case c.Storage.MaxMemory < 0:
		return bad("storage.max_memory", "must be 0 (a quarter of the memory) or more, not %d", c.Storage.MaxMemory)
	case c.Storage.MaxUnflushed != 0 && c.Storage.MaxUnflushed < 1<<16:
		return bad("storage.max_unflushed", "must be 0 (four times storage.flush_bytes) or at least 65536, not %d", c.Storage.MaxUnflushed)
	case c.SQLite.CacheKB < 0:
		return bad("sqlite.cache_kb", "must not be negative")
	case c.SQLite.MaxPageCount < 0:
		return bad("sqlite.max_page_count", "must be 0 (no cap) or more, not %d", c.SQLite.MaxPageCount)
	case c.SQLite.CheckpointPages < 16:
		return bad("sqlite.checkpoint_pages", "must be at least 16, not %d", c.SQLite.CheckpointPages)
	case c.Offload.QueueSize < 1:
		return bad("offload.queue_size", "must be at least 1, not %d", c.Offload.QueueSize)
	case c.Offload.MaxWorkers < 1:
		return bad("offload.max_workers", "must be at least 1, not %d", c.Offload.MaxWorkers)
	case c.Offload.MinWorkers < 0 || c.Offload.MinWorkers > c.Offload.MaxWorkers:
		return bad("offload.min_workers", "must be between 0 and offload.max_workers (%d), not %d", c.Offload.MaxWorkers, c.Offload.MinWorkers)
	case c.Offload.IdleTimeout <= 0:
		return bad("offload.idle_timeout", "must be positive")
	case c.Expiry.Interval <= 0:
		return bad("expiry.interval", "must be positive")
	case c.Expiry.Batch < 1:
		return bad("expiry.batch", "must be at least 1, not %d", c.Expiry.Batch)
	case c.Blocking.MaxWaitersPerKey < 1:
		return bad("blocking.max_waiters_per_key", "must be at least 1, not %d", c.Blocking.MaxWaitersPerKey)
	case c.Blocking.MaxTotalWaiters < 1:
		return bad("blocking.max_total_waiters", "must be at least 1, not %d", c.Blocking.MaxTotalWaiters)
	case c.Blocking.MaxKeysPerWait < 1:
		return bad("blocking.max_keys_per_wait", "must be at least 1, not %d", c.Blocking.MaxKeysPerWait)
	case c.Blocking.WakeupBatchSize < 1:
		return bad("blocking.wakeup_batch_size", "must be at least 1, not %d", c.Blocking.WakeupBatchSize)
	case c.Transactions.MaxQueuedBytes < 1:
		return bad("transactions.max_queued_bytes", "must be at least 1, not %d", c.Transactions.MaxQueuedBytes)
	case c.Transactions.MaxWatchedKeys < 1:
		return bad("transactions.max_watched_keys", "must be at least 1, not %d", c.Transactions.MaxWatchedKeys)
	case c.Lua.BusyReplyThreshold < time.Millisecond:
		return bad("lua.busy_reply_threshold", "must be at least 1ms, not %s", c.Lua.BusyReplyThreshold)
	case c.Lua.MaxScripts < 1:
		return bad("lua.max_scripts", "must be at least 1, not %d", c.Lua.MaxScripts)
	}
	if _, err := actor.ParseDurability(c.Durability); err != nil {
		return bad("durability", "%v", err)
	}
	if c.LogFormat != "json" && c.LogFormat != "console" && c.LogFormat != "" {
		return bad("log_format", "must be json or console, not %q", c.LogFormat)
	}
	if _, err := parseLogLevel(c.LogLevel); err != nil {
		return bad("loglevel", "%v", err)
	}
	return nil
}

// notifyErr checks a notify-keyspace-events flag string.
func notifyErr(s string) error {
	_, err := actor.ParseNotifyFlags(s)
	return err
}

// ReplicaOfAddr splits the replicaof setting ("host port" or "host:port").
func (c Config) ReplicaOfAddr() (host string, port int, err error) {
	v := strings.TrimSpace(c.ReplicaOf)
	var p string
	if f := strings.Fields(v); len(f) == 2 {
		host, p = f[0], f[1]
	} else if host, p, err = net.SplitHostPort(v); err != nil {
		return "", 0, fmt.Errorf("must be \"host port\" or \"host:port\", not %q", c.ReplicaOf)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("port must be between 1 and 65535, not %q", p)
	}
	return host, port, nil
}
