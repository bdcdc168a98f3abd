// Package cellar is the one place where Cellar is wired together: it opens
// the SQLite store, starts the offload pool and the storage actor, and puts
// the gnet loops in front of them. cmd/cellar, the tests and anyone
// embedding Cellar start it through Start and stop it through Shutdown.
//
//	client sockets → loop (gnet) → actor (one goroutine, SQLite) → offload
//	              ← completions (counting mailbox per loop) ←
//
// docs/architecture.md explains the goroutines, the invariants every
// package keeps and the data flows; each package's doc.go says how it keeps
// them.
package cellar

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cellar-db/cellar/storage/redo"

	"github.com/rs/zerolog"

	"github.com/cellar-db/cellar/actor"
	"github.com/cellar-db/cellar/loop"
	"github.com/cellar-db/cellar/offload"
	"github.com/cellar-db/cellar/ops"
	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/replica"
	"github.com/cellar-db/cellar/storage"
)

// Version is Cellar's version (set at build time with -ldflags).
var Version = "0.1.0-dev"

// Server is a running Cellar.
type Server struct {
	cfg     Config
	log     zerolog.Logger
	logGate *logGate // CONFIG SET loglevel
	store   *storage.Store
	redo    *redo.Log
	pool    *offload.Pool
	act     *actor.Actor
	repl    *replica.Manager
	net     *loop.Server

	debug     *http.Server
	ops       *ops.Server // the HTTP port (nil when off)
	actorDone chan struct{}
	stopOnce  sync.Once
	stopErr   error
	done      chan struct{}
}

