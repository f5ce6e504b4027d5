package caddyrobots

import (
	"bytes"
	"fmt"
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
	target := requestTarget(r)
	if isRobotsTxt(target) {
		if isSubrequest(r) {
			return nil
		}
		return robotsTxtOutcome
	}
	a := h.ident.IdentifyShared(userAgent(r))
	if !a.Bot || (h.Libraries == "ignore" && a.Category == agents.CategoryHTTPLibrary) {
		return nil
	}
	// Our own loader only asks for /robots.txt and the targets of its
	// redirects; checked here, after the cheap tests, so browsers never pay
	// for the walk up the context chain.
	if isSubrequest(r) {
		return nil
	}
	return h.judgeBot(r, a, target)
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
)

var reasonNames = [...]string{"", "rule", "spoofed", "unavailable", "ban", "rate"}

func (r reason) String() string { return reasonNames[r] }

// outcome is the result of judging one bot request. It is kept small (72
// bytes) because each judged request copies it once, into the placeholder
// provider.
type outcome struct {
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
	message    string
}

// The values of outcome.token that are not an index into the agent's tokens.
const (
	tokenWildcard = -1 // the "*" group
	tokenNone     = -2 // no group applies
)

// tokenValue is the token whose group was selected ("*" for the wildcard
// group, "" when none applies) as an interface value, without allocating:
// the agent's tokens come boxed from the Identifier's cache.
func (o *outcome) tokenValue() any {
	switch o.token {
	case tokenWildcard:
		return "*"
	case tokenNone:
		return ""
	}
	return o.agent.TokenValues[o.token]
}

// tokenName is tokenValue as a string.
func (o *outcome) tokenName() string {
	s, _ := o.tokenValue().(string)
	return s
}

