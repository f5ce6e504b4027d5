package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// Report is the outcome of an audit. Its JSON form is the --format json
// output of caddy robots audit.
type Report struct {
	Robots    string   `json:"robots"`               // the robots.txt judged against
	RobotsNew string   `json:"robots_new,omitempty"` // the changed robots.txt previewed
	Logs      []string `json:"logs"`                 // the access logs read
	// Options are the handler's options the requests were judged with.
	Options Options `json:"options"`
	// LogFormat is the --log-format the lines that are not JSON were read
	// with, "" for the default (Combined and Common).
	LogFormat string `json:"log_format,omitempty"`
	// Formats counts the lines read per format: caddy-json, combined,
	// common, vhost-combined, nginx.
	Formats    map[string]int64 `json:"formats"`
	Lines      int64            `json:"lines"`                 // access-log lines read (those --host kept)
	Unreadable int64            `json:"unreadable"`            // lines of no format the audit reads
	NotAccess  int64            `json:"not_access"`            // lines of a known format that are no request (Caddy's runtime log; a CLF line with request "-")
	OtherHosts int64            `json:"other_hosts,omitempty"` // lines for hosts --host left out
	// OtherHostNames are a few of the hosts --host left out.
	OtherHostNames []string `json:"other_host_names,omitempty"`
	Browsers       int64    `json:"browser_requests"` // requests by people's browsers
	Crawlers       int64    `json:"crawler_requests"` // requests by automated clients that name themselves, judged
	// Undeclared counts the requests of undeclared crawlers: browser
	// User-Agents that a signal (the browser's own headers, the trap, the
	// TLS handshake) showed to be programs, judged by the "*" group; not among Browsers.
	Undeclared int64 `json:"undeclared_requests,omitempty"`
	// Own counts this plugin's own requests (its robots.txt loader, its
	// command line), which are not crawlers.
	Own int64 `json:"own_requests"`
	// NotJudged counts the requests of HTTP libraries under libraries
	// ignore.
	NotJudged int64 `json:"not_judged,omitempty"`
	// NoUserAgent counts the lines of a format that records no User-Agent
	// (Common Log Format): they cannot be told to be a person's or a
	// crawler's, and are not judged.
	NoUserAgent int64 `json:"no_user_agent"`
	// Rotating counts the judged requests of unverified names without a
	// budget of their own on addresses that present many names
	// (policy.Who.Rotating): they spend a Crawl-delay pool per client
	// shape at the address, read from the line (request.headers,
	// request.proto, tls_fingerprint). RotatingUnshaped counts those of
	// lines that record no headers (Combined, Common, nginx), which share
	// one pool per address where the server kept one per shape.
	Rotating         int64 `json:"rotating_requests,omitempty"`
	RotatingUnshaped int64 `json:"rotating_unshaped,omitempty"`
	// OutOfOrder counts the lines more than a minute older than a line read
	// before them: the state is replayed in the order read.
	OutOfOrder int64 `json:"out_of_order,omitempty"`
	// FirstUnreadable is the first line that is no access-log line.
	FirstUnreadable *Unreadable   `json:"first_unreadable,omitempty"`
	First           time.Time     `json:"first"`          // earliest time
	Last            time.Time     `json:"last"`           // latest time
	SeriesStart     time.Time     `json:"series_start"`   // start of the first series bucket
	SeriesStep      time.Duration `json:"series_step_ns"` // width of a series bucket
	Preview         bool          `json:"preview"`        // RobotsNew was given
	// Preferences: the robots.txt states AI usage preferences
	// (Content-Usage, Content-Signal); PreferencesNew: the previewed one does.
	Preferences    bool `json:"preferences"`
	PreferencesNew bool `json:"preferences_new,omitempty"`
	// Hosts are the sites of the log, the busiest first; OtherHosts last.
	Hosts []HostReport `json:"hosts"`
	// Crawler lists the crawlers per site (Hosts' order), by requests,
	// most first, each site's "other" bucket last.
	Crawler []CrawlerReport `json:"crawlers"`
	// UndeclaredSignals says what each signal caught; set when a signal
	// caught something or a trap is set.
	UndeclaredSignals *UndeclaredReport `json:"undeclared,omitempty"`
	// UndeclaredCrawlers lists the undeclared crawlers per site, as
	// Crawler lists the declared ones: named after what their User-Agent
	// claimed ("Chrome (undeclared)").
	UndeclaredCrawlers []CrawlerReport `json:"undeclared_crawlers,omitempty"`
	Notes              []string        `json:"notes,omitempty"` // caveats, for people
}

// Options are the handler's options that bear on the decision, as the
// audit applied them.
type Options struct {
	Mode        string `json:"mode"`        // enforce or log
	Preferences string `json:"preferences"` // enforce, or "not enforced" (expose, header)
	CrawlDelay  string `json:"crawl_delay"` // on, off or all
	CrawlBurst  int    `json:"crawl_burst"`
	Strikes     string `json:"strikes"` // off, or "<count> <window> <ban>"
	Spoofed     string `json:"spoofed"` // block or wildcard
	Libraries   string `json:"libraries"`
	Unavailable string `json:"unavailable"`
	Exempt      int    `json:"exempt_networks,omitempty"`
}

// String is the options on one line.
func (o Options) String() string {
	s := fmt.Sprintf("mode %s, preferences %s, crawl_delay %s, crawl_burst %d, strikes %s, spoofed %s, libraries %s, unavailable %s",
		o.Mode, o.Preferences, o.CrawlDelay, o.CrawlBurst, o.Strikes, o.Spoofed, o.Libraries, o.Unavailable)
	if o.Exempt > 0 {
		s += fmt.Sprintf(", %d exempt networks", o.Exempt)
	}
	return s
}

