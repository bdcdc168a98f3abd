package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/cellar-db/cellar/internal/wait"
)

// PSYNC2 (actor/master.go, actor/replication.go): a promoted replica keeps
// its offset and the history it followed as its second ID, so that the
// replicas of the same master continue from it with +CONTINUE; a replica
// keeps its master's stream, byte for byte, in its backlog.

// tapMax bounds what a tap keeps of a stream.
const tapMax = 16 << 20

// tap is a raw replica: it sends PSYNC and keeps every byte of the stream
// after the reply (and after the RDB of a full resync).
type tap struct {
	conn  net.Conn
	reply string // +FULLRESYNC <id> <offset> or +CONTINUE <id>
	// offset is where the kept stream starts: its first byte is offset+1.
	offset int64
	mu     sync.Mutex
	buf    []byte
	err    error
}

// startTap connects to addr and sends PSYNC id from.
func startTap(t testing.TB, addr, id string, from int64) *tap {
	t.Helper()
	c, err := dialAddr(addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(2 * time.Minute))
	br := bufio.NewReader(c)
	line := func() string {
		for {
			s, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("tap on %s: %v", addr, err)
			}
			if s = strings.TrimRight(s, "\r\n"); s != "" {
				return s
			}
		}
	}
	c.Write(encode("REPLCONF", "capa", "eof", "capa", "psync2"))
	if got := line(); got != "+OK" {
		t.Fatalf("tap: REPLCONF capa: %q", got)
	}
	c.Write(encode("PSYNC", id, strconv.FormatInt(from, 10)))
	tp := &tap{conn: c, reply: line()}
	f := strings.Fields(tp.reply)
	switch {
	case f[0] == "+FULLRESYNC" && len(f) == 3:
		tp.offset, _ = strconv.ParseInt(f[2], 10, 64)
		hdr := line()
		if mark, ok := strings.CutPrefix(hdr, "$EOF:"); ok {
			// The diskless form: the RDB ends with the mark.
			var got []byte
			for !bytes.HasSuffix(got, []byte(mark)) {
				b, err := br.ReadByte()
				if err != nil {
					t.Fatalf("tap: the RDB up to its mark: %v", err)
				}
				got = append(got, b)
			}
			// The stream since waits for the first acknowledgement.
			c.Write(encode("REPLCONF", "ACK", strconv.FormatInt(tp.offset, 10)))
			break
		}
		n, err := strconv.Atoi(strings.TrimPrefix(hdr, "$"))
		if err != nil {
			t.Fatalf("tap: RDB header %q", hdr)
		}
		if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
			t.Fatal(err)
		}
	case f[0] == "+CONTINUE":
		tp.offset = from - 1
	default:
		return tp
	}
	c.SetDeadline(time.Time{})
	go func() {
		b := make([]byte, 64<<10)
		for {
			n, err := br.Read(b)
			tp.mu.Lock()
			if len(tp.buf)+n > tapMax {
				tp.err = fmt.Errorf("tap: more than %d bytes", tapMax)
			} else {
				tp.buf = append(tp.buf, b[:n]...)
			}
			if err != nil && tp.err == nil {
				tp.err = err
			}
			stop := tp.err != nil
			tp.mu.Unlock()
			if stop {
				return
			}
		}
	}()
	return tp
}

// bytes waits for the first n bytes of the kept stream.
func (tp *tap) bytes(t testing.TB, n int64) []byte {
	t.Helper()
	var out []byte
	wait.For(t, 60*time.Second, fmt.Sprintf("the tap to hold %d bytes of the stream", n), func() bool {
		tp.mu.Lock()
		defer tp.mu.Unlock()
		if int64(len(tp.buf)) >= n {
			out = append([]byte(nil), tp.buf[:n]...)
			return true
		}
		return false
	})
	return out
}

func replInt(t testing.TB, c *redis.Client, section, field string) int64 {
	t.Helper()
	v := masterInfo(t, c, section, field)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("INFO %s %s: %q", section, field, v)
	}
	return n
}

// sameOffset waits until every client's master_repl_offset is the first's,
// the replicas' links up.
func sameOffset(t testing.TB, what string, master *redis.Client, replicas ...*redis.Client) {
	t.Helper()
	wait.For(t, 120*time.Second, what, func() bool {
		want := masterInfo(t, master, "replication", "master_repl_offset")
		for _, r := range replicas {
			if masterInfo(t, r, "replication", "master_link_status") != "up" ||
				masterInfo(t, r, "replication", "master_repl_offset") != want {
				return false
			}
		}
		return true
	})
}

