// Package caddyrobots is a Caddy v2 HTTP handler that enforces a site's own
// robots.txt on the crawlers that visit it.
//
// It identifies crawlers from the User-Agent (verifying those that claim a
// famous name), applies RFC 9309 group selection and longest-match to every
// request, and refuses (403) or throttles (503 + Retry-After) the bots that
// ignore the rules. People's browsers are never judged, /robots.txt is always
// served, and a crawler that follows the file (including a copy up to the
// grace period old) never receives a refusal.
package caddyrobots

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	lru "github.com/hashicorp/golang-lru/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/agents/webbotauth"
	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/pipeline"
	"github.com/caddyrobots/caddy-robots/internal/policy"
	"github.com/caddyrobots/caddy-robots/internal/ranges"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Defaults and limits of the configuration.
const (
	DefaultRefresh = time.Hour
	MaxRefresh     = 24 * time.Hour
	DefaultGrace   = 24 * time.Hour
	MaxGrace       = 7 * 24 * time.Hour
	// DefaultFetchTimeout bounds one load of the site's robots.txt.
	DefaultFetchTimeout = 5 * time.Second
)

// Handler enforces the site's robots.txt on crawlers. Module ID:
// http.handlers.robots.
//
// Placeholders set for every request judged as coming from a bot (unset for
// browsers, /robots.txt and exempt clients):
//
//	{http.robots.agent}       crawler name (catalogue name or the UA's product token)
//	{http.robots.category}    catalogue category (search, ai-training, ...)
//	{http.robots.purpose}     documented purpose (search, ai-training, ai-answers, user-triggered, ...)
//	{http.robots.verdict}     verified | unverified | spoofed
//	{http.robots.token}       the robots.txt token whose group was selected ("*" for the wildcard group)
//	{http.robots.decision}    allow | block | throttle | ban
//	{http.robots.reason}      rule | spoofed | unavailable | ban | rate
//	{http.robots.rule}        the deciding rule, e.g. "Disallow: /private/ (line 3)"
//	{http.robots.group}       the selected group, e.g. "User-agent: GPTBot (line 5)"
//	{http.robots.version}     short hash of the robots.txt version that decided
//	{http.robots.retry_after} seconds to wait (throttle) or until the ban ends
//
// For every request, people included, when the site's robots.txt states AI
// usage preferences (see Preferences):
//
//	{http.robots.content_usage}  the Content-Usage preference for the path, e.g. "train-ai=n"
//	{http.robots.content_signal} the Content-Signal pairs, e.g. "search=yes, ai-train=no"
//
// The same facts are published as request variables robots_agent,
// robots_decision and robots_token for the vars matcher and expressions.
type Handler struct {
	// Source is where the rules come from: "site" (default) loads
	// /robots.txt through this same server with the request's Host, so it
	// works in front of reverse_proxy, file_server or anything else;
	// "file" reads File; "inline" uses Inline.
	Source string `json:"source,omitempty"`
	// File is the robots.txt path for source "file". Changes are noticed
	// without a restart. Placeholders ({env.ROBOTS_FILE}) are replaced at
	// provision. The file must exist and be readable when the config
	// loads; if it disappears or breaks later, the last good copy stays.
	File string `json:"file,omitempty"`
	// Inline is the robots.txt text for source "inline".
	Inline string `json:"inline,omitempty"`

	// Refresh is how often the rules are reloaded: 1s..24h, default 1h
	// (omitted or 0 in JSON; in the Caddyfile `refresh 0` is an error). A
	// 200 response for /robots.txt passing through the handler refreshes
	// them early.
	Refresh caddy.Duration `json:"refresh,omitempty"`
	// FetchTimeout bounds one load of the site's robots.txt: 100ms..1m,
	// default 5s (omitted or 0 in JSON; in the Caddyfile `fetch_timeout 0`
	// is an error).
	FetchTimeout caddy.Duration `json:"fetch_timeout,omitempty"`

	// Mode is "enforce" (default) or "log": log decides, logs and counts
	// exactly as enforce would, and never refuses a request.
	Mode string `json:"mode,omitempty"`

	// Grace is how long a crawler may keep an old copy of robots.txt
	// (RFC 9309 §2.4 allows 24 hours). A request is refused only when every
	// version the crawler could still hold refuses it; once the crawler has
	// fetched /robots.txt after a change, older versions stop counting. A
	// crawler whose operator documents a longer cache gets that longer
	// window. Default 24h, at most 7 days; 0 judges every crawler by the
	// current version only.
	Grace *caddy.Duration `json:"grace,omitempty"`

	// CrawlBurst is how many requests a crawler may send back to back
	// before Crawl-delay applies; after them its average gap must be at
	// least 7/8 of the delay, so crawlers that randomise their waits
	// (Scrapy, wget --random-wait: 0.5-1.5x) are never slowed, while one
	// that ignores the delay is throttled from request CrawlBurst+1.
	// Default 4; 1 judges every gap on its own (with a small jitter
	// tolerance).
	CrawlBurst int `json:"crawl_burst,omitempty"`

	// CrawlDelay controls Crawl-delay and Request-rate enforcement: "on"
	// (default) throttles crawlers that honour them or whose habits are
	// unknown, never those documented to ignore them (Googlebot); "all"
	// throttles every crawler; "off" never throttles.
	CrawlDelay string `json:"crawl_delay,omitempty"`

	// Spoofed says what happens to a request that claims a verifiable
	// crawler from an address that provably is not that crawler's: "block"
	// (default) refuses it with 403; "wildcard" judges it by the "*" group
	// like any unknown bot.
	Spoofed string `json:"spoofed,omitempty"`

	// Libraries says whether HTTP libraries and headless browsers (curl,
	// python-requests, HeadlessChrome) are judged as crawlers: "crawler"
	// (default) or "ignore".
	Libraries string `json:"libraries,omitempty"`

	// Exempt lists client networks (CIDR or single addresses) that are
	// never judged, such as your own monitoring. A network with host bits
	// set (10.1.2.3/8) is an error. Behind a proxy, trust it with the
	// servers' trusted_proxies rather than exempting it: exempting an
	// untrusted proxy exempts every client behind it (warned about). An entry may be a
	// placeholder ({env.ROBOTS_EXEMPT}) holding a list separated by commas
	// or spaces, replaced at provision.
	Exempt []string `json:"exempt,omitempty"`

	// Unavailable is what crawlers get while no copy of robots.txt has ever
	// been obtained because the source answers 5xx or cannot be reached:
	// "disallow" (default, what RFC 9309 §2.3.1.4 tells a crawler to
	// assume) or "allow".
	Unavailable string `json:"unavailable,omitempty"`

	// Strikes configures repeat-offender bans: a refused request is a
	// strike, and Count strikes within Window ban the crawler for Ban
	// (every request except /robots.txt gets 403). Default 10 strikes in
	// 10 minutes, ban 1 hour.
	Strikes *StrikesConfig `json:"strikes,omitempty"`

	// Store is where throttle and strike state lives. Default: memory.
	Store *StoreConfig `json:"store,omitempty"`

	// Verify tunes crawler verification (IP ranges and reverse DNS).
	Verify *VerifyConfig `json:"verify,omitempty"`

	// Preferences says what is done with the AI usage preferences a
	// robots.txt states (IETF aipref Content-Usage, Cloudflare's
	// Content-Signal): "expose" (default) parses them and sets the
	// {http.robots.content_usage} and {http.robots.content_signal}
	// placeholders for every request, people included; "header" also adds
	// the applicable Content-Usage header to responses (never replacing one
	// the backend set); "enforce" also refuses (403, no strike) a crawler
	// whose documented purpose the preference for the path excludes:
	// AI-training crawlers on train-ai=n / ai-train=no, AI-answer crawlers on
	// ai-input=no, search crawlers on search=n / search=no. Crawlers with no
	// known purpose, and people, are never refused for a preference.
	Preferences string `json:"preferences,omitempty"`

	// RobotsTxt says who answers /robots.txt for source file and inline:
	// "serve" (default) answers with the text the rules come from, so
	// crawlers read exactly what is enforced; "pass" leaves it to the site
	// (and warns when the site's copy differs). Source site always passes.
	RobotsTxt string `json:"robots_txt,omitempty"`

	// MaxRuleMemory bounds the estimated memory of the parsed robots.txt
	// versions kept for source site (all sites served by the handler,
	// shared by content), in bytes: 16 MiB..1 TiB (room for one robots.txt
	// of the largest size read), default 64 MiB; the Caddyfile needs a
	// unit (64MiB). When it is reached, idle sites
	// are forgotten first; a site whose new version finds no room keeps
	// its last good copy.
	MaxRuleMemory int64 `json:"max_rule_memory,omitempty"`

	// Undeclared says what happens to undeclared crawlers: clients whose
	// User-Agent claims a person's browser while the request shows a
	// program (see the README's "Undeclared crawlers"). "off", "log" or
	// "enforce" sets every signal at once; empty (the default) gives each
	// signal its own default: enforce for fetch_metadata and trap, which
	// real Chromium and Firefox were proven to pass, log for
	// fetch_metadata_safari and client_hints. An undeclared crawler is
	// judged like any unnamed bot, by the "*" group, with strikes and
	// Crawl-delay, in the agent category "undeclared"; log judges, counts
	// and logs it as mode log does and never refuses it.
	Undeclared string `json:"undeclared,omitempty"`
	// UndeclaredSignals sets the mode (off, log, enforce) of single
	// signals, over Undeclared: fetch_metadata (a Chromium 80+ or Firefox
	// 90+ claim over HTTPS or to a loopback host without any
	// Sec-Fetch-Site, -Mode or -Dest header), fetch_metadata_safari (the
	// same for Safari 16.4+ and every browser on iOS 16.4+), client_hints
	// (a Chrome, Edge or Opera 89+ claim without Sec-CH-UA) and trap.
	UndeclaredSignals map[string]string `json:"undeclared_signals,omitempty"`
	// Disguised is the old name of Undeclared, still read so that configs
	// written before the rename keep working: provisioning moves it into
	// Undeclared with a warning, and setting both is an error.
	//
	// Deprecated: use Undeclared.
	Disguised string `json:"disguised,omitempty"`
	// DisguisedSignals is the old name of UndeclaredSignals, read as
	// Disguised is.
	//
	// Deprecated: use UndeclaredSignals.
	DisguisedSignals map[string]string `json:"disguised_signals,omitempty"`
	// TLSFingerprintHeader is the request header a TLS-terminating proxy
	// in front of Caddy puts its client's JA4 fingerprint in; it is read
	// only from a proxy the server trusts (trusted_proxies), and gives
	// {http.robots.tls_fingerprint} and the client's marks
	// (fingerprint.go).
	TLSFingerprintHeader string `json:"tls_fingerprint_header,omitempty"`
	// Trap is a path (a prefix, as robots.txt reads it, e.g. /no-robots/)
	// that robots.txt disallows for every crawler and that no person sees:
	// link it hidden in your pages, or with the {http.robots.trap_link}
	// placeholder ({http.robots.trap} is the path). A client that asks for
	// it is answered 403 and judged as an undeclared crawler for TrapHold
	// (see undeclared.go for who is marked, and the text-browser rule). With
	// source file and inline the served robots.txt carries the trap's
	// Disallow line in every group; with source site the site's own file
	// must disallow it for "*" (the handler warns when it does not).
	Trap string `json:"trap,omitempty"`
	// TrapHold is how long a client that took the trap is judged as a
	// crawler: 1m..7d, default 24h.
	TrapHold caddy.Duration `json:"trap_hold,omitempty"`

	// UseErrorRoutes makes refusals return errors (403, 503) to Caddy so
	// that handle_errors can answer them; Retry-After is still set. By
	// default the handler writes a short plain-text explanation itself, so
	// that throttling does not log an ERROR line per request.
	UseErrorRoutes bool `json:"use_error_routes,omitempty"`

	// CaseInsensitivePaths compares paths ignoring case, for sites whose
	// server does (IIS, a file server on a case-insensitive file system):
	// there "/PRIVATE/x" is "/private/x", and "Disallow: /private/" must
	// govern both. Letters are folded the way such servers fold them,
	// Unicode's included, raw or percent-encoded UTF-8 (enforce.FoldCase):
	// "/pr%C4%B1vate/" (dotless i, "I" upper-cased) is "/private/". The
	// rules are parsed from the robots.txt folded and every target is
	// folded before it is matched; the robots.txt served and stored stays
	// as written. RFC 9309
	// compares case-sensitively, so with this option a crawler that
	// requests a differently-cased spelling of a disallowed path is
	// refused where the RFC would let it fetch. Costs one pass over each
	// form of a bot's target (an allocation when it has capitals).
	CaseInsensitivePaths bool `json:"case_insensitive_paths,omitempty"`

	// The fields a bot's request reads come first, together, so that a
	// request touches few cache lines of the handler (in a busy server
	// they are cold between two requests). Some are the config above in a
	// form that costs no pointer or string to read.
	rules *ruleSource
	ident *agents.Identifier
	stats *crawlerStats // decisions per crawler name, for the admin API
	// named are the bots that sites' groups name in browsers' User-Agents
	// (namedBySite), one answer per group token.
	named    *lru.Cache[string, *agents.Shared]
	store    state.Store
	strikes  state.StrikePolicy
	exempt   []netip.Prefix
	verifier *agents.Verifier
	sig      *webbotauth.Verifier
	now      func() time.Time
	// policy is the decision's options, from the config above.
	policy          policy.Options
	grace           time.Duration // *Grace
	burst           int           // CrawlBurst with its default
	enforce         bool
	debug           bool // logger has debug enabled: one decision line per bot request
	prefsHeader     bool // Preferences is "header" or "enforce"
	ignoreLibraries bool // Libraries == "ignore"

	// pipe judges bot requests: the I/O around the decision.
	pipe *pipeline.Pipeline

	// undeclared: undeclared crawlers (undeclared.go); nil when every
	// signal is off.
	undeclared *undeclaredSignals

	logger        *zap.Logger
	storeKey      string
	warn          *logLimiter
	serveEnforced bool  // answer /robots.txt with the enforced text
	maxRuleMemory int64 // MaxRuleMemory with its default
	// privateClaims limits the warning about crawler claims from private
	// addresses.
	privateClaims *logLimiter
	// scope is the handler's site block, found from its first request
	// (a pointer: Handler values are copied by CaddyModule).
	scope *atomic.Pointer[handlerScope]
	// series are the handler's series of the decision metrics, labelled
	// with its site block (metrics.go).
	series *siteSeries
	// events is the config's events app, and eventsCtx the context to emit
	// with; configWarnings the load-time warnings about where the handler
	// sits (for GET /robots/status).
	events         *caddyevents.App
	eventsCtx      caddy.Context
	configWarnings *warnings
	// rotations detects addresses that present many names (the
	// process's table, shared by every handler and kept across reloads).
	rotations *state.Rotations
	// untrustedProxy is the first peer found forwarding for others
	// while the server does not trust it (scope.go); nil until then.
	untrustedProxy *atomic.Pointer[netip.Addr]
	// exemptProxy is the first exempt address found forwarding for
	// others while the server does not trust it (scope.go).
	exemptProxy   *atomic.Pointer[netip.Addr]
	releaseRanges func() error // from startRanges; called by Cleanup
	sigKey        string       // sigPool key of sig
}

