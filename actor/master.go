package actor

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/cellar-db/cellar/proto"
)

// The master side of Redis's replication (Redis 7.0's replication.c is the
// reference): a Redis replica, or anything that speaks PSYNC, can follow
// Cellar. docs/architecture.md, "Serving replicas", says what works and
// what does not yet.
//
// The stream. What a replica receives after its full sync is the redo
// log's effects (effects.go) as the RESP commands Redis would propagate:
// endRound, as it hands a round's records to the redo log, also converts
// each to Redis's form (redisForm: relative expiries made absolute, as
// Redis rewrites EXPIRE into PEXPIREAT and SET EX into SET PXAT; a group
// record, an EXEC's or a script's, as MULTI ... EXEC), with a SELECT
// whenever the database changes. After the round's log write succeeded
// the bytes go to the backlog and to every online replica, through the
// push path (Actor.push), so they leave after the round's replies like a
// Pub/Sub message; the replication offset is the byte count of that
// stream. A PING every repl-ping-replica-period seconds and a REPLCONF
// GETACK * at the end of a round in which a WAIT blocked are part of it,
// as in Redis. Nothing is converted until the first replica asks
// (master.active): a server nobody follows pays nothing.
//
// The full sync. PSYNC that cannot continue (and SYNC) suspends the
// replica's batch like SAVE (suspendOnJob); the replica waits for a sync
// job, which starts as Redis 7.0 starts its replication BGSAVE
// (startPendingSyncs): at once, unless repl-diskless-sync is yes and
// every waiting replica announced REPLCONF capa eof, in which case once
// the first has waited repl-diskless-sync-delay seconds or
// repl-diskless-sync-max-replicas are waiting, so that they share one
// snapshot. The job runs on the offload pool after the next flush
// (afterFlush; a Cellar replica's physical sync with its catch-up at
// once: physical.go), for every replica waiting then (fullsync.go has the
// detail): it copies the database (storage.Copy: VACUUM INTO through
// a connection of its own), opens the copy as a Store of its own and
// reads the redo log position the copy covers (the last flush's, stored
// in the same transaction as its rows). Meanwhile the actor serves
// everybody, and keeps for the waiting replica the stream from the
// moment it asked (replica.pend) with a mark (log position, offset,
// selected database) at the end of every round. Told the copy's position
// (syncBegin), the actor finds its mark: the offset the RDB stands at,
// and the database the stream had selected there (repl-stream-db, which
// a Redis replica selects for its master client). It answers the
// suspended PSYNC with "+FULLRESYNC <replid> <offset>", and the job
// streams the RDB (version 10, rdb.FileWriter; repl-stream-db, repl-id
// and repl-offset among its first auxiliary fields): diskless, as Redis's
// "$EOF:<40 random hex characters>\r\n<bytes><the same 40 characters>"
// while it is written; otherwise written to a file, then sent as
// "$<len>\r\n<bytes>". The pieces go within a window per replica, not
// held against the replica output class. Once the RDB has left the
// replica's output it is online, and the stream since its offset
// follows, at once or, after the EOF form, at its first REPLCONF ACK, as
// Redis waits (repl_start_cmd_stream_on_ack): nothing follows the mark
// until the replica has found it. Until the RDB starts to go the replica
// gets a newline every second (Redis's keep-alive), which no offset
// counts. Unlike Redis, which forks one child at a time, sync jobs may
// run side by side: a replica that asks while one runs waits for its own.
//
// The partial resync. The backlog is the last repl-backlog-size bytes of
// the stream (in memory; INFO's repl_backlog_*). PSYNC <replid> <offset>
// with this server's replication ID and an offset still in it is answered
// "+CONTINUE <replid>" and the backlog from there; so is PSYNC with the
// second ID (replID2, PSYNC2) for an offset up to second_repl_offset.
//
// A replica's stream. A Cellar replica keeps its master's stream as the
// master sent it: package replica ends every batch of the master's
// commands with REPLCONF cellar-relay <the batch's bytes>, which runs in
// the same round as the commands (so a snapshot's log position still
// meets one offset of the stream), and endStream puts those bytes in the
// backlog and sends them to this server's own replicas (a chain) instead
// of converting the round's records, which are the same writes. So a
// replica's offset is its master's, byte for byte down a chain, and a
// replica it promoted keeps the history: REPLICAOF NO ONE makes the ID it
// followed the second ID, valid up to the offset it reached plus one
// (Redis's shiftReplicationId), and starts a new one; the replicas of the
// old master continue from it with +CONTINUE <new ID>. A full sync of
// the replica takes its master's ID and offset and starts the backlog
// there; a +CONTINUE with a new ID shifts the IDs as a promotion does.
// Every change of history disconnects this server's replicas, which ask
// again and learn it. A role change inside a round splits its records
// (noteRoleChange): those made as a master are converted, those made as a
// replica were relayed.
//
// Bounds: a waiting replica's stream and an online replica's unsent
// output are bounded by the replica output class (Config.ReplicaHardLimit
// and ReplicaSoftLimit/ReplicaSoftTime, Redis's "replica 256mb 64mb 60"):
// past them it is disconnected, and starts over. The RDB itself is not
// counted (fullsync.go): the job holds a piece of it and a window per
// replica, whatever the keyspace's size.
//
// Only the actor touches the master state; the job owns its copy, its
// writer and its file, and reaches the actor only through Call.

