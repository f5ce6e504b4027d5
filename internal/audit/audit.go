// Package audit streams access logs (Caddy's JSON, and the Common and
// Combined Log Formats of nginx and Apache) and judges every crawler's
// request with the robots handler's own decision (policy.Assess), replaying
// the throttle, strike and ban state in log order as the server keeps it.
// Replaying a server's own access log with its options gives the server's
// decisions, request by request.
//
// The report says, per site and crawler: requests, requests refused by a
// rule (and which rules), by an AI usage preference, throttled for their
// Crawl-delay, refused while banned, spoofed claims, strikes, fetches of
// /robots.txt, and what a changed robots.txt would newly refuse. Undeclared
// crawlers (browser User-Agents that the handler's signals show to be
// programs: undeclared.go) are judged as the handler judges them and
// reported apart, per signal. Memory is
// bounded whatever the size of the logs: per-crawler aggregates for a
// bounded number of crawlers and sites, and a bounded state store.
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
	"unsafe"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/pipeline"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// Defaults and bounds.
const (
	// DefaultMaxCrawlers is the default of Config.MaxCrawlers.
	DefaultMaxCrawlers = 200
	// DefaultMaxHosts is the default of Config.MaxHosts.
	DefaultMaxHosts = 50
	samplePaths     = 5
	uaCacheMax      = 1 << 15
	hostCacheMax    = 1 << 12
	verdictCacheMax = 1 << 15
	seriesBuckets   = 96
	// outOfOrderSlack is how far a line's time may lie before the latest
	// time read so far without being reported out of order: Caddy writes a
	// line when the response ends, so lines of slow requests come late.
	outOfOrderSlack = time.Minute
)

// OtherName is the name of the bucket that collects the crawlers beyond
// Config.MaxCrawlers.
const OtherName = "(other crawlers)"

// OtherUndeclaredName is the name of the bucket that collects the
// undeclared crawlers beyond Config.MaxCrawlers.
const OtherUndeclaredName = "(other undeclared crawlers)"

// OtherHosts is the name of the bucket that collects the sites beyond
// Config.MaxHosts.
const OtherHosts = "(other hosts)"

// NoUserAgentName is the name under which requests that sent no User-Agent
// are reported. The handler judges them as a bot with no token.
const NoUserAgentName = "(no User-Agent)"

// The User-Agents of this plugin's own requests: the robots.txt loader
// (internal/sites) and the command line (internal/cli). They are counted apart,
// never as crawlers.
const (
	OwnLoaderUserAgent = "caddy-robots (robots.txt loader)"
	OwnCLIUserAgent    = "caddy-robots-cli"
)

// IsOwn reports whether ua is the User-Agent of one of this plugin's own
// requests: its robots.txt loader, or `caddy robots check|lint|audit`
// fetching a robots.txt.
func IsOwn(ua string) bool {
	return strings.HasPrefix(ua, OwnLoaderUserAgent) || strings.HasPrefix(ua, OwnCLIUserAgent+" ") || ua == OwnCLIUserAgent
}

// Config configures an Auditor.
type Config struct {
	// Robots is the robots.txt the traffic is judged against, as the one
	// version the site serves.
	Robots *enforce.Robots
	// Version names Robots in decisions (its content ID); optional.
	Version string
	// Unavailable says no robots.txt could be obtained because its source
	// fails: crawlers are judged as the handler judges them then (see
	// policy.Options.UnavailableDisallow). Robots may be nil.
	Unavailable bool
	// RobotsNew, when set, is a changed robots.txt: the report says which
	// requests its rules would newly refuse.
	RobotsNew *enforce.Robots
	// Options are the decision's options as the handler's configuration
	// gives them; nil means the handler's defaults (DefaultOptions).
	Options *policy.Options
	// Strikes is the handler's strike policy; nil means
	// state.DefaultStrikePolicy when Options.Strikes is set.
	Strikes *state.StrikePolicy
	// LogMode is set for a handler in mode log: it refuses nothing, and
	// keeps its state apart; the decisions are the same.
	LogMode bool
	// IgnoreLibraries is the handler's "libraries ignore": HTTP libraries
	// are not judged.
	IgnoreLibraries bool
	// Exempt are the networks the handler never judges.
	Exempt []netip.Prefix
	// Hosts, when not empty, keeps only the lines whose Host is one of
	// them (compared as HostOf reads them). A line of a format that
	// records no Host (CLF) is then an error.
	Hosts []string
	// Site is the host of the lines of a format that records none (CLF),
	// for their state scope; "" when unknown.
	Site string
	// Block, when set, is the site block of the robots handler that
	// judges. The handler keeps strikes, bans, rotation records and trap
	// marks per site block, and Crawl-delay budgets too unless
	// PacePerHost, so the lines of every host the block serves share its
	// state. Nil: each host is a site block of its own (all the audit can
	// know without a config).
	Block *SiteBlock
	// PacePerHost keeps a Crawl-delay budget per host, as the handler does
	// with source site (each host's robots.txt is its own), except for the
	// hosts a client hops to beyond its first state.RotationResidents,
	// which share the site block's. False: one budget per site block, as
	// with source file or inline.
	PacePerHost bool
	// MaxCrawlers bounds the crawlers reported by name, over all sites;
	// the others are counted together under OtherName. Default
	// DefaultMaxCrawlers.
	MaxCrawlers int
	// MaxHosts bounds the sites reported by name; the others are counted
	// together under OtherHosts. Default DefaultMaxHosts.
	MaxHosts int
	// MaxStateEntries bounds the throttle and strike state kept (the
	// handler's store max_entries); default state.DefaultMaxEntries.
	MaxStateEntries int
	// Undeclared are the modes of the handler's signals for undeclared
	// crawlers (its undeclared and undeclared_signals options, read by
	// policy.NewUndeclaredModes); nil means the handler's defaults. The trap
	// signal is off without a Trap.
	Undeclared *policy.UndeclaredModes
	// Trap is the handler's trap path, "" for none; TrapHold how long a
	// client that took it is judged as a crawler (default
	// policy.DefaultTrapHold).
	Trap     string
	TrapHold time.Duration
	// Decisions, when set, receives one JSON line (a Decision) per
	// request judged, in log order.
	Decisions io.Writer
	// LogFormat is how the lines that are not Caddy's JSON are written
	// (ParseLogFormat); the zero value reads the Combined and Common Log
	// Formats, and refuses a line whose first field is not an address.
	LogFormat LogFormat
}

