package actor

import (
	"bytes"
	"container/heap"
	"math/big"
	"time"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

// Blocked clients, in the actor (docs/architecture.md, "Blocked clients",
// has the whole model and the tests that pin it).
//
// A blocking command first tries its work as its non-blocking form would.
// When it finds nothing to take, it parks: it registers a waiter and leaves
// its batch's reply unfinished, so the batch is suspended (the loop reads
// nothing more from that connection until the reply comes, as Redis does
// with a blocked client). The waiter carries the attempt its handler made,
// as a retry bound with whatever the handler parsed (the list end, the
// count, the destination), and the keys it watches. It is queued, oldest
// first, on every one of those keys, and, with a timeout, in one deadline
// heap that the actor's single timer follows.
//
// This file knows the waiters' bookkeeping, not their commands: queues,
// deadlines, fairness, limits, cancellation and the loop that serves ready
// keys by retrying waiters. What a command takes and what it answers lives
// with the command (lists.go, zsets.go, streams.go), in the one function
// that both its handler and its waiter run.
//
// A waiter completes at most once, by whichever comes first: a retry that
// finds what it waits for, its deadline, CLIENT UNBLOCK, or its connection
// ending (disconnect, CLIENT KILL), which cancels it without a reply.
// Completing unregisters it everywhere at once, so the others find nothing
// and do nothing.
//
// Each key queues its waiters in lanes, one per type of value they wait
// for (lists for BLPOP, sorted sets for BZPOPMIN, ...). A key serves the
// lane of the type it holds: waiters of another type keep waiting in their
// own lane, so they never hold up the ones that can be served, and a key of
// a type nobody waits for serves no one, as in Redis.
//
// A change that may make something available on a key marks it ready (the
// keys touched step, touched.go, which runs over what every command
// changed); after every command the actor serves the ready keys before
// anything else runs.
// A key's turn retries the waiters of its lane oldest first, for as long as
// the key still holds a value of the lane's type. The loop counts nothing:
//   - a waiter that consumes (a pop, a move) takes what it needs; when the
//     key is emptied it is gone, and the turn ends, so a write wakes at most
//     as many consuming waiters as it made elements available;
//   - a waiter that reads without consuming (an XREAD-style reader) leaves
//     the key as it is, so the turn goes on to the next waiter, and every
//     waiter of the lane is served, wakeup_batch_size per turn;
//   - a waiter whose retry finds nothing for it keeps waiting, in its
//     place, and the turn goes on past it (a list or sorted-set waiter
//     never does: the ready key is one of its own).
// A retry re-scans its own keys in its own order, passing over a key that
// now holds another type (it held none when the client parked).
//
// The write, the wake and the retry are therefore one step of one round:
// no other client can take the element in between, and what the retry
// writes commits with the round, so the woken reply is as durable as any
// other (it joins the round's completions, which leave after the commit,
// and after the fsync with durability "always").

// retry is a blocking command's attempt at its work, bound by its handler
// to what the handler parsed. It looks at keys (the command's, in the
// client's order) and, when it finds what it waits for, takes it, writes
// the command's reply to c.w and reports done; an error is the command's
// error reply. The handler runs it for the client first; a parked waiter
// keeps it, and the serving loop runs it again in a Ctx of the waiter's own
// (its session, database and protocol, woken set, and the waiter's copy
// of the command's arguments, which the retry does not read). It must not
// keep the batch's arguments: keys are the waiter's copies, and anything
// else it binds must be a copy too.
type retry func(c *Ctx, keys [][]byte) (done bool, err error)

// tryOnce runs try for the client and answers with none when it finds
// nothing: the non-blocking forms (LMPOP, LMOVE, ZMPOP), and a blocking
// command that may not block.
func (c *Ctx) tryOnce(keys [][]byte, try retry, none func(*proto.Writer)) error {
	done, err := try(c, keys)
	if err == nil && !done {
		none(c.w)
	}
	return err
}

// tryOrPark runs a blocking command whose other arguments are parsed: it
// parses the timeout at args[timeoutArg], runs try for the client, and when
// try finds nothing parks the client on keys, in the lane of type t, to be
// retried when one of them is ready. A command that may not block (see
// Ctx.noBlock) answers with none instead, as its non-blocking form would.
func (c *Ctx) tryOrPark(timeoutArg int, t storage.Type, keys [][]byte, try retry, none func(*proto.Writer)) error {
	ms, err := parseTimeout(c.args[timeoutArg])
	if err != nil {
		return err
	}
	if c.noBlock {
		return c.tryOnce(keys, try, none)
	}
	done, err := try(c, keys)
	if err != nil || done {
		return err
	}
	return c.block(&waiter{typ: t, keys: keys, retry: try}, ms)
}

// waitKey names a watched key: its database and its bytes.
type waitKey struct {
	db  int
	key string
}

// waiter is one blocked client. A waiter with no retry waits for an
// offload job (SAVE), on no key; CLIENT UNBLOCK leaves it alone.
type waiter struct {
	s     *session
	cmd   *Command
	db    int
	args  [][]byte     // the command as sent, recorded when a retry serves it (effects.go)
	keys  [][]byte     // as the client gave them, scanned in this order
	wkeys []waitKey    // the distinct keys, as queued
	typ   storage.Type // the lane it queues in: the type it waits for
	retry retry

	deadline time.Time // zero: no timeout
	hidx     int       // index in the deadline heap; -1 when not in it
	done     bool

	// onTimeout, when set, is the reply at the deadline (WAIT's count).
	onTimeout func() []byte

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

// waitQueue is one key's waiters, in one lane per type waited for; live
// counts them all (blocking.max_waiters_per_key applies to the key).
type waitQueue struct {
	lanes []lane
	live  int
}

// lane is the lane of type t, or nil.
func (q *waitQueue) lane(t storage.Type) *lane {
	for i := range q.lanes {
		if q.lanes[i].typ == t {
			return &q.lanes[i]
		}
	}
	return nil
}

// lane is the waiters of one type on one key, oldest first. Completed
// waiters are skipped and dropped lazily; live counts the others.
type lane struct {
	typ  storage.Type
	ws   []*waiter
	live int
}

// front is the oldest live waiter.
func (q *lane) front() *waiter { return q.nth(0) }

// nth is the live waiter that has n live ones before it, or nil. The
// completed waiters in front of the oldest live one are dropped.
func (q *lane) nth(n int) *waiter {
	for i, w := range q.ws {
		if !w.done {
			clear(q.ws[:i])
			q.ws = q.ws[i:]
			break
		}
	}
	for _, w := range q.ws {
		if w.done {
			continue
		}
		if n == 0 {
			return w
		}
		n--
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
	w.s, w.cmd, w.db, w.resp = c.s, c.cmd, c.db, c.s.resp
	w.args = cloneArgs(c.args)
	w.hidx, w.oi, w.rec = -1, pendingOut, -1
	// Copies: a waiter does not keep its whole batch's memory alive.
	keys := make([][]byte, len(w.keys))
	for i, k := range w.keys {
		keys[i] = bytes.Clone(k)
	}
	w.keys = keys
	for _, k := range w.wkeys {
		q := b.queues[k]
		if q == nil {
			q = &waitQueue{}
			b.queues[k] = q
		}
		l := q.lane(w.typ)
		if l == nil {
			q.lanes = append(q.lanes, lane{typ: w.typ})
			l = &q.lanes[len(q.lanes)-1]
		}
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
	for _, k := range w.wkeys {
		q := b.queues[k]
		q.live--
		if q.live == 0 {
			delete(b.queues, k)
			continue
		}
		l := q.lane(w.typ)
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

// signalReady notes that key may now hold something for its waiters. The
// keys touched step calls it for every key a change may have added to
// (touched.go); nobody needs to know whether anyone waits.
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

// serveReady serves the ready keys' waiters. Keys take turns (serveKey),
// each serving up to blocking.wakeup_batch_size waiters per turn; keys made
// ready meanwhile (a BLMOVE's destination) join the turns. A key goes round
// again only after a turn that served that many, so serving ends.
func (a *Actor) serveReady() {
	b := &a.blk
	defer func() {
		clear(b.readySet)
		b.ready = b.ready[:0]
		a.keysTouched() // keys that looking at ready keys found expired
	}()
	a.st.Now = a.nowMs
	for i := 0; i < len(b.ready); i++ {
		if a.roundErr != nil {
			// The round's writes will be rolled back; nothing more is
			// served from them (the waiters keep waiting).
			return
		}
		k := b.ready[i]
		if a.serveKey(k) {
			b.ready = append(b.ready, k)
		} else {
			delete(b.readySet, k)
		}
	}
}

// serveKey is one turn of ready key k: it retries the waiters of the lane
// of the type k holds, oldest first, while k still holds a value of that
// type, until wakeup_batch_size of them are served. It reports whether k
// wants another turn (it served that many). Waiters whose retry found
// nothing stay in front of the lane, and the turn goes on past them: within
// a turn only the waiter being retried can complete, so the first passed
// live waiters are the ones passed.
func (a *Actor) serveKey(k waitKey) (again bool) {
	b := &a.blk
	served, passed := 0, 0
	for {
		q := b.queues[k]
		if q == nil || a.roundErr != nil {
			return false
		}
		if served == a.cfg.WakeupBatchSize {
			return true
		}
		l, err := a.readyLane(k, q)
		if err != nil {
			a.fail(err)
			return false
		}
		var w *waiter
		if l != nil {
			w = l.nth(passed)
		}
		if w == nil {
			return false
		}
		if a.retryWaiter(w) {
			served++
		} else {
			passed++
		}
	}
}

// readyLane is the lane that k serves now: the one of the type of value k
// holds; nil when k is missing or nobody waits for its type. A stored list
// or sorted set is never empty (the write that empties one deletes its
// key), so that k exists is that it has something to take.
//
// A key that is no stream (any more) but has no lane of its own type to
// serve serves its stream lane: a reader through a consumer group blocked
// on it must hear that its stream is gone (its retry fails), while an XREAD
// reader's retry finds nothing and it keeps waiting.
func (a *Actor) readyLane(k waitKey, q *waitQueue) (*lane, error) {
	m, ok, err := a.st.Lookup(k.db, []byte(k.key))
	if err != nil {
		return nil, err
	}
	if ok {
		if l := q.lane(m.Type); l != nil || m.Type == storage.TypeStream {
			return l, nil
		}
	}
	return q.lane(storage.TypeStream), nil
}

// fail records a storage error that dooms the round.
func (a *Actor) fail(err error) {
	if _, fatal := replyFor(err); fatal && a.roundErr == nil {
		a.roundErr = err
	}
}

// retryWaiter runs w's retry, in a Ctx of w's own, and completes w with
// what it wrote, or with the error it met (a storage failure also dooms
// the round). It reports whether w completed; if not, w keeps waiting.
func (a *Actor) retryWaiter(w *waiter) bool {
	out := proto.Writer{Proto: w.resp}
	f := a.enter()
	defer a.leave()
	c := &f.ctx
	// args are the waiter's copy of its command: the retry reads none of
	// them (it is bound to what its handler parsed); they are what the
	// retry is recorded as (effects.go).
	*c = Ctx{a: a, f: f, s: w.s, cmd: w.cmd, args: w.args, w: &out, st: a.st, db: w.db, now: a.nowMs, woken: true}
	// What the retry changed is acted on like a command's: a BLMOVE's
	// destination, made ready, joins the keys being served.
	defer a.keysTouched()
	done, err := w.retry(c, w.keys)
	err = c.end(err)
	if err != nil {
		a.fail(err)
		r, _ := replyFor(err)
		out.Buf = out.Buf[:0] // drop anything half written
		out.Error(r)
		// Counted as Redis counts a blocked client answered with an
		// error (a stream or group gone): INFO errorstats, and a
		// failed call of its command.
		a.countError(r)
		a.cmdStats[w.cmd.idx].failed++
	} else if !done {
		return false
	}
	a.complete(w, out.Buf, true)
	return true
}

// timeoutReply is what a waiter gets when its time runs out (or CLIENT
// UNBLOCK TIMEOUT): Redis's null array, whatever the command (BLMOVE's
// too, although its other null replies are null bulks).
func timeoutReply(w *waiter) []byte {
	if w.onTimeout != nil {
		return w.onTimeout()
	}
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
	var next time.Time
	if len(b.timers) > 0 {
		next = b.timers[0].deadline
	}
	if p := &a.pause; p.on && (next.IsZero() || p.until.Before(next)) {
		next = p.until // the end of a CLIENT PAUSE (pause.go)
	}
	if next.IsZero() {
		if !b.timerAt.IsZero() {
			b.timer.Stop()
			b.timerAt = time.Time{}
		}
		return
	}
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

// disconnectBlocked ends the wait of every blocked client with reply, and
// closes its connection after it: Redis 7.0's disconnectAllBlockedClients,
// run when the server becomes a replica (REPLICAOF, FAILOVER), since what
// they wait for is a master's. Blocked clients are those CLIENT UNBLOCK
// applies to (BLPOP and the other keyed waits, WAIT); a client waiting for
// SAVE or held by CLIENT PAUSE is not one (Redis's BLOCKED_POSTPONE is
// skipped there too: the held command runs once the pause ends, against
// the replica).
func (a *Actor) disconnectBlocked(reply ReplyError) {
	for _, s := range a.sessions {
		w := s.blocked
		if w == nil || (w.retry == nil && w.onTimeout == nil) {
			continue
		}
		out := proto.Writer{Proto: w.resp}
		out.Error(string(reply))
		a.countError(string(reply))
		oi := w.oi // its batch's completion, when suspended in this round
		a.complete(w, out.Buf, false)
		if oi < 0 {
			oi = int32(len(a.out) - 1) // the completion complete queued
		}
		a.out[oi].c.Close = true
		s.closing = true
	}
}

// CLIENT UNBLOCK client-id [TIMEOUT|ERROR]
func cmdClientUnblock(c *Ctx) error {
	if len(c.args) > 4 {
		return errSubcommandArgs(c.args[1])
	}
	asError := false
	if len(c.args) == 4 {
		switch {
		case c.argEq(3, "timeout"):
		case c.argEq(3, "error"):
			asError = true
		default:
			return ErrUnblockReason
		}
	}
	id, err := c.intArg(2)
	if err != nil {
		return err
	}
	target := c.a.sessions[uint64(id)]
	if id <= 0 || target == nil || target.blocked == nil || (target.blocked.retry == nil && target.blocked.onTimeout == nil) {
		// A client waiting for SAVE is not a blocked client in Redis's
		// sense: CLIENT UNBLOCK does not apply to it. WAIT (onTimeout) is:
		// it gets its timeout reply, the replicas acknowledged so far.
		c.w.Int(0)
		return nil
	}
	w := target.blocked
	reply := timeoutReply(w)
	if asError {
		out := proto.Writer{Proto: w.resp}
		out.Error(string(ErrUnblocked))
		reply = out.Buf
		c.a.countError(string(ErrUnblocked))
	}
	// Redis counts the unblocked command as failed either way (its
	// updateStatsOnUnblock is told there were errors).
	c.a.cmdStats[w.cmd.idx].failed++
	c.a.complete(w, reply, false)
	c.w.Int(1)
	return nil
}
