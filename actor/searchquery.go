package actor

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cellar-db/cellar/storage"
)

// The query language (RediSearch's, dialect 2's precedence) and FT.SEARCH.
// A query parses into a tree (qnode); the tree compiles into one SQL
// statement over the index's tables: each node is a set of document ids
// (FTS5 MATCH for text, the tags table for TAG, the value column's index
// for NUMERIC), combined with INTERSECT, UNION and EXCEPT; the score is
// FTS5's BM25 over the query's positive text terms.

type qop uint8

const (
	qAnd  qop = iota
	qOr       // a | b
	qNot      // -a
	qOpt      // ~a: matches whether or not a does (a counts for the score)
	qText     // a term, a prefix (foo*) or a phrase ("a b")
	qTag      // @f:{a | b}
	qNum      // @f:[lo hi]
	qAll      // *
	qNone     // matches nothing (an unknown field)
)

type qnode struct {
	op     qop
	kids   []*qnode
	words  []string // qText: a term, or a phrase's words
	phrase bool
	prefix bool
	fields []int // qText: the TEXT fields it is limited to (nil: all); qTag, qNum: [field]
	tags   []qtag
	lo, hi float64
	loEx   bool
	hiEx   bool
}

type qtag struct {
	val    string
	prefix bool
}

// qparser parses one query.
type qparser struct {
	s      string
	pos    int
	idx    *ftIndex
	params map[string]string
	nostop bool
	scope  []int // the fields of the @field:(...) being parsed; nil: none
}

// maxQueryDepth bounds the nesting of a query's parentheses and operators.
const maxQueryDepth = 256

// errNear is RediSearch's syntax error at the token that starts at pos:
// a separator character, or the term it begins.
func (p *qparser) errNear() error {
	end := p.pos
	if end < len(p.s) {
		end++
		if !isQuerySep(p.s[p.pos]) {
			for end < len(p.s) && !isQuerySep(p.s[end]) {
				end++
			}
		}
	}
	return errFtSyntax(p.pos, p.s[p.pos:end])
}

func (p *qparser) eof() bool { return p.pos >= len(p.s) }

func (p *qparser) space() {
	for p.pos < len(p.s) && isQuerySpace(p.s[p.pos]) {
		p.pos++
	}
}

func isQuerySpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isQuerySep reports whether c ends a term.
func isQuerySep(c byte) bool {
	return isQuerySpace(c) || strings.IndexByte(",.<>{}[]\"':;!@#$%^&*()-+=~|/\\", c) >= 0
}