// DefaultOptions are the decision options of a robots handler configured
// with nothing but its source: what Config.Options nil stands for.
func DefaultOptions() policy.Options {
	return policy.Options{
		Grace:               24 * time.Hour,
		MaxGrace:            7 * 24 * time.Hour,
		Burst:               state.DefaultBurst,
		SpoofedBlock:        true,
		UnavailableDisallow: true,
		Strikes:             true,
	}
}

// Auditor judges access-log lines and aggregates the decisions. It is not
// safe for concurrent use.
type Auditor struct {
	cfg       Config
	opts      policy.Options // the decision's options
	optsPrefs policy.Options // the same with preferences enforced: what a preference would refuse
	strikes   state.StrikePolicy
	site      policy.Site // the one version of Robots
	robotsNow *enforce.Robots
	store     *state.Memory
	rotations *state.Rotations // addresses rotating names, as the server recognises them
	hostHops  *state.Rotations // clients hopping Hosts (Config.PacePerHost), as the server recognises them
	ctx       context.Context
	keep      map[string]bool // Config.Hosts, read as HostOf reads them

	scanner  Scanner
	clf      CLFParser
	nginx    nginxParser // with Config.LogFormat an nginx log_format
	entry    Entry
	ident    *agents.Identifier
	verifier *agents.Verifier
	lineTime time.Time // the time of the line being verified, for list freshness
	lineAddr []byte    // its client address as logged, for the verdict cache
	pipe     *pipeline.Pipeline
	done     context.Context

	uaCache   map[string]*uaEntry
	verdicts  map[string]map[string]agents.Verdict // method -> address -> verdict
	hostCache map[string]*hostEntry
	hosts     []*hostAgg
	byHost    map[string]*hostAgg
	otherHost *hostAgg
	named     int // crawlers reported by name, over all sites
	// prefs and prefsNew: Robots and RobotsNew state AI usage preferences
	// (Content-Usage, Content-Signal). Without them no request pays for a
	// preference lookup.
	prefs, prefsNew bool

	dec *decisionWriter

	// where the line being read comes from, for messages
	log    string
	lineNo int64

	// Undeclared crawlers (undeclared.go): the signals' modes, whether
	// any is on and whether a header signal is, the claims read from the
	// User-Agents, the trap's marks, the counts per signal.
	dis            policy.UndeclaredModes
	disOn, headers bool
	claims         *agents.BrowserClaims
	marks          map[trapKey]*policy.TrapMark
	marksUntil     time.Time // no mark holds after it
	trapSeed       maphash.Seed
	signals        [policy.NumSignals]signalCount
	// The tls signal: lines that carry a fingerprint, those over TLS
	// (request.tls), and who it judged (tls.go).
	tlsLines, tlsRequests int64
	tlsRows               map[tlsKey]*tlsRow
	// Rotation (shape.go): the judged requests of unproven names on
	// addresses that rotate names, those of lines without headers (one
	// pool per address), and the header map their shapes are read into.
	rotating, rotatingUnshaped int64
	shapeHeader                http.Header

	lines, bad, notAccess, browsers, bots, own, noUA, ignored int64
	undeclared, headerLines, noHeaderLines                    int64
	skipped, outOfOrder                                       int64
	formats                                                   [formats]int64
	span                                                               // of the log's times
	skippedHosts                                              []string // a few hosts --host left out
	firstBad                                                  *Unreadable
	grid                                                      grid
}

