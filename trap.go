package caddyrobots

// The robots.txt trap.
//
// `trap <path>` declares a path that robots.txt disallows for every crawler
// and that no person sees: a link the operator hides in the site's pages
// (rel=nofollow, the hidden attribute, aria-hidden, no tab stop), or the
// one the placeholder {http.robots.trap_link} writes into a template. A
// client that asks for it read a link robots.txt forbids: whatever its
// User-Agent, it is an undeclared crawler for trap_hold (24 h by default).
//
// With source file and inline, the served and enforced robots.txt carry
// `Disallow: <path>` in every group ("*" and every named group; a "*"
// group is added when there is none). With source site the site's own
// robots.txt must disallow it for "*": the handler warns when a version it
// loads does not, and a client that asks for a trap the current robots.txt
// does not disallow is not marked (it did nothing robots.txt forbids).
//
// Who is marked: the pair (address, User-Agent string): IPv4 /32, IPv6 /64
// as everywhere else, and a hash of the whole User-Agent. A person sharing
// the address with the crawler is not swept up unless their browser sends
// the very same User-Agent string; even then they are only judged by
// robots.txt's "*" group (the pages it allows are served) for the hold. A
// script that rotates its User-Agent on every request is marked anew with
// each string it uses on the trap, and its other strings pass; over HTTPS
// the header check catches such scripts, which rarely send a browser's
// Fetch Metadata headers. The marks live in a bounded table (65,536
// entries, shared by the handlers of the process and kept across config
// reloads); losing one only forgets a mark.
//
// People in text browsers. Lynx, w3m, Links and ELinks ignore CSS and show
// hidden links (the placeholder's link text tells them not to follow it). A
// person who follows the trap once by hand gets the trap's 403, and nothing
// else changes for them: a text browser's first trap request puts it on
// probation, and only a request that comes less than a second after the
// previous one (a crawler's pace: lynx -traversal fetched 22 pages in
// 0.3 s) or a second trap request confirms it as a crawler. Any other
// User-Agent is confirmed by its first trap request: graphical browsers
// never show the link.

import (
	"bufio"
	"fmt"
	"hash/maphash"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/policy"
	"github.com/caddyrobots/caddy-robots/internal/warnlimit"
)

// Bounds and defaults of the trap (policy's, shared with caddy robots
// audit).
const (
	// DefaultTrapHold is how long a client that took the trap is judged as
	// a crawler: a day, as long as a crawler may keep robots.txt (RFC 9309
	// §2.4), long enough to cover one crawl.
	DefaultTrapHold = policy.DefaultTrapHold
	MinTrapHold     = policy.MinTrapHold
	MaxTrapHold     = policy.MaxTrapHold
	trapMarksMax    = policy.TrapMarksMax
)

// trapConfig is a handler's trap.
type trapConfig struct {
	path     string
	hold     time.Duration
	provider caddy.ReplacerFunc // the placeholders, made once
	warn     *logLimiter
	// checked remembers the robots.txt versions (by ID) already checked
	// for the trap's Disallow line (source site).
	checked sync.Map
}

func newTrapConfig(h *Handler) *trapConfig {
	t := &trapConfig{path: h.Trap, hold: time.Duration(h.TrapHold), warn: &logLimiter{}}
	if t.hold == 0 {
		t.hold = DefaultTrapHold
	}
	link := `<a href="` + htmlAttr(t.path) + `" rel="nofollow" hidden aria-hidden="true" tabindex="-1">Do not follow this link: it is a trap for crawlers that ignore robots.txt.</a>`
	t.provider = func(key string) (any, bool) {
		switch key {
		case "http.robots.trap":
			return t.path, true
		case "http.robots.trap_link":
			return link, true
		}
		return nil, false
	}
	return t
}

func htmlAttr(s string) string {
	return strings.NewReplacer(`&`, "&amp;", `"`, "&quot;", `<`, "&lt;", `>`, "&gt;").Replace(s)
}

// checkTrapPath checks a trap path: an absolute path that robots.txt can
// name literally.
func checkTrapPath(p string) error {
	switch {
	case !strings.HasPrefix(p, "/") || p == "/":
		return fmt.Errorf("trap: %q is not a path below the root (it must start with / and name something, e.g. /no-robots/)", p)
	case p == "/robots.txt" || strings.HasPrefix(p, "/robots.txt"):
		return fmt.Errorf("trap: %q would trap /robots.txt, which is always served", p)
	case strings.ContainsAny(p, "*$#?% \t\r\n"):
		return fmt.Errorf("trap: %q must be a plain path (no *, $, #, ?, %% or spaces), so that every robots.txt reading disallows it", p)
	}
	return nil
}

// offer makes the trap placeholders available to the request.
func (t *trapConfig) offer(r *http.Request) {
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		repl.Map(t.provider)
	}
}

// trapKey is whom a mark belongs to: the handler's scope (log mode's kept
// apart), the address's network and the User-Agent's hash.
type trapKey struct {
	scope  string
	prefix netip.Prefix
	ua     uint64
}

