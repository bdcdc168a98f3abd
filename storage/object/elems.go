package object

import (
	"cmp"
	"slices"
	"strings"

	"github.com/tidwall/btree"
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

// item is a large set's tree entry: an element's H beside a pointer to
// its node, so that a walk reads 16-byte items (a node is 80), and the
// index finds an element by name without the tree. The node is the set's:
// Put changes it in place, so nothing outside the set shares it (Freeze
// and Clone copy).
type item struct {
	h  int64
	el *node
}

// node is a large set's element with what the next Freeze must do with
// its row. An Elem alone is 72 bytes, so the state costs nothing: both
// are allocated in the 80-byte size class.
type node struct {
	Elem
	state nodeState
}

type nodeState uint8

const (
	clean   nodeState = iota // its row is as the last Freeze left it
	changed                  // set since the last Freeze; in Elems.touched
	deleted                  // deleted since the last Freeze; in Elems.touched and the index, not the tree
)

func itemOrder(a, b item) bool {
	if a.h != b.h {
		return a.h < b.h
	}
	return a.el.Name < b.el.Name
}

// Elems is the element set of a hash, set or sorted set, by name: a slice
// in insertion order while small; past SmallMax, for good, a map by name
// (what HGET, HSET and SISMEMBER use, as Redis's hashtable encoding) and a
// tree of the same elements in storage order (HSCAN, random picks, the
// flush's order). It records which names changed since the last Freeze:
// the small form in a set of names, the big form in its nodes' state and
// a list of the nodes changed, so that a write to a large set costs one
// lookup by name, not a second one in a set of names and a third at the
// Freeze. A name deleted from the big form stays in its index, marked,
// until the Freeze, so a name deleted and set again is listed once.
type Elems struct {
	small []Elem
	big   *btree.BTreeG[item]
	index map[string]*node // the big form's nodes by name, deleted ones too
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

// setBig makes els, in storage order, the big form's elements (it takes
// els).
func (e *Elems) setBig(els []Elem) {
	e.big, e.index, e.small = newTree(), make(map[string]*node, len(els)), nil
	nodes := make([]node, len(els))
	for i := range els {
		nodes[i].Elem = els[i]
		e.big.Load(item{els[i].H, &nodes[i]})
		e.index[els[i].Name] = &nodes[i]
	}
}

func newTree() *btree.BTreeG[item] {
	return btree.NewBTreeGOptions(itemOrder, btree.Options{NoLocks: true, Degree: 32})
}

// Len is the number of elements.
func (e *Elems) Len() int {
	if e.big != nil {
		return e.big.Len()
	}
	return len(e.small)
}

// bigExtra is what an element of the big form costs beyond elemOverhead:
// its index entry and tree item, and its own allocation (estimated).
const bigExtra = 48

// Size is the footprint in bytes (package doc).
func (e *Elems) Size() int64 {
	if e.big != nil {
		return e.size + int64(e.big.Len())*bigExtra
	}
	return e.size
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
		if p, ok := e.index[string(name)]; ok && p.state != deleted {
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
func (e *Elems) Put(el Elem) (old Elem, existed bool) {
	el.H = hashString(el.Name)
	e.size += el.size()
	if e.big != nil {
		switch p, ok := e.index[el.Name]; {
		case ok && p.state != deleted:
			old, existed = p.Elem, true
			el.Name = p.Name // the index's key
			p.Elem = el
			e.touch(p, changed)
		case ok: // deleted since the last Freeze, and listed
			el.Name = p.Name
			p.Elem, p.state = el, changed
			e.big.Set(item{el.H, p})
		default:
			p := &node{Elem: el}
			e.big.Set(item{el.H, p})
			e.index[el.Name] = p
			e.touch(p, changed)
		}
	} else {
		e.mark(el.Name)
		if i := e.find(el.Name); i >= 0 {
			old, existed = e.small[i], true
			e.small[i] = el
		} else if e.small = append(e.small, el); len(e.small) > SmallMax {
			e.grow()
		}
	}
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
		p, ok := e.index[name]
		if ok {
			p.state = changed
		} else {
			p = &node{Elem: Elem{H: hashString(name), Name: name}, state: deleted}
			e.index[name] = p
		}
		e.touched = append(e.touched, p)
	}
	e.dirty = nil
}

// Delete removes the element named name and returns it.
func (e *Elems) Delete(name []byte) (old Elem, existed bool) {
	if e.big != nil {
		p, ok := e.index[string(name)]
		if !ok || p.state == deleted {
			return Elem{}, false
		}
		old, existed = p.Elem, true
		e.big.Delete(item{p.H, p})
		if e.all && p.state == clean {
			delete(e.index, p.Name)
		} else {
			e.touch(p, deleted)
			p.Value = nil
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
		e.big.Scan(func(it item) bool { return fn(&it.el.Elem) })
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
		e.big.Ascend(item{from, &node{}}, func(it item) bool { return fn(&it.el.Elem) })
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

// Nth returns the element at offset i of Each's order (0 <= i < Len): a
// tree walks to it in O(log n).
func (e *Elems) Nth(i int) Elem {
	if e.big != nil {
		it, _ := e.big.GetAt(i)
		return it.el.Elem
	}
	return e.small[i]
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
	els := make([]Elem, 0, e.big.Len())
	e.big.Scan(func(it item) bool {
		els = append(els, it.el.Elem)
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
			delete(e.index, p.Name)
		}
		p.state = clean
	}
	e.all, e.dirty, e.touched = false, nil, nil
	return d
}

// Rewrite makes the next Freeze rewrite every row (a change that moves
// them all, or rows whose state is unknown). The touched nodes stay
// listed: the Freeze takes the deleted ones out of the index.
func (e *Elems) Rewrite() { e.all, e.dirty = true, nil }
