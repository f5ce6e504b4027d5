package agents_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/caddyrobots/caddy-robots/agents"
)

func ExampleVerifier_Verify() {
	// A run-time list (here a single documentation prefix standing in for
	// https://openai.com/gptbot.json) replaces the embedded snapshot and
	// counts as fresh, so an address outside it is a spoof.
	v, err := agents.NewVerifier(agents.VerifierConfig{
		Ranges: map[string][]netip.Prefix{"openai-gptbot": {netip.MustParsePrefix("192.0.2.0/24")}},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	gptbot := agents.Agent{Bot: true, Known: true, Name: "GPTBot", Profile: agents.Profile{Verify: "openai-gptbot"}}
	googlebot := agents.Agent{Bot: true, Known: true, Name: "Googlebot", Profile: agents.Profile{Verify: "google-common"}}
	curl := agents.Agent{Bot: true, Name: "curl"}

	fmt.Println(v.Verify(ctx, gptbot, netip.MustParseAddr("192.0.2.7")))
	fmt.Println(v.Verify(ctx, gptbot, netip.MustParseAddr("198.51.100.7")))
	fmt.Println(v.Verify(ctx, googlebot, netip.MustParseAddr("66.249.66.1"))) // in Google's list: no DNS needed
	fmt.Println(v.Verify(ctx, curl, netip.MustParseAddr("198.51.100.7")))     // no method
	// Output:
	// verified
	// spoofed
	// verified
	// unverified
}

func ExamplePrefixSet() {
	set := agents.NewPrefixSet([]netip.Prefix{
		netip.MustParsePrefix("192.0.2.0/25"),
		netip.MustParsePrefix("192.0.2.128/25"), // merged with the first: one range
		netip.MustParsePrefix("2001:db8::/32"),
	})
	fmt.Println(set.Len())
	fmt.Println(set.Contains(netip.MustParseAddr("192.0.2.200")))
	fmt.Println(set.Contains(netip.MustParseAddr("::ffff:192.0.2.1"))) // IPv4-mapped
	fmt.Println(set.Contains(netip.MustParseAddr("198.51.100.1")))
	fmt.Println(set.Contains(netip.MustParseAddr("2001:db8:1::1")))
	// Output:
	// 2
	// true
	// true
	// false
	// true
}

func ExampleLoadRanges() {
	// Google's format; the {"prefixes": [...]} files of OpenAI, Perplexity
	// and Bing, CSV and plain lists load the same way.
	const googlebot = `{"creationTime": "2026-08-20T14:46:45.000000", "prefixes": [
		{"ipv6Prefix": "2001:4860:4801:10::/64"},
		{"ipv4Prefix": "66.249.66.0/27"}]}`
	prefixes, err := agents.LoadRanges(strings.NewReader(googlebot))
	if err != nil {
		panic(err)
	}
	fmt.Println(prefixes)
	_, err = agents.LoadRanges(strings.NewReader("192.0.2.0/24\n192.0.2.300\n"))
	fmt.Println(err)
	// Output:
	// [2001:4860:4801:10::/64 66.249.66.0/27]
	// agents: reading IP ranges: line 2: bad address "192.0.2.300": ParseAddr("192.0.2.300"): IPv4 field has value >255
}
