package tests

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// pyWriterScript writes through redis-py's Sentinel client
// (redis.sentinel.Sentinel(...).master_for): SET pydrill:<i> <i> and WAIT
// 2 1000 in one pipeline, printing "C i" when WAIT answered 2, "A i" when
// the SET answered OK with fewer, "F i" when it failed, until the stop
// file exists. After a failure it reconnects (master_for asks the
// Sentinels again) after 50 ms, pacing the retries while there is no
// primary.
const pyWriterScript = `
import os, sys, time
from redis.sentinel import Sentinel
stop = sys.argv[1]
sentinels = [(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for a in sys.argv[2:]]
s = Sentinel(sentinels, socket_timeout=3, socket_connect_timeout=1)
m = s.master_for("mymaster", socket_timeout=3, socket_connect_timeout=1)
i = 0
while not os.path.exists(stop):
    try:
        p = m.pipeline(transaction=False)
        p.set("pydrill:%d" % i, i)
        p.execute_command("WAIT", 2, 1000)
        ok, n = p.execute()
        print(("C %d" if ok and n == 2 else "A %d") % i, flush=True)
    except Exception:
        print("F %d" % i, flush=True)
        time.sleep(0.05)
    i += 1
`

// pyWriter is redis-py's Sentinel client writing during the drill.
type pyWriter struct {
	cmd  *exec.Cmd
	stop string
	done chan error
	mu   sync.Mutex
	// confirmed, acked and failed as the drill's go-redis writer has them.
	confirmed, acked, failed []int
}

// startPyWriter runs the script under Debian's python3 with redis-py.
func startPyWriter(t *testing.T, sentinels []string) *pyWriter {
	t.Helper()
	needPythonModule(t, "redis.sentinel", "python3-redis")
	dir := t.TempDir()
	script := filepath.Join(dir, "writer.py")
	if err := os.WriteFile(script, []byte(pyWriterScript), 0o600); err != nil {
		t.Fatal(err)
	}
	w := &pyWriter{stop: filepath.Join(dir, "stop"), done: make(chan error, 1)}
	w.cmd = exec.Command(debianPython, append([]string{script, w.stop}, sentinels...)...)
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	w.cmd.Stderr = stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.cmd.Process.Kill() })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			kind, num, ok := strings.Cut(sc.Text(), " ")
			i, err := strconv.Atoi(num)
			if !ok || err != nil {
				continue
			}
			w.mu.Lock()
			switch kind {
			case "C":
				w.confirmed = append(w.confirmed, i)
			case "A":
				w.acked = append(w.acked, i)
			case "F":
				w.failed = append(w.failed, i)
			}
			w.mu.Unlock()
		}
		err := w.cmd.Wait()
		if err != nil {
			err = &pyError{err: err, stderr: stderr.String()}
		}
		w.done <- err
	}()
	return w
}

type pyError struct {
	err    error
	stderr string
}

func (e *pyError) Error() string { return e.err.Error() + "\n" + e.stderr }

// count is how many writes WAIT 2 confirmed so far.
func (w *pyWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.confirmed)
}

// halt stops the writer and waits for it.
func (w *pyWriter) halt(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(w.stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-w.done; err != nil {
		t.Fatalf("redis-py's writer: %v", err)
	}
}
