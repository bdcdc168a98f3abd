package actor

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

// FT.AGGREGATE: the documents a query matches, as rows of fields (LOADed
// from the hashes, or made by the pipeline), through GROUPBY with
// reducers, SORTBY, APPLY, FILTER and LIMIT, in the order given. The rows
// live in memory, at most maxAggregateRows of them.

const maxAggregateRows = 1000000

// aval is a value in a row: a number, a string, or nothing (num and str
// both unset).
type aval struct {
	num   float64
	str   string
	isNum bool
	isStr bool
}

func (v aval) null() bool { return !v.isNum && !v.isStr }

func numVal(f float64) aval { return aval{num: f, isNum: true} }
func strVal(s string) aval  { return aval{str: s, isStr: true} }

// asNum is v as a number (a string that parses as one, else 0, ok false).
func (v aval) asNum() (float64, bool) {
	if v.isNum {
		return v.num, true
	}
	if v.isStr {
		f, err := strconv.ParseFloat(strings.TrimSpace(v.str), 64)
		return f, err == nil
	}
	return 0, false
}

func (v aval) String() string {
	switch {
	case v.isNum:
		return fmtAggNum(v.num)
	case v.isStr:
		return v.str
	}
	return ""
}

// fmtAggNum prints a number as RediSearch's rows do (%.12g, integers
// without a point).
func fmtAggNum(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 12, 64)
}

func (v aval) truthy() bool {
	switch {
	case v.isNum:
		return v.num != 0
	case v.isStr:
		return v.str != ""
	}
	return false
}

// arow is one row: its fields in the order they were added.
type arow struct {
	names []string
	vals  []aval
}

func (r *arow) get(name string) aval {
	for i, n := range r.names {
		if n == name {
			return r.vals[i]
		}
	}
	return aval{}
}

func (r *arow) set(name string, v aval) {
	for i, n := range r.names {
		if n == name {
			r.vals[i] = v
			return
		}
	}
	r.names = append(r.names, name)
	r.vals = append(r.vals, v)
}

// aggStep is one step of the pipeline.
type aggStep struct {
	kind     string // GROUPBY, SORTBY, APPLY, FILTER, LIMIT
	fields   []string
	reducers []aggReducer
	desc     []bool
	max      int
	expr     *aexpr
	as       string
	off, num int
}

type aggReducer struct {
	fn   string
	args []string
	as   string
}

// propName strips a property's leading '@'.
func propName(b []byte) (string, bool) {
	s := string(b)
	if !strings.HasPrefix(s, "@") {
		return s, false
	}
	return s[1:], true
}

