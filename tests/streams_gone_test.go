package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Every way a stream can go away under a blocked XREADGROUP, as Redis 7.0
// answers it: the key gone (or holding another type) ends the wait with
// -UNBLOCKED the stream key no longer exists, the stream there but not its
// group with -NOGROUP; a plain XREAD on the same key keeps waiting, and is
// served when a stream comes back with entries after its ID. Replies are
// checked byte for byte in RESP2 and RESP3 (errors are the same in both;
// a served read is an array of [key, entries] or a map). The same test
// runs against redis-server with TEST_SERVER_ADDR.

// streamRead3 is a RESP3 XREAD/XREADGROUP reply for one stream.
func streamRead3(key string, entries ...string) string {
	return "%1\r\n" + bulk(key) + array(entries...)
}

// goneCase is one event: setup runs after the stream s (entry 1-1, group
// g at $) is made and before the readers block; event runs while they
// wait. group is what the XREADGROUP reader reads; read is what the XREAD
// reader (blocked after 1-1) reads at once, "" when it keeps waiting.
type goneCase struct {
	name         string
	setup, event []string
	group, read  func(proto int) string
}

func TestXReadGroupBlockStreamGoneEveryEvent(t *testing.T) {
	t.Parallel()
	gone := func(int) string { return errr("UNBLOCKED the stream key no longer exists") }
	noGroup := func(int) string {
		return errr("NOGROUP the consumer group this client was blocked on no longer exists")
	}
	served := func(id string) func(int) string {
		return func(proto int) string {
			if proto == 3 {
				return streamRead3("s", entry(id, "f", "v"))
			}
			return streamRead("s", entry(id, "f", "v"))
		}
	}
	cases := []goneCase{
		{name: "DEL", event: []string{"DEL s"}, group: gone},
		{name: "UNLINK", event: []string{"UNLINK s"}, group: gone},
		{name: "FLUSHDB", event: []string{"FLUSHDB"}, group: gone},
		{name: "FLUSHDB ASYNC", event: []string{"FLUSHDB ASYNC"}, group: gone},
		{name: "FLUSHALL", event: []string{"FLUSHALL"}, group: gone},
		{name: "FLUSHALL SYNC", event: []string{"FLUSHALL SYNC"}, group: gone},
		{name: "SET over it", event: []string{"SET s x"}, group: gone},
		{name: "RENAME a string over it", setup: []string{"SET t x"}, event: []string{"RENAME t s"}, group: gone},
		{name: "RENAME it away", event: []string{"RENAME s t"}, group: gone},
		{name: "COPY a string over it", setup: []string{"SET t x"}, event: []string{"COPY t s REPLACE"}, group: gone},
		{name: "SUNIONSTORE over it", setup: []string{"SADD t m"}, event: []string{"SUNIONSTORE s t"}, group: gone},
		{name: "MOVE it away", event: []string{"MOVE s 1"}, group: gone},
		{name: "SWAPDB with an empty database", event: []string{"SWAPDB 0 1"}, group: gone},
		{name: "SWAPDB with a string there", setup: []string{"SELECT 1", "SET s x", "SELECT 0"}, event: []string{"SWAPDB 0 1"}, group: gone},
		{name: "SWAPDB with a stream there", setup: []string{"SELECT 1", "XADD s 5-1 f v", "SELECT 0"},
			event: []string{"SWAPDB 0 1"}, group: noGroup, read: served("5-1")},
		{name: "XGROUP DESTROY", event: []string{"XGROUP DESTROY s g"}, group: noGroup},
		{name: "expired", event: []string{"PEXPIRE s 1"}, group: gone},
		{name: "EXPIRE in the past", event: []string{"EXPIRE s 0"}, group: gone},
		{name: "MULTI DEL XADD", event: []string{"MULTI", "DEL s", "XADD s 2-1 f v", "EXEC"}, group: noGroup, read: served("2-1")},
		{name: "MULTI FLUSHDB XADD", event: []string{"MULTI", "FLUSHDB", "XADD s 2-1 f v", "EXEC"}, group: noGroup, read: served("2-1")},
		{name: "MULTI DEL SADD", event: []string{"MULTI", "DEL s", "SADD s m", "EXEC"}, group: gone},
		{name: "RENAME a stream with the group over it", setup: []string{"XADD t 5-1 f v", "XGROUP CREATE t g 0"},
			event: []string{"RENAME t s"}, group: served("5-1"), read: served("5-1")},
		{name: "RENAME a stream without the group over it", setup: []string{"XADD t 5-1 f v"},
			event: []string{"RENAME t s"}, group: noGroup, read: served("5-1")},
	}
	bt := newBlockingTest(t)
	for _, proto := range []int{2, 3} {
		for _, c := range cases {
			name := fmt.Sprintf("RESP%d %s", proto, c.name)
			bt.r.do("SELECT", "0")
			bt.r.do("FLUSHALL")
			bt.expect(check{"XADD s 1-1 f v", bulk("1-1")}, check{"XGROUP CREATE s g $", status("OK")})
			for _, cmd := range c.setup {
				bt.r.do(strings.Fields(cmd)...)
			}
			reader := bt.s.raw()
			group := bt.s.raw()
			if proto == 3 {
				reader.do("HELLO", "3")
				group.do("HELLO", "3")
			}
			reader.send(encode("XREAD", "BLOCK", "0", "STREAMS", "s", "1-1"))
			bt.blocked(1)
			group.send(encode("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"))
			bt.blocked(2)
			for _, cmd := range c.event {
				bt.r.do(strings.Fields(cmd)...)
			}
			expectAnswered(group, c.group(proto), "the group reader after "+name)
			if c.read != nil {
				expectAnswered(reader, c.read(proto), "the XREAD reader after "+name)
				bt.blocked(0)
				continue
			}
			// Served in the same step as the group reader: the XREAD
			// reader is still blocked once the group reader has its reply.
			bt.expectClients("blocked_clients", 1, "after "+name+" (the XREAD reader waits on)")
			reader.c.Close()
			bt.blocked(0)
		}
	}
}

