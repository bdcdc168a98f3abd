package actor

import (
	"math"
	"slices"
	"strconv"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

// Streams: the X commands of Redis 7.0 (its src/t_stream.c is the
// reference for every reply and error). Storage keeps entries, groups,
// consumers and PELs in tables of their own (storage/streams.go); this file
// parses, checks and replies. XREAD BLOCK and XREADGROUP BLOCK park on the
// waiter machinery of the lists (blocking.go) in the stream lane: an XADD
// marks the key ready and the retry (xreadTry, xreadGroupTry) runs in the
// same step, so an entry read through a group goes to exactly one
// consumer and into the PEL before anything else runs.

var streamCommands = registerCommands([]*Command{
	{Name: "xadd", Summary: "Appends an entry to a stream, creating it if needed, and trims it.", Handler: cmdXAdd},
	{Name: "xlen", Summary: "Returns the number of entries of a stream.", Handler: cmdXLen},
	{Name: "xrange", Summary: "Returns the entries of a stream between two IDs.", Handler: cmdXRange(false)},
	{Name: "xrevrange", Summary: "Returns the entries of a stream between two IDs, newest first.", Handler: cmdXRange(true)},
	{Name: "xdel", Summary: "Removes entries from a stream.", Handler: cmdXDel},
	{Name: "xtrim", Summary: "Removes the oldest entries of a stream, by length or by ID.", Handler: cmdXTrim},
	{Name: "xread", Summary: "Reads entries after given IDs from streams, optionally waiting for them.", Handler: cmdXRead},
	{Name: "xreadgroup", Summary: "Reads entries through a consumer group, optionally waiting for new ones.", Handler: cmdXReadGroup},
	{Name: "xack", Summary: "Acknowledges entries of a consumer group's pending list.", Handler: cmdXAck},
	{Name: "xpending", Summary: "Inspects a consumer group's pending entries.", Handler: cmdXPending},
	{Name: "xclaim", Summary: "Gives pending entries to another consumer.", Handler: cmdXClaim},
	{Name: "xautoclaim", Summary: "Gives pending entries idle long enough to another consumer, scanning with a cursor.", Handler: cmdXAutoClaim},
	{Name: "xsetid", Summary: "Sets a stream's last ID and counters.", Handler: cmdXSetID},
	{Name: "xgroup", Summary: "Manages consumer groups.", Subs: []*Command{
		{Name: "xgroup|create", Summary: "Creates a consumer group.", Handler: cmdXGroupCreate},
		{Name: "xgroup|createconsumer", Summary: "Creates a consumer in a group.", Handler: cmdXGroupCreateConsumer},
		{Name: "xgroup|delconsumer", Summary: "Removes a consumer from a group.", Handler: cmdXGroupDelConsumer},
		{Name: "xgroup|destroy", Summary: "Removes a consumer group.", Handler: cmdXGroupDestroy},
		{Name: "xgroup|setid", Summary: "Sets a group's last delivered ID.", Handler: cmdXGroupSetID},
		{Name: "xgroup|help", Summary: "Lists the XGROUP subcommands.", Handler: cmdXGroupHelp},
	}},
	{Name: "xinfo", Summary: "Inspects streams, their groups and consumers.", Subs: []*Command{
		{Name: "xinfo|stream", Summary: "Describes a stream.", Handler: cmdXInfoStream},
		{Name: "xinfo|groups", Summary: "Lists a stream's consumer groups.", Handler: cmdXInfoGroups},
		{Name: "xinfo|consumers", Summary: "Lists a consumer group's consumers.", Handler: cmdXInfoConsumers},
		{Name: "xinfo|help", Summary: "Lists the XINFO subcommands.", Handler: cmdXInfoHelp},
	}},
})

// The keyspace notification events of what these commands write
// (notify.go, eventSpec).
var _ = addEvents(map[string]*eventSpec{
	// Streams: the kind of change names the event (creating the stream,
	// Written, has none of its own; "new" comes from the Created record).
	"xadd":                  streamEvents(storage.Added, "xadd", storage.Removed, "xtrim"),
	"xtrim":                 streamEvents(storage.Removed, "xtrim"),
	"xdel":                  streamEvents(storage.Removed, "xdel"),
	"xsetid":                streamEvents(storage.Modified, "xsetid"),
	"xgroup|create":         streamEvents(storage.Modified, "xgroup-create"),
	"xgroup|setid":          streamEvents(storage.Modified, "xgroup-setid"),
	"xgroup|destroy":        streamEvents(storage.GroupDestroyed, "xgroup-destroy"),
	"xgroup|createconsumer": streamEvents(),
	"xgroup|delconsumer":    streamEvents(storage.Modified, "xgroup-delconsumer"),
	"xreadgroup":            streamEvents(),
	"xclaim":                streamEvents(),
	"xautoclaim":            streamEvents(),
})

type streamID = storage.StreamID

// --- IDs ---

// parseULL parses b as Redis's string2ull: string2ll's strict form, or
// failing that C's strtoull over the whole string (leading blanks and a
// sign allowed, overflow refused).
func parseULL(b []byte) (uint64, bool) {
	if v, ok := proto.ParseInt(b); ok {
		return uint64(v), v >= 0
	}
	i := 0
	for i < len(b) && isCSpace(b[i]) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i == len(b) {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		d := b[i]
		if d < '0' || d > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-uint64(d-'0'))/10 {
			return 0, false
		}
		v = v*10 + uint64(d-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// idForm says how a stream ID argument may be written.
type idForm struct {
	strict     bool   // "-" and "+" refused
	seqStar    bool   // "ms-*" allowed (XADD): seqGiven reports it
	missingSeq uint64 // the sequence of an ID given as "ms"
}

// parseID parses a stream ID as Redis's streamGenericParseIDOrReply does
// ("ms-seq", "ms", "-", "+"); seqGiven is false for "ms-*".
func parseID(b []byte, f idForm) (id streamID, seqGiven bool, err error) {
	b = cutNUL(b)
	if len(b) > 127 {
		return id, false, ErrInvalidStreamID
	}
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		if f.strict {
			return id, false, ErrInvalidStreamID
		}
		if b[0] == '+' {
			return storage.MaxStreamID, true, nil
		}
		return id, true, nil
	}
	ms, seqPart, dash := b, []byte(nil), false
	for i, c := range b {
		if c == '-' {
			ms, seqPart, dash = b[:i], b[i+1:], true
			break
		}
	}
	var ok bool
	if id.Ms, ok = parseULL(ms); !ok {
		return id, false, ErrInvalidStreamID
	}
	switch {
	case !dash:
		id.Seq = f.missingSeq
	case f.seqStar && len(seqPart) == 1 && seqPart[0] == '*':
		return id, false, nil
	default:
		if id.Seq, ok = parseULL(seqPart); !ok {
			return id, false, ErrInvalidStreamID
		}
	}
	return id, true, nil
}

// strictID parses an ID that must be a concrete one ("ms-seq" or "ms").
func strictID(b []byte) (streamID, error) {
	id, _, err := parseID(b, idForm{strict: true})
	return id, err
}

// intervalID parses one end of a range: an ID, "-", "+", or "(ID" for an
// exclusive bound, which is moved one step inward (lower says which end).
func intervalID(b []byte, lower bool) (streamID, error) {
	missing := uint64(0)
	if !lower {
		missing = math.MaxUint64
	}
	if len(b) > 1 && b[0] == '(' {
		id, _, err := parseID(b[1:], idForm{strict: true, missingSeq: missing})
		if err != nil {
			return id, err
		}
		var ok bool
		if lower {
			if id, ok = id.Next(); !ok {
				return id, ErrStreamStartInterval
			}
		} else if id, ok = id.Prev(); !ok {
			return id, ErrStreamEndInterval
		}
		return id, nil
	}
	id, _, err := parseID(b, idForm{missingSeq: missing})
	return id, err
}

// idString formats an ID as Redis replies it.
func idString(dst []byte, id streamID) []byte {
	dst = strconv.AppendUint(dst, id.Ms, 10)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, id.Seq, 10)
}

// writeID replies an ID as a bulk string.
func (c *Ctx) writeID(id streamID) {
	c.f.val = idString(c.f.val[:0], id)
	c.w.Bulk(c.f.val)
}

// writeEntry replies one entry: [id, [field, value, ...]].
func (c *Ctx) writeEntry(e *storage.StreamEntry) {
	c.w.Array(2)
	c.writeID(e.ID)
	c.w.Array(len(e.Fields))
	for _, f := range e.Fields {
		c.w.Bulk(f)
	}
}

// writeRange replies the entries from lo to hi (an array), at most count
// (0: all), and appends their IDs to ids when it is set. Entries are
// written as they are read; the array's header, whose length is known only
// at the end, is put in front of them then.
func (c *Ctx) writeRange(st *storage.Stream, lo, hi streamID, rev bool, count int64, ids *[]streamID) error {
	start := len(c.w.Buf)
	n := 0
	err := c.st.StreamRange(st, lo, hi, rev, count, func(e *storage.StreamEntry) bool {
		c.writeEntry(e)
		if ids != nil {
			*ids = append(*ids, e.ID)
		}
		n++
		return true
	})
	if err != nil {
		return err
	}
	var tmp [24]byte
	h := proto.Writer{Buf: tmp[:0], Proto: c.w.Proto}
	h.Array(n)
	c.w.Buf = slices.Insert(c.w.Buf, start, h.Buf...)
	return nil
}

// --- Opening ---

// readStream opens key to read it; nil when missing.
func (c *Ctx) readStream(key []byte) (*storage.Stream, error) {
	st, err := c.st.OpenStream(c.db, key)
	c.countLookup(key, st != nil, err)
	return st, err
}

// streamGroup opens the stream and the group, or replies NOGROUP as the
// consumer-group commands do.
func (c *Ctx) streamGroup(read bool) (*storage.Stream, *storage.StreamGroup, error) {
	var st *storage.Stream
	var err error
	if read {
		st, err = c.readStream(c.args[1])
	} else {
		st, err = c.st.OpenStream(c.db, c.args[1])
	}
	if err != nil {
		return nil, nil, err
	}
	var g *storage.StreamGroup
	if st != nil {
		if g, err = c.st.Group(st, c.args[2]); err != nil {
			return nil, nil, err
		}
	}
	if g == nil {
		return nil, nil, errNoGroup(c.args[1], c.args[2])
	}
	return st, g, nil
}

// --- XADD, XTRIM ---

// trimArgs are the parsed options of XADD and XTRIM.
type trimArgs struct {
	trim       storage.StreamTrim
	noMkStream bool
	id         streamID
	idGiven    bool
	seqGiven   bool
	idArg      int // the ID's index in args (XADD)
}

// parseTrimArgs parses XADD's or XTRIM's options as Redis's
// streamParseAddOrTrimArgsOrReply does; for XADD it stops at the ID and
// returns its index.
func (c *Ctx) parseTrimArgs(xadd bool) (trimArgs, int, error) {
	var a trimArgs
	limitGiven := false
	i := 2
	for ; i < len(c.args); i++ {
		more := len(c.args) - 1 - i
		opt := c.args[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
			a.idArg = i
			return a, i, c.checkTrim(&a, xadd, limitGiven)
		case eqFold(opt, "maxlen") && more > 0, eqFold(opt, "minid") && more > 0:
			if a.trim.Strategy != storage.TrimNone {
				return a, 0, ErrMaxLenAndMinID
			}
			a.trim.Approx = false
			if next := c.args[i+1]; more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
				a.trim.Approx = next[0] == '~'
				i++
			}
			if eqFold(opt, "maxlen") {
				n, err := c.intArg(i + 1)
				if err != nil {
					return a, 0, err
				}
				if n < 0 {
					return a, 0, ErrStreamMaxLen
				}
				a.trim.Strategy, a.trim.MaxLen = storage.TrimMaxLen, n
			} else {
				id, err := strictID(c.args[i+1])
				if err != nil {
					return a, 0, err
				}
				a.trim.Strategy, a.trim.MinID = storage.TrimMinID, id
			}
			i++
		case eqFold(opt, "limit") && more > 0:
			n, err := c.intArg(i + 1)
			if err != nil {
				return a, 0, err
			}
			if n < 0 {
				return a, 0, ErrStreamLimit
			}
			a.trim.Limit, limitGiven = n, true
			i++
		case xadd && eqFold(opt, "nomkstream"):
			a.noMkStream = true
		case xadd:
			id, seqGiven, err := parseID(opt, idForm{strict: true, seqStar: true})
			if err != nil {
				return a, 0, err
			}
			a.id, a.idGiven, a.seqGiven, a.idArg = id, true, seqGiven, i
			return a, i, c.checkTrim(&a, xadd, limitGiven)
		default:
			return a, 0, ErrSyntax
		}
	}
	return a, i, c.checkTrim(&a, xadd, limitGiven)
}

