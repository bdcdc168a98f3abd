package actor

import (
	"math"
	"math/bits"
)

// Bitmaps and bit fields are strings: SETBIT, BITFIELD and BITOP read and
// write the same bytes GET, SETRANGE and APPEND do, bit 0 being the most
// significant bit of the first byte. They go through the string path
// (GetString, SetString), so a write rewrites the value.
var bitmapCommands = registerCommands([]*Command{
	{Name: "setbit", Summary: "Sets or clears one bit of a string key, growing it as needed.", Handler: cmdSetBit},
	{Name: "getbit", Summary: "Returns one bit of a string key.", Handler: cmdGetBit},
	{Name: "bitcount", Summary: "Counts the set bits of a string key, in a byte or bit range.", Handler: cmdBitCount},
	{Name: "bitpos", Summary: "Finds the first set or clear bit of a string key, in a byte or bit range.", Handler: cmdBitPos},
	{Name: "bitop", Summary: "Stores the AND, OR, XOR or NOT of string keys in a key.", Handler: cmdBitOp},
	{Name: "bitfield", Summary: "Reads, writes and increments integers of any width at bit offsets of a string key.", Handler: cmdBitField, getKeys: bitfieldKeys},
	{Name: "bitfield_ro", Summary: "Reads integers of any width at bit offsets of a string key.", Handler: cmdBitFieldRO},
})

var _ = addEvents(map[string]*eventSpec{
	"setbit":   {class: notifyString, event: "setbit"},
	"bitfield": {class: notifyString, event: "setbit"},
	"bitop":    {class: notifyString, event: "set"},
})

// bitOffset parses a bit offset as Redis's getBitOffsetFromArgument: an
// integer, or with hash "#n" meaning n*width; never negative, and its byte
// below proto-max-bulk-len.
func (c *Ctx) bitOffset(arg []byte, hash bool, width int) (uint64, error) {
	mul := int64(1)
	if hash && len(arg) > 0 && arg[0] == '#' && width > 0 {
		arg, mul = arg[1:], int64(width)
	}
	v, err := parseInt(arg)
	if err != nil {
		return 0, ErrBitOffset
	}
	v *= mul // wraps like Redis's long long multiplication
	if v < 0 || v>>3 >= c.a.cfg.MaxBulkLen {
		return 0, ErrBitOffset
	}
	return uint64(v), nil
}

// scratchString reads string key into the frame's value scratch (see
// replyString), counting the lookup: no allocation per command, even for
// a large value. The value is valid until the scratch's next use; the
// store copies what SetString is given, so it may be written back.
func (c *Ctx) scratchString(key []byte, count bool) ([]byte, bool, error) {
	var v []byte
	var ok bool
	var err error
	if count {
		v, ok, err = c.getStringInto(key, c.f.val[:0])
	} else {
		v, ok, err = c.st.GetString(c.db, key, c.f.val[:0])
	}
	if cap(v) <= maxValScratch {
		c.f.val = v[:0]
	}
	return v, ok, err
}

// growBits reads string key for a write reaching bit maxbit, padded with
// zero bytes to cover it; grown says whether the key is new or longer.
func (c *Ctx) growBits(key []byte, maxbit uint64) (v []byte, grown bool, err error) {
	v, ok, err := c.scratchString(key, false)
	if err != nil {
		return nil, false, err
	}
	need := int(maxbit>>3) + 1
	if len(v) < need {
		v = append(v, make([]byte, need-len(v))...)
		grown = true
	}
	return v, grown || !ok, nil
}

// SETBIT key offset value
func cmdSetBit(c *Ctx) error {
	off, err := c.bitOffset(c.args[2], false, 0)
	if err != nil {
		return err
	}
	on, err := c.intArg(3)
	if err != nil || on&^1 != 0 {
		return ErrBitValue
	}
	v, grown, err := c.growBits(c.args[1], off)
	if err != nil {
		return err
	}
	i, mask := off>>3, byte(1)<<(7-off&7)
	old := v[i]&mask != 0
	if grown || old != (on == 1) {
		if on == 1 {
			v[i] |= mask
		} else {
			v[i] &^= mask
		}
		if err := c.st.SetString(c.db, c.args[1], v, 0, true); err != nil {
			return err
		}
	}
	c.w.Int(b2i(old))
	return nil
}

