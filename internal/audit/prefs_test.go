package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
)

const (
	uaGPTBot    = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.2; +https://openai.com/gptbot"
	uaGooglebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	uaOAISearch = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot"
	uaAhrefs    = "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)"
	uaBrowser   = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)

// prefsRobots states preferences on lines 1 (file-level Content-Signal,
// inherited by both groups), 4, 5 and 9.
const prefsRobots = `Content-Signal: ai-input=no
User-agent: *
Disallow: /private/
Content-Usage: train-ai=n
Content-Usage: /blog/ train-ai=y

User-agent: Googlebot
Disallow: /search
Content-Usage: /news/ search=n
`

// prefsRobotsNew closes /docs/, drops the /blog/ exception and refuses
// search everywhere for Googlebot.
const prefsRobotsNew = `Content-Signal: ai-input=no
User-agent: *
Disallow: /private/
Disallow: /docs/
Content-Usage: train-ai=n

User-agent: Googlebot
Disallow: /search
Content-Usage: search=n
`

type prefsReq struct{ ua, uri, ip string }

// prefsLog is judged by hand in TestAuditorPreferenceConflicts.
var prefsLog = []prefsReq{
	{uaGPTBot, "/robots.txt", "4.227.36.5"},              // served to all: never a conflict
	{uaGPTBot, "/", "4.227.36.5"},                        // conflict, train-ai=n (line 4)
	{uaGPTBot, "/docs/a", "4.227.36.5"},                  // conflict (line 4); new file: disallowed
	{uaGPTBot, "/blog/x", "4.227.36.5"},                  // train-ai=y (line 5) wins; new file: conflict (line 5)
	{uaGPTBot, "/private/x", "4.227.36.5"},               // disallowed: no preference
	{uaGPTBot, "http://example.com/about", "4.227.36.5"}, // /about: conflict (line 4)
	{uaGooglebot, "/news/1", "66.249.64.5"},              // conflict, search=n (line 9)
	{uaGooglebot, "/news/2?x=1", "66.249.64.5"},          // conflict (line 9)
	{uaGooglebot, "/search?q=1", "66.249.64.5"},          // disallowed
	{uaGooglebot, "/", "66.249.64.5"},                    // no rule for /; new file: conflict (line 9)
	{uaOAISearch, "/blog/x", "4.227.36.6"},               // conflict, ai-input=no (line 1)
	{uaOAISearch, "/private/y", "4.227.36.6"},            // disallowed
	{uaAhrefs, "/", "54.36.148.1"},                       // seo: no preference refuses it
	{uaBrowser, "/", "203.0.113.9"},                      // not a crawler
}