// FT.AGGREGATE index query [options]
func cmdFtAggregate(c *Ctx) error {
	idx := c.a.lookupIndex(c.args[1])
	if idx == nil {
		return errFtNoSuchIndex(c.args[1])
	}
	args := c.args[3:]
	o := &ftSearch{sortBy: -1}
	var load []string
	loadAll := false
	var steps []aggStep
	limited := false
	withCursor := false
	cursorCount, cursorIdle := int64(1000), int64(300000)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case eqFold(a, "VERBATIM"):
			o.verbatim = true
		case eqFold(a, "TIMEOUT"), eqFold(a, "DIALECT"):
			if i+1 >= len(args) {
				return errFtArgMissing(a)
			}
			i++
		case eqFold(a, "WITHCURSOR"):
			withCursor = true
			for i+2 < len(args) && (eqFold(args[i+1], "COUNT") || eqFold(args[i+1], "MAXIDLE")) {
				n, err := parseInt(args[i+2])
				if err != nil || n < 1 {
					return errFtBadCount(strings.ToUpper(string(args[i+1])))
				}
				if eqFold(args[i+1], "COUNT") {
					cursorCount = n
				} else {
					cursorIdle = n
				}
				i += 2
			}
		case eqFold(a, "LOAD"):
			if i+1 < len(args) && string(args[i+1]) == "*" {
				loadAll = true
				i++
				continue
			}
			_, next, err := ftCount(args, i, "LOAD")
			if err != nil {
				return err
			}
			for _, f := range args[i+2 : next] {
				name, _ := propName(f)
				load = append(load, name)
			}
			i = next - 1
		case eqFold(a, "PARAMS"):
			n, next, err := ftCount(args, i, "PARAMS")
			if err != nil {
				return err
			}
			if n%2 != 0 || n == 0 {
				return ErrFtParamsCount
			}
			o.params = map[string]string{}
			for j := i + 2; j < next; j += 2 {
				o.params[string(args[j])] = string(args[j+1])
			}
			i = next - 1
		case eqFold(a, "GROUPBY"):
			_, next, err := ftCount(args, i, "GROUPBY")
			if err != nil {
				return err
			}
			st := aggStep{kind: "GROUPBY"}
			for _, f := range args[i+2 : next] {
				name, ok := propName(f)
				if !ok {
					return errFtBadProperty(f)
				}
				st.fields = append(st.fields, name)
			}
			i = next - 1
			for i+1 < len(args) && eqFold(args[i+1], "REDUCE") {
				i++
				if i+2 >= len(args) {
					return errFtArgMissing(args[i])
				}
				r := aggReducer{fn: strings.ToUpper(string(args[i+1]))}
				_, next, err := ftCount(args, i+1, "REDUCE")
				if err != nil {
					return err
				}
				for _, x := range args[i+3 : next] {
					name, _ := propName(x)
					r.args = append(r.args, name)
				}
				i = next - 1
				if i+2 < len(args) && eqFold(args[i+1], "AS") {
					r.as = string(args[i+2])
					i += 2
				}
				if err := checkReducer(&r); err != nil {
					return err
				}
				st.reducers = append(st.reducers, r)
			}
			steps = append(steps, st)
		case eqFold(a, "SORTBY"):
			_, next, err := ftCount(args, i, "SORTBY")
			if err != nil {
				return err
			}
			st := aggStep{kind: "SORTBY"}
			for _, f := range args[i+2 : next] {
				switch {
				case eqFold(f, "ASC") && len(st.desc) > 0:
					st.desc[len(st.desc)-1] = false
				case eqFold(f, "DESC") && len(st.desc) > 0:
					st.desc[len(st.desc)-1] = true
				default:
					name, ok := propName(f)
					if !ok {
						return errFtBadProperty(f)
					}
					st.fields = append(st.fields, name)
					st.desc = append(st.desc, false)
				}
			}
			i = next - 1
			if i+2 < len(args) && eqFold(args[i+1], "MAX") {
				m, err := parseInt(args[i+2])
				if err != nil || m < 0 {
					return errFtBadCount("MAX")
				}
				st.max = int(m)
				i += 2
			}
			steps = append(steps, st)
		case eqFold(a, "APPLY"), eqFold(a, "FILTER"):
			if i+1 >= len(args) {
				return errFtArgMissing(a)
			}
			e, err := parseAExpr(string(args[i+1]))
			if err != nil {
				return err
			}
			st := aggStep{kind: strings.ToUpper(string(a)), expr: e}
			i++
			if st.kind == "APPLY" {
				st.as = string(args[i])
				if i+2 < len(args) && eqFold(args[i+1], "AS") {
					st.as = string(args[i+2])
					i += 2
				}
			}
			steps = append(steps, st)
		case eqFold(a, "LIMIT"):
			if i+2 >= len(args) {
				return errFtArgMissing(a)
			}
			off, err1 := parseInt(args[i+1])
			num, err2 := parseInt(args[i+2])
			if err1 != nil || err2 != nil || off < 0 || num < 0 {
				return ErrFtLimit
			}
			if num > maxSearchLimit || off > maxSearchLimit {
				return errFtLimitTooLarge(maxSearchLimit)
			}
			steps = append(steps, aggStep{kind: "LIMIT", off: int(off), num: int(num)})
			limited = true
			i += 2
		default:
			return errFtUnknownSearchArg(a, i+3)
		}
	}
	if !limited && !withCursor {
		steps = append(steps, aggStep{kind: "LIMIT", num: 10})
	}
	n, err := parseQuery(idx, string(c.args[2]), o)
	if err != nil {
		return err
	}
	idx.uses++
	keys, err := c.a.matchingKeys(idx, n)
	if err != nil {
		return err
	}
	// The rows: the fields LOAD names, and every field a step refers to
	// that the schema has (RediSearch loads sortable fields implicitly).
	want := map[string]bool{}
	for _, f := range load {
		want[f] = true
	}
	for _, st := range steps {
		for _, f := range st.fields {
			want[f] = true
		}
		for _, r := range st.reducers {
			for _, f := range r.args {
				want[f] = true
			}
		}
		if st.expr != nil {
			st.expr.props(want)
		}
	}
	rows := make([]*arow, 0, len(keys))
	for _, k := range keys {
		r, err := c.loadRow(idx, k, load, loadAll, want)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	total := len(rows)
	for _, st := range steps {
		switch st.kind {
		case "GROUPBY":
			rows = groupRows(rows, &st)
			total = len(rows)
		case "SORTBY":
			sortRows(rows, &st)
			if st.max > 0 && len(rows) > st.max {
				rows = rows[:st.max]
			}
		case "APPLY":
			for _, r := range rows {
				r.set(st.as, st.expr.eval(r))
			}
		case "FILTER":
			kept := rows[:0]
			for _, r := range rows {
				if st.expr.eval(r).truthy() {
					kept = append(kept, r)
				}
			}
			rows = kept
			total = len(rows)
		case "LIMIT":
			if st.off >= len(rows) {
				rows = nil
			} else {
				rows = rows[st.off:min(len(rows), st.off+st.num)]
			}
		}
	}
	if withCursor {
		cur := &aggCursor{index: idx.name, rows: rows, total: total, count: int(cursorCount),
			idle: time.Duration(cursorIdle) * time.Millisecond}
		return c.a.readCursor(c, cur, 0, true)
	}
	writeRows(c.w, total, rows)
	return nil
}

