package migration

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Request is one MIGRATE's exchange with its target.
type Request struct {
	// Name is the target as MIGRATE named it, "host:port" with the
	// arguments as given: the key of its cached connection.
	Name    string
	Addr    string        // host:port, as net.Dial takes it
	Timeout time.Duration // for the connect, each write and each line read
	// Auth is the AUTH command to send first (a RESP array), or nil.
	Auth []byte
	DB   int64 // the target's database: SELECT is sent unless the connection is in it
	// Restores are the RESTORE commands, Keys of them, back to back.
	Restores []byte
	Keys     int
}

// Failure is how the exchange broke off, if it did.
type Failure int

const (
	None    Failure = iota
	Connect         // the address is not one to connect to (Redis: "error or timeout connecting to the client")
	Write           // the connection was refused or timed out, or the commands could not be written
	Read            // a reply could not be read
)

// Result is what came of a Request.
type Result struct {
	// Acked[j] reports whether the target accepted the j-th RESTORE: it
	// answered it without an error and AUTH and SELECT succeeded. Only
	// the replies that were read have an entry.
	Acked []bool
	// TargetError is the first error the target answered (AUTH's, SELECT's
	// or a RESTORE's), without its "-"; empty if none.
	TargetError string
	Failure     Failure
}

// Redis's limits on its cache: 64 connections, each closed after 10
// seconds unused.
const (
	maxCached = 64
	cacheTTL  = 10 * time.Second
)

// maxLine is the longest reply line Redis reads (its 1024-byte buffers,
// one byte for the terminator); the rest of a longer line stays unread.
const maxLine = 1023

// Sockets is MIGRATE's cache of connections to its targets, as Redis's
// migrate_cached_sockets: one per target name, at most 64, each closed
// after 10 seconds unused, remembering the database it last selected (a
// connection that authenticated stays authenticated). A connection is
// used by one MIGRATE at a time; a MIGRATE that finds its target's in use
// dials one of its own, closed after it. Safe for concurrent use.
type Sockets struct {
	mu     sync.Mutex
	m      map[string]*socket
	closed bool
}

// socket is one connection to a target.
type socket struct {
	name   string
	conn   net.Conn
	r      *bufio.Reader
	lastDB int64 // -1: unknown, SELECT is sent
	cached bool  // in Sockets.m
	busy   bool
	idle   *time.Timer
}

// NewSockets returns an empty cache.
func NewSockets() *Sockets { return &Sockets{m: map[string]*socket{}} }

// Close closes the cached connections; the ones in use close when their
// MIGRATE ends, and nothing is cached any more.
func (s *Sockets) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for name, so := range s.m {
		if !so.busy {
			so.close()
		}
		delete(s.m, name)
	}
}

// Len is how many connections are cached (INFO migrate_cached_sockets).
func (s *Sockets) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// get returns a connection to req's target, cached or new.
func (s *Sockets) get(req Request) (*socket, error) {
	s.mu.Lock()
	if so := s.m[req.Name]; so != nil && !so.busy {
		so.busy = true
		so.idle.Stop()
		s.mu.Unlock()
		return so, nil
	}
	s.mu.Unlock()
	conn, err := net.DialTimeout("tcp", req.Addr, req.Timeout)
	if err != nil {
		return nil, err
	}
	so := &socket{name: req.Name, conn: conn, r: bufio.NewReader(conn), lastDB: -1, busy: true}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.m[req.Name]; !taken && !s.closed {
		if len(s.m) >= maxCached {
			for name, old := range s.m { // Redis drops one at random
				if !old.busy {
					old.close()
				}
				old.cached = false
				delete(s.m, name)
				break
			}
		}
		so.cached = true
		s.m[req.Name] = so
	}
	return so, nil
}

// put gives back a connection after use; a broken one is closed and
// forgotten.
func (s *Sockets) put(so *socket, broken bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	so.busy = false
	if broken || !so.cached || s.closed {
		if so.cached && s.m[so.name] == so {
			delete(s.m, so.name)
		}
		so.cached = false
		so.close()
		return
	}
	so.idle = time.AfterFunc(cacheTTL, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !so.busy && so.cached && s.m[so.name] == so {
			delete(s.m, so.name)
			so.cached = false
			so.close()
		}
	})
}

func (so *socket) close() { so.conn.Close() }