// master is the actor's state as a master. Only the actor touches it.
type master struct {
	// active: a replica asked once; from then on the stream is kept.
	active bool
	// offset is master_repl_offset: the bytes of the stream so far.
	offset int64
	// backlog is the end of the stream, at most backlogSize bytes of it;
	// its first byte is at offset offset-len(backlog)+1. It lies in
	// backlogBuf (addBacklog), twice its size: what stays moves to the
	// front when the end is reached, so the stream allocates nothing.
	backlog, backlogBuf []byte
	// selDB is the database the stream has selected (-1: none yet).
	selDB int
	// round is the stream the round being ended adds.
	round []byte
	// replicas in the order they attached.
	replicas []*session
	// getack: a WAIT blocked in this round; ping: a PING is due.
	getack, ping bool
	lastPing     time.Time
	// waits are the WAITs blocked for acknowledgements.
	waits []*replWait
	// syncs numbers the full syncs (their copy's file name); stats.
	syncs                            uint64
	fullSyncs, partialOK, partialErr uint64
	physicalSyncs                    uint64 // full syncs sent as the database's copy
	// minToWrite and minMaxLag are min-replicas-to-write and
	// min-replicas-max-lag (applyReplParams).
	minToWrite, minMaxLag int64
	// noStale is replica-serve-stale-data no (refuseStale).
	noStale bool
	form    recordForm // feedReplicas's

	// replID2 and secondOffset are PSYNC2's second history (Redis's
	// replid2 and second_replid_offset): the replication ID this server
	// had before it was promoted (or before its master's ID changed),
	// valid for a partial resync that asks for at most secondOffset.
	// "" and -1: none.
	replID2      string
	secondOffset int64
	// relay is the master's stream that this round's batches of the
	// master's connection ran, as the master sent it (REPLCONF
	// cellar-relay, which package replica adds after a batch's commands):
	// a replica keeps it in its backlog and passes it on to its own
	// replicas byte for byte, so that offsets are the same along a chain.
	// relayDB is the database the master's connection had selected at its
	// end.
	relay   []byte
	relayDB int
	// The round's records are converted into the stream only while this
	// server is a master: a replica relays its master's stream instead.
	// When the role changes inside a round (switchRound, the round's
	// number), the records logged before the change (switchAt of them)
	// keep the role they were made in (switchOwn: a master's own).
	// fedRound and fed count the records feedReplicas saw in a round.
	switchRound, fedRound uint64
	switchAt, fed         int
	switchOwn             bool
	// fo is a FAILOVER's progress (failover.go).
	fo failoverState
	// resumeDB is the database the stream had selected at the clean stop
	// the state was loaded from (loadReplication): where a replica's
	// partial resync continues if nothing selected one since.
	resumeDB int
	// loadedReplica: the state loaded was a replica's (its master's
	// history); the first stream of its own, or the first replica asking,
	// starts a history of its own unless it follows again (shiftIfLoaded).
	loadedReplica bool
}

// noReplID is INFO's master_replid2 when there is no second history.
const noReplID = "0000000000000000000000000000000000000000"

// Replica states, as INFO names them.
const (
	// replWaitBgsave: its full sync's job has not copied the database
	// yet (the stream's marks are kept).
	replWaitBgsave = iota
	// replWaitBgsaveEnd: +FULLRESYNC went; the job writes the RDB's file
	// (the length form). INFO's wait_bgsave, as the one before.
	replWaitBgsaveEnd
	// replSendBulk: the RDB goes to it (INFO's send_bulk).
	replSendBulk
	replOnline
)

// replica is a session's state once it is a replica (session.replica).
type replica struct {
	state      int
	listenPort int64
	ipAddr     string // REPLCONF ip-address
	ackOff     int64
	ackTime    time.Time
	// While waiting for its RDB: the stream since it asked, from offset
	// pendFrom+1, and the marks of every round's end since.
	pend     []byte
	pendFrom int64
	marks    []replMark
	finish   func([]byte)
	psync    bool // PSYNC (+FULLRESYNC first), not SYNC
	// eof: it announced REPLCONF capa eof, so it reads an RDB sent as
	// "$EOF:<mark>\r\n<rdb><mark>" (a diskless sync).
	eof bool
	// asked is when it asked for its full sync; started, whether its sync
	// job was started (until then it waits for more replicas to share it:
	// Redis's WAIT_BGSAVE_START).
	asked   time.Time
	started bool
	// streamOnAck: its RDB went in the diskless form, and the stream
	// since (pend) waits for its first REPLCONF ACK, as in Redis: a
	// replica finds the end mark more simply with nothing glued after it.
	streamOnAck bool
	// job is the sync job serving it (fullsync.go), until it is online;
	// ackedEarly: an acknowledgement came while the RDB was being sent.
	job        *fullSync
	ackedEarly bool
	// physical: it announced capa cellar-physical and gets the
	// database's copy instead of an RDB (physical.go); catchUp: also capa
	// cellar-catchup, so its copy need not wait for a flush.
	physical, catchUp bool
	// rdbOnly: it wants the RDB alone (REPLCONF rdb-only 1, as redis-cli
	// --rdb sends): it is given no stream and disconnected once the RDB
	// is sent, as Redis's replicaPutOnline does.
	rdbOnly bool
}

