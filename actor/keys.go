package actor

import (
	"bytes"
	"math"
	"strconv"

	"github.com/cellar-db/cellar/storage"
)

var keyCommands = registerCommands([]*Command{
	{Name: "del", Summary: "Deletes keys.", Handler: cmdDel},
	{Name: "unlink", Summary: "Deletes keys (the same as DEL in Cellar).", Handler: cmdDel},
	{Name: "exists", Summary: "Counts how many of the given keys exist.", Handler: cmdExists, noTouch: true},
	{Name: "touch", Summary: "Counts how many of the given keys exist.", Handler: cmdExists, touchAlways: true},
	{Name: "type", Summary: "Returns the type of a key.", Handler: cmdType, noTouch: true},
	{Name: "expire", Summary: "Sets a key's time to live in seconds.", Handler: cmdExpire(inSeconds, fromNow), absoluteForm: expireAbsolute(inSeconds, fromNow)},
	{Name: "pexpire", Summary: "Sets a key's time to live in milliseconds.", Handler: cmdExpire(inMillis, fromNow), absoluteForm: expireAbsolute(inMillis, fromNow)},
	{Name: "expireat", Summary: "Sets a key's expiry as a unix time in seconds.", Handler: cmdExpire(inSeconds, unixTime), absoluteForm: expireAbsolute(inSeconds, unixTime)},
	{Name: "pexpireat", Summary: "Sets a key's expiry as a unix time in milliseconds.", Handler: cmdExpire(inMillis, unixTime)},
	{Name: "ttl", Summary: "Returns a key's time to live in seconds.", Handler: cmdTTL(inSeconds, fromNow), noTouch: true},
	{Name: "pttl", Summary: "Returns a key's time to live in milliseconds.", Handler: cmdTTL(inMillis, fromNow), noTouch: true},
	{Name: "expiretime", Summary: "Returns a key's expiry as a unix time in seconds.", Handler: cmdTTL(inSeconds, unixTime), noTouch: true},
	{Name: "pexpiretime", Summary: "Returns a key's expiry as a unix time in milliseconds.", Handler: cmdTTL(inMillis, unixTime), noTouch: true},
	{Name: "persist", Summary: "Removes a key's expiry.", Handler: cmdPersist},
	{Name: "rename", Summary: "Renames a key, replacing the destination.", Handler: cmdRename(replaceDst)},
	{Name: "renamenx", Summary: "Renames a key only if the destination does not exist.", Handler: cmdRename(keepDst)},
	{Name: "copy", Summary: "Copies a key, optionally to another database.", Handler: cmdCopy},
	{Name: "move", Summary: "Moves a key to another database.", Handler: cmdMove},
	{Name: "keys", Summary: "Returns the keys matching a pattern.", Handler: cmdKeys},
	{Name: "scan", Summary: "Iterates over the keys of the database with a cursor.", Handler: cmdScan},
	{Name: "randomkey", Summary: "Returns a random key.", Handler: cmdRandomKey},
	{Name: "object", Summary: "Inspects how a key is stored.", Subs: []*Command{
		{Name: "object|encoding", Summary: "Returns the encoding Redis would use for the key's value.", Handler: cmdObjectEncoding, noTouch: true},
		{Name: "object|idletime", Summary: "Returns the key's idle time (always 0: Cellar does not track access times).", Handler: cmdObjectIdleTime, noTouch: true},
		{Name: "object|freq", Summary: "Returns the key's access frequency (needs an LFU maxmemory-policy).", Handler: cmdObjectFreq, noTouch: true},
		{Name: "object|refcount", Summary: "Returns the reference count Redis would report for the value.", Handler: cmdObjectRefCount, noTouch: true},
		{Name: "object|help", Summary: "Lists the OBJECT subcommands.", Handler: cmdObjectHelp},
	}},
})

