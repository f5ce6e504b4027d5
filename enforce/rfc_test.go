package enforce

import (
	"strings"
	"testing"
	"time"
)

// decideCase is one row of a table test: under this file, may agent fetch
// target, and which line decides (0: no rule).
type decideCase struct {
	name   string
	file   string
	agent  string
	target string
	allow  bool
	line   int
}

func runDecide(t *testing.T, cases []decideCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Parse([]byte(c.file))
			d := r.Decide([]string{c.agent}, c.target)
			line := 0
			if d.Rule != nil {
				line = d.Rule.Line
			}
			if d.Allowed != c.allow || line != c.line {
				t.Errorf("%s %q: got %v (line %d), want allowed=%v line %d", c.agent, c.target, d, line, c.allow, c.line)
			}
			if r.Allowed(c.agent, c.target) != c.allow {
				t.Errorf("Allowed disagrees with Decide")
			}
		})
	}
}

// §1: lines end at CR, LF or CRLF; a BOM is skipped; '#' starts a comment;
// keys are case-insensitive; whitespace around keys and values is ignored.
func TestLexing(t *testing.T) {
	runDecide(t, []decideCase{
		{"LF", "User-agent: *\nDisallow: /a\n", "x", "/a", false, 2},
		{"CR", "User-agent: *\rDisallow: /a\rDisallow: /b", "x", "/b", false, 3},
		{"CRLF counts as one line end", "User-agent: *\r\nDisallow: /a\r\nDisallow: /b\r\n", "x", "/b", false, 3},
		{"BOM skipped", "\uFEFFUser-agent: *\nDisallow: /a\n", "x", "/a", false, 2},
		{"comment at end of line", "User-agent: * # everyone\nDisallow: /a # not /b\n", "x", "/a", false, 2},
		{"comment does not extend the value", "User-agent: *\nDisallow: /a#b\n", "x", "/a", false, 2},
		{"comment line between", "User-agent: *\n# Disallow: /a\nDisallow: /b\n", "x", "/a", true, 0},
		{"keys are case-insensitive", "USER-AGENT: *\nDISALLOW: /a\n", "x", "/a", false, 2},
		{"whitespace around key and value", "  User-agent  :   *  \n\tDisallow\t:\t/a\t\n", "x", "/a", false, 2},
		{"no space after colon", "User-agent:*\nDisallow:/a\n", "x", "/a", false, 2},
	})
}

// §2: only "user-agent", "allow" and "disallow" with a colon are rules.
func TestCoreKeysMustBeSpelledRight(t *testing.T) {
	runDecide(t, []decideCase{
		{"Dissallow is not a rule", "User-agent: *\nDissallow: /a\n", "x", "/a", true, 0},
		{"Disalow is not a rule", "User-agent: *\nDisalow: /a\n", "x", "/a", true, 0},
		{"useragent is not a user-agent line", "useragent: x\nDisallow: /a\n", "x", "/a", true, 0},
		{"User agent is not a user-agent line", "User agent: x\nDisallow: /a\n", "x", "/a", true, 0},
		{"missing colon", "User-agent: *\nDisallow /a\n", "x", "/a", true, 0},
		{"missing colon on user-agent", "User-agent x\nDisallow: /a\n", "x", "/a", true, 0},
	})
	r := Parse([]byte("User-agent: *\nDissallow: /a\nDisallow /b\nuser agent: y\nNoindex: /c\n"))
	sk := r.Skipped()
	if len(sk) != 3 || sk[0].Line != 2 || sk[1].Line != 3 || sk[2].Line != 4 {
		t.Fatalf("Skipped = %+v", sk)
	}
	for _, s := range sk {
		if s.Reason == "" || s.Text == "" {
			t.Errorf("skip without reason or text: %+v", s)
		}
	}
	if g := r.Groups()[0]; len(g.Records) != 1 || g.Records[0].Key != "Noindex" {
		t.Errorf("unknown key not kept as a record: %+v", g.Records)
	}
}

