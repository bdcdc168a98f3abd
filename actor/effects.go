package actor

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

// Effects: what a round did, as commands to run again.
//
// The redo log records each round's writes so that a crash loses nothing
// acknowledged; after a crash, start-up replays the records through the
// same dispatcher. What is recorded is a command, as Redis propagates
// commands to its AOF and replicas: a command whose effect depends on
// nothing but the keyspace and the time is recorded as it was sent, with
// the database it ran in and the time it ran at, and run again it does the
// same thing. What does depend on something else is recorded as a command
// that does not (SPOP, random, becomes SREM of what it popped).
//
// Record format (one record per propagated command, version 1):
//
//	version  1 byte, effectVersion
//	flags    1 byte; bit 0 (effectWoken): a blocked client's woken retry;
//	         the other bits are zero
//	db       uvarint, below storage.NumDBs
//	now      varint, unix milliseconds: the time the command ran at
//	argc     uvarint, at least 1
//	argv     argc times: uvarint length, then that many bytes
//
// Every varint is in its shortest form, and nothing follows the last
// argument: a record has exactly one encoding, and decodeEffect refuses
// anything else (it never panics, whatever the bytes).
//
// A group record holds the records of one command that ran commands (EXEC,
// multi.go; a script, scripting.go), so that the log has them whole or not
// at all (a torn write cuts a record, never part of one):
//
//	version  1 byte, effectVersion
//	flags    1 byte, effectGroup alone
//	count    uvarint, at least 2
//	records  count times: uvarint length, then an ordinary record as
//	         above (never a group: a script inside EXEC is flattened)
//
// splitGroup refuses anything else; replay checks every member before it
// runs any, then runs them in order (replayEffect).
//
// Propagation rules, applied in the keys touched step (touched.go) over
// the change record of each command, nested ones included (a command run
// by Ctx.call propagates itself), and of every other writer of a round:
//   - every key found expired and deleted (Touch kind Expired: lazily by a
//     command, read or write, by the serving loop's look at a ready key, or
//     by the expiry sweep) is one DEL key record, in the touch's database,
//     at the round's time, before the command's own record. Replay does
//     not rely on finding the same keys expired: it is told.
//   - hash fields found expired and removed (Touch kind FieldsExpired,
//     lazily or by the sweep) are one HDEL key field... record, likewise
//     before the command's own.
//   - then, if the command changed anything else, the command itself. A
//     command that changed nothing (a read, a failed write, a blocking
//     command that parked) records nothing but those DELs.
//   - SPOP is recorded as SREM key member... with the members it popped
//     (cmdSPop's Ctx.rec, as XADD's below).
//   - XADD with "*" or "ms-*" is recorded with the ID it made; XADD and
//     XTRIM that trimmed with "~" as the exact trim they made, MAXLEN = or
//     MINID = without LIMIT (trimRecord, streams.go): what "~" removes
//     depends on stream-node-max-entries, which the log does not carry.
//   - a woken waiter's retry is recorded as the waiter's own command, as
//     its client sent it (BLPOP k1 k2 0, BLMOVE ..., BZMPOP ...), with the
//     woken flag. Replay runs it in its non-blocking form with the woken
//     Ctx flag set, so it does exactly what the retry did: the handler
//     parses the same arguments into the same retry (popList, moveTo,
//     popZSet bind nothing but what they parse), tryOrPark with noBlock
//     runs that retry once on the same keys in the same order, and with
//     woken set passOver skips a key of another type as the retry did.
//     Which key was made ready does not matter: a retry scans all its keys
//     in the client's order. The keyspace at that point of the replay is
//     the one the retry saw, so it takes the same element from the same
//     key.
//   - when the round is doomed, keys touched drops the record unread: it
//     produces no records.
//   - while replaying, nothing is recorded.
//
// Records gather per round in one buffer. The round engine calls
// takeEffects once the round succeeded and hands the records to the redo
// log, and dropEffects when the round was thrown away. Recording is off until
// recordEffects turns it on: with no redo log, nothing takes the records.
//
// Determinism needs the same configuration on replay as when the records
// were made: a limit lowered since (proto-max-bulk-len) can refuse a
// command that once succeeded, as with Redis's AOF.

const (
	effectVersion = 1
	effectWoken   = 1 << 0 // flags: a woken waiter's retry
	effectGroup   = 1 << 1 // flags: a group of records (EXEC, a script), all or none
)

