package caddyrobots

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/caddyrobots/caddy-robots/agents"
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
//   - the trap (trap.go): a path robots.txt disallows for every crawler,
//     linked where no person sees it; whoever asks for it read a link that
//     robots.txt forbids.
//
// A client caught by either is an undeclared crawler: it is judged like any
// unnamed bot, by the "*" group, with strikes and Crawl-delay, under the
// agent category "undeclared" (agents.CategoryUndeclared), so that the
// decision counters, the log lines, the status page and the audit show it
// apart from the crawlers that name themselves. Each signal is off, log
// (judged, counted and logged as mode log does, never refused) or enforce.
// The default is what real browsers were proven to pass: see the README's
// "Disguised crawlers".

// The signals, their modes and the choice among them are policy's
// (policy.Signal, policy.DisguiseModes), shared with caddy robots audit.

// undeclaredSignals is a handler's state for undeclared crawlers; nil when every
// signal is off.
type undeclaredSignals struct {
	modes policy.DisguiseModes
	// headers is set when a header signal is on.
	headers bool
	claims  *agents.BrowserClaims
	trap    *trapConfig // nil without a trap
	// proxied: 0 not known yet, 1 the server trusts no proxy, 2 it does
	// (then X-Forwarded-Proto from a trusted proxy says the client used
	// HTTPS).
	proxied atomic.Int32
}

// provisionDisguised reads the disguised, disguised_signals, trap and
// trap_hold options (with their defaults, see applyDefaults) into h.undeclared.
func (h *Handler) provisionDisguised() error {
	d := &undeclaredSignals{modes: policy.NewDisguiseModes(h.Disguised, h.DisguisedSignals, h.Trap != "")}
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
		d.trap = newTrapConfig(h)
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

// checkUndeclared is undeclared past its first test.
func (h *Handler) checkUndeclared(r *http.Request, d *undeclaredSignals) *outcome {
	if isSubrequest(r) {
		return nil
	}
	if t := d.trap; t != nil {
		t.offer(r)
		if policy.IsTrap(r.URL.Path, t.path) {
			return h.takeTrap(r, t)
		}
		if t.live() {
			if mode, ok := h.trapMarked(r, t); ok {
				e := d.claims.Lookup(userAgent(r))
				return h.judgeUndeclared(r, e, policy.SignalTrap, mode, d.carriesClaim(r, &e.Claim))
			}
		}
	}
	if !d.headers || !d.secure(r) {
		return nil
	}
	// A real browser's request carries the headers: decided without
	// looking the User-Agent up.
	present := policy.HeaderSignals(r.Header)
	if d.modes.PassesHeaders(present) {
		return nil
	}
	e := d.claims.Lookup(userAgent(r))
	s, mode := d.modes.JudgeHeaders(&e.Claim, present, policy.KindOf(r.Header))
	if mode == policy.SignalOff {
		return nil
	}
	return h.judgeUndeclared(r, e, s, mode, false)
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
// User-Agent claims), caught by signal s: like any unnamed bot, by the "*"
// group, with strikes and Crawl-delay, under state of its own
// (e.StateName); with rulesOnly, by robots.txt's rules alone. In log mode
// (the signal's or the handler's), it is judged in mode log: counted and
// logged, with log mode's own state, never refused.
func (h *Handler) judgeUndeclared(r *http.Request, e *agents.ClaimEntry, s policy.Signal, mode policy.SignalMode, rulesOnly bool) *outcome {
	m := h.mode()
	if mode != policy.SignalEnforce {
		m = pipeline.Log
	}
	o := outcome{published: published{agent: e.Undeclared}}
	o.Client.Undeclared, o.Client.RulesOnly = e.StateName, rulesOnly
	refused, judged := h.judgeBot(r, &o, m)
	if !judged {
		return refused
	}
	countDisguised(s, o.action, m == pipeline.Log)
	h.logUndeclared(r, s, &o, m.String())
	if refused != nil {
		refused.text = undeclaredWhy(r, s, rulesOnly) + "\n\n" + refused.message()
	}
	return refused
}

// undeclaredWhy is the first paragraph of the refusal of an undeclared
// crawler: what gave it away.
func undeclaredWhy(r *http.Request, s policy.Signal, rulesOnly bool) string {
	switch {
	case s == policy.SignalTrap && rulesOnly:
		return "A client with this User-Agent on this address asked for a path that robots.txt disallows for every crawler and that no person sees (a trap). This request carries your browser's own headers, so it is judged by robots.txt's rules alone, with no throttle and no ban, until the mark expires."
	case s == policy.SignalTrap:
		return "This client asked for a path that robots.txt disallows for every crawler and that no person sees (a trap), so it is judged as a crawler: by the \"*\" group of robots.txt."
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
func (h *Handler) logUndeclared(r *http.Request, s policy.Signal, o *outcome, mode string) {
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
				zap.Int("suppressed", suppressed))
		}
	}
}

// disguisedCounters is the counter family caddy_robots_disguised_total,
// part of the package's one metric set, with its counters resolved once:
// [signal][action or trap][mode].
type disguisedCounters struct {
	vec    *prometheus.CounterVec
	byKind [policy.NumSignals][policy.Actions + 2][2]prometheus.Counter
}

// actionTrap is the action label of a trap request that marked its
// client; actionTrapUnmarked of one that did not (another page or the
// browser's own speculation caused it).
const (
	actionTrap         = policy.Actions
	actionTrapUnmarked = policy.Actions + 1
)

func newDisguisedCounters() *disguisedCounters {
	d := &disguisedCounters{vec: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy", Subsystem: "robots", Name: "disguised_total",
		Help: "Requests judged as an undeclared crawler's, by the signal that gave it away (fetch_metadata, fetch_metadata_safari, client_hints, trap), the decision (allow, block, throttle, ban; trap for a trap request that marked its client, trap_unmarked for one a page or the browser caused) and mode (enforce, log).",
	}, []string{"signal", "action", "mode"})}
	for s := range policy.Signal(policy.NumSignals) {
		for a := 0; a <= actionTrapUnmarked; a++ {
			act := "trap"
			switch {
			case a < policy.Actions:
				act = policy.Action(a).String()
			case a == actionTrapUnmarked:
				act = "trap_unmarked"
			}
			for m, mode := range [...]string{"enforce", "log"} {
				d.byKind[s][a][m] = d.vec.WithLabelValues(s.String(), act, mode)
			}
		}
	}
	return d
}

