// Package storage owns Cellar's keyspace and its SQLite database: the
// storage engine (the mem*.go files and package object), which holds the
// keys the actor touches in memory as whole objects and writes SQLite only
// in its flush; the file's schema and migrations (one row per key in the
// keys table, one table per collection type for the elements); expiry; and
// the typed operations the actor builds Redis commands from. The engine's
// own invariants are at the top of memkeys.go; docs/architecture.md,
// "Storage engine", describes it.
//
// Who may call it: a Store belongs to the actor goroutine; none of its
// methods are safe for concurrent use, except those documented otherwise
// (SyncWAL, Flush.Run, Checkpointing, which run on the offload pool or
// anywhere). Storage knows nothing of RESP, sockets or commands; it returns
// domain errors (ErrWrongType, ErrNotInteger, ...) that the actor maps to
// Redis's texts.
//
// Invariants of the file (schema.go):
//   - Binary safety: keys, values, fields and members are BLOBs everywhere.
//   - A list's elements sit at contiguous positions of list_items (index i
//     at head+i), and a list is never empty (memlist.go).
//   - Every key has exactly one row in keys; a collection's elements live in
//     its type's table under the key's id, and go when the key goes
//     (delete, overwrite by another type, expiry, FLUSHDB).
//   - A hash, set or sorted set keeps its element count in its keys row
//     (value) and never exists empty. A stream keeps its entry count in its
//     keys row too, its metadata in a streams row, and may exist empty (as
//     in Redis); its entries, groups, consumers and PEL go with its key.
//   - A value too large for its row lives in blobs (blobs.go).
//
// Invariants of the operations:
//   - Every write records what it changed (touched.go): a caller never
//     reports a change by hand.
//   - A key's version never repeats for its name (versions.go).
//   - An expired key is never visible: every lookup checks its expiry, and a
//     key found expired is deleted on the spot (lazy expiry); the sweeper
//     deletes the rest in bounded slices (SweepExpired).
//   - What a flush commits is in the WAL (synchronous=NORMAL) and survives
//     a process crash. Durability beyond that rests on the redo log
//     (package storage/redo): each flush stores the log position it covers
//     (StartFlush), and the WAL is fsynced (SyncWAL, on the offload
//     pool) only before the log is trimmed, as docs/architecture.md,
//     "Durability", describes.
//   - The schema carries its version; Open migrates forward and refuses a
//     database that is newer, foreign or corrupt rather than start empty.
package storage
