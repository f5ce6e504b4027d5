package caddyrobots

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/enforce/state"
)

// ServeHTTP judges the request: /robots.txt, browsers and exempt clients pass
// untouched; bots are checked against the robots.txt versions they may hold,
// their ban state and their crawl rate.
//
// The judging happens in examine, so that the frame under next (and under
// every handler after this one) stays small.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	o := h.examine(r)
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

// robotsTxtOutcome is what examine returns for a client's /robots.txt.
var robotsTxtOutcome = &outcome{}

// examine returns nil for requests that pass (browsers, exempt clients,
// allowed bots, and every request in log mode), robotsTxtOutcome for
// /robots.txt, and otherwise the outcome of a bot's request to refuse.
func (h *Handler) examine(r *http.Request) *outcome {
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
			return h.judgeBot(r, a, signer)
		}
	}
	a := h.identifyRequest(r)
	if a == nil {
		return nil
	}
	// Our own loader only asks for /robots.txt and the targets of its
	// redirects; checked here, after the cheap tests, so browsers never pay
	// for the walk up the context chain.
	if isSubrequest(r) {
		return nil
	}
	return h.judgeBot(r, a, "")
}

// identifyRequest returns the bot the request comes from, or nil for a
// person (or an HTTP library with libraries ignore). A request with several
// User-Agent headers is a bot's if any of them is: a browser string followed
// by "GPTBot" is GPTBot.
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
		if !h.judged(a) {
			return nil
		}
		return a
	}
	for _, ua := range uas {
		if a := h.ident.IdentifyShared(ua); h.judged(a) {
			return a
		}
	}
	return nil
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
	return r.RemoteAddr == loaderRemoteAddr && r.Context().Value(subrequestKey{}) != nil
}

// action is what the handler does with a bot's request.
type action uint8

// The actions, in the order of actionNames.
const (
	actAllow action = iota
	actBlock
	actThrottle
	actBan
)

// actionValues holds the action names as interface values, boxed once, so
// publishing a decision as a var does not allocate.
var actionValues = func() (v [len(actionNames)]any) {
	for i, name := range actionNames {
		v[i] = name
	}
	return v
}()

func (a action) String() string { return actionNames[a] }

// reason is why a request was refused; reasonNone for an allowed one.
type reason uint8

// The reasons, in the order of reasonNames.
const (
	reasonNone reason = iota
	reasonRule
	reasonSpoofed
	reasonUnavailable
	reasonBan
	reasonRate
	reasonTarget     // a request target that is not origin- or absolute-form: 400
	reasonLength     // a request target longer than maxTargetLength: 414
	reasonUnverified // a claim that could not be verified, refused only by "*": 503
	reasonPreference // an AI usage preference excludes the crawler's purpose: 403
)

var reasonNames = [...]string{"", "rule", "spoofed", "unavailable", "ban", "rate", "target", "length", "unverified", "preference"}

func (r reason) String() string { return reasonNames[r] }

// outcome is the result of judging one bot request.
type outcome struct {
	published
	message string
	// form is the normalised form of the target that a rule refused, when
	// it differs from the target as sent.
	form string
	// noStrike, for a refusal by rule, says why it carried no strike; ""
	// when it did.
	noStrike string
}

// published is the part of an outcome that the {http.robots.*}
// placeholders read. It is kept small (56 bytes) because each judged
// request copies it once, into the placeholder provider.
type published struct {
	action  action
	reason  reason
	verdict agents.Verdict
	// token is the token whose group was selected: an index into
	// agent.Tokens, tokenWildcard or tokenNone.
	token      int32
	agent      *agents.Shared // the Identifier's cached answer: read only
	decision   enforce.Decision
	version    *version
	retryAfter time.Duration
}

// The values of outcome.token that are not an index into the agent's tokens.
const (
	tokenWildcard = -1 // the "*" group
	tokenNone     = -2 // no group applies
)

