package enforce

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readingCase is one file, crawler and target, with what Readings must say.
type readingCase struct {
	name     string
	file     string
	tokens   []string
	wildcard bool
	target   string
	lenient  Reading // 0: Unambiguous
	line     int
	why      string // a part of Why
}

// readingCasesStandards are the cases of the 1994 standard and RFC 9309.
func readingCasesStandards() []readingCase {
	const search = "User-agent: *\nDisallow: /private/\nDisallow: /*?q=\nDisallow: /print$\nCrawl-delay: 1\n"
	return []readingCase{
		{name: "a plain prefix refuses under every reading",
			file: search, tokens: []string{"Wget"}, wildcard: true, target: "/private/a.html"},
		{name: "wildcards are literal for the 1994 standard",
			file: search, tokens: []string{"Wget"}, wildcard: true, target: "/search?q=x",
			lenient: Reading1994, line: 3, why: "wildcard rules are not understood by crawlers that follow the 1994 standard: Disallow: /*?q= (line 3)"},
		{name: "a literal *? prefix refuses under every reading",
			file: search, tokens: []string{"Wget"}, wildcard: true, target: "/*?q=x"},
		{name: "$ is a literal character for the 1994 standard",
			file: search, tokens: []string{"HTTrack"}, wildcard: true, target: "/print",
			lenient: Reading1994, line: 4, why: "`$` is a literal character for crawlers that follow the 1994 standard"},
		{name: "RFC 9309 allows",
			file: search, tokens: []string{"Wget"}, wildcard: true, target: "/public/",
			lenient: ReadingRFC9309, why: "RFC 9309 allows this path"},
		{name: "the 1994 standard reads the first record naming the crawler",
			file:   "User-agent: Wget\nDisallow: /a/\n\nUser-agent: Wget\nDisallow: /b/\n",
			tokens: []string{"Wget"}, wildcard: true, target: "/b/x",
			lenient: Reading1994, line: 1, why: "a crawler that follows the 1994 standard reads the first matching record (line 1) and it allows this path"},
		{name: "the same file refuses what the first record disallows",
			file:   "User-agent: Wget\nDisallow: /a/\n\nUser-agent: Wget\nDisallow: /b/\n",
			tokens: []string{"Wget"}, wildcard: true, target: "/a/x"},
		{name: "user-agent values are substrings of the crawler's name",
			file:   "User-agent: bot\nAllow: /\n\nUser-agent: *\nDisallow: /\n",
			tokens: []string{"FooBot"}, wildcard: true, target: "/page",
			lenient: Reading1994, line: 1, why: "reads the first matching record (line 1)"},
		{name: "an empty line after user-agent lines drops the record",
			file:   "User-agent: *\n\nDisallow: /x\n",
			tokens: []string{"Wget"}, wildcard: true, target: "/x",
			lenient: Reading1994, line: 3, why: "Disallow: /x (line 3) belongs to no record"},
		{name: "a comment line does not end a record",
			file:   "User-agent: *\n# private things\nDisallow: /x\n",
			tokens: []string{"Wget"}, wildcard: true, target: "/x"},
		{name: "the first matching line of a record decides for the 1994 standard",
			file:   "User-agent: *\nAllow: /a\nDisallow: /a/secret\n",
			tokens: []string{"Wget"}, wildcard: true, target: "/a/secret/1",
			lenient: Reading1994, line: 2, why: "obeys the first matching line of its record, Allow: /a (line 2)"},
		{name: "an empty Disallow allows everything for the 1994 standard",
			file:   "User-agent: *\nDisallow:\nDisallow: /x\n",
			tokens: []string{"Wget"}, wildcard: true, target: "/x",
			lenient: Reading1994, line: 2, why: "an empty Disallow (line 2) allows everything"},
		{name: "only the first * record counts for the 1994 standard",
			file:   "User-agent: *\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n",
			tokens: []string{"Wget"}, wildcard: true, target: "/b",
			lenient: Reading1994, line: 5, why: "second \"*\" record"},
		{name: "a Crawl-delay line ends a user-agent run for the 1994 standard",
			file:   "User-agent: a\nCrawl-delay: 5\nUser-agent: b\nDisallow: /\n",
			tokens: []string{"a"}, wildcard: true, target: "/x",
			lenient: Reading1994, line: 1, why: "reads the first matching record (line 1) and it allows this path"},
		{name: "the 1994 reading follows the token chain",
			file:   "User-agent: a\nDisallow: /x\n\nUser-agent: b\nDisallow: /x\n",
			tokens: []string{"c", "b"}, wildcard: false, target: "/x"},
		{name: "a crawler that ignores * groups has no default record",
			file:   "User-agent: *\nDisallow: /x\n",
			tokens: []string{"AdsBot-Google"}, wildcard: false, target: "/x",
			lenient: ReadingRFC9309},
	}
}

