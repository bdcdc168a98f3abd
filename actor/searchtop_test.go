package actor

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar/internal/wait"
	"github.com/cellar-db/cellar/storage"
)

// ftReply runs one command on conn 1 and returns its reply bytes.
func (h *harness) ftReply(args ...string) string {
	h.t.Helper()
	h.submit(1, args)
	c := h.next()
	return string(c.Reply)
}

// A term query answered from the term's list gives exactly the page a
// full scoring gives: same keys, same order (score, then key), same
// scores, same total, on a corpus with skewed term frequencies (many
// ties), pages past the first, and HSET, HDEL, DEL and EXPIRE between the
// queries. The full scoring is the same term as a one-word phrase, which
// FTS5 matches and scores the same way but which never uses a list; the
// totals are also checked against the hashes themselves.
func TestSearchTopLists(t *testing.T) {
	saved := []any{topListLen, topMinHits, topMaxNew, topBuildMax, topScanStep}
	topListLen, topMinHits, topMaxNew, topBuildMax, topScanStep = 16, 40, 25, 100000, 7
	t.Cleanup(func() {
		topListLen, topMinHits, topMaxNew = saved[0].(int), saved[1].(int64), saved[2].(int)
		topBuildMax, topScanStep = saved[3].(int64), saved[4].(int)
	})
	h := newHarness(t, Config{})
	h.open(1)
	if got := h.ftReply("FT.CREATE", "idx", "ON", "HASH", "PREFIX", "1", "d:", "SCHEMA",
		"title", "TEXT", "WEIGHT", "2", "body", "TEXT", "raw", "TEXT", "NOSTEM", "WEIGHT", "0.3"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	// Words the porter stemmer leaves as they are, Zipf-like frequencies.
	var vocab []string
	for _, c := range []string{"b", "d", "f", "g", "k", "m", "p", "t", "v", "z"} {
		for _, v := range []string{"a", "o", "u"} {
			vocab = append(vocab, c+v+"x")
		}
	}
	r := rand.New(rand.NewPCG(19, 99))
	word := func() string {
		i := int(float64(len(vocab)) * r.Float64() * r.Float64() * r.Float64())
		return vocab[i]
	}
	words := func(lo, hi int) string {
		n := lo + r.IntN(hi-lo+1)
		ws := make([]string, n)
		for i := range ws {
			ws[i] = word()
		}
		return strings.Join(ws, " ")
	}
	type doc struct{ fields map[string]string }
	model := map[string]*doc{}
	key := func() string { return "d:" + strconv.Itoa(r.IntN(700)) }
	hset := func(k string) []string {
		d := &doc{fields: map[string]string{}}
		args := []string{"HSET", k}
		for _, f := range []struct {
			name   string
			lo, hi int
		}{{"title", 1, 3}, {"body", 0, 12}, {"raw", 0, 3}} {
			if f.hi > 0 && r.IntN(5) > 0 {
				v := words(f.lo, f.hi)
				d.fields[f.name] = v
				args = append(args, f.name, v)
			}
		}
		args = append(args, "other", "x") // HDEL never empties the hash
		if old := model[k]; old != nil {
			for f, v := range old.fields {
				if _, ok := d.fields[f]; !ok {
					d.fields[f] = v // HSET keeps the fields it does not set
				}
			}
		}
		model[k] = d
		return args
	}
	var batch [][]string
	for i := 0; i < 700; i++ {
		batch = append(batch, hset("d:"+strconv.Itoa(i)))
	}
	h.submit(1, batch...)
	h.next() // one completion for the batch
	hits := func(w string, fields ...string) int {
		n := 0
		for _, d := range model {
			for _, f := range fields {
				if strings.Contains(" "+d.fields[f]+" ", " "+w+" ") {
					n++
					break
				}
			}
		}
		return n
	}
	// pair runs a query and its full scoring in one round (the
	// housekeeping that deletes the FTS5 rows of deleted documents, which
	// changes every score, runs between rounds) and returns both replies.
	pair := func(a, b []string) (string, string) {
		release := h.hold()
		h.submit(1, a)
		h.submit(1, b)
		release()
		return string(h.next().Reply), string(h.next().Reply)
	}
	pages := [][2]int{{0, 10}, {0, 1}, {3, 5}, {15, 1}, {0, 16}, {10, 10}, {2, 0}, {100, 10}}
	checked := 0
	check := func(w string) {
		t.Helper()
		for _, form := range []struct {
			term, phrase string
			opts         []string
			fields       []string
		}{
			{w, `"` + w + `"`, []string{"INFIELDS", "2", "title", "body"}, []string{"title", "body"}}, // the stemmed table
			{"@raw:" + w, `@raw:"` + w + `"`, nil, []string{"raw"}},                                   // the NOSTEM one
			{w, `"` + w + `"`, nil, []string{"title", "body", "raw"}},                                 // both: never a list
		} {
			for _, pg := range pages {
				off, num := strconv.Itoa(pg[0]), strconv.Itoa(pg[1])
				tail := append(append([]string{}, form.opts...), "WITHSCORES", "NOCONTENT", "LIMIT", off, num)
				got, want := pair(append([]string{"FT.SEARCH", "idx", form.term}, tail...),
					append([]string{"FT.SEARCH", "idx", form.phrase}, tail...))
				if got != want {
					t.Fatalf("%s %v: list gives %q, full scoring %q", form.term, tail, got, want)
				}
				n := hits(w, form.fields...)
				if total := fmt.Sprintf("*%d\r\n:%d\r\n", 1+2*min(pg[1], max(0, n-pg[0])), n); !strings.HasPrefix(got, total) {
					t.Fatalf("%s %v: %q, the hashes say %q", form.term, tail, got, total)
				}
				checked++
			}
		}
	}
	// 60 steps with TEST_LONG=1 (make test-long); 15 in make test, which
	// still fails at once when a list's page leaves out the documents
	// indexed since the list was made.
	steps := 15
	if os.Getenv("TEST_LONG") != "" {
		steps = 60
	}
	for step := 0; step < steps; step++ {
		// Writes between the queries, some in the query's own round.
		var ws [][]string
		for range r.IntN(12) {
			k := key()
			switch r.IntN(6) {
			case 0, 1, 2:
				ws = append(ws, hset(k))
			case 3:
				if d := model[k]; d != nil {
					f := []string{"title", "body", "raw"}[r.IntN(3)]
					delete(d.fields, f)
					ws = append(ws, []string{"HDEL", k, f})
				}
			case 4:
				delete(model, k)
				ws = append(ws, []string{"DEL", k})
			case 5:
				delete(model, k)
				ws = append(ws, []string{"EXPIRE", k, "0"}) // gone at once, as an expiry
			}
		}
		if len(ws) > 0 {
			h.submit(1, ws...)
			if c := h.next(); bytes.Contains(c.Reply, []byte("\r\n-")) || bytes.HasPrefix(c.Reply, []byte("-")) {
				t.Fatalf("%v: %s", ws, c.Reply)
			}
		}
		if r.IntN(3) > 0 {
			// Until the housekeeping deletes the FTS5 rows of the
			// documents that went, queries score in full.
			wait.For(t, 10*time.Second, "ftN_gc emptied", func() bool {
				gc := true
				h.a.Call(func() { gc = h.a.search().indexes["idx"].gc })
				return !gc
			})
		}
		for range 3 {
			check(vocab[r.IntN(len(vocab))])
		}
		// Writes and a query in one round: the query sees FTS5 rows that
		// no commit wrote yet.
		k := key()
		w := vocab[r.IntN(6)]
		release := h.hold()
		h.submit(1, hset(k))
		h.submit(1, []string{"FT.SEARCH", "idx", w, "INFIELDS", "2", "title", "body", "WITHSCORES", "NOCONTENT", "LIMIT", "0", "5"})
		h.submit(1, []string{"FT.SEARCH", "idx", `"` + w + `"`, "INFIELDS", "2", "title", "body", "WITHSCORES", "NOCONTENT", "LIMIT", "0", "5"})
		release()
		h.next()
		if got, want := string(h.next().Reply), string(h.next().Reply); got != want {
			t.Fatalf("%s in the writes' round: list gives %q, full scoring %q", w, got, want)
		}
	}
	var used, built int64
	h.a.Call(func() { used, built = h.a.search().topUsed, h.a.search().topBuilt })
	t.Logf("%d pages checked, %d answered from lists, %d lists made", checked, used, built)
	if used < int64(checked)/20 || built == 0 {
		t.Fatalf("lists answered %d of %d pages (%d made): the test does not test them", used, checked, built)
	}
	// FT.DROPINDEX takes the lists with it.
	if got := h.ftReply("FT.DROPINDEX", "idx"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	var left int64
	h.a.Call(func() {
		err := h.a.st.SearchQuery("SELECT count(*) FROM search_tops", false, nil, func(r storage.SearchRow) bool {
			left = r.Int(0)
			return false
		})
		if err != nil {
			t.Error(err)
		}
	})
	if left != 0 {
		t.Fatalf("%d lists left after FT.DROPINDEX", left)
	}
}

// The remembered tokenizations are bounded (maxTermMemo), a word longer
// than maxTermLen is not tokenized (its query scores in full), and a
// word the tokenizer splits has no single term.
func TestSearchTermMemoLimits(t *testing.T) {
	h := newHarness(t, Config{})
	h.a.Call(func() {
		for i := 0; i < maxTermMemo+10; i++ {
			if _, err := h.a.searchTerm("s", "word"+strconv.Itoa(i)); err != nil {
				t.Error(err)
				return
			}
			if len(h.a.search().terms) > maxTermMemo {
				t.Errorf("%d remembered tokenizations, limit %d", len(h.a.search().terms), maxTermMemo)
				return
			}
		}
		for word, want := range map[string]string{
			"running":                         "run",
			"Running":                         "run",
			"two-words":                       "",
			strings.Repeat("a", maxTermLen):   strings.Repeat("a", maxTermLen),
			strings.Repeat("a", maxTermLen+1): "",
		} {
			kind := "s"
			if len(word) >= maxTermLen {
				kind = "r" // unicode61 keeps it as it is
			}
			got, err := h.a.searchTerm(kind, word)
			if err != nil || got != want {
				t.Errorf("%.20s...: term %q, %v; want %q", word, got, err, want)
			}
		}
	})
}
