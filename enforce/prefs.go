package enforce

import (
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/dunglas/httpsfv"
)

// AI usage preferences: the Content-Usage rule of the IETF aipref working
// group (draft-ietf-aipref-attach, vocabulary in draft-ietf-aipref-vocab)
// and Cloudflare's Content-Signal line. See the package documentation,
// section "AI usage preferences", and prefs_vocab.json for the labels.

// MaxContentUsageRules is the number of Content-Usage rules kept per group
// (per file group, and per merged group); the others are reported by
// [Robots.Skipped]. Preferences are looked up rule by rule, so the cap
// bounds the cost of [Group.Preferences].
const MaxContentUsageRules = 256

// Pref is the state of one yes/no label of a statement of preference.
type Pref uint8

// The states of a label.
const (
	PrefUnknown Pref = iota // not stated, not understood, or the statement did not parse
	PrefYes                 // allowed: "y" in Content-Usage, "yes" in Content-Signal
	PrefNo                  // disallowed: "n" in Content-Usage, "no" in Content-Signal
)

// String returns "unknown", "yes" or "no".
func (p Pref) String() string {
	switch p {
	case PrefYes:
		return "yes"
	case PrefNo:
		return "no"
	}
	return "unknown"
}

// prefSlot is the state of one label. For a yes/no label, v is 0 (unknown),
// 1 (yes) or 2 (no), so that the larger value is the more restrictive; for a
// level label, v is 1 + the index of the level (levels are listed most
// restrictive first), 0 when unknown.
type prefSlot struct {
	v    uint8
	line int32
}

// UsageRule is one Content-Usage rule of a group, as written.
type UsageRule struct {
	// Path is the path pattern as written, "" when absent: the rule then
	// applies to "/", that is to every path.
	Path string
	// Value is the statement of preference as written ("train-ai=n").
	Value string
	// Line is the 1-based line number of the rule.
	Line int
	// Valid is false when Value does not parse as a structured-field
	// dictionary: every label of the rule is then unknown.
	Valid bool

	segs     []string // normalised pattern segments, as for Allow/Disallow
	anchored bool
	prio     int    // length of the normalised pattern
	yn       uint32 // 2 bits per Content-Usage slot: 0 unknown, 1 y, 2 n
}

// Len returns the precedence of the rule: the length of its path pattern
// after normalisation, counted as for Allow and Disallow ([Rule.Len]); a rule
// without a path counts as "/", 1.
func (u *UsageRule) Len() int { return u.prio }

// String formats the rule as in the file with its line number, e.g.
// "Content-Usage: /ai-ok/ train-ai=y (line 5)".
func (u *UsageRule) String() string {
	s := "Content-Usage:"
	if u.Path != "" {
		s += " " + u.Path
	}
	if u.Value != "" {
		s += " " + u.Value
	}
	return s + " (line " + strconv.Itoa(u.Line) + ")"
}

// SignalPair is one key=value pair of a Content-Signal line. Key and Value
// are lower-cased; pairs with unknown keys or values are kept too.
type SignalPair struct {
	Key, Value string
	Line       int
}

// groupPrefs holds the preferences of a merged group.
type groupPrefs struct {
	usage     []UsageRule
	pairs     []SignalPair
	signal    [maxLabels]prefSlot // combined Content-Signal state
	inherited bool                // the Content-Signal pairs are the file-level ones
}

// filePrefs holds what a file says about preferences outside the groups.
type filePrefs struct {
	signal  *groupPrefs // file-level Content-Signal lines; nil when none
	between []int       // Content-Signal lines that sit between two user-agent lines of a group
	split   []int       // Content-Usage lines that end a group without Allow/Disallow rules, followed by another group
}

// rawPrefs are the preferences of one file group (or of the lines before
// the first group) while parsing.
type rawPrefs struct {
	usage   []UsageRule
	pairs   []SignalPair
	signals int // Content-Signal lines
}

