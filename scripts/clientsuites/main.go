// Command clientsuites runs client libraries' own test suites against a
// throw-away redis-server and against Cellar, and writes the side-by-side
// result to tests/results/client-suites.md (make client-suites).
//
// go-redis: its module zip, fetched through the Go module proxy at the
// version go.mod requires, carries its Ginkgo specs. They run in the
// package's "Redis Enterprise" mode (RE_CLUSTER=true with an endpoints file
// naming the server), the mode its main_test.go offers for a single
// external server: it skips the start-up of the ring, sentinel and cluster
// servers the other specs need. Those specs, the TLS ones and the ones for
// Redis modules are excluded by name, the same way for both servers.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// goRedisSkip excludes, by container name (Ginkgo matches the text with
// the suite's name in front), the specs that need servers other
// than one standalone Redis (cluster, ring, sentinel, TLS), Redis modules
// (search, JSON, time series, probabilistic, vector sets) or Redis 8
// commands, and benchmarks.
const goRedisSkip = `^go-redis (Redis Ring|empty Redis Ring|Ring |ClusterClient|cluster races|newClusterState|Command Tips tests|` +
	`NewFailoverClusterClient|Sentinel|SentinelAclAuth|UniversalClient|TLS|` +
	`RediSearch|FT\.|Go-Redis Advanced JSON|JSON Commands|RedisTimeseries|TS\.QUERYLABELS|Probabilistic commands|` +
	`Redis VectorSet|Array Commands|HIMPORT|HotKeys Commands)`

// goRedisVersion is what main_test.go reads to skip specs for newer servers.
const goRedisVersion = "7.0"

// goRedisSeed fixes Ginkgo's spec order (it shuffles the top-level
// containers by a seed taken from the clock): both servers meet the specs
// in the same order, so a spec that fails on one and passes on the other
// does so for what the server answers, not for the specs run before it.
const goRedisSeed = 1

func main() {
	out := flag.String("out", "tests/results/client-suites.md", "results file")
	work := flag.String("work", "", "work directory (default: a fresh temporary one, removed afterwards)")
	rerun := flag.String("rerun", "redis,cellar", "servers to run the suites against; the others' results are read back from -work")
	flag.Parse()
	if err := run(*out, *work, *rerun); err != nil {
		fmt.Fprintln(os.Stderr, "client-suites:", err)
		os.Exit(1)
	}
}

func run(out, work, rerun string) error {
	if work == "" {
		dir, err := os.MkdirTemp("", "client-suites")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		work = dir
	}
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redis-server is not installed: run scripts/deps.sh")
	}
	redisVersion, _ := exec.Command(redisBin, "--version").Output()

	cellarBin := filepath.Join(work, "cellar-server")
	if err := runCmd("", nil, "go", "build", "-o", cellarBin, "./cmd/cellar"); err != nil {
		return err
	}
	version, err := output("go", "list", "-m", "-f", "{{.Version}}", "github.com/redis/go-redis/v9")
	if err != nil {
		return err
	}
	suite, err := fetchModule("github.com/redis/go-redis/v9", version, filepath.Join(work, "go-redis"))
	if err != nil {
		return err
	}
	// One test binary for both runs; run directly, it streams its output.
	testBin := filepath.Join(work, "go-redis.test")
	if err := runCmd(suite, nil, "go", "test", "-c", "-o", testBin, "."); err != nil {
		return err
	}

	servers := []struct {
		name  string
		start func(port int, dir string) *exec.Cmd
	}{
		{"redis", func(port int, dir string) *exec.Cmd {
			return exec.Command(redisBin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "",
				"--appendonly", "no", "--dir", dir, "--daemonize", "no")
		}},
		{"cellar", func(port int, dir string) *exec.Cmd {
			return exec.Command(cellarBin, "--port", fmt.Sprint(port), "--dir", dir, "--loglevel", "warn")
		}},
	}
	results := map[string]map[string]spec{}
	for _, s := range servers {
		dir := filepath.Join(work, "run-"+s.name)
		if !strings.Contains(","+rerun+",", ","+s.name+",") {
			specs, err := readGinkgoReport(filepath.Join(dir, "ginkgo.json"))
			if err != nil {
				return fmt.Errorf("%s not rerun and no earlier result: %w", s.name, err)
			}
			results[s.name] = specs
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		port, err := freePort()
		if err != nil {
			return err
		}
		cmd := s.start(port, dir)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			return err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if err := waitPing(addr, 20*time.Second); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Fprintf(os.Stderr, "client-suites: go-redis %s against %s on %s\n", version, s.name, addr)
		specs, err := runGoRedis(testBin, suite, dir, port)
		cmd.Process.Kill()
		cmd.Wait()
		if err != nil {
			return fmt.Errorf("go-redis against %s: %w", s.name, err)
		}
		results[s.name] = specs
	}
	report := writeReport(version, strings.TrimSpace(string(redisVersion)), results["redis"], results["cellar"])
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, []byte(report), 0o644)
}

