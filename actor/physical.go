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
// RDB would have been written from (storage.Snapshot, at the stream's mark
// of the copy's log position: the same consistency argument, syncBegin), as
//
//	$SQLITE:<length>:<repl-stream-db>\r\n<the file's bytes>
//
// in the same pieces and window as an RDB sent with its length. A Redis
// replica never announces the capa, so it never receives this form.
//
// The replica writes the file beside its database (a name under
// syncTempPrefix, which removeSyncLeftovers clears at start), fsyncs it,
// checks it (storage.CheckSnapshot: PRAGMA quick_check, the schema
// version) and imports it into the staging databases through its flush
// (ReplicaImport: storage.ImportStaging, the rows copied by SQL, off the
// actor); then ReplicaPromote swaps them in exactly as after an RDB.

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
	gen  uint64
	path string
	done chan struct{}
}

// ReplicaImport imports the checked copy at path into the staging
// databases (emptied by ReplicaBegin) for the link of generation gen: the
// rows go in the next flush, on the offload pool, and ReplicaImport
// returns once that flush has committed, or when cancel closes. The actor
// does not wait for it. From the link's goroutine. Once the import is
// queued the file is the actor's: it stays until the flush that reads it
// has committed (a failed flush is written again, the import with it),
// then it is removed; the caller removes it only when ReplicaImport
// returns errImportNotQueued.
func (a *Actor) ReplicaImport(gen uint64, path string, info storage.SnapshotInfo, cancel <-chan struct{}) error {
	done := make(chan struct{})
	queued := false
	err := a.replicaCall(gen, func() error {
		g, err := a.st.ImportStaging(path, info)
		if err != nil {
			return err
		}
		queued = true
		a.imports = append(a.imports, importWait{gen: g, path: path, done: done})
		a.startFlush()
		return nil
	})
	if !queued {
		return fmt.Errorf("%w: %w", ErrImportNotQueued, err)
	}
	select {
	case <-done:
		return nil
	case <-cancel:
		return errors.New("replica: the link ended while the snapshot was imported")
	case <-a.done:
		return errSyncStopped
	}
}

// ReplicaPromoteImported is ReplicaPromote after a physical sync's import:
// the same swap, but the flush that makes it durable runs on the offload
// pool, and ReplicaPromoteImported returns once it has committed (or when
// cancel closes), so that nothing of the master's stream runs on top of
// the swap before it is durable, as after ReplicaPromote, while the actor
// serves on: that flush moves every imported row to its live database,
// which takes as long as the keyspace is large. Until it commits, the
// live databases read the imported rows where they are (the flush's view
// of the swap not yet committed).
func (a *Actor) ReplicaPromoteImported(gen uint64, functions [][]byte, replID string, offset int64, db int, cancel <-chan struct{}) error {
	done := make(chan struct{})
	err := a.replicaCall(gen, func() error {
		if err := a.promote(functions, replID, offset, db); err != nil {
			return err
		}
		a.imports = append(a.imports, importWait{gen: a.st.Generation(), done: done})
		a.startFlush()
		return nil
	})
	if err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-cancel:
		return errors.New("replica: the link ended while the snapshot was swapped in")
	case <-a.done:
		return errSyncStopped
	}
}

// ErrImportNotQueued: ReplicaImport did not take the file (the caller
// still owns it).
var ErrImportNotQueued = errors.New("actor: the snapshot was not imported")

// checkImports answers the imports whose flush has committed, after a
// flush landed, and removes their files (on the offload pool); it starts
// the next flush for those still waiting (a flush under way when they
// were queued did not take them). After a failed flush they wait: the
// next flush writes the batch again, the import with it.
func (a *Actor) checkImports(failed bool) {
	if len(a.imports) == 0 {
		return
	}
	committed := a.st.Committed()
	kept := a.imports[:0]
	var gone []string
	for _, w := range a.imports {
		if committed >= w.gen {
			close(w.done)
			if w.path != "" {
				gone = append(gone, w.path, w.path+"-wal", w.path+"-shm", w.path+"-journal")
			}
			continue
		}
		kept = append(kept, w)
	}
	clear(a.imports[len(kept):])
	a.imports = kept
	if len(gone) > 0 {
		job := &offload.Job{Run: func() {
			for _, f := range gone {
				os.Remove(f)
			}
		}}
		if err := a.pool.Submit(context.Background(), job, offload.NoWait); err != nil {
			job.Run()
		}
	}
	if len(kept) > 0 && !failed {
		a.startFlush()
	}
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
