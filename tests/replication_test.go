package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/cellar-db/cellar/internal/wait"
	"github.com/redis/go-redis/v9"
)

// The replica side of replication against a real redis-server (issue 16):
// Cellar REPLICAOF a Redis that holds keys of every type in several
// databases while a writer keeps changing it; once Cellar has caught up
// and the offsets match, every key must read the same on both.

// replKeys is how many keys the master holds beside redistest.Fill's;
// REPL_TEST_KEYS raises it (the proof runs 1000000).
func replKeys(t *testing.T) int {
	if v := os.Getenv("REPL_TEST_KEYS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("REPL_TEST_KEYS=%q: %v", v, err)
		}
		return n
	}
	return 5000
}

// seed fills the master: redistest.Fill in databases 0 and 3, and n keys
// of every type spread over databases 0, 1 and 9, a third with TTLs.
func seed(t *testing.T, ctx context.Context, addr string, n int) {
	for _, db := range []int{0, 3} {
		c := redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: 2})
		redistest.Fill(t, ctx, c, fmt.Sprintf("fill%d:", db))
		c.Close()
	}
	dbs := []int{0, 1, 9}
	for _, db := range dbs {
		c := redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: 2})
		p := c.Pipeline()
		for i := db; i < n; i += len(dbs) {
			k := "k:" + strconv.Itoa(i)
			switch i % 6 {
			case 0:
				p.Set(ctx, k, strings.Repeat("v", i%50)+strconv.Itoa(i), 0)
			case 1:
				p.RPush(ctx, k, i, "a", "b")
			case 2:
				p.HSet(ctx, k, "f", i, "g", "x")
			case 3:
				p.SAdd(ctx, k, i, i+1, "m")
			case 4:
				p.ZAdd(ctx, k, redis.Z{Score: float64(i), Member: "a"}, redis.Z{Score: 1.5, Member: "b"})
			case 5:
				p.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []any{"n", i}})
			}
			if i%3 == 0 {
				p.Expire(ctx, k, time.Duration(3600+i%100)*time.Second)
			}
			if p.Len() >= 1000 {
				if _, err := p.Exec(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
}

// writer changes the master until stopped: every type, deletions, expiries
// (long ones: a key expiring between the two reads of the comparison
// would be a false difference), MULTI blocks, two databases.
type writer struct {
	stop chan struct{}
	done sync.WaitGroup
	ops  atomic.Int64
	err  error
}

// writerMaxOps caps the writer, so that a replica under the race
// detector's slowness catches up in bounded time.
const writerMaxOps = 100000

func startWriter(ctx context.Context, addr string) *writer {
	w := &writer{stop: make(chan struct{})}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		cs := []*redis.Client{
			redis.NewClient(&redis.Options{Addr: addr, DB: 0, Protocol: 2}),
			redis.NewClient(&redis.Options{Addr: addr, DB: 5, Protocol: 2}),
		}
		defer cs[0].Close()
		defer cs[1].Close()
		r := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			c := cs[r.IntN(2)]
			k := "w:" + strconv.Itoa(r.IntN(500))
			var err error
			switch r.IntN(10) {
			case 0:
				err = c.Set(ctx, k, r.Int64(), 0).Err()
			case 1:
				err = c.Incr(ctx, "w:counter").Err()
			case 2:
				err = c.LPush(ctx, k+":l", r.IntN(100)).Err()
			case 3:
				err = c.HSet(ctx, k+":h", "f"+strconv.Itoa(r.IntN(20)), r.IntN(1000)).Err()
			case 4:
				err = c.SAdd(ctx, k+":s", r.IntN(50)).Err()
			case 5:
				err = c.ZAdd(ctx, k+":z", redis.Z{Score: r.Float64(), Member: strconv.Itoa(r.IntN(50))}).Err()
			case 6:
				err = c.XAdd(ctx, &redis.XAddArgs{Stream: k + ":x", MaxLen: 20, Values: []any{"v", r.IntN(100)}}).Err()
			case 7:
				err = c.Del(ctx, k, k+":l", "k:"+strconv.Itoa(r.IntN(1000))).Err()
			case 8:
				err = c.Expire(ctx, k+":h", time.Duration(1000+r.IntN(1000))*time.Second).Err()
			case 9:
				_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Incr(ctx, "w:tx")
					p.RPush(ctx, "w:txlist", r.IntN(10))
					p.SPop(ctx, k+":s")
					return nil
				})
			}
			if err != nil && err != redis.Nil {
				w.err = err
				return
			}
			if w.ops.Add(1) >= writerMaxOps {
				<-w.stop
				return
			}
		}
	}()
	return w
}