// effects is the actor's record of what the current round propagates.
// Only the actor goroutine touches it.
type effects struct {
	on        bool // recording (a redo log takes the records)
	replaying bool // replaying records: nothing is recorded

	buf  []byte // the round's records, back to back
	ends []int  // where each record in buf ends
	recs [][]byte

	del  [2][]byte // a DEL record's arguments, reused
	hdel [][]byte  // an HDEL record's arguments (expired hash fields)

	scratch []byte   // group's copy of the records it folds
	members [][]byte // replay's records of a group

	// Replay's scratch: decoded arguments, the replies nobody reads, and
	// the session records run in.
	args    [][]byte
	out     proto.Writer
	session *session
}

// recordEffects turns recording on or off. Call it before Run or on the
// actor goroutine; turning it off drops what was gathered.
func (a *Actor) recordEffects(on bool) {
	a.eff.on = on
	if !on {
		a.dropEffects()
	}
}

// takeEffects hands over the records gathered since the last take or drop,
// in order, and starts afresh. The records alias the actor's buffer: they
// are valid until the actor runs anything else (the next command, retry or
// sweep writes over them), so the caller copies them out at once (the redo
// log's Append does).
func (a *Actor) takeEffects() [][]byte {
	e := &a.eff
	clear(e.recs)
	e.recs = e.recs[:0]
	start := 0
	for _, end := range e.ends {
		e.recs = append(e.recs, e.buf[start:end:end])
		start = end
	}
	e.buf, e.ends = e.buf[:0], e.ends[:0]
	return e.recs
}

// dropEffects forgets the records gathered since the last take or drop:
// the transaction they describe was rolled back.
func (a *Actor) dropEffects() {
	e := &a.eff
	e.buf, e.ends = e.buf[:0], e.ends[:0]
	if cap(e.buf) > maxEffectsBuf {
		e.buf = nil // a huge round's buffer is not kept for ever
	}
}

// effectsMark is where the records stand.
func (a *Actor) effectsMark() int { return len(a.eff.ends) }

// group folds the records gathered since mark into one group record (the
// commands EXEC or a script ran: one unit of durability). A member that is
// itself a group (a script run by EXEC) gives its members instead. Zero or
// one record stays as it is: it is already whole.
func (e *effects) group(mark int) {
	n := len(e.ends) - mark
	if n <= 1 {
		return
	}
	start := 0
	if mark > 0 {
		start = e.ends[mark-1]
	}
	e.scratch = append(e.scratch[:0], e.buf[start:]...)
	var members [][]byte
	prev := start
	for _, end := range e.ends[mark:] {
		rec := e.scratch[prev-start : end-start]
		if inner, ok, err := splitGroup(rec, nil); ok && err == nil {
			members = append(members, inner...)
		} else {
			members = append(members, rec)
		}
		prev = end
	}
	g := append(e.buf[:start], effectVersion, effectGroup)
	g = binary.AppendUvarint(g, uint64(len(members)))
	for _, rec := range members {
		g = binary.AppendUvarint(g, uint64(len(rec)))
		g = append(g, rec...)
	}
	e.buf = g
	e.ends = append(e.ends[:mark], len(g))
	if cap(e.scratch) > maxEffectsBuf {
		e.scratch = nil
	}
}

// splitGroup returns the records of a group record p, appending them to
// recs; ok is false when p is not a group. A malformed group is an error.
func splitGroup(p []byte, recs [][]byte) (_ [][]byte, ok bool, err error) {
	if len(p) < 2 || p[0] != effectVersion || p[1] != effectGroup {
		return recs, false, nil
	}
	p = p[2:]
	count, p, err := uvarint(p, "group count")
	if err != nil {
		return recs, true, err
	}
	// Every member takes at least its length's byte and two more.
	if count < 2 || count > uint64(len(p)/3) {
		return recs, true, badEffect("group of %d records in %d bytes", count, len(p))
	}
	for range count {
		var l uint64
		if l, p, err = uvarint(p, "group record length"); err != nil {
			return recs, true, err
		}
		if l < 2 || l > uint64(len(p)) {
			return recs, true, badEffect("group record of %d bytes with %d left", l, len(p))
		}
		rec := p[:l:l]
		if rec[1]&effectGroup != 0 {
			return recs, true, badEffect("a group inside a group")
		}
		recs = append(recs, rec)
		p = p[l:]
	}
	if len(p) != 0 {
		return recs, true, badEffect("%d bytes after the group's last record", len(p))
	}
	return recs, true, nil
}

