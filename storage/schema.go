package storage

import (
	"fmt"
	"time"
)

// A migration moves the schema from version-1 to version. Migrations are
// append-only: a released one is never edited, a change is a new one.
type migration struct {
	version int
	name    string
	sql     string
}

var migrations = []migration{
	{1, "keyspace", `
CREATE TABLE keys (
	db        INTEGER NOT NULL,          -- logical database, 0..15
	key       BLOB    NOT NULL,
	id        INTEGER NOT NULL,          -- stable handle: element tables and SCAN cursors use it
	type      INTEGER NOT NULL,          -- see Type
	expire_at INTEGER,                   -- unix milliseconds; NULL when persistent
	version   INTEGER NOT NULL,          -- bumped on every write of the key
	value     BLOB,                      -- a string's value; NULL for collections
	PRIMARY KEY (db, key)
) WITHOUT ROWID;
CREATE UNIQUE INDEX keys_by_id ON keys (db, id);
CREATE INDEX keys_by_expiry ON keys (expire_at) WHERE expire_at IS NOT NULL;

-- Key counts per database, kept by Commit so DBSIZE and INFO never count rows.
CREATE TABLE dbstats (
	db   INTEGER PRIMARY KEY,
	keys INTEGER NOT NULL
);`},
	{2, "lists", `
-- A list's elements, under its key's id. Positions are contiguous integers:
-- the head is the smallest, index i is at head+i, so both ends and any index
-- are one B-tree descent away. LPUSH takes head-1, RPUSH tail+1; commands
-- that open or close a gap in the middle (LINSERT, LREM) renumber the
-- shorter side. The ends are read from this index, never stored twice.
CREATE TABLE list_items (
	id    INTEGER NOT NULL,               -- keys.id of the list
	pos   INTEGER NOT NULL,
	value BLOB    NOT NULL,
	PRIMARY KEY (id, pos)
) WITHOUT ROWID;`},
	{3, "collections", `
-- Hashes, sets and sorted sets. A key of these types keeps its element
-- count in keys.value (an INTEGER), so HLEN, SCARD and ZCARD read one row.
-- Elements are keyed by the key's id (stable across RENAME and MOVE) and
-- h, a 63-bit hash of the field or member (storage.elemHash): clustering by
-- h gives the SCAN commands a stable integer cursor and random sampling a
-- uniform starting point, while lookups of one element stay point seeks.
CREATE TABLE hashes (
	id    INTEGER NOT NULL,
	h     INTEGER NOT NULL,
	field BLOB    NOT NULL,
	value BLOB    NOT NULL,
	PRIMARY KEY (id, h, field)
) WITHOUT ROWID;
CREATE TABLE sets (
	id     INTEGER NOT NULL,
	h      INTEGER NOT NULL,
	member BLOB    NOT NULL,
	PRIMARY KEY (id, h, member)
) WITHOUT ROWID;
CREATE TABLE zsets (
	id     INTEGER NOT NULL,
	h      INTEGER NOT NULL,
	member BLOB    NOT NULL,
	score  REAL    NOT NULL,          -- never NaN; -0 is stored as 0
	PRIMARY KEY (id, h, member)
) WITHOUT ROWID;
-- Redis's order: score, then member bytes (BLOBs compare with memcmp).
CREATE INDEX zsets_by_score ON zsets (id, score, member);`},
	{4, "blobs", `
-- Values too large to sit in their rows (see blobs.go): the row holds an
-- INTEGER ref here instead of the BLOB value.
CREATE TABLE blobs (
	ref  INTEGER PRIMARY KEY,
	data BLOB NOT NULL
);
-- Refs whose rows were deleted or got a new value, freed in batches.
CREATE TABLE blob_garbage (ref INTEGER NOT NULL);
CREATE TRIGGER keys_blob_deleted AFTER DELETE ON keys
	WHEN old.type = 1 AND typeof(old.value) = 'integer'
	BEGIN INSERT INTO blob_garbage VALUES (old.value); END;
CREATE TRIGGER keys_blob_replaced AFTER UPDATE OF value ON keys
	WHEN old.type = 1 AND typeof(old.value) = 'integer' AND new.value IS NOT old.value
	BEGIN INSERT INTO blob_garbage VALUES (old.value); END;
CREATE TRIGGER list_blob_deleted AFTER DELETE ON list_items
	WHEN typeof(old.value) = 'integer'
	BEGIN INSERT INTO blob_garbage VALUES (old.value); END;
CREATE TRIGGER list_blob_replaced AFTER UPDATE OF value ON list_items
	WHEN typeof(old.value) = 'integer' AND new.value IS NOT old.value
	BEGIN INSERT INTO blob_garbage VALUES (old.value); END;
CREATE TRIGGER hash_blob_deleted AFTER DELETE ON hashes
	WHEN typeof(old.value) = 'integer'
	BEGIN INSERT INTO blob_garbage VALUES (old.value); END;
CREATE TRIGGER hash_blob_replaced AFTER UPDATE OF value ON hashes
	WHEN typeof(old.value) = 'integer' AND new.value IS NOT old.value
	BEGIN INSERT INTO blob_garbage VALUES (old.value); END;`},
	{5, "versions", `
-- Key versions come from one counter for the whole file (versions.go), so
-- that a name deleted and created again never gets back a version it had
-- before. The counter runs in memory; this row is its high-water mark,
-- raised ahead of use by the commit that first goes past it, so it is
-- always above every version committed.
CREATE TABLE counters (
	name  TEXT    PRIMARY KEY,
	value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO counters VALUES ('version', (SELECT coalesce(max(version), 0) FROM keys));`},
	{6, "redo position", `
-- The redo log position the database covers (redolog.go): every commit
-- that logged records stores the position after them, in the same
-- transaction, and start-up replays the log from here.
INSERT INTO counters VALUES ('redo_position', 0);`},
	{7, "string garbage without a trigger", `
-- SetString moves a replaced string's blob ref to blob_garbage itself
-- (blobs.go): the trigger ran on every UPDATE of keys.value, strings and
-- collection counts alike, for a quarter of a SET's cost.
DROP TRIGGER IF EXISTS keys_blob_replaced;`},
	{8, "streams", `
-- Streams. IDs are two unsigned 64-bit numbers (ms, seq); SQLite integers
-- are signed, so every ID part is stored shifted by -2^63 (streamID.col),
-- which keeps their order. The entry count is keys.value, as for the
-- other collections; the rest of the stream's metadata is one row here.
CREATE TABLE streams (
	id            INTEGER PRIMARY KEY,       -- keys.id of the stream
	last_ms       INTEGER NOT NULL,          -- the last ID generated
	last_seq      INTEGER NOT NULL,
	del_ms        INTEGER NOT NULL,          -- the largest ID XDEL removed
	del_seq       INTEGER NOT NULL,
	entries_added INTEGER NOT NULL           -- every entry ever added
);
-- Entries in ID order: XRANGE is an index range, XADD an append at the
-- end, trimming a range delete at the start.
CREATE TABLE stream_entries (
	id     INTEGER NOT NULL,
	ms     INTEGER NOT NULL,
	seq    INTEGER NOT NULL,
	fields BLOB    NOT NULL,                 -- field/value pairs (streams.go)
	PRIMARY KEY (id, ms, seq)
) WITHOUT ROWID;
-- Consumer groups, consumers and pending entries, in name and ID order
-- (the order XINFO and XPENDING reply in).
CREATE TABLE stream_groups (
	id           INTEGER NOT NULL,
	name         BLOB    NOT NULL,
	last_ms      INTEGER NOT NULL,           -- last delivered ID
	last_seq     INTEGER NOT NULL,
	entries_read INTEGER NOT NULL,           -- -1: not known
	PRIMARY KEY (id, name)
) WITHOUT ROWID;
CREATE TABLE stream_consumers (
	id    INTEGER NOT NULL,
	grp   BLOB    NOT NULL,
	name  BLOB    NOT NULL,
	seen  INTEGER NOT NULL,                  -- unix ms of its last command
	PRIMARY KEY (id, grp, name)
) WITHOUT ROWID;
CREATE TABLE stream_pel (
	id        INTEGER NOT NULL,
	grp       BLOB    NOT NULL,
	ms        INTEGER NOT NULL,
	seq       INTEGER NOT NULL,
	consumer  BLOB    NOT NULL,
	delivered INTEGER NOT NULL,              -- unix ms of the last delivery
	count     INTEGER NOT NULL,              -- deliveries
	PRIMARY KEY (id, grp, ms, seq)
) WITHOUT ROWID;
-- A consumer's pending entries in ID order (XPENDING ... consumer, XINFO,
-- XREADGROUP's history, DELCONSUMER).
CREATE INDEX stream_pel_by_consumer ON stream_pel (id, grp, consumer, ms, seq);`},
	{9, "function libraries", `
-- FUNCTION LOAD's libraries (functions.go): the name and the code as
-- loaded; start-up loads them again. They belong to no database.
CREATE TABLE function_libraries (
	name TEXT PRIMARY KEY,
	code BLOB NOT NULL
) WITHOUT ROWID;`},
	{10, "list garbage without a trigger", `
-- The list commands move the blob refs of the elements they delete to
-- blob_garbage themselves (lists.go): a pop reads its element first
-- anyway, and the trigger's program cost every pop a sixth of its time.
DROP TRIGGER IF EXISTS list_blob_deleted;`},
	{11, "hash field order and expiry", `
-- The order fields were added to a hash: Redis returns a small hash
-- (listpack) in insertion order, and applications see that order in
-- HGETALL, HKEYS, HVALS, HSCAN and HRANDFIELD. A new field takes the next
-- number of the version counter (versions.go), which only grows; updating a
-- field keeps its number, so a field deleted and added again goes last.
-- Fields stored before this migration have none and come first.
ALTER TABLE hashes ADD COLUMN ord INTEGER;
-- Hash field expiration (Redis 7.4's HEXPIRE family, hashfe.go): a field's
-- expiry in unix milliseconds, NULL when it has none; the index finds the
-- fields due for the sweep.
ALTER TABLE hashes ADD COLUMN expire_at INTEGER;
CREATE INDEX hashes_by_expiry ON hashes (expire_at) WHERE expire_at IS NOT NULL;`},
	{12, "search indexes", `
-- FT.CREATE's indexes (search.go): the name, the number naming the
-- index's own tables (ftN_*, created with the index), the definition as
-- the actor encodes it, and the back-fill's SCAN cursor (-1: done).
CREATE TABLE search_indexes (
	name   TEXT PRIMARY KEY,
	id     INTEGER NOT NULL UNIQUE,
	spec   BLOB NOT NULL,
	cursor INTEGER NOT NULL
);
-- FT.ALIASADD's aliases.
CREATE TABLE search_aliases (
	alias TEXT PRIMARY KEY,
	name  TEXT NOT NULL
) WITHOUT ROWID;
-- FT.SUGADD's suggestion dictionaries, by name (not keys of a database):
-- each string, its lower-case form for prefix lookups, score and payload.
CREATE TABLE search_suggestions (
	dict    BLOB NOT NULL,
	term    BLOB NOT NULL,
	lower   BLOB NOT NULL,
	score   REAL NOT NULL,
	payload BLOB,
	PRIMARY KEY (dict, term)
) WITHOUT ROWID;
CREATE INDEX search_suggestions_by_prefix ON search_suggestions (dict, lower);
-- FT.DICTADD's dictionaries.
CREATE TABLE search_dicts (
	dict BLOB NOT NULL,
	term BLOB NOT NULL,
	PRIMARY KEY (dict, term)
) WITHOUT ROWID;
-- FT.SYNUPDATE's synonym groups, per index.
CREATE TABLE search_synonyms (
	idx  TEXT NOT NULL,
	grp  TEXT NOT NULL,
	term TEXT NOT NULL,
	PRIMARY KEY (idx, grp, term)
) WITHOUT ROWID;`},
	{13, "search top lists", `
-- A term query's candidates (actor/searchtop.go): per index (its table
-- number), FTS5 table kind ("s", "r") and indexed term, the documents
-- that scored highest when the list was made (docs: docid, weighted
-- term frequency and length of each), the highest document id then
-- (wm), the table's row and token counts and the term's matches then,
-- and the best score of the matches left out (rest; NULL: none).
CREATE TABLE search_tops (
	idx    INTEGER NOT NULL,
	kind   TEXT NOT NULL,
	term   TEXT NOT NULL,
	wm     INTEGER NOT NULL,
	nrows  INTEGER NOT NULL,
	ntoks  INTEGER NOT NULL,
	nhits  INTEGER NOT NULL,
	rest   REAL,
	docs   BLOB NOT NULL,
	PRIMARY KEY (idx, kind, term)
) WITHOUT ROWID;`},
	{14, "indexes no read uses", `
-- The storage engine loads a sorted set and a stream's pending entries
-- whole, by primary key, and orders them in memory: these indexes cost
-- every flush a second B-tree write and serve no query.
DROP INDEX IF EXISTS zsets_by_score;
DROP INDEX IF EXISTS stream_pel_by_consumer;`},
}

