package actor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/cellar-db/cellar/offload"
	"github.com/cellar-db/cellar/rdb"
	"github.com/cellar-db/cellar/storage"
	"github.com/cellar-db/cellar/storage/redo"
)

// A full sync's RDB, streamed (Redis 7.0's replication.c and rdb.c:
// rdbSaveToSlavesSockets for the diskless form, sendBulkToSlave for the
// form with a length).
//
// One job on the offload pool serves the replicas of one sync (the group
// startPendingSyncs chose). It copies the database (storage.Copy),
// opens the copy as a Store of its own with a small memory bound (each key
// goes once written) and reads the redo log position the copy covers. The
// actor then picks, for that position, the mark of the stream each
// replica waited through (syncBegin): the offset and the selected
// database the RDB stands at, which go into its auxiliary fields
// (repl-stream-db, repl-id, repl-offset, first in the file as Redis writes
// them) and into "+FULLRESYNC <replid> <offset>", sent at once. Then:
//
//   - diskless ("$EOF:<mark>", every replica of the group announced capa
//     eof): the RDB goes to the replicas in pieces of syncPiece bytes as
//     it is written, the mark after its last byte;
//   - with a length ("$<len>"): the RDB is written to a file beside the
//     database (<db>-replsync-<pid>-<n>.rdb; the replicas get a newline a
//     second meanwhile, as Redis's do during its BGSAVE), then its length,
//     and the file in pieces.
//
// Each piece reaches a replica through the actor (syncPiece: the push
// path, after the replies it owes), and the job gives the next one only
// when every replica of the group holds less than syncWindow bytes unsent
// (its ClientMem's Output: built and not yet written, or in the socket's
// buffer), so the master holds per sync one piece being written and a
// window per replica, whatever the keyspace's size — plus the largest key,
// which is read whole. A replica whose unsent bytes do not go down for
// repl-timeout seconds is disconnected. As in Redis, whose child writes
// the RDB to the replica's socket and never to its output buffer, the
// pieces are not held against the replica output class
// (client-output-buffer-limit replica): only the stream kept meanwhile
// (replica.pend) is, by boundPend. Once every piece is sent and the
// replicas' output has drained (so that none of the RDB is left in what
// the class limits count), the replica is online: with a length, the
// stream since its mark follows at once; diskless, after its first
// REPLCONF ACK (repl_start_cmd_stream_on_ack), or at once if that came
// already.
//
// The job owns its copy, its writer and its file; it reaches the actor
// only through Call, and stops when the actor has stopped (Call returns
// without running) or when no replica of the group is left. Files a crash
// leaves are removed at the next start (removeSyncLeftovers).

const (
	// syncPiece is how many RDB bytes the job gathers before handing
	// them to the replicas.
	syncPiece = 256 << 10
	// syncWindow is how many RDB bytes a replica may hold unsent before
	// the job waits to give it more.
	syncWindow = 2 << 20
	// syncCopyMemory bounds what the snapshot's copy holds in memory.
	syncCopyMemory = 16 << 20
)

var (
	errSyncStopped    = errors.New("actor: the server is stopping")
	errSyncNoReplicas = errors.New("actor: no replica of the sync is left")
)

// fullSync is one sync job: set up by the actor (startFullSync), then run
// by an offload worker, which alone touches the fields below ids.
type fullSync struct {
	a   *Actor
	ids []uint64
	eof bool
	// physical: the replicas get the database's copy itself
	// (physical.go), with a length, instead of an RDB; catchUp: with the
	// redo log's records since it, so that the copy is of SQLite's last
	// commit, taken at once, not after a flush.
	physical, catchUp bool
	// mark is the diskless form's 40 random hex characters (Redis's
	// getRandomHexChars).
	mark    string
	src     string
	tmp     string // the snapshot's copy
	file    string // the length form's RDB
	timeout time.Duration

	targets []syncTarget
	sent    int64 // RDB bytes handed to the replicas
}

// syncTarget is what the job watches of one replica of its group.
type syncTarget struct {
	id    uint64
	mem   *ClientMem
	out   int64     // its unsent bytes at the last look
	moved time.Time // when they last went down
}

// syncAux is where the RDB stands in the stream: its auxiliary fields,
// and the redo log position of its mark (past the copy's for a catch-up).
type syncAux struct {
	replID string
	offset int64
	db     int
	logPos uint64
}

