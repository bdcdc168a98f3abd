package actor

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// Redis's documentation example: Palermo's score and geohash.
func TestGeoScoreOfPalermo(t *testing.T) {
	s, ok := geoScore(13.361389, 38.115556)
	if !ok || s != 3479099956230698 {
		t.Fatalf("score %v %v, want 3479099956230698", s, ok)
	}
	if got := string(appendGeohashString(nil, s)); got != "sqc8b49rny0" {
		t.Fatalf("geohash %q, want sqc8b49rny0", got)
	}
	lon, lat := geoPosition(s)
	if got := string(appendHumanDouble(nil, lon)) + "," + string(appendHumanDouble(nil, lat)); got != "13.36138933897018433,38.11555639549629859" {
		t.Fatalf("position %s", got)
	}
	if _, ok := geoScore(181, 0); ok {
		t.Fatal("longitude 181 encoded")
	}
}

func TestGeoDistanceFormat(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "0.0000"}, {math.Copysign(0, -1), "0.0000"}, {166274.1516, "166274.1516"},
		{46024635.04985, "46024635.0498"}, // 460246350498.5 rounds to even
		{0.00004, "0.0000"}, {0.00005, "0.0000"}, {0.00015, "0.0001"}, {12.5, "12.5000"},
	} {
		if got := string(appendDistance(nil, c.v)); got != c.want {
			t.Errorf("appendDistance(%v) = %s, want %s", c.v, got, c.want)
		}
	}
}

// bigSin is sin(x) to 200 bits by its Taylor series (|x| < 4).
func bigSin(x float64) float64 {
	const prec = 200
	bx := new(big.Float).SetPrec(prec).SetFloat64(x)
	x2 := new(big.Float).SetPrec(prec).Mul(bx, bx)
	term := new(big.Float).SetPrec(prec).Set(bx)
	sum := new(big.Float).SetPrec(prec).Set(bx)
	for n := 1; n < 60; n++ {
		term.Mul(term, x2)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64((2*n)*(2*n+1))))
		term.Neg(term)
		sum.Add(sum, term)
	}
	f, _ := sum.Float64()
	return f
}

// The double-double sine is the correctly rounded one (checked against a
// 200-bit series), where Go's math.Sin is often one bit off; cos and asin
// are checked for plausibility (their exactness against the C library is
// what tests/geo_diff_test.go shows, through Redis's distances).
func TestGeoTrigCorrectlyRounded(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	wrongGo := 0
	for i := 0; i < 3000; i++ {
		x := (r.Float64()*2 - 1) * 3.2
		want := bigSin(x)
		if got := geoSin(x); got != want {
			t.Fatalf("geoSin(%v) = %v, want %v", x, got, want)
		}
		if math.Sin(x) != want {
			wrongGo++
		}
		// cos(x) = sin(x + pi/2) exactly only in exact arithmetic: check
		// it against the series at the same argument instead.
		if c := geoCos(x); math.Abs(c-math.Cos(x)) > 2e-16 {
			t.Fatalf("geoCos(%v) = %v, math.Cos %v", x, c, math.Cos(x))
		}
		y := r.Float64()
		a := geoAsin(y)
		if math.Abs(bigSin(a)-y) > 3e-16 || math.Abs(a-math.Asin(y)) > 1e-12 {
			t.Fatalf("geoAsin(%v) = %v, math.Asin %v", y, a, math.Asin(y))
		}
	}
	t.Logf("math.Sin was off in %d of 3000", wrongGo)
}

// The fast distance that rejects points is as close to the exact one as
// clearlyAbove assumes (a billionth), far below it.
func TestGeoFastDistanceBound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200000; i++ {
		lon1, lat1 := r.Float64()*360-180, r.Float64()*170-85
		lon2, lat2 := lon1+r.NormFloat64()*r.Float64()*50, lat1+r.NormFloat64()*r.Float64()*20
		lon2, lat2 = max(-180, min(180, lon2)), max(-85, min(85, lat2))
		fast, far := geoDistanceFast(lon1, lat1, lon2, lat2)
		if far {
			continue
		}
		exact := geoDistance(lon1, lat1, lon2, lat2)
		if math.Abs(fast-exact) > exact*1e-12+1e-9 {
			t.Fatalf("(%v,%v)-(%v,%v): fast %v, exact %v", lon1, lat1, lon2, lat2, fast, exact)
		}
	}
}
