package enforce_test

import (
	"fmt"

	"github.com/caddyrobots/caddy-robots/enforce"
)

func ExampleGroup_Preferences() {
	robots := enforce.Parse([]byte(`User-Agent: *
Allow: /
Disallow: /never/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y
Content-Signal: search=yes, ai-input=no
`))
	g := robots.Select([]string{"FooBot"}, true)
	for _, target := range []string{"/test", "/never/test", "/ai-ok/test"} {
		p := g.Preferences(target)
		fmt.Printf("%s: %q / %q\n", target, p.String(), p.SignalString())
	}
	if ref, refused := g.Preferences("/test").Refuses("ai-training"); refused {
		fmt.Println(ref)
	}
	// Output:
	// /test: "train-ai=n" / "search=yes, ai-input=no"
	// /never/test: "" / ""
	// /ai-ok/test: "train-ai=y" / "search=yes, ai-input=no"
	// ai-training refused by Content-Usage train-ai=n (line 4)
}

func ExampleParseContentUsage() {
	p, err := enforce.ParseContentUsage("train-ai=n, search=y")
	fmt.Println(p.Usage("train-ai"), p.Usage("search"), err)
	_, err = enforce.ParseContentUsage("train-ai=n search=y")
	fmt.Println(err != nil)
	// Output:
	// no yes <nil>
	// true
}

func ExampleRobots_LintPreferences() {
	robots := enforce.Parse([]byte("User-agent: *\nAllow: /\nContent-Usage: ai=n\n"))
	for _, w := range robots.LintPreferences() {
		fmt.Println(w)
	}
	// Output:
	// line 3: warning: ai (AI Training) is not a Content-Usage label (last in draft-ietf-aipref-vocab-01): ignored; use train-ai [outdated-label]
}
