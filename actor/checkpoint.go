package actor

import (
	"context"
	"time"

	"github.com/cellar-db/cellar/offload"
)

// startCheckpoint runs phase 1 of a checkpoint (storage/checkpoint.go) on
// the offload pool; when it ends, the actor runs phase 2 between rounds.
func (a *Actor) startCheckpoint() {
	ck := a.st.Checkpointer()
	a.ckptRunning = true
	job := &offload.Job{Run: func() {
		t0 := time.Now()
		err := ck.Passive()
		a.lat.observe(evCheckpoint, time.Since(t0))
		a.in.put(message{kind: msgCall, fn: func() {
			a.ckptRunning = false
			if err != nil {
				a.log.Warn().Err(err).Msg("checkpoint (phase 1) failed; will retry")
				return
			}
			a.ckptRest = true
		}})
	}}
	if err := a.pool.Submit(context.Background(), job, offload.NoWait); err != nil {
		a.ckptRunning = false // the pool is full or closing: try again later
	}
}

// checkpointRest is phase 2, on the actor, with no transaction open: now
// if none is, else when the next flush lands, between its commit and the
// next BEGIN (a flush and a wait for it here stopped every client for the
// flush's whole commit: the 1000-client p99's 80-110 ms).
func (a *Actor) checkpointRest() {
	a.ckptRest = false
	if a.st.InTx() || a.st.Flying() {
		a.ckptAtLand = true
		a.st.CheckpointRestAtLand()
		return
	}
	t0 := time.Now()
	err := a.st.CheckpointRest()
	a.restDone(time.Since(t0), err)
}

// restDone takes phase 2's outcome.
func (a *Actor) restDone(took time.Duration, err error) {
	a.lat.observe(evCheckpointFinish, took)
	if err != nil {
		a.log.Warn().Err(err).Msg("checkpoint (phase 2) failed; will retry")
	}
}
