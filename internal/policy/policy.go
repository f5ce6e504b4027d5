// Package policy is the one decision of caddy-robots: given plain facts about
// a bot's request (the request as the client sent it, who the client is and
// how that was verified, the site's robots.txt versions and what we know of
// who fetched which, the throttle and strike state read for it, the
// handler's options and the time), it says what happens to the request and
// why. The live handler, the admin API's check, `caddy robots check` and
// `caddy robots audit` all call Assess, so they cannot disagree.
//
// Assess does no I/O, no logging and no rendering: the caller verifies the
// claim, reads the state, takes the versions snapshot, calls Assess, writes
// the state the assessment asks for (a strike, a throttle slot) and renders
// the answer from the assessment (Explain).
//
// The package imports nothing of Caddy.
package policy

import (
	"math"
	"net/netip"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/enforce/state"
)

// Action is what happens to a bot's request.
type Action uint8

// The actions.
const (
	Allow    Action = iota // served
	Block                  // refused (403, or 400/414/503 by reason)
	Throttle               // 503 with Retry-After: too fast for its Crawl-delay
	Ban                    // 403: banned after repeated strikes
)

var actionNames = [...]string{"allow", "block", "throttle", "ban"}

// String is the action's name: allow, block, throttle or ban.
func (a Action) String() string { return actionNames[a] }

// Reason is why a request was refused; None for an allowed one.
type Reason uint8

// The reasons.
const (
	None        Reason = iota
	Rule               // a robots.txt rule disallows the target: 403
	Spoofed            // the crawler's address provably is not its operator's: 403
	Unavailable        // no robots.txt was ever obtained and the source fails: 503
	Banned             // the crawler is banned: 403
	Rate               // Crawl-delay / Request-rate: 503
	BadTarget          // neither origin- nor absolute-form, or more forms than MaxForms: 400
	TooLong            // longer than MaxTargetLength: 414
	Unverified         // a claim that could not be verified, refused only by "*": 503
	Preference         // an AI usage preference excludes the crawler's purpose: 403
)

var reasonNames = [...]string{"", "rule", "spoofed", "unavailable", "ban", "rate", "target", "length", "unverified", "preference"}

// String is the reason's name as placeholders, logs and metrics show it.
func (r Reason) String() string { return reasonNames[r] }

// Reasons is the number of reasons, for tables indexed by Reason.
const Reasons = len(reasonNames)

// Actions is the number of actions, for tables indexed by Action.
const Actions = len(actionNames)

// CrawlDelay says which crawlers Crawl-delay and Request-rate are enforced on.
type CrawlDelay uint8

// The CrawlDelay modes.
const (
	CrawlDelayOn  CrawlDelay = iota // crawlers that honour it or whose habits are unknown
	CrawlDelayOff                   // nobody
	CrawlDelayAll                   // every crawler
)

// Options are the handler's settings that bear on a decision.
type Options struct {
	// Grace is how long a crawler may keep an old robots.txt (RFC 9309
	// §2.4: 24 h); a crawler whose operator documents a cache longer than
	// both Grace and RFC 9309's 24 h gets that, up to MaxGrace (and never
	// less than Grace).
	Grace time.Duration
	// MaxGrace bounds a crawler's documented robots.txt cache.
	MaxGrace time.Duration
	// CrawlDelay says whom Crawl-delay applies to.
	CrawlDelay CrawlDelay
	// Burst is how many requests may come back to back (state.Pace).
	Burst int
	// SpoofedBlock refuses provable impostors (else they are judged by "*").
	SpoofedBlock bool
	// UnavailableDisallow refuses crawlers (503) while no robots.txt was
	// ever obtained and the source fails.
	UnavailableDisallow bool
	// Preferences holds crawlers to the AI usage preferences robots.txt
	// states (preferences enforce).
	Preferences bool
	// Strikes counts refusals that break the rules under every reading as
	// strikes (strikes are on).
	Strikes bool
	// BriefFor is how long a version must have been current to earn grace
	// for every crawler; 0 means the default, BriefFor.
	BriefFor time.Duration
	// CaseInsensitive compares paths ignoring case (Unicode letters
	// included, as enforce.FoldCase folds them), for sites whose server
	// does (IIS). Assess reads the forms as given: the caller folds the
	// target (Target.FoldCase; internal/pipeline does) and parses every
	// version from a folded body (enforce.FoldCaseBytes).
	CaseInsensitive bool
}

