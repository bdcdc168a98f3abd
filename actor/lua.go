package actor

import (
	"crypto/sha1"
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/cellar-db/cellar/proto"
)

// The Lua interpreter (gopher-lua, Lua 5.1) as Redis 7.0 sets it up for
// scripts and functions: the sandboxed globals, the redis.* API, and the
// conversions between Lua values and replies both ways. scripting.go runs
// EVAL and SCRIPT on it, functions.go FUNCTION and FCALL.
//
// Everything here runs on the actor goroutine; a Lua state is never
// touched anywhere else. A running script's redis.call is a nested command
// (Ctx.call), one level deeper than the EVAL or FCALL that runs it.

// luaEnv is one Lua state and its sandbox. EVAL scripts share one, the
// function libraries another (as in Redis, they never see each other's
// globals).
type luaEnv struct {
	L *lua.LState
	// readonly maps each read-only table scripts see (a proxy: empty,
	// reads fall through, writes fail) to the table it stands for: the
	// globals and every library table, as Redis makes them read-only.
	readonly map[*lua.LTable]*lua.LTable
	// globals is the real global table; env is the table scripts see as
	// their globals: empty, its reads fall through to globals (and fail
	// for a name that is not there), its writes fail.
	globals, env *lua.LTable
	redis        *lua.LTable
	errHandler   *lua.LFunction
}

// The interpreter's limits: nested calls, value-stack slots, and values one
// call may return (LUAI_MAXCALLS, a bound on the stack, LUAI_MAXCSTACK).
const (
	luaMaxCalls   = 20000
	luaMaxStack   = 1 << 20
	luaMaxResults = 8000
)

// Redis's log levels (redis.LOG_*).
const (
	luaLogDebug = iota
	luaLogVerbose
	luaLogNotice
	luaLogWarning
)

// newLuaEnv builds a sandboxed state: base (without what reaches files or
// the process), table, string, math (with Redis's random), coroutine, and
// the libraries Redis bundles (bit, cjson, cmsgpack, struct); then the
// redis table. chunk names the code in messages ("user_script",
// "user_function").
func (a *Actor) newLuaEnv(functions bool) *luaEnv {
	// Lua 5.1's limits, as Redis has them: 20000 nested calls
	// (LUAI_MAXCALLS) and a value stack that grows as deep recursion needs
	// it; both grow on demand, and past them a script fails with "stack
	// overflow" rather than the server.
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       luaMaxCalls,
		MinimizeStackMemory: true,
		RegistrySize:        16 << 10,
		RegistryMaxSize:     luaMaxStack,
		RegistryGrowStep:    16 << 10,
	})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	for _, name := range []string{"dofile", "loadfile", "print", "getfenv", "setfenv", "_printregs", "module", "require", "newproxy", "package", "channel", "_GOPHER_LUA_VERSION"} {
		g.RawSetString(name, lua.LNil)
	}
	g.RawSetString("error", L.NewFunction(luaError))
	g.RawSetString("tostring", L.NewFunction(luaToStringFn))
	g.RawSetString("tonumber", L.NewFunction(luaToNumber))
	g.RawSetString("unpack", L.NewFunction(luaUnpack))
	g.RawSetString("pcall", L.NewFunction(luaPcall))
	// Lua 5.1's gcinfo: the heap in KB. gopher-lua's heap is Go's, shared
	// with the server; scripts get 0.
	g.RawSetString("gcinfo", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 }))
	math := g.RawGetString("math").(*lua.LTable)
	math.RawSetString("random", L.NewFunction(a.luaRandom))
	math.RawSetString("randomseed", L.NewFunction(a.luaRandomSeed))
	openLuaLibs(L)
	// Lua 5.1's string table has no __index of its own: strings get a
	// metatable of their own pointing at it.
	str := g.RawGetString("string").(*lua.LTable)
	str.RawSetString("__index", lua.LNil)
	str.RawSetString("format", L.NewFunction(luaFormat))
	str.RawSetString("char", L.NewFunction(luaStringChar))
	smt := L.NewTable()
	smt.RawSetString("__index", str)
	L.SetMetatable(lua.LString(""), smt)
	stringMT := smt
	addTable51(L, g.RawGetString("table").(*lua.LTable))

	e := &luaEnv{L: L, globals: g, readonly: map[*lua.LTable]*lua.LTable{}}
	e.redis = L.NewTable()
	a.registerRedisAPI(e, functions)
	g.RawSetString("redis", e.redis)

	// Reads of a missing global fail; the globals and the libraries are
	// read-only (Redis makes the globals table and every library table
	// read-only).
	strict := L.NewTable()
	strict.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.ToString(2))
		return 0
	}))
	L.SetMetatable(g, strict)
	for _, name := range []string{"string", "table", "math", "coroutine", "bit", "cjson", "cmsgpack", "struct", "redis"} {
		if t, ok := g.RawGetString(name).(*lua.LTable); ok {
			g.RawSetString(name, e.protect(t))
		}
	}
	e.env = e.protect(g)
	g.RawSetString("_G", e.env)
	e.guardBase()
	// getmetatable of a string gives a read-only view of the strings'
	// metatable (in Redis it is read-only too).
	smtView := e.protect(stringMT)
	getmt := g.RawGetString("getmetatable").(*lua.LFunction).GFunction
	g.RawSetString("getmetatable", L.NewFunction(func(L *lua.LState) int {
		n := getmt(L)
		if n == 1 && L.Get(-1) == lua.LValue(stringMT) {
			L.Pop(1)
			L.Push(smtView)
		}
		return n
	}))
	e.errHandler = L.NewFunction(luaErrorHandler)
	g.RawSetString("__redis__err__handler", e.errHandler) // as Redis names it
	return e
}

