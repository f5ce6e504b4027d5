package agents

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/caddyrobots/caddy-robots/agents/internal/catalogue"
	"github.com/caddyrobots/caddy-robots/agents/internal/uatext"
)

// readCatalogueFile decodes data/catalogue.json, the generated file the
// package embeds (TestCatalogueUpToDate keeps it equal to the build).
func readCatalogueFile(t *testing.T) catalogue.File {
	t.Helper()
	data, err := os.ReadFile("data/catalogue.json")
	if err != nil {
		t.Fatal(err)
	}
	var f catalogue.File
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("decoding data/catalogue.json: %v", err)
	}
	return f
}

// validProductToken reports whether s is a product token as the project
// reads RFC 9309 §2.2.1: the identifier characters (letters, '-', '_')
// plus the digits and '.' real crawlers use (MJ12bot, 008,
// archive.org_bot), as package enforce accepts them.
func validProductToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return s != ""
}

// hasProductToken reports whether tok, ignoring case, is the whole name of
// a product of ua (uatext.ProductNames): not a part of a token ("Googlebot" of
// "Googlebot-Image/1.0"), a version ("Teoma" of "Ask Jeeves/Teoma") or a
// word of a name of several words ("Slurp" of "(compatible; Yahoo!
// Slurp)").
func hasProductToken(ua, tok string) bool {
	for _, n := range uatext.ProductNames(ua) {
		if strings.EqualFold(n, tok) {
			return true
		}
	}
	return false
}

// catalogueSamples gathers, for every catalogue entry, the User-Agent
// strings it is known by: the instances of crawler-user-agents.json that
// Identify gives it or that its own patterns come with, the literal text of
// those patterns that come with none, the ai.robots.txt keys (the names that list gives its
// agents) and the User-Agents the operator documents (curated.json
// user_agents).
func catalogueSamples(t *testing.T, f catalogue.File) map[string][]string {
	t.Helper()
	var up []struct {
		Pattern   string   `json:"pattern"`
		Instances []string `json:"instances"`
	}
	data, err := os.ReadFile("data/upstream/crawler-user-agents.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &up); err != nil {
		t.Fatal(err)
	}
	byPattern := map[string][]string{}
	samples := map[string][]string{}
	for _, u := range up {
		byPattern[u.Pattern] = u.Instances
		for _, in := range u.Instances {
			if a := identify(in); a.Known {
				samples[a.Name] = append(samples[a.Name], in)
			}
		}
	}
	var ai map[string]json.RawMessage
	data, err = os.ReadFile("data/upstream/ai-robots-txt-robots.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &ai); err != nil {
		t.Fatal(err)
	}
	for k := range ai {
		if a, ok := Lookup(k); ok {
			samples[a.Name] = append(samples[a.Name], k)
		}
	}
	for _, e := range f.Entries {
		for _, p := range e.Patterns {
			samples[e.Name] = append(samples[e.Name], byPattern[p.Re]...)
			if p.Lit != "" && len(byPattern[p.Re]) == 0 {
				samples[e.Name] = append(samples[e.Name], p.Lit)
			}
		}
		samples[e.Name] = append(samples[e.Name], e.Samples...)
	}
	return samples
}

