package actor

import (
	"sort"

	"github.com/cellar-db/cellar/storage"
)

// The geo commands keep positions as the scores of sorted-set members
// (geohash.go): GEOADD is ZADD with computed scores, and a search reads
// the score ranges of at most 9 cells around its centre through the
// sorted set's score index, then keeps the points inside its shape.

var geoCommands = registerCommands([]*Command{
	{Name: "geoadd", Summary: "Adds members with their longitude and latitude to a sorted set used as a geospatial index.", Handler: cmdGeoAdd},
	{Name: "geopos", Summary: "Returns the longitude and latitude of members of a geospatial index.", Handler: cmdGeoPos},
	{Name: "geodist", Summary: "Returns the distance between two members of a geospatial index.", Handler: cmdGeoDist},
	{Name: "geohash", Summary: "Returns the standard geohash strings of members of a geospatial index.", Handler: cmdGeoHash},
	{Name: "geosearch", Summary: "Returns the members of a geospatial index inside a circle or a box.", Handler: cmdGeoSearch(geoSearchFlag)},
	{Name: "geosearchstore", Summary: "Stores the members of a geospatial index inside a circle or a box in a sorted set.", Handler: cmdGeoSearch(geoSearchFlag | geoSearchStoreFlag)},
	{Name: "georadius", Summary: "Returns the members of a geospatial index within a radius of a position, optionally storing them.", Handler: cmdGeoSearch(geoFromCoords)},
	{Name: "georadius_ro", Summary: "Returns the members of a geospatial index within a radius of a position.", Handler: cmdGeoSearch(geoFromCoords | geoNoStore)},
	{Name: "georadiusbymember", Summary: "Returns the members of a geospatial index within a radius of a member, optionally storing them.", Handler: cmdGeoSearch(geoFromMember)},
	{Name: "georadiusbymember_ro", Summary: "Returns the members of a geospatial index within a radius of a member.", Handler: cmdGeoSearch(geoFromMember | geoNoStore)},
})

// The keyspace notification events of what these commands write
// (notify.go, eventSpec).
var _ = addEvents(map[string]*eventSpec{
	// GEOADD is a ZADD; the searches that store name their own event.
	"geoadd":            {class: notifyZSet, event: "zadd"},
	"georadius":         {class: notifyZSet, event: "georadiusstore"},
	"georadiusbymember": {class: notifyZSet, event: "georadiusstore"},
	"geosearchstore":    {class: notifyZSet, event: "geosearchstore"},
})

// geoLonLat parses a longitude and a latitude as Redis's
// extractLongLatOrReply: floats, within the limits a geohash covers.
func geoLonLat(lonArg, latArg []byte) (lon, lat float64, err error) {
	lon, ok1 := parseScore(lonArg)
	if !ok1 {
		return 0, 0, ErrNotFloat
	}
	lat, ok2 := parseScore(latArg)
	if !ok2 {
		return 0, 0, ErrNotFloat
	}
	if lon < geoLonMin || lon > geoLonMax || lat < geoLatMin || lat > geoLatMax {
		return 0, 0, errGeoLonLat(lon, lat)
	}
	return lon, lat, nil
}

// geoUnit is how many meters a unit argument stands for.
func geoUnit(b []byte) (float64, error) {
	switch {
	case eqFold(b, "m"):
		return 1, nil
	case eqFold(b, "km"):
		return 1000, nil
	case eqFold(b, "ft"):
		return 0.3048, nil
	case eqFold(b, "mi"):
		return 1609.34, nil
	}
	return 0, ErrGeoUnit
}

// geoRadiusArgs parses "radius unit" into s.
func geoRadiusArgs(s *geoShape, radius, unit []byte) error {
	r, ok := parseScore(radius)
	if !ok {
		return ErrGeoRadiusNotNumber
	}
	if r < 0 {
		return ErrGeoRadiusNegative
	}
	conv, err := geoUnit(unit)
	if err != nil {
		return err
	}
	s.box, s.radius, s.conv = false, r, conv
	return nil
}

