package tests

import (
	"bufio"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/cellar-db/cellar/proto"
)

// While a script is busy Redis 7.0's processCommand makes its other checks
// before it answers -BUSY, in its order: the command exists (and its
// subcommand), its arity, DEBUG or MODULE allowed, -NOAUTH, a NO_MULTI
// command inside MULTI, the ACL rules (-NOPERM, with an ACL LOG entry),
// -READONLY on a replica, a RESP2 subscriber's command outside the
// subscribe family, -MASTERDOWN; and only then -BUSY. A refusal inside
// MULTI fails the transaction; EXEC refused discards it. The allow_busy
// commands run: REPLCONF, FUNCTION STATS (which shows the running
// function), SHUTDOWN without NOSAVE (refused -BUSY, it does not shut the
// server down). Afterwards INFO errorstats and the commandstats counters
// (calls, rejected_calls, failed_calls) are what Redis counts. The same
// steps run against Cellar and a throw-away redis-server.

const limitedUser = "limited"

// busyChecksSteps runs the steps on the server at addr, with the script
// made busy by EVAL (or by FCALL of a function, fn), and returns the
// replies that differ from the pinned ones, and the counters afterwards.
func busyChecksSteps(t *testing.T, addr string, fn bool) (diffs []string, counters string) {
	t.Helper()
	admin := dialRaw(t, addr)
	admin.expect(status("OK"), "CONFIG", "SET", "busy-reply-threshold", "10")
	admin.expect(status("OK"), "ACL", "SETUSER", limitedUser, "on", ">pw", "+@all", "-get", "~k*", "&ch*")
	admin.expect(status("OK"), "ACL", "LOG", "RESET")
	admin.expect(status("OK"), "CONFIG", "RESETSTAT")
	c, tx, sub, lim, early := dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr)
	lim.expect(status("OK"), "AUTH", limitedUser, "pw")
	sub.expect(array(bulk("subscribe"), bulk("ch1"), integer(1)), "SUBSCRIBE", "ch1")
	early.expect(status("PONG"), "PING")
	admin.expect(status("OK"), "CONFIG", "SET", "requirepass", "secret")
	unauth := dialRaw(t, addr)
	runner := dialRaw(t, addr)
	runner.expect(status("OK"), "AUTH", "secret")
	busy := busyEvalReply
	if fn {
		runner.expect(bulk("spin"), "FUNCTION", "LOAD", "REPLACE", "#!lua name=spin\nredis.register_function('spin', function() while true do end end)")
		runner.send(encode("FCALL", "spin", "0", "extra"))
		busy = busyFunctionReply
	} else {
		runner.send(encode("EVAL", "while true do end", "0"))
	}
	waitFor(t, 20*time.Second, "the script to be busy", func() bool { return c.do("PING") == busy })

	expect := func(r *rawConn, want string, args ...string) {
		t.Helper()
		if got := r.do(args...); got != want {
			diffs = append(diffs, strings.Join(args, " ")+": got "+clip(got)+", want "+clip(want))
		}
	}
	// Unknown command and subcommand, arity, DEBUG and MODULE: before
	// -NOAUTH, as Redis checks them.
	for _, r := range []*rawConn{c, unauth} {
		expect(r, errr("ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' "), "NOSUCH", "a", "b")
		expect(r, errr("ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP."), "CLIENT", "NOSUCH")
		expect(r, errr("ERR wrong number of arguments for 'get' command"), "GET")
		expect(r, errr("ERR wrong number of arguments for 'client|kill' command"), "CLIENT", "KILL")
		expect(r, errr(`ERR DEBUG command not allowed. If the enable-debug-command option is set to "local", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.`), "DEBUG", "SLEEP", "0")
		expect(r, errr(`ERR MODULE command not allowed. If the enable-module-command option is set to "local", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.`), "MODULE", "LOAD", "x")
	}
	expect(unauth, errr("NOAUTH Authentication required."), "GET", "k")
	expect(unauth, errr("NOAUTH Authentication required."), "SHUTDOWN")
	expect(unauth, errr("EXECABORT Transaction discarded because of: NOAUTH Authentication required."), "EXEC")
	expect(early, busy, "GET", "k")
	expect(early, busy, "SUBSCRIBE", "x")
	expect(early, "-EXECABORT Transaction discarded because of: "+busy[1:], "EXEC")

	// SHUTDOWN while busy: refused without NOSAVE, and the server stays.
	expect(c, busy, "SHUTDOWN")
	expect(c, busy, "SHUTDOWN", "SAVE")
	expect(c, errr("ERR syntax error"), "SHUTDOWN", "NOSUCH")
	expect(c, errr("ERR No shutdown in progress."), "SHUTDOWN", "ABORT")

	// REPLCONF runs (allow_busy); ACK has no reply.
	expect(c, status("OK"), "REPLCONF", "listening-port", "1234")
	expect(c, status("OK"), "REPLCONF", "capa", "eof", "capa", "psync2")
	expect(c, errr("ERR syntax error"), "REPLCONF", "listening-port")
	expect(c, errr("ERR Unrecognized REPLCONF option: nosuch"), "REPLCONF", "nosuch", "x")
	expect(c, errr("ERR value is not an integer or out of range"), "REPLCONF", "listening-port", "x")
	c.send(encode("REPLCONF", "ack", "10"))
	expect(c, busy, "PING")

	// NO_MULTI inside MULTI (SHUTDOWN NOSAVE too: it does not stop the
	// script), then the transaction fails; another transaction with an
	// allow_busy command queued, and EXEC refused.
	expect(tx, status("OK"), "MULTI")
	expect(tx, errr("ERR MULTI calls can not be nested"), "MULTI")
	expect(tx, errr("ERR Command not allowed inside a transaction"), "SAVE")
	expect(tx, errr("ERR Command not allowed inside a transaction"), "SHUTDOWN", "NOSAVE")
	expect(tx, status("QUEUED"), "REPLCONF", "listening-port", "1")
	expect(tx, status("QUEUED"), "FUNCTION", "STATS")

	// ACL: a command, a key, a channel the user may not use; then -BUSY
	// for what it may.
	expect(lim, errr("NOPERM this user has no permissions to run the 'get' command"), "GET", "k1")
	expect(lim, errr("NOPERM this user has no permissions to access one of the keys used as arguments"), "SET", "x", "1")
	expect(lim, errr("NOPERM this user has no permissions to access one of the channels used as arguments"), "PUBLISH", "other", "m")
	expect(lim, busy, "SET", "k1", "1")

	// A RESP2 subscriber: the checks above come first, then its context's.
	expect(sub, errr("ERR wrong number of arguments for 'get' command"), "GET")
	expect(sub, errr("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"), "GET", "k")
	expect(sub, errr("ERR Can't execute 'function|stats': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"), "FUNCTION", "STATS")
	expect(sub, busy, "PING")
	expect(sub, busy, "SUBSCRIBE", "ch2")

	// FUNCTION STATS: the running function, or -BUSY during EVAL.
	if fn {
		if got := c.do("FUNCTION", "STATS"); !regexp.MustCompile("^" + busyStatsShape + "$").MatchString(got) {
			diffs = append(diffs, "FUNCTION STATS: got "+clip(got))
		}
	} else {
		expect(c, busy, "FUNCTION", "STATS")
	}

	if fn {
		admin.expect(status("OK"), "FUNCTION", "KILL")
	} else {
		admin.expect(status("OK"), "SCRIPT", "KILL")
	}
	runner.read()
	expect(tx, errr("EXECABORT Transaction discarded because of previous errors."), "EXEC")
	expect(c, status("PONG"), "PING")
	admin.expect(status("OK"), "AUTH", "secret")

	// The three ACL refusals are in ACL LOG, newest first.
	log, err := proto.ReadReply(bufio.NewReader(strings.NewReader(admin.do("ACL", "LOG"))))
	if err != nil {
		t.Fatal(err)
	}
	var objects []string
	for _, e := range log.Elems {
		for i := 0; i+1 < len(e.Elems); i += 2 {
			if f := string(e.Elems[i].Text); f == "reason" || f == "object" || f == "context" {
				objects = append(objects, string(e.Elems[i+1].Text))
			}
		}
	}
	if got, want := strings.Join(objects, " "), "channel toplevel other key toplevel x command toplevel get"; got != want {
		diffs = append(diffs, "ACL LOG: got "+got+", want "+want)
	}
	counters = busyCounters(admin)
	admin.expect(status("OK"), "CONFIG", "SET", "requirepass", "")
	return diffs, counters
}

