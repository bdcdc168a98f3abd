package storage

import (
	"math"

	"github.com/cellar-db/cellar/storage/object"
)

// Lists on the in-memory engine: the List operations of lists.go, run on
// the key's object.List, with the same records and versions.

func objEnd(e End) object.End {
	if e == Left {
		return object.Left
	}
	return object.Right
}

// list returns the live list at key (nil when missing), or ErrWrongType.
func (m *memEngine) list(db int, key []byte) (*entry, *object.List, error) {
	e, err := m.live(db, key)
	switch {
	case err != nil || e == nil:
		return nil, nil, err
	case e.typ != TypeList:
		return nil, nil, ErrWrongType
	}
	return e, e.list(), nil
}

// listDone ends a write to the list of e: emptied, it is deleted (as
// Deleted); otherwise its version moves and the change is recorded as kind.
func (m *memEngine) listDone(e *entry, l *object.List, kind Change) {
	if l.Len() == 0 {
		m.remove(e, Deleted)
		return
	}
	e.ver = m.s.nextVersion()
	m.changed(e)
	m.s.record(m.dbOf(e).num, []byte(e.key()), kind, 0)
}

func (m *memEngine) listLen(db int, key []byte) (int64, error) {
	_, l, err := m.list(db, key)
	if l == nil {
		return 0, err
	}
	return int64(l.Len()), nil
}

func owned(vals [][]byte) [][]byte {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = own(v)
	}
	return out
}

func (m *memEngine) listPush(db int, key []byte, end End, vals [][]byte, onlyExisting bool) (int64, error) {
	e, l, err := m.list(db, key)
	if err != nil {
		return 0, err
	}
	if l == nil {
		if onlyExisting {
			return 0, nil
		}
		e = m.dbs[db].keys.get(string(key))
		m.create(e, TypeList)
		l = object.NewList()
		e.setObject(l)
	}
	n := l.Push(objEnd(end), owned(vals)...)
	m.listDone(e, l, Added)
	return int64(n), nil
}

func (m *memEngine) listPop(db int, key []byte, end End, count int64) ([][]byte, error) {
	e, l, err := m.list(db, key)
	if l == nil || count <= 0 {
		return nil, err
	}
	vals := l.Pop(objEnd(end), int(min(count, math.MaxInt32)))
	m.listDone(e, l, Removed)
	return vals, nil
}

func (m *memEngine) listRange(db int, key []byte, start, stop int64, count func(n int64), fn func(v []byte)) (bool, error) {
	_, l, err := m.list(db, key)
	if err != nil {
		return false, err
	}
	if l == nil {
		count(0)
		return false, nil
	}
	start, stop = clampIndex(start), clampIndex(stop)
	from, n := l.Span(int(start), int(stop))
	count(int64(n))
	l.Ascend(from, func(i int, v []byte) bool {
		if i >= from+n {
			return false
		}
		fn(v)
		return true
	})
	return true, nil
}

// clampIndex brings a list index into int's range without changing what
// it selects (lists are far shorter than 2^31).
func clampIndex(i int64) int64 { return max(min(i, math.MaxInt32), math.MinInt32) }

func (m *memEngine) listIndex(db int, key []byte, index int64, dst []byte) ([]byte, bool, error) {
	_, l, err := m.list(db, key)
	if l == nil {
		return dst, false, err
	}
	v, ok := l.Index(int(clampIndex(index)))
	if !ok {
		return dst, false, nil
	}
	return append(dst, v...), true, nil
}

func (m *memEngine) listSet(db int, key []byte, index int64, val []byte) error {
	e, l, err := m.list(db, key)
	switch {
	case err != nil:
		return err
	case l == nil:
		return ErrNoSuchKey
	case !l.Set(int(clampIndex(index)), own(val)):
		return ErrIndexRange
	}
	m.listDone(e, l, Modified)
	return nil
}

func (m *memEngine) listInsert(db int, key []byte, before bool, pivot, val []byte) (int64, error) {
	e, l, err := m.list(db, key)
	if l == nil {
		return 0, err
	}
	n := l.Insert(before, pivot, own(val))
	if n < 0 {
		return -1, nil
	}
	m.listDone(e, l, Added)
	return int64(n), nil
}

func (m *memEngine) listRem(db int, key []byte, count int64, val []byte) (int64, error) {
	e, l, err := m.list(db, key)
	if l == nil {
		return 0, err
	}
	c := int(clampIndex(count))
	if count < math.MinInt32 {
		c = math.MinInt // no limit from the tail
	}
	n := l.Rem(c, val)
	if n > 0 {
		m.listDone(e, l, Removed)
	}
	return int64(n), nil
}

func (m *memEngine) listTrim(db int, key []byte, start, stop int64) error {
	e, l, err := m.list(db, key)
	if l == nil {
		return err
	}
	before := l.Len()
	l.Trim(int(clampIndex(start)), int(clampIndex(stop)))
	kind := Modified
	if l.Len() < before {
		kind = Removed
	}
	m.listDone(e, l, kind)
	return nil
}

func (m *memEngine) listPos(db int, key, val []byte, rank, limit, maxlen int64, fn func(index int64)) (bool, error) {
	_, l, err := m.list(db, key)
	if l == nil {
		return false, err
	}
	r := int(max(min(rank, math.MaxInt32), math.MinInt32+1))
	l.Pos(val, r, int(min(limit, math.MaxInt32)), int(min(maxlen, math.MaxInt32)), func(i int) { fn(int64(i)) })
	return true, nil
}

func (m *memEngine) listMove(db int, src, dst []byte, from, to End) ([]byte, bool, error) {
	se, sl, err := m.list(db, src)
	if sl == nil {
		return nil, false, err
	}
	if string(src) == string(dst) {
		v := sl.Pop(objEnd(from), 1)
		sl.Push(objEnd(to), v...)
		m.listDone(se, sl, Modified)
		return v[0], true, nil
	}
	if _, _, err := m.list(db, dst); err != nil {
		return nil, false, err
	}
	v := sl.Pop(objEnd(from), 1)
	m.listDone(se, sl, Removed)
	if _, err := m.listPush(db, dst, to, v, false); err != nil {
		return nil, false, err
	}
	return v[0], true, nil
}

func (m *memEngine) listReplace(db int, key []byte, vals [][]byte) error {
	e, err := m.entryAt(db, key)
	if err != nil {
		return err
	}
	if e.typ != TypeNone {
		live := !m.expiredEntry(e)
		kind := Change(0)
		if !live {
			kind = Expired
		}
		m.remove(e, kind)
		if live {
			defer func(was bool) { m.s.RecordNew = was }(m.s.RecordNew)
			m.s.RecordNew = false
		}
	}
	_, err = m.listPush(db, key, Right, vals, false)
	return err
}
