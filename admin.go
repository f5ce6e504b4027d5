package caddyrobots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce/state"
)

func init() {
	caddy.RegisterModule(adminAPI{})
}

// adminAPI is the admin API of the robots handlers running in this Caddy.
// Module ID: admin.api.robots. It is registered with the plugin and needs
// no configuration; like every admin route it is served only where the
// admin endpoint listens (localhost:2019 by default) and obeys its Host and
// Origin checks:
//
//	GET    /robots/                 an HTML status page (read only)
//	GET    /robots/status           the same facts as JSON
//	POST   /robots/check            {"user_agent", "ip", "url"}: the decision a
//	                                request would get now, without counting it
//	GET    /robots/bans             the bans in force
//	DELETE /robots/bans/<identity>  lift one ban (identity path-escaped, as listed)
//	POST   /robots/reload           load every site's robots.txt now
//
// For example:
//
//	curl localhost:2019/robots/status
//	curl -X POST localhost:2019/robots/check \
//	  -d '{"user_agent":"GPTBot/1.2","ip":"203.0.113.7","url":"https://example.com/private/x"}'
//
// Browsers send Sec-Fetch-Mode without an Origin header when they open a
// page by its address, which the admin endpoint of Caddy 2.11 refuses with
// 403 ("required Origin header is missing or invalid"). To read the status
// page in a browser, proxy GET /robots/ (and nothing else) from a site only
// you can reach (behind basic_auth, or on a private address), without
// those headers:
//
//	@robotsStatus {
//		path /robots/
//		method GET
//	}
//	handle @robotsStatus {
//		reverse_proxy localhost:2019 {
//			header_up Host localhost:2019
//			header_up -Sec-Fetch-*
//			header_up -Origin
//		}
//	}
//
// The admin module is a separate instance from the handlers: it reads the
// handlers of the running configurations from a process-wide registry.
type adminAPI struct{}

// CaddyModule returns the Caddy module information.
func (adminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.robots",
		New: func() caddy.Module { return new(adminAPI) },
	}
}

// Routes returns the admin routes under /robots/.
func (a *adminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/robots/", Handler: caddy.AdminHandlerFunc(a.serve)}}
}

// Limits of the admin API.
const (
	adminTop         = 10                     // crawlers and offenders listed per handler
	adminPingTimeout = 100 * time.Millisecond // a store's health check
	adminStoreWait   = 5 * time.Second        // listing or lifting bans
	adminReloadPar   = 4                      // sites loaded at once by /robots/reload
	adminMaxBody     = 64 << 10               // request body of /robots/check
)

func (a *adminAPI) serve(w http.ResponseWriter, r *http.Request) error {
	path := r.URL.Path
	switch {
	case path == "/robots/" || path == "/robots":
		if err := allowMethods(w, r, http.MethodGet, http.MethodHead); err != nil {
			return err
		}
		return a.servePage(w, r)
	case path == "/robots/status":
		if err := allowMethods(w, r, http.MethodGet); err != nil {
			return err
		}
		return writeJSON(w, buildStatus(r.Context(), handlers(), time.Now(), nil))
	case path == "/robots/check":
		if err := allowMethods(w, r, http.MethodPost); err != nil {
			return err
		}
		return a.serveCheck(w, r)
	case path == "/robots/bans":
		if err := allowMethods(w, r, http.MethodGet); err != nil {
			return err
		}
		return a.serveBans(w, r)
	case strings.HasPrefix(path, "/robots/bans/"):
		if err := allowMethods(w, r, http.MethodDelete); err != nil {
			return err
		}
		return a.serveUnban(w, r)
	case path == "/robots/reload":
		if err := allowMethods(w, r, http.MethodPost); err != nil {
			return err
		}
		return writeJSON(w, reloadAll(handlers()))
	}
	return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("robots: no admin route %s (see /robots/ for the status page)", path)}
}

