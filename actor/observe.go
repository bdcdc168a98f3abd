package actor

import (
	"context"
	"errors"
	"strings"
)

// Observation is what the metrics endpoint reads from the actor at a
// scrape: every INFO field, and each called command's counters and
// execution-time histogram. It is taken on the actor goroutine (one
// message, between rounds), so commands pay nothing for it beyond the
// counters INFO keeps anyway.
type Observation struct {
	// Info is INFO everything's fields by name (sections merged; the
	// keyspace lines under "db0" …, commandstats under "cmdstat_…").
	Info map[string]string
	// Commands are the commands called since the start (or the last
	// CONFIG RESETSTAT).
	Commands []CommandObservation
	// Errors counts error replies by code (INFO errorstats).
	Errors map[string]uint64
	// Writable says writes are accepted: no fsync or log write failed
	// (such a failure refuses writes until restart).
	Writable bool
}

// CommandObservation is one command's counters.
type CommandObservation struct {
	Name                    string // "get", "client|list"
	Calls, Rejected, Failed uint64
	Latency                 Histogram
}

// ErrNotAnswering is Observe's and Ping's error when the actor does not
// answer within the context's deadline (it is stuck, or busy with a long
// script) or has stopped.
var ErrNotAnswering = errors.New("actor: not answering")

// Ping reports whether the actor goroutine answers a message within
// ctx's deadline. Safe from any goroutine but the actor's.
func (a *Actor) Ping(ctx context.Context) error {
	return a.callCtx(ctx, func() {})
}

// Observe takes an Observation on the actor within ctx's deadline. Safe
// from any goroutine but the actor's.
func (a *Actor) Observe(ctx context.Context) (*Observation, error) {
	o := &Observation{Info: map[string]string{}, Errors: map[string]uint64{}}
	err := a.callCtx(ctx, func() {
		var b strings.Builder
		for _, sec := range infoSections {
			a.infoSection(&b, sec)
		}
		for _, line := range strings.Split(b.String(), "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
				o.Info[k] = v
			}
		}
		add := func(cmd *Command) {
			st := &a.cmdStats[cmd.idx]
			if st.calls == 0 && st.rejected == 0 && st.failed == 0 {
				return
			}
			co := CommandObservation{Name: cmd.Name, Calls: st.calls, Rejected: st.rejected, Failed: st.failed}
			if st.hist != nil {
				co.Latency = *st.hist
			}
			o.Commands = append(o.Commands, co)
		}
		for _, cmd := range commands.list {
			add(cmd)
			for _, sub := range cmd.Subs {
				add(sub)
			}
		}
		for k, v := range a.errorStats {
			o.Errors[k] = v
		}
		o.Writable = a.durable.failure() == nil && a.flushFailed == nil
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// callCtx runs fn on the actor between rounds and waits for it, at most
// until ctx is done. fn still runs later if the wait gave up; it must
// only write to memory the caller no longer reads then (Observe's fn
// fills o, which the caller drops on an error).
func (a *Actor) callCtx(ctx context.Context, fn func()) error {
	done := make(chan struct{})
	a.in.put(message{kind: msgCall, fn: func() { fn(); close(done) }})
	select {
	case <-done:
		return nil
	case <-a.done:
		return ErrNotAnswering
	case <-ctx.Done():
		return ErrNotAnswering
	}
}

// Writable reports whether writes are accepted: false once an fsync or a
// redo log write failed (writes are then refused until restart). Safe
// from any goroutine.
func (a *Actor) Writable() bool { return a.durable.failure() == nil }
