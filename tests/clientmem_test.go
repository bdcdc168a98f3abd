package tests

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/proto"
)

// Client memory is bounded whatever the clients do. These tests run the
// real binary with its default settings and attack it as a hostile client
// would; the server's peak resident memory (the kernel's VmHWM for the
// process) must stay under peakRSSLimit, the attackers must be disconnected
// with a log line, and a well-behaved client running at the same time must
// get every write acknowledged and find it there afterwards.

// peakRSSLimit is what the attacks below may make the server hold at its
// peak, with the default maxmemory_clients (512 MB) and output limits.
const peakRSSLimit = 1 << 30

// peakRSS is the process's peak resident set size in bytes.
func peakRSS(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// attackServer starts the real binary with default settings (and extra
// args), with 1 MB stored at "big".
func attackServer(t *testing.T, args ...string) (*proc, *redis.Client) {
	t.Helper()
	if testing.Short() {
		t.Skip("attacks need hundreds of MB and tens of seconds")
	}
	p := runCellar(t, true, append([]string{"--dir", filepath.Join(t.TempDir(), "data")}, args...)...)
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	if err := c.Set(context.Background(), "big", strings.Repeat("x", 1<<20), 0).Err(); err != nil {
		t.Fatal(err)
	}
	return p, c
}

// untilClosed keeps sending burst (a write may wait for the server to read,
// up to 100 ms) until a write fails because the server closed the
// connection; it gives up after two minutes.
func untilClosed(c net.Conn, burst []byte) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Write(burst); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue // the server is not reading it: it may be paused
			}
			return nil
		}
	}
	return errors.New("the server never closed the connection")
}

// neverReads pipelines GET big, 100 at a time, 40 times (50 ms apart when
// paced), never reads a reply, and goes on until the server closes it.
func neverReads(addr string, paced bool) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	burst := bytes.Repeat(encode("GET", "big"), 100)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for range 40 {
		c.SetWriteDeadline(time.Now().Add(time.Minute))
		if _, err := c.Write(burst); err != nil {
			return nil // closed by the server
		}
		if paced {
			<-tick.C
		}
	}
	if err := untilClosed(c, burst); err != nil {
		return fmt.Errorf("a client that pipelined GETs of 1 MB without reading: %v", err)
	}
	return nil
}

// readsSlowly pipelines like neverReads but reads its replies slowly, 16
// KiB per 10 ms (about 1.6 MB/s, far slower than it asks for them).
func readsSlowly(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	go func() {
		buf := make([]byte, 16<<10)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			c.SetReadDeadline(time.Now().Add(time.Minute))
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}()
	if err := untilClosed(c, bytes.Repeat(encode("GET", "big"), 100)); err != nil {
		return fmt.Errorf("a slow reader of GETs of 1 MB: %v", err)
	}
	return nil
}

// slowBulk announces a SET value of 400 MB and sends 200 MB of it, 1 MB at
// a time; the server must close it before it has sent it all.
func slowBulk(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(2 * time.Minute))
	if _, err := c.Write([]byte("*3\r\n$3\r\nSET\r\n$4\r\nbulk\r\n$400000000\r\n")); err != nil {
		return err
	}
	chunk := bytes.Repeat([]byte("b"), 1<<20)
	for i := 0; i < 200; i++ {
		if _, err := c.Write(chunk); err != nil {
			return nil
		}
	}
	// Sent; the server may keep the half bulk (within the budget) or have
	// evicted the client meanwhile. Either way, no reply may come.
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, _ := c.Read(make([]byte, 1)); n > 0 {
		return fmt.Errorf("slow bulk: got a reply to an unfinished command")
	}
	return nil
}

func isReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "reset by peer") || strings.Contains(err.Error(), "broken pipe"))
}

// wellBehaved SETs its own keys one at a time, reading every reply, until
// stop and at least 200 of them; it returns how many it wrote (all
// acknowledged) or the first error.
func wellBehaved(addr, prefix string, stop <-chan struct{}) (int, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for i := 0; ; i++ {
		if i >= 200 {
			select {
			case <-stop:
				return i, nil
			default:
			}
		}
		c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := c.Write(encode("SET", prefix+strconv.Itoa(i), strconv.Itoa(i))); err != nil {
			return i, err
		}
		if reply, err := proto.ReadReply(r); err != nil || string(reply.Raw) != "+OK\r\n" {
			return i, fmt.Errorf("SET %s%d: %q %v", prefix, i, reply.Raw, err)
		}
	}
}