// TestPromotedReplicaContinues: Cellar A has two Cellar replicas, B and
// C, and a Redis replica. A stops; B is promoted with REPLICAOF NO ONE: it
// keeps its offset, its master_replid2 is A's ID and second_repl_offset
// the offset it reached plus one. C and the Redis replica, moved to B,
// continue with +CONTINUE (B's sync_partial_ok, no full resync), and B's
// backlog holds A's stream byte for byte (a raw PSYNC with A's ID gets
// from B exactly what A had sent). A, restarted (its ID and offset kept
// by the clean stop), joins B as a replica with +CONTINUE as well.
func TestPromotedReplicaContinues(t *testing.T) {
	t.Parallel()
	a := startServer(t)
	needCellar(t, a)
	ctx := context.Background()
	ac, ac5 := a.client(), a.client(func(o *redis.Options) { o.DB = 5 })
	// No PING from A between the offsets' check and its stop: B must have
	// all A sent, for A to continue from B afterwards.
	a.raw().expect(status("OK"), "CONFIG", "SET", "repl-ping-replica-period", "3600")
	redistest.Fill(t, ctx, ac, "pre:")
	ahost, aport, _ := net.SplitHostPort(a.addr)

	b, c := startServer(t), startServer(t)
	bc, cc := b.client(), c.client()
	// B's backlog must hold what A sends after the tap starts (some 1.2 MB).
	b.raw().expect(status("OK"), "CONFIG", "SET", "repl-backlog-size", "16mb")
	for _, r := range []*redis.Client{bc, cc} {
		if err := r.Do(ctx, "REPLICAOF", ahost, aport).Err(); err != nil {
			t.Fatal(err)
		}
	}
	red := redistest.StartTCP(t, "--replicaof", ahost, aport)
	rc := redis.NewClient(&redis.Options{Addr: red.Addr})
	defer rc.Close()
	sameOffset(t, "B, C and Redis to reach A's offset", ac, bc, cc, rc)
	aID := masterInfo(t, ac, "replication", "master_replid")
	if got := masterInfo(t, bc, "replication", "master_replid"); got != aID {
		t.Fatalf("B's master_replid %q, A's %q (a replica takes its master's ID)", got, aID)
	}

	// A tap on A, after B synced: B's backlog covers the stream from the
	// tap's start on.
	ta := startTap(t, a.addr, "?", -1)
	if !strings.HasPrefix(ta.reply, "+FULLRESYNC "+aID+" ") {
		t.Fatalf("tap on A: %q", ta.reply)
	}
	redistest.Fill(t, ctx, ac, "live:")
	redistest.Fill(t, ctx, ac5, "live5:")
	ac.Do(ctx, "SET", "live:ex", "v", "EX", 1000)
	ac5.Incr(ctx, "live5:counter")
	sameOffset(t, "B, C and Redis to apply A's stream", ac, bc, cc, rc)
	aOff := replInt(t, ac, "replication", "master_repl_offset")
	if got := replInt(t, bc, "replication", "repl_backlog_histlen"); got == 0 {
		t.Errorf("B's repl_backlog_histlen is 0: a replica keeps its master's stream")
	}
	fromA := ta.bytes(t, aOff-ta.offset)
	a.stop()

	raw := b.raw()
	raw.expect(status("OK"), "REPLICAOF", "NO", "ONE")
	bID := masterInfo(t, bc, "replication", "master_replid")
	if bID == aID || len(bID) != 40 {
		t.Errorf("B's master_replid after the promotion: %q (A's %q)", bID, aID)
	}
	if got := masterInfo(t, bc, "replication", "master_replid2"); got != aID {
		t.Errorf("B's master_replid2: %q, want A's %q", got, aID)
	}
	if got := replInt(t, bc, "replication", "second_repl_offset"); got != aOff+1 {
		t.Errorf("B's second_repl_offset: %d, want %d", got, aOff+1)
	}
	if got := replInt(t, bc, "replication", "master_repl_offset"); got != aOff {
		t.Errorf("B's master_repl_offset after the promotion: %d, want A's %d", got, aOff)
	}

	// A raw PSYNC with A's ID at the tap's start: B's backlog is A's
	// stream as A sent it.
	tb := startTap(t, b.addr, aID, ta.offset+1)
	if tb.reply != "+CONTINUE "+bID {
		t.Fatalf("PSYNC %s %d to B: %q, want +CONTINUE %s", aID, ta.offset+1, tb.reply, bID)
	}
	if got := tb.bytes(t, aOff-ta.offset); !bytes.Equal(got, fromA) {
		t.Fatalf("B's backlog differs from A's stream (%d bytes)\nA: %.300q\nB: %.300q", len(fromA), fromA, got)
	}
	// Past the second ID's end: a full resync.
	if tp := startTap(t, b.addr, aID, aOff+2); !strings.HasPrefix(tp.reply, "+FULLRESYNC "+bID+" ") {
		t.Errorf("PSYNC %s %d (past second_repl_offset) to B: %q", aID, aOff+2, tp.reply)
	}
	partial := replInt(t, bc, "stats", "sync_partial_ok")
	full := replInt(t, bc, "stats", "sync_full")

	bhost, bport, _ := net.SplitHostPort(b.addr)
	for _, r := range []*redis.Client{cc, rc} {
		if err := r.Do(ctx, "REPLICAOF", bhost, bport).Err(); err != nil {
			t.Fatal(err)
		}
	}
	wait.For(t, 120*time.Second, "C and Redis to continue from B (two more sync_partial_ok)", func() bool {
		return replInt(t, bc, "stats", "sync_partial_ok") == partial+2
	})
	if got := replInt(t, bc, "stats", "sync_full"); got != full {
		t.Errorf("B's sync_full went from %d to %d: a replica of A needed a full resync", full, got)
	}
	bc.Set(ctx, "after:promotion", "v", 0)
	redistest.Fill(t, ctx, b.client(func(o *redis.Options) { o.DB = 5 }), "b5:")
	sameOffset(t, "C and Redis to follow B", bc, cc, rc)
	for _, r := range []*redis.Client{cc, rc} {
		if got := masterInfo(t, r, "replication", "master_replid"); got != bID {
			t.Errorf("a replica of B has master_replid %q, want B's %q", got, bID)
		}
	}
	if got := masterInfo(t, cc, "replication", "master_replid2"); got != aID {
		t.Errorf("C's master_replid2: %q, want A's %q", got, aID)
	}
	for _, db := range []int{0, 5} {
		sameKeys(t, db, b.addr, c.addr)
		sameKeys(t, db, b.addr, red.Addr)
	}

	// The old master, restarted, joins B with its own history.
	a.start()
	ac = a.client()
	if got := masterInfo(t, ac, "replication", "master_replid"); got != aID {
		t.Fatalf("A's master_replid after its restart: %q, want %q", got, aID)
	}
	if err := ac.Do(ctx, "REPLICAOF", bhost, bport).Err(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 120*time.Second, "A to continue from B (sync_partial_ok)", func() bool {
		return replInt(t, bc, "stats", "sync_partial_ok") == partial+3
	})
	sameOffset(t, "A to follow B", bc, ac)
	if got := replInt(t, bc, "stats", "sync_full"); got != full {
		t.Errorf("B's sync_full went from %d to %d when A joined", full, got)
	}
	if got := ac.Get(ctx, "after:promotion").Val(); got != "v" {
		t.Errorf("after:promotion on A: %q", got)
	}
	sameKeys(t, 0, b.addr, a.addr)
	sameKeys(t, 5, b.addr, a.addr)
}

