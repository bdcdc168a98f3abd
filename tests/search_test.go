package tests

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// FT.* (issue 19): RediSearch 2's indexes over hashes. The tests check
// the commands' replies and errors on the wire, the query language
// against a brute-force evaluation over a fixed corpus, the index against
// a scan of the hashes after random writes of every kind, the back-fill,
// restarts and kill -9, and redis-py's search client.

// ftKeys runs FT.SEARCH ... NOCONTENT and returns the total and the keys.
func ftKeys(t *testing.T, c *redis.Client, args ...any) (int64, []string) {
	t.Helper()
	all := append([]any{"FT.SEARCH"}, args...)
	all = append(all, "NOCONTENT", "LIMIT", "0", "100000")
	res, err := c.Do(ctx, all...).Slice()
	if err != nil {
		t.Fatalf("%v: %v", all, err)
	}
	var keys []string
	for _, k := range res[1:] {
		keys = append(keys, k.(string))
	}
	return res[0].(int64), keys
}

func resp2(s *testServer) *redis.Client {
	return s.client(func(o *redis.Options) { o.Protocol = 2 })
}

// ftDoc is one document of the query-language corpus.
type ftDoc struct {
	key         string
	title, body []string
	n           float64
	tags        []string
}

func (d *ftDoc) has(field, w string) bool {
	switch field {
	case "title":
		return slices.Contains(d.title, w)
	case "body":
		return slices.Contains(d.body, w)
	}
	return slices.Contains(d.title, w) || slices.Contains(d.body, w)
}

