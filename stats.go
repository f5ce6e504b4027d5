package caddyrobots

import (
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/admin"
	"github.com/caddyrobots/caddy-robots/internal/policy"
	"github.com/caddyrobots/caddy-robots/internal/sites"
)

// crawlerStats counts decisions per crawler name and claim for the admin
// API's top crawlers and top offenders. Memory is bounded whatever names a
// flood sends: it counts at most maxCrawlersCounted names, the first ones
// seen, so only the long tail of a full table is lost, never the crawlers
// that came first. Names are counted, not the Identifier's answers: one
// crawler has many answers (one per User-Agent string, a new one for every
// signed request).
type crawlerStats struct {
	byName sync.Map     // crawler name → *nameCounts
	names  atomic.Int32 // entries of byName
	// since is when counting started: the site block's first handler
	// since the process started, kept across config reloads.
	since time.Time
	// A counted request is in one history: its crawler's (name and
	// claim), for at most maxCrawlerHistories crawlers (histories counts
	// them), else rest's; the site block's history is their sum, read
	// when asked for, so that a request pays for one history only.
	rest      *admin.History
	histories atomic.Int32
	// tls is what the site block's tls signal saw (tlsSeen), bounded.
	tls admin.TLSWatch
}

// maxCrawlerHistories bounds the crawlers whose history a crawlerStats
// keeps (a few KiB each), the first ones seen (a few more may slip in when
// many new crawlers arrive at once).
const maxCrawlerHistories = 24

// maxCrawlersCounted bounds the names a crawlerStats counts (a few more
// may slip in when many new names arrive at once).
const maxCrawlersCounted = 256

// nameCounts are the counts of one crawler name, by claim.
type nameCounts struct {
	byClaim [numClaims]crawlerCounts
	// value is the name as an interface value, boxed once: the
	// robots_agent var of each of the crawler's requests (publishOutcome)
	// then costs no allocation.
	value any
}

// crawlerCounts are the counts of one crawler name and claim.
type crawlerCounts struct {
	allowed, refused, retries atomic.Uint64
	// wouldRefuse are the requests served in mode log that enforce would
	// have refused or throttled: not offences the crawler was refused for.
	wouldRefuse atomic.Uint64
	// unavailable are the 503s because the site's robots.txt was
	// unavailable: no fault of the crawler's, so not refused (offences).
	unavailable atomic.Uint64
	// history is the crawler's requests over time; nil until its first
	// request, and for good when the crawlerStats keeps enough of them.
	history atomic.Pointer[admin.History]
}

func newCrawlerStats() *crawlerStats {
	return &crawlerStats{since: time.Now(), rest: admin.NewHistory()}
}

// claim says how far a request's name is proven, for the counts: an
// unverified "Googlebot" is counted apart from the real one, so that a
// report never credits Google with a scraper's requests.
type claim uint8

const (
	// claimPlain: the name is proven (verified, signed) or the crawler
	// publishes no way to prove it (its name is all anyone has).
	claimPlain claim = iota
	// claimUnverified: the crawler publishes a verification method and
	// this request could not be verified (a lookup failed or is pending).
	claimUnverified
	// claimSpoofed: the address is provably not the named operator's.
	claimSpoofed
	numClaims
)

// String returns "" (plain), "unverified claim" or "spoofed".
func (c claim) String() string {
	switch c {
	case claimUnverified:
		return "unverified claim"
	case claimSpoofed:
		return "spoofed"
	}
	return ""
}

// claimOf classifies a judged request's name.
func claimOf(a *agents.Shared, v agents.Verdict) claim {
	switch {
	case v == agents.Spoofed:
		return claimSpoofed
	case v == agents.Verified || a.Profile.Verify == "":
		return claimPlain
	}
	return claimUnverified
}

// noNameLabel is how reports show a bot whose User-Agent names nothing: an
// empty one, "-" or a bare "Mozilla/5.0".
const noNameLabel = "(no User-Agent name)"

// countsOf returns the counts of the crawler a with claim c, making them
// on first sight of a's name; nil when the table is full.
func (s *crawlerStats) countsOf(a *agents.Shared, c claim) *crawlerCounts {
	if nc := s.named(a.Name); nc != nil {
		return &nc.byClaim[c]
	}
	return nil
}