// geoBoxArgs parses "width height unit" into s.
func geoBoxArgs(s *geoShape, width, height, unit []byte) error {
	w, ok := parseScore(width)
	if !ok {
		return ErrGeoWidthNotNumber
	}
	h, ok := parseScore(height)
	if !ok {
		return ErrGeoHeightNotNumber
	}
	if h < 0 || w < 0 {
		return ErrGeoBoxNegative
	}
	conv, err := geoUnit(unit)
	if err != nil {
		return err
	}
	s.box, s.width, s.height, s.conv = true, w, h, conv
	return nil
}

// GEOADD key [NX|XX] [CH] longitude latitude member [...]
func cmdGeoAdd(c *Ctx) error {
	var a zaddArgs
	i := 2
opts:
	for ; i < len(c.args); i++ {
		switch {
		case c.argEq(i, "nx"):
			a.nx = true
		case c.argEq(i, "xx"):
			a.xx = true
		case c.argEq(i, "ch"):
			a.ch = true
		default:
			break opts
		}
	}
	rest := c.args[i:]
	if len(rest)%3 != 0 || len(rest) == 0 || (a.nx && a.xx) {
		return ErrSyntax
	}
	n := len(rest) / 3
	a.scores, a.members = make([]float64, n), make([][]byte, n)
	for j := 0; j < n; j++ {
		lon, lat, err := geoLonLat(rest[3*j], rest[3*j+1])
		if err != nil {
			return err
		}
		a.scores[j], _ = geoScore(lon, lat)
		a.members[j] = rest[3*j+2]
	}
	return zadd(c, &a)
}

// writeCoord writes a coordinate as Redis's addReplyHumanLongDouble: a
// bulk string in RESP2, a double in RESP3.
func writeCoord(c *Ctx, v float64) {
	var buf [48]byte
	b := appendHumanDouble(buf[:0], v)
	if c.w.Resp3() {
		c.w.Buf = append(c.w.Buf, ',')
		c.w.Buf = append(c.w.Buf, b...)
		c.w.Buf = append(c.w.Buf, '\r', '\n')
		return
	}
	c.w.Bulk(b)
}

// GEOPOS key [member ...]
func cmdGeoPos(c *Ctx) error {
	z, err := c.readColl(c.args[1], storage.TypeZSet)
	if err != nil {
		return err
	}
	c.w.Array(len(c.args) - 2)
	for _, m := range c.args[2:] {
		score, ok := 0.0, false
		if z != nil {
			if score, ok, err = c.st.ZScore(z, m); err != nil {
				return err
			}
		}
		if !ok {
			c.w.NullArray()
			continue
		}
		lon, lat := geoPosition(score)
		c.w.Array(2)
		writeCoord(c, lon)
		writeCoord(c, lat)
	}
	return nil
}

// GEODIST key member1 member2 [M|KM|FT|MI]
func cmdGeoDist(c *Ctx) error {
	conv := 1.0
	switch {
	case len(c.args) == 5:
		var err error
		if conv, err = geoUnit(c.args[4]); err != nil {
			return err
		}
	case len(c.args) > 5:
		return ErrSyntax
	}
	z, err := c.readColl(c.args[1], storage.TypeZSet)
	if err != nil || z == nil {
		if err == nil {
			c.w.Null()
		}
		return err
	}
	s1, ok1, err := c.st.ZScore(z, c.args[2])
	if err != nil {
		return err
	}
	s2, ok2, err := c.st.ZScore(z, c.args[3])
	if err != nil {
		return err
	}
	if !ok1 || !ok2 {
		c.w.Null()
		return nil
	}
	lon1, lat1 := geoPosition(s1)
	lon2, lat2 := geoPosition(s2)
	var buf [64]byte
	c.w.Bulk(appendDistance(buf[:0], geoDistance(lon1, lat1, lon2, lat2)/conv))
	return nil
}

// GEOHASH key [member ...]
func cmdGeoHash(c *Ctx) error {
	z, err := c.readColl(c.args[1], storage.TypeZSet)
	if err != nil {
		return err
	}
	c.w.Array(len(c.args) - 2)
	var buf [16]byte
	for _, m := range c.args[2:] {
		score, ok := 0.0, false
		if z != nil {
			if score, ok, err = c.st.ZScore(z, m); err != nil {
				return err
			}
		}
		if !ok {
			c.w.Null()
			continue
		}
		c.w.Bulk(appendGeohashString(buf[:0], score))
	}
	return nil
}

