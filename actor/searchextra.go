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
// their own (storage/schema.go, migration 11), not in a database's
// keyspace; each write records a Search change so that the command is
// logged.

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
		if idx := a.search.indexes[r.Text(0)]; idx != nil {
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
	s := &c.a.search
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