// §3: how groups are formed.
func TestGroups(t *testing.T) {
	runDecide(t, []decideCase{
		{"consecutive user-agent lines share rules", "User-agent: a\nUser-agent: b\nDisallow: /x\n", "b", "/x", false, 3},
		{"user-agent after rules starts a new group", "User-agent: a\nDisallow: /x\nUser-agent: b\nDisallow: /y\n", "b", "/x", true, 0},
		{"empty Disallow also ends the run", "User-agent: a\nDisallow:\nUser-agent: b\nDisallow: /y\n", "a", "/y", true, 0},
		{"rules before any user-agent are ignored", "Disallow: /x\nUser-agent: *\nDisallow: /y\n", "a", "/x", true, 0},
		{"sitemap between user-agent lines", "User-agent: a\nSitemap: /s.xml\nUser-agent: b\nDisallow: /x\n", "a", "/x", false, 4},
		{"crawl-delay between user-agent lines", "User-agent: a\nCrawl-delay: 5\nUser-agent: b\nDisallow: /x\n", "a", "/x", false, 4},
		{"unknown key between user-agent lines", "User-agent: a\nFoo: bar\nUser-agent: b\nDisallow: /x\n", "a", "/x", false, 4},
		{"blank lines do not end a group", "User-agent: a\n\nDisallow: /x\n", "a", "/x", false, 3},
	})
	r := Parse([]byte("User-agent: a\nCrawl-delay: 2\nUser-agent: b\nDisallow: /x\n"))
	if g := r.Select([]string{"b"}, false); g == nil || g.CrawlDelay != 2*time.Second {
		t.Errorf("crawl-delay inside the run belongs to the group: %+v", g)
	}
	r = Parse([]byte("Disallow: /x\nUser-agent: *\n"))
	if len(r.Skipped()) != 1 || !strings.Contains(r.Skipped()[0].Reason, "before any user-agent") {
		t.Errorf("Skipped = %+v", r.Skipped())
	}
}

