package actor

import (
	"bytes"
	"encoding/binary"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/cellar-db/cellar/storage"
)

// Term lists: a term query's page without scoring every match.
//
// FTS5's bm25() of a one-term query is idf * f*(k1+1) / (f + k1*(1-b +
// b*D/avgdl)): idf depends only on how many documents match and how many
// there are, f (the term's weighted frequency in the document) and D (the
// document's length) only on the document, which never changes under its
// id (an update makes a new document id, indexKey). For a term matching
// at least topMinHits documents, search_tops (migration 13) keeps a list
// made by scoring every match once: the topListLen best documents with
// their f and D, the highest document id then (wm), the counts bm25()
// used then, and rest, the best score of the matches left out. A query
// then scores, instead of every match:
//
//   - the listed documents that still exist, with bm25()'s own formula
//     and today's counts (bit for bit what bm25() gives: the list is only
//     stored if the formula reproduces every listed score when it is made);
//   - the matches indexed since (document id above wm), with bm25();
//
// and counts the matches (FTS5 without scoring). A document left out of
// the list scored at most rest then; since, its idf can only have changed
// by the ratio of the idfs, and the part that depends on avgdl by at most
// avgdl's ratio when avgdl grew (the length term shrinks by that ratio at
// most), so today it scores at most rest * idf/idf0 * max(1, avgdl/avgdl0)
// (plus 1e-9 for rounding). When the page's last document scores above
// that bound, no document left out can be on the page, and the page is
// exactly the one a full scoring gives (score, then key). Otherwise, if
// the index changed since the list was made, the list is made again from
// a full scoring; if the page still cannot be proved (ties across the
// list's end, or a page deeper than the list), the query runs the full
// scoring. Writes do nothing for the lists: ids only grow, a deleted
// document drops out when its key is looked up, and the documents left
// out only lose members.
//
// Lists are made by queries (a term with no list and enough matches) and,
// in the background while no client sends commands and the index is not
// written, one term per housekeeping step, for the terms the index's
// fts5vocab table counts between topMinHits and topBuildMax matches. They
// go with the index's tables (DropSearchTables). While document ids wait
// in ftN_gc (deleted documents whose FTS5 rows are still there) queries
// score in full and no list is made.

// The limits of term lists (variables for the tests).
var (
	topListLen  = 64             // documents a list keeps: pages up to this deep
	topMinHits  = int64(1000)    // a term with fewer matches is scored in full
	topMaxNew   = 512            // matches indexed since its list, past which a list is made again
	topBuildMax = int64(200_000) // background: terms with more matches are left to queries
	topScanStep = 256            // background: fts5vocab rows read per step
	maxTermMemo = 4096           // remembered word -> indexed term tokenizations
	maxTermLen  = 100            // longer query words are scored in full
)

// bm25 constants as FTS5 has them: variables, so that k1+1 is computed
// in float64 as the C code does, not exactly as a constant expression.
var bm25K1, bm25B = 1.2, 0.75

// topDoc is one listed document.
type topDoc struct {
	docid int64
	f     float64 // weighted frequency of the term
	dl    int64   // length in tokens, all columns
}

// topList is one stored list.
type topList struct {
	wm, rows, toks, hits int64
	rest                 float64
	hasRest              bool
	docs                 []topDoc
}

// topScore is bm25()'s score of a one-term query (negated back, as
// FT.SEARCH shows it), computed in the same order as FTS5's C code.
func topScore(idf, avgdl, f float64, dl int64) float64 {
	k1, b := bm25K1, bm25B
	d := float64(dl)
	return idf * float64(float64(f*float64(k1+1))/float64(f+float64(k1*float64(float64(1-b)+float64(b*d)/avgdl))))
}

// topIDF is bm25()'s idf for a phrase matching hits of rows documents.
func (a *Actor) topIDF(rows, hits int64) float64 {
	idf := a.st.SearchLog((float64(rows-hits) + 0.5) / (float64(hits) + 0.5))
	if idf <= 0 {
		idf = 1e-6
	}
	return idf
}

