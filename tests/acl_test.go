package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/actor"
)

// ACL over the wire, in what a single connection cannot show (compat's
// acl.txt compares the rules, descriptions and refusals with redis-server):
// users from the configuration and from an ACL file, requirepass beside
// them, clients of deleted users and of revoked channels closed, EXEC's
// second check, blocking pops, the ACL LOG's entries. The texts asserted
// here were read from redis-server 7.0.15 doing the same.

func TestACLUsersFromConfig(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) {
		c.RequirePass = "adminpw"
		c.Users = []string{
			"app on >apppw ~app:* &app:* +@read +@write +publish -@dangerous",
			"user metrics on >m nocommands +ping +info",
		}
	})
	r := s.raw()
	r.expect("-NOAUTH Authentication required.\r\n", "GET", "k")
	r.expect("+OK\r\n", "AUTH", "adminpw") // requirepass is the default user's password
	r.expect(bulk("default"), "ACL", "WHOAMI")
	r.expect(array(bulk("app"), bulk("default"), bulk("metrics")), "ACL", "USERS")
	list := r.do("ACL", "LIST")
	for _, want := range []string{
		bulk("user default on #" + sha256hex("adminpw") + " ~* &* +@all"),
		bulk("user metrics on #" + sha256hex("m") + " resetchannels -@all +info +ping"),
		"user app on #" + sha256hex("apppw") + " ~app:* resetchannels &app:* -@all ",
	} {
		if !strings.Contains(list, want) {
			t.Fatalf("ACL LIST lacks %q: %q", want, list)
		}
	}

	// go-redis authenticates as the user (HELLO 3 AUTH).
	app := s.client(func(o *redis.Options) { o.Username, o.Password = "app", "apppw" })
	if err := app.Set(ctx, "app:1", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	err := app.Set(ctx, "other", "v", 0).Err()
	if err == nil || err.Error() != "NOPERM this user has no permissions to access one of the keys used as arguments" {
		t.Fatalf("SET other as app: %v", err)
	}
	err = app.FlushAll(ctx).Err()
	if err == nil || err.Error() != "NOPERM this user has no permissions to run the 'flushall' command" {
		t.Fatalf("FLUSHALL as app: %v", err)
	}
	if n, err := app.Publish(ctx, "app:news", "m").Result(); err != nil || n != 0 {
		t.Fatalf("PUBLISH app:news: %d %v", n, err)
	}
	err = app.Publish(ctx, "elsewhere", "m").Err()
	if err == nil || err.Error() != "NOPERM this user has no permissions to access one of the channels used as arguments" {
		t.Fatalf("PUBLISH elsewhere: %v", err)
	}
	m := s.raw()
	m.expect("+OK\r\n", "AUTH", "metrics", "m")
	m.expect("+PONG\r\n", "PING")
	m.expect("-NOPERM this user has no permissions to run the 'get' command\r\n", "GET", "app:1")
	// The client line names the user.
	if got := m.do("CLIENT", "INFO"); got[0] != '-' {
		t.Fatalf("CLIENT INFO as metrics: %q", got)
	}
	if got := r.do("CLIENT", "LIST"); !strings.Contains(got, " user=metrics ") || !strings.Contains(got, " user=app ") {
		t.Fatalf("CLIENT LIST: %q", got)
	}
	// CONFIG SET requirepass changes the default user's password only.
	r.expect("+OK\r\n", "CONFIG", "SET", "requirepass", "new")
	n := s.raw()
	n.expect("-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH", "adminpw")
	n.expect("+OK\r\n", "AUTH", "new")
	n.expect("+OK\r\n", "AUTH", "app", "apppw")
	n.expect("-NOPERM this user has no permissions to run the 'acl|whoami' command\r\n", "ACL", "WHOAMI")
}

func TestACLUsersConfigRefused(t *testing.T) {
	t.Parallel()
	cfg := cellar.DefaultConfig()
	cfg.Port, cfg.Dir = 0, t.TempDir()
	cfg.Users = []string{"bad on +nosuchcommand"}
	if _, err := cellar.Start(cfg, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "Unknown command or category name in ACL") {
		t.Fatalf("New with a bad user: %v", err)
	}
}

