package actor

import (
	"crypto/subtle"
	"net"
	"strconv"
	"sync/atomic"
)

// Gate is what the loops need to know of the ACL state to refuse a
// connection or a request before any command runs; the actor keeps it up
// to date, the loops read it (atomics: safe from any goroutine).
type Gate struct {
	// authRequired: the default user needs a password (or is off), so new
	// connections start unauthenticated and are held to the limits before
	// authentication (Redis's authRequired).
	authRequired atomic.Bool
	// denyRemote is protected mode in force: protected-mode yes and the
	// default user without a password.
	denyRemote atomic.Bool
	// keepAlive is tcp-keepalive in seconds (0: off), for the sockets
	// accepted from now on.
	keepAlive atomic.Int64
	// users is what AUTH needs of the ACL users, as of the last change,
	// for the loops' answers while a script is busy (a script cannot
	// change users: ACL and CONFIG are noscript). replica: the server is
	// a replica (HELLO's role).
	users   atomic.Pointer[authTable]
	replica atomic.Bool
}

// authTable is every ACL user's password state, by name.
type authTable map[string]authUser

type authUser struct {
	on, nopass bool
	passwords  []string
	// perm is a copy of the user's rules, for the loops' ACL check while
	// a script is busy (Gate.aclCheck); never changed once published.
	perm *aclUser
}

// CheckAuth is AUTH's check of user and pass (aclUser.checkPassword),
// from the users as of their last change. Safe from any goroutine.
func (g *Gate) CheckAuth(user, pass []byte) bool {
	t := g.users.Load()
	if t == nil {
		return false
	}
	u, ok := (*t)[string(user)]
	if !ok || !u.on {
		return false
	}
	if u.nopass {
		return true
	}
	h := []byte(hashPassword(pass))
	found := false
	for _, p := range u.passwords {
		if subtle.ConstantTimeCompare(h, []byte(p)) == 1 {
			found = true
		}
	}
	return found
}

// aclCheck is the dispatcher's ACL check of args for the user named (the
// default user for ""), from the users as of their last change. Safe
// from any goroutine.
func (g *Gate) aclCheck(user string, cmd *Command, args [][]byte) (aclDenial, int) {
	if user == "" {
		user = "default"
	}
	t := g.users.Load()
	if t == nil {
		return aclOK, 0
	}
	u, ok := (*t)[user]
	if !ok || u.perm == nil {
		return aclOK, 0 // a user deleted meanwhile: its clients are being closed
	}
	return u.perm.check(cmd, args)
}

// DefaultNoPass reports whether the default user needs no password (AUTH
// with a password alone is then refused).
func (g *Gate) DefaultNoPass() bool {
	t := g.users.Load()
	return t == nil || (*t)["default"].nopass
}

// Replica reports whether the server is a replica.
func (g *Gate) Replica() bool { return g.replica.Load() }

// TCPKeepAlive is tcp-keepalive in seconds (0: off).
func (g *Gate) TCPKeepAlive() int { return int(g.keepAlive.Load()) }

// keepAliveParam is tcp-keepalive, applied to new connections.
func (a *Actor) keepAliveParam() Param {
	return Param{Name: "tcp-keepalive", Get: func() string { return strconv.FormatInt(a.gate.keepAlive.Load(), 10) },
		Set: func(v string) error {
			nv, err := redisParamByName["tcp-keepalive"].normalize(v)
			if err != nil {
				return err
			}
			n, _ := strconv.ParseInt(nv, 10, 64)
			a.gate.keepAlive.Store(n)
			return nil
		}}
}

// AuthRequired reports whether a new connection must authenticate.
func (g *Gate) AuthRequired() bool { return g.authRequired.Load() }

// DenyRemote reports whether protected mode refuses non-loopback clients.
func (g *Gate) DenyRemote() bool { return g.denyRemote.Load() }

// IsLoopback is Redis 7.0's test of a local client (islocalClient): the
// peer address is exactly 127.0.0.1 or ::1.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return host == "127.0.0.1" || host == "::1"
}

// DeniedText is Redis 7.0's reply to a client refused by protected mode.
const DeniedText = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"

// Gate returns the actor's gate for the loops.
func (a *Actor) Gate() *Gate { return &a.gate }

// updateGate recomputes the gate after the default user or protected-mode
// changed.
func (a *Actor) updateGate() {
	a.gate.authRequired.Store(a.authRequired())
	a.gate.denyRemote.Store(a.protectedMode && a.acl.def.nopass)
	t := make(authTable, len(a.acl.users))
	for name, u := range a.acl.users {
		t[name] = authUser{on: u.on, nopass: u.nopass, passwords: append([]string(nil), u.passwords...), perm: u.clone()}
	}
	a.gate.users.Store(&t)
}

// protectedParam is protected-mode, applied.
func (a *Actor) protectedParam() Param {
	return Param{Name: "protected-mode", Get: func() string {
		if a.protectedMode {
			return "yes"
		}
		return "no"
	}, Set: func(v string) error {
		b, err := parseYesNo(v)
		if err != nil {
			return err
		}
		a.protectedMode = b
		a.updateGate()
		return nil
	}}
}

func parseYesNo(v string) (bool, error) {
	switch {
	case eqFoldString(v, "yes"):
		return true, nil
	case eqFoldString(v, "no"):
		return false, nil
	}
	return false, errArgMustBeYesNo
}

func eqFoldString(s, word string) bool { return eqFold([]byte(s), word) }

var errArgMustBeYesNo = errParamNotBool

// setAuthed changes whether s is authenticated, and tells its loop (which
// holds unauthenticated clients to small requests).
func (s *session) setAuthed(on bool) {
	s.authed = on
	if s.authFlag != nil {
		s.authFlag.Store(on)
	}
}
