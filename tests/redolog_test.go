package tests

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The redo log holds every committed write after the position the
// database covers, so a database that lost its last commits is brought
// back by replaying it. The test makes such a database on purpose: it
// restores a snapshot taken midway (SAVE) over the data file after a
// kill -9, and the restart must replay the log from the snapshot's
// position and end with exactly the state before the kill — including the
// writes whose effect was chosen at random (SPOP), relative (EXPIRE) or
// computed (INCRBYFLOAT), and a blocked client's pop.
func TestReplayRebuildsFromTheLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--dir", dir}
	p := runCellar(t, true, args...)
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer c.Close()
	do := func(args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil && err != redis.Nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	for i := range 50 {
		do("SET", "before:"+strconv.Itoa(i), strconv.Itoa(i))
	}
	do("SADD", "set", "a", "b", "c", "d", "e", "f", "g", "h")
	do("RPUSH", "list", "1", "2", "3")
	do("SAVE")

	// After the snapshot: what the log alone must bring back.
	for i := range 50 {
		do("SET", "after:"+strconv.Itoa(i), strconv.Itoa(i))
	}
	do("DEL", "before:0")
	do("SPOP", "set", "3")
	do("SPOP", "set")
	do("INCRBYFLOAT", "float", "10.5")
	do("INCRBYFLOAT", "float", "0.1")
	do("EXPIRE", "before:1", "1000")
	do("ZADD", "z", "1", "one", "2", "two")
	do("HSET", "h", "f", "v")
	do("RENAME", "before:2", "renamed")
	// Streams: IDs made from the clock, a group's reads, acks and claims
	// (the PEL's delivery times and the consumers' seen times are
	// absolute, in XINFO STREAM FULL, and must come back the same).
	var ids []string
	for i := range 4 {
		id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: "events", Values: []string{"n", strconv.Itoa(i)}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	do("XGROUP", "CREATE", "events", "g", "0")
	do("XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "events", ">")
	do("XACK", "events", "g", ids[0])
	do("XCLAIM", "events", "g", "bob", "0", ids[1], "JUSTID")
	do("XADD", "events", "MAXLEN", "~", "2", "*", "n", "4")
	do("XDEL", "events", ids[2])
	// A blocked client woken by a push: its pop is a write too.
	blocked := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer blocked.Close()
	popped := make(chan []string, 1)
	go func() {
		v, _ := blocked.BLPop(ctx, 0, "queue").Result()
		popped <- v
	}()
	waitFor(t, 20*time.Second, "the client to block", func() bool {
		return strings.Contains(c.Info(ctx, "clients").Val(), "blocked_clients:1")
	})
	do("RPUSH", "queue", "job1", "job2")
	if v := <-popped; len(v) != 2 || v[1] != "job1" {
		t.Fatalf("BLPOP: %v", v)
	}
	// And a blocked XREADGROUP woken by an XADD: its delivery is a write.
	do("XREADGROUP", "GROUP", "g", "dave", "STREAMS", "events", ">") // the group is at the end
	read := make(chan error, 1)
	go func() {
		_, err := blocked.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "carol", Streams: []string{"events", ">"}, Block: 0}).Result()
		read <- err
	}()
	waitFor(t, 20*time.Second, "the reader to block", func() bool {
		return strings.Contains(c.Info(ctx, "clients").Val(), "blocked_clients:1")
	})
	do("XADD", "events", "*", "n", "5")
	if err := <-read; err != nil {
		t.Fatalf("XREADGROUP BLOCK: %v", err)
	}

	want := dumpKeyspace(t, c)
	p.kill9()

	// The data file goes back to the snapshot; the log stays.
	db := filepath.Join(dir, "cellar.db")
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		os.Remove(f)
	}
	snap, err := os.ReadFile(filepath.Join(dir, "cellar-snapshot.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, snap, 0o644); err != nil {
		t.Fatal(err)
	}

	p = runCellar(t, true, args...)
	if !strings.Contains(p.stderr.String(), "replayed the redo log") {
		t.Fatalf("no replay logged:\n%s", p.stderr.String())
	}
	c2 := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer c2.Close()
	if got := dumpKeyspace(t, c2); got != want {
		t.Fatalf("after replay:\n%s\nwant:\n%s", got, want)
	}

	// Start-up does not wait for SQLite: the replayed writes wait in
	// memory for the server's first flush, which stores them with the
	// log's end, as any round's.
	end := infoInt(t, c2, "persistence", "redo_log_position")
	sq, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	var covered int
	waitFor(t, time.Minute, "a flush to cover the replayed log", func() bool {
		err := sq.QueryRow("SELECT value FROM counters WHERE name = 'redo_position'").Scan(&covered)
		return err == nil && covered >= end
	})
	var after, before0 int
	if err := sq.QueryRow("SELECT count(*) FROM keys WHERE db = 0 AND key >= CAST('after:' AS BLOB) AND key < CAST('after;' AS BLOB)").Scan(&after); err != nil || after != 50 {
		t.Fatalf("SQLite holds %d of the 50 replayed after:N keys (%v)", after, err)
	}
	if err := sq.QueryRow("SELECT count(*) FROM keys WHERE db = 0 AND key = CAST('before:0' AS BLOB)").Scan(&before0); err != nil || before0 != 0 {
		t.Fatalf("SQLite still holds before:0, deleted in the replayed log (%d, %v)", before0, err)
	}
	// And a second crash after that flush: SQLite and the log from its
	// position bring back the same keyspace.
	p.kill9()
	p = runCellar(t, true, args...)
	c3 := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer c3.Close()
	if got := dumpKeyspace(t, c3); got != want {
		t.Fatalf("after the second restart:\n%s\nwant:\n%s", got, want)
	}
	integrityCheck(t, db)
}

