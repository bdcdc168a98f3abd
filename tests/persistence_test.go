package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
)

func infoField(t *testing.T, r *rawConn, section, field string) string {
	t.Helper()
	info := r.do("INFO", section)
	i := strings.Index(info, field+":")
	if i < 0 {
		t.Fatalf("INFO %s has no %s:\n%s", section, field, info)
	}
	v := info[i+len(field)+1:]
	return v[:strings.Index(v, "\r\n")]
}

// SAVE replies once a consistent snapshot is on disk; the snapshot is a
// complete Cellar database that a server can be started on.
func TestSaveWritesUsableSnapshot(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	r := s.raw()
	before, _ := strconv.ParseInt(strings.Trim(r.do("LASTSAVE"), ":\r\n"), 10, 64)
	for i := 0; i < 500; i++ {
		r.expect("+OK\r\n", "SET", fmt.Sprint("k", i), fmt.Sprint(i))
	}
	r.expect("+OK\r\n", "SELECT", "3")
	r.expect(":2\r\n", "RPUSH", "list", "a", "b")
	// Writers keep going while the snapshot is taken.
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w := s.raw()
		for i := 0; !stop.Load(); i++ {
			w.expect("+OK\r\n", "SET", fmt.Sprint("during", i), "x")
		}
	}()
	r.expect("+OK\r\n", "SAVE")
	stop.Store(true)
	wg.Wait()
	after, _ := strconv.ParseInt(strings.Trim(r.do("LASTSAVE"), ":\r\n"), 10, 64)
	if after < before {
		t.Fatalf("LASTSAVE went from %d to %d", before, after)
	}
	if got := infoField(t, r, "persistence", "rdb_saves"); got != "1" {
		t.Fatalf("rdb_saves = %s", got)
	}
	snap := filepath.Join(s.cfg.Dir, s.cfg.SnapshotFilename)
	// A second Cellar on a copy of the snapshot has the data.
	dir := t.TempDir()
	data, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cellar.db"), data, 0o644)
	s2 := startServer(t, func(c *cellar.Config) { c.Dir = dir })
	r2 := s2.raw()
	r2.expect(bulk("499"), "GET", "k499")
	r2.expect("+OK\r\n", "SELECT", "3")
	r2.expect("*2\r\n$1\r\na\r\n$1\r\nb\r\n", "LRANGE", "list", "0", "-1")
}

func TestBgSave(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	r := s.raw()
	r.expect("+OK\r\n", "SET", "k", "v")
	r.expect("+Background saving started\r\n", "BGSAVE")
	waitFor(t, 20*time.Second, "the background save to finish", func() bool {
		return infoField(t, r, "persistence", "rdb_saves") == "1" &&
			infoField(t, r, "persistence", "rdb_bgsave_in_progress") == "0"
	})
	if got := infoField(t, r, "persistence", "rdb_last_bgsave_status"); got != "ok" {
		t.Fatalf("rdb_last_bgsave_status = %s", got)
	}
	if _, err := os.Stat(filepath.Join(s.cfg.Dir, s.cfg.SnapshotFilename)); err != nil {
		t.Fatal(err)
	}
	r.expect("-ERR syntax error\r\n", "BGSAVE", "NOW")
}

// SHUTDOWN stops the server without a reply, after writing what it has;
// SHUTDOWN SAVE takes a snapshot first.
func TestShutdownCommand(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	r := s.raw()
	r.expect("-ERR No shutdown in progress.\r\n", "SHUTDOWN", "ABORT")
	r.expect("-ERR syntax error\r\n", "SHUTDOWN", "SAVE", "NOSAVE")
	r.expect("-ERR syntax error\r\n", "SHUTDOWN", "PLEASE")
	r.expect("+OK\r\n", "SET", "k", "kept")
	snap := filepath.Join(s.cfg.Dir, s.cfg.SnapshotFilename)
	r.send(encode("SHUTDOWN", "SAVE", "NOW"))
	r.expectClosed()
	select {
	case <-s.srv.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not stop")
	}
	if _, err := os.Stat(snap); err != nil {
		t.Fatalf("SHUTDOWN SAVE wrote no snapshot: %v", err)
	}
	s.srv = nil
	s.start()
	s.raw().expect(bulk("kept"), "GET", "k")
}

// Under continuous writes the WAL is checkpointed (phase 1 on the offload
// pool, phase 2 on the actor) and starts over, so it stays bounded.
func TestWALStaysBounded(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.SQLite.CheckpointPages = 64 })
	needCellar(t, s)
	var stop atomic.Bool
	var wg sync.WaitGroup
	val := strings.Repeat("v", 1000)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := s.raw()
			for i := 0; !stop.Load(); i++ {
				r.expect("+OK\r\n", "SET", fmt.Sprintf("w%d:%d", w, i%2000), val)
			}
		}(w)
	}
	probe := s.raw()
	var maxWAL int64
	waitFor(t, 60*time.Second, "five checkpoints", func() bool {
		n, _ := strconv.ParseInt(infoField(t, probe, "persistence", "wal_bytes"), 10, 64)
		maxWAL = max(maxWAL, n)
		c, _ := strconv.Atoi(infoField(t, probe, "persistence", "checkpoints"))
		return c >= 5
	})
	stop.Store(true)
	wg.Wait()
	t.Logf("largest WAL seen: %d bytes (checkpoint at %d)", maxWAL, 64*4096)
	if maxWAL > 16<<20 {
		t.Fatalf("the WAL grew to %d bytes with checkpoints every %d", maxWAL, 64*4096)
	}
}