func (d *ftDoc) prefix(p string) bool {
	for _, w := range append(slices.Clone(d.title), d.body...) {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	return false
}

func contiguous(ws, phrase []string) bool {
	for i := 0; i+len(phrase) <= len(ws); i++ {
		if slices.Equal(ws[i:i+len(phrase)], phrase) {
			return true
		}
	}
	return false
}

func (d *ftDoc) phrase(field string, p ...string) bool {
	switch field {
	case "title":
		return contiguous(d.title, p)
	case "body":
		return contiguous(d.body, p)
	}
	return contiguous(d.title, p) || contiguous(d.body, p)
}

func (d *ftDoc) tag(t string) bool { return slices.Contains(d.tags, t) }

var ftVocab = []string{"alpha", "alpine", "beta", "gamma", "delta", "omega", "kappa", "sigma"}

// ftCorpus is the fixed corpus: 80 documents from a seeded generator.
func ftCorpus() []*ftDoc {
	r := rand.New(rand.NewPCG(19, 19))
	tags := []string{"red", "green", "blue", "dark blue"}
	var docs []*ftDoc
	for i := range 80 {
		d := &ftDoc{key: fmt.Sprintf("doc:%02d", i), n: float64(i%17) - 3}
		for range 2 {
			d.title = append(d.title, ftVocab[r.IntN(len(ftVocab))])
		}
		for range 3 + r.IntN(3) {
			d.body = append(d.body, ftVocab[r.IntN(len(ftVocab))])
		}
		for _, t := range tags {
			if r.IntN(3) == 0 {
				d.tags = append(d.tags, t)
			}
		}
		docs = append(docs, d)
	}
	return docs
}

func TestSearchQueryLanguage(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := resp2(s)
	docs := ftCorpus()
	for _, d := range docs {
		if err := c.HSet(ctx, d.key, "title", strings.Join(d.title, " "), "body", strings.Join(d.body, " "),
			"n", strconv.FormatFloat(d.n, 'g', -1, 64), "tags", strings.Join(d.tags, ",")).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Do(ctx, "FT.CREATE", "idx", "ON", "HASH", "PREFIX", "1", "doc:", "SCHEMA",
		"title", "TEXT", "NOSTEM", "WEIGHT", "2", "body", "TEXT", "NOSTEM", "n", "NUMERIC", "SORTABLE", "tags", "TAG").Err(); err != nil {
		t.Fatal(err)
	}
	waitIndexed(t, c, "idx")
	cases := []struct {
		q    []any
		want func(d *ftDoc) bool
	}{
		{[]any{"alpha"}, func(d *ftDoc) bool { return d.has("", "alpha") }},
		{[]any{"ALPHA"}, func(d *ftDoc) bool { return d.has("", "alpha") }},
		{[]any{"alpha beta"}, func(d *ftDoc) bool { return d.has("", "alpha") && d.has("", "beta") }},
		{[]any{"alpha | beta"}, func(d *ftDoc) bool { return d.has("", "alpha") || d.has("", "beta") }},
		{[]any{"alpha -beta"}, func(d *ftDoc) bool { return d.has("", "alpha") && !d.has("", "beta") }},
		{[]any{"-alpha"}, func(d *ftDoc) bool { return !d.has("", "alpha") }},
		{[]any{"-(alpha | beta)"}, func(d *ftDoc) bool { return !d.has("", "alpha") && !d.has("", "beta") }},
		{[]any{"alpha ~beta"}, func(d *ftDoc) bool { return d.has("", "alpha") }},
		{[]any{"(alpha | beta) (gamma | delta)"}, func(d *ftDoc) bool {
			return (d.has("", "alpha") || d.has("", "beta")) && (d.has("", "gamma") || d.has("", "delta"))
		}},
		{[]any{"alpha beta | gamma"}, func(d *ftDoc) bool {
			return (d.has("", "alpha") && d.has("", "beta")) || d.has("", "gamma")
		}},
		{[]any{"@title:alpha"}, func(d *ftDoc) bool { return d.has("title", "alpha") }},
		{[]any{"@title:alpha beta"}, func(d *ftDoc) bool { return d.has("title", "alpha") && d.has("", "beta") }},
		{[]any{"@title:(alpha | beta) gamma"}, func(d *ftDoc) bool {
			return (d.has("title", "alpha") || d.has("title", "beta")) && d.has("", "gamma")
		}},
		{[]any{"@body:(alpha -beta)"}, func(d *ftDoc) bool { return d.has("body", "alpha") && !d.has("body", "beta") }},
		{[]any{`"alpha beta"`}, func(d *ftDoc) bool { return d.phrase("", "alpha", "beta") }},
		{[]any{`@body:"beta gamma"`}, func(d *ftDoc) bool { return d.phrase("body", "beta", "gamma") }},
		{[]any{"alp*"}, func(d *ftDoc) bool { return d.prefix("alp") }},
		{[]any{"alpi*"}, func(d *ftDoc) bool { return d.prefix("alpi") }},
		{[]any{"@n:[5 10]"}, func(d *ftDoc) bool { return d.n >= 5 && d.n <= 10 }},
		{[]any{"@n:[(5 (10]"}, func(d *ftDoc) bool { return d.n > 5 && d.n < 10 }},
		{[]any{"@n:[-inf (0]"}, func(d *ftDoc) bool { return d.n < 0 }},
		{[]any{"@n:[12 +inf]"}, func(d *ftDoc) bool { return d.n >= 12 }},
		{[]any{"@n:[-2.5 inf]"}, func(d *ftDoc) bool { return d.n >= -2.5 }},
		{[]any{"-@n:[0 5]"}, func(d *ftDoc) bool { return d.n < 0 || d.n > 5 }},
		{[]any{"@tags:{red}"}, func(d *ftDoc) bool { return d.tag("red") }},
		{[]any{"@tags:{RED}"}, func(d *ftDoc) bool { return d.tag("red") }},
		{[]any{"@tags:{red | green}"}, func(d *ftDoc) bool { return d.tag("red") || d.tag("green") }},
		{[]any{"@tags:{dark blue}"}, func(d *ftDoc) bool { return d.tag("dark blue") }},
		{[]any{`@tags:{dark\ blue}`}, func(d *ftDoc) bool { return d.tag("dark blue") }},
		{[]any{"@tags:{bl*}"}, func(d *ftDoc) bool { return d.tag("blue") }},
		{[]any{"@tags:{red} @tags:{blue}"}, func(d *ftDoc) bool { return d.tag("red") && d.tag("blue") }},
		{[]any{"alpha @tags:{red}"}, func(d *ftDoc) bool { return d.has("", "alpha") && d.tag("red") }},
		{[]any{"(alpha | beta) @n:[0 8] -@tags:{green}"}, func(d *ftDoc) bool {
			return (d.has("", "alpha") || d.has("", "beta")) && d.n >= 0 && d.n <= 8 && !d.tag("green")
		}},
		{[]any{"*"}, func(d *ftDoc) bool { return true }},
		{[]any{"the alpha"}, func(d *ftDoc) bool { return d.has("", "alpha") }}, // a stop word
		{[]any{"zzz"}, func(d *ftDoc) bool { return false }},
		{[]any{"@nosuch:alpha"}, func(d *ftDoc) bool { return false }},
		{[]any{"$w", "PARAMS", "2", "w", "gamma", "DIALECT", "2"}, func(d *ftDoc) bool { return d.has("", "gamma") }},
		{[]any{"@n:[$lo $hi]", "PARAMS", "4", "lo", "1", "hi", "3", "DIALECT", "2"}, func(d *ftDoc) bool { return d.n >= 1 && d.n <= 3 }},
		{[]any{"@tags:{$t}", "PARAMS", "2", "t", "green", "DIALECT", "2"}, func(d *ftDoc) bool { return d.tag("green") }},
		{[]any{"alpha", "INFIELDS", "1", "body"}, func(d *ftDoc) bool { return d.has("body", "alpha") }},
		{[]any{"*", "FILTER", "n", "2", "4"}, func(d *ftDoc) bool { return d.n >= 2 && d.n <= 4 }},
		{[]any{"*", "INKEYS", "2", "doc:01", "doc:02"}, func(d *ftDoc) bool { return d.key == "doc:01" || d.key == "doc:02" }},
	}
	for _, tc := range cases {
		var want []string
		for _, d := range docs {
			if tc.want(d) {
				want = append(want, d.key)
			}
		}
		args := append([]any{"idx", tc.q[0]}, tc.q[1:]...)
		total, got := ftKeys(t, c, args...)
		sort.Strings(got)
		if total != int64(len(want)) || !slices.Equal(got, want) {
			t.Errorf("%v: got %d %v, want %d %v", tc.q, total, got, len(want), want)
		}
	}
	// A query that matches nothing the brute force finds too: sanity that
	// the table exercised real matches.
	if _, keys := ftKeys(t, c, "idx", "alpha"); len(keys) == 0 || len(keys) == len(docs) {
		t.Fatalf("the corpus does not discriminate: alpha matches %d of %d", len(keys), len(docs))
	}

	// SORTBY and LIMIT: the numeric order, ties by key.
	res, err := c.Do(ctx, "FT.SEARCH", "idx", "*", "SORTBY", "n", "DESC", "LIMIT", "3", "5", "NOCONTENT").Slice()
	if err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(docs)
	slices.SortStableFunc(sorted, func(a, b *ftDoc) int {
		if a.n != b.n {
			if a.n > b.n {
				return -1
			}
			return 1
		}
		return strings.Compare(a.key, b.key)
	})
	var want []any
	want = append(want, int64(len(docs)))
	for _, d := range sorted[3:8] {
		want = append(want, d.key)
	}
	if fmt.Sprint(res) != fmt.Sprint(want) {
		t.Fatalf("SORTBY n DESC LIMIT 3 5: got %v, want %v", res, want)
	}
	// The default order: by score, highest first; every score positive
	// for a text query.
	res, err = c.Do(ctx, "FT.SEARCH", "idx", "alpha", "WITHSCORES", "NOCONTENT", "LIMIT", "0", "100").Slice()
	if err != nil {
		t.Fatal(err)
	}
	prev := math.Inf(1)
	for i := 1; i+1 < len(res); i += 2 {
		sc, err := strconv.ParseFloat(res[i+1].(string), 64)
		if err != nil || sc <= 0 || sc > prev {
			t.Fatalf("scores out of order or not positive at %d: %v", i, res)
		}
		prev = sc
	}
	// Pages: a query compiles to a statement that looks up only the rows
	// that can be on the page (those scoring at least the page's last
	// score, or for a query without text, the first keys in order), so
	// every page must be the same slice of the full order — score
	// descending, equal scores by key — and carry the same total. Queries
	// with many ties, with text and without, selective and not.
	for _, q := range []string{"alpha", "alpha | beta", "~alpha beta", "-alpha", "@tags:{red}", "@tags:{red} alpha",
		"@n:[0 0]", "@n:[-inf inf]", "*", "@n:[0 3] | gamma"} {
		full := ftScored(t, c, q, 0, 100000)
		for i := 1; i < len(full); i++ {
			a, b := full[i-1], full[i]
			if a.score < b.score || (a.score == b.score && a.key >= b.key) {
				t.Fatalf("%q: out of order at %d: %v", q, i, full)
			}
		}
		for _, size := range []int{1, 2, 3, 7} {
			for off := 0; off <= len(full)+size; off += size {
				page := ftScored(t, c, q, off, size)
				want := full[min(off, len(full)):min(off+size, len(full))]
				if fmt.Sprint(page) != fmt.Sprint(want) {
					t.Fatalf("%q LIMIT %d %d: got %v, want %v", q, off, size, page, want)
				}
			}
		}
		res, err := c.Do(ctx, "FT.SEARCH", "idx", q, "NOCONTENT", "LIMIT", strconv.Itoa(len(full)+5), "3").Slice()
		if err != nil || res[0] != int64(len(full)) || len(res) != 1 {
			t.Fatalf("%q past the end: %v %v, want total %d", q, res, err, len(full))
		}
	}
}

type ftScoredHit struct {
	key   string
	score float64
}

// ftScored runs FT.SEARCH q WITHSCORES NOCONTENT LIMIT off n on idx,
// checks the total against the full result's and returns the page.
func ftScored(t *testing.T, c *redis.Client, q string, off, n int) []ftScoredHit {
	t.Helper()
	res, err := c.Do(ctx, "FT.SEARCH", "idx", q, "WITHSCORES", "NOCONTENT", "LIMIT", strconv.Itoa(off), strconv.Itoa(n)).Slice()
	if err != nil {
		t.Fatalf("%q LIMIT %d %d: %v", q, off, n, err)
	}
	total, _ := ftKeys(t, c, "idx", q)
	if res[0] != total {
		t.Fatalf("%q LIMIT %d %d: total %v, want %d", q, off, n, res[0], total)
	}
	var out []ftScoredHit
	for i := 1; i+1 < len(res); i += 2 {
		sc, err := strconv.ParseFloat(res[i+1].(string), 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ftScoredHit{res[i].(string), sc})
	}
	return out
}

// waitIndexed waits until idx's back-fill is done.
func waitIndexed(t *testing.T, c *redis.Client, idx string) {
	t.Helper()
	waitFor(t, 60*time.Second, idx+" indexed", func() bool {
		info, err := c.Do(ctx, "FT.INFO", idx).Slice()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(info); i += 2 {
			if info[i] == "indexing" {
				return info[i+1] == int64(0)
			}
		}
		t.Fatalf("FT.INFO has no indexing field: %v", info)
		return false
	})
}

func ftInfoField(t *testing.T, c *redis.Client, idx, field string) any {
	t.Helper()
	info, err := c.Do(ctx, "FT.INFO", idx).Slice()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(info); i += 2 {
		if info[i] == field {
			return info[i+1]
		}
	}
	t.Fatalf("FT.INFO %s has no %s: %v", idx, field, info)
	return nil
}

func TestSearchReplies(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.expect(status("OK"), "FT.CREATE", "idx", "ON", "HASH", "PREFIX", "2", "p:", "q:", "SCHEMA",
		"title", "AS", "t", "TEXT", "SORTABLE", "price", "NUMERIC", "SORTABLE", "tags", "TAG", "SEPARATOR", ";")
	r.expect(integer(2), "HSET", "p:1", "title", "Hello World", "price", "10")
	r.expect(integer(2), "HSET", "q:2", "title", "hello planet", "tags", "A;b")
	r.expect(integer(1), "HSET", "other:3", "title", "hello")
	r.expect(array(bulk("idx")), "FT._LIST")
	// NOCONTENT, RETURN with AS, ties in key order.
	r.expect(array(integer(2), bulk("p:1"), bulk("q:2")), "FT.SEARCH", "idx", "hello", "NOCONTENT")
	r.expect(array(integer(2), bulk("p:1"), array(bulk("tt"), bulk("Hello World")), bulk("q:2"), array(bulk("tt"), bulk("hello planet"))),
		"FT.SEARCH", "idx", "hello", "RETURN", "3", "t", "AS", "tt")
	r.expect(array(integer(1), bulk("p:1"), array(bulk("price"), bulk("10"))),
		"FT.SEARCH", "idx", "@price:[0 100]", "RETURN", "1", "price")
	r.expect(array(integer(2)), "FT.SEARCH", "idx", "hello", "LIMIT", "0", "0")
	r.expect(array(integer(2)), "FT.SEARCH", "idx", "hello", "LIMIT", "5", "10")
	r.expect(array(integer(1), bulk("q:2")), "FT.SEARCH", "idx", "@tags:{a}", "NOCONTENT")
	r.expect(array(integer(1), bulk("q:2")), "FT.SEARCH", "idx", "@t:planet", "NOCONTENT")
	r.expect(array(integer(0)), "FT.SEARCH", "idx", "@title:planet", "NOCONTENT") // queries use the alias
	r.expect(array(integer(1), bulk("q:2"), array()), "FT.SEARCH", "idx", "planet", "RETURN", "1", "price")
	r.expect(array(integer(0)), "FT.SEARCH", "idx", "there", "NOCONTENT") // a stop word
	r.expect(array(bulk("a"), bulk("b")), "FT.TAGVALS", "idx", "tags")
	// Text sorts as RediSearch normalises it: case folded.
	r.expect(array(integer(2), bulk("q:2"), bulk("p:1")), "FT.SEARCH", "idx", "*", "SORTBY", "t", "NOCONTENT")
	r.expect(array(integer(2), bulk("p:1"), bulk("q:2")), "FT.SEARCH", "idx", "*", "SORTBY", "t", "DESC", "NOCONTENT")
	r.expect(array(integer(2), bulk("p:1"), bulk("q:2")), "FT.SEARCH", "idx", "*", "SORTBY", "price", "DESC", "NOCONTENT") // missing values last
	r.expect(array(integer(2), bulk("p:1"), bulk("#10"), bulk("q:2"), "$-1\r\n"), "FT.SEARCH", "idx", "*", "SORTBY", "price", "DESC", "NOCONTENT", "WITHSORTKEYS")
	r.expect(array(integer(2), bulk("q:2"), bulk("$hello planet"), bulk("p:1"), bulk("$hello world")), "FT.SEARCH", "idx", "*", "SORTBY", "t", "NOCONTENT", "WITHSORTKEYS")
	// Punctuation separates terms; a number keeps its decimal point.
	r.expect(array(integer(1), bulk("p:1")), "FT.SEARCH", "idx", "hello, world.", "NOCONTENT")
	r.expect(integer(0), "HSET", "p:1", "title", "Hello World version 3.14")
	r.expect(array(integer(1), bulk("p:1")), "FT.SEARCH", "idx", "3.14", "NOCONTENT")
	r.expect(integer(0), "HSET", "p:1", "title", "Hello World")
	// Stemming: TEXT fields are stemmed unless NOSTEM.
	r.expect(integer(1), "HSET", "p:4", "title", "dogs running")
	r.expect(array(integer(1), bulk("p:4")), "FT.SEARCH", "idx", "run", "NOCONTENT")
	r.expect(array(integer(1), bulk("p:4")), "FT.SEARCH", "idx", "dog", "NOCONTENT")
	// Updates and deletions follow.
	r.expect(integer(0), "HSET", "p:4", "title", "cats")
	r.expect(array(integer(0)), "FT.SEARCH", "idx", "dog", "NOCONTENT")
	r.expect(integer(1), "DEL", "p:4")
	r.expect(array(integer(0)), "FT.SEARCH", "idx", "cats", "NOCONTENT")
	// Aliases.
	r.expect(status("OK"), "FT.ALIASADD", "al", "idx")
	r.expect(errr("Alias already exists"), "FT.ALIASADD", "al", "idx")
	r.expect(array(integer(1), bulk("p:1")), "FT.SEARCH", "al", "world", "NOCONTENT")
	r.expect(status("OK"), "FT.ALIASUPDATE", "al", "idx")
	r.expect(status("OK"), "FT.ALIASDEL", "al")
	r.expect(errr("Alias does not exist"), "FT.ALIASDEL", "al")
	r.expect(errr("al: no such index"), "FT.SEARCH", "al", "world")
	// EXPLAIN.
	r.expect(bulk("INTERSECT {\n  @t:hello\n  NUMERIC {1.000000 <= @price <= inf}\n}\n"), "FT.EXPLAIN", "idx", "@t:hello @price:[1 inf]")
	// Errors, as RediSearch words them (no ERR code).
	r.expect(errr("nosuch: no such index"), "FT.SEARCH", "nosuch", "*")
	r.expect(errr("Unknown Index name"), "FT.INFO", "nosuch")
	r.expect(errr("Unknown Index name"), "FT.DROPINDEX", "nosuch")
	r.expect(errr("Index already exists"), "FT.CREATE", "idx", "SCHEMA", "x", "TEXT")
	r.expect(errr("No schema found"), "FT.CREATE", "idx2", "ON", "HASH")
	r.expect(errr("Invalid field type for field `BLOB`"), "FT.CREATE", "idx2", "SCHEMA", "x", "BLOB")
	r.expect(errr("Duplicate field in schema - x"), "FT.CREATE", "idx2", "SCHEMA", "x", "TEXT", "x", "TAG")
	r.expect(errr("Syntax error at offset 6 near "), "FT.SEARCH", "idx", "(hello")
	r.expect(errr("Syntax error at offset 5 near )"), "FT.SEARCH", "idx", "hello)")
	r.expect(errr("Bad lower range: abc"), "FT.SEARCH", "idx", "@price:[abc 5]")
	r.expect(errr("Bad upper range: x"), "FT.SEARCH", "idx", "@price:[1 x]")
	r.expect(errr("No such parameter `p`"), "FT.SEARCH", "idx", "$p", "DIALECT", "2")
	r.expect(errr("Property `nosuch` not loaded nor in schema"), "FT.SEARCH", "idx", "*", "SORTBY", "nosuch")
	r.expect(errr("Parameters must be specified in PARAM VALUE pairs"), "FT.SEARCH", "idx", "*", "PARAMS", "1", "x")
	r.expect(errr("DIALECT requires a non negative integer >=1 and <= 4"), "FT.SEARCH", "idx", "*", "DIALECT", "9")
	r.expect(errr("Unknown argument `BOGUS` at position 3 for <main>"), "FT.SEARCH", "idx", "*", "BOGUS")
	r.expect(errr("ERR wrong number of arguments for 'ft.search' command"), "FT.SEARCH", "idx")
	r.expect(status("OK"), "SELECT", "1")
	r.expect(errr("Cannot create index on db != 0"), "FT.CREATE", "idx1", "SCHEMA", "x", "TEXT")
	r.expect(status("OK"), "SELECT", "0")
	// A hash whose NUMERIC field is not a number is not indexed.
	r.expect(integer(2), "HSET", "p:5", "title", "bad", "price", "cheap")
	r.expect(array(integer(0)), "FT.SEARCH", "idx", "bad", "NOCONTENT")
	// ALTER adds a field and indexes the hashes again.
	r.expect(status("OK"), "FT.ALTER", "idx", "SCHEMA", "ADD", "body", "TEXT")
	r.expect(errr("Unknown index name"), "FT.ALTER", "nosuch", "SCHEMA", "ADD", "body", "TEXT")
	r.expect(integer(1), "HSET", "q:2", "body", "zebra")
	c := resp2(s)
	waitIndexed(t, c, "idx")
	r.expect(array(integer(1), bulk("q:2")), "FT.SEARCH", "idx", "@body:zebra", "NOCONTENT")
	// DROPINDEX keeps the hashes; with DD they go too.
	r.expect(status("OK"), "FT.DROPINDEX", "idx")
	r.expect(integer(1), "EXISTS", "p:1")
	r.expect(array(), "FT._LIST")
	r.expect(status("OK"), "FT.CREATE", "skip", "SKIPINITIALSCAN", "PREFIX", "1", "p:", "SCHEMA", "title", "TEXT")
	r.expect(array(integer(0)), "FT.SEARCH", "skip", "*", "NOCONTENT")
	r.expect(integer(1), "HSET", "p:9", "title", "new")
	r.expect(array(integer(1), bulk("p:9")), "FT.SEARCH", "skip", "*", "NOCONTENT")
	r.expect(status("OK"), "FT.DROPINDEX", "skip", "DD")
	r.expect(status("OK"), "FT.CREATE", "idx", "PREFIX", "1", "p:", "SCHEMA", "title", "TEXT")
	waitIndexed(t, c, "idx")
	r.expect(status("OK"), "FT.DROPINDEX", "idx", "DD")
	r.expect(integer(0), "EXISTS", "p:1")
	r.expect(integer(1), "EXISTS", "q:2")
}

// A back-fill over existing data, in bounded batches.
func TestSearchBackfill(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := resp2(s)
	const n = 3500
	pipe := c.Pipeline()
	for i := range n {
		pipe.HSet(ctx, fmt.Sprintf("item:%d", i), "name", fmt.Sprintf("thing%d common", i), "v", i)
		pipe.Set(ctx, fmt.Sprintf("item:s%d", i), "a string under the prefix", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "FT.CREATE", "items", "PREFIX", "1", "item:", "SCHEMA", "name", "TEXT", "v", "NUMERIC").Err(); err != nil {
		t.Fatal(err)
	}
	waitIndexed(t, c, "items")
	if got := ftInfoField(t, c, "items", "num_docs"); got != int64(n) {
		t.Fatalf("num_docs %v, want %d", got, n)
	}
	if got := ftInfoField(t, c, "items", "percent_indexed"); got != "1" {
		t.Fatalf("percent_indexed %v, want 1", got)
	}
	if total, _ := ftKeys(t, c, "items", "common @v:[100 (200]"); total != 100 {
		t.Fatalf("got %d, want 100", total)
	}
}

// After random writes of every kind, the index agrees with a scan of the
// hashes.
func TestSearchIndexConsistency(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := resp2(s)
	if err := c.Do(ctx, "FT.CREATE", "idx", "PREFIX", "1", "doc:", "SCHEMA", "title", "TEXT", "NOSTEM", "tags", "TAG", "n", "NUMERIC").Err(); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	key := func() string { return fmt.Sprintf("doc:%d", r.IntN(40)) }
	words := ftVocab[:5]
	hset := func(k string) []any {
		args := []any{"HSET", k}
		if r.IntN(4) > 0 {
			args = append(args, "title", words[r.IntN(len(words))]+" "+words[r.IntN(len(words))])
		}
		if r.IntN(2) == 0 {
			args = append(args, "tags", []string{"x", "y", "x,y", "z"}[r.IntN(4)])
		}
		if r.IntN(2) == 0 {
			n := strconv.Itoa(r.IntN(10))
			if r.IntN(15) == 0 {
				n = "NaN-ish"
			}
			args = append(args, "n", n)
		}
		if len(args) == 2 {
			args = append(args, "other", "1")
		}
		return args
	}
	for step := range 400 {
		k := key()
		var err error
		switch op := r.IntN(15); op {
		case 0, 1, 2, 3:
			err = c.Do(ctx, hset(k)...).Err()
		case 4:
			err = c.HDel(ctx, k, []string{"title", "tags", "n"}[r.IntN(3)]).Err()
		case 5:
			err = c.Del(ctx, k).Err()
		case 6:
			// Expiry: the key expires at once and the lookup deletes it.
			c.PExpire(ctx, k, time.Millisecond)
			waitFor(t, 5*time.Second, "the key to expire", func() bool { return c.Exists(ctx, k).Val() == 0 })
		case 7:
			err = c.Rename(ctx, k, key()).Err()
			if err != nil && strings.Contains(err.Error(), "no such key") {
				err = nil
			}
		case 8:
			err = c.Set(ctx, k, "a string now", 0).Err()
		case 9:
			pipe := c.TxPipeline()
			pipe.Do(ctx, hset(k)...)
			pipe.HDel(ctx, key(), "title")
			pipe.Del(ctx, key())
			_, err = pipe.Exec(ctx)
		case 10:
			err = c.Eval(ctx, "redis.call('HSET', KEYS[1], 'title', ARGV[1]) redis.call('HSET', KEYS[2], 'tags', 'x')", []string{k, key()}, words[r.IntN(len(words))]).Err()
		case 11:
			err = c.Rename(ctx, k, "away:"+k).Err()
			if err == nil {
				err = c.Rename(ctx, "away:"+k, key()).Err()
			}
			if err != nil && strings.Contains(err.Error(), "no such key") {
				err = nil
			}
		case 12:
			if r.IntN(10) == 0 {
				err = c.FlushDB(ctx).Err()
			} else {
				err = c.Copy(ctx, k, key(), 0, true).Err()
			}
		case 13:
			// Out to database 1 and back, perhaps onto another name.
			c.Move(ctx, k, 1)
			k2 := key()
			pipe := c.Pipeline()
			pipe.Select(ctx, 1)
			pipe.Move(ctx, k, 0)
			pipe.Select(ctx, 0)
			_, err = pipe.Exec(ctx)
			if err == nil && r.IntN(2) == 0 {
				err = c.Do(ctx, hset(k2)...).Err()
			}
		case 14:
			if r.IntN(5) == 0 {
				// Database 0 and 1 exchange contents: the index starts
				// again and fills from what database 0 now holds.
				err = c.Do(ctx, "SWAPDB", 0, 1).Err()
				if err == nil {
					waitIndexed(t, c, "idx")
				}
			}
		}
		if err != nil && err != redis.Nil && !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Fatalf("step %d: %v", step, err)
		}
		if step%20 == 19 {
			checkIndex(t, c, words)
		}
	}
	checkIndex(t, c, words)
}

// checkIndex compares idx with a brute-force scan of the doc:* hashes.
func checkIndex(t *testing.T, c *redis.Client, words []string) {
	t.Helper()
	type doc struct {
		title []string
		tags  []string
		n     float64
		hasN  bool
	}
	docs := map[string]*doc{}
	for i := range 40 {
		k := fmt.Sprintf("doc:%d", i)
		if c.Type(ctx, k).Val() != "hash" {
			continue
		}
		h := c.HGetAll(ctx, k).Val()
		d := &doc{title: strings.Fields(h["title"])}
		for _, tg := range strings.Split(h["tags"], ",") {
			if tg != "" {
				d.tags = append(d.tags, tg)
			}
		}
		if v, ok := h["n"]; ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue // not indexable
			}
			d.n, d.hasN = f, true
		}
		docs[k] = d
	}
	check := func(q string, pred func(d *doc) bool) {
		t.Helper()
		var want []string
		for k, d := range docs {
			if pred(d) {
				want = append(want, k)
			}
		}
		sort.Strings(want)
		_, got := ftKeys(t, c, "idx", q)
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: index has %v, hashes say %v", q, got, want)
		}
	}
	check("*", func(d *doc) bool { return true })
	for _, w := range words {
		check("@title:"+w, func(d *doc) bool { return slices.Contains(d.title, w) })
	}
	for _, tg := range []string{"x", "y", "z"} {
		check("@tags:{"+tg+"}", func(d *doc) bool { return slices.Contains(d.tags, tg) })
	}
	check("@n:[2 6]", func(d *doc) bool { return d.hasN && d.n >= 2 && d.n <= 6 })
}