// UndeclaredReport is what the signals for undeclared crawlers caught.
type UndeclaredReport struct {
	// Requests counts the requests judged as undeclared crawlers'
	// (their trap requests included).
	Requests int64 `json:"requests"`
	// Signals are the signals with their modes, in the handler's order.
	Signals []SignalReport `json:"signals"`
	// Trap is the trap path, "" for none; TrapHold how long a client that
	// took it is judged as a crawler.
	Trap     string  `json:"trap,omitempty"`
	TrapHold Seconds `json:"trap_hold_seconds,omitempty"`
	// HeaderLines counts the lines the header rule could read: Caddy JSON
	// lines that record the request's headers. NoHeaderLines counts the
	// lines of the Combined and Common Log Formats, which record none: the
	// header rule does not apply to them (the trap does, where the
	// User-Agent is recorded).
	HeaderLines   int64 `json:"header_rule_lines"`
	NoHeaderLines int64 `json:"no_header_lines"`
	// TLSLines counts the lines that carry the client's TLS fingerprint
	// (the tls_fingerprint field of log_append): the tls signal could
	// judge only them. Fingerprints lists who it judged, by handshake,
	// site and claimed browser, the most requests first: in its log mode,
	// who enforce would refuse.
	TLSLines     int64               `json:"tls_lines"`
	Fingerprints []FingerprintReport `json:"tls_fingerprints,omitempty"`
}

// SignalReport is what one signal caught.
type SignalReport struct {
	Signal string `json:"signal"` // fetch_metadata, fetch_metadata_safari, client_hints, trap or tls (tls only when a line carried a fingerprint)
	// Mode is the signal's mode as applied: off, log or enforce (log in a
	// handler in mode log).
	Mode string `json:"mode"`
	// Requests counts the requests judged as undeclared crawlers' because
	// of this signal, trap requests included.
	Requests int64 `json:"requests"`
	// Refused counts those refused; WouldRefuse those judged in log mode
	// that enforce would refuse (the handler served them).
	Refused     int64 `json:"refused"`
	WouldRefuse int64 `json:"would_refuse"`
	// TrapRequests counts the requests for the trap that marked a client;
	// Probation those that only put a text browser on probation.
	TrapRequests int64 `json:"trap_requests,omitempty"`
	Probation    int64 `json:"trap_probation,omitempty"`
	// TrapUnmarked counts the requests for the trap that another page or
	// the browser itself caused (a subresource, a prefetch, a cross-site
	// navigation): refused, nobody marked.
	TrapUnmarked int64 `json:"trap_unmarked,omitempty"`
}

// HostReport is what one site of the log received.
type HostReport struct {
	Host        string `json:"host"` // "" for lines without a Host (CLF)
	Requests    int64  `json:"requests"`
	Browsers    int64  `json:"browser_requests"`
	Crawlers    int64  `json:"crawler_requests"`
	Own         int64  `json:"own_requests"`
	NotJudged   int64  `json:"not_judged,omitempty"`
	NoUserAgent int64  `json:"no_user_agent,omitempty"`
	Undeclared  int64  `json:"undeclared_requests,omitempty"`
}

// CrawlerReport is the behaviour of one crawler on one site, and what the
// handler decided on its requests.
type CrawlerReport struct {
	Host     string   `json:"host"`
	Name     string   `json:"name"`
	Operator string   `json:"operator,omitempty"`
	Category string   `json:"category,omitempty"`
	Purpose  string   `json:"purpose,omitempty"` // documented purpose: search, ai-training, ai-answers, seo...
	Known    bool     `json:"known"`
	Tokens   []string `json:"tokens"`
	Requests int64    `json:"requests"`
	// Refused counts the requests refused for any reason (in mode log:
	// that enforce mode would refuse).
	Refused     int64       `json:"refused"`
	RefusedRule int64       `json:"refused_rule"`    // refused by a robots.txt rule
	Rules       []RuleCount `json:"rules,omitempty"` // the rules that refused most
	// RefusedPreference counts the requests refused by an AI usage
	// preference (preferences enforce).
	RefusedPreference int64 `json:"refused_preference"`
	// PreferenceConflicts counts the requests the rules allow for which
	// the AI usage preference of the path refuses the crawler's documented
	// purpose: those refused by preference, or that preferences enforce
	// would refuse; PreferenceRefusals says which labels refused, the most
	// frequent first.
	PreferenceConflicts int64          `json:"preference_conflicts"`
	PreferenceRefusals  []RefusalCount `json:"preference_refusals,omitempty"`
	Throttled           int64          `json:"throttled"` // 503: faster than its Crawl-delay allows
	Banned              int64          `json:"banned"`    // refused while banned
	// RefusedOther counts the other refusals by reason: spoofed,
	// unverified, target, length, unavailable.
	RefusedOther map[string]int64 `json:"refused_other,omitempty"`
	Strikes      int64            `json:"strikes"` // refusals that counted as strikes
	Bans         int64            `json:"bans"`    // bans the strikes started
	Spoofed      int64            `json:"spoofed"` // requests from addresses outside the operator's lists
	// Claims split the judged requests (not the fetches of /robots.txt,
	// nor exempt ones) by what verifying the crawler's claim found:
	// verified, unverified, spoofed, each with its refusals, its bans and
	// the addresses behind them.
	Claims []ClaimReport `json:"claims,omitempty"`
	// Verifiable is set for a crawler whose operator publishes a way to
	// verify it (IP lists or reverse DNS): only then can a claim be
	// verified or spoofed, and the text and HTML reports show the split.
	Verifiable bool  `json:"verifiable"`
	Exempt     int64 `json:"exempt,omitempty"`
	// Interval is the Crawl-delay / Request-rate interval enforced on it
	// (0: none); CrawlDelay the one its group states, enforced or not.
	Interval          Seconds `json:"interval_seconds"`
	CrawlDelay        Seconds `json:"crawl_delay_seconds"`
	IgnoresCrawlDelay bool    `json:"ignores_crawl_delay"` // documented to ignore Crawl-delay
	// NotThrottled counts the requests that passed every rule while their
	// group states a Crawl-delay that is not enforced on this crawler
	// (crawl_delay on and documented to ignore it, or crawl_delay off).
	NotThrottled       int64     `json:"crawl_delay_not_enforced,omitempty"`
	FetchedRobotsTxt   bool      `json:"fetched_robots_txt"`
	RobotsTxtFetches   int64     `json:"robots_txt_fetches"`
	First              time.Time `json:"first_seen"`
	Last               time.Time `json:"last_seen"`
	NewlyRefused       int64     `json:"newly_refused,omitempty"`        // with --robots-new
	NewlyAllowed       int64     `json:"newly_allowed,omitempty"`        // with --robots-new
	NewlyRefusedSample []string  `json:"newly_refused_sample,omitempty"` // a few targets
	// NewlyConflicting counts, with --robots-new, the requests both files
	// allow that conflict with the new file's preferences and not with the
	// current one's; NewlyConflictingRefusals says which labels refuse.
	NewlyConflicting         int64          `json:"newly_conflicting,omitempty"`
	NewlyConflictingRefusals []RefusalCount `json:"newly_conflicting_refusals,omitempty"`
	SeriesRequests           []int64        `json:"series_requests"`
	SeriesRefused            []int64        `json:"series_refused"`
	// For an undeclared crawler: its requests by the signal that caught
	// them; its requests for the trap (TrapProbation: a text browser's
	// first, probation only); and of the refusals, those judged in log mode
	// (counted, not refused).
	Signals        map[string]int64 `json:"signals,omitempty"`
	TrapRequests   int64            `json:"trap_requests,omitempty"`
	TrapProbation  int64            `json:"trap_probation,omitempty"`
	RefusedLogMode int64            `json:"refused_log_mode,omitempty"`
}

