package actor

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

var serverCommands = registerCommands([]*Command{
	{Name: "dbsize", Summary: "Returns the number of keys in the selected database.", Handler: cmdDBSize},
	{Name: "flushdb", Summary: "Deletes every key of the selected database.", Handler: cmdFlushDB},
	{Name: "flushall", Summary: "Deletes every key of every database.", Handler: cmdFlushAll},
	{Name: "swapdb", Summary: "Exchanges the contents of two databases.", Handler: cmdSwapDB},
	{Name: "time", Summary: "Returns the server's time as seconds and microseconds.", Handler: cmdTime},
	{Name: "info", Summary: "Reports the server's state and counters, by section.", Handler: cmdInfo},
	{Name: "command", Summary: "Describes the commands Cellar implements.", Handler: cmdCommandAll, Subs: []*Command{
		{Name: "command|count", Summary: "Returns the number of commands.", Handler: cmdCommandCount},
		{Name: "command|info", Summary: "Describes commands: arity, flags, key positions.", Handler: cmdCommandInfo},
		{Name: "command|docs", Summary: "Documents commands: summary, group, arguments.", Handler: cmdCommandDocs},
		{Name: "command|list", Summary: "Lists command names, optionally filtered.", Handler: cmdCommandList},
		{Name: "command|getkeys", Summary: "Extracts the key names of a command line.", Handler: cmdCommandGetKeys},
		{Name: "command|getkeysandflags", Summary: "Extracts the key names of a command line, with their flags.", Handler: cmdCommandGetKeysAndFlags},
		{Name: "command|help", Summary: "Lists the COMMAND subcommands.", Handler: cmdCommandHelp},
	}},
	{Name: "config", Summary: "Reads and changes settings at run time.", Subs: []*Command{
		{Name: "config|get", Summary: "Returns the settings matching patterns.", Handler: cmdConfigGet},
		{Name: "config|set", Summary: "Changes settings.", Handler: cmdConfigSet, redact: configSetRedacted},
		{Name: "config|resetstat", Summary: "Resets the counters INFO reports.", Handler: cmdConfigResetStat},
		{Name: "config|rewrite", Summary: "Writes the settings changed at run time into the configuration file.", Handler: cmdConfigRewrite},
		{Name: "config|help", Summary: "Lists the CONFIG subcommands.", Handler: cmdConfigHelp},
	}},
})

// DBSIZE
func cmdDBSize(c *Ctx) error {
	c.w.Int(c.st.DBSize(c.db))
	return nil
}

// flushMode parses the optional ASYNC|SYNC of FLUSHDB/FLUSHALL. Both run
// synchronously in Cellar: the deletes are one transaction either way.
func flushMode(c *Ctx) error {
	if len(c.args) > 2 || (len(c.args) == 2 && !c.argEq(1, "async") && !c.argEq(1, "sync")) {
		return ErrSyntax
	}
	return nil
}

// FLUSHDB [ASYNC|SYNC]
func cmdFlushDB(c *Ctx) error {
	if err := flushMode(c); err != nil {
		return err
	}
	if err := c.st.FlushDB(c.db); err != nil {
		return err
	}
	c.w.OK()
	return nil
}

// FLUSHALL [ASYNC|SYNC]
func cmdFlushAll(c *Ctx) error {
	if err := flushMode(c); err != nil {
		return err
	}
	for db := 0; db < numDBs; db++ {
		if err := c.st.FlushDB(db); err != nil {
			return err
		}
	}
	c.w.OK()
	return nil
}

// SWAPDB index1 index2
func cmdSwapDB(c *Ctx) error {
	a, ok := parseIntOK(c.args[1])
	if !ok || a < -1<<31 || a > 1<<31-1 {
		return ErrFirstDBIndex
	}
	b, ok := parseIntOK(c.args[2])
	if !ok || b < -1<<31 || b > 1<<31-1 {
		return ErrSecondDBIndex
	}
	if a < 0 || a >= numDBs || b < 0 || b >= numDBs {
		return ErrDBIndex
	}
	// Clients blocked on a key of either database may find a list there
	// now, as in Redis: the swap is recorded, and the keys touched step
	// wakes them (touched.go).
	if err := c.st.SwapDB(int(a), int(b)); err != nil {
		return err
	}
	c.w.OK()
	return nil
}

