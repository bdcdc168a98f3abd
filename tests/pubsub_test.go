package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	cellar "github.com/cellar-db/cellar"
)

// Pub/Sub over the wire: exact bytes in RESP2 and RESP3 (against Cellar
// and a real redis-server alike), ordering of pushes with a client's own
// replies, real clients (go-redis, redis-py), the tables' cleanup, and the
// pubsub output limits with a subscriber that does not read.

// push builds a RESP2 array or a RESP3 push of bulk strings, with an
// integer last when n >= 0 (a confirmation's count).
func push(resp int, n int64, words ...string) string {
	head := "*"
	if resp == 3 {
		head = ">"
	}
	size := len(words)
	if n >= 0 {
		size++
	}
	s := head + strconv.Itoa(size) + "\r\n"
	for _, w := range words {
		if w == "\x00nil" {
			if resp == 3 {
				s += "_\r\n"
			} else {
				s += "$-1\r\n"
			}
			continue
		}
		s += bulk(w)
	}
	if n >= 0 {
		s += integer(n)
	}
	return s
}

const subscribedErr = "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"

// pubsubWire runs the exact-bytes script against the server at addr.
func pubsubWire(t *testing.T, addr string, resp int) {
	sub, pub := dialRaw(t, addr), dialRaw(t, addr)
	if resp == 3 {
		sub.do("HELLO", "3")
	}
	sub.expect(push(resp, 1, "subscribe", "ch"), "SUBSCRIBE", "ch")
	sub.expect(push(resp, 2, "psubscribe", "c*"), "PSUBSCRIBE", "c*")
	sub.expect(push(resp, 1, "ssubscribe", "sh"), "SSUBSCRIBE", "sh")
	pub.expect(integer(2), "PUBLISH", "ch", "hello")
	if got, want := sub.read(), push(resp, -1, "message", "ch", "hello"); got != want {
		t.Fatalf("message: got %q, want %q", got, want)
	}
	if got, want := sub.read(), push(resp, -1, "pmessage", "c*", "ch", "hello"); got != want {
		t.Fatalf("pmessage: got %q, want %q", got, want)
	}
	pub.expect(integer(1), "SPUBLISH", "sh", "shard")
	if got, want := sub.read(), push(resp, -1, "smessage", "sh", "shard"); got != want {
		t.Fatalf("smessage: got %q, want %q", got, want)
	}
	pub.expect(integer(0), "SPUBLISH", "ch", "x") // shard channels are their own
	if resp == 2 {
		sub.expect(errr(fmt.Sprintf(subscribedErr, "get")), "GET", "k")
		sub.expect(errr(fmt.Sprintf(subscribedErr, "client|id")), "CLIENT", "ID")
		sub.expect("*2\r\n$4\r\npong\r\n$0\r\n\r\n", "PING")
		sub.expect("*2\r\n$4\r\npong\r\n$2\r\nhi\r\n", "PING", "hi")
	} else {
		// RESP3 keeps full use, and a push to itself comes before the
		// command's reply.
		sub.expect("_\r\n", "GET", "k")
		sub.expect(status("PONG"), "PING")
		sub.send(encode("PUBLISH", "ch", "self"))
		for _, want := range []string{push(3, -1, "message", "ch", "self"), push(3, -1, "pmessage", "c*", "ch", "self"), integer(2)} {
			if got := sub.read(); got != want {
				t.Fatalf("publish to itself: got %q, want %q", got, want)
			}
		}
		// Blocked, it still gets its messages, before the blocking
		// command's reply.
		sub.send(encode("BLPOP", "q", "0"))
		waitFor(t, 10*time.Second, "the subscriber to block", func() bool {
			return strings.Contains(pub.do("CLIENT", "LIST"), "cmd=blpop")
		})
		pub.expect(integer(2), "PUBLISH", "ch", "while blocked")
		pub.expect(integer(1), "RPUSH", "q", "x")
		for _, want := range []string{push(3, -1, "message", "ch", "while blocked"), push(3, -1, "pmessage", "c*", "ch", "while blocked"), "*2\r\n$1\r\nq\r\n$1\r\nx\r\n"} {
			if got := sub.read(); got != want {
				t.Fatalf("blocked subscriber: got %q, want %q", got, want)
			}
		}
	}
	sub.expect(push(resp, 1, "unsubscribe", "ch"), "UNSUBSCRIBE")
	sub.expect(push(resp, 0, "punsubscribe", "c*"), "PUNSUBSCRIBE")
	sub.expect(push(resp, 0, "unsubscribe", "\x00nil"), "UNSUBSCRIBE")
	sub.expect(push(resp, 0, "punsubscribe", "\x00nil"), "PUNSUBSCRIBE")
	if resp == 2 {
		// Still subscribed to a shard channel.
		sub.expect(errr(fmt.Sprintf(subscribedErr, "get")), "GET", "k")
	}
	sub.expect(push(resp, 0, "sunsubscribe", "sh"), "SUNSUBSCRIBE", "sh")
	sub.expect(push(resp, 0, "sunsubscribe", "\x00nil"), "SUNSUBSCRIBE")
	sub.expect(status("PONG"), "PING")
	if resp == 2 {
		sub.expect("$-1\r\n", "GET", "k")
	}
	pub.expect(integer(0), "PUBLISH", "ch", "gone")
}