// GETBIT key offset
func cmdGetBit(c *Ctx) error {
	off, err := c.bitOffset(c.args[2], false, 0)
	if err != nil {
		return err
	}
	v, _, err := c.scratchString(c.args[1], true)
	if err != nil {
		return err
	}
	bit := int64(0)
	if i := off >> 3; i < uint64(len(v)) && v[i]&(1<<(7-off&7)) != 0 {
		bit = 1
	}
	c.w.Int(bit)
	return nil
}

// bitRange turns start and end (bytes, or bits when isBit) into an
// inclusive range of bits of a string of n bytes, as BITCOUNT and BITPOS
// clamp them; empty when lo > hi.
func bitRange(start, end, n int64, isBit bool) (lo, hi int64) {
	total := n
	if isBit {
		total <<= 3
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	if end >= total {
		end = total - 1
	}
	if start > end {
		return 1, 0
	}
	if isBit {
		return start, end
	}
	return start << 3, end<<3 + 7
}

// unitArg parses BYTE or BIT.
func (c *Ctx) unitArg(i int) (isBit bool, err error) {
	switch {
	case c.argEq(i, "BIT"):
		return true, nil
	case c.argEq(i, "BYTE"):
		return false, nil
	}
	return false, ErrSyntax
}

// BITCOUNT key [start end [BYTE|BIT]]
func cmdBitCount(c *Ctx) error {
	v, ok, err := c.scratchString(c.args[1], true)
	if err != nil {
		return err
	}
	if !ok {
		c.w.Int(0)
		return nil
	}
	n := int64(len(v))
	lo, hi := int64(0), n<<3-1
	switch len(c.args) {
	case 2:
	case 4, 5:
		start, end, err := c.rangeArgs(2)
		if err != nil {
			return err
		}
		if start < 0 && end < 0 && start > end {
			c.w.Int(0)
			return nil
		}
		isBit := false
		if len(c.args) == 5 {
			if isBit, err = c.unitArg(4); err != nil {
				return err
			}
		}
		lo, hi = bitRange(start, end, n, isBit)
	default:
		return ErrSyntax
	}
	c.w.Int(countBits(v, lo, hi))
	return nil
}

// countBits counts the set bits of v from bit lo to bit hi inclusive.
func countBits(v []byte, lo, hi int64) int64 {
	if lo > hi {
		return 0
	}
	first, last := lo>>3, hi>>3
	total := 0
	b := v[first : last+1]
	for len(b) >= 8 {
		total += bits.OnesCount64(uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
			uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7]))
		b = b[8:]
	}
	for _, x := range b {
		total += bits.OnesCount8(x)
	}
	// Take off the bits of the edge bytes outside the range.
	total -= bits.OnesCount8(v[first] & ^byte(0xff>>(lo&7)))
	total -= bits.OnesCount8(v[last] & byte(0xff>>(hi&7+1)))
	return int64(total)
}

