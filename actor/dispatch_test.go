package actor

import (
	"strings"
	"testing"

	"github.com/cellar-db/cellar/proto"
	"github.com/cellar-db/cellar/storage"
)

// Commands run inside a command (as EXEC runs them, and EVAL will) each get
// a level of their own: the outer command's Ctx and scratch survive them,
// a blocking command answers as its non-blocking form, CLIENT LIST keeps
// naming the outer command.
func TestNestedExecution(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	big := strings.Repeat("x", 100_000)
	h.submit(1, []string{"ZADD", "z", "1", "a", "2", "b"}, []string{"SET", "big", big})
	h.expect(1, ":2\r\n+OK\r\n")

	var got []string
	var outerElems []storage.Elem
	var outerVal, lastCmd string
	var depth, frames int
	h.a.Call(func() {
		a := h.a
		s := a.sessions[1]
		// The outer command, as its handler sees itself, with scratch in use.
		f := a.enter()
		defer a.leave()
		outer := &f.ctx
		*outer = Ctx{a: a, f: f, s: s, st: a.st, db: s.db, now: a.nowMs}
		f.elems.add(&storage.Elem{Member: []byte("outer"), Score: 7})
		f.val = append(f.val[:0], "outer value"...)

		run := func(args ...string) {
			argv := make([][]byte, len(args))
			for i, arg := range args {
				argv[i] = []byte(arg)
			}
			w := proto.Writer{Proto: 2}
			outer.call(argv, &w)
			got = append(got, string(w.Buf))
		}
		run("ZRANGE", "z", "0", "-1", "WITHSCORES")
		run("GET", "big")
		run("BLPOP", "nolist", "0")

		outerElems = append(outerElems, f.elems.list()...)
		outerVal = string(f.val)
		depth, frames, lastCmd = a.depth, len(a.frames), s.lastCmd
	})
	want := []string{
		"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n",
		"$100000\r\n" + big + "\r\n",
		"*-1\r\n",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("nested replies %q, want %q", got, want)
	}
	if len(outerElems) != 1 || string(outerElems[0].Member) != "outer" || outerElems[0].Score != 7 || outerVal != "outer value" {
		t.Fatalf("the outer command's scratch changed: %v %q", outerElems, outerVal)
	}
	if depth != 1 || frames != 2 {
		t.Fatalf("depth %d frames %d inside the outer command, want 1 and 2", depth, frames)
	}
	if lastCmd != "set" {
		t.Fatalf("lastCmd %q, want the last top-level command's", lastCmd)
	}
	if h.a.depth != 0 {
		t.Fatalf("depth %d after the outer command", h.a.depth)
	}
}
