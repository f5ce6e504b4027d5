package webbotauth

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// agentServer serves an agent's key directory on loopback and counts fetches.
type agentServer struct {
	srv  *httptest.Server
	hits atomic.Int64 // requests to WellKnownPath
	all  atomic.Int64 // requests to any path

	mu           sync.Mutex
	body         []byte
	status       int
	cacheControl string
	delay        time.Duration
	redirectTo   string
}

func newAgentServer(t *testing.T, useTLS bool, keys ...ed25519.PublicKey) *agentServer {
	t.Helper()
	body, err := DirectoryJSON(keys...)
	if err != nil {
		t.Fatal(err)
	}
	a := &agentServer{body: body, status: http.StatusOK}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.all.Add(1)
		if r.URL.Path != WellKnownPath {
			http.NotFound(w, r)
			return
		}
		a.hits.Add(1)
		a.mu.Lock()
		body, status, cc, delay, redirect := a.body, a.status, a.cacheControl, a.delay, a.redirectTo
		a.mu.Unlock()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				// The client gave up: answer nothing, as a slow server
				// would (returning would send an empty 200).
				panic(http.ErrAbortHandler)
			}
		}
		if redirect != "" {
			http.Redirect(w, r, redirect, http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", DirectoryMediaType)
		if cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
	if useTLS {
		a.srv = httptest.NewTLSServer(h)
	} else {
		a.srv = httptest.NewServer(h)
	}
	t.Cleanup(a.srv.Close)
	return a
}

func (a *agentServer) set(f func(a *agentServer)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a)
}

// rootCAs trusts the server's test certificate.
func (a *agentServer) rootCAs() *x509.CertPool {
	p := x509.NewCertPool()
	if c := a.srv.Certificate(); c != nil {
		p.AddCert(c)
	}
	return p
}

// newTestVerifier returns a verifier that may fetch from a (loopback, so
// allowed explicitly) and maps a's origin to the token "TestBot".
func newTestVerifier(t *testing.T, a *agentServer, cfg Config) *Verifier {
	t.Helper()
	if a != nil {
		cfg.AllowOrigins = append(cfg.AllowOrigins, a.srv.URL)
		cfg.RootCAs = a.rootCAs()
		if cfg.Agents == nil {
			cfg.Agents = map[string]string{a.srv.URL: "TestBot"}
		}
	}
	v, err := NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v
}

func newKey(t testing.TB) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

