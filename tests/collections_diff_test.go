package tests

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar"
)

// TestCollectionsMatchRedis runs long seeded sequences of random hash, set
// and sorted-set commands (options, bounds and errors included) against
// Cellar and a real redis-server and requires identical reply bytes after
// every command. Replies Redis leaves unordered are compared as
// collections. Keys stay small (Redis's compact encodings), where Redis's
// answers are deterministic even for lexicographic ranges over mixed
// scores; TestLargeSortedSetRanges and TestScanGuarantees cover large ones.
//
// It runs under againstRedis's three configurations.
func TestCollectionsMatchRedis(t *testing.T) {
	t.Parallel()
	againstRedis(t, func(t *testing.T, cel, red *rawConn, seed uint64) {
		sameReplies(t, cel, red, &cmdGen{r: rand.New(rand.NewPCG(seed, 42))}, steps(4000))
	})
}

// againstRedis runs run for seeds 1 to 3, each on a fresh pair of
// connections to Cellar and to a real redis-server, both flushed, under
// two configurations: the defaults; and a memory bound of one byte with a
// flush after every round, so that every command meets its keys cold
// (loaded back from SQLite), hot, or in a flush under way
// (docs/architecture.md, "Storage engine").
func againstRedis(t *testing.T, run func(t *testing.T, cel, red *rawConn, seed uint64)) {
	t.Helper()
	redisAddr := startRedis(t)
	for _, v := range []struct {
		name string
		opt  func(*cellar.Config)
	}{
		{"defaults", func(*cellar.Config) {}},
		{"tiny bound, flush every round", func(c *cellar.Config) {
			c.Storage.MaxMemory = 1
			c.Storage.FlushInterval = time.Nanosecond
		}},
	} {
		t.Run(v.name, func(t *testing.T) {
			s := startServer(t, v.opt)
			for seed := uint64(1); seed <= 3; seed++ {
				t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
					cel, red := dialRaw(t, s.addr), dialRaw(t, redisAddr)
					for _, c := range []*rawConn{cel, red} {
						if _, err := c.tryDo("FLUSHALL"); err != nil {
							t.Fatal(err)
						}
					}
					run(t, cel, red, seed)
				})
			}
		})
	}
}

// TestLargeCollectionsMatchRedis is the same over collections past Redis's
// compact encodings (hashtable, skiplist), preloaded with hundreds of
// elements, leaving out what Redis answers nondeterministically there
// (lexicographic ranges over mixed scores) or what Cellar documents as
// different (OBJECT ENCODING after a collection shrinks).
func TestLargeCollectionsMatchRedis(t *testing.T) {
	t.Parallel()
	redisAddr := startRedis(t)
	s := startServer(t)
	for seed := uint64(1); seed <= 2; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			largeSequence(t, s.addr, redisAddr, seed)
		})
	}
}

func largeSequence(t *testing.T, cellarAddr, redisAddr string, seed uint64) {
	cel, red := dialRaw(t, cellarAddr), dialRaw(t, redisAddr)
	g := &cmdGen{r: rand.New(rand.NewPCG(seed, 7)), big: true}
	var load [][]string
	for _, k := range []string{"z1", "z2", "z3"} {
		args := []string{"ZADD", k}
		for i := 0; i < 300; i++ {
			args = append(args, g.score(), g.member())
		}
		load = append(load, args)
	}
	lex, sets, hash := []string{"ZADD", "lex"}, [][]string{{"SADD", "s1"}, {"SADD", "s2"}}, []string{"HSET", "h1"}
	for i := 0; i < 300; i++ {
		lex = append(lex, "0", g.member())
		sets[0] = append(sets[0], g.member())
		sets[1] = append(sets[1], g.member())
		hash = append(hash, g.member(), strconv.Itoa(i))
	}
	load = append(load, lex, sets[0], sets[1], hash)
	for _, args := range append([][]string{{"FLUSHALL"}}, load...) {
		got, err1 := cel.tryDo(args...)
		want, err2 := red.tryDo(args...)
		if err1 != nil || err2 != nil || got != want {
			t.Fatalf("loading %s %s: %q / %q (%v %v)", args[0], args[1], got, want, err1, err2)
		}
	}
	sameReplies(t, cel, red, g, 5000)
}

