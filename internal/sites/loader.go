package sites

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/policy"
	"github.com/caddyrobots/caddy-robots/internal/warnlimit"
)

// Limits and delays of the loader.
const (
	// maxVersions is how many robots.txt versions a site keeps for the
	// grace window.
	maxVersions = 8
	// RetryAfterError is how soon a load that failed is tried again (or
	// the refresh interval, when shorter).
	RetryAfterError = 30 * time.Second
	filePollEvery   = 2 * time.Second
	// promptEvery is how often at most a client's differing copy of
	// /robots.txt makes the loader look again, per site.
	promptEvery = 10 * time.Second
)

// Kind is where a loader's robots.txt comes from.
type Kind uint8

// The kinds of source.
const (
	// FromSite loads /robots.txt from each site the handler serves,
	// through the server itself (a virtual GET), so it works in front of
	// reverse_proxy, file_server or anything else.
	FromSite Kind = iota
	// FromFile reads Config.File, and polls it for changes.
	FromFile
	// FromInline parses Config.Inline once.
	FromInline
)

// String is the kind's name as the Caddyfile spells it: site, file or
// inline.
func (k Kind) String() string {
	switch k {
	case FromFile:
		return "file"
	case FromInline:
		return "inline"
	}
	return "site"
}

// Config configures a Loader.
type Config struct {
	// Kind is where the rules come from; File and Inline name the file or
	// hold the text for FromFile and FromInline.
	Kind   Kind
	File   string
	Inline string
	// Refresh is how often each site's robots.txt (or the file) is
	// loaded again; FetchTimeout bounds one load through the server.
	Refresh      time.Duration
	FetchTimeout time.Duration
	// KeepFor is how long a replaced version is kept: the longest grace
	// a crawler may get (0: 7 days).
	KeepFor time.Duration
	// MaxRuleMemory bounds the estimated memory of the parsed versions of
	// the table (<= 0: no bound).
	MaxRuleMemory int64
	// Storage keeps each site's version history across restarts; nil
	// keeps none.
	Storage certmagic.Storage
	// Logger receives the loader's log lines (nil: none).
	Logger *zap.Logger
	// Warn, when set, logs the warnings that may repeat on every load
	// (the last good copy kept, storage errors), rate-limited by the
	// caller; nil logs them through Logger, at most every 30 seconds.
	Warn func(msg string, fields ...zap.Field)
	// Now is the clock of the versions' From and Until (nil: time.Now):
	// the decision's clock.
	Now func() time.Time
	// HTTPS reports whether a request reached the site over HTTPS, which
	// the loader's virtual request then uses too (nil: r.TLS != nil).
	HTTPS func(r *http.Request) bool
	// ServerOf tells the server a request arrived through, while the
	// loader's is not known (see SetServer); nil: only SetServer does.
	ServerOf func(r *http.Request) (Server, bool)
	// Metrics receives what the loader counts (nil: nothing).
	Metrics Metrics
	// Rules, when set, rewrites the body of a file or inline source
	// before it is parsed and published (never a site's own robots.txt,
	// which crawlers read as it is): the handler adds its trap's Disallow
	// line this way.
	Rules func(body []byte) []byte
	// Published, when set, is told of each new version a site publishes
	// (previous is the id of the version it replaces, "" for the first),
	// after the site's lock is released.
	Published func(host, id, previous string, robots *enforce.Robots)
	// Failed, when set, is told of a load that failed and kept the last
	// good copy (or left the site unavailable): of the first failure of
	// an outage, then at most every FailedRepeat while the outage lasts,
	// so that a site that stays down does not raise an alert on every
	// retry (every 30 seconds). o says since when the site is down and
	// how many loads failed.
	Failed func(host string, err error, o Outage)
	// Trap is the handler's trap path ("" without one): a current version
	// that does not disallow it for "*" is shown with a warning.
	Trap string
	// Unavailable is the handler's rule for a site with no copy yet
	// ("disallow": crawlers get 503; "allow": no rules), named in the
	// warning a failed first load logs; "" names no rule.
	Unavailable string
	// Recovered, when set, is told of the first load that succeeds after
	// an outage (a 2xx or 4xx answer, or a file read again), with how
	// long it lasted (o.Until - o.Since) and how many loads failed.
	Recovered func(host string, o Outage)
}

// FailedRepeat is how often at most Config.Failed is told of the failures
// of one outage after the first.
const FailedRepeat = time.Hour

