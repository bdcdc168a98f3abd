package storage

import (
	"errors"
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
// integer positions (see migration 2); in memory a list is an object.List
// (memlist.go says how the two map).

// ListLen is the length of the list at key: 0 when missing, ErrWrongType
// for another type.
func (s *Store) ListLen(db int, key []byte) (int64, error) {
	return s.mem.listLen(db, key)
}

// ListPush pushes vals, one after the other, at end of the list at key and
// returns the new length. A missing key is created, unless onlyExisting
// (LPUSHX/RPUSHX), in which case nothing happens and the length is 0.
func (s *Store) ListPush(db int, key []byte, end End, vals [][]byte, onlyExisting bool) (int64, error) {
	return s.mem.listPush(db, key, end, vals, onlyExisting)
}

// ListPop removes up to count (>= 1) elements from end of the list at key
// and returns them in the order they were removed. A list emptied by the
// pop is deleted. A missing key returns nil.
func (s *Store) ListPop(db int, key []byte, end End, count int64) ([][]byte, error) {
	return s.mem.listPop(db, key, end, count)
}

// ListRange reports through count how many elements LRANGE start stop
// selects (negative indexes count from the tail, as in Redis), then calls
// fn with each of them in order. v is only valid during the call. A
// missing key (found false) selects nothing.
func (s *Store) ListRange(db int, key []byte, start, stop int64, count func(n int64), fn func(v []byte)) (found bool, err error) {
	return s.mem.listRange(db, key, start, stop, count, fn)
}

// ListIndex appends the element at index (negative from the tail) to dst.
// found is false for a missing key or an index outside the list.
func (s *Store) ListIndex(db int, key []byte, index int64, dst []byte) ([]byte, bool, error) {
	return s.mem.listIndex(db, key, index, dst)
}

// ListSet replaces the element at index (negative from the tail): a
// missing key is ErrNoSuchKey, an index outside the list ErrIndexRange.
func (s *Store) ListSet(db int, key []byte, index int64, val []byte) error {
	return s.mem.listSet(db, key, index, val)
}

// ListInsert inserts val before (or after) the first element equal to
// pivot and returns the new length: 0 for a missing key, -1 when pivot is
// not in the list. The shorter side of the list moves to make room.
func (s *Store) ListInsert(db int, key []byte, before bool, pivot, val []byte) (int64, error) {
	return s.mem.listInsert(db, key, before, pivot, val)
}

// ListRem removes elements equal to val: the first count from the head
// (count > 0), the last -count from the tail (count < 0), or all (0). It
// returns how many it removed; a list left empty is deleted.
func (s *Store) ListRem(db int, key []byte, count int64, val []byte) (int64, error) {
	return s.mem.listRem(db, key, count, val)
}

// ListTrim keeps only the elements from index start to stop (LTRIM's
// semantics); a list left empty is deleted. A missing key is not an error.
func (s *Store) ListTrim(db int, key []byte, start, stop int64) error {
	return s.mem.listTrim(db, key, start, stop)
}

// ListPos finds elements equal to val the way LPOS does: rank r > 0 skips
// the first r-1 matches from the head, r < 0 counts from the tail; at most
// limit matches (all when limit is 0); only the first maxlen elements
// scanned are compared (all when maxlen is 0). fn receives each match's
// index, in scan order.
func (s *Store) ListPos(db int, key, val []byte, rank, limit, maxlen int64, fn func(index int64)) (found bool, err error) {
	return s.mem.listPos(db, key, val, rank, limit, maxlen, fn)
}

// ListMove pops one element from the from end of src and pushes it at the
// to end of dst (LMOVE), returning it. A missing src returns ok == false;
// src or dst of another type is ErrWrongType (checked before anything
// moves). src == dst rotates the list in place, never deleting it.
func (s *Store) ListMove(db int, src, dst []byte, from, to End) (val []byte, ok bool, err error) {
	return s.mem.listMove(db, src, dst, from, to)
}

// ListReplace makes key a list of vals, whatever it held before (SORT ...
// STORE); vals must not be empty.
func (s *Store) ListReplace(db int, key []byte, vals [][]byte) error {
	return s.mem.listReplace(db, key, vals)
}
