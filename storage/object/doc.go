// Package object holds Cellar's keys in memory as whole Redis objects: the
// structures the storage engine keeps its working set in (docs/
// architecture.md, "Storage engine"). It knows nothing of SQLite, RESP or
// commands; package storage loads objects from SQLite rows and writes what
// changed back in the flush.
//
// Rules every type here follows:
//   - An object belongs to the actor goroutine; none of its methods are safe
//     for concurrent use. The one exception is the Delta its Freeze returns,
//     which the flush reads on the offload pool while the actor goes on
//     changing the object: a Delta shares nothing the actor will write.
//   - A []byte an object stores is never written to again: a new value
//     replaces the slice. So a Delta (and a reply) may share stored values
//     without copying them. Callers hand over slices they will not change
//     (copy what sits in a reused buffer first); what a getter returns is
//     the object's and must not be changed.
//   - Each object records what changed since its last Freeze: per element
//     (a field set, a member removed, an item pushed), or "all" when every
//     row is to be rewritten (a new object, or a change that moves every
//     row). A key written many times between two flushes is written once.
//   - Size is the object's footprint in bytes, as storage.max_memory counts
//     it: the bytes of its names and values plus a fixed overhead per
//     element (measured, not exact).
//   - Small collections use a compact form, as Redis uses listpacks: a
//     slice searched linearly, in insertion order. Past SmallMax elements
//     they move for good to their large form: for hashes and sets a hash
//     table by name that keeps storage order too (table.go), for sorted
//     sets that and a tree by score; lists are a ring, streams a tree by
//     ID.
package object
