package tests

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/cellar-db/cellar/internal/wait"
	"github.com/cellar-db/cellar/rdb"
)

// Diskless full syncs (actor/master.go, startPendingSyncs): the RDB's two
// forms on the wire, the delay and the replica count that start a shared
// sync, and real Redis and Cellar replicas reading either form.

// handReplica is a replica made by hand: the handshake, then what the
// master sends, byte for byte.
type handReplica struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

// dialReplica connects to the master at addr and asks for a full sync,
// announcing capa eof when eof.
func dialReplica(t testing.TB, addr string, eof bool) *handReplica {
	t.Helper()
	if eof {
		return dialReplicaCapa(t, addr, "eof", "psync2")
	}
	return dialReplicaCapa(t, addr, "psync2")
}

// dialReplicaCapa connects to the master at addr and asks for a full
// sync, announcing the capabilities capas.
func dialReplicaCapa(t testing.TB, addr string, capas ...string) *handReplica {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &handReplica{t: t, c: c, br: bufio.NewReader(c)}
	capa := []string{"REPLCONF"}
	for _, x := range capas {
		capa = append(capa, "capa", x)
	}
	for _, cmd := range [][]string{{"REPLCONF", "listening-port", "1"}, capa} {
		c.Write(encode(cmd...))
		if got := r.line(); got != "+OK" {
			t.Fatalf("%v: %q", cmd, got)
		}
	}
	c.Write(encode("PSYNC", "?", "-1"))
	return r
}

// line reads one line, skipping the newlines a master sends while its RDB
// is made.
func (r *handReplica) line() string {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	for {
		l, err := r.br.ReadString('\n')
		if err != nil {
			r.t.Fatalf("reading from the master: %v", err)
		}
		if l = strings.TrimRight(l, "\r\n"); l != "" {
			return l
		}
	}
}

// fullSync reads +FULLRESYNC and the RDB; form is "eof" or "length".
func (r *handReplica) fullSync() (offset int64, form string, file []byte) {
	r.t.Helper()
	f := strings.Fields(r.line())
	if len(f) != 3 || f[0] != "+FULLRESYNC" || len(f[1]) != 40 {
		r.t.Fatalf("PSYNC ? -1: %q", f)
	}
	offset, _ = strconv.ParseInt(f[2], 10, 64)
	hdr := r.line()
	if mark, ok := strings.CutPrefix(hdr, "$EOF:"); ok {
		if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(mark) {
			r.t.Fatalf("the EOF mark is not 40 hex characters: %q", hdr)
		}
		for !bytes.HasSuffix(file, []byte(mark)) {
			b, err := r.br.ReadByte()
			if err != nil {
				r.t.Fatalf("reading the RDB up to its mark: %v (%d bytes)", err, len(file))
			}
			file = append(file, b)
		}
		return offset, "eof", file[:len(file)-len(mark)]
	}
	n, err := strconv.Atoi(strings.TrimPrefix(hdr, "$"))
	if err != nil || !strings.HasPrefix(hdr, "$") {
		r.t.Fatalf("the RDB's header: %q", hdr)
	}
	file = make([]byte, n)
	if _, err := io.ReadFull(r.br, file); err != nil {
		r.t.Fatal(err)
	}
	return offset, "length", file
}

// until reads the stream until it holds want.
func (r *handReplica) until(want []byte) []byte {
	r.t.Helper()
	var got []byte
	r.c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	buf := make([]byte, 4096)
	for !bytes.Contains(got, want) {
		n, err := r.br.Read(buf)
		if err != nil {
			r.t.Fatalf("the stream has no %q: %v; it has %q", want, err, got)
		}
		got = append(got, buf[:n]...)
	}
	return got
}

// rdbKeys decodes file whole (its checksum too) and returns its keys and
// its repl-offset.
func rdbKeys(t testing.TB, file []byte) (keys int, replOffset string) {
	t.Helper()
	rd := rdb.NewReader(bytes.NewReader(file))
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return keys, replOffset
		}
		if err != nil {
			t.Fatalf("the RDB does not decode: %v", err)
		}
		switch rec.Kind {
		case rdb.RecordKey:
			keys++
		case rdb.RecordAux:
			if string(rec.AuxKey) == "repl-offset" {
				replOffset = string(rec.AuxValue)
			}
		}
	}
}

