package storage

import (
	"github.com/cellar-db/cellar/storage/object"
)

// How the in-memory engine's lists map to list_items: a list is loaded
// whole in position order, and a flush deletes the position ranges its
// ListDelta frees and writes the rows it names. The rows' shape is the file
// format (schema.go, migration 2): contiguous positions, index i at
// head+i, values past inlineBudget in blobs. Since migration 10 no trigger
// moves a deleted row's blob ref to blob_garbage, and INSERT OR REPLACE
// fires none either, so every statement here that deletes or overwrites
// rows moves their refs first.

const (
	qMemListLoad    = "SELECT pos, value FROM list_items WHERE id = ?1 ORDER BY pos"
	qMemListPut     = "INSERT OR REPLACE INTO list_items (id, pos, value) VALUES (?1, ?2, ?3)"
	qMemListDel     = "DELETE FROM list_items WHERE id = ?1 AND pos BETWEEN ?2 AND ?3"
	qMemListDrop    = "DELETE FROM list_items WHERE id = ?1"
	qMemListRefsIn  = "SELECT value FROM list_items WHERE id = ?1 AND pos BETWEEN ?2 AND ?3"
	qMemListRefsAll = "SELECT value FROM list_items WHERE id = ?1"
)

// qMemListPutN writes elemBatch rows in one statement, as the element
// tables do (memcoll.go, valuesRows).
var qMemListPutN = "INSERT OR REPLACE INTO list_items (id, pos, value) VALUES " + valuesRows("(?%d, ?%d, ?%d)", elemBatch)

// loadList reads list id whole, its values resolved from blobs. Positions
// that are not contiguous are a corrupt file. A list with no rows loads
// empty.
func loadList(r *sqlc, id int64) (*object.List, error) {
	st := r.q(qMemListLoad)
	defer st.reset()
	st.int(1, id)
	var head int64
	var items [][]byte
	for {
		row, err := st.step()
		if err != nil {
			return nil, err
		}
		if !row {
			break
		}
		pos := st.colInt(0)
		if len(items) == 0 {
			head = pos
		} else if pos != head+int64(len(items)) {
			return nil, &Error{Code: codeCorrupt, Msg: "a list misses an element between its head and tail"}
		}
		v, err := r.colValue(st, 1, nil)
		if err != nil {
			return nil, err
		}
		if v == nil {
			v = []byte{}
		}
		items = append(items, v)
	}
	return object.LoadedList(head, items), nil
}

// flushList writes d, the changes of list id, in the caller's transaction.
func flushList(w *sqlc, id int64, d *object.ListDelta) error {
	if d.All {
		if err := dropList(w, id); err != nil {
			return err
		}
	}
	for _, g := range d.Del {
		if err := keepListRefs(w, id, g.Lo, g.Hi); err != nil {
			return err
		}
		st := w.q(qMemListDel)
		st.int(1, id)
		st.int(2, g.Lo)
		st.int(3, g.Hi)
		if err := st.exec(); err != nil {
			return err
		}
	}
	for _, run := range d.Put {
		if !d.All {
			// The rows replaced may hold blob refs.
			if err := keepListRefs(w, id, run.Pos, run.Pos+int64(len(run.Vals))-1); err != nil {
				return err
			}
		}
		// Rows go elemBatch to a statement, the tail one by one.
		for i := 0; i < len(run.Vals); {
			n, q := elemBatch, qMemListPutN
			if len(run.Vals)-i < elemBatch {
				n, q = 1, qMemListPut
			}
			if err := putListRows(w, q, id, run.Pos+int64(i), run.Vals[i:i+n]); err != nil {
				return err
			}
			i += n
		}
	}
	return nil
}

// putListRows writes vals at positions from pos on with q, qMemListPut
// (one row) or qMemListPutN.
func putListRows(w *sqlc, q string, id, pos int64, vals [][]byte) error {
	st := w.q(q)
	for i, v := range vals {
		st.int(3*i+1, id)
		st.int(3*i+2, pos+int64(i))
		if _, err := w.bindValue(st, 3*i+3, v, 0); err != nil {
			st.reset()
			return err
		}
	}
	return st.exec()
}

// keepListRefs moves the blob refs of list id's rows at positions lo..hi
// to blob_garbage.
func keepListRefs(w *sqlc, id, lo, hi int64) error {
	return w.keepRefs(qMemListRefsIn, func(st *stmt) {
		st.int(1, id)
		st.int(2, lo)
		st.int(3, hi)
	})
}

// dropList deletes every row of list id (its key is gone, or its rows are
// rewritten), their blob refs moved to blob_garbage.
func dropList(w *sqlc, id int64) error {
	if err := w.keepRefs(qMemListRefsAll, func(st *stmt) { st.int(1, id) }); err != nil {
		return err
	}
	st := w.q(qMemListDrop)
	st.int(1, id)
	return st.exec()
}
