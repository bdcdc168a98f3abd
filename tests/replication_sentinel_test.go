package tests

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/wait"
)

// Redis Sentinel manages Cellar: real redis-sentinel processes, Cellar
// processes (kill -9 needs one of its own).

// startSentinel runs redis-sentinel on a free port monitoring master as
// "mymaster" with quorum 2, and returns its address.
func startSentinel(t *testing.T, master string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(master)
	dir := t.TempDir()
	sp := freePort(t)
	conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\n"+
		"sentinel monitor mymaster %s %s 2\n"+
		"sentinel down-after-milliseconds mymaster 5000\n"+
		"sentinel failover-timeout mymaster 60000\n"+
		"sentinel parallel-syncs mymaster 1\n", sp, dir, host, port)
	return runSentinel(t, filepath.Join(dir, "sentinel.conf"), []byte(conf), sp)
}

// runSentinel writes conf to path and runs redis-sentinel on it for the
// rest of the test; it returns the address of port, once it answers PING.
func runSentinel(t *testing.T, path string, conf []byte, sp int) string {
	t.Helper()
	bin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		t.Fatal("redis-sentinel is not installed: run scripts/deps.sh (make test does)")
	}
	if err := os.WriteFile(path, conf, 0o644); err != nil {
		t.Fatal(err)
	}
	out := newProcOutput()
	cmd := exec.Command(bin, path)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("sentinel %d's output:\n%s", sp, out.String())
		}
	})
	addr := "127.0.0.1:" + strconv.Itoa(sp)
	wait.For(t, 20*time.Second, "redis-sentinel to answer PING", func() bool { return answersPing(t, addr) })
	return addr
}

// sentinelCount is how many entries SENTINEL <what> mymaster lists.
func sentinelCount(ctx context.Context, s *redis.SentinelClient, what string) int {
	if what == "replicas" {
		v, err := s.Replicas(ctx, "mymaster").Result()
		if err != nil {
			return -1
		}
		return len(v)
	}
	v, err := s.Sentinels(ctx, "mymaster").Result()
	if err != nil {
		return -1
	}
	return len(v)
}

