package actor

import (
	"sort"
	"time"

	"github.com/cellar-db/cellar/proto"
)

// Pub/Sub: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their UNSUBSCRIBEs,
// PUBLISH, SPUBLISH and PUBSUB, with Redis 7.0's replies.
//
// The tables live in the actor (Actor.ps) and in each session
// (session.subs); both change only on the actor goroutine, and a channel
// or pattern leaves the server's table with its last subscriber, so
// subscribing and unsubscribing never leave entries behind.
//
// How a message reaches a subscriber on another loop: PUBLISH runs in the
// actor like any command. For each subscriber it appends a push — a
// Completion with Push set — to the round's output (Actor.out), which goes
// to the subscriber's loop with the round's other completions (after the
// round's fsync with durability always, so a keyspace notification never
// announces a write a crash could take back). A push answers no request:
// its Seq is the sequence number of the last batch of that client the
// actor has run, and the loop writes it once every reply up to that one is
// written (loop/conn.go, conn.deliver), so it lands between the client's
// replies exactly where the actor's total order put it. A push to the
// client whose command is running (a RESP3 client publishing to itself, a
// notification of its own write) goes into that command's reply buffer,
// before the command's reply, as Redis writes it.
//
// The message frame is built once per publish and protocol and shared by
// every subscriber's completion (nobody writes to it afterwards); pushes
// to one client in one round are gathered into one completion, so a
// subscriber gets one write per round, not one per message.
//
// Every push is charged to its client's memory (MemReplies) as replies
// are. A subscribed client belongs to Redis's pubsub output class: past
// Config.PubsubHardLimit, or above PubsubSoftLimit for longer than
// PubsubSoftTime, it is disconnected with a log line. PUBLISH never waits
// for a subscriber and never holds more than those limits for one.

// subKind is one of the three kinds of subscription.
type subKind uint8

const (
	subChannel subKind = iota // SUBSCRIBE
	subPattern                // PSUBSCRIBE
	subShard                  // SSUBSCRIBE
	subKinds
)

// Reply words of each kind.
var (
	subWords   = [subKinds]string{"subscribe", "psubscribe", "ssubscribe"}
	unsubWords = [subKinds]string{"unsubscribe", "punsubscribe", "sunsubscribe"}
)

// pubsub is the server's side of the tables: who is subscribed to each
// channel, pattern and shard channel.
type pubsub struct {
	tables [subKinds]map[string]*subscribers
}

// subscribers is a set of sessions in subscription order (removal swaps
// the last one in).
type subscribers struct {
	list []*session
	at   map[*session]int
	name []byte // the channel or pattern (a pattern is matched as bytes)
}

// subscriptions is a client's side: what it is subscribed to.
type subscriptions struct {
	names [subKinds]map[string]struct{}
}

// count is what the confirmations of kind k report: channels and patterns
// together for SUBSCRIBE and PSUBSCRIBE, shard channels alone for
// SSUBSCRIBE.
func (x *subscriptions) count(k subKind) int {
	if k == subShard {
		return len(x.names[subShard])
	}
	return len(x.names[subChannel]) + len(x.names[subPattern])
}

func (x *subscriptions) total() int {
	return len(x.names[subChannel]) + len(x.names[subPattern]) + len(x.names[subShard])
}

func (p *pubsub) table(k subKind) map[string]*subscribers {
	if p.tables[k] == nil {
		p.tables[k] = map[string]*subscribers{}
	}
	return p.tables[k]
}

// subscribe adds s to name's subscribers; false if it already was one.
func (a *Actor) subscribe(s *session, k subKind, name []byte) bool {
	if s.subs == nil {
		s.subs = &subscriptions{}
	}
	mine := s.subs.names[k]
	if mine == nil {
		mine = map[string]struct{}{}
		s.subs.names[k] = mine
	}
	if _, ok := mine[string(name)]; ok {
		return false
	}
	key := string(name)
	mine[key] = struct{}{}
	s.mem.Add(MemPubsub, subCost(key))
	t := a.ps.table(k)
	subs := t[key]
	if subs == nil {
		subs = &subscribers{at: map[*session]int{}, name: []byte(key)}
		t[key] = subs
	}
	subs.at[s] = len(subs.list)
	subs.list = append(subs.list, s)
	return true
}

