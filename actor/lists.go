package actor

import (
	"bytes"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

var listCommands = registerCommands([]*Command{
	{Name: "lpush", Summary: "Inserts elements at the head of a list, creating it if needed.", Handler: cmdPush(storage.Left, orCreate)},
	{Name: "rpush", Summary: "Appends elements to the tail of a list, creating it if needed.", Handler: cmdPush(storage.Right, orCreate)},
	{Name: "lpushx", Summary: "Inserts elements at the head of a list that exists.", Handler: cmdPush(storage.Left, onlyExisting)},
	{Name: "rpushx", Summary: "Appends elements to the tail of a list that exists.", Handler: cmdPush(storage.Right, onlyExisting)},
	{Name: "lpop", Summary: "Removes and returns elements from the head of a list.", Handler: cmdPop(storage.Left)},
	{Name: "rpop", Summary: "Removes and returns elements from the tail of a list.", Handler: cmdPop(storage.Right)},
	{Name: "llen", Summary: "Returns the length of a list.", Handler: cmdLLen},
	{Name: "lrange", Summary: "Returns a range of a list's elements by index.", Handler: cmdLRange},
	{Name: "lindex", Summary: "Returns the element of a list at an index.", Handler: cmdLIndex},
	{Name: "lset", Summary: "Replaces the element of a list at an index.", Handler: cmdLSet},
	{Name: "linsert", Summary: "Inserts an element before or after the first occurrence of another.", Handler: cmdLInsert},
	{Name: "lrem", Summary: "Removes occurrences of an element from a list.", Handler: cmdLRem},
	{Name: "ltrim", Summary: "Keeps only a range of a list's elements, by index.", Handler: cmdLTrim},
	{Name: "lpos", Summary: "Returns the indexes of the elements of a list equal to a value.", Handler: cmdLPos},
	{Name: "lmove", Summary: "Moves an element from one end of a list to an end of another.", Handler: cmdLMove(endsArgs)},
	{Name: "rpoplpush", Summary: "Moves the tail element of a list to the head of another (LMOVE RIGHT LEFT).", Handler: cmdLMove(tailToHead)},
	{Name: "lmpop", Summary: "Pops elements from the first non-empty list of several.", Handler: cmdLMPop},
	{Name: "blpop", Summary: "Pops the head element of the first non-empty list, waiting for one if none has any.", Handler: cmdBPop(storage.Left)},
	{Name: "brpop", Summary: "Pops the tail element of the first non-empty list, waiting for one if none has any.", Handler: cmdBPop(storage.Right)},
	{Name: "blmove", Summary: "Moves an element between lists, waiting for the source to have one.", Handler: cmdBLMove(endsArgs)},
	{Name: "brpoplpush", Summary: "Moves the tail element of a list to the head of another, waiting for one.", Handler: cmdBLMove(tailToHead)},
	{Name: "blmpop", Summary: "Pops elements from the first non-empty list of several, waiting for one.", Handler: cmdBLMPop},
})

// The keyspace notification events of what these commands write
// (notify.go, eventSpec).
var _ = addEvents(map[string]*eventSpec{
	"lpush":      {class: notifyList, event: "lpush"},
	"lpushx":     {class: notifyList, event: "lpush"},
	"rpush":      {class: notifyList, event: "rpush"},
	"rpushx":     {class: notifyList, event: "rpush"},
	"lpop":       {class: notifyList, event: "lpop", popDel: true},
	"rpop":       {class: notifyList, event: "rpop", popDel: true},
	"blpop":      {class: notifyList, event: "lpop", popDel: true},
	"brpop":      {class: notifyList, event: "rpop", popDel: true},
	"lset":       {class: notifyList, event: "lset"},
	"linsert":    {class: notifyList, event: "linsert"},
	"lrem":       {class: notifyList, event: "lrem", popDel: true},
	"ltrim":      {class: notifyList, event: "ltrim", popDel: true},
	"lmove":      {class: notifyList, popDel: true, ends: lmoveEvents(3, 4), pushFirst: true},
	"blmove":     {class: notifyList, popDel: true, ends: lmoveEvents(3, 4), pushFirst: true},
	"rpoplpush":  {class: notifyList, popDel: true, ends: lmoveEvents(-1, -1), pushFirst: true},
	"brpoplpush": {class: notifyList, popDel: true, ends: lmoveEvents(-1, -1), pushFirst: true},
	"lmpop":      {class: notifyList, popDel: true, ends: mpopEnd(1, "lpop", "rpop", "LEFT")},
	"blmpop":     {class: notifyList, popDel: true, ends: mpopEnd(2, "lpop", "rpop", "LEFT")},
})

// Whether a push creates a missing list (LPUSH, RPUSH) or adds only to one
// that exists (LPUSHX, RPUSHX).
const (
	orCreate     = false
	onlyExisting = true
)

// LPUSH|RPUSH key element [element ...] (at end), and LPUSHX|RPUSHX
// (existing: onlyExisting).
func cmdPush(end storage.End, existing bool) Handler {
	return func(c *Ctx) error {
		key := c.args[1]
		n, err := c.st.ListPush(c.db, key, end, c.args[2:], existing)
		if err != nil {
			return err
		}
		c.w.Int(n)
		return nil
	}
}

// LPOP|RPOP key [count], popping at end.
func cmdPop(end storage.End) Handler {
	return func(c *Ctx) error {
		if len(c.args) > 3 {
			return errWrongArgs(c.cmd.Name)
		}
		withCount := len(c.args) == 3
		count := int64(1)
		if withCount {
			v, ok := parseIntOK(c.args[2])
			if !ok || v < 0 {
				return ErrCountNegative
			}
			count = v
		}
		if withCount && count == 0 {
			// Redis answers an empty array for an existing list, after the
			// usual lookup.
			n, err := c.st.ListLen(c.db, c.args[1])
			if err != nil {
				return err
			}
			if n == 0 {
				c.w.NullArray()
			} else {
				c.w.Array(0)
			}
			return nil
		}
		vals, err := c.st.ListPop(c.db, c.args[1], end, count)
		if err != nil {
			return err
		}
		switch {
		case len(vals) == 0 && withCount:
			c.w.NullArray()
		case len(vals) == 0:
			c.w.Null()
		case withCount:
			c.w.Array(len(vals))
			for _, v := range vals {
				c.w.Bulk(v)
			}
		default:
			c.w.Bulk(vals[0])
		}
		return nil
	}
}

// LLEN key
func cmdLLen(c *Ctx) error {
	n, err := c.readListLen(c.args[1])
	if err != nil {
		return err
	}
	c.w.Int(n)
	return nil
}

// readListLen is the length of the list at key, looked up to read it (a
// list is never empty, so it exists when the length is not 0).
func (c *Ctx) readListLen(key []byte) (int64, error) {
	n, err := c.st.ListLen(c.db, key)
	c.countLookup(key, n > 0, err)
	return n, err
}

// LRANGE key start stop
func cmdLRange(c *Ctx) error {
	start, stop, err := c.rangeArgs(2)
	if err != nil {
		return err
	}
	found, err := c.st.ListRange(c.db, c.args[1], start, stop, func(n int64) { c.w.Array(int(n)) }, c.w.Bulk)
	c.countLookup(c.args[1], found, err)
	return err
}

// LINDEX key index: the element LRANGE key index index selects, or null.
// Redis looks the key up before it parses the index.
func cmdLIndex(c *Ctx) error {
	idx, perr := c.intArg(2)
	if perr != nil {
		n, err := c.readListLen(c.args[1])
		if err != nil {
			return err
		}
		if n == 0 {
			c.w.Null()
			return nil
		}
		return perr
	}
	nullIfNone := func(n int64) {
		if n == 0 {
			c.w.Null()
		}
	}
	found, err := c.st.ListRange(c.db, c.args[1], idx, idx, nullIfNone, c.w.Bulk)
	c.countLookup(c.args[1], found, err)
	return err
}

// LSET key index element. Redis looks the key up before it parses the
// index.
func cmdLSet(c *Ctx) error {
	idx, perr := c.intArg(2)
	if perr != nil {
		n, err := c.st.ListLen(c.db, c.args[1])
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrNoSuchKey
		}
		return perr
	}
	if err := c.st.ListSet(c.db, c.args[1], idx, c.args[3]); err != nil {
		return err
	}
	c.w.OK()
	return nil
}

