// Package ops serves Cellar's HTTP port for operators and orchestrators:
// /metrics in Prometheus's text format, /healthz and /readyz for load
// balancers and Kubernetes probes, and, when enabled, Go's pprof profiles
// under /debug/pprof/.
//
// Who calls what: the root package (cellar.go) makes a Server with the
// actor and the offload pool, starts it after the loops accept clients,
// and marks it draining on SIGTERM before anything closes. Every handler
// runs on net/http's goroutines and reads the server only through
// goroutine-safe calls: Actor.Observe and Actor.Ping (one message to the
// actor, bounded by a deadline), the atomic histograms of fsyncs,
// flushes, rounds and checkpoints, and offload.Pool.Stats. Nothing here
// adds work to a command: a scrape costs the actor one message that
// copies the counters INFO already keeps.
package ops
