package storage

import (
	"fmt"
	"hash/maphash"

	sqlite3 "modernc.org/sqlite/lib"
)

// Reads aside a flush.
//
// While a flush has the connection (flush.go), a statement on it waits
// until the flush has committed. For a lookup of one key's row that wait is
// mostly needless: the flush's transaction changed few keys, and for every
// other key the last commit, which any other connection sees, is exactly
// what the transaction holds. So the Store keeps a second, read-only
// connection, and a point lookup (a query marked aside) of a key that the
// flying transaction did not change runs on it and does not wait: a SET of
// a key never seen, or a GET of one the hot cache let go, is answered at
// once rather than after the flush's commit.
//
// Which keys the transaction changed is the change record's business: every
// write records the keys it changes as it changes them (touched.go), so
// record also marks them in changedKeys, a Bloom filter that may answer
// "maybe" for a key that was not changed (the lookup then waits, as
// before) but never "no" for one that was. A change to a whole database
// (FLUSHDB, SWAPDB) marks everything. StartFlush hands the transaction's
// filter to the flush and starts an empty one (as Commit and Rollback
// empty it): from then on the actor changes nothing in SQLite without
// waiting for the flush first, after which lookups use the actor's
// connection again.
//
// The reader sees the last commit, or the flush's once it is done; for a
// key the transaction did not change the two agree. What the actor wrote
// since the freeze is in the hot cache, which every lookup consults first,
// and a lookup of a key whose cached row is ahead of SQLite writes it back
// first (Store.qKey) and so waits.

// changedKeys is a Bloom filter of the keys a transaction changed.
type changedKeys struct {
	bits []uint64 // allocated on first use
	n    int      // keys marked
	all  bool     // a whole database changed: every key may have
}

// changedBits is the filter's size and changedProbes the bits a key sets:
// 2^22 bits (512 KiB) answer "maybe" for one key in 8 million not marked
// when 20 000 are (a flush's worth at 100 000 SETs a second), one in 15 000
// when 100 000 are. A "maybe" costs a wait for a whole flush, so the
// filter is large: a lookup per write meets it.
const (
	changedBits   = 1 << 22
	changedProbes = 4
)

var changedSeed = maphash.MakeSeed()

// changedProbe is the i-th bit of key of db (two hashes combined, after
// Kirsch and Mitzenmacher).
func changedProbe(h uint64, i uint64) uint64 {
	return ((h & 0xffffffff) + i*(h>>32|1)) % changedBits
}

func changedHash(db int, key []byte) uint64 {
	return maphash.Bytes(changedSeed, key) ^ uint64(db)*0x9e3779b97f4a7c15
}

// mark records that key of db changed; a nil key is a whole database.
func (f *changedKeys) mark(db int, key []byte) {
	if key == nil {
		f.all = true
		return
	}
	if f.bits == nil {
		f.bits = make([]uint64, changedBits/64)
	}
	h := changedHash(db, key)
	for i := range uint64(changedProbes) {
		b := changedProbe(h, i)
		f.bits[b/64] |= 1 << (b % 64)
	}
	f.n++
}