// StrikesConfig configures repeat-offender bans.
type StrikesConfig struct {
	// Off disables strikes and bans.
	Off bool `json:"off,omitempty"`
	// Count is how many refused requests within Window ban a crawler.
	// Default 10.
	Count int `json:"count,omitempty"`
	// Window is the period strikes are counted over: 1s..24h, default
	// 10m (below a second no refusals add up to a ban).
	Window caddy.Duration `json:"window,omitempty"`
	// Ban is how long a ban lasts: 1m..30d, default 1h.
	Ban caddy.Duration `json:"ban,omitempty"`
}

// StoreConfig says where throttle and strike state lives.
type StoreConfig struct {
	// Type is "memory" (default) or "redis".
	Type string `json:"type,omitempty"`
	// MaxEntries caps the memory store (default 100000 identities); the
	// least recently used unverified identities are evicted first. Banned
	// identities are kept apart, so that no flood evicts a ban: a tenth
	// of MaxEntries more, at least 1,024 (state.MemoryConfig.MaxBans).
	// With Redis it caps the local fallback store.
	MaxEntries int `json:"max_entries,omitempty"`
	// URL is the Redis address, e.g. redis://user:pass@host:6379/0,
	// rediss://host:6380 for TLS,
	// redis+sentinel://host:26379?master_name=mymaster&addr=host2:26379
	// or redis+cluster://h1:6379?addr=h2:6379&addr=h3:6379 (the forms of
	// state.ParseRedisURL). Placeholders such as {env.REDIS_URL} are
	// resolved at provision time; a URL that is empty once they are
	// replaced fails when the config loads.
	URL string `json:"url,omitempty"`
	// TLS connects to Redis over TLS (also with a redis:// URL) with the
	// files given; unreadable or invalid files fail the config load.
	TLS *StoreTLSConfig `json:"tls,omitempty"`
	// Prefix starts every Redis key. Default "caddy-robots".
	Prefix string `json:"prefix,omitempty"`
	// Timeout bounds each Redis call; on error or timeout the request is
	// decided from local state (fail open). 1ms..10s, default 50ms
	// (omitted or 0 in JSON; in the Caddyfile `timeout 0` is an error).
	Timeout caddy.Duration `json:"timeout,omitempty"`
}

