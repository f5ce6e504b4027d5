package agents

import (
	"strings"

	"github.com/caddyrobots/caddy-robots/agents/internal/uatext"
	"github.com/mssola/useragent"
)

// defaultIdentifier serves the package-level Identify.
var defaultIdentifier = NewIdentifier(0)

// Identify tells who sent userAgent, using a package-level Identifier with
// the default cache size. It is safe for concurrent use.
//
// The result is, in order of precedence:
//
//   - for an empty (or all-blank) User-Agent: Bot true, Category and
//     Purpose other, no Name and no Tokens, since no browser sends an empty
//     User-Agent;
//   - for a client of the catalogue (see Catalogue): that entry, Known true;
//   - for another automated client: Bot true, Category and Purpose other,
//     Name the product name its User-Agent carries and Tokens that name
//     alone, so "ExampleCrawler/1.0 (+https://example.com/bot)" and
//     "Mozilla/5.0 (compatible; ExampleCrawler/1.0; +https://example.com/bot)"
//     both give Name "ExampleCrawler" and Tokens ["ExampleCrawler"];
//   - for a browser: the zero Agent (Bot false).
//
// A User-Agent is an automated client's when it names a crawler, library or
// headless browser of the catalogue, carries a URL or a word such as "bot",
// "crawler", "spider" or "fetcher", or does not have the shape of a browser's
// (browsers' User-Agents start with "Mozilla/" or "Opera/" and carry a
// platform comment). A browser's shape is not enough: a product that no
// browser, in-app browser or browser-based app carries, where a client names
// itself ("Mozilla/5.0 (compatible; ContentGrabber/3.1)") or outside the
// comments ("... Chrome/131.0.0.0 Safari/537.36 MyAgent/1.0"), makes it an
// automated client named by that product. The products browsers carry
// (Chrome, Safari, Edg, OPR, YaBrowser, SamsungBrowser, the Instagram,
// Facebook, LINE, WeChat and TikTok in-app browsers, Electron apps,
// Internet Explorer's "(compatible; MSIE 10.0; ...)", ...) are listed in
// the package's data, derived from thousands of real browser User-Agents;
// an app whose own product is not listed is taken for a bot until it is
// added. The text-mode browsers Lynx, w3m, Links and ELinks
// have shapes of their own ("Lynx/2.9.0dev.12 libwww-FM/2.14",
// "w3m/0.5.3", "Links (2.29; Linux ...; text)"); a person reads the pages
// they fetch, so they are browsers too.
func Identify(userAgent string) Agent {
	return defaultIdentifier.Identify(userAgent)
}

// Identify tells who sent userAgent, as the package-level Identify does,
// and remembers the answer in the Identifier's cache. It is safe for
// concurrent use; on a cached User-Agent it does not allocate.
func (id *Identifier) Identify(userAgent string) Agent {
	return id.IdentifyShared(userAgent).Agent
}

// Shared is an identification as an Identifier's cache holds it: the Agent
// plus what is derived once per User-Agent. A Shared is read-only and
// shared by every caller that sends the same User-Agent.
type Shared struct {
	Agent
	// Candidates are the whole words of the User-Agent that a site's
	// robots.txt may name it by, lower-cased, each once, in the order they
	// appear: the product names and words that are no browser's own
	// (Mozilla, Chrome, Safari, Firefox, AppleWebKit, Gecko, Edg, ...) and
	// no browser's platform (Windows, Linux, Android, iPhone, Mobile, ...).
	// They leave out versions and values ("5.0" of "Mozilla/5.0", "WIFI"
	// of "NetType/WIFI"), URLs, e-mail addresses and host names, words of
	// one or two letters, language tags ("en-US") and build numbers
	// ("1080x2400", "480dpi"); there are at most 16. They are computed
	// once per User-Agent and cached with it; for a typical browser there
	// are none (nil), and a phone's model ("pixel", "sm-g991b") is one.
	// See NamedBy for what they are for. The slice is shared: callers must
	// not modify it. An answer made by NewShared has none.
	Candidates []string
}

// NewShared returns a's Shared form: for callers that build an Agent of
// their own (a crawler verified by its signature rather than its
// User-Agent).
func NewShared(a Agent) *Shared {
	return &Shared{Agent: a}
}

// IdentifyShared is Identify without the copy: it returns the Identifier's
// cached answer for userAgent, which must not be modified. It suits a
// per-request hot path, where copying the Agent out costs more than reading
// the few fields it uses. A User-Agent too long to cache (over 512 bytes)
// gets a Shared of its own.
func (id *Identifier) IdentifyShared(userAgent string) *Shared {
	if e := id.cache.lookup(userAgent); e != nil {
		return &e.val
	}
	s := Shared{Agent: identify(userAgent), Candidates: candidateTokens(userAgent)}
	if e := id.cache.put(userAgent, s); e != nil {
		return &e.val
	}
	// Too long to cache: a copy of its own (returning &s would put s on
	// the heap on every miss).
	own := new(Shared)
	*own = s
	return own
}

