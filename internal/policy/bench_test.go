package policy_test

import (
	"testing"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// BenchmarkAssessAllowed is the decision on the common request: a verified
// crawler judged by its own group, one robots.txt version, a plain target.
func BenchmarkAssessAllowed(b *testing.B) {
	r := row{robots: groups, ua: googlebot, target: "/articles/2026/11/a-page.html?page=2"}
	f := r.facts(b)
	o := options()
	if a := policy.Assess(f, &o); a.Action != policy.Allow || a.Token != 0 {
		b.Fatalf("%s token %d, want allowed by the crawler's own group", a.Action, a.Token)
	}
	b.ReportAllocs()
	for b.Loop() {
		policy.Assess(f, &o)
	}
}

// BenchmarkParseTargetPlain is a plain target, as nearly every crawler
// sends: one form, no allocation.
func BenchmarkParseTargetPlain(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		policy.ParseTarget("GET", "/articles/2026/11/a-page.html?page=2", "", "", "")
	}
}

// BenchmarkParseTargetHostile is a target built for the most forms (14),
// with three rewrite headers on top: the request overflows MaxForms.
func BenchmarkParseTargetHostile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		policy.ParseTarget("GET", hostile, "//evil.example/public/..%2Fprivate;x=1\\a", "/public/%2e%2e/private/x?q", "/private")
	}
}
