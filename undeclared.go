package caddyrobots

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
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/pipeline"
	"github.com/caddyrobots/caddy-robots/internal/policy"
	"github.com/caddyrobots/caddy-robots/internal/warnlimit"
)

// Undeclared crawlers: scripts that wear a browser's User-Agent.
//
// robots.txt is not for people, but a script is not a person because it
// says Mozilla/5.0. A browser's User-Agent is a claim, checked here against
// what that browser always does, without a challenge, a cookie or
// JavaScript:
//
//   - the headers a browser sends on every request to a secure context
//     (agents.BrowserClaim): a request that claims Chrome 131 over HTTPS and
//     carries no Sec-Fetch-* header was not sent by Chrome;
//   - the TLS handshake (signal tls, policy.TLSVerdict): a browser's claim
//     over a handshake an HTTP library made (robots_fingerprint,
//     fingerprint.go), or one the claimed browser could not have made;
//     headers can be forged, a library's handshake cannot;
//   - the trap (below): a path robots.txt disallows for every crawler,
//     linked where no person sees it; whoever asks for it read a link that
//     robots.txt forbids.
//
// A client caught by any of them is an undeclared crawler: it is judged like any
// unnamed bot, by the "*" group, with strikes and Crawl-delay, under the
// agent category "undeclared" (agents.CategoryUndeclared), so that the
// decision counters, the log lines, the status page and the audit show it
// apart from the crawlers that name themselves. Each signal is off, log
// (judged, counted and logged as mode log does, never refused) or enforce.
// The default is what real browsers were proven to pass: see the README's
// "Undeclared crawlers".

// The signals, their modes and the choice among them are policy's
// (policy.Signal, policy.UndeclaredModes), shared with caddy robots audit.

// undeclaredSignals is a handler's state for undeclared crawlers; nil when every
// signal is off.
type undeclaredSignals struct {
	modes policy.UndeclaredModes
	// headers is set when a header signal is on.
	headers bool
	claims  *agents.BrowserClaims
	trap    *trapConfig // nil without a trap
	// proxied: 0 not known yet, 1 the server trusts no proxy, 2 it does
	// (then X-Forwarded-Proto from a trusted proxy says the client used
	// HTTPS).
	proxied atomic.Int32
}

// provisionUndeclared reads the undeclared, undeclared_signals, trap and
// trap_hold options (with their defaults, see applyDefaults) into h.undeclared.
func (h *Handler) provisionUndeclared() error {
	d := &undeclaredSignals{modes: policy.NewUndeclaredModes(h.Undeclared, h.UndeclaredSignals, h.Trap != "")}
	if !d.modes.On() {
		h.undeclared = nil
		return nil
	}
	d.headers = d.modes.Headers()
	// The trap needs the claims too: a marked client is judged as the
	// undeclared crawler its User-Agent makes it.
	d.claims = sharedBrowserClaims()
	if h.Trap != "" && d.modes[policy.SignalTrap] != policy.SignalOff {
		// The served and enforced text of a file or inline source carry
		// the trap's Disallow line: the loader adds it on every read
		// (loader.go, sites.Config.Rules).
		t, err := newTrapConfig(h)
		if err != nil {
			return err
		}
		d.trap = t
		if h.Source != "site" && h.RobotsTxt == "pass" {
			h.warnConfig("robots: trap with robots_txt pass: the site's own /robots.txt must disallow the trap for every crawler, or compliant crawlers that follow the link are judged",
				zap.String("trap", h.Trap))
		}
	}
	h.undeclared = d
	return nil
}

// sharedBrowserClaims is the process's cache of browser claims, shared by
// every handler and kept across reloads.
var sharedBrowserClaims = sync.OnceValue(func() *agents.BrowserClaims { return agents.NewBrowserClaims(0) })

