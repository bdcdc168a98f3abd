package tests

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// cellarBinary builds bin/cellar once per test run, into a temporary dir.
func cellarBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cellar-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "cellar")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/cellar")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// proc is Cellar running as its own process.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	addr   string      // the address it bound, once ready
	stderr *procOutput // what it printed, stdout and stderr
	done   chan struct{}
	err    error // the process's end, once done is closed
}

// readyMessage is the log line Cellar writes once it listens, with the
// address it bound in its "addr" field.
const readyMessage = "Cellar is ready to accept connections"

// runCellar starts the built binary with args. Unless args name a port, it
// listens on port 0, where the kernel picks a free one. With wait,
// runCellar returns once the process has logged its ready line (at level
// info, the default) and answered PING on the address that line gives,
// which is p.addr; without, it returns at once, for a process that is
// expected to exit.
func runCellar(t testing.TB, wait bool, args ...string) *proc {
	t.Helper()
	return runCellarEnv(t, nil, wait, args...)
}

// runCellarEnv is runCellar with env (CELLAR_* settings) added to the
// process's environment.
func runCellarEnv(t testing.TB, env []string, wait bool, args ...string) *proc {
	t.Helper()
	if !slices.Contains(args, "--port") {
		args = append([]string{"--port", "0"}, args...)
	}
	if i := slices.Index(args, "--loglevel"); wait && i >= 0 && i+1 < len(args) && args[i+1] != "info" && args[i+1] != "debug" {
		t.Fatalf("runCellar waits for the ready line, which --loglevel %s hides", args[i+1])
	}
	p := &proc{t: t, stderr: newProcOutput(), done: make(chan struct{})}
	p.cmd = exec.Command(cellarBinary(t), args...)
	p.cmd.Env = append(serverEnv(), env...)
	p.cmd.Stderr = p.stderr
	p.cmd.Stdout = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	if !wait {
		return p
	}
	select {
	case p.addr = <-p.stderr.ready:
	case <-p.done:
		t.Fatalf("cellar exited: %v\n%s", p.err, p.stderr.String())
	case <-time.After(2 * time.Minute): // a start on a loaded machine took 20 s
		t.Fatalf("cellar did not log %q in 2 minutes\n%s", readyMessage, p.stderr.String())
	}
	if !answersPing(t, p.addr) {
		t.Fatalf("cellar does not answer PING on %s\n%s", p.addr, p.stderr.String())
	}
	return p
}

// answersPing reports whether the server at addr (host:port or a unix
// socket's path) answers PING with PONG.
func answersPing(t testing.TB, addr string) bool {
	c, err := dialAddr(addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	reply, err := rawOn(t, c).tryDo("PING")
	return err == nil && reply == "+PONG\r\n"
}

// stop ends the process at the end of the test if it still runs: SIGTERM,
// and SIGKILL if it has not exited 30 seconds later. A failed test shows
// what the process printed.
func (p *proc) stop() {
	if p.t.Failed() {
		defer func() { p.t.Logf("cellar's output:\n%s", p.stderr.String()) }()
	}
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// procOutput keeps everything a process prints, and sends the address of
// Cellar's ready line on ready, once.
type procOutput struct {
	mu    sync.Mutex
	all   bytes.Buffer
	line  []byte // the unfinished last line
	seen  bool
	ready chan string
}

// logLine is what procOutput reads of a log line.
type logLine struct{ Message, Addr string }

// The race detector (Go 1.26.8) once reported a race inside
// encoding/json's field cache when two processes' first log lines were
// decoded at the same moment (one goroutine building logLine's fields,
// the other reading them): decoding one line here, before any test runs,
// makes the first use single-threaded.
func init() { _ = json.Unmarshal([]byte(`{"message":"","addr":""}`), new(logLine)) }

func newProcOutput() *procOutput { return &procOutput{ready: make(chan string, 1)} }

func (o *procOutput) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.all.Write(b)
	o.line = append(o.line, b...)
	for {
		i := bytes.IndexByte(o.line, '\n')
		if i < 0 {
			break
		}
		var entry logLine
		if !o.seen && json.Unmarshal(o.line[:i], &entry) == nil && entry.Message == readyMessage && entry.Addr != "" {
			o.seen = true
			o.ready <- entry.Addr
		}
		o.line = o.line[i+1:]
	}
	o.line = append([]byte(nil), o.line...)
	return len(b), nil
}

func (o *procOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.all.String()
}

// serverEnv is the test's environment without CELLAR_* variables: a
// developer's settings must not change the servers the tests start.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CELLAR_") {
			env = append(env, kv)
		}
	}
	// A full sync starts at once, as in startServer; a test's own
	// setting comes later in the environment and wins.
	return append(env, "CELLAR_MASTER__DISKLESS_SYNC_DELAY=0s")
}

