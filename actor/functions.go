package actor

import (
	"bytes"
	"errors"
	"sort"
	"strings"

	"github.com/cellar-db/cellar/proto"
	lua "github.com/yuin/gopher-lua"
)

// FUNCTION and FCALL: Redis 7.0's function libraries. A library is Lua
// code whose first line is "#!lua name=<library>" and whose top level
// registers functions with redis.register_function; FCALL runs one of
// them as EVAL runs a script (scripting.go: one step of the actor, its
// calls nested commands, its effects one group record). Libraries are
// stored in the database (storage/functions.go) and loaded again when the
// actor starts; they live in a Lua state of their own.

var functionCommands = registerCommands([]*Command{
	{Name: "fcall", Summary: "Runs a function.", Handler: cmdFcall, script: true, flagsFor: scriptRunFlags},
	{Name: "fcall_ro", Summary: "Runs a read-only function.", Handler: cmdFcall, script: true, flagsFor: scriptRunFlags},
	{Name: "function", Summary: "Manages function libraries.", Subs: []*Command{
		{Name: "function|load", Summary: "Loads a library of functions.", Handler: cmdFunctionLoad},
		{Name: "function|delete", Summary: "Deletes a library and its functions.", Handler: cmdFunctionDelete},
		{Name: "function|list", Summary: "Lists the libraries and their functions.", Handler: cmdFunctionList},
		{Name: "function|flush", Summary: "Deletes every library.", Handler: cmdFunctionFlush},
		{Name: "function|dump", Summary: "Serialises every library.", Handler: cmdFunctionDump},
		{Name: "function|restore", Summary: "Loads libraries from a FUNCTION DUMP payload.", Handler: cmdFunctionRestore},
		{Name: "function|stats", Summary: "Reports the running function and the engine's counts.", Handler: cmdFunctionStats},
		{Name: "function|kill", Summary: "Stops the running function if it has not written.", Handler: cmdFunctionKill},
		{Name: "function|help", Summary: "Lists the FUNCTION subcommands.", Handler: cmdFunctionHelp},
	}},
})

// functions is the actor's function state.
type functions struct {
	env  *luaEnv
	libs map[string]*library
	// fns holds every library's functions by fnKey: FCALL and the
	// collision check match a function's name in any case, as Redis's
	// function dictionary does (a library's own list keeps exact names).
	fns map[string]*function
	// loading is the library whose code runs now (FUNCTION LOAD), the one
	// redis.register_function adds to; nil otherwise.
	loading *library
	// loadAPI is the redis table a library's top level sees.
	loadAPI *lua.LTable
	// loadGlobals is what a library's top level sees as its globals:
	// redis (loadAPI) alone, as in Redis 7.0, whose load runs with the
	// library API table in place of the globals (luaEngineCreate).
	loadGlobals *lua.LTable
	// flags is every function's flags by fnKey, for the loops' checks
	// while a script is busy (busyView): built when a script begins after
	// the functions changed (nil then), never changed once built.
	flags map[string]scriptFlags
}

type library struct {
	name string
	code []byte
	fns  []*function
}

type function struct {
	name, desc string
	fn         *lua.LFunction
	flags      scriptFlags
	lib        *library
}

// fnEnv is the functions' Lua state (built on first use).
func (a *Actor) fnEnv() *luaEnv {
	f := &a.scripts().fn
	if f.env == nil {
		f.env = a.newLuaEnv(true)
		full := f.env.redis
		full.RawSetString("register_function", lua.LNil)
		L := f.env.L
		load := L.NewTable()
		load.RawSetString("register_function", L.NewFunction(a.luaRegisterFunction))
		for _, k := range []string{"log", "LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING", "REDIS_VERSION", "REDIS_VERSION_NUM"} {
			load.RawSetString(k, full.RawGetString(k))
		}
		// A missing field of the load-time API fails as a missing
		// global does.
		L.SetMetatable(load, L.GetMetatable(f.env.globals))
		f.loadAPI = f.env.protect(load)
		f.loadGlobals = L.NewTable()
		f.loadGlobals.RawSetString("redis", f.loadAPI)
		L.SetMetatable(f.loadGlobals, L.GetMetatable(f.env.globals))
		f.libs = map[string]*library{}
		f.fns = map[string]*function{}
	}
	return f.env
}

