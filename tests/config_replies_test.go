package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/wait"
)

// CONFIG SET loglevel takes Redis's levels and changes what the running
// server logs; CONFIG GET answers in Redis's words (Cellar's warn is
// Redis's warning).
func TestConfigSetLogLevel(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.LogLevel = "warn" })
	needCellar(t, s)
	r := s.raw()
	r.expect(array(bulk("loglevel"), bulk("warning")), "CONFIG", "GET", "loglevel")
	s.raw().do("PING")
	if strings.Contains(s.logBuf.String(), "connection opened") {
		t.Fatalf("a debug line at level warning:\n%s", s.logBuf.String())
	}

	r.expect("+OK\r\n", "CONFIG", "SET", "loglevel", "DEBUG")
	r.expect(array(bulk("loglevel"), bulk("debug")), "CONFIG", "GET", "loglevel")
	s.raw().do("PING")
	wait.For(t, 20*time.Second, "a connection opened to be logged at level debug", func() bool {
		return strings.Contains(s.logBuf.String(), "connection opened")
	})

	r.expect(errr("ERR CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) must be one of the following: debug, verbose, notice, warning"),
		"CONFIG", "SET", "loglevel", "info")
	for _, w := range []string{"verbose", "notice", "warning"} {
		r.expect("+OK\r\n", "CONFIG", "SET", "loglevel", w)
		r.expect(array(bulk("loglevel"), bulk(w)), "CONFIG", "GET", "loglevel")
	}
}

// A CONFIG SET that fails changes nothing, as in Redis: the settings
// before the failing one are put back. Cellar's listener cannot move, so a
// new port fails as Redis fails when it cannot listen on it.
func TestConfigSetRollsBack(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	r := s.raw()
	portErr := errr("ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.")
	r.expect(portErr, "CONFIG", "SET", "port", "1")
	r.expect(portErr, "CONFIG", "SET", "loglevel", "debug", "maxmemory-clients", "10%", "save", "100 1", "port", "1")
	r.expect(array(bulk("loglevel"), bulk("warning"), bulk("maxmemory-clients"), bulk("268435456"), bulk("save"), bulk("")),
		"CONFIG", "GET", "loglevel", "maxmemory-clients", "save")
	// The port fails as Redis's apply step fails: after every value was
	// set, so a bad value after it is reported instead.
	r.expect(portErr, "CONFIG", "SET", "port", "1", "maxmemory", "10")
	r.expect(errr("ERR CONFIG SET failed (possibly related to argument 'maxmemory-clients') - argument must be a memory or percent value"),
		"CONFIG", "SET", "port", "1", "maxmemory-clients", "x")
	r.expect(errr("ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses."),
		"CONFIG", "SET", "maxmemory", "10", "bind", "192.0.2.1", "port", "1")
	r.expect(array(bulk("maxmemory"), bulk("0")), "CONFIG", "GET", "maxmemory")
	r.expect("+OK\r\n", "CONFIG", "SET", "loglevel", "debug", "maxmemory-clients", "10%", "save", "100 1")
	r.expect(array(bulk("loglevel"), bulk("debug"), bulk("maxmemory-clients"), bulk("10%"), bulk("save"), bulk("100 1")),
		"CONFIG", "GET", "loglevel", "maxmemory-clients", "save")
}
