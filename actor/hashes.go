package actor

import (
	"math"
	"math/big"
	"strconv"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

var hashCommands = registerCommands([]*Command{
	{Name: "hset", Summary: "Sets fields of a hash, creating it if needed.", Handler: cmdHSet(replyAdded)},
	{Name: "hmset", Summary: "Sets fields of a hash (older form of HSET that replies OK).", Handler: cmdHSet(replyOK)},
	{Name: "hsetnx", Summary: "Sets a hash field only if it does not exist.", Handler: cmdHSetNX},
	{Name: "hget", Summary: "Returns the value of a hash field.", Handler: cmdHGet},
	{Name: "hmget", Summary: "Returns the values of several hash fields.", Handler: cmdHMGet},
	{Name: "hgetall", Summary: "Returns every field and value of a hash.", Handler: cmdHGetAll(hashFields | hashValues)},
	{Name: "hkeys", Summary: "Returns every field of a hash.", Handler: cmdHGetAll(hashFields)},
	{Name: "hvals", Summary: "Returns every value of a hash.", Handler: cmdHGetAll(hashValues)},
	{Name: "hdel", Summary: "Removes fields from a hash.", Handler: cmdRemove(storage.TypeHash, (*storage.Store).HashDel)},
	{Name: "hexists", Summary: "Tells whether a hash has a field.", Handler: cmdHExists},
	{Name: "hlen", Summary: "Returns the number of fields of a hash.", Handler: cmdHLen},
	{Name: "hstrlen", Summary: "Returns the length of a hash field's value.", Handler: cmdHStrLen},
	{Name: "hincrby", Summary: "Adds an integer to the integer in a hash field.", Handler: cmdHIncrBy},
	{Name: "hincrbyfloat", Summary: "Adds a decimal number to the number in a hash field.", Handler: cmdHIncrByFloat},
	{Name: "hrandfield", Summary: "Returns random fields of a hash, optionally with their values.", Handler: cmdHRandField},
	{Name: "hscan", Summary: "Iterates over the fields and values of a hash with a cursor.", Handler: func(c *Ctx) error { return cmdScanColl(c, storage.TypeHash) }},
})

// The keyspace notification events of what these commands write
// (notify.go, eventSpec).
var _ = addEvents(map[string]*eventSpec{
	"hset":         {class: notifyHash, event: "hset"},
	"hmset":        {class: notifyHash, event: "hset"},
	"hsetnx":       {class: notifyHash, event: "hset"},
	"hdel":         {class: notifyHash, event: "hdel", popDel: true},
	"hincrby":      {class: notifyHash, event: "hincrby"},
	"hincrbyfloat": {class: notifyHash, event: "hincrbyfloat"},
})

// The replies of HSET (how many fields it added) and HMSET (OK).
func replyAdded(w *proto.Writer, added int64) { w.Int(added) }
func replyOK(w *proto.Writer, _ int64)        { w.OK() }

// HSET key field value [field value ...] / HMSET (replies OK)
func cmdHSet(reply func(w *proto.Writer, added int64)) Handler {
	return func(c *Ctx) error {
		if len(c.args)%2 != 0 {
			return errWrongArgs(c.cmd.Name)
		}
		h, err := c.st.OpenOrCreateColl(c.db, c.args[1], storage.TypeHash)
		if err != nil {
			return err
		}
		added := int64(0)
		for i := 2; i < len(c.args); i += 2 {
			ok, err := c.st.HashSet(h, c.args[i], c.args[i+1], storage.HashReplace)
			if err != nil {
				return err
			}
			if ok {
				added++
			}
		}
		reply(c.w, added)
		return nil
	}
}

// HSETNX key field value
func cmdHSetNX(c *Ctx) error {
	h, err := c.st.OpenOrCreateColl(c.db, c.args[1], storage.TypeHash)
	if err != nil {
		return err
	}
	added, err := c.st.HashSet(h, c.args[2], c.args[3], storage.HashKeepNew)
	if err != nil {
		return err
	}
	c.w.Int(b2i(added))
	return nil
}

// HGET key field
func cmdHGet(c *Ctx) error {
	h, err := c.readColl(c.args[1], storage.TypeHash)
	if err != nil {
		return err
	}
	if h == nil {
		c.w.Null()
		return nil
	}
	v, ok, err := c.st.HashGet(h, c.args[2], nil)
	if err != nil {
		return err
	}
	c.bulkOrNull(v, ok)
	return nil
}

// HMGET key field [field ...]
func cmdHMGet(c *Ctx) error {
	h, err := c.readColl(c.args[1], storage.TypeHash)
	if err != nil {
		return err
	}
	c.w.Array(len(c.args) - 2)
	var buf []byte
	for _, f := range c.args[2:] {
		if h == nil {
			c.w.Null()
			continue
		}
		v, ok, err := c.st.HashGet(h, f, buf[:0])
		if err != nil {
			return err
		}
		if ok {
			c.w.Bulk(v)
		} else {
			c.w.Null()
		}
		buf = v
	}
	return nil
}

// What HGETALL (both), HKEYS and HVALS return of each field.
type hashParts uint8

const (
	hashFields hashParts = 1 << iota
	hashValues
)

// HGETALL key / HKEYS key / HVALS key
func cmdHGetAll(parts hashParts) Handler {
	return func(c *Ctx) error {
		h, err := c.readColl(c.args[1], storage.TypeHash)
		if err != nil {
			return err
		}
		keys, vals := parts&hashFields != 0, parts&hashValues != 0
		if h == nil {
			if keys && vals {
				c.w.Map(0)
			} else {
				c.w.Array(0)
			}
			return nil
		}
		// The count is known up front (keys.value), so the elements stream
		// straight into the reply.
		n := int(h.Len)
		if keys && vals {
			c.w.Map(n)
		} else {
			c.w.Array(n)
		}
		written := 0
		// A small hash comes back in insertion order, as from Redis's
		// listpack; a large one in storage order (Redis's is its
		// hashtable's, unspecified).
		each := c.st.Elements
		if h.Len <= storage.SmallHash {
			each = c.st.OrderedElements
		}
		err = each(h, func(e *storage.Elem) bool {
			if keys {
				c.w.Bulk(e.Member)
			}
			if vals {
				c.w.Bulk(e.Value)
			}
			written++
			return true
		})
		if err == nil && written != n {
			return errCountMismatch(c.args[1], n, written)
		}
		return err
	}
}

// HEXISTS key field
func cmdHExists(c *Ctx) error {
	h, err := c.readColl(c.args[1], storage.TypeHash)
	if err != nil {
		return err
	}
	found := false
	if h != nil {
		if found, err = c.st.HashHas(h, c.args[2]); err != nil {
			return err
		}
	}
	c.w.Int(b2i(found))
	return nil
}

// HLEN key
func cmdHLen(c *Ctx) error {
	h, err := c.readColl(c.args[1], storage.TypeHash)
	if err != nil {
		return err
	}
	if h == nil {
		c.w.Int(0)
		return nil
	}
	c.w.Int(h.Len)
	return nil
}

// HSTRLEN key field
func cmdHStrLen(c *Ctx) error {
	h, err := c.readColl(c.args[1], storage.TypeHash)
	if err != nil || h == nil {
		if err == nil {
			c.w.Int(0)
		}
		return err
	}
	n, err := c.st.HashStrLen(h, c.args[2])
	if err != nil {
		return err
	}
	c.w.Int(n)
	return nil
}

// HINCRBY key field increment
func cmdHIncrBy(c *Ctx) error {
	incr, err := c.intArg(3)
	if err != nil {
		return err
	}
	h, err := c.st.OpenOrCreateColl(c.db, c.args[1], storage.TypeHash)
	if err != nil {
		return err
	}
	old, found, err := c.st.HashGet(h, c.args[2], nil)
	if err != nil {
		return err
	}
	cur := int64(0)
	if found {
		v, ok := parseIntOK(old)
		if !ok {
			return ErrHashNotInteger
		}
		cur = v
	}
	if (incr < 0 && cur < 0 && incr < math.MinInt64-cur) || (incr > 0 && cur > 0 && incr > math.MaxInt64-cur) {
		return ErrOverflow
	}
	cur += incr
	var buf [20]byte
	if _, err := c.st.HashSet(h, c.args[2], strconv.AppendInt(buf[:0], cur, 10), storage.HashKeepTTL); err != nil {
		return err
	}
	c.w.Int(cur)
	return nil
}

// HINCRBYFLOAT key field increment: computed in long double, like
// INCRBYFLOAT.
func cmdHIncrByFloat(c *Ctx) error {
	incr, ok := parseLongDouble(c.args[3])
	if !ok {
		return ErrNotFloat
	}
	if incr.IsInf() {
		return ErrNaNOrInfinity
	}
	h, err := c.st.OpenOrCreateColl(c.db, c.args[1], storage.TypeHash)
	if err != nil {
		return err
	}
	old, found, err := c.st.HashGet(h, c.args[2], nil)
	if err != nil {
		return err
	}
	cur := new(big.Float).SetPrec(longDoublePrec)
	if found {
		v, ok := parseLongDouble(old)
		if !ok {
			return ErrHashNotFloat
		}
		cur = v
	}
	if cur.IsInf() {
		return ErrIncrNaNOrInf
	}
	sum := new(big.Float).SetPrec(longDoublePrec).SetMode(big.ToNearestEven).Add(cur, incr)
	if sum.MantExp(nil) > maxLongDoubleExp {
		return ErrIncrNaNOrInf
	}
	s := formatLongDouble(sum)
	if _, err := c.st.HashSet(h, c.args[2], []byte(s), storage.HashKeepTTL); err != nil {
		return err
	}
	c.w.BulkString(s)
	return nil
}

// HRANDFIELD key [count [WITHVALUES]]
func cmdHRandField(c *Ctx) error {
	if len(c.args) == 2 {
		h, err := c.readColl(c.args[1], storage.TypeHash)
		if err != nil || h == nil {
			if err == nil {
				c.w.Null()
			}
			return err
		}
		es, err := c.st.Sample(h, 1)
		if err != nil {
			return err
		}
		c.w.Bulk(es[0].Member)
		return nil
	}
	withValues := len(c.args) == 4
	if len(c.args) > 4 || (withValues && !c.argEq(3, "withvalues")) {
		// Redis parses the count first: its error wins.
		if _, err := randomCountArg(c, 2, false); err != nil {
			return err
		}
		return ErrSyntax
	}
	count, err := randomCountArg(c, 2, withValues)
	if err != nil {
		return err
	}
	h, err := c.readColl(c.args[1], storage.TypeHash)
	if err != nil {
		return err
	}
	if h == nil || count == 0 {
		c.w.Array(0)
		return nil
	}
	return c.writeRandom(h, count, withValues, func(e *storage.Elem) { c.w.Bulk(e.Value) })
}
