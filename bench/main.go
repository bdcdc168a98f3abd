package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// queueCfg sizes the producer/consumer scenario.
type queueCfg struct {
	producers, consumers int
	items                int     // saturated run
	rate                 float64 // paced run, items/s
	pacedItems           int
}

// floodCfg sizes the flood scenario.
type floodCfg struct {
	conns, perConn, size int
}

// config is one run's settings, from flags and the mode's defaults.
type config struct {
	quick       bool
	rounds      int
	requests    int
	pipeMult    int
	clients     int
	keyspace    int
	dataSize    int
	pipelines   []int
	highClients []int
	tests       []testDef
	durTests    []string
	durRequests int
	durPipes    []int
	queue       queueCfg
	fanout      fanoutCfg
	group       groupCfg
	memKeys     int
	flood       floodCfg
	sustained   sustainedCfg
	larger      largerCfg
	replication replCfg
	scenarios   map[string]bool
	redka       string
	cellarBin   string
	repo        string
	workDir     string
	outDir      string
	outName     string
	stallAfter  time.Duration
	hardLimit   time.Duration
	keep        bool
	argv        []string
	render      string // -render: only rewrite the report of an earlier run
}

func (c config) command() string {
	if c.quick {
		return strings.TrimSpace("make bench-quick " + benchArgs(c.argv))
	}
	return strings.TrimSpace("make bench " + benchArgs(c.argv))
}

// argsOf is command's inverse: the arguments a recorded command ran with,
// false when the command is not one command() writes.
func argsOf(command string) ([]string, bool) {
	var args []string
	rest, ok := strings.CutPrefix(command, "make bench-quick")
	if ok {
		args = append(args, "-quick")
	} else if rest, ok = strings.CutPrefix(command, "make bench"); !ok {
		return nil, false
	}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return args, true
	}
	quoted, ok := strings.CutPrefix(rest, "BENCH_ARGS='")
	if !ok || !strings.HasSuffix(quoted, "'") {
		return nil, false
	}
	return append(args, strings.Fields(strings.TrimSuffix(quoted, "'"))...), true
}

func benchArgs(argv []string) string {
	var rest []string
	for _, a := range argv {
		if a != "-quick" && a != "--quick" {
			rest = append(rest, a)
		}
	}
	if len(rest) == 0 {
		return ""
	}
	return "BENCH_ARGS='" + strings.Join(rest, " ") + "'"
}

var allScenarios = []string{"comparison", "durability", "queue", "streams", "fanout", "memory", "flood", "sustained", "larger", "replication"}

