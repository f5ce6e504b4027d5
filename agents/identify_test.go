package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/agents/internal/catalogue"
)

// majorCrawlers are real User-Agent strings, from the instances of
// crawler-user-agents.json or the operators' documentation, with the tokens
// they must resolve to.
var majorCrawlers = []struct {
	ua     string
	tokens []string
	verify string
}{
	{"Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/41.0.2272.96 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", []string{"Googlebot"}, "google-common"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; +http://www.google.com/bot.html) Safari/537.36", []string{"Googlebot"}, "google-common"},
	{"Googlebot/2.1 (+http://www.google.com/bot.html)", []string{"Googlebot"}, "google-common"},
	{"Googlebot-Image/1.0", []string{"Googlebot-Image", "Googlebot"}, "google-common"},
	{"Googlebot-Video/1.0", []string{"Googlebot-Video", "Googlebot"}, "google-common"},
	{"Googlebot-News", []string{"Googlebot-News", "Googlebot"}, "google-common"},
	{"Mozilla/5.0 (X11; Linux x86_64; Storebot-Google/1.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.88 Safari/537.36", []string{"Storebot-Google"}, "google-common"},
	{"Mozilla/5.0 (compatible; Google-InspectionTool/1.0;)", []string{"Google-InspectionTool", "Googlebot"}, "google-common"},
	{"GoogleOther", []string{"GoogleOther"}, "google-common"},
	{"GoogleOther-Image/1.0", []string{"GoogleOther-Image", "GoogleOther"}, "google-common"},
	{"Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/99.0.4844.84 Mobile Safari/537.36 (compatible; AdsBot-Google-Mobile; +http://www.google.com/mobile/adsbot.html)", []string{"AdsBot-Google-Mobile"}, "google-special"},
	{"AdsBot-Google (+http://www.google.com/adsbot.html)", []string{"AdsBot-Google"}, "google-special"},
	{"Mediapartners-Google", []string{"Mediapartners-Google"}, "google-special"},
	{"APIs-Google (+https://developers.google.com/webmasters/APIs-Google.html)", []string{"APIs-Google"}, "google-special"},
	{"FeedFetcher-Google; (+http://www.google.com/feedfetcher.html)", []string{"FeedFetcher-Google"}, "google-user-triggered"},
	{"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", []string{"bingbot", "msnbot"}, "bingbot"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36", []string{"bingbot", "msnbot"}, "bingbot"},
	{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)", []string{"Applebot", "Googlebot"}, "applebot"},
	{"Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)", []string{"YandexBot", "Yandex"}, "yandex"},
	{"Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)", []string{"Baiduspider"}, "baidu"},
	{"DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)", []string{"DuckDuckBot"}, "duckduckgo"},
	{"Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)", []string{"Slurp"}, "yahoo-slurp"},
	{"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", []string{"facebookexternalhit"}, "meta"},
	{"meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)", []string{"meta-externalagent"}, "meta"},
	{"meta-externalfetcher/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)", []string{"meta-externalfetcher"}, "meta"},
	{"Twitterbot/1.0", []string{"Twitterbot"}, ""},
	{"LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)", []string{"LinkedInBot"}, ""},
	{"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", []string{"Slackbot-LinkExpanding"}, ""},
	{"Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)", []string{"Discordbot"}, ""},
	{"Mozilla/5.0 (compatible; Pinterestbot/1.0; +http://www.pinterest.com/bot.html)", []string{"Pinterestbot"}, "pinterest"},
	{"Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", []string{"AhrefsBot"}, "ahrefs"},
	{"Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)", []string{"SemrushBot"}, ""},
	{"Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)", []string{"MJ12bot"}, ""},
	{"Mozilla/5.0 (compatible; DotBot/1.2; +https://opensiteexplorer.org/dotbot; help@moz.com)", []string{"DotBot"}, ""},
	{"Mozilla/5.0 (compatible;PetalBot;+https://webmaster.petalsearch.com/site/petalbot)", []string{"PetalBot"}, "petalbot"},
	{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/8.0.2 Safari/600.2.5 (Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)", []string{"Amazonbot"}, "amazonbot"},
	{"CCBot/2.0 (https://commoncrawl.org/faq/)", []string{"CCBot"}, "ccbot"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)", []string{"GPTBot"}, "openai-gptbot"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot", []string{"OAI-SearchBot"}, "openai-searchbot"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot", []string{"ChatGPT-User"}, "openai-chatgpt-user"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)", []string{"ClaudeBot"}, "anthropic"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)", []string{"Claude-User"}, "anthropic"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)", []string{"PerplexityBot"}, "perplexitybot"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)", []string{"Perplexity-User"}, "perplexity-user"},
	{"Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)", []string{"Bytespider"}, ""},
	{"Mozilla/5.0 (compatible; SeznamBot/4.0; +https://o-seznam.cz/napoveda/vyhledavani/en/seznambot-crawler/)", []string{"SeznamBot"}, ""},
	{"ia_archiver (+http://www.alexa.com/site/help/webmasters; crawler@alexa.com)", []string{"ia_archiver"}, ""},
	{"Mozilla/5.0 (compatible; archive.org_bot +http://archive.org/details/archive.org_bot)", []string{"archive.org_bot"}, ""},
	{"curl/8.4.0", []string{"curl"}, ""},
	{"Wget/1.21.4", []string{"Wget"}, ""},
	{"python-requests/2.31.0", []string{"python-requests"}, ""},
	{"Go-http-client/1.1", []string{"Go-http-client"}, ""},
	{"okhttp/4.12.0", []string{"okhttp"}, ""},
	{"axios/1.6.2", []string{"axios"}, ""},
	{"node-fetch/1.0 (+https://github.com/bitinn/node-fetch)", []string{"node-fetch"}, ""},
	{"Java/1.8.0_151", []string{"Java"}, ""},
	{"libwww-perl/6.72", []string{"libwww-perl"}, ""},
	{"Scrapy/2.11.0 (+https://scrapy.org)", []string{"Scrapy"}, ""},
	{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36", []string{"HeadlessChrome"}, ""},
	{"Mozilla/5.0 (Unknown; Linux x86_64) AppleWebKit/538.1 (KHTML, like Gecko) PhantomJS/2.1.1 Safari/538.1", []string{"PhantomJS"}, ""},
}

func TestMajorCrawlers(t *testing.T) {
	for _, c := range majorCrawlers {
		a := Identify(c.ua)
		if !a.Bot || !a.Known || !reflect.DeepEqual(a.Tokens, c.tokens) || a.Profile.Verify != c.verify {
			t.Errorf("Identify(%q) = %+v; want tokens %q, verify %q", c.ua, a, c.tokens, c.verify)
		}
	}
}

// TestAIRobotsAgents: every agent of ai.robots.txt resolves to its entry.
// ai.robots.txt gives no User-Agent strings, so each is tried in the two
// conventional forms; the keys that are only robots.txt tokens
// (Google-Extended, Applebot-Extended, ...) never appear in real headers.
// Keys of several words ("Kangaroo Bot") name no product token.
func TestAIRobotsAgents(t *testing.T) {
	for name := range loadAIRobots(t) {
		want, ok := Lookup(name)
		if !ok || (len(want.Tokens) == 0) != strings.Contains(want.Name, " ") {
			t.Errorf("Lookup(%q) = %+v, %v", name, want, ok)
			continue
		}
		for _, ua := range []string{
			fmt.Sprintf("Mozilla/5.0 (compatible; %s/1.0; +https://example.com)", name),
			fmt.Sprintf("%s/1.0", name),
		} {
			a := Identify(ua)
			if !a.Bot || a.Name != want.Name || !reflect.DeepEqual(a.Tokens, want.Tokens) {
				t.Errorf("Identify(%q) = %q %q, want %q %q", ua, a.Name, a.Tokens, want.Name, want.Tokens)
			}
		}
	}
}

func TestUnknownBots(t *testing.T) {
	for _, c := range []struct{ ua, name string }{
		{"ExampleCrawler/1.0 (+https://example.com/bot)", "ExampleCrawler"},
		{"Mozilla/5.0 (compatible; ExampleCrawler/1.0; +https://example.com/bot)", "ExampleCrawler"},
		{"Mozilla/5.0 (compatible; SomeBot/1.0; +http://some.example/bot)", "SomeBot"},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 AcmeSpider/2.0", "AcmeSpider"},
		{"Mozilla/5.0 (compatible; FooBot/1.0) python-requests/2.31", "FooBot"},
		{"MyTool/3.1", "MyTool"},
	} {
		a := Identify(c.ua)
		want := Agent{Bot: true, Name: c.name, Category: CategoryOther, Purpose: PurposeOther, Tokens: []string{c.name}, Profile: Profile{RobotsCacheTTL: 24 * time.Hour}}
		if !reflect.DeepEqual(a, want) {
			t.Errorf("Identify(%q) = %+v, want %+v", c.ua, a, want)
		}
	}
}

func TestEmptyAndBrowsers(t *testing.T) {
	for _, ua := range []string{"", "   "} {
		a := Identify(ua)
		if !a.Bot || a.Name != "" || a.Tokens != nil || a.Category != CategoryOther || a.Known {
			t.Errorf("Identify(%q) = %+v", ua, a)
		}
	}
	for _, ua := range []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
		"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
		"Mozilla/5.0 (Linux; Android 10; Cubot Note 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
	} {
		if a := Identify(ua); !reflect.DeepEqual(a, Agent{}) {
			t.Errorf("Identify(%q) = %+v, want a browser", ua, a)
		}
	}
}

func TestProfiles(t *testing.T) {
	for _, c := range []struct {
		name  string
		check func(Agent) bool
	}{
		{"Googlebot", func(a Agent) bool {
			return a.Profile.CrawlDelay == SupportNo && a.Profile.RobotsCacheTTL == 24*time.Hour
		}},
		{"bingbot", func(a Agent) bool { return a.Profile.CrawlDelay == SupportYes }},
		{"YandexBot", func(a Agent) bool { return a.Profile.CrawlDelay == SupportYes }},
		{"SeznamBot", func(a Agent) bool { return a.Profile.CrawlDelay == SupportYes && a.Profile.RequestRate == SupportYes }},
		{"AdsBot-Google", func(a Agent) bool { return a.Profile.IgnoresWildcard }},
		{"AdsBot-Google-Mobile", func(a Agent) bool { return a.Profile.IgnoresWildcard }},
		{"Mediapartners-Google", func(a Agent) bool { return a.Profile.IgnoresWildcard }},
		{"ChatGPT-User", func(a Agent) bool { return a.Profile.UserTriggered && a.Category == CategoryAIAssistant }},
		{"Claude-User", func(a Agent) bool { return a.Profile.UserTriggered }},
		{"Perplexity-User", func(a Agent) bool { return a.Profile.UserTriggered }},
		{"meta-externalfetcher", func(a Agent) bool { return a.Profile.UserTriggered }},
		{"Applebot", func(a Agent) bool { return reflect.DeepEqual(a.Tokens, []string{"Applebot", "Googlebot"}) }},
		{"applebot-extended", func(a Agent) bool { return a.Name == "Applebot-Extended" }},
		{"GPTBot", func(a Agent) bool { return a.Operator == "OpenAI" && a.Category == CategoryAITraining }},
	} {
		a, ok := Lookup(c.name)
		if !ok || !c.check(a) {
			t.Errorf("Lookup(%q) = %+v, %v", c.name, a, ok)
		}
	}
	if _, ok := Lookup("no such crawler"); ok {
		t.Error("Lookup found a crawler that does not exist")
	}
}

// TestVerificationKeys: every ua_token of the verification data maps to the
// verification method of its crawler.
func TestVerificationKeys(t *testing.T) {
	var v struct {
		Crawlers []struct {
			Name     string   `json:"name"`
			UATokens []string `json:"ua_tokens"`
		} `json:"crawlers"`
	}
	if err := json.NewDecoder(openData(t, "testdata/crawler-verification.json")).Decode(&v); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range v.Crawlers {
		for _, tok := range c.UATokens {
			a, ok := Lookup(tok)
			if !ok || a.Profile.Verify == "" {
				t.Errorf("%s: token %q has no verification method (%+v)", c.Name, tok, a)
			}
			seen[a.Profile.Verify] = true
		}
	}
	for _, k := range catalogue.VerifyKeys {
		if !seen[k] {
			t.Errorf("verification method %q is used by no token", k)
		}
	}
	for _, a := range Catalogue() {
		for _, tok := range a.Tokens {
			if tok == "*" || tok == "" {
				t.Errorf("%s has token %q", a.Name, tok)
			}
		}
	}
}

// TestCatalogueUpToDate: data/catalogue.json is what `go generate` makes
// from the current inputs.
func TestCatalogueUpToDate(t *testing.T) {
	want, err := catalogue.Build("data")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("data/catalogue.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("data/catalogue.json is stale: run `go generate ./agents`")
	}
	if !bytes.Equal(got, catalogueJSON) {
		t.Fatal("the embedded catalogue differs from data/catalogue.json")
	}
}

func TestCacheBoundedAndConcurrent(t *testing.T) {
	id := NewIdentifier(64)
	if n := len(id.cache.slots); n != 64 {
		t.Fatalf("cache has %d slots, want 64", n)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				name := "RandomBot-" + letters(g*10000+i)
				ua := name + "/1.0"
				if a := id.Identify(ua); a.Name != name {
					t.Errorf("Identify(%q) = %+v", ua, a)
					return
				}
				if a := id.Identify(majorCrawlers[i%len(majorCrawlers)].ua); !a.Known {
					t.Errorf("cached answer lost: %+v", a)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	used := 0
	for i := range id.cache.slots {
		if id.cache.slots[i].Load() != nil {
			used++
		}
	}
	if used > 64 {
		t.Fatalf("%d slots used", used)
	}
	long := "LongBot/1.0 " + string(bytes.Repeat([]byte("x"), 600))
	id.Identify(long)
	if id.cache.lookup(long) != nil {
		t.Error("a User-Agent longer than 512 bytes was cached")
	}
	if NewIdentifier(0) == nil || len(NewIdentifier(-1).cache.slots) != defaultUACacheSize {
		t.Error("default cache size")
	}
}

// letters spells n in the letters a to j.
func letters(n int) string {
	s := []byte(fmt.Sprint(n))
	for i := range s {
		s[i] += 'a' - '0'
	}
	return string(s)
}

const (
	benchBrowser = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	benchCrawler = "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.6723.69 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
)

func BenchmarkIdentifyCached(b *testing.B) {
	id := NewIdentifier(0)
	id.Identify(benchCrawler)
	b.ReportAllocs()
	for b.Loop() {
		id.Identify(benchCrawler)
	}
}

func BenchmarkIdentifyCachedParallel(b *testing.B) {
	id := NewIdentifier(0)
	id.Identify(benchBrowser)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id.Identify(benchBrowser)
		}
	})
}