// Unreadable is the first line the audit could not read, to say why.
type Unreadable struct {
	Log    string `json:"log"`    // the log it is in
	Line   int64  `json:"line"`   // its line number, from 1
	Sample string `json:"sample"` // its start, quoted
	// JSON is set when the line is JSON but not an access-log line
	// (Caddy's runtime log has no request.uri).
	JSON bool `json:"json"`
}

type uaEntry struct {
	sh *agents.Shared
	// judged: a bot the handler judges; own: this plugin's own request;
	// ignored: an HTTP library under libraries ignore.
	judged, own, ignored bool
	// refusable: a preference can refuse the agent's documented purpose
	// (see purposeRefusable).
	refusable bool
	// The crawler row of the last site the agent was seen on.
	lastHost *hostAgg
	lastRow  *crawler
	// For a User-Agent that is not judged: what it claims (looked up on
	// first need), and the undeclared crawler it is judged as when a
	// signal catches it.
	claim *agents.ClaimEntry
	und   *uaEntry
}

// crawler is the aggregate of one crawler on one site.
type crawler struct {
	name     string
	host     *hostAgg
	agent    agents.Agent
	requests int64
	refused  int64
	reasons  [policy.Reasons]int64 // refusals by reason
	strikes  int64
	bans     int64 // bans started
	spoofed  int64
	exempt   int64
	fetches  int64 // of /robots.txt
	// conflicts counts the requests the rules allow for which a
	// preference refuses the crawler's purpose (refused with preferences
	// enforce).
	conflicts             int64
	newlyRefused          int64
	newlyAllowed          int64
	newlyConflicting      int64                     // with RobotsNew: allowed by both, refused by its preference only
	refusals, newRefusals map[enforce.Refusal]int64 // which preference refused, with the counts
	span                                            // of the crawler's requests
	rules                 map[*enforce.Rule]int64
	samples               []string
	reqSeries, refSeries  []int64
	interval              time.Duration // the largest Crawl-delay enforced on it
	groupInterval         time.Duration // the largest its group states
	// unpaced counts the requests that passed every rule while their
	// group states a Crawl-delay that is not enforced on the crawler
	// (crawl_delay on and a crawler documented to ignore it, or
	// crawl_delay off).
	unpaced int64
	// An undeclared crawler's requests by the signal that caught them,
	// its trap requests (probation: a text browser's first), and the
	// refusals judged in log mode (not refused).
	signals          [policy.NumSignals]int64
	traps, probation int64
	trapsUnmarked    int64 // trap requests another page or the browser caused
	refusedLog       int64
	// The judged requests split by the claim's verdict (claims.go), and
	// the bans already attributed to one.
	claims      [3]claimCount
	bansTallied int64
}

// New returns an Auditor for cfg.
func New(cfg Config) (*Auditor, error) {
	if cfg.Robots == nil && !cfg.Unavailable {
		return nil, errors.New("audit: no robots.txt")
	}
	if cfg.MaxCrawlers <= 0 {
		cfg.MaxCrawlers = DefaultMaxCrawlers
	}
	if cfg.MaxHosts <= 0 {
		cfg.MaxHosts = DefaultMaxHosts
	}
	a := &Auditor{
		cfg:       cfg,
		prefs:     cfg.Robots.HasPreferences(),
		prefsNew:  cfg.RobotsNew.HasPreferences(),
		ident:     agents.NewIdentifier(4096),
		uaCache:   map[string]*uaEntry{},
		verdicts:  map[string]map[string]agents.Verdict{},
		hostCache: map[string]*hostEntry{},
		byHost:    map[string]*hostAgg{},
		store:     state.NewMemory(state.MemoryConfig{MaxEntries: cfg.MaxStateEntries}),
		rotations: state.NewRotations(0),
		hostHops:  state.NewRotations(0),
		ctx:       context.Background(),
		robotsNow: cfg.Robots,
	}
	a.opts = DefaultOptions()
	if cfg.Options != nil {
		a.opts = *cfg.Options
	}
	a.optsPrefs = a.opts
	a.optsPrefs.Preferences = true
	switch {
	case cfg.Strikes != nil:
		a.strikes = *cfg.Strikes
	case a.opts.Strikes:
		a.strikes = state.DefaultStrikePolicy()
	}
	if !a.opts.Strikes {
		a.strikes.Strikes = 0
	}
	if cfg.Unavailable {
		a.site.Unavailable = true
		a.robotsNow, a.prefs = nil, false
	} else {
		a.site.Versions = []*policy.Version{{Robots: cfg.Robots, ID: cfg.Version}}
	}
	if len(cfg.Hosts) > 0 {
		a.keep = map[string]bool{}
		for _, h := range cfg.Hosts {
			a.keep[policy.HostOf(strings.TrimSpace(h))] = true
		}
	}
	if cfg.Decisions != nil {
		a.dec = newDecisionWriter(cfg.Decisions, a)
	}
	a.initUndeclared()
	// The audit verifies with the embedded IP lists only: the context is
	// already done, so the Verifier never starts a DNS lookup, and the
	// resolver refuses to dial should it try. A list proves a spoof only if
	// it was fresh at the time of the request.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	a.done = done
	v, err := agents.NewVerifier(agents.VerifierConfig{
		Resolver: &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("audit: no DNS")
		}},
		Now: func() time.Time {
			if a.lineTime.IsZero() {
				return time.Now()
			}
			return a.lineTime
		},
	})
	if err != nil {
		return nil, fmt.Errorf("audit: building the verifier: %w", err)
	}
	a.verifier = v
	a.pipe = pipeline.New(pipeline.Config{
		Verifier:    a,
		Store:       a.store,
		Strikes:     a.strikes,
		Rotations:   a.rotations,
		HostHops:    a.hostHops,
		PacePerHost: cfg.PacePerHost,
		Options:     a.opts,
		LoggedShape: a.loggedShape,
	})
	return a, nil
}