// TestSentinelFailover is the failover drill: three Sentinels, a Cellar
// primary and two Cellar replicas, a go-redis FailoverClient writing
// throughout with each write followed by WAIT 2. kill -9 of the primary:
// Sentinel promotes a replica (its failover transaction MULTI / SLAVEOF
// NO ONE / CONFIG REWRITE / CLIENT KILL ... / EXEC runs on Cellar), the
// other replica follows the new primary with +CONTINUE (PSYNC2), the old
// primary, restarted on its port, is turned into a replica by Sentinel;
// every write WAIT confirmed on 2 replicas is on the new primary. How
// many unconfirmed writes were lost is reported, not asserted.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-sentinel"); err != nil {
		t.Fatal("redis-sentinel is not installed: run scripts/deps.sh (make test does)")
	}
	ctx := context.Background()
	primaryDir := t.TempDir()
	primary := runCellar(t, true, "--dir", primaryDir)
	r1 := runCellar(t, true, "--dir", t.TempDir(), "--replicaof", primary.addr)
	r2 := runCellar(t, true, "--dir", t.TempDir(), "--replicaof", primary.addr)
	nodes := map[string]string{r1.addr: "replica 1", r2.addr: "replica 2"}
	// Sentinel's failover transaction ends with CLIENT KILL TYPE normal:
	// these clients retry a command whose connection it closed.
	client := func(addr string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: 5})
		t.Cleanup(func() { c.Close() })
		return c
	}
	client(primary.addr)
	for _, r := range []*redis.Client{client(r1.addr), client(r2.addr)} {
		wait.For(t, 120*time.Second, "a replica's link to come up", func() bool {
			return masterInfo(t, r, "replication", "master_link_status") == "up"
		})
	}

	var sentinels []string
	for range 3 {
		sentinels = append(sentinels, startSentinel(t, primary.addr))
	}
	for _, addr := range sentinels {
		s := redis.NewSentinelClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { s.Close() })
		wait.For(t, 120*time.Second, "Sentinel "+addr+" to see both replicas and the two other Sentinels", func() bool {
			return sentinelCount(ctx, s, "replicas") == 2 && sentinelCount(ctx, s, "sentinels") == 2
		})
	}

	fc := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: "mymaster", SentinelAddrs: sentinels,
		DialTimeout: time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second, MaxRetries: -1,
	})
	defer fc.Close()
	var mu sync.Mutex
	// confirmed: WAIT 2 answered 2; acked: SET answered OK, WAIT less;
	// failed: SET got no OK.
	var confirmed, acked, failed []int
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var set *redis.StatusCmd
			var wait *redis.Cmd
			_, err := fc.Pipelined(ctx, func(p redis.Pipeliner) error {
				set = p.Set(ctx, "drill:"+strconv.Itoa(i), i, 0)
				wait = p.Do(ctx, "WAIT", 2, 1000)
				return nil
			})
			n, werr := wait.Int()
			if set.Err() != nil {
				werr = set.Err()
			}
			mu.Lock()
			switch {
			case werr == nil && n == 2:
				confirmed = append(confirmed, i)
			case werr == nil:
				acked = append(acked, i)
			default:
				failed = append(failed, i)
			}
			mu.Unlock()
			if err != nil {
				time.Sleep(50 * time.Millisecond) // pace the retries while there is no primary (not a synchronisation)
			}
		}
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(confirmed)
	}
	py := startPyWriter(t, sentinels) // redis-py's Sentinel client, beside go-redis's
	wait.For(t, 60*time.Second, "writes confirmed by WAIT 2 before the kill", func() bool { return count() >= 200 })
	wait.For(t, 60*time.Second, "redis-py's writes confirmed by WAIT 2 before the kill", func() bool { return py.count() >= 50 })

	oldPort := primary.addr[len("127.0.0.1:"):]
	killed := time.Now()
	primary.kill9()
	before := count()
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0]})
	defer sc.Close()
	var newAddr string
	wait.For(t, 180*time.Second, "Sentinel to promote a replica", func() bool {
		a, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
		if err != nil || len(a) != 2 {
			return false
		}
		newAddr = net.JoinHostPort(a[0], a[1])
		return newAddr != primary.addr
	})
	tookFailover := time.Since(killed)
	nc := client(newAddr)
	wait.For(t, 60*time.Second, "the new primary to say role:master", func() bool {
		return infoOf(ctx, nc, "replication", "role") == "master"
	})
	other := r1.addr
	if newAddr == r1.addr {
		other = r2.addr
	}
	oc := client(other)
	wait.For(t, 120*time.Second, "the other replica to follow the new primary", func() bool {
		return infoOf(ctx, oc, "replication", "master_port") == newAddr[len("127.0.0.1:"):] &&
			infoOf(ctx, oc, "replication", "master_link_status") == "up"
	})
	if got := infoOf(ctx, nc, "stats", "sync_partial_ok"); got != "1" {
		t.Errorf("the new primary's sync_partial_ok: %q, want 1 (the other replica continues with +CONTINUE)", got)
	}
	if got := infoOf(ctx, nc, "stats", "sync_full"); got != "0" {
		t.Errorf("the new primary's sync_full: %q, want 0", got)
	}

	// The old primary, restarted on its port, comes back as a master;
	// Sentinel makes it a replica of the new one.
	old := runCellar(t, true, "--port", oldPort, "--dir", primaryDir)
	olc := client(old.addr)
	wait.For(t, 180*time.Second, "Sentinel to turn the old primary into a replica of the new one", func() bool {
		return infoOf(ctx, olc, "replication", "role") == "slave" &&
			infoOf(ctx, olc, "replication", "master_port") == newAddr[len("127.0.0.1:"):] &&
			infoOf(ctx, olc, "replication", "master_link_status") == "up"
	})
	after := count()
	pyAfter := py.count()
	wait.For(t, 120*time.Second, "writes confirmed by WAIT 2 on the new primary", func() bool { return count() >= after+100 })
	wait.For(t, 120*time.Second, "redis-py's writes confirmed by WAIT 2 on the new primary", func() bool { return py.count() >= pyAfter+50 })

	// Every Sentinel must have seen the old primary as a replica before
	// the planned switch: one that still takes it for the master it was
	// since its restart would, seeing it promoted, make it a replica again
	// (Sentinel 7.0 converts a replica reporting role:master 8 s after the
	// role it last saw changed), and the promotion would time out.
	for _, addr := range sentinels {
		s := redis.NewSentinelClient(&redis.Options{Addr: addr})
		wait.For(t, 120*time.Second, "Sentinel "+addr+" to see the old primary as a replica of the new one", func() bool {
			rs, err := s.Replicas(ctx, "mymaster").Result()
			if err != nil {
				return false
			}
			for _, r := range rs {
				if r["name"] == old.addr {
					return r["role-reported"] == "slave" && r["master-port"] == newAddr[len("127.0.0.1:"):]
				}
			}
			return false
		})
		s.Close()
	}

	// A planned switch (SENTINEL FAILOVER) while the writer goes on: the
	// primary it demotes asks the one it promoted to continue its own
	// history; writes it took after the promotion make that a full resync
	// (Sentinel 7.0 does not pause writes for it), and WAIT 2 cannot have
	// confirmed them (it had one replica left).
	if err := sc.Failover(ctx, "mymaster").Err(); err != nil {
		t.Fatalf("SENTINEL FAILOVER: %v", err)
	}
	var planned string
	wait.For(t, 180*time.Second, "SENTINEL FAILOVER to promote another replica", func() bool {
		a, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
		if err != nil || len(a) != 2 {
			return false
		}
		planned = net.JoinHostPort(a[0], a[1])
		return planned != newAddr
	})
	demoted := nc
	wait.For(t, 180*time.Second, "the demoted primary to follow the promoted one", func() bool {
		return infoOf(ctx, demoted, "replication", "master_port") == planned[len("127.0.0.1:"):] &&
			infoOf(ctx, demoted, "replication", "master_link_status") == "up"
	})
	pc := client(planned)
	mid := count()
	pyMid := py.count()
	wait.For(t, 120*time.Second, "writes confirmed by WAIT 2 after the planned switch", func() bool { return count() >= mid+100 })
	wait.For(t, 120*time.Second, "redis-py's writes confirmed by WAIT 2 after the planned switch", func() bool { return py.count() >= pyMid+50 })
	close(stop)
	<-done
	py.halt(t)
	t.Logf("planned switch: %s (sync_full %s, sync_partial_ok %s on it)", planned,
		infoOf(ctx, pc, "stats", "sync_full"), infoOf(ctx, pc, "stats", "sync_partial_ok"))
	firstNew := nodes[newAddr]
	nc = pc

	mu.Lock()
	defer mu.Unlock()
	for _, i := range confirmed {
		got, err := nc.Get(ctx, "drill:"+strconv.Itoa(i)).Result()
		if err != nil || got != strconv.Itoa(i) {
			t.Errorf("drill:%d, confirmed by WAIT 2, is %q on the last primary (%v)", i, got, err)
		}
	}
	for _, i := range py.confirmed {
		got, err := nc.Get(ctx, "pydrill:"+strconv.Itoa(i)).Result()
		if err != nil || got != strconv.Itoa(i) {
			t.Errorf("pydrill:%d, confirmed by WAIT 2 through redis-py, is %q on the last primary (%v)", i, got, err)
		}
	}
	lostOf := func(prefix string, is []int) int {
		n := 0
		for _, i := range is {
			if _, err := nc.Get(ctx, prefix+strconv.Itoa(i)).Result(); err == redis.Nil {
				n++
			}
		}
		return n
	}
	lost := func(is []int) int { return lostOf("drill:", is) }
	t.Logf("redis-py's Sentinel client: %d writes confirmed by WAIT 2, all present; %d answered OK with WAIT < 2, %d of them lost; %d failed, %d of them absent",
		len(py.confirmed), len(py.acked), lostOf("pydrill:", py.acked), len(py.failed), lostOf("pydrill:", py.failed))
	t.Logf("failover: %s became the primary %v after the kill -9 (down-after-milliseconds 5000); "+
		"%d writes confirmed by WAIT 2 (%d before the kill), all present; %d answered OK with WAIT < 2, %d of them lost; %d failed, %d of them absent",
		firstNew, tookFailover.Round(100*time.Millisecond), len(confirmed), before, len(acked), lost(acked), len(failed), lost(failed))
}

