package tests

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar"
)

// Hashes, sets and sorted sets over the wire. The compatibility files
// (testdata/compat/{hashes,sets,zsets}.txt) pin reply bytes against a real
// redis-server for small collections; these tests cover what those cannot:
// collections past Redis's compact encodings, SCAN guarantees, sampling,
// binary and 1 MB elements, persistence, and the key lifecycle.

func TestHashesWithGoRedis(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client()
	if n, err := c.HSet(ctx, "user:1", "name", "ada", "lang", "go", "age", "36").Result(); err != nil || n != 3 {
		t.Fatalf("HSET = %d, %v", n, err)
	}
	all, err := c.HGetAll(ctx, "user:1").Result()
	if err != nil || len(all) != 3 || all["name"] != "ada" || all["age"] != "36" {
		t.Fatalf("HGETALL = %v, %v", all, err)
	}
	if v, err := c.HIncrBy(ctx, "user:1", "age", 1).Result(); err != nil || v != 37 {
		t.Fatalf("HINCRBY = %d, %v", v, err)
	}
	if v, err := c.HIncrByFloat(ctx, "user:1", "score", 10.5).Result(); err != nil || v != 10.5 {
		t.Fatalf("HINCRBYFLOAT = %v, %v", v, err)
	}
	if v, err := c.HIncrByFloat(ctx, "user:1", "score", 0.1).Result(); err != nil || v != 10.6 {
		t.Fatalf("HINCRBYFLOAT = %v, %v (long double arithmetic gives exactly 10.6)", v, err)
	}
	vals, err := c.HMGet(ctx, "user:1", "name", "nope").Result()
	if err != nil || vals[0] != "ada" || vals[1] != nil {
		t.Fatalf("HMGET = %v, %v", vals, err)
	}
	if typ := c.Type(ctx, "user:1").Val(); typ != "hash" {
		t.Fatalf("TYPE = %q", typ)
	}
	fields, err := c.HRandFieldWithValues(ctx, "user:1", -10).Result()
	if err != nil || len(fields) != 10 {
		t.Fatalf("HRANDFIELD -10 WITHVALUES = %v, %v", fields, err)
	}
	for _, kv := range fields {
		if all[kv.Key] == "" && kv.Key != "score" {
			t.Fatalf("HRANDFIELD returned unknown field %q", kv.Key)
		}
	}
	if n := c.HDel(ctx, "user:1", "name", "lang", "age", "score").Val(); n != 4 {
		t.Fatalf("HDEL = %d", n)
	}
	if n := c.Exists(ctx, "user:1").Val(); n != 0 {
		t.Fatal("emptied hash still exists")
	}
	if n := c.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("DBSIZE = %d after the hash emptied", n)
	}
}

// TestBinarySafeElements stores NUL bytes and 1 MB values as fields,
// values and members, and reads them back byte for byte.
func TestBinarySafeElements(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	big := strings.Repeat("\x00\r\nabc", (1<<20)/6+1)[:1<<20]
	field := "f\x00\xff"
	r.expect(integer(1), "HSET", "h\x00", field, big)
	r.expect(bulk(big), "HGET", "h\x00", field)
	r.expect(integer(1<<20), "HSTRLEN", "h\x00", field)
	r.expect(integer(1), "HSET", "h\x00", big, "v")
	r.expect(bulk("v"), "HGET", "h\x00", big)
	r.expect(integer(2), "SADD", "s", big, "m\x00")
	r.expect(integer(1), "SISMEMBER", "s", big)
	r.expect(integer(0), "SISMEMBER", "s", "m")
	r.expect(integer(1), "ZADD", "z", "1.5", big)
	r.expect(bulk("1.5"), "ZSCORE", "z", big)
	r.expect(array(bulk(big), bulk("1.5")), "ZRANGE", "z", "0", "-1", "WITHSCORES")
	r.expect(array(bulk(big)), "ZRANGEBYLEX", "z", "-", "+")
	r.expect(integer(1), "ZREM", "z", big)
	r.expect(integer(0), "EXISTS", "z")
}

