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

// The replication figures of issues 16 and 33, for each pair of a master
// and a replica: Redis → Redis (the reference), Cellar → Cellar, Cellar →
// Redis and Redis → Cellar. The master holds N small keys and the replica
// is told REPLICAOF it. Measured: the back-fill's keys/s and MB/s (key and
// value bytes over the time from REPLICAOF to a replica that reports its
// link up, no sync in progress and DBSIZE N), then the follow lag while a
// paced writer SETs on the master: probes written to the master among the
// load and read back on the replica, p50/p99 from the probe's write to its
// first visible read. Then the master's write throughput (redis-benchmark
// SET) with two replicas of its own kind attached and with none, each on a
// fresh master.

// replCfg sizes the replication scenario.
type replCfg struct {
	keys   int           // keys on the master before REPLICAOF
	rate   int           // writes/s of the paced load during the follow
	follow time.Duration // how long the paced load runs
	writes int           // SETs of each write-throughput measurement
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

// replPair is a master and a replica of the scenario.
type replPair struct {
	name, label     string
	master, replica serverSpec
}

// replication runs the back-fill and the follow lag for every pair, and
// the write throughput of each kind of master with and without replicas;
// one fresh master and replica per round.
func (r *runner) replication(ctx context.Context) []*table {
	redis, cellar := specRedis(r.peers), specCellar(r.peers)
	// A Cellar replica full-syncs from a Cellar master by its SQLite
	// snapshot (the physical sync); this one asks for the RDB instead,
	// for the comparison of the two.
	cellarRDB := cellar
	cellarRDB.Name, cellarRDB.Label = "cellar-rdb", "Cellar (RDB sync)"
	cellarRDB.env = append(append([]string(nil), cellar.env...), "CELLAR_REPLICA__PHYSICAL_SYNC=false")
	pairs := []replPair{
		{"redis-redis", "Redis → Redis", redis, redis},
		{"cellar-cellar", "Cellar → Cellar", cellar, cellar},
		{"cellar-cellar-rdb", "Cellar → Cellar (RDB)", cellar, cellarRDB},
		{"cellar-redis", "Cellar → Redis", cellar, redis},
		{"redis-cellar", "Redis → Cellar", redis, cellar},
	}
	var names []string
	labels := map[string]string{}
	for _, p := range pairs {
		if p.master.bin == "" || p.replica.bin == "" {
			continue
		}
		names = append(names, p.name)
		labels[p.name] = p.label
	}
	rc := r.cfg.replication
	ratios := [][2]string{{"cellar-cellar", "redis-redis"}, {"cellar-cellar", "cellar-cellar-rdb"}, {"cellar-cellar-rdb", "redis-redis"}, {"cellar-redis", "redis-redis"}, {"redis-cellar", "redis-redis"}}
	load := &table{
		ID: "replication-load", Title: "Replication: back-fill of a REPLICAOF (full sync)",
		Params: fmt.Sprintf("a master (disk-less sync, no delay) holding %d keys of %d bytes; REPLICAOF until link up, no sync in progress, DBSIZE equal",
			rc.keys, r.cfg.dataSize),
		Metric: "keys/s", Servers: names, Labels: labels, Ratios: ratios,
		Note: "Columns are master → replica; the detail gives MB/s of key and value bytes.",
	}
	lag := &table{
		ID: "replication-lag", Title: "Replication: follow lag under a paced write load",
		Params: fmt.Sprintf("%d SETs/s paced on the master for %s, a probe every 10 ms (SET on the master, GET on the replica until seen)",
			rc.rate, rc.follow),
		Metric: "ms", Lower: true, Servers: names, Labels: labels, Ratios: ratios,
		Note: "Lag is from the probe's SET on the master to its first successful GET on the replica (two round trips of loopback included).",
	}
	loadRow := fmt.Sprintf("full sync, %d keys", rc.keys)
	p50Row, p99Row := fmt.Sprintf("follow p50, %d writes/s", rc.rate), fmt.Sprintf("follow p99, %d writes/s", rc.rate)
	for round := 0; round < r.cfg.rounds; round++ {
		for _, p := range rotate(pairs, round) {
			if ctx.Err() != nil || labels[p.name] == "" {
				continue
			}
			ls, fs := r.replicationOne(ctx, p, rc)
			r.log("  %-16s %-14s %.0f keys/s (%s); lag p50 %.3f ms p99 %.3f ms (%s)", load.ID, p.name, ls.Value, ls.Detail, fs.P50Ms, fs.P99Ms, fs.Detail)
			load.add(loadRow, p.name, ls)
			p50, p99 := fs, fs
			if fs.Status == statusOK {
				p50.Value, p99.Value = fs.P50Ms, fs.P99Ms
			}
			lag.add(p50Row, p.name, p50)
			lag.add(p99Row, p.name, p99)
		}
	}
	load.finish()
	lag.finish()
	return []*table{load, lag, r.replicationWrites(ctx, []serverSpec{redis, cellar}, rc)}
}

func (r *runner) replicationOne(ctx context.Context, p replPair, rc replCfg) (sample, sample) {
	m, err := startServer(p.master, r.cfg.workDir)
	if err != nil {
		s := sample{Status: statusFailed, Detail: "master did not start: " + err.Error()}
		return s, s
	}
	defer m.stop(r.cfg.keep)
	// No diskless-sync delay: Redis 7 (and Cellar) wait 5 s by default
	// for more replicas before a disk-less transfer, which would be most
	// of the back-fill's time.
	if err := configSet(ctx, m.addr(), "repl-diskless-sync-delay", "0"); err != nil {
		s := errSample("CONFIG SET on the master", err)
		return s, s
	}
	if _, err := loadKeys(ctx, m.addr(), rc.keys, r.cfg.dataSize, 4); err != nil {
		s := errSample("loading the master", err)
		return s, s
	}
	s, err := startServer(p.replica, r.cfg.workDir)
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

func configSet(ctx context.Context, addr, name, value string) error {
	c := newClient(addr, 1)
	defer c.Close()
	return c.ConfigSet(ctx, name, value).Err()
}

// replicationWrites measures each kind of master's SET throughput
// (redis-benchmark, 50 clients, pipeline 16) on a fresh master with no
// replica, and on a fresh master with two replicas of its own kind online
// throughout.
func (r *runner) replicationWrites(ctx context.Context, specs []serverSpec, rc replCfg) *table {
	var names []string
	labels := map[string]string{}
	var ratios [][2]string
	for _, sp := range specs {
		if sp.bin == "" {
			continue
		}
		none, two := sp.Name+"-0", sp.Name+"-2"
		names = append(names, none, two)
		labels[none], labels[two] = sp.Label+", no replica", sp.Label+", two replicas"
		ratios = append(ratios, [2]string{two, none})
	}
	t := &table{
		ID: "replication-writes", Title: "Replication: the master's write throughput with two replicas attached",
		Params: fmt.Sprintf("redis-benchmark SET, 50 clients, pipeline 16, %d requests over 100000 keys of %d bytes, on a fresh master; two replicas of the same kind online throughout, or none",
			rc.writes, r.cfg.dataSize),
		Metric: "ops/s", Servers: names, Labels: labels, Ratios: ratios,
		Note: "The ratios are each master with two replicas over the same master without.",
	}
	row := fmt.Sprintf("SET, %d requests", rc.writes)
	job := rbJob{Clients: 50, Requests: rc.writes, Pipeline: 16, Keyspace: 100000, DataSize: r.cfg.dataSize, Test: "set", Row: "SET"}
	for round := 0; round < r.cfg.rounds; round++ {
		for _, sp := range specs {
			if sp.bin == "" {
				continue
			}
			for _, n := range []int{0, 2} {
				if ctx.Err() != nil {
					break
				}
				smp := r.writesWithReplicas(ctx, sp, n, job)
				name := sp.Name + "-" + strconv.Itoa(n)
				r.log("  %-16s %-10s %.0f ops/s (%s)", t.ID, name, smp.Value, smp.Detail)
				t.add(row, name, smp)
			}
		}
	}
	t.finish()
	return t
}

func (r *runner) writesWithReplicas(ctx context.Context, sp serverSpec, n int, job rbJob) sample {
	m, err := startServer(sp, r.cfg.workDir)
	if err != nil {
		return sample{Status: statusFailed, Detail: "master did not start: " + err.Error()}
	}
	defer m.stop(r.cfg.keep)
	if err := configSet(ctx, m.addr(), "repl-diskless-sync-delay", "0"); err != nil {
		return errSample("CONFIG SET on the master", err)
	}
	host, port, _ := strings.Cut(m.addr(), ":")
	var replicas []*server
	defer func() {
		for _, s := range replicas {
			s.stop(r.cfg.keep)
		}
	}()
	for range n {
		s, err := startServer(sp, r.cfg.workDir)
		if err != nil {
			return sample{Status: statusFailed, Detail: "replica did not start: " + err.Error()}
		}
		replicas = append(replicas, s)
		c := newClient(s.addr(), 1)
		err = c.Do(ctx, "REPLICAOF", host, port).Err()
		c.Close()
		if err != nil {
			return errSample("REPLICAOF", err)
		}
	}
	if n > 0 {
		mc := newClient(m.addr(), 1)
		defer mc.Close()
		deadline := time.Now().Add(time.Minute)
		for {
			info, err := mc.Info(ctx, "replication").Result()
			if err != nil {
				return errSample("INFO", err)
			}
			if strings.Count(info, "state=online") == n {
				break
			}
			if time.Now().After(deadline) {
				return sample{Status: statusFailed, Detail: fmt.Sprintf("%d replicas not online after a minute", n)}
			}
			time.Sleep(10 * time.Millisecond) // polling INFO before the measurement starts
		}
	}
	smp := runBenchmark(ctx, r.peers.redisBenchmark, m.addr(), job, r.cfg.stallAfter, r.cfg.hardLimit)
	if smp.Status == statusOK && n > 0 {
		// The replicas must have followed: their offsets reach the master's.
		mc := newClient(m.addr(), 1)
		defer mc.Close()
		off := func(c *redis.Client) string {
			info, _ := c.Info(ctx, "replication").Result()
			for _, l := range strings.Split(info, "\r\n") {
				if v, ok := strings.CutPrefix(l, "master_repl_offset:"); ok {
					return v
				}
			}
			return ""
		}
		want := off(mc)
		deadline := time.Now().Add(time.Minute)
		for _, s := range replicas {
			rc := newClient(s.addr(), 1)
			for off(rc) != want && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond) // polling INFO after the measurement
			}
			got := off(rc)
			rc.Close()
			if got != want {
				return sample{Status: statusFailed, Detail: fmt.Sprintf("a replica at offset %s a minute after the load, the master at %s", got, want)}
			}
		}
		smp.Detail = strings.TrimPrefix(smp.Detail+"; both replicas reached the master's offset", "; ")
	}
	return smp
}
