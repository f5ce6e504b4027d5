package caddyrobots

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/enforce/state"
)

// Limits of the loader.
const (
	maxVersions     = 8   // robots.txt versions kept per host for the grace window
	maxHosts        = 256 // distinct hosts whose robots.txt is kept (source site)
	maxRedirects    = 5   // RFC 9309 §2.3.1.2
	filePollEvery   = 2 * time.Second
	retryAfterError = 30 * time.Second
)

// version is one robots.txt version as it was served. Immutable once
// published.
type version struct {
	robots *enforce.Robots
	id     string    // short content hash
	from   time.Time // when it became current
	until  time.Time // when a newer version replaced it; zero while current
}

// snapshot is what a request reads: the versions of one host's robots.txt,
// newest first. Immutable; swapped atomically.
type snapshot struct {
	versions []*version
	// unavailable is set while no copy was ever obtained because the
	// source failed (5xx, timeout, unreachable).
	unavailable bool
	// pending is set before the first load finished.
	pending bool
}

// hostRules holds the robots.txt of one host.
type hostRules struct {
	host    string
	snap    atomic.Pointer[snapshot]
	mu      sync.Mutex // serialises loads and swaps
	loading chan struct{}
	next    time.Time // when the next refresh is due
}

// ruleSource loads robots.txt versions for a handler into a hostTable.
type ruleSource struct {
	h   *Handler
	ctx context.Context
	*hostTable
	tableKey string
	site     bool                             // source site: rules per host
	srv      atomic.Pointer[caddyhttp.Server] // for source site: the server requests arrive on
	lastMod  time.Time
	size     int64
}

// hostTable holds the robots.txt versions of each host, and when each
// crawler last fetched /robots.txt. It lives in versionPool, keyed by the
// source, so a config reload keeps the version history that the grace rule
// depends on.
type hostTable struct {
	mu      sync.Mutex
	hosts   map[string]*hostRules
	view    atomic.Pointer[map[string]*hostRules] // copy of hosts for lock-free reads
	order   []string                              // hosts in insertion order, for eviction
	fetched *boundedMap[state.Identity, time.Time]
	// hot is a direct-mapped cache in front of view: a request's host is
	// found with one hash and one pointer, not a map walk (which costs
	// hundreds of ns in a busy server, where the map is out of the CPU
	// caches). Written only under mu, and cleared of evicted hosts, so it
	// never hands out a host that is no longer in the table for long.
	hot  [hotSlots]atomic.Pointer[hostRules]
	seed maphash.Seed
}

const hotSlots = 64

func (t *hostTable) hotSlot(name string) *atomic.Pointer[hostRules] {
	return &t.hot[maphash.String(t.seed, name)%hotSlots]
}

// Destruct implements caddy.Destructor; nothing to release.
func (*hostTable) Destruct() error { return nil }

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
		key = "file:" + h.File
	case "inline":
		sum := sha256.Sum256([]byte(h.Inline))
		key = "inline:" + hex.EncodeToString(sum[:8])
	}
	val, _, err := versionPool.LoadOrNew(key, func() (caddy.Destructor, error) {
		return &hostTable{hosts: map[string]*hostRules{}, fetched: newBoundedMap[state.Identity, time.Time](65536), seed: maphash.MakeSeed()}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("robots: version table: %w", err)
	}
	s := &ruleSource{h: h, ctx: ctx, hostTable: val.(*hostTable), tableKey: key, site: h.Source == "site"}
	switch h.Source {
	case "inline":
		hr := s.host("")
		if len(hr.snap.Load().versions) == 0 {
			s.publish(hr, []byte(h.Inline))
		}
	case "file":
		hr := s.host("")
		// A missing or unreadable file at start is not fatal: the site
		// behaves as "unavailable" until the file appears.
		if err := s.loadFile(hr); err != nil {
			h.logger.Warn("robots: cannot read robots.txt file yet", zap.String("file", h.File), zap.Error(err))
		}
		go s.watchFile(hr)
	case "site":
		// After a reload, reload every known host's robots.txt soon: the
		// new config may route /robots.txt elsewhere. The old versions stay
		// for the grace rule.
		s.mu.Lock()
		for _, hr := range s.hosts {
			hr.mu.Lock()
			hr.next = time.Now()
			hr.mu.Unlock()
		}
		s.mu.Unlock()
		go s.refreshLoop()
	}
	return s, nil
}

