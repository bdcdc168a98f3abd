package actor

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/cellar-db/cellar/proto"
)

// EVAL and SCRIPT: Lua scripts run on the actor (docs/architecture.md,
// "Scripts").
//
// A script is one command of the actor: nothing else runs while it does,
// and its redis.call()s are nested commands (Ctx.call), each of which
// records its own effects for the redo log like any command; once the
// script ends, effects.group folds them into one record, so that after a
// crash the log replays all of the script's writes or none, and replay
// never runs Lua. Scripts loaded with SCRIPT LOAD or run by EVAL are kept
// compiled, by SHA1, in a cache of at most Config.MaxScripts entries (the
// oldest goes first when it is full; EVALSHA of it then answers NOSCRIPT,
// and clients send EVAL again, as after SCRIPT FLUSH).
//
// A script that runs past busy-reply-threshold makes the server busy: the
// loops read ScriptWatch (an atomic per batch) and answer other clients
// -BUSY themselves, since the actor is running the script; SCRIPT KILL and
// FUNCTION KILL are answered there too and stop the script through the
// Lua state's context, which the interpreter checks at every instruction
// (a pcall in the script does not catch the kill: the next instruction
// outside it raises it again). The round is cut before a batch that may
// run a script (round.go, cutRound), so the replies of what ran before it
// leave at once. A batch sent to the actor while a script runs waits; the wait ends with the script's end (the batch then runs and
// gets its replies) or, for a batch the actor has not begun, when the
// script goes busy: the ScriptWatch's timer has the loops answer it as
// they answer new commands then (-BUSY, SCRIPT KILL done; loop/conn.go,
// claimBusy). The script's own client is not answered -BUSY: like Redis,
// which stops reading it, its later commands run after the script.

var scriptingCommands = registerCommands([]*Command{
	{Name: "eval", Summary: "Runs a Lua script.", Handler: cmdEval, script: true, flagsFor: scriptRunFlags},
	{Name: "evalsha", Summary: "Runs a Lua script cached by SCRIPT LOAD or EVAL, named by its SHA1.", Handler: cmdEvalSha, script: true, flagsFor: scriptRunFlags},
	{Name: "eval_ro", Summary: "Runs a read-only Lua script.", Handler: cmdEval, script: true, flagsFor: scriptRunFlags},
	{Name: "evalsha_ro", Summary: "Runs a cached read-only Lua script, named by its SHA1.", Handler: cmdEvalSha, script: true, flagsFor: scriptRunFlags},
	{Name: "script", Summary: "Manages the script cache.", Subs: []*Command{
		{Name: "script|load", Summary: "Compiles a script and caches it, without running it.", Handler: cmdScriptLoad},
		{Name: "script|exists", Summary: "Reports which scripts are cached.", Handler: cmdScriptExists},
		{Name: "script|flush", Summary: "Empties the script cache.", Handler: cmdScriptFlush},
		{Name: "script|kill", Summary: "Stops the running script if it has not written.", Handler: cmdScriptKill},
		{Name: "script|help", Summary: "Lists the SCRIPT subcommands.", Handler: cmdScriptHelp},
	}},
})

// scripting is the actor's scripting state (EVAL's and FCALL's),
// scripting's in the registry (registry.go): it loads the function
// libraries (load), takes a master's (loadSynced) and adds its counts to
// INFO (info).
type scripting struct {
	a      *Actor
	eval   *luaEnv            // the EVAL scripts' Lua state (nil until first used)
	cache  map[string]*script // compiled scripts by lower-case SHA1
	order  []string           // cache insertion order, for eviction
	rand   uint64             // math.random's state (lrand48Init at start)
	run    *scriptRun         // the script running now, nil if none
	runBuf scriptRun
	watch  ScriptWatch
	fn     functions
	// flags is the cached #!lua scripts' flags by SHA1, for the loops'
	// checks while a script is busy (busyView): built when a script begins
	// after such a script was cached or dropped (nil then), never changed
	// once built.
	flags map[string]scriptFlags
}

