package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// A browser's User-Agent is a claim too. Every current browser engine sends
// headers of its own on every request to a secure context (an https URL,
// or a loopback one: http://localhost, http://127.0.0.1, http://[::1]),
// headers that page scripts cannot set and that HTTP libraries do not send
// unless told to: the Fetch Metadata request headers (Sec-Fetch-Site,
// Sec-Fetch-Mode, Sec-Fetch-Dest) and, in Chromium, the User-Agent client
// hint Sec-CH-UA. A request whose User-Agent claims such a browser at a
// version that always sends them, and that carries none, was not sent by
// that browser: it is a script wearing the browser's name.
//
// ParseBrowserClaim reads what a User-Agent claims; BrowserClaim.Missing
// checks the claim against the request's header names. Only User-Agents
// with exactly the shape of a mainstream browser's are claims: embedded
// engines and forks that add their own product tokens (Electron,
// QtWebEngine, Android WebView, in-app browsers, Pale Moon, ...) are not
// judged, because whether they send the headers is not documented.

// CategoryUndeclared is the category of an undeclared crawler: a client
// whose User-Agent claims a person's browser while its requests show it is
// a program (a browser's claim without that browser's own headers, or a
// client that took the robots.txt trap). It is judged like any unnamed bot,
// by the "*" group.
const CategoryUndeclared Category = "undeclared"

// Engine is the browser engine a User-Agent claims.
type Engine uint8

// The engines whose headers are checked.
const (
	EngineNone     Engine = iota // not a claim that is checked
	EngineChromium               // Chrome, Edge, Opera, Brave, Samsung Internet, Yandex, Vivaldi
	EngineGecko                  // Firefox
	EngineWebKit                 // Safari (macOS, iOS, iPadOS) and every iOS browser
)

// String returns "chromium", "gecko", "webkit" or "".
func (e Engine) String() string {
	switch e {
	case EngineChromium:
		return "chromium"
	case EngineGecko:
		return "gecko"
	case EngineWebKit:
		return "webkit"
	}
	return ""
}

// Signals is a set of the request headers a browser always sends.
type Signals uint8

// The signals.
const (
	// FetchMetadata: at least one of Sec-Fetch-Site, Sec-Fetch-Mode and
	// Sec-Fetch-Dest (Sec-Fetch-User is sent only on navigations a person
	// started, so it is never required).
	FetchMetadata Signals = 1 << iota
	// ClientHints: Sec-CH-UA.
	ClientHints
)

// The first versions that send each signal by default in every secure
// context, from the browsers' release notes and the compatibility data
// MDN keeps from them:
//
//   - Chromium sends Sec-Fetch-Site and Sec-Fetch-Mode since Chrome 76
//     (https://chromestatus.com/feature/5155867204780032) and Sec-Fetch-Dest
//     since Chrome 80 (MDN browser-compat-data http/headers/Sec-Fetch-Dest,
//     https://developer.mozilla.org/docs/Web/HTTP/Reference/Headers/Sec-Fetch-Dest).
//     We start at 80, where all three are sent.
//   - Chromium sends Sec-CH-UA by default since Chrome 89, rolled out to
//     the whole stable population with it
//     (https://www.chromium.org/updates/ua-ch: "March 3, 2021: UA-CH is
//     rolling out to 100% of stable population in tandem with version 89").
//   - Firefox sends all four Fetch Metadata headers since Firefox 90
//     (https://developer.mozilla.org/docs/Mozilla/Firefox/Releases/90,
//     https://bugzilla.mozilla.org/show_bug.cgi?id=1695911, MDN
//     browser-compat-data pull request 10679).
//   - Safari sends Sec-Fetch-Site, Sec-Fetch-Mode and Sec-Fetch-Dest since
//     Safari 16.4 ("Added support for Fetch Metadata Request Headers",
//     https://developer.apple.com/documentation/safari-release-notes/safari-16_4-release-notes;
//     https://bugs.webkit.org/show_bug.cgi?id=238265); it never sends
//     Sec-Fetch-User (MDN browser-compat-data pull request 28025). On iOS
//     every browser is WebKit, so the OS version decides.
//
// Firefox and Safari do not send Sec-CH-UA at all.
const (
	MinChromiumFetchMetadata = 80
	MinChromiumClientHints   = 89
	MinFirefoxFetchMetadata  = 90
	MinWebKitFetchMetadata   = 1604 // 16.4, as major*100+minor
)

