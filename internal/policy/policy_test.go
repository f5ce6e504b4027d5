package policy_test

// These tables are the specification of the rules a bot's request is judged
// by. Each row is one sentence: a crawler, a robots.txt (or a history of
// versions), a request, and what happens to it: the action and reason, the
// group and rule that decided (by line), the form refused, whether it is a
// strike (and if not, why), the token whose group was chosen, and the pace.

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// now is the time of every decision.
var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// Real User-Agents, identified by the agents catalogue.
const (
	googlebot      = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	googlebotImage = "Googlebot-Image/1.0"
	applebot       = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)"
	adsbot         = "AdsBot-Google (+http://www.google.com/adsbot.html)"
	gptbot         = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
	oaiSearchBot   = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot"
	bingbot        = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36"
	exampleBot     = "ExampleCrawler/1.0 (+https://example.com/bot)" // unknown: no documented habits, no way to verify
)

// The tokens of the rows: an index into the crawler's tokens, or one of these.
const (
	wild = policy.TokenWildcard
	none = policy.TokenNone
)

// How the client's claim was verified, when not as the crawler's profile
// allows (Verified for a verifiable crawler, Unverified for the others).
const (
	unverified = "unverified" // the verification could not finish
	spoofed    = "spoofed"    // the address provably is not the operator's
)

// row is one case: the facts of a request and what must happen to it.
type row struct {
	name string
	// robots is the site's only robots.txt version (unused when site is set).
	robots string
	site   *policy.Site
	ua     string
	claim  string        // "", unverified or spoofed
	ttl    time.Duration // the crawler's documented robots.txt cache, when set
	method string        // GET when empty
	target string
	// rewrites are the X-Original-URL, X-Rewrite-URL and X-Forwarded-Prefix values.
	rewrites []string
	ban      *state.BanResult
	opts     func(*policy.Options)
	want     want
}

// want is what must happen.
type want struct {
	action   policy.Action
	reason   policy.Reason
	group    int // line of the selected group's first user-agent line; 0: none
	rule     int // line of the rule that decided; 0: none
	form     int // RefusedForm
	strike   bool
	noStrike string // a part of NoStrike; "": NoStrike is empty
	token    int32
	interval time.Duration
	pace     bool
	retry    time.Duration
	pref     string // a part of the refusing preference
}

// allowed: served, judged by the group at line group, chosen by token.
func allowed(group int, token int32) want {
	return want{action: policy.Allow, group: group, token: token, form: -1}
}

// refused: 403 by the rule at line rule of the group at line group, on
// the target as sent (see at).
func refused(group, rule int, token int32) want {
	return want{action: policy.Block, reason: policy.Rule, group: group, rule: rule, token: token}
}

// blocked: refused for reason r before any group was chosen.
func blocked(r policy.Reason) want {
	return want{action: policy.Block, reason: r, token: none, form: -1}
}

func (w want) struck() want                   { w.strike = true; return w }
func (w want) excused(why string) want        { w.noStrike = why; return w }
func (w want) at(form int) want               { w.form = form; return w }
func (w want) by(rule int) want               { w.rule = rule; return w }
func (w want) paced(d time.Duration) want     { w.interval, w.pace = d, true; return w }
func (w want) after(d time.Duration) want     { w.retry = d; return w }
func (w want) in(group int, token int32) want { w.group, w.token = group, token; return w }
func (w want) preferring(pref string) want    { w.pref = pref; return w }

// Option changes for a row.
func strikesOff(o *policy.Options)      { o.Strikes = false }
func spoofedWildcard(o *policy.Options) { o.SpoofedBlock = false }
func unavailableAllow(o *policy.Options) {
	o.UnavailableDisallow = false
}
func preferencesEnforce(o *policy.Options) { o.Preferences = true }
func crawlDelay(m policy.CrawlDelay) func(*policy.Options) {
	return func(o *policy.Options) { o.CrawlDelay = m }
}
func grace(g, maxGrace time.Duration) func(*policy.Options) {
	return func(o *policy.Options) { o.Grace, o.MaxGrace = g, maxGrace }
}

// options are the handler's defaults, with strikes on.
func options() policy.Options {
	return policy.Options{
		Grace: 24 * time.Hour, MaxGrace: 7 * 24 * time.Hour, CrawlDelay: policy.CrawlDelayOn, Burst: 4,
		SpoofedBlock: true, UnavailableDisallow: true, Strikes: true,
	}
}

// Versions of a site's robots.txt. A version lived 30 days unless brief.
func version(body string, from, until time.Time) *policy.Version {
	h := fnv.New32a()
	h.Write([]byte(body))
	return &policy.Version{Robots: enforce.Parse([]byte(body)), ID: fmt.Sprintf("%08x", h.Sum32()), From: from, Until: until}
}

// current is the version served now.
func current(body string) *policy.Version {
	return version(body, now.Add(-30*24*time.Hour), time.Time{})
}

// replaced is a version replaced ago.
func replaced(body string, ago time.Duration) *policy.Version {
	return version(body, now.Add(-ago-30*24*time.Hour), now.Add(-ago))
}

// brief is a version replaced ago after 5 minutes as the current one
// (shorter than policy.BriefFor).
func brief(body string, ago time.Duration) *policy.Version {
	return version(body, now.Add(-ago-5*time.Minute), now.Add(-ago))
}

// history is a site serving versions, newest first.
func history(vs ...*policy.Version) *policy.Site { return &policy.Site{Versions: vs} }

// fetched says the crawler was last seen fetching /robots.txt ago.
func fetched(s *policy.Site, ago time.Duration) *policy.Site {
	s.FetchedAt = now.Add(-ago)
	return s
}

// fetchedDuring says the crawler was last seen fetching /robots.txt while
// version held was current (none given: never seen fetching it).
func fetchedDuring(s *policy.Site, held ...int) *policy.Site {
	if len(held) > 0 {
		v := s.Versions[held[0]]
		s.FetchedAt = v.From.Add(v.Until.Sub(v.From) / 2)
	}
	return s
}

// fetchedBefore sets the crawler's last fetch of /robots.txt to d before
// version held became current: a fetch that brought a new body a moment
// before the loader published it.
func fetchedBefore(s *policy.Site, held int, d time.Duration) *policy.Site {
	s.FetchedAt = s.Versions[held].From.Add(-d)
	return s
}

// bannedFor is a ban that ends in d.
func bannedFor(d time.Duration) *state.BanResult {
	return &state.BanResult{Banned: true, Until: now.Add(d), Strikes: 10}
}

