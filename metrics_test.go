package caddyrobots

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// TestMetricLabels keeps the action and reason constants in step with the
// label values, and maps categories and purposes outside the label tables
// to "other".
func TestMetricLabels(t *testing.T) {
	for a, want := range map[policy.Action]string{policy.Allow: "allow", policy.Block: "block", policy.Throttle: "throttle", policy.Ban: "ban"} {
		if a.String() != want || actionValues[a] != want {
			t.Errorf("action %d = %q (value %v), want %q", a, a, actionValues[a], want)
		}
	}
	if policy.Actions != 4 {
		t.Errorf("%d actions, want 4", policy.Actions)
	}
	for r, want := range map[policy.Reason]string{policy.None: "", policy.Rule: "rule", policy.Spoofed: "spoofed",
		policy.Unavailable: "unavailable", policy.Banned: "ban", policy.Rate: "rate"} {
		if r.String() != want {
			t.Errorf("reason %d = %q, want %q", r, r, want)
		}
	}
	for i, c := range categoryNames {
		if got := categoryIndex(c); got != i {
			t.Errorf("categoryIndex(%q) = %d, want %d", c, got, i)
		}
	}
	if got := categoryNames[categoryIndex("made-up")]; got != agents.CategoryOther {
		t.Errorf("category made-up counts as %q, want other", got)
	}
	for i, p := range purposeNames {
		if got := purposeIndex(agents.Purpose(p)); got != i {
			t.Errorf("purposeIndex(%q) = %d, want %d", p, got, i)
		}
	}
	if got := purposeNames[purposeIndex("")]; got != "other" {
		t.Errorf("a browser's purpose counts as %q, want other", got)
	}
}

// testSite is the site label of the decisions the tests count directly.
const testSite = "metrics.test on :0"

var testSeries = newSiteSeries()

// countTestDecision counts a decision of testSite.
func countTestDecision(a policy.Action, r policy.Reason, cat agents.Category, p agents.Purpose, logMode bool) {
	testSeries.countDecision(testSite, a, r, cat, p, logMode)
}

// TestDecisionCounts: counts from many goroutines add up exactly, and the
// family is exported with its labels through a real registry.
func TestDecisionCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics.decisions); err != nil {
		t.Fatal(err)
	}
	value := func(action, reason, category, mode string) float64 {
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
				if l["action"] == action && l["reason"] == reason && l["category"] == category && l["mode"] == mode && l["site"] == testSite {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	before := value("throttle", "rate", "seo", "log")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				countTestDecision(policy.Throttle, policy.Rate, agents.CategorySEO, agents.PurposeSEO, true)
			}
		})
	}
	wg.Wait()
	if got := value("throttle", "rate", "seo", "log") - before; got != 8000 {
		t.Errorf("counted %v decisions, want 8000", got)
	}
	if got := value("throttle", "rate", "seo", "enforce"); got != 0 {
		t.Errorf("log-mode decisions counted as enforce: %v", got)
	}
}

// gatherLabels returns the series of family name in reg, each as its label
// map with the value under "value".
func gatherLabels(t *testing.T, reg *prometheus.Registry, name string) []map[string]string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			v := m.GetCounter().GetValue()
			if g := m.GetGauge(); g != nil {
				v = g.GetValue()
			}
			l["value"] = strconv.FormatFloat(v, 'f', -1, 64)
			out = append(out, l)
		}
	}
	return out
}

// decisionCount sums caddy_robots_decisions_total over its sites for one
// action, reason, category and mode.
func decisionCount(t *testing.T, action, reason, category, mode string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics.decisions); err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, l := range gatherLabels(t, reg, "caddy_robots_decisions_total") {
		if l["action"] == action && l["reason"] == reason && l["category"] == category && l["mode"] == mode {
			v, _ := strconv.ParseFloat(l["value"], 64)
			sum += v
		}
	}
	return sum
}

