package actor

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellar-db/cellar/internal/wait"
)

// The loops are told a script went busy, Busy agreeing whenever they are,
// and told again while it stays busy, so that a batch no sweep saw is
// answered while the script runs; once it ended, a late fire tells no one.
func TestScriptWatchSweepsWhileBusy(t *testing.T) {
	var w ScriptWatch
	var calls, notBusy atomic.Int32
	w.SetOnBusy(func() {
		if busy, _ := w.Busy(); !busy {
			notBusy.Add(1)
		}
		calls.Add(1)
	})
	w.begin(true, time.Millisecond, 7, busyView{})
	wait.For(t, time.Minute, "the loops told three times while the script is busy", func() bool { return calls.Load() >= 3 })
	if n := notBusy.Load(); n != 0 {
		t.Fatalf("the loops were told %d times while Busy said not busy", n)
	}
	w.end()
	before := calls.Load()
	w.fire() // a fire left over from the script
	if calls.Load() != before {
		t.Fatal("a fire after the script ended told the loops")
	}
	if busy, _ := w.Busy(); busy {
		t.Fatal("busy after the script ended")
	}
}
