package actor

import (
	"errors"
	"strconv"

	"github.com/cellar-db/cellar/storage"
)

// Keyspace notifications (Redis's notify-keyspace-events).
//
// No handler notifies. The keys touched step (touched.go) reads the change
// record — what each write did to which key — and turns every change into
// Redis 7.0's event: the kind of change says what happened (a rename's two
// ends, a move, a copy, an expiry set, a key deleted or found expired), and
// for a key written or whose elements changed, the command that did it
// names the event (its family's addEvents: "lpush", "hset", "zincr", ...).
// Each event is published on __keyspace@<db>__:<key> (message: the event)
// and __keyevent@<db>__:<event> (message: the key), as the K and E flags
// ask, through the same publish as PUBLISH (pubsub.go). With notifications
// off the step costs one test of Actor.notify per command that wrote.

// Notification classes and channels: Redis's NOTIFY_* bits.
const (
	notifyKeyspace = 1 << iota // K
	notifyKeyevent             // E
	notifyGeneric              // g
	notifyString               // $
	notifyList                 // l
	notifySet                  // s
	notifyHash                 // h
	notifyZSet                 // z
	notifyExpired              // x
	notifyEvicted              // e
	notifyStream               // t
	notifyKeyMiss              // m
	notifyLoaded               // (modules only)
	notifyModule               // d
	notifyNew                  // n

	notifyAll = notifyGeneric | notifyString | notifyList | notifySet | notifyHash | notifyZSet |
		notifyExpired | notifyEvicted | notifyStream | notifyModule // A
)

// notifyFlagChars is the flag string's alphabet, in the order Redis
// prints the classes.
var notifyFlagChars = []struct {
	c    byte
	flag int
}{
	{'g', notifyGeneric}, {'$', notifyString}, {'l', notifyList}, {'s', notifySet},
	{'h', notifyHash}, {'z', notifyZSet}, {'x', notifyExpired}, {'e', notifyEvicted},
	{'t', notifyStream}, {'d', notifyModule}, {'n', notifyNew},
}

var errNotifyFlags = errors.New("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")

// ParseNotifyFlags parses a notify-keyspace-events string as Redis does.
func ParseNotifyFlags(s string) (int, error) {
	flags := 0
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; ch {
		case 'A':
			flags |= notifyAll
		case 'K':
			flags |= notifyKeyspace
		case 'E':
			flags |= notifyKeyevent
		case 'm':
			flags |= notifyKeyMiss
		default:
			found := false
			for _, f := range notifyFlagChars {
				if f.c == ch {
					flags |= f.flag
					found = true
				}
			}
			if !found {
				return 0, errNotifyFlags
			}
		}
	}
	return flags, nil
}

// notifyFlagsString is Redis's normalised spelling of flags (CONFIG GET).
func notifyFlagsString(flags int) string {
	var b []byte
	if flags&notifyAll == notifyAll {
		b = append(b, 'A')
	} else {
		for _, f := range notifyFlagChars {
			if flags&f.flag != 0 {
				b = append(b, f.c)
			}
		}
	}
	if flags&notifyKeyspace != 0 {
		b = append(b, 'K')
	}
	if flags&notifyKeyevent != 0 {
		b = append(b, 'E')
	}
	if flags&notifyKeyMiss != 0 {
		b = append(b, 'm')
	}
	return string(b)
}

// setNotify makes flags the notifications published; Actor.notify is
// left 0 (nothing to do) unless a channel and a class are on.
func (a *Actor) setNotify(flags int) {
	a.notifyFlags = flags
	a.notify = 0
	if flags&(notifyKeyspace|notifyKeyevent) != 0 && flags&^(notifyKeyspace|notifyKeyevent) != 0 {
		a.notify = flags
	}
	a.st.RecordNew = a.notify&notifyNew != 0
}

// eventSpec is what a command's writes are called.
type eventSpec struct {
	class int
	event string
	// popDel: the command removes elements, and a key it empties gets its
	// event and then "del" (a pop, a REM); otherwise an emptied or
	// deleted key gets only "del" (DEL, an empty STORE result).
	popDel bool
	// expire: the command also set the key's expiry ("expire" after its
	// event), when it has an expiry option (SET EX, SETEX).
	expire func(args [][]byte) bool
	// ends names the event by the change for commands whose two keys get
	// different events (LMOVE: a pop from one, a push onto the other).
	ends func(args [][]byte, kind storage.Change) []string
	// pushFirst: the destination's event comes before the source's, as
	// Redis's LMOVE notifies (the change record has the source first).
	pushFirst bool
	// expiry names the event of an expiry the command changed (nil:
	// "expire").
	expiry func(args [][]byte) string
}

