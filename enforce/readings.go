package enforce

import (
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Reading names one way real crawlers read a robots.txt file.
type Reading uint8

// The readings that [Robots.Readings] weighs.
const (
	// ReadingRFC9309 is RFC 9309 as this package reads it ([Robots.Decide]).
	ReadingRFC9309 Reading = iota + 1
	// Reading1994 is the 1994 robots exclusion standard as CPython's
	// legacy urllib.robotparser implements it (and Wget, HTTrack,
	// ht://Dig, LinkChecker read it): plain prefixes, no wildcards.
	Reading1994
	// ReadingGoogle is Google's open-source parser (google/robotstxt): RFC
	// 9309 matching, but lenient about misspelt keys and missing colons,
	// user-agent values cut to their leading letters, '-' and '_', lines
	// cut at 16,663 bytes, and an Allow of ".../index.htm..." also
	// allowing its directory.
	ReadingGoogle
)

// String returns "RFC 9309", "1994 standard" or "Google".
func (r Reading) String() string {
	switch r {
	case ReadingRFC9309:
		return "RFC 9309"
	case Reading1994:
		return "1994 standard"
	case ReadingGoogle:
		return "Google"
	}
	return "Reading(" + strconv.Itoa(int(r)) + ")"
}

// Readings is the answer of [Robots.Readings]: whether a target is
// disallowed however a real crawler reads the file.
type Readings struct {
	// Unambiguous reports that every reading disallows the target: RFC
	// 9309, the 1994 standard and Google's parser. Only then has a crawler
	// that asked for it certainly ignored robots.txt.
	Unambiguous bool
	// Lenient is, when Unambiguous is false, a reading under which the
	// target is allowed (the first of RFC 9309, 1994 standard, Google);
	// 0 when Unambiguous is true.
	Lenient Reading
	// Line is the line of the file that the explanation points at; 0 when
	// it points at none.
	Line int
	// Why explains, for a person, why the Lenient reading allows the
	// target, e.g. "wildcard rules are not understood by crawlers that
	// follow the 1994 standard: Disallow: /*?q= (line 3)". Empty when
	// Unambiguous.
	Why string
}

// Readings reports whether target (a path with an optional query, as for
// [Group.Decide]) is disallowed for the crawler with the chain of product
// tokens (most specific first, as [Robots.SelectIndex] takes them; wildcard
// false for crawlers that ignore "*" groups) under every reading that real
// parsers use:
//
//   - RFC 9309, as [Robots.Decide] reads it;
//   - the 1994 standard, read the way CPython's legacy urllib.robotparser
//     reads it, the most lenient of the real 1994 parsers: records are
//     separated by empty lines (an empty line right after user-agent lines
//     drops them; rules outside a record are ignored) and a user-agent line
//     after a rule, Crawl-delay or Request-rate line starts a new record;
//     the crawler reads the first record one of whose user-agent values
//     (cut at "/") is a case-insensitive substring of its token, else the
//     first record naming "*" (when wildcard is true), and nothing else;
//     in it, the first rule in file order whose value is a plain prefix of
//     the target decides ("*" and "$" are literal characters; Allow lines
//     are honoured in that order, which only ever allows more than a
//     parser that ignores them; an empty Disallow allows everything);
//   - Google's parser: keys matched by prefix with its typo list
//     ("Dissallow", "useragent", "User agent", ...), "Key value" without a
//     colon when the line has exactly two words, user-agent values cut to
//     their leading [A-Za-z_-] characters, groups ended only by a
//     user-agent line after a rule; every line cut after its first 16,663
//     bytes; an Allow value whose part from its last "/" starts with
//     "/index.htm" also allows that directory exactly (Allow:
//     /dir/index.html also allows /dir/, as Allow: /dir/$ would, with
//     that pattern's length); longest match, allow wins ties.
//
// Unambiguous is true only when all three disallow target; otherwise the
// answer names a reading that allows it and says why, pointing at a line.
// Refuse by the RFC reading; count a refusal against the crawler (a strike)
// only when the answer is Unambiguous.
//
// The first call on a *Robots builds the other readings from the file (a
// pass over its lines, and a parse of Google's reading when it differs);
// later calls reuse them. A call costs a normalisation of target, a
// prefix scan of the rules of one 1994 record, and at most two compiled
// decisions; it allocates only the explanation. A nil *Robots allows
// everything.
func (r *Robots) Readings(tokens []string, wildcard bool, target string) Readings {
	if r == nil {
		return Readings{Lenient: ReadingRFC9309, Why: "there is no robots.txt: everything is allowed"}
	}
	rd := r.Select(tokens, wildcard).Decide(target)
	if rd.Allowed {
		return Readings{Lenient: ReadingRFC9309, Why: "RFC 9309 allows this path (" + rd.String() + ")"}
	}
	alt := r.alt.get(r)

	// The 1994 reading.
	var small [512]byte
	t, big := normalTarget(&small, target)
	defer releaseTarget(big)
	rec, ri := alt.old.decide(tokens, wildcard, t)
	if rec == nil || ri < 0 || rec.rules[ri].allow {
		line, why := alt.old.explain(rd, rec, ri)
		return Readings{Lenient: Reading1994, Line: line, Why: why}
	}

	// Google's reading, when the file reads differently there.
	if alt.google != nil {
		// Google's library compares the caller's agent as given; the
		// chain is followed as Select does.
		gd := alt.google.Select(tokens, wildcard).Decide(target)
		if gd.Allowed {
			line, why := alt.explainGoogle(rd, gd, tokens)
			return Readings{Lenient: ReadingGoogle, Line: line, Why: why}
		}
	}
	return Readings{Unambiguous: true}
}

// altReadings holds the readings of other parsers, built once per *Robots.
type altReadings struct {
	once sync.Once
	v    *alternatives
}

func (a *altReadings) get(r *Robots) *alternatives {
	a.once.Do(func() { a.v = buildAlternatives(r.src) })
	return a.v
}

// alternatives are the file as the 1994 standard and Google read it.
type alternatives struct {
	old    oldReading
	google *Robots      // nil when Google reads the file as RFC 9309 does
	fixes  map[int]gfix // lines Google reads differently, by line number
	fixOrd []int        // their line numbers, in file order
	index  map[int]gfix // Allow lines added by Google's index.html rule, by line of the rewrite
	srcOf  []int        // line of the rewrite Google's reading is parsed from -> line of the file
}

// gfix is a line that Google's parser reads although RFC 9309 does not, or
// reads differently.
type gfix struct {
	kind  uint8  // fixKey, fixColon, fixCut, fixLong, fixIndex
	key   string // the key as written
	value string // the value as written
	cut   string // fixCut: the value Google keeps; fixIndex: the pattern it adds
}

const (
	fixKey   = iota + 1 // a misspelt or prefixed key
	fixColon            // no colon
	fixCut              // a user-agent value cut
	fixLong             // a line cut at googleMaxLine bytes
	fixIndex            // an Allow line added by the index.html rule
)

// oldReading is the file as a 1994-standard parser reads it.
type oldReading struct {
	records []oldRecord
	def     int       // index of the first "*" record, -1 if none
	ruleRec []lineRec // every rule line in a record, in file order
}

// lineRec says which record the rule on a line belongs to: an index into
// records, or -1 for a "*" record after the first (which nobody reads).
type lineRec struct{ line, rec int32 }

// recordOf returns the record index of the rule on line n, and whether the
// rule belongs to any record.
func (o *oldReading) recordOf(n int) (int, bool) {
	i := sort.Search(len(o.ruleRec), func(i int) bool { return int(o.ruleRec[i].line) >= n })
	if i < len(o.ruleRec) && int(o.ruleRec[i].line) == n {
		return int(o.ruleRec[i].rec), true
	}
	return 0, false
}

type oldRecord struct {
	line   int      // line of its first user-agent line
	agents []string // lower-cased values cut at "/", without "*" and ""
	star   bool
	rules  []oldRule
}

type oldRule struct {
	path  string // normal form; "" matches everything
	allow bool   // an Allow, or an empty Disallow (which allows everything)
	line  int
	text  string // the line as written, trimmed, for explanations
}

// forEachLine calls f with each line of src and its number, as the RFC
// parser splits them (CR, LF, CRLF; a leading BOM skipped).
func forEachLine(src string, f func(n int, line string)) {
	s := strings.TrimPrefix(src, "\uFEFF")
	n := 1
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' && s[i] != '\r' {
			i++
		}
		f(n, s[:i])
		if i < len(s) && s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		if i < len(s) {
			i++
		}
		s = s[i:]
		n++
	}
}

