package enforce

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Parse parses and compiles a robots.txt body. It never fails: what it cannot
// use is reported by Skipped. At most MaxSize bytes are read; when the body is
// longer, the partial last line before the cap is dropped as well.
func Parse(body []byte) *Robots { return ParseLimit(body, MaxSize) }

// ParseLimit is Parse with another size cap; limit <= 0 means MaxSize.
func ParseLimit(body []byte, limit int) *Robots {
	if limit <= 0 {
		limit = MaxSize
	}
	r := &Robots{}
	n := len(body)
	var partial []byte
	if n > limit {
		r.truncated = true
		n = limit
		if c := body[limit]; c != '\n' && c != '\r' {
			k := limit - 1
			for k >= 0 && body[k] != '\n' && body[k] != '\r' {
				k--
			}
			n = k + 1
			partial = body[n:limit]
		}
	}
	r.size = n
	p := parser{r: r}
	r.src = string(body[:n])
	p.run(r.src)
	if len(partial) > 0 {
		p.skip(p.line, string(partial), "partial line cut by the size cap; ignored")
	}
	p.finish()
	return r
}

type agentLine struct {
	value string
	key   string // lower-cased token, "*", or "" when invalid
	line  int
	raw   int // index of the file group
}

type rawGroup struct {
	line    int
	rules   []Rule
	records []Record
	delay   time.Duration
	rate    Rate
	hasRule bool
	prefs   *rawPrefs // Content-Usage and Content-Signal lines (prefs.go)
}

type parser struct {
	r      *Robots
	line   int // number of the current line
	raws   []*rawGroup
	cur    *rawGroup
	agents []agentLine
	prefs  *parsePrefs // nil until a Content-Usage or Content-Signal line (prefs.go)
}

func (p *parser) skip(line int, text, reason string) {
	if len(text) > 256 {
		text = text[:256] + "..."
	}
	p.r.skipped = append(p.r.skipped, Skip{Line: line, Text: text, Reason: reason})
}

func (p *parser) run(s string) {
	s = strings.TrimPrefix(s, "\uFEFF")
	p.line = 1
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' && s[i] != '\r' {
			i++
		}
		p.parseLine(s[:i])
		if i < len(s) && s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		if i < len(s) {
			i++
		}
		s = s[i:]
		p.line++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' }

