package tests

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar/internal/wait"
	"github.com/cellar-db/cellar/storage"
	"github.com/redis/go-redis/v9"
)

// TestReplicaPhysicalCatchUp: a Cellar replica's physical sync does not
// wait for the master's flush (actor/physical.go, the catch-up). Another
// connection holds the master's SQLite write lock, so no flush of the
// master can commit; the keys written after it exist only in the master's
// memory and redo log. The replica still syncs: the master sends its last
// commit and the log's records since as commands, which the replica runs
// before the stream. Every key is equal on both — the late ones too, which
// the master's SQLite does not hold (read through the locking connection)
// — and the replica follows the stream after.
func TestReplicaPhysicalCatchUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	master := startServer(t)
	needCellar(t, master)
	mc := master.client(func(o *redis.Options) { o.Protocol = 2 })
	seed(t, ctx, master.addr, 600)
	mr := master.raw()
	waitFlushed(t, mr)

	lock, unlock := holdWriteLock(t, master.cfg.DBPath())
	// After the lock: in memory and in the log only. Several databases, a
	// transaction (a group record: MULTI ... EXEC in the catch-up),
	// relative expiries (absolute in it), a key of the copy deleted and one
	// changed.
	for _, n := range []int{5, 12} {
		c := redis.NewClient(&redis.Options{Addr: master.addr, DB: n, Protocol: 2})
		p := c.Pipeline()
		for i := range 300 {
			k := "late:" + strconv.Itoa(i)
			switch i % 4 {
			case 0:
				p.Set(ctx, k, "v"+strconv.Itoa(i), time.Hour)
			case 1:
				p.RPush(ctx, k, "a", i)
			case 2:
				p.HSet(ctx, k, "f", i)
			case 3:
				p.ZAdd(ctx, k, redis.Z{Score: float64(i), Member: "m"})
			}
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Incr(ctx, "late:counter")
			p.SAdd(ctx, "late:set", "x", "y")
			p.Expire(ctx, "late:set", 2*time.Hour)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	if err := mc.Del(ctx, "k:0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := mc.Set(ctx, "k:3", "changed after the lock", 0).Err(); err != nil {
		t.Fatal(err)
	}

	replica := startServer(t)
	rc := replica.client(func(o *redis.Options) { o.Protocol = 2 })
	replicaOf(t, ctx, rc, master.addr)
	waitCaughtUp(t, ctx, mc, rc)
	waitOffsets(t, ctx, mc, rc)
	n := compareAll(t, ctx, master.addr, replica.addr)
	t.Logf("%d keys equal", n)
	if got := physicalSyncs(ctx, mc); got != "1" {
		t.Fatalf("sync_full_physical on the master: %q, want 1", got)
	}
	r5 := redis.NewClient(&redis.Options{Addr: replica.addr, DB: 5, Protocol: 2})
	defer r5.Close()
	if got, err := r5.Get(ctx, "late:counter").Result(); err != nil || got != "1" {
		t.Fatalf("late:counter on the replica: %q %v", got, err)
	}
	var committed int
	if err := lock.QueryRowContext(ctx, "SELECT count(*) FROM keys WHERE key >= CAST('late:' AS BLOB) AND key < CAST('late;' AS BLOB)").Scan(&committed); err != nil {
		t.Fatal(err)
	}
	if committed != 0 {
		t.Fatalf("the master's SQLite holds %d keys written after its write lock was taken", committed)
	}

	// Released, the master flushes again; the stream goes on.
	unlock()
	mc.Set(ctx, "after:catchup", "v", 0)
	mc.Del(ctx, "k:6")
	waitOffsets(t, ctx, mc, rc)
	compareAll(t, ctx, master.addr, replica.addr)
}

// TestPhysicalCatchUpWire pins the catch-up's form: a replica announcing
// capa cellar-physical and capa cellar-catchup gets
// "$SQLITE:<length>:<db>:catchup", the file, then the records the file
// misses as the stream's commands (SELECT first), then REPLCONF
// cellar-catchup-end, and the stream from the offset +FULLRESYNC named.
// The master's flushes cannot commit (SQLite's write lock is held), so
// the file is the last commit and the SET after the lock is in the
// catch-up.
func TestPhysicalCatchUpWire(t *testing.T) {
	t.Parallel()
	master := startServer(t)
	needCellar(t, master)
	mr := master.raw()
	mr.expect("+OK\r\n", "SET", "before", "lock")
	waitFlushed(t, mr)
	holdWriteLock(t, master.cfg.DBPath())
	mr.expect("+OK\r\n", "SELECT", "3")
	mr.expect("+OK\r\n", "SET", "wire:a", "1")

	p := dialReplicaCapa(t, master.addr, "psync2", "cellar-physical", "cellar-catchup")
	f := strings.Fields(p.line())
	if len(f) != 3 || f[0] != "+FULLRESYNC" || f[2] != "0" {
		t.Fatalf("the answer to PSYNC: %q", f)
	}
	hdr := p.line()
	m := regexp.MustCompile(`^\$SQLITE:([0-9]+):0:catchup$`).FindStringSubmatch(hdr)
	if m == nil {
		t.Fatalf("the physical sync's header: %q", hdr)
	}
	size, _ := strconv.Atoi(m[1])
	file := make([]byte, size)
	if _, err := io.ReadFull(p.br, file); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(file), "SQLite format 3\x00") {
		t.Fatalf("the file does not start as a SQLite database: %q", file[:16])
	}
	want := "*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n*3\r\n$3\r\nSET\r\n$6\r\nwire:a\r\n$1\r\n1\r\n" +
		"*2\r\n$8\r\nREPLCONF\r\n$18\r\ncellar-catchup-end\r\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(p.br, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("the catch-up:\n%q\nwant\n%q", got, want)
	}
	// The stream from offset 0: the next write, in the database it is
	// made in.
	mr.expect("+OK\r\n", "SET", "wire:b", "2")
	p.until([]byte("*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n*3\r\n$3\r\nSET\r\n$6\r\nwire:b\r\n$1\r\n2\r\n"))
}