// TestReplicaAnnounce: what Sentinel reads of a replica and of its
// master. The master's slaveN line carries replica-announce-ip and
// replica-announce-port (else the replica's address and the port it
// listens on, also when it was started on port 0); the replica's INFO
// carries slave_priority (replica-priority) and replica_announced.
func TestReplicaAnnounce(t *testing.T) {
	t.Parallel()
	master := startServer(t)
	needCellar(t, master)
	ctx := context.Background()
	mc := master.client()
	host, port, _ := net.SplitHostPort(master.addr)

	plain := startServer(t)
	if err := plain.client().Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	_, plainPort, _ := net.SplitHostPort(plain.addr)
	wait.For(t, 120*time.Second, "the master to list the replica at its listening port", func() bool {
		return strings.HasPrefix(masterInfo(t, mc, "replication", "slave0"), "ip=127.0.0.1,port="+plainPort+",state=online,")
	})

	announced := startServer(t)
	r := announced.raw()
	r.expect(status("OK"), "CONFIG", "SET", "replica-announce-ip", "10.1.2.3")
	r.expect(status("OK"), "CONFIG", "SET", "replica-announce-port", "4567")
	r.expect(status("OK"), "CONFIG", "SET", "replica-priority", "7")
	r.expect(status("OK"), "CONFIG", "SET", "replica-announced", "no")
	r.expect(status("OK"), "REPLICAOF", host, port)
	wait.For(t, 120*time.Second, "the master to list the announced address", func() bool {
		return strings.HasPrefix(masterInfo(t, mc, "replication", "slave1"), "ip=10.1.2.3,port=4567,state=online,")
	})
	ac := announced.client()
	if got := masterInfo(t, ac, "replication", "slave_priority"); got != "7" {
		t.Errorf("slave_priority: %q, want 7", got)
	}
	if got := masterInfo(t, ac, "replication", "replica_announced"); got != "0" {
		t.Errorf("replica_announced: %q, want 0", got)
	}
	if got := masterInfo(t, plain.client(), "replication", "slave_priority"); got != "100" {
		t.Errorf("slave_priority by default: %q, want 100", got)
	}

	// replica.announce_ip in the configuration (deploy/kubernetes/ha sets
	// it to the pod's DNS name) is replica-announce-ip from the start.
	named := startServer(t, func(c *cellar.Config) { c.Replica.AnnounceIP = "cellar-ha-1.cellar-ha-headless" })
	if got := named.client().ConfigGet(ctx, "replica-announce-ip").Val()["replica-announce-ip"]; got != "cellar-ha-1.cellar-ha-headless" {
		t.Errorf("CONFIG GET replica-announce-ip: %q, want the configured name", got)
	}
	if err := named.client().Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	_, namedPort, _ := net.SplitHostPort(named.addr)
	wait.For(t, 120*time.Second, "the master to list the configured name", func() bool {
		return strings.HasPrefix(masterInfo(t, mc, "replication", "slave2"), "ip=cellar-ha-1.cellar-ha-headless,port="+namedPort+",state=online,")
	})
}

