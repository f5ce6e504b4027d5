package caddyrobots

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

// statusReport is the answer of GET /robots/status.
type statusReport struct {
	Time     time.Time       `json:"time"`
	Handlers []handlerStatus `json:"handlers"`
}

// handlerStatus describes one robots handler of the running configuration.
type handlerStatus struct {
	// Index is the handler's position, for "handler" in /robots/check.
	Index  int    `json:"index"`
	Source string `json:"source"`
	File   string `json:"file,omitempty"`
	Mode   string `json:"mode"`
	// Server is the listen addresses of the server the handler serves,
	// known from its first request.
	Server       string         `json:"server,omitempty"`
	GraceSeconds float64        `json:"grace_seconds"`
	Strikes      string         `json:"strikes"`
	Sites        []siteStatus   `json:"sites"`
	TopCrawlers  []crawlerCount `json:"top_crawlers"`
	TopOffenders []crawlerCount `json:"top_offenders"`
	Bans         banCount       `json:"bans"`
	Store        storeStatus    `json:"store"`
	// IPLists are the published crawler IP lists the handler verifies
	// claims with: their age and where they come from.
	IPLists []ipListStatus `json:"ip_lists"`
	// ConfigWarnings are the warnings about the handler's configuration
	// logged at load (and since: a server found trusting proxies without
	// trusted_proxies_strict), each as logged.
	ConfigWarnings []string `json:"config_warnings"`
	// UntrustedProxy is the first peer on a private or loopback address
	// found sending X-Forwarded-For or Forwarded while the server does not
	// trust it (proxies.go): a configuration error shown in red.
	UntrustedProxy string `json:"untrusted_proxy,omitempty"`
	// moreSites is how many sites the status page leaves out.
	moreSites int
}