func infoLog(c *cellar.Config) { c.LogLevel = "info" }

// TestDisklessSyncForms: with repl-diskless-sync yes (the default) a
// replica that announced capa eof gets "$EOF:<40 hex>\r\n<rdb><mark>";
// one that did not, or any after CONFIG SET repl-diskless-sync no, gets
// "$<length>\r\n<rdb>". Every RDB decodes whole, holds every key, and
// says the offset +FULLRESYNC said. The parameters read back as set.
func TestDisklessSyncForms(t *testing.T) {
	t.Parallel()
	// Redis's default delay, which startServer sets to 0.
	srv := startServer(t, infoLog, func(c *cellar.Config) { c.Master.DisklessSyncDelay = cellar.DefaultConfig().Master.DisklessSyncDelay })
	needCellar(t, srv)
	ctx := context.Background()
	c := srv.client()
	for i := range 200 {
		c.Set(ctx, "k:"+strconv.Itoa(i), i, 0)
	}
	r := srv.raw()
	r.expect(array(bulk("repl-diskless-sync"), bulk("yes")), "CONFIG", "GET", "repl-diskless-sync")
	r.expect(array(bulk("repl-diskless-sync-delay"), bulk("5")), "CONFIG", "GET", "repl-diskless-sync-delay")
	r.expect(array(bulk("repl-diskless-sync-max-replicas"), bulk("0")), "CONFIG", "GET", "repl-diskless-sync-max-replicas")
	r.expect(status("OK"), "CONFIG", "SET", "repl-diskless-sync-delay", "0")

	check := func(name string, eof bool, want string) {
		t.Helper()
		off, form, file := dialReplica(t, srv.addr, eof).fullSync()
		keys, replOff := rdbKeys(t, file)
		if form != want || keys != 200 || replOff != strconv.FormatInt(off, 10) {
			t.Errorf("%s: the RDB came in the %s form with %d keys and repl-offset %s (+FULLRESYNC said %d); want the %s form and 200 keys",
				name, form, keys, replOff, off, want)
		}
	}
	check("capa eof, diskless yes", true, "eof")
	check("no capa eof, diskless yes", false, "length")
	r.expect(status("OK"), "CONFIG", "SET", "repl-diskless-sync", "no")
	r.expect(array(bulk("repl-diskless-sync"), bulk("no")), "CONFIG", "GET", "repl-diskless-sync")
	check("capa eof, diskless no", true, "length")
	r.expect(status("OK"), "CONFIG", "SET", "repl-diskless-sync", "yes")
	check("capa eof, diskless yes again", true, "eof")

	// After the diskless form the stream waits for the replica's first
	// REPLCONF ACK, then comes whole.
	hr := dialReplica(t, srv.addr, true)
	off, form, _ := hr.fullSync()
	c.Set(ctx, "after", "sync", 0)
	hr.c.Write(encode("REPLCONF", "ACK", strconv.FormatInt(off, 10)))
	hr.until(encode("set", "after", "sync"))
	if form != "eof" {
		t.Errorf("the fifth sync came in the %s form", form)
	}
	if got := masterInfo(t, c, "stats", "sync_full"); got != "5" {
		t.Errorf("sync_full: %s, want 5", got)
	}
}