// BITPOS key bit [start [end [BYTE|BIT]]]
func cmdBitPos(c *Ctx) error {
	bit, err := c.intArg(2)
	if err != nil {
		return err
	}
	if bit != 0 && bit != 1 {
		return ErrBitArg
	}
	v, ok, err := c.scratchString(c.args[1], true)
	if err != nil {
		return err
	}
	if !ok {
		c.w.Int(-bit) // missing: all clear, so 0 for a clear bit and -1 for a set one
		return nil
	}
	n := int64(len(v))
	lo, hi := int64(0), n<<3-1
	endGiven := false
	switch len(c.args) {
	case 3:
	case 4, 5, 6:
		start, err := c.intArg(3)
		if err != nil {
			return err
		}
		isBit := false
		if len(c.args) == 6 {
			if isBit, err = c.unitArg(5); err != nil {
				return err
			}
		}
		end := n - 1
		if len(c.args) >= 5 {
			if end, err = c.intArg(4); err != nil {
				return err
			}
			endGiven = true
		} else if isBit {
			end = n<<3 + 7
		}
		lo, hi = bitRange(start, end, n, isBit)
	default:
		return ErrSyntax
	}
	if lo > hi {
		c.w.Int(-1)
		return nil
	}
	pos := findBit(v, lo, hi, bit == 1)
	if pos < 0 && bit == 0 && !endGiven {
		// Without an end the string counts as padded with clear bits: the
		// first one after the range's last byte.
		pos = (hi>>3 + 1) << 3
	}
	c.w.Int(pos)
	return nil
}

// findBit returns the position of the first bit equal to set in v from
// bit lo to bit hi inclusive, or -1.
func findBit(v []byte, lo, hi int64, set bool) int64 {
	skip := byte(0xff) // a byte with no bit sought
	if set {
		skip = 0
	}
	for p := lo; p <= hi; {
		i := p >> 3
		if p&7 == 0 && p+7 <= hi {
			// Whole bytes: skip the ones without the bit quickly.
			for p+7 <= hi && v[i] == skip {
				i++
				p += 8
			}
			if p > hi {
				break
			}
		}
		if (v[i]&(0x80>>(p&7)) != 0) == set {
			return p
		}
		p++
	}
	return -1
}

// BITOP AND|OR|XOR|NOT destkey key [key ...]
func cmdBitOp(c *Ctx) error {
	op := c.args[1]
	isNot := eqFold(op, "NOT")
	if !isNot && !eqFold(op, "AND") && !eqFold(op, "OR") && !eqFold(op, "XOR") {
		return ErrSyntax
	}
	if isNot && len(c.args) != 4 {
		return ErrBitOpNot
	}
	srcs := make([][]byte, 0, len(c.args)-3)
	maxLen := 0
	for _, key := range c.args[3:] {
		v, _, err := c.getString(key)
		if err != nil {
			return err
		}
		srcs = append(srcs, v)
		maxLen = max(maxLen, len(v))
	}
	dest := c.args[2]
	if maxLen == 0 {
		if _, err := c.st.Delete(c.db, dest); err != nil {
			return err
		}
		c.w.Int(0)
		return nil
	}
	res := make([]byte, maxLen)
	copy(res, srcs[0])
	switch {
	case isNot:
		for i := range res {
			res[i] = ^res[i]
		}
	case eqFold(op, "AND"):
		for _, s := range srcs[1:] {
			for i := range res {
				if i < len(s) {
					res[i] &= s[i]
				} else {
					res[i] = 0
				}
			}
		}
	case eqFold(op, "OR"):
		for _, s := range srcs[1:] {
			for i, x := range s {
				res[i] |= x
			}
		}
	default:
		for _, s := range srcs[1:] {
			for i, x := range s {
				res[i] ^= x
			}
		}
	}
	if err := c.st.SetString(c.db, dest, res, 0, false); err != nil {
		return err
	}
	c.w.Int(int64(maxLen))
	return nil
}

// Bit field overflow behaviours.
const (
	overflowWrap = iota
	overflowSat
	overflowFail
)

// bitfieldOp is one GET, SET or INCRBY of BITFIELD.
type bitfieldOp struct {
	write    bool // SET or INCRBY
	incr     bool // INCRBY
	signed   bool
	width    int
	offset   uint64
	arg      int64
	overflow int
}

