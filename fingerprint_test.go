package caddyrobots

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/agents/ja4"
)

var ja4Shape = regexp.MustCompile(`^[tq](13|12|11|10|s3|s2|d1|d2|d3|00)[di][0-9]{4}[0-9A-Za-z]{2}_[0-9a-f]{12}_[0-9a-f]{12}$`)

// recordedHello reads a ClientHello recorded in agents/ja4/testdata.
func recordedHello(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("agents/ja4/testdata/clienthellos/" + name + ".hex")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// chunkedConn is the server side of a connection whose client wrote data
// in pieces of the given sizes (cycled): each Read returns at most one
// piece, as TCP may.
type chunkedConn struct {
	net.Conn // nil: only Read is used
	data     []byte
	sizes    []int
	i        int
}

func (c *chunkedConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), c.sizes[c.i%len(c.sizes)])
	c.i++
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// TestFingerprintConnObserves: whatever pieces the record arrives in, the
// bytes the TLS layer reads are the bytes sent, unchanged and in full, and
// the connection's fingerprint is the record's JA4.
func TestFingerprintConnObserves(t *testing.T) {
	rec := recordedHello(t, "chromium-headed")
	want, err := ja4.ParseClientHello(rec)
	if err != nil {
		t.Fatal(err)
	}
	after := []byte("more handshake bytes that follow the first record")
	sent := append(append([]byte{}, rec...), after...)
	for _, sizes := range [][]int{{len(sent)}, {1}, {3}, {4, 1, 700}, {5}, {6, 2000}, {512}} {
		fc := &fingerprintConn{Conn: &chunkedConn{data: sent, sizes: sizes}}
		got, err := io.ReadAll(readerOnly{fc})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, sent) {
			t.Fatalf("pieces %v: the TLS layer read %d bytes, not the %d sent", sizes, len(got), len(sent))
		}
		fp := fc.fp.Load()
		if fp == nil || fp.JA4 != want.JA4() {
			t.Errorf("pieces %v: fingerprint %+v, want %s", sizes, fp, want.JA4())
		}
		if fc.partial != nil || !fc.done {
			t.Errorf("pieces %v: the record's buffer is kept after parsing", sizes)
		}
	}
	// What is not a TLS handshake passes through, with no fingerprint; a
	// handshake record that is not a readable ClientHello leaves its error.
	for in, readable := range map[string]bool{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n":        false,
		"\x16\x03\x01\xff\xffjunk":                 false,
		"\x16\x03\x01\x00\x05\x02\x00\x00\x01\x00": true,
	} {
		fc := &fingerprintConn{Conn: &chunkedConn{data: []byte(in), sizes: []int{2}}}
		got, _ := io.ReadAll(readerOnly{fc})
		fp := fc.fp.Load()
		if string(got) != in || (fp != nil) != readable || fp != nil && (fp.Err == nil || fp.Hello != nil || fp.JA4 != "") {
			t.Errorf("%q: read %q, fingerprint %+v", in, got, fp)
		}
	}
}

// readerOnly hides everything but Read (io.ReadAll needs nothing else).
type readerOnly struct{ io.Reader }

// TestFingerprintListenerHandshake: through a real TCP listener wrapped as
// Caddy wraps it, Go's crypto/tls completes its handshake unaware, and the
// connection-context hook finds the fingerprint under the *tls.Conn, as
// the server hands it. The JA4 is that of Go's ClientHello.
func TestFingerprintListenerHandshake(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wrapper := &FingerprintListener{}
	tlsLn := tls.NewListener(wrapper.WrapListener(ln), &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, NextProtos: []string{"h2", "http/1.1"}})
	defer tlsLn.Close()
	type result struct {
		ctx  context.Context
		line string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		c, err := tlsLn.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer c.Close()
		ctx := fingerprintConnContext(context.Background(), c) // before the handshake, as net/http calls it
		buf := make([]byte, 5)
		_, err = io.ReadFull(c, buf)
		done <- result{ctx, string(buf), err}
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, ServerName: "example.test", NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || res.line != "hello" {
		t.Fatalf("server read %q, %v", res.line, res.err)
	}
	fc, _ := res.ctx.Value(fingerprintCtxKey{}).(*fingerprintConn)
	if fc == nil {
		t.Fatal("the connection context holds no fingerprinted connection")
	}
	fp := fc.fp.Load()
	if fp == nil {
		t.Fatal("no fingerprint after the handshake")
	}
	// Go's crypto/tls: no GREASE, TLS 1.3, SNI, h2, and the same JA4 as
	// the Go client recorded in agents/ja4/testdata (same Go, defaults).
	goRec, err := ja4.ParseClientHello(recordedHello(t, "go-nethttp"))
	if err != nil {
		t.Fatal(err)
	}
	if fp.JA4 != goRec.JA4() || fp.Hello.GREASE.Any() || !strings.HasPrefix(fp.JA4, "t13d") {
		t.Errorf("Go's handshake: %s (GREASE %+v), want %s", fp.JA4, fp.Hello.GREASE, goRec.JA4())
	}
}

