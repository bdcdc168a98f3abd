package tests

import (
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
	t.Parallel()
	s := startServer(t, outputLimits(16<<20, 0, 0))
	needCellar(t, s)
	big := strings.Repeat("x", 1<<20)
	s.raw().expect("+OK\r\n", "SET", "big", big)
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
// limit for soft_seconds. A client that reads stays connected, though each
// of its pipelines puts it above the limit: its output drains below the
// limit between them, and each time above starts the soft time anew.
func TestOutputSoftLimit(t *testing.T) {
	t.Parallel()
	const softFor = 3 * time.Second
	s := startServer(t, outputLimits(256<<20, 1<<20, softFor))
	needCellar(t, s)
	big := strings.Repeat("x", 1<<20)
	s.raw().expect("+OK\r\n", "SET", "big", big)
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

	// Rounds of one MGET of 16 values of 1 MB, a reply written at once and
	// larger than the socket buffers take (4 MB to send; the reader's capped
	// at 1 MB, else Linux grows it to 32 MB), go on until the reader has
	// been connected for 1.5 times the soft time. In each round the reader
	// waits until the server holds its output above the limit (obl), reads
	// 4 MB of the reply (enough for the kernel to call the socket writable
	// again), waits until the loop's periodic check has seen the output
	// shrink while still above the limit, reads the rest, and waits until
	// the server has seen it all sent (obl=0). A soft time counted from the
	// first time above, not the latest, would close the connection at one
	// of those checks.
	admin := s.client()
	slow := s.raw()
	if err := slow.c.(*net.TCPConn).SetReadBuffer(1 << 20); err != nil {
		t.Fatal(err)
	}
	id := slow.clientID()
	mget, values := []string{"MGET"}, make([]string, 16)
	for i := range values {
		mget, values[i] = append(mget, "big"), bulk(big)
	}
	want := []byte(array(values...))
	got := make([]byte, len(want))
	read := func(round int, p []byte) {
		slow.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if n, err := io.ReadFull(slow.r, p); err != nil {
			t.Fatalf("round %d: read %d of %d bytes: %v", round, n, len(p), err)
		}
	}
	for start, round := time.Now(), 0; time.Since(start) < softFor+softFor/2; round++ {
		slow.send(encode(mget...))
		var held int64
		waitFor(t, 20*time.Second, "the reader's output to be above the soft limit", func() bool {
			held = clientField(t, admin, id, "obl")
			return held > 1<<20
		})
		read(round, got[:4<<20])
		waitFor(t, 20*time.Second, "a check to see the reader's output shrink", func() bool {
			return clientField(t, admin, id, "obl") < held
		})
		read(round, got[4<<20:])
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: the MGET reply differs from the 16 values", round)
		}
		waitFor(t, 20*time.Second, "the server to see the reader's output sent", func() bool {
			return clientField(t, admin, id, "obl") == 0
		})
	}
	slow.expect("+PONG\r\n", "PING")
}

// Many clients flooding pipelined writes at once, with a small actor
// backlog: the loops stop reading when the actor is behind and resume when
// it catches up; every reply arrives, in order, to the right client.
func TestFloodWithSmallBacklog(t *testing.T) {
	t.Parallel()
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
				if got, err := r.reply(); err != nil || got != "+OK\r\n" {
					errs <- fmt.Errorf("client %d, SET %d: %q %v", i, j, got, err)
					return
				}
				got, err := r.reply()
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

// A connection whose input must wait stops being read: a client blocked in
// BLPOP that pipelines 2 MB behind it fills the socket buffers and is held
// back by TCP, while the server holds at most a read of it. Once the BLPOP is served,
// reading resumes and every pipelined command runs, in order.
func TestWaitingInputIsNotRead(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	admin := s.client()
	r := s.raw()
	r.send(encode("BLPOP", "queue", "0"))
	waitBlocked(t, admin, 1)

	// 2 MB of INCRs.
	const perWrite, writes = 2000, 40
	chunk := bytes.Repeat(encode("INCR", "counter"), perWrite)
	var written atomic.Int64
	writeErr := make(chan error, 1)
	go func() {
		r.c.SetWriteDeadline(time.Now().Add(10 * time.Minute))
		for i := 0; i < writes; i++ {
			if _, err := r.c.Write(chunk); err != nil {
				writeErr <- err
				return
			}
			written.Add(int64(len(chunk)))
		}
		writeErr <- nil
	}()
	waitFor(t, 20*time.Second, "the client to write 1 MB", func() bool { return written.Load() >= 1<<20 })
	if held := infoInt(t, admin, "stats", "held_input_bytes"); held > 64<<10 {
		t.Fatalf("the server holds %d bytes of input behind a blocked command", held)
	}
	if err := admin.LPush(ctx, "queue", "job").Err(); err != nil {
		t.Fatal(err)
	}
	if got := r.read(); got != "*2\r\n$5\r\nqueue\r\n$3\r\njob\r\n" {
		t.Fatalf("BLPOP reply %q", got)
	}
	buf := make([]byte, 32)
	for i := 1; i <= perWrite*writes; i++ {
		want := integer(int64(i))
		r.c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.ReadFull(r.r, buf[:len(want)]); err != nil || string(buf[:len(want)]) != want {
			t.Fatalf("INCR %d: %q, want %q (%v)", i, buf[:len(want)], want, err)
		}
	}
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}
}

