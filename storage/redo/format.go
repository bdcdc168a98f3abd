package redo

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"path/filepath"
	"strconv"
	"strings"
)

// Segment header, headerSize bytes at the start of every segment file:
//
//	[0:8]   magic "CELLREDO"
//	[8:12]  format version, little endian (formatVersion)
//	[12:16] flags, zero (reserved)
//	[16:24] base: the Position of the segment's first record
//	[24:28] reserved, zero
//	[28:32] CRC32C of [0:28]
//
// The base is also the file's name; the two must agree, so a segment that
// was renamed or copied into the wrong place is refused instead of being
// read at the wrong positions.
const (
	headerSize    = 32
	formatVersion = 1
	magic         = "CELLREDO"
)

// Record frame, frameSize bytes before each payload:
//
//	[0:4]   stored length: len(payload)+1, little endian
//	[4:8]   header check: CRC32C(pos ‖ stored length)
//	[8:12]  record check: CRC32C(pos ‖ stored length ‖ payload)
//
// pos is the record's own Position as 8 little-endian bytes; it is not
// stored, only mixed into both checks. So a frame is valid only at the
// position it was written for: a stale copy, a frame inside another
// record's payload or a reader started between records all fail the check.
//
// The header check lets a reader trust the length before it reads the
// payload: a flipped bit in the length is caught at once, and recovery can
// look for valid frames after a damaged one cheaply (see findFrame) to tell
// a torn tail from damage in the middle.
//
// The length is stored plus one so that a run of zero bytes (a hole, or
// space a file system zero-filled after a crash) never parses as a record:
// a stored length of zero is invalid.
const frameSize = 12

// MaxRecordLimit is the largest payload the format can hold.
const MaxRecordLimit = math.MaxUint32 - 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// putHeader writes a segment header for base into b[:headerSize].
func putHeader(b []byte, base Position) {
	copy(b[0:8], magic)
	binary.LittleEndian.PutUint32(b[8:12], formatVersion)
	binary.LittleEndian.PutUint32(b[12:16], 0)
	binary.LittleEndian.PutUint64(b[16:24], uint64(base))
	binary.LittleEndian.PutUint32(b[24:28], 0)
	binary.LittleEndian.PutUint32(b[28:32], crc32.Checksum(b[0:28], castagnoli))
}

// headerStatus classifies a segment header.
type headerStatus int

const (
	headerOK      headerStatus = iota
	headerDamaged              // short, wrong magic or bad checksum: may be a torn write
	headerForeign              // intact but not ours to read: refused whatever its place
)

// checkHeader checks the header at the start of b for a segment whose
// name says base.
func checkHeader(b []byte, base Position) (headerStatus, string) {
	if len(b) < headerSize {
		return headerDamaged, fmt.Sprintf("segment header incomplete (%d of %d bytes)", len(b), headerSize)
	}
	if string(b[0:8]) != magic {
		return headerDamaged, "segment header has the wrong magic"
	}
	if binary.LittleEndian.Uint32(b[28:32]) != crc32.Checksum(b[0:28], castagnoli) {
		return headerDamaged, "segment header checksum mismatch"
	}
	if v := binary.LittleEndian.Uint32(b[8:12]); v != formatVersion {
		return headerForeign, fmt.Sprintf("segment format version %d, this build reads version %d", v, formatVersion)
	}
	if binary.LittleEndian.Uint32(b[12:16]) != 0 || binary.LittleEndian.Uint32(b[24:28]) != 0 {
		return headerForeign, "segment header has unknown flags"
	}
	if hb := Position(binary.LittleEndian.Uint64(b[16:24])); hb != base {
		return headerForeign, fmt.Sprintf("segment header says it starts at position %d, its name says %d", hb, base)
	}
	return headerOK, ""
}

// headerCheck is CRC32C(pos ‖ stored) (both little endian), computed
// byte by byte with the table: crc32.Update on a stack array would make
// the array escape (it calls through a function variable), costing an
// allocation per record.
func headerCheck(pos Position, stored uint32) uint32 {
	crc := ^uint32(0)
	for i := range 8 {
		crc = castagnoli[byte(crc)^byte(pos>>(8*i))] ^ crc>>8
	}
	for i := range 4 {
		crc = castagnoli[byte(crc)^byte(stored>>(8*i))] ^ crc>>8
	}
	return ^crc
}

// appendFrame appends the frame of a record at pos to buf. The record
// check is computed over the copy in buf, so payload does not escape.
func appendFrame(buf []byte, pos Position, payload []byte) []byte {
	stored := uint32(len(payload)) + 1
	hc := headerCheck(pos, stored)
	n := len(buf)
	buf = binary.LittleEndian.AppendUint32(buf, stored)
	buf = binary.LittleEndian.AppendUint32(buf, hc)
	buf = binary.LittleEndian.AppendUint32(buf, 0)
	buf = append(buf, payload...)
	binary.LittleEndian.PutUint32(buf[n+8:], crc32.Update(hc, castagnoli, buf[n+frameSize:]))
	return buf
}

// Reasons a frame is rejected. They end up in CorruptError and TornTail.
const (
	whyShort    = "record header incomplete"
	whyHeader   = "record header checksum mismatch (damaged length, or not a record boundary)"
	whyPastEnd  = "record extends past the end of the data"
	whyChecksum = "record checksum mismatch"
)

// frameHeader validates the frame header at the start of b for a record at
// pos and returns the payload length.
func frameHeader(b []byte, pos Position) (int, string) {
	if len(b) < frameSize {
		return 0, whyShort
	}
	stored := binary.LittleEndian.Uint32(b[0:4])
	if stored == 0 || binary.LittleEndian.Uint32(b[4:8]) != headerCheck(pos, stored) {
		return 0, whyHeader
	}
	return int(stored - 1), ""
}

// checkFrame validates the frame at the start of b (the bytes available
// up to the end of the data) for a record at pos, and returns its total
// size, frame included.
func checkFrame(b []byte, pos Position) (int, string) {
	n, why := frameHeader(b, pos)
	if why != "" {
		return 0, why
	}
	if n > len(b)-frameSize {
		return 0, whyPastEnd
	}
	if !payloadOK(b[:frameSize+n], pos) {
		return 0, whyChecksum
	}
	return frameSize + n, ""
}

// payloadOK checks the record check of a whole frame f whose header was
// already validated for pos.
func payloadOK(f []byte, pos Position) bool {
	hc := binary.LittleEndian.Uint32(f[4:8])
	return binary.LittleEndian.Uint32(f[8:12]) == crc32.Update(hc, castagnoli, f[frameSize:])
}

// segName is the file name of the segment starting at base. A pending
// segment (see doc.go, "Rollover") carries the suffix ".pending".
func segName(base Position, pending bool) string {
	if pending {
		return fmt.Sprintf("%020d.log.pending", uint64(base))
	}
	return fmt.Sprintf("%020d.log", uint64(base))
}

// parseSegName is the inverse of segName; ok is false for any other name.
func parseSegName(name string) (base Position, pending, ok bool) {
	rest, pending := strings.CutSuffix(name, ".pending")
	digits, found := strings.CutSuffix(rest, ".log")
	if !found || len(digits) != 20 {
		return 0, false, false
	}
	v, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, false, false
	}
	return Position(v), pending, true
}

func segPath(dir string, base Position, pending bool) string {
	return filepath.Join(dir, segName(base, pending))
}