// TestReplicaCatchUpHoldsAcks: until a physical sync's catch-up has run, a
// Cellar replica is not yet in its master's history at the offset the
// sync stands at: it sends no REPLCONF ACK (a WAIT must not count it for a
// write of the catch-up), says its link is down, refuses PSYNC from
// replicas of its own, and asks for a full sync again when its link drops
// or it restarts meanwhile. A fake master sends a real copy and one
// catch-up command, and holds REPLCONF cellar-catchup-end back: the first
// session's connection is dropped, the replica restarts during the
// second, and the third is let through; the stream follows and the ACK
// carries its offset.
func TestReplicaCatchUpHoldsAcks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := startServer(t)
	needCellar(t, src)
	sr := src.raw()
	sr.expect("+OK\r\n", "SET", "src:k", "v")
	waitFlushed(t, sr)
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	if err := storage.Copy(src.cfg.DBPath(), copyPath); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const replID = "0123456789012345678901234567890123456789"
	stream := string(encode("SET", "cu:b", "2"))
	type session struct {
		psync   []string
		c       net.Conn
		release chan struct{}
	}
	sessions := make(chan *session, 8)
	acks := make(chan string, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				se := &session{c: c, release: make(chan struct{})}
				br := bufio.NewReader(c)
				for {
					args, err := readArgs(br)
					if err != nil {
						return
					}
					switch {
					case strings.EqualFold(args[0], "PING"):
						c.Write([]byte("+PONG\r\n"))
					case strings.EqualFold(args[0], "REPLCONF") && strings.EqualFold(args[1], "ack"):
						acks <- args[2]
					case strings.EqualFold(args[0], "PSYNC"):
						se.psync = args
						c.Write([]byte("+FULLRESYNC " + replID + " 100\r\n$SQLITE:" + strconv.Itoa(len(file)) + ":0:catchup\r\n"))
						c.Write(file)
						c.Write(encode("SELECT", "0"))
						c.Write(encode("SET", "cu:a", "1"))
						go func() {
							<-se.release
							c.Write(encode("REPLCONF", "cellar-catchup-end"))
							c.Write([]byte(stream))
						}()
						sessions <- se
					default:
						c.Write([]byte("+OK\r\n"))
					}
				}
			}()
		}
	}()
	next := func() *session {
		t.Helper()
		select {
		case se := <-sessions:
			if len(se.psync) != 3 || se.psync[1] == replID {
				t.Fatalf("the replica asked %q: a partial resync of a catch-up that had not run", se.psync)
			}
			return se
		case <-time.After(2 * time.Minute):
			t.Fatal("the replica did not ask for a sync")
			return nil
		}
	}

	replica := startServer(t)
	rc := replica.client(func(o *redis.Options) { o.Protocol = 2 })
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	if err := rc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	caughtUpHeld := func() {
		t.Helper()
		wait.For(t, 2*time.Minute, "the catch-up's command to run on the replica", func() bool {
			return rc.Get(ctx, "cu:a").Val() == "1"
		})
		if got := rc.Get(ctx, "src:k").Val(); got != "v" {
			t.Fatalf("src:k from the copy: %q", got)
		}
		if got := replInfo(ctx, rc, "master_link_status"); got != "down" {
			t.Fatalf("master_link_status during the catch-up: %q", got)
		}
		replica.raw().expect("-NOMASTERLINK Can't SYNC while not connected with my master\r\n", "PSYNC", "?", "-1")
		select {
		case off := <-acks:
			t.Fatalf("REPLCONF ACK %s before the catch-up had run", off)
		default:
		}
	}
	se := next()
	caughtUpHeld()
	se.c.Close() // the link drops during the catch-up
	next()
	caughtUpHeld()
	replica.cfg.ReplicaOf = host + " " + port
	replica.restart() // a clean stop during the catch-up
	rc = replica.client(func(o *redis.Options) { o.Protocol = 2 })
	se = next()
	caughtUpHeld()

	close(se.release)
	want := strconv.Itoa(100 + len(stream))
	wait.For(t, 2*time.Minute, "the replica's ACK of the stream", func() bool {
		select {
		case off := <-acks:
			if off != want && off != "100" {
				t.Fatalf("REPLCONF ACK %s, want 100 or %s", off, want)
			}
			return off == want
		default:
			return false
		}
	})
	if got := rc.Get(ctx, "cu:b").Val(); got != "2" {
		t.Fatalf("cu:b from the stream: %q", got)
	}
	if got := replInfo(ctx, rc, "master_link_status"); got != "up" {
		t.Fatalf("master_link_status after the catch-up: %q", got)
	}
}

