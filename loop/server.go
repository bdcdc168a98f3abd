package loop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/cellar-db/cellar/actor"
	"github.com/cellar-db/cellar/proto"
)

// Config is the loop's part of Cellar's configuration.
type Config struct {
	Bind  string
	Port  int // 0 picks a free port (tests)
	Loops int // event loops; 0 means DefaultLoops

	MaxClients int
	Limits     proto.Limits
	// MaxQueryBuffer closes a connection whose unparsed input exceeds it
	// (Redis's client-query-buffer-limit).
	MaxQueryBuffer int
	// Output limits, with Redis's client-output-buffer-limit semantics: a
	// connection with more than OutputHardLimit bytes of unsent replies is
	// closed at once; above OutputSoftLimit its input is no longer read,
	// and if it stays above for OutputSoftTime it is closed (0: never).
	OutputHardLimit int64
	OutputSoftLimit int64
	OutputSoftTime  time.Duration
	// MaxInflight is how many batches one connection may have at the actor
	// before the loop stops parsing its input.
	MaxInflight int
	// MaxBacklog is the actor backlog (bytes of submitted requests) above
	// which no connection is parsed until the actor catches up.
	MaxBacklog int64
	// Clients is the client memory budget (maxmemory_clients), shared
	// with the actor: the loops charge each connection's input and unsent
	// output to it, and close the connections it evicts.
	Clients *actor.MemBudget
	// ProxyProtocol: connections from ProxyFrom must start with a PROXY
	// protocol header (v1 or v2) naming the real client (proxy.go).
	ProxyProtocol bool
	ProxyFrom     []*net.IPNet
}

func (c Config) withDefaults() Config {
	if c.Bind == "" {
		c.Bind = "127.0.0.1"
	}
	if c.MaxClients <= 0 {
		c.MaxClients = 10000
	}
	if c.Limits.MaxBulkLen <= 0 {
		c.Limits.MaxBulkLen = proto.DefaultLimits.MaxBulkLen
	}
	if c.Limits.MaxInline <= 0 {
		c.Limits.MaxInline = proto.DefaultLimits.MaxInline
	}
	if c.MaxQueryBuffer <= 0 {
		c.MaxQueryBuffer = 1 << 30
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = 64
	}
	if c.MaxBacklog <= 0 {
		c.MaxBacklog = 8 << 20
	}
	return c
}

// readChunk is the size of one socket read.
const readChunk = 16 << 10

// Server is the gnet engine and its event handler.
type Server struct {
	cfg Config
	log zerolog.Logger
	act *actor.Actor
	// scripts says whether the actor runs a script past
	// busy-reply-threshold (conn.busy answers for it then).
	scripts *actor.ScriptWatch
	// gate is the actor's word on authentication and protected mode.
	gate *actor.Gate

	engine gnet.Engine
	booted chan struct{}
	runErr chan error
	addr   net.Addr

	nextID    atomic.Uint64
	clients   atomic.Int64
	netIn     atomic.Uint64
	netOut    atomic.Uint64
	rejected  atomic.Uint64
	budget    *actor.MemBudget
	held      atomic.Int64 // input held by connections whose input waits
	stopping  atomic.Bool
	tickStop  chan struct{}
	tickDone  chan struct{}
	loopsMu   sync.Mutex
	loops     map[gnet.EventLoop]*eventLoop
	drainRuns atomic.Uint64 // mailbox drains, for tests of the counting mailbox
}

// New makes a server that feeds act. Start it with Start.
func New(cfg Config, act *actor.Actor, log zerolog.Logger) *Server {
	cfg = cfg.withDefaults()
	if cfg.Clients == nil {
		cfg.Clients = actor.NewMemBudget(0, log)
	}
	s := &Server{
		cfg:      cfg,
		budget:   cfg.Clients,
		log:      log,
		act:      act,
		scripts:  act.Scripts(),
		gate:     act.Gate(),
		booted:   make(chan struct{}),
		runErr:   make(chan error, 1),
		loops:    map[gnet.EventLoop]*eventLoop{},
		tickStop: make(chan struct{}),
		tickDone: make(chan struct{}),
	}
	act.SetNetStats(s)
	s.scripts.SetOnBusy(s.scriptWentBusy)
	return s
}

