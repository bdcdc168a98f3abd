package actor

import (
	"errors"
	"testing"
)

// These tests drive the actor directly, to reach what the loop never
// sends (a blocking command that is not last in its batch) and interleavings
// inside one round (suspend and wake, suspend and disconnect, a failed
// commit) that the wire cannot arrange deterministically.

// A blocking command that is not last in its batch (the loop never sends
// one, MULTI will) answers as its non-blocking form.
func TestBlockingCommandNotLastDoesNotBlock(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.submit(1, []string{"BLPOP", "q", "0"}, []string{"BLMOVE", "q", "d", "LEFT", "RIGHT", "0"},
		[]string{"BRPOPLPUSH", "q", "d", "0"}, []string{"BLMPOP", "0", "1", "q", "LEFT"},
		[]string{"BZPOPMIN", "z", "0"}, []string{"BZPOPMAX", "z", "0"}, []string{"BZMPOP", "0", "1", "z", "MIN"},
		[]string{"PING"})
	h.expect(1, "*-1\r\n$-1\r\n$-1\r\n*-1\r\n*-1\r\n*-1\r\n*-1\r\n+PONG\r\n")
	if n := h.waiters(); n != 0 {
		t.Fatalf("%d waiters", n)
	}
}

// Suspended and woken in the same round: the reply carries the batch's
// earlier replies, then the element.
func TestSuspendAndWakeInOneRound(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.open(2)
	release := h.hold()
	h.submit(1, []string{"SET", "a", "1"}, []string{"BLPOP", "q", "0"})
	h.submit(2, []string{"RPUSH", "q", "x"}, []string{"LPOP", "q"})
	release()
	got := h.replies(2)
	if got[1] != "+OK\r\n*2\r\n$1\r\nq\r\n$1\r\nx\r\n" || got[2] != ":1\r\n$-1\r\n" {
		t.Fatalf("replies %v", got)
	}
}

// The same for a sorted-set waiter, with a list waiter on the key ahead of
// it: the ZADD serves the sorted-set waiter in its round, and a ZPOPMIN
// after it in the same batch finds nothing; the list waiter waits on.
func TestZSetSuspendAndWakeInOneRound(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.open(2)
	h.open(3)
	h.submit(3, []string{"BLPOP", "z", "0"})
	h.waitWaiters(1)
	release := h.hold()
	h.submit(1, []string{"SET", "a", "1"}, []string{"BZMPOP", "0", "2", "y", "z", "MAX", "COUNT", "2"})
	h.submit(2, []string{"ZADD", "z", "1", "m", "2", "n", "3", "o"}, []string{"ZPOPMIN", "z"}, []string{"ZCARD", "z"})
	release()
	got := h.replies(2)
	if got[1] != "+OK\r\n*2\r\n$1\r\nz\r\n*2\r\n*2\r\n$1\r\no\r\n$1\r\n3\r\n*2\r\n$1\r\nn\r\n$1\r\n2\r\n" ||
		got[2] != ":3\r\n*2\r\n$1\r\nm\r\n$1\r\n1\r\n:0\r\n" {
		t.Fatalf("replies %v", got)
	}
	if n := h.waiters(); n != 1 {
		t.Fatalf("%d waiters; the list waiter should wait on", n)
	}
	h.submit(2, []string{"RPUSH", "z", "e"})
	got = h.replies(2)
	if got[3] != "*2\r\n$1\r\nz\r\n$1\r\ne\r\n" || got[2] != ":1\r\n" {
		t.Fatalf("replies %v", got)
	}
}

// Suspended, then disconnected in the same round: nothing is delivered,
// and a later push stays in the list.
func TestSuspendAndDisconnectInOneRound(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.open(2)
	release := h.hold()
	h.submit(1, []string{"BLPOP", "q", "0"})
	h.a.Closed(1)
	release()
	h.submit(2, []string{"RPUSH", "q", "x"}, []string{"LLEN", "q"})
	h.expect(2, ":1\r\n:1\r\n")
	h.expectNothing()
}

// Suspended, then unblocked by another client in the same round.
func TestSuspendAndUnblockInOneRound(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.open(2)
	release := h.hold()
	h.submit(1, []string{"PING"}, []string{"BRPOP", "q", "0"})
	h.submit(2, []string{"CLIENT", "UNBLOCK", "1", "ERROR"})
	release()
	got := h.replies(2)
	if got[1] != "+PONG\r\n-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n" || got[2] != ":1\r\n" {
		t.Fatalf("replies %v", got)
	}
}

