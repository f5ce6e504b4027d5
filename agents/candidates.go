package agents

import (
	"strings"

	"github.com/caddyrobots/caddy-robots/agents/internal/uatext"
)

// maxCandidates is the most candidate tokens a User-Agent keeps: real
// browsers have at most a few (a device model, an app's words), and the
// bound keeps a long hostile header from making the per-request check
// long.
const maxCandidates = 16

// NamedBy returns the first of s.Candidates, in the order they appear in
// the User-Agent, that one of groupTokens names, compared ignoring ASCII
// case; it returns that group token as given, or "" when none names a
// candidate. groupTokens are the product tokens of a robots.txt's
// user-agent lines; "*" names nothing. It does not allocate.
//
// A site's robots.txt may name a client that calls itself a browser: with
// a group "User-agent: MyAgent", the User-Agent
//
//	Mozilla/5.0 (Windows NT 10.0; Win64; x64; MyAgent) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36
//
// is MyAgent's, a bot judged by that group, although Identify takes it
// for a browser. Per request, for an answer that is not a bot's:
//
//	s := id.IdentifyShared(ua)
//	if !s.Bot && len(s.Candidates) > 0 {
//		if tok := s.NamedBy(groupTokens...); tok != "" {
//			// a bot named tok: judge it by the group that names tok
//		}
//	}
//
// The length test is all an ordinary browser costs. A caller that already
// holds the robots.txt's groups in a table keyed by lower-cased token can
// look each of s.Candidates up in it instead, which is what NamedBy does
// with a list.
func (s *Shared) NamedBy(groupTokens ...string) string {
	for _, c := range s.Candidates {
		for _, g := range groupTokens {
			if len(g) == len(c) && strings.EqualFold(g, c) {
				return g
			}
		}
	}
	return ""
}

type span struct{ i, j int }

// candidateTokens returns the candidate tokens of ua (see
// Shared.Candidates): lower-cased, each once, in order, at most
// maxCandidates; nil when there are none.
func candidateTokens(ua string) []string {
	var (
		found [maxCandidates]span
		n     int
		size  int
	)
	i := 0
	for i < len(ua) && n < maxCandidates {
		if !uatext.IsWordByte(ua[i]) {
			i++
			continue
		}
		j := i
		for j < len(ua) && uatext.IsWordByte(ua[j]) {
			j++
		}
		if j < len(ua) && ua[j] == ':' && strings.HasPrefix(ua[j:], "://") {
			// A URL: none of its words is a product token.
			for j < len(ua) && !isURLEnd(ua[j]) {
				j++
			}
			i = j
			continue
		}
		s, e := trimWord(ua, i, j)
		if s < e && isCandidate(ua, s, e) && !seen(ua, found[:n], s, e) {
			found[n] = span{s, e}
			n++
			size += e - s
		}
		i = j
	}
	if n == 0 {
		return nil
	}
	var b strings.Builder
	b.Grow(size)
	for _, sp := range found[:n] {
		for k := sp.i; k < sp.j; k++ {
			b.WriteByte(lower(ua[k]))
		}
	}
	all := b.String()
	out := make([]string, n)
	at := 0
	for k, sp := range found[:n] {
		out[k] = all[at : at+sp.j-sp.i]
		at += sp.j - sp.i
	}
	return out
}

func isURLEnd(c byte) bool {
	return c == ' ' || c == '\t' || c == ';' || c == ')' || c == ']' || c == ','
}

// trimWord drops the dots and hyphens around the word ua[i:j].
func trimWord(ua string, i, j int) (int, int) {
	for i < j && (ua[i] == '.' || ua[i] == '-') {
		i++
	}
	for j > i && (ua[j-1] == '.' || ua[j-1] == '-') {
		j--
	}
	return i, j
}

func seen(ua string, found []span, i, j int) bool {
	for _, sp := range found {
		if sp.j-sp.i == j-i && strings.EqualFold(ua[sp.i:sp.j], ua[i:j]) {
			return true
		}
	}
	return false
}

// isCandidate reports whether the whole word w = ua[i:j] may be a product
// token the User-Agent is known by.
func isCandidate(ua string, i, j int) bool {
	w := ua[i:j]
	if len(w) < 3 {
		return false // U, K, X, wv, rv, en: flags and language codes
	}
	if i > 0 {
		switch ua[i-1] {
		case '/', ':', '@', '=':
			return false // a version or value ("5.0", "FBIOS", "zh_CN"), an e-mail's host
		}
	}
	if j < len(ua) && ua[j] == '@' {
		return false // an e-mail address's user
	}
	if len(w) > maxComponentLen {
		return !isLocale(w) && !uatext.IsDomain(w) // no component is this long
	}
	// One pass lower-cases w for the component set, hashes it and counts
	// its letters.
	var buf [maxComponentLen]byte
	h := uint32(2166136261)
	letters, run, longest := 0, 0, 0
	for k := 0; k < len(w); k++ {
		c := w[k]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[k] = c
		h = (h ^ uint32(c)) * 16777619
		if c >= 'a' && c <= 'z' {
			letters++
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	if letters == 0 {
		return false // a version
	}
	if w[0] >= '0' && w[0] <= '9' && longest < 4 {
		return false // a build number, a screen size or density (1080x2400, 480dpi, 0x28002F30)
	}
	if components.has(buf[:len(w)], h) {
		return false
	}
	if base := trimBuildNumber(w); len(base) < len(w) && components.has(buf[:len(base)], componentHash(string(buf[:len(base)]))) {
		return false
	}
	return !isLocale(w) && !uatext.IsDomain(w)
}

// isLocale reports whether w is a language tag as User-Agents write them:
// "en-US", "en_MY", "zh-cn", "zh-Hans", "zh-Hans-CN".
func isLocale(w string) bool {
	if len(w) < 5 || !isLowerLetters(w[:2]) || w[2] != '-' && w[2] != '_' {
		return false
	}
	rest := w[3:]
	if len(rest) == 2 {
		return isLetters(rest)
	}
	if len(rest) < 4 || !isLetters(rest[:4]) || rest[0] < 'A' || rest[0] > 'Z' {
		return false
	}
	rest = rest[4:]
	return rest == "" || len(rest) == 3 && (rest[0] == '-' || rest[0] == '_') && isLetters(rest[1:])
}

func isLowerLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
