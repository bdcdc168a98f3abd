package actor

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cellar-db/cellar/offload"
	"github.com/cellar-db/cellar/storage/redo"
)

// The redo log in the round (docs/architecture.md, "Durability").
//
// Without a log (tests) every round commits to SQLite, and durability rests
// on SQLite's WAL. With one, the log is what makes a write durable, and
// SQLite is brought up to date in batches:
//
//  1. commands change the keyspace in memory only (storage's engine); a
//     round that fails (a key that could not be loaded) forgets what
//     memory holds that no flush committed, and the rounds since the last
//     flush, all in the log, are redone from it (redo);
//  2. at the end of a round its records are written to the log with one
//     write(2) (redo.Log.Write), and the round's replies leave (with
//     durability always, once a log fsync covers them: the syncer fsyncs
//     the log, not the WAL);
//  3. every FlushInterval, once FlushBytes of records wait or the engine
//     holds more than its memory bound, and before
//     a snapshot or a stop, what changed is flushed to SQLite on the
//     offload pool with the log position it reaches: SQLite then covers the
//     log up to there. What waits for flushes is bounded (MaxUnflushed,
//     holdBack); a failed flush is written again by the next one
//     (flushFailing).
//
// A killed process loses what memory held; start-up replays the log from
// the position the database covers (ReplayLog). SQLite's WAL is not
// fsynced per commit: after a power loss SQLite may lose its last commits
// too, and the replay covers them. The log before a position can go once
// the flush that stored it is durable in SQLite: trimLog fsyncs the WAL,
// then truncates.

// logging reports whether durability rests on a redo log (and rounds
// flush to SQLite in batches).
func (a *Actor) logging() bool { return a.cfg.Log != nil }

// beginRound opens the round's transaction (with a log, the one left open
// since the last flush goes on).
func (a *Actor) beginRound() {
	if err := a.st.Begin(); err != nil {
		a.roundErr = err
	}
}

// abandonRound undoes a failed round: its transaction goes, and with a log
// the rounds before it since the last flush are redone from the log.
func (a *Actor) abandonRound() {
	a.dropEffects()
	a.st.Rollback()
	a.reloadFamilies() // what the families hold of the database (registry.go)
	if a.logging() {
		a.redo(fmt.Errorf("a failed round took the open transaction with it"))
	}
}

// endRound makes a round that succeeded last: committed (no log), or
// released and logged (with a log), flushing when one is due.
func (a *Actor) endRound() error {
	if !a.logging() {
		_, _, err := a.st.Commit()
		return err
	}
	l := a.cfg.Log
	feed := a.master.active
	a.master.round = a.master.round[:0]
	for _, e := range a.takeEffects() {
		if feed {
			a.feedReplicas(e) // the replicas' stream (master.go), sent once the log write succeeded
		}
		if err := l.Append(e); err != nil {
			// The round's writes stand in the open transaction but cannot
			// be logged: nothing more may be acknowledged.
			l.Discard()
			a.durable.fail(fmt.Errorf("redo log: %w", err))
			return nil
		}
	}
	if l.Buffered() > 0 {
		if a.unflushed == 0 {
			a.unflushedT = time.Now()
		}
		a.unflushed += int64(l.Buffered())
		if _, err := l.Write(); err != nil {
			a.durable.fail(fmt.Errorf("redo log write: %w", err))
			return nil
		}
		a.stats.logWrites++
	}
	if feed {
		a.endStream()
	}
	a.runAfterLand()
	if len(a.afterFlush) > 0 && !a.st.Flying() {
		a.flushSoon()
	} else if a.unflushed >= a.cfg.FlushBytes || !time.Now().Before(a.flushAt) || a.st.OverMemory(1) {
		a.startFlush()
	}
	if a.st.Flying() {
		// The next flush's freeze, in parts while this one runs
		// (storage's pre-freezing): no round waits for all of it.
		a.st.PreFreeze()
	}
	return nil
}

// flushSoon starts the flush that what waits in afterFlush (a snapshot's
// start) asked for, with no flush under way: they run when it lands
// (runAfterLand, at the end of the round that lands it), or now when there
// was nothing to write. The actor does not wait: a full sync or BGSAVE
// asked for after a bulk load once stalled every client for the flush
// under way and then for this one (seconds with a million new keys).
func (a *Actor) flushSoon() {
	a.startFlush()
	a.afterLand, a.afterFlush = append(a.afterLand, a.afterFlush...), nil
	a.runAfterLand()
}

