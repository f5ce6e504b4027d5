package policy

// Undeclared crawlers: the pure part of what the handler does with clients
// that wear a browser's User-Agent (undeclared.go in the root package),
// here so that the handler and `caddy robots audit` apply the same rules:
// which signal catches a request and in which mode, how a trap request
// marks its client, when a text browser on probation is confirmed, and
// whether robots.txt disallows the trap for "*". No I/O, no clock, no
// lock: the callers keep the marks and pass the time.

import (
	"net/netip"
	"strings"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/agents/ja4"
	"github.com/caddyrobots/caddy-robots/enforce"
)

// Signal is one way an undeclared crawler shows itself.
type Signal uint8

// The signals, in the order the handler checks them.
const (
	// SignalFetchMetadata: a Chromium (80+) or Firefox (90+) claim over a
	// secure context without any Sec-Fetch-Site, -Mode or -Dest header.
	SignalFetchMetadata Signal = iota
	// SignalFetchMetadataSafari: the same for a Safari 16.4+ claim (every
	// browser on iOS included).
	SignalFetchMetadataSafari
	// SignalClientHints: a Chromium 89+ claim (Chrome, Edge, Opera) over a
	// secure context without Sec-CH-UA.
	SignalClientHints
	// SignalTrap: the client asked for the trap path.
	SignalTrap
	// SignalTLS: a browser claim over a TLS handshake that refutes it (an
	// HTTP library's: agents.TLSClaim.RefutedBy) or that the claimed
	// browser could not have made (agents.TLSClaim.Impossible). Only a
	// request with a fingerprint is judged by it (see TLSVerdict).
	SignalTLS
)

// NumSignals is the number of signals.
const NumSignals = 5

// signalNames are the signals' names in the config, the metric labels, the
// log lines and the audit's reports.
var signalNames = [NumSignals]string{"fetch_metadata", "fetch_metadata_safari", "client_hints", "trap", "tls"}

// String returns the signal's name: fetch_metadata, fetch_metadata_safari,
// client_hints, trap or tls.
func (s Signal) String() string { return signalNames[s] }

// SignalNames returns the names of the signals, in order.
func SignalNames() []string { return append([]string(nil), signalNames[:]...) }

// ParseSignal returns the signal named name.
func ParseSignal(name string) (Signal, bool) {
	for i, n := range signalNames {
		if n == name {
			return Signal(i), true
		}
	}
	return 0, false
}

// SignalMode is what happens when a signal fires.
type SignalMode uint8

// The modes of a signal.
const (
	// SignalOff: the signal is not checked.
	SignalOff SignalMode = iota
	// SignalLog: what it catches is judged, counted and logged as mode log
	// does, with its own state, and never refused.
	SignalLog
	// SignalEnforce: what it catches is judged and refused as any unnamed
	// bot is.
	SignalEnforce
)

// ParseSignalMode reads "log" or "enforce"; anything else is off.
func ParseSignalMode(s string) SignalMode {
	switch s {
	case "log":
		return SignalLog
	case "enforce":
		return SignalEnforce
	}
	return SignalOff
}

// ValidSignalMode reports whether s is a mode of a signal: off, log or
// enforce.
func ValidSignalMode(s string) bool { return s == "off" || s == "log" || s == "enforce" }

// String returns off, log or enforce.
func (m SignalMode) String() string { return [...]string{"off", "log", "enforce"}[m] }

// Enforced reports whether a signal in mode m refuses, in a handler whose
// own mode is enforce when handlerEnforce is set: the handler's mode log
// wins over a signal's enforce.
func (m SignalMode) Enforced(handlerEnforce bool) bool { return m == SignalEnforce && handlerEnforce }

