// Package redistest runs a throw-away redis-server for tests that compare
// Cellar's bytes with the real thing (the RDB codec's, the replication's).
package redistest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cellar-db/cellar/internal/wait"
)

// Server is a running redis-server.
type Server struct {
	Sock string // unix socket path
	Addr string // host:port when started with TCP, else ""
	Dir  string // its working directory (dump.rdb goes here)
	cmd  *exec.Cmd
}

// Start runs redis-server on a unix socket (no TCP port), with persistence
// off and extra arguments appended; it is killed when the test ends.
func Start(t testing.TB, extra ...string) *Server {
	return start(t, false, "", extra)
}

// StartTCP is Start with a TCP port on 127.0.0.1 as well (a replica needs
// one). The port is one the kernel just handed out and released.
func StartTCP(t testing.TB, extra ...string) *Server {
	return start(t, true, "", extra)
}

// StartTCPConfig is StartTCP with a configuration file holding conf, for
// the directives only a file may give (rename-command).
func StartTCPConfig(t testing.TB, conf string, extra ...string) *Server {
	return start(t, true, conf, extra)
}

// Signal sends sig to the redis-server process (SIGSTOP and SIGCONT make
// a replica lag on purpose).
func (s *Server) Signal(sig os.Signal) error { return s.cmd.Process.Signal(sig) }

func start(t testing.TB, tcp bool, conf string, extra []string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed: run scripts/deps.sh (make test does)")
	}
	// Not t.TempDir() for the socket: its path must stay under 108 bytes.
	sockDir, err := os.MkdirTemp("", "redis")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	s := &Server{Sock: filepath.Join(sockDir, "redis.sock"), Dir: t.TempDir()}
	port := "0"
	if tcp {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		l.Close()
		s.Addr = "127.0.0.1:" + port
	}
	args := append([]string{"--port", port, "--bind", "127.0.0.1", "--unixsocket", s.Sock, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", s.Dir, "--daemonize", "no"}, extra...)
	if conf != "" {
		path := filepath.Join(s.Dir, "redis.conf")
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append([]string{path}, args...)
	}
	s.cmd = exec.Command(bin, args...)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	wait.For(t, 10*time.Second, "redis-server to accept connections", func() bool {
		c, err := net.Dial("unix", s.Sock)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	return s
}
