// Package audit streams Caddy JSON access logs and reports, per crawler,
// how it behaved against a robots.txt: requests the rules disallow,
// requests that conflict with the AI usage preferences it states,
// Crawl-delay violations, spoofed claims, whether it fetched /robots.txt,
// and what a changed robots.txt would newly refuse. Memory is bounded
// whatever the size of the logs: only per-crawler aggregates are kept, for
// a bounded number of crawlers.
package audit

import (
	"context"
	"errors"
	"hash/maphash"
	"net"
	"net/netip"
	"sort"
	"strings"
	"time"
	"unsafe"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
)

// Defaults of Config.
const (
	DefaultMaxCrawlers = 200
	samplePaths        = 5
	delaySlots         = 1 << 16 // crawler+address slots for Crawl-delay gaps
	uaCacheMax         = 1 << 15
	verdictCacheMax    = 1 << 15
	seriesBuckets      = 96
)

// OtherName is the name of the bucket that collects the crawlers beyond
// Config.MaxCrawlers.
const OtherName = "(other crawlers)"

// Config configures an Auditor.
type Config struct {
	// Robots is the robots.txt the traffic is judged against.
	Robots *enforce.Robots
	// RobotsNew, when set, is a changed robots.txt: the report says which
	// requests it would newly refuse.
	RobotsNew *enforce.Robots
	// MaxCrawlers bounds the crawlers reported by name; the others are
	// counted together under OtherName. Default DefaultMaxCrawlers.
	MaxCrawlers int
}

// Auditor aggregates access-log lines. It is not safe for concurrent use.
type Auditor struct {
	cfg      Config
	scanner  Scanner
	entry    Entry
	ident    *agents.Identifier
	verifier *agents.Verifier
	lineTime time.Time // the time of the line being verified, for list freshness
	done     context.Context

	uaCache  map[string]uaEntry
	verdicts map[string]map[string]agents.Verdict // method -> address -> verdict
	crawlers []*crawler
	byName   map[string]*crawler
	other    *crawler
	seed     maphash.Seed
	delay    []delaySlot
	// prefs and prefsNew: Robots and RobotsNew state AI usage preferences
	// (Content-Usage, Content-Signal). Without them no request pays for a
	// preference lookup.
	prefs, prefsNew bool

	lines, bad, notAccess, browsers, bots int64
	first, last                           time.Time
	grid                                  grid
}

type uaEntry struct {
	sh *agents.Shared
	c  *crawler
	// refusable: a preference can refuse the agent's documented purpose
	// (see purposeRefusable).
	refusable bool
}

type delaySlot struct {
	key  uint64
	last int64
}

// crawler is the aggregate of one crawler.
type crawler struct {
	idx                   int
	name                  string
	agent                 agents.Agent
	requests, disallowed  int64
	delayViolations       int64
	spoofed               int64
	robotsFetches         int64
	newlyRefused          int64
	newlyAllowed          int64
	conflicts             int64                     // allowed requests a preference refuses
	newlyConflicting      int64                     // with RobotsNew: allowed by both, refused by its preference only
	refusals, newRefusals map[enforce.Refusal]int64 // which preference refused, with the counts
	first, last           time.Time
	rules                 map[*enforce.Rule]int64
	samples               []string
	reqSeries, violSeries []int64
	interval              time.Duration
}

// New returns an Auditor for cfg.
func New(cfg Config) (*Auditor, error) {
	if cfg.Robots == nil {
		return nil, errors.New("audit: no robots.txt")
	}
	if cfg.MaxCrawlers <= 0 {
		cfg.MaxCrawlers = DefaultMaxCrawlers
	}
	a := &Auditor{
		cfg:      cfg,
		prefs:    cfg.Robots.HasPreferences(),
		prefsNew: cfg.RobotsNew.HasPreferences(),
		ident:    agents.NewIdentifier(4096),
		uaCache:  map[string]uaEntry{},
		verdicts: map[string]map[string]agents.Verdict{},
		byName:   map[string]*crawler{},
		seed:     maphash.MakeSeed(),
		delay:    make([]delaySlot, delaySlots),
	}
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
		return nil, err
	}
	a.verifier = v
	return a, nil
}

// Line adds one access-log line (without its newline).
func (a *Auditor) Line(line []byte) {
	e := &a.entry
	if !a.scanner.Parse(line, e) {
		if len(line) > 0 {
			a.bad++
		}
		return
	}
	if !e.HasURI {
		a.notAccess++
		return
	}
	a.lines++
	t := e.Time
	if !t.IsZero() {
		if a.first.IsZero() || t.Before(a.first) {
			a.first = t
		}
		if t.After(a.last) {
			a.last = t
		}
	}
	ue, ok := a.uaCache[string(e.UserAgent)]
	if !ok {
		ua := string(e.UserAgent)
		ue.sh = a.ident.IdentifyShared(ua)
		if ue.sh.Bot {
			ue.c = a.crawlerFor(&ue.sh.Agent)
			ue.refusable = purposeRefusable(ue.sh.Agent.Purpose)
		}
		if len(a.uaCache) >= uaCacheMax {
			clear(a.uaCache)
		}
		a.uaCache[ua] = ue
	}
	if ue.c == nil {
		a.browsers++
		return
	}
	a.bots++
	a.judge(ue.c, &ue.sh.Agent, ue.refusable, e, t)
}

