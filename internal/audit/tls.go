package audit

// The tls signal from an access log: the handler judges a browser's claim
// by the client's TLS handshake (policy.TLSVerdict), which the log carries
// only when the site adds the fields with Caddy's log_append:
//
//	log_append tls_fingerprint {http.robots.tls_fingerprint}
//	log_append tls_engine {http.robots.tls_engine}
//	log_append tls_versions {http.robots.tls_versions}
//
// The engine (ja4.Classify, worked out by the server from the whole
// ClientHello) and whether the hello offers TLS 1.3 are all the verdict
// reads of a handshake; the JA4 names the client's marks and state, as the
// handler's do. Without tls_versions the audit takes TLS 1.3 from the JA4's
// version, the highest the hello offered: exact but for a hello offering a
// TLS 1.3 draft beside the final version. A line without the fields is
// never judged by the signal, as a request without a fingerprint is not.

import (
	"bytes"
	"hash/maphash"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/agents/ja4"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// maxFingerprints bounds the rows of the table of who the tls signal
// judged; the rest are counted in one row, OtherFingerprints.
const maxFingerprints = 64

// OtherFingerprints is the fingerprint of the row that collects the
// handshakes beyond the bound of the report's table.
const OtherFingerprints = "(other fingerprints)"

// tlsSeen is what a line's fields say of the client's handshake, as the
// handler's fingerprintOf reads the connection: the JA4 its judgement and
// marks rest on and, when the handshake itself was read (not a JA4 from a
// proxy's header), its engine and whether it offers TLS 1.3. Its strings
// point into the line.
type tlsSeen struct {
	ja4    string
	hello  bool
	engine ja4.Engine
	tls13  bool
}

// fingerprintOf reads the client's handshake from e's fields, as the
// handler's fingerprintOf decides what its judgement rests on: a JA4 with
// its engine is the connection's; a JA4 without one a trusted proxy's
// header (tls_fingerprint_header), which keys marks but is never judged by
// the engine; a library's or unknown handshake from a trusted proxy (a
// client_ip other than remote_ip) is the proxy's own, not its client's,
// and is left out. False when the line carries no fingerprint.
func fingerprintOf(e *Entry) (tlsSeen, bool) {
	fp := unsafeString(e.TLSFingerprint)
	if !ja4.IsFingerprint(fp) {
		return tlsSeen{}, false
	}
	s := tlsSeen{ja4: fp}
	if eng, ok := parseEngine(e.TLSEngine); ok {
		s.hello, s.engine = true, eng
		if e.HasTLSVersions {
			s.tls13 = offersTLS13(e.TLSVersions)
		} else {
			s.tls13 = fp[1:3] == "13"
		}
	}
	trusted := len(e.ClientIP) > 0 && !bytes.Equal(e.ClientIP, e.RemoteIP)
	if s.hello && !s.engine.IsBrowser() && trusted {
		return tlsSeen{}, false
	}
	return s, true
}

// parseEngine reads a tls_engine value (ja4.Engine's names); false for
// "" (no handshake read) and anything else.
func parseEngine(b []byte) (ja4.Engine, bool) {
	for e := ja4.Unknown; e <= ja4.Library; e++ {
		if string(b) == e.String() {
			return e, true
		}
	}
	return ja4.Unknown, false
}

// offersTLS13 reports whether a tls_versions value ("0304,0303") lists
// TLS 1.3 as RFC 8446 published it (ja4.Hello.OffersFinalTLS13).
func offersTLS13(list []byte) bool {
	for len(list) > 0 {
		var v []byte
		v, list, _ = bytes.Cut(list, []byte(","))
		if string(bytes.TrimSpace(v)) == "0304" {
			return true
		}
	}
	return false
}

// tlsWhy is the handler's tls verdict on a request whose User-Agent is
// ue's and whose handshake is fp (policy.TLSVerdict): why it is an
// undeclared crawler's, "" when the handshake does not refute the claim.
// Only a handshake the server read is judged, never a browser engine's.
func (a *Auditor) tlsWhy(ue *uaEntry, e *Entry, fp *tlsSeen) string {
	if !fp.hello || fp.engine.IsBrowser() {
		return ""
	}
	// All TLSVerdict reads of a hello is whether it offers TLS 1.3.
	h := ja4.Hello{}
	if fp.tls13 {
		h.SupportedVersions = []uint16{0x0304}
	}
	v := ja4.Verdict{Engine: fp.engine, Fact: "the log's tls_engine says " + fp.engine.String()}
	return policy.TLSVerdict(&a.claimOf(ue, e.UserAgent).TLS, &h, v)
}

// undeclaredStateName is the name the state of an undeclared crawler
// whose User-Agent is ue's is kept under, as the handler names it: with a
// fingerprint, agents.UndeclaredStateNameTLS (a library's handshake names
// the client whatever User-Agent it sends next); without one, the
// User-Agent's.
func (a *Auditor) undeclaredStateName(ue *uaEntry, e *Entry, fp *tlsSeen) string {
	if fp == nil || fp.ja4 == "" {
		return a.claimOf(ue, e.UserAgent).StateName
	}
	return agents.UndeclaredStateNameTLS(unsafeString(e.UserAgent), fp.ja4, fp.engine)
}

// trapClient is the hash of whom a trap mark names, as the handler's
// trapKeyOf hashes it: with a fingerprint, a library's or unknown stack's
// JA4 alone, a browser engine's JA4 with the User-Agent; without one, the
// User-Agent.
func (a *Auditor) trapClient(e *Entry, fp *tlsSeen) uint64 {
	if fp == nil || fp.ja4 == "" {
		return maphash.Bytes(a.trapSeed, e.UserAgent)
	}
	var mh maphash.Hash
	mh.SetSeed(a.trapSeed)
	if fp.engine.IsBrowser() {
		mh.Write(e.UserAgent)
	} else {
		mh.WriteString("TLS")
	}
	mh.WriteByte(0)
	mh.WriteString(fp.ja4)
	return mh.Sum64()
}

// tlsKey is one row of the table of who the tls signal judged: a site, a
// handshake and the browser its User-Agent claimed.
type tlsKey struct {
	host, fingerprint, engine, claims string
}

// tlsRow is what the tls signal did to one row's requests.
type tlsRow struct {
	requests, refused, wouldRefuse int64
	addrs                          topAddrs
	why                            string // the first verdict, for the report
	span                                  // of its requests
}

// countTLS counts a request judged by the tls signal (j.tls, j.why,
// j.claims) in the
// row of its site, handshake and claim, at most maxFingerprints rows
// (the rest in one).
func (a *Auditor) countTLS(he *hostEntry, j *judging, addr netip.Addr, t time.Time, refused bool) {
	k := tlsKey{host: he.host, fingerprint: j.tls.ja4, engine: j.tls.engine.String(), claims: j.claims}
	row := a.tlsRows[k]
	if row == nil {
		if len(a.tlsRows) >= maxFingerprints {
			k = tlsKey{host: he.host, fingerprint: OtherFingerprints}
			row = a.tlsRows[k]
		}
		if row == nil {
			k.fingerprint = strings.Clone(k.fingerprint)
			row = &tlsRow{why: j.why}
			if a.tlsRows == nil {
				a.tlsRows = map[tlsKey]*tlsRow{}
			}
			a.tlsRows[k] = row
		}
	}
	row.requests++
	if refused {
		if j.log {
			row.wouldRefuse++
		} else {
			row.refused++
		}
	}
	if addr.IsValid() {
		row.addrs.add(addr, 1)
	}
	row.span.add(t)
}

// FingerprintReport is who the tls signal judged, by handshake: the
// requests of one site whose User-Agent claimed a browser over a TLS
// handshake that refutes the claim, and what was done to them. Refused
// are those the handler refused (the signal in enforce); WouldRefuse those
// it judged in log mode and would refuse in enforce: what turning the
// signal to enforce would cost, to be read for people behind a
// TLS-inspecting proxy before doing it.
type FingerprintReport struct {
	Host        string `json:"host"`
	Fingerprint string `json:"fingerprint"` // the JA4, or OtherFingerprints
	Engine      string `json:"engine"`      // library or unknown ({http.robots.tls_engine})
	// Claims is the browser the User-Agents claimed (agents.TLSClaim:
	// Chrome, Firefox, Safari, Internet Explorer, "a browser" for a bare
	// Mozilla/5.0).
	Claims      string `json:"claims"`
	Requests    int64  `json:"requests"`
	Refused     int64  `json:"refused"`
	WouldRefuse int64  `json:"would_refuse"`
	// Addresses counts the client addresses behind the requests, exact up
	// to 32; ManyAddresses is set beyond. TopAddresses are those with the
	// most requests (at most five).
	Addresses     int            `json:"addresses"`
	ManyAddresses bool           `json:"many_addresses,omitempty"`
	TopAddresses  []AddressCount `json:"top_addresses,omitempty"`
	// Why is the verdict on the first of its requests.
	Why   string    `json:"why"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
}

// fingerprintReports lists the rows of the tls table, most requests first.
func (a *Auditor) fingerprintReports() []FingerprintReport {
	out := make([]FingerprintReport, 0, len(a.tlsRows))
	for k, row := range a.tlsRows {
		out = append(out, FingerprintReport{Host: k.host, Fingerprint: k.fingerprint, Engine: k.engine, Claims: k.claims,
			Requests: row.requests, Refused: row.refused, WouldRefuse: row.wouldRefuse,
			Addresses: len(row.addrs.slots), ManyAddresses: row.addrs.spread(), TopAddresses: row.addrs.report(),
			Why: row.why, First: row.first, Last: row.last})
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := &out[i], &out[j]
		if (x.Fingerprint == OtherFingerprints) != (y.Fingerprint == OtherFingerprints) {
			return y.Fingerprint == OtherFingerprints
		}
		if x.Requests != y.Requests {
			return x.Requests > y.Requests
		}
		return x.Host+x.Fingerprint+x.Claims < y.Host+y.Fingerprint+y.Claims
	})
	return out
}
