package storage

import (
	"path/filepath"
	"strings"
	"testing"
)

// A database of schema version 13 loses the two indexes no read uses when
// this build opens it, and its sorted sets read back in Redis's order.
func TestSchemaDropsUnusedIndexes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	s, err := Open(Options{Path: path})
	must(t, err)
	s.Now = 1_000_000
	inTx(t, s, func() {
		c, err := s.OpenOrCreateColl(0, []byte("z"), TypeZSet)
		must(t, err)
		for i, m := range []string{"c", "a", "b"} {
			must(t, s.ZSet(c, []byte(m), float64(3-i), false))
		}
	})
	indexes := func() map[string]bool {
		got := map[string]bool{}
		st, err := s.c.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name IN ('zsets_by_score', 'stream_pel_by_consumer')")
		must(t, err)
		defer st.close()
		for {
			ok, err := st.step()
			must(t, err)
			if !ok {
				break
			}
			got[string(st.colBlob(0, nil))] = true
		}
		return got
	}
	if got := indexes(); len(got) != 0 {
		t.Fatalf("a new database has %v", got)
	}
	must(t, s.c.exec(`CREATE INDEX zsets_by_score ON zsets (id, score, member);
		CREATE INDEX stream_pel_by_consumer ON stream_pel (id, grp, consumer, ms, seq);
		DELETE FROM cellar_schema WHERE version >= 14`))
	if got := indexes(); len(got) != 2 {
		t.Fatalf("the version-13 file has %v, want both indexes", got)
	}
	must(t, s.Close())
	s, err = Open(Options{Path: path})
	must(t, err)
	defer s.Close()
	s.Now = 1_000_000
	if got := indexes(); len(got) != 0 {
		t.Fatalf("after the upgrade the file still has %v", got)
	}
	c, err := s.OpenColl(0, []byte("z"), TypeZSet)
	must(t, err)
	var order []string
	must(t, s.ZRangeElems(c, ZRange{Kind: ZByRank, Start: 0, Stop: 2}, func(e *Elem) bool {
		order = append(order, string(e.Member))
		return true
	}))
	if len(order) != 3 || order[0] != "b" || order[1] != "a" || order[2] != "c" {
		t.Fatalf("ZRANGE after the upgrade: %q, want [b a c]", order)
	}
}

// The expiry sweeps read SQLite through the partial expiry indexes (a
// plan that scans a table costs the actor the whole table every sweep),
// and so does the count of keys with an expiry at start.
func TestSweepReadsUseTheExpiryIndexes(t *testing.T) {
	s := openTest(t)
	for q, index := range map[string]string{sqlDueKeys: "keys_by_expiry", sqlDueHashIDs: "hashes_by_expiry", sqlExpiringByDB: "keys_by_expiry"} {
		st, err := s.c.prepare("EXPLAIN QUERY PLAN " + q)
		must(t, err)
		var plan []string
		for {
			ok, err := st.step()
			must(t, err)
			if !ok {
				break
			}
			plan = append(plan, string(st.colBlob(3, nil)))
		}
		st.close()
		if len(plan) == 0 || !strings.Contains(plan[0], "USING") || !strings.Contains(plan[0], "INDEX "+index) {
			t.Errorf("%s\nplan %q, want a search of %s", q, plan, index)
		}
	}
}