// facts builds the facts of r as the handler does.
func (r *row) facts(tb testing.TB) *policy.Facts {
	tb.Helper()
	ag := agents.Identify(r.ua)
	if !ag.Bot {
		tb.Fatalf("%q is not a bot", r.ua)
	}
	if r.ttl != 0 {
		ag.Profile.RobotsCacheTTL = r.ttl
	}
	c := &policy.Client{Agent: &ag, Verdict: agents.Unverified}
	c.Addr.UnmarshalText([]byte("192.0.2.7"))
	switch {
	case r.claim == spoofed:
		c.Verdict = agents.Spoofed
	case r.claim == "" && ag.Profile.Verify != "":
		c.Verdict = agents.Verified
	}
	method := r.method
	if method == "" {
		method = "GET"
	}
	t := policy.ParseTarget(method, r.target, r.rewrites...)
	who := policy.Identify(c)
	site := r.site
	if site == nil {
		site = history(current(r.robots))
	}
	return &policy.Facts{Target: &t, Client: c, Who: &who, Site: site, Ban: r.ban, Now: now}
}

// assess judges r.
func (r *row) assess(tb testing.TB) (policy.Assessment, *policy.Facts) {
	tb.Helper()
	f := r.facts(tb)
	o := options()
	if r.opts != nil {
		r.opts(&o)
	}
	return policy.Assess(f, &o), f
}

// run checks every row.
func run(t *testing.T, rows []row) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			a, f := r.assess(t)
			r.want.check(t, &a, f)
		})
	}
}

// check compares everything the row states.
func (w want) check(t *testing.T, a *policy.Assessment, f *policy.Facts) {
	t.Helper()
	got := want{
		action: a.Action, reason: a.Reason, form: a.RefusedForm, strike: a.Strike, noStrike: a.NoStrike,
		token: a.Token, interval: a.Interval, pace: a.Pace, retry: a.RetryAfter,
	}
	if g := a.Decision.Group; g != nil {
		got.group = g.Line
	}
	if r := a.Decision.Rule; r != nil {
		got.rule = r.Line
	}
	if a.Reason == policy.Preference {
		got.pref = a.Preference.String()
	}
	if w.noStrike != "" && strings.Contains(got.noStrike, w.noStrike) {
		got.noStrike = w.noStrike
	}
	if w.pref != "" && strings.Contains(got.pref, w.pref) {
		got.pref = w.pref
	}
	if got != w {
		t.Errorf("target %q, forms %q:\n got %s\nwant %s", f.Target.Raw, f.Target.Forms(), describe(got), describe(w))
	}
	// Every refusal explains itself; an allowed request has nothing to say.
	if text := policy.Explain(a, f, "example.com"); (text == "") != (a.Action == policy.Allow) {
		t.Errorf("%s, yet Explain says %q", a.Action, text)
	}
	if a.Refused() != (a.Action != policy.Allow) {
		t.Errorf("Refused() = %v for %s", a.Refused(), a.Action)
	}
}

func describe(w want) string {
	s := fmt.Sprintf("%s/%s group=%d rule=%d form=%d token=%d", w.action, w.reason, w.group, w.rule, w.form, w.token)
	if w.strike {
		s += " strike"
	}
	if w.noStrike != "" {
		s += fmt.Sprintf(" noStrike=%q", w.noStrike)
	}
	if w.interval != 0 || w.pace {
		s += fmt.Sprintf(" interval=%s pace=%v", w.interval, w.pace)
	}
	if w.retry != 0 {
		s += fmt.Sprintf(" retry=%s", w.retry)
	}
	if w.pref != "" {
		s += fmt.Sprintf(" pref=%q", w.pref)
	}
	return s
}

// groups: a crawler's own group, "*", and a group for a crawler that
// ignores "*" by design.
const groups = `User-agent: *
Disallow: /private/

User-agent: Googlebot
Disallow: /google-only/

User-agent: AdsBot-Google
Disallow: /ads/
`

// groupsNoAds: no group names AdsBot-Google.
const groupsNoAds = `User-agent: *
Disallow: /private/

User-agent: Googlebot
Disallow: /google-only/
`

// groupsOwn: Googlebot-Image and Applebot have groups of their own (lines 10, 13).
const groupsOwn = groups + `
User-agent: Googlebot-Image
Disallow: /images/

User-agent: Applebot
Disallow: /apple/
`

// precedence: longest match wins, allow wins ties.
const precedence = `User-agent: *
Disallow: /private/
Allow: /private/public/
Disallow: /private/public/secret
Allow: /tie/
Disallow: /tie/
Disallow: /*.pdf$
`

const disallowAll = "User-agent: *\nDisallow: /\n"

func TestGroupChoice(t *testing.T) {
	run(t, []row{
		{name: "a crawler no group names is judged by *", robots: groups, ua: exampleBot, target: "/private/x", want: refused(1, 2, wild).struck()},
		{name: "a crawler's own group is chosen over *", robots: groups, ua: googlebot, target: "/private/x", want: allowed(4, 0)},
		{name: "a crawler's own group refuses what it names", robots: groups, ua: googlebot, target: "/google-only/x", want: refused(4, 5, 0).struck()},
		{name: "* never applies to a crawler that has its own group", robots: groups, ua: exampleBot, target: "/google-only/x", want: allowed(1, wild)},
		{name: "Googlebot-Image falls back to Googlebot's group", robots: groups, ua: googlebotImage, target: "/google-only/x", want: refused(4, 5, 1).struck()},
		{name: "Googlebot-Image reads its own group first", robots: groupsOwn, ua: googlebotImage, target: "/images/a.png", want: refused(10, 11, 0).excused("reads the first matching record (line 4)")},
		{name: "Googlebot-Image with its own group ignores Googlebot's", robots: groupsOwn, ua: googlebotImage, target: "/google-only/x", want: allowed(10, 0)},
		{name: "Applebot reads Googlebot's group when none names Applebot", robots: groups, ua: applebot, target: "/google-only/x", want: refused(4, 5, 1).struck()},
		{name: "Applebot reads its own group when one names it", robots: groupsOwn, ua: applebot, target: "/apple/x", want: refused(13, 14, 0).struck()},
		{name: "Applebot with its own group ignores Googlebot's", robots: groupsOwn, ua: applebot, target: "/google-only/x", want: allowed(13, 0)},
		{name: "AdsBot-Google with its own group is judged by it", robots: groups, ua: adsbot, target: "/ads/x", want: refused(7, 8, 0).struck()},
		{name: "AdsBot-Google with its own group ignores *", robots: groups, ua: adsbot, target: "/private/x", want: allowed(7, 0)},
		{name: "AdsBot-Google without its own group ignores * by design", robots: groupsNoAds, ua: adsbot, target: "/private/x", want: allowed(0, none)},
		{name: "AdsBot-Google under Disallow: / for * alone is allowed", robots: disallowAll, ua: adsbot, target: "/x", want: allowed(0, none)},
		{name: "a site without any group allows everything", robots: "Sitemap: https://example.com/s.xml\n", ua: exampleBot, target: "/private/x", want: allowed(0, none)},
		{name: "the longest match wins: a longer Allow", robots: precedence, ua: exampleBot, target: "/private/public/a", want: allowed(1, wild).by(3)},
		{name: "the longest match wins: a longer Disallow", robots: precedence, ua: exampleBot, target: "/private/public/secret.html", want: refused(1, 4, wild).struck()},
		{name: "the shorter rule decides where the longer does not match", robots: precedence, ua: exampleBot, target: "/private/x", want: refused(1, 2, wild).struck()},
		{name: "allow wins a tie of equal length", robots: precedence, ua: exampleBot, target: "/tie/x", want: allowed(1, wild).by(5)},
		{name: "a path no rule matches is allowed", robots: precedence, ua: exampleBot, target: "/public/x", want: allowed(1, wild)},
		{name: "/robots.txt is always allowed", robots: disallowAll, ua: exampleBot, target: "/robots.txt", want: allowed(0, none)},
		{name: "/robots.txt is allowed whatever its query", robots: disallowAll, ua: exampleBot, target: "/robots.txt?x=1", want: allowed(0, none)},
		{name: "/robots.txt is allowed in absolute form", robots: disallowAll, ua: exampleBot, target: "http://example.com/robots.txt", want: allowed(0, none)},
		{name: "/robots.txt is allowed to a banned bot", robots: disallowAll, ua: exampleBot, target: "/robots.txt", ban: bannedFor(time.Hour), want: allowed(0, none)},
		{name: "/robots.txt is allowed to a spoofed claim", robots: disallowAll, ua: googlebot, claim: spoofed, target: "/robots.txt", want: allowed(0, none)},
		{name: "/robots.txt is allowed while robots.txt is unavailable", site: &policy.Site{Unavailable: true}, ua: exampleBot, target: "/robots.txt", want: allowed(0, none)},
		{name: "http://host?/robots.txt asks for /, not for robots.txt", robots: disallowAll, ua: exampleBot, target: "http://example.com?/robots.txt", want: refused(1, 2, wild).struck()},
		{name: "/robots.txt/x is not robots.txt", robots: disallowAll, ua: exampleBot, target: "/robots.txt/x", want: refused(1, 2, wild).struck()},
	})
}

