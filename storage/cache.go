package storage

// hotCache keeps recently used string values in memory, so that a GET of a
// hot key costs a map lookup instead of a SQLite search; it remembers keys
// that a GET found absent (negative entries), so that a miss costs the
// same; and it holds the key rows of recently used hashes, sets and sorted
// sets (id, element count, expiry), whose count and version it may hold
// ahead of SQLite until the next write-back (writeback.go), as it may a
// string's value, and a new string's whole row (a pending insert). It
// never changes behaviour: it is written through by SetString,
// every other write to a key (delete, expiry change, rename, move, copy,
// sweep, flush, swap) drops the key's entry, every creation of a key drops
// a negative entry (SetString replaces it; the list and collection inserts
// drop it), and a rolled-back transaction drops everything. Entries carry
// the key's expiry, and an expired entry is never served. Its memory is
// bounded by max bytes (keys, values and bookkeeping), least recently used
// entries going first. Like the Store, it belongs to the actor goroutine.
type hotCache struct {
	max, used  int64
	m          map[string]*centry
	head, tail *centry // most recently used first
	kbuf       []byte
	hits, miss uint64
	// out holds the pending entries (writeback.go) that left the map since
	// the last write-back, by key, so that a lookup can still tell their
	// keys stale (stale). An entry evicted for room is kept and a miss
	// takes it back (get): it is the key's latest state, and the key's
	// next command need not write every pending row back to find it. One
	// dropped because its key changed otherwise is kept as nil: stale,
	// never taken back. outBytes is their size; past outMax (or after
	// clear) outLost says that any key may be stale.
	out              map[string]*centry
	outBytes, outMax int64
	outLost          bool
}

// outShare is the part of the cache's bound (a quarter) that evicted
// pending entries may use besides: they are memory the cache's bound does
// not count, held until the flush instead of the next lookup that misses;
// past it, that lookup writes them all back, as before they were tracked.
// A quarter costs ~4 MiB of RSS with 1 M keys loaded (a half, ~8).
const outShare = 4

type centry struct {
	k string // database byte + key
	v []byte
	// A hash, set, sorted set or list (coll != 0): its key row, whose n
	// (the element count; 0 for a list) and version are SQLite's unless
	// pending (writeback.go), and a list's first and last positions.
	id, n      int64
	head, tail int64
	version    int64
	pseq       uint64 // when it became pending (Store.pend)
	// A cached list's popped rows that SQLite still holds, just before
	// head and just after tail; the write-back deletes them (lists.go).
	lstale, rstale int64
	exp            int64 // unix ms; 0 when persistent
	prev, next     *centry

	// The flags last, together (a smaller entry: 136 bytes, not 152).
	coll    Type
	absent  bool // a negative entry: no key of that name exists
	ref     bool // the stored value is a blob ref (blobs.go), not inline
	pending bool
	// insert: a pending string whose row SQLite does not have yet (id is
	// the one it will get).
	insert bool
	gone   bool // unlinked: no longer in the map (never again)
	// shared: a flush holds v (freezePending), so a new value gets new
	// bytes rather than overwrite them.
	shared bool
}

// entryOverhead approximates an entry's bookkeeping (struct, map slot).
const entryOverhead = 96

// maxCached is the largest value cached: one huge value should not evict
// everything else.
const maxCached = 64 << 10

func newHotCache(max int64) *hotCache {
	if max <= 0 {
		return nil
	}
	return &hotCache{max: max, m: map[string]*centry{}, out: map[string]*centry{}, outMax: max / outShare}
}

func (c *hotCache) key(db int, key []byte) []byte {
	c.kbuf = append(append(c.kbuf[:0], byte(db)), key...)
	return c.kbuf
}

// get returns the live entry for key, or nil.
func (c *hotCache) get(db int, key []byte, now int64) *centry {
	if c == nil {
		return nil
	}
	e := c.m[string(c.key(db, key))]
	if e == nil {
		if e = c.readopt(now); e != nil {
			c.hits++
			return e
		}
		c.miss++
		return nil
	}
	if expired(e.exp, now) {
		c.unlink(e)
		c.miss++
		return nil
	}
	c.hits++
	if c.head != e {
		c.detach(e)
		c.pushFront(e)
	}
	return e
}