// Outage is a run of failed loads of a site's robots.txt.
type Outage struct {
	// Since is when the first load of the run failed; Until, for a
	// recovered outage, when a load succeeded again (Config.Now's clock).
	Since, Until time.Time
	// Failures is how many loads failed in the run so far.
	Failures int
}

// outage is a site's current run of failed loads.
type outage struct {
	Outage
	// told is when Config.Failed was last told of it.
	told time.Time
}

// Metrics receives the counts of a loader, for the caller to export.
type Metrics interface {
	// Fetched counts one load of a robots.txt by its result: ok,
	// client_error, server_error or error. For a file, only failed reads
	// count (as error).
	Fetched(result string)
	// RuleMemoryRefused counts a version not kept because the table's
	// memory bound was reached and every site was in active use.
	RuleMemoryRefused()
	// SitesFull counts a request for a site that found the table full of
	// sites in active use.
	SitesFull()
}

type noMetrics struct{}

func (noMetrics) Fetched(string)     {}
func (noMetrics) RuleMemoryRefused() {}
func (noMetrics) SitesFull()         {}

// Server is the server a FromSite loader sends its virtual requests for
// /robots.txt through.
type Server struct {
	// Handler serves the virtual request with the full routing of the
	// site; a *caddyhttp.Server is one.
	Handler http.Handler
	// Key names the server in the site keys: its listen addresses. Rules
	// loaded through one server never govern a site of another.
	Key string
	// Port is the port the server listens on: the loader's Host header
	// names it unless it is 80 or 443 (0: none, as for a Unix socket).
	Port int
}

// Loader loads and keeps the robots.txt versions of one handler's sites in
// a Table: for FromSite, each site the handler's server serves, on the
// first crawler's request and every Refresh after; for FromFile and
// FromInline, the one set of rules. Its loops stop with the context given
// to NewLoader. It is safe for concurrent use.
type Loader struct {
	t   *Table
	cfg Config
	ctx context.Context
	m   Metrics
	// gen orders the loaders: it grows with each one made, so that a
	// site's loadedBy says whether the config now serving it has loaded
	// it yet.
	gen uint64
	srv atomic.Pointer[Server]
	// fixed is the one site of a file or inline source.
	fixed *site
	// fileMu guards the file's last modification time and size.
	fileMu  sync.Mutex
	lastMod time.Time
	size    int64
	// full limits the warning about the table being full or over its
	// memory bound.
	full warnlimit.Limiter
	warn warnlimit.Limiter
}

// generations numbers loaders in the order they are made.
var generations atomic.Uint64

// NewLoader starts loading cfg's rules into t. For FromInline the rules
// are parsed now; for FromFile the file is read now (a file that cannot be
// read is warned about, and the source is unavailable until it can) and
// polled; for FromSite nothing is loaded until the server is known
// (SetServer) and a site is first asked for, and the sites t already holds
// are loaded again soon (the new config may route /robots.txt elsewhere;
// the old versions stay for the grace rule).
func NewLoader(ctx context.Context, t *Table, cfg Config) (*Loader, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Hour
	}
	if cfg.KeepFor <= 0 {
		cfg.KeepFor = 7 * 24 * time.Hour
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = 5 * time.Second
	}
	l := &Loader{t: t, cfg: cfg, ctx: ctx, m: cfg.Metrics, gen: generations.Add(1)}
	if l.m == nil {
		l.m = noMetrics{}
	}
	if cfg.Storage != nil {
		// Bodies no history holds any more, from an older version of
		// this code or an earlier run, go in the background.
		requestSweep(cfg.Storage, cfg.Logger)
	}
	switch cfg.Kind {
	case FromInline:
		l.fixed = l.fixedSite()
		if len(l.fixed.snap.Load().versions) == 0 {
			if err := l.publish(l.fixed, l.rules([]byte(cfg.Inline))); err != nil {
				return nil, fmt.Errorf("source inline: %w", err)
			}
		}
	case FromFile:
		l.fixed = l.fixedSite()
		// The caller may have refused a file it could not read; one that
		// goes missing in between leaves the source unavailable until it
		// appears.
		if err := l.loadFile(l.fixed); err != nil {
			cfg.Logger.Warn("robots: cannot read robots.txt file yet", zap.String("file", cfg.File), zap.Error(err))
		}
		go l.watchFile(l.fixed)
	default:
		for _, st := range t.all() {
			st.locked(func() {
				st.next = time.Now()
			})
		}
		go l.refreshLoop()
	}
	return l, nil
}

