package actor

import (
	"bytes"
	"container/heap"
	"errors"
	"math/big"
	"time"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

// Blocked clients, in the actor (docs/architecture.md, "Blocked clients",
// has the whole model and the tests that pin it).
//
// A blocking command that finds nothing to take registers a waiter and
// leaves its batch's reply unfinished: the batch is suspended (the loop reads
// nothing more from that connection until the reply comes, as Redis does
// with a blocked client). The waiter is queued, oldest first, on every key
// it watches, and, with a timeout, in one deadline heap that the actor's
// single timer follows.
//
// A waiter completes at most once, by whichever comes first: a write that
// makes one of its keys a non-empty list (a non-empty sorted set for
// BZPOPMIN, BZPOPMAX and BZMPOP), its deadline, CLIENT UNBLOCK, or
// its connection ending (disconnect, CLIENT KILL), which cancels it without
// a reply. Completing unregisters it everywhere at once, so the others find
// nothing and do nothing.
//
// Commands that may make list elements or sorted-set members available mark
// the key ready; after every command the actor serves the ready keys before
// anything else runs: the oldest waiter of a ready key that takes what the
// key now holds (list waiters from a list, sorted-set waiters from a sorted
// set, as in Redis) takes an element (re-scanning its own keys in its own
// order), then the next, while the key has both elements and such waiters.
// Waiters of the other kind keep waiting, in their own queue, so they never
// hold up the ones that can be served. The push, the wake and the pop are
// therefore one step of one round: no other client can take the element in
// between, and the pop commits with the round, so the woken reply is as
// durable as any other (it joins the round's completions, which leave
// after the commit, and after the fsync with durability "always").

// blockKind is what a waiter does when it wakes.
type blockKind uint8

const (
	blockPop   blockKind = iota // BLPOP, BRPOP: [key, element]
	blockMPop                   // BLMPOP: [key, [elements]]
	blockMove                   // BLMOVE, BRPOPLPUSH: the element, moved to dst
	blockJob                    // SAVE, SHUTDOWN SAVE: waits for an offload job, on no key
	blockZPop                   // BZPOPMIN, BZPOPMAX: [key, member, score]
	blockZMPop                  // BZMPOP: [key, [[member, score], ...]]
)

// waitClass is the type of value a waiter takes: each key queues its
// waiters in one lane per class, and a ready key serves the lane of the
// type it holds.
type waitClass uint8

const (
	classList waitClass = iota
	classZSet
	numClasses
)

// class is the lane a waiter of kind k queues in.
func (k blockKind) class() waitClass {
	if k == blockZPop || k == blockZMPop {
		return classZSet
	}
	return classList
}

// waitKey names a watched key: its database and its bytes.
type waitKey struct {
	db  int
	key string
}

// waiter is one blocked client.
type waiter struct {
	s     *session
	db    int
	keys  [][]byte  // as the client gave them, scanned in this order
	wkeys []waitKey // the distinct keys, as queued
	kind  blockKind
	from  storage.End
	to    storage.End // blockMove
	dst   []byte      // blockMove
	count int64       // blockMPop, blockZMPop
	max   bool        // blockZPop, blockZMPop: highest scores first

	deadline time.Time // zero: no timeout
	hidx     int       // index in the deadline heap; -1 when not in it
	done     bool

	// The suspended batch: its sequence number, and the replies of the
	// commands before the blocking one. While the round that suspended it
	// is open, the batch's completion is still a.out[oi] and its blocking
	// command's record a.recs[rec]; once that round commits, the replies
	// move to held and oi is -1.
	seq  uint64
	resp int
	held []byte
	// charged is what held was charged to the client's memory (carried to
	// the completion that finally delivers it).
	charged int64
	oi      int32
	rec     int32
}

// pendingOut marks a waiter whose batch runBatch has not yet linked.
const pendingOut = -2

// waitQueue is one key's waiters, in one lane per class; live counts them
// all (blocking.max_waiters_per_key applies to the key).
type waitQueue struct {
	lanes [numClasses]lane
	live  int
}

// lane is the waiters of one class on one key, oldest first. Completed
// waiters are skipped and dropped lazily; live counts the others.
type lane struct {
	ws   []*waiter
	live int
}

// front is the oldest live waiter.
func (q *lane) front() *waiter {
	for i, w := range q.ws {
		if !w.done {
			clear(q.ws[:i])
			q.ws = q.ws[i:]
			return w
		}
	}
	return nil
}

// compact drops completed waiters once they outnumber the live ones, so
// that a lane whose waiters keep timing out stays proportional to them.
func (q *lane) compact() {
	if len(q.ws) <= 2*q.live+16 {
		return
	}
	keep := make([]*waiter, 0, q.live)
	for _, w := range q.ws {
		if !w.done {
			keep = append(keep, w)
		}
	}
	q.ws = keep
}

// deadlines is the min-heap of waiters with a timeout.
type deadlines []*waiter

func (h deadlines) Len() int           { return len(h) }
func (h deadlines) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h deadlines) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = i, j
}
func (h *deadlines) Push(x any) {
	w := x.(*waiter)
	w.hidx = len(*h)
	*h = append(*h, w)
}
func (h *deadlines) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.hidx = -1
	return w
}