// readopt takes back into the map the evicted pending entry of the key in
// c.kbuf, if it has one that is live, and returns it.
func (c *hotCache) readopt(now int64) *centry {
	e := c.out[string(c.kbuf)]
	if e == nil || !e.pending || expired(e.exp, now) {
		return nil
	}
	delete(c.out, e.k)
	c.outBytes -= e.size()
	e.gone = false
	c.add(e)
	c.evict()
	return e
}

// size is what e counts for in the cache's bound.
func (e *centry) size() int64 { return int64(len(e.k)+len(e.v)) + entryOverhead }

// put stores key's value and expiry, replacing any entry; ref says whether
// the row holds the value as a blob ref.
func (c *hotCache) put(db int, key, val []byte, exp int64, ref bool) {
	if c == nil {
		return
	}
	k := c.key(db, key)
	if len(val) > maxCached {
		if e := c.m[string(k)]; e != nil {
			c.unlink(e)
		}
		return
	}
	if e := c.m[string(k)]; e != nil {
		c.used += int64(len(val) - len(e.v))
		if e.shared {
			e.v, e.shared = append([]byte(nil), val...), false
		} else {
			e.v = append(e.v[:0], val...)
		}
		e.exp, e.absent, e.ref = exp, false, ref
		if c.head != e {
			c.detach(e)
			c.pushFront(e)
		}
	} else {
		c.add(&centry{k: string(k), v: append([]byte(nil), val...), exp: exp, ref: ref})
	}
	c.evict()
}

// setValue replaces live string entry e's value and expiry in place (the
// caller found e with get, which made it the most recently used).
func (c *hotCache) setValue(e *centry, val []byte, exp int64) {
	c.used += int64(len(val) - len(e.v))
	if e.shared {
		// A flush holds the old bytes (freezePending): new ones.
		e.v, e.shared = append([]byte(nil), val...), false
	} else {
		e.v = append(e.v[:0], val...)
	}
	e.exp = exp
	c.evict()
}

// putNew caches a string's new value, replacing any entry, and returns its
// entry, which the caller makes pending: an insert of a key SQLite does not
// hold yet, or an update of a row holding its value inline (strings.go).
func (c *hotCache) putNew(db int, key, val []byte, exp int64) *centry {
	k := c.key(db, key)
	if e := c.m[string(k)]; e != nil {
		c.unlink(e)
	}
	e := &centry{k: string(k), v: append([]byte(nil), val...), exp: exp}
	c.add(e)
	c.evict()
	return e
}

// putColl stores the key row of a hash, set, sorted set or list, replacing
// any entry, and returns the entry.
func (c *hotCache) putColl(db int, key []byte, t Type, id, n, exp int64) *centry {
	if c == nil {
		return nil
	}
	k := c.key(db, key)
	if e := c.m[string(k)]; e != nil {
		c.unlink(e)
	}
	e := &centry{k: string(k), coll: t, id: id, n: n, exp: exp}
	c.add(e)
	c.evict()
	return e
}

// coll returns the cached row of collection id at key, without counting a
// hit or moving it: the command that opened it is saving it.
func (c *hotCache) coll(db int, key []byte, id int64) *centry {
	if c == nil {
		return nil
	}
	if e := c.m[string(c.key(db, key))]; e != nil && e.coll != 0 && e.id == id {
		return e
	}
	return nil
}

// putAbsent records that key does not exist.
func (c *hotCache) putAbsent(db int, key []byte) {
	if c == nil {
		return
	}
	k := c.key(db, key)
	if c.m[string(k)] != nil {
		return
	}
	c.add(&centry{k: string(k), absent: true})
	c.evict()
}

func (c *hotCache) add(e *centry) {
	c.m[e.k] = e
	c.used += int64(len(e.k)+len(e.v)) + entryOverhead
	c.pushFront(e)
}

// spareRotations is how many pending entries one eviction moves back to
// the front rather than drop: SQLite's row is behind a pending entry, so
// while it is in the map a statement on another key need not write it
// back first (stale). Past that many, the cache's bound wins.
const spareRotations = 8