// §4: group selection.
func TestGroupSelection(t *testing.T) {
	const file = "User-agent: *\nDisallow: /star\n\nUser-agent: FooBot\nDisallow: /foo1\n\nUser-agent: BarBot\nDisallow: /bar\n\nUser-agent: foobot\nDisallow: /foo2\n"
	runDecide(t, []decideCase{
		{"exact token, case-insensitive", file, "FOOBOT", "/foo1", false, 5},
		{"groups naming the token are merged", file, "FooBot", "/foo2", false, 11},
		{"selected group does not fall back to *", file, "FooBot", "/star", true, 0},
		{"unnamed crawler gets *", file, "BazBot", "/star", false, 2},
		{"unnamed crawler does not get other groups", file, "BazBot", "/foo1", true, 0},
		{"no prefix match of the token", file, "FooBot-Image", "/foo1", true, 0},
		{"no substring match of the value", file, "Foo", "/foo1", true, 0},
		{"without * everything is allowed", "User-agent: a\nDisallow: /\n", "b", "/x", true, 0},
		{"* groups are merged", "User-agent: *\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n", "x", "/b", false, 5},
		{"value with a version names nothing", "User-agent: FooBot/1.2\nDisallow: /\n", "FooBot", "/x", true, 0},
		{"value with a space names nothing", "User-agent: Foo Bar\nDisallow: /\n", "Foo", "/x", true, 0},
		{"* followed by text names nothing", "User-agent: * x\nDisallow: /\n", "x", "/x", true, 0},
		{"wildcard suffix names nothing", "User-agent: Foo*\nDisallow: /\n", "Foo", "/x", true, 0},
		{"digits are token characters", "User-agent: MJ12bot\nDisallow: /\n", "mj12bot", "/x", false, 2},
		{"leading digits too", "User-agent: 360Spider\nDisallow: /\n", "360Spider", "/x", false, 2},
		{"dots are token characters", "User-agent: Mail.RU_Bot\nDisallow: /\n", "mail.ru_bot", "/x", false, 2},
		{"empty group allows everything", "User-agent: *\nDisallow: /\n\nUser-agent: quxbot\n", "quxbot", "/x", true, 0},
	})
	r := Parse([]byte(file))
	if g := r.Select([]string{"Googlebot-Image", "barbot", "foobot"}, true); g == nil || g.Line != 7 {
		t.Errorf("chain: first named token wins, got %v", g)
	}
	if g := r.Select([]string{"nobody"}, false); g != nil {
		t.Errorf("wildcard=false must not return *: %v", g)
	}
	if g := r.Select(nil, true); g == nil || g.Agents[0] != "*" {
		t.Errorf("Select(nil, true) = %v", g)
	}
	if g := r.Select([]string{"foobot"}, true); g.String() != "User-agent: FooBot, foobot (line 4)" {
		t.Errorf("String() = %q", g.String())
	}
	for _, c := range []struct {
		tokens   []string
		wildcard bool
		line, i  int // line 0: nil group
	}{
		{[]string{"Googlebot-Image", "barbot", "foobot"}, true, 7, 1},
		{[]string{"nobody", "FOOBOT"}, true, 4, 1},
		{[]string{"nobody"}, true, 1, -1},
		{[]string{"nobody"}, false, 0, -1},
		{nil, true, 1, -1},
	} {
		g, i := r.SelectIndex(c.tokens, c.wildcard)
		line := 0
		if g != nil {
			line = g.Line
		}
		if line != c.line || i != c.i {
			t.Errorf("SelectIndex(%q, %v) = line %d, index %d; want line %d, index %d", c.tokens, c.wildcard, line, i, c.line, c.i)
		}
	}
	var none *Robots
	if g, i := none.SelectIndex([]string{"x"}, true); g != nil || i != -1 {
		t.Errorf("nil Robots: SelectIndex = %v, %d", g, i)
	}
}

// §5: precedence.
func TestPrecedence(t *testing.T) {
	runDecide(t, []decideCase{
		{"longest match wins (allow)", "User-agent: *\nDisallow: /a\nAllow: /a/b\n", "x", "/a/b/c", true, 3},
		{"longest match wins (disallow)", "User-agent: *\nAllow: /a\nDisallow: /a/b\n", "x", "/a/b/c", false, 3},
		{"order does not matter", "User-agent: *\nAllow: /a/b\nDisallow: /a\n", "x", "/a/b", true, 2},
		{"tie: allow wins", "User-agent: *\nDisallow: /a\nAllow: /a\n", "x", "/a", true, 3},
		{"tie across forms: allow wins", "User-agent: *\nDisallow: /a%62\nAllow: /a*b\n", "x", "/ab", true, 3},
		{"* counts as an octet", "User-agent: *\nDisallow: /a*\nAllow: /a\n", "x", "/ab", false, 2},
		{"$ counts as an octet", "User-agent: *\nAllow: /ab$\nDisallow: /ab\n", "x", "/ab", true, 2},
		{"length is the pattern's, not the match's", "User-agent: *\nAllow: /ab\nDisallow: /*f\n", "x", "/abcdef", true, 2},
		{"empty Disallow matches nothing", "User-agent: *\nDisallow:\n", "x", "/", true, 0},
		{"empty Allow matches nothing", "User-agent: *\nDisallow: /\nAllow:\n", "x", "/a", false, 2},
		{"first of equal rules is reported", "User-agent: *\nDisallow: /a\nDisallow: /a\n", "x", "/a", false, 2},
	})
}

