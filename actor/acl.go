package actor

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sort"
	"strings"
	"sync"
)

// Users and their permissions, as Redis 7.0's ACL has them (acl.c): a user
// has flags, SHA-256 password hashes and one or more selectors; a command
// runs when one selector allows the command, every key it names (with the
// access the key spec says: read for ACCESS, write for INSERT, DELETE and
// UPDATE) and every channel it publishes or subscribes to.
//
// The check must cost nothing for the default user: a user whose root
// selector allows every command, key and channel is "open" (aclUser.open,
// recomputed whenever the user changes), and the dispatcher tests that one
// field before anything else. For the others, each selector keeps a bitmap
// indexed by Command.idx; categories and key positions come from the
// command metadata (commands.json), never from a list kept here.

// keyPattern is a key pattern with the access it grants.
type keyPattern struct {
	pattern string
	perm    uint8 // aclRead | aclWrite
}

const (
	aclRead  uint8 = 1
	aclWrite uint8 = 2
	aclAll         = aclRead | aclWrite
)

// selector is one set of permissions (Redis's aclSelector). The root
// selector is the user's own rules; others come from "(...)".
type selector struct {
	// cmds has a bit per Command.idx, and bit futureBit set by +@all
	// (Redis's "future commands" bit, which decides whether the rules are
	// described from +@all or from -@all).
	cmds                       []uint64
	allCmds, allKeys, allChans bool
	keys                       []keyPattern
	chans                      []string
	// firstArgs are +cmd|arg rules for commands without subcommands
	// (+select|0): the command runs only with that first argument.
	firstArgs map[int][]string
}

// aclUser is one user.
type aclUser struct {
	name string
	on   bool
	// sanitize is "sanitize-payload" (1), "skip-sanitize-payload" (2) or
	// neither (0); Cellar has no DUMP payloads to sanitize, but keeps the
	// flag as Redis shows it.
	sanitize  uint8
	nopass    bool
	passwords []string // lower-case hex SHA-256, in the order added
	sels      []*selector
	// open: the root selector allows every command, key and channel; the
	// dispatcher checks nothing more.
	open bool
}

// aclIndex is what the ACL code needs of the command table, built once:
// every command and subcommand by idx, each one's categories as a bit mask
// (bit i is aclCategories[i]), and the channel arguments Redis checks.
type aclIndex struct {
	byIdx []*Command
	cats  []uint32
}

var aclCmds = sync.OnceValue(func() *aclIndex {
	x := &aclIndex{byIdx: make([]*Command, commands.n), cats: make([]uint32, commands.n)}
	add := func(c *Command) {
		x.byIdx[c.idx] = c
		for _, name := range c.meta.categories {
			for i, cat := range aclCategories {
				if name[1:] == cat {
					x.cats[c.idx] |= 1 << i
				}
			}
		}
	}
	for _, c := range commands.list {
		add(c)
		for _, s := range c.Subs {
			add(s)
		}
	}
	return x
})

// futureBit is the bitmap's last bit, past every command.
func futureBit() int { return commands.n }

func newSelector() *selector {
	return &selector{cmds: make([]uint64, (commands.n+1+63)/64)}
}

func (s *selector) bit(idx int) bool { return s.cmds[idx/64]&(1<<(idx%64)) != 0 }

func (s *selector) setBit(idx int, on bool) {
	if on {
		s.cmds[idx/64] |= 1 << (idx % 64)
		return
	}
	s.cmds[idx/64] &^= 1 << (idx % 64)
	s.allCmds = false
}

// setCmd allows or denies a command, and with a container all its
// subcommands (Redis's ACLChangeSelectorPerm).
func (s *selector) setCmd(c *Command, on bool) {
	s.setBit(c.idx, on)
	delete(s.firstArgs, c.idx)
	for _, sub := range c.Subs {
		s.setBit(sub.idx, on)
	}
}

// setCategory allows or denies every command in category i.
func (s *selector) setCategory(i int, on bool) {
	x := aclCmds()
	for _, c := range commands.list {
		if x.cats[c.idx]&(1<<i) != 0 {
			s.setCmd(c, on)
		}
		for _, sub := range c.Subs {
			if x.cats[sub.idx]&(1<<i) != 0 {
				s.setCmd(sub, on)
			}
		}
	}
}

