package tests

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestGeoMatchesRedis loads the same random points into Cellar and a real
// redis-server — clusters around a few cities, points spread over the
// whole globe, points near the poles and the antimeridian — and compares,
// byte for byte, thousands of random GEOSEARCH, GEOSEARCHSTORE,
// GEORADIUS, GEORADIUSBYMEMBER, GEODIST, GEOPOS and GEOHASH replies:
// membership at a search's edge, the order by distance, distances to the
// printed digit, coordinates as Redis prints them, and the cells a COUNT
// ANY search reads first. Positions are distinct, so no two distances tie
// (Redis's partial sort for COUNT orders ties its own way).
func TestGeoMatchesRedis(t *testing.T) {
	t.Parallel()
	redisAddr := startRedis(t)
	s := startServer(t)
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			cel, red := dialRaw(t, s.addr), dialRaw(t, redisAddr)
			for _, c := range []*rawConn{cel, red} {
				if _, err := c.tryDo("FLUSHALL"); err != nil {
					t.Fatal(err)
				}
			}
			g := &geoGen{r: rand.New(rand.NewPCG(seed, 99))}
			same := func(args ...string) {
				t.Helper()
				got, err1 := cel.tryDo(args...)
				want, err2 := red.tryDo(args...)
				if err1 != nil || err2 != nil {
					t.Fatalf("%q: cellar err %v, redis err %v", args, err1, err2)
				}
				if got != want {
					t.Fatalf("%q: %s", args, firstDifference(got, want))
				}
			}
			for _, key := range []string{"g1", "g2"} {
				for batch := 0; batch < 20; batch++ {
					args := []string{"GEOADD", key}
					for i := 0; i < 50; i++ {
						lon, lat := g.point()
						args = append(args, lon, lat, fmt.Sprintf("p%d", g.n))
						g.n++
					}
					same(args...)
				}
			}
			for i := 0; i < steps(3000); i++ {
				same(g.command()...)
			}
			// What the stores wrote, scores at full precision: the same
			// members in the same order, each distance Redis's or, in the
			// rare cases where glibc's trigonometry is not correctly
			// rounded (docs/commands.md, the geo row), within two units of its last place.
			for _, k := range []string{"dst", "dst2"} {
				args := []string{"ZRANGE", k, "0", "-1", "WITHSCORES"}
				got, err1 := cel.tryDo(args...)
				want, err2 := red.tryDo(args...)
				if err1 != nil || err2 != nil {
					t.Fatalf("%q: cellar err %v, redis err %v", args, err1, err2)
				}
				if !sameUpToULPs(got, want, 2) {
					t.Fatalf("%q: %s", args, firstDifference(got, want))
				}
			}
		})
	}
}

// sameUpToULPs reports whether two raw replies have the same lines but
// for bulk lengths, with lines that are both numbers allowed to differ by
// up to ulps units in the last place.
func sameUpToULPs(got, want string, ulps int) bool {
	g, w := strings.Split(got, "\r\n"), strings.Split(want, "\r\n")
	if len(g) != len(w) {
		return false
	}
	for i := range g {
		if g[i] == w[i] || (strings.HasPrefix(g[i], "$") && strings.HasPrefix(w[i], "$")) {
			continue
		}
		a, err1 := strconv.ParseFloat(g[i], 64)
		b, err2 := strconv.ParseFloat(w[i], 64)
		if err1 != nil || err2 != nil {
			return false
		}
		lo, hi := min(a, b), max(a, b)
		for range ulps {
			lo = math.Nextafter(lo, hi)
		}
		if lo < hi {
			return false
		}
	}
	return true
}

type geoGen struct {
	r *rand.Rand
	n int // points added so far, named p0, p1, ...
}

var geoCities = [][2]float64{{13.36, 38.11}, {-0.12, 51.5}, {139.69, 35.68}, {-73.98, 40.75}, {151.2, -33.87}, {179.9, 0}, {-179.9, 0.5}, {0, 84}, {10, -83}}

func (g *geoGen) coord(v float64) string { return strconv.FormatFloat(v, 'f', 6+g.r.IntN(8), 64) }

// point is a random position: mostly near a city, some anywhere.
func (g *geoGen) point() (string, string) {
	if g.r.IntN(4) == 0 {
		return g.coord(g.r.Float64()*360 - 180), g.coord(g.r.Float64()*170.1 - 85.05)
	}
	c := geoCities[g.r.IntN(len(geoCities))]
	lon := c[0] + g.r.NormFloat64()*g.pick(0.01, 0.3, 3)
	lat := c[1] + g.r.NormFloat64()*g.pick(0.01, 0.3, 3)
	lon = max(-180, min(180, lon))
	lat = max(-85.05, min(85.05, lat))
	return g.coord(lon), g.coord(lat)
}

func (g *geoGen) pick(xs ...float64) float64 { return xs[g.r.IntN(len(xs))] }

func (g *geoGen) member() string { return fmt.Sprintf("p%d", g.r.IntN(g.n+5)) }

