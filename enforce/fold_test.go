package enforce

import (
	"strings"
	"testing"
)

func TestFoldCase(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/private/x", "/private/x"},
		{"/PRIVATE/X", "/private/x"},
		{"/%50rivate/x", "/private/x"},
		{"/%70RIVATE", "/private"},
		{"/a%2Fb", "/a%2fb"}, // an escaped slash stays escaped (its hex case is normalised later)
		{"/%C3%89t%C3%A9", "/%c3%89t%c3%a9"},
		{"/%", "/%25"},
		{"/%5", "/%255"},
		{"/%%50", "/%25p"},
		{"%%610", "%25a0"},
		{"/caf\xc3\x89", "/caf\xc3\x89"}, // non-ASCII is not folded
	} {
		if got := FoldCase(c.in); got != c.want {
			t.Errorf("FoldCase(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := string(FoldCaseBytes([]byte(c.in))); got != c.want {
			t.Errorf("FoldCaseBytes(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	s := "/already/lower?q=1"
	if n := testing.AllocsPerRun(100, func() { _ = FoldCase(s) }); n != 0 {
		t.Errorf("FoldCase of a folded string allocates %v times", n)
	}
	r := Parse(FoldCaseBytes([]byte("User-agent: *\nDisallow: /Private/\nAllow: /Private/%50ublic\n")))
	for target, allowed := range map[string]bool{
		"/private/x": false, "/PRIVATE/x": false, "/%50rivate/x": false, "/PrIvAtE/public/a": true, "/public": true,
	} {
		if got := r.Decide(nil, FoldCase(target)).Allowed; got != allowed {
			t.Errorf("folded %q: allowed %v, want %v", target, got, allowed)
		}
	}
}

// lowerOutsideEscapes lower-cases the ASCII letters of a normal form,
// leaving the hex digits of its escapes alone.
func lowerOutsideEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) {
			b.WriteString(s[i : i+3])
			i += 2
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// FuzzFoldCase: folding before normalisation gives the normal form with its
// letters lower-cased, so that a folded rule and a folded target match
// exactly when some spellings of them that differ in case would.
func FuzzFoldCase(f *testing.F) {
	for _, s := range []string{"/PRIVATE/x", "/%50rivate", "/%%50", "/a%2Fb", "/%c3%89", "/*?Q=$", "/%7a%5A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		folded := FoldCase(s)
		if FoldCase(folded) != folded {
			t.Fatalf("FoldCase is not idempotent on %q: %q then %q", s, folded, FoldCase(folded))
		}
		if got, want := normalString(folded), lowerOutsideEscapes(normalString(s)); got != want {
			t.Fatalf("normal(FoldCase(%q)) = %q, want %q", s, got, want)
		}
	})
}
