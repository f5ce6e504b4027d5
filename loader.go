package caddyrobots

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// Limits of the loader.
const (
	maxVersions     = 8 // robots.txt versions kept per site for the grace window
	maxRedirects    = 5 // RFC 9309 §2.3.1.2
	filePollEvery   = 2 * time.Second
	retryAfterError = 30 * time.Second
	// promptEvery is how often at most a client's differing copy of
	// /robots.txt makes the loader look again, per site.
	promptEvery = 10 * time.Second
)

// version is one robots.txt version as it was served: what the decision
// reads (policy.Version: the parsed file, its id, when it was current) and
// the shared body it was parsed from. Immutable once published.
type version struct {
	policy.Version
	pv *parsedVersion // the shared parsed form and body
}

// snapshot is what a request reads: the versions of one site's robots.txt,
// newest first. Immutable; swapped atomically.
type snapshot struct {
	versions []*version
	// judged is versions as the decision reads them, built once per
	// snapshot so that a request converts nothing.
	judged []*policy.Version
	// unavailable is set while no copy was ever obtained because the
	// source failed (5xx, timeout, unreachable, incomplete body).
	unavailable bool
	// pending is set before the first load finished.
	pending bool
}

// ruleSource loads robots.txt versions for a handler into a hostTable.
type ruleSource struct {
	h   *Handler
	ctx context.Context
	*hostTable
	tableKey string
	site     bool       // source site: rules per site
	fixed    *hostRules // source file or inline: the one entry
	// srv is the server this handler serves (source site), and srvKey its
	// listen addresses, learnt from the first request.
	srv     atomic.Pointer[caddyhttp.Server]
	srvKey  atomic.Pointer[string]
	storage certmagic.Storage // nil when Caddy has none (unit tests)
	// released is set once release gave the table back.
	released atomic.Bool
	lastMod  time.Time
	size     int64
	// full limits the warning about the table being full or over its
	// memory bound.
	full logLimiter
	// gen orders the handlers' configs: it grows with each provisioning.
	gen uint64
}

// sourceGen numbers ruleSources in the order they are made, so a site's
// loadedBy says whether the config now serving it has loaded it yet.
var sourceGen atomic.Uint64

// versionPool keeps host tables across config reloads.
var versionPool = caddy.NewUsagePool()

// subrequestKey marks the handler's own virtual request for /robots.txt. It
// is an unexported context key, so no client can forge it.
type subrequestKey struct{}

// loaderRemoteAddr is the client address of the virtual request: loopback,
// so that remote_ip rules treat it as local, and port 0, which no TCP
// client has, so isSubrequest can rule out every real request by comparing
// one string before it walks the context.
const loaderRemoteAddr = "127.0.0.1:0"

func newRuleSource(h *Handler, ctx caddy.Context) (*ruleSource, error) {
	key := "site"
	switch h.Source {
	case "file":
		key = "file:" + h.File + trapKeySuffix(h)
	case "inline":
		sum := sha256.Sum256([]byte(h.Inline))
		key = "inline:" + hex.EncodeToString(sum[:8])
	}
	val, _, err := versionPool.LoadOrNew(key, func() (caddy.Destructor, error) {
		return newHostTable(), nil
	})
	if err != nil {
		return nil, fmt.Errorf("robots: version table: %w", err)
	}
	s := &ruleSource{h: h, ctx: ctx, hostTable: val.(*hostTable), tableKey: key, site: h.Source == "site", storage: storageOf(ctx), gen: sourceGen.Add(1)}
	switch h.Source {
	case "inline":
		s.fixed = s.fixedRules()
		if len(s.fixed.snap.Load().versions) == 0 {
			if err := s.publish(s.fixed, []byte(h.Inline)); err != nil {
				return nil, fmt.Errorf("robots: source inline: %w", err)
			}
		}
	case "file":
		s.fixed = s.fixedRules()
		// Provision already refused a file it could not read; one that
		// goes missing in between leaves the site "unavailable" until it
		// appears.
		if err := s.loadFile(s.fixed); err != nil {
			h.logger.Warn("robots: cannot read robots.txt file yet", zap.String("file", h.File), zap.Error(err))
		}
		go s.watchFile(s.fixed)
	case "site":
		// After a reload, reload every known site's robots.txt soon: the
		// new config may route /robots.txt elsewhere. The old versions stay
		// for the grace rule.
		for _, hr := range s.allHosts() {
			hr.mu.Lock()
			hr.next = time.Now()
			hr.mu.Unlock()
		}
		go s.refreshLoop()
	}
	return s, nil
}

