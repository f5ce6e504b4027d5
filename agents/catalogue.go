package agents

//go:generate go run ./internal/gen

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/caddyrobots/caddy-robots/agents/internal/catalogue"
	"github.com/caddyrobots/caddy-robots/agents/internal/uatext"
)

// catalogueJSON is the generated catalogue: data/curated.json merged with
// the upstream lists in data/upstream/ (see NOTICE). Regenerate it with
// `go generate ./agents`.
//
//go:embed data/catalogue.json
var catalogueJSON []byte

// defaultRobotsCacheTTL is how long RFC 9309 §2.4 lets a crawler keep a
// copy of robots.txt.
const defaultRobotsCacheTTL = 24 * time.Hour

// Lookup returns the catalogue entry whose name, product token or User-Agent
// word is name, ignoring case ("googlebot", "GPTBot", "Meta-ExternalAgent");
// failing that, the entry of the product token name starts with
// ("iaskspider/2.0", "Brightbot 1.0", "quillbot.com").
// Names are tried before tokens, so Lookup("Googlebot") is Googlebot itself,
// not one of the crawlers that fall back to its group. The Agent's Tokens
// slice is shared and must not be modified.
func Lookup(name string) (Agent, bool) {
	m, err := loadMatcher()
	if err != nil {
		return Agent{}, false
	}
	i, ok := m.byName[strings.ToLower(name)]
	if !ok {
		// "Brightbot 1.0", "iaskspider/2.0", "quillbot.com": the product
		// token they start with.
		t := uatext.LeadingToken(name)
		if uatext.IsDomain(t) {
			t = t[:strings.IndexByte(t, '.')]
		}
		if i, ok = m.byName[strings.ToLower(t)]; !ok {
			return Agent{}, false
		}
	}
	return m.entries[i].agent, true
}

// Catalogue returns every entry of the catalogue: the hand-curated crawlers
// first, then the ai.robots.txt agents, then the crawler-user-agents
// entries. The slice is a fresh copy the caller may reorder; the Tokens
// slices inside it are shared and must not be modified.
func Catalogue() []Agent {
	m, err := loadMatcher()
	if err != nil {
		return nil
	}
	out := make([]Agent, len(m.entries))
	for i := range m.entries {
		out[i] = m.entries[i].agent
	}
	return out
}

var (
	matcherOnce sync.Once
	theMatcher  *matcher
	matcherErr  error
)

// loadMatcher parses the embedded catalogue once. The catalogue is tested,
// so an error here means a corrupt build; Identify then falls back to the
// heuristics alone.
func loadMatcher() (*matcher, error) {
	matcherOnce.Do(func() {
		theMatcher, matcherErr = newMatcher(catalogueJSON)
	})
	return theMatcher, matcherErr
}

func parseSupport(s string) Support {
	switch s {
	case "yes":
		return SupportYes
	case "no":
		return SupportNo
	}
	return SupportUnknown
}

// newMatcher builds the matcher from the catalogue file's bytes.
func newMatcher(data []byte) (*matcher, error) {
	var f catalogue.File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("agents: parsing the embedded catalogue: %w", err)
	}
	m := &matcher{byName: make(map[string]int32, 4*len(f.Entries))}
	index := map[string]int32{}
	for i, e := range f.Entries {
		ttl := defaultRobotsCacheTTL
		if e.RobotsCacheTTL != "" {
			d, err := time.ParseDuration(e.RobotsCacheTTL)
			if err != nil {
				return nil, fmt.Errorf("agents: catalogue entry %q: robots_cache_ttl: %w", e.Name, err)
			}
			ttl = d
		}
		var tokens []string
		if len(e.Tokens) > 0 {
			tokens = e.Tokens[:len(e.Tokens):len(e.Tokens)]
		}
		m.entries = append(m.entries, entry{
			agent: Agent{
				Bot: true, Known: true, Name: e.Name, Operator: e.Operator,
				Category: Category(e.Category), Purpose: Purpose(e.Purpose), Tokens: tokens,
				Profile: Profile{
					CrawlDelay:      parseSupport(e.CrawlDelay),
					RequestRate:     parseSupport(e.RequestRate),
					IgnoresWildcard: e.IgnoresWildcard,
					UserTriggered:   e.UserTriggered,
					RobotsCacheTTL:  ttl,
					Verify:          e.Verify,
				},
			},
			generic: e.Generic,
		})
		index[e.Name] = int32(i)
	}
	// Lookup keys: names, then first tokens, then words, then other tokens.
	put := func(k string, i int) {
		k = strings.ToLower(k)
		if _, ok := m.byName[k]; !ok {
			m.byName[k] = int32(i)
		}
	}
	for i, e := range f.Entries {
		put(e.Name, i)
	}
	for i, e := range f.Entries {
		if len(e.Tokens) > 0 {
			put(e.Tokens[0], i)
		}
	}
	for i, e := range f.Entries {
		for _, w := range e.Words {
			put(w, i)
		}
		for _, t := range e.Tokens {
			put(t, i)
		}
	}
	for i, e := range f.Entries {
		for _, d := range e.DependsOn {
			j, ok := index[d]
			if !ok {
				return nil, fmt.Errorf("agents: catalogue entry %q depends on unknown %q", e.Name, d)
			}
			m.entries[i].deps = append(m.entries[i].deps, j)
		}
		for _, w := range e.Words {
			m.addNeedle(needle{text: strings.ToLower(w), entry: int32(i), kind: kindWord})
		}
		for _, p := range e.Patterns {
			pi := int32(-1)
			if p.Lit == "" {
				re, err := regexp.Compile(p.Re)
				if err != nil {
					return nil, fmt.Errorf("agents: catalogue entry %q: %w", e.Name, err)
				}
				pi = int32(len(m.res))
				m.res = append(m.res, re)
			}
			for _, n := range p.Needles {
				nd := needle{text: n, entry: int32(i), kind: kindRegexp, pat: pi}
				if p.Lit != "" {
					if len(p.Lit) != len(n) {
						return nil, fmt.Errorf("agents: catalogue entry %q: literal %q and needle %q differ", e.Name, p.Lit, n)
					}
					nd.kind, nd.lit = kindLiteral, p.Lit
				}
				m.addNeedle(nd)
			}
		}
	}
	if err := m.buildIndex(); err != nil {
		return nil, err
	}
	return m, nil
}