// fixedSite returns the one site of a file or inline source, with its
// history restored from storage.
func (l *Loader) fixedSite() *site {
	st, added := l.t.getOrAdd(key{})
	if added {
		st.snap.Store(&Snapshot{})
		l.restore(st)
	}
	return st
}

// SetServer makes s the server the loader sends its requests through,
// unless one is known already; it reports whether s became it. A loader
// serves one server for its whole life (a handler sits in one server's
// routes).
func (l *Loader) SetServer(s Server) bool {
	return l.srv.CompareAndSwap(nil, &s)
}

// Server returns the key of the loader's server, "" while it is not known.
func (l *Loader) Server() string {
	if s := l.srv.Load(); s != nil {
		return s.Key
	}
	return ""
}

// keyOf is the key of the site r is for; host is the handler's
// policy.HostOf(r.Host). The first request tells the server (Config.ServerOf).
func (l *Loader) keyOf(r *http.Request, host string) key {
	s := l.srv.Load()
	if s == nil {
		s = l.learn(r)
	}
	var server string
	if s != nil {
		server = s.Key
	}
	return key{server: server, host: siteName(r.Host, host)}
}

// learn asks Config.ServerOf which server r arrived through, and keeps it.
func (l *Loader) learn(r *http.Request) *Server {
	if l.cfg.ServerOf != nil {
		if s, ok := l.cfg.ServerOf(r); ok {
			l.SetServer(s)
		}
	}
	return l.srv.Load()
}

// Snapshot returns the snapshot of the request's site. host is the host
// name of r.Host as the handler reads it (lower-cased, without port or a
// trailing dot), which the caller has at hand. For FromSite, a site seen
// for the first time, or for the first time since a config reload, is
// loaded now, waiting at most the fetch timeout (browsers never come here;
// only bots wait, once per site). A known site costs one hash and one
// pointer: no lock, no allocation.
func (l *Loader) Snapshot(r *http.Request, host string) *Snapshot {
	if l.fixed != nil {
		return l.fixed.snap.Load()
	}
	st, added := l.t.getOrAdd(l.keyOf(r, host))
	if st == nil {
		l.tableFull()
		return unavailableSnap
	}
	if u := clock.Load(); st.used.Load() != u {
		st.used.Store(u)
	}
	snap := st.snap.Load()
	if added || snap.Pending {
		// Before the first load, the history kept in storage: restore
		// reads it once per site (a site a person's request added is
		// restored in the background, and this waits for that).
		l.restore(st)
		snap = st.snap.Load()
	}
	if snap.Pending || st.loadedBy.Load() < l.gen {
		// The first crawler of a site, or the first since a config
		// reload, waits for the load (at most the fetch timeout): the
		// new config may route /robots.txt to another file or backend,
		// and its rules apply from its first decision, not from the
		// next refresh. Two loaders of one config load a site at most
		// once each, as loadedBy only grows.
		l.load(st, r)
		snap = st.snap.Load()
	}
	l.t.prove(st, snap)
	return snap
}

// Peek returns the snapshot of the request's site without waiting: a
// FromSite site not loaded yet starts loading in the background (its
// history read from storage first) and Peek returns what there is now. It
// serves requests that must not wait, such as people's, which carry the
// AI usage preference placeholders too.
func (l *Loader) Peek(r *http.Request, host string) *Snapshot {
	if l.fixed != nil {
		return l.fixed.snap.Load()
	}
	st, added := l.t.getOrAdd(l.keyOf(r, host))
	if st == nil {
		return unavailableSnap
	}
	snap := st.snap.Load()
	if len(snap.versions) > 0 {
		return snap
	}
	start := false
	if snap.Pending {
		st.locked(func() {
			start = st.loading == nil
			if start && !st.https {
				st.https = l.isHTTPS(r)
			}
		})
	}
	if added || start {
		go func() {
			if added {
				l.restore(st)
			}
			if start {
				l.load(st, nil)
			}
		}()
	}
	return snap
}

// Lookup returns the snapshot of the request's site as it is, or nil for
// a site the table does not hold; it never adds or loads one.
func (l *Loader) Lookup(r *http.Request, host string) *Snapshot {
	if l.fixed != nil {
		return l.fixed.snap.Load()
	}
	if st := l.t.lookup(l.keyOf(r, host)); st != nil {
		return st.snap.Load()
	}
	return nil
}

