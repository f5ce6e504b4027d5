package agents

import (
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/caddyrobots/caddy-robots/agents/ja4"
)

// recorded parses a ClientHello recorded in ja4/testdata/clienthellos.
func recorded(t *testing.T, name string) (*ja4.Hello, ja4.Engine) {
	t.Helper()
	b, err := os.ReadFile("ja4/testdata/clienthellos/" + name + ".hex")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	h, err := ja4.ParseClientHello(raw)
	if err != nil {
		t.Fatal(err)
	}
	return h, ja4.Classify(h).Engine
}

const (
	uaChrome    = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
	uaFirefox   = "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0"
	uaSafariMac = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15"
	uaBare      = "Mozilla/5.0 (Windows NT 10.0; Win64; x64)"
)

// TestParseTLSClaim: which User-Agents name a browser whose every build
// speaks an engine's own TLS, and which versions predate TLS 1.3.
func TestParseTLSClaim(t *testing.T) {
	cases := []struct {
		ua      string
		browser string
		noTLS13 bool
	}{
		{uaChrome, "Chrome", false},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0", "Chrome", false},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Brave/131", "Chrome", false},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.88 Safari/537.36", "Chrome", false},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/69.0.3497.100 Safari/537.36", "Chrome", true},
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/60.0.3112.50 Safari/537.36", "Chrome", true},
		{uaFirefox, "Firefox", false},
		{"Mozilla/5.0 (Windows NT 6.1; rv:62.0) Gecko/20100101 Firefox/62.0", "Firefox", true},
		{"Mozilla/5.0 (Windows NT 6.1; rv:63.0) Gecko/20100101 Firefox/63.0", "Firefox", false},
		{uaSafariMac, "Safari", false},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1", "Safari", false},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/124.0.6367.88 Mobile/15E148 Safari/604.1", "Safari", false},
		{"Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; Trident/4.0)", "Internet Explorer", true},
		{"Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)", "Internet Explorer", true},
		{"Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 10.0; Win64; x64; Trident/7.0)", "Internet Explorer", false}, // IE mode, Compatibility View
		{"Mozilla/5.0 (Windows NT 10.0; Trident/7.0; rv:11.0) like Gecko", "Internet Explorer", false},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/64.0.3282.140 Safari/537.36 Edge/17.17134", "Edge (legacy)", false},
		{uaBare, "a browser", false},
		// Not claims a library's handshake refutes.
		{"Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/AP1A; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/124.0.6367.82 Mobile Safari/537.36", "", false},
		{"Mozilla/5.0 (Linux; Android 4.4.2; Nexus 5 Build/KOT49H) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/30.0.0.0 Mobile Safari/537.36", "", false},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Slack/4.38.125 Chrome/124.0.6367.243 Electron/30.1.2 Safari/537.36", "", false},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 330.0.3.12.235", "", false},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/460.0]", "", false},
		{"Mozilla/5.0 (X11; Ubuntu; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15", "", false}, // GNOME Web
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko)", "", false},                         // a WebKit view
		{"Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9", "", false},
		{"w3m/0.5.3+git20230121", "", false},
		{"curl/7.88.1", "", false},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "", false},
		{"Mozilla/5.0", "", false},
		{"", "", false},
	}
	for _, tc := range cases {
		c := ParseTLSClaim(tc.ua)
		if c.Browser != tc.browser || (c.NoTLS13 != "") != tc.noTLS13 {
			t.Errorf("%q: browser %q, no TLS 1.3 %q; want %q, %v", tc.ua, c.Browser, c.NoTLS13, tc.browser, tc.noTLS13)
		}
		if c.Bare != (tc.browser == "a browser") {
			t.Errorf("%q: bare %v", tc.ua, c.Bare)
		}
	}
}