// TestReplicaOfRewritten: CONFIG REWRITE keeps the role (replicaof "host
// port" while a replica, "" as a master), so a node Sentinel promoted or
// demoted comes back from a restart in that role.
func TestReplicaOfRewritten(t *testing.T) {
	t.Parallel()
	master := startServer(t)
	needCellar(t, master)
	ctx := context.Background()
	master.client().Set(ctx, "k", "v", 0)
	host, port, _ := net.SplitHostPort(master.addr)

	path := filepath.Join(t.TempDir(), "cellar.yaml")
	if err := os.WriteFile(path, []byte("# a replica-to-be\nloglevel: warn\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var usage strings.Builder
	loaded, err := cellar.LoadConfig([]string{"--config", path}, nil, &usage)
	if err != nil {
		t.Fatal(err)
	}
	r := startServer(t, func(c *cellar.Config) {
		dir, port := c.Dir, c.Port
		*c = loaded
		c.Dir, c.Port = dir, port
	})
	raw := r.raw()
	raw.expect(array(bulk("replicaof"), bulk("")), "CONFIG", "GET", "replicaof")
	raw.expect(status("OK"), "REPLICAOF", host, port)
	raw.expect(array(bulk("replicaof"), bulk(host+" "+port)), "CONFIG", "GET", "replicaof")
	raw.expect(status("OK"), "CONFIG", "REWRITE")
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "replicaof: "+host+" "+port+"\n") || !strings.Contains(string(data), "# a replica-to-be") {
		t.Fatalf("the rewritten file:\n%s", data)
	}

	// Started from the file, it is a replica again.
	if loaded, err = cellar.LoadConfig([]string{"--config", path}, nil, &usage); err != nil {
		t.Fatalf("the rewritten file does not load: %v\n%s", err, data)
	}
	r.stop()
	dir := r.cfg.Dir
	r.cfg = loaded
	r.cfg.Dir, r.cfg.Port = dir, 0
	r.start()
	rc := r.client()
	wait.For(t, 120*time.Second, "the restarted node to follow the master again", func() bool {
		return masterInfo(t, rc, "replication", "master_link_status") == "up" && rc.Get(ctx, "k").Val() == "v"
	})

	// Promoted and rewritten: a master in the file too.
	raw = r.raw()
	raw.expect(status("OK"), "REPLICAOF", "NO", "ONE")
	raw.expect(status("OK"), "CONFIG", "REWRITE")
	data, _ = os.ReadFile(path)
	if !strings.Contains(string(data), `replicaof: ""`) {
		t.Fatalf("after REPLICAOF NO ONE the rewritten file:\n%s", data)
	}
}
