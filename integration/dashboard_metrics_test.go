package integration

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// dashboardMetrics returns every metric name the queries of the Grafana
// dashboard read (its panels, nested rows included, and its variables).
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(repoPath("examples/grafana/caddy-robots.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("the dashboard: %v", err)
	}
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "query" || k == "definition") {
					for _, m := range metricName.FindAllString(s, -1) {
						seen[m] = true
					}
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(dash)
	var out []string
	for m := range seen {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// TestDashboardMetricsFromStart: every metric a panel of the Grafana
// dashboard or an alert rule in examples/prometheus reads is on Caddy's
// /metrics from start-up, before any request, so that no panel says "No
// data" (and no alert silently never fires) until the first error, ban or
// download. The demo runs in a Caddy process of its own: the in-process
// Caddy of the other tests has counted already.
func TestDashboardMetricsFromStart(t *testing.T) {
	clearExampleVars(t)
	panels, alerts := dashboardMetrics(t), alertMetrics(t)
	if len(panels) < 10 || len(alerts) < 4 {
		t.Fatalf("too few metric names found: dashboard %v, alert rules %v", panels, alerts)
	}
	ex := startExample(t, "Caddyfile.example", nil)
	scraped := ex.adminGet("/metrics")
	for _, c := range []struct {
		what  string
		names []string
	}{{"the dashboard", panels}, {"the alert rules", alerts}} {
		var missing []string
		for _, m := range c.names {
			if !strings.Contains(scraped, "\n"+m+"{") && !strings.Contains(scraped, "\n"+m+" ") {
				missing = append(missing, m)
			}
		}
		if len(missing) > 0 {
			t.Errorf("before any request, /metrics lacks %d of the %d metrics read by %s: %v", len(missing), len(c.names), c.what, missing)
		}
	}
}