// fetchModule downloads a module through the module proxy and copies it to
// dst, writable (the module cache is read-only).
func fetchModule(path, version, dst string) (string, error) {
	js, err := output("go", "mod", "download", "-json", path+"@"+version)
	if err != nil {
		return "", err
	}
	var m struct{ Dir string }
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		return "", err
	}
	err = filepath.WalkDir(m.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(m.Dir, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	return dst, err
}

// spec is one Ginkgo spec's outcome.
type spec struct {
	State   string
	Message string
}

// runGoRedis runs go-redis's Ginkgo suite against the server on port and
// returns every spec's outcome by its full name.
func runGoRedis(testBin, suite, dir string, port int) (map[string]spec, error) {
	endpoints := filepath.Join(dir, "endpoints.json")
	cfg := fmt.Sprintf(`{"standalone":{"raw_endpoints":[{"dns_name":"127.0.0.1","port":%d}]}}`, port)
	if err := os.WriteFile(endpoints, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	jsonReport := filepath.Join(dir, "ginkgo.json")
	env := []string{"RE_CLUSTER=true", "REDIS_ENDPOINTS_CONFIG_PATH=" + endpoints, "REDIS_VERSION=" + goRedisVersion}
	// The suite fails when a spec fails; the report tells which.
	runCmd(suite, env, testBin, "-test.run", "^TestGinkgoSuite$", "-test.timeout", "60m",
		"-ginkgo.skip="+goRedisSkip, "-ginkgo.seed="+strconv.Itoa(goRedisSeed), "-ginkgo.json-report="+jsonReport, "-ginkgo.no-color", "-ginkgo.timeout", "50m")
	return readGinkgoReport(jsonReport)
}

// readGinkgoReport reads a Ginkgo JSON report: every spec's outcome by its
// full name.
func readGinkgoReport(path string) (map[string]spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no Ginkgo report (did the suite build?): %w", err)
	}
	var reports []struct {
		SpecReports []struct {
			ContainerHierarchyTexts []string
			LeafNodeText            string
			LeafNodeType            string
			State                   string
			Failure                 struct{ Message string }
		}
	}
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, err
	}
	specs := map[string]spec{}
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if s.LeafNodeType != "It" {
				continue
			}
			name := strings.Join(append(s.ContainerHierarchyTexts, s.LeafNodeText), " / ")
			for i := 2; ; i++ { // the same text twice (table entries)
				if _, dup := specs[name]; !dup {
					break
				}
				name = fmt.Sprintf("%s (#%d)", strings.Join(append(s.ContainerHierarchyTexts, s.LeafNodeText), " / "), i)
			}
			specs[name] = spec{State: s.State, Message: s.Failure.Message}
		}
	}
	return specs, nil
}

// families maps the commands of the families Cellar does not have yet to
// the issue that adds them.
var families = []struct {
	issue    int
	what     string
	commands string
}{
	{14, "scripting", "eval evalsha eval_ro evalsha_ro script function fcall fcall_ro"},
	{15, "streams", "xadd xrange xrevrange xlen xread xreadgroup xgroup xack xpending xclaim xautoclaim xinfo xdel xtrim xsetid"},
	{16, "replication", "replicaof slaveof wait failover psync sync role"},
	{17, "bitmaps/HLL/geo/SORT/DUMP", "setbit getbit bitcount bitpos bitop bitfield bitfield_ro pfadd pfcount pfmerge " +
		"geoadd geodist geohash geopos georadius georadiusbymember georadius_ro georadiusbymember_ro geosearch geosearchstore " +
		"sort sort_ro dump restore migrate"},
	{18, "ACL/admin", "acl monitor debug slowlog latency memory module lastsave bgrewriteaof swapdb failover shutdown"},
	{19, "FT.*", "ft.search ft.create ft.info ft.aggregate"},
}

var unknownCmd = regexp.MustCompile(`unknown command '([^']+)'`)

// knownCauses explains, by spec name, failures whose message does not name
// their cause (checked by hand against the spec's source).
var knownCauses = map[string]string{
	"Commands / server / should filter commands by pattern": "expects GETBIT among the names matching *GET* (bitmaps, issue 17)",
	"Commands / server / Should CommandGetKeys":             "asks the keys of SORT, which Cellar does not have yet (issue 17)",
	"Commands / hashes / should HKeys":                      "field order: Cellar returns its storage order, Redis a small hash's insertion order (docs/commands.md, the hashes row)",
	"Commands / hashes / should HVals":                      "field order: Cellar returns its storage order, Redis a small hash's insertion order (docs/commands.md, the hashes row)",
	"Commands / lists / should LCS":                         "missing command LCS (bitmaps/HLL/geo/SORT/DUMP/LCS, issue 17)",
}

