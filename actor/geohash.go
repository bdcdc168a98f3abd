package actor

import (
	"math"
	"strconv"
)

// Geohashes as Redis's geo commands use them. A position is stored as the
// score of a sorted-set member: longitude and latitude are each cut into
// 2^26 slices over Redis's ranges (longitude -180..180, latitude
// -85.05112878..85.05112878, the Web Mercator limits), and the two slice
// numbers are interleaved bit by bit (latitude in the even bits, longitude
// in the odd ones) into a 52-bit integer, which a double holds exactly.
// Interleaving keeps nearby points in nearby score ranges: every point in
// a cell of s steps (the first 2s bits) has a score in one range, so a
// search reads the ranges of the cell around its centre and the 8 cells
// around that one.
//
// The constants and the order of floating-point operations follow Redis
// 7.0's geohash.c and geohash_helper.c so that the same inputs give the
// same bits, cells and distances; the trigonometry is correctly rounded
// (geomath.go), as the C library's nearly always is. Products are wrapped in float64() where
// Go could otherwise fuse a multiply and an add (the spec allows it), which
// would round differently from Redis.

const (
	geoStepMax = 26 // steps of a stored score: 52 bits
	geoLatMin  = -85.05112878
	geoLatMax  = 85.05112878
	geoLonMin  = -180.0
	geoLonMax  = 180.0

	earthRadiusMeters = 6372797.560856 // Redis's EARTH_RADIUS_IN_METERS
	mercatorMax       = 20037726.37    // Redis's MERCATOR_MAX
)

// degToRad is Redis's D_R, M_PI / 180.0 divided in double precision (a
// constant expression would be computed exactly and could round to a
// different double).
var degToRad = piDouble / 180.0

var piDouble = math.Pi

// geoRange is the span a coordinate is cut over.
type geoRange struct{ min, max float64 }

var (
	geoLonRange = geoRange{geoLonMin, geoLonMax}
	geoLatRange = geoRange{geoLatMin, geoLatMax}
)

// geoHash is a cell: its interleaved bits and how many steps (bits per
// coordinate) it has. The zero value is "no cell".
type geoHash struct {
	bits uint64
	step uint
}

func (h geoHash) zero() bool { return h.bits == 0 && h.step == 0 }

// geoArea is the rectangle a cell covers.
type geoArea struct {
	lon, lat geoRange
}

// spread moves the low 32 bits of v to the even bit positions.
func spread(v uint64) uint64 {
	v &= 0xFFFFFFFF
	v = (v | v<<16) & 0x0000FFFF0000FFFF
	v = (v | v<<8) & 0x00FF00FF00FF00FF
	v = (v | v<<4) & 0x0F0F0F0F0F0F0F0F
	v = (v | v<<2) & 0x3333333333333333
	v = (v | v<<1) & 0x5555555555555555
	return v
}

// squeeze is spread's inverse: the even bits of v, packed.
func squeeze(v uint64) uint64 {
	v &= 0x5555555555555555
	v = (v | v>>1) & 0x3333333333333333
	v = (v | v>>2) & 0x0F0F0F0F0F0F0F0F
	v = (v | v>>4) & 0x00FF00FF00FF00FF
	v = (v | v>>8) & 0x0000FFFF0000FFFF
	v = (v | v>>16) & 0x00000000FFFFFFFF
	return v
}

// geoEncode is the cell of step steps holding (lon, lat) over the given
// ranges; ok is false outside Redis's limits.
func geoEncode(lonR, latR geoRange, lon, lat float64, step uint) (h geoHash, ok bool) {
	if step == 0 || step > 32 {
		return h, false
	}
	if lon > geoLonMax || lon < geoLonMin || lat > geoLatMax || lat < geoLatMin {
		return h, false
	}
	if lat < latR.min || lat > latR.max || lon < lonR.min || lon > lonR.max {
		return h, false
	}
	latOff := (lat - latR.min) / (latR.max - latR.min)
	lonOff := (lon - lonR.min) / (lonR.max - lonR.min)
	latOff = float64(latOff * float64(uint64(1)<<step))
	lonOff = float64(lonOff * float64(uint64(1)<<step))
	// C converts the offsets to uint32 by truncation; both are in
	// [0, 2^step] here.
	return geoHash{bits: spread(uint64(uint32(latOff))) | spread(uint64(uint32(lonOff)))<<1, step: step}, true
}

