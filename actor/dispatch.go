package actor

import (
	"net"
	"strings"
	"time"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

// Execution is re-entrant: a command may run commands (EXEC runs its queue,
// EVAL the calls of its script), each one level deeper. Every level has a
// frame of its own — the Ctx its handler sees and the scratch buffers that
// handler may use — so a nested command never clobbers the state of the
// command that runs it.

// frame is one level of command execution.
type frame struct {
	ctx Ctx
	// replyStart is where the command's reply starts in ctx.w (SPOP's
	// record is made from it: effects.go).
	replyStart int
	// pushAt is where a push to the command's own client goes in its
	// reply buffer (pubsub.go, Actor.push): ahead of the reply.
	pushAt int
	elems  elemBuf // sorted-set range replies (zsets.go; the type is below)
	val    []byte  // string values copied into replies (strings.go)
	dump   []byte  // DUMP's payload (dump.go)
}

// enter starts a level of execution and returns its frame; leave ends it.
// Frames are kept and reused, one per depth ever reached.
func (a *Actor) enter() *frame {
	if a.depth == len(a.frames) {
		a.frames = append(a.frames, &frame{})
	}
	f := a.frames[a.depth]
	f.replyStart, f.pushAt = 0, 0
	a.depth++
	return f
}

func (a *Actor) leave() {
	a.depth--
	a.frames[a.depth].ctx = Ctx{} // keep nothing of the command alive
}

// call executes args as a command of c's client one level deeper (EXEC,
// EVAL's redis.call), appending its reply to w. It never blocks: a
// blocking command answers as its non-blocking form, as inside MULTI in
// Redis. What it changes marks keys ready like any command's; waiters are
// served only after the top-level command, so a command that runs
// commands stays atomic.
func (c *Ctx) call(args [][]byte, w *proto.Writer) (keyspace bool) {
	return c.a.execute(c.s, args, w, true)
}

// execute runs one command for s and appends its reply. It reports whether
// the command touched the keyspace (so a failed commit must retract it).
func (a *Actor) execute(s *session, args [][]byte, w *proto.Writer, noBlock bool) (keyspace bool) {
	return a.executeAs(s, args, w, noBlock, false)
}

// executeAs is execute with the woken flag: set, the command runs as a
// parked waiter's retry does (Ctx.woken), which is how a retry recorded
// for the redo log replays (effects.go).
func (a *Actor) executeAs(s *session, args [][]byte, w *proto.Writer, noBlock, woken bool) (keyspace bool) {
	a.stats.commands++
	// A command refused before it runs also fails the transaction it
	// would have been queued in (flagTx; multi.go).
	cmd := a.Lookup(args[0])
	if cmd == nil {
		flagTx(s)
		e := errUnknownCommand(args).Error()
		w.Error(e)
		a.countError(e)
		return false
	}
	if cmd.subs != nil && len(args) >= 2 {
		sub := cmd.sub(args[1])
		if sub == nil {
			flagTx(s)
			e := errUnknownSubcommand(cmd.Name, args[1]).Error()
			w.Error(e)
			a.countError(e)
			return false
		}
		cmd = sub
	}
	if !cmd.arityOK(len(args)) {
		a.reject(s, cmd, errWrongArgs(cmd.Name).Error(), w)
		return false
	}
	// Redis's processCommand checks, in its order: DEBUG and MODULE
	// allowed, authenticated, no_multi inside MULTI, then the ACL rules.
	if cmd.Is(FlagProtected) && a.depth == 0 {
		if text := a.protectedRefusal(s, cmd); text != "" {
			a.reject(s, cmd, text, w)
			return false
		}
	}
	if !s.authed && !cmd.Is(FlagNoAuth) {
		a.reject(s, cmd, string(ErrNoAuth), w)
		return false
	}
	if s.tx != nil && cmd.Is(FlagNoMulti) {
		a.reject(s, cmd, string(ErrNotInMulti), w)
		return false
	}
	// ACL: one field test for a user allowed everything (the default
	// user); the others' commands are checked here at the top level (EXEC
	// and redis.call check what they run themselves: multi.go, lua.go).
	if !s.user.open && a.depth == 0 && !s.master { // the master's commands are obeyed, as in Redis
		if text, refused := a.aclRefuse(s, cmd, args); refused {
			a.reject(s, cmd, text, w)
			return false
		}
	}
	if s.subscribed && s.resp == 2 && !cmd.InSubscribed {
		a.reject(s, cmd, errSubscribedMode(cmd.Name).Error(), w)
		return false
	}
	if a.depth == 0 {
		s.lastCmd = cmd.Name // as in Redis, CLIENT LIST names EXEC, not what it ran
		if a.track.clients > 0 {
			a.limitTracking(s, w) // tracking-table-max-keys (tracking.go)
		}
	}
	// Writes are refused while they cannot be made durable; so is an EXEC
	// of a queue with writes, and a write MULTI would queue (as Redis's
	// MISCONF refusal).
	if callIs(s, cmd, FlagWrite) {
		if err := a.durable.failure(); err != nil {
			a.reject(s, cmd, string(ErrWritesFailing), w)
			return true
		}
	}
	if callIs(s, cmd, FlagDenyOOM) && a.refusedForRoom() {
		reply, _ := replyFor(a.flushFailed)
		a.stats.failedWrites++
		a.reject(s, cmd, reply, w)
		return true
	}
	// A read-only replica refuses clients' writes (Redis's
	// -READONLY, checked where Redis checks it: before queuing, so a
	// write in MULTI fails the EXEC); the master's connection is obeyed,
	// while it is the current link's (replication.go).
	if s.master {
		if s.id != a.repl.link {
			a.reject(s, cmd, string(ErrStaleMaster), w)
			return false
		}
	} else if a.repl.readOnly && callIs(s, cmd, FlagWrite) {
		a.reject(s, cmd, string(ErrReadOnlyReplica), w)
		return false
	} else if a.master.minToWrite > 0 && !a.repl.on && callIs(s, cmd, FlagWrite) && !a.enoughReplicas() {
		// min-replicas-to-write (master.go): Redis's -NOREPLICAS, in the
		// same place.
		a.reject(s, cmd, string(ErrNoReplicas), w)
		return false
	}
	if a.master.noStale && a.refuseStale(s, cmd, w) { // replica-serve-stale-data no (replication.go)
		return false
	}
	if s.tx != nil && !cmd.Immediate {
		a.queueCommand(s, cmd, args, w)
		a.stats.commands-- // counted when EXEC runs it, once, as Redis counts
		return false
	}
	keyspace = cmd.Is(FlagWrite) || cmd.Is(FlagReadonly)
	if keyspace && a.roundErr != nil {
		reply, _ := replyFor(a.roundErr)
		w.Error(reply)
		a.countError(reply)
		return true
	}
	if len(a.monitors) > 0 && cmd.Is(FlagSkipMonitor) {
		a.feedScript(s, cmd, args) // monitor.go
	}
	a.st.Now = a.nowMs
	f := a.enter()
	defer a.leave()
	c := &f.ctx
	*c = Ctx{a: a, f: f, s: s, cmd: cmd, args: args, w: w, st: a.st, db: s.db, now: a.nowMs, noBlock: noBlock, woken: woken}
	start := len(w.Buf)
	f.replyStart, f.pushAt = start, start
	// What the command changed is acted on once it is done (touched.go);
	// then the keys it read are remembered for a tracking client
	// (tracking.go).
	defer a.commandDone(s)
	began := monoNanos() // one clock read, where time.Now makes two
	err := c.run()
	took := time.Duration(monoNanos() - began)
	st := &a.cmdStats[cmd.idx]
	st.calls++
	st.took += took
	a.timeCommand(s, cmd, args, st, took) // ops.go
	if len(a.monitors) > 0 && !cmd.Is(FlagSkipMonitor) {
		a.feedMonitors(s, cmd, args) // monitor.go
	}
	if err != nil || c.failed {
		st.failed++
	}
	if s.track != nil && cmd.Is(FlagReadonly) && a.inScript() {
		a.track.scriptRead = true // a script's read: scriptKeys (tracking.go)
	}
	if err != nil && s.track != nil && cmd.Is(FlagReadonly) && len(a.track.reads) == 0 && !cmd.script {
		c.trackFailedRead() // tracking.go
	}
	keyspace = keyspace || c.keyspace // EXEC: what it ran touched the keyspace
	if err == nil {
		if cmd.Is(FlagWrite) {
			a.stats.writes++
		}
		return keyspace || c.keyspace
	}
	// The storage engine writes SQLite only in flushes: a failure here (a
	// key that could not be loaded) has changed nothing, and fails the
	// command alone.
	w.Buf = w.Buf[:start] // drop anything half written
	reply, _ := replyFor(err)
	w.Error(reply)
	a.countError(reply)
	return keyspace || c.keyspace
}

// protectedRefusal is the refusal of a protected command (DEBUG, MODULE
// LOAD, LOADEX, UNLOAD) that enable-debug-command or
// enable-module-command does not allow for s, "" if allowed.
func (a *Actor) protectedRefusal(s *session, cmd *Command) string {
	return protectedText(cmd, a.cfg.EnableDebugCommand, a.storedParamValue("enable-module-command"), s.addr)
}

// protectedText is protectedRefusal for a client at addr, with the two
// settings.
func protectedText(cmd *Command, debug, module, addr string) string {
	switch {
	case cmd.protectedBy == byDebugSetting && !protectedAllowed(debug, addr):
		return string(ErrDebugNotAllowed)
	case cmd.protectedBy == byModuleSetting && !protectedAllowed(module, addr):
		return string(ErrModuleNotAllowed)
	}
	return ""
}

// protection names the setting that allows a PROTECTED command
// (Command.protectedBy); every command the metadata flags PROTECTED has
// one, or New refuses to start.
type protection uint8

const (
	byDebugSetting  protection = iota + 1 // enable-debug-command
	byModuleSetting                       // enable-module-command
)

// callIs says whether cmd has flag f, or, for an EXEC, whether a command
// of the connection's queue has it: the checks made before a command runs
// refuse an EXEC as they would refuse what it runs.
func callIs(s *session, cmd *Command, f Flag) bool {
	return cmd.Is(f) || (cmd.runsQueue && s.tx != nil && s.tx.flags&f != 0)
}

// protectedAllowed applies an enable-*-command setting (no, yes, local) to
// a client at addr, as Redis does for the commands it flags protected:
// local allows a unix socket or a loopback address.
func protectedAllowed(setting, addr string) bool {
	switch setting {
	case "yes":
		return true
	case "local":
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return strings.HasPrefix(addr, "/") || addr == "" // a unix socket
		}
		ip := net.ParseIP(host)
		return ip != nil && ip.IsLoopback()
	}
	return false
}

