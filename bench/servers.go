package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// serverSpec says how to start one kind of server under test.
type serverSpec struct {
	Name  string // unique: "redis", "cellar", "redka", "redis-aof-always", …
	Kind  string // "redis", "cellar" or "redka"
	Label string // for tables and charts
	bin   string
	args  func(port int, dir string) []string
	env   []string // added to the bench's environment
}

// peers are the binaries this run found or built.
type peers struct {
	redisServer    string
	redisBenchmark string
	cellar         string
	redka          string // "" when unavailable
	redkaNote      string // why Redka is missing, when it is
}

func redisSpec(p *peers, name, label string, extra ...string) serverSpec {
	return serverSpec{
		Name: name, Kind: "redis", Label: label, bin: p.redisServer,
		args: func(port int, dir string) []string {
			a := []string{
				"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
				"--dir", dir, "--daemonize", "no", "--logfile", "",
				"--save", "",
			}
			return append(a, extra...)
		},
	}
}

func cellarSpec(p *peers, name, label, durability string) serverSpec {
	return serverSpec{
		Name: name, Kind: "cellar", Label: label, bin: p.cellar,
		args: func(port int, dir string) []string {
			return []string{
				"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
				"--dir", dir, "--durability", durability, "--loglevel", "warn",
			}
		},
	}
}

func redkaSpec(p *peers) serverSpec {
	return serverSpec{
		Name: "redka", Kind: "redka", Label: "Redka", bin: p.redka,
		args: func(port int, dir string) []string {
			return []string{"-h", "127.0.0.1", "-p", strconv.Itoa(port), filepath.Join(dir, "redka.db")}
		},
	}
}

// The servers of the default comparison: Redis without persistence, the
// other two on disk at their defaults.
func specRedis(p *peers) serverSpec {
	return redisSpec(p, "redis", "Redis", "--appendonly", "no")
}
func specCellar(p *peers) serverSpec {
	return cellarSpec(p, "cellar", "Cellar", "everysec")
}

// server is one running server process.
type server struct {
	spec   serverSpec
	port   int
	dir    string
	cmd    *exec.Cmd
	waited chan struct{}
	log    *os.File
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }
func (s *server) pid() int     { return s.cmd.Process.Pid }

// startServer starts spec on a free loopback port with a fresh data
// directory under workDir and waits until it answers PING.
func startServer(spec serverSpec, workDir string) (*server, error) {
	if spec.bin == "" {
		return nil, fmt.Errorf("%s: no binary", spec.Name)
	}
	dataRoot := filepath.Join(workDir, "data")
	if err := os.MkdirAll(dataRoot, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(dataRoot, spec.Name+"-")
	if err != nil {
		return nil, err
	}
	// A port found free can be taken by someone else before the server
	// binds it: try a few ports, keeping the first failure's reason.
	var firstErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := launch(spec, port, dir)
		if err == nil {
			return s, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if !strings.Contains(err.Error(), "exited before") {
			break // it started but did not answer: another port will not help
		}
	}
	os.RemoveAll(dir)
	return nil, firstErr
}

func launch(spec serverSpec, port int, dir string) (*server, error) {
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(spec.bin, spec.args(port, dir)...)
	cmd.Dir = dir
	if len(spec.env) > 0 {
		cmd.Env = append(os.Environ(), spec.env...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := startGroup(cmd, spec.Name); err != nil {
		logf.Close()
		return nil, fmt.Errorf("%s: start: %w", spec.Name, err)
	}
	s := &server{spec: spec, port: port, dir: dir, cmd: cmd, waited: make(chan struct{}), log: logf}
	go func() { _ = cmd.Wait(); close(s.waited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-s.waited:
			procs.remove(cmd.Process.Pid)
			logf.Close()
			return nil, fmt.Errorf("%s exited before answering PING: %s", spec.Name, tail(filepath.Join(dir, "server.log"), 400))
		default:
		}
		if ping(s.addr(), time.Second) == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop(true)
			return nil, fmt.Errorf("%s did not answer PING within 30s: %s", spec.Name, tail(filepath.Join(dir, "server.log"), 400))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the server's process group and, unless keep, removes its data.
func (s *server) stop(keep bool) {
	stopGroup(s.cmd, s.waited, 15*time.Second)
	s.log.Close()
	if !keep {
		os.RemoveAll(s.dir)
	}
}

// tail returns up to n bytes from the end of a file, on one line.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\n", " | "))
	if s == "" {
		return "(empty log)"
	}
	return s
}