// subCost is what one subscription holds, charged to its client's memory:
// the name in the client's map and, for the first subscriber, in the
// server's, and the entries of both (an estimate of Go's map overhead).
func subCost(name string) int64 { return int64(2*len(name) + 160) }

// unsubscribe removes s from name's subscribers, and name from the
// server's table with its last subscriber; false if s was not one.
func (a *Actor) unsubscribe(s *session, k subKind, name string) bool {
	if s.subs == nil {
		return false
	}
	if _, ok := s.subs.names[k][name]; !ok {
		return false
	}
	delete(s.subs.names[k], name)
	s.mem.Add(MemPubsub, -subCost(name))
	t := a.ps.tables[k]
	subs := t[name]
	i := subs.at[s]
	last := len(subs.list) - 1
	subs.list[i] = subs.list[last]
	subs.at[subs.list[i]] = i
	subs.list[last] = nil
	subs.list = subs.list[:last]
	delete(subs.at, s)
	if len(subs.list) == 0 {
		delete(t, name)
	}
	return true
}

// unsubscribeAll ends every subscription of s (RESET, disconnect): the
// one cleanup path for its entries in the server's tables.
func (a *Actor) unsubscribeAll(s *session) {
	if s.subs == nil {
		return
	}
	for k := subKind(0); k < subKinds; k++ {
		for name := range s.subs.names[k] {
			a.unsubscribe(s, k, name)
		}
	}
	s.subs = nil
	s.setSubscribed(false)
}

var pubsubCommands = registerCommands([]*Command{
	{Name: "subscribe", Summary: "Listens for messages published to channels.", Handler: subscribeCmd(subChannel), channels: everyChannel},
	{Name: "psubscribe", Summary: "Listens for messages published to channels matching patterns.", Handler: subscribeCmd(subPattern), channels: everyPattern},
	{Name: "ssubscribe", Summary: "Listens for messages published to shard channels.", Handler: subscribeCmd(subShard), channels: everyChannel},
	{Name: "unsubscribe", Summary: "Stops listening to channels, or to all of them.", Handler: unsubscribeCmd(subChannel)},
	{Name: "punsubscribe", Summary: "Stops listening to patterns, or to all of them.", Handler: unsubscribeCmd(subPattern)},
	{Name: "sunsubscribe", Summary: "Stops listening to shard channels, or to all of them.", Handler: unsubscribeCmd(subShard)},
	{Name: "publish", Summary: "Sends a message to a channel's subscribers; replies how many got it.", Handler: cmdPublish, channels: firstChannel},
	{Name: "spublish", Summary: "Sends a message to a shard channel's subscribers; replies how many got it.", Handler: cmdSPublish, channels: firstChannel},
	{Name: "pubsub", Summary: "Inspects the Pub/Sub tables.", Subs: []*Command{
		{Name: "pubsub|channels", Summary: "Lists the channels with subscribers, optionally matching a pattern.", Handler: pubsubChannels(subChannel)},
		{Name: "pubsub|shardchannels", Summary: "Lists the shard channels with subscribers, optionally matching a pattern.", Handler: pubsubChannels(subShard)},
		{Name: "pubsub|numsub", Summary: "Counts the subscribers of channels (patterns aside).", Handler: pubsubNumSub(subChannel)},
		{Name: "pubsub|shardnumsub", Summary: "Counts the subscribers of shard channels.", Handler: pubsubNumSub(subShard)},
		{Name: "pubsub|numpat", Summary: "Counts the patterns with subscribers.", Handler: cmdPubsubNumPat},
		{Name: "pubsub|help", Summary: "Lists the PUBSUB subcommands.", Handler: cmdPubsubHelp},
	}},
})

