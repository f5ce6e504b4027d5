package caddyrobots

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/agents/webbotauth"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/pipeline"
	"github.com/caddyrobots/caddy-robots/internal/policy"
	"github.com/caddyrobots/caddy-robots/internal/sites"
	"github.com/caddyrobots/caddy-robots/internal/warnlimit"
)

// ServeHTTP judges the request: /robots.txt, browsers and exempt clients pass
// untouched; bots are checked against the robots.txt versions they may hold,
// their ban state and their crawl rate.
//
// The judging happens in judgeRequest, so that the frame under next (and under
// every handler after this one) stays small.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	// {http.robots.tls_fingerprint} on every request over a connection
	// that robots_fingerprint wrapped, or from a trusted proxy's header
	// (fingerprint.go); a field test over plain HTTP.
	h.offerFingerprint(r)
	o := h.judgeRequest(r)
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

// robotsTxtOutcome is what judgeRequest returns for a client's /robots.txt.
var robotsTxtOutcome = &outcome{}

// judgeRequest returns nil for requests that pass (browsers, exempt clients,
// allowed bots, and every request in log mode), robotsTxtOutcome for
// /robots.txt, and otherwise the outcome of a bot's request to refuse.
func (h *Handler) judgeRequest(r *http.Request) *outcome {
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
			return h.judgeNamed(r, a, signer)
		}
	}
	a := h.identifyRequest(r)
	if a == nil {
		// A browser's claim is checked against its own signals, and the
		// trap catches whoever follows it (undeclared.go).
		return h.undeclaredCrawler(r)
	}
	// Our own loader only asks for /robots.txt and the targets of its
	// redirects; checked here, after the cheap tests, so browsers never pay
	// for the walk up the context chain.
	if isSubrequest(r) {
		return nil
	}
	return h.judgeNamed(r, a, "")
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
	h.named.Add(tok, n)
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

// judgeNamed judges (judgeBot) the request of crawler a, which names
// itself in its User-Agent or by its signature: signer is the Web Bot Auth
// agent that signed the request, "" for a crawler known by its User-Agent.
func (h *Handler) judgeNamed(r *http.Request, a *agents.Shared, signer string) *outcome {
	o := outcome{published: published{agent: a}}
	o.Client.Signer = signer
	refused, _ := h.judgeBot(r, &o, h.mode())
	return refused
}

// judgeBot judges a bot's request in mode (the pipeline: verify the claim,
// read the state, assess, write the state) and publishes the outcome
// (placeholders, vars, a metric, log lines). It returns the outcome only
// when the request is to be refused (nil for exempt clients, allowed
// requests and in log mode), and whether o was judged (false for an exempt
// client and for a request for /robots.txt), so that a caller can publish
// more of it (judgeUndeclared).
//
// o holds the agent, and the claim's Signer, Undeclared and RulesOnly.
func (h *Handler) judgeBot(r *http.Request, o *outcome, mode pipeline.Mode) (refused *outcome, judged bool) {
	cv := caddyValuesOf(r)
	if len(h.exempt) > 0 {
		if ip := clientIP(cv.vars, r); h.exempted(ip) {
			h.checkExemptProxy(r, cv.vars, ip) // scope.go
			return nil, false
		}
	}
	if !h.read(r, &cv, o, mode) {
		// Asked for /robots.txt, which a rewrite ahead of the handler
		// renamed: still /robots.txt, always served.
		return robotsTxtOutcome, false
	}
	h.pipe.Judge(r.Context(), &o.Judgement)
	h.publishJudged(r, o)
	return h.publishOutcome(r, &cv, o), true
}

// read fills o's request as the pipeline judges it: the request as the
// client sent it (cv.orig: Caddy's copy of it), the client's address as
// Caddy recorded it, the site's robots.txt versions and the site block. It
// reports false for a request for /robots.txt.
func (h *Handler) read(r *http.Request, cv *caddyValues, o *outcome, mode pipeline.Mode) bool {
	if !o.readSent(r, cv.orig) {
		return false
	}
	o.Client.Agent = &o.agent.Agent
	o.Recorded, o.Remote, o.HTTP = recordedClientIP(cv.vars, r), r.RemoteAddr, r
	o.Forwarded, o.TrustedProxy = forwarding(r, cv.vars)
	sc := h.scopeFor(r)
	o.Block, o.BlockDesc, o.Mode = sc.key, sc.desc, mode
	snap := h.rules.Snapshot(r, o.Host)
	o.Site.Versions, o.Site.Unavailable = snap.Judged, snap.Unavailable
	return true
}

