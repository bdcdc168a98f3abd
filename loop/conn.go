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
	addr   string // the client's address: the peer's, or a PROXY header's
	lp     *eventLoop
	gc     gnet.Conn
	state  connState
	parser *proto.Parser
	args   [][]byte // parser scratch
	need   int      // inbound bytes to wait for before parsing again
	big    []byte   // a large request being received (receiveBig)
	mem    *actor.ClientMem
	// authed is whether the client has authenticated (shared with the
	// actor, which sets it): until it has, requests are held to Redis's
	// limits before authentication.
	authed *atomic.Bool
	// held: inbound bytes the connection holds while its input waits
	// (0 when it is being parsed).
	held int64
	// outWatched: in eventLoop.outWatch, its unsent output being
	// re-measured on the ticker until it is sent.
	outWatched bool
	// readOff: the socket is out of the epoll set's read interest;
	// readUnsure: gnet read it meanwhile, so that may no longer hold
	// (readpause.go).
	readOff, readUnsure bool

	nextSeq  uint64             // the sequence number of the last batch sent
	expect   uint64             // the next sequence number to write
	early    []actor.Completion // completions that arrived before their turn
	inflight int                // batches sent and not yet written
	// pending: the batches sent to the actor whose replies are not yet
	// written, in order; while a script is busy the loop answers those the
	// actor has not begun (claimBusy).
	pending []*actor.Batch
	// resp is the client's protocol (the actor keeps it; the loop sets it
	// too when it answers HELLO or RESET while a script is busy).
	resp *atomic.Int32
	// inMulti is whether the actor's session is in MULTI (the actor keeps
	// it). busyTx is what the loop's own answers while a script was busy
	// made of it (1: in MULTI, 2: not; 0: nothing, inMulti says), told to
	// the actor (BusyAnswered) after the batches up to noteSeq; it stands
	// until a reply to a later batch shows the actor has caught up.
	inMulti *atomic.Bool
	// user (the ACL user's name; nil: the default user) and subscribed
	// are kept by the actor (the loop sets them too when it answers AUTH,
	// HELLO or RESET while a script is busy), for busy's checks.
	user       *atomic.Pointer[string]
	subscribed *atomic.Bool
	busyTx     int8
	// busyQueued is the flags of the commands busy queued in the
	// transaction busyTx or inMulti says (Redis's mstate flags, for
	// EXEC's checks): busy's own, since busyTx last changed.
	busyQueued actor.QueueFlags
	noteSeq    uint64
	barrier    uint64            // seq of an outstanding blocking command, 0 if none
	final      *actor.Completion // a reply the loop itself owes last (protocol error)
	closeErr   error             // why the connection is closing, for the log

	// stalled: waiting (in eventLoop.stalled) for the actor's backlog to
	// fall under its limit.
	stalled bool

	// outPaused: unsent output is above the soft limit (since outSince);
	// input is not read until it drains.
	outPaused bool
	outSince  time.Time

	// opened: the actor has the session (Actor.Open); not yet while a
	// PROXY header is awaited. proxyCheck: the start of the input is yet
	// to be looked at for a PROXY header, which is required (proxyWant,
	// from a balancer) or refused (proxy.go).
	opened, proxyCheck, proxyWant bool

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
	if c.proxyCheck && !c.proxyHeader() {
		return c.state != stateOpen
	}
	if c.inflight >= c.lp.srv.cfg.MaxInflight || c.barrier != 0 || c.outPaused {
		return true
	}
	n := c.gc.InboundBuffered()
	if c.big != nil || (c.need-n >= bigRequest && c.parser.Pending()) {
		return c.receiveBig()
	}
	if n < c.need {
		// Part of a command: nothing for the actor yet, so the backlog is
		// no reason to stop receiving it (client_query_buffer_limit and
		// proto_max_bulk_len bound it).
		return false
	}
	// While a script is busy the loop answers for the actor (conn.busy),
	// so a backlog the actor cannot work off is no reason to wait.
	if c.lp.srv.act.Backlog() > c.lp.srv.cfg.MaxBacklog && !c.lp.srv.scriptBusy() {
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
	unauth := !c.authed.Load()
	c.parser.SetUnauthenticated(unauth)
	b := c.lp.newBatch()
	consumed := 0
	var perr error
	var local []actor.Completion // replies given here while a script is busy
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
		b.input += n
		if len(c.args) == 0 {
			continue
		}
		if busy, _ := c.lp.srv.scripts.Busy(); busy && c.id != c.lp.srv.scripts.Conn() {
			if reply := c.busy(c.args); reply != nil {
				if len(b.ends) > 0 {
					c.submit(b)
					b = c.lp.newBatch()
				}
				c.nextSeq++
				c.inflight++
				quit := c.quitting(c.args)
				local = append(local, actor.Completion{ConnID: c.id, Seq: c.nextSeq, Reply: reply, Close: quit})
				if quit {
					// Nothing after QUIT is read: the connection closes
					// once the replies before it are written.
					c.state = stateClosing
					break
				}
				continue
			}
		}
		cmd := c.lp.srv.act.Lookup(c.args[0])
		if actor.IsBlocking(cmd) || (unauth && cmd != nil && cmd.Authenticates) {
			// A blocking command travels in a batch of its own, so the
			// replies to the commands before it leave without waiting for
			// it; and, like Redis with a blocked client, nothing more is
			// read until it has its reply. So does AUTH (or HELLO, RESET)
			// before authentication: what follows it is parsed with the
			// limits its outcome sets.
			if len(b.ends) > 0 {
				c.submit(b)
				b = c.lp.newBatch()
			}
			b.add(c.args, cmd)
			c.barrier = c.nextSeq + 1
			c.need = 0 // what follows has not been looked at
			break
		}
		b.add(c.args, cmd)
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
	for _, cmp := range local {
		c.deliver(cmp)
	}
	if perr != nil {
		c.protocolError(perr)
	}
	return c.barrier != 0 || c.inflight >= c.lp.srv.cfg.MaxInflight
}

