package loop

import (
	"context"
	"errors"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/cellar-db/cellar/actor"
	"github.com/cellar-db/cellar/proto"
)

// connState is a connection's life, as its loop sees it.
type connState uint8

const (
	stateOpen    connState = iota // reading, parsing, replying
	stateClosing                  // no more input; replies owed are still written, then close
	stateClosed                   // torn down; nothing more happens
)

// conn is the loop's state for one connection. Only its loop touches it.
type conn struct {
	id     uint64
	lp     *eventLoop
	gc     gnet.Conn
	state  connState
	parser *proto.Parser
	args   [][]byte // parser scratch
	need   int      // inbound bytes to wait for before parsing again
	held   int64    // inbound bytes as last counted in Server.held
	// readOff: the socket is out of the epoll set's read interest;
	// readUnsure: gnet read it meanwhile, so that may no longer hold
	// (readpause.go).
	readOff, readUnsure bool

	nextSeq  uint64             // the sequence number of the last batch sent
	expect   uint64             // the next sequence number to write
	early    []actor.Completion // completions that arrived before their turn
	inflight int                // batches sent and not yet written
	barrier  uint64             // seq of an outstanding blocking command, 0 if none
	final    *actor.Completion  // a reply the loop itself owes last (protocol error)
	closeErr error              // why the connection is closing, for the log

	// stalled: waiting (in eventLoop.stalled) for the actor's backlog to
	// fall under its limit.
	stalled bool

	// outPaused: unsent output is above the soft limit (since outSince);
	// input is not read until it drains.
	outPaused bool
	outSince  time.Time

	// inTraffic is set while gnet's OnTraffic runs for this connection: a
	// close requested then is returned to gnet as an action (wantClose)
	// rather than done re-entrantly.
	inTraffic, wantClose bool
}

// readable parses and submits what is buffered, unless the connection must
// wait; it accounts for the input it goes on holding, and stops reading the
// socket while the connection waits with input held (readpause.go).
func (c *conn) readable() {
	wait := c.parse()
	c.account(wait)
	if c.state == stateOpen {
		c.setReading(!wait || c.held == 0)
	}
}

// parse parses and submits what is buffered, unless the connection must
// wait (closing, too many batches in flight, a blocking command pending,
// the actor behind); wait reports whether input after what it parsed must
// wait for one of those.
func (c *conn) parse() (wait bool) {
	if c.state != stateOpen || c.lp.srv.stopping.Load() {
		return true
	}
	if c.inflight >= c.lp.srv.cfg.MaxInflight || c.barrier != 0 || c.outPaused {
		return true
	}
	n := c.gc.InboundBuffered()
	if n < c.need {
		// Part of a command: nothing for the actor yet, so the backlog is
		// no reason to stop receiving it (client_query_buffer_limit and
		// proto_max_bulk_len bound it).
		return false
	}
	if c.lp.srv.act.Backlog() > c.lp.srv.cfg.MaxBacklog {
		if !c.stalled {
			c.stalled = true
			c.lp.stalled = append(c.lp.stalled, c.id)
			c.lp.stalledN.Add(1)
		}
		return true
	}
	if n == 0 {
		return false
	}
	if n > c.lp.srv.cfg.MaxQueryBuffer {
		c.lp.srv.log.Warn().Uint64("client", c.id).Int("bytes", n).
			Msg("closing client that reached max query buffer length")
		c.closeNow(errQueryBuffer)
		return true
	}
	buf, err := c.gc.Peek(-1)
	if err != nil {
		return false
	}
	c.lp.srv.netIn.Add(uint64(len(buf)))
	b := c.lp.newBatch()
	consumed := 0
	var perr error
	for consumed < len(buf) {
		var n, need int
		c.args, n, need, perr = c.parser.Parse(buf[consumed:], c.args)
		if perr != nil {
			break
		}
		if n == 0 {
			c.need = need
			break
		}
		consumed += n
		if len(c.args) == 0 {
			continue
		}
		if actor.IsBlocking(actor.Lookup(c.args[0])) {
			// A blocking command travels in a batch of its own, so the
			// replies to the commands before it leave without waiting for
			// it; and, like Redis with a blocked client, nothing more is
			// read until it has its reply.
			if len(b.ends) > 0 {
				c.submit(b)
				b = c.lp.newBatch()
			}
			b.add(c.args)
			c.barrier = c.nextSeq + 1
			c.need = 0 // what follows has not been looked at
			break
		}
		b.add(c.args)
	}
	if consumed == len(buf) {
		c.need = 0
	}
	if consumed > 0 {
		// Never Discard(0): gnet treats n <= 0 as "discard everything".
		c.gc.Discard(consumed)
	}
	if len(b.ends) > 0 {
		c.submit(b)
	} else {
		c.lp.freeBatch(b)
	}
	if perr != nil {
		c.protocolError(perr)
	}
	return c.barrier != 0 || c.inflight >= c.lp.srv.cfg.MaxInflight
}