// judgeDry judges r as the handler would now, reading the state without
// writing it (the admin API's check): the outcome of a judged bot, or nil
// with why the request passes unjudged. crawler names the bot, "" for a
// person.
func (h *Handler) judgeDry(r *http.Request, ip netip.Addr) (o *outcome, crawler, passed string) {
	if isRobotsTxtRequest(r) {
		return nil, "", "/robots.txt is always served"
	}
	a := h.identifyRequest(r)
	if a == nil {
		if sh := h.ident.IdentifyShared(userAgent(r)); sh.Bot {
			return nil, sh.Name, "not judged (libraries ignore)"
		}
		return nil, "", "not a crawler"
	}
	if h.exempted(ip) {
		return nil, a.Name, "exempt network"
	}
	o = &outcome{published: published{agent: a}}
	cv := caddyValuesOf(r)
	if !h.read(r, &cv, o, h.mode()) {
		return nil, a.Name, "/robots.txt is always served"
	}
	o.DryRun = true
	h.pipe.Judge(r.Context(), &o.Judgement)
	h.publishJudged(r, o)
	o.publish()
	return o, a.Name, ""
}

// readSent takes the request as the client sent it (orig: Caddy's copy
// of it, caddyValues.orig): its target's forms and its host. It reports
// false for a request for /robots.txt.
func (o *outcome) readSent(r *http.Request, orig original) bool {
	s := sentRequestFrom(r, orig)
	o.Target.Parse(s.Method, s.RequestURI, rewriteValues(r)...)
	o.Host = policy.HostOf(s.Host)
	return !o.Target.IsRobotsTxt()
}

// publishJudged publishes what judging did besides the decision: an
// immediate retry, the ban a strike started, an untrusted proxy, a claim
// from an address that cannot verify it.
func (h *Handler) publishJudged(r *http.Request, o *outcome) {
	if o.Retried {
		countRetry(o.Mode == pipeline.Enforce)
		h.statsFor(r).retried(o.agent, o.Client.Verdict)
	}
	if o.Struck && o.Strike.Banned && o.Strike.Strikes >= h.strikes.Strikes {
		h.emitBanned(o, o.StrikeID, o.Strike, o.StruckAt) // this strike started the ban
	}
	if o.UntrustedProxy {
		h.noteUntrustedProxy(o.Addr())
	}
	if o.PrivateClaim {
		h.warnPrivateClaim(o.Client.Agent, o.Addr())
	}
	if h.debug {
		o.Addr() // for the log line
	}
}

// newPipeline builds the handler's pipeline from its provisioned parts.
func (h *Handler) newPipeline() *pipeline.Pipeline {
	var fetched pipeline.FetchLog
	if h.rules != nil {
		fetched = h.rules.fetched
	}
	return pipeline.New(pipeline.Config{
		Verifier:    h.verifier,
		Store:       h.store,
		Strikes:     h.strikes,
		Rotations:   h.rotations,
		HostHops:    hostHops,
		PacePerHost: h.Source == "site",
		Fetched:     fetched,
		Options:     h.policy,
		// The client's own handshake is its shape on an address that
		// rotates names (pipeline.Pipeline.shape).
		TLSFingerprint: func(r *http.Request) string { fp, _ := h.fingerprintOf(r); return fingerprintJA4(fp) },
		Now:            func() time.Time { return h.now() },
		RotationNow:    func() time.Time { return time.Unix(sites.Seconds(), 0) },
	})
}

// hostHops recognises clients that hop Hosts on a source site handler,
// for every handler of the process and across config reloads (see
// pipeline.Pipeline.PaceScope).
var hostHops = state.NewRotations(0)

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
	return pipeline.ClientAddr(recordedClientIP(vars, r), r.RemoteAddr)
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

