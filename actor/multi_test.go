package actor

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar/storage/redo"
)

// showTx renders a transaction record's inner records as showRecords does.
func showTx(t *testing.T, rec []byte) []string {
	t.Helper()
	inner, err := decodeTx(rec)
	if err != nil {
		t.Fatalf("transaction record %q: %v", rec, err)
	}
	return showRecords(t, inner)
}

// EXEC's writes are one record of the redo log: a transaction record with
// each write's own record inside, in order (SPOP as SREM, as anywhere).
// An EXEC with one write is that write's ordinary record; one without
// writes records nothing. Replayed, the records rebuild the same keyspace.
func TestExecIsOneRecord(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.recording()
	h.submit(1, []string{"SADD", "s", "m"}, []string{"SET", "x", "0"})
	h.next()
	recs := h.takeRecords()

	h.submit(1, []string{"MULTI"}, []string{"SET", "a", "1"}, []string{"SPOP", "s"}, []string{"INCR", "a"},
		[]string{"GET", "a"}, []string{"DEL", "nothing"}, []string{"LPUSH", "a", "x"}, []string{"EXEC"})
	want := "+OK\r\n" + strings.Repeat("+QUEUED\r\n", 6) +
		"*6\r\n+OK\r\n$1\r\nm\r\n:2\r\n$1\r\n2\r\n:0\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	if got := string(h.next().Reply); got != want {
		t.Fatalf("EXEC: %q, want %q", got, want)
	}
	tx := h.takeRecords()
	if len(tx) != 1 || tx[0][1] != effectGroup {
		t.Fatalf("EXEC made %d records, want one transaction record", len(tx))
	}
	got := strings.Join(showTx(t, tx[0]), "\n")
	if want := "0 SET a 1\n0 SREM s m\n0 INCR a"; got != want {
		t.Fatalf("EXEC's inner records:\n%s\nwant:\n%s", got, want)
	}
	recs = append(recs, tx...)

	h.submit(1, []string{"MULTI"}, []string{"SET", "b", "1"}, []string{"GET", "b"}, []string{"EXEC"})
	h.next()
	one := h.takeRecords()
	expectRecords(t, one, "0 SET b 1")
	recs = append(recs, one...)

	h.submit(1, []string{"MULTI"}, []string{"GET", "a"}, []string{"EXEC"})
	h.next()
	expectRecords(t, h.takeRecords())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h.a.Stop(ctx)
	if live, got := dump(t, h.a.st), dump(t, replayed(t, recs)); got != live {
		t.Fatalf("the replayed keyspace differs from the live one:\n%s", diffLines(live, got))
	}
}

// decodeTx takes exactly a well-formed transaction record.
func TestDecodeTxRejects(t *testing.T) {
	var e effects
	e.emit(false, 0, 1, [][]byte{[]byte("SET"), []byte("a"), []byte("1")})
	e.emit(false, 0, 1, [][]byte{[]byte("SET"), []byte("b"), []byte("2")})
	e.group(0)
	good := append([]byte(nil), e.buf...)
	if _, err := decodeTx(good); err != nil {
		t.Fatalf("good record: %v", err)
	}
	bad := map[string][]byte{
		"empty":        {},
		"not tx":       {effectVersion, 0, 0},
		"one inner":    {effectVersion, effectGroup, 1, 2, effectVersion, 0},
		"truncated":    good[:len(good)-1],
		"trailing":     append(append([]byte(nil), good...), 0),
		"count lies":   {effectVersion, effectGroup, 100, 2, effectVersion, 0},
		"nested":       {effectVersion, effectGroup, 2, 2, effectVersion, effectGroup, 2, effectVersion, 0},
		"short length": {effectVersion, effectGroup, 2, 0x80},
	}
	for name, p := range bad {
		if _, err := decodeTx(p); err == nil {
			t.Errorf("%s: %q decoded", name, p)
		}
	}
}

// A crash can never leave half an EXEC applied: the log holds a SET, then
// an EXEC's three writes as one transaction record; the segment file is cut
// at every byte inside that record (a torn write), the log is reopened
// (recovery drops the torn tail) and replayed into a fresh database. Every
// cut must give the SET alone; the whole file gives everything.
func TestExecAllOrNothingInTheLog(t *testing.T) {
	var e effects
	set := func(k, v string) [][]byte { return [][]byte{[]byte("SET"), []byte(k), []byte(v)} }
	e.emit(false, 0, 1, set("x", "0"))
	first := len(e.buf)
	e.emit(false, 0, 1, set("a", "1"))
	e.emit(false, 0, 1, set("b", "2"))
	e.emit(false, 0, 1, [][]byte{[]byte("INCR"), []byte("x")})
	e.group(1)
	recs := [][]byte{e.buf[:first], e.buf[first:]}

	dir := t.TempDir()
	l, _, err := redo.Open(dir, redo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Write(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	full, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	txStart := len(full) - len(recs[1]) - 12 // the frame header is 12 bytes

	replay := func(cut int) string {
		t.Helper()
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, filepath.Base(segs[0])), full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		l, _, err := redo.Open(d, redo.Options{})
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		defer l.Close()
		r, err := l.NewReader(0)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var got [][]byte
		for {
			p, _, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("cut at %d: %v", cut, err)
			}
			got = append(got, append([]byte(nil), p...))
		}
		st := replayed(t, got)
		var b strings.Builder
		for _, k := range []string{"x", "a", "b"} {
			v, ok, err := st.GetString(0, []byte(k), nil)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				b.WriteString(k + "=" + string(v) + " ")
			}
		}
		return b.String()
	}
	if got := replay(len(full)); got != "x=1 a=1 b=2 " {
		t.Fatalf("the whole log replays to %q", got)
	}
	for cut := txStart; cut < len(full); cut++ {
		if got := replay(cut); got != "x=0 " {
			t.Fatalf("cut at byte %d of %d (the EXEC's record starts at %d): replayed %q, want the SET alone", cut, len(full), txStart, got)
		}
	}
}