// trapMark is what is known of a client that took the trap (the rules are
// policy.TrapMark's), under its lock.
type trapMark struct {
	mu sync.Mutex
	policy.TrapMark
}

var (
	trapMarks    = newBoundedMap[trapKey, *trapMark](trapMarksMax)
	trapSeed     = maphash.MakeSeed()
	trapLiveTill atomic.Int64 // unix seconds until which some mark may hold
)

// live reports whether any mark may still hold: until the first trap is
// taken, a person's request pays one atomic load here.
func (t *trapConfig) live() bool {
	return coarseNow.Load() <= trapLiveTill.Load()
}

// trapMode returns the trap signal's mode and the scope key of its marks.
func (h *Handler) trapMode(r *http.Request) (policy.SignalMode, string) {
	mode := h.undeclared.modes[policy.SignalTrap]
	sc := h.scopeFor(r)
	if mode.Enforced(h.enforce) {
		return mode, sc.key
	}
	return mode, sc.logKey
}

func (h *Handler) trapKeyOf(r *http.Request, scope string) trapKey {
	return trapKey{scope: scope, prefix: policy.TrapPrefix(clientIP(nil, r)), ua: maphash.String(trapSeed, userAgent(r))}
}

// trapMarked reports whether r comes from a client that took the trap and
// is judged as a crawler now, with the trap signal's mode.
func (h *Handler) trapMarked(r *http.Request, t *trapConfig) (policy.SignalMode, bool) {
	mode, scope := h.trapMode(r)
	m, ok := trapMarks.Get(h.trapKeyOf(r, scope))
	if !ok {
		return mode, false
	}
	now := h.now()
	document := policy.IsDocument(r.URL.Path, r.Header.Get("Accept"))
	m.mu.Lock()
	defer m.mu.Unlock()
	return mode, m.Judged(now, document)
}

// takeTrap answers a request for the trap: the client is marked and, in
// enforce mode, refused with 403. A trap the current robots.txt does not
// disallow for "*" marks nobody (the request passes as before).
func (h *Handler) takeTrap(r *http.Request, t *trapConfig) *outcome {
	rule, ok := h.trapDisallowed(r, t)
	if !ok {
		if ok, n := t.warn.allow(time.Now()); ok {
			h.logger.Warn("robots: a client asked for the trap, but the site's robots.txt does not disallow it for \"*\": nobody is marked. Add `Disallow: "+t.path+"` to every group of robots.txt",
				zap.String("trap", t.path), zap.String("host", policy.HostOf(r.Host)), zap.Int("suppressed_since_last_warning", n))
		}
		return nil
	}
	mode, scope := h.trapMode(r)
	enforcing := mode.Enforced(h.enforce)
	ua := userAgent(r)
	ip := clientIP(nil, r)
	if !policy.TrapMarks(policy.KindOf(r.Header)) {
		// Another page, or the browser's own speculation, caused this
		// request: the trap's 403, and nothing else.
		countDisguisedKind(policy.SignalTrap, actionTrapUnmarked, !enforcing)
		if c := h.logger.Check(zapcore.InfoLevel, "robots: trap asked for by a request the client did not choose; not marked"); c != nil {
			c.Write(zap.String("trap", t.path), zap.String("target", warnlimit.Shorten(r.RequestURI, maxLoggedTarget)),
				zap.String("remote_ip", ip.String()), zap.String("host", policy.HostOf(r.Host)),
				zap.String("sec_fetch_site", r.Header.Get("Sec-Fetch-Site")), zap.String("sec_fetch_mode", r.Header.Get("Sec-Fetch-Mode")),
				zap.String("sec_fetch_dest", r.Header.Get("Sec-Fetch-Dest")), zap.String("mode", mode.String()))
		}
		if !enforcing {
			return nil
		}
		return &outcome{text: "robots: " + r.URL.Path + " is disallowed for every crawler by this site's robots.txt (" + rule +
			") and linked only where people do not see it. This request was made by a page or by the browser itself (a subresource, a prefetch, or a request from another site), so nothing else changes for this client.\n",
			published: published{action: policy.Block, reason: policy.Rule}}
	}
	key := h.trapKeyOf(r, scope)
	now := h.now()
	m, found := trapMarks.Get(key)
	if !found {
		m = &trapMark{}
		trapMarks.Put(key, m)
	}
	m.mu.Lock()
	m.Take(now, t.hold, ua)
	confirmed, until := m.Confirmed, m.Until
	m.mu.Unlock()
	for till := until.Unix(); ; {
		old := trapLiveTill.Load()
		if old >= till || trapLiveTill.CompareAndSwap(old, till) {
			break
		}
	}
	countDisguisedKind(policy.SignalTrap, actionTrap, !enforcing)
	if c := h.logger.Check(zapcore.InfoLevel, "robots: trap taken"); c != nil {
		c.Write(zap.String("trap", t.path), zap.String("target", warnlimit.Shorten(r.RequestURI, maxLoggedTarget)),
			zap.String("remote_ip", ip.String()), zap.String("host", policy.HostOf(r.Host)),
			zap.String("user_agent", warnlimit.Shorten(ua, maxLoggedUA)), zap.String("rule", rule),
			zap.Bool("confirmed", confirmed), zap.Time("until", until), zap.String("mode", mode.String()))
	}
	if !enforcing {
		return nil
	}
	msg := "robots: " + r.URL.Path + " is disallowed for every crawler by this site's robots.txt (" + rule +
		") and linked only where people do not see it. Whoever asks for it is a crawler that does not follow robots.txt: " +
		"requests from this client (this address and User-Agent) are judged by the \"*\" group of robots.txt until " +
		until.UTC().Format(time.RFC3339) + "."
	if !confirmed {
		msg += " If you followed this link by hand in a text browser, nothing else changes for you."
	}
	return &outcome{text: msg + "\n", published: published{action: policy.Block, reason: policy.Rule}}
}

