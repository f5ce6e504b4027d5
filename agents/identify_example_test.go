package agents_test

import (
	"fmt"

	"github.com/caddyrobots/caddy-robots/agents"
)

func ExampleIdentify() {
	a := agents.Identify("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)")
	fmt.Println(a.Bot, a.Name, a.Operator, a.Category, a.Tokens, a.Profile.CrawlDelay, a.Profile.Verify)

	a = agents.Identify("ExampleCrawler/1.0 (+https://example.com/bot)")
	fmt.Println(a.Bot, a.Known, a.Name, a.Tokens)

	a = agents.Identify("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0")
	fmt.Println(a.Bot)
	// Output:
	// true bingbot Microsoft search [bingbot msnbot] yes bingbot
	// true false ExampleCrawler [ExampleCrawler]
	// false
}
