package actor

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Flag is a command flag. The set and its names are Redis's (COMMAND INFO
// reports them); Cellar's dispatcher acts on them: Write commands may need a
// commit and are refused when writes are failing, Blocking commands end a
// batch in the loop, NoAuth commands run before AUTH, and so on.
type Flag uint32

const (
	FlagWrite Flag = 1 << iota
	FlagReadonly
	FlagDenyOOM
	FlagModule
	FlagAdmin
	FlagPubSub
	FlagNoScript
	FlagBlocking
	FlagLoading
	FlagStale
	FlagSkipMonitor
	FlagSkipSlowlog
	FlagAsking
	FlagFast
	FlagNoAuth
	FlagMayReplicate
	FlagSentinel
	FlagOnlySentinel
	FlagNoMandatoryKeys
	FlagProtected
	FlagNoAsyncLoading
	FlagNoMulti
	FlagMovableKeys
	FlagAllowBusy
)

// flagNames maps metadata spellings to flags, in COMMAND INFO's order; a
// name "" is a flag Redis keeps out of COMMAND INFO.
var flagNames = []struct {
	flag       Flag
	meta, info string
}{
	{FlagWrite, "WRITE", "write"},
	{FlagReadonly, "READONLY", "readonly"},
	{FlagDenyOOM, "DENYOOM", "denyoom"},
	{FlagModule, "MODULE", "module"},
	{FlagAdmin, "ADMIN", "admin"},
	{FlagPubSub, "PUBSUB", "pubsub"},
	{FlagNoScript, "NOSCRIPT", "noscript"},
	{FlagBlocking, "BLOCKING", "blocking"},
	{FlagLoading, "LOADING", "loading"},
	{FlagStale, "STALE", "stale"},
	{FlagSkipMonitor, "SKIP_MONITOR", "skip_monitor"},
	{FlagSkipSlowlog, "SKIP_SLOWLOG", "skip_slowlog"},
	{FlagAsking, "ASKING", "asking"},
	{FlagFast, "FAST", "fast"},
	{FlagNoAuth, "NO_AUTH", "no_auth"},
	{FlagMayReplicate, "MAY_REPLICATE", ""},
	{FlagSentinel, "SENTINEL", ""},
	{FlagOnlySentinel, "ONLY_SENTINEL", ""},
	{FlagNoMandatoryKeys, "NO_MANDATORY_KEYS", "no_mandatory_keys"},
	{FlagProtected, "PROTECTED", ""},
	{FlagNoAsyncLoading, "NO_ASYNC_LOADING", "no_async_loading"},
	{FlagNoMulti, "NO_MULTI", "no_multi"},
	{FlagMovableKeys, "MOVABLE_KEYS", "movablekeys"},
	{FlagAllowBusy, "ALLOW_BUSY", "allow_busy"},
}

// aclCategories is Redis's category list, in the order COMMAND INFO uses.
var aclCategories = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
	"blocking", "dangerous", "connection", "transaction", "scripting",
}

// Handler runs one command. It writes the reply to c.w and returns nil, or
// returns an error that the dispatcher turns into the error reply (see
// errors.go). It runs on the actor goroutine.
type Handler func(c *Ctx) error

