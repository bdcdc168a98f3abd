package rdb

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellar-db/cellar/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestCRC64(t *testing.T) {
	// The check value of CRC-64/Jones as Redis computes it (src/crc64.c's
	// own test: "123456789" gives e9c6d914c4b8d9ca).
	if got := CRC64(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64 = %016x", got)
	}
	long := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	var step uint64
	for i := 0; i < len(long); i += 7 {
		step = CRC64(step, long[i:min(i+7, len(long))])
	}
	if step != CRC64(0, long) {
		t.Fatal("crc64 in pieces differs from crc64 whole")
	}
}

// describe prints a decoded value as redistest.Describe prints a key.
func describe(o *Object) string {
	var b strings.Builder
	b.WriteString(o.Kind.String())
	switch o.Kind {
	case KindString:
		fmt.Fprintf(&b, " %q", o.Str)
	case KindList:
		fmt.Fprintf(&b, " %q", strs(o.Items))
	case KindSet:
		v := strs(o.Items)
		sort.Strings(v)
		fmt.Fprintf(&b, " %q", v)
	case KindZSet:
		idx := make([]int, len(o.Items))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, c int) bool {
			i, j := idx[a], idx[c]
			if o.Scores[i] != o.Scores[j] {
				return o.Scores[i] < o.Scores[j]
			}
			return string(o.Items[i]) < string(o.Items[j])
		})
		for _, i := range idx {
			fmt.Fprintf(&b, " %q=%s", o.Items[i], strconv.FormatFloat(o.Scores[i], 'g', -1, 64))
		}
	case KindHash:
		m := map[string]string{}
		var fields []string
		for i := 0; i < len(o.Items); i += 2 {
			m[string(o.Items[i])] = string(o.Items[i+1])
			fields = append(fields, string(o.Items[i]))
		}
		sort.Strings(fields)
		for _, f := range fields {
			fmt.Fprintf(&b, " %q=%q", f, m[f])
		}
	case KindStream:
		s := o.Stream
		id := func(i StreamID) string { return fmt.Sprintf("%d-%d", i.Ms, i.Seq) }
		fmt.Fprintf(&b, " len=%d last=%s first=%s maxdel=%s added=%d\n", s.Length, id(s.LastID), id(s.FirstID), id(s.MaxDeletedID), s.EntriesAdded)
		for _, e := range s.Entries {
			fmt.Fprintf(&b, "  %q\n", []any{id(e.ID), anys(e.Fields)})
		}
		groups := append([]StreamGroup(nil), s.Groups...)
		sort.Slice(groups, func(i, j int) bool { return string(groups[i].Name) < string(groups[j].Name) })
		for _, g := range groups {
			// XINFO answers a null for an unknown counter (-1), which
			// go-redis reads as 0.
			fmt.Fprintf(&b, "  group %q last=%s read=%d pel=%d\n", g.Name, id(g.LastID), max(g.EntriesRead, 0), len(g.Pending))
			for _, p := range g.Pending {
				fmt.Fprintf(&b, "   pending %s %q count=%d\n", id(p.ID), p.Consumer, p.DeliveryCount)
			}
			cs := append([]StreamConsumer(nil), g.Consumers...)
			sort.Slice(cs, func(i, j int) bool { return string(cs[i].Name) < string(cs[j].Name) })
			for _, c := range cs {
				fmt.Fprintf(&b, "   consumer %q pel=%d\n", c.Name, len(c.Pending))
			}
		}
	}
	return b.String()
}

func strs(items [][]byte) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}

func anys(items [][]byte) []any {
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}