// Start opens the database and starts serving. On error nothing is left
// running.
func Start(cfg Config, log zerolog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	proxyFrom, err := loop.ParseProxyFrom(cfg.ProxyProtocolFrom)
	if err != nil {
		return nil, err
	}
	if cfg.ProxyProtocol && len(proxyFrom) == 0 {
		return nil, errors.New("cellar: proxy_protocol needs the load balancers' addresses in proxy_protocol_from")
	}
	dur, _ := actor.ParseDurability(cfg.Durability)
	store, err := storage.Open(storage.Options{
		Path:            cfg.DBPath(),
		CacheKB:         cfg.FlushCacheKB(),
		CheckpointPages: cfg.SQLite.CheckpointPages,
		MaxPageCount:    cfg.SQLite.MaxPageCount,
		MaxMemory:       cfg.MemoryBound(),
	})
	if err != nil {
		return nil, err
	}
	rlog, err := openRedoLog(cfg, store, log)
	if err != nil {
		store.Close()
		return nil, err
	}
	pool := offload.New(offload.Config{
		QueueSize:   cfg.Offload.QueueSize,
		MinWorkers:  cfg.Offload.MinWorkers,
		MaxWorkers:  cfg.Offload.MaxWorkers,
		IdleTimeout: cfg.Offload.IdleTimeout,
	})
	gate := newLogGate(cfg.LogLevel, log.GetLevel())
	log = gate.wrap(log)
	s := &Server{cfg: cfg, log: log, logGate: gate, store: store, redo: rlog, pool: pool, actorDone: make(chan struct{}), done: make(chan struct{})}
	clients := actor.NewMemBudget(cfg.MaxMemoryClients, sampledWarnings(log.With().Str("pkg", "clients").Logger()))
	flushBytes, maxUnflushed := cfg.FlushWindow()
	act, err := actor.New(actor.Config{
		Durability:           dur,
		RequirePass:          cfg.RequirePass,
		Users:                cfg.Users,
		ACLFile:              cfg.ACLFile,
		NoProtectedMode:      !cfg.ProtectedMode,
		IdleTimeout:          int(cfg.Timeout / time.Second),
		RenameCommands:       cfg.RenameCommands,
		TCPKeepAlive:         int(cfg.TCPKeepAlive / time.Second),
		MaxBulkLen:           cfg.ProtoMaxBulkLen,
		EnableDebugCommand:   cfg.EnableDebugCommand,
		MaxReply:             cfg.OutputBuffer.HardLimit,
		PubsubHardLimit:      cfg.OutputBuffer.PubsubHardLimit,
		PubsubSoftLimit:      cfg.OutputBuffer.PubsubSoftLimit,
		PubsubSoftTime:       cfg.OutputBuffer.PubsubSoftSeconds,
		ReplicaHardLimit:     cfg.OutputBuffer.ReplicaHardLimit,
		ReplicaSoftLimit:     cfg.OutputBuffer.ReplicaSoftLimit,
		ReplicaSoftTime:      cfg.OutputBuffer.ReplicaSoftSeconds,
		NotifyKeyspaceEvents: cfg.NotifyKeyspaceEvents,
		TrackingTableMaxKeys: cfg.TrackingTableMaxKeys,
		Clients:              clients,
		Log:                  rlog,
		FlushInterval:        cfg.Storage.FlushInterval,
		FlushBytes:           flushBytes,
		MaxUnflushed:         maxUnflushed,
		GoMemoryLimit:        goMemoryLimit(cfg),
		TuneGC:               cfg.ManageGCPercent,
		GCHeadroom:           cfg.GCHeadroom(),
		SweepInterval:        cfg.Expiry.Interval,
		SweepBatch:           cfg.Expiry.Batch,
		Version:              Version,
		Port:                 cfg.Port,
		Bind:                 cfg.Bind,
		SnapshotPath:         filepath.Join(cfg.Dir, cfg.SnapshotFilename),
		Shutdown:             s.shutdownSoon,
		ShutdownAborted:      s.undrain,
		Params:               s.params(),

		MaxWaitersPerKey: cfg.Blocking.MaxWaitersPerKey,
		MaxTotalWaiters:  cfg.Blocking.MaxTotalWaiters,
		MaxKeysPerWait:   cfg.Blocking.MaxKeysPerWait,
		WakeupBatchSize:  cfg.Blocking.WakeupBatchSize,

		MaxQueuedBytes:     cfg.Transactions.MaxQueuedBytes,
		MaxWatchedKeys:     cfg.Transactions.MaxWatchedKeys,
		MaxScripts:         cfg.Lua.MaxScripts,
		BusyReplyThreshold: cfg.Lua.BusyReplyThreshold,

		StoredParams: map[string]string{
			"slowlog-log-slower-than":         strconv.FormatInt(cfg.Slowlog.LogSlowerThan, 10),
			"slowlog-max-len":                 strconv.FormatInt(cfg.Slowlog.MaxLen, 10),
			"latency-monitor-threshold":       strconv.FormatInt(cfg.LatencyMonitorThreshold, 10),
			"repl-diskless-sync":              yesNo(cfg.Master.DisklessSync),
			"repl-diskless-sync-delay":        strconv.FormatInt(int64(cfg.Master.DisklessSyncDelay/time.Second), 10),
			"repl-diskless-sync-max-replicas": strconv.Itoa(cfg.Master.DisklessSyncMaxReplicas),
			"shutdown-timeout":                strconv.FormatInt(int64(cfg.Master.ShutdownWait/time.Second), 10),
			"replica-announce-ip":             cfg.Replica.AnnounceIP,
		},
		RewriteConfig: s.rewriter(),
		ConfigFile:    cfg.File,
	}, store, pool, log.With().Str("pkg", "actor").Logger())
	if err == nil {
		var n int
		t0 := time.Now()
		if n, err = act.ReplayLog(); err == nil && n > 0 {
			log.Info().Int("records", n).Dur("took", time.Since(t0)).Msg("replayed the redo log")
		} else if err != nil {
			err = fmt.Errorf("cellar: replaying the redo log: %w", err)
		}
	}
	if err != nil {
		pool.Close(context.Background())
		rlog.Close()
		store.Close()
		return nil, err
	}
	s.act = act
	s.repl = replica.New(act, replica.Config{
		MasterAuth: cfg.MasterAuth, MasterUser: cfg.MasterUser, ListenPort: cfg.Port,
		BacklogMaxBytes: cfg.Replica.BacklogMaxBytes, PhysicalSync: cfg.Replica.PhysicalSync, Clients: clients,
		Log: log.With().Str("pkg", "replica").Logger(),
	})
	act.SetReplicator(s.repl)
	s.net = loop.New(loop.Config{
		Bind:            cfg.Bind,
		Port:            cfg.Port,
		Loops:           cfg.Loops,
		MaxClients:      cfg.MaxClients,
		Limits:          proto.Limits{MaxBulkLen: cfg.ProtoMaxBulkLen, MaxInline: proto.DefaultLimits.MaxInline},
		MaxQueryBuffer:  cfg.ClientQueryBufferLimit,
		OutputHardLimit: cfg.OutputBuffer.HardLimit,
		OutputSoftLimit: cfg.OutputBuffer.SoftLimit,
		OutputSoftTime:  cfg.OutputBuffer.SoftSeconds,
		MaxBacklog:      cfg.MaxBacklog,
		Clients:         clients,
		ProxyProtocol:   cfg.ProxyProtocol,
		ProxyFrom:       proxyFrom,
	}, act, sampledWarnings(log.With().Str("pkg", "loop").Logger()))
	go func() {
		act.Run()
		close(s.actorDone)
	}()
	if err := s.net.Start(); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		act.Stop(ctx)
		pool.Close(ctx)
		rlog.Close()
		store.Close()
		return nil, err
	}
	if cfg.DebugAddr != "" {
		s.debug = &http.Server{Addr: cfg.DebugAddr, Handler: debugMux()}
		go func() {
			if err := s.debug.ListenAndServe(); err != nil && err != http.ErrServerClosed {
				log.Error().Err(err).Str("addr", cfg.DebugAddr).Msg("debug endpoint")
			}
		}()
	}
	if ta, ok := s.net.Addr().(*net.TCPAddr); ok {
		s.repl.SetListenPort(ta.Port) // what a replica announces (port 0: the kernel's pick)
	}
	if cfg.ReplicaOf != "" {
		host, port, _ := cfg.ReplicaOfAddr() // Validate checked it
		act.ReplicaOf(host, port)
	}
	if cfg.HTTP.Enabled {
		s.ops = ops.New(ops.Config{
			Addr:          net.JoinHostPort(cfg.HTTP.Bind, strconv.Itoa(cfg.HTTP.Port)),
			Pprof:         cfg.HTTP.Pprof,
			HealthTimeout: cfg.HTTP.HealthTimeout,
		}, act, pool, log.With().Str("pkg", "ops").Logger())
		if err := s.ops.Start(); err != nil {
			ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
			defer cancel()
			s.Shutdown(ctx)
			return nil, fmt.Errorf("cellar: http port: %w", err)
		}
		s.ops.SetReady()
		log.Info().Str("addr", s.ops.Addr().String()).Msg("serving /metrics, /healthz and /readyz")
	}
	log.Info().Str("addr", s.net.Addr().String()).Str("db", cfg.DBPath()).
		Str("durability", cfg.Durability).Str("version", Version).Msg("Cellar is ready to accept connections")
	return s, nil
}

