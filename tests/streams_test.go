package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Streams over the wire: random sequences against a real redis-server,
// every error in both protocols, the catch-up-then-follow session of a
// change-feed consumer, and groups and PELs surviving a restart. The
// blocking cases are in streams_blocking_test.go.

// TestStreamsMatchRedis runs seeded random sequences of stream commands
// (explicit and "ms-*" IDs, so that IDs are deterministic; options, bounds
// and errors included) against Cellar and a real redis-server and requires
// identical reply bytes after every command.
func TestStreamsMatchRedis(t *testing.T) {
	t.Parallel()
	redisAddr := startRedis(t)
	s := startServer(t)
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			cel, red := dialRaw(t, s.addr), dialRaw(t, redisAddr)
			for _, c := range []*rawConn{cel, red} {
				if _, err := c.tryDo("FLUSHALL"); err != nil {
					t.Fatal(err)
				}
			}
			g := &streamGen{r: rand.New(rand.NewPCG(seed, 15))}
			for i := 0; i < steps(3000); i++ {
				args := g.next()
				got, err1 := cel.tryDo(args...)
				want, err2 := red.tryDo(args...)
				if err1 != nil || err2 != nil {
					t.Fatalf("command %d %q: cellar err %v, redis err %v", i, args, err1, err2)
				}
				if got != want {
					t.Fatalf("command %d %q:\n cellar: %q\n redis:  %q", i, args, got, want)
				}
			}
		})
	}
}

// streamGen makes random stream commands over a few keys. IDs come from a
// small range of milliseconds so that explicit IDs often collide with the
// top (an error) and ranges and trims cut through the stream. Replies that
// hold times (idle, delivery times) are avoided: XPENDING's extended form
// and XCLAIM/XAUTOCLAIM run only with JUSTID or in forms whose replies hold
// none.
type streamGen struct {
	r  *rand.Rand
	ms [3]int // per key, the millisecond IDs have reached
}

func (g *streamGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *streamGen) keyIdx() int { return g.r.IntN(3) }

func (g *streamGen) key() string {
	if g.r.IntN(15) == 0 {
		return g.pick("str", "nokey")
	}
	return fmt.Sprint("s", g.keyIdx())
}

// id is an ID near what the streams hold, now and then malformed.
func (g *streamGen) id() string {
	if g.r.IntN(25) == 0 {
		return g.pick("x", "1-x", "-1", "", "1-", "(1")
	}
	ms := g.r.IntN(g.ms[0] + g.ms[1] + g.ms[2] + 3)
	if g.r.IntN(3) == 0 {
		return fmt.Sprint(ms)
	}
	return fmt.Sprintf("%d-%d", ms, g.r.IntN(3))
}

func (g *streamGen) bound(lower bool) string {
	switch g.r.IntN(6) {
	case 0:
		if lower {
			return "-"
		}
		return "+"
	case 1:
		return "(" + g.id()
	}
	return g.id()
}

func (g *streamGen) group() string {
	if g.r.IntN(12) == 0 {
		return "nogroup"
	}
	return g.pick("g1", "g2")
}

func (g *streamGen) consumer() string { return g.pick("alice", "bob", "carol") }

func (g *streamGen) count() []string {
	if g.r.IntN(2) == 0 {
		return nil
	}
	return []string{"COUNT", g.pick("0", "1", "2", "3", "10", "-1")}
}

func (g *streamGen) fields() []string {
	n := 1 + g.r.IntN(2)
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, g.pick("f", "g", "h"), g.pick("1", "2", "v", ""))
	}
	return out
}

