package actor

import (
	"strconv"
	"strings"
	"time"
)

// FAILOVER, Redis 6.2's coordinated switch of a master and one of its
// replicas (Redis 7.0's replication.c, failoverCommand and
// updateFailoverStatus, is the reference; its replies are Redis's):
//
//  1. FAILOVER [TO host port [FORCE]] [TIMEOUT ms] pauses writes (the
//     pause of CLIENT PAUSE WRITE, pause.go, with no end) and the state
//     becomes waiting-for-sync. No PING and no REPLCONF GETACK go into the
//     stream meanwhile, so that the offset stands still.
//  2. Whenever a replica acknowledges (REPLCONF ACK) and once per
//     housekeeping tick, the master looks for the target (or, without TO,
//     any online replica) whose acknowledged offset is the master's whole
//     stream. Past TIMEOUT it aborts, or with FORCE switches anyway.
//  3. The switch (failover-in-progress): the master becomes a replica of
//     the target (replicaOf, asking to continue its own history), and its
//     link sends PSYNC <replid> <offset+1> FAILOVER. The target, a replica
//     whose ID is that replid, becomes a master (stopReplica: the old ID
//     its second one) and answers +CONTINUE with its new ID: nothing is
//     sent in full, nothing is lost.
//  4. The link reports the answer (FailoverAnswered): +CONTINUE or
//     +FULLRESYNC ends the failover, writes are released (as a replica's,
//     they get -READONLY); an error answer aborts it: this server becomes
//     a master again (a new ID, as Redis's replicationUnsetMaster).
//
// FAILOVER ABORT ends a failover in either state; while one runs,
// REPLICAOF and PSYNC are refused. Only the actor touches the state.
//
// The pause is a hold of CLIENT PAUSE's machinery (pause.go): CLIENT
// UNPAUSE does not lift it, and a CLIENT PAUSE found or given meanwhile
// goes on after it if its time is not up.

// Failover states, as INFO's master_failover_state names them.
const (
	foNone = iota
	foWaitSync
	foInProgress
)

// failoverState is a FAILOVER's progress (master.fo).
type failoverState struct {
	state int
	// host and port: the target (empty host: any replica, until one has
	// caught up).
	host string
	port int64
	// force: switch at the timeout even to a replica behind; end: the
	// timeout (zero: none).
	force bool
	end   time.Time
}

func (f *failoverState) String() string {
	switch f.state {
	case foWaitSync:
		return "waiting-for-sync"
	case foInProgress:
		return "failover-in-progress"
	}
	return "no-failover"
}

// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds]
func cmdFailover(c *Ctx) error {
	a := c.a
	fo := &a.master.fo
	if len(c.args) == 2 && c.argEq(1, "abort") {
		if fo.state == foNone {
			return ErrNoFailover
		}
		a.abortFailover("Failover manually aborted")
		c.w.OK()
		return nil
	}
	var (
		timeout int64
		force   bool
		port    int64
		host    string
		hasHost bool
	)
	for j := 1; j < len(c.args); j++ {
		switch {
		case c.argEq(j, "timeout") && j+1 < len(c.args) && timeout == 0:
			ms, err := c.intArg(j + 1)
			if err != nil {
				return err
			}
			if ms <= 0 {
				return ErrFailoverTimeout
			}
			timeout = ms
			j++
		case c.argEq(j, "to") && j+2 < len(c.args) && !hasHost:
			p, err := c.intArg(j + 2)
			if err != nil {
				return err
			}
			host, port, hasHost = string(c.args[j+1]), p, true
			j += 2
		case c.argEq(j, "force") && !force:
			force = true
		default:
			return ErrSyntax
		}
	}
	switch {
	case fo.state != foNone:
		return ErrFailoverRunning
	case a.repl.on:
		return ErrFailoverReplica
	case len(a.master.replicas) == 0:
		return ErrFailoverNoReplicas
	case force && (timeout == 0 || !hasHost):
		return ErrFailoverForce
	}
	if hasHost {
		s := a.findReplica(host, port)
		if s == nil {
			return ErrFailoverNotReplica
		}
		if s.replica.state != replOnline {
			return ErrFailoverNotOnline
		}
		a.log.Info().Str("target", host+":"+strconv.FormatInt(port, 10)).Msg("replication: FAILOVER requested")
	} else {
		a.log.Info().Msg("replication: FAILOVER requested to any replica")
	}
	*fo = failoverState{state: foWaitSync, host: host, port: port, force: force}
	if timeout > 0 {
		fo.end = time.UnixMilli(c.now).Add(time.Duration(timeout) * time.Millisecond)
	}
	a.holdWrites(holdFailover)
	c.w.OK()
	return nil
}

