package storage

import (
	"fmt"
	"os"
	"sync"
	"time"

	sqlite3 "modernc.org/sqlite/lib"
)

// Checkpoints happen in two phases so that the actor never copies the bulk
// of the WAL into the database itself (a checkpoint from another
// connection never resets the WAL while the actor writes continuously, so
// the actor must take part; docs/architecture.md, "Durability"):
//
//  1. An offload worker runs a PASSIVE checkpoint through the Checkpointer's
//     own connection, concurrently with the actor's commits: it copies the
//     frames committed so far into the database file and fsyncs it.
//  2. The actor then runs CheckpointRest between rounds (no transaction
//     open): only the frames committed during phase 1 are left to copy.
//     Once every frame is in the database, the actor's next write starts
//     the WAL over from its beginning, so the file stops growing.

// Checkpointer is phase 1's connection. It is safe for concurrent use, but
// checkpoints run one at a time.
type Checkpointer struct {
	mu     sync.Mutex
	path   string
	c      *conn
	closed bool
}

// Passive copies committed WAL frames into the database (phase 1).
func (k *Checkpointer) Passive() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return fmt.Errorf("storage: checkpointer closed")
	}
	if k.c == nil {
		c, err := openConn(k.path, sqlite3.SQLITE_OPEN_READWRITE)
		if err != nil {
			return fmt.Errorf("storage: checkpoint connection: %w", err)
		}
		if err := c.exec("PRAGMA busy_timeout = 5000"); err != nil {
			c.close()
			return err
		}
		k.c = c
	}
	if err := k.c.exec("PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		return fmt.Errorf("storage: checkpoint: %w", err)
	}
	return nil
}

func (k *Checkpointer) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	if k.c != nil {
		k.c.close()
		k.c = nil
	}
}

// Checkpointer returns the store's phase-1 checkpointer.
func (s *Store) Checkpointer() *Checkpointer { return s.ckpt }

// CheckpointRest copies what phase 1 left in the WAL (phase 2). It must be
// called with no transaction open.
func (s *Store) CheckpointRest() error {
	if s.inTx {
		return fmt.Errorf("storage: checkpoint inside a transaction")
	}
	if err := s.c.exec("PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		return fmt.Errorf("storage: checkpoint: %w", err)
	}
	s.checkpoints++
	return nil
}

// CheckpointRestAtLand asks for phase 2 to run when a flush lands (the
// one flying, else the next): between its commit and the next
// transaction's BEGIN no transaction is open, so the actor need not stop
// taking writes and wait for a flush of its own to run it. The outcome
// comes back through TakeCheckpointRest.
func (s *Store) CheckpointRestAtLand() { s.restAtLand = true }

// checkpointAtLand runs phase 2 if a landing flush was asked to (land).
func (s *Store) checkpointAtLand() {
	if !s.restAtLand {
		return
	}
	s.restAtLand = false
	t0 := time.Now()
	err := s.c.exec("PRAGMA wal_checkpoint(PASSIVE)")
	if err == nil {
		s.checkpoints++
	} else {
		err = fmt.Errorf("storage: checkpoint: %w", err)
	}
	s.rest = &restOutcome{took: time.Since(t0), err: err}
}

// restOutcome is how a phase 2 run at a landing went.
type restOutcome struct {
	took time.Duration
	err  error
}

// TakeCheckpointRest reports the phase 2 run at a landing since the last
// call, if one ran.
func (s *Store) TakeCheckpointRest() (took time.Duration, err error, ran bool) {
	r := s.rest
	if r == nil {
		return 0, nil, false
	}
	s.rest = nil
	return r.took, r.err, true
}

// Checkpoints is the number of completed two-phase checkpoints.
func (s *Store) Checkpoints() uint64 {
	if s.mem != nil {
		return s.mem.checkpoints.Load()
	}
	return s.checkpoints
}

// NeedsCheckpoint reports whether the WAL has grown past the checkpoint size.
// The file never shrinks below journal_size_limit (set to that size), so
// its length says how far the frames in use reach.
// The in-memory engine's flush checkpoints by itself (memflush.go): the
// actor takes part in none.
func (s *Store) NeedsCheckpoint() bool { return s.mem == nil && s.WALSize() > s.ckptBytes }

// WALSize is the WAL file's size in bytes (0 if it does not exist).
func (s *Store) WALSize() int64 {
	fi, err := os.Stat(s.path + "-wal")
	if err != nil {
		return 0
	}
	return fi.Size()
}
