package enforce

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dunglas/httpsfv"
)

// PrefWarning is a problem with the AI usage preferences of a robots.txt
// file, found by [Robots.LintPreferences].
type PrefWarning struct {
	Line    int    // 1-based line the warning is about
	Code    string // a short stable name, such as "usage-syntax" or "signal-between-agents"
	Message string // what is wrong and what a crawler will do, for people
}

// String formats the warning as "line 3: warning: message [code]".
func (w PrefWarning) String() string {
	return "line " + strconv.Itoa(w.Line) + ": warning: " + w.Message + " [" + w.Code + "]"
}

// LintPreferences reports what will not work as meant in the file's
// Content-Usage and Content-Signal lines, sorted by line:
//
//   - statements that do not parse (a missing comma, an upper-case key,
//     spaces around "="), labels of earlier draft revisions ("ai",
//     "train-genai"), labels of the other scheme ("ai-train" in
//     Content-Usage), unknown labels, and values that count as unknown
//     ("yes" in Content-Usage, "n" in Content-Signal);
//   - preferences in a group that disallows everything, which never apply;
//   - Content-Usage outside any group (ignored), and Content-Signal lines
//     that other parsers read differently: outside any group, or between
//     the user-agent lines of a group;
//   - conflicting statements: Content-Usage rules for the same path that
//     disagree, and a Content-Usage label that contradicts its
//     Content-Signal synonym in the same group;
//   - misspelt keys and lines without a colon;
//   - once per file, that Content-Signal is not a record RFC 9309 parsers
//     know.
//
// The lines the parser skipped for these records are in [Robots.Skipped]
// as well; the warnings here explain them further.
func (r *Robots) LintPreferences() []PrefWarning {
	if r == nil {
		return nil
	}
	var ws []PrefWarning
	seen := map[string]bool{}
	add := func(line int, code, format string, args ...any) {
		k := strconv.Itoa(line) + " " + code + " " + fmt.Sprint(args...)
		if seen[k] {
			return
		}
		seen[k] = true
		ws = append(ws, PrefWarning{Line: line, Code: code, Message: fmt.Sprintf(format, args...)})
	}

	// Records: every Content-Usage and Content-Signal line, once.
	firstSignal := 0
	lintRec := func(rec Record, inGroup bool) {
		k := strings.ToLower(rec.Key)
		switch k {
		case "content-usage":
			if !inGroup {
				add(rec.Line, "usage-outside-group", "Content-Usage before any user-agent line: draft-ietf-aipref-attach-05 §3 makes it a rule of a group, so it is ignored; put it under User-agent: *")
			}
			lintUsageValue(rec, add)
		case "content-signal":
			if firstSignal == 0 || rec.Line < firstSignal {
				firstSignal = rec.Line
			}
			if !inGroup {
				add(rec.Line, "signal-outside-group", "Content-Signal before any user-agent line is outside every group, which RFC 9309 §2.2 does not define: crawlers may ignore it (this module applies it to every group without a Content-Signal of its own); put it under User-agent: *")
			}
			lintSignalValue(rec, add)
		default:
			if want := prefMisspelt(rec.Key); want != "" {
				add(rec.Line, "pref-misspelt-key", "%q is not %s: nobody reads it; write %s:", rec.Key, want, want)
			}
		}
	}
	for _, rec := range r.Records() {
		lintRec(rec, false)
	}
	for _, g := range r.Groups() {
		for _, rec := range g.Records {
			lintRec(rec, true)
		}
	}
	if firstSignal > 0 {
		add(firstSignal, "signal-not-rfc9309", "Content-Signal is Cloudflare's record, neither an RFC 9309 one nor the IETF aipref one: RFC 9309 crawlers ignore it (§2.2.4 lets them), Google Search Console reports \"Syntax not understood\" and Lighthouse's robots.txt audit \"Unknown directive\"; IETF aipref crawlers read Content-Usage instead (e.g. Content-Usage: train-ai=n)")
	}
	for _, s := range r.Skipped() {
		if !strings.HasPrefix(s.Reason, "no colon") {
			continue
		}
		f := strings.Fields(s.Text)
		if len(f) > 0 && (equalFold(f[0], "content-usage") || equalFold(f[0], "content-signal")) {
			add(s.Line, "pref-no-colon", "%s without a colon is not a record: ignored; write %s: %s", f[0], f[0], strings.Join(f[1:], " "))
		}
	}
	if r.prefs != nil {
		for _, l := range r.prefs.between {
			add(l, "signal-between-agents", "Content-Signal between two user-agent lines: RFC 9309 §2.2.4 keeps the group going, so the user-agent lines above and below share every rule, but parsers that end a group at any other record (Protego/Scrapy, robots-parser for Node.js, temoto/robotstxt) split it here, so the user-agent lines above get no rules at all and may crawl everything; put it after the user-agent lines")
		}
		for _, l := range r.prefs.split {
			add(l, "usage-ends-group", "Content-Usage right after the user-agent lines of a group without Allow or Disallow: draft-ietf-aipref-attach-05 makes Content-Usage a rule, so the next user-agent line starts a new group and the user-agent lines above may crawl everything (this module reads it so); parsers that do not know Content-Usage read them and the next group as one group with its rules; add Allow: / (or the rules you mean) to the group")
		}
	}

	lintGroups(r, add)
	slices.SortStableFunc(ws, func(a, b PrefWarning) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return strings.Compare(a.Code, b.Code)
	})
	return ws
}