// identify is Identify without the cache.
func identify(ua string) Agent {
	s := strings.TrimSpace(ua)
	if s == "" {
		return Agent{Bot: true, Category: CategoryOther, Purpose: PurposeOther, Profile: Profile{RobotsCacheTTL: defaultRobotsCacheTTL}}
	}
	if m, err := loadMatcher(); err == nil {
		if i := m.match(s); i >= 0 {
			e := &m.entries[i]
			if e.generic {
				// A crawler that names itself on top of a library
				// ("Mozilla/5.0 (compatible; FooBot/1.0) python-requests/2.31")
				// is that crawler, not the library.
				if n := claimedName(s); n != "" && !m.isEntryName(i, n) {
					return unknownBot(n)
				}
			}
			return e.agent
		}
	}
	if bot, name := looksAutomated(s); bot {
		if name == "" {
			name = uatext.NameOf(s)
		}
		return unknownBot(name)
	}
	return Agent{}
}

// isEntryName reports whether name names entry i: one of its names or
// tokens, or the first word of a name of several words ("Anchor" of
// "Anchor Browser", which has no token).
func (m *matcher) isEntryName(i int32, name string) bool {
	if j, ok := m.byName[strings.ToLower(name)]; ok && j == i {
		return true
	}
	full := m.entries[i].agent.Name
	return len(full) > len(name) && full[len(name)] == ' ' && strings.EqualFold(full[:len(name)], name)
}

// claimedName returns the name a User-Agent gives itself in a
// "compatible;" comment or as a word such as "…Bot", or "".
func claimedName(s string) string {
	if uatext.IndexFold(s, "compatible;") >= 0 {
		n := uatext.NameOf(s)
		if n != "" && !uatext.IsBrowserProduct(n) {
			return n
		}
	}
	name := ""
	uatext.Words(s, func(w string, at int) bool {
		if uatext.WordAt(s, at, at+len(w)) && !uatext.IsDomain(w) && uatext.HasBotWord(w) {
			name = w
			return false
		}
		return true
	})
	return name
}

// unknownBot is the Agent of an automated client that is not in the
// catalogue.
func unknownBot(name string) Agent {
	a := Agent{Bot: true, Name: name, Category: CategoryOther, Purpose: PurposeOther, Profile: Profile{RobotsCacheTTL: defaultRobotsCacheTTL}}
	if t := uatext.LeadingToken(name); t == name && len(t) >= 2 {
		a.Tokens = []string{name}
	}
	return a
}

// looksAutomated applies the heuristics for clients the catalogue does not
// know. It reports whether s is an automated client's and, when one product
// gave it away, that product's name ("" lets the caller find the name).
func looksAutomated(s string) (bool, string) {
	if strings.Contains(s, "://") || uatext.IndexFold(s, "www.") >= 0 {
		return true, ""
	}
	bot := false
	uatext.Words(s, func(w string, at int) bool {
		if uatext.WordAt(s, at, at+len(w)) && !uatext.IsDomain(w) && uatext.HasBotWord(w) {
			bot = true
			return false
		}
		return true
	})
	if bot {
		return true, ""
	}
	if isTextBrowser(s) {
		return false, ""
	}
	// Browsers say Mozilla/ (or, long ago, Opera/) first and describe their
	// platform in a comment.
	first := uatext.LeadingToken(s)
	if !strings.EqualFold(first, "Mozilla") && !strings.EqualFold(first, "Opera") {
		return true, ""
	}
	if !strings.Contains(s, "(") {
		return true, ""
	}
	// A browser's products are its own, its engine's and its app's; a
	// product that is none of these, outside the comments or where a
	// client names itself ("(compatible; Name/1.0)"), is a program's.
	if n := foreignProduct(s); n != "" {
		return true, n
	}
	// What is left has a browser's shape. A mainstream browser product
	// settles it; mssola/useragent's Bot() could only flag what the checks
	// above already catch (a URL in a comment, a lone non-Mozilla product),
	// and parses the whole string with many allocations, so it judges only
	// the unusual rest.
	if hasBrowserProduct(s) {
		return false, ""
	}
	return useragent.New(s).Bot(), ""
}

// textBrowsers are the product names of the text-mode browsers, which a
// person drives from a terminal.
var textBrowsers = [...]string{"Lynx", "w3m", "Links", "ELinks"}

// isTextBrowser reports whether s is the User-Agent of a text-mode
// browser: it starts with one of textBrowsers followed by a version
// ("Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9",
// "w3m/0.5.3+git20230121", "ELinks/0.16.1.1 (textmode; Linux 6.1.0 x86_64;
// 200x50-2)") or, as Links and old ELinks write it, by a comment that opens
// with the version ("Links (2.29; Linux 6.1.0-13-amd64 x86_64; GNU C 12.2;
// text)", "ELinks (0.4pre5; Linux 2.6.10-ac7 i686; 80x33)"). The caller
// has already ruled out URLs and bot words.
func isTextBrowser(s string) bool {
	for _, name := range textBrowsers {
		if len(s) < len(name)+2 || !strings.EqualFold(s[:len(name)], name) {
			continue
		}
		rest := s[len(name):]
		switch {
		case rest[0] == '/':
			rest = rest[1:]
		case strings.HasPrefix(rest, " ("):
			rest = rest[2:]
		default:
			return false
		}
		return rest != "" && rest[0] >= '0' && rest[0] <= '9'
	}
	return false
}

// browserProducts are the product tokens of mainstream browsers.
var browserProducts = [...]string{
	"Chrome/", "Firefox/", "Safari/", "Edg/", "EdgA/", "EdgiOS/", "OPR/", "CriOS/",
	"FxiOS/", "SamsungBrowser/", "YaBrowser/", "GSA/", "Version/",
}

// hasBrowserProduct reports whether s carries a mainstream browser token.
func hasBrowserProduct(s string) bool {
	for _, p := range browserProducts {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