func always([][]byte) bool { return true }

// setExpires reports whether SET's arguments give an expiry.
func setExpires(args [][]byte) bool {
	for _, a := range args[3:] {
		for _, o := range []string{"EX", "PX", "EXAT", "PXAT"} {
			if eqFold(a, o) {
				return true
			}
		}
	}
	return false
}

// lmoveEvents names LMOVE's pop and push from its direction arguments at
// from and to (RPOPLPUSH: from < 0).
func lmoveEvents(from, to int) func([][]byte, storage.Change) []string {
	return func(args [][]byte, kind storage.Change) []string {
		pop, push := "rpop", "lpush"
		if from > 0 && len(args) > to {
			if eqFold(args[from], "LEFT") {
				pop = "lpop"
			}
			if eqFold(args[to], "RIGHT") {
				push = "rpush"
			}
		}
		switch kind {
		case storage.Added, storage.Written:
			return []string{push}
		case storage.Modified: // onto itself: Redis pushes, then pops
			return []string{push, pop}
		}
		return []string{pop}
	}
}

// mpopEnd names an LMPOP's or ZMPOP's event from its direction argument,
// which follows numkeys (at numkeysAt) and the keys.
func mpopEnd(numkeysAt int, first, second, firstWord string) func([][]byte, storage.Change) []string {
	return func(args [][]byte, _ storage.Change) []string {
		n, err := strconv.Atoi(string(args[numkeysAt]))
		if i := numkeysAt + 1 + n; err == nil && i < len(args) && eqFold(args[i], firstWord) {
			return []string{first}
		}
		return []string{second}
	}
}

func smoveEvents(_ [][]byte, kind storage.Change) []string {
	if kind == storage.Added || kind == storage.Written {
		return []string{"sadd"}
	}
	return []string{"srem"}
}

// notifyEvents is Redis 7.0's event for what each command writes (its
// notifyKeyspaceEvent calls), by command name. Each family adds its own
// commands', beside its command table (addEvents). Commands that only
// delete, rename, move, copy or set expiries need no entry: the kind of
// change names those.
var notifyEvents = map[string]*eventSpec{}

// hashTTLEvents names the events of a command that sets or removes hash
// field expiries: "hdel" for fields it deleted (a time in the past), ev for
// the expiries it changed.
func hashTTLEvents(ev string) *eventSpec {
	return &eventSpec{class: notifyHash, popDel: true, ends: func(_ [][]byte, kind storage.Change) []string {
		switch kind {
		case storage.Removed, storage.Deleted:
			return []string{"hdel"}
		case storage.Modified:
			return []string{ev}
		}
		return nil
	}}
}

// streamEvents names a stream command's events by the kind of change
// (pairs of kind and event); a new consumer is "xgroup-createconsumer"
// whichever command made it.
func streamEvents(pairs ...any) *eventSpec {
	names := map[storage.Change]string{storage.ConsumerCreated: "xgroup-createconsumer"}
	for i := 0; i < len(pairs); i += 2 {
		names[pairs[i].(storage.Change)] = pairs[i+1].(string)
	}
	return &eventSpec{class: notifyStream, ends: func(_ [][]byte, kind storage.Change) []string {
		if ev, ok := names[kind]; ok {
			return []string{ev}
		}
		return nil
	}}
}

// notifyTouched publishes the events of the change record's entries.
func (a *Actor) notifyTouched(ts []storage.Touch) {
	if !a.heard() {
		return
	}
	var cmd *Command
	var args [][]byte
	if a.depth > 0 {
		c := &a.frames[a.depth-1].ctx
		cmd, args = c.cmd, c.args
	}
	var spec *eventSpec
	if cmd != nil {
		spec = cmd.events
	}
	if spec != nil && spec.pushFirst {
		for i := range ts {
			if k := ts[i].Kind; k == storage.Added || k == storage.Written || k == storage.Created {
				a.notifyTouch(cmd, spec, args, &ts[i])
			}
		}
		for i := range ts {
			if k := ts[i].Kind; k != storage.Added && k != storage.Written && k != storage.Created {
				a.notifyTouch(cmd, spec, args, &ts[i])
			}
		}
		return
	}
	for i := range ts {
		a.notifyTouch(cmd, spec, args, &ts[i])
	}
}

