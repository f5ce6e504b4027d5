package caddyrobots

// Keeping crawler IP lists current.
//
// The handler's Provision calls, in this order:
//
//	rcfg, err := newRangesConfig(h.Verify)    // parses ranges, ranges_refresh, ranges_operators
//	vcfg.Ranges, err = rcfg.loadFiles()       // the `ranges <method> <file>` lists
//	verifier, err := agents.NewVerifier(vcfg)
//	h.releaseRanges, err = startRanges(ctx, verifier, rcfg, h.logger)
//	warnStaleRanges(h.logger, verifier, rcfg)
//
// and Cleanup calls h.releaseRanges(). startRanges never blocks on the
// network or on storage: it subscribes the verifier to a background loop
// shared by every handler with the same list sources and refresh interval
// (one per process per configuration, kept across reloads in a
// caddy.UsagePool), hands it the lists the loop already has, and returns.
// The loop first restores the lists kept in Caddy's storage under
// caddy-robots/ranges/<method>.json (so a restart while offline starts
// from them), then downloads every list at once and again every
// ranges_refresh, conditionally (an unchanged list costs a 304), and gives
// each accepted list to every subscribed verifier. The embedded snapshot
// stays in use for a method until a list for it has been loaded.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/agents"
)

// DefaultRangesRefresh is how often the operators' IP lists are downloaded
// again when verify { ranges_refresh } is not set.
const DefaultRangesRefresh = 12 * time.Hour

// RangesOperatorsEnv names an environment variable that, set to "off",
// turns verify { ranges_operators } off for the whole process: no
// operator's URL is downloaded, only URLs given with ranges. Test suites
// and builds that must never reach the internet set it.
const RangesOperatorsEnv = "CADDY_ROBOTS_RANGES_OPERATORS"

// rangesStorageKey is the storage key of a method's kept lists.
func rangesStorageKey(method string) string { return "caddy-robots/ranges/" + method + ".json" }

// rangesConfig is the parsed IP list part of VerifyConfig.
type rangesConfig struct {
	refresh   time.Duration     // 0: no downloads
	operators bool              // download the operators' URLs for methods without a URL of their own
	urls      map[string]string // method → URL given in ranges
	files     map[string]string // method → file given in ranges
}

// newRangesConfig parses v (nil is the default configuration).
func newRangesConfig(v *VerifyConfig) (rangesConfig, error) {
	c := rangesConfig{refresh: DefaultRangesRefresh, operators: true}
	if v == nil {
		v = &VerifyConfig{}
	}
	var err error
	if c.refresh, err = parseRangesRefresh(v.RangesRefresh); err != nil {
		return c, fmt.Errorf("ranges_refresh: %w", err)
	}
	switch v.RangesOperators {
	case "", "on":
	case "off":
		c.operators = false
	default:
		return c, fmt.Errorf("ranges_operators: unknown value %q (want on or off)", v.RangesOperators)
	}
	if os.Getenv(RangesOperatorsEnv) == "off" {
		c.operators = false
	}
	for method, src := range v.Ranges {
		if err := checkRangesMethod(method); err != nil {
			return c, err
		}
		if !isRangesURL(src) {
			if c.files == nil {
				c.files = map[string]string{}
			}
			c.files[method] = src
			continue
		}
		if err := checkRangesURL(src); err != nil {
			return c, fmt.Errorf("ranges for %s: %w", method, err)
		}
		if c.urls == nil {
			c.urls = map[string]string{}
		}
		c.urls[method] = src
	}
	return c, nil
}

// parseRangesRefresh reads a ranges_refresh value: empty (the default),
// "off" (0) or a duration of at least one second.
func parseRangesRefresh(s string) (time.Duration, error) {
	switch s {
	case "":
		return DefaultRangesRefresh, nil
	case "off":
		return 0, nil
	}
	d, err := caddy.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: %w", s, err)
	}
	if d < time.Second {
		return 0, fmt.Errorf("%s is shorter than 1s (use off to stop downloads)", d)
	}
	return d, nil
}

func isRangesURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// checkRangesURL accepts https URLs, and http URLs only on a loopback host:
// a list fetched in clear text could be rewritten on the way to make any
// address pass as a crawler.
func checkRangesURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("bad URL: %w", err)
	}
	if u.Host == "" {
		return fmt.Errorf("URL %q has no host", raw)
	}
	if u.Scheme == "https" {
		return nil
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); (err == nil && a.IsLoopback()) || host == "localhost" {
		return nil
	}
	return fmt.Errorf("URL %q: plain http is allowed only for loopback hosts; use https", raw)
}

// loadFiles reads the lists given as files.
func (c rangesConfig) loadFiles() (map[string][]netip.Prefix, error) {
	if len(c.files) == 0 {
		return nil, nil
	}
	out := make(map[string][]netip.Prefix, len(c.files))
	for method, file := range c.files {
		p, err := agents.LoadRangesFile(file)
		if err != nil {
			return nil, fmt.Errorf("robots: verify ranges for %s: %w", method, err)
		}
		out[method] = p
	}
	return out, nil
}

// sources returns the URLs to download, by method: the URL given in ranges,
// else (with operators on) the operator's own; methods given a file are
// never downloaded. Nil when downloads are off.
func (c rangesConfig) sources() map[string][]string {
	if c.refresh <= 0 {
		return nil
	}
	out := map[string][]string{}
	if c.operators {
		for _, p := range agents.PublishedLists() {
			if _, file := c.files[p.Method]; !file {
				out[p.Method] = append(out[p.Method], p.URL)
			}
		}
	}
	for method, u := range c.urls {
		out[method] = []string{u}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// poolKey identifies the download loop a configuration shares.
func (c rangesConfig) poolKey(sources map[string][]string) string {
	methods := make([]string, 0, len(sources))
	for m := range sources {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	var b strings.Builder
	b.WriteString("ranges|" + c.refresh.String())
	for _, m := range methods {
		b.WriteString("|" + m + "=" + strings.Join(sources[m], ","))
	}
	return b.String()
}

// rangesStorage is the part of certmagic.Storage the loop uses.
type rangesStorage interface {
	Store(ctx context.Context, key string, value []byte) error
	Load(ctx context.Context, key string) ([]byte, error)
}

// rangesLoopLogger gives a new loop its logger: Caddy's process logger, since
// a loop outlives the configuration that started it. Tests replace it.
var rangesLoopLogger = func() *zap.Logger { return caddy.Log().Named("http.handlers.robots.ranges") }

// rangesPool holds the download loops across reloads.
var rangesPool = caddy.NewUsagePool()

// rangesLoop downloads a set of lists periodically and hands them to its
// subscribed verifiers.
type rangesLoop struct {
	fetcher *agents.RangesFetcher
	storage rangesStorage // nil: nothing kept
	logger  *zap.Logger
	refresh time.Duration
	cancel  context.CancelFunc
	done    chan struct{}

	mu   sync.Mutex
	subs map[*agents.Verifier]struct{}
}

// Destruct stops the loop and waits for it.
func (l *rangesLoop) Destruct() error {
	l.cancel()
	<-l.done
	return nil
}

// startRanges subscribes v to the download loop of cfg (starting it if no
// other handler has), gives v the lists the loop already holds, and
// registers v for the list age metric. It never blocks on the network or
// storage. The returned release undoes it; call it from Cleanup. With
// downloads off it only registers v for the metric.
func startRanges(ctx caddy.Context, v *agents.Verifier, cfg rangesConfig, logger *zap.Logger) (release func() error, err error) {
	if err := registerRangesMetrics(ctx.GetMetricsRegistry()); err != nil {
		return nil, fmt.Errorf("robots: registering IP list metrics: %w", err)
	}
	return startRangesWith(contextStorage(ctx), v, cfg, logger)
}

// contextStorage is ctx.Storage(), or nil for a context without a Caddy
// configuration (unit tests), where Storage panics.
func contextStorage(ctx caddy.Context) (s rangesStorage) {
	defer func() {
		if recover() != nil {
			s = nil
		}
	}()
	if st := ctx.Storage(); st != nil {
		return st
	}
	return nil
}

// startRangesWith is startRanges with the storage given.
func startRangesWith(storage rangesStorage, v *agents.Verifier, cfg rangesConfig, logger *zap.Logger) (func() error, error) {
	trackVerifier(v, true)
	sources := cfg.sources()
	if sources == nil {
		return func() error { trackVerifier(v, false); return nil }, nil
	}
	key := cfg.poolKey(sources)
	val, _, err := rangesPool.LoadOrNew(key, func() (caddy.Destructor, error) {
		f, err := agents.NewRangesFetcher(agents.RangesFetcherConfig{Sources: sources})
		if err != nil {
			return nil, err
		}
		// The loop outlives the configuration that started it: it logs to
		// Caddy's process logger and runs on its own context.
		lctx, cancel := context.WithCancel(context.Background())
		l := &rangesLoop{
			fetcher: f,
			storage: storage,
			logger:  rangesLoopLogger(),
			refresh: cfg.refresh,
			cancel:  cancel,
			done:    make(chan struct{}),
			subs:    map[*agents.Verifier]struct{}{},
		}
		go l.run(lctx)
		return l, nil
	})
	if err != nil {
		trackVerifier(v, false)
		return nil, fmt.Errorf("robots: verify: IP list downloads: %w", err)
	}
	l := val.(*rangesLoop)
	l.subscribe(v, logger)
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			l.unsubscribe(v)
			trackVerifier(v, false)
			if _, derr := rangesPool.Delete(key); derr != nil {
				err = fmt.Errorf("robots: releasing IP list downloads: %w", derr)
			}
		})
		return err
	}, nil
}

