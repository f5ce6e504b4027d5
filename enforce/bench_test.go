package enforce

import (
	"fmt"
	"strings"
	"testing"
)

const fiveRules = `User-agent: *
Disallow: /private/
Allow: /private/public/
Disallow: /*.pdf$
Disallow: /search?
Allow: /search?q=robots
`

// wrap returns i, or 0 when i is n: the benchmarks step through their cases
// with it rather than with a division per decision.
func wrap(i, n int) int {
	if i == n {
		return 0
	}
	return i
}

func BenchmarkDecide5Rules(b *testing.B) {
	r := Parse([]byte(fiveRules))
	targets := []string{"/private/x.html", "/private/public/a", "/docs/manual.pdf", "/search?q=robots", "/about/team"}
	tokens := []string{"FooBot"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i = wrap(i+1, len(targets)) {
		r.Decide(tokens, targets[i])
	}
}

func BenchmarkAllowed5Rules(b *testing.B) {
	r := Parse([]byte(fiveRules))
	b.ReportAllocs()
	for b.Loop() {
		r.Allowed("FooBot", "/private/x.html")
	}
}

// CorpusCase is one decision over a real file.
type corpusCase struct {
	r      *Robots
	file   string
	body   []byte
	tokens []string
	target string
}

// corpusTargets derives deterministic, realistic targets from a file's own
// rule paths plus a few generic ones.
func corpusTargets(body []byte) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, g := range []string{"/", "/index.html", "/about/", "/search?q=robots+txt", "/images/logo.png", "/wp-admin/admin-ajax.php", "/news/2019/07/some-article-title.html?utm_source=x"} {
		add(g)
	}
	n := 0
	for _, ln := range strings.Split(strings.ReplaceAll(string(body), "\r", "\n"), "\n") {
		k := strings.IndexByte(ln, ':')
		if k < 0 {
			continue
		}
		key := strings.ToLower(strings.TrimSpace(ln[:k]))
		if key != "disallow" && key != "allow" {
			continue
		}
		v := strings.TrimSpace(ln[k+1:])
		if i := strings.IndexByte(v, '#'); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		if v == "" || v[0] != '/' {
			continue
		}
		v = strings.TrimSuffix(v, "$")
		v = strings.ReplaceAll(v, "*", "abc")
		if n%3 == 0 {
			add(v)
		} else {
			add(v + "page-" + fmt.Sprint(n) + ".html")
		}
		n++
		if n >= 12 {
			break
		}
	}
	return out
}

func loadCorpus(tb testing.TB) []corpusCase {
	var cases []corpusCase
	agents := [][]string{{"Googlebot"}, {"bingbot"}, {"SomeNewBot"}}
	for _, f := range readCorpus(tb) {
		r := Parse(f.body)
		for i, t := range corpusTargets(f.body) {
			cases = append(cases, corpusCase{r, f.name, f.body, agents[i%len(agents)], t})
		}
	}
	return cases
}

func BenchmarkDecideCorpus(b *testing.B) {
	cases := loadCorpus(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i = wrap(i+1, len(cases)) {
		c := &cases[i]
		c.r.Decide(c.tokens, c.target)
	}
	b.ReportMetric(float64(len(cases)), "cases")
}

// synthetic10k builds a file with 10,000 rules: prefix rules, exact rules and
// several shapes of wildcard rules.
func synthetic10k() (string, []string) {
	var sb strings.Builder
	sb.WriteString("User-agent: *\n")
	exts := []string{"pdf", "php", "jpg", "zip", "xml"}
	for i := 0; i < 10000; i++ {
		verb := "Disallow"
		if i%7 == 0 {
			verb = "Allow"
		}
		var p string
		switch i % 10 {
		case 0, 1, 2, 3, 4:
			p = fmt.Sprintf("/section%d/page%d/", i%500, i)
		case 5:
			p = fmt.Sprintf("/files%d/*.%s$", i%300, exts[i%5])
		case 6:
			p = fmt.Sprintf("/*/item%d?sort=", i)
		case 7:
			p = fmt.Sprintf("/*?session%d=", i)
		case 8:
			p = fmt.Sprintf("/shop/%d/*/reviews*page=%d", i%100, i)
		case 9:
			p = fmt.Sprintf("/exact%d$", i)
		}
		fmt.Fprintf(&sb, "%s: %s\n", verb, p)
	}
	targets := []string{
		"/section42/page542/index.html",
		"/section7/other",
		"/files5/docs/report.pdf",
		"/catalog/item1006?sort=price",
		"/list?session1007=abc",
		"/shop/8/widget/reviews?page=1008",
		"/exact1009",
		"/nothing/here/at/all.html?x=1",
		"/",
		"/section499/page9999/",
	}
	return sb.String(), targets
}

func BenchmarkDecide10kRules(b *testing.B) {
	file, targets := synthetic10k()
	r := Parse([]byte(file))
	tokens := []string{"FooBot"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i = wrap(i+1, len(targets)) {
		r.Decide(tokens, targets[i])
	}
}

func BenchmarkDecidePathological(b *testing.B) {
	r := Parse([]byte("User-agent: *\nDisallow: /*a*a*a*a*a*a*a*a*b\nDisallow: /*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b$\n"))
	target := "/" + strings.Repeat("a", 4096)
	tokens := []string{"FooBot"}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if !r.Decide(tokens, target).Allowed {
			b.Fatal("should be allowed")
		}
	}
}

// BenchmarkDecidePathologicalEscaped is the same with a target that needs
// normalisation (percent escapes), exercising the buffered path.
func BenchmarkDecidePathologicalEscaped(b *testing.B) {
	r := Parse([]byte("User-agent: *\nDisallow: /*a*a*a*a*a*a*a*a*b\n"))
	target := "/" + strings.Repeat("a%61", 1024)
	tokens := []string{"FooBot"}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r.Decide(tokens, target)
	}
}

// big500k returns a realistic 500 KiB file: corpus files concatenated.
func big500k(tb testing.TB) []byte {
	files := readCorpus(tb)
	var buf []byte
	for len(buf) < MaxSize {
		for _, f := range files {
			buf = append(buf, f.body...)
			buf = append(buf, '\n')
		}
	}
	return buf[:MaxSize]
}

func BenchmarkParse500KiB(b *testing.B) {
	body := big500k(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(body)
	}
}

func BenchmarkParse10kRules(b *testing.B) {
	file, _ := synthetic10k()
	body := []byte(file)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(body)
	}
}