// blocking is the actor's waiter state. Only the actor goroutine touches it.
type blocking struct {
	queues   map[waitKey]*waitQueue
	waiters  int // live waiters
	timers   deadlines
	ready    []waitKey
	readySet map[waitKey]bool
	timer    *time.Timer
	timerAt  time.Time // what timer is set for; zero when stopped
}

// maxTimeoutMs is the longest timeout given a deadline; anything longer
// (Redis accepts up to ~292 million years) waits like timeout 0.
const maxTimeoutMs = 100 * 365 * 24 * 3600 * 1000

// parseTimeout parses a blocking command's timeout in seconds the way
// Redis 7.0 does: a long double, times 1000, rounded up to whole
// milliseconds; a result beyond the 64-bit range becomes negative, as C's
// conversion makes it. 0 means no timeout.
func parseTimeout(b []byte) (ms int64, err error) {
	f, ok := parseLongDouble(b)
	if !ok {
		return 0, ErrTimeoutNotFloat
	}
	if f.IsInf() {
		return 0, ErrTimeoutNegative
	}
	f = new(big.Float).SetPrec(longDoublePrec).SetMode(big.ToNearestEven).Mul(f, big.NewFloat(1000))
	i, acc := f.Int(nil) // truncated toward zero
	if acc == big.Below {
		i.Add(i, big.NewInt(1)) // ceil
	}
	if !i.IsInt64() || i.Sign() < 0 {
		return 0, ErrTimeoutNegative
	}
	return i.Int64(), nil
}

// block registers the running command's waiter, or refuses with
// ErrTooManyBlocked when a limit would be passed. The handler has written
// no reply; the batch stays open until the waiter completes.
func (c *Ctx) block(w *waiter, timeoutMs int64) error {
	a := c.a
	b := &a.blk
	seen := make(map[string]bool, len(w.keys))
	for _, k := range w.keys {
		if !seen[string(k)] {
			seen[string(k)] = true
			w.wkeys = append(w.wkeys, waitKey{c.db, string(k)})
		}
	}
	if len(w.wkeys) > a.cfg.MaxKeysPerWait || b.waiters >= a.cfg.MaxTotalWaiters {
		return ErrTooManyBlocked
	}
	for _, k := range w.wkeys {
		if q := b.queues[k]; q != nil && q.live >= a.cfg.MaxWaitersPerKey {
			return ErrTooManyBlocked
		}
	}
	w.s, w.db, w.resp = c.s, c.db, c.s.resp
	w.hidx, w.oi, w.rec = -1, pendingOut, -1
	// Copies: a waiter does not keep its whole batch's memory alive.
	keys := make([][]byte, len(w.keys))
	for i, k := range w.keys {
		keys[i] = bytes.Clone(k)
	}
	w.keys = keys
	w.dst = bytes.Clone(w.dst)
	cls := w.kind.class()
	for _, k := range w.wkeys {
		q := b.queues[k]
		if q == nil {
			q = &waitQueue{}
			b.queues[k] = q
		}
		l := &q.lanes[cls]
		l.ws = append(l.ws, w)
		l.live++
		q.live++
	}
	if timeoutMs > 0 && timeoutMs <= maxTimeoutMs {
		w.deadline = a.roundStart.Add(time.Duration(timeoutMs) * time.Millisecond)
		heap.Push(&b.timers, w)
	}
	b.waiters++
	c.s.blocked = w
	return nil
}