// undeclaredCrawler is called by judgeRequest for a request Identify took for a
// person's (or for an HTTP library under libraries ignore). It returns nil
// when the request passes as before, and otherwise what judging it as an
// undeclared crawler decided (nil when that allows it, or in log mode).
//
// A person's request over plain HTTP costs a few loads and compares here;
// over HTTPS, one or two header lookups, and a cached claim lookup only when
// a header is missing.
func (h *Handler) undeclaredCrawler(r *http.Request) *outcome {
	// The common case, inlined into judgeRequest: a person over plain HTTP to
	// a host that cannot be loopback, with no trap and no trusted proxy.
	d := h.undeclared
	if d == nil || d.trap == nil && r.TLS == nil && d.proxied.Load() == 1 && !maybeLoopback(r.Host) {
		return nil
	}
	return h.checkUndeclared(r, d)
}

// maybeLoopback reports whether host may name a loopback host
// (agents.IsSecureHost decides): localhost, 127.x.x.x or [::1].
func maybeLoopback(host string) bool {
	return host != "" && (host[0] == 'l' || host[0] == 'L' || host[0] == '1' || host[0] == '[')
}

// checkUndeclared is undeclared past its first test: the trap, then the
// tls signal and the header signals, of which the strictest mode decides
// (a header signal on a tie, as before the tls signal existed).
func (h *Handler) checkUndeclared(r *http.Request, d *undeclaredSignals) *outcome {
	if isSubrequest(r) {
		return nil
	}
	// A browser's request pays one context read here over HTTPS.
	fp, ok := h.fingerprintOf(r)
	if !ok {
		fp = nil
	}
	if t := d.trap; t != nil {
		t.offer(r)
		if policy.IsTrap(r.URL.Path, t.path) {
			return h.takeTrap(r, t, fp)
		}
		if t.marks.live(h.now) {
			if mode, ok := h.trapMarked(r, t, fp); ok {
				e := d.claims.Lookup(userAgent(r))
				return h.judgeUndeclared(r, e, policy.SignalTrap, mode, d.carriesClaim(r, &e.Claim), fp, "")
			}
		}
	}
	var e *agents.ClaimEntry
	tlsWhy, tlsMode := "", policy.SignalOff
	if fp != nil && fp.Hello != nil && !fp.Verdict.Engine.IsBrowser() && d.modes[policy.SignalTLS] != policy.SignalOff {
		e = d.claims.Lookup(userAgent(r))
		if tlsWhy = policy.TLSVerdict(&e.TLS, fp.Hello, fp.Verdict); tlsWhy != "" {
			tlsMode = d.modes[policy.SignalTLS]
		}
	}
	h.noteTLS(r, fp, e, tlsWhy)
	s, mode := policy.SignalFetchMetadata, policy.SignalOff
	// A real browser's request carries the headers: decided without
	// looking the User-Agent up.
	if d.headers && d.secure(r) {
		if present := policy.HeaderSignals(r.Header); !d.modes.PassesHeaders(present) {
			if e == nil {
				e = d.claims.Lookup(userAgent(r))
			}
			s, mode = d.modes.JudgeHeaders(&e.Claim, present, policy.KindOf(r.Header))
		}
	}
	switch {
	case tlsMode > mode:
		return h.judgeUndeclared(r, e, policy.SignalTLS, tlsMode, false, fp, tlsWhy)
	case mode == policy.SignalOff:
		return nil
	}
	return h.judgeUndeclared(r, e, s, mode, false, fp, "")
}

// carriesClaim reports whether r, in a secure context, carries every
// header the browser claimed by c always sends there: the evidence that
// keeps a person out of a trap mark earned by a script that sent the same
// User-Agent from the same address (policy.Client.RulesOnly).
func (d *undeclaredSignals) carriesClaim(r *http.Request, c *agents.BrowserClaim) bool {
	return d.secure(r) && policy.CarriesClaim(c, policy.HeaderSignals(r.Header))
}

