package actor

import (
	"sort"

	"github.com/cellar-db/cellar/storage"
)

var setCommands = registerCommands([]*Command{
	{Name: "sadd", Summary: "Adds members to a set, creating it if needed.", Handler: cmdSAdd},
	{Name: "srem", Summary: "Removes members from a set.", Handler: cmdRemove(storage.TypeSet, (*storage.Store).SetRem)},
	{Name: "smembers", Summary: "Returns every member of a set.", Handler: cmdSMembers},
	{Name: "sismember", Summary: "Tells whether a value is a member of a set.", Handler: cmdSIsMember},
	{Name: "smismember", Summary: "Tells, for each of several values, whether it is a member of a set.", Handler: cmdSMIsMember},
	{Name: "scard", Summary: "Returns the number of members of a set.", Handler: cmdSCard},
	{Name: "spop", Summary: "Removes and returns random members of a set.", Handler: cmdSPop},
	{Name: "srandmember", Summary: "Returns random members of a set.", Handler: cmdSRandMember},
	{Name: "smove", Summary: "Moves a member from one set to another.", Handler: cmdSMove},
	{Name: "sinter", Summary: "Returns the intersection of sets.", Handler: cmdSetOp(setInterAll, replyResult)},
	{Name: "sintercard", Summary: "Counts the members of the intersection of sets, up to a limit.", Handler: cmdSInterCard},
	{Name: "sinterstore", Summary: "Stores the intersection of sets in a key.", Handler: cmdSetOp(setInterAll, storeResult)},
	{Name: "sunion", Summary: "Returns the union of sets.", Handler: cmdSetOp(setUnion, replyResult)},
	{Name: "sunionstore", Summary: "Stores the union of sets in a key.", Handler: cmdSetOp(setUnion, storeResult)},
	{Name: "sdiff", Summary: "Returns the members of the first set that are in none of the others.", Handler: cmdSetOp(setDiff, replyResult)},
	{Name: "sdiffstore", Summary: "Stores the difference of sets in a key.", Handler: cmdSetOp(setDiff, storeResult)},
	{Name: "sscan", Summary: "Iterates over the members of a set with a cursor.", Handler: func(c *Ctx) error { return cmdScanColl(c, storage.TypeSet) }},
})

// The keyspace notification events of what these commands write
// (notify.go, eventSpec).
var _ = addEvents(map[string]*eventSpec{
	"sadd":        {class: notifySet, event: "sadd"},
	"srem":        {class: notifySet, event: "srem", popDel: true},
	"spop":        {class: notifySet, event: "spop", popDel: true},
	"smove":       {class: notifySet, popDel: true, ends: smoveEvents},
	"sinterstore": {class: notifySet, event: "sinterstore"},
	"sunionstore": {class: notifySet, event: "sunionstore"},
	"sdiffstore":  {class: notifySet, event: "sdiffstore"},
})

// SADD key member [member ...]
func cmdSAdd(c *Ctx) error {
	s, err := c.st.OpenOrCreateColl(c.db, c.args[1], storage.TypeSet)
	if err != nil {
		return err
	}
	return c.replyCount(c.args[2:], func(m []byte) (bool, error) { return c.st.SetAdd(s, m) })
}

// SMEMBERS key
func cmdSMembers(c *Ctx) error {
	s, err := c.readColl(c.args[1], storage.TypeSet)
	if err != nil {
		return err
	}
	if s == nil {
		c.w.Set(0)
		return nil
	}
	n := int(s.Len)
	if s.Len <= intsetEntries {
		// A small set may be an intset in Redis, which lists its
		// members sorted: gather it (in the frame's arena) and see.
		buf := &c.f.elems
		defer buf.release()
		if err := c.st.Elements(s, func(e *storage.Elem) bool { buf.add(e); return true }); err != nil {
			return err
		}
		es := buf.list()
		if len(es) != n {
			return errCountMismatch(c.args[1], n, len(es))
		}
		sortIntElems(es)
		c.w.Set(n)
		for i := range es {
			c.w.Bulk(es[i].Member)
		}
		return nil
	}
	c.w.Set(n)
	written := 0
	err = c.st.Elements(s, func(e *storage.Elem) bool {
		c.w.Bulk(e.Member)
		written++
		return true
	})
	if err == nil && written != n {
		return errCountMismatch(c.args[1], n, written)
	}
	return err
}

