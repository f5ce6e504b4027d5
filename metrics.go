package caddyrobots

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddyrobots/caddy-robots/agents"
)

// metrics are created once per process and registered into each config's
// registry, so counters survive reloads. Labels are bounded: actions,
// catalogue categories and modes, never a User-Agent, address or path.
var metrics struct {
	once        sync.Once
	decisions   *decisionCollector
	fetches     *prometheus.CounterVec
	stateErrors *prometheus.CounterVec
	// ruleMemory is the estimated memory of the parsed robots.txt versions
	// kept (source site; all handlers of the process).
	ruleMemory prometheus.Gauge
	// ruleMemoryRefused counts versions not kept because of the bound.
	ruleMemoryRefused prometheus.Counter
	// tableFull counts requests for a site that found no room in the table.
	tableFull prometheus.Counter
}

func initMetrics() {
	metrics.once.Do(func() {
		metrics.decisions = &decisionCollector{desc: prometheus.NewDesc(
			"caddy_robots_decisions_total",
			"Decisions on requests from bots, by action (allow, block, throttle, ban), crawler category and mode.",
			[]string{"action", "category", "mode"}, nil)}
		metrics.fetches = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "fetch_total",
			Help: "Loads of the site's robots.txt, by result (ok, client_error, server_error, error).",
		}, []string{"result"})
		metrics.stateErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "state_errors_total",
			Help: "Errors of the shared state store; each such request was decided from local state.",
		}, []string{"store"})
		metrics.ruleMemory = prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "rule_memory_bytes",
			Help: "Estimated memory of the distinct parsed robots.txt versions kept for the sites' grace windows.",
		})
		metrics.ruleMemoryRefused = prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "rule_memory_refused_total",
			Help: "robots.txt versions not kept because max_rule_memory was reached and every site was in active use; the last good copy stayed.",
		})
		metrics.tableFull = prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "sites_full_total",
			Help: "Bot requests for a site that found the site table full of sites in active use; answered as unavailable (503).",
		})
	})
}

func registerMetrics(reg prometheus.Registerer) error {
	initMetrics()
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{metrics.decisions, metrics.fetches, metrics.stateErrors,
		metrics.ruleMemory, metrics.ruleMemoryRefused, metrics.tableFull} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return fmt.Errorf("registering collector: %w", err)
			}
		}
	}
	return nil
}

// decisionCounts holds the decision counters, one per series, each split
// into shards on cache lines of their own: with one shared counter, every
// bot request on one core took the line from the others (the counter is
// written ~10,000 times a second per core under load).
var decisionCounts [len(actionNames)][len(categoryNames)][2]shardedCount

const countShards = 8

type shardedCount [countShards]struct {
	n atomic.Uint64
	_ [56]byte // pad to a 64-byte line
}

// add counts one. The shard comes from the address of the calling
// goroutine's stack: goroutines running at the same moment on different
// cores have different stacks (at least 8 KiB apart), so they mostly write
// different lines, and reading the address touches no shared state (the
// random generator it replaces cost a cache miss per request in a busy
// server).
func (c *shardedCount) add() {
	var marker byte
	c[uintptr(unsafe.Pointer(&marker))>>13%countShards].n.Add(1)
}

func (c *shardedCount) load() uint64 {
	var n uint64
	for i := range c {
		n += c[i].n.Load()
	}
	return n
}

// decisionCollector exports decisionCounts as the counter family
// caddy_robots_decisions_total; series never counted are not exported.
type decisionCollector struct{ desc *prometheus.Desc }

// Describe implements prometheus.Collector.
func (d *decisionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

// Collect implements prometheus.Collector.
func (d *decisionCollector) Collect(ch chan<- prometheus.Metric) {
	for ai := range decisionCounts {
		for ci := range decisionCounts[ai] {
			for mi := range decisionCounts[ai][ci] {
				if n := decisionCounts[ai][ci][mi].load(); n > 0 {
					mode := "enforce"
					if mi == 1 {
						mode = "log"
					}
					ch <- prometheus.MustNewConstMetric(d.desc, prometheus.CounterValue, float64(n),
						actionNames[ai], string(categoryNames[ci]), mode)
				}
			}
		}
	}
}

var (
	actionNames   = [...]string{"allow", "block", "throttle", "ban"}
	categoryNames = [...]agents.Category{
		agents.CategorySearch, agents.CategoryAITraining, agents.CategoryAISearch,
		agents.CategoryAIAssistant, agents.CategorySEO, agents.CategoryArchive,
		agents.CategorySocialPreview, agents.CategoryMonitoring, agents.CategoryFeedReader,
		agents.CategoryHTTPLibrary, agents.CategoryOther,
	}
)

// countDecision counts one decision; logMode is true for mode log.
func countDecision(a action, cat agents.Category, logMode bool) {
	mi := 0
	if logMode {
		mi = 1
	}
	decisionCounts[a][categoryIndex(cat)][mi].add()
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
	}
	return len(categoryNames) - 1
}

func fetchCounter(result string) {
	metrics.fetches.WithLabelValues(result).Inc()
}
