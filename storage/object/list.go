package object

import (
	"bytes"
	"slices"
)

// End is one end of a list: Left is the head (index 0), Right the tail.
type End uint8

const (
	Left End = iota
	Right
)

// itemOverhead is what one list item costs beyond its bytes: its slice
// header in the ring (which is up to half empty), the allocator's rounding
// of the value.
const itemOverhead = 48

// minRing is the smallest ring a list with items keeps.
const minRing = 4

// List is a list's items: a ring buffer whose length is a power of two,
// so both ends and any index are O(1), and the middle operations move the
// shorter side, as Redis's quicklist does.
//
// Each item has a row in list_items at position head+index. The list
// records what SQLite holds once its last Freeze is flushed (rows saved)
// and which of those rows still hold the item now at their position (rows
// clean): a push takes the next position outward and is written, a pop
// frees its position (a later push there rewrites it), a Set rewrites one
// row, and an operation that moves items renumbers the shorter side, whose
// rows are rewritten. So a Freeze costs the rows that changed, never the
// list's length.
type List struct {
	buf  [][]byte // the ring: len(buf) is 0 or a power of two
	off  int      // buf index of item 0
	n    int
	size int64

	head int64 // row position of index 0

	// savedLo..savedHi are the rows SQLite holds once the last Freeze is
	// flushed; cleanLo..cleanHi (inside both them and the list's rows)
	// the rows whose value is still the item at their position, less the
	// positions in set, which Set gave a new item. A range whose Lo > Hi is
	// empty.
	savedLo, savedHi int64
	cleanLo, cleanHi int64
	set              map[int64]struct{}
	all              bool // every row is deleted and written at the next Freeze
}

// NewList returns an empty list with no rows (a new key).
func NewList() *List { return &List{savedHi: -1, cleanHi: -1} }

// LoadedList makes a list of items read from SQLite in position order,
// the first at position head: nothing has changed. It does not keep items.
func LoadedList(head int64, items [][]byte) *List {
	l := &List{head: head}
	if len(items) > 0 {
		l.buf = make([][]byte, ringFor(len(items)))
		copy(l.buf, items)
	}
	l.n = len(items)
	for _, v := range items {
		l.size += int64(len(v)) + itemOverhead
	}
	l.savedLo, l.savedHi = head, l.tail()
	l.cleanLo, l.cleanHi = l.savedLo, l.savedHi
	return l
}

// ringFor is the ring length for n items: a power of two, at least minRing.
func ringFor(n int) int {
	c := minRing
	for c < n {
		c <<= 1
	}
	return c
}

// Len is the number of items.
func (l *List) Len() int { return l.n }

// Size is the footprint in bytes (package doc).
func (l *List) Size() int64 { return l.size }

// tail is the row position of the last item (head-1 when empty).
func (l *List) tail() int64 { return l.head + int64(l.n) - 1 }

func (l *List) slot(i int) int { return (l.off + i) & (len(l.buf) - 1) }

func (l *List) at(i int) []byte { return l.buf[l.slot(i)] }

// resize moves the items to a ring of length c (a power of two >= n), or
// drops the ring when c is 0.
func (l *List) resize(c int) {
	var nb [][]byte
	if c > 0 {
		nb = make([][]byte, c)
		if l.n > 0 {
			a := l.off
			k := copy(nb, l.buf[a:min(a+l.n, len(l.buf))])
			copy(nb[k:l.n], l.buf)
		}
	}
	l.buf, l.off = nb, 0
}

// room makes the ring hold k more items.
func (l *List) room(k int) {
	if l.n+k > len(l.buf) {
		l.resize(ringFor(l.n + k))
	}
}

// settle follows a removal: the clean rows stay inside the list's rows,
// and a ring used under a quarter shrinks (an empty list drops it).
func (l *List) settle() {
	l.cleanLo = max(l.cleanLo, l.head)
	l.cleanHi = min(l.cleanHi, l.tail())
	switch {
	case l.n == 0:
		l.resize(0)
	case len(l.buf) > minRing && l.n < len(l.buf)/4:
		l.resize(ringFor(2 * l.n))
	}
}