// host returns (creating if needed) the rules of a host. For file and inline
// sources every host shares the "" entry.
func (s *ruleSource) host(name string) *hostRules {
	if !s.site {
		name = ""
	}
	slot := s.hotSlot(name)
	if hr := slot.Load(); hr != nil && hr.host == name {
		return hr
	}
	if v := s.view.Load(); v != nil {
		if hr, ok := (*v)[name]; ok {
			return hr
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if hr, ok := s.hosts[name]; ok {
		slot.Store(hr)
		return hr
	}
	if len(s.hosts) >= maxHosts {
		oldest := s.order[0]
		s.order = s.order[1:]
		if ev := s.hosts[oldest]; ev != nil {
			s.hotSlot(oldest).CompareAndSwap(ev, nil)
		}
		delete(s.hosts, oldest)
	}
	hr := &hostRules{host: name}
	hr.snap.Store(&snapshot{pending: true})
	s.hosts[name] = hr
	s.order = append(s.order, name)
	s.publishView()
	slot.Store(hr)
	return hr
}

// publishView copies hosts for lock-free readers; called with mu held,
// only when a host is added or evicted.
func (t *hostTable) publishView() {
	v := make(map[string]*hostRules, len(t.hosts))
	for k, hr := range t.hosts {
		v[k] = hr
	}
	t.view.Store(&v)
}

// rulesFor returns the current snapshot for the request's host. For source
// site, a host seen for the first time is loaded now, waiting at most the
// fetch timeout (browsers never reach this; only bots wait, once per host).
func (s *ruleSource) rulesFor(r *http.Request, host string) *snapshot {
	hr := s.host(host)
	snap := hr.snap.Load()
	if !s.site {
		return snap
	}
	if s.srv.Load() == nil {
		if srv, ok := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server); ok {
			s.srv.CompareAndSwap(nil, srv)
		}
	}
	if snap.pending {
		s.load(hr, r.Host)
		snap = hr.snap.Load()
	}
	return snap
}

// load fetches the host's robots.txt once, de-duplicating concurrent calls.
func (s *ruleSource) load(hr *hostRules, hostHeader string) {
	hr.mu.Lock()
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
	hr.mu.Unlock()
	defer func() {
		hr.mu.Lock()
		hr.loading = nil
		hr.mu.Unlock()
		close(ch)
	}()
	s.fetchSite(hr, hostHeader)
}

// fetchSite performs the virtual GET /robots.txt through the server and
// applies RFC 9309 §2.3 to the outcome.
func (s *ruleSource) fetchSite(hr *hostRules, hostHeader string) {
	defer func() {
		if rec := recover(); rec != nil {
			s.h.logger.Error("robots: panic while loading robots.txt", zap.Any("panic", rec), zap.ByteString("stack", debug.Stack()))
		}
	}()
	srv := s.srv.Load()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, time.Duration(s.h.FetchTimeout))
	defer cancel()
	start := time.Now()
	status, body, err := fetchVirtual(ctx, srv, hostHeader, "/robots.txt")
	switch {
	case err != nil:
		s.failed(hr, fmt.Errorf("loading robots.txt for %s: %w", hostHeader, err))
		fetchCounter("error")
	case status >= 200 && status < 300:
		s.publish(hr, body)
		fetchCounter("ok")
	case status >= 400 && status < 500:
		// RFC 9309 §2.3.1.3: unavailable means no rules.
		s.publish(hr, nil)
		fetchCounter("client_error")
	default:
		s.failed(hr, fmt.Errorf("loading robots.txt for %s: status %d", hostHeader, status))
		fetchCounter("server_error")
	}
	if c := s.h.logger.Check(zap.DebugLevel, "robots: loaded robots.txt"); c != nil {
		c.Write(zap.String("host", hostHeader), zap.Int("status", status), zap.Int("bytes", len(body)),
			zap.Duration("took", time.Since(start)), zap.Error(err))
	}
	hr.mu.Lock()
	hr.next = time.Now().Add(time.Duration(s.h.Refresh))
	if err != nil || status >= 500 {
		hr.next = time.Now().Add(min(retryAfterError, time.Duration(s.h.Refresh)))
	}
	hr.mu.Unlock()
}

