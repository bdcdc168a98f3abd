package tests

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// The waits of docs/waits.md against their ending events, pair by pair,
// as Redis 7.0 answers them, in RESP2 and RESP3: each blocked command
// (BLPOP, BLMOVE, BZPOPMIN, XREAD, XREADGROUP, WAIT) meets each event
// (CLIENT UNBLOCK, CLIENT UNBLOCK ERROR, DEL, a value of another type,
// FLUSHDB, FLUSHALL, SWAPDB with data swapped in, REPLICAOF, CLIENT KILL,
// its timeout). A wait that goes on is proved to go on by the next reply the
// client reads: the one the data sent afterwards gives it. The same test
// runs against redis-server with TEST_SERVER_ADDR.

// matrixWait is one way to wait: block blocks (timeout given), serve
// (run after FLUSHALL) gives it data, served is its reply then; swap is
// what SWAPDB 0 1 gives it when database 1 holds swapData ("" keeps it
// waiting); gone is its reply when its key is deleted ("" keeps it
// waiting).
type matrixWait struct {
	name            string
	setup           []string
	block           func(timeout string) []string
	serve, swapData []string
	served, swap    func(proto int) string
	gone            string
	wait            bool // WAIT: no key, data does not end it
}

func matrixWaits() []matrixWait {
	score := func(proto int, s string) string {
		if proto == 3 {
			return "," + s + "\r\n"
		}
		return bulk(s)
	}
	read := func(key, id string) func(int) string {
		return func(proto int) string {
			if proto == 3 {
				return streamRead3(key, entry(id, "f", "v"))
			}
			return streamRead(key, entry(id, "f", "v"))
		}
	}
	return []matrixWait{
		{name: "BLPOP", block: func(t string) []string { return []string{"BLPOP", "l", t} },
			serve: []string{"RPUSH l a"}, served: func(int) string { return popReply("l", "a") },
			swapData: []string{"RPUSH l b"}, swap: func(int) string { return popReply("l", "b") }},
		{name: "BLMOVE", block: func(t string) []string { return []string{"BLMOVE", "l", "d", "LEFT", "RIGHT", t} },
			serve: []string{"RPUSH l a"}, served: func(int) string { return bulk("a") },
			swapData: []string{"RPUSH l b"}, swap: func(int) string { return bulk("b") }},
		{name: "BZPOPMIN", block: func(t string) []string { return []string{"BZPOPMIN", "z", t} },
			serve: []string{"ZADD z 1 m"}, served: func(p int) string { return array(bulk("z"), bulk("m"), score(p, "1")) },
			swapData: []string{"ZADD z 2 n"}, swap: func(p int) string { return array(bulk("z"), bulk("n"), score(p, "2")) }},
		{name: "XREAD", block: func(t string) []string { return []string{"XREAD", "BLOCK", ms(t), "STREAMS", "s", "0-0"} },
			serve: []string{"XADD s 1-1 f v"}, served: read("s", "1-1"),
			swapData: []string{"XADD s 5-1 f v"}, swap: read("s", "5-1")},
		{name: "XREADGROUP", setup: []string{"XGROUP CREATE s g $ MKSTREAM"},
			block: func(t string) []string {
				return []string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", ms(t), "STREAMS", "s", ">"}
			},
			serve: []string{"XGROUP CREATE s g $ MKSTREAM", "XADD s 1-1 f v"}, served: read("s", "1-1"),
			gone: errr("UNBLOCKED the stream key no longer exists")},
		{name: "WAIT", block: func(t string) []string { return []string{"WAIT", "1", ms(t)} }, wait: true},
	}
}

// ms turns a blocking command's timeout in seconds into XREAD's and
// WAIT's milliseconds.
func ms(t string) string {
	if t == "0.1" {
		return "100"
	}
	return t
}

