package policy

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/caddyrobots/caddy-robots/enforce"
)

// MaxTargetLength is the longest request target judged for a bot; a longer
// one is refused (414). The engine's decision time is bounded for targets up
// to this length (see enforce.MaxTargetLength).
const MaxTargetLength = enforce.MaxTargetLength

// MaxForms is the most forms of one target that are judged: the target as
// sent, its cleaned, decoded and servlet readings, the same with a leading
// "//authority" removed, and the values of rewrite headers. A request with
// more distinct forms cannot be judged whole, and is refused as a bad
// target.
const MaxForms = 16

// RewriteHeaders are the request headers some backends read as the target
// itself (IIS and Symfony honour X-Original-URL and X-Rewrite-URL; Spring,
// ASP.NET Core and others prepend X-Forwarded-Prefix to the path). A bot's
// request is judged on their values too, and the handler removes them from
// every request for /robots.txt, which is always served.
var RewriteHeaders = [...]string{"X-Original-Url", "X-Rewrite-Url", "X-Forwarded-Prefix"}

// Target is a request target as the client sent it, and every form of it
// that a server may act on. A bot's request passes only if every form is
// allowed: Caddy's file_server cleans the path and decodes %2F, most
// backends behind reverse_proxy do the same, a servlet container reads "\"
// as "/" and drops ";parameters", and a backend that reads the target as a
// URL reference takes "//host/private/x" as host "host", path "/private/x".
// So a bot must not reach /private/x by asking for //private/x,
// /./private/x, /public/../private/x, /private%2Fx, /%2e/private/x or
// //evil/private/x.
//
// RFC 9309 matching itself stays exact: this only chooses which strings are
// matched. The forms come from the URL the client sent (and the rewrite
// headers it sent), never from what the operator's own routing (handle_path,
// rewrite, uri strip_prefix) made of it: robots.txt governs the URL the
// crawler asked for.
//
// The zero Target is not valid; use ParseTarget.
type Target struct {
	forms [MaxForms]string
	n     int
	// from[i] says where forms[i] comes from, for explanations.
	from [MaxForms]FormSource
	// overflow is set when the request has more distinct forms than
	// MaxForms, so that some were not kept: such a request (a hostile
	// target with rewrite headers) could hide a disallowed form behind
	// the others, so Assess refuses it as a bad target rather than judge
	// it in part.
	overflow bool
	// folded is set once FoldCase folded the forms.
	folded bool
	// Method is the request's method.
	Method string
	// Raw is the target as the client sent it: path and query (an
	// absolute-form target is reduced to its path and query).
	Raw string
	// Bad is set when the request target is neither origin-form nor
	// absolute-form with an authority (nor "*" for OPTIONS): such a target
	// is refused for bots with 400.
	Bad bool
	// Path is the path of the target as Go's HTTP server decodes it (the
	// URL.Path it gives handlers); "" for a bad target. A request for
	// /robots.txt is recognised on it: "GET http://host?/robots.txt" asks
	// for "/", not for robots.txt.
	Path string
}

// FormSource says which reading of the request produced a form.
type FormSource uint8

// The readings of a request target.
const (
	FromSent      FormSource = iota // the target as sent
	FromCleaned                     // dot segments removed, slashes merged, escapes kept
	FromDecoded                     // percent-decoded and cleaned, as Go and file_server read it
	FromServlet                     // "\" as "/" and ";parameters" dropped, as servlet containers and IIS read it
	FromAuthority                   // a leading "//authority" read as a URL reference's host and removed
	FromHeader                      // the value of a rewrite header (X-Original-URL, X-Rewrite-URL, X-Forwarded-Prefix)
)

var formSourceNames = [...]string{"as sent", "cleaned", "decoded", "servlet reading", "URL reference (//authority removed)", "rewrite header"}

// String names the reading, for people.
func (s FormSource) String() string { return formSourceNames[s] }

