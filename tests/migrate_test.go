package tests

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/cellar-db/cellar/internal/wait"
	"github.com/redis/go-redis/v9"
)

// `cellar migrate` (issue 16's path for a Redis that refuses PSYNC)
// against a real redis-server whose SYNC and PSYNC are renamed away (and,
// in the second variant, DUMP too), with keys of every type and TTLs in
// several databases and a writer changing it during the back-fill.

const noSyncConf = "rename-command SYNC \"\"\nrename-command PSYNC \"\"\n"

// migrateKeys is how many keys seed writes beside redistest.Fill's;
// MIGRATE_TEST_KEYS raises it.
func migrateKeys(t *testing.T) int {
	if v := os.Getenv("MIGRATE_TEST_KEYS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("MIGRATE_TEST_KEYS=%q: %v", v, err)
		}
		return n
	}
	return 6000
}

// runMigrate runs `cellar migrate args...` to its end and returns its exit
// status and what it printed.
func runMigrate(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(cellarBinary(t), append([]string{"migrate"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	default:
		t.Fatalf("cellar migrate: %v\n%s", err, out.String())
		return 0, ""
	}
}

func TestMigrateWithoutPSYNC(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"dump", "no-dump"} {
		t.Run(variant, func(t *testing.T) {
			ctx := context.Background()
			conf := noSyncConf
			if variant == "no-dump" {
				conf += "rename-command DUMP \"\"\n"
			}
			red := redistest.StartTCPConfig(t, conf)
			rc := redis.NewClient(&redis.Options{Addr: red.Addr, Protocol: 2})
			defer rc.Close()
			if err := rc.Do(ctx, "PSYNC", "?", "-1").Err(); err == nil || !strings.Contains(err.Error(), "unknown command") {
				t.Fatalf("PSYNC on the source: %v, want unknown command", err)
			}
			seed(t, ctx, red.Addr, migrateKeys(t))
			cel := startServer(t)
			from := "redis://" + red.Addr

			w := startWriter(ctx, red.Addr)
			code, out := runMigrate(t, "--from", from, "--to", cel.addr)
			if code != 0 || !strings.Contains(out, "caught up") {
				w.halt(t)
				t.Fatalf("first run: exit %d\n%s", code, out)
			}
			t.Logf("first run:\n%s", out)
			if variant == "no-dump" && !strings.Contains(out, "the source refuses DUMP") {
				t.Fatalf("no line about DUMP refused:\n%s", out)
			}
			w.halt(t)
			if w.ops.Load() == 0 {
				t.Fatal("the writer wrote nothing")
			}
			// The final catch-up, the writer stopped.
			code, out = runMigrate(t, "--from", from, "--to", cel.addr, "--verify")
			if code != 0 || !strings.Contains(out, "verify: ") || !strings.Contains(out, " 0 differences") {
				t.Fatalf("catch-up: exit %d\n%s", code, out)
			}
			n := compareAll(t, ctx, red.Addr, cel.addr)
			t.Logf("%d keys compared equal", n)
			if n < migrateKeys(t) {
				t.Fatalf("compared %d keys, want at least %d", n, migrateKeys(t))
			}
			// The checkpoint is gone at the SYNC point.
			if x := cel.client().Exists(ctx, "cellar:migrate:"+red.Addr).Val(); x != 0 {
				t.Fatal("the checkpoint key outlived the migration")
			}

			// A difference planted on purpose: --verify-only finds it.
			cc := redis.NewClient(&redis.Options{Addr: cel.addr, DB: 1, Protocol: 2})
			defer cc.Close()
			if err := cc.Set(ctx, "planted", "x", 0).Err(); err != nil {
				t.Fatal(err)
			}
			code, out = runMigrate(t, "--from", from, "--to", cel.addr, "--verify-only")
			if code != 1 || !strings.Contains(out, `difference: db 1 key "planted": only on the target`) || !strings.Contains(out, "1 differences") {
				t.Fatalf("verify of a planted difference: exit %d\n%s", code, out)
			}
		})
	}
}

// TestMigrateResumes kills a migration during its back-fill: the next run
// starts from the checkpointed cursor, not from the beginning.
func TestMigrateResumes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	red := redistest.StartTCPConfig(t, noSyncConf)
	seed(t, ctx, red.Addr, 30000)
	cel := startServer(t)
	cc := cel.client()
	ck := "cellar:migrate:" + red.Addr

	cmd := exec.Command(cellarBinary(t), "migrate", "--from", "redis://"+red.Addr, "--to", cel.addr, "--count", "50", "--max-rate", "3000")
	var out syncBuffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, time.Minute, "a checkpoint with 1000 keys copied", func() bool {
		n, _ := strconv.Atoi(cc.HGet(ctx, ck, "scanned").Val())
		return n >= 1000
	})
	cmd.Process.Kill()
	cmd.Wait()
	if strings.Contains(out.String(), "caught up") {
		t.Fatalf("the migration finished before it was killed:\n%s", out.String())
	}
	saved, err := cc.HGetAll(ctx, ck).Result()
	if err != nil || saved["cursor"] == "" {
		t.Fatalf("checkpoint after the kill: %v %v", saved, err)
	}

	code, out2 := runMigrate(t, "--from", "redis://"+red.Addr, "--to", cel.addr)
	want := "resuming from the checkpoint: db " + saved["db"] + " cursor " + saved["cursor"] + " (" + saved["scanned"] + " keys scanned"
	if code != 0 || !strings.Contains(out2, want) || !strings.Contains(out2, "caught up") {
		t.Fatalf("resumed run: exit %d, want a line %q\n%s", code, want, out2)
	}
	t.Logf("resumed run:\n%s", out2)
	compareAll(t, ctx, red.Addr, cel.addr)
}