// §6: percent-encoding normalisation, on both sides.
func TestNormalisation(t *testing.T) {
	runDecide(t, []decideCase{
		{"non-ASCII in the rule", "User-agent: *\nDisallow: /ä\n", "x", "/%C3%A4", false, 2},
		{"non-ASCII in the target", "User-agent: *\nDisallow: /%c3%a4\n", "x", "/ä", false, 2},
		{"hex case does not matter", "User-agent: *\nDisallow: /a%2fb\n", "x", "/a%2Fb", false, 2},
		{"unreserved escape in the rule", "User-agent: *\nDisallow: /%61dmin\n", "x", "/admin", false, 2},
		{"unreserved escape in the target", "User-agent: *\nDisallow: /admin\n", "x", "/%61dmin", false, 2},
		{"tilde", "User-agent: *\nDisallow: /~joe\n", "x", "/%7Ejoe", false, 2},
		{"%2F is not /", "User-agent: *\nDisallow: /a/b\n", "x", "/a%2Fb", true, 0},
		{"/ is not %2F", "User-agent: *\nDisallow: /a%2Fb\n", "x", "/a/b", true, 0},
		{"%3A is not :", "User-agent: *\nDisallow: /a:b\n", "x", "/a%3Ab", true, 0},
		{"%2A matches a literal *", "User-agent: *\nDisallow: /a%2A\n", "x", "/a*", false, 2},
		{"%2A does not act as a wildcard", "User-agent: *\nDisallow: /a%2Ab\n", "x", "/axb", true, 0},
		{"%24 matches a literal $", "User-agent: *\nDisallow: /a%24\n", "x", "/a$x", false, 2},
		{"%24 does not anchor", "User-agent: *\nDisallow: /a%24\n", "x", "/a", true, 0},
		{"space and %20", "User-agent: *\nDisallow: /a b\n", "x", "/a%20b", false, 2},
		{"stray % is %25", "User-agent: *\nDisallow: /100%\n", "x", "/100%25", false, 2},
		{"longest counts encoded octets", "User-agent: *\nAllow: /é\nDisallow: /%C3%A9x\n", "x", "/éx", false, 3},
	})
}

// §7: wildcards and anchors.
func TestWildcards(t *testing.T) {
	runDecide(t, []decideCase{
		{"* matches any sequence", "User-agent: *\nDisallow: /a*z\n", "x", "/a/b/c/z", false, 2},
		{"* matches the empty sequence", "User-agent: *\nDisallow: /a*z\n", "x", "/az", false, 2},
		{"runs of * act as one", "User-agent: *\nDisallow: /a***z\n", "x", "/abz", false, 2},
		{"pattern matches a prefix", "User-agent: *\nDisallow: /a*z\n", "x", "/a/z/more", false, 2},
		{"$ anchors the end", "User-agent: *\nDisallow: /*.php$\n", "x", "/x.php?y", true, 0},
		{"$ anchors the end (match)", "User-agent: *\nDisallow: /*.php$\n", "x", "/x.php", false, 2},
		{"$ suffix after repeated segment", "User-agent: *\nDisallow: /*.php$\n", "x", "/a.php.php", false, 2},
		{"$ suffix must not overlap", "User-agent: *\nDisallow: /*ab*ba$\n", "x", "/aba", true, 0},
		{"$ suffix, no overlap, match", "User-agent: *\nDisallow: /*ab*ba$\n", "x", "/abba", false, 2},
		{"$ elsewhere is literal", "User-agent: *\nDisallow: /a$b\n", "x", "/a$b", false, 2},
		{"literal $ does not anchor", "User-agent: *\nDisallow: /a$b\n", "x", "/a", true, 0},
		{"exact match with $", "User-agent: *\nDisallow: /$\n", "x", "/", false, 2},
		{"exact match with $ (longer)", "User-agent: *\nDisallow: /$\n", "x", "/a", true, 0},
		{"query is part of the target", "User-agent: *\nDisallow: /*?sort=\n", "x", "/list?page=2&sort=asc", true, 0},
		{"query is part of the target (match)", "User-agent: *\nDisallow: /*?sort=\n", "x", "/list?sort=asc", false, 2},
		{"pattern starting with *", "User-agent: *\nDisallow: *.gif$\n", "x", "/a/b.gif", false, 2},
		{"pattern without leading / never matches", "User-agent: *\nDisallow: a\n", "x", "/a", true, 0},
		{"* alone matches everything", "User-agent: *\nDisallow: *\n", "x", "/anything", false, 2},
	})
}

