package actor

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cellar-db/cellar/rdb"
	"github.com/cellar-db/cellar/storage"
)

// Across a restart. A clean stop (every round flushed to SQLite, nothing
// failed) leaves in <database>-replication the replication ID, the offset,
// the database the stream had selected, the second ID with
// second_repl_offset (PSYNC2), and the backlog (at most repl-backlog-size
// of its last bytes); the next start takes them (and removes the file, so
// that a crash after it cannot reuse them) and keeps counting the stream
// from that offset. So every replica whose offset is still in the backlog
// continues with +CONTINUE, not only one that had the whole stream: a
// replica that was behind, or had lost its link, when the master stopped;
// the replicas of the master a promoted replica replaced, asking with the
// second ID, after that replica's restart. A replica, whose ID and offset
// are its master's history as far as its data goes, asks its master to
// continue it when it follows again (the replicaof setting, or REPLICAOF),
// as Redis 7.0's replica does from its RDB's repl-id, repl-offset and
// repl-stream-db: the stream continues in the saved database, the master
// selecting none; and its own replicas continue from its backlog, which is
// its master's stream.
//
// Redis 7.0 keeps less: a master restarted from its RDB takes a new ID and
// makes the saved one its second (loadDataFromDisk), with an empty
// backlog, so only a replica that had everything continues, and the second
// ID it had before is lost. Cellar keeps its ID instead: the data after a
// clean stop is exactly the history's at the saved offset, so the same ID
// names it truthfully, and the second ID can be kept beside it.
//
// After a crash there is no file: the offset of what the replicas got (or
// of what a replica applied) is unknown, so the server starts a new
// history (a new ID; full resyncs).

// replStateMagic starts the file's second format (the first was one line:
// "<replid> <offset> [<db> [<role>]]", still read).
const replStateMagic = "cellar-replication 2"

// replStatePath is where a clean stop leaves the replication state.
func (a *Actor) replStatePath() string { return a.st.Path() + "-replication" }

// saveReplication writes the state at a clean stop (Run's end): the
// header line "cellar-replication 2", then one line
// "<replid> <offset> <db> <role> <replid2|-> <second_repl_offset>
// <backlog length> <CRC-64 of the backlog>", then the backlog's bytes.
func (a *Actor) saveReplication() {
	m := &a.master
	l := a.cfg.Log
	if !m.active || l == nil || a.durable.failure() != nil || a.logPos != l.Written() || a.repl.catchingUp {
		return
	}
	path := a.replStatePath()
	tmp := path + ".tmp"
	role := "master"
	if a.repl.on {
		role = "replica"
	}
	backlog := m.backlog
	if size := a.backlogSize(); int64(len(backlog)) > size {
		backlog = backlog[int64(len(backlog))-size:]
	}
	id2, off2 := m.replID2, m.secondOffset
	if id2 == "" {
		id2, off2 = "-", -1
	}
	data := fmt.Appendf(nil, "%s\n%s %d %d %s %s %d %d %x\n", replStateMagic,
		a.repl.replID, m.offset, max(m.selDB, 0), role, id2, off2, len(backlog), rdb.CRC64(0, backlog))
	data = append(data, backlog...)
	err := writeSynced(tmp, data)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
		a.log.Warn().Err(err).Msg("replication: could not save the replication ID and offset; replicas will resync in full after the restart")
		return
	}
	a.log.Info().Str("replid", a.repl.replID).Int64("offset", m.offset).Str("replid2", m.replID2).
		Int64("second_repl_offset", m.secondOffset).Int("backlog_bytes", len(backlog)).Bool("replica", a.repl.on).
		Msg("replication: replication IDs, offset and backlog saved for the restart")
}

// loadReplication takes the state a clean stop left (New, with a redo
// log). A file that does not read whole is not used.
func (a *Actor) loadReplication() {
	path := a.replStatePath()
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if err := os.Remove(path); err != nil {
		return // kept, it could be read again after a crash: not used
	}
	if syncDir(filepath.Dir(path)) != nil {
		return
	}
	st, ok := parseReplState(b)
	if !ok {
		a.log.Warn().Str("file", path).Msg("replication: the saved replication state does not read; a new history starts")
		return
	}
	m := &a.master
	a.repl.replID = st.replID
	// As a master, the stream after the restart starts with a SELECT; as
	// a replica, it continues in the database its master's had selected.
	m.active, m.offset, m.selDB, m.resumeDB = true, st.offset, -1, st.db
	m.loadedReplica = st.replica
	m.replID2, m.secondOffset = st.replID2, st.secondOffset
	if size := a.backlogSize(); int64(len(st.backlog)) > size {
		st.backlog = st.backlog[int64(len(st.backlog))-size:]
	}
	m.backlog = append(make([]byte, 0, len(st.backlog)), st.backlog...)
	a.log.Info().Str("replid", st.replID).Int64("offset", st.offset).Str("replid2", st.replID2).
		Int64("second_repl_offset", st.secondOffset).Int("backlog_bytes", len(m.backlog)).Bool("replica", st.replica).
		Msg("replication: replication IDs, offset and backlog of the clean stop restored")
}