// writeRows writes an FT.AGGREGATE page: the count, then each row's
// visible fields; in RESP3 RediSearch 2.8's map (attributes, format,
// results with each row's extra_attributes, total_results, warning).
func writeRows(w *proto.Writer, total int, rows []*arow) {
	if w.Proto == 3 {
		w.Map(5)
		w.Simple("attributes")
		w.Array(0)
		w.Simple("format")
		w.Simple("STRING")
		w.Simple("results")
		w.Array(len(rows))
	} else {
		w.Array(1 + len(rows))
		w.Int(int64(total))
	}
	for _, r := range rows {
		n := 0
		for i := range r.names {
			if !r.vals[i].null() && !strings.HasPrefix(r.names[i], "\x00") {
				n++
			}
		}
		if w.Proto == 3 {
			w.Map(2)
			w.Simple("extra_attributes")
		}
		w.Map(n)
		for i, name := range r.names {
			if r.vals[i].null() || strings.HasPrefix(name, "\x00") {
				continue
			}
			w.BulkString(name)
			w.BulkString(r.vals[i].String())
		}
		if w.Proto == 3 {
			w.Simple("values")
			w.Array(0)
		}
	}
	if w.Proto == 3 {
		w.Simple("total_results")
		w.Int(int64(total))
		w.Simple("warning")
		w.Array(0)
	}
}

// The limits on FT.AGGREGATE WITHCURSOR's cursors: how many may be open
// and how many rows they may hold between them.
const (
	maxCursors    = 128
	maxCursorRows = 1000000
)

// aggCursor is an open WITHCURSOR cursor: the rows not yet read.
type aggCursor struct {
	id       int64
	index    string
	rows     []*arow
	total    int
	count    int
	idle     time.Duration
	lastRead time.Time
}

// readCursor replies with the next count (or cur.count) rows of cur and
// its id, or 0 once it is exhausted (and forgotten). fresh says cur is
// new: it is registered if rows remain after this page.
func (a *Actor) readCursor(c *Ctx, cur *aggCursor, count int, fresh bool) error {
	s := a.search()
	now := time.Now()
	for id, o := range s.cursors {
		if now.Sub(o.lastRead) > o.idle {
			s.cursorRows -= len(o.rows)
			delete(s.cursors, id)
		}
	}
	if count <= 0 {
		count = cur.count
	}
	page := cur.rows[:min(count, len(cur.rows))]
	rest := cur.rows[len(page):]
	if fresh && len(rest) > 0 {
		if len(s.cursors) >= maxCursors {
			return errFtTooMany("cursors", maxCursors)
		}
		if s.cursorRows+len(rest) > maxCursorRows {
			return errFtTooMany("rows held by cursors", maxCursorRows)
		}
		if s.cursors == nil {
			s.cursors = map[int64]*aggCursor{}
		}
		s.nextCursor++
		cur.id = s.nextCursor
		s.cursors[cur.id] = cur
		s.cursorRows += len(rest)
	} else if !fresh {
		s.cursorRows -= len(page)
	}
	cur.rows = rest
	cur.lastRead = now
	id := cur.id
	if len(rest) == 0 && cur.id != 0 {
		delete(s.cursors, cur.id)
		id = 0
	}
	c.w.Array(2)
	writeRows(c.w, cur.total, page)
	c.w.Int(id)
	return nil
}

