package enforce

import (
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestFoldCase(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/private/x", "/private/x"},
		{"/PRIVATE/X", "/private/x"},
		{"/%50rivate/x", "/private/x"},
		{"/%70RIVATE", "/private"},
		{"/a%2Fb", "/a%2fb"},                 // an escaped slash stays escaped (its hex case is normalised later)
		{"/%C3%89t%C3%A9", "/%c3%a9t%c3%a9"}, // É is é
		{"/caf\xc3\x89", "/caf%c3%a9"},       // raw UTF-8 too
		{"/pr%C4%B1vate/", "/private/"},      // dotless ı: upper-cased it is I
		{"/PR%C4%B0VATE/", "/private/"},      // İ: lower-cased it is i
		{"/pr%c4%b1vate/", "/private/"},      // either hex case
		{"/pr\xc4\xb1vate/", "/private/"},    // raw
		{"/pr\xc4%B1vate/", "/private/"},     // a mix of raw and escaped octets
		{"/%E2%84%AAey", "/key"},             // the Kelvin sign is k
		{"/%C5%BFecret", "/secret"},          // long s: upper-cased it is S
		{"/stra%C3%9Fe", "/strasse"},         // ß: full case folding, as ext4 does
		{"/STRA%E1%BA%9EE", "/strasse"},      // capital sharp s
		{"/%EF%AC%81le", "/file"},            // the ﬁ ligature
		{"/%CE%A3%CF%82", "/%cf%82%cf%82"},   // Σ and final ς are one class
		{"/%E6%97%A5", "/%e6%97%a5"},         // no case: kept (hex case is normalised later)
		{"/%C4", "/%c4"},                     // a cut UTF-8 sequence is no letter
		{"/\xc4x", "/\xc4x"},                 // invalid UTF-8 is kept
		{"/%", "/%25"},
		{"/%5", "/%255"},
		{"/%%50", "/%25p"},
		{"%%610", "%25a0"},
	} {
		if got := FoldCase(c.in); got != c.want {
			t.Errorf("FoldCase(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := string(FoldCaseBytes([]byte(c.in))); got != c.want {
			t.Errorf("FoldCaseBytes(%q) = %q, want %q", c.in, got, c.want)
		}
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

// FuzzFoldCase: folding is idempotent and commutes with normalisation
// (rules and targets are folded, then normalised); on ASCII it gives the
// normal form with its letters lower-cased; and a string upper-cased or
// lower-cased with Unicode's mappings, as servers that ignore case do,
// folds to the same normal form.
func FuzzFoldCase(f *testing.F) {
	for _, s := range []string{"/PRIVATE/x", "/%50rivate", "/%%50", "/a%2Fb", "/%c3%89", "/*?Q=$", "/%7a%5A",
		"/pr%C4%B1vate/", "/PR%C4%B0VATE/", "/%E2%84%AAey", "/%C5%BFecret", "/stra\u00dfe", "/\u1e9e", "/\ufb01le", "/\xc4%B1", "/%C4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		folded := FoldCase(s)
		if FoldCase(folded) != folded {
			t.Fatalf("FoldCase is not idempotent on %q: %q then %q", s, folded, FoldCase(folded))
		}
		n := normalString(folded)
		if got := normalString(FoldCase(normalString(s))); got != n {
			t.Fatalf("normal(FoldCase(normal(%q))) = %q, normal(FoldCase) = %q", s, got, n)
		}
		if spellsASCII(s) {
			if want := lowerOutsideEscapes(normalString(s)); n != want {
				t.Fatalf("normal(FoldCase(%q)) = %q, want %q", s, n, want)
			}
		}
		if utf8.ValidString(s) {
			for _, v := range []string{strings.ToUpper(s), strings.ToLower(s)} {
				if got := normalString(FoldCase(v)); got != n {
					t.Fatalf("%q folds to %q, but %q, the same in another case, to %q", s, n, v, got)
				}
			}
		}
	})
}

// spellsASCII reports whether s has no non-ASCII octet, raw or escaped.
func spellsASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c, n := octetAt(s, i); c >= utf8.RuneSelf {
			return false
		} else if n > 1 {
			i += n - 1
		}
	}
	return true
}

// TestFoldCaseEveryLetter: for every letter with a case, each spelling of
// it that upper-casing, lower-casing or simple case folding gives, raw or
// escaped, has one folded form, and folding it again changes nothing; a
// non-ASCII letter folds to an ASCII one only when casing links them.
func TestFoldCaseEveryLetter(t *testing.T) {
	esc := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			b.WriteString("%" + strings.ToLower(strconv.FormatUint(uint64(s[i]), 16)))
		}
		return b.String()
	}
	letters := 0
	for r := rune(0x80); r <= lastCased; r++ {
		f, ok := foldOf(r)
		if !ok {
			continue
		}
		letters++
		want := FoldCase("/" + string(r))
		if want != "/"+f || FoldCase(want) != want {
			t.Fatalf("%U: FoldCase %q, table %q, again %q", r, want, f, FoldCase(want))
		}
		if got := FoldCase("/" + esc(string(r))); got != want {
			t.Fatalf("%U escaped folds to %q, raw to %q", r, got, want)
		}
		for _, o := range []rune{unicode.ToUpper(r), unicode.ToLower(r), unicode.ToTitle(r), unicode.SimpleFold(r)} {
			if got := normalString(FoldCase("/" + string(o))); got != normalString(want) {
				t.Fatalf("%U folds to %q, but %U, its other case, to %q", r, want, o, got)
			}
		}
		if len(f) == 1 {
			l := rune(f[0])
			if unicode.ToLower(r) != l && unicode.ToLower(unicode.ToUpper(r)) != l && !strings.EqualFold(string(r), f) {
				t.Errorf("%U folds to the ASCII %q, which casing does not link it to", r, f)
			}
		}
	}
	if letters < 2000 {
		t.Errorf("only %d letters fold", letters)
	}
	t.Logf("%d non-ASCII letters fold", letters)
}
