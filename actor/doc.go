// Package actor is Cellar's storage actor: ONE goroutine that owns the
// keyspace (held in memory by storage, which the flush writes to SQLite on
// the offload pool), the redo log's writer, the command table, every
// client session (database, protocol, name, auth), blocked-client waiters
// and expiry. It executes batches of commands in arrival order and builds
// their reply bytes; it never touches a socket and never waits on the
// network.
//
// Who calls what, from which goroutine:
//   - The loop calls Open, Submit and Closed from its own goroutines. They
//     only append to the actor's inbox (a mutex-guarded queue with a
//     one-slot doorbell) and never block on the actor.
//   - Everything else runs on the actor goroutine (Run). Handlers must not
//     block; disk work that does (fsync, checkpoints, snapshots) goes to the
//     offload pool, which reports back through callbacks that touch only
//     goroutine-safe state.
//   - Actor.Lookup (the table through the configured command renames) and
//     Actor.Gate (atomics: protected mode, whether new clients must
//     authenticate) are safe from any goroutine; the loops use both.
//   - Lookup and IsBlocking read the immutable command table and are safe
//     from any goroutine.
//   - The replica link (package replica) reaches the actor as a loop
//     does (Open, Submit, Closed; its master connection's session is
//     flagged master) and through Call for the steps of a full sync
//     (ReplicaBegin, ReplicaLoad, ReplicaPromote: replication.go).
//   - MIGRATE's exchange with its target runs on a goroutine of its own
//     in package migration, over connections it caches; its result comes
//     back to the actor as a call (migrate.go).
//   - Scripts returns the ScriptWatch, which the loops read for every
//     command (one atomic load) to answer -BUSY and kill a script running
//     past busy-reply-threshold (scripting.go); it is goroutine-safe.
//
// Invariants (numbered as in docs/architecture.md, "Invariants"):
//  1. Single ownership: sessions and the keyspace are touched only here.
//     A Batch's arguments were copied by the loop and belong to the actor
//     once submitted; a Completion's reply bytes belong to the loop once
//     delivered.
//  2. In-order replies: a session's batches run in submission order, and
//     each completion carries the batch's sequence number for the loop's
//     reply FIFO. A push (Pub/Sub message, keyspace notification, tracking
//     invalidation) carries the number of the client's last batch the
//     actor ran, and leaves after that batch's replies (pubsub.go,
//     tracking.go).
//  3. Counting notification: Sink.Deliver is the loop's counting mailbox;
//     the actor hands each round's completions over in one call per sink.
//  4. Generation-checked delivery: completions name their connection by
//     client id, never reused; the loop drops those for closed connections.
//     A blocked client's waiter completes at most once: whichever of push,
//     timeout, CLIENT UNBLOCK, disconnect or CLIENT KILL comes first
//     unregisters it everywhere; the others find it done (blocking.go).
//  5. One cleanup path: a session ends only in endSession, whatever the
//     trigger (loop close, CLIENT KILL, shutdown); it cancels the session's
//     waiter first, so no element is ever popped for a gone client, then
//     ends its transaction and watches (resetState, shared with RESET) and
//     forgets batches held by CLIENT PAUSE.
//  6. No reply before its data is as durable as configured: a round's
//     writes commit, and their effects are written to the redo log
//     (redolog.go), before any of its replies leave; with durability
//     "always" the replies wait for the log fsync that covers the commit
//     (group commit on the offload pool), and so does any reply given while
//     an earlier commit is not yet fsynced. A woken waiter's reply joins the
//     completions of the round whose write woke it and popped for it.
//  7. Bounded: the inbox is bounded by the loops' back-pressure (they stop
//     reading when Backlog is high); per-session state is bounded by the
//     command arguments' limits; replies are charged to their client's
//     memory as they are built (clientmem.go), and a batch stops at the
//     output hard limit or when the client memory budget evicts its
//     client; waiters by Config's MaxWaitersPerKey, MaxTotalWaiters and
//     MaxKeysPerWait (refused beyond them); timeouts share one heap and
//     one timer; a MULTI queue by MaxQueuedBytes (and the client memory
//     budget, as MemMulti), watched keys by MaxWatchedKeys.
package actor