// scriptWentBusy asks every loop to answer the batches the actor has not
// begun, now that a script is busy (conn.claimBusy). Called on a timer's
// goroutine.
func (s *Server) scriptWentBusy() {
	s.loopsMu.Lock()
	defer s.loopsMu.Unlock()
	for _, lp := range s.loops {
		lp.el.Execute(context.Background(), lp.busyFn) // an error: the engine is stopping
	}
}

// DefaultLoops is the number of event loops when the configuration leaves
// it to Cellar: one per core the Go runtime uses, less the one the actor
// keeps busy, and at least one. On two cores one loop beside the actor
// spent 18–28% less CPU a request than two at pipeline 1, and as much at
// pipeline 16 (bench/results/2026-12-07-write-path-spot.md).
func DefaultLoops() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// Start listens and runs the event loops. It returns once the listener is
// ready, or with the reason it could not be (a port in use, say).
func (s *Server) Start() error {
	opts := []gnet.Option{
		gnet.WithMulticore(true),
		gnet.WithReuseAddr(true),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithLogger(gnetLogger{s.log}),
		// Redis reads 16 KiB at a time too (PROTO_IOBUF_LEN); it is also
		// what a paused connection may take in before it is paused
		// (readpause.go).
		gnet.WithReadBufferCap(readChunk),
	}
	loops := s.cfg.Loops
	if loops == 0 {
		loops = DefaultLoops()
	}
	opts = append(opts, gnet.WithNumEventLoop(loops))
	// gnet reports a port in use as an unrelated setsockopt error; probing
	// the address first gives the user the real reason.
	hostPort := net.JoinHostPort(s.cfg.Bind, fmt.Sprint(s.cfg.Port))
	if s.cfg.Port != 0 {
		l, err := net.Listen("tcp", hostPort)
		if err != nil {
			if errors.Is(err, unix.EADDRINUSE) {
				return fmt.Errorf("loop: %s is already in use", hostPort)
			}
			return fmt.Errorf("loop: listen on %s: %w", hostPort, err)
		}
		l.Close()
	}
	addr := "tcp://" + hostPort
	go func() { s.runErr <- gnet.Run(s, addr, opts...) }()
	select {
	case <-s.booted:
		go s.tick()
		return nil
	case err := <-s.runErr:
		if errors.Is(err, unix.EADDRINUSE) {
			return fmt.Errorf("loop: %s is already in use", hostPort)
		}
		return fmt.Errorf("loop: listen on %s: %w", hostPort, err)
	}
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.addr }

// Clients is the number of open connections.
func (s *Server) Clients() int64 { return s.clients.Load() }

// NetInputBytes, NetOutputBytes and RejectedConns implement actor.NetStats.
func (s *Server) NetInputBytes() uint64  { return s.netIn.Load() }
func (s *Server) NetOutputBytes() uint64 { return s.netOut.Load() }
func (s *Server) RejectedConns() uint64  { return s.rejected.Load() }
func (s *Server) HeldInputBytes() int64  { return s.held.Load() }

// StopReading makes every loop stop parsing new input (shutdown's first
// step: what was already submitted still completes and is written).
func (s *Server) StopReading() { s.stopping.Store(true) }

// Stop closes every connection and stops the engine. Quiesce the actor and
// the offload pool first: after the engine stops, a late Execute could
// write into a reused file descriptor (docs/architecture.md, "Shutdown").
func (s *Server) Stop(ctx context.Context) error {
	close(s.tickStop)
	<-s.tickDone
	err := s.engine.Stop(ctx)
	select {
	case <-s.runErr:
	case <-ctx.Done():
	}
	return err
}

// scriptBusy reports whether the actor runs a script past
// busy-reply-threshold.
func (s *Server) scriptBusy() bool {
	busy, _ := s.scripts.Busy()
	return busy
}

// tickEvery is how often the loops look at waiting connections: resume
// those stalled on the actor's backlog or paused on output that drained,
// close those past the soft limit time, measure unsent output again.
const tickEvery = 20 * time.Millisecond

// tick drives the output checks until Stop. Its Execute calls end before
// the engine stops (docs/architecture.md, "Shutdown").
func (s *Server) tick() {
	defer close(s.tickDone)
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-s.tickStop:
			return
		case <-t.C:
		}
		s.loopsMu.Lock()
		for _, lp := range s.loops {
			if lp.outPausedN.Load() > 0 || lp.stalledN.Load() > 0 || lp.outWatchN.Load() > 0 {
				lp.el.Execute(context.Background(), lp.checkFn)
			}
		}
		s.loopsMu.Unlock()
	}
}

