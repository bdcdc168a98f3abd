package storage

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Flushes on another goroutine.
//
// With a redo log, the actor's transaction stays open across rounds and is
// committed every flush interval (docs/architecture.md, "Durability").
// Committing it, and writing back the key rows the hot cache holds ahead
// of SQLite (writeback.go), is work the actor need not wait for: a Flush
// freezes both on the actor (StartFlush) and commits them on the offload
// pool (Run), while the actor goes on serving whatever the hot cache can
// answer, cached GETs and SETs of cached strings among them.
//
// The connection is lent meanwhile, so the rule that makes it safe is in
// the connection itself: every use of it by the actor (a statement's
// preparation or step, transaction control, changes, autocommit) first
// waits for the flush to come back (conn.lent). A statement that needs
// SQLite while a flush runs therefore waits for it, as it would have waited
// for a flush run by the actor, and then sees everything the flush wrote.
// A Begin while the connection is lent is taken at its word and issued
// once it comes back (Store.lazyBegin).
//
// What the flush writes is frozen: copies of the pending rows (a key
// written again meanwhile becomes pending again, for the next flush), the
// key counts and the version high-water mark, and the log position the
// whole covers. It commits them with the actor's transaction in one
// COMMIT, so the database never covers the log beyond what it holds.
// Pending rows whose write needs the actor's state (a value stored as a
// blob, a list's stale rows) are written on the actor before the freeze.
//
// A flush that fails rolls the transaction back; every statement then
// fails with its error (conn.failed) until the actor's Rollback, so the
// round that finds it fails whole and the actor redoes the unflushed
// rounds from the log, exactly as after a failed commit on the actor.

// A Flush is the open transaction and the frozen pending rows, committed
// on another goroutine (Run) with the log position they reach.
type Flush struct {
	s *Store
	rowBatch
	elems []*pelem // pending elements taken (elems.go)
	// byKey indexes the string rows by key for lookups while the flush
	// flies (Store.flyingString): built by the actor, on first need.
	byKey  map[string]int32
	counts []dbCount
	mark   int64 // the version high-water mark to store; 0: unchanged
	pos    uint64
	deltas [allDBs]int64

	done chan struct{}
	err  error
	took time.Duration

	mem *memFlight // the in-memory engine's flush (memflush.go)
}

// rowBatch is pending key rows taken out of the hot cache (freezePending),
// to be written in key order (write).
type rowBatch struct {
	rows  []frozenRow
	order []int32 // rows' indexes in key order
}

// frozenRow is a pending key row as it was when it was taken.
type frozenRow struct {
	k       string // database byte + key, as in the hot cache
	coll    Type   // 0 for a string
	id, n   int64
	v       []byte
	exp     int64
	version int64
	seq     uint64 // when it became pending, for rows of one key
	insert  bool   // a new string's row (id is its id)
}

type dbCount struct{ db, n int64 }

// Err is the flush's outcome, once it has landed.
func (f *Flush) Err() error { return f.err }

// Pos is the log position the flush makes the database cover.
func (f *Flush) Pos() uint64 { return f.pos }

// Took is how long the commit took on its goroutine.
func (f *Flush) Took() time.Duration { return f.took }

// StartFlush freezes the open transaction and the pending rows for a flush
// that makes the database cover the log up to pos, and lends the
// connection to it: the caller runs f.Run on another goroutine, then lands
// it (Land) on the actor. Without an open transaction there is nothing to
// flush (nil). An error comes from a write-back that had to run here; the
// transaction is then as after any failed statement.
func (s *Store) StartFlush(pos uint64) (*Flush, error) {
	if s.mem != nil {
		f := s.mem.startFlush(pos, false)
		if f == nil {
			return nil, nil
		}
		return &Flush{s: s, mem: f}, nil
	}
	if !s.inTx {
		return nil, nil
	}
	if s.c.lent != nil {
		return nil, fmt.Errorf("storage: a flush started while another is running")
	}
	if err := s.EndCommand(); err != nil {
		return nil, err
	}
	if s.c.autocommit() {
		// SQLite abandoned the transaction after a failure: the caller's
		// rollback discards it all.
		return nil, fmt.Errorf("storage: the transaction to flush was abandoned")
	}
	f := &Flush{s: s, pos: pos, done: make(chan struct{}), rowBatch: s.spare}
	s.spare = rowBatch{}
	if err := s.freezePending(&f.rowBatch, true); err != nil {
		return nil, err
	}
	// The flight's elements stay readable until it lands (aside.go).
	s.flyingElems, s.elems = s.elems, s.flyingElems
	s.flyingColls, s.elemColls = s.elemColls, s.flyingColls
	f.elems = slices.Grow(s.elemSpare[:0], len(s.flyingElems))
	for _, e := range s.flyingElems {
		f.elems = append(f.elems, e)
	}
	s.elemSpare, s.elemBytes = nil, 0
	s.flightElemSQL, s.txElemSQL = s.txElemSQL, s.flightElemSQL
	s.txElemSQL.reset()
	if s.version > s.versionMark {
		f.mark = s.version + versionBlock
	}
	for db := range s.keyDeltas {
		if s.keyDeltas[db] != 0 {
			f.counts = append(f.counts, dbCount{int64(db), s.keyCounts[db] + s.keyDeltas[db]})
		}
	}
	// The flush's deltas count as committed from here (DBSIZE adds them);
	// a failed flush takes them back (landed).
	f.deltas = s.keyDeltas
	for db := range s.keyDeltas {
		s.keyCounts[db] += s.keyDeltas[db]
		s.keyDeltas[db] = 0
	}
	s.ResetTouched()
	// What the flight changed is what this transaction did (aside.go).
	s.flightKeys, s.txKeys = s.txKeys, s.flightKeys
	s.txKeys.reset()
	s.saved = s.saved[:0]
	s.inTx, s.dirty = false, false
	s.c.lent = f
	return f, nil
}

