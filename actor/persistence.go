package actor

import (
	"context"
	"time"

	"github.com/cellar-db/cellar/offload"
	"github.com/cellar-db/cellar/storage"
)

// Snapshots. A snapshot (SAVE, BGSAVE, SHUTDOWN SAVE: shutdown.go) is a
// consistent copy of the database written by an offload worker through a
// connection of its own (storage.Snapshot); the actor never waits for it.
// SAVE's reply waits like a blocked client's: the batch is suspended on a
// keyless waiter that the job's completion finishes.

// snapshots is the actor's snapshot state. Only the actor touches it.
type snapshots struct {
	running   bool
	scheduled bool          // BGSAVE SCHEDULE asked for another run after this one
	waiting   []func(error) // called, on the actor, when the running one ends
	lastSave  int64         // unix seconds of the last good snapshot (LASTSAVE)
	lastOK    bool
	saves     uint64
}

var persistenceCommands = registerCommands([]*Command{
	{Name: "save", Summary: "Writes a consistent snapshot of the database and replies when it is on disk.", Handler: cmdSave, Defers: true},
	{Name: "bgsave", Summary: "Starts writing a consistent snapshot of the database in the background.", Handler: cmdBgSave},
	{Name: "lastsave", Summary: "Returns the unix time of the last successful snapshot.", Handler: cmdLastSave},
	{Name: "shutdown", Summary: "Stops the server gracefully, optionally after a snapshot.", Handler: cmdShutdown, Defers: true},
})

// snapshot starts a snapshot job unless one runs; done is called on the
// actor when it ends. The job copies what SQLite has committed, so it
// starts after the flush that ends this round (with a redo log, rounds
// reach SQLite at flushes): the snapshot holds every write acknowledged
// before it was asked for.
func (a *Actor) snapshot(done func(error)) error {
	sn := &a.snap
	if sn.running {
		return ErrSaveInProgress
	}
	sn.running = true
	sn.waiting = append(sn.waiting, done)
	src, dst := a.st.Path(), a.cfg.SnapshotPath
	start := func() {
		job := &offload.Job{Run: func() {
			err := storage.Snapshot(src, dst)
			a.in.put(message{kind: msgCall, fn: func() { a.snapshotDone(err) }})
		}}
		if err := a.pool.Submit(context.Background(), job, offload.NoWait); err != nil {
			a.snapshotDone(errSnapshotStart(err))
		}
	}
	if a.logging() {
		a.afterFlush = append(a.afterFlush, start)
	} else {
		start()
	}
	return nil
}

func (a *Actor) snapshotDone(err error) {
	sn := &a.snap
	sn.running = false
	sn.lastOK = err == nil
	if err == nil {
		sn.lastSave = time.Now().Unix()
		sn.saves++
		a.log.Info().Str("file", a.cfg.SnapshotPath).Msg("snapshot written")
	} else {
		a.log.Error().Err(err).Msg("snapshot failed")
	}
	waiting := sn.waiting
	sn.waiting = nil
	for _, f := range waiting {
		if f != nil {
			f(err)
		}
	}
	if sn.scheduled {
		sn.scheduled = false
		a.snapshot(nil)
	}
}

// suspendOnJob parks the running command's batch until finish is called
// (on the actor) with its reply. The batch must travel alone (Defers).
func (c *Ctx) suspendOnJob() (finish func(reply []byte), err error) {
	if c.noBlock {
		return nil, errCannotWait(c.cmd.Name)
	}
	w := &waiter{} // no keys, no retry: only finish completes it
	if err := c.block(w, 0); err != nil {
		return nil, err
	}
	a := c.a
	return func(reply []byte) { a.complete(w, reply, false) }, nil
}

// SAVE
func cmdSave(c *Ctx) error {
	if c.a.snap.running {
		return ErrSaveInProgress
	}
	finish, err := c.suspendOnJob()
	if err != nil {
		return err
	}
	return c.a.snapshot(func(err error) {
		if err != nil {
			finish(errorReply(errSnapshotFailed(err)))
			return
		}
		finish([]byte("+OK\r\n"))
	})
}

// BGSAVE [SCHEDULE]
func cmdBgSave(c *Ctx) error {
	schedule := false
	if len(c.args) == 2 {
		if !c.argEq(1, "schedule") {
			return ErrSyntax
		}
		schedule = true
	}
	if c.a.snap.running {
		if schedule {
			c.a.snap.scheduled = true
			c.w.Simple("Background saving scheduled")
			return nil
		}
		return ErrSaveInProgress
	}
	if err := c.a.snapshot(nil); err != nil {
		return err
	}
	c.w.Simple("Background saving started")
	return nil
}

// LASTSAVE
func cmdLastSave(c *Ctx) error {
	c.w.Int(c.a.snap.lastSave)
	return nil
}

// errorReply encodes an error reply (the same in RESP2 and RESP3).
func errorReply(err error) []byte { return []byte("-" + err.Error() + "\r\n") }