// schemaVersion is the version this build writes.
func schemaVersion() int { return migrations[len(migrations)-1].version }

// migrate brings the database to schemaVersion. It refuses a database that
// already has tables but no Cellar schema, or a newer schema.
func (s *Store) migrate() error {
	if err := s.c.exec("BEGIN IMMEDIATE"); err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			s.c.exec("ROLLBACK")
		}
	}()
	have, foreign, err := s.currentVersion()
	if err != nil {
		return err
	}
	if foreign {
		return fmt.Errorf("storage: %s holds tables but no Cellar schema; refusing to use it", s.path)
	}
	if have > schemaVersion() {
		return fmt.Errorf("storage: %s has schema version %d, newer than this build's %d", s.path, have, schemaVersion())
	}
	if have == 0 {
		if err := s.c.exec(`CREATE TABLE cellar_schema (
			version    INTEGER PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at INTEGER NOT NULL
		)`); err != nil {
			return err
		}
	}
	for _, m := range migrations {
		if m.version <= have {
			continue
		}
		if err := s.c.exec(m.sql); err != nil {
			return fmt.Errorf("storage: migration %d (%s): %w", m.version, m.name, err)
		}
		if err := s.c.exec(fmt.Sprintf("INSERT INTO cellar_schema VALUES (%d, '%s', %d)",
			m.version, m.name, time.Now().UnixMilli())); err != nil {
			return err
		}
	}
	if err := s.c.exec("COMMIT"); err != nil {
		return err
	}
	committed = true
	return nil
}

// currentVersion reads the applied schema version (0 for an empty file).
// foreign is true when the file has tables but no cellar_schema.
func (s *Store) currentVersion() (version int, foreign bool, err error) {
	q, err := s.c.prepare(`SELECT
		(SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'cellar_schema'),
		(SELECT count(*) FROM sqlite_schema WHERE type = 'table')`)
	if err != nil {
		return 0, false, err
	}
	defer q.close()
	if _, err := q.step(); err != nil {
		return 0, false, err
	}
	hasSchema, tables := q.colInt(0), q.colInt(1)
	q.reset()
	if hasSchema == 0 {
		return 0, tables > 0, nil
	}
	v, err := s.c.prepare("SELECT coalesce(max(version), 0) FROM cellar_schema")
	if err != nil {
		return 0, false, err
	}
	defer v.close()
	if _, err := v.step(); err != nil {
		return 0, false, err
	}
	version = int(v.colInt(0))
	v.reset()
	return version, false, nil
}
