package actor

import (
	"sort"
	"strconv"
	"strings"

	"github.com/cellar-db/cellar/storage"
)

// The rest of RediSearch's commands: suggestion dictionaries (FT.SUG*),
// dictionaries (FT.DICT*), synonyms (FT.SYNUPDATE, FT.SYNDUMP) and
// FT.CONFIG. Suggestion dictionaries and dictionaries live in tables of
// their own (storage/schema.go, migration 12), not in a database's
// keyspace; each write records a Search change so that the command is
// logged.

// maxSynonymTerms bounds the terms of one index's synonym groups (they
// are held in memory).
const maxSynonymTerms = 100000

// maxSuggestScan bounds how many strings a FUZZY FT.SUGGET looks at.
const maxSuggestScan = 100000

// FT.SUGADD key string score [INCR] [PAYLOAD payload]
func cmdFtSugAdd(c *Ctx) error {
	score, ok := parseFloat(c.args[3])
	if !ok {
		return ErrFtSugScore
	}
	incr := false
	var payload []byte
	for i := 4; i < len(c.args); i++ {
		switch {
		case c.argEq(i, "INCR"):
			incr = true
		case c.argEq(i, "PAYLOAD") && i+1 < len(c.args):
			payload = c.args[i+1]
			i++
		default:
			return errFtUnknownArg(c.args[i])
		}
	}
	key, term := c.args[1], c.args[2]
	lower := []byte(strings.ToLower(string(term)))
	var err error
	if incr {
		err = c.st.SearchExec("INSERT INTO search_suggestions (dict, term, lower, score, payload) VALUES (?, ?, ?, ?, ?) "+
			"ON CONFLICT (dict, term) DO UPDATE SET score = score + excluded.score, payload = coalesce(excluded.payload, payload)",
			key, term, lower, score, payloadArg(payload))
	} else {
		err = c.st.SearchExec("INSERT INTO search_suggestions (dict, term, lower, score, payload) VALUES (?, ?, ?, ?, ?) "+
			"ON CONFLICT (dict, term) DO UPDATE SET score = excluded.score, payload = excluded.payload",
			key, term, lower, score, payloadArg(payload))
	}
	if err != nil {
		return err
	}
	c.st.RecordSearch(key)
	n, err := sugLen(c, key)
	if err != nil {
		return err
	}
	c.w.Int(n)
	return nil
}

func payloadArg(p []byte) any {
	if p == nil {
		return nil
	}
	return p
}

func sugLen(c *Ctx, key []byte) (int64, error) {
	var n int64
	err := c.st.SearchQuery("SELECT count(*) FROM search_suggestions WHERE dict = ?", true, []any{key},
		func(r storage.SearchRow) bool { n = r.Int(0); return false })
	return n, err
}

// FT.SUGLEN key
func cmdFtSugLen(c *Ctx) error {
	n, err := sugLen(c, c.args[1])
	if err != nil {
		return err
	}
	c.w.Int(n)
	return nil
}

// FT.SUGDEL key string
func cmdFtSugDel(c *Ctx) error {
	n := int64(0)
	err := c.st.SearchQuery("DELETE FROM search_suggestions WHERE dict = ? AND term = ? RETURNING 1", false,
		[]any{c.args[1], c.args[2]}, func(storage.SearchRow) bool { n++; return true })
	if err != nil {
		return err
	}
	if n > 0 {
		c.st.RecordSearch(c.args[1])
	}
	c.w.Int(n)
	return nil
}

type suggestion struct {
	term, payload []byte
	score         float64
}

