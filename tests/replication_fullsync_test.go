package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/cellar-db/cellar/internal/wait"
)

// A full sync streams its RDB (actor/fullsync.go): diskless as it is
// written, with a length from a file; what the master holds for a replica
// stays within a window whatever the keyspace's size, the RDB does not
// count toward the replica output class, and the files of a sync a crash
// interrupted are removed at the next start.

const (
	// bigKeys of bigValue bytes make an RDB of about 48 MB, far beyond
	// the 512 KB replica limit of these tests and the master's window.
	bigKeys  = 3000
	bigValue = 16 << 10
	// syncHeld bounds what the master may hold unsent for a replica
	// during its RDB: the job's window (2 MB) and a piece (256 KB), with
	// room to spare, and a tenth of the RDB.
	syncHeld = 4 << 20
	// smallReplicaLimit is the replica output class's hard limit here.
	smallReplicaLimit = 512 << 10
)

// fillBig writes bigKeys keys of bigValue bytes, each value different.
func fillBig(t testing.TB, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	val := make([]byte, bigValue)
	for i := range val {
		val[i] = byte('a' + i%26)
	}
	for start := 0; start < bigKeys; start += 200 {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := start; i < min(start+200, bigKeys); i++ {
				copy(val, strconv.Itoa(i))
				p.Set(ctx, "big:"+strconv.Itoa(i), val, 0)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// replicaOmem is the omem field of the master's CLIENT LIST line for its
// replica (flags=S), -1 if it has none.
func replicaOmem(t testing.TB, c *redis.Client) int64 {
	t.Helper()
	list, err := c.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " flags=S ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "omem="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
	}
	return -1
}

func smallReplicaClass(c *cellar.Config) {
	c.OutputBuffer.ReplicaHardLimit = smallReplicaLimit
	c.OutputBuffer.ReplicaSoftLimit = 0
}

// TestFullSyncStreamsWithinAWindow: a replica that stops reading during
// its full sync of a keyspace of about 48 MB, under a replica output
// class of 512 KB: while it stalls the master shows it in send_bulk and
// holds at most a window of the RDB for it (CLIENT LIST's omem), and the
// writes made meanwhile do not get it disconnected; once it reads again
// the RDB arrives whole (it decodes, every key in it, at the offset
// +FULLRESYNC gave), and after its first REPLCONF ACK the stream brings
// those writes. In both forms, diskless and with a length.
func TestFullSyncStreamsWithinAWindow(t *testing.T) {
	t.Parallel()
	for _, eof := range []bool{true, false} {
		name := map[bool]string{true: "eof", false: "length"}[eof]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := startServer(t, smallReplicaClass)
			needCellar(t, srv)
			ctx := context.Background()
			c := srv.client()
			fillBig(t, c)
			r := dialReplica(t, srv.addr, eof)
			f := strings.Fields(r.line())
			if len(f) != 3 || f[0] != "+FULLRESYNC" {
				t.Fatalf("PSYNC ? -1: %q", f)
			}
			hdr := r.line()
			head := make([]byte, 1<<20)
			r.c.SetReadDeadline(time.Now().Add(2 * time.Minute))
			if _, err := io.ReadFull(r.br, head); err != nil {
				t.Fatalf("the RDB's first MB: %v", err)
			}
			// It stalls: the master waits with at most a window unsent.
			wait.For(t, 60*time.Second, "the master to show its replica in send_bulk", func() bool {
				return strings.Contains(infoOf(ctx, c, "replication", "slave0"), "state=send_bulk")
			})
			for i := range 100 {
				if err := c.Set(ctx, "during:"+strconv.Itoa(i), i, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if n := replicaOmem(t, c); n < 0 || n > syncHeld {
				t.Fatalf("the master holds %d bytes for its stalled replica (at most %d expected)", n, syncHeld)
			}
			if !strings.Contains(infoOf(ctx, c, "replication", "slave0"), "state=send_bulk") {
				t.Fatalf("the replica is no longer in send_bulk after the writes: %s", infoOf(ctx, c, "replication", "slave0"))
			}

			// It reads again.
			var file []byte
			r.c.SetReadDeadline(time.Now().Add(2 * time.Minute))
			if mark, ok := strings.CutPrefix(hdr, "$EOF:"); ok {
				rest, err := readUntilMark(r, []byte(mark))
				if err != nil {
					t.Fatalf("reading the RDB up to its mark: %v", err)
				}
				file = append(head, rest...)
			} else {
				n, err := strconv.Atoi(strings.TrimPrefix(hdr, "$"))
				if err != nil || n < len(head) {
					t.Fatalf("the RDB's header %q", hdr)
				}
				file = make([]byte, n)
				copy(file, head)
				if _, err := io.ReadFull(r.br, file[len(head):]); err != nil {
					t.Fatalf("reading the RDB's %d bytes: %v", n, err)
				}
			}
			keys, off := rdbKeys(t, file)
			if keys != bigKeys || off != f[2] {
				t.Fatalf("the RDB holds %d keys at repl-offset %s; want %d at %s", keys, off, bigKeys, f[2])
			}
			r.c.Write(encode("REPLCONF", "ACK", f[2]))
			r.until([]byte("during:99"))
		})
	}
}

// readUntilMark reads r up to the diskless form's end mark and returns
// what came before it.
func readUntilMark(r *handReplica, mark []byte) ([]byte, error) {
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		if len(got) >= len(mark) && string(got[len(got)-len(mark):]) == string(mark) {
			return got[:len(got)-len(mark)], nil
		}
		// Read no further than the mark could end: the stream follows it.
		want := len(mark)
		for k := min(len(mark), len(got)); k > 0; k-- {
			if string(got[len(got)-k:]) == string(mark[:k]) {
				want = len(mark) - k
				break
			}
		}
		n, err := r.br.Read(buf[:max(want, 1)])
		if err != nil {
			return got, err
		}
		got = append(got, buf[:n]...)
	}
}

// TestFullSyncRealReplicasUnderReplicaLimit: Redis 7.0 replicas of a
// Cellar holding about 48 MB complete their full sync under a replica
// output class of 512 KB, diskless and with a length, with writes going
// on, and hold every key after.
func TestFullSyncRealReplicasUnderReplicaLimit(t *testing.T) {
	t.Parallel()
	for _, diskless := range []string{"yes", "no"} {
		t.Run("diskless-"+diskless, func(t *testing.T) {
			t.Parallel()
			srv := startServer(t, smallReplicaClass)
			needCellar(t, srv)
			ctx := context.Background()
			c := srv.client()
			if err := c.ConfigSet(ctx, "repl-diskless-sync", diskless).Err(); err != nil {
				t.Fatal(err)
			}
			fillBig(t, c)
			host, port, _ := net.SplitHostPort(srv.addr)
			red := redistest.StartTCP(t, "--replicaof", host, port)
			rc := redis.NewClient(&redis.Options{Addr: red.Addr})
			defer rc.Close()
			i := 0
			wait.For(t, 2*time.Minute, "the Redis replica's link up, writes going on", func() bool {
				for range 50 {
					i++
					if err := c.Set(ctx, "during:"+strconv.Itoa(i%1000), i, 0).Err(); err != nil {
						t.Fatal(err)
					}
				}
				return infoOf(ctx, rc, "replication", "master_link_status") == "up"
			})
			caughtUp(t, c, rc)
			if got := masterInfo(t, c, "stats", "sync_full"); got != "1" {
				t.Fatalf("sync_full %s: the replica was disconnected and synced again", got)
			}
			if n := sameKeys(t, 0, srv.addr, red.Addr); n < bigKeys {
				t.Fatalf("%d keys compared", n)
			}
		})
	}
}

// TestCrashedFullSyncFilesRemoved: a master killed (kill -9) while it
// sends a full sync's RDB with a length leaves the sync's files beside the
// database (its snapshot's copy and the RDB file); the next start removes
// them.
func TestCrashedFullSyncFilesRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := runCellar(t, true, "--dir", dir)
	c := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 2})
	defer c.Close()
	ctx := context.Background()
	if err := c.ConfigSet(ctx, "repl-diskless-sync", "no").Err(); err != nil {
		t.Fatal(err)
	}
	fillBig(t, c)
	r := dialReplica(t, p.addr, false)
	if f := strings.Fields(r.line()); len(f) != 3 || f[0] != "+FULLRESYNC" {
		t.Fatalf("PSYNC ? -1: %q", f)
	}
	if hdr := r.line(); !strings.HasPrefix(hdr, "$") {
		t.Fatalf("the RDB's header: %q", hdr)
	}
	// The replica reads no more: the RDB file is written and being sent.
	leftovers := func() []string {
		var names []string
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.Contains(e.Name(), "replsync") {
				names = append(names, e.Name())
			}
		}
		return names
	}
	files := leftovers()
	if !strings.Contains(fmt.Sprint(files), ".rdb") {
		t.Fatalf("no RDB file of the sync in %s while it is sent: %v", dir, files)
	}
	p.kill9()
	p = runCellar(t, true, "--dir", dir)
	if got := leftovers(); len(got) != 0 {
		t.Fatalf("after the restart %s still holds the crashed sync's files %v", dir, got)
	}
	c2 := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 2})
	defer c2.Close()
	if n := c2.DBSize(ctx).Val(); n != bigKeys {
		t.Fatalf("DBSIZE %d after the restart, want %d", n, bigKeys)
	}
}