// countDisguised counts one request of an undeclared crawler.
func countDisguised(s policy.Signal, a policy.Action, logMode bool) {
	countDisguisedKind(s, int(a), logMode)
}

func countDisguisedKind(s policy.Signal, a int, logMode bool) {
	m := 0
	if logMode {
		m = 1
	}
	metrics.disguised.byKind[s][a][m].Inc()
}

// validDisguisedMode reports whether v is a mode of disguised.
func validDisguisedMode(v string) bool { return policy.ValidSignalMode(v) }

// checkDisguised validates the disguised, disguised_signals, trap and
// trap_hold options.
func (h *Handler) checkDisguised() []error {
	var errs []error
	if h.Disguised != "" && !validDisguisedMode(h.Disguised) {
		errs = append(errs, fmt.Errorf("disguised: unknown value %q (want off, log or enforce)", h.Disguised))
	}
	for k, v := range h.DisguisedSignals {
		if !isSignalName(k) {
			errs = append(errs, fmt.Errorf("disguised: unknown signal %q (want %s)", k, strings.Join(policy.SignalNames(), ", ")))
		}
		if !validDisguisedMode(v) {
			errs = append(errs, fmt.Errorf("disguised %s: unknown value %q (want off, log or enforce)", k, v))
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

// parseDisguised reads `disguised [off|log|enforce] [{ <signal> <mode> ... }]`.
func (h *Handler) parseDisguised(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	switch len(args) {
	case 0:
	case 1:
		if !validDisguisedMode(args[0]) {
			return d.Errf("robots: disguised: unknown value %q (want off, log or enforce)", args[0])
		}
		h.Disguised = args[0]
	default:
		return d.Errf("robots: disguised takes one mode (off, log or enforce) and an optional block of signals")
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sig := d.Val()
		if !isSignalName(sig) {
			return d.Errf("robots: disguised: unknown signal %q (want fetch_metadata, fetch_metadata_safari, client_hints or trap)", sig)
		}
		if _, dup := h.DisguisedSignals[sig]; dup {
			return d.Errf("robots: disguised: signal %q given twice", sig)
		}
		var mode string
		if err := parseEnum(d, "disguised "+sig, &mode, "off", "log", "enforce"); err != nil {
			return err
		}
		if h.DisguisedSignals == nil {
			h.DisguisedSignals = map[string]string{}
		}
		h.DisguisedSignals[sig] = mode
	}
	if len(args) == 0 && len(h.DisguisedSignals) == 0 {
		return d.Errf("robots: disguised needs a mode (off, log or enforce) or a block of signals")
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