func TestPubSubWire(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	redisAddr := startRedis(t)
	for _, resp := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d/cellar", resp), func(t *testing.T) { pubsubWire(t, s.addr, resp) })
		t.Run(fmt.Sprintf("resp%d/redis", resp), func(t *testing.T) { pubsubWire(t, redisAddr, resp) })
	}
}

// A RESP3 subscriber pipelines commands while another client publishes:
// its replies come in request order, the messages in publishing order,
// and no frame is cut by another.
func TestPubSubPushesOrderedWithReplies(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sub := s.raw()
	sub.do("HELLO", "3")
	sub.expect(push(3, 1, "subscribe", "ch"), "SUBSCRIBE", "ch")
	const n = 3000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pub := s.client()
		for i := 0; i < n; i++ {
			if err := pub.Publish(ctx, "ch", "m"+strconv.Itoa(i)).Err(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var req bytes.Buffer
	for i := 0; i < n; i++ {
		req.Write(encode("INCR", "counter"))
	}
	sub.send(req.Bytes())
	replies, msgs := 0, 0
	for replies < n || msgs < n {
		got := sub.read()
		if strings.HasPrefix(got, ">") {
			if want := push(3, -1, "message", "ch", "m"+strconv.Itoa(msgs)); got != want {
				t.Fatalf("message %d: got %q, want %q", msgs, got, want)
			}
			msgs++
			continue
		}
		replies++
		if want := integer(int64(replies)); got != want {
			t.Fatalf("reply %d: got %q, want %q", replies, got, want)
		}
	}
	wg.Wait()
}

// go-redis subscribers on every loop receive every message, in order, in
// RESP3 and RESP2.
func TestPubSubGoRedis(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, protocol := range []int{3, 2} {
		t.Run(fmt.Sprintf("resp%d", protocol), func(t *testing.T) {
			const subs, msgs = 20, 200
			var pss []*redis.PubSub
			for i := 0; i < subs; i++ {
				c := s.client(func(o *redis.Options) { o.Protocol = protocol })
				var ps *redis.PubSub
				if i%2 == 0 {
					ps = c.Subscribe(ctx, "news")
				} else {
					ps = c.PSubscribe(ctx, "ne*")
				}
				if _, err := ps.Receive(ctx); err != nil { // the confirmation
					t.Fatal(err)
				}
				t.Cleanup(func() { ps.Close() })
				pss = append(pss, ps)
			}
			pub := s.client()
			for i := 0; i < msgs; i++ {
				if n, err := pub.Publish(ctx, "news", strconv.Itoa(i)).Result(); err != nil || n != subs {
					t.Fatalf("PUBLISH: %d, %v; want %d receivers", n, err, subs)
				}
			}
			for j, ps := range pss {
				ch := ps.Channel()
				for i := 0; i < msgs; i++ {
					select {
					case m := <-ch:
						if m.Channel != "news" || m.Payload != strconv.Itoa(i) || (j%2 == 1) != (m.Pattern == "ne*") {
							t.Fatalf("subscriber %d, message %d: %+v", j, i, m)
						}
					case <-time.After(10 * time.Second):
						t.Fatalf("subscriber %d: message %d never came", j, i)
					}
				}
			}
		})
	}
}

// redis-py's pubsub() listening: Debian's python3-redis, run by
// /usr/bin/python3 (scripts/deps.sh installs it).
func TestPubSubRedisPy(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	py := "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import redis").CombinedOutput(); err != nil {
		t.Fatalf("redis-py is not installed (run scripts/deps.sh): %v %s", err, out)
	}
	host, port, _ := strings.Cut(s.addr, ":")
	script := `
import sys, redis
r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]))
p = r.pubsub()
p.subscribe("chat")
p.psubscribe("job:*")
for want in ("subscribe", "psubscribe"):
    m = p.get_message(timeout=10)
    assert m["type"] == want, m
r.config_set("notify-keyspace-events", "KEA")
p.psubscribe("__keyspace@0__:*")
assert p.get_message(timeout=10)["type"] == "psubscribe"
print(r.publish("chat", "hello"), r.publish("job:1", "done"))
r.set("user", "ann")
r.lpush("queue", "a")
got = []
for m in p.listen():
    if m["type"] in ("message", "pmessage"):
        got.append("%s %s %s" % (m["type"], m["channel"].decode(), m["data"].decode()))
    if len(got) == 4:
        break
print("\n".join(got))
p.close()
`
	path := filepath.Join(t.TempDir(), "sub.py")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, path, host, port)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
	want := "1 1\nmessage chat hello\npmessage job:1 done\npmessage __keyspace@0__:user set\npmessage __keyspace@0__:queue lpush\n"
	if string(out) != want {
		t.Fatalf("redis-py got:\n%s\nwant:\n%s", out, want)
	}
}

