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
// element written many times between flushes reaches SQLite once, or never
// when it came and went.
//
// A removal (HDEL, SREM, ZREM, SPOP, ZPOPMIN) waits in memory too when the
// element is pending, when a flush has the connection (removeElem), and
// when a pop read the element (RemoveRead); otherwise a DELETE on the
// actor's connection costs no more than the lookup it replaces.
//
// What is pending is an element's whole new state: a hash field and its
// value (the field's expiry goes, as HSET's does), a set's member, a sorted
// set's member and score — or its absence (gone, a tombstone). Everything
// else is SQL on the actor as before, and it sees the pending elements by
// the same rule as the key rows (writeback.go): every query is classified
// when it is declared. A query that names an element table writes every
// pending element first (Store.q), except the point lookups declared with
// newElemLookup, whose callers look in s.elems first, and the reads of a
// collection's rows that skip the gone ones themselves (elemRows); an
// element not pending there is exactly as SQLite has it. So a range read,
// a removal by range, a copy or a drop sees every element, and a lookup of
// one element costs nothing more. Commit and Savepoint write them too; a
// flush takes them (freezeElems); Rollback and Undo forget them with the
// rest of what they undo.
//
// They are bounded: past Options.OverlayMaxBytes (storage.overlay_max_bytes,
// Store.elemMax), the next one first writes them all back on the actor.

// Whether SQLite has the element is known when it becomes pending (the
// lookup said), and stays true until the flush: anything else that changes
// it writes the pending elements first (or, deleting a gone one's row,
// says so: settleGone). So a flush writes each with an INSERT, an UPDATE
// or a DELETE, one descent of the B-tree, not an upsert's two.
var (
	qSPut     = newQuery("INSERT INTO sets (id, h, member) VALUES (?1, ?2, ?3)")
	qHPut     = newQuery("INSERT INTO hashes (id, h, field, value, ord) VALUES (?1, ?2, ?3, ?4, ?5)")
	qHRewrite = newQuery("UPDATE hashes SET value = ?4, expire_at = NULL WHERE id = ?1 AND h = ?2 AND field = ?3")
	qZPut     = newQuery("INSERT INTO zsets (id, h, member, score) VALUES (?1, ?2, ?3, ?4)")
	qZRescore = newQuery("UPDATE zsets SET score = ?4 WHERE id = ?1 AND h = ?2 AND member = ?3")
	// A field removed and set again goes to the end of the insertion
	// order, as in Redis's listpack.
	qHRewriteOrd = newQuery("UPDATE hashes SET value = ?4, ord = ?5, expire_at = NULL WHERE id = ?1 AND h = ?2 AND field = ?3")
)

// maxPendingElems is the default bound on the bytes of pending elements
// (their element and value bytes and pelemOverhead each).
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
	// stored: SQLite has the element (with another value or score), or
	// will once the flush in flight lands; gone: the element is removed
	// (which needs no write when it is not stored).
	stored, gone bool
}

// collPend is a collection's pending elements, and how many are live
// (new states), gone with a row to delete, and gone without (dead: it
// came and went, or its row is deleted already: settleGone).
type collPend struct {
	elems            []*pelem
	live, gone, dead int32
	// settled: elems before it were all dead after a settleGone, and
	// none of them can have a row to delete since (a revived one is new).
	settled int
}

// count adds d to the count of e's kind.
func (p *collPend) count(e *pelem, d int32) {
	switch {
	case !e.gone:
		p.live += d
	case e.stored:
		p.gone += d
	default:
		p.dead += d
	}
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
	if s.elemColls == nil {
		s.elemColls = map[int64]*collPend{}
	}
	e := &pelem{k: string(s.elemKey(c.ID, elem)), t: c.Type, id: c.ID, h: elemHash(elem), stored: stored}
	s.elems[e.k] = e
	s.elemBytes += e.size()
	p := s.elemColls[c.ID]
	if p == nil {
		p = &collPend{}
		s.elemColls[c.ID] = p
	}
	p.elems = append(p.elems, e)
	p.live++
	return e, nil
}

// bury makes the pending e a removal.
func (s *Store) bury(e *pelem) {
	p := s.elemColls[e.id]
	p.count(e, -1)
	s.elemBytes -= int64(len(e.v))
	e.gone, e.v = true, nil
	p.count(e, 1)
}

// revive makes the gone e a new state, for the caller to set.
func (s *Store) revive(e *pelem) {
	p := s.elemColls[e.id]
	p.count(e, -1)
	e.gone = false
	p.count(e, 1)
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
	if s.abandoned() {
		s.discardElems()
		return nil
	}
	b := s.freezeElems(s.elemSpare[:0])
	for _, e := range b {
		s.txElemSQL.mark(e.id) // by SQL now, which a flush's lookups cannot see
	}
	return s.writeHere(b)
}

