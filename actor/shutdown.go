package actor

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// SHUTDOWN, SIGTERM and SIGINT, as Redis 7.0's prepareForShutdown,
// isReadyToShutdown and finishShutdown (server.c) have them.
//
//  1. A shutdown asked for (SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE], or a
//     signal with the flags of shutdown-on-sigterm or shutdown-on-sigint)
//     without NOW, with shutdown-timeout above 0 and a replica whose
//     acknowledged offset is not the whole stream, does not stop at once:
//     writes are held (a hold, pause.go), the replicas are asked for an
//     acknowledgement (REPLCONF GETACK *, unless a pause was on already:
//     it would move the offset a pause keeps still), and the SHUTDOWN
//     client waits, blocked. INFO's shutdown_in_milliseconds counts down.
//  2. Whenever a replica acknowledges and on every housekeeping tick, the
//     wait ends once every replica has acknowledged the stream's end, or
//     the timeout has passed.
//  3. The end (finishShutdown): the lagging replicas are logged, SAVE's
//     snapshot is written (a failure without FORCE cancels the shutdown),
//     the SHUTDOWN clients are closed with no reply, and the server stops
//     (Config.Shutdown: the graceful stop, which still holds the writes).
//
// SHUTDOWN ABORT ends a wait (or a SAVE's snapshot) under way: the writes
// are released, each waiting SHUTDOWN is answered "-ERR Errors trying to
// SHUTDOWN. Check logs.", and ABORT "+OK"; with none under way, "-ERR No
// shutdown in progress.". A SHUTDOWN given while one waits joins it, NOW
// or not, as in Redis. Only the actor touches this state but for pending,
// which the process's signal handling reads.

// shutdownFlags are SHUTDOWN's options.
type shutdownFlags struct {
	save, nosave, now, force bool
}

// shuttingDown is a shutdown under way (Actor.down).
type shuttingDown struct {
	// on: it waits for replicas until deadline, or finishes (Redis's
	// shutdown_mstime != 0); gen counts the shutdowns begun, so that a
	// snapshot finishing after an ABORT does nothing.
	on        bool
	deadline  time.Time
	flags     shutdownFlags
	finishing bool
	gen       uint64
	// waiting are the SHUTDOWN clients blocked meanwhile.
	waiting []downWaiter
	// pending mirrors on for other goroutines (ShutdownPending).
	pending atomic.Bool
}

// downWaiter is a SHUTDOWN client; finish (nil for one that did not
// wait) answers its suspended batch, once.
type downWaiter struct {
	s      *session
	finish func([]byte)
}

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]
func cmdShutdown(c *Ctx) error {
	var f shutdownFlags
	abort := false
	for i := 1; i < len(c.args); i++ {
		switch {
		case c.argEq(i, "nosave"):
			f.nosave = true
		case c.argEq(i, "save"):
			f.save = true
		case c.argEq(i, "now"):
			f.now = true
		case c.argEq(i, "force"):
			f.force = true
		case c.argEq(i, "abort"):
			abort = true
		default:
			return ErrSyntax
		}
	}
	if (f.save && f.nosave) || (abort && f != (shutdownFlags{})) {
		return ErrSyntax
	}
	a := c.a
	if abort {
		if !a.abortShutdown() {
			return ErrNoShutdown
		}
		c.w.OK()
		return nil
	}
	if !f.now && c.noBlock {
		return ErrShutdownDenyBlocking
	}
	a.log.Warn().Uint64("client", c.s.id).Str("addr", c.s.addr).Msg("User requested shutdown...")
	if !a.down.on && !f.save && a.shutdownNow(f) {
		a.down.flags = f
		a.down.waiting = append(a.down.waiting, downWaiter{s: c.s})
		a.finishShutdown()
		return nil
	}
	// It waits: for the replicas, for SAVE's snapshot, or for the
	// shutdown under way, which it joins.
	finish, err := c.suspendOnJob()
	if err != nil {
		return err
	}
	a.down.waiting = append(a.down.waiting, downWaiter{s: c.s, finish: finish})
	switch {
	case a.down.on:
	case a.shutdownNow(f):
		a.down.flags = f
		a.finishShutdown()
	default:
		a.beginShutdown(f)
	}
	return nil
}

// ShutdownRequested is SIGTERM (sigint false) or SIGINT: a shutdown with
// the flags of shutdown-on-sigterm or shutdown-on-sigint, waiting for the
// replicas as SHUTDOWN does. Safe from any goroutine.
func (a *Actor) ShutdownRequested(sigint bool) {
	a.in.put(message{kind: msgCall, fn: func() {
		param := "shutdown-on-sigterm"
		if sigint {
			param = "shutdown-on-sigint"
		}
		var f shutdownFlags
		for _, w := range strings.Fields(a.storedParamValue(param)) {
			switch strings.ToLower(w) {
			case "save":
				f.save = true
			case "nosave":
				f.nosave = true
			case "now":
				f.now = true
			case "force":
				f.force = true
			}
		}
		if a.down.on {
			return // one is under way already
		}
		a.log.Warn().Str("flags", a.storedParamValue(param)).Msg("User requested shutdown...")
		if a.shutdownNow(f) {
			a.down.flags = f
			a.finishShutdown()
			return
		}
		a.beginShutdown(f)
	}})
}

// ShutdownPending reports whether a shutdown waits for replicas or
// finishes. Safe from any goroutine.
func (a *Actor) ShutdownPending() bool { return a.down.pending.Load() }

// shutdownNow reports whether a shutdown with flags f goes on at once:
// NOW, shutdown-timeout 0, or every replica has the whole stream (Redis's
// prepareForShutdown).
func (a *Actor) shutdownNow(f shutdownFlags) bool {
	return f.now || a.shutdownTimeout() == 0 || a.replicasInSync()
}

