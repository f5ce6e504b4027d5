package enforce

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updatePrefs = flag.Bool("update-prefs", false, "rewrite testdata/prefs/*.golden")

// TestPrefsAttachExample checks the example of draft-ietf-aipref-attach-05
// §3.4 against its Table 1, and the ExampleBot group described there.
func TestPrefsAttachExample(t *testing.T) {
	r := Parse(mustRead(t, "testdata/prefs/attach-05-example.txt"))
	for _, c := range []struct {
		token, target string
		crawl         bool
		want          string
		line          int
	}{
		{"OtherBot", "/test", true, "train-ai=n", 4},
		{"OtherBot", "/never/test", false, "", 0},
		{"OtherBot", "/ai-ok/test", true, "train-ai=y", 5},
		{"ExampleBot", "/test", true, "train-ai=y", 9},
		{"ExampleBot", "/never/test", true, "train-ai=y", 9},
	} {
		d := r.Decide([]string{c.token}, c.target)
		p := r.Preferences([]string{c.token}, c.target)
		if d.Allowed != c.crawl || p.String() != c.want {
			t.Errorf("%s %s: crawl %v, preference %q; want %v, %q", c.token, c.target, d.Allowed, p.String(), c.crawl, c.want)
		}
		if got := p.Get(ContentUsage, "train-ai").Line; got != c.line {
			t.Errorf("%s %s: line %d, want %d", c.token, c.target, got, c.line)
		}
		if dp := d.Preferences(c.target); dp != p {
			t.Errorf("%s %s: Decision.Preferences %v differs from Robots.Preferences %v", c.token, c.target, dp, p)
		}
	}
	if got := r.Preferences([]string{"OtherBot"}, "/never/test"); !got.IsZero() || got.Describe() != "no usage preference" {
		t.Errorf("disallowed target has a preference: %s", got.Describe())
	}
}

// TestPrefsVocabStatements checks the statements of draft-ietf-aipref-vocab-07,
// parsed both as a robots.txt rule and as a header field.
func TestPrefsVocabStatements(t *testing.T) {
	f, err := os.Open("testdata/prefs/vocab-07-statements.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 3 {
			t.Fatalf("malformed line %q", line)
		}
		stmt, want, ok := cols[0], cols[1], cols[2] == "ok"
		n++
		hp, err := ParseContentUsage(stmt)
		if hp.String() != want || (err == nil) != ok {
			t.Errorf("header %q: %q, error %v; want %q, ok %v", stmt, hp.String(), err, want, ok)
		}
		r := Parse([]byte("User-agent: *\nContent-Usage: " + stmt + "\n"))
		p := r.Preferences([]string{"x"}, "/a")
		if p.String() != want {
			t.Errorf("robots.txt %q: %q, want %q", stmt, p.String(), want)
		}
		skipped := len(r.Skipped()) > 0
		if skipped == ok {
			t.Errorf("robots.txt %q: skipped %v, want %v (%v)", stmt, skipped, !ok, r.Skipped())
		}
		if !ok && !strings.Contains(p.Describe(), "did not parse") {
			t.Errorf("robots.txt %q: Describe %q does not say the rule did not parse", stmt, p.Describe())
		}
	}
	if n < 10 {
		t.Fatalf("only %d statements read", n)
	}
}

// TestPrefsMatchLikeRules checks that a Content-Usage path matches exactly
// the targets that a Disallow rule with the same pattern matches, with the
// same precedence.
func TestPrefsMatchLikeRules(t *testing.T) {
	patterns := []string{"/", "/a", "/a/", "/a*", "/a*b", "/a*b$", "/a$", "/*.pdf$", "/a%2Fb", "/a/b", "/%61", "/*", "/a*%2A", "/ä", "/a%20b", "/$", "/*0", "/a*b*c", "/x?y", "/a$b"}
	targets := []string{"/", "/a", "/a/", "/ab", "/a/b", "/a%2Fb", "/a%2fb", "/b.pdf", "/b.pdf?x", "/A", "/%61", "/a*", "/ä", "/%C3%A4", "/a%20b", "/a b", "/a%200", "/acb", "/abc", "/x?y=1", "/a$b", "", "a"}
	for _, pat := range patterns {
		rules := Parse([]byte("User-agent: *\nDisallow: " + pat + "\n"))
		usage := Parse([]byte("User-agent: *\nContent-Usage: " + pat + " train-ai=n\n"))
		g, ug := rules.Groups()[0], usage.Groups()[0]
		if ug.ContentUsage()[0].Len() != g.Rules[0].Len() {
			t.Errorf("%q: Content-Usage length %d, Disallow length %d", pat, ug.ContentUsage()[0].Len(), g.Rules[0].Len())
		}
		for _, tg := range targets {
			disallowed := !g.Decide(tg).Allowed && !isRobotsTxt(tg)
			applies := ug.Preferences(tg).Usage("train-ai") == PrefNo
			if disallowed != applies {
				t.Errorf("pattern %q, target %q: Disallow matches %v, Content-Usage applies %v", pat, tg, disallowed, applies)
			}
		}
	}
}

