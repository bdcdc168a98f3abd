package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// loadKeys sets key:00000000 … key:<n-1> to distinct size-byte values
// over conns pipelined connections, then checks that DBSIZE is exactly n.
func loadKeys(ctx context.Context, addr string, n, size, conns int) (time.Duration, error) {
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	per := (n + conns - 1) / conns
	for w := 0; w < conns; w++ {
		lo, hi := w*per, min((w+1)*per, n)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newClient(addr, 1)
			defer c.Close()
			const batch = 1000
			for i := lo; i < hi; i += batch {
				pipe := c.Pipeline()
				for k := i; k < min(i+batch, hi); k++ {
					pipe.Set(ctx, keyName(k), payload(size, k), 0)
				}
				cmds, err := pipe.Exec(ctx)
				if err != nil {
					errs <- err
					return
				}
				for _, cmd := range cmds {
					if err := cmd.Err(); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	took := time.Since(start)
	c := newClient(addr, 1)
	defer c.Close()
	got, err := c.DBSize(ctx).Result()
	if err != nil {
		return took, fmt.Errorf("DBSIZE: %w", err)
	}
	if got != int64(n) {
		return took, fmt.Errorf("DBSIZE is %d after loading %d keys", got, n)
	}
	return took, nil
}

func keyName(i int) string {
	s := strconv.Itoa(i)
	for len(s) < 8 {
		s = "0" + s
	}
	return "key:" + s
}

// memory loads the same keys into each server and reads its resident set
// size (VmRSS) before and after.
func (r *runner) memory(ctx context.Context) *table {
	n := r.cfg.memKeys
	specs := []serverSpec{specRedis(r.peers), specCellar(r.peers), quarterSpec(r.peers, n, r.cfg.dataSize)}
	pairs := [][2]string{{"cellar", "redis"}, {"cellar-quarter", "redis"}}
	if r.peers.redka != "" && !r.cfg.quick {
		specs = append(specs, redkaSpec(r.peers))
		pairs = append(pairs, [2]string{"cellar", "redka"})
	}
	names, labels := specNames(specs)
	t := &table{
		ID: "memory", Title: "Memory",
		Params: fmt.Sprintf("%d keys with distinct %d-byte values, loaded with pipelined SET (4 connections × 1000 per batch); "+
			"DBSIZE checked; VmRSS from /proc/PID/status right after the load and again after %v idle; one round", n, r.cfg.dataSize, memoryIdle),
		Metric: "RSS KiB", Lower: true,
		Servers: names, Labels: labels, Ratios: pairs,
	}
	emptyRow := "RSS at start"
	fullRow := fmt.Sprintf("RSS with %d keys", n)
	idleRow := fmt.Sprintf("RSS with %d keys, %v idle after the load", n, memoryIdle)
	t.row(fullRow)
	t.row(idleRow)
	t.row(emptyRow)
	r.log("memory: %d keys", n)
	for _, sp := range specs {
		if ctx.Err() != nil {
			break
		}
		s, err := startServer(sp, r.cfg.workDir)
		if err != nil {
			smp := sample{Status: statusFailed, Detail: "server did not start: " + err.Error()}
			t.add(emptyRow, sp.Name, smp)
			t.add(fullRow, sp.Name, smp)
			continue
		}
		if kb, err := rssKB(s.pid()); err == nil {
			t.add(emptyRow, sp.Name, sample{Status: statusOK, Value: float64(kb)})
		} else {
			t.add(emptyRow, sp.Name, sample{Status: statusFailed, Detail: err.Error()})
		}
		took, err := loadKeys(ctx, s.addr(), n, r.cfg.dataSize, 4)
		var smp sample
		if err != nil {
			smp = errSample("load", err)
		} else if kb, err := rssKB(s.pid()); err != nil {
			smp = sample{Status: statusFailed, Detail: err.Error()}
		} else {
			smp = sample{Status: statusOK, Value: float64(kb), Detail: fmt.Sprintf("loaded in %.1fs", took.Seconds())}
		}
		r.log("  memory   %-8s %s (%s)", sp.Name, describeKB(smp), smp.Detail)
		t.add(fullRow, sp.Name, smp)
		if err == nil {
			// What stays once the server idles: Go keeps a burst's garbage
			// until it collects (Cellar returns it when idle).
			time.Sleep(memoryIdle)
			if kb, err := rssKB(s.pid()); err == nil {
				t.add(idleRow, sp.Name, sample{Status: statusOK, Value: float64(kb)})
			} else {
				t.add(idleRow, sp.Name, sample{Status: statusFailed, Detail: err.Error()})
			}
		}
		s.stop(r.cfg.keep)
	}
	t.finish()
	return t
}

// memoryIdle is how long the memory scenario leaves a loaded server idle
// before it reads the RSS again.
const memoryIdle = 10 * time.Second

// quarterSpec is Cellar with storage.max_memory at a quarter of the data
// set the memory scenario loads (its names and values).
func quarterSpec(p *peers, keys, size int) serverSpec {
	sp := cellarSpec(p, "cellar-quarter", "Cellar, max_memory ¼ of the data", "everysec")
	sp.env = []string{"CELLAR_STORAGE__MAX_MEMORY=" + strconv.Itoa(quarterBytes(keys, size))}
	return sp
}

// quarterBytes is a quarter of keys names (keyName's 12 bytes) and values
// of size bytes.
func quarterBytes(keys, size int) int { return keys * (12 + size) / 4 }

func describeKB(s sample) string {
	if s.Status != statusOK {
		return s.Status + ": " + s.Detail
	}
	return fmt.Sprintf("%.1f MiB", s.Value/1024)
}
