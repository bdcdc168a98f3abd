package actor

import (
	"bytes"
	"time"

	"github.com/cellar-db/cellar/proto"
)

// The round engine: a round takes everything in the inbox, runs it on the
// keyspace in memory, ends it (logs its effects, redolog.go; without a log,
// commits), and hands the completions to the loops as durability allows.

// routed is a completion with the sink it goes to. w is set while the
// batch is suspended on a waiter registered in the current round (the
// completion is held, not delivered); drop when that waiter was cancelled
// (nothing is delivered).
type routed struct {
	sink Sink
	c    Completion
	w    *waiter
	drop bool
	// own: c.Reply is this entry's own buffer (pushes gathered into it),
	// not a frame shared with other completions; event: a push of
	// keyspace notifications, retracted if the round fails (pubsub.go).
	own, event bool
}

// cmdRec remembers where a command's reply sits in its batch's buffer, so
// that a failed commit can replace the replies that depended on it.
type cmdRec struct {
	out        int32 // index in Actor.out
	start, end int32
	keyspace   bool
}

// round executes every message taken from the inbox in one transaction,
// commits, and releases the replies as durability allows.
func (a *Actor) round(msgs []message) {
	a.stats.rounds++
	now := time.Now()
	a.nowMs = now.UnixMilli()
	a.roundStart = now
	a.beginRound()
	a.holdBack()
	a.expireWaiters(now)
	if a.pause.on || a.pause.release {
		a.endPauseIfDue(now)
	}
	ahead := 0
	for i := range msgs {
		if i == ahead {
			ahead += a.prefetch(msgs[i:])
		}
		m := &msgs[i]
		switch m.kind {
		case msgOpen:
			a.openSession(m.open, now)
		case msgBatch:
			if len(a.out) > 0 && m.batch.Scripts {
				a.cutRound()
			}
			a.runBatch(m.batch, now)
		case msgClosed:
			a.endSession(m.id)
		case msgCall:
			m.fn()
		case msgBusy:
			a.busyAnswered(m.id, m.busy)
		}
		if len(a.blk.ready) > 0 {
			a.serveReady()
		}
		if a.pause.release {
			a.releasePaused(now) // CLIENT UNPAUSE ran
		}
		msgs[i] = message{}
	}
	a.spare = msgs[:0]
	a.startLoad()
	if !now.Before(a.nextSweep) || a.sweepMore {
		a.housekeeping(now)
	}
	if a.track.pendingTo != nil {
		a.flushPending(nil, nil) // left by a woken waiter's retry
	}
	if len(a.track.prefixes) > 0 {
		a.broadcastTracking() // BCAST: the round's changed keys, per prefix
	}
	a.finishRound()
}

// prefetch hands the store the second argument of the commands of the
// batches at the head of msgs — the key, for most commands that have one —
// so that their lookups' cache misses overlap (storage.Store.Prefetch): a
// guess that is not a key costs one failed probe. It covers whole batches
// until it has aheadKeys names and returns how many messages it covered.
func (a *Actor) prefetch(msgs []message) int {
	keys, db, n := a.ahead[:0], -1, 0
	for n < len(msgs) && len(keys) < aheadKeys {
		m := &msgs[n]
		n++
		if m.kind != msgBatch {
			continue
		}
		s := a.sessions[m.batch.ConnID]
		if s == nil {
			continue
		}
		if s.db != db && len(keys) > 0 {
			a.st.Prefetch(db, keys)
			keys = keys[:0]
		}
		db = s.db
		keys = batchKeys(keys, m.batch, 0)
	}
	if len(keys) > 0 {
		a.st.Prefetch(db, keys)
	}
	clear(keys)
	a.ahead = keys[:0]
	return n
}

// batchKeys appends to keys the second arguments of b's commands from
// from, a window of 2*aheadKeys commands: what prefetch reads ahead of a
// batch, and runBatch of each later window of a long one (a replica's
// stream, a bulk load's pipeline).
func batchKeys(keys [][]byte, b *Batch, from int) [][]byte {
	for i := from; i < b.Len() && i < from+2*aheadKeys; i++ {
		// A pipeline on one key (LPUSH mylist ...) names it once.
		if args := b.Cmd(i); len(args) > 1 && (len(keys) == 0 || !bytes.Equal(keys[len(keys)-1], args[1])) {
			keys = append(keys, args[1])
		}
	}
	return keys
}

// aheadKeys is about how many keys prefetch reads ahead: enough for their
// misses to overlap, few enough that what it reads is still cached when
// the commands run.
const aheadKeys = 64