// BrowserClaim is what a User-Agent claims about the browser that sent it.
type BrowserClaim struct {
	// Engine is the engine claimed; EngineNone when the User-Agent is not a
	// claim that is checked.
	Engine Engine
	// Name is the browser as the User-Agent names it: "Chrome", "Edge",
	// "Opera", "Samsung Internet", "Yandex", "Vivaldi", "Firefox",
	// "Safari", "Chrome on iOS", ...
	Name string
	// Version is the claimed engine version: Chrome/NN's major for
	// Chromium, Firefox/NN's for Gecko, and for WebKit the Safari version
	// (Version/16.4) or, on iOS, the OS version, as major*100+minor.
	Version int
	// Signals are the signals this browser at this version always sends to
	// a secure context.
	Signals Signals
}

// Missing returns the signals the claim promises that a request with
// header h does not carry. h is the request's header map with canonical
// keys (as Go's HTTP servers store them, and as Caddy's JSON access log
// records them). secure reports whether the request's URL is a secure
// context (https, or a loopback host): browsers send none of these
// headers elsewhere, so a request that is not is never missing anything.
func (c *BrowserClaim) Missing(h map[string][]string, secure bool) Signals {
	if !secure || c.Signals == 0 {
		return 0
	}
	var m Signals
	if c.Signals&FetchMetadata != 0 && !hasAny(h, "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest") {
		m |= FetchMetadata
	}
	if c.Signals&ClientHints != 0 {
		if _, ok := h["Sec-Ch-Ua"]; !ok {
			m |= ClientHints
		}
	}
	return m
}

func hasAny(h map[string][]string, keys ...string) bool {
	for _, k := range keys {
		if _, ok := h[k]; ok {
			return true
		}
	}
	return false
}