// RuleCount is how many requests one rule refused.
type RuleCount struct {
	Rule     string `json:"rule"`
	Line     int    `json:"line"`
	Requests int64  `json:"requests"`
}

// RefusalCount is how many requests one preference refused, e.g. 3 by
// "ai-training refused by Content-Usage train-ai=n (line 4)".
type RefusalCount struct {
	Refusal  string `json:"refusal"` // enforce.Refusal.String()
	Purpose  string `json:"purpose"` // the purpose refused: ai-training, ai-answers or search
	Scheme   string `json:"scheme"`  // Content-Usage or Content-Signal
	Label    string `json:"label"`   // train-ai, ai-input...
	Value    string `json:"value"`   // n, no
	Line     int    `json:"line"`    // the robots.txt line that states it
	Requests int64  `json:"requests"`
}

// Seconds is a duration that marshals as a number of seconds.
type Seconds time.Duration

// MarshalJSON writes the duration in seconds.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(s).Seconds(), 'f', -1, 64), nil
}

// otherReason is a refusal reason reported in RefusedOther, with what it
// means for people.
type otherReason struct {
	Reason policy.Reason
	Text   string
}

// otherReasons are the refusal reasons reported together in RefusedOther,
// with what they mean for people.
var otherReasons = []otherReason{
	{policy.Spoofed, "a spoofed claim (spoofed block)"},
	{policy.Unverified, `a claim not verified from the IP lists, which only "*" refuses (503)`},
	{policy.BadTarget, "a target that is no path nor absolute URL (400)"},
	{policy.TooLong, "a target too long (414)"},
	{policy.Unavailable, "robots.txt unavailable (503)"},
}

// Report returns the report of everything read so far.
func (a *Auditor) Report() *Report {
	r := &Report{
		Options:   a.options(),
		Formats:   map[string]int64{},
		LogFormat: a.cfg.LogFormat.label(),
		Lines:     a.lines, Unreadable: a.bad, NotAccess: a.notAccess, OtherHosts: a.skipped, OtherHostNames: a.skippedHosts,
		Browsers: a.browsers, Crawlers: a.bots, Undeclared: a.undeclared, Own: a.own, NotJudged: a.ignored, NoUserAgent: a.noUA,
		OutOfOrder: a.outOfOrder, FirstUnreadable: a.firstBad,
		Rotating: a.rotating, RotatingUnshaped: a.rotatingUnshaped,
		First: a.first, Last: a.last,
		Preview:     a.cfg.RobotsNew != nil,
		Preferences: a.prefs, PreferencesNew: a.prefsNew,
		Hosts:   []HostReport{},
		Crawler: []CrawlerReport{},
	}
	for f := FormatCaddyJSON; f < formats; f++ {
		if n := a.formats[f]; n > 0 {
			r.Formats[f.String()] = n
		}
	}
	if a.grid.width > 0 {
		r.SeriesStart = time.Unix(0, a.grid.start).UTC()
		r.SeriesStep = time.Duration(a.grid.width)
	}
	hosts := append([]*hostAgg(nil), a.hosts...)
	sort.SliceStable(hosts, func(i, j int) bool {
		if hosts[i].lines != hosts[j].lines {
			return hosts[i].lines > hosts[j].lines
		}
		return hosts[i].name < hosts[j].name
	})
	if a.otherHost != nil {
		hosts = append(hosts, a.otherHost)
	}
	r.Notes = a.notes()
	if a.disOn && (a.undeclared > 0 || a.trapOn()) {
		r.UndeclaredSignals = &UndeclaredReport{Requests: a.undeclared, Signals: a.undeclaredSignals(),
			HeaderLines: a.headerLines, NoHeaderLines: a.noHeaderLines,
			TLSLines: a.tlsLines, Fingerprints: a.fingerprintReports()}
		if a.trapOn() {
			r.UndeclaredSignals.Trap, r.UndeclaredSignals.TrapHold = a.cfg.Trap, Seconds(a.cfg.TrapHold)
		}
	}
	for _, h := range hosts {
		r.Hosts = append(r.Hosts, HostReport{Host: h.name, Requests: h.lines, Browsers: h.browsers, Crawlers: h.bots,
			Own: h.own, NotJudged: h.ignored, NoUserAgent: h.noUA, Undeclared: h.undeclared})
		list := append([]*crawler(nil), h.crawlers...)
		sort.SliceStable(list, func(i, j int) bool {
			if list[i].requests != list[j].requests {
				return list[i].requests > list[j].requests
			}
			return list[i].name < list[j].name
		})
		for _, c := range list {
			if c.agent.Category != agents.CategoryUndeclared {
				r.Crawler = append(r.Crawler, c.report())
			}
		}
		if h.other != nil {
			r.Crawler = append(r.Crawler, h.other.report())
		}
		for _, c := range list {
			if c.agent.Category == agents.CategoryUndeclared {
				r.UndeclaredCrawlers = append(r.UndeclaredCrawlers, c.report())
			}
		}
		if h.otherUndeclared != nil {
			r.UndeclaredCrawlers = append(r.UndeclaredCrawlers, h.otherUndeclared.report())
		}
	}
	return r
}