// The keyspace notification events of what these commands write
// (notify.go, eventSpec).
var _ = addEvents(map[string]*eventSpec{
	"persist": {expiry: func([][]byte) string { return "persist" }},
})

// DEL key [key ...] (and UNLINK)
func cmdDel(c *Ctx) error {
	return c.replyCount(c.args[1:], func(key []byte) (bool, error) { return c.st.Delete(c.db, key) })
}

// EXISTS key [key ...] (and TOUCH): repeated keys count each time.
func cmdExists(c *Ctx) error {
	return c.replyCount(c.args[1:], func(key []byte) (bool, error) {
		_, ok, err := c.readKey(key)
		return ok, err
	})
}

// TYPE key
func cmdType(c *Ctx) error {
	m, ok, err := c.readKey(c.args[1])
	if err != nil {
		return err
	}
	if !ok {
		c.w.Simple("none")
		return nil
	}
	c.w.Simple(m.Type.String())
	return nil
}

// The unit of an expiry or a time to live, and whether it counts from now
// or is a unix time: EXPIRE and TTL take and give seconds from now, the P
// forms milliseconds, EXPIREAT and EXPIRETIME unix times.
const (
	inSeconds = true
	inMillis  = false
	fromNow   = true
	unixTime  = false
)

// expireCond is the condition of EXPIRE and its kin: NX, XX, GT, LT.
type expireCond struct{ nx, xx, gt, lt bool }

// parseExpireCond parses the options of EXPIRE and its kin.
func parseExpireCond(opts [][]byte) (f expireCond, err error) {
	for _, opt := range opts {
		switch {
		case eqFold(opt, "nx"):
			f.nx = true
		case eqFold(opt, "xx"):
			f.xx = true
		case eqFold(opt, "gt"):
			f.gt = true
		case eqFold(opt, "lt"):
			f.lt = true
		default:
			return f, errUnsupportedOption(opt)
		}
	}
	if f.nx && (f.xx || f.gt || f.lt) {
		return f, ErrNXWithGTLT
	}
	if f.gt && f.lt {
		return f, ErrGTLTNX
	}
	return f, nil
}

// allows reports whether the condition lets a key whose expiry is cur (0:
// none, which GT and LT treat as infinite) get the expiry when.
func (f expireCond) allows(cur, when int64) bool {
	return !((f.nx && cur != 0) || (f.xx && cur == 0) || (f.gt && (cur == 0 || when <= cur)) || (f.lt && cur != 0 && when >= cur))
}

// EXPIRE key seconds [NX|XX|GT|LT], PEXPIRE, EXPIREAT, PEXPIREAT
// expireAbsolute is EXPIRE's, PEXPIRE's and EXPIREAT's form for replicas:
// PEXPIREAT with the deadline, and the condition if any (Redis's
// expireGenericCommand).
func expireAbsolute(seconds, relative bool) func(e effect) [][]byte {
	return func(e effect) [][]byte {
		n, ok := e.intArg(2)
		if !ok {
			return nil
		}
		at := strconv.AppendInt(nil, n*1000, 10)
		if relative {
			at = e.unixMs(n, seconds)
		}
		return append([][]byte{[]byte("PEXPIREAT"), e.args[1], at}, e.args[3:]...)
	}
}

func cmdExpire(seconds, relative bool) Handler {
	return func(c *Ctx) error {
		cond, err := parseExpireCond(c.args[3:])
		if err != nil {
			return err
		}
		when, err := c.intArg(2)
		if err != nil {
			return err
		}
		if seconds {
			if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
				return errInvalidExpire(c.cmd.Name)
			}
			when *= 1000
		}
		base := int64(0)
		if relative {
			base = c.now
		}
		if when > math.MaxInt64-base {
			return errInvalidExpire(c.cmd.Name)
		}
		when += base
		m, ok, err := c.st.Lookup(c.db, c.args[1])
		if err != nil {
			return err
		}
		if !ok || !cond.allows(m.ExpireAt, when) {
			c.w.Int(0)
			return nil
		}
		if when <= c.now {
			_, err = c.st.Delete(c.db, c.args[1])
		} else {
			err = c.st.SetExpire(c.db, c.args[1], when)
		}
		if err != nil {
			return err
		}
		c.w.Int(1)
		return nil
	}
}

