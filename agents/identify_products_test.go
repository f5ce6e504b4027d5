package agents

import (
	"bufio"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/agents/internal/uatext"
)

// TestForeignProducts: a Mozilla-style User-Agent that names a product no
// browser carries, in the "(compatible; Name)" position or outside the
// comments, is a bot's, named by that product.
func TestForeignProducts(t *testing.T) {
	for _, c := range []struct{ ua, name string }{
		// The classic form of a crawler's User-Agent.
		{"Mozilla/5.0 (compatible; ContentGrabber/3.1)", "ContentGrabber"},
		// A browser string followed by a product of the client's own.
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 MyAgent/1.0", "MyAgent"},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15 PriceWatch/2.3", "PriceWatch"},
		{"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0 DataHarvester/0.9", "DataHarvester"},
		{"Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36 LeadFinder/3", "LeadFinder"},
		// A product between the browser's own.
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) MarketScan/1.2 Chrome/124.0.0.0 Safari/537.36", "MarketScan"},
		// A product without a version.
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1 ArchiveKeeper", "ArchiveKeeper"},
		// The compatible position, with a version in words or none.
		{"Mozilla/5.0 (compatible; SiteAuditor 4.1; Windows NT 10.0)", "SiteAuditor"},
		{"Mozilla/5.0 (compatible; Monitor-Pro)", "Monitor-Pro"},
		{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PageSnapper/2.0) Chrome/120.0.0.0 Safari/537.36", "PageSnapper"},
		// Internet Explorer's shape with a product after it.
		{"Mozilla/5.0 (compatible; MSIE 9.0; Windows NT 6.1; Trident/5.0) LeadGen/5.0", "LeadGen"},
		// Opera's old shape, an Electron app's, a Facebook in-app
		// browser's with a product after them.
		{"Opera/9.80 (Windows NT 6.1) Presto/2.12.388 Version/12.16 Grabber/1.0", "Grabber"},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.291 Electron/28.2.10 Safari/537.36 AutoPoster/1.4", "AutoPoster"},
		{"Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/AP2A.240805.005; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/127.0.6533.103 Mobile Safari/537.36 [FB_IAB/FB4A;FBAV/477.0.0.49.82;] ShopSync/2.1", "ShopSync"},
		// A name a browser's app carries, made an app of its own.
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Instagrab/1.0", "Instagrab"},
	} {
		a := Identify(c.ua)
		want := Agent{Bot: true, Name: c.name, Category: CategoryOther, Purpose: PurposeOther, Tokens: []string{c.name}, Profile: Profile{RobotsCacheTTL: 24 * time.Hour}}
		if !reflect.DeepEqual(a, want) {
			t.Errorf("Identify(%q) = %+v, want %+v", c.ua, a, want)
		}
	}
}

// TestBrowsersWithProducts: browsers, in-app browsers and desktop apps
// that carry products of their own are people's, from real User-Agents
// outside the 7,707 strings of TestBrowserFalsePositives (which leave out
// Internet Explorer and Electron on purpose).
func TestBrowsersWithProducts(t *testing.T) {
	for _, ua := range []string{
		// Internet Explorer, whose own name is in the compatible position.
		"Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.1; Trident/6.0)",
		"Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; Trident/4.0; SLCC2; .NET CLR 2.0.50727; Media Center PC 6.0)",
		"Mozilla/5.0 (Windows NT 10.0; WOW64; Trident/7.0; Touch; rv:11.0) like Gecko",
		"Mozilla/5.0 (compatible; MSIE 9.0; Windows Phone OS 7.5; Trident/5.0; IEMobile/9.0; NOKIA; Lumia 800)",
		// Konqueror, and Opera before 15.
		"Mozilla/5.0 (compatible; Konqueror/4.5; Linux) KHTML/4.5.4 (like Gecko)",
		"Opera/9.80 (Windows NT 6.1; WOW64) Presto/2.12.388 Version/12.18",
		// In-app browsers.
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/21B80 Instagram 307.0.0.34.111 (iPhone14,5; iOS 17_1; en_US; en; scale=3.00; 1170x2532; 530413781; IABMV/1)",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_1_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/21B91 [FBAN/FBIOS;FBDV/iPhone14,5;FBMD/iPhone;FBSN/iOS;FBSV/17.1.1;FBSS/3;FBID/phone;FBLC/en_US;FBOP/5;FBRV/0]",
		"Mozilla/5.0 (Linux; Android 13; SM-A145F wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/129.0.0.0 Mobile Safari/537.36 Line/14.16.0/IAB",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 16_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Safari Line/13.10.0",
		"Mozilla/5.0 (Linux; Android 13; 22041211AC Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/111.0.5563.116 Mobile Safari/537.36 XWEB/5279 MMWEBSDK/20230805 MMWEBID/5750 MicroMessenger/8.0.41.2441(0x28002951) WeChat/arm64 Weixin NetType/WIFI Language/zh_CN ABI/arm64",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.47(0x18002f2c) NetType/WIFI Language/zh_CN",
		"Mozilla/5.0 (Linux; Android 13; 2109119DG Build/TKQ1.220829.002; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/119.0.6045.193 Mobile Safari/537.36 trill_320403 JsSdk/1.0 NetType/WIFI Channel/googleplay AppName/trill app_version/32.4.3 ByteLocale/en ByteFullLocale/en Region/MY AppId/1180 Spark/1.4.6.3-bugfix AppVersion/32.4.3 BytedanceWebview/d8a21c6",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 14_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 musical_ly_18.5.0 JsSdk/2.0 NetType/WIFI Channel/App Store ByteLocale/en Region/US ByteFullLocale/en isDarkMode/0 Safari/604.1 WKWebView/1",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 15_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/15.6 Mobile/15E148 Snapchat/12.02.0.31 (like Safari/8613.3.9.0.5)",
		"Mozilla/5.0 (Linux; Android 15; SM-S931N Build/AP3A.240905.015; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/151.0.0.0 Mobile Safari/537.36 NAVER(inapp; search; 2000; 12.15.0)",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 KAKAOTALK 10.4.5",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 GSA/300.0.598994205 Mobile/15E148 Safari/604.1",
		// Desktop apps built on Electron.
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Slack/4.38.125 Chrome/124.0.0.0 Electron/30.0.0 Safari/537.36 Sonic Slack_SSB/4.38.125",
		"Mozilla/5.0 (Windows NT 10.0; WOW64) AppleWebKit/537.36 (KHTML, like Gecko) discord/1.0.9147 Chrome/120.0.6099.291 Electron/28.2.10 Safari/537.36",
	} {
		if a := Identify(ua); a.Bot {
			t.Errorf("Identify(%q) = %+v, want a browser", ua, a)
		}
	}
}

