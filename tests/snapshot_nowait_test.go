package tests

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// BGSAVE (as a replica's full sync) waits for a flush, but the actor does
// not: while the flush it asked for cannot commit, because another
// connection holds SQLite's write lock, other clients are served. The
// lock is held until GET has answered; had the actor waited for the
// flush, GET would have answered only after the flush gave up on the lock
// (busy_timeout, 5 s) — and failed_commits would say so. Then the lock
// goes, the flush lands and the snapshot is written.
func TestBgSaveDoesNotStopTheActor(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	r := s.raw()
	r.expect("+OK\r\n", "SET", "k", "v")
	db, err := sql.Open("sqlite", "file:"+s.cfg.DBPath()+"?_pragma=busy_timeout(20000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	lock, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	locked := true
	defer func() {
		if locked {
			lock.ExecContext(ctx, "ROLLBACK")
		}
	}()
	r.expect("+OK\r\n", "SET", "k2", "v2")
	r.expect("+Background saving started\r\n", "BGSAVE")
	other := s.raw()
	other.expect(bulk("v2"), "GET", "k2")
	other.expect("+PONG\r\n", "PING")
	if got := infoField(t, other, "persistence", "failed_commits"); got != "0" {
		t.Fatalf("failed_commits = %s while the lock was held: the actor waited for the flush", got)
	}
	if got := infoField(t, other, "persistence", "rdb_bgsave_in_progress"); got != "1" {
		t.Fatalf("rdb_bgsave_in_progress = %s before its flush could commit", got)
	}
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	locked = false
	waitFor(t, 30*time.Second, "the background save to finish", func() bool {
		return infoField(t, r, "persistence", "rdb_saves") == "1" &&
			infoField(t, r, "persistence", "rdb_bgsave_in_progress") == "0"
	})
	if got := infoField(t, r, "persistence", "rdb_last_bgsave_status"); got != "ok" {
		t.Fatalf("rdb_last_bgsave_status = %s", got)
	}
	if got := infoField(t, r, "persistence", "failed_commits"); got != "0" {
		t.Fatalf("failed_commits = %s", got)
	}
}