func (s *selector) clone() *selector {
	n := *s
	n.cmds = append([]uint64(nil), s.cmds...)
	n.keys = append([]keyPattern(nil), s.keys...)
	n.chans = append([]string(nil), s.chans...)
	if s.firstArgs != nil {
		n.firstArgs = map[int][]string{}
		for k, v := range s.firstArgs {
			n.firstArgs[k] = append([]string(nil), v...)
		}
	}
	return &n
}

// aclState is the actor's users and ACL LOG.
type aclState struct {
	users map[string]*aclUser
	def   *aclUser // "default": never deleted, only changed in place
	log   []*aclLogEntry
	// pubsubAll is acl-pubsub-default: new selectors start with
	// allchannels.
	pubsubAll bool
}

func (u *aclUser) root() *selector { return u.sels[0] }

// newUser is a user as ACL SETUSER creates it: off, no passwords, no
// permissions.
func (st *aclState) newUser(name string) *aclUser {
	u := &aclUser{name: name, sels: []*selector{newSelector()}}
	u.root().allChans = st.pubsubAll
	return u
}

// newDefaultUser is Redis's default user: on, nopass, everything.
func (st *aclState) newDefaultUser() *aclUser { return st.internalUser() }

// refresh recomputes the open flag after a change.
func (u *aclUser) refresh() {
	r := u.root()
	u.open = r.allCmds && r.allKeys && r.allChans
}

func (u *aclUser) clone() *aclUser {
	n := *u
	n.passwords = append([]string(nil), u.passwords...)
	n.sels = make([]*selector, len(u.sels))
	for i, s := range u.sels {
		n.sels[i] = s.clone()
	}
	return &n
}

func hashPassword(p []byte) string {
	sum := sha256.Sum256(p)
	return hex.EncodeToString(sum[:])
}

func validHash(h []byte) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < 'a' || c > 'f') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// hasSpaces is Redis's ACLStringHasSpaces: whitespace or NUL.
func hasSpaces(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return true
		}
	}
	return false
}

// aclErr is why a rule was refused (Redis's errno values).
type aclErr string

const (
	aclErrUnknown   aclErr = "Unknown command or category name in ACL"
	aclErrSyntax    aclErr = "Syntax error"
	aclErrAllKeys   aclErr = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	aclErrAllChans  aclErr = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
	aclErrNoPass    aclErr = "The password you are trying to remove from the user does not exist"
	aclErrBadHash   aclErr = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	aclErrSubFirst  aclErr = "Allowing first-arg of a subcommand is not supported"
	aclErrDuplicate aclErr = "Duplicate user found. A user can only be defined once in config files"
)

func (e aclErr) Error() string { return string(e) }

// apply applies one rule to u (Redis's ACLSetUser). It does not refresh u.
func (st *aclState) apply(u *aclUser, op []byte) error {
	if len(op) == 0 {
		return nil
	}
	switch {
	case eqFold(op, "on"):
		u.on = true
	case eqFold(op, "off"):
		u.on = false
	case eqFold(op, "skip-sanitize-payload"):
		u.sanitize = 2
	case eqFold(op, "sanitize-payload"):
		u.sanitize = 1
	case eqFold(op, "nopass"):
		u.nopass, u.passwords = true, nil
	case eqFold(op, "resetpass"):
		u.nopass, u.passwords = false, nil
	case op[0] == '>' || op[0] == '#':
		var h string
		if op[0] == '>' {
			h = hashPassword(op[1:])
		} else {
			if !validHash(op[1:]) {
				return aclErrBadHash
			}
			h = string(op[1:])
		}
		found := false
		for _, p := range u.passwords {
			found = found || p == h
		}
		if !found {
			u.passwords = append(u.passwords, h)
		}
		u.nopass = false
	case op[0] == '<' || op[0] == '!':
		var h string
		if op[0] == '<' {
			h = hashPassword(op[1:])
		} else {
			if !validHash(op[1:]) {
				return aclErrBadHash
			}
			h = string(op[1:])
		}
		i := -1
		for j, p := range u.passwords {
			if p == h {
				i = j
			}
		}
		if i < 0 {
			return aclErrNoPass
		}
		u.passwords = append(u.passwords[:i:i], u.passwords[i+1:]...)
	case op[0] == '(' && op[len(op)-1] == ')':
		s := newSelector()
		s.allChans = st.pubsubAll
		for _, part := range strings.Fields(string(op[1 : len(op)-1])) {
			if err := st.applySelector(s, []byte(part)); err != nil {
				return err
			}
		}
		u.sels = append(u.sels, s)
	case eqFold(op, "clearselectors"):
		u.sels = u.sels[:1]
	case eqFold(op, "reset"):
		for _, r := range []string{"resetpass", "resetkeys", "resetchannels"} {
			st.apply(u, []byte(r))
		}
		if st.pubsubAll {
			st.apply(u, []byte("allchannels"))
		}
		for _, r := range []string{"off", "sanitize-payload", "clearselectors", "-@all"} {
			st.apply(u, []byte(r))
		}
	default:
		return st.applySelector(u.root(), op)
	}
	return nil
}

