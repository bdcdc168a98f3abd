package actor

import (
	"strings"
	"testing"
)

// checkPrefixes start the refusals of processCommand's checks.
var checkPrefixes = []string{"-NOPERM", "-NOAUTH", "-ERR unknown", "-ERR wrong number", "-ERR Can't execute",
	"-ERR Command not allowed", "-ERR DEBUG command not allowed", "-ERR MODULE command not allowed"}

// BusyCheck, which the loops run while a script is busy, refuses what the
// dispatcher refuses, with the same text, for a client in the same state:
// the two are one set of checks (Redis's processCommand) in one order.
func TestBusyCheckAgreesWithDispatcher(t *testing.T) {
	h := newHarness(t, Config{})
	const admin = 1
	h.open(admin)
	h.submit(admin, []string{"ACL", "SETUSER", "limited", "on", ">pw", "+@all", "-get", "~k*", "&ch*"})
	h.expect(admin, "+OK\r\n")

	type state struct {
		name  string
		setup [][]string
		cl    BusyClient
	}
	states := []state{
		{"default", nil, BusyClient{Authed: true, Resp: 2}},
		{"limited", [][]string{{"AUTH", "limited", "pw"}}, BusyClient{Authed: true, Resp: 2, User: "limited"}},
		{"multi", [][]string{{"MULTI"}}, BusyClient{Authed: true, Resp: 2, Multi: true}},
		{"subscribed", [][]string{{"SUBSCRIBE", "ch1"}}, BusyClient{Authed: true, Resp: 2, Subscribed: true}},
		{"limited in multi", [][]string{{"AUTH", "limited", "pw"}, {"MULTI"}}, BusyClient{Authed: true, Resp: 2, User: "limited", Multi: true}},
	}
	cmds := [][]string{
		{"NOSUCH", "a", "b"},
		{"CLIENT", "NOSUCH"},
		{"GET"},
		{"CLIENT", "KILL"},
		{"DEBUG", "SLEEP", "0"},
		{"MODULE", "LOAD", "x"},
		{"SAVE"},
		{"GET", "k1"},
		{"SET", "x", "1"},
		{"PUBLISH", "other", "m"},
		{"FUNCTION", "STATS"},
	}
	id := uint64(10)
	for _, st := range states {
		for _, cmd := range cmds {
			id++
			h.open(id)
			for _, s := range st.setup {
				h.submit(id, s)
				h.next()
			}
			args := make([][]byte, len(cmd))
			for i, a := range cmd {
				args[i] = []byte(a)
			}
			_, refusal := h.a.BusyCheck(&st.cl, args)
			h.submit(id, cmd)
			got := string(h.next().Reply)
			if refusal == "" {
				// Passed the checks: the dispatcher runs (or queues) it,
				// and refuses it for none of them.
				for _, p := range checkPrefixes {
					if strings.HasPrefix(got, p) {
						t.Errorf("%s: %q: BusyCheck lets it through, the dispatcher answers %q", st.name, cmd, got)
					}
				}
				continue
			}
			if want := "-" + refusal + "\r\n"; got != want {
				t.Errorf("%s: %q: BusyCheck refuses %q, the dispatcher %q", st.name, cmd, want, got)
			}
		}
	}
}
