package actor

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage/redo"
)

// The actor's API: what the loops and the server give it and get back
// (configuration, connections, batches, completions), and the inbox through
// which everything reaches the actor goroutine.

// Durability is how far a write must get before its reply leaves.
type Durability int

const (
	// Everysec: committed to the WAL before the reply (a killed process
	// loses nothing acknowledged); the WAL is fsynced about once a second.
	Everysec Durability = iota
	// Always: the reply waits for an fsync of the WAL that covers the write
	// (group commit: writes arriving during one fsync share the next).
	Always
	// Off: committed before the reply; Cellar never fsyncs.
	Off
)

func (d Durability) String() string {
	switch d {
	case Always:
		return "always"
	case Off:
		return "off"
	}
	return "everysec"
}

// ParseDurability parses "always", "everysec" or "off".
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "always":
		return Always, nil
	case "everysec":
		return Everysec, nil
	case "off":
		return Off, nil
	}
	return 0, fmt.Errorf("must be always, everysec or off, not %q", s)
}

// Config is the actor's part of Cellar's configuration.
type Config struct {
	Durability  Durability
	RequirePass string
	// Users are ACL users in Redis's "user" lines ("alice on >pw ~* +@all",
	// the leading "user" optional); ACLFile is an ACL file in Redis's
	// format, read at start and by ACL LOAD, written by ACL SAVE. At most
	// one of the two.
	Users   []string
	ACLFile string
	// NoProtectedMode is protected-mode no: without it, while the
	// default user has no password, clients from other addresses than
	// 127.0.0.1 and ::1 are refused with Redis's -DENIED text.
	NoProtectedMode bool
	// IdleTimeout is Redis's timeout in seconds: a client idle longer is
	// closed (blocked and subscribed ones excepted); 0 never.
	IdleTimeout int
	// RenameCommands is Redis's rename-command: a command's new name, ""
	// to disable it (rename.go).
	RenameCommands map[string]string
	// TCPKeepAlive is tcp-keepalive in seconds (0: off), set on every
	// accepted socket by the loops (Gate.TCPKeepAlive).
	TCPKeepAlive int
	// MaxBulkLen bounds values built by commands (APPEND, SETRANGE), like
	// Redis's proto-max-bulk-len.
	MaxBulkLen int64
	// EnableDebugCommand is Redis's enable-debug-command: no, yes, or
	// local (loopback and unix socket clients only).
	EnableDebugCommand string
	// MaxReply is the output buffer hard limit: once a client's replies
	// (being built, in flight to its loop and unsent in its socket's
	// buffer) pass it, its batch is abandoned and the client disconnected,
	// as Redis does at client-output-buffer-limit's hard limit (0: no
	// limit).
	MaxReply int64
	// PubsubHardLimit, PubsubSoftLimit and PubsubSoftTime are the output
	// limits of subscribed clients (Redis's client-output-buffer-limit
	// pubsub class): past the hard limit, or above the soft one for longer
	// than the soft time, a subscriber is disconnected (0: no limit).
	PubsubHardLimit int64
	PubsubSoftLimit int64
	PubsubSoftTime  time.Duration
	// ReplicaHardLimit, ReplicaSoftLimit and ReplicaSoftTime are the
	// replica output class (Redis's "replica 256mb 64mb 60"): a replica's
	// unsent stream, and its stream held during its full resync, past the
	// hard limit or above the soft one for longer than the soft time
	// disconnect it (master.go; 0: no limit).
	ReplicaHardLimit int64
	ReplicaSoftLimit int64
	ReplicaSoftTime  time.Duration
	// NotifyKeyspaceEvents is Redis's notify-keyspace-events flag string
	// (notify.go).
	NotifyKeyspaceEvents string
	// Clients is the client memory budget shared with the loops (nil: an
	// unlimited one of the actor's own).
	Clients *MemBudget
	// Log is the redo log that every round's effects are written to (nil:
	// none: each round commits, and durability rests on SQLite's WAL;
	// tests).
	Log *redo.Log
	// FlushInterval and FlushBytes: with a log, rounds do not commit to
	// SQLite each; the transaction stays open and is committed (flushed)
	// once it is FlushInterval old or FlushBytes of log records ask for it.
	FlushInterval time.Duration
	FlushBytes    int64
	// MaxUnflushed bounds, on the in-memory engine, what waits for a
	// flush: the redo log SQLite does not cover yet. At the bound a round
	// first waits for flushes (back-pressure); while flushes fail, writes
	// that need room are refused instead (redolog.go, holdBack).
	MaxUnflushed int64
	// GoMemoryLimit, when set, is Go's soft memory limit before the keys
	// the in-memory engine holds: the actor keeps the limit at it plus
	// twice their bytes (Go's objects for them take more than the bytes
	// the engine counts), so that the collector neither lets client
	// garbage grow while the engine holds little nor runs without end
	// once it holds much (gctune.go, followMemoryLimit).
	GoMemoryLimit int64
	// TuneGC lets the actor lower the collector's percent (GOGC) as the
	// live heap grows past GCHeadroom, so that a large keyspace does not
	// double the process's memory (gctune.go, gcPercentFor).
	TuneGC bool
	// GCHeadroom is the garbage the heap may grow by between two cycles
	// once the live heap is past it (0: 64 MiB).
	GCHeadroom int64
	// SweepInterval is how often the active expiry runs; SweepBatch how
	// many expired keys one slice may delete.
	SweepInterval time.Duration
	SweepBatch    int
	// Version is Cellar's version, reported by INFO.
	Version string
	// Params are the settings CONFIG GET/SET know.
	Params []Param
	// Port, Bind and Dir are reported by INFO and CONFIG GET.
	Port int
	Bind string

	// SnapshotPath is where SAVE and BGSAVE write the database's copy.
	SnapshotPath string
	// Shutdown, called on the actor goroutine, asks the server to stop
	// (the SHUTDOWN command); it must not block.
	Shutdown func()
	// ShutdownAborted, called on the actor goroutine, tells the server
	// that a shutdown waiting for replicas was cancelled (SHUTDOWN
	// ABORT): it serves on. It must not block.
	ShutdownAborted func()

	// Blocked-client limits (docs/architecture.md, "Blocked clients"). A
	// blocking command that would pass one is refused with "ERR too many
	// blocked clients".
	MaxWaitersPerKey int // waiters queued on one key
	MaxTotalWaiters  int // waiters in all
	MaxKeysPerWait   int // distinct keys one blocking command watches
	// WakeupBatchSize is how many waiters one ready key serves before the
	// other ready keys get their turn (serving goes on until no ready key
	// has both elements and waiters, so it never strands an element).
	WakeupBatchSize int

	// Transaction limits (multi.go): the bytes of commands one client may
	// queue in MULTI, and the keys one client may WATCH. Past either the
	// command is refused with an error (and a queued one fails EXEC).
	MaxQueuedBytes int64
	MaxWatchedKeys int
	// Scripting (scripting.go): MaxScripts bounds the compiled script
	// cache (the oldest goes first); BusyReplyThreshold is how long a
	// script runs before other clients are answered -BUSY (Redis's
	// busy-reply-threshold, alias lua-time-limit).
	MaxScripts         int
	BusyReplyThreshold time.Duration

	// ReplicaID is the replication ID the server starts with as a master
	// (empty: a random one).
	ReplicaID string

	// TrackingTableMaxKeys bounds client-side caching's tracking table
	// (tracking.go); 0: no limit.
	TrackingTableMaxKeys int

	// StoredParams are start values of Redis parameters the actor keeps
	// (configparams.go), by Redis's name: the slow log's and the latency
	// monitor's settings from the configuration file.
	StoredParams map[string]string
	// RewriteConfig writes the settings' current values, by CONFIG name,
	// into the configuration file Cellar was started with (CONFIG
	// REWRITE); nil when it was started without one.
	RewriteConfig func(values map[string]string) error
	// ConfigFile is the configuration file's path, for INFO ("" if none).
	ConfigFile string
}

