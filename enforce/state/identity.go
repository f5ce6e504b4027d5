package state

import (
	"net/netip"
	"strings"
)

// MaxNameLen is the longest identity name kept, in bytes. Longer names are
// cut, so that a client cannot make an entry large by sending a long token.
const MaxNameLen = 64

// MaxSiteLen is the longest site kept, in bytes: the longest DNS name.
const MaxSiteLen = 253

// Identity is whose budget and strikes a request counts against. It is
// comparable, so stores key maps on it without allocating.
//
// Verified crawlers (whose address was checked against the operator's
// published ranges or by reverse DNS) share one budget across all their
// addresses: Prefix is zero. Every other client is counted per network: its
// IPv4 address (/32) or its IPv6 /64, the smallest block a single subscriber
// usually holds, so that rotating through the addresses of one /64 gains
// nothing.
type Identity struct {
	// Site scopes the identity to one site (a host name), so that one
	// crawler's budget on one site is not spent on another. Empty for a
	// store that serves a single site.
	Site string
	// Name is the verified crawler's name ("Googlebot"), or for unverified
	// clients the robots.txt token they are judged by.
	Name string
	// Prefix is zero for verified crawlers; otherwise the client's network:
	// IPv4 /32, IPv6 /64.
	Prefix netip.Prefix
	// Verified reports that the crawler's identity was verified.
	Verified bool
}

// NewIdentity returns the identity of a request from addr judged as name.
// For a verified crawler the address is dropped; otherwise IPv4-mapped IPv6
// addresses are unmapped, zones are dropped, IPv4 keeps the whole address
// (/32) and IPv6 is grouped by /64. Names longer than [MaxNameLen] are cut.
func NewIdentity(name string, verified bool, addr netip.Addr) Identity {
	id := Identity{Name: clipName(name), Verified: verified}
	if verified || !addr.IsValid() {
		return id
	}
	addr = addr.Unmap().WithZone("")
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	id.Prefix, _ = addr.Prefix(bits) // cannot fail: bits fits the family
	return id
}

// String returns a stable text key for the identity: "v:Googlebot" for a
// verified crawler, "u:GPTBot@203.0.113.7/32" for an unverified client,
// "v:example.com|Googlebot" with a Site. The characters '%', '@', '{', '}',
// '|' and bytes outside printable ASCII in the site and the name are
// percent-encoded, so distinct identities never share a key and the key is
// safe inside a Redis Cluster hash tag.
func (id Identity) String() string {
	var b strings.Builder
	b.Grow(len(id.Name) + 48)
	if id.Verified {
		b.WriteString("v:")
	} else {
		b.WriteString("u:")
	}
	const hex = "0123456789ABCDEF"
	id = id.clipped()
	escape := func(s string) {
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c <= ' ' || c >= 0x7f || c == '%' || c == '@' || c == '{' || c == '}' || c == '|' {
				b.WriteByte('%')
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
				continue
			}
			b.WriteByte(c)
		}
	}
	if id.Site != "" {
		escape(id.Site)
		b.WriteByte('|')
	}
	escape(id.Name)
	if id.Prefix.IsValid() {
		b.WriteByte('@')
		b.WriteString(id.Prefix.String())
	}
	return b.String()
}

// clipped returns id with Name cut to MaxNameLen and Site to MaxSiteLen
// bytes.
func (id Identity) clipped() Identity {
	id.Name = clipName(id.Name)
	if len(id.Site) > MaxSiteLen {
		id.Site = id.Site[:MaxSiteLen]
	}
	return id
}

// clipName cuts name to MaxNameLen bytes.
func clipName(name string) string {
	if len(name) > MaxNameLen {
		return name[:MaxNameLen]
	}
	return name
}