// fixedRules returns the one entry of a file or inline source, with its
// history restored from storage.
func (s *ruleSource) fixedRules() *hostRules {
	hr, added := s.getOrAdd(siteKey{})
	if added {
		hr.snap.Store(&snapshot{})
		s.restore(hr)
	}
	return hr
}

// allHosts returns the table's sites; never hold t.mu while taking a
// site's lock.
func (t *hostTable) allHosts() []*hostRules {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*hostRules, 0, len(t.hosts))
	for _, hr := range t.hosts {
		out = append(out, hr)
	}
	return out
}

// serverKey returns the listen addresses of the server this handler serves,
// learnt from r on first use.
func (s *ruleSource) serverKey(r *http.Request) string {
	if k := s.srvKey.Load(); k != nil {
		return *k
	}
	srv, ok := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	if !ok {
		return ""
	}
	return s.learnServer(srv)
}

// learnServer records srv as the server this handler serves, unless one is
// known already, and returns the key of the one known.
func (s *ruleSource) learnServer(srv *caddyhttp.Server) string {
	if k := s.srvKey.Load(); k != nil {
		return *k
	}
	k := strings.Join(srv.Listen, ",")
	s.srv.CompareAndSwap(nil, srv)
	if s.srvKey.CompareAndSwap(nil, &k) {
		s.h.checkTrustedProxies(srv)
	}
	return *s.srvKey.Load()
}

// siteName is the host of a Host header as the site key keeps it:
// lower-cased, without port or brackets, a trailing dot kept. host is
// hostOf(hostport), which callers have at hand (a bot's request parses its
// Host once).
func siteName(hostport, host string) string {
	if strings.HasSuffix(hostport, ".") || strings.Contains(hostport, ".:") {
		return host + "."
	}
	return host
}

// keyOf is the key of the site r is for; host is hostOf(r.Host).
func (s *ruleSource) keyOf(r *http.Request, host string) siteKey {
	return siteKey{server: s.serverKey(r), host: siteName(r.Host, host)}
}

// newSnapshot is the snapshot of versions (newest first), loaded.
func newSnapshot(vs []*version) *snapshot {
	s := &snapshot{versions: vs, judged: make([]*policy.Version, len(vs))}
	for i, v := range vs {
		s.judged[i] = &v.Version
	}
	return s
}

// unavailableSnap is what a site gets while the table has no room for it.
var unavailableSnap = &snapshot{unavailable: true}

// rulesFor returns the current snapshot for the request's site. For source
// site, a site seen for the first time is loaded now, waiting at most the
// fetch timeout (browsers never reach this; only bots wait, once per site).
//
// host is hostOf(r.Host), which the caller has at hand.
func (s *ruleSource) rulesFor(r *http.Request, host string) *snapshot {
	if !s.site {
		return s.fixed.snap.Load()
	}
	hr, added := s.getOrAdd(s.keyOf(r, host))
	if hr == nil {
		if ok, n := s.full.allow(time.Now()); ok {
			s.h.logger.Warn("robots: too many sites in active use; new ones are answered as unavailable (503 for crawlers) until some go idle",
				zap.Int("max_sites", maxHosts), zap.Int("suppressed_since_last_warning", n))
		}
		metrics.tableFull.Inc()
		return unavailableSnap
	}
	if u := coarseNow.Load(); hr.used.Load() != u {
		hr.used.Store(u)
	}
	snap := hr.snap.Load()
	if added || snap.pending {
		// Before the first load, the history kept in storage: restore
		// reads it once per site (a site a person's request added is
		// restored in the background, and this waits for that).
		s.restore(hr)
		snap = hr.snap.Load()
	}
	if snap.pending || hr.loadedBy.Load() < s.gen {
		// The first crawler of a site, or the first since a config
		// reload, waits for the load (at most the fetch timeout): the
		// new config may route /robots.txt to another file or backend,
		// and its rules apply from its first decision, not from the
		// next refresh. Two handlers of one config load a site at most
		// once each, as loadedBy only grows.
		s.load(hr, r)
		snap = hr.snap.Load()
	}
	return snap
}

// requestIsHTTPS reports whether the client reached the site over HTTPS:
// TLS to Caddy, or X-Forwarded-Proto https from a trusted proxy.
func requestIsHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if trusted, _ := caddyhttp.GetVar(r.Context(), caddyhttp.TrustedProxyVarKey).(bool); trusted {
		return strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
	}
	return false
}

