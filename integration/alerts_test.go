package integration

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"
)

// alertsDir holds the Prometheus alert rules and their unit tests.
const alertsDir = "examples/prometheus"

// TestAlertRules: the alert rules shipped beside the dashboard are valid
// (promtool check rules) and fire when, and only when, their unit tests
// say (promtool test rules: input series, expected alerts at given
// times, with their labels and annotations).
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is needed to check the alert rules: run scripts/need-promtool.sh (make deps), or install Prometheus")
	}
	for _, args := range [][]string{
		{"check", "rules", "caddy-robots-alerts.yml"},
		{"test", "rules", "caddy-robots-alerts.test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = repoPath(alertsDir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

// metricName matches the module's metric names in a PromQL query.
var metricName = regexp.MustCompile(`\bcaddy_robots_[a-z0-9_]+\b`)

// alertMetrics returns every metric name the alert rules read.
func alertMetrics(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(repoPath(alertsDir + "/caddy-robots-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range regexp.MustCompile(`(?m)^\s*expr:.*$`).FindAllString(string(data), -1) {
		for _, m := range metricName.FindAllString(line, -1) {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	slices.Sort(out)
	return out
}
