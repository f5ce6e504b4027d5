package caddyrobots

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// TestSentRequest: a bot's request is judged on the target it sent, read
// from the original request Caddy keeps in the context, never on the URL
// the operator's routing rewrote ahead of the handler (handle_path,
// rewrite): robots.txt governs the URL the crawler asked for.
func TestSentRequest(t *testing.T) {
	raw := httptest.NewRequest("GET", "/docs/search/?q=1", nil)
	orig := *raw
	ctx := context.WithValue(raw.Context(), caddyhttp.OriginalRequestCtxKey, orig)
	r := caddyhttp.PrepareRequest(raw.WithContext(ctx), caddy.NewReplacer(), httptest.NewRecorder(), nil)
	// handle_path /docs/* strips the prefix, as Caddy's rewrite module does.
	r.URL.Path = "/search/"
	r.RequestURI = r.URL.RequestURI()
	s := sentRequest(r)
	if s.RequestURI != "/docs/search/?q=1" || s.Path != "/docs/search/" {
		t.Fatalf("sent request: %+v", s)
	}
	tg := policy.ParseTarget(s.Method, s.RequestURI, rewriteValues(r)...)
	if got := tg.Forms(); !slices.Equal(got, []string{"/docs/search/?q=1"}) {
		t.Errorf("forms: %q, want only the URL as sent", got)
	}

	// Outside a Caddy server there is no original request: the request as
	// it is.
	plain := httptest.NewRequest("GET", "/a/b", nil)
	if s := sentRequest(plain); s.RequestURI != "/a/b" {
		t.Errorf("outside Caddy: %+v", s)
	}

	// A request for /docs/robots.txt stripped to /robots.txt is not a
	// request for /robots.txt.
	if isRobotsTxtRequest(rewritten("/docs/robots.txt", "/robots.txt")) {
		t.Error("/docs/robots.txt stripped to /robots.txt counts as /robots.txt")
	}
	if !isRobotsTxtRequest(rewritten("/robots.txt", "/robots.txt")) {
		t.Error("/robots.txt is not recognised")
	}
}

// rewritten is a request for sent whose URL a handler ahead rewrote to now.
func rewritten(sent, now string) *http.Request {
	raw := httptest.NewRequest("GET", sent, nil)
	ctx := context.WithValue(raw.Context(), caddyhttp.OriginalRequestCtxKey, *raw)
	r := raw.WithContext(ctx)
	u := *r.URL
	u.Path = now
	r.URL = &u
	return r
}

// TestOriginalRequest: originalRequest reads Caddy's copy of the request as
// it arrived, not the request a handler ahead rewrote, and nothing for a
// context without a copy or with a value of another type under the key.
func TestOriginalRequest(t *testing.T) {
	raw := httptest.NewRequest("POST", "http://example.com/a%2Fb/c?q=1", nil)
	raw.Host = "Example.COM:8443"
	r := caddyhttp.PrepareRequest(raw, caddy.NewReplacer(), httptest.NewRecorder(), nil)
	r.URL.Path, r.Method, r.RequestURI = "/rewritten", "GET", "/rewritten"
	got := originalRequest(r)
	if !got.ok {
		t.Fatal("originalRequest: none inside a prepared request")
	}
	if got.method != "POST" || got.requestURI != "http://example.com/a%2Fb/c?q=1" || got.url.Path != "/a/b/c" || got.url.RawQuery != "q=1" {
		t.Errorf("original request: %s %q %+v", got.method, got.requestURI, got.url)
	}
	if s := sentRequestFrom(r, got); s.Method != "POST" || s.Path != "/a/b/c" || s.Host != "Example.COM:8443" {
		t.Errorf("sent request: %+v", s)
	}
	if originalRequest(httptest.NewRequest("GET", "/", nil)).ok {
		t.Error("a request outside Caddy has an original request")
	}
	for _, v := range []any{raw, "x", 42} {
		other := raw.WithContext(context.WithValue(context.Background(), caddyhttp.OriginalRequestCtxKey, v))
		if originalRequest(other).ok {
			t.Errorf("a %T under the key read as a request", v)
		}
	}
}

// TestCaddyValues: a judged request reads the vars, the replacer and the
// original request Caddy's server stored, the nearest layer of a key
// winning, and nothing outside a Caddy server.
func TestCaddyValues(t *testing.T) {
	raw := httptest.NewRequest("GET", "/a", nil)
	r := caddyhttp.PrepareRequest(raw, caddy.NewReplacer(), httptest.NewRecorder(), &caddyhttp.Server{})
	cv := caddyValuesOf(r)
	if cv.vars == nil || cv.repl == nil || !cv.orig.ok {
		t.Fatalf("the prepared request's values: %+v", cv)
	}
	shadow := map[string]any{"mine": 1}
	cv = caddyValuesOf(r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, shadow)))
	if _, ok := cv.vars["mine"]; !ok {
		t.Error("the vars of the nearest layer were not read")
	}
	if cv := caddyValuesOf(httptest.NewRequest("GET", "/", nil)); cv.vars != nil || cv.repl != nil || cv.orig.ok {
		t.Errorf("outside Caddy: %+v", cv)
	}
}