func selfSigned(t testing.TB) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "example.test"}, DNSNames: []string{"example.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// fingerprintedRequest is a request as Caddy's server prepares it over a
// connection fingerprinted from the recorded hello name ("": a hello that
// could not be read; "-": a connection without the wrapper): net/http's
// context layers (server, connection hook, local address, cancel), then
// Caddy's (replacer, vars, ...).
func fingerprintedRequest(t testing.TB, name, ua string) (*http.Request, *fingerprintConn, func() *http.Request) {
	t.Helper()
	fc := &fingerprintConn{}
	fc.provider = fc.placeholder
	if name != "" && name != "-" {
		fc.finish(recordedHello(t, name))
	}
	base := context.WithValue(context.Background(), http.ServerContextKey, &http.Server{})
	if name != "-" {
		base = fingerprintConnContext(base, tls.Client(fc, &tls.Config{}))
	}
	base = context.WithValue(base, http.LocalAddrContextKey, &net.TCPAddr{})
	base, cancel := context.WithCancel(base)
	t.Cleanup(cancel)
	raw, clientIP := rawRequest("/private/index.html", ua, "203.0.113.1:5000")
	for _, hd := range chromeHeaders {
		k, v, _ := strings.Cut(hd, ":")
		raw.Header.Set(k, strings.TrimSpace(v))
	}
	raw = raw.WithContext(base)
	raw.TLS = &tls.ConnectionState{}
	srv := &caddyhttp.Server{}
	w := httptest.NewRecorder()
	fresh := func() *http.Request { return freshRequest(raw, clientIP, w, srv) }
	return fresh(), fc, fresh
}

// TestTLSFingerprintPlaceholder: {http.robots.tls_fingerprint} is the
// connection's JA4 on every request over a fingerprinted connection,
// empty when its first record could not be read, and unknown (left as
// written) without the wrapper or over plain HTTP; tlsFingerprintOf agrees.
func TestTLSFingerprintPlaceholder(t *testing.T) {
	const ph = "{http.robots.tls_fingerprint}"
	replace := func(r *http.Request) string {
		return r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer).ReplaceKnown(ph, "")
	}
	r, fc, _ := fingerprintedRequest(t, "curl", benchBrowserUA)
	offerTLSFingerprint(r)
	want := fc.fp.Load().JA4
	if got := replace(r); got != want || !ja4Shape.MatchString(got) {
		t.Errorf("placeholder %q, want %q", got, want)
	}
	if fp, ok := tlsFingerprintOf(r); !ok || fp.JA4 != want || fp.Hello.GREASE.Any() {
		t.Errorf("tlsFingerprintOf = %+v, %v", fp, ok)
	}

	r, fc, _ = fingerprintedRequest(t, "", benchBrowserUA) // no hello seen
	offerTLSFingerprint(r)
	if got := replace(r); got != "" {
		t.Errorf("no hello: placeholder %q, want empty", got)
	}
	if fp, ok := tlsFingerprintOf(r); ok || fp != nil {
		t.Errorf("no hello: tlsFingerprintOf = %+v, %v", fp, ok)
	}
	rec := recordedHello(t, "curl")
	fc.finish(rec[:len(rec)-1]) // an unreadable one (cut short)
	if fp, ok := tlsFingerprintOf(r); ok || fp == nil || !errors.Is(fp.Err, ja4.ErrTruncated) || replace(r) != "" {
		t.Errorf("unreadable hello: tlsFingerprintOf = %+v, %v; placeholder %q", fp, ok, replace(r))
	}

	r, _ = prepared("GET", "/", benchBrowserUA, "203.0.113.1:5000") // plain HTTP
	offerTLSFingerprint(r)
	if got := replace(r); got != ph {
		t.Errorf("plain HTTP: placeholder %q, want it left as written", got)
	}
	r.TLS = &tls.ConnectionState{} // HTTPS without the wrapper (or HTTP/3)
	offerTLSFingerprint(r)
	if _, ok := tlsFingerprintOf(r); ok || replace(r) != ph {
		t.Errorf("HTTPS without the wrapper: tlsFingerprintOf %v, placeholder %q", ok, replace(r))
	}
}

// TestFingerprintListenerCaddyfile: the wrapper takes no arguments and no
// options.
func TestFingerprintListenerCaddyfile(t *testing.T) {
	for in, ok := range map[string]bool{
		"robots_fingerprint":             true,
		"robots_fingerprint x":           false,
		"robots_fingerprint {\n\tfoo\n}": false,
	} {
		err := new(FingerprintListener).UnmarshalCaddyfile(caddyfile.NewTestDispenser(in))
		if (err == nil) != ok {
			t.Errorf("%q: %v", in, err)
		}
	}
	if _, err := caddy.GetModule("caddy.listeners.robots_fingerprint"); err != nil {
		t.Error(err)
	}
}