// scriptingFamily is scripting's slot in the registry (registry.go).
var scriptingFamily = registerFamily("scripting", func(a *Actor) *scripting {
	return &scripting{a: a, rand: lrand48Init}
})

// scripts is a's scripting state.
func (a *Actor) scripts() *scripting { return scriptingFamily.of(a) }

// load is the registry's loader: the function libraries, from the
// database (New, and after a rollback took back what FUNCTION LOAD,
// DELETE, FLUSH or RESTORE wrote: the Lua side is not transactional).
func (s *scripting) load() error {
	s.a.flushFunctions()
	return s.a.loadStoredFunctions()
}

// info is the registry's infoer: the scripting counts of INFO memory
// (only counts: the Lua states live in Go's heap, in used_memory; their
// share is not measured apart).
func (s *scripting) info(section string, kv func(k string, v any)) {
	if section != "memory" {
		return
	}
	kv("number_of_cached_scripts", len(s.cache))
	kv("number_of_functions", len(s.fn.fns))
	kv("number_of_libraries", len(s.fn.libs))
}

// loadSynced is the registry's syncLoader: a master's libraries replace
// the server's, as a replica's load does (a library that does not load is
// logged and left out).
func (s *scripting) loadSynced(codes [][]byte) error {
	a := s.a
	if len(codes) == 0 && len(s.fn.libs) == 0 {
		return nil
	}
	if err := a.st.FlushFunctionLibraries(); err != nil {
		return err
	}
	a.flushFunctions()
	for _, code := range codes {
		if _, err := a.loadLibrary(code, true, true); err != nil {
			a.log.Error().Err(err).Msg("replica: a function library of the master's RDB does not load")
		}
	}
	return nil
}

// script is one compiled EVAL script.
type script struct {
	sha  string
	fn   *lua.LFunction
	body []byte
	// shebang: the script starts with "#!lua"; then flags hold its flags
	// and it runs as a Redis 7 script (no-writes checked before it runs).
	shebang bool
	flags   scriptFlags
}

// scriptFlags are a script's or function's flags ("#!lua flags=" and
// redis.register_function's flags).
type scriptFlags uint8

const (
	flagNoWrites scriptFlags = 1 << iota
	flagAllowOOM
	flagAllowStale
	flagNoCluster
	flagAllowCrossSlot
)

var scriptFlagNames = []struct {
	name string
	flag scriptFlags
}{
	{"no-writes", flagNoWrites},
	{"allow-oom", flagAllowOOM},
	{"allow-stale", flagAllowStale},
	{"no-cluster", flagNoCluster},
	{"allow-cross-slot-keys", flagAllowCrossSlot},
}

// scriptRun is the state of the running script, for redis.call.
type scriptRun struct {
	ctx      *Ctx // the EVAL or FCALL running it
	readOnly bool
	resp     int          // redis.setresp's protocol for redis.call replies
	args     [][]byte     // redis.call's arguments, reused
	out      proto.Writer // redis.call's reply, reused
}

func (a *Actor) evalEnv() *luaEnv {
	sc := a.scripts()
	if sc.eval == nil {
		sc.eval = a.newLuaEnv(false)
		sc.cache = map[string]*script{}
	}
	return sc.eval
}

func sha1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// loadScript compiles body and caches it (or finds it cached).
func (a *Actor) loadScript(body []byte) (*script, error) {
	sc := a.scripts()
	env := a.evalEnv()
	sha := sha1Hex(body)
	if s := sc.cache[sha]; s != nil {
		return s, nil
	}
	s := &script{sha: sha}
	code := body
	if len(body) >= 2 && body[0] == '#' && body[1] == '!' {
		flags, rest, err := parseShebang(body)
		if err != nil {
			return nil, err
		}
		s.shebang, s.flags, code = true, flags, rest
	}
	fn, err := env.compile(code, "user_script")
	if err != nil {
		return nil, errScriptCompile(compileMessage(err, code))
	}
	s.fn, s.body = fn, append([]byte(nil), body...)
	if s.shebang {
		sc.flags = nil // busyView's snapshot
	}
	for len(sc.cache) >= a.cfg.MaxScripts && len(sc.order) > 0 {
		if old := sc.cache[sc.order[0]]; old != nil && old.shebang {
			sc.flags = nil
		}
		delete(sc.cache, sc.order[0])
		sc.order[0] = ""
		sc.order = sc.order[1:]
	}
	sc.cache[sha] = s
	sc.order = append(sc.order, sha)
	return s, nil
}