// tokenValue is the token whose group was selected ("*" for the wildcard
// group, "" when none applies) as an interface value, without allocating:
// the agent's tokens come boxed from the Identifier's cache.
func (o *published) tokenValue() any {
	switch o.token {
	case tokenWildcard:
		return "*"
	case tokenNone:
		return ""
	}
	return o.agent.TokenValues[o.token]
}

// tokenName is tokenValue as a string.
func (o *published) tokenName() string {
	s, _ := o.tokenValue().(string)
	return s
}

// placeholder resolves the {http.robots.*} placeholders of one request. It
// has a value receiver so that the method value o.placeholder carries its
// own copy: one allocation per judged request.
func (o published) placeholder(key string) (any, bool) {
	name, ok := strings.CutPrefix(key, "http.robots.")
	if !ok {
		return nil, false
	}
	switch name {
	case "agent":
		return o.agent.Name, true
	case "category":
		return string(o.agent.Category), true
	case "purpose":
		return o.agent.PurposeValue, true
	case "verdict":
		return o.verdict.String(), true
	case "token":
		return o.tokenValue(), true
	case "decision":
		return actionValues[o.action], true
	case "reason":
		return o.reason.String(), true
	case "rule":
		if o.decision.Rule != nil {
			return o.decision.Rule.String(), true
		}
		return "", true
	case "group":
		if o.decision.Group != nil {
			return o.decision.Group.String(), true
		}
		return "", true
	case "version":
		if o.version != nil {
			return o.version.id, true
		}
		return "", true
	case "retry_after":
		if o.retryAfter > 0 {
			return retryAfterSeconds(o.retryAfter), true
		}
		return "", true
	}
	return nil, false
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

// judgeBot judges a bot's request and publishes the outcome as placeholders,
// vars, a metric and a debug line. It returns the outcome only when the
// request is to be refused: nil for exempt clients, allowed requests and in
// log mode. signer is the Web Bot Auth agent that signed the request, ""
// for a crawler known by its User-Agent.
func (h *Handler) judgeBot(r *http.Request, a *agents.Shared, signer string) *outcome {
	vars, _ := r.Context().Value(caddyhttp.VarsCtxKey).(map[string]any)
	addr := clientAddr{r: r, vars: vars}
	if len(h.exempt) > 0 && h.exempted(addr.get()) {
		return nil
	}
	host := hostOf(r)
	forms := formsOf(r)
	o := outcome{published: published{agent: a}}
	h.judge(&o, r, &a.Agent, &addr, host, &forms, false, signer)
	return h.publishOutcome(r, vars, &o, forms.raw)
}

// publishOutcome publishes a judged request's outcome (placeholders, vars,
// the decision metric, the INFO line of a refusal, the debug line) and
// returns it when the request is to be refused.
func (h *Handler) publishOutcome(r *http.Request, vars map[string]any, o *outcome, target string) *outcome {
	ctx := r.Context()
	a := o.agent
	h.stats.seen(a, o.action)
	if repl, ok := ctx.Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		// One lazy provider instead of ten values: the strings are only
		// built when a log line or handle_errors asks for them.
		repl.Map(o.published.placeholder)
	}
	if vars != nil {
		// What caddyhttp.SetVar does, without looking the map up three times.
		// The values come boxed from the Identifier's cache: no allocation.
		vars["robots_agent"] = a.NameValue
		vars["robots_decision"] = actionValues[o.action]
		vars["robots_token"] = o.tokenValue()
	}

	countDecision(o.action, o.reason, a.Category, a.Purpose, !h.enforce)
	if o.action != actAllow {
		h.logRefusal(r, o, &a.Agent, target)
	}
	if h.debug {
		h.logDecision(o, &a.Agent, target)
	}
	if o.action == actAllow || !h.enforce {
		return nil
	}
	refused := *o
	return &refused
}

