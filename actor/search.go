package actor

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/cellar-db/cellar/storage"
)

// FT.*: RediSearch 2's secondary indexes over hashes, on SQLite's FTS5
// (docs/architecture.md, "Search"). An index names key prefixes of
// database 0 and a schema of hash fields (TEXT, TAG, NUMERIC); its tables
// (storage/search.go) follow every change to a matching hash in the keys
// touched step (indexTouched), in the same transaction as the change, so
// they commit, roll back and are replayed from the redo log with it. An
// index created over existing data is filled by a back-fill that runs a
// bounded batch per housekeeping step (backfillStep). Queries
// (searchquery.go) compile the query language into SQL over those tables.

var searchCommands = registerCommands([]*Command{
	{Name: "ft.create", Summary: "Creates a search index over hashes.", Handler: cmdFtCreate},
	{Name: "ft.search", Summary: "Searches an index with a query.", Handler: cmdFtSearch},
	{Name: "ft.aggregate", Summary: "Groups, reduces, sorts and transforms the documents a query matches.", Handler: cmdFtAggregate},
	{Name: "ft.info", Summary: "Describes a search index.", Handler: cmdFtInfo},
	{Name: "ft.dropindex", Summary: "Drops a search index, with DD its documents too.", Handler: cmdFtDropIndex},
	{Name: "ft.drop", Summary: "Drops a search index and its documents, unless KEEPDOCS (RediSearch 1).", Handler: cmdFtDrop},
	{Name: "ft._list", Summary: "Lists the search indexes.", Handler: cmdFtList},
	{Name: "ft.alter", Summary: "Adds fields to a search index's schema.", Handler: cmdFtAlter},
	{Name: "ft.tagvals", Summary: "Lists the distinct values of a TAG field.", Handler: cmdFtTagVals},
	{Name: "ft.aliasadd", Summary: "Adds an alias of a search index.", Handler: cmdFtAliasAdd},
	{Name: "ft.aliasupdate", Summary: "Points an alias at a search index.", Handler: cmdFtAliasUpdate},
	{Name: "ft.aliasdel", Summary: "Removes a search index alias.", Handler: cmdFtAliasDel},
	{Name: "ft.explain", Summary: "Shows how a query is parsed.", Handler: cmdFtExplain},
	{Name: "ft.sugadd", Summary: "Adds a string to a suggestion dictionary.", Handler: cmdFtSugAdd},
	{Name: "ft.sugget", Summary: "Gets completions of a prefix from a suggestion dictionary.", Handler: cmdFtSugGet},
	{Name: "ft.sugdel", Summary: "Deletes a string from a suggestion dictionary.", Handler: cmdFtSugDel},
	{Name: "ft.suglen", Summary: "Counts the strings of a suggestion dictionary.", Handler: cmdFtSugLen},
	{Name: "ft.dictadd", Summary: "Adds terms to a dictionary.", Handler: cmdFtDictAdd},
	{Name: "ft.dictdel", Summary: "Deletes terms from a dictionary.", Handler: cmdFtDictDel},
	{Name: "ft.dictdump", Summary: "Lists a dictionary's terms.", Handler: cmdFtDictDump},
	{Name: "ft.synupdate", Summary: "Adds terms to a synonym group of an index.", Handler: cmdFtSynUpdate},
	{Name: "ft.syndump", Summary: "Lists an index's synonym groups by term.", Handler: cmdFtSynDump},
	{Name: "ft.config", Summary: "Reads or sets a search option.", Handler: cmdFtConfig},
	{Name: "ft.spellcheck", Summary: "Suggests corrections of a query's terms from an index's terms.", Handler: cmdFtSpellCheck},
	{Name: "ft.cursor", Summary: "Reads from or deletes an FT.AGGREGATE cursor.", Handler: cmdFtCursor},
	{Name: "ft.add", Summary: "Adds a document as a hash (RediSearch 1).", Handler: cmdFtAdd},
	{Name: "ft.del", Summary: "Deletes a document's hash (RediSearch 1).", Handler: cmdFtDel},
	{Name: "ft.get", Summary: "Reads a document's hash (RediSearch 1).", Handler: cmdFtGet},
	{Name: "ft.mget", Summary: "Reads documents' hashes (RediSearch 1).", Handler: cmdFtMGet},
})

// Field types.
const (
	ftText    = "TEXT"
	ftTag     = "TAG"
	ftNumeric = "NUMERIC"
)

// ftField is one schema field. Its position in the schema numbers its
// value column (v<n>) and, for TEXT, its FTS5 column (c<n>).
type ftField struct {
	Name          string  `json:"name"` // the hash field
	Alias         string  `json:"alias,omitempty"`
	Type          string  `json:"type"`
	Weight        float64 `json:"weight,omitempty"`
	NoStem        bool    `json:"nostem,omitempty"`
	Sortable      bool    `json:"sortable,omitempty"`
	NoIndex       bool    `json:"noindex,omitempty"`
	Sep           string  `json:"sep,omitempty"`
	CaseSensitive bool    `json:"casesensitive,omitempty"`
}

