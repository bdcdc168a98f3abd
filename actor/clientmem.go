package actor

import (
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// Client memory. Everything a client can make the server hold is charged
// to its ClientMem, in one of four parts, by the goroutine that takes the
// memory, at the moment it takes it:
//
//	MemQuery    input received and not yet parsed, a bulk still arriving
//	            included (the loop, after every read)
//	MemBatches  parsed commands submitted to the actor and not yet run
//	            (the loop adds at submit, the actor subtracts once run)
//	MemReplies  replies built by the actor and not yet handed to the socket
//	            (the actor adds as it builds them, the loop subtracts when
//	            it writes or drops them)
//	MemOutput   replies handed to the socket and not yet sent (the loop,
//	            from gnet's outbound buffer, after every write and on its
//	            ticker while any is pending)
//	MemMulti    commands queued by MULTI and not yet run or discarded (the
//	            actor, as it queues them and when EXEC or DISCARD ends the
//	            transaction; Redis's multi-mem)
//	MemWatch    the keys the client WATCHes (the actor, at WATCH and when
//	            the watches end)
//	MemPubsub   the client's subscriptions in the Pub/Sub tables (the
//	            actor, as it subscribes and unsubscribes; pubsub.go), as
//	            Redis counts them in a client's memory
//
// MemBudget adds them up for all clients. When the total passes the budget
// (maxmemory_clients), the client using the most is evicted — its
// connection closed, with a log line — as Redis's maxmemory-clients does;
// CLIENT NO-EVICT ON exempts a client. An evicted client stops counting at
// once (its memory is released as its connection goes) and the actor runs
// nothing more for it.
//
// The per-client output limit is checked on MemReplies + MemOutput, so
// replies in flight count as much as replies in the socket's buffer.

// Parts of a client's memory.
const (
	MemQuery = iota
	MemBatches
	MemReplies
	MemOutput
	MemMulti
	MemWatch
	MemPubsub
	memParts
)

// ClientMem is one connection's memory, as charged to the budget. Safe from
// any goroutine.
type ClientMem struct {
	budget  *MemBudget
	id      uint64
	evict   func()
	noEvict atomic.Bool

	mu    sync.Mutex
	parts [memParts]int64
	gone  bool // evicted or closed: no longer counted

	// Set by the connection's loop, for CLIENT LIST: queryFree is the free
	// room in the buffer the next input goes to (qbuf-free), waiting the
	// replies the loop holds until their turn (oll).
	queryFree, waiting atomic.Int64
}

// SetQueryFree records the free room of the connection's query buffer
// (the loop, as it accounts its input).
func (m *ClientMem) SetQueryFree(n int64) { m.queryFree.Store(n) }

// SetWaiting records how many completions the loop holds for the client
// until their turn in its reply FIFO.
func (m *ClientMem) SetWaiting(n int64) { m.waiting.Store(n) }

// Add charges d bytes (negative to release) to part p.
func (m *ClientMem) Add(p int, d int64) {
	m.mu.Lock()
	m.addLocked(p, d)
}

// Set makes part p be v bytes.
func (m *ClientMem) Set(p int, v int64) {
	m.mu.Lock()
	m.addLocked(p, v-m.parts[p])
}

// addLocked charges d to part p, unlocks m, and has the budget evict if
// the charge took it over.
func (m *ClientMem) addLocked(p int, d int64) {
	if m.gone || d == 0 {
		m.mu.Unlock()
		return
	}
	m.parts[p] += d
	total := m.budget.total.Add(d)
	m.mu.Unlock()
	if limit := m.budget.limit.Load(); d > 0 && limit > 0 && total > limit {
		m.budget.enforce()
	}
}

// Part is the bytes charged to part p.
func (m *ClientMem) Part(p int) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parts[p]
}

// Total is the bytes the client holds, all parts together.
func (m *ClientMem) Total() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sumLocked()
}

func (m *ClientMem) sumLocked() int64 {
	var n int64
	for _, v := range m.parts {
		n += v
	}
	return n
}

// Output is what the client's replies hold: built and not yet handed to
// the socket, plus handed and not yet sent.
func (m *ClientMem) Output() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parts[MemReplies] + m.parts[MemOutput]
}