// busy answers a command while the actor runs a script past
// busy-reply-threshold, as Redis's processCommand does then: first its
// checks (actor.BusyCheck: unknown command or subcommand, arity, DEBUG
// allowed, -NOAUTH, NO_MULTI, ACL, writes refused, a RESP2 subscriber),
// then -BUSY for every command but those Redis lets through (allow_busy),
// which are answered here as they run in Redis: SCRIPT KILL and FUNCTION
// KILL stop the script, FUNCTION STATS shows the running function,
// MULTI, WATCH, UNWATCH, DISCARD, AUTH, HELLO, RESET, QUIT and REPLCONF
// answer what they would; inside MULTI the ones MULTI queues answer
// +QUEUED. EXEC refused answers EXECABORT ... because of: <refusal> and
// discards the transaction; another command refused inside MULTI fails
// it (EXEC then answers EXECABORT ... previous errors). The actor learns
// each answer in order (BusyRefused, BusyRan, BusyAnswered, BusyCommand)
// and applies and counts it after the script. It returns nil for a
// command that goes to the actor (SHUTDOWN NOSAVE, which first stops the
// script, and SHUTDOWN ABORT), which waits for the script's end.
func (c *conn) busy(args [][]byte) []byte {
	cmd, refusal := c.busyCheck(args)
	if refusal != "" {
		return c.refuse(cmd, args, refusal)
	}
	if c.forwarded(cmd, args) {
		return nil
	}
	w := c.lp.srv.scripts
	act := c.lp.srv.act
	if c.multi() && !cmd.Immediate {
		// MULTI queues what passes its checks, as Redis does while busy.
		act.BusyCommand(c.id, args)
		c.busyQueued.Add(cmd)
		return []byte("+QUEUED\r\n")
	}
	switch cmd.Name {
	case "quit":
		return c.ran(args, []byte("+OK\r\n"))
	case "auth", "hello", "reset":
		return c.busyConn(cmd, args)
	case "script|kill", "function|kill":
		return c.ran(args, w.Kill(cmd.Name == "script|kill"))
	case "function|stats":
		if _, eval := w.Busy(); eval {
			return c.ran(args, w.BusyReply()) // as Redis: FUNCTION STATS says nothing of EVAL scripts
		}
		return c.ran(args, w.BusyFunctionStats(int(c.resp.Load())))
	case "replconf":
		act.BusyCommand(c.id, args) // run for its effects after the script
		if r := actor.BusyReplconf(args); r != nil {
			return r
		}
		return []byte{} // ACK and GETACK have no reply
	case "shutdown":
		switch busyShutdownArgs(args) {
		case -1:
			return c.ran(args, []byte("-"+string(actor.ErrSyntax)+"\r\n"))
		case 2:
			return c.ran(args, []byte("-ERR No shutdown in progress.\r\n"))
		}
		// Redis's shutdownCommand: without NOSAVE it refuses while busy.
		return c.ran(args, w.BusyReply())
	case "multi":
		// It begins the transaction once the actor has the note.
		if c.multi() {
			return c.ran(args, []byte("-"+string(actor.ErrMultiNested)+"\r\n"))
		}
		c.note(1, actor.BusyMulti)
		return []byte("+OK\r\n")
	case "watch", "unwatch", "discard":
		// The actor applies them to the session after the script
		// (Actor.BusyCommand).
		return c.busyWatch(cmd.Name, args)
	}
	// Only the commands above are allow_busy, and EXEC is not: its
	// refusal discards the transaction.
	return c.refuse(cmd, args, string(w.BusyReply()[1:len(w.BusyReply())-2]))
}