func (w *writer) halt(t *testing.T) {
	close(w.stop)
	w.done.Wait()
	if w.err != nil {
		t.Fatalf("writer: %v", w.err)
	}
}

// replInfo reads one field of INFO replication through go-redis.
func replInfo(ctx context.Context, c *redis.Client, field string) string {
	return infoOf(ctx, c, "replication", field)
}

func statsField(ctx context.Context, c *redis.Client, field string) string {
	return infoOf(ctx, c, "stats", field)
}

// infoOf reads one field of INFO section from c, "" on an error (a
// connection closed under it, such as one Sentinel's CLIENT KILL closed).
func infoOf(ctx context.Context, c *redis.Client, section, field string) string {
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// replicaOf makes the server behind c a replica of the master at addr
// (host:port), failing the test if REPLICAOF is refused.
func replicaOf(t *testing.T, ctx context.Context, c *redis.Client, addr string) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	if err := c.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
}

// waitSynced waits for Cellar's link to be up with no sync in progress,
// then (the writer stopped) for its offset to reach the master's.
func waitCaughtUp(t *testing.T, ctx context.Context, red, cel *redis.Client) {
	t.Helper()
	wait.For(t, 3*time.Minute, "Cellar's link to be up and synced", func() bool {
		return replInfo(ctx, cel, "master_link_status") == "up" && replInfo(ctx, cel, "master_sync_in_progress") == "0"
	})
}

func waitOffsets(t *testing.T, ctx context.Context, red, cel *redis.Client) {
	t.Helper()
	wait.For(t, 3*time.Minute, "Cellar's offset to reach the master's", func() bool {
		m := replInfo(ctx, red, "master_repl_offset")
		return m != "" && m == replInfo(ctx, cel, "slave_repl_offset")
	})
}

// compareAll requires every key of every database to read the same on
// both servers (type, value, TTL within a second).
func compareAll(t *testing.T, ctx context.Context, redAddr, celAddr string) int {
	t.Helper()
	n := 0
	for db := range 16 {
		red := redis.NewClient(&redis.Options{Addr: redAddr, DB: db, Protocol: 2})
		cel := redis.NewClient(&redis.Options{Addr: celAddr, DB: db, Protocol: 2})
		rk, err := red.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		ck, err := cel.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(rk)
		sort.Strings(ck)
		if strings.Join(rk, "\x00") != strings.Join(ck, "\x00") {
			t.Fatalf("db %d: Redis has %d keys, Cellar %d (first difference: %s)", db, len(rk), len(ck), firstKeyDiff(rk, ck))
		}
		for _, k := range rk {
			want, err := redistest.Describe(ctx, red, k)
			if err != nil {
				t.Fatal(err)
			}
			got, err := redistest.Describe(ctx, cel, k)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("db %d key %q: Cellar holds\n%.2000s\nRedis\n%.2000s", db, k, got, want)
			}
			// The expiry as a unix time, so that the moments of the two
			// reads do not matter (a busy machine put a second between
			// them); a copy made from a relative TTL may differ by its
			// own latency.
			rt, _ := red.Do(ctx, "PEXPIRETIME", k).Int64()
			ct, _ := cel.Do(ctx, "PEXPIRETIME", k).Int64()
			if (rt < 0) != (ct < 0) || rt-ct > 1000 || ct-rt > 1000 {
				t.Fatalf("db %d key %q: expires at %d (ms) on Redis, %d on Cellar", db, k, rt, ct)
			}
			n++
		}
		red.Close()
		cel.Close()
	}
	return n
}

