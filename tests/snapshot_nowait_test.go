package tests

import (
	"testing"
	"time"
)

// BGSAVE (as a replica's full sync) waits for a flush, but the actor does
// not: while the flush it asked for cannot commit, because another
// connection holds SQLite's write lock, other clients are served. An actor
// that waited for that flush could answer GET only once the flush had
// given up on the lock (its busy_timeout) and failed, so GET answered
// with no flush failed since BGSAVE proves it did not wait. A machine so
// slow that the flush's busy_timeout ran out before GET was answered
// fails the flush too: the attempt is made again, a waiting actor never
// passes one.
func TestBgSaveDoesNotStopTheActor(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	r, other := s.raw(), s.raw()
	const attempts = 5
	for attempt := 1; ; attempt++ {
		failedBefore := infoField(t, r, "persistence", "failed_commits")
		_, unlock := holdWriteLock(t, s.cfg.DBPath())
		r.expect("+OK\r\n", "SET", "k", "v")
		r.expect("+Background saving started\r\n", "BGSAVE")
		other.expect(bulk("v"), "GET", "k")
		other.expect("+PONG\r\n", "PING")
		failedAtGet := infoField(t, other, "persistence", "failed_commits")
		inProgress := infoField(t, other, "persistence", "rdb_bgsave_in_progress")
		unlock()
		waitFor(t, 30*time.Second, "the background save to finish", func() bool {
			return infoField(t, r, "persistence", "rdb_bgsave_in_progress") == "0"
		})
		if failedAtGet == failedBefore {
			// No flush failed: GET was answered while BGSAVE's flush
			// waited for the lock, so BGSAVE was still waiting too.
			if inProgress != "1" {
				t.Fatalf("rdb_bgsave_in_progress = %s before its flush could commit", inProgress)
			}
			break
		}
		if attempt == attempts {
			t.Fatalf("in %d attempts GET was answered only after BGSAVE's flush failed on the lock (failed_commits %s → %s): the actor waited for the flush", attempts, failedBefore, failedAtGet)
		}
	}
	// With the lock gone, the next BGSAVE writes its snapshot.
	r.expect("+Background saving started\r\n", "BGSAVE")
	waitFor(t, 30*time.Second, "the background save to finish", func() bool {
		return infoField(t, r, "persistence", "rdb_bgsave_in_progress") == "0"
	})
	if got := infoField(t, r, "persistence", "rdb_last_bgsave_status"); got != "ok" {
		t.Fatalf("rdb_last_bgsave_status = %s", got)
	}
}
