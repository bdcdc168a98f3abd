package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellar-db/cellar/proto"
)

// fanoutCfg sizes the Pub/Sub fan-out scenario.
type fanoutCfg struct {
	subscribers []int // one run per count
	deliveries  int   // messages delivered per run (messages published × subscribers)
	window      int   // PUBLISH commands the publisher keeps in flight
}

const fanoutChannel = "bench:fanout"

// fanoutRun is one fan-out run: subs raw connections SUBSCRIBE to one
// channel, one publisher PUBLISHes messages carrying their send time,
// keeping window commands in flight, and every subscriber records
// publish-to-receive latency. The sample's Value is messages delivered per
// second, from the first publish to the last receipt.
func fanoutRun(ctx context.Context, addr string, subs, deliveries, window int, stallAfter time.Duration) sample {
	msgs := max(deliveries/subs, 200)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		received atomic.Int64
		lastRecv atomic.Int64
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) { errOnce.Do(func() { firstErr = err; cancel() }) }

	conns := make([]net.Conn, 0, subs)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	readers := make([]*bufio.Reader, 0, subs)
	for i := 0; i < subs; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return errSample("subscriber dial", err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte("*2\r\n$9\r\nSUBSCRIBE\r\n$" + strconv.Itoa(len(fanoutChannel)) + "\r\n" + fanoutChannel + "\r\n")); err != nil {
			return errSample("SUBSCRIBE", err)
		}
		readers = append(readers, bufio.NewReaderSize(c, 64<<10))
	}
	for i, r := range readers {
		conns[i].SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := proto.ReadReply(r); err != nil {
			return errSample("SUBSCRIBE confirmation", err)
		}
		conns[i].SetReadDeadline(time.Time{})
	}

	lats := make([][]float64, subs)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			lat := make([]float64, 0, msgs)
			for n := 0; n < msgs; n++ {
				rep, err := proto.ReadReply(readers[i])
				if err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("subscriber %d: %w", i, err))
					}
					return
				}
				now := time.Now().UnixNano()
				if len(rep.Elems) != 3 {
					fail(fmt.Errorf("subscriber %d: not a message: %q", i, rep.Raw))
					return
				}
				sent, err := sentAt(string(rep.Elems[2].Text))
				if err != nil {
					fail(err)
					return
				}
				lat = append(lat, float64(now-sent)/1e6)
				lastRecv.Store(now)
				received.Add(1)
			}
			lats[i] = lat
		}(i)
	}
	// Closing the connections ends the readers when the run is abandoned.
	go func() {
		<-ctx.Done()
		for _, c := range conns {
			c.SetReadDeadline(time.Now())
		}
	}()

	start := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := publishAll(ctx, addr, msgs, window); err != nil && ctx.Err() == nil {
			fail(err)
		}
	}()

	total := int64(msgs) * int64(subs)
	stalled := awaitProgress(&wg, &received, stallAfter, cancel)
	switch {
	case firstErr != nil:
		return errSample("fanout", firstErr)
	case stalled:
		return sample{Status: statusStalled, Detail: fmt.Sprintf("no message received for %s (%d of %d)", stallAfter, received.Load(), total)}
	case received.Load() != total:
		return sample{Status: statusFailed, Detail: fmt.Sprintf("%d of %d messages received", received.Load(), total)}
	}
	var all []float64
	for _, l := range lats {
		all = append(all, l...)
	}
	elapsed := time.Duration(lastRecv.Load() - start.UnixNano())
	return sample{
		Status: statusOK,
		Value:  float64(total) / elapsed.Seconds(),
		P50Ms:  percentile(all, 50),
		P99Ms:  percentile(all, 99),
		MaxMs:  percentile(all, 100),
	}
}

// publishAll publishes msgs messages of 64 bytes, each starting with its
// send time, keeping up to window PUBLISH commands in flight on one
// connection, and checks every reply is an integer.
func publishAll(ctx context.Context, addr string, msgs, window int) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	go func() { <-ctx.Done(); c.SetDeadline(time.Now()) }()
	r := bufio.NewReaderSize(c, 16<<10)
	pad := payload(64, 0)
	var buf, msg []byte
	inflight := 0
	for sent := 0; sent < msgs || inflight > 0; {
		buf = buf[:0]
		for inflight < window && sent < msgs {
			msg = strconv.AppendInt(msg[:0], time.Now().UnixNano(), 10)
			msg = append(msg, ':')
			msg = append(msg, pad[:64-len(msg)]...)
			buf = append(buf, "*3\r\n$7\r\nPUBLISH\r\n$"...)
			buf = strconv.AppendInt(buf, int64(len(fanoutChannel)), 10)
			buf = append(buf, "\r\n"+fanoutChannel+"\r\n$"...)
			buf = strconv.AppendInt(buf, int64(len(msg)), 10)
			buf = append(buf, "\r\n"...)
			buf = append(buf, msg...)
			buf = append(buf, "\r\n"...)
			inflight++
			sent++
		}
		if len(buf) > 0 {
			if _, err := c.Write(buf); err != nil {
				return err
			}
		}
		rep, err := proto.ReadReply(r)
		if err != nil {
			return err
		}
		if rep.Type != ':' {
			return errors.New("PUBLISH replied " + string(rep.Raw))
		}
		inflight--
	}
	return nil
}

// fanout runs the Pub/Sub fan-out scenario of issue 13 against Redis and
// Cellar, interleaved, one fresh pair of servers per round.
func (r *runner) fanout(ctx context.Context) *table {
	specs := []serverSpec{specRedis(r.peers), specCellar(r.peers)}
	names, labels := specNames(specs)
	f := r.cfg.fanout
	t := &table{
		ID: "fanout", Title: "Pub/Sub fan-out: 1 publisher, N subscribers",
		Params: fmt.Sprintf("one publisher keeping %d PUBLISH in flight, 64-byte messages carrying their send time; "+
			"subscribers on raw connections, one each; %d messages delivered per run (at least 200 published)",
			f.window, f.deliveries),
		Metric:  "msgs/s",
		Servers: names, Labels: labels, Ratios: [][2]string{{"cellar", "redis"}},
		Note: "msgs/s counts deliveries (messages published × subscribers) from the first publish to the last receipt; " +
			"p50/p99 are publish-to-receive latency (the subscriber's receipt time minus the time the publisher sent the message).",
	}
	for round := 0; round < r.cfg.rounds; round++ {
		if ctx.Err() != nil {
			break
		}
		r.log("fanout round %d/%d", round+1, r.cfg.rounds)
		up, down := r.startAll(specs)
		for _, sp := range rotate(specs, round) {
			s := up[sp.Name]
			for _, n := range f.subscribers {
				if ctx.Err() != nil {
					break
				}
				row := fanoutRow(n)
				var smp sample
				if s == nil {
					smp = sample{Status: statusFailed, Detail: "server did not start: " + down[sp.Name]}
				} else {
					smp = fanoutRun(ctx, s.addr(), n, f.deliveries, f.window, r.cfg.stallAfter)
				}
				r.log("  %-8s %-16s %-8s %s", t.ID, row, sp.Name, describe(smp))
				t.add(row, sp.Name, smp)
			}
		}
		r.stopAll(up)
	}
	t.finish()
	return t
}

func fanoutRow(subs int) string {
	if subs == 1 {
		return "1 subscriber"
	}
	return fmt.Sprintf("%d subscribers", subs)
}