// Subscribing and unsubscribing many channels, patterns and shard channels
// from many clients leaves the server's tables empty, whichever way the
// subscriptions end (UNSUBSCRIBE, RESET, disconnect); CLIENT LIST and INFO
// count them on the way.
func TestPubSubTablesEmptyAfter(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	admin := s.raw()
	const clients, chans = 40, 50
	var conns []*rawConn
	for i := 0; i < clients; i++ {
		r := s.raw()
		conns = append(conns, r)
		var req bytes.Buffer
		args := []string{"SUBSCRIBE"}
		pats := []string{"PSUBSCRIBE"}
		shards := []string{"SSUBSCRIBE"}
		for j := 0; j < chans; j++ {
			args = append(args, fmt.Sprintf("ch:%d:%d", i%4, j))
		}
		for j := 0; j < 5; j++ {
			pats = append(pats, fmt.Sprintf("p:%d:%d*", i%3, j))
			shards = append(shards, fmt.Sprintf("sh:%d:%d", i, j))
		}
		req.Write(encode(args...))
		req.Write(encode(pats...))
		req.Write(encode(shards...))
		r.send(req.Bytes())
		for j := 0; j < chans+10; j++ {
			r.read()
		}
	}
	list := admin.do("CLIENT", "LIST")
	if n := strings.Count(list, "flags=P db=0 sub=50 psub=5 ssub=5"); n != clients {
		t.Fatalf("CLIENT LIST shows %d clients with flags=P sub=50 psub=5 ssub=5, want %d:\n%s", n, clients, list)
	}
	info := admin.do("INFO", "stats")
	for _, want := range []string{"pubsub_channels:200\r\n", "pubsub_patterns:15\r\n", fmt.Sprintf("pubsubshard_channels:%d\r\n", 5*clients)} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO stats lacks %q:\n%s", want, info)
		}
	}
	for i, r := range conns {
		switch i % 3 {
		case 0:
			r.send(append(append(encode("UNSUBSCRIBE"), encode("PUNSUBSCRIBE")...), encode("SUNSUBSCRIBE")...))
			for j := 0; j < chans+10; j++ {
				r.read()
			}
			r.expect("$-1\r\n", "GET", "k") // out of subscribed mode
		case 1:
			r.expect(status("RESET"), "RESET")
			r.expect("$-1\r\n", "GET", "k")
		case 2:
			r.c.Close()
		}
	}
	waitFor(t, 10*time.Second, "the tables to empty", func() bool {
		return admin.do("PUBSUB", "CHANNELS") == "*0\r\n" && admin.do("PUBSUB", "NUMPAT") == ":0\r\n" &&
			admin.do("PUBSUB", "SHARDCHANNELS") == "*0\r\n"
	})
	info = admin.do("INFO", "stats")
	for _, want := range []string{"pubsub_channels:0\r\n", "pubsub_patterns:0\r\n", "pubsubshard_channels:0\r\n"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO stats lacks %q:\n%s", want, info)
		}
	}
	if list := admin.do("CLIENT", "LIST"); strings.Contains(list, "flags=P") {
		t.Fatalf("a client is still flagged P:\n%s", list)
	}
}