// TestRESP3Doubles pins Redis 7.0's double formatting (%.17g) in both
// protocols, where scores are bulk strings in RESP2 and doubles in RESP3.
func TestRESP3Doubles(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.expect(integer(4), "ZADD", "z", "0.1", "a", "inf", "b", "-inf", "c", "1e20", "d")
	r.expect(bulk("0.10000000000000001"), "ZSCORE", "z", "a")
	r.expect(bulk("inf"), "ZSCORE", "z", "b")
	r.do("HELLO", "3")
	r.expect(",0.10000000000000001\r\n", "ZSCORE", "z", "a")
	r.expect(",inf\r\n", "ZSCORE", "z", "b")
	r.expect(",-inf\r\n", "ZSCORE", "z", "c")
	r.expect(",1e+20\r\n", "ZSCORE", "z", "d")
	r.expect("*2\r\n*2\r\n$1\r\nc\r\n,-inf\r\n*2\r\n$1\r\na\r\n,0.10000000000000001\r\n", "ZRANGE", "z", "0", "1", "WITHSCORES")
	r.expect("*2\r\n$1\r\nc\r\n,-inf\r\n", "ZPOPMIN", "z")
	r.expect("*1\r\n*2\r\n$1\r\na\r\n,0.10000000000000001\r\n", "ZPOPMIN", "z", "1")
	r.expect(",0.10000000000000001\r\n", "ZINCRBY", "y", "0.1", "m")
	r.expect(",0.30000000000000004\r\n", "ZINCRBY", "y", "0.2", "m")
	r.expect("_\r\n", "ZSCORE", "z", "nope")
	r.expect("-ERR resulting score is not a number (NaN)\r\n", "ZINCRBY", "z", "-inf", "b")
	r.expect("$4\r\n10.6\r\n", "HINCRBYFLOAT", "h", "f", "10.6")
}

// TestErrorsExactBytes pins the error replies of the three families.
func TestErrorsExactBytes(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	r.expect(status("OK"), "SET", "str", "v")
	wrong := errr("WRONGTYPE Operation against a key holding the wrong kind of value")
	for _, cmd := range [][]string{
		{"HSET", "str", "f", "v"}, {"HGET", "str", "f"}, {"SADD", "str", "m"}, {"SMEMBERS", "str"},
		{"ZADD", "str", "1", "m"}, {"ZRANGE", "str", "0", "-1"}, {"ZPOPMIN", "str"}, {"SINTER", "str"},
		{"ZUNION", "1", "str"}, {"HSCAN", "str", "0"}, {"SSCAN", "str", "0"}, {"ZSCAN", "str", "0"},
	} {
		r.expect(wrong, cmd...)
	}
	r.expect(errr("ERR wrong number of arguments for 'hset' command"), "HSET", "h", "f")
	r.expect(integer(1), "HSET", "h", "f", "x")
	r.expect(errr("ERR hash value is not an integer"), "HINCRBY", "h", "f", "1")
	r.expect(errr("ERR hash value is not a float"), "HINCRBYFLOAT", "h", "f", "1")
	r.expect(errr("ERR value is NaN or Infinity"), "HINCRBYFLOAT", "h", "f", "inf")
	r.expect(errr("ERR value is not a valid float"), "ZADD", "z", "nan", "m")
	r.expect(errr("ERR min or max is not a float"), "ZRANGEBYSCORE", "z", "(x", "1")
	r.expect(errr("ERR min or max not valid string range item"), "ZRANGEBYLEX", "z", "a", "+")
	r.expect(errr("ERR weight value is not a float"), "ZUNION", "1", "z", "WEIGHTS", "x")
	r.expect(errr("ERR at least 1 input key is needed for 'zunionstore' command"), "ZUNIONSTORE", "d", "0", "z")
	r.expect(errr("ERR numkeys should be greater than 0"), "SINTERCARD", "0", "s")
	r.expect(errr("ERR LIMIT can't be negative"), "SINTERCARD", "1", "s", "LIMIT", "-1")
	r.expect(errr("ERR count should be greater than 0"), "ZMPOP", "1", "z", "MIN", "COUNT", "0")
	r.expect(errr("ERR value is out of range, must be positive"), "SPOP", "s", "-1")
	r.expect(errr("ERR GT, LT, and/or NX options at the same time are not compatible"), "ZADD", "z", "GT", "LT", "1", "m")
	r.expect(errr("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"), "ZRANGE", "z", "0", "1", "LIMIT", "0", "1")
	r.expect(errr("ERR syntax error, WITHSCORES not supported in combination with BYLEX"), "ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES")
}