// exitCode waits for the process to exit on its own.
func (p *proc) exitCode() int {
	p.t.Helper()
	select {
	case <-p.done:
		var ee *exec.ExitError
		if errors.As(p.err, &ee) {
			return ee.ExitCode()
		}
		if p.err != nil {
			p.t.Fatal(p.err)
		}
		return 0
	case <-time.After(2 * time.Minute):
		p.t.Fatalf("cellar did not exit in 2 minutes\n%s", p.stderr.String())
	}
	return -1
}

func (p *proc) kill9() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// integrityCheck opens the database as SQLite would after a crash and runs
// PRAGMA integrity_check.
func integrityCheck(t testing.TB, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		t.Fatalf("integrity_check: %q %v", res, err)
	}
}

// crashKills is how many kill -9 cycles each durability mode gets: a few in
// make test, TEST_CRASH_KILLS=20 (make crash-long) for the long run.
func crashKills(t testing.TB) int {
	if v := os.Getenv("TEST_CRASH_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("TEST_CRASH_KILLS=%q", v)
		}
		return n
	}
	return 3
}

// TestCrashLosesNothingAcknowledged drives writes from many clients, kills
// the server with SIGKILL, restarts it, and checks that every acknowledged
// write is there and the database passes integrity_check. Every mode
// writes the redo log before replying, so a killed process loses nothing
// acknowledged in any of them (power loss is another matter: see
// docs/durability.md). The kills take turns at what they aim at: a random moment, a
// flush in flight (INFO persistence's flush_in_progress:1) and a
// checkpoint under way (checkpoint_in_progress:1; the WAL's threshold is
// small, so that checkpoints come often).
func TestCrashLosesNothingAcknowledged(t *testing.T) {
	t.Parallel()
	aims := []string{"a random moment", "a flush", "a checkpoint"}
	aimField := []string{"", "flush_in_progress", "checkpoint_in_progress"}
	for _, mode := range []string{"everysec", "always", "off"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--dir", dir, "--durability", mode}
			env := []string{"CELLAR_SQLITE__CHECKPOINT_PAGES=64"}
			const writers = 16
			acked := make([]atomic.Int64, writers) // highest n acknowledged per writer
			for i := range acked {
				acked[i].Store(-1)
			}
			next := make([]int64, writers) // next n per writer, across restarts
			kills := crashKills(t)
			replays := 0 // restarts that replayed unflushed writes from the redo log
			for k := 0; k < kills; k++ {
				aim := k % len(aims)
				p := runCellarEnv(t, env, true, args...)
				var total atomic.Int64
				var wg sync.WaitGroup
				stop := make(chan struct{})
				for w := 0; w < writers; w++ {
					wg.Add(1)
					go func(w int) {
						defer wg.Done()
						// Only the kill ends a writer: a reply slow behind a busy disk
						// (go-redis gives up after 3 s by default) would end it early,
						// and the wait before the kill would wait for writes no one sends.
						c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ReadTimeout: replyTimeout, WriteTimeout: replyTimeout})
						defer c.Close()
						for n := next[w]; ; n++ {
							select {
							case <-stop:
								return
							default:
							}
							key := fmt.Sprintf("w%d:%d", w, n)
							if err := c.Set(ctx, key, key, 0).Err(); err != nil {
								return // the server is gone
							}
							acked[w].Store(n)
							next[w] = n + 1
							total.Add(1)
						}
					}(w)
				}
				threshold := int64(200 + rand.IntN(1500))
				waitFor(t, 60*time.Second, "writes before the kill", func() bool { return total.Load() >= threshold })
				if f := aimField[aim]; f != "" {
					admin := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
					waitFor(t, 60*time.Second, f+":1", func() bool {
						info := admin.Info(ctx, "persistence").Val()
						return strings.Contains(info, "\r\n"+f+":1\r\n")
					})
					admin.Close()
				}
				p.kill9()
				close(stop)
				wg.Wait()
				integrityCheck(t, filepath.Join(dir, "cellar.db"))
				p = runCellarEnv(t, env, true, args...)
				if strings.Contains(p.stderr.String(), "replayed the redo log") {
					replays++
				}
				c := redis.NewClient(&redis.Options{Addr: p.addr})
				for w := 0; w < writers; w++ {
					upTo := acked[w].Load()
					pipe := c.Pipeline()
					cmds := make([]*redis.StringCmd, 0, upTo+1)
					for n := int64(0); n <= upTo; n++ {
						cmds = append(cmds, pipe.Get(ctx, fmt.Sprintf("w%d:%d", w, n)))
					}
					pipe.Exec(ctx)
					for n, cmd := range cmds {
						if want := fmt.Sprintf("w%d:%d", w, n); cmd.Val() != want {
							t.Fatalf("kill %d: acknowledged write %s lost (got %q, %v)", k+1, want, cmd.Val(), cmd.Err())
						}
					}
				}
				c.Close()
				p.kill9()
				var checked int64
				for w := range acked {
					checked += acked[w].Load() + 1
				}
				t.Logf("kill %d/%d, aimed at %s: %d acknowledged writes so far, all present after restart", k+1, kills, aims[aim], checked)
			}
			// Writes reach SQLite in flushes 200 ms apart, and the writers
			// never pause: a kill lands between flushes, and the restart
			// must have rebuilt those writes from the log.
			if replays == 0 {
				t.Fatalf("no restart of %d replayed the redo log: the kills did not test it", kills)
			}
			t.Logf("%d of %d restarts replayed unflushed writes from the redo log", replays, kills)
		})
	}
}