// findReplica is the replica that announced host (or connects from it)
// and listens on port, as Redis's findReplica.
func (a *Actor) findReplica(host string, port int64) *session {
	for _, s := range a.master.replicas {
		if strings.EqualFold(replicaAddr(s), host) && s.replica.listenPort == port {
			return s
		}
	}
	return nil
}

// checkFailover advances a FAILOVER waiting for its replica (Redis's
// updateFailoverStatus): called when a replica acknowledges and on every
// housekeeping tick. The offset compared is the stream's end, so only
// when the round has added nothing to it yet.
func (a *Actor) checkFailover(now time.Time) {
	m := &a.master
	fo := &m.fo
	if fo.state != foWaitSync {
		return
	}
	if !fo.end.IsZero() && !now.Before(fo.end) {
		if fo.force {
			a.log.Info().Str("target", fo.host+":"+strconv.FormatInt(fo.port, 10)).
				Msg("replication: FAILOVER timeout exceeded, failing over")
			a.switchForFailover()
			return
		}
		a.abortFailover("Replica never caught up before timeout")
		return
	}
	if len(m.round) > 0 || len(a.eff.ends) > 0 {
		return // this round's writes are not counted in the offset yet
	}
	var target *session
	if fo.host != "" {
		if s := a.findReplica(fo.host, fo.port); s != nil && s.replica.state == replOnline && s.replica.ackOff == m.offset {
			target = s
		}
	} else {
		for _, s := range m.replicas {
			if s.replica.state == replOnline && s.replica.ackOff == m.offset {
				target = s
				fo.host, fo.port = replicaAddr(s), s.replica.listenPort
				break
			}
		}
	}
	if target == nil {
		return
	}
	a.log.Info().Str("target", fo.host+":"+strconv.FormatInt(fo.port, 10)).Int64("offset", m.offset).
		Msg("replication: FAILOVER target is synced, failing over")
	a.switchForFailover()
}

// switchForFailover makes this server a replica of the target; its link
// sends PSYNC ... FAILOVER.
func (a *Actor) switchForFailover() {
	fo := &a.master.fo
	fo.state = foInProgress
	a.replicaOfSpec(fo.host, int(fo.port), true)
}

// FailoverAnswered is the link's report of the target's answer to PSYNC
// ... FAILOVER: rejected is "" for +CONTINUE or +FULLRESYNC (the
// failover is done), else why the failover aborts. From the link's
// goroutine, for link generation gen.
func (a *Actor) FailoverAnswered(gen uint64, rejected string) error {
	return a.replicaCall(gen, func() error {
		if a.master.fo.state != foInProgress {
			return nil
		}
		if rejected != "" {
			a.abortFailover(rejected)
			return nil
		}
		a.log.Info().Str("master", a.repl.host+":"+strconv.Itoa(a.repl.port)).
			Msg("replication: FAILOVER done: this server is a replica of the target")
		a.clearFailover()
		return nil
	})
}

// abortFailover ends a failover that did not complete; one past the
// switch turns this server back into a master (Redis's abortFailover).
func (a *Actor) abortFailover(why string) {
	fo := &a.master.fo
	if fo.state == foNone {
		return
	}
	target := "any replica"
	if fo.host != "" {
		target = fo.host + ":" + strconv.FormatInt(fo.port, 10)
	}
	a.log.Info().Str("target", target).Str("reason", why).Msg("replication: FAILOVER aborted")
	if fo.state == foInProgress && a.repl.on {
		a.stopReplica()
	}
	a.clearFailover()
}

// clearFailover forgets the failover and releases the writes it held.
func (a *Actor) clearFailover() {
	a.releaseWrites(holdFailover, a.roundStart)
	a.master.fo = failoverState{}
}
