package admin

// GET /robots/status (and the status page's facts): per handler its sites,
// versions in grace, last load, top crawlers, bans, store health, IP lists.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/sites"
)

// StatusReport is the answer of GET /robots/status.
type StatusReport struct {
	Time     time.Time       `json:"time"`
	Handlers []HandlerStatus `json:"handlers"`
	// IPLists are the crawler IP lists the handlers verify claims with,
	// once for all (a handler lists its own only when they differ).
	IPLists []IPListStatus `json:"ip_lists"`
}

// HandlerStatus describes one robots handler of the running configuration.
type HandlerStatus struct {
	// Index is the handler's position, for "handler" in /robots/check.
	Index int `json:"index"`
	// SiteBlock names the site block the handler serves: its host
	// patterns and listen addresses ("a.example on :443", "* on :8080").
	SiteBlock string `json:"site_block"`
	Source    string `json:"source"`
	File      string `json:"file,omitempty"`
	Mode      string `json:"mode"`
	// Server is the listen addresses of the server the handler serves,
	// known from its first request.
	Server       string         `json:"server,omitempty"`
	GraceSeconds float64        `json:"grace_seconds"`
	Strikes      string         `json:"strikes"`
	Sites        []SiteStatus   `json:"sites"`
	TopCrawlers  []CrawlerCount `json:"top_crawlers"`
	TopOffenders []CrawlerCount `json:"top_offenders"`
	// RefusedUnavailable is how many bot requests were refused (503)
	// because robots.txt was unavailable: counted apart from the
	// offenders, whose refusals are their own doing.
	RefusedUnavailable uint64 `json:"refused_while_unavailable"`
	// CountsSince is when the counts (top crawlers and offenders,
	// history) started: a config reload that keeps the site block keeps
	// counting, so it is the block's first load since the process started.
	CountsSince *time.Time `json:"counts_since,omitempty"`
	// History is the site block's requests, refusals and throttles per
	// minute over the last hour and per quarter-hour over the last day,
	// and each top crawler's.
	History HistoryStatus `json:"history"`
	Bans    BanCount      `json:"bans"`
	Store   StoreStatus   `json:"store"`
	// IPLists are the published crawler IP lists the handler verifies
	// claims with, their age and where they come from, when they differ
	// from the report's (shared) ones; absent otherwise.
	IPLists []IPListStatus `json:"ip_lists,omitempty"`
	// ConfigWarnings are the warnings about the handler's configuration
	// logged at load (and since: a server found trusting proxies without
	// trusted_proxies_strict), each as logged.
	ConfigWarnings []string `json:"config_warnings"`
	// UntrustedProxy is the first peer on a private or loopback address
	// found sending X-Forwarded-For or Forwarded while the server does not
	// trust it: a configuration error shown in red.
	UntrustedProxy string `json:"untrusted_proxy,omitempty"`
	// TLS is what the tls signal saw: requests with and without a
	// fingerprint, and the fingerprints it judged, by mode (tlswatch.go).
	TLS TLSStatus `json:"tls"`
	// moreSites is how many sites the status page leaves out.
	moreSites int
}

// IPListStatus is one verification method's IP list.
type IPListStatus struct {
	Method string `json:"method"`
	// AsOf is the list's date: the embedded snapshot's, or when its
	// operator last confirmed the downloaded one.
	AsOf       time.Time `json:"as_of"`
	AgeSeconds float64   `json:"age_seconds"`
	// VerifiedBy is how a claim of the method is verified: "reverse DNS"
	// (forward-confirmed; the list only confirms, quickly) or "list".
	VerifiedBy string `json:"verified_by"`
	// ProvesSpoofs says whether a claim from an address the method does
	// not confirm is refused as spoofed: always with reverse DNS; with a
	// list only while its operator confirmed it within the last 30 days
	// (and only for operators whose lists are complete). Why says which.
	ProvesSpoofs bool   `json:"proves_spoofs"`
	Why          string `json:"why"`
	// Sources are the operator URLs the list is downloaded from (or the
	// URL or file configured with verify ranges).
	Sources []string `json:"sources,omitempty"`
}

// ipListsOf describes the IP lists of s's verifier.
func ipListsOf(s Site, now time.Time) []IPListStatus {
	out := []IPListStatus{}
	if s.Verifier == nil {
		return out
	}
	sources := map[string][]string{}
	for _, pl := range agents.PublishedLists() {
		sources[pl.Method] = append(sources[pl.Method], pl.URL)
	}
	for m, src := range s.Ranges {
		sources[m] = []string{src}
	}
	for _, m := range agents.VerificationMethods() {
		asOf, ok := s.Verifier.ListAsOf(m.Key)
		if !ok {
			continue
		}
		st := IPListStatus{Method: m.Key, AsOf: asOf.UTC(), AgeSeconds: now.Sub(asOf).Seconds(), Sources: sources[m.Key]}
		st.VerifiedBy, st.ProvesSpoofs, st.Why = listProves(m, now.Sub(asOf))
		out = append(out, st)
	}
	return out
}

