package tests

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
)

// What the blocking tests of lists (lists_test.go) and of sorted sets
// (zsets_blocking_test.go) share: the steps of a blocked client's life,
// and the scenarios both families go through, each test bringing its own
// commands and expected replies. Commands are written as one string,
// split at spaces.

// infoInt reads one integer field of INFO.
func infoInt(t testing.TB, c *redis.Client, section, field string) int {
	t.Helper()
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	m := regexp.MustCompile(`(?m)^` + field + `:(\d+)\r?$`).FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("INFO %s has no %s:\n%s", section, field, info)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// waitBlocked waits until INFO reports n blocked clients.
func waitBlocked(t testing.TB, c *redis.Client, n int) {
	t.Helper()
	waitFor(t, 20*time.Second, fmt.Sprintf("%d blocked clients", n), func() bool {
		return infoInt(t, c, "clients", "blocked_clients") == n
	})
}

func popReply(key, val string) string { return array(bulk(key), bulk(val)) }

// zpopReply is a RESP2 BZPOPMIN/BZPOPMAX reply.
func zpopReply(key, member, score string) string {
	return array(bulk(key), bulk(member), bulk(score))
}

const nullArray = "*-1\r\n"

const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// blockingTest is a server, an admin client for INFO, and r, the raw
// connection that sends the commands serving blocked clients.
type blockingTest struct {
	t     *testing.T
	s     *testServer
	admin *redis.Client
	r     *rawConn
}

func newBlockingTest(t *testing.T, opts ...func(*cellar.Config)) *blockingTest {
	t.Helper()
	s := startServer(t, opts...)
	return &blockingTest{t: t, s: s, admin: s.client(), r: s.raw()}
}

// lazyExpiry leaves expired keys to the lookups that find them: no sweep
// deletes them during the test.
func lazyExpiry(c *cellar.Config) { c.Expiry.Interval = time.Hour }

func durabilityAlways(c *cellar.Config) { c.Durability = "always" }

// block sends cmd on a fresh connection and waits until the server
// reports n blocked clients.
func (bt *blockingTest) block(n int, cmd string) *rawConn {
	bt.t.Helper()
	b := bt.s.raw()
	b.send(encode(strings.Fields(cmd)...))
	bt.blocked(n)
	return b
}

func (bt *blockingTest) blocked(n int) {
	bt.t.Helper()
	waitBlocked(bt.t, bt.admin, n)
}

// check is a command sent on r and its expected reply.
type check struct{ cmd, want string }

func (bt *blockingTest) expect(checks ...check) {
	bt.t.Helper()
	for _, c := range checks {
		bt.r.expect(c.want, strings.Fields(c.cmd)...)
	}
}

// expectClients checks a field of INFO's clients section.
func (bt *blockingTest) expectClients(field string, want int, when string) {
	bt.t.Helper()
	if n := infoInt(bt.t, bt.admin, "clients", field); n != want {
		bt.t.Fatalf("%s = %d %s", field, n, when)
	}
}

// expectWoken checks what a woken client reads.
func expectWoken(b *rawConn, want, who string) {
	b.t.Helper()
	if got := b.read(); got != want {
		b.t.Fatalf("%s got %q, want %q", who, got, want)
	}
}

// wakeCase is a client blocked by block, served by cmd (sent on r, which
// reads reply): the client reads woken, and the checks in then hold.
type wakeCase struct {
	block, cmd, reply, woken string
	then                     []check
}

func (bt *blockingTest) wake(c wakeCase) *rawConn {
	bt.t.Helper()
	b := bt.block(1, c.block)
	bt.expect(check{c.cmd, c.reply})
	expectWoken(b, c.woken, fmt.Sprintf("%s woken by %s", c.block, c.cmd))
	bt.expect(c.then...)
	return b
}

// servedAfterPush: each case's client is served by the write that brings
// its key; the last one's waiter, served, answers again.
func (bt *blockingTest) servedAfterPush(cases ...wakeCase) {
	bt.t.Helper()
	var b *rawConn
	for _, c := range cases {
		b = bt.wake(c)
	}
	b.expect("+PONG\r\n", "PING")
	bt.blocked(0)
}

// timeouts: nulls are the commands that time out with a null array in
// RESP2 (and any checks after them), resp3 those that time out with "_"
// after HELLO 3. Then a client that waits forever (forever.block) stays
// blocked while one with a short timeout (short) times out, and is served.
type timeouts struct {
	nulls   []check
	resp3   []string
	short   string
	forever wakeCase
}

func (bt *blockingTest) timeouts(c timeouts) {
	bt.t.Helper()
	bt.expect(c.nulls...)
	bt.r.do("HELLO", "3")
	for _, cmd := range c.resp3 {
		bt.expect(check{cmd, "_\r\n"})
	}
	bt.r.expect("+PONG\r\n", "PING")
	bt.expectClients("blocked_clients", 0, "after the timeouts")

	// Timeout 0 never expires: a waiter with a short timeout registered
	// after it times out first, and it is still blocked.
	forever := bt.block(1, c.forever.block)
	bt.expect(check{c.short, "_\r\n"})
	bt.expectClients("blocked_clients", 1, "after the short timeout: the timeout-0 waiter is gone")
	bt.expectClients("clients_in_timeout_table", 0, "for a timeout-0 waiter")
	bt.expect(check{c.forever.cmd, c.forever.reply})
	expectWoken(forever, c.forever.woken, "the timeout-0 waiter")
}

// multiKeyOrder: keys are scanned in the order given. first is served by a
// write to its second key; atCall are blocking commands that find both
// keys present; swap, after the setup in db 1, is served by SWAPDB 0 1
// (five times), which brings both keys at once.
type multiKeyOrder struct {
	first    wakeCase
	atCall   []check
	setup    []check
	swap     wakeCase
	swapOnly bool // swap needs Cellar itself
}

func (bt *blockingTest) multiKeyOrder(c multiKeyOrder) {
	bt.t.Helper()
	bt.wake(c.first)
	bt.expect(c.atCall...)
	if c.swapOnly && bt.s.external {
		return
	}
	for i := 0; i < 5; i++ {
		bt.expect(check{"SELECT 1", status("OK")})
		bt.expect(c.setup...)
		bt.expect(check{"SELECT 0", status("OK")})
		bt.wake(c.swap)
	}
}

// serve is a write on r (answering reply) that wakes the oldest waiters,
// one per reply in woken.
type serve struct {
	cmd, reply string
	woken      []string
}

// fifo blocks one client per command in blocks, oldest first, then runs
// each serve; between two serves the waiters left are still blocked.
func (bt *blockingTest) fifo(blocks []string, serves ...serve) {
	bt.t.Helper()
	var ws []*rawConn
	for i, cmd := range blocks {
		ws = append(ws, bt.block(i+1, cmd))
	}
	next := 0
	for i, sv := range serves {
		bt.expect(check{sv.cmd, sv.reply})
		for _, want := range sv.woken {
			expectWoken(ws[next], want, fmt.Sprintf("waiter %d", next))
			next++
		}
		if i < len(serves)-1 {
			bt.blocked(len(ws) - next)
		}
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// disconnect: two clients block with block and the first disconnects; the
// second is served by serve. Then a client blocked alone with alone
// disconnects, and the checks in kept find the element it would have
// taken where it was.
type disconnect struct {
	block string
	serve serve
	alone string
	kept  []check
}

func (bt *blockingTest) disconnect(c disconnect) {
	bt.t.Helper()
	gone := bt.block(1, c.block)
	next := bt.block(2, c.block)
	gone.c.Close()
	bt.blocked(1)
	bt.expect(check{c.serve.cmd, c.serve.reply})
	expectWoken(next, c.serve.woken[0], "the next waiter")
	alone := bt.block(1, c.alone)
	alone.c.Close()
	bt.blocked(0)
	bt.expect(c.kept...)
}

// clientKill: CLIENT KILL ends a client blocked by block (found in CLIENT
// LIST by listed, which captures its id) without a reply; the checks in
// kept find the element it would have taken where it was; and nothing was
// written to (or attempted on) a closed connection.
func (bt *blockingTest) clientKill(block, listed string, kept ...check) {
	bt.t.Helper()
	killed := bt.block(1, block)
	list := bt.r.do("CLIENT", "LIST")
	m := regexp.MustCompile(listed).FindStringSubmatch(list)
	if m == nil {
		bt.t.Fatalf("no client blocked by %s in CLIENT LIST:\n%s", block, list)
	}
	bt.r.expect(integer(1), "CLIENT", "KILL", "ID", m[1])
	killed.expectClosed()
	bt.blocked(0)
	bt.expect(kept...)
	if log := bt.s.logBuf; log != nil && strings.Contains(log.String(), `"level":"error"`) {
		bt.t.Fatalf("the server logged errors:\n%s", log.String())
	}
}

// expiredKey: the key that create makes (one element) expires; poll then
// times out with a null array, and wake's client is served by a write
// that makes the key anew.
func (bt *blockingTest) expiredKey(create, poll string, wake wakeCase) {
	bt.t.Helper()
	bt.expect(check{create, integer(1)})
	at := time.Now().Add(50 * time.Millisecond).UnixMilli()
	bt.r.expect(integer(1), "PEXPIREAT", strings.Fields(create)[1], strconv.FormatInt(at, 10))
	waitFor(bt.t, 5*time.Second, "the key's expiry to pass", func() bool { return time.Now().UnixMilli() > at+2 })
	bt.expect(check{poll, nullArray})
	bt.wake(wake)
}

// noStealing: the write, the wake and the pop are one step, so steal,
// pipelined right after the write that serves wake's client, finds
// nothing (stolen is its reply).
func (bt *blockingTest) noStealing(wake wakeCase, steal, stolen string) {
	bt.t.Helper()
	b := bt.block(1, wake.block)
	bt.r.send(append(encode(strings.Fields(wake.cmd)...), encode(strings.Fields(steal)...)...))
	if got := bt.r.read(); got != wake.reply {
		bt.t.Fatalf("%s = %q", wake.cmd, got)
	}
	if got := bt.r.read(); got != stolen {
		bt.t.Fatalf("%s after the write took %q from the waiter", steal, got)
	}
	expectWoken(b, wake.woken, "the waiter")
}

// unblockCase is a client blocked by cmd that CLIENT UNBLOCK id args ends
// with reply want.
type unblockCase struct {
	cmd  string
	args []string
	want string
}

// clientUnblock: CLIENT UNBLOCK ends each case's command as a timeout or
// an error; a second UNBLOCK finds nothing to end, and the client answers
// again. Then the checks in after find the key untouched.
func (bt *blockingTest) clientUnblock(cases []unblockCase, after ...check) {
	bt.t.Helper()
	for _, c := range cases {
		b := bt.s.raw()
		id := b.clientID()
		b.send(encode(strings.Fields(c.cmd)...))
		bt.blocked(1)
		unblock := append([]string{"CLIENT", "UNBLOCK", id}, c.args...)
		bt.r.expect(integer(1), unblock...)
		expectWoken(b, c.want, fmt.Sprintf("%s, UNBLOCK %v: the client", c.cmd, c.args))
		bt.r.expect(integer(0), unblock...)
		b.expect("+PONG\r\n", "PING")
	}
	bt.expect(after...)
}

const tooManyBlocked = "ERR too many blocked clients"

// newLimitsTest starts Cellar with the per-key and keys-per-wait limits at
// 2 and the total at total (0 leaves the default), and checks that each
// command in overKeys, waiting on more keys than that, is refused.
func newLimitsTest(t *testing.T, total int, overKeys ...string) *blockingTest {
	t.Helper()
	bt := newBlockingTest(t, func(c *cellar.Config) {
		c.Blocking.MaxWaitersPerKey = 2
		if total > 0 {
			c.Blocking.MaxTotalWaiters = total
		}
		c.Blocking.MaxKeysPerWait = 2
	})
	needCellar(t, bt.s)
	bt.refused(overKeys...)
	return bt
}

// refused checks that each command is refused for a blocking limit.
func (bt *blockingTest) refused(cmds ...string) {
	bt.t.Helper()
	for _, cmd := range cmds {
		bt.expect(check{cmd, errr(tooManyBlocked)})
	}
}

// fsyncCovers, with durability "always": clients blocked by blocks are
// served by cmd (answering reply) and read what it returns, after an
// fsync that covers the write and the pops.
func (bt *blockingTest) fsyncCovers(blocks []string, cmd, reply string) []string {
	bt.t.Helper()
	var ws []*rawConn
	for i, b := range blocks {
		ws = append(ws, bt.block(i+1, b))
	}
	fsyncs := infoInt(bt.t, bt.admin, "persistence", "log_fsyncs")
	bt.expect(check{cmd, reply})
	var got []string
	for _, w := range ws {
		got = append(got, w.read())
	}
	if n := infoInt(bt.t, bt.admin, "persistence", "log_fsyncs"); n <= fsyncs {
		bt.t.Fatalf("no fsync ran for %s and the pops (fsyncs %d -> %d)", cmd, fsyncs, n)
	}
	return got
}

// concurrentLoad is many producers and many blocking consumers on two
// keys: every item is delivered exactly once and the keys end empty.
// Producer p's j-th item is "p<p>-<j>", for the second key when j is a
// multiple of 3, else for the first.
type concurrentLoad struct {
	producers, perProducer, consumers int
	produce                           func(c *redis.Client, key, item string, j int) error
	consume                           func(c *redis.Client, i int) ([]string, error) // redis.Nil: nothing this time
	keys                              []string
	left                              func(c *redis.Client, key string) int64
	within                            time.Duration
}

func (bt *blockingTest) concurrently(l concurrentLoad) {
	bt.t.Helper()
	t := bt.t
	total := l.producers * l.perProducer
	got := newDeliveries()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, l.producers+l.consumers)
	for i := 0; i < l.consumers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := bt.s.client(func(o *redis.Options) { o.ReadTimeout = 5 * time.Second })
			for {
				select {
				case <-stop:
					return
				default:
				}
				items, err := l.consume(c, i)
				if err == redis.Nil {
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("consumer %d: %w", i, err)
					return
				}
				got.record(items...)
			}
		}(i)
	}
	var pw sync.WaitGroup
	for p := 0; p < l.producers; p++ {
		pw.Add(1)
		go func(p int) {
			defer pw.Done()
			c := bt.s.client()
			for j := 0; j < l.perProducer; j++ {
				key := l.keys[0]
				if j%3 == 0 {
					key = l.keys[1]
				}
				if err := l.produce(c, key, fmt.Sprintf("p%d-%d", p, j), j); err != nil {
					errs <- fmt.Errorf("producer %d: %w", p, err)
					return
				}
			}
		}(p)
	}
	pw.Wait()
	waitFor(t, l.within, fmt.Sprintf("%d items consumed", total), func() bool {
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		return got.count() >= total
	})
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got.exactlyOnce(t, total)
	for _, k := range l.keys {
		if n := l.left(bt.admin, k); n != 0 {
			t.Fatalf("%s has %d items left at the end", k, n)
		}
	}
	bt.blocked(0)
}
