package actor

import (
	"strconv"
	"time"
)

// MONITOR: every command any client runs (but administrative ones and
// those flagged skip_monitor, as in Redis) is sent to each monitoring
// client as a status line, "+<unix time> [<db> <addr>] "cmd" "arg" ...",
// through the same push path as Pub/Sub messages (Actor.push). So a
// monitor's unread output is charged to its client memory and bounded like
// any client's: past output_buffer.hard_limit it is disconnected at once,
// above the soft limit the loop stops reading it and disconnects it after
// output_buffer.soft_seconds, and maxmemory_clients may evict it.
// Commands called by a script show "lua" as their address.

// MONITOR
func cmdMonitor(c *Ctx) error {
	s := c.s
	if s.monitor {
		return nil // Redis ignores a second MONITOR: no reply
	}
	s.monitor = true
	c.a.monitors = append(c.a.monitors, s)
	c.w.OK()
	return nil
}

// stopMonitor takes s out of the monitors (RESET, disconnect).
func (a *Actor) stopMonitor(s *session) {
	if !s.monitor {
		return
	}
	s.monitor = false
	for i, m := range a.monitors {
		if m == s {
			a.monitors = append(a.monitors[:i], a.monitors[i+1:]...)
			break
		}
	}
}

// feedMonitors sends a command that ran to every monitor, as Redis does
// after the command (so SELECT shows the database it selected, and EXEC
// comes after the commands it ran). The caller checked that there are
// monitors.
func (a *Actor) feedMonitors(s *session, cmd *Command, args [][]byte) {
	if cmd.Is(FlagAdmin) {
		return
	}
	now := time.Now()
	b := make([]byte, 0, 64)
	b = append(b, '+')
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, '.')
	us := now.Nanosecond() / 1000
	for d := 100000; d > 1 && us < d; d /= 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(us), 10)
	b = append(b, " ["...)
	b = strconv.AppendInt(b, int64(s.db), 10)
	b = append(b, ' ')
	if a.inScript() {
		b = append(b, "lua"...)
	} else {
		b = append(b, s.addr...)
	}
	b = append(b, ']')
	for i, arg := range args {
		b = append(b, ' ')
		if redacted(cmd, args, i) {
			arg = []byte("(redacted)")
		}
		b = appendRepr(b, arg)
	}
	b = append(b, '\r', '\n')
	for _, m := range a.monitors {
		a.push(m, b, false)
	}
}

// feedScript shows a script (EVAL, FCALL and their kin: Command.script,
// flagged skip_monitor) before it runs, so that it comes before the
// commands it calls, as in Redis.
func (a *Actor) feedScript(s *session, cmd *Command, args [][]byte) {
	if cmd.script {
		a.feedMonitors(s, cmd, args)
	}
}

// inScript says whether the running command was called by a script: one
// of its callers runs a script (Command.script). This is the one question
// the core asks about scripts (MONITOR, SLOWLOG, client-side tracking,
// SORT); it reads the frames, never the scripting family's state. A
// top-level command has no callers, so it costs one comparison then.
func (a *Actor) inScript() bool {
	for d := a.depth - 2; d >= 0; d-- { // the running command's callers
		if caller := a.frames[d].ctx.cmd; caller != nil && caller.script {
			return true // (a frame entered without a command: housekeeping, tests)
		}
	}
	return false
}

// appendRepr appends b quoted as Redis's sdscatrepr quotes it.
func appendRepr(dst, b []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, c := range b {
		switch c {
		case '\\', '"':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\a':
			dst = append(dst, '\\', 'a')
		case '\b':
			dst = append(dst, '\\', 'b')
		default:
			if c >= 0x20 && c < 0x7f {
				dst = append(dst, c)
			} else {
				dst = append(dst, '\\', 'x', hex[c>>4], hex[c&15])
			}
		}
	}
	return append(dst, '"')
}
