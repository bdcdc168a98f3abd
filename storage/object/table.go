package object

import (
	"math/bits"
	"math/rand/v2"
)

// table is a large set's elements by name and in storage order at once:
// an ordered linear-probing hash table. An element's first slot (its home)
// is its H scaled to the table's size, so homes rise with H; an insert
// that finds its home taken walks on past the smaller elements and shifts
// the larger ones of the run up by one slot. The slots then hold the
// elements sorted by (H, Name), each at or after its home with no empty
// slot between, so one array serves a lookup by name (a probe from the
// home, comparing Hs before any name), HSCAN's walk from a cursor (from
// the cursor's home) and a random pick (a random slot). It replaced a map
// by name beside a B-tree in storage order: one structure to change on a
// write instead of two, and at a million elements 29 bytes an element
// instead of 80 (a node is 80 more either way).
//
// Like the key table (storage/keytable.go) it is an extendible hash, so
// that growing never moves more than tshardMax slots at once: a directory
// indexed by the top depth bits of an element's H points at shards, each
// an ordered table of the Hs that share its top bits. Directory order is H
// order, so a walk goes through the shards in turn. A shard that fills to
// 13/16 is rebuilt at the size that holds its elements at 9/16, and past
// tshardMax slots splits in two by the next bit of H.
//
// H is not seeded (it is the file format's): names crafted to share the
// top bits of their H gather in one shard and one run, and a write there
// walks the run, as a B-tree would not. Redis's seeded dict hash has no
// such case.
type table struct {
	dir     []*tshard
	depth   uint // len(dir) == 1<<depth
	n       int  // elements held
	perSpan int  // pick's bound on a shard's slots per directory entry; 0: to compute
}

// tshard is one shard: base home slots and a spare tail that an element
// pushed past the last home slot moves into (slots never wrap, so that
// they stay sorted).
type tshard struct {
	depth  uint   // the top bits of H its elements share
	prefix uint64 // those bits
	n      int
	base   int
	slots  []slot
}

// slot is an element's H beside its node; p is nil in an empty slot.
type slot struct {
	h int64
	p *node
}

const (
	tshardMax = 4096
	// tdepthMax bounds the directory at 64 K entries: past it, a shard of
	// Hs that share their top bits grows past tshardMax instead.
	tdepthMax = 16
)

// spare is the tail of a shard with base home slots.
func spare(base int) int { return 8 + base/16 }

// hbits is H as 64 uniform bits (an H is 63).
func hbits(h int64) uint64 { return uint64(h) << 1 }

// home is the first slot of hash h in s: the bits of H after the shard's
// prefix, scaled to base.
func (s *tshard) home(h int64) int {
	hi, _ := bits.Mul64(hbits(h)<<s.depth, uint64(s.base))
	return int(hi)
}

func (t *table) shardOf(h int64) *tshard {
	return t.dir[hbits(h)>>(64-t.depth)] // a shift by 64 is 0: depth 0 has one shard
}

// before reports whether the element in sl sorts before (h, name).
func (sl *slot) before(h int64, name string) bool {
	return sl.h < h || sl.h == h && sl.p.Name < name
}

// newTable makes a table of els, which are in storage order.
func newTable(els []slot) *table {
	t := &table{}
	for len(els)>>t.depth > tshardMax*9/16 && t.depth < tdepthMax {
		t.depth++
	}
	t.dir = make([]*tshard, 1<<t.depth)
	lo := 0
	for i := range t.dir {
		hi := lo
		for hi < len(els) && int(hbits(els[hi].h)>>(64-t.depth)) == i {
			hi++
		}
		t.dir[i] = buildShard(t.depth, uint64(i), els[lo:hi], 0)
		lo = hi
	}
	t.n = len(els)
	return t
}

// tslotsFor is the base a shard of n elements is built at: n at 9/16 of
// it.
func tslotsFor(n int) int { return max(n*16/9+1, 8) }

// buildShard makes a shard of depth holding els, in storage order, of
// at least base home slots.
func buildShard(depth uint, prefix uint64, els []slot, base int) *tshard {
	for base = max(base, tslotsFor(len(els))); ; base += base / 4 {
		if s := placeShard(depth, prefix, base, els); s != nil {
			return s
		}
	}
}

// placeShard lays els out in a shard of base home slots, or returns nil
// if they run past its spare tail.
func placeShard(depth uint, prefix uint64, base int, els []slot) *tshard {
	s := &tshard{depth: depth, prefix: prefix, n: len(els), base: base, slots: make([]slot, base+spare(base))}
	next := 0
	for _, sl := range els {
		i := max(s.home(sl.h), next)
		if i >= len(s.slots) {
			return nil
		}
		s.slots[i] = sl
		next = i + 1
	}
	return s
}