// The input held for all clients together counts against the client
// memory budget (maxmemory_clients): over it, the client using the most is
// disconnected with a log line, and everyone else is served.
func TestHeldInputLimit(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.MaxMemoryClients = 1 << 20 })
	needCellar(t, s)
	admin := s.client()
	// Each client blocks and pipelines more than one read behind it, which
	// the server holds: 100 such clients hold over 1 MB.
	const clients = 100
	behind := bytes.Repeat(encode("SET", "k", strings.Repeat("v", 1000)), 40)
	conns := make([]*rawConn, clients)
	for i := range conns {
		conns[i] = s.raw()
		req := append(encode("BLPOP", fmt.Sprint("q", i), "0"), behind...)
		go conns[i].c.Write(req)
	}
	waitFor(t, 20*time.Second, "an eviction to be logged", func() bool {
		return strings.Contains(s.logBuf.String(), "over maxmemory_clients")
	})
	if n := infoInt(t, admin, "stats", "evicted_clients"); n < 1 {
		t.Fatalf("evicted_clients %d", n)
	}
	waitFor(t, 20*time.Second, "client memory to fall under the limit", func() bool {
		return infoInt(t, admin, "clients", "clients_memory") <= 1<<20
	})
	other := s.raw()
	other.expect("+PONG\r\n", "PING")
	other.expect("$-1\r\n", "GET", "k")
}

// TestEngineBoundFlushesAndHolds: with flushes set not to start by
// time (a minute) or by the log's size, a client writing 16 times storage.max_memory
// still leaves the engine near its bound. Passing the bound starts a
// flush (only a flush lets changed keys go), and past twice the bound the
// rounds wait for flushes; every key is then read back.
func TestEngineBoundFlushesAndHolds(t *testing.T) {
	t.Parallel()
	const bound = 1 << 20
	s := startServer(t, func(c *cellar.Config) {
		c.Storage.MaxMemory = bound
		c.Storage.FlushInterval = time.Minute
		c.Storage.FlushBytes = 1 << 30
		c.Storage.MaxUnflushed = 1 << 30
	})
	ctx := context.Background()
	c := s.client()
	val := strings.Repeat("v", 1000)
	const keys = 16 * bound / 1000 / 100 * 100
	for i := 0; i < keys; i += 100 {
		pipe := c.Pipeline()
		for k := i; k < i+100; k++ {
			pipe.Set(ctx, "k"+strconv.Itoa(k), val, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	held, _ := strconv.ParseInt(masterInfo(t, c, "memory", "engine_bytes"), 10, 64)
	// One round's writes (a pipeline of 100 keys, about 100 KB) may pass
	// twice the bound before the next round waits.
	if held > 2*bound+256<<10 {
		t.Fatalf("engine_bytes %d after writing %d bytes with a bound of %d", held, keys*1000, bound)
	}
	if n, _ := strconv.Atoi(masterInfo(t, c, "persistence", "flushes")); n == 0 {
		t.Fatalf("no flush ran")
	}
	for i := 0; i < keys; i += 997 {
		if got, err := c.Get(ctx, "k"+strconv.Itoa(i)).Result(); err != nil || got != val {
			t.Fatalf("k%d: %q, %v", i, got, err)
		}
	}
	if n, _ := c.DBSize(ctx).Result(); n != keys {
		t.Fatalf("DBSIZE %d, want %d", n, keys)
	}
}