// applySelector applies a selector rule (Redis's ACLSetSelector).
func (st *aclState) applySelector(s *selector, op []byte) error {
	switch {
	case eqFold(op, "allkeys") || string(op) == "~*":
		s.allKeys, s.keys = true, nil
	case eqFold(op, "resetkeys"):
		s.allKeys, s.keys = false, nil
	case eqFold(op, "allchannels") || string(op) == "&*":
		s.allChans, s.chans = true, nil
	case eqFold(op, "resetchannels"):
		s.allChans, s.chans = false, nil
	case eqFold(op, "allcommands") || eqFold(op, "+@all"):
		for i := range s.cmds {
			s.cmds[i] = ^uint64(0)
		}
		s.allCmds, s.firstArgs = true, nil
	case eqFold(op, "nocommands") || eqFold(op, "-@all"):
		clear(s.cmds)
		s.allCmds, s.firstArgs = false, nil
	case op[0] == '~' || op[0] == '%':
		if s.allKeys {
			return aclErrAllKeys
		}
		perm, off := aclAll, 1
		if op[0] == '%' {
			perm = 0
			for ; off < len(op); off++ {
				switch c := op[off] | 0x20; {
				case c == 'r' && perm&aclRead == 0:
					perm |= aclRead
					continue
				case c == 'w' && perm&aclWrite == 0:
					perm |= aclWrite
					continue
				case op[off] == '~':
					off++
				default:
					return aclErrSyntax
				}
				break
			}
		}
		pat := op[off:]
		if hasSpaces(pat) {
			return aclErrSyntax
		}
		found := false
		for i := range s.keys {
			if s.keys[i].pattern == string(pat) {
				s.keys[i].perm |= perm
				found = true
			}
		}
		if !found {
			s.keys = append(s.keys, keyPattern{pattern: string(pat), perm: perm})
		}
		s.allKeys = false
	case op[0] == '&':
		if s.allChans {
			return aclErrAllChans
		}
		if hasSpaces(op[1:]) {
			return aclErrSyntax
		}
		found := false
		for _, c := range s.chans {
			found = found || c == string(op[1:])
		}
		if !found {
			s.chans = append(s.chans, string(op[1:]))
		}
		s.allChans = false
	case op[0] == '+' && (len(op) < 2 || op[1] != '@'):
		name := string(op[1:])
		bar := strings.LastIndexByte(name, '|')
		if bar < 0 {
			c := aclLookup(name)
			if c == nil {
				return aclErrUnknown
			}
			s.setCmd(c, true)
			return nil
		}
		c := aclLookup(name[:bar])
		switch {
		case c == nil:
			return aclErrUnknown
		case c.parent != nil:
			return aclErrSubFirst
		case bar == len(name)-1:
			return aclErrSyntax
		case c.Subs != nil:
			sub := aclLookup(name)
			if sub == nil {
				return aclErrUnknown
			}
			s.setCmd(sub, true)
		default:
			arg := name[bar+1:]
			if s.firstArgs == nil {
				s.firstArgs = map[int][]string{}
			}
			for _, have := range s.firstArgs[c.idx] {
				if strings.EqualFold(have, arg) {
					return nil
				}
			}
			s.firstArgs[c.idx] = append(s.firstArgs[c.idx], arg)
		}
	case op[0] == '-' && (len(op) < 2 || op[1] != '@'):
		c := aclLookup(string(op[1:]))
		if c == nil {
			return aclErrUnknown
		}
		s.setCmd(c, false)
	case (op[0] == '+' || op[0] == '-') && op[1] == '@':
		i := categoryIndex(string(op[2:]))
		if i < 0 {
			return aclErrUnknown
		}
		s.setCategory(i, op[0] == '+')
	default:
		return aclErrSyntax
	}
	return nil
}