func parseConfig(args []string) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./bench [flags]   (make bench, make bench-quick, BENCH_ARGS='…')\n\n"+
			"Runs redis-benchmark suites and Cellar's own scenarios against Redis, Cellar and Redka\n"+
			"on this machine, interleaved, and writes ratios to bench/results/.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	quick := fs.Bool("quick", false, "short run for CI-friendly time: 1 round, fewer requests and tests, no high-concurrency runs, Redka only if already built")
	rounds := fs.Int("rounds", 0, "rounds per benchmark (default 3; quick 1)")
	requests := fs.Int("n", 0, "requests per test at pipeline 1, scaled per test (default 50000; quick 10000)")
	pipeMult := fs.Int("pipe-mult", 0, "request multiplier for pipelined runs, so they last long enough to measure (default 2)")
	clients := fs.Int("c", 50, "clients for the main comparison")
	keyspace := fs.Int("r", 100000, "redis-benchmark -r (random keyspace)")
	dataSize := fs.Int("d", 64, "value size in bytes")
	pipelines := fs.String("pipelines", "1,16", "pipeline depths of the main comparison")
	high := fs.String("high", "", "client counts for the SET/GET high-concurrency runs (default 500,1000; quick none)")
	tests := fs.String("tests", "", "comma-separated tests of the main comparison (default all; quick a subset): "+testNames())
	scen := fs.String("scenarios", strings.Join(allScenarios, ","), "scenarios to run: "+strings.Join(allScenarios, ","))
	durTests := fs.String("dur-tests", "", "write tests of the durability comparison (default SET,INCR,LPUSH,HSET; quick SET)")
	durN := fs.Int("dur-n", 0, "requests per durability test at pipeline 1 (default 20000; quick 5000; ×pipe-mult pipelined)")
	durPipes := fs.String("dur-pipelines", "1,16", "pipeline depths of the durability comparison (its goal is stated at pipeline 1)")
	qItems := fs.Int("queue-items", 0, "items in the saturated queue run (default 50000; quick 10000)")
	qRate := fs.Float64("queue-rate", 2000, "items/s of the paced queue run")
	qPaced := fs.Int("queue-paced-items", 0, "items in the paced queue run (default 10000; quick 4000)")
	fanSubs := fs.String("fanout-subs", "1,100,1000", "subscriber counts of the fan-out scenario")
	fanN := fs.Int("fanout-n", 0, "messages delivered per fan-out run (default 1000000; quick 200000)")
	fanWindow := fs.Int("fanout-window", 16, "PUBLISH commands the fan-out publisher keeps in flight")
	groupN := fs.Int("group-entries", 0, "entries of the consumer-group scenario (default 40000; quick 8000)")
	memKeys := fs.Int("mem-keys", 0, "keys loaded for the memory comparison (default 1000000; quick 200000)")
	floodConns := fs.Int("flood-conns", 0, "connections of the flood scenario (default 1000; quick 200)")
	susN := fs.Int("sustained-n", 0, "SETs of the sustained scenario (default 10000000; quick 1000000)")
	susKeys := fs.Int("sustained-keys", 0, "keyspace of the sustained scenario (default 2000000; quick 200000)")
	largerMem := fs.Int("larger-max-memory", 0, "storage.max_memory of the larger-than-memory scenario, MiB (default 64; quick 16); the data set is four times it")
	largerHot := fs.Int("larger-hot", 0, "requests of the larger-than-memory scenario's hot client per phase (default 20000; quick 5000)")
	replKeys := fs.Int("repl-keys", 0, "keys the master holds for the replication back-fill (default 1000000; quick 100000)")
	replRate := fs.Int("repl-rate", 20000, "writes/s paced on the master while the replication lag is measured")
	replFollow := fs.Duration("repl-follow", 0, "how long the replication lag is measured (default 20s; quick 5s)")
	replWrites := fs.Int("repl-writes", 0, "SETs of each measurement of the master's write throughput with and without replicas (default 1000000; quick 200000)")
	floodN := fs.Int("flood-n", 0, "SETs each flood connection writes without reading (default 200; quick 50)")
	redka := fs.String("redka", "auto", "Redka: auto (full run builds it if missing; quick uses it only if built), build, off")
	cellarBin := fs.String("cellar", "", "Cellar binary to measure (default: build this checkout into the work dir)")
	workDir := fs.String("work", "", "work directory (default <repo>/bench/work)")
	outDir := fs.String("out", "", "results directory (default <repo>/bench/results)")
	outName := fs.String("name", "", "results file name without extension (default latest; quick: quick)")
	stall := fs.Duration("stall", 20*time.Second, "kill a benchmark that receives no reply for this long and report it stalled")
	limit := fs.Duration("limit", 10*time.Minute, "kill a single benchmark that runs longer than this")
	keep := fs.Bool("keep", false, "keep the servers' data directories")
	renderFrom := fs.String("render", "", "rewrite the report (.md, .png) of an earlier run from its .json, its goals evaluated anew by this code")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *renderFrom != "" {
		return config{render: *renderFrom}, nil
	}
	q := *quick
	pick := func(v, full, short int) int {
		if v > 0 {
			return v
		}
		if q {
			return short
		}
		return full
	}
	cfg := config{
		quick:       q,
		rounds:      pick(*rounds, 3, 1),
		requests:    pick(*requests, 50000, 10000),
		pipeMult:    pick(*pipeMult, 2, 2),
		clients:     *clients,
		keyspace:    *keyspace,
		dataSize:    *dataSize,
		durRequests: pick(*durN, 20000, 5000),
		memKeys:     pick(*memKeys, 1_000_000, 200_000),
		flood:       floodCfg{conns: pick(*floodConns, 1000, 200), perConn: pick(*floodN, 200, 50), size: 1024},
		replication: replCfg{keys: pick(*replKeys, 1_000_000, 100_000), rate: max(*replRate, 1), follow: *replFollow, writes: pick(*replWrites, 1_000_000, 200_000)},
		sustained:   sustainedCfg{requests: pick(*susN, 10_000_000, 1_000_000), keys: pick(*susKeys, 2_000_000, 200_000)},
		larger:      largerCfg{maxMemory: pick(*largerMem, 64, 16) << 20, valueSize: largerValue, hot: pick(*largerHot, 20_000, 5_000)},
		queue: queueCfg{
			producers: 8, consumers: 8,
			items:      pick(*qItems, 50000, 10000),
			rate:       *qRate,
			pacedItems: pick(*qPaced, 10000, 4000),
		},
		fanout:     fanoutCfg{deliveries: pick(*fanN, 1_000_000, 200_000), window: max(*fanWindow, 1)},
		group:      groupCfg{producers: 4, consumers: 4, entries: pick(*groupN, 40000, 8000)},
		redka:      *redka,
		cellarBin:  *cellarBin,
		stallAfter: *stall,
		hardLimit:  *limit,
		keep:       *keep,
		argv:       args,
	}
	if cfg.replication.follow <= 0 {
		cfg.replication.follow = 20 * time.Second
		if q {
			cfg.replication.follow = 5 * time.Second
		}
	}
	var err error
	if cfg.pipelines, err = intList(*pipelines); err != nil || len(cfg.pipelines) == 0 {
		return cfg, fmt.Errorf("-pipelines %q: want a comma-separated list of numbers", *pipelines)
	}
	if cfg.durPipes, err = intList(*durPipes); err != nil || len(cfg.durPipes) == 0 {
		return cfg, fmt.Errorf("-dur-pipelines %q: want a comma-separated list of numbers", *durPipes)
	}
	highDefault := "500,1000"
	if q {
		highDefault = ""
	}
	if *high != "" {
		highDefault = *high
	}
	if cfg.fanout.subscribers, err = intList(*fanSubs); err != nil || len(cfg.fanout.subscribers) == 0 {
		return cfg, fmt.Errorf("-fanout-subs %q: want a comma-separated list of numbers", *fanSubs)
	}
	if cfg.highClients, err = intList(highDefault); err != nil {
		return cfg, fmt.Errorf("-high %q: %v", *high, err)
	}
	names := *tests
	if names == "" && q {
		names = strings.Join(quickTests, ",")
	}
	if names == "" {
		cfg.tests = allTests
	} else {
		for _, n := range splitList(names) {
			td, ok := findTest(n)
			if !ok {
				return cfg, fmt.Errorf("-tests: unknown test %q (known: %s)", n, testNames())
			}
			cfg.tests = append(cfg.tests, td)
		}
	}
	dt := *durTests
	if dt == "" {
		dt = "SET,INCR,LPUSH,HSET"
		if q {
			dt = "SET"
		}
	}
	for _, n := range splitList(dt) {
		td, ok := findTest(n)
		if !ok || td.T == "" {
			return cfg, fmt.Errorf("-dur-tests: %q is not a built-in redis-benchmark test", n)
		}
		cfg.durTests = append(cfg.durTests, td.Name)
	}
	cfg.scenarios = map[string]bool{}
	for _, s := range splitList(*scen) {
		known := false
		for _, k := range allScenarios {
			known = known || k == s
		}
		if !known {
			return cfg, fmt.Errorf("-scenarios: unknown scenario %q", s)
		}
		cfg.scenarios[s] = true
	}
	switch cfg.redka {
	case "auto", "build", "off":
	default:
		return cfg, fmt.Errorf("-redka %q: want auto, build or off", cfg.redka)
	}
	if cfg.repo, err = findRepo(); err != nil {
		return cfg, err
	}
	cfg.workDir = orDefault(*workDir, filepath.Join(cfg.repo, "bench", "work"))
	cfg.outDir = orDefault(*outDir, filepath.Join(cfg.repo, "bench", "results"))
	cfg.outName = *outName
	if cfg.outName == "" {
		cfg.outName = "latest"
		if q {
			cfg.outName = "quick"
		}
	}
	if cfg.workDir, err = filepath.Abs(cfg.workDir); err != nil {
		return cfg, err
	}
	if cfg.outDir, err = filepath.Abs(cfg.outDir); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func orDefault(v, d string) string {
	if v != "" {
		return v
	}
	return d
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func testNames() string {
	var n []string
	for _, t := range allTests {
		n = append(n, t.Name)
	}
	return strings.Join(n, ",")
}

// findRepo walks up from the working directory to Cellar's go.mod.
func findRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/cellar-db/cellar\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("bench: run me inside Cellar's repository (no go.mod of github.com/cellar-db/cellar above the working directory)")
		}
		dir = parent
	}
}

