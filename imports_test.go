package cellar

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// importRules is each package's allowed imports among Cellar's own
// (docs/architecture.md, "The shape"): data flows one way, from the
// sockets through the actor to storage, and the leaves know nothing of
// the server. Any package may use the leaf helpers under internal/ (in
// tests: internal/wait). A package not listed here fails the test until
// it is.
var importRules = map[string][]string{
	"":                     {"actor", "loop", "offload", "ops", "proto", "replica", "storage", "storage/redo"},
	"cmd/cellar":           {"", "internal/keydesc"},
	"loop":                 {"actor", "proto"},
	"replica":              {"actor", "proto", "rdb", "storage"},
	"ops":                  {"actor", "offload"},
	"actor":                {"migration", "offload", "proto", "rdb", "storage", "storage/redo"},
	"actor/cmdgen":         {"actor"},
	"storage":              {"storage/object"},
	"storage/object":       {},
	"storage/redo":         {},
	"offload":              {},
	"proto":                {},
	"rdb":                  {},
	"migration":            {},
	"bench":                {"proto"}, // a client of the servers it measures
	"bench/search":         {},
	"scripts/clientsuites": {},
	"internal/keydesc":     {},
	"internal/wait":        {},
	"internal/redistest":   {"internal/keydesc", "internal/wait"},
	"tests":                nil, // the black-box suite may import anything
}

// TestImportRules reads every package's imports (go list) and checks them
// against importRules, test files included.
func TestImportRules(t *testing.T) {
	const module = "github.com/cellar-db/cellar"
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goBin, "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		allowed, ok := importRules[pkg]
		if !ok {
			t.Errorf("package %q has no import rule: add it to importRules", f[0])
			continue
		}
		seen++
		if pkg == "tests" {
			continue
		}
		for _, imp := range f[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if dep != pkg && !slices.Contains(allowed, dep) && !strings.HasPrefix(dep, "internal/") {
				t.Errorf("%s imports %s, which its rule does not allow (allowed: %q)", f[0], imp, allowed)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list named only %d known packages:\n%s", seen, out)
	}
}
