package redistest

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Client is what Describe needs of a go-redis client.
type Client interface {
	redis.Cmdable
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// Describe reads a key through ordinary commands and returns a canonical
// text of its type and value (sets and hashes sorted, sorted sets by score
// then member, streams with their groups, pending entries and consumers;
// times of delivery and sight are left out). The same key on Redis and on
// Cellar describes the same when they hold the same value; "none" when the
// key does not exist.
func Describe(ctx context.Context, c Client, key string) (string, error) {
	typ, err := c.Type(ctx, key).Result()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(typ)
	switch typ {
	case "none":
	case "string":
		v, err := c.Get(ctx, key).Result()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, " %q", v)
	case "list":
		v, err := c.LRange(ctx, key, 0, -1).Result()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, " %q", v)
	case "set":
		v, err := c.SMembers(ctx, key).Result()
		if err != nil {
			return "", err
		}
		sort.Strings(v)
		fmt.Fprintf(&b, " %q", v)
	case "zset":
		v, err := c.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil {
			return "", err
		}
		for _, z := range v {
			fmt.Fprintf(&b, " %q=%s", z.Member, strconv.FormatFloat(z.Score, 'g', -1, 64))
		}
	case "hash":
		v, err := c.HGetAll(ctx, key).Result()
		if err != nil {
			return "", err
		}
		fields := make([]string, 0, len(v))
		for f := range v {
			fields = append(fields, f)
		}
		sort.Strings(fields)
		for _, f := range fields {
			fmt.Fprintf(&b, " %q=%q", f, v[f])
		}
	case "stream":
		s, err := c.XInfoStreamFull(ctx, key, 1<<30).Result() // FULL lists 10 of each without COUNT
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, " len=%d last=%s first=%s maxdel=%s added=%d\n", s.Length, s.LastGeneratedID, s.RecordedFirstEntryID, s.MaxDeletedEntryID, s.EntriesAdded)
		// XRANGE raw: go-redis's messages keep fields in a map, and the
		// order of an entry's fields is part of its value.
		raw, err := c.Do(ctx, "XRANGE", key, "-", "+").Slice()
		if err != nil {
			return "", err
		}
		for _, e := range raw {
			fmt.Fprintf(&b, "  %q\n", e)
		}
		sort.Slice(s.Groups, func(i, j int) bool { return s.Groups[i].Name < s.Groups[j].Name })
		for _, g := range s.Groups {
			fmt.Fprintf(&b, "  group %q last=%s read=%d pel=%d\n", g.Name, g.LastDeliveredID, g.EntriesRead, g.PelCount)
			for _, p := range g.Pending {
				fmt.Fprintf(&b, "   pending %s %q count=%d\n", p.ID, p.Consumer, p.DeliveryCount)
			}
			sort.Slice(g.Consumers, func(i, j int) bool { return g.Consumers[i].Name < g.Consumers[j].Name })
			for _, cs := range g.Consumers {
				fmt.Fprintf(&b, "   consumer %q pel=%d\n", cs.Name, cs.PelCount)
			}
		}
	default:
		return "", fmt.Errorf("redistest: key %q has type %s", key, typ)
	}
	return b.String(), nil
}