// Push adds vals one after the other at end (so LPUSH a b c leaves c at
// the head) and returns the new length.
func (l *List) Push(end End, vals ...[]byte) int {
	l.room(len(vals))
	mask := len(l.buf) - 1
	for _, v := range vals {
		if end == Left {
			l.off = (l.off - 1) & mask
			l.buf[l.off] = v
			l.head--
		} else {
			l.buf[(l.off+l.n)&mask] = v
		}
		l.n++
		l.size += int64(len(v)) + itemOverhead
	}
	return l.n
}

// Pop removes up to n items from end and returns them in the order they
// were removed; nil when n <= 0 or the list is empty.
func (l *List) Pop(end End, n int) [][]byte {
	n = min(n, l.n)
	if n <= 0 {
		return nil
	}
	out := make([][]byte, n)
	for i := range out {
		if end == Left {
			out[i] = l.at(i)
		} else {
			out[i] = l.at(l.n - 1 - i)
		}
	}
	if end == Left {
		l.dropFront(n)
	} else {
		l.dropBack(n)
	}
	l.settle()
	return out
}

// dropFront removes the first k items (0 <= k <= n); the caller settles.
func (l *List) dropFront(k int) {
	for i := 0; i < k; i++ {
		s := l.slot(i)
		l.size -= int64(len(l.buf[s])) + itemOverhead
		l.buf[s] = nil
	}
	if k > 0 {
		l.off = l.slot(k)
		l.n -= k
		l.head += int64(k)
	}
}

// dropBack removes the last k items (0 <= k <= n); the caller settles.
func (l *List) dropBack(k int) {
	for i := l.n - k; i < l.n; i++ {
		s := l.slot(i)
		l.size -= int64(len(l.buf[s])) + itemOverhead
		l.buf[s] = nil
	}
	l.n -= k
}

// index resolves i (negative from the tail) to 0 <= i < Len.
func (l *List) index(i int) (int, bool) {
	if i < 0 {
		i += l.n
	}
	return i, i >= 0 && i < l.n
}

// Index returns the item at i (negative from the tail, as LINDEX).
func (l *List) Index(i int) ([]byte, bool) {
	i, ok := l.index(i)
	if !ok {
		return nil, false
	}
	return l.at(i), true
}

// Set replaces the item at i (negative from the tail, as LSET); false when
// i is outside the list.
func (l *List) Set(i int, v []byte) bool {
	i, ok := l.index(i)
	if !ok {
		return false
	}
	s := l.slot(i)
	l.size += int64(len(v) - len(l.buf[s]))
	l.buf[s] = v
	if p := l.head + int64(i); !l.all && p >= l.cleanLo && p <= l.cleanHi {
		if l.set == nil {
			l.set = make(map[int64]struct{})
		}
		l.set[p] = struct{}{}
	}
	return true
}

// Span resolves LRANGE's start and stop (negative from the tail) to the
// first index they select and how many items; n is 0 when none.
func (l *List) Span(start, stop int) (from, n int) {
	if start < 0 {
		start += l.n
	}
	if stop < 0 {
		stop += l.n
	}
	start = max(start, 0)
	if start > stop || start >= l.n {
		return 0, 0
	}
	stop = min(stop, l.n-1)
	return start, stop - start + 1
}

// Range calls fn with each item LRANGE start stop selects, head to tail,
// until it returns false.
func (l *List) Range(start, stop int, fn func(v []byte) bool) {
	from, n := l.Span(start, stop)
	for i := from; i < from+n; i++ {
		if !fn(l.at(i)) {
			return
		}
	}
}

// Ascend calls fn with each index from from (at least 0) to the tail and
// its item, until it returns false. fn must not change l.
func (l *List) Ascend(from int, fn func(i int, v []byte) bool) {
	for i := max(from, 0); i < l.n; i++ {
		if !fn(i, l.at(i)) {
			return
		}
	}
}

// Descend calls fn with each index from from (at most Len-1) to the head
// and its item, until it returns false. fn must not change l.
func (l *List) Descend(from int, fn func(i int, v []byte) bool) {
	for i := min(from, l.n-1); i >= 0; i-- {
		if !fn(i, l.at(i)) {
			return
		}
	}
}

