package actor

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

// Ctx is what a handler sees of the command it runs. The actor reuses one
// Ctx per level of execution (dispatch.go); a handler must not keep it past
// its return.
type Ctx struct {
	a    *Actor
	f    *frame // this level's scratch
	s    *session
	cmd  *Command
	args [][]byte
	w    *proto.Writer
	st   *storage.Store
	db   int
	now  int64 // unix ms, the command's time snapshot
	// noBlock makes a blocking command answer as its non-blocking form
	// would when it finds nothing (inside MULTI/EXEC, or not last in its
	// batch), as Redis's CLIENT_DENY_BLOCKING does.
	noBlock bool
	// woken marks a parked waiter's retry (blocking.go), which runs outside
	// any command of its client: see passOver.
	woken bool
	// keyspace: a command that runs commands (EXEC, EVAL) ran one that
	// touched the keyspace, so a failed round must retract its reply.
	keyspace bool
	// failed: the handler wrote an error reply of its own and counted it
	// (a script's error): the call counts in failed_calls.
	failed bool
	// rec, when set, is what the redo log records for the command instead
	// of args (XADD's generated ID: effects.go).
	rec [][]byte
}

// passOver reports whether a retry skips a key for err: one that now holds
// another type. It held none when the client parked (the first attempt
// would have answered WRONGTYPE); like a key whose type nobody waiting
// wants, it answers no one, and the retry looks on to its other keys.
func (c *Ctx) passOver(err error) bool { return c.woken && errors.Is(err, storage.ErrWrongType) }

// argEq reports whether args[i] equals word, ignoring ASCII case.
func (c *Ctx) argEq(i int, word string) bool { return eqFold(c.args[i], word) }

func eqFold(b []byte, word string) bool {
	if len(b) != len(word) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], word[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// intArg parses args[i] as Redis's string2ll does.
func (c *Ctx) intArg(i int) (int64, error) { return parseInt(c.args[i]) }

// bulkOrNull replies v, or a null when there is none.
func (c *Ctx) bulkOrNull(v []byte, ok bool) {
	if ok {
		c.w.Bulk(v)
	} else {
		c.w.Null()
	}
}

// rangeArgs parses the integer arguments i and i+1 (start and stop).
func (c *Ctx) rangeArgs(i int) (start, stop int64, err error) {
	if start, err = c.intArg(i); err == nil {
		stop, err = c.intArg(i + 1)
	}
	return start, stop, err
}

// numDBs is how many databases a client can SELECT.
const numDBs = storage.NumDBs

func parseInt(b []byte) (int64, error) {
	v, ok := proto.ParseInt(b)
	if !ok {
		return 0, ErrNotInteger
	}
	return v, nil
}

// parseFloat parses b as Redis's getDoubleFromObject: the whole of b, no
// leading space, no overflow, never NaN.
func parseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || isCSpace(b[0]) {
		return 0, false
	}
	s := string(b)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Go refuses forms C's strtod takes ("1e", "0x1p") only in ways
		// that also fail Redis's full-consumption check; overflow is an
		// error in both.
		return 0, false
	}
	if math.IsNaN(v) || strings.ContainsRune(s, '_') {
		return 0, false
	}
	return v, true
}

func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// lower returns b in lower case as a string (for option words).
func lower(b []byte) string { return strings.ToLower(string(b)) }
