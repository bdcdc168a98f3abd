package actor

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
)

// HyperLogLogs are strings in Redis's own representation, so that counts
// equal Redis's and an HLL copied from Redis (GET/SET) keeps working:
//
//	"HYLL" | encoding (0 dense, 1 sparse) | 3 unused bytes |
//	cached cardinality (8 bytes, little endian; the top bit of the last
//	byte set means "stale") | registers
//
// There are 16384 registers of 6 bits. An element's 64-bit MurmurHash64A
// (seed 0xadc83b19) picks its register with the low 14 bits; the register
// keeps the longest run seen of zero bits that follow, plus one (at most
// 51). Dense registers are packed, least significant bits first, in 12288
// bytes. The sparse encoding is a run-length code of opcodes:
//
//	00xxxxxx           ZERO: xxxxxx+1 registers at 0 (1..64)
//	01xxxxxx yyyyyyyy  XZERO: the 14 bits + 1 registers at 0 (1..16384)
//	1vvvvvxx           VAL: xx+1 registers (1..4) at vvvvv+1 (1..32)
//
// A new HLL is sparse; it turns dense when a register needs a value above
// 32 or the sparse form would grow past hll-sparse-max-bytes. The count is
// Ertl's improved estimator over the registers' histogram (Redis 5+).
var hllCommands = registerCommands([]*Command{
	{Name: "pfadd", Summary: "Adds elements to a HyperLogLog key, creating it if needed.", Handler: cmdPFAdd},
	{Name: "pfcount", Summary: "Estimates the number of distinct elements added to one or more HyperLogLog keys.", Handler: cmdPFCount},
	{Name: "pfmerge", Summary: "Merges HyperLogLog keys into a destination key.", Handler: cmdPFMerge},
	{Name: "pfdebug", Summary: "Inspects or converts the internal representation of a HyperLogLog key.", Handler: cmdPFDebug},
	{Name: "pfselftest", Summary: "Checks the HyperLogLog implementation.", Handler: cmdPFSelfTest},
})

var _ = addEvents(map[string]*eventSpec{
	"pfadd":   {class: notifyString, event: "pfadd"},
	"pfmerge": {class: notifyString, event: "pfadd"},
})

const (
	hllP         = 14
	hllQ         = 64 - hllP
	hllRegisters = 1 << hllP
	hllBits      = 6
	hllRegMax    = 1<<hllBits - 1
	hllHdrSize   = 16
	hllDenseSize = hllHdrSize + (hllRegisters*hllBits+7)/8
	hllDense     = 0
	hllSparse    = 1

	sparseValMaxValue = 32
	sparseValMaxLen   = 4
	sparseZeroMaxLen  = 64
	sparseXZeroMaxLen = 16384

	hllAlphaInf = 0.721347520444481703680 // 1 / (2 ln 2)
)

// newHLL is an empty sparse HLL: the header (cardinality 0, valid) and
// one XZERO opcode covering every register.
func newHLL() []byte {
	v := make([]byte, hllHdrSize+2)
	copy(v, "HYLL")
	v[4] = hllSparse
	putXZero(v[hllHdrSize:], hllRegisters)
	return v
}

// isHLL reports whether v has an HLL's header and, if dense, size.
func isHLL(v []byte) bool {
	return len(v) >= hllHdrSize && string(v[:4]) == "HYLL" && v[4] <= hllSparse &&
		(v[4] != hllDense || len(v) == hllDenseSize)
}

// Sparse opcodes.
func isZero(b byte) bool  { return b&0xc0 == 0 }
func isXZero(b byte) bool { return b&0xc0 == 0x40 }
func zeroLen(b byte) int  { return int(b&0x3f) + 1 }
func valValue(b byte) int { return int(b>>2&0x1f) + 1 }
func valLen(b byte) int   { return int(b&3) + 1 }
func zeroOp(n int) byte   { return byte(n - 1) }
func valOp(val, n int) byte {
	return byte((val-1)<<2|(n-1)) | 0x80
}
func putXZero(p []byte, n int) {
	p[0], p[1] = byte((n-1)>>8)|0x40, byte(n-1)
}