// TIME
func cmdTime(c *Ctx) error {
	now := time.Now()
	c.w.Array(2)
	c.w.BulkInt(now.Unix())
	c.w.BulkInt(int64(now.Nanosecond() / 1000))
	return nil
}

// COMMAND (no subcommand): every command's info.
func cmdCommandAll(c *Ctx) error {
	c.w.Array(len(commands.list))
	for _, cmd := range commands.list {
		writeCommandInfo(c, cmd)
	}
	return nil
}

// COMMAND COUNT
func cmdCommandCount(c *Ctx) error {
	c.w.Int(int64(len(commands.list)))
	return nil
}

// COMMAND INFO [command-name ...]
func cmdCommandInfo(c *Ctx) error {
	if len(c.args) == 2 {
		return cmdCommandAll(c)
	}
	c.w.Array(len(c.args) - 2)
	for _, name := range c.args[2:] {
		if cmd := lookupFull(name); cmd != nil {
			writeCommandInfo(c, cmd)
		} else {
			c.w.Null()
		}
	}
	return nil
}

func writeCommandInfo(c *Ctx, cmd *Command) {
	w := c.w
	w.Array(10)
	w.BulkString(cmd.Name)
	w.Int(int64(cmd.Arity))
	var flags []string
	for _, f := range flagNames {
		if f.info != "" && cmd.Is(f.flag) {
			flags = append(flags, f.info)
		}
	}
	w.Set(len(flags))
	for _, f := range flags {
		w.Simple(f)
	}
	w.Int(int64(cmd.FirstKey))
	w.Int(int64(cmd.LastKey))
	w.Int(int64(cmd.KeyStep))
	w.Set(len(cmd.meta.categories))
	for _, cat := range cmd.meta.categories {
		w.Simple(cat)
	}
	w.Set(len(cmd.meta.Tips))
	for _, t := range cmd.meta.Tips {
		w.BulkString(strings.ToLower(t))
	}
	// Redis 7.0 sends the key specs as a set, and the subcommands as an
	// array, or an empty set when there are none (RESP3 shows the types).
	w.Set(len(cmd.meta.KeySpecs))
	for _, k := range cmd.meta.KeySpecs {
		writeKeySpec(c, k)
	}
	if len(cmd.Subs) == 0 {
		w.Set(0)
		return
	}
	w.Array(len(cmd.Subs))
	for _, s := range cmd.Subs {
		writeCommandInfo(c, s)
	}
}

func writeKeySpec(c *Ctx, k keySpec) {
	w := c.w
	n := 3
	if k.Notes != "" {
		n++
	}
	w.Map(n)
	if k.Notes != "" {
		w.BulkString("notes")
		w.BulkString(k.Notes)
	}
	w.BulkString("flags")
	w.Set(len(k.Flags))
	for _, f := range keyFlagOrder { // Redis's order, whatever the JSON's
		if slices.Contains(k.Flags, f.spec) {
			w.Simple(f.reply)
		}
	}
	w.BulkString("begin_search")
	w.Map(2)
	w.BulkString("type")
	switch {
	case k.BeginSearch.Index != nil:
		w.BulkString("index")
		w.BulkString("spec")
		w.Map(1)
		w.BulkString("index")
		w.Int(int64(k.BeginSearch.Index.Pos))
	case k.BeginSearch.Keyword != nil:
		w.BulkString("keyword")
		w.BulkString("spec")
		w.Map(2)
		w.BulkString("keyword")
		w.BulkString(k.BeginSearch.Keyword.Keyword)
		w.BulkString("startfrom")
		w.Int(int64(k.BeginSearch.Keyword.StartFrom))
	default:
		w.BulkString("unknown")
		w.BulkString("spec")
		w.Map(0)
	}
	w.BulkString("find_keys")
	w.Map(2)
	w.BulkString("type")
	switch {
	case k.FindKeys.Range != nil:
		r := k.FindKeys.Range
		w.BulkString("range")
		w.BulkString("spec")
		w.Map(3)
		w.BulkString("lastkey")
		w.Int(int64(r.LastKey))
		w.BulkString("keystep")
		w.Int(int64(r.Step))
		w.BulkString("limit")
		w.Int(int64(r.Limit))
	case k.FindKeys.KeyNum != nil:
		r := k.FindKeys.KeyNum
		w.BulkString("keynum")
		w.BulkString("spec")
		w.Map(3)
		w.BulkString("keynumidx")
		w.Int(int64(r.KeyNumIdx))
		w.BulkString("firstkey")
		w.Int(int64(r.FirstKey))
		w.BulkString("keystep")
		w.Int(int64(r.Step))
	default:
		w.BulkString("unknown")
		w.BulkString("spec")
		w.Map(0)
	}
}

