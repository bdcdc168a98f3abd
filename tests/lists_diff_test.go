package tests

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestListsMatchRedis runs seeded sequences of random list commands (pushes
// and pops of one and several elements, LMOVE between lists and onto the
// same list, LSET, LINSERT, LREM, LTRIM, LPOS, COPY, DEL, errors) against
// Cellar and a real redis-server and requires identical reply bytes after
// every command. Like TestCollectionsMatchRedis it runs with the defaults
// and with a 1-byte memory bound and a flush after every round, so lists
// are let go and loaded back from SQLite between commands, and the rows a
// flush writes for pops, pushes and renumbering meet every other command.
func TestListsMatchRedis(t *testing.T) {
	t.Parallel()
	againstRedis(t, func(t *testing.T, cel, red *rawConn, seed uint64) {
		g := &listGen{r: rand.New(rand.NewPCG(seed, 99))}
		for i := 0; i < steps(4000); i++ {
			sameReply(t, cel, red, i, g.next())
		}
	})
}

type listGen struct{ r *rand.Rand }

func (g *listGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// key is mostly one of three lists, sometimes a set or a missing key.
func (g *listGen) key() string {
	if g.r.IntN(12) == 0 {
		return g.pick("s1", "nokey")
	}
	return g.pick("l1", "l2", "l3")
}

// val is mostly a one-letter element (so LREM, LPOS and LINSERT find
// some), now and then one past the inline budget (stored as a blob).
func (g *listGen) val() string {
	if g.r.IntN(10) == 0 {
		return strings.Repeat(g.pick("x", "y"), 1000+g.r.IntN(50))
	}
	return g.pick("a", "b", "c", "d")
}

func (g *listGen) index() string { return strconv.Itoa(g.r.IntN(12) - 6) }

func (g *listGen) next() []string {
	r := g.r
	switch r.IntN(24) {
	case 0, 1, 2, 3, 4:
		args := []string{g.pick("LPUSH", "RPUSH", "LPUSH", "RPUSH", "LPUSHX", "RPUSHX"), g.key()}
		for n := 1 + r.IntN(3); n > 0; n-- {
			args = append(args, g.val())
		}
		return args
	case 5, 6, 7, 8, 9:
		args := []string{g.pick("LPOP", "RPOP"), g.key()}
		if r.IntN(4) == 0 {
			args = append(args, g.pick("0", "1", "2", "3", "-1"))
		}
		return args
	case 10:
		return []string{"LRANGE", g.key(), g.index(), g.index()}
	case 11:
		return []string{"LRANGE", g.key(), "0", "-1"}
	case 12:
		return []string{"LINDEX", g.key(), g.index()}
	case 13:
		return []string{"LSET", g.key(), g.index(), g.val()}
	case 14:
		return []string{"LINSERT", g.key(), g.pick("BEFORE", "AFTER"), g.val(), g.val()}
	case 15:
		return []string{"LREM", g.key(), g.index(), g.val()}
	case 16:
		return []string{"LTRIM", g.key(), g.index(), g.index()}
	case 17:
		return []string{"LLEN", g.key()}
	case 18:
		args := []string{"LPOS", g.key(), g.val()}
		if r.IntN(2) == 0 {
			args = append(args, "RANK", g.pick("1", "-1", "2", "-2"))
		}
		if r.IntN(2) == 0 {
			args = append(args, "COUNT", g.pick("0", "1", "3"))
		}
		return args
	case 19, 20:
		return []string{"LMOVE", g.key(), g.key(), g.pick("LEFT", "RIGHT"), g.pick("LEFT", "RIGHT")}
	case 21:
		return []string{"RPOPLPUSH", g.key(), g.key()}
	case 22:
		return []string{"COPY", g.key(), g.key(), "REPLACE"}
	default:
		switch r.IntN(3) {
		case 0:
			return []string{"DEL", g.key()}
		case 1:
			return []string{"SADD", "s1", g.val()}
		}
		return []string{"LRANGE", g.key(), "0", "-1"}
	}
}
