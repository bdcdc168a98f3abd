package storage

import "time"

// Flushes on another goroutine (memflush.go has the engine's side).
//
// With a redo log, what the rounds changed reaches SQLite in flushes
// (docs/architecture.md, "Storage engine"): StartFlush freezes, on the
// actor, what changed since the last one together with the log position it
// covers; Run writes and commits it on the offload pool, on the flush's own
// connection, while the actor goes on serving from memory; Land takes the
// outcome back on the actor. A failed flush leaves its changes in memory,
// written first by the next one.

// A Flush is one batch of changes on its way to SQLite, with the log
// position it makes the database cover.
type Flush struct {
	s   *Store
	mem *memFlight

	pos  uint64
	err  error
	took time.Duration
}

// Err is the flush's outcome, once it has landed.
func (f *Flush) Err() error { return f.err }

// Pos is the log position the flush makes the database cover.
func (f *Flush) Pos() uint64 { return f.pos }

// Took is how long the commit took on its goroutine.
func (f *Flush) Took() time.Duration { return f.took }

// StartFlush freezes what changed since the last flush, for a flush that
// makes the database cover the log up to pos: the caller runs f.Run on
// another goroutine, then lands it (Land) on the actor. With nothing
// changed there is nothing to flush (nil).
func (s *Store) StartFlush(pos uint64) (*Flush, error) {
	f := s.mem.startFlush(pos, false)
	if f == nil {
		return nil, nil
	}
	return &Flush{s: s, mem: f}, nil
}

// Run writes and commits the flush. Any goroutine; it touches nothing of
// the actor's but the flush.
func (f *Flush) Run() { f.s.mem.run(f.mem) }

// Flying reports whether a flush is under way (started, not landed).
func (s *Store) Flying() bool { return s.mem.flight != nil }

// Settled reports whether SQLite holds every change: no flush under way and
// nothing changed since the last one. The garbage of a burst is all
// garbage only then (a flight keeps its frozen batch until it lands).
func (s *Store) Settled() bool { return s.mem.flight == nil && !s.mem.hasWork() }

// Trim lets go of the room the engine keeps for the next burst: the
// emptied lists of changed entries (a bulk load leaves one pointer a key
// of capacity) and prefetch's buffer. For an idle server, before its free
// memory goes back to the OS; the next burst grows them again.
func (s *Store) Trim() {
	m := s.mem
	for _, d := range m.dbs {
		if len(d.dirty) == 0 {
			d.dirty = nil
		}
	}
	if len(m.freshFrozen) == 0 {
		m.freshFrozen = nil
	}
	if len(m.misses) == 0 {
		m.misses = nil
	}
	m.ahead = nil
}

// Land waits for the running flush, if any, and takes its outcome into the
// Store. It returns the flush landed since the last call, or nil.
func (s *Store) Land() *Flush {
	f := s.landedMem
	s.landedMem = nil
	if mf := s.mem.land(); mf != nil {
		f = &Flush{s: s, mem: mf, pos: mf.pos, err: mf.err, took: mf.took}
	}
	return f
}