// notes are the caveats of what was read.
func (a *Auditor) notes() []string {
	var n []string
	if a.noUA > 0 {
		n = append(n, fmt.Sprintf("%d lines are in the Common Log Format, which records no User-Agent: they cannot be told to be a person's or a crawler's and are not judged; log in the Combined Log Format (nginx's default, Apache's \"combined\") or Caddy's JSON", a.noUA))
	}
	if a.outOfOrder > 0 {
		n = append(n, fmt.Sprintf("%d lines were more than a minute older than a line read before them: throttles, strikes and bans are replayed in the order the lines are read, so give the logs oldest first (access.log.2, access.log.1, access.log)", a.outOfOrder))
	}
	if a.disOn && a.dis[policy.SignalTLS] != policy.SignalOff && a.tlsRequests > 0 && a.tlsLines == 0 {
		n = append(n, fmt.Sprintf("%s over TLS, none with the client's TLS fingerprint: the tls signal was not judged. Add to the site, with robots_fingerprint in its listener_wrappers: "+
			"log_append tls_fingerprint {http.robots.tls_fingerprint}, log_append tls_engine {http.robots.tls_engine} and log_append tls_versions {http.robots.tls_versions}", plural(a.tlsRequests, "request")))
	}
	if a.rotatingUnshaped > 0 {
		n = append(n, fmt.Sprintf("%s of unverified crawler names on addresses that present many names come from lines that record no headers: the audit gives all such names of an address one Crawl-delay pool, "+
			"where the server keeps one per client shape (its headers, HTTP version and TLS fingerprint), so it may throttle some the server served; log in Caddy's JSON", plural(a.rotatingUnshaped, "request")))
	}
	if b := a.firstBad; b != nil && a.bad > 0 && !b.JSON {
		n = append(n, fmt.Sprintf("the first unreadable line, %s:%d: %s", b.Log, b.Line, b.Sample))
	}
	return n
}

// options describes the options the Auditor applies.
func (a *Auditor) options() Options {
	o := Options{Mode: "enforce", Preferences: "not enforced", CrawlDelay: "on", CrawlBurst: a.opts.Burst,
		Strikes: "off", Spoofed: "wildcard", Libraries: "crawler", Unavailable: "allow", Exempt: len(a.cfg.Exempt)}
	if a.cfg.LogMode {
		o.Mode = "log"
	}
	if a.opts.Preferences {
		o.Preferences = "enforce"
	}
	switch a.opts.CrawlDelay {
	case policy.CrawlDelayOff:
		o.CrawlDelay = "off"
	case policy.CrawlDelayAll:
		o.CrawlDelay = "all"
	}
	if s := a.strikes; s.Enabled() {
		o.Strikes = fmt.Sprintf("%d %s %s", s.Strikes, shortDuration(s.Window), shortDuration(s.Ban))
	}
	if a.opts.SpoofedBlock {
		o.Spoofed = "block"
	}
	if a.cfg.IgnoreLibraries {
		o.Libraries = "ignore"
	}
	if a.opts.UnavailableDisallow {
		o.Unavailable = "disallow"
	}
	return o
}