// The forms of a geo search (Redis's georadiusGeneric flags).
const (
	geoFromCoords      = 1 << iota // GEORADIUS: key longitude latitude radius unit
	geoFromMember                  // GEORADIUSBYMEMBER: key member radius unit
	geoNoStore                     // the _RO forms: no STORE or STOREDIST
	geoSearchFlag                  // GEOSEARCH: FROMMEMBER/FROMLONLAT, BYRADIUS/BYBOX
	geoSearchStoreFlag             // GEOSEARCHSTORE: destination first, STOREDIST a flag
)

// Orders of a search's results.
const (
	geoSortNone = iota
	geoSortAsc
	geoSortDesc
)

// geoSearchArgs is a parsed search.
type geoSearchArgs struct {
	shape                         geoShape
	store                         []byte // destination key; nil: reply
	storeDist                     bool
	withDist, withHash, withCoord bool
	fromMember, fromLonLat        bool
	byRadius, byBox               bool
	sort                          int
	any                           bool
	count                         int64 // 0: no limit
}

// geoPoint is a point a search found; member is a slice of the search's
// arena (an arena that grew leaves earlier members in its old array,
// which stays as it was).
type geoPoint struct {
	member   []byte
	score    float64
	lon, lat float64
	dist     float64
}

// cmdGeoSearch runs GEOSEARCH, GEOSEARCHSTORE, GEORADIUS,
// GEORADIUSBYMEMBER and the _RO forms as Redis's georadiusGeneric does,
// checks and errors in its order:
//
//	GEORADIUS key longitude latitude radius M|KM|FT|MI [WITHCOORD]
//	  [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC|DESC] [STORE key|STOREDIST key]
//	GEORADIUSBYMEMBER key member radius M|KM|FT|MI [...]
//	GEOSEARCH key FROMMEMBER member|FROMLONLAT longitude latitude
//	  BYRADIUS radius M|KM|FT|MI|BYBOX width height M|KM|FT|MI [ASC|DESC]
//	  [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]
//	GEOSEARCHSTORE destination source [... as GEOSEARCH] [STOREDIST]
func cmdGeoSearch(flags int) Handler {
	return func(c *Ctx) error {
		src := 1
		if flags&geoSearchStoreFlag != 0 {
			src = 2
		}
		z, err := c.readColl(c.args[src], storage.TypeZSet)
		if err != nil {
			return err
		}
		a, err := parseGeoSearch(c, flags, z)
		if err != nil {
			return err
		}
		if z == nil {
			if a.store != nil {
				return storeZSet(c, a.store, nil)
			}
			c.w.Array(0)
			return nil
		}
		if a.count != 0 && a.sort == geoSortNone && !a.any {
			a.sort = geoSortAsc
		}
		limit := int64(0)
		if a.any {
			limit = a.count
		}
		// COUNT n with an order keeps the n nearest (or farthest): only
		// they and their close rivals need exact distances (geoNearest).
		partial := a.sort != geoSortNone && a.count != 0 && !a.any
		a.shape.needDist = !partial && (a.sort != geoSortNone || a.withDist || a.storeDist)
		var arena []byte
		var points []geoPoint
		if err := geoCollect(c, z, &a.shape, limit, &arena, &points); err != nil {
			return err
		}
		if len(points) == 0 && a.store == nil {
			c.w.Array(0)
			return nil
		}
		if partial {
			points = geoNearest(&a.shape, points, a.count, a.sort == geoSortDesc)
		}
		switch a.sort {
		case geoSortAsc:
			sort.SliceStable(points, func(i, j int) bool { return points[i].dist < points[j].dist })
		case geoSortDesc:
			sort.SliceStable(points, func(i, j int) bool { return points[i].dist > points[j].dist })
		}
		if a.count != 0 && int64(len(points)) > a.count {
			points = points[:a.count]
		}
		for i := range points {
			points[i].dist /= a.shape.conv
		}
		if a.store != nil {
			es := make([]storage.Elem, len(points))
			for i := range points {
				es[i] = storage.Elem{Member: points[i].member, Score: points[i].score}
				if a.storeDist {
					es[i].Score = points[i].dist
				}
			}
			return storeZSet(c, a.store, es)
		}
		writeGeoPoints(c, &a, points)
		return nil
	}
}

