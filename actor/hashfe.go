package actor

import (
	"strconv"

	"github.com/cellar-db/cellar/storage"
)

// Hash field expiration, Redis 7.4's commands (Redis 7.0 has none; their
// metadata is in cmdgen/extra). A field's expiry lives in its row
// (storage/hashfe.go); a field past it is removed before any command sees
// its hash, and by the expiry sweep, with the "hexpired" event.

var hashFieldExpiryCommands = registerCommands([]*Command{
	{Name: "hexpire", Summary: "Sets the time to live of hash fields, in seconds.", Handler: cmdHExpire(1000, true)},
	{Name: "hpexpire", Summary: "Sets the time to live of hash fields, in milliseconds.", Handler: cmdHExpire(1, true)},
	{Name: "hexpireat", Summary: "Sets when hash fields expire, as a unix time in seconds.", Handler: cmdHExpire(1000, false)},
	{Name: "hpexpireat", Summary: "Sets when hash fields expire, as a unix time in milliseconds.", Handler: cmdHExpire(1, false)},
	{Name: "httl", Summary: "Returns the time to live of hash fields, in seconds.", Handler: cmdHTTL(1000, true)},
	{Name: "hpttl", Summary: "Returns the time to live of hash fields, in milliseconds.", Handler: cmdHTTL(1, true)},
	{Name: "hexpiretime", Summary: "Returns when hash fields expire, as a unix time in seconds.", Handler: cmdHTTL(1000, false)},
	{Name: "hpexpiretime", Summary: "Returns when hash fields expire, as a unix time in milliseconds.", Handler: cmdHTTL(1, false)},
	{Name: "hpersist", Summary: "Removes the expiry of hash fields.", Handler: cmdHPersist},
})

// The keyspace notification events of what these commands write
// (notify.go, eventSpec).
var _ = addEvents(map[string]*eventSpec{
	// Hash field expiry (Redis 7.4.5's hashTypeSetExDone): one "hdel" if
	// a past time deleted fields (then "del" if that emptied the hash),
	// else "hexpire", whichever of the four set the expiries.
	"hexpire":    hashTTLEvents("hexpire"),
	"hpexpire":   hashTTLEvents("hexpire"),
	"hexpireat":  hashTTLEvents("hexpire"),
	"hpexpireat": hashTTLEvents("hexpire"),
	"hpersist":   hashTTLEvents("hpersist"),
})

// hfeMaxTime is the latest expiry Redis 7.4 accepts for a field (unix ms):
// its HFE_MAX_ABS_TIME_MSEC, 2^48-1 shifted right by 2.
const hfeMaxTime = (1<<48 - 1) >> 2

// The per-field replies of Redis 7.4.
const (
	hfeNoField   = -2 // no such field (or key)
	hfeNoTTL     = -1 // the field has no expiry
	hfeNoCond    = 0  // NX, XX, GT or LT held it back
	hfeSet       = 1  // expiry set (HPERSIST: removed)
	hfeDeleted   = 2  // the time was not in the future: the field went
	hfeCondNone  = 0
	hfeCondNX    = 1
	hfeCondXX    = 2
	hfeCondGT    = 3
	hfeCondLT    = 4
	hfeFieldsArg = "FIELDS"
)

// hfeFields parses "FIELDS numfields field..." starting at args[at-1]
// (FIELDS) as Redis 7.4 does; bad is the text for a count that is not a
// positive integer.
func hfeFields(c *Ctx, at int, bad ReplyError) ([][]byte, error) {
	if !c.argEq(at-1, hfeFieldsArg) {
		return nil, ErrHFEFieldsMissing
	}
	n, ok := parseIntOK(c.args[at])
	if !ok || n < 1 {
		return nil, bad
	}
	if n != int64(len(c.args)-at-1) {
		return nil, ErrHFENumFields
	}
	return c.args[at+1:], nil
}