// Prompt makes the loader look at the site's robots.txt again soon: a
// client just received a copy that differs from ours. A client's response
// never becomes a version itself (it may be cut short, or answer a request
// the loader would not make); at most every promptEvery per site.
func (l *Loader) Prompt(r *http.Request, host string) {
	if l.fixed != nil {
		return
	}
	st := l.t.lookup(l.keyOf(r, host))
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	now := time.Now()
	if now.Sub(st.prompted) < promptEvery {
		return
	}
	st.prompted = now
	st.next = now
}

func (l *Loader) tableFull() {
	if ok, n := l.full.Allow(time.Now()); ok {
		l.cfg.Logger.Warn("robots: too many sites in active use; new ones are answered as unavailable (503 for crawlers) until some go idle",
			zap.Int("max_sites", maxSites), zap.Int("suppressed_since_last_warning", n))
	}
	l.m.SitesFull()
}

func (l *Loader) isHTTPS(r *http.Request) bool {
	if l.cfg.HTTPS != nil {
		return l.cfg.HTTPS(r)
	}
	return r.TLS != nil
}

// warnf logs a warning that may repeat on every load.
func (l *Loader) warnf(msg string, fields ...zap.Field) {
	if l.cfg.Warn != nil {
		l.cfg.Warn(msg, fields...)
		return
	}
	if ok, _ := l.warn.Allow(time.Now()); ok {
		l.cfg.Logger.Warn(msg, fields...)
	}
}

// load fetches the site's robots.txt once, de-duplicating concurrent calls.
// r, when given, is the request that needs the rules: a site reached over
// HTTPS is asked over HTTPS from then on.
func (l *Loader) load(st *site, r *http.Request) {
	ch, mine, https := l.claimLoad(st, r)
	if !mine {
		select {
		case <-ch:
		case <-l.ctx.Done():
		}
		return
	}
	defer func() {
		st.locked(func() {
			st.loading = nil
		})
		close(ch)
	}()
	l.fetchSite(st, https)
	// Failed or not, this config has tried: a failure keeps the last good
	// copy and retries on the refresh schedule, not on every request. One
	// load of a site runs at a time (st.loading), so this does not race.
	if st.loadedBy.Load() < l.gen {
		st.loadedBy.Store(l.gen)
	}
}

// claimLoad notes whether r reached st over HTTPS, and returns the load
// of st in progress (mine false), or starts one (mine true) whose done
// channel the caller closes, with the scheme to ask in.
func (l *Loader) claimLoad(st *site, r *http.Request) (ch chan struct{}, mine, https bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if r != nil && !st.https {
		st.https = l.isHTTPS(r)
	}
	if st.loading != nil {
		return st.loading, false, false
	}
	st.loading = make(chan struct{})
	return st.loading, true, st.https
}