// firstKeyDiff names up to 10 keys only Redis has and 10 only Cellar has.
func firstKeyDiff(red, cel []string) string {
	in := func(list []string) map[string]bool {
		m := make(map[string]bool, len(list))
		for _, k := range list {
			m[k] = true
		}
		return m
	}
	rm, cm := in(red), in(cel)
	var onlyR, onlyC []string
	for _, k := range red {
		if !cm[k] && len(onlyR) < 10 {
			onlyR = append(onlyR, k)
		}
	}
	for _, k := range cel {
		if !rm[k] && len(onlyC) < 10 {
			onlyC = append(onlyC, k)
		}
	}
	return fmt.Sprintf("only on Redis %q, only on Cellar %q", onlyR, onlyC)
}

func TestReplicaOfRedis(t *testing.T) {
	t.Parallel()
	for _, diskless := range []string{"no", "yes"} {
		t.Run("diskless="+diskless, func(t *testing.T) {
			ctx := context.Background()
			srv := redistest.StartTCP(t, "--repl-diskless-sync", diskless, "--repl-diskless-sync-delay", "0", "--repl-backlog-size", "64mb")
			red := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2})
			defer red.Close()
			seed(t, ctx, srv.Addr, replKeys(t))
			red.Do(ctx, "FUNCTION", "LOAD", "#!lua name=repllib\nredis.register_function('answer', function() return 42 end)")
			w := startWriter(ctx, srv.Addr)
			s := startServer(t)
			cel := s.client(func(o *redis.Options) { o.Protocol = 2 })
			host, port, _ := net.SplitHostPort(srv.Addr)
			began := time.Now()
			if got := cel.Do(ctx, "REPLICAOF", host, port).String(); got != "REPLICAOF "+host+" "+port+": OK" {
				t.Fatalf("REPLICAOF: %s", got)
			}
			if got := cel.Do(ctx, "REPLICAOF", host, port).Val(); got != "OK Already connected to specified master" {
				t.Fatalf("a second REPLICAOF: %v", got)
			}
			waitCaughtUp(t, ctx, red, cel)
			took := time.Since(began)
			keys := int64(0)
			for db := range 16 {
				keys += redis.NewClient(&redis.Options{Addr: s.addr, DB: db, Protocol: 2}).DBSize(ctx).Val()
			}
			t.Logf("full sync: %d keys in %v (%.0f keys/s, writer running)", keys, took.Round(time.Millisecond), float64(keys)/took.Seconds())
			// Writes from clients are refused; reads are served.
			if err := cel.Set(ctx, "x", 1, 0).Err(); err == nil || err.Error() != "READONLY You can't write against a read only replica." {
				t.Fatalf("SET on the replica: %v", err)
			}
			if got := cel.FCall(ctx, "answer", nil).Val(); got != int64(42) {
				t.Fatalf("FCALL of the master's function: %v", got)
			}
			// The link killed during the follow: a partial resync.
			wait.For(t, time.Minute, "the writer to have written", func() bool { return red.Get(ctx, "w:counter").Val() != "" })
			atKill := w.ops.Load()
			if err := red.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
				t.Fatal(err)
			}
			waitCaughtUp(t, ctx, red, cel)
			wait.For(t, time.Minute, "the master to count a partial resync", func() bool {
				return statsField(ctx, red, "sync_partial_ok") == "1"
			})
			if got := statsField(ctx, red, "sync_full"); got != "1" {
				t.Fatalf("the master made %s full syncs, want 1 (the kill must resync partially)", got)
			}
			wait.For(t, time.Minute, "the writer to write after the kill", func() bool {
				return w.ops.Load() > atKill+1000 || w.ops.Load() >= writerMaxOps
			})
			w.halt(t)
			waitOffsets(t, ctx, red, cel)
			n := compareAll(t, ctx, srv.Addr, s.addr)
			t.Logf("%d keys equal, writer made %d changes", n, w.ops.Load())
			if got := replInfo(ctx, red, "connected_slaves"); got != "1" {
				t.Fatalf("the master lists %s replicas", got)
			}
			// The cut-over: the data stays, writes are accepted, and a
			// restart keeps both.
			if err := cel.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
				t.Fatal(err)
			}
			if err := cel.Set(ctx, "after", "cutover", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if got := replInfo(ctx, cel, "role"); got != "master" {
				t.Fatalf("role after NO ONE: %s", got)
			}
			needCellar(t, s)
			s.restart()
			cel = s.client(func(o *redis.Options) { o.Protocol = 2 })
			if got := cel.Get(ctx, "after").Val(); got != "cutover" {
				t.Fatalf("after a restart: %q", got)
			}
			red.Set(ctx, "after", "cutover", 0)
			if n2 := compareAll(t, ctx, srv.Addr, s.addr); n2 != n+1 { // and "after"
				t.Fatalf("%d keys equal after the restart, %d before", n2, n)
			}
		})
	}
}

