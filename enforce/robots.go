package enforce

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// MaxSize is the number of bytes of a robots.txt file that Parse reads:
// 500 KiB, the minimum RFC 9309 §2.5 requires a crawler to parse. Content
// past it is ignored, as a crawler would ignore it.
const MaxSize = 500 << 10

// MaxInterval is the largest Crawl-delay or Request-rate period the parser
// keeps; larger values are clamped to it (and reported by Skipped). A day is
// already far beyond any delay a crawler honours, and RFC 9309 §2.4 lets a
// crawler cache the file for that long anyway.
const MaxInterval = 24 * time.Hour

// Robots is a parsed and compiled robots.txt file. It is immutable and safe
// for concurrent use. A nil *Robots allows everything.
type Robots struct {
	agents    agentTable // lower-cased product token -> merged group
	star      *Group
	starBuf   Group // the "*" group, unless it is shared with another token
	groups    []*Group
	sitemaps  []string
	records   []Record
	skipped   []Skip
	size      int
	truncated bool
	src       string      // the body read; Rule.Pattern and Group.Agents are slices of it
	alt       altReadings // other parsers' readings, built on first use (readings.go)
	prefs     *filePrefs  // nil when the file has no Content-Usage or Content-Signal line (prefs.go)
}

// Rule is one allow or disallow line of a group.
type Rule struct {
	Allow   bool   // true for "Allow", false for "Disallow"
	Pattern string // the value as written in the file, without surrounding whitespace
	Line    int    // 1-based line number in the file

	prio int // length of the normalised pattern: its precedence
}

// Len returns the precedence of the rule: the length in octets of its
// pattern after percent-encoding normalisation, each '*' and a final '$'
// counting one. The longest matching rule decides. An empty pattern, which
// matches nothing, has length 0.
func (r *Rule) Len() int { return r.prio }

// String formats the rule as it appears in the file with its line number,
// e.g. "Disallow: /private/ (line 3)". It is meant for refusal messages.
func (r *Rule) String() string {
	if r == nil {
		return "(no rule)"
	}
	k := "Disallow:"
	if r.Allow {
		k = "Allow:"
	}
	if r.Pattern != "" {
		k += " " + r.Pattern
	}
	return k + " (line " + strconv.Itoa(r.Line) + ")"
}

// Group is the set of rules that applies to a crawler: every group of the file
// whose user-agent lines name the same token, merged in file order.
type Group struct {
	m matcher // first: the fields a decision reads share a cache line

	// Agents are the user-agent values that select this group, as written;
	// ["*"] for the wildcard group.
	Agents []string
	// Line is the line of the first user-agent line of the first merged group.
	Line int
	// Rules are the allow and disallow rules, in file order.
	Rules []Rule
	// CrawlDelay is the Crawl-delay of the group (decimals allowed: "0.5" is
	// 500ms), 0 when absent; for merged groups the largest one.
	CrawlDelay time.Duration
	// RequestRate is the Request-rate of the group, the zero Rate when absent;
	// for merged groups the strictest one.
	RequestRate Rate
	// Records are the other records that appear inside the group (unknown
	// keys, Visit-time, ...) in file order. Content-Usage and Content-Signal
	// lines are kept here too; see [Group.Preferences] for their meaning.
	Records []Record

	prefs *groupPrefs // AI usage preferences (prefs.go); nil when none apply
}

// String describes the group for refusal messages, e.g.
// "User-agent: GPTBot (line 5)". A nil group prints as "(no group)".
func (g *Group) String() string {
	if g == nil {
		return "(no group)"
	}
	return "User-agent: " + strings.Join(g.Agents, ", ") + " (line " + strconv.Itoa(g.Line) + ")"
}

// Interval returns the minimum time between two requests that the group asks
// for: the stricter (longer) of CrawlDelay and RequestRate.Interval(); 0 if
// neither is set. A nil group returns 0.
func (g *Group) Interval() time.Duration {
	if g == nil {
		return 0
	}
	return max(g.CrawlDelay, g.RequestRate.Interval())
}

