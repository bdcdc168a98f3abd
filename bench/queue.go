package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

const queueKey = "bench:queue"

// queueRun is one producer/consumer run: producers LPUSH items that carry
// their send time, consumers BRPOP them and record push-to-pop latency.
// rate 0 pushes as fast as the server takes them (throughput); rate > 0
// paces all producers together at rate items/s (latency below capacity).
// The sample's Value is items/s from the first push to the last pop.
func queueRun(ctx context.Context, addr string, producers, consumers, items int, rate float64, stallAfter time.Duration) sample {
	setup := newClient(addr, 1)
	err := setup.Del(ctx, queueKey).Err()
	setup.Close()
	if err != nil {
		return errSample("DEL", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		consumed atomic.Int64
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	lats := make([][]float64, consumers)
	var wg sync.WaitGroup
	start := time.Now()
	var lastPop atomic.Int64 // unix nanos of the latest pop

	for p := 0; p < producers; p++ {
		n := items / producers
		if p < items%producers {
			n++
		}
		wg.Add(1)
		go func(p, n int) {
			defer wg.Done()
			c := newClient(addr, 1)
			defer c.Close()
			var interval time.Duration
			if rate > 0 {
				interval = time.Duration(float64(time.Second) * float64(producers) / rate)
			}
			pad := payload(64, p)
			buf := make([]byte, 0, 96)
			for i := 0; i < n; i++ {
				if interval > 0 {
					// Pacing, not synchronisation: send i is due at start + i*interval.
					if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
						select {
						case <-time.After(d):
						case <-ctx.Done():
							return
						}
					}
				}
				buf = strconv.AppendInt(buf[:0], time.Now().UnixNano(), 10)
				buf = append(buf, ':')
				buf = append(buf, pad[:max(0, 64-len(buf))]...)
				if err := c.LPush(ctx, queueKey, buf).Err(); err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					return
				}
			}
		}(p, n)
	}
	for k := 0; k < consumers; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			c := newClient(addr, 1)
			defer c.Close()
			for consumed.Load() < int64(items) && ctx.Err() == nil {
				res, err := c.BRPop(ctx, time.Second, queueKey).Result()
				if errors.Is(err, redis.Nil) {
					continue
				}
				if err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					return
				}
				now := time.Now()
				if len(res) != 2 {
					fail(fmt.Errorf("BRPOP replied %d elements", len(res)))
					return
				}
				sent, err := sentAt(res[1])
				if err != nil {
					fail(err)
					return
				}
				lats[k] = append(lats[k], float64(now.UnixNano()-sent)/1e6)
				lastPop.Store(now.UnixNano())
				consumed.Add(1)
			}
		}(k)
	}

	stalled := awaitProgress(&wg, &consumed, stallAfter, cancel)
	switch {
	case firstErr != nil:
		return errSample("queue", firstErr)
	case stalled:
		return sample{Status: statusStalled, Detail: fmt.Sprintf("no item popped for %s (%d of %d consumed)", stallAfter, consumed.Load(), items)}
	case consumed.Load() != int64(items):
		return sample{Status: statusFailed, Detail: fmt.Sprintf("%d of %d items consumed", consumed.Load(), items)}
	}
	var all []float64
	for _, l := range lats {
		all = append(all, l...)
	}
	elapsed := time.Duration(lastPop.Load() - start.UnixNano())
	return sample{
		Status: statusOK,
		Value:  float64(items) / elapsed.Seconds(),
		P50Ms:  percentile(all, 50),
		P99Ms:  percentile(all, 99),
		MaxMs:  percentile(all, 100),
	}
}

// sentAt reads the send time an item starts with ("<unix nanos>:…").
func sentAt(item string) (int64, error) {
	for i := 0; i < len(item); i++ {
		if item[i] == ':' {
			return strconv.ParseInt(item[:i], 10, 64)
		}
	}
	return 0, fmt.Errorf("queue item without a timestamp: %.20q", item)
}

// queue runs the producer/consumer scenario of issue 3 against Redis and
// Cellar, interleaved, one fresh pair of servers per round.
func (r *runner) queue(ctx context.Context) *table {
	specs := []serverSpec{specRedis(r.peers), specCellar(r.peers)}
	names, labels := specNames(specs)
	q := r.cfg.queue
	t := &table{
		ID: "queue", Title: "Queue: producers LPUSH, consumers BRPOP",
		Params: fmt.Sprintf("%d producers, %d consumers (go-redis, one connection each), 64-byte items carrying their send time; "+
			"saturated: %d items as fast as they go; paced: %d items/s for %d items",
			q.producers, q.consumers, q.items, int(q.rate), q.pacedItems),
		Metric:  "items/s",
		Servers: names, Labels: labels, Ratios: [][2]string{{"cellar", "redis"}},
		Note: "p50/p99 are push-to-pop latency (consumer's receipt time minus the time the producer sent the item). " +
			"Saturated latency includes time queued behind the backlog; the paced run measures latency below capacity.",
	}
	satName := "saturated"
	pacedName := fmt.Sprintf("paced %d/s", int(q.rate))
	for round := 0; round < r.cfg.rounds; round++ {
		if ctx.Err() != nil {
			break
		}
		r.log("queue round %d/%d", round+1, r.cfg.rounds)
		up, down := r.startAll(specs)
		for _, sp := range rotate(specs, round) {
			s := up[sp.Name]
			for _, ph := range []struct {
				name  string
				items int
				rate  float64
			}{{satName, q.items, 0}, {pacedName, q.pacedItems, q.rate}} {
				if ctx.Err() != nil {
					break
				}
				var smp sample
				if s == nil {
					smp = sample{Status: statusFailed, Detail: "server did not start: " + down[sp.Name]}
				} else {
					smp = queueRun(ctx, s.addr(), q.producers, q.consumers, ph.items, ph.rate, r.cfg.stallAfter)
				}
				r.log("  %-8s %-12s %-8s %s", t.ID, ph.name, sp.Name, describe(smp))
				t.add(ph.name, sp.Name, smp)
			}
		}
		r.stopAll(up)
	}
	t.finish()
	return t
}

// awaitProgress waits for wg while progress (a count of work done) keeps
// moving: a watchdog, not a deadline. If the count stands still for
// stallAfter, it cancels the run, waits for wg all the same and reports
// stalled.
func awaitProgress(wg *sync.WaitGroup, progress *atomic.Int64, stallAfter time.Duration, cancel context.CancelFunc) (stalled bool) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	last, lastChange := int64(-1), time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return false
		case now := <-tick.C:
			if n := progress.Load(); n != last {
				last, lastChange = n, now
			} else if now.Sub(lastChange) > stallAfter {
				cancel()
				<-done
				return true
			}
		}
	}
}
