package actor

import (
	"time"

	"github.com/cellar-db/cellar/storage"
)

// Loads off the actor (storage/memprefetch.go): before a connection's
// batch runs, the keys its commands name are asked for; if memory lacks
// one that SQLite may hold, the batch waits, with its connection's later
// batches behind it, while a storage.Load reads the keys on a goroutine
// of its own, and the actor serves every other connection meanwhile. Once
// the Load lands, the batches that waited for it run in the order they
// came. One Load is in flight at a time; the keys asked for meanwhile
// make the next one.
//
// The keys come from the command table (the legacy key range, or the key
// specs of a command with movable keys), with the connection's database
// up to a SELECT in the batch. A key they miss (one a script computes,
// SORT's BY patterns, a key let go again before its batch ran) is loaded
// by its command on the actor, as before: the prefetch only ever saves
// the actor a read.

// loadWaits are the connections whose batches wait for a Load.
type loadWaits struct {
	sessions []*session // in the order their first batch began to wait
}

// waitForLoad holds b if it must wait for a Load: its connection has
// batches waiting already, or its commands name keys being read. It
// reports whether it held b.
func (a *Actor) waitForLoad(s *session, b *Batch) bool {
	var gen uint64
	if n := len(s.loadQ); n > 0 {
		gen = s.loadQ[n-1].loadGen
	}
	if a.st.MayLoad() {
		gen = max(gen, a.batchLoads(s, b))
	}
	if gen == 0 {
		return false
	}
	b.held, b.loadGen = true, gen
	if len(s.loadQ) == 0 {
		a.ld.sessions = append(a.ld.sessions, s)
	}
	s.loadQ = append(s.loadQ, b)
	return true
}

// batchLoads asks for the keys of b's commands, in s's database until one
// that switches databases, and returns the Load the batch waits for (0:
// none).
func (a *Actor) batchLoads(s *session, b *Batch) (gen uint64) {
	for i := 0; i < b.Len(); i++ {
		args := b.Cmd(i)
		cmd := a.Lookup(args[0])
		if cmd != nil && cmd.subs != nil && len(args) >= 2 {
			cmd = cmd.sub(args[1])
		}
		if cmd == nil || !cmd.arityOK(len(args)) {
			continue
		}
		if cmd.switchesDB {
			break // the commands after it may name another database's keys
		}
		gen = max(gen, a.cmdLoads(s.db, cmd, args))
	}
	return gen
}

// cmdLoads asks for the keys of one command in database db.
func (a *Actor) cmdLoads(db int, cmd *Command, args [][]byte) (gen uint64) {
	if cmd.Is(FlagMovableKeys) {
		keys, ok := findKeys(cmd, args)
		if !ok {
			return 0
		}
		for _, k := range keys {
			gen = max(gen, a.st.WantLoad(db, args[k.pos]))
		}
		return gen
	}
	if cmd.FirstKey <= 0 {
		return 0
	}
	last := cmd.LastKey
	if last < 0 {
		last += len(args)
	}
	for i := cmd.FirstKey; i <= last && i < len(args); i += max(cmd.KeyStep, 1) {
		gen = max(gen, a.st.WantLoad(db, args[i]))
	}
	return gen
}

// startLoad sends the keys asked for since the last Load on their way,
// unless one is in flight; its landing comes back as a call.
func (a *Actor) startLoad() {
	l := a.st.StartLoad()
	if l == nil {
		return
	}
	go func() {
		l.Run()
		a.in.put(message{kind: msgCall, fn: func() { a.loadLanded(l) }})
	}()
}

// loadLanded puts what l read in memory and runs, in their order, the
// batches that waited for it; then sends the next Load.
func (a *Actor) loadLanded(l *storage.Load) {
	gen := a.st.EndLoad(l)
	now := time.Now()
	sessions := a.ld.sessions
	a.ld.sessions = nil
	var keep []*session
	for _, s := range sessions {
		if a.sessions[s.id] != s {
			s.loadQ = nil // its connection is gone
			continue
		}
		q := s.loadQ
		i := 0
		for ; i < len(q) && q[i].loadGen <= gen; i++ {
			b := q[i]
			q[i] = nil
			b.loaded = true
			a.runBatch(b, now)
			if len(a.blk.ready) > 0 {
				a.serveReady()
			}
		}
		if s.loadQ = q[i:]; len(s.loadQ) > 0 {
			keep = append(keep, s)
		} else {
			s.loadQ = nil
		}
	}
	a.ld.sessions = append(keep, a.ld.sessions...)
	a.st.SettleLoad()
	a.startLoad()
}
