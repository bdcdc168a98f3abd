package actor

import (
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cellar-db/cellar/proto"
)

// session is the actor's state for one connection: everything a command can
// change about its client. The loop keeps only socket-side state.
type session struct {
	id          uint64
	sink        Sink
	addr, laddr string
	fd          int
	created     time.Time
	lastActive  time.Time

	db   int
	resp int
	// loadQ: the connection's batches waiting for a Load (loads.go).
	loadQ  []*Batch
	authed bool
	// replyHint is the length of the last batch's replies (replyCap).
	replyHint int
	// authFlag is authed as the connection's loop sees it (ConnInfo.Authed).
	authFlag *atomic.Bool
	// multiFlag is whether the session is in MULTI, for its loop
	// (ConnInfo.InMulti; nil without one); respFlag its protocol
	// (ConnInfo.Resp).
	multiFlag *atomic.Bool
	respFlag  *atomic.Int32
	// userFlag and subFlag are the user's name and subscribed, for its
	// loop (ConnInfo.User, ConnInfo.Subscribed).
	userFlag *atomic.Pointer[string]
	subFlag  *atomic.Bool
	// user is the ACL user the client runs as (acl.go); the default user
	// until AUTH or HELLO names another.
	user    *aclUser
	name    string
	lastCmd string
	// input is the running batch's Batch.Input (0 between batches).
	input   int64
	noTouch bool
	// master: the replication link's connection to the master, whose
	// commands a read-only replica obeys (replication.go).
	master bool
	// replica: the session is a replica of this server (PSYNC/SYNC ran);
	// replConf is what REPLCONF said before (master.go).
	replica  *replica
	replConf replConf
	// mem is the connection's share of the client memory budget (its
	// NO-EVICT flag lives there too).
	mem *ClientMem

	// closing: close after this batch's reply (QUIT, killing itself).
	closing bool
	// killed: another client killed it; the loop closes it and tells us.
	killed bool
	// blocked is the waiter of the blocking command the session's
	// suspended batch waits on; nil when not blocked.
	blocked *waiter

	// tx is the open transaction (MULTI until EXEC or DISCARD); watched
	// the keys WATCH watches, watchDirty that one changed since (multi.go).
	tx         *txState
	watched    []*watchedKey
	watchDirty bool
	// reply is CLIENT REPLY's mode.
	reply replyMode
	// held is how many of the session's batches wait for a CLIENT PAUSE
	// to end (pause.go).
	held int
	// Pub/Sub (pubsub.go): subs is what the client is subscribed to (nil
	// when nothing); subscribed is Redis's CLIENT_PUBSUB flag (RESP2
	// clients may then run only the commands flagged InSubscribed).
	subs       *subscriptions
	subscribed bool
	// monitor: the client ran MONITOR (monitor.go).
	monitor bool
	// seq is the sequence number of the client's last batch the actor ran:
	// a push to it is written after that batch's replies.
	seq uint64
	// pushOut is the index in Actor.out of the completion gathering the
	// client's pushes in round pushRound.
	pushOut   int32
	pushRound uint64
	// softSince: the client's output has been above the pubsub soft
	// limit since then (zero: it is not).
	softSince time.Time
	// track is CLIENT TRACKING's state, nil while off; trackItems how
	// many entries of the tracking table hold the client's id
	// (tracking.go).
	track      *trackState
	trackItems int
}

func (a *Actor) openSession(info ConnInfo, now time.Time) {
	a.stats.connsReceived++
	if info.Mem == nil {
		// A caller without a loop (tests) has nothing that could evict.
		info.Mem = a.cfg.Clients.Register(info.ID, func() {})
	}
	// The loop decided, when it accepted the connection, whether it
	// starts authenticated; the session agrees with it.
	authed := !a.authRequired()
	if info.Authed != nil {
		authed = info.Authed.Load()
	}
	a.sessions[info.ID] = &session{
		id: info.ID, sink: info.Sink, addr: info.Addr, laddr: info.LocalAddr, fd: info.FD,
		created: now, lastActive: now,
		resp:      2,
		authed:    authed || info.Master,
		master:    info.Master,
		authFlag:  info.Authed,
		multiFlag: info.InMulti,
		respFlag:  info.Resp,
		userFlag:  info.User,
		subFlag:   info.Subscribed,
		user:      a.acl.def,
		mem:       info.Mem,
	}
}