func (c Config) withDefaults() Config {
	if c.MaxBulkLen <= 0 {
		c.MaxBulkLen = 512 << 20
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = 100 * time.Millisecond
	}
	if c.SweepBatch <= 0 {
		c.SweepBatch = 200
	}
	if c.MaxWaitersPerKey <= 0 {
		c.MaxWaitersPerKey = 10000
	}
	if c.MaxTotalWaiters <= 0 {
		c.MaxTotalWaiters = 50000
	}
	if c.MaxKeysPerWait <= 0 {
		c.MaxKeysPerWait = 128
	}
	if c.WakeupBatchSize <= 0 {
		c.WakeupBatchSize = 1
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = 200 * time.Millisecond
	}
	if c.FlushBytes <= 0 {
		c.FlushBytes = 16 << 20
	}
	if c.MaxUnflushed <= 0 {
		c.MaxUnflushed = 64 << 20
	}
	if c.MaxQueuedBytes <= 0 {
		c.MaxQueuedBytes = 64 << 20
	}
	if c.MaxWatchedKeys <= 0 {
		c.MaxWatchedKeys = 10000
	}
	if c.MaxScripts <= 0 {
		c.MaxScripts = 10000
	}
	if c.BusyReplyThreshold <= 0 {
		c.BusyReplyThreshold = 5 * time.Second
	}
	return c
}

