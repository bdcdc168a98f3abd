package actor

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/cellar-db/cellar/storage"
)

var stringCommands = registerCommands([]*Command{
	{Name: "get", Summary: "Returns the value of a string key.", Handler: cmdGet},
	{Name: "set", Summary: "Sets a string key, with optional expiry and conditions.", Handler: cmdSet, getKeys: setKeyFlags, absoluteForm: setAbsolute},
	{Name: "setnx", Summary: "Sets a string key only if it does not exist.", Handler: cmdSetNX},
	{Name: "setex", Summary: "Sets a string key with an expiry in seconds.", Handler: cmdSetEX(inSeconds), absoluteForm: setEXAbsolute(inSeconds)},
	{Name: "psetex", Summary: "Sets a string key with an expiry in milliseconds.", Handler: cmdSetEX(inMillis), absoluteForm: setEXAbsolute(inMillis)},
	{Name: "mget", Summary: "Returns the values of several string keys.", Handler: cmdMGet},
	{Name: "mset", Summary: "Sets several string keys.", Handler: cmdMSet},
	{Name: "msetnx", Summary: "Sets several string keys only if none of them exists.", Handler: cmdMSetNX},
	{Name: "getset", Summary: "Sets a string key and returns its previous value.", Handler: cmdGetSet},
	{Name: "getdel", Summary: "Returns a string key's value and deletes the key.", Handler: cmdGetDel},
	{Name: "getex", Summary: "Returns a string key's value and changes its expiry.", Handler: cmdGetEx, absoluteForm: getExAbsolute},
	{Name: "append", Summary: "Appends to a string key, creating it if needed.", Handler: cmdAppend},
	{Name: "strlen", Summary: "Returns the length of a string key's value.", Handler: cmdStrLen},
	{Name: "incr", Summary: "Adds one to the integer in a string key.", Handler: cmdIncr(plusOne)},
	{Name: "decr", Summary: "Subtracts one from the integer in a string key.", Handler: cmdIncr(minusOne)},
	{Name: "incrby", Summary: "Adds an integer to the integer in a string key.", Handler: cmdIncr(plusArg)},
	{Name: "decrby", Summary: "Subtracts an integer from the integer in a string key.", Handler: cmdIncr(minusArg)},
	{Name: "incrbyfloat", Summary: "Adds a decimal number to the number in a string key.", Handler: cmdIncrByFloat},
	{Name: "getrange", Summary: "Returns a substring of a string key's value.", Handler: cmdGetRange},
	{Name: "substr", Summary: "Returns a substring of a string key's value (old name of GETRANGE).", Handler: cmdGetRange},
	{Name: "setrange", Summary: "Overwrites part of a string key's value at an offset.", Handler: cmdSetRange},
})

// The keyspace notification events of what these commands write
// (notify.go, eventSpec).
var _ = addEvents(map[string]*eventSpec{
	"set":         {class: notifyString, event: "set", expire: setExpires},
	"getex":       {expiry: getexExpiry},
	"setnx":       {class: notifyString, event: "set"},
	"setex":       {class: notifyString, event: "set", expire: always},
	"psetex":      {class: notifyString, event: "set", expire: always},
	"mset":        {class: notifyString, event: "set"},
	"msetnx":      {class: notifyString, event: "set"},
	"getset":      {class: notifyString, event: "set"},
	"append":      {class: notifyString, event: "append"},
	"incr":        {class: notifyString, event: "incrby"},
	"decr":        {class: notifyString, event: "incrby"},
	"incrby":      {class: notifyString, event: "incrby"},
	"decrby":      {class: notifyString, event: "incrby"},
	"incrbyfloat": {class: notifyString, event: "incrbyfloat"},
	"setrange":    {class: notifyString, event: "setrange"},
})

// replyString replies with key's string value (null when missing) through
// the frame's value scratch: a large value is copied once, into the reply,
// and leaves no garbage behind (a pipeline of GETs of a big value would
// otherwise allocate it once per GET). A key of another type is an error,
// or null when nullWrongType (MGET).
func (c *Ctx) replyString(key []byte, nullWrongType bool) error {
	v, ok, err := c.getStringInto(key, c.f.val[:0])
	if cap(v) <= maxValScratch {
		c.f.val = v[:0]
	}
	if err == storage.ErrWrongType && nullWrongType {
		ok, err = false, nil
	}
	if err != nil {
		return err
	}
	c.bulkOrNull(v, ok)
	return nil
}

// maxValScratch is the largest value scratch the actor keeps between
// commands.
const maxValScratch = 4 << 20

// GET key
func cmdGet(c *Ctx) error { return c.replyString(c.args[1], false) }

