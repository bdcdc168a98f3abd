// Package keydesc describes a key's type and value through ordinary
// commands, the same text on Redis and on Cellar for the same value: the
// tests compare servers with it, and `cellar migrate --verify` too.
package keydesc

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

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
