package actor

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/cellar-db/cellar/storage"
)

var sortCommands = registerCommands([]*Command{
	{Name: "sort", Summary: "Sorts the elements of a list, set or sorted set, optionally by other keys, and returns or stores them.", Handler: cmdSort, getKeys: func(argv [][]byte) []foundKey { return sortKeys(argv, true) }},
	{Name: "sort_ro", Summary: "Sorts the elements of a list, set or sorted set, optionally by other keys, and returns them.", Handler: cmdSortRO, getKeys: func(argv [][]byte) []foundKey { return sortKeys(argv, false) }},
})

var _ = addEvents(map[string]*eventSpec{
	"sort": {class: notifyList, event: "sortstore"},
})

// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
// [ALPHA] [STORE destination]
func cmdSort(c *Ctx) error { return sortGeneric(c, false) }

// SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern ...]
// [ASC|DESC] [ALPHA]
func cmdSortRO(c *Ctx) error { return sortGeneric(c, true) }

// sortItem is one element being sorted and what it sorts by.
type sortItem struct {
	elem  []byte
	score float64
	by    []byte // ALPHA with BY: the pattern's value (nil when missing)
}

func sortGeneric(c *Ctx, readOnly bool) error {
	var desc, alpha, dontSort bool
	var by, store []byte
	var gets [][]byte
	limitStart, limitCount := int64(0), int64(-1)
	full, knownFull := false, false
	fullRead := func() bool { // Redis's user_has_full_key_access
		if !knownFull {
			full, knownFull = c.canReadAnyKey(), true
		}
		return full
	}
	for j := 2; j < len(c.args); j++ {
		left := len(c.args) - j - 1
		switch {
		case c.argEq(j, "ASC"):
			desc = false
		case c.argEq(j, "DESC"):
			desc = true
		case c.argEq(j, "ALPHA"):
			alpha = true
		case c.argEq(j, "LIMIT") && left >= 2:
			var err error
			if limitStart, err = c.intArg(j + 1); err != nil {
				return err
			}
			if limitCount, err = c.intArg(j + 2); err != nil {
				return err
			}
			j += 2
		case !readOnly && c.argEq(j, "STORE") && left >= 1:
			store = c.args[j+1]
			j++
		case c.argEq(j, "BY") && left >= 1:
			by = c.args[j+1]
			dontSort = bytes.IndexByte(by, '*') < 0
			if !dontSort && !fullRead() {
				return ErrSortByACL // the pattern reads keys the line does not name
			}
			j++
		case c.argEq(j, "GET") && left >= 1:
			if !fullRead() {
				return ErrSortGetACL
			}
			gets = append(gets, c.args[j+1])
			j++
		default:
			return ErrSyntax
		}
	}
	key := c.args[1]
	m, found, err := c.readKey(key)
	if err != nil {
		return err
	}
	t := m.Type
	if found && t != storage.TypeList && t != storage.TypeSet && t != storage.TypeZSet {
		return ErrWrongType
	}
	if !found {
		t = storage.TypeList
	}
	if dontSort && t == storage.TypeSet && (store != nil || c.a.inScript()) {
		// A set's order is its own: for a stored result or a script's,
		// sort it so that replicas and replays agree (as Redis does).
		dontSort, alpha, by = false, true, nil
	}
	n, err := c.sortLen(key, t, found)
	if err != nil {
		return err
	}
	start := max(limitStart, 0)
	end := n - 1
	if limitCount >= 0 {
		end = start + limitCount - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	end = min(end, n-1)

	var items []sortItem
	switch {
	case !found:
	case dontSort && (t == storage.TypeList || t == storage.TypeZSet):
		// Native order: read just the range.
		if end >= start {
			if items, err = c.sortRange(key, t, n, start, end, desc); err != nil {
				return err
			}
		}
		end -= start
		start = 0
	default:
		if items, err = c.sortLoad(key, t); err != nil {
			return err
		}
	}

	if !dontSort {
		convErr := false
		for i := range items {
			it := &items[i]
			val := it.elem
			if by != nil {
				v, ok, err := c.lookupPattern(by, it.elem)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				val = v
			}
			if alpha {
				if by != nil {
					it.by = val
				}
			} else if f, ok := sortScore(val); ok {
				it.score = f
			} else {
				convErr = true
			}
		}
		if convErr {
			return ErrSortNotDouble
		}
		cmp := sortCompare(alpha, by != nil, store != nil)
		if desc {
			slices.SortStableFunc(items, func(a, b sortItem) int { return -cmp(&a, &b) })
		} else {
			slices.SortStableFunc(items, func(a, b sortItem) int { return cmp(&a, &b) })
		}
	}

	count := end - start + 1
	if count < 0 {
		count = 0
	}
	if len(gets) > 0 {
		count *= int64(len(gets))
	}
	if store == nil {
		c.w.Array(int(count))
		for j := start; j <= end; j++ {
			elem := items[j].elem
			if len(gets) == 0 {
				c.w.Bulk(elem)
			}
			for _, g := range gets {
				v, ok, err := c.lookupPattern(g, elem)
				if err != nil {
					return err
				}
				c.bulkOrNull(v, ok)
			}
		}
		return nil
	}
	vals := make([][]byte, 0, count)
	for j := start; j <= end; j++ {
		elem := items[j].elem
		if len(gets) == 0 {
			vals = append(vals, elem)
		}
		for _, g := range gets {
			v, _, err := c.lookupPattern(g, elem)
			if err != nil {
				return err
			}
			if v == nil {
				v = []byte{}
			}
			vals = append(vals, v)
		}
	}
	if len(vals) > 0 {
		err = c.st.ListReplace(c.db, store, vals)
	} else {
		_, err = c.st.Delete(c.db, store)
	}
	if err != nil {
		return err
	}
	c.w.Int(int64(len(vals)))
	return nil
}

// sortLen is the number of elements of the key to sort.
func (c *Ctx) sortLen(key []byte, t storage.Type, found bool) (int64, error) {
	if !found {
		return 0, nil
	}
	if t == storage.TypeList {
		return c.st.ListLen(c.db, key)
	}
	coll, err := c.st.OpenAnyColl(c.db, key, t)
	if err != nil || coll == nil {
		return 0, err
	}
	return coll.Len, nil
}

// sortRange reads elements start..end (0-based, inclusive, counted from
// the end when desc) of a list or sorted set in their own order.
func (c *Ctx) sortRange(key []byte, t storage.Type, n, start, end int64, desc bool) ([]sortItem, error) {
	items := make([]sortItem, 0, end-start+1)
	add := func(v []byte) { items = append(items, sortItem{elem: append([]byte(nil), v...)}) }
	if t == storage.TypeList {
		lo, hi := start, end
		if desc {
			lo, hi = n-1-end, n-1-start
		}
		if _, err := c.st.ListRange(c.db, key, lo, hi, func(int64) {}, add); err != nil {
			return nil, err
		}
		if desc {
			slices.Reverse(items)
		}
		return items, nil
	}
	coll, err := c.st.OpenAnyColl(c.db, key, t)
	if err != nil || coll == nil {
		return nil, err
	}
	r := storage.ZRange{Kind: storage.ZByRank, Rev: desc, Start: start, Stop: end}
	err = c.st.ZRangeElems(coll, r, func(e *storage.Elem) bool { add(e.Member); return true })
	return items, err
}

// sortLoad reads every element of the key to sort.
func (c *Ctx) sortLoad(key []byte, t storage.Type) ([]sortItem, error) {
	var items []sortItem
	add := func(v []byte) { items = append(items, sortItem{elem: append([]byte(nil), v...)}) }
	if t == storage.TypeList {
		_, err := c.st.ListRange(c.db, key, 0, -1, func(int64) {}, add)
		return items, err
	}
	coll, err := c.st.OpenAnyColl(c.db, key, t)
	if err != nil || coll == nil {
		return nil, err
	}
	err = c.st.Elements(coll, func(e *storage.Elem) bool { add(e.Member); return true })
	return items, err
}

// lookupPattern is Redis's lookupKeyByPattern: "#" is the element itself;
// otherwise the first '*' of pattern is replaced by elem to name a string
// key, or, with "->field" after the '*', a hash key and its field. ok is
// false when there is no such value (also for a key of another type).
func (c *Ctx) lookupPattern(pattern, elem []byte) (v []byte, ok bool, err error) {
	if len(pattern) == 1 && pattern[0] == '#' {
		return elem, true, nil
	}
	star := bytes.IndexByte(pattern, '*')
	if star < 0 {
		return nil, false, nil
	}
	var field []byte
	keyEnd := len(pattern)
	if f := bytes.Index(pattern[star+1:], []byte("->")); f >= 0 && star+1+f+2 < len(pattern) {
		keyEnd = star + 1 + f
		field = pattern[keyEnd+2:]
	}
	key := make([]byte, 0, keyEnd-1+len(elem))
	key = append(append(append(key, pattern[:star]...), elem...), pattern[star+1:keyEnd]...)
	if field == nil {
		v, ok, err = c.getString(key)
	} else {
		var coll *storage.Coll
		coll, err = c.readColl(key, storage.TypeHash)
		if err == nil && coll != nil {
			v, ok, err = c.st.HashGet(coll, field, nil)
		}
	}
	if errors.Is(err, storage.ErrWrongType) {
		return nil, false, nil
	}
	return v, ok, err
}

// sortCompare is Redis's sortCompare (before DESC reverses it): numbers,
// equal ones by their elements' bytes; or ALPHA by the elements or the BY
// values (missing ones first). Without STORE, Redis compares ALPHA keys
// with strcoll, which in the C locale is the bytes up to the first NUL.
func sortCompare(alpha, byPattern, store bool) func(a, b *sortItem) int {
	text := bytes.Compare
	if !store {
		text = func(a, b []byte) int { return bytes.Compare(cutNUL(a), cutNUL(b)) }
	}
	switch {
	case !alpha:
		return func(a, b *sortItem) int {
			switch {
			case a.score > b.score:
				return 1
			case a.score < b.score:
				return -1
			}
			return bytes.Compare(a.elem, b.elem)
		}
	case byPattern:
		return func(a, b *sortItem) int {
			switch {
			case a.by == nil && b.by == nil:
				return 0
			case a.by == nil:
				return -1
			case b.by == nil:
				return 1
			}
			return text(a.by, b.by)
		}
	}
	return func(a, b *sortItem) int { return text(a.elem, b.elem) }
}

// sortScore parses a value to sort by as Redis does with strtod: leading
// white space allowed, the rest must be a number (read up to a NUL byte),
// not NaN, not out of a double's range; an empty value is 0.
func sortScore(b []byte) (float64, bool) {
	b = cutNUL(b)
	if len(b) == 0 {
		return 0, true // strtod reads nothing and stops at the end
	}
	for len(b) > 0 && isCSpace(b[0]) {
		b = b[1:]
	}
	s := string(b)
	body := s
	if len(body) > 0 && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	if len(body) == 0 || bytes.ContainsAny(b, "_") {
		return 0, false
	}
	if len(body) > 1 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		if !bytes.ContainsAny([]byte(body), "pP") {
			s += "p0"
		}
	} else if bytes.ContainsAny([]byte(body), "xXpP") {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	if f != 0 && math.Abs(f) < 0x1p-1022 {
		return 0, false // strtod's underflow (ERANGE)
	}
	if f == 0 && nonZeroMantissa(body) {
		return 0, false // a non-zero number that underflowed to zero
	}
	return f, true
}

// nonZeroMantissa reports whether a number's digits before its exponent
// are not all zero.
func nonZeroMantissa(s string) bool {
	hex := len(s) > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')
	if hex {
		s = s[2:]
	}
	for _, c := range s {
		switch {
		case hex && (c == 'p' || c == 'P'), !hex && (c == 'e' || c == 'E'):
			return false
		case c != '0' && c != '.':
			return true
		}
	}
	return false
}

// sortKeys finds SORT's keys as Redis's sortGetKeys does (its key specs
// cannot: STORE may come anywhere): the key sorted and, for SORT, the last
// STORE's destination, skipping the arguments of LIMIT, GET and BY.
func sortKeys(argv [][]byte, store bool) []foundKey {
	keys := []foundKey{{pos: 1, flags: []string{"RO", "ACCESS"}}}
	dest := 0
	for i := 2; i < len(argv) && store; i++ {
		switch {
		case eqFold(argv[i], "LIMIT"):
			i += 2
		case eqFold(argv[i], "GET"), eqFold(argv[i], "BY"):
			i++
		case eqFold(argv[i], "STORE") && i+1 < len(argv):
			dest = i + 1
		}
	}
	if dest > 0 {
		keys = append(keys, foundKey{pos: dest, flags: []string{"OW", "UPDATE"}})
	}
	return keys
}
