package enforce

import (
	"os"
	"path/filepath"
	"testing"
)

// All real files parse without panicking, with sane invariants, and every
// derived target can be decided.
func TestCorpusParses(t *testing.T) {
	files := readCorpus(t)
	for _, f := range files {
		body := f.body
		r := Parse(body)
		checkInvariants(t, r, body, MaxSize)
		targets := corpusTargets(body)
		for _, agent := range []string{"Googlebot", "bingbot", "SomeNewBot"} {
			rules, found := refSelect(string(body), agent)
			for _, target := range targets {
				if diff := vsReference(r, agent, rules, found, target); diff != "" {
					t.Errorf("%s: %s", f.name, diff)
				}
			}
		}
	}
	if len(files) != 400 {
		t.Logf("corpus has %d files (expected 400)", len(files))
	}
}

// Real decisions on a handful of real files (testdata/corpus, see SOURCE.md).
func TestCorpusDecisions(t *testing.T) {
	cases := []struct {
		file, agent, target string
		allow               bool
		pattern             string // of the deciding rule; "" for none
	}{
		{"github.com", "Googlebot", "/torvalds/linux/tree/master", true, "/*/*/tree/master"},
		{"github.com", "Googlebot", "/torvalds/linux/tree/v5.0/kernel", false, "/*/*/tree/*"},
		{"github.com", "Googlebot", "/torvalds/linux", true, ""},
		{"github.com", "Googlebot", "/search?q=robots", false, "/search"},
		{"github.com", "Googlebot", "/torvalds/linux/archive/v1.zip", false, "/*/*/archive/"},
		{"github.com", "ccbot", "/x/y/wiki/a/b", false, "/*/*/wiki/*/*"},
		{"github.com", "OtherBot", "/torvalds/linux", false, "/"},
		{"github.com", "OtherBot", "/humans.txt", true, "/humans.txt"},
		{"github.com", "OtherBot", "/robots.txt", true, ""},
		{"stackoverflow.com", "Googlebot", "/users/123/name?tab=accounts", false, "/users/*?tab=accounts"},
		{"stackoverflow.com", "Googlebot", "/questions/123/title", true, "/"},
		{"stackoverflow.com", "Googlebot", "/search?q=go", false, "/search?"},
		{"www.amazon.com", "bingbot", "/gp/cart/view.html", false, "/gp/cart"},
		{"www.amazon.com", "bingbot", "/dp/B00X", true, ""},
		{"www.reddit.com", "MJ12bot", "/r/golang", false, "/"},
		{"www.reddit.com", "008", "/", false, "/"},
		{"www.reddit.com", "Bender", "/my_shiny_metal_ass/2", false, "/my_shiny_metal_ass"},
		{"www.reddit.com", "Googlebot", "/r/golang/submit", false, "/r/*/submit$"},
		{"www.reddit.com", "Googlebot", "/r/golang/submit?x=1", true, "/"},
		{"www.reddit.com", "Googlebot", "/r/golang/.json", false, "/*.json"},
		{"www.reddit.com", "Googlebot", "/r/golang/comments/abc/title/?sort=new", false, "/*/comments/*?*sort="},
		{"www.google.ie", "Googlebot", "/search?q=x", false, "/search"},
		{"www.google.ie", "Googlebot", "/search/about", true, "/search/about"},
		{"www.google.ie", "Googlebot", "/?hl=en&gws_rd=ssl", true, "/?hl=*&gws_rd=ssl$"},
		{"www.google.ie", "Googlebot", "/?hl=en&x=1", false, "/?hl=*&"},
		{"www.google.ie", "AdsBot-Google", "/search?q=x", true, ""},
		{"www.google.ie", "AdsBot-Google", "/maps/api/js?key=1", true, "/maps/api/js?"},
		{"www.bbc.co.uk", "Googlebot", "/_programmes/b0000", false, "/_programmes"},
		{"www.bbc.co.uk", "Googlebot", "/news", true, ""},
	}
	parsed := map[string]*Robots{}
	for _, c := range cases {
		r := parsed[c.file]
		if r == nil {
			body, err := os.ReadFile(filepath.Join("testdata", "corpus", c.file+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			r = Parse(body)
			parsed[c.file] = r
		}
		d := r.Decide([]string{c.agent}, c.target)
		pat := ""
		if d.Rule != nil {
			pat = d.Rule.Pattern
		}
		if d.Allowed != c.allow || pat != c.pattern {
			t.Errorf("%s %s %q: got %v, want allowed=%v by %q", c.file, c.agent, c.target, d, c.allow, c.pattern)
		}
	}
	if got := parsed["www.bbc.co.uk"].Sitemaps(); len(got) == 0 {
		t.Error("bbc sitemaps missing")
	}
}
