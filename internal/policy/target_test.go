package policy

import (
	"reflect"
	"strings"
	"testing"
)

// short names of the readings, for the tables.
var readingNames = map[FormSource]string{
	FromSent: "sent", FromCleaned: "cleaned", FromDecoded: "decoded", FromServlet: "servlet",
	FromAuthority: "authority", FromHeader: "header",
}

// formsOf lists t's forms as "reading form".
func formsOf(t *Target) []string {
	var out []string
	for i, f := range t.Forms() {
		out = append(out, readingNames[t.Source(i)]+" "+f)
	}
	return out
}

func TestParseTargetForms(t *testing.T) {
	for _, c := range []struct {
		name     string
		method   string
		target   string
		rewrites []string
		bad      bool
		path     string // as Go's server decodes it
		forms    []string
	}{
		{"a plain path is its only form", "GET", "/private/x", nil, false, "/private/x", []string{"sent /private/x"}},
		{"a plain path with a query", "GET", "/a/b?c=d&e=/../f", nil, false, "/a/b", []string{"sent /a/b?c=d&e=/../f"}},
		{"an empty target is /", "GET", "", nil, false, "/", []string{"sent /"}},
		{"a doubled slash: merged, and read as an authority", "GET", "//private/x", nil, false, "//private/x",
			[]string{"sent //private/x", "cleaned /private/x", "authority /x"}},
		{"a dot segment", "GET", "/./private/x", nil, false, "/./private/x", []string{"sent /./private/x", "cleaned /private/x"}},
		{"a dot-dot segment", "GET", "/public/../private/x", nil, false, "/public/../private/x",
			[]string{"sent /public/../private/x", "cleaned /private/x"}},
		{"a trailing dot-dot keeps a slash", "GET", "/private/x/..", nil, false, "/private/x/..", []string{"sent /private/x/..", "cleaned /private/"}},
		{"the query is kept on every form", "GET", "/a/../private/x?q=1", nil, false, "/a/../private/x",
			[]string{"sent /a/../private/x?q=1", "cleaned /private/x?q=1"}},
		{"an empty query is kept", "GET", "/a/../b?", nil, false, "/a/../b", []string{"sent /a/../b?", "cleaned /b?"}},
		{"%2F is decoded", "GET", "/private%2Fx", nil, false, "/private/x", []string{"sent /private%2Fx", "decoded /private/x"}},
		{"an escaped dot segment", "GET", "/%2e/private/x", nil, false, "/./private/x", []string{"sent /%2e/private/x", "decoded /private/x"}},
		{"an escaped dot-dot segment", "GET", "/public/%2E%2E/private/x", nil, false, "/public/../private/x",
			[]string{"sent /public/%2E%2E/private/x", "decoded /private/x"}},
		{"decoding happens once: %25 stays an escape", "GET", "/a%2570", nil, false, "/a%70", []string{"sent /a%2570"}},
		{"a decoded ? is not a query", "GET", "/a%3Fb/../c", nil, false, "/a?b/../c", []string{"sent /a%3Fb/../c", "cleaned /c"}},
		{"a decoded ? stays in the path", "GET", "/private%3Fx", nil, false, "/private?x", []string{"sent /private%3Fx"}},
		{"%2F%2F at the start reads as an authority once decoded", "GET", "/%2F/private/x", nil, false, "///private/x",
			[]string{"sent /%2F/private/x", "decoded /private/x", "authority /x"}},
		{"a raw # is part of the path Go serves, not a fragment", "GET", "/a#b", nil, false, "/a#b", []string{"sent /a#b", "decoded /a%23b"}},
		{"a raw # with an escape", "GET", "/a#b%41", nil, false, "/a#bA", []string{"sent /a#b%41", "decoded /a%23bA"}},
		{"a ;parameter is dropped", "GET", "/private;x=1/a", nil, false, "/private;x=1/a", []string{"sent /private;x=1/a", "servlet /private/a"}},
		{"an escaped ; is a parameter once decoded", "GET", "/private%3Bx/a", nil, false, "/private;x/a",
			[]string{"sent /private%3Bx/a", "decoded /private;x/a", "servlet /private/a"}},
		{"a backslash is a slash", "GET", "/private\\x", nil, false, "/private\\x", []string{"sent /private\\x", "servlet /private/x"}},
		{"an escaped backslash is a slash once decoded", "GET", "/private%5Cx", nil, false, "/private\\x",
			[]string{"sent /private%5Cx", "decoded /private\\x", "servlet /private/x"}},
		{"a backslash after the first slash makes an authority", "GET", "/\\private\\x", nil, false, "/\\private\\x",
			[]string{"sent /\\private\\x", "servlet /private/x", "authority /x"}},
		{"//authority is removed", "GET", "//evil.example/private/x", nil, false, "//evil.example/private/x",
			[]string{"sent //evil.example/private/x", "cleaned /evil.example/private/x", "authority /private/x"}},
		{"//authority alone leaves /", "GET", "//evil.example", nil, false, "//evil.example",
			[]string{"sent //evil.example", "cleaned /evil.example", "authority /"}},
		{"///host is an authority to WHATWG parsers", "GET", "///x/private/x", nil, false, "///x/private/x",
			[]string{"sent ///x/private/x", "cleaned /x/private/x", "authority /private/x"}},
		{"an absolute-form target is its path and query", "GET", "http://example.com/private/x?a", nil, false, "/private/x", []string{"sent /private/x?a"}},
		{"an absolute-form scheme is case-insensitive", "GET", "HTTPS://example.com/private/x", nil, false, "/private/x", []string{"sent /private/x"}},
		{"an absolute-form target without a path is /", "GET", "http://example.com", nil, false, "/", []string{"sent /"}},
		{"an absolute-form target's forms", "GET", "http://example.com/a/..//private%2Fx", nil, false, "/a/..//private/x",
			[]string{"sent /a/..//private%2Fx", "cleaned /private%2Fx", "decoded /private/x"}},
		{"http://host?/robots.txt asks for /", "GET", "http://example.com?/robots.txt", nil, false, "/", []string{"sent /?/robots.txt"}},
		{"foo:/x is bad", "GET", "foo:/private/x", nil, true, "", []string{"sent /private/x"}},
		{"http:/x is bad", "GET", "http:/private/x", nil, true, "", []string{"sent /private/x"}},
		{"http:///x is bad", "GET", "http:///private/x", nil, true, "", []string{"sent /"}},
		{"a relative path is bad", "GET", "private/x", nil, true, "", []string{"sent /x"}},
		{"a backslash first is bad", "GET", "\\private\\x", nil, true, "", []string{"sent /"}},
		{"* is bad but for OPTIONS", "GET", "*", nil, true, "", []string{"sent /"}},
		{"OPTIONS *", "OPTIONS", "*", nil, false, "/", []string{"sent /"}},
		{"X-Original-URL is a form", "GET", "/public/", []string{"/private/x", "", ""}, false, "/public/",
			[]string{"sent /public/", "header /private/x"}},
		{"X-Rewrite-URL is a form, with its query", "GET", "/public/", []string{"", "/private/x?y", ""}, false, "/public/",
			[]string{"sent /public/", "header /private/x?y"}},
		{"a rewrite header's forms", "GET", "/public/", []string{"//evil/private/x", "", ""}, false, "/public/",
			[]string{"sent /public/", "header //evil/private/x", "header /evil/private/x", "header /private/x"}},
		{"X-Forwarded-Prefix is prepended to the path, with the query", "GET", "/a?q", []string{"", "", "/private"}, false, "/a",
			[]string{"sent /a?q", "header /private/a?q"}},
		{"X-Forwarded-Prefix keeps an empty query as sent", "GET", "/a?", []string{"", "", "/p"}, false, "/a",
			[]string{"sent /a?", "header /p/a?"}},
		{"X-Forwarded-Prefix's slashes and spaces are trimmed", "GET", "/a", []string{"", "", " private// "}, false, "/a",
			[]string{"sent /a", "header /private/a"}},
		{"X-Forwarded-Prefix is prepended to the raw path", "GET", "/a%2Fb", []string{"", "", "/p"}, false, "/a/b",
			[]string{"sent /a%2Fb", "decoded /a/b", "header /p/a%2Fb", "header /p/a/b"}},
		{"a rewrite header equal to a form adds nothing", "GET", "/private/x", []string{"/private/x", "", ""}, false, "/private/x",
			[]string{"sent /private/x"}},
		{"rewrite headers are judged for a bad target too", "GET", "foo:/x", []string{"/private/x", "", ""}, true, "",
			[]string{"sent /x", "header /private/x"}},
	} {
		tg := ParseTarget(c.method, c.target, c.rewrites...)
		got := formsOf(&tg)
		if tg.Bad != c.bad || tg.Path != c.path || strings.Join(got, "\n") != strings.Join(c.forms, "\n") {
			t.Errorf("%s: ParseTarget(%q, %q, %q)\n got bad=%v path=%q forms %q\nwant bad=%v path=%q forms %q",
				c.name, c.method, c.target, c.rewrites, tg.Bad, tg.Path, got, c.bad, c.path, c.forms)
		}
		if tg.Method != c.method {
			t.Errorf("%s: method %q", c.name, tg.Method)
		}
	}
}

