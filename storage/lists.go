package storage

import (
	"errors"
	"math"

	sqlite3 "modernc.org/sqlite/lib"
)

// End is one end of a list: Left is the head (index 0), Right the tail.
type End uint8

const (
	Left End = iota
	Right
)

// ErrIndexRange is an index outside a list (LSET).
var ErrIndexRange = errors.New("storage: index out of range")

// A list's elements live in list_items under the key's id, at contiguous
// integer positions (see migration 2). The key row carries no list metadata:
// the head and tail are the first and last positions of the index, read
// together with the key in one statement, so there is nothing to keep in
// step and nothing to go stale.
var (
	qListInfo = newQuery(`SELECT k.type, k.id, coalesce(k.expire_at, 0),
		(SELECT pos FROM list_items WHERE id = k.id ORDER BY pos ASC LIMIT 1),
		(SELECT pos FROM list_items WHERE id = k.id ORDER BY pos DESC LIMIT 1)
		FROM keys AS k WHERE k.db = ?1 AND k.key = ?2`)
	qListNewKey    = newQuery("INSERT INTO keys (db, key, id, type, expire_at, version, value) VALUES (?1, ?2, ?3, 2, NULL, ?4, NULL)")
	qTouch         = newQuery("UPDATE keys SET version = ?3 WHERE db = ?1 AND key = ?2")
	qListInsert    = newQuery("INSERT INTO list_items (id, pos, value) VALUES (?1, ?2, ?3)")
	qListAt        = newQuery("SELECT value FROM list_items WHERE id = ?1 AND pos = ?2")
	qListDelAt     = newQuery("DELETE FROM list_items WHERE id = ?1 AND pos = ?2")
	qListSetAt     = newQuery("UPDATE list_items SET value = ?3 WHERE id = ?1 AND pos = ?2")
	qListMovePos   = newQuery("UPDATE list_items SET pos = ?3 WHERE id = ?1 AND pos = ?2")
	qListAsc       = newQuery("SELECT value FROM list_items WHERE id = ?1 AND pos BETWEEN ?2 AND ?3 ORDER BY pos ASC")
	qListDesc      = newQuery("SELECT value FROM list_items WHERE id = ?1 AND pos BETWEEN ?2 AND ?3 ORDER BY pos DESC")
	qListDelRange  = newQuery("DELETE FROM list_items WHERE id = ?1 AND pos BETWEEN ?2 AND ?3")
	qListFindAsc   = newQuery("SELECT pos FROM list_items WHERE id = ?1 AND pos BETWEEN ?2 AND ?3 AND " + valueExpr + " = ?4 ORDER BY pos ASC LIMIT ?5 OFFSET ?6")
	qListFindDesc  = newQuery("SELECT pos FROM list_items WHERE id = ?1 AND pos BETWEEN ?2 AND ?3 AND " + valueExpr + " = ?4 ORDER BY pos DESC LIMIT ?5 OFFSET ?6")
	qListRemAsc    = newQuery("DELETE FROM list_items WHERE id = ?1 AND pos IN (SELECT pos FROM list_items WHERE id = ?1 AND " + valueExpr + " = ?2 ORDER BY pos ASC LIMIT ?3) RETURNING pos, value")
	qListRemDesc   = newQuery("DELETE FROM list_items WHERE id = ?1 AND pos IN (SELECT pos FROM list_items WHERE id = ?1 AND " + valueExpr + " = ?2 ORDER BY pos DESC LIMIT ?3) RETURNING pos, value")
	qListShift     = newQuery("UPDATE list_items SET pos = pos + ?4 WHERE id = ?1 AND pos BETWEEN ?2 AND ?3")
	qListUnparkBy  = newQuery("UPDATE list_items SET pos = pos + ?3 WHERE id = ?1 AND pos > ?2")
	qListUnparkSeq = newQuery(`UPDATE list_items SET pos = r.np
		FROM (SELECT pos AS op, ?3 - 1 + row_number() OVER (ORDER BY pos) AS np
		      FROM list_items WHERE id = ?1 AND pos > ?2) AS r
		WHERE list_items.id = ?1 AND list_items.pos = r.op`)
	qListDrop    = newQuery("DELETE FROM list_items WHERE id = ?1")
	qListCopy    = newQuery("INSERT INTO list_items (id, pos, value) SELECT ?2, pos, value FROM list_items WHERE id = ?1 AND typeof(value) <> 'integer'")
	qListRefs    = newQuery("SELECT pos, value FROM list_items WHERE id = ?1 AND typeof(value) = 'integer'")
	qListPutRef  = newQuery("INSERT INTO list_items (id, pos, value) VALUES (?1, ?2, ?3)")
	qListDropAll = newQuery("DELETE FROM list_items WHERE id IN (SELECT id FROM keys WHERE db = ?1 AND type = 2)")

	// Deleting list elements leaves their blobs to the garbage (blobs.go):
	// these move the refs first, as no trigger does it (migration 10).
	qListKeepRange = newQuery("INSERT INTO blob_garbage SELECT value FROM list_items WHERE id = ?1 AND pos BETWEEN ?2 AND ?3 AND typeof(value) = 'integer'")
	qListKeepAll   = newQuery("INSERT INTO blob_garbage SELECT value FROM list_items WHERE id = ?1 AND typeof(value) = 'integer'")
	qListKeepDB    = newQuery("INSERT INTO blob_garbage SELECT value FROM list_items WHERE id IN (SELECT id FROM keys WHERE db = ?1 AND type = 2) AND typeof(value) = 'integer'")
)

