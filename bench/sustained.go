package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// sustainedCfg sizes the sustained-write scenario.
type sustainedCfg struct {
	requests, keys int
}

// sustained writes far more than any buffer holds: redis-benchmark SETs
// over a large keyspace at pipeline 16, for long enough that flushes and
// checkpoints run many times over.
// It reports sustained ops/s and the peak RSS seen during the run (sampled
// every 100 ms), and then checks that Cellar's file is complete: after a
// graceful stop and a restart in the same directory, DBSIZE is what it was
// and a sample of keys (RANDOMKEY) still holds the same values.
func (r *runner) sustained(ctx context.Context) []*table {
	specs := []serverSpec{specRedis(r.peers), specCellar(r.peers)}
	names, labels := specNames(specs)
	sc := r.cfg.sustained
	params := fmt.Sprintf("redis-benchmark -t set -c %d -P 16 -r %d -d %d -n %d; one round",
		r.cfg.clients, sc.keys, r.cfg.dataSize, sc.requests)
	ops := &table{
		ID: "sustained", Title: "Sustained writes", Params: params,
		Metric: "ops/s", Servers: names, Labels: labels, Ratios: [][2]string{{"cellar", "redis"}},
		Note: "Cellar's cell also says whether its file was complete after a graceful stop and a restart: DBSIZE as before, and the keys of 100 RANDOMKEY calls holding the same values.",
	}
	rss := &table{
		ID: "sustained-rss", Title: "Sustained writes: peak RSS", Params: params,
		Metric: "RSS KiB", Lower: true, Servers: names, Labels: labels, Ratios: [][2]string{{"cellar", "redis"}},
	}
	row := fmt.Sprintf("SET, %d over %d keys", sc.requests, sc.keys)
	ops.row(row)
	rss.row(row)
	r.log("sustained: %s", row)
	for _, sp := range specs {
		if ctx.Err() != nil {
			break
		}
		s, err := startServer(sp, r.cfg.workDir)
		if err != nil {
			smp := sample{Status: statusFailed, Detail: "server did not start: " + err.Error()}
			ops.add(row, sp.Name, smp)
			rss.add(row, sp.Name, smp)
			continue
		}
		stopSampling := sampleRSS(s.pid(), 100*time.Millisecond)
		j := rbJob{
			Clients: r.cfg.clients, Requests: sc.requests, Pipeline: 16,
			Keyspace: sc.keys, DataSize: r.cfg.dataSize, Test: "set", Row: "SET",
		}
		smp := runBenchmark(ctx, r.peers.redisBenchmark, s.addr(), j, r.cfg.stallAfter, 30*time.Minute)
		peakKB := stopSampling()
		if smp.Status == statusOK && sp.Kind == "cellar" {
			s, smp = checkComplete(ctx, s, smp)
		}
		r.log("  sustained %-8s %s; peak RSS %.1f MiB", sp.Name, describe(smp), float64(peakKB)/1024)
		ops.add(row, sp.Name, smp)
		if peakKB > 0 {
			rss.add(row, sp.Name, sample{Status: statusOK, Value: float64(peakKB)})
		} else {
			rss.add(row, sp.Name, sample{Status: statusFailed, Detail: "no RSS sample"})
		}
		if s != nil {
			s.stop(r.cfg.keep)
		}
	}
	ops.finish()
	rss.finish()
	return []*table{ops, rss}
}

// sampleRSS polls pid's RSS every interval until the returned function is
// called, which returns the peak in KiB.
func sampleRSS(pid int, interval time.Duration) (stop func() int64) {
	var mu sync.Mutex
	var peak int64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if kb, err := rssKB(pid); err == nil {
				mu.Lock()
				peak = max(peak, kb)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// restart stops s gracefully and starts it again on its data directory.
func restart(s *server) (*server, error) {
	dir, spec := s.dir, s.spec
	s.stop(true)
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return launch(spec, port, dir)
}

// checkComplete stops s gracefully, starts it again on its data directory
// and compares DBSIZE and a sample of keys with what they were before. It
// returns the restarted server (nil if it did not start) and smp with the
// verdict: failed, or ok with the check in its detail.
func checkComplete(ctx context.Context, s *server, smp sample) (*server, sample) {
	c := newClient(s.addr(), 1)
	size, err := c.DBSize(ctx).Result()
	want := map[string]string{}
	for i := 0; err == nil && i < 100; i++ {
		var k string
		if k, err = c.RandomKey(ctx).Result(); err == nil {
			want[k], err = c.Get(ctx, k).Result()
		}
	}
	c.Close()
	if err != nil {
		return s, errSample("before the restart", err)
	}
	if s, err = restart(s); err != nil {
		return nil, sample{Status: statusFailed, Detail: "restart: " + err.Error()}
	}
	c = newClient(s.addr(), 1)
	defer c.Close()
	got, err := c.DBSize(ctx).Result()
	if err != nil || got != size {
		return s, sample{Status: statusFailed, Detail: fmt.Sprintf("after the restart DBSIZE is %d (%v), was %d", got, err, size)}
	}
	for k, v := range want {
		if g, err := c.Get(ctx, k).Result(); err != nil || g != v {
			return s, sample{Status: statusFailed, Detail: fmt.Sprintf("after the restart %s holds %q (%v), held %q", k, g, err, v)}
		}
	}
	smp.Detail = fmt.Sprintf("complete after a restart: DBSIZE %d, %d sampled keys hold their values", size, len(want))
	return s, smp
}