// TestDumpPayloadsFromRedis decodes redis-server's DUMP of every type in
// its small and big encodings, compares the value with what Redis itself
// answers for the key, then RESTOREs Cellar's encoding of it into Redis and
// compares again.
func TestDumpPayloadsFromRedis(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Sock, Protocol: 2})
	defer c.Close()
	keys := redistest.Fill(t, ctx, c, "")
	encodings := map[byte]bool{}
	for _, key := range keys {
		want, err := redistest.Describe(ctx, c, key)
		if err != nil {
			t.Fatal(err)
		}
		payload, err := c.Dump(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		o, err := DecodeDump([]byte(payload))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		encodings[o.Encoding] = true
		if got := describe(o); got != want {
			t.Fatalf("%s (type byte %d): decoded and what redis says differ: %s", key, o.Encoding, firstDiff(got, want))
		}
		mine := AppendDump(nil, o)
		if err := c.RestoreReplace(ctx, "restored", 0, string(mine)).Err(); err != nil {
			t.Fatalf("%s: RESTORE of Cellar's payload: %v", key, err)
		}
		got, err := redistest.Describe(ctx, c, "restored")
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%s: restored from Cellar's payload\n%s\nwant\n%s", key, got, want)
		}
		// Cellar's payload decodes to the same value.
		o2, err := DecodeDump(mine)
		if err != nil || describe(o2) != want {
			t.Fatalf("%s: Cellar's payload decodes to %v, %v", key, o2, err)
		}
	}
	// Redis 7.0 wrote every encoding it has.
	for _, e := range []byte{TypeString, TypeSet, TypeZSet2, TypeHash, TypeSetIntset, TypeHashListpack, TypeZSetListpack, TypeListQuicklist2, TypeStreamListpacks2} {
		if !encodings[e] {
			t.Errorf("no payload of type byte %d among the keys", e)
		}
	}
}

// zipBuilder writes ziplists by hand (src/ziplist.c's layout), for the
// encodings Redis 7.0 reads but no longer writes.
func ziplist(items ...any) []byte {
	var body []byte
	prev := 0
	for _, it := range items {
		start := len(body)
		if prev < 254 {
			body = append(body, byte(prev))
		} else {
			body = binary.LittleEndian.AppendUint32(append(body, 0xfe), uint32(prev))
		}
		switch v := it.(type) {
		case string:
			switch n := len(v); {
			case n < 64:
				body = append(body, byte(n))
			case n < 16384:
				body = append(body, 0x40|byte(n>>8), byte(n))
			default:
				body = binary.BigEndian.AppendUint32(append(body, 0x80), uint32(n))
			}
			body = append(body, v...)
		case int:
			switch {
			case v >= 0 && v <= 12:
				body = append(body, 0xf1+byte(v))
			case v >= math.MinInt8 && v <= math.MaxInt8:
				body = append(body, 0xfe, byte(v))
			case v >= math.MinInt16 && v <= math.MaxInt16:
				body = binary.LittleEndian.AppendUint16(append(body, 0xc0), uint16(v))
			case v >= -1<<23 && v < 1<<23:
				body = append(body, 0xf0, byte(v), byte(v>>8), byte(v>>16))
			case v >= math.MinInt32 && v <= math.MaxInt32:
				body = binary.LittleEndian.AppendUint32(append(body, 0xd0), uint32(v))
			default:
				body = binary.LittleEndian.AppendUint64(append(body, 0xe0), uint64(v))
			}
		}
		prev = len(body) - start
	}
	zl := make([]byte, 10, 11+len(body))
	zl = append(append(zl, body...), 0xff)
	binary.LittleEndian.PutUint32(zl, uint32(len(zl)))
	binary.LittleEndian.PutUint32(zl[4:], uint32(10+len(body)-prev))
	binary.LittleEndian.PutUint16(zl[8:], uint16(len(items)))
	return zl
}

func zipmap(pairs ...string) []byte {
	zm := []byte{byte(len(pairs) / 2)}
	for i, s := range pairs {
		zm = append(zm, byte(len(s)))
		if i%2 == 1 {
			zm = append(zm, 0) // free bytes
		}
		zm = append(zm, s...)
	}
	return append(zm, 0xff)
}

func payload(t byte, body []byte) []byte {
	p := append([]byte{t}, body...)
	p = binary.LittleEndian.AppendUint16(p, 9)
	return binary.LittleEndian.AppendUint64(p, CRC64(0, p))
}

func blob(b []byte) []byte { return appendString(nil, b) }