// Forms returns the forms to judge, the target as sent first. The slice
// aliases t: do not modify it.
func (t *Target) Forms() []string { return t.forms[:t.n] }

// FoldCase folds every form with enforce.FoldCase, once: for sites whose
// paths are case-insensitive (Options.CaseInsensitive). Raw keeps the
// target as sent.
func (t *Target) FoldCase() {
	if t.folded {
		return
	}
	t.folded = true
	for i := 0; i < t.n; i++ {
		t.forms[i] = enforce.FoldCase(t.forms[i])
	}
}

// Source says where form i of Forms comes from.
func (t *Target) Source(i int) FormSource { return t.from[i] }

// add appends f unless it is already there.
func (t *Target) add(f string, src FormSource) {
	for i := 0; i < t.n; i++ {
		if t.forms[i] == f {
			return
		}
	}
	if t.n < len(t.forms) {
		t.forms[t.n], t.from[t.n] = f, src
		t.n++
		return
	}
	t.overflow = true
}

// reset empties t for method.
func (t *Target) reset(method string) {
	*t = Target{Method: method}
}

// IsRobotsTxt reports whether the request asks for /robots.txt, judged on
// the path Go decoded from the target as sent (never on a rewritten URL,
// nor on the raw target: "http://host?/robots.txt" asks for "/").
func (t *Target) IsRobotsTxt() bool { return !t.Bad && t.Path == "/robots.txt" }

// ParseTarget computes the forms of a request target as the client sent it
// (the request line's target, or HTTP/2's :path), for the given method.
// rewrites are the values of the rewrite headers the request carries
// (RewriteHeaders), in that order, "" where absent: each is judged as a form
// too (X-Forwarded-Prefix as a prefix of the target's path).
//
// A target made only of plain characters (no '%', '\\', ';', '#', "//" or "/.")
// with no rewrite header has one form and costs no allocation.
func ParseTarget(method, requestURI string, rewrites ...string) Target {
	var t Target
	t.Parse(method, requestURI, rewrites...)
	return t
}

// Parse is ParseTarget into t, which it resets first: a caller that keeps
// the Target in a larger structure (a judged request's outcome) fills it in
// place.
func (t *Target) Parse(method, requestURI string, rewrites ...string) {
	t.reset(method)
	raw, ok := originTarget(requestURI, method)
	t.Bad = !ok
	t.Raw = raw
	t.add(raw, FromSent)
	rawPath, query := splitQuery(raw)
	if plainPath(rawPath) {
		if ok {
			t.Path = rawPath
		}
		t.addRewrites(rawPath, raw[len(rawPath):], rewrites)
		return
	}
	q := ""
	if query != "" || strings.HasSuffix(raw, "?") {
		q = "?" + query
	}
	t.addReadings(rawPath, q, FromCleaned)
	// Go's own decoding of the target, when it reads it differently from
	// PathUnescape (an absolute-form target, or an escape PathUnescape
	// refuses): what a handler behind Caddy sees as URL.Path.
	if ok {
		if u, err := url.ParseRequestURI(requestURI); err == nil {
			t.Path = u.Path
			if u.Path != "" {
				t.addDecoded(u.Path, q, FromDecoded)
			}
		}
	}
	t.addRewrites(rawPath, q, rewrites)
}

// addReadings adds the readings of a raw (escaped) path: cleaned with
// escapes kept, decoded, and, for a path that starts with "//", the same
// with the authority of a URL reference removed.
func (t *Target) addReadings(rawPath, q string, cleaned FormSource) {
	t.add(cleanPath(rawPath)+q, cleaned)
	if dec, err := url.PathUnescape(rawPath); err == nil {
		t.addDecoded(dec, q, FromDecoded)
	}
	if rest, ok := stripAuthority(rawPath); ok {
		t.add(cleanPath(rest)+q, FromAuthority)
		if dec, err := url.PathUnescape(rest); err == nil {
			t.addDecoded(dec, q, FromAuthority)
		}
	}
	if rest, ok := stripAuthorityLoose(rawPath); ok {
		t.add(cleanPath(rest)+q, FromAuthority)
	}
}