// readArgs reads one RESP array of bulk strings.
func readArgs(br *bufio.Reader) ([]string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n < 1 || n > 16 {
		return nil, fmt.Errorf("not a command: %q", line)
	}
	args := make([]string, 0, n)
	for range n {
		if _, err := br.ReadString('\n'); err != nil {
			return nil, err
		}
		arg, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		args = append(args, strings.TrimRight(arg, "\r\n"))
	}
	return args, nil
}

// waitFlushed waits until the server r talks to has flushed every record
// of its redo log to SQLite.
func waitFlushed(t *testing.T, r *rawConn) {
	t.Helper()
	wait.For(t, time.Minute, "the flush of every record", func() bool {
		return infoField(t, r, "persistence", "unflushed_log_bytes") == "0" && infoField(t, r, "persistence", "flush_in_progress") == "0"
	})
}

// holdWriteLock takes SQLite's write lock on the database at path
// (BEGIN IMMEDIATE through a connection of the test's), so that no flush
// of the server can commit, until unlock (called at the test's end if not
// before). lock reads the database's last commit.
func holdWriteLock(t *testing.T, path string) (lock *sql.Conn, unlock func()) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(20000)")
	if err != nil {
		t.Fatal(err)
	}
	lock, err = db.Conn(ctx)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		lock.Close()
		db.Close()
		t.Fatal(err)
	}
	done := false
	unlock = func() {
		if done {
			return
		}
		done = true
		if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Errorf("releasing SQLite's write lock: %v", err)
		}
		lock.Close()
		db.Close()
	}
	t.Cleanup(unlock)
	return lock, unlock
}