// crawlerFor returns the aggregate a crawler's requests go to.
func (a *Auditor) crawlerFor(ag *agents.Agent) *crawler {
	name := ag.Name
	if name == "" {
		name = "(no User-Agent)"
	}
	if c := a.byName[name]; c != nil {
		return c
	}
	if len(a.crawlers) >= a.cfg.MaxCrawlers {
		if a.other == nil {
			a.other = a.newCrawler(OtherName, agents.Agent{Bot: true})
		}
		return a.other
	}
	c := a.newCrawler(name, *ag)
	a.byName[name] = c
	a.crawlers = append(a.crawlers, c)
	return c
}

func (a *Auditor) newCrawler(name string, ag agents.Agent) *crawler {
	return &crawler{
		idx: len(a.crawlers) + 1, name: name, agent: ag,
		rules:      map[*enforce.Rule]int64{},
		reqSeries:  make([]int64, seriesBuckets),
		violSeries: make([]int64, seriesBuckets),
	}
}

// judge counts one crawler request. refusable tells whether an AI usage
// preference can refuse ag's purpose.
func (a *Auditor) judge(c *crawler, ag *agents.Agent, refusable bool, e *Entry, t time.Time) {
	c.requests++
	if !t.IsZero() {
		if c.first.IsZero() || t.Before(c.first) {
			c.first = t
		}
		if t.After(c.last) {
			c.last = t
		}
	}
	addr := e.Addr()
	verdict := agents.Unverified
	if ag.Profile.Verify != "" && len(addr) > 0 {
		verdict = a.verify(ag, addr, t)
	}
	tokens, wildcard := ag.Tokens, !ag.Profile.IgnoresWildcard
	if verdict == agents.Spoofed {
		c.spoofed++
		tokens, wildcard = nil, true
	}
	// The target is only read during the decisions below, which do not
	// keep it: no copy of the URI is needed.
	target := originForm(unsafe.String(unsafe.SliceData(e.URI), len(e.URI)))
	robotsTxt := isRobotsTxt(target)
	if robotsTxt {
		c.robotsFetches++
	}
	g := a.cfg.Robots.Select(tokens, wildcard)
	d := g.Decide(target)
	violation := false
	if !d.Allowed {
		c.disallowed++
		c.rules[d.Rule]++
		violation = true
	}
	// A preference is looked up only for a crawler whose documented
	// purpose a preference can refuse, on an allowed path (a disallowed
	// one has no preference), and never for /robots.txt, which the robots
	// handler serves to every client: that is where preferences are read.
	refusable = refusable && !robotsTxt
	conflict := false
	if a.prefs && refusable && d.Allowed {
		var ref enforce.Refusal
		if ref, conflict = preferences(a.cfg.Robots, d, tokens, wildcard, target).Refuses(string(ag.Purpose)); conflict {
			c.conflicts++
			countRefusal(&c.refusals, ref)
		}
	}
	if iv := g.Interval(); iv > 0 && !t.IsZero() && len(addr) > 0 {
		c.interval = max(c.interval, iv)
		if a.tooSoon(c, addr, t, iv) {
			c.delayViolations++
			violation = true
		}
	}
	if a.cfg.RobotsNew != nil {
		dn := a.cfg.RobotsNew.Select(tokens, wildcard).Decide(target)
		switch {
		case d.Allowed && !dn.Allowed:
			c.newlyRefused++
			if len(c.samples) < samplePaths && !contains(c.samples, target) {
				c.samples = append(c.samples, strings.Clone(target))
			}
		case !d.Allowed && dn.Allowed:
			c.newlyAllowed++
		}
		// Newly conflicting: allowed today without conflict, allowed by
		// the new file too, but refused by its preference. (A request the
		// current file disallows is already refused; one the new file
		// disallows is newly refused.)
		if a.prefsNew && refusable && d.Allowed && dn.Allowed && !conflict {
			if ref, ok := preferences(a.cfg.RobotsNew, dn, tokens, wildcard, target).Refuses(string(ag.Purpose)); ok {
				c.newlyConflicting++
				countRefusal(&c.newRefusals, ref)
			}
		}
	}
	if !t.IsZero() {
		i := a.grid.index(t, a.allSeries)
		c.reqSeries[i]++
		if violation {
			c.violSeries[i]++
		}
	}
}