func TestWaitsMatrix(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	admin := bt.r
	noMaster := strconv.Itoa(freePort(t)) // nothing listens there: no sync comes
	for _, proto := range []int{2, 3} {
		for _, w := range matrixWaits() {
			null := nullArray
			if proto == 3 {
				null = "_\r\n"
			}
			timedOut := null
			if w.wait {
				timedOut = integer(0) // the replicas that acknowledged
			}
			unblocked := errr("UNBLOCKED client unblocked via CLIENT UNBLOCK")
			type event struct {
				name string
				cmds []string // %d stands for the blocked client's ID
				// want is its reply at once; "" when it waits on.
				want string
				// closed: its connection is closed, no reply.
				closed bool
				// thenClosed: closed after the reply want.
				thenClosed bool
			}
			events := []event{
				{name: "CLIENT UNBLOCK", cmds: []string{"CLIENT UNBLOCK %d"}, want: timedOut},
				{name: "CLIENT UNBLOCK TIMEOUT", cmds: []string{"CLIENT UNBLOCK %d TIMEOUT"}, want: timedOut},
				{name: "CLIENT UNBLOCK ERROR", cmds: []string{"CLIENT UNBLOCK %d ERROR"}, want: unblocked},
				{name: "CLIENT KILL", cmds: []string{"CLIENT KILL ID %d"}, closed: true},
				{name: "DEL", cmds: []string{"DEL l z s"}, want: w.gone},
				{name: "another type", cmds: []string{"DEL l z s", "SET l x", "SET z x", "SET s x"}, want: w.gone},
				{name: "FLUSHDB", cmds: []string{"FLUSHDB"}, want: w.gone},
				{name: "FLUSHALL", cmds: []string{"FLUSHALL"}, want: w.gone},
				// NO ONE makes it a master again for the next pair.
				{name: "REPLICAOF", cmds: []string{"REPLICAOF 127.0.0.1 " + noMaster, "REPLICAOF NO ONE"},
					want: errUnblockedRole, thenClosed: true},
			}
			if !w.wait && w.gone == "" {
				swap := append([]string{"SELECT 1"}, w.swapData...)
				swap = append(swap, "SELECT 0", "SWAPDB 0 1")
				events = append(events, event{name: "SWAPDB with data", cmds: swap, want: w.swap(proto)})
			}
			if w.gone != "" {
				events = append(events, event{name: "SWAPDB", cmds: []string{"SWAPDB 0 1"}, want: w.gone})
			}
			for _, ev := range events {
				name := fmt.Sprintf("RESP%d %s, %s", proto, w.name, ev.name)
				admin.do("SELECT", "0")
				admin.do("FLUSHALL")
				for _, cmd := range w.setup {
					admin.do(strings.Fields(cmd)...)
				}
				b := bt.s.raw()
				if proto == 3 {
					hello3(b)
				}
				id := b.clientID()
				b.send(encode(w.block("0")...))
				bt.blocked(1)
				for _, cmd := range ev.cmds {
					if strings.Contains(cmd, "%d") {
						cmd = strings.ReplaceAll(cmd, "%d", id)
					}
					admin.do(strings.Fields(cmd)...)
				}
				switch {
				case ev.closed:
					b.expectClosed()
				case ev.want != "":
					expectAnswered(b, ev.want, name)
					if ev.thenClosed {
						b.expectClosed()
					}
				case w.wait:
					// WAIT goes on whatever the keys do: CLIENT UNBLOCK
					// proves it still waits (its reply is the timeout's).
					admin.expect(integer(1), "CLIENT", "UNBLOCK", id)
					expectAnswered(b, timedOut, name+" (then CLIENT UNBLOCK)")
				default:
					admin.do("SELECT", "0")
					admin.do("FLUSHALL")
					for _, cmd := range w.serve {
						admin.do(strings.Fields(cmd)...)
					}
					expectAnswered(b, w.served(proto), name+" (then served)")
				}
				bt.blocked(0)
				b.c.Close()
			}
			// Its timeout.
			b := bt.s.raw()
			if proto == 3 {
				hello3(b)
			}
			admin.do("FLUSHALL")
			for _, cmd := range w.setup {
				admin.do(strings.Fields(cmd)...)
			}
			b.send(encode(w.block("0.1")...))
			expectAnswered(b, timedOut, fmt.Sprintf("RESP%d %s timed out", proto, w.name))
		}
	}
}
