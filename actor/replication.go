package actor

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/rdb"
	"github.com/cellar-db/cellar/storage"
)

// The replica side of Redis's replication, as the actor sees it: the role
// (REPLICAOF, SLAVEOF, ROLE, INFO replication), the refusal of client
// writes while a replica, and the three steps of a full sync that touch
// the keyspace (ReplicaBegin, ReplicaLoad, ReplicaPromote). The network
// side — the link to the master, the handshake, reading the RDB and the
// command stream — is package replica's; it reaches the actor only
// through Call (the load) and through an ordinary connection (Open,
// Submit) whose session is flagged master: the master's commands run
// through the dispatcher like anybody's, are logged to the redo log, wake
// waiters and notify.
//
// A full sync loads into the staging databases (storage.StagingDB + db),
// which no client can select, in batches that each run as one message of
// the actor, so clients are served between batches; the live databases
// are replaced only once the RDB is loaded whole (ReplicaPromote), so a
// sync that fails half-way leaves the previous data as it was.

// Replicator runs the replica's link to a master (package replica). Its
// methods are called on the actor goroutine and must not block.
type Replicator interface {
	// Follow starts following a master, ending any previous link.
	Follow(f FollowSpec)
	// Unfollow ends the link.
	Unfollow()
	// Status is the link's state; it is goroutine-safe.
	Status() ReplicaStatus
}

// FollowSpec is a REPLICAOF for the link.
type FollowSpec struct {
	// Host and Port are the master's; Gen the link's generation.
	Host string
	Port int
	Gen  uint64
	// ReplID and Offset, when ReplID is not empty, are the history to ask
	// a partial resync of (a master that becomes a replica asks with its
	// own, Redis's replicationCacheMasterUsingMyself); otherwise the link
	// asks with the history of the data it last synced, if any.
	ReplID string
	Offset int64
	// DB is the database the stream had selected at Offset (with ReplID).
	DB int
	// AnnounceIP and AnnouncePort are replica-announce-ip and
	// replica-announce-port as REPLICAOF found them ("" and 0: the
	// link's own address, and the port Cellar listens on).
	AnnounceIP   string
	AnnouncePort int
	// Failover: this server is the old master of a FAILOVER; the link's
	// PSYNC carries FAILOVER until the target answers, and the answer is
	// reported (Actor.FailoverAnswered).
	Failover bool
}

// ReplicaStatus is what INFO replication and ROLE show of the link.
type ReplicaStatus struct {
	// State is ROLE's: connect, connecting, handshake, sync, connected.
	State          string
	LinkUp         bool
	LastIO         time.Time
	LinkDownSince  time.Time
	SyncInProgress bool
	// SyncTotal is the RDB's size (-1 while unknown: a disk-less
	// transfer), SyncRead the bytes read of it.
	SyncTotal, SyncRead int64
	SyncLastIO          time.Time
	// ReplID and Offset: the master's replication ID and the offset the
	// data reflects (every command up to it applied).
	ReplID string
	Offset int64
	// ReadOffset is the offset of the stream read so far.
	ReadOffset int64
}

// replState is the actor's replication state.
type replState struct {
	r Replicator
	// host and port of the master; on while a replica.
	host string
	port int
	on   bool
	// readOnly: a replica refuses clients' writes (replica-read-only yes).
	readOnly bool
	// gen numbers the links: each REPLICAOF makes a new one, and the
	// calls of an older link are refused.
	gen uint64
	// link is the session id of the current link's master connection.
	link uint64
	// replID is this server's own replication ID as a master.
	replID string
	// catchingUp: the data took its master's history from a physical
	// sync's copy whose catch-up has not all run yet (physical.go), so
	// it is not yet the history's at that offset: not saved for a
	// restart, not kept as the second ID by a promotion.
	catchingUp bool
}

var errStaleLink = errors.New("actor: the replication link was replaced")

func newReplID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var replicationCommands = registerCommands([]*Command{
	{Name: "replicaof", Summary: "Makes the server a replica of another (or, with NO ONE, a master).", Handler: cmdReplicaOf},
	{Name: "slaveof", Summary: "Makes the server a replica of another (the old name of REPLICAOF).", Handler: cmdReplicaOf},
	{Name: "role", Summary: "Returns the server's role in replication.", Handler: cmdRole},
})

// SetReplicator gives the actor its link runner. Call before Run.
func (a *Actor) SetReplicator(r Replicator) { a.repl.r = r }

// ReplicaOf makes the server a replica of host:port as REPLICAOF does
// (the replicaof setting at start-up). Not from the actor goroutine.
func (a *Actor) ReplicaOf(host string, port int) {
	a.Call(func() { a.replicaOf(host, port) })
}

