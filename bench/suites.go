package main

import (
	"context"
	"fmt"
	"strings"
)

// testDef is one redis-benchmark test of the comparison.
type testDef struct {
	Name  string   // the row name in tables, and the CSV row prefix
	T     string   // redis-benchmark -t name, for a built-in test
	Cmd   []string // a custom command line instead
	Row   string   // the CSV row's name when it is not Name (redis-benchmark names a custom command's row by the command)
	Scale float64  // fraction of the base request count (slow tests run fewer)
	Write bool     // counts among the write goals
	Read  bool     // counts among the read goals
	// seed prepares the server before each run (custom tests); n is the
	// run's request count.
	seed func(ctx context.Context, addr string, n int) error
}

// allTests is redis-benchmark's own order: LPOP/RPOP follow LPUSH/RPUSH,
// SPOP follows SADD, ZPOPMIN follows ZADD, so pops find elements.
var allTests = []testDef{
	{Name: "PING_MBULK", T: "ping_mbulk", Scale: 1},
	{Name: "SET", T: "set", Scale: 1, Write: true},
	{Name: "GET", T: "get", Scale: 1, Read: true},
	{Name: "INCR", T: "incr", Scale: 1, Write: true},
	{Name: "LPUSH", T: "lpush", Scale: 1, Write: true},
	{Name: "RPUSH", T: "rpush", Scale: 1, Write: true},
	{Name: "LPOP", T: "lpop", Scale: 1, Write: true},
	{Name: "RPOP", T: "rpop", Scale: 1, Write: true},
	{Name: "SADD", T: "sadd", Scale: 1, Write: true},
	{Name: "HSET", T: "hset", Scale: 1, Write: true},
	{Name: "SPOP", T: "spop", Scale: 1, Write: true},
	{Name: "ZADD", T: "zadd", Scale: 1, Write: true},
	{Name: "ZPOPMIN", T: "zpopmin", Scale: 1, Write: true},
	{Name: "LRANGE_100", T: "lrange_100", Scale: 0.25, Read: true},
	{Name: "LRANGE_300", T: "lrange_300", Scale: 0.1, Read: true},
	{Name: "MSET", T: "mset", Scale: 0.5, Write: true},
	{
		Name: "ZRANGEBYSCORE", Cmd: []string{"ZRANGEBYSCORE", "bench:zset", "0", "100"}, Scale: 0.5, Read: true,
		seed: func(ctx context.Context, addr string, _ int) error { return seedSortedSet(ctx, addr, 1000) },
	},
	{Name: "XADD", Cmd: []string{"XADD", "bench:xadd", "*", "field", "value"}, Scale: 1, Write: true},
	{
		Name: "XRANGE_10", Row: "XRANGE", Cmd: []string{"XRANGE", "bench:xrange", "-", "+", "COUNT", "10"}, Scale: 0.5, Read: true,
		seed: func(ctx context.Context, addr string, _ int) error {
			return seedStream(ctx, addr, "bench:xrange", 1000, 64)
		},
	},
	{
		Name: "XRANGE_100", Row: "XRANGE", Cmd: []string{"XRANGE", "bench:xrange", "-", "+", "COUNT", "100"}, Scale: 0.25, Read: true,
		seed: func(ctx context.Context, addr string, _ int) error {
			return seedStream(ctx, addr, "bench:xrange", 1000, 64)
		},
	},
	{
		Name: "BRPOP", Cmd: []string{"BRPOP", "bench:brpop", "1"}, Scale: 0.5, Write: true,
		seed: func(ctx context.Context, addr string, n int) error { return seedList(ctx, addr, "bench:brpop", n, 64) },
	},
	// Scripting (issue 14): a fixed-window rate limiter, INCR and an
	// EXPIRE on the first hit, returning the count; by SHA1 and as a
	// function.
	{
		Name: "EVALSHA", Cmd: []string{"EVALSHA", rateLimiterSHA, "1", "bench:rl:__rand_int__", "60"}, Scale: 0.5,
		seed: func(ctx context.Context, addr string, _ int) error { return seedScript(ctx, addr, rateLimiterScript) },
	},
	{
		Name: "FCALL", Cmd: []string{"FCALL", "ratelimit", "1", "bench:rl:__rand_int__", "60"}, Scale: 0.5,
		seed: func(ctx context.Context, addr string, _ int) error {
			return seedFunction(ctx, addr, rateLimiterLibrary)
		},
	},
}

// The rate limiter of the scripting rows.
const (
	rateLimiterScript = "local n = redis.call('INCR', KEYS[1])\n" +
		"if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end\n" +
		"return n\n"
	rateLimiterSHA     = "c0ceb01921760b9f2f6aa3c6c8db8c48e2f9e53e" // checked by seedScript
	rateLimiterLibrary = "#!lua name=benchrl\n" +
		"redis.register_function('ratelimit', function(keys, args)\n" +
		"  local n = redis.call('INCR', keys[1])\n" +
		"  if n == 1 then redis.call('EXPIRE', keys[1], args[1]) end\n" +
		"  return n\n" +
		"end)\n"
)