// parseGeoSearch parses a search's arguments; z is the source sorted set
// (nil when the key is missing: a member to search from is then not
// looked up, and the caller answers with nothing after the syntax checks).
func parseGeoSearch(c *Ctx, flags int, z *storage.Coll) (a geoSearchArgs, err error) {
	base := 2
	switch {
	case flags&geoFromCoords != 0:
		base = 6
		if a.shape.lon, a.shape.lat, err = geoLonLat(c.args[2], c.args[3]); err != nil {
			return a, err
		}
		if err := geoRadiusArgs(&a.shape, c.args[4], c.args[5]); err != nil {
			return a, err
		}
	case flags&geoFromMember != 0:
		base = 5
		if z != nil {
			if err := geoFromMemberOf(c, z, c.args[2], &a.shape); err != nil {
				return a, err
			}
			if err := geoRadiusArgs(&a.shape, c.args[3], c.args[4]); err != nil {
				return a, err
			}
		}
	case flags&geoSearchStoreFlag != 0:
		base = 3
		a.store = c.args[1]
	}
	search := flags&geoSearchFlag != 0
	storeOK := flags&(geoNoStore|geoSearchFlag) == 0
	for i := base; i < len(c.args); i++ {
		left := len(c.args) - i - 1
		switch {
		case c.argEq(i, "withdist"):
			a.withDist = true
		case c.argEq(i, "withhash"):
			a.withHash = true
		case c.argEq(i, "withcoord"):
			a.withCoord = true
		case c.argEq(i, "any"):
			a.any = true
		case c.argEq(i, "asc"):
			a.sort = geoSortAsc
		case c.argEq(i, "desc"):
			a.sort = geoSortDesc
		case c.argEq(i, "count") && left >= 1:
			n, err := c.intArg(i + 1)
			if err != nil {
				return a, err
			}
			if n <= 0 {
				return a, ErrGeoCount
			}
			a.count = n
			i++
		case c.argEq(i, "store") && left >= 1 && storeOK:
			a.store, a.storeDist = c.args[i+1], false
			i++
		case c.argEq(i, "storedist") && left >= 1 && storeOK:
			a.store, a.storeDist = c.args[i+1], true
			i++
		case c.argEq(i, "storedist") && search && flags&geoSearchStoreFlag != 0:
			a.storeDist = true
		case c.argEq(i, "frommember") && left >= 1 && search && !a.fromLonLat:
			if z != nil {
				if err := geoFromMemberOf(c, z, c.args[i+1], &a.shape); err != nil {
					return a, err
				}
			}
			a.fromMember = true
			i++
		case c.argEq(i, "fromlonlat") && left >= 2 && search && !a.fromMember:
			if a.shape.lon, a.shape.lat, err = geoLonLat(c.args[i+1], c.args[i+2]); err != nil {
				return a, err
			}
			a.fromLonLat = true
			i += 2
		case c.argEq(i, "byradius") && left >= 2 && search && !a.byBox:
			if err := geoRadiusArgs(&a.shape, c.args[i+1], c.args[i+2]); err != nil {
				return a, err
			}
			a.byRadius = true
			i += 2
		case c.argEq(i, "bybox") && left >= 3 && search && !a.byRadius:
			if err := geoBoxArgs(&a.shape, c.args[i+1], c.args[i+2], c.args[i+3]); err != nil {
				return a, err
			}
			a.byBox = true
			i += 3
		default:
			return a, ErrSyntax
		}
	}
	if a.store != nil && (a.withDist || a.withHash || a.withCoord) {
		if flags&geoSearchStoreFlag != 0 {
			return a, errGeoStoreWith("GEOSEARCHSTORE")
		}
		return a, errGeoStoreWith("STORE option in GEORADIUS")
	}
	if search && !(a.fromMember || a.fromLonLat) {
		return a, errGeoFrom(c.args[0])
	}
	if search && !(a.byRadius || a.byBox) {
		return a, errGeoBy(c.args[0])
	}
	if a.any && a.count == 0 {
		return a, ErrGeoAnyNeedsCount
	}
	return a, nil
}