func TestACLDeletedUserIsDisconnected(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	admin := s.raw()
	admin.expect("+OK\r\n", "ACL", "SETUSER", "bob", "on", ">pw", "+@all", "~*")
	admin.expect("+OK\r\n", "ACL", "SETUSER", "eve", "on", ">pw", "+@all", "~*")
	bob := s.raw()
	bob.expect("+OK\r\n", "AUTH", "bob", "pw")
	eve := s.raw()
	eve.expect("+OK\r\n", "AUTH", "eve", "pw")
	// Turning a user off keeps its connections (Redis 7.0), refuses new ones.
	admin.expect("+OK\r\n", "ACL", "SETUSER", "bob", "off")
	bob.expect("+PONG\r\n", "PING")
	s.raw().expect("-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH", "bob", "pw")
	admin.expect(integer(1), "ACL", "DELUSER", "bob")
	bob.expectClosed()
	// A client deleting its own user gets its reply, then is closed.
	eve.expect(integer(1), "ACL", "DELUSER", "eve")
	eve.expectClosed()
	admin.expect("+PONG\r\n", "PING")
}

func TestACLRevokedChannelClosesSubscriber(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	admin := s.raw()
	admin.expect("+OK\r\n", "ACL", "SETUSER", "sub", "on", ">pw", "+@all", "~*", "resetchannels", "&news", "&sport")
	kept, gone := s.raw(), s.raw()
	kept.expect("+OK\r\n", "AUTH", "sub", "pw")
	gone.expect("+OK\r\n", "AUTH", "sub", "pw")
	kept.expect(array(bulk("subscribe"), bulk("sport"), integer(1)), "SUBSCRIBE", "sport")
	gone.expect(array(bulk("subscribe"), bulk("news"), integer(1)), "SUBSCRIBE", "news")
	gone.expect("-NOPERM this user has no permissions to access one of the channels used as arguments\r\n", "SUBSCRIBE", "weather")
	// Adding channels keeps everybody; taking "news" away closes its
	// subscriber only.
	admin.expect("+OK\r\n", "ACL", "SETUSER", "sub", "&weather")
	admin.expect("+OK\r\n", "ACL", "SETUSER", "sub", "resetchannels", "&sport")
	gone.expectClosed()
	admin.expect(integer(1), "PUBLISH", "sport", "goal")
	if got := kept.read(); got != array(bulk("message"), bulk("sport"), bulk("goal")) {
		t.Fatalf("kept subscriber got %q", got)
	}
}

func TestACLExecChecksAgain(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	admin := s.raw()
	admin.expect("+OK\r\n", "ACL", "SETUSER", "u1", "on", ">p", "+@all", "~*")
	u := s.raw()
	u.expect("+OK\r\n", "AUTH", "u1", "p")
	u.expect("+OK\r\n", "MULTI")
	u.expect("+QUEUED\r\n", "GET", "k")
	u.expect("+QUEUED\r\n", "SET", "k", "v")
	admin.expect("+OK\r\n", "ACL", "SETUSER", "u1", "-get")
	u.expect("*2\r\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand\r\n+OK\r\n", "EXEC")
	// Refused while queuing: the transaction fails, as in Redis.
	u.expect("+OK\r\n", "MULTI")
	u.expect("-NOPERM this user has no permissions to run the 'get' command\r\n", "GET", "k")
	u.expect("-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC")
	entries := admin.do("ACL", "LOG")
	for _, want := range []string{bulk("multi"), bulk("get"), bulk("u1"), bulk("command")} {
		if !strings.Contains(entries, want) {
			t.Fatalf("ACL LOG lacks %q: %q", want, entries)
		}
	}
}

func TestACLBlockingPopKeys(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	admin := s.raw()
	admin.expect("+OK\r\n", "ACL", "SETUSER", "q", "on", ">p", "+@all", "~q*")
	u := s.raw()
	u.expect("+OK\r\n", "AUTH", "q", "p")
	u.expect("-NOPERM this user has no permissions to access one of the keys used as arguments\r\n", "BLPOP", "q1", "x", "0")
	u.send(encode("BLPOP", "q1", "0"))
	admin.expect(integer(1), "RPUSH", "q1", "a")
	if got := u.read(); got != array(bulk("q1"), bulk("a")) {
		t.Fatalf("BLPOP q1: %q", got)
	}
}