// loadStoredFunctions loads the libraries stored in the database (at
// start-up). A library that no longer loads is logged and left stored.
func (a *Actor) loadStoredFunctions() error {
	libs, err := a.st.FunctionLibraries()
	if err != nil {
		return err
	}
	for _, l := range libs {
		if _, err := a.loadLibrary(l.Code, true, false); err != nil {
			a.log.Error().Err(err).Str("library", l.Name).Msg("a stored function library does not load")
		}
	}
	return nil
}

// reloadFunctions makes the libraries in memory what the database holds
// again, after the Lua state broke or a failed FUNCTION RESTORE was
// undone (a failed round's rollback reloads them through the registry:
// scripting.load). Failure paths only.
func (a *Actor) reloadFunctions() {
	if err := a.scripts().load(); err != nil {
		a.log.Error().Err(err).Msg("reloading the function libraries")
	}
}

// parseLibraryHeader reads "#!<engine> name=<name>" from code's first line,
// in Redis's order: the line splits like a redis-cli line (quotes, any
// blanks), then the options, the name's syntax and last the engine. The
// engine and the "name=" keyword match in any case ("#!LUA NAME=lib"), as
// Redis's engine dictionary and option parsing do; the name keeps its case.
func parseLibraryHeader(code []byte) (name string, rest []byte, err error) {
	if len(code) < 2 || code[0] != '#' || code[1] != '!' {
		return "", nil, ErrFnNoMetadata
	}
	end := bytes.IndexByte(code, '\n')
	if end < 0 {
		return "", nil, ErrFnBadMetadata
	}
	parts, ok := proto.SplitArgs(code[:end])
	if !ok || len(parts) == 0 {
		return "", nil, ErrFnBadMetadata
	}
	engine := string(parts[0][min(2, len(parts[0])):])
	named := false
	for _, p := range parts[1:] {
		if len(p) < 5 || !strings.EqualFold(string(p[:5]), "name=") {
			return "", nil, errFnMetadata(string(p))
		}
		if named {
			return "", nil, ErrFnNameTwice
		}
		name, named = string(p[5:]), true
	}
	if !named {
		return "", nil, ErrFnNoName
	}
	if !validFnName(name) {
		return "", nil, ErrFnLibName
	}
	if !strings.EqualFold(engine, "lua") {
		return "", nil, errFnEngine(engine)
	}
	return name, code[end:], nil
}

// fnKey is a function's key in functions.fns.
func fnKey(name string) string { return strings.ToLower(name) }

func validFnName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// loadLibrary compiles code and runs its top level, which registers its
// functions; then, if nothing collides, puts the library in place
// (replacing one of the same name if replace). store saves it in the
// database too.
func (a *Actor) loadLibrary(code []byte, replace, store bool) (string, error) {
	name, body, err := parseLibraryHeader(code)
	if err != nil {
		return "", err
	}
	f := &a.scripts().fn
	env := a.fnEnv()
	old := f.libs[name]
	if old != nil && !replace {
		return "", errFnLibExists(name)
	}
	fn, err := env.compile(body, "user_function")
	if err != nil {
		return "", errFnCompile(compileMessage(err, body))
	}
	lib := &library{name: name, code: append([]byte(nil), code...)}
	f.loading = lib
	// The globals' read-only view looks in loadGlobals during the load,
	// as Redis swaps its globals' __index (the functions it registers
	// share that view, and see every global when they run).
	view := env.env.Metatable.(*lua.LTable)
	view.RawSetString("__index", f.loadGlobals)
	err, broken := protectedCall(env.L, lua.P{Fn: fn, NRet: 0, Protect: true, Handler: env.errHandler})
	view.RawSetString("__index", env.globals)
	if broken {
		a.log.Error().Err(err).Str("library", name).Msg("the Lua interpreter failed; its state is rebuilt")
		a.reloadFunctions()
		return "", errFnRegister("ERR " + err.Error())
	}
	f.loading = nil
	env.L.SetTop(0)
	if err != nil {
		return "", errFnRegister(loadErrorText(err))
	}
	if len(lib.fns) == 0 {
		return "", ErrFnNoFunctions
	}
	for _, fn := range lib.fns {
		if other := f.fns[fnKey(fn.name)]; other != nil && other.lib != old {
			return "", errFnExists(fn.name)
		}
	}
	if store {
		if err := a.st.SaveFunctionLibrary(name, lib.code); err != nil {
			return "", err
		}
	}
	if old != nil {
		a.dropLibrary(old)
	}
	f.libs[name] = lib
	for _, fn := range lib.fns {
		f.fns[fnKey(fn.name)] = fn
	}
	f.flags = nil
	return name, nil
}