// Command is one entry of the command table. A family file declares Name,
// Summary, Handler (and Subs for a container); everything else comes from
// the metadata in commands.json when the table is built.
type Command struct {
	Name    string // lower case; "client|list" for a subcommand
	Summary string // Cellar's own one-line description (COMMAND DOCS)
	Handler Handler
	Subs    []*Command
	// Defers marks a command whose reply waits for background work (SAVE
	// waits for its snapshot): like a blocking command it travels alone in
	// its batch and the loop reads nothing more until it has its reply.
	Defers bool
	// Immediate marks a command that runs at once inside MULTI instead of
	// being queued (MULTI, EXEC, DISCARD, WATCH, QUIT, RESET), as Redis
	// exempts them; what MULTI refuses is the metadata's no_multi flag.
	Immediate bool
	// InSubscribed marks a command a RESP2 client may run while it is
	// subscribed. The table sets it for the commands flagged both pubsub
	// and noscript (the (P|S)(UN)SUBSCRIBE family); a family spec sets it
	// for the others Redis allows (PING, QUIT, RESET).
	InSubscribed bool
	// Authenticates marks AUTH, HELLO and RESET, which change whether the
	// client is authenticated: before authentication the loop sends one
	// in a batch of its own and waits for its reply before parsing on, so
	// the requests after it are held to the right limits.
	Authenticates bool
	// getKeys is the command's own finder of its keys (Redis's
	// getkeys_proc), for what its key specs cannot say (findKeys).
	getKeys func(argv [][]byte) []foundKey
	// redact, when set, says whether argument i of a call is a secret that
	// logs (SLOWLOG, MONITOR) must not keep: slowlog.go, redacted.
	redact func(args [][]byte, i int) bool
	// script: it runs a script (EVAL*, FCALL*). The commands its script
	// calls are a script's (Actor.inScript: MONITOR, SLOWLOG, client-side
	// tracking, SORT), MONITOR shows it before them (feedScript), and
	// client-side tracking follows what its script calls, never the
	// command itself. It implies runsScript.
	script bool
	// flagsFor, when set, is the command's flags for one call (args), for
	// a command whose call may declare its own (a script's or function's
	// flags): Redis's getCommandFlags, read through runFlags.
	flagsFor func(a *Actor, cmd *Command, args [][]byte) Flag
	// runsScript: it may run a script (EVAL*, FCALL*, EXEC of a queue
	// holding one), which can run past busy-reply-threshold: the round
	// is cut before its batch (round.go, cutRound).
	runsScript bool
	// noTouch: running it leaves its keys' access clocks alone (access.go):
	// Redis looks them up with LOOKUP_NOTOUCH or not at all. A script's
	// (script) are never touched: the commands it calls touch theirs.
	noTouch bool
	// touchAlways: it touches its keys even on a connection that turned
	// CLIENT NO-TOUCH on (TOUCH, as in Redis).
	touchAlways bool
	// runsQueue: it runs the connection's MULTI queue (EXEC), so the
	// checks made before a command runs see the queue's flags too
	// (Actor.callIs), and a refusal ends the transaction (Actor.reject).
	runsQueue bool
	// absoluteForm, for a command whose effect depends on when it ran
	// (a relative expiry), is the command Redis 7.0 propagates for it to
	// replicas, an absolute form (redisForm), or nil to send the record.
	absoluteForm func(e effect) [][]byte
	// protectedBy is, for a PROTECTED command, the enable-*-command
	// setting that allows it (protectedText).
	protectedBy protection
	// whileBusy, for a command a loop answers while a script is busy
	// (loop/conn.go, busy; Redis's allow_busy), applies to the session,
	// after the script, what the loop's answer said (Actor.BusyCommand);
	// nil for the others.
	whileBusy func(a *Actor, s *session, cmd *Command, args [][]byte)
	// switchesDB: it may change the connection's database (SELECT,
	// RESET), so the keys the commands after it in a batch name are not
	// known to be of the database before it (loads.go, batchLoads).
	switchesDB bool
	// channels is which of its arguments are channels that the ACL
	// checks (acl.go, checkCmd).
	channels channelArgs
	// events is what the command's writes are called in keyspace
	// notifications (notify.go), nil for a command with no events of its own.
	events *eventSpec

	Arity              int
	Flags              Flag
	FirstKey, LastKey  int // the legacy key range of COMMAND INFO
	KeyStep            int
	subs               map[string]*Command
	meta               *cmdMeta
	parent             *Command
	containerShortName string
	// idx numbers every command and subcommand, for per-command
	// statistics (INFO commandstats).
	idx int
}

// Is reports whether the command has flag f.
func (c *Command) Is(f Flag) bool { return c.Flags&f != 0 }

// ShortName is the name without its container ("list" for "client|list").
func (c *Command) ShortName() string {
	if c.parent != nil {
		return c.containerShortName
	}
	return c.Name
}

// families are the command families' tables, in registration order.
// Each family registers its table from the package variable that holds it,
// in its own file (registerCommands), so the core names none of them; a
// new family does the same and edits nothing here. Package variables are
// initialized before any init function runs, so buildTable (called from
// init) sees every table.
var families [][]*Command

// registerCommands adds a family's table to the command table and returns
// it. It is only called from package variables' initializers.
func registerCommands(cmds []*Command) []*Command {
	families = append(families, cmds)
	return cmds
}

// CommandNames lists the full names of every implemented command and
// subcommand (for cmdgen).
func CommandNames() []string {
	var names []string
	for _, f := range families {
		for _, c := range f {
			names = append(names, c.Name)
			for _, s := range c.Subs {
				names = append(names, s.Name)
			}
		}
	}
	return names
}

//go:embed commands.json
var commandsJSON []byte

// cmdMeta is one command's metadata as cmdgen wrote it.
type cmdMeta struct {
	Name            string     `json:"name"`
	Container       string     `json:"container"`
	Arity           int        `json:"arity"`
	Flags           []string   `json:"command_flags"`
	ACL             []string   `json:"acl_categories"`
	Tips            []string   `json:"command_tips"`
	KeySpecs        []keySpec  `json:"key_specs"`
	Arguments       []argument `json:"arguments"`
	Group           string     `json:"group"`
	Since           string     `json:"since"`
	Complexity      string     `json:"complexity"`
	DocFlags        []string   `json:"doc_flags"`
	History         [][]string `json:"history"`
	DeprecatedSince string     `json:"deprecated_since"`
	ReplacedBy      string     `json:"replaced_by"`

	categories []string // resolved, with Redis's implicit ones
}

