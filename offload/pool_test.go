package offload

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellar-db/cellar/internal/wait"
)

func closePool(t *testing.T, p *Pool) {
	t.Cleanup(func() { p.Close(context.Background()) })
}

// A quick job runs and completes.
func TestQuickTaskCompletes(t *testing.T) {
	p := New(Config{})
	closePool(t, p)
	done := make(chan struct{})
	if err := p.Submit(context.Background(), &Job{Run: func() { close(done) }}, NoWait); err != nil {
		t.Fatal(err)
	}
	<-done
	wait.For(t, 10*time.Second, "completed counter", func() bool { return p.Stats().Completed == 1 })
	if s := p.Stats(); s.Submitted != 1 || s.ThreadsSpawned < 1 {
		t.Fatalf("stats %+v", s)
	}
}

// blockWorkers fills every worker with a job that waits on release.
func blockWorkers(t *testing.T, p *Pool, n int) (release func()) {
	t.Helper()
	gate := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	for i := 0; i < n; i++ {
		if err := p.Submit(context.Background(), &Job{Run: func() { started.Done(); <-gate }}, NoWait); err != nil {
			t.Fatal(err)
		}
	}
	started.Wait()
	return func() { close(gate) }
}

// A full queue refuses a NoWait submission at once with ErrQueueFull.
func TestQueueFullNoWait(t *testing.T) {
	p := New(Config{QueueSize: 2, MaxWorkers: 1})
	closePool(t, p)
	release := blockWorkers(t, p, 1)
	defer release()
	for i := 0; i < 2; i++ {
		if err := p.Submit(context.Background(), &Job{Run: func() {}}, NoWait); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Submit(context.Background(), &Job{Run: func() {}}, NoWait); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third job on a full queue: %v", err)
	}
	if s := p.Stats(); s.Rejected != 1 || s.QueueDepthPeak != 2 {
		t.Fatalf("stats %+v", s)
	}
}

// A Park submission to a full queue waits for room, and the job eventually
// runs.
func TestQueueFullParkThenRuns(t *testing.T) {
	p := New(Config{QueueSize: 1, MaxWorkers: 1})
	closePool(t, p)
	release := blockWorkers(t, p, 1)
	if err := p.Submit(context.Background(), &Job{Run: func() {}}, NoWait); err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	submitted := make(chan error, 1)
	go func() {
		submitted <- p.Submit(context.Background(), &Job{Run: func() { close(ran) }}, Park)
	}()
	select {
	case err := <-submitted:
		t.Fatalf("Park returned while the queue was full: %v", err)
	default:
	}
	release()
	if err := <-submitted; err != nil {
		t.Fatal(err)
	}
	<-ran
}

// A parked submitter whose context ends is not queued.
func TestParkCanceledWhileWaiting(t *testing.T) {
	p := New(Config{QueueSize: 1, MaxWorkers: 1})
	closePool(t, p)
	release := blockWorkers(t, p, 1)
	defer release()
	p.Submit(context.Background(), &Job{Run: func() {}}, NoWait)
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Bool
	errc := make(chan error, 1)
	go func() { errc <- p.Submit(ctx, &Job{Run: func() { ran.Store(true) }}, Park) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("parked submit after cancel: %v", err)
	}
	if ran.Load() {
		t.Fatal("a job whose submission was canceled ran")
	}
}

// A job whose deadline passes before it starts is dropped with ErrDeadline
// and never run.
func TestDeadlineBeforeStart(t *testing.T) {
	p := New(Config{MaxWorkers: 1})
	closePool(t, p)
	release := blockWorkers(t, p, 1)
	var ran atomic.Bool
	dropped := make(chan error, 1)
	j := &Job{
		Run:      func() { ran.Store(true) },
		Deadline: time.Now().Add(20 * time.Millisecond),
		Dropped:  func(err error) { dropped <- err },
	}
	if err := p.Submit(context.Background(), j, NoWait); err != nil {
		t.Fatal(err)
	}
	if err := <-dropped; !errors.Is(err, ErrDeadline) {
		t.Fatalf("dropped with %v", err)
	}
	release()
	// The worker reaches the job after its deadline and must not run it.
	wait.For(t, 10*time.Second, "queue drained", func() bool { return p.Stats().QueueDepth == 0 })
	p.Close(context.Background())
	if ran.Load() {
		t.Fatal("a job past its deadline ran")
	}
	if p.Stats().Timeouts != 1 {
		t.Fatalf("timeouts = %d", p.Stats().Timeouts)
	}
	// Already past at submission: refused at once.
	if err := New(Config{}).Submit(context.Background(), &Job{Run: func() {}, Deadline: time.Now().Add(-time.Second)}, NoWait); !errors.Is(err, ErrDeadline) {
		t.Fatalf("expired deadline at submit: %v", err)
	}
}

