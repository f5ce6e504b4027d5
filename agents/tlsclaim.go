package agents

import (
	"strconv"
	"strings"

	"github.com/caddyrobots/caddy-robots/agents/ja4"
)

// A browser's User-Agent also says which TLS stack made its handshake: every
// build of Chrome, Edge, Opera, Brave or Vivaldi speaks BoringSSL, every
// Firefox NSS, every Safari Apple's stack. HTTP libraries cannot change
// their handshake by changing a header, so a User-Agent naming one of these
// browsers over a library's handshake (ja4.Library) was written by a
// script. And some claims could not have made a given handshake at all: an
// Internet Explorer or a Chrome 60 offering TLS 1.3 as RFC 8446 published
// it.
//
// ParseTLSClaim reads what a User-Agent implies; TLSClaim.RefutedBy and
// TLSClaim.Impossible judge it against a handshake. Neither ever judges a
// handshake made by a browser engine (a person's User-Agent switcher, a
// DevTools override), nor a request without one (absence of evidence).

// TLSClaim is what a User-Agent implies about the TLS stack of its sender.
type TLSClaim struct {
	// Browser names the browser the User-Agent claims when every build of
	// it speaks an engine's own TLS stack, so that a library's handshake
	// refutes it: "Chrome" (any Chromium browser), "Firefox", "Safari",
	// "Internet Explorer", "Edge (legacy)", or "a browser" for a bare
	// "Mozilla/5.0 (<platform>)". Empty when the User-Agent is not such a
	// claim: a bot, a text browser, and browsers and apps that may
	// honestly speak a general-purpose library's TLS (see ParseTLSClaim).
	Browser string
	// Bare says the User-Agent is "Mozilla/5.0 (<platform>)" and nothing
	// more: no engine token, which no browser has ever sent, so no
	// handshake but a browser engine's (a person's override) is possible.
	Bare bool
	// NoTLS13 says why the claimed browser at the claimed version never
	// offered TLS 1.3 as RFC 8446 published it (0x0304); empty when it
	// may have.
	NoTLS13 string
}

// The first versions that offer TLS 1.3 as RFC 8446 published it (version
// 0x0304 in supported_versions); earlier ones offered only its drafts
// (0x7fXX), or nothing of TLS 1.3:
//
//   - Chrome 70 (October 2018) shipped the final TLS 1.3; Chrome 65 to 69
//     offered drafts 23 and 28 (https://chromestatus.com/feature/5712755738804224).
//   - Firefox 63 (October 2018) shipped the final TLS 1.3; Firefox 52 to 62
//     offered drafts (https://www.mozilla.org/firefox/63.0/releasenotes/).
//   - Internet Explorer never offered TLS 1.3 up to IE 10 (Windows 7/8
//     Schannel has none). IE 11 (Trident/7.0) is left out: in Edge's IE
//     mode on Windows 11 it runs on a Schannel that speaks TLS 1.3, and it
//     may send an older MSIE token there (Compatibility View).
const (
	MinChromeTLS13  = 70
	MinFirefoxTLS13 = 63
)

// inAppTokens mark apps and embedded views whose own requests may honestly
// go through the platform's HTTP library while carrying a browser's
// User-Agent: Electron's main process (Node), Android apps beside their
// WebView, in-app browsers' apps. They are never refuted by a library's
// handshake.
var inAppTokens = [...]string{
	"; wv)", "; wv;", "Electron/", "FBAN/", "FBAV/", "Instagram", " Line/", "MicroMessenger/", "GSA/", "Snapchat", "Pinterest", "TikTok", "musical_ly",
}

