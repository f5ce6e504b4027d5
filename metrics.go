package caddyrobots

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// metrics are the process's collectors, created once when the package
// loads and registered into each config's registry by registerMetrics, so
// counters survive reloads (a collector made per config would start from
// zero on every reload). Labels are bounded: actions, catalogue categories,
// purposes, modes, results, sources and store types, never a User-Agent,
// address, host or path. The Grafana dashboard reads these names, labels
// and help texts: keep them.
var metrics = newMetricSet()

// metricSet holds every collector of the package but the IP lists' (see
// ranges.go).
type metricSet struct {
	// decisions and purposes are read from botCounts (countDecision).
	decisions *decisionCollector
	purposes  *purposeCollector
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
	// disguised counts undeclared crawlers' requests (disguised.go).
	disguised *disguisedCounters
}

func newMetricSet() *metricSet {
	m := &metricSet{
		decisions: &decisionCollector{desc: prometheus.NewDesc(
			"caddy_robots_decisions_total",
			"Decisions on requests from bots, by action (allow, block, throttle, ban), reason (none, rule, spoofed, unavailable, unverified, target, length, preference, rate, ban), crawler category and mode.",
			[]string{"action", "reason", "category", "mode"}, nil)},
		purposes: &purposeCollector{desc: prometheus.NewDesc("caddy_robots_purpose_decisions_total",
			"Decisions on requests from bots, by the crawler's documented purpose and the action (allow, block, throttle, ban).",
			[]string{"purpose", "action"}, nil)},
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
			[]string{"store"}, nil)},
		disguised: newDisguisedCounters(),
	}
	m.initSeries()
	return m
}

// initSeries creates, at zero, every series of the counter vectors whose
// label values are known in advance, so that every metric (and every
// dashboard panel and alert reading it) has data from start-up, and
// rate() sees the first increment.
func (m *metricSet) initSeries() {
	for _, r := range [...]string{"ok", "client_error", "server_error", "error"} {
		m.fetches.WithLabelValues(r)
	}
	m.stateErrors.WithLabelValues("redis") // the memory store has no errors
	for _, mode := range [...]string{"enforce", "log"} {
		m.retries.WithLabelValues(mode)
	}
}

// collectors lists every collector of the set.
func (m *metricSet) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.decisions, m.purposes, m.fetches, m.stateErrors, m.retries,
		m.ruleMemory, m.ruleMemoryRefused, m.tableFull, m.rulesAge, m.bans, m.disguised.vec}
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

// botCounts holds the counters of bot decisions: per shard, one per kind
// of decision (see decisionKinds), category, purpose and mode. Both
// caddy_robots_decisions_total and caddy_robots_purpose_decisions_total
// are sums over it, so a bot request writes one counter, on a line of its
// core's shard: with one shared counter, every bot request on one core took
// the line from the others (the counter is written ~10,000 times a second
// per core under load), and with one counter per family it wrote two lines.
var botCounts [countShards]botShard

const numKinds = len(decisionKinds) + policy.Actions

// botShard is one shard of botCounts, padded so that no line holds counters
// of two shards.
type botShard struct {
	n [numKinds][len(categoryNames)][len(purposeNames)][2]atomic.Uint64
	_ [64]byte
}

// botCount sums the counter of kind ki, category ci, purpose pi and mode mi
// over the shards.
func botCount(ki, ci, pi, mi int) uint64 {
	var n uint64
	for s := range botCounts {
		n += botCounts[s].n[ki][ci][pi][mi].Load()
	}
	return n
}

