package tests

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startCellarProcess builds cmd/cellar and runs it as a separate process
// (a test holding 10 000 client sockets cannot also hold the server's 10 000
// within one process's file limit). env adds CELLAR_* settings.
func startCellarProcess(t *testing.T, env ...string) string {
	t.Helper()
	if os.Getenv("TEST_SERVER_ADDR") != "" {
		t.Skip("needs Cellar itself, not TEST_SERVER_ADDR")
	}
	bin := t.TempDir() + "/cellar"
	build := exec.Command("go", "build", "-o", bin, "../cmd/cellar")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--dir", t.TempDir(), "--loglevel", "warn")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitFor(t, 20*time.Second, "cellar to answer PING", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		c.Write(encode("PING"))
		c.SetReadDeadline(time.Now().Add(time.Second))
		reply, err := readReply(bufio.NewReader(c))
		return err == nil && reply == "+PONG\r\n"
	})
	return addr
}

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
	const n = 10000
	raiseFileLimit(t, n+500)
	addr := startCellarProcess(t, "CELLAR_MAXCLIENTS=10100")
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
		r := bufio.NewReader(c)
		got, err := readReply(r)
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

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReaderSize(c, 1<<16)}
}