// endSession is the one cleanup path for a session, whatever ended it (the
// loop closing the socket after EOF, an error, CLIENT KILL or shutdown). It
// is idempotent: a second call finds nothing and does nothing.
//
// Canonical order (invariant 5 in actor/doc.go): cancel waiters (a blocked
// client's waiter leaves every queue and the timer heap, so no later push
// can pick it), release pending replies (the suspended batch's replies go
// with the waiter, never written), free buffers, update counters, log.
func (a *Actor) endSession(id uint64) bool {
	s := a.sessions[id]
	if s == nil {
		return false
	}
	if s.blocked != nil {
		a.cancelWaiter(s.blocked)
	}
	a.resetState(s)
	a.dropHeld(s)
	a.dropReplica(s)
	delete(a.sessions, id)
	a.forgetSession(s)
	if e := a.log.Debug(); e.Enabled() {
		e.Uint64("client", id).Str("addr", s.addr).Msg("session ended")
	}
	return true
}

// kill ends another client's connection: the loop closes the socket and
// then reports the close, which ends the session.
func (a *Actor) kill(s *session) {
	s.killed = true
	// A killed client that was blocked gets no reply, and from now on no
	// element: its waiter goes before the close is even requested.
	if s.blocked != nil {
		a.cancelWaiter(s.blocked)
	}
	a.out = append(a.out, routed{sink: s.sink, c: Completion{ConnID: s.id, Kill: true}})
}

var connectionCommands = registerCommands([]*Command{
	{Name: "ping", Summary: "Replies PONG, or echoes its argument.", Handler: cmdPing, InSubscribed: true},
	{Name: "echo", Summary: "Replies with its argument.", Handler: cmdEcho},
	{Name: "quit", Summary: "Closes the connection after the reply.", Handler: cmdQuit, Immediate: true, InSubscribed: true},
	{Name: "reset", Summary: "Resets the connection's state to that of a new connection.", Handler: cmdReset, Immediate: true, InSubscribed: true, Authenticates: true, whileBusy: (*Actor).busyRun, switchesDB: true},
	{Name: "hello", Summary: "Chooses the protocol version, optionally authenticates, and describes the server.", Handler: cmdHello, Authenticates: true, redact: helloRedacted, whileBusy: (*Actor).busyRun},
	{Name: "auth", Summary: "Authenticates the connection.", Handler: cmdAuth, Authenticates: true, redact: redactFrom(1), whileBusy: (*Actor).busyRun},
	{Name: "select", Summary: "Selects the logical database of the connection.", Handler: cmdSelect, switchesDB: true},
	{Name: "client", Summary: "Inspects and controls client connections.", Subs: []*Command{
		{Name: "client|id", Summary: "Returns the connection's client id.", Handler: cmdClientID},
		{Name: "client|setname", Summary: "Names the connection.", Handler: cmdClientSetName},
		{Name: "client|getname", Summary: "Returns the connection's name.", Handler: cmdClientGetName},
		{Name: "client|info", Summary: "Describes the connection.", Handler: cmdClientInfo},
		{Name: "client|list", Summary: "Describes every connection.", Handler: cmdClientList},
		{Name: "client|kill", Summary: "Closes connections that match filters.", Handler: cmdClientKill},
		{Name: "client|unblock", Summary: "Ends another client's blocking command as a timeout or an error.", Handler: cmdClientUnblock},
		{Name: "client|no-evict", Summary: "Exempts the connection from eviction by maxmemory_clients.", Handler: cmdClientOnOff(func(s *session, on bool) { s.mem.SetNoEvict(on) })},
		{Name: "client|no-touch", Summary: "Keeps the connection's commands, but TOUCH, from touching the keys' access clocks.", Handler: cmdClientOnOff(func(s *session, on bool) { s.noTouch = on })},
		{Name: "client|pause", Summary: "Holds clients' commands (all, or only writes) for a time.", Handler: cmdClientPause},
		{Name: "client|unpause", Summary: "Ends a CLIENT PAUSE at once.", Handler: cmdClientUnpause},
		{Name: "client|reply", Summary: "Turns the connection's replies on or off, or skips the next one.", Handler: cmdClientReply},
		{Name: "client|tracking", Summary: "Turns client-side caching's key tracking on or off, with its options.", Handler: cmdClientTracking},
		{Name: "client|caching", Summary: "Says whether the next command's keys are tracked (OPTIN/OPTOUT tracking).", Handler: cmdClientCaching},
		{Name: "client|getredir", Summary: "Returns the client id invalidations are redirected to.", Handler: cmdClientGetRedir},
		{Name: "client|trackinginfo", Summary: "Describes the connection's key tracking.", Handler: cmdClientTrackingInfo},
		{Name: "client|help", Summary: "Lists the CLIENT subcommands.", Handler: cmdClientHelp},
	}},
})

