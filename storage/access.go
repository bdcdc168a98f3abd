package storage

// Access words: one 32-bit word in each key the in-memory engine holds,
// which the actor keeps as Redis keeps an object's lru field (the key's
// last access in seconds, or its LFU counter and the minute it was last
// decremented) for OBJECT IDLETIME and OBJECT FREQ. The engine neither
// reads nor writes it: a key's word lives as long as its entry, and a key
// loaded into memory (a restart, a key that left memory for the bound)
// starts with 0. It is never stored in SQLite.

// AccessWord returns the access word of key in database db, and whether
// the key exists there, if the engine holds an entry for it in memory
// (nil otherwise, and always on the SQLite engine). It loads nothing, does
// not look at expiry and changes nothing else. The pointer is the entry's
// own: use it at once, before anything else runs on the store.
func (s *Store) AccessWord(db int, key []byte) (w *uint32, exists bool) {
	if s.mem == nil {
		return nil, false
	}
	e := s.mem.dbs[db].keys.get(string(key))
	if e == nil {
		return nil, false
	}
	return &e.access, e.typ != TypeNone
}
