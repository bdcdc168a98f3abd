package actor

import "strings"

// COMMAND GETKEYS and COMMAND GETKEYSANDFLAGS: the key arguments of a
// command line, found with the command's key specs as Redis finds them
// (its getKeysUsingKeySpecs), for the commands Cellar implements.

// COMMAND GETKEYS command [arg ...]
func cmdCommandGetKeys(c *Ctx) error { return getKeys(c, false) }

// COMMAND GETKEYSANDFLAGS command [arg ...]
func cmdCommandGetKeysAndFlags(c *Ctx) error { return getKeys(c, true) }

// keyFlagOrder is the order Redis prints key-spec flags in, with the names
// it prints.
var keyFlagOrder = []struct{ spec, reply string }{
	{"RO", "RO"}, {"RW", "RW"}, {"OW", "OW"}, {"RM", "RM"},
	{"ACCESS", "access"}, {"UPDATE", "update"}, {"INSERT", "insert"}, {"DELETE", "delete"},
	{"NOT_KEY", "not_key"}, {"INCOMPLETE", "incomplete"}, {"VARIABLE_FLAGS", "variable_flags"},
}

// foundKey is one key argument: its position in the command line and its
// flags.
type foundKey struct {
	pos   int
	flags []string
}

func getKeys(c *Ctx, withFlags bool) error {
	argv := c.args[2:]
	cmd := Lookup(argv[0])
	if cmd != nil && cmd.subs != nil {
		cmd = nil
		if len(argv) > 1 {
			cmd = Lookup(argv[0]).sub(argv[1])
		}
	}
	switch {
	case cmd == nil:
		return ErrInvalidCommand
	case !hasKeys(cmd):
		return ErrCommandNoKeys
	case (cmd.Arity > 0 && cmd.Arity != len(argv)) || len(argv) < -cmd.Arity:
		return ErrInvalidArgCount
	}
	keys, ok := findKeys(cmd, argv)
	if !ok || len(keys) == 0 {
		if cmd.Is(FlagNoMandatoryKeys) {
			c.w.Array(0)
			return nil
		}
		return ErrInvalidKeyArgs
	}
	c.w.Array(len(keys))
	for _, k := range keys {
		if !withFlags {
			c.w.Bulk(argv[k.pos])
			continue
		}
		c.w.Array(2)
		c.w.Bulk(argv[k.pos])
		var names []string
		for _, f := range keyFlagOrder {
			for _, have := range k.flags {
				if have == f.spec {
					names = append(names, f.reply)
				}
			}
		}
		c.w.Set(len(names))
		for _, n := range names {
			c.w.Simple(n)
		}
	}
	return nil
}

// hasKeys says whether a command has a key spec for real keys.
func hasKeys(cmd *Command) bool {
	for _, k := range cmd.meta.KeySpecs {
		if !k.has("NOT_KEY") {
			return true
		}
	}
	return false
}

func (k keySpec) has(flag string) bool {
	for _, f := range k.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// findKeys finds cmd's keys in argv (argv[0] the command's name) as
// Redis's getKeysFromCommandWithSpecs: by the key specs, unless one has
// variable flags (the flags depend on the arguments: SET's GET, BITFIELD's
// operations) or they do not fit (an unknown or incomplete spec: SORT's
// STORE, MIGRATE's KEYS); then the command's own finder says them
// (Command.getKeys, Redis's getkeys_proc). false: no keys can be known.
// COMMAND GETKEYS, the ACL key checks, client tracking's failed reads and
// the loads before a batch use it.
func findKeys(cmd *Command, argv [][]byte) ([]foundKey, bool) {
	if cmd.getKeys == nil || !cmd.specsHave("VARIABLE_FLAGS") {
		if keys, ok := keysUsingSpecs(cmd, argv); ok || cmd.getKeys == nil {
			return keys, ok
		}
	}
	return cmd.getKeys(argv), true
}

// specsHave reports whether one of cmd's key specs has flag.
func (cmd *Command) specsHave(flag string) bool {
	if cmd.meta == nil {
		return false
	}
	for _, k := range cmd.meta.KeySpecs {
		if k.has(flag) {
			return true
		}
	}
	return false
}

// keysUsingSpecs is Redis's getKeysUsingKeySpecs: false when a spec does
// not fit the arguments or is flagged INCOMPLETE.
func keysUsingSpecs(cmd *Command, argv [][]byte) ([]foundKey, bool) {
	argc := len(argv)
	var keys []foundKey
	for _, k := range cmd.meta.KeySpecs {
		if k.has("NOT_KEY") {
			continue
		}
		first := 0
		switch bs := k.BeginSearch; {
		case bs.Index != nil:
			first = bs.Index.Pos
		case bs.Keyword != nil:
			// From startfrom (counted from the end when negative) toward
			// the last argument (or the first), that one excluded, as
			// Redis searches.
			start, end := bs.Keyword.StartFrom, argc-1
			if start <= 0 {
				start, end = argc+start, 1
			}
			for i := start; i != end && i >= 1 && i < argc; {
				if strings.EqualFold(string(argv[i]), bs.Keyword.Keyword) {
					first = i + 1
					break
				}
				if start <= end {
					i++
				} else {
					i--
				}
			}
			if first == 0 {
				continue
			}
		default:
			return nil, false
		}
		var last, step int
		switch fk := k.FindKeys; {
		case fk.Range != nil:
			step = fk.Range.Step
			switch {
			case fk.Range.LastKey >= 0:
				last = first + fk.Range.LastKey
			case fk.Range.Limit == 0:
				last = argc + fk.Range.LastKey
			default:
				last = first + ((argc-first)/fk.Range.Limit + fk.Range.LastKey)
			}
		case fk.KeyNum != nil:
			step = fk.KeyNum.Step
			if first+fk.KeyNum.KeyNumIdx >= argc {
				return nil, false
			}
			n, ok := parseIntOK(argv[first+fk.KeyNum.KeyNumIdx])
			if !ok || n < 0 || n > int64(argc) {
				return nil, false
			}
			first += fk.KeyNum.FirstKey
			last = first + int(n) - 1
		default:
			return nil, false
		}
		if last >= argc || last < first || first >= argc {
			return nil, false
		}
		for i := first; i <= last; i += step {
			keys = append(keys, foundKey{pos: i, flags: k.Flags})
		}
		if k.has("INCOMPLETE") {
			return nil, false
		}
	}
	return keys, true
}

// setKeyFlags are SET's key and flags, which depend on its GET option (its
// key spec has variable flags: findKeys asks it, as Redis asks SET's own
// function).
func setKeyFlags(argv [][]byte) []foundKey {
	for _, a := range argv[3:] {
		if strings.EqualFold(string(a), "get") {
			return []foundKey{{pos: 1, flags: []string{"RW", "ACCESS", "UPDATE"}}}
		}
	}
	return []foundKey{{pos: 1, flags: []string{"OW", "UPDATE"}}}
}
