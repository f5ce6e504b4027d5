package catalogue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"unicode"

	"github.com/caddyrobots/caddy-robots/agents/internal/uatext"
)

// The upstream files, relative to the data directory, and their provenance.
var upstreamSources = []Source{
	{Name: "curated", File: "curated.json", License: "Apache-2.0 (this project)"},
	{Name: "ai.robots.txt", File: "upstream/ai-robots-txt-robots.json", Repo: "https://github.com/ai-robots-txt/ai.robots.txt", Commit: "738c80df2169027ce0e07c9976fd3f2f57dd8f7b", License: "MIT"},
	{Name: "crawler-user-agents", File: "upstream/crawler-user-agents.json", Repo: "https://github.com/monperrus/crawler-user-agents", Commit: "7c7f9f254f16fcbc7d0fcb60d0a188897c00b050", License: "MIT"},
}

type curatedFile struct {
	Entries []curatedEntry `json:"entries"`
	// Exclude lists upstream patterns left out of the catalogue, each
	// with the reason.
	Exclude []curatedExclude `json:"exclude"`
}

// curatedExclude is an upstream pattern left out of the catalogue.
type curatedExclude struct {
	Pattern string `json:"pattern"`
	Reason  string `json:"reason"`
}

type curatedEntry struct {
	Name            string   `json:"name"`
	Operator        string   `json:"operator"`
	Category        string   `json:"category"`
	Tokens          []string `json:"tokens"`
	Match           []string `json:"match"`
	Upstream        []string `json:"upstream"`
	Generic         bool     `json:"generic"`
	RobotsOnly      bool     `json:"robots_only"`
	CrawlDelay      string   `json:"crawl_delay"`
	RequestRate     string   `json:"request_rate"`
	IgnoresWildcard bool     `json:"ignores_wildcard"`
	UserTriggered   bool     `json:"user_triggered"`
	RobotsCacheTTL  string   `json:"robots_cache_ttl"`
	Verify          string   `json:"verify"`
	URL             string   `json:"url"`
	Note            string   `json:"note"`
	// Purpose is what the operator says the crawler is for (one of
	// Purposes); PurposeSource is where it says so, when that is not URL
	// (another page of the operator, or a dataset for the few entries no
	// operator page documents).
	Purpose       string `json:"purpose"`
	PurposeSource string `json:"purpose_source"`
	// UserAgents are User-Agent strings the operator documents (at URL),
	// checked by the tests against the entry's tokens.
	UserAgents []string `json:"user_agents"`
	// TokenException documents why the first token does not occur in the
	// crawler's User-Agent.
	TokenException *TokenException `json:"token_exception"`
	// FallbackSource is the operator page that documents the fallback
	// tokens after the first (bingbot to msnbot, Applebot to Googlebot).
	FallbackSource string `json:"fallback_source"`
	// TokenShared says why the first token, although the one the client
	// obeys, is other clients' too (simplecrawler's Node): it is then no
	// word that identifies the entry.
	TokenShared string `json:"token_shared"`
}

type aiAgent struct {
	Operator string `json:"operator"`
	Function string `json:"function"`
}

type upstreamEntry struct {
	Pattern   string   `json:"pattern"`
	URL       string   `json:"url"`
	Instances []string `json:"instances"`
	Tags      []string `json:"tags"`
	DependsOn []string `json:"depends_on"`
}

// VerifyKeys are the verification method keys an entry's Verify may name.
var VerifyKeys = []string{"google-common", "google-special", "google-user-triggered", "bingbot", "applebot", "yahoo-slurp", "yandex", "baidu", "amazonbot", "petalbot", "duckduckgo", "openai-gptbot", "openai-searchbot", "openai-chatgpt-user", "perplexitybot", "perplexity-user", "anthropic", "ccbot", "ahrefs", "meta", "pinterest"}

// Purposes are the values an entry's Purpose may take.
var Purposes = []string{"search", "ai-training", "ai-answers", "user-triggered", "seo", "archiving", "monitoring", "other"}

