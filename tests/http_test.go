package tests

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/wait"
)

// withHTTP turns the HTTP port on, on a free loopback port.
func withHTTP(c *cellar.Config) {
	c.HTTP.Enabled = true
	c.HTTP.Port = 0
}

// httpGet returns the status and body of GET url.
func httpGet(t testing.TB, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// TestHTTPPortOffByDefault: no HTTP port unless enabled, and on loopback
// when enabled.
func TestHTTPPortOffByDefault(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	if a := s.srv.HTTPAddr(); a != nil {
		t.Fatalf("HTTP port on by default at %v", a)
	}
	def := cellar.DefaultConfig()
	if def.HTTP.Enabled || def.HTTP.Bind != "127.0.0.1" {
		t.Fatalf("defaults: %+v", def.HTTP)
	}
}

// TestMetricsEndpoint scrapes /metrics after some traffic: the INFO
// counters, per-command counters and histograms, the fsync/flush
// histograms, the offload pool, in Prometheus's text format as promtool
// checks it.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	s := startServer(t, withHTTP, func(c *cellar.Config) { c.Durability = "always" })
	needCellar(t, s)
	c := s.client()
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		c.Set(ctx, "k", i, 0)
		c.Get(ctx, "k")
	}
	c.Do(ctx, "NOSUCH")
	base := "http://" + s.srv.HTTPAddr().String()
	code, body := httpGet(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	for _, want := range []string{
		"# TYPE cellar_connected_clients gauge",
		"# TYPE cellar_commands_processed_total counter",
		`cellar_command_calls_total{command="set"} 50`,
		`cellar_command_duration_seconds_count{command="get"} 50`,
		`cellar_command_duration_seconds_bucket{command="get",le="+Inf"} 50`,
		"# TYPE cellar_fsync_duration_seconds histogram",
		"# TYPE cellar_flush_duration_seconds histogram",
		"# TYPE cellar_offload_tasks_rejected_total counter",
		`cellar_errors_total{code="ERR"} `,
		`cellar_keys{db="0"} 1`,
		"cellar_writable 1",
		"cellar_ready 1",
		"cellar_fsync_failed 0",
		"# TYPE cellar_evicted_clients_total counter",
		"# TYPE cellar_flush_lag_seconds gauge",
		"go_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !strings.Contains(body, "cellar_fsyncs_total ") || strings.Contains(body, "cellar_fsync_duration_seconds_count 0\n") {
		t.Errorf("with durability always, fsyncs were not timed:\n%s", grepLines(body, "fsync"))
	}
	promtool := lookTool(t, "promtool", "prometheus")
	f := filepath.Join(t.TempDir(), "metrics.txt")
	os.WriteFile(f, []byte(body), 0o644)
	cmd := exec.Command("sh", "-c", promtool+" check metrics < "+f)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// lookTool finds a program that scripts/deps.sh installs from the named
// Debian package (also in /usr/sbin, which a user's PATH may lack); the
// test fails when it is not installed.
func lookTool(t testing.TB, name, pkg string) string {
	t.Helper()
	for _, p := range []string{name, "/usr/sbin/" + name, "/usr/bin/" + name} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Fatalf("%s is not installed (Debian package %s): run scripts/deps.sh (make test does)", name, pkg)
	return ""
}

// TestHealthAndReadiness: /healthz answers while the actor answers and
// fails while a script holds it; /readyz turns 503 on Drain (what SIGTERM
// does first) while the server still serves clients; pprof only when
// enabled.
func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	s := startServer(t, withHTTP, func(c *cellar.Config) { c.HTTP.HealthTimeout = 200 * time.Millisecond })
	needCellar(t, s)
	base := "http://" + s.srv.HTTPAddr().String()
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := httpGet(t, base+path); code != 200 || body != "ok\n" {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	if code, _ := httpGet(t, base+"/debug/pprof/"); code != 404 {
		t.Errorf("/debug/pprof/ without pprof: %d", code)
	}

	// A script that holds the actor until killed: /healthz fails.
	r := s.raw()
	r.send(encode("EVAL", "while true do end", "0"))
	wait.For(t, 10*time.Second, "the script to run", func() bool { busy, _ := s.srv.Scripts().Busy(); return busy })
	if code, body := httpGet(t, base+"/healthz"); code != 503 {
		t.Errorf("/healthz while a script holds the actor: %d %q", code, body)
	}
	s.raw().expect("+OK\r\n", "SCRIPT", "KILL")
	r.read()
	wait.For(t, 10*time.Second, "/healthz to recover", func() bool { code, _ := httpGet(t, base+"/healthz"); return code == 200 })

	s.srv.Drain()
	if code, body := httpGet(t, base+"/readyz"); code != 503 || !strings.Contains(body, "shutting down") {
		t.Errorf("/readyz after Drain: %d %q", code, body)
	}
	if code, _ := httpGet(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz after Drain: %d", code)
	}
	s.raw().expect("+PONG\r\n", "PING") // still serving while draining

	p := startServer(t, withHTTP, func(c *cellar.Config) { c.HTTP.Pprof = true })
	if code, _ := httpGet(t, "http://"+p.srv.HTTPAddr().String()+"/debug/pprof/"); code != 200 {
		t.Errorf("/debug/pprof/ with pprof: %d", code)
	}
}
