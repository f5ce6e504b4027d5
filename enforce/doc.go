// Package enforce is a robots.txt engine that follows RFC 9309 read
// literally. It parses a file once into an immutable, compiled form and
// answers "may this crawler fetch this target?" in one pass over the target,
// without allocating and without backtracking, whatever the file holds.
//
//	robots := enforce.Parse(body)
//	d := robots.Decide([]string{"Googlebot-Image", "Googlebot"}, "/photos/1.jpg?size=xl")
//	if !d.Allowed {
//		log.Printf("refused: %v", d) // disallowed by Disallow: /photos/ (line 7) in User-agent: Googlebot (line 5)
//	}
//
// # Parsing
//
// Lines end at CR, LF or CRLF; a leading UTF-8 byte order mark is skipped;
// "#" starts a comment; keys are case-insensitive; whitespace around keys and
// values is ignored. The parser never fails: everything it ignores is listed,
// with a reason, by [Robots.Skipped]. At most [MaxSize] bytes (500 KiB, RFC
// 9309 §2.5) are read, or the cap given to [ParseLimit]; when the cap cuts a
// line, that partial line is dropped too.
//
// The core keys must be spelled "user-agent", "allow" and "disallow" and be
// followed by a colon. Misspellings ("Dissallow", "useragent", "User agent")
// and lines without a colon are not rules: they are ignored and reported.
// Everything else (Sitemap, Crawl-delay, Request-rate, Host, Visit-time,
// unknown keys) is an "other record" and never ends a run of user-agent lines.
//
// A group starts with one or more user-agent lines; a user-agent line that
// follows a rule (even an empty "Disallow:") starts a new group; rules before
// the first user-agent line are ignored. Sitemap and Host records are global
// wherever they appear ([Robots.Sitemaps], [Robots.Records]); Crawl-delay,
// Request-rate and other records belong to the group they appear in (before
// the first group they are global records).
//
// # Selecting a group
//
// A user-agent value names a crawler only if it is "*" or a single product
// token: letters, digits, "-", "_" and ".". Digits are allowed because real
// crawlers are called MJ12bot or 360Spider, and "." because some are called
// Mail.RU_Bot. Any other value ("FooBot/1.2", "Foo Bar", "* x",
// "Mediapartners-Google*") names no crawler and is reported by Skipped. The
// crawler's token is compared with the values case-insensitively (ASCII only)
// and exactly: "Googlebot" does not select "Googlebot-Image" groups, nor the
// reverse. [Robots.Select] takes a chain of tokens for crawlers that document
// a fallback; the first token named anywhere in the file wins. All groups
// naming the token are merged, in file order; if none does, all "*" groups
// are merged and used; if there is no "*" group either, everything is
// allowed. A selected group in which no rule matches allows the target: there
// is no fallback to "*".
//
// # Matching
//
// Patterns and targets are compared in a percent-encoding normal form:
// escapes of unreserved characters (A-Z a-z 0-9 - . _ ~) are decoded ("/%61"
// is "/a"), other escapes are kept with upper-case hex ("%2f" is "%2F", which
// differs from "/"), octets that cannot appear raw in a URI (non-ASCII,
// controls, space, " < > \ ^ ` { | }) are percent-encoded, a "%" that does not
// start an escape is read as "%25", and a literal "*" or "$" in the target is
// read as "%2A" or "%24", which is how a pattern names those characters.
// Nothing else is rewritten: dot segments and double slashes are compared as
// they are.
//
// In a pattern, "*" matches any sequence of characters, an escape counting as
// one: "/*0" does not match "/a%20" (a run of "*" acts as one)
// and "$" anchors the end only as the last character of the pattern; elsewhere
// it is a literal "$". Patterns match from the start of the target, path and
// query together; a pattern that does not start with "/" or "*" can therefore
// never match. An empty Allow or Disallow value matches nothing.
//
// The matching rule with the longest pattern wins: its length is counted in
// octets of the normal form, each "*" and the final "$" counting one (so
// "/a%2f" and "/a%2F" are equally long, and "é" counts as the six octets of
// "%C3%A9"). On a tie an allow rule wins; between two equal rules of the same
// kind, the first in the file is reported. A target whose path is exactly
// "/robots.txt" is always allowed, whatever its query.
//
// Targets are taken as given: a fragment ("#...") is dropped, "" is read as
// "/", and a target that does not start with "/" is read as if it did.
//
// # Crawl-delay and Request-rate
//
// Crawl-delay is a non-negative decimal number of seconds ("0.5" is 500ms);
// Request-rate is "requests/period", the period a decimal number with an
// optional unit s, m, h or d (seconds when absent), and any text after it
// (such as a time window) ignored. Invalid values (negative, NaN, Inf,
// exponents, garbage) are reported by Skipped and ignored; values above
// [MaxInterval] are clamped to it. A merged group keeps the largest
// Crawl-delay and the strictest Request-rate, and [Group.Interval] combines
// the two.
//
// # AI usage preferences
//
// Two records say how fetched content may be used, not whether it may be
// fetched; [Group.Preferences] answers for a target, and
// [Preferences.Refuses] says whether that refuses a crawler's purpose. The
// labels are data (prefs_vocab.json, see [Vocab]), following
// draft-ietf-aipref-attach-05 and draft-ietf-aipref-vocab-07 (19 August
// 2026) and Cloudflare's Content Signals Policy with its 2026 "use" signal.
//
// Content-Usage (IETF aipref) is a rule of a group: "Content-Usage:
// [path] statement", where the optional path starts with "/" and ends at
// the first space or tab, and the statement is a structured-field
// dictionary (RFC 9651) such as "train-ai=n, search=y". The labels are
// train-ai and search; a value counts only as the token y or n, anything
// else is unknown, parameters and unknown labels are ignored, and a
// statement that does not parse leaves every label unknown (reported by
// Skipped). Like Allow and Disallow, a Content-Usage rule ends a run of
// user-agent lines (the draft adds it to the rules of RFC 9309). The rule
// whose path is the longest match decides, with the same normalisation and
// octet count as Allow and Disallow; a rule without a path counts as "/";
// equally long rules combine, "n" beating "y" beating unknown; a target the
// group disallows has no preference at all. At most [MaxContentUsageRules]
// rules are kept per group. Content-Usage outside any group is ignored.
//
// Content-Signal (Cloudflare) is a line of comma-separated pairs, such as
// "search=yes, ai-train=no, ai-input=no, use=reference", compared
// case-insensitively; search, ai-train and ai-input take yes or no, use
// takes immediate, reference or full. A group's lines combine, the most
// restrictive value winning; lines written before the first user-agent
// line apply to every group that has none of its own. A malformed pair is
// reported by Skipped and ignored.
//
// [ParseContentUsage] reads the Content-Usage HTTP header field, and
// [Preferences.Combine] merges it with the robots.txt preferences.
// [Robots.LintPreferences] reports outdated or misplaced labels, statements
// that do not parse, preferences that never apply and lines other parsers
// read differently. A file without these records costs nothing more: its
// groups carry no preference state and [Robots.Decide] is unchanged.
//
// # Cost
//
// Each merged group is compiled once, at parse time, into a radix trie keyed
// by the literal prefix of every rule, walked once along the target. Literal
// rules are decided by the walk; wildcard rules hang, sorted by precedence,
// off the node of their prefix (indexed by a substring they require when
// there are many) and are verified segment by segment with leftmost
// substring searches, which is exact for "*" globs and never backtracks.
// Only rules that could still beat the best match found are tried. A target
// already in normal form is matched in place, without a copy.
//
// Verifying rules one by one can read the target once per candidate rule,
// so a decision counts what those searches read; past 32 KiB, the wildcard
// rules it has not settled are matched in one pass instead, with the same
// answer: an Aho–Corasick automaton over the distinct literal segments of
// the group's wildcard rules, built at parse time, reads the target once,
// unit by unit (an escape is one unit, so matches start on units), and
// advances the leftmost match of every rule that could still win as the
// segment it waits for occurs ('$' rules are checked as suffixes first;
// rules whose last segment's first or last octet no longer occurs are
// dropped; rules are tracked only from the first occurrence of their first
// segment, which is not waited for when all of them are dropped; of rules
// with the same segments in the same set, only the one that takes
// precedence is tracked). That pass costs one automaton step per unit of
// the target (usually one 4-octet load that gives both the next state and
// the segment that ends there) and a constant per segment a rule advances
// by, whatever the target holds: no search is repeated. So a hostile file
// cannot make a decision slow: for targets of at most [MaxTargetLength]
// octets (8 KiB) and groups of 10,000 wildcard rules, a decision stays in
// the tens of microseconds, against targets built to defeat the index and
// the searches (every required substring present in the wrong order, runs
// of one octet, thousands of escapes, nested runs such as "/*a*aa*aaa",
// '$' rules), and under a millisecond for rules of random short segments,
// whose automaton outgrows the caches (BenchmarkWorstCase* in
// worst_test.go measure each shape; make bench runs them). Longer targets
// get the same exact answer, in time proportional to their length. Typical
// decisions never reach the budget. The automaton takes memory linear in
// the wildcard segments, its transition rows capped at 1 MiB per group.
package enforce