// maxEffectsBuf is the largest record buffer kept between rounds.
const maxEffectsBuf = 1 << 20

// emit appends one record.
func (e *effects) emit(woken bool, db int, now int64, args [][]byte) {
	e.buf = encodeEffect(e.buf, woken, db, now, args)
	e.ends = append(e.ends, len(e.buf))
}

var (
	delCmd  = []byte("DEL")
	hdelCmd = []byte("HDEL")
)

// errUnattributed dooms a round in which something changed the keyspace
// outside any command (other than by expiry): it could not be recorded,
// and what the redo log does not have must not commit.
var errUnattributed = errors.New("actor: a change outside any command cannot be recorded for the redo log")

// propagate records the change record ts (the keys touched step's input)
// as effects: the DELs of expired keys, then the command that made the
// other changes, if any. The command is the one running at the current
// depth: execute and retryWaiter run keys touched while their frame is
// entered; the serving loop and the sweep run it at depth 0, where only
// expiry can have changed anything.
func (a *Actor) propagate(ts []storage.Touch) {
	e := &a.eff
	if !e.on || e.replaying {
		return
	}
	var f *frame
	now := a.nowMs
	if a.depth > 0 {
		f = a.frames[a.depth-1]
		now = f.ctx.now
	}
	own := false
	for i := range ts {
		t := &ts[i]
		switch t.Kind {
		case storage.Expired:
			e.del[0], e.del[1] = delCmd, t.Key
			e.emit(false, t.DB, now, e.del[:])
		case storage.FieldsExpired:
			// Expired hash fields are an HDEL of them, as Redis 7.4
			// propagates them (which deletes a hash they empty).
			e.hdel = append(append(e.hdel[:0], hdelCmd, t.Key), storage.ExpiredFields(t.Effect, nil)...)
			e.emit(false, t.DB, now, e.hdel)
			clear(e.hdel)
		default:
			own = true
		}
	}
	e.del[1] = nil
	if !own {
		return
	}
	if f == nil || len(f.ctx.args) == 0 {
		a.log.Error().Err(errUnattributed).Msg("refusing the round")
		a.fail(errUnattributed)
		return
	}
	c := &f.ctx
	args := c.args
	if c.rec != nil {
		args = c.rec
	}
	e.emit(c.woken, c.db, now, args)
}

// encodeEffect appends the record of args (run in db at now; woken for a
// waiter's retry) to buf. It allocates nothing but buf's growth.
func encodeEffect(buf []byte, woken bool, db int, now int64, args [][]byte) []byte {
	flags := byte(0)
	if woken {
		flags |= effectWoken
	}
	buf = append(buf, effectVersion, flags)
	buf = binary.AppendUvarint(buf, uint64(db))
	buf = binary.AppendVarint(buf, now)
	buf = binary.AppendUvarint(buf, uint64(len(args)))
	for _, arg := range args {
		buf = binary.AppendUvarint(buf, uint64(len(arg)))
		buf = append(buf, arg...)
	}
	return buf
}

// effect is a decoded record. args alias the payload.
type effect struct {
	woken bool
	db    int
	now   int64
	args  [][]byte
}

// errBadEffect is wrapped by every error decodeEffect returns.
var errBadEffect = errors.New("actor: malformed redo record")

func badEffect(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errBadEffect}, a...)...)
}

// decodeEffect decodes payload, appending its arguments to args (whose
// backing array it reuses). Anything but exactly one well-formed record
// is an error.
func decodeEffect(p []byte, args [][]byte) (effect, error) {
	var e effect
	if len(p) < 2 {
		return e, badEffect("%d bytes", len(p))
	}
	if p[0] != effectVersion {
		return e, badEffect("version %d", p[0])
	}
	if p[1]&^effectWoken != 0 {
		return e, badEffect("flags %#x", p[1])
	}
	e.woken = p[1]&effectWoken != 0
	p = p[2:]
	db, p, err := uvarint(p, "db")
	if err != nil {
		return e, err
	}
	if db >= storage.NumDBs {
		return e, badEffect("db %d", db)
	}
	e.db = int(db)
	v, n := binary.Varint(p)
	if n <= 0 || n != varintLen(v) {
		return e, badEffect("bad time")
	}
	e.now, p = v, p[n:]
	argc, p, err := uvarint(p, "argc")
	if err != nil {
		return e, err
	}
	// Every argument takes at least its length's byte: a count beyond what
	// is left is a lie, refused before anything is sized by it.
	if argc == 0 || argc > uint64(len(p)) {
		return e, badEffect("argc %d with %d bytes left", argc, len(p))
	}
	args = args[:0]
	for range argc {
		var l uint64
		if l, p, err = uvarint(p, "argument length"); err != nil {
			return e, err
		}
		if l > uint64(len(p)) {
			return e, badEffect("argument of %d bytes with %d left", l, len(p))
		}
		args = append(args, p[:l:l])
		p = p[l:]
	}
	if len(p) != 0 {
		return e, badEffect("%d bytes after the last argument", len(p))
	}
	e.args = args
	return e, nil
}

