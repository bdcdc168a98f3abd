package tests

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Real client libraries' transactions against Cellar, each a script under
// tests/clients run with the port of a fresh server: redis-py (Debian's
// python3-redis) and ioredis (npm, tests/clients/node) with their MULTI/EXEC
// forms and WATCH retry loops under contention, and the RQ job framework
// (Debian's python3-rq) running jobs with a burst worker. The tools are
// installed by scripts/deps.sh (make test runs it); a missing one fails the
// test, it never skips.

// debianPython is Debian's interpreter, under which Debian's Python
// packages are installed (python3 in PATH may be another one).
const debianPython = "/usr/bin/python3"

// runClientScript runs name with args and the server's port appended,
// requires exit status 0 and a last line starting with "ok", and logs it.
func runClientScript(t *testing.T, port string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, append(args, port)...)
	out, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	if err != nil || !strings.HasPrefix(last, "ok") {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	t.Log(last)
}

// needPythonModule fails the test unless Debian's python can import mod.
func needPythonModule(t *testing.T, mod, pkg string) {
	t.Helper()
	if err := exec.Command(debianPython, "-c", "import "+mod).Run(); err != nil {
		t.Fatalf("%s cannot import %s (Debian package %s): run scripts/deps.sh (make test does): %v", debianPython, mod, pkg, err)
	}
}

func serverPort(t *testing.T, s *testServer) string {
	t.Helper()
	_, port, err := net.SplitHostPort(s.addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func TestRedisPyTransactions(t *testing.T) {
	t.Parallel()
	needPythonModule(t, "redis", "python3-redis")
	s := startServer(t)
	runClientScript(t, serverPort(t, s), debianPython, filepath.Join("clients", "python", "transactions.py"))
}

func TestRQBurstWorker(t *testing.T) {
	t.Parallel()
	needPythonModule(t, "rq", "python3-rq")
	s := startServer(t)
	runClientScript(t, serverPort(t, s), debianPython, filepath.Join("clients", "python", "rq_jobs.py"))
}

func TestIORedisTransactions(t *testing.T) {
	t.Parallel()
	node := needIORedis(t)
	s := startServer(t)
	runClientScript(t, serverPort(t, s), node, filepath.Join("clients", "node", "transactions.js"))
}

func TestIORedisPubSub(t *testing.T) {
	t.Parallel()
	node := needIORedis(t)
	s := startServer(t)
	runClientScript(t, serverPort(t, s), node, filepath.Join("clients", "node", "pubsub.js"))
}

// TestIORedisOrder: ioredis's HGETALL object and SMEMBERS array come out
// in Redis's order for small hashes and integer sets.
func TestIORedisOrder(t *testing.T) {
	t.Parallel()
	node := needIORedis(t)
	s := startServer(t)
	runClientScript(t, serverPort(t, s), node, filepath.Join("clients", "node", "order.js"))
}

// needIORedis returns node's path, failing the test when node or ioredis
// is missing (scripts/deps.sh installs both; make test runs it).
func needIORedis(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed (Debian package nodejs): run scripts/deps.sh (make test does)")
	}
	if _, err := os.Stat(filepath.Join("clients", "node", "node_modules", "ioredis")); err != nil {
		t.Fatalf("ioredis is not installed in tests/clients/node: run scripts/deps.sh (make test does): %v", err)
	}
	return node
}
