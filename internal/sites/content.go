package sites

import (
	"bytes"
	"fmt"

	"github.com/caddyrobots/caddy-robots/enforce"
)

// Content warnings: what a robots.txt that loaded "ok" may still get wrong,
// kept with each version (computed once per content, when the table adopts
// it) so that the status page shows it on the site's card instead of a
// plain "ok". The log says the same once per site every suspiciousEvery
// (warnSuspicious); these stay for as long as the version is current.

// contentWarnings describes what is wrong with body, parsed as robots: an
// HTML page, a UTF-16 file, no group at all, or more than the 500 KiB
// RFC 9309 crawlers read. An empty or comment-only file is a deliberate
// "allow everything" and has no warning.
func contentWarnings(body []byte, robots *enforce.Robots) []string {
	var out []string
	first := firstContentLine(body)
	switch {
	case isUTF16(body):
		out = append(out, "UTF-16 text (a byte-order mark or NUL bytes): crawlers read robots.txt as UTF-8, so not one line is read; save it as UTF-8")
	case looksLikeHTML(first):
		out = append(out, "an HTML page, not a robots.txt (first line "+quoteShort(first)+"): crawlers find no rule in it, so it allows everything")
	case robots != nil && len(robots.Groups()) == 0 && first != "":
		out = append(out, "no user-agent group: not one rule applies to any crawler, so it allows everything")
	}
	if robots.Truncated() || len(body) > enforce.MaxSize {
		out = append(out, fmt.Sprintf("larger than 500 KiB: only the first %d bytes are read, as RFC 9309 crawlers do; the rules past them are ignored", enforce.MaxSize))
	}
	return out
}

// isUTF16 reports whether body starts with a UTF-16 byte-order mark or
// holds NUL bytes, which no UTF-8 robots.txt does.
func isUTF16(body []byte) bool {
	return bytes.HasPrefix(body, []byte{0xfe, 0xff}) || bytes.HasPrefix(body, []byte{0xff, 0xfe}) || bytes.IndexByte(body, 0) >= 0
}

// looksLikeHTML reports whether a file's first content line is markup.
func looksLikeHTML(first string) bool {
	return len(first) > 0 && first[0] == '<'
}

// quoteShort quotes s, cut to 60 bytes.
func quoteShort(s string) string {
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// trapWarning says when robots does not disallow trap for "*": clients
// that take the trap are then not marked (the root's trap signal). ""
// when there is no trap or the line is there.
func trapWarning(robots *enforce.Robots, trap string) string {
	if trap == "" || robots == nil {
		return ""
	}
	if g, _ := robots.SelectIndex(nil, true); g != nil && !g.Decide(trap).Allowed {
		return ""
	}
	return "no `Disallow: " + trap + "` for \"*\": the trap is not disallowed, so clients that take it are not marked; add the line to every group"
}
