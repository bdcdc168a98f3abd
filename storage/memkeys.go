package storage

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cellar-db/cellar/storage/object"
)

// The in-memory engine (docs/architecture.md, "Storage engine"): the keys
// the actor has touched are held here whole, every command runs on them,
// and SQLite is written only by the flush, on a connection of its own, from
// what changed since the flush before.
//
// Invariants:
//   - A key is in memory (an entry, possibly one remembering that the key
//     is absent), or SQLite's last commit holds its latest state. An entry
//     leaves memory only when nothing of it waits for a flush: not dirty,
//     and the flush that took its last change committed.
//   - Loads read SQLite's last commit through the reader, and know which
//     flush that is: a flush commits holding readMu and only then counts
//     itself committed, and a load opens its read under readMu. What a
//     database operation not yet committed changed (FLUSHDB, SWAPDB) is
//     applied to what a load reads (view).
//   - The actor never writes SQLite. The flush writes, in one transaction,
//     what the batch holds in the order it happened: segments of frozen key
//     changes, separated by the database operations that closed them.

// entry is one key name the engine holds: its live key, or the knowledge
// that it has none (typ TypeNone), which a load of a missing key leaves and
// a deletion leaves until it is flushed.
type entry struct {
	// kv is the key's name followed by a string's value, in one
	// allocation (key, str).
	kv string
	// obj is a collection's object (nil for a string), of the Go type its
	// typ names: a pointer without an interface's type word, so that an
	// entry fits Go's 64-byte size class. object, setObject and the typed
	// accessors below are the only ways to it.
	obj unsafe.Pointer
	ver int64
	id  int64

	klen uint32 // len(key())
	// gen is the flush that took its last change (0: none since it was
	// loaded), modulo 2^32: flushPending says whether it is still in the
	// air.
	gen uint32
	// size is what it counts in memEngine.bytes; sizeHuge: memEngine.huge
	// holds it (a collection past 4 GiB).
	size uint32
	used uint32 // the engine's clock when it was last used (approximate LRU)
	// access is the actor's word for the key's last access (OBJECT
	// IDLETIME, OBJECT FREQ; storage/access.go); the engine never reads it.
	access uint32
	typ    Type
	slot   uint8 // its database's place in memEngine.slots
	flags  entryFlags
	// freshPar: while fresh, the parity of the flush generation that took
	// it plus one (0: not frozen since it became fresh). One flight runs
	// at a time, so the flight in the air and the batch being collected
	// are all the parity has to tell apart.
	freshPar uint8
}

// entryFlags are an entry's yes/no facts, one bit each.
type entryFlags uint8

const (
	// rowStored, refStored, elemsStored: what SQLite holds for this name as
	// of the last freeze: whether it has a keys row, whether that row's
	// value is a blob ref, and whether element rows exist under its id.
	flagRowStored entryFlags = 1 << iota
	flagRefStored
	flagElemsStored
	// idStored: SQLite's row for this name has this id (so the flush
	// updates the row in place instead of replacing it, and its id index
	// is not touched). Cleared wherever the id changes.
	flagIDStored
	// flagFresh: in its database's fresh index (memkeyspace.go) under its id,
	// until the flush whose generation has parity freshPar-1 lands.
	flagFresh
	// dirty: in its database's dirty list: the row or the object changed
	// since the last freeze.
	flagDirty
	// expStored: SQLite's row for this name, as of the last freeze, has an
	// expiry (memDB.coldExpiring).
	flagExpStored
	// expiry: the key has an expiry, which its database's expires map
	// holds (most keys have none: the entry does not carry eight bytes
	// for it).
	flagExpiry
)

// is reports whether all of f are set.
func (e *entry) is(f entryFlags) bool { return e.flags&f == f }

// set sets f (on) or clears it.
func (e *entry) set(f entryFlags, on bool) {
	if on {
		e.flags |= f
	} else {
		e.flags &^= f
	}
}

// key is the key's name.
func (e *entry) key() string { return e.kv[:e.klen] }

// str is a string's value.
func (e *entry) str() string { return e.kv[e.klen:] }

