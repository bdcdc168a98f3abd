package actor

import lua "github.com/yuin/gopher-lua"

// openLuaLibs adds the libraries Redis bundles with its Lua: bit, cjson,
// cmsgpack and struct.
func openLuaLibs(L *lua.LState) {
}
