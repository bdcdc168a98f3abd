package tests

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/wait"
	"github.com/redis/go-redis/v9"
)

// The physical full sync of a Cellar replica (actor/physical.go,
// replica/physical.go): a replica announcing REPLCONF capa cellar-physical
// gets the master's SQLite snapshot instead of an RDB and imports it into
// its staging databases; everything else (the stream from the snapshot's
// offset, the swap, the follow) is the RDB path's.

// bigValues writes values too large for their rows (blobs) in database db:
// a string, a list element and a hash value.
func bigValues(t *testing.T, ctx context.Context, addr string, db int) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: 2})
	defer c.Close()
	big := strings.Repeat("0123456789", 500)
	for i := range 20 {
		k := "big:" + strconv.Itoa(i)
		if err := c.Set(ctx, k+":s", big+strconv.Itoa(i), 0).Err(); err != nil {
			t.Fatal(err)
		}
		c.RPush(ctx, k+":l", "small", big+strconv.Itoa(i), "tail")
		c.HSet(ctx, k+":h", "small", "v", "big", big+strconv.Itoa(i))
	}
}

// physicalSyncs is the master's count of physical full syncs served.
func physicalSyncs(ctx context.Context, c *redis.Client) string {
	return statsField(ctx, c, "sync_full_physical")
}

// TestReplicaPhysicalSync: a Cellar replica of a Cellar master full-syncs
// from the master's snapshot (sync_full_physical counts it) while a writer
// changes the master; once caught up every key of every database is the
// same on both (type, value, TTL within a second), the function library
// too, and what the replica held before is gone. The imported keys then
// take the stream's changes, and survive a restart of the replica.
func TestReplicaPhysicalSync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	master := startServer(t)
	needCellar(t, master)
	mc := master.client(func(o *redis.Options) { o.Protocol = 2 })
	seed(t, ctx, master.addr, replKeys(t))
	bigValues(t, ctx, master.addr, 0)
	bigValues(t, ctx, master.addr, 7)
	if err := mc.Do(ctx, "FUNCTION", "LOAD", "#!lua name=physlib\nredis.register_function('answer', function() return 42 end)").Err(); err != nil {
		t.Fatal(err)
	}
	hc := redis.NewClient(&redis.Options{Addr: master.addr, DB: 2, Protocol: 2})
	defer hc.Close()
	hc.HSet(ctx, "fe", "a", "1", "b", "2")
	if err := hc.Do(ctx, "HEXPIRE", "fe", 3600, "FIELDS", 1, "a").Err(); err != nil {
		t.Fatal(err)
	}

	replica := startServer(t)
	rc := replica.client(func(o *redis.Options) { o.Protocol = 2 })
	r4 := redis.NewClient(&redis.Options{Addr: replica.addr, DB: 4, Protocol: 2})
	defer r4.Close()
	rc.Set(ctx, "stale:only-on-replica", "x", 0)
	r4.RPush(ctx, "stale:list", "a", "b")
	bigValues(t, ctx, replica.addr, 0) // blob refs and ids of its own, replaced by the master's

	w := startWriter(ctx, master.addr)
	host, port, _ := net.SplitHostPort(master.addr)
	if err := rc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, ctx, mc, rc)
	w.halt(t)
	t.Logf("the writer made %d writes", w.ops.Load())
	waitOffsets(t, ctx, mc, rc)
	n := compareAll(t, ctx, master.addr, replica.addr)
	t.Logf("%d keys equal", n)
	if got := physicalSyncs(ctx, mc); got != "1" {
		t.Fatalf("sync_full_physical on the master: %q, want 1", got)
	}
	if got := statsField(ctx, mc, "sync_full"); got != "1" {
		t.Fatalf("sync_full on the master: %q, want 1", got)
	}
	if got, err := rc.Do(ctx, "FCALL", "answer", 0).Int(); err != nil || got != 42 {
		t.Errorf("FCALL answer on the replica: %v %v", got, err)
	}
	if n := r4.Exists(ctx, "stale:list").Val(); n != 0 {
		t.Errorf("the replica still holds the key it had before the sync")
	}
	r2 := redis.NewClient(&redis.Options{Addr: replica.addr, DB: 2, Protocol: 2})
	defer r2.Close()
	mt, err := hc.Do(ctx, "HPEXPIRETIME", "fe", "FIELDS", 1, "a").Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := r2.Do(ctx, "HPEXPIRETIME", "fe", "FIELDS", 1, "a").Int64Slice()
	if err != nil || len(rt) != 1 || len(mt) != 1 || mt[0] <= 0 || rt[0]-mt[0] > 1000 || mt[0]-rt[0] > 1000 {
		t.Errorf("the hash field's expiry: master %v, replica %v %v", mt, rt, err)
	}

	// The stream changes the imported keys: their rows, under the ids
	// the import gave them, are read, changed and written again.
	m7 := redis.NewClient(&redis.Options{Addr: master.addr, DB: 7, Protocol: 2})
	defer m7.Close()
	for i := range 20 {
		k := "big:" + strconv.Itoa(i)
		switch i % 4 {
		case 0:
			m7.Del(ctx, k+":s", k+":l")
		case 1:
			m7.Append(ctx, k+":s", "more")
			m7.LPush(ctx, k+":l", "head")
		case 2:
			m7.HSet(ctx, k+":h", "big", "now small", "new", "field")
		case 3:
			m7.LSet(ctx, k+":l", 1, "replaced")
			m7.HDel(ctx, k+":h", "big")
		}
	}
	mc.Incr(ctx, "w:counter")
	mc.ZAdd(ctx, "k:4", redis.Z{Score: 99, Member: "new"})
	mc.SAdd(ctx, "k:3", "new")
	mc.XAdd(ctx, &redis.XAddArgs{Stream: "k:5", Values: []any{"after", "sync"}})
	waitOffsets(t, ctx, mc, rc)
	compareAll(t, ctx, master.addr, replica.addr)

	replica.cfg.ReplicaOf = host + " " + port // the role a CONFIG REWRITE would keep
	replica.restart()
	rc = replica.client(func(o *redis.Options) { o.Protocol = 2 })
	wait.For(t, 2*time.Minute, "the restarted replica's link to be up", func() bool {
		return replInfo(ctx, rc, "master_link_status") == "up"
	})
	waitOffsets(t, ctx, mc, rc)
	compareAll(t, ctx, master.addr, replica.addr)
	if got := physicalSyncs(ctx, mc); got != "1" {
		t.Errorf("sync_full_physical after the replica's restart: %q, want 1 (a partial resync)", got)
	}
}