var errInjected = errors.New("injected commit failure")

// doom makes the current round fail as a failed commit would.
func (h *harness) doom() {
	h.a.in.put(message{kind: msgCall, fn: func() { h.a.roundErr = errInjected }})
}

// A round whose commit fails cancels the waiters it registered and
// answers their batches with the error; it retracts the replies of
// waiters it woke (their pops are rolled back with the push), so nothing
// is delivered that is not in the database.
func TestFailedRoundAndWaiters(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.open(2)
	failure := "-ERR internal error: " + errInjected.Error() + "\r\n"

	release := h.hold()
	h.submit(1, []string{"PING"}, []string{"BLPOP", "q", "0"})
	h.doom()
	release()
	h.expect(1, "+PONG\r\n"+failure)
	if n := h.waiters(); n != 0 {
		t.Fatalf("%d waiters after the failed round", n)
	}

	// A waiter from an earlier round, woken in a failed round.
	h.submit(1, []string{"BLPOP", "q", "0"})
	h.waitWaiters(1)
	release = h.hold()
	h.submit(2, []string{"RPUSH", "q", "x"})
	h.doom()
	release()
	got := h.replies(2)
	if got[1] != failure || got[2] != failure {
		t.Fatalf("replies %v", got)
	}
	h.submit(2, []string{"LLEN", "q"})
	h.expect(2, ":0\r\n")
}

// A sorted-set waiter woken in a failed round: its pop is rolled back with
// the ZADD and its reply retracted.
func TestFailedRoundAndZSetWaiter(t *testing.T) {
	h := newHarness(t, Config{})
	h.open(1)
	h.open(2)
	failure := "-ERR internal error: " + errInjected.Error() + "\r\n"
	h.submit(1, []string{"BZPOPMIN", "z", "0"})
	h.waitWaiters(1)
	release := h.hold()
	h.submit(2, []string{"ZADD", "z", "1", "m"})
	h.doom()
	release()
	got := h.replies(2)
	if got[1] != failure || got[2] != failure {
		t.Fatalf("replies %v", got)
	}
	h.submit(2, []string{"EXISTS", "z"})
	h.expect(2, ":0\r\n")
}

func TestParseTimeout(t *testing.T) {
	for _, c := range []struct {
		in   string
		ms   int64
		err  error
		name string
	}{
		{"0", 0, nil, "zero"},
		{"1", 1000, nil, "integer"},
		{"0.5", 500, nil, "decimal"},
		{"0.0001", 1, nil, "rounds up"},
		{"-0.0001", 0, nil, "rounds up to zero"},
		{"-0.0015", 0, ErrTimeoutNegative, "negative"},
		{"1e3", 1000000, nil, "exponent"},
		{"0x10", 16000, nil, "hex"},
		{"9223372036854775.807", 9223372036854775807, nil, "largest"},
		{"9223372036854775.808", 0, ErrTimeoutNegative, "overflow"},
		{"inf", 0, ErrTimeoutNegative, "infinity"},
		{"nan", 0, ErrTimeoutNotFloat, "nan"},
		{"abc", 0, ErrTimeoutNotFloat, "word"},
		{"", 0, ErrTimeoutNotFloat, "empty"},
		{" 1", 0, ErrTimeoutNotFloat, "space"},
	} {
		ms, err := parseTimeout([]byte(c.in))
		if ms != c.ms || !errors.Is(err, c.err) {
			t.Errorf("%s: parseTimeout(%q) = %d, %v; want %d, %v", c.name, c.in, ms, err, c.ms, c.err)
		}
	}
}

// A key's lane keeps its completed waiters proportional to its live ones.
func TestWaitQueueCompacts(t *testing.T) {
	q := &lane{}
	live := &waiter{}
	q.ws = append(q.ws, live)
	q.live = 1
	for i := 0; i < 1000; i++ {
		q.ws = append(q.ws, &waiter{done: true})
		q.compact()
	}
	if len(q.ws) > 2*q.live+17 {
		t.Fatalf("queue holds %d entries for %d live waiters", len(q.ws), q.live)
	}
	if q.front() != live {
		t.Fatal("front is not the live waiter")
	}
}
