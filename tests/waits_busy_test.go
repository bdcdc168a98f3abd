package tests

import (
	"strings"
	"testing"
	"time"

	cellar "github.com/cellar-db/cellar"
)

const (
	busyEvalReply     = "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
	busyFunctionReply = "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n"
)

// A command another client sends while a script runs, before the script
// is busy (past busy-reply-threshold), is answered -BUSY once it is, as
// Redis answers it (it reads it only then): it does not wait for the
// script's end. Otherwise that client, waiting for its reply, could never
// send the SCRIPT KILL that ends the script. After the kill the script's
// client gets Redis's error and then the reply to what it pipelined; a
// pcall in the script does not catch the kill.
func TestScriptBusyAnswersCommandsSentBeforeBusy(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	for _, tc := range []struct {
		name, script, killed string
	}{
		{"loop", "while 1 do redis.call('ping') end",
			"-ERR Script killed by user with SCRIPT KILL... script: b50655b6634f055327ef8affd1e1eecdf71f08ab, on @user_script:1.\r\n"},
		{"pcall", "local f = function() while 1 do redis.call('ping') end end while 1 do pcall(f) end",
			"-ERR Script killed by user with SCRIPT KILL... script: 7c4647a0ff0df8a94e199764ea04d4f93a1c64b8, on @user_script:1.\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admin := dialRaw(t, s.addr)
			admin.expect(status("OK"), "CONFIG", "SET", "busy-reply-threshold", "1000")
			runner, other := dialRaw(t, s.addr), dialRaw(t, s.addr)
			runner.send(append(encode("EVAL", tc.script, "0"), encode("PING")...))
			waitFor(t, 10*time.Second, "the script to start", func() bool { return s.srv.Scripts().Conn() != 0 })
			// Sent while the script runs, most likely before it is busy.
			other.send(encode("GET", "k"))
			if got := other.read(); got != busyEvalReply {
				t.Fatalf("GET sent while the script ran: got %q, want %q", got, busyEvalReply)
			}
			other.expect(status("OK"), "SCRIPT", "KILL")
			if got := runner.read(); got != tc.killed {
				t.Fatalf("the killed script's reply: got %q, want %q", got, tc.killed)
			}
			runner.expect(status("PONG"), "PING")
			other.expect("$-1\r\n", "GET", "k")
		})
	}
}

// The same for a function: FUNCTION KILL, from a client whose earlier
// command was sent before the function was busy.
func TestFunctionBusyAnswersCommandsSentBeforeBusy(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	admin := s.raw()
	admin.expect(status("OK"), "CONFIG", "SET", "busy-reply-threshold", "1000")
	runner, other := s.raw(), s.raw()
	runner.send(append(append(
		encode("FUNCTION", "LOAD", "REPLACE", "#!lua name=test\nredis.register_function('test', function() while 1 do redis.call('ping') end end)"),
		encode("FCALL", "test", "0")...), encode("PING")...))
	waitFor(t, 10*time.Second, "the function to start", func() bool { return s.srv.Scripts().Conn() != 0 })
	other.send(encode("PING"))
	if got := other.read(); got != busyFunctionReply {
		t.Fatalf("PING sent while the function ran: got %q, want %q", got, busyFunctionReply)
	}
	other.expect(status("OK"), "FUNCTION", "KILL")
	for _, want := range []string{
		bulk("test"),
		"-ERR Script killed by user with SCRIPT KILL... script: test, on @user_function:2.\r\n",
		status("PONG"),
	} {
		if got := runner.read(); got != want {
			t.Fatalf("the function's client: got %q, want %q", got, want)
		}
	}
	other.expect(status("PONG"), "PING")
}