const private = "User-agent: *\nDisallow: /private/\n"

// hostile is a target with 14 distinct forms: with rewrite headers, more
// than MaxForms.
const hostile = "//%25%2f%2f%25//x\\\\y%3B?"

func TestEveryFormJudged(t *testing.T) {
	long := "/public/" + strings.Repeat("a", policy.MaxTargetLength-len("/public/"))
	run(t, []row{
		{name: "the target as sent", robots: private, ua: exampleBot, target: "/private/x", want: refused(1, 2, wild).struck()},
		{name: "an allowed target", robots: private, ua: exampleBot, target: "/public/x", want: allowed(1, wild)},
		{name: "an unreserved escape is the plain character", robots: private, ua: exampleBot, target: "/%70rivate/x", want: refused(1, 2, wild).struck()},
		{name: "a doubled slash is merged", robots: private, ua: exampleBot, target: "//private/x", want: refused(1, 2, wild).at(1).struck()},
		{name: "a dot segment is removed", robots: private, ua: exampleBot, target: "/./private/x", want: refused(1, 2, wild).at(1).struck()},
		{name: "a dot-dot segment is resolved", robots: private, ua: exampleBot, target: "/public/../private/x", want: refused(1, 2, wild).at(1).struck()},
		{name: "dot-dot segments stop at the root", robots: private, ua: exampleBot, target: "/a/../../private/x", want: refused(1, 2, wild).at(1).struck()},
		{name: "%2F is decoded as file_server decodes it", robots: private, ua: exampleBot, target: "/private%2Fx", want: refused(1, 2, wild).at(1).struck()},
		{name: "an escaped dot segment is decoded and removed", robots: private, ua: exampleBot, target: "/%2e/private/x", want: refused(1, 2, wild).at(1).struck()},
		{name: "a ;parameter is dropped as servlet containers drop it", robots: private, ua: exampleBot, target: "/private;x=1/a", want: refused(1, 2, wild).at(1).struck()},
		{name: "a backslash is a slash to servlet containers and IIS", robots: private, ua: exampleBot, target: "/private\\x", want: refused(1, 2, wild).at(1).struck()},
		{name: "backslashes throughout are slashes too", robots: private, ua: exampleBot, target: "/\\private\\x", want: refused(1, 2, wild).at(1).struck()},
		{name: "a leading //authority is removed as a URL reference reads it", robots: private, ua: exampleBot, target: "//evil.example/private/x", want: refused(1, 2, wild).at(2).struck()},
		{name: "///host is an authority to WHATWG URL parsers", robots: private, ua: exampleBot, target: "///x/private/x", want: refused(1, 2, wild).at(2).struck()},
		{name: "an absolute-form target is judged on its path", robots: private, ua: exampleBot, target: "http://example.com/private/x", want: refused(1, 2, wild).struck()},
		{name: "an absolute-form target with a dot segment", robots: private, ua: exampleBot, target: "http://example.com/public/../private/x", want: refused(1, 2, wild).at(1).struck()},
		{name: "http://host?/private/x asks for /", robots: private, ua: exampleBot, target: "http://example.com?/private/x", want: allowed(1, wild)},
		{name: "a raw # is judged as part of the path Go serves", robots: "User-agent: *\nDisallow: /a%23\n", ua: exampleBot, target: "/a#b", want: refused(1, 2, wild).at(1).struck()},
		{name: "a target that is neither a path nor an absolute URL: foo:/x", robots: private, ua: exampleBot, target: "foo:/private/x", want: blocked(policy.BadTarget)},
		{name: "an absolute URL without an authority: http:/x", robots: private, ua: exampleBot, target: "http:/private/x", want: blocked(policy.BadTarget)},
		{name: "an absolute URL with an empty authority: http:///x", robots: private, ua: exampleBot, target: "http:///private/x", want: blocked(policy.BadTarget)},
		{name: "a backslash first is not a path", robots: private, ua: exampleBot, target: "\\private\\x", want: blocked(policy.BadTarget)},
		{name: "* is a target of OPTIONS only", robots: private, ua: exampleBot, target: "*", want: blocked(policy.BadTarget)},
		{name: "OPTIONS * asks for /", robots: private, ua: exampleBot, method: "OPTIONS", target: "*", want: allowed(1, wild)},
		{name: "a target of 8 KiB is judged", robots: private, ua: exampleBot, target: long, want: allowed(1, wild)},
		{name: "a target longer than 8 KiB is refused with 414", robots: private, ua: exampleBot, target: long + "a", want: blocked(policy.TooLong)},
		{name: "X-Original-URL is judged as a form", robots: private, ua: exampleBot, target: "/public/", rewrites: []string{"/private/x", "", ""}, want: refused(1, 2, wild).at(1).struck()},
		{name: "X-Rewrite-URL is judged as a form", robots: private, ua: exampleBot, target: "/public/", rewrites: []string{"", "/private/x?y=1", ""}, want: refused(1, 2, wild).at(1).struck()},
		{name: "X-Forwarded-Prefix is prepended to the path", robots: private, ua: exampleBot, target: "/x", rewrites: []string{"", "", "/private"}, want: refused(1, 2, wild).at(1).struck()},
		{name: "a rewrite header's own forms are judged", robots: private, ua: exampleBot, target: "/public/", rewrites: []string{"/public/../private/x", "", ""}, want: refused(1, 2, wild).at(2).struck()},
		{name: "an absolute URL in X-Original-URL is judged on its path", robots: private, ua: exampleBot, target: "/public/", rewrites: []string{"http://example.com/private/x", "", ""}, want: refused(1, 2, wild).at(1).struck()},
		{name: "a request with more forms than are judged is refused as a bad target", robots: private, ua: exampleBot, target: hostile, rewrites: []string{"//a", "/private/x", ""}, want: blocked(policy.BadTarget)},
		{name: "... but /robots.txt is still served", robots: private, ua: exampleBot, target: "/robots.txt", rewrites: []string{hostile, hostile + "a", hostile + "b"}, want: allowed(0, none)},
		{name: "allowed rewrite headers leave the request allowed", robots: private, ua: exampleBot, target: "/public/", rewrites: []string{"/public/a", "/public/b", "/static"}, want: allowed(1, wild)},
	})
}