// setStr makes v the string's value: the name and v in a new allocation
// (what a frozen batch holds of the old one stays as it was).
func (e *entry) setStr(v []byte) {
	b := make([]byte, int(e.klen)+len(v))
	copy(b, e.kv[:e.klen])
	copy(b[e.klen:], v)
	e.kv = stringOf(b)
}

// clearStr drops a string's value, keeping the name (in an allocation
// of its own, so that the value's memory goes).
func (e *entry) clearStr() {
	if len(e.kv) > int(e.klen) {
		e.kv = strings.Clone(e.key())
	}
}

// object is e's collection object (nil: a string or no key).
func (e *entry) object() memObject {
	if e.obj == nil {
		return nil
	}
	switch e.typ {
	case TypeHash, TypeSet:
		return (*object.Elems)(e.obj)
	case TypeZSet:
		return (*object.ZSet)(e.obj)
	case TypeList:
		return (*object.List)(e.obj)
	case TypeStream:
		return (*object.Stream)(e.obj)
	}
	panic("storage: a " + e.typ.String() + " entry holds an object")
}

// setObject makes o e's object; e's typ must be, or become before the
// object is read, the type o holds.
func (e *entry) setObject(o memObject) {
	switch o := o.(type) {
	case nil:
		e.obj = nil
	case *object.Elems:
		e.obj = unsafe.Pointer(o)
	case *object.ZSet:
		e.obj = unsafe.Pointer(o)
	case *object.List:
		e.obj = unsafe.Pointer(o)
	case *object.Stream:
		e.obj = unsafe.Pointer(o)
	default:
		panic(fmt.Sprintf("storage: no entry holds a %T", o))
	}
}

// elems, zset, list and stream are e's object, which must be of the type
// (mistyped panics: the pointer would otherwise be read as another type).
func (e *entry) elems() *object.Elems {
	e.mustBe(e.typ == TypeHash || e.typ == TypeSet)
	return (*object.Elems)(e.obj)
}

func (e *entry) zset() *object.ZSet {
	e.mustBe(e.typ == TypeZSet)
	return (*object.ZSet)(e.obj)
}

func (e *entry) list() *object.List {
	e.mustBe(e.typ == TypeList)
	return (*object.List)(e.obj)
}

func (e *entry) stream() *object.Stream {
	e.mustBe(e.typ == TypeStream)
	return (*object.Stream)(e.obj)
}

func (e *entry) mustBe(typed bool) {
	if !typed {
		panic("storage: a " + e.typ.String() + " entry read as another type")
	}
}

// newEntry is an entry named key in the database at slot.
func newEntry(key string, slot uint8) *entry {
	return &entry{kv: key, klen: uint32(len(key)), slot: slot}
}

// memObject is a collection the engine holds: one of package object's
// types, with the table mapping that loads and flushes it.
type memObject interface {
	Size() int64
	Changed() bool
}

// objLen is o's element count, as its keys row stores it.
func objLen(o memObject) int64 {
	switch o := o.(type) {
	case *object.Elems:
		return int64(o.Len())
	case *object.ZSet:
		return int64(o.Len())
	case *object.List:
		return int64(o.Len())
	case *object.Stream:
		return o.Len()
	}
	return 0
}

// memDB is one database's entries. SWAPDB swaps two memDBs in place (and
// their numbers): an entry keeps naming its memDB (its slot) whatever its
// number.
type memDB struct {
	num     int
	slot    uint8     // its place in memEngine.slots, which SWAPDB does not change
	keys    *keyTable // keytable.go
	dirty   []*entry
	count   int64            // the database's keys, in memory and SQLite: DBSIZE
	fresh   *freshIndex      // memkeyspace.go, memfresh.go
	expires map[*entry]int64 // the keys with an expiry, and when (unix ms)
	// coldExpiring is how many of SQLite's rows in this database (as of
	// the last freeze) have an expiry and a name memory does not hold:
	// with len(expires), the keys with an expiry (INFO keyspace), counted
	// without reading SQLite. It moves only when a name's entry comes
	// into memory or leaves it (hold, forget), and FLUSHDB zeroes it.
	coldExpiring int64
}