// secure reports whether the client reached the site in a secure context,
// where browsers send the headers: over TLS, to a loopback host, or over
// HTTPS to a proxy this server trusts (X-Forwarded-Proto https).
func (d *undeclaredSignals) secure(r *http.Request) bool {
	if r.TLS != nil || agents.IsSecureHost(r.Host) {
		return true
	}
	p := d.proxied.Load()
	if p == 0 {
		p = 1
		if srv, _ := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server); serverTrustsProxies(srv) {
			p = 2
		}
		d.proxied.Store(p)
	}
	if p == 1 {
		return false
	}
	if _, ok := r.Header["X-Forwarded-Proto"]; !ok {
		return false
	}
	return requestIsHTTPS(r)
}

// judgeUndeclared judges r as an undeclared crawler's (e: what its
// User-Agent claims), caught by signal s (why: what the tls signal found):
// like any unnamed bot, by the "*" group, with strikes and Crawl-delay,
// under state of its own (undeclaredStateName); with rulesOnly, by
// robots.txt's rules alone. In log mode (the signal's or the handler's),
// it is judged in mode log: counted and logged, with log mode's own state,
// never refused.
func (h *Handler) judgeUndeclared(r *http.Request, e *agents.ClaimEntry, s policy.Signal, mode policy.SignalMode, rulesOnly bool, fp *tlsFingerprint, why string) *outcome {
	m := h.mode()
	if mode != policy.SignalEnforce {
		m = pipeline.Log
	}
	o := outcome{published: published{agent: e.Undeclared}}
	o.Client.Undeclared, o.Client.RulesOnly = undeclaredStateName(r, e, fp), rulesOnly
	refused, judged := h.judgeBot(r, &o, m)
	if !judged {
		return refused
	}
	h.series.countUndeclared(h.scopeFor(r).desc, s, int(o.action), m == pipeline.Log) // metrics.go
	h.logUndeclared(r, s, &o, m.String(), fp, why)
	if refused != nil {
		refused.text = undeclaredWhy(r, s, rulesOnly, why) + "\n\n" + refused.message()
	}
	return refused
}

// undeclaredStateName is the name an undeclared crawler's state is kept
// under: with a fingerprint, agents.UndeclaredStateNameTLS (a library's
// handshake names the client whatever User-Agent it sends next); without
// one, the User-Agent's (e.StateName, cached).
func undeclaredStateName(r *http.Request, e *agents.ClaimEntry, fp *tlsFingerprint) string {
	if fp == nil || fp.JA4 == "" {
		return e.StateName
	}
	return agents.UndeclaredStateNameTLS(userAgent(r), fp.JA4, fp.Verdict.Engine)
}

// undeclaredWhy is the first paragraph of the refusal of an undeclared
// crawler: what gave it away (why: what the tls signal found).
func undeclaredWhy(r *http.Request, s policy.Signal, rulesOnly bool, why string) string {
	switch {
	case s == policy.SignalTrap && rulesOnly:
		return "A client with this User-Agent on this address asked for a path that robots.txt disallows for every crawler and that no person sees (a trap). This request carries your browser's own headers, so it is judged by robots.txt's rules alone, with no throttle and no ban, until the mark expires."
	case s == policy.SignalTrap:
		return "This client asked for a path that robots.txt disallows for every crawler and that no person sees (a trap), so it is judged as a crawler: by the \"*\" group of robots.txt."
	case s == policy.SignalTLS:
		c := sharedBrowserClaims().Lookup(userAgent(r)).TLS
		return "Your User-Agent claims " + c.Browser + ", but " + why + " (signal tls). Headers can be rewritten, a TLS library's handshake cannot, so this request is judged as an undeclared crawler: by the \"*\" group of robots.txt. A crawler should name itself in its User-Agent."
	case s == policy.SignalClientHints:
		c := sharedBrowserClaims().Lookup(userAgent(r)).Claim
		return "Your User-Agent claims " + c.Name + ", which always sends Sec-CH-UA over HTTPS and to localhost; this request carries none, so it is judged as an undeclared crawler: by the \"*\" group of robots.txt."
	}
	c := sharedBrowserClaims().Lookup(userAgent(r)).Claim
	return "Your User-Agent claims " + c.Name + ", which always sends Sec-Fetch-Site, Sec-Fetch-Mode and Sec-Fetch-Dest over HTTPS and to localhost; this request carries none of them, so it is judged as an undeclared crawler: by the \"*\" group of robots.txt. A crawler should name itself in its User-Agent."
}

