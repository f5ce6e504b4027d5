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

// TestOriginalRequestInPlace: originalRequest reads Caddy's stored copy of
// the request in place; it must read exactly what the type assertion
// (which copies) reads, and nothing for a context without a copy or with a
// value of another type under the key.
func TestOriginalRequestInPlace(t *testing.T) {
	raw := httptest.NewRequest("POST", "http://example.com/a%2Fb/c?q=1", nil)
	raw.Host = "Example.COM:8443"
	r := caddyhttp.PrepareRequest(raw, caddy.NewReplacer(), httptest.NewRecorder(), nil)
	r.URL.Path, r.Method, r.RequestURI = "/rewritten", "GET", "/rewritten"
	copied, ok := r.Context().Value(caddyhttp.OriginalRequestCtxKey).(http.Request)
	if !ok {
		t.Fatal("PrepareRequest stored no original request")
	}
	got := originalRequest(r)
	if got == nil {
		t.Fatal("originalRequest: nil")
	}
	if got.Method != copied.Method || got.RequestURI != copied.RequestURI || got.URL != copied.URL ||
		got.Host != copied.Host || got.RemoteAddr != copied.RemoteAddr || got.Proto != copied.Proto {
		t.Errorf("in place %+v, copied %+v", got, copied)
	}
	if got.Method != "POST" || got.URL.Path != "/a/b/c" || got.URL.RawQuery != "q=1" {
		t.Errorf("original request: %s %+v", got.Method, got.URL)
	}
	if originalRequest(httptest.NewRequest("GET", "/", nil)) != nil {
		t.Error("a request outside Caddy has an original request")
	}
	for _, v := range []any{raw, "x", 42} {
		other := raw.WithContext(context.WithValue(context.Background(), caddyhttp.OriginalRequestCtxKey, v))
		if originalRequest(other) != nil {
			t.Errorf("a %T under the key read as a request", v)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = originalRequest(r) }); n != 0 {
		t.Errorf("originalRequest allocates %v times", n)
	}
}
