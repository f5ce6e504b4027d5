package caddyrobots

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// TestFormsOfOriginalRequest: a bot's request is judged on the target it
// sent, read from the original request Caddy keeps in the context, and on
// the URL as rewritten ahead of the handler.
func TestFormsOfOriginalRequest(t *testing.T) {
	raw := httptest.NewRequest("GET", "/private/x?a=1", nil)
	r := caddyhttp.PrepareRequest(raw, caddy.NewReplacer(), httptest.NewRecorder(), nil)
	// A rewrite ahead of the handler, as Caddy's rewrite module does it.
	r.URL.Path, r.URL.RawQuery = "/about.html", ""
	r.RequestURI = r.URL.RequestURI()
	forms := formsOf(r)
	got := forms.all()
	if forms.raw != "/private/x?a=1" || !slices.Contains(got, "/private/x?a=1") || !slices.Contains(got, "/about.html") {
		t.Errorf("forms after a rewrite: raw %q, %q", forms.raw, got)
	}

	// Outside a Caddy server there is no original request: the target
	// as the request holds it.
	plain := httptest.NewRequest("GET", "/a/b", nil)
	if f := formsOf(plain); f.raw != "/a/b" || len(f.all()) != 1 {
		t.Errorf("forms outside Caddy: %q", f.all())
	}
}