// allowMethods refuses a request whose method is not one of methods.
func allowMethods(w http.ResponseWriter, r *http.Request, methods ...string) error {
	for _, m := range methods {
		if r.Method == m {
			return nil
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("robots: method %s not allowed for %s (use %s)", r.Method, r.URL.Path, strings.Join(methods, " or "))}
}

func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "\t")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("robots: writing admin response: %w", err)
	}
	return nil
}

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
	// ProvesSpoofs is false for a list too old to call an address outside
	// it an impostor.
	ProvesSpoofs bool `json:"proves_spoofs"`
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
	stale := map[string]bool{}
	for _, m := range h.verifier.StaleLists() {
		stale[m] = true
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
		out = append(out, ipListStatus{Method: m.Key, AsOf: asOf.UTC(), AgeSeconds: now.Sub(asOf).Seconds(),
			ProvesSpoofs: !stale[m.Key], Sources: sources[m.Key]})
	}
	return out
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
}

type versionStatus struct {
	ID      string     `json:"id"`
	From    time.Time  `json:"from"`
	Until   *time.Time `json:"until,omitempty"`
	Current bool       `json:"current,omitempty"`
	InGrace bool       `json:"in_grace,omitempty"`
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
			TopCrawlers:  h.stats.top(adminTop, false),
			TopOffenders: h.stats.top(adminTop, true),
			IPLists:      ipListsOf(h, now),
		}
		hs.GraceSeconds = h.grace.Seconds()
		if p := h.strikes; p.Enabled() {
			hs.Strikes = fmt.Sprintf("%d in %s, ban %s", p.Strikes, p.Window, p.Ban)
		} else {
			hs.Strikes = "off"
		}
		if h.rules != nil {
			if k := h.rules.srvKey.Load(); k != nil {
				hs.Server = *k
			}
		}
		for _, hr := range adminSites(h) {
			hs.Sites = append(hs.Sites, siteStatusOf(h, hr, now))
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

// adminSites returns the sites of h, by host name: for source site, those
// of the server it serves (handlers of one server share them); for file
// and inline, the one entry.
func adminSites(h *Handler) []*hostRules {
	s := h.rules
	if s == nil {
		return nil
	}
	if !s.site {
		if s.fixed == nil {
			return nil
		}
		return []*hostRules{s.fixed}
	}
	k := s.srvKey.Load()
	if k == nil {
		return nil
	}
	var out []*hostRules
	for _, hr := range s.allHosts() {
		if hr.key.server == *k {
			out = append(out, hr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key.host < out[j].key.host })
	return out
}

func siteStatusOf(h *Handler, hr *hostRules, now time.Time) siteStatus {
	st := siteStatus{Host: hr.key.host, Server: hr.key.server, Versions: []versionStatus{}}
	snap := hr.snap.Load()
	switch {
	case len(snap.versions) > 0:
		st.State = "ok"
	case snap.pending:
		st.State = "pending"
	default:
		st.State = "unavailable"
	}
	for i, v := range snap.versions {
		vs := versionStatus{ID: v.ID, From: v.From.UTC(), Current: i == 0}
		if !v.Until.IsZero() {
			u := v.Until.UTC()
			vs.Until = &u
			vs.InGrace = now.Sub(v.Until) <= h.grace
		}
		st.Versions = append(st.Versions, vs)
	}
	hr.mu.Lock()
	lastFetch, lastResult, lastErr, next := hr.lastFetch, hr.lastResult, hr.lastErr, hr.next
	hr.mu.Unlock()
	if !lastFetch.IsZero() || lastResult != "" {
		f := &fetchStatus{Result: lastResult, Error: lastErr}
		if !lastFetch.IsZero() {
			t := lastFetch.UTC()
			f.Last = &t
		}
		if !next.IsZero() && h.rules != nil && h.rules.site {
			t := next.UTC()
			f.Next = &t
		}
		st.Fetch = f
	}
	if len(snap.versions) > 0 {
		cur := snap.versions[0]
		st.Version = cur.ID
		since := cur.From.UTC()
		st.CurrentSince = &since
		ref := cur.From
		if lastResult == "ok" && lastFetch.After(ref) {
			ref = lastFetch
		}
		age := max(now.Sub(ref), 0).Seconds()
		st.AgeSeconds = &age
	}
	return st
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

// banEntry is one ban of GET /robots/bans.
type banEntry struct {
	// Identity is the key DELETE /robots/bans/<identity> takes
	// (path-escaped).
	Identity string `json:"identity"`
	// Crawler is the name the ban is kept under: "*" for a bot judged by
	// address (any token from that network).
	Crawler  string    `json:"crawler"`
	Site     string    `json:"site,omitempty"`
	Network  string    `json:"network,omitempty"`
	Verified bool      `json:"verified,omitempty"`
	Until    time.Time `json:"until"`
	Reason   string    `json:"reason"`
	// Store is the type of the store holding the ban.
	Store string `json:"store"`
}

// bansReport is the answer of GET /robots/bans.
type bansReport struct {
	Bans      []banEntry `json:"bans"`
	Truncated bool       `json:"truncated,omitempty"`
	Errors    []string   `json:"errors,omitempty"`
}

// distinctStores returns the stores of hs, each once, with the first
// handler that uses it.
func distinctStores(hs []*Handler) []*Handler {
	seen := map[state.Store]bool{}
	var out []*Handler
	for _, h := range hs {
		if h.store == nil || seen[h.store] {
			continue
		}
		seen[h.store] = true
		out = append(out, h)
	}
	return out
}

// storeType is the type of h's throttle and strike store: memory or redis.
func (h *Handler) storeType() string {
	if h.Store != nil && h.Store.Type != "" {
		return h.Store.Type
	}
	return "memory"
}

func (a *adminAPI) serveBans(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, listBans(r.Context(), handlers(), time.Now(), nil))
}

// listBans lists the bans in force in the stores of hs; scans may be shared
// with buildStatus.
func listBans(ctx context.Context, hs []*Handler, now time.Time, scans banScans) bansReport {
	rep := bansReport{Bans: []banEntry{}}
	for _, h := range distinctStores(hs) {
		l, ok := h.store.(state.BanLister)
		if !ok {
			continue
		}
		typ := h.storeType()
		reason := "strikes"
		if p := h.strikes; p.Enabled() {
			reason = fmt.Sprintf("strikes: %d refused requests within %s", p.Strikes, p.Window)
		}
		bans, err := scans.list(ctx, h, l, now)
		if err != nil {
			rep.Errors = append(rep.Errors, err.Error())
		}
		if len(bans) >= state.MaxBansListed {
			rep.Truncated = true
		}
		for _, b := range bans {
			e := banEntry{
				Identity: b.Key,
				Crawler:  b.Identity.Name,
				Site:     b.Identity.Site,
				Verified: b.Identity.Verified,
				Until:    b.Until.UTC(),
				Reason:   reason,
				Store:    typ,
			}
			if b.Identity.Prefix.IsValid() {
				e.Network = b.Identity.Prefix.String()
			}
			rep.Bans = append(rep.Bans, e)
		}
	}
	return rep
}

func (a *adminAPI) serveUnban(w http.ResponseWriter, r *http.Request) error {
	escaped := strings.TrimPrefix(r.URL.EscapedPath(), "/robots/bans/")
	key, err := url.PathUnescape(escaped)
	if err != nil || key == "" {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("robots: unban: bad identity %q in the path", escaped)}
	}
	if _, err := state.ParseIdentity(key); err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("robots: unban: %w (use an identity as GET /robots/bans lists it, path-escaped)", err)}
	}
	found, err := unban(r.Context(), handlers(), key, time.Now())
	if err != nil && !found {
		return caddy.APIError{HTTPStatus: http.StatusBadGateway, Err: fmt.Errorf("robots: unban %s: %w", key, err)}
	}
	if !found {
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("robots: unban: no ban in force for %s", key)}
	}
	out := map[string]any{"identity": key, "lifted": true}
	if err != nil {
		out["warning"] = err.Error()
	}
	return writeJSON(w, out)
}

