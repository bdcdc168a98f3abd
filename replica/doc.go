// Package replica is the replica side of Redis's replication protocol: the
// link from Cellar to a master (REPLICAOF host port, or the replicaof
// setting). It dials the master, makes the handshake (PING, AUTH with
// masterauth/masteruser, REPLCONF listening-port and capa eof psync2,
// PSYNC), receives the RDB of a full sync (disk-based "$<len>" and
// disk-less "EOF:<mark>" transfers) and loads it while it streams — or,
// from a Cellar master, the master's SQLite snapshot (capa
// cellar-physical, "$SQLITE:<len>:<db>"), written to a file, checked and
// imported by the actor's flush (physical.go), and with capa
// cellar-catchup the records the snapshot misses, as commands run before
// the stream (follow.go) — then
// follows the master's command stream (each batch of it ending with
// REPLCONF cellar-relay and the batch's bytes as they came, so that the
// actor keeps the stream in its backlog and passes it on to replicas of
// its own: PSYNC2 and chains, actor/master.go), acknowledging its offset
// (REPLCONF ACK every second and on GETACK) and reconnecting with back-off
// and a partial resync (PSYNC replid offset) when the link drops.
//
// The session follows seed 004's shape: back-fill (the RDB, loaded in
// batches into staging databases), a waitlist (the commands the master
// sends meanwhile, held in memory up to replica.backlog_max_bytes; past
// it the sync is abandoned and started again, never applied in part), the
// "caught up" point (the load swapped in, the waitlist applied, a log
// line), then following.
//
// Goroutines: per link, the link goroutine (handshake, RDB decoding,
// command parsing and submission: everything that waits on the master),
// the pump (reads the socket into the bounded queue, so the waitlist
// fills while the load runs) and the acknowledger (REPLCONF ACK every
// second). The actor is reached only through its goroutine-safe API: Call
// for the load steps (Actor.ReplicaBegin, ReplicaLoad, ReplicaPromote),
// and Open/Submit/Closed for the master's connection, exactly as an event
// loop reaches it; the replies come back through Link.Deliver and are
// dropped (a replica never answers its master, except REPLCONF ACK).
// Manager's methods are called by the actor (REPLICAOF) and never block.
//
// One cleanup path: whatever ends a link's session (an error, the master
// closing, CLIENT KILL of the master's connection, REPLICAOF elsewhere or
// NO ONE, shutdown), session's deferred teardown closes the socket, stops
// the pump and the acknowledger, and closes the master's connection in
// the actor.
package replica