// topWeights are the weights FT.SEARCH gives bm25() for an FTS5 table's
// columns, as numbers and as the SQL arguments' text.
func topWeights(idx *ftIndex, cols []int) ([]float64, string) {
	ws := make([]float64, len(cols))
	txt := make([]string, len(cols))
	for i, c := range cols {
		ws[i] = idx.spec.Fields[c].Weight
		txt[i] = strconv.FormatFloat(ws[i], 'g', -1, 64)
	}
	return ws, strings.Join(txt, ", ")
}

// searchTerm is the one term FTS5's tokenizer for table kind makes of
// word ("" when it makes none or several), found with a scratch FTS5
// table of the connection's own and remembered.
func (a *Actor) searchTerm(kind, word string) (string, error) {
	s := a.search()
	memo := kind + "\x00" + word
	if t, ok := s.terms[memo]; ok {
		return t, nil
	}
	if len(word) > maxTermLen {
		return "", nil // scored in full
	}
	// Made each time: a rollback undoes their creation too.
	tbl := "temp.cellar_tok_" + kind
	err := a.st.SearchScratch("CREATE VIRTUAL TABLE IF NOT EXISTS " + tbl + " USING fts5(x, content = '', tokenize = '" +
		storage.SearchTokenizer(kind) + "')")
	if err == nil {
		err = a.st.SearchScratch("CREATE VIRTUAL TABLE IF NOT EXISTS " + tbl + "_v USING fts5vocab(temp, cellar_tok_" + kind + ", instance)")
	}
	if err != nil {
		return "", err
	}
	if err := a.st.SearchScratch("INSERT INTO "+tbl+" (rowid, x) VALUES (1, ?)", word); err != nil {
		return "", err
	}
	var terms []string
	err = a.st.SearchQuery("SELECT term FROM "+tbl+"_v", true, nil, func(r storage.SearchRow) bool {
		terms = append(terms, r.Text(0))
		return len(terms) < 2
	})
	if err2 := a.st.SearchScratch("INSERT INTO " + tbl + " (" + "cellar_tok_" + kind + ") VALUES ('delete-all')"); err == nil {
		err = err2
	}
	if err != nil {
		return "", err
	}
	t := ""
	if len(terms) == 1 {
		t = terms[0]
	}
	if len(s.terms) >= maxTermMemo || s.terms == nil {
		s.terms = map[string]string{}
	}
	s.terms[memo] = t
	return t, nil
}

// loadTop reads the list of term in idx's table kind; nil when there is
// none.
func (a *Actor) loadTop(idx *ftIndex, kind, term string) (*topList, error) {
	var l *topList
	err := a.st.SearchQuery("SELECT wm, nrows, ntoks, nhits, rest, docs FROM search_tops WHERE idx = ? AND kind = ? AND term = ?",
		true, []any{idx.id, kind, term}, func(r storage.SearchRow) bool {
			l = &topList{wm: r.Int(0), rows: r.Int(1), toks: r.Int(2), hits: r.Int(3), hasRest: !r.Null(4), rest: r.Float(4)}
			b := r.Bytes(5, nil)
			for ; len(b) >= 24; b = b[24:] {
				l.docs = append(l.docs, topDoc{docid: int64(binary.LittleEndian.Uint64(b)),
					f: math.Float64frombits(binary.LittleEndian.Uint64(b[8:])), dl: int64(binary.LittleEndian.Uint64(b[16:]))})
			}
			return false
		})
	return l, err
}

