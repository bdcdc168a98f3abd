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

// The consumer-group pipeline of issue 15: producers XADD entries that
// carry their send time to one stream; consumers of one group read with
// XREADGROUP BLOCK and XACK what they got. Measured: entries/s from the
// first XADD to the last acknowledged read, and produce-to-consume
// latency.

const groupStream = "bench:xgroup"

// groupCfg sizes the consumer-group scenario.
type groupCfg struct {
	producers, consumers, entries int
}

// seedStream makes key a stream of exactly n entries of size-byte values.
func seedStream(ctx context.Context, addr, key string, n, size int) error {
	c := newClient(addr, 1)
	defer c.Close()
	if err := c.Del(ctx, key).Err(); err != nil {
		return err
	}
	val := payload(size, 0)
	const batch = 1000
	for i := 0; i < n; i += batch {
		p := c.Pipeline()
		for j := i; j < min(i+batch, n); j++ {
			p.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: strconv.Itoa(j+1) + "-0", Values: []any{"f", val}})
		}
		if _, err := p.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// groupRun is one run of the pipeline.
func groupRun(ctx context.Context, addr string, g groupCfg, stallAfter time.Duration) sample {
	setup := newClient(addr, 1)
	err := setup.Del(ctx, groupStream).Err()
	if err == nil {
		err = setup.XGroupCreateMkStream(ctx, groupStream, "g", "$").Err()
	}
	setup.Close()
	if err != nil {
		return errSample("XGROUP CREATE", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		consumed atomic.Int64
		errOnce  sync.Once
		firstErr error
		lastRead atomic.Int64
	)
	fail := func(err error) { errOnce.Do(func() { firstErr = err; cancel() }) }
	lats := make([][]float64, g.consumers)
	var wg sync.WaitGroup
	start := time.Now()
	for p := 0; p < g.producers; p++ {
		n := g.entries / g.producers
		if p < g.entries%g.producers {
			n++
		}
		wg.Add(1)
		go func(p, n int) {
			defer wg.Done()
			c := newClient(addr, 1)
			defer c.Close()
			pad := payload(48, p)
			for i := 0; i < n; i++ {
				sent := strconv.FormatInt(time.Now().UnixNano(), 10)
				if err := c.XAdd(ctx, &redis.XAddArgs{Stream: groupStream, Values: []any{"t", sent, "p", pad}}).Err(); err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					return
				}
			}
		}(p, n)
	}
	for k := 0; k < g.consumers; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			c := newClient(addr, 1)
			defer c.Close()
			name := "c" + strconv.Itoa(k)
			for consumed.Load() < int64(g.entries) && ctx.Err() == nil {
				res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: name,
					Streams: []string{groupStream, ">"}, Count: 10, Block: time.Second}).Result()
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
				var ids []string
				for _, st := range res {
					for _, m := range st.Messages {
						t, _ := m.Values["t"].(string)
						sent, err := strconv.ParseInt(t, 10, 64)
						if err != nil {
							fail(fmt.Errorf("entry %s without a send time", m.ID))
							return
						}
						lats[k] = append(lats[k], float64(now.UnixNano()-sent)/1e6)
						ids = append(ids, m.ID)
					}
				}
				if len(ids) == 0 {
					continue
				}
				if err := c.XAck(ctx, groupStream, "g", ids...).Err(); err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					return
				}
				lastRead.Store(time.Now().UnixNano())
				consumed.Add(int64(len(ids)))
			}
		}(k)
	}
	stalled := awaitProgress(&wg, &consumed, stallAfter, cancel)
	switch {
	case firstErr != nil:
		return errSample("consumer group", firstErr)
	case stalled:
		return sample{Status: statusStalled, Detail: fmt.Sprintf("no entry read for %s (%d of %d)", stallAfter, consumed.Load(), g.entries)}
	case consumed.Load() != int64(g.entries):
		return sample{Status: statusFailed, Detail: fmt.Sprintf("%d of %d entries read", consumed.Load(), g.entries)}
	}
	var all []float64
	for _, l := range lats {
		all = append(all, l...)
	}
	elapsed := time.Duration(lastRead.Load() - start.UnixNano())
	return sample{Status: statusOK, Value: float64(g.entries) / elapsed.Seconds(),
		P50Ms: percentile(all, 50), P99Ms: percentile(all, 99), MaxMs: percentile(all, 100)}
}

// streams runs the consumer-group scenario against Redis and Cellar,
// interleaved, one fresh pair of servers per round.
func (r *runner) streams(ctx context.Context) *table {
	specs := []serverSpec{specRedis(r.peers), specCellar(r.peers)}
	names, labels := specNames(specs)
	g := r.cfg.group
	t := &table{
		ID: "xgroup", Title: "Streams: producers XADD, a consumer group XREADGROUP BLOCK + XACK",
		Params: fmt.Sprintf("%d producers, %d consumers of one group (go-redis, one connection each), %d entries carrying their send time, COUNT 10",
			g.producers, g.consumers, g.entries),
		Metric:  "entries/s",
		Servers: names, Labels: labels, Ratios: [][2]string{{"cellar", "redis"}},
		Note: "p50/p99 are produce-to-consume latency (the consumer's receipt time minus the producer's send time).",
	}
	const row = "consumer group"
	for round := 0; round < r.cfg.rounds; round++ {
		if ctx.Err() != nil {
			break
		}
		r.log("streams round %d/%d", round+1, r.cfg.rounds)
		up, down := r.startAll(specs)
		for _, sp := range rotate(specs, round) {
			if ctx.Err() != nil {
				break
			}
			var smp sample
			if s := up[sp.Name]; s == nil {
				smp = sample{Status: statusFailed, Detail: "server did not start: " + down[sp.Name]}
			} else {
				smp = groupRun(ctx, s.addr(), g, r.cfg.stallAfter)
			}
			r.log("  %-8s %-14s %-8s %s", t.ID, row, sp.Name, describe(smp))
			t.add(row, sp.Name, smp)
		}
		r.stopAll(up)
	}
	t.finish()
	return t
}