// Indexes survive a restart, and go on following writes.
func TestSearchRestart(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := resp2(s)
	c.HSet(ctx, "b:1", "t", "persistent words")
	if err := c.Do(ctx, "FT.CREATE", "books", "PREFIX", "1", "b:", "SCHEMA", "t", "TEXT", "SORTABLE").Err(); err != nil {
		t.Fatal(err)
	}
	c.Do(ctx, "FT.ALIASADD", "lib", "books")
	waitIndexed(t, c, "books")
	s.restart()
	c = resp2(s)
	if got := c.Do(ctx, "FT._LIST").Val(); fmt.Sprint(got) != "[books]" {
		t.Fatalf("FT._LIST after restart: %v", got)
	}
	c.HSet(ctx, "b:2", "t", "more words")
	if _, keys := ftKeys(t, c, "lib", "words"); !slices.Equal(keys, []string{"b:1", "b:2"}) {
		t.Fatalf("after restart: %v", keys)
	}
}

// kill -9 with unflushed writes: the restart replays them from the redo
// log, and the index agrees with the hashes, whether or not FT.CREATE
// itself had reached SQLite.
func TestSearchKillReplay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--dir", dir}
	r := rand.New(rand.NewPCG(3, 3))
	replays := 0
	for round := range 4 {
		p := runCellar(t, true, args...)
		c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, Protocol: 2})
		if round == 0 {
			// Hashes before the index: its back-fill may be cut short by
			// the kill, and must finish after the restart.
			for i := range 40 {
				c.HSet(ctx, fmt.Sprintf("doc:%d", i), "title", ftVocab[i%5], "n", i)
			}
			if err := c.Do(ctx, "FT.CREATE", "idx", "PREFIX", "1", "doc:", "SCHEMA", "title", "TEXT", "NOSTEM", "tags", "TAG", "n", "NUMERIC").Err(); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 300 {
			k := fmt.Sprintf("doc:%d", r.IntN(40))
			var err error
			switch r.IntN(4) {
			case 0, 1:
				err = c.HSet(ctx, k, "title", ftVocab[r.IntN(5)]+" "+ftVocab[r.IntN(5)], "tags", []string{"x", "y"}[r.IntN(2)], "n", r.IntN(10)).Err()
			case 2:
				err = c.HDel(ctx, k, "title").Err()
			case 3:
				err = c.Del(ctx, k).Err()
			}
			if err != nil {
				t.Fatalf("round %d write %d: %v", round, i, err)
			}
		}
		p.kill9()
		integrityCheck(t, filepath.Join(dir, "cellar.db"))
		p = runCellar(t, true, args...)
		if strings.Contains(p.stderr.String(), "replayed the redo log") {
			replays++
		}
		c.Close()
		c = redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 2})
		waitIndexed(t, c, "idx")
		checkIndex(t, c, ftVocab[:5])
		c.Close()
		p.kill9()
	}
	// The writes came faster than a flush interval: some restart must
	// have rebuilt them (and the index with them) from the log.
	if replays == 0 {
		t.Fatal("no restart replayed the redo log: the kills did not test it")
	}
	t.Logf("%d of 4 restarts replayed the redo log", replays)
}