// named returns the counts of the crawler called name, making them on
// first sight of the name; nil when the table is full.
func (s *crawlerStats) named(name string) *nameCounts {
	v, ok := s.byName.Load(name)
	if !ok {
		if s.names.Load() >= maxCrawlersCounted {
			return nil
		}
		var loaded bool
		v, loaded = s.byName.LoadOrStore(name, &nameCounts{value: name})
		if !loaded {
			s.names.Add(1)
		}
	}
	return v.(*nameCounts)
}

// seen counts one decision for the crawler a, with the verdict on its name.
// In mode log nothing is refused: a decision other than Allow is counted
// as what enforce would refuse, and the history records what the crawler
// got, a served request. It returns a's name as an interface value, boxed
// once per counted name (nil when the name is not counted).
func (s *crawlerStats) seen(a *agents.Shared, v agents.Verdict, act policy.Action, logMode bool) (name any) {
	if s == nil {
		return nil
	}
	o := admin.Served
	switch {
	case act == policy.Allow || logMode:
	case act == policy.Throttle:
		o = admin.Throttled
	default:
		o = admin.Refused
	}
	nc := s.named(a.Name)
	if nc == nil {
		s.record(nil, o)
		return nil
	}
	cc := &nc.byClaim[claimOf(a, v)]
	s.record(cc, o)
	switch {
	case act == policy.Allow:
		cc.allowed.Add(1)
	case logMode:
		cc.wouldRefuse.Add(1)
	default:
		cc.refused.Add(1)
	}
	return nc.value
}

// record adds a request with outcome o to the history of its crawler (cc,
// nil when its name is not counted) when it has one or may have one more,
// else to rest.
//
// The time is the loaders' coarse clock: buckets are a minute wide or
// more, and a clock read on every bot request is not free on every
// machine.
func (s *crawlerStats) record(cc *crawlerCounts, o admin.Outcome) {
	now := time.Unix(sites.Seconds(), 0)
	var h *admin.History
	if cc != nil {
		h = cc.history.Load()
		if h == nil && s.histories.Load() < maxCrawlerHistories {
			if cc.history.CompareAndSwap(nil, admin.NewHistory()) {
				s.histories.Add(1)
			}
			h = cc.history.Load()
		}
	}
	if h == nil {
		h = s.rest
	}
	h.Record(now, o)
}

// history reads the site block's history at now, with the histories of
// the crawlers top lists (as top returned them) that have one.
func (s *crawlerStats) history(now time.Time, top []admin.CrawlerCount) admin.HistoryStatus {
	if s == nil {
		return admin.HistoryOf(nil, nil, now)
	}
	all := []*admin.History{s.rest}
	s.byName.Range(func(_, v any) bool {
		nc := v.(*nameCounts)
		for c := range nc.byClaim {
			all = append(all, nc.byClaim[c].history.Load())
		}
		return true
	})
	var cs []admin.CrawlerSeries
	for _, c := range top {
		name := c.Name
		if name == noNameLabel {
			name = ""
		}
		v, ok := s.byName.Load(name)
		if !ok {
			continue
		}
		cl := claimNamed(c.Claim)
		cs = append(cs, admin.CrawlerSeries{Name: c.Name, Claim: c.Claim, History: v.(*nameCounts).byClaim[cl].history.Load()})
	}
	return admin.HistoryOf(all, cs, now)
}

// describe sets the counts of s in site: its top crawlers and offenders,
// the refusals for an unavailable robots.txt, since when it counts and its
// history at now, and what its tls signal saw.
func (s *crawlerStats) describe(site *admin.Site, now time.Time) {
	site.TopCrawlers = s.top(admin.Top, false)
	site.TopOffenders = s.top(admin.Top, true)
	site.RefusedUnavailable = s.unavailableTotal()
	site.CountsSince = s.countingSince()
	site.History = s.history(now, site.TopCrawlers)
	site.TLS = s.tlsStatus()
}

// claimNamed is the claim whose String is name.
func claimNamed(name string) claim {
	for c := range numClaims {
		if c.String() == name {
			return c
		}
	}
	return claimPlain
}

// countingSince is when s started counting; zero for none.
func (s *crawlerStats) countingSince() time.Time {
	if s == nil {
		return time.Time{}
	}
	return s.since
}