// logDecision writes the debug line of one decision.
func (h *Handler) logDecision(o *outcome, a *agents.Agent, target string) {
	if c := h.logger.Check(zapcore.DebugLevel, "robots decision"); c != nil {
		fields := []zap.Field{
			zap.String("action", o.action.String()), zap.String("reason", o.reason.String()), zap.String("agent", a.Name),
			zap.String("purpose", string(a.Purpose)),
			zap.String("verdict", o.verdict.String()), zap.String("token", o.tokenName()), zap.String("target", target),
			zap.String("mode", h.Mode),
		}
		if o.decision.Rule != nil {
			fields = append(fields, zap.String("rule", o.decision.Rule.String()))
		}
		if o.form != "" {
			fields = append(fields, zap.String("normalised_target", o.form))
		}
		if o.noStrike != "" {
			fields = append(fields, zap.String("no_strike", o.noStrike))
		}
		if o.version != nil {
			fields = append(fields, zap.String("version", o.version.id))
		}
		c.Write(fields...)
	}
}

// judge computes the outcome for a bot request into o. It does not write
// anything to the client.
//
// With dry set (the admin API's check) nothing is counted: no strike, no
// throttle budget spent; a throttle is reported as the interval that would
// apply, in o.retryAfter with action allow.
func (h *Handler) judge(o *outcome, r *http.Request, a *agents.Agent, addr *clientAddr, host string, t *targetForms, dry bool, signer string) {
	o.action, o.token = actAllow, tokenNone
	// The clock (~70 ns on a VM) and the identities are read only when a
	// decision needs them: an allowed request with no Crawl-delay, one
	// robots.txt version and no strikes on record needs neither.
	var nowT time.Time
	now := func() time.Time {
		if nowT.IsZero() {
			nowT = h.now()
		}
		return nowT
	}
	if t.bad {
		o.action, o.reason = actBlock, reasonTarget
		o.message = "Refused: the request target is neither a path (/...) nor an absolute URL with a host (http://host/...).\n"
		return
	}
	if len(t.raw) > maxTargetLength {
		o.action, o.reason = actBlock, reasonLength
		o.message = fmt.Sprintf("Refused: request targets longer than %d bytes are not served to crawlers.\n", maxTargetLength)
		return
	}
	tokens := a.Tokens
	wildcard := !a.Profile.IgnoresWildcard

	// claim is set for a claim of a verifiable crawler that could not be
	// verified (private address, DNS failure or timeout, stale list): it
	// gets nothing more lenient than "*" gives.
	claim := false
	if signer != "" {
		o.verdict = agents.Verified
	} else if a.Profile.Verify != "" {
		ip := addr.get()
		if ip.IsValid() {
			o.verdict = h.verifier.Verify(r.Context(), *a, ip)
		}
		if o.verdict == agents.Unverified {
			claim = true
			if !ip.IsValid() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
				h.warnPrivateClaim(a, ip)
			}
		}
	}
	if o.verdict == agents.Spoofed {
		if h.spoofedBlock {
			o.action, o.reason = actBlock, reasonSpoofed
			o.message = spoofedText(a, addr.get())
			return
		}
		tokens, wildcard = nil, true
	}
	name := crawlerName(a.Name, tokens)
	if signer != "" {
		// A signing agent's budget and bans are its own, apart from any
		// crawler that shares its token.
		name = "sig:" + signer
	}
	verified := o.verdict == agents.Verified
	site := host
	if !h.enforce {
		// Log mode keeps its own throttle and strike state, so that what it
		// would have done never carries over into enforce mode.
		site = "log|" + host
	}

	if h.strikes.Strikes > 0 && (h.banHint == nil || h.banHint.MayHaveBans()) {
		if ban, err := h.store.Banned(r.Context(), strikeIdentity(site, name, verified, addr.get()), now()); err == nil && ban.Banned {
			o.action, o.reason = actBan, reasonBan
			o.retryAfter = ban.Until.Sub(now())
			o.message = banText(name, ban.Until)
			return
		}
	}

	snap := h.rules.rulesFor(r, host)
	if len(snap.versions) == 0 {
		if snap.unavailable && h.unavailableDisallow {
			o.action, o.reason = actBlock, reasonUnavailable
			o.message = "Refused: this site's /robots.txt cannot be read right now, and RFC 9309 §2.3.1.4 tells crawlers to assume a complete disallow. Please retry later.\n"
			o.retryAfter = retryAfterError
		}
		return
	}

	// The crawler may still hold any version replaced within its grace
	// window, unless we saw it fetch /robots.txt after that version was
	// replaced.
	grace := h.grace
	if ttl := a.Profile.RobotsCacheTTL; grace > 0 && ttl > grace && !claim {
		grace = min(ttl, MaxGrace)
	}
	var fetchedAt time.Time
	if len(snap.versions) > 1 {
		fetchedAt, _ = h.rules.fetched.Get(crawlerIdentity(host, name, verified, addr.get()))
	}
	forms := t.all()
	refusedByAll, starRefusedByAll := true, claim
	starJudged := true
	interval := time.Duration(math.MaxInt64)
	var rateGroup *enforce.Group // the group the interval comes from
	var g0 *enforce.Group        // the current version's group
	for i, v := range snap.versions {
		if i > 0 && (now().Sub(v.until) > grace || !v.until.After(fetchedAt)) {
			break
		}
		g, ti := v.robots.SelectIndex(tokens, wildcard)
		d, form := decideAll(g, forms)
		if i == 0 {
			g0 = g
			o.decision, o.version = d, v
			if !d.Allowed && form != t.raw {
				o.form = form
			}
			switch {
			case ti >= 0:
				// tokens is a.Tokens here: a spoofed claim is judged
				// with no tokens, so ti < 0.
				o.token = int32(ti)
				starJudged = false
			case g != nil:
				o.token = tokenWildcard
			}
		}
		if d.Allowed {
			refusedByAll = false
		}
		iv, ig := g.Interval(), g
		if claim {
			// An unverified claim is also judged by "*", and keeps the
			// stricter of the two rates.
			gs, _ := v.robots.SelectIndex(nil, true)
			if gs != g {
				if ds, _ := decideAll(gs, forms); ds.Allowed {
					starRefusedByAll = false
				}
				if siv := gs.Interval(); siv > iv {
					iv, ig = siv, gs
				}
			} else if d.Allowed {
				starRefusedByAll = false
			}
		}
		// The most lenient version the crawler may hold sets the rate.
		if iv < interval {
			interval, rateGroup = iv, ig
		}
	}
	if refusedByAll {
		o.action, o.reason = actBlock, reasonRule
		// A 403 protects the site, so it follows the strictest reading; a
		// strike punishes the crawler, so it needs a violation under every
		// reading and every version served within the last 24 hours.
		o.noStrike = strikeExcuse(snap.versions, tokens, wildcard, forms, now())
		o.message = refusalText(o, name)
		if h.strikes.Strikes > 0 && !dry && o.noStrike == "" {
			// The ban, if this strike starts one, is seen from the next
			// request on; this one is refused by its rule either way.
			_, _ = h.store.Strike(r.Context(), strikeIdentity(site, name, verified, addr.get()), h.strikes, now())
		}
		return
	}
	if h.prefsEnforce && o.version.robots.HasPreferences() {
		if ref, ok := preferenceRefusal(o.version.robots, g0, tokens, t.raw, string(a.Purpose)); ok {
			o.action, o.reason = actBlock, reasonPreference
			o.message = preferenceText(name, string(a.Purpose), ref, o)
			return
		}
	}
	if starRefusedByAll {
		// Only "*" refuses: a real crawler whose verification is pending
		// comes back later and is never struck.
		o.action, o.reason = actBlock, reasonUnverified
		o.retryAfter = retryAfterError
		o.message = unverifiedText(a, addr.get())
		return
	}

	if interval > 0 && interval != time.Duration(math.MaxInt64) && (claim || h.throttles(a)) {
		if dry {
			o.retryAfter = interval
			return
		}
		id := throttleIdentity(site, name, verified, starJudged, addr.get())
		pace := state.Pace{Interval: interval, Burst: h.burst, Fetch: state.NewFetch(r.Method, host, t.raw)}
		res, err := h.store.ThrottlePace(r.Context(), id, pace, now())
		if err == nil && !res.Allowed {
			o.action, o.reason, o.retryAfter = actThrottle, reasonRate, res.RetryAfter
			o.message = throttleText(host, name, interval, rateGroup, res.RetryAfter)
			if res.Retry {
				countRetry(h.enforce)
				h.stats.retried(a)
			}
		}
	}
}

