package actor

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cellar-db/cellar/proto"
)

// The ACL command (acl.go has the users and rules; aclcheck.go the
// checks the core makes and the ACL LOG they write).

var aclCommands = registerCommands([]*Command{
	{Name: "acl", Summary: "Inspects and changes users and their permissions.", Subs: []*Command{
		{Name: "acl|setuser", Summary: "Creates a user or changes its rules.", Handler: cmdACLSetUser, redact: redactFrom(2)},
		{Name: "acl|getuser", Summary: "Describes a user's rules.", Handler: cmdACLGetUser},
		{Name: "acl|deluser", Summary: "Deletes users and closes their connections.", Handler: cmdACLDelUser},
		{Name: "acl|list", Summary: "Lists every user's rules in the ACL file's format.", Handler: cmdACLList},
		{Name: "acl|users", Summary: "Lists the user names.", Handler: cmdACLUsers},
		{Name: "acl|whoami", Summary: "Returns the connection's user.", Handler: cmdACLWhoami},
		{Name: "acl|cat", Summary: "Lists the categories, or a category's commands.", Handler: cmdACLCat},
		{Name: "acl|log", Summary: "Lists recent permission denials, or resets the log.", Handler: cmdACLLog},
		{Name: "acl|dryrun", Summary: "Says whether a user could run a command, without running it.", Handler: cmdACLDryRun},
		{Name: "acl|genpass", Summary: "Returns a random password.", Handler: cmdACLGenPass},
		{Name: "acl|load", Summary: "Reloads the users from the ACL file.", Handler: cmdACLLoad},
		{Name: "acl|save", Summary: "Writes the users to the ACL file.", Handler: cmdACLSave},
		{Name: "acl|help", Summary: "Lists the ACL subcommands.", Handler: cmdACLHelp},
	}},
})

// saveACLFile writes every user in the ACL file's format (Redis's
// ACLSaveToFile): a temporary file, then a rename.
func (a *Actor) saveACLFile() error {
	var b strings.Builder
	for _, u := range a.acl.sortedUsers() {
		b.WriteString("user " + u.name + " " + u.describe() + "\n")
	}
	tmp := fmt.Sprintf("%s.tmp-%d-%d", a.cfg.ACLFile, os.Getpid(), time.Now().UnixMilli())
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, a.cfg.ACLFile); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// killPubsubIfNeeded closes u's subscribed clients whose subscriptions the
// new rules no longer allow (Redis's ACLKillPubsubClientsIfNeeded).
func (a *Actor) killPubsubIfNeeded(nu, old *aclUser, cur *session) {
	for _, s := range nu.sels {
		if s.allChans {
			return
		}
	}
	var upcoming []string
	for _, s := range nu.sels {
		upcoming = append(upcoming, s.chans...)
	}
	superset := true
	for _, s := range old.sels {
		for _, c := range s.chans {
			found := false
			for _, n := range upcoming {
				found = found || n == c
			}
			superset = superset && found
		}
	}
	if superset {
		return
	}
	list := &selector{chans: upcoming}
	for _, s := range a.sessions {
		if s.user != old || s.subs == nil {
			continue
		}
		kill := false
		for k := range subKinds {
			for name := range s.subs.names[k] {
				if !list.checkChannel([]byte(name), subKind(k) == subPattern) {
					kill = true
				}
			}
		}
		if kill {
			if s == cur {
				s.closing = true
			} else {
				a.kill(s)
			}
		}
	}
}

// ACL SETUSER username [rule ...]
func cmdACLSetUser(c *Ctx) error {
	a := c.a
	name := c.args[2]
	if hasSpaces(name) {
		return ErrACLUserSpaces
	}
	ops, bad := mergeSelectorArgs(c.args[3:])
	if bad >= 0 {
		return errACLUnmatched(c.args[3+bad])
	}
	old := a.acl.users[string(name)]
	var u *aclUser
	if old != nil {
		u = old.clone()
	} else {
		u = a.acl.newUser(string(name))
	}
	for _, op := range ops {
		if err := a.acl.apply(u, op); err != nil {
			return errACLSetUser(op, err)
		}
	}
	u.refresh()
	if old != nil {
		a.killPubsubIfNeeded(u, old, c.s)
		*old = *u // sessions keep pointing at the same user
	} else {
		a.acl.users[string(name)] = u
	}
	a.updateGate()
	c.w.OK()
	return nil
}

