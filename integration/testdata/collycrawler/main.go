// Command collycrawler is a small polite crawler built with Colly, for the
// integration tests: it obeys robots.txt (Colly reads it before the first
// page of a host), keeps the delay it is given between requests (Colly's
// LimitRule; Colly does not read Crawl-delay itself, so the operator sets
// it, as the tests do) and follows every link of the start page's host.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/gocolly/colly/v2"
)

func main() {
	start := flag.String("start", "", "start URL")
	delay := flag.Duration("delay", time.Second, "delay between requests")
	ua := flag.String("ua", "CollyBot/1.0 (+https://example.org/colly)", "User-Agent")
	flag.Parse()
	u, err := url.Parse(*start)
	if err != nil || u.Host == "" {
		fmt.Fprintln(os.Stderr, "collycrawler: -start must be an absolute URL")
		os.Exit(2)
	}
	c := colly.NewCollector(colly.UserAgent(*ua), colly.AllowedDomains(u.Hostname()))
	c.IgnoreRobotsTxt = false
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: 1, Delay: *delay}); err != nil {
		fmt.Fprintln(os.Stderr, "collycrawler:", err)
		os.Exit(2)
	}
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		_ = e.Request.Visit(e.Attr("href"))
	})
	c.OnError(func(r *colly.Response, err error) {
		fmt.Fprintf(os.Stderr, "collycrawler: %s: %d %v\n", r.Request.URL, r.StatusCode, err)
	})
	if err := c.Visit(*start); err != nil {
		fmt.Fprintln(os.Stderr, "collycrawler:", err)
		os.Exit(1)
	}
	c.Wait()
}