// submit sends a batch to the actor under the next sequence number.
func (c *conn) submit(b *batchBuilder) {
	c.nextSeq++
	c.inflight++
	c.lp.srv.act.Submit(b.finish(c.id, c.nextSeq))
	c.lp.freeBatch(b)
}

// protocolError replies with Redis's protocol error after the replies still
// owed, then closes (as Redis does).
func (c *conn) protocolError(err error) {
	var pe proto.ProtocolError
	if !errors.As(err, &pe) {
		pe = proto.ProtocolError(err.Error())
	}
	c.nextSeq++
	c.final = &actor.Completion{ConnID: c.id, Seq: c.nextSeq, Reply: []byte("-ERR " + string(pe) + "\r\n"), Close: true}
	c.state = stateClosing
	c.closeErr = pe
	c.deliver(*c.final)
}

// deliver puts a completion through the reply FIFO: it is written when every
// batch before it has been, and waits otherwise.
func (c *conn) deliver(cmp actor.Completion) {
	if c.state == stateClosed {
		return
	}
	if cmp.Kill {
		c.closeNow(errKilled)
		return
	}
	if cmp.Seq != c.expect {
		i := sort.Search(len(c.early), func(i int) bool { return c.early[i].Seq >= cmp.Seq })
		c.early = append(c.early, actor.Completion{})
		copy(c.early[i+1:], c.early[i:])
		c.early[i] = cmp
		return
	}
	c.write(cmp)
	for len(c.early) > 0 && c.early[0].Seq == c.expect && c.state != stateClosed {
		next := c.early[0]
		c.early = c.early[1:]
		c.write(next)
	}
	if c.state == stateOpen {
		c.readable()
	}
}

// account brings the connection's share of Server.held up to date (the
// input it holds while it waits; a command still arriving is bounded per
// connection instead), and closes the connection holding the most on this
// loop when the total is over Config.MaxHeldInput.
func (c *conn) account(wait bool) {
	if c.state == stateClosed {
		return
	}
	var n int64
	if wait {
		n = int64(c.gc.InboundBuffered())
	}
	d := n - c.held
	if d == 0 {
		return
	}
	c.held = n
	srv := c.lp.srv
	if total := srv.held.Add(d); d > 0 && total > srv.cfg.MaxHeldInput {
		c.lp.evictLargest(total)
	}
}

// evictLargest closes the open connection of this loop that holds the most
// unparsed input.
func (lp *eventLoop) evictLargest(total int64) {
	var big *conn
	for _, c := range lp.conns {
		if c.state == stateOpen && (big == nil || c.held > big.held) {
			big = c
		}
	}
	if big == nil || big.held == 0 {
		return
	}
	lp.srv.evicted.Add(1)
	lp.srv.log.Warn().Uint64("client", big.id).Int64("bytes", big.held).Int64("held_total", total).
		Msg("closing the client holding the most input: input held for all clients is over max_held_input")
	big.closeNow(errHeldInput)
}

