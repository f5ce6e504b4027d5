package caddyrobots

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/policy"
	"github.com/caddyrobots/caddy-robots/internal/sites"
	"github.com/caddyrobots/caddy-robots/internal/warnlimit"
)

// ServeHTTP judges the request: /robots.txt, browsers and exempt clients pass
// untouched; bots are checked against the robots.txt versions they may hold,
// their ban state and their crawl rate.
//
// The judging happens in classify, so that the frame under next (and under
// every handler after this one) stays small.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	// {http.robots.tls_fingerprint} on every request over a connection
	// that robots_fingerprint wrapped (fingerprint.go); a field test over
	// plain HTTP.
	offerTLSFingerprint(r)
	o := h.classify(r)
	if h.rules.hasPrefs.Load() && o != robotsTxtOutcome {
		w = h.withPreferences(w, r)
	}
	if o == nil {
		return next.ServeHTTP(w, r)
	}
	if o == robotsTxtOutcome {
		return h.serveRobotsTxt(w, r, next)
	}
	return h.refuse(w, o)
}

// robotsTxtOutcome is what classify returns for a client's /robots.txt.
var robotsTxtOutcome = &outcome{}

// classify returns nil for requests that pass (browsers, exempt clients,
// allowed bots, and every request in log mode), robotsTxtOutcome for
// /robots.txt, and otherwise the outcome of a bot's request to refuse.
func (h *Handler) classify(r *http.Request) *outcome {
	if isRobotsTxtRequest(r) {
		if isSubrequest(r) {
			return nil
		}
		return robotsTxtOutcome
	}
	// A signed agent is verified by its signature (one map lookup for
	// everyone else).
	if _, signed := r.Header["Signature-Input"]; signed && h.sig != nil && !isSubrequest(r) {
		a, signer, invalid := h.signedAgent(r)
		if invalid != nil {
			return h.invalidSignature(r, invalid)
		}
		if a != nil {
			return h.judge(r, a, signer)
		}
	}
	a := h.identifyRequest(r)
	if a == nil {
		// A browser's claim is checked against its own signals, and the
		// trap catches whoever follows it (disguised.go, trap.go).
		return h.undeclared(r)
	}
	// Our own loader only asks for /robots.txt and the targets of its
	// redirects; checked here, after the cheap tests, so browsers never pay
	// for the walk up the context chain.
	if isSubrequest(r) {
		return nil
	}
	return h.judge(r, a, "")
}

// identifyRequest returns the bot the request comes from, or nil for a
// person (or an HTTP library with libraries ignore). A request with several
// User-Agent headers is a bot's if any of them is: a browser string followed
// by "GPTBot" is GPTBot.
//
// A browser whose User-Agent carries a word that the site's own robots.txt
// names as a group is that group's bot (namedBySite).
func (h *Handler) identifyRequest(r *http.Request) *agents.Shared {
	uas := r.Header["User-Agent"]
	if len(uas) == 0 {
		uas = r.Header.Values("User-Agent")
	}
	if len(uas) <= 1 {
		ua := ""
		if len(uas) == 1 {
			ua = uas[0]
		}
		a := h.ident.IdentifyShared(ua)
		if h.judged(a) {
			return a
		}
		if len(a.Candidates) > 0 && !a.Bot {
			return h.namedBySite(r, a)
		}
		return nil
	}
	for _, ua := range uas {
		if a := h.ident.IdentifyShared(ua); h.judged(a) {
			return a
		}
	}
	for _, ua := range uas {
		if a := h.ident.IdentifyShared(ua); len(a.Candidates) > 0 && !a.Bot {
			if n := h.namedBySite(r, a); n != nil {
				return n
			}
		}
	}
	return nil
}