// unregister takes w out of every queue and the heap and marks it done.
// It reports false if w was already done.
func (a *Actor) unregister(w *waiter) bool {
	if w.done {
		return false
	}
	w.done = true
	b := &a.blk
	cls := w.kind.class()
	for _, k := range w.wkeys {
		q := b.queues[k]
		q.live--
		if q.live == 0 {
			delete(b.queues, k)
			continue
		}
		l := &q.lanes[cls]
		l.live--
		if l.live == 0 {
			clear(l.ws)
			l.ws = l.ws[:0]
		} else {
			l.compact()
		}
	}
	if w.hidx >= 0 {
		heap.Remove(&b.timers, w.hidx)
	}
	b.waiters--
	if w.s.blocked == w {
		w.s.blocked = nil
	}
	return true
}

// complete finishes w with reply, unless it is already done. keyspace says
// whether the reply depends on the round's writes (a failed commit then
// replaces it with an error, as for any command).
func (a *Actor) complete(w *waiter, reply []byte, keyspace bool) {
	if !a.unregister(w) {
		return
	}
	if w.oi >= 0 {
		// Suspended in this very round: its completion is still open.
		r := &a.out[w.oi]
		r.w = nil
		a.outHeld--
		start := len(r.c.Reply)
		r.c.Reply = append(r.c.Reply, reply...)
		rec := &a.recs[w.rec]
		rec.start, rec.end, rec.keyspace = int32(start), int32(len(r.c.Reply)), keyspace
		return
	}
	buf := make([]byte, 0, len(w.held)+len(reply))
	buf = append(append(buf, w.held...), reply...)
	oi := int32(len(a.out))
	a.out = append(a.out, routed{sink: w.s.sink, c: Completion{ConnID: w.s.id, Seq: w.seq, Reply: buf, Charged: w.charged}})
	if len(w.held) > 0 {
		a.recs = append(a.recs, cmdRec{out: oi, start: 0, end: int32(len(w.held))})
	}
	a.recs = append(a.recs, cmdRec{out: oi, start: int32(len(w.held)), end: int32(len(buf)), keyspace: keyspace})
	w.held = nil
}

// cancelWaiter ends w without a reply (its connection is gone or going).
func (a *Actor) cancelWaiter(w *waiter) {
	if !a.unregister(w) {
		return
	}
	if w.oi >= 0 {
		a.out[w.oi].w = nil
		a.out[w.oi].drop = true
	}
	w.held = nil
}

// signalReady notes that key may now hold list elements or sorted-set
// members for its waiters.
func (a *Actor) signalReady(db int, key []byte) {
	b := &a.blk
	if len(b.queues) == 0 {
		return
	}
	k := waitKey{db, string(key)}
	if b.queues[k] == nil || b.readySet[k] {
		return
	}
	b.readySet[k] = true
	b.ready = append(b.ready, k)
}

// signalDB notes every watched key of db as possibly ready (SWAPDB).
func (a *Actor) signalDB(db int) {
	for k := range a.blk.queues {
		if k.db == db {
			a.signalReady(db, []byte(k.key))
		}
	}
}

// serveReady serves the ready keys' waiters, oldest first per key and
// class, while a key has both elements and waiters that take them. Keys
// take turns, each serving up to
// blocking.wakeup_batch_size waiters per turn; keys made ready meanwhile
// (a BLMOVE's destination) join the turns. Every turn ends at least one
// waiter or drops the key, so serving ends.
func (a *Actor) serveReady() {
	b := &a.blk
	defer func() {
		clear(b.readySet)
		b.ready = b.ready[:0]
	}()
	a.st.Now = a.nowMs
	for i := 0; i < len(b.ready); i++ {
		if a.roundErr != nil {
			// The round's writes will be rolled back; nothing more is
			// served from them (the waiters keep waiting).
			return
		}
		k := b.ready[i]
		again := false
		for served := 0; ; served++ {
			q := b.queues[k]
			if q == nil {
				break
			}
			if a.roundErr != nil {
				break
			}
			if served == a.cfg.WakeupBatchSize {
				again = true
				break
			}
			w, err := a.servable(k, q)
			if err != nil {
				a.fail(err)
				break
			}
			if w == nil {
				break
			}
			if !a.serve(w) {
				// Only a storage failure (which dooms the round) gets
				// here: the key is a non-empty list or sorted set among
				// the waiter's keys. Never spin on it.
				if a.roundErr == nil {
					a.log.Error().Int("db", k.db).Msg("a waiter could not be served from a ready key")
				}
				break
			}
		}
		if again {
			b.ready = append(b.ready, k)
		} else {
			delete(b.readySet, k)
		}
	}
}

