package tests

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/csv"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cellar-db/cellar/internal/wait"
)

// freePort is a TCP port free on every loopback address right now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key: certKey
// holds both (HAProxy's crt), cert the certificate alone (the clients'
// CA file).
func selfSignedCert(t testing.TB, dir string) (certKey, cert string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "cellar-test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	k := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	certKey, cert = filepath.Join(dir, "cellar.pem"), filepath.Join(dir, "ca.pem")
	os.WriteFile(certKey, append(append([]byte{}, c...), k...), 0o600)
	os.WriteFile(cert, c, 0o644)
	return certKey, cert
}

// haproxyRig is deploy/haproxy/haproxy.cfg running in front of two Cellar
// processes: the primary on 127.0.0.1 and the standby on 127.0.0.2, on
// the same ports (as two hosts would be).
type haproxyRig struct {
	lb, lbTLS         string
	primary, standby  *proc
	primaryDir        string
	cellarPort, hport int
	caFile            string
	haproxy           *exec.Cmd
	haproxyOut        *procOutput
}

func startCellarAt(t *testing.T, host string, port, httpPort int, dir string) *proc {
	t.Helper()
	env := []string{"CELLAR_HTTP__ENABLED=true", "CELLAR_HTTP__BIND=" + host, "CELLAR_HTTP__PORT=" + strconv.Itoa(httpPort),
		"CELLAR_HTTP__DRAIN_DELAY=8s", "CELLAR_SHUTDOWN_TIMEOUT=20s",
		// HAProxy connects from 127.0.0.3 with PROXY headers; the test's
		// own connections come from 127.0.0.1 without. The health checks'
		// address is HAProxy's own, which protected mode would refuse
		// without a password: production sets requirepass (and the
		// check's AUTH, haproxy.cfg says how).
		"CELLAR_PROXY_PROTOCOL=true", "CELLAR_PROXY_PROTOCOL_FROM=127.0.0.3", "CELLAR_PROTECTED_MODE=false"}
	return runCellarEnv(t, env, true, "--bind", host, "--port", strconv.Itoa(port), "--dir", dir, "--durability", "always")
}

func startHAProxyRig(t *testing.T) *haproxyRig {
	t.Helper()
	bin := lookTool(t, "haproxy", "haproxy")
	if c, err := net.Listen("tcp", "127.0.0.2:0"); err != nil {
		t.Skipf("cannot listen on 127.0.0.2 for the standby: %v", err)
	} else {
		c.Close()
	}
	r := &haproxyRig{cellarPort: freePort(t), hport: freePort(t), primaryDir: t.TempDir()}
	r.primary = startCellarAt(t, "127.0.0.1", r.cellarPort, r.hport, r.primaryDir)
	r.standby = startCellarAt(t, "127.0.0.2", r.cellarPort, r.hport, t.TempDir())
	dir := t.TempDir()
	certKey, ca := selfSignedCert(t, dir)
	r.caFile = ca
	r.lb = "127.0.0.1:" + strconv.Itoa(freePort(t))
	r.lbTLS = "127.0.0.1:" + strconv.Itoa(freePort(t))
	r.haproxy = exec.Command(bin, "-db", "-f", "../deploy/haproxy/haproxy.cfg")
	r.haproxy.Env = append(os.Environ(),
		"CELLAR_LB_ADDR="+r.lb, "CELLAR_LB_TLS_ADDR="+r.lbTLS, "CELLAR_LB_CERT="+certKey,
		"CELLAR_PRIMARY=127.0.0.1:"+strconv.Itoa(r.cellarPort), "CELLAR_STANDBY=127.0.0.2:"+strconv.Itoa(r.cellarPort),
		"CELLAR_HTTP_PORT="+strconv.Itoa(r.hport), "CELLAR_LB_SOURCE=127.0.0.3")
	r.haproxyOut = newProcOutput()
	r.haproxy.Stdout, r.haproxy.Stderr = r.haproxyOut, r.haproxyOut
	if err := r.haproxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.haproxy.Process.Signal(syscall.SIGTERM)
		r.haproxy.Wait()
		if t.Failed() {
			t.Logf("haproxy's output:\n%s", r.haproxyOut.String())
		}
	})
	wait.For(t, 20*time.Second, "HAProxy to pass PING to the primary", func() bool {
		return answersPing(t, r.lb) && r.servedBy(t) == "127.0.0.1"
	})
	return r
}

// servedBy is the bind address of the Cellar a new connection through
// HAProxy reaches ("" if none answers).
func (r *haproxyRig) servedBy(t testing.TB) string {
	c := redis.NewClient(&redis.Options{Addr: r.lb, MaxRetries: -1, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, Protocol: 2, DisableIdentity: true})
	defer c.Close()
	v, err := c.ConfigGet(context.Background(), "bind").Result()
	if err != nil {
		return ""
	}
	return v["bind"]
}