// startFullSync runs one sync job for the replicas group after the next
// flush; eof: they get the RDB in the diskless form; physical: the copy of
// the database instead of an RDB.
func (a *Actor) startFullSync(group []*session, eof, physical bool) {
	m := &a.master
	m.syncs++
	prefix := fmt.Sprintf("%s%d-%d", a.syncTempPrefix(), os.Getpid(), m.syncs)
	j := &fullSync{a: a, eof: eof, physical: physical, src: a.st.Path(), tmp: prefix + ".db", file: prefix + ".rdb"}
	j.catchUp = physical && a.cfg.Log != nil
	for _, s := range group {
		j.catchUp = j.catchUp && s.replica.catchUp
	}
	if eof {
		j.mark = newReplID()
	}
	secs, _ := strconv.Atoi(a.storedParamValue("repl-timeout"))
	j.timeout = time.Duration(max(secs, 1)) * time.Second
	for _, s := range group {
		j.ids = append(j.ids, s.id)
		s.replica.job = j
		if physical {
			a.log.Info().Uint64("client", s.id).Str("addr", s.addr).
				Msg("replica: full resync: sending a Cellar replica the database's snapshot (physical)")
			continue
		}
		a.log.Info().Uint64("client", s.id).Str("addr", s.addr).Int("replicas", len(group)).Bool("diskless", eof).
			Msg("replica: full resync: streaming an RDB from a snapshot")
	}
	start := func() {
		job := &offload.Job{Run: j.run}
		if err := a.pool.Submit(context.Background(), job, offload.NoWait); err != nil {
			a.syncFail(j, "starting its job", err)
		}
	}
	if j.catchUp {
		// The copy is of SQLite's last commit, at or past the position
		// the last landed flush covers: the log is kept from there until
		// the job has read what the copy misses.
		if a.logPins == nil {
			a.logPins = map[*fullSync]redo.Position{}
		}
		a.logPins[j] = a.logPos
		start()
		return
	}
	a.afterFlush = append(a.afterFlush, start)
}

// run is the job's body, on an offload worker.
func (j *fullSync) run() {
	if j.catchUp {
		defer j.call(func() { delete(j.a.logPins, j) })
	}
	defer func() {
		for _, f := range []string{j.tmp, j.tmp + "-wal", j.tmp + "-shm", j.file} {
			os.Remove(f)
		}
	}()
	why, err := j.stream()
	if err != nil && err != errSyncStopped && err != errSyncNoReplicas {
		j.call(func() { j.a.syncFail(j, why, err) })
	}
}

// stream copies, writes and sends; why says which step failed.
func (j *fullSync) stream() (why string, err error) {
	if err := storage.Copy(j.src, j.tmp); err != nil {
		return "copying the database", err
	}
	if j.physical {
		return j.streamPhysical()
	}
	// The copy's keys pass through its engine one by one: a small bound
	// lets each go once written (it is clean: nothing of it waits for a
	// flush), so the job holds a piece of the RDB, not the keyspace.
	st, err := storage.Open(storage.Options{Path: j.tmp, MaxMemory: syncCopyMemory})
	if err != nil {
		return "opening the copy", err
	}
	defer st.Close()
	st.Now = 0 // everything the copy holds goes, expired or not; the stream's DELs follow
	pos, err := st.RedoPosition()
	if err != nil {
		return "reading the copy's log position", err
	}
	var aux syncAux
	if !j.call(func() { j.targets, aux = j.a.syncBegin(j, pos) }) {
		return "", errSyncStopped
	}
	if len(j.targets) == 0 {
		return "", errSyncNoReplicas
	}
	if j.eof {
		if err := writeSyncRDB(st, aux, []byte(j.mark), j.send); err != nil {
			return "streaming the RDB", err
		}
	} else {
		size, err := j.writeFile(st, aux)
		if err != nil {
			return "writing the RDB file", err
		}
		if err := j.sendFile(size); err != nil {
			return "sending the RDB file", err
		}
	}
	// Nothing of the RDB may be left in what the replica output class
	// counts once the stream follows.
	if err := j.room(syncWindow); err != nil {
		return "sending the RDB", err
	}
	if !j.call(func() { j.a.syncSent(j) }) {
		return "", errSyncStopped
	}
	return "", nil
}