// defaultSignalModes are the modes of the signals when `undeclared` is not
// set: enforce for the signals that real, headed Chromium and Firefox
// passed with no false positive (integration/browsers_test.go); log for
// the others: no Safari runs there, and a Firefox or Safari whose
// User-Agent was switched to Chrome's (a common extension) sends Fetch
// Metadata but no Sec-CH-UA. tls is log: a corporate proxy that inspects
// TLS re-originates every connection with its own stack, so a person
// behind one arrives over a library's handshake; the signal counts and
// logs what it would refuse until an operator, having seen who that is,
// turns it to enforce.
var defaultSignalModes = [NumSignals]SignalMode{SignalEnforce, SignalLog, SignalLog, SignalEnforce, SignalLog}

// UndeclaredModes are the modes of a handler's signals, indexed by Signal.
type UndeclaredModes [NumSignals]SignalMode

// NewUndeclaredModes reads a handler's options: all is `undeclared` (every
// signal; "" leaves each signal its default), signals is
// `undeclared_signals` (a signal's own mode, over all), and trap says
// whether a trap path is set (the trap signal is off without one).
func NewUndeclaredModes(all string, signals map[string]string, trap bool) UndeclaredModes {
	var m UndeclaredModes
	for i := range m {
		mode, ok := signals[signalNames[i]]
		switch {
		case ok:
		case all != "":
			mode = all
		default:
			mode = defaultSignalModes[i].String()
		}
		m[i] = ParseSignalMode(mode)
	}
	if !trap {
		m[SignalTrap] = SignalOff
	}
	return m
}

// On reports whether any signal is on.
func (m *UndeclaredModes) On() bool {
	return m.Headers() || m[SignalTrap] != SignalOff || m[SignalTLS] != SignalOff
}

// Headers reports whether a header signal is on: fetch_metadata,
// fetch_metadata_safari or client_hints.
func (m *UndeclaredModes) Headers() bool {
	return m[SignalFetchMetadata] != SignalOff || m[SignalFetchMetadataSafari] != SignalOff || m[SignalClientHints] != SignalOff
}

// Hints reports whether client_hints is on.
func (m *UndeclaredModes) Hints() bool { return m[SignalClientHints] != SignalOff }

// String lists the modes: "fetch_metadata enforce, fetch_metadata_safari
// log, client_hints log, trap enforce, tls log".
func (m *UndeclaredModes) String() string {
	var b strings.Builder
	for i, mode := range m {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(signalNames[i] + " " + mode.String())
	}
	return b.String()
}

// HeaderSignals returns the browser signals a request's header map (keys
// canonical, as Go's HTTP servers store them and Caddy's access log records
// them) carries: FetchMetadata for any of Sec-Fetch-Site, -Mode and -Dest,
// ClientHints for Sec-CH-UA. For a claim c over a secure context,
// c.Signals &^ HeaderSignals(h) is what c.Missing(h, true) returns.
func HeaderSignals(h map[string][]string) agents.Signals {
	var s agents.Signals
	if _, ok := h["Sec-Fetch-Site"]; ok {
		s |= agents.FetchMetadata
	} else if _, ok := h["Sec-Fetch-Mode"]; ok {
		s |= agents.FetchMetadata
	} else if _, ok := h["Sec-Fetch-Dest"]; ok {
		s |= agents.FetchMetadata
	}
	if _, ok := h["Sec-Ch-Ua"]; ok {
		s |= agents.ClientHints
	}
	return s
}

// PassesHeaders reports whether a request to a secure context that carries
// the signals present passes the header signals whatever its User-Agent
// claims: a real browser's request, decided without looking its claim up.
//
// Any Fetch Metadata header is enough. A person's browser sends Fetch
// Metadata without Sec-CH-UA on whole kinds of requests: Chromium's workers,
// service workers, CORS preflights and downloads, every subresource of a
// page served with Permissions-Policy: ch-ua=(), Chromium with a User-Agent
// override, and Firefox or Safari whose User-Agent switcher claims Chrome.
// Those cannot be told from a script that forges Fetch Metadata by headers
// alone, so the person wins: client_hints never judges a request that
// carries Fetch Metadata.
func (m *UndeclaredModes) PassesHeaders(present agents.Signals) bool {
	return present&agents.FetchMetadata != 0
}

