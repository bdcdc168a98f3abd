package actor

import (
	"time"

	"github.com/cellar-db/cellar/proto"
)

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
	// What the command changed is acted on once, after its savepoint is
	// released or undone below (touched.go).
	defer a.keysTouched()
	err := c.run()
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