// geoFromMemberOf sets the shape's centre to member's position.
func geoFromMemberOf(c *Ctx, z *storage.Coll, member []byte, s *geoShape) error {
	score, ok, err := c.st.ZScore(z, member)
	if err != nil {
		return err
	}
	if !ok {
		return ErrGeoMemberMissing
	}
	s.lon, s.lat = geoPosition(score)
	return nil
}

// geoCollect appends the points of z inside the shape to points, reading
// the score ranges of the shape's cells in Redis's order (a cell the same
// as the one read just before it is skipped: with huge radii neighbours
// coincide), and stops once it has limit points (limit 0: no limit).
func geoCollect(c *Ctx, z *storage.Coll, s *geoShape, limit int64, arena *[]byte, points *[]geoPoint) error {
	cells := s.cells()
	last := 0
	for i := range cells {
		if cells[i].zero() {
			continue
		}
		if last != 0 && cells[i] == cells[last] {
			continue
		}
		if limit > 0 && int64(len(*points)) >= limit {
			break
		}
		lo, hi := cells[i].scoreRange()
		r := storage.ZRange{Kind: storage.ZByScore, Min: lo, Max: storage.ZNextDown(hi), Limit: -1}
		err := c.st.ZRangeElems(z, r, func(e *storage.Elem) bool {
			lon, lat := geoPosition(e.Score)
			if d, in := s.within(lon, lat); in {
				start := len(*arena)
				*arena = append(*arena, e.Member...)
				*points = append(*points, geoPoint{score: e.Score, lon: lon, lat: lat, dist: d,
					member: (*arena)[start:len(*arena):len(*arena)]})
			}
			return limit == 0 || int64(len(*points)) < limit
		})
		if err != nil {
			return err
		}
		last = i
	}
	return nil
}

// geoNearest narrows points (whose distances may be the fast ones,
// geohash.go) to those that can be among the n nearest (farthest with
// desc) by exact distance, in their order, with their exact distances: the
// n-th fast distance, widened by what fast distances can be off, is the
// bound.
func geoNearest(s *geoShape, points []geoPoint, n int64, desc bool) []geoPoint {
	if int64(len(points)) <= n {
		for i := range points {
			points[i].dist = geoDistance(s.lon, s.lat, points[i].lon, points[i].lat)
		}
		return points
	}
	ds := make([]float64, len(points))
	for i := range points {
		ds[i] = points[i].dist
	}
	sort.Float64s(ds)
	keep := func(d float64) bool { t := ds[n-1]; return d <= t*(1+1e-9)+1e-6 }
	if desc {
		keep = func(d float64) bool { t := ds[int64(len(ds))-n]; return d >= t*(1-1e-9)-1e-6 }
	}
	out := points[:0]
	for _, p := range points {
		if keep(p.dist) {
			p.dist = geoDistance(s.lon, s.lat, p.lon, p.lat)
			out = append(out, p)
		}
	}
	return out
}

// writeGeoPoints replies with a search's points: members alone, or each an
// array of the member and what the WITH options asked for, in Redis's
// order (distance, hash, coordinates).
func writeGeoPoints(c *Ctx, a *geoSearchArgs, points []geoPoint) {
	extra := 0
	for _, with := range []bool{a.withDist, a.withHash, a.withCoord} {
		if with {
			extra++
		}
	}
	c.w.Array(len(points))
	var buf [64]byte
	for i := range points {
		p := &points[i]
		if extra > 0 {
			c.w.Array(extra + 1)
		}
		c.w.Bulk(p.member)
		if a.withDist {
			c.w.Bulk(appendDistance(buf[:0], p.dist))
		}
		if a.withHash {
			c.w.Int(int64(p.score))
		}
		if a.withCoord {
			c.w.Array(2)
			writeCoord(c, p.lon)
			writeCoord(c, p.lat)
		}
	}
}