// strikeWindow is how far back a robots.txt version still excuses a
// request: RFC 9309 §2.4 lets a crawler keep its copy for 24 hours, and a
// crawler running several processes updates them one by one.
const strikeWindow = 24 * time.Hour

// strikeExcuse says why a refused request is no strike, or "" when it is
// one: it must be disallowed by every version served within strikeWindow
// (whether or not the crawler fetched a newer one since), and under every
// reading real crawlers use (RFC 9309, the 1994 standard, Google's).
func strikeExcuse(versions []*version, tokens []string, wildcard bool, forms []string, now time.Time) string {
	for i, v := range versions {
		if i > 0 && now.Sub(v.until) > strikeWindow {
			break
		}
		g, _ := v.robots.SelectIndex(tokens, wildcard)
		d, form := decideAll(g, forms)
		if d.Allowed {
			if i == 0 {
				return ""
			}
			return fmt.Sprintf("robots.txt version %s, served until %s, allows this path, and a crawler may hold it for 24 hours",
				v.id, v.until.UTC().Format(time.RFC3339))
		}
		if rd := v.robots.Readings(tokens, wildcard, form); !rd.Unambiguous {
			return rd.Why
		}
	}
	return ""
}

// decideAll decides every form of a target against g: the target is allowed
// only if every form is. It returns the decision of the first refused form
// (or of the first form when all are allowed) and that form.
func decideAll(g *enforce.Group, forms []string) (enforce.Decision, string) {
	d := g.Decide(forms[0])
	if !d.Allowed {
		return d, forms[0]
	}
	for _, f := range forms[1:] {
		if df := g.Decide(f); !df.Allowed {
			return df, f
		}
	}
	return d, forms[0]
}