// busyCheck is actor.BusyCheck for this client, then -BUSY for a command
// that is not allow_busy.
func (c *conn) busyCheck(args [][]byte) (*actor.Command, string) {
	cl := actor.BusyClient{
		Authed: c.authed.Load(), Multi: c.multi(), Subscribed: c.subscribed.Load(),
		Resp: int(c.resp.Load()), Addr: c.addr,
		ID: c.id, OwnTx: c.busyTx != 0, Queued: c.busyQueued,
	}
	if u := c.user.Load(); u != nil {
		cl.User = *u
	}
	cmd, refusal := c.lp.srv.act.BusyCheck(&cl, args)
	if refusal == "" && !cmd.Is(actor.FlagAllowBusy) {
		r := c.lp.srv.scripts.BusyReply()
		refusal = string(r[1 : len(r)-2])
	}
	return cmd, refusal
}

// forwarded reports whether busy sends the command, which passed the
// checks, to the actor: SHUTDOWN NOSAVE, after it stopped the script (the
// server exits, answering nobody), and SHUTDOWN ABORT while a shutdown
// waits for replicas.
func (c *conn) forwarded(cmd *actor.Command, args [][]byte) bool {
	if !c.forwards(cmd, args) {
		return false
	}
	if busyShutdownArgs(args) == 1 {
		c.lp.srv.scripts.Abort()
	}
	return true
}

// forwards is forwarded without its effect.
func (c *conn) forwards(cmd *actor.Command, args [][]byte) bool {
	if cmd.Name != "shutdown" || c.multi() {
		return false
	}
	switch busyShutdownArgs(args) {
	case 1:
		return true
	case 2:
		return c.lp.srv.act.ShutdownPending()
	}
	return false
}

// busyShutdownArgs parses SHUTDOWN's arguments as Redis's shutdownCommand
// does: -1 for a syntax error, 1 for NOSAVE, 2 for ABORT, 0 otherwise.
func busyShutdownArgs(args [][]byte) int {
	nosave, save, abort, other := false, false, false, false
	for _, a := range args[1:] {
		switch {
		case eqFold(a, "nosave"):
			nosave = true
		case eqFold(a, "save"):
			save = true
		case eqFold(a, "now"), eqFold(a, "force"):
			other = true
		case eqFold(a, "abort"):
			abort = true
		default:
			return -1
		}
	}
	switch {
	case (abort && (nosave || save || other)) || (nosave && save):
		return -1
	case abort:
		return 2
	case nosave:
		return 1
	}
	return 0
}

