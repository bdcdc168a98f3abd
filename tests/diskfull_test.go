package tests

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
)

// When the database cannot grow (a full disk, simulated with SQLite's
// max_page_count), a write that needs space gets a clear error and changes
// nothing; what was acknowledged stays; reads go on; the database stays
// sound; and writes resume once space returns. The flush fails and its
// changes wait in memory and the redo log; writes go on until what waits
// reaches storage.max_unflushed (a small one here), and are refused from
// then on.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	diskFull(t, startServer(t, func(c *cellar.Config) {
		c.Storage.MaxUnflushed = 128 << 10
	}))
}

func diskFull(t *testing.T, s *testServer) {
	needCellar(t, s)
	r := s.raw()
	big := strings.Repeat("x", 8000)
	for i := 0; i < 20; i++ {
		r.expect("+OK\r\n", "SET", fmt.Sprint("kept", i), big)
	}
	// Cap the file just above its current size.
	r.expect("+OK\r\n", "CONFIG", "SET", "sqlite-max-page-count", "1")
	full := "-ERR write failed, nothing was changed: database or disk is full\r\n"
	failed := false
	for i := 0; i < 200 && !failed; i++ {
		switch got := r.do("SET", fmt.Sprint("more", i), big); got {
		case "+OK\r\n":
		case full:
			failed = true
		default:
			t.Fatalf("SET at the cap: %q", got)
		}
	}
	if !failed {
		t.Fatal("200 writes of 8 KB fitted under a cap of the current size")
	}
	// A multi-key write is all or nothing.
	r.expect(full, "MSET", "m1", big, "m2", big, "m3", big, "m4", big)
	r.expect(":0\r\n", "EXISTS", "m1", "m2", "m3", "m4")
	// Reads, and writes that need no new space, go on.
	r.expect(bulk(big), "GET", "kept3")
	r.expect(":1\r\n", "DEL", "kept19")
	other := s.raw()
	other.expect(bulk(big), "GET", "kept0")
	if got := other.do("INFO", "persistence"); !strings.Contains(got, "flush_failing:1") || !strings.Contains(got, "failed_writes:") {
		t.Fatalf("INFO persistence: %q", got)
	}
	// Space returns.
	r.expect("+OK\r\n", "CONFIG", "SET", "sqlite-max-page-count", "0")
	r.expect("+OK\r\n", "MSET", "m1", big, "m2", big)
	r.expect(":2\r\n", "EXISTS", "m1", "m2")
	n := other.do("DBSIZE")
	s.restart()
	s.raw().expect(n, "DBSIZE")
	s.stop()
	db, err := sql.Open("sqlite", filepath.Join(s.cfg.Dir, s.cfg.DBFilename))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res string
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.QueryRowContext(c, "PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		t.Fatalf("integrity_check: %q %v", res, err)
	}
}

// What waits for a flush is bounded
// (storage.max_unflushed): a pipelined burst far past the bound waits for
// flushes along the way (INFO's flush_holds counts the rounds that did),
// every write is acknowledged, and all of it is there after a restart.
func TestMemFlushBackPressure(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) {
		c.Storage.MaxUnflushed = 64 << 10
		c.Storage.FlushInterval = time.Minute // only the bound starts flushes
	})
	needCellar(t, s)
	r := s.raw()
	val := strings.Repeat("v", 1000)
	const n = 2000 // 2 MB of values, 32 times the bound
	var batch []byte
	for i := 0; i < n; i++ {
		batch = append(batch, encode("SET", fmt.Sprint("k", i), val)...)
	}
	r.send(batch)
	for i := 0; i < n; i++ {
		if got := r.read(); got != "+OK\r\n" {
			t.Fatalf("SET %d: %q", i, got)
		}
	}
	if holds, _ := strconv.Atoi(infoField(t, r, "persistence", "flush_holds")); holds == 0 {
		t.Fatalf("2 MB of writes past a 64 KB bound and no round waited for a flush")
	}
	s.restart()
	r = s.raw()
	r.expect(fmt.Sprintf(":%d\r\n", n), "DBSIZE")
	for i := 0; i < n; i += 97 {
		r.expect(bulk(val), "GET", fmt.Sprint("k", i))
	}
}
