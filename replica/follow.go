package replica

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cellar-db/cellar/actor"
	"github.com/cellar-db/cellar/proto"
)

// maxBatchCommands and maxBatchBytes bound one batch of the master's
// commands.
const (
	maxBatchCommands = 512
	maxBatchBytes    = 1 << 20
	maxArgs          = 1 << 20
	maxBulk          = 512 << 20
)

// stream is one session's master connection in the actor: its own
// Sink, so that completions arriving after the session ended (the actor
// runs what was submitted) touch nothing of the next one.
type stream struct {
	l        *link
	connID   uint64
	mem      *actor.ClientMem
	slots    chan struct{}
	bmu      sync.Mutex
	ends     map[uint64]batchEnd
	ackNow   chan struct{}
	killed   chan struct{}
	killOnce sync.Once
	// detached: the session ended (its batches may still run);
	// releaseOnce gives its client memory back once none is left.
	detached    bool
	releaseOnce sync.Once
}

func (fs *stream) release() {
	fs.releaseOnce.Do(func() {
		if fs.mem != nil && fs.l.m.cfg.Clients != nil {
			fs.l.m.cfg.Clients.Release(fs.mem)
		}
	})
}

// reportError logs (at most once a second) an error reply to one of the
// master's commands: a command Cellar lacks or refuses, after which the
// replica differs from its master. The batch's replies are walked as
// RESP (proto.FirstError): a bulk value such as "-1" is not an error.
func (fs *stream) reportError(reply []byte) {
	line, failed := proto.FirstError(reply)
	if !failed {
		return
	}
	now := time.Now().UnixNano()
	last := fs.l.m.errLogged.Load()
	if now-last < int64(time.Second) || !fs.l.m.errLogged.CompareAndSwap(last, now) {
		return
	}
	fs.l.log().Error().Str("master", fs.l.addr).Str("error", string(line[:min(len(line), 200)])).
		Msg("replica: a command of the master's stream failed on Cellar; the data may now differ from the master's")
}

// advance moves the applied offset up to off (never back).
func (l *link) advance(off int64) {
	for {
		cur := l.applied.Load()
		if off <= cur || l.applied.CompareAndSwap(cur, off) {
			return
		}
	}
}

