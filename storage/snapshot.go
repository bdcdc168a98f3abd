package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	sqlite3 "modernc.org/sqlite/lib"
)

// Snapshot writes a consistent copy of the database at dbPath to dest, for
// SAVE and BGSAVE. It runs on an offload worker, through a connection of
// its own: in WAL mode it reads one snapshot of the data while the actor
// goes on writing. The copy is written under a temporary name, fsynced and
// renamed over dest, so dest is always a whole database or the previous
// one; then the directory is fsynced so the rename survives a power loss.
func Snapshot(dbPath, dest string) error {
	tmp := dest + ".tmp"
	if err := Copy(dbPath, tmp); err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, dest); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("storage: snapshot: %w", err)
	}
	return syncFile(filepath.Dir(dest))
}

// Copy writes a consistent copy of the database at dbPath to dest, as
// Snapshot does but neither fsynced nor renamed: for a replica's full sync,
// whose copy is read once (sent, or read as an RDB is written from) and
// removed, and whose leftovers a start removes. (Snapshot's two fsyncs
// cost about a quarter of a second with 1 M keys.) On an offload worker.
func Copy(dbPath, dest string) error {
	os.Remove(dest) // a leftover of a crash during an earlier copy
	c, err := openConn(dbPath, sqlite3.SQLITE_OPEN_READONLY)
	if err != nil {
		return fmt.Errorf("storage: snapshot: %w", err)
	}
	err = c.exec("PRAGMA busy_timeout = 5000; VACUUM INTO '" + strings.ReplaceAll(dest, "'", "''") + "'")
	if cerr := c.close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dest)
		return fmt.Errorf("storage: snapshot: %w", err)
	}
	return nil
}

// syncFile fsyncs a file or directory by path.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("storage: snapshot: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("storage: snapshot: fsync %s: %w", path, err)
	}
	return nil
}
