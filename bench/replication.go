package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The replication figures of issue 16: a Redis master holding N small
// keys, and a replica (Cellar, or redis-server for comparison) told
// REPLICAOF it. Measured: the back-fill's keys/s and MB/s (key and value
// bytes over the time from REPLICAOF to a replica that reports its link up,
// no sync in progress and DBSIZE N), then the follow lag while a paced
// writer SETs on the master: probes written to the master among the load
// and read back on the replica, p50/p99 from the probe's write to its first
// visible read.

// replCfg sizes the replication scenario.
type replCfg struct {
	keys   int           // keys on the master before REPLICAOF
	rate   int           // writes/s of the paced load during the follow
	follow time.Duration // how long the paced load runs
}

// replLoad is one back-fill: master holds keys keys of size bytes; the
// replica at replica is told REPLICAOF and waited for.
func replLoad(ctx context.Context, master, replica string, keys, size int, stallAfter time.Duration) sample {
	host, port, _ := strings.Cut(master, ":")
	c := newClient(replica, 1)
	defer c.Close()
	start := time.Now()
	if err := c.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		return errSample("REPLICAOF", err)
	}
	last, lastN := time.Now(), int64(-1)
	for {
		if ctx.Err() != nil {
			return sample{Status: statusFailed, Detail: "interrupted"}
		}
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return errSample("INFO", err)
		}
		if strings.Contains(info, "master_link_status:up") && strings.Contains(info, "master_sync_in_progress:0") {
			n, err := c.DBSize(ctx).Result()
			if err != nil {
				return errSample("DBSIZE", err)
			}
			if n == int64(keys) {
				break
			}
			if n != lastN {
				last, lastN = time.Now(), n
			}
		}
		if time.Since(last) > stallAfter+time.Minute {
			return sample{Status: statusStalled, Detail: fmt.Sprintf("no progress for %s (DBSIZE %d of %d)", time.Since(last).Round(time.Second), lastN, keys)}
		}
		time.Sleep(5 * time.Millisecond) // polling INFO: the load's own pace sets the figure
	}
	took := time.Since(start)
	mb := float64(keys*(len(keyName(0))+size)) / 1e6
	return sample{Status: statusOK, Value: float64(keys) / took.Seconds(),
		Detail: fmt.Sprintf("%.1f MB/s of key and value bytes; %d keys in %s", mb/took.Seconds(), keys, took.Round(time.Millisecond))}
}

