package actor

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/cellar-db/cellar/storage/redo"

	"github.com/rs/zerolog"

	"github.com/cellar-db/cellar/migration"
	"github.com/cellar-db/cellar/offload"
	"github.com/cellar-db/cellar/storage"
)

// Actor is the storage actor. Create it with New, start Run on its own
// goroutine, stop it with Stop.
type Actor struct {
	cfg   Config
	ahead [][]byte // prefetch's keys, reused
	log   zerolog.Logger
	st    *storage.Store
	pool  *offload.Pool
	net   NetStats
	in    inbox
	stop  chan struct{}
	done  chan struct{}
	start time.Time

	sessions map[uint64]*session
	// txs is the sessions in MULTI (beginTx, endTx), for a busy script's
	// view of their queues (busyView).
	txs map[uint64]*session
	ld  loadWaits // batches waiting for keys read off the actor (loads.go)
	// migrateSockets is MIGRATE's connections to its targets
	// (goroutine-safe; migrate.go).
	migrateSockets *migration.Sockets
	// frames[d] is the Ctx and scratch of the command running at depth d
	// (dispatch.go); depth is how many are running.
	frames []*frame
	depth  int
	spare  []message // the inbox buffer not lent to the inbox right now

	// The current round.
	out        []routed
	delivering []Completion // deliver's scratch
	recs       []cmdRec
	roundErr   error
	nowMs      int64
	roundStart time.Time
	outHeld    int // entries of out with w set or drop

	blk     blocking
	ps      pubsub
	watches watching  // WATCH's index (multi.go)
	track   tracking  // client-side caching's tables (tracking.go)
	repl    replState // the replica role and its link (replication.go)
	master  master    // serving replicas: the stream, the backlog, WAIT (master.go)
	pause   pausing   // CLIENT PAUSE (pause.go)
	// noActiveExpire: DEBUG SET-ACTIVE-EXPIRE 0 stopped the expiry sweep
	// (debug.go).
	noActiveExpire bool
	// notifyFlags is notify-keyspace-events; notify is the same when it
	// publishes anything, else 0 (notify.go); notifyBuf is its scratch.
	notifyFlags, notify int
	notifyBuf           []byte
	// storedParams are the CONFIG values of Redis's parameters Cellar keeps
	// without applying (configparams.go).
	storedParams storedParams
	// accessCfg is what the settings say of keys' access clocks (access.go).
	accessCfg accessPolicy
	// clientsLimit is the client memory budget a CONFIG SET running now
	// has set (-1: none), given to Clients once the command is done: as in
	// Redis, clients are evicted for a new budget after CONFIG SET, never
	// for one it rolls back.
	clientsLimit int64
	// configSetting: a CONFIG SET is running (clientsLimit).
	configSetting bool

	// clientsPct is maxmemory-clients when it names a percentage of
	// maxmemory ("10%"), "" when it names a size (applyClientsPct).
	clientsPct string
	snap       snapshots
	down       shuttingDown // a SHUTDOWN waiting for replicas (shutdown.go)

	durable *syncer
	// eff is the round's effects for the redo log (effects.go).
	eff effects
	// unflushed is the log written since the last flush, flushAt when the
	// next is due; afterFlush waits for a flush that starts after it was
	// asked for, afterLand for the flush under way, which did (redolog.go).
	unflushed  int64
	unflushedT time.Time // when the oldest unflushed record was written
	flushAt    time.Time
	afterFlush []func()
	afterLand  []func()
	// imports are the physical syncs' imports waiting for their flush
	// (physical.go).
	imports []*importWait
	// flushFailed is, on the in-memory engine, why its last flush failed,
	// until one succeeds (redolog.go, holdBack).
	flushFailed error
	// logPos is the redo log position the last commit stored; trimRunning
	// says a trim is on the pool (redolog.go).
	logPos      redo.Position
	trimRunning bool
	// logPins are the positions from which sync jobs read the redo log
	// (a physical sync's catch-up, fullsync.go): no trim goes past them.
	logPins   map[*fullSync]redo.Position
	nextSweep time.Time
	// nextIdleCheck: when closeIdle looks for idle clients next.
	nextIdleCheck time.Time
	// nextMemLimit: when followMemoryLimit runs next; goLimit is the Go
	// memory limit it set last, gcPercent the collector's percent (0: not
	// set).
	nextMemLimit time.Time
	goLimit      int64
	gcPercent    int
	idleMem      idleMemory // gctune.go
	sweepMore    bool
	lastSync     time.Time

	// busyMs is busy-reply-threshold in milliseconds (CONFIG SET changes
	// it).
	busyMs atomic.Int64
	// fam is the families with state of their own: their states and
	// hooks (registry.go).
	fam registry

	// acl is the users and the ACL LOG (acl.go, aclcmd.go); gate what the
	// loops read of it, and of protected-mode (gate.go).
	acl           aclState
	gate          Gate
	protectedMode bool
	// renamed is the command policy (rename.go); nil without renames.
	renamed *renames

	stats stats
	// cmdStats are INFO commandstats' counters, by Command.idx.
	cmdStats []cmdStat
	// errorStats counts error replies by their first word (INFO
	// errorstats; at most maxErrorCodes codes), errorReplies all of them.
	errorStats   map[string]uint64
	errorReplies uint64
	slow         slowlog        // SLOWLOG (slowlog.go)
	startHeap    uint64         // the Go heap when the actor was made (MEMORY STATS)
	runID        string         // INFO run_id: 40 random hex digits, new at each start
	lat          latencyMonitor // LATENCY (latency.go)
	monitors     []*session     // MONITOR's clients (monitor.go)
	inst         instant        // INFO's instantaneous_* (ops.go)
}