// readingCasesGoogle are the cases of Google's parser.
func readingCasesGoogle() []readingCase {
	return []readingCase{
		{name: "Google accepts Allow without a colon",
			file:   "User-agent: *\nDisallow: /\nAllow /public/\n",
			tokens: []string{"Wget"}, wildcard: true, target: "/public/a",
			lenient: ReadingGoogle, line: 3, why: "Google's parser accepts `Allow /public/` without a colon on line 3"},
		{name: "Google accepts the misspelt Dissallow, which ends a group",
			file:   "User-agent: a\nDissallow: /tmp/\nUser-agent: b\nDisallow: /x/\n",
			tokens: []string{"a"}, wildcard: true, target: "/x/1",
			lenient: ReadingGoogle, line: 2, why: "Google's parser accepts the misspelt `Dissallow` on line 2"},
		{name: "Google reads `User agent` as a user-agent line",
			file:   "User-agent: *\nDisallow: /\nUser-agent: OtherBot\nDisallow: /x\nUser agent: FooBot\nAllow: /\n",
			tokens: []string{"FooBot"}, wildcard: true, target: "/page",
			lenient: ReadingGoogle, line: 5, why: "Google's parser accepts the misspelt `User agent` on line 5"},
		{name: "Google cuts user-agent values",
			file:   "User-agent: FooBot 1.2\nAllow: /\n\nUser-agent: *\nDisallow: /\n",
			tokens: []string{"FooBot"}, wildcard: true, target: "/page",
			lenient: ReadingGoogle, line: 1, why: "Google's parser cuts the user-agent `FooBot 1.2` on line 1 to `FooBot`, so that group applies"},
		{name: "a misspelt rule Google would also refuse by changes nothing",
			file:   "User-agent: *\nDisallow: /x\nDisalow: /y\n",
			tokens: []string{"Wget"}, wildcard: true, target: "/x/1"},
		{name: "Google's index.html rule allows the directory",
			file:   "User-agent: *\nDisallow: /\nAllow: /dir/index.html\n",
			tokens: []string{"Googlebot"}, wildcard: true, target: "/dir/",
			lenient: ReadingGoogle, line: 3, why: "Google's parser reads `Allow: /dir/index.html` on line 3 as also allowing `/dir/$` (its index.html rule)"},
		{name: "Google's index.html rule applies to index.htm and to the root",
			file:   "User-agent: *\nAllow: /index.htm\nDisallow: /\n",
			tokens: []string{"Wget"}, wildcard: true, target: "/",
			lenient: ReadingGoogle, line: 2, why: "as also allowing `/$` (its index.html rule)"},
		{name: "Google's index.html rule allows the directory only, not what is under it",
			file:   "User-agent: *\nDisallow: /\nAllow: /dir/index.html\n",
			tokens: []string{"Googlebot"}, wildcard: true, target: "/dir/other.html"},
		{name: "Google's index.html rule: the added Allow /dir/$ outweighs Disallow: /dir/",
			file:   "User-agent: *\nAllow: /dir/index.html\nDisallow: /dir/\n",
			tokens: []string{"Googlebot"}, wildcard: true, target: "/dir/",
			lenient: ReadingGoogle, line: 2, why: "its index.html rule"},
		{name: "Google's index.html rule: a longer Disallow still wins",
			file:   "User-agent: *\nDisallow: /\nAllow: /dir/index.html\nDisallow: /*dir/$\n",
			tokens: []string{"Googlebot"}, wildcard: true, target: "/dir/"},
		{name: "Google's index.html rule takes the last slash of the value",
			file:   "User-agent: *\nDisallow: /\nAllow: /a/index.html/b\n",
			tokens: []string{"Googlebot"}, wildcard: true, target: "/a/"},
		{name: "Google's index.html rule is for Allow only",
			file:   "User-agent: *\nDisallow: /dir/index.html\nDisallow: /dir/\n",
			tokens: []string{"Googlebot"}, wildcard: true, target: "/dir/"},
		{name: "Google cuts a long line, which shortens an Allow",
			file:   "User-agent: *\nDisallow: /\nAllow: /long/" + strings.Repeat("a", googleMaxLine) + "\n",
			tokens: []string{"Googlebot"}, wildcard: true, target: "/long/" + strings.Repeat("a", googleMaxLine-len("Allow: /long/")) + "b",
			lenient: ReadingGoogle, line: 3, why: "Google's parser reads only the first 16663 bytes of line 3"},
		{name: "a long line cut inside its comment changes nothing",
			file:   "User-agent: *\nDisallow: /x # " + strings.Repeat("c", googleMaxLine) + "\n",
			tokens: []string{"Googlebot"}, wildcard: true, target: "/x"},
		{name: "the token chain picks the same group in every reading",
			file:   "User-agent: Googlebot\nDisallow: /g/\n\nUser-agent: *\nAllow: /\n",
			tokens: []string{"Googlebot-Image", "Googlebot"}, wildcard: true, target: "/g/1.png"},
	}
}

