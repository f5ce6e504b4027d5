package caddyrobots

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/admin"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// metrics are the process's collectors, created once when the package
// loads and registered into each config's registry by registerMetrics, so
// counters survive reloads (a collector made per config would start from
// zero on every reload). Labels are bounded: actions, catalogue categories,
// purposes, modes, results, sources, store types and site blocks (the
// running configuration's, named as the ban scope names them: at most one
// per robots handler; a site block's series go with its last handler, see
// siteUsers), never a User-Agent, address, path or a request's Host.
// The Grafana dashboard reads these names, labels and help texts: keep
// them.
var metrics = newMetricSet()

// metricSet holds every collector of the package but the IP lists'
// (internal/ranges, registered in config.go).
type metricSet struct {
	// decisions and purposes count bot decisions, by site block
	// (siteSeries.countDecision).
	decisions *prometheus.CounterVec
	purposes  *prometheus.CounterVec
	// fetches counts the loads of robots.txt (see loaderMetrics).
	fetches     *prometheus.CounterVec
	stateErrors *prometheus.CounterVec
	// retries counts throttled requests that came back inside their
	// Retry-After (countRetry).
	retries *prometheus.CounterVec
	// ruleMemory is the estimated memory of the parsed robots.txt versions
	// kept (every table of the process).
	ruleMemory prometheus.GaugeFunc
	// ruleMemoryRefused counts versions not kept because of the bound.
	ruleMemoryRefused prometheus.Counter
	// tableFull counts requests for a site that found no room in the table.
	tableFull prometheus.Counter
	// rulesAge is the age of the current robots.txt, by source.
	rulesAge *rulesAgeCollector
	// bans is the number of bans in force, by store type.
	bans *bansCollector
	// undeclared counts undeclared crawlers' requests, by site block
	// (siteSeries.countUndeclared).
	undeclared *prometheus.CounterVec
}

func newMetricSet() *metricSet {
	m := &metricSet{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "decisions_total",
			Help: "Decisions on requests from bots, by action (allow, block, throttle, ban), reason (none, rule, spoofed, unavailable, unverified, target, length, preference, rate, ban), crawler category, mode and site (the site block of the config: its hosts and listen addresses, one value per robots handler, never a request's Host).",
		}, []string{"action", "reason", "category", "mode", "site"}),
		purposes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "purpose_decisions_total",
			Help: "Decisions on requests from bots, by the crawler's documented purpose, the action (allow, block, throttle, ban) and site (the site block of the config, one value per robots handler).",
		}, []string{"purpose", "action", "site"}),
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "fetch_total",
			Help: "Loads of the site's robots.txt, by result (ok, client_error, server_error, error); for source file, every failed read of the file (it is polled every 2s) counts as error.",
		}, []string{"result"}),
		stateErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "state_errors_total",
			Help: "Errors of the shared state store; each such request was decided from local state.",
		}, []string{"store"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "immediate_retries_total",
			Help: "Throttled requests that came back before the Retry-After they were given, by mode.",
		}, []string{"mode"}),
		ruleMemory: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "rule_memory_bytes",
			Help: "Estimated memory of the distinct parsed robots.txt versions kept for the sites' grace windows.",
		}, ruleMemory),
		ruleMemoryRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "rule_memory_refused_total",
			Help: "robots.txt versions not kept because max_rule_memory was reached and every site was in active use; the last good copy stayed.",
		}),
		tableFull: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "sites_full_total",
			Help: "Bot requests for a site that found the site table full of sites in active use; answered as unavailable (503).",
		}),
		rulesAge: &rulesAgeCollector{desc: prometheus.NewDesc(
			"caddy_robots_rules_age_seconds",
			"Age of the current robots.txt version (time since it was first loaded), the oldest among the sites of each source (site, file, inline).",
			[]string{"source"}, nil)},
		bans: &bansCollector{desc: prometheus.NewDesc("caddy_robots_bans_in_force",
			"Bans in force in the state stores of the running handlers (at most 1000 counted per store), by store type.",
			[]string{"store"}, nil),
			logged: prometheus.NewDesc("caddy_robots_bans_logged",
				"Bans earned in mode log (the crawlers would be banned; nothing refuses them) in the state stores of the running handlers (at most 1000 counted per store), by store type.",
				[]string{"store"}, nil)},
		undeclared: newUndeclaredCounters(),
	}
	m.initSeries()
	return m
}

