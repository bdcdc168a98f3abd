package tests

import "testing"

// The (un)subscribe confirmations are pushes in Redis, in RESP2 as in
// RESP3: CLIENT REPLY OFF and SKIP do not drop them (a client that
// subscribes with replies off still learns it is subscribed).
func TestClientReplyOffSubscribeConfirms(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, resp := range []string{"2", "3"} {
		t.Run("RESP"+resp, func(t *testing.T) {
			hdr := "*3\r\n"
			null := "$-1\r\n"
			if resp == "3" {
				hdr, null = ">3\r\n", "_\r\n"
			}
			conf := func(kind, name string, n int64) string {
				if name == "" {
					return hdr + bulk(kind) + null + integer(n)
				}
				return hdr + bulk(kind) + bulk(name) + integer(n)
			}
			c, pub := dialRaw(t, s.addr), dialRaw(t, s.addr)
			c.do("HELLO", resp)
			c.send(encode("CLIENT", "REPLY", "OFF"))
			c.send(encode("SUBSCRIBE", "c1", "c2"))
			c.send(encode("PSUBSCRIBE", "p*"))
			c.send(encode("SSUBSCRIBE", "s1"))
			for _, want := range []string{
				conf("subscribe", "c1", 1), conf("subscribe", "c2", 2),
				conf("psubscribe", "p*", 3), conf("ssubscribe", "s1", 1),
			} {
				if got := c.read(); got != want {
					t.Fatalf("confirmation with replies off: got %q, want %q", got, want)
				}
			}
			pub.expect(integer(1), "PUBLISH", "c1", "m")
			if got, want := c.read(), hdr+bulk("message")+bulk("c1")+bulk("m"); got != want {
				t.Fatalf("message: got %q, want %q", got, want)
			}
			c.send(encode("UNSUBSCRIBE", "c1"))
			c.send(encode("PUNSUBSCRIBE"))
			c.send(encode("SUNSUBSCRIBE", "s1"))
			c.send(encode("UNSUBSCRIBE"))
			c.send(encode("UNSUBSCRIBE"))
			c.send(encode("PING")) // silenced: no reply
			c.send(encode("CLIENT", "REPLY", "ON"))
			for _, want := range []string{
				conf("unsubscribe", "c1", 2), conf("punsubscribe", "p*", 1),
				conf("sunsubscribe", "s1", 0), conf("unsubscribe", "c2", 0),
				conf("unsubscribe", "", 0), status("OK"),
			} {
				if got := c.read(); got != want {
					t.Fatalf("with replies off: got %q, want %q", got, want)
				}
			}
			// SKIP: the confirmation stays, SUBSCRIBE is the skipped command.
			k := dialRaw(t, s.addr)
			k.do("HELLO", resp)
			k.send(encode("CLIENT", "REPLY", "SKIP"))
			k.send(encode("SUBSCRIBE", "x"))
			if got, want := k.read(), conf("subscribe", "x", 1); got != want {
				t.Fatalf("SUBSCRIBE after SKIP: got %q, want %q", got, want)
			}
			pong := "*2\r\n" + bulk("pong") + bulk("")
			if resp == "3" {
				pong = status("PONG")
			}
			k.expect(pong, "PING")
		})
	}
}
