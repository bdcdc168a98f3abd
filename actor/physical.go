package actor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cellar-db/cellar/offload"
	"github.com/cellar-db/cellar/storage"
	"github.com/cellar-db/cellar/storage/redo"
)

// The physical full sync between Cellar nodes (docs/replication.md, "How a
// Cellar replica back-fills"). A Cellar replica announces REPLCONF capa
// cellar-physical; a master that sees it answers +FULLRESYNC as for an
// RDB, but sends, instead of the RDB, the copy of its database that the
// RDB would have been written from (storage.Copy, at the stream's mark
// of the copy's log position: the same consistency argument, syncBegin), as
//
//	$SQLITE:<length>:<repl-stream-db>\r\n<the file's bytes>
//
// in the same pieces and window as an RDB sent with its length. A Redis
// replica never announces the capa, so it never receives this form.
//
// The catch-up. A replica that also announces capa cellar-catchup (every
// Cellar replica of this version) does not wait for a flush: its job
// starts at once (startFullSync) and copies SQLite's last commit, whatever
// flush is under way, at log position P. The replica's stream marks start
// when it asked; the sync stands at the first mark at or past P
// (catchUpMark), and the records from P to that mark, which the copy
// misses, are read from the redo log (pinned from the last landed flush's
// position until the job ends: Actor.logPins) and sent after the file as
// the commands the stream would have carried (recordForm), then REPLCONF
// cellar-catchup-end:
//
//	$SQLITE:<length>:<repl-stream-db>:catchup\r\n<the file's bytes><commands>*2\r\n$8\r\nREPLCONF\r\n$18\r\ncellar-catchup-end\r\n
//
// and then the stream from the mark's offset. The replica runs the
// catch-up's commands as the stream's, counted in no offset and relayed to
// nobody (package replica), and is in its master's history only once they
// have run (Actor.repl.catchingUp, cleared by REPLCONF cellar-caught-up
// from its link): until then it saves no replication state for a restart,
// serves no replica of its own, and a promotion keeps no second ID. After
// a bulk load the catch-up is what the master had not flushed yet.
//
// The replica writes the file beside its database (a name under
// syncTempPrefix, which removeSyncLeftovers clears at start), checks it
// (storage.CheckSnapshot: PRAGMA quick_check, the schema version) and has
// its flush replace the live databases with the copy's in one transaction
// (ReplicaImport: storage.ImportSnapshot, the file swapped in page by page
// or its rows copied by SQL, off the actor): clients read the old data
// until that flush lands, the new after, as they see an RDB's staging
// databases swapped in; as it lands the actor takes the master's history
// and function libraries, as ReplicaPromote does (promoteImported).

// physicalHeader is the line that starts a physical sync's file;
// physicalCatchUp ends it when the file is followed by its catch-up.
const (
	physicalHeader  = "$SQLITE:"
	physicalCatchUp = ":catchup"
)

// CatchUpEnd is the command that ends a physical sync's catch-up, after
// which the stream starts: REPLCONF cellar-catchup-end.
var CatchUpEnd = appendCommand(nil, [][]byte{[]byte("REPLCONF"), []byte("cellar-catchup-end")})

// sendCatchUp sends the records of the redo log from position from (the
// copy's) to to (the stream's mark the sync stands at) as the commands the
// stream would have carried for them, then CatchUpEnd, in pieces within
// the window as the file went. The log is kept from before from until the
// job ends (Actor.logPins).
func (j *fullSync) sendCatchUp(from, to uint64) error {
	piece := make([]byte, 0, syncPiece+4096)
	if from < to {
		rd, err := j.a.cfg.Log.NewReader(redo.Position(from))
		if err != nil {
			return err
		}
		defer rd.Close()
		var form recordForm
		sel := -1
		for pos := from; pos < to; {
			rec, next, err := rd.Next()
			if err != nil {
				return fmt.Errorf("the redo log at %d, before %d: %w", pos, to, err)
			}
			if uint64(next) > to {
				return fmt.Errorf("a record of the redo log at %d ends at %d, past the stream's mark at %d", pos, next, to)
			}
			piece = form.add(piece, &sel, rec)
			pos = uint64(next)
			if len(piece) >= syncPiece {
				if err := j.send(piece); err != nil {
					return err
				}
				piece = make([]byte, 0, syncPiece+4096)
			}
		}
	}
	return j.send(append(piece, CatchUpEnd...))
}

// PhysicalSyncFile is the name under which the replica link writes a
// physical sync's file: beside the database, under the prefix whose
// leftovers a start removes. Any goroutine.
func (a *Actor) PhysicalSyncFile(n uint64) string {
	return fmt.Sprintf("%srecv-%d-%d.db", a.syncTempPrefix(), os.Getpid(), n)
}

// importWait is a link waiting for its import's flush to commit.
type importWait struct {
	gen     uint64 // the link's generation
	flushed uint64 // the flush generation that imports it (0: not queued yet)
	path    string
	info    storage.SnapshotInfo
	// The master's history the copy stands at: its replication ID,
	// offset and the database its stream had selected there.
	replID string
	offset int64
	db     int
	// catchUp: the master's records since the copy follow as commands
	// (promoteImported).
	catchUp bool
	done    chan error
}