// logUndeclared writes an INFO line when a client is first judged as an
// undeclared crawler by a signal (then at most every 10 minutes per signal,
// address and agent), so that the log shows why before any refusal.
func (h *Handler) logUndeclared(r *http.Request, s policy.Signal, o *outcome, mode string, fp *tlsFingerprint, why string) {
	if h.logger == nil || !h.logger.Core().Enabled(zapcore.InfoLevel) {
		return
	}
	ip := o.Client.Addr
	if !ip.IsValid() {
		ip = clientIP(nil, r)
	}
	key := "undeclared\x00" + mode + "\x00" + s.String() + "\x00" + ip.String() + "\x00" + o.agent.Name
	if ok, suppressed, _ := refusals.allow(key, h.now(), 10*time.Minute); ok {
		if c := h.logger.Check(zapcore.InfoLevel, "robots: undeclared crawler"); c != nil {
			c.Write(zap.String("signal", s.String()), zap.String("crawler", o.agent.Name),
				zap.String("remote_ip", ip.String()), zap.String("host", o.Host),
				zap.String("user_agent", warnlimit.Shorten(userAgent(r), maxLoggedUA)),
				zap.String("target", warnlimit.Shorten(o.Target.Raw, maxLoggedTarget)),
				zap.String("decision", o.action.String()), zap.String("mode", mode),
				zap.Int("suppressed", suppressed), zap.String("tls_fingerprint", fingerprintJA4(fp)),
				zap.String("tls_engine", fingerprintEngine(fp)), zap.String("why", why))
		}
	}
}

// fingerprintJA4 is fp's JA4 for a log line, "" without one.
func fingerprintJA4(fp *tlsFingerprint) string {
	if fp == nil {
		return ""
	}
	return fp.JA4
}

// fingerprintEngine is the engine of fp's handshake for a log line, ""
// without a handshake (none, or a JA4 from a proxy's header).
func fingerprintEngine(fp *tlsFingerprint) string {
	if fp == nil || fp.Hello == nil {
		return ""
	}
	return fp.Verdict.Engine.String()
}

// actionTrap is the action label of a trap request that marked its
// client; actionTrapUnmarked of one that did not (another page or the
// browser's own speculation caused it).
const (
	actionTrap         = policy.Actions
	actionTrapUnmarked = policy.Actions + 1
)

// newUndeclaredCounters is the counter family caddy_robots_undeclared_total,
// part of the package's one metric set; its series are a handler's
// (siteSeries.countUndeclared).
func newUndeclaredCounters() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy", Subsystem: "robots", Name: "undeclared_total",
		Help: "Requests judged as an undeclared crawler's, by the signal that gave it away (fetch_metadata, fetch_metadata_safari, client_hints, trap, tls), the decision (allow, block, throttle, ban; trap for a trap request that marked its client, trap_unmarked for one a page or the browser caused), mode (enforce, log) and site (the site block of the config, one value per robots handler).",
	}, []string{"signal", "action", "mode", "site"})
}

// undeclaredAction is the action label of a: a policy.Action, actionTrap
// or actionTrapUnmarked.
func undeclaredAction(a int) string {
	switch {
	case a < policy.Actions:
		return policy.Action(a).String()
	case a == actionTrap:
		return "trap"
	default:
		return "trap_unmarked"
	}
}

// validUndeclaredMode reports whether v is a mode of undeclared.
func validUndeclaredMode(v string) bool { return policy.ValidSignalMode(v) }