// TTL key, PTTL key, EXPIRETIME key, PEXPIRETIME key
func cmdTTL(seconds, relative bool) Handler {
	return func(c *Ctx) error {
		m, ok, err := c.readKey(c.args[1])
		if err != nil {
			return err
		}
		if !ok {
			c.w.Int(-2)
			return nil
		}
		if m.ExpireAt == 0 {
			c.w.Int(-1)
			return nil
		}
		v := m.ExpireAt
		if relative {
			v = max(v-c.now, 0)
		}
		if seconds {
			v = (v + 500) / 1000
		}
		c.w.Int(v)
		return nil
	}
}

// PERSIST key
func cmdPersist(c *Ctx) error {
	m, ok, err := c.st.Lookup(c.db, c.args[1])
	if err != nil {
		return err
	}
	if !ok || m.ExpireAt == 0 {
		c.w.Int(0)
		return nil
	}
	if err := c.st.SetExpire(c.db, c.args[1], 0); err != nil {
		return err
	}
	c.w.Int(1)
	return nil
}

// Whether a rename replaces an existing destination (RENAME) or leaves it
// and does nothing (RENAMENX).
const (
	replaceDst = false
	keepDst    = true
)

// RENAME key newkey / RENAMENX key newkey (nx)
func cmdRename(nx bool) Handler {
	return func(c *Ctx) error {
		src, dst := c.args[1], c.args[2]
		_, ok, err := c.st.Lookup(c.db, src)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNoSuchKey
		}
		if bytes.Equal(src, dst) {
			if nx {
				c.w.Int(0)
			} else {
				c.w.OK()
			}
			return nil
		}
		if nx {
			_, exists, err := c.st.Lookup(c.db, dst)
			if err != nil {
				return err
			}
			if exists {
				c.w.Int(0)
				return nil
			}
		}
		if err := c.st.Rename(c.db, src, dst); err != nil {
			return err
		}
		if nx {
			c.w.Int(1)
		} else {
			c.w.OK()
		}
		return nil
	}
}

// dbArg parses a database index argument as Redis's getIntFromObject plus
// selectDb do.
func dbArg(b []byte) (int, error) {
	v, ok := parseIntOK(b)
	if !ok || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, ErrNotInteger
	}
	if v < 0 || v >= numDBs {
		return 0, ErrDBIndex
	}
	return int(v), nil
}

// COPY source destination [DB destination-db] [REPLACE]
func cmdCopy(c *Ctx) error {
	dstDB, replace := c.db, false
	for j := 3; j < len(c.args); j++ {
		switch {
		case c.argEq(j, "replace"):
			replace = true
		case c.argEq(j, "db") && j+1 < len(c.args):
			db, err := dbArg(c.args[j+1])
			if err != nil {
				return err
			}
			dstDB = db
			j++
		default:
			return ErrSyntax
		}
	}
	if dstDB == c.db && bytes.Equal(c.args[1], c.args[2]) {
		return ErrSameObject
	}
	// The source is read (Redis counts its lookup), the destination
	// written.
	if _, ok, err := c.readKey(c.args[1]); err != nil || !ok {
		if err == nil {
			c.w.Int(0)
		}
		return err
	}
	ok, err := c.st.Copy(c.db, c.args[1], dstDB, c.args[2], replace)
	if err != nil {
		return err
	}
	c.w.Int(b2i(ok))
	return nil
}