// streamPhysical sends the copy itself (physical.go): the stream's mark
// of its log position, as for an RDB (syncBegin), then
// "$SQLITE:<length>:<db>\r\n" and the file in pieces.
func (j *fullSync) streamPhysical() (why string, err error) {
	pos, err := storage.SnapshotPosition(j.tmp)
	if err != nil {
		return "reading the copy's log position", err
	}
	fi, err := os.Stat(j.tmp)
	if err != nil {
		return "reading the copy's size", err
	}
	var aux syncAux
	if !j.call(func() { j.targets, aux = j.a.syncBegin(j, pos) }) {
		return "", errSyncStopped
	}
	if len(j.targets) == 0 {
		return "", errSyncNoReplicas
	}
	hdr := fmt.Sprintf("%s%d:%d", physicalHeader, fi.Size(), aux.db)
	if j.catchUp {
		hdr += physicalCatchUp
	}
	if err := j.sendPath(j.tmp, fi.Size(), []byte(hdr+"\r\n")); err != nil {
		return "sending the database's copy", err
	}
	if j.catchUp {
		if err := j.sendCatchUp(pos, aux.logPos); err != nil {
			return "sending the redo log since the copy", err
		}
	}
	if err := j.room(syncWindow); err != nil {
		return "sending the database's copy", err
	}
	if !j.call(func() { j.a.syncSent(j) }) {
		return "", errSyncStopped
	}
	return "", nil
}

