package storage

// The redo log's position in the database. Cellar records the effects of
// every round's writes in its redo log (package storage/redo). The commit
// that makes a round's writes part of the database stores, in the same
// transaction, the log position after that round's records, so the
// database always says exactly how much of the log it covers: start-up
// replays the log from there, and the log before a position the database
// durably covers can be removed.

var (
	qLoadRedoPos = newQuery("SELECT value FROM counters WHERE name = 'redo_position'")
)

// RedoPosition is the redo log position the committed database covers.
func (s *Store) RedoPosition() (uint64, error) {
	st := s.q(qLoadRedoPos)
	defer st.reset()
	row, err := st.step()
	if err != nil {
		return 0, err
	}
	if !row {
		return 0, &Error{Code: codeCorrupt, Msg: "the counters table has no redo_position row"}
	}
	return uint64(st.colInt(0)), nil
}
