package storage

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Pending elements (elems.go) against a model: random HSET, SADD, ZADD
// and removals (which wait for the flush), their lookups, whole reads
// (which write them first), deletions of keys, flushes flying while the
// commands go on (their lookups read aside the flush: aside.go), commits,
// undone savepoints and a rollback, with a bound small enough to overflow. Every read answers what the model holds, and
// after every commit SQLite holds exactly the model.
func TestPendingElemsMatchModel(t *testing.T) {
	for seed := range int64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { pendingElemsRun(t, seed) })
	}
}

// elemModel is a database of collections: key -> member -> value (a hash's
// value, a sorted set's score as text, "" for a set).
type elemModel map[string]map[string]string

func (m elemModel) clone() elemModel {
	c := elemModel{}
	for k, v := range m {
		c[k] = maps.Clone(v)
	}
	return c
}

func pendingElemsRun(t *testing.T, seed int64) {
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	s, err := Open(Options{Path: filepath.Join(t.TempDir(), "cellar.db"), HotCacheBytes: 4 << 10})
	must(t, err)
	defer s.Close()
	s.Now = 1
	s.elemMax = 2000 // a few dozen elements
	s.skipMax = 1    // reads delete the rows of gone elements early (settleGone)
	types := map[byte]Type{'h': TypeHash, 's': TypeSet, 'z': TypeZSet}
	model, saved := elemModel{}, elemModel{}
	render := func(t Type, e Elem) (string, string) {
		switch t {
		case TypeHash:
			return string(e.Member), string(e.Value)
		case TypeZSet:
			return string(e.Member), fmt.Sprint(e.Score)
		}
		return string(e.Member), ""
	}
	// inSQLite reads every collection from the tables, past the barriers.
	inSQLite := func() elemModel {
		got := elemModel{}
		for _, q := range []string{
			"SELECT k.key, e.field, e.value FROM keys k JOIN hashes e ON e.id = k.id WHERE k.db = 0",
			"SELECT k.key, e.member, '' FROM keys k JOIN sets e ON e.id = k.id WHERE k.db = 0",
			"SELECT k.key, e.member, CAST(e.score AS TEXT) FROM keys k JOIN zsets e ON e.id = k.id WHERE k.db = 0",
		} {
			st, err := s.c.prepare(q)
			must(t, err)
			for {
				row, err := st.step()
				must(t, err)
				if !row {
					break
				}
				k := string(st.colBlob(0, nil))
				if got[k] == nil {
					got[k] = map[string]string{}
				}
				v := string(st.colBlob(2, nil))
				if strings.HasPrefix(k, "z") {
					var f float64
					fmt.Sscan(v, &f)
					v = fmt.Sprint(f)
				}
				got[k][string(st.colBlob(1, nil))] = v
			}
			st.close()
		}
		return got
	}
	check := func(step int, what string, got, want elemModel) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("step %d, %s:\n got %v\nwant %v", step, what, got, want)
		}
	}
	var fl flyer
	var flying elemModel // what the flight commits
	land := func(step int) {
		if fl.f != nil {
			fl.land(t, s, step)
			saved = flying
		}
	}
	must(t, s.Begin())
	for step := range 4000 {
		kind := "hsz"[rng.IntN(3)]
		key := fmt.Sprintf("%c%d", kind, rng.IntN(4))
		typ := types[kind]
		member := fmt.Sprint("m", rng.IntN(10))
		switch r := rng.IntN(100); {
		case r < 40: // a write that waits for the flush
			c, err := s.OpenOrCreateColl(0, []byte(key), typ)
			must(t, err)
			_, had := model[key][member]
			var added bool
			v := fmt.Sprint(step)
			switch typ {
			case TypeHash:
				added, err = s.HashSet(c, []byte(member), []byte(v), HashReplace)
			case TypeSet:
				added, err = s.SetAdd(c, []byte(member))
				v = ""
			default:
				_, had2, err2 := s.ZScore(c, []byte(member))
				must(t, err2)
				if had2 != had {
					t.Fatalf("step %d ZSCORE %s %s: found %v, want %v", step, key, member, had2, had)
				}
				err = s.ZSet(c, []byte(member), float64(step), had)
				added = !had
			}
			must(t, err)
			must(t, s.EndCommand())
			if added == had {
				t.Fatalf("step %d write %s %s: added %v, the model had it: %v", step, key, member, added, had)
			}
			if model[key] == nil {
				model[key] = map[string]string{}
			}
			model[key][member] = v
		case r < 55: // a lookup of one element
			c, err := s.OpenColl(0, []byte(key), typ)
			must(t, err)
			want, ok := model[key][member]
			var got string
			var found bool
			if c != nil {
				switch typ {
				case TypeHash:
					var b []byte
					b, found, err = s.HashGet(c, []byte(member), nil)
					got = string(b)
				case TypeSet:
					found, err = s.SetHas(c, []byte(member))
				default:
					var f float64
					f, found, err = s.ZScore(c, []byte(member))
					got = fmt.Sprint(f)
					if !found {
						got = ""
					}
				}
				must(t, err)
			}
			if found != ok || got != want {
				t.Fatalf("step %d lookup %s %s: %q %v, want %q %v", step, key, member, got, found, want, ok)
			}
		case r < 62 && typ != TypeHash: // a pop: SPOP's or ZPOPMIN's read, then removals
			c, err := s.OpenColl(0, []byte(key), typ)
			must(t, err)
			if c == nil {
				break
			}
			n := 1 + rng.Int64N(3)
			var es []Elem
			if typ == TypeSet {
				if es, err = s.Sample(c, n); err == nil {
					err = s.RemoveRead(c, es)
				}
			} else {
				es, err = s.ZPop(c, n, false)
			}
			must(t, err)
			must(t, s.EndCommand())
			if want := min(n, int64(len(model[key]))); int64(len(es)) != want {
				t.Fatalf("step %d pop of %d from %s: %d popped, want %d", step, n, key, len(es), want)
			}
			var low []string // the model's lowest members, by score then member
			for m := range model[key] {
				low = append(low, m)
			}
			sort.Slice(low, func(i, j int) bool {
				a, b := model[key][low[i]], model[key][low[j]]
				var fa, fb float64
				fmt.Sscan(a, &fa)
				fmt.Sscan(b, &fb)
				return fa < fb || fa == fb && low[i] < low[j]
			})
			for i, e := range es {
				m, v := render(typ, e)
				if want, ok := model[key][m]; !ok || want != v || (typ == TypeZSet && low[i] != m) {
					t.Fatalf("step %d pop from %s: %s=%q, the model has %q %v (lowest %v)", step, key, m, v, want, ok, low)
				}
				delete(model[key], m)
			}
			if len(model[key]) == 0 {
				delete(model, key)
			}
		case r < 65: // a removal, which waits for the flush too
			c, err := s.OpenColl(0, []byte(key), typ)
			must(t, err)
			if c == nil {
				break
			}
			var removed bool
			switch typ {
			case TypeHash:
				removed, err = s.HashDel(c, []byte(member))
			case TypeSet:
				removed, err = s.SetRem(c, []byte(member))
			default:
				removed, err = s.ZRem(c, []byte(member))
			}
			must(t, err)
			must(t, s.EndCommand())
			if _, had := model[key][member]; had != removed {
				t.Fatalf("step %d remove %s %s: %v, the model had it: %v", step, key, member, removed, had)
			}
			delete(model[key], member)
			if len(model[key]) == 0 {
				delete(model, key)
			}
		case r < 70: // a window of a set or sorted set (SPOP's read), past the gone members
			c, err := s.OpenColl(0, []byte(key), typ)
			must(t, err)
			if c == nil || typ == TypeHash || c.Len < 2 {
				break
			}
			n := 1 + rng.Int64N(c.Len-1)
			es, err := s.window(c, n)
			must(t, err)
			seen := map[string]bool{}
			for _, e := range es {
				m, v := render(typ, e)
				if want, ok := model[key][m]; !ok || want != v || seen[m] {
					t.Fatalf("step %d window of %s: %s=%q, the model has %q %v (or it came twice)", step, key, m, v, want, ok)
				}
				seen[m] = true
			}
			if int64(len(es)) != n {
				t.Fatalf("step %d window of %s: %d members, want %d", step, key, len(es), n)
			}
		case r < 75: // a whole read: past the gone elements, else after the pending ones
			c, err := s.OpenColl(0, []byte(key), typ)
			must(t, err)
			got := elemModel{}
			if c != nil {
				es, err := s.AllElements(c)
				must(t, err)
				got[key] = map[string]string{}
				for _, e := range es {
					m, v := render(typ, e)
					got[key][m] = v
				}
				if c.Len != int64(len(es)) {
					t.Fatalf("step %d %s: count %d, %d elements", step, key, c.Len, len(es))
				}
			}
			want := elemModel{}
			if model[key] != nil {
				want[key] = model[key]
			}
			check(step, "a whole read of "+key, got, want)
		case r < 79:
			_, err := s.Delete(0, []byte(key))
			must(t, err)
			delete(model, key)
		case r < 86:
			if fl.start(t, s, step) {
				flying = model.clone()
			}
		case r < 90: // a command undone: what it wrote goes
			land(step)
			must(t, s.Savepoint())
			c, err := s.OpenOrCreateColl(0, []byte(key), typ)
			must(t, err)
			switch typ {
			case TypeHash:
				_, err = s.HashSet(c, []byte("undone"), []byte("x"), HashReplace)
			case TypeSet:
				_, err = s.SetAdd(c, []byte("undone"))
			default:
				err = s.ZSet(c, []byte("undone"), 1, false)
			}
			must(t, err)
			if !s.Undo() {
				t.Fatalf("step %d: undo failed", step)
			}
		case r < 92: // a round rolled back
			land(step)
			s.Rollback()
			model = saved.clone()
			must(t, s.Begin())
		default:
			land(step)
			_, _, err := s.Commit()
			must(t, err)
			check(step, "SQLite after a commit", inSQLite(), model)
			saved = model.clone()
			must(t, s.Begin())
		}
	}
	land(4000)
	_, _, err = s.Commit()
	must(t, err)
	check(4000, "SQLite at the end", inSQLite(), model)
	if s.PendingElems() != 0 {
		t.Fatalf("%d pending elements after the commit", s.PendingElems())
	}
	if s.AsideReads() == 0 {
		t.Fatal("no element lookup ran aside a flush")
	}
}

