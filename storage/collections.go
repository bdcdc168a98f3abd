package storage

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/cellar-db/cellar/storage/object"
)

// This file holds what hashes, sets and sorted sets share: the open-key
// handle (Coll) that keeps the element count in the key's row, the element
// hash that orders rows for SCAN cursors and random sampling, and the hooks
// keys.go calls to drop and copy elements.
//
// Layout (migration 3): one table per type, keyed by (id, h, element) with
// h = elemHash(element). The count of elements is the keys row's value
// column (an INTEGER for these types), so HLEN/SCARD/ZCARD and "is it empty
// now" never count rows.

// Coll is a hash, set or sorted set key opened by one command. The command
// changes elements through the Store's element methods, which keep Len up
// to date and note the Coll as changed; when the command ends, EndCommand
// stores the new count, bumps the key's version, records the change, and
// deletes the key if it became empty. A Coll is valid only within the
// command that opened it.
type Coll struct {
	DB       int
	Key      []byte
	Type     Type
	ID       int64
	ExpireAt int64
	Len      int64  // element count, kept up to date by the element methods
	saved    int64  // Len as stored
	created  bool   // the key row was inserted by this command
	replaced bool   // created over a live key (ReplaceColl)
	modified bool   // an element changed in place (a value, a score)
	open     bool   // in Store.open, waiting for EndCommand
	e        *entry // the in-memory engine's entry of the key
}

var (
	qCollLookup = newAsideQuery("SELECT type, id, coalesce(expire_at, 0), coalesce(value, 0) FROM keys WHERE db = ?1 AND key = ?2")
	qCollCreate = newQuery("INSERT INTO keys (db, key, id, type, expire_at, version, value) VALUES (?1, ?2, ?3, ?4, NULL, ?5, 0)")
	qCollSave   = newQuery("UPDATE keys SET value = ?3, version = ?4 WHERE db = ?1 AND key = ?2")
)

// OpenColl finds the live key and checks that it is of type t. A key of
// another type is ErrWrongType; a missing key is (nil, nil).
func (s *Store) OpenColl(db int, key []byte, t Type) (*Coll, error) {
	return s.openColl(db, key, []Type{t})
}

func (s *Store) openColl(db int, key []byte, types []Type) (*Coll, error) {
	if s.mem != nil {
		return s.mem.openColl(db, key, types)
	}
	c, err := s.openCollRow(db, key, types)
	if c != nil && c.Type == TypeHash && len(s.hfe) > 0 {
		// Fields past their expiry go before anyone looks (hashfe.go).
		if gone, err := s.expireFieldsIfDue(c); err != nil || gone {
			return nil, err
		}
	}
	return c, err
}

// openCollRow is openColl without the expiry of hash fields.
func (s *Store) openCollRow(db int, key []byte, types []Type) (*Coll, error) {
	if e := s.cache.get(db, key, s.Now); e != nil {
		switch {
		case e.absent:
			return nil, nil
		case e.coll != 0:
			for _, t := range types {
				if e.coll == t {
					return &Coll{DB: db, Key: key, Type: t, ID: e.id, ExpireAt: e.exp, Len: e.n, saved: e.n}, nil
				}
			}
		}
		return nil, ErrWrongType // a string, or another collection type
	}
	st := s.qKey(qCollLookup, db, key)
	row, err := st.step()
	if err != nil || !row {
		st.reset()
		return nil, err
	}
	kt, id, exp, n := Type(st.colInt(0)), st.colInt(1), st.colInt(2), st.colInt(3)
	st.reset()
	if expired(exp, s.Now) {
		_, err := s.Delete(db, key)
		return nil, err
	}
	switch kt {
	case TypeHash, TypeSet, TypeZSet:
		s.cache.putColl(db, key, kt, id, n, exp)
	}
	for _, t := range types {
		if kt == t {
			return &Coll{DB: db, Key: key, Type: t, ID: id, ExpireAt: exp, Len: n, saved: n}, nil
		}
	}
	return nil, ErrWrongType
}

