package caddyrobots

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// caddy_robots_purpose_decisions_total counts bot decisions by the
// crawler's documented purpose and the action. Both labels are bounded
// (eight purposes, four actions). It is read from botCounts (see
// countDecision), summed over the kinds of each action, categories and
// modes.

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

// purposeCollector sums botCounts by purpose and action when metrics are read.
type purposeCollector struct{ desc *prometheus.Desc }

// Describe implements prometheus.Collector.
func (c *purposeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *purposeCollector) Collect(ch chan<- prometheus.Metric) {
	var sums [len(purposeNames)][policy.Actions]uint64
	for ki := range numKinds {
		a := kindAction(ki)
		for ci := range categoryNames {
			for pi := range purposeNames {
				for mi := range 2 {
					sums[pi][a] += botCount(ki, ci, pi, mi)
				}
			}
		}
	}
	for i, p := range purposeNames {
		for j := range policy.Actions {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(sums[i][j]), p, policy.Action(j).String())
		}
	}
}