// TestOldEncodingsAgainstRedis builds payloads in the encodings older Redis
// versions wrote (ziplists, zipmaps, quicklists of ziplists), has Redis 7.0
// RESTORE them, and requires the decoder to read the value Redis reads.
func TestOldEncodingsAgainstRedis(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Sock, Protocol: 2})
	defer c.Close()
	long := strings.Repeat("L", 300)
	quick := appendLen(nil, 2)
	quick = append(quick, blob(ziplist("a", 1, -300))...)
	quick = append(quick, blob(ziplist(70000, 1<<40, long))...)
	cases := map[string][]byte{
		// Redis trusts a ziplist's order: members come sorted by score.
		"list-ziplist": payload(TypeListZiplist, blob(ziplist("a", "bb", 0, 12, 13, -1, 200, -30000, 1<<20, -1<<30, 1<<50, long, strings.Repeat("s", 20000)))),
		"quicklist-v1": payload(TypeListQuicklist, quick),
		"hash-ziplist": payload(TypeHashZiplist, blob(ziplist("f1", "v1", "f2", 2, "n", -7))),
		"zset-ziplist": payload(TypeZSetZiplist, blob(ziplist("m3", "-inf", "m1", "1.5", "m2", 3))),
		"hash-zipmap":  payload(TypeHashZipmap, blob(zipmap("name", "cellar", "k", "", "x", "yz"))),
		"zset-text":    payload(TypeZSet, append(append(appendLen(nil, 3), append(blob([]byte("a")), append([]byte{3}, "2.5"...)...)...), append(append(blob([]byte("b")), 254), append(blob([]byte("c")), 255)...)...)),
		"list-linked":  payload(TypeList, append(appendLen(nil, 2), append(blob([]byte("x")), blob([]byte("123"))...)...)),
		"string-lzf":   payload(TypeString, []byte{0xc3, 6, 30, 0x01, 'a', 'b', 0xe0, 19, 1}),
	}
	for name, p := range cases {
		if err := c.RestoreReplace(ctx, name, 0, string(p)).Err(); err != nil {
			t.Fatalf("%s: Redis refuses the payload: %v", name, err)
		}
		want, err := redistest.Describe(ctx, c, name)
		if err != nil {
			t.Fatal(err)
		}
		o, err := DecodeDump(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := describe(o); got != want {
			t.Fatalf("%s: decoded\n%s\nredis reads\n%s", name, got, want)
		}
	}
}