// parse parses the whole query; nil means it matches nothing (only stop
// words).
func (p *qparser) parse() (*qnode, error) {
	n, err := p.union(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if !p.eof() {
		return nil, p.errNear()
	}
	return n, nil
}

func (p *qparser) union(depth int) (*qnode, error) {
	if depth > maxQueryDepth {
		return nil, ErrFtQueryTooDeep
	}
	var kids []*qnode
	for {
		n, err := p.inter(depth + 1)
		if err != nil {
			return nil, err
		}
		if n != nil {
			kids = append(kids, n)
		}
		p.space()
		if p.eof() || p.s[p.pos] != '|' {
			break
		}
		p.pos++
	}
	switch len(kids) {
	case 0:
		return nil, nil
	case 1:
		return kids[0], nil
	}
	return &qnode{op: qOr, kids: kids}, nil
}

func (p *qparser) inter(depth int) (*qnode, error) {
	var kids []*qnode
	for {
		p.space()
		if p.eof() || p.s[p.pos] == '|' || p.s[p.pos] == ')' {
			break
		}
		n, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		if n != nil {
			kids = append(kids, n)
		}
	}
	switch len(kids) {
	case 0:
		return nil, nil
	case 1:
		return kids[0], nil
	}
	return &qnode{op: qAnd, kids: kids}, nil
}

func (p *qparser) unary(depth int) (*qnode, error) {
	if depth > maxQueryDepth {
		return nil, ErrFtQueryTooDeep
	}
	p.space()
	if p.eof() {
		return nil, p.errNear()
	}
	switch p.s[p.pos] {
	case '-', '~':
		op := qNot
		if p.s[p.pos] == '~' {
			op = qOpt
		}
		p.pos++
		k, err := p.unary(depth + 1)
		if err != nil || k == nil {
			return nil, err
		}
		return &qnode{op: op, kids: []*qnode{k}}, nil
	}
	return p.prim(depth + 1)
}

func (p *qparser) prim(depth int) (*qnode, error) {
	c := p.s[p.pos]
	switch {
	case c == '(':
		p.pos++
		n, err := p.union(depth + 1)
		if err != nil {
			return nil, err
		}
		p.space()
		if p.eof() || p.s[p.pos] != ')' {
			return nil, p.errNear()
		}
		p.pos++
		return n, nil
	case c == '@':
		return p.fieldExpr(depth)
	case c == '"':
		return p.phrase()
	case c == '*':
		p.pos++
		return &qnode{op: qAll}, nil
	case c == '%':
		// Fuzzy matching (%term%) is matched exactly.
		for !p.eof() && p.s[p.pos] == '%' {
			p.pos++
		}
		n, err := p.term()
		for !p.eof() && p.s[p.pos] == '%' {
			p.pos++
		}
		return n, err
	case c == '$':
		return p.term()
	case c == ')' || c == '|':
		return nil, p.errNear()
	case strings.IndexByte(",.<>;!#&+=/':^", c) >= 0:
		// Punctuation between terms separates them, as in the text.
		p.pos++
		return nil, nil
	case isQuerySep(c) && c != '\\':
		return nil, p.errNear()
	}
	return p.term()
}

// word reads a term's characters (a backslash escapes the next one).
func (p *qparser) word() string {
	var b strings.Builder
	for !p.eof() {
		c := p.s[p.pos]
		if c == '\\' && p.pos+1 < len(p.s) {
			b.WriteByte(p.s[p.pos+1])
			p.pos += 2
			continue
		}
		// A decimal point inside a number is part of it (3.14).
		if c == '.' && b.Len() > 0 && isDigit(p.s[p.pos-1]) && p.pos+1 < len(p.s) && isDigit(p.s[p.pos+1]) {
			b.WriteByte(c)
			p.pos++
			continue
		}
		if isQuerySep(c) {
			break
		}
		b.WriteByte(c)
		p.pos++
	}
	return b.String()
}

// param reads $name and returns its value.
func (p *qparser) param() (string, error) {
	start := p.pos
	p.pos++
	name := p.word()
	v, ok := p.params[name]
	if !ok || name == "" {
		p.pos = start
		return "", errFtNoParam(name)
	}
	return v, nil
}

func (p *qparser) term() (*qnode, error) {
	var w string
	if p.s[p.pos] == '$' {
		v, err := p.param()
		if err != nil {
			return nil, err
		}
		w = v
	} else {
		w = p.word()
	}
	if w == "" {
		return nil, p.errNear()
	}
	n := &qnode{op: qText, words: []string{strings.ToLower(w)}, fields: p.scope}
	if !p.eof() && p.s[p.pos] == '*' {
		p.pos++
		n.prefix = true
		return n, nil
	}
	if !p.nostop && p.idx.stop[n.words[0]] {
		return nil, nil
	}
	if syns := p.idx.synonyms(n.words[0]); syns != nil {
		or := &qnode{op: qOr}
		for _, s := range syns {
			or.kids = append(or.kids, &qnode{op: qText, words: []string{s}, fields: p.scope})
		}
		return or, nil
	}
	return n, nil
}

func (p *qparser) phrase() (*qnode, error) {
	p.pos++
	var b strings.Builder
	for {
		if p.eof() {
			return nil, p.errNear()
		}
		c := p.s[p.pos]
		if c == '\\' && p.pos+1 < len(p.s) {
			b.WriteByte(p.s[p.pos+1])
			p.pos += 2
			continue
		}
		p.pos++
		if c == '"' {
			break
		}
		b.WriteByte(c)
	}
	words := strings.FieldsFunc(strings.ToLower(b.String()), func(r rune) bool {
		return r < 128 && isQuerySep(byte(r))
	})
	if len(words) == 0 {
		return nil, nil
	}
	return &qnode{op: qText, words: words, phrase: true, fields: p.scope}, nil
}

// fieldExpr parses @field:... (a text scope, a numeric range or a tag
// list).
func (p *qparser) fieldExpr(depth int) (*qnode, error) {
	p.pos++
	name := p.word()
	if name == "" || p.eof() || p.s[p.pos] != ':' {
		return nil, p.errNear()
	}
	p.pos++
	f := p.idx.field(name)
	p.space()
	if p.eof() {
		return nil, p.errNear()
	}
	switch p.s[p.pos] {
	case '[':
		n, err := p.numRange()
		if err != nil {
			return nil, err
		}
		if f < 0 || p.idx.spec.Fields[f].Type != ftNumeric {
			return &qnode{op: qNone}, nil
		}
		n.fields = []int{f}
		return n, nil
	case '{':
		n, err := p.tagList(f)
		if err != nil {
			return nil, err
		}
		if f < 0 || p.idx.spec.Fields[f].Type != ftTag {
			return &qnode{op: qNone}, nil
		}
		n.fields = []int{f}
		return n, nil
	}
	saved := p.scope
	scope := []int{-1} // an unknown or non-TEXT field: nothing matches
	if f >= 0 && p.idx.spec.Fields[f].Type == ftText {
		scope = []int{f}
	}
	if saved != nil {
		scope = intersectFields(saved, scope)
	}
	p.scope = scope
	n, err := p.unary(depth + 1)
	p.scope = saved
	return n, err
}

func intersectFields(a, b []int) []int {
	out := []int{}
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
			}
		}
	}
	if len(out) == 0 {
		out = []int{-1}
	}
	return out
}

// numRange parses [lo hi], either bound exclusive with a leading '('.
func (p *qparser) numRange() (*qnode, error) {
	p.pos++
	n := &qnode{op: qNum}
	for i := 0; i < 2; i++ {
		p.space()
		start := p.pos
		for !p.eof() && !isQuerySpace(p.s[p.pos]) && p.s[p.pos] != ']' {
			p.pos++
		}
		tok := p.s[start:p.pos]
		ex := strings.HasPrefix(tok, "(")
		tok = strings.TrimPrefix(tok, "(")
		if strings.HasPrefix(tok, "$") {
			v, ok := p.params[tok[1:]]
			if !ok {
				return nil, errFtNoParam(tok[1:])
			}
			tok = v
		}
		v, ok := parseFtNumber([]byte(tok))
		if !ok || tok == "" {
			if i == 0 {
				return nil, errFtBadRange("lower", tok)
			}
			return nil, errFtBadRange("upper", tok)
		}
		if i == 0 {
			n.lo, n.loEx = v, ex
		} else {
			n.hi, n.hiEx = v, ex
		}
	}
	p.space()
	if p.eof() || p.s[p.pos] != ']' {
		return nil, p.errNear()
	}
	p.pos++
	return n, nil
}

// tagList parses {a | b* | ...} for TAG field f.
func (p *qparser) tagList(f int) (*qnode, error) {
	p.pos++
	n := &qnode{op: qTag}
	cs := f >= 0 && p.idx.spec.Fields[f].CaseSensitive
	for {
		var b strings.Builder
		escapedEnd := false
		for {
			if p.eof() {
				return nil, p.errNear()
			}
			c := p.s[p.pos]
			if c == '\\' && p.pos+1 < len(p.s) {
				b.WriteByte(p.s[p.pos+1])
				p.pos += 2
				escapedEnd = true
				continue
			}
			if c == '|' || c == '}' {
				break
			}
			b.WriteByte(c)
			escapedEnd = false
			p.pos++
		}
		raw := b.String()
		t := strings.TrimSpace(raw)
		prefix := false
		if strings.HasSuffix(t, "*") && !escapedEnd {
			prefix, t = true, strings.TrimSpace(strings.TrimSuffix(t, "*"))
		}
		if strings.HasPrefix(t, "$") && !strings.HasPrefix(raw, "\\") {
			v, ok := p.params[t[1:]]
			if !ok {
				return nil, errFtNoParam(t[1:])
			}
			t = v
		}
		if !cs {
			t = strings.ToLower(t)
		}
		if t != "" {
			n.tags = append(n.tags, qtag{val: t, prefix: prefix})
		}
		c := p.s[p.pos]
		p.pos++
		if c == '}' {
			break
		}
	}
	if len(n.tags) == 0 {
		return nil, errFtSyntax(p.pos-1, "}")
	}
	return n, nil
}