// PING [message]
func cmdPing(c *Ctx) error {
	if c.s.subscribed && c.w.Proto == 2 && len(c.args) <= 2 {
		// A subscribed RESP2 client reads only arrays: Redis answers
		// ["pong", message or ""].
		c.w.Array(2)
		c.w.BulkString("pong")
		if len(c.args) == 2 {
			c.w.Bulk(c.args[1])
		} else {
			c.w.BulkString("")
		}
		return nil
	}
	switch len(c.args) {
	case 1:
		c.w.Simple("PONG")
	case 2:
		c.w.Bulk(c.args[1])
	default:
		return errWrongArgs(c.cmd.Name)
	}
	return nil
}

// ECHO message
func cmdEcho(c *Ctx) error {
	c.w.Bulk(c.args[1])
	return nil
}

// QUIT
func cmdQuit(c *Ctx) error {
	c.s.closing = true
	c.w.OK()
	return nil
}

// RESET
func cmdReset(c *Ctx) error {
	s := c.s
	c.a.resetState(s)
	s.db, s.name = 0, ""
	s.setResp(2)
	s.setAuthed(!c.a.authRequired())
	s.setUser(c.a.acl.def)
	s.noTouch = false
	s.mem.SetNoEvict(false)
	c.w.Proto = 2
	c.w.Simple("RESET")
	return nil
}

// resetState ends the session state that RESET clears and that must not
// outlive the session: the transaction and watches (multi.go) and the
// CLIENT REPLY mode. It is called by RESET and by endSession; state other
// features keep per session (subscriptions, tracking) is released here
// too, so that both paths stay one.
func (a *Actor) resetState(s *session) {
	a.resetTx(s)
	a.unsubscribeAll(s)
	a.disableTracking(s)
	a.stopMonitor(s)
	s.reply = replyOn
}

// Hello is a parsed HELLO [protover [AUTH username password] [SETNAME
// clientname]]: Ver 0 when no protocol was given, User nil without AUTH.
type Hello struct {
	Ver        int
	User, Pass []byte
	Name       []byte
	HasName    bool
}

// ParseHello parses HELLO's arguments (args[0] is HELLO) with Redis 7.0's
// errors, in its order. Safe from any goroutine: the loops answer HELLO
// themselves while a script is busy.
func ParseHello(args [][]byte) (Hello, error) {
	var h Hello
	next := 1
	if len(args) >= 2 {
		v, ok := parseIntOK(args[1])
		if !ok {
			return h, ErrProtoVersion
		}
		if v < 2 || v > 3 {
			return h, ErrNoProto
		}
		h.Ver, next = int(v), 2
	}
	for j := next; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eqFold(args[j], "auth") && more >= 2:
			h.User, h.Pass = args[j+1], args[j+2]
			j += 2
		case eqFold(args[j], "setname") && more >= 1:
			h.Name, h.HasName = args[j+1], true
			j++
		default:
			return h, errHelloOption(args[j])
		}
	}
	return h, nil
}

