// Command search measures Cellar's FT.* search (issue 19) on a generated
// corpus: hashes built from Debian's wamerican word list (titles, bodies,
// a price and tags; a generator, not shipped data), written with HSET into
// a prefix no index covers and into one an index covers (the cost of
// indexing), then FT.SEARCH latency, p50 and p99, for a term, a phrase, a
// prefix, a numeric range and a tag filter, and the server's RSS and
// database size at the end.
//
//	go build -o /tmp/cellar ./cmd/cellar
//	go run ./bench/search -bin /tmp/cellar -docs 100000
//
// It starts the binary on a free port in a temporary directory and stops
// it at the end. The report is Markdown on stdout.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

var ctx = context.Background()

func main() {
	bin := flag.String("bin", "", "the cellar binary to run (required)")
	docs := flag.Int("docs", 100000, "documents in the corpus")
	queries := flag.Int("queries", 300, "queries of each kind")
	words := flag.String("words", "/usr/share/dict/american-english", "the word list (Debian's wamerican)")
	conns := flag.Int("conns", 4, "writer connections")
	keep := flag.String("dir", "", "a work directory to keep: the first run writes the corpus there, later runs with the same -docs only query it")
	only := flag.String("kinds", "", "run only these query kinds (comma-separated names, as in the report)")
	indexedOnly := flag.Bool("indexed-only", false, "write only the indexed copy (no unindexed copy, no back-fill)")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "search: -bin is required")
		os.Exit(2)
	}
	vocab, err := loadWords(*words)
	if err != nil {
		fmt.Fprintln(os.Stderr, "search:", err)
		os.Exit(1)
	}
	dir := *keep
	if dir == "" {
		dir, err = os.MkdirTemp("", "cellar-search-bench")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		panic(err)
	}
	// The corpus is written once per directory; a marker names its size.
	marker := filepath.Join(dir, "corpus-"+strconv.Itoa(*docs))
	_, err = os.Stat(marker)
	reuse := err == nil
	port := freePort()
	cmd := exec.Command(*bin, "--port", strconv.Itoa(port), "--dir", dir, "--loglevel", "warn")
	cmd.Stderr = os.Stderr
	// The server dies with the bench, however the bench ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// No read timeout: a slow query is a result to report, not an error.
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), Protocol: 2, PoolSize: *conns + 2, ReadTimeout: -1})
	deadline := time.Now().Add(20 * time.Second)
	for c.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			panic("cellar did not answer")
		}
		time.Sleep(20 * time.Millisecond)
	}

	g := &corpus{vocab: vocab, r: rand.New(rand.NewPCG(19, 1))}
	g.zipf = rand.NewZipf(g.r, 1.1, 1, uint64(len(vocab)-1))
	all := make([]doc, *docs)
	for i := range all {
		all[i] = g.doc()
	}
	fmt.Printf("# FT.* on %d generated documents (%d-word list)\n\n", *docs, len(vocab))
	fmt.Printf("| step | result |\n|---|---|\n")

	backfill := !reuse && !*indexedOnly
	switch {
	case reuse:
		fmt.Printf("| corpus | reused from %s |\n", dir)
	case *indexedOnly:
		must(c.Do(ctx, "FT.CREATE", "idx", "ON", "HASH", "PREFIX", "1", "doc:", "SCHEMA",
			"title", "TEXT", "WEIGHT", "2", "body", "TEXT", "price", "NUMERIC", "SORTABLE", "tags", "TAG").Err())
		indexed := write(c, all, "doc:", *conns)
		fmt.Printf("| HSET, prefix indexed | %.0f docs/s |\n", indexed)
	default:
		plain := write(c, all, "plain:", *conns)
		fmt.Printf("| HSET, prefix not indexed | %.0f docs/s |\n", plain)
		must(c.Do(ctx, "FT.CREATE", "idx", "ON", "HASH", "PREFIX", "1", "doc:", "SCHEMA",
			"title", "TEXT", "WEIGHT", "2", "body", "TEXT", "price", "NUMERIC", "SORTABLE", "tags", "TAG").Err())
		indexed := write(c, all, "doc:", *conns)
		fmt.Printf("| HSET, prefix indexed | %.0f docs/s (%.2fx) |\n", indexed, indexed/plain)
	}
	if !reuse {
		must(os.WriteFile(marker, nil, 0o644))
	}
	kinds := []struct {
		name string
		make func() string
	}{
		{"term", func() string { return g.commonWord() }},
		{"two terms (AND)", func() string { return g.commonWord() + " " + g.commonWord() }},
		{"phrase", func() string {
			d := all[g.r.IntN(len(all))]
			ws := strings.Fields(d.body)
			i := g.r.IntN(len(ws) - 1)
			return `"` + ws[i] + " " + ws[i+1] + `"`
		}},
		{"prefix", func() string { return g.commonWord()[:3] + "*" }},
		{"numeric range", func() string {
			lo := g.r.IntN(990)
			return fmt.Sprintf("@price:[%d %d]", lo, lo+10)
		}},
		{"tag", func() string { return "@tags:{" + tagNames[g.r.IntN(len(tagNames))] + "}" }},
		{"term + tag + range", func() string {
			lo := g.r.IntN(500)
			return fmt.Sprintf("%s @tags:{%s} @price:[%d %d]", g.commonWord(), tagNames[g.r.IntN(len(tagNames))], lo, lo+500)
		}},
	}
	skip := make([]bool, len(kinds))
	if *only != "" {
		// Every kind's generator still runs, so that the queries drawn
		// are the same whichever kinds are measured.
		for i := range kinds {
			keep := false
			for _, w := range strings.Split(*only, ",") {
				keep = keep || kinds[i].name == w
			}
			skip[i] = !keep
		}
	}
	fmt.Printf("\n| FT.SEARCH ... LIMIT 0 10 | p50 | p99 | mean hits |\n|---|---|---|---|\n")
	for i, k := range kinds { // warm the page cache
		for range 20 {
			if skip[i] {
				k.make()
				continue
			}
			must(c.Do(ctx, "FT.SEARCH", "idx", k.make(), "LIMIT", "0", "10").Err())
		}
	}
	for i, k := range kinds {
		var lat []time.Duration
		var hits int64
		for range *queries {
			q := k.make()
			if skip[i] {
				continue
			}
			t := time.Now()
			res, err := c.Do(ctx, "FT.SEARCH", "idx", q, "LIMIT", "0", "10").Slice()
			lat = append(lat, time.Since(t))
			if err != nil {
				panic(fmt.Sprintf("%s: %v", q, err))
			}
			hits += res[0].(int64)
		}
		if skip[i] {
			continue
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		fmt.Printf("| %s | %s | %s | %d |\n", k.name, ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]), hits/int64(*queries))
	}
	if backfill {
		backfillRate(c, *docs)
	}

	st, _ := os.Stat(filepath.Join(dir, "cellar.db"))
	wal, _ := os.Stat(filepath.Join(dir, "cellar.db-wal"))
	size := int64(0)
	if st != nil {
		size += st.Size()
	}
	if wal != nil {
		size += wal.Size()
	}
	fmt.Printf("\n| at the end | |\n|---|---|\n| server RSS | %d MB |\n| database + WAL | %d MB |\n", rss(cmd.Process.Pid)>>20, size>>20)
}