// namedBySite returns the bot a browser's User-Agent names in a group of
// the site's robots.txt (policy.NamedBySite), or nil. The site's versions
// are peeked: a site not loaded yet starts loading and names nobody until
// it is, so a person is never kept waiting.
func (h *Handler) namedBySite(r *http.Request, a *agents.Shared) *agents.Shared {
	if h.rules == nil || h.named == nil {
		return nil
	}
	snap := h.rules.Peek(r, policy.HostOf(r.Host))
	if snap == nil {
		return nil
	}
	tok := policy.NamedBySite(a, snap.Judged)
	if tok == "" {
		return nil
	}
	if n, ok := h.named.Get(tok); ok {
		return n
	}
	n := agents.NewShared(policy.NamedAgent(tok))
	h.named.Put(tok, n)
	return n
}

// judged reports whether a is judged: every bot, except HTTP libraries and
// headless browsers under libraries ignore.
func (h *Handler) judged(a *agents.Shared) bool {
	return a.Bot && (!h.ignoreLibraries || a.Category != agents.CategoryHTTPLibrary)
}

// userAgent is the request's User-Agent. Go's HTTP/1, HTTP/2 and HTTP/3
// servers store header names canonical, so the map is read directly; only a
// request without that key pays for Header.Get's canonicalisation.
func userAgent(r *http.Request) string {
	if v := r.Header["User-Agent"]; len(v) > 0 {
		return v[0]
	}
	return r.Header.Get("User-Agent")
}

// isSubrequest reports whether r is the handler's own virtual GET for
// /robots.txt (or one of its redirects).
func isSubrequest(r *http.Request) bool {
	return sites.IsLoaderRequest(r)
}

// judge decides a bot's request and publishes the outcome (placeholders,
// vars, a metric, log lines). It returns the outcome only when the request
// is to be refused: nil for exempt clients, allowed requests and in log
// mode. signer is the Web Bot Auth agent that signed the request, "" for a
// crawler known by its User-Agent.
//
// The steps are I/O around one pure decision: read the request as the
// client sent it, verify the claim, read the state, take the site's
// versions, assess (policy.Assess), write the state the assessment asks
// for, answer.
func (h *Handler) judge(r *http.Request, a *agents.Shared, signer string) *outcome {
	o := outcome{published: published{agent: a}}
	refused, _ := h.judgeInto(r, &o, signer)
	return refused
}

// judgeInto is judge on o, which holds the agent: it returns what judge
// returns, and whether o was judged (false for an exempt client and for a
// request for /robots.txt), so that a caller can publish more of it
// (judgeUndeclared).
func (h *Handler) judgeInto(r *http.Request, o *outcome, signer string) (refused *outcome, judged bool) {
	cv := caddyValuesOf(r)
	addr := clientAddr{r: r, vars: cv.vars}
	if len(h.exempt) > 0 && h.exempted(addr.get()) {
		h.checkExemptProxy(r, &addr) // proxies.go
		return nil, false
	}
	if !o.read(r, cv.orig) {
		// Asked for /robots.txt, which a rewrite ahead of the handler
		// renamed: still /robots.txt, always served.
		return robotsTxtOutcome, false
	}
	h.decide(r, o, &addr, signer, false)
	return h.publishOutcome(r, &cv, o), true
}

// read takes the request as the client sent it (orig: Caddy's copy of it,
// caddyValues.orig): its target's forms and its host. It reports false for
// a request for /robots.txt.
func (o *outcome) read(r *http.Request, orig original) bool {
	s := sentRequestFrom(r, orig)
	o.target.Parse(s.Method, s.RequestURI, rewriteValues(r)...)
	o.host = policy.HostOf(s.Host)
	return !o.target.IsRobotsTxt()
}

