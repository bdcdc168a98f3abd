package storage

import (
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Reading and overwriting a few bytes of a large string in place, for
// SETBIT, GETBIT and BITFIELD on long bitmaps. A string too large for the hot cache
// (over 64 KB) lives in a blob of its own (blobs.go); rewriting it whole
// for one bit would write all of it to the WAL. SQLite's incremental blob
// I/O reads and writes bytes of that blob where they are, dirtying only
// the pages they sit on (the overflow chain is walked up to them, through
// the page cache). Anything else — a cached value, a row holding its value
// inline, a change of length — goes the ordinary way (the caller falls
// back to GetString and SetString).

var qBumpString = newQuery("UPDATE keys SET version = ?3 WHERE db = ?1 AND key = ?2 AND type = 1")

// stringBlob finds key's blob if key is a live string whose value is a
// blob of its own that the hot cache does not hold; ok is false otherwise
// (nothing is wrong then: the ordinary path applies).
func (s *Store) stringBlob(db int, key []byte) (ref int64, ok bool, err error) {
	if s.cache.get(db, key, s.Now) != nil {
		return 0, false, nil
	}
	st := s.qKey(qGetString, db, key)
	defer st.reset()
	row, err := st.step()
	if err != nil || !row {
		return 0, false, err
	}
	if Type(st.colInt(0)) != TypeString || expired(st.colInt(1), s.Now) || st.colType(2) != sqlite3.SQLITE_INTEGER {
		return 0, false, nil
	}
	return st.colInt(2), true, nil
}

// blobIO opens blob ref (for writing with write) on the actor's
// connection, runs fn with its size and a C buffer of n bytes, and closes
// it.
func (s *Store) blobIO(ref int64, write bool, n int, fn func(h uintptr, size int64, buf uintptr) int32) error {
	c := s.c
	// stringBlob may have read the row aside a flush in flight (aside.go);
	// the blob handle is the actor's own connection, which the flush holds
	// until it lands.
	c.ready()
	var names [3]uintptr // "main", "blobs", "data"
	for i, name := range []string{"main", "blobs", "data"} {
		z, err := libc.CString(name)
		if err != nil {
			return err
		}
		defer libc.Xfree(c.tls, z)
		names[i] = z
	}
	zDB, zTable, zCol := names[0], names[1], names[2]
	pp := libc.Xmalloc(c.tls, 8)
	buf := libc.Xmalloc(c.tls, libc.Tsize_t(max(n, 1)))
	defer libc.Xfree(c.tls, pp)
	defer libc.Xfree(c.tls, buf)
	flags := int32(0)
	if write {
		flags = 1
	}
	if rc := sqlite3.Xsqlite3_blob_open(c.tls, c.db, zDB, zTable, zCol, ref, flags, pp); rc != sqlite3.SQLITE_OK {
		return c.err(rc)
	}
	h := *(*uintptr)(cptr(pp))
	rc := fn(h, int64(sqlite3.Xsqlite3_blob_bytes(c.tls, h)), buf)
	if crc := sqlite3.Xsqlite3_blob_close(c.tls, h); rc == sqlite3.SQLITE_OK {
		rc = crc
	}
	if rc != sqlite3.SQLITE_OK {
		return c.err(rc)
	}
	return nil
}

// StringAt reads len(dst) bytes at off of string key's value in place,
// when the value is a blob of its own (see above), and returns the value's
// length; inPlace is false when the ordinary path must be taken instead.
// Bytes past the end of the value read as zero.
func (s *Store) StringAt(db int, key []byte, off int64, dst []byte) (size int64, inPlace bool, err error) {
	if s.mem != nil {
		return 0, false, nil // the value is in memory: the ordinary path
	}
	ref, ok, err := s.stringBlob(db, key)
	if err != nil || !ok {
		return 0, false, err
	}
	clear(dst)
	err = s.blobIO(ref, false, len(dst), func(h uintptr, n int64, buf uintptr) int32 {
		size = n
		m := min(int64(len(dst)), n-off)
		if m <= 0 {
			return sqlite3.SQLITE_OK
		}
		rc := sqlite3.Xsqlite3_blob_read(s.c.tls, h, buf, int32(m), int32(off))
		copy(dst, cbytes(buf, int(m)))
		return rc
	})
	return size, err == nil, err
}

// Patch is bytes to write at an offset of a string's value.
type Patch struct {
	Off int64
	B   []byte
}

// PatchString overwrites bytes of string key's value in place, patch by
// patch, when the value is a blob of its own and every patch lies within
// it; done is false (and nothing changed) when the ordinary path must be
// taken instead. The key's version moves and the change is recorded once,
// as any write's.
func (s *Store) PatchString(db int, key []byte, patches ...Patch) (done bool, err error) {
	if s.mem != nil {
		return false, nil
	}
	ref, ok, err := s.stringBlob(db, key)
	if err != nil || !ok {
		return false, err
	}
	most := 0
	for _, p := range patches {
		most = max(most, len(p.B))
	}
	err = s.blobIO(ref, true, most, func(h uintptr, n int64, buf uintptr) int32 {
		for _, p := range patches {
			if p.Off < 0 || p.Off+int64(len(p.B)) > n {
				return sqlite3.SQLITE_OK
			}
		}
		for _, p := range patches {
			copy(cbytes(buf, len(p.B)), p.B)
			if rc := sqlite3.Xsqlite3_blob_write(s.c.tls, h, buf, int32(len(p.B)), int32(p.Off)); rc != sqlite3.SQLITE_OK {
				return rc
			}
		}
		done = true
		return sqlite3.SQLITE_OK
	})
	if err != nil || !done {
		return false, err
	}
	st := s.q(qBumpString)
	st.int(1, int64(db))
	st.blob(2, key)
	st.int(3, s.nextVersion())
	if err := st.exec(); err != nil {
		return false, err
	}
	s.dirty = true
	s.record(db, key, Written, 0)
	return true, nil
}