// Line judges one access-log line (without its newline). Lines that are
// not access-log lines are counted; an error is returned only when the
// audit cannot go on: a line without a Host while Config.Hosts selects
// lines by Host, a Combined or Common line whose first field is not an
// address (ErrNotAddress: the log is of another format), or a decision
// that cannot be written.
func (a *Auditor) Line(line []byte) error {
	a.lineNo++
	e := &a.entry
	ok, err := a.parse(line, e)
	if err != nil {
		return err
	}
	if !ok {
		if len(line) > 0 {
			a.bad++
			a.noteBad(line, false)
		}
		return nil
	}
	a.formats[e.Format]++
	if !e.HasURI {
		a.notAccess++
		if e.Format == FormatCaddyJSON {
			a.noteBad(line, true)
		}
		return nil
	}
	he, err := a.hostFor(e)
	if err != nil {
		return err
	}
	if !he.keep {
		a.skipped++
		if len(a.skippedHosts) < 5 && !contains(a.skippedHosts, he.host) {
			a.skippedHosts = append(a.skippedHosts, he.host)
		}
		return nil
	}
	a.lines++
	he.agg.lines++
	if e.TLS {
		a.tlsRequests++
	}
	if len(e.TLSFingerprint) > 0 {
		a.tlsLines++
	}
	switch {
	case e.HasHeaders:
		a.headerLines++
	case e.Format != FormatCaddyJSON:
		a.noHeaderLines++
	}
	t := e.Time
	a.noteTime(t)
	if !e.HasUA {
		// The Common Log Format records no User-Agent: the request cannot
		// be told to be a person's or a crawler's, so it is not judged.
		a.noUA++
		he.agg.noUA++
		return nil
	}
	ue := a.agentOf(e)
	if a.disOn && !ue.judged && !ue.own {
		// A person's browser (or a library under libraries ignore), as
		// the User-Agent says: the handler checks the claim against the
		// browser's own headers, and the trap.
		if caught, err := a.checkUndeclared(ue, he, e, t); caught {
			return err
		}
	}
	switch {
	case ue.own:
		a.own++
		he.agg.own++
		return a.dec.other(e, ue, "allow", "this plugin's own request")
	case ue.ignored:
		a.ignored++
		he.agg.ignored++
		return a.dec.other(e, ue, "allow", "not judged (libraries ignore)")
	case !ue.judged:
		a.browsers++
		he.agg.browsers++
		return a.dec.other(e, nil, "allow", "not a crawler")
	}
	a.bots++
	he.agg.bots++
	return a.judge(ue, he, e, t, judging{log: a.cfg.LogMode})
}

// parse reads line into e: a Caddy JSON line if it opens with '{', else
// a text line (an error when its format cannot be the log's). It reports
// whether line is a line it could read.
func (a *Auditor) parse(line []byte, e *Entry) (bool, error) {
	i := skipWS(line, 0)
	if i < len(line) && line[i] == '{' {
		return a.scanner.Parse(line, e), nil
	}
	return a.parseText(line, e)
}

// noteTime widens the span of the log to t (when the line has a time)
// and counts t if it goes back further than outOfOrderSlack.
func (a *Auditor) noteTime(t time.Time) {
	if t.IsZero() {
		return
	}
	if a.last.Sub(t) > outOfOrderSlack {
		a.outOfOrder++
	}
	a.span.add(t)
}

// span is the first and last of the times it was given.
type span struct{ first, last time.Time }

