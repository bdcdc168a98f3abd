package actor

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cellar-db/cellar/storage"
)

var debugCommands = registerCommands([]*Command{
	{Name: "lolwut", Summary: "Prints the server's version.", Handler: cmdLolwut},
	{Name: "debug", Summary: "Debugging subcommands: SLEEP, OBJECT, SET-ACTIVE-EXPIRE, RELOAD, HELP.", Handler: cmdDebug, protectedBy: byDebugSetting},
})

// LOLWUT [VERSION version]: Redis 7.0 prints its version for any version
// but 5 and 6, which draw generative art; Cellar prints the version for
// all of them.
func cmdLolwut(c *Ctx) error {
	if len(c.args) >= 3 && c.argEq(1, "VERSION") {
		if _, err := c.intArg(2); err != nil {
			return err
		}
	}
	c.w.Verbatim("txt", "Redis ver. "+RedisVersion+"\n")
	return nil
}

// maxDebugSleep bounds DEBUG SLEEP, which stops the whole server as in
// Redis (the actor sleeps): a typo cannot freeze it for hours.
const maxDebugSleep = 60 * time.Second

// DEBUG SLEEP seconds | OBJECT key | SET-ACTIVE-EXPIRE 0|1 |
// RELOAD [MERGE|NOFLUSH|NOSAVE ...] | PROTOCOL type | LOG message |
// DIGEST | DIGEST-VALUE [key ...] | HELP
//
// Refused unless enable-debug-command allows it (yes, or local for a
// loopback or unix socket client), as in Redis.
func cmdDebug(c *Ctx) error {
	if !c.debugAllowed() {
		return ErrDebugNotAllowed
	}
	sub := c.args[1]
	n := len(c.args)
	switch {
	case eqFold(sub, "HELP") && n == 2:
		c.w.Array(len(debugHelp))
		for _, l := range debugHelp {
			c.w.Simple(l)
		}
	case eqFold(sub, "SLEEP") && n == 3:
		secs, _ := strconv.ParseFloat(strtodPrefix(c.args[2]), 64)
		d := time.Duration(secs*1e6) * time.Microsecond
		if d > 0 {
			time.Sleep(min(d, maxDebugSleep))
		}
		c.w.OK()
	case eqFold(sub, "SET-ACTIVE-EXPIRE") && n == 3:
		c.a.noActiveExpire = atoi(c.args[2]) == 0
		c.w.OK()
	case eqFold(sub, "OBJECT") && n == 3:
		return debugObject(c)
	case eqFold(sub, "DIGEST") && n == 2:
		return debugDigest(c)
	case eqFold(sub, "DIGEST-VALUE"):
		return debugDigestValue(c)
	case eqFold(sub, "PROTOCOL") && n == 3:
		return debugProtocol(c)
	case eqFold(sub, "LOG") && n == 3:
		c.a.log.Warn().Msg("DEBUG LOG: " + cString(c.args[2], 1<<30))
		c.w.OK()
	case eqFold(sub, "RELOAD"):
		for _, o := range c.args[2:] {
			if !eqFold(o, "MERGE") && !eqFold(o, "NOFLUSH") && !eqFold(o, "NOSAVE") {
				return ErrDebugReloadOption
			}
		}
		// Every write is in the redo log: RELOAD flushes and lets every
		// key leave memory, so that each is loaded back from SQLite
		// (whatever the options: nothing is unsaved).
		if err := c.st.Reload(); err != nil {
			return err
		}
		c.w.OK()
	default:
		return errSubcommandSyntax("debug", sub)
	}
	return nil
}

// DEBUG PROTOCOL string|integer|double|bignum|null|array|set|map|attrib|
// push|verbatim|true|false: a test value of that type, as Redis 7.0's
// debugCommand writes it (in RESP2, each as that protocol shows it).
func debugProtocol(c *Ctx) error {
	w := c.w
	name := c.args[2]
	switch {
	case eqFold(name, "string"):
		w.BulkString("Hello World")
	case eqFold(name, "integer"):
		w.Int(12345)
	case eqFold(name, "double"):
		w.Double(3.141)
	case eqFold(name, "bignum"):
		const n = "1234567999999999999999999999999999999"
		if w.Proto == 3 {
			w.Raw([]byte("(" + n + "\r\n"))
		} else {
			w.BulkString(n)
		}
	case eqFold(name, "null"):
		w.Null()
	case eqFold(name, "array"), eqFold(name, "set"):
		if eqFold(name, "set") {
			w.Set(3)
		} else {
			w.Array(3)
		}
		for j := range 3 {
			w.Int(int64(j))
		}
	case eqFold(name, "map"):
		w.Map(3)
		for j := range 3 {
			w.Int(int64(j))
			w.Bool(j == 1)
		}
	case eqFold(name, "attrib"):
		if w.Proto == 3 {
			w.Raw([]byte("|1\r\n"))
			w.BulkString("key-popularity")
			w.Array(2)
			w.BulkString("key:123")
			w.Int(90)
		}
		w.BulkString("Some real reply following the attribute")
	case eqFold(name, "push"):
		if w.Proto != 3 {
			return ErrRESP2NotSupported
		}
		w.Push(2)
		w.BulkString("server-cpu-usage")
		w.Int(42)
		w.BulkString("Some real reply following the push reply")
	case eqFold(name, "true"):
		w.Bool(true)
	case eqFold(name, "false"):
		w.Bool(false)
	case eqFold(name, "verbatim"):
		w.Verbatim("txt", "This is a verbatim\nstring")
	default:
		return ErrDebugProtocolType
	}
	return nil
}