// memEngine is the engine's state; it belongs to the actor, except what the
// comments say a flush or a load reads.
type memEngine struct {
	s *Store
	// ahead and aheadSum are prefetch's: its candidates, and the sum of
	// what it read (kept, so that the reads are not optimised away).
	ahead    []*entry
	aheadSum uint
	dbs      [allDBs]*memDB
	// slots are the same databases in the order they were made: an entry
	// names its database by its place here (entry.slot), which SWAPDB,
	// unlike dbs, leaves alone.
	slots [allDBs]*memDB

	r      *sqlc      // the loads' read-only connection
	readMu sync.Mutex // held by a load's first read and by a flush's commit
	// committed is the generation of the last flush committed; written
	// under readMu by the flush, read by the actor and the loads.
	committed atomic.Uint64
	// sqlKeys is how many keys each database of SQLite's last commit
	// holds (its dbstats); written with committed, under readMu. A load in
	// a database SQLite holds none of answers at once: a new key costs no
	// read.
	sqlKeys [allDBs]int64

	gen uint64 // the generation the batch being collected will have
	// pos is the redo log position the last flush stored, or the next
	// one stores (startFlush).
	pos   uint64
	steps []memStep // that batch, in order
	drops []memDrop // objects gone since the last freeze, with rows in SQLite
	// moved: a key took another's id (moveTo) since the last whole
	// freeze, so the batch cannot be frozen in parts (preFreeze).
	moved  bool
	dbops  []memDBOp  // database operations not committed yet (view)
	w      *sqlc      // the flush's connection; the flight's while one runs
	wMu    sync.Mutex // held while w is used: a flight, then its checkpoint
	flight *memFlight // the flush under way

	// checkpoints counts the flush's checkpoints; ckptBytes is the WAL
	// size past which a flush checkpoints after its commit.
	checkpoints   atomic.Uint64
	checkpointing atomic.Bool
	ckptBytes     int64
	// maxPages is the database's size cap (SetMaxPageCount) for the
	// flush's connection to take before its next transaction; pagesSet
	// is the cap that connection has (the flush's alone).
	maxPages atomic.Int64
	pagesSet int64
	// cacheKB is the page cache the flush's connection has (sizeCache).
	cacheKB int

	ld loads // loads off the actor (memprefetch.go)

	evicted uint64 // keys let go for the memory bound
	reads   uint64 // loads that read SQLite (a miss the filters answer reads nothing)

	// misses are the entries of missing keys loaded by the running
	// command: without a bound, endCommand lets those still clean go, so
	// that reads of keys that do not exist cannot grow memory.
	misses []*entry

	clock      uint32 // touch's clock
	bytes, max int64

	// freshFrozen are the fresh entries frozen for the next flight, which
	// takes them out of the fresh index when it lands.
	freshFrozen []*entry
	freshMissed int // unfresh had to walk the fresh index (never, tests check)

	// pres is the filter of the names SQLite may hold (mempresence.go);
	// nextPres a larger one being built to replace it.
	pres, nextPres *presence

	// hfe holds the hashes with field expiries, each with a time at or
	// before its earliest (a lower bound, as Store.hfe on SQLite).
	hfe map[*entry]int64
	// huge holds the sizes of entries that count 4 GiB or more (entry.size).
	huge map[*entry]int64
	// swaps counts the imports that took the copy's file whole (swapIn).
	swaps uint64
}

// memDrop is an object whose element rows the flush deletes.
type memDrop struct {
	typ Type
	id  int64
}

// memDBOp is a database operation, as the flush applies it after the
// segment it closed.
type memDBOp struct {
	gen  uint64
	kind uint8 // dbFlush, dbSwap or dbImport
	a, b int
	imp  *memImport // dbImport's (physical.go)
}

const (
	dbFlush = iota
	dbSwap
	dbImport
)

// memEntryOverhead is what an entry costs beyond its key's and value's bytes
// (the struct, its map slot, the string header), for max memory.
const memEntryOverhead = 160

