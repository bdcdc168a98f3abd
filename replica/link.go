package replica

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellar-db/cellar/actor"
	"github.com/cellar-db/cellar/rdb"
	"github.com/rs/zerolog"
)

// Config is the replica's part of Cellar's configuration.
type Config struct {
	// MasterAuth and MasterUser authenticate to the master (Redis's
	// masterauth and masteruser); empty MasterAuth: no AUTH.
	MasterAuth, MasterUser string
	// ListenPort is announced to the master (REPLCONF listening-port).
	ListenPort int
	// BacklogMaxBytes bounds the waitlist: the commands the master sends
	// while the RDB is loaded. Past it the sync is abandoned and started
	// again.
	BacklogMaxBytes int64
	// LoadBatchKeys and LoadBatchBytes: how much of the RDB one message of
	// the actor loads.
	LoadBatchKeys  int
	LoadBatchBytes int
	// PhysicalSync: announce REPLCONF capa cellar-physical, so that a
	// Cellar master sends its database's copy instead of an RDB
	// (physical.go; replica.physical_sync).
	PhysicalSync bool
	// Clients is the client memory budget the master's connection is
	// charged to.
	Clients *actor.MemBudget
	Log     zerolog.Logger
}

// clientIDBase starts the client ids of masters' connections, far from
// the event loops' (which count from 1).
const clientIDBase = 1 << 62

// inFlight bounds the master's batches submitted and not yet run, as the
// event loops bound a client's.
const inFlight = 64

// Manager runs the current link; it is the actor's Replicator.
type Manager struct {
	a   *actor.Actor
	cfg Config
	ids atomic.Uint64
	// errLogged: when an error of the master's stream was last logged
	// (unix ns), to log at most one a second.
	errLogged atomic.Int64
	// files numbers the physical syncs' files.
	files atomic.Uint64

	mu     sync.Mutex
	cur    *link
	wg     sync.WaitGroup
	status actor.ReplicaStatus
	// replID and offset: the history the live data belongs to, for a
	// partial resync after a link drops (empty: none yet); db the
	// database the stream had selected there.
	replID string
	offset int64
	db     int
}

// New makes the manager; a.SetReplicator(m) wires it.
func New(a *actor.Actor, cfg Config) *Manager {
	if cfg.BacklogMaxBytes <= 0 {
		cfg.BacklogMaxBytes = 256 << 20
	}
	if cfg.LoadBatchKeys <= 0 {
		cfg.LoadBatchKeys = 2000
	}
	if cfg.LoadBatchBytes <= 0 {
		cfg.LoadBatchBytes = 8 << 20
	}
	m := &Manager{a: a, cfg: cfg}
	m.status.State = "connect"
	return m
}

// SetListenPort sets the port announced to masters (REPLCONF
// listening-port) when replica-announce-port is 0: the port Cellar bound,
// known once it listens (Config.ListenPort may be 0).
func (m *Manager) SetListenPort(port int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.ListenPort = port
}

// Follow starts a link to the master f names (the actor calls it; never
// blocks). With f.ReplID, the link asks the master to continue that
// history after f.Offset (a master becoming a replica: its own).
func (m *Manager) Follow(f actor.FollowSpec) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur != nil {
		m.cur.cancel()
	}
	if f.ReplID != "" {
		// A master's own history (a new master's stream starts with a
		// SELECT after a change of history, Redis's and Cellar's), or a
		// replica's saved at a clean stop, which continues in the
		// database its master's stream had selected.
		m.replID, m.offset, m.db = f.ReplID, f.Offset, f.DB
	}
	port := f.AnnouncePort
	if port == 0 {
		port = m.cfg.ListenPort
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &link{m: m, addr: net.JoinHostPort(f.Host, strconv.Itoa(f.Port)), gen: f.Gen, ctx: ctx, cancel: cancel, db: m.db,
		announceIP: f.AnnounceIP, announcePort: port, failover: f.Failover}
	m.cur = l
	m.status = actor.ReplicaStatus{State: "connect", LinkDownSince: time.Now(), ReplID: m.replID, Offset: m.offset, ReadOffset: m.offset}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		l.run()
	}()
}

// Unfollow ends the link (REPLICAOF NO ONE); never blocks.
func (m *Manager) Unfollow() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur != nil {
		m.cur.cancel()
		m.cur = nil
	}
}

// Close ends the link and waits for its goroutines (shutdown).
func (m *Manager) Close() {
	m.Unfollow()
	m.wg.Wait()
}