// follow applies the master's command stream until the session fails: the
// commands go to the actor in batches through the master's connection,
// each advancing the offset once it ran; REPLCONF GETACK is answered once
// everything before it ran, and an ACK goes every second.
func (l *link) follow(c *conn, p *pipe) error {
	m, a := l.m, l.m.a
	l.acksHeld.Store(l.catchUp) // before the first acknowledgement below
	fs := &stream{l: l}
	l.fs = fs
	fs.connID = clientIDBase + m.ids.Add(1)
	if m.cfg.Clients != nil {
		fs.mem = m.cfg.Clients.Register(fs.connID, func() {})
		fs.mem.SetNoEvict(true)
	}
	fs.slots = make(chan struct{}, inFlight)
	l.submitted = l.read.Load()
	fs.ends = map[uint64]batchEnd{}
	fs.ackNow = make(chan struct{}, 1)
	fs.killed = make(chan struct{})
	a.Open(actor.ConnInfo{ID: fs.connID, Addr: l.addr, Sink: fs, Mem: fs.mem, Master: true})
	if err := a.ReplicaAttach(l.gen, fs.connID); err != nil {
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	// The first acknowledgement goes at once, as Redis 7.0's replica
	// sends it once the RDB is loaded: a master that sent the RDB
	// diskless holds the stream until then (Redis's and Cellar's), so
	// waiting for the first tick would delay it by up to a second.
	fs.ackSoon()
	go fs.acknowledge(c, stop)
	c.SetReadDeadline(time.Time{})
	var (
		seq   uint64
		batch = &actor.Batch{ConnID: fs.connID}
		ack   bool
		read  = l.read.Load()
		// db: the database the stream has selected; inMulti: the stream
		// is between MULTI and EXEC. A batch never ends inside a
		// transaction: a session that ends after a batch must not leave
		// half a transaction queued in a connection that is going away.
		db      = l.db
		inMulti bool
		// catchUp: the commands up to REPLCONF cellar-catchup-end are a
		// physical sync's catch-up (actor/physical.go): the master's
		// records the copy missed, before the offset the sync stands at.
		// They run as the stream's do, but count in no offset and are
		// relayed to no replica of this server's (which full-sync from
		// it after a change of history anyway); they are parsed into
		// skip, not raw. streamDB is the database the stream itself
		// continues in.
		catchUp  = l.catchUp
		skip     []byte
		streamDB = l.db
		caughtAt uint64 // the batch that ends it
	)
	if catchUp {
		l.caught.Store(false)
		defer func() {
			if !l.caught.Load() {
				// Part of the catch-up may not have run: the history the
				// sync took cannot be continued; the next session asks
				// for a full sync.
				m.mu.Lock()
				m.replID = ""
				m.mu.Unlock()
			}
		}()
	}
	if db != 0 {
		// A partial resync continues the stream where the last session
		// stopped, in the database it had selected (the master does not
		// select it again, as a Redis replica keeps its cached master's).
		batch.Args = append(batch.Args, []byte("SELECT"), []byte(strconv.Itoa(db)))
		batch.Ends = append(batch.Ends, int32(len(batch.Args)))
	}
	// raw is the batch's part of the stream, as it came: its commands'
	// arguments alias it, and it ends the batch as the argument of
	// REPLCONF cellar-relay, which the actor runs after them, in the same
	// round, to keep it in its backlog and pass it on to its own replicas
	// (actor/master.go).
	var raw []byte
	// rawHint is how large the last batch's bytes were: the next one's
	// buffer starts at that, not at what bufio holds (a few KiB), which a
	// batch of 512 commands outgrew by doubling four times (its arguments
	// and ends start at the last one's counts too).
	rawHint := 512
	// ioNoted: the batch being read has set the link's last I/O time
	// (master_last_io_seconds_ago, in seconds): once a batch, not once a
	// command under the manager's lock.
	ioNoted := false
	noteIO := func() {
		if !ioNoted {
			ioNoted = true
			m.update(l, func(st *actor.ReplicaStatus) { st.LastIO = time.Now() })
		}
	}
	submit := func() error {
		if batch.Len() == 0 && len(raw) == 0 {
			return nil
		}
		skip = nil
		if len(raw) > 0 {
			batch.Args = append(batch.Args, relayCmd[0], relayCmd[1], raw)
			batch.Ends = append(batch.Ends, int32(len(batch.Args)))
			batch.Bytes = int64(len(raw))
		}
		select {
		case fs.slots <- struct{}{}:
		case <-l.ctx.Done():
			return l.ctx.Err()
		case <-fs.killed:
			return errors.New("replica: the master's connection was killed")
		}
		seq++
		batch.Seq = seq
		fs.bmu.Lock()
		fs.ends[seq] = batchEnd{offset: read, ack: ack, caughtUp: caughtAt == seq}
		fs.bmu.Unlock()
		a.Submit(batch)
		l.submitted, l.db = read, db
		rawHint = max(len(raw), len(skip), 512)
		next := &actor.Batch{ConnID: fs.connID, Args: make([][]byte, 0, len(batch.Args)), Ends: make([]int32, 0, len(batch.Ends))}
		batch, ack, raw, ioNoted = next, false, nil, false
		return nil
	}
	for {
		if l.pendingCaughtUp && p.waiting() == 0 {
			l.pendingCaughtUp = false
			l.log().Info().Str("master", l.addr).Dur("since_sync_start", time.Since(l.syncStart)).
				Msg("replica: caught up with the master: the waitlist is applied, following")
		}
		if !inMulti && (c.br.Buffered() == 0 || batch.Len() >= maxBatchCommands || len(raw) >= maxBatchBytes || len(skip) >= maxBatchBytes) {
			if err := submit(); err != nil {
				return err
			}
		}
		// all is the batch's arguments with the command's after them
		// (args): a command that does not run is left out by keeping
		// batch.Args as it was.
		var all, args [][]byte
		var err error
		if catchUp {
			if skip == nil {
				skip = make([]byte, 0, min(max(c.br.Buffered(), rawHint), maxBatchBytes))
			}
			if all, skip, err = readCommand(c.br, skip, batch.Args); err != nil {
				return err
			}
			args = all[len(batch.Args):]
			noteIO()
			if len(args) == 2 && eqFold(args[0], "replconf") && eqFold(args[1], "cellar-catchup-end") {
				// The actor learns it has run in the same batch, and the
				// link once that batch is done (Deliver).
				catchUp = false
				batch.Args = append(batch.Args, caughtUpCmd[:]...)
				batch.Ends = append(batch.Ends, int32(len(batch.Args)))
				caughtAt = seq + 1
				if db != streamDB {
					db = streamDB
					batch.Args = append(batch.Args, []byte("SELECT"), []byte(strconv.Itoa(db)))
					batch.Ends = append(batch.Ends, int32(len(batch.Args)))
				}
				continue
			}
			if len(args) == 0 || eqFold(args[0], "replconf") {
				continue
			}
		} else {
			if raw == nil {
				raw = make([]byte, 0, min(max(c.br.Buffered(), rawHint), maxBatchBytes))
			}
			before := len(raw)
			if all, raw, err = readCommand(c.br, raw, batch.Args); err != nil {
				return err
			}
			args = all[len(batch.Args):]
			read += int64(len(raw) - before)
			l.read.Store(read)
			noteIO()
			if len(args) == 0 {
				continue // a newline (keep-alive): counted and passed on, nothing to run
			}
		}
		if len(args) >= 2 && eqFold(args[0], "replconf") && eqFold(args[1], "getack") {
			ack = true
			continue
		}
		if len(args) >= 1 && eqFold(args[0], "replconf") {
			continue
		}
		switch {
		case eqFold(args[0], "select") && len(args) == 2:
			if v, err := strconv.Atoi(string(args[1])); err == nil {
				db = v
			}
		case eqFold(args[0], "multi"):
			inMulti = true
		case eqFold(args[0], "exec") || eqFold(args[0], "discard"):
			inMulti = false
		}
		batch.Args = all
		batch.Ends = append(batch.Ends, int32(len(batch.Args)))
	}
}

// staleMaster is the reply the actor gives every command of a batch that
// came after its connection stopped being the master's.
var staleMaster = []byte("-" + string(actor.ErrStaleMaster) + "\r\n")

// relayCmd is the command that ends every batch of the master's stream;
// caughtUpCmd the one after a physical sync's catch-up.
var (
	relayCmd    = [2][]byte{[]byte("REPLCONF"), []byte("cellar-relay")}
	caughtUpCmd = [3][]byte{[]byte("REPLCONF"), []byte("cellar-caught-up"), []byte("1")}
)

// Deliver receives the replies to the master's batches (actor.Sink):
// they are dropped, and each advances the applied offset.
func (fs *stream) Deliver(cs []actor.Completion) {
	for i := range cs {
		c := &cs[i]
		if c.ConnID != fs.connID {
			continue
		}
		if fs.mem != nil && c.Charged != 0 {
			fs.mem.Add(actor.MemReplies, -c.Charged)
		}
		if c.Kill || c.Close {
			fs.killOnce.Do(func() { close(fs.killed) })
			continue
		}
		if c.Push {
			continue
		}
		fs.reportError(c.Reply)
		fs.bmu.Lock()
		e, ok := fs.ends[c.Seq]
		delete(fs.ends, c.Seq)
		last := fs.detached && len(fs.ends) == 0
		fs.bmu.Unlock()
		if last {
			fs.release()
		}
		if !ok {
			continue
		}
		// A batch refused as a whole did not run: this connection stopped
		// being the master's before it (REPLICAOF NO ONE, or another
		// master). Acknowledging it would tell the old master a write is
		// here that is not, and a WAIT it confirmed would be lost.
		ran := !bytes.Contains(c.Reply, staleMaster)
		if ran {
			fs.l.advance(e.offset)
			if e.caughtUp {
				fs.l.caughtUp()
				fs.ackSoon()
			}
		}
		select {
		case <-fs.slots:
		default:
		}
		if e.ack && ran {
			fs.ackSoon()
		}
	}
}

func (fs *stream) ackSoon() {
	select {
	case fs.ackNow <- struct{}{}:
	default:
	}
}

// acknowledge sends REPLCONF ACK <applied offset> every second and when
// a GETACK asks.
func (fs *stream) acknowledge(c *conn, stop chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-fs.ackNow:
		}
		if fs.l.acksHeld.Load() {
			continue
		}
		if err := c.send("REPLCONF", "ACK", strconv.FormatInt(fs.l.applied.Load(), 10)); err != nil {
			c.Close() // the session ends through its reader
			return
		}
	}
}