// listProves says how a method verifies a claim, whether an address it
// does not confirm is proven an impostor, and why (the rule the verifier
// applies: agents.Verifier).
func listProves(m agents.VerificationMethod, age time.Duration) (by string, proves bool, why string) {
	days := int(age / (24 * time.Hour))
	switch {
	case len(m.RDNSSuffixes) > 0:
		return "reverse DNS", true, fmt.Sprintf("verified by forward-confirmed reverse DNS (%s); the list (%d days old) only confirms an address without a lookup",
			strings.Join(m.RDNSSuffixes, ", "), days)
	case !m.SpoofIfUnlisted:
		return "list", false, "the operator does not publish its list as complete: an address outside it is unverified, never spoofed"
	case age > agents.DefaultMaxListAge:
		return "list", false, fmt.Sprintf("the list was confirmed by its operator %d days ago, more than 30: it verifies addresses in it, but an address outside it is unverified, not spoofed", days)
	}
	return "list", true, fmt.Sprintf("the list was confirmed by its operator %d days ago (30 at most): an address outside it is an impostor", days)
}

// SiteStatus describes the robots.txt of one site.
type SiteStatus struct {
	// Host is the site's host name; empty for source file and inline.
	Host   string `json:"host"`
	Server string `json:"server,omitempty"`
	// State is ok (a copy is in force), pending (the first load has not
	// finished) or unavailable (no copy was ever obtained).
	State string `json:"state"`
	// NoCopy, for an unavailable site, says that there is no copy of its
	// robots.txt yet (nothing "last good" is kept) and which unavailable
	// rule crawlers get meanwhile.
	NoCopy string `json:"no_copy,omitempty"`
	// Warnings are what is wrong with the current robots.txt although it
	// loaded (state ok): an HTML page, UTF-16, no group, cut at 500 KiB,
	// the trap's Disallow line missing. Empty when nothing is.
	Warnings []string `json:"warnings"`
	Version  string   `json:"version,omitempty"`
	// CurrentSince is when the current version became current.
	CurrentSince *time.Time `json:"current_since,omitempty"`
	// AgeSeconds is how old the current copy is: the time since the last
	// successful load, or, when the last load failed or the source is a
	// file or inline text, since the version became current.
	AgeSeconds *float64 `json:"age_seconds,omitempty"`
	// Versions lists the versions kept, current first; older ones are
	// still honoured while in_grace.
	Versions []VersionStatus `json:"versions"`
	Fetch    *FetchStatus    `json:"fetch,omitempty"`
	// PendingChange is a change to "no rules" (a 4xx, an empty or
	// comment-only robots.txt) that awaits a second fetch to confirm it;
	// until then Version, the last rules, stays in force.
	PendingChange *PendingChange `json:"pending_change,omitempty"`
}

// PendingChange describes a change to no rules awaiting confirmation.
type PendingChange struct {
	// What is what the site answered.
	What  string    `json:"what"`
	Since time.Time `json:"since"`
	// ConfirmAt is when a fetch that still sees it publishes it.
	ConfirmAt time.Time `json:"confirm_at"`
}

// VersionStatus is one robots.txt version a site keeps.
type VersionStatus struct {
	ID string `json:"id"`
	// From is when the version became current, or, with StartUnknown,
	// when it was first loaded: it was current already (a site's first
	// load, the first after a restart), so it is never taken for a brief
	// version, which earns grace only for the crawlers seen fetching it.
	From         time.Time  `json:"from"`
	StartUnknown bool       `json:"start_unknown,omitempty"`
	Until        *time.Time `json:"until,omitempty"`
	Current      bool       `json:"current,omitempty"`
	InGrace      bool       `json:"in_grace,omitempty"`
	// FinalURL is where the version was read when the site's robots.txt
	// redirected, possibly to another host.
	FinalURL string `json:"final_url,omitempty"`
}

// FetchStatus is a site's last load and when the next is due.
type FetchStatus struct {
	Last   *time.Time `json:"last,omitempty"`
	Result string     `json:"result,omitempty"`
	Error  string     `json:"error,omitempty"`
	Next   *time.Time `json:"next,omitempty"`
	// FinalURL is the URL the last load was answered from after following
	// the site's redirects (RFC 9309 §2.3.1.2: up to five, to any host);
	// absent when the site answered /robots.txt itself.
	FinalURL string `json:"final_url,omitempty"`
}