// fetchVirtual sends GET path through srv as if a client had asked for it
// with the given Host, following same-site redirects (at most five).
func fetchVirtual(ctx context.Context, srv *caddyhttp.Server, host, path string) (int, []byte, error) {
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(context.WithValue(ctx, subrequestKey{}, true), http.MethodGet, path, nil)
		if err != nil {
			return 0, nil, fmt.Errorf("building request: %w", err)
		}
		req.Host = host
		req.RemoteAddr = loaderRemoteAddr
		req.RequestURI = path
		req.Header.Set("Accept-Encoding", "identity")
		req.Header.Set("User-Agent", "caddy-robots (robots.txt loader)")
		w := newCaptureWriter(enforce.MaxSize)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() { _ = recover() }()
			srv.ServeHTTP(w, req)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			return 0, nil, fmt.Errorf("robots.txt request: %w", ctx.Err())
		}
		status := w.statusCode()
		if status >= 300 && status < 400 && w.header.Get("Location") != "" {
			if hop >= maxRedirects {
				// RFC 9309 §2.3.1.2: past five redirects a crawler may
				// assume the file is unavailable, i.e. no rules.
				return http.StatusNotFound, nil, nil
			}
			next, sameSite, err := resolveRedirect(host, path, w.header.Get("Location"))
			if err != nil {
				return 0, nil, err
			}
			if !sameSite {
				// Another site's file cannot be read from inside this
				// server: treat it as unavailable (no rules), which never
				// blocks a compliant crawler.
				return http.StatusNotFound, nil, nil
			}
			path = next
			continue
		}
		return status, w.buf.Bytes(), nil
	}
}

// resolveRedirect resolves a Location against the current request; it
// reports whether the target is on the same host.
func resolveRedirect(host, path, location string) (string, bool, error) {
	base := &url.URL{Scheme: "http", Host: host, Path: path}
	loc, err := url.Parse(location)
	if err != nil {
		return "", false, fmt.Errorf("bad redirect location %q: %w", location, err)
	}
	target := base.ResolveReference(loc)
	if hostname(target.Host) != hostname(host) {
		return "", false, nil
	}
	return target.RequestURI(), true, nil
}

// publish parses body and makes it the current version, keeping older
// versions that a crawler may still hold.
func (s *ruleSource) publish(hr *hostRules, body []byte) {
	sum := sha256.Sum256(body)
	id := hex.EncodeToString(sum[:6])
	now := s.h.now()
	hr.mu.Lock()
	defer hr.mu.Unlock()
	old := hr.snap.Load()
	if len(old.versions) > 0 && old.versions[0].id == id {
		if old.unavailable || old.pending {
			hr.snap.Store(&snapshot{versions: old.versions})
		}
		return
	}
	nv := &version{robots: enforce.Parse(body), id: id, from: now}
	vs := []*version{nv}
	horizon := now.Add(-MaxGrace)
	for _, v := range old.versions {
		c := *v
		if c.until.IsZero() {
			c.until = now
		}
		if c.until.Before(horizon) || len(vs) >= maxVersions {
			break
		}
		vs = append(vs, &c)
	}
	hr.snap.Store(&snapshot{versions: vs})
	if len(old.versions) > 0 {
		s.h.logger.Info("robots: robots.txt changed", zap.String("host", hr.host),
			zap.String("version", id), zap.String("previous", old.versions[0].id), zap.Int("bytes", len(body)))
	}
}

