package enforce

import (
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
)

// Case folding, for sites whose paths are case-insensitive (IIS, and file
// systems that ignore case): there "/PRIVATE/x" is "/private/x", so a rule
// written "Disallow: /private/" must govern both. RFC 9309 compares paths
// case-sensitively; folding is an option of the caller, which folds the
// robots.txt body before Parse and every target before Decide.
//
// Servers that ignore case do not agree on how: IIS and NTFS upper-case
// with Unicode's simple mappings ("ı" is "I", "ſ" is "S"), applications
// lower-case ("İ" is "i", the Kelvin sign "K" is "k") or compare with
// simple case folding, and case-folding file systems (ext4, F2FS) use full
// case folding ("ß" is "ss"). Folding must put every spelling that any of
// them reads as one path into one folded form, or a bot gets past a rule
// by spelling a letter the way only the server reads as the rule's. So
// FoldCase folds each letter to one member of its class, the letters that
// upper-casing, lower-casing, title-casing or simple case folding link
// (ASCII letters to their lower case, as before), and a class whose
// letters full case folding expands ("ß", "ẞ", "ﬁ") to that expansion.

// FoldCase returns s with every letter folded, whether written raw,
// percent-encoded, or as percent-encoded UTF-8: ASCII letters and escapes
// of them ("%50", "%70") become the lower-case letter; a non-ASCII letter
// ("%C4%B1", "ı") becomes the folded form of its class, an ASCII letter
// when the class has one ("ı", "İ" are "i"; "ſ" is "s"; "K" is "k"), else
// its member or expansion percent-encoded ("É" is "%c3%a9", "ß" is "ss";
// hex digits are written in lower case, as FoldCase writes those of every
// escape, and normalisation upper-cases them). So every spelling of a path that a server which
// ignores case reads as one has one folded form, whatever normalisation
// follows (the matcher decodes escapes of unreserved octets). A "%" that
// starts no escape is written "%25", as normalisation writes it. Octets
// that are no letter, and octets that do not form valid UTF-8, are kept as
// they are. It returns s itself, without allocating, when there is nothing
// to fold.
func FoldCase(s string) string {
	i := foldStart(s)
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	return string(appendFolded(b, s[i:]))
}

// FoldCaseBytes is FoldCase for a robots.txt body: it returns body itself
// when there is nothing to fold, and a new slice otherwise.
func FoldCaseBytes(body []byte) []byte {
	i := foldStart(string(body))
	if i < 0 {
		return body
	}
	b := make([]byte, 0, len(body))
	b = append(b, body[:i]...)
	return appendFolded(b, string(body[i:]))
}

// foldStart returns the index of the first octet of s that folding may
// change, or -1.
func foldStart(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			return i
		}
		if c >= utf8.RuneSelf {
			if _, n := letterAt(s, i); n > 0 {
				return i
			}
			continue
		}
		if c == '%' {
			v, n := octetAt(s, i)
			if n == 0 {
				return i // a bare "%", written "%25"
			}
			if isLetterASCII(v) {
				return i
			}
			if _, n := letterAt(s, i); n > 0 {
				return i
			}
		}
	}
	return -1
}

// appendFolded appends s folded to b.
func appendFolded(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || c == '%' {
			if f, n := letterAt(s, i); n > 0 {
				b = append(b, f...)
				i += n - 1
				continue
			}
		}
		switch {
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		case c == '%':
			v, n := octetAt(s, i)
			if n == 0 {
				// A bare "%" is written as normalisation writes it, so
				// that a letter decoded after it cannot make an escape
				// of it ("%%610" is "%25a0", not "%a0").
				b = append(b, "%25"...)
				continue
			}
			if isLetterASCII(v) {
				b = append(b, lowerASCII(v))
				i += n - 1
				continue
			}
			b = append(b, c)
		default:
			b = append(b, c)
		}
	}
	return b
}

// octetAt returns the octet that s spells at i, raw or as a "%XY" escape,
// and the number of bytes of s it takes (0 at the end or a bare "%").
func octetAt(s string, i int) (byte, int) {
	if i >= len(s) {
		return 0, 0
	}
	if s[i] != '%' {
		return s[i], 1
	}
	if i+2 >= len(s) {
		return 0, 0
	}
	h, ok1 := unhex(s[i+1])
	l, ok2 := unhex(s[i+2])
	if !ok1 || !ok2 {
		return 0, 0
	}
	return h<<4 | l, 3
}