// freezePending takes the pending rows out of the hot cache into b and
// clears them, writing here the ones whose write needs the actor's state
// (a blob ref, a list's stale rows). With share, b outlives this call (a
// flush): an entry's next value then gets new bytes rather than overwrite
// the ones b holds (hotCache.setValue).
func (s *Store) freezePending(b *rowBatch, share bool) error {
	if cap(b.rows)-len(b.rows) < len(s.pending) {
		// One allocation of the size needed, not a doubling's garbage.
		b.rows = slices.Grow(b.rows, len(s.pending))
	}
	for i, e := range s.pending {
		if !e.pending {
			continue
		}
		var err error
		switch {
		case e.coll == TypeList:
			err = s.settle(e) // deletes rows: the actor's statements
		case e.coll == 0 && (e.ref || len(e.v)+len(e.k)-1 > inlineBudget):
			err = s.saveString(e) // blob refs move
			if err == nil {
				e.pending = false
				s.pending[i] = nil
				continue
			}
		}
		if err != nil {
			s.pending = s.pending[i:]
			return err
		}
		r := frozenRow{k: e.k, coll: e.coll, id: e.id, n: e.n, exp: e.exp, version: e.version, seq: e.pseq, insert: e.insert}
		e.insert = false // written with b
		if e.coll == 0 {
			r.v = e.v
			e.shared = share
		}
		b.rows = append(b.rows, r)
		e.pending = false
		s.pending[i] = nil
	}
	s.pending = s.pending[:0]
	s.pendingExp = 0
	s.cache.written()
	return nil
}

// Run commits the flush. It runs on another goroutine while the connection
// is lent to it, and must not touch anything of the Store but the
// connection and the flush's own statements.
func (f *Flush) Run() {
	if f.mem != nil {
		f.s.mem.run(f.mem)
		return
	}
	t0 := time.Now()
	f.err = f.commit()
	f.took = time.Since(t0)
	close(f.done)
}

func (f *Flush) commit() error {
	s := f.s
	err := f.write(s.flushStmt, s.fc, true)
	if err == nil {
		err = writeElems(f.elems, s.flushStmt, s.fc, true)
	}
	if err == nil && f.mark != 0 {
		st := s.flushStmt(qSaveVersion)
		st.int(1, f.mark)
		err = st.exec()
	}
	for _, c := range f.counts {
		if err != nil {
			break
		}
		st := s.flushStmt(qSaveStats)
		st.int(1, c.db)
		st.int(2, c.n)
		err = st.exec()
	}
	if err == nil {
		st := s.flushStmt(qSaveRedoPos)
		st.int(1, int64(f.pos))
		err = st.exec()
	}
	if err == nil {
		err = s.flushStmt(qCommit).exec()
	}
	if err != nil && !s.fc.autocommit() {
		s.flushStmt(qRollback).exec()
	}
	return err
}