// compileMessage is gopher-lua's compile error in the shape of Lua's
// ("user_script:1: <message> near '<token>'"); the message itself is
// gopher-lua's.
func compileMessage(err error, body []byte) string {
	msg := err.Error()
	var ae *lua.ApiError
	if errors.As(err, &ae) {
		msg = luaToString(ae.Object)
	}
	msg = strings.TrimSpace(msg)
	if m := parseErrAt.FindStringSubmatch(msg); m != nil {
		return m[1] + ":" + m[2] + ": " + m[4] + " near '" + m[3] + "'"
	}
	if m := parseErrEOF.FindStringSubmatch(msg); m != nil {
		lines := strconv.Itoa(bytes.Count(body, []byte{'\n'}) + 1)
		return m[1] + ":" + lines + ": " + m[2] + " near '<eof>'"
	}
	return msg
}

var (
	parseErrAt  = regexp.MustCompile(`^(\S+) line:(\d+)\(column:\d+\) near '(.*)':\s+(.*)$`)
	parseErrEOF = regexp.MustCompile(`^(\S+) at EOF:\s+(.*)$`)
)

// parseShebang reads "#!<engine> [flags=a,b]" from the first line of body;
// rest is body with that line blanked (its newline kept, so line numbers
// stay).
func parseShebang(body []byte) (flags scriptFlags, rest []byte, err error) {
	end := len(body)
	for i, c := range body {
		if c == '\n' {
			end = i
			break
		}
	}
	parts := strings.Split(string(body[:end]), " ")
	if parts[0] != "#!lua" {
		return 0, nil, errShebangEngine(parts[0])
	}
	for _, p := range parts[1:] {
		if p == "" {
			continue
		}
		v, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return 0, nil, errShebangOption(p)
		}
		f, err := parseScriptFlags(strings.Split(v, ","), errShebangFlag)
		if err != nil {
			return 0, nil, err
		}
		flags |= f
	}
	return flags, body[end:], nil
}

func parseScriptFlags(names []string, bad func(string) error) (scriptFlags, error) {
	var flags scriptFlags
	for _, n := range names {
		if n == "" {
			continue
		}
		found := false
		for _, f := range scriptFlagNames {
			if f.name == n {
				flags |= f.flag
				found = true
			}
		}
		if !found {
			return 0, bad(n)
		}
	}
	return flags, nil
}

// scriptRunFlags is the flags of a call of EVAL, EVALSHA, FCALL or their
// _RO forms (Command.flagsFor, read through runFlags). A script or
// function that declares its flags (EVAL's "#!lua" shebang,
// register_function's flags) replaces the command's write, denyoom and
// may_replicate flags with its own: write unless it is no-writes, denyoom
// unless it is no-writes or allow-oom. EVAL of a script without a shebang,
// EVALSHA of one not cached, and FCALL of a function that does not exist
// keep the command's flags.
func scriptRunFlags(a *Actor, cmd *Command, args [][]byte) Flag {
	var sf scriptFlags
	switch cmd.Name {
	case "eval", "eval_ro", "evalsha", "evalsha_ro":
		if len(args) < 2 {
			return cmd.Flags
		}
		body := args[1]
		if cmd.Name == "evalsha" || cmd.Name == "evalsha_ro" {
			if len(body) != 40 {
				return cmd.Flags
			}
			s := a.scripts().cache[strings.ToLower(string(body))]
			if s == nil || !s.shebang {
				return cmd.Flags
			}
			sf = s.flags
		} else if s := a.scripts().cache[sha1Hex(body)]; s != nil {
			if !s.shebang {
				return cmd.Flags
			}
			sf = s.flags
		} else {
			if len(body) < 2 || body[0] != '#' || body[1] != '!' {
				return cmd.Flags
			}
			f, _, err := parseShebang(body)
			if err != nil {
				return cmd.Flags
			}
			sf = f
		}
	case "fcall", "fcall_ro":
		if len(args) < 2 {
			return cmd.Flags
		}
		fn := a.scripts().fn.fns[string(args[1])]
		if fn == nil {
			return cmd.Flags
		}
		sf = fn.flags
	default:
		return cmd.Flags
	}
	return scriptCmdFlags(cmd.Flags, sf)
}

