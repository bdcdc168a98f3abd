package redistest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/cellar-db/cellar/internal/keydesc"
)

// Client is what Describe needs of a go-redis client.
type Client = keydesc.Client

// Describe is keydesc.Describe: see there.
func Describe(ctx context.Context, c Client, key string) (string, error) {
	return keydesc.Describe(ctx, c, key)
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