// A pop from a cached list reads its element and leaves the row in SQLite:
// the cached entry counts it as stale (centry.lstale/rstale), outside
// head..tail where no list statement but the unbounded ones looks, and the
// write-back deletes the stale rows in one range per end (settle). A queue's
// pop then costs one index lookup. Everything that could see a stale row
// settles first: the write-back runs before any statement on the keys
// table (so before an uncached list's bounds are read from its rows, and
// before every key-level command), and the list commands whose statements
// are not bounded by head..tail, or that move rows, settle their list
// (settleList). A stale row's blob ref goes to the garbage when the row is
// deleted, never before, so it stays valid while the row exists.

// listRef is a live, non-empty list as one statement found it.
type listRef struct {
	id         int64
	head, tail int64 // positions of index 0 and index len-1
}

func (l listRef) length() int64 { return l.tail - l.head + 1 }

// openList finds the live list at key. A missing or expired key is
// ok == false; a key of another type is ErrWrongType.
func (s *Store) openList(db int, key []byte) (l listRef, ok bool, err error) {
	if e := s.cache.get(db, key, s.Now); e != nil {
		switch {
		case e.absent:
			return l, false, nil
		case e.coll == TypeList:
			return listRef{id: e.id, head: e.head, tail: e.tail}, true, nil
		}
		return l, false, ErrWrongType
	}
	st := s.q(qListInfo)
	st.int(1, int64(db))
	st.blob(2, key)
	row, err := st.step()
	if err != nil || !row {
		st.reset()
		return l, false, err
	}
	t, id, exp := Type(st.colInt(0)), st.colInt(1), st.colInt(2)
	empty := st.colNull(3)
	head, tail := st.colInt(3), st.colInt(4)
	st.reset()
	if expired(exp, s.Now) {
		_, err := s.Delete(db, key)
		return l, false, err
	}
	if t != TypeList {
		return l, false, ErrWrongType
	}
	if empty {
		// Every write that empties a list deletes its key, so this cannot
		// happen; should a file hold one anyway, it is treated (and
		// cleaned up) as the missing key it stands for.
		_, err := s.Delete(db, key)
		return l, false, err
	}
	l = listRef{id: id, head: head, tail: tail}
	s.cachedList(db, key, l, exp)
	return l, true, nil
}