// protect returns a read-only view of t: an empty table whose reads fall
// through to t and whose writes fail with Redis's text; its metatable is
// hidden (getmetatable returns an empty table, as Redis's does).
func (e *luaEnv) protect(t *lua.LTable) *lua.LTable {
	L := e.L
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	}))
	mt.RawSetString("__metatable", L.NewTable())
	L.SetMetatable(p, mt)
	e.readonly[p] = t
	return p
}

// guardBase makes the base functions that bypass metatables respect the
// read-only tables: rawset and setmetatable refuse them, and next, pairs,
// ipairs and rawget see what they stand for.
func (e *luaEnv) guardBase() {
	L, g := e.L, e.globals
	refuse := func(name string) {
		orig := g.RawGetString(name).(*lua.LFunction).GFunction
		g.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			t, ok := L.Get(1).(*lua.LTable)
			if !ok {
				got := "no value"
				if L.GetTop() >= 1 {
					got = L.Get(1).Type().String()
				}
				argError(L, 1, name, "table expected, got "+got)
			}
			if e.readonly[t] != nil {
				luaRaise(L, "Attempt to modify a readonly table")
			}
			if name == "rawset" {
				orig(L)
				L.Push(t) // Lua's rawset returns the table
				return 1
			}
			return orig(L)
		}))
	}
	refuse("rawset")
	refuse("setmetatable")
	see := func(name string) {
		orig := g.RawGetString(name).(*lua.LFunction).GFunction
		g.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			if t, ok := L.Get(1).(*lua.LTable); ok {
				if real := e.readonly[t]; real != nil {
					L.Replace(1, real)
				}
			}
			return orig(L)
		}))
	}
	see("next")
	see("rawget")
	// Code compiled by the script (loadstring, load) runs in the same
	// read-only globals as the script, never in the real table.
	for _, name := range []string{"loadstring", "load"} {
		orig := g.RawGetString(name).(*lua.LFunction).GFunction
		g.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			n := orig(L)
			if n > 0 {
				if fn, ok := L.Get(-n).(*lua.LFunction); ok {
					fn.Env = e.env
				}
			}
			return n
		}))
	}
	// pairs and ipairs, on what a read-only table stands for (gopher-lua's
	// own keep their iterator in an upvalue, so they are rebuilt here).
	next := g.RawGetString("next")
	real := func(L *lua.LState) *lua.LTable {
		t := L.CheckTable(1)
		if r := e.readonly[t]; r != nil {
			return r
		}
		return t
	}
	g.RawSetString("pairs", L.NewFunction(func(L *lua.LState) int {
		t := real(L)
		L.Push(next)
		L.Push(t)
		L.Push(lua.LNil)
		return 3
	}))
	iter := L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		i := L.CheckInt(2) + 1
		v := t.RawGetInt(i)
		if v == lua.LNil {
			return 0
		}
		L.Push(lua.LNumber(i))
		L.Push(v)
		return 2
	})
	g.RawSetString("ipairs", L.NewFunction(func(L *lua.LState) int {
		t := real(L)
		L.Push(iter)
		L.Push(t)
		L.Push(lua.LNumber(0))
		return 3
	}))
}