// validateUndeclared validates the undeclared, undeclared_signals, trap and
// trap_hold options.
func (h *Handler) validateUndeclared() []error {
	var errs []error
	if h.Undeclared != "" && !validUndeclaredMode(h.Undeclared) {
		errs = append(errs, fmt.Errorf("undeclared: unknown value %q (want off, log or enforce)", h.Undeclared))
	}
	for k, v := range h.UndeclaredSignals {
		if !isSignalName(k) {
			errs = append(errs, fmt.Errorf("undeclared: unknown signal %q (want %s)", k, strings.Join(policy.SignalNames(), ", ")))
		}
		if !validUndeclaredMode(v) {
			errs = append(errs, fmt.Errorf("undeclared %s: unknown value %q (want off, log or enforce)", k, v))
		}
	}
	if h.Trap != "" {
		if err := checkTrapPath(h.Trap); err != nil {
			errs = append(errs, err)
		}
	}
	if d := time.Duration(h.TrapHold); d != 0 {
		if err := checkDuration("trap hold", d, MinTrapHold, MaxTrapHold); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func isSignalName(s string) bool {
	_, ok := policy.ParseSignal(s)
	return ok
}

// parseUndeclared reads `undeclared [off|log|enforce] [{ <signal> <mode> ... }]`;
// opt is the option's name as written (disguised, its old name, too).
func (h *Handler) parseUndeclared(d *caddyfile.Dispenser, opt string) error {
	args := d.RemainingArgs()
	switch len(args) {
	case 0:
	case 1:
		if !validUndeclaredMode(args[0]) {
			return d.Errf("robots: %s: unknown value %q (want off, log or enforce)", opt, args[0])
		}
		h.Undeclared = args[0]
	default:
		return d.Errf("robots: %s takes one mode (off, log or enforce) and an optional block of signals", opt)
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sig := d.Val()
		if !isSignalName(sig) {
			return d.Errf("robots: %s: unknown signal %q (want %s)", opt, sig, strings.Join(policy.SignalNames(), ", "))
		}
		if _, dup := h.UndeclaredSignals[sig]; dup {
			return d.Errf("robots: %s: signal %q given twice", opt, sig)
		}
		var mode string
		if err := parseEnum(d, opt+" "+sig, &mode, "off", "log", "enforce"); err != nil {
			return err
		}
		if h.UndeclaredSignals == nil {
			h.UndeclaredSignals = map[string]string{}
		}
		h.UndeclaredSignals[sig] = mode
	}
	if len(args) == 0 && len(h.UndeclaredSignals) == 0 {
		return d.Errf("robots: %s needs a mode (off, log or enforce) or a block of signals", opt)
	}
	return nil
}

// parseTrap reads `trap <path> [<hold>]`.
func (h *Handler) parseTrap(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) < 1 || len(args) > 2 {
		return d.Errf("robots: trap needs a path and an optional hold duration, e.g. trap /no-robots/ 24h")
	}
	if err := checkTrapPath(args[0]); err != nil {
		return d.Errf("robots: %v", err)
	}
	h.Trap = args[0]
	if len(args) == 2 {
		hold, err := caddy.ParseDuration(args[1])
		if err != nil {
			return d.Errf("robots: trap: bad hold duration %q: %v", args[1], err)
		}
		if err := checkDuration("trap hold", hold, MinTrapHold, MaxTrapHold); err != nil {
			return d.Errf("robots: %v", err)
		}
		h.TrapHold = caddy.Duration(hold)
	}
	return nil
}

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
// as everywhere else, and a hash of the whole User-Agent. Over a
// fingerprinted connection the handshake replaces or joins the User-Agent
// (trapKeyOf): a library's JA4 alone, a browser engine's JA4 with the
// User-Agent. A person sharing
// the address with the crawler is not swept up unless their browser sends
// the very same User-Agent string; even then they are only judged by
// robots.txt's "*" group (the pages it allows are served) for the hold. A
// script that rotates its User-Agent on every request is marked anew with
// each string it uses on the trap, and its other strings pass; over HTTPS
// the header check catches such scripts, which rarely send a browser's
// Fetch Metadata headers. The marks live in a bounded table (65,536
// entries, shared by the handlers of the process and kept across config
// reloads, trapPool); losing one only forgets a mark.
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
	marks    *trapMarks // the process's, from trapPool
	// checked remembers the robots.txt versions (by ID) already checked
	// for the trap's Disallow line (source site).
	checked sync.Map
}

