package actor

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/cellar-db/cellar/migration"
	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/rdb"
	"github.com/cellar-db/cellar/storage"
)

// MIGRATE, as Redis 7.0's migrateCommand (src/cluster.c) without a
// cluster: DUMP each key, RESTORE it on the target, then DEL it here.
//
// The handler parses, looks the keys up and builds the commands for the
// target (AUTH, a RESTORE with the remaining time to live per key) on the
// actor, then suspends its client (Defers) while package migration talks
// to the target on a goroutine of its own (over the connection it keeps
// for that target, as Redis does, with SELECT when it is in another
// database): the actor
// serves every other client meanwhile and never touches the socket. The
// result comes back as a call on the actor (migrateDone), which deletes
// the keys the target acknowledged, unless COPY was given, and answers.
//
// Redis blocks the whole server while it migrates, so nothing can change a
// key between its DUMP and its DEL. Here other clients run meanwhile: a
// key that any write changes (or a flush, a swap) while its MIGRATE is
// in flight is kept, in its new state, as if COPY had been given for it;
// only a key as it was sent is deleted. The deletion is recorded for the
// redo log and replicas as DEL of the keys deleted, as Redis propagates
// MIGRATE. If the client is gone when the target answers (closed, CLIENT
// KILL), or the server is a replica by then, nothing is deleted.

var migrateCommands = registerCommands([]*Command{
	{Name: "migrate", Summary: "Moves keys to another server (DUMP here, RESTORE there, then DEL here); COPY keeps them.", Handler: cmdMigrate, Defers: true, getKeys: migrateKeys, redact: migrateRedacted},
})

// migrateArgs is a parsed MIGRATE.
type migrateArgs struct {
	copy, replace bool
	user, pass    []byte // user with AUTH2; pass with AUTH or AUTH2
	auth, auth2   bool   // AUTH2 once given names the user, even after an AUTH
	first, n      int    // the keys: args[first:first+n]
	db            int64
	timeout       time.Duration
}

// parseMigrate checks MIGRATE's options in Redis's order: the options from
// the sixth argument on (KEYS takes all the rest), then the timeout, then
// the database.
func parseMigrate(c *Ctx) (migrateArgs, error) {
	m := migrateArgs{first: 3, n: 1}
	for j := 6; j < len(c.args); j++ {
		more := len(c.args) - 1 - j
		switch {
		case c.argEq(j, "copy"):
			m.copy = true
		case c.argEq(j, "replace"):
			m.replace = true
		case c.argEq(j, "auth"):
			if more < 1 {
				return m, ErrSyntax
			}
			j++
			m.auth, m.pass = true, c.args[j]
		case c.argEq(j, "auth2"):
			if more < 2 {
				return m, ErrSyntax
			}
			m.auth, m.auth2, m.user, m.pass = true, true, c.args[j+1], c.args[j+2]
			j += 2
		case c.argEq(j, "keys"):
			if len(c.args[3]) != 0 {
				return m, ErrMigrateKeysArg
			}
			m.first, m.n = j+1, len(c.args)-j-1
			j = len(c.args)
		default:
			return m, ErrSyntax
		}
	}
	timeout, err := c.intArg(5)
	if err != nil {
		return m, err
	}
	if m.db, err = c.intArg(4); err != nil {
		return m, err
	}
	if timeout <= 0 {
		timeout = 1000
	}
	timeout = min(timeout, maxTimeoutMs) // a century: as good as Redis's forever
	m.timeout = time.Duration(timeout) * time.Millisecond
	return m, nil
}

// migrateKeys are MIGRATE's keys as Redis's migrateGetKeys finds them: the
// key argument, or, with KEYS, the arguments after it (none when the key
// argument is not empty: a syntax error the command reports), skipping
// AUTH's and AUTH2's arguments on the way.
func migrateKeys(argv [][]byte) []foundKey {
	first, n := 3, 1
	for i := 6; i < len(argv); i++ {
		switch {
		case eqFold(argv[i], "keys"):
			if len(argv[3]) > 0 {
				return nil
			}
			first, n = i+1, len(argv)-i-1
			i = len(argv)
		case eqFold(argv[i], "auth"):
			i++
		case eqFold(argv[i], "auth2"):
			i += 2
		}
	}
	if first+n > len(argv) {
		return nil // arity: the handler is never reached
	}
	keys := make([]foundKey, n)
	for i := range keys {
		keys[i] = foundKey{pos: first + i, flags: []string{"RW", "ACCESS", "DELETE"}}
	}
	return keys
}

