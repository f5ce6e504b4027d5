package caddyrobots

import (
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddyrobots/caddy-robots/agents"
)

// TestMetricIndexes keeps the switches in actionIndex and categoryIndex in
// step with the label value tables.
func TestMetricIndexes(t *testing.T) {
	for i, a := range actionNames {
		if got := actionIndex(a); got != i {
			t.Errorf("actionIndex(%q) = %d, want %d", a, got, i)
		}
	}
	if got := actionIndex("nonsense"); got != -1 {
		t.Errorf("actionIndex(nonsense) = %d, want -1", got)
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
	value := func(action, category, mode string) float64 {
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
				if l["action"] == action && l["category"] == category && l["mode"] == mode {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	before := value("throttle", "seo", "log")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				countDecision("throttle", agents.CategorySEO, "log")
			}
		})
	}
	wg.Wait()
	if got := value("throttle", "seo", "log") - before; got != 8000 {
		t.Errorf("counted %v decisions, want 8000", got)
	}
	countDecision("nonsense", agents.CategorySEO, "enforce") // ignored, no panic
}