// report renders the aggregate.
func (c *crawler) report() CrawlerReport {
	cr := CrawlerReport{
		Host: c.host.name, Name: c.name, Operator: c.agent.Operator, Category: string(c.agent.Category),
		Purpose: string(c.agent.Purpose), Known: c.agent.Known, Tokens: c.agent.Tokens,
		Requests: c.requests, Refused: c.refused,
		RefusedRule:              c.reasons[policy.Rule],
		RefusedPreference:        c.reasons[policy.Preference],
		PreferenceConflicts:      c.conflicts,
		PreferenceRefusals:       refusalCounts(c.refusals),
		Throttled:                c.reasons[policy.Rate],
		Banned:                   c.reasons[policy.Banned],
		Strikes:                  c.strikes,
		Bans:                     c.bans,
		Spoofed:                  c.spoofed,
		Claims:                   c.claimReports(),
		Verifiable:               c.agent.Profile.Verify != "",
		Exempt:                   c.exempt,
		Interval:                 Seconds(c.interval),
		CrawlDelay:               Seconds(c.groupInterval),
		NotThrottled:             c.unpaced,
		IgnoresCrawlDelay:        c.agent.Profile.CrawlDelay == agents.SupportNo && c.name != OtherName,
		FetchedRobotsTxt:         c.fetches > 0,
		RobotsTxtFetches:         c.fetches,
		First:                    c.first,
		Last:                     c.last,
		NewlyRefused:             c.newlyRefused,
		NewlyAllowed:             c.newlyAllowed,
		NewlyRefusedSample:       c.samples,
		NewlyConflicting:         c.newlyConflicting,
		NewlyConflictingRefusals: refusalCounts(c.newRefusals),
		SeriesRequests:           c.reqSeries,
		SeriesRefused:            c.refSeries,
	}
	if cr.Tokens == nil {
		cr.Tokens = []string{}
	}
	if c.agent.Category == agents.CategoryUndeclared {
		for i, n := range c.signals {
			if n > 0 {
				if cr.Signals == nil {
					cr.Signals = map[string]int64{}
				}
				cr.Signals[policy.Signal(i).String()] = n
			}
		}
		cr.TrapRequests, cr.TrapProbation, cr.RefusedLogMode = c.traps, c.probation, c.refusedLog
	}
	for _, o := range otherReasons {
		if n := c.reasons[o.Reason]; n > 0 {
			if cr.RefusedOther == nil {
				cr.RefusedOther = map[string]int64{}
			}
			cr.RefusedOther[o.Reason.String()] = n
		}
	}
	for ru, n := range c.rules {
		cr.Rules = append(cr.Rules, RuleCount{Rule: ru.String(), Line: ru.Line, Requests: n})
	}
	sort.Slice(cr.Rules, func(i, j int) bool {
		if cr.Rules[i].Requests != cr.Rules[j].Requests {
			return cr.Rules[i].Requests > cr.Rules[j].Requests
		}
		return cr.Rules[i].Line < cr.Rules[j].Line
	})
	if len(cr.Rules) > 5 {
		cr.Rules = cr.Rules[:5]
	}
	return cr
}

// refusalCounts lists the refusals of m, the most frequent first (then by
// line), at most five.
func refusalCounts(m map[enforce.Refusal]int64) []RefusalCount {
	var out []RefusalCount
	for ref, n := range m {
		out = append(out, RefusalCount{
			Refusal: ref.String(), Purpose: ref.Purpose, Scheme: ref.By.Scheme.String(), Label: ref.By.Label,
			Value: ref.By.Value, Line: ref.By.Line, Requests: n,
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Requests != out[j].Requests {
			return out[i].Requests > out[j].Requests
		}
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return out[i].Refusal < out[j].Refusal
	})
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}

// shortDuration writes a duration as people write it: 10m, 1h, 90s.
func shortDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}

// Expected describes the formats the audit reads, for people.
const Expected = `Caddy's JSON access log (one object per line with request.uri, as the log directive writes it), ` +
	`or the Combined or Common Log Format of nginx and Apache ` +
	`(203.0.113.9 - - [11/May/2026:11:46:40 +0000] "GET /path HTTP/1.1" 200 512 "-" "Mozilla/5.0 ...")`

// Readable returns nil when the audit read at least one request, and
// otherwise an error that says why nothing was: no line of a format it
// reads (with the first such line, truncated), only Caddy runtime-log
// lines, only lines for other hosts than those asked for, or no line at
// all.
func (r *Report) Readable() error {
	if r.Lines > 0 {
		return nil
	}
	logs := strings.Join(r.Logs, ", ")
	if r.OtherHosts > 0 {
		return fmt.Errorf("no request in %s is for the hosts asked for (%d lines are for other hosts, such as %s)",
			logs, r.OtherHosts, strings.Join(r.OtherHostNames, ", "))
	}
	total := r.Unreadable + r.NotAccess
	if total == 0 {
		return fmt.Errorf("%s: no lines to read", logs)
	}
	var b strings.Builder
	if r.LogFormat != "" {
		fmt.Fprintf(&b, "nothing readable in %s: %d lines, none a request in the formats expected: Caddy's JSON access log, or --log-format %s", logs, total, r.LogFormat)
	} else {
		fmt.Fprintf(&b, "nothing readable in %s: %d lines, none a request in the formats expected: %s", logs, total, Expected)
	}
	if n := r.Formats[FormatCaddyJSON.String()]; n > 0 {
		fmt.Fprintf(&b, "; %d are JSON lines without request.uri: Caddy's runtime log, not an access log (add the log directive to the site block)", n)
	}
	if n := r.Formats[FormatCombined.String()] + r.Formats[FormatCommon.String()] + r.Formats[FormatVhostCombined.String()] + r.Formats[FormatNginx.String()]; n > 0 {
		fmt.Fprintf(&b, "; %d are Common or Combined Log Format lines whose request is not one (\"-\", or bytes that are no HTTP request)", n)
	}
	if u := r.FirstUnreadable; u != nil {
		what := "the first unreadable line"
		if u.JSON {
			what = "the first line"
		}
		fmt.Fprintf(&b, "; %s, %s:%d: %s", what, u.Log, u.Line, u.Sample)
	}
	return errors.New(b.String())
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing JSON report: %w", err)
	}
	return nil
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// HostLabel names a site for people: its host, or what stands for it.
func HostLabel(h string) string {
	if h == "" {
		return "(no Host in the log)"
	}
	return h
}

// Split reports whether the report shows each site apart: the log has
// several.
func (r *Report) Split() bool { return len(r.Hosts) > 1 }

// crawlersOf returns the crawlers of one site.
func (r *Report) crawlersOf(host string) []CrawlerReport {
	var out []CrawlerReport
	for _, c := range r.Crawler {
		if c.Host == host {
			out = append(out, c)
		}
	}
	return out
}

