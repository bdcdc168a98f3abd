package tests

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
)

func outputLimits(hard, soft int64, softFor time.Duration) func(*cellar.Config) {
	return func(c *cellar.Config) {
		c.OutputBuffer = cellar.OutputBufferConfig{HardLimit: hard, SoftLimit: soft, SoftSeconds: softFor}
	}
}

// drainUntilClosed reads and discards until the server closes the
// connection, and reports how much it read.
func drainUntilClosed(t *testing.T, r *rawConn) int64 {
	t.Helper()
	r.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, err := io.Copy(io.Discard, r.c)
	if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
		t.Fatal("connection still open after 30s")
	}
	return n
}

// A client that pipelines GETs of a 1 MB value and never reads: the batch's
// replies pass the hard limit, the client is disconnected with a log line,
// and the server goes on serving others.
func TestOutputHardLimit(t *testing.T) {
	s := startServer(t, outputLimits(16<<20, 0, 0))
	needCellar(t, s)
	s.raw().expect("+OK\r\n", "SET", "big", strings.Repeat("x", 1<<20))
	r := s.raw()
	var req bytes.Buffer
	for i := 0; i < 300; i++ {
		req.Write(encode("GET", "big"))
	}
	r.send(req.Bytes())
	waitFor(t, 20*time.Second, "the hard limit to be logged", func() bool {
		return strings.Contains(s.logBuf.String(), "reached the output buffer hard limit")
	})
	if n := drainUntilClosed(t, r); n > 32<<20 {
		t.Fatalf("read %d bytes before the close: more than the limit allows", n)
	}
	s.raw().expect("+PONG\r\n", "PING")
}

// A client that stops reading with its output above the soft limit is not
// read from any more, and is disconnected once it has stayed above the
// limit for soft_seconds.
func TestOutputSoftLimit(t *testing.T) {
	s := startServer(t, outputLimits(256<<20, 1<<20, 300*time.Millisecond))
	needCellar(t, s)
	s.raw().expect("+OK\r\n", "SET", "big", strings.Repeat("x", 1<<20))
	r := s.raw()
	var req bytes.Buffer
	for i := 0; i < 40; i++ {
		req.Write(encode("GET", "big"))
	}
	r.send(req.Bytes())
	waitFor(t, 20*time.Second, "the soft limit to be logged", func() bool {
		return strings.Contains(s.logBuf.String(), "stayed above the output buffer soft limit")
	})
	drainUntilClosed(t, r)

	// A client that reads, however slowly, stays connected: it drops below
	// the limit again and again.
	slow := s.raw()
	req.Reset()
	for i := 0; i < 20; i++ {
		req.Write(encode("GET", "big"))
	}
	slow.send(req.Bytes())
	for i := 0; i < 20; i++ {
		if got := slow.read(); len(got) != (1<<20)+len("$1048576\r\n\r\n") {
			t.Fatalf("reply %d: %d bytes", i, len(got))
		}
	}
	slow.expect("+PONG\r\n", "PING")
}

// Many clients flooding pipelined writes at once, with a small actor
// backlog: the loops stop reading when the actor is behind and resume when
// it catches up; every reply arrives, in order, to the right client.
func TestFloodWithSmallBacklog(t *testing.T) {
	s := startServer(t, func(c *cellar.Config) { c.MaxBacklog = 1 << 20 })
	needCellar(t, s)
	const clients, perClient = 200, 100
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := s.raw()
			var req bytes.Buffer
			for j := 0; j < perClient; j++ {
				req.Write(encode("SET", fmt.Sprintf("c%d:%d", i, j), strings.Repeat("v", 100)))
				req.Write(encode("INCR", fmt.Sprintf("counter:%d", i)))
			}
			go r.c.Write(req.Bytes())
			for j := 0; j < perClient; j++ {
				r.c.SetReadDeadline(time.Now().Add(60 * time.Second))
				if got, err := readReply(r.r); err != nil || got != "+OK\r\n" {
					errs <- fmt.Errorf("client %d, SET %d: %q %v", i, j, got, err)
					return
				}
				got, err := readReply(r.r)
				if want := integer(int64(j + 1)); err != nil || got != want {
					errs <- fmt.Errorf("client %d, INCR %d: %q, want %q (%v)", i, j, got, want, err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%v\n%s", err, s.raw().do("INFO", "stats"))
	}
	s.raw().expect(integer(clients*perClient+clients), "DBSIZE")
}

// Input the loops hold without parsing it is bounded for all clients
// together (max_held_input): a client blocked in BLPOP that pipelines more
// than the bound behind it is disconnected, with a log line; the input it
// held is released, and other clients are served.
func TestHeldInputLimit(t *testing.T) {
	s := startServer(t, func(c *cellar.Config) { c.MaxHeldInput = 1 << 20 })
	needCellar(t, s)
	admin := s.client()
	other := s.raw()
	other.expect("+PONG\r\n", "PING")

	r := s.raw()
	r.send(encode("BLPOP", "nothing", "0"))
	waitBlocked(t, admin, 1)
	// Nothing after a blocking command is parsed until it has its reply, so
	// all of this is held.
	var req bytes.Buffer
	for req.Len() < 2<<20 {
		req.Write(encode("SET", "k", strings.Repeat("v", 1000)))
	}
	go r.c.Write(req.Bytes())
	waitFor(t, 20*time.Second, "the eviction to be logged", func() bool {
		return strings.Contains(s.logBuf.String(), "over max_held_input")
	})
	drainUntilClosed(t, r)
	waitFor(t, 20*time.Second, "held input to be released", func() bool {
		return infoInt(t, admin, "stats", "held_input_bytes") == 0
	})
	if n := infoInt(t, admin, "stats", "evicted_clients"); n != 1 {
		t.Fatalf("evicted_clients %d, want 1", n)
	}
	waitBlocked(t, admin, 0)
	other.expect("+PONG\r\n", "PING")
	other.expect("$-1\r\n", "GET", "k")
}