// TestCatalogueTokens: every entry's first token is the product token its
// operator documents for robots.txt, which is the one in its User-Agent:
// a valid product token that is, compared as a whole token, the name of a
// product of at least one of the entry's sample User-Agents
// (hasProductToken), and never a part of a longer token ("Googlebot" of
// "Googlebot-Image/1.0"), a version ("Teoma" of "Ask Jeeves/Teoma"), a word
// of a name of several words ("Twingly" of "(compatible; Twingly Recon)",
// "Screaming" for "Screaming Frog SEO Spider") or a host name taken from a
// URL ("sitebulb.com" from "+https://sitebulb.com"). The exceptions are
// the robots.txt-only tokens (Google-Extended, Applebot-Extended) and
// entries with a documented token_exception, each with its source URL. An
// entry without tokens must have a name that is no product token.
func TestCatalogueTokens(t *testing.T) {
	f := readCatalogueFile(t)
	samples := catalogueSamples(t, f)
	for _, e := range f.Entries {
		if len(e.Tokens) == 0 {
			// No token: the name is several words, or a host name or
			// address that no sample carries as a product.
			if e.RobotsOnly {
				t.Errorf("%q: a robots.txt-only entry without its token", e.Name)
			}
			if validProductToken(e.Name) {
				for _, s := range samples[e.Name] {
					if hasProductToken(s, e.Name) {
						t.Errorf("%q has no token, but its User-Agent %q carries its name as one", e.Name, s)
						break
					}
				}
			}
			continue
		}
		for _, tok := range e.Tokens {
			if !validProductToken(tok) {
				t.Errorf("%q: %q is not a product token", e.Name, tok)
			}
		}
		first := e.Tokens[0]
		if len(e.Name) > len(first) && strings.EqualFold(e.Name[:len(first)], first) && strings.ContainsRune(" ./-", rune(e.Name[len(first)])) {
			t.Errorf("%q: first token %q is a shortening of the name", e.Name, first)
		}
		switch {
		case e.RobotsOnly:
			if !strings.HasPrefix(e.URL, "https://") {
				t.Errorf("%q: a robots.txt-only token needs the operator's page, not %q", e.Name, e.URL)
			}
			continue
		case e.TokenException != nil:
			if e.TokenException.Reason == "" || !strings.HasPrefix(e.TokenException.URL, "http") {
				t.Errorf("%q: token exception without reason or source: %+v", e.Name, *e.TokenException)
			}
			continue
		}
		found := false
		for _, s := range samples[e.Name] {
			if hasProductToken(s, first) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%q: first token %q is the product token of none of its %d sample User-Agents %q", e.Name, first, len(samples[e.Name]), samples[e.Name])
		}
	}
}

// TestCatalogueDocumentedSamples: each User-Agent an operator documents
// (curated.json user_agents) is identified as its entry.
func TestCatalogueDocumentedSamples(t *testing.T) {
	n := 0
	for _, e := range readCatalogueFile(t).Entries {
		for _, ua := range e.Samples {
			n++
			if a := identify(ua); a.Name != e.Name || !a.Known {
				t.Errorf("documented User-Agent %q of %q is identified as %q", ua, e.Name, a.Name)
			}
		}
	}
	if n < 15 {
		t.Errorf("only %d documented User-Agents", n)
	}
}