// qsql compiles a query tree into SQL over one index's tables.
type qsql struct {
	b        strings.Builder
	args     []any
	idx      *ftIndex
	l        storage.SearchLayout
	infields []int
	// scored collects, per FTS5 table, the positive text leaves' MATCH
	// expressions, for the score.
	scored map[string][]string
}

// textCols splits a text node's fields between the two FTS5 tables.
func (q *qsql) textCols(n *qnode) (stem, raw []int) {
	fields := n.fields
	if fields == nil {
		fields = q.infields
	}
	in := func(f int, set []int) bool {
		if fields == nil {
			return true
		}
		for _, x := range fields {
			if x == f {
				return true
			}
		}
		return false
	}
	for _, f := range q.l.Stemmed {
		if in(f, fields) {
			stem = append(stem, f)
		}
	}
	for _, f := range q.l.Raw {
		if in(f, fields) {
			raw = append(raw, f)
		}
	}
	return stem, raw
}

// ftsQuote quotes a string for FTS5's query syntax.
func ftsQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// matchExpr is the FTS5 MATCH expression of text node n over cols of a
// table whose columns are all (a column filter only when it limits).
func matchExpr(n *qnode, cols, all []int) string {
	var b strings.Builder
	if len(cols) < len(all) {
		b.WriteString("{")
		for i, c := range cols {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString("c" + strconv.Itoa(c))
		}
		b.WriteString("} : ")
	}
	b.WriteString(ftsQuote(strings.Join(n.words, " ")))
	if n.prefix {
		b.WriteString(" *")
	}
	return b.String()
}

// ftsOnly returns n as one FTS5 MATCH expression over one FTS5 table
// (kind "s" or "r"), when n is made only of text leaves that table holds,
// joined by AND, OR and negation inside an AND with a positive part:
// FTS5 then evaluates the whole subtree in one scan.
func (q *qsql) ftsOnly(n *qnode) (expr, kind string, ok bool) {
	switch n.op {
	case qText:
		stem, raw := q.textCols(n)
		switch {
		case len(stem) > 0 && len(raw) == 0:
			return matchExpr(n, stem, q.l.Stemmed), "s", true
		case len(raw) > 0 && len(stem) == 0:
			return matchExpr(n, raw, q.l.Raw), "r", true
		}
		return "", "", false
	case qAnd, qOr:
		var pos, neg []string
		for _, k := range n.kids {
			sub := k
			if k.op == qNot && n.op == qAnd {
				sub = k.kids[0]
			} else if k.op == qNot || k.op == qOpt {
				return "", "", false
			}
			e, kk, ok := q.ftsOnly(sub)
			if !ok || (kind != "" && kk != kind) {
				return "", "", false
			}
			kind = kk
			if sub != k {
				neg = append(neg, "("+e+")")
			} else {
				pos = append(pos, "("+e+")")
			}
		}
		if len(pos) == 0 {
			return "", "", false
		}
		op := " AND "
		if n.op == qOr {
			op = " OR "
		}
		expr = strings.Join(pos, op)
		for _, e := range neg {
			expr = "(" + expr + ") NOT " + e
		}
		return expr, kind, true
	}
	return "", "", false
}

// set writes a SELECT of the document ids n matches; positive says n is
// not under a negation (its text counts for the score).
func (q *qsql) set(n *qnode, positive bool) {
	docs := q.idx.table("docs")
	if n.op == qAnd || n.op == qOr {
		if e, kind, ok := q.ftsOnly(n); ok {
			tbl := q.idx.table(kind)
			q.b.WriteString("SELECT rowid AS docid FROM " + tbl + " WHERE " + tbl + " MATCH ?")
			q.args = append(q.args, e)
			if positive {
				q.scored[kind] = append(q.scored[kind], e)
			}
			return
		}
	}
	switch n.op {
	case qAll:
		q.b.WriteString("SELECT docid FROM " + docs)
	case qNone:
		q.b.WriteString("SELECT docid FROM " + docs + " WHERE 0")
	case qText:
		stem, raw := q.textCols(n)
		parts := 0
		for _, t := range []struct {
			kind      string
			cols, all []int
		}{{"s", stem, q.l.Stemmed}, {"r", raw, q.l.Raw}} {
			if len(t.cols) == 0 {
				continue
			}
			if parts > 0 {
				q.b.WriteString(" UNION ")
			}
			parts++
			tbl := q.idx.table(t.kind)
			e := matchExpr(n, t.cols, t.all)
			q.b.WriteString("SELECT rowid AS docid FROM " + tbl + " WHERE " + tbl + " MATCH ?")
			q.args = append(q.args, e)
			if positive {
				q.scored[t.kind] = append(q.scored[t.kind], e)
			}
		}
		if parts == 0 {
			q.b.WriteString("SELECT docid FROM " + docs + " WHERE 0")
		}
	case qTag:
		q.b.WriteString("SELECT DISTINCT docid FROM " + q.idx.table("tags") + " WHERE field = ? AND (")
		q.args = append(q.args, n.fields[0])
		for i, t := range n.tags {
			if i > 0 {
				q.b.WriteString(" OR ")
			}
			if t.prefix {
				q.b.WriteString("substr(val, 1, ?) = ?")
				q.args = append(q.args, len(t.val), []byte(t.val))
			} else {
				q.b.WriteString("val = ?")
				q.args = append(q.args, []byte(t.val))
			}
		}
		q.b.WriteString(")")
	case qNum:
		col := "v" + strconv.Itoa(n.fields[0])
		lo, hi := ">=", "<="
		if n.loEx {
			lo = ">"
		}
		if n.hiEx {
			hi = "<"
		}
		q.b.WriteString("SELECT docid FROM " + docs + " WHERE " + col + " " + lo + " ? AND " + col + " " + hi + " ?")
		q.args = append(q.args, n.lo, n.hi)
	case qNot:
		q.b.WriteString("SELECT docid FROM " + docs + " EXCEPT SELECT docid FROM (")
		q.set(n.kids[0], false)
		q.b.WriteString(")")
	case qOpt:
		// Alone, an optional term matches everything.
		q.b.WriteString("SELECT docid FROM " + docs)
		q.collectScored(n.kids[0], positive)
	case qOr:
		for i, k := range n.kids {
			if i > 0 {
				q.b.WriteString(" UNION ")
			}
			q.b.WriteString("SELECT docid FROM (")
			q.set(k, positive)
			q.b.WriteString(")")
		}
	case qAnd:
		first := true
		for _, k := range n.kids {
			if k.op == qNot || k.op == qOpt {
				continue
			}
			if !first {
				q.b.WriteString(" INTERSECT ")
			}
			first = false
			q.b.WriteString("SELECT docid FROM (")
			q.set(k, positive)
			q.b.WriteString(")")
		}
		if first {
			q.b.WriteString("SELECT docid FROM " + docs)
		}
		for _, k := range n.kids {
			switch k.op {
			case qNot:
				q.b.WriteString(" EXCEPT SELECT docid FROM (")
				q.set(k.kids[0], false)
				q.b.WriteString(")")
			case qOpt:
				q.collectScored(k.kids[0], positive)
			}
		}
	}
}