func newMemEngine(s *Store, r *sqlc, w *sqlc, maxBytes int64) *memEngine {
	m := &memEngine{s: s, r: r, w: w, max: maxBytes, gen: 1, hfe: make(map[*entry]int64), huge: make(map[*entry]int64)}
	m.ld.gen = 1 // 0 is WantLoad's "no wait"
	for i := range m.dbs {
		m.dbs[i] = &memDB{num: i, slot: uint8(i), keys: newKeyTable(), count: s.keyCounts[i], fresh: newFresh(), expires: make(map[*entry]int64)}
		m.slots[i] = m.dbs[i]
		m.sqlKeys[i] = s.keyCounts[i]
	}
	return m
}

// view says where a load finds database db's committed keys: in SQLite's
// database sqlDB, unless a FLUSHDB not yet committed emptied it. The
// database operations not committed are applied, in order, to the numbers.
func (m *memEngine) view(db int, committed uint64) (sqlDB int, empty bool) {
	sqlDB = db
	// Walk back from the newest: each operation maps the number it leaves
	// to the one it found.
	for i := len(m.dbops) - 1; i >= 0; i-- {
		op := m.dbops[i]
		if op.gen <= committed {
			break
		}
		switch {
		case op.kind == dbFlush && op.a == sqlDB:
			return sqlDB, true
		case op.kind == dbSwap && op.a == sqlDB:
			sqlDB = op.b
		case op.kind == dbSwap && op.b == sqlDB:
			sqlDB = op.a
		}
	}
	return sqlDB, false
}

// dbOf is the database holding e.
func (m *memEngine) dbOf(e *entry) *memDB { return m.slots[e.slot] }

// touch notes that e was just used. Eviction is an approximate LRU, as
// Redis's: a clock value in the entry (one write to memory the lookup has
// just read), and eviction picks the oldest of a sample; a linked list
// cost every lookup three writes to entries elsewhere in memory.
func (m *memEngine) touch(e *entry) {
	m.clock++
	e.used = m.clock
}

// resize brings e's share of bytes up to date after a change.
func (m *memEngine) resize(e *entry) {
	var obj int64
	if o := e.object(); o != nil {
		obj = o.Size()
	}
	m.resizeTo(e, obj)
}

// resizeTo is resize for an object of obj bytes.
func (m *memEngine) resizeTo(e *entry, obj int64) {
	n := int64(len(e.kv)+memEntryOverhead) + obj
	m.bytes += n - m.sizeOf(e)
	if n < sizeHuge {
		if e.size == sizeHuge {
			delete(m.huge, e)
		}
		e.size = uint32(n)
	} else {
		e.size = sizeHuge
		m.huge[e] = n
	}
}

// sizeHuge in entry.size: memEngine.huge holds the entry's size.
const sizeHuge = 1<<32 - 1

// sizeOf is what e counts in bytes.
func (m *memEngine) sizeOf(e *entry) int64 {
	if e.size == sizeHuge {
		return m.huge[e]
	}
	return int64(e.size)
}

// changed marks e changed: its row, and with it anything else about it, is
// written by the next flush.
func (m *memEngine) changed(e *entry) {
	if !e.is(flagDirty) {
		e.set(flagDirty, true)
		m.dbOf(e).dirty = append(m.dbOf(e).dirty, e)
	}
	m.resize(e)
	m.s.dirty = true
}

// evictable reports whether e may leave memory: nothing of it waits for a
// flush.
func (m *memEngine) evictable(e *entry) bool {
	return !e.is(flagDirty) && !m.inFlight(e.gen)
}

// inFlight reports whether gen, an entry's flush generation modulo 2^32,
// is one of the flushes not committed yet: those after the last committed
// up to the batch being collected (m.gen), a handful. A generation 2^32
// flushes old reads as not committed for the length of one flush: the
// entry stays in memory a little longer, nothing else.
func (m *memEngine) inFlight(gen uint32) bool {
	committed := m.committed.Load()
	return gen-uint32(committed)-1 < uint32(m.gen-committed)
}

// evictSample is how many entries eviction looks at to let one go.
const evictSample = 16