// helloRedacted says whether args[i] is HELLO AUTH's user name or
// password, which logs must not keep.
func helloRedacted(args [][]byte, i int) bool {
	for j := 2; j+2 < len(args); j++ {
		if eqFold(args[j], "auth") && (i == j+1 || i == j+2) {
			return true
		}
	}
	return false
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
func cmdHello(c *Ctx) error {
	h, err := ParseHello(c.args)
	if err != nil {
		return err
	}
	if h.User != nil {
		if !c.a.authenticate(c.s, c.args[0], h.User, h.Pass) {
			return ErrWrongPass
		}
	}
	if !c.s.authed {
		return ErrHelloNoAuth
	}
	if h.HasName {
		if err := ValidName(h.Name); err != nil {
			return err
		}
		c.s.name = string(h.Name)
	}
	if h.Ver != 0 {
		c.s.setResp(h.Ver)
		c.w.Proto = h.Ver
	}
	WriteHello(c.w, c.s.id, c.a.repl.on)
	return nil
}

// WriteHello writes HELLO's reply, in w's protocol, for client id. Safe
// from any goroutine.
func WriteHello(w *proto.Writer, id uint64, replica bool) {
	w.Map(7)
	w.BulkString("server")
	w.BulkString("redis")
	w.BulkString("version")
	w.BulkString(RedisVersion)
	w.BulkString("proto")
	w.Int(int64(w.Proto))
	w.BulkString("id")
	w.Int(int64(id))
	w.BulkString("mode")
	w.BulkString("standalone")
	w.BulkString("role")
	if replica {
		w.BulkString("replica")
	} else {
		w.BulkString("master")
	}
	w.BulkString("modules")
	w.Array(0)
}

// setUser makes u the session's user, and tells its loop.
func (s *session) setUser(u *aclUser) {
	s.user = u
	if s.userFlag != nil {
		s.userFlag.Store(&u.name)
	}
}

// setSubscribed sets whether the session has subscriptions, and tells its
// loop.
func (s *session) setSubscribed(on bool) {
	s.subscribed = on
	if s.subFlag != nil {
		s.subFlag.Store(on)
	}
}

// setResp sets the session's protocol, and tells its loop.
func (s *session) setResp(v int) {
	s.resp = v
	if s.respFlag != nil {
		s.respFlag.Store(int32(v))
	}
}

// AUTH [username] password
func cmdAuth(c *Ctx) error {
	if len(c.args) > 3 {
		return ErrSyntax
	}
	user, pass := []byte("default"), c.args[1]
	if len(c.args) == 2 {
		if c.a.acl.def.nopass {
			return ErrAuthNotSet
		}
	} else {
		user, pass = c.args[1], c.args[2]
	}
	if !c.a.authenticate(c.s, c.args[0], user, pass) {
		return ErrWrongPass
	}
	c.w.OK()
	return nil
}

// SELECT index
func cmdSelect(c *Ctx) error {
	v, ok := parseIntOK(c.args[1])
	if !ok || v < -1<<31 || v > 1<<31-1 {
		return ErrNotInteger
	}
	if v < 0 || v >= int64(numDBs) {
		return ErrDBIndex
	}
	c.s.db = int(v)
	c.w.OK()
	return nil
}

// CLIENT ID
func cmdClientID(c *Ctx) error {
	c.w.Int(int64(c.s.id))
	return nil
}

// ValidName checks a client name or library attribute the way Redis does:
// printable ASCII without spaces.
func ValidName(b []byte) error {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return ErrClientName
		}
	}
	return nil
}

// CLIENT SETNAME connection-name
func cmdClientSetName(c *Ctx) error {
	if err := ValidName(c.args[2]); err != nil {
		return err
	}
	c.s.name = string(c.args[2])
	c.w.OK()
	return nil
}

// CLIENT GETNAME
func cmdClientGetName(c *Ctx) error {
	if c.s.name == "" {
		c.w.Null()
	} else {
		c.w.BulkString(c.s.name)
	}
	return nil
}

// replyMode is CLIENT REPLY's state of a session.
type replyMode uint8

const (
	replyOn       replyMode = iota
	replyOff                // CLIENT REPLY OFF: no replies until ON
	replySkipNext           // CLIENT REPLY SKIP ran: the next command's reply goes
	replySkip               // the command running now is the skipped one
)