// fetchSite performs the virtual GET /robots.txt through the server and
// applies RFC 9309 §2.3 to the outcome. Whatever goes wrong (an error, a
// 5xx, an incomplete body, redirects that loop or run past five), the last
// good copy stays. A redirect to another host is followed (fetchVirtual),
// and the URL the answer came from is kept (Status.FinalURL).
//
// The request names the site as the site itself would: its host name as
// the site key has it (lower case), with the server's port unless it is 80
// or 443. Never a client's spelling of it: the key ignores port and case,
// but a backend sees the Host exactly as sent, and a multi-tenant one
// answers 404 for a Host it does not know, which would read as "no rules".
func (l *Loader) fetchSite(st *site, https bool) {
	defer func() {
		if rec := recover(); rec != nil {
			l.cfg.Logger.Error("robots: panic while loading robots.txt", zap.Any("panic", rec), zap.ByteString("stack", debug.Stack()))
		}
	}()
	srv := l.srv.Load()
	if srv == nil || srv.Handler == nil {
		return
	}
	hostHeader := siteHost(st.key.host, srv.Port)
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.FetchTimeout)
	defer cancel()
	start := time.Now()
	res, err := fetchVirtual(ctx, srv.Handler, hostHeader, https, "/robots.txt")
	status := res.status
	l.noteFinalURL(st, res.finalURL)
	switch {
	case err != nil:
		l.failed(st, fmt.Errorf("loading robots.txt for %s: %w", hostHeader, err))
		l.m.Fetched("error")
	case res.gaveUp && len(st.snap.Load().versions) > 0:
		l.failed(st, fmt.Errorf("loading robots.txt for %s: %s", hostHeader, res.why))
		l.m.Fetched("error")
	case status >= 200 && status < 300:
		if perr := l.publish(st, res.body); perr != nil {
			l.failed(st, fmt.Errorf("loading robots.txt for %s: %w", hostHeader, perr))
			l.m.Fetched("error")
		} else {
			l.succeeded(st)
			l.m.Fetched("ok")
		}
	case status == http.StatusTooManyRequests:
		// "Come back later", not "no rules": like a 5xx, the last good
		// copy stays, and before any copy the site is unavailable (as
		// Google reads it).
		l.failed(st, fmt.Errorf("loading robots.txt for %s: status 429 (too many requests)", hostHeader))
		l.m.Fetched("server_error")
	case status >= 400 && status < 500:
		// RFC 9309 §2.3.1.3: unavailable means no rules.
		if perr := l.offer(st, nil, status); perr != nil {
			l.failed(st, perr)
		} else {
			l.succeeded(st)
		}
		l.m.Fetched("client_error")
	default:
		l.failed(st, fmt.Errorf("loading robots.txt for %s: status %d", hostHeader, status))
		l.m.Fetched("server_error")
	}
	if c := l.cfg.Logger.Check(zap.DebugLevel, "robots: loaded robots.txt"); c != nil {
		c.Write(zap.String("host", hostHeader), zap.Bool("https", https), zap.Int("status", status), zap.Int("bytes", len(res.body)),
			zap.Duration("took", time.Since(start)), zap.Error(err))
	}
	st.locked(func() {
		st.lastFetch, st.lastResult, st.lastErr = time.Now(), resultName(err, status, res.gaveUp), ""
		if err != nil {
			st.lastErr = err.Error()
		} else if res.gaveUp {
			st.lastErr = res.why
		}
		st.next = time.Now().Add(l.cfg.Refresh)
		if err != nil || status >= 500 || status == http.StatusTooManyRequests {
			st.next = time.Now().Add(min(RetryAfterError, l.cfg.Refresh))
		}
		if at, ok := st.confirming(); ok && at.Before(st.next) {
			st.next = at // the fetch that may confirm the change to no rules
		}
	})
}

// noteFinalURL records the URL a load of st's robots.txt was answered
// from after redirects ("" for none), which the versions it publishes
// keep, and logs when it changes: an operator must be able to tell that a
// site's rules come from another host.
func (l *Loader) noteFinalURL(st *site, u string) {
	var prev string
	st.locked(func() { prev, st.finalURL = st.finalURL, u })
	switch {
	case u == prev:
	case u != "":
		l.cfg.Logger.Info("robots: the site's robots.txt redirects; the rules are read from the URL it leads to",
			append(l.siteFields(st), zap.String("final_url", u), zap.String("previous_url", prev))...)
	default:
		l.cfg.Logger.Info("robots: the site's robots.txt no longer redirects",
			append(l.siteFields(st), zap.String("previous_url", prev))...)
	}
}

// resultName names the outcome of a load, as the Fetched metric does: 429
// counts as server_error, since it is read as unavailable.
func resultName(err error, status int, gaveUp bool) string {
	switch {
	case err != nil:
		return "error"
	case status >= 200 && status < 300:
		return "ok"
	case gaveUp:
		return "redirect"
	case status >= 400 && status < 500 && status != http.StatusTooManyRequests:
		return "client_error"
	}
	return "server_error"
}

// ErrRuleMemory is returned when a new version would take the table past
// its memory bound and no idle site can be evicted: the site keeps its last
// good copy.
var ErrRuleMemory = errors.New("the rule memory bound is reached (max_rule_memory) and every site is in active use")

// ConfirmAfter is how long after a change from rules to "no rules" (a 4xx,
// or a body with no user-agent group: empty, comments only, an error page)
// was first seen a fetch must still see it before it is published. Until
// then the last rules stay in force: a deploy's 404 for a few seconds, a
// backend that briefly answers for another site, or an editor that
// empties a file before writing it, must not let every crawler read
// everything.
const ConfirmAfter = time.Minute

// confirmAfter is ConfirmAfter, which SetConfirmDelay shortens for tests
// (nanoseconds).
var confirmAfter atomic.Int64

