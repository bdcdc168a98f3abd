package actor

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Where the core meets the ACL (acl.go has the users and their rules;
// aclcmd.go the ACL command): the users at start (initACL, requirepass,
// the ACL file), AUTH's and HELLO's check, the permission checks of the
// dispatcher, EXEC and redis.call, and the ACL LOG those checks write.

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
