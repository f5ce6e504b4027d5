package caddyrobots

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddyrobots/caddy-robots/agents"
)

// metrics are created once per process and registered into each config's
// registry, so counters survive reloads. Labels are bounded: actions,
// catalogue categories and modes, never a User-Agent, address or path.
var metrics struct {
	once        sync.Once
	decisions   *prometheus.CounterVec
	fetches     *prometheus.CounterVec
	stateErrors *prometheus.CounterVec
}

func initMetrics() {
	metrics.once.Do(func() {
		metrics.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "decisions_total",
			Help: "Decisions on requests from bots, by action (allow, block, throttle, ban), crawler category and mode.",
		}, []string{"action", "category", "mode"})
		metrics.fetches = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "fetch_total",
			Help: "Loads of the site's robots.txt, by result (ok, client_error, server_error, error).",
		}, []string{"result"})
		metrics.stateErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "state_errors_total",
			Help: "Errors of the shared state store; each such request was decided from local state.",
		}, []string{"store"})
	})
}

func registerMetrics(reg prometheus.Registerer) error {
	initMetrics()
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{metrics.decisions, metrics.fetches, metrics.stateErrors} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return fmt.Errorf("registering collector: %w", err)
			}
		}
	}
	return nil
}

// decisionCounters caches the counter of each series by index, so a
// request does not pay for resolving label values (~250 ns).
var decisionCounters [len(actionNames)][len(categoryNames)][2]atomic.Pointer[prometheus.Counter]

var (
	actionNames   = [...]string{"allow", "block", "throttle", "ban"}
	categoryNames = [...]agents.Category{
		agents.CategorySearch, agents.CategoryAITraining, agents.CategoryAISearch,
		agents.CategoryAIAssistant, agents.CategorySEO, agents.CategoryArchive,
		agents.CategorySocialPreview, agents.CategoryMonitoring, agents.CategoryFeedReader,
		agents.CategoryHTTPLibrary, agents.CategoryOther,
	}
)

func countDecision(action string, cat agents.Category, mode string) {
	ai, ci, mi := actionIndex(action), categoryIndex(cat), 0
	if mode == "log" {
		mi = 1
	}
	if ai < 0 {
		metrics.decisions.WithLabelValues(action, string(categoryNames[ci]), mode).Inc()
		return
	}
	slot := &decisionCounters[ai][ci][mi]
	c := slot.Load()
	if c == nil {
		counter := metrics.decisions.WithLabelValues(action, string(categoryNames[ci]), mode)
		c = &counter
		slot.Store(c)
	}
	(*c).Inc()
}

// actionIndex is action's index in actionNames, or -1. A switch compiles to
// a jump on length and bytes, cheaper than a loop of string compares.
func actionIndex(action string) int {
	switch action {
	case "allow":
		return 0
	case "block":
		return 1
	case "throttle":
		return 2
	case "ban":
		return 3
	}
	return -1
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