// servable is the waiter that ready key k serves next: the oldest live one
// of the lane matching what k holds, if k holds elements; nil otherwise
// (k missing, of another type, or no waiter of its class).
func (a *Actor) servable(k waitKey, q *waitQueue) (*waiter, error) {
	key := []byte(k.key)
	if q.lanes[classList].live > 0 {
		n, err := a.st.ListLen(k.db, key)
		switch {
		case err == nil && n > 0:
			return q.lanes[classList].front(), nil
		case err == nil:
			return nil, nil // missing: nothing for anyone
		case !errors.Is(err, storage.ErrWrongType):
			return nil, err
		}
	}
	if q.lanes[classZSet].live > 0 {
		z, err := a.st.OpenColl(k.db, key, storage.TypeZSet)
		switch {
		case errors.Is(err, storage.ErrWrongType):
			return nil, nil
		case err != nil:
			return nil, err
		case z != nil && z.Len > 0:
			return q.lanes[classZSet].front(), nil
		}
	}
	return nil, nil
}

// fail records a storage error that dooms the round.
func (a *Actor) fail(err error) {
	if _, fatal := replyFor(err); fatal && a.roundErr == nil {
		a.roundErr = err
	}
}

// serve completes w from the first of its keys, in its own order, that
// holds list elements (sorted-set members for the sorted-set kinds), and
// reports whether it did. A key that now holds another type is skipped (it
// was not one when w blocked).
func (a *Actor) serve(w *waiter) bool {
	out := proto.Writer{Proto: w.resp}
	switch w.kind {
	case blockPop, blockMPop:
		count := int64(1)
		if w.kind == blockMPop {
			count = w.count
		}
		for _, key := range w.keys {
			vals, err := a.st.ListPop(w.db, key, w.from, count)
			if errors.Is(err, storage.ErrWrongType) {
				continue
			}
			if err != nil {
				a.fail(err)
				r, _ := replyFor(err)
				out.Error(r)
				a.complete(w, out.Buf, true)
				return true
			}
			if len(vals) == 0 {
				continue
			}
			writePopped(&out, w.kind, key, vals)
			a.complete(w, out.Buf, true)
			return true
		}
		return false
	case blockMove:
		src := w.keys[0]
		n, err := a.st.ListLen(w.db, src)
		if err != nil && !errors.Is(err, storage.ErrWrongType) {
			a.fail(err)
		}
		if n == 0 {
			return false
		}
		v, ok, err := a.st.ListMove(w.db, src, w.dst, w.from, w.to)
		switch {
		case errors.Is(err, storage.ErrWrongType):
			// The destination holds another type: like Redis, the waiter
			// gets WRONGTYPE and the element stays where it was.
			out.Error(string(ErrWrongType))
		case err != nil:
			a.fail(err)
			r, _ := replyFor(err)
			out.Error(r)
		case !ok:
			return false
		default:
			out.Bulk(v)
			a.signalReady(w.db, w.dst)
		}
		a.complete(w, out.Buf, true)
		return true
	case blockZPop, blockZMPop:
		for _, key := range w.keys {
			popped, ok, err := zpopKey(a.st, w.db, key, w.max, w.count)
			if errors.Is(err, storage.ErrWrongType) {
				continue
			}
			if err != nil {
				a.fail(err)
				r, _ := replyFor(err)
				out.Error(r)
				a.complete(w, out.Buf, true)
				return true
			}
			if !ok || len(popped) == 0 {
				continue
			}
			writeZPopped(&out, w.kind, key, popped)
			a.complete(w, out.Buf, true)
			return true
		}
		return false
	}
	return false
}