// Version is one robots.txt version as a site served it. Immutable.
type Version struct {
	// Robots is the parsed file.
	Robots *enforce.Robots
	// ID is the short content hash that names the version.
	ID string
	// From is when it became current; Until when a newer one replaced it
	// (zero while current).
	From, Until time.Time
}

// BriefFor is how long a version must have been current to earn grace for
// every crawler. A version current for less (a broken file live for
// seconds, a deploy's 404) earns it only for the crawlers seen fetching
// /robots.txt while it was current: nobody else can hold it.
const BriefFor = 10 * time.Minute

// FetchLead is how long before a version became current a crawler's fetch
// of /robots.txt may already have received it: with source site, a 200
// for /robots.txt passing through the handler prompts the loader to load
// the file again, so the crawler whose fetch brought the news holds the
// new body before the site's table publishes it, up to one load later (a
// load is bounded by fetch_timeout, at most a minute). A brief version
// counts for the crawlers seen fetching from FetchLead before it became
// current until it was replaced.
const FetchLead = time.Minute

// Site is what is known of the site's robots.txt when the request is judged.
type Site struct {
	// Versions are the versions a crawler may still hold, newest first.
	// Empty: no copy was ever obtained (see Unavailable), or none yet.
	Versions []*Version
	// Unavailable is set while no copy was ever obtained because the source
	// fails (5xx, timeout, unreachable).
	Unavailable bool
	// FetchedAt is when this crawler was last seen fetching /robots.txt
	// (zero: never). A version replaced before that no longer earns grace;
	// a brief version (see BriefFor) earns it only when FetchedAt falls
	// while it was current (or just before: FetchLead). It matters only with more than one version.
	FetchedAt time.Time
	// StrikeWindow is how far back a version served still excuses a strike
	// (a crawler running several processes updates them one by one);
	// StrikeWindow is used when zero.
	StrikeWindow time.Duration
}

// StrikeWindow is how far back a robots.txt version still excuses a
// request: RFC 9309 §2.4 lets a crawler keep its copy for 24 hours, and a
// crawler running several processes updates them one by one.
const StrikeWindow = 24 * time.Hour

// Client is who sent the request, as the caller established it.
type Client struct {
	// Agent is the identified client (a bot: browsers are never judged).
	Agent *agents.Agent
	// Addr is the client address (after trusted proxies).
	Addr netip.Addr
	// Verdict is the verification's result: Verified (published ranges,
	// reverse DNS or a Web Bot Auth signature), Spoofed or Unverified (no
	// way to verify, or verification did not finish).
	Verdict agents.Verdict
	// Signer is the Web Bot Auth agent that signed the request, "" for a
	// crawler known by its User-Agent.
	Signer string
	// Undeclared, for a client judged as an undeclared crawler, is the
	// name its state is kept under (agents.ClaimEntry.StateName): the
	// claimed browser and a digest of its whole User-Agent, so that the
	// state is the client's own and never a browser family's.
	Undeclared string
	// RulesOnly is set for a request that carries every header its claimed
	// browser sends, from a client judged only because of a trap mark on
	// its address and User-Agent: a person on that address may send the
	// very same User-Agent, so the request is judged by robots.txt's rules
	// alone, without throttle, strike or ban.
	RulesOnly bool
}

// Who is the identity a request's state is kept under, derived from the
// client alone (see Identify): what the caller needs to read and write the
// state before and after Assess.
type Who struct {
	// Name is the name budgets, strikes and fetches are kept under: the
	// crawler's most specific token, else its name; "sig:<agent>" for a
	// signed agent.
	Name string
	// Tokens are the tokens the request is judged by (nil for a spoofed
	// claim), and Wildcard whether the "*" group applies.
	Tokens   []string
	Wildcard bool
	// Verified is the verdict Verified.
	Verified bool
	// Claim is set for a claim of a verifiable crawler that could not be
	// verified: it gets nothing more lenient than "*" gives.
	Claim bool
	// Rotating is set, by the caller, for an unverified name that is
	// unproven on an address seen presenting many names (state.Rotations):
	// its Crawl-delay budget is one of the address's pools, Pool (see
	// StateName, ThrottlePace); its strikes and bans stay its own.
	Rotating bool
	// Pool is the name of that pool (state.Rotations.Pool: the pool of
	// the client's shape, or the overflow pool); "" is RotationName.
	Pool string
	// RulesOnly is Client.RulesOnly: robots.txt's rules apply, no
	// throttle, strike or ban.
	RulesOnly bool
}