// unverifiedText explains the 503 for a claim that could not be verified
// and that only the "*" group refuses.
func unverifiedText(a *agents.Agent, ip netip.Addr) string {
	return fmt.Sprintf("Refused for now: this request claims to be %s, which could not be verified from %s yet, and the \"*\" group of /robots.txt disallows this path. Please retry later.\n",
		a.Name, ip)
}

// warnPrivateClaim logs, at most every 30 seconds, that a verifiable
// crawler's claim arrived from an address that cannot be verified.
func (h *Handler) warnPrivateClaim(a *agents.Agent, ip netip.Addr) {
	if ok, n := h.privateClaims.allow(time.Now()); ok {
		h.logger.Warn("robots: crawler claims from a private address cannot be verified; they are judged by \"*\" as well as their own group. If Caddy sits behind a proxy, set trusted_proxies (and trusted_proxies_strict) so the client's address is seen",
			zap.String("agent", a.Name), zap.String("remote_ip", ip.String()), zap.Int("suppressed_since_last_warning", n))
	}
}

// spoofedText explains a refusal of a crawler whose address is not its
// operator's.
func spoofedText(a *agents.Agent, ip netip.Addr) string {
	return fmt.Sprintf("Refused: this request claims to be %s, but %s is not one of %s's addresses.\n",
		a.Name, ip, operatorOf(*a))
}

