package enforce

import (
	"math/rand"
	"strings"
	"testing"
)

// TestDifferentialIndexed compares the engine with the reference on files
// whose wildcard rules share a few prefixes in large numbers, so that the
// per-prefix indexes (suffix 2-grams of '$' rules, 4-grams and 2-grams of
// the others) and the stack of wildcard sets met by a walk are exercised,
// including targets that repeat the same n-grams many times.
func TestDifferentialIndexed(t *testing.T) {
	rng := rand.New(rand.NewSource(309))
	prefixes := []string{"", "/", "/a", "/ab", "/a/", "/b", "/ab/c", "/%2F", "/a%2f"}
	atoms := []string{"a", "b", "ab", "ba", "abab", "aab", "?", "=", "&", "?x=", "&y=", ".php", ".pdf", "%61", "%2F", "%2A", "/", "c", "cc", "é"}
	gen := func(parts []string, n int) string {
		var sb strings.Builder
		for i := 0; i < n; i++ {
			sb.WriteString(parts[rng.Intn(len(parts))])
		}
		return sb.String()
	}
	n := 400
	if testing.Short() {
		n = 60
	}
	for iter := 0; iter < n; iter++ {
		var sb strings.Builder
		sb.WriteString("User-agent: *\n")
		nrules := 10 + rng.Intn(120)
		for i := 0; i < nrules; i++ {
			verb := "Disallow"
			if rng.Intn(3) == 0 {
				verb = "Allow"
			}
			p := prefixes[rng.Intn(len(prefixes))]
			switch rng.Intn(5) {
			case 0: // literal
				p += gen(atoms, rng.Intn(4))
			case 1: // anchored suffix
				p += "*" + gen(atoms, 1+rng.Intn(3)) + "$"
			case 2: // two segments
				p += "*" + gen(atoms, 1+rng.Intn(3)) + "*" + gen(atoms, 1+rng.Intn(2))
			default:
				p += "*" + gen(atoms, 1+rng.Intn(3))
			}
			sb.WriteString(verb + ": " + p + "\n")
		}
		file := sb.String()
		r := Parse([]byte(file))
		rules, found := refSelect(file, "x")
		for k := 0; k < 40; k++ {
			target := "/" + gen(atoms, rng.Intn(12))
			if k%10 == 0 {
				target = "/" + strings.Repeat(gen(atoms, 1), 8+rng.Intn(40))
			}
			if diff := vsReference(r, "x", rules, found, target); diff != "" {
				t.Fatalf("file:\n%s\n%s", file, diff)
			}
		}
	}
}

// TestManyWildcardSets checks a walk that meets more wildcard sets than it
// collects at once.
func TestManyWildcardSets(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("User-agent: *\n")
	for i := 1; i <= 40; i++ {
		sb.WriteString("Disallow: /" + strings.Repeat("a", i) + "*z\n")
		sb.WriteString("Allow: /" + strings.Repeat("a", i) + "*zz$\n")
	}
	file := sb.String()
	r := Parse([]byte(file))
	rules, found := refSelect(file, "x")
	for _, target := range []string{"/" + strings.Repeat("a", 50) + "z", "/" + strings.Repeat("a", 50) + "zz", "/aaz", "/" + strings.Repeat("a", 30), "/" + strings.Repeat("a", 39) + "bzz"} {
		if diff := vsReference(r, "x", rules, found, target); diff != "" {
			t.Fatal(diff)
		}
	}
}