// decide fills o with the decision on a bot's request: everything judge
// does but publishing. With dry set (the admin API's check) it writes no
// state: no strike is recorded and no throttle budget spent; the throttle
// state is read instead, so the check answers what the request would get.
//
// o holds the request as read (outcome.read) and the agent, and nothing
// else yet.
func (h *Handler) decide(r *http.Request, o *outcome, addr *clientAddr, signer string, dry bool) {
	// Only what is set is written: each pointer written through o costs
	// a write barrier while the collector runs.
	o.client.Agent = &o.agent.Agent
	if signer != "" {
		o.client.Signer = signer
	}
	o.client.Verdict = h.verify(r.Context(), &o.client, addr)
	o.who = policy.Identify(&o.client)
	if !o.who.Verified {
		scope, client, now := h.scopeFor(r).key, addr.recorded(), time.Unix(coarseNow.Load(), 0)
		if !h.rotations.Resident(scope, client, o.who.Name, now) && !h.behindUntrustedProxy(r, addr, !dry) {
			o.who.Rotating = h.rotations.Note(scope, addr.get(), client, o.who.Name, now, dry)
		}
	}
	clock := lazyClock{now: h.now}
	sc := lazyScopes{h: h, r: r, host: o.host}
	if h.strikes.Strikes > 0 && (h.banHint == nil || h.banHint.MayHaveBans()) {
		o.ban, _ = h.store.Banned(r.Context(), policy.StrikeIdentity(sc.get().ban, &o.who, addr.get()), clock.get())
	}
	snap := h.rules.Snapshot(r, o.host)
	o.site.Versions, o.site.Unavailable = snap.Judged, snap.Unavailable
	if len(snap.Judged) > 1 {
		o.site.FetchedAt, _ = h.rules.fetched.Get(policy.FetchIdentity(o.host, &o.who, addr.get()))
	}
	var now time.Time
	if policy.NeedsTime(len(snap.Judged), o.ban.Banned) {
		now = clock.get()
	}
	f := o.facts(now)
	o.assessment.Assess(&f, &h.policy)
	h.writeState(r.Context(), o, &sc, addr, &clock, dry)
	if o.assessment.Refused() || h.debug {
		o.client.Addr = addr.get() // for the explanation and the log line
	}
}

// verify verifies the claim of c's agent from the client's address: a
// signed agent is Verified by its signature; a crawler whose operator
// publishes no way to verify it stays Unverified.
func (h *Handler) verify(ctx context.Context, c *policy.Client, addr *clientAddr) agents.Verdict {
	if c.Signer != "" {
		return agents.Verified
	}
	if c.Agent.Profile.Verify == "" {
		return agents.Unverified
	}
	ip := addr.get()
	v := agents.Unverified
	if ip.IsValid() {
		v = h.verifier.Verify(ctx, *c.Agent, ip)
	}
	if v == agents.Unverified && (!ip.IsValid() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast()) {
		h.warnPrivateClaim(c.Agent, ip)
	}
	return v
}

// writeState records what the assessment asks for: a strike, and for a
// request that spends a throttle budget, the store's answer (dry: the
// store's answer for the next request, read without spending).
func (h *Handler) writeState(ctx context.Context, o *outcome, scopes *lazyScopes, addr *clientAddr, clock *lazyClock, dry bool) {
	as := &o.assessment
	if as.Strike && !dry && h.strikes.Strikes > 0 {
		// The ban, if this strike starts one, is seen from the next
		// request on; this one is refused by its rule either way.
		sc := scopes.get()
		id := policy.StrikeIdentity(sc.ban, &o.who, addr.get())
		now := clock.get()
		res, err := h.store.Strike(ctx, id, h.strikes, now, o.strikeInfo(sc.desc))
		if err == nil && res.Banned && res.Strikes >= h.strikes.Strikes {
			h.emitBanned(o, id, res, now) // this strike started the ban
		}
	}
	if !as.Pace {
		return
	}
	sc := scopes.get()
	scope := h.paceScope(sc, o, addr, clock, dry)
	fetch := state.NewFetch(o.target.Method, o.host, o.target.Raw)
	throttle := func(who *policy.Who) (state.ThrottleResult, error) {
		id := policy.ThrottleIdentity(scope, who, addr.get())
		pace := policy.ThrottlePace(who, as.Interval, h.burst, fetch)
		if dry {
			return peekPace(ctx, h.store, id, pace, clock.get())
		}
		return h.store.ThrottlePace(ctx, id, pace, clock.get())
	}
	var res state.ThrottleResult
	var err error
	if own, pooled := policy.OwnPace(&o.who); pooled {
		// An unproven name of a rotating address keeps its own
		// Crawl-delay and also spends the address's pool.
		res, err = throttle(&own)
		if err == nil && res.Allowed {
			res, err = throttle(&o.who)
		}
	} else {
		res, err = throttle(&o.who)
	}
	if err != nil {
		return // fail open
	}
	o.assessment = as.Throttled(res)
	if o.assessment.Retry && !dry {
		countRetry(h.enforce)
		sc.stats.retried(o.agent, o.client.Verdict)
	}
}