// TestACLLogEntries: what one entry holds, grouping, the bound, RESET.
func TestACLLogEntries(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	admin := s.raw()
	admin.expect("+OK\r\n", "CONFIG", "SET", "acllog-max-len", "3")
	admin.expect("+OK\r\n", "ACL", "SETUSER", "lo", "on", ">p", "-@all", "+get", "~a*")
	u := s.raw()
	u.expect("-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH", "lo", "bad")
	u.expect("+OK\r\n", "AUTH", "lo", "p")
	u.expect("-NOPERM this user has no permissions to access one of the keys used as arguments\r\n", "GET", "zz")
	u.expect("-NOPERM this user has no permissions to access one of the keys used as arguments\r\n", "GET", "zz")
	c := s.client()
	entries, err := c.Do(ctx, "ACL", "LOG").Slice()
	if err != nil || len(entries) != 2 {
		t.Fatalf("ACL LOG: %v %v", entries, err)
	}
	first := logEntry(t, entries[0])
	if first["count"] != int64(2) || first["reason"] != "key" || first["context"] != "toplevel" || first["object"] != "zz" || first["username"] != "lo" {
		t.Fatalf("newest entry: %v", first)
	}
	if ci := first["client-info"].(string); !strings.Contains(ci, " user=lo ") || !strings.Contains(ci, " cmd=get ") {
		t.Fatalf("client-info: %q", ci)
	}
	auth := logEntry(t, entries[1])
	if auth["reason"] != "auth" || auth["object"] != "AUTH" || auth["username"] != "lo" || auth["count"] != int64(1) {
		t.Fatalf("auth entry: %v", auth)
	}
	// Bounded by acllog-max-len: the oldest go.
	for _, k := range []string{"b1", "b2", "b3"} {
		u.do("GET", k)
	}
	entries, _ = c.Do(ctx, "ACL", "LOG", "10").Slice()
	if len(entries) != 3 || logEntry(t, entries[0])["object"] != "b3" || logEntry(t, entries[2])["object"] != "b1" {
		t.Fatalf("bounded log: %v", entries)
	}
	admin.expect("+OK\r\n", "ACL", "LOG", "RESET")
	admin.expect("*0\r\n", "ACL", "LOG")
}

func logEntry(t *testing.T, v any) map[string]any {
	t.Helper()
	m := map[string]any{}
	switch e := v.(type) {
	case map[any]any:
		for k, v := range e {
			m[k.(string)] = v
		}
	case []any:
		for i := 0; i+1 < len(e); i += 2 {
			m[e[i].(string)] = e[i+1]
		}
	default:
		t.Fatalf("ACL LOG entry %T", v)
	}
	return m
}

func TestACLFileLoadSave(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(file, []byte("user default on nopass ~* &* +@all\nuser reader on >r ~* -@all +@read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *cellar.Config) { c.ACLFile = file })
	r := s.raw()
	r.expect(array(bulk("default"), bulk("reader")), "ACL", "USERS")
	r.expect("+OK\r\n", "ACL", "SETUSER", "writer", "on", ">w", "~w:*", "+set")
	r.expect("+OK\r\n", "ACL", "SAVE")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := "user default on nopass ~* &* +@all\n" +
		"user reader on #" + sha256hex("r") + " ~* resetchannels -@all +@read\n" +
		"user writer on #" + sha256hex("w") + " ~w:* resetchannels -@all +set\n"
	if string(data) != want {
		t.Fatalf("ACL SAVE wrote\n%s\nwant\n%s", data, want)
	}
	// A client of a user the load replaces is closed; a bad file changes
	// nothing.
	w := s.raw()
	w.expect("+OK\r\n", "AUTH", "writer", "w")
	os.WriteFile(file, []byte("user default on nopass ~* &* +@all\nuser writer on >w2 +nosuch\nnot a user line\n"), 0o600)
	r.expect("-ERR "+file+":2: Error in applying operation '+nosuch': Unknown command or category name in ACL. "+file+":3 should start with user keyword followed by the username. WARNING: ACL errors detected, no change to the previously active ACL rules was performed\r\n", "ACL", "LOAD")
	w.expect("+OK\r\n", "SET", "w:1", "v")
	os.WriteFile(file, []byte("user default on nopass ~* &* +@all\nuser writer on >w2 ~* +@all\n"), 0o600)
	r.expect("+OK\r\n", "ACL", "LOAD")
	w.expectClosed()
	r.expect(array(bulk("default"), bulk("writer")), "ACL", "USERS")
	s.raw().expect("+OK\r\n", "AUTH", "writer", "w2")
}

func TestACLNoFile(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.raw().expect("-ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.\r\n", "ACL", "SAVE")
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// dialFrom connects to addr from the local address from (an address of the
// loopback interface other than 127.0.0.1: to Redis 7.0, and so to Cellar,
// only 127.0.0.1 and ::1 are local clients).
func dialFrom(t *testing.T, from, addr string) *rawConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, from, err)
	}
	t.Cleanup(func() { c.Close() })
	return rawOn(t, c)
}

