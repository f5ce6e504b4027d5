package agents

import (
	"net/http"
	"strings"
	"testing"
)

func TestParseBrowserClaim(t *testing.T) {
	cases := []struct {
		ua      string
		engine  Engine
		name    string
		version int
		signals Signals
	}{
		// Chromium: Fetch Metadata from 80, Sec-CH-UA from 89.
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", EngineChromium, "Chrome", 131, FetchMetadata | ClientHints},
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36", EngineChromium, "Chrome", 156, FetchMetadata | ClientHints},
		{"Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36", EngineChromium, "Chrome", 124, FetchMetadata | ClientHints},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/88.0.4324.182 Safari/537.36", EngineChromium, "Chrome", 88, FetchMetadata},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.130 Safari/537.36", EngineChromium, "Chrome", 79, 0},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0", EngineChromium, "Edge", 131, FetchMetadata | ClientHints},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 OPR/106.0.0.0", EngineChromium, "Opera", 120, FetchMetadata | ClientHints},
		{"Mozilla/5.0 (Linux; Android 13; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36", EngineChromium, "Samsung Internet", 115, FetchMetadata},
		// Firefox: Fetch Metadata from 90, never Sec-CH-UA.
		{"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", EngineGecko, "Firefox", 128, FetchMetadata},
		{"Mozilla/5.0 (Android 14; Mobile; rv:131.0) Gecko/131.0 Firefox/131.0", EngineGecko, "Firefox", 131, FetchMetadata},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:89.0) Gecko/20100101 Firefox/89.0", EngineGecko, "Firefox", 89, 0},
		// Safari: from 16.4; on iOS the OS version decides.
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15", EngineWebKit, "Safari", 1701, FetchMetadata},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.3 Safari/605.1.15", EngineWebKit, "Safari", 1603, 0},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1", EngineWebKit, "Safari", 1704, FetchMetadata},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 15_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/15.6 Mobile/15E148 Safari/604.1", EngineWebKit, "Safari", 1506, 0},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1", EngineWebKit, "Chrome on iOS", 1700, FetchMetadata},
		// Not claims that are checked: embedded engines, forks, apps.
		{"Mozilla/5.0 (Linux; Android 10; K; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/124.0.0.0 Mobile Safari/537.36", EngineNone, "", 0, 0},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Slack/4.36.140 Chrome/120.0.6099.56 Electron/28.0.0 Safari/537.36", EngineNone, "", 0, 0},
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) QtWebEngine/5.15.8 Chrome/87.0.4280.144 Safari/537.36", EngineNone, "", 0, 0},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:102.0) Gecko/20100101 Goanna/6.5 Firefox/102.0 PaleMoon/32.5.0", EngineNone, "", 0, 0},
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15", EngineNone, "", 0, 0},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 320.0.0.34.109", EngineNone, "", 0, 0},
		{"Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9", EngineNone, "", 0, 0},
		{"curl/8.5.0", EngineNone, "", 0, 0},
		{"", EngineNone, "", 0, 0},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/abc Safari/537.36", EngineNone, "", 0, 0},
	}
	for _, c := range cases {
		got := ParseBrowserClaim(c.ua)
		if got.Engine != c.engine || got.Name != c.name || got.Version != c.version || got.Signals != c.signals {
			t.Errorf("ParseBrowserClaim(%q) = %+v, want engine %v name %q version %d signals %b", c.ua, got, c.engine, c.name, c.version, c.signals)
		}
	}
}

func TestBrowserClaimMissing(t *testing.T) {
	chrome := ParseBrowserClaim("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")
	firefox := ParseBrowserClaim("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0")
	old := ParseBrowserClaim("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.102 Safari/537.36")
	hdr := func(names ...string) http.Header {
		h := http.Header{"User-Agent": {"x"}, "Accept": {"*/*"}}
		for _, n := range names {
			h.Set(n, "v")
		}
		return h
	}
	cases := []struct {
		name   string
		claim  BrowserClaim
		h      http.Header
		secure bool
		want   Signals
	}{
		{"chrome with all", chrome, hdr("Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Sec-CH-UA"), true, 0},
		{"chrome, one fetch header is enough", chrome, hdr("Sec-Fetch-Mode", "Sec-CH-UA"), true, 0},
		{"chrome without any", chrome, hdr(), true, FetchMetadata | ClientHints},
		{"chrome without client hints", chrome, hdr("Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest"), true, ClientHints},
		{"chrome over plain HTTP", chrome, hdr(), false, 0},
		{"firefox with fetch metadata", firefox, hdr("Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest"), true, 0},
		{"firefox never needs client hints", firefox, hdr("Sec-Fetch-Dest"), true, 0},
		{"firefox without", firefox, hdr(), true, FetchMetadata},
		{"Sec-Fetch-User alone is not enough", firefox, hdr("Sec-Fetch-User"), true, FetchMetadata},
		{"a version older than the cut-off", old, hdr(), true, 0},
		{"no claim", BrowserClaim{}, hdr(), true, 0},
	}
	for _, c := range cases {
		if got := c.claim.Missing(c.h, c.secure); got != c.want {
			t.Errorf("%s: Missing = %b, want %b", c.name, got, c.want)
		}
	}
}

func TestIsSecureHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "localhost:8443": true, "LOCALHOST.": true, "127.0.0.1": true, "127.1.2.3:80": true,
		"[::1]": true, "[::1]:8080": true,
		"a.localhost": false, "example.com": false, "127.0.0.1.example.com": false, "127.0.0": false,
		"[::2]:80": false, "10.0.0.1": false, "": false, "localhost.example": false,
	} {
		if got := IsSecureHost(host); got != want {
			t.Errorf("IsSecureHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestUndeclaredAgent(t *testing.T) {
	for ua, want := range map[string]string{
		"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0":              "Firefox (undeclared)",
		"Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9":                           "Lynx (undeclared)",
		"Mozilla/5.0 (Linux; Android 10; K; wv) AppleWebKit/537.36 Chrome/124.0.0.0 Safari/1": "Chrome (undeclared)",
		"curl/8.5.0": "curl (undeclared)",
		"":           "empty (undeclared)",
	} {
		a := UndeclaredAgent(ua)
		if a.Name != want || !a.Bot || a.Category != CategoryUndeclared || len(a.Tokens) != 0 || a.Purpose != PurposeOther {
			t.Errorf("UndeclaredAgent(%q) = %+v, want name %q, a bot of category undeclared judged by \"*\"", ua, a, want)
		}
	}
}

// TestBrowserClaimsOnRealBrowsers reads the 7,707 real browser strings:
// every claim that is checked is a browser Identify calls a person's, and
// the versions before the cut-offs are never held to the signals.
func TestBrowserClaimsOnRealBrowsers(t *testing.T) {
	claims := NewBrowserClaims(0)
	engines := map[Engine]int{}
	for _, ua := range loadBrowsers(t) {
		e := claims.Lookup(ua)
		if e != claims.Lookup(ua) && len(ua) <= maxCachedLen {
			t.Fatalf("%q: not cached", ua)
		}
		c := e.Claim
		engines[c.Engine]++
		if c.Engine == EngineNone {
			continue
		}
		if Identify(ua).Bot {
			t.Errorf("%q: a claim of %s, but Identify says bot", ua, c.Name)
		}
		switch {
		case c.Engine == EngineChromium && c.Version < MinChromiumFetchMetadata,
			c.Engine == EngineGecko && c.Version < MinFirefoxFetchMetadata,
			c.Engine == EngineWebKit && c.Version < MinWebKitFetchMetadata:
			if c.Signals != 0 {
				t.Errorf("%q: version %d before the cut-off holds signals %b", ua, c.Version, c.Signals)
			}
		default:
			if c.Signals&FetchMetadata == 0 {
				t.Errorf("%q: version %d after the cut-off holds no Fetch Metadata", ua, c.Version)
			}
		}
		if c.Signals&ClientHints != 0 && (c.Engine != EngineChromium || c.Version < MinChromiumClientHints) {
			t.Errorf("%q: client hints required of %s %d", ua, c.Name, c.Version)
		}
		if e.Undeclared.Category != CategoryUndeclared || !strings.HasPrefix(e.Undeclared.Name, c.Name) {
			t.Errorf("%q: undeclared agent %+v", ua, e.Undeclared.Agent)
		}
	}
	// The corpus is mostly mainstream browsers: most strings are claims.
	if total := engines[EngineChromium] + engines[EngineGecko] + engines[EngineWebKit]; total < 5000 {
		t.Errorf("only %d of the browser strings are claims checked (by engine %v)", total, engines)
	}
	t.Logf("claims by engine: %v", engines)
}

func BenchmarkBrowserClaimsLookup(b *testing.B) {
	claims := NewBrowserClaims(0)
	ua := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	h := http.Header{"Sec-Fetch-Site": {"none"}, "Sec-Fetch-Mode": {"navigate"}, "Sec-Ch-Ua": {"x"}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e := claims.Lookup(ua)
		if e.Claim.Missing(h, true) != 0 {
			b.Fatal("missing")
		}
	}
}