// OpenOrCreateColl is OpenColl that creates an empty key of type t when
// there is none. The command adds elements to it; if it adds none, the key
// goes again when the command ends (an empty collection never outlives its
// command).
func (s *Store) OpenOrCreateColl(db int, key []byte, t Type) (*Coll, error) {
	c, err := s.OpenColl(db, key, t)
	if err != nil || c != nil {
		return c, err
	}
	return s.createColl(db, key, t)
}

// createColl inserts the key row of a new, empty collection. The caller
// knows that no live key of that name exists.
func (s *Store) createColl(db int, key []byte, t Type) (*Coll, error) {
	if s.mem != nil {
		return s.mem.createColl(db, key, t)
	}
	s.cache.drop(db, key) // a negative entry
	id := s.NewID()
	st := s.q(qCollCreate)
	st.int(1, int64(db))
	st.blob(2, key)
	st.int(3, id)
	st.int(4, int64(t))
	st.int(5, s.nextVersion())
	if err := st.exec(); err != nil {
		return nil, err
	}
	s.Created(db)
	if t != TypeStream { // a stream keeps its own row (streams.go)
		s.cache.putColl(db, key, t, id, 0, 0)
	}
	c := &Coll{DB: db, Key: key, Type: t, ID: id, created: true}
	s.changed(c, false)
	return c, nil
}

// ReplaceColl makes key a fresh, empty collection of type t, deleting
// whatever it held (the STORE commands). The command adds the elements; a
// result with no elements leaves no key.
func (s *Store) ReplaceColl(db int, key []byte, t Type) (*Coll, error) {
	if s.mem != nil {
		return s.mem.replaceColl(db, key, t)
	}
	live, err := s.remove(db, key, 0)
	if err != nil {
		return nil, err
	}
	c, err := s.createColl(db, key, t)
	if c != nil {
		c.replaced = live
	}
	return c, err
}

// changed notes that the running command changed c (inPlace: an element
// changed without coming or going), so that EndCommand saves it.
func (s *Store) changed(c *Coll, inPlace bool) {
	s.dirty = true
	c.modified = c.modified || inPlace
	if !c.open {
		c.open = true
		s.open = append(s.open, c)
	}
}

// EndCommand ends the running command's changes to collections: for each
// one it changed, the new element count is stored, the key's version
// bumped and the change recorded, and a collection left empty is deleted
// (a hash, set or sorted set never exists empty). Counts are saved here,
// once per command, rather than at every element: a command that sets a
// thousand fields writes the key's row once. The actor calls it after
// every command and every woken waiter's retry, whether or not it
// succeeded (what a failed command changed is saved like the rest, unless
// it is undone); the handlers never do.
func (s *Store) EndCommand() error {
	if s.mem != nil {
		s.mem.endCollections()
		s.mem.endCommand()
		return nil
	}
	if len(s.open) == 0 {
		return nil
	}
	// While a flush has the connection, the open transaction has yet to
	// begin (Store.lazyBegin): nothing can have abandoned it, and asking
	// would wait for the flush.
	if s.c.lent == nil && s.abandoned() {
		s.dropOpen()
		return nil
	}
	var err error
	for i, c := range s.open {
		c.open = false
		if err == nil {
			err = s.saveColl(c)
		}
		s.open[i] = nil
	}
	s.open = s.open[:0]
	return err
}

// dropOpen forgets the changed collections without saving them (their
// changes are being undone or rolled back).
func (s *Store) dropOpen() {
	for i, c := range s.open {
		c.open = false
		s.open[i] = nil
	}
	s.open = s.open[:0]
}

// saveColl stores c's count and records the change, or deletes c if it is
// empty.
func (s *Store) saveColl(c *Coll) error {
	if c.Len <= 0 {
		kind := Deleted
		if c.created && !c.replaced {
			kind = 0 // created and emptied by one command: nobody saw it
		}
		if _, err := s.remove(c.DB, c.Key, kind); err != nil {
			return err
		}
		c.saved, c.created, c.modified = 0, false, false
		return nil
	}
	var kind Change
	switch {
	case c.created && c.replaced:
		kind = Written
	case c.created || c.Len > c.saved:
		kind = Added
	case c.Len < c.saved:
		kind = Removed
	case c.modified:
		kind = Modified
	default:
		return nil // what was added was removed again: nothing changed
	}
	if e := s.cache.coll(c.DB, c.Key, c.ID); e != nil {
		s.pend(e, c.Len, s.nextVersion()) // written back later (writeback.go)
	} else {
		st := s.q(qCollSave)
		st.int(1, int64(c.DB))
		st.blob(2, c.Key)
		st.int(3, c.Len)
		st.int(4, s.nextVersion())
		if err := st.exec(); err != nil {
			return err
		}
	}
	if c.created && !c.replaced {
		s.recordNew(c.DB, c.Key)
	}
	s.record(c.DB, c.Key, kind, 0)
	c.saved, c.created, c.modified = c.Len, false, false
	return nil
}