// redis-py's search client (redis.commands.search, Debian's python3-redis).
func TestRedisPySearch(t *testing.T) {
	t.Parallel()
	needPythonModule(t, "redis.commands.search", "python3-redis")
	s := startServer(t)
	runClientScript(t, serverPort(t, s), debianPython, filepath.Join("clients", "python", "search.py"))
}

// The bounds on what clients can make: indexes, aliases, query nesting.
func TestSearchLimits(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	for i := range 256 {
		r.expect(status("OK"), "FT.CREATE", fmt.Sprintf("i%d", i), "PREFIX", "1", fmt.Sprintf("k%d:", i), "SCHEMA", "t", "TEXT")
	}
	r.expect(errr("Too many indexes (256)"), "FT.CREATE", "one-more", "SCHEMA", "t", "TEXT")
	for i := range 1024 {
		r.expect(status("OK"), "FT.ALIASADD", fmt.Sprintf("a%d", i), "i0")
	}
	r.expect(errr("Too many aliases (1024)"), "FT.ALIASADD", "one-more", "i0")
	r.expect(status("OK"), "FT.ALIASUPDATE", "a0", "i1") // an existing alias moves
	r.expect(status("OK"), "FT.DROPINDEX", "i0")
	r.expect(status("OK"), "FT.CREATE", "one-more", "SCHEMA", "t", "TEXT")
	r.expect(errr("Parser stack overflow. Try moving nested parentheses more to the left"), "FT.SEARCH", "i1", strings.Repeat("(", 300)+"a"+strings.Repeat(")", 300))
	r.expect(errr("LIMIT exceeds maximum of 1000000"), "FT.SEARCH", "i1", "*", "LIMIT", "0", "1000001")
	// Synonym terms, held in memory, are bounded per index.
	syn := []string{"FT.SYNUPDATE", "i1", "g"}
	for i := range 100000 {
		syn = append(syn, fmt.Sprintf("w%d", i))
	}
	r.expect(status("OK"), syn...)
	r.expect(status("OK"), "FT.SYNUPDATE", "i1", "g2", "w1", "w2") // known terms join another group
	r.expect(errr("Too many synonym terms (100000)"), "FT.SYNUPDATE", "i1", "g", "one-more")
}

