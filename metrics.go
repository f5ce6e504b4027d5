package caddyrobots

import (
	"errors"
	"fmt"
	"sync"

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

var knownCategories = map[agents.Category]bool{
	agents.CategorySearch: true, agents.CategoryAITraining: true, agents.CategoryAISearch: true,
	agents.CategoryAIAssistant: true, agents.CategorySEO: true, agents.CategoryArchive: true,
	agents.CategorySocialPreview: true, agents.CategoryMonitoring: true, agents.CategoryFeedReader: true,
	agents.CategoryHTTPLibrary: true, agents.CategoryOther: true,
}

func countDecision(action string, cat agents.Category, mode string) {
	if !knownCategories[cat] {
		cat = agents.CategoryOther
	}
	metrics.decisions.WithLabelValues(action, string(cat), mode).Inc()
}

func fetchCounter(result string) {
	metrics.fetches.WithLabelValues(result).Inc()
}