// BenchmarkFingerprintConn is the per-connection cost of the wrapper:
// the wrapping, watching Chromium's ClientHello go by in one Read, parsing
// it, computing its JA4 and classifying its engine (ja4.Classify), all once
// per connection.
func BenchmarkFingerprintConn(b *testing.B) {
	rec := recordedHello(b, "chromium-headed")
	cc := &chunkedConn{}
	buf := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		cc.data, cc.sizes = rec, []int{len(rec)}
		fc := &fingerprintConn{Conn: cc}
		fc.provider = fc.placeholder
		if _, err := fc.Read(buf); err != nil || fc.fp.Load() == nil {
			b.Fatal("no fingerprint")
		}
	}
}

// BenchmarkFingerprintListener is the wrapper's cost per connection as a
// server pays it, over a real loopback connection: accept, a full TLS 1.3
// handshake (Go's client and server, no session resumption), one byte each
// way, close; "wrapper" with robots_fingerprint under crypto/tls (as
// Caddy's listener_wrappers place it: reading the ClientHello, its JA4 and
// its engine), "none" without it. The difference of the two is the
// wrapper's cost per connection, their ratio how much more a new
// connection costs with it. Both ends run in the process, so ns/op counts
// the client's handshake too.
func BenchmarkFingerprintListener(b *testing.B) {
	cert := selfSigned(b)
	b.Run("none", func(b *testing.B) { benchHandshakes(b, cert, false) })
	b.Run("wrapper", func(b *testing.B) { benchHandshakes(b, cert, true) })
}

// benchHandshakes runs b.N connections to a TLS listener on loopback,
// wrapped by robots_fingerprint when wrapped.
func benchHandshakes(b *testing.B, cert tls.Certificate, wrapped bool) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	inner := ln
	if wrapped {
		inner = new(FingerprintListener).WrapListener(ln)
	}
	tlsLn := tls.NewListener(inner, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	served := make(chan error, 1)
	go func() { served <- serveHandshakes(tlsLn, wrapped) }()
	fail := func(err error) {
		b.Helper()
		tlsLn.Close()
		b.Fatalf("%v (server: %v)", err, <-served)
	}
	cfg := &tls.Config{InsecureSkipVerify: true, ServerName: "example.test", NextProtos: []string{"http/1.1"}}
	reply := make([]byte, 1)
	b.ReportAllocs()
	for b.Loop() {
		c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			fail(err)
		}
		if _, err := c.Write([]byte{'x'}); err != nil {
			fail(err)
		}
		// The reply, then the server's close: its work is within the op,
		// and the server closes first (its side keeps the TIME_WAIT, not
		// the client's ephemeral ports).
		if _, err := io.ReadFull(c, reply); err != nil {
			fail(err)
		}
		if _, err := c.Read(reply); err != io.EOF {
			fail(fmt.Errorf("after the reply: %v, want EOF", err))
		}
		c.Close()
	}
	b.StopTimer()
	tlsLn.Close()
	if err := <-served; err != nil {
		b.Fatal(err)
	}
}

// serveHandshakes serves the connections of ln one at a time until ln is
// closed: the handshake, one byte read and one written, a close. A wrapped
// listener's connections must carry a JA4 and the others none, so that
// the two sides of BenchmarkFingerprintListener measure what they say.
func serveHandshakes(ln net.Listener, wrapped bool) error {
	buf := make([]byte, 1)
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return nil
		} else if err != nil {
			return fmt.Errorf("accept: %w", err)
		}
		_, err = io.ReadFull(c, buf) // completes the handshake first
		fc := fingerprintConnOf(c)
		switch {
		case err != nil:
		case wrapped && (fc == nil || fc.fp.Load() == nil || fc.fp.Load().JA4 == ""):
			err = errors.New("a wrapped connection carries no JA4")
		case !wrapped && fc != nil:
			err = errors.New("a connection without the wrapper is fingerprinted")
		default:
			_, err = c.Write(buf)
		}
		if cerr := c.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("serving a connection: %w", err)
		}
	}
}

// BenchmarkOfferTLSFingerprint is the per-request cost of the placeholder
// on the handler's path, over a fingerprinted connection: two context
// reads and an append to the request's provider list (already grown by
// Caddy, so no allocation). Requests are prepared in batches, untimed.
func BenchmarkOfferTLSFingerprint(b *testing.B) {
	_, _, fresh := fingerprintedRequest(b, "chromium-headed", benchBrowserUA)
	const batch = 16
	reqs := make([]*http.Request, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		b.StopTimer()
		n := min(batch, b.N-i)
		for j := range n {
			reqs[j] = fresh()
		}
		b.StartTimer()
		for _, r := range reqs[:n] {
			offerTLSFingerprint(r)
		}
	}
}