// addTable51 adds what Lua 5.1's table library has and gopher-lua's
// lacks: foreach, foreachi and setn.
func addTable51(L *lua.LState, t *lua.LTable) {
	t.RawSetString("foreach", L.NewFunction(func(L *lua.LState) int {
		tb := L.CheckTable(1)
		f := L.CheckFunction(2)
		var ret lua.LValue = lua.LNil
		k, v := tb.Next(lua.LNil)
		for k != lua.LNil {
			L.Push(f)
			L.Push(k)
			L.Push(v)
			L.Call(2, 1)
			ret = L.Get(-1)
			L.Pop(1)
			if ret != lua.LNil {
				L.Push(ret)
				return 1
			}
			k, v = tb.Next(k)
		}
		return 0
	}))
	t.RawSetString("foreachi", L.NewFunction(func(L *lua.LState) int {
		tb := L.CheckTable(1)
		f := L.CheckFunction(2)
		n := tb.Len()
		for i := 1; i <= n; i++ {
			L.Push(f)
			L.Push(lua.LNumber(i))
			L.Push(tb.RawGetInt(i))
			L.Call(2, 1)
			ret := L.Get(-1)
			L.Pop(1)
			if ret != lua.LNil {
				L.Push(ret)
				return 1
			}
		}
		return 0
	}))
	t.RawSetString("setn", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("'setn' is obsolete")
		return 0
	}))
}

// compile compiles body as a function of the sandbox, named chunk in
// messages.
func (e *luaEnv) compile(body []byte, chunk string) (*lua.LFunction, error) {
	fn, err := e.L.Load(strings.NewReader(string(body)), chunk)
	if err != nil {
		return nil, err
	}
	fn.Env = e.env
	// Lua 5.1 gives a main chunk no "arg" table; gopher-lua would build
	// one (a table and a map) at every call.
	fn.Proto.IsVarArg &^= lua.VarArgNeedsArg
	return fn, nil
}

// close frees the state.
func (e *luaEnv) close() { e.L.Close() }

// luaErrorHandler is the message handler of every script call, Redis's
// __redis__err__handler: it turns what the script raised into an error
// table with the place it was raised at ({err=, source=, line=}); a raised
// string or number becomes "ERR <message>". A table (redis.call's errors,
// error{err=...}) keeps its err.
func luaErrorHandler(L *lua.LState) int {
	v := L.Get(1)
	t, ok := v.(*lua.LTable)
	if !ok {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+luaToString(v)))
	}
	if t.RawGetString("source") == lua.LNil {
		for level := 1; level < 8; level++ {
			dbg, ok := L.GetStack(level)
			if !ok {
				break
			}
			if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil || dbg.What == "G" || dbg.CurrentLine <= 0 {
				continue
			}
			t.RawSetString("source", lua.LString("@"+dbg.Source))
			t.RawSetString("line", lua.LNumber(dbg.CurrentLine))
			break
		}
	}
	L.Push(t)
	return 1
}

