package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

const (
	t0      = 1778500000 // 2026-05-11 11:46:40 UTC
	uaBot   = "ExampleCrawler/1.0 (+https://example.com/bot)"
	uaOther = "OtherBot/2.0 (+https://other.example/bot)"
)

func logLine(ts float64, ua, uri, ip string) []byte {
	return fmt.Appendf(nil, `{"ts":%.3f,"request":{"remote_ip":"%s","method":"GET","host":"x","uri":"%s","headers":{"User-Agent":["%s"]}},"status":200}`, ts, ip, uri, ua)
}

// req is one request of a test log, written as Caddy logs it.
type req struct {
	ts                float64
	host, method, uri string
	ua, ip            string
	headers           map[string]string
}

func (r req) line() []byte {
	method, host := r.method, r.host
	if method == "" {
		method = "GET"
	}
	if host == "" {
		host = "example.com"
	}
	hs := map[string][]string{"Accept": {"*/*"}, "User-Agent": {r.ua}}
	for k, v := range r.headers {
		hs[k] = []string{v}
	}
	type request struct {
		RemoteIP string              `json:"remote_ip"`
		Port     string              `json:"remote_port"`
		ClientIP string              `json:"client_ip"`
		Proto    string              `json:"proto"`
		Method   string              `json:"method"`
		Host     string              `json:"host"`
		URI      string              `json:"uri"`
		Headers  map[string][]string `json:"headers"`
	}
	b, err := json.Marshal(struct {
		Level   string  `json:"level"`
		TS      float64 `json:"ts"`
		Logger  string  `json:"logger"`
		Msg     string  `json:"msg"`
		Request request `json:"request"`
		Status  int     `json:"status"`
	}{"info", r.ts, "http.log.access.log0", "handled request",
		request{r.ip, "41000", r.ip, "HTTP/1.1", method, host, r.uri, hs}, 200})
	if err != nil {
		panic(err)
	}
	return b
}

// audit feeds reqs to an Auditor for cfg (Robots from robots) and returns
// it with the decisions it wrote.
func audit(t *testing.T, cfg Config, robots string, reqs []req) (*Auditor, []Decision) {
	t.Helper()
	cfg.Robots = enforce.Parse([]byte(robots))
	var out bytes.Buffer
	cfg.Decisions = &out
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := a.Line(r.line()); err != nil {
			t.Fatal(err)
		}
	}
	var ds []Decision
	dec := json.NewDecoder(&out)
	for dec.More() {
		var d Decision
		if err := dec.Decode(&d); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	return a, ds
}

func summary(ds []Decision) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.Decision+"/"+d.Reason)
	}
	return strings.Join(parts, " ")
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
		ts := t0 + float64((i*7919)%n)*10000
		if err := a.Line(logLine(ts, fmt.Sprintf("Bot%d/1.0 (+https://b%d.example/)", i%50, i%50), "/x", "192.0.2.1")); err != nil {
			t.Fatal(err)
		}
	}
	r := a.Report()
	if len(r.Crawler) != 6 || r.Crawler[5].Name != OtherName {
		t.Fatalf("want 5 named crawlers and the other bucket, got %d", len(r.Crawler))
	}
	var total, series, refused int64
	for _, c := range r.Crawler {
		total += c.Requests
		for _, v := range c.SeriesRequests {
			series += v
		}
		for _, v := range c.SeriesRefused {
			refused += v
		}
		if c.Refused != c.Requests || c.RefusedRule+c.Banned != c.Requests {
			t.Errorf("%s: %d of %d refused (%d by rule, %d banned)", c.Name, c.Refused, c.Requests, c.RefusedRule, c.Banned)
		}
	}
	if total != n || series != n || refused != n {
		t.Errorf("requests %d, in series %d, refused in series %d, want %d", total, series, refused, n)
	}
	if span := r.SeriesStep * seriesBuckets; span < r.Last.Sub(r.First) {
		t.Errorf("series cover %s, the log %s", span, r.Last.Sub(r.First))
	}
	if r.OutOfOrder == 0 {
		t.Error("lines months out of order were not reported")
	}
}