// OnBoot records the engine and the bound address.
func (s *Server) OnBoot(eng gnet.Engine) gnet.Action {
	s.engine = eng
	if fd, err := eng.Dup(); err == nil {
		if sa, err := unix.Getsockname(fd); err == nil {
			switch a := sa.(type) {
			case *unix.SockaddrInet4:
				s.addr = &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}
			case *unix.SockaddrInet6:
				s.addr = &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}
			}
		}
		unix.Close(fd)
	}
	close(s.booted)
	return gnet.None
}

// OnShutdown is called once the engine stops.
func (s *Server) OnShutdown(gnet.Engine) {}

// OnTick is unused.
func (s *Server) OnTick() (time.Duration, gnet.Action) { return time.Hour, gnet.None }

// loopFor returns the Cellar state of a gnet event loop, creating it on the
// loop's first connection.
func (s *Server) loopFor(el gnet.EventLoop) *eventLoop {
	s.loopsMu.Lock()
	defer s.loopsMu.Unlock()
	lp := s.loops[el]
	if lp == nil {
		lp = &eventLoop{srv: s, el: el, conns: map[uint64]*conn{}, epfd: -1}
		lp.drainFn = gnet.RunnableFunc(lp.drain)
		lp.checkFn = gnet.RunnableFunc(lp.check)
		lp.busyFn = gnet.RunnableFunc(lp.sweepBusy)
		s.loops[el] = lp
	}
	return lp
}

// errMaxClients is the reply a connection over maxclients gets before it is
// closed.
var errMaxClients = []byte("-" + string(actor.ErrMaxClients) + "\r\n")

// deniedReply is protected mode's refusal.
var deniedReply = []byte(actor.DeniedText)

// OnOpen admits a connection, or refuses it when maxclients is reached.
func (s *Server) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	if s.clients.Load() >= int64(s.cfg.MaxClients) || s.stopping.Load() {
		s.rejected.Add(1)
		return errMaxClients, gnet.Close
	}
	remote := addrString(gc.RemoteAddr())
	// A balancer's connection is admitted once its PROXY header names the
	// client (proxy.go); any other is admitted (or refused) now.
	proxied := s.cfg.ProxyProtocol && s.proxyAllowed(remote)
	if !proxied && s.gate.DenyRemote() && !actor.IsLoopback(remote) {
		s.rejected.Add(1)
		s.log.Info().Str("addr", remote).Msg("protected mode: refused a client from a non-loopback address")
		return deniedReply, gnet.Close
	}
	s.clients.Add(1)
	lp := s.loopFor(gc.EventLoop())
	if !lp.epChecked {
		lp.epChecked, lp.epfd = true, epollFD(gc)
	}
	c := &conn{
		id:     s.nextID.Add(1),
		lp:     lp,
		gc:     gc,
		addr:   remote,
		parser: proto.NewParser(s.cfg.Limits),
		state:  stateOpen,
		expect: 1,
	}
	if ka := s.gate.TCPKeepAlive(); ka > 0 {
		setKeepAlive(gc.Fd(), ka)
	}
	c.mem = s.budget.Register(c.id, lp.evictFunc(c.id))
	c.authed = new(atomic.Bool)
	c.inMulti = new(atomic.Bool)
	c.resp = new(atomic.Int32)
	c.user = new(atomic.Pointer[string])
	c.subscribed = new(atomic.Bool)
	c.resp.Store(2)
	c.authed.Store(!s.gate.AuthRequired())
	gc.SetContext(c)
	lp.conns[c.id] = c
	if s.cfg.ProxyProtocol {
		c.proxyCheck, c.proxyWant = true, proxied
	}
	if !proxied {
		c.open()
	}
	return nil, gnet.None
}

// setKeepAlive turns TCP keepalive on for a client's socket, as Redis's
// anetKeepAlive does: probes after idle seconds, then every third of it,
// three unanswered ones closing the connection. It is best effort (a
// socket that refuses it works without).
func setKeepAlive(fd, idle int) {
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, idle)
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, max(idle/3, 1))
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPCNT, 3)
}