// openSettled is openList for the commands whose statements could see a
// stale row: the list's stale rows are deleted first.
func (s *Store) openSettled(db int, key []byte) (l listRef, ok bool, err error) {
	if l, ok, err = s.openList(db, key); ok {
		err = s.settleList(db, key, l.id)
	}
	return l, ok, err
}

// settleList deletes the stale rows of the list at key, if it is cached
// with some.
func (s *Store) settleList(db int, key []byte, id int64) error {
	if e := s.cache.coll(db, key, id); e != nil {
		return s.settle(e)
	}
	return nil
}

// settle deletes cached list e's stale rows.
func (s *Store) settle(e *centry) error {
	if e.lstale > 0 {
		if err := s.delRange(e.id, e.head-e.lstale, e.head-1); err != nil {
			return err
		}
		e.lstale = 0
	}
	if e.rstale > 0 {
		if err := s.delRange(e.id, e.tail+1, e.tail+e.rstale); err != nil {
			return err
		}
		e.rstale = 0
	}
	return nil
}

// cachedList caches live list l's key row.
func (s *Store) cachedList(db int, key []byte, l listRef, exp int64) {
	if e := s.cache.putColl(db, key, TypeList, l.id, 0, exp); e != nil {
		e.head, e.tail = l.head, l.tail
	}
}

// ended ends a push or pop on list l, which now spans l.head..l.tail: the
// cached row follows it and its new version waits there (writeback.go);
// an uncached list is touched in SQLite.
func (s *Store) ended(db int, key []byte, l listRef, kind Change) error {
	e := s.cache.coll(db, key, l.id)
	if e == nil {
		return s.touch(db, key, kind)
	}
	e.head, e.tail = l.head, l.tail
	s.pend(e, 0, s.nextVersion())
	s.record(db, key, kind, 0)
	return nil
}

// touch ends any other write to an existing list: the key's version is
// bumped and the change recorded as kind. The list's cached row goes (its
// positions may have moved).
func (s *Store) touch(db int, key []byte, kind Change) error {
	s.cache.drop(db, key)
	st := s.q(qTouch)
	st.int(1, int64(db))
	st.blob(2, key)
	st.int(3, s.nextVersion())
	if err := st.exec(); err != nil {
		return err
	}
	s.record(db, key, kind, 0)
	return nil
}

// ListLen is the length of the list at key: 0 when missing, ErrWrongType
// for another type.
func (s *Store) ListLen(db int, key []byte) (int64, error) {
	if s.mem != nil {
		return s.mem.listLen(db, key)
	}
	l, ok, err := s.openList(db, key)
	if err != nil || !ok {
		return 0, err
	}
	return l.length(), nil
}

// ListPush pushes vals, one after the other, at end of the list at key and
// returns the new length. A missing key is created, unless onlyExisting
// (LPUSHX/RPUSHX), in which case nothing happens and the length is 0.
func (s *Store) ListPush(db int, key []byte, end End, vals [][]byte, onlyExisting bool) (int64, error) {
	if s.mem != nil {
		return s.mem.listPush(db, key, end, vals, onlyExisting)
	}
	l, ok, err := s.openList(db, key)
	if err != nil {
		return 0, err
	}
	if !ok {
		if onlyExisting || len(vals) == 0 {
			return 0, nil
		}
		s.cache.drop(db, key) // a negative entry
		id := s.NewID()
		st := s.q(qListNewKey)
		st.int(1, int64(db))
		st.blob(2, key)
		st.int(3, id)
		st.int(4, s.nextVersion())
		if err := st.exec(); err != nil {
			return 0, err
		}
		s.Created(db)
		s.recordNew(db, key)
		l = listRef{id: id, head: 0, tail: -1}
	} else if err := s.settleList(db, key, l.id); err != nil {
		// The new elements' positions may hold stale rows.
		return 0, err
	}
	for _, v := range vals {
		var pos int64
		if end == Left {
			l.head--
			pos = l.head
		} else {
			l.tail++
			pos = l.tail
		}
		if err := s.insertItem(l.id, pos, v); err != nil {
			return 0, err
		}
	}
	if !ok {
		s.cachedList(db, key, l, 0)
		s.record(db, key, Added, 0) // its version is the insert's
		return l.length(), nil
	}
	return l.length(), s.ended(db, key, l, Added)
}