// TestMigrateWaitlistLimit: more changed keys than --max-dirty stop the
// run with a clear error, the checkpoint kept.
func TestMigrateWaitlistLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	red := redistest.StartTCPConfig(t, noSyncConf)
	seed(t, ctx, red.Addr, 20000)
	cel := startServer(t)
	w := startWriter(ctx, red.Addr)
	code, out := runMigrate(t, "--from", "redis://"+red.Addr, "--to", cel.addr, "--max-dirty", "10", "--count", "50")
	w.halt(t)
	if code != 1 || !strings.Contains(out, "the waitlist is full: more than 10 keys changed") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// TestMigrateNeedsNotifications: a source that refuses CONFIG SET gets a
// clear message and exit status 2.
func TestMigrateNeedsNotifications(t *testing.T) {
	t.Parallel()
	red := redistest.StartTCPConfig(t, noSyncConf+"rename-command CONFIG \"\"\n")
	cel := startServer(t)
	code, out := runMigrate(t, "--from", "redis://"+red.Addr, "--to", cel.addr)
	if code != 2 || !strings.Contains(out, "the source refuses CONFIG SET notify-keyspace-events KEA") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// TestMigrateFollow: with --follow, changes after the SYNC point reach
// Cellar (a write, a deletion, an expiry) until SIGTERM ends the run with
// status 0. Both servers want a password: the source's in the URL, the
// target's in --to-password.
func TestMigrateFollow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	red := redistest.StartTCPConfig(t, noSyncConf+"user mig on >s3cret ~* &* +@all\n")
	rc := redis.NewClient(&redis.Options{Addr: red.Addr, DB: 2, Protocol: 2, Username: "mig", Password: "s3cret"})
	defer rc.Close()
	if err := rc.Set(ctx, "gone", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cel := startServer(t, func(c *cellar.Config) { c.RequirePass = "t0p" })
	cc := redis.NewClient(&redis.Options{Addr: cel.addr, DB: 2, Protocol: 2, Password: "t0p"})
	defer cc.Close()

	cmd := exec.Command(cellarBinary(t), "migrate", "--from", "redis://mig:s3cret@"+red.Addr, "--to", cel.addr, "--to-password", "t0p", "--follow")
	var out syncBuffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	wait.For(t, time.Minute, "caught up", func() bool { return strings.Contains(out.String(), "caught up") })
	if cc.Get(ctx, "gone").Val() != "1" {
		t.Fatal("the back-fill did not copy db 2's key")
	}
	rc.Set(ctx, "new", "v", 0)
	rc.Del(ctx, "gone")
	rc.Set(ctx, "short", "s", 0)
	rc.PExpire(ctx, "short", 50*time.Millisecond)
	wait.For(t, time.Minute, "the changes to reach Cellar", func() bool {
		return cc.Get(ctx, "new").Val() == "v" && cc.Exists(ctx, "gone").Val() == 0 && rc.Exists(ctx, "short").Val() == 0 && cc.Exists(ctx, "short").Val() == 0
	})
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "stopped following") {
		t.Fatalf("no line about stopping:\n%s", out.String())
	}
	if v := rc.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]; v != "" {
		t.Fatalf("notify-keyspace-events left %q on the source, was empty", v)
	}
}

// TestMigrateTLS: the source is reached over TLS (--tls, with the CA that
// signed its certificate in --tls-ca).
func TestMigrateTLS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	certKey, ca := selfSignedCert(t, t.TempDir())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tlsAddr := l.Addr().String()
	l.Close()
	_, tlsPort, _ := net.SplitHostPort(tlsAddr)
	red := redistest.StartTCPConfig(t, noSyncConf, "--tls-port", tlsPort, "--tls-cert-file", certKey, "--tls-key-file", certKey,
		"--tls-ca-cert-file", ca, "--tls-auth-clients", "no")
	seed(t, ctx, red.Addr, 600)
	cel := startServer(t)
	if code, out := runMigrate(t, "--from", "redis://"+tlsAddr, "--to", cel.addr); code != 1 {
		t.Fatalf("plain TCP to a TLS port: exit %d\n%s", code, out)
	}
	code, out := runMigrate(t, "--from", "redis://"+tlsAddr, "--tls", "--tls-ca", ca, "--to", cel.addr)
	if code != 0 || !strings.Contains(out, "caught up") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	compareAll(t, ctx, red.Addr, cel.addr)
}