// admit applies protected mode to a balancer's client once its PROXY
// header named it, and opens its session; false when it was refused.
func (c *conn) admit() bool {
	srv := c.lp.srv
	if srv.gate.DenyRemote() && !actor.IsLoopback(c.addr) {
		srv.rejected.Add(1)
		srv.log.Info().Str("addr", c.addr).Msg("protected mode: refused a client from a non-loopback address")
		c.gc.Write(deniedReply)
		c.closeNow(errDenied)
		return false
	}
	c.open()
	return true
}

// open tells the actor of the connection: from now on it has a session.
func (c *conn) open() {
	c.opened = true
	c.lp.srv.act.Open(actor.ConnInfo{
		ID: c.id, Addr: c.addr, LocalAddr: localAddr(c.gc),
		FD: c.gc.Fd(), Sink: c.lp, Mem: c.mem, Authed: c.authed,
		InMulti: c.inMulti, Resp: c.resp, User: c.user, Subscribed: c.subscribed,
	})
	if e := c.lp.srv.log.Debug(); e.Enabled() {
		e.Uint64("client", c.id).Str("addr", c.addr).Msg("connection opened")
	}
}

// evictFunc is how the client memory budget closes connection id, from
// whichever goroutine found the budget exceeded: the close runs on the
// connection's own loop.
func (lp *eventLoop) evictFunc(id uint64) func() {
	return func() {
		lp.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			if c := lp.conns[id]; c != nil {
				c.closeNow(errEvicted)
			}
			return nil
		}))
	}
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// localAddr is the socket's own address. gnet reports the listener's
// configured address, which says port 0 when the port was picked for us.
func localAddr(gc gnet.Conn) string {
	sa, err := unix.Getsockname(gc.Fd())
	if err != nil {
		return addrString(gc.LocalAddr())
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return (&net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}).String()
	case *unix.SockaddrInet6:
		return (&net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}).String()
	}
	return addrString(gc.LocalAddr())
}

// OnTraffic parses what the connection sent.
func (s *Server) OnTraffic(gc gnet.Conn) gnet.Action {
	c, _ := gc.Context().(*conn)
	if c == nil {
		return gnet.Close
	}
	c.inTraffic = true
	c.readUnsure = c.readOff
	c.readable()
	c.inTraffic = false
	if c.wantClose {
		return gnet.Close
	}
	return gnet.None
}

// OnClose is the one place a connection ends (see conn.teardown).
func (s *Server) OnClose(gc gnet.Conn, err error) gnet.Action {
	if c, _ := gc.Context().(*conn); c != nil {
		c.teardown(err)
	}
	return gnet.None
}

// gnetLogger adapts zerolog to gnet's logger, dropping the "use of closed
// network connection" noise (gnet issues #517, #527).
type gnetLogger struct{ l zerolog.Logger }

func (g gnetLogger) Debugf(f string, a ...any) { g.l.Debug().Msgf(f, a...) }
func (g gnetLogger) Infof(f string, a ...any)  { g.l.Debug().Msgf(f, a...) }
func (g gnetLogger) Warnf(f string, a ...any)  { g.l.Warn().Msgf(f, a...) }
func (g gnetLogger) Errorf(f string, a ...any) {
	msg := fmt.Sprintf(f, a...)
	if !containsClosedNoise(msg) {
		g.l.Error().Msg(msg)
	}
}
func (g gnetLogger) Fatalf(f string, a ...any) { g.l.Error().Msgf(f, a...) }

func containsClosedNoise(msg string) bool {
	const noise = "use of closed network connection"
	for i := 0; i+len(noise) <= len(msg); i++ {
		if msg[i:i+len(noise)] == noise {
			return true
		}
	}
	return false
}

// Flush waits until every loop has run the mailbox drains queued so far, so
// the replies the actor has delivered are in the sockets' buffers.
func (s *Server) Flush(ctx context.Context) {
	s.loopsMu.Lock()
	loops := make([]*eventLoop, 0, len(s.loops))
	for _, lp := range s.loops {
		loops = append(loops, lp)
	}
	s.loopsMu.Unlock()
	for _, lp := range loops {
		done := make(chan struct{})
		barrier := gnet.RunnableFunc(func(context.Context) error { close(done); return nil })
		if err := lp.el.Execute(ctx, barrier); err != nil {
			continue
		}
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
	}
}