func (s *Store) insertItem(id, pos int64, v []byte) error {
	st := s.q(qListInsert)
	st.int(1, id)
	st.int(2, pos)
	if _, err := s.bindValue(st, 3, v, 0); err != nil {
		st.reset()
		return err
	}
	return st.exec()
}

// readRange appends the values at positions lo..hi, in order (descending
// when desc), to a fresh slice.
func (s *Store) readRange(id, lo, hi int64, desc bool, n int64) ([][]byte, error) {
	st := s.q(qListAsc)
	if desc {
		st = s.q(qListDesc)
	}
	st.int(1, id)
	st.int(2, lo)
	st.int(3, hi)
	defer st.reset()
	var arena []byte
	ends := make([]int, 0, n)
	for {
		row, err := st.step()
		if err != nil {
			return nil, err
		}
		if !row {
			break
		}
		if arena, err = s.colValue(st, 0, arena); err != nil {
			return nil, err
		}
		ends = append(ends, len(arena))
	}
	vals := make([][]byte, len(ends))
	start := 0
	for i, e := range ends {
		vals[i] = arena[start:e:e]
		start = e
	}
	return vals, nil
}

// eachInRange calls fn with each value at positions lo..hi in ascending
// order; v is only valid during the call.
func (s *Store) eachInRange(id, lo, hi int64, fn func(v []byte)) error {
	st := s.q(qListAsc)
	st.int(1, id)
	st.int(2, lo)
	st.int(3, hi)
	defer st.reset()
	var buf []byte
	for {
		row, err := st.step()
		if err != nil || !row {
			return err
		}
		if buf, err = s.colValue(st, 0, buf[:0]); err != nil {
			return err
		}
		fn(buf)
	}
}

// ListPop removes up to count (>= 1) elements from end of the list at key
// and returns them in the order they were removed. A list emptied by the
// pop is deleted. A missing key returns nil.
func (s *Store) ListPop(db int, key []byte, end End, count int64) ([][]byte, error) {
	if s.mem != nil {
		return s.mem.listPop(db, key, end, count)
	}
	l, ok, err := s.openList(db, key)
	if err != nil || !ok || count <= 0 {
		return nil, err
	}
	return s.popFrom(db, key, l, end, count)
}

func (s *Store) popFrom(db int, key []byte, l listRef, end End, count int64) ([][]byte, error) {
	n := min(count, l.length())
	if n == 1 && l.length() > 1 {
		// The queue's common case: one statement takes the element.
		pos := l.head
		if end == Right {
			pos = l.tail
		}
		v, ref, err := s.listAt(l.id, pos, nil)
		if err != nil {
			return nil, err
		}
		if e := s.cache.coll(db, key, l.id); e != nil {
			e.stale(end, 1)
		} else if err := s.delAt(l.id, pos, ref); err != nil {
			return nil, err
		}
		if end == Right {
			l.tail--
		} else {
			l.head++
		}
		return [][]byte{v}, s.ended(db, key, l, Removed)
	}
	lo, hi := l.head, l.head+n-1
	if end == Right {
		lo, hi = l.tail-n+1, l.tail
	}
	vals, err := s.readRange(l.id, lo, hi, end == Right, n)
	if err != nil {
		return nil, err
	}
	if n == l.length() {
		_, err = s.Delete(db, key)
		return vals, err
	}
	if e := s.cache.coll(db, key, l.id); e != nil {
		e.stale(end, n)
	} else if err := s.delRange(l.id, lo, hi); err != nil {
		return nil, err
	}
	if end == Right {
		l.tail = lo - 1
	} else {
		l.head = hi + 1
	}
	return vals, s.ended(db, key, l, Removed)
}

