package storage

// Key versions. Every write of a key stores a new version in its keys row,
// so that "has this key changed since I looked?" (what WATCH asks) is one
// comparison. A version is never reused for a key name: versions come from
// one counter for the whole database file, not from the row (a row's
// "version + 1" would start over at 1 whenever the name is created again,
// and DEL + SET would then look like no change at all). Whatever happened
// to a name in between (DEL, expiry, RENAME or MOVE onto it, COPY onto it,
// FLUSHDB, a restart), its next version is larger than any it ever had.
//
// The counter runs in memory. Its high-water mark is kept in the counters
// table (migration 5) and raised by the commit that first uses a version
// above it, by versionBlock at a time, so that most commits write nothing
// for it. A transaction rolled back leaves the counter where it got to:
// numbers are skipped, never repeated. On open the counter starts at the
// mark, which is above every version any committed row can hold.

// versionBlock is how far past the versions in use a commit raises the
// persisted high-water mark.
const versionBlock = 1 << 16

var (
	qLoadVersion = newQuery("SELECT value FROM counters WHERE name = 'version'")
)

// nextVersion hands out a key version, larger than every one before it,
// for a write in the open transaction (which is therefore dirty: its commit
// persists the high-water mark).
func (s *Store) nextVersion() int64 {
	s.version++
	s.dirty = true
	return s.version
}

// loadVersion starts the counter at the persisted high-water mark.
func (s *Store) loadVersion() error {
	st := s.q(qLoadVersion)
	defer st.reset()
	row, err := st.step()
	if err != nil {
		return err
	}
	if !row {
		return &Error{Code: codeCorrupt, Msg: "the counters table has no version row"}
	}
	s.version = st.colInt(0)
	s.versionMark = s.version
	return nil
}

// KeyVersion is the version of a live key (found false when it is missing
// or expired). It only reads: an expired key is not deleted here.
func (s *Store) KeyVersion(db int, key []byte) (v int64, found bool, err error) {
	return s.mem.keyVersion(db, key)
}
