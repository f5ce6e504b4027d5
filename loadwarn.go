package caddyrobots

import (
	"bytes"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce"
)

// Warnings about a robots.txt that loaded but is probably not what the site
// meant: one larger than the 500 KiB RFC 9309 crawlers read (the rest is
// silently ignored), or one in which not a single line could be read as a
// group or a sitemap (an HTML page, a JSON error, a file in the wrong
// encoding), which allows everything. The loader calls warnSuspicious for
// each new version it publishes; each site gets at most one warning of each
// kind every suspiciousEvery.

const suspiciousEvery = 10 * time.Minute

// suspiciousWarned remembers, per site and kind of warning, when it was
// last given.
var suspiciousWarned = newBoundedMap[string, time.Time](4096)

// warnSuspicious warns when body, just published for hr as robots, is cut
// by the size cap or has no line that could be read.
func warnSuspicious(h *Handler, hr *hostRules, body []byte, robots *enforce.Robots) {
	if h == nil || h.logger == nil || len(body) == 0 {
		return
	}
	site := siteFields(h, hr)
	now := time.Now()
	allow := func(kind string) bool {
		// The entry's address tells two inline sources apart; entries
		// survive reloads (versionPool), so the limit does too.
		key := fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%p", kind, h.Source, hr.key.server, hr.key.host, h.File, hr)
		if last, ok := suspiciousWarned.Get(key); ok && now.Sub(last) < suspiciousEvery {
			return false
		}
		suspiciousWarned.Put(key, now)
		return true
	}
	if (robots.Truncated() || len(body) > enforce.MaxSize) && allow("size") {
		h.logger.Warn("robots: robots.txt is larger than 500 KiB: only the first 500 KiB are read, as RFC 9309 crawlers do, and the rules past it are ignored",
			append(site, zap.Int("bytes_read", robots.Size()), zap.Int("max_bytes", enforce.MaxSize))...)
	}
	if len(robots.Groups()) == 0 && len(robots.Sitemaps()) == 0 {
		first := firstContentLine(body)
		if first == "" || !allow("unreadable") {
			return
		}
		h.logger.Warn("robots: robots.txt has no user-agent group or sitemap that could be read, so it allows everything to every crawler; is it the right file?",
			append(site, zap.Int("bytes", len(body)), zap.Int("skipped_lines", len(robots.Skipped())),
				zap.String("first_line", truncateUTF8(first, 120)), zap.Bool("looks_like_html", first[0] == '<'))...)
	}
}

// siteFields names the site of a warning.
func siteFields(h *Handler, hr *hostRules) []zap.Field {
	switch h.Source {
	case "file":
		return []zap.Field{zap.String("source", "file"), zap.String("file", h.File)}
	case "inline":
		return []zap.Field{zap.String("source", "inline")}
	}
	return []zap.Field{zap.String("source", "site"), zap.String("host", hr.key.host)}
}

// firstContentLine returns the first line of body that is neither blank nor
// a comment, trimmed; "" when there is none (a file of comments only is a
// deliberate "allow everything").
func firstContentLine(body []byte) string {
	for len(body) > 0 {
		line := body
		if i := bytes.IndexAny(body, "\r\n"); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		line = bytes.TrimSpace(bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")))
		if len(line) > 0 && line[0] != '#' {
			return string(line)
		}
	}
	return ""
}
