package enforce

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Severity says how much a lint Finding matters.
type Severity uint8

// The severities of a Finding.
const (
	// Warning: the file works as RFC 9309 says, but probably not as its
	// author meant, or not the same way with every crawler.
	Warning Severity = iota
	// Error: part of the file is ignored by an RFC 9309 crawler, or
	// can never match anything.
	Error
)

// String returns "warning" or "error".
func (s Severity) String() string {
	if s == Error {
		return "error"
	}
	return "warning"
}

// Finding is one problem Lint found in a robots.txt file.
type Finding struct {
	Line     int      // 1-based line the finding is about; 0 for the whole file
	Severity Severity // Error or Warning
	Code     string   // a short stable name, such as "misspelt-key" or "shadowed-rule"
	Message  string   // what is wrong and what a crawler will do, for people
}

// String formats the finding as "line 3: error: message [code]".
func (f Finding) String() string {
	where := "file"
	if f.Line > 0 {
		where = "line " + strconv.Itoa(f.Line)
	}
	return where + ": " + f.Severity.String() + ": " + f.Message + " [" + f.Code + "]"
}

// knownRecords are the record keys Lint does not call unknown: the RFC 9309
// extensions in use (RFC 9309 §2.2.4), the AI-preference records, and the
// keys some crawlers read.
var knownRecords = map[string]bool{
	"sitemap": true, "host": true, "crawl-delay": true, "request-rate": true,
	"visit-time": true, "clean-param": true, "content-usage": true, "content-signal": true,
}

// Lint parses body as Parse does and reports what the parser skipped and
// what will surprise the file's author: misspelt keys that Google accepts
// but RFC 9309 ignores, rules outside any group, user-agent values that are
// not product tokens, rules that can never match, "$" in the middle of a
// pattern (a literal dollar, not an anchor), rules that can never decide
// because another rule of the same group always wins when they match
// ("shadowed-rule"), Allow and Disallow rules of equal length that match the
// same targets ("equal-length-conflict"), content beyond the 500 KiB
// RFC 9309 crawlers must read, and unknown records.
//
// Findings are sorted by line. Lint knows nothing of crawlers: whether a
// product token is one a real crawler uses is for the caller to check
// (see Robots.Groups).
func Lint(body []byte) []Finding {
	r := Parse(body)
	var fs []Finding
	add := func(line int, sev Severity, code, format string, args ...any) {
		fs = append(fs, Finding{Line: line, Severity: sev, Code: code, Message: fmt.Sprintf(format, args...)})
	}

	if r.Truncated() {
		first := bytes.Count(body[:r.Size()], []byte("\n")) + 1
		add(first, Error, "too-large",
			"the file is %d bytes; RFC 9309 §2.5 crawlers need read only the first %d (500 KiB): this line and everything after it may be ignored",
			len(body), MaxSize)
	}
	for _, s := range r.Skipped() {
		lintSkip(s, add)
	}

	seen := map[int]bool{}
	lintRecord := func(rec Record, inGroup bool) {
		if seen[rec.Line] {
			return
		}
		seen[rec.Line] = true
		k := strings.ToLower(rec.Key)
		switch {
		case k == "crawl-delay" || k == "request-rate":
			if !inGroup {
				add(rec.Line, Warning, "record-outside-group", "%s before any user-agent line applies to no group; ignored", rec.Key)
			}
		case k == "noindex" || k == "nofollow":
			add(rec.Line, Warning, "unknown-record", "%q is not a robots.txt record (Google stopped reading it in 2019); use a robots meta tag or X-Robots-Tag header", rec.Key)
		case !knownRecords[k]:
			add(rec.Line, Warning, "unknown-record", "unknown record %q; crawlers ignore it", rec.Key)
		}
	}
	for _, rec := range r.Records() {
		lintRecord(rec, false)
	}
	for _, g := range r.Groups() {
		for _, rec := range g.Records {
			lintRecord(rec, true)
		}
	}

	reported := map[string]bool{}
	once := func(key string) bool {
		if reported[key] {
			return false
		}
		reported[key] = true
		return true
	}
	for _, g := range r.Groups() {
		lintRules(g, once, add)
	}

	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Line < fs[j].Line })
	return fs
}

