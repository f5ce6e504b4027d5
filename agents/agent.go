// Package agents tells who is asking: it turns a User-Agent header into the
// robots.txt product tokens that client obeys, tells people from programs,
// knows the habits of the well-known crawlers and what their operators say
// they are for (search, AI training, AI answers, ...), and verifies that a
// client claiming a famous crawler's name really is that crawler.
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

// Purpose says what a crawler is for, as its operator documents it: what
// the fetched content is used for, which is what a site owner decides on
// when writing robots.txt groups ("allow search, refuse AI training").
// Unlike Category, which sorts clients by kind, Purpose follows the
// operator's own words; for the long tail of the catalogue, which no
// operator page covers, it comes from the upstream lists (the function
// field of ai.robots.txt, the tags of crawler-user-agents). Where each
// entry's purpose comes from is recorded in the package's catalogue data
// (agents/data/catalogue.json, field purpose_source).
type Purpose string

// The purposes of the catalogue.
const (
	// PurposeSearch: building a search engine's index (Googlebot,
	// bingbot, Applebot, PetalBot).
	PurposeSearch Purpose = "search"
	// PurposeAITraining: collecting content to train AI models (GPTBot,
	// ClaudeBot, CCBot, meta-externalagent; the Google-Extended and
	// Applebot-Extended robots.txt tokens).
	PurposeAITraining Purpose = "ai-training"
	// PurposeAIAnswers: collecting content that AI assistants and answer
	// engines quote when they answer questions: the search index behind
	// AI answers (OAI-SearchBot, Claude-SearchBot, PerplexityBot) or
	// retrieval at query time that no single person asked for.
	PurposeAIAnswers Purpose = "ai-answers"
	// PurposeUserTriggered: a fetch a person asked for: an AI assistant
	// reading a page for its user (ChatGPT-User, Claude-User,
	// Perplexity-User), a link preview for a link someone shared
	// (facebookexternalhit, Slackbot-LinkExpanding), a feed someone
	// subscribed to (FeedFetcher-Google).
	PurposeUserTriggered Purpose = "user-triggered"
	// PurposeSEO: SEO and marketing data (AhrefsBot, SemrushBot, MJ12bot).
	PurposeSEO Purpose = "seo"
	// PurposeArchiving: web archives (archive.org_bot, ia_archiver).
	PurposeArchiving Purpose = "archiving"
	// PurposeMonitoring: uptime, performance and accessibility checks.
	PurposeMonitoring Purpose = "monitoring"
	// PurposeOther: any other purpose (advertising checks, security
	// scanners, research crawls), the generic HTTP libraries and headless
	// browsers, whose purpose is whoever runs them, and automated clients
	// the catalogue does not know.
	PurposeOther Purpose = "other"
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
	// Purpose is what the client is for, as its operator documents it
	// (see Purpose); PurposeOther for automated clients the catalogue does
	// not know, empty for browsers.
	Purpose Purpose
	// Tokens are the robots.txt product tokens the client obeys, most
	// specific first, documented fallbacks included (Googlebot-Image then
	// Googlebot; Applebot then Googlebot). The first is the product token
	// the operator documents for robots.txt, which is the one its
	// User-Agent carries unless the operator documents otherwise (the
	// robots.txt-only tokens Google-Extended and Applebot-Extended). Never
	// "*". Empty for browsers, and for clients whose User-Agent names them
	// in several words ("Screaming Frog SEO Spider") with no documented
	// token: only the "*" group applies to them. The slice is shared:
	// callers must not modify it.
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
