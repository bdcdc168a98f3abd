// Command cmdgen writes actor/commands.json: the Redis command metadata
// (arity, flags, ACL categories, key specs, arguments, group, since,
// complexity, history) for exactly the commands Cellar implements, taken
// from Redis's published per-command JSON files plus the hand-kept facts in
// extra/ for commands newer than that set. Redis's summaries are prose and
// are left out; Cellar writes its own next to each handler.
//
//	make commands
//
// runs it with -src set to the directory of Redis 7.0's command JSON files
// (see the Makefile). Run it after adding a command: until you do,
// actor.New refuses to start ("no metadata for ... (run make commands)"),
// so every test that starts a server fails (docs/adding-a-command.md,
// step 4).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cellar-db/cellar/actor"
)

func main() {
	src := flag.String("src", "", "directory of Redis's command JSON files (required; make commands names it)")
	extra := flag.String("extra", "actor/cmdgen/extra", "directory of hand-kept command JSON files")
	out := flag.String("out", "actor/commands.json", "file to write")
	flag.Parse()
	if *src == "" {
		fmt.Fprintln(os.Stderr, "cmdgen: -src is required")
		os.Exit(2)
	}

	all := map[string]map[string]any{}
	for _, dir := range []string{*src, *extra} {
		if err := load(dir, all); err != nil {
			fmt.Fprintln(os.Stderr, "cmdgen:", err)
			os.Exit(1)
		}
	}
	names := actor.CommandNames()
	sort.Strings(names)
	var buf bytes.Buffer
	buf.WriteString("[\n")
	missing := 0
	for i, name := range names {
		m, ok := all[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "cmdgen: no metadata for %q\n", name)
			missing++
			continue
		}
		for _, prose := range []string{"summary", "function", "get_keys_function"} {
			delete(m, prose)
		}
		m["name"] = name
		line, err := json.Marshal(m)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cmdgen:", err)
			os.Exit(1)
		}
		buf.Write(line)
		if i < len(names)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("]\n")
	if missing > 0 {
		os.Exit(1)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "cmdgen:", err)
		os.Exit(1)
	}
	fmt.Printf("cmdgen: wrote %d commands to %s\n", len(names), *out)
}

// load reads every *.json in dir into all, keyed by Cellar's full name:
// "get", or "client|list" for a subcommand.
func load(dir string, all map[string]map[string]any) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no JSON files in %s", dir)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var doc map[string]map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for name, m := range doc {
			full := strings.ToLower(name)
			if c, ok := m["container"].(string); ok {
				full = strings.ToLower(c) + "|" + full
			}
			all[full] = m
		}
	}
	return nil
}