// Categories are the values an entry's Category may take.
var Categories = []string{"search", "ai-training", "ai-search", "ai-assistant", "seo", "archive", "social-preview", "monitoring", "feed-reader", "http-library", "other"}

type builder struct {
	entries []*Entry
	byKey   map[string]*Entry // lower-case name or word -> entry
}

func (b *builder) add(e *Entry) {
	b.entries = append(b.entries, e)
	b.index(e)
}

func (b *builder) index(e *Entry) {
	for _, k := range append([]string{e.Name}, e.Words...) {
		k = strings.ToLower(k)
		if _, ok := b.byKey[k]; !ok {
			b.byKey[k] = e
		}
	}
}

func (b *builder) find(keys ...string) *Entry {
	for _, k := range keys {
		if e := b.byKey[strings.ToLower(k)]; e != nil {
			return e
		}
	}
	return nil
}

func addUnique(list []string, s ...string) []string {
outer:
	for _, x := range s {
		for _, y := range list {
			if strings.EqualFold(x, y) {
				continue outer
			}
		}
		list = append(list, x)
	}
	return list
}

// Build reads the inputs from dataDir and returns the catalogue file's bytes.
func Build(dataDir string) ([]byte, error) {
	cur, ai, up, err := readInputs(dataDir)
	if err != nil {
		return nil, err
	}
	b := &builder{byKey: map[string]*Entry{}}
	explicit, err := b.addCurated(cur.Entries)
	if err != nil {
		return nil, err
	}
	b.addAIRobots(ai)
	if err := b.addCrawlerUserAgents(up, cur.Exclude, explicit); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, e := range b.entries {
		if e.RobotsCacheTTL == "" {
			e.RobotsCacheTTL = "24h"
		}
		if names[strings.ToLower(e.Name)] {
			return nil, fmt.Errorf("catalogue: two entries are named %q", e.Name)
		}
		names[strings.ToLower(e.Name)] = true
	}
	return b.encode()
}

// readInputs reads the curated file and the two upstream lists.
func readInputs(dataDir string) (cur curatedFile, ai map[string]aiAgent, up []upstreamEntry, err error) {
	if err := readJSON(filepath.Join(dataDir, "curated.json"), &cur); err != nil {
		return cur, nil, nil, err
	}
	aiRaw, err := os.ReadFile(filepath.Join(dataDir, "upstream/ai-robots-txt-robots.json"))
	if err != nil {
		return cur, nil, nil, fmt.Errorf("catalogue: %w", err)
	}
	if err := json.Unmarshal(aiRaw, &ai); err != nil {
		return cur, nil, nil, fmt.Errorf("catalogue: parsing ai-robots-txt-robots.json: %w", err)
	}
	if err := readJSON(filepath.Join(dataDir, "upstream/crawler-user-agents.json"), &up); err != nil {
		return cur, nil, nil, err
	}
	return cur, ai, up, nil
}

// addCurated adds the curated entries, and returns the curated entry each
// upstream pattern a curated entry claims belongs to.
func (b *builder) addCurated(entries []curatedEntry) (explicit map[string]*Entry, err error) {
	explicit = map[string]*Entry{} // upstream pattern -> curated entry
	for _, c := range entries {
		if err := checkCurated(c); err != nil {
			return nil, err
		}
		e := &Entry{
			Name: c.Name, Operator: c.Operator, Category: c.Category, Tokens: c.Tokens,
			Generic: c.Generic, RobotsOnly: c.RobotsOnly, CrawlDelay: c.CrawlDelay,
			RequestRate: c.RequestRate, IgnoresWildcard: c.IgnoresWildcard,
			UserTriggered: c.UserTriggered, RobotsCacheTTL: c.RobotsCacheTTL,
			Verify: c.Verify, URL: c.URL, Sources: []string{"curated"},
			Purpose: c.Purpose, PurposeSource: c.PurposeSource, Samples: c.UserAgents,
			TokenException: c.TokenException, FallbackSource: c.FallbackSource,
		}
		if e.Purpose == "" && c.Generic {
			e.Purpose, e.PurposeSource = "other", "generic client: its purpose is whoever runs it"
		}
		if e.PurposeSource == "" {
			e.PurposeSource = c.URL
		}
		e.Words = addUnique(nil, c.Name)
		if len(c.Tokens) > 0 && c.TokenShared == "" {
			e.Words = addUnique(e.Words, c.Tokens[0])
		}
		e.Words = addUnique(e.Words, c.Match...)
		if b.find(e.Words...) != nil {
			return nil, fmt.Errorf("catalogue: curated entry %q repeats a name", c.Name)
		}
		for _, p := range c.Upstream {
			explicit[p] = e
		}
		b.add(e)
	}
	return explicit, nil
}

