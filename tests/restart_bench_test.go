package tests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar/storage"
)

// BenchmarkRestartLargeDatabase measures how long Cellar takes from process
// start to its first reply, and to the first GET of a key, on a 2 GB
// database (TEST_RESTART_GB to change the size): SQLite opens the file and
// nothing is loaded, so the size should not matter. make restart-2g runs it.
// The database is built once, through the storage package, and kept in the
// temporary directory for later runs.
func BenchmarkRestartLargeDatabase(b *testing.B) {
	gb := 2.0
	if v := os.Getenv("TEST_RESTART_GB"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			b.Fatalf("TEST_RESTART_GB=%q", v)
		}
		gb = f
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("cellar-restart-%gg", gb))
	path := filepath.Join(dir, "cellar.db")
	const valSize = 800 // stays inline in its row
	keys := int(gb * (1 << 30) / (valSize + 100))
	if fi, err := os.Stat(path); err != nil || float64(fi.Size()) < gb*(1<<30)*0.9 {
		os.RemoveAll(dir)
		buildLargeDatabase(b, path, keys, valSize)
	}
	fi, _ := os.Stat(path)
	b.Logf("database: %s, %.2f GB, %d keys", path, float64(fi.Size())/(1<<30), keys)
	cellarBinary(b) // built before the clock starts: a start is what is timed
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		p := runCellar(b, true, "--dir", dir)
		first := time.Since(start)
		c := redis.NewClient(&redis.Options{Addr: p.addr})
		key := fmt.Sprintf("key:%010d", keys/2)
		v, err := c.Get(ctx, key).Result()
		get := time.Since(start)
		if err != nil || len(v) != valSize {
			b.Fatalf("GET %s: %d bytes, %v", key, len(v), err)
		}
		c.Close()
		b.Logf("first reply (PING) %v after start; first GET %v", first, get)
		b.ReportMetric(float64(first.Milliseconds()), "ms-to-first-reply")
		p.kill9()
	}
}

func buildLargeDatabase(b *testing.B, path string, keys, valSize int) {
	b.Logf("building a %d-key database at %s (once)", keys, path)
	s, err := storage.Open(storage.Options{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	val := bytes.Repeat([]byte("v"), valSize)
	key := make([]byte, 0, 32)
	for i := 0; i < keys; i++ {
		if i%100000 == 0 {
			if i > 0 {
				if _, _, err := s.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Begin(); err != nil {
				b.Fatal(err)
			}
		}
		key = fmt.Appendf(key[:0], "key:%010d", i)
		val[0] = byte(i)
		if err := s.SetString(0, key, val, 0, false); err != nil {
			b.Fatal(err)
		}
	}
	if _, _, err := s.Commit(); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRestartReplayFullLog measures a restart that must replay the
// most the redo log can hold unflushed at the default bound: SETs are
// written with timed flushes held off (storage.flush_interval 1m) until
// just under storage.flush_bytes (64 MB, set) of records wait (a checkpoint may
// still flush on the way: what counts is what waits at the end), the process is
// killed, and the time from the new process's start to its first reply
// is what the replay costs. make restart-2g runs it too.
func BenchmarkRestartReplayFullLog(b *testing.B) {
	const bound = 64 << 20 // storage.flush_bytes's default past a 2 GB memory bound (Config.FlushWindow)
	env := []string{"CELLAR_STORAGE__FLUSH_INTERVAL=1m", fmt.Sprintf("CELLAR_STORAGE__FLUSH_BYTES=%d", bound)}
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		p := runCellarEnv(b, env, true, "--dir", dir)
		c := redis.NewClient(&redis.Options{Addr: p.addr})
		val := bytes.Repeat([]byte("v"), 64)
		writes, unflushed := 0, 0
		for unflushed < bound-(1<<20) {
			pipe := c.Pipeline()
			for range 1000 {
				pipe.Set(ctx, fmt.Sprintf("key:%010d", writes), val, 0)
				writes++
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			unflushed = infoInt(b, c, "persistence", "unflushed_log_bytes")
		}
		c.Close()
		p.kill9()

		start := time.Now()
		q := runCellarEnv(b, env, true, "--dir", dir)
		first := time.Since(start)
		c = redis.NewClient(&redis.Options{Addr: q.addr})
		if n := c.DBSize(ctx).Val(); n != int64(writes) {
			b.Fatalf("DBSIZE %d after replay, want %d", n, writes)
		}
		c.Close()
		b.Logf("%d writes, the last %d bytes of log records unflushed: first reply %v after start", writes, unflushed, first)
		b.ReportMetric(float64(first.Milliseconds()), "ms-to-first-reply")
		q.kill9()
	}
}