// writePopped writes a blocking pop's reply.
func writePopped(w *proto.Writer, kind blockKind, key []byte, vals [][]byte) {
	w.Array(2)
	w.Bulk(key)
	if kind == blockMPop {
		w.Array(len(vals))
	}
	for _, v := range vals {
		w.Bulk(v)
	}
}

// timeoutReply is what a waiter gets when its time runs out (or CLIENT
// UNBLOCK TIMEOUT): Redis's null array, for every blocking list and
// sorted-set command.
func timeoutReply(w *waiter) []byte {
	out := proto.Writer{Proto: w.resp}
	out.NullArray()
	return out.Buf
}

// expireWaiters times out every waiter whose deadline has passed.
func (a *Actor) expireWaiters(now time.Time) {
	b := &a.blk
	for len(b.timers) > 0 && !b.timers[0].deadline.After(now) {
		w := b.timers[0]
		a.complete(w, timeoutReply(w), false)
	}
}

// timeoutDue reports whether a waiter's deadline has passed.
func (a *Actor) timeoutDue(now time.Time) bool {
	t := a.blk.timers
	return len(t) > 0 && !t[0].deadline.After(now)
}

// armTimer sets the actor's one timer to the earliest deadline.
func (a *Actor) armTimer() {
	b := &a.blk
	if len(b.timers) == 0 {
		if !b.timerAt.IsZero() {
			b.timer.Stop()
			b.timerAt = time.Time{}
		}
		return
	}
	next := b.timers[0].deadline
	if next.Equal(b.timerAt) {
		return
	}
	b.timerAt = next
	b.timer.Reset(max(time.Until(next), 0))
}

// linkSuspended ties a waiter registered by the command just run to its
// batch's completion, which stays in a.out (held) until the round ends.
func (a *Actor) linkSuspended(s *session, oi int32) {
	w := s.blocked
	if w == nil || w.oi != pendingOut {
		return
	}
	w.oi, w.rec = oi, int32(len(a.recs)-1)
	w.seq = a.out[oi].c.Seq
	a.out[oi].w = w
	a.outHeld++
}

// settleHeld runs at the end of a round, after its commit (failed says
// whether it failed). Batches suspended in the round keep waiting: their
// replies so far move to their waiters. If the commit failed, their
// waiters are cancelled instead, and the batches answered now with the
// errors failRound put in place. Completions of cancelled waiters go
// nowhere.
func (a *Actor) settleHeld(failed bool) {
	if a.outHeld == 0 {
		return
	}
	j := 0
	for _, r := range a.out {
		if r.drop {
			continue
		}
		if w := r.w; w != nil {
			w.oi, w.rec = -1, -1
			if !failed {
				w.held, w.charged = r.c.Reply, r.c.Charged
				continue
			}
			a.unregister(w)
			r.w = nil
		}
		a.out[j] = r
		j++
	}
	clear(a.out[j:])
	a.out = a.out[:j]
	a.outHeld = 0
}

// CLIENT UNBLOCK client-id [TIMEOUT|ERROR]
func cmdClientUnblock(c *Ctx) error {
	if len(c.args) > 4 {
		return ReplyError("ERR unknown subcommand or wrong number of arguments for '" + cString(c.args[1], 128) + "'. Try CLIENT HELP.")
	}
	asError := false
	if len(c.args) == 4 {
		switch {
		case c.argEq(3, "timeout"):
		case c.argEq(3, "error"):
			asError = true
		default:
			return ReplyError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
		}
	}
	id, err := c.intArg(2)
	if err != nil {
		return err
	}
	target := c.a.sessions[uint64(id)]
	if id <= 0 || target == nil || target.blocked == nil || target.blocked.kind == blockJob {
		// A client waiting for SAVE is not a blocked client in Redis's
		// sense: CLIENT UNBLOCK does not apply to it.
		c.w.Int(0)
		return nil
	}
	w := target.blocked
	reply := timeoutReply(w)
	if asError {
		out := proto.Writer{Proto: w.resp}
		out.Error(string(ErrUnblocked))
		reply = out.Buf
	}
	c.a.complete(w, reply, false)
	c.w.Int(1)
	return nil
}