// addAIRobots adds ai.robots.txt's agents, in case-insensitive key order:
// to the entry that already has the name, or as entries of their own.
func (b *builder) addAIRobots(ai map[string]aiAgent) {
	keys := make([]string, 0, len(ai))
	for k := range ai {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if a, c := strings.ToLower(keys[i]), strings.ToLower(keys[j]); a != c {
			return a < c
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		v := ai[k]
		tok := uatext.LeadingToken(k)
		mergeKey := tok
		if uatext.IsDomain(tok) {
			mergeKey = tok[:strings.IndexByte(tok, '.')]
		}
		rest := strings.TrimLeft(k[len(tok):], " /")
		versioned := rest == "" || rest[0] >= '0' && rest[0] <= '9'
		if e := b.find(k, tok, mergeKey); e != nil {
			e.Sources = addUnique(e.Sources, "ai.robots.txt")
			if !versioned {
				e.Words = addUnique(e.Words, k)
			} else if mergeKey != tok {
				e.Words = addUnique(e.Words, tok) // "quillbot.com"
			}
			b.index(e)
			continue
		}
		name := k
		if versioned {
			name = tok
		}
		e := &Entry{Name: name, Operator: operatorOf(v.Operator), Category: aiCategory(v.Function),
			Words: []string{name}, Sources: []string{"ai.robots.txt"},
			Purpose: aiPurpose(v.Function), PurposeSource: fmt.Sprintf("ai.robots.txt function %q", v.Function)}
		// A name of several words ("Kangaroo Bot") has no product token:
		// its first word is not one.
		if name == tok {
			e.Tokens = []string{tok}
		}
		if mergeKey != tok {
			e.Words = addUnique(e.Words, mergeKey)
		}
		if strings.HasSuffix(strings.ToLower(tok), "-user") {
			e.UserTriggered = true
			e.Category = "ai-assistant"
			e.Purpose = "user-triggered"
		}
		b.add(e)
	}
}

// addCrawlerUserAgents adds crawler-user-agents' patterns, but those
// excluded: to the curated entry that claims the pattern, to the entry
// that has the name derived from it, or as entries of their own; then the
// dependencies between them.
func (b *builder) addCrawlerUserAgents(up []upstreamEntry, exclude []curatedExclude, explicit map[string]*Entry) error {
	byPattern := map[string]*Entry{}
	excluded := map[string]bool{}
	for _, x := range exclude {
		if x.Reason == "" {
			return fmt.Errorf("catalogue: excluded pattern %q needs a reason", x.Pattern)
		}
		excluded[x.Pattern] = true
	}
	for _, u := range up {
		if excluded[u.Pattern] {
			continue
		}
		p, err := compilePattern(u.Pattern)
		if err != nil {
			return err
		}
		e := explicit[u.Pattern]
		if e == nil {
			e = b.upstreamEntry(u)
		}
		if e.URL == "" {
			e.URL = u.URL
		}
		e.Sources = addUnique(e.Sources, "crawler-user-agents")
		e.Patterns = append(e.Patterns, p)
		byPattern[u.Pattern] = e
	}
	for _, u := range up {
		for _, d := range u.DependsOn {
			if dep := byPattern[d]; dep != nil && dep != byPattern[u.Pattern] {
				e := byPattern[u.Pattern]
				e.DependsOn = addUnique(e.DependsOn, dep.Name)
			}
		}
	}
	return nil
}

// upstreamEntry returns the entry named as the name derived from u, adding
// it when there is none.
func (b *builder) upstreamEntry(u upstreamEntry) *Entry {
	name := deriveName(u)
	if e := b.find(name); e != nil {
		return e
	}
	e := &Entry{Name: name, Category: tagCategory(u.Tags), URL: u.URL,
		Purpose: tagPurpose(u.Tags), PurposeSource: fmt.Sprintf("crawler-user-agents tags %q", u.Tags)}
	// Only a name that is the whole name of a product of the
	// User-Agent (uatext.ProductNames) is a token: the first word
	// of "(compatible; Twingly Recon)" names nothing, nor does a
	// version ("Teoma" of "Ask Jeeves/Teoma"), a host name taken
	// from a URL ("+https://sitebulb.com") or an e-mail address.
	samples := u.Instances
	if len(samples) == 0 {
		samples = []string{unescape(u.Pattern)}
	}
	if t := uatext.LeadingToken(name); t == name && len(t) >= 2 && productIn(samples, t) {
		e.Tokens = []string{t}
	}
	if e.Category == "http-library" {
		e.Generic = true
	}
	b.add(e)
	return e
}

// encode returns the catalogue file of the entries, as JSON.
func (b *builder) encode() ([]byte, error) {
	f := File{
		Comment: "GENERATED by `go generate` (agents/internal/gen) from the files named in sources; DO NOT EDIT. Edit curated.json or replace the upstream files, then regenerate.",
		Sources: upstreamSources,
	}
	for _, e := range b.entries {
		f.Entries = append(f.Entries, *e)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("catalogue: encoding: %w", err)
	}
	return buf.Bytes(), nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("catalogue: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("catalogue: parsing %s: %w", path, err)
	}
	return nil
}

func checkCurated(c curatedEntry) error {
	if c.Name == "" || len(c.Tokens) == 0 && !strings.Contains(c.Name, " ") {
		// A name of several words ("Speedy Spider") is no product token:
		// such an entry may have none, and only "*" applies to it.
		return fmt.Errorf("catalogue: curated entry %q needs a name and tokens", c.Name)
	}
	if !contains(Categories, c.Category) {
		return fmt.Errorf("catalogue: curated entry %q: unknown category %q", c.Name, c.Category)
	}
	if !contains(Purposes, c.Purpose) && !(c.Purpose == "" && c.Generic) {
		return fmt.Errorf("catalogue: curated entry %q: unknown purpose %q", c.Name, c.Purpose)
	}
	if c.Purpose != "" && c.URL == "" && c.PurposeSource == "" {
		return fmt.Errorf("catalogue: curated entry %q: purpose %q needs a source (url or purpose_source)", c.Name, c.Purpose)
	}
	if c.RobotsOnly && c.URL == "" {
		return fmt.Errorf("catalogue: curated entry %q: a robots.txt-only token needs the operator's url", c.Name)
	}
	if x := c.TokenException; x != nil && (x.Reason == "" || !strings.HasPrefix(x.URL, "http")) {
		return fmt.Errorf("catalogue: curated entry %q: a token exception needs a reason and a source URL", c.Name)
	}
	if len(c.Tokens) > 1 && !c.Generic && c.FallbackSource == "" {
		return fmt.Errorf("catalogue: curated entry %q: fallback tokens %q need a fallback_source", c.Name, c.Tokens[1:])
	}
	if c.Verify != "" && !contains(VerifyKeys, c.Verify) {
		return fmt.Errorf("catalogue: curated entry %q: unknown verification method %q", c.Name, c.Verify)
	}
	for _, s := range []string{c.CrawlDelay, c.RequestRate} {
		if s != "" && s != "yes" && s != "no" {
			return fmt.Errorf("catalogue: curated entry %q: support must be yes or no, not %q", c.Name, s)
		}
	}
	for _, t := range c.Tokens {
		if t == "*" || uatext.LeadingToken(t) != t {
			return fmt.Errorf("catalogue: curated entry %q: %q is not a product token", c.Name, t)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// operatorOf turns "[OpenAI](https://openai.com)" into "OpenAI" and drops
// "Unclear at this time.".
func operatorOf(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") {
		if k := strings.Index(s, "]("); k > 0 {
			s = s[1:k]
		}
	}
	if strings.HasPrefix(strings.ToLower(s), "unclear") || len(s) > 60 {
		return ""
	}
	return s
}

func aiCategory(function string) string {
	f := strings.ToLower(function)
	switch {
	case strings.Contains(f, "assistant"), strings.Contains(f, "agent"), strings.Contains(f, "user-initiated"), strings.Contains(f, "coding"), strings.Contains(f, "prompt"):
		return "ai-assistant"
	case strings.Contains(f, "search"):
		return "ai-search"
	}
	return "ai-training"
}

// aiPurpose maps an ai.robots.txt function, which is either one of the
// Dark Visitors classes ("AI Data Scrapers", "AI Search Crawlers",
// "AI Assistants", "AI Agents", ...) or a free-text description, to a
// purpose. Free text that names none of the known uses is "other".
func aiPurpose(function string) string {
	f := strings.ToLower(function)
	has := func(words ...string) bool {
		for _, w := range words {
			if aiWord(f, w) {
				return true
			}
		}
		return false
	}
	switch {
	case strings.Contains(f, "user-initiated"), has("prompt", "prompts"):
		return "user-triggered"
	case has("seo"):
		return "seo"
	case has("search"):
		return "ai-answers"
	case has("assistant", "assistants", "agent", "agents", "coding"):
		return "user-triggered"
	case has("train", "training", "llm", "llms", "model", "models", "scraper", "scrapers", "scrapes", "scraping",
		"data", "dataset", "datasets", "learning", "providers"):
		return "ai-training"
	}
	return "other"
}

// aiWord reports whether w occurs in the lower-case text f as a word, so
// that "research" does not say "search".
func aiWord(f, w string) bool {
	for i := 0; ; {
		k := strings.Index(f[i:], w)
		if k < 0 {
			return false
		}
		k += i
		before := k == 0 || !isLetter(f[k-1])
		after := k+len(w) == len(f) || !isLetter(f[k+len(w)])
		if before && after {
			return true
		}
		i = k + 1
	}
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// tagPurpose maps crawler-user-agents tags to a purpose. Link previews and
// feed readers fetch because a person shared a link or subscribed to a
// feed: user-triggered, as Google files its feed fetcher.
func tagPurpose(tags []string) string {
	if contains(tags, "ai-crawler") {
		switch {
		case contains(tags, "search-engine"):
			return "ai-answers"
		case contains(tags, "browser-automation"):
			return "user-triggered"
		}
		return "ai-training"
	}
	order := []struct{ tag, purpose string }{
		{"search-engine", "search"}, {"seo", "seo"}, {"archiver", "archiving"},
		{"monitoring", "monitoring"}, {"social-preview", "user-triggered"}, {"feed-reader", "user-triggered"},
	}
	for _, o := range order {
		if contains(tags, o.tag) {
			return o.purpose
		}
	}
	return "other"
}

func tagCategory(tags []string) string {
	order := []struct{ tag, cat string }{
		{"ai-crawler", "ai-training"}, {"search-engine", "search"}, {"seo", "seo"},
		{"archiver", "archive"}, {"social-preview", "social-preview"}, {"feed-reader", "feed-reader"},
		{"monitoring", "monitoring"}, {"http-library", "http-library"}, {"browser-automation", "http-library"},
	}
	for _, o := range order {
		if contains(tags, o.tag) {
			return o.cat
		}
	}
	return "other"
}

// deriveName names the client an upstream pattern recognises: the word its
// match covers in the first instance (or in the pattern's own literal text).
func deriveName(u upstreamEntry) string {
	re := regexp.MustCompile(u.Pattern) // compilePattern checked it
	sample := ""
	for _, in := range u.Instances {
		if re.MatchString(in) {
			sample = in
			break
		}
	}
	if sample == "" {
		sample = unescape(u.Pattern)
		if !re.MatchString(sample) {
			return strings.TrimSpace(strings.Trim(sample, "^$"))
		}
	}
	loc := re.FindStringIndex(sample)
	i, j := loc[0], loc[1]
	for i < j && !uatext.IsWordByte(sample[i]) {
		i++
	}
	for i > 0 && uatext.IsWordByte(sample[i-1]) {
		i--
	}
	span := sample[i:j]
	if k := strings.IndexAny(span, "(;"); k > 0 {
		// "SSL Labs (https://www.ssllabs.com": the name ends where a
		// comment or an item separator starts.
		j = i + k
		span = sample[i:j]
	}
	if strings.Count(span, " ") > 4 || len(span) > 48 || !strings.Contains(strings.TrimSpace(span), " ") {
		k := i
		for k < len(sample) && uatext.IsWordByte(sample[k]) {
			k++
		}
		span = sample[i:k]
	} else {
		k := j
		for k < len(sample) && uatext.IsWordByte(sample[k]) && k > 0 && uatext.IsWordByte(sample[k-1]) {
			k++
		}
		span = sample[i:k]
	}
	name := strings.TrimRightFunc(span, func(r rune) bool { return r > 127 || !uatext.IsWordByte(byte(r)) || r == '.' || r == '-' })
	if len(name) < 2 {
		name = strings.TrimFunc(sample[loc[0]:loc[1]], unicode.IsSpace)
	}
	url := urlAround(sample, loc[0])
	before := sample[strings.LastIndexByte(sample[:i], ' ')+1 : i]
	// In a URL ("http://x.com/bot"), or in the version slot of another
	// product ("venus/fedoraplanet"), the match is not the client's name;
	// "RSS/Atom Feed Robot" is a name of several words.
	inURL := url != "" || strings.Contains(before, "/") && (strings.Contains(before, ".") || !strings.Contains(strings.TrimSpace(span), " "))
	// A host name the client writes as its own first product, not inside
	// a URL or a comment ("SearchAtlas.com SEO Crawler", "Wheregoes.com
	// Redirect Checker/1.0"), is how its maker names it; one inside a URL,
	// an e-mail address or a comment gives way to the product name the
	// User-Agent carries ("PostRank" of "PostRank/2.0 (postrank.com)").
	host := uatext.IsDomain(name) && !strings.Contains(name, " ")
	ownHost := host && !inURL && topLevelProduct(sample, name)
	if name == "" || host && !ownHost || inURL {
		if n := uatext.NameOf(sample); n != "" {
			return wholeName(sample, n)
		}
		if h := hostOf(url); h != "" {
			// A client known only by a URL is named by its host
			// ("http://seewithkids.com/bot"), not by the URL's scheme.
			return h
		}
	}
	if name == "" {
		name = strings.TrimSpace(unescape(u.Pattern))
	}
	return wholeName(sample, name)
}

// topLevelProduct reports whether name is the name of a product of ua
// outside its comments.
func topLevelProduct(ua, name string) bool {
	found := false
	uatext.Parts(ua, func(p uatext.Part) bool {
		if p.Kind == uatext.Product && strings.EqualFold(uatext.LeadingToken(strings.TrimPrefix(p.Text, "+")), name) {
			found = true
			return false
		}
		return true
	})
	return found
}

// urlAround returns the URL of ua that holds offset at, or "".
func urlAround(ua string, at int) string {
	isEnd := func(c byte) bool { return c == ' ' || c == '(' || c == ')' || c == ';' || c == ',' }
	i, j := at, at
	for i > 0 && !isEnd(ua[i-1]) {
		i--
	}
	for j < len(ua) && !isEnd(ua[j]) {
		j++
	}
	if w := strings.TrimLeft(ua[i:j], "+"); strings.Index(w, "://") > 0 {
		return w
	}
	return ""
}

// hostOf returns the host of an absolute URL, or "".
func hostOf(url string) string {
	k := strings.Index(url, "://")
	if k < 0 {
		return ""
	}
	h := url[k+3:]
	if e := strings.IndexAny(h, "/:?#"); e >= 0 {
		h = h[:e]
	}
	return h
}

// wholeName returns name, or the name of several words that it is only a
// word of: when name is the whole name of no product of sample but a word
// of a longer one ("Twingly Recon" for "Twingly" in "(compatible; Twingly
// Recon; twingly.com)"), as uatext.ProductNames reads them, that longer
// name.
func wholeName(sample, name string) string {
	names := uatext.ProductNames(sample)
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return name
		}
	}
	for _, n := range names {
		if !strings.Contains(n, " ") {
			continue
		}
		for _, w := range strings.Fields(n) {
			if strings.EqualFold(w, name) {
				return n
			}
		}
	}
	return name
}

// productIn reports whether name, ignoring case, is the whole name of a
// product (uatext.ProductNames) of one of the User-Agents.
func productIn(uas []string, name string) bool {
	for _, ua := range uas {
		for _, n := range uatext.ProductNames(ua) {
			if strings.EqualFold(n, name) {
				return true
			}
		}
	}
	return false
}

func unescape(p string) string {
	var sb strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) {
			i++
		}
		sb.WriteByte(p[i])
	}
	return sb.String()
}