// geoDecode is the rectangle cell h covers over the given ranges.
func geoDecode(lonR, latR geoRange, h geoHash) (a geoArea, ok bool) {
	if h.zero() {
		return a, false
	}
	ilat := uint32(squeeze(h.bits))
	ilon := uint32(squeeze(h.bits >> 1))
	div := float64(uint64(1) << h.step)
	latScale := latR.max - latR.min
	lonScale := lonR.max - lonR.min
	a.lat.min = latR.min + float64(float64(ilat)*1.0/div*latScale)
	a.lat.max = latR.min + float64((float64(ilat+1)*1.0/div)*latScale)
	a.lon.min = lonR.min + float64(float64(ilon)*1.0/div*lonScale)
	a.lon.max = lonR.min + float64((float64(ilon+1)*1.0/div)*lonScale)
	return a, true
}

// geoScore is the sorted-set score of a position Redis's limits allow.
func geoScore(lon, lat float64) (float64, bool) {
	h, ok := geoEncode(geoLonRange, geoLatRange, lon, lat, geoStepMax)
	return float64(h.bits), ok
}

// geoScoreBits turns a score back into bits as Redis's (uint64_t) cast
// does on x86-64, including for scores no GEOADD made (a sorted set
// written with ZADD): below 2^63 the signed conversion (negative scores
// wrap), from 2^63 the conversion of score-2^63 with the top bit flipped,
// and the processor's "integer indefinite" (1<<63) where those overflow.
func geoScoreBits(score float64) uint64 {
	const two63 = 1 << 63
	switch {
	case score >= two63:
		if score-two63 >= two63 {
			return 0 // (1<<63) ^ (1<<63)
		}
		return uint64(int64(score-two63)) ^ (1 << 63)
	case score < -two63:
		return 1 << 63
	}
	return uint64(int64(score))
}

// geoPosition is the position a score stands for: the centre of its cell,
// clamped to Redis's limits.
func geoPosition(score float64) (lon, lat float64) {
	a, _ := geoDecode(geoLonRange, geoLatRange, geoHash{bits: geoScoreBits(score), step: geoStepMax})
	lon = (a.lon.min + a.lon.max) / 2
	lon = math.Min(math.Max(lon, geoLonMin), geoLonMax)
	lat = (a.lat.min + a.lat.max) / 2
	lat = math.Min(math.Max(lat, geoLatMin), geoLatMax)
	return lon, lat
}

// geoMoveX and geoMoveY move a cell one step east (d > 0) or west, north
// or south, wrapping around at the ends, by adding or subtracting one in
// the odd (longitude) or even (latitude) bits only.
func geoMoveX(h *geoHash, d int) {
	x := h.bits & 0xaaaaaaaaaaaaaaaa
	y := h.bits & 0x5555555555555555
	zz := uint64(0x5555555555555555) >> (64 - h.step*2)
	if d > 0 {
		x += zz + 1
	} else {
		x |= zz
		x -= zz + 1
	}
	x &= uint64(0xaaaaaaaaaaaaaaaa) >> (64 - h.step*2)
	h.bits = x | y
}

func geoMoveY(h *geoHash, d int) {
	x := h.bits & 0xaaaaaaaaaaaaaaaa
	y := h.bits & 0x5555555555555555
	zz := uint64(0xaaaaaaaaaaaaaaaa) >> (64 - h.step*2)
	if d > 0 {
		y += zz + 1
	} else {
		y |= zz
		y -= zz + 1
	}
	y &= uint64(0x5555555555555555) >> (64 - h.step*2)
	h.bits = x | y
}

