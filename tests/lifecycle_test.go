package tests

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
)

// serverInfo reads one INFO field through a connection of its own, closed
// before it returns (tests poll it).
func serverInfo(t *testing.T, s *testServer, section, field string) string {
	t.Helper()
	r := s.raw()
	defer r.c.Close()
	return infoField(t, r, section, field)
}

// connectedClients is INFO's connected_clients, less the connection that
// asks.
func connectedClients(t *testing.T, s *testServer) int {
	t.Helper()
	var n int
	fmt.Sscanf(serverInfo(t, s, "clients", "connected_clients"), "%d", &n)
	return n - 1
}

// Every way a connection can end runs the same cleanup: the session leaves
// CLIENT LIST, counters return to where they were, a blocked client's
// waiter is cancelled, and nothing is logged as an error.
func TestEveryCloseTriggerCleansUp(t *testing.T) {
	t.Parallel()
	s := startServer(t, outputLimits(4<<20, 0, 0))
	needCellar(t, s)
	s.raw().expect("+OK\r\n", "SET", "big", strings.Repeat("x", 1<<20))
	base := connectedClients(t, s)
	triggers := map[string]func(r *rawConn){
		"EOF": func(r *rawConn) { r.c.Close() },
		"reset": func(r *rawConn) {
			r.c.(*net.TCPConn).SetLinger(0) // close with RST: the server reads an error
			r.c.Close()
		},
		"protocol error": func(r *rawConn) {
			r.send([]byte("*1\r\n$x\r\n"))
			r.read()
			r.expectClosed()
		},
		"QUIT": func(r *rawConn) {
			r.expect("+OK\r\n", "QUIT")
			r.expectClosed()
		},
		"CLIENT KILL": func(r *rawConn) {
			id := r.clientID()
			killer := s.raw()
			killer.expect(":1\r\n", "CLIENT", "KILL", "ID", id)
			killer.c.Close()
			r.expectClosed()
		},
		"output limit": func(r *rawConn) {
			var req bytes.Buffer
			for i := 0; i < 50; i++ {
				req.Write(encode("GET", "big"))
			}
			r.send(req.Bytes())
			drainUntilClosed(t, r)
		},
		"blocked, then EOF": func(r *rawConn) {
			r.send(encode("BLPOP", "nothing", "0"))
			waitFor(t, 5*time.Second, "the client to block", func() bool {
				return serverInfo(t, s, "clients", "blocked_clients") == "1"
			})
			r.c.Close()
		},
	}
	for name, end := range triggers {
		r := s.raw()
		r.expect("+OK\r\n", "CLIENT", "SETNAME", "doomed")
		end(r)
		waitFor(t, 10*time.Second, name+": the session to be cleaned up", func() bool {
			return connectedClients(t, s) == base && !strings.Contains(rawDo(s, "CLIENT", "LIST"), "name=doomed")
		})
		if got := serverInfo(t, s, "clients", "blocked_clients"); got != "0" {
			t.Fatalf("%s: blocked_clients = %s", name, got)
		}
	}
	// A push after the blocked client left goes to nobody: the list keeps it.
	s.raw().expect(":1\r\n", "RPUSH", "nothing", "x")
	s.raw().expect(":1\r\n", "LLEN", "nothing")
	if log := s.logBuf.String(); strings.Contains(log, `"level":"error"`) {
		t.Fatalf("errors logged:\n%s", log)
	}
	// Shutdown closes the rest.
	r := s.raw()
	r.expect("+PONG\r\n", "PING")
	s.stop()
	r.expectClosed()
}