// write sends one batch's replies and advances the FIFO.
func (c *conn) write(cmp actor.Completion) {
	c.expect++
	if c.final == nil || cmp.Seq != c.final.Seq {
		c.inflight--
	}
	if c.barrier != 0 && cmp.Seq >= c.barrier {
		c.barrier = 0
	}
	if len(cmp.Reply) > 0 {
		c.lp.srv.netOut.Add(uint64(len(cmp.Reply)))
		if _, err := c.gc.Write(cmp.Reply); err != nil {
			return // gnet closed the connection; OnClose tears it down
		}
	}
	if c.state == stateClosed {
		return
	}
	cfg := &c.lp.srv.cfg
	if out := int64(c.gc.OutboundBuffered()); cfg.OutputHardLimit > 0 && out > cfg.OutputHardLimit {
		c.lp.srv.log.Warn().Uint64("client", c.id).Int64("bytes", out).
			Msg("closing client that reached the output buffer hard limit")
		c.closeNow(errOutputBuffer)
		return
	} else if cfg.OutputSoftLimit > 0 && out > cfg.OutputSoftLimit && !c.outPaused {
		c.outPaused, c.outSince = true, time.Now()
		c.lp.outPaused = append(c.lp.outPaused, c.id)
		c.lp.outPausedN.Add(1)
	}
	if cmp.Close {
		c.closeNow(nil)
	}
}

var (
	errQueryBuffer  = errors.New("query buffer limit")
	errOutputBuffer = errors.New("output buffer limit")
	errKilled       = errors.New("killed by CLIENT KILL")
	errHeldInput    = errors.New("max_held_input: holding the most input")
)

// closeNow asks gnet to close the connection; gnet then calls OnClose,
// which tears it down. Unsent replies in gnet's buffer are flushed first
// as far as the socket takes them.
func (c *conn) closeNow(reason error) {
	if c.state == stateClosed {
		return
	}
	if c.closeErr == nil {
		c.closeErr = reason
	}
	c.state = stateClosing
	if c.inTraffic {
		c.wantClose = true
		return
	}
	c.lp.el.Close(c.gc)
}

// teardown is the single cleanup routine, run once from gnet's OnClose.
// Canonical order: cancel the actor-side session (its waiters go with it),
// release replies still owed, free buffers, update counters, log.
func (c *conn) teardown(err error) {
	if c.state == stateClosed {
		return
	}
	c.state = stateClosed
	srv := c.lp.srv
	srv.act.Closed(c.id)
	delete(c.lp.conns, c.id)
	srv.held.Add(-c.held)
	c.held = 0
	c.early, c.final = nil, nil
	c.args, c.parser = nil, nil
	srv.clients.Add(-1)
	// A connection paused on its output leaves outPaused at the next check.
	if e := srv.log.Debug(); e.Enabled() {
		if err == nil {
			err = c.closeErr
		}
		if errors.Is(err, io.EOF) {
			err = nil
		}
		e.Uint64("client", c.id).AnErr("reason", err).Msg("connection closed")
	}
}

// eventLoop is Cellar's state for one gnet event loop: its connections and
// the mailbox through which completions reach them.
type eventLoop struct {
	srv      *Server
	el       gnet.EventLoop
	conns    map[uint64]*conn // loop goroutine only
	stalled  []uint64         // connections waiting for the actor to catch up
	stalledN atomic.Int64     // len(stalled), for the ticker
	batches  []*batchBuilder  // free list, loop goroutine only

	outPaused  []uint64     // connections paused on their output
	outPausedN atomic.Int64 // len(outPaused), for the ticker
	checkFn    gnet.RunnableFunc
	epfd       int  // the loop's epoll descriptor, -1 if unknown (readpause.go)
	epChecked  bool // epfd was looked up

	mu        sync.Mutex
	mail      []actor.Completion
	spare     []actor.Completion
	scheduled bool
	drainFn   gnet.RunnableFunc
}

// Deliver is the counting mailbox's notify: completions are appended, and
// the doorbell rings only if no drain is already scheduled. Safe from any
// goroutine; never blocks.
func (lp *eventLoop) Deliver(cs []actor.Completion) {
	lp.mu.Lock()
	lp.mail = append(lp.mail, cs...)
	ring := !lp.scheduled
	lp.scheduled = true
	lp.mu.Unlock()
	if ring {
		if err := lp.el.Execute(context.Background(), lp.drainFn); err != nil {
			// The engine is shutting down; nobody will write these.
			lp.mu.Lock()
			lp.scheduled = false
			lp.mail = lp.mail[:0]
			lp.mu.Unlock()
		}
	}
}

