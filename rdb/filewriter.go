package rdb

import (
	"encoding/binary"
	"strconv"
)

// FileWriter builds an RDB file of version 10 (the one Redis 7.0 writes
// and loads): the header, auxiliary fields, databases, keys with their
// expiry, function libraries, and the EOF opcode with the CRC-64 of
// everything before it. A master's full sync sends it to a replica
// (actor/fullsync.go). Values use the encodings DUMP uses (AppendDump),
// which Redis's loader accepts in a file as in a payload.
//
// The file is built in memory whole, or streamed: Take hands over what
// was appended since the last Take, so a writer that takes a piece every
// so often holds one piece, not the file. The CRC is kept as the bytes
// are appended.
//
// A FileWriter is not safe for concurrent use; a writer handed from one
// goroutine to another continues where it was.
type FileWriter struct {
	buf   []byte
	crc   uint64
	sum   int   // how much of buf the CRC covers
	taken int64 // the bytes handed over by Take
	obj   []byte
}

// NewFileWriter starts a file: "REDIS0010".
func NewFileWriter() *FileWriter {
	w := &FileWriter{}
	w.buf = append(w.buf, "REDIS00"...)
	w.buf = strconv.AppendInt(w.buf, Version, 10)
	return w
}

// Aux appends an auxiliary field (redis-ver, repl-stream-db, ...).
func (w *FileWriter) Aux(key, value string) {
	w.buf = append(w.buf, opAux)
	w.buf = appendString(w.buf, []byte(key))
	w.buf = appendString(w.buf, []byte(value))
}

// SelectDB starts database db, announcing its number of keys and of keys
// with an expiry (Redis's RESIZEDB hint).
func (w *FileWriter) SelectDB(db int, keys, expires uint64) {
	w.buf = append(w.buf, opSelectDB)
	w.buf = appendLen(w.buf, uint64(db))
	w.buf = append(w.buf, opResizeDB)
	w.buf = appendLen(w.buf, keys)
	w.buf = appendLen(w.buf, expires)
}

// Key appends key with value o; expireAt is unix milliseconds, 0 for none.
func (w *FileWriter) Key(key []byte, o *Object, expireAt int64) {
	if expireAt != 0 {
		w.buf = append(w.buf, opExpireMs)
		w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(expireAt))
	}
	// A DUMP payload is the type byte and the value, then 2 bytes of
	// version and 8 of CRC: the file holds the type, the key, the value.
	w.obj = AppendDump(w.obj[:0], o)
	body := w.obj[:len(w.obj)-10]
	w.buf = append(w.buf, body[0])
	w.buf = appendString(w.buf, key)
	w.buf = append(w.buf, body[1:]...)
}

// Function appends a function library's code (Redis 7.0's FUNCTION2).
func (w *FileWriter) Function(code []byte) {
	w.buf = append(w.buf, opFunction2)
	w.buf = appendString(w.buf, code)
}

// End appends the EOF opcode and the checksum; the file is then whole,
// and End returns what was appended since the last Take (without Take,
// the whole file).
func (w *FileWriter) End() []byte {
	w.buf = append(w.buf, opEOF)
	w.crc = CRC64(w.crc, w.buf[w.sum:])
	w.sum = len(w.buf)
	w.buf = binary.LittleEndian.AppendUint64(w.buf, w.crc)
	return w.buf
}

// Len is the size of the file so far, the pieces taken included.
func (w *FileWriter) Len() int64 { return w.taken + int64(len(w.buf)) }

// Pending is what was appended since the last Take.
func (w *FileWriter) Pending() int { return len(w.buf) }

// Take returns the bytes appended since the last Take (the file's first
// bytes, the first time) and forgets them; the caller owns the slice.
// End returns the last piece itself.
func (w *FileWriter) Take() []byte {
	w.Checkpoint()
	b := w.buf
	w.buf, w.sum = make([]byte, 0, cap(b)), 0
	w.taken += int64(len(b))
	return b
}

// Checkpoint folds what was appended so far into the CRC, so that a
// large file's checksum is computed as it is built rather than at End
// (where a caller on a busy goroutine would pay for all of it at once).
func (w *FileWriter) Checkpoint() {
	w.crc = CRC64(w.crc, w.buf[w.sum:])
	w.sum = len(w.buf)
}