func TestIsRobotsTxt(t *testing.T) {
	for target, want := range map[string]bool{
		"/robots.txt":                       true,
		"/robots.txt?x=1":                   true,
		"http://example.com/robots.txt":     true,
		"http://example.com/robots.txt?a=b": true,
		"http://example.com?/robots.txt":    false, // asks for /
		"//robots.txt":                      false,
		"/./robots.txt":                     false,
		"/robots.txt/":                      false,
		"/robots.txt;x":                     false,
		"/ROBOTS.TXT":                       false,
		"/robots%2Etxt":                     true,  // Go decodes it to /robots.txt and serves it
		"foo:/robots.txt":                   false, // bad target: 400, not robots.txt
		"/x?/robots.txt":                    false,
	} {
		tg := ParseTarget("GET", target)
		if got := tg.IsRobotsTxt(); got != want {
			t.Errorf("ParseTarget(%q).IsRobotsTxt() = %v, want %v", target, got, want)
		}
	}
}

// A plain target has one form.
func TestParseTargetPlain(t *testing.T) {
	for _, target := range []string{"/", "/a/b/c.html", "/search?q=a/../b", "http://example.com/a/b?c", "/robots.txt"} {
		tg := ParseTarget("GET", target)
		if len(tg.Forms()) != 1 {
			t.Errorf("%q: forms %q, want one", target, tg.Forms())
		}
	}
	// With empty rewrite headers too (the handler always passes three).
	if tg := ParseTarget("GET", "/a/b", "", "", ""); len(tg.Forms()) != 1 {
		t.Errorf("plain target with empty rewrite headers: forms %q, want one", tg.Forms())
	}
}