// TestTLSClaimRefutedBy: over the recorded handshakes, a claimed browser is
// refuted by every library's and by no browser engine's, whichever browser
// it names (Firefox claiming Chrome passes); claims a library may honestly
// make are never refuted.
func TestTLSClaimRefutedBy(t *testing.T) {
	libraries := []string{"curl", "python-urllib", "python-requests", "scrapy", "go-nethttp", "node-fetch", "node-https", "java-httpclient", "wget", "wget2", "lynx", "openssl-s-client"}
	browsers := []string{"chromium-headed", "chromium-headless", "firefox-esr-headed", "firefox-esr-headless"}
	claims := []string{uaChrome, uaFirefox, uaSafariMac, uaBare, "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; Trident/4.0)",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Brave/131"}
	for _, ua := range claims {
		c := ParseTLSClaim(ua)
		for _, name := range libraries {
			if _, e := recorded(t, name); !c.RefutedBy(e) {
				t.Errorf("%s's handshake (%v) does not refute %q", name, e, ua)
			}
		}
		for _, name := range browsers {
			if _, e := recorded(t, name); c.RefutedBy(e) {
				t.Errorf("%s's handshake (%v) refutes %q: a person's switched User-Agent would be judged", name, e, ua)
			}
		}
		if c.RefutedBy(ja4.Unknown) {
			t.Errorf("an unknown handshake refutes %q", ua)
		}
	}
	lynx := ParseTLSClaim("Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9")
	if _, e := recorded(t, "lynx"); lynx.RefutedBy(e) {
		t.Error("Lynx over its own GnuTLS handshake is refuted")
	}
}

// TestTLSClaimImpossible: claims that could not have made the handshake,
// judged only when no browser engine made it and a hello was read.
func TestTLSClaimImpossible(t *testing.T) {
	tls13 := &ja4.Hello{SupportedVersions: []uint16{0x0304, 0x0303}}
	draft := &ja4.Hello{SupportedVersions: []uint16{0x7f1c, 0x0303}} // draft 28, as Chrome 69 offered it
	tls12 := &ja4.Hello{LegacyVersion: 0x0303}
	chromium, chromiumEngine := recorded(t, "chromium-headed")
	curl, curlEngine := recorded(t, "curl")
	const (
		msie8    = "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; Trident/4.0)"
		ieMode   = "Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 10.0; Win64; x64; Trident/7.0)"
		chrome69 = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/69.0.3497.100 Safari/537.36"
		chrome79 = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.88 Safari/537.36"
		ff62     = "Mozilla/5.0 (Windows NT 6.1; rv:62.0) Gecko/20100101 Firefox/62.0"
	)
	cases := []struct {
		name   string
		ua     string
		h      *ja4.Hello
		engine ja4.Engine
		want   string // a substring of the reason; "" for none
	}{
		{"MSIE 8 over TLS 1.3", msie8, tls13, ja4.Unknown, "Internet Explorer 8 never offered TLS 1.3"},
		{"MSIE 8 over TLS 1.3, curl", msie8, curl, curlEngine, "Internet Explorer 8"},
		{"MSIE 8 over TLS 1.2", msie8, tls12, ja4.Unknown, ""},
		{"IE mode (Trident/7.0) over TLS 1.3", ieMode, tls13, ja4.Unknown, ""},
		{"Chrome 69 over TLS 1.3", chrome69, tls13, ja4.Unknown, "Chrome 69 predates TLS 1.3 (Chrome 70)"},
		{"Chrome 69 over a TLS 1.3 draft", chrome69, draft, ja4.Unknown, ""},
		{"Chrome 79 over TLS 1.3", chrome79, tls13, ja4.Unknown, ""},
		{"Firefox 62 over TLS 1.3", ff62, tls13, ja4.Unknown, "Firefox 62 predates"},
		{"Firefox 62 over TLS 1.2", ff62, tls12, ja4.Unknown, ""},
		{"bare over TLS 1.2", uaBare, tls12, ja4.Unknown, "bare Mozilla/5.0"},
		{"bare over curl's", uaBare, curl, curlEngine, "bare Mozilla/5.0"},
		{"current Chrome over TLS 1.3", uaChrome, tls13, ja4.Unknown, ""},
		// A browser engine's handshake: a person's override, never judged.
		{"MSIE 8 over Chromium's", msie8, chromium, chromiumEngine, ""},
		{"Chrome 69 over Chromium's", chrome69, chromium, chromiumEngine, ""},
		{"bare over Chromium's", uaBare, chromium, chromiumEngine, ""},
		{"bare over Firefox's engine", uaBare, tls13, ja4.Firefox, ""},
		// No hello: absence of evidence.
		{"bare without a hello", uaBare, nil, ja4.Unknown, ""},
		{"MSIE 8 without a hello", msie8, nil, ja4.Unknown, ""},
		{"a bot", "curl/7.88.1", tls13, ja4.Unknown, ""},
	}
	for _, tc := range cases {
		got := ParseTLSClaim(tc.ua).Impossible(tc.h, tc.engine)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestUndeclaredStateNameTLS: a library's handshake names the client
// whatever its User-Agent; a browser engine's keeps the User-Agent in the
// name; without a fingerprint the name is UndeclaredStateName's.
func TestUndeclaredStateNameTLS(t *testing.T) {
	const libFP, browserFP = "t13d3112h2_e8f1e7e78f70_b26ce05bbdd6", "t13d1517h2_8daaf6152771_cb7bf5808d99"
	if UndeclaredStateNameTLS(uaChrome, "", ja4.Unknown) != UndeclaredStateName(uaChrome) {
		t.Error("without a fingerprint the name is UndeclaredStateName's")
	}
	a, b := UndeclaredStateNameTLS(uaChrome, libFP, ja4.Library), UndeclaredStateNameTLS(uaFirefox, libFP, ja4.Library)
	if a != b {
		t.Errorf("a library changing its User-Agent changes its name: %q, %q", a, b)
	}
	if u := UndeclaredStateNameTLS(uaFirefox, libFP, ja4.Unknown); u != a {
		t.Errorf("an unknown stack's name %q, want the fingerprint's %q", u, a)
	}
	p := UndeclaredStateNameTLS(uaChrome, browserFP, ja4.Chromium)
	if p == a || p == UndeclaredStateNameTLS(uaFirefox, browserFP, ja4.Chromium) || !strings.Contains(p, browserFP) {
		t.Errorf("a browser engine's name %q must differ from the library's and keep the User-Agent", p)
	}
}

// BenchmarkParseTLSClaim is the per-request cost of reading a current
// Chrome's claim (cacheable per User-Agent, as ParseBrowserClaim is).
func BenchmarkParseTLSClaim(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if ParseTLSClaim(uaChrome).Browser == "" {
			b.Fatal("no claim")
		}
	}
}