// Identify derives the identity of the client's request.
func Identify(c *Client) (w Who) {
	a := c.Agent
	w.Name, w.Tokens = a.Name, a.Tokens
	if c.Verdict == agents.Spoofed {
		w.Tokens = nil
	} else if len(a.Tokens) > 0 {
		w.Name = a.Tokens[0]
	}
	w.Wildcard = c.Verdict == agents.Spoofed || !a.Profile.IgnoresWildcard
	w.Verified = c.Verdict == agents.Verified
	w.Claim = c.Signer == "" && a.Profile.Verify != "" && c.Verdict == agents.Unverified
	if c.Signer != "" {
		// A signing agent's budget and bans are its own, apart from any
		// crawler that shares its token.
		w.Name = "sig:" + c.Signer
	}
	if c.Undeclared != "" {
		w.Name = c.Undeclared
	}
	w.RulesOnly = c.RulesOnly
	return w
}

// Facts are everything a decision depends on.
type Facts struct {
	// Target is the request as sent: its method and target, with the
	// target's forms.
	Target *Target
	// Client is who asks, and Who its identity (Identify(Client)).
	Client *Client
	Who    *Who
	// Site is the robots.txt the site serves.
	Site *Site
	// Ban is the ban state read for Who; nil when strikes are off or
	// nobody is banned. (A pointer: Assess copies nothing that holds a
	// pointer out of Facts itself, so a caller's facts can stay on its
	// stack.)
	Ban *state.BanResult
	// Now is the time of the decision. A decision needs it only when the
	// site has more than one version (grace) or a ban is in force
	// (NeedsTime), so a caller may leave it zero otherwise and spare an
	// allowed request the clock read.
	Now time.Time
}

// Assessment is the outcome of Assess: what happens to the request and
// everything that explains it. Callers treat it as immutable once Assess
// (and, for a throttled request, Throttled) returned it.
type Assessment struct {
	// Action is what happens; Reason why (None for Allow).
	Action Action
	Reason Reason
	// Verdict is the client's verification verdict.
	Verdict agents.Verdict
	// Token is the token whose group was selected: an index into the
	// agent's Tokens, TokenWildcard or TokenNone.
	Token int32
	// Decision is the current version's decision on the target (group and
	// rule; for a refusal by rule, on the first form it refuses).
	Decision enforce.Decision
	// Version is the current version; nil when none applies.
	Version *Version
	// RefusedForm is the index in Target.Forms of the form a rule or
	// preference refused (0: the target as sent, -1: none).
	RefusedForm int
	// Strike reports that the refusal counts as a strike (the caller
	// records it); NoStrike, for a refusal by rule that does not, says why.
	Strike   bool
	NoStrike string
	// Interval is the Crawl-delay / Request-rate that applies to the
	// crawler (0: none, or not enforced on it), from RateGroup.
	Interval  time.Duration
	RateGroup *enforce.Group
	// Pace is set when the request spends the crawler's throttle budget:
	// the caller asks the store (ThrottlePace) and applies the answer with
	// Throttled.
	Pace bool
	// RetryAfter is how long to wait: the throttle's, the ban's remaining
	// time, or the retry time of a temporary refusal.
	RetryAfter time.Duration
	// Preference is the AI usage preference that refused the request
	// (Reason Preference).
	Preference enforce.Refusal
	// BanUntil is when the ban ends (Reason Banned).
	BanUntil time.Time
	// Retry reports a throttled request that came back inside its own
	// Retry-After (set by Throttled).
	Retry bool
}

// The values of Assessment.Token that are not an index into the tokens.
const (
	TokenWildcard = -1 // the "*" group
	TokenNone     = -2 // no group applies
)