// evict lets entries go until the engine is within its bound: each time
// the least recently used of a sample of evictable entries (Go's map
// iteration starts at a random place), from databases picked at random in
// proportion to the entries they hold. Entries waiting for a flush are
// skipped; when a few samples find none, eviction waits for the next
// landing.
func (m *memEngine) evict() {
	if m.max <= 0 {
		return
	}
	for misses := 0; m.bytes > m.max && misses < 4; {
		var held int
		for _, d := range m.dbs {
			held += d.keys.len()
		}
		if held == 0 {
			return
		}
		pick := rand.IntN(held)
		var d *memDB
		for _, d = range m.dbs {
			if pick < d.keys.len() {
				break
			}
			pick -= d.keys.len()
		}
		var victim *entry
		looked := 0
		d.keys.sample(func(e *entry) bool {
			if m.evictable(e) && (victim == nil || e.used-victim.used > 1<<31) {
				victim = e // older: its clock is behind, wrapping included
			}
			looked++
			return looked < evictSample
		})
		if victim == nil {
			misses++
			continue
		}
		m.forget(victim)
		m.evicted++
	}
}

// forget lets e go from memory (eviction, FLUSHDB).
func (m *memEngine) forget(e *entry) {
	m.loadGone(e)
	m.unfresh(e)
	d := m.dbOf(e)
	d.keys.del(e.key())
	delete(d.expires, e)
	if e.is(flagExpStored) {
		d.coldExpiring++
	}
	delete(m.hfe, e)
	m.bytes -= m.sizeOf(e)
	delete(m.huge, e)
}

// setExp sets e's expiry (0: none) in its database's expires map.
func (m *memEngine) setExp(e *entry, at int64) {
	if at != 0 {
		m.dbOf(e).expires[e] = at
	} else if e.is(flagExpiry) {
		delete(m.dbOf(e).expires, e)
	}
	e.set(flagExpiry, at != 0)
}

// expOf is e's expiry (unix ms; 0: persistent).
func (m *memEngine) expOf(e *entry) int64 {
	if !e.is(flagExpiry) {
		return 0
	}
	return m.dbOf(e).expires[e]
}

// expiredEntry reports whether e has an expiry and it has passed.
func (m *memEngine) expiredEntry(e *entry) bool {
	return e.is(flagExpiry) && expired(m.dbOf(e).expires[e], m.s.Now)
}

// entryAt returns the entry for key in db, loading it from SQLite on a miss
// (a missing key leaves an absent entry). It does not look at expiry. No
// entry leaves memory during a command (endCommand evicts), so entries a
// command holds stay the keys' own.
func (m *memEngine) entryAt(db int, key []byte) (*entry, error) {
	d := m.dbs[db]
	if e := d.keys.get(string(key)); e != nil {
		m.touch(e)
		return e, nil
	}
	e := newEntry(string(key), d.slot)
	exp, err := m.load(db, e)
	if err != nil {
		return nil, err
	}
	if e.typ == TypeNone {
		m.misses = append(m.misses, e)
	}
	m.hold(e, exp)
	return e, nil
}

// hold puts e, just read from SQLite (load, or a Load off the actor) with
// expiry exp, in its database's keys, with its expiry and hash-field
// expiries indexed.
func (m *memEngine) hold(e *entry, exp int64) {
	m.setExp(e, exp)
	if e.typ == TypeHash {
		e.elems().Each(func(el *object.Elem) bool {
			if el.Exp != 0 {
				if at, ok := m.hfe[e]; !ok || el.Exp < at {
					m.hfe[e] = el.Exp
				}
			}
			return true
		})
	}
	d := m.dbOf(e)
	d.keys.put(e)
	if e.is(flagExpStored) {
		d.coldExpiring--
	}
	m.touch(e)
	m.resize(e)
}

// live returns key's entry if the key exists and has not expired; a key
// found expired is deleted (lazy expiry) and recorded as such.
func (m *memEngine) live(db int, key []byte) (*entry, error) {
	e, err := m.entryAt(db, key)
	if err != nil || e.typ == TypeNone {
		return nil, err
	}
	if m.expiredEntry(e) {
		m.remove(e, Expired)
		return nil, nil
	}
	return e, nil
}

