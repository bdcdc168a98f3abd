package tests

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/wait"
)

// TestPrometheusDeployFiles checks deploy/prometheus with Debian's
// promtool: the configuration, the alert rules, the rules' unit tests
// (each alert fires on the series meant to fire it), and that every
// cellar_ metric the rules use is one a live Cellar exports.
func TestPrometheusDeployFiles(t *testing.T) {
	t.Parallel()
	promtool := lookTool(t, "promtool", "prometheus")
	dir := "../deploy/prometheus"
	for _, args := range [][]string{
		{"check", "config", "prometheus.yml"},
		{"check", "rules", "cellar-alerts.yml"},
		{"test", "rules", "cellar-alerts.test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	s := startServer(t, withHTTP)
	needCellar(t, s)
	s.client().Set(t.Context(), "k", "v", 0)
	_, body := httpGet(t, "http://"+s.srv.HTTPAddr().String()+"/metrics")
	rules, err := os.ReadFile(filepath.Join(dir, "cellar-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	used := regexp.MustCompile(`cellar_[a-z_]+`).FindAllString(string(rules), -1)
	if len(used) == 0 {
		t.Fatal("the rules use no cellar_ metric")
	}
	for _, m := range used {
		m = strings.TrimSuffix(m, "_bucket")
		if !strings.Contains(body, "# TYPE "+m+" ") {
			t.Errorf("the rules use %s, which /metrics does not export", m)
		}
	}
}

// TestSystemdUnit runs `systemd-analyze verify` on
// deploy/systemd/cellar.service (with ExecStart pointing at the binary
// the tests built: verify checks that it exists), failing on any warning,
// and checks the sd_notify protocol the unit's Type=notify relies on:
// READY=1 once Cellar accepts clients, STOPPING=1 on SIGTERM.
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	analyze := lookTool(t, "systemd-analyze", "systemd")
	unit, err := os.ReadFile("../deploy/systemd/cellar.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Type=notify", "User=cellar", "ProtectSystem=strict", "ReadWritePaths=/var/lib/cellar",
		"NoNewPrivileges=yes", "LimitNOFILE=", "KillSignal=SIGTERM", "TimeoutStopSec="} {
		if !bytes.Contains(unit, []byte("\n"+want)) {
			t.Errorf("the unit lacks %s", want)
		}
	}
	bin := cellarBinary(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "cellar.service")
	os.WriteFile(path, bytes.ReplaceAll(unit, []byte("/usr/local/bin/cellar"), []byte(bin)), 0o644)
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}

	// sd_notify: a datagram socket standing in for systemd's.
	sock := filepath.Join(dir, "notify")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	msgs := make(chan string, 4)
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := ln.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	p := runCellarEnv(t, []string{"NOTIFY_SOCKET=" + sock}, true, "--dir", t.TempDir())
	expectMsg := func(want string) {
		t.Helper()
		select {
		case m := <-msgs:
			if m != want {
				t.Fatalf("sd_notify: %q, want %q", m, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no %s from Cellar", want)
		}
	}
	expectMsg("READY=1")
	p.cmd.Process.Signal(syscall.SIGTERM)
	expectMsg("STOPPING=1")
	<-p.done
}

// TestHealthcheckCommand: `cellar healthcheck URL`, the Docker image's
// HEALTHCHECK, exits 0 on 200 and 1 otherwise.
func TestHealthcheckCommand(t *testing.T) {
	t.Parallel()
	s := startServer(t, withHTTP)
	needCellar(t, s)
	base := "http://" + s.srv.HTTPAddr().String()
	if out, err := exec.Command(cellarBinary(t), "healthcheck", base+"/healthz").CombinedOutput(); err != nil {
		t.Errorf("healthcheck of a healthy server: %v %s", err, out)
	}
	s.srv.Drain()
	err := exec.Command(cellarBinary(t), "healthcheck", base+"/readyz").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("healthcheck of a draining server's /readyz: %v, want exit status 1", err)
	}
}

// TestDockerfile checks deploy/docker/Dockerfile's shape (multi-stage, a
// static build, a non-root user, a HEALTHCHECK that the image can run),
// loads the image's cellar.yaml with Cellar's own loader, and, when a
// Docker daemon is reachable, builds the image, runs it and waits for
// Docker to report it healthy.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	df, err := os.ReadFile("../deploy/docker/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(df)
	if n := len(regexp.MustCompile(`(?m)^FROM `).FindAllString(text, -1)); n < 2 {
		t.Errorf("%d stages, want a build stage and a run stage", n)
	}
	for _, want := range []string{"CGO_ENABLED=0", "\nUSER 65532:65532", "\nHEALTHCHECK ", `"healthcheck"`, "\nVOLUME /data", "distroless/static"} {
		if !strings.Contains(text, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	cfg := loadConfigFile(t, "../deploy/docker/cellar.yaml")
	if !cfg.HTTP.Enabled || cfg.HTTP.Port != 9379 || cfg.Dir != "/data" || cfg.Port != 6379 {
		t.Errorf("the image's config: %+v", cfg)
	}
	if !strings.Contains(text, "127.0.0.1:"+strconv.Itoa(cfg.HTTP.Port)+"/healthz") {
		t.Errorf("the HEALTHCHECK does not ask port %d", cfg.HTTP.Port)
	}

	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("docker is not installed: the image is not built here")
	}
	if out, err := exec.Command(docker, "info").CombinedOutput(); err != nil {
		t.Skipf("no Docker daemon reachable, the image is not built here: %s", lastLine(out))
	}
	tag := "cellar-test:" + strconv.Itoa(os.Getpid())
	build := exec.Command(docker, "build", "-f", "deploy/docker/Dockerfile", "-t", tag, ".")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	defer exec.Command(docker, "rmi", "-f", tag).Run()
	out, err := exec.Command(docker, "run", "-d", "--health-interval=1s", tag).Output()
	if err != nil {
		t.Fatalf("docker run: %v", err)
	}
	id := strings.TrimSpace(string(out))
	defer exec.Command(docker, "rm", "-f", id).Run()
	wait.For(t, 60*time.Second, "the container to be healthy", func() bool {
		out, _ := exec.Command(docker, "inspect", "-f", "{{.State.Health.Status}}", id).Output()
		return strings.TrimSpace(string(out)) == "healthy"
	})
}

// lastLine is the last non-empty line of b (docker info's error).
func lastLine(b []byte) string {
	var last string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	return last
}

// loadConfigFile loads a YAML file with Cellar's own loader (unknown keys
// and bad values are errors).
func loadConfigFile(t testing.TB, path string) cellar.Config {
	t.Helper()
	var usage strings.Builder
	cfg, err := cellar.LoadConfig([]string{"--config", path}, nil, &usage)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cfg
}

// k8sDocs parses every manifest in dir (deploy/kubernetes or one of its
// subdirectories), by kind/name.
func k8sDocs(t testing.TB, dir string) map[string]map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	docs := map[string]map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var d map[string]any
			if err := dec.Decode(&d); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			kind, _ := d["kind"].(string)
			name, _ := get(d, "metadata", "name").(string)
			if d["apiVersion"] == nil || kind == "" || name == "" {
				t.Fatalf("%s: a document without apiVersion, kind or metadata.name", f)
			}
			docs[kind+"/"+name] = d
		}
	}
	return docs
}

