package loop

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
)

// The PROXY protocol (HAProxy's proxy-protocol.txt, versions 1 and 2):
// a load balancer that accepts a client's connection opens its own to
// Cellar and first sends a header naming the client's address. With
// proxy_protocol on, a connection from one of the configured balancer
// addresses must start with a valid header; the session then carries the
// client's address (CLIENT LIST, ACL LOG, protected mode, logs). A header
// from any other address, or an invalid one, closes the connection with
// a log line. The session is opened with the actor only once the address
// is known.

// v2Sig is the twelve bytes every version 2 header starts with.
var v2Sig = []byte("\r\n\r\n\x00\r\nQUIT\n")

// v1Max is the longest version 1 header (107 bytes, CRLF included);
// v2Max bounds a version 2 header with its TLVs.
const (
	v1Max = 107
	v2Max = 16 + 4096
)

var (
	errProxyInvalid    = errors.New("invalid PROXY protocol header")
	errProxyNotAllowed = errors.New("PROXY protocol header from an address not in proxy_protocol_from")
)

// parseProxy reads a PROXY header at the start of buf. n is its length
// (0: incomplete, wait for more); addr is the client's address, "" when
// the header names none (v1 UNKNOWN, v2 LOCAL or an unspecified family:
// a balancer's own health check), in which case the balancer's address
// stands.
func parseProxy(buf []byte) (n int, addr string, err error) {
	switch {
	case len(buf) >= len(v2Sig) && bytes.Equal(buf[:len(v2Sig)], v2Sig):
		return parseProxyV2(buf)
	case bytes.HasPrefix(buf, []byte("PROXY ")):
		return parseProxyV1(buf)
	case isPrefix(buf, v2Sig) || isPrefix(buf, []byte("PROXY ")):
		return 0, "", nil
	}
	return 0, "", errProxyInvalid
}

// looksLikeProxy reports whether buf starts like a PROXY header; decided
// false when buf cannot start one, and undecided (more) while it is a
// prefix of one.
func looksLikeProxy(buf []byte) (yes, more bool) {
	for _, sig := range [][]byte{v2Sig, []byte("PROXY ")} {
		if len(buf) >= len(sig) && bytes.Equal(buf[:len(sig)], sig) {
			return true, false
		}
		if isPrefix(buf, sig) {
			more = true
		}
	}
	return false, more
}

func isPrefix(buf, sig []byte) bool {
	return len(buf) < len(sig) && bytes.Equal(buf, sig[:len(buf)])
}

// parseProxyV1: "PROXY TCP4|TCP6 src dst sport dport\r\n" or
// "PROXY UNKNOWN ...\r\n".
func parseProxyV1(buf []byte) (int, string, error) {
	end := bytes.Index(buf, []byte("\r\n"))
	if end < 0 {
		if len(buf) >= v1Max {
			return 0, "", errProxyInvalid
		}
		return 0, "", nil
	}
	if end+2 > v1Max {
		return 0, "", errProxyInvalid
	}
	f := bytes.Split(buf[:end], []byte(" "))
	if len(f) >= 2 && string(f[1]) == "UNKNOWN" {
		return end + 2, "", nil
	}
	if len(f) != 6 {
		return 0, "", errProxyInvalid
	}
	src, dst := net.ParseIP(string(f[2])), net.ParseIP(string(f[3]))
	sport, ok1 := parsePort(f[4])
	_, ok2 := parsePort(f[5])
	if src == nil || dst == nil || !ok1 || !ok2 {
		return 0, "", errProxyInvalid
	}
	switch string(f[1]) {
	case "TCP4":
		if src.To4() == nil || dst.To4() == nil || bytes.IndexByte(f[2], ':') >= 0 {
			return 0, "", errProxyInvalid
		}
	case "TCP6":
		if bytes.IndexByte(f[2], ':') < 0 || bytes.IndexByte(f[3], ':') < 0 {
			return 0, "", errProxyInvalid
		}
	default:
		return 0, "", errProxyInvalid
	}
	return end + 2, net.JoinHostPort(src.String(), strconv.Itoa(sport)), nil
}

// parsePort is a decimal port without sign or leading zeros.
func parsePort(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 5 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, v <= 65535
}

// parseProxyV2: the signature, version and command, family and protocol,
// the length of what follows, the addresses, then TLVs (skipped).
func parseProxyV2(buf []byte) (int, string, error) {
	if len(buf) < 16 {
		return 0, "", nil
	}
	verCmd, fam := buf[12], buf[13]
	size := 16 + int(binary.BigEndian.Uint16(buf[14:16]))
	if verCmd>>4 != 2 || verCmd&0xF > 1 || size > v2Max {
		return 0, "", errProxyInvalid
	}
	if len(buf) < size {
		return 0, "", nil
	}
	body := buf[16:size]
	if verCmd&0xF == 0 { // LOCAL: the balancer's own connection
		return size, "", nil
	}
	switch fam {
	case 0x11: // TCP over IPv4
		if len(body) < 12 {
			return 0, "", errProxyInvalid
		}
		ip := net.IP(append([]byte(nil), body[0:4]...))
		return size, net.JoinHostPort(ip.String(), strconv.Itoa(int(binary.BigEndian.Uint16(body[8:10])))), nil
	case 0x21: // TCP over IPv6
		if len(body) < 36 {
			return 0, "", errProxyInvalid
		}
		ip := net.IP(append([]byte(nil), body[0:16]...))
		return size, net.JoinHostPort(ip.String(), strconv.Itoa(int(binary.BigEndian.Uint16(body[32:34])))), nil
	case 0x00: // UNSPEC
		return size, "", nil
	}
	return 0, "", errProxyInvalid
}

// proxyAllowed reports whether addr (host:port) is one of the configured
// load balancers.
func (s *Server) proxyAllowed(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	for _, n := range s.cfg.ProxyFrom {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// ParseProxyFrom parses proxy_protocol_from: addresses or CIDR networks.
func ParseProxyFrom(list []string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, s := range list {
		if _, n, err := net.ParseCIDR(s); err == nil {
			out = append(out, n)
			continue
		}
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, errors.New("loop: proxy_protocol_from: not an address or a network: " + strconv.Quote(s))
		}
		bits := 128
		if ip.To4() != nil {
			ip, bits = ip.To4(), 32
		}
		out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
	}
	return out, nil
}

// proxyHeader handles the start of a connection while a PROXY header is
// expected (from a balancer) or forbidden (from anyone else, with the
// protocol on). It returns false while the connection must wait for more
// bytes or is closing.
func (c *conn) proxyHeader() bool {
	srv := c.lp.srv
	buf, _ := c.gc.Peek(-1)
	if !c.proxyWant {
		yes, more := looksLikeProxy(buf)
		switch {
		case yes:
			srv.log.Warn().Str("addr", c.addr).Msg("closing a connection: PROXY protocol header from an address not in proxy_protocol_from")
			c.closeNow(errProxyNotAllowed)
			return false
		case more:
			return false
		}
		c.proxyCheck = false
		return true
	}
	n, addr, err := parseProxy(buf)
	if err != nil {
		srv.log.Warn().Str("addr", c.addr).Msg("closing a connection: invalid PROXY protocol header")
		c.closeNow(errProxyInvalid)
		return false
	}
	if n == 0 {
		return false
	}
	c.gc.Discard(n)
	srv.netIn.Add(uint64(n))
	c.proxyWant, c.proxyCheck = false, false
	if addr != "" {
		c.addr = addr
	}
	return c.admit()
}