func (l *rangesLoop) subscribe(v *agents.Verifier, logger *zap.Logger) {
	l.mu.Lock()
	l.subs[v] = struct{}{}
	l.mu.Unlock()
	if _, err := l.fetcher.Apply(v); err != nil && logger != nil {
		logger.Warn("applying downloaded IP lists", zap.Error(err))
	}
}

func (l *rangesLoop) unsubscribe(v *agents.Verifier) {
	l.mu.Lock()
	delete(l.subs, v)
	l.mu.Unlock()
}

// applyAll gives the current lists to every subscribed verifier.
func (l *rangesLoop) applyAll() {
	l.mu.Lock()
	subs := make([]*agents.Verifier, 0, len(l.subs))
	for v := range l.subs {
		subs = append(subs, v)
	}
	l.mu.Unlock()
	for _, v := range subs {
		if _, err := l.fetcher.Apply(v); err != nil {
			l.logger.Warn("applying downloaded IP lists", zap.Error(err))
		}
	}
}

// run restores the kept lists, then downloads at once and every refresh
// until ctx ends.
func (l *rangesLoop) run(ctx context.Context) {
	defer close(l.done)
	l.restore(ctx)
	l.applyAll()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.round(ctx)
		t.Reset(l.refresh)
	}
}

// storedRanges is the value kept in storage for one method.
type storedRanges struct {
	Method  string                  `json:"method"`
	Sources []agents.RangesSnapshot `json:"sources"`
}

// restore loads the kept lists of every method from storage.
func (l *rangesLoop) restore(ctx context.Context) {
	if l.storage == nil {
		return
	}
	for _, m := range l.fetcher.Methods() {
		if ctx.Err() != nil {
			return
		}
		data, err := l.storage.Load(ctx, rangesStorageKey(m))
		if err != nil {
			continue // not kept yet (or unreadable: the download will tell)
		}
		var sr storedRanges
		if err := json.Unmarshal(data, &sr); err != nil {
			l.logger.Warn("ignoring kept IP list", zap.String("method", m), zap.Error(err))
			continue
		}
		n, err := l.fetcher.Restore(m, sr.Sources)
		if err != nil {
			l.logger.Warn("ignoring kept IP list", zap.String("method", m), zap.Error(err))
		}
		if n > 0 {
			_, asOf, ready := l.fetcher.Ranges(m)
			l.logger.Debug("restored kept IP list", zap.String("method", m), zap.Bool("ready", ready), zap.Time("fetched", asOf))
		}
	}
}