// luaWhere is the source and line of the Lua code that called the running
// Go function (redis.call raising its error from there).
func luaWhere(L *lua.LState) (string, int) {
	dbg, ok := L.GetStack(1)
	if ok {
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil {
			return "@" + dbg.Source, dbg.CurrentLine
		}
	}
	return "", 0
}

// luaRaise raises msg from a Go function of the API without a position,
// as luaL_error does from a C function.
func luaRaise(L *lua.LState, msg string) { L.Error(lua.LString(msg), 0) }

// luaError is the sandbox's error(): as Lua 5.1's, a number is a message
// too and gets the position (gopher-lua adds it to strings only).
func luaError(L *lua.LState) int {
	v := L.CheckAny(1)
	level := L.OptInt(2, 1)
	if n, ok := v.(lua.LNumber); ok {
		v = lua.LString(luaNumberString(float64(n)))
	}
	if level > 0 {
		// Lua adds a position only when the function at that level is
		// Lua code (pcall(error, 'x') gets none).
		if dbg, ok := L.GetStack(level); ok {
			if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && dbg.CurrentLine <= 0 {
				level = 0
			}
		}
	}
	L.Error(v, level)
	return 0
}

// luaToString is Lua's tostring for error messages.
func luaToString(v lua.LValue) string {
	switch v := v.(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return luaNumberString(float64(v))
	case nil:
		return "nil"
	}
	return v.String()
}

// luaNumberString formats n as Lua 5.1 does (LUAI_NUMFMT, "%.14g", with
// glibc's spelling of NaN and the infinities): tostring, error messages.
func luaNumberString(n float64) string {
	switch {
	case math.IsNaN(n) && math.Signbit(n):
		return "-nan"
	case math.IsNaN(n):
		return "nan"
	case math.IsInf(n, 1):
		return "inf"
	case math.IsInf(n, -1):
		return "-inf"
	}
	return strconv.FormatFloat(n, 'g', 14, 64)
}

// luaToStringFn is the sandbox's tostring: Lua 5.1's number format (the
// interpreter's own is Go's shortest form).
func luaToStringFn(L *lua.LState) int {
	if L.GetTop() == 0 {
		argError(L, 1, "tostring", "value expected")
	}
	v := L.Get(1)
	if n, ok := v.(lua.LNumber); ok {
		L.Push(lua.LString(luaNumberString(float64(n))))
		return 1
	}
	L.Push(lua.LString(L.ToStringMeta(v).String()))
	return 1
}

// errorTable makes the error table Redis's luaPushErrorBuff makes of msg:
// "-CODE text" keeps its code (without the dash; "ERR" when there is no
// space), anything else gets "ERR "; a trailing CR or LF goes.
func errorTable(L *lua.LState, msg string) *lua.LTable {
	code, text := "ERR", msg
	if strings.HasPrefix(msg, "-") {
		if i := strings.IndexByte(msg, ' '); i >= 0 {
			code, text = msg[1:i], msg[i+1:]
		} else {
			text = msg[1:]
		}
	}
	text = strings.Trim(text, "\r\n")
	t := L.NewTable()
	t.RawSetString("err", lua.LString(code+" "+text))
	return t
}

// raiseErrorTable raises the error table of msg from redis.call, with the
// place of the Lua code that called it.
func raiseErrorTable(L *lua.LState, msg string) {
	t := errorTable(L, msg)
	src, line := luaWhere(L)
	if src != "" {
		t.RawSetString("source", lua.LString(src))
		t.RawSetString("line", lua.LNumber(line))
	}
	L.Error(t, 0)
}