func buildAlternatives(src string) *alternatives {
	a := &alternatives{old: buildOld(src)}
	a.buildGoogle(src)
	return a
}

// buildOld reads src as CPython's legacy urllib.robotparser does.
func buildOld(src string) oldReading {
	o := oldReading{def: -1}
	const (
		start   = iota // no record open
		agents         // user-agent lines seen
		content        // rules (or Crawl-delay, Request-rate) seen
	)
	state := start
	var cur oldRecord
	add := func() {
		i := len(o.records)
		if cur.star {
			if o.def >= 0 {
				for _, rl := range cur.rules {
					o.ruleRec = append(o.ruleRec, lineRec{int32(rl.line), -1})
				}
				cur = oldRecord{}
				return // only the first "*" record counts
			}
			o.def = i
		}
		for _, rl := range cur.rules {
			o.ruleRec = append(o.ruleRec, lineRec{int32(rl.line), int32(i)})
		}
		o.records = append(o.records, cur)
		cur = oldRecord{}
	}
	forEachLine(src, func(n int, raw string) {
		if raw == "" {
			switch state {
			case agents:
				cur = oldRecord{}
				state = start
			case content:
				add()
				state = start
			}
			return
		}
		ln := raw
		if k := strings.IndexByte(ln, '#'); k >= 0 {
			ln = ln[:k]
		}
		ln = strings.TrimSpace(ln)
		key, val, ok := strings.Cut(ln, ":")
		if !ok {
			return
		}
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
		switch key {
		case "user-agent":
			if state == content {
				add()
			}
			if cur.line == 0 {
				cur.line = n
			}
			if val == "*" {
				cur.star = true
			} else if v, _, _ := strings.Cut(val, "/"); strings.TrimSpace(v) != "" {
				cur.agents = append(cur.agents, strings.ToLower(strings.TrimSpace(v)))
			}
			state = agents
		case "allow", "disallow":
			if state == start {
				return
			}
			cur.rules = append(cur.rules, oldRule{
				path:  string(appendNormal(nil, val)),
				allow: key == "allow" || val == "",
				line:  n,
				text:  ln,
			})
			state = content
		case "crawl-delay", "request-rate":
			if state != start {
				state = content
			}
		}
	})
	if state == content {
		add()
	}
	return o
}

