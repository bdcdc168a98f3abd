package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// floodRun opens conns connections that each write perConn SETs of a
// size-byte value as fast as the socket takes them, without waiting for
// replies, while a reader per connection drains and checks the replies.
// Meanwhile it samples the server's VmRSS every 20 ms. The sample's Value is
// the peak RSS in KiB; Detail says how long the flood took.
//
// It is the shape of the bounded-memory promise (invariant 7 in
// docs/architecture.md): far more requests arrive than the server can
// execute at once, and what it buffers must stay bounded (TCP back-pressure
// holds the rest in the clients' sockets).
func floodRun(ctx context.Context, addr string, pid, conns, perConn, size int, stallAfter time.Duration) sample {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		errOnce  sync.Once
		firstErr error
		replies  atomic.Int64
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}

	value := payload(size, 0)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < conns; i++ {
		c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			fail(fmt.Errorf("connection %d: %w", i, err))
			break
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		cmd := []byte(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$%d\r\nflood:%06d\r\n$%d\r\n%s\r\n",
			len("flood:")+6, i, size, value))
		wg.Add(2)
		go func() { // writer: 16 commands per write until perConn are sent
			defer wg.Done()
			chunk := bytes.Repeat(cmd, 16)
			for sent := 0; sent < perConn; sent += 16 {
				n := min(16, perConn-sent)
				if _, err := c.Write(chunk[:n*len(cmd)]); err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("write: %w", err))
					}
					return
				}
			}
		}()
		go func() { // reader: every reply must be +OK, in order
			defer wg.Done()
			defer stop()
			defer c.Close()
			r := bufio.NewReaderSize(c, 4096)
			want := []byte("+OK\r\n")
			got := make([]byte, len(want))
			for n := 0; n < perConn; n++ {
				c.SetReadDeadline(time.Now().Add(stallAfter))
				if _, err := io.ReadFull(r, got); err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("reply %d: %w", n, err))
					}
					return
				}
				if !bytes.Equal(got, want) {
					line, _ := r.ReadString('\n')
					fail(fmt.Errorf("reply %d: %q", n, string(got)+line))
					return
				}
				replies.Add(1)
			}
		}()
	}

	stopSampling := sampleRSS(pid, 20*time.Millisecond)
	wg.Wait()
	peak := stopSampling()
	took := time.Since(start)
	if firstErr != nil {
		return sample{Status: statusFailed, Detail: firstErr.Error()}
	}
	if n := replies.Load(); n != int64(conns*perConn) {
		return sample{Status: statusFailed, Detail: "replies: " + strconv.FormatInt(n, 10)}
	}
	return sample{Status: statusOK, Value: float64(peak),
		Detail: fmt.Sprintf("%d SETs in %.1fs", conns*perConn, took.Seconds())}
}

// flood runs floodRun against Redis and Cellar, one round each.
func (r *runner) flood(ctx context.Context) *table {
	specs := []serverSpec{specRedis(r.peers), specCellar(r.peers)}
	names, labels := specNames(specs)
	c := r.cfg.flood
	t := &table{
		ID: "flood", Title: "Flood",
		Params: fmt.Sprintf("%d connections each write %d SETs of %d bytes (one key per connection) without waiting for replies, "+
			"while a reader per connection checks every reply; peak VmRSS sampled every 20 ms; one round. "+
			"Then two attacks on fresh servers, both with a %s client memory budget (Redis --maxmemory-clients, Cellar's default maxmemory_clients): "+
			"clients that pipeline GETs of a 1 MB value, 100 at a time, 40 times 50 ms apart, never reading; "+
			"clients that announce a 400 MB SET value and send 200 MB of it; peak RSS is the kernel's VmHWM",
			c.conns, c.perConn, c.size, attackBudget),
		Metric: "RSS KiB", Lower: true,
		Servers: names, Labels: labels, Ratios: [][2]string{{"cellar", "redis"}},
	}
	peakRow := "peak RSS during the flood"
	startRow := "RSS at start"
	t.row(peakRow)
	t.row(startRow)
	r.log("flood: %d connections × %d SETs of %d bytes", c.conns, c.perConn, c.size)
	for _, sp := range specs {
		if ctx.Err() != nil {
			break
		}
		s, err := startServer(sp, r.cfg.workDir)
		if err != nil {
			smp := sample{Status: statusFailed, Detail: "server did not start: " + err.Error()}
			t.add(startRow, sp.Name, smp)
			t.add(peakRow, sp.Name, smp)
			continue
		}
		if kb, err := rssKB(s.pid()); err == nil {
			t.add(startRow, sp.Name, sample{Status: statusOK, Value: float64(kb)})
		} else {
			t.add(startRow, sp.Name, sample{Status: statusFailed, Detail: err.Error()})
		}
		smp := floodRun(ctx, s.addr(), s.pid(), c.conns, c.perConn, c.size, r.cfg.stallAfter)
		r.log("  flood    %-8s peak %s (%s)", sp.Name, describeKB(smp), smp.Detail)
		t.add(peakRow, sp.Name, smp)
		s.stop(r.cfg.keep)
	}
	r.attacks(ctx, t, specs)
	t.finish()
	return t
}
