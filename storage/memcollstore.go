package storage

import (
	"encoding/binary"
	"math/rand/v2"
	"unsafe"

	"github.com/cellar-db/cellar/storage/object"
)

// Hashes and sets on the in-memory engine: a Coll names the entry, element
// operations run on its object.Elems, and EndCommand saves the count,
// version and change record once per command as on SQLite.

// elemsOf returns the element set of c's entry.
func (c *Coll) elems() *object.Elems {
	if c.e.typ == TypeZSet {
		return c.e.zset().Elems()
	}
	return c.e.elems()
}

func (m *memEngine) openColl(db int, key []byte, types []Type) (*Coll, error) {
	e, err := m.live(db, key)
	if err != nil || e == nil {
		return nil, err
	}
	for _, t := range types {
		if e.typ != t {
			continue
		}
		if t == TypeStream || t == TypeList {
			return nil, errMemUnsupported // they have operations of their own
		}
		n := objLen(e.object())
		c := &Coll{DB: db, Key: key, Type: t, ID: e.id, ExpireAt: m.expOf(e), Len: n, saved: n, e: e}
		if t == TypeHash {
			if gone := m.expireFieldsIfDue(c); gone {
				return nil, nil
			}
		}
		return c, nil
	}
	return nil, ErrWrongType
}

// createColl makes the absent entry of key a new, empty collection.
func (m *memEngine) createColl(db int, key []byte, t Type) (*Coll, error) {
	if t != TypeHash && t != TypeSet && t != TypeZSet {
		return nil, errMemUnsupported
	}
	e, err := m.entryAt(db, key)
	if err != nil {
		return nil, err
	}
	m.newKey(e, t)
	if t == TypeZSet {
		e.setObject(object.NewZSet())
	} else {
		e.setObject(object.NewElems())
	}
	m.changed(e)
	c := &Coll{DB: db, Key: key, Type: t, ID: e.id, created: true, e: e}
	m.s.changed(c, false)
	return c, nil
}

// replaceColl makes key a new, empty collection whatever it held.
func (m *memEngine) replaceColl(db int, key []byte, t Type) (*Coll, error) {
	e, err := m.entryAt(db, key)
	if err != nil {
		return nil, err
	}
	live := false
	if e.typ != TypeNone {
		live = !m.expiredEntry(e)
		kind := Change(0)
		if !live {
			kind = Expired
		}
		m.remove(e, kind)
	}
	c, err := m.createColl(db, key, t)
	if c != nil {
		c.replaced = live
	}
	return c, err
}

// saveColl is saveColl (collections.go) on the engine.
func (m *memEngine) saveColl(c *Coll) {
	e := c.e
	if c.Len <= 0 {
		kind := Deleted
		if c.created && !c.replaced {
			kind = 0
		}
		if e.typ != TypeNone {
			m.remove(e, kind)
		}
		c.saved, c.created, c.modified = 0, false, false
		return
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
	}
	if e.object().Changed() {
		m.changed(e) // even with nothing to record: the rows must follow
	}
	if kind == 0 {
		return
	}
	e.ver = m.s.nextVersion()
	m.changed(e)
	if c.created && !c.replaced {
		m.s.recordNew(c.DB, c.Key)
	}
	m.s.record(c.DB, c.Key, kind, 0)
	c.saved, c.created, c.modified = c.Len, false, false
}

func (m *memEngine) endCollections() {
	s := m.s
	for i, c := range s.open {
		c.open = false
		m.saveColl(c)
		s.open[i] = nil
	}
	s.open = s.open[:0]
}

// bytesOf is name's bytes without a copy; the caller only reads them.
func bytesOf(name string) []byte { return unsafe.Slice(unsafe.StringData(name), len(name)) }

