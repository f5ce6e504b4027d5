package agents

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestCandidateTokens(t *testing.T) {
	for ua, want := range map[string][]string{
		// Typical browsers: none.
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36":                         nil,
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0":           nil,
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1": nil,
		"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0":                                                                  nil,
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15":                   nil,
		"Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36":                         nil,
		"Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.1; Trident/6.0)":                                                                        nil,
		// A phone's model is a word of its own.
		"Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/AP2A.240805.005; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/127.0.6533.103 Mobile Safari/537.36": {"pixel"},
		"Mozilla/5.0 (Linux; Android 13; SM-G991B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36":                                           {"sm-g991b"},
		// A name in the platform comment, lower-cased, once.
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64; MyAgent) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 MYAGENT": {"myagent"},
		// Versions, values, URLs, e-mail addresses, host names, language
		// tags and screen sizes are no candidates; product names are.
		"Mozilla/5.0 (Linux; U; Android 4.0.4; en-us; GT-I9100 Build/IMM76D) AppleWebKit/534.30 (KHTML, like Gecko) Version/4.0 Mobile Safari/534.30": {"gt-i9100"},
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)":                                     {"claudebot"},
		"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)":                                                                     {"bingbot"},
		"Foo/1.0 (example.com; 1080x2400; 480dpi; zh-Hans-CN; en_US) Bar_baz.2":                                                                       {"foo", "bar_baz.2"},
		"Node/simplecrawler 1.1.9 (https://github.com/simplecrawler/simplecrawler)":                                                                   {"node"},
		"": nil,
	} {
		if got := candidateTokens(ua); !reflect.DeepEqual(got, want) {
			t.Errorf("candidateTokens(%q) = %q, want %q", ua, got, want)
		}
	}
	long := "Mozilla/5.0 (" + strings.Repeat("Word", 0)
	for i := 0; i < 40; i++ {
		long += "; w" + letters(1000+i)
	}
	if got := candidateTokens(long + ")"); len(got) != maxCandidates {
		t.Errorf("%d candidates, want at most %d", len(got), maxCandidates)
	}
}

func TestNamedBy(t *testing.T) {
	id := NewIdentifier(16)
	ua := "Mozilla/5.0 (Windows NT 10.0; Win64; x64; MyAgent) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	s := id.IdentifyShared(ua)
	if s.Bot {
		t.Fatalf("%q is taken for a bot's: %+v", ua, s.Agent)
	}
	for _, c := range []struct {
		groups []string
		want   string
	}{
		{[]string{"*", "Googlebot", "MyAgent"}, "MyAgent"},
		{[]string{"myagent"}, "myagent"},
		{[]string{"MYAGENT"}, "MYAGENT"},
		{[]string{"My", "Agent", "MyAgen", "MyAgents", "*"}, ""},
		{[]string{"Mozilla", "Chrome", "Safari", "Windows", "Win64", "AppleWebKit", "Gecko", "KHTML"}, ""},
		{nil, ""},
	} {
		if got := s.NamedBy(c.groups...); got != c.want {
			t.Errorf("NamedBy(%q) = %q, want %q", c.groups, got, c.want)
		}
	}
	if b := id.IdentifyShared(benchBrowser); b.Candidates != nil || b.NamedBy("Mozilla", "Chrome", "Safari") != "" {
		t.Errorf("a typical browser has candidates %q", b.Candidates)
	}
	if NewShared(Agent{Bot: true, Name: "SignedBot"}).NamedBy("SignedBot") != "" {
		t.Error("an answer made by NewShared has candidates")
	}
}

// TestCandidatesCached: the candidates are computed once per User-Agent
// and shared by every caller; a User-Agent too long to cache gets its own.
func TestCandidatesCached(t *testing.T) {
	id := NewIdentifier(16)
	ua := "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"
	a, b := id.IdentifyShared(ua), id.IdentifyShared(ua)
	if len(a.Candidates) != 1 || &a.Candidates[0] != &b.Candidates[0] {
		t.Errorf("candidates %q and %q are not one cached slice", a.Candidates, b.Candidates)
	}
	long := "Mozilla/5.0 (Windows NT 10.0; Win64; x64; LongAgent) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 " + strings.Repeat(" ", maxCachedLen)
	if s := id.IdentifyShared(long); s.NamedBy("LongAgent") != "LongAgent" {
		t.Errorf("uncacheable User-Agent: candidates %q", s.Candidates)
	}
}