// JudgeHeaders returns the signal that catches a request of kind k to a
// secure context whose User-Agent claims c and that carries the signals
// present, with its mode: of the signals the claim promises and the request
// lacks, the one with the strictest mode. The mode is SignalOff when nothing
// catches it: a request with Fetch Metadata (see PassesHeaders), and a kind
// of request the claimed browser sends without the headers (a WebSocket
// handshake from Chromium, or from Safari, which was not measured).
func (m *UndeclaredModes) JudgeHeaders(c *agents.BrowserClaim, present agents.Signals, k Kind) (Signal, SignalMode) {
	missing := c.Signals &^ present
	if missing == 0 || m.PassesHeaders(present) || !k.Carries(c.Engine) {
		return SignalFetchMetadata, SignalOff
	}
	return m.Strongest(c, missing)
}

// CarriesClaim reports whether a request to a secure context that carries
// the signals present carries every header the browser claimed by c
// always sends there: the evidence that keeps a person out of a trap mark
// earned by a script with the same User-Agent on the same address
// (Client.RulesOnly).
func CarriesClaim(c *agents.BrowserClaim, present agents.Signals) bool {
	return c.Signals != 0 && c.Signals&^present == 0
}

// Strongest returns the signal among missing (the signals claim c promises
// that a request lacks) with the strictest mode.
func (m *UndeclaredModes) Strongest(c *agents.BrowserClaim, missing agents.Signals) (Signal, SignalMode) {
	best, mode := SignalFetchMetadata, SignalOff
	consider := func(s Signal) {
		if m[s] > mode {
			best, mode = s, m[s]
		}
	}
	if missing&agents.FetchMetadata != 0 {
		if c.Engine == agents.EngineWebKit {
			consider(SignalFetchMetadataSafari)
		} else {
			consider(SignalFetchMetadata)
		}
	}
	if missing&agents.ClientHints != 0 {
		consider(SignalClientHints)
	}
	return best, mode
}

// TLSVerdict returns why a request whose User-Agent implies claim c and
// whose TLS handshake is hello h from engine e is an undeclared crawler by
// the tls signal, or "" when it is not. h nil (no fingerprint: plain HTTP,
// HTTP/3, a proxy's header, no wrapper) is never judged, and neither is a
// browser engine's handshake, whatever browser the User-Agent names (a
// person's User-Agent switcher, a DevTools override). Otherwise, a claim
// the handshake makes impossible (c.Impossible), then a claim of a browser
// over a library's handshake (c.RefutedBy, with the fact the engine rests
// on). An Unknown engine refutes nothing.
func TLSVerdict(c *agents.TLSClaim, h *ja4.Hello, e ja4.Verdict) string {
	if h == nil || e.Engine.IsBrowser() {
		return ""
	}
	if why := c.Impossible(h, e.Engine); why != "" {
		return "the claimed browser could not have made this request's TLS handshake: " + why
	}
	if c.RefutedBy(e.Engine) {
		return "this request's TLS handshake is an HTTP library's: " + e.Fact
	}
	return ""
}

// TLSFingerprintNote is what a check (caddy robots check --tls-fingerprint,
// POST /robots/check's tls_fingerprint) can say about a request with
// User-Agent ua whose handshake had the JA4 fingerprint: honestly, little.
// The tls signal reads the engine from the whole ClientHello (GREASE, the
// extension and cipher families), which a JA4 hashes away, and this
// package keeps no table of hashes, which change with every release; so a
// fingerprint alone never decides, and the note says what a live
// handshake would.
func TLSFingerprintNote(ua, fingerprint string) string {
	c := agents.ParseTLSClaim(ua)
	if c.Browser == "" {
		return fingerprint + ": the User-Agent claims no browser a handshake could refute, so the tls signal does not apply"
	}
	return fingerprint + ": a fingerprint alone cannot tell a browser engine from an HTTP library (the tls signal reads the engine from the whole ClientHello, which a JA4 hashes); " +
		"over a live connection, a library's handshake would make this claim of " + c.Browser + " an undeclared crawler by signal tls"
}