// scanAll runs a SCAN-family command to the end and returns how often each
// element came back; between calls it runs between().
func scanAll(t *testing.T, c *redis.Client, cmd, key string, count int64, between func()) (map[string]int, int) {
	t.Helper()
	seen := map[string]int{}
	cursor, calls := uint64(0), 0
	for {
		var keys []string
		var err error
		switch cmd {
		case "HSCAN":
			keys, cursor, err = c.HScan(ctx, key, cursor, "", count).Result()
		case "SSCAN":
			keys, cursor, err = c.SScan(ctx, key, cursor, "", count).Result()
		case "ZSCAN":
			keys, cursor, err = c.ZScan(ctx, key, cursor, "", count).Result()
		}
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		calls++
		step := 1
		if cmd != "SSCAN" {
			step = 2 // field/value or member/score pairs
		}
		for i := 0; i < len(keys); i += step {
			seen[keys[i]]++
		}
		if cursor == 0 {
			return seen, calls
		}
		if between != nil {
			between()
		}
	}
}

// TestScanGuarantees checks Redis's SCAN promise on collections past the
// compact encodings: an element present for the whole iteration is
// returned (here: exactly once), even while other elements come and go.
func TestScanGuarantees(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client()
	const n = 3000
	var fields []any
	var members []any
	var zs []redis.Z
	for i := 0; i < n; i++ {
		m := fmt.Sprintf("m%05d", i)
		fields = append(fields, m, i)
		members = append(members, m)
		zs = append(zs, redis.Z{Score: float64(i), Member: m})
	}
	c.HSet(ctx, "h", fields...)
	c.SAdd(ctx, "s", members...)
	c.ZAdd(ctx, "z", zs...)
	for _, tc := range []struct{ cmd, key string }{{"HSCAN", "h"}, {"SSCAN", "s"}, {"ZSCAN", "z"}} {
		churn := 0
		seen, calls := scanAll(t, c, tc.cmd, tc.key, 50, func() {
			// Add and remove other elements between calls.
			churn++
			x := fmt.Sprintf("x%d", churn)
			switch tc.key {
			case "h":
				c.HSet(ctx, "h", x, 1)
				c.HDel(ctx, "h", fmt.Sprintf("x%d", churn-1))
			case "s":
				c.SAdd(ctx, "s", x)
				c.SRem(ctx, "s", fmt.Sprintf("x%d", churn-1))
			case "z":
				c.ZAdd(ctx, "z", redis.Z{Score: -1, Member: x})
				c.ZRem(ctx, "z", fmt.Sprintf("x%d", churn-1))
			}
		})
		for i := 0; i < n; i++ {
			m := fmt.Sprintf("m%05d", i)
			if seen[m] != 1 {
				t.Fatalf("%s: %s returned %d times", tc.cmd, m, seen[m])
			}
		}
		if calls < n/100 {
			t.Fatalf("%s: COUNT 50 over %d elements took only %d calls", tc.cmd, n, calls)
		}
	}
	// MATCH filters what a call returns; the iteration still ends.
	keys, cursor, err := c.SScan(ctx, "s", 0, "m0000*", 10000).Result()
	if err != nil || cursor != 0 || len(keys) != 10 {
		t.Fatalf("SSCAN MATCH = %d keys, cursor %d, %v", len(keys), cursor, err)
	}
	// Past the compact encodings, ZSCAN spells scores as Redis's d2string.
	c.ZAdd(ctx, "z", redis.Z{Score: 1e17, Member: "big"})
	zk, _, err := c.ZScan(ctx, "z", 0, "big", 100000).Result()
	if err != nil || len(zk) != 2 || zk[1] != "1e+17" {
		t.Fatalf("ZSCAN big = %q, %v", zk, err)
	}
	for key, want := range map[string]string{"h": "hashtable", "s": "hashtable", "z": "skiplist"} {
		if enc := c.ObjectEncoding(ctx, key).Val(); enc != want {
			t.Fatalf("OBJECT ENCODING %s = %q, want %q", key, enc, want)
		}
	}
}