// SISMEMBER key member
func cmdSIsMember(c *Ctx) error {
	s, err := c.readColl(c.args[1], storage.TypeSet)
	if err != nil {
		return err
	}
	ok := false
	if s != nil {
		if ok, err = c.st.SetHas(s, c.args[2]); err != nil {
			return err
		}
	}
	c.w.Int(b2i(ok))
	return nil
}

// SMISMEMBER key member [member ...]
func cmdSMIsMember(c *Ctx) error {
	s, err := c.readColl(c.args[1], storage.TypeSet)
	if err != nil {
		return err
	}
	c.w.Array(len(c.args) - 2)
	for _, m := range c.args[2:] {
		ok := false
		if s != nil {
			if ok, err = c.st.SetHas(s, m); err != nil {
				return err
			}
		}
		c.w.Int(b2i(ok))
	}
	return nil
}

// SCARD key
func cmdSCard(c *Ctx) error {
	s, err := c.readColl(c.args[1], storage.TypeSet)
	if err != nil {
		return err
	}
	if s == nil {
		c.w.Int(0)
		return nil
	}
	c.w.Int(s.Len)
	return nil
}

// sremCmd names SPOP's record (cmdSPop).
var sremCmd = []byte("SREM")

// SPOP key [count]
func cmdSPop(c *Ctx) error {
	if len(c.args) > 3 {
		return ErrSyntax
	}
	count := int64(-1)
	if len(c.args) == 3 {
		v, ok := parseIntOK(c.args[2])
		if !ok || v < 0 {
			return ErrCountNegative
		}
		count = v
	}
	s, err := c.st.OpenColl(c.db, c.args[1], storage.TypeSet)
	if err != nil {
		return err
	}
	if s == nil || count == 0 {
		if count < 0 {
			c.w.Null()
		} else {
			c.w.Set(0)
		}
		return nil
	}
	es, err := c.st.Sample(s, max(count, 1))
	if err != nil {
		return err
	}
	if int64(len(es)) >= s.Len {
		// Everything goes (listed sorted, if Redis would hold the set as
		// an intset): drop the key in one statement per table.
		sortIntElems(es)
		if _, err := c.st.Delete(c.db, c.args[1]); err != nil {
			return err
		}
	} else if err := c.st.RemoveRead(s, es); err != nil {
		return err
	}
	// The redo log and replicas get the SREM of what was popped: which
	// members a pop takes is random (effects.go).
	c.rec = make([][]byte, 0, 2+len(es))
	c.rec = append(c.rec, sremCmd, c.args[1])
	for i := range es {
		c.rec = append(c.rec, es[i].Member)
	}
	if count < 0 {
		c.w.Bulk(es[0].Member)
		return nil
	}
	c.w.Set(len(es))
	for i := range es {
		c.w.Bulk(es[i].Member)
	}
	return nil
}

// SRANDMEMBER key [count]
func cmdSRandMember(c *Ctx) error {
	if len(c.args) > 3 {
		return ErrSyntax
	}
	if len(c.args) == 2 {
		s, err := c.readColl(c.args[1], storage.TypeSet)
		if err != nil || s == nil {
			if err == nil {
				c.w.Null()
			}
			return err
		}
		es, err := c.st.Sample(s, 1)
		if err != nil {
			return err
		}
		c.w.Bulk(es[0].Member)
		return nil
	}
	count, err := randomCountArg(c, 2, false)
	if err != nil {
		return err
	}
	s, err := c.readColl(c.args[1], storage.TypeSet)
	if err != nil {
		return err
	}
	if s == nil || count == 0 {
		c.w.Array(0)
		return nil
	}
	return c.writeRandom(s, count, false, nil)
}