// elemHash orders a collection's rows (object.Hash: part of the file
// format).
func elemHash(b []byte) int64 { return object.Hash(b) }

// randomH is a uniform point of elemHash's range.
func randomH() int64 { return rand.Int64() }

// ScanLimit bounds the elements one SCAN-family call reads, whatever COUNT
// asks (a call returns at least min(COUNT, ScanLimit) elements unless the
// collection ends first).
const ScanLimit = 100000

var (
	qDropHash     = newQuery("DELETE FROM hashes WHERE id = ?1")
	qDropSet      = newQuery("DELETE FROM sets WHERE id = ?1")
	qDropZSet     = newQuery("DELETE FROM zsets WHERE id = ?1")
	qCopyHash     = newQuery("INSERT INTO hashes (id, h, field, value, ord, expire_at) SELECT ?2, h, field, value, ord, expire_at FROM hashes WHERE id = ?1 AND typeof(value) <> 'integer'")
	qHashRefs     = newQuery("SELECT h, value, field, ord, expire_at FROM hashes WHERE id = ?1 AND typeof(value) = 'integer'")
	qHashPutRef   = newQuery("INSERT INTO hashes (id, h, field, value, ord, expire_at) VALUES (?1, ?2, ?3, ?4, ?5, nullif(?6, 0))")
	qCopySet      = newQuery("INSERT INTO sets (id, h, member) SELECT ?2, h, member FROM sets WHERE id = ?1")
	qCopyZSet     = newQuery("INSERT INTO zsets (id, h, member, score) SELECT ?2, h, member, score FROM zsets WHERE id = ?1")
	qDropAllHash  = newQuery("DELETE FROM hashes WHERE id IN (SELECT id FROM keys WHERE db = ?1 AND type = 3)")
	qDropAllSet   = newQuery("DELETE FROM sets WHERE id IN (SELECT id FROM keys WHERE db = ?1 AND type = 4)")
	qDropAllZSets = newQuery("DELETE FROM zsets WHERE id IN (SELECT id FROM keys WHERE db = ?1 AND type = 5)")
)

// dropCollElements removes the elements of a hash, set or sorted set.
func (s *Store) dropCollElements(t Type, id int64) error {
	var st *stmt
	switch t {
	case TypeHash:
		st = s.q(qDropHash)
	case TypeSet:
		st = s.q(qDropSet)
	case TypeZSet:
		st = s.q(qDropZSet)
	default:
		return nil
	}
	st.int(1, id)
	s.dirty = true
	return st.exec()
}

// copyCollElements copies the elements of a hash, set or sorted set.
func (s *Store) copyCollElements(t Type, from, to int64) error {
	var st *stmt
	switch t {
	case TypeHash:
		st = s.q(qCopyHash)
	case TypeSet:
		st = s.q(qCopySet)
	case TypeZSet:
		st = s.q(qCopyZSet)
	default:
		return nil
	}
	st.int(1, from)
	st.int(2, to)
	s.dirty = true
	if err := st.exec(); err != nil || t != TypeHash {
		return err
	}
	if at, ok := s.hfe[from]; ok {
		s.noteFieldExpiry(to, at)
	}
	// Large values get blobs of their own (refs are never shared).
	refs, err := s.refRows(qHashRefs, from)
	if err != nil {
		return err
	}
	for _, r := range refs {
		ref, err := s.dupBlob(r.ref)
		if err != nil {
			return err
		}
		put := s.q(qHashPutRef)
		put.int(1, to)
		put.int(2, r.pos)
		put.blob(3, r.elem)
		put.int(4, ref)
		put.int(5, r.ord)
		put.int(6, r.exp)
		if err := put.exec(); err != nil {
			return err
		}
	}
	return nil
}