// may reports whether key of db may have changed.
func (f *changedKeys) may(db int, key []byte) bool {
	if f.all {
		return true
	}
	if f.n == 0 {
		return false
	}
	h := changedHash(db, key)
	for i := range uint64(changedProbes) {
		b := changedProbe(h, i)
		if f.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// reset forgets every mark.
func (f *changedKeys) reset() {
	if f.n > 0 {
		clear(f.bits)
	}
	f.n, f.all = 0, false
}

// readerCacheKB is the reader's page cache: it reads few pages (point
// lookups, during flushes), and the operating system caches the file.
const readerCacheKB = 1 << 10

// openReader opens the read-only connection for reads aside a flush.
func (s *Store) openReader() error {
	r, err := openConn(s.path, sqlite3.SQLITE_OPEN_READONLY)
	if err != nil {
		return fmt.Errorf("open the reader: %w", err)
	}
	if err := r.exec(fmt.Sprintf("PRAGMA busy_timeout = 5000; PRAGMA cache_size = -%d;", readerCacheKB)); err != nil {
		r.close()
		return fmt.Errorf("set up the reader: %w", err)
	}
	s.rc, s.rstmts = r, map[*query]*stmt{}
	return nil
}

// closeReader closes the reader and its statements.
func (s *Store) closeReader() {
	for _, st := range s.rstmts {
		st.close()
	}
	s.rstmts = nil
	if s.rc != nil {
		s.rc.close()
		s.rc = nil
	}
}

// aside returns qq's statement on the reader with db and key bound, when a
// flush has the connection and the lookup can be answered without it;
// otherwise nil.
func (s *Store) aside(qq *query, db int, key []byte) *stmt {
	if !qq.aside || s.c.lent == nil || s.rc == nil || s.flightKeys.may(db, key) {
		return nil
	}
	if len(s.pending) > 0 && s.cache.stale(db, key) {
		return nil // the row must be written back first
	}
	if s.flightDone() {
		return nil
	}
	st := s.readerStmt(qq)
	st.int(1, int64(db))
	st.blob(2, key)
	s.asideReads++
	return st
}

// flightDone reports whether the flush that has the connection is done:
// landing it then costs no wait, and shows how it went.
func (s *Store) flightDone() bool {
	select {
	case <-s.c.lent.done:
		return true
	default:
		return false
	}
}

// readerStmt is qq prepared on the reader.
func (s *Store) readerStmt(qq *query) *stmt {
	st := s.rstmts[qq]
	if st == nil {
		var err error
		if st, err = s.rc.prepare(qq.sql); err != nil {
			panic(err) // a constant query; the tests prepare every one
		}
		s.rstmts[qq] = st
	}
	return st
}

// Element lookups aside a flush: a flush writes the pending elements it
// took (elems.go) and whatever element statements its transaction ran. If
// it ran none that changed an element of the collection (txElemSQL), an
// element's state is
// the flush's pending one if it took one, else the last commit's. So
// lookupElem answers from the elements pending now, then from the flying
// ones, then on the reader, and waits for nothing.

// lookupElem returns the pending state of c's element elem, or else
// qq's statement bound to c's id and elem, ready to step: on the reader
// aside a flush when it can, else on the actor's connection.
func (s *Store) lookupElem(qq *query, c *Coll, elem []byte) (*pelem, *stmt) {
	if e := s.pendingElem(c, elem); e != nil {
		return e, nil
	}
	return s.lookupStored(qq, c, elem)
}

// lookupStored is lookupElem for an element the caller found not pending
// (pendingElem, which left its key in s.ekbuf).
func (s *Store) lookupStored(qq *query, c *Coll, elem []byte) (*pelem, *stmt) {
	var st *stmt
	if s.c.lent != nil && s.asideOf(c) {
		if e := s.flyingElems[string(s.ekbuf)]; e != nil { // pendingElem made the key
			return e, nil
		}
		st = s.readerStmt(qq)
		s.asideReads++
	} else {
		st = s.q(qq)
	}
	bindElem(st, c.ID, elem)
	return nil, st
}

// asideOf reports whether c's elements may be read on the reader while a
// flush has the connection: the flush's transaction changed none of them
// by SQL, and it is not done (landing it then costs no wait).
func (s *Store) asideOf(c *Coll) bool {
	return s.rc != nil && !s.flightElemSQL.has(c.ID) && !s.flightDone()
}

// hasStored reports whether c has elem, by qq (a lookup that selects a row
// when it does), for an element the caller found not pending.
func (s *Store) hasStored(qq *query, c *Coll, elem []byte) (bool, error) {
	e, st := s.lookupStored(qq, c, elem)
	if e != nil {
		return !e.gone, nil
	}
	row, err := st.step()
	st.reset()
	return row, err
}

// elemSQL records which collections' elements a transaction changed by
// SQL: all of them, or those in ids (the pending elements it wrote, which
// say whose they are).
type elemSQL struct {
	all bool
	ids map[int64]struct{}
}

func (x *elemSQL) mark(id int64) {
	if x.ids == nil {
		x.ids = map[int64]struct{}{}
	}
	x.ids[id] = struct{}{}
}

func (x *elemSQL) has(id int64) bool {
	if x.all {
		return true
	}
	_, ok := x.ids[id]
	return ok
}

func (x *elemSQL) reset() {
	x.all = false
	x.ids = emptied(x.ids)
}

// AsideReads counts the lookups answered by the reader while a flush had
// the connection.
func (s *Store) AsideReads() uint64 { return s.asideReads }

// flyingString returns the string row the flush in flight took for key,
// which is the key's state once the flush lands, or nil. A row is frozen
// only while pending, and every statement on a key's row writes a pending
// row back first, so nothing in the flight's transaction changed the key
// after it; nothing since has either, unless the key may be pending now
// (stale), and then nil. So a SET or a GET of a key the flight wrote and
// the hot cache has let go need not wait for the flush (MSET's ~300 ms
// p99 was those waits).
func (s *Store) flyingString(db int, key []byte) *frozenRow {
	f := s.c.lent
	if f == nil || s.cache == nil || len(f.rows) == 0 || (len(s.pending) > 0 && s.cache.stale(db, key)) {
		return nil
	}
	if f.byKey == nil {
		f.byKey = make(map[string]int32, len(f.rows))
		for i := range f.rows {
			r := &f.rows[i]
			j, seen := f.byKey[r.k]
			switch {
			case r.coll != 0 || (seen && j < 0):
				f.byKey[r.k] = -1 // not a string's row: the lookup waits
			case !seen || f.rows[j].seq < r.seq:
				f.byKey[r.k] = int32(i)
			}
		}
	}
	i, ok := f.byKey[string(s.cache.key(db, key))]
	if !ok || i < 0 {
		return nil
	}
	if r := &f.rows[i]; !expired(r.exp, s.Now) {
		return r
	}
	return nil
}
