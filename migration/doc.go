// Package migration is the client side of MIGRATE: it connects to the
// target server, sends the commands the actor built for it (AUTH, SELECT,
// one RESTORE per key) and reads their one-line replies, with the timeout,
// the 64 KiB writes, the line reads and the single retry of Redis 7.0's
// migrateCommand (src/cluster.c).
//
// It owns the socket and nothing else: what to send and what to do with
// the result (the reply, which keys to delete) is the actor's
// (actor/migrate.go). Run waits on the network, so it must run on a
// goroutine of its own, never on the actor; it touches no shared state and
// is safe from any goroutine. Each call dials its own connection and
// closes it before it returns (Redis keeps its sockets for ten seconds; see
// docs/commands.md, "MIGRATE").
package migration