// RulesOnlyExcuse is why a refusal of a RulesOnly request is not a
// strike.
const RulesOnlyExcuse = "this request carries every header of the browser its User-Agent names; another client with the same User-Agent on this address took the trap, so only robots.txt's rules apply to it"

// RetryUnavailable is the Retry-After of a temporary refusal: robots.txt
// unavailable, or a claim whose verification is pending.
const RetryUnavailable = 30 * time.Second

// rfcCacheTTL is how long RFC 9309 §2.4 lets any crawler keep robots.txt,
// and the RobotsCacheTTL of every profile whose operator documents nothing
// else: only a longer one is a documented longer cache that extends the
// site's grace (a shorter grace, which the site chose, applies to the rest).
const rfcCacheTTL = 24 * time.Hour

// noInterval marks "no Crawl-delay applies" while versions are compared.
const noInterval = time.Duration(math.MaxInt64)

// Assess decides a bot's request. It reads nothing but f and o, and
// changes neither: the assessment is its return value.
//
// The order is fixed: /robots.txt (always allowed); a target no bot may
// send (400, 414); a provable impostor (with spoofed block); a ban; a site
// whose robots.txt was never obtained; then the rules of every version the
// crawler may still hold (it is refused only if all of them refuse it, on
// any form of the target); the AI usage preferences (with preferences
// enforce); the "*" group for a claim that could not be verified; and last
// the crawler's pace.
func Assess(f *Facts, o *Options) Assessment {
	a := Assessment{Action: Allow, Token: TokenNone, RefusedForm: -1, Verdict: f.Client.Verdict}
	if a.before(f, o) {
		return a
	}
	site, who := f.Site, f.Who
	if len(site.Versions) == 0 {
		if site.Unavailable && o.UnavailableDisallow {
			a.Action, a.Reason, a.RetryAfter = Block, Unavailable, RetryUnavailable
		}
		return a
	}
	// A claim that could not be verified, and a provable impostor judged by
	// "*" (spoofed wildcard), have not earned the habits the claimed
	// crawler's profile documents: no longer cache, no exemption from
	// Crawl-delay.
	unproven := who.Claim || a.Verdict == agents.Spoofed
	forms := f.Target.Forms()
	r := a.readVersions(f, forms, graceFor(f.Client.Agent, o, unproven), o.BriefFor)
	switch {
	case r.refusedByAll:
		a.Action, a.Reason = Block, Rule
		// A 403 protects the site, so it follows the strictest reading; a
		// strike punishes the crawler, so it needs a violation under every
		// reading and every version served within the strike window.
		a.NoStrike = strikeExcuse(site, who, forms, f.Now)
		if who.RulesOnly && a.NoStrike == "" {
			a.NoStrike = RulesOnlyExcuse
		}
		a.Strike = o.Strikes && a.NoStrike == ""
		return a
	case o.Preferences && a.Version.Robots.HasPreferences():
		if ref, form, ok := preferenceRefusal(a.Version.Robots, r.current, who.Tokens, forms, string(f.Client.Agent.Purpose)); ok {
			a.Action, a.Reason, a.Preference, a.RefusedForm = Block, Preference, ref, form
			return a
		}
	}
	if r.starRefusedByAll {
		// Only "*" refuses: a real crawler whose verification is pending
		// comes back later and is never struck.
		a.Action, a.Reason, a.RetryAfter = Block, Unverified, RetryUnavailable
		return a
	}
	if r.interval > 0 && r.interval != noInterval && !who.RulesOnly && throttles(o.CrawlDelay, &f.Client.Agent.Profile, unproven) {
		a.Interval, a.RateGroup, a.Pace = r.interval, r.rateGroup, true
	}
	return a
}

// before decides what is decided before any robots.txt is read: a target
// that is /robots.txt, bad or too long, a provable impostor, a ban. It
// reports whether it decided.
func (a *Assessment) before(f *Facts, o *Options) bool {
	t := f.Target
	switch {
	case t.IsRobotsTxt():
		return true // always served, to everyone, even to banned bots
	case t.Bad || t.overflow:
		a.Action, a.Reason = Block, BadTarget
	case len(t.Raw) > MaxTargetLength:
		a.Action, a.Reason = Block, TooLong
	case a.Verdict == agents.Spoofed && o.SpoofedBlock:
		a.Action, a.Reason = Block, Spoofed
	case f.Ban != nil && f.Ban.Banned && !f.Who.RulesOnly:
		a.Action, a.Reason, a.BanUntil = Ban, Banned, f.Ban.Until
		a.RetryAfter = f.Ban.Until.Sub(f.Now)
	default:
		return false
	}
	return true
}

