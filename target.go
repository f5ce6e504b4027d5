package caddyrobots

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// maxTargetForms is the most request-target forms a bot's request is judged
// on: the raw target, its cleaned form, its decoded form, the decoded form
// with backslashes and ";" parameters read as some backends read them, and
// the same for the URL as rewritten before this handler.
const maxTargetForms = 6

// targetForms is the set of strings a bot's request is judged on. The
// request passes only if every form is allowed: Caddy's file_server cleans
// the path and decodes %2F, and most backends behind reverse_proxy do the
// same, so a bot must not reach /private/x by asking for //private/x,
// /./private/x, /public/../private/x, /private%2Fx or /%2e/private/x.
//
// RFC 9309 matching itself stays exact: this only chooses which strings are
// matched.
type targetForms struct {
	forms [maxTargetForms]string
	n     int
	// raw is forms[0], the target as the client sent it (path and query).
	raw string
	// bad is set when the request target is neither origin-form nor
	// absolute-form with an authority (nor "*" for OPTIONS): such a
	// target is refused for bots with 400.
	bad bool
}

// add appends f unless it is already there.
func (t *targetForms) add(f string) {
	for i := 0; i < t.n; i++ {
		if t.forms[i] == f {
			return
		}
	}
	if t.n < len(t.forms) {
		t.forms[t.n] = f
		t.n++
	}
}

// all returns the forms.
func (t *targetForms) all() []string { return t.forms[:t.n] }

// formsOf computes the forms of r's target. The original request (before
// any rewrite that ran ahead of this handler) and the current one are both
// judged: the crawler asked for the first, the site will serve the second.
//
// A target made only of plain characters (no '%', '\\', ';', "//" or "/.")
// whose current URL path is the same has one form and costs no allocation.
func formsOf(r *http.Request) targetForms {
	var t targetForms
	uri := r.RequestURI
	var origURL *url.URL
	if or, ok := r.Context().Value(caddyhttp.OriginalRequestCtxKey).(http.Request); ok {
		if or.RequestURI != "" {
			uri = or.RequestURI
		}
		origURL = or.URL
	}
	if uri == "" && r.URL != nil {
		uri = r.URL.RequestURI()
	}
	raw, ok := originTarget(uri, r.Method)
	if !ok {
		t.bad = true
	}
	t.raw = raw
	t.add(raw)
	rawPath, query := splitQuery(raw)
	cur := r.URL
	if plainPath(rawPath) && (cur == nil || (cur.Path == rawPath && cur.RawQuery == query)) &&
		(origURL == nil || origURL.Path == rawPath) {
		return t
	}
	q := ""
	if query != "" || strings.HasSuffix(raw, "?") {
		q = "?" + query
	}
	// The raw path with dot segments removed and slashes merged, escapes
	// kept as sent.
	t.add(cleanPath(rawPath) + q)
	// The decoded path, as Go parses the request and file_server or a
	// decoding backend act on it.
	dec, err := url.PathUnescape(rawPath)
	if err == nil {
		t.addDecoded(dec, q)
	}
	// Go's own decoding of the original request, when it read the target
	// differently (absolute-form, or an escape PathUnescape refused).
	if origURL != nil && (err != nil || origURL.Path != dec) {
		t.addDecoded(origURL.Path, q)
	}
	// The URL as it is now, after any rewrite ahead of this handler.
	if cur != nil && (origURL == nil || cur.Path != origURL.Path || cur.RawQuery != origURL.RawQuery) {
		cq := ""
		if cur.RawQuery != "" {
			cq = "?" + cur.RawQuery
		}
		t.add(cur.EscapedPath() + cq)
		t.addDecoded(cur.Path, cq)
	}
	return t
}

// addDecoded adds the cleaned form of a decoded path, and, when the path has
// backslashes or ";" parameters, the form a backend that reads "\" as "/"
// and drops ";" parameters (servlet containers, IIS) acts on.
func (t *targetForms) addDecoded(dec, q string) {
	t.add(escapeDecoded(cleanPath(dec)) + q)
	if strings.ContainsAny(dec, "\\;") {
		alt := strings.ReplaceAll(dec, "\\", "/")
		alt = stripParams(alt)
		t.add(escapeDecoded(cleanPath(alt)) + q)
	}
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
// backslashes, no ";" parameters, no empty or dot segments.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '%', '\\', ';':
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

// isRobotsTxtRequest reports whether r asks for /robots.txt, judged on the
// path Go parsed (and any rewrite ahead of this handler kept), never on the
// raw target: "http://host?/robots.txt" asks for "/".
func isRobotsTxtRequest(r *http.Request) bool {
	return r.URL != nil && r.URL.Path == "/robots.txt"
}
