package storage

// Reload flushes everything and lets every key leave memory, so that each
// is next loaded from the database (DEBUG RELOAD: Redis saves its RDB file
// and loads it back).
func (s *Store) Reload() error {
	return s.mem.reload()
}
