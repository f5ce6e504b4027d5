package caddyrobots

import (
	"net/http"
	"unsafe"

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

// sentRequest returns r as the client sent it: Caddy's copy of the
// original request where there is one (inside a Caddy server), else r.
// Caddy's copy holds the method, the target and the URL; the Host is r's,
// which no handler ahead of this one rewrites.
func sentRequest(r *http.Request) sent { return sentRequestFrom(r, originalRequest(r)) }

// sentRequestFrom is sentRequest with Caddy's copy of the original request
// given (nil: none).
func sentRequestFrom(r, or *http.Request) sent {
	s := sent{Method: r.Method, RequestURI: r.RequestURI, Host: r.Host}
	u := r.URL
	if or != nil {
		s.Method, s.RequestURI, u = or.Method, or.RequestURI, or.URL
	}
	if u != nil {
		s.Path = u.Path
		if s.RequestURI == "" {
			s.RequestURI = u.RequestURI()
		}
	}
	return s
}

// originalRequest returns Caddy's copy of the request as it arrived
// (caddyhttp.OriginalRequestCtxKey), or nil outside a Caddy server.
func originalRequest(r *http.Request) *http.Request {
	return requestInPlace(r.Context().Value(caddyhttp.OriginalRequestCtxKey))
}

// requestInPlace returns the http.Request that v holds, or nil when v holds
// none. Caddy stores its copy of the original request by value, so a type
// assertion would copy its 300 bytes on every bot request (~45 ns, a fifth
// of an allowed bot's cost); the stored copy is read in place instead,
// through the interface's data word. Caddy never writes the copy after
// storing it, and neither does this package (TestOriginalRequestInPlace
// checks that this reads what the assertion does).
func requestInPlace(v any) *http.Request {
	if _, ok := v.(http.Request); !ok {
		return nil
	}
	// An interface holding a struct points to it from its second word.
	return (*http.Request)((*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1])
}

// rewriteValues returns the values of the request's rewrite headers
// (policy.RewriteHeaders), or nil when it has none: three map lookups.
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