// add widens s to t; a zero t is no time.
func (s *span) add(t time.Time) {
	if t.IsZero() {
		return
	}
	if s.first.IsZero() || t.Before(s.first) {
		s.first = t
	}
	if t.After(s.last) {
		s.last = t
	}
}

// agentOf identifies the User-Agent of e, from the cache when it was
// seen before.
func (a *Auditor) agentOf(e *Entry) *uaEntry {
	ue := a.uaCache[string(e.UserAgent)]
	if ue == nil {
		ue = a.identify(string(e.UserAgent))
	}
	if len(e.UserAgents) > 0 && !ue.judged {
		// Several User-Agent headers: the request is a bot's if any of
		// them is, as the handler reads it ("Mozilla/5.0 ..." followed by
		// "GPTBot/1.2" is GPTBot).
		ue = a.firstJudged(e.UserAgents, ue)
	}
	return ue
}

// identify identifies a User-Agent and caches the answer.
func (a *Auditor) identify(ua string) *uaEntry {
	ue := &uaEntry{sh: a.ident.IdentifyShared(ua)}
	if !ue.sh.Bot {
		// A browser string with a word the site's groups name is that
		// group's bot, as the handler judges it.
		if tok := policy.NamedBySite(ue.sh, a.site.Versions); tok != "" {
			ue.sh = agents.NewShared(policy.NamedAgent(tok))
		}
	}
	switch {
	case !ue.sh.Bot:
	case IsOwn(ua):
		ue.own = true
	case a.cfg.IgnoreLibraries && ue.sh.Category == agents.CategoryHTTPLibrary:
		ue.ignored = true
	default:
		ue.judged = true
		ue.refusable = purposeRefusable(ue.sh.Purpose)
	}
	if len(a.uaCache) >= uaCacheMax {
		clear(a.uaCache)
	}
	a.uaCache[ua] = ue
	return ue
}

// firstJudged returns the first of the User-Agent values of a JSON array
// that the handler judges, or first when none is.
func (a *Auditor) firstJudged(list []byte, first *uaEntry) *uaEntry {
	var uas []string
	if json.Unmarshal(list, &uas) != nil {
		return first
	}
	for _, ua := range uas {
		ue := a.uaCache[ua]
		if ue == nil {
			ue = a.identify(ua)
		}
		if ue.judged {
			return ue
		}
	}
	return first
}

// hostFor returns what the line's Host stands for.
func (a *Auditor) hostFor(e *Entry) (*hostEntry, error) {
	if !e.HasHost && a.keep != nil {
		return nil, fmt.Errorf("the %s records no Host, so --host cannot select its lines: audit a log of that site alone, without --host", formatLabel(e.Format))
	}
	if he := a.hostCache[string(e.Host)]; he != nil {
		return he, nil
	}
	he := &hostEntry{raw: string(e.Host)}
	he.host = policy.HostOf(he.raw)
	if !e.HasHost {
		he.host = policy.HostOf(a.cfg.Site)
	}
	block, desc := he.host, he.host
	if b := a.cfg.Block; b != nil && b.Serves(he.host) {
		block, desc = "block|"+b.Name, b.Name
	}
	he.block, he.desc = block, desc
	he.scope, he.logScope = stateScope(block, a.cfg.LogMode), stateScope(block, true)
	he.keep = a.keep == nil || a.keep[he.host]
	if he.keep {
		he.agg = a.hostAgg(he.host)
	}
	if len(a.hostCache) >= hostCacheMax {
		clear(a.hostCache)
	}
	a.hostCache[he.raw] = he
	return he, nil
}

// hostAgg returns the aggregate of a site.
func (a *Auditor) hostAgg(name string) *hostAgg {
	if h := a.byHost[name]; h != nil {
		return h
	}
	if len(a.hosts) >= a.cfg.MaxHosts {
		if a.otherHost == nil {
			a.otherHost = &hostAgg{name: OtherHosts, byName: map[string]*crawler{}}
		}
		return a.otherHost
	}
	h := &hostAgg{name: name, byName: map[string]*crawler{}}
	a.byHost[name] = h
	a.hosts = append(a.hosts, h)
	return h
}

// row returns the aggregate a crawler's requests on a site go to.
func (a *Auditor) row(ue *uaEntry, he *hostEntry) *crawler {
	h := he.agg
	if ue.lastHost == h {
		return ue.lastRow
	}
	ag := &ue.sh.Agent
	name := ag.Name
	if name == "" {
		name = NoUserAgentName
	}
	c := h.byName[name]
	if c == nil {
		if a.named >= a.cfg.MaxCrawlers {
			// Undeclared crawlers beyond the bound are counted apart
			// from the declared ones, as they are reported.
			other := &h.other
			if ag.Category == agents.CategoryUndeclared {
				other = &h.otherUndeclared
			}
			if *other == nil {
				bucket, label := agents.Agent{Bot: true}, OtherName
				if other == &h.otherUndeclared {
					bucket.Category, label = agents.CategoryUndeclared, OtherUndeclaredName
				}
				*other = newCrawler(label, h, bucket)
			}
			c = *other
		} else {
			c = newCrawler(name, h, *ag)
			h.byName[name] = c
			h.crawlers = append(h.crawlers, c)
			a.named++
		}
	}
	ue.lastHost, ue.lastRow = h, c
	return c
}