// elemBuf gathers sorted-set elements read from storage (their bytes are
// valid only during the callback) for a reply that must count them first:
// the members go into one arena rather than an allocation each. The actor
// keeps one and reuses it; release drops a large one.
type elemBuf struct {
	arena  []byte
	ends   []int
	scores []float64
	es     []storage.Elem
}

func (b *elemBuf) add(e *storage.Elem) {
	b.arena = append(b.arena, e.Member...)
	b.ends = append(b.ends, len(b.arena))
	b.scores = append(b.scores, e.Score)
}

// list returns the gathered elements, valid until release.
func (b *elemBuf) list() []storage.Elem {
	b.es = b.es[:0]
	start := 0
	for i, end := range b.ends {
		b.es = append(b.es, storage.Elem{Member: b.arena[start:end:end], Score: b.scores[i]})
		start = end
	}
	return b.es
}

// release empties b for the next command, and lets go of buffers that a
// large reply grew.
func (b *elemBuf) release() {
	if cap(b.arena) > 1<<20 || cap(b.ends) > 1<<16 {
		*b = elemBuf{}
		return
	}
	clear(b.es)
	b.arena, b.ends, b.scores, b.es = b.arena[:0], b.ends[:0], b.scores[:0], b.es[:0]
}

// monoStart and monoNanos are a monotonic clock: the timing of every
// command (executeAs) and a busy script's start (ScriptWatch.busyAt).
var monoStart = time.Now()

func monoNanos() int64 { return int64(time.Since(monoStart)) }
