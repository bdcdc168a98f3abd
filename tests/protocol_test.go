package tests

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
)

// A pipeline of 10 000 commands in one write gets 10 000 replies, in order.
func TestPipeline10000(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	var req bytes.Buffer
	for i := 0; i < 5000; i++ {
		req.Write(encode("SET", fmt.Sprint("k", i), fmt.Sprint("v", i)))
		req.Write(encode("GET", fmt.Sprint("k", i)))
	}
	go r.c.Write(req.Bytes()) // the replies must be read while writing
	for i := 0; i < 5000; i++ {
		if got := r.read(); got != "+OK\r\n" {
			t.Fatalf("reply %d to SET: %q", 2*i, got)
		}
		if got, want := r.read(), bulk(fmt.Sprint("v", i)); got != want {
			t.Fatalf("reply %d to GET: %q, want %q", 2*i+1, got, want)
		}
	}
	r.expect(integer(5000), "DBSIZE")
}

// Commands split at every byte (each byte its own write) parse as if whole,
// multibulk and inline alike.
func TestSplitAtEveryByte(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	stream := string(encode("SET", "key", "va\r\nl")) + "PING\r\n" + `ECHO "x y"` + "\n" +
		string(encode("GET", "key")) + "*0\r\n" + string(encode("ECHO", ""))
	want := "+OK\r\n+PONG\r\n" + bulk("x y") + bulk("va\r\nl") + bulk("")
	for cut := 1; cut < len(stream); cut++ {
		r := s.raw()
		r.send([]byte(stream[:cut]))
		r.send([]byte(stream[cut:]))
		var got strings.Builder
		for i := 0; i < 5; i++ {
			got.WriteString(r.read())
		}
		if got.String() != want {
			t.Fatalf("cut at %d: %q, want %q", cut, got.String(), want)
		}
		r.c.Close()
	}
	r := s.raw()
	for i := 0; i < len(stream); i++ {
		r.send([]byte{stream[i]})
	}
	var got strings.Builder
	for i := 0; i < 5; i++ {
		got.WriteString(r.read())
	}
	if got.String() != want {
		t.Fatalf("byte by byte: %q, want %q", got.String(), want)
	}
}

// Malformed requests get Redis's protocol error and the connection is
// closed after it; replies owed to earlier commands come first.
func TestMalformedInput(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ping := string(encode("PING"))
	for in, want := range map[string]string{
		"*x\r\n":                        "-ERR Protocol error: invalid multibulk length\r\n",
		"*1\r\n$-1\r\n":                 "-ERR Protocol error: invalid bulk length\r\n",
		"*1\r\n$abc\r\n":                "-ERR Protocol error: invalid bulk length\r\n",
		"*1\r\n$4\nPING\r\n":            "-ERR Protocol error: invalid bulk length\r\n",
		"*2\r\n$4\r\nECHO\r\n:1\r\n":    "-ERR Protocol error: expected '$', got ':'\r\n",
		"PING \"unbalanced\r\n":         "-ERR Protocol error: unbalanced quotes in request\r\n",
		ping + "*1\r\n$99999999999\r\n": "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n",
	} {
		r := s.raw()
		r.send([]byte(in))
		var got strings.Builder
		for got.Len() < len(want) {
			got.WriteString(r.read())
		}
		if got.String() != want {
			t.Errorf("%q: got %q, want %q", in, got.String(), want)
			continue
		}
		r.expectClosed()
	}
	// The server is still up and serving others.
	s.raw().expect("+PONG\r\n", "PING")
}

// A bulk over proto-max-bulk-len is refused like a malformed length; a query
// buffer over its limit closes the connection (Redis sends no reply then).
func TestRequestLimits(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) {
		c.ProtoMaxBulkLen = 1 << 20
		c.ClientQueryBufferLimit = 2 << 20
	})
	r := s.raw()
	r.send([]byte("*2\r\n$3\r\nSET\r\n$1048577\r\n"))
	if got := r.read(); got != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Fatalf("oversized bulk: %q", got)
	}
	r.expectClosed()

	// Exactly the limit is fine.
	r = s.raw()
	r.expect("+OK\r\n", "SET", "k", strings.Repeat("x", 1<<20))

	// A huge inline line without newline.
	r = s.raw()
	r.send([]byte(strings.Repeat("x", 70<<10)))
	if got := r.read(); got != "-ERR Protocol error: too big inline request\r\n" {
		t.Fatalf("huge inline: %q", got)
	}
	r.expectClosed()

	// Many complete-looking but unfinished arguments pile up past the limit.
	r = s.raw()
	var big bytes.Buffer
	big.WriteString("*100000\r\n")
	for big.Len() < (2<<20)+(64<<10) {
		big.Write([]byte("$1000\r\n" + strings.Repeat("a", 1000) + "\r\n"))
	}
	r.send(big.Bytes())
	r.expectClosed()
	waitFor(t, 10*time.Second, "the limit to be logged", func() bool {
		return strings.Contains(s.logBuf.String(), "max query buffer length")
	})
	s.raw().expect("+PONG\r\n", "PING")
}