// §8: /robots.txt is always allowed (its path, whatever the query).
func TestRobotsTxtAlwaysAllowed(t *testing.T) {
	const file = "User-agent: *\nDisallow: /\nDisallow: /robots.txt\n"
	runDecide(t, []decideCase{
		{"plain", file, "x", "/robots.txt", true, 0},
		{"with a query", file, "x", "/robots.txt?x=1", true, 0},
		{"escaped spelling", file, "x", "/robots%2Etxt", true, 0},
		{"other paths are not", file, "x", "/robots.txt/x", false, 3},
		{"nor a case variant", file, "x", "/ROBOTS.TXT", false, 2},
	})
}

// §9: other records.
func TestRecords(t *testing.T) {
	r := Parse([]byte(`Host: example.com
Sitemap: https://example.com/a.xml
User-agent: a
Crawl-delay: 0.5
Request-rate: 1/10s
Visit-time: 0600-0845
Sitemap: https://example.com/b.xml
Disallow: /x

User-agent: a
Crawl-delay: 2
Request-rate: 30/1m
Disallow:

User-agent: b
Crawl-delay: -1
Crawl-delay: NaN
Crawl-delay: Inf
Crawl-delay: 1e3
Crawl-delay: abc
Request-rate: 0/5
Request-rate: 1/0
Request-rate: x
Crawl-delay: 999999999
Request-rate: 1/5
`))
	if got := r.Sitemaps(); len(got) != 2 || got[1] != "https://example.com/b.xml" {
		t.Errorf("Sitemaps() = %q", got)
	}
	if got := r.Records(); len(got) != 1 || got[0].Key != "Host" || got[0].Value != "example.com" || got[0].Line != 1 {
		t.Errorf("Records() = %+v", got)
	}
	a := r.Select([]string{"a"}, false)
	if a.CrawlDelay != 2*time.Second || a.RequestRate != (Rate{1, 10 * time.Second}) {
		t.Errorf("merged a: delay %v rate %+v", a.CrawlDelay, a.RequestRate)
	}
	if a.Interval() != 10*time.Second {
		t.Errorf("Interval() = %v", a.Interval())
	}
	if len(a.Records) != 1 || a.Records[0].Key != "Visit-time" || a.Records[0].Value != "0600-0845" {
		t.Errorf("records of a = %+v", a.Records)
	}
	b := r.Select([]string{"b"}, false)
	if b.CrawlDelay != MaxInterval || b.RequestRate != (Rate{1, 5 * time.Second}) || b.Interval() != MaxInterval {
		t.Errorf("b: delay %v rate %+v", b.CrawlDelay, b.RequestRate)
	}
	if n := len(r.Skipped()); n != 9 {
		t.Errorf("want 9 skipped values, got %d: %+v", n, r.Skipped())
	}
	for _, c := range []struct {
		in   string
		want Rate
	}{{"1/10s", Rate{1, 10 * time.Second}}, {"30/1m", Rate{30, time.Minute}}, {"1/5", Rate{1, 5 * time.Second}},
		{"2/1h", Rate{2, time.Hour}}, {"1/1d", Rate{1, 24 * time.Hour}}, {"1/1.5s", Rate{1, 1500 * time.Millisecond}},
		{"1/10s 0600-0845", Rate{1, 10 * time.Second}}} {
		if got, why := parseRate(c.in); got != c.want || why != "" {
			t.Errorf("parseRate(%q) = %+v %q, want %+v", c.in, got, why, c.want)
		}
	}
	if (&Group{CrawlDelay: time.Second, RequestRate: Rate{1, 5 * time.Second}}).Interval() != 5*time.Second {
		t.Error("Interval must take the stricter value")
	}
	var nilGroup *Group
	if nilGroup.Interval() != 0 || nilGroup.String() != "(no group)" {
		t.Error("nil group")
	}
}