// dropAllCollElements removes the elements of every hash, set and sorted
// set of db (FLUSHDB), before their key rows go.
func (s *Store) dropAllCollElements(db int) error {
	for _, q := range []*query{qDropAllHash, qDropAllSet, qDropAllZSets} {
		st := s.q(q)
		st.int(1, int64(db))
		if err := st.exec(); err != nil {
			return err
		}
	}
	s.dirty = true
	return nil
}

// scanRows runs a SCAN-family walk over one collection: rows of id with
// h >= cursor in h order, at least count of them (whole runs of equal h, so
// that a cursor never splits one), and the next cursor (0 at the end). each
// is called with the statement positioned on a row.
func (s *Store) scanRows(from *query, id int64, cursor uint64, count int, each func(st *stmt)) (uint64, error) {
	if cursor >= 1<<63 {
		return 0, nil
	}
	count = min(max(count, 1), ScanLimit)
	st := s.q(from)
	st.int(1, id)
	st.int(2, int64(cursor))
	defer st.reset()
	n := 0
	var last int64 = -1
	for {
		row, err := st.step()
		if err != nil {
			return 0, err
		}
		if !row {
			return 0, nil
		}
		h := st.colInt(0)
		if n >= count && h != last {
			return uint64(h), nil
		}
		last = h
		n++
		each(st)
	}
}

// Elem is one element of a collection: a hash's field and value, a set's
// member, or a sorted set's member and score.
type Elem struct {
	Member []byte // hash field, set or sorted set member
	Value  []byte // hash value
	Score  float64
}

func (e *Elem) clone() Elem {
	return Elem{Member: append([]byte{}, e.Member...), Value: append([]byte(nil), e.Value...), Score: e.Score}
}

// elemQueries are the statements every collection type has, all selecting
// (h, member[, value or score]).
type elemQueries struct {
	all    *query // ?1 id
	scan   *query // ?1 id, ?2 first h: in h order
	nth    *query // ?1 id, ?2 offset: one row, in h order
	table  string
	hasVal bool // column 2 is a value blob
	hasSco bool // column 2 is a score
}

func newElemQueries(table, cols string, hasVal, hasSco bool) *elemQueries {
	sel := "SELECT h, " + cols + " FROM " + table + " WHERE id = ?1"
	return &elemQueries{
		all:  newQuery(sel),
		scan: newQuery(sel + " AND h >= ?2 ORDER BY h"),
		// The LIMIT is a constant: a bound LIMIT whose value changes makes
		// SQLite prepare the statement again; an OFFSET does not.
		nth:   newQuery(sel + " ORDER BY h LIMIT 1 OFFSET ?2"),
		table: table,

		hasVal: hasVal,
		hasSco: hasSco,
	}
}

var (
	hashElems = newElemQueries("hashes", "field, value", true, false)
	setElems  = newElemQueries("sets", "member", false, false)
	zsetElems = newElemQueries("zsets", "member, score", false, true)
)

func elemsOf(t Type) *elemQueries {
	switch t {
	case TypeHash:
		return hashElems
	case TypeSet:
		return setElems
	}
	return zsetElems
}

// readElem fills e from the row st is on (column 0 is h).
func (s *Store) readElem(q *elemQueries, st *stmt, e *Elem) (err error) {
	e.Member = st.colBlob(1, e.Member[:0])
	if q.hasVal {
		e.Value, err = s.colValue(st, 2, e.Value[:0])
	} else if q.hasSco {
		e.Score = st.colFloat(2)
	}
	return err
}

// each steps st to the end, calling fn with each row; fn's Elem is reused
// between rows. fn returning false stops early.
func (s *Store) each(q *elemQueries, st *stmt, fn func(e *Elem) bool) error {
	return s.eachLive(q, st, nil, false, fn)
}