// A command half sent when the client disconnects leaves no trace.
func TestHalfSentCommandLeavesNoTrace(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.send([]byte("*3\r\n$3\r\nSET\r\n$4\r\nhalf\r\n$10\r\n12345"))
	r.c.Close()
	r = s.raw()
	r.expect(":0\r\n", "EXISTS", "half")
	waitFor(t, 5*time.Second, "the closed connection to be gone", func() bool {
		return strings.Contains(r.do("CLIENT", "LIST"), "id=") && strings.Count(r.do("CLIENT", "LIST"), "id=") == 1
	})
	r.expect(":0\r\n", "EXISTS", "half")
}

// Inline commands work (telnet, redis-cli pipes), including quoting.
func TestInlineCommands(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.send([]byte("SET greeting \"hello world\"\r\nGET greeting\r\nset bin \"a\\x00b\"\r\nstrlen bin\r\n\r\n"))
	for _, want := range []string{"+OK\r\n", bulk("hello world"), "+OK\r\n", ":3\r\n"} {
		if got := r.read(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

// Exact error texts for the common error classes.
func TestErrorReplies(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.expect("-ERR unknown command 'nosuch', with args beginning with: 'a' 'b' \r\n", "nosuch", "a", "b")
	r.expect("-ERR unknown command 'nosuch', with args beginning with: \r\n", "nosuch")
	r.expect("-ERR wrong number of arguments for 'get' command\r\n", "GET")
	r.expect("-ERR wrong number of arguments for 'client|setname' command\r\n", "CLIENT", "SETNAME")
	r.expect("-ERR unknown subcommand 'nope'. Try CLIENT HELP.\r\n", "CLIENT", "nope")
	r.expect("+OK\r\n", "SET", "s", "abc")
	r.expect("-ERR value is not an integer or out of range\r\n", "INCR", "s")
	r.expect("-ERR syntax error\r\n", "SET", "s", "v", "NX", "XX")
	r.expect("+OK\r\n", "SET", "max", "9223372036854775807")
	r.expect("-ERR increment or decrement would overflow\r\n", "INCR", "max")
	r.expect("-ERR invalid expire time in 'set' command\r\n", "SET", "s", "v", "EX", "0")
	// Arguments longer than 128 bytes are cut like Redis's %.128s.
	long := strings.Repeat("a", 200)
	r.expect("-ERR unknown command '"+long[:128]+"', with args beginning with: '"+long[:128]+"' \r\n", long, long, "x")
}

// RESP3 after HELLO 3: maps, nulls and doubles in their RESP3 forms.
func TestResp3(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	hello := r.do("HELLO", "3")
	if !strings.HasPrefix(hello, "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:") ||
		!strings.HasSuffix(hello, "$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n") {
		t.Fatalf("HELLO 3: %q", hello)
	}
	r.expect("_\r\n", "GET", "missing")
	r.expect("%1\r\n$4\r\nsave\r\n$0\r\n\r\n", "CONFIG", "GET", "save")
	if got := r.do("HELLO", "2", "SETNAME", "x"); !strings.HasPrefix(got, "*14\r\n$6\r\nserver\r\n") {
		t.Fatalf("HELLO 2: %q", got)
	}
	r.expect("$-1\r\n", "GET", "missing")
	r.expect("$1\r\nx\r\n", "CLIENT", "GETNAME")
	r.expect("-NOPROTO unsupported protocol version\r\n", "HELLO", "4")
}

// Replies to commands pipelined before a blocking command leave at once;
// commands after it wait for its reply, as with Redis.
func TestPipelineAroundBlockingCommand(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.send(append(append(encode("SET", "a", "1"), encode("BLPOP", "q", "0")...), encode("GET", "a")...))
	if got := r.read(); got != "+OK\r\n" {
		t.Fatalf("reply before the blocked one: %q", got)
	}
	waitFor(t, 5*time.Second, "the client to block", func() bool {
		return strings.Contains(s.raw().do("INFO", "clients"), "blocked_clients:1\r\n")
	})
	s.raw().expect(":1\r\n", "RPUSH", "q", "x")
	if got, want := r.read(), "*2\r\n$1\r\nq\r\n$1\r\nx\r\n"; got != want {
		t.Fatalf("BLPOP: %q, want %q", got, want)
	}
	if got := r.read(); got != bulk("1") {
		t.Fatalf("GET after BLPOP: %q", got)
	}

	// A blocking command that arrives in two reads, the second with more
	// commands behind it: those are parsed once it has its reply, without
	// waiting for more bytes.
	blpop := encode("BLPOP", "q", "0")
	r.send(append(encode("PING"), blpop[:len(blpop)-2]...))
	if got := r.read(); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}
	r.send(append(blpop[len(blpop)-2:], encode("PING")...))
	waitFor(t, 5*time.Second, "the client to block", func() bool {
		return strings.Contains(s.raw().do("INFO", "clients"), "blocked_clients:1\r\n")
	})
	s.raw().expect(":1\r\n", "RPUSH", "q", "y")
	if got, want := r.read(), "*2\r\n$1\r\nq\r\n$1\r\ny\r\n"; got != want {
		t.Fatalf("BLPOP: %q, want %q", got, want)
	}
	if got := r.read(); got != "+PONG\r\n" {
		t.Fatalf("PING after the split BLPOP: %q", got)
	}
}