// RedisVersion is the Redis version Cellar's behaviour follows; INFO and
// HELLO report it so that clients enable the right features.
const RedisVersion = "7.0.15"

// Sink receives completions for the connections of one loop. Deliver is
// called from the actor or an offload worker, must be safe from any
// goroutine and must never block, and must not keep cs (the caller reuses
// it): what it keeps it copies.
type Sink interface {
	Deliver(cs []Completion)
}

// ConnInfo introduces a new connection to the actor.
type ConnInfo struct {
	ID        uint64 // client id: unique for the server's life, never reused
	Addr      string // remote address
	LocalAddr string
	FD        int
	Sink      Sink
	// Mem is the connection's share of the client memory budget.
	Mem *ClientMem
	// Master marks the replication link's connection to the master
	// (package replica): authenticated, and obeyed by a read-only replica.
	Master bool
	// Authed is whether the client is authenticated, set by the loop as
	// the Gate said when it accepted the connection and kept up to date by
	// the actor; the loop holds an unauthenticated client to small
	// requests (nil: the actor decides alone).
	Authed *atomic.Bool
	// InMulti is whether the client is in MULTI, kept up to date by the
	// actor, for the loop's answers while a script is busy (nil: no loop
	// reads it).
	InMulti *atomic.Bool
	// Resp is the client's protocol (2 or 3), kept up to date by the
	// actor, for the loop's answers while a script is busy (nil: no loop
	// reads it).
	Resp *atomic.Int32
	// User is the name of the client's ACL user (nil: the default user),
	// and Subscribed whether it has subscriptions, both kept up to date
	// by the actor for the loop's checks while a script is busy (nil: no
	// loop reads them).
	User       *atomic.Pointer[string]
	Subscribed *atomic.Bool
}

// Batch is every complete command a connection had buffered, as one message.
// Args of command i are Args[Ends[i-1]:Ends[i]] (Ends[-1] being 0). The
// slices point into memory the loop copied for the actor; the actor owns it.
type Batch struct {
	ConnID uint64
	Seq    uint64
	Args   [][]byte
	Ends   []int32
	// Bytes is the memory the batch holds, counted in the actor's backlog
	// until it has run (or is held by CLIENT PAUSE).
	Bytes int64
	// Scripts: a command of it may run a script (RunsScript); the actor
	// ends its round before the batch (round.go, cutRound).
	Scripts bool
	// Input is how many request bytes its commands were parsed from:
	// Redis's qbuf still counts them while they run (CLIENT LIST).
	Input int64
	// held: the batch waited for a CLIENT PAUSE to end and has already
	// left the backlog (pause.go).
	held bool
	// loadGen: the Load the batch waits for (loads.go); loaded: it waited
	// for one and runs now, without asking again.
	loadGen uint64
	loaded  bool
	// Args and Ends are never modified once the batch is submitted: the
	// loop reads them again while a script is busy (loop/conn.go,
	// claimBusy).
	//
	// state: whether the actor has begun the batch (batchTaken) or its
	// loop answered it (batchClaimed: a script went busy before the
	// actor reached it); whichever comes first wins, once.
	state atomic.Int32
}