// setFlags are SET/GETEX's options, as Redis's parser accepts them.
type setFlags struct {
	nx, xx, get, keepTTL, persist bool
	ex, px, exat, pxat            bool
	expire                        []byte
}

func (f *setFlags) anyExpire() bool { return f.ex || f.px || f.exat || f.pxat }

// parseSetFlags parses options from args[from:]; forSet selects SET's
// options (NX, XX, GET, KEEPTTL) over GETEX's (PERSIST). The accepted
// combinations follow Redis exactly, including its tolerance of a repeated
// EX.
func parseSetFlags(c *Ctx, from int, forSet bool) (setFlags, error) {
	var f setFlags
	for j := from; j < len(c.args); j++ {
		opt := c.args[j]
		next := j+1 < len(c.args)
		switch {
		case forSet && eqFold(opt, "NX") && !f.xx:
			f.nx = true
		case forSet && eqFold(opt, "XX") && !f.nx:
			f.xx = true
		case forSet && eqFold(opt, "GET"):
			f.get = true
		case forSet && eqFold(opt, "KEEPTTL") && !f.persist && !f.anyExpire():
			f.keepTTL = true
		case !forSet && eqFold(opt, "PERSIST") && !f.anyExpire() && !f.keepTTL:
			f.persist = true
		case eqFold(opt, "EX") && !f.keepTTL && !f.persist && !f.exat && !f.px && !f.pxat && next:
			f.ex, f.expire = true, c.args[j+1]
			j++
		case eqFold(opt, "PX") && !f.keepTTL && !f.persist && !f.ex && !f.exat && !f.pxat && next:
			f.px, f.expire = true, c.args[j+1]
			j++
		case eqFold(opt, "EXAT") && !f.keepTTL && !f.persist && !f.ex && !f.px && !f.pxat && next:
			f.exat, f.expire = true, c.args[j+1]
			j++
		case eqFold(opt, "PXAT") && !f.keepTTL && !f.persist && !f.ex && !f.exat && !f.px && next:
			f.pxat, f.expire = true, c.args[j+1]
			j++
		default:
			return f, ErrSyntax
		}
	}
	return f, nil
}

func (f *setFlags) millis(c *Ctx) (int64, error) {
	return expireAt(c, f.expire, f.ex || f.exat, f.ex || f.px)
}

// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ms-ts|KEEPTTL]
func cmdSet(c *Ctx) error {
	f, err := parseSetFlags(c, 3, true)
	if err != nil {
		return err
	}
	return setGeneric(c, f, c.args[1], c.args[2], false)
}

// setGeneric is SET's body, shared with SETEX, PSETEX, SETNX and GETSET.
// abortInt makes an NX/XX refusal reply :0 (SETNX) instead of nil.
func setGeneric(c *Ctx, f setFlags, key, val []byte, abortInt bool) error {
	var at int64
	if f.anyExpire() {
		var err error
		if at, err = f.millis(c); err != nil {
			return err
		}
	}
	found := false
	if f.get {
		old, ok, err := c.getString(key)
		if err != nil {
			return err
		}
		found = ok
		if ok {
			c.w.Bulk(old)
		} else {
			c.w.Null()
		}
	} else if f.nx || f.xx {
		_, ok, err := c.st.Lookup(c.db, key)
		if err != nil {
			return err
		}
		found = ok
	}
	if (f.nx && found) || (f.xx && !found) {
		if !f.get {
			if abortInt {
				c.w.Int(0)
			} else {
				c.w.Null()
			}
		}
		return nil
	}
	if err := c.st.SetString(c.db, key, val, at, f.keepTTL); err != nil {
		return err
	}
	if !f.get {
		if abortInt {
			c.w.Int(1)
		} else {
			c.w.OK()
		}
	}
	return nil
}

// SETNX key value
func cmdSetNX(c *Ctx) error {
	return setGeneric(c, setFlags{nx: true}, c.args[1], c.args[2], true)
}

// SETEX key seconds value / PSETEX key milliseconds value
// setAbsolute is SET's form for replicas when it sets an expiry: SET key
// value PXAT with the deadline (Redis's setGenericCommand).
func setAbsolute(e effect) [][]byte {
	for i := 3; i+1 < len(e.args); i++ {
		n, ok := e.intArg(i + 1)
		if !ok {
			continue
		}
		var at []byte
		switch strings.ToLower(string(e.args[i])) {
		case "ex":
			at = e.unixMs(n, true)
		case "px":
			at = e.unixMs(n, false)
		case "exat":
			at = strconv.AppendInt(nil, n*1000, 10)
		default:
			continue
		}
		return [][]byte{[]byte("SET"), e.args[1], e.args[2], []byte("PXAT"), at}
	}
	return nil
}

