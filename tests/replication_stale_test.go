package tests

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/cellar-db/cellar/internal/wait"
)

// replica-serve-stale-data (actor/replication.go, refuseStale).

const errMasterDown = "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n"

// staleReplies sends the same commands to a replica whose link is down
// and returns the replies, in order.
func staleReplies(t *testing.T, addr string) []string {
	t.Helper()
	r := dialRaw(t, addr)
	var out []string
	for _, cmd := range [][]string{
		{"CONFIG", "SET", "replica-serve-stale-data", "no"},
		{"GET", "k"},
		{"PING"},
		{"SET", "k", "v"},
		{"ECHO", "hi"},
		{"EXISTS", "k"},
		{"ROLE"},
		{"MULTI"},
		{"GET", "k"},
		{"EXEC"},
		{"CONFIG", "SET", "replica-serve-stale-data", "yes"},
		{"GET", "k"},
		{"PING"},
	} {
		reply := r.do(cmd...)
		if cmd[0] == "ROLE" {
			// ROLE runs (STALE); its fields name the master's address.
			reply = strings.SplitN(reply, "\r\n", 2)[0]
		}
		out = append(out, reply)
	}
	return out
}

// TestReplicaServeStaleDataNo: with replica-serve-stale-data no, a
// Cellar replica whose master is gone answers -MASTERDOWN to every
// command without the STALE flag (GET, PING, EXISTS; a GET queued in
// MULTI fails the EXEC), a write still gets -READONLY first, and STALE
// commands (CONFIG, ROLE, ECHO, MULTI) run; with yes again it serves
// its data. A Redis 7.0 replica of the same gone master answers the same
// bytes.
func TestReplicaServeStaleDataNo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := startServer(t)
	needCellar(t, a)
	ac := a.client()
	ahost, aport, _ := net.SplitHostPort(a.addr)
	b := startServer(t)
	bc := b.client()
	if err := bc.Do(ctx, "REPLICAOF", ahost, aport).Err(); err != nil {
		t.Fatal(err)
	}
	red := redistest.StartTCP(t, "--replicaof", ahost, aport)
	rc := redis.NewClient(&redis.Options{Addr: red.Addr})
	defer rc.Close()
	if err := ac.Set(ctx, "k", "old", 0).Err(); err != nil {
		t.Fatal(err)
	}
	sameOffset(t, "B and Redis to reach A's offset", ac, bc, rc)
	a.stop()
	for _, c := range []*redis.Client{bc, rc} {
		wait.For(t, 60*time.Second, "the replica's link to go down", func() bool {
			return infoOf(ctx, c, "replication", "master_link_status") == "down"
		})
	}
	got, want := staleReplies(t, b.addr), staleReplies(t, red.Addr)
	pinned := []string{
		"+OK\r\n", errMasterDown, errMasterDown,
		"-READONLY You can't write against a read only replica.\r\n",
		bulk("hi"), errMasterDown, "*5", "+OK\r\n", errMasterDown,
		"-EXECABORT Transaction discarded because of previous errors.\r\n",
		"+OK\r\n", bulk("old"), "+PONG\r\n",
	}
	for i := range want {
		if got[i] != want[i] || got[i] != pinned[i] {
			t.Errorf("reply %d: Cellar %q, Redis %q, want %q", i, got[i], want[i], pinned[i])
		}
	}
}

// fakeMaster accepts one replica, answers its handshake and PSYNC with
// +FULLRESYNC and the start of an RDB of size bytes, and then sends
// nothing: the replica stays in its full sync.
func fakeMaster(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close() // the replica's shutdown closes its end
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
				if _, err := br.ReadString('\n'); err != nil { // $len
					return
				}
				arg, err := br.ReadString('\n')
				if err != nil {
					return
				}
				args = append(args, strings.TrimRight(arg, "\r\n"))
			}
			switch strings.ToUpper(args[0]) {
			case "PING":
				c.Write([]byte("+PONG\r\n"))
			case "PSYNC":
				// The RDB's length, and none of its bytes: the sync waits.
				c.Write([]byte("+FULLRESYNC 0123456789012345678901234567890123456789 0\r\n$1000\r\n"))
			default:
				c.Write([]byte("+OK\r\n"))
			}
		}
	}()
	return ln.Addr().String()
}

// TestReplicaStaleDuringFullSync: while a Cellar replica's full sync is
// in progress (a master that sent +FULLRESYNC and no RDB yet), its link
// is not up: with replica-serve-stale-data no it answers -MASTERDOWN, as
// Redis does in that state; with yes it serves the data it had, and never
// -LOADING: the load goes into staging databases beside the live ones.
func TestReplicaStaleDuringFullSync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := startServer(t)
	needCellar(t, b)
	bc := b.client()
	if err := bc.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(fakeMaster(t))
	if err := bc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 60*time.Second, "the replica's full sync to start", func() bool {
		return infoOf(ctx, bc, "replication", "master_sync_in_progress") == "1"
	})
	r := b.raw()
	r.expect(bulk("before"), "GET", "k")
	r.expect(status("OK"), "CONFIG", "SET", "replica-serve-stale-data", "no")
	r.expect(errMasterDown, "GET", "k")
	r.expect(status("OK"), "CONFIG", "SET", "replica-serve-stale-data", "yes")
	r.expect(bulk("before"), "GET", "k")
	if got := infoOf(ctx, bc, "replication", "master_link_status"); got != "down" {
		t.Fatalf("master_link_status %q during the full sync", got)
	}
}