// TestCataloguePurposes: every entry has a purpose with its source, the
// curated entries' sources are the operators' pages (or, where no operator
// page documents one, the upstream dataset), and the AI crawlers have the
// purposes their operators document.
func TestCataloguePurposes(t *testing.T) {
	f := readCatalogueFile(t)
	valid := map[string]bool{}
	for _, p := range catalogue.Purposes {
		valid[p] = true
	}
	for _, p := range []Purpose{PurposeSearch, PurposeAITraining, PurposeAIAnswers, PurposeUserTriggered, PurposeSEO, PurposeArchiving, PurposeMonitoring, PurposeOther} {
		if !valid[string(p)] {
			t.Errorf("constant %q is not a purpose of the catalogue", p)
		}
		delete(valid, string(p))
	}
	if len(valid) != 0 {
		t.Errorf("purposes without a constant: %v", valid)
	}
	for _, e := range f.Entries {
		if !contains(catalogue.Purposes, e.Purpose) || e.PurposeSource == "" {
			t.Errorf("%q: purpose %q from %q", e.Name, e.Purpose, e.PurposeSource)
			continue
		}
		if e.Sources[0] == "curated" && !e.Generic {
			src := e.PurposeSource
			if !strings.HasPrefix(src, "https://") && !strings.HasPrefix(src, "http://") &&
				!strings.HasPrefix(src, "ai.robots.txt function") && !strings.HasPrefix(src, "crawler-user-agents tags") {
				t.Errorf("%q: purpose source %q is neither a page nor a dataset field", e.Name, src)
			}
		}
		if a, ok := Lookup(e.Name); !ok || string(a.Purpose) != e.Purpose {
			t.Errorf("Lookup(%q).Purpose = %q, want %q", e.Name, a.Purpose, e.Purpose)
		}
	}
	for name, want := range map[string]Purpose{
		"Googlebot": PurposeSearch, "bingbot": PurposeSearch, "Applebot": PurposeSearch, "PetalBot": PurposeSearch,
		"GPTBot": PurposeAITraining, "OAI-SearchBot": PurposeAIAnswers, "ChatGPT-User": PurposeUserTriggered,
		"ClaudeBot": PurposeAITraining, "Claude-SearchBot": PurposeAIAnswers, "Claude-User": PurposeUserTriggered,
		"PerplexityBot": PurposeAIAnswers, "Perplexity-User": PurposeUserTriggered,
		"Google-Extended": PurposeAITraining, "Applebot-Extended": PurposeAITraining, "CCBot": PurposeAITraining,
		"Bytespider": PurposeAITraining, "meta-externalagent": PurposeAITraining, "meta-externalfetcher": PurposeUserTriggered,
		"Amazonbot": PurposeAITraining, "DuckAssistBot": PurposeAIAnswers, "meta-webindexer": PurposeAIAnswers, "FeedFetcher-Google": PurposeUserTriggered,
		"AhrefsBot": PurposeSEO, "archive.org_bot": PurposeArchiving, "curl": PurposeOther,
	} {
		if a, ok := Lookup(name); !ok || a.Purpose != want {
			t.Errorf("Lookup(%q).Purpose = %q, want %q", name, a.Purpose, want)
		}
	}
	// The long tail: ai.robots.txt's class names and crawler-user-agents'
	// tags map as documented.
	for ua, want := range map[string]Purpose{
		"Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)": PurposeSEO,
		"Xenu Link Sleuth/1.3.8": PurposeSEO,
		"Mozilla/5.0 (compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)":                                          PurposeMonitoring,
		"Mozilla/5.0 (compatible; Kangaroo Bot/1.0; +http://www.kangaroo.com)":                                            PurposeAITraining,
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36": "",
		"ExampleCrawler/1.0 (+https://example.com/bot)":                                                                   PurposeOther,
		"": PurposeOther,
	} {
		if a := identify(ua); a.Purpose != want {
			t.Errorf("identify(%q).Purpose = %q (%s), want %q", ua, a.Purpose, a.Name, want)
		}
	}
}

// TestMultiWordNames: a crawler that names itself in several words has no
// product token, and the generic word inside its name ("Spider", an
// ai.robots.txt agent of its own) does not capture it.
func TestMultiWordNames(t *testing.T) {
	for ua, name := range map[string]string{
		"Screaming Frog SEO Spider/5.1":                                         "Screaming Frog SEO Spider",
		"Jamie's Spider (http://jamiembrown.com/)":                              "Jamie's Spider",
		"Mozilla/5.0 (compatible; Kangaroo Bot/1.0; +http://www.kangaroo.com)":  "Kangaroo Bot",
		"Mozilla/5.0 (compatible; Anchor Browser; +https://anchorbrowser.io/)":  "Anchor Browser",
		"Mozilla/5.0 (compatible; Yahoo Link Preview; https://help.yahoo.com/)": "Yahoo Link Preview",
	} {
		if a := Identify(ua); !a.Known || a.Name != name || len(a.Tokens) != 0 {
			t.Errorf("Identify(%q) = %q %q, want %q without tokens", ua, a.Name, a.Tokens, name)
		}
	}
	if a := Identify("Spider/1.0 (+https://spider.cloud)"); a.Name != "Spider" || len(a.Tokens) != 1 {
		t.Errorf("Identify(Spider) = %q %q", a.Name, a.Tokens)
	}
}