func compilePattern(p string) (Pattern, error) {
	if _, err := regexp.Compile(p); err != nil {
		return Pattern{}, fmt.Errorf("catalogue: pattern %q: %w", p, err)
	}
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return Pattern{}, fmt.Errorf("catalogue: pattern %q: %w", p, err)
	}
	re = re.Simplify()
	out := Pattern{Re: p, Needles: needles(re)}
	if re.Op == syntax.OpLiteral && re.Flags&syntax.FoldCase == 0 {
		out.Lit = string(re.Rune)
	}
	if len(out.Needles) == 0 {
		return Pattern{}, fmt.Errorf("catalogue: pattern %q has no literal text to look for", p)
	}
	for _, n := range out.Needles {
		if len(n) < 3 {
			return Pattern{}, fmt.Errorf("catalogue: pattern %q: literal %q is shorter than 3 bytes", p, n)
		}
	}
	return out, nil
}

// exact returns the lower-case text re matches, ignoring case, when there is
// exactly one.
func exact(re *syntax.Regexp) (string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return "", true
	case syntax.OpLiteral:
		return strings.ToLower(string(re.Rune)), true
	case syntax.OpCharClass:
		var r rune = -1
		for i := 0; i < len(re.Rune); i += 2 {
			for c := re.Rune[i]; c <= re.Rune[i+1]; c++ {
				l := unicode.ToLower(c)
				if r >= 0 && l != r {
					return "", false
				}
				r = l
			}
		}
		if r < 0 {
			return "", false
		}
		return string(r), true
	case syntax.OpCapture:
		return exact(re.Sub[0])
	case syntax.OpConcat:
		var sb strings.Builder
		for _, s := range re.Sub {
			t, ok := exact(s)
			if !ok {
				return "", false
			}
			sb.WriteString(t)
		}
		return sb.String(), true
	case syntax.OpAlternate:
		first, ok := exact(re.Sub[0])
		if !ok {
			return "", false
		}
		for _, s := range re.Sub[1:] {
			if t, ok := exact(s); !ok || t != first {
				return "", false
			}
		}
		return first, true
	}
	return "", false
}

// needles returns lower-case strings at least one of which occurs, ignoring
// case, in every match of re; nil when there is no such set.
func needles(re *syntax.Regexp) []string {
	if t, ok := exact(re); ok {
		if t == "" {
			return nil
		}
		return []string{t}
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return needles(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return needles(re.Sub[0])
		}
	case syntax.OpAlternate:
		var all []string
		for _, s := range re.Sub {
			n := needles(s)
			if n == nil {
				return nil
			}
			all = addUnique(all, n...)
		}
		return all
	case syntax.OpConcat:
		best, run := "", ""
		var set []string
		for _, s := range re.Sub {
			if t, ok := exact(s); ok {
				run += t
				if len(run) > len(best) {
					best = run
				}
				continue
			}
			run = ""
			if n := needles(s); n != nil && set == nil {
				set = n
			}
		}
		if len(best) >= 3 || set == nil {
			if best == "" {
				return nil
			}
			return []string{best}
		}
		return set
	}
	return nil
}