func init() { confirmAfter.Store(int64(ConfirmAfter)) }

func confirmDelay() time.Duration { return time.Duration(confirmAfter.Load()) }

// SetConfirmDelay sets the delay ConfirmAfter names and returns a function
// that restores the previous one. It is a hook for tests of a whole server,
// which cannot wait a minute; nothing else calls it.
func SetConfirmDelay(d time.Duration) (restore func()) {
	old := confirmAfter.Swap(int64(d))
	return func() { confirmAfter.Store(old) }
}

// unconfirmed is a change to "no rules" seen but not confirmed yet.
type unconfirmed struct {
	since time.Time // first seen, on the versions' clock (Config.Now)
	at    time.Time // first seen, on the wall clock: confirmable from at+confirmDelay()
	what  string    // what the site answered
	seen  bool      // the change itself was seen (see version)
}

// restricts reports whether a parsed robots.txt says anything to crawlers:
// a user-agent group, or an AI usage preference.
func restricts(r *enforce.Robots) bool {
	return len(r.Groups()) > 0 || r.HasPreferences()
}

// candidate is a body the loader just got, parsed (or found parsed, with a
// reference taken) but not kept yet.
type candidate struct {
	id     string
	body   []byte
	robots *enforce.Robots
	fp     [32]byte
	p      *parsed // the shared parsed form, when some site holds it
}

// candidate parses body, whose content id is id, unless some site holds it.
func (t *Table) candidate(id string, body []byte) candidate {
	if p := t.acquire(id); p != nil {
		return candidate{id: id, body: body, robots: p.robots, fp: p.fp, p: p}
	}
	r := t.parse(body)
	return candidate{id: id, body: body, robots: r, fp: r.RulesFingerprint()}
}

// keep returns the candidate's shared parsed form, adding it to the table
// if no site holds it; nil when there is no room under limit.
func (c *candidate) keep(t *Table, limit int64) *parsed {
	if c.p != nil {
		return c.p
	}
	if !t.makeRoom(len(c.body), limit) {
		return nil
	}
	return t.adopt(c.id, c.body, c.robots, c.fp, limit)
}

// drop gives back what candidate took.
func (c *candidate) drop(t *Table) {
	if c.p != nil {
		t.releaseContent(c.id)
	}
}

// publish makes body, answered with status 200, the current version (see
// offer).
func (l *Loader) publish(st *site, body []byte) error { return l.offer(st, body, http.StatusOK) }

// rules is a file or inline body as Config.Rules rewrites it.
func (l *Loader) rules(body []byte) []byte {
	if l.cfg.Rules == nil {
		return body
	}
	return l.cfg.Rules(body)
}

