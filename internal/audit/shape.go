package audit

// Rotation pools by client shape: on an address that presents many crawler
// names (state.Rotations), an unverified name without a budget of its own
// spends a Crawl-delay pool of its client's shape at that address
// (policy.ClientShape: the JA4 of its TLS handshake, else its header names,
// a few header values and its HTTP version). The handler reads the shape
// from the request; the audit reads it from what Caddy's JSON access log
// recorded of the request, as the handler read it:
//
//   - request.headers is the request's header map, which Caddy logs as it
//     arrived, before any handler ran (a clone of it). It redacts the
//     values of Cookie, Set-Cookie, Authorization and Proxy-Authorization
//     and keeps their names: the shape reads their names only.
//   - request.proto is the HTTP version ("HTTP/2.0").
//   - the tls_fingerprint field (log_append, see tls.go) is the JA4 the
//     handler's judgement rests on, read as fingerprintOf reads it.
//
// A line that records no headers (the Combined, Common and nginx formats)
// has shape 0: there every unproven name of a rotating address shares one
// pool, where the server kept one per shape, so the audit may throttle
// requests the server served; the report says how many such requests it
// judged (Report.RotatingUnshaped).

import (
	"encoding/json"
	"net/http"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// loggedShape is the shape of the client of the line being judged
// (pipeline.Config.LoggedShape): policy.ClientShape of the headers, the
// HTTP version and the TLS fingerprint the line recorded, 0 for a line
// that records no headers. The pipeline asks for it only for an unproven
// name of an address that rotates names, so the headers are decoded for
// those lines alone.
func (a *Auditor) loggedShape() uint64 {
	e := &a.entry
	if !e.HasHeaders {
		return 0
	}
	if s, ok := fingerprintOf(e); ok {
		return policy.ClientShape(nil, 0, 0, s.ja4)
	}
	if a.shapeHeader == nil {
		a.shapeHeader = http.Header{}
	}
	clear(a.shapeHeader)
	// The scanner walked the object already: a header whose value is not
	// an array of strings, which Caddy never writes, is left out.
	loggedHeader(e.Headers, a.shapeHeader)
	major, minor, _ := http.ParseHTTPVersion(string(e.Proto))
	return policy.ClientShape(a.shapeHeader, major, minor, "")
}

// loggedHeader reads a logged header object (request.headers: each name
// with an array of strings) into h, without the headers whose value is
// not such an array. Only the lines of rotating addresses get here, so
// encoding/json's speed does not matter.
func loggedHeader(b []byte, h http.Header) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil {
		return
	}
	for name, raw := range obj {
		var values []string
		if json.Unmarshal(raw, &values) == nil {
			h[name] = values
		}
	}
}