func (g *streamGen) next() []string {
	r := g.r
	k := g.keyIdx()
	key := fmt.Sprint("s", k)
	if r.IntN(15) == 0 {
		key = g.pick("str", "nokey")
	}
	switch n := r.IntN(100); {
	case n < 25:
		// XADD with an ID at or past the top: usually new milliseconds.
		args := []string{"XADD", key}
		if r.IntN(8) == 0 {
			args = append(args, "MAXLEN", g.pick("=", "3"), g.pick("2", "5"))
			if args[len(args)-2] == "3" {
				args = args[:len(args)-1]
			}
		} else if r.IntN(10) == 0 {
			args = append(args, "MINID", g.id())
		}
		if r.IntN(20) == 0 {
			args = append(args, "NOMKSTREAM")
		}
		if r.IntN(6) == 0 {
			args = append(args, g.id())
		} else {
			if r.IntN(2) == 0 {
				g.ms[k]++
			}
			args = append(args, fmt.Sprintf("%d-*", g.ms[k]))
		}
		return append(args, g.fields()...)
	case n < 30:
		return []string{"XLEN", key}
	case n < 38:
		return append([]string{"XRANGE", key, g.bound(true), g.bound(false)}, g.count()...)
	case n < 42:
		return append([]string{"XREVRANGE", key, g.bound(false), g.bound(true)}, g.count()...)
	case n < 46:
		return []string{"XDEL", key, g.id(), g.id()}
	case n < 49:
		if r.IntN(2) == 0 {
			return []string{"XTRIM", key, "MAXLEN", g.pick("0", "1", "3", "-1")}
		}
		// Exact trimming only: "~" removes whole nodes, and where Redis's
		// node boundaries fall depends on deleted entries Cellar does not
		// keep (docs/commands.md, "Deviations from Redis").
		if r.IntN(2) == 0 {
			return []string{"XTRIM", key, "MINID", "=", g.id()}
		}
		return []string{"XTRIM", key, "MINID", g.id()}
	case n < 55:
		args := append([]string{"XREAD"}, g.count()...)
		return append(args, "STREAMS", key, g.key(), g.pick(g.id(), "$", "0"), g.pick(g.id(), "$", "0"))
	case n < 59:
		args := []string{"XGROUP", "CREATE", key, g.group(), g.pick("$", "0", g.id())}
		if r.IntN(3) == 0 {
			args = append(args, "MKSTREAM")
		}
		if r.IntN(4) == 0 {
			args = append(args, "ENTRIESREAD", g.pick("0", "1", "-1", "3"))
		}
		return args
	case n < 61:
		return []string{"XGROUP", "SETID", key, g.group(), g.pick("$", "0", g.id())}
	case n < 62:
		return []string{"XGROUP", g.pick("DESTROY"), key, g.group()}
	case n < 64:
		return []string{"XGROUP", g.pick("CREATECONSUMER", "DELCONSUMER"), key, g.group(), g.consumer()}
	case n < 74:
		args := []string{"XREADGROUP", "GROUP", g.group(), g.consumer()}
		args = append(args, g.count()...)
		if r.IntN(6) == 0 {
			args = append(args, "NOACK")
		}
		id := ">"
		if r.IntN(4) == 0 {
			id = g.pick("0", g.id())
		}
		return append(args, "STREAMS", key, id)
	case n < 80:
		return []string{"XACK", key, g.group(), g.id(), g.id()}
	case n < 84:
		return []string{"XPENDING", key, g.group()}
	case n < 87:
		args := []string{"XCLAIM", key, g.group(), g.consumer(), "0", g.id()}
		if r.IntN(3) == 0 {
			args = append(args, "FORCE")
		}
		if r.IntN(3) == 0 {
			args = append(args, "RETRYCOUNT", g.pick("0", "5"))
		}
		return append(args, "JUSTID")
	case n < 90:
		return []string{"XAUTOCLAIM", key, g.group(), g.consumer(), "0", g.bound(true), "COUNT", g.pick("1", "2", "5"), "JUSTID"}
	case n < 94:
		return []string{"XINFO", "GROUPS", key}
	case n < 96:
		return []string{"XSETID", key, g.id()}
	case n < 97:
		return []string{"DEL", key}
	case n < 98:
		return []string{"SET", "str", "v"}
	default:
		return []string{"TYPE", key}
	}
}