// TestReplicaPhysicalChain: Cellar → Cellar → Cellar, each link synced
// physically; every key is the same at the end of the chain.
func TestReplicaPhysicalChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := startServer(t)
	needCellar(t, a)
	b, c := startServer(t), startServer(t)
	ac := a.client(func(o *redis.Options) { o.Protocol = 2 })
	bc := b.client(func(o *redis.Options) { o.Protocol = 2 })
	cc := c.client(func(o *redis.Options) { o.Protocol = 2 })
	seed(t, ctx, a.addr, 3000)
	bigValues(t, ctx, a.addr, 3)
	replicaOf(t, ctx, bc, a.addr)
	waitCaughtUp(t, ctx, ac, bc)
	w := startWriter(ctx, a.addr)
	replicaOf(t, ctx, cc, b.addr)
	waitCaughtUp(t, ctx, bc, cc)
	w.halt(t)
	waitOffsets(t, ctx, ac, bc)
	waitOffsets(t, ctx, ac, cc)
	n := compareAll(t, ctx, a.addr, c.addr)
	t.Logf("%d keys equal at the end of the chain", n)
	if got := physicalSyncs(ctx, ac); got != "1" {
		t.Errorf("sync_full_physical on the first node: %q, want 1", got)
	}
	if got := physicalSyncs(ctx, bc); got != "1" {
		t.Errorf("sync_full_physical on the middle node: %q, want 1", got)
	}
}