// Rate is a Request-rate value: at most Requests requests every Per.
// "1/10s" is {1, 10s}, "30/1m" is {30, time.Minute}; a period without a unit
// is in seconds, and the units s, m, h and d are understood.
type Rate struct {
	Requests int
	Per      time.Duration
}

// Interval returns Per/Requests, the time between two requests, or 0 for the
// zero Rate.
func (r Rate) Interval() time.Duration {
	if r.Requests <= 0 {
		return 0
	}
	return r.Per / time.Duration(r.Requests)
}

// IsZero reports whether the rate is absent.
func (r Rate) IsZero() bool { return r.Requests == 0 }

// Record is a record that is not a rule: an unknown key, Visit-time, Host, ...
// Key and Value are kept as written (without surrounding whitespace).
type Record struct {
	Key, Value string
	Line       int
}

// Skip describes a line that the parser ignored, or only partly used, and
// why. It is meant for linters.
type Skip struct {
	Line   int    // 1-based line number
	Text   string // the line as written (possibly shortened)
	Reason string // why it was ignored
}

// Decision is the outcome of matching a target against a group.
type Decision struct {
	// Allowed reports whether the target may be fetched.
	Allowed bool
	// Group is the selected group; nil when no group applies.
	Group *Group
	// Rule is the rule that decided; nil when no rule matched (the target
	// is allowed) or when the target is /robots.txt.
	Rule *Rule
}

// String describes the decision, e.g.
// "disallowed by Disallow: /private/ (line 3) in User-agent: * (line 1)".
func (d Decision) String() string {
	verb := "disallowed"
	if d.Allowed {
		verb = "allowed"
	}
	if d.Group == nil {
		return verb + ": no group applies"
	}
	if d.Rule == nil {
		return verb + ": no rule of " + d.Group.String() + " matches"
	}
	return verb + " by " + d.Rule.String() + " in " + d.Group.String()
}

// Sitemaps returns the Sitemap URLs of the file, in file order.
func (r *Robots) Sitemaps() []string {
	if r == nil {
		return nil
	}
	return r.sitemaps
}

// Records returns the other records that are outside any group (found before
// the first user-agent line), plus every Host record, in file order.
func (r *Robots) Records() []Record {
	if r == nil {
		return nil
	}
	return r.records
}

// Skipped returns the lines the parser ignored and why, in file order.
func (r *Robots) Skipped() []Skip {
	if r == nil {
		return nil
	}
	return r.skipped
}

// Groups returns the merged groups in order of first appearance: one per
// distinct set of file groups that a token selects. Rules of a file group
// appear in more than one merged group when its user-agent lines name
// several tokens that other file groups also name. Groups whose user-agent
// values are all invalid tokens select nothing and are left out.
func (r *Robots) Groups() []*Group {
	if r == nil {
		return nil
	}
	return r.groups
}

// Truncated reports whether the body was longer than the size cap, so that
// its end was not read.
func (r *Robots) Truncated() bool { return r != nil && r.truncated }

// Size returns the number of bytes of the body that were read: at most the
// cap, less the partial last line when the cap cut one.
func (r *Robots) Size() int {
	if r == nil {
		return 0
	}
	return r.size
}

// Select returns the group that the chain of product tokens selects. Tokens
// go from the most specific to the least ("Googlebot-Image", "Googlebot"):
// the first token that any user-agent line of the file names (compared
// case-insensitively and exactly) wins, with all groups naming it merged. If
// no token is named and wildcard is true, the merged "*" groups are returned.
// Otherwise, or if the file has no such group, Select returns nil, which
// allows everything.
func (r *Robots) Select(tokens []string, wildcard bool) *Group {
	g, _ := r.SelectIndex(tokens, wildcard)
	return g
}