// notifyTouch publishes the events of one change of the record, made by
// cmd (nil outside any command: the expiry sweep) with args.
func (a *Actor) notifyTouch(cmd *Command, spec *eventSpec, args [][]byte, t *storage.Touch) {
	switch t.Kind {
	case storage.Expired:
		a.notifyEvent(notifyExpired, "expired", t.DB, t.Key)
	case storage.FieldsExpired:
		// Redis 7.4: "hexpired" for the fields, then "del" if the hash
		// went with them.
		a.notifyEvent(notifyHash, "hexpired", t.DB, t.Key)
		if t.Other == 1 {
			a.notifyEvent(notifyGeneric, "del", t.DB, t.Key)
		}
	case storage.Created:
		a.notifyEvent(notifyNew, "new", t.DB, t.Key)
	case storage.RenamedFrom:
		a.notifyEvent(notifyGeneric, "rename_from", t.DB, t.Key)
	case storage.RenamedTo:
		a.notifyEvent(notifyGeneric, "rename_to", t.DB, t.Key)
	case storage.MovedFrom:
		a.notifyEvent(notifyGeneric, "move_from", t.DB, t.Key)
	case storage.MovedTo:
		a.notifyEvent(notifyGeneric, "move_to", t.DB, t.Key)
	case storage.CopiedTo:
		a.notifyEvent(notifyGeneric, "copy_to", t.DB, t.Key)
	case storage.ExpiryChanged:
		ev := "expire"
		if spec != nil && spec.expiry != nil {
			ev = spec.expiry(args)
		}
		a.notifyEvent(notifyGeneric, ev, t.DB, t.Key)
	case storage.Deleted:
		if spec != nil && spec.popDel {
			a.notifyElements(spec, args, t)
		}
		a.notifyEvent(notifyGeneric, "del", t.DB, t.Key)
	case storage.Written, storage.Added, storage.Removed, storage.Modified,
		storage.GroupDestroyed, storage.ConsumerCreated:
		if spec == nil {
			return
		}
		a.notifyElements(spec, args, t)
		if spec.expire != nil && spec.expire(args) {
			a.notifyEvent(notifyGeneric, "expire", t.DB, t.Key)
		}
	}
}

// getexExpiry is GETEX's: "persist" with PERSIST, else "expire".
func getexExpiry(args [][]byte) string {
	for _, a := range args[2:] {
		if eqFold(a, "PERSIST") {
			return "persist"
		}
	}
	return "expire"
}

// notifyElements publishes a command's own event(s) for a key.
func (a *Actor) notifyElements(spec *eventSpec, args [][]byte, t *storage.Touch) {
	if spec.ends == nil {
		a.notifyEvent(spec.class, spec.event, t.DB, t.Key)
		return
	}
	for _, ev := range spec.ends(args, t.Kind) {
		a.notifyEvent(spec.class, ev, t.DB, t.Key)
	}
}

// notifyEvent publishes one event, as Redis's notifyKeyspaceEvent.
func (a *Actor) notifyEvent(class int, event string, db int, key []byte) {
	if a.notify&class == 0 || !a.heard() {
		return
	}
	ch := a.notifyBuf[:0]
	if a.notify&notifyKeyspace != 0 {
		ch = append(ch, "__keyspace@"...)
		ch = strconv.AppendInt(ch, int64(db), 10)
		ch = append(ch, "__:"...)
		ch = append(ch, key...)
		a.publish(subChannel, ch, []byte(event), true)
	}
	if a.notify&notifyKeyevent != 0 {
		ch = append(ch[:0], "__keyevent@"...)
		ch = strconv.AppendInt(ch, int64(db), 10)
		ch = append(ch, "__:"...)
		ch = append(ch, event...)
		a.publish(subChannel, ch, key, true)
	}
	a.notifyBuf = ch[:0]
}

// heard reports whether anybody could hear a notification: some channel or
// pattern has a subscriber.
func (a *Actor) heard() bool {
	return len(a.ps.tables[subChannel]) > 0 || len(a.ps.tables[subPattern]) > 0
}

// addEvents adds a family's keyspace notification events to notifyEvents,
// by command name. It runs as a package variable's initializer, so before
// the command table is built (command.go's init); a command given events
// twice is a mistake in the package, and stops it there.
func addEvents(events map[string]*eventSpec) bool {
	for name, spec := range events {
		if notifyEvents[name] != nil {
			panic("actor: keyspace events for " + name + " added twice")
		}
		notifyEvents[name] = spec
	}
	return true
}