// MULTI, queued commands and EXEC sent while a script is busy, as Redis
// 7.0 answers them (its multi.tcl "script timeout" cases): MULTI runs
// (+OK); a command refused -BUSY inside it fails the transaction, so the
// EXEC after the kill answers EXECABORT ... previous errors; EXEC itself
// refused discards the transaction (EXECABORT ... because of: BUSY ...).
// Nothing of such a transaction runs.
func TestMultiWhileScriptBusy(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	admin := s.raw()
	admin.expect(status("OK"), "CONFIG", "SET", "busy-reply-threshold", "10")
	admin.expect(status("OK"), "SET", "xx", "1")
	busyScript := func() *rawConn {
		r := dialRaw(t, s.addr)
		r.send(encode("EVAL", "while true do end", "0"))
		waitFor(t, 10*time.Second, "the script to be busy", func() bool { busy, _ := s.srv.Scripts().Busy(); return busy })
		return r
	}
	const killed = "-ERR Script killed by user with SCRIPT KILL... script: 694a5fe1ddb97a4c6a1bf299d9537c7d3d0f84e7, on @user_script:1.\r\n"
	kill := func(r *rawConn) {
		t.Helper()
		admin.expect(status("OK"), "SCRIPT", "KILL")
		if got := r.read(); got != killed {
			t.Fatalf("killed script: got %q, want %q", got, killed)
		}
	}
	const execAbortBusy = "-EXECABORT Transaction discarded because of: BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"

	// MULTI while busy; INCR refused; after the kill INCR queues, EXEC aborts.
	r := busyScript()
	c := s.raw()
	c.expect(status("OK"), "MULTI")
	c.expect(busyEvalReply, "INCR", "xx")
	kill(r)
	c.expect(status("QUEUED"), "INCR", "xx")
	c.expect(errr("EXECABORT Transaction discarded because of previous errors."), "EXEC")
	c.expect(bulk("asdf"), "PING", "asdf")

	// MULTI before; INCR and EXEC while busy.
	c.expect(status("OK"), "MULTI")
	c.expect(status("QUEUED"), "INCR", "xx")
	r = busyScript()
	c.expect(busyEvalReply, "INCR", "xx")
	c.expect(execAbortBusy, "EXEC")
	kill(r)
	c.expect(bulk("asdf"), "PING", "asdf")

	// Just EXEC while busy.
	c.expect(status("OK"), "MULTI")
	c.expect(status("QUEUED"), "INCR", "xx")
	r = busyScript()
	c.expect(execAbortBusy, "EXEC")
	kill(r)
	c.expect(bulk("asdf"), "PING", "asdf")
	admin.expect(bulk("1"), "GET", "xx")
}

// SHUTDOWN NOSAVE while a script that wrote is busy (SCRIPT KILL answers
// UNKILLABLE): the server exits, and the script's client, like Redis's,
// gets no reply before its connection closes.
func TestShutdownNoSaveUnkillableScript(t *testing.T) {
	t.Parallel()
	p := runCellarEnv(t, []string{"CELLAR_LUA__BUSY_REPLY_THRESHOLD=50ms"}, true, "--dir", t.TempDir())
	runner, other := dialRaw(t, p.addr), dialRaw(t, p.addr)
	runner.send(append(encode("EVAL", "redis.call('set', KEYS[1], 'y') while true do end", "1", "x"), encode("PING")...))
	waitBusy(t, p.addr)
	other.expect(errr("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."), "SCRIPT", "KILL")
	other.expect(busyEvalReply, "PING")
	other.send(encode("SHUTDOWN", "NOSAVE"))
	runner.expectClosed()
	if code := p.exitCode(); code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.stderr.String())
	}
}