// The refusal of a form other than the target as sent names it and says
// why the server may act on it.
func TestExplainJudgedAs(t *testing.T) {
	for _, c := range []struct {
		target   string
		rewrites []string
		judged   string // the "Judged as:" line; "" when none
	}{
		{"/private/x", nil, ""},
		{"/public/../private/x", nil, "Judged as: /private/x (the path the server acts on)"},
		{"/private%2Fx", nil, "Judged as: /private/x (the path the server acts on)"},
		{"/private;x=1/a", nil, "Judged as: /private/a (the path the server acts on)"},
		{"//evil.example/private/x", nil, "Judged as: /private/x (the path a backend reading the target as a URL reference acts on)"},
		{"/public/", []string{"/private/x", "", ""}, "Judged as: /private/x (a rewrite header some backends serve instead of the path)"},
	} {
		r := row{robots: private, ua: exampleBot, target: c.target, rewrites: c.rewrites}
		a, f := r.assess(t)
		text := policy.Explain(&a, f, "")
		line := ""
		for l := range strings.SplitSeq(text, "\n") {
			if strings.HasPrefix(l, "Judged as:") {
				line = l
			}
		}
		if line != c.judged {
			t.Errorf("%q %q: %q, want %q in\n%s", c.target, c.rewrites, line, c.judged, text)
		}
		for _, must := range []string{"Group: User-agent: * (line 1)", "Rule: Disallow: /private/ (line 2)", "Version: " + f.Site.Versions[0].ID} {
			if !strings.Contains(text, must) {
				t.Errorf("%q: explanation lacks %q:\n%s", c.target, must, text)
			}
		}
		if got := a.RefusedFormText(f.Target); (got == "") != (c.judged == "") {
			t.Errorf("%q: RefusedFormText %q", c.target, got)
		}
	}
}

// The site changed /news/ from allowed (old) to disallowed (cur).
const (
	old = "User-agent: *\nDisallow: /private/\n"
	cur = "User-agent: *\nDisallow: /private/\nDisallow: /news/\n"
)

func TestGrace(t *testing.T) {
	// A request the current version refuses, allowed by grace: the
	// current version's refusal is still reported (for logs and the
	// admin check), the action is Allow.
	graced := allowed(1, wild).by(3).at(0)
	h, d := time.Hour, 24*time.Hour
	run(t, []row{
		{name: "one version refuses", site: history(current(cur)), ua: exampleBot, target: "/news/a", want: refused(1, 3, wild).struck()},
		{name: "a version replaced 2 h ago that allows it still counts", site: history(current(cur), replaced(old, 2*h)), ua: exampleBot, target: "/news/a", want: graced},
		{name: "a version replaced exactly Grace ago still counts", site: history(current(cur), replaced(old, d)), ua: exampleBot, target: "/news/a", want: graced},
		{name: "a version replaced longer ago than Grace no longer counts", site: history(current(cur), replaced(old, d+time.Second)), ua: exampleBot, target: "/news/a", want: refused(1, 3, wild).struck()},
		{name: "a version older than one past Grace no longer counts", site: history(current(cur), replaced(cur, 25*h), replaced(old, 26*h)), ua: exampleBot, target: "/news/a", want: refused(1, 3, wild).struck()},
		{name: "every version held refuses", site: history(current(cur), replaced(cur, 2*h)), ua: exampleBot, target: "/news/a", want: refused(1, 3, wild).struck()},
		{name: "a second older version held allows", site: history(current(cur), replaced(cur, h), replaced(old, 3*h)), ua: exampleBot, target: "/news/a", want: graced},
		{name: "Grace 0 judges by the current version only", site: history(current(cur), replaced(old, 2*h)), ua: exampleBot, target: "/news/a", opts: grace(0, 7*d), want: refused(1, 3, wild).excused("served until")},
		{name: "seen fetching robots.txt after the change: no grace", site: fetched(history(current(cur), replaced(old, 2*h)), h), ua: exampleBot, target: "/news/a", want: refused(1, 3, wild).excused("served until")},
		{name: "seen fetching robots.txt at the change: no grace", site: fetched(history(current(cur), replaced(old, 2*h)), 2*h), ua: exampleBot, target: "/news/a", want: refused(1, 3, wild).excused("served until")},
		{name: "seen fetching robots.txt before the change: grace", site: fetched(history(current(cur), replaced(old, 2*h)), 3*h), ua: exampleBot, target: "/news/a", want: graced},
		{name: "a brief version earns no grace for a crawler not seen fetching it", site: history(current(cur), brief(old, 2*h)), ua: exampleBot, target: "/news/a", want: refused(1, 3, wild).excused("served until")},
		{name: "a brief version earns no grace when nobody knows who fetched it", site: fetchedDuring(history(current(cur), brief(old, 2*h))), ua: exampleBot, target: "/news/a", want: refused(1, 3, wild).excused("served until")},
		{name: "a brief version earns grace for a crawler seen fetching it", site: fetchedDuring(history(current(cur), brief(old, 2*h)), 1), ua: exampleBot, target: "/news/a", want: graced},
		{name: "a brief version earns grace for the crawler whose fetch prompted its load", site: fetchedBefore(history(current(cur), brief(old, 2*h)), 1, 3*time.Second), ua: exampleBot, target: "/news/a", want: graced},
		{name: "a brief version earns no grace for a fetch well before it", site: fetchedBefore(history(current(cur), brief(old, 2*h)), 1, 2*policy.FetchLead), ua: exampleBot, target: "/news/a", want: refused(1, 3, wild).excused("served until")},
		{name: "a brief version passed over still lets an older one count", site: history(current(cur), brief(cur, h), replaced(old, 2*h)), ua: exampleBot, target: "/news/a", want: graced},
		{name: "a grace shorter than 24 h applies to a crawler of unknown habits", site: history(current(cur), replaced(old, 2*h)), ua: exampleBot, target: "/news/a", opts: grace(h, 7*d), want: refused(1, 3, wild).excused("served until")},
		{name: "a grace shorter than 24 h applies to a crawler that caches for 24 h", site: history(current(cur), replaced(old, 2*h)), ua: googlebot, target: "/news/a", opts: grace(h, 7*d), want: refused(1, 3, wild).excused("served until")},
		{name: "a grace shorter than 24 h still counts", site: history(current(cur), replaced(old, 30*time.Minute)), ua: exampleBot, target: "/news/a", opts: grace(h, 7*d), want: graced},
		{name: "a documented longer cache extends a short grace", site: history(current(cur), replaced(old, 30*h)), ua: googlebot, ttl: 72 * h, target: "/news/a", opts: grace(h, 7*d), want: graced},
		{name: "a documented cache never shortens the site's grace", site: history(current(cur), replaced(old, 30*h)), ua: googlebot, ttl: 72 * h, target: "/news/a", opts: grace(48*h, d), want: graced},
		{name: "a zero MaxGrace never takes the site's grace away", site: history(current(cur), replaced(old, 30*time.Minute)), ua: googlebot, ttl: 72 * h, target: "/news/a", opts: grace(h, 0), want: graced},
		{name: "a documented longer cache extends grace", site: history(current(cur), replaced(old, 30*h)), ua: googlebot, ttl: 72 * h, target: "/news/a", want: graced},
		{name: "a documented longer cache is bounded by MaxGrace", site: history(current(cur), replaced(old, 8*d)), ua: googlebot, ttl: 10 * d, target: "/news/a", want: refused(1, 3, wild).struck()},
		{name: "a documented cache within MaxGrace", site: history(current(cur), replaced(old, 6*d)), ua: googlebot, ttl: 10 * d, target: "/news/a", want: graced},
		{name: "an unverified claim does not get the longer cache", site: history(current(cur), replaced(old, 30*h)), ua: googlebot, claim: unverified, ttl: 72 * h, target: "/news/a", want: refused(1, 3, wild).struck()},
		{name: "a spoofed claim does not get the longer cache", site: history(current(cur), replaced(old, 30*h)), ua: googlebot, claim: spoofed, ttl: 72 * h, target: "/news/a", opts: spoofedWildcard, want: refused(1, 3, wild).struck()},
		{name: "an unverified claim gets the site's grace", site: history(current(cur), replaced(old, 2*h)), ua: googlebot, claim: unverified, target: "/news/a", want: graced},
	})
}