// remove deletes e's key (kind says why, for the change record; 0 for a
// key about to be overwritten, whose new value records the change): its
// object dies, and its row goes with the next flush.
func (m *memEngine) remove(e *entry, kind Change) {
	if kind != 0 {
		m.s.record(m.dbOf(e).num, []byte(e.key()), kind, 0)
	}
	m.dropObject(e)
	e.typ = TypeNone
	e.clearStr()
	m.setExp(e, 0)
	m.unfresh(e)
	m.dbOf(e).count--
	m.changed(e)
}

// dropObject lets e's object go: its element rows, if SQLite has any, go
// with the next flush.
func (m *memEngine) dropObject(e *entry) {
	if e.is(flagElemsStored) {
		m.drops = append(m.drops, memDrop{typ: e.typ, id: e.id})
	}
	delete(m.hfe, e)
	e.setObject(nil)
	e.set(flagElemsStored, false)
}

// create makes e a new key of type t (it was absent), with a new id and
// version, and records Created. A hash, set or sorted set is created
// through createColl, whose key is new only if the command leaves elements
// in it: EndCommand records that (saveColl).
func (m *memEngine) create(e *entry, t Type) {
	m.newKey(e, t)
	if m.s.RecordNew {
		m.s.recordNew(m.dbOf(e).num, []byte(e.key()))
	}
}

// newKey is create without the record.
func (m *memEngine) newKey(e *entry, t Type) {
	m.unfresh(e)
	e.typ, e.id = t, m.s.NewID()
	e.set(flagIDStored, false)
	m.setExp(e, 0)
	m.markFresh(e)
	e.ver = m.s.nextVersion()
	m.dbOf(e).count++
}

// freezeSegment closes the changes collected so far into a segment of the
// batch: every dirty entry's state and every object's changes, frozen.
func (m *memEngine) freezeSegment() {
	m.moved = false
	if seg := m.freezeDirty(m.dirtyCount()); len(seg.keys) > 0 || len(seg.drops) > 0 {
		m.steps = append(m.steps, memStep{seg: seg})
	}
}

// dirtyCount is how many entries changed since they were last frozen.
func (m *memEngine) dirtyCount() int {
	n := 0
	for _, d := range m.dbs {
		n += len(d.dirty)
	}
	return n
}

// freezeDirty freezes the objects gone and up to most changed entries,
// the oldest of each database first, into a segment (not yet in the
// batch).
func (m *memEngine) freezeDirty(most int) *memSegment {
	seg := &memSegment{drops: m.drops, keys: make([]frozenKey, 0, min(m.dirtyCount(), most))}
	m.drops = nil
	for _, d := range m.dbs {
		take := min(len(d.dirty), most-len(seg.keys))
		for _, e := range d.dirty[:take] {
			seg.keys = append(seg.keys, m.freezeEntry(e))
			e.set(flagDirty, false)
			e.gen = uint32(m.gen)
		}
		rest := copy(d.dirty, d.dirty[take:])
		clear(d.dirty[rest:])
		d.dirty = d.dirty[:rest]
	}
	return seg
}

// freezeEntry takes e's state for the flush, and makes what it froze
// SQLite's state as far as the next changes know.
func (m *memEngine) freezeEntry(e *entry) frozenKey {
	k := frozenKey{db: uint8(m.dbOf(e).num), kv: e.kv, klen: e.klen, typ: e.typ, exp: m.expOf(e), ver: e.ver, id: e.id}
	if e.is(flagRowStored | flagRefStored) {
		k.fl |= frozenKeepRef
	}
	if e.is(flagRowStored | flagIDStored) {
		k.fl |= frozenInPlace
	}
	if e.is(flagFresh) && e.freshPar == 0 {
		e.freshPar = genParity(m.gen)
		m.freshFrozen = append(m.freshFrozen, e)
	}
	switch {
	case e.typ == TypeNone:
		if e.is(flagRowStored) {
			k.fl |= frozenDel
		}
		e.set(flagRowStored|flagRefStored|flagIDStored|flagExpStored, false)
		return k
	case e.typ == TypeString:
		e.set(flagRefStored, stringIsRef(e.key(), bytesOf(e.str())))
	default:
		o := e.object()
		k.coll = &frozenColl{count: objLen(o)}
		if o.Changed() {
			k.coll.delta = freezeObject(o)
			e.set(flagElemsStored, true)
		}
		e.set(flagRefStored, false)
	}
	e.set(flagRowStored|flagIDStored, true)
	e.set(flagExpStored, e.is(flagExpiry))
	return k
}