// COMMAND DOCS [command-name ...]
func cmdCommandDocs(c *Ctx) error {
	var list []*Command
	if len(c.args) == 2 {
		list = commands.list
	} else {
		for _, name := range c.args[2:] {
			if cmd := lookupFull(name); cmd != nil {
				list = append(list, cmd)
			}
		}
	}
	c.w.Map(len(list))
	for _, cmd := range list {
		c.w.BulkString(cmd.Name)
		writeCommandDocs(c, cmd)
	}
	return nil
}

func writeCommandDocs(c *Ctx, cmd *Command) {
	w, m := c.w, cmd.meta
	n := 2 // summary, group
	for _, present := range []bool{m.Since != "", m.Complexity != "", len(m.DocFlags) > 0,
		m.DeprecatedSince != "", m.ReplacedBy != "", len(m.History) > 0, len(m.Arguments) > 0, len(cmd.Subs) > 0} {
		if present {
			n++
		}
	}
	w.Map(n)
	w.BulkString("summary")
	w.BulkString(cmd.Summary)
	if m.Since != "" {
		w.BulkString("since")
		w.BulkString(m.Since)
	}
	w.BulkString("group")
	// Redis's metadata files spell the group "sorted_set"; COMMAND DOCS
	// answers "sorted-set".
	w.BulkString(strings.ReplaceAll(m.Group, "_", "-"))
	if m.Complexity != "" {
		w.BulkString("complexity")
		w.BulkString(m.Complexity)
	}
	if len(m.DocFlags) > 0 {
		w.BulkString("doc_flags")
		w.Set(len(m.DocFlags))
		for _, f := range m.DocFlags {
			w.Simple(strings.ToLower(f))
		}
	}
	if m.DeprecatedSince != "" {
		w.BulkString("deprecated_since")
		w.BulkString(m.DeprecatedSince)
	}
	if m.ReplacedBy != "" {
		w.BulkString("replaced_by")
		w.BulkString(m.ReplacedBy)
	}
	if len(m.History) > 0 {
		w.BulkString("history")
		w.Set(len(m.History))
		for _, h := range m.History {
			w.Array(len(h))
			for _, part := range h {
				w.BulkString(part)
			}
		}
	}
	if len(m.Arguments) > 0 {
		w.BulkString("arguments")
		writeArgs(c, m.Arguments)
	}
	if len(cmd.Subs) > 0 {
		w.BulkString("subcommands")
		w.Map(len(cmd.Subs))
		for _, s := range cmd.Subs {
			w.BulkString(s.Name)
			writeCommandDocs(c, s)
		}
	}
}