// A file that is not a SQLite database stops Cellar with a clear message;
// it is never replaced by a fresh empty database.
func TestCorruptDatabaseRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "cellar.db")
	garbage := bytes.Repeat([]byte("this is not a database "), 1000)
	os.WriteFile(path, garbage, 0o644)
	p := runCellar(t, false, "--dir", dir)
	if code := p.exitCode(); code != 1 {
		t.Fatalf("exit code %d, want 1\n%s", code, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "not a database") {
		t.Fatalf("message: %s", p.stderr.String())
	}
	after, _ := os.ReadFile(path)
	if sha256.Sum256(after) != sha256.Sum256(garbage) {
		t.Fatal("the unreadable file was modified")
	}
	// An unreadable file, likewise.
	dir2 := t.TempDir()
	path2 := filepath.Join(dir2, "cellar.db")
	os.WriteFile(path2, nil, 0o000)
	if os.Geteuid() != 0 { // root reads anything
		p = runCellar(t, false, "--dir", dir2)
		if code := p.exitCode(); code != 1 || !strings.Contains(p.stderr.String(), "cannot read") {
			t.Fatalf("unreadable file: exit %d\n%s", code, p.stderr.String())
		}
	}
}

func TestPortInUse(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	p := runCellar(t, false, "--port", port, "--dir", t.TempDir())
	if code := p.exitCode(); code == 0 || !strings.Contains(p.stderr.String(), "already in use") {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
}

func TestInvalidConfigExits2(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--port", "99999"}, "", "port: must be between 0 and 65535, not 99999"},
		{[]string{"--durability", "maybe"}, "", "durability: must be always, everysec or off"},
		{nil, "CELLAR_MAXCLIENTS=-1", "maxclients: must be at least 1"},
		{nil, "CELLAR_STORAGE__ENGINE=sqlite", `storage.engine: removed: the in-memory engine is the only one (docs/architecture.md, "Storage engine"); delete the key`},
		{nil, "CELLAR_STORAGE__MAX_UNFLUSHED=100", "storage.max_unflushed: must be 0 (four times storage.flush_bytes) or at least 65536, not 100"},
		{nil, "CELLAR_STORAGE__MAX_MEMORY=-1", "storage.max_memory: must be 0 (a quarter of the memory) or more, not -1"},
	} {
		cmd := exec.Command(cellarBinary(t), append(c.args, "--dir", t.TempDir())...)
		cmd.Env = append(serverEnv(), c.env)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%v %s: %v\n%s", c.args, c.env, err, out)
		}
	}
	out, err := exec.Command(cellarBinary(t), "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--durability") {
		t.Errorf("--help: %v\n%s", err, out)
	}
}

// SIGTERM shuts down gracefully (exit 0) and keeps what was written.
func TestSigterm(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := runCellar(t, true, "--dir", dir)
	c := redis.NewClient(&redis.Options{Addr: p.addr})
	c.Set(ctx, "k", "kept", 0)
	c.Close()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.exitCode(); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "cellar.db-wal")); err == nil {
		t.Error("the WAL is still there after a clean shutdown (no checkpoint?)")
	}
	p = runCellar(t, true, "--dir", dir)
	c = redis.NewClient(&redis.Options{Addr: p.addr})
	defer c.Close()
	if v := c.Get(ctx, "k").Val(); v != "kept" {
		t.Fatalf("after restart: %q", v)
	}
}

func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: run scripts/deps.sh (make test does)", name)
	}
	return p
}

// redis-cli --pipe (mass insertion) works, with every reply counted.
func TestRedisCliPipe(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cli := needTool(t, "redis-cli")
	host, port, _ := net.SplitHostPort(s.addr)
	var in bytes.Buffer
	for i := 0; i < 10000; i++ {
		in.Write(encode("SET", fmt.Sprint("pipe:", i), fmt.Sprint(i)))
	}
	cmd := exec.Command(cli, "-h", host, "-p", port, "--pipe")
	cmd.Stdin = &in
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "errors: 0, replies: 10000") {
		t.Fatalf("redis-cli --pipe: %v\n%s", err, out)
	}
	s.raw().expect(":10000\r\n", "DBSIZE")
}

