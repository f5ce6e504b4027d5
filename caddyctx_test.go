package caddyrobots

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// valuesAsked is caddyValuesOf done with Context.Value, the reference.
func valuesAsked(r *http.Request) caddyValues {
	ctx := r.Context()
	var cv caddyValues
	cv.vars, _ = ctx.Value(caddyhttp.VarsCtxKey).(map[string]any)
	cv.repl, _ = ctx.Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	cv.orig = originalRequest(r)
	return cv
}

// sameValues reports whether a and b hold the same vars map, replacer and
// original request.
func sameValues(a, b caddyValues) bool {
	sameVars := (a.vars == nil) == (b.vars == nil)
	if a.vars != nil && b.vars != nil {
		a.vars["caddy-robots probe"] = 1
		_, sameVars = b.vars["caddy-robots probe"]
		delete(a.vars, "caddy-robots probe")
	}
	return sameVars && a.repl == b.repl && a.orig == b.orig
}

func TestCaddyValuesWalk(t *testing.T) {
	if valueCtxTab == nil {
		t.Fatal("the context package's WithValue layer is not laid out as valueCtx: caddyValuesOf falls back to Context.Value (correct, ~45 ns slower); update valueCtx")
	}
	raw, ip := rawRequest("/a", benchBotUA, "203.0.113.9:4000")
	w := httptest.NewRecorder()
	r := prepare(raw, ip, w, &caddyhttp.Server{})
	want := valuesAsked(r)
	if want.vars == nil || want.repl == nil || want.orig == nil {
		t.Fatalf("the prepared request lacks Caddy's values: %+v", want)
	}
	cancelled, cancel := context.WithCancel(r.Context())
	defer cancel()
	shadowed := context.WithValue(r.Context(), caddyhttp.VarsCtxKey, map[string]any{})
	cases := map[string]*http.Request{
		"as Caddy's server prepares it": r,
		"under a cancel layer":          r.WithContext(cancelled),
		"with the vars shadowed":        r.WithContext(shadowed),
		"with another key on top":       r.WithContext(context.WithValue(r.Context(), caddy.CtxKey("other"), 1)),
		"with a value of another type":  r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, "not a replacer")),
		"outside Caddy":                 httptest.NewRequest("GET", "/", nil),
	}
	for name, req := range cases {
		got, ref := caddyValuesOf(req), valuesAsked(req)
		if !sameValues(got, ref) {
			t.Errorf("%s: walked %+v, Context.Value %+v", name, got, ref)
		}
	}
	if got := caddyValuesOf(cases["with the vars shadowed"]); sameValues(got, want) {
		t.Error("the shadowed vars were read: the nearest layer must win")
	}
	if n := testing.AllocsPerRun(100, func() { _ = caddyValuesOf(r) }); n != 0 {
		t.Errorf("caddyValuesOf allocates %v times", n)
	}
}

func BenchmarkCaddyValuesOf(b *testing.B) {
	raw, ip := rawRequest("/a", benchBotUA, "203.0.113.9:4000")
	r := prepare(raw, ip, httptest.NewRecorder(), &caddyhttp.Server{})
	b.ReportAllocs()
	for b.Loop() {
		_ = caddyValuesOf(r)
	}
}

// BenchmarkCaddyValuesAsked is BenchmarkCaddyValuesOf with three calls to
// Context.Value, for comparison.
func BenchmarkCaddyValuesAsked(b *testing.B) {
	raw, ip := rawRequest("/a", benchBotUA, "203.0.113.9:4000")
	r := prepare(raw, ip, httptest.NewRecorder(), &caddyhttp.Server{})
	b.ReportAllocs()
	for b.Loop() {
		_ = valuesAsked(r)
	}
}