// ListRange reports through count how many elements LRANGE start stop
// selects (negative indexes count from the tail, as in Redis), then calls
// fn with each of them in order. v is only valid during the call. A
// missing key (found false) selects nothing.
func (s *Store) ListRange(db int, key []byte, start, stop int64, count func(n int64), fn func(v []byte)) (found bool, err error) {
	if s.mem != nil {
		return s.mem.listRange(db, key, start, stop, count, fn)
	}
	l, ok, err := s.openList(db, key)
	if err != nil {
		return false, err
	}
	if !ok {
		count(0)
		return false, nil
	}
	llen := l.length()
	if start < 0 {
		start += llen
	}
	if stop < 0 {
		stop += llen
	}
	start = max(start, 0)
	if start > stop || start >= llen {
		count(0)
		return true, nil
	}
	stop = min(stop, llen-1)
	count(stop - start + 1)
	return true, s.eachInRange(l.id, l.head+start, l.head+stop, fn)
}

// ListIndex appends the element at index (negative from the tail) to dst.
// found is false for a missing key or an index outside the list.
func (s *Store) ListIndex(db int, key []byte, index int64, dst []byte) ([]byte, bool, error) {
	if s.mem != nil {
		return s.mem.listIndex(db, key, index, dst)
	}
	l, ok, err := s.openList(db, key)
	if err != nil || !ok {
		return dst, false, err
	}
	if index < 0 {
		index += l.length()
	}
	if index < 0 || index >= l.length() {
		return dst, false, nil
	}
	v, _, err := s.listAt(l.id, l.head+index, dst)
	return v, err == nil, err
}

// listAt appends the value at position pos of list id to dst and returns
// the value's blob ref when it has one; a missing row means the list's
// positions are corrupt.
func (s *Store) listAt(id, pos int64, dst []byte) (v []byte, ref int64, err error) {
	st := s.q(qListAt)
	defer st.reset()
	st.int(1, id)
	st.int(2, pos)
	row, err := st.step()
	if err != nil {
		return dst, 0, err
	}
	if !row {
		return dst, 0, &Error{Code: codeCorrupt, Msg: "a list misses an element between its head and tail"}
	}
	if st.colType(0) == sqlite3.SQLITE_INTEGER {
		ref = st.colInt(0)
	}
	v, err = s.colValue(st, 0, dst)
	return v, ref, err
}

// stale counts n rows popped from end of cached list e as stale.
func (e *centry) stale(end End, n int64) {
	if end == Left {
		e.lstale += n
	} else {
		e.rstale += n
	}
}

// delAt deletes list id's element at pos, whose value has blob ref ref (0
// when inline).
func (s *Store) delAt(id, pos, ref int64) error {
	if ref != 0 {
		if err := s.keepRef(ref); err != nil {
			return err
		}
	}
	st := s.q(qListDelAt)
	st.int(1, id)
	st.int(2, pos)
	return st.exec()
}

// delRange deletes list id's elements at positions lo..hi, their blobs
// left to the garbage.
func (s *Store) delRange(id, lo, hi int64) error {
	keep := s.prepared(qListKeepRange)
	keep.int(1, id)
	keep.int(2, lo)
	keep.int(3, hi)
	if err := keep.exec(); err != nil {
		return err
	}
	st := s.prepared(qListDelRange)
	st.int(1, id)
	st.int(2, lo)
	st.int(3, hi)
	return st.exec()
}

// ListSet replaces the element at index (negative from the tail): a
// missing key is ErrNoSuchKey, an index outside the list ErrIndexRange.
func (s *Store) ListSet(db int, key []byte, index int64, val []byte) error {
	if s.mem != nil {
		return s.mem.listSet(db, key, index, val)
	}
	l, ok, err := s.openSettled(db, key)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNoSuchKey
	}
	if index < 0 {
		index += l.length()
	}
	if index < 0 || index >= l.length() {
		return ErrIndexRange
	}
	st := s.q(qListSetAt)
	st.int(1, l.id)
	st.int(2, l.head+index)
	if _, err := s.bindValue(st, 3, val, 0); err != nil {
		st.reset()
		return err
	}
	if err := st.exec(); err != nil {
		return err
	}
	return s.touch(db, key, Modified)
}