// saveTop stores a list.
func (a *Actor) saveTop(idx *ftIndex, kind, term string, l *topList) error {
	b := make([]byte, 0, 24*len(l.docs))
	for _, d := range l.docs {
		b = binary.LittleEndian.AppendUint64(b, uint64(d.docid))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(d.f))
		b = binary.LittleEndian.AppendUint64(b, uint64(d.dl))
	}
	var rest any
	if l.hasRest {
		rest = l.rest
	}
	return a.st.SearchExec("INSERT OR REPLACE INTO search_tops (idx, kind, term, wm, nrows, ntoks, nhits, rest, docs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		idx.id, kind, term, l.wm, l.rows, l.toks, l.hits, rest, b)
}

// scored is a document and its score.
type scored struct {
	docid int64
	sc    float64
}

// idList is ids as a JSON array, for json_each.
func idList(ids []int64) string {
	b := make([]byte, 0, 8*len(ids)+2)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}

// buildTop makes and stores the list of term in idx's table kind (whose
// TEXT fields are cols) by scoring every match of expr, a MATCH
// expression that FTS5 tokenizes into term alone. It returns nil, without
// storing anything, when the list cannot reproduce bm25()'s scores.
func (a *Actor) buildTop(idx *ftIndex, kind string, cols []int, term, expr string) (*topList, error) {
	tbl := idx.table(kind)
	rows, toks, err := a.st.SearchTotals(tbl)
	if err != nil {
		return nil, err
	}
	ws, wtxt := topWeights(idx, cols)
	l := &topList{rows: rows, toks: toks}
	if l.wm, err = a.topMaxDoc(idx); err != nil {
		return nil, err
	}
	err = a.st.SearchQuery("SELECT count(*) FROM "+tbl+" WHERE "+tbl+" MATCH ?", true, []any{expr}, func(r storage.SearchRow) bool {
		l.hits = r.Int(0)
		return false
	})
	if err != nil {
		return nil, err
	}
	// The best topListLen+1 (SQLite's sorter keeps only those): the
	// last is the best of the rest.
	var best []scored
	err = a.st.SearchQuery("SELECT rowid, -bm25("+tbl+", "+wtxt+") AS sc FROM "+tbl+" WHERE "+tbl+" MATCH ? ORDER BY sc DESC LIMIT ?", false,
		[]any{expr, topListLen + 1}, func(r storage.SearchRow) bool {
			best = append(best, scored{docid: r.Int(0), sc: r.Float(1)})
			return true
		})
	if err != nil {
		return nil, err
	}
	if len(best) > topListLen {
		l.hasRest, l.rest = true, best[topListLen].sc
		best = best[:topListLen]
	}
	ids := make([]int64, len(best))
	for i, d := range best {
		ids[i] = d.docid
	}
	list := idList(ids)
	// D from FTS5's own document sizes; f from the listed documents'
	// text tokenized again into a scratch FTS5 table of the same columns
	// and tokenizer, whose instances of term are those bm25() counts.
	dl := map[int64]int64{}
	err = a.st.SearchQuery("SELECT id, sz FROM "+tbl+"_docsize WHERE id IN (SELECT value FROM json_each(?))", false, []any{list},
		func(r storage.SearchRow) bool {
			dl[r.Int(0)] = storage.SearchDocSize(r.Bytes(1, nil))
			return true
		})
	if err != nil {
		return nil, err
	}
	colNames := make([]string, len(cols))
	colPos := map[string]int{}
	for i, c := range cols {
		colNames[i] = "c" + strconv.Itoa(c)
		colPos[colNames[i]] = i
	}
	scratch := "cellar_" + tbl
	names := strings.Join(colNames, ", ")
	if err := a.st.SearchScratch("CREATE VIRTUAL TABLE IF NOT EXISTS temp." + scratch + " USING fts5(" + names +
		", content = '', tokenize = '" + storage.SearchTokenizer(kind) + "')"); err != nil {
		return nil, err
	}
	if err := a.st.SearchScratch("CREATE VIRTUAL TABLE IF NOT EXISTS temp." + scratch + "_v USING fts5vocab(temp, " + scratch + ", instance)"); err != nil {
		return nil, err
	}
	// (FTS5's content table names its columns by position.)
	stored := make([]string, len(cols))
	for i := range cols {
		stored[i] = "c" + strconv.Itoa(i)
	}
	if err := a.st.SearchScratch("INSERT INTO temp."+scratch+" (rowid, "+names+") SELECT id, "+strings.Join(stored, ", ")+" FROM "+tbl+
		"_content WHERE id IN (SELECT value FROM json_each(?))", list); err != nil {
		return nil, err
	}
	type inst struct {
		doc      int64
		col, off int
	}
	var insts []inst
	err = a.st.SearchQuery("SELECT doc, col, offset FROM temp."+scratch+"_v WHERE term = ?", false, []any{term},
		func(r storage.SearchRow) bool {
			insts = append(insts, inst{doc: r.Int(0), col: colPos[r.Text(1)], off: int(r.Int(2))})
			return true
		})
	if err2 := a.st.SearchScratch("INSERT INTO temp." + scratch + " (" + scratch + ") VALUES ('delete-all')"); err == nil {
		err = err2
	}
	if err != nil {
		return nil, err
	}
	// bm25() adds the weights in the instances' order: column, offset.
	sort.Slice(insts, func(i, j int) bool {
		x, y := insts[i], insts[j]
		if x.doc != y.doc {
			return x.doc < y.doc
		}
		if x.col != y.col {
			return x.col < y.col
		}
		return x.off < y.off
	})
	f := map[int64]float64{}
	for _, in := range insts {
		f[in.doc] += ws[in.col]
	}
	idf := a.topIDF(rows, l.hits)
	avgdl := float64(toks) / float64(rows)
	for _, d := range best {
		td := topDoc{docid: d.docid, f: f[d.docid], dl: dl[d.docid]}
		if topScore(idf, avgdl, td.f, td.dl) != d.sc {
			a.log.Warn().Str("index", idx.name).Str("term", term).Msg("search: a term list does not reproduce bm25(); the term is scored in full")
			return nil, nil
		}
		l.docs = append(l.docs, td)
	}
	a.search().topBuilt++
	return l, a.saveTop(idx, kind, term, l)
}

