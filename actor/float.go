package actor

import (
	"math"
	"strconv"

	"github.com/cellar-db/cellar/proto"
)

// Sorted-set scores are parsed the way Redis parses them: with C's strtod
// plus its own checks, which accept forms Go's ParseFloat does not ("0x10",
// "1e", " 1" in range bounds, "" as 0 in range bounds) and refuse others.

// strtod parses the longest prefix of b that C's strtod converts, after
// leading white space. n is the number of bytes consumed (0: no
// conversion); erange reports what strtod signals with ERANGE and a result
// of ±HUGE_VAL or zero (overflow, or underflow to zero).
func strtod(b []byte) (v float64, n int, erange bool) {
	i := 0
	for i < len(b) && isCSpace(b[i]) {
		i++
	}
	start := i
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	neg := i > start && b[start] == '-'
	if w := matchWord(b[i:], "infinity"); w > 0 || matchWord(b[i:], "inf") > 0 {
		if w == 0 {
			w = 3
		}
		return math.Copysign(math.Inf(1), signOf(neg)), i + w, false
	}
	if matchWord(b[i:], "nan") > 0 {
		j := i + 3
		if j < len(b) && b[j] == '(' {
			k := j + 1
			for k < len(b) && (isAlnum(b[k]) || b[k] == '_') {
				k++
			}
			if k < len(b) && b[k] == ')' {
				j = k + 1
			}
		}
		return math.NaN(), j, false
	}
	if i+1 < len(b) && b[i] == '0' && (b[i+1] == 'x' || b[i+1] == 'X') {
		if v, m, ok := hexFloat(b[i+2:], neg); ok {
			return v, i + 2 + m, math.IsInf(v, 0) || (v == 0 && hexNonZero(b[i+2:i+2+m]))
		}
		// "0x" with no hex digits after it: strtod converts the "0".
		return math.Copysign(0, signOf(neg)), i + 1, false
	}
	digits, nonzero := 0, false
	j := i
	for j < len(b) && isDigit(b[j]) {
		nonzero = nonzero || b[j] != '0'
		j++
		digits++
	}
	if j < len(b) && b[j] == '.' {
		j++
		for j < len(b) && isDigit(b[j]) {
			nonzero = nonzero || b[j] != '0'
			j++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0, false
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		k := j + 1
		if k < len(b) && (b[k] == '+' || b[k] == '-') {
			k++
		}
		if k < len(b) && isDigit(b[k]) {
			for k < len(b) && isDigit(b[k]) {
				k++
			}
			j = k
		}
	}
	v, err := strconv.ParseFloat(string(b[start:j]), 64)
	if err != nil && !math.IsInf(v, 0) {
		return 0, 0, false
	}
	return v, j, math.IsInf(v, 0) || (v == 0 && nonzero)
}

// hexFloat parses a hexadecimal mantissa with an optional binary exponent
// ("1.8p3"), the part of a C hex float after "0x".
func hexFloat(b []byte, neg bool) (float64, int, bool) {
	j, digits := 0, 0
	for j < len(b) && isHex(b[j]) {
		j++
		digits++
	}
	if j < len(b) && b[j] == '.' {
		j++
		for j < len(b) && isHex(b[j]) {
			j++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0, false
	}
	mant := string(b[:j])
	exp := "p0"
	if j < len(b) && (b[j] == 'p' || b[j] == 'P') {
		k := j + 1
		if k < len(b) && (b[k] == '+' || b[k] == '-') {
			k++
		}
		if k < len(b) && isDigit(b[k]) {
			for k < len(b) && isDigit(b[k]) {
				k++
			}
			exp = "p" + string(b[j+1:k])
			j = k
		}
	}
	sign := ""
	if neg {
		sign = "-"
	}
	v, err := strconv.ParseFloat(sign+"0x"+mant+exp, 64)
	if err != nil && !math.IsInf(v, 0) {
		return 0, 0, false
	}
	return v, j, true
}

func hexNonZero(b []byte) bool {
	for _, c := range b {
		if c == 'p' || c == 'P' {
			return false
		}
		if isHex(c) && c != '0' {
			return true
		}
	}
	return false
}

func signOf(neg bool) float64 {
	if neg {
		return -1
	}
	return 1
}

// matchWord reports len(word) when b starts with word, ignoring ASCII case.
func matchWord(b []byte, word string) int {
	if len(b) < len(word) || !eqFold(b[:len(word)], word) {
		return 0
	}
	return len(word)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') }
func isAlnum(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// parseScore parses a score, increment or weight as Redis's
// getDoubleFromObject: all of b, no leading space, no overflow or
// underflow to zero, never NaN.
func parseScore(b []byte) (float64, bool) {
	if len(b) == 0 || isCSpace(b[0]) {
		return 0, false
	}
	v, n, erange := strtod(b)
	if n != len(b) || erange || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// parseScoreBound parses a ZRANGEBYSCORE-style bound as Redis's
// zslParseRange: "(" makes it exclusive; the rest goes to strtod, which
// must consume it all (so "" is 0) and not yield NaN; overflow is ±inf.
func parseScoreBound(b []byte) (v float64, excl bool, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		excl, b = true, b[1:]
	}
	v, n, _ := strtod(b)
	if n != len(b) || math.IsNaN(v) {
		return 0, false, false
	}
	return v, excl, true
}

// appendD2String formats a score as Redis's d2string, which ZSCAN uses:
// integers below 2^52 as integers, the rest like %.17g.
func appendD2String(dst []byte, v float64) []byte {
	if v == 0 {
		if math.Signbit(v) {
			return append(dst, "-0"...)
		}
		return append(dst, '0')
	}
	if v > -4503599627370495 && v < 4503599627370496 && v == math.Trunc(v) {
		return strconv.AppendInt(dst, int64(v), 10)
	}
	return proto.AppendDouble(dst, v)
}

// appendListpackScore formats a score as ZSCAN shows it for a small sorted
// set: Redis's listpack stores a score that is an integer within
// ±LLONG_MAX/2 as that integer, and anything else as d2string's text.
func appendListpackScore(dst []byte, v float64) []byte {
	const limit = float64(math.MaxInt64 / 2)
	if v >= -limit && v <= limit && v == math.Trunc(v) {
		return strconv.AppendInt(dst, int64(v), 10)
	}
	return appendD2String(dst, v)
}