// TestMetricReasonLabels: every decision the handler makes is counted
// under its own action and reason; allow is reason "none", throttle
// "rate"; a pair the handler never makes falls back to reason "other".
func TestMetricReasonLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics.decisions); err != nil {
		t.Fatal(err)
	}
	want := map[[2]string]bool{}
	for _, k := range decisionKinds {
		countTestDecision(k.action, k.reason, agents.CategoryArchive, agents.PurposeArchiving, false)
		pair := [2]string{k.action.String(), reasonLabel(k.reason)}
		if want[pair] {
			t.Errorf("%v/%v shares a series with another pair", k.action, k.reason)
		}
		want[pair] = true
	}
	countTestDecision(policy.Allow, policy.Rule, agents.CategoryArchive, agents.PurposeArchiving, false) // never made
	want[[2]string{"allow", "other"}] = true
	for _, pair := range [][2]string{{"allow", "none"}, {"block", "rule"}, {"block", "spoofed"}, {"block", "unavailable"},
		{"block", "unverified"}, {"block", "target"}, {"block", "length"}, {"block", "preference"}, {"throttle", "rate"}, {"ban", "ban"}} {
		if !want[pair] {
			t.Errorf("no series for action %s reason %s", pair[0], pair[1])
		}
	}
	got := map[[2]string]bool{}
	for _, l := range gatherLabels(t, reg, "caddy_robots_decisions_total") {
		if l["category"] == "archive" && l["mode"] == "enforce" && l["site"] == testSite {
			got[[2]string{l["action"], l["reason"]}] = true
		}
	}
	for pair := range want {
		if !got[pair] {
			t.Errorf("series action=%s reason=%s not exported; got %v", pair[0], pair[1], got)
		}
	}
}

