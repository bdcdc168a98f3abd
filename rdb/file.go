package rdb

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// RecordKind says what Reader.Next returned.
type RecordKind uint8

// The kinds of records in an RDB file.
const (
	// RecordKey is a key with its value (DB, Key, ExpireAt, Value).
	RecordKey RecordKind = iota + 1
	// RecordAux is an AUX field (AuxKey, AuxValue): redis-ver, repl-id...
	RecordAux
	// RecordFunction is a function library's code (Function).
	RecordFunction
	// RecordResizeDB is a size hint for the current database (DBSize,
	// ExpiresSize).
	RecordResizeDB
)

// Record is one item of an RDB file. Its slices belong to the caller.
type Record struct {
	Kind RecordKind
	DB   int
	Key  []byte
	// ExpireAt is the key's expiry in unix ms; 0 when it has none.
	ExpireAt int64
	Value    *Object

	AuxKey, AuxValue []byte
	Function         []byte
	DBSize           uint64
	ExpiresSize      uint64
}

// Reader decodes an RDB file as it streams in, one record at a time.
type Reader struct {
	d       decoder
	version int
	db      int
	started bool
	done    bool
}

// NewReader reads an RDB file from r. If r is a *bufio.Reader it is used
// directly, and the Reader consumes exactly the file's bytes (its EOF
// opcode and checksum included): what follows stays in r. Otherwise r is
// wrapped in a bufio.Reader, which may read ahead.
func NewReader(r io.Reader) *Reader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return &Reader{d: decoder{br: br}}
}

// Version is the file's RDB version (known after the first Next).
func (r *Reader) Version() int { return r.version }

// Consumed is the number of bytes read so far.
func (r *Reader) Consumed() int64 { return r.d.n }

func (r *Reader) header() error {
	var h [9]byte
	if err := r.d.full(h[:]); err != nil {
		return err
	}
	if !bytes.Equal(h[:5], []byte("REDIS")) {
		return corrupt("not an RDB file (header %q)", h[:])
	}
	v, err := strconv.Atoi(string(h[5:]))
	if err != nil || v < 1 {
		return corrupt("bad RDB version %q", h[5:])
	}
	if v > MaxVersion {
		return fmt.Errorf("rdb: RDB version %d is newer than the newest Cellar reads (%d)", v, MaxVersion)
	}
	r.version = v
	return nil
}

// Next returns the next record, or io.EOF after the file's EOF opcode once
// the checksum matched (a file whose checksum is 0 was written without
// one and is accepted).
func (r *Reader) Next() (*Record, error) {
	if r.done {
		return nil, io.EOF
	}
	if !r.started {
		r.started = true
		if err := r.header(); err != nil {
			return nil, err
		}
	}
	var expireAt int64
	for {
		op, err := r.d.byte()
		if err != nil {
			return nil, err
		}
		switch op {
		case opEOF:
			if r.version < 5 {
				r.done = true
				return nil, io.EOF
			}
			sum := r.d.crc
			if err := r.d.full(r.d.tmp[:8]); err != nil {
				return nil, err
			}
			if got := binary.LittleEndian.Uint64(r.d.tmp[:8]); got != 0 && got != sum {
				return nil, corrupt("checksum mismatch (file %016x, computed %016x)", got, sum)
			}
			r.done = true
			return nil, io.EOF
		case opSelectDB:
			n, err := r.d.plainLen()
			if err != nil {
				return nil, err
			}
			if n > 1<<20 {
				return nil, corrupt("database number %d", n)
			}
			r.db = int(n)
		case opResizeDB:
			a, err := r.d.plainLen()
			if err != nil {
				return nil, err
			}
			b, err := r.d.plainLen()
			if err != nil {
				return nil, err
			}
			return &Record{Kind: RecordResizeDB, DB: r.db, DBSize: a, ExpiresSize: b}, nil
		case opAux:
			k, err := r.d.str()
			if err != nil {
				return nil, err
			}
			v, err := r.d.str()
			if err != nil {
				return nil, err
			}
			return &Record{Kind: RecordAux, AuxKey: k, AuxValue: v}, nil
		case opFunction2:
			code, err := r.d.str()
			if err != nil {
				return nil, err
			}
			return &Record{Kind: RecordFunction, Function: code}, nil
		case opFunction:
			return nil, errors.New("rdb: the file holds functions in the format of Redis 7.0's release candidates, which Cellar does not read")
		case opModuleAux:
			return nil, fmt.Errorf("%w (module auxiliary data in the file)", ErrModule)
		case opExpireMs:
			if expireAt, err = r.d.millis(); err != nil {
				return nil, err
			}
			if expireAt == 0 { // Redis never writes 0; keep "0 = none" unambiguous
				expireAt = 1
			}
		case opExpireSec:
			if err := r.d.full(r.d.tmp[:4]); err != nil {
				return nil, err
			}
			expireAt = int64(int32(binary.LittleEndian.Uint32(r.d.tmp[:4]))) * 1000
			if expireAt == 0 {
				expireAt = 1
			}
		case opIdle:
			if _, err := r.d.plainLen(); err != nil {
				return nil, err
			}
		case opFreq:
			if _, err := r.d.byte(); err != nil {
				return nil, err
			}
		default:
			if op > maxKnownType {
				return nil, corrupt("unknown opcode %d", op)
			}
			key, err := r.d.str()
			if err != nil {
				return nil, err
			}
			v, err := r.d.object(op)
			if err != nil {
				if errors.Is(err, ErrModule) {
					return nil, fmt.Errorf("%w: key %q (database %d) holds a module type", ErrModule, key, r.db)
				}
				return nil, fmt.Errorf("%w (key %q, database %d)", err, key, r.db)
			}
			return &Record{Kind: RecordKey, DB: r.db, Key: key, ExpireAt: expireAt, Value: v}, nil
		}
	}
}

// ErrDumpVersion is DecodeDump's error for a payload whose RDB version is
// newer than Redis 7.0's or whose checksum is wrong (RESTORE answers
// "DUMP payload version or checksum are wrong").
var ErrDumpVersion = errors.New("rdb: DUMP payload version or checksum are wrong")

// DecodeDump decodes a DUMP payload: one value, then the 2-byte RDB
// version and the CRC-64 of everything before it. Errors: ErrDumpVersion,
// or one wrapping ErrCorrupt or ErrModule (RESTORE's "Bad data format").
func DecodeDump(p []byte) (*Object, error) {
	if len(p) < 10 {
		return nil, ErrDumpVersion
	}
	footer := p[len(p)-10:]
	if v := int(binary.LittleEndian.Uint16(footer)); v > Version {
		return nil, ErrDumpVersion
	}
	if CRC64(0, p[:len(p)-8]) != binary.LittleEndian.Uint64(footer[2:]) {
		return nil, ErrDumpVersion
	}
	// Like Redis, the value is read from the whole payload: a value that
	// runs into the footer is read with the footer's bytes.
	d := decoder{br: bufio.NewReaderSize(bytes.NewReader(p[1:]), min(max(len(p), 16), 64<<10))}
	t := p[0]
	if t > maxKnownType {
		return nil, corrupt("unknown value type %d", t)
	}
	o, err := d.object(t)
	if err != nil {
		return nil, err
	}
	return o, nil
}