// FT.SUGGET key prefix [FUZZY] [WITHSCORES] [WITHPAYLOADS] [MAX num]
func cmdFtSugGet(c *Ctx) error {
	fuzzy, withScores, withPayloads := false, false, false
	max := int64(5)
	for i := 3; i < len(c.args); i++ {
		switch {
		case c.argEq(i, "FUZZY"):
			fuzzy = true
		case c.argEq(i, "WITHSCORES"):
			withScores = true
		case c.argEq(i, "WITHPAYLOADS"):
			withPayloads = true
		case c.argEq(i, "MAX") && i+1 < len(c.args):
			n, err := parseInt(c.args[i+1])
			if err != nil || n < 0 {
				return ErrFtSugMax
			}
			max = n
			i++
		default:
			return errFtUnknownArg(c.args[i])
		}
	}
	prefix := strings.ToLower(string(c.args[2]))
	var out []suggestion
	collect := func(r storage.SearchRow) bool {
		s := suggestion{term: r.Bytes(0, nil), score: r.Float(1)}
		if !r.Null(2) {
			s.payload = r.Bytes(2, nil)
		}
		if fuzzy {
			lower := strings.ToLower(string(s.term))
			if !fuzzyPrefix(lower, prefix) {
				return true
			}
		}
		out = append(out, s)
		return !(!fuzzy && int64(len(out)) >= max)
	}
	var err error
	if fuzzy {
		err = c.st.SearchQuery("SELECT term, score, payload FROM search_suggestions WHERE dict = ? ORDER BY score DESC, term LIMIT ?",
			true, []any{c.args[1], maxSuggestScan}, collect)
	} else {
		err = c.st.SearchQuery("SELECT term, score, payload FROM search_suggestions WHERE dict = ? AND substr(lower, 1, ?) = ? ORDER BY score DESC, term",
			true, []any{c.args[1], len(prefix), []byte(prefix)}, collect)
	}
	if err != nil {
		return err
	}
	if int64(len(out)) > max {
		out = out[:max]
	}
	per := 1
	if withScores {
		per++
	}
	if withPayloads {
		per++
	}
	c.w.Array(per * len(out))
	for _, s := range out {
		c.w.Bulk(s.term)
		if withScores {
			c.w.Double(s.score)
		}
		if withPayloads {
			if s.payload == nil {
				c.w.Null()
			} else {
				c.w.Bulk(s.payload)
			}
		}
	}
	return nil
}