// registerRedisAPI fills the redis table. A library being loaded sees only
// what Redis allows while FUNCTION LOAD runs its code (registerFunction
// checks that per call).
func (a *Actor) registerRedisAPI(e *luaEnv, functions bool) {
	L := e.L
	r := e.redis
	set := func(name string, fn lua.LGFunction) { r.RawSetString(name, L.NewFunction(fn)) }
	set("call", func(L *lua.LState) int { return a.luaCall(L, true) })
	set("pcall", func(L *lua.LState) int { return a.luaCall(L, false) })
	set("error_reply", luaErrorReply)
	set("status_reply", luaStatusReply)
	set("sha1hex", luaSha1Hex)
	set("log", a.luaLog)
	set("setresp", a.luaSetResp)
	set("set_repl", a.luaSetRepl)
	set("replicate_commands", func(L *lua.LState) int { L.Push(lua.LTrue); return 1 })
	set("breakpoint", func(L *lua.LState) int { L.Push(lua.LFalse); return 1 })
	set("debug", func(L *lua.LState) int { return 0 })
	set("acl_check_cmd", a.luaACLCheckCmd)
	if functions {
		set("register_function", a.luaRegisterFunction)
	}
	for name, v := range map[string]int{
		"LOG_DEBUG": luaLogDebug, "LOG_VERBOSE": luaLogVerbose, "LOG_NOTICE": luaLogNotice, "LOG_WARNING": luaLogWarning,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3,
	} {
		r.RawSetString(name, lua.LNumber(v))
	}
	r.RawSetString("REDIS_VERSION", lua.LString(redisVersion))
	r.RawSetString("REDIS_VERSION_NUM", lua.LNumber(redisVersionNum))
}

// The Redis version scripts see (redis.REDIS_VERSION): the one whose
// behaviour Cellar follows.
const (
	redisVersion    = RedisVersion
	redisVersionNum = 7<<16 | 0<<8 | 15
)

// luaArgsErr is what redis.error_reply and redis.status_reply answer (as
// an error table, not raised) to anything but one string.
const luaArgsErr = "ERR wrong number or type of arguments"

func luaErrorReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "-"+luaArgsErr))
		return 1
	}
	msg := string(s)
	if !strings.HasPrefix(msg, "-") {
		msg = "-" + msg
	}
	L.Push(errorTable(L, msg))
	return 1
}

func luaStatusReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "-"+luaArgsErr))
		return 1
	}
	t := L.NewTable()
	t.RawSetString("ok", s)
	L.Push(t)
	return 1
}

// luaACLCheckCmd is redis.acl_check_cmd(command, args...): whether the
// script's caller may run the command with these arguments.
func (a *Actor) luaACLCheckCmd(L *lua.LState) int {
	if L.GetTop() < 1 {
		luaRaise(L, "Please specify at least one argument for this redis lib call")
	}
	name, ok := L.Get(1).(lua.LString)
	cmd := a.Lookup([]byte(name))
	if ok && cmd != nil && cmd.subs != nil && L.GetTop() >= 2 {
		sub, _ := L.Get(2).(lua.LString)
		cmd = cmd.sub([]byte(sub))
	}
	if !ok || cmd == nil {
		luaRaise(L, "Invalid command passed to redis.acl_check_cmd()")
	}
	allowed := true
	if r := a.scripts().run; r != nil && !r.ctx.s.user.open {
		args := make([][]byte, L.GetTop())
		for i := range args {
			args[i] = []byte(L.ToString(i + 1))
		}
		d, _ := r.ctx.s.user.check(cmd, args)
		allowed = d == aclOK
	}
	L.Push(lua.LBool(allowed))
	return 1
}

func luaSha1Hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		luaRaise(L, "wrong number of arguments")
	}
	s := L.ToString(1)
	sum := sha1.Sum([]byte(s))
	L.Push(lua.LString(hex.EncodeToString(sum[:])))
	return 1
}

func (a *Actor) luaLog(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		luaRaise(L, "redis.log() requires two arguments or more.")
	}
	lv, ok := L.Get(1).(lua.LNumber)
	if !ok {
		luaRaise(L, "First argument must be a number (log level).")
	}
	level := int(lv)
	if level < luaLogDebug || level > luaLogWarning {
		luaRaise(L, "Invalid debug level.")
	}
	var sb strings.Builder
	for i := 2; i <= n; i++ {
		if i > 2 {
			sb.WriteByte(' ')
		}
		sb.WriteString(luaToString(L.Get(i)))
	}
	ev := a.log.Debug()
	switch level {
	case luaLogNotice:
		ev = a.log.Info()
	case luaLogWarning:
		ev = a.log.Warn()
	}
	ev.Str("source", "script").Msg(sb.String())
	return 0
}

