package main

import (
	"context"
	"math/rand/v2"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The geo rows (issue 17): GEOADD of new members into one set, and a
// GEOSEARCH of a 1 km radius, nearest first, among 10 000 points spread
// over a 20 km square (a store locator's query: about 80 points in range,
// the 9 covering cells read as score ranges).
var geoTests = []testDef{
	{Name: "GEOADD", Cmd: []string{"GEOADD", "bench:geo", "13.361389", "38.115556", "member:__rand_int__"}, Scale: 1},
	{
		Name: "GEOSEARCH", Cmd: []string{"GEOSEARCH", "bench:geo2", "FROMLONLAT", "13.4", "52.5", "BYRADIUS", "1", "km", "ASC"}, Scale: 0.25,
		seed: func(ctx context.Context, addr string, _ int) error {
			c := newClient(addr, 1)
			defer c.Close()
			if err := c.Del(ctx, "bench:geo2").Err(); err != nil {
				return err
			}
			rng := rand.New(rand.NewPCG(1, 2))
			const n, batch = 10000, 500
			for i := 0; i < n; i += batch {
				locs := make([]*redis.GeoLocation, 0, batch)
				for j := i; j < i+batch; j++ {
					// 20 km is about 0.29 degrees of longitude and 0.18 of
					// latitude at 52.5 N.
					locs = append(locs, &redis.GeoLocation{
						Name:      "p" + strconv.Itoa(j),
						Longitude: 13.4 + (rng.Float64()-0.5)*0.29,
						Latitude:  52.5 + (rng.Float64()-0.5)*0.18,
					})
				}
				if err := c.GeoAdd(ctx, "bench:geo2", locs...).Err(); err != nil {
					return err
				}
			}
			return nil
		},
	},
}

func init() { allTests = append(allTests, geoTests...) }