// writeSyncRDB writes every function library and every key of the copy st
// into an RDB standing at aux, calling emit with each piece of about
// syncPiece bytes and with the last one, tail appended to it.
func writeSyncRDB(st *storage.Store, aux syncAux, tail []byte, emit func([]byte) error) error {
	w := rdb.NewFileWriter()
	w.Aux("redis-ver", RedisVersion)
	w.Aux("redis-bits", "64")
	w.Aux("ctime", strconv.FormatInt(time.Now().Unix(), 10))
	w.Aux("used-mem", "0")
	w.Aux("repl-stream-db", strconv.Itoa(aux.db))
	w.Aux("repl-id", aux.replID)
	w.Aux("repl-offset", strconv.FormatInt(aux.offset, 10))
	w.Aux("aof-base", "0")
	libs, err := st.FunctionLibraries()
	if err != nil {
		return err
	}
	for _, l := range libs {
		w.Function(l.Code)
	}
	var str rdb.Object
	for db := range storage.NumDBs {
		started := false
		err := st.EachStored(db, func(name []byte, t storage.Type, exp int64, v []byte) error {
			if !started {
				expires, _ := st.CountExpiring(db)
				w.SelectDB(db, uint64(st.DBSize(db)), uint64(expires))
				started = true
			}
			if t == storage.TypeString {
				str.Kind, str.Str = rdb.KindString, v
				w.Key(name, &str, exp)
			} else {
				o, err := readObject(st, db, name, t)
				if err != nil {
					return err
				}
				w.Key(name, o, exp)
				if err := st.EndCommand(); err != nil { // lets the key go
					return err
				}
			}
			if w.Pending() >= syncPiece {
				return emit(w.Take())
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return emit(append(w.End(), tail...))
}

// writeFile writes the RDB to the job's file and returns its size.
func (j *fullSync) writeFile(st *storage.Store, aux syncAux) (int64, error) {
	f, err := os.Create(j.file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	size := int64(0)
	err = writeSyncRDB(st, aux, nil, func(b []byte) error {
		select {
		case <-j.a.done:
			return errSyncStopped
		default:
		}
		size += int64(len(b))
		_, err := f.Write(b)
		return err
	})
	if err != nil {
		return 0, err
	}
	return size, f.Close()
}

// sendFile sends "$<size>\r\n" and the file, in pieces.
func (j *fullSync) sendFile(size int64) error {
	return j.sendPath(j.file, size, append(strconv.AppendInt([]byte("$"), size, 10), '\r', '\n'))
}

// sendPath sends hdr and the file at path, of size bytes, in pieces.
func (j *fullSync) sendPath(path string, size int64, hdr []byte) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var alive []uint64
	if !j.call(func() { alive = j.a.syncBulk(j, hdr) }) {
		return errSyncStopped
	}
	if j.keep(alive) == 0 {
		return errSyncNoReplicas
	}
	br := bufio.NewReaderSize(f, 64<<10)
	for left := size; left > 0; {
		piece := make([]byte, min(left, syncPiece))
		if _, err := io.ReadFull(br, piece); err != nil {
			return err
		}
		if err := j.send(piece); err != nil {
			return err
		}
		left -= int64(len(piece))
	}
	return nil
}

// send hands piece to every replica of the group once each has room for
// it.
func (j *fullSync) send(piece []byte) error {
	if err := j.room(int64(len(piece))); err != nil {
		return err
	}
	var alive []uint64
	if !j.call(func() { alive = j.a.syncPiece(j, piece) }) {
		return errSyncStopped
	}
	j.sent += int64(len(piece))
	if j.keep(alive) == 0 {
		return errSyncNoReplicas
	}
	return nil
}

// keep forgets the targets not in alive and returns how many are left.
func (j *fullSync) keep(alive []uint64) int {
	kept := j.targets[:0]
	for _, t := range j.targets {
		for _, id := range alive {
			if id == t.id {
				kept = append(kept, t)
				break
			}
		}
	}
	j.targets = kept
	return len(kept)
}

// room waits until every replica of the group holds at most syncWindow-n
// bytes unsent (none at all, for n = syncWindow). The loops measure a
// connection's unsent bytes when they write and on their 20 ms tick while
// any are left, and tell nobody when they go down, so the job looks again
// after a millisecond, then less and less often up to the tick. A replica
// that keeps the job waiting for repl-timeout without taking anything is
// disconnected.
func (j *fullSync) room(n int64) error {
	delay := time.Millisecond
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		waiting := false
		var late []uint64
		for i := range j.targets {
			t := &j.targets[i]
			if t.mem.Gone() {
				continue // its connection closed; the actor drops it at the next piece
			}
			out := t.mem.Output()
			full := out > 0 && out+n > syncWindow
			if !full || out < t.out || t.moved.IsZero() {
				// Not in the way, or taking: repl-timeout counts from
				// here.
				t.moved = now
			}
			t.out = out
			if !full {
				continue
			}
			if now.Sub(t.moved) > j.timeout {
				late = append(late, t.id)
				continue
			}
			waiting = true
		}
		if len(late) > 0 {
			var alive []uint64
			if !j.call(func() { alive = j.a.syncTimedOut(j, late) }) {
				return errSyncStopped
			}
			if j.keep(alive) == 0 {
				return errSyncNoReplicas
			}
		}
		if !waiting {
			return nil
		}
		timer.Reset(delay)
		select {
		case <-j.a.done:
			return errSyncStopped
		case <-timer.C:
		}
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// call runs fn on the actor and reports whether it ran (not if the actor
// has stopped).
func (j *fullSync) call(fn func()) bool {
	ran := false
	j.a.Call(func() { fn(); ran = true })
	return ran
}

// The actor's side of a sync job: each runs on the actor goroutine.

// syncSession is replica id of job j, if it is still there and waits for
// j.
func (a *Actor) syncSession(j *fullSync, id uint64) *session {
	s := a.sessions[id]
	if s == nil || s.killed || s.replica == nil || s.replica.job != j {
		return nil
	}
	return s
}

// syncAlive lists the replicas of j still there.
func (a *Actor) syncAlive(j *fullSync) []uint64 {
	var alive []uint64
	for _, id := range j.ids {
		if a.syncSession(j, id) != nil {
			alive = append(alive, id)
		}
	}
	return alive
}

// syncDrop disconnects replica s of a sync that cannot be served.
func (a *Actor) syncDrop(s *session, why string, err error) {
	a.log.Error().Err(err).Uint64("client", s.id).Str("addr", s.addr).Msg("replica: full resync failed: " + why)
	s.replica.finish = nil // a PSYNC not yet answered stays so; the replica retries
	s.replica.job = nil
	a.kill(s)
}

// syncFail disconnects every replica still waiting for job j.
func (a *Actor) syncFail(j *fullSync, why string, err error) {
	for _, id := range j.ids {
		if s := a.syncSession(j, id); s != nil {
			a.syncDrop(s, why, err)
		}
	}
}

// syncBegin is the job's copy taken at redo log position pos: each replica
// of the group gets the stream's mark of that position, +FULLRESYNC with
// its offset (PSYNC only; SYNC has no such line) and, diskless, the RDB's
// "$EOF:<mark>" line. It returns the replicas the job serves and where the
// RDB stands.
//
// The RDB stands at the last mark of position pos: every replica of the
// group waited through it (they all asked before the job started, and the
// marks of every round's end are the same for all), and between its first
// and last marks of one position the stream holds no write (a PING, a
// GETACK), so the keyspace at pos is the one at either. So one RDB, its
// repl-offset included, serves them all.
func (a *Actor) syncBegin(j *fullSync, pos uint64) ([]syncTarget, syncAux) {
	var targets []syncTarget
	var at replMark
	have := false
	if j.catchUp {
		pos = j.a.catchUpMark(j, pos)
	}
	for _, id := range j.ids {
		s := a.syncSession(j, id)
		if s == nil || s.replica.finish == nil {
			continue
		}
		r := s.replica
		i := len(r.marks) - 1
		for i >= 0 && r.marks[i].logPos != pos {
			i--
		}
		if i < 0 {
			a.syncDrop(s, "the snapshot's log position is not one of the stream's", fmt.Errorf("position %d", pos))
			continue
		}
		mk := r.marks[i]
		if !have {
			at, have = mk, true
		} else if mk != at {
			a.syncDrop(s, "the snapshot's log position stands at another offset for this replica", fmt.Errorf("offset %d, not %d", mk.offset, at.offset))
			continue
		}
		// The stream it waited through up to the mark is in the RDB.
		if r.rdbOnly {
			r.pend = nil
		} else {
			r.pend = append([]byte(nil), r.pend[mk.offset-r.pendFrom:]...)
		}
		r.pendFrom, r.marks = mk.offset, nil
		var hdr []byte
		if r.psync {
			hdr = append(hdr, "+FULLRESYNC "+a.repl.replID+" "+strconv.FormatInt(mk.offset, 10)+"\r\n"...)
		}
		if j.eof {
			hdr = append(hdr, "$EOF:"+j.mark+"\r\n"...)
			r.state = replSendBulk
		} else {
			r.state = replWaitBgsaveEnd
		}
		finish := r.finish
		r.finish = nil
		finish(hdr)
		targets = append(targets, syncTarget{id: id, mem: s.mem})
	}
	return targets, syncAux{replID: a.repl.replID, offset: at.offset, db: max(at.selDB, 0), logPos: pos}
}

// catchUpMark is the log position whose mark a catch-up sync of a copy at
// pos stands at: the first of every replica's marks at or past pos (they
// asked at different times; the later ones' marks are all the earlier
// ones' too). The copy misses the records from pos to there, which the job
// reads from the log (sendCatchUp).
func (a *Actor) catchUpMark(j *fullSync, pos uint64) uint64 {
	at := pos
	for _, id := range j.ids {
		s := a.syncSession(j, id)
		if s == nil || s.replica.finish == nil {
			continue
		}
		for _, mk := range s.replica.marks {
			if mk.logPos >= pos {
				at = max(at, mk.logPos)
				break
			}
		}
	}
	return at
}

// syncBulk starts sending the length form's file (or the physical form's
// copy) with its header hdr.
func (a *Actor) syncBulk(j *fullSync, hdr []byte) []uint64 {
	alive := a.syncAlive(j)
	for _, id := range alive {
		s := a.sessions[id]
		s.replica.state = replSendBulk
		a.pushSync(s, hdr)
	}
	return alive
}

// syncPiece hands a piece of the RDB to every replica of j still there.
func (a *Actor) syncPiece(j *fullSync, piece []byte) []uint64 {
	alive := a.syncAlive(j)
	for _, id := range alive {
		a.pushSync(a.sessions[id], piece)
	}
	return alive
}

// syncTimedOut disconnects the replicas late, which took nothing for
// repl-timeout, and lists those of j still there.
func (a *Actor) syncTimedOut(j *fullSync, late []uint64) []uint64 {
	for _, id := range late {
		if s := a.syncSession(j, id); s != nil {
			a.syncDrop(s, "it read nothing for repl-timeout", fmt.Errorf("%s without progress", j.timeout))
		}
	}
	return a.syncAlive(j)
}

// syncSent ends the sync: the RDB is sent whole and has left the output
// of every replica of j, which is now online. With a length, the stream
// since its mark follows at once; diskless, after its first REPLCONF ACK
// (or now, if that came during the transfer).
func (a *Actor) syncSent(j *fullSync) {
	for _, id := range a.syncAlive(j) {
		s := a.sessions[id]
		r := s.replica
		r.job = nil
		if r.rdbOnly {
			a.log.Info().Uint64("client", id).Str("addr", s.addr).Int64("rdb_bytes", j.sent).
				Msg("replica: RDB transfer completed; an rdb-only replica is disconnected")
			a.kill(s)
			continue
		}
		r.state, r.ackTime = replOnline, a.roundStart
		if j.physical {
			a.master.physicalSyncs++
		}
		if j.eof && !r.ackedEarly {
			r.streamOnAck = true
		} else {
			if len(r.pend) > 0 {
				a.push(s, r.pend, false)
			}
			r.pend = nil
		}
		a.log.Info().Uint64("client", id).Str("addr", s.addr).Int64("rdb_bytes", j.sent).Bool("diskless", j.eof).Bool("physical", j.physical).
			Int64("offset", r.pendFrom).Int64("master_repl_offset", a.master.offset).Msg("replica: full resync sent")
	}
}

// pushSync pushes b, a piece of a full sync's RDB, to replica s: after the
// replies it owes, like any push, but not held against the replica output
// class (the job bounds what it holds unsent).
func (a *Actor) pushSync(s *session, b []byte) {
	a.pushFrame(s, b, false)
}