func (a *Actor) luaSetResp(L *lua.LState) int {
	if L.GetTop() != 1 {
		luaRaise(L, "redis.setresp() requires one argument.")
	}
	v, ok := L.Get(1).(lua.LNumber)
	if !ok || (v != 2 && v != 3) {
		luaRaise(L, "RESP version must be 2 or 3.")
	}
	if r := a.scripts().run; r != nil {
		r.resp = int(v)
	}
	return 0
}

// luaSetRepl accepts redis.set_repl's arguments as Redis 7.0 does. Cellar
// always records a script's effects (the redo log is its durability), so
// the flags change nothing (docs/commands.md, "Deviations from Redis").
func (a *Actor) luaSetRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		luaRaise(L, "redis.set_repl() requires one argument.")
	}
	v, ok := L.Get(1).(lua.LNumber)
	if !ok || v < 0 || v > 3 || v != lua.LNumber(math.Trunc(float64(v))) {
		luaRaise(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0
}

// Redis's math.random: Lua 5.1's, over Redis's own lrand48 (rand.c), so
// the same calls give the same numbers as on Redis.
const lrand48Max = math.MaxInt32

func (a *Actor) lrand48() int32 {
	s := a.scripts()
	s.rand = (s.rand*0x5DEECE66D + 0xB) & (1<<48 - 1)
	return int32(s.rand >> 17)
}

func (a *Actor) luaRandom(L *lua.LState) int {
	r := float64(a.lrand48()%lrand48Max) / float64(lrand48Max)
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := L.CheckInt(1)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l, u := L.CheckInt(1), L.CheckInt(2)
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l)))
	default:
		luaRaise(L, "wrong number of arguments")
	}
	return 1
}

func (a *Actor) luaRandomSeed(L *lua.LState) int {
	seed := uint64(uint32(int32(L.CheckInt(1))))
	a.scripts().rand = (seed&0xFFFF0000)<<16 | (seed&0xFFFF)<<16 | 0x330E
	return 0
}

// lrand48Init is rand.c's initial state (X2, X1, X0).
const lrand48Init = 0x1234<<32 | 0xABCD<<16 | 0x330E

// luaCall is redis.call (raise) and redis.pcall (!raise): it runs a command
// one level deeper and converts its reply for Lua.
func (a *Actor) luaCall(L *lua.LState, raise bool) int {
	r := a.scripts().run
	fail := func(e ReplyError) int {
		msg := "-" + string(e)
		if raise {
			raiseErrorTable(L, msg)
		}
		L.Push(errorTable(L, msg))
		return 1
	}
	if r == nil {
		// Only reachable from a library's top-level code during FUNCTION
		// LOAD (functions.go refuses it earlier with Redis's text).
		return fail(ErrScriptNoCall)
	}
	n := L.GetTop()
	if n == 0 {
		return fail(ErrScriptNoArgs)
	}
	args := r.args[:0]
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args = append(args, []byte(v))
		case lua.LNumber:
			// Redis 7.0 formats a number argument with "%.17g".
			args = append(args, strconv.AppendFloat(nil, float64(v), 'g', 17, 64))
		default:
			r.args = args
			return fail(ErrScriptArgType)
		}
	}
	r.args = args
	cmd := a.Lookup(args[0])
	if cmd != nil && cmd.subs != nil && len(args) >= 2 {
		cmd = cmd.sub(args[1])
	}
	switch {
	case cmd == nil:
		return fail(ErrScriptUnknownCmd)
	case !cmd.arityOK(len(args)):
		return fail(ErrScriptArity)
	case cmd.Is(FlagNoScript):
		return fail(ErrScriptNoScript)
	}
	if e, refused := a.aclScriptRefuse(r.ctx.s, cmd, args); refused {
		return fail(e)
	}
	if cmd.Is(FlagWrite) && r.readOnly {
		return fail(ErrScriptReadOnly)
	}
	if cmd.Is(FlagWrite) {
		a.scripts().watch.wrote.Store(true)
	}
	r.out.Buf, r.out.Proto = r.out.Buf[:0], r.resp
	if r.ctx.call(args, &r.out) {
		r.ctx.keyspace = true
	}
	p := respToLua{L: L, b: r.out.Buf}
	v, isErr := p.value()
	if isErr {
		// Counted in errorstats by the call already: not again as the
		// script's error or reply (Redis marks its error table so too).
		v.(*lua.LTable).RawSetString("ignore_error_stats_update", lua.LTrue)
	}
	if isErr && raise {
		t := v.(*lua.LTable)
		src, line := luaWhere(L)
		if src != "" {
			t.RawSetString("source", lua.LString(src))
			t.RawSetString("line", lua.LNumber(line))
		}
		L.Error(t, 0)
	}
	if cap(r.out.Buf) > maxScriptScratch {
		r.out.Buf = nil
	}
	L.Push(v)
	return 1
}