// record returns the record the crawler reads, or nil.
func (o *oldReading) record(tokens []string, wildcard bool) *oldRecord {
	for _, tok := range tokens {
		for i := range o.records {
			rec := &o.records[i]
			if rec.star {
				continue // urllib keeps "*" records apart, as the default
			}
			for _, a := range rec.agents {
				if containsFold(tok, a) {
					return rec
				}
			}
		}
	}
	if wildcard && o.def >= 0 {
		return &o.records[o.def]
	}
	return nil
}

// decide returns the record the crawler reads and the index of the first
// rule of it that is a prefix of t (a target in normal form), or -1.
func (o *oldReading) decide(tokens []string, wildcard bool, t string) (*oldRecord, int) {
	rec := o.record(tokens, wildcard)
	if rec == nil {
		return nil, -1
	}
	for i := range rec.rules {
		if strings.HasPrefix(t, rec.rules[i].path) {
			return rec, i
		}
	}
	return rec, -1
}

// explain says why the 1994 reading allows a target that RFC decision rd
// refuses; rec and ri are the 1994 record and rule (ri < 0: none).
func (o *oldReading) explain(rd Decision, rec *oldRecord, ri int) (int, string) {
	rule := rd.Rule // not nil: rd refused
	idx, inRecord := o.recordOf(rule.Line)
	if !inRecord {
		return rule.Line, rule.String() + " belongs to no record for a crawler that follows the 1994 standard: an empty line before it ends the record"
	}
	if rec == nil {
		return 0, "no record of robots.txt applies to a crawler that follows the 1994 standard (it reads only the first record whose user-agent is part of its name, else the first \"*\" record), so it may fetch anything"
	}
	if idx < 0 {
		return rule.Line, rule.String() + " is in a second \"*\" record, and a crawler that follows the 1994 standard reads only the first"
	}
	if &o.records[idx] != rec {
		return rec.line, "a crawler that follows the 1994 standard reads the first matching record (line " + strconv.Itoa(rec.line) + ") and it allows this path"
	}
	// The refusing rule is in the record the crawler reads.
	if ri >= 0 && rec.rules[ri].allow {
		r := rec.rules[ri]
		if r.path == "" && !strings.HasPrefix(strings.ToLower(r.text), "allow") {
			return r.line, "an empty Disallow (line " + strconv.Itoa(r.line) + ") allows everything for a crawler that follows the 1994 standard, which obeys the first matching line of its record"
		}
		return r.line, "a crawler that follows the 1994 standard obeys the first matching line of its record, " + r.text + " (line " + strconv.Itoa(r.line) + ")"
	}
	p := rule.Pattern
	where := ": " + rule.String()
	switch {
	case strings.IndexByte(strings.TrimSuffix(p, "$"), '*') >= 0:
		return rule.Line, "wildcard rules are not understood by crawlers that follow the 1994 standard" + where
	case strings.HasSuffix(p, "$"):
		return rule.Line, "`$` is a literal character for crawlers that follow the 1994 standard" + where
	}
	return rule.Line, "a crawler that follows the 1994 standard compares " + rule.String() + " as a plain prefix, and it is not a prefix of this path"
}