// replMark is where the stream stood at a round's end.
type replMark struct {
	logPos uint64
	offset int64
	selDB  int
}

// replConf is what REPLCONF told a session before it became a replica.
type replConf struct {
	listenPort int64
	ipAddr     string
	capaEOF    bool
	rdbOnly    bool // REPLCONF rdb-only 1 (redis-cli --rdb)
	// capaPhysical: REPLCONF capa cellar-physical, a Cellar replica that
	// takes the database's copy instead of an RDB (physical.go);
	// capaCatchUp: REPLCONF capa cellar-catchup, one that also takes the
	// redo log's records since the copy, as commands before the stream.
	capaPhysical, capaCatchUp bool
}

// replWait is a blocked WAIT.
type replWait struct {
	s      *session
	n      int64
	target int64 // -1 until the round that blocked it ends
	finish func([]byte)
	w      *waiter
}

var masterCommands = registerCommands([]*Command{
	{Name: "psync", Summary: "Starts replication as a replica: a partial resync from the backlog, or a full one.", Handler: cmdPsync, Defers: true},
	{Name: "sync", Summary: "Starts replication as a replica with a full resync (the protocol before PSYNC).", Handler: cmdPsync, Defers: true},
	{Name: "wait", Summary: "Waits until replicas acknowledged the client's writes, or the timeout.", Handler: cmdWait, Defers: true},
	{Name: "replconf", Summary: "Configures the replication link of a replica: listening port, capabilities, acknowledgements.", Handler: cmdReplconf, whileBusy: (*Actor).busyRun},
	{Name: "failover", Summary: "Switches roles with a replica that has every write: a coordinated failover.", Handler: cmdFailover},
})

// backlogSize is repl-backlog-size.
func (a *Actor) backlogSize() int64 {
	n, err := strconv.ParseInt(a.storedParamValue("repl-backlog-size"), 10, 64)
	if err != nil || n < 1 {
		return 1 << 20
	}
	return n
}

// REPLCONF option value [option value ...], as Redis 7.0's replconfCommand.
func cmdReplconf(c *Ctx) error {
	if len(c.args)%2 == 0 {
		return ErrSyntax
	}
	s := c.s
	for j := 1; j < len(c.args); j += 2 {
		switch {
		case c.argEq(j, "listening-port"):
			port, err := c.intArg(j + 1)
			if err != nil {
				return err
			}
			s.replConf.listenPort = port
			if s.replica != nil {
				s.replica.listenPort = port
			}
		case c.argEq(j, "ip-address"):
			if len(c.args[j+1]) >= 46 {
				return errReplconfIPTooLong(len(c.args[j+1]))
			}
			s.replConf.ipAddr = string(c.args[j+1])
			if s.replica != nil {
				s.replica.ipAddr = s.replConf.ipAddr
			}
		case c.argEq(j, "capa"):
			// eof: the replica reads an RDB with an end mark instead of
			// a length (the diskless form, startPendingSyncs); psync2 and
			// anything else change nothing, as in Redis.
			if c.argEq(j+1, "eof") {
				s.replConf.capaEOF = true
				if s.replica != nil {
					s.replica.eof = true
				}
			}
			if c.argEq(j+1, "cellar-physical") {
				s.replConf.capaPhysical = true
			}
			if c.argEq(j+1, "cellar-catchup") {
				s.replConf.capaCatchUp = true
			}
		case c.argEq(j, "ack"):
			r := s.replica
			if r == nil {
				return nil
			}
			off, err := parseInt(c.args[j+1])
			if err != nil {
				return nil
			}
			if off > r.ackOff {
				r.ackOff = off
			}
			r.ackTime = c.a.roundStart
			if r.state != replOnline {
				r.ackedEarly = true // it has the RDB: the stream may follow it at once
			}
			if r.streamOnAck {
				// The first acknowledgement after a diskless sync: the
				// stream since its RDB goes now.
				r.streamOnAck = false
				if len(r.pend) > 0 {
					c.a.push(s, r.pend, false)
				}
				r.pend = nil
			}
			c.a.checkWaits()
			c.a.checkFailover(c.a.roundStart)
			c.a.checkShutdown(c.a.roundStart)
			return nil // REPLCONF ACK has no reply
		case c.argEq(j, "cellar-relay") && s.master:
			// The master's stream the batch's commands before it came
			// from, as it came (package replica adds it): passed on at
			// the round's end (endStream). Only the current link's
			// connection gets here (dispatch refuses an older one's).
			if m := &c.a.master; m.active {
				m.relay = append(m.relay, c.args[j+1]...)
				m.relayDB = s.db
			}
			return nil
		case c.argEq(j, "cellar-caught-up") && s.master: // REPLCONF cellar-caught-up 1
			// A physical sync's catch-up has run (package replica adds
			// it after the batch that ends it): the data is the master's
			// history at its offset.
			c.a.repl.catchingUp = false
			return nil
		case c.argEq(j, "getack"):
			return nil // only a master asks; its link answers (package replica)
		case c.argEq(j, "rdb-only"):
			v, err := c.intArg(j + 1)
			if err != nil {
				return err
			}
			if v < 0 || v > 1 {
				return ErrRdbOnlyRange
			}
			s.replConf.rdbOnly = v == 1
		default:
			return errReplconfOption(c.args[j])
		}
	}
	c.w.OK()
	return nil
}