// lintGroups warns of the preferences of groups that disallow everything
// (they never apply) and of conflicts within a group.
func lintGroups(r *Robots, add func(line int, code, format string, args ...any)) {
	allBlocked := map[int]bool{} // line -> every group holding it disallows everything
	blockedBy := map[int]*Group{}
	for _, g := range r.Groups() {
		if g.prefs == nil {
			continue
		}
		all := disallowsAll(g)
		note := func(line int) {
			if prev, ok := allBlocked[line]; ok {
				allBlocked[line] = prev && all
				return
			}
			allBlocked[line] = all
			blockedBy[line] = g
		}
		for _, u := range g.prefs.usage {
			note(u.Line)
		}
		if !g.prefs.inherited {
			for _, sp := range g.prefs.pairs {
				note(sp.Line)
			}
		}
		lintConflicts(g, add)
	}
	for line, all := range allBlocked {
		if all {
			add(line, "pref-disallowed-group", "a preference in a group that disallows everything (%s): nothing can be crawled, so it never applies (draft-ietf-aipref-attach-05 §3.1)", blockedBy[line])
		}
	}
}

// disallowsAll reports whether no target but /robots.txt can be crawled
// under g: a rule disallows "/" or everything, and no allow rule can match.
func disallowsAll(g *Group) bool {
	all := false
	for i := range g.Rules {
		ru := &g.Rules[i]
		p := strings.TrimRight(ru.Pattern, "*")
		switch {
		case ru.Allow && ru.Pattern != "":
			return false
		case !ru.Allow && (p == "/" || p == ""):
			all = all || ru.Pattern != ""
		}
	}
	return all
}

// lintUsageValue checks the value of a Content-Usage line.
func lintUsageValue(rec Record, add func(int, string, string, ...any)) {
	u, _ := parseUsageRule(rec.Value, rec.Line)
	stmt := u.Value
	if u.Path == "" && stmt != "" && (stmt[0] == '*' || strings.HasPrefix(stmt, "%2F") || strings.HasPrefix(stmt, "%2f")) {
		add(rec.Line, "usage-path", "a Content-Usage path must start with \"/\": the whole value %q is read as the statement of preference", stmt)
	}
	if stmt == "" {
		add(rec.Line, "usage-no-statement", "Content-Usage without a statement of preference (a path needs a space, then e.g. train-ai=n): every label is unknown")
		return
	}
	d, err := httpsfv.UnmarshalDictionary([]string{stmt})
	if err != nil {
		add(rec.Line, "usage-syntax", "Content-Usage %q is not a structured-field dictionary (%s): every label is unknown (draft-ietf-aipref-vocab-07 §6.5)", stmt, diagnoseDict(stmt, err))
		return
	}
	counts := map[string]int{}
	for _, k := range memberKeys(stmt) {
		counts[k]++
	}
	for _, k := range d.Names() {
		if counts[k] > 1 {
			add(rec.Line, "usage-duplicate-label", "%s appears %d times: only the last one counts (RFC 9651 §4.2.2)", k, counts[k])
		}
		m, _ := d.Get(k)
		if it, ok := m.(httpsfv.Item); ok && it.Params != nil {
			for _, pk := range it.Params.Names() {
				if vocab.slotFold(ContentUsage, pk) >= 0 || vocab.slotFold(ContentSignal, pk) >= 0 {
					add(rec.Line, "usage-semicolon", "%s is read as a parameter of %s, which is ignored: members are separated by commas, not semicolons", pk, k)
				}
			}
		}
		if i := vocab.slot(ContentUsage, k); i >= 0 {
			if it, ok := m.(httpsfv.Item); ok && (it.Value == httpsfv.Token("y") || it.Value == httpsfv.Token("n")) {
				continue
			}
			add(rec.Line, "usage-value", "%s: only the tokens y and n count; %s reads as unknown", k, describeMember(m))
			continue
		}
		lintLabel(rec.Line, ContentUsage, k, add)
	}
}

