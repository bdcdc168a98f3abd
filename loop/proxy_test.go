package loop

import (
	"encoding/binary"
	"testing"
)

// Every valid header parses whole, and every proper prefix of it asks for
// more (a header may arrive in pieces); the address is the client's.
func TestParseProxySplit(t *testing.T) {
	v2 := func(fam byte, body []byte) []byte {
		h := append([]byte(nil), v2Sig...)
		h = append(h, 0x21, fam, 0, 0)
		binary.BigEndian.PutUint16(h[14:], uint16(len(body)))
		return append(h, body...)
	}
	v4body := []byte{192, 0, 2, 1, 10, 0, 0, 1, 0x30, 0x39, 0x18, 0xEB, 0x01, 0x00, 0x00}
	v6body := make([]byte, 36)
	v6body[0], v6body[1], v6body[15] = 0x20, 0x01, 0x09
	binary.BigEndian.PutUint16(v6body[32:], 443)
	for _, c := range []struct {
		hdr  []byte
		addr string
	}{
		{[]byte("PROXY TCP4 192.0.2.1 10.0.0.1 12345 6379\r\n"), "192.0.2.1:12345"},
		{[]byte("PROXY TCP6 2001:db8::1 ::1 1 6379\r\n"), "[2001:db8::1]:1"},
		{[]byte("PROXY UNKNOWN\r\n"), ""},
		{v2(0x11, v4body), "192.0.2.1:12345"},
		{v2(0x21, v6body), "[2001::9]:443"},
		{append(append([]byte(nil), v2Sig...), 0x20, 0x00, 0, 0), ""},
	} {
		for i := 0; i < len(c.hdr); i++ {
			if n, _, err := parseProxy(c.hdr[:i]); n != 0 || err != nil {
				t.Fatalf("%q cut at %d: n=%d err=%v", c.hdr, i, n, err)
			}
		}
		rest := append(append([]byte(nil), c.hdr...), "*1\r\n$4\r\nPING\r\n"...)
		n, addr, err := parseProxy(rest)
		if err != nil || n != len(c.hdr) || addr != c.addr {
			t.Fatalf("%q: n=%d addr=%q err=%v", c.hdr, n, addr, err)
		}
	}
	for _, bad := range []string{
		"PROXY TCP4 192.0.2.1 10.0.0.1 12345\r\n",
		"PROXY TCP5 192.0.2.1 10.0.0.1 1 2\r\n",
		"PROXY TCP4 192.0.2.1 10.0.0.1 65536 2\r\n",
		"PROXY TCP6 192.0.2.1 ::1 1 2\r\n",
		"PROXY  TCP4 192.0.2.1 10.0.0.1 1 2\r\n",
		"GET k\r\n",
	} {
		if _, _, err := parseProxy([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParseProxy(f *testing.F) {
	f.Add([]byte("PROXY TCP4 192.0.2.1 10.0.0.1 12345 6379\r\n"))
	f.Add(append(append([]byte(nil), v2Sig...), 0x21, 0x11, 0, 12, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 0, 2))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, _, err := parseProxy(b)
		if err == nil && n > len(b) {
			t.Fatalf("consumed %d of %d", n, len(b))
		}
	})
}