// trapDisallowed reports whether the site's current robots.txt disallows
// the request's path for "*", and the rule that does.
func (h *Handler) trapDisallowed(r *http.Request, t *trapConfig) (string, bool) {
	v := h.rules.Peek(r, policy.HostOf(r.Host)).Current()
	if v == nil {
		return "", false
	}
	rule, ok := policy.TrapRule(v.Robots, r.URL.EscapedPath())
	if !ok {
		return "", false
	}
	return rule.String(), true
}

// checkTrapVersion warns when a robots.txt the loader published does not
// disallow the trap for every group (source site: the site's own file
// must; source file and inline get the line added): in the log once per
// version, and in the handler's config warnings (GET /robots/status, the
// status page) for as long as the host's current version lacks the line.
func (h *Handler) checkTrapVersion(host string, id string, rb *enforce.Robots) {
	d := h.undeclared
	if d == nil || d.trap == nil || rb == nil {
		return
	}
	t := d.trap
	key := "trap\x00" + host
	g, _ := rb.SelectIndex(nil, true)
	if g != nil && !g.Decide(t.path).Allowed {
		h.configWarnings.clear(key)
		return
	}
	h.configWarnings.set(key, "robots: trap "+t.path+": the robots.txt of "+host+" (version "+id+") does not disallow it for \"*\", so clients that take the trap are not marked. Add `Disallow: "+t.path+"` to every group of that robots.txt")
	if _, seen := t.checked.LoadOrStore(id, true); seen {
		return
	}
	h.logger.Warn("robots: the site's robots.txt does not disallow the trap for \"*\": clients that take it are not marked until it does. Add `Disallow: "+t.path+"` to every group",
		zap.String("trap", t.path), zap.String("host", host), zap.String("version", id))
}

// withTrapRules returns robots.txt text with `Disallow: <trap>` in every
// group: after each run of user-agent lines, and in a "*" group appended
// when the text has none. It is how source file and inline serve and
// enforce the trap.
func withTrapRules(text, trap string) string {
	line := "Disallow: " + trap
	var b strings.Builder
	b.Grow(len(text) + 64)
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), enforce.MaxSize+1)
	inAgents, star := false, false
	for sc.Scan() {
		l := sc.Text()
		key, val, isAgent := userAgentLine(l)
		_ = key
		if !isAgent && inAgents {
			b.WriteString(line + "\n")
		}
		if isAgent && val == "*" {
			star = true
		}
		inAgents = isAgent
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if inAgents {
		b.WriteString(line + "\n")
	}
	if !star {
		b.WriteString("\nUser-agent: *\n" + line + "\n")
	}
	return b.String()
}

// userAgentLine reports whether l is a user-agent line, and its value.
func userAgentLine(l string) (key, val string, ok bool) {
	s := strings.TrimSpace(l)
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	k, v, found := strings.Cut(s, ":")
	if !found || !strings.EqualFold(strings.TrimSpace(k), "user-agent") {
		return "", "", false
	}
	return k, strings.TrimSpace(v), true
}

// trapRules adds the trap's Disallow line to a robots.txt file's body for
// source file (loader.go, loadFile); the body is unchanged without a trap.
func (h *Handler) trapRules(body []byte) []byte {
	if h.undeclared == nil || h.undeclared.trap == nil {
		return body
	}
	return []byte(withTrapRules(string(body), h.Trap))
}

// servesTrapRules reports whether the handler adds its trap's Disallow
// line to the robots.txt it serves and enforces: a file or inline source
// with the trap signal on (what provisionDisguised decides, read from the
// config alone, for the command line).
func (h *Handler) servesTrapRules() bool {
	if h.Trap == "" || (h.Source != "inline" && h.Source != "file") {
		return false
	}
	modes := policy.NewDisguiseModes(h.Disguised, h.DisguisedSignals, true)
	return modes[policy.SignalTrap] != policy.SignalOff
}

// trapKeySuffix keeps the versions of a source file with a trap apart from
// those of the same file without one.
func trapKeySuffix(h *Handler) string {
	if h.undeclared == nil || h.undeclared.trap == nil {
		return ""
	}
	return "|trap:" + h.Trap
}