// CLIENT REPLY ON|OFF|SKIP
//
// OFF and SKIP answer nothing; ON answers OK. runBatch drops the replies
// of commands that run while replies are off or skipped.
func cmdClientReply(c *Ctx) error {
	switch {
	case c.argEq(2, "on"):
		c.s.reply = replyOn
		c.w.OK()
	case c.argEq(2, "off"):
		c.s.reply = replyOff
	case c.argEq(2, "skip"):
		if c.s.reply != replyOff {
			c.s.reply = replySkipNext
		}
	default:
		return ErrSyntax
	}
	return nil
}

// CLIENT NO-EVICT|NO-TOUCH ON|OFF: set turns the flag on or off.
func cmdClientOnOff(set func(s *session, on bool)) func(c *Ctx) error {
	return func(c *Ctx) error {
		var on bool
		switch {
		case c.argEq(2, "on"):
			on = true
		case c.argEq(2, "off"):
		default:
			return ErrSyntax
		}
		set(c.s, on)
		c.w.OK()
		return nil
	}
}

// clientLine is one line of CLIENT LIST / CLIENT INFO, in Redis 7's field
// order.
func (a *Actor) clientLine(b []byte, s *session, now time.Time) []byte {
	// In Redis's order (CLIENT LIST's flags).
	var fl [8]byte
	flags := fl[:0]
	switch {
	case s.monitor:
		flags = append(flags, 'O')
	case s.replica != nil:
		flags = append(flags, 'S')
	}
	if s.master {
		flags = append(flags, 'M')
	}
	if s.subscribed {
		flags = append(flags, 'P')
	}
	if s.tx != nil {
		flags = append(flags, 'x')
	}
	if s.blocked != nil {
		flags = append(flags, 'b')
	}
	flags = trackingFlags(flags, s)
	if s.watchDirty {
		flags = append(flags, 'd')
	}
	if len(flags) == 0 {
		flags = append(flags, 'N')
	}
	app := func(k, v string) {
		b = append(b, k...)
		b = append(b, '=')
		b = append(b, v...)
		b = append(b, ' ')
	}
	num := func(v int64) string { return strconv.FormatInt(v, 10) }
	app("id", num(int64(s.id)))
	app("addr", s.addr)
	app("laddr", s.laddr)
	app("fd", num(int64(s.fd)))
	app("name", s.name)
	app("age", num(int64(now.Sub(s.created)/time.Second)))
	app("idle", num(int64(now.Sub(s.lastActive)/time.Second)))
	app("flags", string(flags))
	app("db", num(int64(s.db)))
	for k, name := range []string{"sub", "psub", "ssub"} {
		n := 0
		if s.subs != nil {
			n = len(s.subs.names[k])
		}
		app(name, num(int64(n)))
	}
	multi, multiMem := int64(-1), int64(0)
	if s.tx != nil {
		multi, multiMem = int64(len(s.tx.queue)), s.tx.bytes
	}
	app("multi", num(multi))
	// Redis's buffer fields from the client's memory accounting: qbuf is
	// input not yet parsed, plus, while the client's own commands run, the
	// bytes they were parsed from (Redis trims its query buffer only after
	// running all it read); qbuf-free as Redis's query buffer has it
	// (queryFree); argv-mem parsed commands waiting to run, obl the replies
	// in the socket's buffer not yet sent, oll the replies the loop holds
	// for their turn plus one for unsent output, omem all replies not yet
	// sent (built, in flight or in the socket's buffer). The loops set
	// them (loop/conn.go).
	var parts [memParts]int64
	for p := range parts {
		parts[p] = s.mem.Part(p)
	}
	omem := parts[MemReplies] + parts[MemOutput]
	qbuf := parts[MemQuery] + s.input
	app("qbuf", num(qbuf))
	app("qbuf-free", num(queryFree(s, qbuf, now)))
	app("argv-mem", num(parts[MemBatches]))
	app("multi-mem", num(multiMem))
	app("rbs", "0")
	app("rbp", "0")
	oll := s.mem.waiting.Load()
	if parts[MemOutput] > 0 {
		oll++
	}
	app("obl", num(parts[MemOutput]))
	app("oll", num(oll))
	app("omem", num(omem))
	app("tot-mem", num(parts[MemQuery]+parts[MemBatches]+omem+parts[MemMulti]+parts[MemWatch]+parts[MemPubsub]))
	app("events", "r")
	app("cmd", orNULL(s.lastCmd))
	app("user", s.user.name)
	app("redir", redirField(s))
	b = append(b, "resp="...)
	b = strconv.AppendInt(b, int64(s.resp), 10)
	return append(b, '\n')
}