// checkWritten asserts that keys prefix0..prefix(n-1) hold their values.
func checkWritten(t *testing.T, c *redis.Client, prefix string, n int) {
	t.Helper()
	if n == 0 {
		t.Fatalf("the well-behaved client %s wrote nothing", prefix)
	}
	for lo := 0; lo < n; lo += 1000 {
		hi := min(lo+1000, n)
		keys := make([]string, 0, hi-lo)
		for i := lo; i < hi; i++ {
			keys = append(keys, prefix+strconv.Itoa(i))
		}
		vals, err := c.MGet(context.Background(), keys...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if v != strconv.Itoa(lo+i) {
				t.Fatalf("%s: %v, want %d", keys[i], v, lo+i)
			}
		}
	}
}

// countLog counts the lines of the server's log that contain what.
func countLog(p *proc, what string) int { return strings.Count(p.stderr.String(), what) }

const (
	hardLimitLog = "closing client whose replies reached the output buffer hard limit"
	// The loop's lines when unsent output alone passes the hard limit, or
	// stays above the soft limit too long.
	outputLimitLog = "closing client that reached the output buffer hard limit"
	softLimitLog   = "closing client that stayed above the output buffer soft limit"
	evictLog       = "over maxmemory_clients"
)

// attack runs the attackers alongside two well-behaved clients and checks
// the outcome: every attacker done (those that must be closed, closed),
// with at least minLogs log lines saying why clients were closed, the well-behaved clients' writes all there, and the server's
// peak RSS under peakRSSLimit.
func attack(t *testing.T, p *proc, c *redis.Client, attackers []func() error, minLogs int) {
	t.Helper()
	stop := make(chan struct{})
	var good sync.WaitGroup
	written := make([]int, 2)
	goodErr := make([]error, 2)
	for i := range written {
		good.Add(1)
		go func() {
			defer good.Done()
			written[i], goodErr[i] = wellBehaved(p.addr, fmt.Sprintf("good%d:", i), stop)
		}()
	}
	var bad sync.WaitGroup
	errs := make(chan error, len(attackers))
	for _, a := range attackers {
		bad.Add(1)
		go func() {
			defer bad.Done()
			if err := a(); err != nil {
				errs <- err
			}
		}()
	}
	bad.Wait()
	close(stop)
	good.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, err := range goodErr {
		if err != nil {
			t.Errorf("well-behaved client %d: %v", i, err)
		}
	}
	logs := countLog(p, hardLimitLog) + countLog(p, outputLimitLog) + countLog(p, softLimitLog) + countLog(p, evictLog)
	if logs < minLogs {
		t.Errorf("%d log lines about closed clients, want at least %d\n%s", logs, minLogs, p.stderr.String())
	}
	for i, n := range written {
		checkWritten(t, c, fmt.Sprintf("good%d:", i), n)
	}
	rss := peakRSS(t, p.cmd.Process.Pid)
	t.Logf("peak RSS %d MiB; well-behaved writes %v; closed-client log lines %d", rss>>20, written, logs)
	if rss > peakRSSLimit {
		t.Errorf("peak RSS %d MiB, over %d MiB", rss>>20, peakRSSLimit>>20)
	}
}

// A client that pipelines GETs of a 1 MB value and never reads: it is
// disconnected at the output hard limit, before its replies take the
// memory (one and four such clients, paced as 40 bursts 50 ms apart).
func TestClientMemoryNeverReads(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprint(n, "clients"), func(t *testing.T) {
			p, c := attackServer(t)
			var as []func() error
			for range n {
				as = append(as, func() error { return neverReads(p.addr, true) })
			}
			attack(t, p, c, as, n)
		})
	}
}

// Eight clients each announce a 400 MB bulk and send 200 MB of it: the
// bulks in progress count against maxmemory_clients and the largest are
// evicted.
func TestClientMemorySlowBulks(t *testing.T) {
	t.Parallel()
	p, c := attackServer(t)
	var as []func() error
	for range 8 {
		as = append(as, func() error { return slowBulk(p.addr) })
	}
	attack(t, p, c, as, 1)
}

