package storage

import (
	"fmt"
	"path/filepath"
	"testing"
)

// A Load puts in memory what SQLite's last commit holds, unless memory
// took the name up or let it go while the Load was under way, or a
// database operation ran since it began: then what it read is dropped,
// and the command reads the key itself.
func TestLoadOffTheActor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	s := openMemAt(t, path, 0)
	cmd := func(f func()) {
		t.Helper()
		must(t, s.Begin())
		f()
		must(t, s.EndCommand())
	}
	for i := 0; i < 10; i++ {
		cmd(func() { must(t, s.SetString(0, []byte(fmt.Sprint("k", i)), []byte(fmt.Sprint("v", i)), 0, false)) })
	}
	_, _, err := s.Commit()
	must(t, err)
	s.Close()

	s = openMemAt(t, path, 0)
	defer s.Close()
	if !s.MayLoad() {
		t.Fatal("a Store opened on keys does not look at batches' keys")
	}
	get := func(key string) string {
		t.Helper()
		var v []byte
		cmd(func() {
			var err error
			v, _, err = s.GetString(0, []byte(key), nil)
			must(t, err)
		})
		return string(v)
	}
	held := func(key string) bool { return s.mem.dbs[0].keys.get(key) != nil }

	// Asked for twice, a name is read once; the Load puts it in memory
	// and the command finds it there, reading nothing.
	g := s.WantLoad(0, []byte("k1"))
	if g == 0 || s.WantLoad(0, []byte("k1")) != g || s.WantLoad(0, []byte("k2")) != g {
		t.Fatalf("WantLoad: %d, then %d", g, s.WantLoad(0, []byte("k1")))
	}
	first := s.StartLoad()
	if first == nil {
		t.Fatal("no Load for two names")
	}
	if s.StartLoad() != nil {
		t.Fatal("a second Load while one is in flight")
	}
	// Names asked for while a Load flies wait for the next one.
	if g2 := s.WantLoad(0, []byte("k3")); g2 != g+1 {
		t.Fatalf("a name asked for during a Load waits for %d, want %d", g2, g+1)
	}
	if s.WantLoad(0, []byte("k1")) != g {
		t.Fatal("a name of the Load in flight waits for another one")
	}
	first.Run()
	if got := s.EndLoad(first); got != g || !held("k1") || !held("k2") {
		t.Fatalf("EndLoad: %d; k1 held %v, k2 held %v", got, held("k1"), held("k2"))
	}
	reads := s.mem.reads
	if get("k1") != "v1" || get("k2") != "v2" || s.mem.reads != reads {
		t.Fatalf("after the Load: k1 %q, k2 %q, %d reads", get("k1"), get("k2"), s.mem.reads-reads)
	}

	// Names SQLite cannot hold are not asked for.
	if s.WantLoad(0, []byte("k1")) != 0 {
		t.Fatal("a held name is asked for")
	}

	// A name written while its Load is under way: memory's value stands.
	next := s.StartLoad() // k3
	cmd(func() { must(t, s.SetString(0, []byte("k3"), []byte("new"), 0, false)) })
	next.Run()
	s.EndLoad(next)
	if v := get("k3"); v != "new" {
		t.Fatalf("k3 = %q after a Load that read it before a write", v)
	}

	// A name memory let go while its Load was under way: what the Load
	// read may be older than the commit that let it go, and is dropped.
	s.WantLoad(0, []byte("k4"))
	l := s.StartLoad()
	l.Run()
	cmd(func() { must(t, s.SetString(0, []byte("k4"), []byte("newer"), 0, false)) })
	_, _, err = s.Commit()
	must(t, err)
	e := s.mem.dbs[0].keys.get("k4")
	s.mem.forget(e)
	s.EndLoad(l)
	if held("k4") {
		t.Fatal("a Load that read k4 before its last commit put it in memory")
	}
	if v := get("k4"); v != "newer" {
		t.Fatalf("k4 = %q", v)
	}

	// A database operation since the Load began drops what it read.
	s.WantLoad(0, []byte("k5"))
	l = s.StartLoad()
	l.Run()
	cmd(func() { must(t, s.FlushDB(0)) })
	s.EndLoad(l)
	if v := get("k5"); v != "" {
		t.Fatalf("k5 = %q after FLUSHDB", v)
	}
	// While the operation waits for its flush, batches are not held.
	if s.WantLoad(0, []byte("k6")) != 0 {
		t.Fatal("a name asked for with a database operation waiting for its flush")
	}
}