// find returns the positions of the elements equal to val among positions
// lo..hi, ascending (or descending from hi when desc), skipping the first
// skip matches and returning at most limit (all when limit < 0).
func (s *Store) find(id, lo, hi int64, val []byte, desc bool, skip, limit int64, fn func(pos int64)) error {
	st := s.q(qListFindAsc)
	if desc {
		st = s.q(qListFindDesc)
	}
	st.int(1, id)
	st.int(2, lo)
	st.int(3, hi)
	st.blob(4, val)
	st.int(5, limit)
	st.int(6, skip)
	defer st.reset()
	for {
		row, err := st.step()
		if err != nil || !row {
			return err
		}
		fn(st.colInt(0))
	}
}

// ListInsert inserts val before (or after) the first element equal to
// pivot and returns the new length: 0 for a missing key, -1 when pivot is
// not in the list. The shorter side of the list moves to make room.
func (s *Store) ListInsert(db int, key []byte, before bool, pivot, val []byte) (int64, error) {
	if s.mem != nil {
		return s.mem.listInsert(db, key, before, pivot, val)
	}
	l, ok, err := s.openSettled(db, key)
	if err != nil || !ok {
		return 0, err
	}
	p, found := int64(0), false
	err = s.find(l.id, l.head, l.tail, pivot, false, 0, 1, func(pos int64) { p, found = pos, true })
	if err != nil {
		return 0, err
	}
	if !found {
		return -1, nil
	}
	// The new element goes between lastLeft and firstRight.
	lastLeft, firstRight := p-1, p
	if !before {
		lastLeft, firstRight = p, p+1
	}
	var pos int64
	if lastLeft-l.head+1 <= l.tail-firstRight+1 {
		err = s.shift(l, l.head, lastLeft, -1)
		pos = lastLeft
	} else {
		err = s.shift(l, firstRight, l.tail, +1)
		pos = firstRight
	}
	if err != nil {
		return 0, err
	}
	if err := s.insertItem(l.id, pos, val); err != nil {
		return 0, err
	}
	return l.length() + 1, s.touch(db, key, Added)
}

// shift moves the contiguous rows at positions lo..hi by delta (±1) into a
// slot the caller has made free. SQLite checks the primary key row by row,
// so an in-place "pos = pos + 1" could collide with a row not yet moved:
// the rows are first parked above every position in use, then brought
// back, each step moving into free positions only.
func (s *Store) shift(l listRef, lo, hi, delta int64) error {
	if lo > hi {
		return nil
	}
	ceiling := max(l.tail, hi+delta)
	park, err := s.park(l.id, lo, hi, ceiling)
	if err != nil {
		return err
	}
	st := s.q(qListUnparkBy)
	st.int(1, l.id)
	st.int(2, ceiling)
	st.int(3, delta-park)
	return st.exec()
}

// park moves the rows at positions lo..hi of list id above ceiling, by
// park = ceiling+1-lo, so that they can come back into any free positions.
func (s *Store) park(id, lo, hi, ceiling int64) (park int64, err error) {
	park = ceiling + 1 - lo
	st := s.q(qListShift)
	st.int(1, id)
	st.int(2, lo)
	st.int(3, hi)
	st.int(4, park)
	return park, st.exec()
}

// repack renumbers the rows found at positions lo..hi (which has holes)
// to contiguous positions from newLo, keeping their order. The caller
// guarantees no row outside lo..hi lies in the target range; like shift, it
// parks the rows above every position in use first.
func (s *Store) repack(l listRef, lo, hi, newLo int64) error {
	ceiling := l.tail
	if _, err := s.park(l.id, lo, hi, ceiling); err != nil {
		return err
	}
	st := s.q(qListUnparkSeq)
	st.int(1, l.id)
	st.int(2, ceiling)
	st.int(3, newLo)
	return st.exec()
}