// lintLabel reports a label the scheme s does not define.
func lintLabel(line int, s Scheme, k string, add func(int, string, string, ...any)) {
	if o := vocab.outdated(s, k); o != nil {
		msg := fmt.Sprintf("%s (%s) is not a %s label (last in %s): ignored", k, o.Meaning, s, o.LastIn)
		if o.Use != "" {
			msg += "; use " + o.Use
		}
		add(line, "outdated-label", "%s", msg)
		return
	}
	other := ContentSignal
	if s == ContentSignal {
		other = ContentUsage
	}
	if i := vocab.slotFold(other, k); i >= 0 {
		l := &vocab.labels[i]
		msg := fmt.Sprintf("%s is a %s label, ignored in %s", l.Name, other, s)
		if l.Same != "" {
			msg += "; " + s.String() + " calls it " + l.Same
		} else {
			msg += "; " + s.String() + " has no equivalent"
		}
		add(line, "wrong-scheme-label", "%s", msg)
		return
	}
	var known []string
	for i := range vocab.labels {
		if vocab.labels[i].Scheme == s {
			known = append(known, vocab.labels[i].Name)
		}
	}
	add(line, "unknown-label", "unknown %s label %q: ignored (known: %s)", s, k, strings.Join(known, ", "))
}

// lintSignalValue checks the value of a Content-Signal line.
func lintSignalValue(rec Record, add func(int, string, string, ...any)) {
	pairs := appendSignalPairs(nil, rec.Value, rec.Line, func(why string) {
		add(rec.Line, "signal-syntax", "%s", why)
	})
	counts := map[string]int{}
	for _, sp := range pairs {
		counts[sp.Key]++
	}
	for _, sp := range pairs {
		i := vocab.slotFold(ContentSignal, sp.Key)
		if i < 0 {
			lintLabel(rec.Line, ContentSignal, sp.Key, add)
			continue
		}
		if counts[sp.Key] > 1 {
			add(rec.Line, "signal-duplicate-label", "%s appears %d times: the most restrictive value applies", sp.Key, counts[sp.Key])
		}
		if j, _ := signalSlot(sp.Key, sp.Value); j >= 0 {
			continue
		}
		l := &vocab.labels[i]
		if l.kind == kindLevel {
			add(rec.Line, "signal-value", "%s=%s: the levels are %s; it reads as unknown", sp.Key, sp.Value, strings.Join(l.Levels, ", "))
		} else {
			add(rec.Line, "signal-value", "%s=%s: Content-Signal values are yes or no; it reads as unknown", sp.Key, sp.Value)
		}
	}
}