func (a *Actor) shutdownTimeout() time.Duration {
	n, _ := strconv.ParseInt(a.storedParamValue("shutdown-timeout"), 10, 64)
	return time.Duration(n) * time.Second
}

// replicasInSync reports whether every replica has acknowledged the
// stream's end (Redis's isReadyToShutdown): only when the round has added
// nothing to the stream yet, since what it adds is not counted in the
// offset until its end.
func (a *Actor) replicasInSync() bool {
	m := &a.master
	if len(m.replicas) == 0 {
		return true
	}
	if len(m.round) > 0 || len(a.eff.ends) > 0 {
		return false
	}
	for _, s := range m.replicas {
		if s.replica.ackOff != m.offset {
			return false
		}
	}
	return true
}

// beginShutdown starts waiting for the replicas.
func (a *Actor) beginShutdown(f shutdownFlags) {
	d := &a.down
	d.on, d.flags, d.gen = true, f, d.gen+1
	d.deadline = a.roundStart.Add(a.shutdownTimeout())
	d.pending.Store(true)
	if !a.pause.on {
		a.master.getack = true // at the round's end (endStream)
	}
	a.holdWrites(holdShutdown)
	a.log.Info().Dur("timeout", a.shutdownTimeout()).Msg("Waiting for replicas before shutting down.")
}

// checkShutdown ends the wait for replicas once they have every write or
// the timeout has passed: on every acknowledgement and housekeeping tick.
func (a *Actor) checkShutdown(now time.Time) {
	d := &a.down
	if !d.on || d.finishing {
		return
	}
	if !now.Before(d.deadline) || a.replicasInSync() {
		a.finishShutdown()
	}
}

// finishShutdown is the shutdown's last step (Redis's finishShutdown):
// log the replicas behind, take SAVE's snapshot, close the SHUTDOWN
// clients with no reply and stop the server.
func (a *Actor) finishShutdown() {
	d := &a.down
	m := &a.master
	d.on, d.finishing = true, true
	d.pending.Store(true)
	lagging := 0
	for _, s := range m.replicas {
		r := s.replica
		if r.ackOff == m.offset {
			continue
		}
		lagging++
		lag, state := int64(0), "wait_bgsave"
		if r.state == replOnline {
			lag, state = int64(a.roundStart.Sub(r.ackTime)/time.Second), "online"
		}
		a.log.Warn().Str("replica", replicaAddr(s)+":"+strconv.FormatInt(r.listenPort, 10)).Int64("behind", m.offset-r.ackOff).
			Int64("lag", lag).Str("state", state).Msg("Lagging replica reported offset behind master")
	}
	if n := len(m.replicas); n > 0 {
		a.log.Info().Int("in_sync", n-lagging).Int("replicas", n).Msg("replicas in sync when shutting down")
	}
	if !d.flags.save {
		a.stopNow()
		return
	}
	gen := d.gen
	start := func() error {
		return a.snapshot(func(err error) {
			if d.gen != gen || !d.on {
				return // aborted meanwhile
			}
			if err != nil && !d.flags.force {
				a.log.Warn().Msg("Errors trying to shut down the server. Check the logs for more information.")
				a.cancelShutdown()
				return
			}
			a.stopNow()
		})
	}
	if a.snap.running {
		// Wait for the running snapshot, then take a fresh one.
		a.snap.waiting = append(a.snap.waiting, func(error) {
			if d.gen != gen || !d.on {
				return
			}
			if err := start(); err != nil {
				a.cancelShutdown()
			}
		})
		return
	}
	if err := start(); err != nil {
		a.cancelShutdown()
	}
}

// stopNow closes the SHUTDOWN clients without a reply, as Redis does, and
// asks the server to stop. The writes stay held until it has.
func (a *Actor) stopNow() {
	d := &a.down
	waiting := d.waiting
	d.waiting = nil
	for _, w := range waiting {
		if w.finish != nil {
			w.finish(nil)
		}
		if s := a.sessions[w.s.id]; s == w.s {
			s.closing = true
		}
	}
	a.log.Warn().Msg("Cellar is now ready to exit, bye bye...")
	if a.cfg.Shutdown != nil {
		a.cfg.Shutdown()
	}
}

// abortShutdown is SHUTDOWN ABORT: it cancels a shutdown under way and
// reports whether there was one.
func (a *Actor) abortShutdown() bool {
	if !a.down.on {
		return false
	}
	a.cancelShutdown()
	a.log.Info().Msg("Shutdown manually aborted.")
	return true
}

// cancelShutdown forgets the shutdown (Redis's cancelShutdown): the
// waiting SHUTDOWN clients get an error, the writes are released.
func (a *Actor) cancelShutdown() {
	d := &a.down
	waiting := d.waiting
	d.waiting = nil
	d.on, d.finishing, d.flags = false, false, shutdownFlags{}
	d.pending.Store(false)
	for _, w := range waiting {
		if w.finish != nil {
			w.finish(errorReply(ErrShutdownFailed))
		}
	}
	a.releaseWrites(holdShutdown, a.roundStart)
	if a.cfg.ShutdownAborted != nil {
		a.cfg.ShutdownAborted()
	}
}

// infoShutdown writes INFO server's shutdown_in_milliseconds while a
// shutdown waits for replicas.
func (a *Actor) infoShutdown(kv func(k string, v any), now time.Time) {
	if a.down.on {
		kv("shutdown_in_milliseconds", max(int64(a.down.deadline.Sub(now)/time.Millisecond), 0))
	}
}
