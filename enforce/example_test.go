package enforce_test

import (
	"fmt"

	"github.com/caddyrobots/caddy-robots/enforce"
)

const exampleFile = `# example.com
User-agent: *
Disallow: /private/
Allow: /private/press/
Disallow: /*.pdf$
Crawl-delay: 2

User-agent: GPTBot
Disallow: /

Sitemap: https://example.com/sitemap.xml
`

func ExampleParse() {
	robots := enforce.Parse([]byte(exampleFile))
	for _, g := range robots.Groups() {
		fmt.Println(g, len(g.Rules), "rules, interval", g.Interval())
	}
	fmt.Println(robots.Sitemaps())
	// Output:
	// User-agent: * (line 2) 3 rules, interval 2s
	// User-agent: GPTBot (line 8) 1 rules, interval 0s
	// [https://example.com/sitemap.xml]
}

func ExampleRobots_Allowed() {
	robots := enforce.Parse([]byte(exampleFile))
	fmt.Println(robots.Allowed("FooBot", "/private/report"))
	fmt.Println(robots.Allowed("FooBot", "/private/press/2024"))
	fmt.Println(robots.Allowed("FooBot", "/docs/manual.pdf"))
	fmt.Println(robots.Allowed("gptbot", "/"))
	fmt.Println(robots.Allowed("gptbot", "/robots.txt"))
	// Output:
	// false
	// true
	// false
	// false
	// true
}

func ExampleRobots_Decide() {
	robots := enforce.Parse([]byte(exampleFile))
	d := robots.Decide([]string{"FooBot"}, "/private/report?id=%37")
	fmt.Println(d.Allowed)
	fmt.Println(d.Rule)
	fmt.Println(d.Group)
	fmt.Println(d)
	// Output:
	// false
	// Disallow: /private/ (line 3)
	// User-agent: * (line 2)
	// disallowed by Disallow: /private/ (line 3) in User-agent: * (line 2)
}

func ExampleRobots_Select() {
	robots := enforce.Parse([]byte("User-agent: Googlebot\nDisallow: /a\n\nUser-agent: *\nDisallow: /\n"))
	// Googlebot-Image documents that it falls back to the Googlebot group.
	g := robots.Select([]string{"Googlebot-Image", "Googlebot"}, true)
	fmt.Println(g, g.Decide("/b").Allowed)
	// AdsBot-Google ignores "*": without a group naming it, nothing applies.
	fmt.Println(robots.Select([]string{"AdsBot-Google"}, false) == nil)
	// Output:
	// User-agent: Googlebot (line 1) true
	// true
}

func ExampleRobots_Skipped() {
	robots := enforce.Parse([]byte("User-agent: *\nDissallow: /a\nDisallow /b\nUser-agent: FooBot/1.2\n"))
	for _, s := range robots.Skipped() {
		fmt.Printf("line %d: %s\n", s.Line, s.Reason)
	}
	// Output:
	// line 2: misspelt key "Dissallow": only "disallow" is a rule (RFC 9309 §2.2); ignored
	// line 3: no colon: not a record (RFC 9309 §2.2); some parsers read it as Disallow: /b; ignored
	// line 4: user-agent value is not a single product token (RFC 9309 §2.2.1); it names no crawler
}

func ExampleGroup_Interval() {
	robots := enforce.Parse([]byte("User-agent: *\nCrawl-delay: 0.5\nRequest-rate: 1/10s\n"))
	g := robots.Select(nil, true)
	fmt.Println(g.CrawlDelay, g.RequestRate.Interval(), g.Interval())
	// Output:
	// 500ms 10s 10s
}