// id is the name queries use: the alias, or the field's name.
func (f *ftField) id() string {
	if f.Alias != "" {
		return f.Alias
	}
	return f.Name
}

// ftSpec is an index's definition as stored (JSON in search_indexes.spec).
type ftSpec struct {
	Prefixes  []string  `json:"prefixes"`
	Filter    string    `json:"filter,omitempty"`
	Language  string    `json:"language,omitempty"`
	Score     float64   `json:"score"`
	Stopwords *[]string `json:"stopwords,omitempty"` // nil: the default list
	Fields    []ftField `json:"fields"`
}

// ftIndex is an index in memory.
type ftIndex struct {
	name string
	id   int64
	spec ftSpec
	// cursor is the back-fill's SCAN cursor over database 0, -1 when done.
	cursor int64
	stop   map[string]bool
	filter *aexpr // FILTER, parsed; nil without one
	// failures counts hashes that could not be indexed (a NUMERIC field
	// that is not a number) since the server started.
	failures int64
	uses     int64
	// gc: document ids wait in ftN_gc for their FTS5 rows to go
	// (collectIndex).
	gc bool
	// syn maps a term to its synonym groups, synGroups a group to its
	// terms (FT.SYNUPDATE, searchextra.go).
	syn, synGroups map[string][]string
	// sql is the indexing statements' text, made by prepare.
	sql ftSQL
	// The background making of term lists (searchtop.go): written says
	// documents changed since the last housekeeping step; topPhase is
	// the FTS5 table (0 stemmed, 1 raw) and topCursor the last term
	// looked at; topDone when every table was gone through.
	written   bool
	topDone   bool
	topPhase  int
	topCursor string
}

// ftSQL is the text of the statements that index a document.
type ftSQL struct {
	lookup  string    // a document's id by key
	insDoc  string    // the document row
	insText [2]string // the FTS5 rows (stemmed, raw); "" without the table
	insTag  string
	remove  []string // a document's rows, by id (its FTS5 rows go to ftN_gc)
}

// search is the actor's search state, search's in the registry
// (registry.go): it loads the catalog (load), hears the change record
// while an index exists (keysTouched) and fills new indexes in
// housekeeping (housekeep).
type search struct {
	a       *Actor
	indexes map[string]*ftIndex
	aliases map[string]string
	scratch [][]byte
	vals    []any
	// terms remembers the indexed term FTS5 makes of a query word, per
	// table kind (searchtop.go).
	terms map[string]string
	// topUsed counts the queries a term list answered, topBuilt the
	// lists made (for the tests).
	topUsed, topBuilt int64
	// topSeen is the command count at the last background step.
	topSeen uint64
	config  map[string]string // FT.CONFIG SET's values (searchextra.go)
	// FT.AGGREGATE WITHCURSOR's open cursors (searchaggregate.go), the
	// rows they hold together, and the last id given.
	cursors    map[int64]*aggCursor
	cursorRows int
	nextCursor int64
}

// searchFamily is search's slot in the registry (registry.go).
var searchFamily = registerFamily("search", func(a *Actor) *search { return &search{a: a} })

// search is a's search state.
func (a *Actor) search() *search { return searchFamily.of(a) }

// load is the registry's loader: the catalog, from the database (New,
// and after a rollback may have undone some of it).
func (s *search) load() error { return s.a.loadSearch() }

// keysTouched is the registry's touchedListener, heard while an index
// exists (listenTouched): the indexes follow the changes.
func (s *search) keysTouched(ts []storage.Touch) { s.a.indexTouched(ts) }

// housekeep is the registry's housekeeper (backfillStep): the back-fill
// of the indexes still filling, their waiting FTS5 deletions, their term
// lists; more while work is left.
func (s *search) housekeep() (more bool) { return len(s.indexes) > 0 && s.a.backfillStep() }

// indexesChanged keeps the keys touched step's listening in step with the
// indexes: search hears the change record only while one exists.
func (s *search) indexesChanged() { s.a.fam.listenTouched(s, len(s.indexes) > 0) }

// defaultStopwords is RediSearch's default stop-word list.
var defaultStopwords = []string{"a", "is", "the", "an", "and", "are", "as", "at", "be", "but", "by", "for",
	"if", "in", "into", "it", "no", "not", "of", "on", "or", "such", "that", "their", "then", "there", "these",
	"they", "this", "to", "was", "will", "with"}

// The limits on what clients can make: indexes and aliases.
const (
	maxSearchIndexes = 256
	maxSearchAliases = 1024
)

// backfillBatch is how many keys of database 0 one housekeeping step's
// back-fill looks at.
const backfillBatch = 1000

