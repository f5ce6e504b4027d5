package caddyrobots

import (
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddyrobots/caddy-robots/agents"
)

// TestMetricIndexes keeps the action and reason constants and the switch in
// categoryIndex in step with the label value tables.
func TestMetricIndexes(t *testing.T) {
	for a, want := range map[action]string{actAllow: "allow", actBlock: "block", actThrottle: "throttle", actBan: "ban"} {
		if a.String() != want || actionValues[a] != want {
			t.Errorf("action %d = %q (value %v), want %q", a, a, actionValues[a], want)
		}
	}
	if len(actionNames) != 4 {
		t.Errorf("%d action names for 4 actions", len(actionNames))
	}
	for r, want := range map[reason]string{reasonNone: "", reasonRule: "rule", reasonSpoofed: "spoofed",
		reasonUnavailable: "unavailable", reasonBan: "ban", reasonRate: "rate"} {
		if r.String() != want {
			t.Errorf("reason %d = %q, want %q", r, r, want)
		}
	}
	for i, c := range categoryNames {
		if got := categoryIndex(c); got != i {
			t.Errorf("categoryIndex(%q) = %d, want %d", c, got, i)
		}
	}
	if got, want := categoryIndex("made-up"), len(categoryNames)-1; got != want {
		t.Errorf("categoryIndex(made-up) = %d, want %d (other)", got, want)
	}
}

// TestDecisionCollector: counts from many goroutines add up exactly, and the
// family is exported with its labels through a real registry.
func TestDecisionCollector(t *testing.T) {
	initMetrics()
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics.decisions); err != nil {
		t.Fatal(err)
	}
	value := func(action, reason, category, mode string) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "caddy_robots_decisions_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				l := map[string]string{}
				for _, p := range m.GetLabel() {
					l[p.GetName()] = p.GetValue()
				}
				if l["action"] == action && l["reason"] == reason && l["category"] == category && l["mode"] == mode {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	before := value("throttle", "rate", "seo", "log")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				countDecision(actThrottle, reasonRate, agents.CategorySEO, true)
			}
		})
	}
	wg.Wait()
	if got := value("throttle", "rate", "seo", "log") - before; got != 8000 {
		t.Errorf("counted %v decisions, want 8000", got)
	}
	if got := value("throttle", "rate", "seo", "enforce"); got != 0 {
		t.Errorf("log-mode decisions counted as enforce: %v", got)
	}
}
