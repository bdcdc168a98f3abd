package actor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/cellar-db/cellar/offload"
	"github.com/cellar-db/cellar/storage"
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
// The replica writes the file beside its database (a name under
// syncTempPrefix, which removeSyncLeftovers clears at start), checks it
// (storage.CheckSnapshot: PRAGMA quick_check, the schema version) and has
// its flush replace the live databases with the copy's in one transaction
// (ReplicaImport: storage.ImportSnapshot, the file swapped in page by page
// or its rows copied by SQL, off the actor): clients read the old data
// until that flush lands, the new after, as they see an RDB's staging
// databases swapped in; as it lands the actor takes the master's history
// and function libraries, as ReplicaPromote does (promoteImported).

// physicalHeader is the line that starts a physical sync's file.
const physicalHeader = "$SQLITE:"

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
	done   chan error
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
func (a *Actor) ReplicaImport(gen uint64, path string, info storage.SnapshotInfo, replID string, offset int64, db int, cancel <-chan struct{}) error {
	w := &importWait{gen: gen, path: path, info: info, replID: replID, offset: offset, db: db, done: make(chan error, 1)}
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

// ParsePhysicalHeader reads "$SQLITE:<length>:<db>" (without its CRLF):
// ok is false for any other line (an RDB's).
func ParsePhysicalHeader(line string) (size int64, db int, ok bool, err error) {
	if len(line) < len(physicalHeader) || line[:len(physicalHeader)] != physicalHeader {
		return 0, 0, false, nil
	}
	rest := line[len(physicalHeader):]
	for i := 0; i < len(rest); i++ {
		if rest[i] != ':' {
			continue
		}
		size, err1 := strconv.ParseInt(rest[:i], 10, 64)
		db, err2 := strconv.Atoi(rest[i+1:])
		if err1 != nil || err2 != nil || size < 0 || db < 0 || db >= storage.NumDBs {
			break
		}
		return size, db, true, nil
	}
	return 0, 0, true, fmt.Errorf("%w: %q", errPhysicalHeader, line)
}