// TestSharedPurpose: the cached answer carries the crawler's purpose; a
// text browser's has none.
func TestSharedPurpose(t *testing.T) {
	id := NewIdentifier(16)
	ua := "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
	if s := id.IdentifyShared(ua); s.Purpose != PurposeAITraining {
		t.Fatalf("Purpose = %q", s.Purpose)
	}
	if b := id.IdentifyShared("Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9"); b.Purpose != "" || b.Bot {
		t.Errorf("text browser: %+v", *b)
	}
}

// TestTextBrowsers: Lynx, w3m, Links and ELinks are driven by people; their
// User-Agents are a browser's. A crawler built on them that says so (a URL,
// a bot word) is still a bot.
func TestTextBrowsers(t *testing.T) {
	for _, ua := range []string{
		"Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9",
		"Lynx/2.8.9rel.1 libwww-FM/2.14 SSL-MM/1.4.1 OpenSSL/1.1.1w",
		"Lynx/2.8.5rel.1 libwww-FM/2.15FC SSL-MM/1.4.1c OpenSSL/0.9.7e-dev",
		"w3m/0.5.3+git20230121",
		"w3m/0.5.3",
		"W3m/0.5.2",
		"Links (2.29; Linux 6.1.0-13-amd64 x86_64; GNU C 12.2; text)",
		"Links (2.28; FreeBSD 14.0-RELEASE amd64; LLVM/Clang 16.0; fb)",
		"Links (0.99; Linux 2.4.20 i686; 80x25)",
		"ELinks/0.16.1.1 (textmode; Linux 6.1.0 x86_64; 200x50-2)",
		"ELinks/0.13.2 (textmode; Linux 3.2.0-4-amd64 x86_64; 190x53-2)",
		"ELinks (0.4pre5; Linux 2.6.10-ac7 i686; 80x33)",
	} {
		if a := Identify(ua); a.Bot || a.Name != "" || a.Purpose != "" {
			t.Errorf("Identify(%q) = %+v, want a browser", ua, a)
		}
	}
	for _, ua := range []string{
		"Lynx/2.8.9rel.1 (+https://example.com/bot)",
		"w3m/0.5.3 SiteCrawler",
		"Linkscrawler/1.0",
		"Links",
		"LinksIndexerBot/1.0",
		"Lynxy/1.0",
	} {
		if a := Identify(ua); !a.Bot {
			t.Errorf("Identify(%q) = %+v, want a bot", ua, a)
		}
	}
}

// TestHasProductToken: whole product names compare; parts of tokens,
// versions and words of longer names do not.
func TestHasProductToken(t *testing.T) {
	for _, c := range []struct {
		ua, tok string
		want    bool
	}{
		{"Googlebot/2.1 (+http://www.google.com/bot.html)", "googlebot", true},
		{"Googlebot-Image/1.0", "Googlebot", false},
		{"Mozilla/2.0 (compatible; Ask Jeeves/Teoma; +http://sp.ask.com/)", "Teoma", false},
		{"Mozilla/2.0 (compatible; Ask Jeeves/Teoma; +http://sp.ask.com/)", "Ask", false},
		{"Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/)", "Slurp", false},
		{"Mozilla/5.0 (compatible; Twingly Recon; twingly.com)", "Twingly", false},
		{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)", "ClaudeBot", true},
		{"wget2/1.99.1", "wget2", true},
		{"wget2/1.99.1", "wget", false},
		{"Node/simplecrawler 1.1.9 (https://github.com/simplecrawler/simplecrawler)", "Node", true},
		{"Node/simplecrawler 1.1.9 (https://github.com/simplecrawler/simplecrawler)", "simplecrawler", false},
		{"https://gdnplus.com:Gather Analyze Provide.", "https", false},
	} {
		if got := hasProductToken(c.ua, c.tok); got != c.want {
			t.Errorf("hasProductToken(%q, %q) = %v, want %v", c.ua, c.tok, got, c.want)
		}
	}
}