// All of it at once: clients that never read, clients that read slowly,
// and clients sending large bulks. Clients paused above the output soft
// limit are closed once they stay there for soft_seconds (2 s here, so the
// test need not wait the default minute).
func TestClientMemoryMixedAttack(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "cellar.yaml")
	if err := os.WriteFile(conf, []byte("output_buffer:\n  soft_seconds: 2s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, c := attackServer(t, "--config", conf)
	var as []func() error
	for range 3 {
		as = append(as, func() error { return neverReads(p.addr, false) })
		as = append(as, func() error { return readsSlowly(p.addr) })
		as = append(as, func() error { return slowBulk(p.addr) })
	}
	attack(t, p, c, as, 7)
}

// A client over its output hard limit has nothing more of its pipeline
// executed: the INCR behind 300 GETs of 200 KB never runs, since the
// client is closed after a handful of them.
func TestOutputLimitStopsThePipeline(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) {
		c.OutputBuffer.HardLimit = 1 << 20
		c.OutputBuffer.SoftLimit = 0
	})
	needCellar(t, s)
	admin := s.client()
	if err := admin.Set(ctx, "v", strings.Repeat("x", 200<<10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	r := s.raw()
	r.send(append(bytes.Repeat(encode("GET", "v"), 300), encode("INCR", "after")...))
	waitFor(t, 20*time.Second, "the client to be closed at its output limit", func() bool {
		return strings.Contains(s.logBuf.String(), hardLimitLog)
	})
	r.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, r.r); err != nil && !isReset(err) {
		t.Fatal(err)
	}
	s.raw().expect("$-1\r\n", "GET", "after")
}

// CLIENT LIST reports each client's memory (qbuf: input not parsed yet,
// omem: replies not sent, tot-mem: all of it), INFO the total, and CLIENT
// NO-EVICT ON exempts a client from eviction: with a 1 MB budget, the
// exempt client keeps a half-sent 3 MB bulk while another one with less is
// evicted.
func TestClientMemoryReportingAndNoEvict(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.MaxMemoryClients = 1 << 20 })
	needCellar(t, s)
	// The admin client is exempt too (and connected before the budget is
	// exceeded): with the exempt client over the budget, any other client
	// that takes memory is evicted.
	admin := s.client(func(o *redis.Options) {
		o.PoolSize = 1
		o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
			return cn.Do(ctx, "CLIENT", "NO-EVICT", "on").Err()
		}
	})
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	exempt := s.raw()
	exempt.expect("+OK\r\n", "CLIENT", "NO-EVICT", "on")
	id := exempt.clientID()
	exempt.send([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5000000\r\n"))
	exempt.send(bytes.Repeat([]byte("e"), 3<<20))
	waitFor(t, 20*time.Second, "the exempt client's bulk to be held", func() bool {
		return clientField(t, admin, id, "qbuf") >= 3<<20
	})
	if n := infoInt(t, admin, "stats", "evicted_clients"); n != 0 {
		t.Fatalf("evicted_clients %d with only an exempt client over the budget", n)
	}
	if used := infoInt(t, admin, "clients", "clients_memory"); used < 3<<20 {
		t.Fatalf("clients_memory %d, want at least the 3 MB held", used)
	}
	if tot := clientField(t, admin, id, "tot-mem"); tot < 3<<20 {
		t.Fatalf("tot-mem %d, want at least the 3 MB held", tot)
	}

	other := s.raw()
	other.send([]byte("*3\r\n$3\r\nSET\r\n$1\r\nj\r\n$5000000\r\n"))
	other.send(bytes.Repeat([]byte("o"), 64<<10))
	other.expectClosed()
	if n := infoInt(t, admin, "stats", "evicted_clients"); n != 1 {
		t.Fatalf("evicted_clients %d, want 1", n)
	}
	exempt.send(bytes.Repeat([]byte("e"), 5000000-3<<20))
	exempt.send([]byte("\r\n"))
	if got := exempt.read(); got != "+OK\r\n" {
		t.Fatalf("the exempt client's SET: %q", got)
	}
}

// clientField is a numeric field of client id's line in CLIENT LIST.
func clientField(t *testing.T, c *redis.Client, id, field string) int64 {
	t.Helper()
	list, err := c.ClientList(ctx).Result()
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	for _, line := range strings.Split(list, "\n") {
		if !strings.HasPrefix(line, "id="+id+" ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, field+"="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("%s=%q", field, v)
				}
				return n
			}
		}
	}
	t.Fatalf("no %s for client %s in %q", field, id, list)
	return 0
}