// setEXAbsolute is SETEX's and PSETEX's form for replicas: SET key value
// PXAT with the deadline.
func setEXAbsolute(seconds bool) func(e effect) [][]byte {
	return func(e effect) [][]byte {
		n, ok := e.intArg(2)
		if !ok || len(e.args) != 4 {
			return nil
		}
		return [][]byte{[]byte("SET"), e.args[1], e.args[3], []byte("PXAT"), e.unixMs(n, seconds)}
	}
}

// getExAbsolute is GETEX's form for replicas: PEXPIREAT with the
// deadline, or PERSIST (Redis's getexCommand).
func getExAbsolute(e effect) [][]byte {
	if len(e.args) < 3 {
		return nil
	}
	opt := strings.ToLower(string(e.args[2]))
	if opt == "persist" {
		return [][]byte{[]byte("PERSIST"), e.args[1]}
	}
	n, ok := e.intArg(3)
	if !ok {
		return nil
	}
	var at []byte
	switch opt {
	case "ex", "px":
		at = e.unixMs(n, opt == "ex")
	case "exat":
		at = strconv.AppendInt(nil, n*1000, 10)
	case "pxat":
		at = e.args[3]
	default:
		return nil
	}
	return [][]byte{[]byte("PEXPIREAT"), e.args[1], at}
}

func cmdSetEX(seconds bool) Handler {
	return func(c *Ctx) error {
		f := setFlags{expire: c.args[2], ex: seconds, px: !seconds}
		return setGeneric(c, f, c.args[1], c.args[3], false)
	}
}

// GETSET key value
func cmdGetSet(c *Ctx) error {
	return setGeneric(c, setFlags{get: true}, c.args[1], c.args[2], false)
}

// MGET key [key ...]: a missing key or one of another type is nil.
func cmdMGet(c *Ctx) error {
	c.w.Array(len(c.args) - 1)
	for _, key := range c.args[1:] {
		if err := c.replyString(key, true); err != nil {
			return err
		}
	}
	return nil
}

// MSET key value [key value ...]
func cmdMSet(c *Ctx) error {
	if len(c.args)%2 == 0 {
		return errWrongArgs(c.cmd.Name)
	}
	for i := 1; i < len(c.args); i += 2 {
		if err := c.st.SetString(c.db, c.args[i], c.args[i+1], 0, false); err != nil {
			return err
		}
	}
	c.w.OK()
	return nil
}

// MSETNX key value [key value ...]
func cmdMSetNX(c *Ctx) error {
	if len(c.args)%2 == 0 {
		return errWrongArgs(c.cmd.Name)
	}
	for i := 1; i < len(c.args); i += 2 {
		_, ok, err := c.st.Lookup(c.db, c.args[i])
		if err != nil {
			return err
		}
		if ok {
			c.w.Int(0)
			return nil
		}
	}
	for i := 1; i < len(c.args); i += 2 {
		if err := c.st.SetString(c.db, c.args[i], c.args[i+1], 0, false); err != nil {
			return err
		}
	}
	c.w.Int(1)
	return nil
}

// GETDEL key
func cmdGetDel(c *Ctx) error {
	v, ok, err := c.getString(c.args[1])
	if err != nil {
		return err
	}
	if !ok {
		c.w.Null()
		return nil
	}
	if _, err := c.st.Delete(c.db, c.args[1]); err != nil {
		return err
	}
	c.w.Bulk(v)
	return nil
}

// GETEX key [EX s|PX ms|EXAT ts|PXAT ms-ts|PERSIST]
func cmdGetEx(c *Ctx) error {
	f, err := parseSetFlags(c, 2, false)
	if err != nil {
		return err
	}
	v, ok, err := c.getString(c.args[1])
	if err != nil {
		return err
	}
	if !ok {
		c.w.Null()
		return nil
	}
	var at int64
	if f.anyExpire() {
		if at, err = f.millis(c); err != nil {
			return err
		}
	}
	c.w.Bulk(v)
	switch {
	case (f.exat || f.pxat) && at <= c.now:
		_, err = c.st.Delete(c.db, c.args[1])
	case f.anyExpire():
		err = c.st.SetExpire(c.db, c.args[1], at)
	case f.persist:
		// As Redis, only a key that had an expiry changes (WATCH sees it).
		var m storage.Meta
		if m, _, err = c.st.Lookup(c.db, c.args[1]); err == nil && m.ExpireAt != 0 {
			err = c.st.SetExpire(c.db, c.args[1], 0)
		}
	}
	return err
}

// checkLength refuses a value longer than proto-max-bulk-len.
func (c *Ctx) checkLength(size, add int64) error {
	total := size + add
	if total > c.a.cfg.MaxBulkLen || total < size || total < add {
		return ErrStringTooLong
	}
	return nil
}

