package actor

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cellar-db/cellar/rdb"
)

// TestParseReplState: the file a clean stop leaves reads back whole, in
// its second format and in the first (one line); a file whose backlog is
// cut or changed, or whose fields do not parse, is not used.
func TestParseReplState(t *testing.T) {
	id, id2 := strings.Repeat("a", 40), strings.Repeat("b", 40)
	backlog := []byte("*1\r\n$4\r\nPING\r\n")
	v2 := fmt.Sprintf("%s\n%s 100 3 replica %s 80 %d %x\n%s", replStateMagic, id, id2, len(backlog), rdb.CRC64(0, backlog), backlog)
	st, ok := parseReplState([]byte(v2))
	if !ok || st.replID != id || st.offset != 100 || st.db != 3 || !st.replica || st.replID2 != id2 || st.secondOffset != 80 || string(st.backlog) != string(backlog) {
		t.Fatalf("second format: %+v, %v", st, ok)
	}
	st, ok = parseReplState([]byte(fmt.Sprintf("%s\n%s 100 0 master - -1 0 0\n", replStateMagic, id)))
	if !ok || st.replID2 != "" || st.secondOffset != -1 || len(st.backlog) != 0 || st.replica {
		t.Fatalf("no second ID, no backlog: %+v, %v", st, ok)
	}
	st, ok = parseReplState([]byte(id + " 7 2 replica\n"))
	if !ok || st.offset != 7 || st.db != 2 || !st.replica || st.secondOffset != -1 {
		t.Fatalf("first format: %+v, %v", st, ok)
	}
	for name, bad := range map[string]string{
		"backlog cut":                    v2[:len(v2)-1],
		"backlog changed":                v2[:len(v2)-1] + "x",
		"short ID":                       strings.Replace(v2, id, "abc", 1),
		"db out of range":                strings.Replace(v2, " 100 3 ", " 100 16 ", 1),
		"backlog longer than the offset": fmt.Sprintf("%s\n%s 3 0 master - -1 %d %x\n%s", replStateMagic, id, len(backlog), rdb.CRC64(0, backlog), backlog),
		"empty":                          "",
	} {
		if st, ok := parseReplState([]byte(bad)); ok {
			t.Errorf("%s: read as %+v", name, st)
		}
	}
}

// TestBacklogKeepsTheStreamsEnd: whatever the sizes written, the backlog
// is the stream's newest repl-backlog-size bytes (its default, 1 MB), at
// the offsets INFO reports, and once it is full a write allocates
// nothing.
func TestBacklogKeepsTheStreamsEnd(t *testing.T) {
	newHarnessWith(t, Config{}, func(a *Actor) {
		size := a.backlogSize()
		var stream []byte
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; len(stream) < 6*int(size); i++ {
			n := 1 + rng.IntN(70_000)
			if i == 40 {
				n = int(size) + int(size)/2 // one write longer than the backlog
			}
			b := make([]byte, n)
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			stream = append(stream, b...)
			a.addBacklog(b)
			want := stream[len(stream)-min(int(size), len(stream)):]
			if a.master.offset != int64(len(stream)) || !bytes.Equal(a.master.backlog, want) {
				t.Fatalf("after %d bytes: offset %d, backlog of %d bytes (want %d), equal %v", len(stream), a.master.offset, len(a.master.backlog), len(want), bytes.Equal(a.master.backlog, want))
			}
		}
		chunk := make([]byte, 100)
		if allocs := testing.AllocsPerRun(100_000, func() { a.addBacklog(chunk) }); allocs != 0 {
			t.Fatalf("a write to a full backlog made %v allocations", allocs)
		}
	})
}