// numKeys parses EVAL's and FCALL's numkeys (argument i) against the
// arguments that follow it.
func (c *Ctx) numKeys(i int) (int, error) {
	n, err := c.intArg(i)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, ErrNumKeysNegative
	}
	if n > int64(len(c.args)-i-1) {
		return 0, ErrNumKeysTooMany
	}
	return int(n), nil
}

// EVAL script numkeys [key ...] [arg ...]; EVAL_RO the same, read-only.
func cmdEval(c *Ctx) error {
	nk, err := c.numKeys(2)
	if err != nil {
		return err
	}
	s, err := c.a.loadScript(c.args[1])
	if err != nil {
		return err
	}
	return c.a.evalScript(c, s, nk)
}

// EVALSHA sha1 numkeys [key ...] [arg ...]; EVALSHA_RO the same, read-only.
func cmdEvalSha(c *Ctx) error {
	nk, err := c.numKeys(2)
	if err != nil {
		return err
	}
	c.a.evalEnv()
	s := c.a.scripts().cache[strings.ToLower(string(c.args[1]))]
	if s == nil {
		return ErrNoScript
	}
	return c.a.evalScript(c, s, nk)
}

// evalScript runs s with the keys and arguments after numkeys.
func (a *Actor) evalScript(c *Ctx, s *script, nk int) error {
	ro := strings.HasSuffix(c.cmd.Name, "_ro")
	if s.shebang && ro && s.flags&flagNoWrites == 0 {
		return ErrROWithWriteFlag
	}
	env := a.scripts().eval
	L := env.L
	keys := L.CreateTable(nk, 0)
	for i, k := range c.args[3 : 3+nk] {
		keys.RawSetInt(i+1, lua.LString(k))
	}
	rest := c.args[3+nk:]
	argv := L.CreateTable(len(rest), 0)
	for i, v := range rest {
		argv.RawSetInt(i+1, lua.LString(v))
	}
	env.globals.RawSetString("KEYS", keys)
	env.globals.RawSetString("ARGV", argv)
	readOnly := ro || s.flags&flagNoWrites != 0
	a.runLua(c, env, s.fn, readOnly, true, s.sha, c.args[3:3+nk])
	return nil
}

// runLua calls fn (a script, or a function with args pushed by the
// caller) as one step of the actor and writes its reply to c.w. name is
// what error replies name it by (the script's SHA1, the function's name);
// keys are the keys the call declared (numkeys), for client-side tracking.
func (a *Actor) runLua(c *Ctx, env *luaEnv, fn *lua.LFunction, readOnly, eval bool, name string, keys [][]byte, args ...lua.LValue) {
	sc := a.scripts()
	L := env.L
	r := &sc.runBuf
	r.ctx, r.readOnly, r.resp = c, readOnly, 2
	sc.run = r
	db := c.s.db
	mark := a.effectsMark()
	L.SetContext(sc.watch.begin(eval, a.busyThreshold(), c.s.id, a.busyView(c, eval, name)))
	err, broken := protectedCall(L, lua.P{Fn: fn, NRet: 1, Protect: true, Handler: env.errHandler}, args...)
	killed, aborted := sc.watch.end()
	sc.run = nil
	c.scriptKeys(keys) // tracking.go
	if aborted && a.roundErr == nil {
		// SHUTDOWN NOSAVE stopped it: whatever it wrote is thrown away
		// with its round (invariant 6 keeps every reply of it back).
		a.roundErr = errScriptAborted
	}
	L.RemoveContext()
	sc.run = nil
	r.ctx = nil
	clear(r.args)
	c.s.db = db
	a.eff.group(mark)
	if broken {
		// The interpreter failed inside (a Go panic): its state cannot be
		// trusted; start afresh, as SCRIPT FLUSH or a reload would.
		a.log.Error().Err(err).Str("script", name).Msg("the Lua interpreter failed; its state is rebuilt")
		if eval {
			a.resetEval()
		} else {
			a.reloadFunctions()
		}
		c.w.Error("ERR Error running script: " + err.Error())
		return
	}
	if err != nil {
		L.SetTop(0)
		msg := ""
		if killed {
			msg = string(ErrScriptKilled) // for functions too, as Redis 7.0
		}
		text := scriptErrorText(err, name, msg)
		c.w.Error(text)
		c.failed = true
		if !countedError(err) {
			a.countError(text)
		}
		return
	}
	ret := L.Get(-1)
	L.SetTop(0)
	luaReply(c.w, ret, r.resp, 0, func(e string) {
		c.failed = true
		a.countError(e)
	})
}