func TestPrefsLongestMatchAndConflicts(t *testing.T) {
	r := Parse([]byte(`User-agent: *
Content-Usage: train-ai=y, search=y
Content-Usage: /a/ train-ai=y
Content-Usage: /a/ train-ai=n, search=y
Content-Usage: /a/ search
Content-Usage: /a/b train-ai=y
Content-Usage: /c train-ai=n
Content-Usage: /c train-ai=y
`))
	g := r.Groups()[0]
	for _, c := range []struct {
		target, want string
		lines        []int
	}{
		{"/", "train-ai=y, search=y", []int{2}},
		{"/a/", "train-ai=n, search=y", []int{3, 4, 5}},       // n beats y; y beats unknown (a boolean)
		{"/a/bc", "train-ai=y", []int{6}},                     // longer wins, labels of shorter rules do not leak
		{"/c", "train-ai=n", []int{7, 8}},                     // order does not matter
		{"/a", "train-ai=y, search=y", []int{2}},              // "/a/" does not match "/a"
		{"/a/x#frag", "train-ai=n, search=y", []int{3, 4, 5}}, // fragment dropped
	} {
		p := g.Preferences(c.target)
		if p.String() != c.want || !slices.Equal(p.Lines(), c.lines) {
			t.Errorf("%s: %q lines %v, want %q lines %v", c.target, p.String(), p.Lines(), c.want, c.lines)
		}
	}
	if got := g.Preferences("/a/").Get(ContentUsage, "train-ai").Line; got != 4 {
		t.Errorf("train-ai=n reported on line %d, want 4", got)
	}
	if got := g.Preferences("/a/").Get(ContentUsage, "search").Line; got != 4 {
		t.Errorf("search=y reported on line %d, want 4 (first rule stating it)", got)
	}
}

func TestPrefsParseFailureIsUnknown(t *testing.T) {
	r := Parse([]byte("User-agent: *\nContent-Usage: train-ai=n\nContent-Usage: /x/ train-ai=y search=n\n"))
	p := r.Preferences(nil, "/x/1")
	if p.String() != "" || p.Usage("train-ai") != PrefUnknown || p.IsZero() {
		t.Errorf("failed rule: %q zero %v", p.String(), p.IsZero())
	}
	if !strings.Contains(p.Describe(), "line 3") || !strings.Contains(p.Describe(), "did not parse") {
		t.Errorf("Describe = %q", p.Describe())
	}
	sk := r.Skipped()
	if len(sk) != 1 || sk[0].Line != 3 || !strings.Contains(sk[0].Reason, "not a structured-field dictionary") {
		t.Errorf("Skipped = %+v", sk)
	}
	if u := r.Groups()[0].ContentUsage(); len(u) != 2 || u[1].Valid || !u[0].Valid || u[1].Path != "/x/" {
		t.Errorf("ContentUsage = %+v", u)
	}
	if got := r.Preferences(nil, "/y").String(); got != "train-ai=n" {
		t.Errorf("other paths: %q", got)
	}
}

