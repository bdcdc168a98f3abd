package storage

import (
	"path/filepath"
	"testing"
)

// The field-expiry sweep of the in-memory engine reaches hashes that only
// SQLite holds (let go of, or never loaded since a restart): a due field
// goes, the rest stays, and a hash left empty goes with its last field.
func TestMemFieldSweepReachesSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	s := openMemAt(t, path, 0)
	for _, key := range []string{"h", "gone"} {
		c, err := s.OpenOrCreateColl(0, []byte(key), TypeHash)
		if err != nil {
			t.Fatal(err)
		}
		s.HashSet(c, []byte("due"), []byte("1"), HashReplace)
		s.HashSetFieldExpiry(c, []byte("due"), 1_000_500)
		if key == "h" {
			s.HashSet(c, []byte("stays"), []byte("2"), HashReplace)
		}
		s.EndCommand()
	}
	if _, _, err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openMemAt(t, path, 0) // nothing in memory
	defer s.Close()
	s.Now = 1_000_600
	n, err := s.SweepExpiredFields(10)
	if err != nil || n != 2 {
		t.Fatalf("the sweep expired fields of %d hashes (%v), want 2", n, err)
	}
	s.EndCommand()
	if _, _, err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	fields := 0
	for _, tc := range s.Touched() {
		if tc.Kind == FieldsExpired {
			fields++
		}
	}
	if fields != 2 {
		t.Fatalf("%d FieldsExpired records, want 2", fields)
	}
	s.Close()
	s = openMemAt(t, path, 0)
	defer s.Close()
	s.Now = 1_000_600
	if got := s.DBSize(0); got != 1 {
		t.Fatalf("DBSIZE %d after the sweep, want 1 (the emptied hash gone)", got)
	}
	c, err := s.OpenColl(0, []byte("h"), TypeHash)
	if err != nil || c == nil || c.Len != 1 {
		t.Fatalf("h after the sweep: %+v %v", c, err)
	}
	if ok, _ := s.HashHas(c, []byte("due")); ok {
		t.Fatal("the due field outlived the sweep")
	}
}
