package replica

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/cellar-db/cellar/actor"
)

// chunked hands out its data a few bytes per Read, so a mark or a
// length boundary falls across reads.
type chunked struct {
	data []byte
	step int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(c.step, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// TestPipeFindsTheRDBsEnd: with a length and with an EOF mark, whatever
// the read sizes, the bytes after the RDB count as the waitlist and pass
// through unchanged.
func TestPipeFindsTheRDBsEnd(t *testing.T) {
	mark := []byte(strings.Repeat("m", 40))
	rdbBytes := bytes.Repeat([]byte("R"), 1000)
	stream := []byte("*1\r\n$4\r\nPING\r\n")
	for _, step := range []int{1, 3, 39, 40, 41, 1000, 5000} {
		for _, withMark := range []bool{false, true} {
			in := append([]byte(nil), rdbBytes...)
			var p *pipe
			if withMark {
				in = append(in, mark...)
				p = newPipe(-1, mark, 1<<20, false)
			} else {
				p = newPipe(int64(len(rdbBytes)), nil, 1<<20, false)
			}
			in = append(in, stream...)
			go p.pump(&chunked{data: in, step: step})
			got := make([]byte, len(in))
			if _, err := io.ReadFull(p, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, in) {
				t.Fatalf("step %d mark %v: bytes changed", step, withMark)
			}
			if peak := p.follow(); peak != int64(len(stream)) {
				t.Fatalf("step %d mark %v: waitlist peak %d, want %d", step, withMark, peak, len(stream))
			}
		}
	}
}

// TestPipeWaitlistLimit: past the limit, the next read fails at once,
// even with RDB bytes still queued (nothing more of the sync is loaded).
func TestPipeWaitlistLimit(t *testing.T) {
	p := newPipe(10, nil, 100, false)
	in := append(bytes.Repeat([]byte("R"), 10), bytes.Repeat([]byte("c"), 101)...)
	p.pump(bytes.NewReader(in)) // returns on the overflow
	if _, err := p.Read(make([]byte, 10)); !errors.Is(err, errWaitlistFull) {
		t.Fatalf("read after the overflow: %v", err)
	}
	// At the limit exactly, nothing fails.
	p = newPipe(10, nil, 101, false)
	go p.pump(bytes.NewReader(in))
	got := make([]byte, len(in))
	if _, err := io.ReadFull(p, got); err != nil {
		t.Fatal(err)
	}
}

// TestPipeSmallReads: a stream that arrives a little at a time (as a
// master's commands do while the replica follows) passes through
// unchanged across the pump's buffers, and costs buffers by the bytes
// read, not one per read.
func TestPipeSmallReads(t *testing.T) {
	var in []byte
	for i := 0; len(in) < 400_000; i++ {
		in = append(in, fmt.Sprintf("*1\r\n$%d\r\n%s\r\n", i%97+1, strings.Repeat("x", i%97+1))...)
	}
	for _, step := range []int{1, 100, 4095, 4096, 4097, 70_000} {
		p := newPipe(0, nil, 1<<20, true)
		p.pump(&chunked{data: in, step: step}) // returns at the end of the data: less than the queue holds
		got, err := io.ReadAll(p)
		if !errors.Is(err, io.ErrUnexpectedEOF) || !bytes.Equal(got, in) {
			t.Fatalf("step %d: %d bytes of %d came through (%v)", step, len(got), len(in), err)
		}
	}
	// 4 000 reads of 100 bytes: about 7 buffers of 64 KiB, and the queue's
	// slice growing; one buffer a read was 4 000.
	allocs := testing.AllocsPerRun(3, func() {
		newPipe(0, nil, 1<<20, true).pump(&chunked{data: in, step: 100})
	})
	if allocs > 100 {
		t.Fatalf("%d reads of 100 bytes made %.0f allocations", len(in)/100, allocs)
	}
}

// TestReadCommand: every byte read is kept as it came, a newline too, and
// the arguments of commands read earlier stay intact as raw grows.
func TestReadCommand(t *testing.T) {
	in := "\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$600\r\n" + strings.Repeat("x", 600) + "\r\n"
	br := bufio.NewReader(strings.NewReader(in))
	raw := make([]byte, 0, 4) // grows under the arguments already returned
	args, raw, err := readCommand(br, raw, nil)
	if err != nil || args != nil || string(raw) != "\n" {
		t.Fatalf("keep-alive: %q %q %v", args, raw, err)
	}
	set, raw, err := readCommand(br, raw, nil)
	if err != nil || len(set) != 3 || string(set[0]) != "SET" || string(set[1]) != "k" || len(set[2]) != 0 {
		t.Fatalf("%q %v", set, err)
	}
	ping, raw, err := readCommand(br, raw, nil)
	if err != nil || len(ping) != 1 || string(ping[0]) != "PING" {
		t.Fatalf("%q %v", ping, err)
	}
	echo, raw, err := readCommand(br, raw, nil)
	if err != nil || len(echo) != 2 || string(echo[1]) != strings.Repeat("x", 600) {
		t.Fatalf("%q %v", echo, err)
	}
	if string(raw) != in {
		t.Fatalf("raw %q, want the input %q", raw, in)
	}
	if string(set[0]) != "SET" || string(set[1]) != "k" || string(ping[0]) != "PING" {
		t.Fatalf("earlier arguments changed as raw grew: %q %q", set, ping)
	}
	for _, bad := range []string{"+OK\r\n", "*0\r\n", "*1\r\n:1\r\n", "*1\r\n$-1\r\n", "*x\r\n"} {
		if _, _, err := readCommand(bufio.NewReader(strings.NewReader(bad)), nil, nil); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestRefusedBatchNotAcknowledged: the applied offset (what REPLCONF ACK
// reports) advances by a batch that ran, not by one the actor refused
// because the connection had stopped being the master's: a WAIT on the
// old master must not count a write this server never applied.
func TestRefusedBatchNotAcknowledged(t *testing.T) {
	l := &link{m: &Manager{}}
	fs := &stream{l: l, connID: 7, slots: make(chan struct{}, 2), ackNow: make(chan struct{}, 1), killed: make(chan struct{}),
		ends: map[uint64]batchEnd{1: {offset: 100}, 2: {offset: 200, ack: true}}}
	fs.slots <- struct{}{}
	fs.slots <- struct{}{}
	fs.Deliver([]actor.Completion{{ConnID: 7, Seq: 1, Reply: []byte("+OK\r\n")}})
	if got := l.applied.Load(); got != 100 {
		t.Fatalf("applied %d after a batch that ran, want 100", got)
	}
	refused := "-" + string(actor.ErrStaleMaster) + "\r\n"
	fs.Deliver([]actor.Completion{{ConnID: 7, Seq: 2, Reply: []byte(refused + refused)}})
	if got := l.applied.Load(); got != 100 {
		t.Fatalf("applied %d after a refused batch, want 100", got)
	}
	if len(fs.slots) != 0 {
		t.Fatalf("%d batch slots still taken after both completions", len(fs.slots))
	}
	select {
	case <-fs.ackNow:
		t.Fatal("a refused batch asked for an acknowledgement")
	default:
	}
}