// TestReplicaPhysicalSwitchedOff: with replica.physical_sync false a
// Cellar replica asks for an RDB, as a Redis replica does, and gets one.
func TestReplicaPhysicalSwitchedOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	master := startServer(t)
	needCellar(t, master)
	mc := master.client(func(o *redis.Options) { o.Protocol = 2 })
	seed(t, ctx, master.addr, 2000)
	replica := startServer(t, func(c *cellar.Config) { c.Replica.PhysicalSync = false })
	rc := replica.client(func(o *redis.Options) { o.Protocol = 2 })
	host, port, _ := net.SplitHostPort(master.addr)
	if err := rc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, ctx, mc, rc)
	waitOffsets(t, ctx, mc, rc)
	compareAll(t, ctx, master.addr, replica.addr)
	if got := physicalSyncs(ctx, mc); got != "0" {
		t.Errorf("sync_full_physical: %q, want 0", got)
	}
	if got := statsField(ctx, mc, "sync_full"); got != "1" {
		t.Errorf("sync_full: %q, want 1", got)
	}
}

// TestPhysicalSyncWire: what a replica announcing capa cellar-physical
// receives, byte for byte: +FULLRESYNC, "$SQLITE:<len>:<db>", a SQLite
// file of that length, then the stream (a write made after the sync
// started); one without the capa gets an RDB.
func TestPhysicalSyncWire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	master := startServer(t)
	needCellar(t, master)
	mc := master.client()
	seed(t, ctx, master.addr, 500)

	r := dialReplica(t, master.addr, true)
	f := strings.Fields(r.line())
	if len(f) != 3 || f[0] != "+FULLRESYNC" {
		t.Fatalf("the answer to PSYNC without the capa: %q", f)
	}
	if hdr := r.line(); strings.HasPrefix(hdr, "$SQLITE:") {
		t.Fatalf("a replica without capa cellar-physical got %q", hdr)
	}

	p := dialReplicaCapa(t, master.addr, "eof", "psync2", "cellar-physical")
	f = strings.Fields(p.line())
	if len(f) != 3 || f[0] != "+FULLRESYNC" || len(f[1]) != 40 {
		t.Fatalf("the answer to PSYNC: %q", f)
	}
	hdr := p.line()
	rest, ok := strings.CutPrefix(hdr, "$SQLITE:")
	parts := strings.Split(rest, ":")
	if !ok || len(parts) != 2 {
		t.Fatalf("the physical sync's header: %q", hdr)
	}
	size, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || size < 4096 {
		t.Fatalf("the physical sync's length in %q", hdr)
	}
	file := make([]byte, size)
	if _, err := io.ReadFull(p.br, file); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(file), "SQLite format 3\x00") {
		t.Fatalf("the physical sync's file does not start as a SQLite database: %q", file[:16])
	}
	if err := mc.Set(ctx, "after:sync", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	p.until([]byte("after:sync"))
	if got := physicalSyncs(ctx, mc); got != "1" {
		t.Errorf("sync_full_physical: %q, want 1", got)
	}
}

// replicaOfFakeMaster starts a Cellar holding mine=kept and makes it a
// replica of a physicalFakeMaster (partial as there).
func replicaOfFakeMaster(t *testing.T, partial bool) (*testServer, *redis.Client, chan []string) {
	t.Helper()
	ctx := context.Background()
	replica := startServer(t)
	needCellar(t, replica)
	rc := replica.client()
	rc.Set(ctx, "mine", "kept", 0)
	addr, capas := physicalFakeMaster(t, partial)
	host, port, _ := net.SplitHostPort(addr)
	if err := rc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	return replica, rc, capas
}