// checkTrim is the end of Redis's option parsing: the combinations it
// refuses, and the default LIMIT of approximate trimming.
func (c *Ctx) checkTrim(a *trimArgs, xadd, limitGiven bool) error {
	if a.trim.Limit != 0 && a.trim.Strategy == storage.TrimNone {
		return ErrLimitWithoutTrim
	}
	if !xadd && a.trim.Strategy == storage.TrimNone {
		return ErrXTrimStrategy
	}
	switch {
	case c.s.master:
		// What a master sends is obeyed whole: Redis propagates a "~"
		// trim as "=" with its LIMIT still there, and limits nothing
		// (mustObeyClient).
		a.trim.Limit = 0
	case limitGiven && !a.trim.Approx:
		return ErrLimitWithoutApprox
	case !limitGiven && a.trim.Approx:
		// 100 nodes' worth, kept within Redis's bounds for a node size
		// of 0 or a huge one.
		a.trim.Limit = 100 * c.a.streamNodeEntries()
		if a.trim.Limit <= 0 {
			a.trim.Limit = 10000
		}
		a.trim.Limit = min(a.trim.Limit, 1000000)
	case !limitGiven:
		a.trim.Limit = 0
	}
	a.trim.NodeSize = c.a.streamNodeEntries()
	return nil
}

// streamNodeEntries is stream-node-max-entries: the node size of
// storage's model of Redis's stream nodes (storage.NodeEntries says where
// the model holds). 0, which leaves Redis's nodes to
// stream-node-max-bytes alone, is not modelled: nodes of
// storage.NodeEntries stand in.
func (a *Actor) streamNodeEntries() int64 {
	n, _ := strconv.ParseInt(a.storedParamValue("stream-node-max-entries"), 10, 64)
	return n
}

// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [field value ...]
func cmdXAdd(c *Ctx) error {
	a, at, err := c.parseTrimArgs(true)
	if err != nil {
		return err
	}
	fields := len(c.args) - at - 1
	if fields < 2 || fields%2 == 1 {
		return errWrongArgs(c.cmd.Name)
	}
	if a.idGiven && a.seqGiven && a.id.IsZero() {
		return ErrStreamIDZero
	}
	st, err := c.st.OpenStream(c.db, c.args[1])
	if err != nil {
		return err
	}
	if st == nil {
		if a.noMkStream {
			c.w.Null()
			return nil
		}
		if st, err = c.st.CreateStream(c.db, c.args[1]); err != nil {
			return err
		}
	}
	if st.Last == storage.MaxStreamID {
		return ErrStreamExhausted
	}
	var id streamID
	switch {
	case !a.idGiven:
		if ms := uint64(c.now); ms > st.Last.Ms {
			id = streamID{Ms: ms}
		} else {
			id, _ = st.Last.Next()
		}
	case a.seqGiven:
		id = a.id
	case st.Last.Ms == a.id.Ms:
		if st.Last.Seq == math.MaxUint64 {
			return ErrStreamElementsTooLarge // Redis's text for this case
		}
		id, _ = st.Last.Next()
	default:
		id = streamID{Ms: a.id.Ms}
	}
	if id.Cmp(st.Last) <= 0 {
		return ErrStreamIDTooSmall
	}
	if err := c.st.StreamAdd(st, id, c.args[at+1:]); err != nil {
		return err
	}
	if _, err := c.st.StreamTrimmed(st, a.trim); err != nil {
		return err
	}
	c.writeID(id)
	if a.trim.Approx {
		// The redo log gets the trim as what it did (trimRecord), and
		// the ID made here, not "*".
		rec, err := c.trimRecord(&a, st)
		if err != nil {
			return err
		}
		if a.noMkStream {
			rec = append(rec, []byte("NOMKSTREAM"))
		}
		rec = append(rec, idString(nil, id))
		c.rec = append(rec, c.args[at+1:]...)
	} else if !a.idGiven || !a.seqGiven {
		// The redo log gets the ID made here, not "*" (effects.go).
		c.rec = append(c.rec[:0:0], c.args...)
		c.rec[a.idArg] = idString(nil, id)
	}
	return nil
}

// trimRecord starts what the redo log records for an XADD or XTRIM that
// trimmed with "~": the command, its key and an exact trim that removes
// what this one removed (MAXLEN = the length left, or MINID = the first
// entry left; MAXLEN = 0 for a stream left empty), without LIMIT. Which
// entries "~" removes depends on stream-node-max-entries, which a replay
// may not run with (CONFIG SET is not logged); Redis rewrites the command
// it propagates the same way (streamRewriteTrimArgument).
func (c *Ctx) trimRecord(a *trimArgs, st *storage.Stream) ([][]byte, error) {
	rec := [][]byte{c.args[0], c.args[1]}
	first, ok, err := c.st.StreamEnd(st, false)
	if err != nil {
		return nil, err
	}
	if a.trim.Strategy == storage.TrimMinID && ok {
		return append(rec, []byte("MINID"), []byte("="), idString(nil, first)), nil
	}
	return append(rec, []byte("MAXLEN"), []byte("="), strconv.AppendInt(nil, st.Len, 10)), nil
}

// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
func cmdXTrim(c *Ctx) error {
	a, _, err := c.parseTrimArgs(false)
	if err != nil {
		return err
	}
	st, err := c.st.OpenStream(c.db, c.args[1])
	if err != nil || st == nil {
		c.w.Int(0)
		return err
	}
	n, err := c.st.StreamTrimmed(st, a.trim)
	if err != nil {
		return err
	}
	if a.trim.Approx {
		if c.rec, err = c.trimRecord(&a, st); err != nil {
			return err
		}
	}
	c.w.Int(n)
	return nil
}

// --- XLEN, XRANGE, XREVRANGE, XDEL ---

// XLEN key
func cmdXLen(c *Ctx) error {
	st, err := c.readStream(c.args[1])
	if err != nil {
		return err
	}
	if st == nil {
		c.w.Int(0)
		return nil
	}
	c.w.Int(st.Len)
	return nil
}

// XRANGE key start end [COUNT count] / XREVRANGE key end start [COUNT count]
func cmdXRange(rev bool) Handler {
	return func(c *Ctx) error {
		startArg, endArg := c.args[2], c.args[3]
		if rev {
			startArg, endArg = endArg, startArg
		}
		lo, err := intervalID(startArg, true)
		if err != nil {
			return err
		}
		hi, err := intervalID(endArg, false)
		if err != nil {
			return err
		}
		count := int64(-1)
		for j := 4; j < len(c.args); j++ {
			if !c.argEq(j, "count") || j+1 >= len(c.args) {
				return ErrSyntax
			}
			if count, err = c.intArg(j + 1); err != nil {
				return err
			}
			count = max(count, 0)
			j++
		}
		st, err := c.readStream(c.args[1])
		if err != nil {
			return err
		}
		if st == nil {
			c.w.Array(0)
			return nil
		}
		if count == 0 {
			c.w.NullArray()
			return nil
		}
		return c.writeRange(st, lo, hi, rev, max(count, 0), nil)
	}
}