// replLag runs a paced load of rate SETs/s on master for d, with a probe
// every 10 ms: a SET of a fresh key on the master and GETs of it on the
// replica until it is there. The sample's value is the p99 lag in ms.
func replLag(ctx context.Context, master, replica string, rate int, d time.Duration, size int) sample {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		written  int64
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	start := time.Now()
	wg.Add(1)
	go func() { // the load: catch up to rate × elapsed every millisecond, 1000 at most per pipeline
		defer wg.Done()
		c := newClient(master, 1)
		defer c.Close()
		val := payload(size, 0)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var sent int64
		for ctx.Err() == nil {
			el := time.Since(start)
			if el >= d {
				break
			}
			want := int64(el.Seconds() * float64(rate))
			if n := min(want-sent, 1000); n > 0 {
				p := c.Pipeline()
				for i := int64(0); i < n; i++ {
					p.Set(ctx, "load:"+strconv.FormatInt((sent+i)%100000, 10), val, 0)
				}
				if _, err := p.Exec(ctx); err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					return
				}
				sent += n
			}
			<-tick.C
		}
		mu.Lock()
		written = sent
		mu.Unlock()
	}()
	var lats []float64
	wg.Add(1)
	go func() { // the probes
		defer wg.Done()
		mc, rc := newClient(master, 1), newClient(replica, 1)
		defer mc.Close()
		defer rc.Close()
		for i := 0; ctx.Err() == nil && time.Since(start) < d; i++ {
			k := "probe:" + strconv.Itoa(i)
			t0 := time.Now()
			if err := mc.Set(ctx, k, "1", 0).Err(); err != nil {
				fail(err)
				return
			}
			for {
				err := rc.Get(ctx, k).Err()
				if err == nil {
					break
				}
				if err != redis.Nil {
					fail(err)
					return
				}
				if time.Since(t0) > time.Minute {
					fail(fmt.Errorf("probe %s not on the replica after a minute", k))
					return
				}
			}
			lats = append(lats, float64(time.Since(t0).Microseconds())/1000)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	wg.Wait()
	if firstErr != nil {
		return errSample("follow", firstErr)
	}
	if len(lats) == 0 {
		return sample{Status: statusFailed, Detail: "no probe completed"}
	}
	p99 := percentile(lats, 99)
	return sample{Status: statusOK, Value: p99, P50Ms: percentile(lats, 50), P99Ms: p99, MaxMs: percentile(lats, 100),
		Detail: fmt.Sprintf("%d probes; %.0f writes/s paced on the master", len(lats), float64(written)/d.Seconds())}
}

// replication runs the back-fill and the follow lag with Cellar and, for
// comparison, redis-server as the replica of a fresh Redis master, one
// fresh master and replica per round.
func (r *runner) replication(ctx context.Context) []*table {
	specs := []serverSpec{specRedis(r.peers), specCellar(r.peers)}
	names, labels := specNames(specs)
	rc := r.cfg.replication
	load := &table{
		ID: "replication-load", Title: "Replication: back-fill of a REPLICAOF (full sync)",
		Params: fmt.Sprintf("a Redis master (disk-less sync, no delay) holding %d keys of %d bytes; REPLICAOF until link up, no sync in progress, DBSIZE equal",
			rc.keys, r.cfg.dataSize),
		Metric: "keys/s", Servers: names, Labels: labels, Ratios: [][2]string{{"cellar", "redis"}},
		Note: "The replica column names the server following the master; the detail gives MB/s of key and value bytes.",
	}
	lag := &table{
		ID: "replication-lag", Title: "Replication: follow lag under a paced write load",
		Params: fmt.Sprintf("%d SETs/s paced on the master for %s, a probe every 10 ms (SET on the master, GET on the replica until seen)",
			rc.rate, rc.follow),
		Metric: "p99 ms", Lower: true, Servers: names, Labels: labels, Ratios: [][2]string{{"cellar", "redis"}},
		Note: "Lag is from the probe's SET on the master to its first successful GET on the replica (two round trips of loopback included).",
	}
	loadRow := fmt.Sprintf("full sync, %d keys", rc.keys)
	lagRow := fmt.Sprintf("follow, %d writes/s", rc.rate)
	// No diskless-sync delay: Redis 7 waits 5 s by default for more
	// replicas before a disk-less transfer, which would be most of the
	// back-fill's time.
	master := redisSpec(r.peers, "redis-master", "Redis master", "--appendonly", "no", "--repl-diskless-sync-delay", "0")
	for round := 0; round < r.cfg.rounds; round++ {
		for _, sp := range rotate(specs, round) {
			if ctx.Err() != nil {
				break
			}
			ls, fs := r.replicationOne(ctx, master, sp, rc)
			r.log("  %-16s %-8s %.0f keys/s (%s); lag p50 %.3f ms p99 %.3f ms (%s)", load.ID, sp.Name, ls.Value, ls.Detail, fs.P50Ms, fs.P99Ms, fs.Detail)
			load.add(loadRow, sp.Name, ls)
			lag.add(lagRow, sp.Name, fs)
		}
	}
	load.finish()
	lag.finish()
	return []*table{load, lag}
}

func (r *runner) replicationOne(ctx context.Context, masterSpec, sp serverSpec, rc replCfg) (sample, sample) {
	m, err := startServer(masterSpec, r.cfg.workDir)
	if err != nil {
		s := sample{Status: statusFailed, Detail: "master did not start: " + err.Error()}
		return s, s
	}
	defer m.stop(r.cfg.keep)
	if _, err := loadKeys(ctx, m.addr(), rc.keys, r.cfg.dataSize, 4); err != nil {
		s := errSample("loading the master", err)
		return s, s
	}
	s, err := startServer(sp, r.cfg.workDir)
	if err != nil {
		smp := sample{Status: statusFailed, Detail: "replica did not start: " + err.Error()}
		return smp, smp
	}
	defer s.stop(r.cfg.keep)
	ls := replLoad(ctx, m.addr(), s.addr(), rc.keys, r.cfg.dataSize, r.cfg.stallAfter)
	if ls.Status != statusOK {
		return ls, sample{Status: statusFailed, Detail: "no back-fill"}
	}
	return ls, replLag(ctx, m.addr(), s.addr(), rc.rate, rc.follow, r.cfg.dataSize)
}