// Targets that are not well-formed do not panic and have a defined meaning.
func TestMalformedTargets(t *testing.T) {
	const file = "User-agent: *\nDisallow: /$\nDisallow: /a\n"
	runDecide(t, []decideCase{
		{"empty is /", file, "x", "", false, 2},
		{"missing slash is added", file, "x", "a", false, 3},
		{"fragment is dropped", file, "x", "/#frag", false, 2},
		{"fragment only", file, "x", "#x", false, 2},
		{"query only", file, "x", "?q", true, 0},
		{"invalid UTF-8", file, "x", "/\xff\xfe", true, 0},
		{"long escaped target", file, "x", "/a" + strings.Repeat("%zz", 2000), false, 3},
	})
	var r *Robots
	if !r.Allowed("x", "/") || r.Decide(nil, "/").Group != nil || r.Select([]string{"x"}, true) != nil {
		t.Error("nil *Robots must allow everything")
	}
}

// The size cap: at most the cap is read and a partial last line dropped.
func TestSizeCap(t *testing.T) {
	body := []byte("User-agent: *\nDisallow: /a\nDisallow: /bbbbbbbbbb\n")
	r := ParseLimit(body, 30) // cuts inside line 3
	if !r.Truncated() || r.Size() != 27 {
		t.Fatalf("Truncated %v Size %d", r.Truncated(), r.Size())
	}
	if !r.Allowed("x", "/b") || r.Allowed("x", "/a") {
		t.Error("partial line must be dropped, complete lines kept")
	}
	if sk := r.Skipped(); len(sk) != 1 || sk[0].Line != 3 {
		t.Errorf("Skipped = %+v", sk)
	}
	r = ParseLimit(body, 27) // cut exactly after a line end
	if !r.Truncated() || r.Size() != 27 || len(r.Skipped()) != 0 {
		t.Errorf("Truncated %v Size %d %+v", r.Truncated(), r.Size(), r.Skipped())
	}
	r = ParseLimit(body, 26) // cut right before "\n": the line is complete
	if r.Size() != 26 || r.Allowed("x", "/a") {
		t.Errorf("Size %d", r.Size())
	}
	r = ParseLimit(body, 0)
	if r.Truncated() || r.Size() != len(body) {
		t.Errorf("limit 0 means MaxSize")
	}
	big := append([]byte("User-agent: *\n"), []byte(strings.Repeat("Disallow: /x\n", MaxSize/13+10))...)
	r = Parse(big)
	if !r.Truncated() || r.Size() > MaxSize {
		t.Errorf("Parse must cap at MaxSize: %d", r.Size())
	}
}

// RFC 9309 §5.1, Simple Example.
func TestRFCSimpleExample(t *testing.T) {
	const file = `User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot


EOF
`
	runDecide(t, []decideCase{
		{"foobot page.html", file, "foobot", "/example/page.html", true, 8},
		{"foobot allowed.gif", file, "foobot", "/example/allowed.gif", true, 9},
		{"foobot elsewhere", file, "foobot", "/publications/", false, 7},
		{"barbot page.html", file, "barbot", "/example/page.html", false, 13},
		{"bazbot page.html", file, "bazbot", "/example/page.html", false, 13},
		{"barbot elsewhere", file, "barbot", "/example/", true, 0},
		{"quxbot everything", file, "quxbot", "/example/page.html", true, 0},
		{"others: gif", file, "otherbot", "/a/b.gif", false, 2},
		{"others: example", file, "otherbot", "/example/x", false, 3},
		{"others: publications", file, "otherbot", "/publications/x", true, 4},
	})
	r := Parse([]byte(file))
	if sk := r.Skipped(); len(sk) != 1 || sk[0].Text != "EOF" {
		t.Errorf("Skipped = %+v", sk)
	}
}