// ParseTLSClaim returns what ua implies about its sender's TLS stack. It
// reads any User-Agent starting "Mozilla/", liberally (a script that adds a
// token such as "Brave/131" to a Chrome User-Agent still names Chrome),
// except for those that may honestly come over a library's TLS:
//
//   - Android WebView ("; wv", or "Version/4.0" with Chrome/ on Android, as
//     WebViews before Android 5 wrote it), Electron, and the in-app
//     browsers of inAppTokens: their app's own requests may use OkHttp,
//     Node or Dart with the same User-Agent;
//   - WebKit browsers off Apple's platforms (GNOME Web and other WebKitGTK
//     browsers write Safari's products on Linux, and speak GnuTLS), and
//     WebKit views on Apple's platforms without a Safari/ token;
//   - on iOS and iPadOS only the shapes ParseBrowserClaim knows (Safari,
//     Chrome, Firefox and Edge on iOS), all on Apple's stack;
//   - text browsers (Lynx, w3m, Links, ELinks), whose User-Agents do not
//     start "Mozilla/".
func ParseTLSClaim(ua string) TLSClaim {
	if !strings.HasPrefix(ua, "Mozilla/") {
		return TLSClaim{}
	}
	open, end := strings.IndexByte(ua, '('), strings.IndexByte(ua, ')')
	if open < 0 || end < open {
		return TLSClaim{}
	}
	platform, rest := ua[open+1:end], strings.TrimSpace(ua[end+1:])
	if strings.HasPrefix(ua, "Mozilla/5.0 (") && rest == "" && !strings.Contains(platform, "compatible") {
		return TLSClaim{Browser: "a browser", Bare: true}
	}
	for _, tok := range inAppTokens {
		if strings.Contains(ua, tok) {
			return TLSClaim{}
		}
	}
	if strings.Contains(platform, "iPhone") || strings.Contains(platform, "iPad") || strings.Contains(platform, "iPod") {
		if ParseBrowserClaim(ua).Engine == EngineNone {
			return TLSClaim{}
		}
		return TLSClaim{Browser: "Safari"}
	}
	if v, ok := tokenVersion(platform, "MSIE "); ok {
		c := TLSClaim{Browser: "Internet Explorer"}
		if t, _ := tokenVersion(platform, "Trident/"); t < 7 {
			c.NoTLS13 = "Internet Explorer " + strconv.Itoa(v) + " never offered TLS 1.3"
		}
		return c
	}
	if strings.Contains(platform, "Trident/") {
		return TLSClaim{Browser: "Internet Explorer"}
	}
	switch {
	case strings.Contains(rest, "Edge/"):
		// EdgeHTML, on Windows' Schannel; its Chrome/ token is decoration.
		return TLSClaim{Browser: "Edge (legacy)"}
	case strings.Contains(rest, "Firefox/"):
		c := TLSClaim{Browser: "Firefox"}
		if v, ok := tokenVersion(rest, "Firefox/"); ok && v < MinFirefoxTLS13 {
			c.NoTLS13 = "Firefox " + strconv.Itoa(v) + " predates TLS 1.3 (Firefox " + strconv.Itoa(MinFirefoxTLS13) + ")"
		}
		return c
	case strings.Contains(rest, "Chrome/"):
		if strings.Contains(platform, "Android") && strings.Contains(rest, "Version/4.0") {
			return TLSClaim{} // an Android WebView of before Android 5
		}
		c := TLSClaim{Browser: "Chrome"}
		if v, ok := tokenVersion(rest, "Chrome/"); ok && v < MinChromeTLS13 {
			c.NoTLS13 = "Chrome " + strconv.Itoa(v) + " predates TLS 1.3 (Chrome " + strconv.Itoa(MinChromeTLS13) + ")"
		}
		return c
	case strings.Contains(rest, "Safari/") && strings.HasPrefix(platform, "Macintosh;"):
		return TLSClaim{Browser: "Safari"}
	}
	return TLSClaim{}
}

// RefutedBy reports whether a handshake from engine e refutes the claim:
// only a library's handshake does, and only for a claim of a browser
// (ja4.ClaimHolds). Which browser engine made it does not matter.
func (c TLSClaim) RefutedBy(e ja4.Engine) bool {
	return c.Browser != "" && !ja4.ClaimHolds(e)
}

// Impossible returns why the claim could not have made hello h, whose
// engine is e, or "" when it could. A handshake made by a browser engine is
// never impossible (a person's browser may claim anything); nor is a
// request without a hello (h nil: plain HTTP, HTTP/3, no wrapper).
// Otherwise: a bare Mozilla/5.0 User-Agent over any TLS, and a browser
// version that predates TLS 1.3 (MinChromeTLS13, MinFirefoxTLS13, IE up to
// 10) offering it.
func (c TLSClaim) Impossible(h *ja4.Hello, e ja4.Engine) string {
	switch {
	case h == nil || e.IsBrowser():
		return ""
	case c.Bare:
		return "a bare Mozilla/5.0 User-Agent names no browser engine"
	case c.NoTLS13 != "" && h.OffersFinalTLS13():
		return c.NoTLS13 + ", and this handshake offers it"
	}
	return ""
}

// UndeclaredStateNameTLS is the name the state and marks of an undeclared
// crawler are kept under when its request came with a TLS fingerprint
// (fingerprint, its JA4, and e, its engine); without one (empty) it is
// UndeclaredStateName(ua). A library's or an unknown stack's handshake
// names the client alone, whatever User-Agent it sends next: changing the
// User-Agent does not shed a mark earned with the same handshake, and a
// browser, whose handshake differs, never shares it. A browser engine's
// handshake is shared by every person on that browser's release, so there
// the User-Agent stays part of the name, as without a fingerprint, with
// the fingerprint added.
func UndeclaredStateNameTLS(ua, fingerprint string, e ja4.Engine) string {
	switch {
	case fingerprint == "":
		return UndeclaredStateName(ua)
	case e.IsBrowser():
		return UndeclaredStateName(ua) + " " + fingerprint
	}
	return "TLS " + fingerprint + " (undeclared)"
}

// tokenVersion returns the number after token in s ("Chrome/79.0": 79).
func tokenVersion(s, token string) (int, bool) {
	i := strings.Index(s, token)
	if i < 0 {
		return 0, false
	}
	v := major(s[i+len(token):])
	return v, v > 0
}