// parsePrefs is the parser state for preferences.
type parsePrefs struct {
	file       rawPrefs
	candidate  []agentLine // Content-Signal lines met in a run of user-agent lines: line and file group
	usageFirst []agentLine // Content-Usage lines that ended a run of user-agent lines
	reported   map[int]bool
	fileSig    *groupPrefs
	built      bool
	unsorted   bool // skips were appended out of line order
}

func (p *parser) prefState() *parsePrefs {
	if p.prefs == nil {
		p.prefs = &parsePrefs{}
	}
	return p.prefs
}

// prefRecord is called for every other record; it parses Content-Usage and
// Content-Signal lines. The record itself is kept in Records as before.
func (p *parser) prefRecord(key, val, raw string) {
	usage := equalFold(key, "content-usage")
	if !usage && !equalFold(key, "content-signal") {
		return
	}
	ps := p.prefState()
	if usage {
		if p.cur == nil {
			p.skip(p.line, raw, "Content-Usage before any user-agent line: it is a rule of a group (draft-ietf-aipref-attach-05 §3); ignored")
			return
		}
		// Content-Usage is a rule (draft-ietf-aipref-attach-05 §3:
		// "rule =/ content-usage"): like Allow and Disallow, it ends the
		// run of user-agent lines, so that a user-agent line after it
		// starts a new group.
		if !p.cur.hasRule {
			ps.usageFirst = append(ps.usageFirst, agentLine{line: p.line, raw: len(p.raws) - 1})
			p.cur.hasRule = true
		}
		rp := p.cur.prefs
		if rp == nil {
			rp = &rawPrefs{}
			p.cur.prefs = rp
		}
		if len(rp.usage) >= MaxContentUsageRules {
			p.skip(p.line, raw, "more than "+strconv.Itoa(MaxContentUsageRules)+" Content-Usage rules in the group; ignored")
			return
		}
		u, why := parseUsageRule(val, p.line)
		if why != "" {
			p.skip(p.line, raw, why)
		}
		rp.usage = append(rp.usage, u)
		return
	}
	if p.cur != nil && !p.cur.hasRule {
		ps.candidate = append(ps.candidate, agentLine{line: p.line, raw: len(p.raws) - 1})
	}
	rp := &ps.file
	if p.cur != nil {
		if p.cur.prefs == nil {
			p.cur.prefs = &rawPrefs{}
		}
		rp = p.cur.prefs
	}
	rp.signals++
	rp.pairs = appendSignalPairs(rp.pairs, val, p.line, func(why string) { p.skip(p.line, raw, why) })
}

// parseUsageRule parses the value of a Content-Usage rule
// (draft-ietf-aipref-attach-05 §3.2): an optional path starting with "/",
// ended by SP or HTAB, then the statement of preference. It returns the
// reason to report when the statement does not parse.
func parseUsageRule(val string, line int) (UsageRule, string) {
	u := UsageRule{Line: line, Valid: true}
	stmt := val
	if strings.HasPrefix(val, "/") {
		i := strings.IndexAny(val, " \t")
		if i < 0 {
			u.Path, stmt = val, ""
		} else {
			u.Path, stmt = val[:i], trim(val[i:])
		}
	}
	u.Value = stmt
	pat := u.Path
	if pat == "" {
		pat = "/"
	}
	pp := parsePattern(pat)
	u.segs, u.anchored, u.prio = pp.segs, pp.anchored, pp.prio
	if stmt == "" {
		return u, "Content-Usage without a statement of preference: every label is unknown"
	}
	yn, err := parseUsageDict(stmt)
	if err != nil {
		u.Valid = false
		return u, "Content-Usage: " + err.Error() + "; every label is unknown (draft-ietf-aipref-vocab-07 §6.5)"
	}
	u.yn = yn
	return u, ""
}