// topSearch answers a one-term query ordered by score (no SORTBY, no
// INKEYS) from the term's list: expr is n's MATCH expression over idx's
// table kind, whose fields are cols. ok is false when the list cannot
// give the page; the caller then scores in full.
func (a *Actor) topSearch(idx *ftIndex, n *qnode, kind, expr string, cols []int, o *ftSearch) (hits []ftHit, total int64, ok bool, err error) {
	if idx.gc || len(n.words) != 1 || n.prefix || n.phrase || strings.HasPrefix(expr, "{") || o.offset+max(o.num, 1) > int64(topListLen) {
		return nil, 0, false, nil
	}
	term, err := a.searchTerm(kind, n.words[0])
	if err != nil || term == "" {
		return nil, 0, false, err
	}
	l, err := a.loadTop(idx, kind, term)
	if err != nil {
		return nil, 0, false, err
	}
	tbl := idx.table(kind)
	built := false
	for {
		if l == nil {
			if built {
				return nil, 0, false, nil
			}
			var hitsNow int64
			err := a.st.SearchQuery("SELECT count(*) FROM "+tbl+" WHERE "+tbl+" MATCH ?", true, []any{expr}, func(r storage.SearchRow) bool {
				hitsNow = r.Int(0)
				return false
			})
			if err != nil || hitsNow < topMinHits {
				return nil, 0, false, err
			}
			if l, err = a.buildTop(idx, kind, cols, term, expr); err != nil || l == nil {
				return nil, 0, false, err
			}
			built = true
		}
		var stale bool
		hits, total, ok, stale, err = a.topPage(idx, l, tbl, cols, expr, o)
		if ok {
			a.search().topUsed++
		}
		if err != nil || ok || built || !stale {
			// (A list made again from the same index would be the
			// same list: unable to prove this page, e.g. for ties
			// across its end, it is kept for the other pages.)
			return hits, total, ok, err
		}
		l = nil // stale: made again from a full scoring, once
	}
}