func writeArgs(c *Ctx, args []argument) {
	w := c.w
	w.Array(len(args))
	for _, a := range args {
		var flags []string
		if a.Optional {
			flags = append(flags, "optional")
		}
		if a.Multiple {
			flags = append(flags, "multiple")
		}
		if a.MultipleToken {
			flags = append(flags, "multiple_token")
		}
		n := 2
		for _, present := range []bool{a.KeySpecIndex != nil, a.Token != "", a.Since != "",
			a.DeprecatedSince != "", len(flags) > 0, a.Type == "oneof" || a.Type == "block"} {
			if present {
				n++
			}
		}
		w.Map(n)
		w.BulkString("name")
		w.BulkString(a.Name)
		w.BulkString("type")
		w.BulkString(a.Type)
		if a.KeySpecIndex != nil {
			w.BulkString("key_spec_index")
			w.Int(int64(*a.KeySpecIndex))
		}
		if a.Token != "" {
			w.BulkString("token")
			w.BulkString(a.Token)
		}
		if a.Since != "" {
			w.BulkString("since")
			w.BulkString(a.Since)
		}
		if a.DeprecatedSince != "" {
			w.BulkString("deprecated_since")
			w.BulkString(a.DeprecatedSince)
		}
		if len(flags) > 0 {
			w.BulkString("flags")
			w.Set(len(flags))
			for _, f := range flags {
				w.Simple(f)
			}
		}
		if a.Type == "oneof" || a.Type == "block" {
			w.BulkString("arguments")
			writeArgs(c, a.Arguments)
		}
	}
}

// COMMAND LIST [FILTERBY <MODULE name | ACLCAT category | PATTERN pattern>]
func cmdCommandList(c *Ctx) error {
	var keep func(*Command) bool
	switch {
	case len(c.args) == 2:
		keep = func(*Command) bool { return true }
	case len(c.args) == 5 && c.argEq(2, "filterby"):
		arg := c.args[4]
		switch {
		case c.argEq(3, "module"):
			keep = func(*Command) bool { return false }
		case c.argEq(3, "aclcat"):
			cat := "@" + lower(arg)
			keep = func(cmd *Command) bool {
				for _, k := range cmd.meta.categories {
					if k == cat {
						return true
					}
				}
				return false
			}
		case c.argEq(3, "pattern"):
			// Case-insensitive, as in Redis: names are lower case, so
			// lowering the pattern is enough (ranges included).
			pat := []byte(lower(arg))
			keep = func(cmd *Command) bool { return globMatch(pat, []byte(cmd.Name)) }
		default:
			return ErrSyntax
		}
	default:
		return ErrSyntax
	}
	var names []string
	for _, cmd := range commands.list {
		if keep(cmd) {
			names = append(names, cmd.Name)
		}
		for _, s := range cmd.Subs {
			if keep(s) {
				names = append(names, s.Name)
			}
		}
	}
	c.w.Array(len(names))
	for _, n := range names {
		c.w.BulkString(n)
	}
	return nil
}

// COMMAND HELP
func cmdCommandHelp(c *Ctx) error {
	return helpReply(c, "command", []string{
		"(no subcommand)", "    Every command's details.",
		"COUNT", "    The number of commands.",
		"INFO [<command-name> ...]", "    Details of the named commands, or of all.",
		"DOCS [<command-name> ...]", "    Documentation of the named commands, or of all.",
		"LIST [FILTERBY (MODULE <name>|ACLCAT <category>|PATTERN <pattern>)]", "    Command names, optionally filtered.",
		"GETKEYS <full-command>", "    The key names of a full command line.",
		"GETKEYSANDFLAGS <full-command>", "    The key names of a full command line, with their flags.",
		"HELP", "    This help.",
	})
}

// busyParam is busy-reply-threshold (or its alias lua-time-limit), in
// milliseconds, as Redis has it.
func (a *Actor) busyParam(name string) Param {
	return Param{Name: name, Get: func() string { return strconv.FormatInt(a.busyMs.Load(), 10) }, Set: func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			return fmt.Errorf("argument couldn't be parsed into an integer")
		case n < 0:
			return fmt.Errorf("argument must be between 0 and 9223372036854775807 inclusive")
		}
		a.busyMs.Store(n)
		return nil
	}}
}