// graceFor is how long the crawler may keep an old robots.txt: the site's
// grace, or the longer cache the crawler's operator documents (up to
// MaxGrace) for a crawler whose identity is established.
func graceFor(ag *agents.Agent, o *Options, unproven bool) time.Duration {
	grace := o.Grace
	if ttl := ag.Profile.RobotsCacheTTL; grace > 0 && ttl > max(grace, rfcCacheTTL) && !unproven {
		grace = max(grace, min(ttl, o.MaxGrace))
	}
	return grace
}

// readings is what the versions a crawler may hold say of a request.
type readings struct {
	// refusedByAll: every version refuses the target (on some form);
	// starRefusedByAll: for an unverified claim, the "*" group of every
	// version refuses it.
	refusedByAll, starRefusedByAll bool
	// interval is the most lenient rate of those versions (noInterval:
	// none), set by rateGroup.
	interval  time.Duration
	rateGroup *enforce.Group
	// current is the group the current version selects.
	current *enforce.Group
}

// readVersions judges the forms by every version the crawler may still
// hold, and sets a's decision, version, refused form and token from the
// current one.
func (a *Assessment) readVersions(f *Facts, forms []string, grace, brief time.Duration) readings {
	site, who := f.Site, f.Who
	r := readings{refusedByAll: true, starRefusedByAll: who.Claim, interval: noInterval}
	for i, v := range site.Versions {
		if i > 0 {
			hold, older := mayHold(site, v, grace, brief, f.Now)
			if !older {
				break
			}
			if !hold {
				continue
			}
		}
		g, ti := v.Robots.SelectIndex(who.Tokens, who.Wildcard)
		d, form := DecideForms(g, forms)
		if i == 0 {
			r.current = g
			a.current(v, g, ti, d, form)
		}
		if d.Allowed {
			r.refusedByAll = false
		}
		iv, ig := g.Interval(), g
		if who.Claim {
			// An unverified claim is also judged by "*", and keeps the
			// stricter of the two rates.
			gs, _ := v.Robots.SelectIndex(nil, true)
			if gs != g {
				if ds, _ := DecideForms(gs, forms); ds.Allowed {
					r.starRefusedByAll = false
				}
				if siv := gs.Interval(); siv > iv {
					iv, ig = siv, gs
				}
			} else if d.Allowed {
				r.starRefusedByAll = false
			}
		}
		// The most lenient version the crawler may hold sets the rate.
		if iv < r.interval {
			r.interval, r.rateGroup = iv, ig
		}
	}
	return r
}

// current sets a's decision, version, refused form and token from the
// current version v, whose group g (token index ti) decided d on form.
func (a *Assessment) current(v *Version, g *enforce.Group, ti int, d enforce.Decision, form int) {
	a.Decision, a.Version = d, v
	if !d.Allowed {
		a.RefusedForm = form
	}
	switch {
	case ti >= 0:
		a.Token = int32(ti)
	case g != nil:
		a.Token = TokenWildcard
	}
}

// NeedsTime reports whether a decision on a site with the given number of
// versions, with or without a ban in force, reads Facts.Now.
func NeedsTime(versions int, banned bool) bool { return versions > 1 || banned }

// TokenName is the token whose group was selected, among tokens (the
// Who's): "*" for the wildcard group, "" when none applies.
func (a *Assessment) TokenName(tokens []string) string {
	switch {
	case a.Token == TokenWildcard:
		return "*"
	case a.Token < 0 || int(a.Token) >= len(tokens):
		return ""
	}
	return tokens[a.Token]
}

// StarJudged reports whether the request was judged by the "*" group (or
// by none): its throttle and strike state belong to its address rather than
// to a token it chose.
func (a *Assessment) StarJudged() bool { return a.Token < 0 }

