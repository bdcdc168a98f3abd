package tests

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestCrashExecAllOrNothing kills a real Cellar process (SIGKILL) while
// clients run transactions, restarts it and checks every transaction
// whole: each writer's EXEC n sets t<w>:<n>:a, adds one to c<w> and sets
// t<w>:<n>:b. After the restart every acknowledged EXEC is there, the one
// in flight at the kill is there whole or not at all, and c<w> counts
// exactly the EXECs present. (A torn log write inside an EXEC's record is
// TestExecAllOrNothingInTheLog, in actor/.)
func TestCrashExecAllOrNothing(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"everysec", "always"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--dir", dir, "--durability", mode}
			const writers = 8
			acked := make([]atomic.Int64, writers)
			for i := range acked {
				acked[i].Store(-1)
			}
			next := make([]int64, writers)
			replays := 0
			for k := range crashKills(t) {
				p := runCellar(t, true, args...)
				var total atomic.Int64
				var wg sync.WaitGroup
				stop := make(chan struct{})
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						// Only the kill ends a writer: a reply slow behind a busy disk
						// (go-redis gives up after 3 s by default) would end it early,
						// and the wait before the kill would wait for writes no one sends.
						c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, ReadTimeout: replyTimeout, WriteTimeout: replyTimeout})
						defer c.Close()
						for n := next[w]; ; n++ {
							select {
							case <-stop:
								return
							default:
							}
							key := fmt.Sprintf("t%d:%d", w, n)
							_, err := c.TxPipelined(ctx, func(pp redis.Pipeliner) error {
								pp.Set(ctx, key+":a", key, 0)
								pp.Incr(ctx, fmt.Sprintf("c%d", w))
								pp.Set(ctx, key+":b", key, 0)
								return nil
							})
							if err != nil {
								return // the server is gone
							}
							acked[w].Store(n)
							next[w] = n + 1
							total.Add(1)
						}
					}()
				}
				threshold := int64(100 + rand.IntN(800))
				waitFor(t, 60*time.Second, "transactions before the kill", func() bool { return total.Load() >= threshold })
				p.kill9()
				close(stop)
				wg.Wait()
				p = runCellar(t, true, args...)
				if strings.Contains(p.stderr.String(), "replayed the redo log") {
					replays++
				}
				c := redis.NewClient(&redis.Options{Addr: p.addr})
				for w := range writers {
					upTo := acked[w].Load()
					present := int64(0)
					// The acknowledged ones and the one that may have been
					// in flight (whose reply the kill may have eaten).
					for n := int64(0); n <= upTo+1; n++ {
						key := fmt.Sprintf("t%d:%d", w, n)
						vals, err := c.MGet(ctx, key+":a", key+":b").Result()
						if err != nil {
							t.Fatal(err)
						}
						a, b := vals[0] != nil, vals[1] != nil
						switch {
						case a && b:
							present++
						case a != b:
							t.Fatalf("kill %d: transaction %s is half there (a %v, b %v)", k+1, key, a, b)
						case n <= upTo:
							t.Fatalf("kill %d: acknowledged transaction %s lost", k+1, key)
						}
					}
					if got, _ := c.Get(ctx, fmt.Sprintf("c%d", w)).Int64(); got != present {
						t.Fatalf("kill %d: counter c%d is %d with %d transactions present", k+1, w, got, present)
					}
					// The next round goes on after what is there.
					next[w] = present
					acked[w].Store(present - 1)
				}
				c.Close()
				p.kill9()
				t.Logf("kill %d: every transaction whole", k+1)
			}
			if replays == 0 {
				t.Fatalf("no restart replayed the redo log: the kills did not test it")
			}
		})
	}
}