// parseUsageDict parses a statement of preference with the RFC 9651
// dictionary parser and returns the Content-Usage label states, 2 bits per
// slot (draft-ietf-aipref-vocab-07 §6.5: a Token y or n, parameters
// ignored, anything else unknown).
func parseUsageDict(stmt string) (uint32, error) {
	d, err := httpsfv.UnmarshalDictionary([]string{stmt})
	if err != nil {
		return 0, fmt.Errorf("statement of preference %q is not a structured-field dictionary (RFC 9651 §3.2): %w", stmt, err)
	}
	var yn uint32
	for i := range vocab.labels {
		l := &vocab.labels[i]
		if l.Scheme != ContentUsage {
			continue
		}
		m, ok := d.Get(l.Name)
		if !ok {
			continue
		}
		it, ok := m.(httpsfv.Item)
		if !ok {
			continue
		}
		switch it.Value {
		case httpsfv.Token("y"):
			yn |= 1 << (2 * i)
		case httpsfv.Token("n"):
			yn |= 2 << (2 * i)
		}
	}
	return yn, nil
}

// appendSignalPairs parses a Content-Signal value: comma-separated key=value
// pairs, whitespace around the parts ignored, keys and values made of
// letters, digits, "-", "_", "." and "*", compared case-insensitively. A
// malformed pair is reported and dropped; the others are kept.
func appendSignalPairs(dst []SignalPair, val string, line int, report func(string)) []SignalPair {
	if trim(val) == "" {
		report("empty Content-Signal; ignored")
		return dst
	}
	for _, item := range strings.Split(val, ",") {
		item = trim(item)
		k, v, ok := strings.Cut(item, "=")
		k, v = trim(k), trim(v)
		if !ok || !signalToken(k) || !signalToken(v) {
			if item == "" {
				report("Content-Signal: empty pair (two commas in a row, or a comma at an end); ignored")
			} else {
				report("Content-Signal: " + strconv.Quote(item) + " is not a key=value pair (is a comma missing?); that pair is unknown")
			}
			continue
		}
		dst = append(dst, SignalPair{Key: strings.ToLower(k), Value: strings.ToLower(v), Line: line})
	}
	return dst
}

func signalToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '*') {
			return false
		}
	}
	return true
}

// signalSlot returns the slot and value of a Content-Signal pair, or -1
// when the key or the value is not understood.
func signalSlot(key, value string) (int, uint8) {
	i := vocab.slotFold(ContentSignal, key)
	if i < 0 {
		return -1, 0
	}
	l := &vocab.labels[i]
	switch l.kind {
	case kindYesNo:
		switch value {
		case "yes":
			return i, 1
		case "no":
			return i, 2
		}
	case kindLevel:
		for k, lv := range l.Levels {
			if equalFold(lv, value) {
				return i, uint8(k + 1)
			}
		}
	}
	return -1, 0
}

// restrict combines the state of slot i with v from line: the more
// restrictive wins; between equal ones, the first seen.
func restrict(st *[maxLabels]prefSlot, i int, v uint8, line int) {
	if v == 0 {
		return
	}
	cur := st[i].v
	more := v > cur
	if vocab.labels[i].kind == kindLevel {
		more = cur == 0 || v < cur
	}
	if more {
		st[i] = prefSlot{v: v, line: int32(line)}
	}
}

func combineSignals(st *[maxLabels]prefSlot, pairs []SignalPair) {
	for _, sp := range pairs {
		if i, v := signalSlot(sp.Key, sp.Value); i >= 0 {
			restrict(st, i, v, sp.Line)
		}
	}
}

// fileSignal returns the preferences of the Content-Signal lines outside any
// group, built once; nil when there are none.
func (ps *parsePrefs) fileSignal() *groupPrefs {
	if !ps.built {
		ps.built = true
		if ps.file.signals > 0 {
			gp := &groupPrefs{pairs: ps.file.pairs, inherited: true}
			combineSignals(&gp.signal, gp.pairs)
			ps.fileSig = gp
		}
	}
	return ps.fileSig
}

