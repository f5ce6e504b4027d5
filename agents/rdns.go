package agents

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
)

// maxPTRNames bounds how many matching PTR names are forward-resolved for
// one address: a hostile reverse zone may return many.
const maxPTRNames = 4

// rdnsResult is the outcome of a forward-confirmed reverse DNS check.
type rdnsResult uint8

const (
	rdnsFailed    rdnsResult = iota // a lookup failed: timeout, SERVFAIL, refused, network error
	rdnsConfirmed                   // a PTR name under a suffix resolves back to the address
	rdnsRejected                    // no PTR, no name under a suffix, or no name resolves back
)

// rdnsHasSuffix reports whether the DNS name equals one of the suffixes or ends
// in "." + suffix, ignoring case and a trailing dot. The suffixes must be
// lower case without a trailing dot. "googlebot.com.evil.example" and
// "evilgooglebot.com" do not match "googlebot.com".
func rdnsHasSuffix(name string, suffixes []string) bool {
	name = strings.TrimSuffix(name, ".")
	for _, s := range suffixes {
		if len(name) < len(s) || !strings.EqualFold(name[len(name)-len(s):], s) {
			continue
		}
		if len(name) == len(s) || name[len(name)-len(s)-1] == '.' {
			return true
		}
	}
	return false
}

// forwardConfirm runs forward-confirmed reverse DNS for ip against the
// suffixes: a PTR lookup, then an A (IPv4) or AAAA (IPv6) lookup of each
// PTR name under a suffix, which must return ip.
//
// Only answers that prove something reject: NXDOMAIN or an empty answer for
// the PTR, PTR names all outside the suffixes, or forward answers
// (NXDOMAIN, empty, other addresses) that never include ip. Any other
// error (timeout, SERVFAIL, refused, network) gives rdnsFailed, unless
// another name already confirmed the address.
func forwardConfirm(ctx context.Context, r *net.Resolver, suffixes []string, ip netip.Addr) rdnsResult {
	names, err := r.LookupAddr(ctx, ip.String())
	if len(names) == 0 {
		if isNotFound(err) {
			return rdnsRejected
		}
		// err == nil with no names cannot happen with Go's resolver; be safe.
		if err == nil {
			return rdnsRejected
		}
		return rdnsFailed
	}
	// Names that failed validation are dropped by LookupAddr, which then
	// returns the valid rest with an error; the rest is still usable.
	network := "ip4"
	if ip.Is6() {
		network = "ip6"
	}
	failed := false
	tried := 0
	for _, name := range names {
		if !rdnsHasSuffix(name, suffixes) {
			continue
		}
		if tried == maxPTRNames {
			break
		}
		tried++
		// A rooted name: the resolver must not try the host's search list.
		fakeFQDN := name
		if !strings.HasSuffix(fakeFQDN, ".") {
			fakeFQDN += "."
		}
		addrs, err := r.LookupNetIP(ctx, network, fakeFQDN)
		for _, a := range addrs {
			if a.Unmap() == ip {
				return rdnsConfirmed
			}
		}
		if err != nil && !isNotFound(err) {
			failed = true
		}
	}
	if failed {
		return rdnsFailed
	}
	return rdnsRejected
}

// isNotFound reports whether err says the name has no records of the
// asked type (NXDOMAIN, or NOERROR with an empty answer).
func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound && !de.IsTimeout
}