// stateScopes are the scopes of the state a request reads and writes: the
// handler's site block for strikes and bans (whatever Host the client
// sends), and for the Crawl-delay budget, the site block too when its
// rules do not depend on the Host (source file or inline), else the
// site's host (source site: each host's robots.txt is its own), but the
// site block for the hosts a client hops to (see paceScope). Log mode
// keeps its own throttle and strike state, so that what it would have done
// never carries over into enforce mode.
type stateScopes struct {
	ban, pace string
	// hopped is the Crawl-delay scope of a host a client hops to: the
	// site block's.
	hopped string
	desc   string        // the site block, for people
	stats  *crawlerStats // the site block's counts
}

func (h *Handler) stateScopes(r *http.Request, host string) stateScopes {
	sc := h.scopeFor(r)
	stats := sc.stats
	if stats == nil {
		stats = h.stats
	}
	out := stateScopes{ban: sc.key, pace: sc.key, hopped: sc.key, desc: sc.desc, stats: stats}
	if !h.enforce {
		out.ban, out.pace, out.hopped = sc.logKey, sc.logKey, sc.logKey
	}
	if h.Source == "site" {
		out.pace = host
		if !h.enforce {
			out.pace = "log|" + host
		}
	}
	return out
}

// hostHops recognises clients that hop Hosts on a source site handler,
// for every handler of the process and across config reloads; see
// paceScope.
var hostHops = state.NewRotations(0)

// paceScope is the scope of the request's Crawl-delay budget (the Site
// of its throttle identity). With source file or inline, the rules are
// the same whatever Host the client sends, and so is the budget: the site
// block's. With source site each host has its own robots.txt and its own
// budget, as RFC 9309 crawlers keep one per host; but a client chooses the
// Host header, and on a catch-all site (or *.example.com) a new made-up
// Host would be a new budget with every request. So a client (its name
// and address, as for a name rotation: state.Rotations) keeps a budget of
// its own on each of the first state.RotationResidents hosts it asks for
// within state.RotationWindow, and every further host shares one budget,
// the site block's, until an hour after its last new host. A verified
// crawler, whose name and address nobody can borrow, keeps one per host.
func (h *Handler) paceScope(sc *stateScopes, o *outcome, addr *clientAddr, clock *lazyClock, dry bool) string {
	if h.Source != "site" || o.who.Verified || sc.pace == sc.hopped {
		return sc.pace
	}
	who, client, now := sc.hopped+"|"+o.who.StateName(), addr.recorded(), clock.get()
	if hostHops.Resident(who, client, o.host, now) || !hostHops.Note(who, addr.get(), client, o.host, now, dry) {
		return sc.pace
	}
	return sc.hopped
}

// lazyScopes works out the request's stateScopes on first use: most
// allowed requests read and write no state.
type lazyScopes struct {
	h    *Handler
	r    *http.Request
	host string
	sc   stateScopes
	done bool
}

