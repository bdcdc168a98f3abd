package storage

import (
	"path/filepath"
	"testing"
)

// TestVersionNeverRepeatsForAName: whatever happens to a key name, its next
// version is larger than every version it had before, so that a name
// deleted and created again never looks unchanged.
func TestVersionNeverRepeatsForAName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	s, err := Open(Options{Path: path})
	must(t, err)
	defer func() { s.Close() }()
	s.Now = 1_000_000
	k := []byte("k")
	last := int64(0)
	// step runs fn in a round and checks that k then has a version above
	// every one seen so far.
	step := func(what string, fn func()) {
		t.Helper()
		inTx(t, s, fn)
		v, ok, err := s.KeyVersion(0, k)
		must(t, err)
		if !ok {
			t.Fatalf("%s: key missing", what)
		}
		if v <= last {
			t.Fatalf("%s: version %d, not above %d", what, v, last)
		}
		last = v
	}
	set := func() { must(t, s.SetString(0, k, []byte("v"), 0, false)) }
	step("SET", set)
	step("SET again", set)
	step("DEL + SET", func() {
		_, err := s.Delete(0, k)
		must(t, err)
		set()
	})
	step("SET with expiry", func() { must(t, s.SetString(0, k, []byte("v"), s.Now+10, false)) })
	s.Now += 20
	step("expiry + SET", func() {
		if _, ok, err := s.Lookup(0, k); err != nil || ok {
			t.Fatalf("expired key found: %v %v", ok, err)
		}
		set()
	})
	step("RENAME onto the name", func() {
		must(t, s.SetString(0, []byte("src"), []byte("w"), 0, false))
		must(t, s.Rename(0, []byte("src"), k))
	})
	step("DEL + RPUSH", func() {
		_, err := s.Delete(0, k)
		must(t, err)
		_, err = s.ListPush(0, k, Right, [][]byte{[]byte("a")}, false)
		must(t, err)
	})
	step("DEL + HSET", func() {
		_, err := s.Delete(0, k)
		must(t, err)
		c := openColl(t, s, "k", TypeHash)
		_, err = s.HashSet(c, []byte("f"), []byte("v"), HashReplace)
		must(t, err)
		must(t, s.EndCommand())
	})
	step("COPY onto the name", func() {
		must(t, s.SetString(0, []byte("other"), []byte("x"), 0, false))
		ok, err := s.Copy(0, []byte("other"), 0, k, true)
		if err != nil || !ok {
			t.Fatalf("COPY: %v %v", ok, err)
		}
	})
	step("MOVE onto the name", func() {
		_, err := s.Delete(0, k)
		must(t, err)
		must(t, s.SetString(1, k, []byte("y"), 0, false))
		must(t, s.Move(1, k, 0))
	})
	step("FLUSHDB + SET", func() {
		must(t, s.FlushDB(0))
		set()
	})
	// A round that is rolled back hands out versions nobody keeps; the
	// next ones are still larger.
	must(t, s.Begin())
	set()
	set()
	s.Rollback()
	step("rollback + SET", set)
	// A restart: the counter starts above every version committed, even
	// those of keys since deleted.
	inTx(t, s, func() {
		for range 3 {
			set()
		}
		_, err := s.Delete(0, k)
		must(t, err)
	})
	last += 3
	must(t, s.Close())
	s, err = Open(Options{Path: path})
	must(t, err)
	s.Now = 1_000_000
	step("restart + SET", set)
	// And once more, past a high-water mark raised by a commit.
	must(t, s.Close())
	s, err = Open(Options{Path: path})
	must(t, err)
	s.Now = 1_000_000
	step("second restart + SET", set)
}

// TestVersionMigration: a database written before key versions had a
// counter starts the counter above every version its rows hold.
func TestVersionMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	s, err := Open(Options{Path: path})
	must(t, err)
	inTx(t, s, func() { must(t, s.SetString(0, []byte("k"), []byte("v"), 0, false)) })
	// Make the file look like one of schema version 4 whose key had been
	// written many times.
	// (The tables of later migrations go too, so that they apply again.)
	must(t, s.c.exec(`DROP TABLE counters; DELETE FROM cellar_schema WHERE version >= 5;
		DROP TABLE streams; DROP TABLE stream_entries; DROP TABLE stream_groups;
		DROP TABLE stream_consumers; DROP TABLE stream_pel; DROP TABLE function_libraries;
		DROP INDEX hashes_by_expiry; ALTER TABLE hashes DROP COLUMN expire_at; ALTER TABLE hashes DROP COLUMN ord;
		DROP TABLE search_indexes; DROP TABLE search_aliases; DROP TABLE search_suggestions;
		DROP TABLE search_dicts; DROP TABLE search_synonyms; DROP TABLE search_tops;
		UPDATE keys SET version = 1000`))
	must(t, s.Close())
	s, err = Open(Options{Path: path})
	must(t, err)
	defer s.Close()
	inTx(t, s, func() {
		_, err := s.Delete(0, []byte("k"))
		must(t, err)
		must(t, s.SetString(0, []byte("k"), []byte("v"), 0, false))
	})
	if v, ok, err := s.KeyVersion(0, []byte("k")); err != nil || !ok || v <= 1000 {
		t.Fatalf("version after migration = %d %v %v, want above 1000", v, ok, err)
	}
}