func TestFormSourceNames(t *testing.T) {
	for s := FromSent; s <= FromHeader; s++ {
		if s.String() == "" || readingNames[s] == "" {
			t.Errorf("FormSource %d has no name", s)
		}
	}
}

// A request with more distinct forms than MaxForms keeps the first
// MaxForms and says so, so that Assess refuses it rather than judge it in
// part: otherwise a rewrite header's value could be pushed out of the
// forms by a hostile target's own.
func TestParseTargetOverflow(t *testing.T) {
	hostile := "//%25%2f%2f%25//x\\\\y%3B?"
	tg := ParseTarget("GET", hostile)
	if tg.overflow || tg.n != 14 {
		t.Fatalf("%q alone: %d forms, overflow %v; want 14 forms that fit", hostile, tg.n, tg.overflow)
	}
	tg = ParseTarget("GET", hostile, "//a", "/private/x", "")
	if !tg.overflow || len(tg.Forms()) != MaxForms {
		t.Errorf("with rewrite headers: %d forms, overflow %v; want %d and overflow", len(tg.Forms()), tg.overflow, MaxForms)
	}
	tg = ParseTarget("GET", hostile, "/private/x", "", "")
	if tg.overflow || tg.forms[tg.n-1] != "/private/x" {
		t.Errorf("with one header: forms %q, overflow %v", tg.Forms(), tg.overflow)
	}
}

// TestHostOf: one name per site, however the Host header spells it.
func TestHostOf(t *testing.T) {
	for in, want := range map[string]string{
		"example.com": "example.com", "Example.COM:8443": "example.com", "example.com.": "example.com",
		"EXAMPLE.com.:443": "example.com", "[2001:DB8::1]:443": "2001:db8::1", "2001:db8::1": "2001:db8::1",
		"": "", "xn--bcher-kva.example:80": "xn--bcher-kva.example", "a:b:c": "a:b:c", "127.0.0.1:80": "127.0.0.1",
	} {
		if got := HostOf(in); got != want {
			t.Errorf("HostOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHostPatternMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, host string
		want          bool
	}{
		{"example.com", "example.com", true},
		{"*.example.com", "www.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "a.b.example.com", false},
		{"www.*.com", "www.example.com", true},
		{"example.com", "example.org", false},
	} {
		if got := HostPatternMatches(c.pattern, c.host); got != c.want {
			t.Errorf("HostPatternMatches(%q, %q) = %v, want %v", c.pattern, c.host, got, c.want)
		}
	}
}

// TestParseReuses checks that Parse into a Target that held another
// request's forms gives what a fresh Target gets: reset clears only what a
// Parse may have set.
func TestParseReuses(t *testing.T) {
	targets := []struct {
		method, uri string
		rewrites    []string
	}{
		{"GET", "//evil.example/%2e%2e/private;x=1\\a?q=1", []string{"/admin", "/x", "/prefix"}},
		{"GET", "/about.html", nil},
		{"OPTIONS", "*", nil},
		{"GET", "http://host?/robots.txt", nil},
		{"GET", "/a/../robots.txt", nil},
		{"GET", "/plain", []string{"", "", "/p"}},
		{"GET", "x/y", nil}, // bad: no path
	}
	var reused Target
	for _, first := range targets {
		for _, next := range targets {
			reused.Parse(first.method, first.uri, first.rewrites...)
			reused.FoldCase()
			reused.Parse(next.method, next.uri, next.rewrites...)
			fresh := ParseTarget(next.method, next.uri, next.rewrites...)
			if !reflect.DeepEqual(reused, fresh) {
				t.Errorf("%s after %s:\nreused %+v\nfresh  %+v", next.uri, first.uri, reused, fresh)
			}
		}
	}
}
