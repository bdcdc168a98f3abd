package tests

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar/internal/wait"
	"github.com/redis/go-redis/v9"
)

// redis70ClientFields are the fields of a CLIENT LIST / CLIENT INFO line of
// Redis 7.0, in its order (no lib-name or lib-ver: those came in 7.2).
var redis70ClientFields = []string{"id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "ssub",
	"multi", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll", "omem", "tot-mem", "events", "cmd",
	"user", "redir", "resp"}

// clientLine returns the line of a CLIENT LIST / CLIENT INFO bulk reply
// whose fields include want (e.g. "addr=127.0.0.1:5000"), failing the test
// when its fields are not Redis 7.0's, in its order.
func clientLine(t *testing.T, reply, want string) string {
	t.Helper()
	body := reply[strings.Index(reply, "\r\n")+2 : len(reply)-2]
	body = strings.TrimPrefix(body, "txt:") // RESP3's verbatim string
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		var names []string
		found := false
		for _, f := range strings.Fields(line) {
			k, _, _ := strings.Cut(f, "=")
			names = append(names, k)
			found = found || f == want
		}
		if !found {
			continue
		}
		if strings.Join(names, " ") != strings.Join(redis70ClientFields, " ") {
			t.Fatalf("fields %v, want Redis 7.0's %v", names, redis70ClientFields)
		}
		return line
	}
	t.Fatalf("no client line with %s in %q", want, reply)
	return ""
}

// qbufFields is the "qbuf=N qbuf-free=M" part of a client line.
var qbufFields = regexp.MustCompile(`qbuf=\d+ qbuf-free=\d+`)

// CLIENT INFO and CLIENT LIST have Redis 7.0's fields, and qbuf counts the
// request being run, as Redis's query buffer still holds it (with the room
// left in a 20474-byte buffer as qbuf-free); a client that has sent
// nothing has an empty buffer.
func TestClientListQueryBuffer(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	self := "addr=" + r.c.LocalAddr().String()

	for _, tc := range []struct {
		req  string
		want string
	}{
		{"*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n", "qbuf=26 qbuf-free=20448"},
		{"*2\r\n$6\r\nCLIENT\r\n$4\r\nLIST\r\n", "qbuf=26 qbuf-free=20448"},
		{"CLIENT INFO\r\n", "qbuf=13 qbuf-free=20461"},
	} {
		r.send([]byte(tc.req))
		if got := qbufFields.FindString(clientLine(t, r.read(), self)); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.req, got, tc.want)
		}
	}
	// Commands sent together are read together: all of them are in the
	// buffer while CLIENT INFO runs.
	r.send([]byte("PING\r\n*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n*1\r\n$4\r\nPING\r\n"))
	r.read()
	if got := qbufFields.FindString(clientLine(t, r.read(), self)); got != "qbuf=46 qbuf-free=20428" {
		t.Errorf("pipelined CLIENT INFO: %s, want qbuf=46 qbuf-free=20428", got)
	}
	r.read()

	quiet := s.raw() // connected, nothing sent
	quietAddr := "addr=" + quiet.c.LocalAddr().String()
	var list string
	wait.For(t, 20*time.Second, "the quiet connection in CLIENT LIST", func() bool {
		list = r.do("CLIENT", "LIST")
		return strings.Contains(list, quietAddr+" ")
	})
	line := clientLine(t, list, quietAddr)
	if got := qbufFields.FindString(line); got != "qbuf=0 qbuf-free=4" || !strings.Contains(line, " cmd=NULL ") {
		t.Errorf("a client that sent nothing: %s", line)
	}

	r.do("HELLO", "3")
	line = clientLine(t, r.do("CLIENT", "INFO"), self)
	if got := qbufFields.FindString(line); got != "qbuf=26 qbuf-free=20448" || !strings.HasSuffix(line, " resp=3") {
		t.Errorf("CLIENT INFO in RESP3: %s", line)
	}
}

// Redis 7.0 has no CLIENT SETINFO (it came in 7.2), and Cellar says it is
// 7.0: go-redis, which sends it on every new connection, takes the error
// and goes on.
func TestClientSetInfoIsRedis70s(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.expect(errr("ERR unknown subcommand 'SETINFO'. Try CLIENT HELP."), "CLIENT", "SETINFO", "LIB-NAME", "x")
	r.expect(errr("ERR unknown subcommand 'setinfo'. Try CLIENT HELP."), "client", "setinfo", "lib-ver", "1")

	c := s.client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("go-redis SET: %v", err)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("go-redis GET: %q %v", v, err)
	}
	info, err := c.ClientInfo(ctx).Result()
	if err != nil {
		t.Fatalf("go-redis CLIENT INFO: %v", err)
	}
	if info.LibName != "" || info.LibVer != "" || info.Resp != 3 {
		t.Fatalf("go-redis CLIENT INFO: %+v, want no library and RESP3", info)
	}
	if _, err := c.Get(ctx, "missing").Result(); err != redis.Nil {
		t.Fatalf("go-redis GET missing: %v", err)
	}
}
