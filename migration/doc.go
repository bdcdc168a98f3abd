// Package migration is the client side of MIGRATE: it connects to the
// target server, sends the commands the actor built for it (AUTH, then
// SELECT when needed, one RESTORE per key) and reads their one-line
// replies, with the timeout, the 64 KiB writes, the line reads, the single
// retry and the cache of connections of Redis 7.0's migrateCommand
// (src/cluster.c; docs/commands.md, "MIGRATE", has the behaviour).
//
// It owns the sockets and nothing else: what to send and what to do with
// the result (the reply, which keys to delete) is the actor's
// (actor/migrate.go). Sockets.Run waits on the network, so it runs on a
// goroutine of its own, never on the actor. Sockets is goroutine-safe: a
// mutex guards the cache, each cached connection is used by one Run at a
// time, and an idle one is closed by its own timer after 10 seconds.
package migration