// TestFullSyncStalledReplicaTimesOut: a replica that stops reading its
// RDB, the master's window for it full, is disconnected once it has taken
// nothing for repl-timeout (1 s here), and the master serves on.
func TestFullSyncStalledReplicaTimesOut(t *testing.T) {
	t.Parallel()
	srv := startServer(t, infoLog)
	needCellar(t, srv)
	ctx := context.Background()
	c := srv.client()
	fillBig(t, c)
	if err := c.ConfigSet(ctx, "repl-timeout", "1").Err(); err != nil {
		t.Fatal(err)
	}
	r := dialReplica(t, srv.addr, true)
	if f := strings.Fields(r.line()); len(f) != 3 || f[0] != "+FULLRESYNC" {
		t.Fatalf("PSYNC ? -1: %q", f)
	}
	// It reads nothing more.
	wait.For(t, 60*time.Second, "the master to disconnect its stalled replica", func() bool {
		return masterInfo(t, c, "replication", "connected_slaves") == "0"
	})
	r.c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	if _, err := io.Copy(io.Discard, r.br); err != nil {
		t.Fatalf("the stalled replica's connection did not end with EOF: %v", err)
	}
	if !strings.Contains(srv.logBuf.String(), "it read nothing for repl-timeout") {
		t.Errorf("the master did not log why it disconnected the replica")
	}
	if err := c.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestRedisCliRdb: redis-cli --rdb (SYNC after REPLCONF capa eof and
// REPLCONF rdb-only 1) gets an RDB that decodes whole with every key,
// diskless and with a length, and the master then disconnects it (an
// rdb-only replica gets no stream), as Redis 7.0 does. SYNC, which has no
// argument, once crashed the server.
func TestRedisCliRdb(t *testing.T) {
	t.Parallel()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli is not installed: run scripts/deps.sh (make test does)")
	}
	srv := startServer(t)
	needCellar(t, srv)
	ctx := context.Background()
	c := srv.client()
	for i := range 100 {
		c.Set(ctx, "k"+strconv.Itoa(i), i, 0)
	}
	host, port, _ := net.SplitHostPort(srv.addr)
	for _, diskless := range []string{"yes", "no"} {
		if err := c.ConfigSet(ctx, "repl-diskless-sync", diskless).Err(); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "dump.rdb")
		out, err := exec.Command(cli, "-h", host, "-p", port, "--rdb", path).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli --rdb (repl-diskless-sync %s): %v\n%s", diskless, err, out)
		}
		file, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if keys, _ := rdbKeys(t, file); keys != 100 {
			t.Fatalf("redis-cli --rdb (repl-diskless-sync %s): %d keys in the RDB, want 100", diskless, keys)
		}
		wait.For(t, 60*time.Second, "the master to disconnect the rdb-only replica", func() bool {
			return masterInfo(t, c, "replication", "connected_slaves") == "0"
		})
	}
}
