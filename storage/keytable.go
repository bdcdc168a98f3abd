package storage

import (
	"hash/maphash"
	"math/rand/v2"
)

// keyTable is a database's index of the entries memory holds, by name. A
// Go map[string]*entry spent about 53 bytes a key on its slots (a string
// header and a pointer each, half empty after it doubles); this table
// keeps one pointer and one tag byte a slot, 11 to 16 bytes a key.
//
// It is an extendible hash: a directory, indexed by the top depth bits of
// a key's hash, points at shards of linear-probing slots indexed by the
// low 32 bits scaled to the shard's size. A shard that fills to 13/16 is
// rebuilt at the size that holds its entries at 9/16 (any multiple of 8:
// not a power of two, whose doubling leaves a table under half full), up
// to shardMax slots, and past that splits in two by the next bit of the
// hash, so growing never rehashes more than shardMax entries at once (no
// pause that grows with the keyspace), as Go's own maps grow by table.
// Deleted slots keep a tombstone until the shard is rebuilt.
type keyTable struct {
	seed  maphash.Seed
	dir   []*keyShard
	depth uint // len(dir) == 1<<depth
	n     int
}

// keyShard is a run of slots, a multiple of 8: tags[i] is 0 (empty),
// tombstone, or the key's tag (its top bit set) with ents[i] the entry.
type keyShard struct {
	depth uint // the hash bits its keys share: it spans 1<<(t.depth-depth) directory slots
	n     int  // entries
	dead  int  // tombstones
	tags  []uint8
	ents  []*entry
}

const (
	shardMin  = 8
	shardMax  = 4096
	tombstone = 1
)

func newKeyTable() *keyTable {
	return &keyTable{seed: maphash.MakeSeed(), dir: []*keyShard{newKeyShard(0, shardMin)}}
}

func newKeyShard(depth uint, slots int) *keyShard {
	return &keyShard{depth: depth, tags: make([]uint8, slots), ents: make([]*entry, slots)}
}

// slotsFor is the size a shard of n entries is built at: n at 9/16 of it,
// rounded up to a multiple of 8, within [shardMin, shardMax].
func slotsFor(n int) int {
	return min(max((n*16/9+8)&^7, shardMin), shardMax)
}

// home is the first slot of hash h's probe sequence: its low 32 bits
// scaled to the shard's size.
func (s *keyShard) home(h uint64) uint64 {
	return uint64(uint32(h)) * uint64(len(s.tags)) >> 32
}

// next is the slot after i, wrapping.
func (s *keyShard) next(i uint64) uint64 {
	if i++; i == uint64(len(s.tags)) {
		return 0
	}
	return i
}

func (t *keyTable) hash(k string) uint64 { return maphash.String(t.seed, k) }

// tagOf is the byte a slot keeps of h: bits the slot's index and the
// directory do not already fix, with the top bit set.
func tagOf(h uint64) uint8 { return uint8((h*0x9E3779B97F4A7C15)>>57) | 0x80 }

// shardOf is the shard for hash h (a shift by 64 is 0 in Go: depth 0
// has one shard).
func (t *keyTable) shardOf(h uint64) *keyShard { return t.dir[h>>(64-t.depth)] }

// len is how many entries the table holds.
func (t *keyTable) len() int { return t.n }

// get is the entry named k, or nil.
func (t *keyTable) get(k string) *entry {
	if s, i := t.find(k); s != nil {
		return s.ents[i]
	}
	return nil
}

// find is the shard and slot of the entry named k (nil if there is none).
func (t *keyTable) find(k string) (*keyShard, uint64) {
	h := t.hash(k)
	s := t.shardOf(h)
	tag := tagOf(h)
	for i := s.home(h); ; i = s.next(i) {
		switch s.tags[i] {
		case 0:
			return nil, 0
		case tag:
			if s.ents[i].key() == k {
				return s, i
			}
		}
	}
}

// put adds e, whose name the table does not hold.
func (t *keyTable) put(e *entry) {
	h := t.hash(e.key())
	s := t.shardOf(h)
	if (s.n+s.dead+1)*16 > len(s.tags)*13 {
		t.grow(s)
		s = t.shardOf(h)
	}
	s.insert(h, e)
	t.n++
}

// insert places e in the first free slot of its probe sequence (the table
// does not hold its name, so a tombstone can be reused).
func (s *keyShard) insert(h uint64, e *entry) {
	i := s.home(h)
	for s.tags[i] >= 0x80 {
		i = s.next(i)
	}
	if s.tags[i] == tombstone {
		s.dead--
	}
	s.tags[i], s.ents[i] = tagOf(h), e
	s.n++
}