func TestProtectedMode(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.Bind = "0.0.0.0" })
	_, port, _ := net.SplitHostPort(s.addr)
	target := "127.0.0.1:" + port
	far := dialFrom(t, "127.0.0.2", target)
	if got := far.read(); got != actor.DeniedText {
		t.Fatalf("non-loopback client got %q", got)
	}
	far.expectClosed()
	local := s.raw()
	local.expect("+PONG\r\n", "PING")
	if got := local.do("INFO", "stats"); !strings.Contains(got, "rejected_connections:1\r\n") {
		t.Fatalf("INFO stats: %q", got)
	}
	// A password on the default user lifts it; so does protected-mode no.
	local.expect("+OK\r\n", "CONFIG", "SET", "requirepass", "pw")
	dialFrom(t, "127.0.0.2", target).expect("-NOAUTH Authentication required.\r\n", "PING")
	local.expect("+OK\r\n", "CONFIG", "SET", "requirepass", "")
	if got := dialFrom(t, "127.0.0.2", target).read(); got != actor.DeniedText {
		t.Fatalf("after requirepass \"\": %q", got)
	}
	local.expect("+OK\r\n", "CONFIG", "SET", "protected-mode", "no")
	local.expect(array(bulk("protected-mode"), bulk("no")), "CONFIG", "GET", "protected-mode")
	dialFrom(t, "127.0.0.2", target).expect("+PONG\r\n", "PING")
}

func TestProtectedModeOffInConfig(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.ProtectedMode = false })
	_, port, _ := net.SplitHostPort(s.addr)
	dialFrom(t, "127.0.0.2", "127.0.0.1:"+port).expect("+PONG\r\n", "PING")
}

// TestUnauthenticatedLimits: before AUTH, Redis 7.0 refuses requests of
// more than 10 arguments or with a bulk over 16 KiB, and closes.
func TestUnauthenticatedLimits(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.RequirePass = "pw" })
	args11 := []string{"MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"}
	r := s.raw()
	r.send([]byte("*11\r\n"))
	if got := r.read(); got != "-ERR Protocol error: unauthenticated multibulk length\r\n" {
		t.Fatalf("*11 before AUTH: %q", got)
	}
	r.expectClosed()
	r = s.raw()
	r.send([]byte("*2\r\n$3\r\nGET\r\n$16385\r\n"))
	if got := r.read(); got != "-ERR Protocol error: unauthenticated bulk length\r\n" {
		t.Fatalf("16385-byte bulk before AUTH: %q", got)
	}
	r.expectClosed()
	// At the limits: answered (NOAUTH), the connection stays.
	r = s.raw()
	r.expect("-NOAUTH Authentication required.\r\n", "GET", strings.Repeat("k", 16384))
	r.expect("-NOAUTH Authentication required.\r\n", args11[:10]...)
	// AUTH pipelined with a large request in the same write: the request
	// after AUTH is parsed as an authenticated client's.
	r.send(append(encode("AUTH", "pw"), encode(args11...)...))
	if got := r.read(); got != "+OK\r\n" {
		t.Fatalf("AUTH: %q", got)
	}
	if got := r.read(); got != "+OK\r\n" {
		t.Fatalf("MSET after AUTH: %q", got)
	}
	r.expect(bulk(strings.Repeat("v", 20000)), "ECHO", strings.Repeat("v", 20000))
	// RESET logs out again.
	r.expect("+RESET\r\n", "RESET")
	r.send([]byte("*11\r\n"))
	if got := r.read(); got != "-ERR Protocol error: unauthenticated multibulk length\r\n" {
		t.Fatalf("*11 after RESET: %q", got)
	}
	r.expectClosed()
	// Without a password nobody is held to them.
	s2 := startServer(t)
	s2.raw().expect("+OK\r\n", args11...)
}

