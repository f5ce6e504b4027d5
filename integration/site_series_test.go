package integration

import (
	"strconv"
	"testing"
)

// siteSeriesFamilies are the metrics labelled by site block.
var siteSeriesFamilies = []string{"caddy_robots_decisions_total", "caddy_robots_purpose_decisions_total", "caddy_robots_undeclared_total"}

// TestSiteSeriesFollowReloads: a config reload that removes a site block
// deletes its series of the decision metrics from /metrics (else a
// dashboard shows a site that no longer exists, and configs that cycle
// through site names grow the series without bound), while a site block
// the new config still serves keeps its series and their counts: a reload
// that keeps both blocks keeps both, and counting goes on in the same
// series.
func TestSiteSeriesFollowReloads(t *testing.T) {
	const hostOne, hostTwo = "one.series.localhost", "two.series.localhost"
	both := globals + metricsSite(hostOne) + metricsSite(hostTwo)
	c := newClient(t, both)
	one := `site="` + hostOne + ` on :` + strconv.Itoa(httpPort) + `"`
	two := `site="` + hostTwo + ` on :` + strconv.Itoa(httpPort) + `"`
	const bot = "SeriesBot/1.0 (+https://series.example/bot)"
	c.expect(siteURL(hostOne)+"/a", bot, 200)
	c.expect(siteURL(hostOne)+"/private/b", bot, 403)
	c.expect(siteURL(hostTwo)+"/private/c", bot, 403)

	counts := func(site string) map[string]float64 {
		m := map[string]float64{}
		for _, name := range siteSeriesFamilies {
			m[name] = undeclaredMetric(t, name, site)
		}
		return m
	}
	oneCounts, twoCounts := counts(one), counts(two)
	if oneCounts["caddy_robots_decisions_total"] != 2 || twoCounts["caddy_robots_decisions_total"] != 1 {
		t.Fatalf("before any reload: decisions %v of site one (want 2), %v of site two (want 1)",
			oneCounts["caddy_robots_decisions_total"], twoCounts["caddy_robots_decisions_total"])
	}
	present := func(when, site string, want bool) {
		t.Helper()
		body := scrapeMetrics(t)
		for _, name := range siteSeriesFamilies {
			if got := metricLineWith(body, name, site); got != want {
				t.Errorf("%s: /metrics has series of %s with %s: %v, want %v", when, name, site, got, want)
			}
		}
	}
	same := func(when, site string, want map[string]float64) {
		t.Helper()
		for name, n := range counts(site) {
			if n != want[name] {
				t.Errorf("%s: %s of %s sums to %v, want %v as before", when, name, site, n, want[name])
			}
		}
	}

	// The same config again, every handler provisioned anew: both stay.
	forceLoad(t, both)
	present("after a reload that keeps both blocks", one, true)
	present("after a reload that keeps both blocks", two, true)
	same("after a reload that keeps both blocks", one, oneCounts)
	same("after a reload that keeps both blocks", two, twoCounts)

	// Site two removed: its series go, site one's stay with their counts.
	forceLoad(t, globals+metricsSite(hostOne))
	present("after the reload that removed site two", two, false)
	present("after the reload that removed site two", one, true)
	same("after the reload that removed site two", one, oneCounts)

	// Counting goes on in site one's series.
	settle(c, siteURL(hostOne)+"/")
	c.expect(siteURL(hostOne)+"/private/d", bot, 403)
	if got := undeclaredMetric(t, "caddy_robots_decisions_total", one); got != oneCounts["caddy_robots_decisions_total"]+1 {
		t.Errorf("after one more decision, site one's decisions sum to %v, want %v", got, oneCounts["caddy_robots_decisions_total"]+1)
	}
}
