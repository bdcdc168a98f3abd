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