// loadSearch loads the stored index definitions (at start-up, and after
// a rollback may have undone some).
func (a *Actor) loadSearch() error {
	s := a.search()
	s.indexes = map[string]*ftIndex{}
	s.aliases = map[string]string{}
	s.indexesChanged()
	rows, err := a.st.SearchIndexes()
	if err != nil {
		return err
	}
	for _, r := range rows {
		idx := &ftIndex{name: r.Name, id: r.ID, cursor: r.Cursor, gc: true}
		if err := json.Unmarshal(r.Spec, &idx.spec); err != nil {
			return err
		}
		idx.prepare()
		s.indexes[r.Name] = idx
	}
	s.indexesChanged()
	if s.aliases, err = a.st.SearchAliases(); err != nil {
		return err
	}
	return a.loadSynonyms()
}

func (idx *ftIndex) prepare() {
	l := idx.layout()
	var b strings.Builder
	b.WriteString("INSERT INTO " + idx.table("docs") + " (key")
	for i := range idx.spec.Fields {
		b.WriteString(", v" + strconv.Itoa(i))
	}
	b.WriteString(") VALUES (?" + strings.Repeat(", ?", len(idx.spec.Fields)) + ")")
	idx.sql = ftSQL{
		lookup: "SELECT docid FROM " + idx.table("docs") + " WHERE key = ?",
		insDoc: b.String(),
		insTag: "INSERT OR IGNORE INTO " + idx.table("tags") + " (field, val, docid) VALUES (?, ?, ?)",
		remove: []string{"DELETE FROM " + idx.table("docs") + " WHERE docid = ?",
			"DELETE FROM " + idx.table("tags") + " WHERE docid = ?"},
	}
	for k, t := range []struct {
		kind string
		cols []int
	}{{"s", l.Stemmed}, {"r", l.Raw}} {
		if len(t.cols) == 0 {
			continue
		}
		b.Reset()
		b.WriteString("INSERT INTO " + idx.table(t.kind) + " (rowid")
		for _, c := range t.cols {
			b.WriteString(", c" + strconv.Itoa(c))
		}
		b.WriteString(") VALUES (?" + strings.Repeat(", ?", len(t.cols)) + ")")
		idx.sql.insText[k] = b.String()
	}
	if len(l.Stemmed)+len(l.Raw) > 0 {
		idx.sql.remove = append(idx.sql.remove, "INSERT INTO "+idx.table("gc")+" (docid) VALUES (?)")
	}
	idx.filter = nil
	if idx.spec.Filter != "" {
		// Checked when the index was created.
		idx.filter, _ = parseAExpr(idx.spec.Filter)
	}
	idx.stop = map[string]bool{}
	words := defaultStopwords
	if idx.spec.Stopwords != nil {
		words = *idx.spec.Stopwords
	}
	for _, w := range words {
		idx.stop[strings.ToLower(w)] = true
	}
}

// layout is the shape of idx's tables.
func (idx *ftIndex) layout() storage.SearchLayout {
	l := storage.SearchLayout{ID: idx.id, Fields: len(idx.spec.Fields)}
	for i, f := range idx.spec.Fields {
		switch {
		case f.Type == ftNumeric:
			l.Numeric = append(l.Numeric, i)
		case f.Type == ftText && !f.NoIndex && f.NoStem:
			l.Raw = append(l.Raw, i)
		case f.Type == ftText && !f.NoIndex:
			l.Stemmed = append(l.Stemmed, i)
		}
	}
	return l
}

// matches reports whether key is under one of idx's prefixes.
func (idx *ftIndex) matches(key []byte) bool {
	if len(idx.spec.Prefixes) == 0 {
		return true
	}
	for _, p := range idx.spec.Prefixes {
		if len(key) >= len(p) && string(key[:len(p)]) == p {
			return true
		}
	}
	return false
}

// field finds a schema field by the name queries use (its alias, or its
// name); -1 when there is none.
func (idx *ftIndex) field(name string) int {
	for i := range idx.spec.Fields {
		if idx.spec.Fields[i].id() == name {
			return i
		}
	}
	return -1
}

func (idx *ftIndex) table(kind string) string { return storage.SearchTable(idx.id, kind) }

// lookupIndex finds an index by name or alias.
func (a *Actor) lookupIndex(name []byte) *ftIndex {
	s := a.search()
	if idx := s.indexes[string(name)]; idx != nil {
		return idx
	}
	if target, ok := s.aliases[string(name)]; ok {
		return s.indexes[target]
	}
	return nil
}

// saveIndex stores idx's definition.
func (a *Actor) saveIndex(idx *ftIndex) error {
	spec, err := json.Marshal(&idx.spec)
	if err != nil {
		return err
	}
	return a.st.SaveSearchIndex(storage.SearchIndexRow{Name: idx.name, ID: idx.id, Spec: spec, Cursor: idx.cursor})
}