// protectedCall is L.CallByParam, with any Go panic that escapes the
// interpreter (gopher-lua can panic past its own recovery when its stack
// is exhausted) turned into an error: broken says the state is unusable.
func protectedCall(L *lua.LState, p lua.P, args ...lua.LValue) (err error, broken bool) {
	defer func() {
		if r := recover(); r != nil {
			err, broken = fmt.Errorf("%v", r), true
		}
	}()
	return L.CallByParam(p, args...), false
}

// resetEval drops the EVAL Lua state and the script cache.
func (a *Actor) resetEval() {
	sc := a.scripts()
	if sc.eval != nil {
		sc.eval.close()
		sc.eval = nil
	}
	sc.cache = nil
	sc.order = nil
	sc.flags = nil
}

// scriptErrorText is the reply to a script that raised an error: its
// message (msg instead, if given), then where (Redis 7.0: "<err> script:
// <name>, on <source>:<line>.").
// countedError reports whether a script's error is a redis.call error
// already counted in errorstats.
func countedError(err error) bool {
	var ae *lua.ApiError
	if !errors.As(err, &ae) {
		return false
	}
	t, ok := ae.Object.(*lua.LTable)
	return ok && lua.LVAsBool(t.RawGetString("ignore_error_stats_update"))
}

func scriptErrorText(err error, name, msg string) string {
	var ae *lua.ApiError
	if !errors.As(err, &ae) {
		return "ERR " + err.Error()
	}
	t, ok := ae.Object.(*lua.LTable)
	if !ok {
		return "ERR " + luaToString(ae.Object)
	}
	if msg == "" {
		msg = luaToString(t.RawGetString("err"))
		if _, ok := t.RawGetString("err").(lua.LString); !ok {
			msg = "ERR " + msg
		}
	}
	src, hasSrc := t.RawGetString("source").(lua.LString)
	line := t.RawGetString("line")
	var sb strings.Builder
	sb.WriteString(msg)
	sb.WriteString(" script: ")
	sb.WriteString(name)
	if hasSrc {
		sb.WriteString(", on ")
		sb.WriteString(string(src))
		sb.WriteByte(':')
		sb.WriteString(luaToString(line))
	}
	sb.WriteByte('.')
	return sb.String()
}

// busyThreshold is busy-reply-threshold now.
func (a *Actor) busyThreshold() time.Duration {
	return time.Duration(a.busyMs.Load()) * time.Millisecond
}

// SCRIPT LOAD script
func cmdScriptLoad(c *Ctx) error {
	s, err := c.a.loadScript(c.args[2])
	if err != nil {
		return err
	}
	c.w.BulkString(s.sha)
	return nil
}

// SCRIPT EXISTS sha1 [sha1 ...]
func cmdScriptExists(c *Ctx) error {
	c.a.evalEnv()
	c.w.Array(len(c.args) - 2)
	for _, sha := range c.args[2:] {
		if c.a.scripts().cache[strings.ToLower(string(sha))] != nil {
			c.w.Int(1)
		} else {
			c.w.Int(0)
		}
	}
	return nil
}

