package storage

import (
	"cmp"
	"encoding/binary"
	"runtime"
	"slices"
	"strings"
)

// Pending elements.
//
// A write of one element of a hash, set or sorted set — HSET of a field, an
// SADD of a new member, a ZADD of a member — used to change SQLite's B-tree
// on the actor, inside the command: the lookup that tells the command what
// is there, then an insert or an update. The lookup stays (the reply needs
// it: how many fields were new, the old score), but the change waits in
// memory, in s.elems, and the next flush writes it on the offload pool with
// the key rows, in key order (docs/architecture.md, "Write path"). An
// element written many times between flushes reaches SQLite once.
//
// What may be pending is an element's whole new state, never a removal: a
// hash field and its value (the field's expiry goes, as HSET's does), a
// set's member, a sorted set's member and score. Removals and everything
// else are SQL on the actor as before, and they see the pending elements
// by the same rule as the key rows (writeback.go): every query is
// classified when it is declared. A query that names an element table
// writes every pending element first (Store.q), except the point lookups
// declared with newElemLookup, whose callers look in s.elems first; an
// element not pending there is exactly as SQLite has it. So a range read,
// a removal, a copy or a drop sees every element, and a lookup of one
// element costs nothing more. Commit and Savepoint write them too; a
// flush takes them (freezeElems); Rollback and Undo forget them with the
// rest of what they undo.
//
// They are bounded: past maxPendingElems bytes (Store.elemMax), the next
// one first writes them all back on the actor.

// Whether SQLite has the element is known when it becomes pending (the
// lookup said), and stays true until the flush: anything else that changes
// it writes the pending elements first. So a flush writes each with an
// INSERT or an UPDATE, one descent of the B-tree, not an upsert's two.
var (
	qSPut     = newQuery("INSERT INTO sets (id, h, member) VALUES (?1, ?2, ?3)")
	qHPut     = newQuery("INSERT INTO hashes (id, h, field, value, ord) VALUES (?1, ?2, ?3, ?4, ?5)")
	qHRewrite = newQuery("UPDATE hashes SET value = ?4, expire_at = NULL WHERE id = ?1 AND h = ?2 AND field = ?3")
	qZPut     = newQuery("INSERT INTO zsets (id, h, member, score) VALUES (?1, ?2, ?3, ?4)")
	qZRescore = newQuery("UPDATE zsets SET score = ?4 WHERE id = ?1 AND h = ?2 AND member = ?3")
)

// maxPendingElems bounds the bytes of pending elements (their element and
// value bytes and pelemOverhead each).
const maxPendingElems = 16 << 20

// pelemOverhead approximates a pending element's bookkeeping (the struct,
// its map slot, the id in its key).
const pelemOverhead = 112

// A pelem is an element's new state, waiting for the flush.
type pelem struct {
	k     string // the collection's id (8 bytes, big-endian), then the element
	t     Type
	id, h int64
	v     []byte // a hash field's value
	ord   int64  // a new hash field's place in insertion order
	score float64
	// stored: SQLite has the element (with another value or score).
	stored bool
}

func (e *pelem) elem() []byte { return []byte(e.k[8:]) }

func (e *pelem) size() int64 { return int64(len(e.k)+len(e.v)) + pelemOverhead }

// pendingElem returns the pending state of c's element, or nil; it leaves
// the element's key in s.ekbuf.
func (s *Store) pendingElem(c *Coll, elem []byte) *pelem {
	k := s.elemKey(c.ID, elem)
	if len(s.elems) == 0 {
		return nil
	}
	return s.elems[string(k)]
}

func (s *Store) elemKey(id int64, elem []byte) []byte {
	s.ekbuf = append(binary.BigEndian.AppendUint64(s.ekbuf[:0], uint64(id)), elem...)
	return s.ekbuf
}

// pendElem returns the pending state of c's element for the caller to
// set, made if there was none; stored says whether SQLite has the element
// (the caller looked it up: it was not pending).
func (s *Store) pendElem(c *Coll, elem []byte, stored bool) (*pelem, error) {
	if e := s.pendingElem(c, elem); e != nil {
		return e, nil
	}
	return s.newPendElem(c, elem, stored)
}

// newPendElem makes the pending state of c's element, which the caller
// found not pending.
func (s *Store) newPendElem(c *Coll, elem []byte, stored bool) (*pelem, error) {
	if s.elemBytes > s.elemMax {
		if err := s.settleElems(); err != nil {
			return nil, err
		}
	}
	if s.elems == nil {
		s.elems = map[string]*pelem{}
	}
	e := &pelem{k: string(s.elemKey(c.ID, elem)), t: c.Type, id: c.ID, h: elemHash(elem), stored: stored}
	s.elems[e.k] = e
	s.elemBytes += e.size()
	return e, nil
}

// setValue stores a hash field's new value in e.
func (s *Store) setElemValue(e *pelem, v []byte) {
	s.elemBytes += int64(len(v) - len(e.v))
	e.v = append(e.v[:0], v...)
}

// settleElems writes every pending element to SQLite on the actor.
func (s *Store) settleElems() error {
	if len(s.elems) == 0 {
		return nil
	}
	s.c.ready() // a flush landing now must not see them half taken
	if s.inTx && s.c.autocommit() {
		// SQLite abandoned the transaction after a failure: writing now
		// would commit on its own. The caller's rollback discards it all.
		s.discardElems()
		return nil
	}
	b := s.freezeElems(s.elemSpare[:0])
	s.txElemSQL = true // by SQL now, which a flush's lookups cannot see
	err := writeElems(b, s.prepared, s.c, false)
	clear(b)
	s.elemSpare = b[:0]
	return err
}

// freezeElems appends the pending elements to b and forgets them here.
func (s *Store) freezeElems(b []*pelem) []*pelem {
	if len(s.elems) == 0 {
		return b
	}
	b = slices.Grow(b, len(s.elems))
	for _, e := range s.elems {
		b = append(b, e)
	}
	s.discardElems()
	return b
}

// discardElems forgets the pending elements.
func (s *Store) discardElems() {
	clear(s.elems)
	s.elemBytes = 0
}

// PendingElems is how many element writes wait for the flush.
func (s *Store) PendingElems() int { return len(s.elems) }

// writeElems writes b in key order (the tables' primary keys), with the
// statements prep gives on connection c; with yield, it lets other
// goroutines run every yieldRows rows (rowBatch.write says why).
func writeElems(b []*pelem, prep func(*query) *stmt, c *conn, yield bool) error {
	slices.SortFunc(b, func(x, y *pelem) int {
		if o := cmp.Compare(x.t, y.t); o != 0 {
			return o
		}
		if o := cmp.Compare(x.id, y.id); o != 0 {
			return o
		}
		if o := cmp.Compare(x.h, y.h); o != 0 {
			return o
		}
		return strings.Compare(x.k, y.k)
	})
	for n, e := range b {
		if yield && n%yieldRows == yieldRows-1 {
			runtime.Gosched()
		}
		var st *stmt
		switch {
		case e.t == TypeHash && e.stored:
			st = prep(qHRewrite)
			st.blob(4, e.v)
		case e.t == TypeHash:
			st = prep(qHPut)
			st.blob(4, e.v)
			st.int(5, e.ord)
		case e.t == TypeSet:
			st = prep(qSPut)
		case e.stored:
			st = prep(qZRescore)
			st.float(4, e.score)
		default:
			st = prep(qZPut)
			st.float(4, e.score)
		}
		st.int(1, e.id)
		st.int(2, e.h)
		st.blob(3, e.elem())
		if err := st.exec(); err != nil {
			return err
		}
	}
	return nil
}