// proxyV2 builds a PROXY protocol v2 header for a TCP client (IPv4 or
// IPv6) or, with src nil, a LOCAL one.
func proxyV2(src net.IP, sport int, tlv []byte) []byte {
	h := []byte("\r\n\r\n\x00\r\nQUIT\n")
	if src == nil {
		return append(h, 0x20, 0x00, 0, 0)
	}
	var body []byte
	fam := byte(0x11)
	if v4 := src.To4(); v4 != nil {
		body = append(append(body, v4...), 127, 0, 0, 1)
	} else {
		fam = 0x21
		body = append(append(body, src.To16()...), net.IPv6loopback...)
	}
	body = append(body, byte(sport>>8), byte(sport), 0x18, 0xEB)
	body = append(body, tlv...)
	h = append(h, 0x21, fam, byte(len(body)>>8), byte(len(body)))
	return append(h, body...)
}

func TestProxyProtocol(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) {
		c.Bind = "0.0.0.0"
		c.ProxyProtocol = true
		c.ProxyProtocolFrom = []string{"127.0.0.3/32", "::1"}
	})
	_, port, _ := net.SplitHostPort(s.addr)
	target := "127.0.0.1:" + port
	clientLine := func(r *rawConn) string {
		r.send(encode("CLIENT", "INFO"))
		return r.read()
	}

	// Protected mode (no password) judges the client's address: a
	// non-loopback client behind the balancer is refused...
	lb := dialFrom(t, "127.0.0.3", target)
	lb.send([]byte("PROXY TCP4 203.0.113.7 127.0.0.1 51234 6379\r\n"))
	if got := lb.read(); got != actor.DeniedText {
		t.Fatalf("proxied remote client under protected mode: %q", got)
	}
	lb.expectClosed()
	// ...a loopback one is not; header and command in one write.
	lb = dialFrom(t, "127.0.0.3", target)
	lb.send(append([]byte("PROXY TCP4 127.0.0.1 127.0.0.1 40000 6379\r\n"), encode("PING")...))
	if got := lb.read(); got != "+PONG\r\n" {
		t.Fatalf("after a v1 header: %q", got)
	}
	if got := clientLine(lb); !strings.Contains(got, "addr=127.0.0.1:40000 ") {
		t.Fatalf("CLIENT INFO: %q", got)
	}

	admin := s.raw()
	admin.expect("+OK\r\n", "CONFIG", "SET", "requirepass", "pw")
	admin.expect("+OK\r\n", "AUTH", "pw")
	admin.expect("+OK\r\n", "ACL", "SETUSER", "ro", "on", ">ro", "~*", "+get", "+client|info")

	// v1, TCP6, the header split over two writes.
	lb = dialFrom(t, "127.0.0.3", target)
	lb.send([]byte("PROXY TCP6 2001:db8::5 ::1 4242 "))
	lb.send(append([]byte("6379\r\n"), encode("AUTH", "pw")...))
	if got := lb.read(); got != "+OK\r\n" {
		t.Fatalf("AUTH after a TCP6 header: %q", got)
	}
	if got := clientLine(lb); !strings.Contains(got, "addr=[2001:db8::5]:4242 ") {
		t.Fatalf("CLIENT INFO after TCP6: %q", got)
	}
	// v2, IPv4 with a TLV; the ACL LOG names the client's address.
	lb = dialFrom(t, "127.0.0.3", target)
	lb.send(proxyV2(net.ParseIP("198.51.100.9"), 61000, []byte{0x04, 0x00, 0x01, 0x00}))
	lb.expect("+OK\r\n", "AUTH", "ro", "ro")
	lb.expect("-NOPERM this user has no permissions to run the 'set' command\r\n", "SET", "k", "v")
	if got := admin.do("ACL", "LOG", "1"); !strings.Contains(got, "addr=198.51.100.9:61000 ") {
		t.Fatalf("ACL LOG: %q", got)
	}
	if got := admin.do("CLIENT", "LIST"); !strings.Contains(got, "addr=198.51.100.9:61000 ") || !strings.Contains(got, "addr=[2001:db8::5]:4242 ") {
		t.Fatalf("CLIENT LIST: %q", got)
	}
	// v2 IPv6, and LOCAL (a balancer's health check keeps its own address).
	lb = dialFrom(t, "127.0.0.3", target)
	lb.send(proxyV2(net.ParseIP("2001:db8::77"), 1234, nil))
	lb.expect("+OK\r\n", "AUTH", "pw")
	if got := clientLine(lb); !strings.Contains(got, "addr=[2001:db8::77]:1234 ") {
		t.Fatalf("CLIENT INFO after v2 TCP6: %q", got)
	}
	lb = dialFrom(t, "127.0.0.3", target)
	lb.send(proxyV2(nil, 0, nil))
	lb.expect("+OK\r\n", "AUTH", "pw")
	if got := clientLine(lb); !strings.Contains(got, "addr=127.0.0.3:") {
		t.Fatalf("CLIENT INFO after v2 LOCAL: %q", got)
	}

	// Invalid headers from the balancer close the connection, with a log
	// line; so does no header at all.
	for _, bad := range [][]byte{
		[]byte("PROXY TCP4 203.0.113.7 127.0.0.1 51234\r\n"),
		[]byte("PROXY TCP4 2001:db8::1 127.0.0.1 1 2\r\n"),
		[]byte("PROXY TCP4 203.0.113.7 127.0.0.1 051234 6379\r\n"),
		[]byte("PROXY " + strings.Repeat("x", 120)),
		append([]byte("\r\n\r\n\x00\r\nQUIT\n"), 0x31, 0x11, 0, 12),
		encode("PING"),
	} {
		lb = dialFrom(t, "127.0.0.3", target)
		lb.send(bad)
		lb.expectClosed()
	}
	waitFor(t, 5*time.Second, "the invalid header log line", func() bool {
		return strings.Contains(s.logBuf.String(), "invalid PROXY protocol header")
	})

	// Another address: a header closes the connection with a log line;
	// plain requests are served as a direct client's.
	other := dialFrom(t, "127.0.0.2", target)
	other.send([]byte("PROXY TCP4 10.0.0.1 127.0.0.1 1 2\r\n"))
	other.expectClosed()
	waitFor(t, 5*time.Second, "the not-allowed log line", func() bool {
		return strings.Contains(s.logBuf.String(), "PROXY protocol header from an address not in proxy_protocol_from")
	})
	other = dialFrom(t, "127.0.0.2", target)
	other.expect("+OK\r\n", "AUTH", "pw")
	if got := clientLine(other); !strings.Contains(got, "addr=127.0.0.2:") {
		t.Fatalf("CLIENT INFO direct: %q", got)
	}
}