// collectScored adds the text leaves of an optional subtree to the score
// (they do not filter).
func (q *qsql) collectScored(n *qnode, positive bool) {
	if !positive {
		return
	}
	switch n.op {
	case qText:
		stem, raw := q.textCols(n)
		if len(stem) > 0 {
			q.scored["s"] = append(q.scored["s"], matchExpr(n, stem, q.l.Stemmed))
		}
		if len(raw) > 0 {
			q.scored["r"] = append(q.scored["r"], matchExpr(n, raw, q.l.Raw))
		}
	case qAnd, qOr, qOpt:
		for _, k := range n.kids {
			q.collectScored(k, true)
		}
	}
}

// scoreCTEs are the common table expressions giving each FTS5 table's
// BM25 score of the collected leaves (sc0, sc1: docid, sc), and the
// expression summing them; none when the query has no text.
func (q *qsql) scoreCTEs() (ctes []string, args []any, expr string) {
	var terms []string
	for _, t := range []struct {
		kind string
		cols []int
	}{{"s", q.l.Stemmed}, {"r", q.l.Raw}} {
		es := q.scored[t.kind]
		if len(es) == 0 {
			continue
		}
		tbl := q.idx.table(t.kind)
		ws := make([]string, len(t.cols))
		for i, c := range t.cols {
			ws[i] = strconv.FormatFloat(q.idx.spec.Fields[c].Weight, 'g', -1, 64)
		}
		name := "sc" + strconv.Itoa(len(ctes))
		// MATERIALIZED: bm25() is only valid in the FTS5 query's own
		// SELECT, which the join must not flatten.
		ctes = append(ctes, name+"(docid, sc) AS MATERIALIZED (SELECT rowid, -bm25("+tbl+", "+
			strings.Join(ws, ", ")+") FROM "+tbl+" WHERE "+tbl+" MATCH ?)")
		args = append(args, "("+strings.Join(es, ") OR (")+")")
		terms = append(terms, "coalesce("+name+".sc, 0.0)")
	}
	if len(terms) == 0 {
		return nil, nil, "0.0"
	}
	return ctes, args, strings.Join(terms, " + ")
}

// ftSearch is one FT.SEARCH's options.
type ftSearch struct {
	noContent  bool
	withScores bool
	sortKeys   bool
	verbatim   bool
	nostop     bool
	infields   []int
	inkeys     [][]byte
	ret        []ftReturn
	hasReturn  bool
	sortBy     int // field, -1 for the score
	sortDesc   bool
	offset     int64
	num        int64
	params     map[string]string
	filters    []*qnode
	highlight  ftMarkup
	summarize  ftMarkup
	// scored is the query's positive text, per FTS5 table, as the
	// compiler collected it (for HIGHLIGHT and SUMMARIZE).
	scored map[string][]string
}

type ftReturn struct{ field, as string }

// ftMarkup is HIGHLIGHT's or SUMMARIZE's settings.
type ftMarkup struct {
	on          bool
	fields      map[int]bool // TEXT fields; nil: all
	open, close string
	length      int    // SUMMARIZE: tokens per fragment
	sep         string // SUMMARIZE: what ends a fragment cut short
}

// maxSearchLimit bounds LIMIT's count, as RediSearch's MAXSEARCHRESULTS.
const maxSearchLimit = 1000000

