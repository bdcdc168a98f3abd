package actor

import (
	"strings"
	"time"

	"github.com/cellar-db/cellar/proto"
)

// While a script is busy (past busy-reply-threshold) the loops answer the
// other clients for the actor, which is running the script (loop/conn.go,
// busy). Before it answers -BUSY, Redis 7.0's processCommand makes its
// other checks, in this order, and refuses the command with the first that
// fails: the command exists (its subcommand too), its arity, DEBUG or
// MODULE allowed (enable-debug-command, enable-module-command), the client
// authenticated, no SAVE/SHUTDOWN/... inside MULTI, the ACL rules, writes
// refused (Cellar's failing writes where Redis has MISCONF,
// min-replicas-to-write, a read-only replica), a RESP2 subscriber's
// command outside the subscribe family, a replica whose link is down with
// replica-serve-stale-data no. BusyCheck makes them from what a loop may
// read: the command table, the Gate's copy of the ACL users, what the loop
// knows of its client, and the busyView the actor left in the ScriptWatch
// when the script began (nothing changes that state while the script
// runs: whatever would change it waits for the actor).
//
// What a loop answers is applied to the session, and counted as Redis
// counts it, once the script has ended, in the connection's order:
// BusyRefused (rejected_calls, errorstats, the ACL LOG entry, the
// transaction flagged or, for EXEC, discarded), BusyRan (calls,
// failed_calls), BusyCommand (the command's effects).

// busyView is the state behind processCommand's checks as it was when the
// running script began, and what FUNCTION STATS says of it. It is kept in
// the ScriptWatch under its mutex.
type busyView struct {
	name  string   // the function's name ("" for an EVAL script)
	args  [][]byte // the command that runs it; the actor's, valid until the script ends
	start time.Time
	// libs and fns are the function libraries and functions loaded.
	libs, fns int
	// Writes are refused: Cellar's failing writes (Redis's MISCONF),
	// min-replicas-to-write not met, a read-only replica.
	writesFailing, noReplicas, readOnly bool
	// masterDown: a replica with replica-serve-stale-data no whose link
	// is down refuses the commands not flagged stale.
	masterDown bool
	moduleCmd  string // enable-module-command
	// fnFlags is every function's flags (FCALL's write checks), and
	// evalFlags the cached #!lua scripts' (EVALSHA's).
	fnFlags, evalFlags map[string]scriptFlags
	// txs is the queue of each session in MULTI, for EXEC's checks.
	txs map[uint64]QueueFlags
}

// QueueFlags is what EXEC's checks read of a transaction's queue, as
// Redis's mstate.cmd_flags and cmd_inv_flags: a command that writes, one
// not flagged stale.
type QueueFlags struct{ Write, NotStale bool }

// Add counts a queued command in q.
func (q *QueueFlags) Add(cmd *Command) {
	q.Write = q.Write || cmd.Is(FlagWrite)
	q.NotStale = q.NotStale || !cmd.Is(FlagStale)
}

// busyView is the view of the script c is about to run.
func (a *Actor) busyView(c *Ctx, eval bool, name string) busyView {
	sc := a.scripts()
	v := busyView{args: c.args, start: time.Now(), moduleCmd: a.storedParamValue("enable-module-command")}
	if !eval {
		v.name = name
		v.libs, v.fns = len(sc.fn.libs), len(sc.fn.fns)
	}
	v.writesFailing = a.durable.failure() != nil
	if a.repl.readOnly {
		v.readOnly = true
	} else if a.master.minToWrite > 0 && !a.repl.on && !a.enoughReplicas() {
		v.noReplicas = true
	}
	v.masterDown = a.master.noStale && a.repl.on && !a.repl.r.Status().LinkUp
	f := &sc.fn
	if f.flags == nil {
		f.flags = make(map[string]scriptFlags, len(f.fns))
		for k, fn := range f.fns {
			f.flags[k] = fn.flags
		}
	}
	v.fnFlags = f.flags
	if sc.flags == nil {
		sc.flags = map[string]scriptFlags{}
		for sha, s := range sc.cache {
			if s.shebang {
				sc.flags[sha] = s.flags
			}
		}
	}
	v.evalFlags = sc.flags
	if len(a.txs) > 0 {
		v.txs = make(map[uint64]QueueFlags, len(a.txs))
		for id, s := range a.txs {
			var q QueueFlags
			q.Write = s.tx.flags&FlagWrite != 0
			q.NotStale = !a.queueIsStale(s.tx)
			v.txs[id] = q
		}
	}
	return v
}

// BusyClient is what a loop knows of a client, for BusyCheck.
type BusyClient struct {
	Authed, Multi, Subscribed bool
	Resp                      int
	User                      string // the ACL user ("" for the default user)
	Addr                      string
	ID                        uint64
	// Queued is what the loop queued in the client's transaction while
	// the script was busy; OwnTx: that transaction began then (the one
	// the script's start saw is gone).
	Queued QueueFlags
	OwnTx  bool
}