// Cancellation before dispatch removes the job; after start it cannot.
func TestCancel(t *testing.T) {
	p := New(Config{MaxWorkers: 1})
	closePool(t, p)
	release := blockWorkers(t, p, 1)
	var ran atomic.Bool
	dropped := make(chan error, 1)
	j := &Job{Run: func() { ran.Store(true) }, Dropped: func(err error) { dropped <- err }}
	p.Submit(context.Background(), j, NoWait)
	if !p.Cancel(j) {
		t.Fatal("Cancel of a queued job reported already decided")
	}
	if p.Cancel(j) {
		t.Fatal("second Cancel reported done now")
	}
	if err := <-dropped; !errors.Is(err, ErrCanceled) {
		t.Fatalf("dropped with %v", err)
	}
	release()
	wait.For(t, 10*time.Second, "queue drained", func() bool { return p.Stats().QueueDepth == 0 })

	started, gate := make(chan struct{}), make(chan struct{})
	running := &Job{Run: func() { close(started); <-gate }}
	p.Submit(context.Background(), running, NoWait)
	<-started
	if p.Cancel(running) {
		t.Fatal("Cancel of a running job reported done now")
	}
	close(gate)
	if ran.Load() {
		t.Fatal("canceled job ran")
	}
}

// More than a thousand concurrent parked submissions all run, on no more
// than MaxWorkers workers, and leave no worker behind after Close (their
// latency is a benchmark matter, not asserted).
func TestManyJobs(t *testing.T) {
	p := New(Config{QueueSize: 64, MaxWorkers: 8})
	var wg sync.WaitGroup
	var n atomic.Int64
	for i := 0; i < 2000; i++ {
		wg.Add(1)
		go func() {
			if err := p.Submit(context.Background(), &Job{Run: func() { n.Add(1); wg.Done() }}, Park); err != nil {
				t.Error(err)
				wg.Done()
			}
		}()
	}
	wg.Wait()
	p.Close(context.Background())
	if n.Load() != 2000 {
		t.Fatalf("%d of 2000 jobs ran", n.Load())
	}
	if s := p.Stats(); s.Workers != 0 || s.ThreadsSpawned > 8 {
		t.Fatalf("after close: %+v", s)
	}
}

// Workers spawn under load up to Max and retire after the idle timeout.
func TestElasticity(t *testing.T) {
	p := New(Config{MinWorkers: 1, MaxWorkers: 4, IdleTimeout: 20 * time.Millisecond})
	closePool(t, p)
	release := blockWorkers(t, p, 4)
	if s := p.Stats(); s.Workers != 4 {
		t.Fatalf("workers under load = %d", s.Workers)
	}
	release()
	wait.For(t, 10*time.Second, "idle workers to retire", func() bool { return p.Stats().Workers == 1 })
	if s := p.Stats(); s.ThreadsRetired != 3 {
		t.Fatalf("retired = %d", s.ThreadsRetired)
	}
}

// Close runs every queued job: nothing queued is lost.
func TestCloseRunsQueued(t *testing.T) {
	p := New(Config{MaxWorkers: 1})
	release := blockWorkers(t, p, 1)
	var n atomic.Int64
	for i := 0; i < 10; i++ {
		p.Submit(context.Background(), &Job{Run: func() { n.Add(1) }}, NoWait)
	}
	go release()
	p.Close(context.Background())
	if n.Load() != 10 {
		t.Fatalf("%d of 10 queued jobs ran before Close returned", n.Load())
	}
	if err := p.Submit(context.Background(), &Job{Run: func() {}}, NoWait); !errors.Is(err, ErrClosed) {
		t.Fatalf("submit after close: %v", err)
	}
}