// migrateRedacted says whether args[i] is a credential of MIGRATE's AUTH
// or AUTH2, as Redis's migrateCommand redacts them while it parses: up to
// KEYS or the first option in error.
func migrateRedacted(args [][]byte, i int) bool {
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eqFold(args[j], "copy"), eqFold(args[j], "replace"):
		case eqFold(args[j], "auth") && more >= 1:
			if i == j+1 {
				return true
			}
			j++
		case eqFold(args[j], "auth2") && more >= 2:
			if i == j+1 || i == j+2 {
				return true
			}
			j += 2
		default:
			return false // KEYS, or an error
		}
	}
	return false
}

// migrating is one MIGRATE in flight.
type migrating struct {
	w       *waiter // its client's, suspended until the target answers
	cmd     *Command
	args    [][]byte // its waiter's copy of the command: the Ctx the deletion runs in
	db      int
	keys    [][]byte // the keys sent, in the order of their RESTOREs
	changed []bool   // keys[j] was changed since it was sent
	copy    bool
}

// migrations are the MIGRATEs in flight, by the keys they sent: MIGRATE's
// state, a family's (registry.go). It hears the keys touched step while a
// MIGRATE is in flight, and marks a key changed in each (keysTouched).
type migrations struct {
	a    *Actor
	keys map[waitKey][]migratingKey
}

var migrateFamily = registerFamily("migrate", func(a *Actor) *migrations { return &migrations{a: a} })

// migr is a's MIGRATEs in flight.
func (a *Actor) migr() *migrations { return migrateFamily.of(a) }

type migratingKey struct {
	m *migrating
	j int
}

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
// [AUTH password] [AUTH2 username password] [KEYS key [key ...]]
func cmdMigrate(c *Ctx) error {
	m, err := parseMigrate(c)
	if err != nil {
		return err
	}
	// The keys that exist now; none is +NOKEY, which is no error (a key
	// may well have expired meanwhile).
	type found struct {
		key  []byte
		meta storage.Meta
	}
	var keys []found
	for _, key := range c.args[m.first : m.first+m.n] {
		meta, ok, err := c.readKey(key)
		if err != nil {
			return err
		}
		if ok {
			keys = append(keys, found{key, meta})
		}
	}
	if len(keys) == 0 {
		c.w.Simple("NOKEY")
		return nil
	}
	if c.noBlock {
		return errCannotWait(c.cmd.Name)
	}
	var auth []byte
	if m.auth {
		args := [][]byte{[]byte("AUTH")}
		if m.auth2 {
			args = append(args, m.user)
		}
		auth = appendCommand(nil, append(args, m.pass))
	}
	var restores []byte
	mg := &migrating{cmd: c.cmd, db: c.db, copy: m.copy}
	for _, k := range keys {
		var ttl int64
		if k.meta.ExpireAt != 0 {
			if ttl = k.meta.ExpireAt - c.now; ttl < 0 {
				continue
			}
			ttl = max(ttl, 1)
		}
		o, err := readObject(c.st, c.db, k.key, k.meta.Type)
		if err != nil {
			return err
		}
		c.f.dump = rdb.AppendDump(c.f.dump[:0], o)
		args := [][]byte{[]byte("RESTORE"), k.key, strconv.AppendInt(nil, ttl, 10), c.f.dump}
		if m.replace {
			args = append(args, []byte("REPLACE"))
		}
		restores = appendCommand(restores, args)
		mg.keys = append(mg.keys, bytes.Clone(k.key))
	}
	mg.changed = make([]bool, len(mg.keys))
	w := &waiter{} // no keys, no retry: only migrateDone completes it
	if err := c.block(w, 0); err != nil {
		return err
	}
	mg.w, mg.args = w, w.args
	a := c.a
	a.migrateStarted(mg)
	// The port as Redis reads it, with C's atoi (debug.go), and as its
	// resolver takes it: a port past 65535 keeps its low 16 bits.
	port := atoi(c.args[2])
	if port > 65535 {
		port &= 0xffff
	}
	req := migration.Request{
		Name: string(c.args[1]) + ":" + string(c.args[2]),
		Addr: net.JoinHostPort(string(c.args[1]), strconv.FormatInt(port, 10)), Timeout: m.timeout,
		Auth: auth, DB: m.db, Restores: restores, Keys: len(mg.keys),
	}
	go func() {
		res := a.migrateSockets.Run(req)
		a.in.put(message{kind: msgCall, fn: func() { a.migrateDone(mg, res) }})
	}()
	return nil
}

