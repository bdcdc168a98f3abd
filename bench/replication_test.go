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
