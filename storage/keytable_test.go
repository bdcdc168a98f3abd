package storage

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The key table against a map: random puts and deletes through doubling,
// splits and tombstone rebuilds; get, len, each and sample agree with it.
func TestKeyTableModel(t *testing.T) {
	tb := newKeyTable()
	model := map[string]*entry{}
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(step int) {
		t.Helper()
		if tb.len() != len(model) {
			t.Fatalf("step %d: len %d, model %d", step, tb.len(), len(model))
		}
		seen := map[*entry]bool{}
		tb.each(func(e *entry) bool {
			if seen[e] || model[e.key()] != e {
				t.Fatalf("step %d: each gave %q twice or not in the model", step, e.key())
			}
			seen[e] = true
			return true
		})
		if len(seen) != len(model) {
			t.Fatalf("step %d: each gave %d entries, model %d", step, len(seen), len(model))
		}
		seen = map[*entry]bool{}
		tb.sample(func(e *entry) bool {
			if seen[e] {
				t.Fatalf("step %d: sample gave %q twice", step, e.key())
			}
			seen[e] = true
			return true
		})
		if len(seen) != len(model) {
			t.Fatalf("step %d: sample gave %d entries, model %d", step, len(seen), len(model))
		}
	}
	for step := 0; step < 200_000; step++ {
		k := fmt.Sprintf("k%d", rng.IntN(30_000))
		switch e := tb.get(k); {
		case e != model[k]:
			t.Fatalf("step %d: get(%q) = %p, model %p", step, k, e, model[k])
		case e == nil && rng.IntN(3) > 0:
			e = newEntry(k, 0)
			tb.put(e)
			model[k] = e
		case e != nil && rng.IntN(2) == 0:
			if !tb.del(k) {
				t.Fatalf("step %d: del(%q) found nothing", step, k)
			}
			delete(model, k)
		}
		if tb.del("absent") {
			t.Fatal("del of an absent name")
		}
		if step%20_000 == 0 {
			check(step)
		}
	}
	check(-1)
	if tb.depth == 0 {
		t.Fatalf("30000 names never split the first shard")
	}
	// each lets fn delete the entry it is given.
	tb.each(func(e *entry) bool {
		tb.del(e.key())
		delete(model, e.key())
		return true
	})
	check(-2)
}

// A table grown by inserts alone keeps its slots at least about half
// full at every size (a table of doubling shards falls to 41% just after
// they all split): its slots cost at most 1.9 of each key's 9 bytes.
func TestKeyTableDensity(t *testing.T) {
	tb := newKeyTable()
	for i := range 600_000 {
		tb.put(newEntry(fmt.Sprintf("key:%012d", i), 0))
		if n := i + 1; n >= 10_000 && n%10_000 == 0 {
			slots := 0
			for j := 0; j < len(tb.dir); {
				s := tb.dir[j]
				j += 1 << (tb.depth - s.depth)
				slots += len(s.tags)
			}
			if float64(slots) > 1.9*float64(n) {
				t.Fatalf("%d keys in %d slots (%.0f%% full)", n, slots, 100*float64(n)/float64(slots))
			}
		}
	}
}

// candidates gives, for a name the table holds, an entry with the same
// tag (the name's own, but for a tag collision earlier in the probe), and
// for most names it holds, that name's own entry; for an absent name nil
// or an entry whose tag collides.
func TestKeyTableCandidates(t *testing.T) {
	tb := newKeyTable()
	var names [][]byte
	for i := range 20_000 {
		k := fmt.Sprintf("key:%d", i)
		tb.put(newEntry(k, 0))
		names = append(names, []byte(k))
	}
	for i := range 20_000 {
		if i%3 == 0 {
			tb.del(fmt.Sprintf("key:%d", i)) // tombstones in the probes
		}
		names = append(names, fmt.Appendf(nil, "absent:%d", i))
	}
	got := tb.candidates(names, nil)
	if len(got) != len(names) {
		t.Fatalf("%d candidates for %d names", len(got), len(names))
	}
	own := 0
	for i, k := range names {
		e, c := tb.get(string(k)), got[i]
		switch {
		case e != nil && c == e:
			own++
		case e != nil && c == nil:
			t.Fatalf("%q: held, but no candidate", k)
		case c != nil && tagOf(tb.hash(c.key())) != tagOf(tb.hash(string(k))):
			t.Fatalf("%q: candidate %q has another tag", k, c.key())
		}
	}
	if held := tb.len(); own < held*9/10 {
		t.Fatalf("the name's own entry for %d of %d names held", own, held)
	}
}