func main() {
	cfg, err := parseConfig(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if cfg.render != "" {
		if err := render(cfg.render); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "bench: interrupted; stopping servers (again to kill them at once)")
		cancel()
		<-sigs
		procs.killAll()
		os.Exit(130)
	}()
	code := run(ctx, cfg)
	procs.killAll() // nothing started here outlives the run
	os.Exit(code)
}

func run(ctx context.Context, cfg config) (code int) {
	defer func() {
		if p := recover(); p != nil {
			procs.killAll()
			panic(p)
		}
	}()
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
	}
	start := time.Now()
	for _, d := range []string{cfg.workDir, cfg.outDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	}
	// Data directories left by an earlier run that was killed hard.
	os.RemoveAll(filepath.Join(cfg.workDir, "data"))
	p, err := findPeers(cfg, logf)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r := &runner{cfg: cfg, peers: p, log: logf}
	res := &results{
		Generated: time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		Command:   cfg.command(),
		Mode:      map[bool]string{true: "quick", false: "full"}[cfg.quick],
		Rounds:    cfg.rounds,
		Machine:   describeMachine(cfg, p),
	}
	logf("machine: %d cores, %s; %s; Cellar %s; Redka: %s", res.Machine.Cores, res.Machine.Model, res.Machine.Redis, res.Machine.Cellar, res.Machine.Redka)
	if p.redka == "" {
		res.Notes = append(res.Notes, "Redka was not run: "+p.redkaNote)
	}
	res.Settings = []string{
		fmt.Sprintf("Redis runs with `--save '' --appendonly no` in the main comparison; Cellar with `--durability everysec` (its default) and Redka on disk, each with a fresh data directory per round under bench/work/"),
		fmt.Sprintf("redis-benchmark: -c %d -r %d -d %d, -n %d per test at pipeline 1 (×%d pipelined%s), single-threaded client", cfg.clients, cfg.keyspace, cfg.dataSize, cfg.requests, cfg.pipeMult, scaleNote(cfg.tests)),
		fmt.Sprintf("a benchmark that receives no reply for %s is killed and reported stalled", cfg.stallAfter),
	}

	if cfg.scenarios["comparison"] {
		res.Tables = append(res.Tables, r.comparison(ctx)...)
	}
	if cfg.scenarios["durability"] && ctx.Err() == nil {
		res.Tables = append(res.Tables, r.durability(ctx))
	}
	if cfg.scenarios["queue"] && ctx.Err() == nil {
		res.Tables = append(res.Tables, r.queue(ctx))
	}
	if cfg.scenarios["streams"] && ctx.Err() == nil {
		res.Tables = append(res.Tables, r.streams(ctx))
	}
	if cfg.scenarios["fanout"] && ctx.Err() == nil {
		res.Tables = append(res.Tables, r.fanout(ctx))
	}
	if cfg.scenarios["memory"] && ctx.Err() == nil {
		res.Tables = append(res.Tables, r.memory(ctx))
	}
	if cfg.scenarios["flood"] && ctx.Err() == nil {
		res.Tables = append(res.Tables, r.flood(ctx))
	}
	if cfg.scenarios["sustained"] && ctx.Err() == nil {
		res.Tables = append(res.Tables, r.sustained(ctx)...)
	}
	if cfg.scenarios["larger"] && ctx.Err() == nil {
		res.Tables = append(res.Tables, r.larger(ctx)...)
	}
	if cfg.scenarios["replication"] && ctx.Err() == nil {
		res.Tables = append(res.Tables, r.replication(ctx)...)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "bench: interrupted; no results written")
		return 130
	}
	res.Goals = append(evaluateGoals(cfg, res.Tables), largerGoals(cfg, res.Tables)...)
	res.Duration = time.Since(start).Round(time.Second).String()

	md, js, png := outPaths(cfg)
	if cfg.scenarios["comparison"] {
		if err := writeChart(png, res); err != nil {
			logf("chart: %v", err)
			res.Notes = append(res.Notes, "no chart: "+err.Error())
		} else {
			res.Chart = filepath.Base(png)
		}
	}
	if err := writeJSON(js, res); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if err := writeMarkdown(md, res); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	logf("done in %s: %s, %s%s", res.Duration, md, js, map[bool]string{true: ", " + png, false: ""}[res.Chart != ""])
	met, missed, other := 0, 0, 0
	for _, g := range res.Goals {
		switch g.Status {
		case goalMet:
			met++
		case goalMissed:
			missed++
		default:
			other++
		}
	}
	logf("goals: %d met, %d missed, %d not measurable (unsupported, failed or not run)", met, missed, other)
	return 0
}

// scaleNote lists the tests that run a fraction of the base request count.
func scaleNote(tests []testDef) string {
	var parts []string
	for _, t := range tests {
		if t.Scale != 1 {
			parts = append(parts, fmt.Sprintf("%s ×%g", t.Name, t.Scale))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

// joinInts is intList's inverse: "1,16".
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