// Run sends req to its target and reads the replies, as Redis's
// migrateCommand: over the cached connection if there is one, trying once
// more on a new connection when the exchange broke off before any RESTORE
// was answered, unless it timed out.
func (s *Sockets) Run(req Request) Result {
	res, retry := s.attempt(req)
	if retry {
		res, _ = s.attempt(req)
	}
	return res
}

// attempt is one connection's exchange; retry reports whether Redis would
// try again.
func (s *Sockets) attempt(req Request) (res Result, retry bool) {
	so, err := s.get(req)
	if err != nil {
		if failsAtOnce(err) {
			return Result{Failure: Connect}, false
		}
		// Redis connects without blocking and does not look at how the
		// connect ended: a refused or timed out connection is one its
		// first write fails on.
		return Result{Failure: Write}, !timedOut(err)
	}
	broken := true
	defer func() { s.put(so, broken) }()
	sel := so.lastDB != req.DB
	cmds := append([]byte(nil), req.Auth...)
	if sel {
		db := strconv.FormatInt(req.DB, 10)
		cmds = append(cmds, "*2\r\n$6\r\nSELECT\r\n$"+strconv.Itoa(len(db))+"\r\n"+db+"\r\n"...)
	}
	cmds = append(cmds, req.Restores...)
	for buf := cmds; len(buf) > 0; {
		n := min(len(buf), 64*1024)
		_ = so.conn.SetWriteDeadline(time.Now().Add(req.Timeout))
		if _, err := so.conn.Write(buf[:n]); err != nil {
			return Result{Failure: Write}, !timedOut(err)
		}
		buf = buf[n:]
	}
	var authLine, selectLine string
	if req.Auth != nil {
		if authLine, err = so.readLine(req.Timeout); err != nil {
			return Result{Failure: Read}, !timedOut(err)
		}
	}
	if sel {
		if selectLine, err = so.readLine(req.Timeout); err != nil {
			return Result{Failure: Read}, !timedOut(err)
		}
	}
	authErr := req.Auth != nil && isError(authLine)
	selectErr := sel && isError(selectLine)
	for j := 0; j < req.Keys; j++ {
		line, err := so.readLine(req.Timeout)
		if err != nil {
			if res.TargetError == "" {
				res.Failure = Read
				// Nothing was answered yet: a new connection may do.
				retry = j == 0 && !timedOut(err)
			}
			return res, retry
		}
		if !authErr && !selectErr && !isError(line) {
			res.Acked = append(res.Acked, true)
			continue
		}
		res.Acked = append(res.Acked, false)
		if res.TargetError == "" {
			switch {
			case authErr:
				res.TargetError = authLine[1:]
			case selectErr:
				res.TargetError = selectLine[1:]
			default:
				res.TargetError = line[1:]
			}
		}
	}
	broken = false
	so.lastDB = req.DB
	if res.TargetError != "" {
		so.lastDB = -1 // an error may have been SELECT's
	}
	return res, false
}

func isError(line string) bool { return len(line) > 0 && line[0] == '-' }

// errEmptyLine is a line that is only "\n", which Redis's reader counts as
// nothing read.
var errEmptyLine = errors.New("migration: empty reply line")

// readLine reads one reply line as Redis's syncReadLine does: up to "\n"
// (dropped, with a "\r" before it) or maxLine bytes.
func (so *socket) readLine(timeout time.Duration) (string, error) {
	_ = so.conn.SetReadDeadline(time.Now().Add(timeout))
	var line []byte
	for len(line) < maxLine {
		b, err := so.r.ReadByte()
		if err != nil {
			return "", err
		}
		if b == '\n' {
			if len(line) == 0 {
				return "", errEmptyLine
			}
			if line[len(line)-1] == '\r' {
				line = line[:len(line)-1]
			}
			return string(line), nil
		}
		line = append(line, b)
	}
	return string(line), nil
}

// failsAtOnce reports whether err is one a non-blocking connect meets
// before it starts: the address does not resolve or is not one to connect
// to (Redis: "error or timeout connecting to the client").
func failsAtOnce(err error) bool {
	var dnsErr *net.DNSError
	var addrErr *net.AddrError
	var parseErr *net.ParseError
	return errors.As(err, &dnsErr) || errors.As(err, &addrErr) || errors.As(err, &parseErr) ||
		errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EADDRNOTAVAIL) ||
		errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}

func timedOut(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