const (
	batchWaiting int32 = iota
	batchTaken
	batchClaimed
)

// Claim is the loop's side of a batch the actor has not begun: while a
// script runs past busy-reply-threshold, the loop answers the batch itself
// (-BUSY, as Redis answers a command that arrives then) and the actor then
// skips it. It reports whether the loop won; false means the actor has
// begun it (or finished it) and will answer. Safe from any goroutine.
func (b *Batch) Claim() bool { return b.state.CompareAndSwap(batchWaiting, batchClaimed) }

// take is the actor's side: it reports whether the batch is the actor's
// to run (false: its loop answered it).
func (b *Batch) take() bool {
	return b.state.CompareAndSwap(batchWaiting, batchTaken) || b.state.Load() == batchTaken
}

// Len is the number of commands in the batch.
func (b *Batch) Len() int { return len(b.Ends) }

// Cmd returns the arguments of command i.
func (b *Batch) Cmd(i int) [][]byte {
	start := int32(0)
	if i > 0 {
		start = b.Ends[i-1]
	}
	return b.Args[start:b.Ends[i]:b.Ends[i]]
}

// Completion carries the replies to one batch back to its connection.
type Completion struct {
	ConnID uint64
	Seq    uint64
	Reply  []byte
	// Close asks the loop to close the connection once Reply is written
	// (QUIT, a client killing itself).
	Close bool
	// Kill asks the loop to close the connection now (CLIENT KILL from
	// another client); Seq and Reply are unused.
	Kill bool
	// Charged is what the actor charged to the client's MemReplies for
	// these replies; the loop releases it when it writes or drops them.
	Charged int64
	// Push marks a push: a message or notification that answers none of
	// the connection's requests (pubsub.go). It is written once every
	// reply up to and including batch Seq's has been, and does not advance
	// the reply FIFO.
	Push bool
	// Recycle says Reply is the actor's alone: once written, the loop
	// hands it back with ReleaseReply (replybuf.go).
	Recycle bool
}

// NetStats is what the loops count for INFO; safe from any goroutine.
type NetStats interface {
	NetInputBytes() uint64
	NetOutputBytes() uint64
	RejectedConns() uint64
	HeldInputBytes() int64
}

type msgKind uint8

const (
	msgOpen msgKind = iota
	msgBatch
	msgClosed
	msgCall
	msgBusy
)

type message struct {
	kind  msgKind
	open  ConnInfo
	batch *Batch
	id    uint64
	fn    func()
	busy  BusyNote
}

// BusyNote is what a loop answered for the actor while a script was busy
// and that changes the client's transaction (BusyAnswered; a refusal,
// which flags it, is BusyRefused).
type BusyNote uint8

const (
	BusyMulti BusyNote = iota // MULTI answered +OK: the transaction begins
)

// BusyAnswered tells the actor what a loop answered for it while a script
// was busy (loop/conn.go, busy), in the connection's order with its
// batches: Redis's MULTI runs then. Called by the loop.
func (a *Actor) BusyAnswered(id uint64, n BusyNote) {
	a.in.put(message{kind: msgBusy, id: id, busy: n})
}

// BusyCommand is BusyAnswered for WATCH, UNWATCH, DISCARD, AUTH, HELLO,
// RESET and REPLCONF, which a loop answers while a script is busy (Redis
// runs them then: allow_busy), and for any allow_busy command queued
// inside MULTI meanwhile:
// the actor applies what they do to the session once the script has
// ended, in the connection's order. args is the command as sent; the
// caller gives it up (it is copied here, as it may alias a loop's buffer).
func (a *Actor) BusyCommand(id uint64, args [][]byte) {
	args = cloneArgs(args)
	a.in.put(message{kind: msgCall, fn: func() { a.busyCommand(id, args) }})
}