// Kind is what a request's own headers tell about why it was sent, as far
// as judging a browser claim and the trap needs it. The zero value is a
// request whose headers tell nothing: no Fetch Metadata (a program, a text
// browser, or a browser over plain HTTP) and no WebSocket handshake.
type Kind uint8

// The flags of a Kind.
const (
	// KindWebSocket: a WebSocket handshake (Upgrade: websocket). Chromium
	// sends it with neither Fetch Metadata nor Sec-CH-UA (measured with
	// Chromium 156, integration/browsers_people_test.go); Firefox sends
	// Sec-Fetch-Mode: websocket. A page of any site can open one.
	KindWebSocket Kind = 1 << iota
	// KindInduced: a request its client did not choose itself: a
	// subresource, a nested or cross-site or same-site navigation, or a
	// prefetch or prerender (Sec-Purpose, Purpose, X-Moz: prefetch). Only
	// a browser sends such headers, at the request of a page (another
	// site's included) or of its own speculation.
	KindInduced
)

// KindOf reads the kind of a request from its header map (keys canonical,
// as Go's HTTP servers store them and Caddy's access log records them).
func KindOf(h map[string][]string) Kind {
	return KindFrom(first(h, "Sec-Fetch-Site"), first(h, "Sec-Fetch-Mode"), first(h, "Sec-Fetch-Dest"),
		has(h, "Sec-Purpose") || has(h, "Purpose") || strings.EqualFold(first(h, "X-Moz"), "prefetch"),
		first(h, "Upgrade"))
}

// KindFrom is KindOf from the values that decide it: the Fetch Metadata
// headers (Sec-Fetch-Site, -Mode, -Dest; "" where absent), whether the
// request says it is a prefetch or prerender, and the Upgrade header.
//
// A request with any Fetch Metadata is the client's own choice only as a
// top-level navigation (Sec-Fetch-Mode: navigate, Sec-Fetch-Dest:
// document) that is same-origin or typed, bookmarked or opened from
// outside the browser (Sec-Fetch-Site: none).
func KindFrom(site, mode, dest string, purpose bool, upgrade string) Kind {
	var k Kind
	if strings.EqualFold(strings.TrimSpace(upgrade), "websocket") {
		k |= KindWebSocket
	}
	if purpose {
		return k | KindInduced
	}
	if site == "" && mode == "" && dest == "" {
		return k
	}
	if mode != "navigate" || dest != "document" || (site != "same-origin" && site != "none") {
		k |= KindInduced
	}
	return k
}

// Carries reports whether a browser of engine e sends its Fetch Metadata
// and client hints on requests of kind k: every kind but Chromium's
// WebSocket handshakes (and Safari's, which could not be measured here).
func (k Kind) Carries(e agents.Engine) bool {
	return k&KindWebSocket == 0 || e == agents.EngineGecko
}

// TrapMarks reports whether a request of kind k for the trap marks its
// client: only the client's own choice does (no Fetch Metadata, or a
// same-origin or typed top-level navigation). A request another page
// caused (an image, a prefetch, a cross-site redirect, a WebSocket any page
// may open) gets the trap's 403 and marks nobody: a person must never pay
// for what a web page made their browser ask.
func TrapMarks(k Kind) bool { return k == 0 }

