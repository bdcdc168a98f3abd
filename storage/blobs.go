package storage

// Large values live outside their rows.
//
// keys, list_items and hashes are WITHOUT ROWID tables: their rows sit in
// the primary key's B-tree. When a row is larger than a B-tree cell can hold
// locally (about 1000 bytes with 4 KiB pages), SQLite reads the WHOLE row,
// overflow pages and all, every time a search compares against it; one 8 MB
// value made every lookup that passed its key read 8 MB. So a value that
// would make its row that large is stored in blobs (a rowid table, whose
// lookups never compare payloads) and the row holds its ref, an INTEGER
// where a value is otherwise always a BLOB.
//
// Refs are never shared. When a row holding one is deleted or its value
// replaced, the flush moves its ref to blob_garbage (keepRefs, memsql.go)
// and frees the blobs in the same transaction (freeGarbage); triggers
// move the refs of deleted list and hash rows. COPY duplicates blobs
// rather than sharing refs.

// inlineBudget is how many bytes of element and value a row may hold before
// the value moves to blobs.
const inlineBudget = 900