// initSeries creates, at zero, every series of the counter vectors whose
// label values are known in advance, so that every metric (and every
// dashboard panel and alert reading it) has data from start-up, and
// rate() sees the first increment. The decision metrics' series need a
// site: each handler creates a few once the config has started
// (siteSeries.start).
func (m *metricSet) initSeries() {
	for _, r := range [...]string{"ok", "client_error", "server_error", "error"} {
		m.fetches.WithLabelValues(r)
	}
	m.stateErrors.WithLabelValues("redis") // the memory store has no errors
	for _, mode := range modeNames {
		m.retries.WithLabelValues(mode)
	}
}

// collectors lists every collector of the set.
func (m *metricSet) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.decisions, m.purposes, m.fetches, m.stateErrors, m.retries,
		m.ruleMemory, m.ruleMemoryRefused, m.tableFull, m.rulesAge, m.bans, m.undeclared}
}

// registerMetrics adds every collector of the package to a config's
// registry (the counters live in the process and survive reloads).
func registerMetrics(reg prometheus.Registerer) error {
	return registerCollectors(reg, metrics.collectors()...)
}

// loaderMetrics counts what the loaders report (sites.Metrics).
type loaderMetrics struct{}

// Fetched counts a load of robots.txt in caddy_robots_fetch_total.
func (loaderMetrics) Fetched(result string) { metrics.fetches.WithLabelValues(result).Inc() }

// RuleMemoryRefused counts in caddy_robots_rule_memory_refused_total.
func (loaderMetrics) RuleMemoryRefused() { metrics.ruleMemoryRefused.Inc() }

// SitesFull counts in caddy_robots_sites_full_total.
func (loaderMetrics) SitesFull() { metrics.tableFull.Inc() }

// ruleMemory is the estimated memory of the parsed versions of every site
// table the process keeps.
func ruleMemory() float64 {
	var n int64
	versionPool.Range(func(_, v any) bool {
		if e, ok := v.(*tableEntry); ok {
			n += e.table.RuleMemory()
		}
		return true
	})
	return float64(n)
}

// registerCollectors registers cs in reg, accepting collectors a previous
// config already registered there.
func registerCollectors(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return fmt.Errorf("registering collector: %w", err)
			}
		}
	}
	return nil
}

// modeNames are the values of the mode label: index 1 is mode log.
var modeNames = [...]string{"enforce", "log"}

// modeIndex is the index in modeNames of a handler that enforces or only
// logs.
func modeIndex(logMode bool) int {
	if logMode {
		return 1
	}
	return 0
}

// decisionKinds are the pairs of action and reason the handler decides.
// Each site block has a series of caddy_robots_decisions_total for each,
// in its handler's mode, from start-up (siteSeries.start); a pair not
// listed (none exists today) is counted with reason "other", once it
// happens.
var decisionKinds = [...]decisionKind{
	{policy.Allow, policy.None},
	{policy.Block, policy.Rule},
	{policy.Block, policy.Spoofed},
	{policy.Block, policy.Unavailable},
	{policy.Block, policy.Unverified},
	{policy.Block, policy.BadTarget},
	{policy.Block, policy.TooLong},
	{policy.Block, policy.Preference},
	{policy.Throttle, policy.Rate},
	{policy.Ban, policy.Banned},
}

// decisionKind is a pair of action and reason.
type decisionKind struct {
	action policy.Action
	reason policy.Reason
}

// reasonLabel is the reason label value: "none" for an allowed request.
func reasonLabel(r policy.Reason) string {
	if r == policy.None {
		return "none"
	}
	return r.String()
}

// categoryNames are the values of the category label; a category not
// listed counts as "other".
var categoryNames = [...]agents.Category{
	agents.CategorySearch, agents.CategoryAITraining, agents.CategoryAISearch,
	agents.CategoryAIAssistant, agents.CategorySEO, agents.CategoryArchive,
	agents.CategorySocialPreview, agents.CategoryMonitoring, agents.CategoryFeedReader,
	agents.CategoryHTTPLibrary, agents.CategoryUndeclared, agents.CategoryOther,
}