// PSYNC replicationid offset, and SYNC: as Redis 7.0's syncCommand.
func cmdPsync(c *Ctx) error {
	a, s := c.a, c.s
	if s.replica != nil {
		return nil // already a replica: ignored, as Redis does
	}
	m := &a.master
	if len(c.args) > 3 && c.argEq(0, "psync") && c.argEq(3, "failover") {
		// The master of a FAILOVER hands over (failover.go): this replica
		// becomes a master, and its answer below continues the old
		// master's history as its second ID.
		a.log.Warn().Str("replid", string(c.args[1])).Msg("replication: failover request received")
		if !a.repl.on {
			return ErrPsyncFailoverMaster
		}
		if string(c.args[1]) != a.repl.replID {
			return ErrPsyncFailoverReplID
		}
		a.stopReplica()
		a.log.Info().Uint64("client", s.id).Str("addr", s.addr).Msg("replication: MASTER MODE enabled (failover request)")
	}
	if m.fo.state != foNone {
		return ErrSyncFailingOver
	}
	a.shiftIfLoaded()
	if !a.logging() {
		return ErrSyncNoLog
	}
	if a.repl.on && (!m.active || !a.repl.r.Status().LinkUp || a.repl.catchingUp) {
		// A replica serves replicas of its own (a chain) from the stream
		// its master sends, so only while it has one (Redis's check),
		// and its data is its master's (a physical sync's catch-up has
		// run: physical.go).
		return ErrNoMasterLink
	}
	psync := c.argEq(0, "psync")
	if !m.active {
		m.active, m.selDB = true, -1
		m.lastPing = a.roundStart
	}
	if id := psyncID(c, psync); psync && (id == a.repl.replID || (id == m.replID2 && id != "")) {
		if from, err := parseInt(c.args[2]); err == nil && (id == a.repl.replID || from <= m.secondOffset) && a.canContinue(from) {
			r := a.addReplica(s, true)
			r.state = replOnline
			r.ackTime = a.roundStart
			w := c.w
			w.Raw([]byte("+CONTINUE " + a.repl.replID + "\r\n"))
			first := m.offset - int64(len(m.backlog)) + 1
			w.Raw(m.backlog[from-first:])
			m.partialOK++
			a.log.Info().Uint64("client", s.id).Str("addr", s.addr).Int64("offset", from).Bool("second_id", id != a.repl.replID).
				Msg("replica: partial resync accepted")
			return nil
		}
	}
	if psync && string(c.args[1]) != "?" {
		m.partialErr++
	}
	finish, err := c.suspendOnJob()
	if err != nil {
		return err
	}
	r := a.addReplica(s, psync)
	r.finish = finish
	r.pendFrom = m.offset
	r.marks = append(r.marks, replMark{logPos: uint64(a.cfg.Log.Written()), offset: m.offset, selDB: m.selDB})
	r.asked = a.roundStart
	m.fullSyncs++
	a.startPendingSyncs(a.roundStart)
	if !r.started {
		a.log.Info().Uint64("client", s.id).Str("addr", s.addr).Msg("replica: full resync: waiting repl-diskless-sync-delay for more replicas to share it")
	}
	return nil
}

// psyncID is the replication ID PSYNC names ("" for SYNC, which names
// none and has no argument).
func psyncID(c *Ctx, psync bool) string {
	if !psync {
		return ""
	}
	return string(c.args[1])
}

// canContinue reports whether the stream from offset from on is still in
// the backlog (Redis's masterTryPartialResynchronization's test).
func (a *Actor) canContinue(from int64) bool {
	m := &a.master
	first := m.offset - int64(len(m.backlog)) + 1
	return from >= first && from <= m.offset+1
}

// addReplica makes s a replica.
func (a *Actor) addReplica(s *session, psync bool) *replica {
	r := &replica{psync: psync, listenPort: s.replConf.listenPort, ipAddr: s.replConf.ipAddr, eof: s.replConf.capaEOF, rdbOnly: s.replConf.rdbOnly,
		physical: s.replConf.capaPhysical && !s.replConf.rdbOnly}
	r.catchUp = r.physical && s.replConf.capaCatchUp
	s.replica = r
	a.master.replicas = append(a.master.replicas, s)
	// Client eviction (maxmemory_clients) spares replicas, as Redis's
	// does; the replica output class bounds them instead.
	s.mem.SetNoEvict(true)
	return r
}

// dropReplica forgets s as a replica (its connection ended).
func (a *Actor) dropReplica(s *session) {
	if s.replica == nil {
		return
	}
	s.replica = nil
	m := &a.master
	for i, r := range m.replicas {
		if r == s {
			m.replicas = append(m.replicas[:i], m.replicas[i+1:]...)
			break
		}
	}
	a.checkWaits()
}

