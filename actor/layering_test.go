package actor

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// layerFiles classifies every non-test file of package actor as core or
// a family. The core is the machinery every command passes through:
// rounds, dispatch and frames, sessions, waiters, durability and the
// redo log, replication, MULTI, Pub/Sub, tracking, ACL checks,
// notifications, the keys touched step, housekeeping, INFO, the registry,
// the command table and the kit_* helpers. A family is a group of commands that registers into it.
// A file missing here fails the test, so that a new file is classified.
var layerFiles = map[string]string{
	// core
	"access.go": "core", "acl.go": "core", "actor.go": "core", "api.go": "core",
	"blocking.go": "core", "clientmem.go": "core", "command.go": "core",
	"configparams.go": "core", "connection.go": "core", "ctx.go": "core",
	"dispatch.go": "core", "doc.go": "core", "durability.go": "core",
	"rdbobject.go": "core",
	"effects.go":   "core", "errors.go": "core", "failover.go": "core",
	"float.go": "core", "fullsync.go": "core", "gate.go": "core",
	"getkeys.go": "core", "glob.go": "core", "histogram.go": "core",
	"housekeeping.go": "core", "gctune.go": "core", "info.go": "core", "kit_args.go": "core",
	"kit_reply.go": "core", "latency.go": "core", "loads.go": "core",
	"lookups.go": "core", "master.go": "core", "monitor.go": "core",
	"multi.go": "core", "notify.go": "core", "observe.go": "core",
	"ops.go": "core", "pause.go": "core", "persistence.go": "core",
	"physical.go": "core", "pubsub.go": "core", "redolog.go": "core",
	"registry.go": "core", "rename.go": "core", "replication.go": "core",
	"replstate.go": "core", "replybuf.go": "core", "round.go": "core", "shutdown.go": "core",
	"slowlog.go": "core", "touched.go": "core", "tracking.go": "core",

	// families
	"aclcmd.go": "acl", "aclcheck.go": "core", "bitmaps.go": "strings", "busy.go": "scripting",
	"cluster.go": "server", "collections.go": "collections", "debug.go": "server",
	"digest.go": "server", "dump.go": "keys", "fndump.go": "scripting",
	"functions.go": "scripting", "geo.go": "zsets", "geohash.go": "zsets",
	"geomath.go": "zsets", "hashes.go": "hashes", "hashfe.go": "hashes",
	"hyperloglog.go": "strings", "keys.go": "keys", "lcs.go": "strings",
	"lists.go": "lists", "lua.go": "scripting", "lualibs.go": "scripting",
	"memory.go": "server", "migrate.go": "keys", "module.go": "server",
	"scripting.go": "scripting", "search.go": "search",
	"searchaggregate.go": "search", "searchexpr.go": "search",
	"searchextra.go": "search", "searchquery.go": "search",
	"searchtop.go": "search", "server.go": "server", "sets.go": "sets",
	"sort.go": "keys", "streams.go": "streams", "strings.go": "strings",
	"zsetops.go": "zsets", "zsets.go": "zsets",
}

// TestCoreNamesNoFamily keeps package actor's core from naming any
// command family: it lists the distinct (core file, identifier) pairs
// where a core file uses a package-level name - a func, type, var or
// const, or a method called through a selector - that only family files
// declare. Each is an arrow back up: a family's file could not leave the
// package without the core following it. It works on the syntax alone
// (go/parser): a name the file itself declares, or a local, is resolved
// by the parser and not counted, and a method counts only when its name
// is unexported (an exported one, Err or Done, may be the standard
// library's) and no core file declares a method or field of that name. It
// fails on each.
func TestCoreNamesNoFamily(t *testing.T) {
	for _, r := range coreToFamily(t) {
		t.Errorf("the core names a family: %s; move the helper into a kit_*.go file or the core file that needs it, put what the core must know of a command in its table entry (Command), or give the family a hook (registry.go)", r)
	}
}

// coreToFamily returns the references TestCoreNamesNoFamily reports,
// as "core.go -> name (family.go)", sorted.
func coreToFamily(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if _, ok := layerFiles[name]; !ok {
			t.Errorf("%s is in no layer: add it to layerFiles as core or a family", name)
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	for name := range layerFiles {
		if _, ok := files[name]; !ok {
			t.Errorf("layerFiles lists %s, which is no longer a file of the package", name)
		}
	}

	// Who declares what: package-level names, and method and field names.
	coreDecl := map[string]bool{}
	coreMember := map[string]bool{}
	familyDecl := map[string]string{}   // name -> a family file declaring it
	familyMethod := map[string]string{} // method name -> a family file
	for name, f := range files {
		core := layerFiles[name] == "core"
		decl := func(id *ast.Ident) {
			if id.Name == "_" || id.Name == "init" {
				return
			}
			if core {
				coreDecl[id.Name] = true
			} else if familyDecl[id.Name] == "" {
				familyDecl[id.Name] = name
			}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					decl(d.Name)
				} else if core {
					coreMember[d.Name.Name] = true
				} else if familyMethod[d.Name.Name] == "" {
					familyMethod[d.Name.Name] = name
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						decl(s.Name)
					case *ast.ValueSpec:
						for _, id := range s.Names {
							decl(id)
						}
					}
				}
			}
		}
		if core { // fields and interface methods of the core's types
			ast.Inspect(f, func(n ast.Node) bool {
				if fl, ok := n.(*ast.FieldList); ok {
					for _, fd := range fl.List {
						for _, id := range fd.Names {
							coreMember[id.Name] = true
						}
					}
				}
				return true
			})
		}
	}

	seen := map[string]bool{}
	var refs []string
	for name, f := range files {
		if layerFiles[name] != "core" {
			continue
		}
		imports := map[string]bool{}
		for _, im := range f.Imports {
			p := strings.Trim(im.Path.Value, `"`)
			if im.Name != nil {
				imports[im.Name.Name] = true
			} else {
				imports[p[strings.LastIndex(p, "/")+1:]] = true
			}
		}
		add := func(id, from string) {
			r := name + " -> " + id + " (" + from + ")"
			if !seen[r] {
				seen[r] = true
				refs = append(refs, r)
			}
		}
		skip := map[*ast.Ident]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				skip[n.Sel] = true
				if x, ok := n.X.(*ast.Ident); ok && x.Obj == nil && imports[x.Name] {
					skip[x] = true
					return true
				}
				if from := familyMethod[n.Sel.Name]; from != "" && !coreMember[n.Sel.Name] && !ast.IsExported(n.Sel.Name) {
					add("."+n.Sel.Name, from)
				}
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && k.Obj == nil {
					skip[k] = true // a field name in a composite literal
				}
			case *ast.Ident:
				if skip[n] || n.Obj != nil {
					return true
				}
				if from := familyDecl[n.Name]; from != "" && !coreDecl[n.Name] {
					add(n.Name, from)
				}
			}
			return true
		})
	}
	sort.Strings(refs)
	return refs
}