// ACL GETUSER username
func cmdACLGetUser(c *Ctx) error {
	u := c.a.acl.users[string(c.args[2])]
	w := c.w
	if u == nil {
		w.Null()
		return nil
	}
	w.Map(6)
	w.BulkString("flags")
	flags := u.flagNames()
	w.Set(len(flags))
	for _, f := range flags {
		w.BulkString(f)
	}
	w.BulkString("passwords")
	w.Array(len(u.passwords))
	for _, p := range u.passwords {
		w.BulkString(p)
	}
	describeSelectorReply(w, u.root())
	w.BulkString("selectors")
	w.Array(len(u.sels) - 1)
	for _, s := range u.sels[1:] {
		w.Map(3)
		describeSelectorReply(w, s)
	}
	return nil
}

func describeSelectorReply(w *proto.Writer, s *selector) {
	w.BulkString("commands")
	w.BulkString(s.describeCommands())
	w.BulkString("keys")
	if s.allKeys {
		w.BulkString("~*")
	} else {
		parts := make([]string, len(s.keys))
		for i, p := range s.keys {
			parts[i] = p.String()
		}
		w.BulkString(strings.Join(parts, " "))
	}
	w.BulkString("channels")
	if s.allChans {
		w.BulkString("&*")
	} else {
		parts := make([]string, len(s.chans))
		for i, ch := range s.chans {
			parts[i] = "&" + ch
		}
		w.BulkString(strings.Join(parts, " "))
	}
}

// ACL DELUSER username [username ...]
func cmdACLDelUser(c *Ctx) error {
	for _, name := range c.args[2:] {
		if string(name) == "default" {
			return ErrACLDelDefault
		}
	}
	n := 0
	for _, name := range c.args[2:] {
		u := c.a.acl.users[string(name)]
		if u == nil {
			continue
		}
		delete(c.a.acl.users, string(name))
		c.a.dropUser(u, c.s)
		n++
	}
	c.a.updateGate()
	c.w.Int(int64(n))
	return nil
}

// ACL LIST
func cmdACLList(c *Ctx) error {
	us := c.a.acl.sortedUsers()
	c.w.Array(len(us))
	for _, u := range us {
		c.w.BulkString("user " + u.name + " " + u.describe())
	}
	return nil
}

// ACL USERS
func cmdACLUsers(c *Ctx) error {
	us := c.a.acl.sortedUsers()
	c.w.Array(len(us))
	for _, u := range us {
		c.w.BulkString(u.name)
	}
	return nil
}

// ACL WHOAMI
func cmdACLWhoami(c *Ctx) error {
	c.w.BulkString(c.s.user.name)
	return nil
}

// ACL CAT [category]
func cmdACLCat(c *Ctx) error {
	if len(c.args) == 2 {
		c.w.Array(len(aclCategories))
		for _, cat := range aclCategories {
			c.w.BulkString(cat)
		}
		return nil
	}
	if len(c.args) != 3 {
		return errSubcommandSyntax("acl", c.args[1])
	}
	i := categoryIndex(string(c.args[2]))
	if i < 0 {
		return errACLUnknownCategory(c.args[2])
	}
	x := aclCmds()
	var names []string
	for _, cmd := range commands.list {
		if x.cats[cmd.idx]&(1<<i) != 0 {
			names = append(names, cmd.Name)
		}
		for _, sub := range sortedSubs(cmd) {
			if x.cats[sub.idx]&(1<<i) != 0 {
				names = append(names, sub.Name)
			}
		}
	}
	c.w.Array(len(names))
	for _, n := range names {
		c.w.BulkString(n)
	}
	return nil
}

// ACL GENPASS [bits]
func cmdACLGenPass(c *Ctx) error {
	bits := int64(256)
	if len(c.args) == 3 {
		v, ok := parseIntOK(c.args[2])
		if !ok {
			return ErrNotInteger
		}
		bits = v
	} else if len(c.args) > 3 {
		return errSubcommandSyntax("acl", c.args[1])
	}
	if bits <= 0 || bits > 4096 {
		return ErrACLGenPassBits
	}
	chars := (bits + 3) / 4
	raw := make([]byte, (chars+1)/2)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	c.w.BulkString(hex.EncodeToString(raw)[:chars])
	return nil
}