func TestPrefsContentSignal(t *testing.T) {
	body := `Content-Signal: search=yes, ai-train=no, use=reference
User-agent: *
Allow: /

User-agent: A
Content-Signal: ai-input=no
Content-Signal: ai-input=yes, use=full, use=immediate, ai-train=maybe
Disallow: /x

User-agent: B
Disallow: /
`
	r := Parse([]byte(body))
	star := r.Preferences([]string{"Z"}, "/p")
	if star.SignalString() != "search=yes, ai-train=no, use=reference" || star.String() != "" {
		t.Errorf("* group: %q / %q", star.SignalString(), star.String())
	}
	if s := star.Get(ContentSignal, "use"); s.Value != "reference" || s.Line != 1 || s.Pref != PrefUnknown {
		t.Errorf("use = %+v", s)
	}
	a := r.Preferences([]string{"A"}, "/p")
	if a.SignalString() != "ai-input=no, use=immediate" {
		t.Errorf("A: %q (own lines replace the file-level ones; the most restrictive wins)", a.SignalString())
	}
	if s := a.Get(ContentSignal, "ai-input"); s.Line != 6 {
		t.Errorf("ai-input line %d, want 6", s.Line)
	}
	if got := r.Preferences([]string{"A"}, "/x"); !got.IsZero() {
		t.Errorf("disallowed target: %s", got.Describe())
	}
	if got := r.Preferences([]string{"B"}, "/p"); !got.IsZero() {
		t.Errorf("B disallows everything: %s", got.Describe())
	}
	ga := r.Select([]string{"A"}, false)
	pairs, inherited := ga.ContentSignal()
	if inherited || len(pairs) != 5 || pairs[4] != (SignalPair{Key: "ai-train", Value: "maybe", Line: 7}) {
		t.Errorf("A pairs %+v inherited %v", pairs, inherited)
	}
	if pairs, inherited := r.Select(nil, true).ContentSignal(); !inherited || len(pairs) != 3 {
		t.Errorf("* pairs %+v inherited %v", pairs, inherited)
	}
	if got := len(r.ContentSignal()); got != 3 {
		t.Errorf("file-level pairs: %d", got)
	}

	// No group at all: the file-level pairs still apply.
	only := Parse([]byte("Content-Signal: ai-train=no\n"))
	if got := only.Preferences([]string{"X"}, "/").SignalString(); got != "ai-train=no" {
		t.Errorf("file without groups: %q", got)
	}
	// A group without its own line, when the file-level line comes after
	// the groups it precedes: still outside any group only before the first.
	late := Parse([]byte("User-agent: *\nAllow: /\nContent-Signal: ai-train=no\n"))
	if late.ContentSignal() != nil || late.Preferences(nil, "/").SignalString() != "ai-train=no" {
		t.Errorf("a line after a rule belongs to the group: %v %q", late.ContentSignal(), late.Preferences(nil, "/").SignalString())
	}
}

func TestPrefsSignalParsing(t *testing.T) {
	for _, c := range []struct {
		in, want string
		err      bool
	}{
		{"search=yes, ai-train=no", "search=yes, ai-train=no", false},
		{"search=yes,ai-train=no,use=reference", "search=yes, ai-train=no, use=reference", false},
		{"Search = YES ,\tAI-Train=No", "search=yes, ai-train=no", false},
		{"search=yes ai-train=no", "", true},
		{"search=yes,,ai-input=no", "search=yes, ai-input=no", true},
		{"ai-train=n, search=true, use=partial, foo=no", "", false},
		{"", "", true},
	} {
		p, err := ParseContentSignal(c.in)
		if p.SignalString() != c.want || (err != nil) != c.err {
			t.Errorf("%q: %q, %v; want %q, error %v", c.in, p.SignalString(), err, c.want, c.err)
		}
	}
}

func TestPrefsOutsideGroupAndCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("Content-Usage: train-ai=n\nUser-agent: *\n")
	for i := range MaxContentUsageRules + 4 {
		fmt.Fprintf(&b, "Content-Usage: /p%d/ train-ai=y\n", i)
	}
	b.WriteString("Allow: /none\nUser-agent: *\nContent-Usage: /late/ train-ai=n\n")
	r := Parse([]byte(b.String()))
	g := r.Select(nil, true)
	if n := len(g.ContentUsage()); n != MaxContentUsageRules {
		t.Fatalf("%d rules kept, want %d", n, MaxContentUsageRules)
	}
	sk := r.Skipped()
	if len(sk) != 1+4+1 {
		t.Fatalf("%d skipped, want 6: %+v", len(sk), sk)
	}
	if sk[0].Line != 1 || !strings.Contains(sk[0].Reason, "before any user-agent") {
		t.Errorf("first skip %+v", sk[0])
	}
	last := sk[len(sk)-1]
	if last.Line != MaxContentUsageRules+4+5 || !strings.Contains(last.Reason, "merged group") {
		t.Errorf("last skip %+v", last)
	}
	if !slices.IsSortedFunc(sk, func(a, b Skip) int { return a.Line - b.Line }) {
		t.Errorf("Skipped not in line order")
	}
	if got := r.Preferences(nil, "/late/"); got.Usage("train-ai") != PrefUnknown {
		t.Errorf("rule past the cap applies: %s", got.Describe())
	}
	if got := r.Preferences(nil, "/p3/x").String(); got != "train-ai=y" {
		t.Errorf("/p3/x: %q", got)
	}
}

func TestPrefsHeaderAndCombine(t *testing.T) {
	h, err := ParseContentUsage("train-ai=y", "search=n")
	if err != nil || h.String() != "train-ai=y, search=n" || h.Describe() != "Content-Usage train-ai=y, search=n (header)" {
		t.Fatalf("two field lines: %q %q %v", h.String(), h.Describe(), err)
	}
	if h.Get(ContentUsage, "search").Line != 0 {
		t.Errorf("header values have no line")
	}
	if e, err := ParseContentUsage("", "search=n", " "); err != nil || e.String() != "search=n" {
		t.Errorf("empty field lines: %q %v", e.String(), err)
	}
	if z, err := ParseContentUsage(); err != nil || !z.IsZero() {
		t.Errorf("no field: %v %v", z, err)
	}
	bad, err := ParseContentUsage("train-ai=n search=y")
	if err == nil || bad.String() != "" || bad.IsZero() || !strings.Contains(err.Error(), "content-usage header") {
		t.Errorf("invalid field: %q %v", bad.String(), err)
	}
	r := Parse([]byte("User-agent: *\nContent-Usage: train-ai=n, search=y\nContent-Signal: ai-input=no\n"))
	c := r.Preferences(nil, "/").Combine(h)
	if c.String() != "train-ai=n, search=n" || c.SignalString() != "ai-input=no" {
		t.Errorf("combined: %q %q", c.String(), c.SignalString())
	}
	if c.Get(ContentUsage, "train-ai").Line != 2 || c.Get(ContentUsage, "search").Line != 0 {
		t.Errorf("combined lines: %+v", slices.Collect(c.All()))
	}
}

func TestPrefsRefuses(t *testing.T) {
	r := Parse([]byte(`User-agent: *
Content-Usage: train-ai=n
Content-Usage: /s/ search=n
Content-Signal: ai-input=no, ai-train=no, search=yes
Content-Usage: /ok/ train-ai=y, search=y
`))
	for _, c := range []struct {
		purpose, target, want string
	}{
		{"ai-training", "/", "ai-training refused by Content-Usage train-ai=n (line 2)"},
		{"AI-Training", "/", "ai-training refused by Content-Usage train-ai=n (line 2)"},
		{"ai-training", "/ok/", "ai-training refused by Content-Signal ai-train=no (line 4)"},
		{"training", "/s/x", "ai-training refused by Content-Signal ai-train=no (line 4)"},
		{"ai-answers", "/", "ai-answers refused by Content-Signal ai-input=no (line 4)"},
		{"ai-search", "/", "ai-answers refused by Content-Signal ai-input=no (line 4)"},
		{"ai-assistant", "/", "ai-answers refused by Content-Signal ai-input=no (line 4)"},
		{"search", "/s/x", "search refused by Content-Usage search=n (line 3)"},
		{"search", "/", ""},
		{"seo", "/", ""},
		{"", "/", ""},
	} {
		ref, ok := r.Preferences(nil, c.target).Refuses(c.purpose)
		got := ""
		if ok {
			got = ref.String()
		}
		if got != c.want {
			t.Errorf("%s %s: %q, want %q", c.purpose, c.target, got, c.want)
		}
	}
	h, _ := ParseContentUsage("search=n")
	if ref, ok := h.Refuses("search"); !ok || ref.String() != "search refused by Content-Usage search=n" {
		t.Errorf("header refusal: %v %v", ref, ok)
	}
}

