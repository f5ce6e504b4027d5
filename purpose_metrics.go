package caddyrobots

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddyrobots/caddy-robots/agents"
)

// caddy_robots_purpose_decisions_total counts bot decisions by the
// crawler's documented purpose and the action. Both labels are bounded
// (nine purposes, four actions); the counters are resolved once, so
// counting is one atomic add.
var purposeMetric struct {
	once     sync.Once
	vec      *prometheus.CounterVec
	counters [len(purposeNames)][len(actionNames)]prometheus.Counter
}

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

func initPurposeMetric() {
	purposeMetric.once.Do(func() {
		purposeMetric.vec = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy", Subsystem: "robots", Name: "purpose_decisions_total",
			Help: "Decisions on requests from bots, by the crawler's documented purpose and the action (allow, block, throttle, ban).",
		}, []string{"purpose", "action"})
		for i, p := range purposeNames {
			for j, a := range actionNames {
				purposeMetric.counters[i][j] = purposeMetric.vec.WithLabelValues(p, a)
			}
		}
	})
}

// countPurpose counts one decision by purpose.
func countPurpose(p agents.Purpose, a action) {
	purposeMetric.counters[purposeIndex(p)][a].Inc()
}

// registerPurposeMetric adds the counter to a config's registry.
func registerPurposeMetric(reg prometheus.Registerer) error {
	initPurposeMetric()
	if reg == nil {
		return nil
	}
	if err := reg.Register(purposeMetric.vec); err != nil {
		if _, ok := err.(prometheus.AlreadyRegisteredError); !ok {
			return err
		}
	}
	return nil
}