// unban lifts the ban of key in every store of hs; it reports whether any
// store had it.
func unban(ctx context.Context, hs []*Handler, key string, now time.Time) (bool, error) {
	found := false
	var errs []error
	for _, h := range distinctStores(hs) {
		l, ok := h.store.(state.BanLister)
		if !ok {
			continue
		}
		uctx, cancel := context.WithTimeout(ctx, adminStoreWait)
		ok, err := l.Unban(uctx, key, now)
		cancel()
		found = found || ok
		if err != nil {
			errs = append(errs, err)
		}
	}
	return found, errors.Join(errs...)
}

// reloadResult reports the reload of one site.
type reloadResult struct {
	Handler  int    `json:"handler"`
	Source   string `json:"source"`
	Host     string `json:"host,omitempty"`
	Server   string `json:"server,omitempty"`
	File     string `json:"file,omitempty"`
	Result   string `json:"result"`
	Error    string `json:"error,omitempty"`
	Previous string `json:"previous,omitempty"`
	Version  string `json:"version,omitempty"`
	Changed  bool   `json:"changed"`
}

// reloadReport is the answer of POST /robots/reload.
type reloadReport struct {
	Reloaded []reloadResult `json:"reloaded"`
}

// reloadAll loads every site's robots.txt now: through the server for
// source site, from disk for source file; inline text has nothing to load.
// Sites shared by several handlers are loaded once.
func reloadAll(hs []*Handler) reloadReport {
	type job struct {
		idx int
		h   *Handler
		hr  *hostRules
	}
	var jobs []job
	seen := map[*hostRules]bool{}
	for i, h := range hs {
		for _, hr := range adminSites(h) {
			if !seen[hr] {
				seen[hr] = true
				jobs = append(jobs, job{i, h, hr})
			}
		}
	}
	results := make([]reloadResult, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, adminReloadPar)
	for n, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[n] = reloadSite(j.idx, j.h, j.hr)
		}()
	}
	wg.Wait()
	return reloadReport{Reloaded: results}
}