// FT.CURSOR READ index cursor_id [COUNT n], FT.CURSOR DEL index cursor_id
func cmdFtCursor(c *Ctx) error {
	s := c.a.search()
	id, err := parseInt(c.args[3])
	if err != nil {
		return ErrFtCursorMissing
	}
	cur := s.cursors[id]
	if cur != nil && cur.index != string(c.args[2]) {
		cur = nil
	}
	switch {
	case c.argEq(1, "READ"):
		count := int64(0)
		if len(c.args) == 6 && c.argEq(4, "COUNT") {
			if count, err = parseInt(c.args[5]); err != nil || count < 1 {
				return errFtBadCount("COUNT")
			}
		} else if len(c.args) != 4 {
			return ErrSyntax
		}
		if cur == nil || time.Since(cur.lastRead) > cur.idle {
			return ErrFtCursorMissing
		}
		return c.a.readCursor(c, cur, int(count), false)
	case c.argEq(1, "DEL") && len(c.args) == 4:
		if cur == nil {
			return ErrFtCursorNotExist
		}
		s.cursorRows -= len(cur.rows)
		delete(s.cursors, id)
		c.w.OK()
		return nil
	}
	return errFtUnknownArg(c.args[1])
}

// matchingKeys returns the keys of every document n matches, in key
// order, at most maxAggregateRows.
func (a *Actor) matchingKeys(idx *ftIndex, n *qnode) ([]string, error) {
	if n == nil {
		return nil, nil
	}
	q := &qsql{idx: idx, l: idx.layout(), scored: map[string][]string{}}
	q.b.WriteString("WITH m(docid) AS (")
	q.set(n, true)
	q.b.WriteString(") SELECT d.key FROM m JOIN " + idx.table("docs") + " d ON d.docid = m.docid ORDER BY d.key LIMIT ?")
	args := append(q.args, maxAggregateRows+1)
	var keys []string
	err := a.st.SearchQuery(q.b.String(), false, args, func(r storage.SearchRow) bool {
		keys = append(keys, r.Text(0))
		return true
	})
	if err != nil {
		return nil, searchError(err)
	}
	if len(keys) > maxAggregateRows {
		return nil, errFtTooMany("rows to aggregate", maxAggregateRows)
	}
	return keys, nil
}

// loadRow reads a document's hash into a row: the fields LOAD names (all
// with LOAD *) visibly, and the others the pipeline refers to.
func (c *Ctx) loadRow(idx *ftIndex, key string, load []string, loadAll bool, want map[string]bool) (*arow, error) {
	r := &arow{}
	h, err := c.st.OpenColl(0, []byte(key), storage.TypeHash)
	if err != nil || h == nil {
		if err == storage.ErrWrongType {
			err = nil
		}
		return r, err
	}
	elems, err := c.st.AllElements(h)
	if err != nil {
		return nil, err
	}
	byName := map[string]string{}
	for _, e := range elems {
		byName[string(e.Member)] = string(e.Value)
	}
	if loadAll {
		for _, e := range elems {
			r.set(string(e.Member), strVal(string(e.Value)))
		}
	}
	value := func(name string) (aval, bool) {
		field := name
		typ := ""
		if f := idx.field(name); f >= 0 {
			field, typ = idx.spec.Fields[f].Name, idx.spec.Fields[f].Type
		}
		v, ok := byName[field]
		if !ok {
			return aval{}, false
		}
		if typ == ftNumeric {
			if f, ok := parseFtNumber([]byte(v)); ok {
				return numVal(f), true
			}
		}
		return strVal(v), true
	}
	for _, name := range load {
		if v, ok := value(name); ok {
			r.set(name, v)
		}
	}
	for name := range want {
		if r.get(name).null() {
			if v, ok := value(name); ok {
				// Referred to, not LOADed: kept out of the reply.
				r.set("\x00"+name, v)
			}
		}
	}
	return r, nil
}

// lookup finds a property in a row, LOADed or only referred to.
func (r *arow) lookup(name string) aval {
	if v := r.get(name); !v.null() {
		return v
	}
	return r.get("\x00" + name)
}

