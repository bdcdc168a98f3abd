package actor

import (
	"math"
	"strconv"

	"github.com/cellar-db/cellar/storage"
)

// Helpers shared by the hash, set and sorted-set families.

// Redis 7.0's default thresholds for its compact encodings
// (hash-max-listpack-entries/value, zset-max-listpack-entries/value,
// set-max-intset-entries).
const (
	listpackEntries = 128
	listpackValue   = 64
	intsetEntries   = 512
)

// maxRandomCount bounds the replies of SRANDMEMBER, HRANDFIELD and
// ZRANDMEMBER with a negative count (repeats allowed), which Redis builds
// for any count until it runs out of memory.
const maxRandomCount = 1 << 24

// compactElems returns the elements of coll when Redis 7.0 would hold it in
// a compact encoding (listpack for hashes and sorted sets, intset for
// sets); nil otherwise. It reads at most 512 elements.
func (c *Ctx) compactElems(coll *storage.Coll) ([]storage.Elem, bool, error) {
	limit := int64(listpackEntries)
	if coll.Type == storage.TypeSet {
		limit = intsetEntries
	}
	if coll.Len > limit {
		return nil, false, nil
	}
	all, err := c.st.AllElements(coll)
	if err != nil {
		return nil, false, err
	}
	for _, e := range all {
		switch coll.Type {
		case storage.TypeSet:
			if _, ok := parseIntOK(e.Member); !ok {
				return nil, false, nil
			}
		case storage.TypeHash:
			if len(e.Member) > listpackValue || len(e.Value) > listpackValue {
				return nil, false, nil
			}
		case storage.TypeZSet:
			if len(e.Member) > listpackValue {
				return nil, false, nil
			}
		}
	}
	return all, true, nil
}

// collEncoding is what OBJECT ENCODING reports for a hash, set or sorted
// set: Redis 7.0's encoding for the collection's current size and element
// lengths. (Redis never converts back to a compact encoding once a
// collection has outgrown it; Cellar judges the present contents.)
func (c *Ctx) collEncoding(key []byte, t storage.Type) (string, error) {
	coll, err := c.st.OpenColl(c.db, key, t)
	if err != nil || coll == nil {
		return collectionEncoding(t), err
	}
	_, compact, err := c.compactElems(coll)
	switch {
	case !compact:
		return collectionEncoding(t), err
	case t == storage.TypeSet:
		return "intset", err
	}
	return "listpack", err
}

// cmdScanColl is HSCAN, SSCAN and ZSCAN: key cursor [MATCH pattern]
// [COUNT count]. Like Redis, a collection in a compact encoding comes back
// whole in one call (cursor 0), and options are parsed only once the key
// is known to exist.
func cmdScanColl(c *Ctx, t storage.Type) error {
	cursor, err := parseCursor(c.args[2])
	if err != nil {
		return err
	}
	coll, err := c.readColl(c.args[1], t)
	if err != nil {
		return err
	}
	if coll == nil {
		c.w.Array(2)
		c.w.BulkString("0")
		c.w.Array(0)
		return nil
	}
	o, err := parseScanOpts(c, 3, false)
	if err != nil {
		return err
	}
	all, compact, err := c.compactElems(coll)
	if err != nil {
		return err
	}
	if compact && t == storage.TypeSet {
		sortIntElems(all)
	}
	var items [][]byte
	var num []byte
	add := func(e *storage.Elem) {
		if o.pattern != nil && !globMatch(o.pattern, e.Member) {
			return
		}
		items = append(items, append([]byte(nil), e.Member...))
		switch t {
		case storage.TypeHash:
			items = append(items, append([]byte(nil), e.Value...))
		case storage.TypeZSet:
			if compact {
				num = appendListpackScore(num[:0], e.Score)
			} else {
				num = appendD2String(num[:0], e.Score)
			}
			items = append(items, append([]byte(nil), num...))
		}
	}
	next := uint64(0)
	if compact {
		for i := range all {
			add(&all[i])
		}
	} else {
		next, err = c.st.ScanElements(coll, cursor, int(min(o.count, storage.ScanLimit)), add)
		if err != nil {
			return err
		}
	}
	c.w.Array(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.w.Array(len(items))
	for _, it := range items {
		c.w.Bulk(it)
	}
	return nil
}

// randomCountArg parses the count of SRANDMEMBER, HRANDFIELD and
// ZRANDMEMBER as Redis does (a long in -LONG_MAX..LONG_MAX; half that with
// values or scores, whose reply is twice as long).
func randomCountArg(c *Ctx, i int, withValues bool) (int64, error) {
	v, err := c.intArg(i)
	if err != nil {
		return 0, err
	}
	if v == math.MinInt64 {
		return 0, ErrRandomCountRange
	}
	if withValues && (v < -math.MaxInt64/2 || v > math.MaxInt64/2) {
		return 0, ErrValueOutOfRange
	}
	return v, nil
}

// writeRandom writes the reply of SRANDMEMBER, HRANDFIELD and ZRANDMEMBER
// with a count: distinct elements for a positive count (at most all of
// them), |count| picks with repeats for a negative one, each with its
// value or score when with is set. Picks with repeats stream into the
// reply, which may not outgrow proto-max-bulk-len.
func (c *Ctx) writeRandom(coll *storage.Coll, count int64, with bool, second func(e *storage.Elem)) error {
	if count >= 0 {
		es, err := c.st.Sample(coll, count)
		if err != nil {
			return err
		}
		if coll.Type == storage.TypeSet {
			sortIntElems(es)
		}
		writePairs(c, es, with, second)
		return nil
	}
	if -count > maxRandomCount {
		return ErrRandomCountTooLarge
	}
	start := len(c.w.Buf)
	limit := start + int(c.a.cfg.MaxBulkLen)
	writePairsHeader(c, int(-count), with)
	tooBig := false
	err := c.st.SampleRepeats(coll, -count, func(e *storage.Elem) bool {
		writePair(c, e, with, second)
		tooBig = len(c.w.Buf) > limit
		return !tooBig
	})
	if err == nil && tooBig {
		err = ErrRandomReplyTooLarge
	}
	return err
}

// cmdRemove serves HDEL key field [field ...], SREM key member [member ...]
// and ZREM key member [member ...]: remove takes one element out of a
// collection of type t; the reply counts those that were there.
func cmdRemove(t storage.Type, remove func(st *storage.Store, coll *storage.Coll, elem []byte) (bool, error)) Handler {
	return func(c *Ctx) error {
		coll, err := c.st.OpenColl(c.db, c.args[1], t)
		if err != nil {
			return err
		}
		if coll == nil {
			c.w.Int(0)
			return nil
		}
		return c.replyCount(c.args[2:], func(e []byte) (bool, error) { return remove(c.st, coll, e) })
	}
}

// replyCount applies f to each item and replies with how many it reported
// true for (DEL, EXISTS, SADD, HDEL, SREM, ZREM).
func (c *Ctx) replyCount(items [][]byte, f func([]byte) (bool, error)) error {
	n := int64(0)
	for _, it := range items {
		ok, err := f(it)
		if err != nil {
			return err
		}
		if ok {
			n++
		}
	}
	c.w.Int(n)
	return nil
}
