package enforce

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// This file holds the fuzz targets and a deliberately simple reference
// implementation: its own line parser and group selection, a token-list
// normaliser and a dynamic-programming glob matcher with a plain
// longest-match loop. The compiled engine must agree with it on every input.

type refRule struct {
	allow bool
	pat   string
	line  int
}

// refSelect parses file naively and returns the rules that apply to agent
// and whether any group applies.
func refSelect(file, agent string) ([]refRule, bool) {
	file = strings.TrimPrefix(file, "\uFEFF")
	file = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(file)
	type group struct {
		agents []string
		rules  []refRule
	}
	var groups []*group
	var cur *group
	inRules := false
	for i, ln := range strings.Split(file, "\n") {
		if k := strings.Index(ln, "#"); k >= 0 {
			ln = ln[:k]
		}
		k := strings.Index(ln, ":")
		if k < 0 {
			continue
		}
		key := strings.ToLower(strings.Trim(ln[:k], " \t\v\f"))
		val := strings.Trim(ln[k+1:], " \t\v\f")
		switch key {
		case "user-agent":
			if cur == nil || inRules {
				cur = &group{}
				groups = append(groups, cur)
				inRules = false
			}
			cur.agents = append(cur.agents, val)
		case "allow", "disallow":
			if cur != nil {
				cur.rules = append(cur.rules, refRule{key == "allow", val, i + 1})
				inRules = true
			}
		case "content-usage": // a rule too (draft-ietf-aipref-attach-05 §3), without effect on crawling
			inRules = inRules || cur != nil
		}
	}
	token := func(v string) bool {
		if v == "" {
			return false
		}
		for _, c := range v {
			if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.", c) {
				return false
			}
		}
		return true
	}
	collect := func(match func(string) bool) ([]refRule, bool) {
		var rules []refRule
		found := false
		for _, g := range groups {
			for _, a := range g.agents {
				if match(a) {
					found = true
					rules = append(rules, g.rules...)
					break
				}
			}
		}
		return rules, found
	}
	if rules, ok := collect(func(a string) bool {
		return token(a) && strings.EqualFold(a, agent) && isASCII(agent)
	}); ok {
		return rules, true
	}
	return collect(func(a string) bool { return a == "*" })
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// refUnits turns s into a list of normalised units, one per URI character,
// and, for patterns, marks wildcards (unit "*") and a final anchor.
func refUnits(s string, pattern bool) (units []string, anchored bool) {
	if pattern && strings.HasSuffix(s, "$") {
		anchored = true
		s = s[:len(s)-1]
	}
	const unreserved = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
	const hexd = "0123456789abcdefABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case pattern && c == '*':
			units = append(units, "*")
		case c == '%' && i+2 < len(s) && strings.IndexByte(hexd, s[i+1]) >= 0 && strings.IndexByte(hexd, s[i+2]) >= 0:
			v := strings.ToUpper(s[i+1 : i+3])
			var b byte
			for _, h := range v {
				b = b<<4 | byte(strings.IndexRune("0123456789ABCDEF", h))
			}
			if strings.IndexByte(unreserved, b) >= 0 {
				units = append(units, string(b))
			} else {
				units = append(units, "%"+v)
			}
			i += 2
		case c < 0x21 || c >= 0x7F || strings.IndexByte("\"<>\\^`{|}*$%#", c) >= 0:
			units = append(units, "%"+strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		default:
			units = append(units, string(c))
		}
	}
	return units, anchored
}

// refGlob reports whether the pattern units match a prefix of the target
// units (or all of it when anchored), by dynamic programming.
func refGlob(p []string, anchored bool, t []string) bool {
	// can[j]: the pattern prefix seen so far can match t[:j].
	can := make([]bool, len(t)+1)
	can[0] = true
	for _, u := range p {
		next := make([]bool, len(t)+1)
		if u == "*" {
			on := false
			for j := range can {
				on = on || can[j]
				next[j] = on
			}
		} else {
			for j := 0; j < len(t); j++ {
				next[j+1] = can[j] && t[j] == u
			}
		}
		can = next
	}
	if anchored {
		return can[len(t)]
	}
	for _, ok := range can {
		if ok {
			return true
		}
	}
	return false
}