// Status is the link's state (goroutine-safe).
func (m *Manager) Status() actor.ReplicaStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.status
	if l := m.cur; l != nil {
		if up := l.applied.Load(); up > 0 {
			st.Offset = up
		}
		if r := l.read.Load(); r > 0 {
			st.ReadOffset = r
		}
		if n := l.syncRead.Load(); n > 0 {
			st.SyncRead = n
		}
	}
	return st
}

// update changes the status under the lock, if l is still current.
func (m *Manager) update(l *link, fn func(st *actor.ReplicaStatus)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == l {
		fn(&m.status)
	}
}

// link is one REPLICAOF's link: sessions (connections) one after the
// other until cancelled.
type link struct {
	m      *Manager
	addr   string
	gen    uint64
	ctx    context.Context
	cancel context.CancelFunc
	// announceIP and announcePort are what REPLCONF ip-address and
	// listening-port tell the master.
	announceIP   string
	announcePort int
	// noPhysical: a physical sync of this link failed on the master's
	// copy (its check or its import): it asks for RDBs from then on. The
	// link goroutine's.
	noPhysical bool
	// failover: this server is the old master of a FAILOVER, and the
	// target has not answered yet: PSYNC carries FAILOVER (Redis 7.0's
	// syncWithMaster), and the answer goes to Actor.FailoverAnswered.
	// The link goroutine's.
	failover bool

	// read: the offset of the stream parsed; applied: the offset every
	// command up to which the actor has run; syncRead: RDB bytes read.
	read, applied, syncRead atomic.Int64

	// fs is the session's master connection in the actor, while it
	// follows (the link goroutine's).
	fs *stream
	// submitted: the stream offset at the end of the last batch submitted
	// (the link goroutine's; read by detach on the same goroutine).
	submitted int64
	// db is the database the stream had selected at submitted.
	db int
	// pendingCaughtUp: a full sync's load is in and the waitlist not yet
	// applied (the "caught up" line is due).
	pendingCaughtUp bool
	// catchUp: the stream that follows starts with a physical sync's
	// catch-up (follow), set by physicalSync; caught: it has run. Until
	// then acksHeld: no REPLCONF ACK goes, since the offset the sync
	// stands at is not yet the data's (a WAIT must not count this replica
	// for a write its catch-up has not run).
	catchUp   bool
	caught    atomic.Bool
	acksHeld  atomic.Bool
	syncStart time.Time
}

type batchEnd struct {
	offset   int64
	ack      bool // a REPLCONF GETACK ended the batch
	caughtUp bool // it ends a physical sync's catch-up
}

func (l *link) log() *zerolog.Logger { return &l.m.cfg.Log }

