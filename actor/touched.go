package actor

import "github.com/cellar-db/cellar/storage"

// What a write touched, acted on once.
//
// Handlers never report what they changed. Storage records every change as
// it makes it (storage/touched.go: the key, its database and the kind of
// change: written, elements added or removed, deleted, expired, renamed,
// moved, copied, a database flushed or swapped), and saves the collections
// a command changed when the command ends (Store.EndCommand). After every
// command the dispatcher runs keysTouched over that record, once; so do the
// other writers of a round: a woken waiter's retry, the serving loop (whose
// lookups may expire keys), the expiry sweep.
//
// The step makes the redo log's records (effects.go), publishes keyspace
// notifications when they are on (notify.go: the kinds, and the running
// command, map onto Redis's events), marks dirty the sessions watching a
// changed key (WATCH, multi.go: only while someone watches, a field test
// otherwise), and marks ready the keys that may now hold something for
// blocked clients, so that they are served before the next command runs
// (runBatch, round). This is also where what else must follow every change
// goes, each reading the same record: client-side tracking invalidation
// (tracking.go; its pushes go the way Pub/Sub's do, pubsub.go) is one;
// the families listening hear the record last (registry.go,
// touchedListener: search indexes the keys, MIGRATE marks the keys it has
// in flight).

// run runs the command's handler, touches the keys it names (their access
// clocks, access.go) and ends the command in storage. A failure to save
// what the handler changed is the command's failure.
func (c *Ctx) run() error {
	err := c.cmd.Handler(c)
	c.touchKeys()
	return c.end(err)
}

// end ends a command (or a woken waiter's retry) in storage after it
// returned err: the collections it changed are saved, even when it failed
// (a failed command's changes stand unless they are undone, and its counts
// must match its elements).
func (c *Ctx) end(err error) error {
	if serr := c.st.EndCommand(); err == nil {
		err = serr
	}
	return err
}

// keysTouched is the "keys touched" step: it runs over the change record
// and empties it. When the round is doomed (its writes will be rolled
// back) the record is dropped unread: nothing that is undone may have
// effects.
func (a *Actor) keysTouched() {
	ts := a.st.Touched()
	if len(ts) == 0 {
		return
	}
	if a.roundErr == nil {
		a.propagate(ts) // the redo log's records (effects.go)
		if a.notify != 0 {
			a.notifyTouched(ts) // keyspace notifications (notify.go)
		}
		for i := range ts {
			a.wakeFor(&ts[i])
		}
		if a.watches.n > 0 {
			a.touchWatched(ts) // WATCH (multi.go)
		}
		if a.track.tracked() {
			a.invalidateTouched(ts) // client-side caching (tracking.go)
		}
		for _, h := range a.fam.touched {
			h.keysTouched(ts) // the families listening (registry.go)
		}
	}
	a.st.ResetTouched()
}

// wakeFor marks ready the keys a change may have given something to take:
// a key written, given elements, renamed, moved or copied onto, and every
// watched key of two swapped databases; and a key deleted, renamed or
// moved away, every watched key of a flushed database, or a stream that
// lost a consumer group, for the stream readers that must then fail. A key whose elements went or whose expiry
// changed has nothing new for anyone. Marking a key ready is cheap
// and safe when it turns out to hold nothing wanted (a string, a hash):
// serving looks at what the key holds before it wakes anyone, and a write
// wakes at most as many consuming waiters as elements it made available.
func (a *Actor) wakeFor(t *storage.Touch) {
	switch t.Kind {
	case storage.Written, storage.Added, storage.RenamedTo, storage.MovedTo, storage.CopiedTo:
		a.signalReady(t.DB, t.Key)
	case storage.Deleted, storage.Expired, storage.RenamedFrom, storage.MovedFrom, storage.GroupDestroyed:
		// A stream gone, or one of its consumer groups: the clients
		// blocked reading through a group are answered with Redis's
		// error (streams.go, xreadGroupTry).
		a.signalReady(t.DB, t.Key)
	case storage.Swapped:
		a.signalDB(t.DB)
		a.signalDB(t.Other)
	case storage.Flushed:
		// Redis signals the watched keys that held a stream before the
		// flush (signalFlushedDb). A key with a group reader waiting
		// still held its stream when the flush ran (anything that took
		// it away woke the reader already), and the others' waiters
		// find nothing new: every watched key will do.
		a.signalDB(t.DB)
	}
}