// ReplicaImport replaces the live databases with those of the checked
// copy at path, for the link of generation gen: one flush, on the offload
// pool, deletes their rows and inserts the copy's (storage.ImportSnapshot);
// clients read the data as it was until it lands, and the new data after.
// In the same step as the landing the data takes the master's history,
// replID at offset with database db selected by its stream, and the
// copy's function libraries, as ReplicaPromote does after an RDB
// (promoteImported). ReplicaImport returns once that is done, or when
// cancel closes; the actor does not wait for it. From the link's
// goroutine. The file is the actor's once ReplicaImport has reached it
// (every error but ErrImportNotQueued): it is removed once imported, or
// when its import cannot start.
func (a *Actor) ReplicaImport(gen uint64, path string, info storage.SnapshotInfo, replID string, offset int64, db int, catchUp bool, cancel <-chan struct{}) error {
	w := &importWait{gen: gen, path: path, info: info, replID: replID, offset: offset, db: db, catchUp: catchUp, done: make(chan error, 1)}
	err := a.replicaCall(gen, func() error {
		a.imports = append(a.imports, w)
		a.startImports()
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrImportNotQueued, err)
	}
	select {
	case err := <-w.done:
		return err
	case <-cancel:
		return errors.New("replica: the link ended while the snapshot was imported")
	case <-a.done:
		return errSyncStopped
	}
}

// ErrImportNotQueued: ReplicaImport did not take the file (the caller
// still owns it).
var ErrImportNotQueued = errors.New("actor: the snapshot was not imported")

// startImports starts the first import waiting, when no flush is under
// way: its flight must hold it and nothing after it. An import whose link
// was replaced meanwhile is dropped.
func (a *Actor) startImports() {
	for len(a.imports) > 0 && !a.st.Flying() {
		w := a.imports[0]
		if w.flushed != 0 {
			return // under way
		}
		if !a.repl.on || a.repl.gen != w.gen {
			a.endImport(w, errStaleLink)
			continue
		}
		g, err := a.st.ImportSnapshot(w.path, w.info)
		if err != nil {
			a.endImport(w, err)
			continue
		}
		w.flushed = g
		a.startFlush()
		if !a.st.Flying() {
			// The pool could not take the flush: it ran here (startFlush)
			// and landed, or failed; checkImports sees which.
			a.checkImports(false)
		}
		return
	}
}

// endImport answers import w with err and removes its file (on the
// offload pool).
func (a *Actor) endImport(w *importWait, err error) {
	for i, x := range a.imports {
		if x == w {
			a.imports = append(a.imports[:i], a.imports[i+1:]...)
			break
		}
	}
	w.done <- err
	gone := []string{w.path, w.path + "-wal", w.path + "-shm", w.path + "-journal"}
	job := &offload.Job{Run: func() {
		for _, f := range gone {
			os.Remove(f)
		}
	}}
	if err := a.pool.Submit(context.Background(), job, offload.NoWait); err != nil {
		job.Run()
	}
}

// checkImports, after a flush landed, answers the import it committed and
// starts the next one. After a failed flush the import waits: the next
// flush writes the batch again, the import with it.
func (a *Actor) checkImports(failed bool) {
	if len(a.imports) == 0 {
		return
	}
	if w := a.imports[0]; w.flushed != 0 && a.st.Committed() >= w.flushed {
		a.endImport(w, a.promoteImported(w))
	}
	if !failed {
		a.startImports()
	}
}

// promoteImported gives the data import w just put in place the master's
// history and function libraries (ReplicaPromote's part after the swap).
// If the link that asked was replaced meanwhile (the import was in a
// flush already), the data still is the copy: a replica takes its
// history all the same (its new link asks to continue it), a server made
// a master starts a history of its own.
func (a *Actor) promoteImported(w *importWait) error {
	defer a.st.ResetTouched()
	a.dropReplicas()
	m := &a.master
	switch {
	case a.repl.on:
		a.repl.replID = w.replID
		a.repl.catchingUp = w.catchUp
		m.replID2, m.secondOffset = "", -1
		a.resetStream(w.offset, w.db)
	default:
		a.log.Warn().Msg("replication: a physical sync's snapshot was swapped in after REPLICAOF NO ONE; starting a new history")
		a.repl.replID = newReplID()
		m.replID2, m.secondOffset = "", -1
		a.resetStream(m.offset, -1)
	}
	if err := a.loadSynced(w.info.Functions); err != nil { // registry.go
		return err
	}
	if !a.repl.on || a.repl.gen != w.gen {
		return errStaleLink
	}
	return nil
}

// errPhysicalHeader is a physical sync header that does not parse.
var errPhysicalHeader = errors.New("replica: bad physical sync header")

// ParsePhysicalHeader reads "$SQLITE:<length>:<db>", and the form
// "$SQLITE:<length>:<db>:catchup" whose file its catch-up follows
// (catchUp), without the CRLF: ok is false for any other line (an RDB's).
func ParsePhysicalHeader(line string) (size int64, db int, catchUp, ok bool, err error) {
	if len(line) < len(physicalHeader) || line[:len(physicalHeader)] != physicalHeader {
		return 0, 0, false, false, nil
	}
	rest := line[len(physicalHeader):]
	rest, catchUp = strings.CutSuffix(rest, physicalCatchUp)
	for i := 0; i < len(rest); i++ {
		if rest[i] != ':' {
			continue
		}
		size, err1 := strconv.ParseInt(rest[:i], 10, 64)
		db, err2 := strconv.Atoi(rest[i+1:])
		if err1 != nil || err2 != nil || size < 0 || db < 0 || db >= storage.NumDBs {
			break
		}
		return size, db, catchUp, true, nil
	}
	return 0, 0, false, true, fmt.Errorf("%w: %q", errPhysicalHeader, line)
}