// failed records a 5xx or unreachable source: the last good copy stays;
// with none, the host is unavailable.
func (s *ruleSource) failed(hr *hostRules, err error) {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	old := hr.snap.Load()
	if len(old.versions) == 0 {
		hr.snap.Store(&snapshot{unavailable: true})
	}
	s.h.warnf("robots: keeping the last good robots.txt", zap.String("host", hr.host), zap.Error(err))
}

// release gives back the host table taken in newRuleSource.
func (s *ruleSource) release() error {
	if s == nil || s.tableKey == "" {
		return nil
	}
	key := s.tableKey
	s.tableKey = ""
	if _, err := versionPool.Delete(key); err != nil {
		return fmt.Errorf("robots: releasing version table: %w", err)
	}
	return nil
}

// observe refreshes the copy from a client's 200 response for /robots.txt.
func (s *ruleSource) observe(host string, body []byte) {
	if !s.site {
		return
	}
	hr := s.host(host)
	s.publish(hr, body)
	hr.mu.Lock()
	hr.next = time.Now().Add(time.Duration(s.h.Refresh))
	hr.mu.Unlock()
}

// refreshLoop reloads each known host's robots.txt when due.
func (s *ruleSource) refreshLoop() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		var due []*hostRules
		now := time.Now()
		for _, hr := range s.hosts {
			hr.mu.Lock()
			if !hr.next.IsZero() && now.After(hr.next) && hr.loading == nil {
				due = append(due, hr)
			}
			hr.mu.Unlock()
		}
		s.mu.Unlock()
		for _, hr := range due {
			s.load(hr, hr.host)
		}
	}
}

// loadFile reads the robots.txt file if it changed.
func (s *ruleSource) loadFile(hr *hostRules) error {
	fi, err := os.Stat(s.h.File)
	if err != nil {
		s.failed(hr, err)
		return fmt.Errorf("reading robots.txt file: %w", err)
	}
	if fi.ModTime().Equal(s.lastMod) && fi.Size() == s.size && hr.snap.Load().versions != nil {
		return nil
	}
	f, err := os.Open(s.h.File)
	if err != nil {
		s.failed(hr, err)
		return fmt.Errorf("reading robots.txt file: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, enforce.MaxSize)); err != nil {
		s.failed(hr, err)
		return fmt.Errorf("reading robots.txt file: %w", err)
	}
	s.lastMod, s.size = fi.ModTime(), fi.Size()
	s.publish(hr, buf.Bytes())
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
			_ = s.loadFile(hr)
		}
	}
}

// captureWriter is a standalone response writer for the virtual request:
// its own header map, a status, and a body capped at limit bytes. Past the
// cap, writes fail so the upstream stops sending.
type captureWriter struct {
	header http.Header
	status int
	buf    bytes.Buffer
	limit  int
}

func newCaptureWriter(limit int) *captureWriter {
	return &captureWriter{header: http.Header{}, limit: limit}
}

func (w *captureWriter) Header() http.Header { return w.header }

func (w *captureWriter) WriteHeader(code int) {
	if code >= 200 && w.status == 0 {
		w.status = code
	}
}

var errBodyTooLarge = errors.New("robots.txt body exceeds the size limit")

func (w *captureWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	room := w.limit - w.buf.Len()
	if room <= 0 {
		return 0, errBodyTooLarge
	}
	if len(p) > room {
		w.buf.Write(p[:room])
		return room, errBodyTooLarge
	}
	return w.buf.Write(p)
}

func (w *captureWriter) statusCode() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
