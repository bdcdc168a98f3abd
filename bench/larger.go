package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// largerCfg sizes the larger-than-memory scenario.
type largerCfg struct {
	maxMemory int // storage.max_memory, bytes
	valueSize int
	hot       int // requests of the hot client in each phase
}

// largerValue is the value size of the larger-than-memory scenario: large
// enough that the data set, not the per-key overhead, is what outgrows
// memory.
const largerValue = 1000

// larger runs Cellar with a small storage.max_memory over a data set four
// times that size: it loads the data set, then a hot client (GET and SET
// on 100 keys, one request at a time) runs alone and again beside cold
// traffic (random GETs and SETs over every key, four connections at
// pipeline 16); RSS is sampled all along; then Cellar is stopped and
// started again and every key is read back. Only Cellar runs: Redis
// cannot hold more than its memory.
func (r *runner) larger(ctx context.Context) []*table {
	lc := r.cfg.larger
	keys := 4 * lc.maxMemory / (len(keyName(0)) + lc.valueSize)
	sp := cellarSpec(r.peers, "cellar", "Cellar", "everysec")
	sp.env = []string{"CELLAR_STORAGE__MAX_MEMORY=" + strconv.Itoa(lc.maxMemory)}
	params := fmt.Sprintf("storage.max_memory %d MiB; %d keys of %d bytes (4× the bound); hot client: %d GET/SET on 100 keys at pipeline 1; cold traffic: random GET/SET over every key, 4 connections at pipeline 16; RSS sampled every 100 ms; one round",
		lc.maxMemory>>20, keys, lc.valueSize, lc.hot)
	rss := &table{
		ID: "larger-rss", Title: "Larger than memory: RSS", Params: params,
		Metric: "RSS KiB", Lower: true, Servers: []string{"cellar"}, Labels: map[string]string{"cellar": "Cellar"},
		Note: "Beside the peak, the row \"max_memory\" is the bound itself: their difference is what Cellar holds past the bound (page caches, what waits for a flush, Go's heap headroom).",
	}
	lat := &table{
		ID: "larger-hot", Title: "Larger than memory: hot client p99", Params: params,
		Metric: "µs", Lower: true, Servers: []string{"cellar"}, Labels: map[string]string{"cellar": "Cellar"},
		Note: "The hot client's p99 alone, and beside the cold traffic; the cold row's detail says whether every key read back after a restart.",
	}
	const (
		rowPeak  = "peak RSS"
		rowBound = "max_memory"
		rowAlone = "hot p99, alone"
		rowCold  = "hot p99, with cold traffic"
	)
	rss.row(rowPeak)
	rss.row(rowBound)
	lat.row(rowAlone)
	lat.row(rowCold)
	rss.add(rowBound, "cellar", sample{Status: statusOK, Value: float64(lc.maxMemory >> 10)})
	fail := func(what string, err error) []*table {
		smp := errSample(what, err)
		for _, row := range []string{rowPeak} {
			rss.add(row, "cellar", smp)
		}
		lat.add(rowAlone, "cellar", smp)
		lat.add(rowCold, "cellar", smp)
		rss.finish()
		lat.finish()
		return []*table{rss, lat}
	}
	r.log("larger: %d keys of %d bytes over a %d MiB bound", keys, lc.valueSize, lc.maxMemory>>20)
	s, err := startServer(sp, r.cfg.workDir)
	if err != nil {
		return fail("start", err)
	}
	defer func() {
		if s != nil {
			s.stop(r.cfg.keep)
		}
	}()
	stopSampling := sampleRSS(s.pid(), 100*time.Millisecond)
	if _, err := loadKeys(ctx, s.addr(), keys, lc.valueSize, 4); err != nil {
		stopSampling()
		return fail("load", err)
	}
	alone, err := hotP99(ctx, s.addr(), lc.hot, lc.valueSize)
	if err != nil {
		stopSampling()
		return fail("hot client", err)
	}
	lat.add(rowAlone, "cellar", sample{Status: statusOK, Value: alone})
	coldCtx, stopCold := context.WithCancel(ctx)
	var coldOps atomic.Int64
	coldErr := make(chan error, 4)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			coldErr <- coldTraffic(coldCtx, s.addr(), keys, lc.valueSize, uint64(w), &coldOps)
		}()
	}
	withCold, hotErr := hotP99(ctx, s.addr(), lc.hot, lc.valueSize)
	stopCold()
	wg.Wait()
	close(coldErr)
	peakKB := stopSampling()
	rss.add(rowPeak, "cellar", sample{Status: statusOK, Value: float64(peakKB),
		Detail: fmt.Sprintf("%.1f MiB past the bound", float64(peakKB-int64(lc.maxMemory>>10))/1024)})
	for e := range coldErr {
		if e != nil && hotErr == nil {
			hotErr = fmt.Errorf("cold traffic: %w", e)
		}
	}
	if hotErr != nil {
		lat.add(rowCold, "cellar", errSample("hot client beside cold traffic", hotErr))
	} else {
		smp := sample{Status: statusOK, Value: withCold}
		var detail string
		s, detail, err = readBackAll(ctx, s, keys, lc.valueSize)
		if err != nil {
			smp = errSample("read back after a restart", err)
		} else {
			smp.Detail = fmt.Sprintf("%d cold requests beside it; %s", coldOps.Load(), detail)
		}
		lat.add(rowCold, "cellar", smp)
	}
	r.log("  larger   peak RSS %.1f MiB (bound %d MiB); hot p99 %.0f µs alone, %.0f µs with cold traffic",
		float64(peakKB)/1024, lc.maxMemory>>20, alone, withCold)
	rss.finish()
	lat.finish()
	return []*table{rss, lat}
}