// vsReference decides target for agent with r and compares the result with
// the reference's rules and found (from refSelect on the same file): it
// returns "" when both agree on whether a group applies, on allowed and on
// the deciding rule's line, and otherwise what differs.
func vsReference(r *Robots, agent string, rules []refRule, found bool, target string) string {
	allow, line := refDecide(rules, target)
	d := r.Decide([]string{agent}, target)
	got := 0
	if d.Rule != nil {
		got = d.Rule.Line
	}
	if (d.Group != nil) != found || d.Allowed != allow || got != line {
		return fmt.Sprintf("agent %q target %q: engine %v (group %v, rule line %d), reference allowed=%v line %d (group found %v)",
			agent, target, d, d.Group != nil, got, allow, line, found)
	}
	return ""
}

// refDecide returns the reference decision: allowed, and the line of the
// deciding rule (0 if none).
func refDecide(rules []refRule, target string) (bool, int) {
	if k := strings.Index(target, "#"); k >= 0 {
		target = target[:k]
	}
	if !strings.HasPrefix(target, "/") {
		target = "/" + target
	}
	t, _ := refUnits(target, false)
	path := strings.Join(t, "")
	if k := strings.Index(path, "?"); k >= 0 {
		path = path[:k]
	}
	if path == "/robots.txt" {
		return true, 0
	}
	bestLen, bestAllow, bestLine := -1, false, 0
	for _, r := range rules {
		if r.pat == "" {
			continue
		}
		p, anchored := refUnits(r.pat, true)
		if !refGlob(p, anchored, t) {
			continue
		}
		n := len(strings.Join(p, ""))
		if anchored {
			n++
		}
		if n > bestLen || n == bestLen && r.allow && !bestAllow {
			bestLen, bestAllow, bestLine = n, r.allow, r.line
		}
	}
	if bestLen < 0 {
		return true, 0
	}
	return bestAllow, bestLine
}

func checkInvariants(t *testing.T, r *Robots, body []byte, limit int) {
	t.Helper()
	if limit <= 0 {
		limit = MaxSize
	}
	if r.Size() > limit || r.Size() > len(body) {
		t.Fatalf("Size() = %d, limit %d, len %d", r.Size(), limit, len(body))
	}
	if r.Truncated() != (len(body) > limit) {
		t.Fatalf("Truncated() = %v with len %d, limit %d", r.Truncated(), len(body), limit)
	}
	for _, g := range r.Groups() {
		if len(g.Agents) == 0 || g.Line <= 0 {
			t.Fatalf("bad group %+v", g)
		}
		for i := range g.Rules {
			if g.Rules[i].Line < g.Line {
				t.Fatalf("rule %v before its group %v", &g.Rules[i], g)
			}
		}
		_ = g.Interval()
		if g.CrawlDelay < 0 || g.CrawlDelay > MaxInterval || g.RequestRate.Per < 0 || g.RequestRate.Per > MaxInterval {
			t.Fatalf("bad delay in %v: %v %v", g, g.CrawlDelay, g.RequestRate)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("User-agent: *\nDisallow: /private\nCrawl-delay: 1.5\nSitemap: https://example.com/s.xml\n"), 0)
	f.Add([]byte("\uFEFFuser-agent: a\r\nuser-agent: b\rallow: /x*y$\r\n"), 20)
	f.Fuzz(func(t *testing.T, body []byte, limit int) {
		limit %= 1 << 20
		r := ParseLimit(body, limit)
		checkInvariants(t, r, body, limit)
		for _, g := range r.Groups() {
			_ = g.String()
			for i := range g.Rules {
				_ = g.Rules[i].String()
			}
			_ = g.Decide("/")
		}
		_ = r.Decide([]string{"a", "b"}, "/x?y#z")
	})
}

func FuzzMatch(f *testing.F) {
	f.Add("User-agent: *\nDisallow: /a*b$\nAllow: /a%62\n", "bot", "/ab")
	f.Add("User-agent: FooBot\nAllow: /p\nDisallow: /\n", "foobot", "/p%2Fq")
	f.Add("User-agent: *\nDisallow: /*a*a*a*b\n", "x", "/aaaaaaaaaaaaaaaaaaaaaaaaaab")
	f.Add("User-agent: *\nDisallow: /%2A$\nDisallow: /$x\n", "x", "/*")
	f.Fuzz(func(t *testing.T, file, agent, target string) {
		if !utf8.ValidString(agent) {
			return
		}
		r := Parse([]byte(file))
		checkInvariants(t, r, []byte(file), MaxSize)
		rules, found := refSelect(file, agent)
		if diff := vsReference(r, agent, rules, found, target); diff != "" {
			t.Fatal(diff)
		}
		if allow, _ := refDecide(rules, target); r.Allowed(agent, target) != allow {
			t.Fatalf("Allowed disagrees with Decide")
		}
	})
}