// busyStatsShape is FUNCTION STATS's reply in RESP2 while spin runs.
var busyStatsShape = regexp.QuoteMeta("*4\r\n$14\r\nrunning_script\r\n*6\r\n$4\r\nname\r\n$4\r\nspin\r\n$7\r\ncommand\r\n*4\r\n$5\r\nFCALL\r\n$4\r\nspin\r\n$1\r\n0\r\n$5\r\nextra\r\n$11\r\nduration_ms\r\n") +
	`:\d+\r\n` + regexp.QuoteMeta("$7\r\nengines\r\n*2\r\n$3\r\nLUA\r\n*4\r\n$15\r\nlibraries_count\r\n:1\r\n$15\r\nfunctions_count\r\n:1\r\n")

// busyCounters is INFO errorstats and, of INFO commandstats, every
// command's calls, rejected_calls and failed_calls (not its times).
func busyCounters(r *rawConn) string {
	info := r.do("INFO", "errorstats")
	var out []string
	for _, l := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(l, "errorstat_") {
			out = append(out, l)
		}
	}
	stats := r.do("INFO", "commandstats")
	re := regexp.MustCompile(`^(cmdstat_[^:]+):calls=(\d+),.*rejected_calls=(\d+),failed_calls=(\d+)`)
	for _, l := range strings.Split(stats, "\r\n") {
		if m := re.FindStringSubmatch(l); m != nil && m[1] != "cmdstat_info" {
			out = append(out, m[1]+" calls="+m[2]+" rejected="+m[3]+" failed="+m[4])
		}
	}
	sort.Strings(out) // Redis's commandstats follow its hash table
	return strings.Join(out, "\n")
}

