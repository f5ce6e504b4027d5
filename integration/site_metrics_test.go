package integration

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestDecisionMetricsBySite: the decision metrics (and the undeclared
// crawlers' caddy_robots_undeclared_total) carry the site block
// (its hosts and listen addresses, as the ban scope and the status page
// name it) in a site label. Each site block's series exist from the start
// of the config, before any request, so its dashboard panels and alerts
// have data; a bot's decisions count under the site block that served
// them and no other; a person's request counts nowhere.
func TestDecisionMetricsBySite(t *testing.T) {
	c := newClient(t, globals+metricsSite("one.sites.localhost")+metricsSite("two.sites.localhost"))
	one := `site="one.sites.localhost on :` + strconv.Itoa(httpPort) + `"`
	two := `site="two.sites.localhost on :` + strconv.Itoa(httpPort) + `"`
	body := scrapeMetrics(t)
	for _, name := range []string{"caddy_robots_decisions_total", "caddy_robots_purpose_decisions_total", "caddy_robots_undeclared_total"} {
		for _, site := range []string{one, two} {
			if !strings.Contains(body, "\n"+name+"{") || !metricLineWith(body, name, site) {
				t.Errorf("before any request, /metrics has no %s series with %s", name, site)
			}
		}
	}

	sum := func(name, labels string) float64 { return undeclaredMetric(t, name, labels) }
	oneBefore, oneBlocked := sum("caddy_robots_decisions_total", one), sum("caddy_robots_decisions_total", one+`,action="block"`)
	twoBefore, twoPurpose := sum("caddy_robots_decisions_total", two), sum("caddy_robots_purpose_decisions_total", two)
	const bot = "SiteMetricsBot/1.0 (+https://sites.example/bot)"
	c.expect(siteURL("one.sites.localhost")+"/a", bot, 200)
	c.expect(siteURL("one.sites.localhost")+"/b", bot, 200)
	c.expect(siteURL("one.sites.localhost")+"/private/c", bot, 403)
	c.expect(siteURL("two.sites.localhost")+"/private/d", bot, 403)
	c.expect(siteURL("two.sites.localhost")+"/e", chromeUA, 200) // a person: not a decision
	for _, tc := range []struct {
		what      string
		got, want float64
	}{
		{"decisions of site one", sum("caddy_robots_decisions_total", one) - oneBefore, 3},
		{"blocks of site one", sum("caddy_robots_decisions_total", one+`,action="block"`) - oneBlocked, 1},
		{"decisions of site two", sum("caddy_robots_decisions_total", two) - twoBefore, 1},
		{"purpose decisions of site two", sum("caddy_robots_purpose_decisions_total", two) - twoPurpose, 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.what, tc.got, tc.want)
		}
	}
}

// scrapeMetrics returns the in-process Caddy's /metrics.
func scrapeMetrics(t *testing.T) string {
	t.Helper()
	res, err := http.Get(adminURL() + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	return string(b)
}

// metricLineWith reports whether body has a series of name carrying label.
func metricLineWith(body, name, label string) bool {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, label) {
			return true
		}
	}
	return false
}

// hasSeries reports whether body has a series line starting with prefix
// (a metric and its first labels) for a named site block (not a handler
// outside any) whose value is value.
func hasSeries(body, prefix, value string) bool {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, prefix) && strings.HasSuffix(line, value) && !strings.HasPrefix(line, prefix+"this handler") {
			return true
		}
	}
	return false
}

// metricsSite is a site block for host whose robots handler judges every
// bot's request without throttle or strikes, so that each request is one
// decision in the metrics.
func metricsSite(host string) string {
	return siteURL(host) + ` {
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		crawl_delay off
		strikes off
	}
	respond "ok"
}
`
}