// A subscriber that never reads is disconnected, with a log line, once the
// messages it is owed pass the pubsub hard limit (Redis's default 32mb);
// PUBLISH never waits for it, and the memory it held is released.
func TestPubSubSlowSubscriberHardLimit(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	if s.cfg.OutputBuffer.PubsubHardLimit != 32<<20 {
		t.Fatalf("default pubsub hard limit %d, want 32mb", s.cfg.OutputBuffer.PubsubHardLimit)
	}
	slow := s.raw()
	slow.expect(push(2, 1, "subscribe", "firehose"), "SUBSCRIBE", "firehose")
	reader := s.client()
	ps := reader.Subscribe(ctx, "firehose")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	go func() { // a subscriber that reads keeps up, and stays
		for range ps.Channel() {
		}
	}()
	pub := s.client()
	msg := strings.Repeat("x", 64<<10)
	published := 0
	for i := 0; i < 2000 && !strings.Contains(s.logBuf.String(), "closing pubsub client"); i++ {
		if err := pub.Publish(ctx, "firehose", msg).Err(); err != nil {
			t.Fatal(err)
		}
		published++
	}
	waitFor(t, 20*time.Second, "the pubsub hard limit to be logged", func() bool {
		return strings.Contains(s.logBuf.String(), "closing pubsub client that reached the output buffer hard limit")
	})
	if published*len(msg) < 32<<20 {
		t.Fatalf("disconnected after %d bytes of messages, before the limit", published*len(msg))
	}
	if n := drainUntilClosed(t, slow); n > 48<<20 {
		t.Fatalf("read %d bytes before the close: more than the limit allows", n)
	}
	waitFor(t, 10*time.Second, "one subscriber left", func() bool {
		return pub.PubSubNumSub(ctx, "firehose").Val()["firehose"] == 1
	})
	if n := infoInt(t, pub, "stats", "pubsub_clients_disconnected"); n != 1 {
		t.Fatalf("pubsub_clients_disconnected %d, want 1", n)
	}
	waitFor(t, 10*time.Second, "client memory to be released", func() bool {
		return infoInt(t, pub, "clients", "clients_memory") < 8<<20
	})
	if n, err := pub.Publish(ctx, "firehose", "still here").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH after the disconnect: %d, %v", n, err)
	}
}

// Above the pubsub soft limit for longer than its time, a subscriber is
// disconnected too.
func TestPubSubSlowSubscriberSoftLimit(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) {
		c.OutputBuffer.PubsubSoftLimit = 1 << 20
		c.OutputBuffer.PubsubSoftSeconds = time.Millisecond
	})
	needCellar(t, s)
	slow := s.raw()
	slow.expect(push(2, 1, "subscribe", "c"), "SUBSCRIBE", "c")
	pub := s.client()
	msg := strings.Repeat("y", 16<<10)
	for i := 0; i < 20000 && !strings.Contains(s.logBuf.String(), "closing pubsub client"); i++ {
		if err := pub.Publish(ctx, "c", msg).Err(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "the pubsub soft limit to be logged", func() bool {
		return strings.Contains(s.logBuf.String(), "closing pubsub client that stayed above the output buffer soft limit")
	})
	drainUntilClosed(t, slow)
}

