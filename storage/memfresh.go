package storage

import (
	"slices"
	"sort"
)

// freshIndex is a database's fresh index (memkeyspace.go): its fresh
// entries in id order, in chunks of up to freshChunk. Ids come from one
// counter, so nearly every entry is added past the last one and goes at
// the end of the last chunk, which fills whole before the next begins: a
// bulk load of new keys costs the index 16 bytes a key, where a B-tree,
// which splits a full node in two halves, kept its nodes half full (35
// bytes a key measured with 1 M keys, a fifth of the process's transient
// memory during the load). An entry added in the middle (a key moved or
// renamed keeps its id) goes into its chunk, split when it overflows; a
// chunk that falls below a quarter is merged with a neighbour it fits
// beside. Several entries may have the same id; each is found as itself.
type freshIndex struct {
	chunks [][]freshKey // each sorted by id and not empty; ascending across chunks
	n      int
}

// freshChunk is the most entries one chunk holds (4 KiB).
const freshChunk = 256

func newFresh() *freshIndex { return &freshIndex{} }

// len is how many entries the index holds.
func (x *freshIndex) len() int { return x.n }

// add puts k in the index, after any entries of the same id.
func (x *freshIndex) add(k freshKey) {
	x.n++
	last := len(x.chunks) - 1
	if last < 0 || x.chunks[last][len(x.chunks[last])-1].id <= k.id {
		if last < 0 || len(x.chunks[last]) == freshChunk {
			c := make([]freshKey, 1, freshChunk)
			c[0] = k
			x.chunks = append(x.chunks, c)
			return
		}
		x.chunks[last] = append(x.chunks[last], k)
		return
	}
	// The first chunk whose last id is past k's takes it.
	ci := sort.Search(len(x.chunks), func(i int) bool {
		c := x.chunks[i]
		return c[len(c)-1].id > k.id
	})
	c := x.chunks[ci]
	i := sort.Search(len(c), func(i int) bool { return c[i].id > k.id })
	c = slices.Insert(c, i, k)
	if len(c) <= freshChunk {
		x.chunks[ci] = c
		return
	}
	half := len(c) / 2
	lo := append(make([]freshKey, 0, freshChunk), c[:half]...)
	hi := append(make([]freshKey, 0, freshChunk), c[half:]...)
	x.chunks[ci] = lo
	x.chunks = slices.Insert(x.chunks, ci+1, hi)
}

// lower is where the first entry with an id of at least id is: its chunk
// and its place in it (len(x.chunks), 0 when there is none).
func (x *freshIndex) lower(id int64) (int, int) {
	ci := sort.Search(len(x.chunks), func(i int) bool {
		c := x.chunks[i]
		return c[len(c)-1].id >= id
	})
	if ci == len(x.chunks) {
		return ci, 0
	}
	c := x.chunks[ci]
	return ci, sort.Search(len(c), func(i int) bool { return c[i].id >= id })
}

// remove takes e, held under id, out of the index, reporting whether it
// was there. A landing flush takes out its entries in the order it froze
// them, which for new keys is id order from the oldest: the index's first
// entry, found without a search and taken without moving the others.
func (x *freshIndex) remove(id int64, e *entry) bool {
	if len(x.chunks) > 0 && x.chunks[0][0].e == e {
		x.removeAt(0, 0)
		return true
	}
	ci, i := x.lower(id)
	for ; ci < len(x.chunks); ci, i = ci+1, 0 {
		c := x.chunks[ci]
		for ; i < len(c); i++ {
			if c[i].id != id {
				return false
			}
			if c[i].e == e {
				x.removeAt(ci, i)
				return true
			}
		}
	}
	return false
}

// removeAny takes e out of the index wherever it is, walking all of it
// (for an entry not found under its id), reporting whether it was there.
func (x *freshIndex) removeAny(e *entry) bool {
	for ci, c := range x.chunks {
		for i := range c {
			if c[i].e == e {
				x.removeAt(ci, i)
				return true
			}
		}
	}
	return false
}

// removeAt takes out entry i of chunk ci. The first entry of a chunk goes
// by moving the chunk's start past it (its slot cleared), not the others
// down.
func (x *freshIndex) removeAt(ci, i int) {
	x.n--
	var c []freshKey
	if i == 0 {
		c = x.chunks[ci]
		c[0] = freshKey{}
		c = c[1:]
	} else {
		c = slices.Delete(x.chunks[ci], i, i+1) // clears the slot it vacates
	}
	switch {
	case len(c) == 0 && ci == 0:
		// The oldest chunk, the one a landing flush empties: the slice
		// moves past it (append reallocates without the gap).
		x.chunks[0] = nil
		x.chunks = x.chunks[1:]
	case len(c) == 0:
		x.chunks = slices.Delete(x.chunks, ci, ci+1)
	case len(c) < freshChunk/4:
		x.chunks[ci] = c
		x.merge(ci)
	default:
		x.chunks[ci] = c
	}
}

// merge joins chunk ci, which has few entries, with a neighbour it fits
// beside.
func (x *freshIndex) merge(ci int) {
	c := x.chunks[ci]
	if ci+1 < len(x.chunks) && len(c)+len(x.chunks[ci+1]) <= freshChunk {
		x.chunks[ci] = append(c, x.chunks[ci+1]...)
		x.chunks = slices.Delete(x.chunks, ci+1, ci+2)
	} else if ci > 0 && len(c)+len(x.chunks[ci-1]) <= freshChunk {
		x.chunks[ci-1] = append(x.chunks[ci-1], c...)
		x.chunks = slices.Delete(x.chunks, ci, ci+1)
	}
}

// ascend calls fn for the entries with ids of at least id, in id order,
// until fn returns false.
func (x *freshIndex) ascend(id int64, fn func(k freshKey) bool) {
	ci, i := x.lower(id)
	for ; ci < len(x.chunks); ci, i = ci+1, 0 {
		for _, k := range x.chunks[ci][i:] {
			if !fn(k) {
				return
			}
		}
	}
}