// mode is the handler's mode as the pipeline takes it.
func (h *Handler) mode() pipeline.Mode {
	if h.enforce {
		return pipeline.Enforce
	}
	return pipeline.Log
}

// outcome is a judged bot request: the facts the decision read and the
// assessment it made. Everything shown to people (the refusal text, log
// lines, placeholders, the admin check's JSON) is rendered from it after
// the decision.
type outcome struct {
	published
	// Judgement is the request as read, the facts the decision read, the
	// assessment and what judging did (pipeline.Pipeline.Judge).
	pipeline.Judgement
	// text, when set, is the refusal text itself (an invalid signature,
	// which is refused before any decision).
	text string
}

// published is the part of an outcome that the {http.robots.*}
// placeholders read (placeholders.go).
type published struct {
	action  policy.Action
	reason  policy.Reason
	verdict agents.Verdict
	// token is the token whose group was selected: an index into
	// agent.Tokens, policy.TokenWildcard or policy.TokenNone.
	token      int32
	agent      *agents.Shared // the Identifier's cached answer: read only
	decision   enforce.Decision
	version    *policy.Version
	retryAfter time.Duration
}

// publish copies the assessment's placeholder facts into published.
func (o *outcome) publish() {
	as := &o.Assessment
	o.action, o.reason, o.verdict, o.token = as.Action, as.Reason, as.Verdict, as.Token
	o.decision, o.version, o.retryAfter = as.Decision, as.Version, as.RetryAfter
}

// message is the refusal text the crawler receives.
func (o *outcome) message() string {
	if o.text != "" {
		return o.text
	}
	f := o.Facts()
	return policy.Explain(&o.Assessment, &f, o.Host)
}

// status is the HTTP status of a refusal.
func (o *outcome) status() int {
	switch {
	case o.action == policy.Throttle || o.reason == policy.Unavailable || o.reason == policy.Unverified:
		return http.StatusServiceUnavailable
	case o.reason == policy.BadTarget:
		return http.StatusBadRequest
	case o.reason == policy.TooLong:
		return http.StatusRequestURITooLong
	}
	return http.StatusForbidden
}

// form is the form of the target a rule or preference refused, when it
// differs from the target as sent.
func (o *outcome) form() string { return o.Assessment.RefusedFormText(&o.Target) }

// actionValues holds the action names as interface values, boxed once, so
// publishing a decision as a var does not allocate.
var actionValues = func() (v [policy.Actions]any) {
	for i := range v {
		v[i] = policy.Action(i).String()
	}
	return v
}()

// tokenValue is the token whose group was selected ("*" for the wildcard
// group, "" when none applies) as an interface value, without allocating:
// the two constants are boxed without an allocation.
func (o *published) tokenValue() any {
	switch o.token {
	case policy.TokenWildcard:
		return "*"
	case policy.TokenNone:
		return ""
	}
	return o.agent.Tokens[o.token]
}

// tokenName is tokenValue as a string.
func (o *published) tokenName() string {
	s, _ := o.tokenValue().(string)
	return s
}

// publishOutcome publishes a judged request's outcome (placeholders, vars,
// the decision metric, the INFO line of a refusal, the debug line) and
// returns it when the request is to be refused.
//
// cv are the request's Caddy values (caddyValuesOf).
func (h *Handler) publishOutcome(r *http.Request, cv *caddyValues, o *outcome) *outcome {
	if o.text == "" {
		o.publish()
	}
	a := o.agent
	var name any // a.Name, boxed once per counted name
	if o.reason == policy.Unavailable {
		h.statsFor(r).seenUnavailable(a, o.verdict) // not the crawler's offence
	} else {
		name = h.statsFor(r).seen(a, o.verdict, o.action, o.Mode == pipeline.Log)
	}
	if name == nil {
		name = a.Name
	}
	if repl := cv.repl; repl != nil {
		repl.Map(o.published.placeholder) // placeholders.go
	}
	if vars := cv.vars; vars != nil {
		// What caddyhttp.SetVar does, without looking the map up three times.
		vars["robots_agent"] = name
		vars["robots_decision"] = actionValues[o.action]
		vars["robots_token"] = o.tokenValue()
	}

	h.series.countDecision(h.scopeFor(r).desc, o.action, o.reason, a.Category, a.Purpose, o.Mode == pipeline.Log) // metrics.go
	if o.action != policy.Allow {
		h.logRefusal(r, o)
	}
	if h.debug {
		h.logDecision(o)
	}
	if o.action == policy.Allow || o.Mode == pipeline.Log {
		return nil
	}
	refused := *o
	return &refused
}