func TestDecodeDumpErrors(t *testing.T) {
	good := AppendDump(nil, &Object{Kind: KindString, Str: []byte("v")})
	if _, err := DecodeDump(good); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 1
	newer := payload(TypeString, blob([]byte("v")))
	newer[len(newer)-10] = 11
	newer = append(newer[:len(newer)-8], binary.LittleEndian.AppendUint64(nil, CRC64(0, newer[:len(newer)-8]))...)
	for name, p := range map[string][]byte{"checksum": bad, "short": good[:5], "version 11": newer} {
		if _, err := DecodeDump(p); !errors.Is(err, ErrDumpVersion) {
			t.Errorf("%s: %v, want ErrDumpVersion", name, err)
		}
	}
	for name, p := range map[string][]byte{
		"empty list":   payload(TypeList, appendLen(nil, 0)),
		"module":       payload(TypeModule2, appendLen(nil, 12345)),
		"unknown type": payload(99, nil),
		"truncated":    payload(TypeString, []byte{30, 'a'}), // runs past the footer too
		"bad listpack": payload(TypeHashListpack, blob([]byte{1, 2, 3, 4, 5, 6, 7})),
		"huge length":  payload(TypeString, []byte{0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
	} {
		if _, err := DecodeDump(p); err == nil || errors.Is(err, ErrDumpVersion) {
			t.Errorf("%s: %v, want a format error", name, err)
		}
	}
}

// TestReadDumpRDB reads the dump.rdb that redis-server's SAVE writes:
// several databases, expiries, a function library, AUX fields.
func TestReadDumpRDB(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Sock, Protocol: 2, DB: 0})
	defer c.Close()
	want := map[string]string{}
	for db := range 3 {
		conn := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Sock, Protocol: 2, DB: db})
		prefix := fmt.Sprintf("db%d:", db)
		if db == 2 {
			conn.Set(ctx, "db2:only", "x", 0)
		} else {
			redistest.Fill(t, ctx, conn, prefix)
		}
		keys, _ := conn.Keys(ctx, "*").Result()
		for _, k := range keys {
			d, err := redistest.Describe(ctx, conn, k)
			if err != nil {
				t.Fatal(err)
			}
			want[fmt.Sprintf("%d/%s", db, k)] = d
		}
		conn.Close()
	}
	if ok, err := c.PExpireAt(ctx, "db0:str:raw", timeAt(4102444800123)).Result(); err != nil || !ok {
		t.Fatal(ok, err, c.Keys(ctx, "db0:str*").Val())
	}
	c.Do(ctx, "FUNCTION", "LOAD", "#!lua name=mylib\nredis.register_function('f', function() return 1 end)")
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(srv.Dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := NewReader(f)
	got := map[string]string{}
	aux := map[string]string{}
	var fns []string
	var expireAt int64
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch rec.Kind {
		case RecordKey:
			got[fmt.Sprintf("%d/%s", rec.DB, rec.Key)] = describe(rec.Value)
			if string(rec.Key) == "db0:str:raw" {
				expireAt = rec.ExpireAt
			}
		case RecordAux:
			aux[string(rec.AuxKey)] = string(rec.AuxValue)
		case RecordFunction:
			fns = append(fns, string(rec.Function))
		}
	}
	if r.Version() != 10 || aux["redis-ver"] == "" {
		t.Fatalf("version %d, aux %v", r.Version(), aux)
	}
	if expireAt != 4102444800123 {
		t.Fatalf("expiry %d", expireAt)
	}
	if len(fns) != 1 || !strings.Contains(fns[0], "name=mylib") {
		t.Fatalf("functions %q", fns)
	}
	if len(got) != len(want) {
		t.Fatalf("%d keys read, %d written", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("%s: read\n%s\nwant\n%s", k, got[k], w)
		}
	}
	// On a bufio.Reader the Reader consumes the file and nothing after it
	// (a replication stream follows the RDB on the same connection).
	data, _ := os.ReadFile(filepath.Join(srv.Dir, "dump.rdb"))
	br := bufio.NewReaderSize(bytes.NewReader(append(append([]byte(nil), data...), "*1\r\n$4\r\nPING\r\n"...)), 4096)
	r = NewReader(br)
	for {
		if _, err := r.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if rest, _ := io.ReadAll(br); string(rest) != "*1\r\n$4\r\nPING\r\n" || r.Consumed() != int64(len(data)) {
		t.Fatalf("after the file: %q, consumed %d of %d", rest, r.Consumed(), len(data))
	}
	// A flipped byte is caught by the checksum (or the format).
	data[len(data)/2] ^= 0x40
	r = NewReader(bytes.NewReader(data))
	for {
		_, err := r.Next()
		if err == io.EOF {
			t.Fatal("a corrupted file read to the end")
		}
		if err != nil {
			break
		}
	}
}

func timeAt(ms int64) time.Time { return time.UnixMilli(ms) }

// firstDiff shows the first line where two descriptions differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n got  %.300s\n want %.300s", i+1, a, b)
		}
	}
	return "no difference"
}

// TestFileWriterTake: a file streamed in pieces with Take is, joined, the
// file written whole, and it decodes with its checksum.
func TestFileWriterTake(t *testing.T) {
	build := func(take bool) []byte {
		w := NewFileWriter()
		var out []byte
		w.Aux("redis-ver", "7.0.0")
		for i := range 50 {
			w.Key([]byte(fmt.Sprint("k", i)), &Object{Kind: KindString, Str: bytes.Repeat([]byte{'v'}, i*10)}, 0)
			if take && i%7 == 3 {
				out = append(out, w.Take()...)
			}
		}
		if take && w.Pending() == 0 {
			t.Fatal("nothing pending before End")
		}
		n := w.Len()
		out = append(out, w.End()...)
		if int64(len(out)) != n+9 {
			t.Fatalf("Len %d before End, file %d bytes", n, len(out))
		}
		return out
	}
	whole, pieces := build(false), build(true)
	if !bytes.Equal(whole, pieces) {
		t.Fatalf("the file taken in pieces (%d bytes) differs from the file built whole (%d bytes)", len(pieces), len(whole))
	}
	rd := NewReader(bytes.NewReader(pieces))
	keys := 0
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Kind == RecordKey {
			keys++
		}
	}
	if keys != 50 {
		t.Fatalf("%d keys decoded", keys)
	}
}
