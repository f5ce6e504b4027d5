package sites

import (
	"bytes"
	"time"

	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/warnlimit"
)

// Warnings about a robots.txt that loaded but is probably not what the site
// meant: one larger than the 500 KiB RFC 9309 crawlers read (the rest is
// silently ignored), or one in which not a single line could be read as a
// group or a sitemap (an HTML page, a JSON error, a file in the wrong
// encoding), which allows everything. The loader calls warnSuspicious for
// each new version it publishes; each site gets at most one warning of each
// kind every suspiciousEvery.

const suspiciousEvery = 10 * time.Minute

// The kinds of warning, indexes of site.warned.
const (
	warnSize = iota
	warnUnreadable
	warnKinds
)

// warnSuspicious warns when body, just published for st as robots, is cut
// by the size cap or has no line that could be read. Called with st.mu
// held.
func (l *Loader) warnSuspicious(st *site, body []byte, robots *enforce.Robots) {
	if len(body) == 0 {
		return
	}
	now := time.Now()
	allow := func(kind int) bool {
		if last := st.warned[kind]; !last.IsZero() && now.Sub(last) < suspiciousEvery {
			return false
		}
		st.warned[kind] = now
		return true
	}
	if (robots.Truncated() || len(body) > enforce.MaxSize) && allow(warnSize) {
		l.cfg.Logger.Warn("robots: robots.txt is larger than 500 KiB: only the first 500 KiB are read, as RFC 9309 crawlers do, and the rules past it are ignored",
			append(l.siteFields(st), zap.Int("bytes_read", robots.Size()), zap.Int("max_bytes", enforce.MaxSize))...)
	}
	if len(robots.Groups()) == 0 && len(robots.Sitemaps()) == 0 {
		first := firstContentLine(body)
		if first == "" || !allow(warnUnreadable) {
			return
		}
		l.cfg.Logger.Warn("robots: robots.txt has no user-agent group or sitemap that could be read, so it allows everything to every crawler; is it the right file?",
			append(l.siteFields(st), zap.Int("bytes", len(body)), zap.Int("skipped_lines", len(robots.Skipped())),
				zap.String("first_line", warnlimit.Shorten(first, 120)), zap.Bool("looks_like_html", first[0] == '<'))...)
	}
}

// siteFields names the site of a log line.
func (l *Loader) siteFields(st *site) []zap.Field {
	switch l.cfg.Kind {
	case FromFile:
		return []zap.Field{zap.String("source", "file"), zap.String("file", l.cfg.File)}
	case FromInline:
		return []zap.Field{zap.String("source", "inline")}
	}
	return []zap.Field{zap.String("source", "site"), zap.String("host", st.key.host)}
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
