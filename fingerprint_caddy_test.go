package caddyrobots

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/standard"
	_ "github.com/caddyserver/caddy/v2/modules/caddytls"

	"github.com/caddyrobots/caddy-robots/internal/freeport"
)

// The fingerprint a judgement rests on, through a real Caddy: Caddy's own
// server decides whether the peer is a trusted proxy (trusted_proxies),
// and the handler's fingerprintOf and offerFingerprint read what that
// decision allows. Until the pipeline calls them from ServeHTTP, a
// test-only handler (fingerprintProbe) calls them as ServeHTTP will, in a
// config Caddy loads and serves for real.

func init() {
	caddy.RegisterModule(fingerprintProbe{})
}

// fingerprintProbe is a test-only HTTP handler: it offers the placeholder
// and reports, in X-Engine, the engine of the fingerprint fingerprintOf
// returns ("none" without one) and in X-Fingerprint its JA4.
type fingerprintProbe struct {
	Header string `json:"header,omitempty"`
	h      *Handler
}

func (fingerprintProbe) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.robots_test_fingerprint", New: func() caddy.Module { return new(fingerprintProbe) }}
}

func (p *fingerprintProbe) Provision(caddy.Context) error {
	p.h = &Handler{TLSFingerprintHeader: p.Header}
	return p.h.provisionFingerprint()
}

func (p *fingerprintProbe) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	p.h.offerFingerprint(r)
	engine, ja := "none", ""
	if fp, ok := p.h.fingerprintOf(r); ok {
		engine, ja = fp.Verdict.Engine.String(), fp.JA4
		if v, _ := p.h.tlsEngineOf(r); v != fp.Verdict {
			engine = "tlsEngineOf disagrees"
		}
	}
	w.Header().Set("X-Engine", engine)
	w.Header().Set("X-Fingerprint", ja)
	return next.ServeHTTP(w, r)
}

// probeConfig is a config with one server on 127.0.0.1:port that trusts
// the proxies in trusted (none when empty), runs the probe (reading
// header, "" for none) and answers "fp={http.robots.tls_fingerprint}";
// with certFile, over HTTPS with robots_fingerprint wrapping its listener.
func probeConfig(t *testing.T, port int, trusted, header, certFile, keyFile string) []byte {
	t.Helper()
	srv := map[string]any{
		"listen": []string{fmt.Sprintf("127.0.0.1:%d", port)},
		"routes": []any{map[string]any{"handle": []any{
			map[string]any{"handler": "robots_test_fingerprint", "header": header},
			map[string]any{"handler": "static_response", "body": "fp={http.robots.tls_fingerprint}"},
		}}},
		"automatic_https": map[string]any{"disable": true},
		// freeport holds the UDP port too: no HTTP/3.
		"protocols": []string{"h1", "h2"},
	}
	if trusted != "" {
		srv["trusted_proxies"] = map[string]any{"source": "static", "ranges": []string{trusted}}
	}
	apps := map[string]any{"http": map[string]any{"servers": map[string]any{"probe": srv}}}
	if certFile != "" {
		srv["listener_wrappers"] = []any{map[string]any{"wrapper": "robots_fingerprint"}, map[string]any{"wrapper": "tls"}}
		srv["tls_connection_policies"] = []any{map[string]any{}}
		apps["tls"] = map[string]any{"certificates": map[string]any{"load_files": []any{map[string]any{"certificate": certFile, "key": keyFile}}}}
	}
	cfg, err := json.Marshal(map[string]any{
		"admin":   map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
		"storage": map[string]any{"module": "file_system", "root": t.TempDir()},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"level": "ERROR"}}},
		"apps":    apps,
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// runCaddy loads cfg into the process's Caddy and stops it when the test
// ends.
func runCaddy(t *testing.T, cfg []byte) {
	t.Helper()
	if err := caddy.Load(cfg, true); err != nil {
		t.Fatalf("loading the config: %v\n%s", err, cfg)
	}
	t.Cleanup(func() { _ = caddy.Stop() })
}

// probe sends a GET with header (name: value, none when name is "") and
// returns the body and the probe's X-Engine and X-Fingerprint.
func probe(t *testing.T, client *http.Client, url, name, value string) (body, engine, fp string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if name != "" {
		req.Header.Set(name, value)
	}
	// Right after a config load, a connection the kernel queued on the
	// previous server's socket (SO_REUSEPORT) as it closed is reset, or
	// closed unread: that request was never served, so it is sent again.
	res, err := client.Do(req)
	for attempt := 0; err != nil && attempt < 3 && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)); attempt++ {
		time.Sleep(20 * time.Millisecond)
		res, err = client.Do(req)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b), res.Header.Get("X-Engine"), res.Header.Get("X-Fingerprint")
}