// SUBSCRIBE channel [channel ...]
// PSUBSCRIBE pattern [pattern ...]
// SSUBSCRIBE shardchannel [shardchannel ...]
func subscribeCmd(k subKind) Handler {
	return func(c *Ctx) error {
		for _, name := range c.args[1:] {
			c.a.subscribe(c.s, k, name)
			c.w.Push(3)
			c.w.BulkString(subWords[k])
			c.w.Bulk(name)
			c.w.Int(int64(c.s.subs.count(k)))
			c.pushed()
		}
		c.s.setSubscribed(true)
		return nil
	}
}

// pushed marks what the command wrote so far as pushes rather than its
// reply: the (un)subscribe confirmations are, in Redis (it sends them with
// CLIENT_PUSHING, in RESP2 too), so CLIENT REPLY OFF or SKIP does not
// drop them (replySilent keeps a reply buffer up to the top frame's
// pushAt). Inside EXEC they stay part of EXEC's reply.
func (c *Ctx) pushed() {
	if c.a.depth == 1 && c.f == c.a.frames[0] {
		c.f.pushAt = len(c.w.Buf)
	}
}

// UNSUBSCRIBE [channel [channel ...]]
// PUNSUBSCRIBE [pattern [pattern ...]]
// SUNSUBSCRIBE [shardchannel [shardchannel ...]]
func unsubscribeCmd(k subKind) Handler {
	return func(c *Ctx) error {
		s := c.s
		confirm := func(name []byte) {
			c.w.Push(3)
			c.w.BulkString(unsubWords[k])
			if name == nil {
				c.w.Null()
			} else {
				c.w.Bulk(name)
			}
			n := 0
			if s.subs != nil {
				n = s.subs.count(k)
			}
			c.w.Int(int64(n))
			c.pushed()
		}
		if len(c.args) == 1 {
			var names []string
			if s.subs != nil {
				for name := range s.subs.names[k] {
					names = append(names, name)
				}
			}
			sort.Strings(names) // Redis's order is its hash table's; Cellar's is stable
			for _, name := range names {
				c.a.unsubscribe(s, k, name)
				confirm([]byte(name))
			}
			if len(names) == 0 {
				confirm(nil)
			}
		} else {
			for _, name := range c.args[1:] {
				c.a.unsubscribe(s, k, string(name))
				confirm(name)
			}
		}
		if s.subs != nil && s.subs.total() == 0 {
			s.subs = nil
			s.setSubscribed(false)
		}
		return nil
	}
}

// PUBLISH channel message
func cmdPublish(c *Ctx) error {
	c.w.Int(int64(c.a.publish(subChannel, c.args[1], c.args[2], false)))
	c.toReplicas()
	return nil
}

// SPUBLISH shardchannel message
func cmdSPublish(c *Ctx) error {
	c.w.Int(int64(c.a.publish(subShard, c.args[1], c.args[2], false)))
	c.toReplicas()
	return nil
}

// toReplicas records the running command, which changed nothing, for the
// replicas' stream, as Redis's forceCommandPropagation(c, PROPAGATE_REPL)
// does for PUBLISH and SPUBLISH: their subscribers get the message too. The
// stream is the redo log's records (master.go), so it is a record like a
// write's, in its place among them (inside MULTI ... EXEC when EXEC or a
// script ran it) and counted in the offset; only once a replica has
// asked, and only on a master (a replica relays its master's stream).
// Replayed at start-up, it publishes to nobody.
func (c *Ctx) toReplicas() {
	a := c.a
	if e := &a.eff; e.on && !e.replaying && a.master.active && !a.repl.on {
		e.emit(false, c.db, c.now, c.args)
	}
}

// frames builds a message frame once per protocol, on first use.
type frames struct {
	f     [2][]byte
	build func(w *proto.Writer)
}

func (fr *frames) get(resp int) []byte {
	i := 0
	if resp == 3 {
		i = 1
	}
	if fr.f[i] == nil {
		w := proto.Writer{Proto: resp}
		fr.build(&w)
		fr.f[i] = w.Buf
	}
	return fr.f[i]
}

