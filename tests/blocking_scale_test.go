package tests

import (
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// raiseFileLimit lifts this process's open-file limit to its hard limit.
func raiseFileLimit(t *testing.T, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	if lim.Cur < need {
		t.Fatalf("open-file limit %d is below the %d this test needs", lim.Cur, need)
	}
}

// 10 000 clients blocked on one key at once (the default per-key limit,
// which refuses one more), each served exactly once by 10 000 pushes.
func TestBlocking10000Clients(t *testing.T) {
	t.Parallel()
	const n = 10000
	raiseFileLimit(t, n+500)
	if os.Getenv("TEST_SERVER_ADDR") != "" {
		t.Skip("needs Cellar itself, not TEST_SERVER_ADDR")
	}
	// Cellar runs as a process of its own: a test holding 10 000 client
	// sockets cannot also hold the server's 10 000 within one process's
	// file limit.
	addr := runCellarEnv(t, []string{"CELLAR_MAXCLIENTS=10100"}, true, "--dir", t.TempDir()).addr
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()

	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	blpop := encode("BLPOP", "q", "0")
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(blpop); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	waitBlocked(t, admin, n)

	// The per-key limit (blocking.max_waiters_per_key, default 10000).
	over := dialRaw(t, addr)
	over.expect(errr("ERR too many blocked clients"), "BLPOP", "q", "0")

	// 10 000 pushes, pipelined.
	pusher := dialRaw(t, addr)
	var batch []byte
	for i := 0; i < n; i++ {
		batch = append(batch, encode("RPUSH", "q", fmt.Sprintf("item-%05d", i))...)
	}
	pusher.send(batch)
	for i := 0; i < n; i++ {
		if got := pusher.read(); got[0] != ':' {
			t.Fatalf("RPUSH %d = %q", i, got)
		}
	}
	seen := make(map[string]bool, n)
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		got, err := rawOn(t, c).reply()
		if err != nil {
			t.Fatalf("client %d: %v (read %q)", i, err, got)
		}
		var v string
		if _, err := fmt.Sscanf(got, "*2\r\n$1\r\nq\r\n$10\r\n%s", &v); err != nil {
			t.Fatalf("client %d got %q", i, got)
		}
		if seen[v] {
			t.Fatalf("%s delivered twice", v)
		}
		seen[v] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct items delivered", len(seen))
	}
	if l := admin.LLen(ctx, "q").Val(); l != 0 {
		t.Fatalf("LLEN q = %d", l)
	}
	waitBlocked(t, admin, 0)
}