func TestStrikes(t *testing.T) {
	h := time.Hour
	wildcard := "User-agent: *\nDisallow: /*?q=\n"
	dollar := "User-agent: *\nDisallow: /a$\n"
	noColon := "User-agent: *\nDisallow: /private/\nAllow /private/\n"
	cutAgent := "User-agent: *\nDisallow: /private/\n\nUser-agent: ExampleCrawler/1.0\nAllow: /\n"
	run(t, []row{
		{name: "a refusal every reading shares is a strike", robots: private, ua: exampleBot, target: "/private/x", want: refused(1, 2, wild).struck()},
		{name: "a refusal of a form every reading shares is a strike", robots: private, ua: exampleBot, target: "/public/../private/x", want: refused(1, 2, wild).at(1).struck()},
		{name: "a wildcard rule is no strike: the 1994 standard has none", robots: wildcard, ua: exampleBot, target: "/search?q=x", want: refused(1, 2, wild).excused("wildcard rules are not understood")},
		{name: "a $ rule is no strike: $ is literal in the 1994 standard", robots: dollar, ua: exampleBot, target: "/a", want: refused(1, 2, wild).excused("`$` is a literal character")},
		{name: "a rule Google's parser reads otherwise is no strike", robots: noColon, ua: exampleBot, target: "/private/x", want: refused(1, 2, wild).excused("without a colon")},
		{name: "a group Google's parser gives the crawler is no strike", robots: cutAgent, ua: exampleBot, target: "/private/x", want: refused(1, 2, wild).excused("1994 standard")},
		{name: "a version served within the strike window that allows it excuses", site: fetched(history(current(cur), replaced(old, 3*h)), h), ua: exampleBot, target: "/news/a", want: refused(1, 3, wild).excused("served until 2026-11-25T09:00:00Z")},
		{name: "a version served before the strike window does not excuse", site: fetched(history(current(cur), replaced(old, 25*h)), h), ua: exampleBot, target: "/news/a", want: refused(1, 3, wild).struck()},
		{name: "the site's strike window decides how far back", site: &policy.Site{Versions: []*policy.Version{current(cur), replaced(old, 3*h)}, FetchedAt: now.Add(-h), StrikeWindow: 2 * h}, ua: exampleBot, target: "/news/a", want: refused(1, 3, wild).struck()},
		{name: "an older version that refuses ambiguously excuses", site: fetched(history(current(cur), replaced(cur+"Disallow: /*?q=\n", 3*h)), h), ua: exampleBot, target: "/search?q=x", want: allowed(1, wild)},
		{name: "strikes off: no strike", robots: private, ua: exampleBot, target: "/private/x", opts: strikesOff, want: refused(1, 2, wild)},
		{name: "strikes off: the excuse is still given", robots: wildcard, ua: exampleBot, target: "/search?q=x", opts: strikesOff, want: refused(1, 2, wild).excused("wildcard rules")},
	})
}

// claims: "*" is stricter than Googlebot's group, on paths and on rate.
const claims = `User-agent: *
Disallow: /private/
Crawl-delay: 5

User-agent: Googlebot
Disallow: /google-only/
Crawl-delay: 1
`

// claimsOld allowed /private/ to everyone.
const claimsOld = "User-agent: *\nDisallow: /other/\n\nUser-agent: Googlebot\nDisallow: /google-only/\n"

// claimsStricter: Googlebot's own Crawl-delay is the stricter.
const claimsStricter = "User-agent: *\nDisallow: /private/\nCrawl-delay: 5\n\nUser-agent: Googlebot\nDisallow: /google-only/\nCrawl-delay: 10\n"

