package tests

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar/internal/wait"
)

// TestHADeployFiles checks the primary / two replicas / three Sentinels
// layout of deploy/: `systemd-analyze verify` passes, warning-free, on
// an instance of each template unit (cellar@.service, whose node keeps
// its configuration where CONFIG REWRITE can write it, and
// cellar-sentinel@.service); redis-sentinel starts on
// deploy/sentinel/sentinel.conf (its port and the primary's address
// replaced by a live Cellar's), sees Cellar as a master with the file's
// settings, and discovers its replica.
func TestHADeployFiles(t *testing.T) {
	t.Parallel()
	analyze := lookTool(t, "systemd-analyze", "systemd")
	bin := cellarBinary(t)
	dir := t.TempDir()
	for file, instance := range map[string]string{"cellar@.service": "cellar@a.service", "cellar-sentinel@.service": "cellar-sentinel@1.service"} {
		unit, err := os.ReadFile(filepath.Join("../deploy/systemd", file))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"ProtectSystem=strict", "NoNewPrivileges=yes", "StateDirectory=", "ExecStartPre=", "Restart=on-failure"} {
			if !bytes.Contains(unit, []byte("\n"+want)) {
				t.Errorf("%s lacks %s", file, want)
			}
		}
		path := filepath.Join(dir, instance)
		os.WriteFile(path, bytes.ReplaceAll(unit, []byte("/usr/local/bin/cellar"), []byte(bin)), 0o644)
		out, err := exec.Command(analyze, "verify", path).CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", instance, err, out)
		}
	}

	ctx := context.Background()
	a, b := startServer(t), startServer(t)
	needCellar(t, a)
	ahost, aport, _ := net.SplitHostPort(a.addr)
	if err := b.client().Do(ctx, "REPLICAOF", ahost, aport).Err(); err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile("../deploy/sentinel/sentinel.conf")
	if err != nil {
		t.Fatal(err)
	}
	sp := freePort(t)
	conf = regexp.MustCompile(`(?m)^port \d+$`).ReplaceAll(conf, []byte("port "+strconv.Itoa(sp)+"\nbind 127.0.0.1\ndir "+dir))
	conf = regexp.MustCompile(`(?m)^sentinel monitor cellar \S+ \d+ 2$`).ReplaceAll(conf, []byte("sentinel monitor cellar "+ahost+" "+aport+" 2"))
	if !bytes.Contains(conf, []byte("sentinel monitor cellar "+ahost+" "+aport+" 2")) {
		t.Fatalf("sentinel.conf has no 'sentinel monitor cellar <host> <port> 2' line:\n%s", conf)
	}
	addr := runSentinel(t, filepath.Join(dir, "sentinel.conf"), conf, sp)
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer sc.Close()
	wait.For(t, 60*time.Second, "Sentinel to see Cellar as a master with its replica", func() bool {
		m, err := sc.Master(ctx, "cellar").Result()
		return err == nil && m["flags"] == "master" && m["down-after-milliseconds"] == "5000" &&
			m["quorum"] == "2" && m["num-slaves"] == "1"
	})
}