// decisionKinds are the pairs of action and reason the handler decides;
// each has its row of counters. A pair not listed (none exists today)
// counts in its action's row after them, with reason "other".
var decisionKinds = [...]struct {
	action policy.Action
	reason policy.Reason
}{
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

// kindIndex maps an action and a reason to their row of decisionCounts.
var kindIndex = func() (t [policy.Actions][policy.Reasons]uint8) {
	for a := range t {
		for r := range t[a] {
			t[a][r] = uint8(len(decisionKinds) + a)
		}
	}
	for i, k := range decisionKinds {
		t[k.action][k.reason] = uint8(i)
	}
	return t
}()

// kindAction returns the action of row ki.
func kindAction(ki int) policy.Action {
	if ki < len(decisionKinds) {
		return decisionKinds[ki].action
	}
	return policy.Action(ki - len(decisionKinds))
}

// kindLabels returns the action and reason labels of row ki.
func kindLabels(ki int) (string, string) {
	if ki < len(decisionKinds) {
		k := decisionKinds[ki]
		return k.action.String(), reasonLabel(k.reason)
	}
	return policy.Action(ki - len(decisionKinds)).String(), "other"
}

// reasonLabel is the reason label value: "none" for an allowed request.
func reasonLabel(r policy.Reason) string {
	if r == policy.None {
		return "none"
	}
	return r.String()
}

const countShards = 8

type shardedCount [countShards]struct {
	n atomic.Uint64
	_ [56]byte // pad to a 64-byte line
}

// stackShard picks a shard for the calling goroutine from the address of
// its stack: goroutines running at the same moment on different cores have
// different stacks (at least 8 KiB apart), so they mostly write different
// lines, and reading the address touches no shared state (the random
// generator it replaces cost a cache miss per request in a busy server).
func stackShard() uintptr {
	var marker byte
	return uintptr(unsafe.Pointer(&marker)) >> 13 % countShards
}

// add counts one, on the calling goroutine's shard.
func (c *shardedCount) add() {
	c[stackShard()].n.Add(1)
}

func (c *shardedCount) load() uint64 {
	var n uint64
	for i := range c {
		n += c[i].n.Load()
	}
	return n
}

// decisionCollector exports botCounts, summed over purposes, as the
// counter family caddy_robots_decisions_total. Every pair of action and
// reason the handler decides (decisionKinds) is exported for every
// category and mode, at zero until counted, so that the family exists
// from start-up; the fallback rows (reason "other") only once counted.
type decisionCollector struct{ desc *prometheus.Desc }

// Describe implements prometheus.Collector.
func (d *decisionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

// Collect implements prometheus.Collector.
func (d *decisionCollector) Collect(ch chan<- prometheus.Metric) {
	for ki := range numKinds {
		act, why := kindLabels(ki)
		for ci := range categoryNames {
			for mi, mode := range [...]string{"enforce", "log"} {
				var n uint64
				for pi := range purposeNames {
					n += botCount(ki, ci, pi, mi)
				}
				if n > 0 || ki < len(decisionKinds) {
					ch <- prometheus.MustNewConstMetric(d.desc, prometheus.CounterValue, float64(n),
						act, why, string(categoryNames[ci]), mode)
				}
			}
		}
	}
}

var (
	categoryNames = [...]agents.Category{
		agents.CategorySearch, agents.CategoryAITraining, agents.CategoryAISearch,
		agents.CategoryAIAssistant, agents.CategorySEO, agents.CategoryArchive,
		agents.CategorySocialPreview, agents.CategoryMonitoring, agents.CategoryFeedReader,
		agents.CategoryHTTPLibrary, agents.CategoryUndeclared, agents.CategoryOther,
	}
)

// countDecision counts one bot decision: its action and reason, the
// crawler's category and purpose; logMode is true for mode log.
func countDecision(a policy.Action, r policy.Reason, cat agents.Category, p agents.Purpose, logMode bool) {
	mi := 0
	if logMode {
		mi = 1
	}
	botCounts[stackShard()].n[kindIndex[a][r]][categoryIndex(cat)][purposeIndex(p)][mi].Add(1)
}

// categoryIndex is cat's index in categoryNames; unknown categories count
// as "other".
func categoryIndex(cat agents.Category) int {
	switch cat {
	case agents.CategorySearch:
		return 0
	case agents.CategoryAITraining:
		return 1
	case agents.CategoryAISearch:
		return 2
	case agents.CategoryAIAssistant:
		return 3
	case agents.CategorySEO:
		return 4
	case agents.CategoryArchive:
		return 5
	case agents.CategorySocialPreview:
		return 6
	case agents.CategoryMonitoring:
		return 7
	case agents.CategoryFeedReader:
		return 8
	case agents.CategoryHTTPLibrary:
		return 9
	case agents.CategoryUndeclared:
		return 10
	}
	return len(categoryNames) - 1
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