func currentID(hr *hostRules) string {
	if vs := hr.snap.Load().versions; len(vs) > 0 {
		return vs[0].ID
	}
	return ""
}

// reloadSite loads one site's robots.txt now and reports the outcome.
func reloadSite(idx int, h *Handler, hr *hostRules) reloadResult {
	res := reloadResult{Handler: idx, Source: h.Source, Host: hr.key.host, Server: hr.key.server, Previous: currentID(hr)}
	switch h.Source {
	case "site":
		h.rules.load(hr, nil)
		hr.mu.Lock()
		res.Result, res.Error = hr.lastResult, hr.lastErr
		hr.mu.Unlock()
		if res.Result == "" {
			res.Result = "skipped"
			res.Error = "the site's server is not known yet"
		}
	case "file":
		res.File = h.File
		res.Result = "ok"
		if err := reloadFile(h.rules, hr); err != nil {
			res.Result, res.Error = "error", err.Error()
		}
	default:
		res.Result = "unchanged"
	}
	res.Version = currentID(hr)
	res.Changed = res.Version != res.Previous
	return res
}

// reloadFile reads a file source again and publishes it if it changed. It
// does not touch the file watcher's own bookkeeping: the watcher, seeing
// the same content next time, publishes nothing new.
func reloadFile(s *ruleSource, hr *hostRules) error {
	body, err := readRobotsFile(s.h.File)
	now := time.Now()
	if err == nil {
		err = s.publish(hr, body)
	}
	if err != nil {
		s.failed(hr, err)
	}
	hr.mu.Lock()
	hr.lastFetch, hr.lastResult, hr.lastErr = now, "ok", ""
	if err != nil {
		hr.lastResult, hr.lastErr = "error", err.Error()
	}
	hr.mu.Unlock()
	return err
}

// Interface guards.
var (
	_ caddy.Module      = (*adminAPI)(nil)
	_ caddy.AdminRouter = (*adminAPI)(nil)
)
