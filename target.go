package caddyrobots

import (
	"net/http"
	"net/url"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// robots.txt governs the URL the client sent. Caddy keeps a copy of the
// request as it arrived (caddyhttp.OriginalRequestCtxKey) before any
// handler rewrote it: a bot's request is judged on that copy, so that the
// operator's own routing (handle_path, rewrite, uri strip_prefix) is never
// judged as if the crawler had asked for the rewritten URL. See
// policy.Target for the forms of it that are judged.

// sent is the part of a request as the client sent it that the decision
// reads.
type sent struct {
	Method     string
	RequestURI string // the request target, unmodified
	Host       string // the Host header
	Path       string // the path Go decoded from the target
}

// caddyValues are what Caddy's server stored in a request's context for
// its handlers and what a judged request reads of them: the request
// variables, the replacer and the request as it arrived. Each is the
// zero value where the server stored none (outside a Caddy server).
// Only bots' requests ask for them: a browser's request never reads the
// context.
type caddyValues struct {
	vars map[string]any
	repl *caddy.Replacer
	orig original
}

// caddyValuesOf asks r's context for the values Caddy's server stored in
// it, once per judged request.
func caddyValuesOf(r *http.Request) caddyValues {
	ctx := r.Context()
	var cv caddyValues
	cv.vars, _ = ctx.Value(caddyhttp.VarsCtxKey).(map[string]any)
	cv.repl, _ = ctx.Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	cv.orig = originalRequest(r)
	return cv
}

// original is what the decision reads of Caddy's copy of the request as it
// arrived (caddyhttp.OriginalRequestCtxKey), before any handler rewrote it.
type original struct {
	// ok is false when there is no copy (outside a Caddy server).
	ok         bool
	method     string
	requestURI string
	url        *url.URL
}

// originalRequest returns the fields the decision reads of Caddy's copy of
// the request as it arrived; ok is false outside a Caddy server.
func originalRequest(r *http.Request) original {
	or, ok := r.Context().Value(caddyhttp.OriginalRequestCtxKey).(http.Request)
	if !ok {
		return original{}
	}
	return original{ok: true, method: or.Method, requestURI: or.RequestURI, url: or.URL}
}

// sentRequest returns r as the client sent it: Caddy's copy of the
// original request where there is one (inside a Caddy server), else r.
// Caddy's copy holds the method, the target and the URL; the Host is r's,
// which no handler ahead of this one rewrites.
func sentRequest(r *http.Request) sent { return sentRequestFrom(r, originalRequest(r)) }

// sentRequestFrom is sentRequest with Caddy's copy of the original request
// given (orig.ok false: none).
func sentRequestFrom(r *http.Request, orig original) sent {
	s := sent{Method: r.Method, RequestURI: r.RequestURI, Host: r.Host}
	u := r.URL
	if orig.ok {
		s.Method, s.RequestURI, u = orig.method, orig.requestURI, orig.url
	}
	if u != nil {
		s.Path = u.Path
		if s.RequestURI == "" {
			s.RequestURI = u.RequestURI()
		}
	}
	return s
}

// rewriteValues returns the values of the request's rewrite headers
// (policy.RewriteHeaders), or nil when it has none.
func rewriteValues(r *http.Request) []string {
	var vals [len(policy.RewriteHeaders)]string
	any := false
	for i, k := range policy.RewriteHeaders {
		if v := r.Header[k]; len(v) > 0 {
			vals[i], any = v[0], true
		}
	}
	if !any {
		return nil
	}
	return vals[:]
}

// isRobotsTxtRequest reports whether r asks for /robots.txt. It is judged on
// the path Go parsed from the target the client sent (never on the raw
// target: "http://host?/robots.txt" asks for "/"), and not on a URL the
// operator's routing rewrote: inside handle_path /docs/*, a request for
// /docs/robots.txt is not one. The current path is compared first, so
// every other request pays one string comparison.
func isRobotsTxtRequest(r *http.Request) bool {
	if r.URL == nil || r.URL.Path != "/robots.txt" {
		return false
	}
	return sentRequest(r).Path == "/robots.txt"
}

// stripRewriteHeaders removes the rewrite headers from a request for
// /robots.txt, which is always served, even to banned bots: a backend that
// honours X-Original-URL must not serve another path in its place.
func stripRewriteHeaders(r *http.Request) {
	for _, k := range policy.RewriteHeaders {
		delete(r.Header, k)
	}
}