// Addr is the address Cellar listens on.
func (s *Server) Addr() net.Addr { return s.net.Addr() }

// Scripts is the running script's watch: whether one makes the server
// busy, and the switches that stop it (safe from any goroutine).
func (s *Server) Scripts() *actor.ScriptWatch { return s.act.Scripts() }

// sampledWarnings limits l's warnings to bursts of 50 a second, then one
// in 100: the per-client warnings (a client closed at a limit, evicted)
// cannot flood the log when many clients misbehave at once. Other levels
// pass untouched.
func sampledWarnings(l zerolog.Logger) zerolog.Logger {
	return l.Sample(zerolog.LevelSampler{WarnSampler: &zerolog.BurstSampler{
		Burst: 50, Period: time.Second, NextSampler: &zerolog.BasicSampler{N: 100},
	}})
}

// rewriter is CONFIG REWRITE's writer, nil without a configuration file.
func (s *Server) rewriter() func(map[string]string) error {
	if s.cfg.File == "" {
		return nil
	}
	return func(values map[string]string) error { return rewriteConfig(s.cfg.File, values) }
}

// HTTPAddr is where the HTTP port listens; nil when it is off.
func (s *Server) HTTPAddr() net.Addr {
	if s.ops == nil {
		return nil
	}
	return s.ops.Addr()
}