// find is where (h, name) is in the table: its shard and slot, and
// whether the element is there; if not, the slot it is to be inserted at.
func (t *table) find(h int64, name string) (*tshard, int, bool) {
	s := t.shardOf(h)
	i := s.home(h)
	for ; i < len(s.slots); i++ {
		sl := &s.slots[i]
		if sl.p == nil || !sl.before(h, name) {
			return s, i, sl.p != nil && sl.h == h && sl.p.Name == name
		}
	}
	return s, i, false
}

// get is the node named name, of hash h, or nil.
func (t *table) get(h int64, name string) *node {
	if s, i, ok := t.find(h, name); ok {
		return s.slots[i].p
	}
	return nil
}

// insert adds p, whose name the table does not hold, at the slot find
// gave for it.
func (t *table) insert(s *tshard, i int, p *node) {
	j := i
	for j < len(s.slots) && s.slots[j].p != nil {
		j++
	}
	if j == len(s.slots) || (s.n+1)*16 > s.base*13 {
		t.grow(s, j == len(s.slots))
		s, i, _ = t.find(p.H, p.Name)
		t.insert(s, i, p)
		return
	}
	copy(s.slots[i+1:j+1], s.slots[i:j])
	s.slots[i] = slot{p.H, p}
	s.n++
	t.n++
}

// remove takes out the element at slot i of s, shifting the rest of its
// run down towards their homes.
func (t *table) remove(s *tshard, i int) {
	for i+1 < len(s.slots) {
		next := s.slots[i+1]
		if next.p == nil || s.home(next.h) > i {
			break
		}
		s.slots[i] = next
		i++
	}
	s.slots[i] = slot{}
	s.n--
	t.n--
	if s.n*8 < s.base && s.base > 64 {
		t.rebuild(buildShard(s.depth, s.prefix, s.elems(nil), 0))
	}
}

// grow rebuilds s at the size its elements and one more fill to 9/16
// (a quarter larger than now when its tail overflowed), or splits it in
// two by the next bit of H once that is past tshardMax.
func (t *table) grow(s *tshard, tail bool) {
	els := s.elems(nil)
	base := tslotsFor(s.n + 1)
	if tail {
		base = max(base, s.base+s.base/4)
	}
	if base <= tshardMax || s.depth == tdepthMax {
		t.rebuild(buildShard(s.depth, s.prefix, els, base))
		return
	}
	if s.depth == t.depth {
		dir := make([]*tshard, 2*len(t.dir))
		for i, d := range t.dir {
			dir[2*i], dir[2*i+1] = d, d
		}
		t.dir, t.depth = dir, t.depth+1
	}
	cut := 0
	for cut < len(els) && hbits(els[cut].h)<<s.depth>>63 == 0 {
		cut++
	}
	t.rebuild(buildShard(s.depth+1, 2*s.prefix, els[:cut], 0))
	t.rebuild(buildShard(s.depth+1, 2*s.prefix+1, els[cut:], 0))
}

// rebuild puts shard s in the directory entries of its prefix.
func (t *table) rebuild(s *tshard) {
	span := 1 << (t.depth - s.depth)
	first := int(s.prefix) * span
	for i := first; i < first+span; i++ {
		t.dir[i] = s
	}
	t.perSpan = 0
}

// elems appends s's elements to dst, in order.
func (s *tshard) elems(dst []slot) []slot {
	for _, sl := range s.slots {
		if sl.p != nil {
			dst = append(dst, sl)
		}
	}
	return dst
}

// ascend calls fn with every node of H >= from, in storage order, until
// it returns false.
func (t *table) ascend(from int64, fn func(p *node) bool) {
	d := hbits(from) >> (64 - t.depth)
	i := t.dir[d].home(from)
	for d < uint64(len(t.dir)) {
		s := t.dir[d]
		for ; i < len(s.slots); i++ {
			if sl := s.slots[i]; sl.p != nil && sl.h >= from && !fn(sl.p) {
				return
			}
		}
		span := uint64(1) << (t.depth - s.depth)
		d, i = (d/span+1)*span, 0
	}
}

// pick is a node chosen uniformly among the table's, for which ok holds,
// or nil after tries attempts: a slot chosen uniformly among every
// shard's, retried while empty or not ok. A shard of span directory
// entries is chosen with span's odds and its slot out of span*perSpan, so
// that every slot of every shard has the same odds.
func (t *table) pick(tries int, ok func(p *node) bool) *node {
	if t.perSpan == 0 {
		for _, s := range t.dir {
			span := 1 << (t.depth - s.depth)
			t.perSpan = max(t.perSpan, (len(s.slots)+span-1)/span)
		}
	}
	for range tries {
		s := t.dir[rand.IntN(len(t.dir))]
		i := rand.IntN(t.perSpan << (t.depth - s.depth))
		if i < len(s.slots) && s.slots[i].p != nil && ok(s.slots[i].p) {
			return s.slots[i].p
		}
	}
	return nil
}
