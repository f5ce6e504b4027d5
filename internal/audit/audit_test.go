package audit

import (
	"fmt"
	"testing"

	"github.com/caddyrobots/caddy-robots/enforce"
)

func logLine(ts float64, ua, uri, ip string) []byte {
	return fmt.Appendf(nil, `{"ts":%.3f,"request":{"remote_ip":"%s","method":"GET","host":"x","uri":"%s","headers":{"User-Agent":["%s"]}},"status":200}`, ts, ip, uri, ua)
}

// TestAuditorBoundsCrawlersAndSeries feeds many distinct crawler names over
// a long period: at most MaxCrawlers are named, the rest go to the other
// bucket, no request is lost, and the series still sum to the requests.
func TestAuditorBoundsCrawlersAndSeries(t *testing.T) {
	a, err := New(Config{Robots: enforce.Parse([]byte("User-agent: *\nDisallow: /x\nCrawl-delay: 10\n")), MaxCrawlers: 5})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	for i := range n {
		// Out of order in time on purpose, and spread over ~4 months.
		ts := 1778500000 + float64((i*7919)%n)*10000
		a.Line(logLine(ts, fmt.Sprintf("Bot%d/1.0 (+https://b%d.example/)", i%50, i%50), "/x", "192.0.2.1"))
	}
	r := a.Report()
	if len(r.Crawler) != 6 || r.Crawler[5].Name != OtherName {
		t.Fatalf("want 5 named crawlers and the other bucket, got %d", len(r.Crawler))
	}
	var total, series int64
	for _, c := range r.Crawler {
		total += c.Requests
		for _, v := range c.SeriesRequests {
			series += v
		}
		if c.Disallowed != c.Requests {
			t.Errorf("%s: %d of %d disallowed", c.Name, c.Disallowed, c.Requests)
		}
	}
	if total != n || series != n {
		t.Errorf("requests %d, in series %d, want %d", total, series, n)
	}
	if span := r.SeriesStep * seriesBuckets; span < r.Last.Sub(r.First) {
		t.Errorf("series cover %s, the log %s", span, r.Last.Sub(r.First))
	}
}

func TestAuditorCrawlDelayPerAddress(t *testing.T) {
	a, _ := New(Config{Robots: enforce.Parse([]byte("User-agent: *\nCrawl-delay: 5\n"))})
	ua := "ExampleCrawler/1.0 (+https://example.com/bot)"
	for _, l := range []struct {
		ts float64
		ip string
	}{{0, "192.0.2.1"}, {1, "192.0.2.2"}, {4, "192.0.2.1"}, {10, "192.0.2.1"}, {12, "192.0.2.2"}, {13, "192.0.2.2"}} {
		a.Line(logLine(1778500000+l.ts, ua, "/", l.ip))
	}
	if got := a.Report().Crawler[0].CrawlDelayViolations; got != 2 {
		t.Errorf("violations %d, want 2 (4s after 0s from .1, 13s after 12s from .2)", got)
	}
}

func TestAuditorAbsoluteFormTarget(t *testing.T) {
	a, _ := New(Config{Robots: enforce.Parse([]byte("User-agent: *\nDisallow: /x\n"))})
	ua := "ExampleCrawler/1.0 (+https://example.com/bot)"
	a.Line(logLine(1778500000, ua, "http://example.com/x/y", "192.0.2.1"))
	a.Line(logLine(1778500001, ua, "http://example.com", "192.0.2.1"))
	if got := a.Report().Crawler[0].Disallowed; got != 1 {
		t.Errorf("disallowed %d, want 1 (http://example.com/x/y is /x/y)", got)
	}
}