// Connections closed and reopened fast under load reuse file descriptors;
// a reply for a closed connection must never reach the one that took its
// descriptor. Every client sends values that only it uses and checks that
// every reply it reads is its own.
func TestFDReuseNeverMisroutes(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	const workers, rounds = 16, 60
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				c, err := net.Dial("tcp", s.addr)
				if err != nil {
					errs <- err
					return
				}
				me := fmt.Sprintf("w%d-r%d", w, i)
				var req bytes.Buffer
				n := 1 + rand.IntN(50)
				for j := 0; j < n; j++ {
					req.Write(encode("ECHO", fmt.Sprintf("%s-%d", me, j)))
				}
				c.Write(req.Bytes())
				if rand.IntN(2) == 0 {
					// Hang up with replies still owed.
					c.Close()
					continue
				}
				r := rawOn(t, c)
				for j := 0; j < n; j++ {
					c.SetReadDeadline(time.Now().Add(20 * time.Second))
					got, err := r.reply()
					if want := bulk(fmt.Sprintf("%s-%d", me, j)); err != nil || got != want {
						errs <- fmt.Errorf("%s reply %d: got %q (%v), want %q", me, j, got, err, want)
						c.Close()
						return
					}
				}
				c.Close()
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// The event loops' readiness and waiting cases: a request answered at
// once, a reply larger than the socket buffers written as the client
// drains it, a wait that times out, a wait ended by CLIENT UNBLOCK, and
// more than a thousand concurrent waits that all resume and leak nothing.
// The offload pool's cases (queue full, deadlines, cancellation) are unit
// tests in offload/.
func TestEventLoopReadinessAndWaits(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.OutputBuffer.SoftLimit = 0 })
	needCellar(t, s)

	t.Run("read readiness immediate", func(t *testing.T) {
		// A complete request in the socket is answered without waiting
		// for anything more from the client.
		s.raw().expect("+PONG\r\n", "PING")
	})

	t.Run("write partial then wait", func(t *testing.T) {
		// A reply far larger than the socket buffers is written in parts
		// as the client drains it, and arrives whole.
		val := strings.Repeat("0123456789abcdef", 512<<10) // 8 MB, beyond any socket buffer
		s.raw().expect("+OK\r\n", "SET", "huge", val)
		r := s.raw()
		r.send(encode("GET", "huge"))
		if got := r.read(); got != bulk(val) {
			t.Fatalf("8 MB reply arrived with %d bytes", len(got))
		}
	})

	t.Run("timeout waiting readable", func(t *testing.T) {
		// A blocked client's wait ends with its timeout (Redis's nil).
		s.raw().expect("*-1\r\n", "BLPOP", "never", "0.05")
	})

	t.Run("cancel during wait", func(t *testing.T) {
		r := s.raw()
		id := r.clientID()
		r.send(encode("BLPOP", "never", "0"))
		waitFor(t, 5*time.Second, "the client to block", func() bool {
			return strings.Contains(rawDo(s, "CLIENT", "LIST"), "id="+id+" ") &&
				serverInfo(t, s, "clients", "blocked_clients") == "1"
		})
		s.raw().expect(":1\r\n", "CLIENT", "UNBLOCK", id, "ERROR")
		if got := r.read(); got != "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n" {
			t.Fatalf("unblocked: %q", got)
		}
	})

	t.Run("many concurrent waits", func(t *testing.T) {
		// 1500 clients wait at once; all resume; nothing leaks.
		const n = 1500
		base := connectedClients(t, s)
		conns := make([]*rawConn, n)
		for i := range conns {
			conns[i] = s.raw()
			conns[i].send(encode("BLPOP", "many", "0"))
		}
		waitFor(t, 60*time.Second, "1500 blocked clients", func() bool {
			return serverInfo(t, s, "clients", "blocked_clients") == fmt.Sprint(n)
		})
		var push bytes.Buffer
		for i := 0; i < n; i++ {
			push.Write(encode("RPUSH", "many", fmt.Sprint(i)))
		}
		p := s.raw()
		p.send(push.Bytes())
		defer p.c.Close()
		seen := make(map[string]bool, n)
		for _, c := range conns {
			got := c.read()
			if seen[got] {
				t.Fatalf("element delivered twice: %q", got)
			}
			seen[got] = true
			c.c.Close()
		}
		p.c.Close()
		waitFor(t, 30*time.Second, "the 1500 connections to be cleaned up", func() bool {
			return serverInfo(t, s, "clients", "blocked_clients") == "0" && connectedClients(t, s) == base
		})
	})
}

// rawDo sends one command on a connection of its own and returns the reply.
func rawDo(s *testServer, args ...string) string {
	r := s.raw()
	defer r.c.Close()
	return r.do(args...)
}