// streamErrors are commands that fail, with Redis's exact error text.
var streamErrors = []struct{ cmd, want string }{
	{"XADD s 0-0 f v", "ERR The ID specified in XADD must be greater than 0-0"},
	{"XADD s 1-0 f v", ""}, // setup
	{"XADD s 1-0 f v", "ERR The ID specified in XADD is equal or smaller than the target stream top item"},
	{"XADD s x f v", "ERR Invalid stream ID specified as stream command argument"},
	{"XADD s 1-0 f", "ERR wrong number of arguments for 'xadd' command"},
	{"XADD s MAXLEN -1 * f v", "ERR The MAXLEN argument must be >= 0."},
	{"XADD s MAXLEN x * f v", "ERR value is not an integer or out of range"},
	{"XADD s LIMIT 1 * f v", "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"},
	{"XADD s MAXLEN 1 LIMIT 1 * f v", "ERR syntax error, LIMIT cannot be used without the special ~ option"},
	{"XADD s MAXLEN ~ 1 LIMIT -1 * f v", "ERR The LIMIT argument must be >= 0."},
	{"XADD s MAXLEN 1 MINID 1 * f v", "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"},
	{"XADD t 18446744073709551615-18446744073709551615 f v", ""},
	{"XADD t * f v", "ERR The stream has exhausted the last possible ID, unable to add more items"},
	{"XADD u 5-18446744073709551615 f v", ""},
	{"XADD u 5-* f v", "ERR Elements are too large to be stored"},
	{"XTRIM s MAXLEN 1 FOO", "ERR syntax error"},
	{"XRANGE s (18446744073709551615-18446744073709551615 +", "ERR invalid start ID for the interval"},
	{"XRANGE s - (0-0", "ERR invalid end ID for the interval"},
	{"XRANGE s - + COUNT", "ERR syntax error"},
	{"XREAD COUNT 1 STREAMS s", "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."},
	{"XREADGROUP GROUP g c STREAMS s t >", "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."},
	{"XREAD COUNT 1 FOO", "ERR syntax error"},
	{"XREAD BLOCK x STREAMS s 0", "ERR timeout is not an integer or out of range"},
	{"XREAD BLOCK -1 STREAMS s 0", "ERR timeout is negative"},
	{"XREAD GROUP g c STREAMS s 0", "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."},
	{"XREAD NOACK STREAMS s 0", "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."},
	{"XREAD STREAMS s >", "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."},
	{"XREADGROUP COUNT 1 NOACK STREAMS s >", "ERR Missing GROUP option for XREADGROUP"},
	{"XREADGROUP GROUP g c STREAMS s >", "NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option"},
	{"XGROUP CREATE s g $", ""},
	{"XGROUP CREATE s g $", "BUSYGROUP Consumer Group name already exists"},
	{"XGROUP CREATE nokey g $", "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."},
	{"XGROUP CREATE s g2 $ ENTRIESREAD -2", "ERR value for ENTRIESREAD must be positive or -1"},
	{"XGROUP CREATE s g2 $ FOO", "ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP."},
	{"XGROUP SETID s nogroup $", "NOGROUP No such consumer group 'nogroup' for key name 's'"},
	{"XGROUP SETID s g 0 FOO 1", "ERR unknown subcommand or wrong number of arguments for 'SETID'. Try XGROUP HELP."},
	{"XGROUP FOO s g", "ERR unknown subcommand 'FOO'. Try XGROUP HELP."},
	{"XREADGROUP GROUP g c STREAMS s $", "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."},
	{"XACK s g x", "ERR Invalid stream ID specified as stream command argument"},
	{"XPENDING s g - +", "ERR syntax error"},
	{"XPENDING s nogroup", "NOGROUP No such key 's' or consumer group 'nogroup'"},
	{"XCLAIM s g c x 1-0", "ERR Invalid min-idle-time argument for XCLAIM"},
	{"XCLAIM s g c 0 1-0 IDLE x", "ERR Invalid IDLE option argument for XCLAIM"},
	{"XCLAIM s g c 0 1-0 TIME x", "ERR Invalid TIME option argument for XCLAIM"},
	{"XCLAIM s g c 0 1-0 RETRYCOUNT x", "ERR Invalid RETRYCOUNT option argument for XCLAIM"},
	{"XCLAIM s g c 0 1-0 FOO", "ERR Unrecognized XCLAIM option 'FOO'"},
	{"XAUTOCLAIM s g c x 0", "ERR Invalid min-idle-time argument for XAUTOCLAIM"},
	{"XAUTOCLAIM s g c 0 0 COUNT 0", "ERR COUNT must be > 0"},
	{"XINFO STREAM nokey", "ERR no such key"},
	{"XINFO STREAM s FOO", "ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP."},
	{"XINFO CONSUMERS s nogroup", "NOGROUP No such consumer group 'nogroup' for key name 's'"},
	{"XSETID s 0-5", "ERR The ID specified in XSETID is smaller than the target stream top item"},
	{"XSETID s 9-0 ENTRIESADDED -1", "ERR entries_added must be positive"},
	{"XSETID s 9-0 ENTRIESADDED 0", "ERR The entries_added specified in XSETID is smaller than the target stream length"},
	{"XSETID s 9-0 MAXDELETEDID 10-0", "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"},
	{"XSETID nokey 9-0", "ERR no such key"},
	{"SET str v", ""},
	{"XADD str * f v", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"XRANGE str - +", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"XREADGROUP GROUP g c STREAMS str >", "WRONGTYPE Operation against a key holding the wrong kind of value"},
}