// replicaOfValue is CONFIG's replicaof: "host port" while a replica, ""
// as a master (so CONFIG REWRITE persists the role, as Redis's
// rewriteConfigReplicaOfOption does, and a Sentinel's promotion or
// demotion survives a restart).
func (a *Actor) replicaOfValue() string {
	if !a.repl.on {
		return ""
	}
	return a.repl.host + " " + strconv.Itoa(a.repl.port)
}

// REPLICAOF host port | REPLICAOF NO ONE (and SLAVEOF)
func cmdReplicaOf(c *Ctx) error {
	a := c.a
	if a.master.fo.state != foNone {
		return ErrReplicaOfFailover
	}
	if c.argEq(1, "no") && c.argEq(2, "one") {
		if a.repl.on {
			a.log.Info().Str("master", a.repl.host+":"+strconv.Itoa(a.repl.port)).Msg("replica: REPLICAOF NO ONE: keeping the data and accepting writes as a master")
			a.stopReplica()
		}
		c.w.OK()
		return nil
	}
	port, err := c.intArg(2)
	if err != nil || port < 0 || port > 65535 {
		return ErrInvalidMasterPort
	}
	host := string(c.args[1])
	if a.repl.on && a.repl.host == host && a.repl.port == int(port) {
		c.w.Simple("OK Already connected to specified master")
		return nil
	}
	if a.repl.r == nil {
		return ErrNoReplication
	}
	a.replicaOf(host, int(port))
	c.w.OK()
	return nil
}

func (a *Actor) replicaOf(host string, port int) { a.replicaOfSpec(host, port, false) }

// replicaOfSpec is replicaOf; failover: as the old master of a FAILOVER.
func (a *Actor) replicaOfSpec(host string, port int, failover bool) {
	if a.repl.r == nil {
		return
	}
	wasMaster := !a.repl.on
	// Clients blocked while this server served data of its own are
	// told, and disconnected, whichever role it had (Redis 7.0's
	// replicationSetMaster).
	a.disconnectBlocked(ErrUnblockedRole)
	a.noteRoleChange()
	a.master.loadedReplica = false // its saved history is followed again
	a.repl.gen++
	a.repl.on, a.repl.readOnly = true, true
	a.gate.replica.Store(true)
	a.repl.host, a.repl.port = host, port
	a.repl.link = 0
	a.log.Info().Str("master", host+":"+strconv.Itoa(port)).Msg("replica: following a master (REPLICAOF)")
	m := &a.master
	f := FollowSpec{Host: host, Port: port, Gen: a.repl.gen, AnnounceIP: a.storedParamValue("replica-announce-ip"), Failover: failover}
	f.AnnouncePort, _ = strconv.Atoi(a.storedParamValue("replica-announce-port"))
	switch {
	case m.active && a.logging():
		// A master asks its new master to continue its own history (a
		// replica of it promoted holds it as its second ID); a replica
		// changing masters, the history of its data: its old master's
		// stream as far as it ran here (what the old link read beyond is
		// refused from now on, ErrStaleMaster, so it is not in the data).
		// The offset is known once this round's writes, or relayed
		// stream, are in the stream kept here, after the round (a flush,
		// as for SAVE).
		a.afterFlush = append(a.afterFlush, func() {
			if a.repl.on && a.repl.gen == f.Gen {
				f.ReplID, f.Offset, f.DB = a.repl.replID, m.offset, m.streamDB()
				a.repl.r.Follow(f)
			}
		})
	case !wasMaster:
		// A replica that has no stream of its own kept (it never
		// synced): the link asks with the history of its data, if any.
		a.repl.r.Follow(f)
	default:
		f.ReplID, f.Offset, f.DB = a.repl.replID, m.offset, m.streamDB()
		a.repl.r.Follow(f)
	}
}

// streamDB is the database the stream has selected at its end, as a
// master continuing its history as a replica asks from: the one selected
// since, else the one a clean stop saved (a replica restarted: its
// master's stream continues there). After a master's own history the new
// master's stream starts with a SELECT anyway.
func (m *master) streamDB() int {
	if m.selDB >= 0 {
		return m.selDB
	}
	return m.resumeDB
}

