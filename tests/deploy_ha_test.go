package tests

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
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
	ahost, aport := cellarPair(t)
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

// TestKubernetesHAManifests parses deploy/kubernetes/ha (a Cellar
// primary, two replicas, three Sentinels, HAProxy) and checks it offline
// and against the real tools: the ConfigMap's cellar.yaml loads with
// Cellar's own loader as the primary has it and as a replica has it (the
// init container's replicaof line added), and its replicaof names the
// first node's stable DNS name and port; the nodes' StatefulSet, its
// Services and PodDisruptionBudget agree with the config (ports, data
// volume holding the config CONFIG REWRITE writes, the Secret's password
// as requirepass and masterauth, grace period, memory request);
// sentinel.conf monitors that same first node with a quorum that is a
// majority of the Sentinels, and redis-sentinel, started on it (names
// replaced by a live Cellar primary's address), sees Cellar as a master
// and discovers its replica; HAProxy accepts haproxy.cfg (`haproxy -c`),
// whose health check is deploy/haproxy/haproxy.cfg's with an AUTH first
// and whose servers are the three nodes.
func TestKubernetesHAManifests(t *testing.T) {
	t.Parallel()
	docs := k8sDocs(t, "../deploy/kubernetes/ha")
	for _, want := range []string{"ConfigMap/cellar-ha-config", "StatefulSet/cellar-ha", "Service/cellar-ha-headless",
		"PodDisruptionBudget/cellar-ha", "StatefulSet/cellar-sentinel", "Service/cellar-sentinel", "Service/cellar-sentinel-headless",
		"Deployment/cellar-haproxy", "Service/cellar-ha"} {
		if docs[want] == nil {
			t.Fatalf("no %s in deploy/kubernetes/ha (have %v)", want, slices.Sorted(mapsKeys(docs)))
		}
	}
	data, _ := get(docs["ConfigMap/cellar-ha-config"], "data").(map[string]any)
	yml, _ := data["cellar.yaml"].(string)
	dir := t.TempDir()
	primaryFile := filepath.Join(dir, "primary.yaml")
	os.WriteFile(primaryFile, []byte(yml), 0o644)
	cfg := loadConfigFile(t, primaryFile)
	if cfg.ReplicaOf != "" || !cfg.HTTP.Enabled || cfg.Bind != "0.0.0.0" || cfg.HTTP.Bind != "0.0.0.0" {
		t.Errorf("the nodes' cellar.yaml must start a master listening beyond loopback with the HTTP port on: %+v", cfg)
	}

	// The nodes.
	sts := docs["StatefulSet/cellar-ha"]
	if n, _ := get(sts, "spec", "replicas").(int); n != 3 {
		t.Errorf("StatefulSet/cellar-ha runs %d nodes, want a primary and two replicas", n)
	}
	headless := docs["Service/cellar-ha-headless"]
	if get(sts, "spec", "serviceName") != "cellar-ha-headless" || get(headless, "spec", "clusterIP") != "None" {
		t.Error("the nodes' serviceName must be the headless Service cellar-ha-headless")
	}
	podLabels, _ := get(sts, "spec", "template", "metadata", "labels").(map[string]any)
	for _, name := range []string{"StatefulSet/cellar-ha", "PodDisruptionBudget/cellar-ha"} {
		if sel, _ := get(docs[name], "spec", "selector", "matchLabels").(map[string]any); !selects(sel, podLabels) {
			t.Errorf("%s selects %v, not the nodes (%v)", name, sel, podLabels)
		}
	}
	if sel, _ := get(headless, "spec", "selector").(map[string]any); !selects(sel, podLabels) {
		t.Errorf("Service/cellar-ha-headless selects %v, not the nodes", sel)
	}
	c := get(sts, "spec", "template", "spec", "containers", 0)
	ports := containerPorts(c)
	if ports["redis"] != cfg.Port || ports["http"] != cfg.HTTP.Port {
		t.Errorf("the nodes' container ports %v, the config's %d and %d", ports, cfg.Port, cfg.HTTP.Port)
	}
	checkServicePorts(t, "Service/cellar-ha-headless", headless, ports)
	secrets := map[string]string{}
	var announce any
	el, _ := get(c, "env").([]any)
	for _, e := range el {
		if get(e, "name") == "CELLAR_REPLICA__ANNOUNCE_IP" {
			announce = get(e, "value")
		}
		if k, _ := get(e, "valueFrom", "secretKeyRef", "key").(string); k != "" {
			secrets[get(e, "name").(string)] = get(e, "valueFrom", "secretKeyRef", "name").(string) + "/" + k
		}
	}
	if want := "$(POD_NAME)." + get(sts, "spec", "serviceName").(string); announce != want {
		t.Errorf("CELLAR_REPLICA__ANNOUNCE_IP is %v, want %s (the pod's stable name)", announce, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "env.yaml"), []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	var usage strings.Builder
	if ecfg, err := cellar.LoadConfig([]string{"--config", filepath.Join(dir, "env.yaml")}, []string{"CELLAR_REPLICA__ANNOUNCE_IP=cellar-ha-1.cellar-ha-headless"}, &usage); err != nil || ecfg.Replica.AnnounceIP != "cellar-ha-1.cellar-ha-headless" {
		t.Errorf("CELLAR_REPLICA__ANNOUNCE_IP does not set replica.announce_ip: %v %q", err, ecfg.Replica.AnnounceIP)
	}
	if secrets["CELLAR_REQUIREPASS"] == "" || secrets["CELLAR_MASTERAUTH"] != secrets["CELLAR_REQUIREPASS"] {
		t.Errorf("requirepass and masterauth must both come from the same Secret key: %v", secrets)
	}
	dataMounts(t, sts, c, cfg.Dir)
	// CONFIG REWRITE writes to the file Cellar was started on: it must be
	// on the node's own volume, where the init container put it.
	nodeFile := filepath.Join(cfg.Dir, "cellar.yaml")
	if args, _ := get(c, "args").([]any); len(args) != 2 || args[0] != "--config" || args[1] != nodeFile {
		t.Errorf("the nodes' args %v, want --config %s", args, nodeFile)
	}
	script, _ := get(sts, "spec", "template", "spec", "initContainers", 0, "command", 2).(string)
	for _, want := range []string{"test -e " + nodeFile + " && exit 0", "cp /etc/cellar/cellar.yaml " + nodeFile, "cellar-ha-0) ;;"} {
		if !strings.Contains(script, want) {
			t.Errorf("the init container's script lacks %q:\n%s", want, script)
		}
	}
	m := regexp.MustCompile(`echo "(replicaof: [^"]+)" >> (\S+)`).FindStringSubmatch(script)
	if m == nil || m[2] != nodeFile {
		t.Fatalf("the init container adds no replicaof line to %s:\n%s", nodeFile, script)
	}
	replicaFile := filepath.Join(dir, "replica.yaml")
	os.WriteFile(replicaFile, []byte(yml+m[1]+"\n"), 0o644)
	rcfg := loadConfigFile(t, replicaFile)
	primaryName := "cellar-ha-0.cellar-ha-headless"
	if host, port, err := rcfg.ReplicaOfAddr(); err != nil || host != primaryName || port != cfg.Port {
		t.Errorf("a replica's replicaof %q: %s %d %v, want %s %d", rcfg.ReplicaOf, host, port, err, primaryName, cfg.Port)
	}
	preStop, _ := get(c, "lifecycle", "preStop", "sleep", "seconds").(int)
	grace, _ := get(sts, "spec", "template", "spec", "terminationGracePeriodSeconds").(int)
	need := time.Duration(preStop)*time.Second + cfg.HTTP.DrainDelay + cfg.Master.ShutdownWait + cfg.ShutdownTimeout
	if preStop == 0 || time.Duration(grace)*time.Second <= need {
		t.Errorf("terminationGracePeriodSeconds %d must exceed preStop %ds + drain_delay %s + shutdown_wait %s + shutdown_timeout %s",
			grace, preStop, cfg.HTTP.DrainDelay, cfg.Master.ShutdownWait, cfg.ShutdownTimeout)
	}
	if memReq := parseQuantity(t, get(c, "resources", "requests", "memory")); memReq < cfg.MemoryNeeded() {
		t.Errorf("the nodes' memory request %d is below what the settings let Cellar hold (%d)", memReq, cfg.MemoryNeeded())
	}

	// The Sentinels.
	ssts := docs["StatefulSet/cellar-sentinel"]
	nSentinels, _ := get(ssts, "spec", "replicas").(int)
	sconf, _ := data["sentinel.conf"].(string)
	mon := regexp.MustCompile(`(?m)^sentinel monitor cellar (\S+) (\d+) (\d+)$`).FindStringSubmatch(sconf)
	if mon == nil {
		t.Fatalf("sentinel.conf monitors no master named cellar:\n%s", sconf)
	}
	if mon[1] != primaryName || mon[2] != strconv.Itoa(cfg.Port) {
		t.Errorf("Sentinel monitors %s:%s, the first node is %s:%d", mon[1], mon[2], primaryName, cfg.Port)
	}
	if q, _ := strconv.Atoi(mon[3]); nSentinels != 3 || q <= nSentinels/2 || q > nSentinels {
		t.Errorf("%d Sentinels with quorum %d: want three and a majority", nSentinels, q)
	}
	if !strings.Contains(sconf, "sentinel resolve-hostnames yes") {
		t.Error("sentinel.conf names the nodes by DNS name without 'sentinel resolve-hostnames yes'")
	}
	sport := regexp.MustCompile(`(?m)^port (\d+)$`).FindStringSubmatch(sconf)
	sc := get(ssts, "spec", "template", "spec", "containers", 0)
	sports := containerPorts(sc)
	if sport == nil || strconv.Itoa(sports["sentinel"]) != sport[1] {
		t.Errorf("the Sentinels' container port %v is not sentinel.conf's port %v", sports, sport)
	}
	if get(ssts, "spec", "serviceName") != "cellar-sentinel-headless" {
		t.Error("the Sentinels' serviceName must be cellar-sentinel-headless")
	}
	sLabels, _ := get(ssts, "spec", "template", "metadata", "labels").(map[string]any)
	for _, name := range []string{"Service/cellar-sentinel", "Service/cellar-sentinel-headless"} {
		if sel, _ := get(docs[name], "spec", "selector").(map[string]any); !selects(sel, sLabels) {
			t.Errorf("%s selects %v, not the Sentinels", name, sel)
		}
		checkServicePorts(t, name, docs[name], sports)
	}
	sscript, _ := get(ssts, "spec", "template", "spec", "initContainers", 0, "command", 2).(string)
	if sargs, _ := get(sc, "command").([]any); len(sargs) != 2 || !strings.Contains(sscript, "cp /etc/sentinel/sentinel.conf "+sargs[1].(string)) {
		t.Errorf("Sentinel runs on %v, not the file its init container copies:\n%s", sargs, sscript)
	}

	// redis-sentinel on the ConfigMap's file, watching a live Cellar
	// primary with a replica.
	ctx := context.Background()
	ahost, aport := cellarPair(t)
	sp := freePort(t)
	live := strings.Replace(sconf, mon[0], "sentinel monitor cellar "+ahost+" "+aport+" "+mon[3], 1)
	live = strings.Replace(live, sport[0], "port "+strconv.Itoa(sp)+"\nbind 127.0.0.1\ndir "+dir, 1)
	addr := runSentinel(t, filepath.Join(dir, "sentinel.conf"), []byte(live), sp)
	sentinel := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer sentinel.Close()
	wait.For(t, 60*time.Second, "Sentinel to see Cellar as a master with its replica", func() bool {
		m, err := sentinel.Master(ctx, "cellar").Result()
		return err == nil && m["flags"] == "master" && m["quorum"] == mon[3] && m["num-slaves"] == "1"
	})

	// HAProxy.
	hcfg, _ := data["haproxy.cfg"].(string)
	servers := regexp.MustCompile(`(?m)^\s+server (\S+) (\S+)$`).FindAllStringSubmatch(hcfg, -1)
	if len(servers) != 3 {
		t.Errorf("haproxy.cfg has %d servers, want the three nodes", len(servers))
	}
	for i, s := range servers {
		if want := "cellar-ha-" + strconv.Itoa(i) + ".cellar-ha-headless:" + strconv.Itoa(cfg.Port); s[2] != want {
			t.Errorf("haproxy.cfg's server %s is %s, want %s", s[1], s[2], want)
		}
	}
	shared, err := os.ReadFile("../deploy/haproxy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(tcpChecks(string(shared)), func(l string) bool { return strings.HasPrefix(l, "tcp-check connect") })
	got := tcpChecks(hcfg)
	if len(got) < 3 || got[1] != `tcp-check send "AUTH ${CELLAR_PASSWORD}\r\n"` || got[2] != "tcp-check expect string +OK" {
		t.Errorf("haproxy.cfg's check does not AUTH first: %q", got)
	} else if got = slices.DeleteFunc(got[3:], func(l string) bool { return strings.HasPrefix(l, "tcp-check connect") }); !slices.Equal(got, want) {
		t.Errorf("haproxy.cfg's check %q, deploy/haproxy/haproxy.cfg's %q", got, want)
	}
	if !strings.Contains(hcfg, "tcp-check connect port "+strconv.Itoa(cfg.HTTP.Port)) || !strings.Contains(hcfg, "bind 0.0.0.0:"+strconv.Itoa(cfg.Port)) {
		t.Errorf("haproxy.cfg does not check /readyz on port %d or listen on %d", cfg.HTTP.Port, cfg.Port)
	}
	hc := get(docs["Deployment/cellar-haproxy"], "spec", "template", "spec", "containers", 0)
	hports := containerPorts(hc)
	if hports["redis"] != cfg.Port {
		t.Errorf("HAProxy's container ports %v, want redis on %d", hports, cfg.Port)
	}
	checkServicePorts(t, "Service/cellar-ha", docs["Service/cellar-ha"], hports)
	hLabels, _ := get(docs["Deployment/cellar-haproxy"], "spec", "template", "metadata", "labels").(map[string]any)
	if sel, _ := get(docs["Service/cellar-ha"], "spec", "selector").(map[string]any); !selects(sel, hLabels) {
		t.Errorf("Service/cellar-ha selects %v, not HAProxy's pods", sel)
	}
	hfile := filepath.Join(dir, "haproxy.cfg")
	os.WriteFile(hfile, []byte(hcfg), 0o644)
	check := exec.Command(lookTool(t, "haproxy", "haproxy"), "-c", "-f", hfile)
	check.Env = append(os.Environ(), "CELLAR_PASSWORD=secret")
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("haproxy -c: %v\n%s", err, out)
	}
}

// tcpChecks is a HAProxy configuration's tcp-check lines, in order.
func tcpChecks(cfg string) []string {
	var l []string
	for _, line := range strings.Split(cfg, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "tcp-check ") {
			l = append(l, line)
		}
	}
	return l
}

// checkServicePorts fails the test if a Service targets a port the
// container does not name.
func checkServicePorts(t *testing.T, name string, svc any, ports map[string]int) {
	t.Helper()
	sp, _ := get(svc, "spec", "ports").([]any)
	if len(sp) == 0 {
		t.Errorf("%s has no ports", name)
	}
	for _, p := range sp {
		if _, ok := ports[fmt.Sprint(get(p, "targetPort"))]; !ok {
			t.Errorf("%s targets port %v, which the container does not name", name, get(p, "targetPort"))
		}
	}
}

// cellarPair starts a Cellar primary and a Cellar replica of it; it
// returns the primary's host and port.
func cellarPair(t *testing.T) (host, port string) {
	t.Helper()
	a, b := startServer(t), startServer(t)
	needCellar(t, a)
	host, port, _ = net.SplitHostPort(a.addr)
	if err := b.client().Do(context.Background(), "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	return host, port
}