// chargeReply charges d bytes of newly built replies and reports what the
// client's replies then hold (Output) and whether it is still counted (not
// evicted). It is the actor's one call per command.
func (m *ClientMem) chargeReply(d int64) (out int64, ok bool) {
	m.mu.Lock()
	if m.gone {
		m.mu.Unlock()
		return 0, false
	}
	m.parts[MemReplies] += d
	out = m.parts[MemReplies] + m.parts[MemOutput]
	total := m.budget.total.Add(d)
	m.mu.Unlock()
	if limit := m.budget.limit.Load(); d > 0 && limit > 0 && total > limit {
		m.budget.enforce()
		if m.Gone() {
			return out, false
		}
	}
	return out, true
}

// Gone reports whether the client was evicted or released.
func (m *ClientMem) Gone() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gone
}

// SetNoEvict exempts the client from eviction (CLIENT NO-EVICT).
func (m *ClientMem) SetNoEvict(on bool) { m.noEvict.Store(on) }

// drop stops counting the client and gives its bytes back to the budget.
// Eviction and release may race: it reports whether this call was the one
// that did it ("done now"), so only one of them acts.
func (m *ClientMem) drop() (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gone {
		return 0, false
	}
	m.gone = true
	n := m.sumLocked()
	m.budget.total.Add(-n)
	return n, true
}

// MemBudget is the memory budget for all clients together. Safe from any
// goroutine.
type MemBudget struct {
	limit   atomic.Int64 // 0: no budget
	log     zerolog.Logger
	total   atomic.Int64
	evicted atomic.Uint64

	mu        sync.Mutex // guards clients
	clients   map[uint64]*ClientMem
	enforcing sync.Mutex // held by the one goroutine evicting
}

// NewMemBudget makes a budget of limit bytes (0: unlimited; memory is still
// counted).
func NewMemBudget(limit int64, log zerolog.Logger) *MemBudget {
	b := &MemBudget{log: log, clients: map[uint64]*ClientMem{}}
	b.limit.Store(limit)
	return b
}

// Register starts counting a connection's memory. evict closes the
// connection; it is called at most once, from any goroutine, and must not
// block.
func (b *MemBudget) Register(id uint64, evict func()) *ClientMem {
	m := &ClientMem{budget: b, id: id, evict: evict}
	b.mu.Lock()
	b.clients[id] = m
	b.mu.Unlock()
	return m
}

// Release stops counting a closed connection (idempotent).
func (b *MemBudget) Release(m *ClientMem) {
	m.drop()
	b.mu.Lock()
	delete(b.clients, m.id)
	b.mu.Unlock()
}

// Used is the memory all clients hold.
func (b *MemBudget) Used() int64 { return b.total.Load() }

// Limit is the budget in bytes (0: none).
func (b *MemBudget) Limit() int64 { return b.limit.Load() }

// SetLimit changes the budget (CONFIG SET maxmemory-clients); a lower one
// evicts at once whoever is then over it.
func (b *MemBudget) SetLimit(limit int64) {
	b.limit.Store(limit)
	if limit > 0 {
		b.enforce()
	}
}

// Evicted is how many clients the budget has evicted.
func (b *MemBudget) Evicted() uint64 { return b.evicted.Load() }

// enforce evicts the clients using the most until the total is within the
// budget. One goroutine enforces at a time; another that finds the budget
// exceeded meanwhile leaves it to that one, which looks again after it is
// done (so no excess is left unnoticed).
func (b *MemBudget) enforce() {
	for limit := b.limit.Load(); limit > 0 && b.total.Load() > limit; limit = b.limit.Load() {
		if !b.enforcing.TryLock() {
			return
		}
		stuck := !b.evictOver()
		b.enforcing.Unlock()
		if stuck {
			return
		}
	}
}

// evictOver evicts clients, the one using the most first, while the total
// is over the budget; it reports false when none could be evicted.
func (b *MemBudget) evictOver() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		total, limit := b.total.Load(), b.limit.Load()
		if limit == 0 || total <= limit {
			return true
		}
		var big *ClientMem
		var bigN int64
		for _, m := range b.clients {
			if m.noEvict.Load() {
				continue
			}
			if n := m.Total(); n > bigN {
				big, bigN = m, n
			}
		}
		if big == nil {
			return false // nobody may be evicted
		}
		delete(b.clients, big.id)
		n, ok := big.drop()
		if !ok {
			continue
		}
		b.evicted.Add(1)
		b.log.Warn().Uint64("client", big.id).Int64("bytes", n).Int64("clients_memory", total).Int64("maxmemory_clients", limit).
			Msg("evicting the client using the most memory: client memory is over maxmemory_clients")
		big.evict()
	}
}