// refuse answers a command refused while a script is busy with text (a
// refused EXEC answers EXECABORT and ends the transaction), and tells the
// actor (BusyRefused).
func (c *conn) refuse(cmd *actor.Command, args [][]byte, text string) []byte {
	c.noteSeq = c.nextSeq + 1 // the local reply's sequence number, at least
	c.lp.srv.act.BusyRefused(c.id, args, text)
	if cmd != nil && cmd.Name == "exec" {
		c.setBusyTx(2)
		return []byte("-EXECABORT Transaction discarded because of: " + text + "\r\n")
	}
	return []byte("-" + text + "\r\n")
}

// ran tells the actor that busy ran a command for it, with reply, to be
// counted (BusyRan), and returns reply.
func (c *conn) ran(args [][]byte, reply []byte) []byte {
	text := ""
	if len(reply) > 0 && reply[0] == '-' {
		text = string(reply[1 : len(reply)-2])
	}
	c.noteSeq = c.nextSeq + 1
	c.lp.srv.act.BusyRan(c.id, args, text)
	return reply
}

// busyWatch answers WATCH, UNWATCH or DISCARD while a script is busy, as
// Redis runs them then: WATCH inside MULTI is refused, UNWATCH inside it
// is queued, DISCARD outside it is refused.
func (c *conn) busyWatch(name string, args [][]byte) []byte {
	in := c.multi()
	switch {
	case name == "watch" && in:
		return c.ran(args, []byte("-"+string(actor.ErrWatchInMulti)+"\r\n"))
	case name == "discard" && !in:
		return c.ran(args, []byte("-"+string(actor.ErrDiscardNoMulti)+"\r\n"))
	}
	c.lp.srv.act.BusyCommand(c.id, args)
	if name == "discard" {
		c.setBusyTx(2)
		c.noteSeq = c.nextSeq + 1
	}
	return []byte("+OK\r\n")
}

// busyConn answers AUTH, HELLO, RESET and QUIT while a script is busy, as
// Redis runs them then (allow_busy), from what the loop knows of the
// client and the actor's Gate (its users as of their last change, which a
// script cannot make); the actor applies AUTH, HELLO and RESET to the
// session after the script (Actor.BusyCommand), with the same outcome.
// QUIT answers +OK and the connection closes (parse stops reading).
// Inside MULTI, AUTH and HELLO are queued, RESET and QUIT are not.
func (c *conn) busyConn(cmd *actor.Command, args [][]byte) []byte {
	errReply := func(err error) []byte { return []byte("-" + err.Error() + "\r\n") }
	gate := c.lp.srv.gate
	if cmd.Name == "reset" {
		c.lp.srv.act.BusyCommand(c.id, args)
		c.setBusyTx(2)
		c.noteSeq = c.nextSeq + 1
		c.resp.Store(2)
		c.authed.Store(!gate.AuthRequired())
		c.user.Store(nil)
		c.subscribed.Store(false)
		return []byte("+RESET\r\n")
	}
	// The actor runs it again after the script for its effects (the
	// user, the ACL LOG entry of a failure, the name, the protocol).
	c.lp.srv.act.BusyCommand(c.id, args)
	if cmd.Name == "auth" {
		user, pass := []byte("default"), args[1]
		switch {
		case len(args) > 3:
			return errReply(actor.ErrSyntax)
		case len(args) == 2 && gate.DefaultNoPass():
			return errReply(actor.ErrAuthNotSet)
		case len(args) == 3:
			user, pass = args[1], args[2]
		}
		if !gate.CheckAuth(user, pass) {
			return errReply(actor.ErrWrongPass)
		}
		c.authed.Store(true)
		name := string(user)
		c.user.Store(&name)
		return []byte("+OK\r\n")
	}
	h, err := actor.ParseHello(args)
	switch {
	case err != nil:
		return errReply(err)
	case h.User != nil && !gate.CheckAuth(h.User, h.Pass):
		return errReply(actor.ErrWrongPass)
	case h.User != nil:
		c.authed.Store(true)
		name := string(h.User)
		c.user.Store(&name)
	}
	if !c.authed.Load() {
		return errReply(actor.ErrHelloNoAuth)
	}
	if h.HasName {
		if err := actor.ValidName(h.Name); err != nil {
			return errReply(err)
		}
	}
	if h.Ver != 0 {
		c.resp.Store(int32(h.Ver))
	}
	w := proto.Writer{Proto: int(c.resp.Load())}
	actor.WriteHello(&w, c.id, gate.Replica())
	return w.Buf
}

