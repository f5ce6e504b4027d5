package integration

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The history parts of /robots/status the tests read.
type (
	histBucket struct {
		Start     time.Time `json:"start"`
		Requests  int       `json:"requests"`
		Refused   int       `json:"refused"`
		Throttled int       `json:"throttled"`
	}
	histSeries struct {
		BucketSeconds int          `json:"bucket_seconds"`
		Buckets       []histBucket `json:"buckets"`
	}
	histHandler struct {
		SiteBlock   string     `json:"site_block"`
		Server      string     `json:"server"`
		CountsSince *time.Time `json:"counts_since"`
		TopCrawlers []struct {
			Name    string `json:"crawler"`
			Allowed int    `json:"allowed"`
			Refused int    `json:"refused"`
		} `json:"top_crawlers"`
		History struct {
			Hour     histSeries `json:"hour"`
			Day      histSeries `json:"day"`
			Crawlers []struct {
				Crawler string     `json:"crawler"`
				Other   bool       `json:"other"`
				Hour    histSeries `json:"hour"`
				Day     histSeries `json:"day"`
			} `json:"crawlers"`
		} `json:"history"`
	}
)

// total sums a series' buckets.
func (s histSeries) total() histBucket {
	var t histBucket
	for _, b := range s.Buckets {
		t.Requests += b.Requests
		t.Refused += b.Refused
		t.Throttled += b.Throttled
	}
	return t
}

// histHandlerOf returns the /robots/status entry of the handler whose
// site block names host.
func histHandlerOf(t *testing.T, host string) histHandler {
	t.Helper()
	var st struct {
		Handlers []histHandler `json:"handlers"`
	}
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
	for _, h := range st.Handlers {
		if strings.Contains(h.SiteBlock, host) {
			return h
		}
	}
	t.Fatalf("no handler of site block %s in /robots/status: %+v", host, st.Handlers)
	return histHandler{}
}

// forceLoad posts config (a Caddyfile) to /load as `caddy reload --force`
// does: Caddy provisions every handler anew even when the config is the
// one running.
func forceLoad(t *testing.T, config string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, adminURL()+"/load", strings.NewReader(config))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/caddyfile")
	req.Header.Set("Cache-Control", "must-revalidate")
	c := &http.Client{Timeout: 30 * time.Second, Transport: resetRetrier{&http.Transport{DisableKeepAlives: true}}}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST /load: %v", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST /load: %d %s", res.StatusCode, body)
	}
}

// TestAdminHistorySurvivesReload: /robots/status counts every bot request
// in the bucket of its minute (and quarter-hour), with its outcome, for the
// site block and for each crawler, and says since when it counts; a reload
// of the same config (new handlers) keeps the counts, the history and the
// since, before any request reaches the new handler.
func TestAdminHistorySurvivesReload(t *testing.T) {
	const host = "hist.localhost"
	backend.set(host, 200, "User-agent: *\nDisallow: /private/\n\nUser-agent: SlowBot\nDisallow: /private/\nCrawl-delay: 30\n")
	config := globals + siteURL(host) + ` {
	robots {
		crawl_burst 1
	}
	reverse_proxy ` + backend.addr + `
}
`
	c := newClient(t, config)
	settle(c, siteURL(host)+"/")
	const histBot, slowBot = "HistBot/1.0 (+https://hist.example/bot)", "SlowBot/1.0 (+https://slow.example/bot)"
	before := time.Now()
	for range 3 {
		c.expect(siteURL(host)+"/public", histBot, 200)
	}
	c.expect(siteURL(host)+"/private/a", histBot, 403, "Disallow: /private/")
	c.expect(siteURL(host)+"/a", slowBot, 200)
	c.expect(siteURL(host)+"/b", slowBot, 503)
	after := time.Now()

	h := histHandlerOf(t, host)
	if h.CountsSince == nil || h.CountsSince.After(before) {
		t.Fatalf("counts_since %v, want a time before the requests (%s)", h.CountsSince, before)
	}
	checkHistory(t, h, before, after)

	forceLoad(t, config)
	r := histHandlerOf(t, host)
	if r.Server != "" {
		t.Errorf("server %q right after the reload: the handler was not provisioned anew", r.Server)
	}
	if r.CountsSince == nil || !r.CountsSince.Equal(*h.CountsSince) {
		t.Errorf("after the reload, counts_since %v, want %v", r.CountsSince, h.CountsSince)
	}
	checkHistory(t, r, before, after)

	// And counting goes on in the same series; a person's browser is
	// never counted, even where a bot would be refused.
	settle(c, siteURL(host)+"/")
	c.expect(siteURL(host)+"/public", histBot, 200)
	for range 3 {
		c.expect(siteURL(host)+"/private/a", chromeUA, 200)
	}
	if got := histHandlerOf(t, host).History.Hour.total(); got.Requests != 7 {
		t.Errorf("after one more bot request and a browser's, the hour counts %+v, want 7 requests", got)
	}
}

// checkHistory checks h's history of TestAdminHistorySurvivesReload's six
// requests, sent between before and after.
func checkHistory(t *testing.T, h histHandler, before, after time.Time) {
	t.Helper()
	for _, w := range []struct {
		name  string
		s     histSeries
		width time.Duration
	}{{"hour", h.History.Hour, time.Minute}, {"day", h.History.Day, 15 * time.Minute}} {
		if w.s.BucketSeconds != int(w.width/time.Second) {
			t.Errorf("%s: buckets of %ds, want %s", w.name, w.s.BucketSeconds, w.width)
		}
		if got := w.s.total(); got != (histBucket{Requests: 6, Refused: 1, Throttled: 1}) {
			t.Errorf("%s: %+v, want 6 requests, 1 refused, 1 throttled", w.name, got)
		}
		for _, b := range w.s.Buckets {
			// The handler's clock is the loaders' coarse one, up to a
			// couple of seconds behind.
			if b.Start.Before(before.Add(-2*time.Second).Truncate(w.width)) || b.Start.After(after.Truncate(w.width)) {
				t.Errorf("%s: bucket %s, not the %s of a request (sent %s to %s)", w.name, b.Start, w.width, before.UTC(), after.UTC())
			}
		}
	}
	crawlers := map[string]histBucket{}
	for _, x := range h.History.Crawlers {
		crawlers[x.Crawler] = x.Hour.total()
		if x.Day.total() != x.Hour.total() {
			t.Errorf("%s: the day %+v and the hour %+v differ", x.Crawler, x.Day.total(), x.Hour.total())
		}
	}
	if got := crawlers["HistBot"]; got != (histBucket{Requests: 4, Refused: 1}) {
		t.Errorf("HistBot's hour: %+v, want 4 requests, 1 refused (all: %+v)", got, crawlers)
	}
	if got := crawlers["SlowBot"]; got != (histBucket{Requests: 2, Throttled: 1}) {
		t.Errorf("SlowBot's hour: %+v, want 2 requests, 1 throttled (all: %+v)", got, crawlers)
	}
	if _, ok := crawlers["other"]; ok {
		t.Errorf("an other row, though every crawler is listed: %+v", crawlers)
	}
	top := map[string]int{}
	for _, x := range h.TopCrawlers {
		top[x.Name] = x.Allowed + x.Refused
	}
	if top["HistBot"] != 4 || top["SlowBot"] != 2 {
		t.Errorf("top crawlers %v, want HistBot 4, SlowBot 2", top)
	}
}