// parseFtSearch parses FT.SEARCH's options after the query.
func parseFtSearch(idx *ftIndex, args [][]byte, maxLimit int64) (*ftSearch, error) {
	o := &ftSearch{sortBy: -1, num: 10}
	for i := 0; i < len(args); i++ {
		a := args[i]
		need := func(n int) error {
			if i+n >= len(args) {
				return errFtArgMissing(a)
			}
			return nil
		}
		switch {
		case eqFold(a, "NOCONTENT"):
			o.noContent = true
		case eqFold(a, "WITHSCORES"):
			o.withScores = true
		case eqFold(a, "VERBATIM"):
			o.verbatim = true
		case eqFold(a, "NOSTOPWORDS"):
			o.nostop = true
		case eqFold(a, "INORDER"), eqFold(a, "EXPLAINSCORE"), eqFold(a, "WITHPAYLOADS"):
			// INORDER: phrases are in order already; the others add
			// nothing here.
		case eqFold(a, "TIMEOUT"), eqFold(a, "LANGUAGE"), eqFold(a, "SLOP"), eqFold(a, "SCORER"),
			eqFold(a, "EXPANDER"), eqFold(a, "PAYLOAD"), eqFold(a, "DIALECT"):
			if err := need(1); err != nil {
				return nil, err
			}
			if eqFold(a, "DIALECT") {
				d, err := parseInt(args[i+1])
				if err != nil || d < 1 || d > 4 {
					return nil, ErrFtDialect
				}
			}
			i++
		case eqFold(a, "INFIELDS"), eqFold(a, "INKEYS"):
			n, next, err := ftCount(args, i, strings.ToUpper(string(a)))
			if err != nil {
				return nil, err
			}
			_ = n
			for _, x := range args[i+2 : next] {
				if eqFold(a, "INKEYS") {
					o.inkeys = append(o.inkeys, x)
					continue
				}
				if f := idx.field(string(x)); f >= 0 {
					o.infields = append(o.infields, f)
				}
			}
			if eqFold(a, "INFIELDS") && o.infields == nil {
				o.infields = []int{-1}
			}
			i = next - 1
		case eqFold(a, "RETURN"):
			_, next, err := ftCount(args, i, "RETURN")
			if err != nil {
				return nil, err
			}
			o.hasReturn = true
			items := args[i+2 : next]
			for j := 0; j < len(items); j++ {
				r := ftReturn{field: string(items[j]), as: string(items[j])}
				if f := idx.field(r.field); f >= 0 {
					r.field = idx.spec.Fields[f].Name
				}
				if j+2 < len(items) && eqFold(items[j+1], "AS") {
					r.as = string(items[j+2])
					j += 2
				}
				o.ret = append(o.ret, r)
			}
			i = next - 1
			if len(o.ret) == 0 {
				o.noContent = true
			}
		case eqFold(a, "SORTBY"):
			if err := need(1); err != nil {
				return nil, err
			}
			name := string(args[i+1])
			name = strings.TrimPrefix(name, "@")
			f := idx.field(name)
			if f < 0 {
				return nil, errFtNoProperty(name)
			}
			o.sortBy = f
			i++
			if i+1 < len(args) && (eqFold(args[i+1], "ASC") || eqFold(args[i+1], "DESC")) {
				o.sortDesc = eqFold(args[i+1], "DESC")
				i++
			}
		case eqFold(a, "LIMIT"):
			if err := need(2); err != nil {
				return nil, err
			}
			off, err1 := parseInt(args[i+1])
			num, err2 := parseInt(args[i+2])
			if err1 != nil || err2 != nil || off < 0 || num < 0 {
				return nil, ErrFtLimit
			}
			if num > maxLimit || off > maxLimit {
				return nil, errFtLimitTooLarge(maxLimit)
			}
			o.offset, o.num = off, num
			i += 2
		case eqFold(a, "PARAMS"):
			n, next, err := ftCount(args, i, "PARAMS")
			if err != nil {
				return nil, err
			}
			if n%2 != 0 || n == 0 {
				return nil, ErrFtParamsCount
			}
			o.params = map[string]string{}
			for j := i + 2; j < next; j += 2 {
				o.params[string(args[j])] = string(args[j+1])
			}
			i = next - 1
		case eqFold(a, "FILTER"):
			if err := need(3); err != nil {
				return nil, err
			}
			f := idx.field(string(args[i+1]))
			p := &qparser{s: "[" + string(args[i+2]) + " " + string(args[i+3]) + "]", idx: idx}
			n, err := p.numRange()
			if err != nil {
				return nil, err
			}
			if f < 0 || idx.spec.Fields[f].Type != ftNumeric {
				return nil, errFtUnknownField(args[i+1])
			}
			n.fields = []int{f}
			o.filters = append(o.filters, n)
			i += 3
		case eqFold(a, "HIGHLIGHT"), eqFold(a, "SUMMARIZE"):
			m := ftMarkup{on: true, open: "<b>", close: "</b>", length: 20, sep: "... "}
			if eqFold(a, "SUMMARIZE") {
				m.open, m.close = "", ""
			}
			for i+1 < len(args) {
				switch nx := args[i+1]; {
				case eqFold(nx, "FIELDS"):
					_, next, err := ftCount(args, i+1, "FIELDS")
					if err != nil {
						return nil, err
					}
					m.fields = map[int]bool{}
					for _, f := range args[i+3 : next] {
						if fi := idx.field(string(f)); fi >= 0 {
							m.fields[fi] = true
						}
					}
					i = next - 1
				case eqFold(nx, "TAGS") && eqFold(a, "HIGHLIGHT") && i+3 < len(args):
					m.open, m.close = string(args[i+2]), string(args[i+3])
					i += 3
				case eqFold(nx, "LEN") && eqFold(a, "SUMMARIZE") && i+2 < len(args):
					n, err := parseInt(args[i+2])
					if err != nil || n < 1 || n > 64 {
						return nil, errFtBadCount("LEN")
					}
					m.length = int(n)
					i += 2
				case eqFold(nx, "FRAGS") && eqFold(a, "SUMMARIZE") && i+2 < len(args):
					if _, err := parseInt(args[i+2]); err != nil {
						return nil, errFtBadCount("FRAGS")
					}
					i += 2 // one fragment per field: see docs/search.md
				case eqFold(nx, "SEPARATOR") && eqFold(a, "SUMMARIZE") && i+2 < len(args):
					m.sep = string(args[i+2])
					i += 2
				default:
					goto done
				}
			}
		done:
			if eqFold(a, "HIGHLIGHT") {
				// SUMMARIZE's fragments are highlighted too when both are
				// given; keep SUMMARIZE's length and separator.
				o.highlight = m
			} else {
				o.summarize = m
			}
		case eqFold(a, "WITHSORTKEYS"):
			o.sortKeys = true
		case eqFold(a, "GEOFILTER"):
			return nil, errFtUnsupported(a)
		default:
			return nil, errFtUnknownSearchArg(a, i+3)
		}
	}
	return o, nil
}