// logDecision writes the debug line of one decision.
func (h *Handler) logDecision(o *outcome) {
	if c := h.logger.Check(zapcore.DebugLevel, "robots decision"); c != nil {
		a := &o.agent.Agent
		fields := []zap.Field{
			zap.String("action", o.action.String()), zap.String("reason", o.reason.String()), zap.String("agent", a.Name),
			zap.String("purpose", string(a.Purpose)),
			zap.String("verdict", o.verdict.String()), zap.String("token", o.tokenName()), zap.String("target", o.Target.Raw),
			zap.String("mode", o.Mode.String()),
		}
		if o.decision.Rule != nil {
			fields = append(fields, zap.String("rule", o.decision.Rule.String()))
		}
		if form := o.form(); form != "" {
			fields = append(fields, zap.String("normalised_target", form))
		}
		if o.Assessment.NoStrike != "" {
			fields = append(fields, zap.String("no_strike", o.Assessment.NoStrike))
		}
		if o.version != nil {
			fields = append(fields, zap.String("version", o.version.ID))
		}
		c.Write(fields...)
	}
}

// Web Bot Auth: agents that sign their requests (RFC 9421 HTTP Message
// Signatures, as the IETF webbotauth drafts profile them) are verified by
// their signature, whatever User-Agent and address they use. OpenAI's agent
// and Google's send a browser User-Agent and sign instead.
//
//   - Verified: the request is a bot's, judged by the robots.txt group of
//     the agent's token (the built-in catalogue, or verify {
//     signature_agent <url> token <t> }), or by "*" when none is known; its
//     throttle budget and ban state are the signing agent's own.
//   - Invalid (a web-bot-auth signature that fails, or a covered
//     Content-Digest that does not match the body): refused as spoofed.
//   - Unsigned, or Unknown (the agent's key directory is not fetched yet or
//     cannot be): judged by the User-Agent as always.

// SignatureAgentConfig names an agent whose signed requests are verified
// with its own key directory.
type SignatureAgentConfig struct {
	// URL is the agent's Signature-Agent origin (https://agent.example) or
	// key-set URL. Configured agents' directories may be on private
	// addresses, and on plain http for loopback tests.
	URL string `json:"url"`
	// Token is the robots.txt product token the agent's requests are judged
	// by; empty: the built-in catalogue's, else the "*" group.
	Token string `json:"token,omitempty"`
}

// sigPool shares one Web Bot Auth verifier (and its key-directory cache)
// per configuration across handlers and reloads.
var sigPool = caddy.NewUsagePool()

type pooledSig struct{ *webbotauth.Verifier }

func (p pooledSig) Destruct() error { p.Close(); return nil }

// provisionSignatures builds (or shares) the verifier for v.
func (h *Handler) provisionSignatures(v *VerifyConfig) error {
	// A first-time signer waits at most 200 ms for its key directory, so
	// its first request already gets a verdict; later ones use the cache.
	cfg := webbotauth.Config{Agents: map[string]string{}, MaxWait: 200 * time.Millisecond}
	if v != nil {
		cfg.Skew = time.Duration(v.SignatureSkew)
		for _, a := range v.SignatureAgents {
			origin, err := webbotauth.NormaliseOrigin(a.URL)
			if err != nil {
				return fmt.Errorf("robots: verify: signature_agent %q: %w", a.URL, err)
			}
			cfg.AllowOrigins = append(cfg.AllowOrigins, origin)
			if a.Token != "" {
				cfg.Agents[origin] = a.Token
			}
			// The operator's URL is the agent's one key directory: a
			// request cannot make this server fetch another.
			if cfg.Directories == nil {
				cfg.Directories = map[string]string{}
			}
			cfg.Directories[origin] = strings.TrimSpace(a.URL)
		}
	}
	key, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("robots: verify: signature config: %w", err)
	}
	val, _, err := sigPool.LoadOrNew(string(key), func() (caddy.Destructor, error) {
		sv, err := webbotauth.NewVerifier(cfg)
		if err != nil {
			return nil, fmt.Errorf("robots: verify: signatures: %w", err)
		}
		return pooledSig{sv}, nil
	})
	if err != nil {
		return err
	}
	h.sigKey, h.sig = string(key), val.(pooledSig).Verifier
	return nil
}