// mergePrefs sets the preferences of the merged group g, made of the file
// groups raws.
func (p *parser) mergePrefs(g *Group, raws []int) {
	ps := p.prefs
	if ps == nil {
		return // no Content-Usage or Content-Signal line in the file
	}
	n, signals := 0, 0
	for _, ri := range raws {
		if rp := p.raws[ri].prefs; rp != nil {
			n += len(rp.usage)
			signals += rp.signals
		}
	}
	file := ps.fileSignal()
	if n == 0 && signals == 0 {
		g.prefs = file // shared; nil when the file has none
		return
	}
	gp := &groupPrefs{usage: make([]UsageRule, 0, min(n, MaxContentUsageRules))}
	for _, ri := range raws {
		rp := p.raws[ri].prefs
		if rp == nil {
			continue
		}
		for _, u := range rp.usage {
			if len(gp.usage) == MaxContentUsageRules {
				if ps.reported == nil {
					ps.reported = map[int]bool{}
				}
				if !ps.reported[u.Line] {
					ps.reported[u.Line] = true
					ps.unsorted = true
					p.skip(u.Line, u.String(), "more than "+strconv.Itoa(MaxContentUsageRules)+" Content-Usage rules in the merged group; ignored")
				}
				continue
			}
			gp.usage = append(gp.usage, u)
		}
		gp.pairs = append(gp.pairs, rp.pairs...)
	}
	switch {
	case signals > 0:
		combineSignals(&gp.signal, gp.pairs)
	case file != nil:
		gp.pairs, gp.signal, gp.inherited = file.pairs, file.signal, true
	}
	g.prefs = gp
}

// finishPrefs records the file-level facts once the groups are built.
func (p *parser) finishPrefs() {
	ps := p.prefs
	if ps == nil {
		return
	}
	fp := &filePrefs{signal: ps.fileSignal()}
	for _, c := range ps.candidate {
		for _, a := range p.agents {
			if a.raw == c.raw && a.line > c.line {
				fp.between = append(fp.between, c.line)
				break
			}
		}
	}
	for _, c := range ps.usageFirst {
		if len(p.raws[c.raw].rules) == 0 && c.raw+1 < len(p.raws) {
			fp.split = append(fp.split, c.line)
		}
	}
	p.r.prefs = fp
	if ps.unsorted {
		slices.SortStableFunc(p.r.skipped, func(a, b Skip) int { return a.Line - b.Line })
	}
}

// match reports whether the rule's pattern matches the normalised target t,
// with the semantics of Allow and Disallow patterns: the first segment is a
// prefix, each further segment is searched leftmost from where the previous
// one ended, on unit boundaries, and an anchored pattern's last segment
// must end the target.
func (u *UsageRule) match(t string) bool {
	if len(u.segs) == 0 || !strings.HasPrefix(t, u.segs[0]) {
		return false
	}
	pos, end := len(u.segs[0]), len(t)
	rest := u.segs[1:]
	if u.anchored {
		if len(rest) == 0 {
			return pos == end
		}
		last := rest[len(rest)-1]
		rest = rest[:len(rest)-1]
		end -= len(last)
		if end < pos || t[end:] != last || !unitStart(t, end) {
			return false
		}
	}
	for _, seg := range rest {
		i := strings.Index(t[pos:end], seg)
		for i >= 0 && !unitStart(t, pos+i) {
			pos += i + 1
			i = strings.Index(t[pos:end], seg)
		}
		if i < 0 {
			return false
		}
		pos += i + len(seg)
	}
	return true
}

// Preferences is the AI usage preference that applies to one target: the
// state of every label of the vocabulary (see [Vocab]), and the robots.txt
// lines that stated them. The zero value states nothing. It is a small value
// and is built without allocating.
type Preferences struct {
	st     [maxLabels]prefSlot
	ulines [4]int32 // the first Content-Usage rules that apply
	nu     int32    // number of Content-Usage rules that apply
	failed bool     // one of them did not parse
	header bool     // from an HTTP header field
}

// LabelState is the preference stated for one label.
type LabelState struct {
	Scheme Scheme
	Label  string
	// Pref is PrefYes or PrefNo for a yes/no label; for a level label
	// ("use"), and when nothing is stated, PrefUnknown.
	Pref Pref
	// Value is the value as its scheme writes it: "y", "n", "yes", "no",
	// or a level ("reference"); "" when nothing is stated.
	Value string
	// Line is the robots.txt line that stated it; 0 when nothing is stated
	// or the value came from an HTTP header field.
	Line int
}

