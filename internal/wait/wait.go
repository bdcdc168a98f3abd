// Package wait is the tests' one way to wait for a condition that another
// goroutine or process brings about.
package wait

import (
	"testing"
	"time"
)

// For polls cond until it holds, failing the test after timeout with
// "timed out after <timeout> waiting for <what>". The polling interval only
// bounds how quickly the condition is noticed; nothing relies on it for
// ordering, and cond is never assumed to have held without being checked.
func For(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