func (l *lazyScopes) get() *stateScopes {
	if !l.done {
		l.sc, l.done = l.h.stateScopes(l.r, l.host), true
	}
	return &l.sc
}

// lazyClock reads the clock once, on first use: an allowed request with no
// Crawl-delay, one robots.txt version and no strikes on record never reads
// it (~70 ns on a VM).
type lazyClock struct {
	now func() time.Time
	t   time.Time
}

func (c *lazyClock) get() time.Time {
	if c.t.IsZero() {
		c.t = c.now()
	}
	return c.t
}

// exempted reports whether ip is in one of the networks the handler never
// judges (exempt).
func (h *Handler) exempted(ip netip.Addr) bool {
	for _, p := range h.exempt {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// warnPrivateClaim logs, at most every 30 seconds, that a verifiable
// crawler's claim arrived from an address that cannot be verified.
func (h *Handler) warnPrivateClaim(a *agents.Agent, ip netip.Addr) {
	if ok, n := h.privateClaims.allow(time.Now()); ok {
		h.logger.Warn("robots: crawler claims from a private address cannot be verified; they are judged by \"*\" as well as their own group. If Caddy sits behind a proxy, set trusted_proxies (and trusted_proxies_strict) so the client's address is seen",
			zap.String("agent", a.Name), zap.String("remote_ip", ip.String()), zap.Int("suppressed_since_last_warning", n))
	}
}

// refuse writes the refusal (or returns it as an error for handle_errors).
func (h *Handler) refuse(w http.ResponseWriter, o *outcome) error {
	status := o.status()
	if o.retryAfter > 0 && (status == http.StatusServiceUnavailable || o.action == policy.Ban) {
		w.Header().Set("Retry-After", policy.RetryAfterSeconds(o.retryAfter))
	}
	msg := o.message()
	if h.UseErrorRoutes {
		return caddyhttp.Error(status, fmt.Errorf("robots: %s", strings.TrimSpace(msg)))
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, err := w.Write([]byte(msg))
	if err != nil {
		return caddyhttp.Error(status, fmt.Errorf("robots: writing refusal: %w", err))
	}
	return nil
}

// clientAddr is the client address of a request, read (and parsed) on first
// use: most allowed bot requests never need it.
type clientAddr struct {
	r    *http.Request
	vars map[string]any
	ip   netip.Addr
	read bool
}

func (c *clientAddr) get() netip.Addr {
	if !c.read {
		c.ip, c.read = clientIP(c.vars, c.r), true
	}
	return c.ip
}

// recorded is the client address as Caddy recorded it after
// trusted_proxies (the client_ip var), unparsed; "" when it recorded none.
func (c *clientAddr) recorded() string { return recordedClientIP(c.vars, c.r) }

// recordedClientIP is the client_ip var of r, read from vars (nil: look
// them up); "" when Caddy recorded none.
func recordedClientIP(vars map[string]any, r *http.Request) string {
	if vars == nil {
		vars, _ = r.Context().Value(caddyhttp.VarsCtxKey).(map[string]any)
	}
	s, _ := vars[caddyhttp.ClientIPVarKey].(string)
	return s
}

// clientIP is the client address after trusted_proxies, read from the
// request's vars (nil: look them up).
func clientIP(vars map[string]any, r *http.Request) netip.Addr {
	if s := recordedClientIP(vars, r); s != "" {
		if a, err := netip.ParseAddr(s); err == nil {
			return a.Unmap()
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}

// logLimiter lets a warning through at most once every 30 seconds
// (warnlimit.Limiter).
type logLimiter struct{ warnlimit.Limiter }

func (l *logLimiter) allow(now time.Time) (bool, int) { return l.Allow(now) }

// warnf logs a warning at most once every 30 seconds per handler.
func (h *Handler) warnf(msg string, fields ...zap.Field) {
	if ok, _ := h.warn.allow(time.Now()); ok {
		h.logger.Warn(msg, fields...)
	}
}