type keySpec struct {
	Notes       string   `json:"notes"`
	Flags       []string `json:"flags"`
	BeginSearch struct {
		Index *struct {
			Pos int `json:"pos"`
		} `json:"index"`
		Keyword *struct {
			Keyword   string `json:"keyword"`
			StartFrom int    `json:"startfrom"`
		} `json:"keyword"`
	} `json:"begin_search"`
	FindKeys struct {
		Range *struct {
			LastKey int `json:"lastkey"`
			Step    int `json:"step"`
			Limit   int `json:"limit"`
		} `json:"range"`
		KeyNum *struct {
			KeyNumIdx int `json:"keynumidx"`
			FirstKey  int `json:"firstkey"`
			Step      int `json:"step"`
		} `json:"keynum"`
	} `json:"find_keys"`
}

type argument struct {
	Name            string     `json:"name"`
	Type            string     `json:"type"`
	KeySpecIndex    *int       `json:"key_spec_index"`
	Token           string     `json:"token"`
	Since           string     `json:"since"`
	DeprecatedSince string     `json:"deprecated_since"`
	Optional        bool       `json:"optional"`
	Multiple        bool       `json:"multiple"`
	MultipleToken   bool       `json:"multiple_token"`
	Arguments       []argument `json:"arguments"`
}

// table is the command table: top-level commands by lower-case name.
type table struct {
	cmds map[string]*Command
	list []*Command // sorted by name
	n    int        // commands and subcommands (Command.idx)
	err  error      // metadata problems; New refuses to start with them
}

// commands is built once, at package initialisation, from the family specs
// and the embedded metadata; it never changes afterwards. (It cannot be a
// plain variable initialiser: COMMAND's handlers read the table they are
// part of.)
var commands *table

func init() { commands = buildTable() }

func buildTable() *table {
	t := &table{cmds: map[string]*Command{}}
	var metas []cmdMeta
	if err := json.Unmarshal(commandsJSON, &metas); err != nil {
		t.err = fmt.Errorf("actor: commands.json: %w", err)
		return t
	}
	byName := map[string]*cmdMeta{}
	for i := range metas {
		byName[metas[i].Name] = &metas[i]
	}
	var problems, twice, unguarded []string
	apply := func(c *Command) {
		m := byName[c.Name]
		if m == nil {
			problems = append(problems, c.Name)
			return
		}
		c.meta = m
		c.Arity = m.Arity
		for _, f := range m.Flags {
			for _, fn := range flagNames {
				if fn.meta == f {
					c.Flags |= fn.flag
				}
			}
		}
		c.resolveKeys()
		if c.Is(FlagProtected) != (c.protectedBy != 0) {
			unguarded = append(unguarded, c.Name)
		}
		c.events = notifyEvents[c.Name]
		c.runsScript = c.runsScript || c.script
		if c.Is(FlagPubSub) && c.Is(FlagNoScript) {
			c.InSubscribed = true
		}
		m.categories = implicitCategories(c)
	}
	for _, fam := range families {
		for _, c := range fam {
			apply(c)
			c.idx, t.n = t.n, t.n+1
			if len(c.Subs) > 0 {
				c.subs = map[string]*Command{}
				for _, s := range c.Subs {
					apply(s)
					s.idx, t.n = t.n, t.n+1
					s.parent = c
					s.containerShortName = strings.TrimPrefix(s.Name, c.Name+"|")
					c.subs[s.containerShortName] = s
				}
			}
			if t.cmds[c.Name] != nil {
				twice = append(twice, c.Name)
			}
			t.cmds[c.Name] = c
			t.list = append(t.list, c)
		}
	}
	sort.Slice(t.list, func(i, j int) bool { return t.list[i].Name < t.list[j].Name })
	switch {
	case len(twice) > 0:
		t.err = fmt.Errorf("actor: commands registered twice: %s", strings.Join(twice, ", "))
	case len(problems) > 0:
		t.err = fmt.Errorf("actor: no metadata for %s (run make commands)", strings.Join(problems, ", "))
	case len(unguarded) > 0:
		t.err = fmt.Errorf("actor: PROTECTED and protectedBy disagree for %s", strings.Join(unguarded, ", "))
	}
	return t
}

