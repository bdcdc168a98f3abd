package actor

import (
	"strings"

	"github.com/cellar-db/cellar/storage"
)

// Reply shapes the command families share.

// Whether an operation on several keys replies with its result (SINTER,
// ZUNION, ZRANGE, ...) or stores it in the key given first (SINTERSTORE,
// ZUNIONSTORE, ZRANGESTORE, ...) and replies with its size.
const (
	replyResult = false
	storeResult = true
)

// helpReply writes a HELP reply: a title line, then the lines.
func helpReply(c *Ctx, name string, lines []string) error {
	c.w.Array(len(lines) + 1)
	c.w.Simple(strings.ToUpper(name) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		c.w.Simple(l)
	}
	return nil
}

// writePairs writes elements, each with its value or score when with is
// set: a flat array in RESP2, an array of pairs in RESP3 (the reply shape
// of HRANDFIELD, ZRANDMEMBER and ZRANGE).
func writePairs(c *Ctx, es []storage.Elem, with bool, second func(e *storage.Elem)) {
	writePairsHeader(c, len(es), with)
	for i := range es {
		writePair(c, &es[i], with, second)
	}
}

func writePairsHeader(c *Ctx, n int, with bool) {
	if with && !c.w.Resp3() {
		n *= 2
	}
	c.w.Array(n)
}

func writePair(c *Ctx, e *storage.Elem, with bool, second func(e *storage.Elem)) {
	if with && c.w.Resp3() {
		c.w.Array(2)
	}
	c.w.Bulk(e.Member)
	if with {
		second(e)
	}
}