// dumpKeyspace describes every key of db 0: its type, value and absolute
// expiry, sorted by key.
func dumpKeyspace(t *testing.T, c *redis.Client) string {
	t.Helper()
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, k := range keys {
		typ := c.Type(ctx, k).Val()
		var v any
		switch typ {
		case "string":
			v = c.Get(ctx, k).Val()
		case "list":
			v = c.LRange(ctx, k, 0, -1).Val()
		case "set":
			m := c.SMembers(ctx, k).Val()
			sort.Strings(m)
			v = m
		case "hash":
			v = c.HGetAll(ctx, k).Val()
		case "zset":
			v = c.ZRangeWithScores(ctx, k, 0, -1).Val()
		case "stream":
			v = c.Do(ctx, "XINFO", "STREAM", k, "FULL", "COUNT", "0").Val()
		}
		// The absolute expiry: a replayed EXPIRE runs at its recorded time.
		at := c.PExpireTime(ctx, k).Val()
		lines = append(lines, fmt.Sprintf("%s %s %v expires=%d", k, typ, v, at))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// A crash can leave the redo log's last record half written. The test
// kills a server after a run of acknowledged writes (one client, one write
// per round, so one log record per write), then cuts its log at random
// byte offsets, each time in a fresh copy of the data directory, and
// restarts: start-up must succeed, report a cut that is not on a record
// boundary as a torn tail, and hold exactly the writes whose records end
// before the cut.
func TestTornLogTailOnRestart(t *testing.T) {
	t.Parallel()
	const n = 200
	dir := t.TempDir()
	// No flush while writing: every write is in the log alone.
	env := []string{"CELLAR_STORAGE__FLUSH_INTERVAL=1m"}
	p := runCellarEnv(t, env, true, "--dir", dir)
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	for i := range n {
		if err := c.Set(ctx, fmt.Sprintf("k:%03d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	p.kill9()

	segs, err := filepath.Glob(filepath.Join(dir, "cellar.db-redo", "*.log"))
	if err != nil || len(segs) != 1 {
		t.Fatalf("want one log segment, found %v (%v)", segs, err)
	}
	seg, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	// Record boundaries, from the format (storage/redo/format.go): a
	// 32-byte segment header, then frames of a 12-byte header, whose first
	// 4 bytes are the payload length plus one, and the payload.
	const header, frame = 32, 12
	ends := []int{header}
	for at := header; at < len(seg); {
		at += frame + int(binary.LittleEndian.Uint32(seg[at:at+4])) - 1
		ends = append(ends, at)
	}
	if len(ends)-1 != n || ends[len(ends)-1] != len(seg) {
		t.Fatalf("%d records over %d bytes (last ends at %d), want one per write (%d)", len(ends)-1, len(seg), ends[len(ends)-1], n)
	}
	cuts := []int{header, len(seg), ends[n/2], ends[n/2] + 1}
	for range 6 {
		cuts = append(cuts, header+rand.IntN(len(seg)-header))
	}
	for _, cut := range cuts {
		whole := sort.SearchInts(ends, cut+1) - 1 // records ending at or before cut
		onBoundary := ends[whole] == cut

		copyDir := t.TempDir()
		for _, f := range []string{"cellar.db", "cellar.db-wal", "cellar.db-shm"} {
			if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
				if err := os.WriteFile(filepath.Join(copyDir, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		redoDir := filepath.Join(copyDir, "cellar.db-redo")
		if err := os.MkdirAll(redoDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(redoDir, filepath.Base(segs[0])), seg[:cut], 0o644); err != nil {
			t.Fatal(err)
		}

		q := runCellarEnv(t, env, true, "--dir", copyDir)
		c := redis.NewClient(&redis.Options{Addr: q.addr, MaxRetries: -1})
		for i := range n {
			got := c.Exists(ctx, fmt.Sprintf("k:%03d", i)).Val() == 1
			if got != (i < whole) {
				t.Fatalf("cut at byte %d of %d (%d whole records): k:%03d present %v", cut, len(seg), whole, i, got)
			}
		}
		c.Close()
		if torn := strings.Contains(q.stderr.String(), "torn tail"); torn == onBoundary {
			t.Fatalf("cut at byte %d (on a record boundary: %v): torn tail reported %v\n%s", cut, onBoundary, torn, q.stderr.String())
		}
		q.stop()
	}
}

// INFO persistence shows the log written since the
// last flush began, what SQLite does not cover yet and how long the oldest
// record has waited; SAVE's flush brings them to zero.
func TestMemInfoShowsWhatWaitsForAFlush(t *testing.T) {
	t.Parallel()
	p := runCellarEnv(t, []string{"CELLAR_STORAGE__FLUSH_INTERVAL=1m"}, true, "--dir", t.TempDir())
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer c.Close()
	if err := c.HSet(ctx, "hash", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"unflushed_log_bytes", "uncovered_log_bytes"} {
		if n := infoInt(t, c, "persistence", f); n == 0 {
			t.Fatalf("%s:0 after a write", f)
		}
	}
	waitFor(t, 10*time.Second, "flush_lag_ms to grow", func() bool {
		return infoInt(t, c, "persistence", "flush_lag_ms") > 0
	})
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"unflushed_log_bytes", "uncovered_log_bytes", "flush_lag_ms"} {
		if n := infoInt(t, c, "persistence", f); n != 0 {
			t.Errorf("%s:%d after SAVE, want 0", f, n)
		}
	}
}

// An idle Cellar writes nothing: with no client sending commands there is
// no flush, no checkpoint and no log write. Over ten idle seconds after a
// write and its flush, the process's write(2) calls (wchar in
// /proc/PID/io: files, pipes and sockets alike) stay under 22 KB, a third
// of the 64 KB the storage engine's goal allows in 30 s.
func TestIdleWritesNothing(t *testing.T) {
	t.Parallel()
	p := runCellarEnv(t, nil, true, "--dir", t.TempDir())
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(ctx).Err(); err != nil { // the write's flush is behind us
		t.Fatal(err)
	}
	c.Close()
	written := func() int64 {
		t.Helper()
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", p.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "wchar: "); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		t.Fatalf("no wchar in /proc/PID/io:\n%s", b)
		return 0
	}
	before := written()
	time.Sleep(10 * time.Second) // the idle time is what is measured
	if n := written() - before; n >= 22<<10 {
		t.Fatalf("an idle Cellar wrote %d bytes in 10 s", n)
	}
}
