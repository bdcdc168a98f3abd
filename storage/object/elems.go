package object

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"unsafe"
)

// SmallMax is the number of elements up to which a hash, set or sorted set
// keeps its compact form (Redis's hash-max-listpack-entries default).
const SmallMax = 128

// elemOverhead is what one element costs beyond its bytes: the Elem in a
// slice or tree node, the string and slice headers, allocator slack.
const elemOverhead = 96

// Elem is one element of a hash, set or sorted set, as its row holds it.
type Elem struct {
	H     int64   // Hash(Name): the row's h, its place in storage order
	Name  string  // the field or member
	Value []byte  // a hash field's value
	Score float64 // a sorted set member's score
	Ord   int64   // a hash field's insertion number (rows' ord); 0 unknown
	Exp   int64   // a hash field's expiry, unix ms; 0 when it has none
}

func (e *Elem) size() int64 { return int64(len(e.Name) + len(e.Value) + elemOverhead) }

// Hash orders a collection's rows: FNV-1a over the bytes, then MurmurHash3's
// 64-bit finaliser so that the high bits are uniform (random sampling seeks
// to a uniform point), cut to 63 bits so that it is a non-negative SQLite
// integer. It is part of the file format: changing it needs a migration
// that rewrites every h.
func Hash(b []byte) int64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return int64(h >> 1)
}

func hashString(s string) int64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return int64(h >> 1)
}

