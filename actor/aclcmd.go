package actor

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cellar-db/cellar/proto"
)

// The ACL command, AUTH's user lookup, the ACL LOG, and the permission
// check the dispatcher calls (acl.go has the users and rules).

var aclCommands = registerCommands([]*Command{
	{Name: "acl", Summary: "Inspects and changes users and their permissions.", Subs: []*Command{
		{Name: "acl|setuser", Summary: "Creates a user or changes its rules.", Handler: cmdACLSetUser},
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

// initACL creates the default user (with requirepass as its password)
// and the users the configuration gives, from Config.Users or the
// ACL file.
func (a *Actor) initACL() error {
	a.acl.users = map[string]*aclUser{}
	a.acl.def = a.acl.newDefaultUser()
	a.acl.users["default"] = a.acl.def
	a.protectedMode = !a.cfg.NoProtectedMode
	a.setRequirePass(a.cfg.RequirePass)
	if a.cfg.ACLFile != "" && len(a.cfg.Users) > 0 {
		return fmt.Errorf("actor: users are defined both in the configuration and in the ACL file %s; define them in one place", a.cfg.ACLFile)
	}
	seen := map[string]bool{}
	for _, line := range a.cfg.Users {
		fields := strings.Fields(line)
		if len(fields) > 0 && fields[0] == "user" {
			fields = fields[1:]
		}
		if len(fields) == 0 {
			return fmt.Errorf("actor: users: an empty user line")
		}
		name := fields[0]
		if seen[name] {
			return fmt.Errorf("actor: users: %s: %s", name, aclErrDuplicate)
		}
		seen[name] = true
		u := a.acl.users[name]
		if u == nil {
			u = a.acl.newUser(name)
		} else {
			a.acl.apply(u, []byte("reset"))
		}
		args := make([][]byte, 0, len(fields)-1)
		for _, f := range fields[1:] {
			args = append(args, []byte(f))
		}
		ops, bad := mergeSelectorArgs(args)
		if bad >= 0 {
			return fmt.Errorf("actor: users: %s: unmatched parenthesis in a selector", name)
		}
		for _, op := range ops {
			if err := a.acl.apply(u, op); err != nil {
				return fmt.Errorf("actor: users: error in rule '%s' of user '%s': %s", op, name, err)
			}
		}
		u.refresh()
		a.acl.users[name] = u
	}
	if a.cfg.ACLFile != "" {
		if _, err := os.Stat(a.cfg.ACLFile); err == nil {
			if msg := a.loadACLFile(nil); msg != "" {
				return fmt.Errorf("actor: aclfile: %s", msg)
			}
			a.updateGate()
		} else if !os.IsNotExist(err) {
			return fmt.Errorf("actor: aclfile: %w", err)
		}
	}
	a.updateGate() // the users of the configuration
	return nil
}

// setRequirePass makes requirepass the default user's only password, or
// the default user nopass when it is empty (Redis's
// ACLUpdateDefaultUserPassword).
func (a *Actor) setRequirePass(p string) {
	a.cfg.RequirePass = p
	u := a.acl.def
	a.acl.apply(u, []byte("resetpass"))
	if p != "" {
		a.acl.apply(u, append([]byte(">"), p...))
	} else {
		a.acl.apply(u, []byte("nopass"))
	}
	u.refresh()
	a.updateGate()
}

// authRequired is Redis's rule: a new connection starts authenticated
// only while the default user is on and needs no password.
func (a *Actor) authRequired() bool {
	return !a.acl.def.nopass || !a.acl.def.on
}

// loadACLFile replaces the users with the ACL file's (Redis's
// ACLLoadFromFile): all or nothing; "" on success, else every problem
// in one line.
func (a *Actor) loadACLFile(cur *session) string {
	name := a.cfg.ACLFile
	data, err := os.ReadFile(name)
	if err != nil {
		return fmt.Sprintf("Error loading ACLs, opening file '%s': %s", name, syscallText(err))
	}
	users := map[string]*aclUser{}
	var errs strings.Builder
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		var argv [][]byte
		for _, f := range strings.Split(line, " ") {
			if f != "" {
				argv = append(argv, []byte(f))
			}
		}
		if len(argv) == 0 {
			continue
		}
		if string(argv[0]) != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", name, n)
			continue
		}
		uname := string(argv[1])
		if users[uname] != nil {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", uname, n)
			continue
		}
		u := a.acl.newUser(uname)
		users[uname] = u
		ops, bad := mergeSelectorArgs(argv[2:])
		if bad >= 0 {
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", name, n)
		}
		syntax := false
		for _, op := range ops {
			op = bytes.Trim(op, "\t\r\n")
			if err := a.acl.apply(u, op); err != nil {
				if err == aclErrUnknown {
					fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", name, n, op, err)
				} else if !syntax {
					fmt.Fprintf(&errs, "%s:%d: %s. ", name, n, err)
					syntax = true
				}
			}
		}
		u.refresh()
	}
	if errs.Len() > 0 {
		return errs.String() + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
	}
	// The default user is referenced by sessions: copy the file's rules
	// into it rather than replacing it.
	def := users["default"]
	if def == nil {
		def = a.acl.newDefaultUser()
	}
	*a.acl.def = *def
	users["default"] = a.acl.def
	old := a.acl.users
	a.acl.users = users
	for _, u := range old {
		if u != a.acl.def {
			a.dropUser(u, cur)
		}
	}
	return ""
}

// syscallText is an error's text without Go's "open name:" prefix, as
// strerror gives it.
func syscallText(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		err = pe.Err
	}
	s := err.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

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

// dropUser closes every connection authenticated as u (a deleted user,
// or one ACL LOAD replaced), as Redis's ACLFreeUserAndKillClients: each
// goes back to the default user, unauthenticated, and is closed after its
// current reply.
func (a *Actor) dropUser(u *aclUser, cur *session) {
	for _, s := range a.sessions {
		if s.user != u {
			continue
		}
		s.setUser(a.acl.def)
		s.setAuthed(false)
		if s == cur {
			s.closing = true
		} else {
			a.kill(s)
		}
	}
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

// The ACL LOG (Redis's addACLLogEntry): the newest entry first, at most
// acllog-max-len entries; a denial like one of the ten newest within a
// minute (same reason, context, object and user) updates it instead. Its
// entries (aclLogEntry) are acl.go's.

// logDenial records a denial by s. ctx is "toplevel", "multi" or "lua".
func (a *Actor) logDenial(s *session, reason aclDenial, ctx, object, username string) {
	now := time.Now()
	e := &aclLogEntry{count: 1, reason: reason, context: ctx, object: object, username: username,
		ctime: now.UnixMilli(), cinfo: strings.TrimSuffix(string(a.clientLine(nil, s, now)), "\n")}
	log := a.acl.log
	for i := 0; i < len(log) && i < 10; i++ {
		m := log[i]
		delta := m.ctime - e.ctime
		if delta < 0 {
			delta = -delta
		}
		if m.reason == e.reason && m.context == e.context && delta <= 60000 && m.object == e.object && m.username == e.username {
			m.cinfo, m.ctime = e.cinfo, e.ctime
			m.count++
			copy(log[1:i+1], log[:i])
			log[0] = m
			return
		}
	}
	log = append(log, nil)
	copy(log[1:], log)
	log[0] = e
	if max := a.aclLogMax(); int64(len(log)) > max {
		for i := max; i < int64(len(log)); i++ {
			log[i] = nil
		}
		log = log[:max]
	}
	a.acl.log = log
}

// aclLogMax is acllog-max-len.
func (a *Actor) aclLogMax() int64 {
	v, _ := strconv.ParseInt(a.storedValue(redisParamByName["acllog-max-len"]), 10, 64)
	return v
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

// authenticate checks user/pass and, when they fit, makes s that user's
// (Redis's ACLAuthenticateUser); a failure goes to the ACL LOG.
func (a *Actor) authenticate(s *session, cmdName []byte, user, pass []byte) bool {
	u := a.acl.users[string(user)]
	if u != nil && u.checkPassword(pass) {
		s.setUser(u)
		s.setAuthed(true)
		return true
	}
	ctx := "toplevel"
	if s.tx != nil {
		ctx = "multi"
	}
	a.logDenial(s, aclDeniedAuth, ctx, string(cmdName), string(user))
	return false
}

// aclRefuse is the dispatcher's check for a top-level command (dispatch.go
// calls it only for users that are not open): the NOPERM reply, and the
// denial in the ACL LOG.
func (a *Actor) aclRefuse(s *session, cmd *Command, args [][]byte) (string, bool) {
	d, pos := s.user.check(cmd, args)
	if d == aclOK {
		return "", false
	}
	s.lastCmd = cmd.Name // the entry's client line names it, as Redis's does
	ctx := "toplevel"
	if s.tx != nil {
		ctx = "multi"
	}
	a.logDenial(s, d, ctx, aclObject(d, cmd, args, pos), s.user.name)
	switch d {
	case aclDeniedCmd:
		return errNoPermCmd(cmd.Name).Error(), true
	case aclDeniedKey:
		return string(ErrNoPermKey), true
	}
	return string(ErrNoPermChannel), true
}

// aclExecRefuse is EXEC's check of each queued command when it runs: the
// rules may have changed since it was queued. tx is the transaction EXEC
// runs (the log's client line shows it, as Redis's does).
func (a *Actor) aclExecRefuse(s *session, tx *txState, args [][]byte) (string, bool) {
	if s.user.open {
		return "", false
	}
	cmd := a.Lookup(args[0])
	if cmd == nil {
		return "", false
	}
	if cmd.subs != nil && len(args) >= 2 {
		if cmd = cmd.sub(args[1]); cmd == nil {
			return "", false
		}
	}
	d, pos := s.user.check(cmd, args)
	if d == aclOK {
		return "", false
	}
	was := s.tx
	s.tx = tx
	a.logDenial(s, d, "multi", aclObject(d, cmd, args, pos), s.user.name)
	s.tx = was
	reason := "no permission to execute the command or subcommand"
	switch d {
	case aclDeniedKey:
		reason = "no permission to touch the specified keys"
	case aclDeniedChannel:
		reason = "no permission to access one of the channels used as arguments"
	}
	return errNoPermExec(reason).Error(), true
}

// aclScriptRefuse is redis.call's check: the script runs with its
// caller's permissions.
func (a *Actor) aclScriptRefuse(s *session, cmd *Command, args [][]byte) (ReplyError, bool) {
	if s.user.open {
		return "", false
	}
	d, pos := s.user.check(cmd, args)
	if d == aclOK {
		return "", false
	}
	a.logDenial(s, d, "lua", aclObject(d, cmd, args, pos), s.user.name)
	return errScriptNoPerm(d), true
}

func aclObject(d aclDenial, cmd *Command, args [][]byte, pos int) string {
	if d == aclDeniedCmd {
		return cmd.Name
	}
	return string(args[pos])
}