// Throttled applies the store's answer to a request that spent its
// throttle budget (Pace set) and returns the completed assessment.
func (a Assessment) Throttled(res state.ThrottleResult) Assessment {
	if !a.Pace || res.Allowed {
		return a
	}
	a.Action, a.Reason, a.RetryAfter, a.Retry = Throttle, Rate, res.RetryAfter, res.Retry
	return a
}

// Refused reports whether the request is refused (in enforce mode).
func (a *Assessment) Refused() bool { return a.Action != Allow }

// mayHold reports whether the crawler may still hold a replaced version v:
// within its grace window, unless it was seen fetching /robots.txt after v
// was replaced; a brief version only when it was seen fetching it while v
// was current. older reports whether an older version may still be held at
// all: versions are newest first, so once one is past the grace window or
// was replaced before the crawler's last fetch, so are all older ones.
func mayHold(site *Site, v *Version, grace, brief time.Duration, now time.Time) (hold, older bool) {
	if now.Sub(v.Until) > grace || !v.Until.After(site.FetchedAt) {
		return false, false
	}
	if brief == 0 {
		brief = BriefFor
	}
	if v.Until.Sub(v.From) < brief {
		return !site.FetchedAt.Before(v.From.Add(-FetchLead)), true
	}
	return true, true
}

// throttles says whether Crawl-delay / Request-rate is enforced on a crawler
// with profile p. unproven is set for a client whose identity is not
// established (a claim that could not be verified, or a spoofed one): it
// has not earned the habits its profile documents, so it is paced like a
// crawler whose habits are unknown; with crawl_delay off, like everyone,
// it is not paced at all.
func throttles(mode CrawlDelay, p *agents.Profile, unproven bool) bool {
	switch mode {
	case CrawlDelayOff:
		return false
	case CrawlDelayAll:
		return true
	}
	return unproven || p.CrawlDelay != agents.SupportNo || p.RequestRate == agents.SupportYes
}

// DecideForms decides every form of a target against g: the target is
// allowed only if every form is. It returns the decision of the first
// refused form (or of the first form when all are allowed) and that form's
// index.
func DecideForms(g *enforce.Group, forms []string) (enforce.Decision, int) {
	d := g.Decide(forms[0])
	if !d.Allowed {
		return d, 0
	}
	for i, f := range forms[1:] {
		if df := g.Decide(f); !df.Allowed {
			return df, i + 1
		}
	}
	return d, 0
}

// strikeExcuse says why a refused request is no strike, or "" when it is
// one: it must be disallowed, on some form, by every version served within
// the strike window (whether or not the crawler fetched a newer one since),
// under every reading real crawlers use (RFC 9309, the 1994 standard,
// Google's).
func strikeExcuse(site *Site, who *Who, forms []string, now time.Time) string {
	window := site.StrikeWindow
	if window == 0 {
		window = StrikeWindow
	}
	for i, v := range site.Versions {
		if i > 0 && now.Sub(v.Until) > window {
			break
		}
		g, _ := v.Robots.SelectIndex(who.Tokens, who.Wildcard)
		d, form := DecideForms(g, forms)
		if d.Allowed {
			if i == 0 {
				return ""
			}
			return "robots.txt version " + v.ID + ", served until " + v.Until.UTC().Format(time.RFC3339) +
				", allows this path, and a crawler may hold it for 24 hours"
		}
		if rd := v.Robots.Readings(who.Tokens, who.Wildcard, forms[form]); !rd.Unambiguous {
			return rd.Why
		}
	}
	return ""
}

// preferenceRefusal returns the refusal of a crawler whose purpose the
// preference for some form of the target excludes, the index of that form,
// and whether there is one. g is the group selected for the crawler; when
// none applies, the file-level Content-Signal pairs do.
func preferenceRefusal(r *enforce.Robots, g *enforce.Group, tokens []string, forms []string, purpose string) (enforce.Refusal, int, bool) {
	if purpose == "" {
		return enforce.Refusal{}, -1, false
	}
	for i, f := range forms {
		var p enforce.Preferences
		if g != nil {
			p = g.Preferences(f)
		} else {
			p = r.Preferences(tokens, f)
		}
		if p.IsZero() {
			continue
		}
		if ref, ok := p.Refuses(purpose); ok {
			return ref, i, true
		}
	}
	return enforce.Refusal{}, -1, false
}