func TestPrefsExplain(t *testing.T) {
	r := Parse([]byte("Content-Signal: search=yes\nUser-agent: *\nDisallow: /x\nContent-Usage: train-ai=n\n"))
	d := r.Decide(nil, "/a")
	want := "allowed: no rule of User-agent: * (line 2) matches; usage preferences: Content-Usage train-ai=n (line 4); Content-Signal search=yes (line 1)"
	if got := d.Explain("/a"); got != want {
		t.Errorf("Explain = %q\nwant      %q", got, want)
	}
	d = r.Decide(nil, "/x")
	if got := d.Explain("/x"); got != d.String() {
		t.Errorf("disallowed: %q", got)
	}
	plain := Parse([]byte("User-agent: *\nDisallow: /x\n"))
	if d := plain.Decide(nil, "/a"); d.Explain("/a") != d.String() {
		t.Errorf("no preferences: %q", d.Explain("/a"))
	}
}

// TestPrefsNoCost checks that files without preference records carry no
// preference state, and that lookups answer for short and long targets.
func TestPrefsNoCost(t *testing.T) {
	plain := Parse([]byte(fiveRules))
	if plain.prefs != nil || plain.Groups()[0].prefs != nil {
		t.Fatalf("preference state allocated for a file without preferences")
	}
	with := Parse([]byte(fiveRules + "Content-Usage: train-ai=n\nContent-Usage: /docs/ train-ai=y\nContent-Signal: search=yes\n"))
	tokens := []string{"FooBot"}
	long := "/" + strings.Repeat("é", 300)
	if got := with.Preferences(tokens, "/docs/manual.html").String(); got != "train-ai=y" {
		t.Errorf("with: %q", got)
	}
	if got := with.Preferences(tokens, long).String(); got != "train-ai=n" {
		t.Errorf("long target: %q", got)
	}
}