// stopReplica is the one way out of the replica role (REPLICAOF NO ONE):
// the link ends, the data stays, writes are accepted, and this server
// starts a history of its own, keeping the one it followed as its second
// ID up to the offset it reached (Redis's shiftReplicationId), so that
// replicas that followed the same master continue from it with
// +CONTINUE. Its own replicas are disconnected to learn the new ID.
func (a *Actor) stopReplica() {
	a.noteRoleChange()
	a.repl.gen++
	a.repl.on, a.repl.readOnly = false, false
	a.gate.replica.Store(false)
	a.repl.link = 0
	m := &a.master
	// The master's stream that this round ran so far belongs to the
	// history being closed: into the backlog with it (no replica gets
	// it now: they are all disconnected below).
	a.addBacklog(m.relay)
	m.relay = m.relay[:0]
	m.replID2, m.secondOffset = a.repl.replID, m.offset+1
	if a.repl.catchingUp {
		// Its data is not its master's at that offset: nobody may
		// continue that history from it.
		a.repl.catchingUp = false
		m.replID2, m.secondOffset = "", -1
		a.log.Warn().Msg("replication: made a master before a physical sync's catch-up had run; its data is partly its old master's, and no replica can continue that history from it")
	}
	a.repl.replID = newReplID()
	m.selDB = -1 // the new history starts with a SELECT
	a.dropReplicas()
	a.log.Info().Str("replid", a.repl.replID).Str("replid2", m.replID2).Int64("second_repl_offset", m.secondOffset).
		Msg("replication: a new replication ID; the old one stays valid up to the offset reached")
	if a.repl.r != nil {
		a.repl.r.Unfollow()
	}
}

// refuseStale is replica-serve-stale-data no (Redis 7.0's processCommand):
// while a replica's link is not up — down, or syncing in full — a client's
// command without the STALE flag (and an EXEC of a queue holding one) is
// refused with -MASTERDOWN, where Redis checks it: after -READONLY, before
// MULTI queues. The caller checked master.noStale.
func (a *Actor) refuseStale(s *session, cmd *Command, w *proto.Writer) bool {
	if !a.repl.on || s.master || a.depth > 0 {
		return false
	}
	if cmd.Is(FlagStale) && (!cmd.runsQueue || s.tx == nil || a.queueIsStale(s.tx)) {
		return false
	}
	if a.repl.r.Status().LinkUp {
		return false
	}
	a.reject(s, cmd, string(ErrMasterDown), w)
	return true
}

// queueIsStale reports whether every command of tx may run on stale data.
func (a *Actor) queueIsStale(tx *txState) bool {
	for _, args := range tx.queue {
		if c := a.Lookup(args[0]); c != nil && !c.Is(FlagStale) {
			return false
		}
	}
	return true
}

// ROLE
func cmdRole(c *Ctx) error {
	a := c.a
	if !a.repl.on {
		a.roleMaster(c.w)
		return nil
	}
	st := a.repl.r.Status()
	c.w.Array(5)
	c.w.BulkString("slave")
	c.w.BulkString(a.repl.host)
	c.w.Int(int64(a.repl.port))
	c.w.BulkString(st.State)
	if st.LinkUp {
		c.w.Int(st.Offset)
	} else {
		c.w.Int(-1)
	}
	return nil
}

// infoReplication writes INFO's replication section as Redis 7.0 does.
func (a *Actor) infoReplication(kv func(k string, v any)) {
	if !a.repl.on {
		a.infoMaster(kv)
		return
	}
	st := a.repl.r.Status()
	now := time.Now()
	kv("role", "slave")
	kv("master_host", a.repl.host)
	kv("master_port", a.repl.port)
	kv("master_link_status", map[bool]string{true: "up", false: "down"}[st.LinkUp])
	lastIO := -1
	if !st.LastIO.IsZero() {
		lastIO = int(now.Sub(st.LastIO) / time.Second)
	}
	kv("master_last_io_seconds_ago", lastIO)
	kv("master_sync_in_progress", b2i(st.SyncInProgress))
	kv("slave_read_repl_offset", st.ReadOffset)
	kv("slave_repl_offset", st.Offset)
	if st.SyncInProgress {
		kv("master_sync_total_bytes", st.SyncTotal)
		kv("master_sync_read_bytes", st.SyncRead)
		left := int64(-1)
		perc := "0.00"
		if st.SyncTotal > 0 {
			left = st.SyncTotal - st.SyncRead
			perc = strconv.FormatFloat(float64(st.SyncRead)*100/float64(st.SyncTotal), 'f', 2, 64)
		}
		kv("master_sync_left_bytes", left)
		kv("master_sync_perc", perc)
		kv("master_sync_last_io_seconds_ago", int(now.Sub(st.SyncLastIO)/time.Second))
	}
	if !st.LinkUp {
		down := -1
		if !st.LinkDownSince.IsZero() {
			down = int(now.Sub(st.LinkDownSince) / time.Second)
		}
		kv("master_link_down_since_seconds", down)
	}
	prio, _ := strconv.Atoi(a.storedParamValue("replica-priority"))
	kv("slave_priority", prio)
	kv("slave_read_only", 1)
	kv("replica_announced", b2i(a.storedParamValue("replica-announced") == "yes"))
	a.infoReplicas(kv)
	a.infoHistory(kv)
}

