package ja4

import "slices"

// Engine is the kind of TLS stack a ClientHello comes from: one of the
// three browser engines' own stacks, an HTTP library's, or not known.
//
// What matters to a judgement is whether the client is a browser engine at
// all, never which one: a person's User-Agent switcher (Firefox claiming
// Chrome), a DevTools override, Brave, Vivaldi, Electron, WebViews and
// in-app browsers all speak an engine's own TLS. Only Library refutes a
// browser's claim (ClaimHolds); Unknown is never evidence of anything.
type Engine uint8

// The engines Classify tells apart.
const (
	// Unknown: no structural fact of a browser engine or of a library.
	// A partial, unusual or future hello lands here, and is never judged.
	Unknown Engine = iota
	// Chromium: BoringSSL as Chromium configures it (Chrome, Edge, Opera,
	// Brave, Vivaldi, Samsung Internet, Electron's renderer, Android
	// WebView, QtWebEngine, ...).
	Chromium
	// Firefox: NSS as Firefox configures it (Firefox and its forks on
	// every platform but iOS).
	Firefox
	// Safari: Apple's TLS stack (Safari, and every browser and WebView on
	// iOS).
	Safari
	// Library: a general-purpose TLS library's hello (OpenSSL, GnuTLS,
	// Go's crypto/tls, Java's JSSE, rustls, ...), carrying a feature no
	// browser engine has ever sent.
	Library
)

// String returns "chromium", "firefox", "safari", "library" or "unknown".
func (e Engine) String() string {
	switch e {
	case Chromium:
		return "chromium"
	case Firefox:
		return "firefox"
	case Safari:
		return "safari"
	case Library:
		return "library"
	}
	return "unknown"
}

// IsBrowser reports whether e is one of the browser engines' stacks.
func (e Engine) IsBrowser() bool { return e == Chromium || e == Firefox || e == Safari }

// ClaimHolds reports whether a User-Agent's claim to be a browser survives
// a handshake from engine e. It fails only for Library: the claimed browser
// is deliberately not an input, because the test is whether the client is
// a browser engine at all, not whether it is the browser it names (a
// person's User-Agent switcher makes Firefox claim Chrome; DevTools makes
// Chrome claim anything). Unknown holds: absence of evidence is not
// evidence.
func ClaimHolds(e Engine) bool { return e != Library }

// Verdict is Classify's answer: the engine and the structural fact it
// rests on, for logs and for an operator deciding whether to enforce.
type Verdict struct {
	// Engine is the kind of stack the hello comes from.
	Engine Engine
	// Fact names the fact that decided, e.g. "GREASE with
	// application_settings (BoringSSL as Chromium configures it)";
	// empty for Unknown.
	Fact string
}

// Extension and cipher code points the classification reads (IANA TLS
// registries).
const (
	extStatusRequestV2      = 0x0011
	extEncryptThenMAC       = 0x0016
	extRecordSizeLimit      = 0x001c
	extDelegatedCredentials = 0x0022
	extPostHandshakeAuth    = 0x0031
	extSignatureAlgsCert    = 0x0032
	extALPSOld              = 0x4469 // application_settings, first code point
	extALPS                 = 0x44cd // application_settings, current code point

	cipherRenegotiationSCSV = 0x00ff
	cipher3DESRSA           = 0x000a // TLS_RSA_WITH_3DES_EDE_CBC_SHA
	cipherAES128CCM13       = 0x1304 // TLS_AES_128_CCM_SHA256
	cipherAES128CCM813      = 0x1305 // TLS_AES_128_CCM_8_SHA256
)