// get walks a parsed YAML document: string keys for maps, ints for lists.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// TestKubernetesManifests parses deploy/kubernetes and checks what can be
// checked offline: the ConfigMap's cellar.yaml loads with Cellar's own
// loader; the StatefulSet's ports, probes (/healthz, /readyz on the HTTP
// port), data volume, preStop and grace period agree with it; the memory
// request covers what the settings let Cellar hold; the Services' and the
// PodDisruptionBudget's selectors pick the pod.
func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	docs := k8sDocs(t, "../deploy/kubernetes")
	for _, want := range []string{"ConfigMap/cellar-config", "StatefulSet/cellar", "Service/cellar", "Service/cellar-headless", "PodDisruptionBudget/cellar"} {
		if docs[want] == nil {
			t.Fatalf("no %s in deploy/kubernetes (have %v)", want, slices.Sorted(mapsKeys(docs)))
		}
	}
	yml, _ := get(docs["ConfigMap/cellar-config"], "data", "cellar.yaml").(string)
	f := filepath.Join(t.TempDir(), "cellar.yaml")
	os.WriteFile(f, []byte(yml), 0o644)
	cfg := loadConfigFile(t, f)
	if !cfg.HTTP.Enabled || cfg.HTTP.Bind != "0.0.0.0" || cfg.Bind != "0.0.0.0" {
		t.Errorf("the ConfigMap's cellar.yaml must listen beyond loopback with the HTTP port on: %+v", cfg)
	}

	sts := docs["StatefulSet/cellar"]
	podLabels, _ := get(sts, "spec", "template", "metadata", "labels").(map[string]any)
	sel, _ := get(sts, "spec", "selector", "matchLabels").(map[string]any)
	matches := func(sel map[string]any) bool { return selects(sel, podLabels) }
	if !matches(sel) {
		t.Errorf("the StatefulSet's selector %v does not match its pods' labels %v", sel, podLabels)
	}
	c := get(sts, "spec", "template", "spec", "containers", 0)
	// Protected mode refuses remote clients while the default user has no
	// password: the pod must get one.
	var pass any
	el, _ := get(c, "env").([]any)
	for _, e := range el {
		if get(e, "name") == "CELLAR_REQUIREPASS" {
			pass = get(e, "valueFrom", "secretKeyRef", "key")
		}
	}
	if cfg.RequirePass == "" && cfg.ProtectedMode && pass == nil {
		t.Errorf("the pod listens on %s with protected mode on and no requirepass from a Secret: every client would be refused", cfg.Bind)
	}
	ports := containerPorts(c)
	if ports["redis"] != cfg.Port || ports["http"] != cfg.HTTP.Port {
		t.Errorf("container ports %v, the config's %d and %d", ports, cfg.Port, cfg.HTTP.Port)
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"} {
		if get(c, probe, "httpGet", "path") != path || get(c, probe, "httpGet", "port") != "http" {
			t.Errorf("%s: %v, want GET %s on port http", probe, get(c, probe), path)
		}
	}
	mounts := dataMounts(t, sts, c, cfg.Dir)
	if args, _ := get(c, "args").([]any); len(args) != 2 || args[1] != filepath.Join(mounts["config"], "cellar.yaml") {
		t.Errorf("args %v do not name the mounted cellar.yaml (%s)", args, mounts["config"])
	}
	preStop, _ := get(c, "lifecycle", "preStop", "sleep", "seconds").(int)
	grace, _ := get(sts, "spec", "template", "spec", "terminationGracePeriodSeconds").(int)
	need := time.Duration(preStop)*time.Second + cfg.HTTP.DrainDelay + cfg.ShutdownTimeout
	if preStop == 0 || time.Duration(grace)*time.Second <= need {
		t.Errorf("terminationGracePeriodSeconds %d must exceed preStop %ds + drain_delay %s + shutdown_timeout %s",
			grace, preStop, cfg.HTTP.DrainDelay, cfg.ShutdownTimeout)
	}
	if get(sts, "spec", "template", "spec", "securityContext", "runAsNonRoot") != true {
		t.Error("the pod may run as root")
	}
	memReq := parseQuantity(t, get(c, "resources", "requests", "memory"))
	if derived := cfg.MemoryNeeded(); memReq < derived {
		t.Errorf("memory request %d is below what the settings let Cellar hold (%d)", memReq, derived)
	}
	if lim := parseQuantity(t, get(c, "resources", "limits", "memory")); lim < memReq {
		t.Errorf("memory limit %d below the request %d", lim, memReq)
	}

	for _, name := range []string{"Service/cellar", "Service/cellar-headless"} {
		svc := docs[name]
		s, _ := get(svc, "spec", "selector").(map[string]any)
		if !matches(s) {
			t.Errorf("%s selects %v, not the pods (%v)", name, s, podLabels)
		}
		checkServicePorts(t, name, svc, ports)
	}
	if get(sts, "spec", "serviceName") != "cellar-headless" || get(docs["Service/cellar-headless"], "spec", "clusterIP") != "None" {
		t.Error("the StatefulSet's serviceName must be the headless Service")
	}
	pdbSel, _ := get(docs["PodDisruptionBudget/cellar"], "spec", "selector", "matchLabels").(map[string]any)
	if !matches(pdbSel) {
		t.Errorf("the PodDisruptionBudget selects %v, not the pods", pdbSel)
	}
}

