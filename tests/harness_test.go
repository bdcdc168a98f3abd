// Package tests holds Cellar's black-box suite: it starts the real server
// in-process on port 0 (or points at TEST_SERVER_ADDR, for instance a real
// Redis, to compare) and talks to it over TCP the way clients do: go-redis
// for semantics, a raw connection for exact reply bytes, malformed and split
// input, and pipelines.
package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/wait"
	"github.com/cellar-db/cellar/proto"
)

// testServer is a Cellar (or an external server) under test.
type testServer struct {
	t        testing.TB
	cfg      cellar.Config
	srv      *cellar.Server
	addr     string
	external bool
	logBuf   *syncBuffer
}

// syncBuffer collects the server log for assertions.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServer starts Cellar with its data in a fresh temporary directory;
// opts adjust the configuration. With TEST_SERVER_ADDR set, the suite uses
// that server instead (flushed first) and tests that need Cellar itself
// call needCellar.
func startServer(t testing.TB, opts ...func(*cellar.Config)) *testServer {
	t.Helper()
	if addr := os.Getenv("TEST_SERVER_ADDR"); addr != "" {
		s := &testServer{t: t, addr: addr, external: true}
		s.client().FlushAll(context.Background())
		return s
	}
	cfg := cellar.DefaultConfig()
	cfg.Port = 0
	cfg.Dir = t.TempDir()
	cfg.LogLevel = "warn"
	cfg.ShutdownTimeout = 10 * time.Second
	// A full sync starts at once (Redis waits 5 s for more replicas to
	// share it): tests that are about the wait set it themselves.
	cfg.Master.DisklessSyncDelay = 0
	// Two event loops on any machine, so that the tests' connections
	// share loops and meet on different ones (the default on two cores
	// is one loop).
	cfg.Loops = 2
	for _, o := range opts {
		o(&cfg)
	}
	s := &testServer{t: t, cfg: cfg, logBuf: &syncBuffer{}}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *testServer) start() {
	s.t.Helper()
	log := cellar.NewLogger(s.cfg, zerolog.LevelWriterAdapter{Writer: s.logBuf})
	srv, err := cellar.Start(s.cfg, log)
	if err != nil {
		s.t.Fatalf("start Cellar: %v", err)
	}
	s.srv = srv
	s.addr = srv.Addr().String()
}

