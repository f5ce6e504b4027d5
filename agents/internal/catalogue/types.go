// Package catalogue builds the embedded crawler catalogue of package agents
// (data/catalogue.json) from the upstream lists in data/upstream/ and the
// hand-curated data/curated.json, and defines the file's format.
package catalogue

// File is the format of data/catalogue.json.
type File struct {
	Comment string   `json:"comment"`
	Sources []Source `json:"sources"`
	Entries []Entry  `json:"entries"`
}

// Source names one input of the catalogue.
type Source struct {
	Name    string `json:"name"`
	File    string `json:"file"`
	Repo    string `json:"repo,omitempty"`
	Commit  string `json:"commit,omitempty"`
	License string `json:"license"`
}

// Entry is one crawler of the catalogue.
type Entry struct {
	Name     string   `json:"name"`
	Operator string   `json:"operator,omitempty"`
	Category string   `json:"category"`
	Tokens   []string `json:"tokens,omitempty"`
	// Words are whole words (case-insensitive, may hold spaces) whose
	// presence in a User-Agent identifies the entry.
	Words []string `json:"words,omitempty"`
	// Patterns are crawler-user-agents.json regular expressions
	// (case-sensitive, RE2) that identify the entry.
	Patterns []Pattern `json:"patterns,omitempty"`
	// DependsOn names entries whose User-Agent text this entry's
	// User-Agent contains (a crawler built on a library): when both match,
	// this entry wins.
	DependsOn []string `json:"depends_on,omitempty"`
	// Generic marks libraries and headless browsers: any other match wins.
	Generic         bool   `json:"generic,omitempty"`
	RobotsOnly      bool   `json:"robots_only,omitempty"`
	CrawlDelay      string `json:"crawl_delay,omitempty"`
	RequestRate     string `json:"request_rate,omitempty"`
	IgnoresWildcard bool   `json:"ignores_wildcard,omitempty"`
	UserTriggered   bool   `json:"user_triggered,omitempty"`
	RobotsCacheTTL  string `json:"robots_cache_ttl,omitempty"`
	Verify          string `json:"verify,omitempty"`
	URL             string `json:"url,omitempty"`
	// Purpose is what the crawler is for, as its operator documents it
	// (one of Purposes); PurposeSource is where that comes from: the
	// operator's page, or for the long tail the upstream field it was
	// read from.
	Purpose       string `json:"purpose"`
	PurposeSource string `json:"purpose_source"`
	// FallbackSource is the operator page documenting the tokens after the
	// first.
	FallbackSource string `json:"fallback_source,omitempty"`
	// Samples are User-Agent strings the operator documents; tests check
	// the tokens against them. The runtime ignores them.
	Samples []string `json:"samples,omitempty"`
	// TokenException explains, with a source, why the first token does not
	// occur in the crawler's User-Agent; the runtime ignores it.
	TokenException *TokenException `json:"token_exception,omitempty"`
	Sources        []string        `json:"sources"`
}

// TokenException documents a product token that the crawler's User-Agent
// does not carry.
type TokenException struct {
	Reason string `json:"reason"`
	URL    string `json:"url"`
}

// Pattern is an upstream regular expression with the literal needles (lower
// case) of which at least one occurs, ignoring case, in every match.
type Pattern struct {
	Re      string   `json:"re"`
	Needles []string `json:"needles"`
	// Lit is set when Re matches exactly this case-sensitive literal text.
	Lit string `json:"lit,omitempty"`
}
