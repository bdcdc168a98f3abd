package actor

// MODULE: Redis's module commands, as a Redis 7.0 with no module loaded
// answers them. Cellar cannot load Redis modules (they are C shared
// objects linked against Redis itself), so MODULE LIST is always empty and
// LOAD, LOADEX and UNLOAD fail the way Redis fails for a module it cannot
// load or does not have: first refused while enable-module-command (stored,
// "no" by default) does not allow them, as in Redis.

var moduleCommands = registerCommands([]*Command{
	{Name: "module", Summary: "Lists, loads and unloads Redis modules (Cellar has none).", Subs: []*Command{
		{Name: "module|list", Summary: "Lists the loaded modules: none.", Handler: cmdModuleList},
		{Name: "module|load", Summary: "Loads a module (always fails: Cellar cannot load Redis modules).", Handler: cmdModuleLoad, protectedBy: byModuleSetting},
		{Name: "module|loadex", Summary: "Loads a module with configuration (always fails, as MODULE LOAD).", Handler: cmdModuleLoad, protectedBy: byModuleSetting},
		{Name: "module|unload", Summary: "Unloads a module (there is none to unload).", Handler: cmdModuleUnload, protectedBy: byModuleSetting},
		{Name: "module|help", Summary: "Lists the MODULE subcommands.", Handler: cmdModuleHelp},
	}},
})

// MODULE LIST
func cmdModuleList(c *Ctx) error {
	c.w.Array(0)
	return nil
}

// MODULE LOAD path [arg ...] | MODULE LOADEX path [CONFIG name value ...] [ARGS arg ...]
func cmdModuleLoad(c *Ctx) error {
	if !c.protectedAllowed(c.a.storedParamValue("enable-module-command")) {
		return ErrModuleNotAllowed
	}
	c.a.log.Warn().Bytes("path", c.args[2]).Msg("MODULE LOAD: Cellar cannot load Redis modules")
	return ErrModuleLoad
}

// MODULE UNLOAD name
func cmdModuleUnload(c *Ctx) error {
	if !c.protectedAllowed(c.a.storedParamValue("enable-module-command")) {
		return ErrModuleNotAllowed
	}
	return ErrModuleUnloadNoSuch
}

// MODULE HELP
func cmdModuleHelp(c *Ctx) error {
	return helpReply(c, "module", []string{
		"LIST",
		"    Return a list of loaded modules.",
		"LOAD <path> [<arg> ...]",
		"    Load a module library from <path>, passing to it any optional arguments.",
		"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
		"    Load a module library from <path>, while passing it module configurations and optional arguments.",
		"UNLOAD <name>",
		"    Unload a module.",
		"HELP",
		"    Prints this help.",
	})
}
