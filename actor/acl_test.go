package actor

import (
	"slices"
	"strings"
	"testing"
)

// The per-command ACL check: nothing for an open user (the default one),
// a bitmap test and the key specs for the others.

func benchUser(b *testing.B, rules ...string) *aclUser {
	st := &aclState{}
	u := st.newUser("u")
	for _, r := range rules {
		if err := st.apply(u, []byte(r)); err != nil {
			b.Fatal(err)
		}
	}
	u.refresh()
	return u
}

func BenchmarkACLCheckOpen(b *testing.B) {
	u := benchUser(b, "on", "nopass", "+@all", "~*", "&*")
	get, args := Lookup([]byte("get")), [][]byte{[]byte("get"), []byte("k:1")}
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := u.check(get, args); d != aclOK {
			b.Fatal(d)
		}
	}
}

func BenchmarkACLCheckRestricted(b *testing.B) {
	u := benchUser(b, "on", "nopass", "-@all", "+@read", "~k:*")
	get, args := Lookup([]byte("get")), [][]byte{[]byte("get"), []byte("k:1")}
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := u.check(get, args); d != aclOK {
			b.Fatal(d)
		}
	}
}

func TestACLCheckDenials(t *testing.T) {
	st := &aclState{}
	u := st.newUser("u")
	for _, r := range []string{"on", "nopass", "-@all", "+get", "+set", "%R~r:*", "~k:*", "(~x:* +@list)"} {
		if err := st.apply(u, []byte(r)); err != nil {
			t.Fatal(r, err)
		}
	}
	u.refresh()
	for _, c := range []struct {
		args []string
		want aclDenial
		pos  int
	}{
		{[]string{"get", "k:1"}, aclOK, 0},
		{[]string{"get", "r:1"}, aclOK, 0},
		{[]string{"set", "r:1", "v"}, aclDeniedKey, 1},
		{[]string{"get", "z"}, aclDeniedKey, 1},
		{[]string{"lpush", "x:1", "a"}, aclOK, 0},        // the selector
		{[]string{"lpush", "k:1", "a"}, aclDeniedKey, 1}, // the selector's keys, the root's commands
		{[]string{"del", "k:1"}, aclDeniedCmd, 0},
	} {
		args := make([][]byte, len(c.args))
		for i, a := range c.args {
			args[i] = []byte(a)
		}
		d, pos := u.check(Lookup(args[0]), args)
		if d != c.want || pos != c.pos {
			t.Errorf("%v: got %v at %d, want %v at %d", c.args, d, pos, c.want, c.pos)
		}
	}
}

func TestACLUnrestrictedRead(t *testing.T) {
	get, args := Lookup([]byte("get")), [][]byte{[]byte("get"), []byte("k")}
	for _, c := range []struct {
		rules []string
		want  bool
	}{
		{[]string{"+@all", "~*"}, true},
		{[]string{"+@all", "%R~*"}, true},
		{[]string{"+@all", "%W~*"}, false},
		{[]string{"+@all", "~k*"}, false},
		{[]string{"-@all", "~*"}, false},
		{[]string{"-@all", "~k", "(+get ~*)"}, true},
	} {
		st := &aclState{}
		u := st.newUser("u")
		for _, r := range c.rules {
			if err := st.apply(u, []byte(r)); err != nil {
				t.Fatal(r, err)
			}
		}
		u.refresh()
		if got := u.unrestrictedRead(get, args); got != c.want {
			t.Errorf("%v: %v, want %v", c.rules, got, c.want)
		}
	}
}

// A user's command rules as ACL GETUSER describes them give back exactly
// its bitmap when applied to a fresh user (Redis checks the same, and
// panics when they do not).
func TestACLDescriptionRoundTrip(t *testing.T) {
	for _, rules := range [][]string{
		{"+@all"},
		{"-@all"},
		{"+@all", "-@dangerous", "-get", "+config|get"},
		{"-@all", "+@read", "+@write", "-@dangerous", "+publish", "+client|id"},
		{"-@all", "+@hash", "-hgetall", "+@list", "-@blocking", "+blpop"},
		{"+@all", "-@read", "+get", "-client", "+client|list"},
		{"allcommands", "-@slow", "+eval"},
		{"nocommands", "+@fast", "-@write", "+select|0"},
	} {
		st := &aclState{}
		u := st.newUser("u")
		for _, r := range rules {
			if err := st.apply(u, []byte(r)); err != nil {
				t.Fatal(r, err)
			}
		}
		desc := u.root().describeCommands()
		v := st.newUser("v")
		for _, r := range strings.Fields(desc) {
			if err := st.apply(v, []byte(r)); err != nil {
				t.Fatalf("%v described as %q: %q: %v", rules, desc, r, err)
			}
		}
		if !slices.Equal(u.root().cmds, v.root().cmds) {
			t.Errorf("%v described as %q, which gives another bitmap", rules, desc)
		}
		if again := v.root().describeCommands(); again != desc {
			t.Errorf("%v: %q, then %q", rules, desc, again)
		}
	}
}