// While a flush flies, element lookups (HSET's, SADD's, ZADD's) are
// answered without waiting for it: from the elements it took, else by the
// reader. Once its transaction removed an element by SQL, they wait for it
// and see what it wrote.
func TestElemLookupsAsideFlush(t *testing.T) {
	s := openTest(t)
	open := func(key string, typ Type) *Coll {
		t.Helper()
		c, err := s.OpenOrCreateColl(0, []byte(key), typ)
		must(t, err)
		return c
	}
	hset := func(key, field, v string) bool {
		t.Helper()
		added, err := s.HashSet(open(key, TypeHash), []byte(field), []byte(v), HashReplace)
		must(t, err)
		must(t, s.EndCommand())
		return added
	}
	hhas := func(key, field string) bool {
		t.Helper()
		ok, err := s.HashHas(open(key, TypeHash), []byte(field))
		must(t, err)
		return ok
	}
	inTx(t, s, func() {
		hset("h", "old", "1")
		hset("h", "gone", "1")
		for _, m := range []string{"old", "kept"} {
			_, err := s.SetAdd(open("s", TypeSet), []byte(m))
			must(t, err)
			must(t, s.EndCommand())
		}
		must(t, s.ZSet(open("z", TypeZSet), []byte("old"), 1, false))
		must(t, s.EndCommand())
	})

	must(t, s.Begin())
	hset("h", "flying", "2")
	must(t, s.ZSet(open("z", TypeZSet), []byte("old"), 5, true))
	must(t, s.EndCommand())
	f, err := s.StartFlush(1)
	must(t, err)
	must(t, s.Begin())
	reads := s.AsideReads()
	if !hhas("h", "old") || !hhas("h", "flying") || hhas("h", "never") {
		t.Fatal("HEXISTS aside the flush: wrong answers")
	}
	if hset("h", "flying", "3") || !hset("h", "new", "3") {
		t.Fatal("HSET aside the flush: wrong added counts")
	}
	if added, err := s.SetAdd(open("s", TypeSet), []byte("old")); err != nil || added {
		t.Fatalf("SADD of a member SQLite has, aside the flush: %v %v", added, err)
	}
	if score, found, err := s.ZScore(open("z", TypeZSet), []byte("old")); err != nil || !found || score != 5 {
		t.Fatalf("ZSCORE of the flight's score: %v %v %v", score, found, err)
	}
	must(t, s.EndCommand())
	if !s.Flying() {
		t.Fatal("an element lookup waited for the flush")
	}
	if s.AsideReads() == reads {
		t.Fatal("no element lookup ran on the reader")
	}
	runAndCommit(t, s, f)

	// Removals aside a flush wait for the next one, and lookups see them.
	must(t, s.Begin())
	hset("h", "other", "1")
	f, err = s.StartFlush(2)
	must(t, err)
	must(t, s.Begin())
	if removed, err := s.HashDel(open("h", TypeHash), []byte("gone")); err != nil || !removed {
		t.Fatalf("HDEL aside the flush: %v %v", removed, err)
	}
	if hhas("h", "gone") {
		t.Fatal("a field removed aside the flush is still there")
	}
	if removed, err := s.HashDel(open("h", TypeHash), []byte("gone")); err != nil || removed {
		t.Fatalf("HDEL of a field removed already: %v %v", removed, err)
	}
	if removed, err := s.SetRem(open("s", TypeSet), []byte("old")); err != nil || !removed {
		t.Fatalf("SREM aside the flush: %v %v", removed, err)
	}
	if !s.Flying() {
		t.Fatal("a removal waited for the flush")
	}
	must(t, s.EndCommand())
	runAndCommit(t, s, f)

	// A field written by SQL in the flight's transaction (HINCRBY's
	// path): lookups wait for the flight, and see it.
	must(t, s.Begin())
	if _, err := s.HashSet(open("h", TypeHash), []byte("sql"), []byte("1"), HashKeepTTL); err != nil {
		t.Fatal(err)
	}
	must(t, s.EndCommand())
	f, err = s.StartFlush(3)
	must(t, err)
	must(t, s.Begin())
	reads = s.AsideReads()
	go f.Run()
	if !hhas("h", "sql") {
		t.Fatal("a field the flight wrote by SQL is not there")
	}
	if s.AsideReads() != reads {
		t.Fatal("a lookup ran aside a flight that wrote an element by SQL")
	}
	if got := s.Land(); got != nil && got.Err() != nil {
		t.Fatalf("Land: %v", got.Err())
	}
	_, _, err = s.Commit()
	must(t, err)
	for field, want := range map[string]bool{"old": true, "flying": true, "new": true, "sql": true, "gone": false} {
		if hhas("h", field) != want {
			t.Fatalf("after the flushes, HEXISTS h %s is %v", field, !want)
		}
	}
}