// params lists the actor's own settings and the ones its owner supplied.
func (a *Actor) params() []Param {
	fsync := map[Durability]string{Always: "always", Everysec: "everysec", Off: "no"}
	own := []Param{
		// The role, "host port" while a replica: CONFIG REWRITE keeps it
		// (replication.go).
		{Name: "replicaof", Get: a.replicaOfValue},
		{Name: "durability", Get: func() string { return a.cfg.Durability.String() }, Set: func(v string) error {
			d, err := ParseDurability(strings.ToLower(v))
			if err == nil {
				a.cfg.Durability = d
			}
			return err
		}},
		{Name: "appendfsync", Get: func() string { return fsync[a.cfg.Durability] }, Set: func(v string) error {
			// Redis's names for Cellar's durability modes.
			for d, name := range fsync {
				if strings.EqualFold(v, name) {
					a.cfg.Durability = d
					return nil
				}
			}
			_, err := redisParamByName["appendfsync"].normalize(v)
			return err
		}},
		{Name: "appendonly", Get: func() string { return "no" }},
		a.busyParam("busy-reply-threshold"),
		// save: Cellar takes no snapshot on a schedule (the redo log makes
		// every write durable), so its save points are "" until CONFIG SET
		// gives some, which are kept and reported, as Redis reports them,
		// without effect (like the other stored parameters).
		{Name: "save", Get: func() string { return a.storedParams["save"] }, Set: func(v string) error {
			n, err := redisParamByName["save"].normalize(v)
			if err == nil {
				a.storedParams["save"] = n
			}
			return err
		}},
		{Name: "requirepass", Get: func() string { return a.cfg.RequirePass }, Set: func(v string) error {
			a.setRequirePass(v)
			return nil
		}},
		{Name: "aclfile", Get: func() string { return a.cfg.ACLFile }},
		a.protectedParam(),
		a.keepAliveParam(),
		{Name: "timeout", Get: func() string { return strconv.Itoa(a.cfg.IdleTimeout) }, Set: func(v string) error {
			nv, err := redisParamByName["timeout"].normalize(v)
			if err != nil {
				return err
			}
			a.cfg.IdleTimeout, _ = strconv.Atoi(nv)
			return nil
		}},
		{Name: "databases", Get: func() string { return strconv.Itoa(numDBs) }},
		{Name: "proto-max-bulk-len", Get: func() string { return strconv.FormatInt(a.cfg.MaxBulkLen, 10) }},
		{Name: "enable-debug-command", Get: func() string { return a.cfg.EnableDebugCommand }},
		{Name: "hz", Get: func() string { return strconv.Itoa(int(time.Second / a.cfg.SweepInterval)) }},
		{Name: "dbfilename", Get: func() string { return "cellar.db" }},
		{Name: "sqlite-max-page-count", Get: func() string {
			n, _ := a.st.MaxPageCount()
			return strconv.FormatInt(n, 10)
		}, Set: func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("must be 0 (no cap) or a number of pages, not %q", v)
			}
			if _, err = a.st.SetMaxPageCount(n); err == nil {
				a.retryFlush() // the cap may have made room
			}
			return err
		}},
		{Name: "maxmemory-clients", Get: func() string {
			if a.clientsPct != "" {
				return a.clientsPct
			}
			return strconv.FormatInt(a.cfg.Clients.Limit(), 10)
		}, Set: func(v string) error {
			if strings.HasSuffix(v, "%") {
				// A percentage of maxmemory, as Redis has it (0 while
				// maxmemory is 0: no limit); applyClientsPct.
				n, err := redisParamByName["maxmemory-clients"].normalize(v)
				if err == nil {
					a.clientsPct = n
					a.applyClientsPct()
				}
				return err
			}
			n, ok := parseMemory(v)
			switch {
			case !ok:
				return errMemoryValue
			case n != 0 && n < 1<<20:
				return errMemoryTooLow
			}
			a.setClientsLimit(n)
			a.clientsPct = ""
			return nil
		}},
		{Name: "notify-keyspace-events", Get: func() string { return notifyFlagsString(a.notifyFlags) }, Set: func(v string) error {
			flags, err := ParseNotifyFlags(v)
			if err == nil {
				a.setNotify(flags)
			}
			return err
		}},
		{Name: "tracking-table-max-keys", Get: func() string { return strconv.Itoa(a.track.maxKeys) }, Set: func(v string) error {
			n, err := strconv.Atoi(v)
			switch {
			case err != nil:
				return errNotCount
			case n < 0:
				return errCountRange
			}
			a.track.maxKeys = n
			return nil
		}},
		intParam("blocking-max-waiters-per-key", &a.cfg.MaxWaitersPerKey),
		intParam("blocking-max-total-waiters", &a.cfg.MaxTotalWaiters),
		intParam("blocking-max-keys-per-wait", &a.cfg.MaxKeysPerWait),
		intParam("blocking-wakeup-batch-size", &a.cfg.WakeupBatchSize),
	}
	return a.paramsFromTable(append(own, a.cfg.Params...))
}