// banText explains a refusal by ban.
func banText(name string, until time.Time) string {
	return fmt.Sprintf("Refused: %s is banned until %s after repeatedly requesting paths that /robots.txt disallows.\n",
		name, until.UTC().Format(time.RFC3339))
}

// throttleText explains a throttle: the interval, where it comes from, and
// when to come back.
func throttleText(host, name string, interval time.Duration, g *enforce.Group, retryAfter time.Duration) string {
	return fmt.Sprintf("Slow down: /robots.txt of %s asks %s to wait %s between requests (%s).\nCome back in %s s (Retry-After).\n",
		hostLabel(host), name, interval, rateSource(g), retryAfterSeconds(retryAfter))
}

// throttles says whether Crawl-delay / Request-rate is enforced on a.
func (h *Handler) throttles(a *agents.Agent) bool {
	switch h.crawlDelay {
	case crawlDelayOff:
		return false
	case crawlDelayAll:
		return true
	}
	return a.Profile.CrawlDelay != agents.SupportNo || a.Profile.RequestRate == agents.SupportYes
}

// refuse writes the refusal (or returns it as an error for handle_errors).
func (h *Handler) refuse(w http.ResponseWriter, o *outcome) error {
	status := http.StatusForbidden
	switch {
	case o.action == actThrottle || o.reason == reasonUnavailable || o.reason == reasonUnverified:
		status = http.StatusServiceUnavailable
	case o.reason == reasonTarget:
		status = http.StatusBadRequest
	case o.reason == reasonLength:
		status = http.StatusRequestURITooLong
	}
	if o.retryAfter > 0 && (status == http.StatusServiceUnavailable || o.action == actBan) {
		w.Header().Set("Retry-After", retryAfterSeconds(o.retryAfter))
	}
	if h.UseErrorRoutes {
		return caddyhttp.Error(status, fmt.Errorf("robots: %s", strings.TrimSpace(o.message)))
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, err := w.Write([]byte(o.message))
	if err != nil {
		return caddyhttp.Error(status, fmt.Errorf("robots: writing refusal: %w", err))
	}
	return nil
}

// refusalText explains a refusal by rule: the group, the rule, its line and
// the robots.txt version.
func refusalText(o *outcome, name string) string {
	var b strings.Builder
	b.WriteString("Refused: /robots.txt disallows this path for ")
	b.WriteString(name)
	b.WriteString(".\n")
	if g := o.decision.Group; g != nil {
		b.WriteString("Group: ")
		b.WriteString(g.String())
		b.WriteString("\n")
	}
	if rule := o.decision.Rule; rule != nil {
		b.WriteString("Rule: ")
		b.WriteString(rule.String())
		b.WriteString("\n")
	}
	if o.form != "" {
		b.WriteString("Judged as: ")
		b.WriteString(o.form)
		b.WriteString(" (the path the server acts on)\n")
	}
	if o.noStrike != "" {
		b.WriteString("No strike: ")
		b.WriteString(o.noStrike)
		b.WriteString(".\n")
	}
	if o.version != nil {
		b.WriteString("Version: ")
		b.WriteString(o.version.id)
		b.WriteString("\n")
	}
	b.WriteString("See /robots.txt for the rules of this site.\n")
	return b.String()
}

// crawlerName is the name a crawler's budget, strikes and robots.txt
// fetches are kept under: its most specific token, else its name.
func crawlerName(name string, tokens []string) string {
	if len(tokens) > 0 {
		return tokens[0]
	}
	return name
}

// crawlerIdentity is the key under which a crawler's fetches of
// /robots.txt are remembered for the grace rule. judge and serveRobotsTxt
// must agree on it, or the grace rule never sees a fetch.
func crawlerIdentity(host, name string, verified bool, ip netip.Addr) state.Identity {
	id := state.NewIdentity(name, verified, ip)
	id.Site = host
	return id
}

// wildcardName is the identity name of every bot judged by the "*" group:
// such a bot chooses its product token freely, so its budget, strikes and
// bans are its address's, whatever token it sends next.
const wildcardName = "*"

// throttleIdentity is whose Crawl-delay budget a request spends: a verified
// crawler's one budget across its addresses; an unverified crawler's budget
// per token and address; for a bot judged by "*", its address's.
func throttleIdentity(site, name string, verified, starJudged bool, ip netip.Addr) state.Identity {
	if starJudged && !verified {
		name = wildcardName
	}
	id := state.NewIdentity(name, verified, ip)
	id.Site = site
	return id
}

// strikeIdentity is who collects strikes and bans: an unverified bot's
// address (IPv6 /64), so that a banned address stays banned whatever token
// it claims next; a verified crawler per network that earned the strikes
// (IPv4 /24, IPv6 /48), so that a forged X-Forwarded-For behind a
// non-strict proxy cannot ban the real crawler everywhere.
func strikeIdentity(site, name string, verified bool, ip netip.Addr) state.Identity {
	if !verified {
		id := state.NewIdentity(wildcardName, false, ip)
		id.Site = site
		return id
	}
	id := state.Identity{Site: site, Name: name, Verified: true}
	if ip.IsValid() {
		ip = ip.Unmap().WithZone("")
		bits := 24
		if ip.Is6() {
			bits = 48
		}
		id.Prefix, _ = ip.Prefix(bits)
	}
	return id
}

// serveRobotsTxt serves /robots.txt to everyone, even banned bots. For
// source file and inline it answers with the rules it enforces (unless
// robots_txt pass), so that crawlers read exactly what is enforced. For
// source site the site answers; when a client's copy differs from ours, the
// loader looks again. A bot's fetch is remembered so it stops getting grace
// for versions older than the one it just read.
func (h *Handler) serveRobotsTxt(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if a := h.identifyRequest(r); a != nil {
		ip := clientIP(nil, r)
		verified := false
		if a.Profile.Verify != "" && ip.IsValid() {
			verified = h.verifier.Verify(r.Context(), a.Agent, ip) == agents.Verified
		}
		h.rules.fetched.Put(crawlerIdentity(hostOf(r), crawlerName(a.Name, a.Tokens), verified, ip), h.now())
	}
	if h.serveEnforced {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return h.writeEnforced(w, r)
		}
		return next.ServeHTTP(w, r)
	}
	if r.Method != http.MethodGet || r.Header.Get("Range") != "" {
		return next.ServeHTTP(w, r)
	}
	hw := &hashWriter{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}, h: sha256.New(), limit: enforce.MaxSize + 1}
	err := next.ServeHTTP(hw, r)
	if err != nil || hw.status != http.StatusOK || !hw.identity {
		return err
	}
	id := hex.EncodeToString(hw.h.Sum(nil)[:6])
	if cur := h.rules.current(r); cur == nil || cur.id != id {
		if h.Source == "site" {
			h.rules.prompt(r)
		} else {
			h.warnf("robots: the site's /robots.txt differs from the rules enforced (robots_txt pass): crawlers that follow it may be refused",
				zap.String("source", h.Source), zap.String("served_version", id))
		}
	}
	return nil
}