// throttledCell is the THROTTLED column: "-" when its group states no
// Crawl-delay; "off" when it does but it was not enforced on the
// crawler's requests ("off*": documented to ignore Crawl-delay); else
// the requests throttled.
func throttledCell(c *CrawlerReport) string {
	switch {
	case c.CrawlDelay == 0 && c.Throttled == 0:
		return "-"
	case c.NotThrottled > 0 && c.Interval == 0 && c.IgnoresCrawlDelay:
		return "off*"
	case c.NotThrottled > 0 && c.Interval == 0:
		return "off"
	}
	return strconv.FormatInt(c.Throttled, 10)
}

// WriteTable writes the report as aligned text for a terminal.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "robots.txt   %s\n", r.Robots)
	if r.RobotsNew != "" {
		fmt.Fprintf(&b, "preview of   %s\n", r.RobotsNew)
	}
	fmt.Fprintf(&b, "logs         %s\n", strings.Join(r.Logs, ", "))
	fmt.Fprintf(&b, "options      %s\n", r.Options)
	fmt.Fprintf(&b, "period       %s to %s\n", fmtTime(r.First), fmtTime(r.Last))
	fmt.Fprintf(&b, "lines        %s\n", r.linesText())
	if len(r.Formats) > 0 {
		fmt.Fprintf(&b, "formats      %s\n", r.formatsText())
	}
	if u := r.UndeclaredSignals; u != nil {
		fmt.Fprintf(&b, "undeclared   %s\n", u.signalsText())
		if u.Trap != "" {
			fmt.Fprintf(&b, "             trap %s, hold %s\n", u.Trap, shortDuration(time.Duration(u.TrapHold)))
		}
		fmt.Fprintf(&b, "             %s\n", u.headerRuleText())
	}
	if r.Rotating > 0 {
		fmt.Fprintf(&b, "rotation     %s of unverified names on addresses that present many names, paced per client shape\n", plural(r.Rotating, "request"))
	}
	if r.Own > 0 {
		fmt.Fprintf(&b, "this plugin's own requests: %d (its robots.txt loader and command line; not crawlers)\n", r.Own)
	}
	if r.Options.Mode == "log" {
		b.WriteString("mode log: the handler refuses nothing; the counts say what mode enforce would have refused\n")
	}
	if !r.Split() {
		if len(r.Hosts) == 1 {
			fmt.Fprintf(&b, "host         %s\n", HostLabel(r.Hosts[0].Host))
		}
		b.WriteString("\n")
		if err := r.writeCrawlers(&b, r.Crawler, len(r.UndeclaredCrawlers) > 0); err != nil {
			return err
		}
		if err := r.writeUndeclared(&b, r.UndeclaredCrawlers); err != nil {
			return err
		}
	}
	if r.Split() {
		for _, h := range r.Hosts {
			fmt.Fprintf(&b, "\n== %s: %s\n\n", HostLabel(h.Host), hostText(h))
			und := r.undeclaredOf(h.Host)
			if err := r.writeCrawlers(&b, r.crawlersOf(h.Host), len(und) > 0); err != nil {
				return err
			}
			if err := r.writeUndeclared(&b, und); err != nil {
				return err
			}
		}
	}
	if err := r.writeFingerprints(&b); err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\nnote: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFingerprints writes the table of who the tls signal judged, by
// handshake (nothing when it judged nobody).
func (r *Report) writeFingerprints(b *strings.Builder) error {
	u := r.UndeclaredSignals
	if u == nil || len(u.Fingerprints) == 0 {
		return nil
	}
	b.WriteString("\ntls signal, by handshake: browser claims over a TLS handshake that refutes them (log mode: what enforce would refuse)\n\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FINGERPRINT\tENGINE\tCLAIMS\tHOST\tREQUESTS\tREFUSED\tENFORCE WOULD REFUSE\tADDRESSES\tFIRST SEEN\tLAST SEEN")
	for i := range u.Fingerprints {
		f := &u.Fingerprints[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", f.Fingerprint, f.Engine, f.Claims, HostLabel(f.Host),
			f.Requests, f.Refused, f.WouldRefuse, f.AddressesText(), fmtTime(f.First), fmtTime(f.Last))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	return nil
}

// AddressesText says how many addresses a handshake's requests came
// from, and the busiest: "2: 203.0.113.9 (12), 203.0.113.7 (1)".
func (f *FingerprintReport) AddressesText() string {
	n := strconv.Itoa(f.Addresses)
	if f.ManyAddresses {
		n = "more than " + n
	}
	if len(f.TopAddresses) == 0 {
		return n
	}
	return n + ": " + addrList(f.TopAddresses)
}

// undeclaredOf returns the undeclared crawlers of one site.
func (r *Report) undeclaredOf(host string) []CrawlerReport {
	var out []CrawlerReport
	for _, c := range r.UndeclaredCrawlers {
		if c.Host == host {
			out = append(out, c)
		}
	}
	return out
}

// signalsText says what each signal that is on caught, on one line.
func (u *UndeclaredReport) signalsText() string {
	var parts []string
	for _, s := range u.Signals {
		if s.Mode == "off" {
			continue
		}
		parts = append(parts, s.Signal+" "+s.Mode+": "+s.text())
	}
	if len(parts) == 0 {
		return "every signal off"
	}
	return strings.Join(parts, "; ")
}

// text says what one signal caught.
func (s *SignalReport) text() string {
	var t string
	if s.TrapRequests > 0 {
		t = plural(s.TrapRequests, "trap request")
		if s.Probation > 0 {
			t += fmt.Sprintf(" (%d on probation)", s.Probation)
		}
		t += ", "
	}
	t += plural(s.Requests, "request")
	if s.Refused > 0 {
		t += fmt.Sprintf(", %d refused", s.Refused)
	}
	if s.WouldRefuse > 0 {
		t += fmt.Sprintf(", %d enforce would refuse", s.WouldRefuse)
	}
	return t
}

// headerRuleText says which lines the header rule could read.
func (u *UndeclaredReport) headerRuleText() string {
	s := fmt.Sprintf("the header rule read %s that record the request's headers (Caddy's JSON)", plural(u.HeaderLines, "line"))
	if u.NoHeaderLines > 0 {
		s += fmt.Sprintf("; %s of the Combined or Common Log Format record none: only the trap applies to them", plural(u.NoHeaderLines, "line"))
	}
	return s
}

// linesText summarises the lines read.
func (r *Report) linesText() string {
	s := fmt.Sprintf("%d requests (%d by browsers, %d by crawlers", r.Lines, r.Browsers, r.Crawlers)
	if r.Undeclared > 0 {
		s += fmt.Sprintf(", %d by undeclared crawlers", r.Undeclared)
	}
	if r.Own > 0 {
		s += fmt.Sprintf(", %d by this plugin", r.Own)
	}
	if r.NotJudged > 0 {
		s += fmt.Sprintf(", %d by HTTP libraries not judged", r.NotJudged)
	}
	if r.NoUserAgent > 0 {
		s += fmt.Sprintf(", %d without a User-Agent", r.NoUserAgent)
	}
	s += fmt.Sprintf("); %d unreadable, %d not access logs", r.Unreadable, r.NotAccess)
	if r.OtherHosts > 0 {
		s += fmt.Sprintf(", %d for other hosts", r.OtherHosts)
	}
	return s
}

func (r *Report) formatsText() string {
	var parts []string
	for f := FormatCaddyJSON; f < formats; f++ {
		if n := r.Formats[f.String()]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", f, n))
		}
	}
	return strings.Join(parts, ", ")
}