// drain is the mailbox's wait: on the loop goroutine, it takes completions
// until the mailbox is empty, and only then lets the next Deliver ring.
func (lp *eventLoop) drain(context.Context) error {
	lp.srv.drainRuns.Add(1)
	for {
		lp.mu.Lock()
		if len(lp.mail) == 0 {
			lp.scheduled = false
			lp.mu.Unlock()
			break
		}
		mail := lp.mail
		lp.mail = lp.spare[:0]
		lp.mu.Unlock()
		for i := range mail {
			if c := lp.conns[mail[i].ConnID]; c != nil {
				c.deliver(mail[i])
			}
			mail[i] = actor.Completion{}
		}
		lp.spare = mail[:0]
	}
	lp.resumeStalled()
	return nil
}

// resumeStalled lets the connections that stalled on the actor's backlog go
// on, once it is under its limit. It runs after each mailbox drain and from
// the ticker (a loop may have nothing in flight to drain).
func (lp *eventLoop) resumeStalled() {
	if len(lp.stalled) == 0 || lp.srv.act.Backlog() > lp.srv.cfg.MaxBacklog {
		return
	}
	stalled := lp.stalled
	lp.stalled = nil
	lp.stalledN.Store(0)
	for _, id := range stalled {
		if c := lp.conns[id]; c != nil {
			c.stalled = false
			c.readable()
		}
	}
}

// check runs on the loop every tickEvery while connections wait: it resumes
// those stalled on the actor's backlog once it is low again, resumes those
// whose output drained below the soft limit, and closes those that stayed
// above it for the soft limit time.
func (lp *eventLoop) check(context.Context) error {
	lp.resumeStalled()
	cfg := &lp.srv.cfg
	keep := lp.outPaused[:0]
	now := time.Now()
	for _, id := range lp.outPaused {
		c := lp.conns[id]
		if c == nil || c.state == stateClosed {
			continue
		}
		switch out := int64(c.gc.OutboundBuffered()); {
		case out <= cfg.OutputSoftLimit:
			c.outPaused = false
			c.readable()
		case cfg.OutputSoftTime > 0 && now.Sub(c.outSince) > cfg.OutputSoftTime:
			lp.srv.log.Warn().Uint64("client", c.id).Int64("bytes", out).Dur("for", now.Sub(c.outSince)).
				Msg("closing client that stayed above the output buffer soft limit")
			c.outPaused = false
			c.closeNow(errOutputBuffer)
		default:
			keep = append(keep, id)
		}
	}
	lp.outPaused = keep
	lp.outPausedN.Store(int64(len(keep)))
	return nil
}

// batchBuilder gathers the commands of one read, copying their arguments
// into one arena: the one place bytes cross from the loop to the actor.
type batchBuilder struct {
	arena []byte
	offs  []int32 // start,end of every argument in arena
	ends  []int32 // per command: index of its last argument + 1
}

func (lp *eventLoop) newBatch() *batchBuilder {
	if n := len(lp.batches); n > 0 {
		b := lp.batches[n-1]
		lp.batches = lp.batches[:n-1]
		return b
	}
	return &batchBuilder{}
}

func (lp *eventLoop) freeBatch(b *batchBuilder) {
	b.arena, b.offs, b.ends = b.arena[:0], b.offs[:0], b.ends[:0]
	if cap(b.arena) > 1<<20 {
		b.arena = nil
	}
	lp.batches = append(lp.batches, b)
}

func (b *batchBuilder) add(args [][]byte) {
	for _, a := range args {
		start := len(b.arena)
		b.arena = append(b.arena, a...)
		b.offs = append(b.offs, int32(start), int32(len(b.arena)))
	}
	b.ends = append(b.ends, int32(len(b.offs)/2))
}

// finish makes the actor's Batch: its own copy of the arguments, in one
// allocation for the bytes and one for the slices.
func (b *batchBuilder) finish(id, seq uint64) *actor.Batch {
	arena := make([]byte, len(b.arena))
	copy(arena, b.arena)
	args := make([][]byte, len(b.offs)/2)
	for i := range args {
		s, e := b.offs[2*i], b.offs[2*i+1]
		args[i] = arena[s:e:e]
	}
	ends := make([]int32, len(b.ends))
	copy(ends, b.ends)
	bytes := int64(len(arena) + 24*len(args) + 4*len(ends) + 128)
	return &actor.Batch{ConnID: id, Seq: seq, Args: args, Ends: ends, Bytes: bytes}
}