// lintSkip turns a line the parser skipped into a finding.
func lintSkip(s Skip, add func(int, Severity, string, string, ...any)) {
	text := strings.TrimSpace(s.Text)
	switch r := s.Reason; {
	case strings.HasPrefix(r, "misspelt key"):
		key, _, _ := strings.Cut(text, ":")
		want := misspelt(strings.TrimSpace(key))
		add(s.Line, Error, "misspelt-key",
			"%q is not %q: RFC 9309 crawlers ignore this line (Google's parser accepts the misspelling, so crawlers will disagree)",
			strings.TrimSpace(key), want)
	case strings.HasPrefix(r, "no colon"):
		msg := "no colon: not a record, every crawler that follows RFC 9309 ignores it"
		if i := strings.Index(r, "some parsers read it as "); i >= 0 {
			as := strings.TrimSuffix(r[i+len("some parsers read it as "):], "; ignored")
			msg = "no colon: RFC 9309 crawlers ignore this line, some others read it as " + strconv.Quote(as)
		}
		add(s.Line, Error, "no-colon", "%s", msg)
	case strings.HasPrefix(r, "rule before any user-agent"):
		add(s.Line, Error, "rule-outside-group", "%s comes before any User-agent line, so it belongs to no group and is ignored", text)
	case strings.HasPrefix(r, "user-agent value is not"):
		v := strings.TrimSpace(strings.TrimPrefix(text, "User-agent:"))
		msg := fmt.Sprintf("User-agent %q is not a product token (letters, digits, '-', '_', '.'), so it names no crawler", v)
		if t := tokenIn(v); t != "" && t != v {
			msg += fmt.Sprintf("; write %q", t)
		}
		add(s.Line, Error, "bad-user-agent", "%s", msg)
	case strings.HasPrefix(r, "invalid crawl-delay"), strings.HasPrefix(r, "invalid request-rate"):
		add(s.Line, Warning, "bad-value", "%s", r)
	case strings.HasPrefix(r, "partial line cut"):
		add(s.Line, Error, "too-large", "this line is cut by the 500 KiB limit and ignored")
	default:
		add(s.Line, Warning, "skipped", "%s", r)
	}
}

// tokenIn returns the product token a non-token user-agent value most
// likely meant: its first word, before any "/" version or trailing "*".
func tokenIn(v string) string {
	v = strings.TrimSpace(v)
	if f := strings.Fields(v); len(f) > 0 {
		v = f[0]
	}
	v, _, _ = strings.Cut(v, "/")
	v = strings.TrimRight(v, "*;,")
	if validToken(v) {
		return v
	}
	return ""
}

// lintRule is a rule with its pattern as a glob of symbols.
type lintRule struct {
	r    *Rule
	glob []int32 // bytes 0-255, escapes 256+octet, '*' as -1; prefix patterns end with -1
}

const globStar = -1

func lintRules(g *Group, once func(string) bool, add func(int, Severity, string, string, ...any)) {
	var live []lintRule
	for i := range g.Rules {
		ru := &g.Rules[i]
		if ru.Pattern == "" {
			continue
		}
		if c := ru.Pattern[0]; c != '/' && c != '*' {
			if once("never:" + strconv.Itoa(ru.Line)) {
				add(ru.Line, Error, "never-matches", "%s can never match: a pattern must start with \"/\" or \"*\" (write %q)",
					ruleText(ru), "/"+ru.Pattern)
			}
			continue
		}
		if k := strings.IndexByte(ru.Pattern, '$'); k >= 0 && k < len(ru.Pattern)-1 {
			if once("dollar:" + strconv.Itoa(ru.Line)) {
				add(ru.Line, Warning, "dollar-mid-pattern",
					"%s: \"$\" anchors the end only as the last character; here it matches a literal \"$\"", ruleText(ru))
			}
		}
		lint1994(ru, once, add)
		live = append(live, lintRule{r: ru, glob: globOf(parsePattern(ru.Pattern))})
	}
	if len(live) > 3000 {
		return // quadratic beyond this; such files are generated, not written
	}
	for i := range live {
		a := &live[i]
		for j := range live {
			if i == j {
				continue
			}
			b := &live[j]
			if beats(b.r, j, a.r, i) && globIncludes(b.glob, a.glob) {
				if !once("shadow:" + strconv.Itoa(a.r.Line)) {
					break
				}
				if a.r.Allow != b.r.Allow {
					add(a.r.Line, Warning, "shadowed-rule", "%s never takes effect in %s: %s matches every target it matches and wins",
						ruleText(a.r), g, b.r)
				} else {
					add(a.r.Line, Warning, "shadowed-rule", "%s is redundant in %s: %s matches every target it matches and says the same",
						ruleText(a.r), g, b.r)
				}
				break
			}
		}
	}
	for i := range live {
		a := &live[i]
		if a.r.Allow {
			continue
		}
		for j := range live {
			b := &live[j]
			if !b.r.Allow || b.r.Len() != a.r.Len() || !globsIntersect(a.glob, b.glob) {
				continue
			}
			if once("tie:" + strconv.Itoa(a.r.Line) + ":" + strconv.Itoa(b.r.Line)) {
				add(min(a.r.Line, b.r.Line), Warning, "equal-length-conflict",
					"%s and %s are equally long and match the same targets: RFC 9309 and Google let Allow win, other crawlers may not",
					b.r, a.r)
			}
		}
	}
}