// ipListStatus is one verification method's IP list.
type ipListStatus struct {
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

// ipListsOf describes the IP lists of h's verifier.
func ipListsOf(h *Handler, now time.Time) []ipListStatus {
	out := []ipListStatus{}
	if h.verifier == nil {
		return out
	}
	sources := map[string][]string{}
	for _, pl := range agents.PublishedLists() {
		sources[pl.Method] = append(sources[pl.Method], pl.URL)
	}
	if v := h.Verify; v != nil {
		for m, src := range v.Ranges {
			sources[m] = []string{src}
		}
	}
	for _, m := range agents.VerificationMethods() {
		asOf, ok := h.verifier.ListAsOf(m.Key)
		if !ok {
			continue
		}
		st := ipListStatus{Method: m.Key, AsOf: asOf.UTC(), AgeSeconds: now.Sub(asOf).Seconds(), Sources: sources[m.Key]}
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

// siteStatus describes the robots.txt of one site.
type siteStatus struct {
	// Host is the site's host name; empty for source file and inline.
	Host   string `json:"host"`
	Server string `json:"server,omitempty"`
	// State is ok (a copy is in force), pending (the first load has not
	// finished) or unavailable (no copy was ever obtained).
	State   string `json:"state"`
	Version string `json:"version,omitempty"`
	// CurrentSince is when the current version became current.
	CurrentSince *time.Time `json:"current_since,omitempty"`
	// AgeSeconds is how old the current copy is: the time since the last
	// successful load, or, when the last load failed or the source is a
	// file or inline text, since the version became current.
	AgeSeconds *float64 `json:"age_seconds,omitempty"`
	// Versions lists the versions kept, current first; older ones are
	// still honoured while in_grace.
	Versions []versionStatus `json:"versions"`
	Fetch    *fetchStatus    `json:"fetch,omitempty"`
	// PendingChange is a change to "no rules" (a 4xx, an empty or
	// comment-only robots.txt) that awaits a second fetch to confirm it;
	// until then Version, the last rules, stays in force.
	PendingChange *pendingChange `json:"pending_change,omitempty"`
}

// pendingChange describes a change to no rules awaiting confirmation.
type pendingChange struct {
	// What is what the site answered.
	What  string    `json:"what"`
	Since time.Time `json:"since"`
	// ConfirmAt is when a fetch that still sees it publishes it.
	ConfirmAt time.Time `json:"confirm_at"`
}

type versionStatus struct {
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
}

type fetchStatus struct {
	Last   *time.Time `json:"last,omitempty"`
	Result string     `json:"result,omitempty"`
	Error  string     `json:"error,omitempty"`
	Next   *time.Time `json:"next,omitempty"`
}

type banCount struct {
	Count int `json:"count"`
	// Truncated is set when more bans exist than were counted.
	Truncated bool   `json:"truncated,omitempty"`
	Error     string `json:"error,omitempty"`
}

// storeStatus describes the throttle and strike store of a handler.
type storeStatus struct {
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
	status storeStatus
	bans   banCount
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

// list returns the bans of h's store in force at now, at most
// state.MaxBansListed, waiting at most adminStoreWait.
func (m banScans) list(ctx context.Context, h *Handler, l state.BanLister, now time.Time) ([]state.Ban, error) {
	if sc, ok := m[h.store]; ok {
		return sc.bans, sc.err
	}
	bctx, cancel := context.WithTimeout(ctx, adminStoreWait)
	bans, err := l.Bans(bctx, now, state.MaxBansListed)
	cancel()
	if m != nil {
		m[h.store] = banScan{bans, err}
	}
	return bans, err
}

// buildStatus describes hs at now; scans may be shared with listBans.
func buildStatus(ctx context.Context, hs []*Handler, now time.Time, scans banScans) statusReport {
	rep := statusReport{Time: now.UTC(), Handlers: []handlerStatus{}}
	stores := map[state.Store]*storeFacts{}
	for i, h := range hs {
		hs := handlerStatus{
			Index:        i,
			Source:       h.Source,
			File:         h.File,
			Mode:         h.Mode,
			Sites:        []siteStatus{},
			TopCrawlers:  h.statsNow().top(adminTop, false),
			TopOffenders: h.statsNow().top(adminTop, true),
			IPLists:      ipListsOf(h, now),
		}
		hs.ConfigWarnings = h.configWarnings.all()
		if p := h.untrustedProxyPeer(); p.IsValid() {
			hs.UntrustedProxy = p.String()
		}
		if hs.ConfigWarnings == nil {
			hs.ConfigWarnings = []string{}
		}
		hs.GraceSeconds = h.grace.Seconds()
		if p := h.strikes; p.Enabled() {
			hs.Strikes = fmt.Sprintf("%d in %s, ban %s", p.Strikes, p.Window, p.Ban)
		} else {
			hs.Strikes = "off"
		}
		if h.rules != nil {
			hs.Server = h.rules.Server()
			for _, st := range h.rules.Status() {
				hs.Sites = append(hs.Sites, siteStatusOf(h, st, now))
			}
		}
		if hs.TopCrawlers == nil {
			hs.TopCrawlers = []crawlerCount{}
		}
		if hs.TopOffenders == nil {
			hs.TopOffenders = []crawlerCount{}
		}
		if h.store != nil {
			f, ok := stores[h.store]
			if !ok {
				f = storeFactsOf(ctx, h, now, scans)
				stores[h.store] = f
			}
			hs.Store, hs.Bans = f.status, f.bans
		}
		rep.Handlers = append(rep.Handlers, hs)
	}
	return rep
}

// siteStatusOf describes one site of h at now: its grace and age are the
// handler's reading of the loader's facts.
func siteStatusOf(h *Handler, st sites.Status, now time.Time) siteStatus {
	ss := siteStatus{Host: st.Host, Server: st.Server, State: st.State, Versions: []versionStatus{}}
	for _, v := range st.Versions {
		vs := versionStatus{ID: v.ID, From: v.From.UTC(), StartUnknown: v.StartUnknown, Current: v.Current}
		if !v.Until.IsZero() {
			u := v.Until.UTC()
			vs.Until = &u
			vs.InGrace = now.Sub(v.Until) <= h.grace
		}
		ss.Versions = append(ss.Versions, vs)
	}
	if !st.LastFetch.IsZero() || st.LastResult != "" {
		f := &fetchStatus{Result: st.LastResult, Error: st.LastError}
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
		ss.PendingChange = &pendingChange{What: u.What, Since: u.Since.UTC(), ConfirmAt: u.ConfirmAt.UTC()}
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

// storeFactsOf checks h's store: its type, a PING within 100 ms for Redis,
// and the bans in force.
func storeFactsOf(ctx context.Context, h *Handler, now time.Time, scans banScans) *storeFacts {
	f := &storeFacts{status: storeStatus{Type: h.storeType(), Healthy: true}}
	if m, ok := h.store.(*state.Memory); ok {
		f.status.Entries, f.status.Capacity = m.Len(), m.Cap()
	}
	if p, ok := h.store.(state.Pinger); ok {
		pctx, cancel := context.WithTimeout(ctx, adminPingTimeout)
		start := time.Now()
		err := p.Ping(pctx)
		cancel()
		f.status.PingMS = float64(time.Since(start).Microseconds()) / 1000
		if err != nil {
			f.status.Healthy = false
			f.status.Error = err.Error()
		}
	}
	if fo, ok := h.store.(*state.Failover); ok && fo.DecidingLocally() {
		f.status.DecidingLocally = true
	}
	if l, ok := h.store.(state.BanLister); ok {
		bans, err := scans.list(ctx, h, l, now)
		f.bans.Count = len(bans)
		f.bans.Truncated = len(bans) >= state.MaxBansListed
		if err != nil {
			f.bans.Error = err.Error()
		}
	}
	return f
}
