package policy_test

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/agents/ja4"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// recordedHello parses a ClientHello recorded from a real program on this
// machine (agents/ja4/testdata/clienthellos).
func recordedHello(t *testing.T, name string) (*ja4.Hello, ja4.Verdict) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "agents", "ja4", "testdata", "clienthellos", name+".hex"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	h, err := ja4.ParseClientHello(raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return h, ja4.Classify(h)
}

const (
	chromeUA  = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	firefoxUA = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
)

// TestTLSVerdict: the tls signal's rules over the recorded handshakes of
// real programs. A browser claim over any HTTP library's handshake is
// caught, with the fact that decided; a claim the handshake makes
// impossible is caught; a browser engine's handshake is never caught,
// whatever it claims (a UA switcher, a DevTools override, a bare or an
// impossible User-Agent); a User-Agent that makes no browser claim (a bot,
// curl's own, a WebView) and a request without a hello never are.
func TestTLSVerdict(t *testing.T) {
	libraries := []string{"curl", "wget", "wget2", "python-urllib", "python-requests", "go-nethttp", "node-fetch", "node-https", "scrapy", "java-httpclient", "openssl-s-client"}
	browsers := []string{"chromium-headed", "chromium-headless", "firefox-esr-headed", "firefox-esr-headless"}
	claims := map[string]string{
		"Chrome":        chromeUA,
		"Firefox":       firefoxUA,
		"Chrome+Brave":  chromeUA + " Brave/131",
		"bare":          "Mozilla/5.0 (Windows NT 10.0; Win64; x64)",
		"MSIE 8":        "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; Trident/4.0)",
		"Chrome 60":     "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/60.0.3112.113 Safari/537.36",
		"Safari on Mac": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
	}
	for _, lib := range libraries {
		h, v := recordedHello(t, lib)
		if v.Engine != ja4.Library {
			t.Fatalf("%s: engine %v, want library (the corpus changed?)", lib, v.Engine)
		}
		for name, ua := range claims {
			c := agents.ParseTLSClaim(ua)
			why := policy.TLSVerdict(&c, h, v)
			if why == "" {
				t.Errorf("%s claiming %s: not caught", lib, name)
				continue
			}
			if !strings.Contains(why, v.Fact) && !strings.Contains(why, "could not have made") {
				t.Errorf("%s claiming %s: %q names neither the fact %q nor the impossibility", lib, name, why, v.Fact)
			}
		}
		for _, ua := range []string{"", "curl/8.5.0", "python-requests/2.31", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
			"Mozilla/5.0 (Linux; Android 14; Pixel 8; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/131.0.0.0 Mobile Safari/537.36",
			"Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9"} {
			c := agents.ParseTLSClaim(ua)
			if why := policy.TLSVerdict(&c, h, v); why != "" {
				t.Errorf("%s with User-Agent %q: caught (%s), but it claims no browser", lib, ua, why)
			}
		}
	}
	for _, br := range browsers {
		h, v := recordedHello(t, br)
		for name, ua := range claims {
			c := agents.ParseTLSClaim(ua)
			if why := policy.TLSVerdict(&c, h, v); why != "" {
				t.Errorf("%s claiming %s: caught (%s): a browser engine is never judged", br, name, why)
			}
		}
	}
	c := agents.ParseTLSClaim(chromeUA)
	if why := policy.TLSVerdict(&c, nil, ja4.Verdict{Engine: ja4.Library}); why != "" {
		t.Errorf("no hello: caught (%s): absence of evidence is not evidence", why)
	}
	h, _ := recordedHello(t, "curl")
	if why := policy.TLSVerdict(&c, h, ja4.Verdict{Engine: ja4.Unknown}); why != "" {
		t.Errorf("an unknown engine: caught (%s)", why)
	}
	// Impossible claims name the impossibility even over an unknown stack.
	c = agents.ParseTLSClaim(claims["Chrome 60"])
	if why := policy.TLSVerdict(&c, h, ja4.Verdict{Engine: ja4.Unknown}); !strings.Contains(why, "Chrome 60 predates TLS 1.3") {
		t.Errorf("Chrome 60 over TLS 1.3, unknown stack: %q", why)
	}
}