func TestReadings(t *testing.T) {
	cases := append(readingCasesStandards(), readingCasesGoogle()...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Parse([]byte(c.file))
			got := r.Readings(c.tokens, c.wildcard, c.target)
			target := c.target
			if len(target) > 80 {
				target = target[:80] + "..."
			}
			if c.lenient == 0 {
				if !got.Unambiguous || got.Lenient != 0 || got.Why != "" {
					t.Fatalf("Readings(%v, %q) = %+v, want Unambiguous", c.tokens, target, got)
				}
				return
			}
			if got.Unambiguous || got.Lenient != c.lenient || !strings.Contains(got.Why, c.why) || (c.line != 0 && got.Line != c.line) {
				t.Fatalf("Readings(%v, %q) = %+v\nwant lenient %v at line %d, why containing %q", c.tokens, target, got, c.lenient, c.line, c.why)
			}
		})
	}
}

func TestReadingsNilAndRepeat(t *testing.T) {
	var nilRobots *Robots
	if got := nilRobots.Readings([]string{"x"}, true, "/"); got.Unambiguous || got.Lenient != ReadingRFC9309 {
		t.Errorf("nil Robots: %+v", got)
	}
	r := Parse([]byte("User-agent: *\nDisallow: /*.pdf\n"))
	for range 3 { // built once, then reused
		got := r.Readings([]string{"Wget"}, true, "/a.pdf")
		if got.Lenient != Reading1994 || got.Line != 2 {
			t.Fatalf("got %+v", got)
		}
	}
	long := "/" + strings.Repeat("%C3%A9", 200) + ".pdf" // beyond the stack buffer
	if got := r.Readings([]string{"Wget"}, true, long); got.Lenient != Reading1994 {
		t.Fatalf("long target: %+v", got)
	}
	for _, k := range []Reading{ReadingRFC9309, Reading1994, ReadingGoogle, 9} {
		if k.String() == "" {
			t.Errorf("Reading(%d) has no name", k)
		}
	}
}

// ref1994 is CPython 3.11's legacy urllib.robotparser, transcribed as
// directly as possible (entries, state 0/1/2, first match), as an
// independent reference for the 1994 reading.
type ref1994 struct {
	entries []refEntry
	def     *refEntry
}

type refEntry struct {
	agents []string
	rules  []refRuleLine
}

type refRuleLine struct {
	path  string
	allow bool
}