// busyCommand applies a command a loop answered while a script was busy
// (BusyCommand) to the client's session, as the command would have run.
func (a *Actor) busyCommand(id uint64, args [][]byte) {
	s := a.sessions[id]
	cmd := a.Lookup(args[0])
	if s == nil || cmd == nil {
		return
	}
	if s.tx != nil && !cmd.Immediate {
		a.queueCommand(s, cmd, args, &proto.Writer{}) // answered QUEUED
		return
	}
	if cmd.whileBusy != nil {
		cmd.whileBusy(a, s, cmd, args)
	}
}

// countBusy counts a command a loop answered while a script was busy as
// one that ran.
func (a *Actor) countBusy(cmd *Command) {
	a.cmdStats[cmd.idx].calls++
	a.stats.commands++
}

// busyRun is the whileBusy of a command that runs again after the script
// for its effects on the session (AUTH, HELLO, RESET, REPLCONF): the same
// handler, on the same state (a script cannot change users or the
// session), so it does what the loop's reply said; the reply is dropped,
// the command counted as one that ran.
func (a *Actor) busyRun(s *session, cmd *Command, args [][]byte) {
	out := proto.Writer{Proto: s.resp}
	f := a.enter()
	defer a.leave()
	c := &f.ctx
	*c = Ctx{a: a, f: f, s: s, cmd: cmd, args: args, w: &out, st: a.st, db: s.db, now: a.nowMs}
	err := cmd.Handler(c)
	st := &a.cmdStats[cmd.idx]
	st.calls++
	a.stats.commands++
	if err != nil {
		st.failed++
		r, _ := replyFor(err)
		a.countError(r)
	}
}

// busyAnswered applies a BusyNote to the client's session.
func (a *Actor) busyAnswered(id uint64, n BusyNote) {
	s := a.sessions[id]
	if s == nil {
		return
	}
	switch n {
	case BusyMulti:
		if s.tx == nil {
			a.beginTx(s)
		}
		a.cmdStats[Lookup([]byte("multi")).idx].calls++
		a.stats.commands++
	}
}

// inbox is the actor's mailbox: the loops append, the actor takes all.
type inbox struct {
	mu     sync.Mutex
	msgs   []message
	bell   chan struct{}
	queued atomic.Int64 // bytes of batches submitted and not yet executed
}

func (in *inbox) put(m message) {
	in.mu.Lock()
	in.msgs = append(in.msgs, m)
	in.mu.Unlock()
	select {
	case in.bell <- struct{}{}:
	default:
	}
}

// take returns everything queued and gives the inbox spare (an empty
// slice the caller no longer uses) to queue into next. Two buffers take
// turns; neither is ever held by both sides.
func (in *inbox) take(spare []message) []message {
	in.mu.Lock()
	msgs := in.msgs
	in.msgs = spare[:0]
	in.mu.Unlock()
	return msgs
}

// Open registers a new connection. Called by the loop (any goroutine).
func (a *Actor) Open(info ConnInfo) { a.in.put(message{kind: msgOpen, open: info}) }

// Submit hands a batch to the actor. Called by the loop (any goroutine).
func (a *Actor) Submit(b *Batch) {
	a.in.queued.Add(b.Bytes)
	a.in.put(message{kind: msgBatch, batch: b})
}

// Closed tells the actor a connection is gone. Called by the loop.
func (a *Actor) Closed(id uint64) { a.in.put(message{kind: msgClosed, id: id}) }

// Backlog is the memory held by submitted batches not yet executed; the
// loops stop reading sockets while it is above their limit.
func (a *Actor) Backlog() int64 { return a.in.queued.Load() }

// Call runs fn on the actor goroutine between rounds and waits for it (for
// administration and tests). It must not be called from the actor.
func (a *Actor) Call(fn func()) {
	done := make(chan struct{})
	a.in.put(message{kind: msgCall, fn: func() { fn(); close(done) }})
	select {
	case <-done:
	case <-a.done:
	}
}