// writeHere writes b on the actor's connection, and keeps b's array for
// the next batch.
func (s *Store) writeHere(b []*pelem) error {
	err := writeElems(b, s.prepared, s.c, false)
	clear(b)
	s.elemSpare = b[:0]
	return err
}

// settleColl writes c's pending elements to SQLite on the actor, and no
// other collection's: a read of c's rows must not pay for every write
// since the last flush.
func (s *Store) settleColl(c *Coll) error {
	p := s.elemColls[c.ID]
	if p == nil {
		return nil
	}
	s.c.ready()
	if s.abandoned() {
		s.discardElems()
		return nil
	}
	b := append(s.elemSpare[:0], p.elems...)
	for _, e := range b {
		delete(s.elems, e.k)
		s.elemBytes -= e.size()
	}
	delete(s.elemColls, c.ID)
	s.txElemSQL.mark(c.ID)
	return s.writeHere(b)
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
	s.elems, s.elemColls = emptied(s.elems), emptied(s.elemColls)
	s.elemBytes = 0
}

// emptied returns m cleared, or nil when it was large: a Go map keeps its
// capacity, and ranging over it costs that, not its length — after a burst,
// writing one pending element would range over a burst's worth of slots.
func emptied[K comparable, V any](m map[K]V) map[K]V {
	if len(m) > 256 {
		return nil
	}
	clear(m)
	return m
}

// PendingElems is how many element writes wait for the flush.
func (s *Store) PendingElems() int { return len(s.elems) }