// letterAt reports whether s spells, from i, a non-ASCII letter that has a
// folded form: a UTF-8 sequence of raw octets and escapes in any mix. It
// returns the folded form and the number of bytes of s the letter takes,
// or n == 0 when there is none.
func letterAt(s string, i int) (folded string, n int) {
	var seq [utf8.UTFMax]byte
	c, k := octetAt(s, i)
	if k == 0 || c < 0xC0 {
		return "", 0
	}
	seq[0], n = c, k
	want := 2
	switch {
	case c >= 0xF0:
		want = 4
	case c >= 0xE0:
		want = 3
	}
	for j := 1; j < want; j++ {
		c, k := octetAt(s, i+n)
		if k == 0 || c&0xC0 != 0x80 {
			return "", 0
		}
		seq[j], n = c, n+k
	}
	r, size := utf8.DecodeRune(seq[:want])
	if r == utf8.RuneError || size != want {
		return "", 0
	}
	f, ok := foldOf(r)
	if !ok {
		return "", 0
	}
	return f, n
}

// foldTable maps each non-ASCII letter that has a case to its folded form,
// as FoldCase writes it. It is built on first use (a pass over the letters
// of the Basic and Supplementary Multilingual Planes).
var foldTable struct {
	once sync.Once
	m    map[rune]string
}

// WarmFoldCase builds the table FoldCase folds non-ASCII letters with (a
// pass over Unicode's letters), so that the first request
// with such a letter does not wait for it. A caller that folds paths calls
// it once when it starts; FoldCase builds the table itself otherwise.
func WarmFoldCase() { foldTable.once.Do(buildFoldTable) }

// foldOf returns the folded form of the non-ASCII letter r, and whether it
// has one (it has a case).
func foldOf(r rune) (string, bool) {
	foldTable.once.Do(buildFoldTable)
	f, ok := foldTable.m[r]
	return f, ok
}

// hexLower writes the escapes of folded letters: the hex digits of every
// other escape are folded to lower case too (normalisation upper-cases
// them all), so folding twice changes nothing.
const hexLower = "0123456789abcdef"

// lastCased bounds the runes with a case (the last are Adlam's, U+1E943).
const lastCased = 0x1FFFF

func buildFoldTable() {
	// Classes: letters linked by upper-, lower-, title-casing or simple
	// case folding, kept as a union-find forest.
	parent := map[rune]rune{}
	var find func(r rune) rune
	find = func(r rune) rune {
		p, ok := parent[r]
		if !ok || p == r {
			return r
		}
		root := find(p)
		parent[r] = root
		return root
	}
	union := func(a, b rune) {
		if _, ok := parent[a]; !ok {
			parent[a] = a
		}
		if _, ok := parent[b]; !ok {
			parent[b] = b
		}
		ra, rb := find(a), find(b)
		if ra != rb {
			parent[max(ra, rb)] = min(ra, rb)
		}
	}
	for r := rune(0); r <= lastCased; r++ {
		for _, o := range [...]rune{unicode.ToUpper(r), unicode.ToLower(r), unicode.ToTitle(r), unicode.SimpleFold(r)} {
			if o != r {
				union(r, o)
			}
		}
		if _, ok := parent[r]; !ok && (unicode.IsLower(r) || unicode.IsUpper(r) || unicode.IsTitle(r)) {
			parent[r] = r // a letter of its own, whose full folding may expand ("ﬁ")
		}
	}
	members := map[rune][]rune{} // class root -> its letters, ascending
	for r := rune(0); r <= lastCased; r++ {
		if _, ok := parent[r]; ok {
			root := find(r)
			members[root] = append(members[root], r)
		}
	}
	// Each class folds to its smallest lower-case letter (else its
	// smallest letter), or to the full case folding of that letter when it
	// expands, when the class has no ASCII letter.
	rep := map[rune]rune{}
	for root, ms := range members {
		pick := ms[0]
		for _, r := range ms {
			if unicode.IsLower(r) {
				pick = r
				break
			}
		}
		rep[root] = pick
	}
	fold := cases.Fold()
	m := make(map[rune]string, len(parent))
	for root, ms := range members {
		pick := rep[root]
		out := string(pick)
		if pick >= utf8.RuneSelf {
			for _, r := range ms {
				if f := fold.String(string(r)); utf8.RuneCountInString(f) > 1 {
					out = ""
					for _, x := range f {
						if xr, ok := parent[x]; ok {
							x = rep[find(xr)]
						}
						out += string(x)
					}
					break
				}
			}
		}
		enc := make([]byte, 0, 3*len(out))
		for k := 0; k < len(out); k++ {
			if c := out[k]; c < utf8.RuneSelf {
				enc = append(enc, c)
			} else {
				enc = append(enc, '%', hexLower[c>>4], hexLower[c&15])
			}
		}
		for _, r := range ms {
			if r >= utf8.RuneSelf {
				m[r] = string(enc)
			}
		}
	}
	foldTable.m = m
}

// isLetterASCII reports whether c is an ASCII letter.
func isLetterASCII(c byte) bool { return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' }
