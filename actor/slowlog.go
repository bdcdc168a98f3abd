package actor

import (
	"strconv"
	"time"
)

// The slow log, as Redis keeps it: the last slowlog-max-len commands whose
// execution took at least slowlog-log-slower-than microseconds (negative:
// off; 0: every command), newest first. Execution is the handler's time
// on the actor, not the wait for the disk or the network. An entry keeps
// at most 32 arguments (the last one then says how many more there were)
// and at most 128 bytes of each, so the log is bounded by its length.

const (
	slowlogMaxArgs  = 32
	slowlogMaxBytes = 128
)

type slowEntry struct {
	id     int64
	at     int64 // unix seconds
	micros int64
	args   [][]byte
	addr   string
	name   string
}

type slowlog struct {
	slowerThan int64 // microseconds; negative: off
	maxLen     int
	nextID     int64
	entries    []slowEntry // oldest first
}

// logSlow records cmd if it ran for at least the threshold. The caller
// has checked that the log is on (slowerThan >= 0).
func (a *Actor) logSlow(s *session, cmd *Command, args [][]byte, took time.Duration) {
	micros := took.Microseconds()
	if micros < a.slow.slowerThan || cmd.Is(FlagSkipSlowlog) {
		return
	}
	l := &a.slow
	e := slowEntry{id: l.nextID, at: time.Now().Unix(), micros: micros, addr: s.addr, name: s.name}
	if a.depth > 1 && a.inScript() {
		e.addr, e.name = "?:0", "" // a script's call: Redis's script client
	}
	l.nextID++
	n := min(len(args), slowlogMaxArgs)
	e.args = make([][]byte, n)
	for i := 0; i < n; i++ {
		switch {
		case n != len(args) && i == n-1:
			e.args[i] = []byte("... (" + strconv.Itoa(len(args)-n+1) + " more arguments)")
		case redacted(cmd, args, i):
			e.args[i] = []byte("(redacted)")
		case len(args[i]) > slowlogMaxBytes:
			b := append([]byte(nil), args[i][:slowlogMaxBytes]...)
			e.args[i] = append(b, "... ("+strconv.Itoa(len(args[i])-slowlogMaxBytes)+" more bytes)"...)
		default:
			e.args[i] = append([]byte(nil), args[i]...)
		}
	}
	l.entries = append(l.entries, e)
	l.trim()
}

// trim drops the oldest entries past slowlog-max-len.
func (l *slowlog) trim() {
	if over := len(l.entries) - l.maxLen; over > 0 {
		n := copy(l.entries, l.entries[over:])
		clear(l.entries[n:])
		l.entries = l.entries[:n]
	}
}

// redacted says whether argument i of the command is a secret that logs
// must not keep. Redis 7.0 hides AUTH's and HELLO AUTH's credentials,
// every argument of ACL SETUSER, CONFIG SET requirepass's value and
// MIGRATE's AUTH and AUTH2 arguments; those commands' specs say which
// (Command.redact).
func redacted(cmd *Command, args [][]byte, i int) bool {
	return cmd.redact != nil && cmd.redact(args, i)
}

// redactFrom redacts every argument from the i-th on.
func redactFrom(first int) func(args [][]byte, i int) bool {
	return func(_ [][]byte, i int) bool { return i >= first }
}

// SLOWLOG GET [count]
func cmdSlowlogGet(c *Ctx) error {
	count := int64(10)
	if len(c.args) > 3 {
		return errSubcommandSyntax("slowlog", c.args[1])
	}
	if len(c.args) == 3 {
		n, ok := parseIntOK(c.args[2])
		if !ok || n < -1 {
			return ErrSlowlogCount
		}
		count = n
	}
	l := c.a.slow.entries
	if count == -1 || count > int64(len(l)) {
		count = int64(len(l))
	}
	c.w.Array(int(count))
	for i := len(l) - 1; i >= len(l)-int(count); i-- {
		e := &l[i]
		c.w.Array(6)
		c.w.Int(e.id)
		c.w.Int(e.at)
		c.w.Int(e.micros)
		c.w.Array(len(e.args))
		for _, arg := range e.args {
			c.w.Bulk(arg)
		}
		c.w.BulkString(e.addr)
		c.w.BulkString(e.name)
	}
	return nil
}

// SLOWLOG LEN
func cmdSlowlogLen(c *Ctx) error {
	c.w.Int(int64(len(c.a.slow.entries)))
	return nil
}

// SLOWLOG RESET
func cmdSlowlogReset(c *Ctx) error {
	clear(c.a.slow.entries)
	c.a.slow.entries = c.a.slow.entries[:0]
	c.w.OK()
	return nil
}

// SLOWLOG HELP
func cmdSlowlogHelp(c *Ctx) error {
	return helpReply(c, "slowlog", []string{
		"GET [<count>]",
		"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:",
		"    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name",
		"LEN",
		"    Return the length of the slowlog.",
		"RESET",
		"    Reset the slowlog.",
		"HELP",
		"    Prints this help.",
	})
}
