package redo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// file is what the log needs of a segment it writes or fsyncs. The real
// one is *os.File; tests substitute a file whose Sync or WriteAt fails, to
// check that an fsync error is sticky and that a failed write leaves the
// log consistent. Implementations must allow Sync concurrently with
// WriteAt, as *os.File does (the writer goes on while Sync runs).
type file interface {
	WriteAt(p []byte, off int64) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// fsys opens segment files and syncs the directory; tests replace it.
type fsys struct {
	create  func(path string) (file, error) // a new segment: must not exist yet
	open    func(path string) (file, error) // an existing segment, for writing and fsync
	syncDir func(dir string) error
}

var osFS = &fsys{
	create: func(path string) (file, error) {
		return openOS(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	},
	open: func(path string) (file, error) {
		return openOS(path, os.O_RDWR, 0)
	},
	syncDir: func(dir string) error {
		d, err := os.Open(dir)
		if err != nil {
			return err
		}
		err = d.Sync()
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		return err
	},
}

// openOS returns a nil interface (not a nil *os.File in one) on error.
func openOS(path string, flag int, perm os.FileMode) (file, error) {
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// lockDir takes an exclusive lock on dir/LOCK for as long as the returned
// file stays open: two writers appending to one log would interleave
// records at the same positions. flock locks belong to the open file, so
// a second Open in the same process is refused too.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("redo: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("redo: %s is in use by another open log", dir)
		}
		return nil, fmt.Errorf("redo: lock %s: %w", path, err)
	}
	return f, nil
}
