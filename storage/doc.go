// Package storage owns Cellar's SQLite database: its schema and migrations,
// the keyspace (one row per key in the keys table, one table per collection
// type for the elements), expiry bookkeeping, and the typed operations the
// actor builds Redis commands from.
//
// Who may call it: a Store belongs to the actor goroutine; none of its
// methods are safe for concurrent use, except those documented otherwise
// (SyncWAL, Checkpoint helpers that run on the offload pool). Storage knows
// nothing of RESP, sockets or commands; it returns domain errors
// (ErrWrongType, ErrNotInteger, ...) that the actor maps to Redis's texts.
//
// Invariants:
//   - Binary safety: keys, values, fields and members are BLOBs everywhere.
//   - A list's elements sit at contiguous positions of list_items (index i
//     at head+i), and a list is never empty: every write that empties one
//     deletes its key (lists.go).
//   - Every key has exactly one row in keys; a collection's elements live in
//     its type's table under the key's id, and go when the key goes
//     (delete, overwrite by another type, expiry, FLUSHDB).
//   - A hash, set or sorted set keeps its element count in its keys row
//     (value), changed only through Coll and EndCommand, and never exists
//     empty: EndCommand deletes a collection whose count reached 0. The hot
//     cache may hold a count and version ahead of the row; they are written
//     back before any statement on the keys table, a commit or a savepoint
//     (writeback.go), so SQLite's copy is never read stale.
//   - An element's new state (HSET, SADD, ZADD) or removal may wait in
//     memory for the flush; a collection's are written before any statement
//     on its element table other than the point lookups, which look at them
//     first, and the reads of its rows, which skip the removed ones
//     (elems.go).
//   - A stream (streams.go) keeps its entry count in its keys row too, its
//     metadata in a streams row, and may exist empty (as in Redis); its
//     entries, groups, consumers and PEL go with its key.
//   - Every write records what it changed (touched.go): a caller never
//     reports a change by hand.
//   - A key's version never repeats for its name (versions.go).
//   - An expired key is never visible: every lookup checks expire_at, and a
//     key found expired is deleted on the spot (lazy expiry); the sweeper
//     deletes the rest in bounded slices (SweepExpired).
//   - Writes happen only inside the transaction the actor opens per round
//     (Begin/Commit); what Commit returns is in the WAL (synchronous=NORMAL)
//     and survives a process crash. Durability beyond that rests on the
//     redo log (package storage/redo): each commit stores the log position
//     it covers (SetRedoPosition), and the WAL is fsynced (SyncWAL, on the
//     offload pool) only before the log is trimmed, as docs/architecture.md,
//     "Durability", describes.
//   - The schema carries its version; Open migrates forward and refuses a
//     database that is newer, foreign or corrupt rather than start empty.
//
// The in-memory engine (Options.Memory; the mem*.go files and package
// object) runs the same operations on whole objects held in memory and
// writes SQLite only in its flush, on a connection of its own; its
// invariants are at the top of memkeys.go. Each Store method it covers
// hands over to it first. docs/architecture.md, "Storage engine", says
// what it covers so far.
package storage