// releaseSignatures gives back the verifier taken in provisionSignatures.
func (h *Handler) releaseSignatures() error {
	if h.sigKey == "" {
		return nil
	}
	key := h.sigKey
	h.sigKey = ""
	if _, err := sigPool.Delete(key); err != nil {
		return fmt.Errorf("robots: releasing the signature verifier: %w", err)
	}
	return nil
}

// signedAgent verifies a request that carries a Signature-Input field. It
// returns the agent a Verified signature proves (with the signer's
// identity), an Invalid result to refuse, or neither (nil, "") to judge the
// request by its User-Agent.
func (h *Handler) signedAgent(r *http.Request) (a *agents.Shared, signer string, invalid *webbotauth.Result) {
	ar := asReceived(r)
	res := h.sig.Verify(r.Context(), ar, h.now())
	// Checking a covered Content-Digest reads the body and puts it back
	// on the request Verify was given: the next handler must get it.
	r.Body = ar.Body
	switch res.Outcome {
	case webbotauth.Verified:
	case webbotauth.Invalid:
		return nil, "", &res
	default:
		return nil, "", nil
	}
	var ag agents.Agent
	if res.Token != "" {
		// The catalogue knows the token's crawler: its purpose, category
		// and documented habits.
		ag = h.ident.IdentifyShared(res.Token).Agent
	}
	if !ag.Bot || res.Token == "" {
		ag = agents.Agent{Name: res.Agent, Category: agents.CategoryOther, Purpose: agents.PurposeOther}
		if res.Token != "" {
			ag.Name, ag.Tokens = res.Token, []string{res.Token}
		}
	}
	ag.Bot, ag.Known = true, true
	if res.Operator != "" {
		ag.Operator = res.Operator
	}
	ag.Profile.Verify = "" // the signature is the verification
	return agents.NewShared(ag), res.Agent, nil
}

// asReceived returns r with the URL and target the client sent (Caddy's
// copy of the original request): a signature covers @path, @query and
// @target-uri as the client signed them, not as the operator's routing
// (handle_path, rewrite) changed them ahead of this handler.
func asReceived(r *http.Request) *http.Request {
	or := originalRequest(r)
	if !or.ok || or.url == nil || r.URL == nil {
		return r
	}
	if or.url.Path == r.URL.Path && or.url.RawPath == r.URL.RawPath && or.url.RawQuery == r.URL.RawQuery && or.requestURI == r.RequestURI {
		return r
	}
	c := *r
	u := *or.url
	u.Scheme, u.Host = r.URL.Scheme, r.URL.Host
	c.URL, c.RequestURI = &u, or.requestURI
	return &c
}

// invalidSignature is the outcome of a request whose Web Bot Auth
// signature fails: refused as spoofed, never a strike.
func (h *Handler) invalidSignature(r *http.Request, res *webbotauth.Result) *outcome {
	a := agents.NewShared(agents.Agent{Bot: true, Name: res.Agent, Category: agents.CategoryOther, Purpose: agents.PurposeOther})
	o := outcome{published: published{agent: a, action: policy.Block, reason: policy.Spoofed, verdict: agents.Spoofed, token: policy.TokenNone}}
	cv := caddyValuesOf(r)
	o.readSent(r, cv.orig) // its target and host, for the log line and placeholders
	o.text = fmt.Sprintf("Refused: this request carries a Web Bot Auth signature for %s that does not verify (%s).\n", res.Agent, res.Reason)
	return h.publishOutcome(r, &cv, &o)
}
