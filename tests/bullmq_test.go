package tests

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBullMQ runs BullMQ (npm bullmq, tests/clients/node), whose queue
// logic is Lua scripts over lists, sorted sets and hashes and whose events
// are a stream, against Cellar: its own Queue, Worker and QueueEvents with
// plain, bulk, delayed, prioritised, repeatable, retried and failing jobs;
// every result, every completed event and the queue's counts are checked
// by tests/clients/node/bullmq.js. tests/clients/node/bullmq_more.js goes
// on with flows, progress and logs, pause and resume, a rate limiter,
// deduplication, cleaning, a stalled job and metrics. Each script runs
// against a real redis-server first, so a failure says whether Cellar or
// the script is wrong.
func TestBullMQ(t *testing.T) {
	t.Parallel()
	node := needNodeModule(t, "bullmq")
	for _, name := range []string{"bullmq.js", "bullmq_more.js"} {
		script := filepath.Join("clients", "node", name)
		t.Run(name, func(t *testing.T) {
			t.Run("redis-server", func(t *testing.T) {
				runClientScript(t, startRedis(t), node, script)
			})
			t.Run("cellar", func(t *testing.T) {
				s := startServer(t)
				runClientScript(t, serverPort(t, s), node, script)
			})
		})
	}
}

// needNodeModule returns node's path, failing the test when node or the
// npm module is missing from tests/clients/node (scripts/deps.sh installs
// both; make test runs it).
func needNodeModule(t *testing.T, module string) string {
	t.Helper()
	node := needIORedis(t)
	if _, err := os.Stat(filepath.Join("clients", "node", "node_modules", module, "package.json")); err != nil {
		t.Fatalf("%s is not installed in tests/clients/node: run scripts/deps.sh (make test does): %v", module, err)
	}
	return node
}