// uvarint reads a uvarint in its shortest form from p.
func uvarint(p []byte, what string) (uint64, []byte, error) {
	v, n := binary.Uvarint(p)
	if n <= 0 || n != uvarintLen(v) {
		return 0, p, badEffect("bad %s", what)
	}
	return v, p[n:], nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func varintLen(v int64) int {
	u := uint64(v) << 1
	if v < 0 {
		u = ^u
	}
	return uvarintLen(u)
}

// cloneArgs copies a command's arguments into one allocation (a parked
// waiter keeps its command's, to be recorded if a retry serves it).
func cloneArgs(args [][]byte) [][]byte {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(args))
	for i, a := range args {
		start := len(buf)
		buf = append(buf, a...)
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

// replayEffect runs one record, as it ran: in its database, at its time,
// in its non-blocking form (a record of a blocking command is of one that
// did not block), woken as its flag says, its reply discarded. It runs on
// the actor goroutine, in a transaction the caller owns, with no session
// registered: the record's session is the actor's replay session. A
// command that fails replays as it failed (its partial changes stand, as
// they did); only a malformed record, or a storage failure that dooms the
// transaction, is an error.
func (a *Actor) replayEffect(payload []byte) error {
	e := &a.eff
	recs, isGroup, err := splitGroup(payload, e.members[:0])
	if isGroup {
		if err != nil {
			return err
		}
		// Checked whole before any of it runs: a malformed member must
		// not leave the group half applied.
		for _, r := range recs {
			if _, err := decodeEffect(r, e.args); err != nil {
				return err
			}
		}
		e.members = recs
		for _, r := range recs {
			if err := a.replayEffect(r); err != nil {
				return err
			}
		}
		clear(e.members)
		return nil
	}
	rec, err := decodeEffect(payload, e.args)
	if rec.args != nil {
		e.args = rec.args
	}
	if err != nil {
		return err
	}
	if e.session == nil {
		// Authenticated, RESP2, never in a.sessions: no reply leaves it.
		e.session = &session{resp: 2, authed: true, user: a.acl.internalUser(), name: "redo-replay"}
	}
	s := e.session
	s.db = rec.db
	a.nowMs = rec.now
	a.st.Now = rec.now
	e.out.Buf, e.out.Proto = e.out.Buf[:0], 2
	was := e.replaying
	e.replaying = true
	a.executeAs(s, rec.args, &e.out, true, rec.woken)
	e.replaying = was
	if cap(e.out.Buf) > maxEffectsBuf {
		e.out.Buf = nil
	}
	clear(e.args) // keep nothing of the payload alive
	return a.roundErr
}

// ReplayEffects replays the records next yields, in order, in one
// transaction: it begins it, runs every record (replayEffect) and the keys
// touched step. next reports false when there are no more records; its
// error stops the replay. Without a redo log it commits; with one the
// transaction stays open, as after any round: the replayed writes are in
// memory and in the log, and the actor's next flush stores them in SQLite
// with the log position they reach (ReplayLog). It returns how many
// records were replayed; on any error nothing of them is kept.
//
// It runs on the actor's goroutine or before Run starts, never
// concurrently with Run.
func (a *Actor) ReplayEffects(next func() ([]byte, bool, error)) (n int, err error) {
	if err := a.st.Begin(); err != nil {
		return 0, err
	}
	a.eff.replaying = true
	defer func() {
		a.eff.replaying = false
		if err != nil {
			a.st.Rollback()
			a.roundErr = nil
		}
	}()
	for {
		p, ok, err := next()
		if err != nil {
			return n, err
		}
		if !ok {
			break
		}
		if err := a.replayEffect(p); err != nil {
			return n, fmt.Errorf("redo record %d: %w", n, err)
		}
		n++
	}
	a.keysTouched()
	if a.roundErr != nil {
		return n, a.roundErr
	}
	if a.logging() {
		return n, nil
	}
	_, _, err = a.st.Commit()
	return n, err
}