// ACL DRYRUN username command [arg ...]
func cmdACLDryRun(c *Ctx) error {
	u := c.a.acl.users[string(c.args[2])]
	if u == nil {
		return errACLNoUser(c.args[2])
	}
	argv := c.args[3:]
	cmd := c.a.Lookup(argv[0])
	if cmd != nil && cmd.subs != nil {
		if len(argv) < 2 {
			cmd = nil
		} else {
			cmd = cmd.sub(argv[1])
		}
	}
	if cmd == nil {
		return errACLNoCommand(c.args[3])
	}
	if !cmd.arityOK(len(argv)) {
		return errWrongArgs(cmd.Name)
	}
	d, pos := u.check(cmd, argv)
	switch d {
	case aclDeniedCmd:
		c.w.BulkString("This user has no permissions to run the '" + cmd.Name + "' command")
	case aclDeniedKey:
		c.w.BulkString("This user has no permissions to access the '" + string(argv[pos]) + "' key")
	case aclDeniedChannel:
		c.w.BulkString("This user has no permissions to access the '" + string(argv[pos]) + "' channel")
	default:
		c.w.OK()
	}
	return nil
}

// ACL LOAD
func cmdACLLoad(c *Ctx) error {
	if c.a.cfg.ACLFile == "" {
		return ErrACLNoFile
	}
	if msg := c.a.loadACLFile(c.s); msg != "" {
		return ReplyError("ERR " + msg)
	}
	c.a.updateGate()
	c.w.OK()
	return nil
}

// ACL SAVE
func cmdACLSave(c *Ctx) error {
	if c.a.cfg.ACLFile == "" {
		return ErrACLNoFile
	}
	if err := c.a.saveACLFile(); err != nil {
		c.a.log.Warn().Err(err).Str("file", c.a.cfg.ACLFile).Msg("ACL SAVE failed")
		return ErrACLSave
	}
	c.w.OK()
	return nil
}

// ACL HELP
func cmdACLHelp(c *Ctx) error {
	return helpReply(c, "acl", []string{
		"CAT [<category>]",
		"    List all commands that belong to <category>, or all command categories",
		"    when no category is specified.",
		"DELUSER <username> [<username> ...]",
		"    Delete a list of users.",
		"DRYRUN <username> <command> [<arg> ...]",
		"    Returns whether the user can execute the given command without executing the command.",
		"GETUSER <username>",
		"    Get the user's details.",
		"GENPASS [<bits>]",
		"    Generate a secure 256-bit user password. The optional `bits` argument can",
		"    be used to specify a different size.",
		"LIST",
		"    Show users details in config file format.",
		"LOAD",
		"    Reload users from the ACL file.",
		"LOG [<count> | RESET]",
		"    Show the ACL log entries.",
		"SAVE",
		"    Save the current config to the ACL file.",
		"SETUSER <username> <attribute> [<attribute> ...]",
		"    Create or modify a user with the specified attributes.",
		"USERS",
		"    List all the registered usernames.",
		"WHOAMI",
		"    Return the current connection username.",
		"HELP",
		"    Prints this help.",
	})
}

// ACL LOG [count | RESET]
func cmdACLLog(c *Ctx) error {
	count := int64(10)
	if len(c.args) == 3 {
		if c.argEq(2, "reset") {
			c.a.acl.log = nil
			c.w.OK()
			return nil
		}
		v, ok := parseIntOK(c.args[2])
		if !ok {
			return ErrNotInteger
		}
		count = max(v, 0)
	} else if len(c.args) > 3 {
		return errSubcommandSyntax("acl", c.args[1])
	}
	log := c.a.acl.log
	count = min(count, int64(len(log)))
	w := c.w
	w.Array(int(count))
	now := time.Now().UnixMilli()
	for _, e := range log[:count] {
		w.Map(7)
		w.BulkString("count")
		w.Int(e.count)
		w.BulkString("reason")
		w.BulkString(map[aclDenial]string{aclDeniedCmd: "command", aclDeniedKey: "key", aclDeniedChannel: "channel", aclDeniedAuth: "auth"}[e.reason])
		w.BulkString("context")
		w.BulkString(e.context)
		w.BulkString("object")
		w.BulkString(e.object)
		w.BulkString("username")
		w.BulkString(e.username)
		w.BulkString("age-seconds")
		w.Double(float64(now-e.ctime) / 1000)
		w.BulkString("client-info")
		w.BulkString(e.cinfo)
	}
	return nil
}