func compareStorage(a, b Elem) int {
	if c := cmp.Compare(a.H, b.H); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// node is a large set's element with what the next Freeze must do with
// its row. An Elem alone is 72 bytes, so the state costs nothing: both
// are allocated in the 80-byte size class. The node is the set's: Put
// changes it in place, so nothing outside the set shares it (Freeze and
// Clone copy).
type node struct {
	Elem
	state nodeState
}

type nodeState uint8

const (
	clean   nodeState = iota // its row is as the last Freeze left it
	changed                  // set since the last Freeze; in Elems.touched
	deleted                  // deleted since the last Freeze; in Elems.touched and still in the table
)

// Elems is the element set of a hash, set or sorted set, by name: a slice
// in insertion order while small; past SmallMax, for good, a table by
// name that keeps the elements in storage order too (table.go: what HGET,
// HSET and SISMEMBER use, as Redis's hashtable encoding, and what HSCAN,
// random picks and the flush's order walk). It records which names
// changed since the last Freeze: the small form in a set of names, the
// big form in its nodes' state and a list of the nodes changed, so that a
// write to a large set costs one lookup by name, not a second one in a
// set of names and a third at the Freeze. A name deleted from the big
// form stays in its table, marked, until the Freeze, so a name deleted
// and set again is listed once.
type Elems struct {
	small []Elem
	big   *table // deleted nodes too
	dead  int    // the big form's deleted nodes
	size  int64

	dirty   map[string]struct{} // the small form's names set or deleted since the last Freeze
	touched []*node             // the big form's nodes changed or deleted since the last Freeze
	all     bool                // every row is rewritten at the next Freeze
}

// NewElems returns an empty set whose rows are all new (a new key).
func NewElems() *Elems { return &Elems{all: true} }

// Loaded makes Elems from rows read in storage order (a key loaded from
// SQLite): nothing is dirty. It takes rows.
func Loaded(rows []Elem) *Elems {
	e := &Elems{}
	for i := range rows {
		e.size += rows[i].size()
	}
	if len(rows) <= SmallMax {
		// A small hash is given in insertion order (its ord), as Redis
		// gives a listpack; the others keep their storage order.
		slices.SortStableFunc(rows, func(a, b Elem) int { return cmp.Compare(a.Ord, b.Ord) })
		e.small = rows
		return e
	}
	e.setBig(rows)
	return e
}

// setBig makes els the big form's elements (it takes els). They come in
// storage order from SQLite and the other forms; sorted here otherwise.
func (e *Elems) setBig(els []Elem) {
	if !slices.IsSortedFunc(els, compareStorage) {
		slices.SortFunc(els, compareStorage)
	}
	nodes := make([]node, len(els))
	slots := make([]slot, len(els))
	for i := range els {
		nodes[i].Elem = els[i]
		slots[i] = slot{els[i].H, &nodes[i]}
	}
	e.big, e.dead, e.small = newTable(slots), 0, nil
}

// Len is the number of elements.
func (e *Elems) Len() int {
	if e.big != nil {
		return e.big.n - e.dead
	}
	return len(e.small)
}

// bigExtra is what an element of the big form costs beyond elemOverhead:
// its table slots (16 bytes each, 9/16 to 13/16 full) and the node's
// state in its allocation.
const bigExtra = 32

// Size is the footprint in bytes (package doc).
func (e *Elems) Size() int64 {
	if e.big != nil {
		return e.size + int64(e.Len())*bigExtra
	}
	return e.size
}

// live is the big form's node named name, if it is not deleted.
func (e *Elems) live(name string) *node {
	if p := e.big.get(hashString(name), name); p != nil && p.state != deleted {
		return p
	}
	return nil
}

func (e *Elems) find(name string) int {
	for i := range e.small {
		if e.small[i].Name == name {
			return i
		}
	}
	return -1
}

// Get returns the element named name.
func (e *Elems) Get(name []byte) (Elem, bool) {
	if e.big != nil {
		if p := e.live(string(name)); p != nil {
			return p.Elem, true
		}
		return Elem{}, false
	}
	if i := e.find(string(name)); i >= 0 {
		return e.small[i], true
	}
	return Elem{}, false
}

// Has reports whether name is an element.
func (e *Elems) Has(name []byte) bool {
	_, ok := e.Get(name)
	return ok
}

// mark records that the small form's element name was set or deleted.
func (e *Elems) mark(name string) {
	if e.all {
		return
	}
	if e.dirty == nil {
		e.dirty = make(map[string]struct{})
	}
	e.dirty[name] = struct{}{}
}

// touch records that the big form's node p was set (to) or deleted.
func (e *Elems) touch(p *node, to nodeState) {
	if p.state == clean && !e.all {
		e.touched = append(e.touched, p)
	} else if p.state == clean {
		return // rewritten whole; a deleted node leaves the index at once
	}
	p.state = to
}

// Put sets el (its Name; H is computed here), replacing an element of the
// same name, and returns the one it replaced.
func (e *Elems) Put(el Elem) (old Elem, existed bool) { return e.put(el, false, putReplace, nil) }

// SetField sets a hash's field to value with one lookup (HSET): a field
// there keeps its insertion number, and its expiry when keepExp; a new
// one gets the number ord returns (called only then). It reports whether
// the field is new.
func (e *Elems) SetField(name, value []byte, keepExp bool, ord func() int64) bool {
	mode := putKeepOrd
	if keepExp {
		mode = putKeepOrdExp
	}
	_, existed := e.put(Elem{Name: view(name), Value: value}, true, mode, ord)
	return !existed
}

// Add adds a set's member unless it is there, with one lookup (SADD),
// and reports whether it was added.
func (e *Elems) Add(name []byte) bool {
	_, existed := e.put(Elem{Name: view(name)}, true, putIfAbsent, nil)
	return !existed
}

// view is b as a string without a copy, for lookups: put copies it
// before it keeps it.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// putMode is what put keeps of an element of the same name.
type putMode uint8

const (
	putReplace    putMode = iota // nothing: el replaces it
	putKeepOrd                   // its Ord (a new element's comes from ord)
	putKeepOrdExp                // its Ord and Exp
	putIfAbsent                  // all of it: el is put only if there is none
)

// keep moves into el what mode keeps of old, the element el replaces;
// false when el is not to be put at all.
func (mode putMode) keep(old, el *Elem) bool {
	switch mode {
	case putIfAbsent:
		return false
	case putKeepOrd:
		el.Ord = old.Ord
	case putKeepOrdExp:
		el.Ord, el.Exp = old.Ord, old.Exp
	}
	return true
}

// put sets el as mode says, and returns the element of el's name that was
// there. With viewed, el.Name is a view of the caller's bytes (view), copied
// if the element is new.
func (e *Elems) put(el Elem, viewed bool, mode putMode, ord func() int64) (old Elem, existed bool) {
	el.H = hashString(el.Name)
	if e.big != nil {
		switch s, i, ok := e.big.find(el.H, el.Name); {
		case ok && s.slots[i].p.state != deleted:
			p := s.slots[i].p
			old, existed = p.Elem, true
			if !mode.keep(&old, &el) {
				return old, existed
			}
			el.Name = p.Name // the name the table holds
			p.Elem = el
			e.touch(p, changed)
		case ok: // deleted since the last Freeze, and listed
			p := s.slots[i].p
			el.Name = p.Name
			if ord != nil {
				el.Ord = ord()
			}
			p.Elem, p.state = el, changed
			e.dead--
		default:
			if ord != nil {
				el.Ord = ord()
			}
			if viewed {
				el.Name = strings.Clone(el.Name)
			}
			p := &node{Elem: el}
			e.big.insert(s, i, p)
			e.touch(p, changed)
		}
	} else {
		if i := e.find(el.Name); i >= 0 {
			old, existed = e.small[i], true
			if !mode.keep(&old, &el) {
				return old, existed
			}
			el.Name = old.Name
			e.mark(el.Name)
			e.small[i] = el
		} else {
			if ord != nil {
				el.Ord = ord()
			}
			if viewed {
				el.Name = strings.Clone(el.Name)
			}
			e.mark(el.Name)
			if e.small = append(e.small, el); len(e.small) > SmallMax {
				e.grow()
			}
		}
	}
	e.size += el.size()
	if existed {
		e.size -= old.size()
	}
	return old, existed
}

// grow moves a small set into its tree form, for good.
func (e *Elems) grow() {
	els := slices.Clone(e.small)
	slices.SortFunc(els, compareStorage)
	e.setBig(els)
	for name := range e.dirty {
		h := hashString(name)
		s, i, ok := e.big.find(h, name)
		var p *node
		if ok {
			p = s.slots[i].p
			p.state = changed
		} else {
			p = &node{Elem: Elem{H: h, Name: name}, state: deleted}
			e.big.insert(s, i, p)
			e.dead++
		}
		e.touched = append(e.touched, p)
	}
	e.dirty = nil
}

// Delete removes the element named name and returns it.
func (e *Elems) Delete(name []byte) (old Elem, existed bool) {
	if e.big != nil {
		h := hashString(string(name))
		s, i, ok := e.big.find(h, string(name))
		if !ok || s.slots[i].p.state == deleted {
			return Elem{}, false
		}
		p := s.slots[i].p
		old, existed = p.Elem, true
		if e.all && p.state == clean {
			e.big.remove(s, i)
		} else {
			e.touch(p, deleted)
			p.Value = nil
			e.dead++
		}
	} else if i := e.find(string(name)); i >= 0 {
		old, existed = e.small[i], true
		e.small = slices.Delete(e.small, i, i+1)
		e.mark(old.Name)
	}
	if existed {
		e.size -= old.size()
	}
	return old, existed
}

// Each calls fn with every element until it returns false: a small set in
// insertion order, a large one in storage order. fn must not change e
// or the element it is given.
func (e *Elems) Each(fn func(el *Elem) bool) {
	if e.big != nil {
		e.big.ascend(0, func(p *node) bool { return p.state == deleted || fn(&p.Elem) })
		return
	}
	for i := range e.small {
		if !fn(&e.small[i]) {
			return
		}
	}
}

// ScanFrom calls fn with the elements of h >= from in storage order until
// it returns false. A small set is sorted for the call.
func (e *Elems) ScanFrom(from int64, fn func(el *Elem) bool) {
	if e.big != nil {
		e.big.ascend(from, func(p *node) bool { return p.state == deleted || fn(&p.Elem) })
		return
	}
	sorted := slices.Clone(e.small)
	slices.SortFunc(sorted, compareStorage)
	for i := range sorted {
		if sorted[i].H >= from && !fn(&sorted[i]) {
			return
		}
	}
}

// Random returns an element chosen uniformly (Len > 0): the big form
// picks a random slot until it holds one (table.pick), and walks to a
// random offset if a run of picks met only deleted nodes (most of the set
// deleted since the last Freeze).
func (e *Elems) Random() Elem {
	if e.big == nil {
		return e.small[rand.IntN(len(e.small))]
	}
	if p := e.big.pick(64, func(p *node) bool { return p.state != deleted }); p != nil {
		return p.Elem
	}
	var el Elem
	i := rand.IntN(e.Len())
	e.Each(func(x *Elem) bool {
		if i--; i < 0 {
			el = *x
			return false
		}
		return true
	})
	return el
}

// Clone returns a copy whose rows are all new (COPY's destination): the
// copy shares the stored values (they are never written to), not the
// elements.
func (e *Elems) Clone() *Elems {
	if e.big != nil {
		c := &Elems{size: e.size, all: true}
		c.setBig(e.sorted())
		return c
	}
	return &Elems{small: slices.Clone(e.small), size: e.size, all: true}
}

// sorted copies a large set's elements, in storage order.
func (e *Elems) sorted() []Elem {
	els := make([]Elem, 0, e.Len())
	e.Each(func(el *Elem) bool {
		els = append(els, *el)
		return true
	})
	return els
}

// Delta is what changed in a set of elements between two Freezes, for the
// flush to write: when All, every row of the key is deleted and Each's
// elements are written; otherwise Each's elements are written (inserted or
// replaced) and Gone's rows deleted. Both come in storage order. A Delta is
// the flush's: the actor never changes what it holds.
type Delta struct {
	All  bool
	put  []Elem
	Gone []Elem // H and Name of the rows to delete
}

// Each calls fn with every element to write, in storage order.
func (d *Delta) Each(fn func(el *Elem) error) error {
	for i := range d.put {
		if err := fn(&d.put[i]); err != nil {
			return err
		}
	}
	return nil
}

// Changed reports whether anything changed since the last Freeze.
func (e *Elems) Changed() bool { return e.all || len(e.dirty) > 0 || len(e.touched) > 0 }

// Freeze returns what changed since the last Freeze and starts recording
// afresh. Its cost is the number of changed elements; for a set whose rows
// are all new (a new key, COPY's destination), the set's size.
func (e *Elems) Freeze() *Delta {
	d := &Delta{All: e.all}
	switch {
	case e.all && e.big != nil:
		d.put = e.sorted()
	case e.all:
		d.put = slices.Clone(e.small)
		slices.SortFunc(d.put, compareStorage)
	case e.big != nil:
		d.put = make([]Elem, 0, len(e.touched))
		for _, p := range e.touched {
			if p.state == changed {
				d.put = append(d.put, p.Elem)
			} else {
				d.Gone = append(d.Gone, Elem{H: p.H, Name: p.Name})
			}
		}
	default:
		for name := range e.dirty {
			if el, ok := e.Get([]byte(name)); ok {
				d.put = append(d.put, el)
			} else {
				d.Gone = append(d.Gone, Elem{H: hashString(name), Name: name})
			}
		}
	}
	if !d.All {
		slices.SortFunc(d.put, compareStorage)
		slices.SortFunc(d.Gone, compareStorage)
	}
	for _, p := range e.touched {
		if p.state == deleted {
			if s, i, ok := e.big.find(p.H, p.Name); ok {
				e.big.remove(s, i)
			}
		}
		p.state = clean
	}
	e.all, e.dirty, e.touched, e.dead = false, nil, nil, 0
	return d
}

// Rewrite makes the next Freeze rewrite every row (a change that moves
// them all, or rows whose state is unknown). The touched nodes stay
// listed: the Freeze takes the deleted ones out of the table.
func (e *Elems) Rewrite() { e.all, e.dirty = true, nil }
