package actor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/cellar-db/cellar/offload"
)

// syncer is group commit for durability "always" (docs/architecture.md,
// "Durability"): the actor commits with synchronous=NORMAL, writes the
// commit's records to the redo log and goes on; an offload worker fsyncs
// the log (without a log, tests: the WAL); the replies that waited for those
// commits are delivered by the worker once the fsync returns. While one
// fsync runs, new commits and their replies gather, and the next fsync
// covers them all.
//
// It also runs the periodic fsync of durability "everysec".
//
// An fsync error is final: durability of everything since the last good
// fsync is unknown, so the waiting replies are never sent (their
// connections are closed instead) and every later write is refused. Cellar
// does not retry an fsync and pretend: after a failed fsync the kernel may
// have dropped the dirty pages, so a later success proves nothing.
type syncer struct {
	fsync func() error // fsyncs what every commit so far wrote: the redo log (or the WAL without one)
	pool  *offload.Pool
	log   zerolog.Logger
	lat   *latencyMonitor // times each fsync (latency.go); nil in unit tests

	delivering []Completion // deliver's scratch, for the one run at a time

	mu      sync.Mutex
	waiting []routed
	target  uint64 // highest commit the waiting replies need
	running bool
	idle    *sync.Cond

	durable atomic.Uint64 // commits known fsynced
	failed  atomic.Pointer[error]

	fsyncs    atomic.Uint64
	fsyncNs   atomic.Int64  // last fsync latency
	covered   atomic.Uint64 // commits covered by fsyncs, for writes per fsync
	lastSyncT atomic.Int64  // unix seconds of the last good fsync
}

func newSyncer(fsync func() error, pool *offload.Pool, log zerolog.Logger) *syncer {
	y := &syncer{fsync: fsync, pool: pool, log: log}
	y.idle = sync.NewCond(&y.mu)
	return y
}

// behind reports whether commits up to seq are not all known durable.
func (y *syncer) behind(seq uint64) bool { return y.durable.Load() < seq }

// fail stops acknowledging writes for good: what was written since the
// last good fsync may not be durable (a failed fsync, or a failed log
// write). Safe from any goroutine.
func (y *syncer) fail(err error) {
	if y.failed.CompareAndSwap(nil, &err) {
		y.log.Error().Err(err).Msg("durability failed: writes are refused from now on, and unacknowledged writes stay unacknowledged")
	}
}

// failure is the fsync error that stopped writes, if any.
func (y *syncer) failure() error {
	if p := y.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// enqueue holds rs until an fsync covers commit seq. Called by the actor.
func (y *syncer) enqueue(rs []routed, seq uint64) {
	y.mu.Lock()
	y.waiting = append(y.waiting, rs...)
	y.target = max(y.target, seq)
	y.startLocked()
	y.mu.Unlock()
}

// syncSoon asks for an fsync covering commit seq with no replies waiting
// (durability everysec). Called by the actor.
func (y *syncer) syncSoon(seq uint64) {
	y.mu.Lock()
	if y.durable.Load() < seq {
		y.target = max(y.target, seq)
		y.startLocked()
	}
	y.mu.Unlock()
}

func (y *syncer) startLocked() {
	if y.running {
		return
	}
	y.running = true
	job := &offload.Job{Run: y.run}
	if err := y.pool.Submit(context.Background(), job, offload.NoWait); err != nil {
		// Queue full or closing: the syncer cannot be skipped (replies are
		// waiting), so it runs on its own goroutine this once.
		y.log.Warn().Err(err).Msg("offload pool refused the fsync job; running it directly")
		go y.run()
	}
}

// run fsyncs until nothing waits. It runs on an offload worker.
func (y *syncer) run() {
	for {
		y.mu.Lock()
		if y.durable.Load() >= y.target && len(y.waiting) == 0 {
			y.running = false
			y.idle.Broadcast()
			y.mu.Unlock()
			return
		}
		batch, target := y.waiting, y.target
		y.waiting = nil
		y.mu.Unlock()

		// Every commit up to target returned before this point, so its
		// frames are in the WAL file that this fsync covers.
		var err error
		if y.failure() == nil {
			t0 := time.Now()
			err = y.fsync()
			y.fsyncNs.Store(int64(time.Since(t0)))
			y.lat.observe(evFsync, time.Since(t0))
			if err == nil {
				y.fsyncs.Add(1)
				y.covered.Add(target - y.durable.Load())
				y.durable.Store(target)
				y.lastSyncT.Store(time.Now().Unix())
			} else {
				y.fail(err)
			}
		}
		if y.failure() != nil {
			// Never acknowledge what may not be durable: close instead.
			for i := range batch {
				batch[i].c = Completion{ConnID: batch[i].c.ConnID, Kill: true}
			}
			y.mu.Lock()
			y.durable.Store(y.target)
			y.mu.Unlock()
		}
		deliver(batch, &y.delivering)
	}
}

// drain waits until no fsync runs and nothing waits (shutdown).
func (y *syncer) drain(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		y.mu.Lock()
		y.idle.Broadcast()
		y.mu.Unlock()
	})
	defer stop()
	y.mu.Lock()
	for y.running && ctx.Err() == nil {
		y.idle.Wait()
	}
	y.mu.Unlock()
}
