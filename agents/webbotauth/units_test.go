package webbotauth

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
)

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestResolveAgent(t *testing.T) {
	allow := func(o string) bool { return o == "http://localhost:8080" }
	cases := []struct {
		value, params  string
		fetch, id, err string
	}{
		{value: "https://chatgpt.com", fetch: "https://chatgpt.com" + WellKnownPath, id: "https://chatgpt.com"},
		{value: "https://Agent.Bot.GOOG:443/", fetch: "https://agent.bot.goog" + WellKnownPath, id: "https://agent.bot.goog"},
		{value: "https://a.example" + WellKnownPath, fetch: "https://a.example" + WellKnownPath, id: "https://a.example"},
		{value: "https://a.example:8443", params: ";type=directory", fetch: "https://a.example:8443" + WellKnownPath, id: "https://a.example:8443"},
		{value: "https://a.example/jwks.json?v=2#f", params: ";type=jwks_uri", fetch: "https://a.example/jwks.json?v=2", id: "https://a.example/jwks.json"},
		{value: "https://a.example/keys.json", fetch: "https://a.example/keys.json", id: "https://a.example/keys.json"},
		{value: "http://localhost:8080", fetch: "http://localhost:8080" + WellKnownPath, id: "http://localhost:8080"},
		{value: "https://a.example/card", params: ";type=cimd", err: "unsupported"},
		{value: "http://a.example", err: "https"},
		{value: "https://user:pw@a.example", err: "userinfo"},
		{value: "chatgpt.com", err: "not https"},
		{value: "https:///x", err: "host"},
	}
	for _, c := range cases {
		item, err := httpsfv.UnmarshalItem([]string{`"` + c.value + `"` + c.params})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := resolveAgent(c.value, item.Params, allow)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s%s: err %v, want %q", c.value, c.params, err, c.err)
			}
			continue
		}
		if err != nil || ref.fetchURL != c.fetch || ref.id != c.id {
			t.Errorf("%s%s: %+v, %v; want fetch %s id %s", c.value, c.params, ref, err, c.fetch, c.id)
		}
	}
}

func TestCacheTTL(t *testing.T) {
	cfg := Config{}.withDefaults()
	date := "Mon, 23 Nov 2026 00:00:00 GMT"
	cases := []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{}, time.Hour},
		{http.Header{"Cache-Control": {"max-age=3600"}}, time.Hour},
		{http.Header{"Cache-Control": {`public, max-age="7200"`}}, 2 * time.Hour},
		{http.Header{"Cache-Control": {"max-age=10"}}, 5 * time.Minute},
		{http.Header{"Cache-Control": {"max-age=9999999"}}, 24 * time.Hour},
		{http.Header{"Cache-Control": {"no-store"}}, 5 * time.Minute},
		{http.Header{"Cache-Control": {"max-age=86400, no-cache"}}, 5 * time.Minute},
		{http.Header{"Date": {date}, "Expires": {"Mon, 23 Nov 2026 02:00:00 GMT"}}, 2 * time.Hour},
		{http.Header{"Date": {date}, "Expires": {"0"}}, 5 * time.Minute},
		{http.Header{"Cache-Control": {"max-age=600"}, "Date": {date}, "Expires": {"Mon, 23 Nov 2026 02:00:00 GMT"}}, 10 * time.Minute},
	}
	for _, c := range cases {
		if got := cacheTTL(c.h, cfg); got != c.want {
			t.Errorf("%v: %v, want %v", c.h, got, c.want)
		}
	}
}

func TestParseSignatureAgent(t *testing.T) {
	h := parseSignatureAgent([]string{`"https://chatgpt.com"`})
	if h.err != nil || h.isDict || h.legacy != "https://chatgpt.com" {
		t.Errorf("legacy: %+v", h)
	}
	h = parseSignatureAgent([]string{`g="https://agent.bot.goog"`, `o="https://other.example";type=jwks_uri`})
	if h.err != nil || !h.isDict || len(h.dict.Names()) != 2 {
		t.Errorf("dictionary: %+v", h)
	}
	if h = parseSignatureAgent([]string{`"unterminated`}); h.err == nil {
		t.Error("malformed string accepted")
	}
	if h = parseSignatureAgent(nil); h.present {
		t.Error("absent header present")
	}
}

// TestMemberFor: which Signature-Agent member a signature relies on.
func TestMemberFor(t *testing.T) {
	covered := func(s string) []httpsfv.Item {
		l, err := httpsfv.UnmarshalList([]string{"(" + s + ")"})
		if err != nil {
			t.Fatal(err)
		}
		return l[0].(httpsfv.InnerList).Items
	}
	one := parseSignatureAgent([]string{`a="https://one.example"`})
	two := parseSignatureAgent([]string{`a="https://one.example", b="https://two.example";type=jwks_uri`})
	legacy := parseSignatureAgent([]string{`"https://legacy.example"`})
	cases := []struct {
		h       signatureAgentHeader
		covered string
		value   string
		ok      bool
		err     string
	}{
		{one, `"@authority" "signature-agent";key="a"`, "https://one.example", true, ""},
		{two, `"signature-agent";key="b"`, "https://two.example", true, ""},
		{one, `"signature-agent"`, "https://one.example", true, ""},
		{two, `"signature-agent"`, "", false, "2 members"},
		{two, `"signature-agent";key="c"`, "", false, "no member"},
		{one, `"@authority"`, "", false, ""},
		{legacy, `"signature-agent"`, "https://legacy.example", true, ""},
		{legacy, `"signature-agent";key="a"`, "", false, "bare string"},
	}
	for i, c := range cases {
		value, _, ok, err := c.h.memberFor(covered(c.covered))
		if value != c.value || ok != c.ok || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%d (%s): %q %v %v", i, c.covered, value, ok, err)
		}
	}
}