// TestIsComponent: names compare ignoring case, and an app's build number
// does not hide its name.
func TestIsComponent(t *testing.T) {
	for name, want := range map[string]bool{
		"Chrome": true, "chrome": true, "CHROME": true, "Edg": true, "MSIE": true,
		"musical_ly_2024309030": true, "aweme_37.5.0": true, "trill_350402": true,
		"MyAgent": false, "ContentGrabber": false, "musical_ly_": false, "_123": false, "": false,
		"Googlebot": false, strings.Repeat("a", maxComponentLen+1): false,
	} {
		if got := isComponent(name); got != want {
			t.Errorf("isComponent(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestBrowserComponentsSource keeps data/browser-components.txt what its
// header says: every name of [products] is a product name of the 7,707
// browser strings, every name of [platform] a word of their comments, and
// every name of [added] says what it is (on its line, or in the comment
// that opens its block).
func TestBrowserComponentsSource(t *testing.T) {
	products, words := map[string]bool{}, map[string]bool{}
	for _, b := range loadBrowsers(t) {
		uatext.Parts(b, func(p uatext.Part) bool {
			if p.Kind == uatext.Comment {
				uatext.Words(p.Text, func(w string, _ int) bool {
					words[strings.ToLower(strings.Trim(w, ".-"))] = true
					return true
				})
			} else if n := productName(p.Text); n != "" {
				products[strings.ToLower(trimBuildNumber(n))] = true
			}
			return true
		})
	}
	section, noted := "", false
	counts := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(componentsText))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		name, note, _ := strings.Cut(line, "#")
		name = strings.TrimSpace(name)
		switch {
		case line == "":
			noted = false
			continue
		case strings.HasPrefix(line, "["):
			section, noted = line, false
			continue
		case name == "":
			noted = section != ""
			continue
		}
		counts[section]++
		if len(name) > maxComponentLen || strings.ContainsAny(name, " \t") {
			t.Errorf("%s: %q is no name", section, name)
		}
		switch section {
		case "[products]":
			if !products[strings.ToLower(name)] {
				t.Errorf("[products] %q is the product of none of the browser strings", name)
			}
		case "[platform]":
			if !words[strings.ToLower(name)] {
				t.Errorf("[platform] %q is a word of none of the browser strings' comments", name)
			}
		case "[added]":
			if strings.TrimSpace(note) == "" && !noted {
				t.Errorf("[added] %q says nothing of what it is", name)
			}
		default:
			t.Errorf("%q outside a known section (%q)", name, section)
		}
	}
	for _, s := range []string{"[products]", "[platform]", "[added]"} {
		if counts[s] < 20 {
			t.Errorf("section %s has %d names", s, counts[s])
		}
	}
	if components.n != counts["[products]"]+counts["[platform]"]+counts["[added]"] {
		t.Errorf("%d components for %v names: a name is listed twice", components.n, counts)
	}
}

// BenchmarkIdentifyCandidatesBrowser is the rest of an uncached browser's
// cost in IdentifyShared: finding its candidate tokens (none).
func BenchmarkIdentifyCandidatesBrowser(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		candidateTokens(benchBrowser)
	}
}

// BenchmarkIdentifyCandidatesPhone: a phone's model is a candidate.
func BenchmarkIdentifyCandidatesPhone(b *testing.B) {
	ua := "Mozilla/5.0 (Linux; Android 14; SM-S928B Build/UP1A.231005.007; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/131.0.6778.135 Mobile Safari/537.36"
	b.ReportAllocs()
	for b.Loop() {
		candidateTokens(ua)
	}
}

// BenchmarkIdentifyUncachedInApp: an in-app browser with products of its
// own, each looked up among the browser components.
func BenchmarkIdentifyUncachedInApp(b *testing.B) {
	ua := "Mozilla/5.0 (Linux; Android 13; 2109119DG Build/TKQ1.220829.002; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/119.0.6045.193 Mobile Safari/537.36 trill_320403 JsSdk/1.0 NetType/WIFI Channel/googleplay AppName/trill app_version/32.4.3 ByteLocale/en ByteFullLocale/en Region/MY AppId/1180 Spark/1.4.6.3-bugfix AppVersion/32.4.3 BytedanceWebview/d8a21c6"
	loadMatcher()
	b.ReportAllocs()
	for b.Loop() {
		identify(ua)
	}
}