// detach closes the master's connection in the actor (the session's
// cleanup).
func (l *link) detach() {
	fs := l.fs
	if fs == nil {
		return
	}
	l.fs = nil
	// Every batch submitted runs, as the master's: the actor takes its
	// inbox in order, the close queues behind them and the next session's
	// commands behind the close. So the offset a partial resync asks from
	// is the end of the last batch submitted, whether or not it has run
	// yet; the master sends only what follows, and nothing runs twice.
	l.m.mu.Lock()
	if l.m.cur == l && l.submitted >= l.m.offset {
		l.m.offset, l.m.db = l.submitted, l.db
	}
	l.m.mu.Unlock()
	l.m.a.Closed(fs.connID)
	// The client memory goes once the batches in flight ran: a released
	// client's batches are skipped by the actor.
	fs.bmu.Lock()
	fs.detached = true
	idle := len(fs.ends) == 0
	fs.bmu.Unlock()
	if idle {
		fs.release()
	}
}

// readCommand reads one command of the master's stream (a RESP array of
// bulk strings; a bare newline, a keep-alive, gives no arguments),
// appending its bytes as they came to raw and its arguments to dst, which
// it returns. The arguments alias raw's new bytes (in the array returned:
// raw's earlier bytes are never written again, so earlier commands'
// arguments stay valid after it grows).
func readCommand(br *bufio.Reader, raw []byte, dst [][]byte) (all [][]byte, out []byte, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return dst, raw, err
	}
	raw = append(raw, line...)
	if len(line) < 3 || line[0] != '*' {
		if len(line) <= 2 { // a bare newline: keep-alive
			return dst, raw, nil
		}
		return dst, raw, fmt.Errorf("replica: protocol error in the master's stream: %q", line)
	}
	count, err := strconv.Atoi(string(line[1 : len(line)-2]))
	if err != nil || count < 1 || count > maxArgs {
		return dst, raw, fmt.Errorf("replica: protocol error in the master's stream: %q", line)
	}
	var spanBuf [16]int // a command of up to 8 arguments needs no allocation
	spans := spanBuf[:0]
	for range count {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return dst, raw, err
		}
		if len(line) < 4 || line[0] != '$' {
			return dst, raw, fmt.Errorf("replica: protocol error in the master's stream: %q", line)
		}
		size, err := strconv.Atoi(string(line[1 : len(line)-2]))
		if err != nil || size < 0 || size > maxBulk {
			return dst, raw, fmt.Errorf("replica: protocol error in the master's stream: %q", line)
		}
		raw = append(raw, line...)
		at := len(raw)
		raw = slices.Grow(raw, size+2)[:at+size+2]
		if _, err := io.ReadFull(br, raw[at:]); err != nil {
			return dst, raw, err
		}
		spans = append(spans, at, at+size)
	}
	for i := range count {
		dst = append(dst, raw[spans[2*i]:spans[2*i+1]:spans[2*i+1]])
	}
	return dst, raw, nil
}

func eqFold(b []byte, word string) bool {
	if len(b) != len(word) {
		return false
	}
	for i := range b {
		x := b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if x != word[i] {
			return false
		}
	}
	return true
}