// run makes sessions until the link is cancelled, waiting between them
// (100 ms, doubling to 5 s; back to 100 ms after a session that synced).
func (l *link) run() {
	backoff := 100 * time.Millisecond
	for {
		synced, err := l.session()
		if l.ctx.Err() != nil {
			return
		}
		if synced {
			backoff = 100 * time.Millisecond
		}
		if errors.Is(err, errWaitlistFull) {
			l.log().Warn().Err(err).Str("master", l.addr).Dur("retry_in", backoff).
				Msg("replica: abandoning this sync, nothing of it applied: the waitlist passed replica.backlog_max_bytes; starting again")
		} else {
			l.log().Warn().Err(err).Str("master", l.addr).Dur("retry_in", backoff).Msg("replica: the link to the master is down")
		}
		select {
		case <-l.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// conn is the socket with the session's reader and a lock on writes
// (the acknowledger writes too).
type conn struct {
	net.Conn
	br  *bufio.Reader
	wmu sync.Mutex
}

func (c *conn) send(args ...string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := io.WriteString(c.Conn, b.String())
	return err
}

// line reads one reply line, skipping the empty lines a master sends to
// keep the link alive while it prepares the RDB; each of them gives the
// master keepAliveWithin more (a large RDB may take long to write).
func (c *conn) line() (string, error) {
	for {
		s, err := c.br.ReadString('\n')
		if err != nil {
			return "", err
		}
		s = strings.TrimRight(s, "\r\n")
		if s != "" {
			return s, nil
		}
		c.SetReadDeadline(time.Now().Add(keepAliveWithin))
	}
}

// keepAliveWithin is how long a replica waits for the next line of a
// master preparing its RDB (Redis's repl-timeout default).
const keepAliveWithin = 60 * time.Second

func (c *conn) call(args ...string) (string, error) {
	if err := c.send(args...); err != nil {
		return "", err
	}
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	return c.line()
}

// session is one connection to the master: handshake, full or partial
// sync, follow until it fails. synced reports that it got past the sync.
func (l *link) session() (synced bool, err error) {
	m := l.m
	l.catchUp = false
	m.update(l, func(st *actor.ReplicaStatus) { st.State = "connecting" })
	d := net.Dialer{Timeout: 10 * time.Second}
	nc, err := d.DialContext(l.ctx, "tcp", l.addr)
	if err != nil {
		return false, err
	}
	c := &conn{Conn: nc, br: bufio.NewReaderSize(nc, 64<<10)}
	done := make(chan struct{})
	var p *pipe
	// The one cleanup path of a session.
	defer func() {
		close(done)
		nc.Close()
		if p != nil {
			p.close()
		}
		l.detach()
		m.update(l, func(st *actor.ReplicaStatus) {
			st.State, st.LinkUp, st.SyncInProgress, st.LinkDownSince = "connect", false, false, time.Now()
		})
	}()
	go func() {
		select {
		case <-l.ctx.Done():
			nc.Close()
		case <-done:
		}
	}()
	m.update(l, func(st *actor.ReplicaStatus) { st.State = "handshake" })
	if r, err := c.call("PING"); err != nil {
		return false, err
	} else if r[0] == '-' && !strings.HasPrefix(r, "-NOAUTH") {
		return false, fmt.Errorf("replica: the master answered PING with %q", r)
	}
	if cfg := &m.cfg; cfg.MasterAuth != "" {
		args := []string{"AUTH", cfg.MasterAuth}
		if cfg.MasterUser != "" {
			args = []string{"AUTH", cfg.MasterUser, cfg.MasterAuth}
		}
		if r, err := c.call(args...); err != nil {
			return false, err
		} else if r[0] == '-' {
			return false, fmt.Errorf("replica: the master refused AUTH: %s", r[1:])
		}
	}
	// Redis ignores errors to these (an old master may not know them).
	if _, err := c.call("REPLCONF", "listening-port", strconv.Itoa(l.announcePort)); err != nil {
		return false, err
	}
	if l.announceIP != "" {
		if _, err := c.call("REPLCONF", "ip-address", l.announceIP); err != nil {
			return false, err
		}
	}
	capa := []string{"REPLCONF", "capa", "eof", "capa", "psync2"}
	if m.cfg.PhysicalSync && !l.noPhysical {
		// A Redis master ignores a capability it does not know.
		// cellar-catchup: the copy may be of the master's last commit,
		// the records since following it as commands (follow).
		capa = append(capa, "capa", "cellar-physical", "capa", "cellar-catchup")
	}
	if _, err := c.call(capa...); err != nil {
		return false, err
	}
	m.mu.Lock()
	replID, offset := m.replID, m.offset
	m.mu.Unlock()
	psync := []string{"PSYNC", "?", "-1"}
	if replID != "" {
		psync = []string{"PSYNC", replID, strconv.FormatInt(offset+1, 10)}
	}
	if l.failover {
		psync = append(psync, "FAILOVER")
	}
	if err := c.send(psync...); err != nil {
		l.failoverAnswered("Write error to failover target")
		return false, err
	}
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	r, err := c.line()
	if err != nil {
		return false, err
	}
	switch f := strings.Fields(r); {
	case f[0] == "+FULLRESYNC" && len(f) == 3:
		off, perr := strconv.ParseInt(f[2], 10, 64)
		if perr != nil {
			return false, fmt.Errorf("replica: bad FULLRESYNC %q", r)
		}
		if err := l.failoverAnswered(""); err != nil {
			return false, err
		}
		p, err = l.fullSync(c, f[1], off)
		if errors.Is(err, errPhysicalCheck) {
			l.noPhysical = true
			l.log().Warn().Err(err).Str("master", l.addr).Msg("replica: the physical sync failed on the master's snapshot; asking for an RDB from now on")
		}
		if err != nil {
			return false, err
		}
	case f[0] == "+CONTINUE":
		if len(f) == 2 {
			replID = f[1]
		}
		if err := m.a.ReplicaContinue(l.gen, replID, offset); err != nil {
			return false, err
		}
		if err := l.failoverAnswered(""); err != nil {
			return false, err
		}
		m.mu.Lock()
		m.replID = replID
		m.mu.Unlock()
		l.read.Store(offset)
		if l.applied.Load() == 0 {
			// A new link: nothing of it in flight. Otherwise the last
			// session's batches may still be running, and their
			// completions bring the applied offset up to where this
			// stream continues (never ahead of what ran).
			l.applied.Store(offset)
		}
		p = newPipe(0, nil, m.cfg.BacklogMaxBytes, true)
		go p.pump(c.br)
		c.br = bufio.NewReaderSize(p, 64<<10)
		l.log().Info().Str("master", l.addr).Str("replid", replID).Int64("offset", offset).Msg("replica: partial resynchronization accepted (+CONTINUE)")
		m.update(l, func(st *actor.ReplicaStatus) {
			st.ReplID, st.LinkUp, st.State, st.LastIO = replID, true, "connected", time.Now()
		})
	default:
		l.failoverAnswered("Failover target rejected psync request")
		return false, fmt.Errorf("replica: the master answered PSYNC with %q", r)
	}
	return true, l.follow(c, p)
}

// failoverAnswered reports the target's answer to PSYNC ... FAILOVER
// (rejected: why it failed, "" for a sync), once.
func (l *link) failoverAnswered(rejected string) error {
	if !l.failover {
		return nil
	}
	l.failover = false
	if rejected != "" {
		l.log().Warn().Str("master", l.addr).Str("reason", rejected).Msg("replica: the FAILOVER target refused the switch")
	}
	return l.m.a.FailoverAnswered(l.gen, rejected)
}

// fullSync receives the RDB and loads it: into the staging databases in
// batches, then swapped in whole. It returns the pipe the command stream
// continues in, with the waitlist in it.
func (l *link) fullSync(c *conn, replID string, offset int64) (*pipe, error) {
	m, a := l.m, l.m.a
	c.SetReadDeadline(time.Now().Add(5 * time.Minute))
	hdr, err := c.line()
	if err != nil {
		return nil, err
	}
	if len(hdr) < 2 || hdr[0] != '$' {
		return nil, fmt.Errorf("replica: the master sent %q where the RDB's length belongs", hdr)
	}
	c.SetReadDeadline(time.Time{})
	if size, db, catchUp, ok, err := actor.ParsePhysicalHeader(hdr); ok {
		if err != nil {
			return nil, err
		}
		return l.physicalSync(c, replID, offset, size, db, catchUp)
	}
	var mark []byte
	size := int64(-1)
	if strings.HasPrefix(hdr, "$EOF:") {
		mark = []byte(hdr[5:])
		if len(mark) != 40 {
			return nil, fmt.Errorf("replica: bad EOF mark in %q", hdr)
		}
	} else if size, err = strconv.ParseInt(hdr[1:], 10, 64); err != nil || size < 0 {
		return nil, fmt.Errorf("replica: bad RDB length %q", hdr)
	}
	start := time.Now()
	l.syncRead.Store(0)
	m.update(l, func(st *actor.ReplicaStatus) {
		st.State, st.SyncInProgress, st.SyncTotal, st.SyncRead, st.SyncLastIO = "sync", true, size, 0, start
	})
	l.log().Info().Str("master", l.addr).Str("replid", replID).Int64("offset", offset).Int64("bytes", size).Bool("diskless", mark != nil).
		Msg("replica: full resynchronization: loading the master's RDB")
	p := newPipe(size, mark, m.cfg.BacklogMaxBytes, false)
	go p.pump(c.br)
	if err := a.ReplicaBegin(l.gen); err != nil {
		return p, err
	}
	var src *bufio.Reader
	var limited *io.LimitedReader
	if mark != nil {
		src = bufio.NewReaderSize(p, 64<<10)
	} else {
		limited = &io.LimitedReader{R: p, N: size}
		src = bufio.NewReaderSize(limited, 64<<10)
	}
	rd := rdb.NewReader(src)
	var batch []*rdb.Record
	var functions [][]byte
	streamDB := 0 // repl-stream-db: the database the stream continues in
	batchBytes, keys := 0, int64(0)
	lastLog := start
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := a.ReplicaLoad(l.gen, batch)
		keys += int64(len(batch))
		batch, batchBytes = batch[:0], 0
		return err
	}
	for {
		rec, err := rd.Next()
		l.syncRead.Store(rd.Consumed())
		if err == io.EOF {
			break
		}
		if err != nil {
			return p, fmt.Errorf("replica: reading the master's RDB: %w", err)
		}
		switch rec.Kind {
		case rdb.RecordKey:
			batch = append(batch, rec)
			batchBytes += len(rec.Key) + rec.Value.Size()
			if len(batch) >= m.cfg.LoadBatchKeys || batchBytes >= m.cfg.LoadBatchBytes {
				if err := flush(); err != nil {
					return p, err
				}
			}
		case rdb.RecordFunction:
			functions = append(functions, rec.Function)
		case rdb.RecordAux:
			if string(rec.AuxKey) == "repl-stream-db" {
				if v, err := strconv.Atoi(string(rec.AuxValue)); err == nil && v >= 0 {
					streamDB = v
				}
			}
		}
		if now := time.Now(); now.Sub(lastLog) >= 5*time.Second {
			lastLog = now
			l.progress(start, rd.Consumed(), size, keys+int64(len(batch)))
			m.update(l, func(st *actor.ReplicaStatus) { st.SyncLastIO = now })
		}
	}
	if err := flush(); err != nil {
		return p, err
	}
	if mark != nil {
		var tail [40]byte
		if _, err := io.ReadFull(src, tail[:]); err != nil {
			return p, err
		}
		if string(tail[:]) != string(mark) {
			return p, errors.New("replica: the disk-less RDB does not end with its EOF mark")
		}
	} else if _, err := io.Copy(io.Discard, limited); err != nil {
		return p, err
	}
	if err := p.failed(); err != nil {
		return p, err // abandoned while the last batches loaded
	}
	if err := a.ReplicaPromote(l.gen, functions, replID, offset, streamDB); err != nil {
		return p, err
	}
	peak := p.follow()
	took := time.Since(start)
	read := rd.Consumed()
	l.log().Info().Str("master", l.addr).Int64("keys", keys).Int64("bytes", read).Dur("took", took).
		Float64("keys_per_sec", float64(keys)/took.Seconds()).Float64("mb_per_sec", float64(read)/took.Seconds()/1e6).
		Int64("waitlist_peak_bytes", peak).Msg("replica: the master's RDB is loaded and swapped in; applying the waitlist")
	l.synced(replID, offset, streamDB, start, true)
	// What follows the RDB in the pump's queue (and src's buffer) is the
	// command stream; with a length, src read nothing past the RDB.
	if mark == nil {
		c.br = bufio.NewReaderSize(p, 64<<10)
	} else {
		c.br = src
	}
	return p, nil
}

// synced records a full sync's end: the data is the master's history
// replID at offset, its stream continuing in database streamDB (a Redis
// master selects one again before its first command anyway). up: the link
// is up from here; otherwise once a physical sync's catch-up has run
// (caughtUp).
func (l *link) synced(replID string, offset int64, streamDB int, start time.Time, up bool) {
	m := l.m
	m.mu.Lock()
	m.replID, m.offset, m.db = replID, offset, streamDB
	m.mu.Unlock()
	l.read.Store(offset)
	l.applied.Store(offset)
	l.db = streamDB
	m.update(l, func(st *actor.ReplicaStatus) {
		st.ReplID, st.Offset, st.LastIO = replID, offset, time.Now()
		if up {
			st.State, st.SyncInProgress, st.LinkUp = "connected", false, true
		}
	})
	l.pendingCaughtUp = true
	l.syncStart = start
}

// caughtUp is a physical sync's catch-up, run: the link is up (it serves
// replicas of its own, INFO says so), and the history it took can be
// continued.
func (l *link) caughtUp() {
	l.caught.Store(true)
	l.acksHeld.Store(false)
	l.m.update(l, func(st *actor.ReplicaStatus) {
		st.State, st.SyncInProgress, st.LinkUp = "connected", false, true
	})
	l.log().Info().Str("master", l.addr).Dur("since_sync_start", time.Since(l.syncStart)).
		Msg("replica: the physical sync's catch-up has run; the link is up")
}

func (l *link) progress(start time.Time, read, total, keys int64) {
	el := time.Since(start).Seconds()
	ev := l.log().Info().Str("master", l.addr).Int64("bytes_read", read).Int64("keys", keys).
		Float64("mb_per_sec", float64(read)/el/1e6).Float64("keys_per_sec", float64(keys)/el)
	if total > 0 && read > 0 {
		ev = ev.Int64("bytes_total", total).Dur("eta", time.Duration(float64(total-read)/float64(read)*el*float64(time.Second)))
	}
	ev.Msg("replica: loading the master's RDB")
}