// evict drops least recently used entries until the cache fits, sparing a
// few pending ones.
func (c *hotCache) evict() {
	spared := 0
	// Never the most recently used: the entry a command is working on.
	for c.used > c.max && c.tail != nil && c.tail != c.head {
		if e := c.tail; e.pending && spared < spareRotations {
			spared++
			c.detach(e)
			c.pushFront(e)
			continue
		}
		c.evicted(c.tail)
	}
}

// evicted unlinks e to make room: a pending e stays its key's latest
// state, which a lookup may take back (readopt).
func (c *hotCache) evicted(e *centry) {
	c.remove(e)
	if e.pending && !c.outLost {
		if old := c.out[e.k]; old != nil {
			c.outBytes -= old.size()
		}
		c.out[e.k] = e
		c.outBytes += e.size()
		if c.outBytes > c.outMax {
			c.lose()
		}
	}
}

// pendingGone notes that pending e is no longer in the map and is not its
// key's latest state: the key is stale until the next write-back.
func (c *hotCache) pendingGone(e *centry) {
	if c.outLost {
		return
	}
	if old := c.out[e.k]; old != nil {
		c.outBytes -= old.size()
	}
	c.out[e.k] = nil
	if len(c.out) > int(c.max/entryOverhead) {
		c.lose()
	}
}

// lose forgets which keys the pending entries out of the map are: any key
// may be stale until the next write-back.
func (c *hotCache) lose() {
	c.emptyOut()
	c.outLost = true
}

// written notes that no entry is pending any more (a write-back, a
// flush's freeze, a rollback).
func (c *hotCache) written() {
	if c == nil {
		return
	}
	c.emptyOut()
	c.outLost = false
}

// emptyOut empties c.out, letting a large one's buckets go (a cleared map
// keeps them).
func (c *hotCache) emptyOut() {
	if len(c.out) > 1024 {
		c.out = map[string]*centry{}
	} else {
		clear(c.out)
	}
	c.outBytes = 0
}

// stale reports whether SQLite's row for key may be behind the cache: the
// key's entry is pending, in the map or out of it, or some pending entry
// has left the map unrecorded and so could be key's.
func (c *hotCache) stale(db int, key []byte) bool {
	if c == nil || c.outLost {
		return true
	}
	k := c.key(db, key)
	if _, out := c.out[string(k)]; out {
		return true
	}
	e := c.m[string(k)]
	return e != nil && e.pending
}

// setExpiry updates a cached key's expiry.
func (c *hotCache) setExpiry(db int, key []byte, exp int64) {
	if c == nil {
		return
	}
	if e := c.m[string(c.key(db, key))]; e != nil {
		e.exp = exp
	}
}

// drop forgets key.
func (c *hotCache) drop(db int, key []byte) {
	if c == nil {
		return
	}
	if e := c.m[string(c.key(db, key))]; e != nil {
		c.unlink(e)
	}
}

// clear forgets everything.
func (c *hotCache) clear() {
	if c == nil {
		return
	}
	for _, e := range c.m {
		if e.pending {
			c.lose() // the lookups can no longer tell their keys
			break
		}
	}
	clear(c.m)
	c.head, c.tail, c.used = nil, nil, 0
}

// unlink takes e out of the map: the key changed, or it was evicted
// (evicted says what becomes of a pending e then).
func (c *hotCache) unlink(e *centry) {
	if e.pending {
		c.pendingGone(e)
	}
	c.remove(e)
}

// remove takes e out of the map and the recency list.
func (c *hotCache) remove(e *centry) {
	e.gone = true
	c.detach(e)
	delete(c.m, e.k)
	c.used -= int64(len(e.k)+len(e.v)) + entryOverhead
}

func (c *hotCache) detach(e *centry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (c *hotCache) pushFront(e *centry) {
	e.next = c.head
	if c.head != nil {
		c.head.prev = e
	}
	c.head = e
	if c.tail == nil {
		c.tail = e
	}
}

// CacheStats reports the hot cache's size and hit counts.
func (s *Store) CacheStats() (entries int, bytes int64, hits, misses uint64) {
	if s.cache == nil {
		return 0, 0, 0, 0
	}
	return len(s.cache.m), s.cache.used, s.cache.hits, s.cache.miss
}