func trim(s string) string {
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func (p *parser) parseLine(raw string) {
	ln := raw
	if k := strings.IndexByte(ln, '#'); k >= 0 {
		ln = ln[:k]
	}
	ln = trim(ln)
	if ln == "" {
		return
	}
	c := strings.IndexByte(ln, ':')
	if c < 0 {
		reason := "no colon: not a record (RFC 9309 §2.2); ignored"
		if f := strings.Fields(ln); len(f) == 2 {
			if k := coreKey(f[0]); k != "" {
				reason = "no colon: not a record (RFC 9309 §2.2); some parsers read it as " + k + ": " + f[1] + "; ignored"
			}
		}
		p.skip(p.line, raw, reason)
		return
	}
	key, val := trim(ln[:c]), trim(ln[c+1:])
	switch {
	case key == "":
		p.skip(p.line, raw, "empty key; ignored")
	case equalFold(key, "user-agent"):
		p.agent(val)
	case equalFold(key, "allow"), equalFold(key, "disallow"):
		if p.cur == nil {
			p.skip(p.line, raw, "rule before any user-agent line; ignored")
			return
		}
		p.cur.rules = append(p.cur.rules, Rule{Allow: len(key) == 5, Pattern: val, Line: p.line})
		p.cur.hasRule = true
	case equalFold(key, "sitemap"):
		if val == "" {
			p.skip(p.line, raw, "empty sitemap; ignored")
			return
		}
		p.r.sitemaps = append(p.r.sitemaps, val)
	case equalFold(key, "host"):
		p.r.records = append(p.r.records, Record{Key: key, Value: val, Line: p.line})
	case equalFold(key, "crawl-delay") && p.cur != nil:
		d, why := parseDelay(val)
		if why != "" {
			p.skip(p.line, raw, "invalid crawl-delay: "+why)
			if d == 0 {
				return
			}
		}
		p.cur.delay = max(p.cur.delay, d)
	case equalFold(key, "request-rate") && p.cur != nil:
		rt, why := parseRate(val)
		if why != "" {
			p.skip(p.line, raw, "invalid request-rate: "+why)
			if rt.IsZero() {
				return
			}
		}
		p.cur.rate = stricter(p.cur.rate, rt)
	default:
		if k := misspelt(key); k != "" {
			p.skip(p.line, raw, "misspelt key "+strconv.Quote(key)+": only "+strconv.Quote(k)+" is a rule (RFC 9309 §2.2); ignored")
			return
		}
		rec := Record{Key: key, Value: val, Line: p.line}
		if p.cur != nil {
			p.cur.records = append(p.cur.records, rec)
		} else {
			p.r.records = append(p.r.records, rec)
		}
		p.prefRecord(key, val, raw) // Content-Usage, Content-Signal (prefs.go)
	}
}

func (p *parser) agent(val string) {
	if p.cur == nil || p.cur.hasRule {
		p.cur = &rawGroup{line: p.line}
		p.raws = append(p.raws, p.cur)
	}
	a := agentLine{value: val, line: p.line, raw: len(p.raws) - 1}
	switch {
	case val == "*":
		a.key = "*"
	case validToken(val):
		b := []byte(val)
		for i := range b {
			b[i] = lowerASCII(b[i])
		}
		a.key = string(b)
	default:
		p.skip(p.line, "User-agent: "+val, "user-agent value is not a single product token (RFC 9309 §2.2.1); it names no crawler")
	}
	p.agents = append(p.agents, a)
}

// finish merges the file groups per token and compiles them.
func (p *parser) finish() {
	type entry struct {
		key    string
		raws   []int
		values []agentLine
	}
	byKey := map[string]*entry{}
	var order []*entry
	for _, a := range p.agents {
		if a.key == "" {
			continue
		}
		e := byKey[a.key]
		if e == nil {
			e = &entry{key: a.key}
			byKey[a.key] = e
			order = append(order, e)
		}
		if len(e.raws) == 0 || e.raws[len(e.raws)-1] != a.raw {
			e.raws = append(e.raws, a.raw)
		}
		e.values = append(e.values, a)
	}
	bySig := map[string]*Group{}
	var pool []Group
	first := map[*Group]int{}
	var agentKeys []string
	var agentGroups []*Group
	var sig []byte
	for i, e := range order {
		sig = sig[:0]
		for _, ri := range e.raws {
			sig = strconv.AppendInt(sig, int64(ri), 10)
			sig = append(sig, ',')
		}
		g := bySig[string(sig)]
		if g == nil {
			// The group of "*" lives inside Robots, next to the fields a
			// decision reads first; the others share one array.
			switch {
			case e.key == "*":
				g = &p.r.starBuf
			case pool == nil || len(pool) == cap(pool):
				pool = make([]Group, 0, len(order)-i)
				fallthrough
			default:
				pool = append(pool, Group{})
				g = &pool[len(pool)-1]
			}
			p.merge(g, e.raws)
			bySig[string(sig)] = g
			first[g] = i
			p.r.groups = append(p.r.groups, g)
		}
		if e.key == "*" {
			p.r.star = g
			g.Agents = appendAgent(g.Agents, "*")
		} else {
			agentKeys = append(agentKeys, e.key)
			agentGroups = append(agentGroups, g)
			for _, v := range e.values {
				g.Agents = appendAgent(g.Agents, v.value)
			}
		}
	}
	p.r.agents = newAgentTable(agentKeys, agentGroups)
	sortGroups(p.r.groups, first)
	p.finishPrefs()
}

func appendAgent(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

func (p *parser) merge(g *Group, raws []int) {
	g.Line = p.raws[raws[0]].line
	n := 0
	for _, ri := range raws {
		n += len(p.raws[ri].rules)
	}
	g.Rules = make([]Rule, 0, n)
	for _, ri := range raws {
		rg := p.raws[ri]
		g.Rules = append(g.Rules, rg.rules...)
		g.Records = append(g.Records, rg.records...)
		g.CrawlDelay = max(g.CrawlDelay, rg.delay)
		g.RequestRate = stricter(g.RequestRate, rg.rate)
	}
	compile(&g.m, g.Rules)
	p.mergePrefs(g, raws)
}

// stricter returns the rate with the longer interval; a zero rate is absent.
func stricter(a, b Rate) Rate {
	if a.IsZero() {
		return b
	}
	if b.IsZero() {
		return a
	}
	// a.Per/a.Requests < b.Per/b.Requests, compared without rounding.
	if float64(a.Per)*float64(b.Requests) < float64(b.Per)*float64(a.Requests) {
		return b
	}
	return a
}

// parseSeconds parses a non-negative decimal number of seconds.
func parseSeconds(v string) (time.Duration, string) {
	if v == "" {
		return 0, "empty value"
	}
	if v[0] == '-' {
		return 0, "negative value"
	}
	digits, dot := 0, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case '0' <= c && c <= '9':
			digits++
		case c == '.':
			dot++
		default:
			return 0, "not a decimal number of seconds"
		}
	}
	if digits == 0 || dot > 1 {
		return 0, "not a decimal number of seconds"
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, "not a decimal number of seconds"
	}
	if f > MaxInterval.Seconds() {
		return MaxInterval, "larger than 24h; clamped to 24h"
	}
	return time.Duration(f * float64(time.Second)), ""
}