// aclLookup finds a command or "container|sub" by name, case-insensitively.
func aclLookup(name string) *Command {
	top, sub, has := strings.Cut(name, "|")
	c := Lookup([]byte(top))
	if c == nil || !has {
		return c
	}
	if strings.Contains(sub, "|") {
		return nil
	}
	return c.sub([]byte(sub))
}

func categoryIndex(name string) int {
	for i, c := range aclCategories {
		if strings.EqualFold(c, name) {
			return i
		}
	}
	return -1
}

// mergeSelectorArgs joins a selector spread over several arguments
// ("(~a" "+get)") into one, as Redis's ACLMergeSelectorArguments; -1 when
// all are balanced, else the index of the unmatched opening one.
func mergeSelectorArgs(args [][]byte) ([][]byte, int) {
	var out [][]byte
	open := -1
	var cur []byte
	for j, op := range args {
		if len(op) > 0 && op[0] == '(' && op[len(op)-1] != ')' {
			cur, open = append([]byte(nil), op...), j
			continue
		}
		if open != -1 {
			cur = append(append(cur, ' '), op...)
			if len(op) > 0 && op[len(op)-1] == ')' {
				open = -1
				out = append(out, cur)
			}
			continue
		}
		out = append(out, op)
	}
	if open != -1 {
		return nil, open
	}
	return out, -1
}

// checkPassword reports whether pass is one of u's passwords (or u has
// none to check), comparing hashes in constant time.
func (u *aclUser) checkPassword(pass []byte) bool {
	if !u.on {
		return false
	}
	if u.nopass {
		return true
	}
	h := []byte(hashPassword(pass))
	ok := false
	for _, p := range u.passwords {
		if subtle.ConstantTimeCompare(h, []byte(p)) == 1 {
			ok = true
		}
	}
	return ok
}

// Denials, in Redis's order of relevance (ACL_DENIED_*).
type aclDenial uint8

const (
	aclOK aclDenial = iota
	aclDeniedCmd
	aclDeniedKey
	aclDeniedAuth
	aclDeniedChannel
)

// checkKey is Redis's ACLSelectorCheckKey.
func (s *selector) checkKey(key []byte, flags []string) bool {
	if s.allKeys {
		return true
	}
	var need uint8
	for _, f := range flags {
		switch f {
		case "ACCESS":
			need |= aclRead
		case "INSERT", "DELETE", "UPDATE":
			need |= aclWrite
		}
	}
	for _, p := range s.keys {
		if p.perm&need != need {
			continue
		}
		if globMatch([]byte(p.pattern), key) {
			return true
		}
	}
	return false
}

// checkChannel: a channel is matched against the patterns; a pattern (from
// PSUBSCRIBE) only literally.
func (s *selector) checkChannel(ch []byte, isPattern bool) bool {
	if s.allChans {
		return true
	}
	for _, p := range s.chans {
		if (isPattern && p == string(ch)) || (!isPattern && globMatch([]byte(p), ch)) {
			return true
		}
	}
	return false
}

// channelArgs says which arguments of a command are channels that the ACL
// checks, as Redis's getChannelsFromCommand: publishing and subscribing
// name them, unsubscribing does not (Command.channels).
type channelArgs uint8

const (
	noChannels   channelArgs = iota
	firstChannel             // the first argument (PUBLISH, SPUBLISH)
	everyChannel             // every argument (SUBSCRIBE, SSUBSCRIBE)
	everyPattern             // every argument, channel patterns (PSUBSCRIBE)
)

// span is the channel arguments of a call with argc arguments: from, to
// (inclusive), and whether they are patterns; ok false: none.
func (c channelArgs) span(argc int) (from, to int, pattern, ok bool) {
	switch c {
	case firstChannel:
		return 1, 1, false, true
	case everyChannel, everyPattern:
		return 1, argc - 1, c == everyPattern, true
	}
	return 0, 0, false, false
}

