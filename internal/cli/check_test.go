package cli

import "testing"

// TestTargetOf: a URL argument is judged by the target a client sends for
// it, exactly as written after the authority; a path is its own target.
func TestTargetOf(t *testing.T) {
	for _, c := range []struct{ arg, want string }{
		{"https://example.com//private/x", "//private/x"},
		{"https://example.com", "/"},
		{"https://example.com?q=1", "/?q=1"},
		{"https://example.com/a/../b?x#frag", "/a/../b?x"},
		{"https://example.com#frag", "/"},
		{"/search?q=1#top", "/search?q=1"},
		{"/public/..%2fprivate/x", "/public/..%2fprivate/x"},
	} {
		got, err := targetOf(c.arg)
		if err != nil || got != c.want {
			t.Errorf("targetOf(%q) = %q, %v; want %q", c.arg, got, err, c.want)
		}
	}
	for _, bad := range []string{"relative/path", "ftp://example.com/x", "https:///nohost"} {
		if got, err := targetOf(bad); err == nil {
			t.Errorf("targetOf(%q) = %q, want an error", bad, got)
		}
	}
}

// TestRefusalSummary: the text report names a refusal by the first line of
// the explanation the crawler receives, without its lead.
func TestRefusalSummary(t *testing.T) {
	for in, want := range map[string]string{
		"Refused: GPTBot is disallowed /private/ by line 6.\nmore": "GPTBot is disallowed /private/ by line 6.",
		"Slow down: Crawl-delay 2s applies.\n":                     "Crawl-delay 2s applies.",
		"Refused for now: banned for 59m.":                         "banned for 59m.",
		"  plain  ":                                                "plain",
	} {
		if got := refusalSummary(in); got != want {
			t.Errorf("refusalSummary(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestListensOn: a server is picked by any of its listen addresses,
// port ranges and network prefixes included; an address Caddy cannot
// parse picks nothing.
func TestListensOn(t *testing.T) {
	for _, c := range []struct {
		listen []string
		port   int
		want   bool
	}{
		{[]string{":443"}, 443, true},
		{[]string{":80", ":443"}, 80, true},
		{[]string{"tcp/127.0.0.1:8080-8090"}, 8085, true},
		{[]string{"tcp/127.0.0.1:8080-8090"}, 8091, false},
		{[]string{":443"}, 80, false},
		{[]string{"not an address:x"}, 80, false},
		{nil, 80, false},
	} {
		if got := ListensOn(c.listen, c.port); got != c.want {
			t.Errorf("ListensOn(%q, %d) = %v, want %v", c.listen, c.port, got, c.want)
		}
	}
}