// physicalFakeMaster accepts replicas one after the other: the first gets
// +FULLRESYNC and a "$SQLITE:" file that is not a database (whole, or with
// partial only its first bytes, the rest never coming); every
// connection's REPLCONF capa arguments are sent on capas.
func physicalFakeMaster(t *testing.T, partial bool) (addr string, capas chan []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	capas = make(chan []string, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func(first bool) {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
					if err != nil || n < 1 || n > 16 {
						return
					}
					var args []string
					for range n {
						if _, err := br.ReadString('\n'); err != nil {
							return
						}
						arg, err := br.ReadString('\n')
						if err != nil {
							return
						}
						args = append(args, strings.TrimRight(arg, "\r\n"))
					}
					switch {
					case strings.EqualFold(args[0], "PING"):
						c.Write([]byte("+PONG\r\n"))
					case strings.EqualFold(args[0], "REPLCONF") && strings.EqualFold(args[1], "capa"):
						select {
						case capas <- args[1:]:
						default:
						}
						c.Write([]byte("+OK\r\n"))
					case strings.EqualFold(args[0], "PSYNC") && first:
						junk := strings.Repeat("not a database ", 1000)
						size := len(junk)
						if partial {
							size *= 10
						}
						c.Write([]byte("+FULLRESYNC 0123456789012345678901234567890123456789 0\r\n$SQLITE:" + strconv.Itoa(size) + ":0\r\n" + junk))
					case strings.EqualFold(args[0], "PSYNC"):
						// The sync waits: nothing follows.
					default:
						c.Write([]byte("+OK\r\n"))
					}
				}
			}(n == 0)
		}
	}()
	return ln.Addr().String(), capas
}

// TestReplicaPhysicalFallsBackToRDB: a master's snapshot that fails the
// replica's check (PRAGMA quick_check) is dropped, its file removed, and
// the link's next attempt asks for an RDB (no capa cellar-physical); the
// replica's data is untouched.
func TestReplicaPhysicalFallsBackToRDB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	replica, rc, capas := replicaOfFakeMaster(t, false)
	next := func() []string {
		t.Helper()
		select {
		case c := <-capas:
			return c
		case <-time.After(2 * time.Minute):
			t.Fatal("no REPLCONF capa from the replica")
			return nil
		}
	}
	if got := strings.Join(next(), " "); !strings.Contains(got, "cellar-physical") {
		t.Fatalf("the first handshake's capa: %q, want cellar-physical in it", got)
	}
	if got := strings.Join(next(), " "); strings.Contains(got, "cellar-physical") {
		t.Fatalf("after a snapshot that failed its check the replica still asks for one: %q", got)
	}
	files, _ := filepath.Glob(filepath.Join(replica.cfg.Dir, "*replsync*"))
	if len(files) != 0 {
		t.Errorf("the failed sync's files are left: %v", files)
	}
	if got := rc.Get(ctx, "mine").Val(); got != "kept" {
		t.Errorf("the replica's data after the failed sync: %q", got)
	}
}

// TestPhysicalSyncLeftoversRemoved: the file a crash left of a physical
// sync being received (and its -wal) is removed at the next start.
func TestPhysicalSyncLeftoversRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var planted []string
	for _, name := range []string{"cellar.db-replsync-recv-4242-1.db", "cellar.db-replsync-recv-4242-1.db-wal"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("left by a crash"), 0o600); err != nil {
			t.Fatal(err)
		}
		planted = append(planted, p)
	}
	s := startServer(t, func(c *cellar.Config) { c.Dir = dir })
	needCellar(t, s)
	for _, p := range planted {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the start (%v)", p, err)
		}
	}
}

// TestReplicaPhysicalAbandoned: REPLICAOF NO ONE while a snapshot is being
// received ends the sync: the file goes, the data stays, writes are taken.
func TestReplicaPhysicalAbandoned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	replica, rc, _ := replicaOfFakeMaster(t, true)
	files := func() []string {
		f, _ := filepath.Glob(filepath.Join(replica.cfg.Dir, "*replsync-recv*"))
		return f
	}
	wait.For(t, 2*time.Minute, "the snapshot's file to be written", func() bool { return len(files()) > 0 })
	if got := replInfo(ctx, rc, "master_sync_in_progress"); got != "1" {
		t.Errorf("master_sync_in_progress while the snapshot arrives: %q", got)
	}
	if err := rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 2*time.Minute, "the snapshot's file to be removed", func() bool { return len(files()) == 0 })
	if got := rc.Get(ctx, "mine").Val(); got != "kept" {
		t.Errorf("the data after the abandoned sync: %q", got)
	}
	if err := rc.Set(ctx, "after", "v", 0).Err(); err != nil {
		t.Errorf("a write after REPLICAOF NO ONE: %v", err)
	}
}
