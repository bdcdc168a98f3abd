package storage

import (
	"path/filepath"
	"strings"
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

// SearchTotals reads an FTS5 table's row and token counts as bm25() sees
// them, also while the open transaction holds writes FTS5 keeps in
// memory; SearchDocSize decodes a document's length from %_docsize,
// lengths past one varint byte included; DropSearchTables also removes
// the index's term lists (migration 13).
func TestSearchTotalsAndSizes(t *testing.T) {
	s, err := Open(Options{Path: filepath.Join(t.TempDir(), "cellar.db")})
	must(t, err)
	defer s.Close()
	must(t, s.Begin())
	must(t, s.CreateSearchTables(SearchLayout{ID: 3, Fields: 2, Stemmed: []int{0, 1}}))
	long := strings.Repeat("word ", 300)
	rows, toks := int64(0), int64(0)
	for i, doc := range [][2]string{{"a b c", "d"}, {long, "x y"}, {"", "z"}} {
		must(t, s.SearchExec("INSERT INTO ft3_s (rowid, c0, c1) VALUES (?, ?, ?)", i+1, doc[0], doc[1]))
		rows++
		toks += int64(len(strings.Fields(doc[0])) + len(strings.Fields(doc[1])))
		r, tk, err := s.SearchTotals("ft3_s")
		must(t, err)
		if r != rows || tk != toks {
			t.Fatalf("after %d rows: totals %d rows %d tokens, want %d %d", i+1, r, tk, rows, toks)
		}
	}
	want := map[int64]int64{1: 4, 2: 302, 3: 1}
	must(t, s.SearchQuery("SELECT id, sz FROM ft3_s_docsize", false, nil, func(r SearchRow) bool {
		if got := SearchDocSize(r.Bytes(1, nil)); got != want[r.Int(0)] {
			t.Errorf("document %d: size %d, want %d", r.Int(0), got, want[r.Int(0)])
		}
		return true
	}))
	must(t, s.SearchExec("INSERT INTO search_tops (idx, kind, term, wm, nrows, ntoks, nhits, docs) VALUES (3, 's', 'word', 1, 1, 1, 1, x'')"))
	must(t, s.SearchExec("INSERT INTO search_tops (idx, kind, term, wm, nrows, ntoks, nhits, docs) VALUES (4, 's', 'word', 1, 1, 1, 1, x'')"))
	must(t, s.DropSearchTables(3))
	n := int64(-1)
	must(t, s.SearchQuery("SELECT count(*) FROM search_tops WHERE idx = 3", false, nil, func(r SearchRow) bool { n = r.Int(0); return false }))
	if n != 0 {
		t.Fatalf("%d term lists of the dropped index left", n)
	}
	_, _, err = s.Commit()
	must(t, err)
}