// TestCellarContinuesFromPromotedRedis: a Cellar replica of a Redis
// master whose other (Redis) replica is promoted continues from it with
// +CONTINUE: its offset is exactly Redis's, and it takes the new ID with
// the old one as its second.
func TestCellarContinuesFromPromotedRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r1 := redistest.StartTCP(t)
	r1c := redis.NewClient(&redis.Options{Addr: r1.Addr})
	defer r1c.Close()
	host, port, _ := net.SplitHostPort(r1.Addr)
	r2 := redistest.StartTCP(t, "--replicaof", host, port)
	r2c := redis.NewClient(&redis.Options{Addr: r2.Addr})
	defer r2c.Close()
	cel := startServer(t)
	cc := cel.client()
	if err := cc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	redistest.Fill(t, ctx, r1c, "r1:")
	r1c.Do(ctx, "SET", "r1:ex", "v", "EX", 1000)
	sameOffset(t, "Redis and Cellar replicas to reach the master's offset", r1c, r2c, cc)
	r1ID := masterInfo(t, r1c, "replication", "master_replid")

	r2c.Do(ctx, "REPLICAOF", "NO", "ONE")
	r2ID := masterInfo(t, r2c, "replication", "master_replid")
	h2, p2, _ := net.SplitHostPort(r2.Addr)
	if err := cc.Do(ctx, "REPLICAOF", h2, p2).Err(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 120*time.Second, "the promoted Redis to count Cellar's partial resync", func() bool {
		return masterInfo(t, r2c, "stats", "sync_partial_ok") == "1"
	})
	if got := masterInfo(t, r2c, "stats", "sync_full"); got != "0" {
		t.Errorf("the promoted Redis's sync_full: %q, want 0", got)
	}
	r2c.Set(ctx, "after:promotion", "v", 0)
	sameOffset(t, "Cellar to follow the promoted Redis", r2c, cc)
	if got := masterInfo(t, cc, "replication", "master_replid"); got != r2ID {
		t.Errorf("Cellar's master_replid: %q, want the new master's %q", got, r2ID)
	}
	if got := masterInfo(t, cc, "replication", "master_replid2"); got != r1ID {
		t.Errorf("Cellar's master_replid2: %q, want the old master's %q", got, r1ID)
	}
	sameKeys(t, 0, r2.Addr, cel.addr)
}

