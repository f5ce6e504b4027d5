package enforce

import (
	"crypto/sha256"
	"strings"
)

// RulesFingerprint returns a hash of what the file says to crawlers: its
// user-agent lines, rules, Crawl-delay and Request-rate, AI usage
// preferences and other records, in file order. Comments, blank lines,
// Sitemap and Host lines, line numbers, whitespace around keys and values,
// the case of keys, line endings and a byte order mark do not count. Two
// files with the same fingerprint get the same decisions for every crawler
// and target, and their explanations differ only in line numbers.
//
// A site whose robots.txt carries a timestamp comment, or its own Host in a
// Sitemap line, serves a new body on every fetch; the fingerprint tells the
// caller that the rules did not change. Lines that RFC 9309 ignores but
// other parsers read (a misspelt key, a line without a colon) count, so the
// readings of other parsers (see [Robots.Readings]) are covered as well,
// except that the 1994 standard ends a record at a blank line, which the
// fingerprint does not see.
//
// A nil *Robots has the fingerprint of an empty file.
func (r *Robots) RulesFingerprint() [32]byte {
	h := sha256.New()
	if r != nil {
		var b []byte
		forEachLine(r.src, func(_ int, raw string) {
			b = appendRuleLine(b[:0], raw)
			if len(b) > 0 {
				b = append(b, '\n')
				h.Write(b)
			}
		})
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// appendRuleLine appends the normal form of one line as RulesFingerprint
// reads it to b: nothing for a blank or comment line or a Sitemap or Host
// record, "key:value" (the key lower-cased, both trimmed) for a record, and
// the trimmed text for a line without a colon.
func appendRuleLine(b []byte, raw string) []byte {
	ln := raw
	if k := strings.IndexByte(ln, '#'); k >= 0 {
		ln = ln[:k]
	}
	ln = trim(ln)
	if ln == "" {
		return b
	}
	c := strings.IndexByte(ln, ':')
	if c < 0 {
		return append(b, ln...)
	}
	key, val := trim(ln[:c]), trim(ln[c+1:])
	if equalFold(key, "sitemap") || equalFold(key, "host") {
		return b
	}
	for i := 0; i < len(key); i++ {
		b = append(b, lowerASCII(key[i]))
	}
	b = append(b, ':')
	return append(b, val...)
}