// redisQueryAlloc is the size of Redis 7.0's query buffer once it has read
// a request: a 16 KB read (PROTO_IOBUF_LEN) lands in jemalloc's 20 KB size
// class, less the 6 bytes of the sds header and terminator.
const redisQueryAlloc = 20474

// queryFree is CLIENT LIST's qbuf-free for a client whose qbuf is qbuf, as
// Redis 7.0 would show it: its query buffer is an empty sds (4 bytes free)
// until the client sends a command, then holds redisQueryAlloc bytes
// until the client has been idle more than 2 seconds, when clientsCron
// frees the unused room (0 free). A large request arriving has a buffer of
// its own, whose room the loop reports.
func queryFree(s *session, qbuf int64, now time.Time) int64 {
	switch {
	case qbuf > redisQueryAlloc:
		return s.mem.queryFree.Load()
	case s.input > 0:
	case s.lastCmd == "":
		return 4
	case now.Sub(s.lastActive) > 2*time.Second:
		return 0
	}
	return redisQueryAlloc - qbuf
}

func orNULL(s string) string {
	if s == "" {
		return "NULL"
	}
	return s
}

// CLIENT INFO
func cmdClientInfo(c *Ctx) error {
	c.w.Verbatim("txt", string(c.a.clientLine(nil, c.s, time.Now())))
	return nil
}