func TestClaims(t *testing.T) {
	s := time.Second
	run(t, []row{
		{name: "a verified Googlebot is judged by its own group", robots: claims, ua: googlebot, target: "/private/x", want: allowed(5, 0)},
		{name: "an unverified Googlebot claim where only * refuses: 503, no strike", robots: claims, ua: googlebot, claim: unverified, target: "/private/x", want: blocked(policy.Unverified).in(5, 0).after(30 * s)},
		{name: "an unverified claim where its own group refuses: refused by rule", robots: claims, ua: googlebot, claim: unverified, target: "/google-only/x", want: refused(5, 6, 0).struck()},
		{name: "an unverified claim allowed by both groups keeps the stricter Crawl-delay", robots: claims, ua: googlebot, claim: unverified, target: "/public/x", want: allowed(5, 0).paced(5 * s)},
		{name: "crawl_delay off paces no claim either", robots: claims, ua: googlebot, claim: unverified, target: "/public/x", opts: crawlDelay(policy.CrawlDelayOff), want: allowed(5, 0)},
		{name: "crawl_delay all paces a claim by the stricter Crawl-delay", robots: claims, ua: googlebot, claim: unverified, target: "/public/x", opts: crawlDelay(policy.CrawlDelayAll), want: allowed(5, 0).paced(5 * s)},
		{name: "an unverified claim whose own Crawl-delay is stricter keeps it", robots: claimsStricter, ua: googlebot, claim: unverified, target: "/x", want: allowed(5, 0).paced(10 * s)},
		{name: "an unverified claim where only * refuses, in every form", robots: claims, ua: googlebot, claim: unverified, target: "/public/../private/x", want: blocked(policy.Unverified).in(5, 0).after(30 * s)},
		{name: "an unverified claim no group names: judged by *", robots: private, ua: googlebot, claim: unverified, target: "/private/x", want: refused(1, 2, wild).struck()},
		{name: "an unverified claim is let through where an older * still allows", site: history(current(claims), replaced(claimsOld, 2*time.Hour)), ua: googlebot, claim: unverified, target: "/private/x", want: allowed(5, 0)},
		{name: "an unverified claim of a crawler that ignores *: judged by * too", robots: claims, ua: adsbot, claim: unverified, target: "/private/x", want: blocked(policy.Unverified).after(30 * s)},
		{name: "a spoofed claim is refused with spoofed block", robots: claims, ua: googlebot, claim: spoofed, target: "/public/x", want: blocked(policy.Spoofed)},
		{name: "a spoofed claim with spoofed wildcard is judged by * alone", robots: claims, ua: googlebot, claim: spoofed, target: "/private/x", opts: spoofedWildcard, want: refused(1, 2, wild).struck()},
		{name: "a spoofed claim with spoofed wildcard does not get Googlebot's group", robots: claims, ua: googlebot, claim: spoofed, target: "/google-only/x", opts: spoofedWildcard, want: allowed(1, wild).paced(5 * s)},
		{name: "a spoofed claim is paced though Googlebot ignores Crawl-delay", robots: claims, ua: googlebot, claim: spoofed, target: "/public/x", opts: spoofedWildcard, want: allowed(1, wild).paced(5 * s)},
		{name: "a spoofed claim of a crawler that ignores * is judged by *", robots: claims, ua: adsbot, claim: spoofed, target: "/private/x", opts: spoofedWildcard, want: refused(1, 2, wild).struck()},
		{name: "an unknown crawler cannot be verified and is not a claim", robots: claims, ua: exampleBot, target: "/google-only/x", want: allowed(1, wild).paced(5 * s)},
	})
}

// prefs: AI usage preferences for paths, and a Content-Signal for one crawler.
const prefs = `User-agent: *
Disallow: /private/
Content-Usage: /articles/ train-ai=n
Content-Usage: /news/ search=n

User-agent: OAI-SearchBot
Content-Signal: ai-input=no
`

func TestPreferences(t *testing.T) {
	on := preferencesEnforce
	trainAI := blocked(policy.Preference).in(1, wild).at(0).preferring("ai-training refused by Content-Usage train-ai=n (line 3)")
	run(t, []row{
		{name: "an AI-training crawler is refused on train-ai=n", robots: prefs, ua: gptbot, target: "/articles/a.html", opts: on, want: trainAI},
		{name: "... on its dot-segment form", robots: prefs, ua: gptbot, target: "/./articles/a.html", opts: on, want: trainAI.at(1)},
		{name: "... on its dot-dot form", robots: prefs, ua: gptbot, target: "/public/../articles/a.html", opts: on, want: trainAI.at(1)},
		{name: "... on its %2F form", robots: prefs, ua: gptbot, target: "/articles%2Fa.html", opts: on, want: trainAI.at(1)},
		{name: "... on a rewrite header", robots: prefs, ua: gptbot, target: "/public/", rewrites: []string{"/articles/a.html", "", ""}, opts: on, want: trainAI.at(1)},
		{name: "an AI-training crawler is allowed where train-ai is not stated", robots: prefs, ua: gptbot, target: "/news/a.html", opts: on, want: allowed(1, wild)},
		{name: "a search crawler is refused on search=n", robots: prefs, ua: googlebot, target: "/news/a.html", opts: on, want: blocked(policy.Preference).in(1, wild).at(0).preferring("search refused by Content-Usage search=n (line 4)")},
		{name: "a search crawler is allowed on train-ai=n", robots: prefs, ua: googlebot, target: "/articles/a.html", opts: on, want: allowed(1, wild)},
		{name: "a crawler with no known purpose is never refused for a preference", robots: prefs, ua: exampleBot, target: "/articles/a.html", opts: on, want: allowed(1, wild)},
		{name: "... nor on search=n", robots: prefs, ua: exampleBot, target: "/news/a.html", opts: on, want: allowed(1, wild)},
		{name: "an AI-answer crawler is refused on ai-input=no", robots: prefs, ua: oaiSearchBot, target: "/anything", opts: on, want: blocked(policy.Preference).in(6, 0).at(0).preferring("ai-answers refused by Content-Signal ai-input=no (line 7)")},
		{name: "a disallowed path is refused by its rule, not the preference", robots: prefs, ua: gptbot, target: "/private/a", opts: on, want: refused(1, 2, wild).struck()},
		{name: "preferences not enforced: the AI-training crawler is allowed", robots: prefs, ua: gptbot, target: "/articles/a.html", want: allowed(1, wild)},
		{name: "preferences not enforced: the AI-answer crawler is allowed", robots: prefs, ua: oaiSearchBot, target: "/anything", want: allowed(6, 0)},
	})
}

// rates: Crawl-delay for "*", Request-rate and Crawl-delay for bingbot. (Each
// group needs a rule: Crawl-delay does not end a run of user-agent lines, so
// without one "*" and bingbot would be one group.)
const rates = `User-agent: *
Disallow: /private/
Crawl-delay: 2

User-agent: bingbot
Disallow: /private/
Request-rate: 1/10s
Crawl-delay: 3
`