// containsFold reports whether sub (lower-case) occurs in s, ignoring
// ASCII case.
func containsFold(s, sub string) bool {
	if len(sub) > len(s) {
		return false
	}
outer:
	for i := 0; i+len(sub) <= len(s); i++ {
		for j := 0; j < len(sub); j++ {
			if lowerASCII(s[i+j]) != sub[j] {
				continue outer
			}
		}
		return true
	}
	return false
}

// Google's key spellings, matched by prefix, case-insensitively.
var (
	googleUA       = []string{"user-agent", "useragent", "user agent"}
	googleAllow    = []string{"allow"}
	googleDisallow = []string{"disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"}
)

func hasPrefixFold(s string, list []string) bool {
	for _, p := range list {
		if len(s) >= len(p) && equalFold(s[:len(p)], p) {
			return true
		}
	}
	return false
}

// googleCut returns the user-agent value as Google's parser keeps it: "*"
// for "*" alone or followed by whitespace, else the leading run of
// [A-Za-z_-].
func googleCut(v string) string {
	if v == "*" || strings.HasPrefix(v, "*") && len(v) > 1 && isSpace(v[1]) {
		return "*"
	}
	i := 0
	for i < len(v) && (v[i] >= 'a' && v[i] <= 'z' || v[i] >= 'A' && v[i] <= 'Z' || v[i] == '-' || v[i] == '_') {
		i++
	}
	return v[:i]
}

// googleMaxLine is the number of bytes of a line that Google's parser
// keeps (its line buffer is 8 × 2083 bytes, one of them for the final
// NUL); the rest of a longer line is dropped.
const googleMaxLine = 8*2083 - 1

// googleIndexDir returns, for the value of an Allow line, the pattern that
// Google's index.html rule adds: when the part of the value from its last
// "/" starts with "/index.htm", Google's parser also allows that directory
// exactly ("/dir/index.html" also allows "/dir/$"). ok is false otherwise.
func googleIndexDir(val string) (dir string, ok bool) {
	i := strings.LastIndexByte(val, '/')
	if i < 0 || !strings.HasPrefix(val[i:], "/index.htm") {
		return "", false
	}
	return val[:i+1] + "$", true
}

// buildGoogle rewrites src line by line into the file as Google's parser
// reads it, in the syntax this package parses, and parses that when any
// line changed. Each line of src becomes one line of the rewrite, except an
// Allow line that Google's index.html rule applies to, which is followed by
// the Allow line that rule adds.
func (a *alternatives) buildGoogle(src string) {
	var out strings.Builder
	out.Grow(len(src) + 64)
	changed := false
	var srcOf []int // line of the rewrite -> line of src, index 0 unused
	srcOf = append(srcOf, 0)
	newLine := func(n int) {
		if len(srcOf) > 1 {
			out.WriteByte('\n')
		}
		srcOf = append(srcOf, n)
	}
	forEachLine(src, func(n int, raw string) {
		newLine(n)
		fix, ok := googleLine(raw)
		if !ok {
			if fix.kind == fixLong {
				a.addFix(n, fix)
				changed = true
			}
			return
		}
		key, val := fix.key, fix.value
		var index string
		switch {
		case hasPrefixFold(key, googleUA):
			if fix.kind == 0 && !equalFold(key, "user-agent") {
				fix.kind = fixKey
			}
			cut := googleCut(val)
			if fix.kind == 0 && cut != val {
				fix.kind, fix.cut = fixCut, cut
			}
			if cut == "" {
				cut = "!" // a user-agent line that names nobody
			}
			out.WriteString("User-agent: ")
			out.WriteString(cut)
		case hasPrefixFold(key, googleAllow):
			if fix.kind == 0 && !equalFold(key, "allow") {
				fix.kind = fixKey
			}
			out.WriteString("Allow: ")
			out.WriteString(val)
			index, _ = googleIndexDir(val)
		case hasPrefixFold(key, googleDisallow):
			if fix.kind == 0 && !equalFold(key, "disallow") {
				fix.kind = fixKey
			}
			out.WriteString("Disallow: ")
			out.WriteString(val)
		default:
			if fix.kind == fixLong {
				a.addFix(n, fix)
				changed = true
			}
			return
		}
		if fix.kind != 0 {
			changed = true
			a.addFix(n, fix)
		}
		if index != "" {
			changed = true
			newLine(n)
			out.WriteString("Allow: ")
			out.WriteString(index)
			if a.index == nil {
				a.index = map[int]gfix{}
			}
			a.index[len(srcOf)-1] = gfix{kind: fixIndex, value: val, cut: index}
		}
	})
	if changed {
		a.google = Parse([]byte(out.String()))
		a.srcOf = srcOf
	}
}