// TestMetricRulesAge: one series per source with the oldest current
// version's age; a source with no version yet reads 0, so the series
// exists from start-up.
func TestMetricRulesAge(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics.rulesAge); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(file, []byte("User-agent: *\nDisallow: /a/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded := time.Now().Add(-90 * time.Second)
	_, doneFile := newTestHandler(t, &Handler{Source: "file", File: file, now: func() time.Time { return loaded }})
	defer doneFile()
	_, doneSite := newTestHandler(t, &Handler{Source: "site"}) // no site asked for yet
	defer doneSite()

	got := map[string]float64{}
	for _, l := range gatherLabels(t, reg, "caddy_robots_rules_age_seconds") {
		v, _ := strconv.ParseFloat(l["value"], 64)
		got[l["source"]] = v
	}
	if v := got["file"]; v < 90 || v > 100 {
		t.Errorf("file age %v, want ~90", v)
	}
	if v, ok := got["site"]; !ok || v != 0 {
		t.Errorf("site (nothing loaded yet): %v, %v; want a series at 0", v, ok)
	}
	if len(got) != 2 {
		t.Errorf("series %v, want file and site", got)
	}
}

// TestMetricFileErrors: a failed read of a source file counts as a fetch
// error.
func TestMetricFileErrors(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics.fetches); err != nil {
		t.Fatal(err)
	}
	errorsCounted := func() float64 {
		for _, l := range gatherLabels(t, reg, "caddy_robots_fetch_total") {
			if l["result"] == "error" {
				v, _ := strconv.ParseFloat(l["value"], 64)
				return v
			}
		}
		return 0
	}
	file := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(file, []byte("User-agent: *\nDisallow: /a/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, done := newTestHandler(t, &Handler{Source: "file", File: file, Refresh: caddy.Duration(time.Second)})
	defer done()
	before := errorsCounted()
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for errorsCounted() == before {
		if time.Now().After(deadline) {
			t.Fatal("a file that went missing counted no error")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMetricFamilies pins the name, labels, help text and type of every
// family: dashboards read them. One function registers them all, and
// registering again (a config reload) is fine.
func TestMetricFamilies(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := registerMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if err := registerMetrics(reg); err != nil {
		t.Fatalf("registering again: %v", err)
	}
	want := map[string]string{
		"caddy_robots_decisions_total":           "action,reason,category,mode,site|Decisions on requests from bots, by action (allow, block, throttle, ban), reason (none, rule, spoofed, unavailable, unverified, target, length, preference, rate, ban), crawler category, mode and site (the site block of the config: its hosts and listen addresses, one value per robots handler, never a request's Host).",
		"caddy_robots_purpose_decisions_total":   "purpose,action,site|Decisions on requests from bots, by the crawler's documented purpose, the action (allow, block, throttle, ban) and site (the site block of the config, one value per robots handler).",
		"caddy_robots_fetch_total":               "result|Loads of the site's robots.txt, by result (ok, client_error, server_error, error); for source file, every failed read of the file (it is polled every 2s) counts as error.",
		"caddy_robots_state_errors_total":        "store|Errors of the shared state store; each such request was decided from local state.",
		"caddy_robots_immediate_retries_total":   "mode|Throttled requests that came back before the Retry-After they were given, by mode.",
		"caddy_robots_rule_memory_bytes":         "|Estimated memory of the distinct parsed robots.txt versions kept for the sites' grace windows.",
		"caddy_robots_rule_memory_refused_total": "|robots.txt versions not kept because max_rule_memory was reached and every site was in active use; the last good copy stayed.",
		"caddy_robots_sites_full_total":          "|Bot requests for a site that found the site table full of sites in active use; answered as unavailable (503).",
		"caddy_robots_rules_age_seconds":         "source|Age of the current robots.txt version (time since it was first loaded), the oldest among the sites of each source (site, file, inline).",
		"caddy_robots_bans_in_force":             "store|Bans in force in the state stores of the running handlers (at most 1000 counted per store), by store type.",
		"caddy_robots_bans_logged":               "store|Bans earned in mode log (the crawlers would be banned; nothing refuses them) in the state stores of the running handlers (at most 1000 counted per store), by store type.",
		"caddy_robots_undeclared_total":          "signal,action,mode,site|Requests judged as an undeclared crawler's, by the signal that gave it away (fetch_metadata, fetch_metadata_safari, client_hints, trap, tls), the decision (allow, block, throttle, ban; trap for a trap request that marked its client, trap_unmarked for one a page or the browser caused), mode (enforce, log) and site (the site block of the config, one value per robots handler).",
	}
	ch := make(chan *prometheus.Desc, 64)
	for _, c := range metrics.collectors() {
		c.Describe(ch)
	}
	close(ch)
	got := map[string]string{}
	for d := range ch {
		// Desc has no accessors; its String form names every part, the
		// strings quoted.
		s := d.String()
		name, help := quotedAfter(s, "fqName: "), quotedAfter(s, "help: ")
		labels := strings.ReplaceAll(strings.Trim(between(s, "variableLabels: {", "}"), " "), " ", "")
		got[name] = labels + "|" + help
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s:\n got %q\nwant %q", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d families, want %d: %v", len(got), len(want), got)
	}
}

// quotedAfter returns the Go-quoted string that follows the first prefix
// in s, unquoted.
func quotedAfter(s, prefix string) string {
	i := strings.Index(s, prefix)
	if i < 0 {
		return ""
	}
	q, err := strconv.QuotedPrefix(s[i+len(prefix):])
	if err != nil {
		return ""
	}
	u, _ := strconv.Unquote(q)
	return u
}

// between returns the text of s between the first start and the end after
// it.
func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	if j := strings.Index(s, end); j >= 0 {
		return s[:j]
	}
	return s
}

// TestPurposeMetricSums: each decision counts once in
// caddy_robots_purpose_decisions_total under its purpose and action,
// whatever its reason, category and mode.
func TestPurposeMetricSums(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics.purposes); err != nil {
		t.Fatal(err)
	}
	value := func(purpose, action string) float64 {
		for _, l := range gatherLabels(t, reg, "caddy_robots_purpose_decisions_total") {
			if l["purpose"] == purpose && l["action"] == action && l["site"] == testSite {
				v, _ := strconv.ParseFloat(l["value"], 64)
				return v
			}
		}
		return 0 // not counted yet
	}
	beforeBlock, beforeThrottle := value("ai-training", "block"), value("ai-training", "throttle")
	beforeSEO := value("seo", "block")
	countTestDecision(policy.Block, policy.Rule, agents.CategoryAITraining, agents.PurposeAITraining, false)
	countTestDecision(policy.Block, policy.Preference, agents.CategoryAISearch, agents.PurposeAITraining, true)
	countTestDecision(policy.Block, policy.BadTarget, agents.CategoryOther, agents.PurposeAITraining, false)
	countTestDecision(policy.Throttle, policy.Rate, agents.CategoryAITraining, agents.PurposeAITraining, false)
	if got := value("ai-training", "block") - beforeBlock; got != 3 {
		t.Errorf("ai-training blocks: %v, want 3", got)
	}
	if got := value("ai-training", "throttle") - beforeThrottle; got != 1 {
		t.Errorf("ai-training throttles: %v, want 1", got)
	}
	if got := value("seo", "block") - beforeSEO; got != 0 {
		t.Errorf("seo blocks: %v, want 0", got)
	}
}

// BenchmarkCountDecision is what counting an allowed bot's decision costs
// a request: the handler's series map (siteSeries), beside the curried
// vector's WithLabelValues it replaces, which hashes the label values on
// every call.
func BenchmarkCountDecision(b *testing.B) {
	b.Run("siteSeries", func(b *testing.B) {
		s := newSiteSeries()
		b.ReportAllocs()
		for b.Loop() {
			s.countDecision(testSite, policy.Allow, policy.None, agents.CategorySearch, agents.PurposeSearch, false)
		}
	})
	b.Run("WithLabelValues", func(b *testing.B) {
		decisions := metrics.decisions.MustCurryWith(prometheus.Labels{"site": testSite})
		purposes := metrics.purposes.MustCurryWith(prometheus.Labels{"site": testSite})
		b.ReportAllocs()
		for b.Loop() {
			decisions.WithLabelValues("allow", "none", "search", "enforce").Inc()
			purposes.WithLabelValues("search", "allow").Inc()
		}
	})
}

// TestSiteSeriesUsers: a site block's series stay while any handler that
// counts under it runs, however it learned its site (at the start of the
// config or from its first request), and go with the last one; a released
// handler brings back no series; a handler that starts using the site
// again after that makes them anew.
func TestSiteSeriesUsers(t *testing.T) {
	const site = "users.test on :0"
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{metrics.decisions, metrics.purposes, metrics.undeclared} {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	series := func() (n int, decisions float64) {
		for _, name := range []string{"caddy_robots_decisions_total", "caddy_robots_purpose_decisions_total", "caddy_robots_undeclared_total"} {
			for _, l := range gatherLabels(t, reg, name) {
				if l["site"] == site {
					n++
					if name == "caddy_robots_decisions_total" {
						v, _ := strconv.ParseFloat(l["value"], 64)
						decisions += v
					}
				}
			}
		}
		return n, decisions
	}
	count := func(s *siteSeries) {
		s.countDecision(site, policy.Block, policy.Rule, agents.CategorySEO, agents.PurposeSEO, false)
	}

	atStart, fromRequest := newSiteSeries(), newSiteSeries()
	atStart.start(site, false) // the config's start
	count(atStart)             // the same site again: still one user
	count(fromRequest)         // learned from its first request
	if got := siteUsers.users(site); got != 2 {
		t.Fatalf("%d users of the site, want 2", got)
	}
	n, d := series()
	if n == 0 || d != 2 {
		t.Fatalf("%d series, %v decisions, want series and 2", n, d)
	}

	atStart.release()
	if got, gotD := series(); got != n || gotD != 2 {
		t.Errorf("one of two handlers released: %d series, %v decisions, want %d and 2", got, gotD, n)
	}
	fromRequest.release()
	if got, _ := series(); got != 0 || siteUsers.users(site) != 0 {
		t.Errorf("last handler released: %d series, %d users, want none", got, siteUsers.users(site))
	}
	count(fromRequest) // a request still in flight
	fromRequest.release()
	if got, _ := series(); got != 0 || siteUsers.users(site) != 0 {
		t.Errorf("a released handler counted: %d series, %d users, want none", got, siteUsers.users(site))
	}

	again := newSiteSeries()
	count(again)
	if got, gotD := series(); got != 2 || gotD != 1 {
		t.Errorf("a new handler of the site: %d series, %v decisions, want 2 (a decision and its purpose) and 1", got, gotD)
	}
	again.release()
}

// users is the number of users of site (for the tests).
func (u *siteLabelUsers) users(site string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n[site]
}