// Elements calls fn with every element of c, in no particular order. The
// Elem (and its slices) is reused: fn copies what it keeps. fn must not
// change c.
func (s *Store) Elements(c *Coll, fn func(e *Elem) bool) error {
	if s.mem != nil {
		s.mem.elements(c, fn)
		return nil
	}
	q := elemsOf(c.Type)
	st, skip := s.elemRows(q.all, c)
	st.int(1, c.ID)
	return s.eachLive(q, st, c, skip, fn)
}

// qHashOrdered reads a hash's rows with their insertion numbers.
var qHashOrdered = newQuery("SELECT h, field, value, coalesce(ord, 0) FROM hashes WHERE id = ?1")

// ordRow is one row of a hash being put in insertion order: its number
// and where its field and value are in the arena.
type ordRow struct {
	ord             int64
	field, val, end int
}

// OrderedElements is Elements in the order Redis gives a collection in its
// compact encoding, where it can: a hash's fields in insertion order, for
// the callers of small hashes. The rows are read in storage order and
// sorted in memory (measured cheaper than SQLite's ORDER BY, which builds a
// sorter for every call); other types come in storage order.
func (s *Store) OrderedElements(c *Coll, fn func(e *Elem) bool) error {
	if s.mem != nil {
		s.mem.elements(c, fn) // a small set is in insertion order already
		return nil
	}
	if c.Type != TypeHash {
		return s.Elements(c, fn)
	}
	st := s.q(qHashOrdered)
	st.int(1, c.ID)
	rows, arena := s.ordRows[:0], s.ordArena[:0]
	var e Elem
	err := s.each(hashElems, st, func(e *Elem) bool {
		field := len(arena)
		arena = append(arena, e.Member...)
		val := len(arena)
		arena = append(arena, e.Value...)
		rows = append(rows, ordRow{ord: st.colInt(3), field: field, val: val, end: len(arena)})
		return true
	})
	if err == nil {
		slices.SortFunc(rows, func(a, b ordRow) int { return cmp.Compare(a.ord, b.ord) })
		for _, r := range rows {
			e.Member, e.Value = arena[r.field:r.val:r.val], arena[r.val:r.end:r.end]
			if !fn(&e) {
				break
			}
		}
	}
	if cap(arena) <= 1<<16 {
		s.ordRows, s.ordArena = rows[:0], arena[:0]
	}
	return err
}

// AllElements returns copies of every element of c, a small hash's in
// insertion order (OrderedElements).
func (s *Store) AllElements(c *Coll) ([]Elem, error) {
	if s.mem != nil {
		return s.mem.allElements(c), nil
	}
	out := make([]Elem, 0, min(c.Len, 1<<16))
	keep := func(e *Elem) bool {
		out = append(out, e.clone())
		return true
	}
	var err error
	if c.Type == TypeHash && c.Len <= SmallHash {
		err = s.OrderedElements(c, keep)
	} else {
		err = s.Elements(c, keep)
	}
	return out, err
}

// SmallHash is the size up to which Redis 7.0 keeps a hash in a listpack
// (hash-max-listpack-entries), in insertion order: AllElements keeps that
// order for hashes up to this size (HSCAN, HRANDFIELD with a count that
// takes every field).
const SmallHash = 128

// ScanElements is one call of HSCAN/SSCAN/ZSCAN: elements in h order from
// cursor on, at least count of them (never splitting a run of equal h), and
// the cursor to go on with (0 when done). An element present for a whole
// iteration is returned exactly once.
func (s *Store) ScanElements(c *Coll, cursor uint64, count int, fn func(e *Elem)) (uint64, error) {
	if s.mem != nil {
		return s.mem.scanElements(c, cursor, count, fn), nil
	}
	q := elemsOf(c.Type)
	var e Elem
	var rerr error
	next, err := s.scanRows(q.scan, c.ID, cursor, count, func(st *stmt) {
		if rerr != nil {
			return
		}
		if rerr = s.readElem(q, st, &e); rerr == nil {
			fn(&e)
		}
	})
	if err == nil {
		err = rerr
	}
	return next, err
}

// smallSample is the size up to which sampling reads the whole collection
// and picks uniformly in memory.
const smallSample = 1024

// repeatPool bounds the rows SampleRepeats reads for one call.
const repeatPool = 1 << 16