// sortedSessions returns the sessions in client id order.
func (a *Actor) sortedSessions() []*session {
	list := make([]*session, 0, len(a.sessions))
	for _, s := range a.sessions {
		list = append(list, s)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	return list
}

// validClientType checks a CLIENT LIST/KILL TYPE value and returns it in
// lower case ("slave" as "replica"). Cellar's clients are "normal", or
// "pubsub" while subscribed (Redis's CLIENT_PUBSUB).
func validClientType(b []byte) (string, error) {
	switch t := lower(b); t {
	case "normal", "master", "replica", "pubsub":
		return t, nil
	case "slave":
		return "replica", nil
	}
	return "", errClientType(b)
}

// clientType is the client's type for CLIENT LIST/KILL TYPE (and its
// output limit class, pubsub.go).
func (s *session) clientType() string {
	switch {
	case s.replica != nil:
		return "replica"
	case s.master:
		return "master"
	}
	if s.subscribed {
		return "pubsub"
	}
	return "normal"
}

// CLIENT LIST [TYPE type] [ID id [id ...]]
func cmdClientList(c *Ctx) error {
	now := time.Now()
	var out []byte
	switch {
	case len(c.args) == 4 && c.argEq(2, "type"):
		typ, err := validClientType(c.args[3])
		if err != nil {
			return err
		}
		for _, s := range c.a.sortedSessions() {
			if s.clientType() == typ && !s.killed {
				out = c.a.clientLine(out, s, now)
			}
		}
	case len(c.args) > 3 && c.argEq(2, "id"):
		for _, a := range c.args[3:] {
			id, ok := parseIntOK(a)
			if !ok {
				return ErrInvalidClientID
			}
			if s := c.a.sessions[uint64(id)]; s != nil && !s.killed {
				out = c.a.clientLine(out, s, now)
			}
		}
	case len(c.args) != 2:
		return ErrSyntax
	default:
		for _, s := range c.a.sortedSessions() {
			// A killed client is gone for Redis at once; here the loop
			// closes it a little later.
			if !s.killed {
				out = c.a.clientLine(out, s, now)
			}
		}
	}
	c.w.Verbatim("txt", string(out))
	return nil
}

// CLIENT KILL ip:port | CLIENT KILL [ID id] [TYPE type] [USER user]
// [ADDR ip:port] [LADDR ip:port] [SKIPME yes|no] ...
func cmdClientKill(c *Ctx) error {
	var addr, laddr string
	var haveAddr, haveLaddr bool
	var typ string
	var id uint64
	var user *aclUser
	skipme := true
	if len(c.args) == 3 {
		addr, haveAddr, skipme = string(c.args[2]), true, false
	} else if len(c.args) > 3 {
		for i := 2; i < len(c.args); i += 2 {
			more := i+1 < len(c.args)
			switch {
			case c.argEq(i, "id") && more:
				v, ok := parseIntOK(c.args[i+1])
				if !ok || v < 1 {
					return ErrClientIDPositive
				}
				id = uint64(v)
			case c.argEq(i, "type") && more:
				t, err := validClientType(c.args[i+1])
				if err != nil {
					return err
				}
				typ = t
			case c.argEq(i, "addr") && more:
				addr, haveAddr = string(c.args[i+1]), true
			case c.argEq(i, "laddr") && more:
				laddr, haveLaddr = string(c.args[i+1]), true
			case c.argEq(i, "user") && more:
				user = c.a.acl.users[string(c.args[i+1])]
				if user == nil {
					return errNoSuchUser(c.args[i+1])
				}
			case c.argEq(i, "skipme") && more:
				switch {
				case c.argEq(i+1, "yes"):
					skipme = true
				case c.argEq(i+1, "no"):
					skipme = false
				default:
					return ErrSyntax
				}
			default:
				return ErrSyntax
			}
		}
	} else {
		return errWrongArgs(c.cmd.Name)
	}
	killed := 0
	for _, s := range c.a.sortedSessions() {
		if (haveAddr && s.addr != addr) || (haveLaddr && s.laddr != laddr) ||
			(typ != "" && s.clientType() != typ) || (id != 0 && s.id != id) || (user != nil && s.user != user) || (s == c.s && skipme) || s.killed {
			continue
		}
		if s == c.s {
			s.closing = true
		} else {
			c.a.kill(s)
		}
		killed++
	}
	if len(c.args) == 3 {
		if killed == 0 {
			return ErrNoSuchClient
		}
		c.w.OK()
		return nil
	}
	c.w.Int(int64(killed))
	return nil
}

// CLIENT HELP
func cmdClientHelp(c *Ctx) error {
	return helpReply(c, "client", []string{
		"ID", "    This connection's client id.",
		"INFO", "    A description of this connection.",
		"LIST [TYPE <normal|master|replica|pubsub>] [ID <id> [<id> ...]]", "    A description of every (matching) connection.",
		"KILL <ip:port>", "    Close the connection at that address.",
		"KILL <option> <value> [<option> <value> [...]]", "    Close the connections matching every filter: ID, TYPE, USER, ADDR, LADDR, SKIPME (yes|no).",
		"UNBLOCK <clientid> [TIMEOUT|ERROR]", "    End the client's blocking command as if it timed out (default) or with an error.",
		"SETNAME <name>", "    Name this connection.",
		"GETNAME", "    This connection's name.",
		"NO-EVICT (ON|OFF)", "    Protect current client connection from eviction.",
		"NO-TOUCH (ON|OFF)", "    Accepted; reads do not change what OBJECT reports.",
		"PAUSE <timeout> [WRITE|ALL]", "    Suspend all, or just write, clients for <timeout> milliseconds.",
		"UNPAUSE", "    Stop the current client pause, resuming traffic.",
		"REPLY (ON|OFF|SKIP)", "    Control the replies sent to the current connection.",
		"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]", "         [OPTIN] [OPTOUT] [NOLOOP]", "    Control server assisted client side caching.",
		"CACHING (YES|NO)", "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
		"GETREDIR", "    Return the client ID we are redirecting to when tracking is enabled.",
		"TRACKINGINFO", "    Report tracking status for the current connection.",
		"HELP", "    This help.",
	})
}