// redis-cli in interactive mode (on a terminal) fetches COMMAND DOCS for
// its hints at start; that must not break it. The test gives redis-cli a
// pseudo-terminal and answers its cursor-position queries like a terminal.
func TestRedisCliInteractive(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cli := needTool(t, "redis-cli")
	host, port, _ := net.SplitHostPort(s.addr)
	prompt := host + ":" + port + ">"
	out := runOnTerminal(t, []string{cli, "-h", host, "-p", port}, prompt,
		"SET greeting hello\r", "OK",
		"GET greeting\r", `"hello"`,
		"COMMAND COUNT\r", "(integer)",
		"quit\r", "")
	if !strings.Contains(out, "OK") || !strings.Contains(out, `"hello"`) || strings.Contains(out, "ERR") || strings.Contains(out, "rror") {
		t.Fatalf("redis-cli session:\n%s", out)
	}
	// The hints need COMMAND DOCS; it must have been asked for and answered.
	if !strings.Contains(s.raw().do("INFO", "stats"), "total_commands_processed:") {
		t.Fatal("INFO")
	}
}

// runOnTerminal runs argv on a new pseudo-terminal. script alternates
// inputs to type and text to wait for in what the program prints after
// that input ("" waits for nothing); before each input it waits for the
// prompt, so that nothing is typed while the line editor is still asking
// the terminal questions. It returns everything printed. It answers "ESC[6n" (where is the cursor?) with
// row 1, column 1, as a terminal does.
func runOnTerminal(t *testing.T, argv []string, prompt string, script ...string) string {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	defer master.Close()
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.Env = append(os.Environ(), "TERM=xterm")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })

	var mu sync.Mutex
	var printed bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				mu.Lock()
				printed.Write(buf[:n])
				mu.Unlock()
				// linenoise learns the width by asking where the cursor is,
				// moving it far right (ESC[999C), and asking again: answer
				// like an 80-column terminal.
				col := 1
				for rest := buf[:n]; len(rest) > 0; {
					q := bytes.Index(rest, []byte("\x1b[6n"))
					if q < 0 {
						break
					}
					if bytes.Contains(rest[:q], []byte("\x1b[999C")) {
						col = 80
					}
					master.Write([]byte("\x1b[1;" + strconv.Itoa(col) + "R"))
					col = 1
					rest = rest[q+4:]
				}
			}
			if err != nil {
				return
			}
		}
	}()
	// printedAfter reports whether want appears in the output after byte from.
	printedAfter := func(from int, want string) (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		i := bytes.Index(printed.Bytes()[from:], []byte(want))
		return from + i + len(want), i >= 0
	}
	mark := 0
	for i := 0; i+1 < len(script); i += 2 {
		// The prompt, then (once the editor has printed it in full) type.
		waitFor(t, 10*time.Second, "the prompt", func() bool {
			end, ok := printedAfter(mark, prompt)
			if ok {
				mark = end
			}
			return ok
		})
		mu.Lock()
		before := printed.Len()
		mu.Unlock()
		master.Write([]byte(script[i]))
		mark = before
		if want := script[i+1]; want != "" {
			waitFor(t, 10*time.Second, fmt.Sprintf("%q after %q", want, script[i]), func() bool {
				end, ok := printedAfter(before, want)
				if ok {
					mark = end
				}
				return ok
			})
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("redis-cli: %v", err)
		}
	case <-time.After(10 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("redis-cli did not exit after quit; it printed %q", printed.String())
	}
	mu.Lock()
	defer mu.Unlock()
	return printed.String()
}

// redis-benchmark runs its standard tests against Cellar without warnings
// or errors (it asks CONFIG GET save/appendonly first).
func TestRedisBenchmarkRuns(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	bench := needTool(t, "redis-benchmark")
	host, port, _ := net.SplitHostPort(s.addr)
	out, err := exec.Command(bench, "-h", host, "-p", port, "-t", "set,get,incr,mset,ping", "-n", "2000", "-c", "20", "-q").CombinedOutput()
	o := string(out)
	if err != nil || strings.Contains(o, "WARN") || strings.Contains(o, "ERR") || strings.Contains(o, "rror") {
		t.Fatalf("redis-benchmark: %v\n%s", err, o)
	}
	for _, test := range []string{"PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "MSET (10 keys)"} {
		if !strings.Contains(o, test+": ") {
			t.Errorf("redis-benchmark did not report %s:\n%s", test, o)
		}
	}
}