// TestBrowsersHaveNoCommonCandidates: what most browsers have in common is
// a browser's, not a candidate. Only device models may be candidates of
// many of the 7,707 strings (the emulator defaults of one source: Nexus 5,
// the Galaxy S5's SM-G900P, Pixel 2).
func TestBrowsersHaveNoCommonCandidates(t *testing.T) {
	browsers := loadBrowsers(t)
	count := map[string]int{}
	none := 0
	for _, b := range browsers {
		c := candidateTokens(b)
		if c == nil {
			none++
		}
		for _, w := range c {
			count[w]++
		}
	}
	models := map[string]bool{"nexus": true, "sm-g900p": true, "pixel": true}
	for w, n := range count {
		if n > 10 && !models[w] {
			t.Errorf("candidate %q in %d browser strings", w, n)
		}
	}
	t.Logf("%d of %d browser strings have no candidate", none, len(browsers))
	if none < len(browsers)/3 {
		t.Errorf("only %d of %d browser strings have no candidate", none, len(browsers))
	}
}

// readGroupTokens reads the user-agent lines of a robots.txt as this test
// needs them (package enforce, which parses robots.txt, is not imported
// here): for each line "User-agent: value", ignoring case and spaces around
// the colon, with comments cut, the value itself when it is a product
// token and else its leading token ("Mozilla/4.0 (compatible; ...)" ->
// "Mozilla"), which is stricter than enforce (a value that is not a single
// token names nothing there).
func readGroupTokens(body []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "\ufeff")
		if k := strings.IndexByte(line, '#'); k >= 0 {
			line = line[:k]
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(key), "user-agent") {
			continue
		}
		value = strings.TrimSpace(value)
		tok := value
		if !validProductToken(tok) {
			tok = strings.TrimRight(leadingTokenOf(value), ".-")
		}
		if tok != "" {
			out = append(out, tok)
		}
	}
	return out
}

func leadingTokenOf(s string) string {
	i := 0
	for i < len(s) && validProductToken(s[i:i+1]) {
		i++
	}
	return s[:i]
}

// TestRobotsCorpusNamesNoBrowser: no token that a group of the 400 real
// robots.txt files names (nor the browser names a site might write) is a
// candidate token of any of the 7,707 browser strings, so no site's
// robots.txt turns people into bots.
func TestRobotsCorpusNamesNoBrowser(t *testing.T) {
	files := readRobotsCorpus(t)
	if len(files) < 400 {
		t.Fatalf("%d robots.txt files in the corpus, want 400", len(files))
	}
	groups := map[string]string{} // lower-cased token -> where it is named
	for name, body := range files {
		for _, tok := range readGroupTokens(body) {
			if _, ok := groups[strings.ToLower(tok)]; !ok {
				groups[strings.ToLower(tok)] = name
			}
		}
	}
	for _, tok := range []string{"Mozilla", "Chrome", "Safari", "Firefox", "Gecko", "AppleWebKit", "KHTML",
		"Windows", "Linux", "Android", "iPhone", "iPad", "Macintosh", "Mobile", "Version", "Edg", "OPR",
		"CriOS", "FxiOS", "SamsungBrowser", "compatible", "MSIE", "Trident", "Instagram", "MicroMessenger"} {
		if _, ok := groups[strings.ToLower(tok)]; !ok {
			groups[strings.ToLower(tok)] = "no file of the corpus (a name a site might write)"
		}
	}
	if len(files) < 400 || len(groups) < 800 {
		t.Fatalf("%d files, %d group tokens: the corpus is not all there", len(files), len(groups))
	}
	browsers := loadBrowsers(t)
	var named []string
	seen := map[string]bool{}
	for _, b := range browsers {
		for _, c := range candidateTokens(b) {
			if where, ok := groups[c]; ok && !seen[c] {
				seen[c] = true
				named = append(named, c+" (named in "+where+", e.g. by "+b+")")
			}
		}
	}
	sort.Strings(named)
	for _, n := range named {
		t.Errorf("robots.txt token %s is a browser's candidate", n)
	}
	t.Logf("%d group tokens of %d files, %d browser strings", len(groups), len(files), len(browsers))
}

// readRobotsCorpus reads the 400 real robots.txt files the enforce
// package's tests keep (enforce/testdata/robots-corpus.tar.gz; their
// sources are in its SOURCE.md and NOTICE): file name -> body.
func readRobotsCorpus(t *testing.T) map[string][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "enforce", "testdata", "robots-corpus.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || !strings.HasSuffix(h.Name, ".txt") {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(h.Name)] = b
	}
}