// offer makes body, answered with status (a 4xx body is nil: no rules),
// the current version, keeping older versions that a crawler may still
// hold. The parsed form is shared with every site that serves the same
// content. A body whose rules are those of the current version
// (enforce.Robots.RulesFingerprint) is not a new version. A change from
// rules to no rules is published only once a fetch
// at least confirmDelay() after the first that saw it still sees it; until
// then the site keeps its rules and offer returns nil (st.unconfirmed says
// so). It fails, keeping what the site has, only when the table's memory
// bound leaves no room.
func (l *Loader) offer(st *site, body []byte, status int) error {
	if len(body) > enforce.MaxSize+1 {
		body = body[:enforce.MaxSize+1]
	}
	id := ContentID(body)
	now := l.cfg.Now()
	var published *policy.Version // told to Config.Published once the lock is released
	previous := ""
	defer func() {
		if published != nil && l.cfg.Published != nil {
			l.cfg.Published(st.key.host, published.ID, previous, published.Robots)
		}
	}()
	st.mu.Lock()
	defer st.mu.Unlock()
	old := st.snap.Load()
	if len(old.versions) > 0 && old.versions[0].ID == id {
		st.unconfirmed = nil
		settle(st, old)
		return nil
	}
	c := l.t.candidate(id, body)
	if len(old.versions) > 0 && old.versions[0].p.fp == c.fp {
		// The same rules in a new body (a timestamp comment, the Host in
		// a Sitemap line): not a new version. The current one keeps its
		// id, body and start, and storage gets nothing new.
		c.drop(l.t)
		st.unconfirmed = nil
		settle(st, old)
		return nil
	}
	// The loader saw the change when it held a current version that a
	// fetch of this process loaded (not one only read back from storage:
	// the site may have changed while the process was down).
	from, seen := now, len(old.versions) > 0 && !old.Pending
	if len(old.versions) > 0 && restricts(old.versions[0].Robots) && !restricts(c.robots) {
		if !l.confirmed(st, body, status, now, seen) {
			c.drop(l.t)
			settle(st, old)
			return nil
		}
		from, seen = st.unconfirmed.since, st.unconfirmed.seen
	}
	st.unconfirmed = nil
	p := c.keep(l.t, l.cfg.MaxRuleMemory)
	if p == nil {
		l.m.RuleMemoryRefused()
		if ok, n := l.full.Allow(time.Now()); ok {
			l.cfg.Logger.Warn("robots: rule memory bound reached; keeping the last good robots.txt",
				zap.String("host", st.key.host), zap.Int64("max_rule_memory", l.cfg.MaxRuleMemory), zap.Int("suppressed_since_last_warning", n))
		}
		return ErrRuleMemory
	}
	nv := newVersion(p, id, from, seen)
	nv.finalURL = st.finalURL
	l.warnSuspicious(st, body, p.robots) // too large, or no readable line
	vs := []*version{nv}
	var dropped []*version
	horizon := now.Add(-l.cfg.KeepFor)
	for _, v := range old.versions {
		c := *v
		if c.Until.IsZero() {
			c.Until = from
		}
		if c.Until.Before(horizon) || len(vs) >= maxVersions {
			dropped = append(dropped, v)
			continue
		}
		vs = append(vs, &c)
	}
	st.snap.Store(newSnapshot(vs))
	l.t.release(dropped)
	l.persistOrDefer(st)
	published = &nv.Version
	if len(old.versions) > 0 {
		previous = old.versions[0].ID
	}
	if len(old.versions) > 0 {
		l.cfg.Logger.Info("robots: robots.txt changed", zap.String("host", st.key.host),
			zap.String("version", id), zap.String("previous", old.versions[0].ID), zap.Int("bytes", len(body)))
	}
	return nil
}

// settle makes a site that was pending or unavailable and still has
// versions read them. Called with st.mu held.
func settle(st *site, old *Snapshot) {
	if (old.Unavailable || old.Pending) && len(old.versions) > 0 {
		st.snap.Store(newSnapshot(old.versions))
	}
}

// confirmed reports whether a change from rules to no rules, seen now, is
// confirmed: first seen at least confirmDelay() ago. The first sighting is
// recorded (and warned about). Called with st.mu held.
func (l *Loader) confirmed(st *site, body []byte, status int, now time.Time, seen bool) bool {
	u := st.unconfirmed
	if u == nil {
		what := "a robots.txt with no user-agent group"
		switch {
		case status >= 400:
			what = "status " + strconv.Itoa(status) + " (no robots.txt)"
		case len(body) == 0:
			what = "an empty robots.txt"
		}
		st.unconfirmed = &unconfirmed{since: now, at: time.Now(), what: what, seen: seen}
		l.cfg.Logger.Warn("robots: the site's robots.txt now says nothing to crawlers; its last rules stay in force until a second fetch confirms the change",
			append(l.siteFields(st), zap.String("answer", what), zap.Duration("confirm_after", confirmDelay()))...)
		return false
	}
	if time.Since(u.at) < confirmDelay() {
		return false
	}
	l.cfg.Logger.Info("robots: confirmed: the site's robots.txt says nothing to crawlers",
		append(l.siteFields(st), zap.String("answer", u.what), zap.Time("since", u.since))...)
	return true
}

// confirming reports whether a change to no rules awaits confirmation,
// and when a fetch may confirm it.
func (st *site) confirming() (time.Time, bool) {
	if u := st.unconfirmed; u != nil {
		return u.at.Add(confirmDelay()), true
	}
	return time.Time{}, false
}

