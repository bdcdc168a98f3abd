package actor

import (
	"time"
)

// housekeeping runs the periodic work: a slice of active expiry, and the
// once-a-second fsync of durability everysec.
func (a *Actor) housekeeping(now time.Time) {
	a.nextSweep = now.Add(a.cfg.SweepInterval)
	a.sweepMore = false
	// No sweep during CLIENT PAUSE, as in Redis, nor after DEBUG
	// SET-ACTIVE-EXPIRE 0, nor while a flush has SQLite (redolog.go): it
	// would wait for it, and the next one catches up.
	flying := a.st.Flying()
	if a.roundErr == nil && !a.pause.on && !a.noActiveExpire && !flying {
		a.st.Now = a.nowMs
		t0 := time.Now()
		n, err := a.st.SweepExpired(a.cfg.SweepBatch)
		hn := 0
		if err == nil {
			// Hash fields past their expiry (a hash emptied goes too).
			hn, err = a.st.SweepExpiredFields(a.cfg.SweepBatch)
		}
		a.lat.sample(evExpireCycle, time.Since(t0))
		if err != nil {
			a.roundErr = err
		} else {
			a.stats.expiredKeys += uint64(n)
			// A full slice means more are due: go on next round, after
			// whatever clients sent meanwhile.
			a.sweepMore = n == a.cfg.SweepBatch || hn == a.cfg.SweepBatch
		}
		a.keysTouched() // the sweep's deletions are changes like any other
		// The families' background work (registry.go: search's back-fill).
		if a.housekeepFamilies() {
			a.sweepMore = true // work left: go on next round
		}
	}
	a.trimLog()
	if a.cfg.IdleTimeout > 0 && !now.Before(a.nextIdleCheck) {
		a.nextIdleCheck = now.Add(time.Second)
		a.closeIdle(now)
	}
	if a.cfg.Durability == Everysec && now.Sub(a.lastSync) >= time.Second {
		a.lastSync = now
		a.durable.syncSoon(a.syncSeq())
	}
	if !now.Before(a.nextMemLimit) {
		a.nextMemLimit = now.Add(time.Second)
		a.followMemoryLimit()
	}
	a.replHousekeeping(now) // PINGs and keep-alives to replicas (master.go)
	a.sampleInstant(now)    // INFO instantaneous_* (ops.go)
}

// closeIdle closes the clients idle for longer than timeout, as Redis's
// clientsCronHandleTimeout: not a blocked client (its command waits), not
// one held by CLIENT PAUSE, not a subscriber.
func (a *Actor) closeIdle(now time.Time) {
	limit := time.Duration(a.cfg.IdleTimeout) * time.Second
	for _, s := range a.sessions {
		if s.blocked != nil || s.held > 0 || s.subscribed || s.killed || now.Sub(s.lastActive) <= limit {
			continue
		}
		a.log.Debug().Uint64("client", s.id).Str("addr", s.addr).Msg("closing idle client")
		a.kill(s)
	}
}
