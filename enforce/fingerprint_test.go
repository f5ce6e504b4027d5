package enforce

import (
	"strings"
	"testing"
)

// TestRulesFingerprintIgnoresNoise: comments, blank lines, Sitemap and Host
// lines, line numbers, whitespace, the case of keys, line endings and a
// byte order mark leave the fingerprint as it is; each of them is what a
// generated robots.txt changes on every fetch.
func TestRulesFingerprintIgnoresNoise(t *testing.T) {
	base := "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n\nUser-agent: GPTBot\nDisallow: /\nContent-Usage: train-ai=n\n"
	want := Parse([]byte(base)).RulesFingerprint()
	for name, body := range map[string]string{
		"timestamp comment":  "# generated 2026-11-25T16:05:21Z\n" + base,
		"trailing comment":   strings.Replace(base, "/private/\n", "/private/ # keep out\n", 1),
		"blank lines":        "\n\n" + strings.ReplaceAll(base, "\n", "\n\n"),
		"sitemap with host":  base + "Sitemap: https://shop.example:8443/sitemap.xml\n",
		"sitemap in a group": strings.Replace(base, "Crawl-delay: 2\n", "Crawl-delay: 2\nSitemap: https://a.example/s.xml\n", 1),
		"host line":          "Host: shop.example\n" + base,
		"whitespace":         strings.ReplaceAll(strings.ReplaceAll(base, ": ", " :\t"), "\n", "  \n"),
		"key case":           strings.ReplaceAll(strings.ReplaceAll(base, "Disallow", "DISALLOW"), "User-agent", "user-AGENT"),
		"crlf":               strings.ReplaceAll(base, "\n", "\r\n"),
		"bom":                "\uFEFF" + base,
	} {
		if got := Parse([]byte(body)).RulesFingerprint(); got != want {
			t.Errorf("%s: the fingerprint changed", name)
		}
	}
}

// TestRulesFingerprintSeesRules: every change a crawler's decision could
// depend on changes the fingerprint.
func TestRulesFingerprintSeesRules(t *testing.T) {
	base := "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n\nUser-agent: GPTBot\nDisallow: /\nContent-Usage: train-ai=n\n"
	seen := map[[32]byte]string{Parse([]byte(base)).RulesFingerprint(): "base"}
	for name, body := range map[string]string{
		"rule path":     strings.Replace(base, "/private/", "/privat/", 1),
		"rule kind":     strings.Replace(base, "Disallow: /private/", "Allow: /private/", 1),
		"rule removed":  strings.Replace(base, "Disallow: /private/\n", "", 1),
		"agent":         strings.Replace(base, "GPTBot", "CCBot", 1),
		"agent added":   strings.Replace(base, "User-agent: GPTBot\n", "User-agent: GPTBot\nUser-agent: CCBot\n", 1),
		"crawl-delay":   strings.Replace(base, "Crawl-delay: 2", "Crawl-delay: 3", 1),
		"request-rate":  strings.Replace(base, "Crawl-delay: 2", "Crawl-delay: 2\nRequest-rate: 1/5s", 1),
		"preference":    strings.Replace(base, "train-ai=n", "train-ai=y", 1),
		"signal":        base + "Content-Signal: search=yes, ai-train=no\n",
		"value case":    strings.Replace(base, "/private/", "/Private/", 1),
		"misspelt rule": base + "Dissallow: /google-reads-this/\n",
		"no colon":      base + "Disallow /x\n",
		"order":         "User-agent: GPTBot\nDisallow: /\nContent-Usage: train-ai=n\n\nUser-agent: *\nDisallow: /private/\nCrawl-delay: 2\n",
		"empty":         "",
	} {
		fp := Parse([]byte(body)).RulesFingerprint()
		if other, dup := seen[fp]; dup {
			t.Errorf("%s has the fingerprint of %s", name, other)
		}
		seen[fp] = name
	}
}

// TestRulesFingerprintEmpty: a nil Robots, an empty file and a file of
// comments, blank lines and sitemaps say the same thing: nothing.
func TestRulesFingerprintEmpty(t *testing.T) {
	var nilRobots *Robots
	want := nilRobots.RulesFingerprint()
	for _, body := range []string{"", "\n\n", "# nothing here\n# at all\n", "Sitemap: https://a.example/s.xml\n"} {
		if Parse([]byte(body)).RulesFingerprint() != want {
			t.Errorf("%q differs from an empty file", body)
		}
	}
}

// TestRulesFingerprintCap: what lies past the size cap is not read, so it
// does not count.
func TestRulesFingerprintCap(t *testing.T) {
	head := "User-agent: *\nDisallow: /a/\n"
	pad := strings.Repeat("# pad\n", 100)
	a := ParseLimit([]byte(head+pad+"Disallow: /late/\n"), len(head)+len(pad))
	b := ParseLimit([]byte(head+pad+"Disallow: /other/\n"), len(head)+len(pad))
	if a.RulesFingerprint() != b.RulesFingerprint() {
		t.Error("lines past the cap changed the fingerprint")
	}
}

func BenchmarkRulesFingerprint(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < MaxSize-64; i++ {
		sb.WriteString("User-agent: bot")
		sb.WriteString(strings.Repeat("x", i%7))
		sb.WriteString("\nDisallow: /some/path/\n# comment\n")
	}
	r := Parse([]byte(sb.String()))
	b.SetBytes(int64(r.Size()))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.RulesFingerprint()
	}
}