// TestAgentTable checks the token lookup on a file naming many crawlers,
// in every case variant and with near misses.
func TestAgentTable(t *testing.T) {
	var sb strings.Builder
	var names []string
	for i := 0; i < 300; i++ {
		name := strings.Repeat("Bot", i%5) + "x" + strings.Repeat("-y", i%3) + string(rune('a'+i%26)) + strings.Repeat("Q", i/26)
		names = append(names, name)
		sb.WriteString("User-agent: " + name + "\nDisallow: /" + name + "\n\n")
	}
	r := Parse([]byte(sb.String()))
	flip := func(s string) string {
		b := []byte(s)
		for i, c := range b {
			switch {
			case 'a' <= c && c <= 'z':
				b[i] = c - 32
			case 'A' <= c && c <= 'Z':
				b[i] = c + 32
			}
		}
		return string(b)
	}
	for _, name := range names {
		for _, tok := range []string{name, strings.ToLower(name), strings.ToUpper(name), flip(name)} {
			g := r.Select([]string{tok}, false)
			if g == nil || g.Rules[0].Pattern != "/"+name {
				t.Fatalf("Select(%q) = %v", tok, g)
			}
		}
		for _, tok := range []string{name + "z", name[1:], name[:len(name)-1], name + "\x00", strings.Replace(name, "x", "\u0130", 1)} {
			if g := r.Select([]string{tok}, false); g != nil && !strings.EqualFold(tok, g.Agents[0]) {
				t.Fatalf("Select(%q) = %v", tok, g)
			}
		}
	}
}

// TestCleanPrefix checks the word-at-a-time normal-form test against the
// octet table, for every octet at every position of words and prefixes.
func TestCleanPrefix(t *testing.T) {
	for c := 0; c < 256; c++ {
		for n := 1; n <= 20; n++ {
			for p := 0; p < n; p++ {
				b := []byte("/abcdefghijklmnopqrstuvwxyz")[:n]
				b[p] = byte(c)
				s := string(b) + "%zz" // octets past n must not matter
				if got, want := cleanPrefix(s, n), isNormal(s[:n]); got != want {
					t.Fatalf("cleanPrefix(%q, %d) = %v, want %v", s, n, got, want)
				}
			}
		}
		if x := uint64(c) * lsb; (suspect(x) == 0) != (byteClass[c] == clKeep) && c != '~' {
			t.Fatalf("suspect(%#x) = %#x", c, suspect(x))
		}
	}
}

// TestSegmentInsideEscape: a wildcard segment matches whole units only,
// never the hex digits of an escape (found by FuzzMatch; the engine used
// to match "*0" against the "%20" of a normalised target).
func TestSegmentInsideEscape(t *testing.T) {
	cases := []struct{ rules, target string }{
		{"Allow: *0", " 1111111"},
		{"Disallow: /*2F", "/a%2F"},
		{"Disallow: /*F", "/a%2fx"},
		{"Disallow: /*%2F", "/a%2f"},
		{"Disallow: /*F$", "/a%2F"},
		{"Disallow: /*2F$", "/a%2F"},
		{"Disallow: /*%2F$", "/a%2f"},
		{"Disallow: /*20b", "/a b"},
		{"Disallow: /*20b", "/a%20b20b"},
		{"Disallow: /*%*0", "/%250"},
		{"Disallow: /x*5*y$", "/x%25y"},
		{"Disallow: /x*C3*A9$", "/xé%C3%A9"},
	}
	for _, c := range cases {
		file := "User-agent: *\n" + c.rules + "\n"
		r := Parse([]byte(file))
		rules, found := refSelect(file, "x")
		if diff := vsReference(r, "x", rules, found, c.target); diff != "" {
			t.Errorf("rules %q: %s", c.rules, diff)
		}
	}
}

// TestLower8 checks the word-at-a-time ASCII lower-casing, octet by octet.
func TestLower8(t *testing.T) {
	for c := 0; c < 256; c++ {
		for p := 0; p < 8; p++ {
			x := uint64(0xC3) * lsb // non-ASCII neighbours
			x = x&^(0xFF<<(8*p)) | uint64(c)<<(8*p)
			want := uint64(0xC3)*lsb&^(0xFF<<(8*p)) | uint64(lowerASCII(byte(c)))<<(8*p)
			if got := lower8(x); got != want {
				t.Fatalf("lower8(%#x) = %#x, want %#x", x, got, want)
			}
		}
	}
}