// String formats the state as "train-ai=n (line 4)".
func (s LabelState) String() string {
	if s.Value == "" {
		return s.Label + " unknown"
	}
	v := s.Label + "=" + s.Value
	if s.Line > 0 {
		v += " (line " + strconv.Itoa(s.Line) + ")"
	}
	return v
}

func (p *Preferences) state(i int) LabelState {
	l := &vocab.labels[i]
	s := LabelState{Scheme: l.Scheme, Label: l.Name, Line: int(p.st[i].line)}
	v := p.st[i].v
	switch {
	case v == 0:
		s.Line = 0
	case l.kind == kindLevel:
		s.Value = l.Levels[v-1]
	default:
		s.Pref = Pref(v)
		s.Value = yesNo(l.kind, s.Pref)
	}
	return s
}

func yesNo(kind int, p Pref) string {
	switch {
	case kind == kindYN && p == PrefYes:
		return "y"
	case kind == kindYN:
		return "n"
	case p == PrefYes:
		return "yes"
	}
	return "no"
}

// Get returns the state of the label of scheme s ("train-ai" of
// ContentUsage, "ai-train" of ContentSignal, ...). A label the vocabulary
// does not define is unknown.
func (p Preferences) Get(s Scheme, label string) LabelState {
	if i := vocab.slot(s, label); i >= 0 {
		return p.state(i)
	}
	return LabelState{Scheme: s, Label: label}
}

// Usage returns the state of a Content-Usage label, such as "train-ai".
func (p Preferences) Usage(label string) Pref { return p.Get(ContentUsage, label).Pref }

// Signal returns the state of a yes/no Content-Signal label, such as
// "ai-train".
func (p Preferences) Signal(label string) Pref { return p.Get(ContentSignal, label).Pref }

// All yields the labels with a stated value, Content-Usage labels first,
// in vocabulary order.
func (p Preferences) All() iter.Seq[LabelState] {
	return func(yield func(LabelState) bool) {
		for i := range vocab.labels {
			if p.st[i].v != 0 && !yield(p.state(i)) {
				return
			}
		}
	}
}

// IsZero reports whether no Content-Usage rule and no Content-Signal applies.
func (p Preferences) IsZero() bool {
	if p.nu > 0 || p.header {
		return false
	}
	for i := range p.st {
		if p.st[i].v != 0 {
			return false
		}
	}
	return true
}