func (g *geoGen) unit() (string, float64) {
	switch g.r.IntN(4) {
	case 0:
		return "m", 1
	case 1:
		return "km", 1000
	case 2:
		return "ft", 0.3048
	}
	return "mi", 1609.34
}

// size is a radius or a box side, in unit: from meters to thousands of km.
func (g *geoGen) size(conv float64) string {
	meters := g.pick(50, 1000, 20000, 300000, 2e6, 8e6) * (0.2 + g.r.Float64()*2)
	return strconv.FormatFloat(meters/conv, 'f', g.r.IntN(4), 64)
}

func (g *geoGen) options(store bool) []string {
	var o []string
	switch g.r.IntN(3) {
	case 0:
		o = append(o, "ASC")
	case 1:
		o = append(o, "DESC")
	}
	if g.r.IntN(3) == 0 {
		o = append(o, "COUNT", strconv.Itoa(1+g.r.IntN(20)))
		if g.r.IntN(3) == 0 {
			o = append(o, "ANY")
		}
	}
	if !store {
		for _, w := range []string{"WITHDIST", "WITHCOORD", "WITHHASH"} {
			if g.r.IntN(2) == 0 {
				o = append(o, w)
			}
		}
	}
	return o
}

func (g *geoGen) key() string {
	if g.r.IntN(2) == 0 {
		return "g1"
	}
	return "g2"
}

func (g *geoGen) command() []string {
	switch g.r.IntN(8) {
	case 0:
		return []string{"GEODIST", g.key(), g.member(), g.member(), []string{"m", "km", "ft", "mi"}[g.r.IntN(4)]}
	case 1:
		return []string{"GEOPOS", g.key(), g.member(), g.member()}
	case 2:
		return []string{"GEOHASH", g.key(), g.member(), g.member()}
	case 3:
		u, conv := g.unit()
		lon, lat := g.point()
		return append([]string{"GEORADIUS", g.key(), lon, lat, g.size(conv), u}, g.options(false)...)
	case 4:
		u, conv := g.unit()
		return append([]string{"GEORADIUSBYMEMBER_RO", g.key(), g.member(), g.size(conv), u}, g.options(false)...)
	}
	args := []string{"GEOSEARCH", g.key()}
	store := g.r.IntN(5) == 0
	if store {
		args = []string{"GEOSEARCHSTORE", []string{"dst", "dst2"}[g.r.IntN(2)], g.key()}
	}
	if g.r.IntN(3) == 0 {
		args = append(args, "FROMMEMBER", g.member())
	} else {
		lon, lat := g.point()
		args = append(args, "FROMLONLAT", lon, lat)
	}
	u, conv := g.unit()
	if g.r.IntN(2) == 0 {
		args = append(args, "BYRADIUS", g.size(conv), u)
	} else {
		args = append(args, "BYBOX", g.size(conv), g.size(conv), u)
	}
	args = append(args, g.options(store)...)
	if store && g.r.IntN(2) == 0 {
		args = append(args, "STOREDIST")
	}
	return args
}

// firstDifference shows where two replies part, with some context.
func firstDifference(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-80)
	return fmt.Sprintf("replies differ at byte %d of %d/%d:\n cellar: ...%q\n redis:  ...%q",
		i, len(got), len(want), got[from:min(len(got), i+80)], want[from:min(len(want), i+80)])
}

// go-redis's geo commands against Cellar, its parsed results included.
func TestGeoGoRedis(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client()
	n, err := c.GeoAdd(ctx, "Sicily",
		&redis.GeoLocation{Name: "Palermo", Longitude: 13.361389, Latitude: 38.115556},
		&redis.GeoLocation{Name: "Catania", Longitude: 15.087269, Latitude: 37.502669}).Result()
	if err != nil || n != 2 {
		t.Fatalf("GeoAdd: %d %v", n, err)
	}
	d, err := c.GeoDist(ctx, "Sicily", "Palermo", "Catania", "km").Result()
	if err != nil || d != 166.2742 {
		t.Fatalf("GeoDist: %v %v", d, err)
	}
	locs, err := c.GeoSearchLocation(ctx, "Sicily", &redis.GeoSearchLocationQuery{
		GeoSearchQuery: redis.GeoSearchQuery{Longitude: 15, Latitude: 37, Radius: 200, RadiusUnit: "km", Sort: "ASC"},
		WithCoord:      true, WithDist: true, WithHash: true,
	}).Result()
	if err != nil || len(locs) != 2 || locs[0].Name != "Catania" || locs[0].Dist != 56.4413 || locs[0].GeoHash != 3479447370796909 ||
		locs[1].Name != "Palermo" || locs[1].Longitude != 13.361389338970184 {
		t.Fatalf("GeoSearchLocation: %+v %v", locs, err)
	}
	hashes, err := c.GeoHash(ctx, "Sicily", "Palermo", "Catania").Result()
	if err != nil || hashes[0] != "sqc8b49rny0" || hashes[1] != "sqdtr74hyu0" {
		t.Fatalf("GeoHash: %v %v", hashes, err)
	}
}