// TestAuditorThrottleReplaysThePace: Crawl-delay is judged as the handler
// judges it, with the store's GCRA at the lines' times: the default burst
// lets 4 requests come back to back and throttles the 5th; each unverified
// address has its own budget; crawl_delay off throttles nobody.
func TestAuditorThrottleReplaysThePace(t *testing.T) {
	const robots = "User-agent: *\nCrawl-delay: 5\n"
	reqs := []req{
		{ts: t0, uri: "/1", ua: uaBot, ip: "192.0.2.1"},
		{ts: t0 + 0.1, uri: "/2", ua: uaBot, ip: "192.0.2.1"},
		{ts: t0 + 0.2, uri: "/3", ua: uaBot, ip: "192.0.2.1"},
		{ts: t0 + 0.3, uri: "/4", ua: uaBot, ip: "192.0.2.1"},
		{ts: t0 + 0.4, uri: "/5", ua: uaBot, ip: "192.0.2.1"}, // the 5th back to back
		{ts: t0 + 0.5, uri: "/1", ua: uaBot, ip: "192.0.2.2"}, // another address: its own budget
		{ts: t0 + 30, uri: "/6", ua: uaBot, ip: "192.0.2.1"},  // the budget refilled
		// Googlebot is documented to ignore Crawl-delay: with crawl_delay
		// on it is not throttled.
		{ts: t0, uri: "/", ua: "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", ip: "66.249.66.1"},
		{ts: t0 + 0.1, uri: "/", ua: "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", ip: "66.249.66.1"},
	}
	a, ds := audit(t, Config{}, robots, reqs)
	want := "allow/no rule disallows allow/no rule disallows allow/no rule disallows allow/no rule disallows throttle/rate " +
		"allow/no rule disallows allow/no rule disallows allow/no rule disallows allow/no rule disallows"
	if got := summary(ds); got != want {
		t.Errorf("decisions:\n got %s\nwant %s", got, want)
	}
	if d := ds[4]; d.RetryAfterSeconds <= 0 || d.CrawlDelaySeconds != 5 || d.Token != "*" {
		t.Errorf("throttled decision: %+v", d)
	}
	r := a.Report()
	bot, g := crawlerReport(t, r, "ExampleCrawler"), crawlerReport(t, r, "Googlebot")
	if bot.Throttled != 1 || bot.Interval != Seconds(5*time.Second) || throttledCell(&bot) != "1" {
		t.Errorf("ExampleCrawler: %d throttled, interval %v", bot.Throttled, time.Duration(bot.Interval))
	}
	if g.Throttled != 0 || g.Interval != 0 || g.CrawlDelay != Seconds(5*time.Second) || throttledCell(&g) != "off*" {
		t.Errorf("Googlebot: %d throttled, interval %v, cell %s", g.Throttled, time.Duration(g.Interval), throttledCell(&g))
	}

	off := policy.Options{CrawlDelay: policy.CrawlDelayOff, Burst: state.DefaultBurst}
	a, _ = audit(t, Config{Options: &off}, robots, reqs)
	if c := crawlerReport(t, a.Report(), "ExampleCrawler"); c.Throttled != 0 || throttledCell(&c) != "off" {
		t.Errorf("crawl_delay off: %d throttled, cell %s", c.Throttled, throttledCell(&c))
	}
}

