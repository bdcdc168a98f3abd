package replica

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The phases of the bytes the master sends after a full sync starts.
const (
	phaseRDB      = iota // the RDB: the pump waits when the queue is full
	phaseWaitlist        // commands that arrive during the load: held, bounded
	phaseFollow          // after the load: the pump waits when the queue is full
)

// queueBytes is how much the pump reads ahead of the link outside the
// waitlist phase.
const queueBytes = 4 << 20

// pumpBuffer is the size of the buffers the pump reads into, and
// pumpMinRead the room below which it takes a new one: the chunks it
// queues are the successive parts of one buffer, so a stream of small
// reads (a command or two each while following) costs the bytes read, not
// a new 64 KiB buffer each (56 MB/s of garbage at 20 000 writes/s, a
// collection every quarter of a second).
const (
	pumpBuffer  = 64 << 10
	pumpMinRead = 4 << 10
)

// errWaitlistFull is the pump's error when the commands the master sent
// during the load pass replica.backlog_max_bytes.
var errWaitlistFull = errors.New("replica: waitlist full")

// pipe is the queue between the pump (which reads the socket) and the
// link (which decodes and applies). It holds a bounded amount of the RDB
// and, while the load runs, the commands that follow it: the waitlist.
type pipe struct {
	mu     sync.Mutex
	cond   sync.Cond
	chunks [][]byte
	size   int64
	err    error
	closed bool
	phase  int
	// rdbLeft: the RDB's bytes the pump has not read yet ($<len>); -1
	// with an EOF mark (mark, tail: the last bytes read, to find it).
	rdbLeft    int64
	mark, tail []byte
	max        int64 // replica.backlog_max_bytes
	held       int64 // the waitlist's bytes in the queue
	peak       int64 // the waitlist's high-water mark
}

func newPipe(rdbLen int64, mark []byte, max int64, follow bool) *pipe {
	p := &pipe{rdbLeft: rdbLen, mark: mark, max: max}
	p.cond.L = &p.mu
	if follow {
		p.phase = phaseFollow
	}
	return p
}

// pump reads src into the queue until an error or close.
func (p *pipe) pump(src io.Reader) {
	var buf []byte // its bytes before len are queued, or were: never written again
	for {
		if cap(buf)-len(buf) < pumpMinRead {
			buf = make([]byte, 0, pumpBuffer)
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		chunk := buf[len(buf) : len(buf)+n : len(buf)+n]
		buf = buf[:len(buf)+n]
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		if n > 0 {
			stream := p.account(chunk)
			p.chunks = append(p.chunks, chunk)
			p.size += int64(n)
			if p.phase == phaseWaitlist {
				p.held += int64(stream)
				p.peak = max(p.peak, p.held)
				if p.held > p.max {
					// Abandoned: the load must not complete from what is
					// queued, so the queue goes and the link's next read fails.
					p.err = fmt.Errorf("%w: %d bytes of commands arrived during the load (replica.backlog_max_bytes %d)", errWaitlistFull, p.held, p.max)
					p.chunks, p.size = nil, 0
					p.cond.Broadcast()
					p.mu.Unlock()
					return
				}
			}
			p.cond.Broadcast()
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			p.err = err
			p.cond.Broadcast()
			p.mu.Unlock()
			return
		}
		for p.phase != phaseWaitlist && p.size > queueBytes && !p.closed {
			p.cond.Wait()
		}
		p.mu.Unlock()
	}
}

// account moves the phase on from RDB to waitlist when b holds the RDB's
// end, and returns how many of b's bytes follow the RDB.
func (p *pipe) account(b []byte) int {
	if p.phase != phaseRDB {
		if p.phase == phaseWaitlist {
			return len(b)
		}
		return 0
	}
	if p.mark == nil {
		r := min(int64(len(b)), p.rdbLeft)
		p.rdbLeft -= r
		if p.rdbLeft == 0 {
			p.phase = phaseWaitlist
		}
		return len(b) - int(r)
	}
	window := append(p.tail, b...)
	if i := bytes.Index(window, p.mark); i >= 0 {
		p.phase = phaseWaitlist
		return len(window) - (i + len(p.mark))
	}
	p.tail = append(p.tail[:0], window[max(0, len(window)-len(p.mark)):]...)
	return 0
}

// Read takes queued bytes, waiting for some.
func (p *pipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.chunks) == 0 && p.err == nil && !p.closed {
		p.cond.Wait()
	}
	if len(p.chunks) == 0 {
		if p.closed {
			return 0, io.ErrClosedPipe
		}
		return 0, p.err
	}
	n := copy(b, p.chunks[0])
	if n == len(p.chunks[0]) {
		p.chunks[0] = nil
		p.chunks = p.chunks[1:]
	} else {
		p.chunks[0] = p.chunks[0][n:]
	}
	p.size -= int64(n)
	if p.phase == phaseFollow {
		p.held = min(p.held, p.size)
	}
	p.cond.Broadcast()
	return n, nil
}

// follow ends the waitlist phase (the load is in): the pump waits again
// when the queue is full. It returns the waitlist's high-water mark.
func (p *pipe) follow() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase = phaseFollow
	p.cond.Broadcast()
	return p.peak
}

// failed is the pump's error, if it stopped on one.
func (p *pipe) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// waiting is how much of the waitlist is still queued.
func (p *pipe) waiting() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

func (p *pipe) close() {
	p.mu.Lock()
	p.closed = true
	p.chunks = nil
	p.cond.Broadcast()
	p.mu.Unlock()
}