// cutRound ends the round so far and begins another, before a batch that
// may run a script: the replies of the batches before it leave now, not
// after the script. A script that runs past busy-reply-threshold holds the
// round it runs in, and a client whose command ran before it in that round
// (a PING sent as the script began) would otherwise wait for the script's
// end, where Redis answered it at once; the loops answer -BUSY only for
// what the actor has not begun (ScriptWatch).
func (a *Actor) cutRound() {
	if a.track.pendingTo != nil {
		a.flushPending(nil, nil)
	}
	if len(a.track.prefixes) > 0 {
		a.broadcastTracking()
	}
	a.finishRound()
	a.beginRound()
}

// finishRound ends the round and sends its completions on their way.
func (a *Actor) finishRound() {
	failed := a.roundErr != nil
	if failed {
		err := a.roundErr
		a.roundErr = nil
		a.abandonRound()
		a.failRound(err)
	} else if err := a.endRound(); err != nil {
		failed = true
		a.failRound(err)
	}
	a.roundErr = nil
	if failed {
		a.retractEvents()
	}
	a.settleHeld(failed)
	a.recs = a.recs[:0]
	if len(a.out) == 0 {
		return
	}
	if seq := a.syncSeq(); a.cfg.Durability == Always && a.durable.behind(seq) {
		a.durable.enqueue(a.out, seq)
	} else {
		deliver(a.out, &a.delivering)
	}
	clear(a.out)
	a.out = a.out[:0]
}

// failRound replaces the reply of every command that touched the keyspace in
// this round with an error: nothing of the round was committed, so nothing
// may be acknowledged. Replies of commands that did not touch the keyspace
// (PING, SELECT, ...) stand.
func (a *Actor) failRound(err error) { a.failRecs(err, 0) }

// failRecs fails the replies recorded from recs[from] on (see failRound).
func (a *Actor) failRecs(err error, from int) {
	reply, _ := replyFor(err)
	a.stats.failedCommits++
	a.stats.lastCommitError = err.Error()
	a.log.Error().Err(err).Int("commands", len(a.recs)-from).Msg("commit failed; its writes are refused")
	w := proto.Writer{}
	for i := from; i < len(a.recs); {
		oi := a.recs[i].out
		old := a.out[oi].c.Reply
		w.Buf = make([]byte, 0, len(old))
		for ; i < len(a.recs) && a.recs[i].out == oi; i++ {
			r := a.recs[i]
			if r.keyspace {
				w.Error(reply)
			} else {
				w.Raw(old[r.start:r.end])
			}
		}
		a.out[oi].c.Reply = w.Buf
	}
}

// deliver hands completions to their sinks, one call per sink, grouping
// them in *scratch (a sink keeps nothing of the slice it is given, so the
// caller's goroutine reuses it; rs is left in an unspecified order).
func deliver(rs []routed, scratch *[]Completion) {
	for len(rs) > 0 {
		sink := rs[0].sink
		group := (*scratch)[:0]
		rest := rs[:0]
		for _, r := range rs {
			if r.sink == sink {
				group = append(group, r.c)
			} else {
				rest = append(rest, r) // behind r: overwrites what was read
			}
		}
		sink.Deliver(group)
		clear(group) // the replies are the sink's now
		*scratch = group[:0]
		rs = rest
	}
}