// Drain makes /readyz answer 503 from now on, while clients are still
// served: the first step of a graceful stop behind a load balancer.
// Shutdown drains too.
func (s *Server) Drain() {
	if s.ops != nil {
		s.ops.Drain()
	}
}

// Done is closed once the server has shut down.
func (s *Server) Done() <-chan struct{} { return s.done }

// Shutdown stops Cellar gracefully within ctx's deadline: stop reading
// requests, finish the batches already submitted, deliver their replies,
// let pending fsyncs complete, close the database (which checkpoints the
// WAL), and close the connections. The order keeps the gnet engine alive
// until no goroutine can call into it any more: a late Execute after the
// engine stops could write into a reused file descriptor, possibly the
// database (docs/architecture.md, "Shutdown"). It is safe to call more
// than once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() {
		defer close(s.done)
		s.Drain()
		if s.debug != nil {
			s.debug.Close()
		}
		s.net.StopReading()
		s.repl.Close() // the link to a master, if any: it needs the actor to finish
		s.act.Stop(ctx)
		<-s.actorDone
		s.net.Flush(ctx)
		s.pool.Close(ctx)
		// Everything acknowledged is in the log; make all of it durable.
		if _, err := s.redo.Sync(); err != nil {
			s.stopErr = fmt.Errorf("cellar: fsync the redo log: %w", err)
			s.log.Error().Err(err).Msg("the last fsync of the redo log failed")
		}
		s.redo.Close()
		if err := s.store.Close(); err != nil {
			s.stopErr = fmt.Errorf("cellar: close database: %w", err)
			s.log.Error().Err(err).Msg("closing the database failed")
		}
		if err := s.net.Stop(ctx); err != nil && s.stopErr == nil {
			s.stopErr = err
		}
		if s.ops != nil {
			s.ops.Close()
		}
		s.log.Info().Msg("Cellar stopped")
	})
	return s.stopErr
}

// openRedoLog opens the redo log beside the database (its file name plus
// "-redo"), resuming at the position the database covers, and logs what
// recovery found (a torn tail cut off, a log restarted behind the
// database).
func openRedoLog(cfg Config, store *storage.Store, log zerolog.Logger) (*redo.Log, error) {
	pos, err := store.RedoPosition()
	if err != nil {
		return nil, err
	}
	l, rec, err := redo.Open(cfg.DBPath()+"-redo", redo.Options{Start: redo.Position(pos), MaxRecord: redo.MaxRecordLimit})
	if err != nil {
		return nil, fmt.Errorf("cellar: redo log: %w", err)
	}
	if rec.Torn != nil || rec.Restarted || len(rec.Obsolete) > 0 {
		log.Warn().Str("recovery", rec.String()).Msg("redo log recovered")
	}
	return l, nil
}

// RequestShutdown is SIGTERM (sigint false) or SIGINT as Redis has them:
// a SHUTDOWN with the flags of shutdown-on-sigterm or shutdown-on-sigint,
// which waits for lagging replicas (up to shutdown-timeout) before the
// graceful stop; Done is closed once the server has stopped. SHUTDOWN
// ABORT cancels it while it waits. Safe from any goroutine.
func (s *Server) RequestShutdown(sigint bool) { s.act.ShutdownRequested(sigint) }

// ShutdownPending reports whether a shutdown asked for waits for replicas
// or finishes.
func (s *Server) ShutdownPending() bool { return s.act.ShutdownPending() }

