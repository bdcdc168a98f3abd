// Package loop is Cellar's network front: a gnet v2 engine with one event
// loop per core. Each connection is owned by exactly one loop. On traffic,
// the loop parses every complete command in the connection's inbound buffer,
// copies their arguments once, and hands them to the actor as one Batch;
// replies come back as completions through the loop's counting mailbox and
// leave in request order through the connection's reply FIFO.
//
// Goroutines: gnet calls the EventHandler methods on the owning loop's
// goroutine; the mailbox drain runs there too (gnet's Execute). Deliver is
// the only method other goroutines call (the actor, offload workers).
//
// Invariants (numbered as in docs/architecture.md, "Invariants"):
//  1. Single ownership: a connection's socket, buffers, parser and FIFO are
//     touched only on its loop. Everything sent to the actor is a copy
//     (batchBuilder, in conn.go, is the one crossing).
//  2. In-order replies: each batch gets the next sequence number; a
//     completion that arrives early waits in the FIFO until those before
//     it are written. A push (Completion.Push: a Pub/Sub message) waits
//     until the batch whose number it carries is written, then follows it
//     without advancing the FIFO.
//  3. Counting notification: Deliver appends to the mailbox and rings gnet's
//     doorbell only when no drain is scheduled; a drain empties the mailbox
//     completely before it stops, so no completion is ever stranded and one
//     wakeup carries many completions.
//  4. Generation-checked delivery: completions name the client id, which is
//     never reused; a completion whose id is not in the loop's table (closed
//     connection, even with its fd reused) is dropped.
//  5. One cleanup path: gnet's OnClose is the only place a connection ends,
//     whatever asked for it (EOF, read/write error, protocol error, QUIT,
//     CLIENT KILL, output limit, shutdown); teardown runs once, in canonical
//     order.
//  6. No reply before its data is as durable as configured: the actor's
//     business; the loop writes only what it is delivered (and, itself,
//     only protocol, maxclients and protected mode's -DENIED errors, and while a script runs past
//     busy-reply-threshold -BUSY, -NOAUTH and the replies of the commands
//     Redis runs then: SCRIPT/FUNCTION KILL, MULTI, EXEC, WATCH, UNWATCH,
//     DISCARD, AUTH, HELLO, RESET, QUIT (conn.busy, reading
//     actor.ScriptWatch and actor.Gate), which depend on no data).
//  7. Bounded: a query buffer above its limit closes the connection; a
//     connection with too many batches in flight, a blocked command, output
//     above the soft limit, or while the actor's backlog is high, stops
//     being parsed and, once it holds input, stops being read (readpause.go:
//     its bytes wait in the kernel and TCP pushes back on the client); the
//     loop charges each connection's input and unsent output to the
//     client memory budget (maxmemory_clients, actor/clientmem.go), which
//     evicts the client using the most; output above its limit closes the
//     connection.
//
// Before any command runs, the loop applies what needs no actor round
// trip, from the actor's Gate (atomics the actor keeps up to date):
// protected mode refuses a non-loopback client, and an unauthenticated
// client's requests are held to Redis's limits (10 arguments, 16 KiB
// bulks); before authentication AUTH, HELLO and RESET travel alone, like a
// blocking command, so what follows them is parsed with the limits their
// outcome sets. With proxy_protocol, a connection from a configured load
// balancer must start with a PROXY header (proxy.go); its session is
// opened with the actor only once the header names the client.
package loop