// runAfterLand runs what waited for the flush that has landed, or for none
// when none flies (nothing was there to write).
func (a *Actor) runAfterLand() {
	if len(a.afterLand) == 0 || a.st.Flying() {
		return
	}
	after := a.afterLand
	a.afterLand = nil
	for _, f := range after {
		f()
	}
}

// flush brings SQLite up to the log now, waiting: it lands a flush under
// way, commits the open transaction with the log position it reaches (with
// a log; nothing to do without one, or with nothing open) and waits for
// that commit, then runs what waited for a flush. Only the stop waits so.
func (a *Actor) flush() {
	a.landFlush(false)
	a.runAfterLand()
	a.startFlush()
	a.landFlush(false)
	a.afterLand, a.afterFlush = append(a.afterLand, a.afterFlush...), nil
	a.runAfterLand()
}

// startFlush hands the open transaction, with the log position it reaches,
// to the offload pool to commit (storage.Flush), unless a flush is under
// way already; the actor goes on meanwhile, and a statement that needs
// SQLite waits for the commit. Its outcome comes back as a call
// (landFlush).
func (a *Actor) startFlush() {
	a.flushAt = time.Now().Add(a.cfg.FlushInterval)
	if !a.logging() || !a.st.InTx() || a.st.Flying() {
		return
	}
	if a.durable.failure() != nil {
		// Durability failed (a redo that could not be applied, a failed
		// log write or fsync): what the open transaction holds may lack
		// rounds the log has, so it must not be stored as covering the
		// log. The restart replays the log instead.
		a.st.Rollback()
		return
	}
	f, err := a.st.StartFlush(uint64(a.cfg.Log.Written()))
	if err != nil {
		a.st.Rollback()
		a.redo(err)
		return
	}
	if f == nil {
		return
	}
	a.unflushed = 0
	job := &offload.Job{Run: func() {
		f.Run()
		a.in.put(message{kind: msgCall, fn: func() { a.landFlush(true) }})
	}}
	if err := a.pool.Submit(context.Background(), job, offload.NoWait); err != nil {
		f.Run() // the pool refused it: commit here
	}
}

// landFlush takes in the outcome of the flush that last returned the
// connection (waiting for one under way): its position and figures, or
// its failure. inRound says it runs among a round's commands: a failure
// then fails the round, whose end redoes the unflushed rounds; otherwise
// they are redone here.
func (a *Actor) landFlush(inRound bool) {
	f := a.st.Land()
	if f == nil {
		return
	}
	if err := f.Err(); err != nil {
		a.flushFailing(err)
		a.checkImports(true)
		return
	}
	if a.flushFailed != nil {
		a.log.Warn().Msg("flushes succeed again; writes are taken again")
		a.flushFailed = nil
	}
	a.logPos = redo.Position(f.Pos())
	a.stats.flushes++
	a.stats.lastFlushUsec = f.Took().Microseconds()
	a.lat.observe(evFlush, f.Took())
	a.checkImports(false)
}

// uncovered is what waits for a flush: the redo log past the position
// SQLite's last commit stored (what a restart after a crash replays).
func (a *Actor) uncovered() int64 {
	if !a.logging() {
		return 0
	}
	return int64(a.cfg.Log.Written() - a.logPos)
}

// holdBack is the in-memory engine's back-pressure, at the start of a
// round: once what waits for a flush reaches MaxUnflushed, or the engine
// holds twice its storage.max_memory (changed keys leave memory only once
// flushed), the round waits for flushes until it is below again, so that
// clients cannot outrun the disk by more than the bounds; meanwhile the loops' batches wait, and past
// their budget the loops stop reading. While flushes fail (a full disk)
// waiting would not end: writes that need room are refused instead
// (refusedForRoom), and the next flush is tried at its interval.
func (a *Actor) holdBack() {
	for a.flushFailed == nil && (a.uncovered() >= a.cfg.MaxUnflushed || a.st.OverMemory(2)) {
		if !a.st.Flying() {
			a.startFlush()
			if !a.st.Flying() {
				return // nothing in memory to flush
			}
		}
		a.stats.flushHolds++
		a.landFlush(false)
	}
}

// refusedForRoom reports whether a write that needs room is refused now:
// the in-memory engine's flushes fail and what waits for them has reached
// its bound. Redis refuses such writes (its denyoom commands) at
// maxmemory; Cellar says why, with the flush's error.
func (a *Actor) refusedForRoom() bool {
	return a.flushFailed != nil && a.uncovered() >= a.cfg.MaxUnflushed
}