// xzeroLen is the length of the XZERO opcode at p[0]; the second byte past
// the end reads as zero (as the string's terminator does in Redis).
func xzeroLen(p []byte) int {
	lo := 0
	if len(p) > 1 {
		lo = int(p[1])
	}
	return int(p[0]&0x3f)<<8 | lo + 1
}

// Dense registers.
func denseGet(regs []byte, i int) int {
	pos := i * hllBits
	b, fb := pos>>3, uint(pos&7)
	x := int(regs[b]) >> fb
	if b+1 < len(regs) {
		x |= int(regs[b+1]) << (8 - fb)
	}
	return x & hllRegMax
}

func denseSet(regs []byte, i, val int) {
	pos := i * hllBits
	b, fb := pos>>3, uint(pos&7)
	regs[b] &^= byte(hllRegMax << fb)
	regs[b] |= byte(val << fb)
	if b+1 < len(regs) {
		regs[b+1] &^= byte(hllRegMax >> (8 - fb))
		regs[b+1] |= byte(val >> (8 - fb))
	}
}

// murmur64A is Austin Appleby's MurmurHash64A, as Redis hashes HLL
// elements.
func murmur64A(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ uint64(len(key))*m
	for len(key) >= 8 {
		k := binary.LittleEndian.Uint64(key)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		key = key[8:]
	}
	if len(key) > 0 {
		for i := len(key) - 1; i >= 0; i-- {
			h ^= uint64(key[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// hllPatLen is an element's register and the value it offers it: the
// number of zero bits after the index bits, plus one.
func hllPatLen(elem []byte) (index, count int) {
	h := murmur64A(elem, 0xadc83b19)
	index = int(h & (hllRegisters - 1))
	h >>= hllP
	h |= 1 << hllQ
	return index, bits.TrailingZeros64(h) + 1
}

// hll is an HLL string being changed in place; maxSparse is
// hll-sparse-max-bytes.
type hll struct {
	v         []byte
	maxSparse int
}

// set raises register index to count if it is lower: 1 if it changed, 0
// if not, -1 if the sparse form is corrupt.
func (h *hll) set(index, count int) int {
	if h.v[4] == hllDense {
		regs := h.v[hllHdrSize:]
		if count > denseGet(regs, index) {
			denseSet(regs, index, count)
			return 1
		}
		return 0
	}
	return h.sparseSet(index, count)
}

func (h *hll) sparseSet(index, count int) int {
	if count > sparseValMaxValue {
		return h.promote(index, count)
	}
	// Find the opcode covering the register.
	end := len(h.v)
	p, prev, first, span := hllHdrSize, -1, 0, 0
	for p < end {
		oplen := 1
		switch b := h.v[p]; {
		case isZero(b):
			span = zeroLen(b)
		case !isXZero(b):
			span = valLen(b)
		default:
			span, oplen = xzeroLen(h.v[p:]), 2
		}
		if index <= first+span-1 {
			break
		}
		prev = p
		p += oplen
		first += span
	}
	if span == 0 || p >= end {
		return -1
	}
	op := h.v[p]
	zero, xzero := isZero(op), isXZero(op)
	oldLen := 1
	if xzero {
		oldLen = 2
	}
	if !zero && !xzero {
		if valValue(op) >= count {
			return 0
		}
		if valLen(op) == 1 {
			h.v[p] = valOp(count, 1)
			h.mergeVals(prev)
			return 1
		}
	}
	if zero && zeroLen(op) == 1 {
		h.v[p] = valOp(count, 1)
		h.mergeVals(prev)
		return 1
	}
	// Split the opcode into up to three around the register.
	var seq [5]byte
	n := 0
	last := first + span - 1
	put := func(run, val int) {
		switch {
		case val > 0:
			seq[n] = valOp(val, run)
			n++
		case run > sparseZeroMaxLen:
			putXZero(seq[n:], run)
			n += 2
		default:
			seq[n] = zeroOp(run)
			n++
		}
	}
	cur := 0
	if !zero && !xzero {
		cur = valValue(op)
	}
	if index != first {
		put(index-first, cur)
	}
	put(1, count)
	if index != last {
		put(last-index, cur)
	}
	delta := n - oldLen
	if delta > 0 && len(h.v)+delta > h.maxSparse {
		return h.promote(index, count)
	}
	next := min(p+oldLen, len(h.v)) // a cut XZERO ends the string
	tail := append([]byte(nil), h.v[next:]...)
	h.v = append(append(h.v[:p], seq[:n]...), tail...)
	h.mergeVals(prev)
	return 1
}

// mergeVals joins adjacent VAL opcodes of the same value that fit one,
// looking at up to five opcodes from prev (the one before the change).
func (h *hll) mergeVals(prev int) {
	p := prev
	if p < 0 {
		p = hllHdrSize
	}
	for scan := 5; p < len(h.v) && scan > 0; scan-- {
		switch b := h.v[p]; {
		case isXZero(b):
			p += 2
			continue
		case isZero(b):
			p++
			continue
		}
		if p+1 < len(h.v) && !isZero(h.v[p+1]) && !isXZero(h.v[p+1]) {
			v1, v2 := valValue(h.v[p]), valValue(h.v[p+1])
			if n := valLen(h.v[p]) + valLen(h.v[p+1]); v1 == v2 && n <= sparseValMaxLen {
				h.v[p+1] = valOp(v1, n)
				h.v = append(h.v[:p], h.v[p+1:]...)
				continue // try the merged one with its right neighbour
			}
		}
		p++
	}
}

// promote turns the HLL dense and sets the register there.
func (h *hll) promote(index, count int) int {
	dense, ok := sparseToDense(h.v)
	if !ok {
		return -1
	}
	h.v = dense
	denseSet(h.v[hllHdrSize:], index, count)
	return 1
}

// sparseToDense converts a sparse HLL, keeping its header; ok is false if
// its opcodes do not cover exactly every register.
func sparseToDense(v []byte) ([]byte, bool) {
	if v[4] == hllDense {
		return v, true
	}
	dense := make([]byte, hllDenseSize)
	copy(dense, v[:hllHdrSize])
	dense[4] = hllDense
	regs := dense[hllHdrSize:]
	ok := walkSparse(v, func(i, run, val int) {
		for j := 0; j < run; j++ {
			denseSet(regs, i+j, val)
		}
	})
	return dense, ok
}

// walkSparse calls f for each run of non-zero registers of sparse HLL v;
// false if the runs do not cover exactly every register.
func walkSparse(v []byte, f func(i, run, val int)) bool {
	i := 0
	for p := hllHdrSize; p < len(v); {
		switch b := v[p]; {
		case isZero(b):
			i += zeroLen(b)
			p++
		case isXZero(b):
			i += xzeroLen(v[p:])
			p += 2
		default:
			run := valLen(b)
			if i+run > hllRegisters {
				return false
			}
			f(i, run, valValue(b))
			i += run
			p++
		}
	}
	return i == hllRegisters
}

// mergeInto raises max's registers to v's; false if v is corrupt.
func mergeInto(max *[hllRegisters]uint8, v []byte) bool {
	if v[4] == hllDense {
		regs := v[hllHdrSize:]
		for i := range max {
			if r := uint8(denseGet(regs, i)); r > max[i] {
				max[i] = r
			}
		}
		return true
	}
	return walkSparse(v, func(i, run, val int) {
		for j := i; j < i+run; j++ {
			if uint8(val) > max[j] {
				max[j] = uint8(val)
			}
		}
	})
}

// hllCount estimates the cardinality of v; ok is false if it is corrupt.
func hllCount(v []byte) (uint64, bool) {
	var histo [64]int
	if v[4] == hllDense {
		regs := v[hllHdrSize:]
		for i := 0; i < hllRegisters; i++ {
			histo[denseGet(regs, i)]++
		}
	} else {
		zeros := hllRegisters
		ok := walkSparse(v, func(_, run, val int) {
			histo[val] += run
			zeros -= run
		})
		if !ok {
			return 0, false
		}
		histo[0] = zeros
	}
	return estimate(&histo), true
}

// rawCount estimates the cardinality of plain registers.
func rawCount(regs *[hllRegisters]uint8) uint64 {
	var histo [64]int
	for _, r := range regs {
		histo[r]++
	}
	return estimate(&histo)
}

// estimate is Ertl's estimator ("New cardinality estimation algorithms for
// HyperLogLog sketches", arXiv:1702.01284) over the register histogram.
func estimate(histo *[64]int) uint64 {
	const m = float64(hllRegisters)
	z := m * hllTau((m-float64(histo[hllQ+1]))/m)
	for j := hllQ; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += m * hllSigma(float64(histo[0])/m)
	return uint64(math.Round(hllAlphaInf * m * m / z))
}

func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		prev := z
		z += x * y
		y += y
		if prev == z {
			return z
		}
	}
}

func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		d := 1 - x
		z -= d * d * y
		if prev == z {
			return z / 3
		}
	}
}

// Cached cardinality.
func cacheValid(v []byte) bool { return v[15]&0x80 == 0 }
func invalidateCache(v []byte) { v[15] |= 0x80 }

// hllSparseMax is hll-sparse-max-bytes.
func (c *Ctx) hllSparseMax() int {
	n, err := strconv.Atoi(c.a.storedParamValue("hll-sparse-max-bytes"))
	if err != nil {
		return 3000
	}
	return n
}

// readHLL reads key for PFCOUNT and PFMERGE (into the value scratch with
// scratch): nil when missing, an error when it is not an HLL.
func (c *Ctx) readHLL(key []byte, scratch bool) ([]byte, error) {
	var v []byte
	var ok bool
	var err error
	if scratch {
		v, ok, err = c.scratchString(key, true)
	} else {
		v, ok, err = c.getString(key)
	}
	if err != nil || !ok {
		return nil, err
	}
	if !isHLL(v) {
		return nil, ErrNotHLL
	}
	return v, nil
}

// PFADD key [element ...]
func cmdPFAdd(c *Ctx) error {
	key := c.args[1]
	v, ok, err := c.scratchString(key, false)
	if err != nil {
		return err
	}
	updated := !ok
	if !ok {
		v = newHLL()
	} else if !isHLL(v) {
		return ErrNotHLL
	}
	h := hll{v: v, maxSparse: c.hllSparseMax()}
	for _, e := range c.args[2:] {
		i, n := hllPatLen(e)
		switch h.set(i, n) {
		case 1:
			updated = true
		case -1:
			return ErrInvalidHLL
		}
	}
	if updated {
		invalidateCache(h.v)
		if err := c.st.SetString(c.db, key, h.v, 0, true); err != nil {
			return err
		}
	}
	c.w.Int(b2i(updated))
	return nil
}

// PFCOUNT key [key ...]
func cmdPFCount(c *Ctx) error {
	if len(c.args) > 2 {
		var max [hllRegisters]uint8
		for _, key := range c.args[1:] {
			v, err := c.readHLL(key, true)
			if err != nil {
				return err
			}
			if v != nil && !mergeInto(&max, v) {
				return ErrInvalidHLL
			}
		}
		c.w.Int(int64(rawCount(&max)))
		return nil
	}
	key := c.args[1]
	v, err := c.readHLL(key, true)
	if err != nil {
		return err
	}
	if v == nil {
		c.w.Int(0)
		return nil
	}
	if cacheValid(v) {
		c.w.Int(int64(binary.LittleEndian.Uint64(v[8:16])))
		return nil
	}
	n, ok := hllCount(v)
	if !ok {
		return ErrInvalidHLL
	}
	// As in Redis, the count is cached in the value: a write.
	binary.LittleEndian.PutUint64(v[8:16], n)
	if err := c.st.SetString(c.db, key, v, 0, true); err != nil {
		return err
	}
	c.w.Int(int64(n))
	return nil
}

// PFMERGE destkey [sourcekey ...]
func cmdPFMerge(c *Ctx) error {
	var max [hllRegisters]uint8
	dense := false
	var dest []byte
	for i, key := range c.args[1:] {
		v, err := c.readHLL(key, i > 0) // the destination's value is kept
		if err != nil {
			return err
		}
		if v == nil {
			continue
		}
		if i == 0 {
			dest = v
		}
		dense = dense || v[4] == hllDense
		if !mergeInto(&max, v) {
			return ErrInvalidHLL
		}
	}
	if dest == nil {
		dest = newHLL()
	}
	h := hll{v: dest, maxSparse: c.hllSparseMax()}
	if dense {
		d, ok := sparseToDense(h.v)
		if !ok {
			return ErrInvalidHLL
		}
		h.v = d
	}
	for i, r := range max {
		if r != 0 {
			h.set(i, int(r))
		}
	}
	invalidateCache(h.v)
	if err := c.st.SetString(c.db, c.args[1], h.v, 0, true); err != nil {
		return err
	}
	c.w.OK()
	return nil
}

// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key
func cmdPFDebug(c *Ctx) error {
	key := c.args[2]
	v, ok, err := c.st.GetString(c.db, key, nil)
	if err != nil {
		return err
	}
	if !ok {
		return ErrPFDebugNoKey
	}
	if !isHLL(v) {
		return ErrNotHLL
	}
	sub := c.args[1]
	if len(c.args) != 3 && (eqFold(sub, "GETREG") || eqFold(sub, "DECODE") || eqFold(sub, "ENCODING") || eqFold(sub, "TODENSE")) {
		return errPFDebugArity(sub)
	}
	switch {
	case eqFold(sub, "GETREG"), eqFold(sub, "TODENSE"):
		converted := false
		if v[4] == hllSparse {
			d, ok := sparseToDense(v)
			if !ok {
				return ErrInvalidHLL
			}
			if err := c.st.SetString(c.db, key, d, 0, true); err != nil {
				return err
			}
			v, converted = d, true
		}
		if eqFold(sub, "TODENSE") {
			c.w.Int(b2i(converted))
			return nil
		}
		c.w.Array(hllRegisters)
		for i := 0; i < hllRegisters; i++ {
			c.w.Int(int64(denseGet(v[hllHdrSize:], i)))
		}
	case eqFold(sub, "DECODE"):
		if v[4] != hllSparse {
			return ErrHLLNotSparse
		}
		var out []byte
		for p := hllHdrSize; p < len(v); {
			switch b := v[p]; {
			case isZero(b):
				out = strconv.AppendInt(append(out, "z:"...), int64(zeroLen(b)), 10)
				p++
			case isXZero(b):
				out = strconv.AppendInt(append(out, "Z:"...), int64(xzeroLen(v[p:])), 10)
				p += 2
			default:
				out = strconv.AppendInt(append(out, "v:"...), int64(valValue(b)), 10)
				out = strconv.AppendInt(append(out, ','), int64(valLen(b)), 10)
				p++
			}
			out = append(out, ' ')
		}
		if len(out) > 0 {
			out = out[:len(out)-1]
		}
		c.w.Bulk(out)
	case eqFold(sub, "ENCODING"):
		if v[4] == hllDense {
			c.w.Simple("dense")
		} else {
			c.w.Simple("sparse")
		}
	default:
		return errPFDebugUnknown(sub)
	}
	return nil
}

// PFSELFTEST: checks the dense register packing against plain registers
// and the sparse encoding against the dense one on the same elements.
func cmdPFSelfTest(c *Ctx) error {
	var plain [hllRegisters]uint8
	regs := make([]byte, hllDenseSize-hllHdrSize)
	seed := uint64(0x9e3779b97f4a7c15)
	for round := 0; round < 100; round++ {
		for i := range plain {
			seed = seed*6364136223846793005 + 1442695040888963407
			plain[i] = uint8(seed>>58) & hllRegMax
			denseSet(regs, i, int(plain[i]))
		}
		for i := range plain {
			if denseGet(regs, i) != int(plain[i]) {
				return errPFSelfTest("TESTFAILED Register error at " + strconv.Itoa(i))
			}
		}
	}
	sparse := hll{v: newHLL(), maxSparse: 1 << 30}
	dense := hll{v: newHLL(), maxSparse: 0}
	var buf [20]byte
	for n := 0; n < 5000; n++ {
		e := strconv.AppendInt(buf[:0], int64(n), 10)
		i, cnt := hllPatLen(e)
		if sparse.set(i, cnt) != dense.set(i, cnt) {
			return errPFSelfTest("TESTFAILED sparse and dense differ at element " + string(e))
		}
	}
	a, okA := hllCount(sparse.v)
	b, okB := hllCount(dense.v)
	if !okA || !okB || a != b {
		return errPFSelfTest("TESTFAILED sparse and dense counts differ")
	}
	c.w.OK()
	return nil
}