// seenUnavailable counts one request of the crawler a refused (503)
// because the site's robots.txt was unavailable: apart from its refusals,
// so that a polite crawler is never listed among the offenders for it.
func (s *crawlerStats) seenUnavailable(a *agents.Shared, v agents.Verdict) {
	if s == nil {
		return
	}
	cc := s.countsOf(a, claimOf(a, v))
	s.record(cc, admin.Served)
	if cc != nil {
		cc.unavailable.Add(1)
	}
}

// unavailableTotal is how many requests were refused because robots.txt
// was unavailable, every crawler's.
func (s *crawlerStats) unavailableTotal() uint64 {
	if s == nil {
		return 0
	}
	var n uint64
	s.byName.Range(func(_, v any) bool {
		for c := range v.(*nameCounts).byClaim {
			n += v.(*nameCounts).byClaim[c].unavailable.Load()
		}
		return true
	})
	return n
}

// retried counts an immediate retry: a request that came back inside the
// Retry-After it was given.
func (s *crawlerStats) retried(a *agents.Shared, v agents.Verdict) {
	if s == nil {
		return
	}
	if cc := s.countsOf(a, claimOf(a, v)); cc != nil {
		cc.retries.Add(1)
	}
}

// top returns the n crawlers with the most requests (by refused when
// offenders is set).
func (s *crawlerStats) top(n int, offenders bool) []admin.CrawlerCount {
	if s == nil {
		return nil
	}
	var out []admin.CrawlerCount
	s.byName.Range(func(k, v any) bool {
		name, counts := k.(string), v.(*nameCounts)
		if name == "" {
			name = noNameLabel
		}
		for c := range counts.byClaim {
			cc := &counts.byClaim[c]
			n := admin.CrawlerCount{Name: name, Claim: claim(c).String(), Allowed: cc.allowed.Load(), Refused: cc.refused.Load(), Retries: cc.retries.Load(), Unavailable: cc.unavailable.Load(), WouldRefuse: cc.wouldRefuse.Load()}
			if n.Allowed+n.Refused+n.WouldRefuse+n.Retries+n.Unavailable == 0 || (offenders && n.Refused+n.WouldRefuse == 0) {
				continue
			}
			out = append(out, n)
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if offenders {
			ao, bo := a.Refused+a.WouldRefuse, b.Refused+b.WouldRefuse
			return ao > bo || (ao == bo && countsLess(a, b))
		}
		at, bt := a.Allowed+a.Refused+a.WouldRefuse, b.Allowed+b.Refused+b.WouldRefuse
		return at > bt || (at == bt && countsLess(a, b))
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// countsLess orders counts of equal size by name, then claim.
func countsLess(c, d admin.CrawlerCount) bool {
	return c.Name < d.Name || (c.Name == d.Name && c.Claim < d.Claim)
}

// noteTLS counts, for the status page, a request that reached the tls
// signal (checkUndeclared): over HTTPS, with its fingerprint fp or none;
// and, when the signal judged it as an undeclared crawler's (why: what it
// found; e: what its User-Agent claims), its fingerprint, claim and
// network, by whether the signal refuses or only logs. A person's request
// pays one atomic add.
func (h *Handler) noteTLS(r *http.Request, fp *tlsFingerprint, e *agents.ClaimEntry, why string) {
	if r.TLS == nil && fp == nil {
		return
	}
	s := h.statsFor(r)
	if s == nil {
		return
	}
	s.tls.Seen(fp != nil)
	if why == "" || fp == nil || e == nil {
		return
	}
	s.tls.Judged(admin.TLSJudgement{JA4: fp.JA4, Engine: fp.Verdict.Engine.String(), Why: why, Claim: e.TLS.Browser,
		Network: policy.TrapPrefix(clientIP(nil, r)), Enforced: h.undeclared.modes[policy.SignalTLS].Enforced(h.enforce), At: h.now()})
}

// tlsStatus is what the tls signal saw, for the admin API.
func (s *crawlerStats) tlsStatus() admin.TLSStatus {
	if s == nil {
		return admin.TLSStatus{Logged: []admin.TLSClient{}, Enforced: []admin.TLSClient{}}
	}
	return s.tls.Status()
}