// Insert puts v before (or after) the first item equal to pivot, as
// LINSERT, and returns the new length: -1 when pivot is not in the list.
func (l *List) Insert(before bool, pivot, v []byte) int {
	k := -1
	for i := 0; i < l.n; i++ {
		if bytes.Equal(l.at(i), pivot) {
			k = i
			break
		}
	}
	if k < 0 {
		return -1
	}
	if !before {
		k++
	}
	l.room(1)
	mask := len(l.buf) - 1
	if k < l.n-k {
		// The k items before it move one slot (and one row) left.
		l.off = (l.off - 1) & mask
		for j := 0; j < k; j++ {
			l.buf[(l.off+j)&mask] = l.buf[(l.off+j+1)&mask]
		}
		l.head--
		l.cleanLo = max(l.cleanLo, l.head+int64(k)+1)
	} else {
		// The items from k on move one right.
		for j := l.n; j > k; j-- {
			l.buf[(l.off+j)&mask] = l.buf[(l.off+j-1)&mask]
		}
		l.cleanHi = min(l.cleanHi, l.head+int64(k)-1)
	}
	l.buf[(l.off+k)&mask] = v
	l.n++
	l.size += int64(len(v)) + itemOverhead
	return l.n
}

// Rem removes items equal to v, as LREM: the first count from the head
// (count > 0), the last -count from the tail (count < 0), or all (0). It
// returns how many it removed.
func (l *List) Rem(count int, v []byte) int {
	limit := count
	if count < 0 {
		limit = -count // math.MinInt stays negative: no limit
	}
	first, last, k := -1, -1, 0
	for j := 0; j < l.n; j++ {
		i := j
		if count < 0 {
			i = l.n - 1 - j
		}
		if !bytes.Equal(l.at(i), v) {
			continue
		}
		if k == 0 {
			first, last = i, i
		}
		first, last = min(first, i), max(last, i)
		if k++; k == limit {
			break
		}
	}
	if k == 0 {
		return 0
	}
	// The removed items are exactly the matches in first..last; the
	// survivors on the shorter side close the gaps.
	if l.n-k-first <= last-k+1 {
		w := first
		for j := first; j < l.n; j++ {
			x := l.at(j)
			if j <= last && bytes.Equal(x, v) {
				l.size -= int64(len(x)) + itemOverhead
				continue
			}
			l.buf[l.slot(w)] = x
			w++
		}
		for j := w; j < l.n; j++ {
			l.buf[l.slot(j)] = nil
		}
		l.n = w
		l.cleanHi = min(l.cleanHi, l.head+int64(first)-1)
	} else {
		w := last
		for j := last; j >= 0; j-- {
			x := l.at(j)
			if j >= first && bytes.Equal(x, v) {
				l.size -= int64(len(x)) + itemOverhead
				continue
			}
			l.buf[l.slot(w)] = x
			w--
		}
		for j := 0; j < k; j++ {
			l.buf[l.slot(j)] = nil
		}
		l.off = l.slot(k)
		l.n -= k
		l.head += int64(k)
		l.cleanLo = max(l.cleanLo, l.head+int64(last-k)+1)
	}
	l.settle()
	return k
}

// Trim keeps only the items LRANGE start stop selects, as LTRIM; none
// selected empties the list.
func (l *List) Trim(start, stop int) {
	from, n := l.Span(start, stop)
	if n == 0 {
		l.dropFront(l.n)
	} else {
		l.dropBack(l.n - from - n)
		l.dropFront(from)
	}
	l.settle()
}

// Pos finds items equal to v as LPOS does and calls fn with each match's
// index, in scan order: rank > 0 skips the first rank-1 matches from the
// head, rank < 0 (above math.MinInt) scans from the tail and skips the
// first -rank-1; at most limit matches (all when 0); only the first maxlen
// items scanned are compared (all when 0). rank must not be 0.
func (l *List) Pos(v []byte, rank, limit, maxlen int, fn func(i int)) {
	skip := rank - 1
	if rank < 0 {
		skip = -rank - 1
	}
	scan := l.n
	if maxlen > 0 {
		scan = min(scan, maxlen)
	}
	found := 0
	for j := 0; j < scan; j++ {
		i := j
		if rank < 0 {
			i = l.n - 1 - j
		}
		if !bytes.Equal(l.at(i), v) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		fn(i)
		if found++; found == limit {
			return
		}
	}
}