// undrain makes /readyz ready again: a shutdown that drained was aborted
// (SHUTDOWN ABORT), and the server serves on. On the actor goroutine.
func (s *Server) undrain() {
	if s.ops != nil {
		s.ops.Undrain()
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// shutdownSoon starts a graceful shutdown on its own goroutine (the SHUTDOWN
// command asks for it from the actor, which Shutdown waits for).
func (s *Server) shutdownSoon() {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		defer cancel()
		s.Shutdown(ctx)
	}()
}

// params is the CONFIG GET/SET view of the settings outside the actor.
// Changing them at run time is not supported yet, but for loglevel: they
// are reported, and CONFIG SET refuses them as immutable.
func (s *Server) params() []actor.Param {
	c := s.cfg
	str := func(v string) func() string { return func() string { return v } }
	num := func(v int64) func() string { return str(strconv.FormatInt(v, 10)) }
	return []actor.Param{
		s.bindParam(),
		s.portParam(),
		{Name: "dir", Get: str(c.Dir)},
		{Name: "maxclients", Get: num(int64(c.MaxClients))},
		{Name: "client-query-buffer-limit", Get: num(int64(c.ClientQueryBufferLimit))},
		{Name: "client-output-buffer-limit", Get: str(fmt.Sprintf("normal %d %d %d slave %d %d %d pubsub %d %d %d",
			c.OutputBuffer.HardLimit, c.OutputBuffer.SoftLimit, int64(c.OutputBuffer.SoftSeconds/time.Second),
			c.OutputBuffer.ReplicaHardLimit, c.OutputBuffer.ReplicaSoftLimit, int64(c.OutputBuffer.ReplicaSoftSeconds/time.Second),
			c.OutputBuffer.PubsubHardLimit, c.OutputBuffer.PubsubSoftLimit, int64(c.OutputBuffer.PubsubSoftSeconds/time.Second)))},
		s.logGate.param(),
	}
}

// portParam is port for CONFIG GET and SET. The listener cannot move at
// run time: a valid new port fails as Redis fails when it cannot listen on
// it (so a CONFIG SET naming it changes nothing), the current one is
// accepted.
func (s *Server) portParam() actor.Param {
	cur := strconv.Itoa(s.cfg.Port)
	return actor.Param{Name: "port", Get: func() string { return cur }, Set: func(v string) error {
		n, err := actor.NormalizeParam("port", v)
		switch {
		case err != nil:
			return err
		case n == cur:
			return nil
		}
		s.log.Warn().Str("port", n).Msg("CONFIG SET port: Cellar cannot move its listener at run time; restart it with the new port")
		return actor.ApplyError(actor.ErrParamListen)
	}}
}

// bindParam is bind for CONFIG GET and SET, as portParam: a valid new
// list of addresses fails as Redis fails when it cannot bind them, the
// current one is accepted.
func (s *Server) bindParam() actor.Param {
	cur := s.cfg.Bind
	return actor.Param{Name: "bind", Get: func() string { return cur }, Set: func(v string) error {
		n, err := actor.NormalizeParam("bind", v)
		switch {
		case err != nil:
			return err
		case n == cur || v == cur:
			return nil
		}
		s.log.Warn().Str("bind", n).Msg("CONFIG SET bind: Cellar cannot move its listener at run time; restart it with the new addresses")
		return actor.ApplyError(actor.ErrParamBind)
	}}
}

// debugMux serves the pprof profiles.
func debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// parseLogLevel maps Cellar's (and Redis's) level names to zerolog's.
func parseLogLevel(s string) (zerolog.Level, error) {
	switch strings.ToLower(s) {
	case "debug", "verbose":
		return zerolog.DebugLevel, nil
	case "info", "notice":
		return zerolog.InfoLevel, nil
	case "warn", "warning":
		return zerolog.WarnLevel, nil
	case "error":
		return zerolog.ErrorLevel, nil
	}
	return zerolog.InfoLevel, fmt.Errorf("must be debug, info, warn or error, not %q", s)
}

// NewLogger makes the server logger at cfg's level and in its format
// (JSON lines, or zerolog's console format), writing to w.
func NewLogger(cfg Config, w zerolog.LevelWriter) zerolog.Logger {
	lvl, _ := parseLogLevel(cfg.LogLevel)
	if cfg.LogFormat == "console" {
		return zerolog.New(zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}).Level(lvl).With().Timestamp().Logger()
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}

// goMemoryLimit is the Go memory limit the actor keeps, before what the
// in-memory engine holds (0: the actor leaves the limit alone).
func goMemoryLimit(cfg Config) int64 {
	if !cfg.ManageGoMemory {
		return 0
	}
	return cfg.GoMemoryLimit()
}