// XDEL key id [id ...]
func cmdXDel(c *Ctx) error {
	st, err := c.st.OpenStream(c.db, c.args[1])
	if err != nil || st == nil {
		c.w.Int(0)
		return err
	}
	ids := make([]streamID, 0, len(c.args)-2)
	for _, b := range c.args[2:] {
		id, err := strictID(b)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	n, err := c.st.StreamDelete(st, ids)
	if err != nil {
		return err
	}
	c.w.Int(n)
	return nil
}

// --- XREAD, XREADGROUP ---

// readArgs are XREAD's and XREADGROUP's parsed arguments.
type readArgs struct {
	count    int64 // 0: no limit
	block    int64 // -1: no BLOCK
	group    []byte
	consumer []byte
	noAck    bool
	keys     [][]byte
	ids      []string // as given, resolved by the handler
}

// parseRead parses the options of XREAD (group false) or XREADGROUP.
func (c *Ctx) parseRead(group bool) (readArgs, error) {
	r := readArgs{block: -1}
	streams := 0
	for i := 1; i < len(c.args); i++ {
		more := len(c.args) - 1 - i
		switch {
		case c.argEq(i, "block") && more > 0:
			i++
			ms, err := parseInt(c.args[i])
			if err != nil {
				return r, ErrTimeoutNotInteger
			}
			if ms < 0 {
				return r, ErrTimeoutNegative
			}
			if ms > 0 && ms > math.MaxInt64-c.now {
				return r, ErrTimeoutOutOfRange
			}
			r.block = ms
		case c.argEq(i, "count") && more > 0:
			i++
			n, err := c.intArg(i)
			if err != nil {
				return r, err
			}
			r.count = max(n, 0)
		case c.argEq(i, "streams") && more > 0:
			streams = i + 1
			if (len(c.args)-streams)%2 != 0 {
				return r, ErrUnbalancedStreams
			}
			i = len(c.args)
		case c.argEq(i, "group") && more >= 2:
			if !group {
				return r, ErrXReadGroupOption
			}
			r.group, r.consumer = c.args[i+1], c.args[i+2]
			i += 2
		case c.argEq(i, "noack"):
			if !group {
				return r, ErrXReadNoAck
			}
			r.noAck = true
		default:
			return r, ErrSyntax
		}
	}
	if streams == 0 {
		return r, ErrSyntax
	}
	if group && r.group == nil {
		return r, ErrXReadGroupMissing
	}
	n := (len(c.args) - streams) / 2
	r.keys = c.args[streams : streams+n]
	for _, id := range c.args[streams+n:] {
		r.ids = append(r.ids, string(id))
	}
	return r, nil
}

// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
func cmdXRead(c *Ctx) error {
	r, err := c.parseRead(false)
	if err != nil {
		return err
	}
	after := make([]streamID, len(r.keys))
	for i, key := range r.keys {
		st, err := c.readStream(key)
		if err != nil {
			return err
		}
		switch r.ids[i] {
		case "$":
			if st != nil {
				after[i] = st.Last
			}
		case ">":
			return ErrXReadGreater
		default:
			if after[i], err = strictID([]byte(r.ids[i])); err != nil {
				return err
			}
		}
	}
	try := xreadTry(after, r.count)
	if r.block < 0 || c.noBlock {
		return c.tryOnce(r.keys, try, (*proto.Writer).NullArray)
	}
	done, err := try(c, r.keys)
	if err != nil || done {
		return err
	}
	return c.block(&waiter{typ: storage.TypeStream, keys: r.keys, retry: try}, r.block)
}

// xreadTry is XREAD's work: the entries after after[i] of each keys[i]
// that has some, at most count per stream. It reads without consuming, so
// a ready key serves every waiter that wants what it holds.
func xreadTry(after []streamID, count int64) retry {
	return func(c *Ctx, keys [][]byte) (bool, error) {
		type served struct {
			st *storage.Stream
			i  int
		}
		var ss []served
		for i, key := range keys {
			st, err := c.st.OpenStream(c.db, key)
			if !c.woken {
				// Redis looks every key up a second time to serve it, and
				// counts that lookup too (INFO keyspace_hits/misses).
				c.countLookup(key, st != nil, err)
			}
			switch {
			case c.passOver(err):
				continue
			case err != nil:
				return false, err
			case st == nil || st.Len == 0 || st.Last.Cmp(after[i]) <= 0:
				// Nothing after the ID: no entry is above the last ID
				// ever made.
				continue
			}
			last, _, err := c.st.StreamEnd(st, true)
			if err != nil {
				return false, err
			}
			if last.Cmp(after[i]) > 0 {
				ss = append(ss, served{st, i})
			}
		}
		if len(ss) == 0 {
			return false, nil
		}
		c.streamsHeader(len(ss))
		for _, s := range ss {
			if c.w.Proto == 2 {
				c.w.Array(2)
			}
			c.w.Bulk(keys[s.i])
			lo, _ := after[s.i].Next()
			if err := c.writeRange(s.st, lo, storage.MaxStreamID, false, count, nil); err != nil {
				return false, err
			}
		}
		return true, nil
	}
}

// streamsHeader starts XREAD's reply: an array of [key, entries] pairs in
// RESP2, a map in RESP3.
func (c *Ctx) streamsHeader(n int) {
	if c.w.Proto == 3 {
		c.w.Map(n)
	} else {
		c.w.Array(n)
	}
}

// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id [id ...]
func cmdXReadGroup(c *Ctx) error {
	r, err := c.parseRead(true)
	if err != nil {
		return err
	}
	after := make([]streamID, len(r.keys))
	pre := make([]opened, len(r.keys))
	history := false
	for i, key := range r.keys {
		st, err := c.readStream(key)
		if err != nil {
			return err
		}
		var g *storage.StreamGroup
		if st != nil {
			if g, err = c.st.Group(st, r.group); err != nil {
				return err
			}
		}
		if g == nil {
			return errNoGroupRead(key, r.group)
		}
		pre[i] = opened{st, g}
		switch r.ids[i] {
		case "$":
			return ErrXReadGroupDollar
		case ">":
			after[i] = storage.MaxStreamID
		default:
			if after[i], err = strictID([]byte(r.ids[i])); err != nil {
				return err
			}
			history = true
		}
	}
	try := xreadGroupTry(after, r.count, cloneBytes(r.group), cloneBytes(r.consumer), r.noAck, &pre)
	if r.block < 0 || c.noBlock || history {
		return c.tryOnce(r.keys, try, (*proto.Writer).NullArray)
	}
	done, err := try(c, r.keys)
	if err != nil || done {
		return err
	}
	return c.block(&waiter{typ: storage.TypeStream, keys: r.keys, retry: try}, r.block)
}

func cloneBytes(b []byte) []byte { return append([]byte{}, b...) }

// opened is a stream and group a handler opened.
type opened struct {
	st *storage.Stream
	g  *storage.StreamGroup
}

// xreadGroupTry is XREADGROUP's work. For an ID of ">" (MaxStreamID in
// after) it delivers the entries after the group's last delivered ID, at
// most count per stream, moving the group on and adding each entry to the
// PEL under the consumer (unless noAck); for any other ID it replies the
// consumer's own pending entries after it. A waiter's retry whose stream
// or group has gone answers with Redis's error. The first run may use the
// streams and groups its handler opened (*pre, then forgotten: they belong
// to the command); a retry opens its own.
func xreadGroupTry(after []streamID, count int64, group, consumer []byte, noAck bool, pre *[]opened) retry {
	return func(c *Ctx, keys [][]byte) (bool, error) {
		ready := *pre
		*pre = nil
		type served struct {
			st      *storage.Stream
			g       *storage.StreamGroup
			i       int
			history bool
		}
		var ss []served
		for i, key := range keys {
			var st *storage.Stream
			var g *storage.StreamGroup
			if ready != nil {
				st, g = ready[i].st, ready[i].g
				c.countLookup(key, true, nil) // Redis's second lookup, as in xreadTry
			} else {
				var err error
				st, err = c.st.OpenStream(c.db, key)
				if c.woken && (st == nil && err == nil || c.passOver(err)) {
					return true, ErrStreamGone
				}
				if err != nil {
					return false, err
				}
				if st != nil {
					if g, err = c.st.Group(st, group); err != nil {
						return false, err
					}
				}
				if g == nil {
					if c.woken {
						return true, ErrGroupGone
					}
					return false, errNoGroupRead(key, group)
				}
			}
			if after[i] != storage.MaxStreamID {
				ss = append(ss, served{st, g, i, true})
				continue
			}
			if st.Len == 0 || st.Last.Cmp(g.Last) <= 0 {
				continue
			}
			last, _, err := c.st.StreamEnd(st, true)
			if err != nil {
				return false, err
			}
			if last.Cmp(g.Last) > 0 {
				ss = append(ss, served{st, g, i, false})
			}
		}
		if len(ss) == 0 {
			return false, nil
		}
		c.streamsHeader(len(ss))
		for _, s := range ss {
			if c.w.Proto == 2 {
				c.w.Array(2)
			}
			c.w.Bulk(keys[s.i])
			if err := c.st.SeeConsumer(s.st, s.g, consumer, c.now); err != nil {
				return false, err
			}
			var err error
			if s.history {
				err = c.readHistory(s.st, s.g, consumer, after[s.i], count)
			} else {
				err = c.deliverNew(s.st, s.g, consumer, count, noAck)
			}
			if err != nil {
				return false, err
			}
		}
		return true, nil
	}
}

// deliverNew replies the entries after g's last delivered ID, moves the
// group on and records them pending for consumer.
func (c *Ctx) deliverNew(st *storage.Stream, g *storage.StreamGroup, consumer []byte, count int64, noAck bool) error {
	lo, _ := g.Last.Next()
	var ids []streamID
	if err := c.writeRange(st, lo, storage.MaxStreamID, false, count, &ids); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	// The first entry's ID matters only to the read counter's rules for
	// a stream with deletions or a counter not known: read it then.
	var first streamID
	if !st.MaxDeleted.IsZero() || g.EntriesRead == -1 {
		var err error
		if first, _, err = c.st.StreamEnd(st, false); err != nil {
			return err
		}
	}
	for _, id := range ids {
		if id.Cmp(g.Last) > 0 {
			switch {
			case g.EntriesRead != -1 && !hasTombstones(st, first, id):
				g.EntriesRead++
			case st.EntriesAdded != 0:
				g.EntriesRead = entriesBefore(st, first, id)
			}
			g.Last = id
		}
		if !noAck {
			p := storage.StreamPending{ID: id, Consumer: consumer, Delivered: c.now, Count: 1}
			if err := c.st.SetPending(st, g, p); err != nil {
				return err
			}
		}
	}
	return c.st.SaveGroup(st, g)
}

// readHistory replies consumer's pending entries after the given ID (an
// entry deleted since it was delivered as [id, nil]), counting a delivery
// for each one still there.
func (c *Ctx) readHistory(st *storage.Stream, g *storage.StreamGroup, consumer []byte, after streamID, count int64) error {
	lo, ok := after.Next()
	if !ok {
		c.w.Array(0)
		return nil
	}
	ps, err := c.st.PendingRange(st, g, consumer, lo, storage.MaxStreamID, math.MaxInt64, count)
	if err != nil {
		return err
	}
	c.w.Array(len(ps))
	for _, p := range ps {
		e, found, err := c.st.StreamEntryAt(st, p.ID)
		if err != nil {
			return err
		}
		if !found {
			c.w.Array(2)
			c.writeID(p.ID)
			c.w.NullArray()
			continue
		}
		c.writeEntry(&e)
		p.Delivered, p.Count = c.now, p.Count+1
		if err := c.st.SetPending(st, g, p); err != nil {
			return err
		}
	}
	return nil
}

// hasTombstones reports whether an entry deleted by XDEL may lie at or
// after from (Redis's streamRangeHasTombstones with no end).
func hasTombstones(st *storage.Stream, first, from streamID) bool {
	if st.Len == 0 || st.MaxDeleted.IsZero() || first.Cmp(st.MaxDeleted) > 0 {
		return false
	}
	return from.Cmp(st.MaxDeleted) <= 0
}

// entriesBefore is Redis's streamEstimateDistanceFromFirstEverEntry: the
// logical position of id among every entry ever added, or -1 when it cannot
// be known.
func entriesBefore(st *storage.Stream, first, id streamID) int64 {
	if st.EntriesAdded == 0 {
		return 0
	}
	if st.Len == 0 && id.Cmp(st.Last) < 1 {
		return st.EntriesAdded
	}
	switch id.Cmp(st.Last) {
	case 0:
		return st.EntriesAdded
	case 1:
		return -1
	}
	if st.MaxDeleted.IsZero() || st.MaxDeleted.Cmp(first) < 0 {
		switch id.Cmp(first) {
		case -1:
			return st.EntriesAdded - st.Len
		case 0:
			return st.EntriesAdded - st.Len + 1
		}
	}
	return -1
}

// writeLag replies a group's lag (Redis's streamReplyWithCGLag): null when
// it cannot be known.
func (c *Ctx) writeLag(st *storage.Stream, first streamID, g *storage.StreamGroup) {
	switch {
	case st.EntriesAdded == 0:
		c.w.Int(0)
	case g.EntriesRead != -1 && !hasTombstones(st, first, g.Last):
		c.w.Int(st.EntriesAdded - g.EntriesRead)
	default:
		if n := entriesBefore(st, first, g.Last); n != -1 {
			c.w.Int(st.EntriesAdded - n)
		} else {
			c.w.Null()
		}
	}
}

// --- XACK, XPENDING, XCLAIM, XAUTOCLAIM ---

// XACK key group id [id ...]
func cmdXAck(c *Ctx) error {
	st, err := c.readStream(c.args[1])
	if err != nil {
		return err
	}
	var g *storage.StreamGroup
	if st != nil {
		if g, err = c.st.Group(st, c.args[2]); err != nil {
			return err
		}
	}
	if g == nil {
		c.w.Int(0)
		return nil
	}
	ids := make([]streamID, 0, len(c.args)-3)
	for _, b := range c.args[3:] {
		id, err := strictID(b)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	n := int64(0)
	for _, id := range ids {
		ok, err := c.st.Ack(st, g, id)
		if err != nil {
			return err
		}
		if ok {
			n++
		}
	}
	c.w.Int(n)
	return nil
}

// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
func cmdXPending(c *Ctx) error {
	n := len(c.args)
	if n != 3 && (n < 6 || n > 9) {
		return ErrSyntax
	}
	var lo, hi streamID
	var count, minIdle int64
	var consumer []byte
	if n >= 6 {
		at := 3
		if c.argEq(3, "idle") {
			var err error
			if minIdle, err = c.intArg(4); err != nil {
				return err
			}
			if n < 8 {
				return ErrSyntax
			}
			at += 2
		}
		var err error
		if count, err = c.intArg(at + 2); err != nil {
			return err
		}
		count = max(count, 0)
		if lo, err = intervalID(c.args[at], true); err != nil {
			return err
		}
		if hi, err = intervalID(c.args[at+1], false); err != nil {
			return err
		}
		if at+3 < n {
			consumer = c.args[at+3]
		}
	}
	st, g, err := c.streamGroup(true)
	if err != nil {
		return err
	}
	if n == 3 {
		total, err := c.st.PendingCount(st, g)
		if err != nil {
			return err
		}
		c.w.Array(4)
		c.w.Int(total)
		if total == 0 {
			c.w.Null()
			c.w.Null()
			c.w.NullArray()
			return nil
		}
		first, last, _, err := c.st.PendingEnds(st, g)
		if err != nil {
			return err
		}
		c.writeID(first)
		c.writeID(last)
		type owner struct {
			name []byte
			n    int64
		}
		var os []owner
		if err := c.st.PendingPerConsumer(st, g, func(name []byte, n int64) {
			os = append(os, owner{cloneBytes(name), n})
		}); err != nil {
			return err
		}
		c.w.Array(len(os))
		for _, o := range os {
			c.w.Array(2)
			c.w.Bulk(o.name)
			c.w.BulkInt(o.n)
		}
		return nil
	}
	if consumer != nil {
		if _, found, err := c.st.Consumer(st, g, consumer); err != nil || !found {
			c.w.Array(0)
			return err
		}
	}
	if count == 0 {
		c.w.Array(0)
		return nil
	}
	by := int64(math.MaxInt64)
	if minIdle > 0 {
		by = c.now - minIdle
	}
	ps, err := c.st.PendingRange(st, g, consumer, lo, hi, by, count)
	if err != nil {
		return err
	}
	c.w.Array(len(ps))
	for _, p := range ps {
		c.w.Array(4)
		c.writeID(p.ID)
		c.w.Bulk(p.Consumer)
		c.w.Int(max(c.now-p.Delivered, 0))
		c.w.Int(p.Count)
	}
	return nil
}

// claimer gives pending entries to one consumer, creating it (or marking
// it seen) at the first entry it gets.
type claimer struct {
	st   *storage.Stream
	g    *storage.StreamGroup
	name []byte
	seen bool
}

func (cl *claimer) claim(c *Ctx, p storage.StreamPending) error {
	if !cl.seen {
		if err := c.st.SeeConsumer(cl.st, cl.g, cl.name, c.now); err != nil {
			return err
		}
		cl.seen = true
	}
	p.Consumer = cl.name
	return c.st.SetPending(cl.st, cl.g, p)
}

// writeClaimed replies a claimed entry: its ID with JUSTID, else the entry.
func (c *Ctx) writeClaimed(st *storage.Stream, id streamID, justID bool) error {
	if justID {
		c.writeID(id)
		return nil
	}
	e, found, err := c.st.StreamEntryAt(st, id)
	if err != nil {
		return err
	}
	if !found {
		c.w.Null()
		return nil
	}
	c.writeEntry(&e)
	return nil
}

// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]
func cmdXClaim(c *Ctx) error {
	st, g, err := c.streamGroup(true)
	if err != nil {
		return err
	}
	minIdle, err := parseInt(c.args[4])
	if err != nil {
		return ErrXClaimMinIdle
	}
	minIdle = max(minIdle, 0)
	j := 5
	var ids []streamID
	for ; j < len(c.args); j++ {
		id, err := strictID(c.args[j])
		if err != nil {
			break
		}
		ids = append(ids, id)
	}
	now := c.now
	delivery, retry := int64(-1), int64(-1)
	var force, justID bool
	var lastID streamID
	for ; j < len(c.args); j++ {
		more := len(c.args) - 1 - j
		switch {
		case c.argEq(j, "force"):
			force = true
		case c.argEq(j, "justid"):
			justID = true
		case c.argEq(j, "idle") && more > 0:
			j++
			v, err := parseInt(c.args[j])
			if err != nil {
				return ErrXClaimIdle
			}
			delivery = now - v
		case c.argEq(j, "time") && more > 0:
			j++
			v, err := parseInt(c.args[j])
			if err != nil {
				return ErrXClaimTime
			}
			delivery = v
		case c.argEq(j, "retrycount") && more > 0:
			j++
			v, err := parseInt(c.args[j])
			if err != nil {
				return ErrXClaimRetryCount
			}
			retry = v
		case c.argEq(j, "lastid") && more > 0:
			j++
			if lastID, err = strictID(c.args[j]); err != nil {
				return err
			}
		default:
			return errXClaimOption(c.args[j])
		}
	}
	if lastID.Cmp(g.Last) > 0 {
		g.Last = lastID
		if err := c.st.SaveGroup(st, g); err != nil {
			return err
		}
	}
	if delivery < 0 || delivery > now {
		delivery = now
	}
	cl := claimer{st: st, g: g, name: c.args[3]}
	var out []streamID
	for _, id := range ids {
		p, pending, err := c.st.Pending(st, g, id)
		if err != nil {
			return err
		}
		exists, err := c.st.StreamHas(st, id)
		if err != nil {
			return err
		}
		if !exists {
			if pending {
				if _, err := c.st.Ack(st, g, id); err != nil {
					return err
				}
			}
			continue
		}
		fresh := false
		if force && !pending {
			p, pending, fresh = storage.StreamPending{ID: id, Count: 1}, true, true
		}
		if !pending {
			continue
		}
		if !fresh && minIdle > 0 && now-p.Delivered < minIdle {
			continue
		}
		p.Delivered = delivery
		switch {
		case retry >= 0:
			p.Count = retry
		case !justID:
			p.Count++
		}
		if err := cl.claim(c, p); err != nil {
			return err
		}
		out = append(out, id)
	}
	c.w.Array(len(out))
	for _, id := range out {
		if err := c.writeClaimed(st, id, justID); err != nil {
			return err
		}
	}
	return nil
}

// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
func cmdXAutoClaim(c *Ctx) error {
	minIdle, err := parseInt(c.args[4])
	if err != nil {
		return ErrXAutoClaimMinIdle
	}
	minIdle = max(minIdle, 0)
	start, err := intervalID(c.args[5], true)
	if err != nil {
		return err
	}
	count, justID := int64(100), false
	const attemptsFactor = 10
	for j := 6; j < len(c.args); j++ {
		more := len(c.args) - 1 - j
		switch {
		case c.argEq(j, "count") && more > 0:
			v, err := parseInt(c.args[j+1])
			if err != nil || v < 1 || v > math.MaxInt64/16 {
				return ErrXAutoClaimCount
			}
			count = v
			j++
		case c.argEq(j, "justid"):
			justID = true
		default:
			return ErrSyntax
		}
	}
	st, g, err := c.streamGroup(true)
	if err != nil {
		return err
	}
	attempts := count * attemptsFactor
	now := c.now
	ps, err := c.st.PendingRange(st, g, nil, start, storage.MaxStreamID, math.MaxInt64, attempts+1)
	if err != nil {
		return err
	}
	cl := claimer{st: st, g: g, name: c.args[3]}
	var claimed, deleted []streamID
	i := 0
	for ; attempts > 0 && count > 0 && i < len(ps); i++ {
		attempts--
		p := ps[i]
		exists, err := c.st.StreamHas(st, p.ID)
		if err != nil {
			return err
		}
		if !exists {
			if _, err := c.st.Ack(st, g, p.ID); err != nil {
				return err
			}
			deleted = append(deleted, p.ID)
			count--
			continue
		}
		if minIdle > 0 && now-p.Delivered < minIdle {
			continue
		}
		p.Delivered = now
		if !justID {
			p.Count++
		}
		if err := cl.claim(c, p); err != nil {
			return err
		}
		claimed = append(claimed, p.ID)
		count--
	}
	next := streamID{}
	if i < len(ps) {
		next = ps[i].ID
	}
	c.w.Array(3)
	c.writeID(next)
	c.w.Array(len(claimed))
	for _, id := range claimed {
		if err := c.writeClaimed(st, id, justID); err != nil {
			return err
		}
	}
	c.w.Array(len(deleted))
	for _, id := range deleted {
		c.writeID(id)
	}
	return nil
}

// --- XGROUP ---

// groupIDArg parses XGROUP's ID argument: "$" is the stream's last ID.
func groupIDArg(st *storage.Stream, b []byte, strict bool) (streamID, error) {
	if len(b) == 1 && b[0] == '$' {
		if st == nil {
			return streamID{}, nil
		}
		return st.Last, nil
	}
	if strict {
		return strictID(b)
	}
	id, _, err := parseID(b, idForm{})
	return id, err
}

// entriesReadArg parses ENTRIESREAD's value.
func (c *Ctx) entriesReadArg(i int) (int64, error) {
	n, err := c.intArg(i)
	if err != nil {
		return 0, err
	}
	if n < 0 && n != -1 {
		return 0, ErrEntriesRead
	}
	return n, nil
}

// xgroupStream opens XGROUP's stream (args[2]) and group (args[3]). A
// missing stream is an error unless mk; a missing group is an error when
// needGroup.
func (c *Ctx) xgroupStream(mk, needGroup bool) (*storage.Stream, *storage.StreamGroup, error) {
	st, err := c.st.OpenStream(c.db, c.args[2])
	if err != nil {
		return nil, nil, err
	}
	if st == nil {
		if mk {
			return nil, nil, nil
		}
		return nil, nil, ErrXGroupNoKey
	}
	g, err := c.st.Group(st, c.args[3])
	if err != nil {
		return nil, nil, err
	}
	if g == nil && needGroup {
		return nil, nil, errNoGroupForKey(c.args[3], c.args[2])
	}
	return st, g, nil
}

// XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD entries-read]
func cmdXGroupCreate(c *Ctx) error {
	mk, read := false, int64(-1)
	for i := 5; i < len(c.args); i++ {
		switch {
		case c.argEq(i, "mkstream"):
			mk = true
		case c.argEq(i, "entriesread") && i+1 < len(c.args):
			var err error
			if read, err = c.entriesReadArg(i + 1); err != nil {
				return err
			}
			i++
		default:
			return errSubcommandSyntax("xgroup", c.args[1])
		}
	}
	st, _, err := c.xgroupStream(mk, false)
	if err != nil {
		return err
	}
	id, err := groupIDArg(st, c.args[4], true)
	if err != nil {
		return err
	}
	if st == nil {
		if st, err = c.st.CreateStream(c.db, c.args[2]); err != nil {
			return err
		}
	}
	created, err := c.st.CreateGroup(st, storage.StreamGroup{Name: c.args[3], Last: id, EntriesRead: read})
	if err != nil {
		return err
	}
	if !created {
		return ErrBusyGroup
	}
	c.w.OK()
	return nil
}

// XGROUP SETID key group id|$ [ENTRIESREAD entries-read]
func cmdXGroupSetID(c *Ctx) error {
	read := int64(-1)
	if len(c.args) == 7 {
		if !c.argEq(5, "entriesread") {
			return errSubcommandSyntax("xgroup", c.args[1])
		}
		var err error
		if read, err = c.entriesReadArg(6); err != nil {
			return err
		}
	} else if len(c.args) != 5 {
		return errSubcommandSyntax("xgroup", c.args[1])
	}
	st, g, err := c.xgroupStream(false, true)
	if err != nil {
		return err
	}
	id, err := groupIDArg(st, c.args[4], false)
	if err != nil {
		return err
	}
	g.Last, g.EntriesRead = id, read
	if err := c.st.SaveGroup(st, g); err != nil {
		return err
	}
	c.w.OK()
	return nil
}

// XGROUP DESTROY key group
func cmdXGroupDestroy(c *Ctx) error {
	st, g, err := c.xgroupStream(false, false)
	if err != nil {
		return err
	}
	if g == nil {
		c.w.Int(0)
		return nil
	}
	if _, err := c.st.DestroyGroup(st, g.Name); err != nil {
		return err
	}
	c.w.Int(1)
	return nil
}

// XGROUP CREATECONSUMER key group consumer
func cmdXGroupCreateConsumer(c *Ctx) error {
	st, g, err := c.xgroupStream(false, true)
	if err != nil {
		return err
	}
	created, err := c.st.CreateConsumer(st, g, c.args[4], c.now)
	if err != nil {
		return err
	}
	c.w.Int(b2i(created))
	return nil
}

// XGROUP DELCONSUMER key group consumer
func cmdXGroupDelConsumer(c *Ctx) error {
	st, g, err := c.xgroupStream(false, true)
	if err != nil {
		return err
	}
	n, err := c.st.DeleteConsumer(st, g, c.args[4])
	if err != nil {
		return err
	}
	c.w.Int(n)
	return nil
}

// XGROUP HELP
func cmdXGroupHelp(c *Ctx) error {
	return helpReply(c, "xgroup", []string{
		"CREATE <key> <groupname> <id|$> [option]",
		"    Create a new consumer group. Options are:",
		"    * MKSTREAM",
		"      Create the empty stream if it does not exist.",
		"    * ENTRIESREAD entries_read",
		"      Set the group's entries_read counter (internal use).",
		"CREATECONSUMER <key> <groupname> <consumer>",
		"    Create a new consumer in the specified group.",
		"DELCONSUMER <key> <groupname> <consumer>",
		"    Remove the specified consumer.",
		"DESTROY <key> <groupname>",
		"    Remove the specified group.",
		"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
		"    Set the current group ID and entries_read counter.",
		"HELP",
		"    Prints this help.",
	})
}

// --- XSETID ---

// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
func cmdXSetID(c *Ctx) error {
	id, err := strictID(c.args[2])
	if err != nil {
		return err
	}
	added := int64(-1)
	var maxDel streamID
	for i := 3; i < len(c.args); i += 2 {
		more := len(c.args) - 1 - i
		switch {
		case c.argEq(i, "entriesadded") && more > 0:
			if added, err = c.intArg(i + 1); err != nil {
				return err
			}
			if added < 0 {
				return ErrEntriesAdded
			}
		case c.argEq(i, "maxdeletedid") && more > 0:
			if maxDel, err = strictID(c.args[i+1]); err != nil {
				return err
			}
			if id.Cmp(maxDel) < 0 {
				return ErrXSetIDBelowMaxDeletedArg
			}
		default:
			return ErrSyntax
		}
	}
	st, err := c.st.OpenStream(c.db, c.args[1])
	if err != nil {
		return err
	}
	if st == nil {
		return ErrNoSuchKey
	}
	if st.Len > 0 {
		last, _, err := c.st.StreamEnd(st, true)
		if err != nil {
			return err
		}
		if id.Cmp(last) < 0 {
			return ErrXSetIDTooSmall
		}
		if added != -1 && st.Len > added {
			return ErrXSetIDEntriesAdded
		}
	}
	if id.Cmp(st.MaxDeleted) < 0 {
		return ErrXSetIDBelowMaxDeleted
	}
	st.Last = id
	if added != -1 {
		st.EntriesAdded = added
	}
	if !maxDel.IsZero() {
		st.MaxDeleted = maxDel
	}
	if err := c.st.StreamSetMeta(st); err != nil {
		return err
	}
	c.w.OK()
	return nil
}

// --- XINFO ---

// xinfoStream opens XINFO's key (args[2]): ERR no such key when missing.
func (c *Ctx) xinfoStream() (*storage.Stream, error) {
	st, err := c.readStream(c.args[2])
	if err == nil && st == nil {
		err = ErrNoSuchKey
	}
	return st, err
}

// pair writes a map entry's name (the map header is the caller's).
func (c *Ctx) pair(name string) { c.w.BulkString(name) }

// kvHeader starts a map of n fields: flat array in RESP2.
func (c *Ctx) kvHeader(n int) {
	if c.w.Proto == 3 {
		c.w.Map(n)
	} else {
		c.w.Array(2 * n)
	}
}

// XINFO STREAM key [FULL [COUNT count]]
func cmdXInfoStream(c *Ctx) error {
	full, count := false, int64(10)
	if len(c.args) > 3 {
		if !c.argEq(3, "full") {
			return errSubcommandSyntax("xinfo", c.args[1])
		}
		full = true
		if len(c.args) > 4 {
			if len(c.args) != 6 || !c.argEq(4, "count") {
				return errSubcommandSyntax("xinfo", c.args[1])
			}
			var err error
			if count, err = c.intArg(5); err != nil {
				return err
			}
			if count < 0 {
				count = 10
			}
		}
	}
	st, err := c.xinfoStream()
	if err != nil {
		return err
	}
	first, _, err := c.st.StreamEnd(st, false)
	if err != nil {
		return err
	}
	if full {
		c.kvHeader(9)
	} else {
		c.kvHeader(10)
	}
	// Redis stores entries in nodes of up to stream-node-max-entries in a
	// radix tree; Cellar reports the nodes of its model of that layout
	// (storage.NodeEntries), and one more radix tree node, which is
	// Redis's count only for a few keys.
	size := c.a.streamNodeEntries()
	if size <= 0 {
		size = storage.NodeEntries
	}
	nodes := (st.Len + size - 1) / size
	c.pair("length")
	c.w.Int(st.Len)
	c.pair("radix-tree-keys")
	c.w.Int(nodes)
	c.pair("radix-tree-nodes")
	c.w.Int(nodes + 1)
	c.pair("last-generated-id")
	c.writeID(st.Last)
	c.pair("max-deleted-entry-id")
	c.writeID(st.MaxDeleted)
	c.pair("entries-added")
	c.w.Int(st.EntriesAdded)
	c.pair("recorded-first-entry-id")
	c.writeID(first)
	if !full {
		n, err := c.st.GroupCount(st)
		if err != nil {
			return err
		}
		c.pair("groups")
		c.w.Int(n)
		for _, last := range []bool{false, true} {
			if last {
				c.pair("last-entry")
			} else {
				c.pair("first-entry")
			}
			found := false
			if err := c.st.StreamRange(st, streamID{}, storage.MaxStreamID, last, 1, func(e *storage.StreamEntry) bool {
				c.writeEntry(e)
				found = true
				return false
			}); err != nil {
				return err
			}
			if !found {
				c.w.Null()
			}
		}
		return nil
	}
	c.pair("entries")
	if err := c.writeRange(st, streamID{}, storage.MaxStreamID, false, count, nil); err != nil {
		return err
	}
	gs, err := c.st.Groups(st)
	if err != nil {
		return err
	}
	c.pair("groups")
	c.w.Array(len(gs))
	for i := range gs {
		g := &gs[i]
		c.kvHeader(7)
		c.pair("name")
		c.w.Bulk(g.Name)
		c.pair("last-delivered-id")
		c.writeID(g.Last)
		c.pair("entries-read")
		c.entriesRead(g)
		c.pair("lag")
		c.writeLag(st, first, g)
		total, err := c.st.PendingCount(st, g)
		if err != nil {
			return err
		}
		ps, err := c.st.PendingRange(st, g, nil, streamID{}, storage.MaxStreamID, math.MaxInt64, count)
		if err != nil {
			return err
		}
		c.pair("pel-count")
		c.w.Int(total)
		c.pair("pending")
		c.w.Array(len(ps))
		for _, p := range ps {
			c.w.Array(4)
			c.writeID(p.ID)
			c.w.Bulk(p.Consumer)
			c.w.Int(p.Delivered)
			c.w.Int(p.Count)
		}
		cs, err := c.st.Consumers(st, g)
		if err != nil {
			return err
		}
		c.pair("consumers")
		c.w.Array(len(cs))
		for _, cn := range cs {
			c.kvHeader(4)
			c.pair("name")
			c.w.Bulk(cn.Name)
			c.pair("seen-time")
			c.w.Int(cn.Seen)
			c.pair("pel-count")
			c.w.Int(cn.Pending)
			c.pair("pending")
			own, err := c.st.PendingRange(st, g, cn.Name, streamID{}, storage.MaxStreamID, math.MaxInt64, count)
			if err != nil {
				return err
			}
			c.w.Array(len(own))
			for _, p := range own {
				c.w.Array(3)
				c.writeID(p.ID)
				c.w.Int(p.Delivered)
				c.w.Int(p.Count)
			}
		}
	}
	return nil
}

// entriesRead replies a group's read counter, null when unknown.
func (c *Ctx) entriesRead(g *storage.StreamGroup) {
	if g.EntriesRead != -1 {
		c.w.Int(g.EntriesRead)
	} else {
		c.w.Null()
	}
}

// XINFO GROUPS key
func cmdXInfoGroups(c *Ctx) error {
	st, err := c.xinfoStream()
	if err != nil {
		return err
	}
	gs, err := c.st.Groups(st)
	if err != nil {
		return err
	}
	first, _, err := c.st.StreamEnd(st, false)
	if err != nil {
		return err
	}
	c.w.Array(len(gs))
	for i := range gs {
		g := &gs[i]
		consumers, err := c.st.ConsumerCount(st, g)
		if err != nil {
			return err
		}
		pending, err := c.st.PendingCount(st, g)
		if err != nil {
			return err
		}
		c.kvHeader(6)
		c.pair("name")
		c.w.Bulk(g.Name)
		c.pair("consumers")
		c.w.Int(consumers)
		c.pair("pending")
		c.w.Int(pending)
		c.pair("last-delivered-id")
		c.writeID(g.Last)
		c.pair("entries-read")
		c.entriesRead(g)
		c.pair("lag")
		c.writeLag(st, first, g)
	}
	return nil
}

// XINFO CONSUMERS key group
func cmdXInfoConsumers(c *Ctx) error {
	st, err := c.xinfoStream()
	if err != nil {
		return err
	}
	g, err := c.st.Group(st, c.args[3])
	if err != nil {
		return err
	}
	if g == nil {
		return errNoGroupForKey(c.args[3], c.args[2])
	}
	cs, err := c.st.Consumers(st, g)
	if err != nil {
		return err
	}
	c.w.Array(len(cs))
	for _, cn := range cs {
		c.kvHeader(3)
		c.pair("name")
		c.w.Bulk(cn.Name)
		c.pair("pending")
		c.w.Int(cn.Pending)
		c.pair("idle")
		c.w.Int(max(c.now-cn.Seen, 0))
	}
	return nil
}

// XINFO HELP
func cmdXInfoHelp(c *Ctx) error {
	return helpReply(c, "xinfo", []string{
		"CONSUMERS <key> <groupname>",
		"    Show consumers of <groupname>.",
		"GROUPS <key>",
		"    Show the stream consumer groups.",
		"STREAM <key> [FULL [COUNT <count>]",
		"    Show information about the stream.",
		"HELP",
		"    Prints this help.",
	})
}