// Sample returns n different random elements of c (all of them when
// n >= Len), as SRANDMEMBER, SPOP, HRANDFIELD and ZRANDMEMBER with a
// positive count return. A small collection is sampled uniformly (one
// element as the row at a random offset, which SQLite skips to without
// reading the rows before it); a large one as a window of consecutive rows
// from a uniformly random point of its hash order, so the cost is
// O(n + log N) whatever N.
func (s *Store) Sample(c *Coll, n int64) ([]Elem, error) {
	if s.mem != nil {
		return s.mem.sample(c, n), nil
	}
	if n <= 0 || c.Len <= 0 {
		return nil, nil
	}
	if n >= c.Len {
		return s.AllElements(c)
	}
	if c.Len > smallSample {
		return s.window(c, n)
	}
	if n == 1 {
		if one, err := s.nth(c, rand.Int64N(c.Len)); err != nil || one != nil {
			return one, err
		}
	}
	all, err := s.AllElements(c)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	n = min(n, int64(len(all)))
	for i := int64(0); i < n; i++ {
		j := i + rand.Int64N(int64(len(all))-i)
		all[i], all[j] = all[j], all[i]
	}
	return all[:n], nil
}

// SampleRepeats calls fn with n random elements of c, repeats allowed (the
// negative counts of the random commands); fn returning false stops it. A
// collection of up to 65 536 elements is sampled uniformly; a larger one
// by one seek per pick for small n, else by uniform picks from a window of
// up to 65 536 consecutive rows at a random point of the hash order. Memory
// and reads stay bounded whatever n; the caller bounds the reply.
func (s *Store) SampleRepeats(c *Coll, n int64, fn func(e *Elem) bool) error {
	if s.mem != nil {
		s.mem.sampleRepeats(c, n, fn)
		return nil
	}
	if n <= 0 || c.Len <= 0 {
		return nil
	}
	if c.Len > repeatPool && n <= smallSample {
		for i := int64(0); i < n; i++ {
			one, err := s.window(c, 1)
			if err != nil {
				return err
			}
			if len(one) > 0 && !fn(&one[0]) {
				return nil
			}
		}
		return nil
	}
	var pool []Elem
	var err error
	if c.Len <= repeatPool {
		pool, err = s.AllElements(c)
	} else {
		pool, err = s.window(c, min(n, repeatPool))
	}
	if err != nil || len(pool) == 0 {
		return err
	}
	for i := int64(0); i < n; i++ {
		if !fn(&pool[rand.IntN(len(pool))]) {
			return nil
		}
	}
	return nil
}

// nth returns c's element at offset i of its hash order, or nil when the
// offset cannot be trusted: rows may be gone (elemRows), or there are
// fewer than c.Len.
func (s *Store) nth(c *Coll, i int64) ([]Elem, error) {
	q := elemsOf(c.Type)
	st, skip := s.elemRows(q.nth, c)
	if skip {
		st.reset()
		return nil, nil
	}
	st.int(1, c.ID)
	st.int(2, i)
	var out []Elem
	err := s.each(q, st, func(e *Elem) bool {
		out = append(out, e.clone())
		return false
	})
	return out, err
}

// window reads n consecutive rows of c's hash order from a random point,
// wrapping around at the end.
func (s *Store) window(c *Coll, n int64) ([]Elem, error) {
	q := elemsOf(c.Type)
	out := make([]Elem, 0, n)
	keep := func(e *Elem) bool {
		out = append(out, e.clone())
		return int64(len(out)) < n
	}
	// The scans have no LIMIT: keep stops them. (A LIMIT bound to a value
	// that changes between calls makes SQLite prepare the statement again.)
	for _, from := range []int64{randomH(), math.MinInt64} {
		st, skip := s.elemRows(q.scan, c)
		st.int(1, c.ID)
		st.int(2, from)
		if err := s.eachLive(q, st, c, skip, keep); err != nil || int64(len(out)) == n {
			return out, err
		}
	}
	return out, nil
}

// OpenAnyColl is OpenColl for a key that may be of any of types (the
// sorted-set operations also read sets); c.Type says which it is.
func (s *Store) OpenAnyColl(db int, key []byte, types ...Type) (*Coll, error) {
	return s.openColl(db, key, types)
}