// TestReplicationChains: Cellar → Cellar → Cellar and Cellar → Cellar →
// Redis (a Cellar replica serving replicas of its own: full resyncs from
// its snapshot while a writer runs on the top master, then its master's
// stream passed on byte for byte, offsets the same along the chain), and
// Cellar → Redis → Cellar. A full resync of the middle replica
// disconnects its replicas, which resync from it. A replica whose link is
// down refuses PSYNC with -NOMASTERLINK.
func TestReplicationChains(t *testing.T) {
	t.Parallel()
	a := startServer(t)
	needCellar(t, a)
	ctx := context.Background()
	ac, ac5 := a.client(), a.client(func(o *redis.Options) { o.DB = 5 })
	redistest.Fill(t, ctx, ac, "pre:")
	redistest.Fill(t, ctx, ac5, "pre5:")
	ac.Set(ctx, "pre:ttl", "v", time.Hour)
	ahost, aport, _ := net.SplitHostPort(a.addr)

	// A writer on A throughout the syncs.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var written atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ac.Incr(ctx, "w:counter")
			ac5.RPush(ctx, "w5:list", i)
			ac.Set(ctx, fmt.Sprintf("w:%d", i%300), i, 0)
			written.Add(1)
		}
	}()

	b := startServer(t)
	bc := b.client()
	b.raw().expect(status("OK"), "CONFIG", "SET", "repl-backlog-size", "16mb")
	if err := bc.Do(ctx, "REPLICAOF", ahost, aport).Err(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 120*time.Second, "B's link to A to come up", func() bool {
		return masterInfo(t, bc, "replication", "master_link_status") == "up"
	})
	bhost, bport, _ := net.SplitHostPort(b.addr)
	c := startServer(t)
	cc := c.client()
	if err := cc.Do(ctx, "REPLICAOF", bhost, bport).Err(); err != nil {
		t.Fatal(err)
	}
	red := redistest.StartTCP(t, "--replicaof", bhost, bport)
	rc := redis.NewClient(&redis.Options{Addr: red.Addr})
	defer rc.Close()
	// Cellar → Redis → Cellar.
	mid := redistest.StartTCP(t, "--replicaof", ahost, aport)
	mc := redis.NewClient(&redis.Options{Addr: mid.Addr})
	defer mc.Close()
	mhost, mport, _ := net.SplitHostPort(mid.Addr)
	d := startServer(t)
	dc := d.client()
	if err := dc.Do(ctx, "REPLICAOF", mhost, mport).Err(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 120*time.Second, "every link to come up", func() bool {
		for _, r := range []*redis.Client{cc, rc, mc, dc} {
			if masterInfo(t, r, "replication", "master_link_status") != "up" {
				return false
			}
		}
		return true
	})
	at := written.Load()
	wait.For(t, 60*time.Second, "the writer to go on after the syncs", func() bool { return written.Load() > at+50 })

	// Byte for byte: B passes on what A sends, at the same offsets.
	aID := masterInfo(t, ac, "replication", "master_replid")
	ta := startTap(t, a.addr, "?", -1)
	tb := startTap(t, b.addr, aID, ta.offset+1)
	if tb.reply != "+CONTINUE "+aID {
		t.Fatalf("PSYNC %s %d to B: %q (a replica has its master's ID and offsets)", aID, ta.offset+1, tb.reply)
	}
	redistest.Fill(t, ctx, ac, "live:")
	close(stop)
	wg.Wait()
	sameOffset(t, "every replica down both chains to reach A's offset", ac, bc, cc, rc, mc, dc)
	n := replInt(t, ac, "replication", "master_repl_offset") - ta.offset
	if fromA, fromB := ta.bytes(t, n), tb.bytes(t, n); !bytes.Equal(fromA, fromB) {
		t.Fatalf("B's stream differs from A's (%d bytes)", n)
	}
	if got := masterInfo(t, bc, "replication", "connected_slaves"); got != "3" {
		t.Errorf("B's connected_slaves: %q, want 3 (C, Redis, the tap)", got)
	}
	for _, db := range []int{0, 5} {
		sameKeys(t, db, a.addr, b.addr)
		sameKeys(t, db, a.addr, c.addr)
		sameKeys(t, db, a.addr, red.Addr)
		sameKeys(t, db, a.addr, d.addr)
	}
	t.Logf("%d rounds of writes on A during the syncs", written.Load())

	// B resyncs in full: it follows a master that is not there while A
	// writes more than A's backlog holds, then A again. Its replicas stay
	// on it meanwhile; its full resync disconnects them, and they resync
	// from it.
	bFull := replInt(t, bc, "stats", "sync_full")
	aFull := replInt(t, ac, "stats", "sync_full")
	a.raw().expect(status("OK"), "CONFIG", "SET", "repl-backlog-size", "16384")
	b.raw().expect(status("OK"), "REPLICAOF", "127.0.0.1", strconv.Itoa(freePort(t)))
	for i := range 200 {
		ac.Set(ctx, fmt.Sprintf("gap:%d", i), strings.Repeat("x", 200), 0)
	}
	if got := masterInfo(t, cc, "replication", "master_link_status"); got != "up" {
		t.Errorf("C's link to B while B has no master: %q, want up", got)
	}
	b.raw().expect(status("OK"), "REPLICAOF", ahost, aport)
	wait.For(t, 120*time.Second, "A to count B's full resync", func() bool {
		return replInt(t, ac, "stats", "sync_full") > aFull
	})
	sameOffset(t, "the chain to catch up after B's full resync", ac, bc, cc, rc)
	if got := replInt(t, bc, "stats", "sync_full"); got <= bFull {
		t.Errorf("B's sync_full %d: its replicas should have resynced in full from it (before: %d)", got, bFull)
	}
	for _, db := range []int{0, 5} {
		sameKeys(t, db, a.addr, c.addr)
		sameKeys(t, db, a.addr, red.Addr)
	}

	// A replica with no link refuses PSYNC.
	e := startServer(t)
	ec := e.client()
	if err := ec.Do(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(freePort(t))).Err(); err != nil {
		t.Fatal(err)
	}
	e.raw().expect(errr("NOMASTERLINK Can't SYNC while not connected with my master"), "PSYNC", "?", "-1")
}