// round downloads every method once, keeps what was accepted or confirmed
// and hands it to the verifiers.
//
// Failed downloads are reported in one line per round that names every
// list that failed (an offline start fails them all at once), with the
// first error of each.
func (l *rangesLoop) round(ctx context.Context) {
	changed := false
	var failed []string
	var firstErr error
	for _, m := range l.fetcher.Methods() {
		if ctx.Err() != nil {
			return
		}
		keep := false
		for _, rep := range l.fetcher.Fetch(ctx, m) {
			if ctx.Err() != nil {
				return // shutting down: not the publisher's fault
			}
			rangesMetrics.fetches.WithLabelValues(m, string(rep.Result)).Inc()
			switch rep.Result {
			case agents.RangesOK:
				keep = true
				l.logger.Debug("downloaded IP list", zap.String("method", m), zap.String("url", rep.URL), zap.Int("prefixes", rep.Prefixes))
			case agents.RangesNotModified:
				keep = true
			case agents.RangesRejected:
				l.logger.Warn("rejected downloaded IP list; keeping the last good one", zap.String("method", m), zap.String("url", rep.URL), zap.Error(rep.Err))
			default:
				if !slices.Contains(failed, m) {
					failed = append(failed, m)
				}
				if firstErr == nil {
					firstErr = rep.Err
				}
			}
		}
		if keep {
			changed = true
			l.persist(ctx, m)
		}
	}
	if len(failed) > 0 {
		l.logger.Warn("downloading IP lists failed; keeping the last good ones (the embedded snapshot at first)",
			zap.Strings("methods", failed), zap.Int("count", len(failed)), zap.NamedError("first_error", firstErr))
	}
	if changed {
		l.applyAll()
	}
}

// persist keeps method's lists in storage.
func (l *rangesLoop) persist(ctx context.Context, method string) {
	if l.storage == nil {
		return
	}
	data, err := json.Marshal(storedRanges{Method: method, Sources: l.fetcher.Snapshots(method)})
	if err == nil {
		err = l.storage.Store(ctx, rangesStorageKey(method), data)
	}
	if err != nil {
		l.logger.Warn("keeping IP list in storage", zap.String("method", method), zap.Error(err))
	}
}

// warnStaleRanges logs, once per process for each set of methods, that the
// IP lists of some methods are too old to prove a spoof and that nothing
// will download fresher ones: claims of those crawlers from addresses
// outside the list are Unverified (judged no more leniently than "*"),
// never refused as spoofed.
func warnStaleRanges(logger *zap.Logger, v *agents.Verifier, cfg rangesConfig) {
	if logger == nil {
		return
	}
	sources := cfg.sources()
	var stale []string
	for _, m := range v.StaleLists() {
		if _, fetched := sources[m]; !fetched {
			stale = append(stale, m)
		}
	}
	if len(stale) == 0 {
		return
	}
	msg := strings.Join(stale, ",")
	if _, warned := staleWarned.LoadOrStore(msg, true); warned {
		return
	}
	fix := "remove ranges_refresh off from verify, or give current lists with verify { ranges <method> <file|https-url> }"
	if cfg.refresh > 0 {
		fix = "set ranges_operators on in verify, or give these methods a list with verify { ranges <method> <file|https-url> }"
		if os.Getenv(RangesOperatorsEnv) == "off" {
			fix = "unset the environment variable " + RangesOperatorsEnv + ", or give these methods a list with verify { ranges <method> <file|https-url> }"
		}
	}
	logger.Warn("IP lists too old to prove a spoof: requests claiming these crawlers from unlisted addresses are treated as unverified, not refused as spoofed",
		zap.Strings("methods", stale), zap.String("fix", fix))
}

// staleWarned remembers the warnings warnStaleRanges gave.
var staleWarned sync.Map

// Metrics of the IP lists. The method label takes values from the bounded
// set of verification methods.
var rangesMetrics struct {
	once    sync.Once
	fetches *prometheus.CounterVec
	ages    *rangesAgeCollector
}