// trackingMissing is the skip message of the specs that need CLIENT
// TRACKING.
const trackingMissing = "CLIENT TRACKING is unavailable"

// reason makes a one-line reason of a failure message, naming the issue
// when the message is an unknown command of a family still missing.
func reason(msg string) string {
	line := strings.TrimSpace(msg)
	if strings.Contains(line, trackingMissing) {
		return "needs CLIENT TRACKING (client-side caching; not in main yet)"
	}
	if m := unknownCmd.FindStringSubmatch(line); m != nil {
		name := strings.ToLower(m[1])
		for _, f := range families {
			for _, c := range strings.Fields(f.commands) {
				if c == name {
					return fmt.Sprintf("missing command %s (%s, issue %d)", strings.ToUpper(name), f.what, f.issue)
				}
			}
		}
		return "missing command " + strings.ToUpper(name)
	}
	sc := bufio.NewScanner(strings.NewReader(line))
	var parts []string
	for sc.Scan() && len(parts) < 6 {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			parts = append(parts, t)
		}
	}
	r := strings.Join(parts, " ")
	if len(r) > 200 {
		r = r[:200] + "…"
	}
	return strings.ReplaceAll(r, "|", `\|`)
}

func count(specs map[string]spec) (passed, failed, skipped int) {
	for _, s := range specs {
		switch s.State {
		case "passed":
			passed++
		case "skipped", "pending":
			skipped++
		default:
			failed++
		}
	}
	return
}

func writeReport(version, redisVersion string, redis, cellar map[string]spec) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Client libraries' test suites against Redis and Cellar\n\n")
	fmt.Fprintf(&b, "Written by `make client-suites` (scripts/clientsuites) on %s. Do not edit by hand.\n\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "## go-redis %s\n\n", version)
	fmt.Fprintf(&b, "Its Ginkgo specs (root package), run with RE_CLUSTER=true (one external server), REDIS_VERSION=%s, "+
		"`-ginkgo.seed=%d` and `-ginkgo.skip='%s'` (cluster, ring, sentinel, TLS, modules, Redis 8 commands) for both servers. "+
		"Redis: %s.\n\n", goRedisVersion, goRedisSeed, goRedisSkip, redisVersion)
	rp, rf, rs := count(redis)
	cp, cf, cs := count(cellar)
	fmt.Fprintf(&b, "| | Redis | Cellar |\n|---|---:|---:|\n")
	fmt.Fprintf(&b, "| passed | %d | %d |\n| failed | %d | %d |\n| skipped | %d | %d |\n\n", rp, cp, rf, cf, rs, cs)

	var names []string
	for n, s := range redis {
		if s.State == "passed" && cellar[n].State != "passed" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "### Specs that pass on Redis and fail on Cellar (%d)\n\n", len(names))
	if len(names) == 0 {
		b.WriteString("None.\n")
	}
	for _, n := range names {
		c, ok := cellar[n]
		why := "not run against Cellar"
		if ok {
			why = c.State + ": " + reason(c.Message)
		}
		if cause, known := knownCauses[n]; known && ok {
			why = c.State + ": " + cause
		}
		fmt.Fprintf(&b, "- %s — %s\n", n, why)
	}
	var extra []string
	for n, s := range cellar {
		if s.State == "passed" && redis[n].State != "passed" {
			extra = append(extra, n)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		fmt.Fprintf(&b, "\n### Specs that pass on Cellar and not on Redis (%d)\n\n", len(extra))
		for _, n := range extra {
			fmt.Fprintf(&b, "- %s (Redis: %s)\n", n, redis[n].State)
		}
	}
	b.WriteString(nodeNote)
	return b.String()
}

// nodeNote says why the Node.js clients' suites are not run (checked with
// npm pack --dry-run on ioredis 6.0.0, redis 6.3.1 and @redis/client 6.3.1).
const nodeNote = `
## node-redis and ioredis

Not run: neither ships its tests in its npm package. ` + "`ioredis`" + ` publishes
only built/ (its test/ directory is not in the package); ` + "`redis`" + ` (node-redis)
and ` + "`@redis/client`" + ` publish only dist/, without the *.spec.ts files, which
live in the GitHub repository and need its test-utils (they start Redis in
Docker). Running them would mean fetching the repositories, outside the
package registries the CI may reach.
`

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitPing(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.SetDeadline(time.Now().Add(time.Second))
			c.Write([]byte("PING\r\n"))
			line, err := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if err == nil && line == "+PONG\r\n" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PONG from %s within %s", addr, timeout)
		}
		time.Sleep(50 * time.Millisecond) // polling a starting process
	}
}

func runCmd(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

func output(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	return strings.TrimSpace(string(out)), err
}