// ListRem removes elements equal to val: the first count from the head
// (count > 0), the last -count from the tail (count < 0), or all (0). It
// returns how many it removed; a list left empty is deleted.
func (s *Store) ListRem(db int, key []byte, count int64, val []byte) (int64, error) {
	if s.mem != nil {
		return s.mem.listRem(db, key, count, val)
	}
	l, ok, err := s.openSettled(db, key)
	if err != nil || !ok {
		return 0, err
	}
	st := s.q(qListRemAsc)
	limit := count
	switch {
	case count < 0:
		st = s.q(qListRemDesc)
		limit = -count
		if count == math.MinInt64 {
			limit = math.MaxInt64
		}
	case count == 0:
		limit = -1
	}
	st.int(1, l.id)
	st.blob(2, val)
	st.int(3, limit)
	var k, first, last int64
	var refs []int64
	for {
		row, err := st.step()
		if err != nil {
			st.reset()
			return 0, err
		}
		if !row {
			break
		}
		if st.colType(1) == sqlite3.SQLITE_INTEGER {
			refs = append(refs, st.colInt(1))
		}
		pos := st.colInt(0)
		if k == 0 || pos < first {
			first = pos
		}
		if k == 0 || pos > last {
			last = pos
		}
		k++
	}
	st.reset()
	if k == 0 {
		return 0, nil
	}
	for _, ref := range refs {
		if err := s.keepRef(ref); err != nil {
			return 0, err
		}
	}
	s.dirty = true
	if k == l.length() {
		_, err := s.Delete(db, key)
		return k, err
	}
	// Close the holes by moving whichever side has fewer rows to move.
	right := (l.tail - first + 1) - k // rows at first..tail
	left := (last - l.head + 1) - k   // rows at head..last
	if right <= left {
		if right > 0 {
			err = s.repack(l, first, l.tail, first)
		}
	} else if left > 0 {
		err = s.repack(l, l.head, last, l.head+k)
	}
	if err != nil {
		return 0, err
	}
	return k, s.touch(db, key, Removed)
}

// ListTrim keeps only the elements from index start to stop (LTRIM's
// semantics); a list left empty is deleted. A missing key is not an error.
func (s *Store) ListTrim(db int, key []byte, start, stop int64) error {
	if s.mem != nil {
		return s.mem.listTrim(db, key, start, stop)
	}
	l, ok, err := s.openSettled(db, key)
	if err != nil || !ok {
		return err
	}
	llen := l.length()
	if start < 0 {
		start += llen
	}
	if stop < 0 {
		stop += llen
	}
	start = max(start, 0)
	if start > stop || start >= llen {
		_, err := s.Delete(db, key)
		return err
	}
	stop = min(stop, llen-1)
	del := func(lo, hi int64) error {
		if lo > hi {
			return nil
		}
		s.dirty = true
		return s.delRange(l.id, lo, hi)
	}
	if err := del(l.head, l.head+start-1); err != nil {
		return err
	}
	if err := del(l.head+stop+1, l.tail); err != nil {
		return err
	}
	kind := Modified
	if start > 0 || stop < llen-1 {
		kind = Removed
	}
	return s.touch(db, key, kind)
}

// ListPos finds elements equal to val the way LPOS does: rank r > 0 skips
// the first r-1 matches from the head, r < 0 counts from the tail; at most
// limit matches (all when limit is 0); only the first maxlen elements
// scanned are compared (all when maxlen is 0). fn receives each match's
// index, in scan order.
func (s *Store) ListPos(db int, key, val []byte, rank, limit, maxlen int64, fn func(index int64)) (found bool, err error) {
	if s.mem != nil {
		return s.mem.listPos(db, key, val, rank, limit, maxlen, fn)
	}
	l, ok, err := s.openList(db, key)
	if err != nil || !ok {
		return false, err
	}
	lo, hi := l.head, l.tail
	desc := rank < 0
	skip := rank - 1
	if desc {
		skip = -rank - 1 // rank > MinInt64: the caller refuses it
		if maxlen > 0 && maxlen < l.length() {
			lo = l.tail - maxlen + 1
		}
	} else if maxlen > 0 && maxlen < l.length() {
		hi = l.head + maxlen - 1
	}
	if limit == 0 {
		limit = -1
	}
	return true, s.find(l.id, lo, hi, val, desc, skip, limit, func(pos int64) { fn(pos - l.head) })
}

