package actor

import "time"

// CLIENT PAUSE and CLIENT UNPAUSE, as Redis 7.0 has them.
//
// While a pause is on, a batch that holds a command the pause applies to
// is held whole, before any of it runs: every command in ALL mode; in
// WRITE mode a command with the write or may_replicate flag, or an EXEC
// whose queue holds one (metadata flags, never a list; for EVAL, EVALSHA,
// FCALL and their _RO forms, the flags a script or function declares, as
// Redis's getCommandFlags: a no-writes one runs, one that declares no
// no-writes is a write even under EVAL_RO or FCALL_RO and waits, and one
// that declares nothing keeps the command's flags: EVAL and FCALL are
// may_replicate and wait, EVAL_RO and FCALL_RO run). A command is checked
// as it arrives, so inside MULTI a write waits before it is queued, and
// an EXEC of only reads runs. The client's later
// batches are held behind it, so its replies stay in order, and the loop's
// limit of batches in flight pushes back on a client that keeps sending.
// Held batches leave the actor's backlog (other clients go on) but stay
// charged to their client's memory. When the pause ends — its deadline
// (the actor's timer wakes for it), or CLIENT UNPAUSE — the held batches
// run in the order they arrived, in that round, and each command gets the
// reply it would have had arriving then; a client that disconnects while
// held has its batches dropped unanswered (dropHeld). Active expiry stops while
// a pause is on, as in Redis.
//
// Unlike Redis, which stops a paused client at the paused command, Cellar
// holds from the start of the batch: commands pipelined before the paused
// one in the same read wait too (their replies are the same as if they had
// run at once, except that a read sees the keyspace as it is when the
// pause ends).

// pausing is the actor's pause state.
type pausing struct {
	on    bool
	until time.Time // when the pause ends
	all   bool      // ALL mode; WRITE otherwise
	// held: batches waiting for the pause to end, in arrival order;
	// sessions: how many sessions have one.
	held     []*Batch
	sessions int
	// release: CLIENT UNPAUSE ran; the round releases the held batches
	// after the current message.
	release bool
}

// CLIENT PAUSE timeout [WRITE|ALL]
func cmdClientPause(c *Ctx) error {
	if len(c.args) > 4 {
		return errSubcommandArgs(c.args[1])
	}
	all := true
	if len(c.args) == 4 {
		switch {
		case c.argEq(3, "write"):
			all = false
		case c.argEq(3, "all"):
		default:
			return ErrPauseMode
		}
	}
	ms, err := parseInt(c.args[2])
	if err != nil {
		return ErrPauseTimeout
	}
	if ms < 0 {
		return ErrTimeoutNegative
	}
	p := &c.a.pause
	// As Redis: the mode is the new one, the end the later of the two.
	p.all = all
	if ms > 0 {
		end := time.UnixMilli(c.now).Add(time.Duration(ms) * time.Millisecond)
		if !p.on || end.After(p.until) {
			p.until = end
		}
		p.on = true
	}
	c.w.OK()
	return nil
}

// CLIENT UNPAUSE
func cmdClientUnpause(c *Ctx) error {
	p := &c.a.pause
	if p.on {
		p.on, p.until = false, time.Time{}
		p.release = len(p.held) > 0
	}
	c.w.OK()
	return nil
}

// pauseDue reports whether the pause's deadline has passed.
func (a *Actor) pauseDue(now time.Time) bool {
	return a.pause.on && !now.Before(a.pause.until)
}

// endPauseIfDue ends a pause whose deadline has passed and releases what
// it held (at the start of a round).
func (a *Actor) endPauseIfDue(now time.Time) {
	if a.pauseDue(now) {
		a.pause.on, a.pause.until = false, time.Time{}
		a.pause.release = len(a.pause.held) > 0
	}
	if a.pause.release {
		a.releasePaused(now)
	}
}

// pausedBatch reports whether b must wait for the pause to end: s already
// has a batch waiting, or the pause applies to one of b's commands.
func (a *Actor) pausedBatch(s *session, b *Batch) bool {
	if s.held > 0 {
		return true
	}
	if !a.pause.on {
		return false
	}
	if a.pause.all {
		return true
	}
	for i := range b.Len() {
		cmd := a.Lookup(b.Cmd(i)[0])
		if cmd == nil {
			continue
		}
		if a.runFlags(cmd, b.Cmd(i))&(FlagWrite|FlagMayReplicate) != 0 {
			return true
		}
		if cmd.Name == "exec" && s.tx != nil && s.tx.flags&(FlagWrite|FlagMayReplicate) != 0 {
			return true
		}
	}
	return false
}

// holdBatch keeps b until the pause ends. It has left the backlog
// (runBatch), and stays charged to its client's memory.
func (a *Actor) holdBatch(s *session, b *Batch) {
	b.held = true
	if s.held == 0 {
		a.pause.sessions++
	}
	s.held++
	a.pause.held = append(a.pause.held, b)
}

// releasePaused runs the held batches in arrival order (the pause is
// over). A batch whose client went meanwhile is dropped; one that a new
// pause applies to is held again, and so are its client's later ones.
func (a *Actor) releasePaused(now time.Time) {
	a.pause.release = false
	held := a.pause.held
	a.pause.held = nil
	for _, b := range held {
		if s := a.sessions[b.ConnID]; s != nil {
			s.held = 0
		}
	}
	a.pause.sessions = 0
	for i, b := range held {
		held[i] = nil
		a.runBatch(b, now)
		if len(a.blk.ready) > 0 {
			a.serveReady()
		}
	}
}

// dropHeld forgets s's held batches (its session ends): they are skipped
// when released.
func (a *Actor) dropHeld(s *session) {
	if s.held > 0 {
		s.held = 0
		a.pause.sessions--
	}
}