// SMOVE source destination member
func cmdSMove(c *Ctx) error {
	src, err := c.st.OpenColl(c.db, c.args[1], storage.TypeSet)
	if err != nil || src == nil {
		if err == nil {
			c.w.Int(0)
		}
		return err
	}
	dst, err := c.st.OpenColl(c.db, c.args[2], storage.TypeSet)
	if err != nil {
		return err
	}
	m := c.args[3]
	if dst != nil && dst.ID == src.ID {
		ok, err := c.st.SetHas(src, m)
		if err != nil {
			return err
		}
		c.w.Int(b2i(ok))
		return nil
	}
	ok, err := c.st.SetRem(src, m)
	if err != nil {
		return err
	}
	if !ok {
		c.w.Int(0)
		return nil
	}
	if dst == nil {
		if dst, err = c.st.OpenOrCreateColl(c.db, c.args[2], storage.TypeSet); err != nil {
			return err
		}
	}
	if _, err := c.st.SetAdd(dst, m); err != nil {
		return err
	}
	c.w.Int(1)
	return nil
}

// openSets opens the source sets of a set operation: nil for a missing
// key, WRONGTYPE for any key of another type (all are checked first, as
// Redis does).
func openSets(c *Ctx, keys [][]byte) ([]*storage.Coll, error) {
	sets := make([]*storage.Coll, len(keys))
	for i, k := range keys {
		s, err := c.readColl(k, storage.TypeSet)
		if err != nil {
			return nil, err
		}
		sets[i] = s
	}
	return sets, nil
}

// setInter returns the members common to every set, stopping after limit
// of them (limit <= 0: no limit). It walks the smallest set and looks each
// member up in the others.
func setInter(c *Ctx, sets []*storage.Coll, limit int64) ([][]byte, error) {
	smallest := -1
	for i, s := range sets {
		if s == nil || s.Len == 0 {
			return nil, nil
		}
		if smallest < 0 || s.Len < sets[smallest].Len {
			smallest = i
		}
	}
	cand, err := c.st.AllElements(sets[smallest])
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, e := range cand {
		in := true
		for i, s := range sets {
			if i == smallest || s.ID == sets[smallest].ID {
				continue
			}
			ok, err := c.st.SetHas(s, e.Member)
			if err != nil {
				return nil, err
			}
			if !ok {
				in = false
				break
			}
		}
		if in {
			out = append(out, e.Member)
			if limit > 0 && int64(len(out)) >= limit {
				break
			}
		}
	}
	return out, nil
}

// setDiff returns the members of the first set that are in none of the
// others.
func setDiff(c *Ctx, sets []*storage.Coll) ([][]byte, error) {
	if sets[0] == nil {
		return nil, nil
	}
	cand, err := c.st.AllElements(sets[0])
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, e := range cand {
		in := false
		for _, s := range sets[1:] {
			if s == nil {
				continue
			}
			if s.ID == sets[0].ID {
				in = true
				break
			}
			ok, err := c.st.SetHas(s, e.Member)
			if err != nil {
				return nil, err
			}
			if ok {
				in = true
				break
			}
		}
		if !in {
			out = append(out, e.Member)
		}
	}
	return out, nil
}

