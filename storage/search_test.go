package storage

import (
	"path/filepath"
	"testing"
)

// The SQLite build (modernc.org/sqlite, as go.mod pins it) has FTS5 with
// the porter tokenizer and fts5vocab, which search indexes rest on; the
// tables of an index are made, written, queried and dropped in the open
// transaction.
func TestSearchTables(t *testing.T) {
	s, err := Open(Options{Path: filepath.Join(t.TempDir(), "cellar.db")})
	must(t, err)
	defer s.Close()
	must(t, s.Begin())
	l := SearchLayout{ID: 7, Fields: 3, Numeric: []int{1}, Stemmed: []int{0}, Raw: []int{2}}
	must(t, s.CreateSearchTables(l))
	must(t, s.SearchExec("INSERT INTO ft7_docs (key, v0, v1, v2) VALUES (?, ?, ?, ?)", []byte("k1"), "running dogs", 3.5, "Exact Words"))
	id := s.SearchLastID()
	must(t, s.SearchExec("INSERT INTO ft7_s (rowid, c0) VALUES (?, ?)", id, "running dogs"))
	must(t, s.SearchExec("INSERT INTO ft7_r (rowid, c2) VALUES (?, ?)", id, "Exact Words"))
	count := func(sql string, args ...any) int {
		n := 0
		must(t, s.SearchQuery(sql, false, args, func(SearchRow) bool { n++; return true }))
		return n
	}
	if n := count("SELECT rowid FROM ft7_s WHERE ft7_s MATCH ?", `"run"`); n != 1 {
		t.Fatalf("porter stemming: %d rows", n)
	}
	if n := count("SELECT rowid FROM ft7_r WHERE ft7_r MATCH ?", `"exact"`); n != 1 {
		t.Fatalf("unicode61: %d rows", n)
	}
	if n := count("SELECT rowid FROM ft7_r WHERE ft7_r MATCH ?", `"word"`); n != 0 {
		t.Fatalf("NOSTEM table stemmed: %d rows", n)
	}
	if n := count("SELECT docid FROM ft7_docs WHERE v1 BETWEEN ? AND ?", 3.0, 4.0); n != 1 {
		t.Fatalf("numeric column: %d rows", n)
	}
	must(t, s.SearchExec("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, ft7_s, 'row')"))
	if n := count("SELECT term FROM temp.v"); n != 2 {
		t.Fatalf("fts5vocab: %d terms", n)
	}
	must(t, s.DropSearchTables(7))
	_, _, err = s.Commit()
	must(t, err)
}
