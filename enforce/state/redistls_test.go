package state

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
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
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files in a temporary directory.
type testPKI struct {
	dir                                   string
	ca, serverCert, serverKey, clientCert string
	clientKey                             string
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	dir := t.TempDir()
	p := &testPKI{dir: dir}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "robots test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	p.ca = p.write(t, "ca.pem", "CERTIFICATE", caDER)
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+"-key.pem", "PRIVATE KEY", kder)
	}
	p.serverCert, p.serverKey = leaf("server", 2, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return p
}

func (p *testPKI) write(t testing.TB, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startTLSRedis starts a redis-server that speaks only TLS, with p's server
// certificate, asking clients for a certificate when clientAuth is set.
func startTLSRedis(t *testing.T, p *testPKI, clientAuth bool) int {
	t.Helper()
	path := requireRedisServer(t)
	auth := "no"
	if clientAuth {
		auth = "yes"
	}
	port := freePort(t)
	cmd := exec.Command(path, "--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--tls-cert-file", p.serverCert, "--tls-key-file", p.serverKey, "--tls-ca-cert-file", p.ca,
		"--tls-auth-clients", auth, "--save", "", "--appendonly", "no", "--dir", p.dir)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a TLS redis-server: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 100*time.Millisecond); err == nil {
			c.Close()
			return port
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the TLS redis-server on port %d did not listen: %s", port, out.String())
	return 0
}

// tlsStore returns a store on rawURL with tlsFiles, the store's default
// per-call timeout (50ms), as the Caddy module builds it.
func tlsStore(t *testing.T, rawURL string, tlsFiles *RedisTLS) *Redis {
	t.Helper()
	opts, err := RedisClientOptions(rawURL, tlsFiles)
	if err != nil {
		t.Fatalf("RedisClientOptions(%s): %v", rawURL, err)
	}
	s, err := NewRedis(RedisConfig{Client: redis.NewUniversalClient(opts), Site: freshSite("tls"), CloseClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestRedisTLSOptions: the CA file verifies the server, the client
// certificate satisfies a server that asks for one, and without them the
// errors say so.
func TestRedisTLSOptions(t *testing.T) {
	p := newTestPKI(t)
	port := startTLSRedis(t, p, true)
	url := fmt.Sprintf("rediss://127.0.0.1:%d", port)
	id := Identity{Name: "tlsbot", Verified: true}

	s := tlsStore(t, url, &RedisTLS{CA: p.ca, Cert: p.clientCert, Key: p.clientKey})
	if err := s.Start(ctx0); err != nil {
		t.Fatalf("Start with CA and client certificate: %v", err)
	}
	for i := range 3 {
		if _, err := s.ThrottlePace(ctx0, id, Pace{Interval: time.Hour}, time.Now()); err != nil {
			t.Fatalf("throttle %d over TLS with the default 50ms call timeout: %v", i, err)
		}
	}
	// A tls block makes a redis:// URL use TLS, the URL's host naming the
	// server.
	if err := tlsStore(t, fmt.Sprintf("redis://127.0.0.1:%d", port), &RedisTLS{CA: p.ca, Cert: p.clientCert, Key: p.clientKey}).Start(ctx0); err != nil {
		t.Fatalf("redis:// with a tls block: %v", err)
	}

	// No client certificate: the server's refusal and the fix.
	err := tlsStore(t, url, &RedisTLS{CA: p.ca}).Start(ctx0)
	if err == nil {
		t.Fatal("Start without a client certificate succeeded against tls-auth-clients yes")
	}
	if h := RedisErrorHint(err); !strings.Contains(h, "tls { cert <file> key <file> }") {
		t.Errorf("hint for %v = %q, want the cert/key fix", err, h)
	}
}

// TestRedisTLSUnknownAuthorityNamed: a server whose certificate this host
// does not trust. The start check names the x509 error, not a deadline, and
// a call cut by the 50ms call timeout carries the cause too.
func TestRedisTLSUnknownAuthorityNamed(t *testing.T) {
	p := newTestPKI(t)
	port := startTLSRedis(t, p, false)
	s := tlsStore(t, fmt.Sprintf("rediss://127.0.0.1:%d", port), nil)
	err := s.Start(ctx0)
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("Start = %v, want an x509.UnknownAuthorityError", err)
	}
	if h := RedisErrorHint(err); !strings.Contains(h, "tls { ca <file> }") {
		t.Errorf("hint = %q, want the CA fix", h)
	}
	_, err = s.Banned(ctx0, Identity{Name: "x", Verified: true}, time.Now())
	if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("a call's error = %v, want it to name the unknown authority", err)
	}
	if err := s.Ping(ctx0); err == nil || !errors.As(err, &unknown) {
		t.Errorf("Ping (the status page's check) = %v, want the unknown authority named", err)
	}
}

// TestRedisPlainToTLSPortNamed: redis:// to a port that speaks only TLS;
// the start check's hint says to use TLS.
func TestRedisPlainToTLSPortNamed(t *testing.T) {
	p := newTestPKI(t)
	port := startTLSRedis(t, p, false)
	err := tlsStore(t, fmt.Sprintf("redis://127.0.0.1:%d", port), nil).Start(ctx0)
	if err == nil {
		t.Fatal("a plain connection to a TLS port answered PING")
	}
	if h := RedisErrorHint(err); !strings.Contains(h, "rediss://") {
		t.Errorf("hint for %v = %q, want one naming rediss://", err, h)
	}
}

// TestRedisRefusedNamed: nothing listens; the start check says so.
func TestRedisRefusedNamed(t *testing.T) {
	s := tlsStore(t, fmt.Sprintf("redis://127.0.0.1:%d", freePort(t)), nil)
	err := s.Start(ctx0)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Start = %v, want connection refused", err)
	}
	if h := RedisErrorHint(err); !strings.Contains(h, "nothing listens") {
		t.Errorf("hint = %q", h)
	}
}

// TestRedisRefusedAtOnce: nothing listens; a call fails on the refused
// connection itself, not on its timeout after go-redis's dial retries
// (five, 100ms apart), which would also make a dead Cluster node cost
// every topology reload that tries it a whole timeout.
func TestRedisRefusedAtOnce(t *testing.T) {
	opts, err := RedisClientOptions(fmt.Sprintf("redis://127.0.0.1:%d", freePort(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewRedis(RedisConfig{Client: redis.NewUniversalClient(opts), Site: freshSite("refused"),
		CloseClient: true, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for i := range 3 {
		_, err := s.Banned(ctx0, Identity{Name: "bot", Verified: true}, time.Now())
		if !errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call %d = %v, want connection refused, not a timeout", i+1, err)
		}
	}
}

// TestRedisTLSFileErrors: unreadable or invalid files are configuration
// errors naming the file.
func TestRedisTLSFileErrors(t *testing.T) {
	p := newTestPKI(t)
	notPEM := filepath.Join(p.dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tls  RedisTLS
		want string
	}{
		{RedisTLS{CA: filepath.Join(p.dir, "missing.pem")}, "missing.pem: no such file"},
		{RedisTLS{CA: notPEM}, "not.pem: no PEM certificate"},
		{RedisTLS{Cert: p.clientCert}, "cert and key go together"},
		{RedisTLS{Cert: p.clientCert, Key: p.serverKey}, "private key does not match"},
		{RedisTLS{Cert: notPEM, Key: p.clientKey}, "not.pem"},
	} {
		_, err := RedisClientOptions("redis://127.0.0.1:6379", &c.tls)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want it to contain %q", c.tls, err, c.want)
		}
	}
}

// slowProxy forwards TCP connections to target, holding the server's first
// bytes on each connection for delay: a link where a TLS handshake takes
// longer than a call may.
func slowProxy(t *testing.T, target string, delay time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			wg.Go(func() { _, _ = io.Copy(u, c); u.Close() })
			wg.Go(func() {
				buf := make([]byte, 32<<10)
				n, err := u.Read(buf)
				if err == nil {
					time.Sleep(delay)
					_, err = c.Write(buf[:n])
				}
				if err == nil {
					_, _ = io.Copy(c, u)
				}
				c.Close()
			})
		}
	})
	return l.Addr().String()
}

// TestRedisSlowHandshakeNotCut: a TLS handshake that takes 300ms, six
// times the default 50ms call timeout, is made at start and in the
// background; calls then succeed within their timeout.
func TestRedisSlowHandshakeNotCut(t *testing.T) {
	p := newTestPKI(t)
	port := startTLSRedis(t, p, false)
	const delay = 300 * time.Millisecond
	addr := slowProxy(t, "127.0.0.1:"+strconv.Itoa(port), delay)
	// The property the test rests on: a fresh handshake takes longer than
	// a call may.
	cfg, err := RedisTLS{CA: p.ca}.Config("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if took := time.Since(start); took < DefaultRedisTimeout {
		t.Fatalf("a handshake through the slow proxy took %s, not more than the call timeout", took)
	}
	s := tlsStore(t, "rediss://"+addr, &RedisTLS{CA: p.ca})
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start through a slow handshake: %v", err)
	}
	id := Identity{Name: "slowlink", Verified: true}
	for i := range 20 {
		if _, err := s.ThrottlePace(ctx0, id, Pace{Interval: time.Millisecond}, time.Now()); err != nil {
			t.Fatalf("call %d after a slow handshake, 50ms call timeout: %v", i, err)
		}
	}
}

// TestRedisTLSHandshakeBoundedByCall: a server that accepts connections and
// never answers the TLS handshake holds a call for its timeout (50ms), not
// for the dial timeout (5s): the dial goes on apart from the call (go-redis
// v9.23's pool; its TLS dialer itself ignores the call's context).
func TestRedisTLSHandshakeBoundedByCall(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // silent: no handshake, no close
			mu.Unlock()
		}
	}()
	s := tlsStore(t, "rediss://"+l.Addr().String(), nil)
	start := time.Now()
	_, err = s.Banned(ctx0, Identity{Name: "mute", Verified: true}, start)
	took := time.Since(start)
	if err == nil {
		t.Fatal("a call to a server that never answers succeeded")
	}
	if took >= DefaultRedisDialTimeout/2 {
		t.Errorf("a call waited %s for a TLS handshake that never came; want about its 50ms timeout, far below the %s dial timeout", took, DefaultRedisDialTimeout)
	}
}