// BanCount is how many bans a handler's store holds.
type BanCount struct {
	// Count is the bans in force; Logged the bans earned in mode log,
	// which refuse nothing (the crawlers would be banned).
	Count  int `json:"count"`
	Logged int `json:"logged"`
	// Truncated is set when more bans exist than were counted.
	Truncated bool   `json:"truncated,omitempty"`
	Error     string `json:"error,omitempty"`
}

// StoreStatus describes the throttle and strike store of a handler.
type StoreStatus struct {
	Type    string `json:"type"`
	Healthy bool   `json:"healthy"`
	// PingMS is how long the Redis PING took (limit 100 ms).
	PingMS float64 `json:"ping_ms,omitempty"`
	Error  string  `json:"error,omitempty"`
	// DecidingLocally is set while Redis failed recently and decisions
	// come from the local memory store (fail open).
	DecidingLocally bool `json:"deciding_locally,omitempty"`
	// Entries and Capacity are the memory store's identities held and cap.
	Entries  int `json:"entries,omitempty"`
	Capacity int `json:"capacity,omitempty"`
}

// storeFacts is what one status request learnt about a store, shared by
// the handlers that use it.
type storeFacts struct {
	status StoreStatus
	bans   BanCount
	// list is the bans counted, for the counts of each site block.
	list []state.Ban
}

// banScans holds each store's list of bans for one report, so that the
// status page, which shows both the counts of GET /robots/status and the
// list of GET /robots/bans, asks each store once (with Redis, one SCAN of
// the ban keys instead of two). A nil banScans asks every time.
type banScans map[state.Store]banScan

type banScan struct {
	bans []state.Ban
	err  error
}

// list returns the bans of s's store in force at now, at most
// state.MaxBansListed, waiting at most storeWait.
func (m banScans) list(ctx context.Context, s Site, l state.BanLister, now time.Time) ([]state.Ban, error) {
	if sc, ok := m[s.Store]; ok {
		return sc.bans, sc.err
	}
	bctx, cancel := context.WithTimeout(ctx, storeWait)
	defer cancel()
	bans, err := l.Bans(bctx, now, state.MaxBansListed)
	if m != nil {
		m[s.Store] = banScan{bans, err}
	}
	return bans, err
}

// Status describes ss at now: the answer of GET /robots/status.
func Status(ctx context.Context, ss []Site, now time.Time) StatusReport {
	return buildStatus(ctx, ss, now, nil)
}

// buildStatus is Status with the ban listings shared with listBans.
func buildStatus(ctx context.Context, ss []Site, now time.Time, scans banScans) StatusReport {
	rep := StatusReport{Time: now.UTC(), Handlers: []HandlerStatus{}}
	stores := map[state.Store]*storeFacts{}
	for i, s := range ss {
		hs := handlerStatusOf(i, s, now)
		if s.Store != nil {
			f, ok := stores[s.Store]
			if !ok {
				f = storeFactsOf(ctx, s, now, scans)
				stores[s.Store] = f
			}
			hs.Store, hs.Bans = f.status, blockBans(f, s.Scope)
		}
		rep.Handlers = append(rep.Handlers, hs)
	}
	keepOwnSites(&rep, ss)
	shareIPLists(&rep)
	return rep
}

// handlerStatusOf describes the handler s, at index i, but for its store.
func handlerStatusOf(i int, s Site, now time.Time) HandlerStatus {
	hs := HandlerStatus{
		Index:              i,
		SiteBlock:          siteBlockOf(s, i),
		Source:             s.Source,
		File:               s.File,
		Mode:               s.Mode,
		Sites:              []SiteStatus{},
		TopCrawlers:        s.TopCrawlers,
		TopOffenders:       s.TopOffenders,
		RefusedUnavailable: s.RefusedUnavailable,
		IPLists:            ipListsOf(s, now),
		ConfigWarnings:     s.ConfigWarnings,
		GraceSeconds:       s.Grace.Seconds(),
		TLS:                s.TLS,
	}
	if hs.TLS.Logged == nil {
		hs.TLS.Logged = []TLSClient{}
	}
	if hs.TLS.Enforced == nil {
		hs.TLS.Enforced = []TLSClient{}
	}
	if !s.CountsSince.IsZero() {
		since := s.CountsSince.UTC()
		hs.CountsSince = &since
	}
	hs.History = s.History
	if hs.History.Crawlers == nil {
		hs.History = HistoryOf(nil, nil, now)
	}
	if p := s.UntrustedProxy; p.IsValid() {
		hs.UntrustedProxy = p.String()
	}
	if hs.ConfigWarnings == nil {
		hs.ConfigWarnings = []string{}
	}
	if p := s.Strikes; p.Enabled() {
		hs.Strikes = fmt.Sprintf("%d in %s, ban %s", p.Strikes, p.Window, p.Ban)
	} else {
		hs.Strikes = "off"
	}
	if s.Loader != nil {
		hs.Server = s.Loader.Server()
		for _, st := range s.Loader.Status() {
			hs.Sites = append(hs.Sites, siteStatusOf(s, st, now))
		}
	}
	if hs.TopCrawlers == nil {
		hs.TopCrawlers = []CrawlerCount{}
	}
	if hs.TopOffenders == nil {
		hs.TopOffenders = []CrawlerCount{}
	}
	return hs
}

