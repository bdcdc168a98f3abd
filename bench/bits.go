package main

import (
	"context"
	"strconv"
)

// The bitmap and HyperLogLog rows (issue 17): SETBIT on per-entity flag
// bitmaps of 512 bytes, BITCOUNT of a 128 KB bitmap (a million bits),
// PFADD into one HyperLogLog that turns dense, PFCOUNT of two dense ones
// (a count over several keys is never cached, so it always merges).
var bitTests = []testDef{
	{Name: "SETBIT", Cmd: []string{"SETBIT", "bench:bit:__rand_int__", "4095", "1"}, Scale: 1},
	{
		Name: "BITCOUNT", Cmd: []string{"BITCOUNT", "bench:bitmap"}, Scale: 0.5,
		seed: func(ctx context.Context, addr string, _ int) error {
			c := newClient(addr, 1)
			defer c.Close()
			return c.Set(ctx, "bench:bitmap", payload(128<<10, 1), 0).Err()
		},
	},
	{
		Name: "PFADD", Cmd: []string{"PFADD", "bench:hll", "__rand_int__"}, Scale: 1,
		seed: func(ctx context.Context, addr string, _ int) error {
			c := newClient(addr, 1)
			defer c.Close()
			return c.Del(ctx, "bench:hll").Err()
		},
	},
	{
		Name: "PFCOUNT_2", Row: "PFCOUNT", Cmd: []string{"PFCOUNT", "bench:hll1", "bench:hll2"}, Scale: 0.25,
		seed: func(ctx context.Context, addr string, _ int) error { return seedHLLs(ctx, addr, 20000) },
	},
}

func init() { allTests = append(allTests, bitTests...) }

// seedHLLs fills bench:hll1 and bench:hll2 with n elements each (dense).
func seedHLLs(ctx context.Context, addr string, n int) error {
	c := newClient(addr, 1)
	defer c.Close()
	for k, key := range []string{"bench:hll1", "bench:hll2"} {
		if err := c.Del(ctx, key).Err(); err != nil {
			return err
		}
		const batch = 1000
		for i := 0; i < n; i += batch {
			els := make([]any, 0, batch)
			for j := i; j < min(i+batch, n); j++ {
				els = append(els, strconv.Itoa(k*n+j))
			}
			if err := c.PFAdd(ctx, key, els...).Err(); err != nil {
				return err
			}
		}
	}
	return nil
}
