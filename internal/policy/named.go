package policy

import (
	"strings"

	"github.com/caddyrobots/caddy-robots/agents"
)

// NamedBySite returns the user-agent value of a group of one of the
// versions that names one of a's Candidates, as the file writes it ("" when
// none does). A client that calls itself a browser but carries a word that
// the site's own robots.txt names as a group ("User-agent: MyAgent" and a
// User-Agent "Mozilla/5.0 (...; MyAgent) ... Chrome/131 ...") is the bot
// that group is written for, judged by it (see NamedAgent). Candidates are
// whole words, compared ignoring case, never substrings, and never a
// browser's own words (Mozilla, Chrome, Safari, ...), so a group for
// "Mozilla" turns no browser into a bot.
//
// Versions are searched newest first; a version that does not name one
// leaves the client to the next. It costs a length test for a typical
// browser (no candidates) and a filtered hash lookup per candidate and
// version otherwise, and does not allocate.
func NamedBySite(a *agents.Shared, versions []*Version) string {
	if len(a.Candidates) == 0 {
		return ""
	}
	for _, v := range versions {
		if v == nil || v.Robots == nil {
			continue
		}
		g, i := v.Robots.SelectIndex(a.Candidates, false)
		if g == nil || i < 0 {
			continue
		}
		c := a.Candidates[i]
		for _, name := range g.Agents {
			if len(name) == len(c) && strings.EqualFold(name, c) {
				return name
			}
		}
		return c
	}
	return ""
}

// NamedAgent is the bot a site's group named token stands for (see
// NamedBySite): an automated client of category and purpose other, named
// token, obeying token's group (and "*" when the file has none for it).
func NamedAgent(token string) agents.Agent {
	return agents.Agent{Bot: true, Name: token, Category: agents.CategoryOther, Purpose: agents.PurposeOther, Tokens: []string{token}}
}
