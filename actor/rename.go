package actor

import (
	"fmt"
	"sort"
	"strings"
)

// Command policy (Redis's rename-command): the configuration may give a
// command another name, or none (disabled). The old name is then unknown,
// in every context (clients, MULTI, scripts); ACL rules and COMMAND keep
// using the real names, as in Redis. The table is fixed at start, so
// Actor.Lookup is safe from any goroutine.

// renames is the renamed view of the command table; nil without renames.
type renames struct {
	byName map[string]*Command // new lower-case name → command
	gone   []bool              // by Command.idx: its own name no longer works
}

// setRenames builds the view from Config.RenameCommands (old name → new
// name, "" to disable).
func (a *Actor) setRenames(m map[string]string) error {
	if len(m) == 0 {
		return nil
	}
	r := &renames{byName: map[string]*Command{}, gone: make([]bool, commands.n)}
	olds := make([]string, 0, len(m))
	for old := range m {
		olds = append(olds, old)
	}
	sort.Strings(olds)
	for _, old := range olds {
		c := Lookup([]byte(old))
		if c == nil {
			return fmt.Errorf("actor: rename_commands: no command named %q", old)
		}
		r.gone[c.idx] = true
	}
	for _, old := range olds {
		name := strings.ToLower(m[old])
		if name == "" {
			continue
		}
		if strings.ContainsAny(name, " |\t\r\n") || len(name) > 32 {
			return fmt.Errorf("actor: rename_commands: %q is not a usable command name", m[old])
		}
		if c := Lookup([]byte(name)); (c != nil && !r.gone[c.idx]) || r.byName[name] != nil {
			return fmt.Errorf("actor: rename_commands: %s: target command name already exists", name)
		}
		r.byName[name] = Lookup([]byte(old))
	}
	a.renamed = r
	return nil
}

// Lookup is the package's Lookup through the configured renames. It is
// safe from any goroutine (the loops use it too).
func (a *Actor) Lookup(name []byte) *Command {
	c := Lookup(name)
	if a.renamed == nil {
		return c
	}
	if c != nil && !a.renamed.gone[c.idx] {
		return c
	}
	return lookupFolded(a.renamed.byName, name)
}