// publish delivers msg on channel (of kind subChannel or subShard) to its
// subscribers, and for subChannel to the subscribers of every pattern the
// channel matches, and returns how many messages it sent. event marks a
// keyspace notification.
func (a *Actor) publish(k subKind, channel, msg []byte, event bool) int {
	n := 0
	word := "message"
	if k == subShard {
		word = "smessage"
	}
	if subs := a.ps.tables[k][string(channel)]; subs != nil {
		fr := frames{build: func(w *proto.Writer) {
			w.Push(3)
			w.BulkString(word)
			w.Bulk(channel)
			w.Bulk(msg)
		}}
		for _, s := range subs.list {
			a.push(s, fr.get(s.resp), event)
			n++
		}
	}
	if k == subShard {
		return n
	}
	for pat, subs := range a.ps.tables[subPattern] {
		if !globMatch(subs.name, channel) {
			continue
		}
		fr := frames{build: func(w *proto.Writer) {
			w.Push(4)
			w.BulkString("pmessage")
			w.BulkString(pat)
			w.Bulk(channel)
			w.Bulk(msg)
		}}
		for _, s := range subs.list {
			a.push(s, fr.get(s.resp), event)
			n++
		}
	}
	return n
}

// push gives s a frame that answers none of its requests (a message, a
// notification). See the top of this file for where it goes.
func (a *Actor) push(s *session, frame []byte, event bool) {
	if out, ok := a.pushFrame(s, frame, event); ok {
		a.pushLimits(s, out)
	}
}

// pushFrame is push without the output class's limits: it reports what
// the client's replies then hold, and false when nothing is left to check
// (the frame went into a running command's reply, or the client is gone).
func (a *Actor) pushFrame(s *session, frame []byte, event bool) (int64, bool) {
	if s.killed {
		return 0, false
	}
	if a.depth > 0 {
		f := a.frames[a.depth-1]
		if s.reply != replyOn && f.ctx.s == s && a.frames[0].ctx.s == s {
			// Replies are off: the push goes ahead of the top command's
			// reply, which runBatch drops while keeping what precedes it.
			f = a.frames[0]
		}
		if f.ctx.s == s {
			// The client's own command is running: the push goes in its
			// reply buffer, ahead of the command's reply (and after any
			// push already put there).
			w := f.ctx.w
			at := min(f.pushAt, len(w.Buf))
			w.Buf = append(w.Buf, frame...)
			copy(w.Buf[at+len(frame):], w.Buf[at:len(w.Buf)-len(frame)])
			copy(w.Buf[at:], frame)
			f.pushAt = at + len(frame)
			return 0, false
		}
	}
	out, ok := s.mem.chargeReply(int64(len(frame)))
	if !ok {
		return 0, false // evicted; its loop is closing it
	}
	seq := s.seq
	if b := s.blocked; b != nil && b.oi != pendingOut {
		// Blocked: its batch holds the blocking command alone (the loop
		// sends it so), and everything before it has its replies.
		seq = b.seq - 1
	}
	if s.pushRound == a.stats.rounds && int(s.pushOut) < len(a.out) {
		if r := &a.out[s.pushOut]; r.c.ConnID == s.id && r.c.Push && r.c.Seq == seq && r.event == event {
			if !r.own {
				r.c.Reply = append(make([]byte, 0, 2*len(r.c.Reply)+len(frame)), r.c.Reply...)
				r.own = true
			}
			r.c.Reply = append(r.c.Reply, frame...)
			r.c.Charged += int64(len(frame))
			return out, true
		}
	}
	s.pushRound, s.pushOut = a.stats.rounds, int32(len(a.out))
	a.out = append(a.out, routed{sink: s.sink, event: event,
		c: Completion{ConnID: s.id, Seq: seq, Reply: frame, Push: true, Charged: int64(len(frame))}})
	return out, true
}