// ListMove pops one element from the from end of src and pushes it at the
// to end of dst (LMOVE), returning it. A missing src returns ok == false;
// src or dst of another type is ErrWrongType (checked before anything
// moves). src == dst rotates the list in place, never deleting it.
func (s *Store) ListMove(db int, src, dst []byte, from, to End) (val []byte, ok bool, err error) {
	if s.mem != nil {
		return s.mem.listMove(db, src, dst, from, to)
	}
	sl, ok, err := s.openList(db, src)
	if err != nil || !ok {
		return nil, false, err
	}
	if string(src) == string(dst) {
		// The element moves to the position past the other end, where a
		// stale row may be.
		if err := s.settleList(db, src, sl.id); err != nil {
			return nil, false, err
		}
		pos := sl.head
		if from == Right {
			pos = sl.tail
		}
		val, _, err := s.ListIndex(db, src, pos-sl.head, nil)
		if err != nil {
			return nil, false, err
		}
		if from != to && sl.length() > 1 {
			np := sl.tail + 1
			if to == Left {
				np = sl.head - 1
			}
			st := s.q(qListMovePos)
			st.int(1, sl.id)
			st.int(2, pos)
			st.int(3, np)
			if err := st.exec(); err != nil {
				return nil, false, err
			}
		}
		return val, true, s.touch(db, src, Modified)
	}
	if _, _, err := s.openList(db, dst); err != nil {
		return nil, false, err
	}
	vals, err := s.popFrom(db, src, sl, from, 1)
	if err != nil {
		return nil, false, err
	}
	if _, err := s.ListPush(db, dst, to, vals, false); err != nil {
		return nil, false, err
	}
	return vals[0], true, nil
}

func (s *Store) dropList(id int64) error {
	keep := s.q(qListKeepAll)
	keep.int(1, id)
	if err := keep.exec(); err != nil {
		return err
	}
	st := s.q(qListDrop)
	st.int(1, id)
	return st.exec()
}

// copyList copies a list's elements; large values get blobs of their own.
func (s *Store) copyList(from, to int64) error {
	st := s.q(qListCopy)
	st.int(1, from)
	st.int(2, to)
	if err := st.exec(); err != nil {
		return err
	}
	refs, err := s.refRows(qListRefs, from)
	if err != nil {
		return err
	}
	for _, r := range refs {
		ref, err := s.dupBlob(r.ref)
		if err != nil {
			return err
		}
		put := s.q(qListPutRef)
		put.int(1, to)
		put.int(2, r.pos)
		put.int(3, ref)
		if err := put.exec(); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) dropAllLists(db int) error {
	keep := s.q(qListKeepDB)
	keep.int(1, int64(db))
	if err := keep.exec(); err != nil {
		return err
	}
	st := s.q(qListDropAll)
	st.int(1, int64(db))
	return st.exec()
}

// ListReplace makes key a list of vals, whatever it held before (SORT ...
// STORE); vals must not be empty.
func (s *Store) ListReplace(db int, key []byte, vals [][]byte) error {
	if s.mem != nil {
		return s.mem.listReplace(db, key, vals)
	}
	live, err := s.remove(db, key, 0)
	if err != nil {
		return err
	}
	if live {
		// Overwritten, not new: no Created record.
		defer func(was bool) { s.RecordNew = was }(s.RecordNew)
		s.RecordNew = false
	}
	_, err = s.ListPush(db, key, Right, vals, false)
	return err
}