// TestAuditorStrikesBanAndExpire: refusals by rule are strikes; the strike
// that reaches the count bans the crawler (its name and address) for the
// ban's duration; another crawler on the same address, and the crawler
// from another address, are not banned.
func TestAuditorStrikesBanAndExpire(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /private/\n"
	p := state.StrikePolicy{Strikes: 3, Window: 10 * time.Minute, Ban: time.Hour}
	reqs := []req{
		{ts: t0, uri: "/private/a", ua: uaBot, ip: "192.0.2.1"},
		{ts: t0 + 1, uri: "/private/b", ua: uaBot, ip: "192.0.2.1"},
		{ts: t0 + 2, uri: "/private/c", ua: uaBot, ip: "192.0.2.1"}, // the third strike: banned
		{ts: t0 + 3, uri: "/", ua: uaBot, ip: "192.0.2.1"},
		{ts: t0 + 4, uri: "/", ua: uaOther, ip: "192.0.2.1"}, // a neighbour on the same address
		{ts: t0 + 5, uri: "/", ua: uaBot, ip: "192.0.2.2"},   // another address
		{ts: t0 + 2 + 3601, uri: "/", ua: uaBot, ip: "192.0.2.1"},
	}
	a, ds := audit(t, Config{Strikes: &p}, robots, reqs)
	want := "block/rule block/rule block/rule ban/ban allow/no rule disallows allow/no rule disallows allow/no rule disallows"
	if got := summary(ds); got != want {
		t.Errorf("decisions:\n got %s\nwant %s", got, want)
	}
	if !ds[0].Strike || ds[0].Rule != "Disallow: /private/ (line 2)" || ds[0].Line != 2 {
		t.Errorf("first refusal: %+v", ds[0])
	}
	if d := ds[3]; d.RetryAfterSeconds < 3598 || d.RetryAfterSeconds > 3600 {
		t.Errorf("ban's Retry-After %v s, want ~3599", d.RetryAfterSeconds)
	}
	r := a.Report()
	bot, other := crawlerReport(t, r, "ExampleCrawler"), crawlerReport(t, r, "OtherBot")
	if bot.Strikes != 3 || bot.Bans != 1 || bot.Banned != 1 || bot.RefusedRule != 3 || bot.Refused != 4 {
		t.Errorf("ExampleCrawler: %d strikes, %d bans, %d banned, %d by rule, %d refused", bot.Strikes, bot.Bans, bot.Banned, bot.RefusedRule, bot.Refused)
	}
	if other.Banned != 0 || other.Strikes != 0 {
		t.Errorf("OtherBot: %d banned, %d strikes", other.Banned, other.Strikes)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "ExampleCrawler: banned once after 3 strikes (strikes 3 10m 1h); 1 request refused while banned") {
		t.Errorf("table:\n%s", table.String())
	}

	// Strikes off: no strike, no ban.
	noStrikes := DefaultOptions()
	noStrikes.Strikes = false
	a, ds = audit(t, Config{Options: &noStrikes, Strikes: &p}, robots, reqs)
	if got := summary(ds); strings.Contains(got, "ban") || ds[0].Strike {
		t.Errorf("strikes off: %s", got)
	}
	if c := crawlerReport(t, a.Report(), "ExampleCrawler"); c.Strikes != 0 || a.Report().Options.Strikes != "off" {
		t.Errorf("strikes off: %d strikes, options %+v", c.Strikes, a.Report().Options)
	}
}

// TestAuditorJudgesEveryForm: the target is judged in every form the
// server may act on, the rewrite headers included, as the handler judges
// it; and the decision says which form was refused.
func TestAuditorJudgesEveryForm(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /private/\n"
	_, ds := audit(t, Config{}, robots, []req{
		{ts: t0, uri: "//private/x", ua: uaBot, ip: "192.0.2.1"},
		{ts: t0 + 10, uri: "/public/..%2fprivate/x", ua: uaBot, ip: "192.0.2.1"},
		{ts: t0 + 20, uri: "/public/", ua: uaBot, ip: "192.0.2.1", headers: map[string]string{"X-Original-Url": "/private/y"}},
		{ts: t0 + 30, uri: "http://example.com/private/z", ua: uaBot, ip: "192.0.2.1"},
		{ts: t0 + 40, uri: "/public/", ua: uaBot, ip: "192.0.2.1"},
	})
	for i, want := range []string{"/private/x", "/private/x", "/private/y", "", ""} {
		d := ds[i]
		refused := i < 4
		if (d.Decision == "block") != refused || d.JudgedAs != want {
			t.Errorf("%s: %s/%s judged as %q, want refused %v as %q", d.URI, d.Decision, d.Reason, d.JudgedAs, refused, want)
		}
	}
}

