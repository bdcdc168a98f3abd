package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// procs is every process group this run started and has not yet reaped, so
// that an error path or a signal can kill them all.
var procs = &procTable{groups: map[int]string{}}

type procTable struct {
	mu     sync.Mutex
	groups map[int]string // pgid -> what it is
}

func (t *procTable) add(pgid int, what string) {
	t.mu.Lock()
	t.groups[pgid] = what
	t.mu.Unlock()
}

func (t *procTable) remove(pgid int) {
	t.mu.Lock()
	delete(t.groups, pgid)
	t.mu.Unlock()
}

// killAll sends SIGKILL to every process group still recorded. Safe to call
// more than once and from a signal handler goroutine.
func (t *procTable) killAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for pgid := range t.groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		delete(t.groups, pgid)
	}
}

// startGroup starts cmd in a new process group and records it.
func startGroup(cmd *exec.Cmd, what string) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return err
	}
	procs.add(cmd.Process.Pid, what)
	return nil
}

// stopGroup asks the group to stop (SIGTERM), waits up to grace for cmd to
// exit, then kills the group. waited must be closed when cmd.Wait returned.
func stopGroup(cmd *exec.Cmd, waited <-chan struct{}, grace time.Duration) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-waited:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-waited
	}
	// Anything the leader left behind in its group goes too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	procs.remove(pgid)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping sends one RESP PING and expects PONG.
func ping(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	// Redka answers with a bulk string; a reply is a reply.
	if got := string(buf[:n]); got != "+PONG\r\n" && got != "$4\r\nPONG\r\n" {
		return fmt.Errorf("PING answered %q", got)
	}
	return nil
}

// rssKB reads VmRSS (in KiB) of a process from /proc.
func rssKB(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	return parseVmRSS(string(b))
}

func parseVmRSS(status string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) < 1 {
				break
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, errors.New("no VmRSS line")
}

// receivedFrom sums bytes_received over the established client sockets
// connected to port on loopback, as `ss -tin` reports them (the kernel's
// tcp_info). The stall watchdog uses it to tell a benchmark that is still
// receiving replies from one that is not. (The client's own counters do
// not do: /proc/PID/io leaves out recv(), which hiredis uses, and
// redis-benchmark keeps spinning on the CPU while it waits.)
func receivedFrom(port int) (int64, error) {
	out, err := exec.Command("ss", "-tinH", "state", "established", "( dport = :"+strconv.Itoa(port)+" )").Output()
	if err != nil {
		return 0, err
	}
	return sumBytesReceived(string(out)), nil
}

func sumBytesReceived(ssOutput string) int64 {
	var sum int64
	for _, f := range strings.Fields(ssOutput) {
		if v, ok := strings.CutPrefix(f, "bytes_received:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			sum += n
		}
	}
	return sum
}