// fuzzyPrefix reports whether some prefix of term is within one edit of
// prefix (FT.SUGGET FUZZY's Levenshtein distance of 1).
func fuzzyPrefix(term, prefix string) bool {
	for n := max(0, len(prefix)-1); n <= min(len(term), len(prefix)+1); n++ {
		if levenshtein(term[:n], prefix) <= 1 {
			return true
		}
	}
	return false
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// FT.DICTADD dict term [term ...]
func cmdFtDictAdd(c *Ctx) error {
	n := int64(0)
	for _, t := range c.args[2:] {
		err := c.st.SearchQuery("INSERT INTO search_dicts (dict, term) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING 1", false,
			[]any{c.args[1], t}, func(storage.SearchRow) bool { n++; return true })
		if err != nil {
			return err
		}
	}
	if n > 0 {
		c.st.RecordSearch(c.args[1])
	}
	c.w.Int(n)
	return nil
}

// FT.DICTDEL dict term [term ...]
func cmdFtDictDel(c *Ctx) error {
	n := int64(0)
	for _, t := range c.args[2:] {
		err := c.st.SearchQuery("DELETE FROM search_dicts WHERE dict = ? AND term = ? RETURNING 1", false,
			[]any{c.args[1], t}, func(storage.SearchRow) bool { n++; return true })
		if err != nil {
			return err
		}
	}
	if n > 0 {
		c.st.RecordSearch(c.args[1])
	}
	c.w.Int(n)
	return nil
}

// FT.DICTDUMP dict
func cmdFtDictDump(c *Ctx) error {
	terms, err := dictTerms(c, c.args[1])
	if err != nil {
		return err
	}
	c.w.Array(len(terms))
	for _, t := range terms {
		c.w.BulkString(t)
	}
	return nil
}

func dictTerms(c *Ctx, dict []byte) ([]string, error) {
	var terms []string
	err := c.st.SearchQuery("SELECT term FROM search_dicts WHERE dict = ? ORDER BY term", true, []any{dict},
		func(r storage.SearchRow) bool { terms = append(terms, r.Text(0)); return true })
	return terms, err
}

// FT.SYNUPDATE index group [SKIPINITIALSCAN] term [term ...]
func cmdFtSynUpdate(c *Ctx) error {
	idx := c.a.lookupIndex(c.args[1])
	if idx == nil {
		return ErrFtUnknownIndexLower
	}
	grp := string(c.args[2])
	terms := c.args[3:]
	if len(terms) > 0 && eqFold(terms[0], "SKIPINITIALSCAN") {
		terms = terms[1:]
	}
	if len(terms) == 0 {
		return errWrongArgs("ft.synupdate")
	}
	fresh := map[string]bool{}
	for _, t := range terms {
		if term := strings.ToLower(string(t)); idx.syn[term] == nil {
			fresh[term] = true
		}
	}
	if len(idx.syn)+len(fresh) > maxSynonymTerms {
		return errFtTooMany("synonym terms", maxSynonymTerms)
	}
	for _, t := range terms {
		term := strings.ToLower(string(t))
		if err := c.st.SearchExec("INSERT INTO search_synonyms (idx, grp, term) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
			idx.name, grp, term); err != nil {
			return err
		}
		idx.addSynonym(grp, term)
	}
	c.st.RecordSearch([]byte(idx.name))
	c.w.OK()
	return nil
}

// addSynonym puts term in group grp of idx's synonyms.
func (idx *ftIndex) addSynonym(grp, term string) {
	if idx.syn == nil {
		idx.syn = map[string][]string{}
		idx.synGroups = map[string][]string{}
	}
	for _, g := range idx.syn[term] {
		if g == grp {
			return
		}
	}
	idx.syn[term] = append(idx.syn[term], grp)
	idx.synGroups[grp] = append(idx.synGroups[grp], term)
}

// synonyms are the terms sharing a group with term (term included), or
// nil.
func (idx *ftIndex) synonyms(term string) []string {
	groups := idx.syn[term]
	if len(groups) == 0 {
		return nil
	}
	seen := map[string]bool{term: true}
	out := []string{term}
	for _, g := range groups {
		for _, t := range idx.synGroups[g] {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// FT.SYNDUMP index
func cmdFtSynDump(c *Ctx) error {
	idx := c.a.lookupIndex(c.args[1])
	if idx == nil {
		return ErrFtUnknownIndexLower
	}
	terms := make([]string, 0, len(idx.syn))
	for t := range idx.syn {
		terms = append(terms, t)
	}
	sort.Strings(terms)
	c.w.Array(2 * len(terms))
	for _, t := range terms {
		c.w.BulkString(t)
		c.w.Array(len(idx.syn[t]))
		for _, g := range idx.syn[t] {
			c.w.BulkString(g)
		}
	}
	return nil
}

// loadSynonyms loads every index's synonym groups.
func (a *Actor) loadSynonyms() error {
	return a.st.SearchQuery("SELECT idx, grp, term FROM search_synonyms ORDER BY idx, grp, term", false, nil, func(r storage.SearchRow) bool {
		if idx := a.search().indexes[r.Text(0)]; idx != nil {
			idx.addSynonym(r.Text(1), r.Text(2))
		}
		return true
	})
}

// searchOptions are FT.CONFIG's options: their defaults, and whether
// Cellar applies them (the others are kept and reported only).
var searchOptions = []struct {
	name, def string
}{
	{"MAXSEARCHRESULTS", "1000000"},
	{"MAXAGGREGATERESULTS", "1000000"},
	{"DEFAULT_DIALECT", "1"},
	{"TIMEOUT", "500"},
	{"ON_TIMEOUT", "return"},
	{"MINPREFIX", "2"},
	{"MAXEXPANSIONS", "200"},
}

// searchOption is option name's value.
func (s *search) option(name string) string {
	if v, ok := s.config[name]; ok {
		return v
	}
	for _, o := range searchOptions {
		if o.name == name {
			return o.def
		}
	}
	return ""
}

// maxResults is MAXSEARCHRESULTS.
func (s *search) maxResults() int64 {
	n, _ := strconv.ParseInt(s.option("MAXSEARCHRESULTS"), 10, 64)
	return n
}

// FT.CONFIG GET option|*, FT.CONFIG SET option value, FT.CONFIG HELP option
func cmdFtConfig(c *Ctx) error {
	s := c.a.search()
	switch {
	case c.argEq(1, "GET") && len(c.args) == 3:
		pat := strings.ToUpper(string(c.args[2]))
		var names []string
		for _, o := range searchOptions {
			if pat == "*" || pat == o.name {
				names = append(names, o.name)
			}
		}
		c.w.Array(len(names))
		for _, n := range names {
			c.w.Array(2)
			c.w.BulkString(n)
			c.w.BulkString(s.option(n))
		}
		return nil
	case c.argEq(1, "SET") && len(c.args) == 4:
		name := strings.ToUpper(string(c.args[2]))
		val := string(c.args[3])
		found := false
		for _, o := range searchOptions {
			if o.name == name {
				found = true
			}
		}
		if !found {
			return ErrFtConfigOption
		}
		switch name {
		case "MAXSEARCHRESULTS", "MAXAGGREGATERESULTS", "TIMEOUT", "MINPREFIX", "MAXEXPANSIONS":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n < 0 || (name == "MAXSEARCHRESULTS" && n > maxSearchLimit) {
				return errFtConfigValue(name)
			}
		case "DEFAULT_DIALECT":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n < 1 || n > 4 {
				return errFtConfigValue(name)
			}
		case "ON_TIMEOUT":
			if val != "return" && val != "fail" {
				return errFtConfigValue(name)
			}
		}
		if s.config == nil {
			s.config = map[string]string{}
		}
		s.config[name] = val
		c.w.OK()
		return nil
	}
	return ErrFtConfigSyntax
}

// FT.ADD index docId score [NOSAVE] [REPLACE [PARTIAL]] [LANGUAGE lang]
// [PAYLOAD payload] FIELDS field value [field value ...]: RediSearch 1's
// way in, which RediSearch 2 (and Cellar) turns into a hash write of key
// docId in database 0 (the index follows it as it follows any hash).
func cmdFtAdd(c *Ctx) error {
	idx := c.a.lookupIndex(c.args[1])
	if idx == nil {
		return ErrFtUnknownIndexLower
	}
	key := c.args[2]
	score, ok := parseFloat(c.args[3])
	if !ok || score < 0 || score > 1 {
		return ErrFtAddScore
	}
	replace, partial := false, false
	i := 4
	for ; i < len(c.args) && !c.argEq(i, "FIELDS"); i++ {
		switch {
		case c.argEq(i, "NOSAVE"):
			return errFtUnsupported(c.args[i])
		case c.argEq(i, "REPLACE"):
			replace = true
		case c.argEq(i, "PARTIAL"):
			partial = true
		case (c.argEq(i, "LANGUAGE") || c.argEq(i, "PAYLOAD")) && i+1 < len(c.args):
			i++
		default:
			return errFtUnknownKeyword(c.args[i])
		}
	}
	if i >= len(c.args) {
		return ErrFtNoFieldList
	}
	fields := c.args[i+1:]
	if len(fields) == 0 || len(fields)%2 != 0 {
		return ErrFtFieldsPairs
	}
	present, _, err := c.st.Peek(0, key)
	if err != nil {
		return err
	}
	if present && !replace {
		return ErrFtDocExists
	}
	if present && !partial {
		if _, err := c.st.Delete(0, key); err != nil {
			return err
		}
	}
	h, err := c.st.OpenOrCreateColl(0, key, storage.TypeHash)
	if err != nil {
		return err
	}
	for j := 0; j < len(fields); j += 2 {
		if _, err := c.st.HashSet(h, fields[j], fields[j+1], storage.HashReplace); err != nil {
			return err
		}
	}
	c.w.OK()
	return nil
}

// FT.DEL index docId [DD]: deletes the document's hash.
func cmdFtDel(c *Ctx) error {
	if c.a.lookupIndex(c.args[1]) == nil {
		return ErrFtUnknownIndexLower
	}
	if len(c.args) > 4 || (len(c.args) == 4 && !c.argEq(3, "DD")) {
		return ErrSyntax
	}
	existed, err := c.st.Delete(0, c.args[2])
	if err != nil {
		return err
	}
	c.w.Int(b2i(existed))
	return nil
}

// FT.GET index docId
func cmdFtGet(c *Ctx) error {
	if c.a.lookupIndex(c.args[1]) == nil {
		return ErrFtUnknownIndexLower
	}
	return ftGetOne(c, c.args[2])
}

// FT.MGET index docId [docId ...]
func cmdFtMGet(c *Ctx) error {
	if c.a.lookupIndex(c.args[1]) == nil {
		return ErrFtUnknownIndexLower
	}
	c.w.Array(len(c.args) - 2)
	for _, k := range c.args[2:] {
		if err := ftGetOne(c, k); err != nil {
			return err
		}
	}
	return nil
}

// ftGetOne writes a hash of database 0 as a flat array of fields and
// values, or a null for no hash.
func ftGetOne(c *Ctx, key []byte) error {
	h, err := c.st.OpenColl(0, key, storage.TypeHash)
	if err == storage.ErrWrongType || (err == nil && h == nil) {
		c.w.NullArray()
		return nil
	}
	if err != nil {
		return err
	}
	elems, err := c.st.AllElements(h)
	if err != nil {
		return err
	}
	c.w.Array(2 * len(elems))
	for _, e := range elems {
		c.w.Bulk(e.Member)
		c.w.Bulk(e.Value)
	}
	return nil
}

// spellSuggestion is one FT.SPELLCHECK suggestion.
type spellSuggestion struct {
	term  string
	score float64
}

// FT.SPELLCHECK index query [DISTANCE d] [TERMS INCLUDE|EXCLUDE dict [terms]] [DIALECT d]
func cmdFtSpellCheck(c *Ctx) error {
	idx := c.a.lookupIndex(c.args[1])
	if idx == nil {
		return errFtNoSuchIndex(c.args[1])
	}
	distance := 1
	var include, exclude []string
	for i := 3; i < len(c.args); i++ {
		switch {
		case c.argEq(i, "DISTANCE") && i+1 < len(c.args):
			d, err := parseInt(c.args[i+1])
			if err != nil || d < 1 || d > 4 {
				return ErrFtSpellDistance
			}
			distance = int(d)
			i++
		case c.argEq(i, "TERMS") && i+2 < len(c.args):
			terms, err := dictTerms(c, c.args[i+2])
			if err != nil {
				return err
			}
			if eqFold(c.args[i+1], "INCLUDE") {
				include = append(include, terms...)
			} else if eqFold(c.args[i+1], "EXCLUDE") {
				exclude = append(exclude, terms...)
			} else {
				return ErrFtSpellTerms
			}
			i += 2
		case c.argEq(i, "DIALECT") && i+1 < len(c.args):
			i++
		default:
			return errFtUnknownArg(c.args[i])
		}
	}
	n, err := parseQuery(idx, string(c.args[2]), &ftSearch{})
	if err != nil {
		return err
	}
	var words []string
	var walk func(n *qnode)
	walk = func(n *qnode) {
		if n == nil {
			return
		}
		if n.op == qText && !n.prefix {
			words = append(words, n.words...)
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	walk(n)
	vocab, docs, err := c.a.indexVocab(idx)
	if err != nil {
		return err
	}
	type result struct {
		word string
		sugg []spellSuggestion
	}
	var results []result
	seen := map[string]bool{}
	for _, w := range words {
		if seen[w] || vocab[w] > 0 || containsStr(exclude, w) || containsStr(include, w) {
			continue
		}
		seen[w] = true
		res := result{word: w}
		for t, n := range vocab {
			if levenshtein(t, w) <= distance && !containsStr(exclude, t) {
				res.sugg = append(res.sugg, spellSuggestion{t, float64(n) / float64(max(docs, 1))})
			}
		}
		for _, t := range include {
			if levenshtein(t, w) <= distance {
				res.sugg = append(res.sugg, spellSuggestion{t, 0})
			}
		}
		sort.Slice(res.sugg, func(i, j int) bool {
			if res.sugg[i].score != res.sugg[j].score {
				return res.sugg[i].score > res.sugg[j].score
			}
			return res.sugg[i].term < res.sugg[j].term
		})
		results = append(results, res)
	}
	c.w.Array(len(results))
	for _, r := range results {
		c.w.Array(3)
		c.w.BulkString("TERM")
		c.w.BulkString(r.word)
		c.w.Array(len(r.sugg))
		for _, s := range r.sugg {
			c.w.Array(2)
			c.w.Double(s.score)
			c.w.BulkString(s.term)
		}
	}
	return nil
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// indexVocab returns the terms of idx's FTS5 tables with the number of
// documents holding each (stems, for the stemmed table), and the number of
// documents.
func (a *Actor) indexVocab(idx *ftIndex) (map[string]int64, int64, error) {
	if idx.gc {
		// The counts must not include documents that went.
		if err := a.collectIndex(idx); err != nil {
			return nil, 0, err
		}
	}
	vocab := map[string]int64{}
	var docs int64
	err := a.st.SearchQuery("SELECT count(*) FROM "+idx.table("docs"), false, nil, func(r storage.SearchRow) bool {
		docs = r.Int(0)
		return false
	})
	if err != nil {
		return nil, 0, err
	}
	l := idx.layout()
	for _, t := range []struct {
		kind string
		cols []int
	}{{"s", l.Stemmed}, {"r", l.Raw}} {
		if len(t.cols) == 0 {
			continue
		}
		v := idx.table(t.kind) + "_vocab"
		// A temporary fts5vocab table: the connection's own, outside the
		// database file.
		if err := a.st.SearchExec("CREATE VIRTUAL TABLE IF NOT EXISTS temp." + v + " USING fts5vocab(main, " + idx.table(t.kind) + ", 'row')"); err != nil {
			return nil, 0, err
		}
		err := a.st.SearchQuery("SELECT term, doc FROM temp."+v, false, nil, func(r storage.SearchRow) bool {
			vocab[r.Text(0)] += r.Int(1)
			return true
		})
		if err != nil {
			return nil, 0, err
		}
	}
	return vocab, docs, nil
}