func TestPrefsVocabData(t *testing.T) {
	v := Vocab()
	if !strings.Contains(v.Attach, "draft-ietf-aipref-attach-05") || !strings.Contains(v.Vocab, "draft-ietf-aipref-vocab-07") {
		t.Errorf("sources: %q %q", v.Attach, v.Vocab)
	}
	var cu []string
	for _, l := range v.Labels {
		if l.Scheme == ContentUsage {
			cu = append(cu, l.Name)
		}
	}
	if !slices.Equal(cu, []string{"train-ai", "search"}) {
		t.Errorf("Content-Usage labels %v", cu)
	}
	for _, bad := range []string{
		`{"labels":[{"scheme":"robots","label":"x","kind":"yn"}]}`,
		`{"labels":[{"scheme":"content-usage","label":"x","kind":"yesno"}]}`,
		`{"labels":[{"scheme":"content-usage","label":"x","kind":"yn"},{"scheme":"content-usage","label":"x","kind":"yn"}]}`,
		`{"purposes":[{"purpose":"p","refusedBy":[{"scheme":"content-usage","label":"nope"}]}]}`,
		`{"labels":` + strings.Repeat(" ", 1),
	} {
		if _, err := decodeVocab([]byte(bad)); err == nil {
			t.Errorf("decodeVocab accepted %s", bad)
		}
	}
	var many strings.Builder
	many.WriteString(`{"labels":[`)
	for i := range maxLabels + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"scheme":"content-signal","label":"l%d","kind":"yesno"}`, i)
	}
	many.WriteString("]}")
	if _, err := decodeVocab([]byte(many.String())); err == nil {
		t.Errorf("decodeVocab accepted %d labels", maxLabels+1)
	}
	// Renaming a label is a change of data only.
	renamed := strings.Replace(string(vocabJSON), `"label": "train-ai"`, `"label": "train-models"`, 1)
	renamed = strings.Replace(renamed, `{"scheme": "content-usage", "label": "train-ai"}`, `{"scheme": "content-usage", "label": "train-models"}`, 1)
	nv, err := decodeVocab([]byte(renamed))
	if err != nil || nv.slot(ContentUsage, "train-models") != 0 {
		t.Errorf("renamed vocabulary: %v", err)
	}
}

// TestPrefsGolden runs the files of testdata/prefs against their queries
// and compares decisions, preferences, refusals, lint warnings and skipped
// lines with the golden files.
func TestPrefsGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/prefs/*.queries")
	if err != nil || len(files) == 0 {
		t.Fatalf("no query files: %v", err)
	}
	for _, qf := range files {
		base := strings.TrimSuffix(qf, ".queries")
		t.Run(filepath.Base(base), func(t *testing.T) {
			body := mustRead(t, base+".txt")
			r := Parse(body)
			var out strings.Builder
			for _, q := range strings.Split(string(mustRead(t, qf)), "\n") {
				if q == "" || strings.HasPrefix(q, "#") {
					continue
				}
				token, target, _ := strings.Cut(q, " ")
				d := r.Decide([]string{token}, target)
				p := r.Preferences([]string{token}, target)
				fmt.Fprintf(&out, "%s %s\n  %s\n", token, target, d.Explain(target))
				fmt.Fprintf(&out, "  Content-Usage: %q  Content-Signal: %q  lines %v\n", p.String(), p.SignalString(), p.Lines())
				for _, purpose := range []string{"ai-training", "ai-answers", "search"} {
					if ref, ok := p.Refuses(purpose); ok {
						fmt.Fprintf(&out, "  %s\n", ref)
					}
				}
			}
			out.WriteString("lint:\n")
			for _, w := range r.LintPreferences() {
				fmt.Fprintf(&out, "  %s\n", w)
			}
			out.WriteString("skipped:\n")
			for _, s := range r.Skipped() {
				fmt.Fprintf(&out, "  line %d: %s: %s\n", s.Line, s.Text, s.Reason)
			}
			golden := base + ".golden"
			if *updatePrefs {
				if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want := mustRead(t, golden)
			if out.String() != string(want) {
				t.Errorf("output differs from %s (run with -update-prefs and review the diff):\n%s", golden, out.String())
			}
		})
	}
}

func mustRead(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzPreferences checks invariants of preference parsing and lookup.
func FuzzPreferences(f *testing.F) {
	f.Add([]byte("User-agent: *\nContent-Usage: /a/ train-ai=n\nContent-Signal: search=yes\n"), "/a/b")
	f.Add([]byte("Content-Signal: ai-train=no\nUser-agent: *\nContent-Usage: */x train-ai=y search=n\n"), "/x")
	f.Add([]byte("User-agent: *\nDisallow: /p\nContent-Usage: /p*$ train-ai=y;x=\"?\", search=n\n"), "/p%41")
	f.Fuzz(func(t *testing.T, body []byte, target string) {
		r := Parse(body)
		_ = r.LintPreferences()
		lines := strings.Count(string(body), "\n") + strings.Count(string(body), "\r") + 1
		for _, g := range r.Groups() {
			p := g.Preferences(target)
			if !g.Decide(target).Allowed && !p.IsZero() {
				t.Fatalf("preferences for a disallowed target: %s", p.Describe())
			}
			for _, l := range p.Lines() {
				if l < 1 || l > lines {
					t.Fatalf("line %d out of range", l)
				}
			}
			// String is a dictionary that parses back to the same states.
			h, err := ParseContentUsage(p.String())
			if s := p.String(); s != "" && (err != nil || h.String() != s) {
				t.Fatalf("String %q does not round-trip: %q %v", s, h.String(), err)
			}
			if s := p.SignalString(); s != "" {
				q, err := ParseContentSignal(s)
				if err != nil || q.SignalString() != s {
					t.Fatalf("SignalString %q does not round-trip: %q %v", s, q.SignalString(), err)
				}
			}
			_ = p.Describe()
			for _, purpose := range []string{"ai-training", "ai-answers", "search"} {
				if ref, ok := p.Refuses(purpose); ok && ref.By.Pref != PrefNo {
					t.Fatalf("refusal by %v", ref.By)
				}
			}
			if len(g.ContentUsage()) > MaxContentUsageRules {
				t.Fatalf("%d rules kept", len(g.ContentUsage()))
			}
		}
	})
}
