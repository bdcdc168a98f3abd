package actor

import (
	"context"
	"fmt"
	"io"

	"github.com/cellar-db/cellar/offload"
	"github.com/cellar-db/cellar/storage/redo"
)

// The redo log in the round (docs/architecture.md, "Write path"). Every
// commit carries its effects (effects.go) to the log, in this order:
//
//  1. the records are buffered (redo.Log.Append), and the position after
//     them is stored in the same transaction (storage.SetRedoPosition);
//  2. the transaction commits;
//  3. the records are written to the log, with one write(2);
//  4. the replies leave (with durability always, once a log fsync covers
//     them: the syncer fsyncs the log, not the WAL).
//
// Committing first means a failed commit never leaves in the log a write
// that was answered with an error: its records are discarded. A process
// killed between 2 and 3 leaves the database ahead of the log, which the
// log accepts at start (it resumes at the database's position). SQLite's
// WAL is not fsynced per commit any more: after a power loss SQLite may
// lose recent commits, which start-up replays from the log (ReplayLog).
// The log before a position can go once the commit that stored it is
// durable in SQLite: trimLog fsyncs the WAL, then truncates.

// commit commits the open transaction with its effects in the log (see
// above). A failed log write after the commit makes the actor refuse
// writes from then on, like a failed fsync: the log no longer holds every
// committed write.
func (a *Actor) commit() error {
	l := a.cfg.Log
	if l != nil {
		for _, e := range a.takeEffects() {
			if err := l.Append(e); err != nil {
				l.Discard()
				a.st.Rollback()
				return fmt.Errorf("redo log: %w", err)
			}
		}
		if l.Buffered() > 0 {
			if err := a.st.SetRedoPosition(uint64(l.Pending())); err != nil {
				l.Discard()
				a.st.Rollback()
				return err
			}
		}
	}
	if _, _, err := a.st.Commit(); err != nil {
		if l != nil {
			l.Discard()
		}
		return err
	}
	if l != nil && l.Buffered() > 0 {
		pos, err := l.Write()
		if err != nil {
			a.durable.fail(fmt.Errorf("redo log write: %w", err))
			return nil // committed: its replies follow durability's rules
		}
		a.logPos = pos
	}
	return nil
}

// rollback abandons the open transaction and its effects.
func (a *Actor) rollback() {
	a.st.Rollback()
	a.dropEffects()
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

// ReplayLog brings the database up to the end of the redo log: it replays,
// in one transaction, every record after the position the database covers,
// and stores the log's end with them (ReplayEffects). It runs before Run,
// on the caller's goroutine; it reports how many records it replayed.
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
	}, func() uint64 { return uint64(r.Pos()) })
	if err != nil {
		return n, err
	}
	a.logPos = l.Written()
	return n, nil
}
