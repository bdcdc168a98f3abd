package storage

import "os"

// Checkpoints: SQLite's own autocheckpoint is off (it would run inside a
// commit); the flush checkpoints the WAL after its commit once the WAL has
// grown past Options.CheckpointPages (memEngine.checkpoint, memflush.go).

// Checkpoints is the number of completed checkpoints.
func (s *Store) Checkpoints() uint64 { return s.mem.checkpoints.Load() }

// WALSize is the WAL file's size in bytes (0 if it does not exist). The
// file never shrinks below journal_size_limit (set to the checkpoint
// size), so its length says how far the frames in use reach.
func (s *Store) WALSize() int64 {
	fi, err := os.Stat(s.path + "-wal")
	if err != nil {
		return 0
	}
	return fi.Size()
}
