package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
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
//
// redis-server comes from Debian's redis-server package, which
// scripts/deps.sh installs (make test runs it).
func TestCompat(t *testing.T) {
	files, err := filepath.Glob("testdata/compat/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no compat files: %v", err)
	}
	redisAddr := startRedis(t)
	s := startServer(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			runCompatFile(t, f, s.addr, redisAddr)
		})
	}
}

// startRedis runs redis-server on a free loopback port for the test.
func startRedis(t *testing.T, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed: run scripts/deps.sh (make test does)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--daemonize", "no"}, extra...)
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitFor(t, 10*time.Second, "redis-server to answer PING", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		c.Write(encode("PING"))
		c.SetReadDeadline(time.Now().Add(time.Second))
		reply, err := readReply(bufio.NewReader(c))
		return err == nil && reply == "+PONG\r\n"
	})
	return addr
}

type compatConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialCompat(t *testing.T, addr string) *compatConn {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &compatConn{c: c, r: bufio.NewReaderSize(c, 1<<16)}
}

func (c *compatConn) do(args []string) (string, error) {
	c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.Write(encode(args...)); err != nil {
		return "", err
	}
	return readReply(c.r)
}

func runCompatFile(t *testing.T, path, cellarAddr, redisAddr string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cel, red := dialCompat(t, cellarAddr), dialCompat(t, redisAddr)
	for _, c := range []*compatConn{cel, red} {
		if _, err := c.do([]string{"FLUSHALL"}); err != nil {
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
			cel.do([]string{"FLUSHALL"})
			red.do([]string{"FLUSHALL"})
			continue
		}
		args, err := splitLine(line)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n+1, err)
		}
		got, err1 := cel.do(args)
		want, err2 := red.do(args)
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
		g, err1 := parseTree(bufio.NewReader(strings.NewReader(got)))
		w, err2 := parseTree(bufio.NewReader(strings.NewReader(want)))
		return err1 == nil && err2 == nil && canon(g) == canon(w)
	}
	return got == want
}

// tree is a parsed reply: a leaf line, or an aggregate with children.
type tree struct {
	head string
	kids []tree
}

func parseTree(r *bufio.Reader) (tree, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return tree{}, err
	}
	t := tree{head: line}
	body := strings.TrimSuffix(line[1:], "\r\n")
	switch line[0] {
	case '$', '=', '!':
		n, _ := strconv.Atoi(body)
		if n >= 0 {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return t, err
			}
			t.head += string(buf)
		}
	case '*', '~', '>', '%', '|':
		n, _ := strconv.Atoi(body)
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			k, err := parseTree(r)
			if err != nil {
				return t, err
			}
			t.kids = append(t.kids, k)
		}
	}
	return t, nil
}

// canon renders a tree with the elements of every aggregate sorted (map
// pairs kept together), so that order does not matter.
func canon(t tree) string {
	if len(t.kids) == 0 {
		return t.head
	}
	var parts []string
	if t.head[0] == '%' {
		for i := 0; i+1 < len(t.kids); i += 2 {
			parts = append(parts, canon(t.kids[i])+canon(t.kids[i+1]))
		}
	} else {
		for _, k := range t.kids {
			parts = append(parts, canon(k))
		}
	}
	sort.Strings(parts)
	return t.head + strings.Join(parts, "")
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