// parseQuery parses a query for idx.
func parseQuery(idx *ftIndex, query string, o *ftSearch) (*qnode, error) {
	p := &qparser{s: query, idx: idx, params: o.params, nostop: o.nostop}
	n, err := p.parse()
	if err != nil {
		return nil, err
	}
	if len(o.filters) > 0 {
		kids := append([]*qnode{}, o.filters...)
		if n == nil {
			return nil, nil
		}
		n = &qnode{op: qAnd, kids: append([]*qnode{n}, kids...)}
	}
	return n, nil
}

type ftHit struct {
	key     []byte
	score   float64
	docid   int64
	sortKey []byte // WITHSORTKEYS: "#<number>", "$<text>", or nil
}

// FT.SEARCH index query [options]
func cmdFtSearch(c *Ctx) error {
	idx := c.a.lookupIndex(c.args[1])
	if idx == nil {
		return errFtNoSuchIndex(c.args[1])
	}
	o, err := parseFtSearch(idx, c.args[3:], c.a.search().maxResults())
	if err != nil {
		return err
	}
	n, err := parseQuery(idx, string(c.args[2]), o)
	if err != nil {
		return err
	}
	idx.uses++
	hits, total, err := c.a.runSearch(idx, n, o)
	if err != nil {
		return err
	}
	if c.w.Proto == 3 {
		return c.writeSearch3(idx, o, hits, total)
	}
	per := 1
	if o.withScores {
		per++
	}
	if o.sortKeys {
		per++
	}
	if !o.noContent {
		per++
	}
	w := c.w
	w.Array(1 + per*len(hits))
	w.Int(total)
	for _, h := range hits {
		w.Bulk(h.key)
		if o.withScores {
			w.Double(h.score)
		}
		if o.sortKeys {
			if h.sortKey == nil {
				w.Null()
			} else {
				w.Bulk(h.sortKey)
			}
		}
		if !o.noContent {
			marked, err := c.a.markup(idx, h.docid, o)
			if err != nil {
				return err
			}
			if err := c.writeContent(h.key, o, marked); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeSearch3 writes FT.SEARCH's reply in RESP3, as RediSearch 2.8 does:
// a map of attributes, format, results (a map per hit: id, score,
// sortkey, extra_attributes, values), total_results and warning.
func (c *Ctx) writeSearch3(idx *ftIndex, o *ftSearch, hits []ftHit, total int64) error {
	w := c.w
	w.Map(5)
	w.Simple("attributes")
	w.Array(0)
	w.Simple("format")
	w.Simple("STRING")
	w.Simple("results")
	w.Array(len(hits))
	for _, h := range hits {
		n := 2
		if o.withScores {
			n++
		}
		if o.sortKeys {
			n++
		}
		if !o.noContent {
			n++
		}
		w.Map(n)
		w.Simple("id")
		w.Bulk(h.key)
		if o.withScores {
			w.Simple("score")
			w.Double(h.score)
		}
		if o.sortKeys {
			w.Simple("sortkey")
			if h.sortKey == nil {
				w.Null()
			} else {
				w.Bulk(h.sortKey)
			}
		}
		if !o.noContent {
			w.Simple("extra_attributes")
			marked, err := c.a.markup(idx, h.docid, o)
			if err != nil {
				return err
			}
			if err := c.writeContent(h.key, o, marked); err != nil {
				return err
			}
		}
		w.Simple("values")
		w.Array(0)
	}
	w.Simple("total_results")
	w.Int(total)
	w.Simple("warning")
	w.Array(0)
	return nil
}

// writeContent writes a hit's fields: the whole hash, or RETURN's fields
// (pairs in RESP2, a map in RESP3).
func (c *Ctx) writeContent(key []byte, o *ftSearch, marked map[string]string) error {
	h, err := c.st.OpenColl(0, key, storage.TypeHash)
	if err != nil || h == nil {
		c.w.Map(0)
		if err == storage.ErrWrongType {
			err = nil
		}
		return err
	}
	elems, err := c.st.AllElements(h)
	if err != nil {
		return err
	}
	if !o.hasReturn {
		c.w.Map(len(elems))
		for _, e := range elems {
			c.w.Bulk(e.Member)
			if v, ok := marked[string(e.Member)]; ok {
				c.w.BulkString(v)
			} else {
				c.w.Bulk(e.Value)
			}
		}
		return nil
	}
	var out [][]byte
	for _, r := range o.ret {
		for _, e := range elems {
			if string(e.Member) == r.field {
				v := e.Value
				if m, ok := marked[r.field]; ok {
					v = []byte(m)
				}
				out = append(out, []byte(r.as), v)
				break
			}
		}
	}
	c.w.Map(len(out) / 2)
	for _, b := range out {
		c.w.Bulk(b)
	}
	return nil
}

// markup computes a hit's HIGHLIGHTed or SUMMARIZEd TEXT fields with
// FTS5's highlight() and snippet() over the query's positive text: hash
// field name -> the marked text. nil when neither is asked for.
func (a *Actor) markup(idx *ftIndex, docid int64, o *ftSearch) (map[string]string, error) {
	if !o.highlight.on && !o.summarize.on {
		return nil, nil
	}
	out := map[string]string{}
	l := idx.layout()
	for _, t := range []struct {
		kind string
		cols []int
	}{{"s", l.Stemmed}, {"r", l.Raw}} {
		es := o.scored[t.kind]
		if len(es) == 0 {
			continue
		}
		tbl := idx.table(t.kind)
		var exprs []string
		var names []string
		var args []any
		for ci, f := range t.cols {
			h, s := o.highlight, o.summarize
			wantH := h.on && (h.fields == nil || h.fields[f])
			wantS := s.on && (s.fields == nil || s.fields[f])
			switch {
			case wantS:
				open, close := s.open, s.close
				if wantH {
					open, close = h.open, h.close
				}
				exprs = append(exprs, "snippet("+tbl+", "+strconv.Itoa(ci)+", ?, ?, ?, "+strconv.Itoa(s.length)+")")
				args = append(args, open, close, s.sep)
			case wantH:
				exprs = append(exprs, "highlight("+tbl+", "+strconv.Itoa(ci)+", ?, ?)")
				args = append(args, h.open, h.close)
			default:
				continue
			}
			names = append(names, idx.spec.Fields[f].Name)
		}
		if len(exprs) == 0 {
			continue
		}
		args = append(args, "("+strings.Join(es, ") OR (")+")", docid)
		err := a.st.SearchQuery("SELECT "+strings.Join(exprs, ", ")+" FROM "+tbl+" WHERE "+tbl+" MATCH ? AND rowid = ?", false, args,
			func(r storage.SearchRow) bool {
				for i, n := range names {
					if !r.Null(i) {
						out[n] = r.Text(i)
					}
				}
				return false
			})
		if err != nil {
			return nil, searchError(err)
		}
	}
	return out, nil
}

// runSearch runs a parsed query: the page of hits LIMIT asks for, in
// order, and how many documents match in all.
func (a *Actor) runSearch(idx *ftIndex, n *qnode, o *ftSearch) ([]ftHit, int64, error) {
	if n == nil {
		return nil, 0, nil
	}
	q := &qsql{idx: idx, l: idx.layout(), infields: o.infields, scored: map[string][]string{}}
	q.b.WriteString("WITH m(docid) AS (")
	q.set(n, true)
	q.b.WriteString(")")
	setSQL, setArgs := q.b.String(), q.args
	o.scored = q.scored
	ctes, scoreArgs, score := q.scoreCTEs()
	if _, _, one := q.ftsOnly(n); one && len(ctes) == 1 {
		// One term, prefix or phrase over one FTS5 table: its matches and
		// their scores are one scan, not two.
		setSQL = "WITH " + strings.Replace(ctes[0], "sc0(docid, sc)", "m(docid, sc)", 1)
		// The ids waiting in ftN_gc are left out in the same scan (see
		// runTopScored; the other orders join the documents anyway).
		setSQL = strings.TrimSuffix(setSQL, ")") + " AND rowid NOT IN (SELECT docid FROM " + idx.table("gc") + "))"
		setArgs, ctes, scoreArgs, score = scoreArgs, nil, nil, "m.sc"
		if n.op == qText && o.sortBy < 0 && len(o.inkeys) == 0 {
			// One term: its list, when it has one (searchtop.go).
			expr, kind, _ := q.ftsOnly(n)
			cols := q.l.Stemmed
			if kind == "r" {
				cols = q.l.Raw
			}
			hits, total, ok, err := a.topSearch(idx, n, kind, expr, cols, o)
			if err != nil {
				return nil, 0, searchError(err)
			}
			if ok {
				return hits, total, nil
			}
		}
	}

	var b strings.Builder
	b.WriteString(setSQL)
	args := append([]any{}, setArgs...)
	for _, cte := range ctes {
		b.WriteString(", " + cte)
	}
	args = append(args, scoreArgs...)
	docs := idx.table("docs")
	if o.sortBy < 0 && len(o.inkeys) == 0 && score != "0.0" {
		return a.runTopScored(idx, o, &b, args, ctes, score)
	}
	sortCol := "NULL"
	if o.sortBy >= 0 {
		sortCol = "d.v" + strconv.Itoa(o.sortBy)
	}
	b.WriteString(" SELECT d.key, " + score + ", count(*) OVER (), d.docid, " + sortCol + " FROM m JOIN " + docs + " d ON d.docid = m.docid")
	for i := range ctes {
		sc := "sc" + strconv.Itoa(i)
		b.WriteString(" LEFT JOIN " + sc + " ON " + sc + ".docid = m.docid")
	}
	if len(o.inkeys) > 0 {
		b.WriteString(" WHERE d.key IN (?" + strings.Repeat(", ?", len(o.inkeys)-1) + ")")
		for _, k := range o.inkeys {
			args = append(args, k)
		}
	}
	if o.sortBy >= 0 {
		col := "d.v" + strconv.Itoa(o.sortBy)
		if idx.spec.Fields[o.sortBy].Type != ftNumeric {
			col = "lower(" + col + ")" // RediSearch's normalised sort key
		}
		dir := "ASC"
		if o.sortDesc {
			dir = "DESC"
		}
		b.WriteString(" ORDER BY " + col + " IS NULL, " + col + " " + dir + ", d.key")
	} else {
		b.WriteString(" ORDER BY 2 DESC, d.key")
	}
	b.WriteString(" LIMIT ? OFFSET ?")
	num := o.num
	if num == 0 {
		num = 1 // for the count; no hit is returned
	}
	args = append(args, num, o.offset)
	var hits []ftHit
	total := int64(-1)
	err := a.st.SearchQuery(b.String(), false, args, func(r storage.SearchRow) bool {
		total = r.Int(2)
		if o.num > 0 {
			h := ftHit{key: r.Bytes(0, nil), score: r.Float(1), docid: r.Int(3)}
			switch {
			case r.Null(4):
			case r.IsNumber(4):
				h.sortKey = []byte("#" + fmtAggNum(r.Float(4)))
			default:
				h.sortKey = []byte("$" + strings.ToLower(r.Text(4)))
			}
			hits = append(hits, h)
		}
		return true
	})
	if err != nil {
		return nil, 0, searchError(err)
	}
	if total < 0 {
		// No row on this page: count on its own.
		count := setSQL + " SELECT count(*) FROM m JOIN " + docs + " d ON d.docid = m.docid"
		cargs := append([]any{}, setArgs...)
		if len(o.inkeys) > 0 {
			count += " WHERE d.key IN (?" + strings.Repeat(", ?", len(o.inkeys)-1) + ")"
			for _, k := range o.inkeys {
				cargs = append(cargs, k)
			}
		}
		err = a.st.SearchQuery(count, false, cargs, func(r storage.SearchRow) bool {
			total = r.Int(0)
			return false
		})
		if err != nil {
			return nil, 0, searchError(err)
		}
	}
	return hits, total, nil
}

// runTopScored finishes a query with text ordered by score (no SORTBY,
// no INKEYS), whose set m and score CTEs b holds. Every match is scored
// once, into a materialized table s, and the total is s's row count; but
// only the rows that can be on the page are looked up in the documents
// table: those scoring at least as much as the (offset+num)-th best, ties
// included, so that equal scores are still ordered by key exactly as a
// full sort orders them.
//
// s leaves out the ids whose FTS5 rows wait in ftN_gc: every other id in
// m has its document row (the rows of a document go with it, its FTS5
// rows to ftN_gc), which is what joining every match with the documents
// table used to check.
func (a *Actor) runTopScored(idx *ftIndex, o *ftSearch, b *strings.Builder, args []any, ctes []string, score string) ([]ftHit, int64, error) {
	docs, gc := idx.table("docs"), idx.table("gc")
	if score == "m.sc" && len(ctes) == 0 {
		// One FTS5 scan: m already holds the scores, without the ids in
		// ftN_gc (runSearch); s is m, not a copy.
		b.WriteString(", s(docid, sc) AS NOT MATERIALIZED (SELECT docid, sc FROM m)")
	} else {
		b.WriteString(", s(docid, sc) AS MATERIALIZED (SELECT m.docid, " + score + " FROM m")
		for i := range ctes {
			sc := "sc" + strconv.Itoa(i)
			b.WriteString(" LEFT JOIN " + sc + " ON " + sc + ".docid = m.docid")
		}
		b.WriteString(" WHERE m.docid NOT IN (SELECT docid FROM " + gc + "))")
	}
	head, headArgs := b.String(), len(args)
	num := o.num
	if num == 0 {
		num = 1 // for the count; no hit is returned
	}
	// cut: the lowest score the page can hold; none when s has fewer
	// rows.
	b.WriteString(", cut(sc) AS (SELECT sc FROM s ORDER BY sc DESC LIMIT 1 OFFSET ?)")
	b.WriteString(" SELECT d.key, s.sc, (SELECT count(*) FROM s), d.docid FROM s JOIN " + docs + " d ON d.docid = s.docid" +
		" WHERE s.sc >= coalesce((SELECT sc FROM cut), -1e999) ORDER BY s.sc DESC, d.key LIMIT ? OFFSET ?")
	args = append(args, o.offset+num-1, num, o.offset)
	var hits []ftHit
	total := int64(-1)
	err := a.st.SearchQuery(b.String(), false, args, func(r storage.SearchRow) bool {
		total = r.Int(2)
		if o.num > 0 {
			hits = append(hits, ftHit{key: r.Bytes(0, nil), score: r.Float(1), docid: r.Int(3)})
		}
		return true
	})
	if err != nil {
		return nil, 0, searchError(err)
	}
	if total < 0 {
		// No row on this page (OFFSET past the end): count on its own.
		err = a.st.SearchQuery(head+" SELECT count(*) FROM s", false, args[:headArgs], func(r storage.SearchRow) bool {
			total = r.Int(0)
			return false
		})
		if err != nil {
			return nil, 0, searchError(err)
		}
	}
	return hits, total, nil
}

// searchError turns an SQLite error met by a query into a reply: an FTS5
// syntax error (a term FTS5 cannot take) is the query's error, anything
// else the storage's.
func searchError(err error) error {
	if e, ok := err.(*storage.Error); ok && strings.Contains(e.Msg, "fts5") {
		return errFtQuery(e.Msg)
	}
	return err
}

// FT.EXPLAIN index query [DIALECT d]
func cmdFtExplain(c *Ctx) error {
	idx := c.a.lookupIndex(c.args[1])
	if idx == nil {
		return errFtNoSuchIndex(c.args[1])
	}
	o, err := parseFtSearch(idx, c.args[3:], c.a.search().maxResults())
	if err != nil {
		return err
	}
	n, err := parseQuery(idx, string(c.args[2]), o)
	if err != nil {
		return err
	}
	var b strings.Builder
	explain(&b, idx, n, 0)
	c.w.BulkString(b.String())
	return nil
}

// explain writes the query tree the way FT.EXPLAIN shows it.
func explain(b *strings.Builder, idx *ftIndex, n *qnode, depth int) {
	pad := strings.Repeat("  ", depth)
	if n == nil {
		b.WriteString(pad + "<empty>\n")
		return
	}
	block := func(name string) {
		b.WriteString(pad + name + " {\n")
		for _, k := range n.kids {
			explain(b, idx, k, depth+1)
		}
		b.WriteString(pad + "}\n")
	}
	fieldPrefix := func() string {
		if n.fields == nil {
			return ""
		}
		var names []string
		for _, f := range n.fields {
			if f >= 0 {
				names = append(names, idx.spec.Fields[f].id())
			}
		}
		return "@" + strings.Join(names, "|") + ":"
	}
	switch n.op {
	case qAnd:
		block("INTERSECT")
	case qOr:
		block("UNION")
	case qNot:
		block("NOT")
	case qOpt:
		block("OPTIONAL")
	case qAll:
		b.WriteString(pad + "<WILDCARD>\n")
	case qNone:
		b.WriteString(pad + "<EMPTY>\n")
	case qText:
		switch {
		case n.phrase:
			b.WriteString(pad + fieldPrefix() + "EXACT {\n")
			for _, w := range n.words {
				b.WriteString(pad + "  " + w + "\n")
			}
			b.WriteString(pad + "}\n")
		case n.prefix:
			b.WriteString(pad + fieldPrefix() + "PREFIX{" + n.words[0] + "*}\n")
		default:
			b.WriteString(pad + fieldPrefix() + n.words[0] + "\n")
		}
	case qTag:
		b.WriteString(pad + "TAG:@" + idx.spec.Fields[n.fields[0]].id() + " {\n")
		for _, t := range n.tags {
			v := t.val
			if t.prefix {
				v = "PREFIX{" + v + "*}"
			}
			b.WriteString(pad + "  " + v + "\n")
		}
		b.WriteString(pad + "}\n")
	case qNum:
		lo, hi := "<=", "<="
		if n.loEx {
			lo = "<"
		}
		if n.hiEx {
			hi = "<"
		}
		fmt.Fprintf(b, "%sNUMERIC {%s %s @%s %s %s}\n", pad, ftNum(n.lo), lo, idx.spec.Fields[n.fields[0]].id(), hi, ftNum(n.hi))
	}
}

func ftNum(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'f', 6, 64)
}