// decodeTx never panics, and what it accepts holds at least two inner
// records, none of them a transaction record.
func FuzzDecodeTx(f *testing.F) {
	var e effects
	e.emit(false, 0, 1, [][]byte{[]byte("SET"), []byte("a"), []byte("1")})
	e.emit(true, 3, -5, [][]byte{[]byte("BLPOP"), []byte("q"), []byte("0")})
	e.group(0)
	f.Add(append([]byte(nil), e.buf...))
	f.Add([]byte{effectVersion, effectGroup, 2, 2, effectVersion, 0, 2, effectVersion, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		recs, err := decodeTx(p)
		if err != nil {
			return
		}
		if len(recs) < 2 {
			t.Fatalf("accepted %d inner records", len(recs))
		}
		for _, r := range recs {
			if len(r) < 2 || r[1]&effectGroup != 0 {
				t.Fatalf("accepted inner record %q", r)
			}
		}
	})
}

// While writes are refused (a failed fsync), a write MULTI would queue is
// refused and fails the transaction, and an EXEC of writes queued before
// the failure is refused whole with the reason, as Redis refuses them with
// MISCONF; a transaction of reads still runs.
func TestExecWhileWritesRefused(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.submit(1, []string{"SET", "k", "v"}, []string{"MULTI"}, []string{"SET", "a", "1"}, []string{"GET", "k"})
	h.expect(1, "+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n")
	h.a.Call(func() { h.a.durable.fail(errors.New("fsync: input/output error")) })
	refused := "-" + string(ErrWritesFailing) + "\r\n"
	h.submit(1, []string{"EXEC"}, []string{"EXISTS", "a"})
	h.expect(1, "-EXECABORT Transaction discarded because of: "+strings.TrimPrefix(string(ErrWritesFailing), "ERR ")+"\r\n:0\r\n")
	h.submit(1, []string{"MULTI"}, []string{"SET", "a", "1"}, []string{"GET", "k"}, []string{"EXEC"})
	h.expect(1, "+OK\r\n"+refused+"+QUEUED\r\n-EXECABORT Transaction discarded because of previous errors.\r\n")
	h.submit(1, []string{"MULTI"}, []string{"GET", "k"}, []string{"EXEC"})
	h.expect(1, "+OK\r\n+QUEUED\r\n*1\r\n$1\r\nv\r\n")
}

// decodeTx is splitGroup for a record that must be a group.
func decodeTx(p []byte) ([][]byte, error) {
	recs, ok, err := splitGroup(p, nil)
	if !ok && err == nil {
		err = badEffect("not a group record")
	}
	return recs, err
}

// A script run by EXEC adds its writes to EXEC's group record as members
// (a group never holds a group), and the group replays to the same
// keyspace.
func TestExecOfAScriptIsOneFlatGroup(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.recording()
	h.submit(1, []string{"MULTI"}, []string{"SET", "a", "1"},
		[]string{"EVAL", "redis.call('INCR', KEYS[1]); redis.call('SET', KEYS[2], 'x'); return 1", "2", "a", "b"},
		[]string{"RPUSH", "l", "z"}, []string{"EXEC"})
	want := "+OK\r\n" + strings.Repeat("+QUEUED\r\n", 3) + "*3\r\n+OK\r\n:1\r\n:1\r\n"
	if got := string(h.next().Reply); got != want {
		t.Fatalf("EXEC: %q, want %q", got, want)
	}
	recs := h.takeRecords()
	if len(recs) != 1 || recs[0][1] != effectGroup {
		t.Fatalf("EXEC made %d records, want one group record", len(recs))
	}
	got := strings.Join(showTx(t, recs[0]), "\n")
	if want := "0 SET a 1\n0 INCR a\n0 SET b x\n0 RPUSH l z"; got != want {
		t.Fatalf("the group's members:\n%s\nwant:\n%s", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h.a.Stop(ctx)
	if live, got := dump(t, h.a.st), dump(t, replayed(t, recs)); got != live {
		t.Fatalf("the replayed keyspace differs from the live one:\n%s", diffLines(live, got))
	}
}