// newTrapConfig makes h's trap and takes the marks table from trapPool
// (releaseTrap gives it back).
func newTrapConfig(h *Handler) (*trapConfig, error) {
	t := &trapConfig{path: h.Trap, hold: time.Duration(h.TrapHold), warn: &logLimiter{}}
	m, _, err := trapPool.LoadOrNew(trapPoolKey, func() (caddy.Destructor, error) { return newTrapMarks(), nil })
	if err != nil {
		return nil, fmt.Errorf("robots: trap marks: %w", err)
	}
	t.marks = m.(*trapMarks)
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
	return t, nil
}

// releaseTrap gives h's hold on the trap marks back to trapPool, which
// drops the table when no handler with a trap is left (not across a
// reload: the new config takes it before the old one lets go).
func (h *Handler) releaseTrap() error {
	if h.undeclared == nil || h.undeclared.trap == nil {
		return nil
	}
	if _, err := trapPool.Delete(trapPoolKey); err != nil {
		return fmt.Errorf("robots: releasing trap marks: %w", err)
	}
	return nil
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

// take records that the client took the trap at now, and returns whether
// the mark is confirmed and until when it holds.
func (m *trapMark) take(now time.Time, hold time.Duration, ua string) (confirmed bool, until time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Take(now, hold, ua)
	return m.Confirmed, m.Until
}

// trapPool holds the one table of trap marks of the process (under
// trapPoolKey) while some handler has a trap, so that a mark outlives a
// config reload and every handler with a trap sees it.
var trapPool = caddy.NewUsagePool()

const trapPoolKey = "trap marks"

// trapSeed keys the User-Agent hashes of trapKey.
var trapSeed = maphash.MakeSeed()

// trapMarks is the table of clients that took a trap: at most
// trapMarksMax, the least recently seen dropped first.
type trapMarks struct {
	lru *lru.Cache[trapKey, *trapMark]
	// liveTill is the Unix second (of the handlers' clock, Handler.now)
	// until which some mark may hold; 0 until a trap is taken.
	liveTill atomic.Int64
}

func newTrapMarks() *trapMarks {
	c, err := lru.New[trapKey, *trapMark](trapMarksMax)
	if err != nil {
		panic(fmt.Sprintf("robots: trap marks: %v", err)) // trapMarksMax is a positive constant
	}
	return &trapMarks{lru: c}
}

// Destruct lets trapPool drop the table: it holds memory only.
func (*trapMarks) Destruct() error { return nil }

// extend records that a mark holds until till.
func (m *trapMarks) extend(till time.Time) {
	for t := till.Unix(); ; {
		old := m.liveTill.Load()
		if old >= t || m.liveTill.CompareAndSwap(old, t) {
			return
		}
	}
}

// live reports whether any mark may still hold at now: until the first
// trap is taken, a person's request pays one atomic load here and reads no
// clock.
func (m *trapMarks) live(now func() time.Time) bool {
	till := m.liveTill.Load()
	return till != 0 && now().Unix() <= till
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

// trapKeyOf is the key of r's client's mark. Its client hash is over what
// agents.UndeclaredStateNameTLS names a client by: with a fingerprint fp,
// a library's or an unknown stack's JA4 alone (a script that changes its
// User-Agent keeps its mark), or a browser engine's JA4 with the
// User-Agent (a script's mark with a browser's exact User-Agent never
// reaches that browser, whose handshake differs); without one, the
// User-Agent. It hashes the parts rather than the name, which would cost
// a SHA-256 and an allocation on every request of a browser while a mark
// holds.
func (h *Handler) trapKeyOf(r *http.Request, scope string, fp *tlsFingerprint) trapKey {
	k := trapKey{scope: scope, prefix: policy.TrapPrefix(clientIP(nil, r))}
	if fp == nil || fp.JA4 == "" {
		k.ua = maphash.String(trapSeed, userAgent(r))
		return k
	}
	var mh maphash.Hash
	mh.SetSeed(trapSeed)
	if fp.Verdict.Engine.IsBrowser() {
		mh.WriteString(userAgent(r))
	} else {
		mh.WriteString("TLS")
	}
	mh.WriteByte(0)
	mh.WriteString(fp.JA4)
	k.ua = mh.Sum64()
	return k
}

// trapMarked reports whether r comes from a client that took the trap and
// is judged as a crawler now, with the trap signal's mode.
func (h *Handler) trapMarked(r *http.Request, t *trapConfig, fp *tlsFingerprint) (policy.SignalMode, bool) {
	mode, scope := h.trapMode(r)
	m, ok := t.marks.lru.Get(h.trapKeyOf(r, scope, fp))
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
func (h *Handler) takeTrap(r *http.Request, t *trapConfig, fp *tlsFingerprint) *outcome {
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
		h.series.countUndeclared(h.scopeFor(r).desc, policy.SignalTrap, actionTrapUnmarked, !enforcing)
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
	key := h.trapKeyOf(r, scope, fp)
	now := h.now()
	m, found := t.marks.lru.Get(key)
	if !found {
		m = &trapMark{}
		t.marks.lru.Add(key, m)
	}
	confirmed, until := m.take(now, t.hold, ua)
	t.marks.extend(until)
	h.series.countUndeclared(h.scopeFor(r).desc, policy.SignalTrap, actionTrap, !enforcing)
	if c := h.logger.Check(zapcore.InfoLevel, "robots: trap taken"); c != nil {
		c.Write(zap.String("trap", t.path), zap.String("target", warnlimit.Shorten(r.RequestURI, maxLoggedTarget)),
			zap.String("remote_ip", ip.String()), zap.String("host", policy.HostOf(r.Host)),
			zap.String("user_agent", warnlimit.Shorten(ua, maxLoggedUA)), zap.String("rule", rule),
			zap.Bool("confirmed", confirmed), zap.Time("until", until), zap.String("mode", mode.String()),
			zap.String("tls_fingerprint", fingerprintJA4(fp)))
	}
	if !enforcing {
		return nil
	}
	msg := "robots: " + r.URL.Path + " is disallowed for every crawler by this site's robots.txt (" + rule +
		") and linked only where people do not see it. Whoever asks for it is a crawler that does not follow robots.txt: " +
		"requests from this client (" + trapClientWords(fp) + ") are judged by the \"*\" group of robots.txt until " +
		until.UTC().Format(time.RFC3339) + "."
	if !confirmed {
		msg += " If you followed this link by hand in a text browser, nothing else changes for you."
	}
	return &outcome{text: msg + "\n", published: published{action: policy.Block, reason: policy.Rule}}
}

// trapClientWords says whom a trap mark names (trapKeyOf), for its
// refusal.
func trapClientWords(fp *tlsFingerprint) string {
	if fp == nil || fp.JA4 == "" {
		return "this address and User-Agent"
	}
	if fp.Verdict.Engine.IsBrowser() {
		return "this address, User-Agent and TLS handshake"
	}
	return "this address and TLS handshake, whatever its User-Agent"
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
// source file (sites.Config.Rules, which the loader applies to each
// file it reads); the body is unchanged without a trap.
func (h *Handler) trapRules(body []byte) []byte {
	if h.undeclared == nil || h.undeclared.trap == nil {
		return body
	}
	return []byte(withTrapRules(string(body), h.Trap))
}

// servesTrapRules reports whether the handler adds its trap's Disallow
// line to the robots.txt it serves and enforces: a file or inline source
// with the trap signal on (what provisionUndeclared decides, read from the
// config alone, for the command line).
func (h *Handler) servesTrapRules() bool {
	if h.Trap == "" || (h.Source != "inline" && h.Source != "file") {
		return false
	}
	modes := policy.NewUndeclaredModes(h.Undeclared, h.UndeclaredSignals, true)
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
