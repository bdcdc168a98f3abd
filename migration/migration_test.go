package migration

import (
	"bufio"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// target accepts connections and, for each line of answers it is given,
// reads one command (a RESP array of bulk strings) and writes that line.
// Each connection reports the command names it read on names.
type target struct {
	ln    net.Listener
	names chan string // "conn:<n> <NAME>"
}

func startTarget(t *testing.T, answer func(name string) string) *target {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	tg := &target{ln: ln, names: make(chan string, 100)}
	go func() {
		for n := 1; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(n int) {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					args, err := readCommand(r)
					if err != nil {
						return
					}
					tg.names <- strings.Repeat("+", n-1) + args[0]
					c.Write([]byte(answer(args[0])))
				}
			}(n)
		}
	}()
	return tg
}

// readCommand reads "*N\r\n" then N "$len\r\nbytes\r\n".
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	var n int
	for _, ch := range strings.TrimSpace(line[1:]) {
		n = n*10 + int(ch-'0')
	}
	args := make([]string, n)
	for i := range args {
		if _, err := r.ReadString('\n'); err != nil {
			return nil, err
		}
		v, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		args[i] = strings.TrimSuffix(v, "\r\n")
	}
	return args, nil
}

func (tg *target) read(t *testing.T, n int) string {
	var got []string
	for range n {
		select {
		case s := <-tg.names:
			got = append(got, s)
		case <-time.After(10 * time.Second):
			t.Fatalf("the target got %v, then nothing", got)
		}
	}
	return strings.Join(got, " ")
}

const restore = "*4\r\n$7\r\nRESTORE\r\n$1\r\nk\r\n$1\r\n0\r\n$1\r\nx\r\n"

// The connection is kept: a second Run in the same database sends no
// SELECT, one in another does; an error answered makes the next Run
// SELECT again, as Redis forgets the database then.
func TestSocketsCacheAndSelect(t *testing.T) {
	s := NewSockets()
	defer s.Close()
	var fail atomic.Bool
	tg := startTarget(t, func(name string) string {
		if name == "RESTORE" && fail.Load() {
			return "-BUSYKEY Target key name already exists.\r\n"
		}
		return "+OK\r\n"
	})
	req := Request{Name: "t", Addr: tg.ln.Addr().String(), Timeout: 10 * time.Second, DB: 3, Restores: []byte(restore), Keys: 1}
	check := func(want Result, names string) {
		t.Helper()
		got := s.Run(req)
		if len(got.Acked) != len(want.Acked) || (len(got.Acked) > 0 && got.Acked[0] != want.Acked[0]) ||
			got.TargetError != want.TargetError || got.Failure != want.Failure {
			t.Fatalf("Run: %+v, want %+v", got, want)
		}
		if n := tg.read(t, strings.Count(names, " ")+1); n != names {
			t.Fatalf("the target got %q, want %q", n, names)
		}
	}
	ok := Result{Acked: []bool{true}}
	check(ok, "SELECT RESTORE")
	check(ok, "RESTORE")
	req.DB = 4
	check(ok, "SELECT RESTORE")
	fail.Store(true)
	check(Result{Acked: []bool{false}, TargetError: "BUSYKEY Target key name already exists."}, "RESTORE")
	fail.Store(false)
	check(ok, "SELECT RESTORE")
}

// A cached connection the target closed is found broken when nothing was
// acknowledged: Run tries once more on a new connection.
func TestSocketsRetryBrokenConnection(t *testing.T) {
	s := NewSockets()
	defer s.Close()
	tg := startTarget(t, func(string) string { return "+OK\r\n" })
	req := Request{Name: "t", Addr: tg.ln.Addr().String(), Timeout: 10 * time.Second, DB: 0, Restores: []byte(restore), Keys: 1}
	if got := s.Run(req); got.Failure != None || len(got.Acked) != 1 || !got.Acked[0] {
		t.Fatalf("first Run: %+v", got)
	}
	tg.read(t, 2)
	s.mu.Lock()
	s.m["t"].conn.Close() // as if it had broken
	s.mu.Unlock()
	if got := s.Run(req); got.Failure != None || len(got.Acked) != 1 || !got.Acked[0] {
		t.Fatalf("Run over a broken connection: %+v", got)
	}
	if got := tg.read(t, 2); got != "+SELECT +RESTORE" {
		t.Fatalf("the target got %q on its second connection, want SELECT RESTORE", got)
	}
}

// Reply lines as Redis's syncReadLine reads them.
func TestReadLine(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{"+OK\r\n", "+OK", false},
		{"-ERR x\r\n", "-ERR x", false},
		{"\r\n", "", false}, // one byte read: no error, and no error reply either
		{"\n", "", true},    // nothing read
		{"+OK", "", true},   // closed before the end
		{strings.Repeat("e", 2000) + "\r\n", strings.Repeat("e", maxLine), false},
	} {
		a, b := net.Pipe()
		go func() { b.Write([]byte(tc.in)); b.Close() }()
		so := &socket{conn: a, r: bufio.NewReader(a)}
		got, err := so.readLine(10 * time.Second)
		a.Close()
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%.20q: %.20q, %v; want %.20q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// An address that cannot be connected to fails the connect; a refused
// connection is a write failure, tried twice.
func TestConnectFailures(t *testing.T) {
	s := NewSockets()
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		addr string
		want Failure
	}{
		{"127.0.0.1:-1", Connect},
		{"256.1.1.1:1", Connect},
		{closed, Write},
	} {
		if got := s.Run(Request{Name: tc.addr, Addr: tc.addr, Timeout: 10 * time.Second, Keys: 1}); got.Failure != tc.want {
			t.Errorf("%s: failure %d, want %d", tc.addr, got.Failure, tc.want)
		}
	}
}