// writeElems writes b in key order (the tables' primary keys), with the
// statements prep gives on connection c; with yield, it lets other
// goroutines run every yieldRows rows (rowBatch.write says why).
func writeElems(b []*pelem, prep func(*query) *stmt, c *conn, yield bool) error {
	// Those with nothing to write go before the sort: a flush after a
	// burst of pops holds tens of thousands of dead ones.
	b = slices.DeleteFunc(b, func(e *pelem) bool {
		return e.gone && !e.stored || !e.gone && e.stored && e.t == TypeSet
	})
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
		case e.gone:
			st = prep(elemDelete(e.t))
		case e.t == TypeHash && e.stored && e.ord != 0:
			st = prep(qHRewriteOrd)
			st.blob(4, e.v)
			st.int(5, e.ord)
		case e.t == TypeHash && e.stored:
			st = prep(qHRewrite)
			st.blob(4, e.v)
		case e.t == TypeHash:
			st = prep(qHPut)
			st.blob(4, e.v)
			st.int(5, e.ord)
		case e.t == TypeSet: // not stored: a member removed and added again needs no write
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

// Reads of a collection's rows past gone elements.
//
// A read of a collection's rows (Elements, Sample's window, ZPop) is an
// element query: it needs every pending element of the collection written
// first, and waits for a flush in flight that took some. Gone elements
// are the exception: the read skips them instead (buried), so a removal
// (SPOP's, ZPOPMIN's) does not make the next read write it, nor wait for
// the flush to. The read runs on the actor's connection, or on the reader
// aside a flush whose transaction changed no element of the collection by
// SQL and took no live one (aside.go). Only this collection's pending
// elements are written (settleColl): a read after a burst of writes to
// other collections does not pay for them.
//
// Skipping is bounded. SPOP reads from a random point and ZPOPMIN from the
// low end, where the removed members lie, so past maxSkipped gone rows the
// read first deletes them (settleGone) — on the actor's connection, and
// not while a flush has it. The gone elements stay pending, dead: the
// reader, which sees the last commit, still has their rows aside the next
// flush. Aside a flush, the read skips at most as many gone rows as the
// collection has live ones, else it waits for the flush.

// maxSkipped is how many rows deleted only in memory a read on the actor's
// connection may skip: none, measured — the pages are hot, and a set that
// SPOP empties skips more rows than deleting them costs. (The tests raise
// it, to skip.)
const maxSkipped = 0

// elemRows returns qq's statement, a read of c's rows (c's id is the
// caller's to bind), and whether the rows read may be gone (buried says).
func (s *Store) elemRows(qq *query, c *Coll) (st *stmt, skip bool) {
	a := s.elemColls[c.ID]
	var err error
	switch {
	case a != nil && a.live > 0:
		err = s.settleColl(c) // waits for a flight
		a = nil
	case a != nil && a.gone > s.skipMax && s.c.lent == nil:
		err = s.settleGone(a)
	}
	if err != nil {
		st = s.prepared(qq)
		st.failed = err
		return st, false
	}
	var skipped int64 // at most, on the reader
	if a != nil {
		skipped = int64(a.gone + a.dead)
	}
	if s.c.lent != nil {
		f := s.flyingColls[c.ID]
		if f != nil {
			skipped += int64(f.gone + f.dead)
		}
		if (f == nil || f.live == 0) && skipped <= max(c.Len, 64) && c.Type != TypeHash && s.asideOf(c) {
			// Not a hash: a value held as a blob is read on the actor's
			// connection, which would land the flight mid-read.
			s.asideReads++
			return s.readerStmt(qq), skipped > 0
		}
		s.c.ready() // lands the flight: its elements are SQLite's now
		return s.elemRows(qq, c)
	}
	return s.prepared(qq), a != nil && a.gone > 0
}

// settleGone deletes the rows of p's gone elements on the actor's
// connection; they stay pending, dead, until the flush (the reader still
// has the rows).
func (s *Store) settleGone(p *collPend) error {
	if s.abandoned() {
		return nil // the caller's rollback discards them
	}
	b := s.elemSpare[:0]
	for _, e := range p.elems[p.settled:] {
		if e.gone && e.stored {
			b = append(b, e)
		}
	}
	if err := s.writeHere(b); err != nil {
		return err
	}
	for _, e := range p.elems[p.settled:] {
		e.stored = e.stored && !e.gone // the gone ones' rows are deleted
	}
	p.dead += p.gone
	p.gone = 0
	p.settled = len(p.elems)
	return nil
}

// buried reports whether c's element elem is gone, here or in the flight.
func (s *Store) buried(c *Coll, elem []byte) bool {
	k := s.elemKey(c.ID, elem)
	if e := s.elems[string(k)]; e != nil {
		return e.gone
	}
	e := s.flyingElems[string(k)]
	return e != nil && e.gone
}

// eachLive is each, for a statement from elemRows: with skip, fn does not
// see the gone elements.
func (s *Store) eachLive(q *elemQueries, st *stmt, c *Coll, skip bool, fn func(e *Elem) bool) error {
	defer st.reset()
	var e Elem
	for {
		row, err := st.step()
		if err != nil || !row {
			return err
		}
		if skip {
			if e.Member = st.colBlob(1, e.Member[:0]); s.buried(c, e.Member) {
				continue
			}
		}
		if err := s.readElem(q, st, &e); err != nil {
			return err
		}
		if !fn(&e) {
			return nil
		}
	}
}

// RemoveRead removes elements of c that the caller has just read from its
// rows (Sample, ZPop): they are there and not pending, so their removals
// need no lookup.
func (s *Store) RemoveRead(c *Coll, es []Elem) error {
	if s.mem != nil {
		for i := range es {
			s.mem.removeElem(c, es[i].Member)
		}
		return nil
	}
	for i := range es {
		e := s.pendingElem(c, es[i].Member)
		if e == nil {
			var err error
			if e, err = s.newPendElem(c, es[i].Member, true); err != nil {
				return err
			}
		}
		if !e.gone {
			s.bury(e)
			c.Len--
		}
	}
	s.changed(c, false)
	return nil
}

// elemLookup is the point lookup of an element of a collection of type t
// that selects a row when the element is there (declared with
// newElemLookup), and elemDelete the statement that removes it.
func elemLookup(t Type) *query {
	switch t {
	case TypeHash:
		return qHExists
	case TypeSet:
		return qSIsMember
	}
	return qZScore
}

func elemDelete(t Type) *query {
	switch t {
	case TypeHash:
		return qHDel
	case TypeSet:
		return qSRem
	}
	return qZDel
}

// removeElem removes elem from c; removed is false when elem was not
// there. A pending element is buried; else, with the connection at hand,
// a DELETE removes the row at the cost of the lookup that the reply needs
// anyway (measured: a lookup now and a DELETE in the flush cost the actor
// ~15% of SREM's and HDEL's throughput, the flush competing for the CPU);
// while a flush has the connection, the lookup runs aside it and the
// removal waits for the next flush, rather than the command for this one.
func (s *Store) removeElem(c *Coll, elem []byte) (removed bool, err error) {
	e := s.pendingElem(c, elem)
	switch {
	case e != nil && e.gone:
		return false, nil
	case e != nil:
		s.bury(e)
	case s.c.lent == nil:
		st := s.prepared(elemDelete(c.Type))
		bindElem(st, c.ID, elem)
		if err := st.exec(); err != nil || s.c.changes() == 0 {
			return false, err
		}
		s.txElemSQL.mark(c.ID)
	default:
		had, err := s.hasStored(elemLookup(c.Type), c, elem)
		if err != nil || !had {
			return false, err
		}
		if e, err = s.newPendElem(c, elem, true); err != nil {
			return false, err
		}
		s.bury(e)
	}
	c.Len--
	s.changed(c, false)
	return true, nil
}