func hostText(h HostReport) string {
	s := fmt.Sprintf("%d requests (%d by browsers, %d by crawlers", h.Requests, h.Browsers, h.Crawlers)
	if h.Undeclared > 0 {
		s += fmt.Sprintf(", %d by undeclared crawlers", h.Undeclared)
	}
	if h.Own > 0 {
		s += fmt.Sprintf(", %d by this plugin", h.Own)
	}
	if h.NotJudged > 0 {
		s += fmt.Sprintf(", %d by HTTP libraries not judged", h.NotJudged)
	}
	if h.NoUserAgent > 0 {
		s += fmt.Sprintf(", %d without a User-Agent", h.NoUserAgent)
	}
	return s + ")"
}

// plural writes n and the noun, in the plural unless n is 1.
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}

// times writes n as "once", "twice" or "n times".
func times(n int64) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return strconv.FormatInt(n, 10) + " times"
}

// writeCrawlers writes the table of crawlers and what explains it;
// undeclared says undeclared crawlers follow.
func (r *Report) writeCrawlers(b *strings.Builder, list []CrawlerReport, undeclared bool) error {
	if len(list) == 0 {
		if undeclared {
			b.WriteString("no declared crawler's request was judged\n")
		} else {
			b.WriteString("no crawler's request was judged\n")
		}
		return nil
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	// The preference columns show only when a file states preferences.
	newPrefs := r.Preview && r.PreferencesNew
	prefsEnforced := r.Options.Preferences == "enforce"
	head := "CRAWLER\tREQUESTS\tBY RULE"
	if r.Preferences {
		if prefsEnforced {
			head += "\tBY PREFERENCE"
		} else {
			head += "\tPREF. CONFLICTS"
		}
	}
	head += "\tTHROTTLED\tBANNED\tSTRIKES\tSPOOFED\tROBOTS.TXT\tFIRST SEEN\tLAST SEEN"
	if r.Preview {
		head += "\tNEWLY REFUSED"
	}
	if newPrefs {
		head += "\tNEWLY CONFLICTING"
	}
	fmt.Fprintln(tw, head)
	off, ignores := false, false
	for i := range list {
		c := &list[i]
		robots := yesNo(c.FetchedRobotsTxt)
		if c.RobotsTxtFetches > 1 {
			robots += " (" + strconv.FormatInt(c.RobotsTxtFetches, 10) + ")"
		}
		row := fmt.Sprintf("%s\t%d\t%d", c.Name, c.Requests, c.RefusedRule)
		if r.Preferences {
			if prefsEnforced {
				row += "\t" + strconv.FormatInt(c.RefusedPreference, 10)
			} else {
				row += "\t" + strconv.FormatInt(c.PreferenceConflicts, 10)
			}
		}
		thr := throttledCell(c)
		off = off || strings.HasPrefix(thr, "off")
		ignores = ignores || thr == "off*"
		row += fmt.Sprintf("\t%s\t%d\t%d\t%d\t%s\t%s\t%s", thr, c.Banned, c.Strikes, c.Spoofed, robots, fmtTime(c.First), fmtTime(c.Last))
		if r.Preview {
			row += "\t" + strconv.FormatInt(c.NewlyRefused, 10)
		}
		if newPrefs {
			row += "\t" + strconv.FormatInt(c.NewlyConflicting, 10)
		}
		fmt.Fprintln(tw, row)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	if off {
		b.WriteString("off: its group's Crawl-delay is not enforced on it (crawl_delay " + r.Options.CrawlDelay + ")")
		if ignores {
			b.WriteString("; * documented to ignore Crawl-delay")
		}
		b.WriteString("\n")
	}
	if r.Preferences && !prefsEnforced || newPrefs {
		b.WriteString("conflicts: requests the rules allow for which the AI usage preference (Content-Usage, Content-Signal) refuses the crawler's documented purpose: preferences enforce would refuse them\n")
	}
	r.writeDetails(b, list)
	return nil
}

// writeUndeclared writes the table of undeclared crawlers (nothing when
// there is none) and what explains it.
func (r *Report) writeUndeclared(b *strings.Builder, list []CrawlerReport) error {
	if len(list) == 0 {
		return nil
	}
	b.WriteString("\nundeclared crawlers: browser User-Agents that a signal showed to be programs, judged by the \"*\" group\n\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "UNDECLARED CRAWLER\tREQUESTS\tREFUSED\tLOG MODE\tBY RULE\tTHROTTLED\tBANNED\tSTRIKES\tTRAP\tSIGNALS\tFIRST SEEN\tLAST SEEN")
	for i := range list {
		c := &list[i]
		trap := strconv.FormatInt(c.TrapRequests, 10)
		if c.TrapProbation > 0 {
			trap += fmt.Sprintf(" (%d probation)", c.TrapProbation)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", c.Name, c.Requests, c.Refused-c.RefusedLogMode, c.RefusedLogMode,
			c.RefusedRule, throttledCell(c), c.Banned, c.Strikes, trap, signalsCell(c.Signals), fmtTime(c.First), fmtTime(c.Last))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	b.WriteString("refused: refused by the handler; log mode: judged by a signal in log mode (or the handler's mode log), refused by nothing: what enforce would refuse\n")
	r.writeDetails(b, list)
	return nil
}

// claimsText says, for a verifiable crawler with refusals or bans, how
// they split by verdict and which addresses they came from, a line per
// verdict; nil when nothing was refused or the crawler cannot be verified
// (every claim of it is unverified).
func claimsText(c *CrawlerReport) []string {
	if !c.Verifiable {
		return nil
	}
	show := false
	for _, k := range c.Claims {
		show = show || k.Refused > 0 || k.Bans > 0
	}
	if !show {
		return nil
	}
	lines := make([]string, 0, len(c.Claims))
	for _, k := range c.Claims {
		l := fmt.Sprintf("%s claims: %s, %d refused", k.Verdict, plural(k.Requests, "request"), k.Refused)
		if k.Banned > 0 || k.Bans > 0 {
			l += fmt.Sprintf(" (%d while banned), %s", k.Banned, plural(k.Bans, "ban"))
		}
		if a := k.Addresses(); a != "" {
			l += "; " + a
		}
		lines = append(lines, l)
	}
	return lines
}

// Addresses names the addresses behind the class's bans and refusals, as
// the text and HTML reports show them: "bans started by 203.0.113.9 (1);
// refused most: 203.0.113.9 (982)".
func (k ClaimReport) Addresses() string {
	var parts []string
	if len(k.BannedBy) > 0 {
		parts = append(parts, "bans started by "+addrList(k.BannedBy))
	}
	if len(k.RefusedBy) > 0 {
		parts = append(parts, "refused most: "+addrList(k.RefusedBy))
	}
	if k.ManyAddresses {
		parts = append(parts, "more addresses than the audit tracks, the others not standing out")
	}
	return strings.Join(parts, "; ")
}

// addrList lists addresses with their counts: 203.0.113.9 (982).
func addrList(list []AddressCount) string {
	parts := make([]string, len(list))
	for i, ac := range list {
		parts[i] = fmt.Sprintf("%s (%d", ac.Addr, ac.Count)
		if ac.Overcount > 0 {
			parts[i] += fmt.Sprintf(", up to %d of them others'", ac.Overcount)
		}
		parts[i] += ")"
	}
	return strings.Join(parts, ", ")
}

// signalsCell lists an undeclared crawler's requests per signal.
func signalsCell(m map[string]int64) string {
	var parts []string
	for _, name := range policy.SignalNames() {
		if n := m[name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", name, n))
		}
	}
	return strings.Join(parts, ", ")
}

// writeDetails writes, below a table, the rules and reasons that refused
// its crawlers.
func (r *Report) writeDetails(b *strings.Builder, list []CrawlerReport) {
	prefsEnforced := r.Options.Preferences == "enforce"
	first := true
	line := func(format string, args ...any) {
		if first {
			b.WriteString("\n")
			first = false
		}
		fmt.Fprintf(b, format, args...)
	}
	for _, c := range list {
		for _, ru := range c.Rules {
			line("%s: %d refused by %s\n", c.Name, ru.Requests, ru.Rule)
		}
		for _, rc := range c.PreferenceRefusals {
			if prefsEnforced {
				line("%s: %d refused: %s\n", c.Name, rc.Requests, rc.Refusal)
			} else {
				line("%s: %d allowed, but %s\n", c.Name, rc.Requests, rc.Refusal)
			}
		}
		for _, o := range otherReasons {
			if n := c.RefusedOther[o.Reason.String()]; n > 0 {
				line("%s: %d refused: %s\n", c.Name, n, o.Text)
			}
		}
		if c.Bans > 0 || c.Banned > 0 {
			line("%s: banned %s after %s (strikes %s); %s refused while banned\n", c.Name, times(c.Bans), plural(c.Strikes, "strike"),
				r.Options.Strikes, plural(c.Banned, "request"))
		}
		for _, text := range claimsText(&c) {
			line("%s, %s\n", c.Name, text)
		}
		if c.Exempt > 0 {
			line("%s: %s from exempt networks, not judged\n", c.Name, plural(c.Exempt, "request"))
		}
		if len(c.NewlyRefusedSample) > 0 {
			line("%s: the new robots.txt would refuse %d more, e.g. %s\n", c.Name, c.NewlyRefused, strings.Join(c.NewlyRefusedSample, " "))
		}
		for _, rc := range c.NewlyConflictingRefusals {
			line("%s: with the new robots.txt, %d more allowed, but %s\n", c.Name, rc.Requests, rc.Refusal)
		}
	}
}