// bitfieldType parses i1..i64 or u1..u63.
func bitfieldType(arg []byte) (signed bool, width int, err error) {
	if len(arg) == 0 || (arg[0] != 'i' && arg[0] != 'u') {
		return false, 0, ErrBitfieldType
	}
	signed = arg[0] == 'i'
	n, ok := parseIntOK(arg[1:])
	if !ok || n < 1 || (signed && n > 64) || (!signed && n > 63) {
		return false, 0, ErrBitfieldType
	}
	return signed, int(n), nil
}

// BITFIELD key [GET type offset | SET type offset value | INCRBY type
// offset increment | OVERFLOW WRAP|SAT|FAIL ...]
func cmdBitField(c *Ctx) error { return bitfield(c, false) }

// BITFIELD_RO key [GET type offset ...]
func cmdBitFieldRO(c *Ctx) error { return bitfield(c, true) }

func bitfield(c *Ctx, readOnly bool) error {
	var ops []bitfieldOp
	overflow := overflowWrap
	writes := false
	var highest uint64
	for j := 2; j < len(c.args); j++ {
		rem := len(c.args) - j - 1
		var op bitfieldOp
		switch {
		case c.argEq(j, "GET") && rem >= 2:
		case c.argEq(j, "SET") && rem >= 3:
			op.write = true
		case c.argEq(j, "INCRBY") && rem >= 3:
			op.write, op.incr = true, true
		case c.argEq(j, "OVERFLOW") && rem >= 1:
			j++
			switch {
			case c.argEq(j, "WRAP"):
				overflow = overflowWrap
			case c.argEq(j, "SAT"):
				overflow = overflowSat
			case c.argEq(j, "FAIL"):
				overflow = overflowFail
			default:
				return ErrBitfieldOverflow
			}
			continue
		default:
			return ErrSyntax
		}
		var err error
		if op.signed, op.width, err = bitfieldType(c.args[j+1]); err != nil {
			return err
		}
		if op.offset, err = c.bitOffset(c.args[j+2], true, op.width); err != nil {
			return err
		}
		if op.write {
			writes = true
			highest = max(highest, op.offset+uint64(op.width)-1)
			if op.arg, err = c.intArg(j + 3); err != nil {
				return err
			}
			j++
		}
		op.overflow = overflow
		ops = append(ops, op)
		j += 2
	}
	if writes && readOnly {
		return ErrBitfieldRO
	}
	var v []byte
	grown := false
	if !writes {
		var err error
		if v, _, err = c.scratchString(c.args[1], true); err != nil {
			return err
		}
	} else {
		var err error
		if v, grown, err = c.growBits(c.args[1], highest); err != nil {
			return err
		}
	}
	c.w.Array(len(ops))
	changed := grown
	for i := range ops {
		if ops[i].apply(c, v, ops[i].offset) {
			changed = true
		}
	}
	if changed {
		return c.st.SetString(c.db, c.args[1], v, 0, true)
	}
	return nil
}

// apply runs the operation on v, its field at bit offset of v (which
// covers it when the operation writes), and replies; changed reports a
// write that changed the field's bits.
func (op *bitfieldOp) apply(c *Ctx, v []byte, offset uint64) (changed bool) {
	if !op.write {
		if op.signed {
			c.w.Int(getSigned(v, offset, op.width))
		} else {
			c.w.Int(int64(getUnsigned(v, offset, op.width)))
		}
		return false
	}
	var old, val, reply int64
	var over bool
	if op.signed {
		old = getSigned(v, offset, op.width)
		if op.incr {
			val, over = signedOverflow(old, op.arg, op.width, op.overflow)
			reply = val
		} else {
			val, over = signedOverflow(op.arg, 0, op.width, op.overflow)
			reply = old
		}
	} else {
		old = int64(getUnsigned(v, offset, op.width))
		var u uint64
		if op.incr {
			u, over = unsignedOverflow(uint64(old), op.arg, op.width, op.overflow)
			val, reply = int64(u), int64(u)
		} else {
			u, over = unsignedOverflow(uint64(op.arg), 0, op.width, op.overflow)
			val, reply = int64(u), old
		}
	}
	if over && op.overflow == overflowFail {
		c.w.Null()
		return false
	}
	c.w.Int(reply)
	setBits(v, offset, op.width, uint64(val))
	return val != old
}