// categoryIndex is cat's index in categoryNames; a category not listed
// counts as "other", the last.
func categoryIndex(cat agents.Category) int {
	if i := slices.Index(categoryNames[:], cat); i >= 0 {
		return i
	}
	return len(categoryNames) - 1
}

// purposeNames are the values of the purpose label of
// caddy_robots_purpose_decisions_total; a purpose not listed (a browser's
// empty one) counts as "other".
var purposeNames = [...]string{"other", "search", "ai-training", "ai-answers", "user-triggered", "seo", "archiving", "monitoring"}

// purposeIndex is p's index in purposeNames; a purpose not listed
// counts as "other", the first.
func purposeIndex(p agents.Purpose) int {
	return max(slices.Index(purposeNames[:], string(p)), 0)
}

// siteSeries are one handler's series of the decision metrics, labelled
// with its site block. Each is created on its first count, so a site
// exports only the kinds of decision it makes (the full grid of action,
// reason, category and mode is 240 series), and found in a table indexed
// by its label values' indexes instead of hashing the label values per
// request as WithLabelValues does. A handler learns its site block when the config
// starts or from its first request (scope.go); site is "" until then.
//
// A handler is a user of each site label it counts under (siteUsers), from
// its first series of the site until its config is cleaned up (release):
// the series of a site block that no running handler serves any more are
// deleted then, so that a reload that removes or renames a site block
// does not leave it on dashboards, nor grow the series without bound.
type siteSeries struct {
	mu    sync.Mutex // held to add a series
	table atomic.Pointer[seriesTable]
	// sites are the site labels the handler uses (one, nearly always),
	// and released is true once it has given them up: it makes no series
	// after that.
	sites    []string
	released bool
}

// seriesTable is the series of one site block, by the indexes of their
// label values, never changed once published: adding a series publishes a
// copy, so that counting, which finds its series there nearly always,
// takes no lock and hashes nothing.
type seriesTable struct {
	site       string
	decisions  [policy.Actions][policy.Reasons][len(categoryNames)][len(modeNames)]prometheus.Counter
	purposes   [len(purposeNames)][policy.Actions]prometheus.Counter
	undeclared [policy.NumSignals][actionTrapUnmarked + 1][len(modeNames)]prometheus.Counter
}

// with returns a copy of t for site (empty when t is another site's or
// nil), to add a series to before publishing it.
func (t *seriesTable) with(site string) *seriesTable {
	c := &seriesTable{site: site}
	if t != nil && t.site == site {
		*c = *t
	}
	return c
}