func (a *Actor) dropLibrary(l *library) {
	f := &a.scripts().fn
	for _, fn := range l.fns {
		if f.fns[fnKey(fn.name)] == fn {
			delete(f.fns, fnKey(fn.name))
		}
	}
	delete(f.libs, l.name)
	f.flags = nil
}

// loadErrorText is the message of an error a library's top level raised.
func loadErrorText(err error) string {
	t := scriptErrorText(err, "", "")
	if i := strings.Index(t, " script: "); i >= 0 {
		t = t[:i]
	}
	return t
}

// luaRegisterFunction is redis.register_function(name, callback) or
// redis.register_function{function_name=, callback=, flags=, description=}.
func (a *Actor) luaRegisterFunction(L *lua.LState) int {
	f := &a.scripts().fn
	fail := func(e ReplyError) int {
		L.Error(errorTable(L, "-"+string(e)), 0)
		return 0
	}
	if f.loading == nil {
		return fail(ErrFnRegisterOutside)
	}
	fn := &function{lib: f.loading}
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			return fail(ErrFnRegisterSingle)
		}
		var bad ReplyError
		t.ForEach(func(k, v lua.LValue) {
			ks, ok := k.(lua.LString)
			if !ok {
				bad = ErrFnRegisterUnknownArg
				return
			}
			switch string(ks) {
			case "function_name":
				s, ok := v.(lua.LString)
				if !ok {
					bad = ErrFnNameType
					return
				}
				fn.name = string(s)
			case "callback":
				c, ok := v.(*lua.LFunction)
				if !ok {
					bad = ErrFnCallbackType
					return
				}
				fn.fn = c
			case "description":
				s, ok := v.(lua.LString)
				if !ok {
					bad = ErrFnDescType
					return
				}
				fn.desc = string(s)
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					bad = ErrFnFlagsType
					return
				}
				ft.ForEach(func(_, fv lua.LValue) {
					s, ok := fv.(lua.LString)
					if !ok {
						bad = ErrFnUnknownFlag
						return
					}
					fl, err := parseScriptFlags([]string{string(s)}, func(string) error { return ErrFnUnknownFlag })
					if err != nil {
						bad = ErrFnUnknownFlag
						return
					}
					fn.flags |= fl
				})
			default:
				bad = ErrFnRegisterUnknownArg
			}
		})
		if bad != "" {
			return fail(bad)
		}
		if fn.name == "" {
			return fail(ErrFnNameMissing)
		}
		if fn.fn == nil {
			return fail(ErrFnCallbackMissing)
		}
	case 2:
		switch s := L.Get(1).(type) {
		case lua.LString:
			fn.name = string(s)
		case lua.LNumber:
			fn.name = luaNumberString(float64(s))
		default:
			return fail(ErrFnFirstArg)
		}
		c, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			return fail(ErrFnSecondArg)
		}
		fn.fn = c
	default:
		return fail(ErrFnRegisterArgs)
	}
	if !validFnName(fn.name) {
		return fail(ErrFnName)
	}
	for _, o := range f.loading.fns {
		if o.name == fn.name {
			return fail(ErrFnAlreadyInLib)
		}
	}
	f.loading.fns = append(f.loading.fns, fn)
	return 0
}

// FCALL function numkeys [key ...] [arg ...]; FCALL_RO the same,
// read-only.
func cmdFcall(c *Ctx) error {
	c.a.fnEnv()
	fn := c.a.scripts().fn.fns[fnKey(string(c.args[1]))]
	if fn == nil {
		return ErrFnNotFound // before numkeys, as Redis's fcallCommandGeneric
	}
	if _, err := parseInt(c.args[2]); err != nil {
		return ErrFcallNumKeys
	}
	nk, err := c.numKeys(2)
	if err != nil {
		return err
	}
	ro := c.cmd.Name == "fcall_ro"
	if ro && fn.flags&flagNoWrites == 0 {
		return ErrROWithWriteFlag
	}
	env := c.a.scripts().fn.env
	L := env.L
	keys := L.CreateTable(nk, 0)
	for i, k := range c.args[3 : 3+nk] {
		keys.RawSetInt(i+1, lua.LString(k))
	}
	rest := c.args[3+nk:]
	argv := L.CreateTable(len(rest), 0)
	for i, v := range rest {
		argv.RawSetInt(i+1, lua.LString(v))
	}
	c.a.runLua(c, env, fn.fn, ro || fn.flags&flagNoWrites != 0, false, fn.name, c.args[3:3+nk], keys, argv)
	return nil
}