// writeEnforced answers /robots.txt with the text of the version enforced.
func (h *Handler) writeEnforced(w http.ResponseWriter, r *http.Request) error {
	v := h.rules.current(r)
	hdr := w.Header()
	hdr.Set("Content-Type", "text/plain; charset=utf-8")
	hdr.Set("X-Content-Type-Options", "nosniff")
	if v == nil {
		// Nothing could be read yet: what RFC 9309 §2.3.1.4 calls
		// unreachable, so crawlers come back.
		hdr.Set("Retry-After", retryAfterSeconds(retryAfterError))
		hdr.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusServiceUnavailable)
		return nil
	}
	body := v.pv.body
	if len(body) > enforce.MaxSize {
		body = body[:enforce.MaxSize]
	}
	hdr.Set("ETag", `"`+v.id+`"`)
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, `"`+v.id+`"`) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := w.Write(body); err != nil {
		return caddyhttp.Error(http.StatusInternalServerError, fmt.Errorf("robots: writing robots.txt: %w", err))
	}
	return nil
}

// hashWriter hashes the first limit bytes of a /robots.txt response body
// while passing it through unchanged; it keeps no copy.
type hashWriter struct {
	*caddyhttp.ResponseWriterWrapper
	h        hash.Hash
	limit    int
	n        int
	status   int
	identity bool
}