// load fetches the site's robots.txt once, de-duplicating concurrent calls.
// r, when given, is the request that needs the rules: the virtual request
// uses its Host header and scheme.
func (s *ruleSource) load(hr *hostRules, r *http.Request) {
	hr.mu.Lock()
	if r != nil {
		hr.hostHeader, hr.https = r.Host, requestIsHTTPS(r)
	}
	if ch := hr.loading; ch != nil {
		hr.mu.Unlock()
		select {
		case <-ch:
		case <-s.ctx.Done():
		}
		return
	}
	ch := make(chan struct{})
	hr.loading = ch
	hostHeader, https := hr.hostHeader, hr.https
	hr.mu.Unlock()
	defer func() {
		hr.mu.Lock()
		hr.loading = nil
		hr.mu.Unlock()
		close(ch)
	}()
	s.fetchSite(hr, hostHeader, https)
	// Failed or not, this config has tried: a failure keeps the last good
	// copy and retries on the refresh schedule, not on every request. One
	// load of a site runs at a time (hr.loading), so this does not race.
	if hr.loadedBy.Load() < s.gen {
		hr.loadedBy.Store(s.gen)
	}
}

// fetchSite performs the virtual GET /robots.txt through the server and
// applies RFC 9309 §2.3 to the outcome. Whatever goes wrong (an error, a
// 5xx, an incomplete body, a redirect loop, a redirect off the site), the
// last good copy stays.
func (s *ruleSource) fetchSite(hr *hostRules, hostHeader string, https bool) {
	defer func() {
		if rec := recover(); rec != nil {
			s.h.logger.Error("robots: panic while loading robots.txt", zap.Any("panic", rec), zap.ByteString("stack", debug.Stack()))
		}
	}()
	srv := s.srv.Load()
	if srv == nil {
		return
	}
	if hostHeader == "" {
		hostHeader = hr.key.host
	}
	ctx, cancel := context.WithTimeout(s.ctx, time.Duration(s.h.FetchTimeout))
	defer cancel()
	start := time.Now()
	res, err := fetchVirtual(ctx, srv, hostHeader, https, "/robots.txt")
	status := res.status
	switch {
	case err != nil:
		s.failed(hr, fmt.Errorf("loading robots.txt for %s: %w", hostHeader, err))
		fetchCounter("error")
	case res.offSite && len(hr.snap.Load().versions) > 0:
		s.failed(hr, fmt.Errorf("loading robots.txt for %s: %s", hostHeader, res.why))
		fetchCounter("error")
	case status >= 200 && status < 300:
		if perr := s.publish(hr, res.body); perr != nil {
			s.failed(hr, fmt.Errorf("loading robots.txt for %s: %w", hostHeader, perr))
			fetchCounter("error")
		} else {
			fetchCounter("ok")
		}
	case status >= 400 && status < 500:
		// RFC 9309 §2.3.1.3: unavailable means no rules.
		if perr := s.publish(hr, nil); perr != nil {
			s.failed(hr, perr)
		}
		fetchCounter("client_error")
	default:
		s.failed(hr, fmt.Errorf("loading robots.txt for %s: status %d", hostHeader, status))
		fetchCounter("server_error")
	}
	if c := s.h.logger.Check(zap.DebugLevel, "robots: loaded robots.txt"); c != nil {
		c.Write(zap.String("host", hostHeader), zap.Bool("https", https), zap.Int("status", status), zap.Int("bytes", len(res.body)),
			zap.Duration("took", time.Since(start)), zap.Error(err))
	}
	hr.mu.Lock()
	hr.lastFetch, hr.lastResult, hr.lastErr = time.Now(), fetchResultName(err, status, res.offSite), ""
	if err != nil {
		hr.lastErr = err.Error()
	}
	hr.next = time.Now().Add(time.Duration(s.h.Refresh))
	if err != nil || status >= 500 {
		hr.next = time.Now().Add(min(retryAfterError, time.Duration(s.h.Refresh)))
	}
	hr.mu.Unlock()
}

// fetchResultName names the outcome of a load, as caddy_robots_fetch_total
// does.
func fetchResultName(err error, status int, offSite bool) string {
	switch {
	case err != nil:
		return "error"
	case status >= 200 && status < 300:
		return "ok"
	case offSite:
		return "redirect"
	case status >= 400 && status < 500:
		return "client_error"
	}
	return "server_error"
}

