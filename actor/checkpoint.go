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

// checkpointRest is phase 2, on the actor, with no transaction open.
func (a *Actor) checkpointRest() {
	a.ckptRest = false
	t0 := time.Now()
	err := a.st.CheckpointRest()
	a.lat.observe(evCheckpointFinish, time.Since(t0))
	if err != nil {
		a.log.Warn().Err(err).Msg("checkpoint (phase 2) failed; will retry")
	}
}
