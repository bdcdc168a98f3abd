package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar/internal/redistest"
)

// AUTH, HELLO, RESET and QUIT while a script is busy (allow_busy in Redis
// 7.0): answered at once, with Redis's replies and errors, and what they
// did holds after the script. Before them Redis checks authentication: an
// unauthenticated client's other commands get -NOAUTH, not -BUSY. The
// same steps run against Cellar and a throw-away redis-server.

// helloReply is HELLO's reply for client id in protocol p.
func helloReply(p int, id string) string {
	fields := []string{bulk("server"), bulk("redis"), bulk("version"), bulk("7.0.15"),
		bulk("proto"), integer(int64(p)), bulk("id"), ":" + id + "\r\n", bulk("mode"), bulk("standalone"),
		bulk("role"), bulk("master"), bulk("modules"), "*0\r\n"}
	if p == 3 {
		return "%7\r\n" + strings.Join(fields, "")
	}
	return array(fields...)
}

// busyConnSteps runs the steps on the server at addr and returns the
// replies that differ from the pinned ones.
func busyConnSteps(t *testing.T, addr string) []string {
	t.Helper()
	admin := dialRaw(t, addr)
	admin.expect(status("OK"), "CONFIG", "SET", "busy-reply-threshold", "10")
	admin.expect(status("OK"), "ACL", "SETUSER", "bob", "on", ">pw", "+@all", "~*")
	c1, c3 := dialRaw(t, addr), dialRaw(t, addr)
	id1 := c1.clientID()
	runner := dialRaw(t, addr)
	// Each has had a reply: the server has them as connected before the
	// password is required.
	runner.expect(status("PONG"), "PING")
	c3.expect(status("PONG"), "PING")
	// Clients from now on must authenticate (the ones above need not).
	admin.expect(status("OK"), "CONFIG", "SET", "requirepass", "secret")
	c2 := dialRaw(t, addr)
	runner.send(encode("EVAL", "while true do end", "0"))
	waitFor(t, 20*time.Second, "the script to be busy", func() bool { return c1.do("PING") == busyEvalReply })
	var diffs []string
	expect := func(r *rawConn, want string, args ...string) {
		t.Helper()
		if got := r.do(args...); got != want {
			diffs = append(diffs, strings.Join(args, " ")+": got "+clip(got)+", want "+clip(want))
		}
	}
	const wrongPass = "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
	expect(c1, wrongPass, "AUTH", "pw")
	expect(c1, wrongPass, "AUTH", "bob", "nope")
	expect(c1, errr("ERR syntax error"), "AUTH", "a", "b", "c")
	expect(c1, errr("ERR wrong number of arguments for 'auth' command"), "AUTH")
	expect(c1, status("OK"), "AUTH", "bob", "pw")
	expect(c1, errr("NOPROTO unsupported protocol version"), "HELLO", "4")
	expect(c1, errr("ERR Protocol version is not an integer or out of range"), "HELLO", "x")
	expect(c1, errr("ERR Client names cannot contain spaces, newlines or special characters."), "HELLO", "2", "SETNAME", "a b")
	expect(c1, wrongPass, "HELLO", "2", "AUTH", "bob", "nope")
	expect(c1, errr("ERR Syntax error in HELLO option 'nope'"), "HELLO", "2", "nope")
	expect(c1, helloReply(2, id1), "HELLO")
	expect(c1, helloReply(3, id1), "HELLO", "3", "SETNAME", "n")
	expect(c1, busyEvalReply, "PING")

	// MULTI: AUTH and HELLO are queued, RESET ends it; QUIT closes.
	expect(c3, status("OK"), "MULTI")
	expect(c3, status("QUEUED"), "AUTH", "bob", "pw")
	expect(c3, status("QUEUED"), "HELLO")
	expect(c3, status("RESET"), "RESET")
	// RESET makes it the default user, unauthenticated: a password is
	// required now.
	expect(c3, errr("NOAUTH Authentication required."), "PING")
	expect(c3, status("OK"), "QUIT")
	c3.expectClosed()

	// A client that must authenticate.
	expect(c2, errr("NOAUTH Authentication required."), "PING")
	expect(c2, errr("NOAUTH Authentication required."), "SCRIPT", "KILL")
	expect(c2, errr("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"), "HELLO", "3")
	expect(c2, status("OK"), "AUTH", "secret")
	expect(c2, busyEvalReply, "PING")
	expect(c2, status("RESET"), "RESET") // unauthenticated again
	expect(c2, errr("NOAUTH Authentication required."), "PING")
	expect(c2, status("OK"), "AUTH", "secret")

	admin.expect(status("OK"), "SCRIPT", "KILL")
	runner.read()
	// What they did holds: c1 is bob, named n, in RESP3.
	expect(c1, bulk("bob"), "ACL", "WHOAMI")
	expect(c1, bulk("n"), "CLIENT", "GETNAME")
	expect(c1, "%0\r\n", "HGETALL", "nokey")
	expect(c2, status("PONG"), "PING")
	expect(c2, status("OK"), "CONFIG", "SET", "requirepass", "")
	return diffs
}

func TestConnCommandsWhileScriptBusy(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	red := redistest.StartTCP(t)
	for _, c := range []struct{ name, addr string }{{"cellar", s.addr}, {"redis", red.Addr}} {
		for _, d := range busyConnSteps(t, c.addr) {
			t.Errorf("%s: %s", c.name, d)
		}
	}
}
