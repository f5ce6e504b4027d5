package caddyrobots

// Immediate retries: none of twelve real crawlers honoured Retry-After
// (Wget, Wget2 and colly gave up on the page, Scrapy retried at once), so
// throttled requests are never strikes, and the ones that come back inside
// their Retry-After are counted (caddy_robots_immediate_retries_total) so
// that operators see them.

// countRetry counts one immediate retry.
func countRetry(enforcing bool) {
	mode := "enforce"
	if !enforcing {
		mode = "log"
	}
	metrics.retries.WithLabelValues(mode).Inc()
}