func newCrawler(name string, h *hostAgg, ag agents.Agent) *crawler {
	return &crawler{
		name: name, host: h, agent: ag,
		rules:     map[*enforce.Rule]int64{},
		reqSeries: make([]int64, seriesBuckets),
		refSeries: make([]int64, seriesBuckets),
	}
}

// judging is how a request is judged: whether in log mode (with log
// mode's own state), and for an undeclared crawler the signal that caught
// it.
type judging struct {
	log        bool
	undeclared bool
	signal     policy.Signal
	// stateName and rulesOnly are policy.Client's Undeclared and
	// RulesOnly for an undeclared crawler.
	stateName string
	rulesOnly bool
	// For the tls signal: the handshake, why it refutes the claim, and
	// the browser claimed (agents.TLSClaim.Browser).
	tls         *tlsSeen
	why, claims string
}

// mode is the decision's mode: enforce, or log.
func (j *judging) mode() string {
	if j.log {
		return "log"
	}
	return "enforce"
}

// seen notes a request at t in the crawler's first and last times.
func (c *crawler) seen(t time.Time) { c.span.add(t) }

// judge judges a bot's request as the handler does, through the same
// pipeline (pipeline.Pipeline.Judge): the target as sent and its forms, the
// client verified (embedded IP lists only), the ban state read,
// policy.Assess, then the strike written and the throttle budget spent, at
// the line's time, in the state scope of he's site block, in j's mode.
func (a *Auditor) judge(ue *uaEntry, he *hostEntry, e *Entry, t time.Time, j judging) error {
	c := a.row(ue, he)
	c.requests++
	c.seen(t)
	jd := a.request(ue, he, e, t)
	if jd.Target.IsRobotsTxt() {
		// Always served, to everyone; the fetch may give an unverified
		// name a budget of its own on an address that rotates names, as
		// the handler's serveRobotsTxt does.
		c.fetches++
		if !jd.Stateless && jd.Client.Addr.IsValid() {
			a.pipe.Fetched(a.ctx, &jd)
		}
		return a.dec.robotsTxt(e, ue)
	}
	if len(a.cfg.Exempt) > 0 && a.exempted(jd.Client.Addr) {
		c.exempt++
		return a.dec.exempt(e, ue, &j)
	}
	jd.Client.Undeclared, jd.Client.RulesOnly = j.stateName, j.rulesOnly
	if j.log {
		jd.Mode = pipeline.Log
	}
	a.pipe.Judge(a.ctx, &jd)
	if jd.Who.Rotating {
		a.rotating++
		if len(e.Headers) == 0 {
			a.rotatingUnshaped++
		}
	}
	if jd.Client.Verdict == agents.Spoofed {
		c.spoofed++
	}
	if jd.Struck {
		c.strikes++
		if jd.Strike.Banned {
			c.bans++
		}
	}
	f, as := jd.Facts(), &jd.Assessment
	f.Now = t
	a.count(c, ue, &f, as)
	if j.undeclared {
		a.countUndeclared(c, &j, as.Refused())
		if j.signal == policy.SignalTLS {
			a.countTLS(he, &j, jd.Client.Addr, t, as.Refused())
		}
	}
	if a.cfg.RobotsNew != nil {
		a.preview(c, ue, &f, as)
	}
	a.series(c, t, as.Refused())
	return a.dec.judged(e, ue, &f, as, &j)
}

// request reads a log line as the pipeline judges it. The target and the
// rewrite headers are only read while the line is judged, which keeps
// none of them (samples are copied): no copy of the line is needed.
// Without a time the state cannot be replayed: the request is judged on
// its own.
func (a *Auditor) request(ue *uaEntry, he *hostEntry, e *Entry, t time.Time) pipeline.Judgement {
	var rewrites []string
	var rw [3]string
	for k, v := range e.Rewrites {
		if len(v) > 0 {
			rw[k] = unsafeString(v)
			rewrites = rw[:]
		}
	}
	addr := e.Addr()
	ip, _ := netip.ParseAddr(unsafeString(addr))
	a.lineAddr, a.lineTime = addr, t // for Verify
	return pipeline.Judgement{Request: pipeline.Request{
		Target: policy.ParseTarget(methodString(e.Method), unsafeString(e.URI), rewrites...),
		Host:   he.host,
		Client: policy.Client{Agent: &ue.sh.Agent, Addr: ip.Unmap()},
		// Behind a proxy the server did not trust (client_ip is the
		// peer), no address-level state applies, as in the handler.
		Forwarded:    e.Forwarded,
		TrustedProxy: len(e.ClientIP) > 0 && !bytes.Equal(e.ClientIP, e.RemoteIP),
		Site:         a.site,
		Block:        he.block,
		BlockDesc:    he.desc,
		Stateless:    t.IsZero(),
		At:           t,
	}}
}