// startPendingSyncs starts one sync job for all the replicas waiting for
// one, as Redis's shouldStartChildReplication decides: at once with
// repl-diskless-sync no, with repl-diskless-sync-delay 0, or when one of
// them cannot read the diskless form; otherwise once the first has waited
// repl-diskless-sync-delay seconds, or repl-diskless-sync-max-replicas
// (when not 0) are waiting. Called when a replica asks and on every
// housekeeping tick.
func (a *Actor) startPendingSyncs(now time.Time) {
	var waiting, physical, catchUp []*session
	var first time.Time
	allEOF := true
	for _, s := range a.master.replicas {
		r := s.replica
		if r.state != replWaitBgsave || r.started {
			continue
		}
		if r.physical {
			// A Cellar replica takes the database's copy, at once: there
			// is no RDB for others to share (physical.go).
			r.started = true
			if r.catchUp {
				catchUp = append(catchUp, s)
			} else {
				physical = append(physical, s)
			}
			continue
		}
		waiting = append(waiting, s)
		if first.IsZero() || r.asked.Before(first) {
			first = r.asked
		}
		allEOF = allEOF && r.eof
	}
	for _, group := range [][]*session{physical, catchUp} {
		if len(group) > 0 {
			a.startFullSync(group, false, true)
		}
	}
	if len(waiting) == 0 {
		return
	}
	diskless := a.storedParamValue("repl-diskless-sync") == "yes"
	delay, _ := strconv.ParseInt(a.storedParamValue("repl-diskless-sync-delay"), 10, 64)
	most, _ := strconv.Atoi(a.storedParamValue("repl-diskless-sync-max-replicas"))
	if diskless && allEOF && delay > 0 && (most <= 0 || len(waiting) < most) && now.Sub(first) < time.Duration(delay)*time.Second {
		return
	}
	for _, s := range waiting {
		s.replica.started = true
	}
	a.startFullSync(waiting, diskless && allEOF, false)
}

// feedReplicas converts one record the round gives the redo log into the
// stream (master.round). The caller checked master.active.
func (a *Actor) feedReplicas(rec []byte) {
	m := &a.master
	if m.fedRound != a.stats.rounds {
		m.fedRound, m.fed = a.stats.rounds, 0
	}
	m.fed++
	if !a.ownRecord(m.fed - 1) {
		return // a replica's: its master's stream is relayed instead
	}
	m.round = m.form.add(m.round, &m.selDB, rec)
}

// recordForm converts redo log records into the commands Redis would
// propagate for them: the live stream's (feedReplicas) and a physical
// sync's catch-up (fullsync.go). Its slices are scratch, reused.
type recordForm struct {
	args, members [][]byte
}

// add appends record rec to the stream dst, with a SELECT first when its
// database is not *selDB (which it updates); a group (an EXEC's, a
// script's) as MULTI ... EXEC. A record that does not decode adds nothing.
func (f *recordForm) add(dst []byte, selDB *int, rec []byte) []byte {
	if members, ok, err := splitGroup(rec, f.members[:0]); ok {
		f.members = members
		if err != nil {
			return dst
		}
		multi := false
		for _, p := range members {
			e, err := decodeEffect(p, f.args[:0])
			if err != nil {
				continue
			}
			f.args = e.args
			if !multi {
				// MULTI goes after the SELECT its first command needs,
				// as Redis propagates it.
				dst = appendSelect(dst, selDB, e.db)
				dst = appendCommand(dst, [][]byte{[]byte("MULTI")})
				multi = true
			}
			dst = appendSelect(dst, selDB, e.db)
			dst = appendCommand(dst, redisForm(e))
		}
		if multi {
			dst = appendCommand(dst, [][]byte{[]byte("EXEC")})
		}
		return dst
	}
	e, err := decodeEffect(rec, f.args[:0])
	if err != nil {
		return dst
	}
	f.args = e.args
	dst = appendSelect(dst, selDB, e.db)
	return appendCommand(dst, redisForm(e))
}