// A hash field removed and set again goes to the end of the insertion
// order, as in Redis, whether its removal waited in memory (the field was
// pending, or a flush had the connection) or not.
func TestPendingFieldSetAgainGoesLast(t *testing.T) {
	s := openTest(t)
	c := func() *Coll {
		t.Helper()
		c, err := s.OpenOrCreateColl(0, []byte("h"), TypeHash)
		must(t, err)
		return c
	}
	hset := func(f string) {
		t.Helper()
		_, err := s.HashSet(c(), []byte(f), []byte("v"), HashReplace)
		must(t, err)
		must(t, s.EndCommand())
	}
	hdel := func(f string) {
		t.Helper()
		if removed, err := s.HashDel(c(), []byte(f)); err != nil || !removed {
			t.Fatalf("HDEL %s: %v %v", f, removed, err)
		}
		must(t, s.EndCommand())
	}
	order := func() string {
		t.Helper()
		var got []string
		must(t, s.OrderedElements(c(), func(e *Elem) bool { got = append(got, string(e.Member)); return true }))
		return strings.Join(got, ",")
	}
	inTx(t, s, func() {
		for _, f := range []string{"a", "b", "c", "d"} {
			hset(f)
		}
	})
	must(t, s.Begin())
	hset("b") // pending, stored
	hdel("b") // buried
	hset("b") // revived: last
	f, err := s.StartFlush(1)
	must(t, err)
	must(t, s.Begin())
	hdel("a") // aside the flush: a tombstone
	hset("a")
	if !s.Flying() {
		t.Fatal("HDEL and HSET aside the flush waited for it")
	}
	runAndCommit(t, s, f)
	must(t, s.Begin())
	if got := order(); got != "c,d,b,a" {
		t.Fatalf("insertion order %q, want c,d,b,a", got)
	}
	s.Rollback()
}
