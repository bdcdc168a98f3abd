package storage

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// mkey is one key of the engine model: its type and value as a string
// (a string's value; a hash's, set's or sorted set's elements, sorted; a
// list's items in order), and its expiry (0: none).
type mkey struct {
	typ Type
	val string
	exp int64
}

// mstate is the model's keyspace: database → key → value.
type mstate map[int]map[string]mkey

func (m mstate) clone() mstate {
	c := mstate{}
	for db, keys := range m {
		c[db] = maps.Clone(keys)
	}
	return c
}

func (m mstate) db(db int) map[string]mkey {
	if m[db] == nil {
		m[db] = map[string]mkey{}
	}
	return m[db]
}

// readAll reads s's whole keyspace (databases 0 and 1) in the model's form.
func readAll(t *testing.T, s *Store) mstate {
	t.Helper()
	out := mstate{}
	for db := 0; db < 2; db++ {
		var names []string
		if err := s.Keys(db, nil, func(k []byte) bool { names = append(names, string(k)); return true }); err != nil {
			t.Fatal(err)
		}
		// SCAN, a few keys a call, returns each of them once.
		var scanned []string
		for cursor := uint64(0); ; {
			out, next, err := s.Scan(db, cursor, 7, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range out {
				scanned = append(scanned, string(e.Key))
			}
			if cursor = next; next == 0 {
				break
			}
		}
		slices.Sort(names)
		slices.Sort(scanned)
		if !slices.Equal(names, scanned) {
			t.Fatalf("db %d: KEYS %q, SCAN %q", db, names, scanned)
		}
		for _, k := range names {
			m, ok, err := s.Lookup(db, []byte(k))
			if err != nil || !ok {
				t.Fatalf("KEYS listed %q, Lookup: %v %v", k, ok, err)
			}
			v := mkey{typ: m.Type, exp: m.ExpireAt}
			switch m.Type {
			case TypeString:
				b, _, err := s.GetString(db, []byte(k), nil)
				if err != nil {
					t.Fatal(err)
				}
				v.val = string(b)
			case TypeList:
				var items []string
				if _, err := s.ListRange(db, []byte(k), 0, -1, func(int64) {}, func(b []byte) { items = append(items, string(b)) }); err != nil {
					t.Fatal(err)
				}
				v.val = strings.Join(items, ",")
			default:
				c, err := s.OpenColl(db, []byte(k), m.Type)
				if err != nil {
					t.Fatal(err)
				}
				var els []string
				s.Elements(c, func(e *Elem) bool {
					els = append(els, fmt.Sprintf("%s=%s%g", e.Member, e.Value, e.Score))
					return true
				})
				sort.Strings(els)
				v.val = strings.Join(els, ",")
			}
			out.db(db)[k] = v
		}
		s.EndCommand()
		if n := s.DBSize(db); n != int64(len(out[db])) {
			t.Fatalf("db %d: DBSIZE %d, KEYS %d", db, n, len(out[db]))
		}
	}
	return out
}

func sameState(t *testing.T, what string, got, want mstate) {
	t.Helper()
	for db := 0; db < 2; db++ {
		g, w := got[db], want[db]
		if !maps.Equal(g, w) {
			var diff []string
			for k := range w {
				if g[k] != w[k] {
					diff = append(diff, fmt.Sprintf("%q: got %+v, want %+v", k, g[k], w[k]))
				}
			}
			for k := range g {
				if _, ok := w[k]; !ok {
					diff = append(diff, fmt.Sprintf("%q: got %+v, want none", k, g[k]))
				}
			}
			slices.Sort(diff)
			t.Fatalf("%s, db %d:\n%s", what, db, strings.Join(diff[:min(len(diff), 10)], "\n"))
		}
	}
}

// The engine's model test: random writes of every type of key over two
// databases, expiries set and removed, with a memory bound so small that almost every command meets a
// key that was let go, flushes started and landed at random points (the
// writes go on while one flies), database operations among them, and
// restarts that lose whatever no flush took (a kill). After every landing
// SQLite, read by a second Store, holds the model as it was when the flush
// was frozen; after every restart the keyspace is the model as of the last
// flush that landed. After every step the keys with an expiry, as INFO
// keyspace counts them, are the model's.
func TestMemEngineMatchesModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	rng := rand.New(rand.NewPCG(7, 11))
	s := openMemAt(t, path, 3000)
	model, committed := mstate{}, mstate{}
	var frozen mstate
	var flight *Flush
	land := func() {
		t.Helper()
		if flight == nil {
			return
		}
		f := s.Land()
		flight = nil
		if f == nil || f.Err() != nil {
			t.Fatalf("flush: %v", f)
		}
		committed = frozen
		other := openMemAt(t, path, 0)
		sameState(t, "SQLite after a flush", readAll(t, other), committed)
		other.Close()
	}
	key := func() string { return fmt.Sprintf("k%d", rng.IntN(40)) }
	// bulk is how many elements a hash or set write adds and from how
	// many names: now and then past object.SmallMax, so that large sets
	// are written after their first flush too.
	bulk := func() (n, names int) {
		if rng.IntN(10) == 0 {
			return 150, 300
		}
		return 1, 6
	}
	for step := 0; step < 6000; step++ {
		db := rng.IntN(2)
		k := key()
		cur, has := model.db(db)[k]
		switch op := rng.IntN(100); {
		case op < 20:
			v := fmt.Sprintf("s%d", step)
			if err := s.SetString(db, []byte(k), []byte(v), 0, false); err != nil {
				t.Fatal(err)
			}
			model.db(db)[k] = mkey{typ: TypeString, val: v}
		case op < 30:
			if has && cur.typ != TypeHash {
				break
			}
			c, err := s.OpenOrCreateColl(db, []byte(k), TypeHash)
			if err != nil {
				t.Fatal(err)
			}
			cur.typ = TypeHash
			n, names := bulk()
			for range n {
				f := fmt.Sprintf("f%d", rng.IntN(names))
				if _, err := s.HashSet(c, []byte(f), []byte(fmt.Sprint(step)), HashReplace); err != nil {
					t.Fatal(err)
				}
				cur = setElem(cur, f+"="+fmt.Sprint(step)+"0", f+"=")
			}
			s.EndCommand()
			model.db(db)[k] = cur
		case op < 38:
			if has && cur.typ != TypeSet {
				break
			}
			c, err := s.OpenOrCreateColl(db, []byte(k), TypeSet)
			if err != nil {
				t.Fatal(err)
			}
			cur.typ = TypeSet
			n, names := bulk()
			for range n {
				mem := fmt.Sprintf("m%d", rng.IntN(names))
				s.SetAdd(c, []byte(mem))
				cur = setElem(cur, mem+"=0", mem+"=")
			}
			s.EndCommand()
			model.db(db)[k] = cur
		case op < 46:
			if has && cur.typ != TypeZSet {
				break
			}
			c, err := s.OpenOrCreateColl(db, []byte(k), TypeZSet)
			if err != nil {
				t.Fatal(err)
			}
			mem := fmt.Sprintf("z%d", rng.IntN(8))
			_, exists, _ := s.ZScore(c, []byte(mem))
			score := rng.IntN(5)
			s.ZSet(c, []byte(mem), float64(score), exists)
			s.EndCommand()
			model.db(db)[k] = setElem(mkey{TypeZSet, cur.val, cur.exp}, fmt.Sprintf("%s=%d", mem, score), mem+"=")
		case op < 56:
			if has && cur.typ != TypeList {
				break
			}
			v := fmt.Sprintf("i%d", step)
			end := End(rng.IntN(2))
			if _, err := s.ListPush(db, []byte(k), end, [][]byte{[]byte(v)}, false); err != nil {
				t.Fatal(err)
			}
			items := []string{}
			if has {
				items = strings.Split(cur.val, ",")
			}
			if end == Left {
				items = append([]string{v}, items...)
			} else {
				items = append(items, v)
			}
			model.db(db)[k] = mkey{TypeList, strings.Join(items, ","), cur.exp}
		case op < 62:
			if !has || cur.typ != TypeList {
				break
			}
			if _, err := s.ListPop(db, []byte(k), Left, 1); err != nil {
				t.Fatal(err)
			}
			items := strings.Split(cur.val, ",")[1:]
			if len(items) == 0 {
				delete(model.db(db), k)
			} else {
				model.db(db)[k] = mkey{TypeList, strings.Join(items, ","), cur.exp}
			}
		case op < 66:
			// An expiry set far ahead, or removed (PERSIST).
			if !has {
				break
			}
			at := int64(0)
			if rng.IntN(3) > 0 {
				at = s.Now + 1_000_000 + int64(step)
			}
			if err := s.SetExpire(db, []byte(k), at); err != nil {
				t.Fatal(err)
			}
			cur.exp = at
			model.db(db)[k] = cur
		case op < 70:
			if _, err := s.Delete(db, []byte(k)); err != nil {
				t.Fatal(err)
			}
			delete(model.db(db), k)
		case op < 75:
			dst := key()
			if !has || dst == k {
				break
			}
			if err := s.Rename(db, []byte(k), []byte(dst)); err != nil {
				t.Fatal(err)
			}
			delete(model.db(db), k)
			model.db(db)[dst] = cur
		case op < 79:
			if _, there := model.db(1 - db)[k]; !has || there {
				break
			}
			if err := s.Move(db, []byte(k), 1-db); err != nil {
				t.Fatal(err)
			}
			delete(model.db(db), k)
			model.db(1 - db)[k] = cur
		case op < 83:
			dst := key()
			if !has || dst == k {
				break
			}
			if _, err := s.Copy(db, []byte(k), 1-db, []byte(dst), true); err != nil {
				t.Fatal(err)
			}
			model.db(1 - db)[dst] = cur
		case op < 84:
			s.SwapDB(0, 1)
			model[0], model[1] = model[1], model[0]
		case op < 85:
			s.FlushDB(db)
			model[db] = map[string]mkey{}
		case op < 93:
			// A flush: the one flying lands first.
			land()
			f, err := s.StartFlush(uint64(step + 1))
			if err != nil {
				t.Fatal(err)
			}
			if f != nil {
				frozen, flight = model.clone(), f
				go f.Run()
			}
		case op < 97:
			land()
		default:
			// A kill: what no flush took is lost.
			land()
			if s.mem.freshMissed != 0 {
				t.Fatalf("step %d: %d entries were not in the fresh index under their ids", step, s.mem.freshMissed)
			}
			s.Close()
			s = openMemAt(t, path, 3000)
			model = committed.clone()
			sameState(t, "after a restart", readAll(t, s), model)
		}
		s.EndCommand()
		s.ResetTouched()
		if rng.IntN(3) == 0 {
			// At a round's end: while a flight flies, the next one's
			// batch frozen in parts (preFreeze), a few entries at a time.
			s.mem.preFreeze(0, 1+rng.IntN(4))
		}
		for db := 0; db < 2; db++ {
			want := int64(0)
			for _, v := range model.db(db) {
				if v.exp != 0 {
					want++
				}
			}
			if got, err := s.CountExpiring(db); err != nil || got != want {
				t.Fatalf("step %d: db %d counts %d keys with an expiry (%v), the model %d", step, db, got, err, want)
			}
		}
	}
	land()
	sameState(t, "the end", readAll(t, s), model)
	if s.mem.freshMissed != 0 {
		t.Fatalf("%d entries were not in the fresh index under their ids", s.mem.freshMissed)
	}
	s.Close()
}

// setElem sets element name (entry "name=..."; prefix "name=") in a
// collection's model value.
func setElem(cur mkey, entry, prefix string) mkey {
	var els []string
	if cur.val != "" {
		for _, e := range strings.Split(cur.val, ",") {
			if !strings.HasPrefix(e, prefix) {
				els = append(els, e)
			}
		}
	}
	els = append(els, entry)
	sort.Strings(els)
	return mkey{cur.typ, strings.Join(els, ","), cur.exp}
}