// TestReplicaKeepsDataUntilLoaded: a full sync killed half-way through its
// RDB leaves the data Cellar had; the sync that follows replaces it whole.
func TestReplicaKeepsDataUntilLoaded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := redistest.StartTCP(t)
	b := redistest.StartTCP(t, "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0")
	ra := redis.NewClient(&redis.Options{Addr: a.Addr, Protocol: 2})
	rb := redis.NewClient(&redis.Options{Addr: b.Addr, Protocol: 2})
	defer ra.Close()
	defer rb.Close()
	ra.Set(ctx, "from", "a", 0)
	seed(t, ctx, b.Addr, 20000)
	rb.Set(ctx, "from", "b", 0)
	s := startServer(t)
	cel := s.client(func(o *redis.Options) { o.Protocol = 2 })
	follow := func(srv *redistest.Server) {
		host, port, _ := net.SplitHostPort(srv.Addr)
		if err := cel.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
			t.Fatal(err)
		}
	}
	follow(a)
	waitCaughtUp(t, ctx, ra, cel)
	if got := cel.Get(ctx, "from").Val(); got != "a" {
		t.Fatalf("from = %q after the sync with a", got)
	}
	// b sends its RDB slowly (a delay per key as it writes it).
	if err := rb.ConfigSet(ctx, "rdb-key-save-delay", "200").Err(); err != nil {
		t.Fatal(err)
	}
	follow(b)
	wait.For(t, time.Minute, "the load from b to be under way", func() bool {
		n, _ := strconv.Atoi(replInfo(ctx, cel, "master_sync_read_bytes"))
		return replInfo(ctx, cel, "master_sync_in_progress") == "1" && n > 0
	})
	if got := cel.Get(ctx, "from").Val(); got != "a" {
		t.Fatalf("from = %q during the load from b", got)
	}
	if err := rb.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, time.Minute, "the link to b to drop", func() bool { return replInfo(ctx, cel, "master_sync_in_progress") == "0" })
	if got, n := cel.Get(ctx, "from").Val(), cel.DBSize(ctx).Val(); got != "a" || n != 1 {
		t.Fatalf("after the load was killed: from = %q, %d keys (want a's data)", got, n)
	}
	rb.ConfigSet(ctx, "rdb-key-save-delay", "0")
	waitCaughtUp(t, ctx, rb, cel)
	waitOffsets(t, ctx, rb, cel)
	if got := cel.Get(ctx, "from").Val(); got != "b" {
		t.Fatalf("from = %q after the sync with b", got)
	}
	compareAll(t, ctx, b.Addr, s.addr)
}

// TestReplicaWaitlistLimit: commands that pile up behind the RDB past
// replica.backlog_max_bytes abandon the sync (a log line) and it starts
// again; once the master is quiet, it completes. Disk-based: the master
// sends its RDB file (10 MB, more than the pump reads ahead) and at once
// the commands written during its BGSAVE, which arrive while Cellar still
// loads the file's last megabytes.
func TestReplicaWaitlistLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := redistest.StartTCP(t, "--repl-diskless-sync", "no")
	red := redis.NewClient(&redis.Options{Addr: m.Addr, Protocol: 2})
	defer red.Close()
	p := red.Pipeline()
	val := strings.Repeat("v", 10000)
	for i := range 1000 {
		p.Set(ctx, "val:"+strconv.Itoa(i), val+strconv.Itoa(i), 0) // distinct: LZF cannot shrink the file much
		p.Append(ctx, "val:"+strconv.Itoa(i), strconv.FormatUint(rand.Uint64(), 36))
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := red.ConfigSet(ctx, "rdbcompression", "no").Err(); err != nil {
		t.Fatal(err)
	}
	if err := red.ConfigSet(ctx, "rdb-key-save-delay", "1000").Err(); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *cellar.Config) { c.Replica.BacklogMaxBytes = 4096 })
	cel := s.client(func(o *redis.Options) { o.Protocol = 2 })
	host, port, _ := net.SplitHostPort(m.Addr)
	if err := cel.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, time.Minute, "the master's BGSAVE for Cellar", func() bool { return statsField(ctx, red, "sync_full") == "1" })
	// 100 writes of 1 KB during the BGSAVE: they follow the RDB.
	big := strings.Repeat("x", 1024)
	for i := range 100 {
		red.Set(ctx, "big:"+strconv.Itoa(i), big, 0)
	}
	wait.For(t, time.Minute, "the sync to be abandoned with a log line", func() bool {
		return strings.Contains(s.logBuf.String(), "abandoning this sync, nothing of it applied")
	})
	if n := cel.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("the abandoned sync left %d keys", n)
	}
	red.ConfigSet(ctx, "rdb-key-save-delay", "0")
	waitCaughtUp(t, ctx, red, cel)
	waitOffsets(t, ctx, red, cel)
	compareAll(t, ctx, m.Addr, s.addr)
	if n, _ := strconv.Atoi(statsField(ctx, red, "sync_full")); n < 2 {
		t.Fatalf("the master made %d full syncs: the abandoned one was not started again", n)
	}
}

