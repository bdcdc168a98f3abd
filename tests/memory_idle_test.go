package tests

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar/internal/wait"
)

// TestIdleServerReturnsTheBurstsGarbage: after a bulk load, the real
// binary, left idle (a client polling MEMORY STATS is no load), runs a
// collection and returns the free pages: MEMORY STATS counts the return
// and the heap in use shrinks below what it was right after the load,
// with every key still there.
func TestIdleServerReturnsTheBurstsGarbage(t *testing.T) {
	t.Parallel()
	p := runCellar(t, true, "--dir", filepath.Join(t.TempDir(), "data"))
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 3})
	defer c.Close()
	stat := func(name string) int64 {
		t.Helper()
		v, err := c.Do(ctx, "MEMORY", "STATS").Result()
		m, ok := v.(map[any]any)
		n, isInt := m[name].(int64)
		if err != nil || !ok || !isInt {
			t.Fatalf("MEMORY STATS %s: %#v, %v", name, v, err)
		}
		return n
	}
	// 100 k keys of 1 KB: the heap's garbage (request buffers, the
	// batches the flushes wrote) is well past the collector's headroom.
	val := strings.Repeat("v", 1024)
	const keys = 100_000
	for i := 0; i < keys; i += 1000 {
		pipe := c.Pipeline()
		for j := i; j < i+1000; j++ {
			pipe.Set(ctx, "k:"+strconv.Itoa(j), val, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	returns, inuse := stat("go.idle-returns"), stat("go.heap.inuse")
	wait.For(t, 2*time.Minute, "the idle server to return the load's garbage (MEMORY STATS go.idle-returns to grow)", func() bool {
		return stat("go.idle-returns") > returns
	})
	wait.For(t, time.Minute, "the heap in use to shrink below its size after the load", func() bool {
		return stat("go.heap.inuse") < inuse
	})
	if n := c.DBSize(ctx).Val(); n != keys {
		t.Fatalf("DBSIZE %d after the return, want %d", n, keys)
	}
	if got := c.Get(ctx, "k:4242").Val(); got != val {
		t.Fatalf("k:4242 after the return: %d bytes", len(got))
	}
}
