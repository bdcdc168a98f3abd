package tests

import (
	"context"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/cellar-db/cellar/internal/wait"
)

// SHUTDOWN waiting for lagging replicas (actor/shutdown.go), against a
// redis-server replica made to lag with SIGSTOP.

// laggingReplica starts a Redis replica of the Cellar at addr, waits until
// it has caught up, and stops it (SIGSTOP) until the returned resume is
// called (or the test ends).
func laggingReplica(t *testing.T, addr string, master *redis.Client) (replica *redistest.Server, resume func()) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	red := redistest.StartTCP(t, "--replicaof", host, port)
	rc := redis.NewClient(&redis.Options{Addr: red.Addr})
	defer rc.Close()
	caughtUp(t, master, rc)
	if err := red.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume = func() {
		if !resumed {
			resumed = true
			red.Signal(syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	return red, resume
}

// shutdownWaiting waits until INFO server says a shutdown waits.
func shutdownWaiting(t *testing.T, c *redis.Client) {
	t.Helper()
	wait.For(t, 60*time.Second, "INFO server to show shutdown_in_milliseconds", func() bool {
		return masterInfo(t, c, "server", "shutdown_in_milliseconds") != ""
	})
}

// stopped waits for the in-process server to have stopped.
func stopped(t *testing.T, srv *testServer) {
	t.Helper()
	select {
	case <-srv.srv.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("Cellar did not stop")
	}
}

// TestShutdownWaitsForLaggingReplica: SHUTDOWN with a replica that lags
// holds writes and waits, answering nothing, until the replica is resumed
// and has acknowledged every write; then Cellar stops, the replica has the
// last write, and the write held meanwhile was never run.
func TestShutdownWaitsForLaggingReplica(t *testing.T) {
	t.Parallel()
	srv := startServer(t, infoLog)
	needCellar(t, srv)
	ctx := context.Background()
	c := srv.client()
	srv.raw().expect(status("OK"), "CONFIG", "SET", "shutdown-timeout", "600")
	red, resume := laggingReplica(t, srv.addr, c)
	srv.raw().expect(status("OK"), "SET", "last", "written while the replica lags")

	shut := srv.raw()
	shut.send(encode("SHUTDOWN"))
	shutdownWaiting(t, c)
	held := srv.raw()
	held.send(encode("SET", "held", "1"))
	if got := c.Get(ctx, "last").Val(); got != "written while the replica lags" {
		t.Errorf("reads go on during the wait: GET last = %q", got)
	}
	select {
	case <-srv.srv.Done():
		t.Fatal("Cellar stopped while its replica lagged")
	default:
	}
	resume()
	stopped(t, srv)
	shut.expectClosed()
	if r, err := held.reply(); err == nil {
		t.Errorf("the write sent during the wait got %q; it should have been held until the stop", r)
	}
	if !strings.Contains(srv.logBuf.String(), `"in_sync":1,"replicas":1`) {
		t.Errorf("Cellar did not log its replica in sync when it stopped:\n%s", srv.logBuf.String())
	}
	rc := redis.NewClient(&redis.Options{Addr: red.Addr})
	defer rc.Close()
	if got := rc.Get(ctx, "last").Val(); got != "written while the replica lags" {
		t.Errorf("the replica has last = %q", got)
	}
	if n := rc.Exists(ctx, "held").Val(); n != 0 {
		t.Error("the replica has the write held during the wait")
	}
}

// TestShutdownNowDoesNotWait: SHUTDOWN NOW stops while the replica still
// lags, and logs it behind; with shutdown-timeout 1, SHUTDOWN stops after
// the timeout, also with the replica stopped.
func TestShutdownNowDoesNotWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		timeout string
		cmd     []string
	}{
		{"now", "600", []string{"SHUTDOWN", "NOW"}},
		{"timeout", "1", []string{"SHUTDOWN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startServer(t, infoLog)
			needCellar(t, srv)
			c := srv.client()
			srv.raw().expect(status("OK"), "CONFIG", "SET", "shutdown-timeout", tc.timeout)
			laggingReplica(t, srv.addr, c)
			srv.raw().expect(status("OK"), "SET", "last", "1")
			shut := srv.raw()
			shut.send(encode(tc.cmd...))
			stopped(t, srv) // the replica is still stopped
			shut.expectClosed()
			log := srv.logBuf.String()
			if !strings.Contains(log, "Lagging replica reported offset behind master") || !strings.Contains(log, `"in_sync":0,"replicas":1`) {
				t.Errorf("no lagging replica in the log:\n%s", log)
			}
		})
	}
}