// pushLimits applies the pubsub output class's limits to a subscriber whose
// replies now hold out bytes. A client that is not subscribed (a RESP3
// client given tracking invalidations) is in the normal class: past
// Config.MaxReply it is closed as runBatch closes it (overflow); its soft
// limit is the loop's.
func (a *Actor) pushLimits(s *session, out int64) {
	if s.replica != nil {
		a.pushReplicaLimits(s, out)
		return
	}
	if !s.subscribed {
		if a.cfg.MaxReply > 0 && out > a.cfg.MaxReply {
			a.log.Warn().Uint64("client", s.id).Str("addr", s.addr).Int64("bytes", out).
				Msg("closing client whose replies reached the output buffer hard limit")
			a.kill(s)
			a.cfg.Clients.Release(s.mem)
		}
		return
	}
	hard, soft := a.cfg.PubsubHardLimit, a.cfg.PubsubSoftLimit
	switch {
	case hard > 0 && out > hard:
		a.log.Warn().Uint64("client", s.id).Str("addr", s.addr).Int64("bytes", out).
			Msg("closing pubsub client that reached the output buffer hard limit")
	case soft > 0 && out > soft:
		now := a.roundStart
		if s.softSince.IsZero() {
			s.softSince = now
			return
		}
		if a.cfg.PubsubSoftTime <= 0 || now.Sub(s.softSince) <= a.cfg.PubsubSoftTime {
			return
		}
		a.log.Warn().Uint64("client", s.id).Str("addr", s.addr).Int64("bytes", out).
			Dur("for", now.Sub(s.softSince)).
			Msg("closing pubsub client that stayed above the output buffer soft limit")
	default:
		s.softSince = time.Time{}
		return
	}
	a.stats.pubsubDisconnects++
	a.kill(s)
	a.cfg.Clients.Release(s.mem)
}

// PUBSUB CHANNELS [pattern]
// PUBSUB SHARDCHANNELS [pattern]
func pubsubChannels(k subKind) Handler {
	return func(c *Ctx) error {
		if len(c.args) > 3 {
			return errSubcommandSyntax("pubsub", c.args[1])
		}
		var names []string
		for name := range c.a.ps.tables[k] {
			if len(c.args) == 2 || globMatch(c.args[2], []byte(name)) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		c.w.Array(len(names))
		for _, name := range names {
			c.w.BulkString(name)
		}
		return nil
	}
}

// PUBSUB NUMSUB [channel ...]
// PUBSUB SHARDNUMSUB [shardchannel ...]
func pubsubNumSub(k subKind) Handler {
	return func(c *Ctx) error {
		c.w.Array(2 * (len(c.args) - 2))
		for _, name := range c.args[2:] {
			c.w.Bulk(name)
			n := 0
			if subs := c.a.ps.tables[k][string(name)]; subs != nil {
				n = len(subs.list)
			}
			c.w.Int(int64(n))
		}
		return nil
	}
}

// PUBSUB NUMPAT
func cmdPubsubNumPat(c *Ctx) error {
	c.w.Int(int64(len(c.a.ps.tables[subPattern])))
	return nil
}

// PUBSUB HELP
func cmdPubsubHelp(c *Ctx) error {
	return helpReply(c, "pubsub", []string{
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]",
		"    Return the currently active shard level channels matching a <pattern> (default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]",
		"    Return the number of subscribers for the specified shard level channel(s)",
		"HELP",
		"    Prints this help.",
	})
}

// retractEvents drops the round's keyspace notifications when the round
// failed: they announce writes that did not happen. (They are marked, and
// settleHeld removes them with the other dropped entries: indices into
// a.out must hold until then.)
func (a *Actor) retractEvents() {
	for i := range a.out {
		if r := &a.out[i]; r.event && !r.drop {
			if s := a.sessions[r.c.ConnID]; s != nil {
				s.mem.Add(MemReplies, -r.c.Charged)
			}
			r.drop = true
			a.outHeld++
		}
	}
}