// SelectIndex is [Robots.Select] that also says which token chose the group:
// its index in tokens, or -1 when the group is the "*" group or nil.
func (r *Robots) SelectIndex(tokens []string, wildcard bool) (*Group, int) {
	if r == nil {
		return nil, -1
	}
	if r.agents.filter != 0 {
		for i, t := range tokens {
			if g := r.agents.lookup(t); g != nil {
				return g, i
			}
		}
	}
	if wildcard {
		return r.star, -1
	}
	return nil, -1
}

// agentTable maps the lower-cased product tokens of a file to their merged
// groups: an open-addressing hash table probed with a case-folded hash of
// a token, so that a lookup neither allocates nor copies the token, and
// guarded by a 64-bit filter of the hashes so that most tokens the file does
// not name are turned away without touching the table.
type agentTable struct {
	filter uint64      // bit h&63 is set for the hash h of every key
	slots  []agentSlot // len is a power of two, at least twice the entries; nil when empty
	shift  uint8       // 64 - log2(len(slots))
}

type agentSlot struct {
	h      uint64 // tokenKey hash of key
	w0, w1 uint64 // tokenKey words of key
	n      int    // len(key)
	key    string // lower-cased token
	g      *Group // nil: empty slot
}

// tokenKey returns a hash of tok lower-cased (ASCII only) and its first 16
// octets lower-cased, little-endian and 0-padded, computed 8 octets at a
// time: tokens of at most 16 octets are equal, ignoring ASCII case, when
// their words are.
func tokenKey(tok string) (h, w0, w1 uint64) {
	const k = 0xbf58476d1ce4e5b9
	n := len(tok)
	switch {
	case n > 16:
		w0, w1 = lower8(load64(tok, 0)), lower8(load64(tok, 8))
	case n >= 8:
		w0, w1 = lower8(load64(tok, 0)), lower8(load64(tok, n-8)>>(8*(16-n)))
	case n >= 4:
		w0 = lower8(uint64(load32(tok, 0)) | uint64(load32(tok, n-4))<<(8*(n-4)))
	default:
		for i := 0; i < n; i++ {
			w0 |= uint64(tok[i]) << (8 * i)
		}
		w0 = lower8(w0)
	}
	h = (uint64(n)*0x9E3779B97F4A7C15 ^ w0) * k
	h = (h ^ h>>31 ^ w1) * k
	for i := 16; i < n; i += 8 {
		h = (h ^ h>>31 ^ lower8(load64(tok, min(i, n-8)))) * k
	}
	return h ^ h>>29, w0, w1
}

// lower8 lower-cases the ASCII letters among the 8 octets of x.
func lower8(x uint64) uint64 {
	y := x & 0x7F7F7F7F7F7F7F7F
	upper := (y + (0x80-'A')*lsb) &^ (y + (0x80-'Z'-1)*lsb) &^ x & msb
	return x | upper>>2
}