func checkReducer(r *aggReducer) error {
	need := map[string]int{"COUNT": 0, "SUM": 1, "AVG": 1, "MIN": 1, "MAX": 1, "COUNT_DISTINCT": 1,
		"COUNT_DISTINCTISH": 1, "TOLIST": 1, "STDDEV": 1}
	n, ok := need[r.fn]
	if !ok {
		return errFtReducer(r.fn)
	}
	if len(r.args) != n {
		return errFtReducerArgs(r.fn)
	}
	if r.as == "" {
		r.as = "__generated_alias" + strings.ToLower(r.fn) + strings.Join(r.args, ",")
	}
	return nil
}

// groupRows groups rows by st's fields and runs its reducers per group;
// groups come in the order first seen.
func groupRows(rows []*arow, st *aggStep) []*arow {
	type group struct {
		row  *arow
		rows []*arow
	}
	var order []*group
	groups := map[string]*group{}
	var kb strings.Builder
	for _, r := range rows {
		kb.Reset()
		for _, f := range st.fields {
			v := r.lookup(f)
			if v.isNum {
				kb.WriteString("n" + v.String())
			} else if v.isStr {
				kb.WriteString("s" + v.str)
			} else {
				kb.WriteString("-")
			}
			kb.WriteByte(0)
		}
		g := groups[kb.String()]
		if g == nil {
			g = &group{row: &arow{}}
			for _, f := range st.fields {
				g.row.set(f, r.lookup(f))
			}
			groups[kb.String()] = g
			order = append(order, g)
		}
		g.rows = append(g.rows, r)
	}
	out := make([]*arow, 0, len(order))
	for _, g := range order {
		for _, red := range st.reducers {
			g.row.set(red.as, reduce(&red, g.rows))
		}
		out = append(out, g.row)
	}
	return out
}

func reduce(red *aggReducer, rows []*arow) aval {
	switch red.fn {
	case "COUNT":
		return numVal(float64(len(rows)))
	case "COUNT_DISTINCT", "COUNT_DISTINCTISH":
		seen := map[string]bool{}
		for _, r := range rows {
			if v := r.lookup(red.args[0]); !v.null() {
				seen[v.String()] = true
			}
		}
		return numVal(float64(len(seen)))
	case "TOLIST":
		seen := map[string]bool{}
		var list []string
		for _, r := range rows {
			if v := r.lookup(red.args[0]); !v.null() && !seen[v.String()] {
				seen[v.String()] = true
				list = append(list, v.String())
			}
		}
		return strVal(strings.Join(list, ","))
	}
	var nums []float64
	for _, r := range rows {
		if f, ok := r.lookup(red.args[0]).asNum(); ok {
			nums = append(nums, f)
		}
	}
	sum := 0.0
	for _, f := range nums {
		sum += f
	}
	switch red.fn {
	case "SUM":
		return numVal(sum)
	case "AVG":
		if len(nums) == 0 {
			return numVal(math.NaN())
		}
		return numVal(sum / float64(len(nums)))
	case "MIN", "MAX":
		if len(nums) == 0 {
			return aval{}
		}
		m := nums[0]
		for _, f := range nums[1:] {
			if (red.fn == "MIN" && f < m) || (red.fn == "MAX" && f > m) {
				m = f
			}
		}
		return numVal(m)
	case "STDDEV":
		if len(nums) < 2 {
			return numVal(0)
		}
		mean := sum / float64(len(nums))
		v := 0.0
		for _, f := range nums {
			v += (f - mean) * (f - mean)
		}
		return numVal(math.Sqrt(v / float64(len(nums)-1)))
	}
	return aval{}
}

// sortRows sorts by st's fields: numbers numerically, strings by bytes,
// missing values last.
func sortRows(rows []*arow, st *aggStep) {
	sort.SliceStable(rows, func(i, j int) bool {
		for k, f := range st.fields {
			a, b := rows[i].lookup(f), rows[j].lookup(f)
			c := compareAval(a, b)
			if c == 0 {
				continue
			}
			if a.null() || b.null() {
				return b.null()
			}
			if st.desc[k] {
				return c > 0
			}
			return c < 0
		}
		return false
	})
}

func compareAval(a, b aval) int {
	switch {
	case a.null() && b.null():
		return 0
	case a.null():
		return 1
	case b.null():
		return -1
	}
	fa, oka := a.asNum()
	fb, okb := b.asNum()
	if oka && okb {
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	}
	return strings.Compare(a.String(), b.String())
}