// MOVE key db
func cmdMove(c *Ctx) error {
	dst, err := dbArg(c.args[2])
	if err != nil {
		return err
	}
	if dst == c.db {
		return ErrSameObject
	}
	_, ok, err := c.st.Lookup(c.db, c.args[1])
	if err != nil {
		return err
	}
	if !ok {
		c.w.Int(0)
		return nil
	}
	if _, exists, err := c.st.Lookup(dst, c.args[1]); err != nil {
		return err
	} else if exists {
		c.w.Int(0)
		return nil
	}
	if err := c.st.Move(c.db, c.args[1], dst); err != nil {
		return err
	}
	c.w.Int(1)
	return nil
}

// KEYS pattern
func cmdKeys(c *Ctx) error {
	pat := c.args[1]
	all := len(pat) == 1 && pat[0] == '*'
	var keys [][]byte
	err := c.st.Keys(c.db, globPrefix(pat), func(k []byte) bool {
		if all || globMatch(pat, k) {
			keys = append(keys, bytes.Clone(k))
		}
		return true
	})
	if err != nil {
		return err
	}
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.Bulk(k)
	}
	return nil
}

// parseCursor parses a SCAN cursor as Redis's strtoul-based parser does.
func parseCursor(b []byte) (uint64, error) {
	if len(b) > 0 && isCSpace(b[0]) {
		return 0, ErrInvalidCursor
	}
	s := string(b)
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		if len(b) == 0 {
			return 0, nil
		}
		return 0, ErrInvalidCursor
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, ErrInvalidCursor
	}
	if neg {
		v = -v
	}
	return v, nil
}

// scanOpts are the MATCH/COUNT/TYPE options of the SCAN family.
type scanOpts struct {
	count   int64
	pattern []byte // nil: match all
	typ     []byte // nil: any type
}