// FT.CREATE index [ON HASH] [PREFIX count prefix ...] [LANGUAGE lang]
// [SCORE s] [STOPWORDS count word ...] SCHEMA field [AS alias] type [opts] ...
func cmdFtCreate(c *Ctx) error {
	if c.db != 0 {
		return ErrFtDBNotZero
	}
	name := string(c.args[1])
	indexes := c.a.search().indexes
	if indexes[name] != nil {
		return ErrFtIndexExists
	}
	if len(indexes) >= maxSearchIndexes {
		return errFtTooMany("indexes", maxSearchIndexes)
	}
	spec := ftSpec{Score: 1}
	skipScan := false
	args := c.args[2:]
	i := 0
	for ; i < len(args); i++ {
		switch {
		case eqFold(args[i], "ON"):
			if i+1 >= len(args) {
				return ErrFtOnArgs
			}
			i++
			if !eqFold(args[i], "HASH") {
				return ErrFtOnType
			}
		case eqFold(args[i], "PREFIX"):
			_, next, err := ftCount(args, i, "PREFIX")
			if err != nil {
				return err
			}
			for _, p := range args[i+2 : next] {
				spec.Prefixes = append(spec.Prefixes, string(p))
			}
			i = next - 1
		case eqFold(args[i], "LANGUAGE"):
			if i+1 >= len(args) {
				return ErrFtLanguageArgs
			}
			i++
			if !eqFold(args[i], "english") {
				return errFtLanguage(args[i])
			}
			spec.Language = "english"
		case eqFold(args[i], "SCORE"):
			if i+1 >= len(args) {
				return ErrFtScoreArgs
			}
			i++
			f, ok := parseFloat(args[i])
			if !ok || f < 0 || f > 1 {
				return ErrFtScoreRange
			}
			spec.Score = f
		case eqFold(args[i], "STOPWORDS"):
			_, next, err := ftCount(args, i, "STOPWORDS")
			if err != nil {
				return err
			}
			words := []string{}
			for _, w := range args[i+2 : next] {
				words = append(words, string(w))
			}
			spec.Stopwords = &words
			i = next - 1
		case eqFold(args[i], "FILTER"):
			if i+1 >= len(args) {
				return errFtArgMissing(args[i])
			}
			i++
			if _, err := parseAExpr(string(args[i])); err != nil {
				return err
			}
			spec.Filter = string(args[i])
		case eqFold(args[i], "SCHEMA"):
			fields, err := parseFtSchema(args[i+1:], nil)
			if err != nil {
				return err
			}
			spec.Fields = fields
			i = len(args)
		case eqFold(args[i], "SKIPINITIALSCAN"):
			skipScan = true
		case eqFold(args[i], "MAXTEXTFIELDS"), eqFold(args[i], "NOOFFSETS"), eqFold(args[i], "NOHL"),
			eqFold(args[i], "NOFIELDS"), eqFold(args[i], "NOFREQS"):
			// Accepted for compatibility; they change nothing here.
		default:
			return errFtUnknownArg(args[i])
		}
	}
	if spec.Fields == nil {
		return ErrFtNoSchema
	}
	idx := &ftIndex{name: name, spec: spec}
	for _, o := range c.a.search().indexes {
		idx.id = max(idx.id, o.id)
	}
	idx.id++
	idx.prepare()
	if err := c.a.createIndexTables(idx); err != nil {
		return err
	}
	if skipScan {
		// Only the hashes written from now on.
		idx.cursor = -1
		if err := c.a.st.SetSearchCursor(idx.name, -1); err != nil {
			return err
		}
	}
	c.w.OK()
	return nil
}

// ftCount reads "WORD count item..." at args[i]: n items, next the index
// after the last.
func ftCount(args [][]byte, i int, what string) (n, next int, err error) {
	if i+1 >= len(args) {
		return 0, 0, errFtBadCount(what)
	}
	v, perr := parseInt(args[i+1])
	if perr != nil || v < 0 {
		return 0, 0, errFtBadCount(what)
	}
	if int64(len(args)-i-2) < v {
		return 0, 0, errFtBadCount(what)
	}
	return int(v), i + 2 + int(v), nil
}

