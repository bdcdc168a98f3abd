package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// CLIENT PAUSE WRITE and scripts, as Redis 7.0's getCommandFlags has them:
// a script or function flagged no-writes runs during the pause (EVAL,
// EVAL_RO, EVALSHA, FCALL, FCALL_RO, and inside MULTI); one that declares
// flags without no-writes is a write, even under EVAL_RO or FCALL_RO, and
// waits; one that declares none keeps its command's flags (EVAL, FCALL
// and EVALSHA are may_replicate and wait; EVAL_RO runs). Every held
// command gets its reply once the pause ends.
func TestClientPauseWriteScriptFlags(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	admin, reader := s.raw(), s.raw()
	admin.expect(bulk("lib"), "FUNCTION", "LOAD", "#!lua name=lib\n"+
		"redis.register_function{function_name='ro', callback=function() return 1 end, flags={'no-writes'}}\n"+
		"redis.register_function('rw', function() return 2 end)")
	roSha := strings.TrimSuffix(strings.TrimPrefix(admin.do("SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn 3"), "$40\r\n"), "\r\n")
	blocked := func(n int) {
		t.Helper()
		want := fmt.Sprintf("blocked_clients:%d\r\n", n)
		waitFor(t, 10*time.Second, want, func() bool { return strings.Contains(reader.do("INFO", "clients"), want) })
	}
	admin.expect(status("OK"), "CLIENT", "PAUSE", "100000", "WRITE")
	run := []struct {
		want string
		args []string
	}{
		{integer(1), []string{"EVAL", "#!lua flags=no-writes\nreturn 1", "0"}},
		{integer(1), []string{"EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"}},
		{integer(1), []string{"EVAL_RO", "return 1", "0"}},
		{integer(3), []string{"EVALSHA", roSha, "0"}},
		{integer(1), []string{"FCALL", "ro", "0"}},
		{integer(1), []string{"FCALL_RO", "ro", "0"}},
		{errr("ERR Function not found"), []string{"FCALL_RO", "nosuch", "0"}},
	}
	for _, c := range run {
		s.raw().expect(c.want, c.args...)
	}
	// MULTI of no-writes scripts and reads queues and runs.
	tx := s.raw()
	tx.expect(status("OK"), "MULTI")
	tx.expect(status("QUEUED"), "GET", "k")
	tx.expect(status("QUEUED"), "FCALL", "ro", "0")
	tx.expect(status("QUEUED"), "EVAL", "#!lua flags=no-writes\nreturn 1", "0")
	tx.expect(array("$-1\r\n", integer(1), integer(1)), "EXEC")

	held := []struct {
		want string
		args []string
	}{
		{integer(1), []string{"EVAL", "return 1", "0"}},
		{integer(1), []string{"EVAL", "#!lua\nreturn 1", "0"}},
		{errr("ERR Can not execute a script with write flag using *_ro command."), []string{"EVAL_RO", "#!lua\nreturn 1", "0"}},
		{integer(2), []string{"FCALL", "rw", "0"}},
		{errr("ERR Can not execute a script with write flag using *_ro command."), []string{"FCALL_RO", "rw", "0"}},
		{errr("ERR Function not found"), []string{"FCALL", "nosuch", "0"}},
		{integer(0), []string{"PUBLISH", "ch", "m"}},
	}
	conns := make([]*rawConn, len(held))
	for i, c := range held {
		conns[i] = s.raw()
		conns[i].send(encode(c.args...))
	}
	blocked(len(held))
	admin.expect(status("OK"), "CLIENT", "UNPAUSE")
	for i, c := range held {
		if got := conns[i].read(); got != c.want {
			t.Fatalf("%q after UNPAUSE: got %q, want %q", c.args, got, c.want)
		}
	}
	blocked(0)
}
