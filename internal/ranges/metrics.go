package ranges

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddyrobots/caddy-robots/agents"
)

// Metrics of the IP lists. The method label takes values from the bounded
// set of verification methods.
var metrics struct {
	once    sync.Once
	fetches *prometheus.CounterVec
	ages    *ageCollector
}

func initMetrics() {
	metrics.once.Do(func() {
		metrics.fetches = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "ranges_fetch_total",
			Help: "Downloads of crawler IP lists, by verification method and result (ok, not_modified, rejected, error).",
		}, []string{"method", "result"})
		metrics.ages = &ageCollector{desc: prometheus.NewDesc(
			"caddy_robots_ranges_age_seconds",
			"Age of the IP list each verification method uses: time since its publisher last confirmed it, or since the embedded snapshot's date.",
			[]string{"method"}, nil)}
		// Every method and result at zero, so that the family exists
		// from start-up (the first download may be hours away).
		for _, m := range verificationKeys() {
			for _, r := range [...]agents.RangesFetchResult{agents.RangesOK, agents.RangesNotModified, agents.RangesRejected, agents.RangesError} {
				metrics.fetches.WithLabelValues(m, string(r))
			}
		}
	})
}

// Collectors returns the process's collectors of the IP lists, for a
// metrics registry: caddy_robots_ranges_fetch_total{method,result} and
// caddy_robots_ranges_age_seconds{method}. The same collectors every time.
func Collectors() []prometheus.Collector {
	initMetrics()
	return []prometheus.Collector{metrics.fetches, metrics.ages}
}

// tracked are the verifiers Start was given and not yet released, for the
// age metric.
var tracked struct {
	mu sync.Mutex
	n  map[*agents.Verifier]int
}

func track(v *agents.Verifier, add bool) {
	tracked.mu.Lock()
	defer tracked.mu.Unlock()
	if tracked.n == nil {
		tracked.n = map[*agents.Verifier]int{}
	}
	if add {
		tracked.n[v]++
		return
	}
	if tracked.n[v]--; tracked.n[v] <= 0 {
		delete(tracked.n, v)
	}
}

// newestLists returns, per method, the date of the freshest list any
// tracked verifier uses.
func newestLists() map[string]time.Time {
	tracked.mu.Lock()
	defer tracked.mu.Unlock()
	newest := map[string]time.Time{}
	for v := range tracked.n {
		for _, m := range verificationKeys() {
			if asOf, ok := v.ListAsOf(m); ok && asOf.After(newest[m]) {
				newest[m] = asOf
			}
		}
	}
	return newest
}

// ageCollector exports, per method, the age of the freshest list any live
// verifier uses.
type ageCollector struct{ desc *prometheus.Desc }

// Describe implements prometheus.Collector.
func (c *ageCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *ageCollector) Collect(ch chan<- prometheus.Metric) {
	newest := newestLists()
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
