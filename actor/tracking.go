package actor

import (
	"math/bits"
	"sort"
	"strconv"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

// Client-side caching: CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO,
// with Redis 7.0's semantics (its tracking.c and CLIENT TRACKING docs).
//
// The tracking table maps a key name (of any database: Redis's table
// ignores databases too) to the ids of the clients that may cache it. A
// tracking client's key enters the table when a read-only command looks it
// up: the read helpers (lookups.go, countLookup) collect the keys of the
// running command, and they are remembered once the command's own changes
// have been acted on (so a key a read finds expired is invalidated for the
// clients that held it before this one is added, as in Redis). A key
// leaves the table, sending an invalidation to each of its clients, when
// the keys-touched step (touched.go) sees any change to it in the storage
// change record; a flush sends every tracking client the null
// invalidation and empties the table. Nothing else invalidates: handlers
// never do.
//
// Ids stay in the table while their client turns tracking off (as in
// Redis, turning it on again revives them); the ids of clients that have
// gone are purged once they make up half of the table's items, so items
// are bounded by keys × live clients. The number of keys is bounded by
// tracking-table-max-keys: before each command, keys over the limit are
// evicted, each with an invalidation, as Redis's trackingLimitUsedSlots
// does.
//
// BCAST clients are not in the table: they register prefixes, and every
// changed key matching a prefix is collected for the round; at the end of
// the round each prefix's keys go to its clients in one message (Redis
// sends them before it sleeps, after the replies of the event loop's
// iteration).
//
// Invalidations travel the Pub/Sub push path (Actor.push, pubsub.go): a
// RESP3 client gets a `>2 invalidate [keys]` push; a client with REDIRECT
// has them sent to the target instead — a push if the target speaks
// RESP3, a `message` on `__redis__:invalidate` if it is a subscribed RESP2
// client, nothing otherwise. An invalidation caused by a client's own
// command goes right after that command's reply (Redis 7.0.15 keeps them
// pending until the command ends; inside EXEC, after EXEC's reply).
//
// With no client tracking, all of this costs a field test per command.

// invalidationChannel is where RESP2 redirect targets get invalidations.
const invalidationChannel = "__redis__:invalidate"

// trackState is a session's CLIENT TRACKING state; nil while tracking is
// off.
type trackState struct {
	redirect                     uint64
	bcast, optin, optout, noloop bool
	// caching: CLIENT CACHING YES (OPTIN) or NO (OPTOUT) was given for the
	// next command.
	caching bool
	// broken: the redirect target was gone when an invalidation was due.
	broken bool
	// prefixes are the BCAST prefixes, sorted.
	prefixes []string
}

// tracking is the server's side: the table, the prefixes, the counters.
type tracking struct {
	clients int // sessions with tracking on
	keys    map[string]map[uint64]struct{}
	items   int // ids in keys
	stale   int // of items, ids of sessions that ended
	// prefixes are the BCAST prefixes with their clients and the keys
	// changed this round.
	prefixes map[string]*bcastState
	maxKeys  int
	effort   int // Redis's timeout_counter: rounds of eviction that fell short
	// reads are the keys the running read-only command looked up for its
	// tracking client, remembered when the command ends.
	reads [][]byte
	// scriptRead: a command the running script called is read-only; the
	// script's declared keys are remembered for its client when it ends
	// (Redis tracks a script by its keys, not by what it looked up).
	scriptRead bool
	// pending are invalidations for the client whose command is running,
	// sent after its reply (flush: the null one).
	pending   []pendingInv
	pendingTo *session
}

type pendingInv struct {
	key   string
	flush bool
}

type bcastState struct {
	keys    map[string]*session // changed keys → the client that changed it last (nil: none)
	clients map[*session]struct{}
}

// tracked reports whether invalidation has anything to do: clients to
// tell of a flush, keys or prefixes to look at.
func (t *tracking) tracked() bool { return t.clients > 0 || len(t.keys) > 0 || len(t.prefixes) > 0 }

// current is the client whose command is running, nil between commands.
func (a *Actor) current() *session {
	if a.depth > 0 {
		return a.frames[0].ctx.s
	}
	return nil
}

// trackRead notes that the running command of c's client read key (called
// by countLookup for read-only commands of tracking clients).
func (c *Ctx) trackRead(key []byte) {
	t := c.s.track
	if c.a.inScript() {
		// A command of a script: its reads are the script's (scriptKeys).
		return
	}
	if t.bcast || (t.optin && !t.caching) || (t.optout && t.caching) || c.cmd.Is(FlagPubSub) || c.woken {
		// A woken waiter's retry (XREAD BLOCK served) tracks nothing:
		// Redis remembers the keys of the command once, when it runs.
		return
	}
	c.a.track.reads = append(c.a.track.reads, key)
}

// scriptKeys is a script's part in tracking, once it has run (c is its
// EVAL, EVALSHA, FCALL or _RO form): if any command it called is read-only,
// keys, the keys it declared (numkeys), are what its client reads, as
// Redis's call() remembers the caller's keys then; the keys its commands
// looked up are not (trackRead).
func (c *Ctx) scriptKeys(keys [][]byte) {
	if !c.a.track.scriptRead {
		return
	}
	c.a.track.scriptRead = false
	if c.s.track == nil {
		return
	}
	for _, k := range keys {
		c.trackRead(k)
	}
}

// trackFailedRead notes the keys of a read-only command that failed before
// it looked any up (a syntax error in its arguments): Redis remembers the
// keys findKeys finds whatever the reply (getKeysFromCommandWithSpecs).
func (c *Ctx) trackFailedRead() {
	if c.cmd.meta == nil {
		return
	}
	keys, ok := findKeys(c.cmd, c.args)
	if !ok {
		return
	}
	for _, k := range keys {
		c.trackRead(c.args[k.pos])
	}
}

// commandDone ends a command's execution: its changes are acted on
// (touched.go), then the keys it read are remembered for s.
func (a *Actor) commandDone(s *session) {
	a.keysTouched()
	if len(a.track.reads) > 0 {
		a.rememberReads(s)
	}
}

func (a *Actor) rememberReads(s *session) {
	t := &a.track
	if t.keys == nil {
		t.keys = map[string]map[uint64]struct{}{}
	}
	for i, key := range t.reads {
		ids := t.keys[string(key)]
		if ids == nil {
			ids = map[uint64]struct{}{}
			t.keys[string(key)] = ids
		}
		if _, ok := ids[s.id]; !ok {
			ids[s.id] = struct{}{}
			t.items++
			s.trackItems++
		}
		t.reads[i] = nil
	}
	t.reads = t.reads[:0]
}

// invalidateTouched is the keys-touched step's part for tracking.
func (a *Actor) invalidateTouched(ts []storage.Touch) {
	cur := a.current()
	flushed := false
	streamMeta := a.runningStreamCommand()
	for i := range ts {
		t := &ts[i]
		if !modifiesKey(t, streamMeta) {
			continue
		}
		switch t.Kind {
		case storage.Flushed:
			if !flushed {
				a.invalidateAll(cur)
				flushed = true
			}
		case storage.Swapped, storage.Created:
			// SWAPDB invalidates nothing in Redis 7.0; Created precedes
			// the change that created the key.
		default:
			writer := cur
			if t.Kind == storage.Expired {
				writer = nil
			}
			a.invalidateKey(t.Key, cur, writer, true, nil)
		}
	}
}

// runningStreamCommand reports whether the command whose changes are
// being read is a stream command (modifiesKey).
func (a *Actor) runningStreamCommand() bool {
	if a.depth > 0 {
		if cmd := a.frames[a.depth-1].ctx.cmd; cmd != nil && cmd.meta != nil && cmd.meta.Group == "stream" {
			return true
		}
	}
	return false
}

// modifiesKey reports whether change t modifies its key as Redis counts
// it (signalModifiedKey: what WATCH and client tracking hear of). Redis
// 7.0 does not count a change to a stream's consumer groups, consumers or
// pending entries, nor XSETID: storage records those as Modified,
// ConsumerCreated or GroupDestroyed, made by a stream command (streamMeta).
// A Functions or Search change names a library or an index, not a key.
func modifiesKey(t *storage.Touch, streamMeta bool) bool {
	switch t.Kind {
	case storage.Functions, storage.Search:
		return false
	case storage.Modified, storage.ConsumerCreated, storage.GroupDestroyed:
		return !streamMeta
	}
	return true
}

// invalidateKey sends key's invalidation to the clients that may cache it
// and forgets it (Redis's trackingInvalidateKey). cur is the client whose
// command runs (NOLOOP skips it); writer the one that changed the key,
// for BCAST's NOLOOP; bcast collects the key for BCAST prefixes.
//
// own is cur's reply buffer when cur's command has not started (an
// eviction before it): its invalidation goes there at once, ahead of the
// reply, as Redis sends it to a client not yet executing.
func (a *Actor) invalidateKey(key []byte, cur, writer *session, bcast bool, own *proto.Writer) {
	t := &a.track
	if bcast && len(t.prefixes) > 0 {
		for p, bs := range t.prefixes {
			if len(p) <= len(key) && string(key[:len(p)]) == p {
				bs.keys[string(key)] = writer
			}
		}
	}
	ids, ok := t.keys[string(key)]
	if !ok {
		return
	}
	delete(t.keys, string(key))
	t.items -= len(ids)
	// Redis walks the ids in its radix tree's order: their bytes, little
	// endian.
	order := make([]uint64, 0, len(ids))
	for id := range ids {
		order = append(order, bits.ReverseBytes64(id))
	}
	if len(order) > 1 {
		sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	}
	for _, rid := range order {
		target := a.sessions[bits.ReverseBytes64(rid)]
		if target == nil {
			t.stale--
			continue
		}
		target.trackItems--
		tr := target.track
		if tr == nil || tr.bcast || (tr.noloop && target == cur) {
			continue
		}
		if target == cur && own == nil {
			a.addPending(cur, pendingInv{key: string(key)})
			continue
		}
		a.sendInvalidation(target, key, nil, own)
	}
}

// invalidateAll is a flush's invalidation: every tracking client gets the
// null one, and the table empties (Redis's trackingInvalidateKeysOnFlush).
func (a *Actor) invalidateAll(cur *session) {
	t := &a.track
	if t.clients > 0 {
		for _, s := range a.sortedSessions() {
			if s.track == nil {
				continue
			}
			if s == cur {
				a.addPending(cur, pendingInv{flush: true})
			} else {
				a.sendInvalidation(s, nil, nullFor(s), nil)
			}
		}
	}
	if t.keys != nil {
		t.keys = map[string]map[uint64]struct{}{}
		t.items, t.stale = 0, 0
		for _, s := range a.sessions {
			s.trackItems = 0
		}
	}
}

// nullFor is the null invalidation in the tracking client's own protocol
// (Redis sends that, whatever protocol a redirect target speaks).
func nullFor(s *session) []byte {
	if s.resp == 3 {
		return []byte("_\r\n")
	}
	return []byte("$-1\r\n")
}

func (a *Actor) addPending(s *session, p pendingInv) {
	if a.track.pendingTo != s {
		a.flushPending(nil, nil)
		a.track.pendingTo = s
	}
	a.track.pending = append(a.track.pending, p)
}

// flushPending sends the invalidations held for the client whose command
// ended; own, when given, is the reply buffer of client owner, where they
// go after the reply if they are owner's (a woken waiter's may be left for
// another client's batch to find: those are pushed).
func (a *Actor) flushPending(owner *session, own *proto.Writer) {
	t := &a.track
	s := t.pendingTo
	if s == nil {
		return
	}
	if s != owner {
		own = nil
	}
	t.pendingTo = nil
	for i, p := range t.pending {
		if s.track != nil && !s.killed && a.sessions[s.id] == s {
			if p.flush {
				a.sendInvalidation(s, nil, nullFor(s), own)
			} else {
				a.sendInvalidation(s, []byte(p.key), nil, own)
			}
		}
		t.pending[i] = pendingInv{}
	}
	t.pending = t.pending[:0]
}

// sendInvalidation sends c's invalidation of key, or the ready-made RESP
// value raw (a BCAST array, a flush's null), where c's tracking says
// (Redis's sendTrackingMessage). own is c's reply buffer while its
// command's invalidations are flushed.
func (a *Actor) sendInvalidation(c *session, key, raw []byte, own *proto.Writer) {
	to, redirected := c, false
	if id := c.track.redirect; id != 0 {
		r := a.sessions[id]
		if r == nil {
			c.track.broken = true
			if c.resp == 3 {
				w := proto.Writer{Proto: 3}
				w.Push(2)
				w.BulkString("tracking-redir-broken")
				w.Int(int64(id))
				a.deliverTracking(c, c, w.Buf, own)
			}
			return
		}
		to, redirected = r, true
	}
	w := proto.Writer{Proto: to.resp}
	switch {
	case to.resp == 3:
		w.Push(2)
		w.BulkString("invalidate")
	case redirected && to.subscribed:
		w.Array(3)
		w.BulkString("message")
		w.BulkString(invalidationChannel)
	default:
		return // RESP2 has no pushes on the client's own connection
	}
	if raw != nil {
		w.Raw(raw)
	} else {
		w.Array(1)
		w.Bulk(key)
	}
	a.deliverTracking(c, to, w.Buf, own)
}

func (a *Actor) deliverTracking(c, to *session, frame []byte, own *proto.Writer) {
	if own != nil && to == c {
		own.Buf = append(own.Buf, frame...)
		return
	}
	a.push(to, frame, false)
}

// broadcastTracking sends each BCAST prefix's keys changed this round to
// its clients (Redis's trackingBroadcastInvalidationMessages), at the end
// of the round.
func (a *Actor) broadcastTracking() {
	prefixes := make([]string, 0, len(a.track.prefixes))
	for p, bs := range a.track.prefixes {
		if len(bs.keys) > 0 {
			prefixes = append(prefixes, p)
		}
	}
	sort.Strings(prefixes)
	for _, p := range prefixes {
		bs := a.track.prefixes[p]
		keys := make([]string, 0, len(bs.keys))
		for k := range bs.keys {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		all := bcastArray(keys, bs.keys, nil)
		clients := make([]*session, 0, len(bs.clients))
		for s := range bs.clients {
			clients = append(clients, s)
		}
		sort.Slice(clients, func(i, j int) bool { return clients[i].id < clients[j].id })
		for _, s := range clients {
			if s.track.noloop {
				if own := bcastArray(keys, bs.keys, s); own != nil {
					a.sendInvalidation(s, nil, own, nil)
				}
				continue
			}
			a.sendInvalidation(s, nil, all, nil)
		}
		clear(bs.keys)
	}
}

// bcastArray is the RESP array of keys, without those last changed by
// skip; nil when that leaves none.
func bcastArray(keys []string, by map[string]*session, skip *session) []byte {
	n := 0
	for _, k := range keys {
		if skip == nil || by[k] != skip {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	w := proto.Writer{}
	w.Array(n)
	for _, k := range keys {
		if skip == nil || by[k] != skip {
			w.BulkString(k)
		}
	}
	return w.Buf
}

// limitTracking evicts keys over tracking-table-max-keys, each with its
// invalidation (Redis's trackingLimitUsedSlots, run before each command):
// at most 100 keys per call, more each call that still falls short.
// cur is the client about to run a command, w its reply buffer.
func (a *Actor) limitTracking(cur *session, w *proto.Writer) {
	t := &a.track
	if t.maxKeys == 0 || len(t.keys) <= t.maxKeys {
		t.effort = 0
		return
	}
	effort := 100 * (t.effort + 1)
	for k := range t.keys {
		if effort == 0 {
			break
		}
		effort--
		a.invalidateKey([]byte(k), cur, nil, false, w)
		if len(t.keys) <= t.maxKeys {
			t.effort = 0
			return
		}
	}
	t.effort++
}

// enableTracking turns tracking on for s, or changes its options
// (Redis's enableTracking): the flags are replaced, BCAST prefixes added.
func (a *Actor) enableTracking(s *session, redirect uint64, bcast, optin, optout, noloop bool, prefixes [][]byte) {
	if s.track == nil {
		s.track = &trackState{}
		a.track.clients++
	}
	t := s.track
	t.redirect = redirect
	t.broken = false
	t.bcast, t.optin, t.optout, t.noloop = bcast, optin, optout, noloop
	if !bcast {
		return
	}
	if len(prefixes) == 0 {
		a.addPrefix(s, "")
	}
	for _, p := range prefixes {
		a.addPrefix(s, string(p))
	}
}

func (a *Actor) addPrefix(s *session, p string) {
	if a.track.prefixes == nil {
		a.track.prefixes = map[string]*bcastState{}
	}
	bs := a.track.prefixes[p]
	if bs == nil {
		bs = &bcastState{keys: map[string]*session{}, clients: map[*session]struct{}{}}
		a.track.prefixes[p] = bs
	}
	if _, ok := bs.clients[s]; ok {
		return
	}
	bs.clients[s] = struct{}{}
	t := s.track
	i := sort.SearchStrings(t.prefixes, p)
	t.prefixes = append(t.prefixes, "")
	copy(t.prefixes[i+1:], t.prefixes[i:])
	t.prefixes[i] = p
	s.mem.Add(MemPubsub, subCost(p))
}

// disableTracking turns tracking off for s (CLIENT TRACKING OFF, RESET,
// disconnect: resetState). Its ids stay in the table, as in Redis.
func (a *Actor) disableTracking(s *session) {
	t := s.track
	if t == nil {
		return
	}
	for _, p := range t.prefixes {
		bs := a.track.prefixes[p]
		delete(bs.clients, s)
		if len(bs.clients) == 0 {
			delete(a.track.prefixes, p)
		}
		s.mem.Add(MemPubsub, -subCost(p))
	}
	s.track = nil
	a.track.clients--
}

// forgetSession counts the ids of an ended session as stale, and purges
// them once they are half of the table's items.
func (a *Actor) forgetSession(s *session) {
	t := &a.track
	if s.trackItems == 0 {
		return
	}
	t.stale += s.trackItems
	s.trackItems = 0
	if t.stale*2 < t.items {
		return
	}
	for k, ids := range t.keys {
		for id := range ids {
			if a.sessions[id] == nil || a.sessions[id] == s {
				delete(ids, id)
				t.items--
			}
		}
		if len(ids) == 0 {
			delete(t.keys, k)
		}
	}
	t.stale = 0
}

// CLIENT TRACKING <ON|OFF> [REDIRECT client-id] [PREFIX prefix [PREFIX
// prefix ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]
func cmdClientTracking(c *Ctx) error {
	var redirect int64
	var bcast, optin, optout, noloop bool
	var prefixes [][]byte
	for j := 3; j < len(c.args); j++ {
		more := j < len(c.args)-1
		switch {
		case c.argEq(j, "redirect") && more:
			j++
			if redirect != 0 {
				return ErrRedirectTwice
			}
			v, ok := parseIntOK(c.args[j])
			if !ok {
				return ErrNotInteger
			}
			if v <= 0 || c.a.sessions[uint64(v)] == nil {
				return ErrRedirectMissing
			}
			redirect = v
		case c.argEq(j, "bcast"):
			bcast = true
		case c.argEq(j, "optin"):
			optin = true
		case c.argEq(j, "optout"):
			optout = true
		case c.argEq(j, "noloop"):
			noloop = true
		case c.argEq(j, "prefix") && more:
			j++
			prefixes = append(prefixes, c.args[j])
		default:
			return ErrSyntax
		}
	}
	s := c.s
	switch {
	case c.argEq(2, "on"):
		t := s.track
		switch {
		case !bcast && len(prefixes) > 0:
			return ErrPrefixNeedsBcast
		case t != nil && t.bcast != bcast:
			return ErrBcastSwitch
		case bcast && (optin || optout):
			return ErrOptBcast
		case optin && optout:
			return ErrOptBoth
		case t != nil && ((optin && t.optout) || (optout && t.optin)):
			return ErrOptSwitch
		}
		if bcast {
			if err, enable := c.prefixOverlap(prefixes); err != nil {
				if !enable {
					return err
				}
				// Redis 7.0 replies the error of an overlap between two of
				// the new prefixes other than the first, then enables
				// tracking and replies OK as well.
				c.w.Error(err.Error())
			}
		}
		c.a.enableTracking(s, uint64(redirect), bcast, optin, optout, noloop, prefixes)
	case c.argEq(2, "off"):
		c.a.disableTracking(s)
	default:
		return ErrSyntax
	}
	c.w.OK()
	return nil
}

// prefixOverlap checks that no two prefixes of the client, old or new,
// would both match a key (Redis's checkPrefixCollisionsOrReply, whose
// quirk enable reports: for an overlap among the new prefixes found at
// the second one or later, Redis goes on and enables tracking).
func (c *Ctx) prefixOverlap(prefixes [][]byte) (err error, enable bool) {
	overlaps := func(a, b string) bool {
		n := min(len(a), len(b))
		return a[:n] == b[:n]
	}
	for i, p := range prefixes {
		if t := c.s.track; t != nil {
			for _, old := range t.prefixes {
				if overlaps(old, string(p)) {
					return errPrefixOverlapExisting(p, old), false
				}
			}
		}
		for _, q := range prefixes[i+1:] {
			if overlaps(string(p), string(q)) {
				return errPrefixOverlapNew(p, q), i > 0
			}
		}
	}
	return nil, false
}

// CLIENT CACHING YES|NO
func cmdClientCaching(c *Ctx) error {
	t := c.s.track
	if t == nil {
		return ErrCachingNotTracking
	}
	switch {
	case c.argEq(2, "yes"):
		if !t.optin {
			return ErrCachingYes
		}
	case c.argEq(2, "no"):
		if !t.optout {
			return ErrCachingNo
		}
	default:
		return ErrSyntax
	}
	t.caching = true
	c.w.OK()
	return nil
}

// endCaching drops a CLIENT CACHING given for the command that just ran,
// as Redis does after every command but the CLIENT ones and those queued
// in MULTI.
func endCaching(s *session, args [][]byte) {
	if s.tx == nil && !eqFold(args[0], "client") {
		s.track.caching = false
	}
}

// CLIENT GETREDIR
func cmdClientGetRedir(c *Ctx) error {
	if t := c.s.track; t != nil {
		c.w.Int(int64(t.redirect))
	} else {
		c.w.Int(-1)
	}
	return nil
}

// CLIENT TRACKINGINFO
func cmdClientTrackingInfo(c *Ctx) error {
	t := c.s.track
	w := c.w
	w.Map(3)
	w.BulkString("flags")
	flags := []string{"off"}
	if t != nil {
		flags[0] = "on"
		if t.bcast {
			flags = append(flags, "bcast")
		}
		if t.optin {
			flags = append(flags, "optin")
			if t.caching {
				flags = append(flags, "caching-yes")
			}
		}
		if t.optout {
			flags = append(flags, "optout")
			if t.caching {
				flags = append(flags, "caching-no")
			}
		}
		if t.noloop {
			flags = append(flags, "noloop")
		}
		if t.broken {
			flags = append(flags, "broken_redirect")
		}
	}
	w.Set(len(flags))
	for _, f := range flags {
		w.BulkString(f)
	}
	w.BulkString("redirect")
	if t != nil {
		w.Int(int64(t.redirect))
	} else {
		w.Int(-1)
	}
	w.BulkString("prefixes")
	if t == nil {
		w.Array(0)
		return nil
	}
	w.Array(len(t.prefixes))
	for _, p := range t.prefixes {
		w.BulkString(p)
	}
	return nil
}

// trackingFlags appends CLIENT LIST's tracking flags (t, R, B) of s.
func trackingFlags(b []byte, s *session) []byte {
	if t := s.track; t != nil {
		b = append(b, 't')
		if t.broken {
			b = append(b, 'R')
		}
		if t.bcast {
			b = append(b, 'B')
		}
	}
	return b
}

// redirField is CLIENT LIST's redir.
func redirField(s *session) string {
	if s.track == nil {
		return "-1"
	}
	return strconv.FormatUint(s.track.redirect, 10)
}