func first(h map[string][]string, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func has(h map[string][]string, key string) bool {
	_, ok := h[key]
	return ok
}

// Bounds and defaults of the trap.
const (
	// DefaultTrapHold is how long a client that took the trap is judged as
	// a crawler: a day, as long as a crawler may keep robots.txt (RFC 9309
	// §2.4), long enough to cover one crawl.
	DefaultTrapHold = 24 * time.Hour
	// MinTrapHold and MaxTrapHold bound trap_hold.
	MinTrapHold = time.Minute
	MaxTrapHold = 7 * 24 * time.Hour
	// TrapHumanGap is the shortest gap between two requests of a text
	// browser on probation that still reads as a person's pace.
	TrapHumanGap = time.Second
	// TrapMarksMax bounds the marks kept.
	TrapMarksMax = 65536
)

// IsTrap reports whether path (the request's path, decoded, as
// r.URL.Path holds it) is the trap or below it: robots.txt's Disallow
// matches by prefix.
func IsTrap(path, trap string) bool { return trap != "" && strings.HasPrefix(path, trap) }

// TrapRule returns the rule of rb's "*" group that disallows escapedPath
// (the request's path as sent, r.URL.EscapedPath()), and whether one does.
// A trap that the robots.txt in force does not disallow for "*" marks
// nobody: the client did nothing robots.txt forbids.
func TrapRule(rb *enforce.Robots, escapedPath string) (*enforce.Rule, bool) {
	g, _ := rb.SelectIndex(nil, true)
	if g == nil {
		return nil, false
	}
	d := g.Decide(escapedPath)
	if d.Allowed || d.Rule == nil {
		return nil, false
	}
	return d.Rule, true
}

// TrapPrefix is the network a trap mark belongs to, as state identities
// count a client: IPv4 /32, IPv6 /64 (a subscriber's usual share).
func TrapPrefix(ip netip.Addr) netip.Prefix {
	ip = ip.Unmap().WithZone("")
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// TrapMark is what is known of a client (an address's network and a whole
// User-Agent string) that took the trap. The zero value is a client that
// never did. It is not safe for concurrent use.
type TrapMark struct {
	Until     time.Time // judged as a crawler until then
	Last      time.Time // its last request
	Hits      int       // its trap requests
	Confirmed bool      // judged on every request (else: only at a crawler's pace)
}

// Take records a trap request at now by a client whose User-Agent is ua:
// it is judged as a crawler for hold. Text browsers (Lynx, w3m, Links,
// ELinks) show the hidden link, so a text browser's first trap request
// only puts it on probation; any other User-Agent, or a second trap
// request, confirms it.
func (m *TrapMark) Take(now time.Time, hold time.Duration, ua string) {
	m.Hits++
	m.Until, m.Last = now.Add(hold), now
	if !agents.IsTextBrowser(ua) || m.Hits >= 2 {
		m.Confirmed = true
	}
}

// Judged records a request at now of the marked client (not for the trap)
// and reports whether it is judged as an undeclared crawler's: never past
// the hold; a client on probation is confirmed by a document (see
// IsDocument) that comes less than TrapHumanGap after its previous
// document (a crawler's pace). Subresources neither confirm it nor count
// in its pace: a graphical text browser (links -g) fetches a page's images
// right after the page.
func (m *TrapMark) Judged(now time.Time, document bool) bool {
	if now.After(m.Until) {
		return false
	}
	if !m.Confirmed && document {
		if now.Sub(m.Last) < TrapHumanGap {
			m.Confirmed = true
		}
		m.Last = now
	}
	return m.Confirmed
}

// subresourceExts are the extensions of the files a page loads by itself:
// images, styles, scripts and fonts.
var subresourceExts = []string{
	".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".svg", ".ico", ".bmp",
	".css", ".js", ".mjs", ".woff", ".woff2", ".ttf", ".otf",
}

// IsDocument reports whether a request for path (decoded) with the given
// Accept header reads as a document a person opens rather than a
// subresource the browser loads by itself: not an image, style, script or
// font by its Accept header or its path's extension. It is how a text
// browser's pace is measured without Fetch Metadata, which text browsers do
// not send.
func IsDocument(path, accept string) bool {
	accept = strings.TrimSpace(accept)
	for _, p := range [...]string{"image/", "text/css", "font/", "application/javascript", "text/javascript"} {
		if len(accept) >= len(p) && strings.EqualFold(accept[:len(p)], p) {
			return false
		}
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 && strings.LastIndexByte(path, '/') < i {
		ext := path[i:]
		for _, e := range subresourceExts {
			if strings.EqualFold(ext, e) {
				return false
			}
		}
	}
	return true
}
