package actor

import (
	"errors"

	"github.com/cellar-db/cellar/storage"
)

var lcsCommands = registerCommands([]*Command{
	{Name: "lcs", Summary: "Finds the longest common subsequence of two string keys.", Handler: cmdLCS},
})

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]
//
// The classic dynamic programming table of (len1+1)*(len2+1) 32-bit
// lengths, bounded as in Redis by proto-max-bulk-len; the walk back from
// its corner yields the subsequence (built from its end) and the matching
// ranges, last first.
func cmdLCS(c *Ctx) error {
	a, _, errA := c.getString(c.args[1])
	b, _, errB := c.getString(c.args[2])
	for _, err := range []error{errA, errB} {
		if errors.Is(err, storage.ErrWrongType) {
			return ErrLCSNotString
		}
		if err != nil {
			return err
		}
	}
	var getLen, getIdx, withLen bool
	minLen := int64(0)
	for j := 3; j < len(c.args); j++ {
		more := len(c.args) - 1 - j
		switch {
		case c.argEq(j, "IDX"):
			getIdx = true
		case c.argEq(j, "LEN"):
			getLen = true
		case c.argEq(j, "WITHMATCHLEN"):
			withLen = true
		case c.argEq(j, "MINMATCHLEN") && more > 0:
			n, err := c.intArg(j + 1)
			if err != nil {
				return err
			}
			minLen = max(n, 0)
			j++
		default:
			return ErrSyntax
		}
	}
	if getIdx && getLen {
		return ErrLCSIdxAndLen
	}
	alen, blen := len(a), len(b)
	if uint64(alen+1)*uint64(blen+1)*4 > uint64(c.a.cfg.MaxBulkLen) {
		return ErrLCSTooBig
	}
	width := blen + 1
	table := make([]uint32, (alen+1)*width)
	at := func(i, j int) uint32 { return table[i*width+j] }
	for i := 1; i <= alen; i++ {
		for j := 1; j <= blen; j++ {
			switch {
			case a[i-1] == b[j-1]:
				table[i*width+j] = at(i-1, j-1) + 1
			default:
				table[i*width+j] = max(at(i-1, j), at(i, j-1))
			}
		}
	}
	total := at(alen, blen)
	if getLen {
		c.w.Int(int64(total))
		return nil
	}
	result := make([]byte, total)
	type match struct{ a0, a1, b0, b1 int }
	var matches []match
	idx := int(total)
	started := false
	var cur match
	for i, j := alen, blen; i > 0 && j > 0; {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			switch {
			case !started:
				cur, started = match{i - 1, i - 1, j - 1, j - 1}, true
			case cur.a0 == i && cur.b0 == j:
				cur.a0--
				cur.b0--
			default:
				emit = true
			}
			if cur.a0 == 0 || cur.b0 == 0 {
				emit = true
			}
			idx, i, j = idx-1, i-1, j-1
		} else {
			if at(i-1, j) > at(i, j-1) {
				i--
			} else {
				j--
			}
			emit = started
		}
		if emit {
			if n := int64(cur.a1 - cur.a0 + 1); minLen == 0 || n >= minLen {
				matches = append(matches, cur)
			}
			started = false
		}
	}
	if !getIdx {
		c.w.Bulk(result)
		return nil
	}
	c.w.Map(2)
	c.w.BulkString("matches")
	c.w.Array(len(matches))
	for _, m := range matches {
		if withLen {
			c.w.Array(3)
		} else {
			c.w.Array(2)
		}
		c.w.Array(2)
		c.w.Int(int64(m.a0))
		c.w.Int(int64(m.a1))
		c.w.Array(2)
		c.w.Int(int64(m.b0))
		c.w.Int(int64(m.b1))
		if withLen {
			c.w.Int(int64(m.a1 - m.a0 + 1))
		}
	}
	c.w.BulkString("len")
	c.w.Int(int64(total))
	return nil
}