// fetchResult is the outcome of the virtual request.
type fetchResult struct {
	status int
	body   []byte
	// offSite is set when the answer is "no rules" only because the
	// redirects left the site or looped; why says which.
	offSite bool
	why     string
}

// fetchVirtual sends GET path through srv as if a client had asked for it
// with the given Host and scheme, following same-site redirects (at most
// five). A body is returned only when it arrived whole: the length the
// response declared was reached and nothing aborted it. At most
// enforce.MaxSize+1 bytes are kept, so the parser knows when the cap cut a
// line.
func fetchVirtual(ctx context.Context, srv *caddyhttp.Server, host string, https bool, path string) (fetchResult, error) {
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(context.WithValue(ctx, subrequestKey{}, true), http.MethodGet, path, nil)
		if err != nil {
			return fetchResult{}, fmt.Errorf("building request: %w", err)
		}
		req.Host = host
		req.RemoteAddr = loaderRemoteAddr
		req.RequestURI = path
		if https {
			req.URL.Scheme = "https"
			req.TLS = &tls.ConnectionState{HandshakeComplete: true, ServerName: hostOf(host)}
			req.Header.Set("X-Forwarded-Proto", "https")
		}
		req.Header.Set("Accept-Encoding", "identity")
		req.Header.Set("User-Agent", "caddy-robots (robots.txt loader)")
		w := newCaptureWriter(enforce.MaxSize + 1)
		done := make(chan struct{})
		var aborted any
		go func() {
			defer close(done)
			defer func() { aborted = recover() }()
			srv.ServeHTTP(w, req)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			return fetchResult{}, fmt.Errorf("robots.txt request: %w", ctx.Err())
		}
		status := w.statusCode()
		if status >= 300 && status < 400 && w.header.Get("Location") != "" {
			if hop >= maxRedirects {
				// RFC 9309 §2.3.1.2: past five redirects a crawler may
				// assume the file is unavailable, i.e. no rules.
				return fetchResult{status: http.StatusNotFound, offSite: true, why: "more than 5 redirects"}, nil
			}
			next, nextHTTPS, sameSite, err := resolveRedirect(host, https, path, w.header.Get("Location"))
			if err != nil {
				return fetchResult{}, err
			}
			if !sameSite {
				// Another site's file cannot be read from inside this
				// server: treat it as unavailable (no rules), which never
				// blocks a compliant crawler.
				return fetchResult{status: http.StatusNotFound, offSite: true, why: "redirected to another site"}, nil
			}
			path, https = next, nextHTTPS
			continue
		}
		if err := w.complete(aborted); err != nil && status >= 200 && status < 300 {
			return fetchResult{status: status}, err
		}
		return fetchResult{status: status, body: w.buf.Bytes()}, nil
	}
}

// resolveRedirect resolves a Location against the current request; it
// reports the next path, whether it is HTTPS, and whether the target is on
// the same host.
func resolveRedirect(host string, https bool, path, location string) (string, bool, bool, error) {
	scheme := "http"
	if https {
		scheme = "https"
	}
	base := &url.URL{Scheme: scheme, Host: host, Path: path}
	loc, err := url.Parse(location)
	if err != nil {
		return "", false, false, fmt.Errorf("bad redirect location %q: %w", location, err)
	}
	target := base.ResolveReference(loc)
	if hostOf(target.Host) != hostOf(host) {
		return "", false, false, nil
	}
	return target.RequestURI(), target.Scheme == "https", true, nil
}

// errRuleMemory is returned when a new version would take the table past
// its memory bound and no idle site can be evicted.
var errRuleMemory = errors.New("the rule memory bound is reached (max_rule_memory) and every site is in active use")