// StoreTLSConfig names the PEM files of a TLS connection to Redis. The
// server's certificate must name the URL's host. Placeholders are resolved
// at provision time.
type StoreTLSConfig struct {
	// CA holds the certificates of the authorities that sign the Redis
	// server's certificate. Default: the system's roots.
	CA string `json:"ca,omitempty"`
	// Cert and Key are the client certificate and key, for a server that
	// asks for one (tls-auth-clients yes). Both or neither.
	Cert string `json:"cert,omitempty"`
	Key  string `json:"key,omitempty"`
}

// VerifyConfig tunes crawler verification.
type VerifyConfig struct {
	// Timeout bounds one reverse-DNS verification: 100ms..30s, default 2s
	// (omitted or 0 in JSON; in the Caddyfile `timeout 0` is an error).
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// Resolver is a DNS server to use instead of the system resolver: an
	// IP address with an optional port (default 53), e.g. 127.0.0.1:5353
	// or [2001:db8::53]. Anything else fails when the config loads.
	// Placeholders are replaced at provision.
	Resolver string `json:"resolver,omitempty"`
	// Ranges maps a verification method (google-common, bingbot,
	// openai-gptbot, ...) to a file of fresher IP ranges, in Google's JSON
	// format, the IETF draft's JSON format, a CSV or a plain CIDR list, or
	// to an https URL to download such a list from instead of the
	// operator's own URL (http is accepted only for loopback hosts). A file
	// replaces the embedded snapshot for that method and is not refreshed;
	// a URL is downloaded every RangesRefresh. Placeholders in the file or
	// URL are replaced at provision.
	Ranges map[string]string `json:"ranges,omitempty"`
	// RangesRefresh is how often the IP lists the operators publish
	// (Google, Bing, OpenAI, Perplexity, Anthropic, Apple, DuckDuckGo,
	// Common Crawl) are downloaded again, conditionally (an unchanged list
	// costs a 304): a duration of at least 1s, default 12h, or "off" to use
	// only the embedded snapshot and files. Downloads run in the
	// background and are kept in Caddy's storage, so a restart while
	// offline starts from the last good lists. Without current lists, a
	// claim of GPTBot, ClaudeBot, PerplexityBot or DuckDuckBot from an
	// address outside the embedded (old) list is Unverified, never refused
	// as spoofed.
	RangesRefresh string `json:"ranges_refresh,omitempty"`
	// SignatureAgents are Web Bot Auth agents to verify with their own key
	// directory, and the robots.txt token each is judged by. Agents in the
	// built-in catalogue (OpenAI's https://chatgpt.com, Google's
	// https://agent.bot.goog) need no entry.
	SignatureAgents []SignatureAgentConfig `json:"signature_agents,omitempty"`
	// SignatureSkew is the clock skew tolerated on a signature's created and
	// expires times: at most 10m (a captured signature could be replayed
	// for that long), default 60s.
	SignatureSkew caddy.Duration `json:"signature_skew,omitempty"`
	// RangesOperators is "off" to download only the URLs given in Ranges,
	// never the operators' own URLs (for a server that must not reach the
	// internet, fed from a local mirror). Default "on". The environment
	// variable CADDY_ROBOTS_RANGES_OPERATORS=off does the same for every
	// handler of the process (for test suites).
	RangesOperators string `json:"ranges_operators,omitempty"`
	// RangesDir is a directory of IP lists, one per method, named
	// <method>.json as `caddy robots ranges fetch --out DIR` writes them
	// (an offline mirror). Each list found replaces the embedded snapshot
	// and is not downloaded; a Ranges entry for a method wins over it. A
	// list is as old as its creationTime (else the file's modification
	// time): past 30 days it no longer proves a spoof. A directory that
	// cannot be read or holds no list fails the config.
	RangesDir string `json:"ranges_dir,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.robots",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision applies defaults, builds the identifier, verifier and state
// store, and starts loading the rules in the background. It never blocks on
// the network.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	h.debug = h.logger.Core().Enabled(zapcore.DebugLevel)
	h.warn = &logLimiter{}
	h.privateClaims = &logLimiter{}
	h.configWarnings = new(warnings)
	h.scope = new(atomic.Pointer[handlerScope])
	h.series = newSiteSeries()
	h.rotations = rotationTable
	h.untrustedProxy = new(atomic.Pointer[netip.Addr])
	h.exemptProxy = new(atomic.Pointer[netip.Addr])
	h.stats = newCrawlerStats()
	named, err := lru.New[string, *agents.Shared](1024)
	if err != nil {
		return fmt.Errorf("robots: the bots sites name: %w", err)
	}
	h.named = named
	if h.now == nil {
		h.now = time.Now
	}
	h.applyDefaults()
	h.enforce = h.Mode == "enforce"
	h.ignoreLibraries = h.Libraries == "ignore"
	h.prefsHeader = h.Preferences == "header" || h.Preferences == "enforce"
	h.strikes = h.strikePolicy()
	h.policy = h.decisionOptions()
	h.grace, h.burst = h.policy.Grace, h.policy.Burst
	h.serveEnforced = h.Source != "site" && h.RobotsTxt == "serve"
	if h.Source != "site" && h.RobotsTxt == "pass" {
		h.warnConfig("robots: robots_txt pass: crawlers read the site's own /robots.txt while the rules come from " + h.Source + "; if the two differ, compliant crawlers may be refused")
	}
	h.maxRuleMemory = h.MaxRuleMemory
	if h.maxRuleMemory == 0 {
		h.maxRuleMemory = DefaultMaxRuleMemory
	}
	if err := h.checkConfig(); err != nil {
		return err
	}
	if err := h.provisionFingerprint(); err != nil { // fingerprint.go
		return err
	}
	for _, s := range h.Exempt {
		p, err := parsePrefix(s)
		if err != nil {
			return fmt.Errorf("robots: exempt: %w", err)
		}
		h.exempt = append(h.exempt, p)
	}
	if err := checkPlacement(ctx); err != nil { // config_placement.go
		return err
	}

	if err := registerMetrics(ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("robots: registering metrics: %w", err)
	}

	h.ident = sharedIdentifier()

	if err := h.provisionVerifier(ctx); err != nil {
		return err
	}

	if err := h.provisionSignatures(h.Verify); err != nil {
		return err
	}

	if err := h.provisionStore(); err != nil {
		return err
	}

	h.warnStrippedPrefix(strippedPrefixes(ctx))
	if err := h.watchStart(ctx); err != nil {
		return err
	}

	// Before the rule source: the trap adds its line to inline rules.
	if err := h.provisionUndeclared(); err != nil {
		return err
	}
	src, err := newRuleSource(h, ctx)
	if err != nil {
		return err
	}
	h.rules = src
	h.pipe = h.newPipeline()
	registerHandler(h)
	return nil
}

// provisionVerifier builds the verifier of crawler claims (verify: its
// timeout, resolver and IP lists) and subscribes it to the loop that keeps
// the operators' lists current.
func (h *Handler) provisionVerifier(ctx caddy.Context) error {
	vcfg := agents.VerifierConfig{}
	if v := h.Verify; v != nil {
		vcfg.Timeout = time.Duration(v.Timeout)
		if v.Resolver != "" {
			vcfg.Resolver = agents.ResolverAt(v.Resolver)
		}
	}
	rcfg, err := newRangesConfig(h.Verify)
	if err != nil {
		return fmt.Errorf("robots: verify: %w", err)
	}
	if vcfg.Ranges, vcfg.RangesAsOf, err = rcfg.LoadFiles(); err != nil {
		return err
	}
	verifier, err := agents.NewVerifier(vcfg)
	if err != nil {
		return fmt.Errorf("robots: building verifier: %w", err)
	}
	h.verifier = verifier
	if h.releaseRanges, err = startRanges(ctx, verifier, rcfg, h.logger); err != nil {
		return err
	}
	ranges.WarnStale(h.logger, verifier, rcfg)
	return nil
}

// Validate checks the configuration.
func (h *Handler) Validate() error {
	var errs []error
	switch h.Source {
	case "site":
	case "file":
		if h.File == "" {
			errs = append(errs, errors.New("source file needs a path"))
		}
	case "inline":
	default:
		errs = append(errs, fmt.Errorf("source: unknown source %q (want site, file or inline)", h.Source))
	}
	// In JSON an omitted (zero) duration means the default (see config.go).
	if d := time.Duration(h.Refresh); d != 0 {
		if err := checkDuration("refresh", d, MinRefresh, MaxRefresh); err != nil {
			errs = append(errs, err)
		}
	}
	if d := time.Duration(h.FetchTimeout); d != 0 {
		if err := checkDuration("fetch_timeout", d, MinFetchTimeout, MaxFetchTimeout); err != nil {
			errs = append(errs, err)
		}
	}
	if h.Grace != nil {
		if err := checkDuration("grace", time.Duration(*h.Grace), 0, MaxGrace); err != nil {
			errs = append(errs, err)
		}
	}
	if v := h.Verify; v != nil && v.Timeout != 0 {
		if err := checkDuration("verify timeout", time.Duration(v.Timeout), MinVerifyTimeout, MaxVerifyTimeout); err != nil {
			errs = append(errs, err)
		}
	}
	if s := h.Store; s != nil && s.Timeout != 0 {
		if err := checkDuration("store redis timeout", time.Duration(s.Timeout), MinRedisTimeout, MaxRedisTimeout); err != nil {
			errs = append(errs, err)
		}
	}
	checkEnum := func(name, val string, allowed ...string) {
		for _, a := range allowed {
			if val == a {
				return
			}
		}
		errs = append(errs, fmt.Errorf("%s: unknown value %q (want %s)", name, val, strings.Join(allowed, ", ")))
	}
	checkEnum("mode", h.Mode, "enforce", "log")
	checkEnum("crawl_delay", h.CrawlDelay, "on", "off", "all")
	if h.CrawlBurst < 0 || h.CrawlBurst > state.MaxBurst {
		errs = append(errs, fmt.Errorf("crawl_burst: %d is outside 1..%d", h.CrawlBurst, state.MaxBurst))
	}
	checkEnum("spoofed", h.Spoofed, "block", "wildcard")
	checkEnum("libraries", h.Libraries, "crawler", "ignore")
	checkEnum("unavailable", h.Unavailable, "disallow", "allow")
	checkEnum("robots_txt", h.RobotsTxt, "serve", "pass")
	if h.Source == "site" && h.RobotsTxt == "pass" {
		errs = append(errs, errors.New("robots_txt pass applies to source file and inline; with source site the site itself always answers /robots.txt"))
	}
	if h.Source == "inline" {
		if ph := inlinePlaceholder(h.Inline); ph != "" {
			errs = append(errs, fmt.Errorf("source inline: %s is not replaced in inline text, so crawlers would read it as written", ph))
		}
	}
	checkEnum("preferences", h.Preferences, "expose", "header", "enforce")
	if err := checkRuleMemory(h.MaxRuleMemory); err != nil {
		errs = append(errs, err)
	}
	if s := h.Strikes; s != nil && !s.Off {
		if s.Count < 0 || s.Window < 0 || s.Ban < 0 {
			errs = append(errs, errors.New("strikes: count, window and ban must not be negative"))
		}
		// In JSON an omitted (zero) window or ban is the default.
		p := h.strikePolicy()
		if err := checkStrikes(p.Window, p.Ban); err != nil {
			errs = append(errs, err)
		}
	}
	if v := h.Verify; v != nil {
		if err := checkDuration("verify signature_skew", time.Duration(v.SignatureSkew), 0, MaxSignatureSkew); err != nil {
			errs = append(errs, err)
		}
	}
	if s := h.Store; s != nil {
		checkEnum("store", s.Type, "", "memory", "redis")
		if s.Type == "redis" && s.URL == "" {
			errs = append(errs, errors.New("store redis needs a URL"))
		}
		if s.TLS != nil && s.Type != "redis" {
			errs = append(errs, errors.New("store: tls is for store redis (a memory store makes no connection)"))
		}
		if s.MaxEntries < 0 {
			errs = append(errs, errors.New("store: max_entries must not be negative"))
		}
	}
	errs = append(errs, h.validateUndeclared()...) // undeclared.go
	if len(errs) > 0 {
		return fmt.Errorf("robots: %w", errors.Join(errs...))
	}
	return nil
}

// Cleanup releases the state store reference taken in Provision; the loader
// goroutines stop with the config's context.
func (h *Handler) Cleanup() error {
	unregisterHandler(h)
	h.series.release() // metrics.go
	var errs []error
	if err := h.rules.release(); err != nil {
		errs = append(errs, err)
	}
	if err := h.releaseSignatures(); err != nil {
		errs = append(errs, err)
	}
	if err := h.releaseTrap(); err != nil {
		errs = append(errs, err)
	}
	if h.releaseRanges != nil {
		if err := h.releaseRanges(); err != nil {
			errs = append(errs, err)
		}
		h.releaseRanges = nil
	}
	if h.storeKey != "" {
		_, err := storePool.Delete(h.storeKey)
		h.storeKey = ""
		if err != nil {
			errs = append(errs, fmt.Errorf("robots: releasing state store: %w", err))
		}
	}
	return errors.Join(errs...)
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("parsing network %q: %w", s, err)
		}
		if m := p.Masked(); m != p {
			// 10.1.2.3/8 is 10.0.0.0/8: a typo here would exempt a
			// whole network without a word.
			return netip.Prefix{}, fmt.Errorf("network %q has host bits set, so it means all of %s: write %s for that network, or %s/%d for the one address", s, m, m, p.Addr(), p.Addr().BitLen())
		}
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("parsing address %q: %w", s, err)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// sharedIdentifier returns one process-wide identifier, so its cache is
// shared by every handler and survives reloads.
var sharedIdentifier = sync.OnceValue(func() *agents.Identifier { return agents.NewIdentifier(0) })

// Interface guards.
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