func auditPrefs(t *testing.T, robots, robotsNew string) *Report {
	t.Helper()
	cfg := Config{Robots: enforce.Parse([]byte(robots))}
	if robotsNew != "" {
		cfg.RobotsNew = enforce.Parse([]byte(robotsNew))
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range prefsLog {
		a.Line(logLine(1778500000+float64(i), l.ua, l.uri, l.ip))
	}
	return a.Report()
}

func crawlerReport(t *testing.T, r *Report, name string) CrawlerReport {
	t.Helper()
	for _, c := range r.Crawler {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no crawler %s in the report", name)
	return CrawlerReport{}
}

func TestAuditorPreferenceConflicts(t *testing.T) {
	r := auditPrefs(t, prefsRobots, prefsRobotsNew)
	if !r.Preferences || !r.PreferencesNew {
		t.Errorf("Preferences %v PreferencesNew %v, want both", r.Preferences, r.PreferencesNew)
	}
	type want struct {
		purpose                         string
		requests, disallowed, conflicts int64
		refusal                         string
		newlyRefused, newlyConflicting  int64
		newRefusal                      string
	}
	for name, w := range map[string]want{
		"GPTBot": {"ai-training", 6, 1, 3, "ai-training refused by Content-Usage train-ai=n (line 4)",
			1, 1, "ai-training refused by Content-Usage train-ai=n (line 5)"},
		"Googlebot": {"search", 4, 1, 2, "search refused by Content-Usage search=n (line 9)",
			0, 1, "search refused by Content-Usage search=n (line 9)"},
		"OAI-SearchBot": {"ai-answers", 2, 1, 1, "ai-answers refused by Content-Signal ai-input=no (line 1)",
			0, 0, ""},
		"AhrefsBot": {"seo", 1, 0, 0, "", 0, 0, ""},
	} {
		c := crawlerReport(t, r, name)
		if c.Purpose != w.purpose || c.Requests != w.requests || c.RefusedRule != w.disallowed || c.PreferenceConflicts != w.conflicts ||
			c.NewlyRefused != w.newlyRefused || c.NewlyConflicting != w.newlyConflicting {
			t.Errorf("%s: purpose %s, %d requests, %d disallowed, %d conflicts, %d newly refused, %d newly conflicting; want %+v",
				name, c.Purpose, c.Requests, c.RefusedRule, c.PreferenceConflicts, c.NewlyRefused, c.NewlyConflicting, w)
		}
		checkRefusals(t, name, c.PreferenceRefusals, w.refusal, w.conflicts)
		checkRefusals(t, name+" (new)", c.NewlyConflictingRefusals, w.newRefusal, w.newlyConflicting)
	}
	g := crawlerReport(t, r, "GPTBot").PreferenceRefusals[0]
	if g.Purpose != "ai-training" || g.Scheme != "Content-Usage" || g.Label != "train-ai" || g.Value != "n" || g.Line != 4 {
		t.Errorf("GPTBot refusal fields %+v", g)
	}

	var table, js, page bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"PREF. CONFLICTS", "NEWLY CONFLICTING",
		"GPTBot: 3 allowed, but ai-training refused by Content-Usage train-ai=n (line 4)",
		"GPTBot: with the new robots.txt, 1 more allowed, but ai-training refused by Content-Usage train-ai=n (line 5)"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, table.String())
		}
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || crawlerReport(t, &back, "Googlebot").PreferenceConflicts != 2 {
		t.Errorf("JSON round trip: %v", err)
	}
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "<th>Pref. conflicts</th>") || !strings.Contains(page.String(), "3 × <code>ai-training refused by Content-Usage train-ai=n (line 4)</code>") {
		t.Errorf("HTML lacks the conflicts")
	}
}

func checkRefusals(t *testing.T, name string, got []RefusalCount, want string, n int64) {
	t.Helper()
	if want == "" {
		if len(got) != 0 {
			t.Errorf("%s: refusals %+v, want none", name, got)
		}
		return
	}
	if len(got) != 1 || got[0].Refusal != want || got[0].Requests != n {
		t.Errorf("%s: refusals %+v, want %d × %q", name, got, n, want)
	}
}

// TestAuditorPreferencesNoGroup: with no group for the crawler (and no
// "*"), the file-level Content-Signal applies, as Robots.Preferences says.
func TestAuditorPreferencesNoGroup(t *testing.T) {
	r := auditPrefs(t, "Content-Signal: ai-train=no\nUser-agent: Googlebot\nDisallow: /search\n", "")
	c := crawlerReport(t, r, "GPTBot")
	checkRefusals(t, "GPTBot", c.PreferenceRefusals, "ai-training refused by Content-Signal ai-train=no (line 1)", 5)
	if g := crawlerReport(t, r, "Googlebot"); g.PreferenceConflicts != 0 || g.RefusedRule != 1 {
		t.Errorf("Googlebot: %d conflicts, %d disallowed; want 0, 1", g.PreferenceConflicts, g.RefusedRule)
	}
}

// TestAuditorWithoutPreferences: a file without preferences reports no
// conflict and no preference column.
func TestAuditorWithoutPreferences(t *testing.T) {
	r := auditPrefs(t, "User-agent: *\nDisallow: /private/\n", "User-agent: *\nDisallow: /\n")
	if r.Preferences || r.PreferencesNew {
		t.Errorf("Preferences %v PreferencesNew %v, want neither", r.Preferences, r.PreferencesNew)
	}
	for _, c := range r.Crawler {
		if c.PreferenceConflicts != 0 || c.NewlyConflicting != 0 || c.PreferenceRefusals != nil {
			t.Errorf("%s: %+v", c.Name, c)
		}
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(table.String(), "CONFLICT") {
		t.Errorf("table shows preference columns:\n%s", table.String())
	}
}

func TestPurposeRefusable(t *testing.T) {
	for p, want := range map[string]bool{
		"ai-training": true, "ai-answers": true, "search": true, "AI-Training": true, "ai-search": true,
		"seo": false, "user-triggered": false, "archiving": false, "other": false, "": false,
	} {
		if got := purposeRefusable(agents.Purpose(p)); got != want {
			t.Errorf("purposeRefusable(%q) = %v, want %v", p, got, want)
		}
	}
}
