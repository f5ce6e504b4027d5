package policy

import (
	"net/http"
	"strings"
)

// ClientShape is the shape of the client that sent r: evidence the client
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
// The value is the same in every process (FNV-1a, no seed): a pool is named
// by it in a store that several instances share. It is not a secret and
// needs none: a client that copies another's shape can do so without
// hashing, and then shares its pool, which is what the server cannot tell
// apart. Called only for an unproven name of an address that rotates
// names, never for a person's request.
func ClientShape(r *http.Request, tlsFingerprint string) uint64 {
	if tlsFingerprint != "" {
		return fnvString(fnvString(fnvOffset, "tls"), tlsFingerprint)
	}
	// The header names as a set: each name's hash, mixed, added up, so
	// the map's order does not matter.
	var names uint64
	for k := range r.Header {
		if !perRequestHeader(k) {
			names += mix64(fnvString(fnvOffset, k))
		}
	}
	h := fnvByte(fnvByte(fnvOffset, byte(r.ProtoMajor)), byte(r.ProtoMinor))
	h = fnvUint64(h, names)
	for _, k := range shapeValues {
		for _, v := range r.Header[k] {
			if k == "Connection" {
				h = fnvConnection(h, v)
			} else {
				h = fnvString(h, strings.TrimSpace(v))
			}
			h = fnvByte(h, 0)
		}
		h = fnvByte(h, 1)
	}
	return h
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

// FNV-1a, 64 bits (hash/fnv's, without its interface), over the parts of a
// shape.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvByte(h uint64, c byte) uint64 { return (h ^ uint64(c)) * fnvPrime }

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = fnvByte(h, s[i])
	}
	return h
}

func fnvUint64(h, x uint64) uint64 {
	for i := 0; i < 64; i += 8 {
		h = fnvByte(h, byte(x>>i))
	}
	return h
}

// fnvConnection hashes a Connection value normalised: its tokens in lower
// case, without spaces ("Keep-Alive" and "keep-alive" are one program's).
func fnvConnection(h uint64, v string) uint64 {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == ' ' || c == '\t':
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		h = fnvByte(h, c)
	}
	return h
}

// mix64 spreads a name's hash over all 64 bits before the names are added
// up (SplitMix64's finaliser), so that two sets of names rarely add up to
// one sum.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