var quickTests = []string{
	"PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP", "RPOP",
	"SADD", "HSET", "ZADD", "LRANGE_100", "MSET", "ZRANGEBYSCORE", "XADD", "XRANGE_10",
	"EVALSHA", "FCALL",
}

func findTest(name string) (testDef, bool) {
	for _, t := range allTests {
		if strings.EqualFold(t.Name, name) {
			return t, true
		}
	}
	return testDef{}, false
}

// runner holds what every scenario needs.
type runner struct {
	cfg   config
	peers *peers
	log   func(format string, a ...any)
}

// rotate returns xs rotated left by k: round r starts with server r mod n,
// so no server is always first (or always right after another).
func rotate[T any](xs []T, k int) []T {
	n := len(xs)
	if n == 0 {
		return xs
	}
	k %= n
	return append(append([]T(nil), xs[k:]...), xs[:k]...)
}

// startAll starts every spec; a server that fails to start is reported in
// the returned map and left out.
func (r *runner) startAll(specs []serverSpec) (map[string]*server, map[string]string) {
	up, down := map[string]*server{}, map[string]string{}
	for _, sp := range specs {
		s, err := startServer(sp, r.cfg.workDir)
		if err != nil {
			down[sp.Name] = err.Error()
			r.log("  %s did not start: %v", sp.Name, err)
			continue
		}
		up[sp.Name] = s
	}
	return up, down
}

func (r *runner) stopAll(up map[string]*server) {
	for _, s := range up {
		s.stop(r.cfg.keep)
	}
}

// benchOne runs one test against one server: seed, then redis-benchmark.
func (r *runner) benchOne(ctx context.Context, s *server, t testDef, clients, pipeline, requests int) sample {
	if t.seed != nil {
		if err := t.seed(ctx, s.addr(), requests); err != nil {
			return errSample("seeding", err)
		}
	}
	j := rbJob{
		Clients: clients, Requests: requests, Pipeline: pipeline,
		Keyspace: r.cfg.keyspace, DataSize: r.cfg.dataSize,
		Test: t.T, Command: t.Cmd, Row: orDefault(t.Row, t.Name),
	}
	return runBenchmark(ctx, r.peers.redisBenchmark, s.addr(), j, r.cfg.stallAfter, r.cfg.hardLimit)
}

// comparison is the default comparison: Redis (no persistence), Cellar
// (everysec), Redka, the chosen tests at each pipeline depth with 50
// clients, then SET and GET with many clients.
func (r *runner) comparison(ctx context.Context) []*table {
	specs := []serverSpec{specRedis(r.peers), specCellar(r.peers)}
	if r.peers.redka != "" {
		specs = append(specs, redkaSpec(r.peers))
	}
	names, labels := specNames(specs)
	pairs := [][2]string{{"cellar", "redis"}}
	if r.peers.redka != "" {
		pairs = append(pairs, [2]string{"cellar", "redka"})
	}
	var tables []*table
	byPipe := map[int]*table{}
	for _, p := range r.cfg.pipelines {
		t := &table{
			ID: fmt.Sprintf("p%d", p), Title: fmt.Sprintf("%d clients, pipeline %d", r.cfg.clients, p),
			Params:  fmt.Sprintf("redis-benchmark -c %d -P %d -r %d -d %d, -n %d × test scale", r.cfg.clients, p, r.cfg.keyspace, r.cfg.dataSize, r.requestsFor(p)),
			Metric:  "ops/s",
			Servers: names, Labels: labels, Ratios: pairs,
		}
		byPipe[p] = t
		tables = append(tables, t)
	}
	byClients := map[int]*table{}
	for _, c := range r.cfg.highClients {
		t := &table{
			ID: fmt.Sprintf("c%d", c), Title: fmt.Sprintf("%d clients, pipeline 1", c),
			Params:  fmt.Sprintf("redis-benchmark -c %d -P 1 -r %d -d %d -n %d", c, r.cfg.keyspace, r.cfg.dataSize, r.cfg.requests),
			Metric:  "ops/s",
			Servers: names, Labels: labels, Ratios: pairs,
		}
		byClients[c] = t
		tables = append(tables, t)
	}

	for round := 0; round < r.cfg.rounds; round++ {
		if ctx.Err() != nil {
			break
		}
		r.log("comparison round %d/%d", round+1, r.cfg.rounds)
		up, down := r.startAll(specs)
		order := rotate(specs, round)
		record := func(t *table, test string, run func(s *server) sample) {
			for _, sp := range order {
				if ctx.Err() != nil {
					return
				}
				s := up[sp.Name]
				var smp sample
				if s == nil {
					smp = sample{Status: statusFailed, Detail: "server did not start: " + down[sp.Name]}
				} else {
					smp = run(s)
				}
				r.log("  %-8s %-16s %-10s %s", t.ID, test, sp.Name, describe(smp))
				t.add(test, sp.Name, smp)
			}
		}
		for _, p := range r.cfg.pipelines {
			n := r.requestsFor(p)
			for _, td := range r.cfg.tests {
				req := max(int(float64(n)*td.Scale), 100)
				record(byPipe[p], td.Name, func(s *server) sample {
					return r.benchOne(ctx, s, td, r.cfg.clients, p, req)
				})
			}
		}
		for _, c := range r.cfg.highClients {
			for _, name := range []string{"SET", "GET"} {
				td, _ := findTest(name)
				record(byClients[c], name, func(s *server) sample {
					return r.benchOne(ctx, s, td, c, 1, r.cfg.requests)
				})
			}
		}
		r.stopAll(up)
	}
	for _, t := range tables {
		t.finish()
	}
	return tables
}

