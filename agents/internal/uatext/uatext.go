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
//   - else the first product when it is not a browser's nor a URL's scheme
//     ("ExampleCrawler/1.0 (+https://example.com/bot)" -> "ExampleCrawler",
//     but "http://example.com/bot" names nothing);
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
	rest := strings.TrimLeft(ua, " ")
	first := LeadingToken(rest)
	if first != "" && !IsBrowserProduct(first) && !isVersion(first) && !IsDomain(first) && !strings.HasPrefix(rest[len(first):], "://") {
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

// A PartKind says where a Part stands in a User-Agent.
type PartKind uint8

// The kinds of Part.
const (
	// Product is a product outside any comment, with or without its
	// version: "Mozilla/5.0", "Chrome/131.0.0.0", "Mobile", "Instagram".
	Product PartKind = iota
	// Comment is an item of a comment ("Windows NT 10.0", "wv",
	// "Build/QP1A.190711.020" between parentheses) or of a bracketed list
	// ("FBAV/540.0.0.49.148" in Facebook's "[FB_IAB/FB4A;FBAV/...]").
	Comment
	// Compatible is the item of a comment that follows "compatible", where
	// a client names itself: "MSIE 10.0" in "(compatible; MSIE 10.0;
	// Windows NT 6.1)", "ContentGrabber/3.1" in "(compatible;
	// ContentGrabber/3.1)".
	Compatible
)

// A Part is one product or comment item of a User-Agent.
type Part struct {
	// Text is the product ("Chrome/131.0.0.0") or the comment item
	// ("Windows NT 10.0"), without the spaces around it.
	Text string
	// At is the offset of Text in the User-Agent.
	At int
	// Kind says where Text stands.
	Kind PartKind
}

// Parts calls f with each product and comment item of ua, in order, until f
// returns false. It reads the grammar of RFC 9110 §10.1.5 (products
// separated by spaces, comments in parentheses, which may nest) as real
// User-Agents bend it: a ';' also ends a product ("DuckDuckBot/1.1;"), a
// comment may follow a product without a space ("MicroMessenger/8.0.47(0x28002F30)"),
// the items of a comment are separated by ';' or ',' ("KHTML, like Gecko"),
// a bracketed list is read as a comment whose items are separated by ';'
// only ("[FBAN/FBIOS;FBDV/iPhone14,2]"), and a comment or list left open
// runs to the end. It does not allocate.
func Parts(ua string, f func(Part) bool) {
	i := 0
	for i < len(ua) {
		switch c := ua[i]; c {
		case ' ', '\t', ';', ',', ')', ']':
			i++
		case '(', '[':
			var ok bool
			if i, ok = comment(ua, i, f); !ok {
				return
			}
		default:
			j := i
			for j < len(ua) && !isProductEnd(ua[j]) {
				j++
			}
			if !f(Part{Text: ua[i:j], At: i, Kind: Product}) {
				return
			}
			i = j
		}
	}
}

func isProductEnd(c byte) bool {
	return c == ' ' || c == '\t' || c == '(' || c == '[' || c == ';' || c == ')' || c == ']'
}

// comment reads the comment or bracketed list that opens at ua[i], calls f
// with its items, and returns the offset after it and false when f asked to
// stop.
func comment(ua string, i int, f func(Part) bool) (int, bool) {
	open, closing := ua[i], byte(')')
	if open == '[' {
		closing = ']'
	}
	depth := 1
	start := i + 1
	compatible := false
	// item ends the item ua[start:end] and reports whether to go on.
	item := func(end int) bool {
		s, e := start, end
		for s < e && (ua[s] == ' ' || ua[s] == '\t') {
			s++
		}
		for e > s && (ua[e-1] == ' ' || ua[e-1] == '\t') {
			e--
		}
		if s == e {
			return true
		}
		kind := Comment
		if compatible {
			kind = Compatible
		}
		text := ua[s:e]
		compatible = len(text) == len("compatible") && strings.EqualFold(text, "compatible")
		return f(Part{Text: text, At: s, Kind: kind})
	}
	j := i + 1
	for ; j < len(ua); j++ {
		c := ua[j]
		switch {
		case c == open:
			if !item(j) {
				return j, false
			}
			depth++
			start = j + 1
		case c == closing:
			if !item(j) {
				return j, false
			}
			depth--
			start = j + 1
			if depth == 0 {
				return j + 1, true
			}
		case c == ';' || c == ',' && open == '(':
			if !item(j) {
				return j, false
			}
			start = j + 1
		}
	}
	return j, item(j)
}

// ProductNames returns the names a User-Agent gives its products, in
// order, as the catalogue reads them to tell a product token from a word of
// a longer name.
//
// Outside comments it reads RFC 9110's grammar: every word is a product,
// named by its leading token (LeadingToken): "Googlebot" of "Googlebot/2.1",
// "Slackbot-LinkExpanding" of "Slackbot-LinkExpanding 1.0", "008" of
// "008/0.83", "WeSEE" of "WeSEE:Search/0.1", each of "Sogou", "web" and
// "spider" of "Sogou web spider/4.0". A version ("1.0", "3.0x"), a URL
// and an e-mail address name nothing; a "+" before a name is dropped.
//
// In a comment, where RFC 9110 allows any text, the words of an item up to
// a '/', a version, a dash or the end name one product: "Googlebot" of
// "compatible; Googlebot/2.1; +http://...", "HTTrack" of "HTTrack 3.0x",
// "monitis" of "monitis - premium monitoring service". A URL or an e-mail
// address ends a name too, and what follows it may start another; a host
// name is a name of its own ("ggpht.com" and "GoogleImageProxy" of "via
// ggpht.com GoogleImageProxy", "Dataprovider.com" of "compatible;
// Dataprovider.com"). A name
// of several words is returned whole ("Yahoo! Slurp", "Ask Jeeves" of
// "Ask Jeeves/Teoma", "Twingly Recon"): none of its words is a product's
// name, and what follows a '/' is a version, never a name.
func ProductNames(ua string) []string {
	var names []string
	Parts(ua, func(p Part) bool {
		if p.Kind == Product {
			if n := productWordName(p.Text); n != "" {
				names = append(names, n)
			}
			return true
		}
		var phrase []string
		flush := func() {
			if n := strings.TrimRight(strings.Join(phrase, " "), ".,:;!"); n != "" {
				names = append(names, n)
			}
			phrase = phrase[:0]
		}
		for _, w := range strings.Fields(p.Text) {
			if isMark(w) {
				flush()
				continue
			}
			if d := strings.TrimRight(w, ".,:;"); IsDomain(d) {
				flush()
				phrase = append(phrase, d)
				flush()
				continue
			}
			if isVersionWord(w) || w == "-" || w == "|" {
				break
			}
			if k := strings.IndexByte(w, '/'); k >= 0 {
				if k > 0 {
					phrase = append(phrase, w[:k])
				}
				break
			}
			phrase = append(phrase, w)
		}
		flush()
		return true
	})
	return names
}

// productWordName returns the name of the product word w outside a
// comment, or "" for a URL, an e-mail address or a version.
func productWordName(w string) string {
	w = strings.TrimPrefix(w, "+")
	if strings.Contains(w, "://") {
		return ""
	}
	n := LeadingToken(w)
	if len(n) < len(w) && w[len(n)] == '/' {
		return n // a name, even "008" of "008/0.83"
	}
	if strings.Contains(w, "@") || isVersionWord(w) {
		return ""
	}
	return n
}

// isMark reports whether w is a URL, a "+" mark before one, or an e-mail
// address.
func isMark(w string) bool {
	return strings.Contains(w, "://") || strings.HasPrefix(w, "+") || strings.Contains(w, "@")
}

// isVersionWord reports whether the word w is a version ("2.1", "3.0x",
// "v1.4.8") rather than a name ("360Spider", "2ip.ru").
func isVersionWord(w string) bool {
	if !isVersion(w) || IsDomain(w) {
		return false
	}
	run := 0
	for i := 0; i < len(w); i++ {
		if c := w[i] | 0x20; c >= 'a' && c <= 'z' {
			if run++; run >= 4 {
				return false
			}
		} else {
			run = 0
		}
	}
	return true
}
