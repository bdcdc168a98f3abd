package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

const redkaModule = "github.com/nalgeon/redka"
const redkaVersion = "v0.6.0"

// findPeers finds redis-server and redis-benchmark (installing them with
// the project's scripts/deps.sh when missing), builds Cellar, and finds or
// builds Redka.
func findPeers(cfg config, log func(string, ...any)) (*peers, error) {
	p := &peers{}
	var err error
	if p.redisServer, p.redisBenchmark, err = findRedis(cfg.repo, log); err != nil {
		return nil, err
	}
	if p.cellar, err = cellarBinary(cfg, log); err != nil {
		return nil, err
	}
	p.redka, p.redkaNote = redkaBinary(cfg, log)
	return p, nil
}

func findRedis(repo string, log func(string, ...any)) (string, string, error) {
	look := func() (string, string, error) {
		s, err := exec.LookPath("redis-server")
		if err != nil {
			return "", "", err
		}
		b, err := exec.LookPath("redis-benchmark")
		return s, b, err
	}
	if s, b, err := look(); err == nil {
		return s, b, nil
	}
	log("redis-server or redis-benchmark missing: running scripts/deps.sh")
	cmd := exec.Command(filepath.Join(repo, "scripts", "deps.sh"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", "", fmt.Errorf("bench: scripts/deps.sh: %w", err)
	}
	s, b, err := look()
	if err != nil {
		return "", "", fmt.Errorf("bench: redis-server/redis-benchmark still missing after scripts/deps.sh: %w", err)
	}
	return s, b, nil
}

// cellarBinary builds Cellar from this checkout into the work directory,
// stamped with git describe, unless -cellar names a binary.
func cellarBinary(cfg config, log func(string, ...any)) (string, error) {
	if cfg.cellarBin != "" {
		return filepath.Abs(cfg.cellarBin)
	}
	out := filepath.Join(cfg.workDir, "cellar")
	log("building Cellar (%s) into %s", gitDescribe(cfg.repo), out)
	cmd := exec.Command("go", "build",
		"-ldflags", "-X github.com/cellar-db/cellar.Version="+gitDescribe(cfg.repo),
		"-o", out, "./cmd/cellar")
	cmd.Dir = cfg.repo
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("bench: building Cellar: %v\n%s", err, b)
	}
	return out, nil
}

// redkaBinary returns Redka's binary, building it in a throw-away module
// under the work directory when allowed; on failure it returns "" and why.
func redkaBinary(cfg config, log func(string, ...any)) (string, string) {
	bin := filepath.Join(cfg.workDir, "redka")
	if cfg.redka == "off" {
		return "", "left out (-redka off)"
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, ""
	}
	if cfg.redka == "auto" && cfg.quick {
		return "", "left out: not built yet (quick mode builds nothing; `make bench` or -redka build builds it)"
	}
	dir := filepath.Join(cfg.workDir, "redka-build")
	log("building Redka %s in %s (cgo SQLite: about a minute)", redkaVersion, dir)
	if err := os.RemoveAll(dir); err != nil {
		return "", "build failed: " + err.Error()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "build failed: " + err.Error()
	}
	logPath := filepath.Join(dir, "build.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return "", "build failed: " + err.Error()
	}
	defer logf.Close()
	steps := [][]string{
		{"go", "mod", "init", "redka-build"},
		{"go", "get", redkaModule + "/cmd/redka@" + redkaVersion},
		{"go", "build", "-o", bin, redkaModule + "/cmd/redka"},
	}
	for _, st := range steps {
		cmd := exec.Command(st[0], st[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=1")
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Run(); err != nil {
			os.Remove(bin)
			note := fmt.Sprintf("build failed (%s: %v): %s", strings.Join(st, " "), err, tail(logPath, 300))
			log("Redka: %s", note)
			return "", note
		}
	}
	return bin, ""
}

func gitDescribe(repo string) string {
	cmd := exec.Command("git", "describe", "--tags", "--always", "--dirty")
	cmd.Dir = repo
	b, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

func gitBranch(repo string) string {
	cmd := exec.Command("git", "rev-parse", "--abbrev-ref", "HEAD")
	cmd.Dir = repo
	b, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// machine is what the results were measured on.
type machine struct {
	Cores    int    `json:"cores"`
	Model    string `json:"cpu_model"`
	Kernel   string `json:"kernel"`
	MemTotal string `json:"mem_total"`
	LoadAvg  string `json:"loadavg_at_start"`
	Go       string `json:"go"`
	Redis    string `json:"redis_server"`
	RedisBM  string `json:"redis_benchmark"`
	Cellar   string `json:"cellar"`
	Branch   string `json:"cellar_branch"`
	Redka    string `json:"redka"`
}

func describeMachine(cfg config, p *peers) machine {
	m := machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				m.MemTotal = strings.TrimSpace(v)
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	m.Redis = firstLine(output(p.redisServer, "--version"))
	m.RedisBM = firstLine(output(p.redisBenchmark, "--version"))
	m.Cellar = firstLine(output(p.cellar, "--version"))
	if m.Cellar == "" {
		m.Cellar = gitDescribe(cfg.repo)
	}
	m.Branch = gitBranch(cfg.repo)
	if p.redka != "" {
		m.Redka = redkaModule + " " + redkaVersion
	} else {
		m.Redka = "not run: " + p.redkaNote
	}
	return m
}

func output(bin string, args ...string) string {
	b, _ := exec.Command(bin, args...).CombinedOutput()
	return string(b)
}
