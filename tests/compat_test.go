package tests

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/proto"
)

// TestCompat replays every file in testdata/compat against Cellar and a
// throw-away real redis-server, one connection each, and requires every
// reply to be the same bytes. A file holds one command per line, split like
// a shell line (quotes for spaces, \xNN inside double quotes for binary).
// Blank lines and "#" comments are ignored. A line may start with:
//
//	~   compare the reply as an unordered collection (SMEMBERS, KEYS, ...)
//	?   compare only the reply's RESP type (TIME, RANDOMKEY, ...)
//	!flush   FLUSHALL on both servers
//	!sleep S pause S seconds, so that a TTL set just before has passed
//	         (the pause is the point of the check, not a wait for a result)
//
// redis-server comes from Debian's redis-server package, which
// scripts/deps.sh installs (make test runs it).
func TestCompat(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/compat/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no compat files: %v", err)
	}
	// Every file twice (docs/architecture.md, "Storage engine"): at the
	// defaults, and with a memory bound of one byte (every key whose last
	// flush has committed leaves memory after each command) and flushes
	// 5 ms apart, so that commands meet keys that left memory and load
	// them back (about 1 300 times over the files). A fresh redis-server
	// for each pass: state that outlives a file (math.random's generator)
	// must start where the first pass started.
	for _, pass := range []struct {
		name string
		opt  func(*cellar.Config)
	}{
		{"", func(*cellar.Config) {}},
		{"tiny-bound/", func(c *cellar.Config) {
			c.Storage.MaxMemory = 1
			c.Storage.FlushInterval = 5 * time.Millisecond
		}},
	} {
		redisAddr := startRedis(t)
		s := startServer(t, pass.opt)
		for _, f := range files {
			t.Run(pass.name+filepath.Base(f), func(t *testing.T) {
				runCompatFile(t, f, s.addr, redisAddr)
			})
		}
		if s.external {
			return // the server under test is one the tests did not start
		}
	}
}

// startRedis runs redis-server for the test and returns the path of its
// unix socket. It listens on no TCP port at all ("--port 0" means that to
// Redis), so that no port has to be picked and nothing can take it first;
// the raw client dials a socket path as it dials host:port.
func startRedis(t *testing.T, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed: run scripts/deps.sh (make test does)")
	}
	// Not t.TempDir(): a socket path must stay short (108 bytes), whatever
	// the test's name.
	sockDir, err := os.MkdirTemp("", "redis")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "redis.sock")
	args := append([]string{"--port", "0", "--unixsocket", sock, "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--daemonize", "no"}, extra...)
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, 10*time.Second, "redis-server to answer PING", func() bool { return answersPing(t, sock) })
	return sock
}

func runCompatFile(t *testing.T, path, cellarAddr, redisAddr string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cel, red := dialRaw(t, cellarAddr), dialRaw(t, redisAddr)
	for _, c := range []*rawConn{cel, red} {
		if _, err := c.tryDo("FLUSHALL"); err != nil {
			t.Fatal(err)
		}
	}
	var diffs []string
	same := 0
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		mode := byte(0)
		if line[0] == '~' || line[0] == '?' {
			mode, line = line[0], strings.TrimSpace(line[1:])
		}
		if line == "!flush" {
			cel.tryDo("FLUSHALL")
			red.tryDo("FLUSHALL")
			continue
		}
		if secs, ok := strings.CutPrefix(line, "!sleep "); ok {
			d, err := strconv.ParseFloat(strings.TrimSpace(secs), 64)
			if err != nil || d <= 0 {
				t.Fatalf("%s:%d: bad pause %q", path, n+1, line)
			}
			time.Sleep(time.Duration(d * float64(time.Second)))
			continue
		}
		if strings.HasPrefix(line, "!") {
			t.Fatalf("%s:%d: unknown directive %q", path, n+1, line)
		}
		args, err := splitLine(line)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n+1, err)
		}
		got, err1 := cel.tryDo(args...)
		want, err2 := red.tryDo(args...)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s:%d %s: cellar err %v, redis err %v", path, n+1, line, err1, err2)
		}
		if compatEqual(mode, got, want) {
			same++
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s:%d: %s\n    cellar: %q\n    redis:  %q", filepath.Base(path), n+1, line, got, want))
	}
	if len(diffs) > 0 {
		t.Errorf("%d same, %d different:\n%s", same, len(diffs), strings.Join(diffs, "\n"))
	}
}

func compatEqual(mode byte, got, want string) bool {
	switch mode {
	case '?':
		return len(got) > 0 && len(want) > 0 && got[0] == want[0]
	case '~':
		g, err1 := proto.ReadReply(bufio.NewReader(strings.NewReader(got)))
		w, err2 := proto.ReadReply(bufio.NewReader(strings.NewReader(want)))
		return err1 == nil && err2 == nil && canon(g) == canon(w)
	}
	return got == want
}

// canon renders a reply with the elements of every aggregate sorted (map
// pairs kept together), so that order does not matter.
func canon(r proto.Reply) string {
	if len(r.Elems) == 0 {
		return string(r.Raw)
	}
	var parts []string
	inner := 0
	if r.Type == '%' {
		for i := 0; i+1 < len(r.Elems); i += 2 {
			parts = append(parts, canon(r.Elems[i])+canon(r.Elems[i+1]))
		}
	} else {
		for _, e := range r.Elems {
			parts = append(parts, canon(e))
		}
	}
	for _, e := range r.Elems {
		inner += len(e.Raw)
	}
	sort.Strings(parts)
	head := r.Raw[:len(r.Raw)-inner] // the aggregate's own line
	return string(head) + strings.Join(parts, "")
}

// splitLine splits a compat line like a shell would: whitespace separates,
// 'single quotes' are literal, "double quotes" understand \xNN, \n, \r, \t,
// \\ and \".
func splitLine(line string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inArg := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		case c == '\'':
			inArg = true
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unbalanced quote")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inArg = true
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] != '\\' || i+1 >= len(line) {
					cur.WriteByte(line[i])
					continue
				}
				i++
				switch line[i] {
				case 'x':
					if i+2 >= len(line) {
						return nil, fmt.Errorf("short \\x escape")
					}
					v, err := strconv.ParseUint(line[i+1:i+3], 16, 8)
					if err != nil {
						return nil, err
					}
					cur.WriteByte(byte(v))
					i += 2
				case 'n':
					cur.WriteByte('\n')
				case 'r':
					cur.WriteByte('\r')
				case 't':
					cur.WriteByte('\t')
				default:
					cur.WriteByte(line[i])
				}
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unbalanced quote")
			}
		default:
			inArg = true
			cur.WriteByte(c)
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}
