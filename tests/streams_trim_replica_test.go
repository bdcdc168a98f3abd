package tests

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Redis propagates a "~" trim as the exact trim it made, "=" with the
// resulting length or first ID and its LIMIT still there: Cellar as a
// replica obeys it (a client's LIMIT without "~" is refused), so it holds
// the entries the master kept, whatever its own stream-node-max-entries.
func TestReplicaFollowsApproxTrim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rm, s, cel := followRedis(t, ctx)
	for _, cmd := range [][]any{
		{"CONFIG", "SET", "stream-node-max-entries", "10"},
		{"EVAL", "for i=1,57 do redis.call('XADD', KEYS[1], i..'-1', 'f', i) end", "1", "s"},
		{"XADD", "s", "MAXLEN", "~", "25", "LIMIT", "100", "58-1", "f", "v"},
		{"XTRIM", "s", "MINID", "~", "45-1", "LIMIT", "100"},
		{"SET", "done", "1"},
	} {
		if err := rm.Do(ctx, cmd...).Err(); err != nil && err != redis.Nil {
			t.Fatalf("%v on the master: %v", cmd, err)
		}
	}
	waitOffsets(t, ctx, rm, cel)
	if got := cel.Get(ctx, "done").Val(); got != "1" {
		t.Fatalf("done = %q on Cellar: the stream of commands stopped", got)
	}
	compareAll(t, ctx, rm.Options().Addr, s.addr)
	r := s.raw()
	r.expect(integer(18), "XLEN", "s")
	r.expect("*1\r\n"+entry("41-1", "f", "41"), "XRANGE", "s", "-", "+", "COUNT", "1")
}
