package tests

import "testing"

// Client tracking of a script, as Redis 7.0.15's call() does it: once a
// command the script calls is read-only, the keys the script declared
// (numkeys) are tracked for its client, not the keys its commands looked
// up; a script that calls no read-only command tracks nothing (Redis's
// tracking.tcl "Tracking only occurs for scripts when a command calls a
// read-only command"). The invalidation push is the proof; a client that
// waited for the one Redis sends would otherwise wait forever.
func TestTrackingScriptDeclaredKeys(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r, w := s.raw(), s.raw()
	hello3(r)
	r.expect(status("OK"), "CLIENT", "TRACKING", "on")
	inv := func(key string) string { return ">2\r\n" + bulk("invalidate") + array(bulk(key)) }
	const null = "_\r\n"
	// No read: nothing tracked (the MSET that follows invalidates nothing;
	// the PING's reply comes first).
	r.expect(null, "EVAL", "redis.call('set', 'key3{t}', 'bar')", "2", "key1{t}", "key2{t}")
	w.expect(status("OK"), "MSET", "key2{t}", "2", "key1{t}", "2")
	r.expect(status("PONG"), "PING")
	// A read of an undeclared key: the declared ones are tracked.
	r.expect(null, "EVAL", "redis.call('get', 'key3{t}')", "2", "key1{t}", "key2{t}")
	w.expect(status("OK"), "MSET", "key2{t}", "2", "key1{t}", "2")
	for _, key := range []string{"key2{t}", "key1{t}"} {
		if got := r.read(); got != inv(key) {
			t.Fatalf("after a script's read: got %q, want %q", got, inv(key))
		}
	}
	// key3{t}, which the script read, is not tracked.
	w.expect(status("OK"), "SET", "key3{t}", "x")
	r.expect(status("PONG"), "PING")
	// EVAL_RO: the same.
	r.expect(null, "EVAL_RO", "redis.call('ping')", "2", "key1{t}", "key2{t}")
	w.expect(status("OK"), "MSET", "key2{t}", "2", "key1{t}", "2")
	r.expect(status("PONG"), "PING")
	r.expect(null, "EVAL_RO", "redis.call('get', 'key1{t}')", "2", "key1{t}", "key2{t}")
	w.expect(status("OK"), "MSET", "key2{t}", "3", "key1{t}", "3")
	for _, key := range []string{"key2{t}", "key1{t}"} {
		if got := r.read(); got != inv(key) {
			t.Fatalf("after EVAL_RO's read: got %q, want %q", got, inv(key))
		}
	}
	// A script with no declared keys tracks nothing, whatever it reads.
	r.expect(null, "EVAL", "return redis.call('get', 'key9')", "0")
	w.expect(status("OK"), "SET", "key9", "x")
	r.expect(status("PONG"), "PING")
}