// PosRange is the row positions Lo..Hi, both included.
type PosRange struct{ Lo, Hi int64 }

// ListRun is rows to write at consecutive positions: Vals[i] at Pos+i.
type ListRun struct {
	Pos  int64
	Vals [][]byte
}

// ListDelta is what changed in a list between two Freezes, for the flush
// to write: when All, every row of the list is deleted first; then the
// rows in Del are deleted and those in Put written (inserted, or replacing
// the row at their position). Both are ascending and disjoint. Applied to
// what SQLite held after the previous Freeze's Delta, it leaves the list
// as it was at this Freeze, at contiguous positions. A ListDelta is the
// flush's: the actor never changes what it holds.
type ListDelta struct {
	All bool
	Del []PosRange
	Put []ListRun
}

// Changed reports whether anything changed since the last Freeze.
func (l *List) Changed() bool {
	lo, hi := l.head, l.tail()
	return l.all || len(l.set) > 0 || !sameRange(l.savedLo, l.savedHi, lo, hi) || !sameRange(l.cleanLo, l.cleanHi, lo, hi)
}

// sameRange reports whether a..b and c..d hold the same positions.
func sameRange(a, b, c, d int64) bool {
	if a > b || c > d {
		return a > b && c > d
	}
	return a == c && b == d
}

// Freeze returns what changed since the last Freeze and starts recording
// afresh. It costs the rows to write and delete: the items pushed, set or
// moved since, never the list's length (but for a Rewrite, which writes
// every row).
func (l *List) Freeze() *ListDelta {
	d := &ListDelta{All: l.all}
	lo, hi := l.head, l.tail()
	if !l.all && l.savedLo <= l.savedHi {
		// The rows saved outside the list's: [savedLo, lo-1] and
		// [hi+1, savedHi] (for an empty list they split the saved rows).
		if l.savedLo < lo {
			d.Del = append(d.Del, PosRange{l.savedLo, min(l.savedHi, lo-1)})
		}
		if l.savedHi > hi {
			d.Del = append(d.Del, PosRange{max(l.savedLo, hi+1), l.savedHi})
		}
	}
	if l.all || l.cleanLo > l.cleanHi {
		l.run(d, lo, hi)
	} else {
		l.run(d, lo, l.cleanLo-1)
		l.runSet(d)
		l.run(d, l.cleanHi+1, hi)
	}
	l.savedLo, l.savedHi = lo, hi
	l.cleanLo, l.cleanHi = lo, hi
	l.set, l.all = nil, false
	return d
}

// run adds the items at positions lo..hi (none when lo > hi) to d.Put.
func (l *List) run(d *ListDelta, lo, hi int64) {
	if lo > hi {
		return
	}
	i := int(lo - l.head)
	vals := make([][]byte, hi-lo+1)
	s := l.slot(i)
	k := copy(vals, l.buf[s:min(s+len(vals), len(l.buf))])
	copy(vals[k:], l.buf)
	d.Put = append(d.Put, ListRun{Pos: lo, Vals: vals})
}

// runSet adds the items Set replaced in the clean rows to d.Put, adjacent
// positions in one run.
func (l *List) runSet(d *ListDelta) {
	if len(l.set) == 0 {
		return
	}
	ps := make([]int64, 0, len(l.set))
	for p := range l.set {
		if p >= l.cleanLo && p <= l.cleanHi {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	for _, p := range ps {
		v := l.at(int(p - l.head))
		if n := len(d.Put); n > 0 && d.Put[n-1].Pos+int64(len(d.Put[n-1].Vals)) == p {
			d.Put[n-1].Vals = append(d.Put[n-1].Vals, v)
		} else {
			d.Put = append(d.Put, ListRun{Pos: p, Vals: [][]byte{v}})
		}
	}
}

// Rewrite makes the next Freeze delete every row and write every item (rows
// whose state is unknown). That Freeze copies every item's slice header.
func (l *List) Rewrite() { l.all, l.set = true, nil }