// A request more than 1 MB short is received into a buffer of its own
// (loop.receiveBig): its arguments after the large bulk, the commands
// pipelined behind it in the same write, a blocking command with a large
// argument, and a request that arrives in pieces all behave as usual.
func TestLargeRequestReceivedApart(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	r := s.raw()
	value := strings.Repeat("v", 3<<20)
	req := append(encode("SET", "k", value, "EX", "100"), encode("GET", "small")...)
	req = append(req, encode("INCR", "n")...)
	r.send(req)
	if got := r.read(); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	readIs(t, r, "$-1\r\n")
	readIs(t, r, ":1\r\n")
	if got := r.do("GET", "k"); got != bulk(value) {
		t.Fatalf("GET k: %d bytes, want %d", len(got), len(bulk(value)))
	}
	if ttl := r.do("TTL", "k"); ttl != ":100\r\n" && ttl != ":99\r\n" {
		t.Fatalf("TTL %q", ttl)
	}

	// In pieces: the header, the value 64 KiB at a time, then the end and
	// another command in one write.
	whole := append(encode("APPEND", "k", value), encode("STRLEN", "k")...)
	split := len(whole) - len(encode("STRLEN", "k")) - 10
	r.send(whole[:40])
	for off := 40; off < split; off += 64 << 10 {
		r.send(whole[off:min(off+64<<10, split)])
	}
	r.send(whole[split:])
	readIs(t, r, integer(6<<20))
	readIs(t, r, integer(6<<20))

	// A blocking command whose key is large still blocks, times out and
	// lets the commands behind it run.
	bigKey := strings.Repeat("q", 2<<20)
	r.send(append(encode("BLPOP", bigKey, "0.05"), encode("PING")...))
	readIs(t, r, "*-1\r\n")
	readIs(t, r, "+PONG\r\n")
}

// readIs reads one reply and checks its bytes.
func readIs(t *testing.T, r *rawConn, want string) {
	t.Helper()
	if got := r.read(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// CONFIG SET maxmemory-clients changes the budget at run time, with
// Redis's memory units; a budget lowered under what clients hold evicts at
// once.
func TestConfigSetMaxMemoryClients(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	admin := s.raw()
	admin.expect("+OK\r\n", "CLIENT", "NO-EVICT", "on")
	admin.expect(array(bulk("maxmemory-clients"), bulk("268435456")), "CONFIG", "GET", "maxmemory-clients")
	admin.expect("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "64mb")
	admin.expect(array(bulk("maxmemory-clients"), bulk("67108864")), "CONFIG", "GET", "maxmemory-clients")
	admin.expect("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "3000k")
	admin.expect(array(bulk("maxmemory-clients"), bulk("3000000")), "CONFIG", "GET", "maxmemory-clients")
	for v, why := range map[string]string{
		"lots": "argument must be a memory or percent value",
		"101%": "percentage argument must be less or equal to 100",
		"1000": "argument must be 0 (no limit) or at least 1mb",
	} {
		admin.expect(errr("ERR CONFIG SET failed (possibly related to argument 'maxmemory-clients') - "+why),
			"CONFIG", "SET", "maxmemory-clients", v)
	}

	// A client holding 2 MB of a bulk stays under 8 MB, and goes when the
	// budget falls to 1 MB.
	admin.expect("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "8mb")
	holder := s.raw()
	holder.send([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4000000\r\n"))
	holder.send(bytes.Repeat([]byte("h"), 2<<20))
	waitFor(t, 20*time.Second, "the bulk to be held", func() bool {
		m := regexp.MustCompile(`clients_memory:(\d+)`).FindStringSubmatch(admin.do("INFO", "clients"))
		n, _ := strconv.Atoi(m[1])
		return n >= 2<<20
	})
	admin.expect("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "1mb")
	holder.expectClosed()
	if !strings.Contains(admin.do("INFO", "stats"), "evicted_clients:1\r\n") {
		t.Fatal("INFO stats does not count the eviction")
	}
	admin.expect("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "0")
	admin.expect(array(bulk("maxmemory-clients"), bulk("0")), "CONFIG", "GET", "maxmemory-clients")
}
