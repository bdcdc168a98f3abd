package tests

import (
	"testing"
	"time"
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