// TestReplicaChangingMastersContinues: a Cellar replica B of A, moved
// with REPLICAOF to C, another replica of A (so C's backlog holds A's
// stream), asks C to continue from the offset it has applied — not from
// where its last full sync stood — and continues with +CONTINUE: C
// serves no full sync, and nothing of A's stream runs twice on B (a
// counter A incremented 100 times reads 100 on B, and keeps following).
func TestReplicaChangingMastersContinues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := startServer(t)
	needCellar(t, a)
	ac := a.client()
	host, port, _ := net.SplitHostPort(a.addr)
	follow := func(c *cellar.Config) { c.ReplicaOf = host + " " + port }
	b, c := startServer(t, follow), startServer(t, follow)
	bc, cc := b.client(), c.client()
	sameOffset(t, "B and C to reach A's offset", ac, bc, cc)
	for range 100 {
		if err := ac.Incr(ctx, "counter").Err(); err != nil {
			t.Fatal(err)
		}
	}
	sameOffset(t, "B and C to reach A's offset after the increments", ac, bc, cc)

	chost, cport, _ := net.SplitHostPort(c.addr)
	if err := bc.SlaveOf(ctx, chost, cport).Err(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 60*time.Second, "B to follow C with its link up", func() bool {
		return masterInfo(t, bc, "replication", "master_port") == cport &&
			masterInfo(t, bc, "replication", "master_link_status") == "up"
	})
	if err := ac.Incr(ctx, "counter").Err(); err != nil {
		t.Fatal(err)
	}
	sameOffset(t, "B, through C, to reach A's offset", ac, cc, bc)
	if got := bc.Get(ctx, "counter").Val(); got != "101" {
		t.Errorf("B's counter %q, A's 101: A's stream ran twice (or not at all) on B", got)
	}
	if full, partial := masterInfo(t, cc, "stats", "sync_full"), masterInfo(t, cc, "stats", "sync_partial_ok"); full != "0" || partial != "1" {
		t.Errorf("C served sync_full %s, sync_partial_ok %s; want 0 and 1", full, partial)
	}
}