func TestProxyProtocolNeedsBalancers(t *testing.T) {
	t.Parallel()
	cfg := cellar.DefaultConfig()
	cfg.Port, cfg.Dir = 0, t.TempDir()
	cfg.ProxyProtocol = true
	if _, err := cellar.Start(cfg, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "proxy_protocol_from") {
		t.Fatalf("proxy_protocol without balancers: %v", err)
	}
}

// TestIdleTimeout: Redis's timeout closes idle clients, not blocked ones
// nor subscribers.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.Timeout = time.Second })
	admin := s.raw()
	admin.expect(array(bulk("timeout"), bulk("1")), "CONFIG", "GET", "timeout")
	blocked, sub := s.raw(), s.raw()
	blocked.send(encode("BLPOP", "q", "0"))
	sub.expect(array(bulk("subscribe"), bulk("ch"), integer(1)), "SUBSCRIBE", "ch")
	waitFor(t, 5*time.Second, "BLPOP to block", func() bool {
		return strings.Contains(admin.do("INFO", "clients"), "blocked_clients:1\r\n")
	})
	idle := s.raw()
	idle.expect("+PONG\r\n", "PING")
	idle.expectClosed()  // after a second or two of silence
	admin.expectClosed() // idle too
	admin = s.raw()
	admin.expect(integer(1), "RPUSH", "q", "x")
	if got := blocked.read(); got != array(bulk("q"), bulk("x")) {
		t.Fatalf("blocked client: %q", got)
	}
	admin.expect(integer(1), "PUBLISH", "ch", "m")
	if got := sub.read(); got != array(bulk("message"), bulk("ch"), bulk("m")) {
		t.Fatalf("subscriber: %q", got)
	}
	admin.expect("-ERR CONFIG SET failed (possibly related to argument 'timeout') - argument must be between 0 and 2147483647 inclusive\r\n", "CONFIG", "SET", "timeout", "-1")
	admin.expect("+OK\r\n", "CONFIG", "SET", "timeout", "0")
}