func (s *testServer) stop() {
	if s.srv == nil {
		return
	}
	if s.t.Failed() {
		// What the server logged (warnings and errors) says why, when the
		// failure was the server's.
		if log := s.logBuf.String(); log != "" {
			s.t.Logf("the log of the server on %s (last 64 KB):\n%s", s.addr, log[max(0, len(log)-64<<10):])
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Shutdown ends within its context's time, or the server is stuck: the
	// test then fails saying where (a stuck server must not hold the whole
	// package until go test's timeout, with nothing to say which test).
	done := make(chan error, 1)
	id := make(chan string, 1)
	go func() {
		id <- goroutineID()
		done <- s.srv.Shutdown(ctx)
	}()
	shutdown := <-id
	select {
	case err := <-done:
		if err != nil {
			s.t.Errorf("shutdown: %v", err)
		}
	case <-time.After(3 * time.Minute):
		s.t.Errorf("the shutdown of the server on %s did not end in 3 minutes:\n%s", s.addr, stuckStacks(shutdown))
	}
	s.srv = nil
}

// goroutineID is the calling goroutine's number, as stack dumps print it.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := strings.Fields(string(buf))
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// stuckStacks is what a stuck shutdown's failure shows: the stack of the
// goroutine running it, then those of the actors not waiting for work
// (every server of the test binary: the stuck one is among them).
func stuckStacks(id string) string {
	buf := make([]byte, 16<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out strings.Builder
	for _, g := range strings.Split(string(buf), "\n\n") {
		switch {
		case strings.HasPrefix(g, "goroutine "+id+" "):
			out.WriteString(g + "\n\n")
		case strings.Contains(g, "actor.(*Actor).Run(") && !idleActor(g):
			out.WriteString(g + "\n\n")
		}
	}
	return out.String()
}

// idleActor reports whether goroutine dump g is an actor waiting in its
// select for work: its first frame of Cellar's is Actor.Run.
func idleActor(g string) bool {
	for _, line := range strings.Split(g, "\n") {
		if strings.Contains(line, "github.com/cellar-db/cellar/") && !strings.HasPrefix(line, "\t") {
			return strings.Contains(g[:strings.IndexByte(g, '\n')+1], "[select") && strings.Contains(line, "actor.(*Actor).Run(")
		}
	}
	return false
}

// restart stops Cellar gracefully and starts it again on the same data,
// keeping the port when it can.
func (s *testServer) restart() {
	s.t.Helper()
	needCellar(s.t, s)
	s.stop()
	s.start()
}

// needCellar marks a test that exercises Cellar itself (restart, config,
// limits), which an external server cannot stand in for.
func needCellar(t testing.TB, s *testServer) {
	t.Helper()
	if s.external {
		t.Skip("needs Cellar itself, not TEST_SERVER_ADDR")
	}
}

// steps is how many random commands a differential test sends for each
// seed: n with TEST_LONG=1 (make test-long), half of it in make test —
// long enough that breaking a command's reply fails it (the commits that
// halved them broke one behaviour of each family on purpose to check), short
// enough to leave make test's time to the rest of the suite.
func steps(n int) int {
	if os.Getenv("TEST_LONG") != "" {
		return n
	}
	return n / 2
}

// replyTimeout is how long a test's client waits for one reply before the
// test fails: generous, since a busy machine running the race detector
// can take seconds where a quiet one takes microseconds (go-redis's own
// default is 3 s).
const replyTimeout = 2 * time.Minute

// client returns a go-redis client with its defaults (HELLO 3, CLIENT
// SETINFO, whose error it ignores) but replyTimeout, closed at the end of
// the test.
func (s *testServer) client(opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: s.addr, ReadTimeout: replyTimeout, WriteTimeout: replyTimeout}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	s.t.Cleanup(func() { c.Close() })
	return c
}

// rawConn is a connection that speaks bytes: tests assert exact replies.
// It is the suite's one raw client, for Cellar and for the real Redis the
// compatibility tests compare with.
type rawConn struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

func (s *testServer) raw() *rawConn {
	s.t.Helper()
	return dialRaw(s.t, s.addr)
}

// dialRaw connects to addr, host:port or the path of a unix socket, for
// the rest of the test.
func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := dialAddr(addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return rawOn(t, c)
}

func dialAddr(addr string, timeout time.Duration) (net.Conn, error) {
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix"
	}
	return net.DialTimeout(network, addr, timeout)
}

// rawOn speaks bytes on a connection the caller dialled and closes.
func rawOn(t testing.TB, c net.Conn) *rawConn {
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

// encode builds a RESP array of bulk strings.
func encode(args ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

func (r *rawConn) send(b []byte) {
	r.t.Helper()
	r.c.SetWriteDeadline(time.Now().Add(replyTimeout))
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// read returns the raw bytes of one complete reply.
func (r *rawConn) read() string {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(replyTimeout))
	s, err := r.reply()
	if err != nil {
		r.t.Fatalf("read reply: %v (got %d bytes: %q)", err, len(s), clip(s))
	}
	return s
}

// clientID is the connection's CLIENT ID, as CLIENT LIST and CLIENT KILL
// name it.
func (r *rawConn) clientID() string {
	r.t.Helper()
	return strings.Trim(r.do("CLIENT", "ID"), ":\r\n")
}

// clip shortens a reply for a failure message: a 1 MB value is of no use in
// a test log.
func clip(s string) string {
	if len(s) <= 200 {
		return s
	}
	return s[:100] + "..." + s[len(s)-100:]
}

// reply reads one complete reply and returns its exact bytes (on an error,
// the bytes read so far). It sets no deadline and does not fail the test:
// it is for goroutines and for callers that report errors themselves.
func (r *rawConn) reply() (string, error) {
	rep, err := proto.ReadReply(r.r)
	return string(rep.Raw), err
}

// tryDo sends one command and returns its raw reply, within 10 seconds,
// leaving errors to the caller.
func (r *rawConn) tryDo(args ...string) (string, error) {
	r.c.SetDeadline(time.Now().Add(replyTimeout))
	if _, err := r.c.Write(encode(args...)); err != nil {
		return "", err
	}
	return r.reply()
}

// do sends one command and returns its raw reply.
func (r *rawConn) do(args ...string) string {
	r.t.Helper()
	r.send(encode(args...))
	return r.read()
}

// expect sends one command and checks its raw reply.
func (r *rawConn) expect(want string, args ...string) {
	r.t.Helper()
	if got := r.do(args...); got != want {
		r.t.Fatalf("%q: got %q, want %q", args, got, want)
	}
}

// expectClosed checks that the server closes the connection (reading EOF
// or a reset) with nothing more sent.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(replyTimeout))
	b, err := r.r.ReadByte()
	if err == nil {
		rest, _ := r.r.Peek(r.r.Buffered())
		r.t.Fatalf("connection still open; read %q", append([]byte{b}, rest...))
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r.t.Fatalf("connection still open after %v", replyTimeout)
	}
}

// waitFor polls cond until it holds, failing after timeout: the one
// polling helper, shared with the unit tests of the other packages.
var waitFor = wait.For

// Reply builders for exact-byte assertions.
func bulk(s string) string   { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
func status(s string) string { return "+" + s + "\r\n" }
func errr(s string) string   { return "-" + s + "\r\n" }
func integer(n int64) string { return ":" + strconv.FormatInt(n, 10) + "\r\n" }
func array(items ...string) string {
	return "*" + strconv.Itoa(len(items)) + "\r\n" + strings.Join(items, "")
}

const nullBulk = "$-1\r\n"

var ctx = context.Background()

// deliveries counts what concurrent consumers received, so that a test can
// check at the end that every item came exactly once.
type deliveries struct {
	mu   sync.Mutex
	seen map[string]int
	n    int
}

func newDeliveries() *deliveries { return &deliveries{seen: map[string]int{}} }

func (d *deliveries) record(items ...string) {
	d.mu.Lock()
	for _, it := range items {
		d.seen[it]++
	}
	d.n += len(items)
	d.mu.Unlock()
}

// count is how many deliveries there were, repeats included.
func (d *deliveries) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// exactlyOnce fails the test unless want distinct items came, each once.
func (d *deliveries) exactlyOnce(t testing.TB, want int) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.seen) != want {
		t.Fatalf("%d distinct items delivered, want %d", len(d.seen), want)
	}
	var dup []string
	for it, n := range d.seen {
		if n != 1 {
			dup = append(dup, fmt.Sprintf("%s×%d", it, n))
		}
	}
	if len(dup) > 0 {
		sort.Strings(dup)
		t.Fatalf("delivered more than once: %v", dup)
	}
}