// series adds a request at t (refused or not) to the crawler's series.
func (a *Auditor) series(c *crawler, t time.Time, refused bool) {
	if t.IsZero() {
		return
	}
	i := a.grid.index(t, a.allSeries)
	c.reqSeries[i]++
	if refused {
		c.refSeries[i]++
	}
}

// count adds one assessment to the crawler's counts.
func (a *Auditor) count(c *crawler, ue *uaEntry, f *policy.Facts, as *policy.Assessment) {
	c.tallyClaim(f, as)
	if as.Refused() {
		c.refused++
		c.reasons[as.Reason]++
	}
	switch as.Reason {
	case policy.Rule:
		if as.Decision.Rule != nil {
			c.rules[as.Decision.Rule]++
		}
	case policy.Preference:
		c.conflicts++
		countRefusal(&c.refusals, as.Preference)
	case policy.None, policy.Rate, policy.Unverified:
		// Allowed by the rules: would preferences enforce refuse it? A
		// preference is looked up only for a crawler whose documented
		// purpose a preference can refuse.
		if a.prefs && ue.refusable && !a.opts.Preferences {
			if p := policy.Assess(f, &a.optsPrefs); p.Reason == policy.Preference {
				c.conflicts++
				countRefusal(&c.refusals, p.Preference)
			}
		}
	}
	if as.Interval > c.interval {
		c.interval = as.Interval
	}
	iv := as.Decision.Group.Interval()
	if iv > c.groupInterval {
		c.groupInterval = iv
	}
	if iv > 0 && !as.Pace && (as.Reason == policy.None || as.Reason == policy.Rate) {
		c.unpaced++
	}
}

// preview judges the request by the rules of RobotsNew as well: newly
// refused, newly allowed, newly conflicting with its preferences.
func (a *Auditor) preview(c *crawler, ue *uaEntry, f *policy.Facts, as *policy.Assessment) {
	who, forms := f.Who, f.Target.Forms()
	var d enforce.Decision
	switch as.Reason {
	case policy.None, policy.Rule, policy.Rate, policy.Preference, policy.Unverified:
		// Assess reached the rules: its decision is the current file's,
		// on every form, for the group the crawler is judged by.
		d = as.Decision
		if as.Version == nil {
			d.Allowed = true
		}
	default:
		d, _ = policy.DecideForms(a.robotsNow.Select(who.Tokens, who.Wildcard), forms)
	}
	dn, _ := policy.DecideForms(a.cfg.RobotsNew.Select(who.Tokens, who.Wildcard), forms)
	switch {
	case d.Allowed && !dn.Allowed:
		c.newlyRefused++
		if len(c.samples) < samplePaths && !contains(c.samples, f.Target.Raw) {
			c.samples = append(c.samples, strings.Clone(f.Target.Raw))
		}
	case !d.Allowed && dn.Allowed:
		c.newlyAllowed++
	}
	// Newly conflicting: allowed by both files, no conflict with the
	// current one's preferences, refused by the new one's.
	if !a.prefsNew || !ue.refusable || !d.Allowed || !dn.Allowed || as.Reason == policy.Preference {
		return
	}
	if a.prefs {
		if p := policy.Assess(f, &a.optsPrefs); p.Reason == policy.Preference {
			return
		}
	}
	site := policy.Site{Versions: []*policy.Version{{Robots: a.cfg.RobotsNew}}}
	fn := *f
	fn.Site, fn.Ban = &site, nil
	if p := policy.Assess(&fn, &a.optsPrefs); p.Reason == policy.Preference {
		c.newlyConflicting++
		countRefusal(&c.newRefusals, p.Preference)
	}
}

