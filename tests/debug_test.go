package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
)

// TestDebugEnabled replays testdata/debug/enabled.txt against Cellar and a
// real redis-server that both allow DEBUG (enable-debug-command yes; the
// compat suite's servers refuse it, as by default), then checks what a
// reply cannot show: DEBUG SET-ACTIVE-EXPIRE 1 gives the expiry sweep
// back a key that DEBUG SET-ACTIVE-EXPIRE 0 left to it, and "local" allows
// a client on loopback.
func TestDebugEnabled(t *testing.T) {
	t.Parallel()
	redisAddr := startRedis(t, "--enable-debug-command", "yes")
	s := startServer(t, func(c *cellar.Config) { c.EnableDebugCommand = "yes" })
	runCompatFile(t, "testdata/debug/enabled.txt", s.addr, redisAddr)

	c := dialRaw(t, s.addr)
	for _, cmd := range [][]string{{"FLUSHALL"}, {"DEBUG", "SET-ACTIVE-EXPIRE", "0"}, {"SET", "gone", "v", "PX", "1"}, {"DEBUG", "SET-ACTIVE-EXPIRE", "1"}} {
		if got, err := c.tryDo(cmd...); err != nil || got != "+OK\r\n" {
			t.Fatalf("%q: %q %v", cmd, got, err)
		}
	}
	// DBSIZE counts the key until it is deleted; only the sweep deletes it
	// (nothing reads it).
	waitFor(t, 10*time.Second, "the expiry sweep to delete the key", func() bool {
		got, err := c.tryDo("DBSIZE")
		return err == nil && got == ":0\r\n"
	})

	local := startServer(t, func(c *cellar.Config) { c.EnableDebugCommand = "local" })
	if got, err := dialRaw(t, local.addr).tryDo("DEBUG", "SLEEP", "0"); err != nil || got != "+OK\r\n" {
		t.Fatalf("DEBUG from loopback with enable_debug_command local: %q %v", got, err)
	}
	off := startServer(t)
	if got, _ := dialRaw(t, off.addr).tryDo("DEBUG", "SLEEP", "0"); !strings.HasPrefix(got, "-ERR DEBUG command not allowed.") {
		t.Fatalf("DEBUG with enable_debug_command no: %q", got)
	}
}
