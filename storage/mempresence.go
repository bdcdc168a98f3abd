package storage

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"

	sqlite3 "modernc.org/sqlite/lib"
)

// presence is a Bloom filter of the key names SQLite may hold, in any
// database: a load of a name it has never seen is answered without a read
// (memload.go), so that a miss costs what it costs Redis, a lookup in
// memory. Names are added by the flush that writes their rows, before it
// commits, to the filters it was frozen with (memFlight.addPresence), and
// never removed: a name whose row went stays in the filter, and costs the
// read it costs without one.
//
// It is built at start-up, off the actor, from a scan of SQLite's keys on
// a connection of its own; until the scan is done it answers "maybe" to
// everything. Names added meanwhile (by flushes) are kept too: the scan
// sees a commit, and every name written after that commit was added to it
// by its flush, frozen once the new filter existed (growPresence runs
// with no flush under way). Words are atomic because the scan and the actor add at once.
type presence struct {
	words []atomic.Uint64
	shift uint // 64 - log2(bits): a hash's top bits pick a bit
	seed  maphash.Seed
	ready atomic.Bool
	added atomic.Int64 // names added (with repeats), for the saturation check
	cap   int64        // the names it was sized for

	stop atomic.Bool
	done sync.WaitGroup
}

// presenceHashes is how many bits a name sets. A filter is sized for
// twice the names SQLite holds, at 8 bits per name, and replaced once the
// names added pass what it was sized for: until then a name has 16 bits
// or more, and about 1 absent name in 1 700 is a false "maybe"; at the
// replacement, 8 bits and 1 in 40.
const (
	presenceHashes  = 8
	presenceBitsPer = 8
	presenceMinCap  = 1 << 16
)

// newPresence sizes a filter for capacity names (at least presenceMinCap).
func newPresence(capacity int64) *presence {
	capacity = max(capacity, presenceMinCap)
	n := uint(bits.Len64(uint64(capacity*presenceBitsPer) - 1)) // log2 of the bits, rounded up
	return &presence{words: make([]atomic.Uint64, 1<<(n-6)), shift: 64 - n, seed: maphash.MakeSeed(), cap: capacity}
}

// add records that SQLite may hold name. Any goroutine.
func (p *presence) add(name string) { p.addHash(maphash.String(p.seed, name)) }

// addBytes is add of a name held as bytes.
func (p *presence) addBytes(name []byte) { p.addHash(maphash.Bytes(p.seed, name)) }

// addHash is add of a name's hash (maphash with p.seed).
func (p *presence) addHash(h uint64) {
	step := h>>32 | 1
	for i := 0; i < presenceHashes; i++ {
		b := h >> p.shift
		p.words[b>>6].Or(1 << (b & 63))
		h += step * 0x9e3779b97f4a7c15
	}
	p.added.Add(1)
}

// mayHold reports whether SQLite may hold name: false only when the
// filter is built and has never seen it. Once the names added pass four
// times what it was sized for, nearly every bit is set: it answers
// "maybe" without looking (the engine has started a larger one by then:
// grow).
func (p *presence) mayHold(name string) bool {
	if !p.ready.Load() || p.added.Load() > 4*p.cap {
		return true
	}
	h := maphash.String(p.seed, name)
	step := h>>32 | 1
	for i := 0; i < presenceHashes; i++ {
		b := h >> p.shift
		if p.words[b>>6].Load()&(1<<(b&63)) == 0 {
			return false
		}
		h += step * 0x9e3779b97f4a7c15
	}
	return true
}

// build scans the key names of the database at path into p on a
// read-only connection of its own, then makes p ready; a failed scan
// leaves it answering "maybe". It runs on its own goroutine (close stops
// it and waits).
func (p *presence) build(path string) {
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		c, err := openConn(path, sqlite3.SQLITE_OPEN_READONLY)
		if err != nil {
			return
		}
		defer c.close()
		st, err := c.prepare("SELECT key FROM keys")
		if err != nil {
			return
		}
		defer st.close()
		var buf []byte
		for !p.stop.Load() {
			row, err := st.step()
			if err != nil {
				return
			}
			if !row {
				p.ready.Store(true)
				return
			}
			buf = st.colBlob(0, buf[:0])
			p.addHash(maphash.Bytes(p.seed, buf))
		}
	}()
}

// close stops a scan still running and waits for it.
func (p *presence) close() {
	p.stop.Store(true)
	p.done.Wait()
}

// growPresence starts, once the names added pass what the filter was
// sized for, a filter for twice as many names as SQLite holds, and puts it
// in place once its scan is done. It runs in startFlush, before the
// freeze, with no flight under way: every name frozen before has been
// committed (its scan sees it) or waits in a failed flight's batch (added
// here); every flight frozen from now on adds its names to both.
func (m *memEngine) growPresence() {
	if n := m.nextPres; n != nil {
		if n.ready.Load() {
			m.pres.close()
			m.pres, m.nextPres = n, nil
		}
		return
	}
	if !m.pres.ready.Load() || m.pres.added.Load() <= m.pres.cap {
		return
	}
	var keys int64
	for _, d := range m.dbs {
		keys += d.count
	}
	n := newPresence(2 * max(keys, m.pres.cap))
	for _, st := range m.steps {
		if st.seg != nil {
			for i := range st.seg.keys {
				n.add(st.seg.keys[i].key())
			}
		}
	}
	m.nextPres = n
	n.build(m.s.path)
}
