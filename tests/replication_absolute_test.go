package tests

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar/internal/redistest"
)

// What a replica receives for a command whose effect depends on when it
// ran: Redis 7.0's absolute forms (actor/master.go, redisForm, and each
// command's absoluteForm), so that a replica applying the stream later, or
// after a restart, sets the deadline the master set.

// command reads one command of the replication stream as its arguments.
func (r *handReplica) command() []string {
	r.t.Helper()
	head := r.line()
	n, err := strconv.Atoi(strings.TrimPrefix(head, "*"))
	if err != nil || !strings.HasPrefix(head, "*") {
		r.t.Fatalf("the stream: %q is not a command", head)
	}
	args := make([]string, n)
	for i := range args {
		l, err := strconv.Atoi(strings.TrimPrefix(r.line(), "$"))
		if err != nil {
			r.t.Fatalf("the stream: argument %d of %d has no length", i, n)
		}
		b := make([]byte, l+2)
		r.c.SetReadDeadline(time.Now().Add(2 * time.Minute))
		if _, err := io.ReadFull(r.br, b); err != nil {
			r.t.Fatalf("the stream: argument %d: %v", i, err)
		}
		args[i] = string(b[:l])
	}
	return args
}

// TestReplicaStreamHasAbsoluteExpiries runs the same commands on Cellar
// and on a throw-away redis-server, each with a replica made by hand, and
// checks what both streams carry.
func TestReplicaStreamHasAbsoluteExpiries(t *testing.T) {
	t.Parallel()
	red := redistest.StartTCP(t, "--repl-diskless-sync", "no")
	for _, addr := range []string{startServer(t).addr, red.Addr} {
		absoluteExpiries(t, addr)
	}
}

func absoluteExpiries(t *testing.T, addr string) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "src", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	payload, err := c.Dump(ctx, "src").Result()
	if err != nil {
		t.Fatal(err)
	}
	rep := dialReplica(t, addr, false)
	rep.fullSync()
	exat := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	pxat := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	steps := []struct {
		cmd  []any
		want []string // "+N": the time the command ran plus N ms
	}{
		{[]any{"SET", "a", "v", "EX", "100"}, []string{"SET", "a", "v", "PXAT", "+100000"}},
		{[]any{"SET", "a", "v", "PX", "100000", "GET"}, []string{"SET", "a", "v", "PXAT", "+100000"}},
		{[]any{"SET", "a", "v", "EXAT", exat}, []string{"SET", "a", "v", "PXAT", exat + "000"}},
		{[]any{"SET", "a", "v", "KEEPTTL"}, []string{"SET", "a", "v", "KEEPTTL"}},
		{[]any{"SETEX", "b", "100", "v"}, []string{"SET", "b", "v", "PXAT", "+100000"}},
		{[]any{"PSETEX", "b", "100000", "v"}, []string{"SET", "b", "v", "PXAT", "+100000"}},
		{[]any{"EXPIRE", "a", "200"}, []string{"PEXPIREAT", "a", "+200000"}},
		{[]any{"PEXPIRE", "a", "300000", "GT"}, []string{"PEXPIREAT", "a", "+300000", "GT"}},
		{[]any{"EXPIREAT", "a", exat}, []string{"PEXPIREAT", "a", exat + "000"}},
		{[]any{"PEXPIREAT", "a", pxat}, []string{"PEXPIREAT", "a", pxat}},
		{[]any{"GETEX", "a", "EX", "100"}, []string{"PEXPIREAT", "a", "+100000"}},
		{[]any{"GETEX", "a", "PX", "100000"}, []string{"PEXPIREAT", "a", "+100000"}},
		{[]any{"GETEX", "a", "EXAT", exat}, []string{"PEXPIREAT", "a", exat + "000"}},
		{[]any{"GETEX", "a", "PXAT", pxat}, []string{"PEXPIREAT", "a", pxat}},
		{[]any{"GETEX", "a", "PERSIST"}, []string{"PERSIST", "a"}},
		{[]any{"RESTORE", "r", "100000", payload}, []string{"RESTORE", "r", "+100000", payload, "ABSTTL"}},
		{[]any{"RESTORE", "r", pxat, payload, "REPLACE", "ABSTTL"}, []string{"RESTORE", "r", pxat, payload, "REPLACE", "ABSTTL"}},
	}
	for _, st := range steps {
		before := time.Now().UnixMilli()
		if err := c.Do(ctx, st.cmd...).Err(); err != nil {
			t.Fatalf("%s: %v: %v", addr, st.cmd, err)
		}
		after := time.Now().UnixMilli()
		var got []string
		for {
			got = rep.command()
			if name := strings.ToUpper(got[0]); name != "PING" && name != "SELECT" && name != "REPLCONF" {
				break
			}
		}
		if len(got) != len(st.want) {
			t.Fatalf("%s: %v: the replica got %q, want %q", addr, st.cmd, got, st.want)
		}
		for i, w := range st.want {
			ms, relative := strings.CutPrefix(w, "+")
			if !relative {
				if got[i] != w {
					t.Fatalf("%s: %v: the replica got %q, want %q", addr, st.cmd, got, st.want)
				}
				continue
			}
			n, _ := strconv.ParseInt(ms, 10, 64)
			at, err := strconv.ParseInt(got[i], 10, 64)
			if err != nil || at < before+n || at > after+n {
				t.Fatalf("%s: %v: the replica got %q: argument %d is not the time the command ran (%d-%d) plus %d ms", addr, st.cmd, got, i, before, after, n)
			}
		}
	}
}
