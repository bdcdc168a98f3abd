package storage

import (
	"path/filepath"
	"testing"
)

// Function libraries are stored, replaced, deleted and flushed in the open
// transaction, survive a reopen, and each write records a Functions change
// (so the command that made it reaches the redo log).
func TestFunctionLibraries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cellar.db")
	s, err := Open(Options{Path: path})
	must(t, err)
	kinds := func() []Change {
		var ks []Change
		for _, tc := range s.Touched() {
			ks = append(ks, tc.Kind)
		}
		s.ResetTouched()
		return ks
	}
	inTx(t, s, func() {
		must(t, s.SaveFunctionLibrary("b", []byte("code b")))
		must(t, s.SaveFunctionLibrary("a", []byte("code a")))
		must(t, s.SaveFunctionLibrary("a", []byte("code a2")))
		if ks := kinds(); len(ks) != 3 || ks[0] != Functions {
			t.Fatalf("changes %v", ks)
		}
	})
	must(t, s.Close())
	s, err = Open(Options{Path: path})
	must(t, err)
	defer s.Close()
	libs, err := s.FunctionLibraries()
	must(t, err)
	if len(libs) != 2 || libs[0].Name != "a" || string(libs[0].Code) != "code a2" || libs[1].Name != "b" {
		t.Fatalf("libraries %+v", libs)
	}
	inTx(t, s, func() {
		must(t, s.DeleteFunctionLibrary("a"))
		libs, err := s.FunctionLibraries()
		must(t, err)
		if len(libs) != 1 || libs[0].Name != "b" {
			t.Fatalf("after delete: %+v", libs)
		}
		must(t, s.FlushFunctionLibraries())
		libs, err = s.FunctionLibraries()
		must(t, err)
		if len(libs) != 0 {
			t.Fatalf("after flush: %+v", libs)
		}
		if ks := kinds(); len(ks) != 2 {
			t.Fatalf("changes %v", ks)
		}
	})
}