// FUNCTION LOAD [REPLACE] function-code
func cmdFunctionLoad(c *Ctx) error {
	replace := false
	i := 2
	for ; i < len(c.args)-1; i++ {
		if !c.argEq(i, "replace") {
			return errFnUnknownOption(string(c.args[i]))
		}
		replace = true
	}
	if i != len(c.args)-1 {
		return ErrFnLoadNoCode
	}
	name, err := c.a.loadLibrary(c.args[i], replace, true)
	if err != nil {
		return err
	}
	c.w.BulkString(name)
	return nil
}

// FUNCTION DELETE library-name
func cmdFunctionDelete(c *Ctx) error {
	c.a.fnEnv()
	l := c.a.scripts().fn.libs[string(c.args[2])]
	if l == nil {
		return ErrFnLibNotFound
	}
	if err := c.st.DeleteFunctionLibrary(l.name); err != nil {
		return err
	}
	c.a.dropLibrary(l)
	c.w.OK()
	return nil
}

// FUNCTION FLUSH [ASYNC|SYNC]
func cmdFunctionFlush(c *Ctx) error {
	if len(c.args) > 3 || (len(c.args) == 3 && !c.argEq(2, "sync") && !c.argEq(2, "async")) {
		return ErrFnFlushArg
	}
	if err := c.st.FlushFunctionLibraries(); err != nil {
		return err
	}
	c.a.flushFunctions()
	c.w.OK()
	return nil
}

// flushFunctions forgets every library and starts a fresh Lua state.
func (a *Actor) flushFunctions() {
	f := &a.scripts().fn
	f.flags = nil
	if f.env != nil {
		f.env.close()
	}
	*f = functions{}
}

// FUNCTION LIST [LIBRARYNAME library-name-pattern] [WITHCODE]
func cmdFunctionList(c *Ctx) error {
	withCode := false
	var pattern []byte
	for i := 2; i < len(c.args); i++ {
		switch {
		case c.argEq(i, "withcode"):
			withCode = true
		case c.argEq(i, "libraryname") && i+1 < len(c.args) && pattern == nil:
			i++
			pattern = c.args[i]
		case c.argEq(i, "libraryname") && pattern != nil:
			return ErrFnListLibTwice
		case c.argEq(i, "libraryname"):
			return ErrFnListLibMissing
		default:
			return errFnUnknownArgument(string(c.args[i]))
		}
	}
	c.a.fnEnv()
	var libs []*library
	for _, l := range c.a.scripts().fn.libs {
		if pattern == nil || globMatch(pattern, []byte(l.name)) {
			libs = append(libs, l)
		}
	}
	sort.Slice(libs, func(i, j int) bool { return libs[i].name < libs[j].name })
	w := c.w
	w.Array(len(libs))
	for _, l := range libs {
		n := 3
		if withCode {
			n = 4
		}
		w.Map(n)
		w.BulkString("library_name")
		w.BulkString(l.name)
		w.BulkString("engine")
		w.BulkString("LUA")
		w.BulkString("functions")
		fns := append([]*function(nil), l.fns...)
		sort.Slice(fns, func(i, j int) bool { return fns[i].name < fns[j].name })
		w.Array(len(fns))
		for _, fn := range fns {
			w.Map(3)
			w.BulkString("name")
			w.BulkString(fn.name)
			w.BulkString("description")
			if fn.desc == "" {
				w.Null()
			} else {
				w.BulkString(fn.desc)
			}
			w.BulkString("flags")
			var names []string
			for _, f := range scriptFlagNames {
				if fn.flags&f.flag != 0 {
					names = append(names, f.name)
				}
			}
			w.Set(len(names))
			for _, s := range names {
				w.Simple(s)
			}
		}
		if withCode {
			w.BulkString("library_code")
			w.Bulk(l.code)
		}
	}
	return nil
}

// FUNCTION STATS. A running function is answered by FUNCTION STATS only
// once it has finished (the actor runs it); then none runs.
func cmdFunctionStats(c *Ctx) error {
	c.a.fnEnv()
	f := &c.a.scripts().fn
	w := c.w
	w.Map(2)
	w.BulkString("running_script")
	w.Null()
	w.BulkString("engines")
	w.Map(1)
	w.BulkString("LUA")
	w.Map(2)
	w.BulkString("libraries_count")
	w.Int(int64(len(f.libs)))
	w.BulkString("functions_count")
	w.Int(int64(len(f.fns)))
	return nil
}