// exempted reports whether ip is in one of the networks never judged.
func (a *Auditor) exempted(ip netip.Addr) bool {
	for _, p := range a.cfg.Exempt {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Verify checks a claim of the line being judged against the embedded IP
// lists, caching per address as logged (the pipeline's verifier).
func (a *Auditor) Verify(_ context.Context, ag agents.Agent, ip netip.Addr) agents.Verdict {
	addr := a.lineAddr
	m := a.verdicts[ag.Profile.Verify]
	if v, ok := m[string(addr)]; ok {
		return v
	}
	v := a.verifier.Verify(a.done, ag, ip)
	if m == nil {
		m = map[string]agents.Verdict{}
		a.verdicts[ag.Profile.Verify] = m
	}
	if len(m) >= verdictCacheMax {
		clear(m)
	}
	m[string(addr)] = v
	return v
}

// noteBad keeps the first line that is not an access-log line, to say why
// nothing was read.
func (a *Auditor) noteBad(line []byte, isJSON bool) {
	if a.firstBad != nil && (!a.firstBad.JSON || isJSON) {
		// Keep the first unreadable line; a JSON line without
		// request.uri only until a truly unreadable one comes.
		return
	}
	const max = 120
	s := line
	cut := len(s) > max
	if cut {
		s = s[:max]
	}
	sample := fmt.Sprintf("%q", s)
	if cut {
		sample += "…"
	}
	a.firstBad = &Unreadable{Log: a.log, Line: a.lineNo, Sample: sample, JSON: isJSON}
}

func (a *Auditor) allSeries(f func([]int64)) {
	each := func(h *hostAgg) {
		for _, c := range h.crawlers {
			f(c.reqSeries)
			f(c.refSeries)
		}
		for _, o := range [...]*crawler{h.other, h.otherUndeclared} {
			if o != nil {
				f(o.reqSeries)
				f(o.refSeries)
			}
		}
	}
	for _, h := range a.hosts {
		each(h)
	}
	if a.otherHost != nil {
		each(a.otherHost)
	}
}

// purposeRefusable reports whether an AI usage preference can refuse a
// crawler with purpose p: whether the vocabulary lists p (or an alias of
// it) among the purposes [enforce.Preferences.Refuses] knows, compared as
// Refuses compares them. Search engines and AI crawlers can be refused;
// SEO tools, monitors, archivers and user-triggered fetches cannot, and
// cost no preference lookup.
func purposeRefusable(p agents.Purpose) bool {
	name := strings.TrimSpace(string(p))
	if name == "" {
		return false
	}
	for _, vp := range enforce.Vocab().Purposes {
		if strings.EqualFold(vp.Name, name) {
			return true
		}
		for _, alias := range vp.Aliases {
			if strings.EqualFold(alias, name) {
				return true
			}
		}
	}
	return false
}

func countRefusal(m *map[enforce.Refusal]int64, ref enforce.Refusal) {
	if *m == nil {
		*m = map[enforce.Refusal]int64{}
	}
	(*m)[ref]++
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// unsafeString is b as a string without a copy: only for strings that do
// not outlive the line.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// methodString is the method as a string, without an allocation for the
// usual ones; "" (HTTP/0.9) is GET.
func methodString(b []byte) string {
	switch string(b) {
	case "GET", "":
		return "GET"
	case "HEAD":
		return "HEAD"
	case "POST":
		return "POST"
	case "OPTIONS":
		return "OPTIONS"
	case "PUT":
		return "PUT"
	}
	return string(b)
}

func formatLabel(f Format) string {
	switch f {
	case FormatCombined:
		return "Combined Log Format"
	case FormatCommon:
		return "Common Log Format"
	case FormatVhostCombined:
		return "vhost_combined log"
	case FormatNginx:
		return "nginx log_format"
	}
	return "log line"
}

// grid is the time axis of the series: seriesBuckets buckets of a width
// that doubles (merging neighbours) whenever a time falls outside, so the
// series cover any span in bounded memory. Bucket starts are aligned to
// multiples of the width since the epoch.
type grid struct {
	start int64 // ns; valid when width > 0
	width int64 // ns
}

const minWidth = int64(time.Minute)

func (g *grid) index(t time.Time, series func(func([]int64))) int {
	ns := t.UnixNano()
	if g.width == 0 {
		g.width = minWidth
		g.start = floorTo(ns, g.width)
	}
	if ns < g.start || ns >= g.start+seriesBuckets*g.width {
		// Widen until both the old range and ns fit, then fold the old
		// buckets in: each lies inside one new bucket, since widths are
		// powers of two times the first and starts are aligned.
		lo := min(ns, g.start)
		hi := max(ns, g.start+seriesBuckets*g.width-1)
		nw, ns0 := g.width, int64(0)
		for {
			nw *= 2
			ns0 = floorTo(lo, nw)
			if hi < ns0+seriesBuckets*nw {
				break
			}
		}
		oldStart, oldWidth := g.start, g.width
		tmp := make([]int64, seriesBuckets)
		series(func(s []int64) {
			clear(tmp)
			for k, v := range s {
				if v != 0 {
					tmp[(oldStart+int64(k)*oldWidth-ns0)/nw] += v
				}
			}
			copy(s, tmp)
		})
		g.start, g.width = ns0, nw
	}
	return int((ns - g.start) / g.width)
}

func floorTo(ns, w int64) int64 {
	r := ns % w
	if r < 0 {
		r += w
	}
	return ns - r
}

// Stats returns the counts so far, for a progress display: lines read and
// crawler requests among them.
func (a *Auditor) Stats() (lines, bots int64) {
	return a.lines + a.bad + a.notAccess + a.skipped, a.bots
}