// placeholder resolves the {http.robots.*} placeholders of one request. It
// has a value receiver so that the method value o.placeholder carries its
// own copy of the outcome: one allocation per judged request.
func (o outcome) placeholder(key string) (any, bool) {
	name, ok := strings.CutPrefix(key, "http.robots.")
	if !ok {
		return nil, false
	}
	switch name {
	case "agent":
		return o.agent.Name, true
	case "category":
		return string(o.agent.Category), true
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

// judgeBot judges a bot's request and publishes the outcome as placeholders,
// vars, a metric and a debug line. It returns the outcome only when the
// request is to be refused: nil for exempt clients, allowed requests and in
// log mode.
func (h *Handler) judgeBot(r *http.Request, a *agents.Shared, target string) *outcome {
	ctx := r.Context()
	vars, _ := ctx.Value(caddyhttp.VarsCtxKey).(map[string]any)
	addr := clientAddr{r: r, vars: vars}
	for _, p := range h.exempt {
		if p.Contains(addr.get()) {
			return nil
		}
	}
	host := hostOf(r)
	o := outcome{agent: a}
	h.judge(&o, r, &a.Agent, &addr, host, target)

	if repl, ok := ctx.Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		// One lazy provider instead of ten values: the strings are only
		// built when a log line or handle_errors asks for them.
		repl.Map(o.placeholder)
	}
	if vars != nil {
		// What caddyhttp.SetVar does, without looking the map up three times.
		// The values come boxed from the Identifier's cache: no allocation.
		vars["robots_agent"] = a.NameValue
		vars["robots_decision"] = actionValues[o.action]
		vars["robots_token"] = o.tokenValue()
	}

	countDecision(o.action, a.Category, !h.enforce)
	if h.debug {
		h.logDecision(&o, &a.Agent, target)
	}
	if o.action == actAllow || !h.enforce {
		return nil
	}
	refused := o
	return &refused
}

// logDecision writes the debug line of one decision.
func (h *Handler) logDecision(o *outcome, a *agents.Agent, target string) {
	if c := h.logger.Check(zapcore.DebugLevel, "robots decision"); c != nil {
		fields := []zap.Field{
			zap.String("action", o.action.String()), zap.String("reason", o.reason.String()), zap.String("agent", a.Name),
			zap.String("verdict", o.verdict.String()), zap.String("token", o.tokenName()), zap.String("target", target),
			zap.String("mode", h.Mode),
		}
		if o.decision.Rule != nil {
			fields = append(fields, zap.String("rule", o.decision.Rule.String()))
		}
		if o.version != nil {
			fields = append(fields, zap.String("version", o.version.id))
		}
		c.Write(fields...)
	}
}

// judge computes the outcome for a bot request into o. It does not write
// anything to the client.
func (h *Handler) judge(o *outcome, r *http.Request, a *agents.Agent, addr *clientAddr, host, target string) {
	o.action, o.token = actAllow, tokenNone
	// The clock (~70 ns on a VM) and the identity are read only when a
	// decision needs them: an allowed request with no Crawl-delay, one
	// robots.txt version and no strikes on record needs neither.
	var nowT time.Time
	now := func() time.Time {
		if nowT.IsZero() {
			nowT = h.now()
		}
		return nowT
	}
	tokens := a.Tokens
	wildcard := !a.Profile.IgnoresWildcard

	if a.Profile.Verify != "" {
		if ip := addr.get(); ip.IsValid() {
			o.verdict = h.verifier.Verify(r.Context(), *a, ip)
		}
	}
	if o.verdict == agents.Spoofed {
		if h.Spoofed == "block" {
			o.action, o.reason = actBlock, reasonSpoofed
			o.message = spoofedText(a, addr.get())
			return
		}
		tokens, wildcard = nil, true
	}
	name := crawlerName(a.Name, tokens)
	// The identity (throttle, strikes, who fetched robots.txt) is built
	// only when something needs it.
	var id state.Identity
	haveID := false
	identity := func() state.Identity {
		if !haveID {
			id, haveID = crawlerIdentity(host, name, o.verdict == agents.Verified, addr.get()), true
		}
		return id
	}

	if h.strikes.Strikes > 0 && (h.banHint == nil || h.banHint.MayHaveBans()) {
		if ban, err := h.store.Banned(r.Context(), identity(), now()); err == nil && ban.Banned {
			o.action, o.reason = actBan, reasonBan
			o.retryAfter = ban.Until.Sub(now())
			o.message = banText(name, ban.Until)
			return
		}
	}

	snap := h.rules.rulesFor(r, host)
	if len(snap.versions) == 0 {
		if snap.unavailable && h.Unavailable == "disallow" {
			o.action, o.reason = actBlock, reasonUnavailable
			o.message = "Refused: this site's /robots.txt cannot be read right now, and RFC 9309 §2.3.1.4 tells crawlers to assume a complete disallow. Please retry later.\n"
			o.retryAfter = retryAfterError
		}
		return
	}

	// The crawler may still hold any version replaced within its grace
	// window, unless we saw it fetch /robots.txt after that version was
	// replaced.
	grace := time.Duration(*h.Grace)
	if ttl := a.Profile.RobotsCacheTTL; grace > 0 && ttl > grace {
		grace = min(ttl, MaxGrace)
	}
	var fetchedAt time.Time
	if len(snap.versions) > 1 {
		fetchedAt, _ = h.rules.fetched.Get(identity())
	}
	refusedByAll := true
	interval := time.Duration(math.MaxInt64)
	for i, v := range snap.versions {
		if i > 0 && (now().Sub(v.until) > grace || !v.until.After(fetchedAt)) {
			break
		}
		g, ti := v.robots.SelectIndex(tokens, wildcard)
		d := g.Decide(target)
		if i == 0 {
			o.decision, o.version = d, v
			switch {
			case ti >= 0:
				// tokens is a.Tokens here: a spoofed claim is judged
				// with no tokens, so ti < 0.
				o.token = int32(ti)
			case g != nil:
				o.token = tokenWildcard
			}
		}
		if d.Allowed {
			refusedByAll = false
		}
		if iv := g.Interval(); iv < interval {
			interval = iv
		}
	}
	if refusedByAll {
		o.action, o.reason = actBlock, reasonRule
		o.message = refusalText(o, name)
		if h.strikes.Strikes > 0 {
			// The ban, if this strike starts one, is seen from the next
			// request on; this one is refused by its rule either way.
			_, _ = h.store.Strike(r.Context(), identity(), h.strikes, now())
		}
		return
	}

	if interval > 0 && interval != time.Duration(math.MaxInt64) && h.throttles(a) {
		res, err := h.store.Throttle(r.Context(), identity(), interval, now())
		if err == nil && !res.Allowed {
			o.action, o.reason, o.retryAfter = actThrottle, reasonRate, res.RetryAfter
			o.message = throttleText(host, name, interval, o.decision.Group, res.RetryAfter)
		}
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
	switch h.CrawlDelay {
	case "off":
		return false
	case "all":
		return true
	}
	return a.Profile.CrawlDelay != agents.SupportNo || a.Profile.RequestRate == agents.SupportYes
}

// refuse writes the refusal (or returns it as an error for handle_errors).
func (h *Handler) refuse(w http.ResponseWriter, o *outcome) error {
	status := http.StatusForbidden
	if o.action == actThrottle || o.reason == reasonUnavailable {
		status = http.StatusServiceUnavailable
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

// crawlerIdentity is the state key of a crawler on a host. judge and
// serveRobotsTxt must agree on it, or the grace rule never sees a fetch.
func crawlerIdentity(host, name string, verified bool, ip netip.Addr) state.Identity {
	id := state.NewIdentity(name, verified, ip)
	id.Site = host
	return id
}

// serveRobotsTxt passes /robots.txt to everyone. For source site, a 200
// response refreshes the copy, and a bot's fetch is remembered so it stops
// getting grace for versions older than the one it just read.
func (h *Handler) serveRobotsTxt(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	a := &h.ident.IdentifyShared(userAgent(r)).Agent
	host := hostOf(r)
	if a.Bot {
		ip := clientIP(nil, r)
		verified := false
		if a.Profile.Verify != "" && ip.IsValid() {
			verified = h.verifier.Verify(r.Context(), *a, ip) == agents.Verified
		}
		h.rules.fetched.Put(crawlerIdentity(host, crawlerName(a.Name, a.Tokens), verified, ip), h.now())
	}
	if h.Source != "site" || r.Method != http.MethodGet {
		return next.ServeHTTP(w, r)
	}
	tee := &teeWriter{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}, limit: enforce.MaxSize}
	err := next.ServeHTTP(tee, r)
	if err == nil && tee.status == http.StatusOK && !tee.overflow && tee.identity &&
		r.Header.Get("Range") == "" {
		h.rules.observe(host, tee.buf.Bytes())
	}
	return err
}

// teeWriter copies a /robots.txt response body (up to limit bytes) while
// passing it through unchanged.
type teeWriter struct {
	*caddyhttp.ResponseWriterWrapper
	buf      bytes.Buffer
	limit    int
	status   int
	overflow bool
	identity bool
}

func (t *teeWriter) WriteHeader(code int) {
	if t.status == 0 && code >= 200 {
		t.status = code
		ce := t.Header().Get("Content-Encoding")
		t.identity = ce == "" || strings.EqualFold(ce, "identity")
	}
	t.ResponseWriterWrapper.WriteHeader(code)
}

func (t *teeWriter) Write(p []byte) (int, error) {
	if t.status == 0 {
		t.WriteHeader(http.StatusOK)
	}
	if !t.overflow {
		if t.buf.Len()+len(p) > t.limit {
			t.overflow = true
		} else {
			t.buf.Write(p)
		}
	}
	return t.ResponseWriterWrapper.Write(p)
}

// ReadFrom keeps io.Copy going through Write, so the copy sees the body.
func (t *teeWriter) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(writerOnly{t}, r)
}

// writerOnly hides every method but Write, so io.Copy cannot bypass it.
type writerOnly struct{ io.Writer }

// requestTarget is the request target as the client sent it (path and
// query), before any rewrite.
func requestTarget(r *http.Request) string {
	uri := r.RequestURI
	if or, ok := r.Context().Value(caddyhttp.OriginalRequestCtxKey).(http.Request); ok && or.RequestURI != "" {
		uri = or.RequestURI
	}
	if uri == "" {
		uri = r.URL.RequestURI()
	}
	if len(uri) > 0 && uri[0] != '/' {
		// absolute-form (a proxy request): keep path and query.
		if i := strings.Index(uri, "://"); i >= 0 {
			rest := uri[i+3:]
			if j := strings.IndexByte(rest, '/'); j >= 0 {
				return rest[j:]
			}
			return "/"
		}
	}
	return uri
}

// isRobotsTxt reports whether the target is /robots.txt (any query).
func isRobotsTxt(target string) bool {
	if len(target) < len("/robots.txt") || target[:len("/robots.txt")] != "/robots.txt" {
		return false
	}
	return len(target) == len("/robots.txt") || target[len("/robots.txt")] == '?'
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