func TestThrottle(t *testing.T) {
	s, h := time.Second, time.Hour
	slow := "User-agent: *\nDisallow: /private/\nCrawl-delay: 10\n"
	run(t, []row{
		{name: "an unknown crawler is paced by Crawl-delay", robots: rates, ua: exampleBot, target: "/x", want: allowed(1, wild).paced(2 * s)},
		{name: "crawl_delay off paces nobody", robots: rates, ua: exampleBot, target: "/x", opts: crawlDelay(policy.CrawlDelayOff), want: allowed(1, wild)},
		{name: "Googlebot ignores Crawl-delay and is not paced", robots: rates, ua: googlebot, target: "/x", want: allowed(1, wild)},
		{name: "crawl_delay all paces Googlebot too", robots: rates, ua: googlebot, target: "/x", opts: crawlDelay(policy.CrawlDelayAll), want: allowed(1, wild).paced(2 * s)},
		{name: "the stricter of Request-rate and Crawl-delay applies", robots: rates, ua: bingbot, target: "/x", want: allowed(5, 0).paced(10 * s)},
		{name: "no Crawl-delay: no pace", robots: private, ua: exampleBot, target: "/x", want: allowed(1, wild)},
		{name: "the most lenient version held sets the pace", site: history(current(slow), replaced(rates, 2*h)), ua: exampleBot, target: "/x", want: allowed(1, wild).paced(2 * s)},
		{name: "a stricter version held does not slow the crawler", site: history(current(rates), replaced(slow, 2*h)), ua: exampleBot, target: "/x", want: allowed(1, wild).paced(2 * s)},
		{name: "a version held without Crawl-delay: no pace", site: history(current(slow), replaced(private, 2*h)), ua: exampleBot, target: "/x", want: allowed(1, wild)},
		{name: "a version past grace does not set the pace", site: history(current(slow), replaced(rates, 25*h)), ua: exampleBot, target: "/x", want: allowed(1, wild).paced(10 * s)},
		{name: "a version not held since the crawler fetched does not set the pace", site: fetched(history(current(slow), replaced(rates, 2*h)), h), ua: exampleBot, target: "/x", want: allowed(1, wild).paced(10 * s)},
		{name: "a refused request is not paced", robots: private + "Crawl-delay: 2\n", ua: exampleBot, target: "/private/x", want: refused(1, 2, wild).struck()},
	})
}

func TestThrottled(t *testing.T) {
	r := row{robots: rates, ua: exampleBot, target: "/x"}
	a, f := r.assess(t)
	if !a.Pace || a.Interval != 2*time.Second {
		t.Fatalf("want a paced request, got %+v", a)
	}
	if got := a.Throttled(state.ThrottleResult{Allowed: true}); got.Action != policy.Allow || got.Reason != policy.None || got.Retry {
		t.Errorf("within its budget: %s/%s", got.Action, got.Reason)
	}
	got := a.Throttled(state.ThrottleResult{RetryAfter: 1500 * time.Millisecond, Retry: true})
	if got.Action != policy.Throttle || got.Reason != policy.Rate || got.RetryAfter != 1500*time.Millisecond || !got.Retry {
		t.Errorf("too fast: %s/%s retry after %s retry %v", got.Action, got.Reason, got.RetryAfter, got.Retry)
	}
	if a.Action != policy.Allow {
		t.Errorf("Throttled changed the assessment it was called on")
	}
	text := policy.Explain(&got, f, "example.com")
	for _, must := range []string{"/robots.txt of example.com asks ExampleCrawler to wait 2s", "Crawl-delay: 2 in User-agent: * (line 1)", "Come back in 2 s"} {
		if !strings.Contains(text, must) {
			t.Errorf("explanation lacks %q:\n%s", must, text)
		}
	}
	// A request that spends no budget is never throttled.
	r = row{robots: rates, ua: googlebot, target: "/x"}
	b, _ := r.assess(t)
	if got := b.Throttled(state.ThrottleResult{RetryAfter: time.Second}); got.Action != policy.Allow {
		t.Errorf("unpaced request throttled: %s", got.Action)
	}
	// Nor a refused one.
	r = row{robots: private, ua: exampleBot, target: "/private/x"}
	c, _ := r.assess(t)
	if got := c.Throttled(state.ThrottleResult{RetryAfter: time.Second}); got.Action != policy.Block || got.Reason != policy.Rule {
		t.Errorf("refused request rethrottled: %s/%s", got.Action, got.Reason)
	}
}

func TestUnavailable(t *testing.T) {
	down := &policy.Site{Unavailable: true}
	pending := &policy.Site{}
	run(t, []row{
		{name: "robots.txt never obtained and the source fails: 503", site: down, ua: exampleBot, target: "/x", want: blocked(policy.Unavailable).after(policy.RetryUnavailable)},
		{name: "... for a verified crawler too", site: down, ua: googlebot, target: "/x", want: blocked(policy.Unavailable).after(policy.RetryUnavailable)},
		{name: "unavailable allow: allowed", site: down, ua: exampleBot, target: "/x", opts: unavailableAllow, want: allowed(0, none)},
		{name: "not yet obtained, source not failing: allowed", site: pending, ua: exampleBot, target: "/x", want: allowed(0, none)},
		{name: "a version obtained once is judged even while the source fails", site: &policy.Site{Versions: []*policy.Version{current(private)}, Unavailable: true}, ua: exampleBot, target: "/x", want: allowed(1, wild)},
	})
}