// parseMemory parses a memory size as Redis's configuration does: bytes,
// or a number with a unit (k, kb, m, mb, g, gb; case-insensitive; k is
// 1000 and kb 1024).
func parseMemory(v string) (int64, bool) {
	units := []struct {
		suffix string
		mul    int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1000 * 1000 * 1000}, {"m", 1000 * 1000}, {"k", 1000}, {"b", 1}}
	low := strings.ToLower(v)
	mul := int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(low, u.suffix); ok {
			low, mul = n, u.mul
			break
		}
	}
	n, err := strconv.ParseInt(low, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mul {
		return 0, false
	}
	return n * mul, true
}

// intParam is a positive integer setting of the actor's, settable at run
// time.
func intParam(name string, v *int) Param {
	return Param{Name: name, Get: func() string { return strconv.Itoa(*v) }, Set: func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return errNotPositive
		}
		*v = n
		return nil
	}}
}

// CONFIG GET parameter [parameter ...]: each argument a glob pattern
// (case-insensitive) or a name, every match once. A name without glob
// characters is reported as it was given, and may name a hidden setting.
func cmdConfigGet(c *Ctx) error {
	params := c.a.params()
	var names []string
	var found []Param
	seen := map[string]bool{}
	add := func(name string, p Param) {
		if !seen[strings.ToLower(name)] {
			seen[strings.ToLower(name)] = true
			names, found = append(names, name), append(found, p)
		}
	}
	for _, arg := range c.args[2:] {
		pat := strings.ToLower(string(arg))
		if !strings.ContainsAny(pat, "*?[") {
			for _, p := range params {
				if p.Name == pat {
					add(string(arg), p)
					break
				}
			}
			continue
		}
		for _, p := range params {
			if !p.Hidden && globMatch([]byte(pat), []byte(p.Name)) {
				add(p.Name, p)
			}
		}
	}
	c.w.Map(len(found))
	for i, p := range found {
		c.w.BulkString(names[i])
		c.w.BulkString(p.Get())
	}
	return nil
}

// configSetRedacted says whether args[i] is the value CONFIG SET gives
// requirepass, which logs must not keep.
func configSetRedacted(args [][]byte, i int) bool {
	return i >= 3 && i%2 == 1 && eqFold(args[i-1], "requirepass")
}