func load32(s string, i int) uint32 {
	s = s[i : i+4]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

func newAgentTable(keys []string, groups []*Group) agentTable {
	if len(keys) == 0 {
		return agentTable{}
	}
	b := uint8(1)
	for 1<<b < 2*len(keys) {
		b++
	}
	a := agentTable{slots: make([]agentSlot, 1<<b), shift: 64 - b}
	mask := len(a.slots) - 1
	for k, key := range keys {
		h, w0, w1 := tokenKey(key)
		a.filter |= 1 << (h & 63)
		i := int(h >> a.shift)
		for a.slots[i].g != nil {
			i = (i + 1) & mask
		}
		a.slots[i] = agentSlot{h, w0, w1, len(key), key, groups[k]}
	}
	return a
}

func (a *agentTable) lookup(tok string) *Group {
	if a.filter == 0 {
		return nil
	}
	h, w0, w1 := tokenKey(tok)
	if a.filter&(1<<(h&63)) == 0 {
		return nil
	}
	mask := len(a.slots) - 1
	for i := int(h >> a.shift); ; i = (i + 1) & mask {
		s := &a.slots[i]
		if s.g == nil {
			return nil
		}
		if s.h == h && s.n == len(tok) && s.w0 == w0 && s.w1 == w1 && (s.n <= 16 || equalFold(s.key, tok)) {
			return s.g
		}
	}
}

// Decide matches target against the group that tokens select, with the
// wildcard group as fallback: it is r.Select(tokens, true).Decide(target).
func (r *Robots) Decide(tokens []string, target string) Decision {
	if r == nil {
		return Decision{Allowed: true}
	}
	g := r.star
	if r.agents.filter != 0 { // Select, inlined
		for _, t := range tokens {
			if tg := r.agents.lookup(t); tg != nil {
				g = tg
				break
			}
		}
	}
	return g.Decide(target)
}

// Allowed reports whether the crawler with the product token agent (such as
// "FooBot") may fetch target, a path with an optional query ("/a/b?c=d").
func (r *Robots) Allowed(agent, target string) bool {
	if r == nil {
		return true
	}
	g := r.agents.lookup(agent)
	if g == nil {
		g = r.star
	}
	return g.Decide(target).Allowed
}

// Decide matches target, a path with an optional query starting with "/",
// against the group's rules. The longest matching rule decides; on a tie,
// allow wins; when no rule matches the target is allowed. /robots.txt (with
// any query) is always allowed. A nil group allows everything.
//
// The target and the patterns are compared in percent-encoding normal form
// (see the package documentation). A fragment ("#...") is dropped, and a
// target that does not start with "/" is read as if it did ("" is "/").
// Decide does not allocate.
func (g *Group) Decide(target string) Decision {
	if g == nil {
		return Decision{Allowed: true}
	}
	// Most targets are already in normal form; the matcher checks the
	// octets its answer depends on and gives up when one is not.
	if len(target) > 0 && target[0] == '/' {
		switch rawRobotsTxt(target) {
		case rawNo:
			if o, ok := g.m.match(target, true); ok {
				return g.decision(o)
			}
		case rawYes:
			return Decision{Allowed: true, Group: g}
		}
	}
	var small [512]byte
	t, big := normalTarget(&small, target)
	d := g.decide(t)
	releaseTarget(big)
	return d
}

// decide matches a normalised target.
func (g *Group) decide(t string) Decision {
	if isRobotsTxt(t) {
		return Decision{Allowed: true, Group: g}
	}
	o, _ := g.m.match(t, false)
	return g.decision(o)
}

// decision builds the decision for the rule of rank r.
func (g *Group) decision(r uint64) Decision {
	if r == 0 {
		return Decision{Allowed: true, Group: g}
	}
	i, allow := rankRule(r)
	return Decision{Allowed: allow, Group: g, Rule: &g.Rules[i]}
}

func isRobotsTxt(t string) bool {
	const p = "/robots.txt"
	return strings.HasPrefix(t, p) && (len(t) == len(p) || t[len(p)] == '?')
}

const (
	rawUnknown = iota
	rawNo
	rawYes
)

// rawRobotsTxt tells whether the normal form of t, which starts with "/",
// is a /robots.txt target, looking at the octets of t up to the first that
// differs from "/robots.txt?": rawUnknown when that octet is not kept as it
// is by normalisation.
func rawRobotsTxt(t string) int {
	const p = "/robots.txt"
	i := 1
	for i < len(t) && i < len(p) && t[i] == p[i] {
		i++
	}
	switch {
	case i == len(t):
		if i == len(p) {
			return rawYes
		}
		return rawNo
	case i == len(p) && t[i] == '?':
		return rawYes
	case byteClass[t[i]] == clKeep:
		return rawNo
	}
	return rawUnknown
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFold compares ASCII case-insensitively (no Unicode folding).
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

// validToken reports whether v is a product token: letters, digits, '-',
// '_' and '.'.
func validToken(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// sortGroups orders merged groups by first appearance.
func sortGroups(gs []*Group, first map[*Group]int) {
	sort.SliceStable(gs, func(a, b int) bool {
		if gs[a].Line != gs[b].Line {
			return gs[a].Line < gs[b].Line
		}
		return first[gs[a]] < first[gs[b]]
	})
}