// checkCmd is Redis's ACLSelectorCheckCmd; pos is the offending argument
// for a key or channel denial.
func (s *selector) checkCmd(cmd *Command, args [][]byte, keys []foundKey) (aclDenial, int) {
	if !s.allCmds && !cmd.Is(FlagNoAuth) && !s.bit(cmd.idx) {
		allowed := s.firstArgs[cmd.idx]
		idx := 1
		if cmd.parent != nil {
			idx = 2
		}
		ok := false
		if len(args) > idx {
			for _, a := range allowed {
				ok = ok || strings.EqualFold(a, string(args[idx]))
			}
		}
		if !ok {
			return aclDeniedCmd, 0
		}
	}
	if !s.allKeys {
		for _, k := range keys {
			if !s.checkKey(args[k.pos], k.flags) {
				return aclDeniedKey, k.pos
			}
		}
	}
	if !s.allChans {
		if from, to, pat, ok := cmd.channels.span(len(args)); ok {
			for i := from; i <= to && i < len(args); i++ {
				if !s.checkChannel(args[i], pat) {
					return aclDeniedChannel, i
				}
			}
		}
	}
	return aclOK, 0
}

// commandKeys are the key arguments Redis's ACL checks (findKeys).
func commandKeys(cmd *Command, args [][]byte) []foundKey {
	if !hasKeys(cmd) {
		return nil
	}
	keys, ok := findKeys(cmd, args)
	if !ok {
		return nil
	}
	return keys
}

// check is Redis's ACLCheckAllUserCommandPerm: OK if any selector allows
// the command; else the most relevant denial (a key or channel over the
// command, the last argument among equals) and its argument.
func (u *aclUser) check(cmd *Command, args [][]byte) (aclDenial, int) {
	if u.open {
		return aclOK, 0
	}
	var keys []foundKey
	keysDone := false
	worst, pos := aclDeniedCmd, 0
	for _, s := range u.sels {
		if !keysDone && !s.allKeys {
			keys, keysDone = commandKeys(cmd, args), true
		}
		d, p := s.checkCmd(cmd, args, keys)
		if d == aclOK {
			return aclOK, 0
		}
		if d > worst || (d == worst && p > pos) {
			worst, pos = d, p
		}
	}
	return worst, pos
}

// describeCommands is Redis 7.0's ACLDescribeSelectorCommandRules: +@all
// or -@all, then the categories that fit best, then single commands. (The
// single commands come in the table's order; Redis's follow its hash
// table.)
func (s *selector) describeCommands() string {
	x := aclCmds()
	var b strings.Builder
	fake := newSelector()
	additive := !s.bit(futureBit())
	if additive {
		b.WriteString("-@all ")
	} else {
		b.WriteString("+@all ")
		for i := range fake.cmds {
			fake.cmds[i] = ^uint64(0)
		}
	}
	temp := newSelector()
	copy(temp.cmds, s.cmds)
	applied := make([]bool, len(aclCategories))
	for {
		best, mindiff, maxsame := -1, int(^uint(0)>>1), 0
		for j := range aclCategories {
			if applied[j] {
				continue
			}
			on, off := 0, 0
			for idx, c := range x.byIdx {
				if c != nil && x.cats[idx]&(1<<j) != 0 {
					if temp.bit(idx) {
						on++
					} else {
						off++
					}
				}
			}
			diff, same := on, off
			if additive {
				diff, same = off, on
			}
			if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
				best, mindiff, maxsame = j, diff, same
			}
		}
		if best == -1 {
			break
		}
		fake.setCategory(best, additive)
		temp.setCategory(best, !additive)
		if additive {
			b.WriteString("+@")
		} else {
			b.WriteString("-@")
		}
		b.WriteString(aclCategories[best])
		b.WriteByte(' ')
		applied[best] = true
	}
	single := func(c *Command) {
		user, have := s.bit(c.idx), fake.bit(c.idx)
		if user != have {
			if user {
				b.WriteByte('+')
			} else {
				b.WriteByte('-')
			}
			b.WriteString(c.Name)
			b.WriteByte(' ')
			fake.setCmd(c, user)
		}
	}
	for _, c := range commands.list {
		single(c)
		for _, sub := range sortedSubs(c) {
			single(sub)
		}
		if !s.bit(c.idx) {
			for _, arg := range s.firstArgs[c.idx] {
				b.WriteString("+" + c.Name + "|" + arg + " ")
			}
		}
	}
	out := b.String()
	return out[:len(out)-1]
}