// CONFIG SET parameter value [parameter value ...]: all or nothing, with
// Redis's checks in Redis's order (the first unknown, immutable or repeated
// name wins; then each value in turn, undoing the ones set before a bad
// one).
func cmdConfigSet(c *Ctx) error {
	if len(c.args)%2 != 0 {
		return ErrSyntax
	}
	byName := map[string]Param{}
	for _, p := range c.a.params() {
		byName[p.Name] = p
	}
	type change struct {
		p   Param
		old string
		val string
	}
	var changes []change
	var refused error
	for i := 2; i < len(c.args); i += 2 {
		name := lower(c.args[i])
		p, ok := byName[name]
		if !ok {
			if refused == nil {
				return errConfigSetUnknown(c.args[i])
			}
			continue
		}
		if refused != nil {
			continue
		}
		if p.Set == nil {
			rp := redisParamByName[name]
			switch {
			case rp != nil && rp.flags&protected != 0:
				refused = errConfigSetProtected(string(c.args[i]))
				continue
			case rp == nil || rp.flags&immutable != 0:
				refused = errConfigSetImmutable(string(c.args[i]))
				continue
			}
			p.Set = fixedAtStart(rp, p.Get)
		}
		for _, ch := range changes {
			if ch.p.Name == name {
				refused = errConfigSetFailed(string(c.args[i]), errDuplicateParam)
			}
		}
		changes = append(changes, change{p, p.Get(), string(c.args[i+1])})
	}
	if refused != nil {
		return refused
	}
	// Redis sets every value, then applies them (its apply functions run
	// last, in the order their settings came): a value refused as it is
	// set is reported first, wherever it is; a failure to apply only when
	// every value was set. Either way every setting goes back to what it
	// was.
	a := c.a
	a.configSetting, a.clientsLimit = true, -1
	defer func() {
		a.configSetting = false
		if a.clientsLimit >= 0 {
			a.cfg.Clients.SetLimit(a.clientsLimit)
		}
	}()
	rollback := func(n int) {
		for j := n - 1; j >= 0; j-- {
			changes[j].p.Set(changes[j].old)
		}
	}
	var applyErr error
	for i, ch := range changes {
		err := ch.p.Set(ch.val)
		var ae applyError
		switch {
		case errors.As(err, &ae):
			if applyErr == nil {
				applyErr = errConfigSetFailed(ch.p.Name, ae.error)
			}
		case err != nil:
			rollback(i)
			return errConfigSetFailed(ch.p.Name, err)
		}
	}
	if applyErr != nil {
		rollback(len(changes))
		return applyErr
	}
	c.w.OK()
	return nil
}

// fixedAtStart is the Set of a setting Redis changes at run time and
// Cellar fixes at start: a value Redis would refuse is refused with Redis's
// reason, the value the setting has is accepted (nothing changes), any
// other is refused as immutable.
func fixedAtStart(rp *redisParam, get func() string) func(string) error {
	return func(v string) error {
		n, err := rp.normalize(v)
		switch {
		case err != nil:
			return err
		case n != get() && v != get():
			return ApplyError(errFixedAtStart)
		}
		return nil
	}
}

// CONFIG REWRITE: the owner writes the current values into the YAML file
// Cellar was started with (rewrite.go in the root package), synchronously
// as Redis does; the file is small.
func cmdConfigRewrite(c *Ctx) error {
	if c.a.cfg.RewriteConfig == nil {
		return ErrNoConfigFile
	}
	values := map[string]string{}
	for _, p := range c.a.params() {
		values[p.Name] = p.Get()
	}
	if err := c.a.cfg.RewriteConfig(values); err != nil {
		return errRewriteConfig(err)
	}
	c.w.OK()
	return nil
}

// CONFIG RESETSTAT
func cmdConfigResetStat(c *Ctx) error {
	s := &c.a.stats
	s.commands, s.expiredKeys, s.keyspaceHits, s.keyspaceMisses, s.connsReceived = 0, 0, 0, 0, 0
	clear(c.a.cmdStats)
	clear(c.a.errorStats)
	c.a.errorReplies = 0
	c.w.OK()
	return nil
}

// CONFIG HELP
func cmdConfigHelp(c *Ctx) error {
	return helpReply(c, "config", []string{
		"GET <pattern> [<pattern> ...]", "    The settings whose names match a pattern, with their values.",
		"SET <name> <value> [<name> <value> ...]", "    Change settings at run time; all change or none does.",
		"RESETSTAT", "    Zero the counters INFO reports.",
		"REWRITE", "    Write the current settings into the YAML configuration file Cellar was started with.",
		"HELP", "    This help.",
	})
}