// appendSelect appends SELECT db to dst unless *selDB is db already.
func appendSelect(dst []byte, selDB *int, db int) []byte {
	if db != *selDB {
		dst = appendCommand(dst, [][]byte{[]byte("SELECT"), strconv.AppendInt(nil, int64(db), 10)})
		*selDB = db
	}
	return dst
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(dst []byte, args [][]byte) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// redisForm is the command Redis would propagate for the effect e: the
// record itself, but for the commands whose effect depends on the time
// they ran at, which Redis 7.0 rewrites to absolute forms: their table
// entry's absoluteForm says how.
func redisForm(e effect) [][]byte {
	if len(e.args) < 2 {
		return e.args
	}
	if cmd := Lookup(e.args[0]); cmd != nil && cmd.absoluteForm != nil {
		if args := cmd.absoluteForm(e); args != nil {
			return args
		}
	}
	return e.args
}

// unixMs is, as an argument, the unix time in milliseconds n seconds (or
// milliseconds: !seconds) after the effect ran.
func (e effect) unixMs(n int64, seconds bool) []byte {
	if seconds {
		n *= 1000
	}
	return strconv.AppendInt(nil, e.now+n, 10)
}

// intArg is the effect's argument i as an integer, false if there is none
// or it is not one.
func (e effect) intArg(i int) (int64, bool) {
	if i >= len(e.args) {
		return 0, false
	}
	n, err := parseInt(e.args[i])
	return n, err == nil
}

var (
	pingCmd   = appendCommand(nil, [][]byte{[]byte("PING")})
	getackCmd = appendCommand(nil, [][]byte{[]byte("REPLCONF"), []byte("GETACK"), []byte("*")})
)

// endStream ends the round for the replicas: the stream it added (the
// round's records, converted as they were logged; a due PING; a GETACK a
// WAIT asked for) goes to the backlog, to every online replica, and to the
// waiting ones' pending streams. Called once the round's log write
// succeeded.
func (a *Actor) endStream() {
	m := &a.master
	for _, w := range m.waits {
		if w.target < 0 {
			w.target = m.offset + int64(len(m.round))
		}
	}
	if m.ping {
		m.ping = false
		m.round = append(m.round, pingCmd...)
	}
	if m.getack && m.fo.state == foNone {
		// (Not during a FAILOVER: the offset stands still for it.)
		m.getack = false
		if len(m.replicas) > 0 {
			m.round = append(m.round, getackCmd...)
		}
	}
	if len(m.relay) > 0 {
		// A replica's round: its master's stream, as it came. (Records
		// of its own would follow it, but a role change folds the relay
		// in before any: stopReplica.)
		m.relay = append(m.relay, m.round...)
		m.round, m.relay = m.relay, m.round[:0]
		m.selDB = m.relayDB
		if cap(m.relay) > maxEffectsBuf {
			m.relay = nil
		}
	}
	if len(m.round) > 0 && m.loadedReplica {
		a.shiftIfLoaded()
	}
	b := m.round
	a.addBacklog(b)
	pos := uint64(a.cfg.Log.Written())
	for _, s := range m.replicas {
		r := s.replica
		switch r.state {
		case replOnline:
			if r.streamOnAck {
				r.pend = append(r.pend, b...)
				a.boundPend(s)
			} else if len(b) > 0 {
				a.push(s, append([]byte(nil), b...), false)
			}
		case replWaitBgsave:
			if last := r.marks[len(r.marks)-1]; last.logPos == pos && last.offset == m.offset {
				continue
			}
			r.marks = append(r.marks, replMark{logPos: pos, offset: m.offset, selDB: m.selDB})
			if !r.rdbOnly {
				r.pend = append(r.pend, b...)
				a.boundPend(s)
			}
		case replWaitBgsaveEnd, replSendBulk:
			// Its RDB's offset is known: the stream is kept from there.
			if !r.rdbOnly {
				r.pend = append(r.pend, b...)
				a.boundPend(s)
			}
		}
	}
	m.round = m.round[:0]
	if cap(m.round) > maxEffectsBuf {
		m.round = nil
	}
	if len(m.waits) > 0 {
		a.checkWaits()
	}
}

// boundPend applies the replica output hard limit to the stream replica
// s has not been sent yet (during its full sync, or before its first
// acknowledgement after a diskless one).
func (a *Actor) boundPend(s *session) {
	r := s.replica
	if lim := a.cfg.ReplicaHardLimit; lim > 0 && int64(len(r.pend)) > lim {
		a.log.Warn().Uint64("client", s.id).Str("addr", s.addr).Int("bytes", len(r.pend)).
			Msg("closing replica whose stream reached the replica output hard limit during its full resync")
		r.finish = nil
		a.kill(s)
	}
}

// addBacklog counts b into the stream's offset and keeps it in the
// backlog: the newest backlogSize bytes of the stream. The backlog was
// cut into a new buffer once it passed twice its size, and grew by
// append in between: 4.4 bytes allocated for every byte of the stream.
func (a *Actor) addBacklog(b []byte) {
	m := &a.master
	if len(b) == 0 {
		return
	}
	m.offset += int64(len(b))
	size := a.backlogSize()
	keep := m.backlog
	if over := int64(len(keep)+len(b)) - size; over > 0 {
		if cut := min(over, int64(len(keep))); cut > 0 {
			keep = keep[cut:]
			over -= cut
		}
		b = b[over:]
	}
	if need := int64(len(keep) + len(b)); need > int64(cap(keep)) {
		// Out of room at the buffer's end: what stays moves to its front,
		// in a larger buffer while the backlog still grows towards its
		// size (a backlog of 1 GB is not allocated before the stream is
		// that long), in a smaller one if the size shrank.
		buf := m.backlogBuf
		if c := int64(cap(buf)); (c < 2*need && c < 2*size) || c > 4*size {
			buf = make([]byte, 0, min(2*size, max(4*need, 64<<10)))
		}
		keep = buf[:copy(buf[:len(keep)], keep)] // copy moves overlapping bytes as memmove does
		m.backlogBuf = buf
	}
	m.backlog = append(keep, b...)
}

// resetStream starts the stream kept here anew at offset: the backlog
// is emptied (a replica's full sync, or a stream that does not meet its
// master's).
func (a *Actor) resetStream(offset int64, db int) {
	m := &a.master
	m.active, m.offset, m.selDB = true, offset, db
	m.backlog, m.relay, m.round = m.backlog[:0], m.relay[:0], m.round[:0]
}

// dropReplicas disconnects every replica of this server (Redis's
// disconnectSlaves): the history they follow changed, and they learn how
// when they ask again (+CONTINUE with the new ID, or a full resync).
func (a *Actor) dropReplicas() {
	for len(a.master.replicas) > 0 {
		s := a.master.replicas[0]
		s.replica.finish = nil // a suspended PSYNC goes unanswered
		a.kill(s)
		a.dropReplica(s)
	}
}

// noteRoleChange records, before the role changes, how many of the
// round's records were made in the role before (feedReplicas).
func (a *Actor) noteRoleChange() {
	m := &a.master
	if m.switchRound != a.stats.rounds {
		m.switchRound, m.switchAt, m.switchOwn = a.stats.rounds, a.effectsMark(), !a.repl.on
	}
}

// ownRecord reports whether the round's i-th record is this server's own
// write, converted into the stream, rather than a replica's copy of its
// master's, which is relayed as the master sent it.
func (a *Actor) ownRecord(i int) bool {
	m := &a.master
	if m.switchRound == a.stats.rounds && i < m.switchAt {
		return m.switchOwn
	}
	return !a.repl.on
}

// replHousekeeping is the replication cron's part: the PING every
// repl-ping-replica-period seconds, and a newline a second to a replica
// waiting for its RDB.
func (a *Actor) replHousekeeping(now time.Time) {
	m := &a.master
	if m.fo.state == foWaitSync {
		a.checkFailover(now)
		if a.pause.release {
			a.releasePaused(now) // it aborted
		}
	}
	a.checkShutdown(now) // the timeout, or replicas gone
	if !m.active || len(m.replicas) == 0 {
		return
	}
	a.startPendingSyncs(now)
	period, _ := strconv.Atoi(a.storedParamValue("repl-ping-replica-period"))
	if now.Sub(m.lastPing) >= time.Duration(max(period, 1))*time.Second {
		m.lastPing = now
		// A replica's replicas get its master's PINGs, relayed; none
		// during a FAILOVER, which waits for the offset to be reached.
		m.ping = !a.repl.on && m.fo.state == foNone
		for _, s := range m.replicas {
			// Not while the RDB is sent: a newline inside it would
			// corrupt it (Redis sends them only before).
			if st := s.replica.state; st == replWaitBgsave || st == replWaitBgsaveEnd {
				a.pushSync(s, []byte("\n"))
			}
		}
	}
}

// pushReplicaLimits applies the replica output class to replica s whose
// replies now hold out bytes.
func (a *Actor) pushReplicaLimits(s *session, out int64) {
	hard, soft := a.cfg.ReplicaHardLimit, a.cfg.ReplicaSoftLimit
	switch {
	case hard > 0 && out > hard:
	case soft > 0 && out > soft:
		now := a.roundStart
		if s.softSince.IsZero() {
			s.softSince = now
			return
		}
		if a.cfg.ReplicaSoftTime <= 0 || now.Sub(s.softSince) <= a.cfg.ReplicaSoftTime {
			return
		}
	default:
		s.softSince = time.Time{}
		return
	}
	a.log.Warn().Uint64("client", s.id).Str("addr", s.addr).Int64("bytes", out).
		Msg("closing replica that reached the replica output buffer limit")
	a.kill(s)
	a.cfg.Clients.Release(s.mem)
}

// acks counts the replicas that acknowledged offset off.
func (a *Actor) acks(off int64) int64 {
	n := int64(0)
	for _, s := range a.master.replicas {
		if r := s.replica; r.state == replOnline && r.ackOff >= off {
			n++
		}
	}
	return n
}

// checkWaits answers the WAITs whose replicas have acknowledged enough.
func (a *Actor) checkWaits() {
	m := &a.master
	kept := m.waits[:0]
	for _, w := range m.waits {
		if w.w.done {
			continue
		}
		if w.target >= 0 {
			if n := a.acks(w.target); n >= w.n {
				w.finish(intReply(n))
				continue
			}
		}
		kept = append(kept, w)
	}
	clear(m.waits[len(kept):])
	m.waits = kept
}

func intReply(n int64) []byte { return append(strconv.AppendInt([]byte(":"), n, 10), '\r', '\n') }

// WAIT numreplicas timeout, as Redis 7.0's waitCommand: answered at once
// when enough replicas acknowledged the stream so far (or inside MULTI or
// a script); otherwise the client waits until they do or the timeout, and
// the round's end asks every replica for an acknowledgement (REPLCONF
// GETACK). The offset waited for is the stream's end after the WAIT's
// round: at least the client's last write (Redis's c->woff), perhaps more.
func cmdWait(c *Ctx) error {
	a := c.a
	if a.repl.on {
		return ErrWaitReplica
	}
	n, err := c.intArg(1)
	if err != nil {
		return err
	}
	ms, err := parseInt(c.args[2])
	switch {
	case err != nil:
		return ErrTimeoutNotInteger
	case ms < 0:
		return ErrTimeoutNegative
	}
	m := &a.master
	pending := len(m.round) > 0 || len(a.eff.ends) > 0
	if got := a.acks(m.offset); (!pending && got >= n) || n <= 0 || c.noBlock || c.s.tx != nil {
		c.w.Int(got)
		return nil
	}
	w := &waiter{}
	rw := &replWait{s: c.s, n: n, target: -1, w: w}
	w.onTimeout = func() []byte { return intReply(a.acks(rw.target)) }
	if err := c.block(w, ms); err != nil {
		return err
	}
	rw.finish = func(reply []byte) { a.complete(w, reply, false) }
	m.waits = append(m.waits, rw)
	m.getack = true
	return nil
}

// replicaAddr is the address INFO and ROLE give for replica s.
func replicaAddr(s *session) string {
	if s.replica.ipAddr != "" {
		return s.replica.ipAddr
	}
	host, _, err := net.SplitHostPort(s.addr)
	if err != nil {
		return s.addr
	}
	return host
}

// infoMaster writes INFO replication's master fields.
func (a *Actor) infoMaster(kv func(k string, v any)) {
	kv("role", "master")
	a.infoReplicas(kv)
	a.infoHistory(kv)
}

// infoReplicas writes the fields about this server's replicas, a
// master's or a replica's (a chain).
func (a *Actor) infoReplicas(kv func(k string, v any)) {
	m := &a.master
	kv("connected_slaves", len(m.replicas))
	if m.minToWrite > 0 && m.minMaxLag > 0 {
		kv("min_slaves_good_slaves", a.goodReplicas())
	}
	now := time.Now()
	for i, s := range m.replicas {
		r := s.replica
		state := "wait_bgsave"
		lag := int64(0)
		switch r.state {
		case replSendBulk:
			state = "send_bulk"
		case replOnline:
			state = "online"
			lag = int64(now.Sub(r.ackTime) / time.Second)
		}
		kv("slave"+strconv.Itoa(i), fmt.Sprintf("ip=%s,port=%d,state=%s,offset=%d,lag=%d", replicaAddr(s), r.listenPort, state, r.ackOff, lag))
	}
}

// infoHistory writes the replication history's fields: the IDs, the
// offset, the backlog.
func (a *Actor) infoHistory(kv func(k string, v any)) {
	m := &a.master
	kv("master_failover_state", m.fo.String())
	kv("master_replid", a.repl.replID)
	id2, off2 := m.replID2, m.secondOffset
	if id2 == "" {
		id2, off2 = noReplID, -1
	}
	kv("master_replid2", id2)
	kv("master_repl_offset", m.offset)
	kv("second_repl_offset", off2)
	kv("repl_backlog_active", b2i(m.active))
	kv("repl_backlog_size", a.backlogSize())
	first := int64(0)
	if m.active {
		first = m.offset - int64(len(m.backlog)) + 1
	}
	kv("repl_backlog_first_byte_offset", first)
	kv("repl_backlog_histlen", len(m.backlog))
}

// roleMaster writes ROLE's master form: the offset and the online
// replicas' address, port and acknowledged offset, as bulk strings.
func (a *Actor) roleMaster(w *proto.Writer) {
	m := &a.master
	w.Array(3)
	w.BulkString("master")
	w.Int(m.offset)
	n := 0
	for _, s := range m.replicas {
		if s.replica.state == replOnline {
			n++
		}
	}
	w.Array(n)
	for _, s := range m.replicas {
		r := s.replica
		if r.state != replOnline {
			continue
		}
		w.Array(3)
		w.BulkString(replicaAddr(s))
		w.BulkString(strconv.FormatInt(r.listenPort, 10))
		w.BulkString(strconv.FormatInt(r.ackOff, 10))
	}
}

// applyReplParams takes in min-replicas-to-write and min-replicas-max-lag
// after a CONFIG SET (they are stored parameters, read on every write
// only through these two fields).
func (a *Actor) applyReplParams() {
	m := &a.master
	m.minToWrite, _ = strconv.ParseInt(a.storedParamValue("min-replicas-to-write"), 10, 64)
	m.minMaxLag, _ = strconv.ParseInt(a.storedParamValue("min-replicas-max-lag"), 10, 64)
	m.noStale = a.storedParamValue("replica-serve-stale-data") == "no"
}

// enoughReplicas is Redis's checkGoodReplicasStatus: with
// min-replicas-to-write and min-replicas-max-lag both set, a write needs
// that many online replicas whose last acknowledgement is at most the lag
// old (in whole seconds, as Redis counts it). Redis recounts once a
// second; Cellar counts at the write.
func (a *Actor) enoughReplicas() bool {
	m := &a.master
	return m.minToWrite <= 0 || m.minMaxLag <= 0 || a.goodReplicas() >= m.minToWrite
}

// goodReplicas counts the online replicas acknowledged within
// min-replicas-max-lag seconds.
func (a *Actor) goodReplicas() int64 {
	m := &a.master
	now := a.roundStart.Unix()
	good := int64(0)
	for _, s := range m.replicas {
		if r := s.replica; r.state == replOnline && now-r.ackTime.Unix() <= m.minMaxLag {
			good++
		}
	}
	return good
}