// BusyCheck makes, while a script is busy, the checks Redis's
// processCommand makes before it answers -BUSY (see above). It returns
// the command (the subcommand, for a container; nil if unknown) and the
// text of the refusal ("" if every check passed), without its "-" and
// CRLF. Safe from any goroutine while the script is busy; it changes
// nothing (the caller tells the actor what it answered: BusyRefused).
func (a *Actor) BusyCheck(cl *BusyClient, args [][]byte) (*Command, string) {
	cmd := a.Lookup(args[0])
	if cmd == nil {
		return nil, errUnknownCommand(args).Error()
	}
	if cmd.subs != nil && len(args) >= 2 {
		sub := cmd.sub(args[1])
		if sub == nil {
			return nil, errUnknownSubcommand(cmd.Name, args[1]).Error()
		}
		cmd = sub
	}
	if !cmd.arityOK(len(args)) {
		return cmd, errWrongArgs(cmd.Name).Error()
	}
	w := &a.scripts().watch
	w.mu.Lock()
	v := w.view
	w.mu.Unlock()
	if cmd.Is(FlagProtected) {
		if text := protectedText(cmd, a.cfg.EnableDebugCommand, v.moduleCmd, cl.Addr); text != "" {
			return cmd, text
		}
	}
	if !cl.Authed && !cmd.Is(FlagNoAuth) {
		return cmd, string(ErrNoAuth)
	}
	if cl.Multi && cmd.Is(FlagNoMulti) {
		return cmd, string(ErrNotInMulti)
	}
	if d, _ := a.gate.aclCheck(cl.User, cmd, args); d != aclOK {
		switch d {
		case aclDeniedCmd:
			return cmd, errNoPermCmd(cmd.Name).Error()
		case aclDeniedKey:
			return cmd, string(ErrNoPermKey)
		}
		return cmd, string(ErrNoPermChannel)
	}
	// A script's flags, as Redis's getCommandFlags: EVAL's shebang, a
	// cached #!lua script's for EVALSHA, a function's declared flags.
	flags := cmd.Flags
	switch cmd.Name {
	case "eval", "eval_ro":
		if len(args[1]) > 1 && args[1][0] == '#' && args[1][1] == '!' {
			if sf, _, err := parseShebang(args[1]); err == nil {
				flags = scriptCmdFlags(cmd.Flags, sf)
			}
		}
	case "evalsha", "evalsha_ro":
		if len(args[1]) == 40 {
			if sf, ok := v.evalFlags[strings.ToLower(string(args[1]))]; ok {
				flags = scriptCmdFlags(cmd.Flags, sf)
			}
		}
	case "fcall", "fcall_ro":
		if sf, ok := v.fnFlags[fnKey(string(args[1]))]; ok {
			flags = scriptCmdFlags(cmd.Flags, sf)
		}
	}
	// EXEC's checks see its queue's flags too (Redis's mstate).
	denyStale := flags&FlagStale == 0
	if cmd.Name == "exec" && cl.Multi {
		q := cl.Queued
		if !cl.OwnTx {
			if t, ok := v.txs[cl.ID]; ok {
				q.Write, q.NotStale = q.Write || t.Write, q.NotStale || t.NotStale
			}
		}
		if q.Write {
			flags |= FlagWrite
		}
		denyStale = denyStale || q.NotStale
	}
	if flags&FlagWrite != 0 {
		switch {
		case v.writesFailing:
			return cmd, string(ErrWritesFailing)
		case v.noReplicas:
			return cmd, string(ErrNoReplicas)
		case v.readOnly:
			return cmd, string(ErrReadOnlyReplica)
		}
	}
	if cl.Subscribed && cl.Resp == 2 && !cmd.InSubscribed {
		return cmd, errSubscribedMode(cmd.Name).Error()
	}
	if v.masterDown && denyStale {
		return cmd, string(ErrMasterDown)
	}
	return cmd, ""
}

// BusyRefused tells the actor that a loop refused args with text while a
// script was busy (BusyCheck's refusal, or -BUSY): once the script has
// ended it counts the refusal as Redis's rejectCommand does (the
// command's rejected_calls, errorstats), logs an ACL refusal in ACL LOG,
// and flags the client's transaction; a refused EXEC discards it. Called
// by the loop, in the connection's order with its batches.
func (a *Actor) BusyRefused(id uint64, args [][]byte, text string) {
	args = cloneArgs(args)
	a.in.put(message{kind: msgCall, fn: func() { a.busyRefused(id, args, text) }})
}