func (t *hashWriter) WriteHeader(code int) {
	if t.status == 0 && code >= 200 {
		t.status = code
		ce := t.Header().Get("Content-Encoding")
		t.identity = ce == "" || strings.EqualFold(ce, "identity")
	}
	t.ResponseWriterWrapper.WriteHeader(code)
}

func (t *hashWriter) Write(p []byte) (int, error) {
	if t.status == 0 {
		t.WriteHeader(http.StatusOK)
	}
	if room := t.limit - t.n; room > 0 {
		q := p[:min(len(p), room)]
		t.h.Write(q)
		t.n += len(q)
	}
	return t.ResponseWriterWrapper.Write(p)
}

// ReadFrom keeps io.Copy going through Write, so the hash sees the body.
func (t *hashWriter) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(writerOnly{t}, r)
}

// writerOnly hides every method but Write, so io.Copy cannot bypass it.
type writerOnly struct{ io.Writer }

// maxTargetLength is the longest request target judged for a bot; longer
// ones are refused with 414. The engine's decision time is bounded for
// targets up to this length (see enforce.MaxTargetLength).
const maxTargetLength = enforce.MaxTargetLength

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

// clientIP is the client address after trusted_proxies, read from the
// request's vars (nil: look them up).
func clientIP(vars map[string]any, r *http.Request) netip.Addr {
	if vars == nil {
		vars, _ = r.Context().Value(caddyhttp.VarsCtxKey).(map[string]any)
	}
	if s, ok := vars[caddyhttp.ClientIPVarKey].(string); ok && s != "" {
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

// hostOf is the request's host name, lower-cased, without port or a
// trailing dot.
func hostOf(r *http.Request) string { return hostname(r.Host) }

// hostname returns the host of a host[:port] string, lower-cased, without
// port, brackets or a trailing dot.
func hostname(hostport string) string {
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

func hostLabel(host string) string {
	if host == "" {
		return "this site"
	}
	return host
}

// rateSource names the records a throttle comes from.
func rateSource(g *enforce.Group) string {
	if g == nil {
		return "robots.txt"
	}
	var parts []string
	if g.CrawlDelay > 0 {
		parts = append(parts, "Crawl-delay: "+strconv.FormatFloat(g.CrawlDelay.Seconds(), 'f', -1, 64))
	}
	if r := g.RequestRate; r.Requests > 0 {
		parts = append(parts, fmt.Sprintf("Request-rate: %d/%s", r.Requests, r.Per))
	}
	return strings.Join(parts, ", ") + " in " + g.String()
}

func operatorOf(a agents.Agent) string {
	if a.Operator != "" {
		return a.Operator
	}
	return a.Name
}

// retryAfterSeconds formats a wait as whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) string {
	s := int64(math.Ceil(d.Seconds()))
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}

// logLimiter lets a warning through at most once every 30 seconds.
type logLimiter struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether a warning may be logged at now, and how many were
// held back since the last one that was.
func (l *logLimiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.last) < 30*time.Second {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return true, n
}

// warnf logs a warning at most once every 30 seconds per handler.
func (h *Handler) warnf(msg string, fields ...zap.Field) {
	if ok, _ := h.warn.allow(time.Now()); ok {
		h.logger.Warn(msg, fields...)
	}
}
