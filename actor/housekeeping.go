package actor

import (
	"time"
)

// housekeeping runs the periodic work: a slice of active expiry, and the
// once-a-second fsync of durability everysec.
func (a *Actor) housekeeping(now time.Time) {
	a.nextSweep = now.Add(a.cfg.SweepInterval)
	a.sweepMore = false
	if a.roundErr == nil && !a.pause.on { // no active expiry during CLIENT PAUSE, as in Redis
		a.st.Now = a.nowMs
		n, err := a.st.SweepExpired(a.cfg.SweepBatch)
		if err != nil {
			a.roundErr = err
		} else {
			a.stats.expiredKeys += uint64(n)
			// A full slice means more are due: go on next round, after
			// whatever clients sent meanwhile.
			a.sweepMore = n == a.cfg.SweepBatch
		}
		a.keysTouched() // the sweep's deletions are changes like any other
		if a.search.n > 0 && a.roundErr == nil && a.backfillStep() {
			a.sweepMore = true // an index still filling: go on next round
		}
	}
	if a.roundErr == nil {
		// Free the blobs of large values whose rows went (storage/blobs.go).
		if err := a.st.CollectGarbage(); err != nil {
			a.roundErr = err
		}
	}
	a.trimLog()
	if !a.ckptRunning && !a.ckptRest && a.st.NeedsCheckpoint() {
		a.startCheckpoint()
	}
	if a.cfg.Durability == Everysec && now.Sub(a.lastSync) >= time.Second {
		a.lastSync = now
		a.durable.syncSoon(a.syncSeq())
	}
}