// quitting reports whether args is a QUIT that busy answered (the
// connection then closes after its reply).
func (c *conn) quitting(args [][]byte) bool {
	cmd := c.lp.srv.act.Lookup(args[0])
	return cmd != nil && cmd.Name == "quit"
}

// multi reports whether the client is in MULTI, as far as the loop knows.
func (c *conn) multi() bool {
	switch c.busyTx {
	case 1:
		return true
	case 2:
		return false
	}
	return c.inMulti.Load()
}

// setBusyTx sets busyTx; the commands busy queued belong to the
// transaction before.
func (c *conn) setBusyTx(tx int8) {
	c.busyTx = tx
	c.busyQueued = actor.QueueFlags{}
}

// note tells the actor what busy answered (tx: busyTx's new value, 0 for
// no change).
func (c *conn) note(tx int8, n actor.BusyNote) {
	if tx != 0 {
		c.setBusyTx(tx)
	}
	c.noteSeq = c.nextSeq + 1 // the local reply's sequence number, at least
	c.lp.srv.act.BusyAnswered(c.id, n)
}

// busyLocal reports whether busy answers args itself (without sending it
// to the actor); it has none of busy's effects.
func (c *conn) busyLocal(args [][]byte) bool {
	cmd, refusal := c.busyCheck(args)
	return refusal != "" || !c.forwards(cmd, args)
}

// claimBusy answers, while a script is busy, the connection's batches the
// actor has not begun: they arrived while the script ran, and Redis, which
// reads them only once the script is busy, answers them as busy answers
// new ones (-BUSY; SCRIPT KILL and FUNCTION KILL done). Without it such a
// batch would wait for the script's end, and a client waiting for its
// reply (one that would send SCRIPT KILL next, say) would wait forever. A
// batch with a command busy does not answer (SHUTDOWN, allow_busy ones,
// unknown ones), and any batch of the connection that runs the script,
// wait for the actor. The actor skips a claimed batch (Batch.Claim).
//
// This ends the wait of a command sent to the actor while a script runs:
// the script's end (the actor runs it then and it gets its own reply), or
// the script going busy (claimBusy; -BUSY as above).
func (c *conn) claimBusy() {
	w := c.lp.srv.scripts
	if busy, _ := w.Busy(); !busy || c.state == stateClosed || c.id == w.Conn() || len(c.pending) == 0 {
		return
	}
	var local []actor.Completion
	for _, b := range c.pending {
		answerable := true
		for i := range b.Len() {
			if !c.busyLocal(b.Cmd(i)) {
				answerable = false
				break
			}
		}
		if !answerable || !b.Claim() {
			continue
		}
		var reply []byte
		quit := false
		for i := range b.Len() {
			reply = append(reply, c.busy(b.Cmd(i))...)
			if quit = c.quitting(b.Cmd(i)); quit {
				break // the connection closes after QUIT's reply
			}
		}
		local = append(local, actor.Completion{ConnID: c.id, Seq: b.Seq, Reply: reply, Close: quit})
	}
	for _, cmp := range local {
		c.deliver(cmp)
	}
}

// sweepBusy runs on the loop when a script goes busy: every connection
// answers its batches the actor has not begun (claimBusy).
func (lp *eventLoop) sweepBusy(context.Context) error {
	for _, c := range lp.conns {
		if len(c.pending) > 0 {
			c.claimBusy()
		}
	}
	return nil
}