// Fill writes keys of every type in Redis's small and big encodings
// (strings of every integer width, compressible and binary; lists of one
// and many quicklist nodes; intsets, listpacks and hashtables; streams
// with deleted entries, groups, pending entries and consumers) into c's
// database, each name starting with prefix, and returns their names
// sorted. It works on Redis and on Cellar alike.
func Fill(t testing.TB, ctx context.Context, c Client, prefix string) []string {
	t.Helper()
	do := func(args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	k := func(name string) string { return prefix + name }
	do("SET", k("str:raw"), "hello world")
	do("SET", k("str:empty"), "")
	do("SET", k("str:int8"), "-12")
	do("SET", k("str:int16"), "3000")
	do("SET", k("str:int32"), "-2147483648")
	do("SET", k("str:int64"), "1234567890123456789")
	do("SET", k("str:notcanon"), "007")
	do("SET", k("str:lzf"), strings.Repeat("abcabcabc", 200))
	bin := make([]byte, 5000)
	for i := range bin {
		bin[i] = byte(i * 7 % 251)
	}
	do("SET", k("str:binary"), bin)
	for i := range 5 {
		do("RPUSH", k("list:small"), i, fmt.Sprintf("v%d", i), -i*1000, i*100000, i*10000000000)
	}
	for i := range 3000 {
		do("RPUSH", k("list:big"), fmt.Sprintf("element-%d", i), i)
	}
	do("RPUSH", k("list:bigelem"), strings.Repeat("x", 20000), "small", strings.Repeat("y", 70000))
	for i := range 10 {
		do("SADD", k("set:intset16"), i*1000-5000)
		do("SADD", k("set:intset64"), int64(i)*10000000000)
		do("SADD", k("set:small"), fmt.Sprintf("m%d", i))
	}
	for i := range 1000 {
		do("SADD", k("set:bigint"), i)
		do("SADD", k("set:big"), fmt.Sprintf("member:%d", i))
	}
	zs := []any{"ZADD", k("zset:small")}
	for i := range 10 {
		zs = append(zs, float64(i)/3-1, fmt.Sprintf("z%d", i))
	}
	zs = append(zs, "+inf", "top", "-inf", "bottom", 7, 7)
	do(zs...)
	for i := range 500 {
		do("ZADD", k("zset:big"), float64(i)*1.5-100, fmt.Sprintf("zm%d", i))
	}
	do("ZADD", k("zset:big"), "inf", "pinf", "-inf", "ninf", 1e300, "huge", 5e-324, "tiny")
	do("ZADD", k("zset:longmember"), 1, strings.Repeat("m", 100))
	for i := range 10 {
		do("HSET", k("hash:small"), fmt.Sprintf("f%d", i), i, i, fmt.Sprintf("v%d", i))
	}
	for i := range 600 {
		do("HSET", k("hash:big"), fmt.Sprintf("field:%d", i), fmt.Sprintf("value:%d", i))
	}
	do("HSET", k("hash:longvalue"), "f", strings.Repeat("v", 100))
	for i := range 5 {
		do("XADD", k("stream:small"), fmt.Sprintf("%d-%d", i+1, i), "a", i, "b", "x")
	}
	for i := range 450 {
		if i%3 == 0 {
			do("XADD", k("stream:big"), "*", "kind", "same", "n", i)
		} else {
			do("XADD", k("stream:big"), "*", "other", strings.Repeat("z", i), "n", i, "extra", -i)
		}
	}
	do("XDEL", k("stream:big"), "0-1")
	ids, err := c.XRange(ctx, k("stream:big"), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ids[10:20] {
		do("XDEL", k("stream:big"), m.ID)
	}
	do("XGROUP", "CREATE", k("stream:big"), "g1", "0")
	do("XGROUP", "CREATE", k("stream:big"), "g2", "$")
	do("XGROUP", "CREATECONSUMER", k("stream:big"), "g2", "idle")
	do("XREADGROUP", "GROUP", "g1", "alice", "COUNT", 30, "STREAMS", k("stream:big"), ">")
	do("XREADGROUP", "GROUP", "g1", "bob", "COUNT", 5, "STREAMS", k("stream:big"), ">")
	do("XACK", k("stream:big"), "g1", ids[25].ID, ids[26].ID)
	do("XCLAIM", k("stream:big"), "g1", "bob", 0, ids[30].ID)
	do("XADD", k("stream:empty"), "5-5", "f", "v")
	do("XDEL", k("stream:empty"), "5-5")
	do("XGROUP", "CREATE", k("stream:empty"), "g", "$")
	keys, err := c.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	return keys
}
