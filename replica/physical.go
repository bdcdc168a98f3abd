package replica

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cellar-db/cellar/actor"
	"github.com/cellar-db/cellar/storage"
)

// The physical full sync (actor/physical.go): a Cellar master answers the
// capa cellar-physical with its database's copy, "$SQLITE:<len>:<db>",
// instead of an RDB. The link writes it to a file beside the database (not
// fsynced: the import reads it once, into a transaction of the database's
// own, and a start removes what a crash leaves), checks it
// (storage.CheckSnapshot: PRAGMA quick_check and the schema version), and
// has the actor's flush replace the live databases with the copy's
// (ReplicaImport: the file swapped in, or its rows copied, off the actor;
// clients read the old data until then, as with an RDB's staging
// databases) and takes the master's history as it lands. Meanwhile the
// stream that follows the file fills the waitlist, as during an RDB's
// load. A copy that fails its check or its import makes this link ask for
// RDBs from then on (the fallback).

// errPhysicalCheck marks a physical sync that failed on the copy itself,
// after which the link asks for RDBs.
var errPhysicalCheck = errors.New("replica: the master's snapshot cannot be used")

// physicalSync receives and imports the copy of size bytes that the header
// announced, whose stream continues in database db, and returns the pipe
// the command stream continues in; catchUp: that stream starts with the
// copy's catch-up (follow).
func (l *link) physicalSync(c *conn, replID string, offset, size int64, db int, catchUp bool) (*pipe, error) {
	m, a := l.m, l.m.a
	start := time.Now()
	l.syncRead.Store(0)
	m.update(l, func(st *actor.ReplicaStatus) {
		st.State, st.SyncInProgress, st.SyncTotal, st.SyncRead, st.SyncLastIO = "sync", true, size, 0, start
	})
	l.log().Info().Str("master", l.addr).Str("replid", replID).Int64("offset", offset).Int64("bytes", size).
		Msg("replica: full resynchronization: receiving the master's SQLite snapshot (physical)")
	p := newPipe(size, nil, m.cfg.BacklogMaxBytes, false)
	go p.pump(c.br)
	if err := a.ReplicaBegin(l.gen); err != nil {
		return p, err
	}
	path := a.PhysicalSyncFile(m.files.Add(1))
	owned := true // the link removes the file, until the actor takes it
	defer func() {
		if owned {
			for _, f := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
				os.Remove(f)
			}
		}
	}()
	if err := l.receiveFile(p, path, size, start); err != nil {
		return p, err
	}
	received := time.Since(start)
	info, err := storage.CheckSnapshot(path)
	if err != nil {
		return p, fmt.Errorf("%w: %w", errPhysicalCheck, err)
	}
	checked := time.Since(start)
	var keys int64
	for _, n := range info.Keys {
		keys += n
	}
	if err := p.failed(); err != nil {
		return p, err // abandoned while the file arrived (the waitlist)
	}
	err = a.ReplicaImport(l.gen, path, info, replID, offset, db, catchUp, l.ctx.Done())
	if !errors.Is(err, actor.ErrImportNotQueued) {
		owned = false // the actor's now: it removes it
	}
	if err != nil {
		if owned || l.ctx.Err() != nil {
			return p, err
		}
		return p, fmt.Errorf("%w: %w", errPhysicalCheck, err)
	}
	imported := time.Since(start)
	// The live databases hold the master's data, at offset, from here on
	// (the actor took its history as they landed), even if the waitlist
	// overflowed meanwhile: the next session continues from there.
	l.synced(replID, offset, db, start, !catchUp)
	l.catchUp = catchUp
	if err := p.failed(); err != nil {
		return p, err
	}
	peak := p.follow()
	took := time.Since(start)
	l.log().Info().Str("master", l.addr).Int64("keys", keys).Int64("bytes", size).Dur("took", took).
		Dur("received_at", received).Dur("checked_at", checked).Dur("imported_at", imported).Float64("keys_per_sec", float64(keys)/took.Seconds()).
		Float64("mb_per_sec", float64(size)/took.Seconds()/1e6).Int64("waitlist_peak_bytes", peak).
		Msg("replica: the master's snapshot is imported and swapped in (physical); applying the waitlist")
	// What follows the file in the pump's queue is the command stream.
	c.br = bufio.NewReaderSize(p, 64<<10)
	return p, nil
}

// receiveFile writes the size bytes of the copy from p to a new file at
// path.
func (l *link) receiveFile(p *pipe, path string, size int64, start time.Time) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 256<<10)
	lastLog := start
	for read := int64(0); read < size; {
		n, err := p.Read(buf[:min(int64(len(buf)), size-read)])
		if n > 0 {
			if _, werr := f.Write(buf[:n]); werr != nil {
				return werr
			}
			read += int64(n)
			l.syncRead.Store(read)
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("replica: receiving the master's snapshot: %w", err)
		}
		if now := time.Now(); now.Sub(lastLog) >= 5*time.Second {
			lastLog = now
			l.m.update(l, func(st *actor.ReplicaStatus) { st.SyncLastIO = now })
			l.log().Info().Str("master", l.addr).Int64("bytes_read", read).Int64("bytes_total", size).
				Float64("mb_per_sec", float64(read)/now.Sub(start).Seconds()/1e6).Msg("replica: receiving the master's snapshot")
		}
	}
	return f.Close()
}