// counter returns the series in site's table at slot, created by create
// and published in a new table when it is not there yet.
func (s *siteSeries) counter(site string, slot func(*seriesTable) *prometheus.Counter, create func() prometheus.Counter) prometheus.Counter {
	if t := s.table.Load(); t != nil && t.site == site {
		if c := *slot(t); c != nil {
			return c
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.table.Load()
	if t != nil && t.site == site {
		if c := *slot(t); c != nil {
			return c
		}
	}
	if !s.use(site) {
		return discarded
	}
	t = t.with(site)
	c := create()
	*slot(t) = c
	s.table.Store(t)
	return c
}

// newSiteSeries returns a handler's series, none created yet.
func newSiteSeries() *siteSeries { return &siteSeries{} }

// use makes the handler a user of site's series before it makes one of
// them; false once the handler has released its sites. s.mu is held.
func (s *siteSeries) use(site string) bool {
	if s.released {
		return false
	}
	if !slices.Contains(s.sites, site) {
		siteUsers.add(site)
		s.sites = append(s.sites, site)
	}
	return true
}

// release gives up the handler's site labels, when its config is cleaned
// up (Handler.Cleanup): the series of a site block whose last user this
// was are deleted. A request still in flight after that counts in the
// series the handler has (kept if the site block is), and makes no new
// one: a series it lacks would outlive a site block just removed.
func (s *siteSeries) release() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released = true
	for _, site := range s.sites {
		siteUsers.remove(site)
	}
	s.sites = nil
}

// discarded counts what a released handler would make a new series for:
// it is registered nowhere, so that a request finishing after its config
// was cleaned up brings back no deleted series.
var discarded = prometheus.NewCounter(prometheus.CounterOpts{Name: "caddy_robots_discarded_total", Help: "Not exported."})

// siteUsers counts the users of each site label: the handlers, of every
// config running, whose series carry it. Caddy provisions and starts a new
// config (whose handlers then make their site's series: seriesAtStart)
// before it cleans up the old one, and several handlers can serve one
// site block, so a site block that a reload keeps keeps its series and
// their counts, and one it drops loses them with its last handler.
var siteUsers = &siteLabelUsers{n: map[string]int{}}

// siteLabelUsers is a count of users by site label.
type siteLabelUsers struct {
	mu sync.Mutex
	n  map[string]int
}

// add counts one more user of site.
func (u *siteLabelUsers) add(site string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.n[site]++
}

// remove counts one user of site less, and deletes site's series of the
// decision metrics when it was the last. The deletion happens under the
// lock, so a handler that starts using site at the same moment (add comes
// before it makes a series) never sees its new series deleted.
func (u *siteLabelUsers) remove(site string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n[site] > 1 {
		u.n[site]--
		return
	}
	delete(u.n, site)
	metrics.dropSite(site)
}

// dropSite deletes every series of the site block site from the metrics
// labelled by site.
func (m *metricSet) dropSite(site string) {
	l := prometheus.Labels{"site": site}
	m.decisions.DeletePartialMatch(l)
	m.purposes.DeletePartialMatch(l)
	m.undeclared.DeletePartialMatch(l)
}

// countDecision counts one bot decision of the site block site in
// caddy_robots_decisions_total (its action and reason, the crawler's
// category, the mode) and in caddy_robots_purpose_decisions_total (the
// crawler's purpose, the action); logMode is true for mode log.
func (s *siteSeries) countDecision(site string, a policy.Action, r policy.Reason, cat agents.Category, p agents.Purpose, logMode bool) {
	ci, mi, pi := categoryIndex(cat), modeIndex(logMode), purposeIndex(p)
	if t := s.table.Load(); t != nil && t.site == site {
		// Nearly always: both series exist.
		if d, pu := t.decisions[a][r][ci][mi], t.purposes[pi][a]; d != nil && pu != nil {
			d.Inc()
			pu.Inc()
			return
		}
	}
	s.decision(site, a, r, ci, mi).Inc()
	s.purpose(site, pi, a).Inc()
}

// decision returns site's series of a decision. A pair of action and
// reason not among decisionKinds is counted with reason "other".
func (s *siteSeries) decision(site string, a policy.Action, r policy.Reason, category, mode int) prometheus.Counter {
	return s.counter(site, func(t *seriesTable) *prometheus.Counter { return &t.decisions[a][r][category][mode] },
		func() prometheus.Counter {
			reason := "other"
			if slices.Contains(decisionKinds[:], decisionKind{a, r}) {
				reason = reasonLabel(r)
			}
			return metrics.decisions.WithLabelValues(a.String(), reason, string(categoryNames[category]), modeNames[mode], site)
		})
}

// purpose returns site's series of a decision by purpose.
func (s *siteSeries) purpose(site string, purpose int, a policy.Action) prometheus.Counter {
	return s.counter(site, func(t *seriesTable) *prometheus.Counter { return &t.purposes[purpose][a] },
		func() prometheus.Counter {
			return metrics.purposes.WithLabelValues(purposeNames[purpose], a.String(), site)
		})
}

// countUndeclared counts one request of an undeclared crawler of the site
// block site in caddy_robots_undeclared_total: the signal that caught it,
// its action (a policy.Action, actionTrap or actionTrapUnmarked) and mode.
func (s *siteSeries) countUndeclared(site string, sig policy.Signal, a int, logMode bool) {
	s.undeclaredSeries(site, sig, a, modeIndex(logMode)).Inc()
}

// undeclaredSeries returns site's series of an undeclared crawler's request.
func (s *siteSeries) undeclaredSeries(site string, sig policy.Signal, a, mode int) prometheus.Counter {
	return s.counter(site, func(t *seriesTable) *prometheus.Counter { return &t.undeclared[sig][a][mode] },
		func() prometheus.Counter {
			return metrics.undeclared.WithLabelValues(sig.String(), undeclaredAction(a), modeNames[mode], site)
		})
}

// siteName is the site block s counts for, "" before it is known.
func (s *siteSeries) siteName() string {
	if t := s.table.Load(); t != nil {
		return t.site
	}
	return ""
}

// start creates, at zero, the series a site block's dashboard panels and
// alerts read from start-up: every decision kind in the handler's mode and
// every action, for the category and purpose "other", and a block by
// each signal. The other series appear with their first count.
func (s *siteSeries) start(site string, logMode bool) {
	ci, mi := categoryIndex(agents.CategoryOther), modeIndex(logMode)
	for _, k := range decisionKinds {
		s.decision(site, k.action, k.reason, ci, mi)
	}
	for a := range policy.Actions {
		s.purpose(site, purposeIndex(agents.PurposeOther), policy.Action(a))
	}
	for sig := range policy.Signal(policy.NumSignals) {
		s.undeclaredSeries(site, sig, int(policy.Block), mi)
	}
}

// seriesAtStart creates the handler's start-up series once the config has
// started, when its site block is known from the routes of app.
func (h *Handler) seriesAtStart(app *caddyhttp.App) {
	if p, ok := placements(app)[h]; ok {
		h.series.start(siteDesc(p), !h.enforce)
	}
}

// countRetry counts one immediate retry: a throttled request that came
// back inside its Retry-After. None of twelve real crawlers honoured
// Retry-After (Wget, Wget2 and colly gave up on the page, Scrapy retried at
// once), so throttled requests are never strikes; the ones that come back
// early are counted so that operators see them.
func countRetry(enforcing bool) {
	metrics.retries.WithLabelValues(modeNames[modeIndex(!enforcing)]).Inc()
}

// rulesAgeCollector exports caddy_robots_rules_age_seconds: for each source
// (site, file, inline), the age of the oldest current robots.txt version
// among the sites of the registered handlers. One series per source of a
// running handler, never per host; 0 while no site of the source has
// loaded a version (a source site loads on the first bot request), so
// that the series exists from start-up.
type rulesAgeCollector struct{ desc *prometheus.Desc }

// Describe implements prometheus.Collector.
func (c *rulesAgeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *rulesAgeCollector) Collect(ch chan<- prometheus.Metric) {
	for source, age := range rulesAges(time.Now()) {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, age.Seconds(), source)
	}
}

