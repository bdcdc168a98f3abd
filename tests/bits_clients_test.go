package tests

import (
	"context"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestBitsSortLCSWithGoRedis drives the new commands through go-redis's
// typed API, RESP2 and RESP3, against Cellar and a real redis-server, and
// requires the parsed results to be equal: the client's reply parsers
// (LCS's map of matches in RESP3, BITFIELD's nulls, SORT's GET nulls) must
// accept what Cellar sends.
func TestBitsSortLCSWithGoRedis(t *testing.T) {
	t.Parallel()
	redisAddr := startRedis(t)
	s := startServer(t)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		cel := s.client(func(o *redis.Options) { o.Protocol = proto })
		red := redis.NewClient(&redis.Options{Network: "unix", Addr: redisAddr, Protocol: proto})
		t.Cleanup(func() { red.Close() })
		type result struct {
			val any
			err string
		}
		run := func(c *redis.Client) []result {
			if err := c.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			var out []result
			add := func(v any, err error) {
				r := result{val: v}
				if err != nil {
					r.err = err.Error()
				}
				out = append(out, r)
			}
			add(c.SetBit(ctx, "b", 100, 1).Result())
			add(c.GetBit(ctx, "b", 100).Result())
			add(c.BitCount(ctx, "b", &redis.BitCount{Start: 0, End: 101, Unit: redis.BitCountIndexBit}).Result())
			add(c.BitPosSpan(ctx, "b", 1, 0, -1, "bit").Result())
			add(c.BitField(ctx, "b", "SET", "i8", "#2", -100, "OVERFLOW", "FAIL", "INCRBY", "i8", "#2", -100, "GET", "u4", 0).Result())
			add(c.BitFieldRO(ctx, "b", "u8", "#2").Result())
			add(c.BitOpNot(ctx, "n", "b").Result())
			add(c.PFAdd(ctx, "h", "a", "b", "c", "d").Result())
			add(c.PFAdd(ctx, "h2", "c", "d", "e").Result())
			add(c.PFCount(ctx, "h", "h2").Result())
			add(c.PFMerge(ctx, "h3", "h", "h2").Result())
			add(c.PFCount(ctx, "h3").Result())
			add(c.RPush(ctx, "l", 3, 1, 2).Result())
			add(c.MSet(ctx, "w_1", "b", "w_2", "c", "w_3", "a").Result())
			add(c.Sort(ctx, "l", &redis.Sort{By: "w_*", Get: []string{"#", "w_*", "nokey_*"}, Alpha: true}).Result())
			add(c.SortRO(ctx, "l", &redis.Sort{Order: "DESC", Offset: 0, Count: 2}).Result())
			add(c.SortStore(ctx, "l", "dst", &redis.Sort{}).Result())
			add(c.LRange(ctx, "dst", 0, -1).Result())
			add(c.Sort(ctx, "w_1", &redis.Sort{}).Result())
			add(c.MSet(ctx, "k1", "ohmytext", "k2", "mynewtext").Result())
			add(c.LCS(ctx, &redis.LCSQuery{Key1: "k1", Key2: "k2"}).Result())
			add(c.LCS(ctx, &redis.LCSQuery{Key1: "k1", Key2: "k2", Len: true}).Result())
			add(c.LCS(ctx, &redis.LCSQuery{Key1: "k1", Key2: "k2", Idx: true, MinMatchLen: 2, WithMatchLen: true}).Result())
			add(c.Do(ctx, "LOLWUT").Result())
			add(c.Do(ctx, "WAIT", 0, 0).Result())
			return out
		}
		got, want := run(cel), run(red)
		if len(got) != len(want) {
			t.Fatalf("RESP%d: %d results, redis %d", proto, len(got), len(want))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("RESP%d, call %d: cellar %#v, redis %#v", proto, i, got[i], want[i])
			}
			// Only SORT of a string fails (WRONGTYPE): the others must
			// have parsed.
			if wantErr := i == 18; (got[i].err != "") != wantErr {
				t.Errorf("RESP%d, call %d: error %q", proto, i, got[i].err)
			}
		}
		if m, ok := got[22].val.(*redis.LCSMatch); !ok || m.Len != 6 || len(m.Matches) != 2 {
			t.Errorf("RESP%d: LCS IDX parsed as %#v", proto, got[22].val)
		}
	}
}
