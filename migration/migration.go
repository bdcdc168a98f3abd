package migration

import (
	"bufio"
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// Request is one MIGRATE's exchange with its target.
type Request struct {
	Addr    string        // host:port, as net.Dial takes it
	Timeout time.Duration // for the connect, each write and each line read
	// Cmds is the whole pipeline: AUTH (when Auth), SELECT (when Select),
	// then Keys RESTORE commands, each a RESP array.
	Cmds   []byte
	Auth   bool
	Select bool
	Keys   int
}

// Failure is how the exchange broke off, if it did.
type Failure int

const (
	None    Failure = iota
	Connect         // the address is not one to connect to (Redis: "error or timeout connecting to the client")
	Write           // the connection was refused or timed out, or the pipeline could not be written
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

// maxLine is the longest reply line Redis reads (its 1024-byte buffers,
// one byte for the terminator); the rest of a longer line stays unread.
const maxLine = 1023

// Run connects to req.Addr, sends req.Cmds and reads the replies. Like
// Redis, it tries a second time on a new connection when the first broke
// off before any RESTORE was answered, unless it timed out.
func Run(req Request) Result {
	res, retry := attempt(req)
	if retry {
		res, _ = attempt(req)
	}
	return res
}

// attempt is one connection's exchange; retry reports whether Redis would
// try again.
func attempt(req Request) (res Result, retry bool) {
	conn, err := net.DialTimeout("tcp", req.Addr, req.Timeout)
	if err != nil {
		if failsAtOnce(err) {
			return Result{Failure: Connect}, false
		}
		// Redis connects without blocking and does not look at how the
		// connect ended: a refused or timed out connection is one its
		// first write fails on.
		return Result{Failure: Write}, !timedOut(err)
	}
	defer conn.Close()
	for buf := req.Cmds; len(buf) > 0; {
		n := min(len(buf), 64*1024)
		_ = conn.SetWriteDeadline(time.Now().Add(req.Timeout))
		if _, err := conn.Write(buf[:n]); err != nil {
			return Result{Failure: Write}, !timedOut(err)
		}
		buf = buf[n:]
	}
	r := bufio.NewReader(conn)
	var authLine, selectLine string
	if req.Auth {
		if authLine, err = readLine(conn, r, req.Timeout); err != nil {
			return Result{Failure: Read}, !timedOut(err)
		}
	}
	if req.Select {
		if selectLine, err = readLine(conn, r, req.Timeout); err != nil {
			return Result{Failure: Read}, !timedOut(err)
		}
	}
	authErr := req.Auth && isError(authLine)
	selectErr := req.Select && isError(selectLine)
	for j := 0; j < req.Keys; j++ {
		line, err := readLine(conn, r, req.Timeout)
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
	return res, false
}

func isError(line string) bool { return len(line) > 0 && line[0] == '-' }

// errEmptyLine is a line that is only "\n", which Redis's reader counts as
// nothing read.
var errEmptyLine = errors.New("migration: empty reply line")

// readLine reads one reply line as Redis's syncReadLine does: up to "\n"
// (dropped, with a "\r" before it) or maxLine bytes.
func readLine(conn net.Conn, r *bufio.Reader, timeout time.Duration) (string, error) {
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	var line []byte
	for len(line) < maxLine {
		b, err := r.ReadByte()
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