// go-redis's FT API (RESP2, as go-redis speaks to search by default).
func TestGoRedisSearch(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := resp2(s)
	if err := c.FTCreate(ctx, "people", &redis.FTCreateOptions{OnHash: true, Prefix: []any{"person:"}},
		&redis.FieldSchema{FieldName: "name", FieldType: redis.SearchFieldTypeText, Sortable: true},
		&redis.FieldSchema{FieldName: "age", FieldType: redis.SearchFieldTypeNumeric},
		&redis.FieldSchema{FieldName: "city", FieldType: redis.SearchFieldTypeTag},
	).Err(); err != nil {
		t.Fatal(err)
	}
	c.HSet(ctx, "person:1", "name", "Ada Lovelace", "age", 36, "city", "London")
	c.HSet(ctx, "person:2", "name", "Alan Turing", "age", 41, "city", "London")
	c.HSet(ctx, "person:3", "name", "Grace Hopper", "age", 85, "city", "New York")
	res, err := c.FTSearchWithArgs(ctx, "people", "@city:{london}", &redis.FTSearchOptions{
		SortBy: []redis.FTSearchSortBy{{FieldName: "age", Desc: true}}, WithScores: true}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 2 || len(res.Docs) != 2 || res.Docs[0].ID != "person:2" || res.Docs[0].Fields["name"] != "Alan Turing" {
		t.Fatalf("FTSearch: %+v", res)
	}
	res, err = c.FTSearchWithArgs(ctx, "people", "@age:[$lo $hi]", &redis.FTSearchOptions{
		Params: map[string]any{"lo": 40, "hi": 100}, DialectVersion: 2, NoContent: true}).Result()
	if err != nil || res.Total != 2 || res.Docs[0].ID != "person:2" || res.Docs[1].ID != "person:3" {
		t.Fatalf("FTSearch with params: %+v %v", res, err)
	}
	info, err := c.FTInfo(ctx, "people").Result()
	if err != nil {
		t.Fatal(err)
	}
	if info.IndexName != "people" || info.NumDocs != 3 || len(info.Attributes) != 3 || info.Attributes[0].Type != "TEXT" || !info.Attributes[0].Sortable {
		t.Fatalf("FTInfo: %+v", info)
	}
	if got := c.FT_List(ctx).Val(); !slices.Equal(got, []string{"people"}) {
		t.Fatalf("FT_List: %v", got)
	}
	if got := c.FTTagVals(ctx, "people", "city").Val(); !slices.Equal(got, []string{"london", "new york"}) {
		t.Fatalf("FTTagVals: %v", got)
	}
	// RESP3 (go-redis's default protocol): RediSearch 2.8's map shape.
	c3 := s.client()
	res, err = c3.FTSearchWithArgs(ctx, "people", "@city:{london}", &redis.FTSearchOptions{
		SortBy: []redis.FTSearchSortBy{{FieldName: "age", Asc: true}}, WithScores: true}).Result()
	if err != nil || res.Total != 2 || len(res.Docs) != 2 || res.Docs[0].ID != "person:1" || res.Docs[0].Fields["city"] != "London" || res.Docs[0].Score == nil {
		t.Fatalf("FTSearch over RESP3: %+v %v", res, err)
	}
	if info, err := c3.FTInfo(ctx, "people").Result(); err != nil || info.NumDocs != 3 || len(info.Attributes) != 3 {
		t.Fatalf("FTInfo over RESP3: %+v %v", info, err)
	}
	r3 := s.raw()
	r3.do("HELLO", "3")
	r3.expect("%5\r\n+attributes\r\n*0\r\n+format\r\n+STRING\r\n+results\r\n*1\r\n%3\r\n+id\r\n$8\r\nperson:3\r\n"+
		"+extra_attributes\r\n%1\r\n$4\r\nname\r\n$12\r\nGrace Hopper\r\n+values\r\n*0\r\n+total_results\r\n:1\r\n+warning\r\n*0\r\n",
		"FT.SEARCH", "people", "grace", "RETURN", "1", "name")
	r3.expect("%5\r\n+attributes\r\n*0\r\n+format\r\n+STRING\r\n+results\r\n*1\r\n%2\r\n+extra_attributes\r\n%2\r\n$4\r\ncity\r\n$6\r\nlondon\r\n$1\r\nn\r\n$1\r\n2\r\n"+
		"+values\r\n*0\r\n+total_results\r\n:1\r\n+warning\r\n*0\r\n",
		"FT.AGGREGATE", "people", "@city:{london}", "APPLY", "lower(@city)", "AS", "city", "GROUPBY", "1", "@city", "REDUCE", "COUNT", "0", "AS", "n")
	if err := c.FTAliasAdd(ctx, "people", "folk").Err(); err != nil {
		t.Fatal(err)
	}
	if n := c.FTSearch(ctx, "folk", "grace").Val().Total; n != 1 {
		t.Fatalf("search through the alias: %d", n)
	}
	if err := c.FTDropIndexWithArgs(ctx, "people", &redis.FTDropIndexOptions{DeleteDocs: true}).Err(); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(ctx, "person:1", "person:2", "person:3").Val(); n != 0 {
		t.Fatalf("DD left %d hashes", n)
	}
}

func TestSearchAggregate(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.expect(status("OK"), "FT.CREATE", "sales", "PREFIX", "1", "s:", "SCHEMA", "item", "TEXT", "shop", "TAG", "price", "NUMERIC", "qty", "NUMERIC")
	rows := []struct{ item, shop, price, qty string }{
		{"red apple", "north", "1.5", "10"}, {"green apple", "north", "2", "5"}, {"pear", "south", "3", "2"},
		{"apple pie", "south", "12", "1"}, {"plum", "east", "0.5", "40"},
	}
	for i, row := range rows {
		r.expect(integer(4), "HSET", fmt.Sprintf("s:%d", i), "item", row.item, "shop", row.shop, "price", row.price, "qty", row.qty)
	}
	// GROUPBY with reducers, SORTBY.
	r.expect(array(integer(3),
		array(bulk("shop"), bulk("east"), bulk("n"), bulk("1"), bulk("total"), bulk("40"), bulk("avg"), bulk("0.5")),
		array(bulk("shop"), bulk("north"), bulk("n"), bulk("2"), bulk("total"), bulk("15"), bulk("avg"), bulk("1.75")),
		array(bulk("shop"), bulk("south"), bulk("n"), bulk("2"), bulk("total"), bulk("3"), bulk("avg"), bulk("7.5"))),
		"FT.AGGREGATE", "sales", "*", "GROUPBY", "1", "@shop",
		"REDUCE", "COUNT", "0", "AS", "n", "REDUCE", "SUM", "1", "@qty", "AS", "total", "REDUCE", "AVG", "1", "@price", "AS", "avg",
		"SORTBY", "2", "@shop", "ASC")
	// A text query, APPLY, FILTER, MIN/MAX/COUNT_DISTINCT, default aliases.
	r.expect(array(integer(1),
		array(bulk("shop"), bulk("north"), bulk("__generated_aliasminprice"), bulk("1.5"), bulk("__generated_aliasmaxrevenue"), bulk("15"), bulk("__generated_aliascount_distinctitem"), bulk("1"))),
		"FT.AGGREGATE", "sales", "apple", "APPLY", "@price * @qty", "AS", "revenue", "FILTER", "@revenue > 12",
		"GROUPBY", "1", "@shop", "REDUCE", "MIN", "1", "@price", "REDUCE", "MAX", "1", "@revenue", "REDUCE", "COUNT_DISTINCT", "1", "@item")
	// LOAD, APPLY with string functions, SORTBY DESC, LIMIT.
	r.expect(array(integer(5),
		array(bulk("item"), bulk("apple pie"), bulk("price"), bulk("12"), bulk("up"), bulk("APPLE PIE")),
		array(bulk("item"), bulk("pear"), bulk("price"), bulk("3"), bulk("up"), bulk("PEAR"))),
		"FT.AGGREGATE", "sales", "*", "LOAD", "2", "@item", "@price", "APPLY", "upper(@item)", "AS", "up",
		"SORTBY", "2", "@price", "DESC", "LIMIT", "0", "2")
	r.expect(array(integer(1), array(bulk("x"), bulk("3"))),
		"FT.AGGREGATE", "sales", "pear", "APPLY", "strlen(substr('abcdef', 1, 3))", "AS", "x")
	r.expect(errr("No such reducer `MEDIAN`"), "FT.AGGREGATE", "sales", "*", "GROUPBY", "1", "@shop", "REDUCE", "MEDIAN", "1", "@price")
	r.expect(errr("Unknown function name 'nosuch'"), "FT.AGGREGATE", "sales", "*", "APPLY", "nosuch(@price)", "AS", "x")
	r.expect(errr("Unknown property `shop`. Did you mean `@shop`?"), "FT.AGGREGATE", "sales", "*", "GROUPBY", "1", "shop")
	r.expect(errr("nosuch: no such index"), "FT.AGGREGATE", "nosuch", "*")
}

func TestSearchSuggestionsDictsSynonymsConfig(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.expect(integer(1), "FT.SUGADD", "ac", "Hello World", "2")
	r.expect(integer(2), "FT.SUGADD", "ac", "help", "3", "PAYLOAD", "p1")
	r.expect(integer(3), "FT.SUGADD", "ac", "helicopter", "1")
	r.expect(integer(3), "FT.SUGADD", "ac", "helicopter", "5", "INCR")
	r.expect(integer(4), "FT.SUGADD", "ac", "world", "9")
	r.expect(array(bulk("helicopter"), bulk("help"), bulk("Hello World")), "FT.SUGGET", "ac", "hel")
	r.expect(array(bulk("helicopter"), bulk("6")), "FT.SUGGET", "ac", "HEL", "MAX", "1", "WITHSCORES")
	r.expect(array(bulk("helicopter"), "$-1\r\n", bulk("help"), bulk("p1")), "FT.SUGGET", "ac", "hel", "MAX", "2", "WITHPAYLOADS")
	r.expect(array(bulk("helicopter"), bulk("help"), bulk("Hello World")), "FT.SUGGET", "ac", "hwl", "FUZZY")
	r.expect(array(), "FT.SUGGET", "ac", "zzz")
	r.expect(integer(4), "FT.SUGLEN", "ac")
	r.expect(integer(1), "FT.SUGDEL", "ac", "help")
	r.expect(integer(0), "FT.SUGDEL", "ac", "help")
	r.expect(integer(3), "FT.SUGLEN", "ac")
	r.expect(integer(0), "FT.SUGLEN", "nosuch")
	r.expect(errr("ERR invalid score"), "FT.SUGADD", "ac", "x", "notanumber")

	r.expect(integer(3), "FT.DICTADD", "d", "foo", "bar", "baz")
	r.expect(integer(1), "FT.DICTADD", "d", "foo", "qux")
	r.expect(integer(2), "FT.DICTDEL", "d", "foo", "nope", "bar")
	r.expect(array(bulk("baz"), bulk("qux")), "FT.DICTDUMP", "d")

	r.expect(status("OK"), "FT.CREATE", "idx", "PREFIX", "1", "doc:", "SCHEMA", "t", "TEXT", "NOSTEM")
	r.expect(integer(1), "HSET", "doc:1", "t", "a fast car")
	r.expect(integer(1), "HSET", "doc:2", "t", "a quick bike")
	r.expect(array(integer(1), bulk("doc:1")), "FT.SEARCH", "idx", "fast", "NOCONTENT")
	r.expect(status("OK"), "FT.SYNUPDATE", "idx", "g1", "fast", "Quick")
	r.expect(array(integer(2), bulk("doc:1"), bulk("doc:2")), "FT.SEARCH", "idx", "fast", "NOCONTENT")
	r.expect(array(bulk("fast"), array(bulk("g1")), bulk("quick"), array(bulk("g1"))), "FT.SYNDUMP", "idx")
	r.expect(errr("Unknown index name"), "FT.SYNDUMP", "nosuch")

	r.expect(array(array(bulk("MAXSEARCHRESULTS"), bulk("1000000"))), "FT.CONFIG", "GET", "MAXSEARCHRESULTS")
	r.expect(status("OK"), "FT.CONFIG", "SET", "MAXSEARCHRESULTS", "100")
	r.expect(errr("LIMIT exceeds maximum of 100"), "FT.SEARCH", "idx", "*", "LIMIT", "0", "101")
	r.expect(errr("Invalid option"), "FT.CONFIG", "SET", "NOSUCH", "1")
	r.expect(errr("Invalid value for DEFAULT_DIALECT"), "FT.CONFIG", "SET", "DEFAULT_DIALECT", "7")

	// All of it survives a restart.
	needCellar(t, s)
	s.restart()
	r = s.raw()
	r.expect(integer(3), "FT.SUGLEN", "ac")
	r.expect(array(bulk("baz"), bulk("qux")), "FT.DICTDUMP", "d")
	r.expect(array(integer(2), bulk("doc:1"), bulk("doc:2")), "FT.SEARCH", "idx", "quick", "NOCONTENT")
}

func TestSearchRediSearch1AndSpellcheck(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.expect(status("OK"), "FT.CREATE", "idx", "SCHEMA", "title", "TEXT", "NOSTEM", "n", "NUMERIC")
	r.expect(status("OK"), "FT.ADD", "idx", "doc1", "1.0", "FIELDS", "title", "hello world", "n", "3")
	r.expect(errr("Document already exists"), "FT.ADD", "idx", "doc1", "1.0", "FIELDS", "title", "x")
	r.expect(status("OK"), "FT.ADD", "idx", "doc1", "1.0", "REPLACE", "PARTIAL", "FIELDS", "n", "4")
	r.expect(array(bulk("title"), bulk("hello world"), bulk("n"), bulk("4")), "FT.GET", "idx", "doc1")
	r.expect(status("OK"), "FT.ADD", "idx", "doc2", "0.5", "REPLACE", "FIELDS", "title", "help wanted")
	r.expect(array(integer(1), bulk("doc1")), "FT.SEARCH", "idx", "@n:[4 4]", "NOCONTENT")
	r.expect(array(array(bulk("title"), bulk("help wanted")), "*-1\r\n"), "FT.MGET", "idx", "doc2", "nosuch")
	r.expect(errr("Score must be between 0 and 1"), "FT.ADD", "idx", "doc3", "2", "FIELDS", "title", "x")
	r.expect(errr("No field list found"), "FT.ADD", "idx", "doc3", "1")
	r.expect(errr("Unknown index name"), "FT.ADD", "nosuch", "doc3", "1", "FIELDS", "a", "b")
	// FT.SPELLCHECK: terms not in the index, with the index's terms one
	// edit away, scored by the share of documents holding them.
	r.expect(array(array(bulk("TERM"), bulk("helo"), array(array(bulk("0.5"), bulk("hello")), array(bulk("0.5"), bulk("help"))))),
		"FT.SPELLCHECK", "idx", "helo world")
	r.expect(integer(1), "FT.DICTADD", "extra", "helot")
	r.expect(array(array(bulk("TERM"), bulk("helo"), array(array(bulk("0.5"), bulk("hello")), array(bulk("0.5"), bulk("help")), array(bulk("0"), bulk("helot"))))),
		"FT.SPELLCHECK", "idx", "helo", "TERMS", "INCLUDE", "extra")
	r.expect(integer(1), "FT.DEL", "idx", "doc2")
	r.expect(integer(0), "FT.DEL", "idx", "doc2")
	r.expect(integer(0), "EXISTS", "doc2")
	r.expect("*-1\r\n", "FT.GET", "idx", "doc2")
}

// FT.CREATE FILTER: the expression decides, hash by hash, what is indexed.
func TestSearchCreateFilter(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.expect(integer(2), "HSET", "u:1", "name", "ann", "age", "10")
	r.expect(status("OK"), "FT.CREATE", "adults", "PREFIX", "1", "u:", "FILTER", "@age>16 && !startswith(@__key, 'u:9')", "SCHEMA", "name", "TEXT", "age", "NUMERIC")
	r.expect(integer(2), "HSET", "u:2", "name", "bob", "age", "20")
	r.expect(integer(2), "HSET", "u:9", "name", "cid", "age", "50")
	c := resp2(s)
	waitIndexed(t, c, "adults")
	r.expect(array(integer(1), bulk("u:2")), "FT.SEARCH", "adults", "*", "NOCONTENT")
	r.expect(integer(0), "HSET", "u:1", "age", "30")
	r.expect(integer(0), "HSET", "u:2", "age", "3")
	r.expect(array(integer(1), bulk("u:1")), "FT.SEARCH", "adults", "*", "NOCONTENT")
	if got := fmt.Sprint(ftInfoField(t, c, "adults", "index_definition")); !strings.Contains(got, "filter @age>16") {
		t.Fatalf("FT.INFO index_definition: %s", got)
	}
	r.expect(errr("Syntax error at offset 4 near "), "FT.CREATE", "bad", "FILTER", "@a >", "SCHEMA", "t", "TEXT")
}

func TestSearchHighlightSummarize(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.expect(status("OK"), "FT.CREATE", "idx", "SCHEMA", "title", "TEXT", "body", "TEXT", "NOSTEM", "n", "NUMERIC")
	r.expect(integer(3), "HSET", "d1", "title", "Quick brown foxes", "body", "one two three four fox five six seven eight nine ten", "n", "1")
	r.expect(array(integer(1), bulk("d1"), array(bulk("title"), bulk("Quick brown <b>foxes</b>"))),
		"FT.SEARCH", "idx", "fox", "RETURN", "1", "title", "HIGHLIGHT")
	r.expect(array(integer(1), bulk("d1"), array(bulk("body"), bulk("... [fox]... "))),
		"FT.SEARCH", "idx", "@body:fox", "RETURN", "1", "body", "HIGHLIGHT", "FIELDS", "1", "body", "TAGS", "[", "]", "SUMMARIZE", "LEN", "1")
	r.expect(array(integer(1), bulk("d1"), array(bulk("body"), bulk("one two three four fox... "))),
		"FT.SEARCH", "idx", "@body:fox", "RETURN", "1", "body", "SUMMARIZE", "FIELDS", "1", "body", "LEN", "5")
}

// TAG options and stemmed prefixes.
func TestSearchTagOptionsAndStemmedPrefix(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.expect(status("OK"), "FT.CREATE", "idx", "SCHEMA", "cs", "TAG", "CASESENSITIVE", "SEPARATOR", "|", "ci", "TAG", "body", "TEXT")
	r.expect(integer(3), "HSET", "a", "cs", "Red| Blue", "ci", "Red, Blue", "body", "running quickly")
	r.expect(integer(3), "HSET", "b", "cs", "red", "ci", "GREEN", "body", "runners ran")
	r.expect(array(integer(1), bulk("a")), "FT.SEARCH", "idx", "@cs:{Red}", "NOCONTENT")
	r.expect(array(integer(1), bulk("b")), "FT.SEARCH", "idx", "@cs:{red}", "NOCONTENT")
	r.expect(array(integer(1), bulk("a")), "FT.SEARCH", "idx", "@cs:{Blue}", "NOCONTENT")
	r.expect(array(integer(1), bulk("a")), "FT.SEARCH", "idx", "@ci:{RED}", "NOCONTENT")
	r.expect(array(integer(1), bulk("b")), "FT.SEARCH", "idx", "@ci:{green}", "NOCONTENT")
	r.expect(array(bulk("Blue"), bulk("Red"), bulk("red")), "FT.TAGVALS", "idx", "cs")
	r.expect(array(integer(2), bulk("a"), bulk("b")), "FT.SEARCH", "idx", "run*", "NOCONTENT")
	r.expect(array(integer(1), bulk("a")), "FT.SEARCH", "idx", "run", "NOCONTENT")
	r.expect(array(integer(1), bulk("a")), "FT.SEARCH", "idx", "runs", "NOCONTENT")
}

func TestSearchAggregateCursor(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.expect(status("OK"), "FT.CREATE", "idx", "PREFIX", "1", "k:", "SCHEMA", "n", "NUMERIC")
	for i := range 5 {
		r.expect(integer(1), "HSET", fmt.Sprintf("k:%d", i), "n", strconv.Itoa(i))
	}
	row := func(i int) string { return array(bulk("n"), bulk(strconv.Itoa(i))) }
	r.expect(array(array(integer(5), row(0), row(1)), integer(1)),
		"FT.AGGREGATE", "idx", "*", "LOAD", "1", "@n", "SORTBY", "2", "@n", "ASC", "WITHCURSOR", "COUNT", "2")
	r.expect(array(array(integer(5), row(2), row(3)), integer(1)), "FT.CURSOR", "READ", "idx", "1")
	r.expect(array(array(integer(5), row(4)), integer(0)), "FT.CURSOR", "READ", "idx", "1", "COUNT", "5")
	r.expect(errr("Cursor not found"), "FT.CURSOR", "READ", "idx", "1")
	r.expect(array(array(integer(5), row(0)), integer(2)),
		"FT.AGGREGATE", "idx", "*", "LOAD", "1", "@n", "SORTBY", "2", "@n", "ASC", "WITHCURSOR", "COUNT", "1")
	r.expect(status("OK"), "FT.CURSOR", "DEL", "idx", "2")
	r.expect(errr("Cursor does not exist"), "FT.CURSOR", "DEL", "idx", "2")
	// At most 128 cursors open.
	for i := range 128 {
		r.expect(array(array(integer(5), row(0)), integer(int64(3+i))),
			"FT.AGGREGATE", "idx", "*", "LOAD", "1", "@n", "SORTBY", "2", "@n", "ASC", "WITHCURSOR", "COUNT", "1")
	}
	r.expect(errr("Too many cursors (128)"), "FT.AGGREGATE", "idx", "*", "LOAD", "1", "@n", "WITHCURSOR", "COUNT", "1")
	// A cursor that a single page exhausts is not kept.
	r.expect(array(array(integer(5), row(0), row(1), row(2), row(3), row(4)), integer(0)),
		"FT.AGGREGATE", "idx", "*", "LOAD", "1", "@n", "SORTBY", "2", "@n", "ASC", "WITHCURSOR")
}

// A full disk. FTS5 keeps the terms a transaction adds in memory until
// the flush commits it, so with an index a full database may show at the
// flush rather than at the write: then the server refuses writes until it
// restarts, as after any failed commit. Either way nothing acknowledged is
// lost, and after the restart the index agrees with the hashes.
func TestSearchDiskFull(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	r := s.raw()
	r.expect(status("OK"), "FT.CREATE", "idx", "PREFIX", "1", "doc:", "SCHEMA", "title", "TEXT", "NOSTEM", "tags", "TAG", "n", "NUMERIC")
	words := ftVocab[:5]
	big := strings.Repeat("alpha beta gamma ", 400)
	for i := range 10 {
		r.expect(integer(3), "HSET", fmt.Sprintf("doc:%d", i), "title", words[i%5]+" "+big, "tags", "x", "n", strconv.Itoa(i))
	}
	r.expect(status("OK"), "CONFIG", "SET", "sqlite-max-page-count", "1")
	acked := map[string]string{} // key -> the title last acknowledged
	failed := false
	for i := 10; i < 2000 && !failed; i++ {
		k, title := fmt.Sprintf("doc:%d", i%40), words[i%5]+" "+big
		got := r.do("HSET", k, "title", title, "tags", "y", "n", strconv.Itoa(i%10))
		switch {
		case strings.HasPrefix(got, ":"):
			acked[k] = title
		case strings.Contains(got, "full") || strings.Contains(got, "refusing writes"):
			failed = true
		default:
			t.Fatalf("HSET at the cap: %q", got)
		}
	}
	if !failed {
		t.Fatal("the writes fitted under a cap of the current size")
	}
	// The cap is a run-time setting: the restart lifts it.
	s.restart()
	c := resp2(s)
	if l := fmt.Sprint(c.Do(ctx, "FT._LIST").Val()); l != "[idx]" {
		t.Fatalf("FT._LIST after the restart: %s\n%s", l, s.logBuf.String())
	}
	for k, title := range acked {
		if got := c.HGet(ctx, k, "title").Val(); got != title {
			t.Fatalf("acknowledged HSET %s lost: title %.20q", k, got)
		}
	}
	waitIndexed(t, c, "idx")
	checkIndex(t, c, words)
	r = s.raw()
	r.expect(integer(0), "HSET", "doc:1", "title", "delta", "tags", "z", "n", "7")
	checkIndex(t, c, words)
}

// A one-term query on a term matching many documents is answered from
// the term's list (actor/searchtop.go): its pages must be exactly the
// full scoring's (the same term as a one-word phrase, which never uses a
// list), before and after HSET, HDEL, DEL and expiry of listed documents
// and new ones, after a restart (the lists are stored), and after
// FT.DROPINDEX and an FT.CREATE of the same name with other weights (the
// old lists went with the old index). actor's TestSearchTopLists checks
// the same with small lists over many random writes.
func TestSearchTermListsRestart(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := resp2(s)
	create := func(weight string) {
		t.Helper()
		if err := c.Do(ctx, "FT.CREATE", "idx", "ON", "HASH", "PREFIX", "1", "d:", "SCHEMA",
			"title", "TEXT", "WEIGHT", weight, "body", "TEXT").Err(); err != nil {
			t.Fatal(err)
		}
	}
	create("2")
	r := rand.New(rand.NewPCG(3, 4))
	vocab := []string{"zax", "vex", "kog", "mub", "tiv", "ralp", "quon"}
	words := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[int(float64(len(vocab))*r.Float64()*r.Float64())]
		}
		return strings.Join(ws, " ")
	}
	pipe := c.Pipeline()
	for i := range 3000 {
		pipe.HSet(ctx, fmt.Sprintf("d:%d", r.IntN(100000)), "title", words(1+r.IntN(4)), "body", words(r.IntN(30)))
		if i%500 == 499 {
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(when string) {
		t.Helper()
		for _, w := range vocab[:4] {
			for _, pg := range [][2]int{{0, 10}, {0, 1}, {5, 5}, {63, 1}, {0, 64}, {60, 10}} {
				// One transaction: no housekeeping between the two.
				tx := c.TxPipeline()
				got := tx.Do(ctx, "FT.SEARCH", "idx", w, "WITHSCORES", "NOCONTENT", "LIMIT", pg[0], pg[1])
				want := tx.Do(ctx, "FT.SEARCH", "idx", `"`+w+`"`, "WITHSCORES", "NOCONTENT", "LIMIT", pg[0], pg[1])
				if _, err := tx.Exec(ctx); err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got.Val()) != fmt.Sprint(want.Val()) {
					t.Fatalf("%s: %s LIMIT %v: got %v, want %v", when, w, pg, got.Val(), want.Val())
				}
				if n := got.Val().([]any)[0].(int64); pg == [2]int{0, 10} && n < 1000 {
					t.Fatalf("%s: %s matches %d documents: too few for a list", when, w, n)
				}
			}
		}
	}
	// (Scores may differ between runs of check: the FTS5 rows of the
	// documents HSET replaced are deleted by the housekeeping, and
	// bm25() counts the rows FTS5 has.)
	check("before the restart")
	// Writes of every kind after the lists were made: documents replaced
	// (new ids above the lists'), fields deleted, keys deleted and
	// expired; the best documents among them, since the lists hold those.
	var best []string
	for _, w := range vocab[:4] {
		res, err := c.Do(ctx, "FT.SEARCH", "idx", `"`+w+`"`, "NOCONTENT", "LIMIT", 0, 5).Slice()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range res[1:] {
			best = append(best, k.(string))
		}
	}
	for i, k := range best {
		switch i % 4 {
		case 0:
			c.HSet(ctx, k, "title", words(1+r.IntN(4)))
		case 1:
			c.HDel(ctx, k, "title")
		case 2:
			c.Del(ctx, k)
		case 3:
			c.PExpire(ctx, k, time.Millisecond)
			waitFor(t, 5*time.Second, "the key to expire", func() bool { return c.Exists(ctx, k).Val() == 0 })
		}
	}
	for range 300 {
		c.HSet(ctx, fmt.Sprintf("d:%d", r.IntN(100000)), "title", words(1+r.IntN(4)), "body", words(r.IntN(30)))
	}
	check("after writes")
	s.restart()
	c = resp2(s)
	check("after the restart")
	if err := c.Do(ctx, "FT.DROPINDEX", "idx").Err(); err != nil {
		t.Fatal(err)
	}
	create("5")
	waitIndexed(t, c, "idx")
	check("after FT.DROPINDEX and FT.CREATE")
}