func TestBusyChecksInRedisOrder(t *testing.T) {
	t.Parallel()
	for _, fn := range []bool{false, true} {
		name := "eval"
		if fn {
			name = "function"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t)
			needCellar(t, s)
			red := redistest.StartTCP(t)
			cd, cc := busyChecksSteps(t, s.addr, fn)
			rd, rc := busyChecksSteps(t, red.Addr, fn)
			for _, d := range cd {
				t.Errorf("cellar: %s", d)
			}
			for _, d := range rd {
				t.Errorf("redis: %s", d)
			}
			if cc != rc {
				t.Errorf("counters differ:\ncellar:\n%s\nredis:\n%s", cc, rc)
			}
		})
	}
}

// A master short of min-replicas-to-write refuses a write -NOREPLICAS
// before -BUSY; so does a replica -READONLY.
func busyReplicaSteps(t *testing.T, addr string) []string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close() // nothing listens there: the link stays down
	admin := dialRaw(t, addr)
	admin.expect(status("OK"), "CONFIG", "SET", "busy-reply-threshold", "10")
	c, runner := dialRaw(t, addr), dialRaw(t, addr)
	busy := busyEvalReply
	var diffs []string
	expect := func(want string, args ...string) {
		t.Helper()
		if got := c.do(args...); got != want {
			diffs = append(diffs, strings.Join(args, " ")+": got "+clip(got)+", want "+clip(want))
		}
	}
	// A master without the replicas min-replicas-to-write asks for.
	admin.expect(status("OK"), "CONFIG", "SET", "min-replicas-to-write", "1")
	runner.send(encode("EVAL", "#!lua flags=no-writes\nwhile true do end", "0"))
	waitFor(t, 20*time.Second, "the script to be busy", func() bool { return c.do("PING") == busy })
	expect(errr("NOREPLICAS Not enough good replicas to write."), "SET", "k", "v")
	expect(errr("NOREPLICAS Not enough good replicas to write."), "EVAL", "#!lua\nreturn 1", "0")
	expect(busy, "GET", "k")
	admin.expect(status("OK"), "SCRIPT", "KILL")
	runner.read()
	admin.expect(status("OK"), "CONFIG", "SET", "min-replicas-to-write", "0")

	admin.expect(bulk("rw"), "FUNCTION", "LOAD", "REPLACE", "#!lua name=rw\nredis.register_function('w', function() return 1 end)\n"+
		"redis.register_function{function_name='r', callback=function() return 1 end, flags={'no-writes'}}")
	writeSha := admin.do("SCRIPT", "LOAD", "#!lua\nreturn 1")[5:45]
	readSha := admin.do("SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn 1")[5:45]
	plainSha := admin.do("SCRIPT", "LOAD", "return 1")[5:45]
	admin.expect(status("OK"), "REPLICAOF", "127.0.0.1", port)
	runner.send(encode("EVAL", "#!lua flags=no-writes,allow-stale\nwhile true do end", "0"))
	waitFor(t, 20*time.Second, "the script to be busy", func() bool { return c.do("PING") == busy })
	expect(errr("READONLY You can't write against a read only replica."), "SET", "k", "v")
	expect(errr("READONLY You can't write against a read only replica."), "EVAL", "#!lua\nreturn 1", "0")
	expect(busy, "EVAL", "#!lua flags=no-writes\nreturn 1", "0")
	// A function's declared flags decide, as a script's shebang does.
	expect(errr("READONLY You can't write against a read only replica."), "FCALL", "w", "0")
	expect(busy, "FCALL", "r", "0")
	// So do a cached script's (EVALSHA); one without a shebang is not a
	// write for these checks.
	expect(errr("READONLY You can't write against a read only replica."), "EVALSHA", writeSha, "0")
	expect(busy, "EVALSHA", readSha, "0")
	expect(busy, "EVALSHA", plainSha, "0")
	expect(busy, "GET", "k")
	admin.expect(status("OK"), "SCRIPT", "KILL")
	runner.read()
	admin.expect(status("OK"), "REPLICAOF", "NO", "ONE")
	return diffs
}

