package tests

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestLiveness: many clients wait in every way of docs/waits.md at once
// (BLPOP, BZPOPMIN, XREAD BLOCK, XREADGROUP BLOCK, WAIT, SUBSCRIBE, writes
// held by CLIENT PAUSE WRITE, and the -BUSY answers of clients that send a
// command while a script is busy), then a seeded generator ends them with
// random events in a random order: data for one client, CLIENT UNBLOCK
// [ERROR], CLIENT KILL, the client closing its socket, the stream taken
// from under an XREADGROUP, CLIENT PAUSE and UNPAUSE, a busy script and
// SCRIPT KILL. After every event the client it ends gets exactly the
// reply docs/waits.md names (or its connection closes), within a generous
// deadline, and the server's blocked_clients is what is left waiting; at
// the end every client still connected answers PING with PONG, proving
// no second reply was sent. LIVENESS_SEED replays a run; the same test
// runs against redis-server with TEST_SERVER_ADDR.
func TestLiveness(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LIVENESS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("LIVENESS_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>7))
	bt := newBlockingTest(t)
	bt.r.expect(status("OK"), "CONFIG", "SET", "busy-reply-threshold", "10")

	for round := range 4 {
		t.Logf("round %d: %d clients", round, liveRound(t, bt, rng))
	}
}

// liveRound is one round of TestLiveness; it returns how many clients took
// part.
func liveRound(t *testing.T, bt *blockingTest, rng *rand.Rand) int {
	admin := bt.r
	const (
		kList = iota
		kZset
		kXread
		kGroup
		kWait
		kSub
		kHeld // a write held by CLIENT PAUSE WRITE
	)
	type client struct {
		c       *rawConn
		id, key string
		kind    int
		proto   int
		done    bool
		subbed  bool // still subscribed when done (its final PING differs)
	}
	var clients []*client
	blocked := 0
	perKind := 2 + rng.IntN(7)
	for kind := kList; kind <= kSub; kind++ {
		for i := range perKind {
			cl := &client{c: bt.s.raw(), kind: kind, proto: 2 + rng.IntN(2), key: fmt.Sprintf("k%d.%d", kind, i)}
			if cl.kind == kSub {
				cl.proto = 2
			}
			if cl.proto == 3 {
				hello3(cl.c)
			}
			cl.id = cl.c.clientID()
			switch kind {
			case kList:
				cl.c.send(encode("BLPOP", cl.key, "0"))
			case kZset:
				cl.c.send(encode("BZPOPMIN", cl.key, "0"))
			case kXread:
				cl.c.send(encode("XREAD", "BLOCK", "0", "STREAMS", cl.key, "0-0"))
			case kGroup:
				admin.expect(status("OK"), "XGROUP", "CREATE", cl.key, "g", "$", "MKSTREAM")
				cl.c.send(encode("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", cl.key, ">"))
			case kWait:
				cl.c.send(encode("WAIT", "1", "0"))
			case kSub:
				cl.c.expect(array(bulk("subscribe"), bulk(cl.key), integer(1)), "SUBSCRIBE", cl.key)
				cl.subbed = true
			}
			if kind != kSub {
				blocked++
				bt.blocked(blocked)
			}
			clients = append(clients, cl)
		}
	}
	null := func(cl *client) string {
		if cl.kind == kWait {
			return integer(0)
		}
		if cl.proto == 3 {
			return "_\r\n"
		}
		return nullArray
	}
	served := func(cl *client) string {
		switch cl.kind {
		case kList:
			return popReply(cl.key, "v")
		case kZset:
			if cl.proto == 3 {
				return array(bulk(cl.key), bulk("m"), ",1\r\n")
			}
			return zpopReply(cl.key, "m", "1")
		case kXread, kGroup:
			if cl.proto == 3 {
				return streamRead3(cl.key, entry("1-1", "f", "v"))
			}
			return streamRead(cl.key, entry("1-1", "f", "v"))
		case kSub:
			return array(bulk("message"), bulk(cl.key), bulk("v"))
		}
		return ""
	}
	data := func(cl *client) []string {
		switch cl.kind {
		case kList:
			return []string{"RPUSH", cl.key, "v"}
		case kZset:
			return []string{"ZADD", cl.key, "1", "m"}
		case kXread, kGroup:
			return []string{"XADD", cl.key, "1-1", "f", "v"}
		case kSub:
			return []string{"PUBLISH", cl.key, "v"}
		}
		return nil
	}
	paused := false
	var held []*client
	end := func(cl *client, who string, want string) {
		t.Helper()
		expectAnswered(cl.c, want, who)
		cl.done = true
		if cl.kind != kSub {
			blocked--
		}
	}
	live := func() []*client {
		var l []*client
		for _, cl := range clients {
			if !cl.done {
				l = append(l, cl)
			}
		}
		return l
	}
	busyScripts := 0
	for step := 0; ; step++ {
		l := live()
		if len(l) == 0 && !paused {
			break
		}
		if len(l) == 0 || (paused && rng.IntN(5) == 0) {
			// CLIENT UNPAUSE: the held writes run, in order.
			admin.expect(status("OK"), "CLIENT", "UNPAUSE")
			for _, cl := range held {
				if !cl.done {
					end(cl, "a held SET after UNPAUSE", status("OK"))
				}
			}
			held, paused = nil, false
			bt.blocked(blocked)
			continue
		}
		if !paused && rng.IntN(8) == 0 {
			// CLIENT PAUSE WRITE with a few writes held.
			admin.expect(status("OK"), "CLIENT", "PAUSE", "1000000", "WRITE")
			paused = true
			for i := range 1 + rng.IntN(3) {
				cl := &client{c: bt.s.raw(), kind: kHeld, proto: 2, key: fmt.Sprintf("held%d.%d", step, i)}
				cl.id = cl.c.clientID()
				cl.c.send(encode("SET", cl.key, "v"))
				blocked++
				bt.blocked(blocked)
				clients = append(clients, cl)
				held = append(held, cl)
			}
			continue
		}
		if !paused && rng.IntN(10) == 0 {
			// A busy script: other clients get -BUSY at once, the
			// blocked ones wait on; SCRIPT KILL ends it.
			busyScripts++
			r := bt.s.raw()
			r.send(encode("EVAL", "while true do end", "0"))
			waitBusy(t, bt.s.addr)
			for range 1 + rng.IntN(3) {
				bt.s.raw().expect(busyEvalReply, "GET", "x")
			}
			admin.expect(status("OK"), "SCRIPT", "KILL")
			expectAnswered(r, "-ERR Script killed by user with SCRIPT KILL... script: 694a5fe1ddb97a4c6a1bf299d9537c7d3d0f84e7, on @user_script:1.\r\n", "the killed script")
			r.c.Close()
			bt.blocked(blocked)
			continue
		}
		cl := l[rng.IntN(len(l))]
		who := fmt.Sprintf("step %d: client %s (kind %d, RESP%d)", step, cl.id, cl.kind, cl.proto)
		ev := rng.IntN(6)
		if paused && ev >= 4 {
			ev = rng.IntN(4) // no writes while paused: they would be held too
		}
		switch {
		case cl.kind == kHeld && ev < 2:
			ev = 2 // CLIENT UNBLOCK does not apply to a held write (Redis 7.0 crashes)
		case cl.kind == kSub && ev < 2:
			ev = 2 + rng.IntN(2)
		}
		switch ev {
		case 0:
			admin.expect(integer(1), "CLIENT", "UNBLOCK", cl.id)
			end(cl, who+" after CLIENT UNBLOCK", null(cl))
		case 1:
			admin.expect(integer(1), "CLIENT", "UNBLOCK", cl.id, "ERROR")
			end(cl, who+" after CLIENT UNBLOCK ERROR", errr("UNBLOCKED client unblocked via CLIENT UNBLOCK"))
		case 2:
			admin.expect(integer(1), "CLIENT", "KILL", "ID", cl.id)
			cl.c.expectClosed()
			cl.done, cl.subbed = true, false
			if cl.kind != kSub {
				blocked--
			}
			cl.c = nil
		case 3:
			cl.c.c.Close()
			cl.done, cl.subbed = true, false
			if cl.kind != kSub {
				blocked--
			}
			cl.c = nil
		default:
			switch {
			case cl.kind == kGroup && ev == 5:
				admin.do("DEL", cl.key)
				end(cl, who+" after DEL", errr("UNBLOCKED the stream key no longer exists"))
			case cl.kind == kWait:
				admin.expect(integer(1), "CLIENT", "UNBLOCK", cl.id)
				end(cl, who+" after CLIENT UNBLOCK", null(cl))
			default:
				admin.do(data(cl)...)
				end(cl, who+" served", served(cl))
			}
		}
		bt.blocked(blocked)
	}
	// Exactly one reply each: the next reply of every client still
	// connected is its PING's.
	for _, cl := range clients {
		if cl.c == nil {
			continue
		}
		want := status("PONG")
		if cl.subbed {
			want = array(bulk("pong"), bulk(""))
		}
		cl.c.expect(want, "PING")
	}
	t.Logf("%d busy scripts", busyScripts)
	admin.expect(status("OK"), "FLUSHALL")
	return len(clients)
}