// getUnsigned reads the width-bit unsigned integer at bit offset of v
// (bits past its end are clear).
func getUnsigned(v []byte, offset uint64, width int) uint64 {
	var x uint64
	for j := 0; j < width; j++ {
		i := offset >> 3
		bit := uint64(0)
		if i < uint64(len(v)) {
			bit = uint64(v[i]>>(7-offset&7)) & 1
		}
		x = x<<1 | bit
		offset++
	}
	return x
}

// getSigned reads the width-bit two's complement integer at bit offset.
func getSigned(v []byte, offset uint64, width int) int64 {
	x := getUnsigned(v, offset, width)
	if width < 64 && x&(1<<(width-1)) != 0 {
		x |= math.MaxUint64 << width
	}
	return int64(x)
}

// setBits writes the low width bits of x at bit offset of v, which covers
// them.
func setBits(v []byte, offset uint64, width int, x uint64) {
	for j := 0; j < width; j++ {
		i, mask := offset>>3, byte(0x80)>>(offset&7)
		if x&(1<<(width-1-j)) != 0 {
			v[i] |= mask
		} else {
			v[i] &^= mask
		}
		offset++
	}
}

// unsignedOverflow adds incr to value as a width-bit unsigned integer and
// returns the result under the overflow behaviour, and whether it
// overflowed (Redis's checkUnsignedBitfieldOverflow).
func unsignedOverflow(value uint64, incr int64, width, how int) (uint64, bool) {
	limit := uint64(1)<<width - 1
	maxIncr, minIncr := int64(limit-value), -int64(value)
	var sat uint64
	switch {
	case value > limit || (incr > 0 && incr > maxIncr):
		sat = limit
	case incr < 0 && incr < minIncr:
		sat = 0
	default:
		return value + uint64(incr), false
	}
	if how == overflowSat {
		return sat, true
	}
	return (value + uint64(incr)) & limit, true
}

// signedOverflow is unsignedOverflow for a width-bit two's complement
// integer (Redis's checkSignedBitfieldOverflow).
func signedOverflow(value, incr int64, width, how int) (int64, bool) {
	limit := int64(math.MaxInt64)
	if width < 64 {
		limit = 1<<(width-1) - 1
	}
	least := -limit - 1
	maxIncr := int64(uint64(limit) - uint64(value))
	minIncr := least - value
	var sat int64
	switch {
	case value > limit || (width != 64 && incr > maxIncr) || (value >= 0 && incr > 0 && incr > maxIncr):
		sat = limit
	case value < least || (width != 64 && incr < minIncr) || (value < 0 && incr < 0 && incr < minIncr):
		sat = least
	default:
		return value + incr, false
	}
	if how == overflowSat {
		return sat, true
	}
	sum := uint64(value) + uint64(incr)
	if width < 64 {
		mask := uint64(math.MaxUint64) << width
		if sum&(1<<(width-1)) != 0 {
			sum |= mask
		} else {
			sum &^= mask
		}
	}
	return int64(sum), true
}

// bitfieldKeys is BITFIELD's key with the flags Redis's bitfieldGetKeys
// gives it: read-only when every operation is a GET (or OVERFLOW), else
// read-write (a syntax error counts as a write).
func bitfieldKeys(argv [][]byte) []foundKey {
	flags := []string{"RO", "ACCESS"}
	for i := 2; i < len(argv); i++ {
		rem := len(argv) - i - 1
		switch {
		case eqFold(argv[i], "GET") && rem >= 2:
			i += 2
			continue
		case eqFold(argv[i], "OVERFLOW") && rem >= 1:
			i++
			continue
		}
		flags = []string{"RW", "ACCESS", "UPDATE"}
		break
	}
	return []foundKey{{pos: 1, flags: flags}}
}
