package policy

import (
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"slices"
	"strings"
)

// ClientShape is the shape of the client that sent a request with the
// header map h (as Go's server parses it: names canonical, the Host in
// its own field) over HTTP/protoMajor.protoMinor: evidence the client
// produces itself with every request and that changing its User-Agent does
// not change, so that an address's unproven names that look alike share a
// Crawl-delay pool and those that do not keep apart (state.Rotations.Pool).
//
//   - With tlsFingerprint (the JA4 of the client's own TLS handshake, ""
//     without one), the shape is the fingerprint's: a client's TLS library
//     chooses its handshake, not the headers it is told to send.
//   - Otherwise it is what the program sends besides its User-Agent and
//     target: the set of its header names (Go's http.Header is a map and
//     keeps no order) without those that change from one request of a
//     program to the next (perRequestHeader), the values of Accept,
//     Accept-Encoding, Accept-Language and Connection (its tokens in lower
//     case), and the HTTP version. wget, wget2, HTTrack, curl, Python's
//     urllib, Go's net/http and Scrapy all differ there.
//
// The value is the same in every process (hash/fnv's FNV-1a, no seed): a pool is named
// by it in a store that several instances share. It is not a secret and
// needs none: a client that copies another's shape can do so without
// hashing, and then shares its pool, which is what the server cannot tell
// apart. Called only for an unproven name of an address that rotates
// names, never for a person's request.
//
// The server passes the request's own header map and version; the audit
// passes those Caddy's JSON access log recorded of it (request.headers,
// request.proto, the tls_fingerprint field), so that both give a client
// the same shape. Caddy's log redacts the values of Cookie, Authorization
// and Proxy-Authorization, but keeps their names, and their values are
// not read here.
func ClientShape(h http.Header, protoMajor, protoMinor int, tlsFingerprint string) uint64 {
	sum := fnv.New64a()
	if tlsFingerprint != "" {
		io.WriteString(sum, "tls\x00"+tlsFingerprint)
		return sum.Sum64()
	}
	names := make([]string, 0, len(h))
	for k := range h {
		if !perRequestHeader(k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	fmt.Fprintf(sum, "HTTP/%d.%d\x00%s\x00", protoMajor, protoMinor, strings.Join(names, ","))
	for _, k := range shapeValues {
		for _, v := range h[k] {
			if k == "Connection" {
				// Its tokens in lower case, without spaces: "Keep-Alive"
				// and "keep-alive" are one program's.
				v = strings.ToLower(strings.Join(strings.Fields(v), ""))
			}
			io.WriteString(sum, strings.TrimSpace(v)+"\x00")
		}
		io.WriteString(sum, "\x01")
	}
	return sum.Sum64()
}

// shapeValues are the headers whose values are part of a client's shape
// over plain HTTP: programs set them once, and differ in them.
var shapeValues = [...]string{"Accept", "Accept-Encoding", "Accept-Language", "Connection"}

// perRequestHeader reports whether header k (canonical) may come and go
// between the requests of one program, with the page it asks for, its
// cache, a retry or a proxy on the way: such a header says nothing of the
// program, and counting it would give one crawler several shapes (wget
// sends Referer from its second page on).
func perRequestHeader(k string) bool {
	switch k {
	case "Referer", "Cookie", "Authorization", "Proxy-Authorization",
		"If-Modified-Since", "If-None-Match", "If-Match", "If-Unmodified-Since", "If-Range", "Range",
		"Content-Length", "Content-Type", "Content-Encoding", "Content-Digest", "Expect",
		"Cache-Control", "Pragma", "Origin", "Priority",
		"Forwarded", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Real-Ip", "Via",
		"Signature", "Signature-Input", "Signature-Agent":
		return true
	}
	return false
}