func kid(t testing.TB, pub ed25519.PublicKey) string {
	t.Helper()
	k, err := Thumbprint(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// signed returns a server-side request to https://example.com/page?q=1 signed
// per opts.
func signed(t testing.TB, opts SignOptions) *http.Request {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "https://example.com/page?q=1", nil)
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/138.0.0.0 Safari/537.36")
	r.Header.Set("X-Extra", "1")
	if err := Sign(r, opts); err != nil {
		t.Fatal(err)
	}
	return r
}

// waitOutcome verifies r until the outcome is no longer Unknown or 5 s pass.
func waitOutcome(t *testing.T, v *Verifier, r *http.Request, now time.Time) Result {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res := v.Verify(t.Context(), r, now)
		if res.Outcome != Unknown || time.Now().After(deadline) {
			return res
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// verifyOutcome is a signed request, as signed and as tampered with after,
// and the outcome Verify must give it.
type verifyOutcome struct {
	name    string
	opts    func(o *SignOptions)
	after   func(r *http.Request) // tampering after signing
	want    Outcome
	reason  string
	wantTok string
}

// verifyOutcomeCases are the cases of TestVerifyOutcomes: pub is the key
// the directory publishes, otherPriv a key it does not, twinURL another
// origin publishing pub.
func verifyOutcomeCases(t *testing.T, now time.Time, pub ed25519.PublicKey, otherPriv ed25519.PrivateKey, twinURL string) []verifyOutcome {
	return []verifyOutcome{
		{name: "valid", want: Verified, wantTok: "TestBot"},
		{name: "valid legacy string form", opts: func(o *SignOptions) { o.Legacy = true }, want: Verified, wantTok: "TestBot"},
		{name: "valid over @target-uri", opts: func(o *SignOptions) { o.Components = []string{"@target-uri", "signature-agent"} }, want: Verified},
		{name: "valid without alg", opts: func(o *SignOptions) { o.OmitAlg = true }, want: Verified},
		{name: "valid with nonce and more headers", opts: func(o *SignOptions) {
			o.Nonce = "abc"
			o.Components = []string{"@method", "@authority", "@scheme", "@path", "@query", "@request-target", "signature-agent", "user-agent"}
		}, want: Verified},
		{name: "expired", opts: func(o *SignOptions) { o.Created, o.Expires = now.Add(-10*time.Minute), now.Add(-5*time.Minute) }, want: Invalid, reason: "expired"},
		{name: "expired within skew", opts: func(o *SignOptions) { o.Created, o.Expires = now.Add(-10*time.Minute), now.Add(-30*time.Second) }, want: Verified},
		{name: "not yet valid", opts: func(o *SignOptions) { o.Created, o.Expires = now.Add(5*time.Minute), now.Add(10*time.Minute) }, want: Invalid, reason: "not yet valid"},
		{name: "created in the future within skew", opts: func(o *SignOptions) { o.Created, o.Expires = now.Add(30*time.Second), now.Add(10*time.Minute) }, want: Verified},
		{name: "validity window over 24h", opts: func(o *SignOptions) { o.Expires = now.Add(25 * time.Hour) }, want: Invalid, reason: "validity window"},
		{name: "expires before created", opts: func(o *SignOptions) { o.Expires = now.Add(-time.Second) }, want: Invalid, reason: "not after created"},
		{name: "key not in directory", opts: func(o *SignOptions) { o.Key = otherPriv }, want: Invalid, reason: "not in the directory"},
		{name: "wrong key under the directory's keyid", opts: func(o *SignOptions) { o.Key, o.KeyID = otherPriv, kid(t, pub) }, want: Invalid, reason: "does not verify"},
		{name: "other tag", opts: func(o *SignOptions) { o.Tag = "something-else" }, want: Unsigned},
		{name: "no @authority", opts: func(o *SignOptions) { o.Components = []string{"@method", "@path", "signature-agent"} }, want: Invalid, reason: "neither @authority"},
		{name: "Signature-Agent not covered", opts: func(o *SignOptions) { o.Components = []string{"@authority", "@path"} }, want: Invalid, reason: "does not cover the Signature-Agent"},
		{name: "covered header missing", opts: func(o *SignOptions) { o.Components = []string{"@authority", "signature-agent", "x-extra"} },
			after: func(r *http.Request) { r.Header.Del("X-Extra") }, want: Invalid, reason: "missing covered component"},
		{name: "no Signature-Agent header", opts: func(o *SignOptions) { o.Agent, o.Components = "", []string{"@authority"} }, want: Unknown, reason: "no Signature-Agent"},
		{name: "tampered authority", after: func(r *http.Request) { r.Host = "evil.example" }, want: Invalid, reason: "does not verify"},
		{name: "tampered path", opts: func(o *SignOptions) { o.Components = []string{"@authority", "@path", "signature-agent"} },
			after: func(r *http.Request) { r.URL.Path = "/other" }, want: Invalid, reason: "does not verify"},
		{name: "Signature-Agent member renamed", after: func(r *http.Request) {
			r.Header.Set("Signature-Agent", strings.Replace(r.Header.Get("Signature-Agent"), "sig1=", "sig9=", 1))
		}, want: Invalid, reason: "no member"},
		{name: "Signature-Agent swapped for another origin publishing the key", after: func(r *http.Request) {
			r.Header.Set("Signature-Agent", `sig1="`+twinURL+`"`)
		}, want: Invalid, reason: "does not verify"},
		{name: "alg not ed25519", after: func(r *http.Request) {
			r.Header.Set("Signature-Input", strings.Replace(r.Header.Get("Signature-Input"), `alg="ed25519"`, `alg="rsa-pss-sha512"`, 1))
		}, want: Invalid, reason: "alg"},
		{name: "keyid missing", after: func(r *http.Request) {
			in := r.Header.Get("Signature-Input")
			i := strings.Index(in, ";keyid=")
			j := strings.Index(in[i+1:], ";")
			r.Header.Set("Signature-Input", in[:i]+in[i+1+j:])
		}, want: Invalid, reason: "keyid"},
		{name: "signature truncated", after: func(r *http.Request) { r.Header.Set("Signature", "sig1=:AAAA:") }, want: Invalid, reason: "64-byte"},
		{name: "Signature-Agent not https", opts: func(o *SignOptions) { o.Agent = "http://agent.example" }, want: Invalid, reason: "https"},
		{name: "malformed Signature-Input", after: func(r *http.Request) { r.Header.Set("Signature-Input", `sig1=("@authority";tag="web-bot-auth"`) }, want: Invalid, reason: "malformed"},
	}
}

func TestVerifyOutcomes(t *testing.T) {
	pub, priv := newKey(t)
	otherPub, otherPriv := newKey(t)
	_ = otherPub
	a := newAgentServer(t, true, pub)
	twin := newAgentServer(t, true, pub)
	v := newTestVerifier(t, a, Config{MaxWait: 5 * time.Second, AllowOrigins: []string{twin.srv.URL}})
	now := time.Unix(1_800_000_000, 0)
	base := func() SignOptions {
		return SignOptions{Key: priv, Agent: a.srv.URL, Created: now, Expires: now.Add(5 * time.Minute)}
	}

	cases := verifyOutcomeCases(t, now, pub, otherPriv, twin.srv.URL)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := base()
			if c.opts != nil {
				c.opts(&o)
			}
			r := signed(t, o)
			if c.after != nil {
				c.after(r)
			}
			res := v.Verify(t.Context(), r, now)
			if res.Outcome != c.want || !strings.Contains(res.Reason, c.reason) {
				t.Fatalf("got %v (%q), want %v (%q)", res.Outcome, res.Reason, c.want, c.reason)
			}
			if c.want == Verified {
				if res.Agent != a.srv.URL || res.KeyID != kid(t, pub) || res.Label != "sig1" {
					t.Errorf("verified result %+v", res)
				}
			}
			if c.wantTok != "" && res.Token != c.wantTok {
				t.Errorf("token %q, want %q", res.Token, c.wantTok)
			}
		})
	}
	if n := a.hits.Load(); n != 1 {
		t.Errorf("directory fetched %d times, want once", n)
	}

	t.Run("unsigned request", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodGet, "https://example.com/", nil)
		if res := v.Verify(t.Context(), r, now); res.Outcome != Unsigned {
			t.Fatalf("got %+v", res)
		}
	})
	t.Run("signature without web-bot-auth tag", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodGet, "https://example.com/", nil)
		r.Header.Set("Signature-Input", `sig1=("@authority");created=1;keyid="k"`)
		r.Header.Set("Signature", `sig1=:AAAA:`)
		if res := v.Verify(t.Context(), r, now); res.Outcome != Unsigned {
			t.Fatalf("got %+v", res)
		}
	})
	t.Run("second signature verifies", func(t *testing.T) {
		r := signed(t, base())
		in := r.Header.Get("Signature-Input")
		r.Header.Set("Signature-Input", strings.Replace(in, "sig1=", "bad=", 1)+", "+in)
		r.Header.Set("Signature", r.Header.Get("Signature")+", bad=:AAAA:")
		if res := v.Verify(t.Context(), r, now); res.Outcome != Verified {
			t.Fatalf("got %+v", res)
		}
	})
}