// selects says whether a non-empty label selector matches labels.
func selects(sel, labels map[string]any) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// dataMounts is a StatefulSet's container's mounts by volume name; it
// fails the test unless the volume "data", from the claim template, is
// mounted at dir.
func dataMounts(t *testing.T, sts, c any, dir string) map[string]string {
	t.Helper()
	mounts := map[string]string{}
	ml, _ := get(c, "volumeMounts").([]any)
	for _, m := range ml {
		name, _ := get(m, "name").(string)
		mounts[name], _ = get(m, "mountPath").(string)
	}
	if mounts["data"] != dir || get(sts, "spec", "volumeClaimTemplates", 0, "metadata", "name") != "data" {
		t.Errorf("the data volume (%v) is not the config's dir %s on the claim template", mounts, dir)
	}
	return mounts
}

// containerPorts is a container's ports by name.
func containerPorts(c any) map[string]int {
	ports := map[string]int{}
	pl, _ := get(c, "ports").([]any)
	for _, p := range pl {
		name, _ := get(p, "name").(string)
		n, _ := get(p, "containerPort").(int)
		ports[name] = n
	}
	return ports
}

func mapsKeys(m map[string]map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// parseQuantity reads a Kubernetes memory quantity ("640Mi", "1Gi").
func parseQuantity(t testing.TB, v any) int64 {
	t.Helper()
	s, _ := v.(string)
	units := map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
	for u, mul := range units {
		if n, ok := strings.CutSuffix(s, u); ok {
			x, err := strconv.ParseInt(n, 10, 64)
			if err == nil {
				return x * mul
			}
		}
	}
	t.Fatalf("cannot read the quantity %v", v)
	return 0
}
