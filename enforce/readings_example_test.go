package enforce_test

import (
	"fmt"

	"github.com/caddyrobots/caddy-robots/enforce"
)

// A crawler that follows the 1994 standard reads "/*?q=" as a literal
// prefix, so its request for /search?q=x ignores no rule it knows: refuse
// it, but do not count it against the crawler.
func ExampleRobots_Readings() {
	robots := enforce.Parse([]byte("User-agent: *\nDisallow: /private/\nDisallow: /*?q=\n"))
	tokens := []string{"Wget"}

	for _, target := range []string{"/private/a.html", "/search?q=x"} {
		d := robots.Decide(tokens, target)
		r := robots.Readings(tokens, true, target)
		fmt.Printf("%s: allowed=%v unambiguous=%v\n", target, d.Allowed, r.Unambiguous)
		if !r.Unambiguous {
			fmt.Printf("  %s reading, line %d: %s\n", r.Lenient, r.Line, r.Why)
		}
	}
	// Output:
	// /private/a.html: allowed=false unambiguous=true
	// /search?q=x: allowed=false unambiguous=false
	//   1994 standard reading, line 3: wildcard rules are not understood by crawlers that follow the 1994 standard: Disallow: /*?q= (line 3)
}