// parseFtSchema parses SCHEMA's field list; have is the schema so far
// (FT.ALTER), for duplicate names.
func parseFtSchema(args [][]byte, have []ftField) ([]ftField, error) {
	fields := have
	for i := 0; i < len(args); {
		f := ftField{Name: string(args[i])}
		i++
		if i+1 < len(args) && eqFold(args[i], "AS") {
			f.Alias = string(args[i+1])
			i += 2
		}
		if i >= len(args) {
			return nil, errFtFieldType(f.Name)
		}
		switch {
		case eqFold(args[i], ftText):
			f.Type, f.Weight = ftText, 1
		case eqFold(args[i], ftTag):
			f.Type, f.Sep = ftTag, ","
		case eqFold(args[i], ftNumeric):
			f.Type = ftNumeric
		default:
			return nil, errFtFieldTypeNamed(args[i])
		}
		i++
	opts:
		for i < len(args) {
			switch {
			case f.Type == ftText && eqFold(args[i], "WEIGHT"):
				if i+1 >= len(args) {
					return nil, ErrFtWeightArgs
				}
				w, ok := parseFloat(args[i+1])
				if !ok || w < 0 {
					return nil, ErrFtWeight
				}
				f.Weight = w
				i += 2
			case f.Type == ftText && eqFold(args[i], "NOSTEM"):
				f.NoStem = true
				i++
			case f.Type == ftText && eqFold(args[i], "PHONETIC"):
				if i+1 >= len(args) {
					return nil, ErrFtPhoneticArgs
				}
				i += 2
			case f.Type == ftTag && eqFold(args[i], "SEPARATOR"):
				if i+1 >= len(args) || len(args[i+1]) != 1 {
					return nil, ErrFtSeparator
				}
				f.Sep = string(args[i+1])
				i += 2
			case f.Type == ftTag && eqFold(args[i], "CASESENSITIVE"):
				f.CaseSensitive = true
				i++
			case eqFold(args[i], "SORTABLE"):
				f.Sortable = true
				i++
				if i < len(args) && eqFold(args[i], "UNF") {
					i++
				}
			case eqFold(args[i], "NOINDEX"):
				f.NoIndex = true
				i++
			default:
				break opts
			}
		}
		for _, o := range fields {
			if o.id() == f.id() {
				return nil, errFtDupField(f.id())
			}
		}
		fields = append(fields, f)
	}
	if len(fields) == 0 {
		return nil, ErrFtNoFields
	}
	return fields, nil
}

// createIndexTables stores idx, creates its tables and starts its
// back-fill.
func (a *Actor) createIndexTables(idx *ftIndex) error {
	idx.cursor = 0
	idx.topDone, idx.topPhase, idx.topCursor = false, 0, ""
	if err := a.st.CreateSearchTables(idx.layout()); err != nil {
		return err
	}
	if err := a.saveIndex(idx); err != nil {
		return err
	}
	s := a.search()
	s.indexes[idx.name] = idx
	s.indexesChanged()
	a.sweepMore = true // start the back-fill at the end of the round
	return nil
}

// FT.DROPINDEX index [DD]
func cmdFtDropIndex(c *Ctx) error {
	if len(c.args) > 3 || (len(c.args) == 3 && !c.argEq(2, "DD")) {
		return ErrSyntax
	}
	idx := c.a.search().indexes[string(c.args[1])]
	if idx == nil {
		return ErrFtUnknownIndex
	}
	if len(c.args) == 3 {
		if err := c.a.deleteIndexed(idx); err != nil {
			return err
		}
	}
	if err := c.a.dropIndex(idx); err != nil {
		return err
	}
	c.w.OK()
	return nil
}

// FT.DROP index [KEEPDOCS]: RediSearch 1's form, which deletes the
// documents unless told to keep them.
func cmdFtDrop(c *Ctx) error {
	if len(c.args) > 3 {
		return ErrSyntax
	}
	idx := c.a.search().indexes[string(c.args[1])]
	if idx == nil {
		return ErrFtUnknownIndex
	}
	if len(c.args) < 3 || !c.argEq(2, "KEEPDOCS") {
		if err := c.a.deleteIndexed(idx); err != nil {
			return err
		}
	}
	if err := c.a.dropIndex(idx); err != nil {
		return err
	}
	c.w.OK()
	return nil
}