// flushFailing takes in a failed flush of the in-memory engine: its batch
// waits in memory, first in the next flush, which is tried at the flush
// interval; nothing is redone. Writes go on, into memory and the log,
// until what waits reaches its bound (refusedForRoom).
func (a *Actor) flushFailing(err error) {
	a.stats.failedCommits++
	a.stats.lastCommitError = err.Error()
	if a.flushFailed == nil {
		a.log.Error().Err(err).Int64("waiting_bytes", a.uncovered()).
			Msg("flush failed; its changes wait in memory and are written by the next one")
	}
	a.flushFailed = err
}

// retryFlush tries a failed flush of the in-memory engine again at once,
// for a change that may have made room; otherwise it waits for its
// interval.
func (a *Actor) retryFlush() {
	if a.flushFailed == nil {
		return
	}
	a.landFlush(false)
	a.startFlush()
	a.landFlush(false)
}

// redo rebuilds, from the log, what SQLite lost when its open transaction
// was rolled back (why says why): the rounds since the last flush are all
// in the log. If that fails too, nothing more is acknowledged; a restart
// replays the log.
func (a *Actor) redo(why error) {
	a.log.Warn().Err(why).Msg("redoing the unflushed rounds from the redo log")
	now := a.nowMs
	_, err := a.ReplayLog()
	a.nowMs, a.st.Now = now, now
	if err != nil {
		a.durable.fail(fmt.Errorf("redoing the unflushed rounds from the redo log: %w", err))
	}
}

// syncSeq is what the syncer counts in: the log position written so far
// (with a log), or the commits made.
func (a *Actor) syncSeq() uint64 {
	if l := a.cfg.Log; l != nil {
		return uint64(l.Written())
	}
	return a.st.Commits()
}

// trimAfter is how much log may stand before what the database durably
// covers is cut off it.
const trimAfter = 2 * redo.DefaultSegmentSize

// trimLog removes the log that the database durably covers, once enough
// has gathered: on the offload pool, it fsyncs SQLite's WAL (making every
// commit so far durable, the one that stored logPos among them) and then
// truncates the log before logPos.
func (a *Actor) trimLog() {
	l := a.cfg.Log
	if l == nil || a.trimRunning || a.durable.failure() != nil || uint64(l.Written()-l.Oldest()) < trimAfter {
		return
	}
	pos := a.logPos
	for _, pin := range a.logPins {
		pos = min(pos, pin)
	}
	a.trimRunning = true
	job := &offload.Job{Run: func() {
		err := a.st.SyncWAL()
		if err == nil {
			_, err = l.Truncate(pos)
		}
		a.in.put(message{kind: msgCall, fn: func() {
			a.trimRunning = false
			if err != nil {
				a.log.Warn().Err(err).Msg("trimming the redo log failed; will retry")
			}
		}})
	}}
	if err := a.pool.Submit(context.Background(), job, offload.NoWait); err != nil {
		a.trimRunning = false
	}
}

// ReplayLog brings the keyspace up to the end of the redo log: it replays
// every record after the position SQLite covers into memory
// (ReplayEffects), where they wait for the next flush as the rounds that
// wrote them did before the stop: the first round after start-up starts
// it (flushAt is zero then), on the offload pool, so a start-up does not
// wait for SQLite to take what a crash left in the log. It runs before
// Run, on the caller's goroutine, and in Run to redo the unflushed rounds;
// it reports how many records it replayed.
func (a *Actor) ReplayLog() (int, error) {
	l := a.cfg.Log
	if l == nil {
		return 0, nil
	}
	from, err := a.st.RedoPosition()
	if err != nil {
		return 0, err
	}
	r, err := l.NewReader(redo.Position(from))
	if err != nil {
		return 0, err
	}
	defer r.Close()
	n, err := a.ReplayEffects(func() ([]byte, bool, error) {
		p, _, err := r.Next()
		if err == io.EOF {
			return nil, false, nil
		}
		return p, err == nil, err
	})
	if err != nil {
		return n, err
	}
	a.logPos = redo.Position(from)
	if a.unflushed == 0 { // at start-up; a redo keeps when its oldest round waited from
		a.unflushedT = time.Now()
	}
	a.unflushed = int64(l.Written() - a.logPos)
	return n, nil
}