// TestDisklessSyncWaitsForReplicas: with a delay of an hour and
// repl-diskless-sync-max-replicas 2, the first replica waits (it gets no
// RDB on its own) until the second asks; then one snapshot serves both,
// at the same offset.
func TestDisklessSyncWaitsForReplicas(t *testing.T) {
	t.Parallel()
	srv := startServer(t, infoLog)
	needCellar(t, srv)
	ctx := context.Background()
	c := srv.client()
	for i := range 50 {
		c.Set(ctx, "k:"+strconv.Itoa(i), i, 0)
	}
	r := srv.raw()
	r.expect(status("OK"), "CONFIG", "SET", "repl-diskless-sync-delay", "3600")
	r.expect(status("OK"), "CONFIG", "SET", "repl-diskless-sync-max-replicas", "2")
	first := dialReplica(t, srv.addr, true)
	wait.For(t, 60*time.Second, "the first replica to wait for the delay", func() bool {
		return strings.Contains(srv.logBuf.String(), "waiting repl-diskless-sync-delay")
	})
	c.Set(ctx, "between", "1", 0) // in the stream the first replica gets after its RDB
	if strings.Contains(srv.logBuf.String(), "writing an RDB") {
		t.Fatal("the sync started with one replica waiting, before the delay and below repl-diskless-sync-max-replicas")
	}
	second := dialReplica(t, srv.addr, true)
	off1, form1, file1 := first.fullSync()
	off2, form2, file2 := second.fullSync()
	k1, _ := rdbKeys(t, file1)
	k2, _ := rdbKeys(t, file2)
	if form1 != "eof" || form2 != "eof" || off1 != off2 || k1 != k2 || k1 < 50 {
		t.Errorf("first: %s form, offset %d, %d keys; second: %s form, offset %d, %d keys", form1, off1, k1, form2, off2, k2)
	}
	if n := strings.Count(srv.logBuf.String(), `"replicas":2,"diskless":true`); n != 2 {
		t.Errorf("want one sync job for both replicas (two log lines with replicas 2), got %d:\n%s", n, srv.logBuf.String())
	}
}

// TestDisklessSyncRealReplicas: real replicas of Cellar read both forms.
// A redis-server replica's log says which it got ("receiving streamed RDB
// from master with EOF" or "receiving N bytes"), and so does a Cellar
// replica's ("diskless"); every key is the same on all of them after.
func TestDisklessSyncRealReplicas(t *testing.T) {
	t.Parallel()
	srv := startServer(t, infoLog)
	needCellar(t, srv)
	ctx := context.Background()
	c0 := srv.client()
	c3 := srv.client(func(o *redis.Options) { o.DB = 3 })
	redistest.Fill(t, ctx, c0, "pre:")
	redistest.Fill(t, ctx, c3, "pre3:")
	r := srv.raw()
	r.expect(status("OK"), "CONFIG", "SET", "repl-diskless-sync-delay", "1")
	host, port, _ := net.SplitHostPort(srv.addr)

	redisReplica := func(want string) *redistest.Server {
		t.Helper()
		logDir := t.TempDir()
		logFile := filepath.Join(logDir, "redis.log")
		red := redistest.StartTCP(t, "--replicaof", host, port, "--logfile", logFile)
		rc := redis.NewClient(&redis.Options{Addr: red.Addr})
		defer rc.Close()
		caughtUp(t, c0, rc)
		log, _ := os.ReadFile(logFile)
		if !strings.Contains(string(log), want) {
			t.Errorf("the Redis replica's log has no %q:\n%s", want, log)
		}
		return red
	}
	cellarReplica := func(diskless bool) *testServer {
		t.Helper()
		// The RDB's forms: this replica does not ask for the master's
		// snapshot (the physical sync, replication_physical_test.go).
		rep := startServer(t, infoLog, func(c *cellar.Config) { c.ReplicaOf, c.Replica.PhysicalSync = host+" "+port, false })
		rc := rep.client()
		defer rc.Close()
		caughtUp(t, c0, rc)
		want := `"diskless":` + strconv.FormatBool(diskless)
		if !strings.Contains(rep.logBuf.String(), want) {
			t.Errorf("the Cellar replica's log has no %s:\n%s", want, rep.logBuf.String())
		}
		return rep
	}
	red1 := redisReplica("receiving streamed RDB from master with EOF")
	cel1 := cellarReplica(true)
	r.expect(status("OK"), "CONFIG", "SET", "repl-diskless-sync", "no")
	red2 := redisReplica("bytes from master to disk")
	cel2 := cellarReplica(false)

	redistest.Fill(t, ctx, c0, "live:")
	c3.Set(ctx, "live3", "v", time.Hour)
	for _, addr := range []string{red1.Addr, red2.Addr, cel1.addr, cel2.addr} {
		rc := redis.NewClient(&redis.Options{Addr: addr})
		caughtUp(t, c0, rc)
		rc.Close()
		sameKeys(t, 0, srv.addr, addr)
		sameKeys(t, 3, srv.addr, addr)
	}
}