func TestOrder(t *testing.T) {
	ban := bannedFor(90 * time.Minute)
	long := "/" + strings.Repeat("a", policy.MaxTargetLength)
	run(t, []row{
		{name: "a bad target is refused before a spoofed claim", robots: private, ua: googlebot, claim: spoofed, target: "foo:/x", ban: ban, want: blocked(policy.BadTarget)},
		{name: "a too long target is refused before a spoofed claim", robots: private, ua: googlebot, claim: spoofed, target: long, ban: ban, want: blocked(policy.TooLong)},
		{name: "a spoofed claim is refused before its ban", robots: private, ua: googlebot, claim: spoofed, target: "/x", ban: ban, want: blocked(policy.Spoofed)},
		{name: "a banned bot is refused on an allowed path", robots: private, ua: exampleBot, target: "/public/x", ban: ban, want: want{action: policy.Ban, reason: policy.Banned, token: none, form: -1, retry: 90 * time.Minute}},
		{name: "a banned bot is refused before the rules", robots: private, ua: exampleBot, target: "/private/x", ban: ban, want: want{action: policy.Ban, reason: policy.Banned, token: none, form: -1, retry: 90 * time.Minute}},
		{name: "a ban is refused before an unavailable robots.txt", site: &policy.Site{Unavailable: true}, ua: exampleBot, target: "/x", ban: ban, want: want{action: policy.Ban, reason: policy.Banned, token: none, form: -1, retry: 90 * time.Minute}},
		{name: "a spoofed claim with spoofed wildcard is still banned", robots: private, ua: googlebot, claim: spoofed, target: "/x", ban: ban, opts: spoofedWildcard, want: want{action: policy.Ban, reason: policy.Banned, token: none, form: -1, retry: 90 * time.Minute}},
		{name: "a ban read but not in force changes nothing", robots: private, ua: exampleBot, target: "/private/x", ban: &state.BanResult{Strikes: 3}, want: refused(1, 2, wild).struck()},
	})
	r := row{robots: private, ua: exampleBot, target: "/x", ban: ban}
	a, f := r.assess(t)
	if !a.BanUntil.Equal(ban.Until) {
		t.Errorf("BanUntil %s, want %s", a.BanUntil, ban.Until)
	}
	if text := policy.Explain(&a, f, ""); !strings.Contains(text, "ExampleCrawler is banned until 2026-11-25T13:30:00Z") {
		t.Errorf("ban explanation: %q", text)
	}
	// A ban's record may name a client other than the requester (one
	// whose name shares the requester's identity); the refusal names the
	// requester, the site, the group and the rules, never that client.
	other := *ban
	other.Info = state.BanInfo{Crawler: "Rnd15", Token: "*", Scope: "shop.example on :443", Strikes: []state.StrikeRecord{{Line: 2, Version: "v1", At: ban.Until.Add(-time.Hour)}}}
	r = row{robots: private, ua: exampleBot, target: "/x", ban: &other}
	a, f = r.assess(t)
	f.Who.Rotating = true // a pooled name: its ban is still its own
	text := policy.Explain(&a, f, "")
	if strings.Contains(text, "Rnd15") || !strings.Contains(text, "ExampleCrawler is banned") || !strings.Contains(text, "User-agent: *") || !strings.Contains(text, "line 2 of robots.txt version v1") {
		t.Errorf("ban explanation with another client's record: %q", text)
	}
	for target, why := range map[string]string{"foo:/x": "neither a path", long: "longer than 8192 bytes"} {
		r := row{robots: private, ua: exampleBot, target: target}
		a, f := r.assess(t)
		if text := policy.Explain(&a, f, ""); !strings.Contains(text, why) {
			t.Errorf("%.20q: explanation %q lacks %q", target, text, why)
		}
	}
	r = row{robots: private, ua: exampleBot, target: hostile, rewrites: []string{"//a", "/private/x", ""}}
	a, f = r.assess(t)
	if text := policy.Explain(&a, f, ""); !strings.Contains(text, "more than 16 readings") {
		t.Errorf("overflow explanation: %q", text)
	}
}

func TestIdentify(t *testing.T) {
	for _, c := range []struct {
		name     string
		ua       string
		verdict  agents.Verdict
		signer   string
		who      string
		tokens   string
		wildcard bool
		verified bool
		claim    bool
	}{
		{"a verified crawler is kept under its token", googlebot, agents.Verified, "", "Googlebot", "Googlebot", true, true, false},
		{"a crawler that could not be verified is a claim", googlebot, agents.Unverified, "", "Googlebot", "Googlebot", true, false, true},
		{"a spoofed claim loses its tokens", googlebot, agents.Spoofed, "", "Googlebot", "", true, false, false},
		{"the most specific token names the crawler", googlebotImage, agents.Verified, "", "Googlebot-Image", "Googlebot-Image Googlebot", true, true, false},
		{"a crawler that ignores * by design", adsbot, agents.Verified, "", "AdsBot-Google", "AdsBot-Google", false, true, false},
		{"a spoofed crawler that ignores * is judged by *", adsbot, agents.Spoofed, "", "AdsBot-Google", "", true, false, false},
		{"a crawler that publishes no way to verify is no claim", exampleBot, agents.Unverified, "", "ExampleCrawler", "ExampleCrawler", true, false, false},
		{"a signed agent is kept apart", gptbot, agents.Verified, "agent.example", "sig:agent.example", "GPTBot", true, true, false},
		{"a bot without a User-Agent", "", agents.Unverified, "", "", "", true, false, false},
	} {
		ag := agents.Identify(c.ua)
		w := policy.Identify(&policy.Client{Agent: &ag, Verdict: c.verdict, Signer: c.signer})
		if w.Name != c.who || strings.Join(w.Tokens, " ") != c.tokens || w.Wildcard != c.wildcard || w.Verified != c.verified || w.Claim != c.claim {
			t.Errorf("%s: got %+v", c.name, w)
		}
	}
}

func TestNeedsTime(t *testing.T) {
	for _, c := range []struct {
		versions int
		banned   bool
		want     bool
	}{{0, false, false}, {1, false, false}, {2, false, true}, {1, true, true}, {0, true, true}} {
		if got := policy.NeedsTime(c.versions, c.banned); got != c.want {
			t.Errorf("NeedsTime(%d, %v) = %v", c.versions, c.banned, got)
		}
	}
	// With one version and no ban, the decision does not read the clock.
	r := row{robots: cur, ua: exampleBot, target: "/news/a"}
	f := r.facts(t)
	f.Now = time.Time{}
	o := options()
	if a := policy.Assess(f, &o); a.Action != policy.Block || !a.Strike {
		t.Errorf("without a clock: %s strike %v", a.Action, a.Strike)
	}
}

// TestAssessChangesNothing: Assess is a function of its facts and options:
// it changes neither (case-insensitive options included), and the same
// facts give the same assessment whatever was assessed before.
func TestAssessChangesNothing(t *testing.T) {
	rows := []row{
		{robots: groups, ua: googlebot, target: "/articles/a.html"},
		{robots: "User-agent: *\nDisallow: /\nCrawl-delay: 5\n", ua: googlebot, target: "/X"},
		{robots: "User-agent: *\nCrawl-delay: 5\n", ua: googlebot, target: "/x"},
		{robots: groups, ua: googlebot, target: "x/y"},
	}
	o := options()
	o.CaseInsensitive = true
	for _, first := range rows {
		before := policy.Assess(first.facts(t), &o)
		for _, next := range rows {
			f := next.facts(t)
			target, site, who := *f.Target, *f.Site, *f.Who
			opts := o
			a := policy.Assess(f, &o)
			if !reflect.DeepEqual(*f.Target, target) || !reflect.DeepEqual(*f.Site, site) || !reflect.DeepEqual(*f.Who, who) || !reflect.DeepEqual(o, opts) {
				t.Errorf("%s: Assess changed its facts or options", next.target)
			}
			if again := policy.Assess(f, &o); !reflect.DeepEqual(a, again) {
				t.Errorf("%s after %s (%s):\nfirst %+v\nagain %+v", next.target, first.target, before.Action, a, again)
			}
		}
	}
}
