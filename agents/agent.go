// Package agents tells who is asking: it turns a User-Agent header into the
// robots.txt product tokens that client obeys, tells people from programs,
// knows the habits of the well-known crawlers, and verifies that a client
// claiming a famous crawler's name really is that crawler.
//
// The package imports nothing of Caddy; it is usable on its own.
package agents

import "time"

// Category says what kind of automated client an Agent is.
type Category string

// The categories of the catalogue.
const (
	CategorySearch        Category = "search"         // web search engines (Googlebot, Bingbot)
	CategoryAITraining    Category = "ai-training"    // crawlers collecting data to train models (GPTBot, CCBot)
	CategoryAISearch      Category = "ai-search"      // AI search indexes (OAI-SearchBot, PerplexityBot)
	CategoryAIAssistant   Category = "ai-assistant"   // user-triggered fetches by AI assistants (ChatGPT-User)
	CategorySEO           Category = "seo"            // SEO and backlink crawlers (AhrefsBot, SemrushBot)
	CategoryArchive       Category = "archive"        // web archives (ia_archiver)
	CategorySocialPreview Category = "social-preview" // link preview fetchers (facebookexternalhit, Twitterbot)
	CategoryMonitoring    Category = "monitoring"     // uptime and performance monitors
	CategoryFeedReader    Category = "feed-reader"    // RSS/Atom readers
	CategoryHTTPLibrary   Category = "http-library"   // generic HTTP clients and headless browsers (curl, python-requests)
	CategoryOther         Category = "other"          // any other automated client
)

// Support is a tri-state answer to "does this crawler honour X".
type Support uint8

// The values of Support.
const (
	SupportUnknown Support = iota // nobody documented it either way
	SupportYes                    // the operator documents that it is honoured
	SupportNo                     // the operator documents that it is ignored
)

// String returns "unknown", "yes" or "no".
func (s Support) String() string {
	switch s {
	case SupportYes:
		return "yes"
	case SupportNo:
		return "no"
	}
	return "unknown"
}

// Profile describes a crawler's documented habits.
type Profile struct {
	// CrawlDelay says whether the crawler honours the Crawl-delay record.
	CrawlDelay Support
	// RequestRate says whether the crawler honours the Request-rate record.
	RequestRate Support
	// IgnoresWildcard is true for crawlers that, by design, obey only groups
	// that name them and ignore the "*" group (AdsBot-Google,
	// Mediapartners-Google).
	IgnoresWildcard bool
	// UserTriggered is true for fetchers that act on a person's request
	// (ChatGPT-User, Claude-User, Perplexity-User).
	UserTriggered bool
	// RobotsCacheTTL is how long the crawler may keep a copy of robots.txt:
	// 24 h by RFC 9309 §2.4 unless the operator documents otherwise.
	RobotsCacheTTL time.Duration
	// Verify names the verification method (a key of the verification data,
	// such as "google-common" or "bingbot"); empty when the operator
	// publishes no way to verify the crawler.
	Verify string
}

// Agent is what Identify learns from a User-Agent header.
type Agent struct {
	// Bot is true for every automated client: crawlers, fetchers, HTTP
	// libraries and headless browsers. False means a person's browser.
	Bot bool
	// Known is true when the client matched an entry of the catalogue.
	Known bool
	// Name is the crawler's canonical name (for example "Googlebot-Image"),
	// or, for an unknown automated client, the product name its User-Agent
	// carries. Empty for browsers.
	Name string
	// Operator is who runs the crawler ("Google", "OpenAI"), when known.
	Operator string
	// Category is the kind of client; empty for browsers.
	Category Category
	// Tokens are the robots.txt product tokens the client obeys, most
	// specific first, documented fallbacks included (Googlebot-Image then
	// Googlebot; Applebot then Googlebot). Never "*". Empty for browsers.
	// The slice is shared: callers must not modify it.
	Tokens []string
	// Profile holds the crawler's documented habits.
	Profile Profile
}

// Verdict is the result of verifying a crawler's claimed identity.
type Verdict uint8

// The values of Verdict.
const (
	// Unverified: it could not be told, because the crawler publishes no
	// verification method or a lookup failed or timed out.
	Unverified Verdict = iota
	// Verified: the address belongs to the operator the User-Agent names.
	Verified
	// Spoofed: the User-Agent claims a verifiable crawler and the address
	// provably is not the operator's.
	Spoofed
)

// String returns "unverified", "verified" or "spoofed".
func (v Verdict) String() string {
	switch v {
	case Verified:
		return "verified"
	case Spoofed:
		return "spoofed"
	}
	return "unverified"
}
