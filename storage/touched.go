package storage

// The change record: what the writes of the open transaction changed, key
// by key, in the order they changed it. Every write in this package
// records its own changes as it makes them (including the ones nobody
// asked for by name: a key found expired and deleted on the way, the
// sweeper's deletions, a collection deleted because it became empty), so a
// caller never reports a change by hand and never forgets one.
//
// The actor reads the record after each command (and after anything else
// that writes: a woken waiter's retry, the expiry sweep) and runs its "keys
// touched" step over it, then resets it (actor/touched.go). What is undone
// leaves the record with it: Undo drops the entries made since Savepoint,
// Rollback all of them. Commit drops whatever is left: the record never
// outlives the transaction it describes.

// Change is the kind of change a write made to a key, or for Flushed and
// Swapped to a whole database.
type Change uint8

const (
	// Written: the key got a whole new value, created or overwritten
	// whatever it held before (SET, INCR, APPEND, a STORE command's
	// destination).
	Written Change = iota + 1
	// Added: elements were added to a list, hash, set or sorted set; the
	// key may be new (LPUSH, LINSERT, HSET, SADD, ZADD).
	Added
	// Removed: elements were removed and some remain (LPOP, LREM, LTRIM,
	// HDEL, SREM, ZREM). A removal that empties the key records Deleted.
	Removed
	// Modified: elements changed in place, none came or went (LSET, a
	// list rotated onto itself, HSET of an existing field, ZADD changing a
	// score, LTRIM keeping everything).
	Modified
	// ExpiryChanged: the key's expiry was set or removed.
	ExpiryChanged
	// Deleted: the key went (DEL, a pop that emptied it, EXPIRE in the
	// past, a STORE command with an empty result over an existing key).
	Deleted
	// Expired: the key was found past its expiry and deleted (on lookup,
	// or by the sweeper).
	Expired
	// RenamedFrom and RenamedTo: RENAME's source, gone, and destination,
	// which now holds the source's value.
	RenamedFrom
	RenamedTo
	// MovedFrom and MovedTo: MOVE's key, gone from DB and now in Other, or
	// arrived in DB from Other.
	MovedFrom
	MovedTo
	// CopiedTo: COPY's destination, which now holds a copy of the source
	// (from Other's database).
	CopiedTo
	// Flushed: every key of DB was deleted (FLUSHDB, FLUSHALL). Key is nil.
	Flushed
	// Swapped: DB and Other exchanged their contents (SWAPDB). Key is nil.
	Swapped
	// Created: the key did not exist and now does (recorded before the
	// change that created it, and only while RecordNew is set: keyspace
	// notifications' "new" event is its one reader).
	Created
	// GroupDestroyed: a consumer group of the stream Key was destroyed
	// (XGROUP DESTROY); clients blocked reading through it must hear so.
	GroupDestroyed
	// ConsumerCreated: a consumer was added to a group of the stream Key
	// (XGROUP CREATECONSUMER, or a read or claim naming a new consumer).
	ConsumerCreated
	// Functions: the function libraries changed (functions.go). Key is
	// the library's name, or nil for all of them: not a key of any
	// database, which every reader of the record must skip.
	Functions
	// FieldsExpired: fields of the hash Key were found past their expiry
	// and removed (hashfe.go); Effect names them (ExpiredFields), and
	// Other is 1 when the hash went with them.
	FieldsExpired
	// Search: a search index's definition or an alias changed (FT.CREATE,
	// FT.DROPINDEX, FT.ALTER, FT.ALIAS*). Key is the index's or alias's
	// name: not a key of any database, which every reader must skip.
	Search
)

var changeNames = [...]string{"none", "written", "added", "removed", "modified", "expiry-changed",
	"deleted", "expired", "renamed-from", "renamed-to", "moved-from", "moved-to", "copied-to",
	"flushed", "swapped", "created", "group-destroyed", "consumer-created", "functions", "fields-expired",
	"search"}

func (k Change) String() string {
	if int(k) < len(changeNames) {
		return changeNames[k]
	}
	return "unknown"
}

// Touch is one entry of the change record.
type Touch struct {
	DB   int
	Key  []byte // nil for Flushed and Swapped; valid until ResetTouched
	Kind Change
	// Other is the other database of MovedFrom, MovedTo, CopiedTo and
	// Swapped.
	Other int
	// Effect is reserved for the redo log: what the change did, in a form
	// that replays it without running the command again (the value
	// written, the elements pushed, the expiry set). Nothing fills it yet;
	// the write that records the change is where it will be filled.
	Effect []byte
}

// maxTouchKeys is the capacity of the record's key arena that ResetTouched
// keeps; a larger one (left by a command that touched many large keys) is
// let go.
const maxTouchKeys = 1 << 20

// record appends a change to the record; key is copied.
func (s *Store) record(db int, key []byte, kind Change, other int) {
	var k []byte
	if key != nil {
		start := len(s.touchKeys)
		s.touchKeys = append(s.touchKeys, key...)
		// A full slice expression: the arena may grow later (and move),
		// but this entry's bytes are never written again.
		k = s.touchKeys[start:len(s.touchKeys):len(s.touchKeys)]
	}
	s.touches = append(s.touches, Touch{DB: db, Key: k, Kind: kind, Other: other})
}

// recordNew records that key was created in db, when RecordNew asks for it.
func (s *Store) recordNew(db int, key []byte) {
	if s.RecordNew {
		s.record(db, key, Created, 0)
	}
}

// Touched is the change record: every change made since the last
// ResetTouched, in order.
func (s *Store) Touched() []Touch { return s.touches }

// ResetTouched empties the change record.
func (s *Store) ResetTouched() {
	s.truncateTouched(touchMark{})
	if cap(s.touchKeys) > maxTouchKeys {
		s.touchKeys = nil
	}
}

// touchMark is a point of the record to go back to (Savepoint, Undo).
type touchMark struct{ n, keys int }

// truncateTouched drops the entries made since m.
func (s *Store) truncateTouched(m touchMark) {
	if m.n > len(s.touches) || m.keys > len(s.touchKeys) {
		return // the record was reset since the mark: nothing of it is left
	}
	clear(s.touches[m.n:])
	s.touches = s.touches[:m.n]
	s.touchKeys = s.touchKeys[:m.keys]
}
