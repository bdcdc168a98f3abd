// Package offload is Cellar's bounded, elastic pool for work that blocks a
// thread on the disk: WAL fsyncs (group commit), checkpoints, snapshots.
// Nothing that waits on the network runs here, and nothing here touches a
// socket or the actor's state; a job reports back only through its own
// callbacks.
//
// Design (docs/architecture.md, "Goroutines", says why the pool exists):
//   - A bounded queue (Config.QueueSize). When it is full, Submit either
//     parks the caller until there is room (Park) or fails at once with
//     ErrQueueFull (NoWait), as the caller chooses. The actor never parks.
//   - Workers are elastic within [MinWorkers, MaxWorkers]: one is spawned
//     whenever the queue holds more jobs than there are idle workers; a
//     worker idle for IdleTimeout retires (down to Min).
//   - A job may carry a deadline: not started by then, it is dropped, never
//     run, and its Dropped callback gets ErrDeadline. A job that has started
//     always runs to completion (an fsync cannot be interrupted).
//   - Cancel removes a job that has not started (Dropped gets ErrCanceled);
//     a started job cannot be canceled. Whichever of start, cancel and
//     deadline comes first wins; the others see "already decided".
//   - Counters (Stats) for INFO and metrics.
//
// All methods are safe for concurrent use.
package offload

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Errors a submitter or a dropped job sees.
var (
	ErrQueueFull = errors.New("offload: queue full")
	ErrDeadline  = errors.New("offload: deadline passed before the job started")
	ErrCanceled  = errors.New("offload: job canceled before it started")
	ErrClosed    = errors.New("offload: pool closed")
)

// Mode says what Submit does when the queue is full.
type Mode int

const (
	// NoWait fails with ErrQueueFull at once.
	NoWait Mode = iota
	// Park waits for room (or for ctx to end).
	Park
)

// Config sizes the pool.
type Config struct {
	QueueSize   int           // bounded queue length (default 1024)
	MinWorkers  int           // workers kept even when idle (default 1)
	MaxWorkers  int           // upper bound (default 8)
	IdleTimeout time.Duration // idle time before a worker above Min retires (default 10s)
}

func (c Config) withDefaults() Config {
	if c.QueueSize <= 0 {
		c.QueueSize = 1024
	}
	if c.MaxWorkers <= 0 {
		c.MaxWorkers = 8
	}
	if c.MinWorkers < 0 {
		c.MinWorkers = 0
	}
	if c.MinWorkers > c.MaxWorkers {
		c.MinWorkers = c.MaxWorkers
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 10 * time.Second
	}
	return c
}

// Job is one unit of blocking work.
type Job struct {
	// Run does the work. It runs at most once, on a pool worker.
	Run func()
	// Deadline, when not zero, is the latest moment the job may start.
	Deadline time.Time
	// Dropped, when set, is called instead of Run when the job is dropped
	// (deadline, cancellation, pool closing). It runs on a pool goroutine or
	// a timer goroutine, never on the submitter's.
	Dropped func(error)

	state atomic.Int32
	timer *time.Timer
}

const (
	stateQueued int32 = iota
	stateStarted
	stateDropped
)

// decide moves a queued job to the given final state; false when another
// party decided first, so each caller learns "done now" or "already done"
// (invariant 4 in docs/architecture.md).
func (j *Job) decide(to int32) bool { return j.state.CompareAndSwap(stateQueued, to) }

func (j *Job) drop(err error) {
	if j.timer != nil {
		j.timer.Stop()
	}
	if j.Dropped != nil {
		j.Dropped(err)
	}
}

// Stats are the pool's counters (named as INFO offload reports them, plus
// outcomes).
type Stats struct {
	Submitted      uint64 // block_tasks_submitted
	Rejected       uint64 // block_tasks_rejected (queue full)
	ThreadsSpawned uint64 // block_threads_spawned
	ThreadsRetired uint64 // block_threads_retired
	QueueDepthPeak int64  // block_queue_depth_peak
	Timeouts       uint64 // jobs dropped at their deadline
	Canceled       uint64 // jobs canceled before they started
	Completed      uint64 // jobs that ran
	Workers        int64  // workers alive now
	QueueDepth     int64  // jobs queued now
}

// Pool is the offload pool.
type Pool struct {
	cfg   Config
	queue chan *Job

	mu       sync.Mutex
	workers  int
	idle     int
	closed   bool
	wg       sync.WaitGroup // workers
	inflight sync.WaitGroup // Submit calls past the closed check
	done     chan struct{}

	submitted, rejected, spawned, retired atomic.Uint64
	timeouts, canceled, completed         atomic.Uint64
	peak                                  atomic.Int64
}

// New starts a pool with cfg (zero fields take their defaults).
func New(cfg Config) *Pool {
	cfg = cfg.withDefaults()
	p := &Pool{cfg: cfg, queue: make(chan *Job, cfg.QueueSize), done: make(chan struct{})}
	p.mu.Lock()
	for i := 0; i < cfg.MinWorkers; i++ {
		p.spawnLocked()
	}
	p.mu.Unlock()
	return p
}