var debugHelp = []string{
	"DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DIGEST",
	"    Output a hex signature representing the current DB content.",
	"DIGEST-VALUE <key> [<key> ...]",
	"    Output a hex signature of the values of all the specified keys.",
	"LOG <message>",
	"    Write <message> to the server log.",
	"OBJECT <key>",
	"    Show low level info about the `key` and associated value.",
	"PROTOCOL <type>",
	"    Reply with a test value of the specified type. <type> can be: string,",
	"    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
	"    true, false.",
	"RELOAD [option ...]",
	"    Flush every write and let every key leave memory: each is then loaded",
	"    back from the database (Cellar keeps every write there; the options change nothing).",
	"SET-ACTIVE-EXPIRE <0|1>",
	"    Setting it to 0 disables expiring keys in background when they are not",
	"    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
	"    default.",
	"SLEEP <seconds>",
	"    Stop the server for <seconds>. Decimals allowed.",
	"HELP",
	"    Print this help.",
}

// debugAllowed applies enable-debug-command: yes, or local for a client on
// a unix socket or a loopback address.
func (c *Ctx) debugAllowed() bool { return c.protectedAllowed(c.a.cfg.EnableDebugCommand) }

// protectedAllowed applies an enable-*-command setting (no, yes, local) to
// this client, as Redis does for the commands it flags protected.
func (c *Ctx) protectedAllowed(setting string) bool { return protectedAllowed(setting, c.s.addr) }

// debugObject is DEBUG OBJECT key: Redis's line of low-level facts. The
// address is the key's id, refcount is 1, the encoding is OBJECT
// ENCODING's, serializedlength the value's length (Redis's RDB length),
// lru and lru_seconds_idle 0 (no access times are kept).
func debugObject(c *Ctx) error {
	key := c.args[2]
	m, ok, err := c.st.Lookup(c.db, key)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNoSuchKey
	}
	enc := collectionEncoding(m.Type)
	size := int64(0)
	extra := ""
	switch m.Type {
	case storage.TypeString:
		v, _, err := c.st.GetString(c.db, key, nil)
		if err != nil {
			return err
		}
		enc, size = stringEncoding(v), int64(len(v))
	case storage.TypeHash, storage.TypeSet, storage.TypeZSet:
		if enc, err = c.collEncoding(key, m.Type); err != nil {
			return err
		}
		coll, err := c.st.OpenAnyColl(c.db, key, m.Type)
		if err != nil {
			return err
		}
		if coll != nil {
			size = coll.Len
		}
	case storage.TypeList:
		if size, err = c.st.ListLen(c.db, key); err != nil {
			return err
		}
		extra = fmt.Sprintf(" ql_nodes:%d ql_avg_node:%.2f ql_listpack_max:-2 ql_compressed:0 ql_uncompressed_size:%d", 1, float64(size), size)
	}
	c.w.Simple(fmt.Sprintf("Value at:0x%x refcount:1 encoding:%s serializedlength:%d lru:0 lru_seconds_idle:0%s",
		m.ID, enc, size, extra))
	return nil
}

// atoi is C's atoi: optional blanks and sign, then digits, 0 if none.
func atoi(b []byte) int64 {
	s := strings.TrimLeft(string(b), " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	var n int64
	for _, ch := range s {
		if ch < '0' || ch > '9' {
			break
		}
		n = n*10 + int64(ch-'0')
	}
	if neg {
		return -n
	}
	return n
}

// strtodPrefix is the longest prefix of b that strtod reads as a decimal
// number (after leading blanks); "0" when there is none.
func strtodPrefix(b []byte) string {
	s := strings.TrimLeft(string(b[:min(len(b), 64)]), " \t\n\v\f\r")
	best := "0"
	for i := 1; i <= len(s); i++ {
		if _, err := strconv.ParseFloat(s[:i], 64); err == nil {
			best = s[:i]
		}
	}
	return best
}