// siteStatusOf describes one site of s at now: its grace and age are the
// handler's reading of the loader's facts.
func siteStatusOf(s Site, st sites.Status, now time.Time) SiteStatus {
	ss := SiteStatus{Host: st.Host, Server: st.Server, State: st.State, Versions: []VersionStatus{}, Warnings: st.Warnings}
	if ss.Warnings == nil {
		ss.Warnings = []string{}
	}
	if st.State == "unavailable" {
		ss.NoCopy = sites.NoCopyYet(s.Unavailable)
	}
	for _, v := range st.Versions {
		vs := VersionStatus{ID: v.ID, From: v.From.UTC(), StartUnknown: v.StartUnknown, Current: v.Current, FinalURL: v.FinalURL}
		if !v.Until.IsZero() {
			u := v.Until.UTC()
			vs.Until = &u
			vs.InGrace = now.Sub(v.Until) <= s.Grace
		}
		ss.Versions = append(ss.Versions, vs)
	}
	if !st.LastFetch.IsZero() || st.LastResult != "" {
		f := &FetchStatus{Result: st.LastResult, Error: st.LastError, FinalURL: st.FinalURL}
		if !st.LastFetch.IsZero() {
			t := st.LastFetch.UTC()
			f.Last = &t
		}
		if !st.NextFetch.IsZero() {
			t := st.NextFetch.UTC()
			f.Next = &t
		}
		ss.Fetch = f
	}
	if u := st.Unconfirmed; u != nil {
		ss.PendingChange = &PendingChange{What: u.What, Since: u.Since.UTC(), ConfirmAt: u.ConfirmAt.UTC()}
	}
	if len(st.Versions) > 0 {
		cur := st.Versions[0]
		ss.Version = cur.ID
		since := cur.From.UTC()
		ss.CurrentSince = &since
		ref := cur.From
		if st.LastResult == "ok" && st.LastFetch.After(ref) {
			ref = st.LastFetch
		}
		age := max(now.Sub(ref), 0).Seconds()
		ss.AgeSeconds = &age
	}
	return ss
}

// blockBans counts the bans of f's store that the site block sc issued (in
// force, and in mode log): a store shared by several blocks holds them
// all. Without a scope (no request yet), the store's counts.
func blockBans(f *storeFacts, sc *Scope) BanCount {
	if sc == nil || sc.Key == "" {
		return f.bans
	}
	c := BanCount{Truncated: f.bans.Truncated, Error: f.bans.Error}
	for _, b := range f.list {
		switch b.Identity.Site {
		case sc.Key:
			c.Count++
		case "log|" + sc.Key:
			c.Logged++
		}
	}
	return c
}

// storeFactsOf checks s's store: its type, a PING within 100 ms for Redis,
// and the bans in force.
func storeFactsOf(ctx context.Context, s Site, now time.Time, scans banScans) *storeFacts {
	f := &storeFacts{status: StoreStatus{Type: s.StoreType, Healthy: true}}
	if m, ok := s.Store.(*state.Memory); ok {
		f.status.Entries, f.status.Capacity = m.Len(), m.Cap()
	}
	if p, ok := s.Store.(state.Pinger); ok {
		pctx, cancel := context.WithTimeout(ctx, pingTimeout)
		start := time.Now()
		err := p.Ping(pctx)
		cancel()
		f.status.PingMS = float64(time.Since(start).Microseconds()) / 1000
		if err != nil {
			f.status.Healthy = false
			f.status.Error = err.Error()
		}
	}
	if fo, ok := s.Store.(*state.Failover); ok && fo.DecidingLocally() {
		f.status.DecidingLocally = true
	}
	if l, ok := s.Store.(state.BanLister); ok {
		bans, err := scans.list(ctx, s, l, now)
		for _, b := range bans {
			if LogModeBan(b) {
				f.bans.Logged++
			} else {
				f.bans.Count++
			}
		}
		f.list = bans
		f.bans.Truncated = len(bans) >= state.MaxBansListed
		if err != nil {
			f.bans.Error = err.Error()
		}
	}
	return f
}