// TestShutdownAbort: SHUTDOWN ABORT from another client ends a wait: it
// answers +OK, the waiting SHUTDOWN gets Redis's error, the held write
// runs, and Cellar serves on; with no shutdown under way ABORT is refused.
func TestShutdownAbort(t *testing.T) {
	t.Parallel()
	srv := startServer(t, infoLog)
	needCellar(t, srv)
	c := srv.client()
	r := srv.raw()
	r.expect(errr("ERR No shutdown in progress."), "SHUTDOWN", "ABORT")
	r.expect(errr("ERR syntax error"), "SHUTDOWN", "ABORT", "NOW")
	r.expect(errr("ERR syntax error"), "SHUTDOWN", "SAVE", "NOSAVE")
	r.expect(errr("ERR syntax error"), "SHUTDOWN", "SOON")
	r.expect(status("OK"), "CONFIG", "SET", "shutdown-timeout", "600")
	_, resume := laggingReplica(t, srv.addr, c)
	r.expect(status("OK"), "SET", "behind", "1") // the replica lags this write

	shut := srv.raw()
	shut.send(encode("SHUTDOWN"))
	shutdownWaiting(t, c)
	held := srv.raw()
	held.send(encode("SET", "held", "1"))
	joined := srv.raw()
	joined.send(encode("SHUTDOWN", "NOW")) // joins the one under way, as in Redis
	wait.For(t, 60*time.Second, "the SHUTDOWNs and the write to wait (INFO blocked_clients:3)", func() bool {
		return masterInfo(t, c, "clients", "blocked_clients") == "3"
	})
	r.expect(status("OK"), "SHUTDOWN", "ABORT")
	for name, conn := range map[string]*rawConn{"the waiting SHUTDOWN": shut, "the SHUTDOWN NOW that joined it": joined} {
		if got := conn.read(); got != errr("ERR Errors trying to SHUTDOWN. Check logs.") {
			t.Errorf("%s got %q after ABORT", name, got)
		}
	}
	if got := held.read(); got != status("OK") {
		t.Errorf("the write held during the wait got %q after ABORT", got)
	}
	r.expect(errr("ERR No shutdown in progress."), "SHUTDOWN", "ABORT")
	r.expect(status("OK"), "SET", "after", "1")
	if got := masterInfo(t, c, "server", "shutdown_in_milliseconds"); got != "" {
		t.Errorf("shutdown_in_milliseconds:%s after ABORT", got)
	}
	resume()
	select {
	case <-srv.srv.Done():
		t.Fatal("Cellar stopped after SHUTDOWN ABORT")
	default:
	}
}

// TestSigtermWaitsForLaggingReplica: SIGTERM is SHUTDOWN without NOW: the
// process keeps serving reads and waits for its lagging replica, exits 0
// once the replica has acknowledged, and the replica has the last write.
// A second SIGINT during such a wait exits at once, with status 1.
func TestSigtermWaitsForLaggingReplica(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{{"sigterm", syscall.SIGTERM}, {"sigint twice", syscall.SIGINT}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := runCellar(t, true, "--dir", t.TempDir())
			ctx := context.Background()
			c := redis.NewClient(&redis.Options{Addr: p.addr})
			defer c.Close()
			c.ConfigSet(ctx, "shutdown-timeout", "600")
			red, resume := laggingReplica(t, p.addr, c)
			if err := c.Set(ctx, "last", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			p.cmd.Process.Signal(tc.sig)
			shutdownWaiting(t, c)
			if tc.sig == syscall.SIGINT {
				p.cmd.Process.Signal(syscall.SIGINT)
				if code := p.exitCode(); code != 1 {
					t.Fatalf("a second SIGINT: exit %d, want 1\n%s", code, p.stderr.String())
				}
				return
			}
			select {
			case <-p.done:
				t.Fatalf("Cellar exited while its replica lagged\n%s", p.stderr.String())
			default:
			}
			resume()
			if code := p.exitCode(); code != 0 {
				t.Fatalf("exit %d\n%s", code, p.stderr.String())
			}
			if !strings.Contains(p.stderr.String(), `"in_sync":1,"replicas":1`) {
				t.Errorf("Cellar did not log its replica in sync when it stopped:\n%s", p.stderr.String())
			}
			rc := redis.NewClient(&redis.Options{Addr: red.Addr})
			defer rc.Close()
			if got := rc.Get(ctx, "last").Val(); got != "v" {
				t.Errorf("the replica has last = %q", got)
			}
		})
	}
}
