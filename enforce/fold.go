package enforce

// Case folding, for sites whose paths are case-insensitive (IIS, and file
// systems that ignore case): there "/PRIVATE/x" is "/private/x", so a rule
// written "Disallow: /private/" must govern both. RFC 9309 compares paths
// case-sensitively; folding is an option of the caller, which folds the
// robots.txt body before Parse and every target before Decide.

// FoldCase returns s with its ASCII letters lower-cased and each
// percent-escape of an ASCII letter ("%50", "%70") replaced by that letter
// lower-cased, so that every spelling of a path that differs only in the
// case of ASCII letters has one folded form, whatever normalisation follows
// (the matcher decodes escapes of unreserved octets). A "%" that starts no
// escape is written "%25", as normalisation writes it. Other escapes and
// non-ASCII octets are kept as they are: only ASCII letters are folded. It
// returns s itself, without allocating, when there is nothing to fold.
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

// foldStart returns the index of the first octet of s that folding
// changes, or -1.
func foldStart(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			return i
		}
		if c == '%' {
			if i+2 >= len(s) || !isEscape(s[i+1], s[i+2]) {
				return i // a bare "%", written "%25"
			}
			if _, ok := letterEscape(s[i+1], s[i+2]); ok {
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
		switch {
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		case c == '%':
			if i+2 >= len(s) || !isEscape(s[i+1], s[i+2]) {
				// A bare "%" is written as normalisation writes it, so
				// that a letter decoded after it cannot make an escape
				// of it ("%%610" is "%25a0", not "%a0").
				b = append(b, "%25"...)
				continue
			}
			if l, ok := letterEscape(s[i+1], s[i+2]); ok {
				b = append(b, l)
				i += 2
				continue
			}
			b = append(b, c)
		default:
			b = append(b, c)
		}
	}
	return b
}

// isEscape reports whether h and l are the two hex digits of an escape.
func isEscape(h, l byte) bool {
	_, ok1 := unhex(h)
	_, ok2 := unhex(l)
	return ok1 && ok2
}

// letterEscape decodes the hex digits of a percent-escape and reports
// whether it is an ASCII letter, returning it lower-cased.
func letterEscape(h, l byte) (byte, bool) {
	hi, ok1 := unhex(h)
	lo, ok2 := unhex(l)
	if !ok1 || !ok2 {
		return 0, false
	}
	c := hi<<4 | lo
	switch {
	case 'A' <= c && c <= 'Z':
		return c + 'a' - 'A', true
	case 'a' <= c && c <= 'z':
		return c, true
	}
	return 0, false
}
