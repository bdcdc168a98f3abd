package actor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/cellar-db/cellar/offload"
	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

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
	// MaxBulkLen bounds values built by commands (APPEND, SETRANGE), like
	// Redis's proto-max-bulk-len.
	MaxBulkLen int64
	// MaxReply is the output buffer hard limit: once a client's replies
	// (being built, in flight to its loop and unsent in its socket's
	// buffer) pass it, its batch is abandoned and the client disconnected,
	// as Redis does at client-output-buffer-limit's hard limit (0: no
	// limit).
	MaxReply int64
	// Clients is the client memory budget shared with the loops (nil: an
	// unlimited one of the actor's own).
	Clients *MemBudget
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
	return c
}

// RedisVersion is the Redis version Cellar's behaviour follows; INFO and
// HELLO report it so that clients enable the right features.
const RedisVersion = "7.0.15"

// Sink receives completions for the connections of one loop. Deliver is
// called from the actor or an offload worker, must be safe from any
// goroutine and must never block.
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
	// until it has run.
	Bytes int64
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
}

// routed is a completion with the sink it goes to. w is set while the
// batch is suspended on a waiter registered in the current round (the
// completion is held, not delivered); drop when that waiter was cancelled
// (nothing is delivered).
type routed struct {
	sink Sink
	c    Completion
	w    *waiter
	drop bool
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
)

type message struct {
	kind  msgKind
	open  ConnInfo
	batch *Batch
	id    uint64
	fn    func()
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

// Actor is the storage actor. Create it with New, start Run on its own
// goroutine, stop it with Stop.
type Actor struct {
	cfg   Config
	log   zerolog.Logger
	st    *storage.Store
	pool  *offload.Pool
	net   NetStats
	in    inbox
	stop  chan struct{}
	done  chan struct{}
	start time.Time

	sessions map[uint64]*session
	ctx      Ctx
	elems    elemBuf   // scratch for sorted-set range replies (zsets.go)
	valBuf   []byte    // scratch for string values copied into replies (strings.go)
	spare    []message // the inbox buffer not lent to the inbox right now

	// The current round.
	out        []routed
	recs       []cmdRec
	roundErr   error
	nowMs      int64
	roundStart time.Time
	outHeld    int // entries of out with w set or drop

	blk  blocking
	snap snapshots

	// After a storage failure (disk full, I/O error) the actor runs
	// carefully for a while: each batch commits on its own and each write
	// command runs under a savepoint, so a write that fails is refused
	// alone and reads go on. careful says whether this round does.
	carefulUntil time.Time
	careful      bool

	// ckptRunning: phase 1 of a checkpoint runs on the pool; ckptRest:
	// it is done and phase 2 is due between rounds.
	ckptRunning, ckptRest bool

	durable   *syncer
	nextSweep time.Time
	sweepMore bool
	lastSync  time.Time

	stats stats
}

// cmdRec remembers where a command's reply sits in its batch's buffer, so
// that a failed commit can replace the replies that depended on it.
type cmdRec struct {
	out        int32 // index in Actor.out
	start, end int32
	keyspace   bool
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
		cfg:      cfg,
		log:      log,
		st:       st,
		pool:     pool,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		start:    time.Now(),
		sessions: map[uint64]*session{},
	}
	a.blk.queues = map[waitKey]*waitQueue{}
	a.blk.readySet = map[waitKey]bool{}
	a.blk.timer = time.NewTimer(time.Hour)
	a.blk.timer.Stop()
	a.in.bell = make(chan struct{}, 1)
	a.durable = newSyncer(st, pool, log)
	a.snap.lastSave, a.snap.lastOK = a.start.Unix(), true
	return a, nil
}

// SetNetStats gives the actor the loops' counters. Call before Run.
func (a *Actor) SetNetStats(n NetStats) { a.net = n }

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