// TestRandomOnLargeSets covers sampling past the in-memory threshold:
// distinct samples are distinct, negative counts repeat, SPOP removes
// what it returns.
func TestRandomOnLargeSets(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client()
	const n = 5000
	var members []any
	var zs []redis.Z
	for i := 0; i < n; i++ {
		members = append(members, i)
		zs = append(zs, redis.Z{Score: float64(i), Member: strconv.Itoa(i)})
	}
	c.SAdd(ctx, "s", members...)
	c.ZAdd(ctx, "z", zs...)
	for _, k := range []int64{1, 10, 4999, 5000, 100000} {
		got := c.SRandMemberN(ctx, "s", k).Val()
		if want := min(k, n); int64(len(got)) != want || int64(len(distinct(got))) != want {
			t.Fatalf("SRANDMEMBER %d: %d members, %d distinct", k, len(got), len(distinct(got)))
		}
	}
	if got := c.SRandMemberN(ctx, "s", -20000).Val(); len(got) != 20000 {
		t.Fatalf("SRANDMEMBER -20000 gave %d", len(got))
	}
	got := c.ZRandMemberWithScores(ctx, "z", 300).Val()
	if len(got) != 300 {
		t.Fatalf("ZRANDMEMBER 300 WITHSCORES gave %d", len(got))
	}
	for _, z := range got {
		if strconv.Itoa(int(z.Score)) != z.Member.(string) {
			t.Fatalf("ZRANDMEMBER paired %v with %v", z.Member, z.Score)
		}
	}
	popped := c.SPopN(ctx, "s", 1000).Val()
	if len(distinct(popped)) != 1000 || c.SCard(ctx, "s").Val() != n-1000 {
		t.Fatalf("SPOP 1000: %d distinct, %d left", len(distinct(popped)), c.SCard(ctx, "s").Val())
	}
	for _, m := range popped[:50] {
		if c.SIsMember(ctx, "s", m).Val() {
			t.Fatalf("popped %s is still a member", m)
		}
	}
	r := s.raw()
	r.expect(errr("ERR count is out of range: Cellar returns at most 16777216 elements with repeats"), "SRANDMEMBER", "s", "-100000000")
	// Past the in-memory threshold, picks with repeats come from the whole
	// set over several calls.
	seen := map[string]bool{}
	for i := 0; i < 20 && len(seen) < 1000; i++ {
		for _, m := range c.SRandMemberN(ctx, "s", -500).Val() {
			seen[m] = true
		}
	}
	if len(seen) < 1000 {
		t.Fatalf("20 × SRANDMEMBER -500 saw only %d different members", len(seen))
	}
}

// TestRandomRepliesAreBounded: picks with repeats stream into the reply,
// which may not outgrow proto-max-bulk-len; the error replaces it whole.
func TestRandomRepliesAreBounded(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.ProtoMaxBulkLen = 1 << 20 })
	needCellar(t, s)
	r := s.raw()
	big := strings.Repeat("x", 1000)
	r.expect(integer(1), "SADD", "s", big)
	r.expect(integer(1), "HSET", "h", "f", big)
	got := r.do("SRANDMEMBER", "s", "-500")
	if !strings.HasPrefix(got, "*500\r\n") || len(got) < 500*1000 {
		t.Fatalf("SRANDMEMBER -500: %d bytes, %q...", len(got), got[:min(len(got), 20)])
	}
	tooBig := errr("ERR reply would exceed proto-max-bulk-len: ask for fewer random elements")
	r.expect(tooBig, "SRANDMEMBER", "s", "-2000")
	r.expect(tooBig, "HRANDFIELD", "h", "-2000", "WITHVALUES")
	r.expect(integer(1), "SCARD", "s")
}