// write writes b's rows in key order — neighbouring rows share B-tree
// pages, so each statement finds its pages where the previous one left
// them (a third more SETs a second at -P 16 than in the order written);
// rows of one key, should there be two, in the order they became pending.
// prep gives the statements and c is their connection: the actor's
// (writeBack) or a flush's (Run).
// With yield, it lets other goroutines run every yieldRows rows.
func (b *rowBatch) write(prep func(*query) *stmt, c *conn, yield bool) error {
	order := slices.Grow(b.order[:0], len(b.rows))
	for i := range b.rows {
		order = append(order, int32(i))
	}
	b.order = order
	slices.SortFunc(order, func(i, j int32) int {
		x, y := &b.rows[i], &b.rows[j]
		if c := strings.Compare(x.k, y.k); c != 0 {
			return c
		}
		return cmp.Compare(x.seq, y.seq)
	})
	for n, i := range order {
		if n%yieldRows == yieldRows-1 && yield {
			runtime.Gosched()
		}
		r := &b.rows[i]
		var st *stmt
		switch {
		case r.insert:
			st = prep(qInsertString)
			st.int(3, r.id)
			st.int(4, r.exp)
			st.blob(6, r.v)
		case r.coll == 0:
			st = prep(qSaveString)
			st.blob(3, r.v)
			st.int(4, r.exp)
		case r.coll == TypeList:
			st = prep(qSaveListRow) // a list's row holds no count
		default:
			st = prep(qSaveCollRow)
			st.int(4, r.n)
		}
		st.int(1, int64(r.k[0]))
		st.blob(2, []byte(r.k[1:]))
		if r.coll != 0 {
			st.int(3, r.id)
		}
		st.int(5, r.version)
		if err := st.exec(); err != nil {
			return err
		}
		if r.coll == 0 && !r.insert && c.changes() != 1 {
			// The cache said a live string was there: a bug, refused
			// loudly rather than written anywhere else.
			return fmt.Errorf("storage: write-back found no string row for cached key %q", r.k[1:])
		}
	}
	return nil
}

// yieldRows is how many rows a flush writes between yields of its
// processor: on a machine with few cores the flush otherwise holds one for
// its whole commit (tens of milliseconds), and the loops and the actor,
// woken meanwhile, wait for it.
const yieldRows = 128

// maxSpareRows bounds the row buffers kept for the next flush (~100 bytes
// a row).
const maxSpareRows = 64 << 10

// reset empties b, keeping its buffers.
func (b *rowBatch) reset() {
	clear(b.rows)
	b.rows, b.order = b.rows[:0], b.order[:0]
}

// flushStmt is qq prepared for flushes, on the flush's view of the
// connection: a flush may not use the actor's statements.
func (s *Store) flushStmt(qq *query) *stmt {
	if st := s.fstmts[qq]; st != nil {
		return st
	}
	st, err := s.fc.prepare(qq.sql)
	if err != nil {
		panic(err) // a constant query; the tests prepare every one
	}
	s.fstmts[qq] = st
	return st
}

// Flying reports whether a flush has the connection.
func (s *Store) Flying() bool {
	if s.mem != nil {
		return s.mem.flight != nil
	}
	return s.c.lent != nil
}

// FlushWaits counts the times a use of the connection had to wait for a
// flush to finish.
func (s *Store) FlushWaits() uint64 { return s.flushWaits }

// Land waits for the running flush, if any, and takes its outcome into the
// Store. It returns the flush landed since the last call (by this call or
// by a statement that needed the connection), or nil.
func (s *Store) Land() *Flush {
	if s.mem != nil {
		f := s.landedMem
		s.landedMem = nil
		if mf := s.mem.land(); mf != nil {
			f = &Flush{s: s, mem: mf, pos: mf.pos, err: mf.err, took: mf.took}
		}
		return f
	}
	if s.c.lent != nil {
		s.c.wait()
	}
	f := s.landed
	s.landed = nil
	return f
}

// land takes a returned flush's outcome into the Store (conn.wait calls it
// once the flush is done).
func (s *Store) land(f *Flush) {
	s.landed = f
	// The next flush reuses the buffers (a flush's rows are many and
	// short-lived), unless they are large: a burst's would stay in the
	// heap for good.
	f.byKey = nil
	f.rowBatch.reset()
	if cap(f.rows) <= maxSpareRows {
		s.spare = f.rowBatch
	}
	f.rowBatch = rowBatch{}
	if cap(f.elems) <= maxSpareRows {
		clear(f.elems)
		s.elemSpare = f.elems[:0]
	}
	f.elems = nil
	// In SQLite now, or rolled back.
	s.flyingElems, s.flyingColls = emptied(s.flyingElems), emptied(s.flyingColls)
	if f.err != nil {
		// The transaction is gone: every statement fails until the
		// actor's Rollback, and the counts go back to what is committed.
		s.c.failed = f.err
		for db := range f.deltas {
			s.keyCounts[db] -= f.deltas[db]
		}
		s.lazyBegin = false
		return
	}
	if f.mark != 0 {
		s.versionMark = f.mark
	}
	s.commits++
	s.checkpointAtLand() // no transaction open here
	if s.lazyBegin {
		s.lazyBegin = false
		if err := s.c.exec("BEGIN"); err != nil {
			s.c.failed = err
		}
	}
}