// SCRIPT FLUSH [ASYNC|SYNC]
func cmdScriptFlush(c *Ctx) error {
	if len(c.args) > 3 || (len(c.args) == 3 && !c.argEq(2, "sync") && !c.argEq(2, "async")) {
		return ErrScriptFlushArg
	}
	// As Redis does, a fresh Lua state: whatever scripts left in it goes.
	c.a.resetEval()
	c.w.OK()
	return nil
}

// SCRIPT KILL, when it reaches the actor: no script is running (a script
// running past busy-reply-threshold is killed by the loops, ScriptWatch).
func cmdScriptKill(c *Ctx) error { return ErrNotBusy }

// SCRIPT HELP
func cmdScriptHelp(c *Ctx) error {
	return helpReply(c, "script", []string{
		"DEBUG (YES|SYNC|NO)",
		"    Set the debug mode for subsequent scripts executed.",
		"EXISTS <sha1> [<sha1> ...]",
		"    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]",
		"    Flush the Lua scripts cache. Very dangerous on replicas.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the scripts cache.",
		"    * SYNC: Synchronously flush the scripts cache.",
		"KILL",
		"    Kill the currently executing Lua script.",
		"LOAD <script>",
		"    Load a script into the scripts cache without executing it.",
		"HELP",
		"    Prints this help.",
	})
}

// ScriptWatch is what the loops see of the script the actor runs: whether
// one has run past busy-reply-threshold (the server is busy), and the
// switch that kills it. The actor sets it around every script; the loops
// read it, one atomic load per batch while nothing runs long.
type ScriptWatch struct {
	// busyAt is when (monoNanos) the running script makes the server
	// busy; 0 while none runs. The monotonic clock is the timer's: when
	// the timer fires, Busy agrees (a wall clock stepped back said not).
	busyAt atomic.Int64
	eval   atomic.Bool // the running script is EVAL's, not a function
	wrote  atomic.Bool // it has run a write command (it cannot be killed)
	// conn is the connection whose command runs the script: like Redis,
	// which stops reading that client meanwhile, its loop does not
	// answer its later commands -BUSY; they run after the script.
	conn atomic.Uint64
	// onBusy is called (on the timer's goroutine) when a script runs
	// past the threshold, and every busyResweep after while it stays busy:
	// the loops then answer the batches the actor has not begun
	// (Batch.Claim). timer, made by SetOnBusy, is reused from script to
	// script.
	onBusy atomic.Pointer[func()]
	timer  *time.Timer

	mu     sync.Mutex
	sw     *killSwitch // the running script's switch
	view   busyView    // what the loops' checks need (busy.go)
	killed bool
	// aborted: killed by SHUTDOWN NOSAVE, whatever it wrote; the round
	// that ran it is then thrown away (nothing of it is committed).
	aborted bool
	// exiting: set with aborted, never cleared (the server exits).
	exiting atomic.Bool
}

// Busy reports whether a script has run past the threshold, and whether it
// is an EVAL script (for the -BUSY text).
func (w *ScriptWatch) Busy() (busy, eval bool) {
	at := w.busyAt.Load()
	if at == 0 || monoNanos() < at {
		return false, false
	}
	return true, w.eval.Load()
}

// BusyReply is the -BUSY reply for the running script.
func (w *ScriptWatch) BusyReply() []byte {
	if w.eval.Load() {
		return []byte("-" + string(ErrBusyEval) + "\r\n")
	}
	return []byte("-" + string(ErrBusyFunction) + "\r\n")
}

// Kill is SCRIPT KILL (eval) or FUNCTION KILL (!eval) while the server is
// busy, answered by a loop; it returns the reply.
func (w *ScriptWatch) Kill(eval bool) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	var e ReplyError
	switch {
	case w.sw == nil || w.busyAt.Load() == 0:
		e = ErrNotBusy
	case w.wrote.Load():
		e = ErrUnkillable
	case eval && !w.eval.Load():
		e = ErrBusyFunction
	case !eval && w.eval.Load():
		e = ErrBusyEval
	default:
		if !w.killed {
			w.killed = true
			close(w.sw.done)
		}
		return []byte("+OK\r\n")
	}
	return []byte("-" + string(e) + "\r\n")
}

