package actor

import "math"

// Correctly rounded sine, cosine and arcsine for the geo commands.
//
// Redis computes distances with the C library's sin, cos and asin; glibc's
// are accurate to within about half a unit in the last place, Go's math
// package's to within about one, so with Go's functions a distance could
// come out one bit off Redis's — invisible in GEODIST's four decimals but
// not in a score GEOSEARCHSTORE ... STOREDIST stores, nor at a search's
// edge. These compute in double-double arithmetic (a value as the
// unevaluated sum of two doubles, about 106 bits) and round once, which
// gives the double nearest the true value, as glibc does in all but rare
// cases. The arguments the geo commands pass are small (|x| < 4).

// dd is a double-double: hi + lo with |lo| <= ulp(hi)/2.
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func quickTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func twoProd(a, b float64) dd {
	p := a * b
	return dd{p, math.FMA(a, b, -p)}
}

func (x dd) add(y dd) dd {
	s := twoSum(x.hi, y.hi)
	t := twoSum(x.lo, y.lo)
	s.lo += t.hi
	s = quickTwoSum(s.hi, s.lo)
	s.lo += t.lo
	return quickTwoSum(s.hi, s.lo)
}

func (x dd) mul(y dd) dd {
	p := twoProd(x.hi, y.hi)
	p.lo += x.hi*y.lo + x.lo*y.hi
	return quickTwoSum(p.hi, p.lo)
}

func (x dd) neg() dd { return dd{-x.hi, -x.lo} }

// divFloat divides x by a double.
func (x dd) divFloat(d float64) dd {
	q1 := x.hi / d
	r := x.add(twoProd(q1, d).neg())
	q2 := r.hi / d
	r = r.add(twoProd(q2, d).neg())
	q3 := r.hi / d
	return quickTwoSum(q1, q2).add(dd{q3, 0})
}

// Taylor coefficients of sin and cos around 0: sinCoef[i] = (-1)^i/(2i+1)!,
// cosCoef[i] = (-1)^i/(2i)!. 15 terms reach below 2^-106 for |x| <= pi/4.
var sinCoef, cosCoef [15]dd

// piOver2 is pi/2 as three doubles.
var piOver2 = [3]float64{1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33}

func init() {
	f := dd{1, 0} // 1/n!
	for n := 1; n < 2*len(sinCoef); n++ {
		f = f.divFloat(float64(n))
		c := f
		if (n/2)%2 == 1 {
			c = c.neg()
		}
		if n%2 == 1 {
			sinCoef[n/2] = c
		} else {
			cosCoef[n/2] = c
		}
	}
	cosCoef[0] = dd{1, 0}
}

// series sums coef[i] * x2^i by Horner's rule.
func series(coef *[15]dd, x2 dd) dd {
	s := coef[len(coef)-1]
	for i := len(coef) - 2; i >= 0; i-- {
		s = s.mul(x2).add(coef[i])
	}
	return s
}

// sinCosDD is sin(x) and cos(x) in double-double: x reduced by the
// nearest multiple k of pi/2 (exactly, with pi/2 in three parts), the
// series evaluated on the remainder, the quadrant k mod 4 choosing which
// is which.
func sinCosDD(x float64) (sin, cos dd) {
	k := math.Round(x / piOver2[0])
	r := twoSum(x-k*piOver2[0], -k*piOver2[1])
	r.lo -= k * piOver2[2]
	r = quickTwoSum(r.hi, r.lo)
	r2 := r.mul(r)
	s := series(&sinCoef, r2).mul(r)
	c := series(&cosCoef, r2)
	switch int64(k) & 3 {
	case 0:
		return s, c
	case 1:
		return c, s.neg()
	case 2:
		return s.neg(), c.neg()
	}
	return c.neg(), s
}

// geoSin, geoCos and geoAsin are sin, cos and asin rounded once from
// double-double results.
func geoSin(x float64) float64 {
	s, _ := sinCosDD(x)
	return s.hi + s.lo
}

func geoCos(x float64) float64 {
	_, c := sinCosDD(x)
	return c.hi + c.lo
}

// geoAsin refines Go's arcsine (within a unit or so of the last place) by
// one Newton step on sin(y) = x in double-double.
func geoAsin(x float64) float64 {
	y := math.Asin(x)
	if math.Abs(x) >= 1 || x == 0 || math.IsNaN(x) {
		return y
	}
	s, c := sinCosDD(y)
	diff := s.add(dd{-x, 0})
	delta := (diff.hi + diff.lo) / (c.hi + c.lo)
	r := twoSum(y, -delta)
	return r.hi + r.lo
}