func parseDelay(v string) (time.Duration, string) { return parseSeconds(v) }

// parseRate parses "n/period" where period is a decimal number with an
// optional unit s, m, h or d (seconds by default). Text after the first
// whitespace (such as a time window) is ignored.
func parseRate(v string) (Rate, string) {
	if i := strings.IndexAny(v, " \t"); i >= 0 {
		v = v[:i]
	}
	slash := strings.IndexByte(v, '/')
	if slash < 0 {
		return Rate{}, "want requests/period, such as 1/10s"
	}
	n, err := strconv.Atoi(v[:slash])
	if err != nil || n <= 0 || v[0] == '+' {
		return Rate{}, "the number of requests must be a positive integer"
	}
	per := v[slash+1:]
	unit := time.Second
	if per != "" {
		switch lowerASCII(per[len(per)-1]) {
		case 's':
			per = per[:len(per)-1]
		case 'm':
			unit, per = time.Minute, per[:len(per)-1]
		case 'h':
			unit, per = time.Hour, per[:len(per)-1]
		case 'd':
			unit, per = 24*time.Hour, per[:len(per)-1]
		}
	}
	secs, why := parseSeconds(per)
	if why != "" && secs == 0 {
		return Rate{}, "period: " + why
	}
	if secs == 0 {
		return Rate{}, "period: must be positive"
	}
	d := time.Duration(float64(secs) * float64(unit) / float64(time.Second))
	if float64(secs)*float64(unit)/float64(time.Second) > float64(MaxInterval) || d > MaxInterval {
		return Rate{Requests: n, Per: MaxInterval}, "period larger than 24h; clamped to 24h"
	}
	return Rate{Requests: n, Per: d}, ""
}

// coreKey returns the core key that k names exactly (case-insensitively).
func coreKey(k string) string {
	for _, c := range []string{"User-agent", "Allow", "Disallow"} {
		if equalFold(k, c) {
			return c
		}
	}
	return ""
}

// squashKey is key lower-cased without spaces, tabs, '-' and '_', the
// form misspellings of a key are compared in.
func squashKey(key string) string {
	b := make([]byte, 0, len(key))
	for i := 0; i < len(key); i++ {
		c := lowerASCII(key[i])
		if c == ' ' || c == '\t' || c == '-' || c == '_' {
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

// misspelt returns the core key that key looks like a misspelling of, or "".
func misspelt(key string) string {
	k := squashKey(key)
	switch {
	case k == "useragent" || k == "useragents" || k == "user":
		return "user-agent"
	case len(key) >= 4 && editDistance(k, "disallow") <= 2:
		return "disallow"
	case len(key) >= 4 && editDistance(k, "allow") <= 1:
		return "allow"
	case editDistance(k, "useragent") <= 2:
		return "user-agent"
	}
	return ""
}

// editDistance is the optimal string alignment distance of short strings.
func editDistance(a, b string) int {
	if len(a) > 32 || len(b) > 32 {
		return 99
	}
	var d [33][33]int
	for i := 0; i <= len(a); i++ {
		d[i][0] = i
	}
	for j := 0; j <= len(b); j++ {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