// stringOf is b as a string without a copy: b must never be written again.
func stringOf(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// asElem presents an object element as the Store's Elem, sharing its bytes.
func asElem(el *object.Elem, out *Elem) {
	out.Member, out.Value, out.Score = bytesOf(el.Name), el.Value, el.Score
}

func own(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }

func (m *memEngine) hashGet(c *Coll, field, dst []byte) ([]byte, bool) {
	el, ok := c.elems().Get(field)
	if !ok {
		return dst, false
	}
	return append(dst, el.Value...), true
}

func (m *memEngine) hashSet(c *Coll, field, value []byte, mode int) bool {
	els := c.elems()
	if mode == HashKeepNew && els.Has(field) {
		return false
	}
	if !els.SetField(field, own(value), mode == HashKeepTTL, m.s.nextVersion) {
		m.s.changed(c, true)
		return false
	}
	c.Len++
	m.s.changed(c, false)
	return true
}

func (m *memEngine) removeElem(c *Coll, name []byte) bool {
	if c.Type == TypeZSet {
		return m.zRem(c, name)
	}
	if _, ok := c.elems().Delete(name); !ok {
		return false
	}
	c.Len--
	m.s.changed(c, false)
	return true
}

func (m *memEngine) setAdd(c *Coll, member []byte) bool {
	if !c.elems().Add(member) {
		return false
	}
	c.Len++
	m.s.changed(c, false)
	return true
}

func (m *memEngine) hashFieldExpiry(c *Coll, field []byte) (int64, bool) {
	el, ok := c.elems().Get(field)
	return el.Exp, ok
}

func (m *memEngine) hashSetFieldExpiry(c *Coll, field []byte, at int64) {
	els := c.elems()
	el, ok := els.Get(field)
	if !ok {
		return
	}
	el.Exp = at
	els.Put(el)
	if at != 0 {
		if was, ok := m.hfe[c.e]; !ok || at < was {
			m.hfe[c.e] = at
		}
	}
	m.s.changed(c, true)
}

// expireFieldsIfDue removes the fields of hash c past their expiry, when
// hfe says some may be; gone is true when that emptied the hash, which is
// then deleted.
func (m *memEngine) expireFieldsIfDue(c *Coll) (gone bool) {
	at, ok := m.hfe[c.e]
	if !ok || at >= m.s.Now {
		return false
	}
	els := c.elems()
	var due [][]byte
	next := int64(0)
	els.Each(func(el *object.Elem) bool {
		switch {
		case el.Exp == 0:
		case expired(el.Exp, m.s.Now):
			due = append(due, bytesOf(el.Name))
		case next == 0 || el.Exp < next:
			next = el.Exp
		}
		return true
	})
	if next == 0 {
		delete(m.hfe, c.e)
	} else {
		m.hfe[c.e] = next
	}
	if len(due) == 0 {
		return false
	}
	var fields []byte
	for _, f := range due {
		fields = binary.AppendUvarint(fields, uint64(len(f)))
		fields = append(fields, f...)
	}
	for _, f := range due {
		els.Delete(f)
	}
	n := int64(len(due))
	c.Len -= n
	c.saved -= n
	gone = c.Len <= 0
	if gone {
		m.remove(c.e, 0)
	} else {
		c.e.ver = m.s.nextVersion()
		m.changed(c.e)
	}
	m.s.recordFields(c.DB, c.Key, fields, gone)
	return gone
}

func (m *memEngine) elements(c *Coll, fn func(e *Elem) bool) {
	var out Elem
	c.elems().Each(func(el *object.Elem) bool {
		asElem(el, &out)
		return fn(&out)
	})
}

func (m *memEngine) allElements(c *Coll) []Elem {
	out := make([]Elem, 0, c.Len)
	c.elems().Each(func(el *object.Elem) bool {
		out = append(out, Elem{Member: []byte(el.Name), Value: el.Value, Score: el.Score})
		return true
	})
	return out
}

// scanElements is ScanElements (collections.go) on the element set: the
// same cursors, h order, whole runs of one h.
func (m *memEngine) scanElements(c *Coll, cursor uint64, count int, fn func(e *Elem)) uint64 {
	if cursor >= 1<<63 {
		return 0
	}
	count = min(max(count, 1), ScanLimit)
	n, last, next := 0, int64(-1), uint64(0)
	var out Elem
	c.elems().ScanFrom(int64(cursor), func(el *object.Elem) bool {
		if n >= count && el.H != last {
			next = uint64(el.H)
			return false
		}
		last = el.H
		n++
		asElem(el, &out)
		fn(&out)
		return true
	})
	return next
}

// sample is Sample (collections.go) on the element set: uniform, whatever
// the size.
func (m *memEngine) sample(c *Coll, n int64) []Elem {
	els := c.elems()
	size := int64(els.Len())
	if n <= 0 || size == 0 {
		return nil
	}
	if n >= size {
		return m.allElements(c)
	}
	out := make([]Elem, 0, n)
	if n*2 > size {
		// Most of it: a partial shuffle of every element.
		all := m.allElements(c)
		for i := int64(0); i < n; i++ {
			j := i + rand.Int64N(size-i)
			all[i], all[j] = all[j], all[i]
			out = append(out, all[i])
		}
		return out
	}
	seen := make(map[string]struct{}, n)
	for int64(len(out)) < n {
		el := els.Random()
		if _, dup := seen[el.Name]; dup {
			continue
		}
		seen[el.Name] = struct{}{}
		out = append(out, Elem{Member: []byte(el.Name), Value: el.Value, Score: el.Score})
	}
	return out
}

func (m *memEngine) sampleRepeats(c *Coll, n int64, fn func(e *Elem) bool) {
	els := c.elems()
	if n <= 0 || els.Len() == 0 {
		return
	}
	var out Elem
	for i := int64(0); i < n; i++ {
		el := els.Random()
		asElem(&el, &out)
		if !fn(&out) {
			return
		}
	}
}

// sweepFields expires the due fields of up to limit hashes: those memory
// holds (hfe), then those SQLite's last commit holds with a due field
// (hashes_by_expiry), loaded and opened as any command opens them.
func (m *memEngine) sweepFields(limit int) (int, error) {
	var due []*entry
	for e, at := range m.hfe {
		if len(due) >= limit {
			break
		}
		if at < m.s.Now {
			due = append(due, e)
		}
	}
	for _, e := range due {
		if _, err := m.openColl(m.dbOf(e).num, []byte(e.key()), []Type{TypeHash}); err != nil && err != ErrWrongType {
			return 0, err
		}
	}
	n := len(due)
	if n >= limit {
		return n, nil
	}
	stored, err := m.dueHashes(limit - n)
	if err != nil {
		return n, err
	}
	for _, r := range stored {
		if m.shadowed(r.db, &r.sqlRow) {
			continue // memory decides, and hfe had it if it is due
		}
		if _, err := m.openColl(r.db, r.key, []Type{TypeHash}); err != nil && err != ErrWrongType {
			return n, err
		}
		n++
	}
	return n, nil
}

// dueHashes reads up to limit hashes of SQLite's last commit that hold a
// field past its expiry, with the databases that hold them now (as
// dueRows, leaving out databases a database operation not yet committed
// has moved).
func (m *memEngine) dueHashes(limit int) ([]dueRow, error) {
	m.readMu.Lock()
	var logical [NumDBs]int
	for db := range logical {
		logical[db] = -1
		if sqlDB, empty := m.view(db, m.committed.Load()); !empty && sqlDB == db {
			logical[db] = db
		}
	}
	// The due fields' hashes through the expiry index, then each one's key
	// row by id: keys_by_id is (db, id), so the databases are listed for
	// it to seek in each. The statement of the ids stays open meanwhile, so
	// that every read sees the one commit (memload.go).
	ids := m.r.q(sqlDueHashIDs)
	ids.int(1, m.s.Now)
	ids.int(2, int64(limit))
	var out []dueRow
	err := m.eachRow(ids, func() {
		st := m.r.q("SELECT id, key, type, coalesce(expire_at, 0), db FROM keys WHERE db IN (0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15) AND id = ?1 AND type = 3")
		st.int(1, ids.colInt(0))
		if row, _ := st.step(); row {
			if db := logical[st.colInt(4)]; db >= 0 {
				out = append(out, dueRow{db, sqlRow{id: st.colInt(0), key: st.colBlob(1, nil), typ: Type(st.colInt(2)), exp: st.colInt(3)}})
			}
		}
		st.reset()
	})
	return out, err
}

// searchDoc is SearchDoc on the engine: the hash key of database 0, read
// without expiring it.
func (m *memEngine) searchDoc(key []byte, fn func(field, value []byte)) (bool, error) {
	e, err := m.entryAt(0, key)
	if err != nil || e.typ != TypeHash || m.expiredEntry(e) {
		return false, err
	}
	e.elems().Each(func(el *object.Elem) bool {
		fn(bytesOf(el.Name), el.Value)
		return true
	})
	return true, nil
}

// RemoveRead removes elements of c that the caller just read (SPOP, the
// pops of sorted sets): es as the read returned them.
func (s *Store) RemoveRead(c *Coll, es []Elem) error {
	for i := range es {
		s.mem.removeElem(c, es[i].Member)
	}
	return nil
}