// TestFingerprintHeaderFromTrustedProxy: tls_fingerprint_header is read
// from a peer the server trusts, and feeds the placeholder; from any other
// peer the same forged header is ignored. A value that is not a JA4 is
// never believed.
func TestFingerprintHeaderFromTrustedProxy(t *testing.T) {
	ports, err := freeport.Take(1)
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/", ports[0])
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	const chromeJA4 = "t13d1517h2_8daaf6152771_cb7bf5808d99"

	// The peer (127.0.0.1) is a trusted proxy.
	runCaddy(t, probeConfig(t, ports[0], "127.0.0.1/32", "x-ja4", "", ""))
	body, engine, fp := probe(t, client, url, "X-JA4", chromeJA4)
	if body != "fp="+chromeJA4 || engine != "unknown" || fp != chromeJA4 {
		t.Errorf("trusted proxy's header: body %q, engine %q, fingerprint %q; want its JA4, engine unknown (a JA4 carries no facts)", body, engine, fp)
	}
	body, engine, _ = probe(t, client, url, "X-JA4", "t13d1517h2_8daaf6152771_cb7bf5808d99; DROP TABLE")
	if body != "fp=" || engine != "none" {
		t.Errorf("trusted proxy, not a JA4: body %q, engine %q; want empty, none", body, engine)
	}
	body, engine, _ = probe(t, client, url, "", "")
	if body != "fp=" || engine != "none" {
		t.Errorf("trusted proxy without the header: body %q, engine %q; want empty, none", body, engine)
	}

	// The same peer, not trusted: a forged header is ignored.
	runCaddy(t, probeConfig(t, ports[0], "10.0.0.0/8", "X-JA4", "", ""))
	body, engine, fp = probe(t, client, url, "X-JA4", chromeJA4)
	if body != "fp={http.robots.tls_fingerprint}" || engine != "none" || fp != "" {
		t.Errorf("untrusted peer's forged header: body %q, engine %q, fingerprint %q; want the placeholder unset and no fingerprint", body, engine, fp)
	}
	// No trusted proxies at all: the same.
	runCaddy(t, probeConfig(t, ports[0], "", "X-JA4", "", ""))
	if body, engine, _ = probe(t, client, url, "X-JA4", chromeJA4); engine != "none" || body != "fp={http.robots.tls_fingerprint}" {
		t.Errorf("no trusted proxies, forged header: body %q, engine %q", body, engine)
	}
}

// TestFingerprintFromTrustedProxyConnection: over HTTPS with
// robots_fingerprint, a library's handshake is the client's own when the
// peer is not a trusted proxy (engine library), and the proxy's own when
// it is: then the judgement has no fingerprint, though the placeholder
// shows the connection's.
func TestFingerprintFromTrustedProxyConnection(t *testing.T) {
	ports, err := freeport.Take(1)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, pool := writeSelfSigned(t)
	url := fmt.Sprintf("https://example.test:%d/", ports[0])
	// Go's net/http (crypto/tls: a library's handshake), to example.test
	// on 127.0.0.1, a fresh connection per request.
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: pool, ServerName: "example.test"},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	for _, tc := range []struct {
		trusted, engine string
	}{
		{"10.0.0.0/8", "library"},
		{"127.0.0.1/32", "none"},
	} {
		runCaddy(t, probeConfig(t, ports[0], tc.trusted, "", certFile, keyFile))
		body, engine, fp := probe(t, client, url, "", "")
		if engine != tc.engine {
			t.Errorf("trusted %s: engine %q, want %q", tc.trusted, engine, tc.engine)
		}
		if len(body) != len("fp=")+36 || body[3:4] != "t" {
			t.Errorf("trusted %s: placeholder %q, want the connection's JA4", tc.trusted, body)
		}
		if tc.engine == "library" && fp != body[3:] {
			t.Errorf("trusted %s: fingerprint %q, want the placeholder's %q", tc.trusted, fp, body[3:])
		}
	}
}

// writeSelfSigned writes a self-signed certificate for example.test and its
// key to PEM files, and returns them with a pool that trusts it.
func writeSelfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	cert := selfSigned(t)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(leaf)
	return certFile, keyFile, pool
}