func sortedSubs(c *Command) []*Command {
	subs := append([]*Command(nil), c.Subs...)
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
	return subs
}

func (p keyPattern) String() string {
	switch p.perm {
	case aclRead:
		return "%R~" + p.pattern
	case aclWrite:
		return "%W~" + p.pattern
	}
	return "~" + p.pattern
}

// describe is Redis's ACLDescribeSelector: keys, channels, commands.
func (s *selector) describe() string {
	var b strings.Builder
	if s.allKeys {
		b.WriteString("~* ")
	} else {
		for _, p := range s.keys {
			b.WriteString(p.String() + " ")
		}
	}
	if s.allChans {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range s.chans {
			b.WriteString("&" + c + " ")
		}
	}
	b.WriteString(s.describeCommands())
	return b.String()
}

// describe is Redis's ACLDescribeUser: ACL LIST's line after the name.
func (u *aclUser) describe() string {
	var b strings.Builder
	for _, f := range u.flagNames() {
		b.WriteString(f + " ")
	}
	for _, p := range u.passwords {
		b.WriteString("#" + p + " ")
	}
	for i, s := range u.sels {
		if i == 0 {
			b.WriteString(s.describe())
		} else {
			b.WriteString(" (" + s.describe() + ")")
		}
	}
	return b.String()
}

// flagNames are the user's flags in Redis's order.
func (u *aclUser) flagNames() []string {
	var f []string
	if u.on {
		f = append(f, "on")
	} else {
		f = append(f, "off")
	}
	if u.nopass {
		f = append(f, "nopass")
	}
	switch u.sanitize {
	case 2:
		f = append(f, "skip-sanitize-payload")
	case 1:
		f = append(f, "sanitize-payload")
	}
	return f
}

// sortedUsers lists the users by name (Redis's radix tree order).
func (st *aclState) sortedUsers() []*aclUser {
	us := make([]*aclUser, 0, len(st.users))
	for _, u := range st.users {
		us = append(us, u)
	}
	sort.Slice(us, func(i, j int) bool { return us[i].name < us[j].name })
	return us
}

// internalUser is the user of the actor's own sessions (the redo log's
// replay): allowed everything whatever the default user's rules are.
func (st *aclState) internalUser() *aclUser {
	u := st.newUser("default")
	for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		st.apply(u, []byte(op))
	}
	u.refresh()
	return u
}

// unrestrictedRead is Redis's ACLUserCheckCmdWithUnrestrictedKeyAccess for
// read access: some selector allows the command and reads of every key
// (allkeys, "~*" or "%R~*"). SORT's BY and GET patterns need it (they read
// keys the command line does not name): Ctx.canReadAnyKey.
func (u *aclUser) unrestrictedRead(cmd *Command, args [][]byte) bool {
	if u.open {
		return true
	}
	var keys []foundKey
	keysDone := false
	for _, s := range u.sels {
		if !keysDone && !s.allKeys {
			keys, keysDone = commandKeys(cmd, args), true
		}
		if d, _ := s.checkCmd(cmd, args, keys); d != aclOK {
			continue
		}
		if s.allKeys {
			return true
		}
		for _, p := range s.keys {
			if p.perm&aclRead != 0 && p.pattern == "*" {
				return true
			}
		}
	}
	return false
}

// canReadAnyKey says whether the running command's user may read any key
// (SORT ... BY pattern / GET pattern refuse otherwise, with
// ErrSortByACL and ErrSortGetACL).
func (c *Ctx) canReadAnyKey() bool { return c.s.user.unrestrictedRead(c.cmd, c.args) }

// aclLogEntry is one entry of the ACL LOG (aclcmd.go, logDenial).
type aclLogEntry struct {
	count            int64
	reason           aclDenial
	context          string
	object, username string
	ctime            int64 // ms
	cinfo            string
}
