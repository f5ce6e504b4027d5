package enforce

import "testing"

// prefsRules is fiveRules with AI usage preferences added.
const prefsRules = fiveRules + `Content-Usage: train-ai=n, search=y
Content-Usage: /private/public/ train-ai=y
Content-Usage: /search? search=n
Content-Usage: /*.html$ train-ai=y
Content-Usage: /about/ train-ai=y, search=y
Content-Signal: search=yes, ai-train=no, ai-input=no, use=reference
`

// BenchmarkDecide5RulesWithPrefs is BenchmarkDecide5Rules on a file that
// also has preference records: Decide does not look at them.
func BenchmarkDecide5RulesWithPrefs(b *testing.B) {
	r := Parse([]byte(prefsRules))
	targets := []string{"/private/x.html", "/private/public/a", "/docs/manual.pdf", "/search?q=robots", "/about/team"}
	tokens := []string{"FooBot"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i = wrap(i+1, len(targets)) {
		r.Decide(tokens, targets[i])
	}
}

// BenchmarkPreferences looks up the preferences of allowed and disallowed
// targets (a decision, then the Content-Usage rules).
func BenchmarkPreferences(b *testing.B) {
	r := Parse([]byte(prefsRules))
	targets := []string{"/private/x.html", "/private/public/a", "/docs/manual.pdf", "/search?q=robots", "/about/team"}
	tokens := []string{"FooBot"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i = wrap(i+1, len(targets)) {
		r.Preferences(tokens, targets[i])
	}
}

// BenchmarkPreferencesNone is Preferences on a file without preference
// records: a nil check.
func BenchmarkPreferencesNone(b *testing.B) {
	r := Parse([]byte(fiveRules))
	tokens := []string{"FooBot"}
	b.ReportAllocs()
	for b.Loop() {
		r.Preferences(tokens, "/about/team")
	}
}

// BenchmarkParsePrefs parses a file with preference records.
func BenchmarkParsePrefs(b *testing.B) {
	body := []byte(prefsRules)
	b.ReportAllocs()
	for b.Loop() {
		Parse(body)
	}
}