// TestRenameCommands: Redis's rename-command, in the configuration.
func TestRenameCommands(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) {
		c.RenameCommands = map[string]string{"flushall": "", "config": "cfg-3f9a", "blpop": "waitpop"}
	})
	r := s.raw()
	r.expect("-ERR unknown command 'FLUSHALL', with args beginning with: \r\n", "FLUSHALL")
	r.expect("-ERR unknown command 'config', with args beginning with: 'get' 'maxclients' \r\n", "config", "get", "maxclients")
	r.expect(array(bulk("maxclients"), bulk("10000")), "CFG-3F9A", "GET", "maxclients")
	// In a transaction and in a script the old names are unknown too.
	r.expect("+OK\r\n", "MULTI")
	r.expect("-ERR unknown command 'flushall', with args beginning with: \r\n", "flushall")
	r.expect("-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC")
	if got := r.do("EVAL", "return redis.pcall('flushall')", "0"); !strings.Contains(got, "Unknown Redis command called from script") {
		t.Fatalf("flushall from a script: %q", got)
	}
	// A renamed blocking command still blocks (the loop knows it).
	w := s.raw()
	w.send(encode("WAITPOP", "q", "0"))
	waitFor(t, 5*time.Second, "WAITPOP to block", func() bool {
		return strings.Contains(r.do("INFO", "clients"), "blocked_clients:1\r\n")
	})
	r.expect(integer(1), "RPUSH", "q", "x")
	if got := w.read(); got != array(bulk("q"), bulk("x")) {
		t.Fatalf("WAITPOP: %q", got)
	}
	// ACL rules use the real names.
	r.expect("+OK\r\n", "ACL", "SETUSER", "p", "on", ">p", "~*", "-@all", "+blpop", "+rpush")
	u := s.raw()
	u.expect("+OK\r\n", "AUTH", "p", "p")
	u.expect(integer(1), "RPUSH", "q", "y")
	u.expect(array(bulk("q"), bulk("y")), "WAITPOP", "q", "0")
	u.expect("-NOPERM this user has no permissions to run the 'get' command\r\n", "GET", "q")
}

func TestRenameCommandsRefused(t *testing.T) {
	t.Parallel()
	for _, m := range []map[string]string{{"nosuch": "x"}, {"get": "set"}, {"get": "a", "set": "a"}} {
		cfg := cellar.DefaultConfig()
		cfg.Port, cfg.Dir = 0, t.TempDir()
		cfg.RenameCommands = m
		if _, err := cellar.Start(cfg, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "rename_commands") {
			t.Fatalf("rename_commands %v: %v", m, err)
		}
	}
}

// TestTCPKeepAlive: tcp_keepalive is set on every accepted connection, as
// Redis sets it (probes after that idle time, then every third of it); CONFIG
// SET tcp-keepalive applies to the connections accepted after it. The
// server runs in this process, so the test reads the options on its side
// of the socket, by the fd CLIENT INFO reports.
func TestTCPKeepAlive(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.TCPKeepAlive = 42 * time.Second })
	check := func(r *rawConn, on, idle, intvl int) {
		t.Helper()
		line := r.do("CLIENT", "INFO")
		i := strings.Index(line, " fd=")
		if i < 0 {
			t.Fatalf("CLIENT INFO: %q", line)
		}
		fd, err := strconv.Atoi(strings.Fields(line[i+4:])[0])
		if err != nil {
			t.Fatal(err)
		}
		got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE)
		if err != nil || got != on {
			t.Fatalf("SO_KEEPALIVE on fd %d: %d %v, want %d", fd, got, err, on)
		}
		if on == 0 {
			return
		}
		for opt, want := range map[int]int{unix.TCP_KEEPIDLE: idle, unix.TCP_KEEPINTVL: intvl, unix.TCP_KEEPCNT: 3} {
			if got, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, opt); err != nil || got != want {
				t.Fatalf("TCP option %d on fd %d: %d %v, want %d", opt, fd, got, err, want)
			}
		}
	}
	r := s.raw()
	r.expect(array(bulk("tcp-keepalive"), bulk("42")), "CONFIG", "GET", "tcp-keepalive")
	check(r, 1, 42, 14)
	r.expect("+OK\r\n", "CONFIG", "SET", "tcp-keepalive", "60")
	check(s.raw(), 1, 60, 20)
	check(r, 1, 42, 14) // an open connection keeps its own
	r.expect("+OK\r\n", "CONFIG", "SET", "tcp-keepalive", "0")
	check(s.raw(), 0, 0, 0)
}