// HEXPIRE key seconds [NX|XX|GT|LT] FIELDS numfields field [field ...],
// HPEXPIRE (milliseconds), HEXPIREAT (unix seconds), HPEXPIREAT (unix
// milliseconds): unit is the time's size in ms; relative, whether it
// counts from now. The redo log records it as HPEXPIREAT with the
// absolute time, as Redis propagates it.
func cmdHExpire(unit int64, relative bool) Handler {
	return func(c *Ctx) error {
		h, err := c.st.OpenColl(c.db, c.args[1], storage.TypeHash)
		if err != nil {
			return err
		}
		at, err := c.intArg(2)
		if err != nil {
			return err
		}
		if at < 0 {
			return ErrHFEExpireNegative
		}
		if unit == 1000 {
			if at > hfeMaxTime/1000 {
				return errHFEExpireTime(c.cmd.Name)
			}
			at *= 1000
		}
		base := int64(0)
		if relative {
			base = c.now
		}
		if at > hfeMaxTime-base {
			return errHFEExpireTime(c.cmd.Name)
		}
		at += base
		cond, fieldsAt := hfeCondNone, 4
		for i, w := range []string{"nx", "xx", "gt", "lt"} {
			if c.argEq(3, w) {
				cond, fieldsAt = i+1, 5
			}
		}
		fields, err := hfeFields(c, fieldsAt, ErrHFENumFieldsPositive)
		if err != nil {
			return err
		}
		c.w.Array(len(fields))
		if h == nil {
			for range fields {
				c.w.Int(hfeNoField)
			}
			return nil
		}
		c.rec = append(append([][]byte{[]byte("HPEXPIREAT"), c.args[1], strconv.AppendInt(nil, at, 10)},
			c.args[3:fieldsAt-1]...), c.args[fieldsAt-1:]...)
		for _, f := range fields {
			prev, found, err := c.st.HashFieldExpiry(h, f)
			if err != nil {
				return err
			}
			switch {
			case !found:
				c.w.Int(hfeNoField)
				continue
			case prev == 0 && (cond == hfeCondXX || cond == hfeCondGT),
				prev != 0 && (cond == hfeCondNX || (cond == hfeCondGT && prev >= at) || (cond == hfeCondLT && prev <= at)):
				c.w.Int(hfeNoCond)
				continue
			}
			if at <= c.now {
				if _, err := c.st.HashDel(h, f); err != nil {
					return err
				}
				c.w.Int(hfeDeleted)
				continue
			}
			if err := c.st.HashSetFieldExpiry(h, f, at); err != nil {
				return err
			}
			c.w.Int(hfeSet)
		}
		return nil
	}
}

// HTTL key FIELDS numfields field [field ...], HPTTL, HEXPIRETIME,
// HPEXPIRETIME: unit is the reply's size in ms; relative, whether it
// counts from now.
func cmdHTTL(unit int64, relative bool) Handler {
	return func(c *Ctx) error {
		h, err := c.readColl(c.args[1], storage.TypeHash)
		if err != nil {
			return err
		}
		fields, err := hfeFields(c, 3, ErrHFEFieldsPositive)
		if err != nil {
			return err
		}
		base := int64(0)
		if relative {
			base = c.now
		}
		c.w.Array(len(fields))
		for _, f := range fields {
			at, found, err := fieldExpiry(c, h, f)
			if err != nil {
				return err
			}
			switch {
			case !found:
				c.w.Int(hfeNoField)
			case at == 0:
				c.w.Int(hfeNoTTL)
			case unit == 1000:
				c.w.Int((at + 999 - base) / 1000)
			default:
				c.w.Int(at - base)
			}
		}
		return nil
	}
}

// fieldExpiry is field f's expiry in hash h (0 when it has none); found is
// false for a missing field or a missing hash (h nil).
func fieldExpiry(c *Ctx, h *storage.Coll, f []byte) (at int64, found bool, err error) {
	if h == nil {
		return 0, false, nil
	}
	return c.st.HashFieldExpiry(h, f)
}

// HPERSIST key FIELDS numfields field [field ...]
func cmdHPersist(c *Ctx) error {
	h, err := c.st.OpenColl(c.db, c.args[1], storage.TypeHash)
	if err != nil {
		return err
	}
	fields, err := hfeFields(c, 3, ErrHFEFieldsPositive)
	if err != nil {
		return err
	}
	c.w.Array(len(fields))
	for _, f := range fields {
		at, found, err := fieldExpiry(c, h, f)
		if err != nil {
			return err
		}
		switch {
		case !found:
			c.w.Int(hfeNoField)
		case at == 0:
			c.w.Int(hfeNoTTL)
		default:
			if err := c.st.HashSetFieldExpiry(h, f, 0); err != nil {
				return err
			}
			c.w.Int(hfeSet)
		}
	}
	return nil
}