// Run is the actor goroutine's body. It returns after Stop.
func (a *Actor) Run() {
	defer close(a.done)
	ticker := time.NewTicker(a.cfg.SweepInterval)
	defer ticker.Stop()
	for {
		select {
		case <-a.in.bell:
		case <-ticker.C:
		case <-a.blk.timer.C:
			a.blk.timerAt = time.Time{}
		case <-a.stop:
			// Finish what was submitted before the stop.
			for {
				msgs := a.takeInbox()
				if len(msgs) == 0 {
					a.spare = msgs
					return
				}
				a.round(msgs)
			}
		}
		for {
			msgs := a.takeInbox()
			now := time.Now()
			due := !now.Before(a.nextSweep) || a.sweepMore || a.timeoutDue(now)
			if len(msgs) == 0 && !due {
				a.spare = msgs
				break
			}
			a.round(msgs)
		}
		if a.ckptRest {
			a.checkpointRest()
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

// round executes every message taken from the inbox in one transaction,
// commits, and releases the replies as durability allows.
func (a *Actor) round(msgs []message) {
	a.stats.rounds++
	now := time.Now()
	a.nowMs = now.UnixMilli()
	a.roundStart = now
	a.careful = now.Before(a.carefulUntil)
	if !a.careful {
		if err := a.st.Begin(); err != nil {
			a.roundErr = err
		}
	}
	a.expireWaiters(now)
	for i := range msgs {
		m := &msgs[i]
		switch m.kind {
		case msgOpen:
			a.openSession(m.open, now)
		case msgBatch:
			if a.careful {
				a.runCareful(m.batch, now)
			} else {
				a.runBatch(m.batch, now)
			}
		case msgClosed:
			a.endSession(m.id)
		case msgCall:
			m.fn()
		}
		if len(a.blk.ready) > 0 {
			a.serveReady()
		}
		msgs[i] = message{}
	}
	a.spare = msgs[:0]
	if !now.Before(a.nextSweep) || a.sweepMore {
		a.housekeeping(now)
	}
	a.finishRound()
}

// finishRound commits the round and sends its completions on their way.
func (a *Actor) finishRound() {
	failed := a.roundErr != nil
	if failed {
		a.st.Rollback()
		a.failRound(a.roundErr)
	} else if _, _, err := a.st.Commit(); err != nil {
		failed = true
		a.failRound(err)
	}
	a.roundErr = nil
	a.settleHeld(failed)
	a.recs = a.recs[:0]
	if len(a.out) == 0 {
		return
	}
	if a.cfg.Durability == Always && a.durable.behind(a.st.Commits()) {
		a.durable.enqueue(a.out, a.st.Commits())
	} else {
		deliver(a.out)
	}
	clear(a.out)
	a.out = a.out[:0]
}

// failRound replaces the reply of every command that touched the keyspace in
// this round with an error: nothing of the round was committed, so nothing
// may be acknowledged. Replies of commands that did not touch the keyspace
// (PING, SELECT, ...) stand.
func (a *Actor) failRound(err error) { a.failRecs(err, 0) }

// carefulFor is how long the actor stays careful after a storage failure.
const carefulFor = 10 * time.Second

// failRecs fails the replies recorded from recs[from] on (see failRound),
// and makes the actor careful for a while.
func (a *Actor) failRecs(err error, from int) {
	reply, _ := replyFor(err)
	a.stats.failedCommits++
	a.stats.lastCommitError = err.Error()
	a.carefulUntil = time.Now().Add(carefulFor)
	a.log.Error().Err(err).Int("commands", len(a.recs)-from).Msg("commit failed; its writes are refused")
	w := proto.Writer{}
	for i := from; i < len(a.recs); {
		oi := a.recs[i].out
		old := a.out[oi].c.Reply
		w.Buf = make([]byte, 0, len(old))
		for ; i < len(a.recs) && a.recs[i].out == oi; i++ {
			r := a.recs[i]
			if r.keyspace {
				w.Error(reply)
			} else {
				w.Raw(old[r.start:r.end])
			}
		}
		a.out[oi].c.Reply = w.Buf
	}
}

// deliver hands completions to their sinks, one call per sink.
func deliver(rs []routed) {
	for len(rs) > 0 {
		sink := rs[0].sink
		var rest []routed
		group := make([]Completion, 0, len(rs))
		for _, r := range rs {
			if r.sink == sink {
				group = append(group, r.c)
			} else {
				rest = append(rest, r)
			}
		}
		sink.Deliver(group)
		rs = rest
	}
}

// runCareful runs a batch in a transaction of its own (careful mode): if
// its commit fails, only its replies are retracted.
func (a *Actor) runCareful(b *Batch, now time.Time) {
	if err := a.st.Begin(); err != nil {
		a.roundErr = err
	}
	from := len(a.recs)
	a.runBatch(b, now)
	if a.roundErr != nil {
		a.st.Rollback()
		a.failRecs(a.roundErr, from)
		a.roundErr = nil
		return
	}
	if _, _, err := a.st.Commit(); err != nil {
		a.failRecs(err, from)
	}
}

// runBatch executes one connection's batch and queues its completion.
// Replies are charged to the client's memory as they are built; once the
// client's replies (these, those in flight to its loop and those in its
// socket's buffer) pass the output hard limit, or the client is evicted
// for the client memory budget, nothing more of the batch runs (what ran
// stays done) and the connection is closed.
func (a *Actor) runBatch(b *Batch, now time.Time) {
	n := b.Len()
	s := a.sessions[b.ConnID]
	defer a.in.queued.Add(-b.Bytes)
	if s == nil {
		return // the connection is gone; nothing to reply to
	}
	defer s.mem.Add(MemBatches, -b.Bytes)
	if s.killed || s.mem.Gone() {
		return
	}
	s.lastActive = now
	oi := int32(len(a.out))
	a.out = append(a.out, routed{sink: s.sink, c: Completion{ConnID: s.id, Seq: b.Seq}})
	w := proto.Writer{Buf: make([]byte, 0, 64), Proto: s.resp}
	charged := 0
	for i := 0; i < n && !s.closing; i++ {
		start := len(w.Buf)
		// The loop ends a batch after a blocking command; one anywhere
		// else (and any while the session already waits) runs in its
		// non-blocking form, as in MULTI, rather than reorder replies.
		noBlock := i != n-1 || s.blocked != nil
		keyspace := a.execute(s, b.Cmd(i), &w, noBlock)
		a.recs = append(a.recs, cmdRec{out: oi, start: int32(start), end: int32(len(w.Buf)), keyspace: keyspace})
		w.Proto = s.resp
		out, ok := s.mem.chargeReply(int64(len(w.Buf) - charged))
		charged = len(w.Buf)
		a.out[oi].c.Charged = int64(charged)
		if !ok || (a.cfg.MaxReply > 0 && out > a.cfg.MaxReply) {
			a.overflow(s, oi, out, !ok)
			return
		}
		if s.blocked != nil && s.blocked.oi == pendingOut {
			a.out[oi].c.Reply = w.Buf
			a.linkSuspended(s, oi)
			break
		}
		if len(a.blk.ready) > 0 {
			// Serve waiters before the next command runs, so that the
			// push, the wake and the pop are one step.
			a.out[oi].c.Reply = w.Buf
			a.serveReady()
		}
	}
	a.out[oi].c.Reply = w.Buf
	a.out[oi].c.Close = s.closing
}

// overflow abandons a batch whose client passed the output hard limit
// (over) or was evicted for the client memory budget (evicted already
// logged), and disconnects the client before its replies take more memory.
func (a *Actor) overflow(s *session, oi int32, out int64, evicted bool) {
	if !evicted {
		a.log.Warn().Uint64("client", s.id).Str("addr", s.addr).Int64("bytes", out).
			Msg("closing client whose replies reached the output buffer hard limit")
	}
	first := len(a.recs)
	for first > 0 && a.recs[first-1].out == oi {
		first--
	}
	a.recs = a.recs[:first]
	a.out[oi].c = Completion{ConnID: s.id, Kill: true}
	s.killed = true
	a.cfg.Clients.Release(s.mem)
}

// execute runs one command for s and appends its reply. It reports whether
// the command touched the keyspace (so a failed commit must retract it).
func (a *Actor) execute(s *session, args [][]byte, w *proto.Writer, noBlock bool) (keyspace bool) {
	a.stats.commands++
	cmd := Lookup(args[0])
	if cmd == nil {
		w.Error(errUnknownCommand(args).Error())
		return false
	}
	if cmd.subs != nil && len(args) >= 2 {
		sub := cmd.sub(args[1])
		if sub == nil {
			w.Error(errUnknownSubcommand(cmd.Name, args[1]).Error())
			return false
		}
		cmd = sub
	}
	if !cmd.arityOK(len(args)) {
		w.Error(errWrongArgs(cmd.Name).Error())
		return false
	}
	if !s.authed && a.cfg.RequirePass != "" && !cmd.Is(FlagNoAuth) {
		w.Error(string(ErrNoAuth))
		return false
	}
	keyspace = cmd.Is(FlagWrite) || cmd.Is(FlagReadonly)
	if keyspace && a.roundErr != nil {
		reply, _ := replyFor(a.roundErr)
		w.Error(reply)
		return true
	}
	if cmd.Is(FlagWrite) {
		if err := a.durable.failure(); err != nil {
			w.Error(string(ErrWritesFailing))
			return true
		}
	}
	s.lastCmd = cmd.Name
	a.st.Now = a.nowMs
	c := &a.ctx
	*c = Ctx{a: a, s: s, cmd: cmd, args: args, w: w, st: a.st, db: s.db, now: a.nowMs, noBlock: noBlock}
	start := len(w.Buf)
	guard := a.careful && cmd.Is(FlagWrite)
	if guard {
		if err := a.st.Savepoint(); err != nil {
			reply, _ := replyFor(err)
			w.Error(reply)
			a.roundErr = err
			return true
		}
	}
	err := cmd.Handler(c)
	if err == nil {
		if cmd.Is(FlagWrite) {
			a.stats.writes++
		}
		if guard {
			if rerr := a.st.Release(); rerr != nil {
				a.roundErr = rerr
			}
		}
		return keyspace
	}
	w.Buf = w.Buf[:start] // drop anything half written
	reply, fatal := replyFor(err)
	w.Error(reply)
	switch {
	case guard && fatal && a.st.Undo():
		// Only this write is refused; the batch goes on.
		a.stats.failedWrites++
		a.carefulUntil = time.Now().Add(carefulFor)
	case guard && !fatal:
		a.st.Release()
	case fatal:
		a.roundErr = err
	}
	return keyspace
}

// housekeeping runs the periodic work: a slice of active expiry, and the
// once-a-second fsync of durability everysec.
func (a *Actor) housekeeping(now time.Time) {
	a.nextSweep = now.Add(a.cfg.SweepInterval)
	a.sweepMore = false
	if a.careful {
		// The sweep needs its own transaction, like every batch now.
		if err := a.st.Begin(); err != nil {
			return
		}
		defer func() {
			if a.roundErr != nil {
				a.st.Rollback()
				a.roundErr = nil
			} else {
				a.st.Commit()
			}
		}()
	}
	if a.roundErr == nil {
		a.st.Now = a.nowMs
		n, err := a.st.SweepExpired(a.cfg.SweepBatch)
		if err != nil {
			a.roundErr = err
		} else {
			a.stats.expiredKeys += uint64(n)
			// A full slice means more are due: go on next round, after
			// whatever clients sent meanwhile.
			a.sweepMore = n == a.cfg.SweepBatch
		}
	}
	if a.roundErr == nil {
		// Free the blobs of large values whose rows went (storage/blobs.go).
		if err := a.st.CollectGarbage(); err != nil {
			a.roundErr = err
		}
	}
	if !a.ckptRunning && !a.ckptRest && a.st.NeedsCheckpoint() {
		a.startCheckpoint()
	}
	if a.cfg.Durability == Everysec && now.Sub(a.lastSync) >= time.Second {
		a.lastSync = now
		a.durable.syncSoon(a.st.Commits())
	}
}