func (a *Actor) busyRefused(id uint64, args [][]byte, text string) {
	s := a.sessions[id]
	if s == nil {
		return
	}
	cmd := a.Lookup(args[0])
	if cmd != nil && cmd.subs != nil && len(args) >= 2 {
		cmd = cmd.sub(args[1])
	}
	if cmd == nil {
		// As for an unknown command outside a script: no command to
		// charge it to.
		flagTx(s)
		a.countError(text)
		return
	}
	if strings.HasPrefix(text, "NOPERM ") {
		a.aclRefuse(s, cmd, args) // its ACL LOG entry
	}
	a.reject(s, cmd, text, &proto.Writer{})
}

// BusyRan tells the actor that a loop ran args for it while a script was
// busy (SCRIPT KILL, FUNCTION KILL, FUNCTION STATS, MULTI, SHUTDOWN
// refused -BUSY, ...), answering an error with text ("" for none): once
// the script has ended the call is counted (commandstats' calls and
// failed_calls, errorstats), as Redis counts a command that ran. Called
// by the loop.
func (a *Actor) BusyRan(id uint64, args [][]byte, text string) {
	name := strings.ToLower(string(args[0]))
	var sub string
	if len(args) > 1 {
		sub = strings.ToLower(string(args[1]))
	}
	a.in.put(message{kind: msgCall, fn: func() { a.busyRan(name, sub, text) }})
}

func (a *Actor) busyRan(name, sub, text string) {
	cmd := a.Lookup([]byte(name))
	if cmd == nil {
		return
	}
	if cmd.subs != nil {
		if cmd = cmd.sub([]byte(sub)); cmd == nil {
			return
		}
	}
	a.stats.commands++
	st := &a.cmdStats[cmd.idx]
	st.calls++
	if text != "" {
		st.failed++
		a.countError(text)
	}
}

// BusyFunctionStats is FUNCTION STATS while a function is busy, in
// protocol resp: the running function (its name, the command that runs
// it, how long it has run) and the libraries. Safe from any goroutine.
func (w *ScriptWatch) BusyFunctionStats(resp int) []byte {
	out := proto.Writer{Proto: resp}
	w.mu.Lock()
	defer w.mu.Unlock()
	v := &w.view
	out.Map(2)
	out.BulkString("running_script")
	out.Map(3)
	out.BulkString("name")
	out.BulkString(v.name)
	out.BulkString("command")
	out.Array(len(v.args))
	for _, a := range v.args {
		out.Bulk(a)
	}
	out.BulkString("duration_ms")
	out.Int(time.Since(v.start).Milliseconds())
	out.BulkString("engines")
	out.Map(1)
	out.BulkString("LUA")
	out.Map(2)
	out.BulkString("libraries_count")
	out.Int(int64(v.libs))
	out.BulkString("functions_count")
	out.Int(int64(v.fns))
	return out.Buf
}

// BusyReplconf is REPLCONF's reply while a script is busy (REPLCONF is
// allow_busy in Redis): the replies and errors of cmdReplconf, whose
// effects the actor applies after the script (BusyCommand). nil for a
// REPLCONF with no reply (ACK, GETACK). Safe from any goroutine.
func BusyReplconf(args [][]byte) []byte {
	text := ""
	if len(args)%2 == 0 {
		text = string(ErrSyntax)
	}
	for j := 1; text == "" && j < len(args); j += 2 {
		opt, val := args[j], args[j+1]
		switch {
		case eqFold(opt, "listening-port"):
			if _, err := parseInt(val); err != nil {
				text = string(ErrNotInteger)
			}
		case eqFold(opt, "ip-address"):
			if len(val) >= 46 {
				text = errReplconfIPTooLong(len(val)).Error()
			}
		case eqFold(opt, "capa"):
		case eqFold(opt, "ack"), eqFold(opt, "getack"):
			return nil
		case eqFold(opt, "rdb-only"):
			v, err := parseInt(val)
			switch {
			case err != nil:
				text = string(ErrNotInteger)
			case v < 0 || v > 1:
				text = string(ErrRdbOnlyRange)
			}
		default:
			text = errReplconfOption(opt).Error()
		}
	}
	if text != "" {
		return []byte("-" + text + "\r\n")
	}
	return []byte("+OK\r\n")
}

// scriptCmdFlags is a command's flags once a script's declared flags
// replace its own (Redis's scriptFlagsToCmdFlags).
func scriptCmdFlags(f Flag, sf scriptFlags) Flag {
	f &^= FlagStale | FlagDenyOOM | FlagWrite | FlagMayReplicate
	if sf&(flagAllowOOM|flagNoWrites) == 0 {
		f |= FlagDenyOOM
	}
	if sf&flagNoWrites == 0 {
		f |= FlagWrite
	}
	if sf&flagAllowStale != 0 {
		f |= FlagStale
	}
	return f
}