// lintConflicts reports Content-Usage rules for the same path that
// disagree, and Content-Usage labels that contradict their Content-Signal
// synonym in the group.
func lintConflicts(g *Group, add func(int, string, string, ...any)) {
	type seenRule struct {
		line int
		yn   uint32
	}
	byPath := map[string]seenRule{}
	for _, u := range g.prefs.usage {
		key := strings.Join(u.segs, "*")
		if u.anchored {
			key += "$"
		}
		if prev, ok := byPath[key]; ok {
			for i := range vocab.labels {
				a, b := prev.yn>>(2*i)&3, u.yn>>(2*i)&3
				if a != 0 && b != 0 && a != b {
					add(u.Line, "usage-conflict", "%s is %s on line %d and %s here for the same path: the most restrictive (n) applies", vocab.labels[i].Name, yesNo(kindYN, Pref(a)), prev.line, yesNo(kindYN, Pref(b)))
				}
			}
			prev.yn |= u.yn &^ prev.yn // keep the first stated value of each label
			byPath[key] = prev
		} else {
			byPath[key] = seenRule{u.Line, u.yn}
		}
		if u.prio != 1 { // only rules for every path meet the group-wide Content-Signal
			continue
		}
		for i := range vocab.labels {
			l := &vocab.labels[i]
			v := u.yn >> (2 * i) & 3
			if l.Scheme != ContentUsage || l.Same == "" || v == 0 {
				continue
			}
			j := vocab.slot(ContentSignal, l.Same)
			if j < 0 || g.prefs.signal[j].v == 0 || g.prefs.signal[j].v == uint8(v) {
				continue
			}
			add(u.Line, "synonym-conflict", "%s=%s here, but Content-Signal %s=%s on line %d: crawlers that read both see a conflict, and the most restrictive applies", l.Name, yesNo(kindYN, Pref(v)), l.Same, yesNo(kindYesNo, Pref(g.prefs.signal[j].v)), g.prefs.signal[j].line)
		}
	}
}

// memberKeys returns the keys of the members of a dictionary, in order,
// duplicates included (a rough split, used only for diagnostics).
func memberKeys(stmt string) []string {
	var ks []string
	for _, m := range strings.Split(stmt, ",") {
		m = strings.TrimSpace(m)
		if i := strings.IndexAny(m, "=;"); i >= 0 {
			m = m[:i]
		}
		ks = append(ks, m)
	}
	return ks
}

// describeMember names the kind of a dictionary value.
func describeMember(m httpsfv.Member) string {
	it, ok := m.(httpsfv.Item)
	if !ok {
		return "an inner list"
	}
	switch v := it.Value.(type) {
	case httpsfv.Token:
		return "the token " + string(v)
	case string:
		return "the string " + strconv.Quote(v) + " (quoted: not a token)"
	case bool:
		if v {
			return "a key without a value (the boolean true)"
		}
		return "the boolean false"
	case int64, float64:
		return "the number " + fmt.Sprint(v)
	}
	return fmt.Sprintf("a %T", it.Value)
}

// diagnoseDict guesses why stmt does not parse, in words.
func diagnoseDict(stmt string, err error) string {
	for i := 0; i < len(stmt); i++ {
		if stmt[i] >= 0x80 {
			return "non-ASCII characters"
		}
	}
	members := strings.Split(stmt, ",")
	for i, m := range members {
		m = strings.TrimSpace(m)
		if m == "" {
			if i == len(members)-1 {
				return "a trailing comma"
			}
			return "an empty member (two commas in a row)"
		}
		if f := strings.Fields(m); len(f) > 1 {
			for j := 1; j < len(f); j++ {
				if !strings.HasPrefix(f[j], "=") && !strings.HasSuffix(f[j-1], "=") {
					return "a comma is missing between members"
				}
			}
			return "no space is allowed around \"=\""
		}
		if strings.Count(m, "=") > 1 && !strings.Contains(m, ";") {
			return "a comma is missing between members"
		}
		k := m
		if j := strings.IndexAny(k, "=;"); j >= 0 {
			k = k[:j]
		}
		if k != strings.ToLower(k) {
			return "keys must be lower-case: the format is case-sensitive"
		}
	}
	return err.Error()
}

// prefMisspelt returns the preference key that key looks like a
// misspelling of, or "".
func prefMisspelt(key string) string {
	k := squashKey(key)
	switch {
	case equalFold(key, "content-usage") || equalFold(key, "content-signal"):
		return ""
	case editDistance(k, "contentusage") <= 2:
		return "Content-Usage"
	case editDistance(k, "contentsignal") <= 2 || k == "contentsignals":
		return "Content-Signal"
	}
	return ""
}
