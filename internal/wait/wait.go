// Package wait is the tests' one way to wait for a condition that another
// goroutine or process brings about.
package wait

import (
	"testing"
	"time"
)

// Floor is the shortest time For waits before it fails, whatever timeout
// its caller names: a machine running the race detector beside other
// builds can be twenty times slower than a quiet one, and a wait that
// ends early only turns that slowness into a failure. A timeout only
// bounds how long a broken behaviour takes to fail; a passing test never
// waits for it.
const Floor = time.Minute

// For polls cond until it holds, failing the test after timeout (at least
// Floor) with "timed out after <timeout> waiting for <what>". The polling
// interval only bounds how quickly the condition is noticed; nothing
// relies on it for ordering, and cond is never assumed to have held
// without being checked.
func For(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	timeout = max(timeout, Floor)
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