// waitBusy waits until a fresh connection's PING is answered -BUSY.
func waitBusy(t *testing.T, addr string) {
	t.Helper()
	waitFor(t, 20*time.Second, "the script to be busy", func() bool {
		c, err := dialAddr(addr, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write(encode("PING"))
		buf := make([]byte, 128)
		n, _ := c.Read(buf)
		return string(buf[:n]) == busyEvalReply
	})
}

// WATCH, UNWATCH and DISCARD while a script is busy run at once, as in
// Redis (allow_busy), instead of waiting for the script's end: WATCH
// answers +OK (inside MULTI its error), UNWATCH +OK (inside MULTI it is
// queued), DISCARD +OK inside MULTI and its error outside. What they did
// holds after the script: a key watched meanwhile fails the EXEC once
// another client writes it; an UNWATCH queued meanwhile runs in EXEC. The
// same test runs against redis-server with TEST_SERVER_ADDR.
func TestWatchWhileScriptBusy(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	admin := s.raw()
	admin.expect(status("OK"), "CONFIG", "SET", "busy-reply-threshold", "10")
	const killed = "-ERR Script killed by user with SCRIPT KILL... script: 694a5fe1ddb97a4c6a1bf299d9537c7d3d0f84e7, on @user_script:1.\r\n"
	busy := func() *rawConn {
		r := s.raw()
		r.send(encode("EVAL", "while true do end", "0"))
		waitBusy(t, s.addr)
		return r
	}
	kill := func(r *rawConn) {
		t.Helper()
		admin.expect(status("OK"), "SCRIPT", "KILL")
		if got := r.read(); got != killed {
			t.Fatalf("killed script: got %q, want %q", got, killed)
		}
	}
	c := s.raw()
	r := busy()
	c.expect(status("OK"), "WATCH", "x")
	c.expect(status("OK"), "UNWATCH")
	c.expect(errr("ERR DISCARD without MULTI"), "DISCARD")
	c.expect(errr("ERR wrong number of arguments for 'watch' command"), "WATCH")
	c.expect(status("OK"), "MULTI")
	c.expect(errr("ERR WATCH inside MULTI is not allowed"), "WATCH", "x")
	c.expect(status("QUEUED"), "UNWATCH")
	c.expect(status("OK"), "DISCARD")
	c.expect(errr("ERR DISCARD without MULTI"), "DISCARD")
	c.expect(status("OK"), "WATCH", "x")
	kill(r)
	// x was watched while busy: a write to it fails the transaction.
	admin.expect(status("OK"), "SET", "x", "1")
	c.expect(status("OK"), "MULTI")
	c.expect(status("QUEUED"), "PING")
	c.expect(nullArray, "EXEC")

	// An UNWATCH queued while busy runs in EXEC.
	c.expect(status("OK"), "MULTI")
	r = busy()
	c.expect(status("QUEUED"), "UNWATCH")
	kill(r)
	c.expect(status("QUEUED"), "PING")
	c.expect(array(status("OK"), status("PONG")), "EXEC")

	// WATCH then UNWATCH while busy: the write no longer fails EXEC.
	r = busy()
	c.expect(status("OK"), "WATCH", "x")
	c.expect(status("OK"), "UNWATCH")
	kill(r)
	admin.expect(status("OK"), "SET", "x", "2")
	c.expect(status("OK"), "MULTI")
	c.expect(status("QUEUED"), "GET", "x")
	c.expect(array(bulk("2")), "EXEC")
}

// While a script is busy, EXEC's checks read what its queue holds, as
// Redis's processCommand reads the transaction's mstate flags: a queue
// with a write queued before min-replicas-to-write went unmet gets
// -EXECABORT ... NOREPLICAS rather than ... BUSY; a queue of reads, or one
// begun while busy, gets the BUSY reason.
func TestExecQueueChecksWhileScriptBusy(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	admin := s.raw()
	admin.expect(status("OK"), "CONFIG", "SET", "busy-reply-threshold", "10")
	const execBusy = "-EXECABORT Transaction discarded because of: BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
	writer, reader := s.raw(), s.raw()
	writer.expect(status("OK"), "MULTI")
	writer.expect(status("QUEUED"), "SET", "eq", "1")
	reader.expect(status("OK"), "MULTI")
	reader.expect(status("QUEUED"), "GET", "eq")
	admin.expect(status("OK"), "CONFIG", "SET", "min-replicas-to-write", "1")
	r := dialRaw(t, s.addr)
	r.send(encode("EVAL", "while true do end", "0"))
	waitBusy(t, s.addr)
	writer.expect("-EXECABORT Transaction discarded because of: NOREPLICAS Not enough good replicas to write.\r\n", "EXEC")
	reader.expect(execBusy, "EXEC")
	writer.expect(status("OK"), "MULTI")
	writer.expect(status("QUEUED"), "FUNCTION", "STATS")
	writer.expect(execBusy, "EXEC")
	admin.expect(status("OK"), "SCRIPT", "KILL")
	r.read()
	admin.expect(status("OK"), "CONFIG", "SET", "min-replicas-to-write", "0")
	writer.expect(bulk("asdf"), "PING", "asdf")
	admin.expect("$-1\r\n", "GET", "eq")
}

// A command that ran in the actor's round just before a script began gets
// its reply while the script runs, as Redis answers it before the script:
// it must not wait for the script's end (the client could never send the
// SCRIPT KILL that ends it). DEBUG SLEEP holds the actor so that the PING
// and the EVAL sent behind it most likely share a round, the PING first;
// on a machine too slow for that, the PING is answered -BUSY like any
// command the actor has not begun. What fails is no reply.
func TestScriptBusyReleasesTheRoundBeforeIt(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.EnableDebugCommand = "yes" })
	needCellar(t, s)
	admin := dialRaw(t, s.addr)
	admin.expect(status("OK"), "CONFIG", "SET", "busy-reply-threshold", "10")
	sleeper, c, runner := dialRaw(t, s.addr), dialRaw(t, s.addr), dialRaw(t, s.addr)
	sleeper.send(encode("DEBUG", "SLEEP", "1"))
	c.send(encode("PING"))
	runner.send(encode("EVAL", "while true do end", "0"))
	if got := c.read(); got != status("PONG") && got != busyEvalReply {
		t.Fatalf("PING sent before the script: got %q", got)
	}
	waitFor(t, time.Minute, "the script to be busy", func() bool { return c.do("PING") == busyEvalReply })
	admin.expect(status("OK"), "SCRIPT", "KILL")
	if got := runner.read(); !strings.HasPrefix(got, "-ERR Script killed by user with SCRIPT KILL...") {
		t.Fatalf("the killed script's reply: %q", got)
	}
	if got := sleeper.read(); got != status("OK") {
		t.Fatalf("DEBUG SLEEP: %q", got)
	}
}
