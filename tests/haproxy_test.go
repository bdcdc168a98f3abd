package tests

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/actor"
)

// TestProxyProtocolBehindHAProxy: the real HAProxy, in TCP mode with
// send-proxy-v2 and send-proxy, in front of Cellar; Cellar sees the
// client's own address.
func TestProxyProtocolBehindHAProxy(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatal("haproxy is not installed: run scripts/deps.sh (make test does)")
	}
	s := startServer(t, func(c *cellar.Config) {
		c.RequirePass = "pw"
		c.ProxyProtocol = true
		c.ProxyProtocolFrom = []string{"127.0.0.1"}
	})
	_, cport, _ := net.SplitHostPort(s.addr)
	v2, v1 := freePort(t), freePort(t)
	cfg := fmt.Sprintf(`global
  maxconn 100
defaults
  mode tcp
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend v2
  bind 127.0.0.1:%d
  default_backend cellar_v2
frontend v1
  bind 127.0.0.1:%d
  default_backend cellar_v1
backend cellar_v2
  server cellar 127.0.0.1:%s send-proxy-v2
backend cellar_v1
  server cellar 127.0.0.1:%s send-proxy
`, v2, v1, cport, cport)
	dir := t.TempDir()
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for _, p := range []int{v2, v1} {
		addr := fmt.Sprintf("127.0.0.1:%d", p)
		waitFor(t, 10*time.Second, "HAProxy to listen on "+addr+" ("+out.String()+")", func() bool {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
	for _, p := range []int{v2, v1} {
		c := dialFrom(t, "127.0.0.2", fmt.Sprintf("127.0.0.1:%d", p))
		c.expect("+OK\r\n", "AUTH", "pw")
		line := c.do("CLIENT", "INFO")
		want := "addr=" + c.c.LocalAddr().String() + " "
		if !strings.Contains(line, want) {
			t.Fatalf("through HAProxy (port %d): CLIENT INFO %q lacks %q", p, line, want)
		}
	}
	// Protected mode judges the client behind the balancer.
	admin := dialFrom(t, "127.0.0.4", s.addr)
	admin.expect("+OK\r\n", "AUTH", "pw")
	admin.expect("+OK\r\n", "CONFIG", "SET", "requirepass", "")
	far := dialFrom(t, "127.0.0.2", fmt.Sprintf("127.0.0.1:%d", v2))
	far.send(encode("PING"))
	if got := far.read(); got != actor.DeniedText {
		t.Fatalf("a non-loopback client through HAProxy: %q", got)
	}
	near := dialFrom(t, "127.0.0.1", fmt.Sprintf("127.0.0.1:%d", v2))
	near.expect("+PONG\r\n", "PING")
}