// CLIENT LIST and CLIENT INFO describe a subscriber.
func TestPubSubClientList(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	needCellar(t, s)
	r := s.raw()
	r.do("HELLO", "3") // RESP3: CLIENT INFO is allowed while subscribed
	r.send(encode("SUBSCRIBE", "a", "b"))
	r.read()
	r.read()
	r.expect(push(3, 3, "psubscribe", "p*"), "PSUBSCRIBE", "p*")
	r.expect(push(3, 1, "ssubscribe", "s"), "SSUBSCRIBE", "s")
	info := r.do("CLIENT", "INFO")
	if !regexp.MustCompile(` flags=P db=0 sub=2 psub=1 ssub=1 `).MatchString(info) {
		t.Fatalf("CLIENT INFO: %q", info)
	}
	// A subscriber is of type pubsub, for CLIENT LIST and CLIENT KILL.
	admin := s.raw()
	id := r.clientID()
	if got := admin.do("CLIENT", "LIST", "TYPE", "pubsub"); strings.Count(got, "id=") != 1 || !strings.Contains(got, "id="+id+" ") {
		t.Fatalf("CLIENT LIST TYPE pubsub: %q", got)
	}
	if got := admin.do("CLIENT", "LIST", "TYPE", "normal"); strings.Contains(got, "id="+id+" ") {
		t.Fatalf("CLIENT LIST TYPE normal lists the subscriber: %q", got)
	}
	admin.expect(integer(0), "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	admin.expect(integer(1), "CLIENT", "KILL", "TYPE", "pubsub")
	r.expectClosed()
	waitFor(t, 10*time.Second, "the tables to empty", func() bool { return admin.do("PUBSUB", "NUMPAT") == integer(0) })
}

// Subscriptions are client memory: a client that subscribes to channel
// after channel is evicted by maxmemory_clients, like one that holds too
// much input or output, and its subscriptions leave the tables.
func TestPubSubSubscriptionsCountAsClientMemory(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *cellar.Config) { c.MaxMemoryClients = 4 << 20 })
	needCellar(t, s)
	admin := s.raw()
	admin.expect(status("OK"), "CLIENT", "NO-EVICT", "on")
	r := s.raw()
	name := strings.Repeat("c", 48)
	subscribed := 0
	for batch := 0; batch < 200; batch++ {
		args := []string{"SUBSCRIBE"}
		for i := 0; i < 1000; i++ {
			args = append(args, fmt.Sprintf("%s:%d:%d", name, batch, i))
		}
		if _, err := r.c.Write(encode(args...)); err != nil {
			break
		}
		closed := false
		for i := 0; i < 1000; i++ {
			r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := r.reply(); err != nil {
				closed = true
				break
			}
			subscribed++
		}
		if closed {
			break
		}
	}
	t.Logf("evicted after %d subscriptions", subscribed)
	if subscribed < 1000 {
		t.Fatalf("evicted after %d subscriptions: not for what they hold", subscribed)
	}
	if subscribed >= 200*1000 {
		t.Fatal("200000 subscriptions and never evicted")
	}
	if subscribed > (4<<20)/(2*52+160)+2000 {
		t.Fatalf("evicted only after %d subscriptions, more than 4 MB of them", subscribed)
	}
	waitFor(t, 10*time.Second, "the eviction to be logged", func() bool {
		return strings.Contains(s.logBuf.String(), "over maxmemory_clients")
	})
	waitFor(t, 10*time.Second, "the tables to empty", func() bool { return admin.do("PUBSUB", "CHANNELS") == "*0\r\n" })
}
