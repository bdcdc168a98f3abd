package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestReplicationScenario runs the replication scenario's two
// measurements with redis-server as master and replica, at tiny sizes: a
// back-fill that ends with every key on the replica, and a follow whose
// probes all arrive. No timing asserted.
func TestReplicationScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	redisServer, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (make deps)")
	}
	t.Cleanup(procs.killAll)
	ctx := context.Background()
	work := t.TempDir()
	p := &peers{redisServer: redisServer}
	m, err := startServer(redisSpec(p, "master", "Redis master"), work)
	if err != nil {
		t.Fatal(err)
	}
	defer m.stop(false)
	if _, err := loadKeys(ctx, m.addr(), 3000, 16, 2); err != nil {
		t.Fatal(err)
	}
	s, err := startServer(redisSpec(p, "replica", "Redis replica"), work)
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop(false)
	ls := replLoad(ctx, m.addr(), s.addr(), 3000, 16, 20*time.Second)
	if ls.Status != statusOK || ls.Value <= 0 || !strings.Contains(ls.Detail, "3000 keys") {
		t.Fatalf("back-fill: %+v", ls)
	}
	fs := replLag(ctx, m.addr(), s.addr(), 2000, time.Second, 16)
	if fs.Status != statusOK || fs.P99Ms <= 0 || !strings.Contains(fs.Detail, "probes") {
		t.Fatalf("follow: %+v", fs)
	}
	c := newClient(s.addr(), 1)
	defer c.Close()
	if n := c.Exists(ctx, "probe:0", "load:0").Val(); n != 2 {
		t.Fatalf("the replica holds %d of probe:0 and load:0", n)
	}
}

// TestReplicationWrites runs the write-throughput measurement with
// redis-server as the master and two redis-server replicas, at a tiny
// size: a figure, and both replicas at the master's offset after it. No
// timing asserted.
func TestReplicationWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	redisServer, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (make deps)")
	}
	redisBenchmark, err := exec.LookPath("redis-benchmark")
	if err != nil {
		t.Skip("redis-benchmark not installed (make deps)")
	}
	t.Cleanup(procs.killAll)
	r := &runner{
		cfg:   config{workDir: t.TempDir(), stallAfter: 20 * time.Second, hardLimit: time.Minute, rounds: 1},
		peers: &peers{redisServer: redisServer, redisBenchmark: redisBenchmark},
		log:   t.Logf,
	}
	job := rbJob{Clients: 5, Requests: 5000, Pipeline: 4, Keyspace: 100, DataSize: 16, Test: "set", Row: "SET"}
	for _, n := range []int{0, 2} {
		s := r.writesWithReplicas(context.Background(), redisSpec(r.peers, "redis", "Redis"), n, job)
		if s.Status != statusOK || s.Value <= 0 {
			t.Fatalf("%d replicas: %+v", n, s)
		}
		if n > 0 && !strings.Contains(s.Detail, "both replicas reached the master's offset") {
			t.Fatalf("%d replicas: %+v", n, s)
		}
	}
}