// googleLine reads a line as Google's parser does: its key and value, with
// the fix that reading implies so far (fixLong for a line cut at
// googleMaxLine, fixColon for a key and value without a colon). ok is false
// for a line without a key and value; its fix is then fixLong or none.
func googleLine(raw string) (fix gfix, ok bool) {
	long := false
	if len(raw) > googleMaxLine {
		long = googleContent(raw[:googleMaxLine]) != googleContent(raw)
		raw = raw[:googleMaxLine]
	}
	if long {
		fix.kind = fixLong
	}
	ln := googleContent(raw)
	if ln == "" {
		return fix, false
	}
	key, val, colon := strings.Cut(ln, ":")
	if !colon {
		f := strings.Fields(ln)
		if len(f) != 2 {
			return fix, false
		}
		key, val = f[0], f[1]
	}
	fix.key, fix.value = trim(key), trim(val)
	if !long && !colon {
		fix.kind = fixColon
	}
	return fix, true
}

// googleContent is a line as Google's parser reads it: without its
// comment and surrounding whitespace.
func googleContent(raw string) string {
	if k := strings.IndexByte(raw, '#'); k >= 0 {
		raw = raw[:k]
	}
	return trim(raw)
}

// addFix records that Google reads line n differently.
func (a *alternatives) addFix(n int, f gfix) {
	if a.fixes == nil {
		a.fixes = map[int]gfix{}
	}
	a.fixes[n] = f
	a.fixOrd = append(a.fixOrd, n)
}

// explainGoogle says why Google's decision gd allows a target that RFC
// decision rd refuses.
func (a *alternatives) explainGoogle(rd, gd Decision, tokens []string) (int, string) {
	// The rule that allows it, if Google reads it from a line RFC 9309
	// ignores or reads differently, or adds it by its index.html rule.
	if gd.Rule != nil {
		if f, ok := a.index[gd.Rule.Line]; ok {
			n := a.srcOf[gd.Rule.Line]
			return n, f.describe(n) + ", and by that rule this path is allowed"
		}
		n := a.srcOf[gd.Rule.Line]
		if f, ok := a.fixes[n]; ok {
			return n, f.describe(n) + ", and by that rule this path is allowed"
		}
	}
	// A user-agent line that Google cuts to one of the crawler's tokens.
	for _, n := range a.fixOrd {
		f := a.fixes[n]
		if f.kind != fixCut {
			continue
		}
		for _, tok := range tokens {
			if equalFold(f.cut, tok) {
				return n, f.describe(n) + ", so that group applies and it allows this path"
			}
		}
	}
	// The last line before the refusing rule that Google reads differently
	// (a misspelt rule ends a group for Google), else the first.
	best := 0
	for _, n := range a.fixOrd {
		if rd.Rule != nil && n < rd.Rule.Line {
			best = n
		}
	}
	if best == 0 && len(a.fixOrd) > 0 {
		best = a.fixOrd[0]
	}
	if best == 0 {
		return 0, "Google's parser allows this path"
	}
	return best, a.fixes[best].describe(best) + ", and by its reading this path is allowed"
}

// describe explains how Google reads the line.
func (f gfix) describe(n int) string {
	ln := strconv.Itoa(n)
	switch f.kind {
	case fixKey:
		return "Google's parser accepts the misspelt `" + f.key + "` on line " + ln
	case fixColon:
		return "Google's parser accepts `" + f.key + " " + f.value + "` without a colon on line " + ln
	case fixLong:
		return "Google's parser reads only the first " + strconv.Itoa(googleMaxLine) + " bytes of line " + ln
	case fixIndex:
		return "Google's parser reads `Allow: " + f.value + "` on line " + ln + " as also allowing `" + f.cut + "` (its index.html rule)"
	default:
		return "Google's parser cuts the user-agent `" + f.value + "` on line " + ln + " to `" + f.cut + "`"
	}
}