// cmdStat is one command's line of INFO commandstats.
type cmdStat struct {
	calls, rejected, failed uint64
	took                    time.Duration
	// hist is the command's execution times (LATENCY HISTOGRAM, INFO
	// latencystats), made at its first call.
	hist *Histogram
}

type stats struct {
	connsReceived   uint64
	commands        uint64
	rounds          uint64
	writes          uint64 // write commands that succeeded
	expiredKeys     uint64
	keyspaceHits    uint64
	keyspaceMisses  uint64
	failedCommits   uint64
	failedWrites    uint64
	lastCommitError string
	logWrites       uint64 // rounds written to the redo log
	flushes         uint64 // commits of the open transaction (redolog.go)
	flushHolds      uint64 // rounds that waited for a flush (holdBack)
	lastFlushUsec   int64
	// pubsubDisconnects: subscribers disconnected at their output limits.
	pubsubDisconnects uint64
}

// New makes an actor over an open store. The caller starts Run.
func New(cfg Config, st *storage.Store, pool *offload.Pool, log zerolog.Logger) (*Actor, error) {
	if commands.err != nil {
		return nil, commands.err
	}
	cfg = cfg.withDefaults()
	if cfg.Clients == nil {
		cfg.Clients = NewMemBudget(0, log)
	}
	a := &Actor{
		cmdStats: make([]cmdStat, commands.n),
		cfg:      cfg,
		log:      log,
		st:       st,
		pool:     pool,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		start:    time.Now(),
		sessions: map[uint64]*session{},

		migrateSockets: migration.NewSockets(),
	}
	a.makeFamilies()
	a.track.maxKeys = cfg.TrackingTableMaxKeys
	st.OnCheckpoint = func(took time.Duration) { a.lat.observe(evCheckpoint, took) }
	flags, err := ParseNotifyFlags(cfg.NotifyKeyspaceEvents)
	if err != nil {
		return nil, fmt.Errorf("actor: notify-keyspace-events: %w", err)
	}
	a.setNotify(flags)
	if err := a.initACL(); err != nil {
		return nil, err
	}
	a.gate.keepAlive.Store(int64(cfg.TCPKeepAlive))
	if err := a.setRenames(cfg.RenameCommands); err != nil {
		return nil, err
	}
	a.blk.queues = map[waitKey]*waitQueue{}
	a.blk.readySet = map[waitKey]bool{}
	a.blk.timer = time.NewTimer(time.Hour)
	a.blk.timer.Stop()
	a.in.bell = make(chan struct{}, 1)
	syncFn := st.SyncWAL
	if cfg.Log != nil {
		syncFn = func() error { _, err := cfg.Log.Sync(); return err }
	}
	a.durable = newSyncer(syncFn, pool, log)
	a.recordEffects(cfg.Log != nil)
	a.snap.lastSave, a.snap.lastOK = a.start.Unix(), true
	a.repl.replID = cfg.ReplicaID
	if a.repl.replID == "" {
		a.repl.replID = newReplID()
	}
	if cfg.Log != nil {
		a.removeSyncLeftovers() // a crashed full sync's files (replstate.go)
		a.loadReplication()     // a clean stop's replication state (replstate.go)
	}
	a.errorStats = map[string]uint64{}
	a.storedParams = storedParams{}
	for name, v := range cfg.StoredParams {
		rp := redisParamByName[name]
		if rp == nil {
			return nil, fmt.Errorf("actor: no parameter %q", name)
		}
		n, err := rp.normalize(v)
		if err != nil {
			return nil, fmt.Errorf("actor: %s: %w", name, err)
		}
		a.storedParams[name] = n
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	a.startHeap = ms.HeapAlloc
	var id [20]byte
	crand.Read(id[:])
	a.runID = hex.EncodeToString(id[:])
	a.applyOpsParams()
	a.durable.lat = &a.lat
	a.busyMs.Store(cfg.BusyReplyThreshold.Milliseconds())
	if err := a.loadFamilies(); err != nil {
		return nil, err
	}
	return a, nil
}

// SetNetStats gives the actor the loops' counters. Call before Run.
func (a *Actor) SetNetStats(n NetStats) { a.net = n }

// Run is the actor goroutine's body. It returns after Stop.
func (a *Actor) Run() {
	defer close(a.done)
	defer a.migrateSockets.Close()
	ticker := time.NewTicker(a.cfg.SweepInterval)
	defer ticker.Stop()
	for {
		select {
		case <-a.in.bell:
		case <-ticker.C:
		case <-a.blk.timer.C:
			a.blk.timerAt = time.Time{}
		case <-a.stop:
			// Finish what was submitted before the stop, and flush it.
			for {
				msgs := a.takeInbox()
				if len(msgs) == 0 {
					a.spare = msgs
					a.flush()
					a.saveReplication()
					return
				}
				a.round(msgs)
			}
		}
		for {
			msgs := a.takeInbox()
			now := time.Now()
			due := !now.Before(a.nextSweep) || a.sweepMore || a.timeoutDue(now) || a.pauseDue(now)
			if len(msgs) == 0 && !due {
				a.spare = msgs
				break
			}
			t0 := time.Now()
			a.round(msgs)
			a.lat.observe(evRound, time.Since(t0))
		}
		a.armTimer()
	}
}

// Stop finishes the submitted work, waits for the replies that await an
// fsync, and stops the actor goroutine. The store stays open (its owner
// closes it).
func (a *Actor) Stop(ctx context.Context) {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	select {
	case <-a.done:
	case <-ctx.Done():
	}
	a.durable.drain(ctx)
}

// takeInbox swaps the actor's spare buffer for the inbox's messages. The
// caller gives the returned slice back through a.spare once done with it
// (round does so).
func (a *Actor) takeInbox() []message {
	spare := a.spare
	a.spare = nil
	return a.in.take(spare)
}
