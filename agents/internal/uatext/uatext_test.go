package uatext

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParts(t *testing.T) {
	for ua, want := range map[string][]string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 MyAgent/1.0": {
			"P Mozilla/5.0", "C Windows NT 10.0", "C Win64", "C x64", "P AppleWebKit/537.36",
			"C KHTML", "C like Gecko", "P Chrome/131.0.0.0", "P Safari/537.36", "P MyAgent/1.0",
		},
		"Mozilla/5.0 (compatible; ContentGrabber/3.1)": {"P Mozilla/5.0", "C compatible", "K ContentGrabber/3.1"},
		"Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.1; Trident/6.0)": {
			"P Mozilla/5.0", "C compatible", "K MSIE 10.0", "C Windows NT 6.1", "C Trident/6.0",
		},
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)": {
			"P Mozilla/5.0", "P AppleWebKit/537.36", "C KHTML", "C like Gecko", "C compatible", "K GPTBot/1.2", "C +https://openai.com/gptbot",
		},
		"DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)": {"P DuckDuckBot/1.1", "C +http://duckduckgo.com/duckduckbot.html"},
		"Mobile Safari/537.36 MicroMessenger/8.0.47.2560(0x28002F30) NetType/WIFI": {
			"P Mobile", "P Safari/537.36", "P MicroMessenger/8.0.47.2560", "C 0x28002F30", "P NetType/WIFI",
		},
		"Safari/537.36 [FB_IAB/FB4A;FBAV/540.0.0.49.148;IABMV/1;]": {"P Safari/537.36", "C FB_IAB/FB4A", "C FBAV/540.0.0.49.148", "C IABMV/1"},
		"Mobile/15E148 [FBAN/FBIOS;FBDV/iPhone14,2;FBLC/en_US]":    {"P Mobile/15E148", "C FBAN/FBIOS", "C FBDV/iPhone14,2", "C FBLC/en_US"},
		"A (b; (c; d) e) F":   {"P A", "C b", "C c", "C d", "C e", "P F"},
		"A (compatible; open": {"P A", "C compatible", "K open"},
		"":                    nil,
		"  ;; ) ]":            nil,
	} {
		var got []string
		Parts(ua, func(p Part) bool {
			if ua[p.At:p.At+len(p.Text)] != p.Text {
				t.Errorf("%q: part %q is not at %d", ua, p.Text, p.At)
			}
			got = append(got, fmt.Sprintf("%c %s", "PCK"[p.Kind], p.Text))
			return true
		})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Parts(%q) =\n %q\nwant\n %q", ua, got, want)
		}
	}
	n := 0
	Parts("A/1 (b; c) D/2", func(Part) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("Parts went on after f returned false: %d calls", n)
	}
}

func TestProductNames(t *testing.T) {
	for ua, want := range map[string]string{
		"Googlebot/2.1 (+http://www.google.com/bot.html)":                          "Googlebot",
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)": "Mozilla|compatible|Googlebot",
		"Googlebot-News": "Googlebot-News",
		"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)":                                              "Slackbot-LinkExpanding",
		"Screaming Frog SEO Spider/5.1":                                                                           "Screaming|Frog|SEO|Spider",
		"Node/simplecrawler 1.1.9 (https://github.com/simplecrawler/simplecrawler)":                               "Node",
		"008/0.83 (http://www.advancedwebranking.com)":                                                            "008",
		"WeSEE:Search/0.1 (Alpha, http://www.wesee.com/en/support/bot/)":                                          "WeSEE|Alpha",
		"2ip.ru CMS Detector (https://2ip.ru/cms/)":                                                               "2ip.ru|CMS|Detector",
		"https://gdnplus.com:Gather Analyze Provide.":                                                             "Analyze|Provide",
		"Unshorten.It!/1.0 (https://unshorten.it/)":                                                               "Unshorten.It",
		"Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)":                     "Mozilla|compatible|Yahoo! Slurp",
		"Mozilla/2.0 (compatible; Ask Jeeves/Teoma; +http://sp.ask.com/docs/about/tech_crawling.html)":            "Mozilla|compatible|Ask Jeeves",
		"Mozilla/4.5 (compatible; HTTrack 3.0x; Windows 98)":                                                      "Mozilla|compatible|HTTrack|Windows",
		"Mozilla/5.0 (compatible; monitis - premium monitoring service; http://www.monitis.com)":                  "Mozilla|compatible|monitis",
		"Mozilla/5.0 (compatible; memorybot/1.21.14 +http://mignify.com/bot.html)":                                "Mozilla|compatible|memorybot",
		"Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)":               "Mozilla|Windows NT|rv:11.0|Gecko|Firefox|via|ggpht.com|GoogleImageProxy",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)": "Mozilla|AppleWebKit|KHTML|like Gecko|compatible|ClaudeBot",
		"Mozilla/5.0 (Windows NT 6.2) Chrome/25.0.1364.5 Safari/537.22 +awesomecrawler":                           "Mozilla|Windows NT|Chrome|Safari|awesomecrawler",
		"nyt_scraping/scraping@nytimes.com":                                                                       "nyt_scraping",
	} {
		if got := strings.Join(ProductNames(ua), "|"); got != want {
			t.Errorf("ProductNames(%q) = %q, want %q", ua, got, want)
		}
	}
}
