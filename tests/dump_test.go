package tests

import (
	"context"
	"testing"
	"time"

	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestDumpRestoreWithRedis moves every key of redistest.Fill (every type in
// Redis's small and big encodings) from a real redis-server into Cellar
// with DUMP and RESTORE, and back from Cellar into Redis: each key must
// read the same on both sides (redistest.Describe), and survive a restart.
func TestDumpRestoreWithRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	red := redis.NewClient(&redis.Options{Network: "unix", Addr: redistest.Start(t).Sock, Protocol: 2})
	defer red.Close()
	s := startServer(t)
	cel := s.client()
	keys := redistest.Fill(t, ctx, red, "")
	want := map[string]string{}
	for _, key := range keys {
		d, err := redistest.Describe(ctx, red, key)
		if err != nil {
			t.Fatal(err)
		}
		want[key] = d
		payload, err := red.Dump(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := cel.Restore(ctx, key, 0, payload).Err(); err != nil {
			t.Fatalf("%s: RESTORE of Redis's payload: %v", key, err)
		}
		if got, err := redistest.Describe(ctx, cel, key); err != nil || got != d {
			t.Fatalf("%s: Cellar holds\n%s (%v)\nRedis\n%s", key, got, err, d)
		}
		mine, err := cel.Dump(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := red.RestoreReplace(ctx, "back:"+key, 0, mine).Err(); err != nil {
			t.Fatalf("%s: Redis refuses Cellar's DUMP: %v", key, err)
		}
		if got, err := redistest.Describe(ctx, red, "back:"+key); err != nil || got != d {
			t.Fatalf("%s: back in Redis\n%s (%v)\nwant\n%s", key, got, err, d)
		}
	}
	// TTLs: relative and ABSTTL.
	payload := red.Dump(ctx, "str:raw").Val()
	if err := cel.Restore(ctx, "ttl", 100*time.Second, payload).Err(); err != nil {
		t.Fatal(err)
	}
	if ttl := cel.PTTL(ctx, "ttl").Val(); ttl <= 90*time.Second || ttl > 100*time.Second {
		t.Fatalf("PTTL after RESTORE with 100000 ms: %v", ttl)
	}
	at := time.Now().Add(time.Hour).UnixMilli()
	if err := cel.Do(ctx, "RESTORE", "abs", at, payload, "ABSTTL").Err(); err != nil {
		t.Fatal(err)
	}
	if got := cel.Do(ctx, "PEXPIRETIME", "abs").Val(); got != at {
		t.Fatalf("PEXPIRETIME after ABSTTL %d: %v", at, got)
	}
	needCellar(t, s)
	s.restart()
	cel = s.client()
	for _, key := range keys {
		if got, err := redistest.Describe(ctx, cel, key); err != nil || got != want[key] {
			t.Fatalf("%s after a restart:\n%s (%v)\nwant\n%s", key, got, err, want[key])
		}
	}
}