// replSaved is the state a clean stop saved.
type replSaved struct {
	replID       string
	offset       int64
	db           int
	replica      bool
	replID2      string // "": none
	secondOffset int64
	backlog      []byte
}

// parseReplState reads either format of the file.
func parseReplState(b []byte) (st replSaved, ok bool) {
	st.secondOffset = -1
	rest, isV2 := bytes.CutPrefix(b, []byte(replStateMagic+"\n"))
	line := rest
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		line, rest = rest[:i], rest[i+1:]
	} else {
		rest = nil
	}
	f := strings.Fields(string(line))
	if isV2 && len(f) != 8 || !isV2 && (len(f) < 2 || len(f) > 4) {
		return st, false
	}
	if len(f[0]) != 40 {
		return st, false
	}
	st.replID = f[0]
	var err error
	if st.offset, err = strconv.ParseInt(f[1], 10, 64); err != nil || st.offset < 0 {
		return st, false
	}
	if len(f) >= 3 {
		if st.db, err = strconv.Atoi(f[2]); err != nil || st.db < 0 || st.db >= storage.NumDBs {
			return st, false
		}
	}
	st.replica = len(f) >= 4 && f[3] == "replica"
	if !isV2 {
		return st, true
	}
	if f[4] != "-" {
		if len(f[4]) != 40 {
			return st, false
		}
		st.replID2 = f[4]
		if st.secondOffset, err = strconv.ParseInt(f[5], 10, 64); err != nil || st.secondOffset < 0 {
			return st, false
		}
	}
	n, err := strconv.ParseInt(f[6], 10, 64)
	if err != nil || n != int64(len(rest)) || n > st.offset {
		return st, false
	}
	crc, err := strconv.ParseUint(f[7], 16, 64)
	if err != nil || crc != rdb.CRC64(0, rest) {
		return st, false
	}
	st.backlog = rest
	return st, true
}

func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// shiftIfLoaded gives a server that stopped as a replica and started as
// a master a history of its own before it streams anything or serves a
// replica (Redis 7.0's loadDataFromDisk, for a master: the saved ID
// becomes the second one, valid up to the saved offset). Until then the
// ID is its old master's, which a REPLICAOF continues.
func (a *Actor) shiftIfLoaded() {
	m := &a.master
	if !m.loadedReplica || a.repl.on {
		return
	}
	m.loadedReplica = false
	m.replID2, m.secondOffset = a.repl.replID, m.offset+1
	a.repl.replID = newReplID()
	m.selDB = -1
	a.dropReplicas()
	a.log.Info().Str("replid", a.repl.replID).Str("replid2", m.replID2).Int64("second_repl_offset", m.secondOffset).
		Msg("replication: started as a master from a replica's state: a new replication ID, the old one valid up to the saved offset")
}

// syncTempPrefix starts the name of every file a full sync writes beside
// the database (the snapshot's copy and its -wal and -shm, the RDB of the
// length form), so that those a crash left behind are found at the next
// start.
func (a *Actor) syncTempPrefix() string { return a.st.Path() + "-replsync-" }

// removeSyncLeftovers removes the files of full syncs that a crash
// interrupted, and a half-written replication state (New, once the redo
// log's lock says no other process owns the database).
func (a *Actor) removeSyncLeftovers() {
	files, _ := filepath.Glob(globQuote(a.syncTempPrefix()) + "*")
	files = append(files, a.replStatePath()+".tmp")
	for _, f := range files {
		if err := os.Remove(f); err == nil {
			a.log.Info().Str("file", f).Msg("replication: removed a file of a full sync interrupted by a crash")
		}
	}
}

// globQuote escapes the characters filepath.Match gives a meaning to.
func globQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