// A reader blocked on several streams through their group is answered as
// soon as one of them goes, whichever it is.
func TestXReadGroupBlockOneOfSeveralStreamsGone(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	for _, kill := range []string{"DEL b", "FLUSHDB", "XGROUP DESTROY b g"} {
		bt.r.do("FLUSHALL")
		bt.expect(check{"XGROUP CREATE a g $ MKSTREAM", status("OK")}, check{"XGROUP CREATE b g $ MKSTREAM", status("OK")})
		b := bt.block(1, "XREADGROUP GROUP g c BLOCK 0 STREAMS a b > >")
		bt.r.do(strings.Fields(kill)...)
		want := errr("UNBLOCKED the stream key no longer exists")
		if strings.HasPrefix(kill, "XGROUP") {
			want = errr("NOGROUP the consumer group this client was blocked on no longer exists")
		}
		expectAnswered(b, want, "the reader of a and b after "+kill)
		bt.blocked(0)
	}
}

// A blocked client answered with an error counts as Redis counts it: in
// INFO errorstats (and so total_error_replies), and as a failed call of its
// command; CLIENT UNBLOCK counts a failed call whichever way it ends the
// wait, and its ERROR form an UNBLOCKED error.
func TestBlockedErrorReplyStats(t *testing.T) {
	t.Parallel()
	bt := newBlockingTest(t)
	bt.expect(check{"CONFIG RESETSTAT", status("OK")})
	bt.expect(check{"XGROUP CREATE s g $ MKSTREAM", status("OK")})
	b := bt.block(1, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >")
	bt.expect(check{"DEL s", integer(1)})
	expectAnswered(b, errr("UNBLOCKED the stream key no longer exists"), "the group reader after DEL")
	bt.expect(check{"XGROUP CREATE s g $ MKSTREAM", status("OK")})
	b = bt.block(1, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >")
	bt.expect(check{"XGROUP DESTROY s g", integer(1)})
	expectAnswered(b, errr("NOGROUP the consumer group this client was blocked on no longer exists"), "the group reader after XGROUP DESTROY")
	for _, how := range []string{"TIMEOUT", "ERROR"} {
		b = bt.s.raw()
		id := b.clientID()
		b.send(encode("BLPOP", "l", "0"))
		bt.blocked(1)
		bt.expect(check{"CLIENT UNBLOCK " + id + " " + how, integer(1)})
		b.read()
	}
	info := bt.r.do("INFO", "errorstats")
	for _, want := range []string{"errorstat_NOGROUP:count=1\r\n", "errorstat_UNBLOCKED:count=2\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO errorstats lacks %q:\n%s", want, info)
		}
	}
	stats := bt.r.do("INFO", "commandstats")
	for _, want := range []string{"cmdstat_xreadgroup:calls=2,", "cmdstat_blpop:calls=2,"} {
		i := strings.Index(stats, want)
		if i < 0 {
			t.Fatalf("INFO commandstats lacks %q:\n%s", want, stats)
		}
		line, _, _ := strings.Cut(stats[i:], "\r\n")
		if !strings.HasSuffix(line, ",rejected_calls=0,failed_calls=2") {
			t.Errorf("%s: want rejected_calls=0,failed_calls=2", line)
		}
	}
}

// expectAnswered is expectWoken whose failure names the waiter that got no
// reply (it is still blocked) rather than only the read's timeout.
func expectAnswered(b *rawConn, want, who string) {
	b.t.Helper()
	b.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := b.reply()
	if err != nil {
		b.t.Fatalf("%s: no reply within 30 s (still blocked?), want %q: %v", who, want, err)
	}
	if got != want {
		b.t.Fatalf("%s got %q, want %q", who, got, want)
	}
}