// topMaxDoc is the highest document id idx has given so far, as far as
// its documents table shows (ids are never given twice).
func (a *Actor) topMaxDoc(idx *ftIndex) (int64, error) {
	var id int64
	err := a.st.SearchQuery("SELECT coalesce(max(docid), 0) FROM "+idx.table("docs"), true, nil, func(r storage.SearchRow) bool {
		id = r.Int(0)
		return false
	})
	return id, err
}

// topPage is topSearch's page from list l, if l proves it; stale says
// that the index changed since l was made (so that a list made now may
// do better).
func (a *Actor) topPage(idx *ftIndex, l *topList, tbl string, cols []int, expr string, o *ftSearch) (page []ftHit, total int64, ok, stale bool, err error) {
	rows, toks, err := a.st.SearchTotals(tbl)
	if err != nil {
		return nil, 0, false, false, err
	}
	err = a.st.SearchQuery("SELECT count(*) FROM "+tbl+" WHERE "+tbl+" MATCH ?", true, []any{expr}, func(r storage.SearchRow) bool {
		total = r.Int(0)
		return false
	})
	if err != nil {
		return nil, 0, false, false, err
	}
	docs := idx.table("docs")
	// The matches indexed since the list (document id above wm), if
	// there can be any: scored by bm25().
	var fresh []ftHit
	last, err := a.topMaxDoc(idx)
	if err != nil {
		return nil, 0, false, false, err
	}
	stale = last > l.wm || rows != l.rows || toks != l.toks || total != l.hits
	if last > l.wm {
		_, wtxt := topWeights(idx, cols)
		err = a.st.SearchQuery("WITH n(docid, sc) AS MATERIALIZED (SELECT rowid, -bm25("+tbl+", "+wtxt+") FROM "+tbl+" WHERE "+tbl+
			" MATCH ? AND rowid > ? LIMIT ?) SELECT d.key, n.sc, d.docid FROM n JOIN "+docs+" d ON d.docid = n.docid", false,
			[]any{expr, l.wm, topMaxNew + 1}, func(r storage.SearchRow) bool {
				fresh = append(fresh, ftHit{key: r.Bytes(0, nil), score: r.Float(1), docid: r.Int(2)})
				return true
			})
		if err != nil || len(fresh) > topMaxNew {
			return nil, 0, false, true, err
		}
	}
	// The listed documents, scored here, best first; each looked up (it
	// may have gone, and the page needs its key) only while it can still
	// be on the page: until k of them exist and the next scores below
	// the k-th (an equal score may still come first by key).
	idf := a.topIDF(rows, total)
	avgdl := float64(toks) / float64(rows)
	listed := make([]ftHit, len(l.docs))
	for i, d := range l.docs {
		listed[i] = ftHit{docid: d.docid, score: topScore(idf, avgdl, d.f, d.dl)}
	}
	sort.Slice(listed, func(i, j int) bool { return listed[i].score > listed[j].score })
	k := int(o.offset + max(o.num, 1))
	cand := fresh
	// kth is the k-th best score of the candidates so far, fresh ones
	// included (they are few): no listed document below it can be on
	// the page.
	kth := func() (float64, bool) {
		if len(cand) < k {
			return 0, false
		}
		sc := make([]float64, len(cand))
		for i, c := range cand {
			sc[i] = c.score
		}
		sort.Float64s(sc)
		return sc[len(sc)-k], true
	}
	lookup := "SELECT key FROM " + docs + " WHERE docid = ?"
	for _, h := range listed {
		if cut, ok := kth(); ok && h.score < cut {
			break
		}
		found := false
		err = a.st.SearchQuery(lookup, true, []any{h.docid}, func(r storage.SearchRow) bool {
			h.key, found = r.Bytes(0, nil), true
			return false
		})
		if err != nil {
			return nil, 0, false, false, err
		}
		if found {
			cand = append(cand, h)
		}
	}
	sort.Slice(cand, func(i, j int) bool {
		if cand[i].score != cand[j].score {
			return cand[i].score > cand[j].score
		}
		return bytes.Compare(cand[i].key, cand[j].key) < 0
	})
	if l.hasRest {
		idf0 := a.topIDF(l.rows, l.hits)
		avg0 := float64(l.toks) / float64(l.rows)
		bound := l.rest * (idf / idf0) * max(1, avgdl/avg0) * (1 + 1e-9)
		if len(cand) < k || !(cand[k-1].score > bound) {
			return nil, 0, false, stale, nil
		}
	}
	if o.num == 0 || int(o.offset) >= len(cand) {
		return nil, total, true, stale, nil
	}
	return cand[o.offset:min(len(cand), int(o.offset+o.num))], total, true, stale, nil
}