// sameReplies sends n commands from g to Cellar and to Redis and requires
// the same reply bytes (compared as collections where g says the order is
// Redis's own).
func sameReplies(t *testing.T, cel, red *rawConn, g *cmdGen, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		args, unordered := g.next()
		got, err1 := cel.tryDo(args...)
		want, err2 := red.tryDo(args...)
		if err1 != nil || err2 != nil {
			t.Fatalf("command %d %q: cellar err %v, redis err %v", i, args, err1, err2)
		}
		mode := byte(0)
		if unordered {
			mode = '~'
		}
		if !compatEqual(mode, got, want) {
			t.Fatalf("command %d %q:\n cellar: %q\n redis:  %q", i, args, got, want)
		}
	}
}

// cmdGen makes random commands over a few keys and a small member pool
// (with big, a pool of 400 members and only the commands whose replies
// Redis fixes for large collections).
type cmdGen struct {
	r   *rand.Rand
	big bool
}

func (g *cmdGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *cmdGen) member() string {
	if g.big && g.r.IntN(8) != 0 {
		return fmt.Sprintf("m%03d", g.r.IntN(400))
	}
	return g.pick("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "m", "m\x00", "zz", "", "1", "10", "-5")
}

// rare picks from bad one time in ten, else from good: mostly valid
// commands, with every error path still visited.
func (g *cmdGen) rare(good, bad []string) string {
	if g.r.IntN(10) == 0 {
		return g.pick(bad...)
	}
	return g.pick(good...)
}

func (g *cmdGen) score() string {
	return g.rare([]string{"0", "1", "2", "2.5", "-1", "0.1", "-0", "inf", "-inf", "1e17", "3", "7", "0x10", "1e-3", "-2.25"},
		[]string{"nan", "x", "", " 1"})
}

func (g *cmdGen) bound() string {
	return g.rare([]string{"-inf", "+inf", "inf", "(1", "1", "0", "(0", "-1", "(2", "2.5", "(inf", "(-inf", "1e17", "(-2.25", "3", "(7"},
		[]string{"x", "", "[1", "nan"})
}

func (g *cmdGen) lexBound() string {
	if g.big && g.r.IntN(2) == 0 {
		return g.pick("[", "(") + fmt.Sprintf("m%03d", g.r.IntN(400))
	}
	return g.rare([]string{"-", "+", "[a", "(a", "[c", "(c", "[m", "(m", "[m\x00", "[zz", "(zz", "[", "(", "[f", "(h"},
		[]string{"a", "[1", "", "+x"})
}

func (g *cmdGen) zkey() string {
	if g.big {
		// "lex" keeps one score: lexicographic ranges stay deterministic.
		return g.rare([]string{"z1", "z2", "z3", "d"}, []string{"h1", "s1", "nokey"})
	}
	return g.rare([]string{"z1", "z2", "z3", "lex", "d"}, []string{"h1", "s1", "nokey"})
}
func (g *cmdGen) skey() string { return g.rare([]string{"s1", "s2", "s3"}, []string{"z1", "nokey"}) }
func (g *cmdGen) hkey() string { return g.rare([]string{"h1", "h2"}, []string{"s1", "nokey"}) }

func (g *cmdGen) index() string {
	return strconv.Itoa(g.r.IntN(14) - 7)
}

// next returns a command and whether its reply is unordered.
func (g *cmdGen) next() ([]string, bool) {
	r := g.r
	switch r.IntN(40) {
	case 0, 1, 2, 3:
		args := []string{"ZADD", g.zkey()}
		for _, o := range []string{"NX", "XX", "GT", "LT", "CH", "INCR"} {
			if r.IntN(6) == 0 {
				args = append(args, o)
			}
		}
		for n := 1 + r.IntN(5); n > 0; n-- {
			args = append(args, g.score(), g.member())
		}
		return args, false
	case 4:
		// Same-score members for the lexicographic commands.
		return []string{"ZADD", "lex", "0", g.member(), "0", g.member(), "0", g.member()}, false
	case 5:
		return []string{"ZINCRBY", g.zkey(), g.score(), g.member()}, false
	case 6:
		return []string{"ZREM", g.zkey(), g.member(), g.member()}, false
	case 7:
		return []string{g.pick("ZSCORE", "ZRANK", "ZREVRANK"), g.zkey(), g.member()}, false
	case 8:
		return []string{"ZMSCORE", g.zkey(), g.member(), g.member()}, false
	case 9, 10:
		key := g.zkey()
		kind := g.pick("", "BYSCORE", "BYLEX")
		if g.big && kind == "BYLEX" {
			key = "lex"
		}
		var lo, hi string
		switch kind {
		case "":
			lo, hi = g.index(), g.index()
		case "BYSCORE":
			lo, hi = g.bound(), g.bound()
		default:
			lo, hi = g.lexBound(), g.lexBound()
		}
		args := []string{"ZRANGE", key, lo, hi}
		if kind != "" {
			args = append(args, kind)
		}
		if r.IntN(3) == 0 {
			args = append(args, "REV")
		}
		if r.IntN(3) == 0 {
			args = append(args, "LIMIT", strconv.Itoa(r.IntN(5)-1), strconv.Itoa(r.IntN(6)-1))
		}
		if r.IntN(2) == 0 {
			args = append(args, "WITHSCORES")
		}
		return args, false
	case 11, 12:
		cmd := g.pick("ZRANGEBYSCORE", "ZREVRANGEBYSCORE", "ZCOUNT", "ZREMRANGEBYSCORE")
		args := []string{cmd, g.zkey(), g.bound(), g.bound()}
		if strings.Contains(cmd, "RANGEBY") && cmd != "ZREMRANGEBYSCORE" {
			if r.IntN(2) == 0 {
				args = append(args, "WITHSCORES")
			}
			if r.IntN(3) == 0 {
				args = append(args, "LIMIT", strconv.Itoa(r.IntN(4)-1), strconv.Itoa(r.IntN(5)-1))
			}
		}
		return args, false
	case 13, 14:
		cmd := g.pick("ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZLEXCOUNT", "ZREMRANGEBYLEX")
		key := g.pick("lex", "z1", "z2", "d")
		if g.big {
			key = "lex"
		}
		args := []string{cmd, key, g.lexBound(), g.lexBound()}
		if (cmd == "ZRANGEBYLEX" || cmd == "ZREVRANGEBYLEX") && r.IntN(3) == 0 {
			args = append(args, "LIMIT", strconv.Itoa(r.IntN(4)-1), strconv.Itoa(r.IntN(5)-1))
		}
		return args, false
	case 15:
		return []string{"ZREMRANGEBYRANK", g.zkey(), g.index(), g.index()}, false
	case 16:
		args := []string{g.pick("ZPOPMIN", "ZPOPMAX"), g.zkey()}
		if r.IntN(2) == 0 {
			args = append(args, strconv.Itoa(r.IntN(4)-1))
		}
		return args, false
	case 17:
		args := []string{"ZMPOP", "2", g.zkey(), g.zkey(), g.pick("MIN", "MAX")}
		if r.IntN(2) == 0 {
			args = append(args, "COUNT", strconv.Itoa(r.IntN(4)))
		}
		return args, false
	case 18, 19:
		cmd := g.pick("ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE", "ZUNION", "ZINTER", "ZDIFF", "ZINTERCARD")
		args := []string{cmd}
		if strings.HasSuffix(cmd, "STORE") {
			args = append(args, "d")
		}
		args = append(args, "2", g.pick("z1", "z2", "s1", "nokey"), g.pick("z1", "z2", "z3", "s2"))
		if cmd != "ZDIFF" && cmd != "ZDIFFSTORE" && cmd != "ZINTERCARD" {
			if r.IntN(2) == 0 {
				args = append(args, "WEIGHTS", g.pick("1", "2", "-1", "0", "inf", "0.5"), g.pick("1", "3", "-inf", "0.25"))
			}
			if r.IntN(2) == 0 {
				args = append(args, "AGGREGATE", g.pick("SUM", "MIN", "MAX"))
			}
		}
		if cmd == "ZINTERCARD" && r.IntN(2) == 0 {
			args = append(args, "LIMIT", strconv.Itoa(r.IntN(4)))
		}
		if !strings.HasSuffix(cmd, "STORE") && cmd != "ZINTERCARD" && r.IntN(2) == 0 {
			args = append(args, "WITHSCORES")
		}
		return args, false
	case 20:
		return []string{"ZRANGESTORE", "d", g.zkey(), g.bound(), g.bound(), "BYSCORE"}, false
	case 21:
		if r.IntN(2) == 0 && !g.big {
			return []string{"OBJECT", "ENCODING", g.zkey()}, false
		}
		return []string{g.pick("ZCARD", "TYPE", "EXISTS"), g.zkey()}, false
	case 22, 23:
		return []string{"HSET", g.hkey(), g.member(), g.pick("1", "-3", "x", "2.5", "", "9223372036854775807"), g.member(), g.score()}, false
	case 24:
		return []string{"HINCRBY", g.hkey(), g.member(), g.pick("1", "-2", "abc", "9223372036854775807")}, false
	case 25:
		return []string{"HINCRBYFLOAT", g.hkey(), g.member(), g.pick("1.5", "-0.1", "abc", "inf", "1e3", "0x10")}, false
	case 26:
		return []string{g.pick("HGET", "HEXISTS", "HSTRLEN", "HDEL"), g.hkey(), g.member()}, false
	case 27:
		return []string{g.pick("HGETALL", "HKEYS", "HVALS", "HLEN"), g.hkey()}, true
	case 28:
		return []string{"HMGET", g.hkey(), g.member(), g.member()}, false
	case 29, 30:
		return []string{"SADD", g.skey(), g.member(), g.member(), g.member()}, false
	case 31:
		return []string{"SREM", g.skey(), g.member(), g.member()}, false
	case 32:
		return []string{"SISMEMBER", g.skey(), g.member()}, false
	case 33:
		return []string{g.pick("SINTER", "SUNION", "SDIFF", "SMEMBERS"), g.skey(), g.skey()}, true
	case 34:
		return []string{g.pick("SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"), "s3", g.skey(), g.skey()}, false
	case 35:
		args := []string{"SINTERCARD", "2", g.skey(), g.skey()}
		if r.IntN(2) == 0 {
			args = append(args, "LIMIT", strconv.Itoa(r.IntN(3)))
		}
		return args, false
	case 36:
		return []string{"SMISMEMBER", g.skey(), g.member(), g.member()}, false
	case 37:
		return []string{"SCARD", g.skey()}, false
	case 38:
		return []string{"SMOVE", g.skey(), g.skey(), g.member()}, false
	}
	return []string{"DEL", g.pick("z1", "z2", "h1", "s1", "s2", "d", "lex")}, false
}

// TestHashFieldOrderAfterRemoval: a small hash's field removed and set
// again goes to the end of its insertion order, as in Redis's listpack,
// byte for byte — set again by a later command, and within one pipelined
// batch, where the field's removal is still waiting in memory for the
// flush, under both configurations of againstRedis.
func TestHashFieldOrderAfterRemoval(t *testing.T) {
	t.Parallel()
	againstRedis(t, func(t *testing.T, cel, red *rawConn, seed uint64) {
		if seed > 1 {
			return // one sequence: it is not random
		}
		same := func(cmds ...[]string) {
			t.Helper()
			var batch []byte
			for _, c := range cmds {
				batch = append(batch, encode(c...)...)
			}
			cel.send(batch)
			red.send(batch)
			for _, c := range cmds {
				if got, want := cel.read(), red.read(); got != want {
					t.Fatalf("%q:\n cellar: %q\n redis:  %q", c, got, want)
				}
			}
		}
		same([]string{"HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4"})
		same([]string{"HDEL", "h", "a"})
		same([]string{"HSET", "h", "a", "5"}, []string{"HGETALL", "h"})
		same([]string{"HSET", "h", "b", "6"}, []string{"HDEL", "h", "b"}, []string{"HSET", "h", "b", "7"},
			[]string{"HKEYS", "h"}, []string{"HVALS", "h"})
		same([]string{"HDEL", "h", "c", "d"}, []string{"HSET", "h", "d", "8", "c", "9"}, []string{"HGETALL", "h"})
	})
}
