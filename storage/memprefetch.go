package storage

import "sync"

// Loads off the actor (docs/architecture.md, "Storage engine"): before a
// connection's batch runs, the actor asks for the keys its commands name
// (WantLoad); those the engine does not hold and SQLite may hold are read
// by a Load, on a connection of its own and a goroutine of its own, while
// the actor serves the other connections; the batch waits, in its
// connection's order, until EndLoad has put them in memory. What a load
// reads is SQLite's last commit, which holds the key's latest state only
// while memory holds nothing of it: a name that memory took up or let go
// while the load was under way, or a database operation (FLUSHDB, SWAPDB)
// since it began, makes what it read stale, and it is dropped. A command
// that then meets a key memory does not hold loads it on the spot, as one
// whose keys could not be known in advance does (entryAt): the prefetch
// only ever saves the actor a read.

// loadName is a key name in a database, as the loads index them.
type loadName struct {
	db  int
	key string
}

// loadKey is one name of a Load: the entry its read fills (typ TypeNone
// when SQLite has no such key) and the key's expiry, and whether it went
// stale meanwhile.
type loadKey struct {
	name  loadName
	gen   uint64 // the Load that reads it
	e     *entry
	exp   int64
	stale bool
}

// Load is a set of keys read from SQLite off the actor: Store.StartLoad
// makes it, Run reads (on any goroutine, one Load at a time), and
// Store.EndLoad puts what is still current in memory.
type Load struct {
	m     *memEngine
	gen   uint64 // the batches asking for its keys wait for this number
	epoch uint64
	keys  []*loadKey
	reads uint64
	err   error
}

// maxLoadKeys bounds a Load; past it, names are left to their commands'
// own loads.
const maxLoadKeys = 4096

// loads is the engine's side of the loads off the actor.
type loads struct {
	r   *sqlc          // the connection Run reads through
	run sync.WaitGroup // the Load running (close waits for it)
	// names: every name of the Load in flight and of the next one.
	names map[loadName]*loadKey
	next  []*loadKey // the next Load's names
	// gen numbers Loads: the next one has gen, the one in flight (if
	// any) gen-1.
	gen    uint64
	flying bool
	// epoch counts what makes every load under way stale: a database
	// operation, a rollback.
	epoch uint64
	// mayMiss: SQLite may hold a key memory does not (a key was let go, or
	// SQLite held keys at start). Until then no batch is looked at.
	mayMiss bool
	// absent are the entries of missing keys the last EndLoad put in
	// memory; without a bound SettleLoad lets them go once the batches
	// that asked for them ran (as endCommand does a command's misses).
	absent []*entry
	keys   uint64 // keys read off the actor
	waits  uint64 // names a batch waited for
}

// MayLoad reports whether a batch's keys are worth looking at: the
// engine may hold less than SQLite does.
func (s *Store) MayLoad() bool { return s.mem != nil && s.mem.ld.mayMiss }

// WantLoad is called on the actor for a key that a command of a batch
// about to run names in database db: 0 when the command can run at once
// (memory holds the key, or SQLite cannot hold it), else the number of
// the Load the batch waits for, which the key joins unless it is already
// being read.
func (s *Store) WantLoad(db int, key []byte) uint64 {
	m := s.mem
	if m == nil || db < 0 || db >= allDBs || len(m.dbops) > 0 {
		return 0 // a database operation not committed: the command loads (view)
	}
	if m.dbs[db].keys.get(string(key)) != nil {
		return 0
	}
	ld := &m.ld
	if k := ld.names[loadName{db, string(key)}]; k != nil {
		ld.waits++
		return k.gen
	}
	if !m.pres.mayHold(string(key)) || len(ld.next) >= maxLoadKeys {
		return 0
	}
	k := &loadKey{name: loadName{db, string(key)}, gen: ld.gen}
	if ld.names == nil {
		ld.names = make(map[loadName]*loadKey)
	}
	ld.names[k.name] = k
	ld.next = append(ld.next, k)
	ld.waits++
	return ld.gen
}

// StartLoad takes the names asked for since the last one as a Load, to
// Run off the actor; nil when a Load is in flight or none was asked for.
func (s *Store) StartLoad() *Load {
	m := s.mem
	if m == nil {
		return nil
	}
	ld := &m.ld
	if ld.flying || len(ld.next) == 0 {
		return nil
	}
	l := &Load{m: m, gen: ld.gen, epoch: ld.epoch, keys: ld.next}
	ld.next = nil
	ld.gen++
	ld.flying = true
	ld.run.Add(1)
	return l
}

// Run reads the Load's keys from SQLite's last commit, each as load does.
// It touches nothing of the actor's.
func (l *Load) Run() {
	m := l.m
	defer m.ld.run.Done()
	for _, k := range l.keys {
		e := newEntry(k.name.key, 0) // its slot is set when it is held
		k.e = e
		m.readMu.Lock()
		if m.sqlKeys[k.name.db] == 0 {
			m.readMu.Unlock()
			continue
		}
		l.reads++
		exp, err := readKey(m, m.ld.r, k.name.db, e)
		if err != nil {
			l.err = err
			return
		}
		k.exp = exp
	}
}

// EndLoad puts in memory, on the actor, what l read and is still current,
// and returns l's number: the batches that waited for it may run.
func (s *Store) EndLoad(l *Load) uint64 {
	m := s.mem
	ld := &m.ld
	ld.flying = false
	m.reads += l.reads
	for _, k := range l.keys {
		if ld.names[k.name] == k {
			delete(ld.names, k.name)
		}
		if l.err != nil || k.stale || l.epoch != ld.epoch || k.e == nil {
			continue
		}
		d := m.dbs[k.name.db]
		if d.keys.get(k.name.key) != nil {
			continue // a command took it up meanwhile: memory's is the latest
		}
		ld.keys++
		e := k.e
		e.slot = d.slot
		m.hold(e, k.exp)
		if e.typ == TypeNone && m.max == 0 {
			ld.absent = append(ld.absent, e)
		}
	}
	return l.gen
}

// SettleLoad is called once the batches a Load let run have run: without
// a bound, the missing keys it put in memory go again.
func (s *Store) SettleLoad() {
	m := s.mem
	for _, e := range m.ld.absent {
		if e.typ == TypeNone && m.evictable(e) && m.dbOf(e).keys.get(e.key()) == e {
			m.forget(e)
		}
	}
	clear(m.ld.absent)
	m.ld.absent = m.ld.absent[:0]
}

// LoadStats reports the keys read off the actor and how many times a
// batch waited for a name.
func (s *Store) LoadStats() (keys, waits uint64) {
	if s.mem == nil {
		return 0, 0
	}
	return s.mem.ld.keys, s.mem.ld.waits
}

// loadGone marks a name being loaded stale: memory let it go (its latest
// state may be newer than what the load read).
func (m *memEngine) loadGone(e *entry) {
	if e.is(flagRowStored) || e.typ != TypeNone {
		m.ld.mayMiss = true
	}
	if len(m.ld.names) == 0 {
		return
	}
	if k := m.ld.names[loadName{m.dbOf(e).num, e.key()}]; k != nil {
		k.stale = true
	}
}