func ruleText(r *Rule) string {
	s := r.String()
	return s[:strings.LastIndex(s, " (line ")]
}

// beats reports whether rule b (index j) wins over rule a (index i) when
// both match: longer, or as long and Allow against Disallow, or the same
// kind and earlier.
func beats(b *Rule, j int, a *Rule, i int) bool {
	switch {
	case b.Len() != a.Len():
		return b.Len() > a.Len()
	case b.Allow != a.Allow:
		return b.Allow
	}
	return j < i
}

// globOf turns a parsed pattern into symbols; a pattern without "$" matches
// as a prefix, so it gets a trailing star.
func globOf(p parsedPattern) []int32 {
	var g []int32
	for k, s := range p.segs {
		if k > 0 {
			g = append(g, globStar)
		}
		for i := 0; i < len(s); i++ {
			if v, n := octetAt(s, i); n == 3 {
				g = append(g, 256+int32(v))
				i += 2
				continue
			}
			g = append(g, int32(s[i]))
		}
	}
	if !p.anchored && (len(g) == 0 || g[len(g)-1] != globStar) {
		g = append(g, globStar)
	}
	return g
}

// globIncludes reports whether every string glob a matches also matches
// glob b: b, as a pattern, matches a's symbols, where a star of a can only
// be matched by a star of b.
func globIncludes(b, a []int32) bool {
	// m[j] after processing: b[j:] matches a[i:], computed from the end.
	n, m := len(a), len(b)
	prev := make([]bool, m+1) // row i+1
	cur := make([]bool, m+1)
	// Row n: b[j:] matches the empty string iff it is all stars.
	prev[m] = true
	for j := m - 1; j >= 0; j-- {
		prev[j] = b[j] == globStar && prev[j+1]
	}
	for i := n - 1; i >= 0; i-- {
		cur[m] = false
		for j := m - 1; j >= 0; j-- {
			if b[j] == globStar {
				cur[j] = cur[j+1] || prev[j] // star matches nothing, or eats a[i]
			} else {
				cur[j] = a[i] != globStar && a[i] == b[j] && prev[j+1]
			}
		}
		prev, cur = cur, prev
	}
	return prev[0]
}

// globsIntersect reports whether some string matches both globs.
func globsIntersect(a, b []int32) bool {
	n, m := len(a), len(b)
	seen := make([]bool, (n+1)*(m+1))
	var stack [][2]int
	push := func(i, j int) {
		if !seen[i*(m+1)+j] {
			seen[i*(m+1)+j] = true
			stack = append(stack, [2]int{i, j})
		}
	}
	push(0, 0)
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		i, j := s[0], s[1]
		if i == n && j == m {
			return true
		}
		as := i < n && a[i] == globStar
		bs := j < m && b[j] == globStar
		if as {
			push(i+1, j)
		}
		if bs {
			push(i, j+1)
		}
		switch {
		case as && j < m && !bs:
			push(i, j+1) // a's star eats b's symbol
		case bs && i < n && !as:
			push(i+1, j)
		case i < n && j < m && !as && !bs && a[i] == b[j]:
			push(i+1, j+1)
		}
	}
	return false
}

// classicCrawlers are crawlers known to read robots.txt by the 1994
// standard: plain prefixes, "*" and "$" as literal characters, no Allow.
// They were observed doing so against a test site (see the README's
// fairness rules).
const classicCrawlers = "GNU Wget, Wget2, HTTrack, LinkChecker and ht://Dig"

// lint1994 warns about a rule that crawlers following the 1994 standard
// read differently from RFC 9309: such crawlers ask for the URLs the rule
// means to disallow, are refused, and (by the fairness rules) collect no
// strike for it.
func lint1994(ru *Rule, once func(string) bool, add func(int, Severity, string, string, ...any)) {
	if !ru.Allow && strings.ContainsAny(ru.Pattern, "*$") {
		if once("1994:" + strconv.Itoa(ru.Line)) {
			hint := ""
			if p := plainPrefix(ru.Pattern); p != "/" {
				hint = fmt.Sprintf("; a plain prefix (for example %q) is read the same by every crawler", p)
			}
			add(ru.Line, Warning, "read-literally-1994",
				"%s: crawlers that follow the 1994 standard (%s) read \"*\" and \"$\" as literal characters, so they will request what this rule disallows, be refused and collect no strike%s",
				ruleText(ru), classicCrawlers, hint)
		}
	}
}

// plainPrefix is the literal prefix of a pattern, up to its first "*" or
// "$": what a 1994-standard crawler can match as written.
func plainPrefix(p string) string {
	if i := strings.IndexAny(p, "*$"); i >= 0 {
		p = p[:i]
	}
	if p == "" {
		return "/"
	}
	return p
}