// LINSERT key BEFORE|AFTER pivot element
func cmdLInsert(c *Ctx) error {
	var before bool
	switch {
	case c.argEq(2, "before"):
		before = true
	case c.argEq(2, "after"):
	default:
		return ErrSyntax
	}
	n, err := c.st.ListInsert(c.db, c.args[1], before, c.args[3], c.args[4])
	if err != nil {
		return err
	}
	c.w.Int(n)
	return nil
}

// LREM key count element
func cmdLRem(c *Ctx) error {
	count, err := c.intArg(2)
	if err != nil {
		return err
	}
	n, err := c.st.ListRem(c.db, c.args[1], count, c.args[3])
	if err != nil {
		return err
	}
	c.w.Int(n)
	return nil
}

// LTRIM key start stop
func cmdLTrim(c *Ctx) error {
	start, stop, err := c.rangeArgs(2)
	if err != nil {
		return err
	}
	if err := c.st.ListTrim(c.db, c.args[1], start, stop); err != nil {
		return err
	}
	c.w.OK()
	return nil
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
func cmdLPos(c *Ctx) error {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(c.args); j++ {
		more := j+1 < len(c.args)
		switch {
		case c.argEq(j, "rank") && more:
			v, err := c.intArg(j + 1)
			if err != nil {
				return err
			}
			if v == 0 {
				return ErrRankZero
			}
			if v == -1<<63 {
				// Redis negates it, which overflows back to itself, and
				// every match then passes "matches >= rank": the same as
				// RANK -1.
				v = -1
			}
			rank = v
		case c.argEq(j, "count") && more:
			v, ok := parseIntOK(c.args[j+1])
			if !ok || v < 0 {
				return ErrLPosCountNegative
			}
			count = v
		case c.argEq(j, "maxlen") && more:
			v, ok := parseIntOK(c.args[j+1])
			if !ok || v < 0 {
				return ErrMaxLenNegative
			}
			maxlen = v
		default:
			return ErrSyntax
		}
		j++
	}
	limit := count
	if count == -1 {
		limit = 1
	}
	var found []int64
	exists, err := c.st.ListPos(c.db, c.args[1], c.args[2], rank, limit, maxlen, func(i int64) { found = append(found, i) })
	c.countLookup(c.args[1], exists, err)
	if err != nil {
		return err
	}
	switch {
	case count != -1:
		c.w.Array(len(found))
		for _, i := range found {
			c.w.Int(i)
		}
	case len(found) == 0:
		c.w.Null()
	default:
		c.w.Int(found[0])
	}
	return nil
}

// listEnd parses LEFT|RIGHT.
func listEnd(b []byte) (storage.End, error) {
	switch {
	case eqFold(b, "left"):
		return storage.Left, nil
	case eqFold(b, "right"):
		return storage.Right, nil
	}
	return 0, ErrSyntax
}

// moveEnds gives the ends a move takes from and puts to.
type moveEnds func(c *Ctx) (from, to storage.End, err error)

// endsArgs parses the wherefrom and whereto of LMOVE and BLMOVE.
func endsArgs(c *Ctx) (from, to storage.End, err error) {
	if from, err = listEnd(c.args[3]); err != nil {
		return
	}
	to, err = listEnd(c.args[4])
	return
}

// tailToHead is the move of RPOPLPUSH and BRPOPLPUSH: RIGHT LEFT.
func tailToHead(*Ctx) (from, to storage.End, err error) { return storage.Right, storage.Left, nil }

// moveTo is the work of LMOVE, RPOPLPUSH, BLMOVE and BRPOPLPUSH: it moves
// the element at the from end of the list at keys[0] to the to end of dst
// and replies with it. A missing source is nothing found; a destination of
// another type is WRONGTYPE, and the element stays where it was (a woken
// waiter too, as in Redis). A retry never passes over its source: it is
// the ready key, a list.
func moveTo(dst []byte, from, to storage.End) retry {
	return func(c *Ctx, keys [][]byte) (bool, error) {
		v, ok, err := c.st.ListMove(c.db, keys[0], dst, from, to)
		if err != nil || !ok {
			return false, err
		}
		c.w.Bulk(v)
		return true, nil
	}
}

// LMOVE source destination LEFT|RIGHT LEFT|RIGHT, RPOPLPUSH source destination
func cmdLMove(ends moveEnds) Handler {
	return func(c *Ctx) error {
		from, to, err := ends(c)
		if err != nil {
			return err
		}
		return c.tryOnce(c.args[1:2], moveTo(c.args[2], from, to), (*proto.Writer).Null)
	}
}

// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout,
// BRPOPLPUSH source destination timeout
func cmdBLMove(ends moveEnds) Handler {
	return func(c *Ctx) error {
		from, to, err := ends(c)
		if err != nil {
			return err
		}
		// The destination is copied: a parked waiter keeps its retry
		// past the batch.
		move := moveTo(bytes.Clone(c.args[2]), from, to)
		return c.tryOrPark(len(c.args)-1, storage.TypeList, c.args[1:2], move, (*proto.Writer).Null)
	}
}

// popList is the work of LMPOP, BLPOP, BRPOP and BLMPOP: it pops up to count
// elements at end of the first of keys that holds a list, and replies with
// reply. A key of another type met before that is WRONGTYPE, as in Redis
// (a retry passes over it).
func popList(end storage.End, count int64, reply func(w *proto.Writer, key []byte, vals [][]byte)) retry {
	return func(c *Ctx, keys [][]byte) (bool, error) {
		for _, key := range keys {
			vals, err := c.st.ListPop(c.db, key, end, count)
			switch {
			case c.passOver(err):
			case err != nil:
				return false, err
			case len(vals) > 0:
				reply(c.w, key, vals)
				return true, nil
			}
		}
		return false, nil
	}
}

// writeKeyElem is the reply of BLPOP and BRPOP: [key, element].
func writeKeyElem(w *proto.Writer, key []byte, vals [][]byte) {
	w.Array(2)
	w.Bulk(key)
	w.Bulk(vals[0])
}

// writeKeyElems is the reply of LMPOP and BLMPOP: [key, [element ...]].
func writeKeyElems(w *proto.Writer, key []byte, vals [][]byte) {
	w.Array(2)
	w.Bulk(key)
	w.Array(len(vals))
	for _, v := range vals {
		w.Bulk(v)
	}
}

// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]
func cmdLMPop(c *Ctx) error {
	keys, end, count, err := mpopArgs(c, 1, listEnd)
	if err != nil {
		return err
	}
	return c.tryOnce(keys, popList(end, count, writeKeyElems), (*proto.Writer).NullArray)
}

// BLPOP|BRPOP key [key ...] timeout, popping at end.
func cmdBPop(end storage.End) Handler {
	return func(c *Ctx) error {
		last := len(c.args) - 1
		return c.tryOrPark(last, storage.TypeList, c.args[1:last], popList(end, 1, writeKeyElem), (*proto.Writer).NullArray)
	}
}

// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]
func cmdBLMPop(c *Ctx) error {
	keys, end, count, err := mpopArgs(c, 2, listEnd)
	if err != nil {
		return err
	}
	return c.tryOrPark(1, storage.TypeList, keys, popList(end, count, writeKeyElems), (*proto.Writer).NullArray)
}