// Classify says which kind of TLS stack h comes from, from structural facts
// that hold across releases rather than from fingerprints that change with
// each. It is meant to run once per connection, when the hello is read. In
// order:
//
//  1. GREASE (RFC 8701) in the cipher suites, the extensions and the
//     supported groups: a browser engine. BoringSSL GREASEs only when the
//     application asks, and Chromium has asked since Chrome 55 (2016);
//     Apple's stack does it for Safari and every iOS browser. No
//     general-purpose library does it by default (OpenSSL, GnuTLS, NSS,
//     Go, Java, rustls, Node, Python: none). Of these hellos:
//     - with application_settings (ALPS, 0x4469, later 0x44cd): Chromium,
//     which alone ships it (since Chrome 91 for HTTP/2; Chromium 156,
//     recorded here, sends 0x44cd);
//     - else with TLS_RSA_WITH_3DES_EDE_CBC_SHA: Safari, which still
//     offers 3DES last (Safari 15 to 18), where Chromium dropped it in
//     Chrome 93 (2021);
//     - else Chromium (releases before ALPS, and BoringSSL-based tools
//     configured as Chromium: curl-impersonate-style tools pass, by
//     design, as they do any test a browser passes).
//  2. No GREASE, with delegated_credentials (RFC 9345) and
//     record_size_limit (RFC 8449): Firefox. NSS implements both and
//     Firefox turns both on (record_size_limit since Firefox 64,
//     delegated credentials since about Firefox 77, 2020; Firefox ESR 153,
//     recorded here, sends both); no other stack here sends
//     delegated_credentials, and GnuTLS, which sends record_size_limit,
//     does not. If these cut-offs are off, an older Firefox is Unknown,
//     not Library: no Firefox sends a feature of step 3.
//  3. One of these features, which no browser engine sends (BoringSSL
//     implements none of them, Apple's stack neither, and NSS only
//     post-handshake authentication, which Firefox leaves off): a library.
//     - encrypt_then_mac (RFC 7366): OpenSSL, GnuTLS;
//     - post_handshake_auth (RFC 8446 4.6.2): OpenSSL as Python and curl
//     set it up, GnuTLS;
//     - signature_algorithms_cert: Go's crypto/tls, Java;
//     - status_request_v2 (RFC 6961): Java;
//     - the TLS_EMPTY_RENEGOTIATION_INFO_SCSV cipher value (RFC 5746)
//     instead of the renegotiation_info extension browsers send: OpenSSL,
//     Java, rustls;
//     - the TLS 1.3 CCM cipher suites: GnuTLS, some OpenSSL builds;
//     - SHA-224 signature algorithms (0x0301 to 0x0303): OpenSSL, Java.
//  4. Anything else: Unknown.
//
// An old browser on a general-purpose library (the pre-Chromium Android
// browser on OpenSSL, GNOME Web on GnuTLS, text browsers) is Library here:
// the caller decides which claims a library may honestly make (a User-Agent
// naming such a browser is not refuted; see agents.ParseTLSClaim).
func Classify(h *Hello) Verdict {
	if h == nil {
		return Verdict{}
	}
	if h.GREASE.Ciphers && h.GREASE.Extensions && h.GREASE.Groups {
		switch {
		case h.HasExtension(extALPS) || h.HasExtension(extALPSOld):
			return Verdict{Chromium, "GREASE with application_settings (BoringSSL as Chromium configures it)"}
		case slices.Contains(h.CipherSuites, cipher3DESRSA):
			return Verdict{Safari, "GREASE with 3DES offered (Apple's TLS stack)"}
		}
		return Verdict{Chromium, "GREASE in ciphers, extensions and groups (BoringSSL as Chromium configures it)"}
	}
	if h.GREASE.Any() {
		// GREASE in some lists only: no engine does that; a hand-made or
		// half-impersonated hello is not judged.
		return Verdict{}
	}
	if h.HasExtension(extDelegatedCredentials) && h.HasExtension(extRecordSizeLimit) {
		return Verdict{Firefox, "delegated_credentials with record_size_limit, no GREASE (NSS as Firefox configures it)"}
	}
	if fact := libraryFact(h); fact != "" {
		return Verdict{Library, fact}
	}
	return Verdict{}
}

// libraryFact names the first feature of h that no browser engine sends
// (Classify, step 3), or returns "".
func libraryFact(h *Hello) string {
	for _, f := range [...]struct {
		ext  uint16
		fact string
	}{
		{extEncryptThenMAC, "encrypt_then_mac extension (OpenSSL, GnuTLS)"},
		{extPostHandshakeAuth, "post_handshake_auth extension (OpenSSL, GnuTLS)"},
		{extSignatureAlgsCert, "signature_algorithms_cert extension (Go, Java)"},
		{extStatusRequestV2, "status_request_v2 extension (Java)"},
	} {
		if h.HasExtension(f.ext) {
			return f.fact
		}
	}
	for _, c := range h.CipherSuites {
		switch c {
		case cipherRenegotiationSCSV:
			return "renegotiation SCSV cipher value (OpenSSL, Java, rustls)"
		case cipherAES128CCM13, cipherAES128CCM813:
			return "TLS 1.3 CCM cipher suite (GnuTLS, OpenSSL)"
		}
	}
	for _, s := range h.SignatureAlgorithms {
		if s >= 0x0301 && s <= 0x0303 {
			return "SHA-224 signature algorithm (OpenSSL, Java)"
		}
	}
	return ""
}

// OffersFinalTLS13 reports whether h offers TLS 1.3 as RFC 8446 published
// it (0x0304 in supported_versions), not one of its drafts (0x7fXX), which
// browsers shipped before the RFC.
func (h *Hello) OffersFinalTLS13() bool { return slices.Contains(h.SupportedVersions, 0x0304) }
