package enforce

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func lintCodes(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s:%s@%02d", f.Severity, f.Code, f.Line))
	}
	return out
}

func TestLintFindsWhatSurprises(t *testing.T) {
	body := strings.Join([]string{
		"Disallow: /early",            // 1 rule-outside-group
		"User-agent: Googlebot/2.1",   // 2 bad-user-agent
		"Dissallow: /tmp",             // 3 misspelt-key
		"User agent: bingbot",         // 4 misspelt-key
		"User-agent: *",               // 5
		"Disallow: /private",          // 6
		"Allow: /private*",            // 7 shadows line 6 (longer, always matches)
		"Disallow: /shop$/cart",       // 8 dollar-mid-pattern, read literally by 1994 crawlers
		"Disallow: secret",            // 9 never-matches
		"Allow: /docs",                // 10 equal-length conflict with 11
		"Disallow: /docs",             // 11 shadowed by 10 (same length, allow wins)
		"Noindex: /x",                 // 12 unknown-record
		"Foo: bar",                    // 13 unknown-record
		"Disallow /nocolon",           // 14 no-colon
		"Crawl-delay: soon",           // 15 bad-value
		"Disallow: /a/b",              // 16 fine
		"Disallow: /a/b",              // 17 redundant (same kind, later)
		"Allow: /*.css$",              // 18 fine
		"Sitemap: https://x/s.xml",    // 19 fine
		"Content-Signal: ai-train=no", // 20 known to the AI-preference lint
	}, "\n")
	got := strings.Join(lintCodes(Lint([]byte(body))), " ")
	want := "error:rule-outside-group@01 error:bad-user-agent@02 error:misspelt-key@03 error:misspelt-key@04 " +
		"warning:shadowed-rule@06 warning:dollar-mid-pattern@08 warning:read-literally-1994@08 error:never-matches@09 warning:equal-length-conflict@10 " +
		"warning:shadowed-rule@11 warning:unknown-record@12 warning:unknown-record@13 error:no-colon@14 " +
		"warning:bad-value@15 warning:shadowed-rule@17"
	if got != want {
		t.Errorf("findings\n got: %s\nwant: %s", got, want)
	}
	for _, f := range Lint([]byte(body)) {
		if f.Line == 2 && !strings.Contains(f.Message, `write "Googlebot"`) {
			t.Errorf("bad-user-agent should suggest the token: %s", f)
		}
		if f.Line == 6 && !strings.Contains(f.Message, "never takes effect") {
			t.Errorf("line 6: %s", f)
		}
		if f.Line == 17 && !strings.Contains(f.Message, "redundant") {
			t.Errorf("line 17: %s", f)
		}
	}
}

func TestLintCleanFileHasNoFindings(t *testing.T) {
	body := "User-agent: *\nDisallow: /private/\nAllow: /private/public/\nDisallow: /search\nCrawl-delay: 2\n\nUser-agent: GPTBot\nDisallow: /\n\nSitemap: https://example.com/sitemap.xml\n"
	if fs := Lint([]byte(body)); len(fs) != 0 {
		t.Errorf("want no findings, got %v", fs)
	}
}

// TestLint1994: a wildcard or "$" in a Disallow rule is read literally by
// the crawlers that follow the 1994 standard; lint names them.
func TestLint1994(t *testing.T) {
	fs := Lint([]byte("User-agent: *\nDisallow: /*?q=\nDisallow: /search*\nDisallow: /*.pdf$\nAllow: /*.css\n"))
	want := []string{"warning:read-literally-1994@02", "warning:read-literally-1994@03", "warning:read-literally-1994@04"}
	if got := lintCodes(fs); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v, want %v", got, want)
	}
	if !strings.Contains(fs[0].Message, "Wget") || !strings.Contains(fs[1].Message, `"/search"`) || strings.Contains(fs[0].Message, "for example") {
		t.Errorf("messages: %v", fs)
	}
}

func TestLintTooLarge(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	for b.Len() <= MaxSize+100 {
		b.WriteString("Disallow: /some/long/path/that/repeats/itself/to/fill/the/file\n")
	}
	fs := Lint([]byte(b.String()))
	if len(fs) == 0 || fs[0].Code != "too-large" || fs[0].Severity != Error {
		t.Fatalf("want too-large first, got %v", fs[:min(3, len(fs))])
	}
	if fs[0].Line < MaxSize/70 {
		t.Errorf("too-large should name the first ignored line, got %d", fs[0].Line)
	}
}

// TestGlobIncludesAgainstBruteForce checks globIncludes and globsIntersect
// against enumeration of every string over a small alphabet.
func TestGlobIncludesAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alpha := []int32{'a', 'b'}
	var strs [][]int32
	var gen func(prefix []int32, n int)
	gen = func(prefix []int32, n int) {
		strs = append(strs, append([]int32(nil), prefix...))
		if n == 0 {
			return
		}
		for _, c := range alpha {
			gen(append(prefix, c), n-1)
		}
	}
	gen(nil, 7)
	randGlob := func() []int32 {
		n := rng.IntN(4)
		var g []int32
		for range n {
			if rng.IntN(3) == 0 {
				if len(g) == 0 || g[len(g)-1] != globStar {
					g = append(g, globStar)
				}
			} else {
				g = append(g, alpha[rng.IntN(2)])
			}
		}
		return g
	}
	for range 3000 {
		a, b := randGlob(), randGlob()
		inc, inter := true, false
		for _, s := range strs {
			ma, mb := globMatch(a, s), globMatch(b, s)
			if ma && !mb {
				inc = false
			}
			if ma && mb {
				inter = true
			}
		}
		// With at most 3 literals per glob, length-7 strings are enough
		// to tell inclusion and intersection apart.
		if got := globIncludes(b, a); got != inc {
			t.Errorf("globIncludes(%v, %v) = %v, want %v", b, a, got, inc)
		}
		if got := globsIntersect(a, b); got != inter {
			t.Errorf("globsIntersect(%v, %v) = %v, want %v", a, b, got, inter)
		}
	}
}

func globMatch(g, s []int32) bool {
	if len(g) == 0 {
		return len(s) == 0
	}
	if g[0] == globStar {
		for k := 0; k <= len(s); k++ {
			if globMatch(g[1:], s[k:]) {
				return true
			}
		}
		return false
	}
	return len(s) > 0 && s[0] == g[0] && globMatch(g[1:], s[1:])
}