// Abort stops the running script whatever it did (SHUTDOWN NOSAVE while
// busy); it reports whether one was running.
func (w *ScriptWatch) Abort() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sw == nil || w.busyAt.Load() == 0 {
		return false
	}
	if !w.killed {
		w.killed = true
		close(w.sw.done)
	}
	w.aborted = true
	w.exiting.Store(true)
	return true
}

// Exiting reports whether SHUTDOWN NOSAVE stopped a busy script: the
// server is exiting, and no reply is sent any more (Redis exits from
// within the script, answering nobody). Safe from any goroutine.
func (w *ScriptWatch) Exiting() bool { return w.exiting.Load() }

// SetOnBusy sets what is called when a script goes busy (the loops' sweep
// of the batches the actor has not begun). Call it once, before the actor
// runs.
func (w *ScriptWatch) SetOnBusy(f func()) {
	w.onBusy.Store(&f)
	if w.timer == nil {
		w.timer = time.AfterFunc(time.Hour, w.fire)
		w.timer.Stop()
	}
}

// Conn is the connection whose command runs the script now (0 if none).
func (w *ScriptWatch) Conn() uint64 { return w.conn.Load() }

// begin marks a script started (for connection conn); its context is the
// interpreter's.
func (w *ScriptWatch) begin(eval bool, threshold time.Duration, conn uint64, v busyView) *killSwitch {
	w.mu.Lock()
	if w.sw == nil || w.killed {
		w.sw = &killSwitch{done: make(chan struct{})}
		w.killed, w.aborted = false, false
	}
	sw := w.sw
	w.view = v
	w.mu.Unlock()
	w.eval.Store(eval)
	w.wrote.Store(false)
	w.conn.Store(conn)
	w.busyAt.Store(monoNanos() + int64(threshold))
	if w.timer != nil {
		w.timer.Reset(threshold)
	}
	return sw
}

// busyResweep is how often the loops look again at the batches the actor
// has not begun while a script stays busy: a batch that reached the actor
// where no sweep saw it waits that long at most, not until the script
// ends.
const busyResweep = 100 * time.Millisecond

// fire tells the loops a script may have gone busy (they check Busy), and
// again every busyResweep while it is. A fire left over from a script
// that ended finds none running, or the next one not busy yet and waits
// for it.
func (w *ScriptWatch) fire() {
	at := w.busyAt.Load()
	if at == 0 {
		return
	}
	if now := monoNanos(); now < at {
		w.timer.Reset(time.Duration(at - now))
		return
	}
	if f := w.onBusy.Load(); f != nil {
		(*f)()
	}
	if w.busyAt.Load() == at {
		w.timer.Reset(busyResweep)
	}
}

// end marks the script finished and reports whether it was killed, and
// whether by SHUTDOWN NOSAVE.
func (w *ScriptWatch) end() (killed, aborted bool) {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.busyAt.Store(0)
	w.conn.Store(0)
	w.mu.Lock()
	killed, aborted = w.killed, w.aborted
	w.view = busyView{} // its command's arguments go back to their batch
	w.mu.Unlock()
	return killed, aborted
}

// killSwitch is the context a script runs under: gopher-lua checks Done at
// every instruction, and a closed Done raises an error in the script. It
// is kept from one script to the next until one is killed.
type killSwitch struct{ done chan struct{} }

var (
	errKilled        = errors.New("script killed")
	errScriptAborted = errors.New("actor: a script was stopped by SHUTDOWN NOSAVE; its round is not kept")
)

func (k *killSwitch) Deadline() (time.Time, bool) { return time.Time{}, false }
func (k *killSwitch) Done() <-chan struct{}       { return k.done }
func (k *killSwitch) Value(any) any               { return nil }
func (k *killSwitch) Err() error {
	select {
	case <-k.done:
		return errKilled
	default:
		return nil
	}
}

// Scripts is the watch the loops read (safe from any goroutine).
func (a *Actor) Scripts() *ScriptWatch { return &a.scripts().watch }