// parseScanOpts parses options from args[from:]; TYPE only when allowType.
func parseScanOpts(c *Ctx, from int, allowType bool) (scanOpts, error) {
	o := scanOpts{count: 10}
	for i := from; i < len(c.args); {
		more := len(c.args)-i >= 2
		switch {
		case c.argEq(i, "count") && more:
			v, err := c.intArg(i + 1)
			if err != nil {
				return o, err
			}
			if v < 1 {
				return o, ErrSyntax
			}
			o.count = v
		case c.argEq(i, "match") && more:
			o.pattern = c.args[i+1]
			if len(o.pattern) == 1 && o.pattern[0] == '*' {
				o.pattern = nil
			}
		case allowType && c.argEq(i, "type") && more:
			o.typ = c.args[i+1]
		default:
			return o, ErrSyntax
		}
		i += 2
	}
	return o, nil
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
func cmdScan(c *Ctx) error {
	cursor, err := parseCursor(c.args[1])
	if err != nil {
		return err
	}
	o, err := parseScanOpts(c, 2, true)
	if err != nil {
		return err
	}
	count := int(min(o.count, 100000))
	entries, next, err := c.st.Scan(c.db, cursor, count, nil)
	if err != nil {
		return err
	}
	keep := entries[:0]
	for _, e := range entries {
		if o.pattern != nil && !globMatch(o.pattern, e.Key) {
			continue
		}
		if o.typ != nil {
			// Redis reads each key to learn its type: a keyspace hit.
			// (It also meets keys past their expiry, each a miss; Cellar's
			// Scan never returns those.)
			c.countLookup(nil, true, nil)
			if !eqFold(o.typ, e.Type.String()) {
				continue
			}
		}
		keep = append(keep, e)
	}
	c.w.Array(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.w.Array(len(keep))
	for _, e := range keep {
		c.w.Bulk(e.Key)
	}
	return nil
}

// RANDOMKEY
func cmdRandomKey(c *Ctx) error {
	k, ok, err := c.st.RandomKey(c.db)
	if err != nil {
		return err
	}
	c.bulkOrNull(k, ok)
	return nil
}

// objectLookup finds the key OBJECT reports on; nil reply when missing.
func objectLookup(c *Ctx) (storage.Meta, bool, error) {
	m, ok, err := c.readKey(c.args[2])
	if err == nil && !ok {
		c.w.Null()
	}
	return m, ok, err
}

// stringEncoding is the encoding Redis would give a string value.
func stringEncoding(v []byte) string {
	if len(v) <= 20 {
		if _, ok := parseIntOK(v); ok {
			return "int"
		}
	}
	if len(v) <= 44 {
		return "embstr"
	}
	return "raw"
}

// OBJECT ENCODING key
func cmdObjectEncoding(c *Ctx) error {
	m, ok, err := objectLookup(c)
	if err != nil || !ok {
		return err
	}
	switch m.Type {
	case storage.TypeString:
		v, _, err := c.st.GetString(c.db, c.args[2], nil)
		if err != nil {
			return err
		}
		c.w.BulkString(stringEncoding(v))
	case storage.TypeHash, storage.TypeSet, storage.TypeZSet:
		enc, err := c.collEncoding(c.args[2], m.Type)
		if err != nil {
			return err
		}
		c.w.BulkString(enc)
	default:
		c.w.BulkString(collectionEncoding(m.Type))
	}
	return nil
}

// collectionEncoding names the encoding Redis uses for a large collection of
// the type; Cellar stores every collection the same way whatever its size.
func collectionEncoding(t storage.Type) string {
	switch t {
	case storage.TypeList:
		return "quicklist"
	case storage.TypeHash, storage.TypeSet:
		return "hashtable"
	case storage.TypeZSet:
		return "skiplist"
	case storage.TypeStream:
		return "stream"
	}
	return "raw"
}

// OBJECT IDLETIME key: the seconds since the key was last accessed
// (access.go); Redis refuses it while an LFU maxmemory-policy is set.
func cmdObjectIdleTime(c *Ctx) error {
	_, ok, err := objectLookup(c)
	if err != nil || !ok {
		return err
	}
	if c.a.accessCfg.lfu {
		return ErrLFUSelected
	}
	c.w.Int(c.a.idleSeconds(c.accessWord()))
	return nil
}

// OBJECT FREQ key: the key's logarithmic access counter, decayed
// (access.go); Redis refuses it unless an LFU maxmemory-policy is set.
func cmdObjectFreq(c *Ctx) error {
	_, ok, err := objectLookup(c)
	if err != nil || !ok {
		return err
	}
	if !c.a.accessCfg.lfu {
		return ErrNoLFU
	}
	c.w.Int(int64(c.a.lfuCounter(c.accessWord())))
	return nil
}

// accessWord is the access word of OBJECT's key (0 when none is kept).
func (c *Ctx) accessWord() uint32 {
	if w, ok := c.st.AccessWord(c.db, c.args[2]); ok {
		return *w
	}
	return 0
}

// OBJECT REFCOUNT key: small integers are shared objects in Redis.
func cmdObjectRefCount(c *Ctx) error {
	m, ok, err := objectLookup(c)
	if err != nil || !ok {
		return err
	}
	if m.Type == storage.TypeString {
		v, _, err := c.st.GetString(c.db, c.args[2], nil)
		if err != nil {
			return err
		}
		if n, ok := parseIntOK(v); ok && n >= 0 && n < 10000 && len(v) <= 20 {
			c.w.Int(math.MaxInt32)
			return nil
		}
	}
	c.w.Int(1)
	return nil
}

// OBJECT HELP
func cmdObjectHelp(c *Ctx) error {
	return helpReply(c, "object", []string{
		"ENCODING <key>", "    The encoding Redis would use for the key's value.",
		"FREQ <key>", "    The key's access counter, logarithmic and decaying; needs an LFU maxmemory-policy.",
		"IDLETIME <key>", "    Seconds since the key was last accessed; needs a maxmemory-policy other than LFU.",
		"REFCOUNT <key>", "    The reference count Redis would report.",
		"HELP", "    This help.",
	})
}
