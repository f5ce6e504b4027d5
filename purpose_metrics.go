package caddyrobots

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddyrobots/caddy-robots/agents"
)

// caddy_robots_purpose_decisions_total counts bot decisions by the
// crawler's documented purpose and the action. Both labels are bounded
// (eight purposes, four actions). The counts are sharded over cache lines
// like the decision counters (see shardedCount): a counter every bot
// request writes must not bounce between cores.
var purposeCounts [len(purposeNames)][len(actionNames)]shardedCount

// purposeNames are the label values, in purposeIndex order.
var purposeNames = [...]string{"other", "search", "ai-training", "ai-answers", "user-triggered", "seo", "archiving", "monitoring"}

func purposeIndex(p agents.Purpose) int {
	switch p {
	case agents.PurposeSearch:
		return 1
	case agents.PurposeAITraining:
		return 2
	case agents.PurposeAIAnswers:
		return 3
	case agents.PurposeUserTriggered:
		return 4
	case agents.PurposeSEO:
		return 5
	case agents.PurposeArchiving:
		return 6
	case agents.PurposeMonitoring:
		return 7
	}
	return 0
}

// countPurpose counts one decision by purpose.
func countPurpose(p agents.Purpose, a action) {
	purposeCounts[purposeIndex(p)][a].add()
}

// purposeCollector reads the sharded counts when metrics are read.
type purposeCollector struct{ desc *prometheus.Desc }

var purposeMetric struct {
	once sync.Once
	c    *purposeCollector
}

// Describe implements prometheus.Collector.
func (c *purposeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *purposeCollector) Collect(ch chan<- prometheus.Metric) {
	for i, p := range purposeNames {
		for j, a := range actionNames {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(purposeCounts[i][j].load()), p, a)
		}
	}
}

// purposeCollectorOnce returns the process's purpose collector.
func purposeCollectorOnce() *purposeCollector {
	purposeMetric.once.Do(func() {
		purposeMetric.c = &purposeCollector{desc: prometheus.NewDesc("caddy_robots_purpose_decisions_total",
			"Decisions on requests from bots, by the crawler's documented purpose and the action (allow, block, throttle, ban).",
			[]string{"purpose", "action"}, nil)}
	})
	return purposeMetric.c
}