// del removes the entry named k; it reports whether there was one.
func (t *keyTable) del(k string) bool {
	s, i := t.find(k)
	if s == nil {
		return false
	}
	s.tags[i], s.ents[i] = tombstone, nil
	s.n--
	s.dead++
	t.n--
	return true
}

// grow makes room in s: rebuilt at the size for its entries (which drops
// the tombstones) while it is smaller than shardMax or tombstones fill
// it, else split in two.
func (t *keyTable) grow(s *keyShard) {
	switch {
	case s.dead >= len(s.tags)/4 || len(s.tags) < shardMax:
		s.rebuild(t, slotsFor(s.n+1))
	default:
		t.split(s)
	}
}

// rebuild rehashes s into slots slots.
func (s *keyShard) rebuild(t *keyTable, slots int) {
	old := s.ents
	oldTags := s.tags
	s.tags, s.ents, s.n, s.dead = make([]uint8, slots), make([]*entry, slots), 0, 0
	for i, e := range old {
		if oldTags[i] >= 0x80 {
			s.insert(t.hash(e.key()), e)
		}
	}
}

// split replaces s by two shards one hash bit deeper, doubling the
// directory first when s is as deep as it.
func (t *keyTable) split(s *keyShard) {
	if s.depth == t.depth {
		dir := make([]*keyShard, 2*len(t.dir))
		for i, d := range t.dir {
			dir[2*i], dir[2*i+1] = d, d
		}
		t.dir, t.depth = dir, t.depth+1
	}
	bit := uint64(1) << (63 - s.depth)
	hashes := make([]uint64, len(s.ents))
	high := 0
	for i, e := range s.ents {
		if s.tags[i] >= 0x80 {
			hashes[i] = t.hash(e.key())
			if hashes[i]&bit != 0 {
				high++
			}
		}
	}
	lo, hi := newKeyShard(s.depth+1, slotsFor(s.n-high+1)), newKeyShard(s.depth+1, slotsFor(high+1))
	first := -1
	for i, e := range s.ents {
		if s.tags[i] < 0x80 {
			continue
		}
		h := hashes[i]
		if first < 0 {
			first = int(h >> (64 - t.depth))
		}
		if h&bit != 0 {
			hi.insert(h, e)
		} else {
			lo.insert(h, e)
		}
	}
	// s spans an aligned run of directory slots: its first half goes to
	// lo, its second to hi. A full shard has entries, so first is set.
	span := 1 << (t.depth - s.depth)
	start := first &^ (span - 1)
	for i := start; i < start+span; i++ {
		if i < start+span/2 {
			t.dir[i] = lo
		} else {
			t.dir[i] = hi
		}
	}
}

// each calls fn for every entry until fn returns false. fn may delete the
// entry it is given (each reads a shard's entries before it calls fn for
// them) but must not add entries.
func (t *keyTable) each(fn func(*entry) bool) {
	var batch []*entry
	for i := 0; i < len(t.dir); {
		s := t.dir[i]
		i += 1 << (t.depth - s.depth)
		batch = batch[:0]
		for j, e := range s.ents {
			if s.tags[j] >= 0x80 {
				batch = append(batch, e)
			}
		}
		for _, e := range batch {
			if !fn(e) {
				return
			}
		}
	}
}

// sample calls fn for entries from a random place on, in slot order, until
// fn returns false or every entry has been offered.
func (t *keyTable) sample(fn func(*entry) bool) {
	if t.n == 0 {
		return
	}
	d := rand.IntN(len(t.dir))
	s := t.dir[d]
	d &^= 1<<(t.depth-s.depth) - 1 // the first directory slot of s
	first := rand.IntN(len(s.tags))
	start := first
	for seen := 0; seen < len(t.dir); {
		for j := start; j < len(s.tags); j++ {
			if s.tags[j] >= 0x80 && !fn(s.ents[j]) {
				return
			}
		}
		span := 1 << (t.depth - s.depth)
		seen += span
		d = (d + span) % len(t.dir)
		s, start = t.dir[d], 0
	}
	// Back at the first shard: the slots before the start.
	for j := 0; j < first; j++ {
		if s.tags[j] >= 0x80 && !fn(s.ents[j]) {
			return
		}
	}
}

// candidates appends, for each name in keys, the entry of the first slot
// whose tag matches it (nil when its probe meets an empty slot first):
// the entry a lookup of that name most likely ends at. Nothing is
// compared past the tag; prefetch only reads what it returns.
func (t *keyTable) candidates(keys [][]byte, out []*entry) []*entry {
	for _, k := range keys {
		h := t.hash(string(k))
		s := t.shardOf(h)
		tag := tagOf(h)
		var cand *entry
		for i := s.home(h); ; i = s.next(i) {
			if g := s.tags[i]; g == tag {
				cand = s.ents[i]
				break
			} else if g == 0 {
				break
			}
		}
		out = append(out, cand)
	}
	return out
}