func distinct(xs []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// TestLargeSortedSetRanges checks rank ranges, ranks and score ranges on a
// sorted set past the compact encoding, including ranges served from the
// far end of the index.
func TestLargeSortedSetRanges(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client()
	const n = 2000
	var zs []redis.Z
	for i := 0; i < n; i++ {
		zs = append(zs, redis.Z{Score: float64(i / 2), Member: fmt.Sprintf("m%05d", i)})
	}
	c.ZAdd(ctx, "z", zs...)
	want := func(from, to int) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf("m%05d", i))
		}
		return out
	}
	reverse := func(xs []string) []string {
		out := append([]string(nil), xs...)
		sort.Sort(sort.Reverse(sort.StringSlice(out)))
		return out
	}
	check := func(what string, got, want []string) {
		t.Helper()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: got %d elements %v..., want %v...", what, len(got), head(got), head(want))
		}
	}
	check("ZRANGE 10 20", c.ZRange(ctx, "z", 10, 20).Val(), want(10, 20))
	check("ZRANGE 1900 1910", c.ZRange(ctx, "z", 1900, 1910).Val(), want(1900, 1910))
	check("ZRANGE -5 -1", c.ZRange(ctx, "z", -5, -1).Val(), want(1995, 1999))
	check("ZREVRANGE 0 4", c.ZRevRange(ctx, "z", 0, 4).Val(), reverse(want(1995, 1999)))
	check("ZREVRANGE 1990 1999", c.ZRevRange(ctx, "z", 1990, 1999).Val(), reverse(want(0, 9)))
	check("ZRANGEBYSCORE 100 (102", c.ZRangeByScore(ctx, "z", &redis.ZRangeBy{Min: "100", Max: "(102"}).Val(), want(200, 203))
	check("ZREVRANGEBYSCORE LIMIT", c.ZRevRangeByScore(ctx, "z", &redis.ZRangeBy{Min: "-inf", Max: "+inf", Offset: 1500, Count: 3}).Val(), reverse(want(497, 499)))
	for _, i := range []int{0, 1, 999, 1998, 1999} {
		m := fmt.Sprintf("m%05d", i)
		if r := c.ZRank(ctx, "z", m).Val(); r != int64(i) {
			t.Fatalf("ZRANK %s = %d", m, r)
		}
		if r := c.ZRevRank(ctx, "z", m).Val(); r != int64(n-1-i) {
			t.Fatalf("ZREVRANK %s = %d", m, r)
		}
	}
	if v := c.ZCount(ctx, "z", "(10", "20").Val(); v != 20 {
		t.Fatalf("ZCOUNT = %d", v)
	}
	if v := c.ZRemRangeByRank(ctx, "z", 1000, -1).Val(); v != 1000 {
		t.Fatalf("ZREMRANGEBYRANK = %d", v)
	}
	if v := c.ZCard(ctx, "z").Val(); v != 1000 {
		t.Fatalf("ZCARD = %d", v)
	}
	popped := c.ZPopMax(ctx, "z", 3).Val()
	if len(popped) != 3 || popped[0].Member != "m00999" || popped[2].Member != "m00997" {
		t.Fatalf("ZPOPMAX 3 = %v", popped)
	}
	// A large same-score set answers lexicographic ranges by index seek.
	var lex []redis.Z
	for i := 0; i < 1000; i++ {
		lex = append(lex, redis.Z{Member: fmt.Sprintf("w%04d", i)})
	}
	c.ZAdd(ctx, "lex", lex...)
	got := c.ZRangeByLex(ctx, "lex", &redis.ZRangeBy{Min: "[w0500", Max: "(w0503"}).Val()
	check("ZRANGEBYLEX", got, []string{"w0500", "w0501", "w0502"})
	if v := c.ZLexCount(ctx, "lex", "(w0100", "+").Val(); v != 899 {
		t.Fatalf("ZLEXCOUNT = %d", v)
	}
}

func head(xs []string) []string {
	if len(xs) > 5 {
		return xs[:5]
	}
	return xs
}

