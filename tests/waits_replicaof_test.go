package tests

import (
	"context"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar/internal/redistest"
)

// errUnblockedRole is what every blocked client gets when the server
// becomes a replica (Redis 7.0's disconnectAllBlockedClients).
const errUnblockedRole = "-UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)\r\n"

// replicaOfBlocked blocks clients in every way of docs/waits.md that
// REPLICAOF ends (BLPOP in RESP2 and RESP3, BLMOVE, BZPOPMIN, XREAD,
// XREADGROUP, WAIT), holds a write behind CLIENT PAUSE WRITE and keeps a
// subscriber, then makes the server at addr a replica of master, and
// returns what each client got, in order: the blocked ones their reply and
// whether the connection closed after it; the held write its reply once
// the pause ends; the subscriber its PING.
func replicaOfBlocked(t *testing.T, addr, master string) []string {
	t.Helper()
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	adm := dialRaw(t, addr)
	adm.expect(status("OK"), "XGROUP", "CREATE", "g", "grp", "$", "MKSTREAM")
	sub := dialRaw(t, addr)
	sub.do("SUBSCRIBE", "ch")
	var blocked []*rawConn
	for _, cmd := range [][]string{
		{"BLPOP", "l", "0"},
		{"HELLO", "3"}, // RESP3, then BLPOP
		{"BLMOVE", "l", "d", "LEFT", "RIGHT", "0"},
		{"BZPOPMIN", "z", "0"},
		{"XREAD", "BLOCK", "0", "STREAMS", "s", "$"},
		{"XREADGROUP", "GROUP", "grp", "c", "BLOCK", "0", "STREAMS", "g", ">"},
		{"WAIT", "1", "0"},
	} {
		b := dialRaw(t, addr)
		if cmd[0] == "HELLO" {
			b.do(cmd...)
			cmd = []string{"BLPOP", "l", "0"}
		}
		b.send(encode(cmd...))
		blocked = append(blocked, b)
		waitBlocked(t, admin, len(blocked))
	}
	adm.expect(status("OK"), "CLIENT", "PAUSE", "1000000", "WRITE")
	held := dialRaw(t, addr)
	held.send(encode("SET", "k", "v"))
	waitBlocked(t, admin, len(blocked)+1)

	host, port, _ := net.SplitHostPort(master)
	adm.expect(status("OK"), "REPLICAOF", host, port)
	var out []string
	for _, b := range blocked {
		out = append(out, b.read())
		b.expectClosed()
	}
	waitBlocked(t, admin, 1) // the held write still waits
	adm.expect(status("OK"), "CLIENT", "UNPAUSE")
	out = append(out, held.read(), sub.do("PING"))
	adm.expect(status("OK"), "REPLICAOF", "NO", "ONE")
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReplicaOfUnblocks: REPLICAOF ends every blocked client's wait with
// -UNBLOCKED ... (master -> replica?) and closes it, in both protocols; a
// write held by CLIENT PAUSE is not blocked in that sense: it runs when
// the pause ends, against the replica (-READONLY); a subscriber is not
// blocked either. A Redis 7.0 server in the same state answers the same
// bytes.
func TestReplicaOfUnblocks(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	master := redistest.StartTCP(t)
	red := redistest.StartTCP(t)
	want := []string{errUnblockedRole, errUnblockedRole, errUnblockedRole, errUnblockedRole,
		errUnblockedRole, errUnblockedRole, errUnblockedRole,
		"-READONLY You can't write against a read only replica.\r\n",
		array(bulk("pong"), bulk(""))}
	for _, c := range []struct{ name, addr string }{{"cellar", s.addr}, {"redis", red.Addr}} {
		got := replicaOfBlocked(t, c.addr, master.Addr)
		for i := range want {
			if i >= len(got) || got[i] != want[i] {
				t.Errorf("%s: reply %d: got %q, want %q", c.name, i, got, want[i])
			}
		}
	}
}