// TestReplicaOfSetting: the replicaof setting makes Cellar a replica from
// the start.
func TestReplicaOfSetting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := redistest.StartTCP(t)
	red := redis.NewClient(&redis.Options{Addr: m.Addr, Protocol: 2})
	defer red.Close()
	red.Set(ctx, "k", "v", 0)
	s := startServer(t, func(c *cellar.Config) { c.ReplicaOf = m.Addr })
	cel := s.client(func(o *redis.Options) { o.Protocol = 2 })
	waitCaughtUp(t, ctx, red, cel)
	if got := cel.Get(ctx, "k").Val(); got != "v" {
		t.Fatalf("k = %q", got)
	}
	// WAIT on the master: it asks with REPLCONF GETACK, Cellar acks the
	// write's offset once it ran.
	red.Set(ctx, "k2", "v2", 0)
	if n, err := red.Wait(ctx, 1, time.Minute).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 on the master: %d, %v", n, err)
	}
	if got := cel.Get(ctx, "k2").Val(); got != "v2" {
		t.Fatalf("k2 = %q after WAIT", got)
	}
	host, port, _ := net.SplitHostPort(m.Addr)
	role := cel.Do(ctx, "ROLE").Val().([]any)
	if len(role) != 5 || role[0] != "slave" || role[1] != host || fmt.Sprint(role[2]) != port || role[3] != "connected" {
		t.Fatalf("ROLE: %v", role)
	}
}

// TestReplicaLogsOnlyFailures: the replica logs a master's command that
// failed on it, and reads its replies as RESP to know: a bulk reply whose
// value starts with '-' (LMOVE and LPOP of "-1") is a value, not a
// failure to report.
func TestReplicaLogsOnlyFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	red, s, cel := followRedis(t, ctx)
	red.RPush(ctx, "l", "-1", "-ERR not an error", "x")
	red.LMove(ctx, "l", "l2", "LEFT", "LEFT")
	red.LPop(ctx, "l")
	waitOffsets(t, ctx, red, cel)
	if got := cel.LRange(ctx, "l2", 0, -1).Val(); len(got) != 1 || got[0] != "-1" {
		t.Fatalf("l2 on the replica: %q", got)
	}
	if log := s.logBuf.String(); strings.Contains(log, "master's stream failed") {
		t.Fatalf("the replica reported a failure of a command that succeeded:\n%s", log)
	}
}

// followRedis starts a redis-server and a Cellar that replicates it, and
// returns once Cellar has caught up: RESP2 clients of both and Cellar's
// server.
func followRedis(t *testing.T, ctx context.Context) (red *redis.Client, s *testServer, cel *redis.Client) {
	t.Helper()
	m := redistest.StartTCP(t)
	red = redis.NewClient(&redis.Options{Addr: m.Addr, Protocol: 2})
	t.Cleanup(func() { red.Close() })
	s = startServer(t)
	needCellar(t, s)
	cel = s.client(func(o *redis.Options) { o.Protocol = 2 })
	host, port, _ := net.SplitHostPort(m.Addr)
	if err := cel.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, ctx, red, cel)
	return red, s, cel
}