// FUNCTION KILL, when it reaches the actor: nothing runs (a function
// running past busy-reply-threshold is killed by the loops, ScriptWatch).
func cmdFunctionKill(c *Ctx) error { return ErrNotBusy }

// FUNCTION DUMP
func cmdFunctionDump(c *Ctx) error {
	c.a.fnEnv()
	var libs []*library
	for _, l := range c.a.scripts().fn.libs {
		libs = append(libs, l)
	}
	sort.Slice(libs, func(i, j int) bool { return libs[i].name < libs[j].name })
	codes := make([][]byte, len(libs))
	for i, l := range libs {
		codes[i] = l.code
	}
	c.w.Bulk(dumpFunctions(codes, c.a.storedParamValue("rdbcompression") == "yes"))
	return nil
}

// FUNCTION RESTORE serialized-value [FLUSH|APPEND|REPLACE]
func cmdFunctionRestore(c *Ctx) error {
	policy := "append"
	if len(c.args) == 4 {
		switch {
		case c.argEq(3, "flush"):
			policy = "flush"
		case c.argEq(3, "append"):
		case c.argEq(3, "replace"):
			policy = "replace"
		default:
			return ErrFnRestorePolicy
		}
	} else if len(c.args) > 4 {
		return ErrSyntax
	}
	codes, err := undumpFunctions(c.args[2])
	if err != nil {
		return err
	}
	a := c.a
	a.fnEnv()
	// Check everything first: a restore applies whole or not at all.
	names := map[string]bool{}
	for _, code := range codes {
		name, _, err := parseLibraryHeader(code)
		if err != nil {
			return err
		}
		if policy == "append" && a.scripts().fn.libs[name] != nil {
			return errFnLibExists(name)
		}
		names[name] = true
	}
	// The libraries are loaded one by one (one may still fail to compile
	// or collide with another's function): under a savepoint, so that a
	// failure undoes the rows written, and the memory is reloaded.
	if err := c.st.Savepoint(); err != nil {
		return err
	}
	err = a.restoreLibraries(c, codes, policy)
	if err == nil {
		return c.st.Release()
	}
	if !c.st.Undo() {
		a.roundErr = errRestoreUndo
	}
	a.reloadFunctions()
	return err
}

var errRestoreUndo = errors.New("actor: a failed FUNCTION RESTORE could not be undone")

func (a *Actor) restoreLibraries(c *Ctx, codes [][]byte, policy string) error {
	if policy == "flush" {
		if err := c.st.FlushFunctionLibraries(); err != nil {
			return err
		}
		a.flushFunctions()
		a.fnEnv()
	}
	for _, code := range codes {
		if _, err := a.loadLibrary(code, policy != "append", true); err != nil {
			return err
		}
	}
	c.w.OK()
	return nil
}

// FUNCTION HELP
func cmdFunctionHelp(c *Ctx) error {
	return helpReply(c, "function", []string{
		"LOAD [REPLACE] <FUNCTION CODE>",
		"    Create a new library with the given library name and code.",
		"DELETE <LIBRARY NAME>",
		"    Delete the given library.",
		"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
		"    Return general information on all the libraries:",
		"    * Library name",
		"    * The engine used to run the Library",
		"    * Library description",
		"    * Functions list",
		"    * Library code (if WITHCODE is given)",
		"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
		"STATS",
		"    Return information about the current function running:",
		"    * Function name",
		"    * Command used to run the function",
		"    * Duration in MS that the function is running",
		"    If no function is running, return nil",
		"    In addition, returns a list of available engines.",
		"KILL",
		"    Kill the current running function.",
		"FLUSH [ASYNC|SYNC]",
		"    Delete all the libraries.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the libraries.",
		"    * SYNC: Synchronously flush the libraries.",
		"DUMP",
		"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
		"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
		"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
		"    control how to handle existing libraries (default APPEND):",
		"    * FLUSH: delete all existing libraries.",
		"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
		"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
		"      libraries with the new libraries (notice that even on this option there is a chance of failure",
		"      in case of functions name collision with another library).",
		"HELP",
		"    Prints this help.",
	})
}
