package storage

// Reload writes back what the hot cache holds for SQLite and forgets
// everything it caches, so that every key is next read from the database
// (DEBUG RELOAD: Redis saves its RDB file and loads it back).
func (s *Store) Reload() error {
	return s.mem.reload()
}