// TestAuditorPreferencesEnforce: with preferences enforce, a preference
// refuses the request (403, no strike), as the handler does.
func TestAuditorPreferencesEnforce(t *testing.T) {
	o := DefaultOptions()
	o.Preferences = true
	a, ds := audit(t, Config{Options: &o}, prefsRobots, []req{
		{ts: t0, uri: "/", ua: uaGPTBot, ip: "4.227.36.5"},
		{ts: t0 + 10, uri: "/blog/x", ua: uaGPTBot, ip: "4.227.36.5"},
	})
	if got := summary(ds); got != "block/preference allow/no rule disallows" {
		t.Fatalf("decisions %s", got)
	}
	if d := ds[0]; d.Preference != "ai-training refused by Content-Usage train-ai=n (line 4)" || d.Strike {
		t.Errorf("preference refusal: %+v", d)
	}
	r := a.Report()
	if c := crawlerReport(t, r, "GPTBot"); c.RefusedPreference != 1 || c.PreferenceConflicts != 1 || c.Refused != 1 {
		t.Errorf("GPTBot: %d refused by preference, %d conflicts, %d refused", c.RefusedPreference, c.PreferenceConflicts, c.Refused)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if s := table.String(); !strings.Contains(s, "BY PREFERENCE") || !strings.Contains(s, "GPTBot: 1 refused: ai-training refused by") {
		t.Errorf("table:\n%s", s)
	}
}

// TestAuditorNotJudged: people, /robots.txt, exempt networks, HTTP
// libraries under libraries ignore and this plugin's own requests are not
// judged, and the plugin's own requests are never counted as a crawler's.
func TestAuditorNotJudged(t *testing.T) {
	o := DefaultOptions()
	exempt := []string{"198.51.100.0/24"}
	cfg := Config{Options: &o, IgnoreLibraries: true}
	for _, e := range exempt {
		cfg.Exempt = append(cfg.Exempt, mustPrefix(t, e))
	}
	const robots = "User-agent: *\nDisallow: /\n"
	a, ds := audit(t, cfg, robots, []req{
		{ts: t0, uri: "/private/", ua: uaBrowser, ip: "203.0.113.9"},
		{ts: t0 + 1, uri: "/robots.txt", ua: uaBot, ip: "192.0.2.1"},
		{ts: t0 + 2, uri: "/robots.txt", ua: OwnLoaderUserAgent, ip: "127.0.0.1"},
		{ts: t0 + 3, uri: "/robots.txt", ua: "caddy-robots-cli (+https://github.com/caddyrobots/caddy-robots)", ip: "192.0.2.50"},
		{ts: t0 + 4, uri: "/x", ua: uaBot, ip: "198.51.100.7"},
		{ts: t0 + 5, uri: "/x", ua: "curl/8.5.0", ip: "192.0.2.9"},
		{ts: t0 + 6, uri: "/x", ua: uaBot, ip: "192.0.2.1"},
	})
	want := "allow/not a crawler allow//robots.txt is always served allow/this plugin's own request allow/this plugin's own request " +
		"allow/exempt network allow/not judged (libraries ignore) block/rule"
	if got := summary(ds); got != want {
		t.Errorf("decisions:\n got %s\nwant %s", got, want)
	}
	r := a.Report()
	if r.Own != 2 || r.NotJudged != 1 || r.Browsers != 1 || r.Crawlers != 3 {
		t.Errorf("own %d, not judged %d, browsers %d, crawlers %d", r.Own, r.NotJudged, r.Browsers, r.Crawlers)
	}
	for _, c := range r.Crawler {
		if strings.HasPrefix(c.Name, "caddy-robots") || c.Name == "curl" {
			t.Errorf("%s reported as a crawler", c.Name)
		}
	}
	if c := crawlerReport(t, r, "ExampleCrawler"); c.Requests != 3 || c.Exempt != 1 || c.RobotsTxtFetches != 1 || c.RefusedRule != 1 {
		t.Errorf("ExampleCrawler: %+v", c)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "this plugin's own requests: 2") {
		t.Errorf("table:\n%s", table.String())
	}
}

// TestAuditorHosts: the state is kept per site, as the handler keeps it (a
// ban on one site does not ban on another); the report splits by site;
// Hosts keeps only the lines of the sites named.
func TestAuditorHosts(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /private/\n"
	p := state.StrikePolicy{Strikes: 1, Window: time.Minute, Ban: time.Hour}
	reqs := []req{
		{ts: t0, host: "a.example", uri: "/private/", ua: uaBot, ip: "192.0.2.1"},
		{ts: t0 + 1, host: "A.Example:443", uri: "/", ua: uaBot, ip: "192.0.2.1"}, // the same site: banned
		{ts: t0 + 2, host: "b.example", uri: "/", ua: uaBot, ip: "192.0.2.1"},     // another site: not banned
		{ts: t0 + 3, host: "b.example", uri: "/", ua: uaBrowser, ip: "203.0.113.9"},
	}
	a, ds := audit(t, Config{Strikes: &p}, robots, reqs)
	if got := summary(ds); got != "block/rule ban/ban allow/no rule disallows allow/not a crawler" {
		t.Errorf("decisions %s", got)
	}
	r := a.Report()
	if len(r.Hosts) != 2 || r.Hosts[0].Host != "a.example" || r.Hosts[0].Requests != 2 || r.Hosts[1].Browsers != 1 || !r.Split() {
		t.Fatalf("hosts %+v", r.Hosts)
	}
	if len(r.Crawler) != 2 || r.Crawler[0].Host != "a.example" || r.Crawler[0].Banned != 1 || r.Crawler[1].Host != "b.example" || r.Crawler[1].Refused != 0 {
		t.Errorf("crawlers %+v", r.Crawler)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if s := table.String(); !strings.Contains(s, "== a.example: 2 requests") || !strings.Contains(s, "== b.example: 2 requests (1 by browsers, 1 by crawlers)") {
		t.Errorf("table:\n%s", s)
	}

	a, ds = audit(t, Config{Strikes: &p, Hosts: []string{"B.example."}}, robots, reqs)
	r = a.Report()
	if len(ds) != 2 || r.Lines != 2 || r.OtherHosts != 2 || len(r.Hosts) != 1 || r.Split() {
		t.Errorf("--host b.example: %d decisions, %d lines, %d other, hosts %+v", len(ds), r.Lines, r.OtherHosts, r.Hosts)
	}
	// A line without a Host cannot be selected by host.
	var clf CLFParser
	var e Entry
	line := []byte(`192.0.2.1 - - [11/May/2026:11:46:40 +0000] "GET / HTTP/1.1" 200 5 "-" "` + uaBot + `"`)
	if !clf.Parse(line, &e) {
		t.Fatal("combined line not read")
	}
	if err := a.Line(line); err == nil || !strings.Contains(err.Error(), "records no Host") {
		t.Errorf("a Combined line with Hosts: %v", err)
	}
}

// TestAuditorSeveralUserAgents: a request with several User-Agent headers
// is a bot's if any of them is, as the handler reads it.
func TestAuditorSeveralUserAgents(t *testing.T) {
	a, err := New(Config{Robots: enforce.Parse([]byte("User-agent: GPTBot\nDisallow: /\n"))})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	a.dec = newDecisionWriter(&out, a)
	for _, uas := range []string{
		`["` + uaBrowser + `","GPTBot/1.2"]`,
		`["` + uaBrowser + `", "` + uaBrowser + `"]`,
		`["GPTBot/1.2"]`,
	} {
		line := `{"ts":1778500000,"request":{"remote_ip":"192.0.2.1","method":"GET","host":"x","uri":"/a","headers":{"User-Agent":` + uas + `}}}`
		if err := a.Line([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	dec := json.NewDecoder(&out)
	for dec.More() {
		var d Decision
		if err := dec.Decode(&d); err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Crawler+":"+d.Decision)
	}
	if strings.Join(got, " ") != "GPTBot:block :allow GPTBot:block" {
		t.Errorf("decisions %v", got)
	}
}

// TestAuditorLogMode: mode log decides the same, names its mode, and keeps
// its state apart.
func TestAuditorLogMode(t *testing.T) {
	_, ds := audit(t, Config{LogMode: true}, "User-agent: *\nDisallow: /\n", []req{{ts: t0, uri: "/x", ua: uaBot, ip: "192.0.2.1"}})
	if d := ds[0]; d.Decision != "block" || d.Mode != "log" {
		t.Errorf("log mode: %+v", d)
	}
	if stateScope("example.com", true) != "log|example.com" || stateScope("example.com", false) != "example.com" {
		t.Error("state scopes")
	}
}

// TestAuditorUnreadable keeps the first unreadable line, truncated, to say
// why nothing was read.
func TestAuditorUnreadable(t *testing.T) {
	a, err := New(Config{Robots: enforce.Parse(nil)})
	if err != nil {
		t.Fatal(err)
	}
	long := "2026/05/11 11:46:40 [error] 1234#1234: *1 open() \"/srv/www/favicon.ico\" failed (2: No such file or directory), client: 203.0.113.9, server: example.com"
	log := `{"level":"info","ts":1778503801.25,"logger":"admin","msg":"admin endpoint started"}` + "\n" + long + "\n\nnot a log line\n"
	if err := a.Feed("error.log", strings.NewReader(log), nil); err != nil {
		t.Fatal(err)
	}
	r := a.Report()
	b := r.FirstUnreadable
	if r.Lines != 0 || r.Unreadable != 2 || r.NotAccess != 1 || b == nil || b.Log != "error.log" || b.Line != 2 || b.JSON {
		t.Fatalf("report %+v, first unreadable %+v", r, b)
	}
	if !strings.HasPrefix(b.Sample, `"2026/05/11 11:46:40 [error]`) || !strings.HasSuffix(b.Sample, "…") || len(b.Sample) > 130 {
		t.Errorf("sample %s", b.Sample)
	}
}

func mustPrefix(t *testing.T, s string) netip.Prefix {
	t.Helper()
	p, err := netip.ParsePrefix(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAuditorRotation replays rotation as the handler judges it: beyond an
// address's four residents, new names share a pool worth four names'
// budgets; a name that fetched /robots.txt has its own; strikes stay per
// name; and behind a proxy the server did not trust (X-Forwarded-For from
// a private peer, client_ip the peer's), nothing is pooled.
func TestAuditorRotation(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /private/\nCrawl-delay: 5\n"
	var reqs []req
	names := func(ip string, headers map[string]string) {
		for i := range 24 {
			reqs = append(reqs, req{ts: t0 + float64(i)/100, uri: "/", ua: fmt.Sprintf("Rnd%d/1.0", i), ip: ip, headers: headers})
		}
		// A newcomer that fetched /robots.txt is not pooled, and strikes
		// of pooled names are each name's own (no ban after 10).
		reqs = append(reqs, req{ts: t0 + 1, uri: "/robots.txt", ua: "Polite/1.0", ip: ip, headers: headers},
			req{ts: t0 + 1.1, uri: "/", ua: "Polite/1.0", ip: ip, headers: headers})
		for i := range 12 {
			reqs = append(reqs, req{ts: t0 + 2 + float64(i)/100, uri: "/private/x", ua: fmt.Sprintf("Bad%d/1.0", i), ip: ip, headers: headers})
		}
		reqs = append(reqs, req{ts: t0 + 3, uri: "/robots.txt", ua: "Late/1.0", ip: ip, headers: headers},
			req{ts: t0 + 3.1, uri: "/", ua: "Late/1.0", ip: ip, headers: headers})
	}
	names("192.0.2.9", nil)
	names("10.0.0.5", map[string]string{"X-Forwarded-For": "203.0.113.7"})
	_, ds := audit(t, Config{}, robots, reqs)
	count := func(from, to int, what string) int {
		n := 0
		for _, d := range ds[from:to] {
			if d.Decision+"/"+d.Reason == what {
				n++
			}
		}
		return n
	}
	per := len(ds) / 2
	// 20 names beyond the residents: 16 allowed by the pool, 4 throttled.
	if n := count(0, 24, "throttle/rate"); n != 4 {
		t.Errorf("rotating address: %d of 24 names throttled, want 4: %s", n, summary(ds[:24]))
	}
	if d := ds[25]; d.Decision != "allow" {
		t.Errorf("a newcomer that fetched /robots.txt: %+v", d)
	}
	if n := count(0, per, "ban/banned"); n != 0 {
		t.Errorf("rotating address: %d bans, want none (strikes are per name)", n)
	}
	if d := ds[per-1]; d.Decision != "allow" {
		t.Errorf("a graduate after the strikes: %+v", d)
	}
	if n := count(per, len(ds), "throttle/rate"); n != 0 {
		t.Errorf("behind an untrusted proxy: %d throttled, want 0: %s", n, summary(ds[per:]))
	}
}