// setUnion returns the members of all the sets.
func setUnion(c *Ctx, sets []*storage.Coll) ([][]byte, error) {
	var out [][]byte
	seen := map[string]bool{}
	for _, s := range sets {
		if s == nil {
			continue
		}
		err := c.st.Elements(s, func(e *storage.Elem) bool {
			if !seen[string(e.Member)] {
				seen[string(e.Member)] = true
				out = append(out, append([]byte(nil), e.Member...))
			}
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// setInterAll returns the members that all the sets have.
func setInterAll(c *Ctx, sets []*storage.Coll) ([][]byte, error) { return setInter(c, sets, 0) }

// SINTER key [key ...], SUNION, SDIFF (op) and their STORE forms
// (SINTERSTORE destination key [key ...], ...).
func cmdSetOp(op func(c *Ctx, sets []*storage.Coll) ([][]byte, error), store bool) Handler {
	return func(c *Ctx) error {
		keys := c.args[1:]
		if store {
			keys = c.args[2:]
		}
		sets, err := openSets(c, keys)
		if err != nil {
			return err
		}
		members, err := op(c, sets)
		if err != nil {
			return err
		}
		if !store {
			sortIntSet(members)
			c.w.Set(len(members))
			for _, m := range members {
				c.w.Bulk(m)
			}
			return nil
		}
		dst, err := c.st.ReplaceColl(c.db, c.args[1], storage.TypeSet)
		if err != nil {
			return err
		}
		for _, m := range members {
			if _, err := c.st.SetAdd(dst, m); err != nil {
				return err
			}
		}
		c.w.Int(int64(len(members)))
		return nil
	}
}

// SINTERCARD numkeys key [key ...] [LIMIT limit]
func cmdSInterCard(c *Ctx) error {
	n, ok := parseIntOK(c.args[1])
	if !ok || n <= 0 {
		return ErrNumKeysPositive
	}
	if n > int64(len(c.args)-2) {
		return ErrNumKeysTooMany
	}
	keys := c.args[2 : 2+n]
	limit := int64(0)
	for j := 2 + int(n); j < len(c.args); j++ {
		if c.argEq(j, "limit") && j+1 < len(c.args) {
			v, ok := parseIntOK(c.args[j+1])
			if !ok || v < 0 {
				return ErrLimitNegative
			}
			limit = v
			j++
			continue
		}
		return ErrSyntax
	}
	sets, err := openSets(c, keys)
	if err != nil {
		return err
	}
	members, err := setInter(c, sets, limit)
	if err != nil {
		return err
	}
	c.w.Int(int64(len(members)))
	return nil
}

// sortIntSet puts members in the order Redis 7.0 lists an intset in —
// ascending numbers — when there are at most set-max-intset-entries of
// them and every one is an integer in canonical form (what an intset can
// hold). Other sets are hashtables in Redis, whose order is unspecified,
// and keep Cellar's.
func sortIntSet(members [][]byte) {
	if len(members) > intsetEntries {
		return
	}
	nums := make([]int64, len(members))
	for i, m := range members {
		v, ok := parseIntOK(m)
		if !ok {
			return
		}
		nums[i] = v
	}
	sort.Sort(intMembers{nums, members})
}

// intMembers sorts members by their numbers.
type intMembers struct {
	nums    []int64
	members [][]byte
}

func (s intMembers) Len() int           { return len(s.nums) }
func (s intMembers) Less(i, j int) bool { return s.nums[i] < s.nums[j] }
func (s intMembers) Swap(i, j int) {
	s.nums[i], s.nums[j] = s.nums[j], s.nums[i]
	s.members[i], s.members[j] = s.members[j], s.members[i]
}

// sortIntElems is sortIntSet for elements: it sorts es in place, by
// number, when Redis would hold them as an intset.
func sortIntElems(es []storage.Elem) {
	if len(es) > intsetEntries {
		return
	}
	nums := make([]int64, len(es))
	for i := range es {
		v, ok := parseIntOK(es[i].Member)
		if !ok {
			return
		}
		nums[i] = v
	}
	sort.Sort(intElems{nums, es})
}

type intElems struct {
	nums []int64
	es   []storage.Elem
}

func (s intElems) Len() int           { return len(s.nums) }
func (s intElems) Less(i, j int) bool { return s.nums[i] < s.nums[j] }
func (s intElems) Swap(i, j int) {
	s.nums[i], s.nums[j] = s.nums[j], s.nums[i]
	s.es[i], s.es[j] = s.es[j], s.es[i]
}
