package storage

import (
	"fmt"
	"strings"

	"github.com/cellar-db/cellar/storage/object"
)

// How the in-memory engine's hashes, sets and sorted sets map to their
// tables: a key is loaded whole in storage order (h, name), and a flush
// writes the elements its Delta names. The rows' shape is the file format
// (schema.go).

// elemTable names one element table and its columns beyond (id, h, name).
type elemTable struct {
	table, name string
	load        string // SELECT h, name[, value or score][, ord, expire_at] of one id
	put         string // upsert of one element
	putN        string // upsert of elemBatch elements
	del         string // DELETE of one element
	drop        string // DELETE of every element of one id
	params      int    // an element's parameters in put
}

// elemBatch is how many elements one statement of the flush writes: a
// statement's own cost (binds, step, reset, halt) is paid once for all.
const elemBatch = 32

// upserts builds t's put and putN from the statement's head (up to
// VALUES), one row's values with %d for each parameter's number, and its
// tail (the conflict clause).
func (t *elemTable) upserts(head, row, tail string) *elemTable {
	t.params = strings.Count(row, "%d")
	t.put = head + valuesRows(row, 1) + tail
	t.putN = head + valuesRows(row, elemBatch) + tail
	return t
}

// valuesRows is n rows of a multi-row VALUES, joined by ", ": row has a %d
// for each of its parameters' numbers, which go on from row to row, so
// "(?%d, ?%d)" makes "(?1, ?2), (?3, ?4)…". The flush writes many rows
// with one statement: a statement's own cost (binds, step, reset, halt) is
// paid once for all of them.
func valuesRows(row string, n int) string {
	params := strings.Count(row, "%d")
	var b strings.Builder
	nums := make([]any, params)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		for j := range nums {
			nums[j] = i*params + j + 1
		}
		fmt.Fprintf(&b, row, nums...)
	}
	return b.String()
}

// A hash field's value may be a blob ref (blobs.go): the triggers
// hash_blob_deleted and hash_blob_replaced (schema.go) move a ref its row
// lets go of to blob_garbage, so the flush deletes and updates fields
// without reading them first. The puts are upserts, not INSERT OR
// REPLACE: a REPLACE deletes the old row without firing the delete
// trigger, and rewrites every index entry of the row besides.

var (
	hashTable = (&elemTable{
		table: "hashes", name: "field",
		load: "SELECT h, field, value, coalesce(ord, 0), coalesce(expire_at, 0) FROM hashes WHERE id = ?1 ORDER BY h, field",
		del:  "DELETE FROM hashes WHERE id = ?1 AND h = ?2 AND field = ?3",
		drop: "DELETE FROM hashes WHERE id = ?1",
	}).upserts("INSERT INTO hashes (id, h, field, value, ord, expire_at) VALUES ",
		"(?%d, ?%d, ?%d, ?%d, nullif(?%d, 0), nullif(?%d, 0))",
		" ON CONFLICT (id, h, field) DO UPDATE SET value = excluded.value, ord = excluded.ord, expire_at = excluded.expire_at")
	setTable = (&elemTable{
		table: "sets", name: "member",
		load: "SELECT h, member FROM sets WHERE id = ?1 ORDER BY h, member",
		del:  "DELETE FROM sets WHERE id = ?1 AND h = ?2 AND member = ?3",
		drop: "DELETE FROM sets WHERE id = ?1",
	}).upserts("INSERT OR IGNORE INTO sets (id, h, member) VALUES ", "(?%d, ?%d, ?%d)", "")
	zsetTable = (&elemTable{
		table: "zsets", name: "member",
		load: "SELECT h, member, score FROM zsets WHERE id = ?1 ORDER BY h, member",
		del:  "DELETE FROM zsets WHERE id = ?1 AND h = ?2 AND member = ?3",
		drop: "DELETE FROM zsets WHERE id = ?1",
	}).upserts("INSERT INTO zsets (id, h, member, score) VALUES ", "(?%d, ?%d, ?%d, ?%d)",
		" ON CONFLICT (id, h, member) DO UPDATE SET score = excluded.score WHERE score IS NOT excluded.score")
)

// loadElems reads collection id's elements whole, in storage order.
func loadElems(r *sqlc, t *elemTable, id int64) ([]object.Elem, error) {
	st := r.q(t.load)
	defer st.reset()
	st.int(1, id)
	var rows []object.Elem
	for {
		row, err := st.step()
		if err != nil || !row {
			return rows, err
		}
		el := object.Elem{H: st.colInt(0), Name: string(st.colBlob(1, nil))}
		switch t {
		case hashTable:
			if el.Value, err = r.colValue(st, 2, nil); err != nil {
				return rows, err
			}
			if el.Value == nil {
				el.Value = []byte{}
			}
			el.Ord, el.Exp = st.colInt(3), st.colInt(4)
		case zsetTable:
			el.Score = st.colFloat(2)
		}
		rows = append(rows, el)
	}
}

// flushElems writes d, the changes of collection id, to t.
func flushElems(w *sqlc, t *elemTable, id int64, d *object.Delta) error {
	if d.All {
		if err := dropElems(w, t, id); err != nil {
			return err
		}
	}
	for i := range d.Gone {
		if err := delElem(w, t, id, &d.Gone[i]); err != nil {
			return err
		}
	}
	// Elements go elemBatch to a statement, the tail one by one.
	batch := make([]*object.Elem, 0, elemBatch)
	err := d.Each(func(el *object.Elem) error {
		if batch = append(batch, el); len(batch) < elemBatch {
			return nil
		}
		err := putElems(w, t, t.putN, id, batch)
		batch = batch[:0]
		return err
	})
	for i := 0; err == nil && i < len(batch); i++ {
		err = putElems(w, t, t.put, id, batch[i:i+1])
	}
	return err
}

// putElems writes els with sql, t's put or putN.
func putElems(w *sqlc, t *elemTable, sql string, id int64, els []*object.Elem) error {
	st := w.q(sql)
	for i, el := range els {
		at := i * t.params
		st.int(at+1, id)
		st.int(at+2, el.H)
		st.blob(at+3, []byte(el.Name))
		switch t {
		case hashTable:
			if _, err := w.bindValue(st, at+4, el.Value, len(el.Name)); err != nil {
				st.reset()
				return err
			}
			st.int(at+5, el.Ord)
			st.int(at+6, el.Exp)
		case zsetTable:
			st.float(at+4, el.Score)
		}
	}
	return st.exec()
}

func delElem(w *sqlc, t *elemTable, id int64, el *object.Elem) error {
	st := w.q(t.del)
	st.int(1, id)
	st.int(2, el.H)
	st.blob(3, []byte(el.Name))
	return st.exec()
}

// dropElems deletes every element of collection id (its key is gone, or
// its rows are rewritten).
func dropElems(w *sqlc, t *elemTable, id int64) error {
	st := w.q(t.drop)
	st.int(1, id)
	return st.exec()
}