// APPEND key value
func cmdAppend(c *Ctx) error {
	v, ok, err := c.st.GetString(c.db, c.args[1], nil)
	if err != nil {
		return err
	}
	if ok {
		if err := c.checkLength(int64(len(v)), int64(len(c.args[2]))); err != nil {
			return err
		}
	}
	v = append(v, c.args[2]...)
	if err := c.st.SetString(c.db, c.args[1], v, 0, true); err != nil {
		return err
	}
	c.w.Int(int64(len(v)))
	return nil
}

// STRLEN key
func cmdStrLen(c *Ctx) error {
	n, found, err := c.st.StringLen(c.db, c.args[1])
	c.countLookup(c.args[1], found, err)
	if err != nil {
		return err
	}
	c.w.Int(n)
	return nil
}

// The amounts INCR, DECR, INCRBY and DECRBY add.
func plusOne(*Ctx) (int64, error)   { return 1, nil }
func minusOne(*Ctx) (int64, error)  { return -1, nil }
func plusArg(c *Ctx) (int64, error) { return c.intArg(2) }
func minusArg(c *Ctx) (int64, error) {
	v, err := c.intArg(2)
	if err == nil && v == math.MinInt64 {
		return 0, ErrDecrOverflow
	}
	return -v, err
}

// INCR key / DECR key / INCRBY key increment / DECRBY key decrement: by
// gives the amount.
func cmdIncr(by func(c *Ctx) (int64, error)) Handler {
	return func(c *Ctx) error {
		incr, err := by(c)
		if err != nil {
			return err
		}
		old, _, err := c.st.GetString(c.db, c.args[1], nil)
		if err != nil {
			return err
		}
		cur := int64(0)
		if old != nil {
			if cur, err = parseInt(old); err != nil {
				return err
			}
		}
		if (incr < 0 && cur < 0 && incr < math.MinInt64-cur) || (incr > 0 && cur > 0 && incr > math.MaxInt64-cur) {
			return ErrOverflow
		}
		cur += incr
		var buf [20]byte
		if err := c.st.SetString(c.db, c.args[1], strconv.AppendInt(buf[:0], cur, 10), 0, true); err != nil {
			return err
		}
		c.w.Int(cur)
		return nil
	}
}

// INCRBYFLOAT key increment
func cmdIncrByFloat(c *Ctx) error {
	old, _, err := c.st.GetString(c.db, c.args[1], nil)
	if err != nil {
		return err
	}
	cur := new(big.Float).SetPrec(longDoublePrec)
	if old != nil {
		v, ok := parseLongDouble(old)
		if !ok {
			return ErrNotFloat
		}
		cur = v
	}
	incr, ok := parseLongDouble(c.args[2])
	if !ok {
		return ErrNotFloat
	}
	if cur.IsInf() || incr.IsInf() {
		return ErrIncrNaNOrInf
	}
	sum := new(big.Float).SetPrec(longDoublePrec).SetMode(big.ToNearestEven).Add(cur, incr)
	if sum.MantExp(nil) > maxLongDoubleExp {
		return ErrIncrNaNOrInf
	}
	s := formatLongDouble(sum)
	if err := c.st.SetString(c.db, c.args[1], []byte(s), 0, true); err != nil {
		return err
	}
	c.w.BulkString(s)
	return nil
}

// GETRANGE key start end (and SUBSTR)
func cmdGetRange(c *Ctx) error {
	start, end, err := c.rangeArgs(2)
	if err != nil {
		return err
	}
	v, _, err := c.getString(c.args[1])
	if err != nil {
		return err
	}
	n := int64(len(v))
	if start < 0 && end < 0 && start > end {
		c.w.BulkString("")
		return nil
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		c.w.BulkString("")
		return nil
	}
	c.w.Bulk(v[start : end+1])
	return nil
}

// SETRANGE key offset value
func cmdSetRange(c *Ctx) error {
	off, err := c.intArg(2)
	if err != nil {
		return err
	}
	if off < 0 {
		return ErrOffsetRange
	}
	val := c.args[3]
	v, ok, err := c.st.GetString(c.db, c.args[1], nil)
	if err != nil {
		return err
	}
	if len(val) == 0 {
		c.w.Int(int64(len(v)))
		return nil
	}
	if err := c.checkLength(off, int64(len(val))); err != nil {
		return err
	}
	if need := off + int64(len(val)); int64(len(v)) < need {
		v = append(v, make([]byte, need-int64(len(v)))...)
	}
	copy(v[off:], val)
	if err := c.st.SetString(c.db, c.args[1], v, 0, ok); err != nil {
		return err
	}
	c.w.Int(int64(len(v)))
	return nil
}