func BenchmarkIdentifyUncachedBrowser(b *testing.B) {
	loadMatcher()
	b.ReportAllocs()
	for b.Loop() {
		identify(benchBrowser)
	}
}

func BenchmarkIdentifyUncachedCrawler(b *testing.B) {
	loadMatcher()
	b.ReportAllocs()
	for b.Loop() {
		identify(benchCrawler)
	}
}

func BenchmarkIdentifyUncachedUnknownBot(b *testing.B) {
	loadMatcher()
	b.ReportAllocs()
	for b.Loop() {
		identify("Mozilla/5.0 (compatible; ExampleCrawler/1.0; +https://example.com/bot)")
	}
}

// TestIdentifyShared: the shared answer is Identify's; a cached User-Agent
// gets the same entry every time, and one too long to cache gets an answer
// of its own.
func TestIdentifyShared(t *testing.T) {
	id := NewIdentifier(64)
	uas := []string{
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
		"Googlebot-Image/1.0",
		"ExampleCrawler/1.0 (+https://example.com/bot)",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"",
	}
	for _, ua := range uas {
		s := id.IdentifyShared(ua)
		if want := Identify(ua); !reflect.DeepEqual(s.Agent, want) {
			t.Errorf("%q: shared %+v, Identify %+v", ua, s.Agent, want)
		}
		if again := id.IdentifyShared(ua); again != s {
			t.Errorf("%q: second call gave another entry", ua)
		}
	}
	long := "LongBot/1.0 (+https://example.com/" + strings.Repeat("x", maxCachedLen) + ")"
	a, b := id.IdentifyShared(long), id.IdentifyShared(long)
	if a == b || a.Name != "LongBot" || b.Name != "LongBot" || b.Purpose != PurposeOther {
		t.Errorf("uncacheable User-Agent: %p %p %q %q %q", a, b, a.Name, b.Name, b.Purpose)
	}
}