// TestStreamErrorsExactBytes sends every error case to Cellar and to a
// real redis-server, in RESP2 and then in RESP3, and requires Redis's text
// byte for byte from both.
func TestStreamErrorsExactBytes(t *testing.T) {
	t.Parallel()
	redisAddr := startRedis(t)
	s := startServer(t)
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			cel, red := dialRaw(t, s.addr), dialRaw(t, redisAddr)
			for _, c := range []*rawConn{cel, red} {
				c.do("FLUSHALL")
				c.do("HELLO", proto)
			}
			for _, e := range streamErrors {
				args := strings.Fields(e.cmd)
				got, want := cel.do(args...), red.do(args...)
				if got != want {
					t.Fatalf("%s:\n cellar: %q\n redis:  %q", e.cmd, got, want)
				}
				if e.want != "" && got != errr(e.want) {
					t.Fatalf("%s = %q, want %q", e.cmd, got, errr(e.want))
				}
			}
		})
	}
}

// TestStreamRepliesRESP3 compares the replies whose shape changes with the
// protocol (XREAD's and XREADGROUP's maps, XINFO's maps, nulls) with Redis's
// after HELLO 3.
func TestStreamRepliesRESP3(t *testing.T) {
	t.Parallel()
	redisAddr := startRedis(t)
	s := startServer(t)
	cel, red := dialRaw(t, s.addr), dialRaw(t, redisAddr)
	for _, c := range []*rawConn{cel, red} {
		c.do("HELLO", "3")
	}
	for _, cmd := range []string{
		"XADD a 1-0 f 1", "XADD a 2-0 f 2 g 3", "XADD b 1-1 h 4",
		"XREAD STREAMS a b 0 0", "XREAD COUNT 1 STREAMS a b 1-0 0", "XREAD STREAMS a 9", "XRANGE a - + COUNT 0",
		"XGROUP CREATE a g 0", "XREADGROUP GROUP g c COUNT 1 STREAMS a >", "XREADGROUP GROUP g c STREAMS a >",
		"XREADGROUP GROUP g c STREAMS a >", "XREADGROUP GROUP g c STREAMS a 0", "XDEL a 1-0",
		"XREADGROUP GROUP g c STREAMS a 0", "XPENDING a g", "XACK a g 1-0 2-0", "XPENDING a g",
		"XINFO STREAM a", "XINFO GROUPS a", "XINFO STREAM b", "XADD n NOMKSTREAM * f v", "XAUTOCLAIM a g c 0 0 JUSTID",
		"XINFO HELP", "XGROUP HELP",
		"XCLAIM a g c2 0 2-0 JUSTID", "XCLAIM a g c2 0 2-0 FORCE", "XRANGE a - +", "XREVRANGE a + - COUNT 1", "XLEN a",
		"XGROUP CREATECONSUMER a g c3", "XGROUP DELCONSUMER a g c2", "XTRIM a MAXLEN 0", "XSETID a 9-0", "XINFO STREAM a",
		"XREAD STREAMS a 0", "XREADGROUP GROUP g c STREAMS a >",
	} {
		args := strings.Fields(cmd)
		if got, want := cel.do(args...), red.do(args...); got != want {
			t.Fatalf("%s:\n cellar: %q\n redis:  %q", cmd, got, want)
		}
	}
}

