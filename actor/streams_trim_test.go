package actor

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Which entries "~" trims depends on stream-node-max-entries, which the
// redo log does not carry (CONFIG SET is no write): an XADD or XTRIM that
// trimmed with "~" is recorded as the exact trim that removes what it
// removed, without LIMIT, as Redis propagates it. Replayed by an actor at
// the default node size, the records give the same keyspace (as sent,
// they would trim nothing there: nodes of 100 entries).
func TestEffectsApproxTrimRecordedExact(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.recording()
	cmds := [][]string{{"CONFIG", "SET", "stream-node-max-entries", "10"}}
	for i := 1; i <= 57; i++ {
		cmds = append(cmds, []string{"XADD", "n", fmt.Sprint(i, "-1"), "f", "v"})
	}
	cmds = append(cmds,
		[]string{"XADD", "n", "MAXLEN", "~", "25", "LIMIT", "1000", "58-1", "f", "v"}, // 58 -> 28
		[]string{"XTRIM", "n", "MINID", "~", "45-1"},                                  // 31-1 .. 40-1 go
		[]string{"XTRIM", "n", "MAXLEN", "~", "0", "LIMIT", "9"},                      // no node fits in 9
		[]string{"XADD", "n", "NOMKSTREAM", "MAXLEN", "~", "5", "60-1", "f", "v"},     // 41-1 .. 50-1 go
		[]string{"XADD", "m", "MINID", "~", "70-1", "60-1", "f", "v"},                 // all go
	)
	h.submit(1, cmds...)
	want := "+OK\r\n"
	for i := 1; i <= 58; i++ {
		want += fmt.Sprintf("$%d\r\n%d-1\r\n", len(fmt.Sprint(i))+2, i)
	}
	want += ":10\r\n:0\r\n$4\r\n60-1\r\n$4\r\n60-1\r\n"
	h.expect(1, want)
	recs := h.takeRecords()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h.a.Stop(ctx)
	recs = append(recs, h.takeEffectsStopped()...)
	got := showRecords(t, recs)
	if len(got) < 4 {
		t.Fatalf("records: %q", got)
	}
	expectRecords(t, recs[len(recs)-4:],
		"0 XADD n MAXLEN = 28 58-1 f v",
		"0 XTRIM n MINID = 41-1",
		"0 XADD n MAXLEN = 9 NOMKSTREAM 60-1 f v",
		"0 XADD m MAXLEN = 0 60-1 f v")
	live := dump(t, h.a.st)
	if replay := dump(t, replayed(t, recs)); replay != live {
		t.Fatalf("the replayed keyspace differs from the live one:\n%s", diffLines(live, replay))
	}
}