// runBatch executes one connection's batch and queues its completion.
// Replies are charged to the client's memory as they are built; once the
// client's replies (these, those in flight to its loop and those in its
// socket's buffer) pass the output hard limit, or the client is evicted
// for the client memory budget, nothing more of the batch runs (what ran
// stays done) and the connection is closed.
func (a *Actor) runBatch(b *Batch, now time.Time) {
	n := b.Len()
	s := a.sessions[b.ConnID]
	if !b.held {
		defer a.in.queued.Add(-b.Bytes)
	}
	if s == nil {
		return // the connection is gone; nothing to reply to
	}
	if !b.take() {
		// Its loop answered it while a script was busy (Batch.Claim):
		// nothing of it runs; pushes to the client now follow those
		// replies.
		s.mem.Add(MemBatches, -b.Bytes)
		s.seq = b.Seq
		return
	}
	if !b.loaded && a.waitForLoad(s, b) {
		return // its keys are being read (loads.go)
	}
	if (a.pause.on || s.held > 0) && a.pausedBatch(s, b) {
		a.holdBatch(s, b) // CLIENT PAUSE (pause.go)
		return
	}
	defer s.mem.Add(MemBatches, -b.Bytes)
	if s.killed || s.mem.Gone() {
		return
	}
	s.lastActive = now
	s.seq = b.Seq
	s.input = b.Input
	defer func() { s.input = 0 }()
	oi := int32(len(a.out))
	a.out = append(a.out, routed{sink: s.sink, c: Completion{ConnID: s.id, Seq: b.Seq, Recycle: true}})
	w := proto.Writer{Buf: replyBuf(replyCap(s.replyHint)), Proto: s.resp}
	defer func() { s.replyHint = len(w.Buf) }()
	charged := 0
	for i := 0; i < n && !s.closing; i++ {
		start := len(w.Buf)
		// The loop ends a batch after a blocking command; one anywhere
		// else (and any while the session already waits) runs in its
		// non-blocking form, as in MULTI, rather than reorder replies.
		noBlock := i != n-1 || s.blocked != nil
		silent := s.reply != replyOn
		if silent {
			a.replySilenced(s)
		}
		if len(a.frames) > 0 {
			a.frames[0].pushAt = start // no push yet (execute may stop before it enters)
		}
		if i > 0 && i%(2*aheadKeys) == 0 {
			keys := batchKeys(a.ahead[:0], b, i)
			a.st.Prefetch(s.db, keys)
			clear(keys)
			a.ahead = keys[:0]
		}
		args := b.Cmd(i)
		keyspace := a.execute(s, args, &w, noBlock)
		if silent {
			w.Buf = a.replySilent(s, w.Buf, start)
		}
		if a.track.pendingTo != nil {
			a.flushPending(s, &w) // its invalidations, after its reply (tracking.go)
		}
		if s.track != nil && s.track.caching {
			endCaching(s, args)
		}
		a.recs = append(a.recs, cmdRec{out: oi, start: int32(start), end: int32(len(w.Buf)), keyspace: keyspace})
		w.Proto = s.resp
		out, ok := s.mem.chargeReply(int64(len(w.Buf) - charged))
		charged = len(w.Buf)
		a.out[oi].c.Charged = int64(charged)
		limit := a.cfg.MaxReply
		if s.subscribed {
			limit = a.cfg.PubsubHardLimit // Redis's pubsub output class
		}
		if !ok || (limit > 0 && out > limit) {
			a.overflow(s, oi, out, !ok)
			return
		}
		if s.blocked != nil && s.blocked.oi == pendingOut {
			a.out[oi].c.Reply = w.Buf
			a.linkSuspended(s, oi)
			break
		}
		if len(a.blk.ready) > 0 {
			// Serve waiters before the next command runs, so that the
			// push, the wake and the pop are one step.
			a.out[oi].c.Reply = w.Buf
			a.serveReady()
		}
	}
	a.out[oi].c.Reply = w.Buf
	a.out[oi].c.Close = s.closing
}

// replySilenced is called before a command runs while CLIENT REPLY is not
// ON: a SKIP given before makes this the command whose reply is skipped.
func (a *Actor) replySilenced(s *session) {
	if s.reply == replySkipNext {
		s.reply = replySkip
	}
}

// replySilent drops, from buf, the reply of a command that ran while
// replies were off or skipped (from start), unless the command turned
// them back on (CLIENT REPLY ON answers OK); a skipped reply ends the skip.
// Pushes the command gave its own client stay: they answer no request,
// and Redis sends them whatever CLIENT REPLY says (Actor.push put them
// ahead of the reply, up to the top frame's pushAt).
func (a *Actor) replySilent(s *session, buf []byte, start int) []byte {
	switch s.reply {
	case replyOn:
		return buf
	case replySkip:
		s.reply = replyOn
	}
	keep := start
	if len(a.frames) > 0 {
		keep = min(max(a.frames[0].pushAt, start), len(buf))
	}
	return buf[:keep]
}

// overflow abandons a batch whose client passed the output hard limit
// (over) or was evicted for the client memory budget (evicted already
// logged), and disconnects the client before its replies take more memory.
func (a *Actor) overflow(s *session, oi int32, out int64, evicted bool) {
	if !evicted {
		a.log.Warn().Uint64("client", s.id).Str("addr", s.addr).Int64("bytes", out).
			Msg("closing client whose replies reached the output buffer hard limit")
	}
	first := len(a.recs)
	for first > 0 && a.recs[first-1].out == oi {
		first--
	}
	a.recs = a.recs[:first]
	a.out[oi].c = Completion{ConnID: s.id, Kill: true}
	s.killed = true
	a.cfg.Clients.Release(s.mem)
}

// replyCap is the capacity a batch's reply buffer starts with: a little
// more than the connection's last batch took, so that a steady client's
// replies cost one allocation rather than a doubling's five or six (a
// third of what a -P 16 GET run allocated), within [64 B, 4 MiB]; from
// 16 KiB the buffer comes from the pool the loops return them to
// (replybuf.go).
func replyCap(last int) int {
	return min(max(last+last/8, 64), replyPoolMax)
}