// requestsFor scales the request count with the pipeline depth so that a
// pipelined run lasts about as long as an unpipelined one.
func (r *runner) requestsFor(pipeline int) int {
	if pipeline <= 1 {
		return r.cfg.requests
	}
	return r.cfg.requests * r.cfg.pipeMult
}

// durability compares write throughput at equal durability promises:
// Cellar always vs Redis appendfsync always, Cellar everysec vs Redis
// appendfsync everysec, at each of cfg.durPipes (rows past pipeline 1 are
// named "TEST -P n" and get pipeMult times the requests).
func (r *runner) durability(ctx context.Context) *table {
	specs := []serverSpec{
		redisSpec(r.peers, "redis-aof-always", "Redis AOF always", "--appendonly", "yes", "--appendfsync", "always"),
		cellarSpec(r.peers, "cellar-always", "Cellar always", "always"),
		redisSpec(r.peers, "redis-aof-everysec", "Redis AOF everysec", "--appendonly", "yes", "--appendfsync", "everysec"),
		cellarSpec(r.peers, "cellar", "Cellar everysec", "everysec"),
	}
	names, labels := specNames(specs)
	t := &table{
		ID: "durability", Title: "Durable writes",
		Params:  fmt.Sprintf("redis-benchmark -c %d -r %d -d %d, -n %d at pipeline 1 (×%d pipelined), pipelines %s", r.cfg.clients, r.cfg.keyspace, r.cfg.dataSize, r.cfg.durRequests, r.cfg.pipeMult, joinInts(r.cfg.durPipes)),
		Metric:  "ops/s",
		Servers: names, Labels: labels,
		Ratios: [][2]string{{"cellar-always", "redis-aof-always"}, {"cellar", "redis-aof-everysec"}},
	}
	for round := 0; round < r.cfg.rounds; round++ {
		if ctx.Err() != nil {
			break
		}
		r.log("durability round %d/%d", round+1, r.cfg.rounds)
		up, down := r.startAll(specs)
		for _, p := range r.cfg.durPipes {
			n := r.cfg.durRequests
			if p > 1 {
				n *= r.cfg.pipeMult
			}
			for _, name := range r.cfg.durTests {
				td, _ := findTest(name)
				row := name
				if p > 1 {
					row = fmt.Sprintf("%s -P %d", name, p)
				}
				for _, sp := range rotate(specs, round) {
					if ctx.Err() != nil {
						break
					}
					var smp sample
					if s := up[sp.Name]; s == nil {
						smp = sample{Status: statusFailed, Detail: "server did not start: " + down[sp.Name]}
					} else {
						smp = r.benchOne(ctx, s, td, r.cfg.clients, p, n)
					}
					r.log("  %-10s %-12s %-18s %s", t.ID, row, sp.Name, describe(smp))
					t.add(row, sp.Name, smp)
				}
			}
		}
		r.stopAll(up)
	}
	t.finish()
	return t
}

func specNames(specs []serverSpec) ([]string, map[string]string) {
	var names []string
	labels := map[string]string{}
	for _, s := range specs {
		names = append(names, s.Name)
		labels[s.Name] = s.Label
	}
	return names, labels
}

// describe is one sample on one log line.
func describe(s sample) string {
	if s.Status != statusOK {
		return s.Status + ": " + s.Detail
	}
	if s.P99Ms > 0 {
		return fmt.Sprintf("%.0f/s  p50 %.3f ms  p99 %.3f ms", s.Value, s.P50Ms, s.P99Ms)
	}
	return fmt.Sprintf("%.0f", s.Value)
}