// addDecoded adds the cleaned form of a decoded path, the form a backend
// that reads "\" as "/" and drops ";" parameters acts on, and, where the
// decoded path starts with "//" (after "\" is read as "/" too), the path of
// it read as a URL reference.
func (t *Target) addDecoded(dec, q string, src FormSource) {
	t.add(escapeDecoded(cleanPath(dec))+q, src)
	alt := dec
	if strings.ContainsAny(dec, "\\;") {
		alt = stripParams(strings.ReplaceAll(dec, "\\", "/"))
		t.add(escapeDecoded(cleanPath(alt))+q, FromServlet)
	}
	for _, p := range [...]string{dec, alt} {
		if rest, ok := stripAuthority(p); ok {
			t.add(escapeDecoded(cleanPath(rest))+q, FromAuthority)
		}
		if rest, ok := stripAuthorityLoose(p); ok {
			t.add(escapeDecoded(cleanPath(rest))+q, FromAuthority)
		}
	}
}

// addRewrites judges the values of the rewrite headers: X-Original-URL and
// X-Rewrite-URL as targets of their own, X-Forwarded-Prefix prepended to the
// target's path. query is the target's query as sent, with its '?' ("?"
// alone for an empty one, "" for none), kept as every other form keeps it.
func (t *Target) addRewrites(rawPath, query string, rewrites []string) {
	for i, v := range rewrites {
		if v == "" {
			continue
		}
		if i == 2 { // X-Forwarded-Prefix
			v = "/" + strings.TrimLeft(strings.TrimSpace(v), "/")
			v = strings.TrimRight(v, "/") + rawPath + query
		}
		sub := ParseTarget(http.MethodGet, strings.TrimSpace(v))
		for _, f := range sub.Forms() {
			t.add(f, FromHeader)
		}
	}
}

// stripAuthority reads p as a URL reference (RFC 3986 §4.2): a path that
// starts with "//" is a network-path reference whose authority runs to the
// next "/". It returns the path after the authority ("/" when none), as
// Python's urlparse and most URL libraries read it.
func stripAuthority(p string) (string, bool) {
	if !strings.HasPrefix(p, "//") {
		return "", false
	}
	rest := p[2:]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:], true
	}
	return "/", true
}

// stripAuthorityLoose reads p as a WHATWG URL parser does for special
// schemes (Node's new URL(path, base), browsers): every leading "/" or "\"
// is skipped before the host, so "///x/private" has host "x".
func stripAuthorityLoose(p string) (string, bool) {
	if len(p) < 3 || p[0] != '/' || (p[1] != '/' && p[1] != '\\') {
		return "", false
	}
	i := 0
	for i < len(p) && (p[i] == '/' || p[i] == '\\') {
		i++
	}
	rest := p[i:]
	if j := strings.IndexAny(rest, "/\\"); j >= 0 {
		return strings.ReplaceAll(rest[j:], "\\", "/"), true
	}
	return "/", true
}

// originTarget returns the path and query of a request target, and whether
// the target has a form a bot may use: origin-form ("/path?query"),
// absolute-form with an authority ("http://host/path?query"), or "*" for
// OPTIONS. A target of any other form ("foo:/private/x", "http:/private/x")
// is reported bad; its path is still returned, as Go parses it, so that the
// request can be explained.
func originTarget(uri, method string) (string, bool) {
	if uri == "" {
		return "/", true
	}
	if uri[0] == '/' {
		return uri, true
	}
	if uri == "*" {
		return "/", method == http.MethodOptions
	}
	i := strings.Index(uri, "://")
	if i <= 0 || !isScheme(uri[:i]) {
		// Not absolute-form with an authority: "foo:/x", "http:/x",
		// "x/y". Judge the part from the first '/' for the explanation.
		if j := strings.IndexByte(uri, '/'); j >= 0 {
			return uri[j:], false
		}
		return "/", false
	}
	rest := uri[i+3:]
	// The authority ends at the first '/', '?' or '#': the path of
	// "http://host?/robots.txt" is empty and its query "/robots.txt".
	j := strings.IndexAny(rest, "/?#")
	if j < 0 {
		return "/", rest != ""
	}
	if j == 0 {
		return "/", false // "http:///x": no authority
	}
	p := rest[j:]
	if p[0] != '/' {
		p = "/" + p
	}
	return p, true
}

