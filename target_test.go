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
