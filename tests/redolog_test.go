package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The redo log holds every committed write after the position the
// database covers, so a database that lost its last commits is brought
// back by replaying it. The test makes such a database on purpose: it
// restores a snapshot taken midway (SAVE) over the data file after a
// kill -9, and the restart must replay the log from the snapshot's
// position and end with exactly the state before the kill — including the
// writes whose effect was chosen at random (SPOP), relative (EXPIRE) or
// computed (INCRBYFLOAT), and a blocked client's pop.
func TestReplayRebuildsFromTheLog(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--dir", dir}
	p := runCellar(t, true, args...)
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer c.Close()
	do := func(args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil && err != redis.Nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	for i := range 50 {
		do("SET", "before:"+strconv.Itoa(i), strconv.Itoa(i))
	}
	do("SADD", "set", "a", "b", "c", "d", "e", "f", "g", "h")
	do("RPUSH", "list", "1", "2", "3")
	do("SAVE")

	// After the snapshot: what the log alone must bring back.
	for i := range 50 {
		do("SET", "after:"+strconv.Itoa(i), strconv.Itoa(i))
	}
	do("DEL", "before:0")
	do("SPOP", "set", "3")
	do("SPOP", "set")
	do("INCRBYFLOAT", "float", "10.5")
	do("INCRBYFLOAT", "float", "0.1")
	do("EXPIRE", "before:1", "1000")
	do("ZADD", "z", "1", "one", "2", "two")
	do("HSET", "h", "f", "v")
	do("RENAME", "before:2", "renamed")
	// Streams: IDs made from the clock, a group's reads, acks and claims
	// (the PEL's delivery times and the consumers' seen times are
	// absolute, in XINFO STREAM FULL, and must come back the same).
	var ids []string
	for i := range 4 {
		id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: "events", Values: []string{"n", strconv.Itoa(i)}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	do("XGROUP", "CREATE", "events", "g", "0")
	do("XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "events", ">")
	do("XACK", "events", "g", ids[0])
	do("XCLAIM", "events", "g", "bob", "0", ids[1], "JUSTID")
	do("XADD", "events", "MAXLEN", "~", "2", "*", "n", "4")
	do("XDEL", "events", ids[2])
	// A blocked client woken by a push: its pop is a write too.
	blocked := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer blocked.Close()
	popped := make(chan []string, 1)
	go func() {
		v, _ := blocked.BLPop(ctx, 0, "queue").Result()
		popped <- v
	}()
	waitFor(t, 20*time.Second, "the client to block", func() bool {
		return strings.Contains(c.Info(ctx, "clients").Val(), "blocked_clients:1")
	})
	do("RPUSH", "queue", "job1", "job2")
	if v := <-popped; len(v) != 2 || v[1] != "job1" {
		t.Fatalf("BLPOP: %v", v)
	}
	// And a blocked XREADGROUP woken by an XADD: its delivery is a write.
	do("XREADGROUP", "GROUP", "g", "dave", "STREAMS", "events", ">") // the group is at the end
	read := make(chan error, 1)
	go func() {
		_, err := blocked.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "carol", Streams: []string{"events", ">"}, Block: 0}).Result()
		read <- err
	}()
	waitFor(t, 20*time.Second, "the reader to block", func() bool {
		return strings.Contains(c.Info(ctx, "clients").Val(), "blocked_clients:1")
	})
	do("XADD", "events", "*", "n", "5")
	if err := <-read; err != nil {
		t.Fatalf("XREADGROUP BLOCK: %v", err)
	}

	want := dumpKeyspace(t, c)
	p.kill9()

	// The data file goes back to the snapshot; the log stays.
	db := filepath.Join(dir, "cellar.db")
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		os.Remove(f)
	}
	snap, err := os.ReadFile(filepath.Join(dir, "cellar-snapshot.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, snap, 0o644); err != nil {
		t.Fatal(err)
	}

	p = runCellar(t, true, args...)
	if !strings.Contains(p.stderr.String(), "replayed the redo log") {
		t.Fatalf("no replay logged:\n%s", p.stderr.String())
	}
	c2 := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer c2.Close()
	if got := dumpKeyspace(t, c2); got != want {
		t.Fatalf("after replay:\n%s\nwant:\n%s", got, want)
	}
	integrityCheck(t, db)
}

// dumpKeyspace describes every key of db 0: its type, value and absolute
// expiry, sorted by key.
func dumpKeyspace(t *testing.T, c *redis.Client) string {
	t.Helper()
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, k := range keys {
		typ := c.Type(ctx, k).Val()
		var v any
		switch typ {
		case "string":
			v = c.Get(ctx, k).Val()
		case "list":
			v = c.LRange(ctx, k, 0, -1).Val()
		case "set":
			m := c.SMembers(ctx, k).Val()
			sort.Strings(m)
			v = m
		case "hash":
			v = c.HGetAll(ctx, k).Val()
		case "zset":
			v = c.ZRangeWithScores(ctx, k, 0, -1).Val()
		case "stream":
			v = c.Do(ctx, "XINFO", "STREAM", k, "FULL", "COUNT", "0").Val()
		}
		// The absolute expiry: a replayed EXPIRE runs at its recorded time.
		at := c.PExpireTime(ctx, k).Val()
		lines = append(lines, fmt.Sprintf("%s %s %v expires=%d", k, typ, v, at))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