// resolveKeys derives the legacy first/last/step key range and the
// movablekeys flag from the key specs, the way Redis does for COMMAND INFO.
func (c *Command) resolveKeys() {
	specs := c.meta.KeySpecs
	if len(specs) == 0 {
		return
	}
	isRange := func(k keySpec) bool { return k.BeginSearch.Index != nil && k.FindKeys.Range != nil }
	incomplete := func(k keySpec) bool {
		for _, f := range k.Flags {
			if f == "INCOMPLETE" {
				return true
			}
		}
		return false
	}
	if len(specs) == 1 && isRange(specs[0]) {
		k := specs[0]
		c.FirstKey = k.BeginSearch.Index.Pos
		c.LastKey = k.FindKeys.Range.LastKey
		if c.LastKey >= 0 {
			c.LastKey += c.FirstKey
		}
		c.KeyStep = k.FindKeys.Range.Step
		if incomplete(k) {
			c.Flags |= FlagMovableKeys
		}
		return
	}
	first, last, prevLast := int(^uint(0)>>1), 0, 0
	for _, k := range specs {
		if !isRange(k) {
			c.Flags |= FlagMovableKeys
			continue
		}
		pos := k.BeginSearch.Index.Pos
		if k.FindKeys.Range.Step != 1 || (prevLast != 0 && prevLast != pos-1) {
			c.Flags |= FlagMovableKeys
			continue
		}
		if incomplete(k) {
			c.Flags |= FlagMovableKeys
		}
		first = min(first, pos)
		abs := k.FindKeys.Range.LastKey
		if abs >= 0 {
			abs += pos
		}
		if uint(abs) > uint(last) { // unsigned, as Redis compares: -1 wins
			last = abs
		}
		prevLast = last
	}
	if first == int(^uint(0)>>1) {
		c.Flags |= FlagMovableKeys
		return
	}
	c.FirstKey, c.LastKey, c.KeyStep = first, last, 1
}

// implicitCategories adds the categories Redis derives from flags.
func implicitCategories(c *Command) []string {
	has := map[string]bool{}
	for _, a := range c.meta.ACL {
		has[strings.ToLower(a)] = true
	}
	if c.Is(FlagWrite) {
		has["write"] = true
	}
	if c.Is(FlagReadonly) && !has["scripting"] {
		has["read"] = true
	}
	if c.Is(FlagAdmin) {
		has["admin"], has["dangerous"] = true, true
	}
	if c.Is(FlagPubSub) {
		has["pubsub"] = true
	}
	if c.Is(FlagFast) {
		has["fast"] = true
	}
	if c.Is(FlagBlocking) {
		has["blocking"] = true
	}
	if !has["fast"] {
		has["slow"] = true
	}
	var out []string
	for _, cat := range aclCategories {
		if has[cat] {
			out = append(out, "@"+cat)
		}
	}
	return out
}

// Lookup finds a top-level command by name, case-insensitively, without
// allocating. It is safe from any goroutine (the table never changes).
func Lookup(name []byte) *Command { return lookupFolded(commands.cmds, name) }

// lookupFolded finds name in a table of lower-case names, in any case,
// without allocating (no command name is longer than 32 bytes).
func lookupFolded(table map[string]*Command, name []byte) *Command {
	if len(name) > 32 {
		return nil
	}
	var lower [32]byte
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		lower[i] = ch
	}
	return table[string(lower[:len(name)])]
}

// sub finds a subcommand of a container, case-insensitively.
func (c *Command) sub(name []byte) *Command {
	if c.subs == nil {
		return nil
	}
	return lookupFolded(c.subs, name)
}

// arityOK checks argc against the command's arity: exact when positive, a
// minimum when negative.
func (c *Command) arityOK(argc int) bool {
	if c.Arity > 0 {
		return argc == c.Arity
	}
	return argc >= -c.Arity
}

// IsBlocking reports whether the command may park its connection (a
// blocking command, or one whose reply waits for background work); the
// loop sends it in a batch of its own and waits for its reply before
// parsing on, as Redis stops reading from a blocked client.
func IsBlocking(c *Command) bool { return c != nil && (c.Is(FlagBlocking) || c.Defers) }

// RunsScript reports whether c may run a script (its batch says so:
// Batch.Scripts).
func RunsScript(c *Command) bool { return c != nil && c.runsScript }

// runFlags is cmd's flags for this call (args): Redis's getCommandFlags.
// A command's own flagsFor may answer for the call (a script that
// declares its flags); the others keep the table's. CLIENT PAUSE WRITE
// and MULTI read them.
func (a *Actor) runFlags(cmd *Command, args [][]byte) Flag {
	if cmd.flagsFor != nil {
		return cmd.flagsFor(a, cmd, args)
	}
	return cmd.Flags
}

// lookupFull finds a command by full name: "get" or "client|list".
func lookupFull(name []byte) *Command {
	n := lower(name)
	if i := strings.IndexByte(n, '|'); i >= 0 {
		parent := commands.cmds[n[:i]]
		if parent == nil {
			return nil
		}
		return parent.subs[n[i+1:]]
	}
	return commands.cmds[n]
}