// isScheme reports whether s is a URI scheme: a letter, then letters,
// digits, '+', '-' or '.'.
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// splitQuery splits a target at its first '?'.
func splitQuery(target string) (path, query string) {
	if i := strings.IndexByte(target, '?'); i >= 0 {
		return target[:i], target[i+1:]
	}
	return target, ""
}

// plainPath reports whether p needs no normalising: no escapes, no
// backslashes, no ";" parameters, no "#", no empty or dot segments. A "#"
// in a request target is no fragment: Go's server keeps it in URL.Path
// ("/a#b" is served as "/a%23b" is), while the matcher drops it from the
// target as sent, so the path needs its decoded form.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '%', '\\', ';', '#':
			return false
		case '/':
			if i+1 < len(p) && (p[i+1] == '/' || p[i+1] == '.') {
				return false
			}
		}
	}
	return true
}

// cleanPath removes dot segments (RFC 3986 §5.2.4) and merges runs of
// slashes, keeping a trailing slash, as path.Clean does for file_server and
// most routers. The result starts with '/'.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	segs := strings.Split(p, "/")
	out := make([]string, 0, len(segs))
	for _, s := range segs {
		switch s {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
		}
	}
	c := "/" + strings.Join(out, "/")
	last := segs[len(segs)-1]
	if (last == "" || last == "." || last == "..") && c != "/" {
		c += "/"
	}
	return c
}

// stripParams removes ";" parameters from every segment of p
// ("/a;x=1/b;y" is "/a/b").
func stripParams(p string) string {
	if !strings.Contains(p, ";") {
		return p
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if j := strings.IndexByte(s, ';'); j >= 0 {
			segs[i] = s[:j]
		}
	}
	return strings.Join(segs, "/")
}

// escapeDecoded makes a decoded path safe to match: '%', '?' and '#' are
// escaped, so the matcher neither decodes a second time ("/%2570" decodes
// once to the file "/%70", not "/p") nor reads a query into the path.
func escapeDecoded(p string) string {
	if !strings.ContainsAny(p, "%?#") {
		return p
	}
	var b strings.Builder
	b.Grow(len(p) + 8)
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '%':
			b.WriteString("%25")
		case '?':
			b.WriteString("%3F")
		case '#':
			b.WriteString("%23")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// HostOf returns the host name of a Host header (host[:port]): lower-cased,
// without port, brackets or a trailing dot. It names a site everywhere: in
// the site table, the state, fetch records, texts and logs, and in the
// audit's replay, which must name sites as the handler does. It allocates
// only when the host has capitals.
func HostOf(hostport string) string {
	h := hostport
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i > 0 {
			h = h[1:i]
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.IndexByte(h, ':') == i {
		h = h[:i]
	}
	h = strings.TrimSuffix(h, ".")
	for i := 0; i < len(h); i++ {
		if c := h[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(h)
		}
	}
	return h
}

// HostPatternMatches matches a host matcher's pattern (lower case) against
// a host name (HostOf) as Caddy does: exactly, or with "*" standing for
// one label.
func HostPatternMatches(pattern, host string) bool {
	if pattern == host {
		return true
	}
	pl, hl := strings.Split(pattern, "."), strings.Split(host, ".")
	if len(pl) != len(hl) {
		return false
	}
	for i := range pl {
		if pl[i] != "*" && pl[i] != hl[i] {
			return false
		}
	}
	return true
}
