package caddyrobots

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Immediate retries: none of twelve real crawlers honoured Retry-After
// (Wget, Wget2 and colly gave up on the page, Scrapy retried at once), so
// throttled requests are never strikes, and the ones that come back inside
// their Retry-After are counted so that operators see them.
var retryMetric struct {
	once    sync.Once
	counter *prometheus.CounterVec
}

func retryCounter() *prometheus.CounterVec {
	retryMetric.once.Do(func() {
		retryMetric.counter = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "immediate_retries_total",
			Help: "Throttled requests that came back before the Retry-After they were given, by mode.",
		}, []string{"mode"})
	})
	return retryMetric.counter
}

// countRetry counts one immediate retry.
func countRetry(enforcing bool) {
	mode := "enforce"
	if !enforcing {
		mode = "log"
	}
	retryCounter().WithLabelValues(mode).Inc()
}
