package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The two client-memory attacks of the flood scenario, run against each
// server with the same client memory budget (Redis: --maxmemory-clients,
// Cellar: its default maxmemory_clients):
//   - never reads: clients pipeline GET of a 1 MB value, 100 at a time, 40
//     times 50 ms apart, and never read a reply;
//   - slow bulks: clients announce a 400 MB SET value and send 200 MB of it.
// The sample's Value is the server's peak RSS (the kernel's VmHWM) in KiB;
// Detail counts the attackers the server closed.

// attackBudget is the client memory budget both servers get: Cellar's
// default maxmemory_clients.
const attackBudget = "256mb"

// peakKB is the process's peak resident set size (VmHWM) in KiB.
func peakKB(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, errors.New("no VmHWM line")
}

// respCmd encodes a command as a RESP array of bulks.
func respCmd(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

// neverReader runs one never-reading client; it reports whether the
// server closed it within the time given.
func neverReader(addr string, within time.Duration) (closed bool, err error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false, err
	}
	defer c.Close()
	burst := bytes.Repeat(respCmd("GET", "big"), 100)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(within)
	for i := 0; time.Now().Before(deadline); i++ {
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Write(burst); err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return true, nil
			}
		}
		if i < 40 {
			<-tick.C
		}
	}
	return false, nil
}

// slowBulker runs one slow-bulk client; it reports whether the server
// closed it.
func slowBulker(addr string) (closed bool, err error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false, err
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(2 * time.Minute))
	if _, err := c.Write([]byte("*3\r\n$3\r\nSET\r\n$4\r\nbulk\r\n$400000000\r\n")); err != nil {
		return true, nil
	}
	chunk := bytes.Repeat([]byte("b"), 1<<20)
	for range 200 {
		if _, err := c.Write(chunk); err != nil {
			return true, nil
		}
	}
	return false, nil
}

// attackRun sets a 1 MB value, runs n attackers of one kind at once and
// returns the server's peak RSS.
func attackRun(ctx context.Context, addr string, pid, n int, kind string) sample {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return sample{Status: statusFailed, Detail: err.Error()}
	}
	c.SetDeadline(time.Now().Add(time.Minute))
	c.Write(respCmd("SET", "big", strings.Repeat("x", 1<<20)))
	line, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if err != nil || line != "+OK\r\n" {
		return sample{Status: statusFailed, Detail: fmt.Sprintf("SET big: %q %v", line, err)}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	closed := 0
	var firstErr error
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ok bool
			var err error
			if kind == "bulk" {
				ok, err = slowBulker(addr)
			} else {
				ok, err = neverReader(addr, 10*time.Second)
			}
			mu.Lock()
			defer mu.Unlock()
			if ok {
				closed++
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return sample{Status: statusFailed, Detail: firstErr.Error()}
	}
	kb, err := peakKB(pid)
	if err != nil {
		return sample{Status: statusFailed, Detail: err.Error()}
	}
	return sample{Status: statusOK, Value: float64(kb), Detail: fmt.Sprintf("%d of %d attackers closed", closed, n)}
}

// attacks adds the attack rows to the flood table: each attack on a fresh
// server of each kind.
func (r *runner) attacks(ctx context.Context, t *table, specs []serverSpec) {
	for _, a := range []struct {
		row, kind string
		n         int
	}{
		{"peak RSS, 4 clients pipelining GETs of 1 MB, never reading", "never", 4},
		{"peak RSS, 8 clients sending 200 MB of a 400 MB bulk", "bulk", 8},
	} {
		t.row(a.row)
		for _, sp := range specs {
			if ctx.Err() != nil {
				return
			}
			if sp.Kind == "redis" {
				sp = redisSpec(r.peers, sp.Name, sp.Label, "--appendonly", "no", "--maxmemory-clients", attackBudget)
			}
			s, err := startServer(sp, r.cfg.workDir)
			if err != nil {
				t.add(a.row, sp.Name, sample{Status: statusFailed, Detail: "server did not start: " + err.Error()})
				continue
			}
			smp := attackRun(ctx, s.addr(), s.pid(), a.n, a.kind)
			r.log("  attack   %-8s %s: peak %s (%s)", sp.Name, a.kind, describeKB(smp), smp.Detail)
			t.add(a.row, sp.Name, smp)
			s.stop(r.cfg.keep)
		}
	}
}