// TestVerifyOverHTTP signs a client request, sends it to a loopback server and
// verifies it there, as a site would.
func TestVerifyOverHTTP(t *testing.T) {
	pub, priv := newKey(t)
	a := newAgentServer(t, false, pub) // plain http, allowed by configuration
	v := newTestVerifier(t, a, Config{MaxWait: 5 * time.Second})
	got := make(chan Result, 1)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- v.Verify(r.Context(), r, time.Now())
	}))
	defer site.Close()

	req, err := http.NewRequest(http.MethodPost, site.URL+"/form?a=b", strings.NewReader("x=1"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	err = Sign(req, SignOptions{Key: priv, Agent: a.srv.URL,
		Components: []string{"@method", "@authority", "@target-uri", "@request-target", "@path", "@query", "content-type", "signature-agent"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := site.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	res := <-got
	if res.Outcome != Verified || res.Token != "TestBot" {
		t.Fatalf("got %+v", res)
	}
}

// TestPendingDoesNotBlock: with no wait budget, the first request naming an
// uncached directory gets Unknown at once, the fetch goes on in the
// background, and later requests verify.
func TestPendingDoesNotBlock(t *testing.T) {
	pub, priv := newKey(t)
	a := newAgentServer(t, true, pub)
	a.set(func(a *agentServer) { a.delay = time.Second })
	v := newTestVerifier(t, a, Config{})
	now := time.Now()
	r := signed(t, SignOptions{Key: priv, Agent: a.srv.URL, Created: now})

	start := time.Now()
	res := v.Verify(t.Context(), r, now)
	if el := time.Since(start); el > 500*time.Millisecond {
		t.Errorf("Verify blocked %v", el)
	}
	if res.Outcome != Unknown || !strings.Contains(res.Reason, "in progress") || res.Agent != a.srv.URL {
		t.Fatalf("first verification %+v", res)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if res := v.Verify(t.Context(), r, now); res.Outcome != Unknown {
				t.Errorf("concurrent look-up during the fetch: %+v", res)
			}
		})
	}
	wg.Wait()
	if res := waitOutcome(t, v, r, now); res.Outcome != Verified {
		t.Fatalf("after fetch %+v", res)
	}
	if n := a.hits.Load(); n != 1 {
		t.Errorf("%d fetches, want 1 (concurrent look-ups share one fetch)", n)
	}
}

// TestWaitBudget: Verify waits for a first fetch at most MaxWait.
func TestWaitBudget(t *testing.T) {
	pub, priv := newKey(t)
	a := newAgentServer(t, true, pub)
	a.set(func(a *agentServer) { a.delay = 2 * time.Second })
	v := newTestVerifier(t, a, Config{MaxWait: 100 * time.Millisecond})
	now := time.Now()
	start := time.Now()
	res := v.Verify(t.Context(), signed(t, SignOptions{Key: priv, Agent: a.srv.URL, Created: now}), now)
	if el := time.Since(start); el < 90*time.Millisecond || el > time.Second {
		t.Errorf("Verify took %v, budget 100ms", el)
	}
	if res.Outcome != Unknown {
		t.Fatalf("got %+v", res)
	}
}

// TestSlowDirectory: a directory slower than FetchTimeout is a discovery
// failure, reported as Unknown.
func TestSlowDirectory(t *testing.T) {
	pub, priv := newKey(t)
	a := newAgentServer(t, true, pub)
	a.set(func(a *agentServer) { a.delay = 3 * time.Second })
	v := newTestVerifier(t, a, Config{FetchTimeout: 200 * time.Millisecond, MaxWait: 2 * time.Second})
	now := time.Now()
	start := time.Now()
	res := v.Verify(t.Context(), signed(t, SignOptions{Key: priv, Agent: a.srv.URL, Created: now}), now)
	if el := time.Since(start); el > 1500*time.Millisecond {
		t.Errorf("Verify took %v with a 200ms fetch limit", el)
	}
	// Whichever fires first, the request's deadline or the transport's
	// header timeout, names itself.
	if reason := strings.ToLower(res.Reason); res.Outcome != Unknown || !(strings.Contains(reason, "deadline") || strings.Contains(reason, "timeout")) {
		t.Fatalf("got %+v", res)
	}
}

// TestRedirectRefused: a directory answering with a redirect is a discovery
// failure, and the redirect target is never fetched.
func TestRedirectRefused(t *testing.T) {
	pub, priv := newKey(t)
	target := newAgentServer(t, true, pub)
	a := newAgentServer(t, true, pub)
	a.set(func(a *agentServer) { a.redirectTo = target.srv.URL + WellKnownPath })
	v := newTestVerifier(t, a, Config{MaxWait: 5 * time.Second, AllowOrigins: []string{target.srv.URL}})
	now := time.Now()
	res := v.Verify(t.Context(), signed(t, SignOptions{Key: priv, Agent: a.srv.URL, Created: now}), now)
	if res.Outcome != Unknown || !strings.Contains(res.Reason, "redirect") {
		t.Fatalf("got %+v", res)
	}
	if a.hits.Load() != 1 || target.hits.Load() != 0 {
		t.Errorf("hits: agent %d, redirect target %d", a.hits.Load(), target.hits.Load())
	}
}

// TestAddressGuard: a directory on a loopback address is refused unless its
// origin is explicitly allowed; plain http likewise.
func TestAddressGuard(t *testing.T) {
	pub, priv := newKey(t)
	a := newAgentServer(t, true, pub)
	now := time.Now()
	r := signed(t, SignOptions{Key: priv, Agent: a.srv.URL, Created: now})

	strict, err := NewVerifier(Config{MaxWait: 5 * time.Second, RootCAs: a.rootCAs()})
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	res := strict.Verify(t.Context(), r, now)
	if res.Outcome != Unknown || !strings.Contains(res.Reason, "refused non-public address 127.0.0.1") {
		t.Fatalf("not allowed: %+v", res)
	}
	if n := a.hits.Load(); n != 0 {
		t.Fatalf("guarded directory was reached %d times", n)
	}

	allowed := newTestVerifier(t, a, Config{MaxWait: 5 * time.Second})
	if res := allowed.Verify(t.Context(), r, now); res.Outcome != Verified {
		t.Fatalf("allowed: %+v", res)
	}

	plain := newAgentServer(t, false, pub)
	rp := signed(t, SignOptions{Key: priv, Agent: plain.srv.URL, Created: now})
	if res := strict.Verify(t.Context(), rp, now); res.Outcome != Invalid || !strings.Contains(res.Reason, "https") {
		t.Fatalf("plain http not allowed: %+v", res)
	}
	if plain.hits.Load() != 0 {
		t.Fatal("plain http directory was fetched")
	}
}

func TestIsPublicAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "104.18.0.1": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "0.0.0.0": false, "100.64.0.1": false, "224.0.0.1": false,
		"255.255.255.255": false, "::1": false, "::": false, "fe80::1": false, "fc00::1": false,
		"::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false, "64:ff9b::a9fe:a9fe": false,
		"64:ff9b::808:808": true, "2001:db8::1": false, "ff02::1": false,
	} {
		ip := mustAddr(t, addr)
		if got := isPublicAddr(ip); got != want {
			t.Errorf("isPublicAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}

// TestDirectoryCaching: a cached directory is not fetched again while fresh;
// max-age is honoured within bounds; a stale copy keeps verifying while it is
// refreshed in the background.
func TestDirectoryCaching(t *testing.T) {
	pub, priv := newKey(t)
	a := newAgentServer(t, true, pub)
	a.set(func(a *agentServer) { a.cacheControl = "public, max-age=600" })
	v := newTestVerifier(t, a, Config{MaxWait: 5 * time.Second})
	t0 := time.Unix(1_800_000_000, 0)
	at := func(d time.Duration) Result {
		now := t0.Add(d)
		return v.Verify(t.Context(), signed(t, SignOptions{Key: priv, Agent: a.srv.URL, Created: now}), now)
	}
	for _, d := range []time.Duration{0, time.Second, 5 * time.Minute, 599 * time.Second} {
		if res := at(d); res.Outcome != Verified {
			t.Fatalf("at +%v: %+v", d, res)
		}
		if n := a.hits.Load(); n != 1 {
			t.Fatalf("at +%v: %d fetches, want 1", d, n)
		}
	}
	// Stale: still verified at once, refreshed in the background.
	if res := at(601 * time.Second); res.Outcome != Verified {
		t.Fatalf("stale: %+v", res)
	}
	waitHits(t, a, 2)
	// The refresh counts from +601 s.
	if res := at(1200 * time.Second); res.Outcome != Verified || a.hits.Load() != 2 {
		t.Fatalf("after refresh: %+v, %d fetches", res, a.hits.Load())
	}

	// max-age below the minimum lifetime is raised to it (5 min).
	b := newAgentServer(t, true, pub)
	b.set(func(a *agentServer) { a.cacheControl = "max-age=1" })
	vb := newTestVerifier(t, b, Config{MaxWait: 5 * time.Second})
	for _, d := range []time.Duration{0, 2 * time.Minute, 299 * time.Second} {
		now := t0.Add(d)
		if res := vb.Verify(t.Context(), signed(t, SignOptions{Key: priv, Agent: b.srv.URL, Created: now}), now); res.Outcome != Verified {
			t.Fatalf("at +%v: %+v", d, res)
		}
	}
	if n := b.hits.Load(); n != 1 {
		t.Fatalf("max-age=1: %d fetches within the 5 min minimum", n)
	}
}

func waitHits(t *testing.T, a *agentServer, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for a.hits.Load() < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := a.hits.Load(); got != want {
		t.Fatalf("%d fetches, want %d", got, want)
	}
}

// TestNegativeCache: a failed fetch is remembered (no refetch) for
// NegativeTTL, at most 5 minutes, and a failed refresh keeps the old keys.
func TestNegativeCache(t *testing.T) {
	pub, priv := newKey(t)
	a := newAgentServer(t, true, pub)
	a.set(func(a *agentServer) { a.status = http.StatusServiceUnavailable })
	v := newTestVerifier(t, a, Config{MaxWait: 5 * time.Second, NegativeTTL: time.Hour}) // capped to 5 min
	t0 := time.Unix(1_800_000_000, 0)
	at := func(d time.Duration) Result {
		now := t0.Add(d)
		return v.Verify(t.Context(), signed(t, SignOptions{Key: priv, Agent: a.srv.URL, Created: now}), now)
	}
	for _, d := range []time.Duration{0, time.Second, 4 * time.Minute, 299 * time.Second} {
		if res := at(d); res.Outcome != Unknown || !strings.Contains(res.Reason, "status 503") {
			t.Fatalf("at +%v: %+v", d, res)
		}
	}
	if n := a.hits.Load(); n != 1 {
		t.Fatalf("%d fetches within the negative-cache period, want 1", n)
	}
	a.set(func(a *agentServer) { a.status, a.cacheControl = http.StatusOK, "max-age=600" })
	if res := at(301 * time.Second); res.Outcome != Verified {
		t.Fatalf("after 5 min: %+v", res)
	}
	if n := a.hits.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
	// The directory fails again: a failed refresh is not evidence, the
	// cached keys keep verifying (stale) and the failure is negative-cached.
	a.set(func(a *agentServer) { a.status = http.StatusInternalServerError })
	if res := at(301*time.Second + 601*time.Second); res.Outcome != Verified {
		t.Fatalf("stale after failed refresh: %+v", res)
	}
	waitHits(t, a, 3)
	if res := at(301*time.Second + 700*time.Second); res.Outcome != Verified || a.hits.Load() != 3 {
		t.Fatalf("within negative period: %+v, %d fetches", res, a.hits.Load())
	}
}

// TestKeyRotation: a refreshed directory that dropped a key is evidence; the
// old key stops verifying and the new one verifies.
func TestKeyRotation(t *testing.T) {
	oldPub, oldPriv := newKey(t)
	newPub, newPriv := newKey(t)
	a := newAgentServer(t, true, oldPub)
	a.set(func(a *agentServer) { a.cacheControl = "max-age=300" })
	v := newTestVerifier(t, a, Config{MaxWait: 5 * time.Second})
	t0 := time.Unix(1_800_000_000, 0)
	if res := v.Verify(t.Context(), signed(t, SignOptions{Key: oldPriv, Agent: a.srv.URL, Created: t0}), t0); res.Outcome != Verified {
		t.Fatalf("old key: %+v", res)
	}
	body, _ := DirectoryJSON(newPub)
	a.set(func(a *agentServer) { a.body = body })
	t1 := t0.Add(301 * time.Second)
	v.Verify(t.Context(), signed(t, SignOptions{Key: newPriv, Agent: a.srv.URL, Created: t1}), t1) // prompts the refresh
	waitHits(t, a, 2)
	t2 := t1.Add(time.Second)
	// The server has answered; the verifier stores the answer a moment
	// later.
	var res Result
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if res = v.Verify(t.Context(), signed(t, SignOptions{Key: newPriv, Agent: a.srv.URL, Created: t2}), t2); res.Outcome == Verified {
			break
		}
	}
	if res.Outcome != Verified {
		t.Fatalf("new key: %+v", res)
	}
	if res := v.Verify(t.Context(), signed(t, SignOptions{Key: oldPriv, Agent: a.srv.URL, Created: t2}), t2); res.Outcome != Invalid {
		t.Fatalf("removed key: %+v", res)
	}
}

// TestDirectoryLimits: body size cap, bounded number of directories, JWK
// Set URLs with a path, unsupported keys.
func TestDirectoryLimits(t *testing.T) {
	pub, priv := newKey(t)
	now := time.Now()

	t.Run("body cap", func(t *testing.T) {
		a := newAgentServer(t, true, pub)
		big := []byte(`{"keys":[],"pad":"` + strings.Repeat("x", 70<<10) + `"}`)
		a.set(func(a *agentServer) { a.body = big })
		v := newTestVerifier(t, a, Config{MaxWait: 5 * time.Second})
		res := v.Verify(t.Context(), signed(t, SignOptions{Key: priv, Agent: a.srv.URL, Created: now}), now)
		if res.Outcome != Unknown || !strings.Contains(res.Reason, "larger than 65536") {
			t.Fatalf("got %+v", res)
		}
	})
	t.Run("not a JWK Set", func(t *testing.T) {
		a := newAgentServer(t, true, pub)
		a.set(func(a *agentServer) { a.body = []byte(`<html>`) })
		v := newTestVerifier(t, a, Config{MaxWait: 5 * time.Second})
		res := v.Verify(t.Context(), signed(t, SignOptions{Key: priv, Agent: a.srv.URL, Created: now}), now)
		if res.Outcome != Unknown || !strings.Contains(res.Reason, "not a JWK Set") {
			t.Fatalf("got %+v", res)
		}
	})
	t.Run("unsupported key type", func(t *testing.T) {
		a := newAgentServer(t, true, pub)
		// An EC P-256 key (RFC 7517 Appendix A.1) and a malformed OKP key.
		const ec = `{"kty":"EC","crv":"P-256","x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"}`
		a.set(func(a *agentServer) {
			a.body = []byte(`{"keys":[` + ec + `,{"kty":"OKP","crv":"Ed25519","x":"short"}]}`)
		})
		var jwk jose.JSONWebKey
		if err := jwk.UnmarshalJSON([]byte(ec)); err != nil {
			t.Fatal(err)
		}
		tp, err := jwk.Thumbprint(crypto.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		v := newTestVerifier(t, a, Config{MaxWait: 5 * time.Second})
		r := signed(t, SignOptions{Key: priv, Agent: a.srv.URL, Created: now, KeyID: base64.RawURLEncoding.EncodeToString(tp)})
		if res := v.Verify(t.Context(), r, now); res.Outcome != Unknown || !strings.Contains(res.Reason, "not an Ed25519 key") {
			t.Fatalf("EC key: %+v", res)
		}
		r = signed(t, SignOptions{Key: priv, Agent: a.srv.URL, Created: now})
		if res := v.Verify(t.Context(), r, now); res.Outcome != Invalid || !strings.Contains(res.Reason, "not in the directory") {
			t.Fatalf("absent key: %+v", res)
		}
	})
	// A configured agent's keys come from its one directory: a request
	// naming another URL of its origin (an admin endpoint, a new query each
	// time) is refused and makes this server fetch nothing.
	t.Run("the request does not choose the URL fetched", func(t *testing.T) {
		a := newAgentServer(t, true, pub)
		v := newTestVerifier(t, a, Config{MaxWait: 5 * time.Second})
		for i := range 5 {
			agent := fmt.Sprintf("%s/internal/admin/purge?confirm=yes&id=%d", a.srv.URL, i)
			res := v.Verify(t.Context(), signed(t, SignOptions{Key: priv, Agent: agent, Created: now}), now)
			if res.Outcome != Invalid || !strings.Contains(res.Reason, "key directory of "+a.srv.URL+" is "+a.srv.URL+WellKnownPath) {
				t.Fatalf("%s: %+v", agent, res)
			}
		}
		if n := a.all.Load(); n != 0 {
			t.Fatalf("%d fetches of URLs the requests chose", n)
		}
		res := v.Verify(t.Context(), signed(t, SignOptions{Key: priv, Agent: a.srv.URL, Created: now}), now)
		if res.Outcome != Verified || res.Agent != a.srv.URL || res.Token != "TestBot" {
			t.Fatalf("the configured directory: %+v", res)
		}
		// An unknown agent's keys are read from its well-known path only.
		res = v.Verify(t.Context(), signed(t, SignOptions{Key: priv, Agent: "https://unknown.example/keys.json?x=1", Created: now}), now)
		if res.Outcome != Unknown || !strings.Contains(res.Reason, "only read from https://unknown.example"+WellKnownPath) {
			t.Fatalf("unknown agent, other URL: %+v", res)
		}
	})
	t.Run("bounded directories", func(t *testing.T) {
		var cfg Config
		var servers []*agentServer
		for range 3 {
			a := newAgentServer(t, false, pub)
			servers = append(servers, a)
			cfg.AllowOrigins = append(cfg.AllowOrigins, a.srv.URL)
		}
		cfg.MaxDirectories, cfg.MaxWait = 2, 5*time.Second
		v, err := NewVerifier(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		for _, a := range servers {
			res := v.Verify(t.Context(), signed(t, SignOptions{Key: priv, Agent: a.srv.URL, Created: now}), now)
			if res.Outcome != Verified {
				t.Fatalf("%s: %+v", a.srv.URL, res)
			}
			if n := v.Directory().Len(); n > 2 {
				t.Fatalf("%d directories cached, cap 2", n)
			}
		}
	})
}

func TestCatalogue(t *testing.T) {
	v, err := NewVerifier(Config{Agents: map[string]string{"HTTPS://Bot.Example:443/": "ExampleBot", "https://chatgpt.com": "Custom-GPT"}})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if a := v.agents["https://agent.bot.goog"]; a.Token != "Google-Agent" || a.Operator != "Google" {
		t.Errorf("google: %+v", a)
	}
	if a := v.agents["https://bot.example"]; a.Token != "ExampleBot" {
		t.Errorf("custom: %+v", a)
	}
	if a := v.agents["https://chatgpt.com"]; a.Token != "Custom-GPT" || a.Operator != "OpenAI" {
		t.Errorf("override: %+v", a)
	}
	found := false
	for _, a := range KnownAgents() {
		found = found || (a.Origin == "https://chatgpt.com" && a.Token == "ChatGPT-User")
	}
	if !found {
		t.Error("KnownAgents lacks chatgpt.com → ChatGPT-User")
	}
	if _, err := NewVerifier(Config{Agents: map[string]string{"ftp://x": "X"}}); err == nil {
		t.Error("ftp origin accepted")
	}
	if _, err := NewVerifier(Config{AllowOrigins: []string{"not a url"}}); err == nil {
		t.Error("bad AllowOrigins accepted")
	}
}