// TestHAProxyDeploy runs deploy/haproxy/haproxy.cfg with the real HAProxy:
// go-redis, redis-cli over TLS and redis-benchmark through it; then a
// SIGTERM'd primary drains (its /readyz fails, HAProxy sends new
// connections to the standby while the primary still serves its own) and
// stops without losing an acknowledged write.
func TestHAProxyDeploy(t *testing.T) {
	t.Parallel()
	r := startHAProxyRig(t)
	ctx := context.Background()

	// go-redis through HAProxy.
	c := redis.NewClient(&redis.Options{Addr: r.lb})
	defer c.Close()
	if err := c.Set(ctx, "through", "haproxy", 0).Err(); err != nil {
		t.Fatal(err)
	}
	pipe := c.Pipeline()
	for i := 0; i < 1000; i++ {
		pipe.Incr(ctx, "n")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Get(ctx, "n").Int(); err != nil || n != 1000 {
		t.Fatalf("1000 pipelined INCRs through HAProxy: %d, %v", n, err)
	}

	// Cellar sees the client's own address (PROXY protocol v2).
	rc := dialRaw(t, r.lb)
	info, err := rc.tryDo("CLIENT", "INFO")
	if want := "addr=" + rc.c.LocalAddr().String() + " "; err != nil || !strings.Contains(info, want) {
		t.Fatalf("through HAProxy, CLIENT INFO %q (%v) lacks %q", info, err, want)
	}

	// redis-cli over TLS, terminated by HAProxy.
	cli := needTool(t, "redis-cli")
	host, port, _ := net.SplitHostPort(r.lbTLS)
	out, err := exec.Command(cli, "--tls", "--cacert", r.caFile, "-h", host, "-p", port, "GET", "through").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "haproxy" {
		t.Fatalf("redis-cli --tls GET through: %v %q", err, out)
	}
	out, err = exec.Command(cli, "-h", host, "-p", port, "PING").CombinedOutput()
	if err == nil && strings.TrimSpace(string(out)) == "PONG" {
		t.Fatalf("plain RESP on the TLS port answered: %q", out)
	}

	// redis-benchmark directly and through HAProxy: the overhead, logged.
	rps := func(addr string) map[string]float64 {
		h, p, _ := net.SplitHostPort(addr)
		out, err := exec.Command(needTool(t, "redis-benchmark"), "-h", h, "-p", p, "-t", "set,get", "-n", "20000", "-c", "20", "--csv").Output()
		if err != nil {
			t.Fatalf("redis-benchmark on %s: %v %s", addr, err, out)
		}
		recs, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
		if err != nil {
			t.Fatalf("redis-benchmark --csv: %v\n%s", err, out)
		}
		m := map[string]float64{}
		for _, rec := range recs[1:] {
			m[rec[0]], _ = strconv.ParseFloat(rec[1], 64)
		}
		return m
	}
	direct, via := rps(r.primary.addr), rps(r.lb)
	for _, test := range []string{"SET", "GET"} {
		if direct[test] == 0 || via[test] == 0 {
			t.Fatalf("redis-benchmark %s: direct %v, through HAProxy %v", test, direct, via)
		}
		t.Logf("redis-benchmark %s -c 20: %.0f req/s direct, %.0f through HAProxy (%.2fx)", test, direct[test], via[test], via[test]/direct[test])
	}

	// Drain: writers through HAProxy, one on a kept connection and one on
	// a new connection per write; SIGTERM the primary.
	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	write := func(cl *redis.Client, val string) bool {
		if err := cl.RPush(ctx, "log", val).Err(); err != nil {
			return false
		}
		mu.Lock()
		acked = append(acked, val)
		mu.Unlock()
		return true
	}
	wg.Add(2)
	go func() { // kept connection, reconnecting after errors
		defer wg.Done()
		cl := redis.NewClient(&redis.Options{Addr: r.lb, MaxRetries: -1, PoolSize: 1, Protocol: 2, DisableIdentity: true})
		defer cl.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			write(cl, "kept-"+strconv.Itoa(i))
		}
	}()
	go func() { // a new connection per write
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			cl := redis.NewClient(&redis.Options{Addr: r.lb, MaxRetries: -1, PoolSize: 1, Protocol: 2, DisableIdentity: true})
			write(cl, "new-"+strconv.Itoa(i))
			cl.Close()
		}
	}()
	ackedCount := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	wait.For(t, 20*time.Second, "writes through HAProxy", func() bool { return ackedCount() > 200 })
	r.primary.cmd.Process.Signal(syscall.SIGTERM)
	primaryHTTP := "http://127.0.0.1:" + strconv.Itoa(r.hport)
	wait.For(t, 10*time.Second, "the primary's /readyz to fail", func() bool {
		code, _ := httpGet(t, primaryHTTP+"/readyz")
		return code == 503
	})
	standby := redis.NewClient(&redis.Options{Addr: r.standby.addr})
	defer standby.Close()
	wait.For(t, 20*time.Second, "HAProxy to send new connections to the standby", func() bool {
		n, _ := standby.LLen(ctx, "log").Result()
		return n > 0
	})
	select {
	case <-r.primary.done:
		t.Fatalf("the primary stopped before HAProxy drained it (http.drain_delay too short for the check interval?)")
	default:
	}
	<-r.primary.done
	if r.primary.err != nil {
		t.Fatalf("the primary's exit: %v", r.primary.err)
	}
	if by := r.servedBy(t); by != "127.0.0.2" {
		t.Fatalf("after the primary stopped, new connections reach %q", by)
	}
	n0 := ackedCount()
	wait.For(t, 20*time.Second, "writes to go on on the standby", func() bool { return ackedCount() > n0+100 })
	close(stop)
	wg.Wait()

	// Every acknowledged write is on the primary (restarted on its data)
	// or the standby.
	restarted := runCellar(t, true, "--dir", r.primaryDir)
	have := map[string]bool{}
	for _, addr := range []string{restarted.addr, r.standby.addr} {
		cl := redis.NewClient(&redis.Options{Addr: addr})
		vals, err := cl.LRange(ctx, "log", 0, -1).Result()
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			have[v] = true
		}
	}
	lost := 0
	for _, v := range acked {
		if !have[v] {
			lost++
			if lost < 10 {
				t.Errorf("acknowledged write %s is lost", v)
			}
		}
	}
	t.Logf("%d acknowledged writes through the drain, %d lost", len(acked), lost)
	if lost > 0 {
		t.Fatal(fmt.Sprintf("%d acknowledged writes lost", lost))
	}
}