func initRangesMetrics() {
	rangesMetrics.once.Do(func() {
		rangesMetrics.fetches = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "ranges_fetch_total",
			Help: "Downloads of crawler IP lists, by verification method and result (ok, not_modified, rejected, error).",
		}, []string{"method", "result"})
		rangesMetrics.ages = &rangesAgeCollector{desc: prometheus.NewDesc(
			"caddy_robots_ranges_age_seconds",
			"Age of the IP list each verification method uses: time since its publisher last confirmed it, or since the embedded snapshot's date.",
			[]string{"method"}, nil)}
		// Every method and result at zero, so that the family exists
		// from start-up (the first download may be hours away).
		for _, m := range verificationKeys() {
			for _, r := range [...]agents.RangesFetchResult{agents.RangesOK, agents.RangesNotModified, agents.RangesRejected, agents.RangesError} {
				rangesMetrics.fetches.WithLabelValues(m, string(r))
			}
		}
	})
}

func registerRangesMetrics(reg prometheus.Registerer) error {
	initRangesMetrics()
	return registerCollectors(reg, rangesMetrics.fetches, rangesMetrics.ages)
}

// trackedVerifiers are the verifiers of live handlers, for the age metric.
var trackedVerifiers struct {
	mu sync.Mutex
	n  map[*agents.Verifier]int
}

func trackVerifier(v *agents.Verifier, add bool) {
	trackedVerifiers.mu.Lock()
	defer trackedVerifiers.mu.Unlock()
	if trackedVerifiers.n == nil {
		trackedVerifiers.n = map[*agents.Verifier]int{}
	}
	if add {
		trackedVerifiers.n[v]++
		return
	}
	if trackedVerifiers.n[v]--; trackedVerifiers.n[v] <= 0 {
		delete(trackedVerifiers.n, v)
	}
}

// rangesAgeCollector exports, per method, the age of the freshest list any
// live handler's verifier uses.
type rangesAgeCollector struct{ desc *prometheus.Desc }

// Describe implements prometheus.Collector.
func (c *rangesAgeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *rangesAgeCollector) Collect(ch chan<- prometheus.Metric) {
	newest := map[string]time.Time{}
	trackedVerifiers.mu.Lock()
	for v := range trackedVerifiers.n {
		for _, m := range verificationKeys() {
			if asOf, ok := v.ListAsOf(m); ok && asOf.After(newest[m]) {
				newest[m] = asOf
			}
		}
	}
	trackedVerifiers.mu.Unlock()
	now := time.Now()
	for _, m := range verificationKeys() {
		if t, ok := newest[m]; ok {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, now.Sub(t).Seconds(), m)
		}
	}
}

// verificationKeys are the verification method keys, sorted.
var verificationKeys = sync.OnceValue(func() []string {
	var out []string
	for _, m := range agents.VerificationMethods() {
		out = append(out, m.Key)
	}
	return out
})

// Interface guard.
var _ caddy.Destructor = (*rangesLoop)(nil)

// checkRangesMethod checks the method of `verify { ranges <method> <src> }`:
// the error lists the valid methods and the syntax, and suggests the
// method whose key or crawler token the mistaken name is part of (gptbot:
// openai-gptbot).
func checkRangesMethod(method string) error {
	var keys []string
	guess := ""
	low := strings.ToLower(method)
	for _, m := range agents.VerificationMethods() {
		if m.Key == method {
			return nil
		}
		keys = append(keys, m.Key)
		if guess != "" || low == "" {
			continue
		}
		if strings.Contains(m.Key, low) || strings.EqualFold(m.Name, method) {
			guess = m.Key
		}
		for _, t := range m.Tokens {
			if strings.EqualFold(t, method) {
				guess = m.Key
			}
		}
	}
	msg := fmt.Sprintf("ranges: unknown verification method %q", method)
	if guess != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", guess)
	}
	return fmt.Errorf("%s; write ranges <method> <file or https URL>, with one of the methods %s", msg, strings.Join(keys, ", "))
}