// tooSoon records a request of c from addr at t and reports whether it
// came less than iv after the previous one of the same crawler and address.
// The table is direct-mapped: a collision only forgets a gap, it never
// invents one (keys are compared in full).
func (a *Auditor) tooSoon(c *crawler, addr []byte, t time.Time, iv time.Duration) bool {
	var h maphash.Hash
	h.SetSeed(a.seed)
	h.Write(addr)
	var idx [8]byte
	for k := range idx {
		idx[k] = byte(c.idx >> (8 * k))
	}
	h.Write(idx[:])
	key := h.Sum64() | 1
	s := &a.delay[key&(delaySlots-1)]
	now := t.UnixNano()
	soon := false
	if s.key == key {
		gap := now - s.last
		if gap < 0 {
			gap = -gap
		}
		soon = gap < int64(iv)
	}
	s.key, s.last = key, now
	return soon
}

// verify checks a claim against the embedded IP lists, caching per address.
func (a *Auditor) verify(ag *agents.Agent, addr []byte, t time.Time) agents.Verdict {
	m := a.verdicts[ag.Profile.Verify]
	if v, ok := m[string(addr)]; ok {
		return v
	}
	ip, err := netip.ParseAddr(string(addr))
	if err != nil {
		return agents.Unverified
	}
	a.lineTime = t
	v := a.verifier.Verify(a.done, *ag, ip)
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

func (a *Auditor) allSeries(f func([]int64)) {
	for _, c := range a.crawlers {
		f(c.reqSeries)
		f(c.violSeries)
	}
	if a.other != nil {
		f(a.other.reqSeries)
		f(a.other.violSeries)
	}
}

// preferences returns the AI usage preferences for target of the group d
// was decided by, which must be allowed: the group the crawler reads (its
// own, or "*" unless it ignores "*"), without deciding again. When no group
// applies, the file-level Content-Signal pairs do, as
// [enforce.Robots.Preferences] gives them (r has no "*" group then, so it
// selects none either); a crawler that ignores "*" and finds no group of
// its own reads no preference.
func preferences(r *enforce.Robots, d enforce.Decision, tokens []string, wildcard bool, target string) enforce.Preferences {
	if d.Group != nil {
		return d.Preferences(target)
	}
	if wildcard {
		return r.Preferences(tokens, target)
	}
	return enforce.Preferences{}
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

// originForm returns the path and query of an absolute-form request target
// ("http://host/a?b", sent to proxies), as the robots handler judges it;
// other targets are returned as they are.
func originForm(uri string) string {
	if len(uri) > 0 && uri[0] != '/' {
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

// isRobotsTxt reports whether target's path is /robots.txt.
func isRobotsTxt(target string) bool {
	const p = "/robots.txt"
	return strings.HasPrefix(target, p) && (len(target) == len(p) || target[len(p)] == '?')
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
func (a *Auditor) Stats() (lines, bots int64) { return a.lines + a.bad + a.notAccess, a.bots }

// Report returns the report of everything added so far.
func (a *Auditor) Report() *Report {
	r := &Report{
		Lines: a.lines, Unreadable: a.bad, NotAccess: a.notAccess,
		Browsers: a.browsers, Crawlers: a.bots,
		First: a.first, Last: a.last,
		Preview:     a.cfg.RobotsNew != nil,
		Preferences: a.prefs, PreferencesNew: a.prefsNew,
	}
	if a.grid.width > 0 {
		r.SeriesStart = time.Unix(0, a.grid.start).UTC()
		r.SeriesStep = time.Duration(a.grid.width)
	}
	list := append([]*crawler(nil), a.crawlers...)
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].requests != list[j].requests {
			return list[i].requests > list[j].requests
		}
		return list[i].name < list[j].name
	})
	if a.other != nil {
		list = append(list, a.other)
	}
	for _, c := range list {
		cr := CrawlerReport{
			Name: c.name, Operator: c.agent.Operator, Category: string(c.agent.Category), Purpose: string(c.agent.Purpose),
			Known:    c.agent.Known,
			Tokens:   c.agent.Tokens,
			Requests: c.requests, Disallowed: c.disallowed, CrawlDelayViolations: c.delayViolations,
			PreferenceConflicts:      c.conflicts,
			PreferenceRefusals:       refusalCounts(c.refusals),
			NewlyConflicting:         c.newlyConflicting,
			NewlyConflictingRefusals: refusalCounts(c.newRefusals),
			Interval:                 Seconds(c.interval),
			IgnoresCrawlDelay:        c.agent.Profile.CrawlDelay == agents.SupportNo && c.name != OtherName,
			Spoofed:                  c.spoofed,
			FetchedRobotsTxt:         c.robotsFetches > 0,
			RobotsTxtFetches:         c.robotsFetches,
			First:                    c.first,
			Last:                     c.last,
			NewlyRefused:             c.newlyRefused,
			NewlyAllowed:             c.newlyAllowed,
			NewlyRefusedSample:       c.samples,
			SeriesRequests:           c.reqSeries,
			SeriesViolations:         c.violSeries,
		}
		if cr.Tokens == nil {
			cr.Tokens = []string{}
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
		r.Crawler = append(r.Crawler, cr)
	}
	return r
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