// eqFold reports whether b is word, ignoring ASCII case.
func eqFold(b []byte, word string) bool {
	if len(b) != len(word) {
		return false
	}
	for i := range b {
		x, y := b[i]|0x20, word[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

// bigRequest: a request still this many bytes short (a large bulk on its
// way) is received into a buffer of its own instead of gnet's.
const bigRequest = 1 << 20

// receiveBig receives a large request into c.big, a buffer of its own that
// grows as the bytes arrive (never ahead of them, so announcing a large
// bulk takes nothing) and is charged to the client's memory before it
// grows. gnet's ring buffer would hold the same bytes at up to twice their
// size, and copy them again to present them contiguously. Only the
// request's own bytes are moved (up to the parser's need), so what follows
// it stays in gnet's buffer, in order. The complete request goes to the
// actor in a batch of its own that keeps c.big as its memory: no copy.
func (c *conn) receiveBig() (wait bool) {
	for {
		avail := c.gc.InboundBuffered()
		k := min(c.need-len(c.big), avail)
		if k <= 0 {
			return false
		}
		if len(c.big)+k > cap(c.big) {
			size := min(c.need, max(2*cap(c.big), len(c.big)+k, bigRequest))
			if size > c.lp.srv.cfg.MaxQueryBuffer {
				c.lp.srv.log.Warn().Uint64("client", c.id).Int("bytes", size).
					Msg("closing client that reached max query buffer length")
				c.closeNow(errQueryBuffer)
				return true
			}
			c.mem.Set(actor.MemQuery, int64(size+avail))
			if c.mem.Gone() {
				return true // evicted; the loop is closing it
			}
			big := make([]byte, len(c.big), size)
			copy(big, c.big)
			c.big = big
		}
		c.gc.Read(c.big[len(c.big) : len(c.big)+k])
		c.big = c.big[:len(c.big)+k]
		c.lp.srv.netIn.Add(uint64(k))
		if len(c.big) < c.need {
			return false
		}
		args, n, need, err := c.parser.Parse(c.big, c.args)
		c.args = args
		if err != nil {
			c.big = nil
			c.protocolError(err)
			return true
		}
		if n == 0 {
			c.need = need
			continue
		}
		// n == len(c.big): only the request's bytes were moved.
		argv := make([][]byte, len(args))
		copy(argv, args)
		c.nextSeq++
		c.inflight++
		batch := &actor.Batch{ConnID: c.id, Seq: c.nextSeq, Args: argv, Ends: []int32{int32(len(argv))},
			Bytes: int64(cap(c.big) + 24*len(argv) + 128), Scripts: actor.RunsScript(c.lp.srv.act.Lookup(argv[0]))}
		if actor.IsBlocking(c.lp.srv.act.Lookup(argv[0])) {
			c.barrier = c.nextSeq
		}
		c.big, c.need = nil, 0
		c.mem.Add(actor.MemBatches, batch.Bytes)
		c.pending = append(c.pending, batch)
		c.lp.srv.act.Submit(batch)
		return c.barrier != 0 || c.inflight >= c.lp.srv.cfg.MaxInflight
	}
}

// submit sends a batch to the actor under the next sequence number.
func (c *conn) submit(b *batchBuilder) {
	c.nextSeq++
	c.inflight++
	batch := b.finish(c.id, c.nextSeq)
	c.mem.Add(actor.MemBatches, batch.Bytes)
	c.pending = append(c.pending, batch)
	c.lp.srv.act.Submit(batch)
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
// batch before it has been, and waits otherwise. A push (a Pub/Sub message)
// answers no batch: it is written once batch Seq's replies are, after
// them, and waits behind them otherwise.
func (c *conn) deliver(cmp actor.Completion) {
	if c.state == stateClosed {
		return
	}
	if cmp.Kill {
		c.closeNow(errKilled)
		return
	}
	if cmp.Push {
		if cmp.Seq < c.expect {
			c.write(cmp)
			return
		}
		// After everything up to its batch, and after the pushes that
		// came before it.
		c.wait(cmp, sort.Search(len(c.early), func(i int) bool { return c.early[i].Seq > cmp.Seq }))
		return
	}
	if cmp.Seq != c.expect {
		c.wait(cmp, sort.Search(len(c.early), func(i int) bool { return c.early[i].Seq >= cmp.Seq }))
		return
	}
	c.write(cmp)
	for len(c.early) > 0 && c.state != stateClosed {
		next := c.early[0]
		if next.Seq != c.expect && !(next.Push && next.Seq < c.expect) {
			break
		}
		c.early = c.early[1:]
		c.write(next)
	}
	c.mem.SetWaiting(int64(len(c.early)))
	if c.state == stateOpen {
		c.readable()
	}
}

// wait files a completion that arrived before its turn at position i of
// the FIFO.
func (c *conn) wait(cmp actor.Completion, i int) {
	c.early = append(c.early, actor.Completion{})
	copy(c.early[i+1:], c.early[i:])
	c.early[i] = cmp
	c.mem.SetWaiting(int64(len(c.early)))
}

// account charges the input the connection holds, a bulk still arriving
// included, to its memory (the client memory budget evicts the client
// using the most when all of them pass it), and remembers whether that
// input waits (readable pauses reading the socket then).
func (c *conn) account(wait bool) {
	if c.state == stateClosed {
		return
	}
	n := int64(c.gc.InboundBuffered())
	c.mem.Set(actor.MemQuery, n+int64(cap(c.big)))
	// qbuf-free: the room left in the large request's own buffer, or in
	// the loop's read buffer (one read's worth) for ordinary input.
	if c.big != nil {
		c.mem.SetQueryFree(int64(cap(c.big) - len(c.big)))
	} else {
		c.mem.SetQueryFree(max(0, readChunk-n))
	}
	if !wait {
		n = 0
	}
	c.lp.srv.held.Add(n - c.held)
	c.held = n
}

// write sends one batch's replies and advances the FIFO.
func (c *conn) write(cmp actor.Completion) {
	if !cmp.Push {
		c.expect++
		if c.final == nil || cmp.Seq != c.final.Seq {
			c.inflight--
		}
		for len(c.pending) > 0 && c.pending[0].Seq <= cmp.Seq {
			if c.pending[0].Seq > c.noteSeq {
				c.setBusyTx(0) // the actor has applied the notes
			}
			c.pending[0] = nil
			c.pending = c.pending[1:]
		}
		if c.barrier != 0 && cmp.Seq >= c.barrier {
			c.barrier = 0
		}
	}
	c.mem.Add(actor.MemReplies, -cmp.Charged)
	if len(cmp.Reply) > 0 {
		c.lp.srv.netOut.Add(uint64(len(cmp.Reply)))
		_, err := c.gc.Write(cmp.Reply) // copies what the socket does not take
		if cmp.Recycle {
			actor.ReleaseReply(cmp.Reply)
		}
		if err != nil {
			return // gnet closed the connection; OnClose tears it down
		}
	}
	if c.state == stateClosed {
		return
	}
	cfg := &c.lp.srv.cfg
	c.watchOutput(int64(c.gc.OutboundBuffered()))
	// Redis's limits for normal clients, on the replies it owes: unsent in
	// the socket's buffer and still in flight from the actor alike.
	out := c.mem.Output()
	if cfg.OutputHardLimit > 0 && out > cfg.OutputHardLimit {
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

// watchOutput charges the connection's unsent output (out bytes in gnet's
// buffer) to its memory; while there is any, the loop's ticker measures it
// again, since gnet sends it without telling the loop.
func (c *conn) watchOutput(out int64) {
	c.mem.Set(actor.MemOutput, out)
	if out > 0 && !c.outWatched {
		c.outWatched = true
		c.lp.outWatch = append(c.lp.outWatch, c.id)
		c.lp.outWatchN.Add(1)
	}
}

var (
	errQueryBuffer  = errors.New("query buffer limit")
	errOutputBuffer = errors.New("output buffer limit")
	errKilled       = errors.New("killed by CLIENT KILL")
	errEvicted      = errors.New("maxmemory_clients: evicted, using the most client memory")
	errDenied       = errors.New("protected mode: not a loopback address")
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
	if c.opened {
		srv.act.Closed(c.id)
	}
	delete(c.lp.conns, c.id)
	srv.budget.Release(c.mem)
	srv.held.Add(-c.held)
	c.held = 0
	c.early, c.final, c.pending = nil, nil, nil
	c.args, c.parser, c.big = nil, nil, nil
	srv.clients.Add(-1)
	// A connection paused on its output leaves outPaused at the next check.
	if e := srv.log.Debug(); e.Enabled() {
		if err == nil {
			err = c.closeErr
		}
		if errors.Is(err, io.EOF) {
			err = nil
		}
		e.Uint64("client", c.id).Str("addr", c.addr).AnErr("reason", err).Msg("connection closed")
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
	outWatch   []uint64     // connections with unsent output (watchOutput)
	outWatchN  atomic.Int64 // len(outWatch), for the ticker
	checkFn    gnet.RunnableFunc
	busyFn     gnet.RunnableFunc // sweepBusy
	epfd       int               // the loop's epoll descriptor, -1 if unknown (readpause.go)
	epChecked  bool              // epfd was looked up

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
	if lp.srv.scripts.Exiting() {
		// SHUTDOWN NOSAVE stopped a busy script: the server exits, and,
		// as Redis, which exits from within the script, answers nobody.
		return
	}
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
	if len(lp.stalled) == 0 || (lp.srv.act.Backlog() > lp.srv.cfg.MaxBacklog && !lp.srv.scriptBusy()) {
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
		c.mem.Set(actor.MemOutput, int64(c.gc.OutboundBuffered()))
		switch out := c.mem.Output(); {
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
	watch := lp.outWatch[:0]
	for _, id := range lp.outWatch {
		c := lp.conns[id]
		if c == nil || c.state == stateClosed {
			continue
		}
		out := int64(c.gc.OutboundBuffered())
		c.mem.Set(actor.MemOutput, out)
		if out > 0 {
			watch = append(watch, id)
		} else {
			c.outWatched = false
		}
	}
	lp.outWatch = watch
	lp.outWatchN.Store(int64(len(watch)))
	return nil
}

// batchBuilder gathers the commands of one read, copying their arguments
// into one arena: the one place bytes cross from the loop to the actor.
type batchBuilder struct {
	arena []byte
	offs  []int32 // start,end of every argument in arena
	ends  []int32 // per command: index of its last argument + 1
	input int     // request bytes parsed into it (Batch.Input)
	// scripts: a command of it may run a script (Batch.Scripts).
	scripts bool
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
	b.arena, b.offs, b.ends, b.input, b.scripts = b.arena[:0], b.offs[:0], b.ends[:0], 0, false
	if cap(b.arena) > 1<<20 {
		b.arena = nil
	}
	lp.batches = append(lp.batches, b)
}

func (b *batchBuilder) add(args [][]byte, cmd *actor.Command) {
	b.scripts = b.scripts || actor.RunsScript(cmd)
	for _, a := range args {
		start := len(b.arena)
		b.arena = append(b.arena, a...)
		b.offs = append(b.offs, int32(start), int32(len(b.arena)))
	}
	b.ends = append(b.ends, int32(len(b.offs)/2))
}

// finish makes the actor's Batch: its own copy of the arguments, in one
// allocation for the bytes and one for the slices. A large arena (a big
// bulk) is handed over as it is rather than copied once more.
func (b *batchBuilder) finish(id, seq uint64) *actor.Batch {
	var arena []byte
	if cap(b.arena) > 1<<20 {
		arena, b.arena = b.arena, nil
	} else {
		arena = make([]byte, len(b.arena))
		copy(arena, b.arena)
	}
	args := make([][]byte, len(b.offs)/2)
	for i := range args {
		s, e := b.offs[2*i], b.offs[2*i+1]
		args[i] = arena[s:e:e]
	}
	ends := make([]int32, len(b.ends))
	copy(ends, b.ends)
	bytes := int64(cap(arena) + 24*len(args) + 4*len(ends) + 128)
	return &actor.Batch{ConnID: id, Seq: seq, Args: args, Ends: ends, Bytes: bytes, Input: int64(b.input), Scripts: b.scripts}
}