// freezeObject returns what changed in o since its last freeze.
func freezeObject(o memObject) any {
	switch o := o.(type) {
	case *object.Elems:
		return o.Freeze()
	case *object.ZSet:
		return o.Freeze()
	case *object.List:
		return o.Freeze()
	case *object.Stream:
		return o.Freeze()
	}
	panic("storage: freezing an object of unknown type")
}

// memStep is one step of a flush: a segment of key changes, or the
// database operation that closed the segment before it.
type memStep struct {
	seg *memSegment
	op  *memDBOp
}

// memSegment is a frozen set of key changes.
type memSegment struct {
	keys  []frozenKey
	drops []memDrop
}

// frozenKey is one key name's state at a freeze, as its keys row and
// element rows are to hold it. Nothing in it is written after the freeze.
// A large flush holds one per key written (TestFrozenKeySize): the name
// and a string's value stay the entry's one allocation, what only a
// collection has is a pointer (nil for a string), and the yes/no facts
// share a byte.
type frozenKey struct {
	kv   string      // the name, then a string's value (the entry's kv)
	coll *frozenColl // a collection's count and changes; nil for a string or a deletion
	exp  int64
	ver  int64
	id   int64
	klen uint32 // len(key())
	db   uint8
	typ  Type
	fl   frozenFlags
}

// frozenColl is what a frozen key of a collection adds.
type frozenColl struct {
	delta any   // the object's changes since the last freeze (*object.Delta, ...); nil: none
	count int64 // its elements, as its keys row stores them
}

// delta is the frozen collection's changes, nil when it has none.
func (k *frozenKey) delta() any {
	if k.coll == nil {
		return nil
	}
	return k.coll.delta
}

// frozenFlags are a frozen key's yes/no facts.
type frozenFlags uint8

const (
	frozenDel     frozenFlags = 1 << iota // the key is gone and SQLite has its row
	frozenKeepRef                         // the row SQLite has holds a blob ref
	frozenInPlace                         // SQLite has the name's row, under the same id: updated in place
)

// key is the key's name.
func (k *frozenKey) key() string { return k.kv[:k.klen] }

// str is a string's value.
func (k *frozenKey) str() string { return k.kv[k.klen:] }

// is reports whether all of f are set.
func (k *frozenKey) is(f frozenFlags) bool { return k.fl&f == f }

// prefetch reads ahead the entries and names of keys, which the commands
// about to run (a window of a round's batches) will look up in db. A lookup's cost is its cache
// misses — the table's slot, the entry, its name — each waiting for the
// one before; here every key's slot is read first, then every entry, then
// every name, so the misses of the window's keys overlap and its commands
// find them cached. Redis 8 prefetches a batch's keys for the same reason.
func (m *memEngine) prefetch(db int, keys [][]byte) {
	ents := m.dbs[db].keys.candidates(keys, m.ahead[:0])
	var sum uint
	for _, e := range ents {
		if e != nil {
			sum += uint(e.klen) + uint(e.freshPar)
		}
	}
	for _, e := range ents {
		if e != nil && len(e.kv) > 0 {
			sum += uint(e.kv[0]) + uint(e.kv[len(e.kv)-1])
		}
	}
	clear(ents)
	m.ahead = ents[:0]
	m.aheadSum += sum
}

// Prefetch reads ahead what looking up keys in db will touch, for a batch
// of commands about to run (memEngine.prefetch). A hint: it changes
// nothing a command sees.
func (s *Store) Prefetch(db int, keys [][]byte) { s.mem.prefetch(db, keys) }