// topStep makes, in the background, the list of the next term of idx
// that matches between topMinHits and topBuildMax documents and has none
// (housekeeping, once idx had no writes since the last step). It reports
// whether there is more to do.
func (a *Actor) topStep(idx *ftIndex) (bool, error) {
	if idx.topDone || idx.gc || idx.cursor >= 0 {
		return false, nil
	}
	if a.stats.commands != a.search().topSeen {
		// Clients at work: the lists are made when they are idle (or
		// by the queries that need them).
		a.search().topSeen = a.stats.commands
		return false, nil
	}
	if idx.written {
		// Writes going on: the next periodic step looks again (not the
		// next round, which would add a step to every writing round).
		idx.written = false
		return false, nil
	}
	l := idx.layout()
	kinds := [2]struct {
		kind string
		cols []int
	}{{"s", l.Stemmed}, {"r", l.Raw}}
	for idx.topPhase < len(kinds) {
		t := kinds[idx.topPhase]
		if len(t.cols) == 0 {
			idx.topPhase++
			continue
		}
		tbl := idx.table(t.kind)
		if err := a.st.SearchScratch("CREATE VIRTUAL TABLE IF NOT EXISTS temp." + tbl + "_vr USING fts5vocab(main, " + tbl + ", row)"); err != nil {
			return false, err
		}
		type vt struct {
			term string
			docs int64
		}
		var terms []vt
		err := a.st.SearchQuery("SELECT term, doc FROM temp."+tbl+"_vr WHERE term > ? ORDER BY term LIMIT ?", false,
			[]any{idx.topCursor, topScanStep}, func(r storage.SearchRow) bool {
				terms = append(terms, vt{r.Text(0), r.Int(1)})
				return true
			})
		if err != nil {
			return false, err
		}
		for _, v := range terms {
			idx.topCursor = v.term
			if v.docs < topMinHits || v.docs > topBuildMax {
				continue
			}
			have, err := a.loadTop(idx, t.kind, v.term)
			if err != nil {
				return false, err
			}
			if have != nil {
				continue
			}
			// A query word the tokenizer makes into the term: the term
			// itself, or (the stemmer taking off what it takes off) the
			// term with a suffix.
			for _, suffix := range []string{"", "ing", "ed", "s", "e", "es", "er"} {
				again, err := a.searchTerm(t.kind, v.term+suffix)
				if err != nil {
					return false, err
				}
				if again == v.term {
					if _, err := a.buildTop(idx, t.kind, t.cols, v.term, ftsQuote(v.term+suffix)); err != nil {
						return false, err
					}
					return true, nil
				}
			}
		}
		if len(terms) == topScanStep {
			return true, nil
		}
		idx.topPhase++ // this table is done
		idx.topCursor = ""
		return true, nil
	}
	idx.topDone = true
	return false, nil
}
