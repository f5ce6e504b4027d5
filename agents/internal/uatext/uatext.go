// Package uatext holds the User-Agent text helpers shared by the agents
// package and its catalogue generator: what counts as a word, where a word
// may start and end, and which product name an unknown client carries.
package uatext

import "strings"

// IsWordByte reports whether c may be part of a product name: ASCII letters,
// digits, '-', '_' and '.'.
func IsWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// WordAt reports whether s[i:j] is a whole word of the User-Agent: not glued
// to a longer name, not a label of a host name or e-mail address, and not a
// path segment of a URL. "Googlebot" is a word of "Googlebot/2.1" but not of
// "Googlebot-Image/1.0", "openai.com/gptbot" or "claudebot@anthropic.com".
func WordAt(s string, i, j int) bool {
	if i > 0 {
		c := s[i-1]
		if isAlnum(c) || c == '-' || c == '_' || c == '.' || c == '/' || c == '@' {
			return false
		}
	}
	if j < len(s) {
		c := s[j]
		if isAlnum(c) || c == '-' || c == '_' {
			return false
		}
		if (c == '.' || c == '@') && j+1 < len(s) && isAlnum(s[j+1]) {
			return false
		}
	}
	return true
}

// IsDomain reports whether w looks like a host name ("example.com") rather
// than a product name ("archive.org_bot", "Mozilla").
func IsDomain(w string) bool {
	k := strings.LastIndexByte(w, '.')
	if k <= 0 || k == len(w)-1 || strings.ContainsRune(w, '_') {
		return false
	}
	tld := w[k+1:]
	if len(tld) < 2 || len(tld) > 6 {
		return false
	}
	for i := 0; i < len(tld); i++ {
		c := tld[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// LeadingToken returns the longest prefix of s made of word bytes, without a
// trailing '.' or '-': the part of a robots.txt user-agent value that a
// product-token matcher reads ("Brightbot 1.0" -> "Brightbot",
// "iaskspider/2.0" -> "iaskspider").
func LeadingToken(s string) string {
	i := 0
	for i < len(s) && IsWordByte(s[i]) {
		i++
	}
	return strings.TrimRight(s[:i], ".-")
}

// browserProducts are the product names of ordinary browser User-Agents;
// they never name an unknown automated client.
var browserProducts = map[string]bool{
	"mozilla": true, "applewebkit": true, "khtml": true, "gecko": true, "chrome": true,
	"safari": true, "version": true, "mobile": true, "firefox": true, "edg": true,
	"edge": true, "opr": true, "opera": true, "presto": true, "trident": true,
	"like": true, "compatible": true, "msie": true, "crios": true, "fxios": true,
	"samsungbrowser": true, "yabrowser": true, "gsa": true, "windows": true,
	"linux": true, "android": true, "u": true, "x11": true, "macintosh": true,
	"iphone": true, "ipad": true, "build": true, "wv": true,
}

// IsBrowserProduct reports whether name (any case) is a product of ordinary
// browser User-Agents, such as Mozilla, AppleWebKit or Safari.
func IsBrowserProduct(name string) bool {
	if len(name) > 16 {
		return false
	}
	var buf [16]byte
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return browserProducts[string(buf[:len(name)])]
}

// HasBotWord reports whether the word w (any case) contains one of the
// syllables automated clients use to name themselves: bot, crawl, spider,
// spyder, scrap(e/er), fetch, slurp, archiver, headless. The phone maker
// Cubot is not a bot.
func HasBotWord(w string) bool {
	if len(w) < 3 || hasPrefixFold(w, "cubot") {
		return false
	}
	for i := 0; i+3 <= len(w); i++ {
		r := w[i:]
		switch w[i] | 0x20 {
		case 'b':
			if hasPrefixFold(r, "bot") {
				return true
			}
		case 'c':
			if hasPrefixFold(r, "crawl") {
				return true
			}
		case 's':
			if hasPrefixFold(r, "spider") || hasPrefixFold(r, "spyder") || hasPrefixFold(r, "scrap") || hasPrefixFold(r, "slurp") {
				return true
			}
		case 'f':
			if hasPrefixFold(r, "fetch") {
				return true
			}
		case 'a':
			if hasPrefixFold(r, "archiver") {
				return true
			}
		case 'h':
			if hasPrefixFold(r, "headless") {
				return true
			}
		}
	}
	return false
}

func hasPrefixFold(s, lowerPrefix string) bool {
	if len(s) < len(lowerPrefix) {
		return false
	}
	for i := 0; i < len(lowerPrefix); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lowerPrefix[i] {
			return false
		}
	}
	return true
}

// Words calls f with each word of s (a maximal run of word bytes, without
// trailing dots) and its offset, until f returns false.
func Words(s string, f func(w string, at int) bool) {
	i := 0
	for i < len(s) {
		for i < len(s) && !IsWordByte(s[i]) {
			i++
		}
		j := i
		for j < len(s) && IsWordByte(s[j]) {
			j++
		}
		w := strings.TrimRight(s[i:j], ".")
		if w != "" && !f(w, i) {
			return
		}
		i = j
	}
}

// NameOf returns the product name an automated client's User-Agent carries,
// or "" when it carries none:
//
//   - the first name after "compatible;" in a comment
//     ("Mozilla/5.0 (compatible; SomeBot/1.0; +http://…)" -> "SomeBot"),
//     unless it is a browser's (MSIE);
//   - else the first product when it is not a browser's
//     ("ExampleCrawler/1.0 (+https://example.com/bot)" -> "ExampleCrawler");
//   - else the first word that names a bot ("… Safari/537.36 FooBot/2.0");
//   - else the last product that is not a browser's
//     ("… Safari/537.36 Acme-Preview/3").
func NameOf(ua string) string {
	if k := indexFold(ua, "compatible;"); k >= 0 {
		rest := strings.TrimLeft(ua[k+len("compatible;"):], " ")
		if n := LeadingToken(rest); len(n) >= 2 && !IsBrowserProduct(n) && !IsDomain(n) && !isVersion(n) {
			return n
		}
	}
	first := LeadingToken(strings.TrimLeft(ua, " "))
	if first != "" && !IsBrowserProduct(first) && !isVersion(first) && !IsDomain(first) {
		return first
	}
	name := ""
	Words(ua, func(w string, at int) bool {
		if !WordAt(ua, at, at+len(w)) || IsDomain(w) {
			return true
		}
		if HasBotWord(w) {
			name = w
			return false
		}
		return true
	})
	if name != "" {
		return name
	}
	// The last product ("Name/version") that is not a browser's.
	for i := len(ua) - 1; i > 0; i-- {
		if ua[i] != '/' || !IsWordByte(ua[i-1]) {
			continue
		}
		j := i
		for j > 0 && IsWordByte(ua[j-1]) {
			j--
		}
		if j > 0 && (ua[j-1] == '/' || ua[j-1] == ':') {
			continue // a URL
		}
		n := strings.TrimRight(ua[j:i], ".-")
		if n != "" && !IsBrowserProduct(n) && !isVersion(n) && !IsDomain(n) {
			return n
		}
	}
	return ""
}

func isVersion(s string) bool {
	return s != "" && (s[0] >= '0' && s[0] <= '9' || (s[0] == 'v' || s[0] == 'V') && len(s) > 1 && s[1] >= '0' && s[1] <= '9')
}

// indexFold is strings.Index for an ASCII lower-case needle, ignoring the
// case of s, without allocating.
func indexFold(s, lowerNeedle string) int {
	n := len(lowerNeedle)
	for i := 0; i+n <= len(s); i++ {
		ok := true
		for j := 0; j < n; j++ {
			c := s[i+j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lowerNeedle[j] {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

// IndexFold is strings.Index for an ASCII lower-case needle, ignoring the
// case of s, without allocating.
func IndexFold(s, lowerNeedle string) int { return indexFold(s, lowerNeedle) }
