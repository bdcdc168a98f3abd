package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// newClient is a go-redis client for seeding and for the scenarios
// redis-benchmark cannot express. RESP2 and no CLIENT SETINFO, so it
// speaks the same subset to every server; no retries, so an error is seen.
func newClient(addr string, pool int) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:            addr,
		Protocol:        2,
		DisableIdentity: true,
		PoolSize:        pool,
		MaxRetries:      -1,
		DialTimeout:     5 * time.Second,
		ReadTimeout:     30 * time.Second,
		WriteTimeout:    30 * time.Second,
	})
}

// errSample reports a client error as a sample: "unsupported" when the
// server does not know the command, "failed" otherwise.
func errSample(what string, err error) sample {
	msg := err.Error()
	if strings.Contains(msg, "unknown command") {
		return sample{Status: statusUnsupported, Detail: shortUnknown(msg)}
	}
	return sample{Status: statusFailed, Detail: what + ": " + msg}
}

// seedSortedSet fills bench:zset with members m:0..m:n-1 scored 0..n-1,
// for ZRANGEBYSCORE.
func seedSortedSet(ctx context.Context, addr string, n int) error {
	c := newClient(addr, 1)
	defer c.Close()
	if err := c.Del(ctx, "bench:zset").Err(); err != nil {
		return err
	}
	const batch = 500
	for i := 0; i < n; i += batch {
		zs := make([]redis.Z, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			zs = append(zs, redis.Z{Score: float64(j), Member: "m:" + strconv.Itoa(j)})
		}
		if err := c.ZAdd(ctx, "bench:zset", zs...).Err(); err != nil {
			return err
		}
	}
	return nil
}

// seedList makes key hold exactly n elements of size bytes, so that
// n BRPOPs all find an element.
func seedList(ctx context.Context, addr, key string, n, size int) error {
	c := newClient(addr, 1)
	defer c.Close()
	if err := c.Del(ctx, key).Err(); err != nil {
		return err
	}
	// One element per RPUSH, pipelined: every server takes that form
	// (Redka's RPUSH takes a single element).
	const batch = 1000
	val := payload(size, 0)
	for i := 0; i < n; i += batch {
		pipe := c.Pipeline()
		for j := i; j < min(i+batch, n); j++ {
			pipe.RPush(ctx, key, val)
		}
		cmds, err := pipe.Exec(ctx)
		if err != nil {
			return err
		}
		for _, cmd := range cmds {
			if err := cmd.Err(); err != nil {
				return err
			}
		}
	}
	got, err := c.LLen(ctx, key).Result()
	if err != nil {
		return err
	}
	if got != int64(n) {
		return fmt.Errorf("seeding %s: LLEN is %d, want %d", key, got, n)
	}
	return nil
}

// payload is size bytes that differ with i (SQLite skips rewriting a cell
// whose bytes did not change, so constant values would flatter a store).
func payload(size int, i int) []byte {
	b := make([]byte, size)
	x := uint64(i)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	for k := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[k] = 'a' + byte(x%26)
	}
	return b
}

// seedScript loads script (SCRIPT LOAD) and checks that its SHA1 is the
// one the benchmark's EVALSHA names.
func seedScript(ctx context.Context, addr, script string) error {
	c := newClient(addr, 1)
	defer c.Close()
	sha, err := c.ScriptLoad(ctx, script).Result()
	if err != nil {
		return err
	}
	if sha != rateLimiterSHA {
		return fmt.Errorf("the rate limiter's SHA1 is %s, the benchmark names %s", sha, rateLimiterSHA)
	}
	return nil
}

// seedFunction loads a function library, replacing it.
func seedFunction(ctx context.Context, addr, lib string) error {
	c := newClient(addr, 1)
	defer c.Close()
	return c.FunctionLoadReplace(ctx, lib).Err()
}