// publish makes body the current version, keeping older versions that a
// crawler may still hold. The parsed form is shared with every site that
// serves the same content. It fails, keeping what the site has, only when
// the table's memory bound leaves no room.
func (s *ruleSource) publish(hr *hostRules, body []byte) error {
	if len(body) > enforce.MaxSize+1 {
		body = body[:enforce.MaxSize+1]
	}
	id := contentID(body)
	now := s.h.now()
	hr.mu.Lock()
	defer hr.mu.Unlock()
	old := hr.snap.Load()
	if len(old.versions) > 0 && old.versions[0].ID == id {
		if old.unavailable || old.pending {
			hr.snap.Store(newSnapshot(old.versions))
		}
		return nil
	}
	limit := s.h.maxRuleMemory
	var pv *parsedVersion
	if s.makeRoom(len(body), limit) {
		pv = s.parsed(id, body, limit)
	}
	if pv == nil {
		metrics.ruleMemoryRefused.Inc()
		if ok, n := s.full.allow(time.Now()); ok {
			s.h.logger.Warn("robots: rule memory bound reached; keeping the last good robots.txt",
				zap.String("host", hr.key.host), zap.Int64("max_rule_memory", limit), zap.Int("suppressed_since_last_warning", n))
		}
		return errRuleMemory
	}
	nv := &version{Version: policy.Version{Robots: pv.robots, ID: id, From: now}, pv: pv}
	warnSuspicious(s.h, hr, body, pv.robots) // loadwarn.go: too large, or no readable line
	// trap.go: does robots.txt disallow the trap?
	s.h.checkTrapVersion(hr.key.host, id, pv.robots)
	vs := []*version{nv}
	var dropped []*version
	horizon := now.Add(-MaxGrace)
	for _, v := range old.versions {
		c := *v
		if c.Until.IsZero() {
			c.Until = now
		}
		if c.Until.Before(horizon) || len(vs) >= maxVersions {
			dropped = append(dropped, v)
			continue
		}
		vs = append(vs, &c)
	}
	hr.snap.Store(newSnapshot(vs))
	s.releaseVersions(dropped)
	s.persistOrDefer(hr)
	if len(old.versions) > 0 {
		s.h.logger.Info("robots: robots.txt changed", zap.String("host", hr.key.host),
			zap.String("version", id), zap.String("previous", old.versions[0].ID), zap.Int("bytes", len(body)))
	}
	return nil
}

// failed records a load that went wrong in any way: the last good copy
// stays; with none, the site is unavailable.
func (s *ruleSource) failed(hr *hostRules, err error) {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	old := hr.snap.Load()
	if len(old.versions) == 0 {
		hr.snap.Store(&snapshot{unavailable: true})
	} else if old.pending {
		hr.snap.Store(newSnapshot(old.versions))
	}
	s.h.warnf("robots: keeping the last good robots.txt", zap.String("host", hr.key.host), zap.Error(err))
}

// release gives back the host table taken in newRuleSource.
func (s *ruleSource) release() error {
	// tableKey stays as it is: background history writes and requests
	// still in flight on the old config read it.
	if s == nil || s.tableKey == "" || !s.released.CompareAndSwap(false, true) {
		return nil
	}
	if _, err := versionPool.Delete(s.tableKey); err != nil {
		return fmt.Errorf("robots: releasing version table: %w", err)
	}
	return nil
}

// prompt makes the loader look at the site's robots.txt again soon: a
// client just received a copy that differs from ours. A client's response
// never becomes a version itself (it may be cut short, or answer a request
// the loader would not make); at most every promptEvery per site.
func (s *ruleSource) prompt(r *http.Request) {
	if !s.site {
		return
	}
	hr := s.lookup(s.keyOf(r, hostOf(r.Host)))
	if hr == nil {
		return
	}
	hr.mu.Lock()
	defer hr.mu.Unlock()
	now := time.Now()
	if now.Sub(hr.prompted) < promptEvery {
		return
	}
	hr.prompted = now
	hr.next = now
}

// currentOrLoad is current, but for a site not loaded yet (source site) it
// starts a load in the background, never holding up the request: for the
// preference placeholders and header, which people's requests carry too.
// A new site's history is read from storage in that background work too.
func (s *ruleSource) currentOrLoad(r *http.Request) *version {
	if !s.site {
		return s.current(r)
	}
	hr, added := s.getOrAdd(s.keyOf(r, hostOf(r.Host)))
	if hr == nil {
		return nil
	}
	snap := hr.snap.Load()
	if len(snap.versions) > 0 {
		return snap.versions[0]
	}
	start := false
	if snap.pending {
		hr.mu.Lock()
		start = hr.loading == nil
		if start {
			hr.hostHeader, hr.https = r.Host, requestIsHTTPS(r)
		}
		hr.mu.Unlock()
	}
	if added || start {
		go func() {
			if added {
				s.restore(hr)
			}
			if start {
				s.load(hr, nil)
			}
		}()
	}
	return nil
}

// current returns the current version of the request's site, or nil when
// there is none.
func (s *ruleSource) current(r *http.Request) *version {
	hr := s.fixed
	if s.site {
		hr = s.lookup(s.keyOf(r, hostOf(r.Host)))
	}
	if hr == nil {
		return nil
	}
	if vs := hr.snap.Load().versions; len(vs) > 0 {
		return vs[0]
	}
	return nil
}