// TestCollectionsKeyLifecycle: RENAME, COPY, MOVE, expiry, FLUSHDB, a
// restart, and overwriting by another type all carry or drop the elements.
func TestCollectionsKeyLifecycle(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client()
	c.HSet(ctx, "h", "a", "1", "b", "2")
	c.SAdd(ctx, "s", "x", "y")
	c.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "p"}, redis.Z{Score: 2, Member: "q"})
	c.Rename(ctx, "h", "h2")
	if v := c.HGet(ctx, "h2", "b").Val(); v != "2" {
		t.Fatalf("renamed hash: %q", v)
	}
	c.Copy(ctx, "s", "s2", 0, false)
	c.SRem(ctx, "s", "x")
	if m := c.SMembers(ctx, "s2").Val(); len(m) != 2 {
		t.Fatalf("copy shares elements with its source: %v", m)
	}
	c.Move(ctx, "z", 3)
	c3 := s.client(func(o *redis.Options) { o.DB = 3 })
	if v := c3.ZScore(ctx, "z", "q").Val(); v != 2 {
		t.Fatalf("moved zset: %v", v)
	}
	s.restart()
	c = s.client()
	if v := c.HLen(ctx, "h2").Val(); v != 2 {
		t.Fatalf("HLEN after restart = %d", v)
	}
	if v := c.SCard(ctx, "s2").Val(); v != 2 {
		t.Fatalf("SCARD after restart = %d", v)
	}
	// Another type's write replaces the collection and its elements.
	c.Set(ctx, "h2", "now a string", 0)
	if v := c.HLen(ctx, "h2").Err(); v == nil || !strings.HasPrefix(v.Error(), "WRONGTYPE") {
		t.Fatalf("HLEN on the string: %v", v)
	}
	c.Del(ctx, "h2")
	c.HSet(ctx, "h2", "fresh", "1")
	if v := c.HLen(ctx, "h2").Val(); v != 1 {
		t.Fatalf("recreated hash inherited elements: HLEN %d", v)
	}
	// Expired collections are gone for every command.
	c.SAdd(ctx, "exp", "a")
	c.PExpire(ctx, "exp", time.Millisecond)
	waitFor(t, 5*time.Second, "the set to expire", func() bool { return c.Exists(ctx, "exp").Val() == 0 })
	if v := c.SCard(ctx, "exp").Val(); v != 0 {
		t.Fatalf("SCARD of an expired set = %d", v)
	}
	if n, _ := c.SAdd(ctx, "exp", "b").Result(); n != 1 || c.SCard(ctx, "exp").Val() != 1 {
		t.Fatal("a set recreated after expiry inherited its old members")
	}
	c.FlushDB(ctx)
	if n := c.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("DBSIZE after FLUSHDB = %d", n)
	}
	c.SAdd(ctx, "s2", "only")
	if m := c.SMembers(ctx, "s2").Val(); len(m) != 1 {
		t.Fatalf("FLUSHDB left elements behind: %v", m)
	}
}

// TestPipelinedCollectionWrites sends many writes in one batch (one round,
// one transaction) and checks every reply and the final state.
func TestPipelinedCollectionWrites(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.raw()
	var b bytes.Buffer
	const n = 2000
	for i := 0; i < n; i++ {
		b.Write(encode("ZADD", "z", strconv.Itoa(i), "m"+strconv.Itoa(i)))
		b.Write(encode("SADD", "s", strconv.Itoa(i%100)))
		b.Write(encode("HINCRBY", "h", "n", "1"))
	}
	r.send(b.Bytes())
	for i := 0; i < n; i++ {
		if got := r.read(); got != integer(1) {
			t.Fatalf("ZADD %d: %q", i, got)
		}
		want := integer(0)
		if i < 100 {
			want = integer(1)
		}
		if got := r.read(); got != want {
			t.Fatalf("SADD %d: %q", i, got)
		}
		if got := r.read(); got != integer(int64(i+1)) {
			t.Fatalf("HINCRBY %d: %q", i, got)
		}
	}
	r.expect(integer(n), "ZCARD", "z")
	r.expect(integer(100), "SCARD", "s")
	r.expect(array(bulk("m1999")), "ZRANGE", "z", "-1", "-1")
}