// The cells a search reads, in the order Redis reads them.
const (
	cellCentre = iota
	cellNorth
	cellSouth
	cellEast
	cellWest
	cellNorthEast
	cellNorthWest
	cellSouthEast
	cellSouthWest
	cellCount
)

// geoNeighbours fills cells with h and its 8 neighbours.
func geoNeighbours(h geoHash, cells *[cellCount]geoHash) {
	for i := range cells {
		cells[i] = h
	}
	moves := [cellCount][2]int{
		cellNorth: {0, 1}, cellSouth: {0, -1}, cellEast: {1, 0}, cellWest: {-1, 0},
		cellNorthEast: {1, 1}, cellNorthWest: {-1, 1}, cellSouthEast: {1, -1}, cellSouthWest: {-1, -1},
	}
	for i := cellNorth; i < cellCount; i++ {
		if moves[i][0] != 0 {
			geoMoveX(&cells[i], moves[i][0])
		}
		if moves[i][1] != 0 {
			geoMoveY(&cells[i], moves[i][1])
		}
	}
}

// geoStepsForRadius is how many steps make a cell about as large as a
// search of radius meters at latitude lat needs (Redis's
// geohashEstimateStepsByRadius): coarser towards the poles.
func geoStepsForRadius(meters, lat float64) uint {
	if meters == 0 {
		return geoStepMax
	}
	step := 1
	for meters < mercatorMax {
		meters *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint(max(1, min(step, geoStepMax)))
}

func degRad(d float64) float64 { return d * degToRad }
func radDeg(r float64) float64 { return r / degToRad }

// geoDistance is the great-circle distance in meters (the haversine
// formula, on Redis's sphere).
func geoDistance(lon1, lat1, lon2, lat2 float64) float64 {
	lat1r, lon1r := degRad(lat1), degRad(lon1)
	lat2r, lon2r := degRad(lat2), degRad(lon2)
	u := geoSin((lat2r - lat1r) / 2)
	v := geoSin((lon2r - lon1r) / 2)
	a := float64(u*u) + float64(float64(float64(geoCos(lat1r)*geoCos(lat2r))*v)*v)
	return 2.0 * earthRadiusMeters * geoAsin(math.Sqrt(a))
}

// geoShape is a search area: a circle (radius) or a box (width, height),
// in the unit whose size in meters is conv, around (lon, lat).
type geoShape struct {
	lon, lat      float64
	box           bool
	radius        float64
	width, height float64
	conv          float64
	// needDist: the search uses distances (to sort, reply or store them);
	// without it a point clearly inside needs no exact distance.
	needDist bool
}

// within reports whether (lon, lat) is inside the shape, and its distance
// from the centre in meters. Most points a search reads are outside its
// shape: those that are clearly outside are rejected on distances computed
// with Go's math functions (geoDistanceFast), and so are accepted those
// clearly inside when the search needs no distance (none replied, stored
// or sorted by) or, in a box, no edge test; only the rest get the
// correctly rounded trigonometry that decides, and gives, what Redis would.
func (s *geoShape) within(lon, lat float64) (float64, bool) {
	if !s.box {
		r := float64(s.radius * s.conv)
		d, far := geoDistanceFast(s.lon, s.lat, lon, lat)
		switch {
		case clearlyAbove(d, far, r):
			return 0, false
		case !s.needDist && clearlyBelow(d, far, r):
			return d, true
		}
		d = geoDistance(s.lon, s.lat, lon, lat)
		return d, d <= r
	}
	w, h := float64(s.width*s.conv), float64(s.height*s.conv)
	latFast, far1 := geoDistanceFast(lon, lat, lon, s.lat)
	if clearlyAbove(latFast, far1, h/2) {
		return 0, false
	}
	lonFast, far2 := geoDistanceFast(lon, lat, s.lon, lat)
	if clearlyAbove(lonFast, far2, w/2) {
		return 0, false
	}
	if !clearlyBelow(latFast, far1, h/2) || !clearlyBelow(lonFast, far2, w/2) {
		// Near an edge: decide as Redis does.
		lonDist := geoDistance(lon, lat, s.lon, lat)
		latDist := geoDistance(lon, lat, lon, s.lat)
		if lonDist > w/2 || latDist > h/2 {
			return 0, false
		}
	}
	if !s.needDist {
		return 0, true
	}
	return geoDistance(s.lon, s.lat, lon, lat), true
}

// geoDistanceFast is geoDistance with Go's sin, cos and asin: within a few
// units in the last place of it (the argument of asin is the same to a few
// units, and asin magnifies that at most 22 times below 0.999), except
// where asin's argument nears 1 (nearly antipodal points), which far
// reports.
func geoDistanceFast(lon1, lat1, lon2, lat2 float64) (d float64, far bool) {
	lat1r, lon1r := degRad(lat1), degRad(lon1)
	lat2r, lon2r := degRad(lat2), degRad(lon2)
	u := math.Sin((lat2r - lat1r) / 2)
	v := math.Sin((lon2r - lon1r) / 2)
	sa := math.Sqrt(u*u + math.Cos(lat1r)*math.Cos(lat2r)*v*v)
	return 2.0 * earthRadiusMeters * math.Asin(sa), !(sa <= 0.999)
}

// clearlyAbove reports whether a fast distance d exceeds limit by more
// than the fast computation can be off (a billionth, and a micrometer for
// a zero limit); clearlyBelow whether it falls short of it by as much.
func clearlyAbove(d float64, far bool, limit float64) bool {
	return !far && d > limit*(1+1e-9)+1e-6
}

func clearlyBelow(d float64, far bool, limit float64) bool {
	return !far && d < limit*(1-1e-9)-1e-6
}

// bounds is the shape's bounding box in degrees: min and max longitude,
// min and max latitude (Redis's geohashBoundingBox; the longitude span is
// taken at the edge nearer the pole).
func (s *geoShape) bounds() (minLon, minLat, maxLon, maxLat float64) {
	height, width := float64(s.conv*s.radius), float64(s.conv*s.radius)
	if s.box {
		height, width = float64(s.conv*(s.height/2)), float64(s.conv*(s.width/2))
	}
	latDelta := radDeg(height / earthRadiusMeters)
	lonDeltaTop := radDeg(width / earthRadiusMeters / geoCos(degRad(s.lat+latDelta)))
	lonDeltaBottom := radDeg(width / earthRadiusMeters / geoCos(degRad(s.lat-latDelta)))
	if s.lat < 0 {
		minLon, maxLon = s.lon-lonDeltaBottom, s.lon+lonDeltaBottom
	} else {
		minLon, maxLon = s.lon-lonDeltaTop, s.lon+lonDeltaTop
	}
	return minLon, s.lat - latDelta, maxLon, s.lat + latDelta
}

// cells is the 9 cells a search of s reads (Redis's
// geohashCalculateAreasByShapeWGS84): the centre's cell at a step fitting
// the shape's size (one step coarser if a neighbour does not reach the
// bounding box's edge), and its neighbours, minus those the bounding box
// does not reach (zero cells).
func (s *geoShape) cells() [cellCount]geoHash {
	minLon, minLat, maxLon, maxLat := s.bounds()
	radius := s.radius
	if s.box {
		radius = math.Sqrt(float64((s.width/2)*(s.width/2)) + float64((s.height/2)*(s.height/2)))
	}
	radius = float64(radius * s.conv)
	steps := geoStepsForRadius(radius, s.lat)
	var cells [cellCount]geoHash
	h, _ := geoEncode(geoLonRange, geoLatRange, s.lon, s.lat, steps)
	geoNeighbours(h, &cells)
	area, _ := geoDecode(geoLonRange, geoLatRange, h)
	north, _ := geoDecode(geoLonRange, geoLatRange, cells[cellNorth])
	south, _ := geoDecode(geoLonRange, geoLatRange, cells[cellSouth])
	east, _ := geoDecode(geoLonRange, geoLatRange, cells[cellEast])
	west, _ := geoDecode(geoLonRange, geoLatRange, cells[cellWest])
	if steps > 1 && (north.lat.max < maxLat || south.lat.min > minLat || east.lon.max < maxLon || west.lon.min > minLon) {
		steps--
		h, _ = geoEncode(geoLonRange, geoLatRange, s.lon, s.lat, steps)
		geoNeighbours(h, &cells)
		area, _ = geoDecode(geoLonRange, geoLatRange, h)
	}
	if steps >= 2 {
		drop := func(ids ...int) {
			for _, i := range ids {
				cells[i] = geoHash{}
			}
		}
		if area.lat.min < minLat {
			drop(cellSouth, cellSouthWest, cellSouthEast)
		}
		if area.lat.max > maxLat {
			drop(cellNorth, cellNorthEast, cellNorthWest)
		}
		if area.lon.min < minLon {
			drop(cellWest, cellSouthWest, cellNorthWest)
		}
		if area.lon.max > maxLon {
			drop(cellEast, cellSouthEast, cellNorthEast)
		}
	}
	return cells
}

// scoreRange is the scores of the points inside cell h: [lo, hi).
func (h geoHash) scoreRange() (lo, hi float64) {
	shift := 52 - h.step*2
	return float64(h.bits << shift), float64((h.bits + 1) << shift)
}

// geoAlphabet is the standard geohash alphabet (base 32 without a, i, l, o).
const geoAlphabet = "0123456789bcdefghjkmnpqrstuvwxyz"

// appendGeohashString appends the 11-character standard geohash of a
// stored score: the position re-encoded over latitude -90..90 (the
// standard range), 10 characters of 5 bits, and a last '0' (52 bits fill
// only 10.4 characters; Redis keeps the 11-character form).
func appendGeohashString(dst []byte, score float64) []byte {
	lon, lat := geoPosition(score)
	h, _ := geoEncode(geoRange{-180, 180}, geoRange{-90, 90}, lon, lat, geoStepMax)
	for i := 0; i < 10; i++ {
		dst = append(dst, geoAlphabet[(h.bits>>(52-(i+1)*5))&0x1f])
	}
	return append(dst, geoAlphabet[0])
}

// appendHumanDouble formats a coordinate as Redis's
// addReplyHumanLongDouble: "%.17Lf" of the (exactly converted) double,
// trailing zeros and a bare point removed, "-0" as "0".
func appendHumanDouble(dst []byte, v float64) []byte {
	start := len(dst)
	dst = strconv.AppendFloat(dst, v, 'f', 17, 64)
	end := len(dst)
	for end > start && dst[end-1] == '0' {
		end--
	}
	if end > start && dst[end-1] == '.' {
		end--
	}
	dst = dst[:end]
	if string(dst[start:]) == "-0" {
		dst = append(dst[:start], '0')
	}
	return dst
}

// appendDistance formats a distance as Redis 7.0.15's
// addReplyDoubleDistance (its fixedpoint_d2string with 4 digits): the
// value times 10^4 rounded to an integer (half to even, as llrint), then
// printed with the point put back — not quite printf's "%.4f", which
// rounds the exact decimal expansion instead.
func appendDistance(dst []byte, v float64) []byte {
	n := int64(math.RoundToEven(v * 1e4))
	if n < 0 {
		dst = append(dst, '-')
		n = -n
	}
	dst = strconv.AppendInt(dst, n/10000, 10)
	frac := n % 10000
	dst = append(dst, '.', byte('0'+frac/1000), byte('0'+frac/100%10), byte('0'+frac/10%10), byte('0'+frac%10))
	return dst
}