// hotP99 runs n requests (GET and SET in turn) on 100 hot keys, one at a
// time, and returns their p99 latency in µs.
func hotP99(ctx context.Context, addr string, n, size int) (float64, error) {
	c := newClient(addr, 1)
	defer c.Close()
	val := payload(size, 0)
	for i := 0; i < 100; i++ {
		if err := c.Set(ctx, "hot:"+strconv.Itoa(i), val, 0).Err(); err != nil {
			return 0, err
		}
	}
	took := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		k := "hot:" + strconv.Itoa(i%100)
		start := time.Now()
		var err error
		if i%2 == 0 {
			err = c.Set(ctx, k, val, 0).Err()
		} else {
			err = c.Get(ctx, k).Err()
		}
		if err != nil {
			return 0, err
		}
		took = append(took, float64(time.Since(start).Microseconds()))
	}
	return percentile(took, 99), nil
}

// coldTraffic sends random GETs and SETs over keys keys, 16 at a time,
// until ctx ends; SET writes each key's own payload again, so the read
// back after a restart still knows every value.
func coldTraffic(ctx context.Context, addr string, keys, size int, seed uint64, ops *atomic.Int64) error {
	c := newClient(addr, 1)
	defer c.Close()
	rng := rand.New(rand.NewPCG(seed, 7))
	for ctx.Err() == nil {
		pipe := c.Pipeline()
		for j := 0; j < 16; j++ {
			k := rng.IntN(keys)
			if j%4 == 0 {
				pipe.Set(ctx, keyName(k), payload(size, k), 0)
			} else {
				pipe.Get(ctx, keyName(k))
			}
		}
		cmds, err := pipe.Exec(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		for j, cmd := range cmds {
			if err := cmd.Err(); err != nil {
				return fmt.Errorf("command %d of a pipeline: %w", j, err)
			}
		}
		ops.Add(int64(len(cmds)))
	}
	return nil
}

// readBackAll stops s gracefully, starts it again on its directory and
// reads every key back, checking its value; it returns the restarted
// server.
func readBackAll(ctx context.Context, s *server, keys, size int) (*server, string, error) {
	s, err := restart(s)
	if err != nil {
		return nil, "", fmt.Errorf("restart: %w", err)
	}
	c := newClient(s.addr(), 1)
	defer c.Close()
	for i := 0; i < keys; i += 1000 {
		pipe := c.Pipeline()
		for k := i; k < min(i+1000, keys); k++ {
			pipe.Get(ctx, keyName(k))
		}
		cmds, _ := pipe.Exec(ctx)
		for j, cmd := range cmds {
			k := i + j
			got, err := cmd.(interface{ Result() (string, error) }).Result()
			if err != nil || got != string(payload(size, k)) {
				return s, "", fmt.Errorf("after the restart %s holds %d bytes (%v), want its %d", keyName(k), len(got), err, size)
			}
		}
	}
	return s, fmt.Sprintf("all %d keys read back after a restart", keys), nil
}

// largerPast is what Cellar may hold past storage.max_memory in the
// larger-than-memory scenario (docs/operations.md, "Memory"): SQLite's
// page caches (40 MiB at the defaults), what waits for a flush (up to the
// bound again), the process at start (about 24 MiB) and Go's heap
// headroom.
const largerPast = 160 << 20

// largerGoals are the larger-than-memory scenario's goals: peak RSS
// within the bound plus largerPast, the hot client's p99 beside the cold
// traffic within 2× its p99 alone, and every key read back after a
// restart (the cold row fails otherwise).
func largerGoals(cfg config, ts []*table) []goal {
	const group = "larger than memory"
	rssGoal := goal{Group: group, Goal: fmt.Sprintf("peak RSS / (storage.max_memory + %d MiB) ≤ 1×", largerPast>>20)}
	hotGoal := goal{Group: group, Goal: "hot client p99 beside cold traffic ≤ 2× alone, every key read back after a restart"}
	rss, lat := findTable(ts, "larger-rss"), findTable(ts, "larger-hot")
	if rss == nil || lat == nil {
		rssGoal.Status, rssGoal.Detail = goalNotMeasured, "scenario not run"
		hotGoal.Status, hotGoal.Detail = goalNotMeasured, "scenario not run"
		return []goal{rssGoal, hotGoal}
	}
	cellOf := func(t *table, test string) *cell {
		for _, r := range t.Rows {
			if r.Test == test {
				return r.Cells["cellar"]
			}
		}
		return nil
	}
	judge := func(g *goal, measured, limit float64, cells ...*cell) {
		for _, c := range cells {
			if c == nil || c.Status != statusOK {
				g.Status, g.Detail = statusFailed, "not measured"
				if c != nil {
					g.Status, g.Detail = c.Status, c.Detail
				}
				return
			}
		}
		g.Measured = &measured
		g.Status = goalMissed
		if measured <= limit {
			g.Status = goalMet
		}
	}
	peak, bound := cellOf(rss, "peak RSS"), cellOf(rss, "max_memory")
	if peak != nil && bound != nil {
		judge(&rssGoal, peak.Median*1024/(bound.Median*1024+largerPast), 1, peak, bound)
		rssGoal.Detail = fmt.Sprintf("peak %.0f MiB, bound %.0f MiB", peak.Median/1024, bound.Median/1024)
	} else {
		judge(&rssGoal, 0, 0, peak, bound)
	}
	alone, cold := cellOf(lat, "hot p99, alone"), cellOf(lat, "hot p99, with cold traffic")
	if alone != nil && cold != nil && alone.Median > 0 {
		judge(&hotGoal, cold.Median/alone.Median, 2, alone, cold)
	} else {
		judge(&hotGoal, 0, 0, alone, cold)
	}
	return []goal{rssGoal, hotGoal}
}
