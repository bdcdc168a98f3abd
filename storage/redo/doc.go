// Package redo is Cellar's redo log: an append-only sequence of opaque
// records in numbered segment files, written once per actor round, fsynced
// on the offload pool, read back at start-up (and later by replicas) from
// any position. It knows nothing of commands or SQLite; docs/architecture.md,
// "Durability", says how the actor uses it.
//
// # What it owns
//
// One directory (the caller passes, say, <data>/redo) and the segment files
// in it: 00000000000000000000.log, ... named by the Position of their first
// record (20 digits, so names sort in log order), plus at most a few
// *.log.pending files (see Rollover), and a LOCK file that an open Log
// holds an exclusive flock on (a second Open of the directory, from this
// process or another, is refused). Other files there are ignored.
//
// # Positions
//
// A Position is a byte offset in the logical log: the total size of the
// record frames before it, segment headers excluded. It survives rollover
// (a segment's header records the position of its first record, so a new
// segment continues where the last one ended) and restarts (Open resumes
// at the end of the last segment, or at Options.Start if that is later).
// Byte offsets rather than record numbers because a reader can then seek
// straight to a position (the segment is found by its name; the file
// offset is header size + position - segment base) without an index or a
// scan, and the difference of two positions is the lag in bytes, which is
// what bounds a replica's catch-up or a flush. A position that is not a
// record boundary is detected: each record's checksums are seeded with its
// own position (format.go), so a frame read at the wrong place fails.
//
// # Format
//
// Each segment starts with a 32-byte header (magic, format version, the
// base position, a CRC32C of the header). Each record is a 12-byte frame
// (payload length + 1, CRC32C of position and length, CRC32C of position,
// length and payload) followed by the payload; format.go has the layout.
// The length's own checksum lets a reader trust it before reading the
// payload, so a damaged length is caught at once and recovery can search
// for valid records after a damaged one cheaply. Storing length + 1 keeps a
// run of zero bytes from ever parsing as a record.
//
// # Who may call what
//
//   - The writer (the actor goroutine): Append, Buffered, Write. Append
//     only copies into a buffer it reuses (no allocation once it has
//     grown); Write hands the round's records to the kernel in one
//     write(2) (pwrite at the segment's end) and never fsyncs.
//   - Any goroutine (the offload pool, the actor, a replica feed): Sync,
//     Truncate, NewReader and Replay, Written, Synced, Oldest, Err.
//   - Close: by the owner, once the writer has stopped; it waits for a
//     running Sync.
//
// Concurrency, explicitly: the writer's buffer, end position and current
// segment are the writer's alone. It publishes the end of each completed
// Write in an atomic (Written). Sync and Close are serialised by syncMu.
// The segment list and the per-segment flags (pending, durable, syncing,
// removed, the open descriptor) are guarded by mu, which the writer takes
// only when it starts a new segment, Sync takes twice per call (never
// while fsyncing), Truncate while unlinking, and a Reader while it opens
// a segment. A sealed segment's end is an atomic, so a Reader checks it
// without the mutex. Concurrent WriteAt and Sync on one descriptor are
// safe (*os.File).
//
// # Rollover
//
// When the current segment has reached Options.SegmentSize, the next Write
// first creates the next segment, and writes its header together with the
// round's records. The writer never fsyncs, so at that moment the previous
// segment may hold unsynced data; if the machine crashed, the new segment
// could survive while the end of the previous one did not, and the log
// would have a hole. So a new segment is created as <base>.log.pending. A
// pending segment counts as part of the log only if the log before it is
// intact up to its base; a hole before it is a torn tail, not damage.
// Sync fsyncs every segment holding unsynced data and then renames the
// pending segments (oldest first) to their final names and fsyncs the
// directory; from then on the segments before them are known durable, and
// any flaw in them is damage. Open does the same for what it keeps.
//
// # Recovery (Open)
//
// Segments are checked in order, every record's checksums included. Call
// the last final segment and any pending ones after it the tail zone.
//   - Before the tail zone, anything wrong (a bad header or record, a
//     segment that does not start where the previous one ended) is a
//     *CorruptError naming the file and offset: Open refuses. Never a
//     silent loss.
//   - In the tail zone, the first flaw (a partial or bad record, a bad
//     header, a pending segment that does not start where the log ended)
//     is a torn tail if no valid record follows it in its file: the file is
//     cut at the last good record (removed if its header is bad), later
//     pending segments are removed, and Recovery.Torn says where and how
//     many bytes. If a valid record does follow, it is damage: Open
//     refuses with a *CorruptError.
//   - An empty or missing directory starts a fresh log. Segments wholly
//     before Options.Start are removed, and a log that ends before Start
//     restarts at Start, so positions never fall behind what the caller
//     has applied elsewhere.
//
// Open fsyncs the tail zone and the directory before it returns, so what
// it replays is durable.
//
// A known limit of this strictness: after a machine crash, a file's
// unsynced pages may reach the disk out of order, so the last segment can
// hold a hole followed by intact records. Open refuses that (the rule is
// never to drop a valid record silently) although the records after the
// hole were never fsynced; the operator decides (the error names file and
// offset; truncating the file there is the torn-tail treatment by hand).
// A process crash cannot cause it: the kernel keeps the page cache.
//
// # Durability and errors
//
//   - Write's records are in the kernel when it returns: they survive the
//     process being killed, not a machine crash.
//   - Sync's returned position P: every Write that returned before Sync
//     was called ended at or before P, and everything before P survives a
//     machine crash.
//   - A failed fsync (of a segment or the directory) is sticky: that Sync
//     and every later Sync, Write and Append return the same error. The
//     log never retries: after a failed fsync the kernel may have dropped
//     the dirty pages and reported the error once, so a later success
//     would prove nothing.
//   - A failed write is cut off again (ftruncate to the previous end) and
//     returned; the round's records are not in the log. If the cut fails
//     too, the error is sticky.
//
// # Truncate
//
// Truncate(before) unlinks segments whose records all end at or before
// before, oldest first, never the current segment, and never fsyncs: if a
// crash undoes some unlinks, the leftovers lie before the caller's stored
// position and Open removes them given Options.Start.
//
// # Invariants
//
//   - Positions only grow: across Writes, rollovers and restarts.
//   - Every file byte before Written is part of a complete record; every
//     record below Synced is durable.
//   - The current segment is the last in the list and is never removed;
//     l.segs is never empty while the log is open.
//   - A final (non-pending) segment has every segment before it durable.
//   - Bounded: a payload over Options.MaxRecord and a round over
//     Options.MaxBuffered are refused by Append; a segment exceeds
//     SegmentSize by at most one Write; the append buffer is dropped
//     after an unusually large round; Open reads one segment at a time.
package redo