// refreshLoop reloads each of this server's sites when due, and advances
// the coarse clock.
func (s *ruleSource) refreshLoop() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		coarseNow.Store(time.Now().Unix())
		k := s.srvKey.Load()
		if k == nil {
			continue
		}
		var due []*hostRules
		now := time.Now()
		for _, hr := range s.allHosts() {
			if hr.key.server != *k {
				continue // another server's site: its own handler loads it
			}
			hr.mu.Lock()
			if !hr.next.IsZero() && now.After(hr.next) && hr.loading == nil {
				due = append(due, hr)
			}
			hr.mu.Unlock()
			s.persistDue(hr)
		}
		for _, hr := range due {
			s.load(hr, nil)
		}
	}
}

// readRobotsFile reads at most one byte past the size cap of a robots.txt
// file: the loader's polls and the admin API's reload.
func readRobotsFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading robots.txt file: %w", err)
	}
	defer f.Close()
	body, err := io.ReadAll(io.LimitReader(f, enforce.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading robots.txt file %s: %w", path, err)
	}
	return body, nil
}

// loadFile reads the robots.txt file if it changed.
func (s *ruleSource) loadFile(hr *hostRules) error {
	fi, err := os.Stat(s.h.File)
	if err != nil {
		s.failed(hr, err)
		return fmt.Errorf("reading robots.txt file: %w", err)
	}
	if fi.ModTime().Equal(s.lastMod) && fi.Size() == s.size && len(hr.snap.Load().versions) > 0 {
		return nil
	}
	// One byte past the cap, so the parser drops a line the cap cuts.
	body, err := readRobotsFile(s.h.File)
	if err != nil {
		s.failed(hr, err)
		return err
	}
	body = s.h.trapRules(body) // trap.go: the trap's Disallow line in every group
	if err := s.publish(hr, body); err != nil {
		s.failed(hr, err)
		return fmt.Errorf("reading robots.txt file: %w", err)
	}
	s.lastMod, s.size = fi.ModTime(), fi.Size()
	return nil
}

// watchFile polls the file so edits apply without a restart.
func (s *ruleSource) watchFile(hr *hostRules) {
	every := min(filePollEvery, time.Duration(s.h.Refresh))
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
			countFileLoad(s.loadFile(hr)) // metrics.go: a failed read counts in fetch_total
		}
	}
}

// captureWriter is a standalone response writer for the virtual request:
// its own header map, a status, and a body capped at limit bytes. Past the
// cap, writes fail so the upstream stops sending.
type captureWriter struct {
	header   http.Header
	status   int
	buf      bytes.Buffer
	limit    int
	written  int64 // bytes the handler wrote, kept or not
	declared int64 // Content-Length of the response; -1 when not given
	overflow bool
}

func newCaptureWriter(limit int) *captureWriter {
	return &captureWriter{header: http.Header{}, limit: limit, declared: -1}
}

func (w *captureWriter) Header() http.Header { return w.header }

func (w *captureWriter) WriteHeader(code int) {
	if code >= 200 && w.status == 0 {
		w.status = code
		if cl := w.header.Get("Content-Length"); cl != "" {
			if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
				w.declared = n
			}
		}
	}
}

var errBodyTooLarge = errors.New("robots.txt body exceeds the size limit")

func (w *captureWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	room := w.limit - w.buf.Len()
	if len(p) > room {
		w.buf.Write(p[:max(room, 0)])
		w.written += int64(max(room, 0))
		w.overflow = true
		return max(room, 0), errBodyTooLarge
	}
	w.written += int64(len(p))
	return w.buf.Write(p)
}

// complete reports why the body is not whole, or nil. aborted is what the
// handler chain panicked with (reverse_proxy aborts with
// http.ErrAbortHandler when the backend's body breaks off). A body cut by
// our own cap is whole enough: everything the parser reads arrived.
func (w *captureWriter) complete(aborted any) error {
	if w.overflow {
		return nil
	}
	if aborted != nil {
		return fmt.Errorf("robots.txt response aborted after %d bytes: %v", w.written, aborted)
	}
	if w.declared >= 0 && w.written != w.declared {
		return fmt.Errorf("robots.txt response incomplete: %d of %d bytes", w.written, w.declared)
	}
	return nil
}

func (w *captureWriter) statusCode() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