// migrateStarted registers mg's keys, so that a change to one marks it
// (keysTouched).
func (a *Actor) migrateStarted(mg *migrating) {
	ms := a.migr()
	if ms.keys == nil {
		ms.keys = map[waitKey][]migratingKey{}
	}
	for j, k := range mg.keys {
		wk := waitKey{mg.db, string(k)}
		ms.keys[wk] = append(ms.keys[wk], migratingKey{mg, j})
	}
	a.fam.listenTouched(ms, true)
}

// migrateForget unregisters mg's keys.
func (a *Actor) migrateForget(mg *migrating) {
	ms := a.migr()
	for _, k := range mg.keys {
		wk := waitKey{mg.db, string(k)}
		list := ms.keys[wk]
		kept := list[:0]
		for _, mk := range list {
			if mk.m != mg {
				kept = append(kept, mk)
			}
		}
		if len(kept) == 0 {
			delete(ms.keys, wk)
		} else {
			clear(list[len(kept):])
			ms.keys[wk] = kept
		}
	}
	if len(ms.keys) == 0 {
		a.fam.listenTouched(ms, false)
	}
}

// keysTouched marks changed, in every MIGRATE in flight, the keys a change
// touched: written, deleted, expired, renamed, flushed, swapped, anything
// (the keys touched step, touched.go).
func (ms *migrations) keysTouched(ts []storage.Touch) {
	for i := range ts {
		t := &ts[i]
		switch t.Kind {
		case storage.Flushed, storage.Swapped:
			for wk, list := range ms.keys {
				if wk.db == t.DB || (t.Kind == storage.Swapped && wk.db == t.Other) {
					for _, mk := range list {
						mk.m.changed[mk.j] = true
					}
				}
			}
		default:
			for _, mk := range ms.keys[waitKey{t.DB, string(t.Key)}] {
				mk.m.changed[mk.j] = true
			}
		}
	}
}

// migrateDone acts on what the target answered: it deletes the keys the
// target acknowledged and nothing changed meanwhile (unless COPY), and
// answers as Redis does.
func (a *Actor) migrateDone(mg *migrating, res migration.Result) {
	a.migrateForget(mg)
	w := mg.w
	if w.done {
		return // its client is gone: nothing is deleted
	}
	var reply []byte
	switch {
	case res.TargetError != "":
		// Redis's addReplyErrorFormat: no line breaks inside an error.
		text := strings.NewReplacer("\r", " ", "\n", " ").Replace(res.TargetError)
		reply = errorReply(errMigrateTarget(text))
	case res.Failure == migration.Connect:
		reply = errorReply(ErrMigrateConnect)
	case res.Failure == migration.Write:
		reply = errorReply(ErrMigrateWrite)
	case res.Failure == migration.Read:
		reply = errorReply(ErrMigrateRead)
	default:
		reply = []byte("+OK\r\n")
	}
	deleted := false
	// A replica (a writable one, or one that became a replica meanwhile)
	// has its master's data, or is about to: it deletes nothing of it.
	if !mg.copy && !a.repl.on {
		var err error
		if deleted, err = a.migrateDelete(mg, res.Acked); err != nil {
			r, _ := replyFor(err)
			reply = errorReply(ReplyError(r))
		}
	}
	if reply[0] == '-' {
		a.countError(string(reply[1 : len(reply)-2]))
		a.cmdStats[mg.cmd.idx].failed++
	}
	a.complete(w, reply, deleted)
}

// migrateDelete deletes the acknowledged keys that did not change since
// they were sent, in a Ctx of the client's, recorded as one DEL of them.
func (a *Actor) migrateDelete(mg *migrating, acked []bool) (deleted bool, err error) {
	f := a.enter()
	defer a.leave()
	c := &f.ctx
	out := proto.Writer{Proto: mg.w.resp}
	*c = Ctx{a: a, f: f, s: mg.w.s, cmd: mg.cmd, args: mg.args, w: &out, st: a.st, db: mg.db, now: a.nowMs}
	defer a.keysTouched()
	rec := [][]byte{delCmd}
	for j, ok := range acked {
		if !ok || mg.changed[j] {
			continue
		}
		existed, err := c.st.Delete(mg.db, mg.keys[j])
		if err != nil {
			a.fail(err)
			return deleted, c.end(err)
		}
		if existed {
			deleted = true
			rec = append(rec, mg.keys[j])
		}
	}
	c.rec = rec
	if err := c.end(nil); err != nil {
		a.fail(err)
		return deleted, err
	}
	return deleted, nil
}