// maxScriptScratch is the largest reply buffer a script keeps between
// calls.
const maxScriptScratch = 64 << 10

// respToLua converts a reply (RESP2 or RESP3, as the script's redis.setresp
// asked) to a Lua value, as Redis's redisProtocolToLuaType does. The bytes
// were written by Cellar's own writer, so they are well formed.
type respToLua struct {
	L   *lua.LState
	b   []byte
	pos int
}

func (p *respToLua) line() string {
	i := p.pos
	for p.b[i] != '\r' {
		i++
	}
	s := string(p.b[p.pos+1 : i])
	p.pos = i + 2
	return s
}

// value converts the reply at pos; isErr reports a top-level error (the
// value is then its error table).
func (p *respToLua) value() (v lua.LValue, isErr bool) {
	L := p.L
	switch t := p.b[p.pos]; t {
	case '+':
		tb := L.NewTable()
		tb.RawSetString("ok", lua.LString(p.line()))
		return tb, false
	case '-':
		return errorTable(L, "-"+p.line()), true
	case ':':
		n, _ := strconv.ParseInt(p.line(), 10, 64)
		return lua.LNumber(n), false
	case '$', '=', '!':
		n, _ := strconv.Atoi(p.line())
		if n < 0 {
			return lua.LFalse, false
		}
		s := string(p.b[p.pos : p.pos+n])
		p.pos += n + 2
		switch t {
		case '=':
			tb, f := L.NewTable(), L.NewTable()
			f.RawSetString("format", lua.LString(s[:3]))
			f.RawSetString("string", lua.LString(s[4:]))
			tb.RawSetString("verbatim_string", f)
			return tb, false
		case '!':
			return errorTable(L, "-"+s), true
		}
		return lua.LString(s), false
	case '*', '~', '%':
		n, _ := strconv.Atoi(p.line())
		if n < 0 {
			return lua.LFalse, false
		}
		tb := L.CreateTable(n, 0)
		switch t {
		case '*':
			for i := 1; i <= n; i++ {
				e, _ := p.value()
				tb.RawSetInt(i, e)
			}
			return tb, false
		case '~':
			set := L.CreateTable(0, n)
			for i := 0; i < n; i++ {
				e, _ := p.value()
				set.RawSet(e, lua.LTrue)
			}
			tb.RawSetString("set", set)
			return tb, false
		default:
			m := L.CreateTable(0, n)
			for i := 0; i < n; i++ {
				k, _ := p.value()
				e, _ := p.value()
				m.RawSet(k, e)
			}
			tb.RawSetString("map", m)
			return tb, false
		}
	case '_':
		p.line()
		return lua.LNil, false
	case '#':
		return lua.LBool(p.line() == "t"), false
	case ',':
		s := p.line()
		f, _ := strconv.ParseFloat(s, 64)
		switch s {
		case "inf":
			f = math.Inf(1)
		case "-inf":
			f = math.Inf(-1)
		}
		tb := L.NewTable()
		tb.RawSetString("double", lua.LNumber(f))
		return tb, false
	case '(':
		tb := L.NewTable()
		tb.RawSetString("big_number", lua.LString(p.line()))
		return tb, false
	}
	return lua.LNil, false
}

