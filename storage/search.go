package storage

import (
	"fmt"
	"strings"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Search indexes (FT.*, actor/search.go): the catalog of index definitions
// and aliases (migration 12), and each index's own tables, created and
// dropped with the index. The tables of index id N are:
//
//	ftN_docs  one row per indexed hash: docid, key, and one value column per
//	          schema field (v0, v1, ...: a NUMERIC field's number, a TEXT or
//	          TAG field's text, for SORTBY and numeric ranges); a numeric
//	          column has an index of its own
//	ftN_tags  (field, value, docid): one row per tag of a TAG field
//	ftN_s     FTS5 over the stemmed TEXT fields (porter + unicode61),
//	          rowid = docid, one column per field (c<field number>)
//	ftN_r     FTS5 over the NOSTEM TEXT fields (unicode61)
//	ftN_gc    document ids whose FTS5 rows wait to be deleted: FTS5
//	          flushes its pending terms whenever a write switches between
//	          deleting and inserting, so the deletions are gathered here
//	          and done in one go (the actor's housekeeping); meanwhile the
//	          rows match nothing, since every query joins ftN_docs
//
// search_tops (migration 13) holds the indexes' term lists
// (actor/searchtop.go), by index id; they go with the index's tables.
//
// The tables are derived data: every write to them happens in the actor's
// open transaction, from the keys touched step (or the back-fill) reading
// the hash as it now is, so they commit and roll back with the hashes and
// are rebuilt by the redo log's replay of the hash writes. Catalog writes
// record a Search change, so the command that made them is logged like
// any write.

var (
	qSearchList      = newQuery("SELECT name, id, spec, cursor FROM search_indexes ORDER BY id")
	qSearchSave      = newQuery("INSERT INTO search_indexes (name, id, spec, cursor) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (name) DO UPDATE SET id = excluded.id, spec = excluded.spec, cursor = excluded.cursor")
	qSearchCursor    = newQuery("UPDATE search_indexes SET cursor = ?2 WHERE name = ?1")
	qSearchDelete    = newQuery("DELETE FROM search_indexes WHERE name = ?1")
	qSearchAliases   = newQuery("SELECT alias, name FROM search_aliases ORDER BY alias")
	qSearchAliasSave = newQuery("INSERT INTO search_aliases (alias, name) VALUES (?1, ?2) ON CONFLICT (alias) DO UPDATE SET name = excluded.name")
	qSearchAliasDel  = newQuery("DELETE FROM search_aliases WHERE alias = ?1")
	qSearchAliasDrop = newQuery("DELETE FROM search_aliases WHERE name = ?1")
)

// SearchIndexRow is one stored index definition: its name, its table
// number, its definition as the actor encoded it, and how far its back-fill
// has gone (a SCAN cursor of database 0; -1 when done).
type SearchIndexRow struct {
	Name   string
	ID     int64
	Spec   []byte
	Cursor int64
}

// SearchIndexes returns every stored index definition.
func (s *Store) SearchIndexes() ([]SearchIndexRow, error) {
	st := s.q(qSearchList)
	defer st.reset()
	var out []SearchIndexRow
	for {
		row, err := st.step()
		if err != nil || !row {
			return out, err
		}
		out = append(out, SearchIndexRow{Name: string(st.colBlob(0, nil)), ID: st.colInt(1),
			Spec: st.colBlob(2, nil), Cursor: st.colInt(3)})
	}
}

// SaveSearchIndex stores (or replaces) an index definition.
func (s *Store) SaveSearchIndex(r SearchIndexRow) error {
	st := s.q(qSearchSave)
	st.blob(1, []byte(r.Name))
	st.int(2, r.ID)
	st.blob(3, r.Spec)
	st.int(4, r.Cursor)
	if err := st.exec(); err != nil {
		return err
	}
	s.dirty = true
	s.record(0, []byte(r.Name), Search, 0)
	return nil
}

// SetSearchCursor stores how far an index's back-fill has gone. It is
// derived state, like the index tables: no change is recorded.
func (s *Store) SetSearchCursor(name string, cursor int64) error {
	st := s.q(qSearchCursor)
	st.blob(1, []byte(name))
	st.int(2, cursor)
	s.dirty = true
	return st.exec()
}

// DeleteSearchIndex removes an index definition and its aliases.
func (s *Store) DeleteSearchIndex(name string) error {
	for _, q := range []*query{qSearchDelete, qSearchAliasDrop} {
		st := s.q(q)
		st.blob(1, []byte(name))
		if err := st.exec(); err != nil {
			return err
		}
	}
	s.dirty = true
	s.record(0, []byte(name), Search, 0)
	return nil
}

// SearchAliases returns every alias and the index it names.
func (s *Store) SearchAliases() (map[string]string, error) {
	st := s.q(qSearchAliases)
	defer st.reset()
	out := map[string]string{}
	for {
		row, err := st.step()
		if err != nil || !row {
			return out, err
		}
		out[string(st.colBlob(0, nil))] = string(st.colBlob(1, nil))
	}
}

// SaveSearchAlias points alias at an index; an empty name removes it.
func (s *Store) SaveSearchAlias(alias, name string) error {
	var st *stmt
	if name == "" {
		st = s.q(qSearchAliasDel)
		st.blob(1, []byte(alias))
	} else {
		st = s.q(qSearchAliasSave)
		st.blob(1, []byte(alias))
		st.blob(2, []byte(name))
	}
	if err := st.exec(); err != nil {
		return err
	}
	s.dirty = true
	s.record(0, []byte(alias), Search, 0)
	return nil
}

// RecordSearch records a change to something of search's that is not a
// key (a suggestion dictionary, a dictionary, synonyms), named name, so
// the command that made it is logged like any write.
func (s *Store) RecordSearch(name []byte) {
	s.dirty = true
	s.record(0, name, Search, 0)
}

// SearchLayout is the shape of one index's tables.
type SearchLayout struct {
	ID      int64
	Fields  int   // value columns v0..v(Fields-1)
	Numeric []int // fields whose value column is a number with an index
	Stemmed []int // TEXT fields in ftN_s
	Raw     []int // NOSTEM TEXT fields in ftN_r
}

// SearchTokenizer is the FTS5 tokenizer of table kind "s" (stemmed) or
// "r" (NOSTEM).
func SearchTokenizer(kind string) string {
	if kind == "s" {
		return "porter unicode61"
	}
	return "unicode61"
}

// SearchTable names table kind ("docs", "tags", "s", "r") of index id.
func SearchTable(id int64, kind string) string { return fmt.Sprintf("ft%d_%s", id, kind) }

// CreateSearchTables creates an index's tables (dropping any left over
// under its number).
func (s *Store) CreateSearchTables(l SearchLayout) error {
	if err := s.DropSearchTables(l.ID); err != nil {
		return err
	}
	var b strings.Builder
	docs := SearchTable(l.ID, "docs")
	fmt.Fprintf(&b, "CREATE TABLE %s (docid INTEGER PRIMARY KEY AUTOINCREMENT, key BLOB NOT NULL UNIQUE", docs)
	for i := 0; i < l.Fields; i++ {
		fmt.Fprintf(&b, ", v%d", i)
	}
	b.WriteString(");\n")
	for _, f := range l.Numeric {
		fmt.Fprintf(&b, "CREATE INDEX %s_v%d ON %s (v%d) WHERE v%d IS NOT NULL;\n", docs, f, docs, f, f)
	}
	tags := SearchTable(l.ID, "tags")
	fmt.Fprintf(&b, "CREATE TABLE %s (field INTEGER NOT NULL, val BLOB NOT NULL, docid INTEGER NOT NULL, PRIMARY KEY (field, val, docid)) WITHOUT ROWID;\n", tags)
	fmt.Fprintf(&b, "CREATE INDEX %s_doc ON %s (docid);\n", tags, tags)
	fmt.Fprintf(&b, "CREATE TABLE %s (docid INTEGER PRIMARY KEY);\n", SearchTable(l.ID, "gc"))
	for _, t := range []struct {
		kind, tok string
		cols      []int
	}{{"s", SearchTokenizer("s"), l.Stemmed}, {"r", SearchTokenizer("r"), l.Raw}} {
		if len(t.cols) == 0 {
			continue
		}
		fmt.Fprintf(&b, "CREATE VIRTUAL TABLE %s USING fts5(", SearchTable(l.ID, t.kind))
		for _, c := range t.cols {
			fmt.Fprintf(&b, "c%d, ", c)
		}
		fmt.Fprintf(&b, "tokenize = '%s');\n", t.tok)
	}
	s.closeSearchStmts()
	s.dirty = true
	return s.c.exec(b.String())
}

// DropSearchTables drops index id's tables, those that exist.
func (s *Store) DropSearchTables(id int64) error {
	s.closeSearchStmts()
	var b strings.Builder
	for _, k := range []string{"docs", "tags", "s", "r", "gc"} {
		fmt.Fprintf(&b, "DROP TABLE IF EXISTS %s;\n", SearchTable(id, k))
	}
	// The term lists (actor/searchtop.go) and the connection's own
	// fts5vocab tables over the FTS5 tables.
	for _, k := range []string{"s", "r"} {
		t := SearchTable(id, k)
		fmt.Fprintf(&b, "DROP TABLE IF EXISTS temp.%s_vr;\nDROP TABLE IF EXISTS temp.cellar_%s_v;\nDROP TABLE IF EXISTS temp.cellar_%s;\n", t, t, t)
	}
	fmt.Fprintf(&b, "DELETE FROM search_tops WHERE idx = %d;\n", id)
	s.dirty = true
	return s.c.exec(b.String())
}

// SearchDoc reads the hash key of database 0 for indexing, calling fn
// with each field and value (valid during the call). found is false when
// the key is missing, expired or not a hash. It never deletes an expired
// key (its deletion, when it comes, is a change of its own).
func (s *Store) SearchDoc(key []byte, fn func(field, value []byte)) (found bool, err error) {
	return s.mem.searchDoc(key, fn)
}

// SearchRow is the current row of a search query; valid during the
// callback that receives it.
type SearchRow struct{ st *stmt }

// Int is column i as an integer.
func (r SearchRow) Int(i int) int64 { return r.st.colInt(i) }

// Float is column i as a float.
func (r SearchRow) Float(i int) float64 { return r.st.colFloat(i) }

// Null reports whether column i is NULL.
func (r SearchRow) Null(i int) bool { return r.st.colNull(i) }

// Bytes appends column i's bytes to dst.
func (r SearchRow) Bytes(i int, dst []byte) []byte { return r.st.colBlob(i, dst) }

// IsNumber reports whether column i holds an integer or a float.
func (r SearchRow) IsNumber(i int) bool {
	t := r.st.colType(i)
	return t == sqlite3.SQLITE_INTEGER || t == sqlite3.SQLITE_FLOAT
}

// Text is column i as a string.
func (r SearchRow) Text(i int) string { return string(r.st.colBlob(i, nil)) }

// maxSearchStmts bounds the statements kept prepared for the search
// tables; past it they are all let go.
const maxSearchStmts = 256

// searchStmt returns the prepared statement for sql over the search
// tables, prepared once and kept (when keep) until the tables change.
func (s *Store) searchStmt(sql string, keep bool) (*stmt, error) {
	if st := s.searchStmts[sql]; st != nil {
		return st, nil
	}
	st, err := s.c.prepare(sql)
	if err != nil {
		return nil, err
	}
	if keep {
		if len(s.searchStmts) >= maxSearchStmts {
			s.closeSearchStmts()
		}
		if s.searchStmts == nil {
			s.searchStmts = map[string]*stmt{}
		}
		s.searchStmts[sql] = st
	}
	return st, nil
}

func (s *Store) closeSearchStmts() {
	for k, st := range s.searchStmts {
		st.close()
		delete(s.searchStmts, k)
	}
}

// bindAny binds args as ?1, ?2, ...: int64, int and float64 as numbers,
// []byte as a blob, string as text, nil as NULL.
func bindAny(st *stmt, args []any) {
	for i, a := range args {
		switch v := a.(type) {
		case nil:
			st.null(i + 1)
		case int:
			st.int(i+1, int64(v))
		case int64:
			st.int(i+1, v)
		case float64:
			st.float(i+1, v)
		case []byte:
			st.blob(i+1, v)
		case string:
			st.text(i+1, v)
		default:
			panic(fmt.Sprintf("storage: cannot bind %T", a))
		}
	}
}

// SearchExec runs a statement that writes the search tables.
func (s *Store) SearchExec(sql string, args ...any) error {
	st, err := s.searchStmt(sql, true)
	if err != nil {
		return err
	}
	bindAny(st, args)
	err = st.exec()
	st.clear()
	s.dirty = true
	return err
}

// SearchScratch runs a statement that writes only the connection's own
// temp tables (derived, never committed data): the store is not marked
// as having changes.
func (s *Store) SearchScratch(sql string, args ...any) error {
	st, err := s.searchStmt(sql, true)
	if err != nil {
		return err
	}
	bindAny(st, args)
	err = st.exec()
	st.clear()
	return err
}

// SearchLastID is the rowid of the last row inserted.
func (s *Store) SearchLastID() int64 { return s.c.lastInsertRowid() }

// SearchQuery runs a query over the search tables, calling fn for each
// row until it returns false. keep says whether the statement is worth
// keeping prepared (a fixed statement rather than one query's text).
func (s *Store) SearchQuery(sql string, keep bool, args []any, fn func(r SearchRow) bool) error {
	var st *stmt
	var err error
	if keep {
		st, err = s.searchStmt(sql, true)
	} else {
		st, err = s.c.prepare(sql)
	}
	if err != nil {
		return err
	}
	if !keep {
		defer st.close()
	} else {
		defer func() { st.reset(); st.clear() }()
	}
	bindAny(st, args)
	for {
		row, err := st.step()
		if err != nil || !row {
			return err
		}
		if !fn(SearchRow{st}) {
			return nil
		}
	}
}

// text binds a copy of v as text.
func (st *stmt) text(i int, v string) {
	buf := &st.bufs[i]
	if buf.cap < len(v) || buf.p == 0 {
		if buf.p != 0 {
			libc.Xfree(st.c.tls, buf.p)
		}
		n := max(len(v), 64)
		buf.p = libc.Xmalloc(st.c.tls, libc.Tsize_t(n))
		if buf.p == 0 {
			panic("storage: out of C memory")
		}
		buf.cap = n
	}
	copy(cbytes(buf.p, len(v)), v)
	sqlite3.Xsqlite3_bind_text(st.c.tls, st.h, int32(i), buf.p, int32(len(v)), 0)
}

// SearchTotals returns FTS5 table tbl's row count and token count (all
// columns), as its bm25() sees them: FTS5 keeps them in memory while a
// transaction writes the table and stores them in the table's averages
// record (%_data, id 1) when a savepoint opens, so one is opened and
// released first.
func (s *Store) SearchTotals(tbl string) (rows, tokens int64, err error) {
	if err := s.c.exec("SAVEPOINT cellar_fts_totals; RELEASE cellar_fts_totals"); err != nil {
		return 0, 0, err
	}
	var rec []byte
	err = s.SearchQuery("SELECT block FROM "+tbl+"_data WHERE id = 1", true, nil, func(r SearchRow) bool {
		rec = r.Bytes(0, nil)
		return false
	})
	if err != nil {
		return 0, 0, err
	}
	v, n := searchVarint(rec)
	rows = int64(v)
	for rec = rec[n:]; len(rec) > 0; rec = rec[n:] {
		v, n = searchVarint(rec)
		tokens += int64(v)
	}
	return rows, tokens, nil
}

// SearchDocSize is a document's length in tokens (all columns) from the
// sz blob of an FTS5 table's %_docsize row.
func SearchDocSize(sz []byte) int64 {
	var d int64
	for len(sz) > 0 {
		v, n := searchVarint(sz)
		d += int64(v)
		sz = sz[n:]
	}
	return d
}

// searchVarint decodes one of SQLite's variable-length integers (as
// FTS5 writes them), returning it and its length.
func searchVarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < 8 && i < len(b); i++ {
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	if len(b) >= 9 {
		return v<<8 | uint64(b[8]), 9
	}
	return v, len(b)
}

// SearchLog is the natural logarithm as SQLite's own bm25() computes it
// (the C library's log, not Go's math.Log, which may differ in the last
// bit).
func (s *Store) SearchLog(x float64) float64 { return libc.Xlog(s.c.tls, x) }