// TestStreamCatchUpThenFollow is the change-feed consumer's session (seed
// 004): read the history in pages of XRANGE from "-" until a page comes
// back short, then follow with XREAD BLOCK from the last ID seen, while
// producers append all along. Every entry is seen exactly once, in order,
// with nothing missed at the switch.
func TestStreamCatchUpThenFollow(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	admin := s.client()
	const producers, perProducer, history, page = 4, 300, 500, 50
	for i := 0; i < history; i++ {
		if err := admin.XAdd(ctx, &redis.XAddArgs{Stream: "feed", Values: []string{"p", "h", "n", strconv.Itoa(i)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	total := history + producers*perProducer
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	start := make(chan struct{})
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			c := s.client()
			<-start
			for j := 0; j < perProducer; j++ {
				if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "feed", Values: []string{"p", strconv.Itoa(p), "n", strconv.Itoa(j)}}).Err(); err != nil {
					errs <- err
					return
				}
			}
		}(p)
	}
	c := s.client(func(o *redis.Options) { o.ReadTimeout = 20 * time.Second })
	var seen []redis.XMessage
	close(start) // producers run during the catch-up, not only after it
	// Catch up: pages of XRANGE after the last ID seen until one is short.
	last := "-"
	pages := 0
	for {
		msgs, err := c.XRangeN(ctx, "feed", last, "+", page).Result()
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, msgs...)
		pages++
		if len(msgs) > 0 {
			last = "(" + msgs[len(msgs)-1].ID
		}
		if len(msgs) < page {
			break
		}
	}
	t.Logf("caught up after %d pages, %d entries; following", pages, len(seen))
	// Follow: XREAD BLOCK from the last ID seen (never "$": entries added
	// between the last page and the first XREAD would be missed).
	lastID := "0-0"
	if len(seen) > 0 {
		lastID = seen[len(seen)-1].ID
	}
	for len(seen) < total {
		res, err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{"feed", lastID}, Count: 100, Block: 10 * time.Second}).Result()
		if err != nil {
			t.Fatalf("XREAD BLOCK after %d of %d entries: %v", len(seen), total, err)
		}
		for _, st := range res {
			seen = append(seen, st.Messages...)
			if n := len(st.Messages); n > 0 {
				lastID = st.Messages[n-1].ID
			}
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != total {
		t.Fatalf("saw %d entries, want %d", len(seen), total)
	}
	// In order, each once, each producer's entries in its own order.
	next := map[string]int{}
	for i, m := range seen {
		if i > 0 && !idLess(seen[i-1].ID, m.ID) {
			t.Fatalf("entry %d: %s after %s", i, m.ID, seen[i-1].ID)
		}
		p, n := m.Values["p"].(string), m.Values["n"].(string)
		if strconv.Itoa(next[p]) != n {
			t.Fatalf("entry %d (%s): producer %s's entry %s, want %d", i, m.ID, p, n, next[p])
		}
		next[p]++
	}
	if got, err := admin.XLen(ctx, "feed").Result(); err != nil || got != int64(total) {
		t.Fatalf("XLEN = %d, %v; want %d", got, err, total)
	}
}

// idLess compares two stream IDs.
func idLess(a, b string) bool {
	parse := func(s string) (uint64, uint64) {
		ms, seq, _ := strings.Cut(s, "-")
		x, _ := strconv.ParseUint(ms, 10, 64)
		y, _ := strconv.ParseUint(seq, 10, 64)
		return x, y
	}
	am, as := parse(a)
	bm, bs := parse(b)
	return am < bm || am == bm && as < bs
}

// TestStreamRestartKeepsGroups: entries, metadata, groups, consumers and
// pending entries survive a restart (Redis persists them too), and the
// group goes on from where it was.
func TestStreamRestartKeepsGroups(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	r := s.raw()
	for _, c := range []check{
		{"XADD s 1-0 f 1", bulk("1-0")}, {"XADD s 2-0 f 2", bulk("2-0")}, {"XADD s 3-0 f 3", bulk("3-0")},
		{"XDEL s 2-0", integer(1)},
		{"XGROUP CREATE s g 0", status("OK")},
		{"XREADGROUP GROUP g alice COUNT 1 STREAMS s >", array(array(bulk("s"), array(array(bulk("1-0"), array(bulk("f"), bulk("1"))))))},
		{"XGROUP CREATECONSUMER s g bob", integer(1)},
	} {
		r.expect(c.want, strings.Fields(c.cmd)...)
	}
	before := []string{r.do("XINFO", "GROUPS", "s"), r.do("XPENDING", "s", "g"), r.do("XRANGE", "s", "-", "+")}
	s.restart()
	r = s.raw()
	after := []string{r.do("XINFO", "GROUPS", "s"), r.do("XPENDING", "s", "g"), r.do("XRANGE", "s", "-", "+")}
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("after the restart:\n%q\nwas\n%q", after[i], before[i])
		}
	}
	// The group goes on after 1-0; the deleted entry stays deleted.
	r.expect(array(array(bulk("s"), array(array(bulk("3-0"), array(bulk("f"), bulk("3")))))), "XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
	r.expect(array(integer(2), bulk("1-0"), bulk("3-0"), array(array(bulk("alice"), bulk("1")), array(bulk("bob"), bulk("1")))), "XPENDING", "s", "g")
	r.expect(bulk("4-0"), "XADD", "s", "4-*", "f", "4")
	if n, err := s.client().XInfoStream(context.Background(), "s").Result(); err != nil || n.EntriesAdded != 4 || n.MaxDeletedEntryID != "2-0" {
		t.Fatalf("XINFO STREAM after restart: %+v %v", n, err)
	}
}