// backfillRate indexes the unindexed copy with FT.CREATE and prints the
// back-fill's documents per second.
func backfillRate(c *redis.Client, docs int) {
	fmt.Println()
	fmt.Printf("| step | result |\n|---|---|\n")
	t0 := time.Now()
	must(c.Do(ctx, "FT.CREATE", "idx2", "ON", "HASH", "PREFIX", "1", "plain:", "SCHEMA",
		"title", "TEXT", "body", "TEXT", "price", "NUMERIC", "tags", "TAG").Err())
	for {
		info := c.Do(ctx, "FT.INFO", "idx2").Val().([]any)
		done := false
		for i := 0; i+1 < len(info); i += 2 {
			if info[i] == "indexing" && info[i+1] == int64(0) {
				done = true
			}
		}
		if done {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("| FT.CREATE back-fill of the same docs | %.0f docs/s |\n", float64(docs)/time.Since(t0).Seconds())
	must(c.Do(ctx, "FT.DROPINDEX", "idx2").Err())
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

type doc struct {
	title, body string
	price       int
	tags        string
}

var tagNames = func() []string {
	var t []string
	for i := range 50 {
		t = append(t, fmt.Sprintf("tag%d", i))
	}
	return t
}()

type corpus struct {
	vocab []string
	r     *rand.Rand
	zipf  *rand.Zipf
}

// word draws a word with Zipf's law (s = 1.1), as in text: a few words
// very common, most rare.
func (g *corpus) word() string { return g.vocab[g.zipf.Uint64()] }

// commonWord draws a query term among ranks 50 to 2000: common words that
// are not, in effect, stop words.
func (g *corpus) commonWord() string {
	for {
		w := g.vocab[50+g.r.IntN(1950)]
		if len(w) >= 4 {
			return w
		}
	}
}

func (g *corpus) words(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = g.word()
	}
	return strings.Join(ws, " ")
}

func (g *corpus) doc() doc {
	d := doc{title: g.words(3 + g.r.IntN(6)), body: g.words(20 + g.r.IntN(40)), price: g.r.IntN(1000)}
	var tags []string
	for range 1 + g.r.IntN(3) {
		tags = append(tags, tagNames[g.r.IntN(len(tagNames))])
	}
	d.tags = strings.Join(tags, ",")
	return d
}

// loadWords reads the word list, keeping lower-case ASCII words.
func loadWords(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w (Debian package wamerican: scripts/deps.sh installs it)", err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		w := s.Text()
		ok := len(w) >= 2
		for i := 0; i < len(w); i++ {
			if w[i] < 'a' || w[i] > 'z' {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, w)
		}
	}
	// A fixed shuffle, so that "common" words are spread over the alphabet.
	r := rand.New(rand.NewPCG(7, 7))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, s.Err()
}

// write HSETs every doc under prefix over conns connections, pipelined,
// and returns documents per second.
func write(c *redis.Client, all []doc, prefix string, conns int) float64 {
	t0 := time.Now()
	var wg sync.WaitGroup
	per := (len(all) + conns - 1) / conns
	for w := range conns {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			lo, hi := w*per, min((w+1)*per, len(all))
			for i := lo; i < hi; i += 100 {
				pipe := c.Pipeline()
				for j := i; j < min(i+100, hi); j++ {
					d := &all[j]
					pipe.HSet(ctx, prefix+strconv.Itoa(j), "title", d.title, "body", d.body, "price", d.price, "tags", d.tags)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					panic(err)
				}
			}
		}(w)
	}
	wg.Wait()
	return float64(len(all)) / time.Since(t0).Seconds()
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// rss is a process's resident set in bytes (Linux).
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