// rulesAges returns, by source, the age at now of the oldest current
// robots.txt version of the registered handlers' sites (0 for a source
// with none loaded).
func rulesAges(now time.Time) map[string]time.Duration {
	ages := map[string]time.Duration{}
	for _, h := range handlers() {
		if h.rules == nil {
			continue
		}
		from, ok := h.rules.OldestCurrent()
		if !ok {
			if _, seen := ages[h.Source]; !seen {
				ages[h.Source] = 0
			}
			continue
		}
		age := max(now.Sub(from), 0)
		if old, ok := ages[h.Source]; !ok || age > old {
			ages[h.Source] = age
		}
	}
	return ages
}

// bansCollector reports caddy_robots_bans_in_force{store}: the bans in force
// in the stores of the running handlers, counted when metrics are read (at
// most state.MaxBansListed per store; a Redis store is asked with a bounded
// SCAN and a 1 s deadline).
// Bans earned in mode log are counted apart, in caddy_robots_bans_logged.
type bansCollector struct{ desc, logged *prometheus.Desc }

// Describe implements prometheus.Collector.
func (c *bansCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc; ch <- c.logged }

// Collect implements prometheus.Collector.
func (c *bansCollector) Collect(ch chan<- prometheus.Metric) {
	counts, logged := map[string]int{"memory": 0}, map[string]int{"memory": 0}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	now := time.Now()
	for _, h := range admin.DistinctStores(handlers(), (*Handler).stateStore) {
		kind := h.storeType()
		bl, ok := h.store.(state.BanLister)
		if !ok {
			continue
		}
		bans, err := bl.Bans(ctx, now, state.MaxBansListed)
		if err != nil {
			continue
		}
		if _, ok := counts[kind]; !ok { // a series per store type, even at 0
			counts[kind], logged[kind] = 0, 0
		}
		for _, b := range bans {
			if admin.LogModeBan(b) {
				logged[kind]++
			} else {
				counts[kind]++
			}
		}
	}
	for kind, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), kind)
		ch <- prometheus.MustNewConstMetric(c.logged, prometheus.GaugeValue, float64(logged[kind]), kind)
	}
}