// luaReply writes v as the reply of a script, in w's protocol (the
// caller's), as Redis's luaReplyToRedisReply does. resp is the script's
// redis.setresp version, which decides how booleans go out. depth guards
// against a table that contains itself.
//
// count is called with each error it writes that is not counted in
// errorstats yet (nil: none is counted).
func luaReply(w *proto.Writer, v lua.LValue, resp, depth int, count func(string)) {
	if depth > luaMaxReplyDepth {
		w.Error(string(ErrScriptReplyDepth))
		if count != nil {
			count(string(ErrScriptReplyDepth))
		}
		return
	}
	switch v := v.(type) {
	case lua.LString:
		w.Bulk([]byte(v))
	case lua.LBool:
		switch {
		case resp == 3:
			w.Bool(bool(v))
		case bool(v):
			w.Int(1)
		default:
			w.Null()
		}
	case lua.LNumber:
		w.Int(luaInt(float64(v)))
	case *lua.LTable:
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			w.Error(string(e))
			if count != nil && !lua.LVAsBool(v.RawGetString("ignore_error_stats_update")) {
				count(string(e))
			}
			return
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			w.Simple(sanitizeLine(string(s)))
			return
		}
		if d, ok := v.RawGetString("double").(lua.LNumber); ok {
			w.Double(float64(d))
			return
		}
		if b, ok := v.RawGetString("big_number").(lua.LString); ok {
			if w.Proto == 3 {
				w.Buf = append(w.Buf, '(')
				w.Buf = append(w.Buf, sanitizeLine(string(b))...)
				w.Buf = append(w.Buf, '\r', '\n')
			} else {
				w.Bulk([]byte(b))
			}
			return
		}
		if m, ok := v.RawGetString("map").(*lua.LTable); ok {
			n := 0
			m.ForEach(func(lua.LValue, lua.LValue) { n++ })
			w.Map(n)
			m.ForEach(func(k, e lua.LValue) {
				luaReply(w, k, resp, depth+1, count)
				luaReply(w, e, resp, depth+1, count)
			})
			return
		}
		if s, ok := v.RawGetString("set").(*lua.LTable); ok {
			n := 0
			s.ForEach(func(lua.LValue, lua.LValue) { n++ })
			w.Set(n)
			s.ForEach(func(k, _ lua.LValue) { luaReply(w, k, resp, depth+1, count) })
			return
		}
		if vs, ok := v.RawGetString("verbatim_string").(*lua.LTable); ok {
			f, ok1 := vs.RawGetString("format").(lua.LString)
			s, ok2 := vs.RawGetString("string").(lua.LString)
			if ok1 && ok2 {
				w.Verbatim(string(f), string(s))
				return
			}
		}
		n := 0
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		w.Array(n)
		for i := 1; i <= n; i++ {
			luaReply(w, v.RawGetInt(i), resp, depth+1, count)
		}
	default:
		w.Null()
	}
}

// luaMaxReplyDepth bounds the nesting of a script's reply (a table that
// holds itself would recurse for ever).
const luaMaxReplyDepth = 1000

// luaInt truncates a Lua number to an integer reply, as C's cast does for
// the values that fit (Redis casts lua_Number to long long).
func luaInt(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return math.MinInt64
	case f >= 9.223372036854775807e18:
		return math.MinInt64
	case f <= -9.223372036854775808e18:
		return math.MinInt64
	}
	return int64(f)
}

// sanitizeLine makes s one line (CR and LF become spaces), as Redis does
// for status replies.
func sanitizeLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}