// IsSecureHost reports whether a request to host (a Host header:
// host[:port]) over plain HTTP is still a secure context for browsers: a
// loopback host (localhost, 127.0.0.0/8, [::1]), which the secure-contexts
// specification treats as potentially trustworthy and to which Chromium and
// Firefox send the Fetch Metadata headers over plain HTTP. Names under
// .localhost are left out: not every browser treats them so.
func IsSecureHost(host string) bool {
	if strings.HasPrefix(host, "[") {
		i := strings.IndexByte(host, ']')
		return i > 0 && host[1:i] == "::1"
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	host = strings.TrimSuffix(host, ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if !strings.HasPrefix(host, "127.") {
		return false
	}
	// 127.a.b.c with three more numbers.
	dots := 0
	for i := 4; i < len(host); i++ {
		switch c := host[i]; {
		case c == '.':
			dots++
		case c < '0' || c > '9':
			return false
		}
	}
	return dots == 2 && host[len(host)-1] != '.'
}

// IsTextBrowser reports whether ua is the User-Agent of a text-mode
// browser (Lynx, w3m, Links, ELinks). Text browsers ignore CSS, so they
// show the links a page hides from graphical browsers.
func IsTextBrowser(ua string) bool {
	return isTextBrowser(strings.TrimSpace(ua))
}

// ParseBrowserClaim returns what ua claims. Only the User-Agents of
// mainstream browsers, in exactly their browser's shape, are claims: a
// string with a product token the browser itself does not send is not.
func ParseBrowserClaim(ua string) BrowserClaim {
	const pre = "Mozilla/5.0 ("
	if !strings.HasPrefix(ua, pre) {
		return BrowserClaim{}
	}
	end := strings.IndexByte(ua, ')')
	if end < 0 {
		return BrowserClaim{}
	}
	platform := ua[len(pre):end]
	rest := strings.TrimSpace(ua[end+1:])
	if strings.Contains(platform, "; wv") {
		// Android WebView: an app's page view, whose requests the app may
		// make itself.
		return BrowserClaim{}
	}
	ios := strings.Contains(platform, "iPhone") || strings.Contains(platform, "iPad") || strings.Contains(platform, "iPod")
	if strings.HasPrefix(rest, "Gecko/") {
		return geckoClaim(platform, rest)
	}
	const webkit = "AppleWebKit/"
	if !strings.HasPrefix(rest, webkit) {
		return BrowserClaim{}
	}
	sp := strings.IndexByte(rest, ' ')
	if sp < 0 {
		return BrowserClaim{}
	}
	rest = strings.TrimSpace(rest[sp+1:])
	const khtml = "(KHTML, like Gecko)"
	if !strings.HasPrefix(rest, khtml) {
		return BrowserClaim{}
	}
	products := strings.Fields(rest[len(khtml):])
	if ios {
		return iosClaim(platform, products)
	}
	for _, p := range products {
		if strings.HasPrefix(p, "Chrome/") {
			return chromiumClaim(platform, products)
		}
	}
	return safariClaim(platform, products)
}

// chromiumClaim reads the products of a Chromium browser: Chrome/NN, then
// Mobile, Safari/537.36 and the vendor's own token.
func chromiumClaim(platform string, products []string) BrowserClaim {
	c := BrowserClaim{Engine: EngineChromium, Name: "Chrome"}
	hints := true
	for _, p := range products {
		name, ver, _ := strings.Cut(p, "/")
		switch name {
		case "Chrome":
			c.Version = major(ver)
		case "Mobile", "Safari":
		case "Edg", "EdgA":
			c.Name = "Edge"
		case "OPR":
			c.Name = "Opera"
		case "SamsungBrowser":
			c.Name, hints = "Samsung Internet", false
		case "YaBrowser", "Yowser":
			c.Name, hints = "Yandex", false
		case "Vivaldi":
			c.Name, hints = "Vivaldi", false
		default:
			// Electron, QtWebEngine, an app's own token, a crawler's
			// Chrome-like string: not a browser we know the habits of.
			return BrowserClaim{}
		}
	}
	if c.Version <= 0 || !strings.Contains(platform, ";") {
		return BrowserClaim{}
	}
	if c.Version >= MinChromiumFetchMetadata {
		c.Signals |= FetchMetadata
	}
	if hints && c.Version >= MinChromiumClientHints {
		c.Signals |= ClientHints
	}
	return c
}

// geckoClaim reads Firefox's shape: "(<platform>; rv:NN.0) Gecko/<date or
// version> Firefox/NN.0", nothing more.
func geckoClaim(platform, rest string) BrowserClaim {
	products := strings.Fields(rest)
	if len(products) != 2 || !strings.Contains(platform, "rv:") {
		return BrowserClaim{}
	}
	name, ver, _ := strings.Cut(products[1], "/")
	if name != "Firefox" {
		return BrowserClaim{}
	}
	c := BrowserClaim{Engine: EngineGecko, Name: "Firefox", Version: major(ver)}
	if c.Version <= 0 {
		return BrowserClaim{}
	}
	if c.Version >= MinFirefoxFetchMetadata {
		c.Signals = FetchMetadata
	}
	return c
}

// safariClaim reads Safari on macOS: "Version/X.Y Safari/605.1.15".
func safariClaim(platform string, products []string) BrowserClaim {
	if !strings.HasPrefix(platform, "Macintosh;") {
		// WebKitGTK's browsers (GNOME Web) write Safari's products on
		// Linux; whether they send the headers is not documented.
		return BrowserClaim{}
	}
	c := BrowserClaim{Engine: EngineWebKit, Name: "Safari"}
	for _, p := range products {
		name, ver, _ := strings.Cut(p, "/")
		switch name {
		case "Version":
			c.Version = majorMinor(ver)
		case "Safari":
		default:
			return BrowserClaim{}
		}
	}
	if c.Version <= 0 {
		return BrowserClaim{}
	}
	if c.Version >= MinWebKitFetchMetadata {
		c.Signals = FetchMetadata
	}
	return c
}

// iosClaim reads a browser on iOS or iPadOS, all WebKit: the OS version in
// "CPU iPhone OS 17_4 like Mac OS X" decides.
func iosClaim(platform string, products []string) BrowserClaim {
	c := BrowserClaim{Engine: EngineWebKit, Name: "Safari"}
	for _, p := range products {
		name, _, _ := strings.Cut(p, "/")
		switch name {
		case "Version", "Mobile", "Safari":
		case "CriOS":
			c.Name = "Chrome on iOS"
		case "FxiOS":
			c.Name = "Firefox on iOS"
		case "EdgiOS":
			c.Name = "Edge on iOS"
		default:
			// In-app browsers (Instagram, the Google app, Facebook's).
			return BrowserClaim{}
		}
	}
	i := strings.Index(platform, "OS ")
	if i < 0 {
		return BrowserClaim{}
	}
	v := platform[i+3:]
	if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	c.Version = majorMinor(strings.ReplaceAll(v, "_", "."))
	if c.Version <= 0 {
		return BrowserClaim{}
	}
	if c.Version >= MinWebKitFetchMetadata {
		c.Signals = FetchMetadata
	}
	return c
}

// major returns the leading number of a version ("131.0.0.0": 131), or 0.
func major(v string) int {
	n := 0
	for i := 0; i < len(v) && i < 6; i++ {
		c := v[i]
		if c == '.' {
			break
		}
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// majorMinor returns "16.4.1" as 1604, or 0.
func majorMinor(v string) int {
	maj, rest, _ := strings.Cut(v, ".")
	m := major(maj)
	if m == 0 || len(maj) > 4 {
		return 0
	}
	minor := 0
	if rest != "" {
		mi, _, _ := strings.Cut(rest, ".")
		if len(mi) > 2 {
			return 0
		}
		minor = major(mi)
	}
	return m*100 + minor
}

// UndeclaredAgent returns the Agent an undeclared crawler is judged as:
// Bot, CategoryUndeclared, no tokens (only the "*" group applies), named
// after what its User-Agent claims ("Chrome (undeclared)").
func UndeclaredAgent(ua string) Agent {
	name := ParseBrowserClaim(ua).Name
	if name == "" {
		name = browserName(ua)
	}
	return Agent{
		Bot: true, Name: name + " (undeclared)", Category: CategoryUndeclared, Purpose: PurposeOther,
		Profile: Profile{RobotsCacheTTL: defaultRobotsCacheTTL},
	}
}

// browserName is the name of a User-Agent's browser for UndeclaredAgent:
// the browser product it carries, a text browser's name, or its first
// product token.
func browserName(ua string) string {
	s := strings.TrimSpace(ua)
	for _, name := range textBrowsers {
		if len(s) >= len(name) && strings.EqualFold(s[:len(name)], name) {
			return name
		}
	}
	for _, p := range [...]struct{ token, name string }{
		{"Edg/", "Edge"}, {"OPR/", "Opera"}, {"Firefox/", "Firefox"}, {"Chrome/", "Chrome"}, {"Safari/", "Safari"},
	} {
		if strings.Contains(s, p.token) {
			return p.name
		}
	}
	if s == "" {
		return "empty"
	}
	n, _, _ := strings.Cut(s, "/")
	n, _, _ = strings.Cut(n, " ")
	if len(n) > 32 {
		n = n[:32]
	}
	return n
}

// BrowserClaims caches ParseBrowserClaim's answers per User-Agent, with the
// Shared form of the undeclared Agent each one is judged as, so that the
// check on a person's request costs one hash and no allocation. Its memory
// is bounded like an Identifier's (a fixed number of slots, User-Agents up
// to 512 bytes). It is safe for concurrent use; the zero value is not
// usable, call NewBrowserClaims.
type BrowserClaims struct {
	cache uaCache[ClaimEntry]
}

// ClaimEntry is one cached answer: read only.
type ClaimEntry struct {
	// Claim is what the User-Agent claims.
	Claim BrowserClaim
	// Undeclared is the agent the client is judged as when its claim
	// fails (UndeclaredAgent), boxed once.
	Undeclared *Shared
	// StateName is the name an undeclared crawler's state is kept under
	// (UndeclaredStateName): its own, never its browser family's.
	StateName string
	// TLS is what the User-Agent implies about its sender's TLS stack
	// (ParseTLSClaim), worked out once per User-Agent, for the requests
	// whose handshake is not a browser engine's.
	TLS TLSClaim
}

// UndeclaredStateName is the name the throttle, strikes and bans of an
// undeclared crawler with User-Agent ua are kept under: its agent's name
// and a digest of the whole string ("Chrome (undeclared) 1f2e3d4c5b6a").
// A script that took the trap or forgot a browser's headers thus earns
// state of its own: it never reaches a neighbour whose browser is of the
// same family, and a person whose browser sends the very same string is
// protected by RulesOnly (the state is never applied to a request that
// carries the browser's headers). The digest is stable across processes,
// so instances sharing a Redis and the audit agree on it.
func UndeclaredStateName(ua string) string {
	sum := sha256.Sum256([]byte(ua))
	return UndeclaredAgent(ua).Name + " " + hex.EncodeToString(sum[:6])
}

// NewBrowserClaims returns a cache of up to size User-Agents (rounded up
// to a power of two; 8192 when size is zero or less).
func NewBrowserClaims(size int) *BrowserClaims {
	return &BrowserClaims{cache: newUACache[ClaimEntry](size)}
}

// Lookup returns the cached answer for ua, computing it on first sight.
func (b *BrowserClaims) Lookup(ua string) *ClaimEntry {
	if e := b.cache.lookup(ua); e != nil {
		return &e.val
	}
	c := ClaimEntry{Claim: ParseBrowserClaim(ua), Undeclared: NewShared(UndeclaredAgent(ua)), StateName: UndeclaredStateName(ua), TLS: ParseTLSClaim(ua)}
	if e := b.cache.put(ua, c); e != nil {
		return &e.val
	}
	// Too long to cache: a copy of its own (returning &c would put c on
	// the heap on every miss).
	own := new(ClaimEntry)
	*own = c
	return own
}
