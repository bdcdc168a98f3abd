package tests

import (
	"bufio"
	"context"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestPipelinedRestoreDeadlines sends what `cellar migrate` sends a target:
// pages of RESTORE key deadline payload REPLACE ABSTTL, pipelined, each
// key of one of six types with a deadline of its own, written in small
// pieces of random size (so that commands are split across reads) from
// two connections at once, twice over (the second time every key exists
// and REPLACE replaces it). Every key must end with its own deadline.
func TestPipelinedRestoreDeadlines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startServer(t)
	c := s.client()
	defer c.Close()

	// One DUMP payload per type, made on Cellar itself.
	p := c.Pipeline()
	p.Set(ctx, "src:0", "value", 0)
	p.RPush(ctx, "src:1", "a", "b", "c")
	p.HSet(ctx, "src:2", "f", "1", "g", "x")
	p.SAdd(ctx, "src:3", "1", "2", "m")
	p.ZAdd(ctx, "src:4", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 1.5, Member: "b"})
	p.XAdd(ctx, &redis.XAddArgs{Stream: "src:5", Values: []any{"n", "1"}})
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var payloads [6]string
	for i := range payloads {
		v, err := c.Dump(ctx, "src:"+strconv.Itoa(i)).Result()
		if err != nil {
			t.Fatal(err)
		}
		payloads[i] = v
	}

	const keys = 12000
	base := time.Now().Add(time.Hour).UnixMilli()
	deadline := func(round, i int) int64 { return base + int64(round)*7919 + int64(i)*1013 }
	for round := 0; round < 2; round++ {
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for conn := 0; conn < 2; conn++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- restoreRun(s.addr, payloads, conn, keys, func(i int) int64 { return deadline(round, i) }, uint64(round*2+conn))
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		p := c.Pipeline()
		got := make([]*redis.Cmd, keys)
		for i := range got {
			got[i] = p.Do(ctx, "PEXPIRETIME", "k:"+strconv.Itoa(i))
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i, g := range got {
			v, err := g.Int64()
			if err != nil {
				t.Fatalf("round %d: PEXPIRETIME k:%d: %v", round, i, err)
			}
			if want := deadline(round, i); v != want {
				if bad++; bad <= 10 {
					t.Errorf("round %d: k:%d has PEXPIRETIME %d, want %d (off by %d ms)", round, i, v, want, v-want)
				}
			}
		}
		if bad > 0 {
			t.Fatalf("round %d: %d of %d keys with another deadline", round, bad, keys)
		}
	}
}

// restoreRun restores the keys k:i with i%2 == conn on a connection of its
// own, in pages of 500 commands written in pieces of 1 to 300 bytes while
// the replies are read beside.
func restoreRun(addr string, payloads [6]string, conn, keys int, deadline func(int) int64, seed uint64) error {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(replyTimeout))
	r := rand.New(rand.NewPCG(seed, 7))
	br := bufio.NewReader(nc)
	var page []byte
	sent := 0
	flush := func() error {
		for len(page) > 0 {
			n := min(1+r.IntN(300), len(page))
			if _, err := nc.Write(page[:n]); err != nil {
				return err
			}
			page = page[n:]
		}
		for ; sent > 0; sent-- {
			line, err := br.ReadString('\n')
			if err != nil {
				return err
			}
			if line != "+OK\r\n" {
				return &replyError{line}
			}
		}
		return nil
	}
	for i := conn; i < keys; i += 2 {
		page = append(page, encode("RESTORE", "k:"+strconv.Itoa(i), strconv.FormatInt(deadline(i), 10), payloads[i%6], "REPLACE", "ABSTTL")...)
		if sent++; sent == 500 {
			if err := flush(); err != nil {
				return err
			}
			page = page[:0]
		}
	}
	return flush()
}

type replyError struct{ line string }

func (e *replyError) Error() string { return "reply " + strconv.Quote(e.line) + ", want +OK" }