// replicaCall runs fn on the actor for link generation gen, refusing a
// link that REPLICAOF has since replaced. From the link's goroutine.
func (a *Actor) replicaCall(gen uint64, fn func() error) error {
	err := errStaleLink
	a.Call(func() {
		if a.repl.on && a.repl.gen == gen {
			err = fn()
		}
	})
	return err
}

// ReplicaAttach makes connection id (opened by the link of generation gen
// with ConnInfo.Master) the master's: its commands are obeyed.
func (a *Actor) ReplicaAttach(gen, id uint64) error {
	return a.replicaCall(gen, func() error {
		a.repl.link = id
		return nil
	})
}

// ReplicaBegin starts a full sync: the staging databases are emptied.
func (a *Actor) ReplicaBegin(gen uint64) error {
	return a.replicaCall(gen, func() error {
		defer a.st.ResetTouched()
		for db := range storage.NumDBs {
			if err := a.st.FlushDB(storage.StagingDB + db); err != nil {
				return err
			}
		}
		return nil
	})
}

// ReplicaLoad writes a batch of keys of the RDB being loaded into the
// staging databases; a key met twice keeps its last value.
func (a *Actor) ReplicaLoad(gen uint64, recs []*rdb.Record) error {
	return a.replicaCall(gen, func() error {
		defer a.st.ResetTouched()
		a.st.Now = a.nowMs
		for _, r := range recs {
			if r.DB < 0 || r.DB >= storage.NumDBs {
				return errors.New("replica: the master's RDB names database " + strconv.Itoa(r.DB) + ", beyond Cellar's 16")
			}
			db := storage.StagingDB + r.DB
			if _, err := a.st.Delete(db, r.Key); err != nil {
				return err
			}
			err := writeObject(a.st, db, r.Key, r.Value, r.ExpireAt)
			if serr := a.st.EndCommand(); err == nil {
				err = serr
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// ReplicaPromote ends a full sync: every live database is replaced by its
// staging copy, and the SQLite transaction is flushed at the end of the
// round, so that the loaded data (which the redo log does not hold) is
// durable before anything else is acknowledged on top of it. functions
// are the RDB's function libraries, which replace the server's. The data
// now belongs to the master's history, replID at offset, with database
// db selected by its stream: this server's replication ID and offset
// become those (Redis's replica takes its master's), the backlog starts
// there, and this server's own replicas, which followed another history,
// are disconnected.
func (a *Actor) ReplicaPromote(gen uint64, functions [][]byte, replID string, offset int64, db int) error {
	return a.replicaCall(gen, func() error {
		a.dropReplicas()
		a.repl.replID = replID
		a.master.replID2, a.master.secondOffset = "", -1
		a.resetStream(offset, db)
		defer a.st.ResetTouched()
		for db := range storage.NumDBs {
			if err := a.st.FlushDB(db); err != nil {
				return err
			}
			if err := a.st.SwapDB(db, storage.StagingDB+db); err != nil {
				return err
			}
		}
		if err := a.loadSynced(functions); err != nil { // registry.go
			return err
		}
		a.afterFlush = append(a.afterFlush, func() {})
		return nil
	})
}

// ReplicaContinue is a partial resync's start (+CONTINUE replID): the
// master continues the stream after offset, the end of what this server
// has. A master that names a new replication ID (it was promoted, or
// follows another master now) gives its old one to this server as a
// second ID up to offset, and this server's replicas are disconnected to
// learn it (Redis's slaveTryPartialResynchronization).
func (a *Actor) ReplicaContinue(gen uint64, replID string, offset int64) error {
	return a.replicaCall(gen, func() error {
		m := &a.master
		if got := m.offset + int64(len(m.relay)); !m.active || got != offset {
			if m.active {
				a.log.Warn().Int64("stream_offset", got).Int64("master_offset", offset).
					Msg("replica: the stream kept here does not end where the master continues; starting the backlog anew")
			}
			a.dropReplicas()
			a.resetStream(offset, m.selDB)
		}
		if replID != a.repl.replID {
			a.addBacklog(m.relay)
			m.relay = m.relay[:0]
			m.replID2, m.secondOffset = a.repl.replID, m.offset+1
			a.repl.replID = replID
			a.dropReplicas()
			a.log.Info().Str("replid", replID).Str("replid2", m.replID2).Int64("second_repl_offset", m.secondOffset).
				Msg("replica: the master's replication ID changed; the old one stays valid up to the offset reached")
		}
		return nil
	})
}