// failed records a load that went wrong in any way: the last good copy
// stays; with none, the site is unavailable. Config.Failed is told of the
// first failure of an outage and then at most every FailedRepeat.
func (l *Loader) failed(st *site, err error) {
	now := l.cfg.Now()
	var tell, none bool
	var run Outage
	st.locked(func() {
		old := st.snap.Load()
		none = len(old.versions) == 0
		if none {
			st.snap.Store(unavailableSnap)
		} else if old.Pending {
			st.snap.Store(newSnapshot(old.versions))
		}
		o := st.outage
		if o == nil {
			o = &outage{Outage: Outage{Since: now}}
			st.outage = o
		}
		o.Failures++
		tell = o.Failures == 1 || now.Sub(o.told) >= FailedRepeat
		if tell {
			o.told = now
		}
		run = o.Outage
	})
	if none {
		l.warnf("robots: "+NoCopyYet(l.cfg.Unavailable), zap.String("host", st.key.host), zap.Error(err))
	} else {
		l.warnf("robots: keeping the last good robots.txt", zap.String("host", st.key.host), zap.Error(err))
	}
	if tell && l.cfg.Failed != nil {
		l.cfg.Failed(st.key.host, err, run)
	}
}

// NoCopyYet says what crawlers get while a site has no copy of its
// robots.txt yet, under the handler's unavailable rule: a failed load then
// keeps nothing, and saying "the last good copy" would be false.
func NoCopyYet(rule string) string {
	switch rule {
	case "disallow":
		return "no copy of robots.txt yet: the unavailable rule applies (disallow: crawlers get 503 until a load succeeds)"
	case "allow":
		return "no copy of robots.txt yet: the unavailable rule applies (allow: crawlers are not refused until a load succeeds)"
	}
	return "no copy of robots.txt yet: the unavailable rule applies until a load succeeds"
}

// succeeded records a load that got an answer the loader could use (it
// may still wait for confirmation): an outage in progress ends, and
// Config.Recovered is told of it.
func (l *Loader) succeeded(st *site) {
	var o *outage
	st.locked(func() {
		o, st.outage = st.outage, nil
	})
	if o == nil {
		return
	}
	run := o.Outage
	run.Until = l.cfg.Now()
	l.cfg.Logger.Info("robots: robots.txt loads again", zap.String("host", st.key.host),
		zap.Time("down_since", run.Since), zap.Duration("down_for", run.Until.Sub(run.Since)), zap.Int("failed_loads", run.Failures))
	if l.cfg.Recovered != nil {
		l.cfg.Recovered(st.key.host, run)
	}
}

// refreshLoop reloads each of this server's sites when due, writes the
// histories held back until their site was established, and advances the
// coarse clock.
func (l *Loader) refreshLoop() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-tick.C:
		}
		clock.Store(time.Now().Unix())
		srv := l.srv.Load()
		if srv == nil {
			continue
		}
		var due []*site
		now := time.Now()
		for _, st := range l.t.all() {
			if st.key.server != srv.Key {
				continue // another server's site: its own loader loads it
			}
			st.locked(func() {
				if !st.next.IsZero() && now.After(st.next) && st.loading == nil {
					due = append(due, st)
				}
			})
			l.persistDue(st)
		}
		for _, st := range due {
			l.load(st, nil)
		}
	}
}

// ReadFile reads a robots.txt file as the loader does: at most one byte
// past the size cap, so that the parser drops a line the cap cuts.
func ReadFile(path string) ([]byte, error) {
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
func (l *Loader) loadFile(st *site) error {
	fi, err := os.Stat(l.cfg.File)
	if err != nil {
		l.failed(st, err)
		return fmt.Errorf("reading robots.txt file: %w", err)
	}
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	if fi.ModTime().Equal(l.lastMod) && fi.Size() == l.size && len(st.snap.Load().versions) > 0 {
		l.succeeded(st) // readable again after a failure, unchanged
		return nil
	}
	body, err := ReadFile(l.cfg.File)
	if err != nil {
		l.failed(st, err)
		return err
	}
	if err := l.publish(st, l.rules(body)); err != nil {
		l.failed(st, err)
		return fmt.Errorf("reading robots.txt file: %w", err)
	}
	l.succeeded(st)
	var confirming bool
	st.locked(func() { _, confirming = st.confirming() })
	if !confirming {
		// A change to no rules is read again on the next poll, until it
		// is confirmed.
		l.lastMod, l.size = fi.ModTime(), fi.Size()
	}
	return nil
}

// watchFile polls the file so edits apply without a restart; a failed
// read counts as a fetch error.
func (l *Loader) watchFile(st *site) {
	every := min(filePollEvery, l.cfg.Refresh)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-tick.C:
			clock.Store(time.Now().Unix())
			if err := l.loadFile(st); err != nil {
				l.m.Fetched("error")
			}
		}
	}
}
