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

// Holds. The server itself holds writes, with no end, while a FAILOVER
// waits for its replica (failover.go) and while a SHUTDOWN waits for its
// replicas (shutdown.go), as Redis's pauses by purpose: the pause above in
// WRITE mode, and a CLIENT PAUSE found then, or given meanwhile, is
// remembered (prev*) and goes on after the last hold ends if its time is
// not up. CLIENT UNPAUSE ends only the client's pause, never a hold.

// Purposes of a hold (pausing.holds).
const (
	holdFailover uint8 = 1 << iota
	holdShutdown
)

// holdEnd stands for "no end" in the pause's deadline.
var holdEnd = time.Unix(1<<40, 0)

// pausing is the actor's pause state.
type pausing struct {
	on    bool
	until time.Time // when the pause ends
	all   bool      // ALL mode; WRITE otherwise
	// holds are the purposes holding writes (holdFailover, holdShutdown);
	// while any does, prevOn, prevUntil and prevAll are the client's own
	// pause.
	holds     uint8
	prevOn    bool
	prevUntil time.Time
	prevAll   bool
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
	if p.holds != 0 {
		// Writes are held already; this pause is the client's own, for
		// after the holds.
		p.prevAll = all
		if ms > 0 {
			end := time.UnixMilli(c.now).Add(time.Duration(ms) * time.Millisecond)
			if !p.prevOn || end.After(p.prevUntil) {
				p.prevUntil = end
			}
			p.prevOn = true
		}
		c.w.OK()
		return nil
	}
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
	if p.holds != 0 {
		// The client's pause ends; the holds go on, in WRITE mode.
		c.a.endClientPauseInHold()
		c.w.OK()
		return nil
	}
	if p.on {
		p.on, p.until = false, time.Time{}
		p.release = len(p.held) > 0
	}
	c.w.OK()
	return nil
}

// pauseDue reports whether the pause's deadline has passed (or, during a
// hold, the client's pause's).
func (a *Actor) pauseDue(now time.Time) bool {
	p := &a.pause
	if p.holds != 0 {
		return p.prevOn && !now.Before(p.prevUntil)
	}
	return p.on && !now.Before(p.until)
}

// endClientPauseInHold ends the client's own pause while writes are held:
// the holds go on in WRITE mode, and the reads an ALL pause held run.
func (a *Actor) endClientPauseInHold() {
	p := &a.pause
	p.prevOn = false
	if p.all {
		p.all = false
		p.release = len(p.held) > 0 // the writes among them are held again
	}
}

// endPauseIfDue ends a pause whose deadline has passed and releases what
// it held (at the start of a round).
func (a *Actor) endPauseIfDue(now time.Time) {
	if a.pause.holds != 0 {
		if a.pauseDue(now) {
			a.endClientPauseInHold()
		}
	} else if a.pauseDue(now) {
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
		if cmd.runsQueue && s.tx != nil && s.tx.flags&(FlagWrite|FlagMayReplicate) != 0 {
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

// holdWrites holds writes for purpose why until releaseWrites, with no
// end, remembering the client's pause it finds.
func (a *Actor) holdWrites(why uint8) {
	p := &a.pause
	if p.holds == 0 {
		p.prevOn, p.prevUntil, p.prevAll = p.on, p.until, p.all
		if !p.on {
			p.all = false
		}
	}
	p.holds |= why
	p.on, p.until = true, holdEnd
}

// releaseWrites ends purpose why's hold; once none is left, a client
// pause whose time is not up goes on, and otherwise what was held runs.
func (a *Actor) releaseWrites(why uint8, now time.Time) {
	p := &a.pause
	if p.holds&why == 0 {
		return
	}
	p.holds &^= why
	if p.holds != 0 {
		return
	}
	if p.prevOn && now.Before(p.prevUntil) {
		p.on, p.until, p.all = true, p.prevUntil, p.prevAll
		return
	}
	if p.on {
		p.on, p.until, p.all = false, time.Time{}, false
		p.release = len(p.held) > 0
	}
}