// busyStaleSteps: on a replica with replica-serve-stale-data no and its
// link down, a command not flagged stale is refused -MASTERDOWN, after
// the checks before it (-READONLY for a write) and before -BUSY. SCRIPT
// KILL is not flagged stale either: SHUTDOWN NOSAVE ends the script, and
// the server.
func busyStaleSteps(t *testing.T, addr string) []string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	admin := dialRaw(t, addr)
	admin.expect(status("OK"), "CONFIG", "SET", "busy-reply-threshold", "10")
	admin.expect(status("OK"), "REPLICAOF", "127.0.0.1", port)
	// Transactions queued while stale data is still served: one holds a
	// command not flagged stale (GET), one only stale ones (INFO).
	txGet, txInfo := dialRaw(t, addr), dialRaw(t, addr)
	txGet.expect(status("OK"), "MULTI")
	txGet.expect(status("QUEUED"), "GET", "k")
	txInfo.expect(status("OK"), "MULTI")
	txInfo.expect(status("QUEUED"), "INFO", "server")
	admin.expect(status("OK"), "CONFIG", "SET", "replica-serve-stale-data", "no")
	c, runner := dialRaw(t, addr), dialRaw(t, addr)
	busy := busyEvalReply
	runner.send(encode("EVAL", "#!lua flags=no-writes,allow-stale\nwhile true do end", "0"))
	// PING is not flagged stale: INFO is.
	waitFor(t, 20*time.Second, "the script to be busy", func() bool { return c.do("INFO", "server") == busy })
	var diffs []string
	expect := func(want string, args ...string) {
		t.Helper()
		if got := c.do(args...); got != want {
			diffs = append(diffs, strings.Join(args, " ")+": got "+clip(got)+", want "+clip(want))
		}
	}
	const masterDown = "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n"
	expect(errr("ERR wrong number of arguments for 'get' command"), "GET")
	expect(errr("READONLY You can't write against a read only replica."), "SET", "k", "v")
	expect(masterDown, "PING")
	expect(masterDown, "GET", "k")
	expect(masterDown, "SCRIPT", "KILL")
	expect(busy, "EVAL", "#!lua flags=no-writes,allow-stale\nreturn 1", "0")
	expect(masterDown, "EVAL", "#!lua flags=no-writes\nreturn 1", "0")
	// EXEC's check reads its queue: MASTERDOWN for the GET, BUSY after it.
	for _, tx := range []struct {
		c    *rawConn
		want string
	}{
		{txGet, "-EXECABORT Transaction discarded because of: MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n"},
		{txInfo, "-EXECABORT Transaction discarded because of: " + strings.TrimPrefix(busy, "-")},
	} {
		if got := tx.c.do("EXEC"); got != tx.want {
			diffs = append(diffs, "EXEC: got "+clip(got)+", want "+clip(tx.want))
		}
	}
	c.send(encode("SHUTDOWN", "NOSAVE"))
	runner.expectClosed()
	return diffs
}

func TestBusyChecksOnReplica(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	red := redistest.StartTCP(t)
	for _, c := range []struct{ name, addr string }{{"cellar", s.addr}, {"redis", red.Addr}} {
		for _, d := range busyReplicaSteps(t, c.addr) {
			t.Errorf("%s: %s", c.name, d)
		}
	}
}

func TestBusyChecksOnStaleReplica(t *testing.T) {
	t.Parallel()
	p := runCellarEnv(t, nil, true, "--dir", t.TempDir())
	red := redistest.StartTCP(t)
	for _, c := range []struct{ name, addr string }{{"cellar", p.addr}, {"redis", red.Addr}} {
		for _, d := range busyStaleSteps(t, c.addr) {
			t.Errorf("%s: %s", c.name, d)
		}
	}
}