// deleteIndexed deletes every hash idx has a document for.
func (a *Actor) deleteIndexed(idx *ftIndex) error {
	var keys [][]byte
	err := a.st.SearchQuery("SELECT key FROM "+idx.table("docs"), false, nil, func(r storage.SearchRow) bool {
		keys = append(keys, r.Bytes(0, nil))
		return true
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if _, err := a.st.Delete(0, k); err != nil {
			return err
		}
	}
	return nil
}

func (a *Actor) dropIndex(idx *ftIndex) error {
	if err := a.st.DropSearchTables(idx.id); err != nil {
		return err
	}
	if err := a.st.SearchExec("DELETE FROM search_synonyms WHERE idx = ?", idx.name); err != nil {
		return err
	}
	if err := a.st.DeleteSearchIndex(idx.name); err != nil {
		return err
	}
	s := a.search()
	delete(s.indexes, idx.name)
	for al, t := range s.aliases {
		if t == idx.name {
			delete(s.aliases, al)
		}
	}
	s.indexesChanged()
	return nil
}

// FT._LIST
func cmdFtList(c *Ctx) error {
	indexes := c.a.search().indexes
	names := make([]string, 0, len(indexes))
	for n := range indexes {
		names = append(names, n)
	}
	sort.Strings(names)
	c.w.Array(len(names))
	for _, n := range names {
		c.w.BulkString(n)
	}
	return nil
}

// FT.ALTER index [SKIPINITIALSCAN] SCHEMA ADD field [AS alias] type [opts] ...
func cmdFtAlter(c *Ctx) error {
	idx := c.a.lookupIndex(c.args[1])
	if idx == nil {
		return ErrFtUnknownIndexLower
	}
	i := 2
	if i < len(c.args) && c.argEq(i, "SKIPINITIALSCAN") {
		i++
	}
	if i+1 >= len(c.args) || !c.argEq(i, "SCHEMA") || !c.argEq(i+1, "ADD") {
		return ErrFtAlterSyntax
	}
	if i+2 >= len(c.args) {
		return ErrFtNoFields
	}
	fields, err := parseFtSchema(c.args[i+2:], append([]ftField(nil), idx.spec.Fields...))
	if err != nil {
		return err
	}
	// FTS5 tables cannot gain columns: the tables are built again and
	// filled by the back-fill, as RediSearch rescans after an ALTER.
	idx.spec.Fields = fields
	idx.prepare()
	if err := c.a.createIndexTables(idx); err != nil {
		return err
	}
	c.w.OK()
	return nil
}

// FT.ALIASADD alias index, FT.ALIASUPDATE alias index
func cmdFtAliasAdd(c *Ctx) error    { return ftAlias(c, false) }
func cmdFtAliasUpdate(c *Ctx) error { return ftAlias(c, true) }

func ftAlias(c *Ctx, update bool) error {
	s := c.a.search()
	alias := string(c.args[1])
	if _, ok := s.aliases[alias]; ok && !update {
		return ErrFtAliasExists
	}
	idx := c.a.lookupIndex(c.args[2])
	if idx == nil {
		return ErrFtUnknownIndexLower
	}
	if s.indexes[alias] != nil {
		return ErrFtAliasExists
	}
	if _, ok := s.aliases[alias]; !ok && len(s.aliases) >= maxSearchAliases {
		return errFtTooMany("aliases", maxSearchAliases)
	}
	if err := c.st.SaveSearchAlias(alias, idx.name); err != nil {
		return err
	}
	s.aliases[alias] = idx.name
	c.w.OK()
	return nil
}

// FT.ALIASDEL alias
func cmdFtAliasDel(c *Ctx) error {
	s := c.a.search()
	alias := string(c.args[1])
	if _, ok := s.aliases[alias]; !ok {
		return ErrFtAliasMissing
	}
	if err := c.st.SaveSearchAlias(alias, ""); err != nil {
		return err
	}
	delete(s.aliases, alias)
	c.w.OK()
	return nil
}

// FT.TAGVALS index field
func cmdFtTagVals(c *Ctx) error {
	idx := c.a.lookupIndex(c.args[1])
	if idx == nil {
		return ErrFtUnknownIndex
	}
	f := idx.field(string(c.args[2]))
	if f < 0 || idx.spec.Fields[f].Type != ftTag {
		return errFtNotTag(c.args[2])
	}
	var vals [][]byte
	err := c.st.SearchQuery("SELECT DISTINCT val FROM "+idx.table("tags")+" WHERE field = ?1 ORDER BY val", false,
		[]any{f}, func(r storage.SearchRow) bool {
			vals = append(vals, r.Bytes(0, nil))
			return true
		})
	if err != nil {
		return err
	}
	c.w.Set(len(vals))
	for _, v := range vals {
		c.w.Bulk(v)
	}
	return nil
}

// FT.INFO index
func cmdFtInfo(c *Ctx) error {
	idx := c.a.lookupIndex(c.args[1])
	if idx == nil {
		return ErrFtUnknownIndex
	}
	var docs, maxID int64
	err := c.st.SearchQuery("SELECT count(*), coalesce(max(docid), 0) FROM "+idx.table("docs"), false, nil,
		func(r storage.SearchRow) bool {
			docs, maxID = r.Int(0), r.Int(1)
			return false
		})
	if err != nil {
		return err
	}
	var tags int64
	if err := c.st.SearchQuery("SELECT count(*) FROM "+idx.table("tags"), false, nil, func(r storage.SearchRow) bool {
		tags = r.Int(0)
		return false
	}); err != nil {
		return err
	}
	percent := 1.0
	indexing := int64(0)
	if idx.cursor >= 0 {
		indexing = 1
		percent = 0
		if n := c.st.DBSize(0); n > 0 {
			percent = math.Min(float64(docs)/float64(n), 0.99)
		}
	}
	w := c.w
	sp := &idx.spec
	n := 13 // pairs: a map in RESP3, flat in RESP2
	if sp.Stopwords != nil {
		n++
	}
	w.Map(n)
	w.BulkString("index_name")
	w.BulkString(idx.name)
	w.BulkString("index_options")
	w.Array(0)
	w.BulkString("index_definition")
	if sp.Filter != "" {
		w.Array(8)
	} else {
		w.Array(6)
	}
	w.BulkString("key_type")
	w.BulkString("HASH")
	w.BulkString("prefixes")
	prefixes := sp.Prefixes
	if len(prefixes) == 0 {
		prefixes = []string{""}
	}
	w.Array(len(prefixes))
	for _, p := range prefixes {
		w.BulkString(p)
	}
	if sp.Filter != "" {
		w.BulkString("filter")
		w.BulkString(sp.Filter)
	}
	w.BulkString("default_score")
	w.Bulk(strconv.AppendFloat(nil, sp.Score, 'g', -1, 64))
	w.BulkString("attributes")
	w.Array(len(sp.Fields))
	for _, f := range sp.Fields {
		attrs := []string{"identifier", f.Name, "attribute", f.id(), "type", f.Type}
		switch f.Type {
		case ftText:
			attrs = append(attrs, "WEIGHT", strconv.FormatFloat(f.Weight, 'g', -1, 64))
			if f.NoStem {
				attrs = append(attrs, "NOSTEM")
			}
		case ftTag:
			attrs = append(attrs, "SEPARATOR", f.Sep)
			if f.CaseSensitive {
				attrs = append(attrs, "CASESENSITIVE")
			}
		}
		if f.Sortable {
			attrs = append(attrs, "SORTABLE")
		}
		if f.NoIndex {
			attrs = append(attrs, "NOINDEX")
		}
		w.Array(len(attrs))
		for _, s := range attrs {
			w.BulkString(s)
		}
	}
	w.BulkString("num_docs")
	w.Int(docs)
	w.BulkString("max_doc_id")
	w.Int(maxID)
	w.BulkString("num_terms")
	w.Int(0)
	w.BulkString("num_records")
	w.Int(tags)
	w.BulkString("hash_indexing_failures")
	w.Int(idx.failures)
	w.BulkString("indexing")
	w.Int(indexing)
	w.BulkString("percent_indexed")
	w.Bulk(strconv.AppendFloat(nil, percent, 'g', -1, 64))
	w.BulkString("number_of_uses")
	w.Int(idx.uses)
	w.BulkString("cleaning")
	w.Int(0)
	if sp.Stopwords != nil {
		w.BulkString("stopwords_list")
		w.Array(len(*sp.Stopwords))
		for _, s := range *sp.Stopwords {
			w.BulkString(s)
		}
	}
	return nil
}

// indexTouched is the keys touched step's part for search: every change
// to a key of database 0 under an index's prefixes indexes the key again
// from what it now holds (a hash, or nothing). Only called while indexes
// exist (search.keysTouched).
func (a *Actor) indexTouched(ts []storage.Touch) {
	s := a.search()
	var last []byte
	for i := range ts {
		t := &ts[i]
		switch t.Kind {
		case storage.Written, storage.Added, storage.Removed, storage.Modified, storage.Deleted, storage.Expired,
			storage.RenamedFrom, storage.RenamedTo, storage.MovedFrom, storage.MovedTo, storage.CopiedTo:
			if t.DB != 0 || (last != nil && string(last) == string(t.Key)) {
				continue
			}
			last = t.Key
			for _, idx := range s.indexes {
				if idx.matches(t.Key) {
					if err := a.indexKey(idx, t.Key); err != nil {
						a.roundErr = err
						return
					}
				}
			}
		case storage.Flushed, storage.Swapped:
			if t.DB != 0 && !(t.Kind == storage.Swapped && t.Other == 0) {
				continue
			}
			last = nil
			for _, idx := range s.indexes {
				// Everything of database 0 went, or was exchanged: the
				// index starts again empty, filled by the back-fill.
				if err := a.createIndexTables(idx); err != nil {
					a.roundErr = err
					return
				}
			}
		}
	}
}

// indexKey brings key's document in idx up to date with the hash key now
// holds in database 0: its old document goes, and a new one is made if
// the key is a hash (a new document id, as RediSearch gives one on every
// update).
func (a *Actor) indexKey(idx *ftIndex, key []byte) error {
	if err := a.unindexKey(idx, key); err != nil {
		return err
	}
	s := a.search()
	fields := idx.spec.Fields
	if cap(s.scratch) < len(fields) {
		s.scratch = make([][]byte, len(fields))
	}
	vals := s.scratch[:len(fields)]
	clear(vals)
	var frow *arow // the hash as FILTER sees it
	if idx.filter != nil {
		frow = &arow{}
		frow.set("__key", strVal(string(key)))
	}
	found, err := a.st.SearchDoc(key, func(field, value []byte) {
		for i := range fields {
			if fields[i].Name == string(field) {
				vals[i] = append([]byte{}, value...)
			}
		}
		if frow != nil {
			frow.set(string(field), strVal(string(value)))
		}
	})
	if err != nil || !found {
		return err
	}
	if frow != nil && !idx.filter.eval(frow).truthy() {
		return nil // FILTER leaves this hash out
	}
	// The document row: key and one value column per field.
	row := append(s.vals[:0], key)
	for i, f := range fields {
		switch {
		case vals[i] == nil:
			row = append(row, nil)
		case f.Type == ftNumeric:
			v, ok := parseFtNumber(vals[i])
			if !ok {
				idx.failures++
				return nil
			}
			row = append(row, v)
		default:
			row = append(row, string(vals[i]))
		}
	}
	s.vals = row
	if err := a.st.SearchExec(idx.sql.insDoc, row...); err != nil {
		return err
	}
	docid := a.st.SearchLastID()
	idx.written = true
	l := idx.layout()
	for k, cols := range [2][]int{l.Stemmed, l.Raw} {
		if len(cols) == 0 {
			continue
		}
		row = append(row[:0], docid)
		for _, c := range cols {
			if vals[c] == nil {
				row = append(row, nil)
			} else {
				row = append(row, string(vals[c]))
			}
		}
		if err := a.st.SearchExec(idx.sql.insText[k], row...); err != nil {
			return err
		}
	}
	s.vals = row[:0]
	tagSQL := idx.sql.insTag
	for i, f := range fields {
		if f.Type != ftTag || vals[i] == nil || f.NoIndex {
			continue
		}
		for _, tag := range splitTags(vals[i], f.Sep, f.CaseSensitive) {
			if err := a.st.SearchExec(tagSQL, i, []byte(tag), docid); err != nil {
				return err
			}
		}
	}
	return nil
}

// hasDoc reports whether key has a document in idx.
func (a *Actor) hasDoc(idx *ftIndex, key []byte) (bool, error) {
	has := false
	err := a.st.SearchQuery(idx.sql.lookup, true, []any{key},
		func(storage.SearchRow) bool {
			has = true
			return false
		})
	return has, err
}

// unindexKey removes key's document from idx, if it has one.
func (a *Actor) unindexKey(idx *ftIndex, key []byte) error {
	docid := int64(0)
	err := a.st.SearchQuery(idx.sql.lookup, true, []any{key},
		func(r storage.SearchRow) bool {
			docid = r.Int(0)
			return false
		})
	if err != nil || docid == 0 {
		return err
	}
	idx.written = true
	// The FTS5 rows go later, all together (collectIndex).
	idx.gc = idx.gc || len(idx.sql.remove) > 2
	for _, q := range idx.sql.remove {
		if err := a.st.SearchExec(q, docid); err != nil {
			return err
		}
	}
	return nil
}

// splitTags splits a TAG field's value at sep, trims each tag, and
// lowercases it unless the field is case sensitive; empty tags go.
func splitTags(v []byte, sep string, caseSensitive bool) []string {
	var out []string
	for _, t := range strings.Split(string(v), sep) {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if !caseSensitive {
			t = strings.ToLower(t)
		}
		out = append(out, t)
	}
	return out
}

// parseFtNumber parses a NUMERIC field's value (or a range bound).
func parseFtNumber(b []byte) (float64, bool) {
	s := strings.TrimSpace(string(b))
	switch strings.ToLower(s) {
	case "inf", "+inf":
		return math.Inf(1), true
	case "-inf":
		return math.Inf(-1), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// collectIndex deletes the FTS5 rows of the documents that went since
// the last time, in document order, in one go.
func (a *Actor) collectIndex(idx *ftIndex) error {
	idx.gc = false
	l := idx.layout()
	gc := idx.table("gc")
	for _, t := range []struct {
		kind string
		cols []int
	}{{"s", l.Stemmed}, {"r", l.Raw}} {
		if len(t.cols) == 0 {
			continue
		}
		tbl := idx.table(t.kind)
		if err := a.st.SearchExec("DELETE FROM " + tbl + " WHERE rowid IN (SELECT docid FROM " + gc + " ORDER BY docid)"); err != nil {
			return err
		}
	}
	return a.st.SearchExec("DELETE FROM " + gc)
}

// backfillStep indexes the next batch of database 0's keys for every
// index still being filled; it reports whether any has more to do.
func (a *Actor) backfillStep() bool {
	more := false
	var entries []storage.ScanEntry
	for _, idx := range a.search().indexes {
		if idx.gc {
			if err := a.collectIndex(idx); err != nil {
				a.roundErr = err
				return false
			}
		}
		if idx.cursor < 0 {
			// Filled: make the term lists (searchtop.go).
			m, err := a.topStep(idx)
			if err != nil {
				a.roundErr = err
				return false
			}
			more = more || m
			continue
		}
		var next uint64
		var err error
		entries, next, err = a.st.Scan(0, uint64(idx.cursor), backfillBatch, entries[:0])
		if err != nil {
			a.roundErr = err
			return false
		}
		for _, e := range entries {
			if e.Type == storage.TypeHash && idx.matches(e.Key) {
				// A key with a document is up to date: every change
				// since FT.CREATE went through indexTouched.
				has, err := a.hasDoc(idx, e.Key)
				if err != nil {
					a.roundErr = err
					return false
				}
				if has {
					continue
				}
				if err := a.indexKey(idx, e.Key); err != nil {
					a.roundErr = err
					return false
				}
			}
		}
		idx.cursor = int64(next)
		if next == 0 {
			idx.cursor = -1
		} else {
			more = true
		}
		if err := a.st.SetSearchCursor(idx.name, idx.cursor); err != nil {
			a.roundErr = err
			return false
		}
	}
	return more
}