func parseRef1994(body string) *ref1994 {
	rp := &ref1994{}
	body = strings.TrimPrefix(body, "\uFEFF")
	body = strings.ReplaceAll(body, "\r\n", "\n")
	body = strings.ReplaceAll(body, "\r", "\n")
	lines := strings.Split(body, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	state := 0
	entry := &refEntry{}
	addEntry := func(e *refEntry) {
		for _, a := range e.agents {
			if a == "*" {
				if rp.def == nil {
					rp.def = e
				}
				return
			}
		}
		rp.entries = append(rp.entries, *e)
	}
	for _, line := range lines {
		if line == "" {
			if state == 1 {
				entry = &refEntry{}
				state = 0
			} else if state == 2 {
				addEntry(entry)
				entry = &refEntry{}
				state = 0
			}
		}
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 2)
		if len(parts) != 2 {
			continue
		}
		key := strings.ToLower(strings.TrimSpace(parts[0]))
		val := strings.TrimSpace(parts[1])
		switch key {
		case "user-agent":
			if state == 2 {
				addEntry(entry)
				entry = &refEntry{}
			}
			entry.agents = append(entry.agents, val)
			state = 1
		case "disallow", "allow":
			if state != 0 {
				allow := key == "allow"
				if val == "" && !allow {
					allow = true
				}
				entry.rules = append(entry.rules, refRuleLine{path: normalString(val), allow: allow})
				state = 2
			}
		case "crawl-delay", "request-rate":
			if state != 0 {
				state = 2
			}
		}
	}
	if state == 2 {
		addEntry(entry)
	}
	return rp
}

func (e *refEntry) appliesTo(ua string) bool {
	ua = strings.ToLower(ua)
	for _, a := range e.agents {
		if a == "*" {
			return true
		}
		a, _, _ = strings.Cut(a, "/")
		a = strings.ToLower(strings.TrimSpace(a))
		if a != "" && strings.Contains(ua, a) {
			return true
		}
	}
	return false
}

func (e *refEntry) allowance(url string) bool {
	for _, r := range e.rules {
		if strings.HasPrefix(url, r.path) {
			return r.allow
		}
	}
	return true
}

func (rp *ref1994) canFetch(ua, target string) bool {
	var small [512]byte
	url, big := normalTarget(&small, target)
	defer releaseTarget(big)
	for i := range rp.entries {
		if rp.entries[i].appliesTo(ua) {
			return rp.entries[i].allowance(url)
		}
	}
	if rp.def != nil {
		return rp.def.allowance(url)
	}
	return true
}

// TestReadingsCorpus checks, over the 400 real files, that a target RFC
// 9309 refuses is called Unambiguous only when the 1994 prefix reading
// (the independent reference above) refuses it too, and that the 1994
// reading really is consulted: some refusals are found ambiguous.
func TestReadingsCorpus(t *testing.T) {
	files := readCorpus(t)
	var refused, unambiguous, by1994, byGoogle int
	for _, f := range files {
		body := f.body
		r := Parse(body)
		ref := parseRef1994(r.src)
		targets := append(corpusTargets(body), "/search?q=x", "/a/b?q=1&page=2", "/print$")
		for _, agent := range []string{"Googlebot", "bingbot", "Wget", "HTTrack", "SomeNewBot"} {
			for _, target := range targets {
				if r.Decide([]string{agent}, target).Allowed {
					continue
				}
				refused++
				got := r.Readings([]string{agent}, true, target)
				switch {
				case got.Unambiguous:
					unambiguous++
					if ref.canFetch(agent, target) {
						t.Errorf("%s: %s %q: Unambiguous, but the 1994 prefix reading allows it", f.name, agent, target)
					}
				case got.Lenient == Reading1994:
					by1994++
					if !ref.canFetch(agent, target) {
						t.Errorf("%s: %s %q: said the 1994 reading allows it (%s), the reference refuses", f.name, agent, target, got.Why)
					}
				case got.Lenient == ReadingGoogle:
					byGoogle++
				default:
					t.Errorf("%s: %s %q: refused by RFC 9309 but answered %+v", f.name, agent, target, got)
				}
				if !got.Unambiguous && got.Why == "" {
					t.Errorf("%s: %s %q: no explanation", f.name, agent, target)
				}
			}
		}
	}
	t.Logf("%d files: %d RFC refusals, %d unambiguous, %d allowed by the 1994 reading, %d by Google's", len(files), refused, unambiguous, by1994, byGoogle)
	if unambiguous == 0 || by1994 == 0 {
		t.Errorf("the corpus did not exercise both outcomes")
	}
}

func BenchmarkReadings(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("testdata", "corpus", "github.com.txt"))
	if err != nil {
		b.Skip(err)
	}
	r := Parse(body)
	tokens := []string{"SomeBot"}
	r.Readings(tokens, true, "/")
	b.ReportAllocs()
	for b.Loop() {
		r.Readings(tokens, true, "/torvalds/linux/tree/v5.0/kernel")
	}
}