// RFC 9309 §5.2, Longest Match.
func TestRFCLongestMatch(t *testing.T) {
	const file = "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n"
	runDecide(t, []decideCase{
		{"allowed", file, "foobot", "/example/page/", true, 2},
		{"disallowed", file, "foobot", "/example/page/disallowed.gif", false, 3},
	})
}

// RFC 9309 §2.2.2, Figure 4 (percent-encoding) and §2.2.3, Figures 5 and 6
// (special characters). Each row: the rule's path must match the URI.
func TestRFCEncodingFigures(t *testing.T) {
	rows := []struct{ rule, uri string }{
		{"/foo/bar?baz=quz", "/foo/bar?baz=quz"},
		{"/foo/bar/ツ", "/foo/bar/%E3%83%84"},
		{"/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"},
		{"/foo/bar/%62%61%7A", "/foo/bar/baz"},
		{"/path/file-with-a-%24.html", "/path/file-with-a-$.html"},
		{"/path/foo-%2A.html", "/path/foo-*.html"},
		{"/this/path/exactly$", "/this/path/exactly"},
		{"/this/*/exactly", "/this/path/exactly"},
		// Figure 4 row 2 ("https://foo.bar" encoded to "https%3A%2F%2Ffoo.bar")
		// is not followed: reserved characters and their escapes stay
		// distinct, so the rule matches the URI as written.
		{"/foo/bar?baz=https://foo.bar", "/foo/bar?baz=https://foo.bar"},
	}
	for _, row := range rows {
		r := Parse([]byte("User-agent: *\nDisallow: " + row.rule + "\n"))
		if r.Allowed("x", row.uri) {
			t.Errorf("rule %q must match %q", row.rule, row.uri)
		}
	}
	r := Parse([]byte("User-agent: *\nDisallow: /foo/bar?baz=https://foo.bar\n"))
	if !r.Allowed("x", "/foo/bar?baz=https%3A%2F%2Ffoo.bar") {
		t.Error("reserved escapes must stay distinct from the characters")
	}
	r = Parse([]byte("User-agent: *\nDisallow: /this/path/exactly$\n"))
	if !r.Allowed("x", "/this/path/exactly/more") {
		t.Error("$ must anchor")
	}
}

func TestStrings(t *testing.T) {
	r := Parse([]byte("User-agent: GPTBot\nDisallow: /private/\nAllow:\n"))
	g := r.Groups()[0]
	if g.String() != "User-agent: GPTBot (line 1)" || g.Rules[0].String() != "Disallow: /private/ (line 2)" || g.Rules[1].String() != "Allow: (line 3)" {
		t.Errorf("%q %q %q", g, &g.Rules[0], &g.Rules[1])
	}
	d := r.Decide([]string{"gptbot"}, "/private/x")
	if d.String() != "disallowed by Disallow: /private/ (line 2) in User-agent: GPTBot (line 1)" {
		t.Errorf("%q", d.String())
	}
	if g.Rules[0].Len() != 9 || g.Rules[1].Len() != 0 {
		t.Errorf("Len %d %d", g.Rules[0].Len(), g.Rules[1].Len())
	}
	var nr *Rule
	if nr.String() != "(no rule)" {
		t.Error("nil rule")
	}
}

// Overlapping groups: merged per token.
func TestOverlappingGroups(t *testing.T) {
	r := Parse([]byte("User-agent: a\nUser-agent: b\nDisallow: /1\n\nUser-agent: b\nUser-agent: c\nDisallow: /2\n"))
	gs := r.Groups()
	if len(gs) != 3 {
		t.Fatalf("Groups = %v", gs)
	}
	if !r.Allowed("a", "/2") || r.Allowed("b", "/1") || r.Allowed("b", "/2") || !r.Allowed("c", "/1") {
		t.Error("merging per token is wrong")
	}
}
