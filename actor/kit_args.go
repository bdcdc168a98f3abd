package actor

// Argument parsing and conversions the command families share. They name
// no family; a family's own parsing stays in its file.

import (
	"math"
	"math/big"
	"strings"
)

// parseIntOK is parseInt that reports only whether b is an integer.
func parseIntOK(b []byte) (int64, bool) {
	v, err := parseInt(b)
	return v, err == nil
}

// b2i is 1 for true, 0 for false (the integer replies of yes/no commands).
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// parseLongDouble parses b as Redis's getLongDoubleFromObject (strtold and
// its checks) does.
func parseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || isCSpace(b[0]) {
		return nil, false
	}
	s := string(b)
	body := strings.TrimLeft(s, "+-")
	switch strings.ToLower(body) {
	case "inf", "infinity":
		return new(big.Float).SetInf(strings.HasPrefix(s, "-")), true
	}
	if strings.ContainsAny(s, "_") || len(body) == 0 {
		return nil, false
	}
	if l := strings.ToLower(body); strings.HasPrefix(l, "0b") || strings.HasPrefix(l, "0o") {
		return nil, false
	}
	f, _, err := big.ParseFloat(s, 0, longDoublePrec, big.ToNearestEven)
	if err != nil {
		return nil, false
	}
	if f.IsInf() {
		return nil, false
	}
	if exp := f.MantExp(nil); exp > maxLongDoubleExp {
		return nil, false // overflow: strtold's ERANGE with HUGE_VAL
	} else if f.Sign() != 0 && exp < -16445 {
		return nil, false // underflow to zero
	}
	return f, true
}

// formatLongDouble prints f like Redis's ld2string(LD_STR_HUMAN): %.17Lf with
// trailing zeros (and a bare point) removed, "-0" as "0".
func formatLongDouble(f *big.Float) string {
	s := f.Text('f', 17)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// expireAt turns an expiry argument into unix milliseconds the way Redis's
// getExpireMillisecondsOrReply does: positive, no overflow, relative forms
// added to the command's time.
func expireAt(c *Ctx, arg []byte, seconds, relative bool) (int64, error) {
	v, err := parseInt(arg)
	if err != nil {
		return 0, err
	}
	if v <= 0 || (seconds && v > math.MaxInt64/1000) {
		return 0, errInvalidExpire(c.cmd.Name)
	}
	if seconds {
		v *= 1000
	}
	if relative {
		if v > math.MaxInt64-c.now {
			return 0, errInvalidExpire(c.cmd.Name)
		}
		v += c.now
	}
	return v, nil
}

// cutNUL is b up to its first NUL byte, as C string functions see it.
func cutNUL(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// mpopArgs parses the numkeys key [key ...] WHERE [COUNT count] part of
// LMPOP, BLMPOP, ZMPOP and BZMPOP, starting at args[at]; where parses WHERE
// (LEFT|RIGHT, MIN|MAX).
func mpopArgs[W any](c *Ctx, at int, where func([]byte) (W, error)) (keys [][]byte, w W, count int64, err error) {
	numkeys, ok := parseIntOK(c.args[at])
	if !ok || numkeys < 1 {
		return nil, w, 0, ErrNumKeysPositive
	}
	if numkeys >= int64(len(c.args)-at-1) {
		return nil, w, 0, ErrSyntax
	}
	wi := at + 1 + int(numkeys)
	if w, err = where(c.args[wi]); err != nil {
		return nil, w, 0, err
	}
	count = -1
	for j := wi + 1; j < len(c.args); j++ {
		if count == -1 && c.argEq(j, "count") && j+1 < len(c.args) {
			v, ok := parseIntOK(c.args[j+1])
			if !ok || v < 1 {
				return nil, w, 0, ErrCountPositive
			}
			count = v
			j++
			continue
		}
		return nil, w, 0, ErrSyntax
	}
	if count == -1 {
		count = 1
	}
	return c.args[at+1 : wi], w, count, nil
}

// longDoublePrec is the mantissa of x87's 80-bit long double, which Redis
// uses for INCRBYFLOAT; emulating it keeps results such as 10.5+0.1 = 10.6
// identical to Redis's.
const longDoublePrec = 64

// maxLongDoubleExp is the binary exponent above which a long double is
// infinite (big.Float's MantExp convention: mantissa in [0.5, 1)).
const maxLongDoubleExp = 16384
