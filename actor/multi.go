package actor

import (
	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

// Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH (docs/architecture.md,
// "Transactions").
//
// Queuing. While a session is in MULTI (session.tx set), the dispatcher
// queues every command instead of running it, except the commands marked
// Immediate in the table (MULTI, EXEC, DISCARD, WATCH, QUIT, RESET, the
// ones Redis runs at once). What is refused while queuing — an unknown
// command or subcommand, a wrong number of arguments, a command before
// AUTH, a write while writes are refused, one whose metadata has the
// no_multi flag, one that would pass the queue's byte limit — answers its
// error and marks the transaction so that
// EXEC fails with EXECABORT, as Redis's rejectCommand does. Queued commands
// are copied (their batch's memory is reused) and charged to the client's
// memory (MemMulti; CLIENT LIST's multi-mem).
//
// EXEC runs the queue as one command of the actor: each queued command
// runs one level deeper (Ctx.call, in its non-blocking form), so no other
// client's command runs in between, and waiters are served only after
// EXEC. An error a queued command raises is its reply inside EXEC's array;
// the others still run. The redo log records of the commands EXEC ran are
// joined into one record (effects.group), so a crash replays all of them
// or none; the replies leave with the round's, as durable as any write.
//
// WATCH. A watched key is a watchedKey in both the session's list and the
// actor's index by key name. The keys touched step (touched.go) looks
// every change up in the index — only while someone watches anything
// (watching.n > 0), so clients that watch nothing pay one field test per
// command — and marks dirty every session watching a changed key;
// a dirty session's watches go at once (it can only fail now). The rules
// for keys that had expired but were still stored when watched ("stale"),
// for FLUSHDB/FLUSHALL and for SWAPDB are Redis 7.0's (touchWatchedKey and
// touchAllWatchedKeysInDb in Redis's multi.c): deleting a stale key is no
// change, a flush changes only keys that were there, a swap changes a key
// unless it was absent or stale on both sides. EXEC also fails when a key
// that was live at WATCH has expired since, even if nothing deleted it
// yet. Watches end in one place, unwatchAll, whatever ends them: EXEC,
// DISCARD, UNWATCH, RESET, a dirty watch, the end of the session.

var transactionCommands = registerCommands([]*Command{
	{Name: "multi", Summary: "Starts a transaction: the commands that follow are queued until EXEC.", Handler: cmdMulti, Immediate: true},
	{Name: "exec", Summary: "Runs the queued commands of the transaction as one step.", Handler: cmdExec, Immediate: true, runsScript: true, runsQueue: true},
	{Name: "discard", Summary: "Drops the queued commands of the transaction.", Handler: cmdDiscard, Immediate: true, whileBusy: busyDiscard},
	{Name: "watch", Summary: "Makes the next EXEC fail if any of the keys changes before it.", Handler: cmdWatch, Immediate: true, noTouch: true, whileBusy: busyWatch},
	{Name: "unwatch", Summary: "Forgets every key the connection watches.", Handler: cmdUnwatch, whileBusy: busyUnwatch},
})

// txState is a session's open transaction.
type txState struct {
	queue [][][]byte // copied arguments, in order
	bytes int64      // what the queue is charged (MemMulti)
	dirty bool       // an error while queuing: EXEC answers EXECABORT
	flags Flag       // the queued commands' flags together (CLIENT PAUSE WRITE)
}

// queuedSize is what a queued command is charged: its bytes and the slices
// that hold them.
func queuedSize(args [][]byte) int64 {
	n := int64(24 + 24*len(args))
	for _, a := range args {
		n += int64(len(a))
	}
	return n
}

// queueCommand queues cmd for s's transaction and answers QUEUED, or
// refuses it (marking the transaction failed).
func (a *Actor) queueCommand(s *session, cmd *Command, args [][]byte, w *proto.Writer) {
	tx := s.tx
	if cmd.Is(FlagNoMulti) {
		a.reject(s, cmd, string(ErrNotInMulti), w) // flags the transaction
		return
	}
	size := queuedSize(args)
	if tx.bytes+size > a.cfg.MaxQueuedBytes {
		tx.dirty = true
		w.Error(errQueueTooLarge(a.cfg.MaxQueuedBytes).Error())
		return
	}
	tx.queue = append(tx.queue, cloneArgs(args))
	tx.bytes += size
	tx.flags |= a.runFlags(cmd, args) // a no-writes script's flags, as Redis
	s.mem.Add(MemMulti, size)
	w.Simple("QUEUED")
}

// flagTx marks s's transaction, if it has one, as failed: a command was
// refused while queuing.
func flagTx(s *session) {
	if s.tx != nil {
		s.tx.dirty = true
	}
}

// reject answers text for cmd, refused before it ran. Like any refusal it
// fails the transaction the command would have been queued in; a refused
// EXEC ends the transaction (and the watches) at once, with EXECABORT
// naming the reason, as Redis's rejectCommand does.
func (a *Actor) reject(s *session, cmd *Command, text string, w *proto.Writer) {
	a.cmdStats[cmd.idx].rejected++
	if !cmd.runsQueue {
		flagTx(s)
		w.Error(text)
		a.countError(text)
		return
	}
	a.resetTx(s)
	w.Error(errExecAbortBecause(text).Error())
	a.countError("EXECABORT")
}

// endTx drops s's queue, if any, and gives back its memory.
func (a *Actor) endTx(s *session) {
	if s.tx == nil {
		return
	}
	s.mem.Add(MemMulti, -s.tx.bytes)
	s.tx = nil
	delete(a.txs, s.id)
	s.setInMulti(false)
}

// beginTx opens a transaction for s (MULTI).
func (a *Actor) beginTx(s *session) {
	s.tx = &txState{}
	if a.txs == nil {
		a.txs = map[uint64]*session{}
	}
	a.txs[s.id] = s
	s.setInMulti(true)
}

// setInMulti tells s's loop whether s is in MULTI (ConnInfo.InMulti).
func (s *session) setInMulti(on bool) {
	if s.multiFlag != nil {
		s.multiFlag.Store(on)
	}
}

// resetTx ends everything transactional about s: the queue and the
// watches (DISCARD, RESET, the session's end).
func (a *Actor) resetTx(s *session) {
	a.endTx(s)
	a.unwatchAll(s)
	s.watchDirty = false
}

// MULTI
func cmdMulti(c *Ctx) error {
	if c.s.tx != nil {
		return ErrMultiNested
	}
	c.a.beginTx(c.s)
	c.w.OK()
	return nil
}

// DISCARD
func cmdDiscard(c *Ctx) error {
	if c.s.tx == nil {
		return ErrDiscardNoMulti
	}
	c.a.resetTx(c.s)
	c.w.OK()
	return nil
}

// EXEC
func cmdExec(c *Ctx) error {
	a, s := c.a, c.s
	tx := s.tx
	if tx == nil {
		return ErrExecNoMulti
	}
	a.endTx(s)
	changed := s.watchDirty || a.watchedExpired(s)
	a.unwatchAll(s)
	s.watchDirty = false
	if tx.dirty {
		return ErrExecAbort
	}
	if changed {
		c.w.NullArray()
		return nil
	}
	c.w.Array(len(tx.queue))
	mark := a.effectsMark()
	for _, args := range tx.queue {
		start := len(c.w.Buf)
		if text, refused := a.aclExecRefuse(s, tx, args); refused {
			c.w.Error(text)
			continue
		}
		if c.call(args, c.w) {
			c.keyspace = true
		}
		if s.reply == replyOff {
			// CLIENT REPLY OFF run inside the transaction silences the
			// replies after it, as in Redis (the array's header is out).
			c.w.Buf = c.w.Buf[:start]
		}
	}
	a.eff.group(mark)
	return nil
}

// watchedKey is one key one session watches.
type watchedKey struct {
	s   *session
	db  int
	key string
	// present: the key is stored (live or stale); stale: stored but past
	// its expiry. Kept up to date only while the watch is clean (any other
	// change dirties it).
	present, stale bool
}

// watching is the actor's index of watched keys, by key name (every
// database's together: a lookup by a change's key bytes then allocates
// nothing).
type watching struct {
	keys  map[string][]*watchedKey
	n     int        // watched keys, all sessions together
	dirty []*session // scratch for touchWatched
}

// WATCH key [key ...]
func cmdWatch(c *Ctx) error {
	a, s := c.a, c.s
	if s.tx != nil {
		return ErrWatchInMulti
	}
	if s.watchDirty {
		c.w.OK() // EXEC will fail anyway; nothing more to watch
		return nil
	}
	for _, key := range c.args[1:] {
		if err := a.watch(s, c.db, key); err != nil {
			return err
		}
	}
	c.w.OK()
	return nil
}

// UNWATCH
func cmdUnwatch(c *Ctx) error {
	c.a.unwatchAll(c.s)
	c.s.watchDirty = false
	c.w.OK()
	return nil
}

// busyWatch, busyUnwatch and busyDiscard apply WATCH, UNWATCH and DISCARD
// a loop answered +OK while a script was busy (whileBusy): the loop
// refused WATCH inside MULTI and DISCARD outside it itself, and a WATCH
// past the limit of watched keys watches what fits, as its +OK was sent.
func busyWatch(a *Actor, s *session, cmd *Command, args [][]byte) {
	a.countBusy(cmd)
	if s.tx != nil || s.watchDirty {
		return
	}
	for _, key := range args[1:] {
		if a.watch(s, s.db, key) != nil {
			return
		}
	}
}

func busyUnwatch(a *Actor, s *session, cmd *Command, _ [][]byte) {
	a.countBusy(cmd)
	a.unwatchAll(s)
	s.watchDirty = false
}

func busyDiscard(a *Actor, s *session, cmd *Command, _ [][]byte) {
	a.countBusy(cmd)
	if s.tx != nil {
		a.resetTx(s)
	}
}

// watch adds key of db to what s watches (once), within the limit.
func (a *Actor) watch(s *session, db int, key []byte) error {
	for _, wk := range a.watches.keys[string(key)] {
		if wk.s == s && wk.db == db {
			return nil
		}
	}
	if len(s.watched) >= a.cfg.MaxWatchedKeys {
		return errTooManyWatched(a.cfg.MaxWatchedKeys)
	}
	present, stale, err := a.st.Peek(db, key)
	if err != nil {
		return err
	}
	wk := &watchedKey{s: s, db: db, key: string(key), present: present, stale: stale}
	if a.watches.keys == nil {
		a.watches.keys = map[string][]*watchedKey{}
	}
	a.watches.keys[wk.key] = append(a.watches.keys[wk.key], wk)
	s.watched = append(s.watched, wk)
	a.watches.n++
	s.mem.Add(MemWatch, watchedSize(wk))
	return nil
}

// watchedSize is what a watched key is charged to its client's memory:
// the key and the entries that index it.
func watchedSize(wk *watchedKey) int64 { return int64(len(wk.key)) + 96 }

// unwatchAll forgets every key s watches. It is the one place watches end.
func (a *Actor) unwatchAll(s *session) {
	for i, wk := range s.watched {
		k := wk.key
		list := a.watches.keys[k]
		for j, x := range list {
			if x == wk {
				last := len(list) - 1
				list[j], list[last] = list[last], nil
				list = list[:last]
				break
			}
		}
		if len(list) == 0 {
			delete(a.watches.keys, k)
		} else {
			a.watches.keys[k] = list
		}
		a.watches.n--
		s.mem.Add(MemWatch, -watchedSize(wk))
		s.watched[i] = nil
	}
	s.watched = s.watched[:0]
}

// watchedExpired reports whether a key s watches was live at WATCH and has
// expired since (Redis's isWatchedKeyExpired): EXEC fails then even though
// nothing deleted the key yet.
func (a *Actor) watchedExpired(s *session) bool {
	a.st.Now = a.nowMs
	for _, wk := range s.watched {
		if wk.stale {
			continue
		}
		present, stale, err := a.st.Peek(wk.db, []byte(wk.key))
		if err != nil || (present && stale) {
			return true
		}
	}
	return false
}

// touchWatched marks dirty every session watching a key that ts changed
// (the keys touched step; only called while someone watches).
func (a *Actor) touchWatched(ts []storage.Touch) {
	ws := &a.watches
	streamMeta := a.runningStreamCommand()
	for i := range ts {
		t := &ts[i]
		if !modifiesKey(t, streamMeta) {
			continue
		}
		switch t.Kind {
		case storage.Flushed:
			a.touchWatchedDB(t.DB, false)
		case storage.Swapped:
			a.touchWatchedDB(t.DB, true)
			a.touchWatchedDB(t.Other, true)
		default:
			for _, wk := range ws.keys[string(t.Key)] {
				if wk.db != t.DB {
					continue
				}
				if t.Kind == storage.Expired && wk.stale {
					// A key already expired when watched is deleted: no
					// change, and the key is now simply absent.
					wk.present, wk.stale = false, false
					continue
				}
				ws.dirty = append(ws.dirty, wk.s)
			}
		}
	}
	for i, s := range ws.dirty {
		s.watchDirty = true
		a.unwatchAll(s)
		ws.dirty[i] = nil
	}
	ws.dirty = ws.dirty[:0]
}

// touchWatchedDB applies a flush of db (swapped false) or a swap that gave
// db another database's contents (swapped true) to the keys watched in db.
func (a *Actor) touchWatchedDB(db int, swapped bool) {
	ws := &a.watches
	for key, list := range ws.keys {
		looked := false
		nowPresent, nowStale := false, false
		for _, wk := range list {
			if wk.db != db {
				continue
			}
			if swapped && !looked {
				looked = true
				var err error
				if nowPresent, nowStale, err = a.st.Peek(db, []byte(key)); err != nil {
					nowPresent, nowStale = true, false // unknown: count it as changed
				}
			}
			switch {
			case !wk.present && !nowPresent:
				// Absent before and after.
			case wk.present && wk.stale && (!nowPresent || nowStale):
				// Expired before, absent or expired after: no change.
				wk.present, wk.stale = nowPresent, nowStale
			case !wk.present && nowStale:
				// Absent before, an expired key after: no change.
				wk.present, wk.stale = true, true
			default:
				ws.dirty = append(ws.dirty, wk.s)
			}
		}
	}
}