// Lines returns the robots.txt lines the preferences come from, in
// increasing order: the Content-Usage rules that apply (at most four are
// remembered) and the Content-Signal lines that state a label.
func (p Preferences) Lines() []int {
	var out []int
	for _, l := range p.ulines[:min(int(p.nu), len(p.ulines))] {
		out = append(out, int(l))
	}
	for i := range p.st {
		if p.st[i].v != 0 && p.st[i].line > 0 {
			out = append(out, int(p.st[i].line))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// String renders the Content-Usage labels that are stated as a
// structured-field dictionary, such as "train-ai=n, search=y", ready for a
// Content-Usage header field or a placeholder; "" when none is.
func (p Preferences) String() string { return p.render(ContentUsage) }

// SignalString renders the Content-Signal labels that are stated, such as
// "search=yes, ai-train=no, use=reference"; "" when none is.
func (p Preferences) SignalString() string { return p.render(ContentSignal) }

func (p *Preferences) render(s Scheme) string {
	var b strings.Builder
	for i := range vocab.labels {
		if vocab.labels[i].Scheme != s || p.st[i].v == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		st := p.state(i)
		b.WriteString(st.Label)
		b.WriteByte('=')
		b.WriteString(st.Value)
	}
	return b.String()
}

// Describe explains where the preferences come from, e.g.
// "Content-Usage train-ai=n (line 4); Content-Signal search=yes,
// ai-train=no (line 2)"; "no usage preference" when nothing applies.
func (p Preferences) Describe() string {
	var parts []string
	if p.nu > 0 || p.header {
		d := p.String()
		if d == "" {
			d = "(all labels unknown)"
		}
		if p.failed {
			d += " (a rule did not parse)"
		}
		part := "Content-Usage " + d
		if p.header {
			part += " (header)"
		} else {
			part += " (" + linesText(p.ulines[:min(int(p.nu), len(p.ulines))], int(p.nu)) + ")"
		}
		parts = append(parts, part)
	}
	if d := p.SignalString(); d != "" {
		var ls []int32
		for i := range vocab.labels {
			if vocab.labels[i].Scheme == ContentSignal && p.st[i].v != 0 && p.st[i].line > 0 {
				ls = append(ls, p.st[i].line)
			}
		}
		slices.Sort(ls)
		ls = slices.Compact(ls)
		part := "Content-Signal " + d
		if len(ls) > 0 {
			part += " (" + linesText(ls, len(ls)) + ")"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "no usage preference"
	}
	return strings.Join(parts, "; ")
}

func linesText(ls []int32, n int) string {
	s := "line "
	if n > 1 {
		s = "lines "
	}
	for i, l := range ls {
		if i > 0 {
			s += ", "
		}
		s += strconv.Itoa(int(l))
	}
	if n > len(ls) {
		s += ", ..."
	}
	return s
}

// Combine returns the preferences that hold when both p and q apply to the
// same content (for instance a robots.txt rule and a Content-Usage header
// field): for each label the most restrictive state, as
// draft-ietf-aipref-vocab-07 §5.1 combines statements of preference.
func (p Preferences) Combine(q Preferences) Preferences {
	r := p
	for i := range q.st {
		restrict(&r.st, i, q.st[i].v, int(q.st[i].line))
	}
	for _, l := range q.ulines[:min(int(q.nu), len(q.ulines))] {
		if int(r.nu) < len(r.ulines) {
			r.ulines[r.nu] = l
		}
		r.nu++
	}
	r.failed = r.failed || q.failed
	r.header = r.header || q.header
	return r
}

// at returns the preferences of the group for the normalised target t.
func (gp *groupPrefs) at(t string) Preferences {
	p := Preferences{st: gp.signal}
	best := -1
	for i := range gp.usage {
		u := &gp.usage[i]
		if u.prio < best || !u.match(t) {
			continue
		}
		if u.prio > best {
			best = u.prio
			for k := range vocab.labels {
				if vocab.labels[k].Scheme == ContentUsage {
					p.st[k] = prefSlot{}
				}
			}
			p.nu, p.failed = 0, false
		}
		for k := range vocab.labels {
			if vocab.labels[k].Scheme == ContentUsage {
				restrict(&p.st, k, uint8(u.yn>>(2*k)&3), u.Line)
			}
		}
		if int(p.nu) < len(p.ulines) {
			p.ulines[p.nu] = int32(u.Line)
		}
		p.nu++
		p.failed = p.failed || !u.Valid
	}
	return p
}

// HasPreferences reports whether the file has any Content-Usage or
// Content-Signal line, so callers can skip preference lookups at no cost
// for the files (most of them) that state none.
func (r *Robots) HasPreferences() bool { return r != nil && r.prefs != nil }

// Preferences returns the AI usage preferences of the group for target (a
// path with an optional query, read as [Group.Decide] reads it): the
// Content-Usage rule with the longest matching path pattern (equally long
// ones combined, the most restrictive state of each label winning), and
// the group's Content-Signal pairs (or the file-level ones when the group
// has none). A target the group disallows has no preference: the zero
// Preferences. A nil group, or a group without preferences, returns the
// zero Preferences at no cost.
func (g *Group) Preferences(target string) Preferences {
	if g == nil || g.prefs == nil {
		return Preferences{}
	}
	if !g.Decide(target).Allowed {
		return Preferences{}
	}
	return g.prefs.lookup(target)
}

// lookup normalises target and returns the preferences for it.
func (gp *groupPrefs) lookup(target string) Preferences {
	if len(gp.usage) == 0 {
		return Preferences{st: gp.signal}
	}
	var small [512]byte
	t, big := normalTarget(&small, target)
	pr := gp.at(t)
	releaseTarget(big)
	return pr
}

// ContentUsage returns the Content-Usage rules of the group in file order
// (at most [MaxContentUsageRules]).
func (g *Group) ContentUsage() []UsageRule {
	if g == nil || g.prefs == nil {
		return nil
	}
	return g.prefs.usage
}

// ContentSignal returns the Content-Signal pairs that apply to the group:
// those of its own Content-Signal lines, or, when it has none, those
// written outside any group. The second result reports the latter case.
func (g *Group) ContentSignal() ([]SignalPair, bool) {
	if g == nil || g.prefs == nil {
		return nil, false
	}
	return g.prefs.pairs, g.prefs.inherited
}

// ContentSignal returns the Content-Signal pairs written outside any group
// (before the first user-agent line). They apply to every group that has
// no Content-Signal line of its own.
func (r *Robots) ContentSignal() []SignalPair {
	if r == nil || r.prefs == nil || r.prefs.signal == nil {
		return nil
	}
	return r.prefs.signal.pairs
}

// Preferences returns the AI usage preferences for target of the group that
// tokens select, with the wildcard group as fallback, as [Robots.Decide]
// selects it. When no group applies, the file-level Content-Signal pairs
// do.
func (r *Robots) Preferences(tokens []string, target string) Preferences {
	if r == nil || r.prefs == nil {
		return Preferences{}
	}
	g := r.Select(tokens, true)
	if g == nil {
		if r.prefs.signal != nil {
			return Preferences{st: r.prefs.signal.signal}
		}
		return Preferences{}
	}
	return g.Preferences(target)
}

// Preferences returns the AI usage preferences of the decision's group for
// target, which must be the target the decision was made for: the zero
// Preferences when the target is disallowed or no group applied. It does
// not decide again.
func (d Decision) Preferences(target string) Preferences {
	if !d.Allowed || d.Group == nil || d.Group.prefs == nil {
		return Preferences{}
	}
	return d.Group.prefs.lookup(target)
}

// Explain describes the decision as [Decision.String] does and, when the
// target is allowed and preferences apply to it, adds them, e.g.
// "allowed: no rule of User-agent: * (line 1) matches; usage preferences:
// Content-Usage train-ai=n (line 4)". target must be the target the
// decision was made for.
func (d Decision) Explain(target string) string {
	s := d.String()
	if p := d.Preferences(target); !p.IsZero() {
		s += "; usage preferences: " + p.Describe()
	}
	return s
}

// ParseContentUsage parses the values of a Content-Usage HTTP header field
// (draft-ietf-aipref-attach-05 §2), one per field line; several lines are
// combined as RFC 9651 combines them (empty lines are ignored, as HTTP
// ignores them). When the value is not a valid dictionary, every label is
// unknown and the error says why. No value at all gives the zero
// Preferences.
func ParseContentUsage(fieldValues ...string) (Preferences, error) {
	var lines []string
	for _, v := range fieldValues {
		if v = strings.Trim(v, " \t"); v != "" {
			lines = append(lines, v)
		}
	}
	if len(lines) == 0 {
		return Preferences{}, nil
	}
	p := Preferences{header: true}
	yn, err := parseUsageDict(strings.Join(lines, ", "))
	if err != nil {
		p.failed = true
		return p, fmt.Errorf("content-usage header: %w", err)
	}
	for k := range vocab.labels {
		if vocab.labels[k].Scheme == ContentUsage {
			p.st[k].v = uint8(yn >> (2 * k) & 3)
		}
	}
	return p, nil
}

// ParseContentSignal parses a Content-Signal value, as found in robots.txt
// or in a Content-Signal HTTP header field some sites send: pairs that do
// not parse are dropped and reported by the error, the others kept.
func ParseContentSignal(value string) (Preferences, error) {
	var errs []string
	pairs := appendSignalPairs(nil, value, 0, func(why string) { errs = append(errs, why) })
	var p Preferences
	combineSignals(&p.st, pairs)
	if len(errs) > 0 {
		return p, fmt.Errorf("content-signal %q: %s", value, strings.Join(errs, "; "))
	}
	return p, nil
}