// BenchmarkTLSFingerprintOf is the judgement's read of the fingerprint: a
// context read and an atomic load.
func BenchmarkTLSFingerprintOf(b *testing.B) {
	r, _, _ := fingerprintedRequest(b, "chromium-headed", benchBrowserUA)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := tlsFingerprintOf(r); !ok {
			b.Fatal("no fingerprint")
		}
	}
}

// BenchmarkServeHTTPBrowserFingerprint is a person's request over a
// fingerprinted HTTPS connection through the whole handler, requests
// prepared in batches as in BenchmarkServeHTTPBrowserOnly.
func BenchmarkServeHTTPBrowserFingerprint(b *testing.B) {
	benchServeHTTPS(b, "chromium-headed")
}

// BenchmarkServeHTTPBrowserNoFingerprint is BenchmarkServeHTTPBrowserFingerprint
// without the wrapper: the difference is the per-request cost of the
// wrapper.
func BenchmarkServeHTTPBrowserNoFingerprint(b *testing.B) {
	benchServeHTTPS(b, "-")
}

func benchServeHTTPS(b *testing.B, hello string) {
	h, done := newTestHandler(b, &Handler{})
	defer done()
	h.logger, h.debug = zap.NewNop(), false
	r, _, fresh := fingerprintedRequest(b, hello, benchBrowserUA)
	w := httptest.NewRecorder()
	_ = h.ServeHTTP(w, r, nopNext)
	const batch = 16
	reqs := make([]*http.Request, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		b.StopTimer()
		n := min(batch, b.N-i)
		for j := range n {
			reqs[j] = fresh()
		}
		b.StartTimer()
		for _, r := range reqs[:n] {
			_ = h.ServeHTTP(w, r, nopNext)
		}
	}
}

// TestTLSFingerprintHeaderOption: the robots directive's
// tls_fingerprint_header takes one header name; Provision writes it in
// canonical form and refuses what is not a header name (from JSON).
func TestTLSFingerprintHeaderOption(t *testing.T) {
	for src, want := range map[string]string{
		"robots {\n\ttls_fingerprint_header cf-ja4\n}":       "cf-ja4",
		"robots {\n\ttls_fingerprint_header\n}":              "error",
		"robots {\n\ttls_fingerprint_header a b\n}":          "error",
		"robots {\n\ttls_fingerprint_header \"X JA4\"\n}":    "error",
		"robots {\n\ttls_fingerprint_header X-JA4:\n}":       "error",
		"robots {\n\ttls_fingerprint_header X-Client-JA4\n}": "X-Client-JA4",
	} {
		h := new(Handler)
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(src))
		if got := h.TLSFingerprintHeader; (err != nil) != (want == "error") || err == nil && got != want {
			t.Errorf("%q: header %q, error %v; want %s", src, got, err, want)
		}
	}
	h := &Handler{TLSFingerprintHeader: "cf-ja4"}
	if err := h.provisionFingerprint(); err != nil || h.TLSFingerprintHeader != "Cf-Ja4" {
		t.Errorf("provision: %q, %v; want the canonical Cf-Ja4", h.TLSFingerprintHeader, err)
	}
	h = &Handler{TLSFingerprintHeader: "x ja4"}
	if err := h.provisionFingerprint(); err == nil {
		t.Error("provision accepted a header name with a space")
	}
}

// TestTLSEngineOf: the engine is worked out with the fingerprint, once per
// connection: a library's hello gives Library, Chromium's Chromium, and a
// connection without a readable hello no verdict.
func TestTLSEngineOf(t *testing.T) {
	for name, want := range map[string]ja4.Engine{"curl": ja4.Library, "chromium-headed": ja4.Chromium, "firefox-esr-headed": ja4.Firefox, "go-nethttp": ja4.Library} {
		r, fc, _ := fingerprintedRequest(t, name, benchBrowserUA)
		v, ok := (&Handler{}).tlsEngineOf(r)
		if !ok || v.Engine != want || v != fc.fp.Load().Verdict {
			t.Errorf("%s: %+v, %v; want %v, stored with the fingerprint", name, v, ok, want)
		}
		offerTLSFingerprint(r)
		if got := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer).ReplaceKnown("{http.robots.tls_engine}", "-"); got != want.String() {
			t.Errorf("%s: {http.robots.tls_engine} %q, want %q", name, got, want)
		}
	}
	r, _, _ := fingerprintedRequest(t, "", benchBrowserUA)
	if v, ok := (&Handler{}).tlsEngineOf(r); ok || v.Engine != ja4.Unknown {
		t.Errorf("no hello: %+v, %v", v, ok)
	}
}