// Submit queues j. With NoWait a full queue is ErrQueueFull; with Park the
// caller waits for room until ctx ends (ctx.Err() is returned; the job was
// never queued). A queued job runs, or is dropped through its Dropped
// callback; Submit's caller hears nothing else.
func (p *Pool) Submit(ctx context.Context, j *Job, mode Mode) error {
	if !j.Deadline.IsZero() {
		if time.Until(j.Deadline) <= 0 {
			p.timeouts.Add(1)
			return ErrDeadline
		}
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.inflight.Add(1)
	p.mu.Unlock()
	defer p.inflight.Done()
	select {
	case p.queue <- j:
	default:
		if mode == NoWait {
			p.rejected.Add(1)
			return ErrQueueFull
		}
		select {
		case p.queue <- j:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.submitted.Add(1)
	depth := int64(len(p.queue))
	for {
		old := p.peak.Load()
		if depth <= old || p.peak.CompareAndSwap(old, depth) {
			break
		}
	}
	if !j.Deadline.IsZero() {
		j.timer = time.AfterFunc(time.Until(j.Deadline), func() {
			if j.decide(stateDropped) {
				p.timeouts.Add(1)
				if j.Dropped != nil {
					j.Dropped(ErrDeadline)
				}
			}
		})
	}
	p.mu.Lock()
	if p.workers < p.cfg.MaxWorkers && len(p.queue) > p.idle {
		p.spawnLocked()
	}
	p.mu.Unlock()
	return nil
}

// Cancel drops j if it has not started. It reports whether this call
// dropped it (false: it started, finished, or was dropped already).
func (p *Pool) Cancel(j *Job) bool {
	if !j.decide(stateDropped) {
		return false
	}
	p.canceled.Add(1)
	j.drop(ErrCanceled)
	return true
}

func (p *Pool) spawnLocked() {
	p.workers++
	p.idle++
	p.spawned.Add(1)
	p.wg.Add(1)
	go p.work()
}

func (p *Pool) work() {
	defer p.wg.Done()
	idle := time.NewTimer(p.cfg.IdleTimeout)
	defer idle.Stop()
	for {
		select {
		case j := <-p.queue:
			p.mu.Lock()
			p.idle--
			// Submit may have counted this worker as idle before it took
			// the job; if jobs wait and nobody is free, add a worker now.
			if p.workers < p.cfg.MaxWorkers && len(p.queue) > p.idle && !p.closed {
				p.spawnLocked()
			}
			p.mu.Unlock()
			p.run(j)
			p.setIdle(+1)
			if !idle.Stop() {
				select {
				case <-idle.C:
				default:
				}
			}
			idle.Reset(p.cfg.IdleTimeout)
		case <-idle.C:
			p.mu.Lock()
			// Never retire with work queued: the timer and a new job can be
			// ready together, and a retired worker could strand the job
			// behind busy ones. (Submit decides on spawning under the same
			// lock, so one of the two sees the other.)
			if p.workers > p.cfg.MinWorkers && !p.closed && len(p.queue) == 0 {
				p.workers--
				p.idle--
				p.retired.Add(1)
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			idle.Reset(p.cfg.IdleTimeout)
		case <-p.done:
			p.mu.Lock()
			p.workers--
			p.idle--
			p.mu.Unlock()
			return
		}
	}
}

func (p *Pool) setIdle(d int) {
	p.mu.Lock()
	p.idle += d
	p.mu.Unlock()
}

func (p *Pool) run(j *Job) {
	if !j.decide(stateStarted) {
		return // canceled or timed out while queued; already reported
	}
	if j.timer != nil {
		j.timer.Stop()
	}
	j.Run()
	p.completed.Add(1)
}

// Close stops accepting jobs, runs the ones already queued (or drops them
// with ErrClosed when ctx ends first), and waits for the workers to exit.
func (p *Pool) Close(ctx context.Context) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	// No job can enter once the Submit calls already past the closed check
	// are done; parked ones get in as the workers (still running) drain.
	p.inflight.Wait()
	// Run what is queued on the caller's goroutine, so that nothing queued
	// is lost even if every worker is busy.
	for {
		select {
		case j := <-p.queue:
			if ctx.Err() != nil {
				if j.decide(stateDropped) {
					j.drop(ErrClosed)
				}
				continue
			}
			p.run(j)
			continue
		default:
		}
		break
	}
	close(p.done)
	p.wg.Wait()
}

// Stats returns the current counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	workers := p.workers
	p.mu.Unlock()
	return Stats{
		Submitted:      p.submitted.Load(),
		Rejected:       p.rejected.Load(),
		ThreadsSpawned: p.spawned.Load(),
		ThreadsRetired: p.retired.Load(),
		QueueDepthPeak: p.peak.Load(),
		Timeouts:       p.timeouts.Load(),
		Canceled:       p.canceled.Load(),
		Completed:      p.completed.Load(),
		Workers:        int64(workers),
		QueueDepth:     int64(len(p.queue)),
	}
}
