package agents

import (
	"fmt"
	"regexp"

	"github.com/caddyrobots/caddy-robots/agents/internal/uatext"
)

// The matcher finds catalogue entries in a User-Agent without running the
// catalogue's ~1,500 regular expressions. Every entry is recognised by
// needles: lower-case literal texts at least one of which must occur in the
// User-Agent. Needles are indexed by their first three bytes; one pass over
// the User-Agent looks up each three-byte window in a small hash table, so
// only needles that share a window are compared, and only the few regular
// expressions whose needle occurs ever run.

const (
	kindWord    = iota // a whole word, any case (curated and ai.robots.txt names)
	kindLiteral        // an upstream pattern that is a plain literal: compare its case
	kindRegexp         // an upstream pattern: run its regular expression
)

const bucketBits = 13

type needle struct {
	text  string // lower case, at least 3 bytes
	lit   string // kindLiteral: the case-sensitive text
	pre   uint64 // the first eight bytes (or fewer), big-endian, left-aligned
	mask  uint64 // which bytes of pre count
	key   uint32 // the first three bytes
	entry int32
	pat   int32 // kindRegexp: index into matcher.res
	kind  uint8
}

type entry struct {
	agent   Agent
	generic bool
	deps    []int32
}

type matcher struct {
	entries []entry
	needles []needle
	res     []*regexp.Regexp
	heads   []uint32 // bucket b holds order[heads[b]:heads[b+1]]
	order   []int32
	short   []int32 // needles shorter than three bytes, checked one by one
	byName  map[string]int32
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func key3(a, b, c byte) uint32 { return uint32(a)<<16 | uint32(b)<<8 | uint32(c) }

func bucket(k uint32) uint32 { return (k * 2654435761) >> (32 - bucketBits) }

func (m *matcher) addNeedle(n needle) {
	if n.text == "" {
		return
	}
	if len(n.text) >= 3 {
		n.key = key3(n.text[0], n.text[1], n.text[2])
	}
	for i := 0; i < 8; i++ {
		n.pre <<= 8
		n.mask <<= 8
		if i < len(n.text) {
			n.pre |= uint64(n.text[i])
			n.mask |= 0xff
		}
	}
	m.needles = append(m.needles, n)
}

func (m *matcher) buildIndex() error {
	const nb = 1 << bucketBits
	counts := make([]uint32, nb+1)
	for i, n := range m.needles {
		if len(n.text) < 3 {
			m.short = append(m.short, int32(i))
			continue
		}
		counts[bucket(n.key)+1]++
	}
	for b := 1; b <= nb; b++ {
		counts[b] += counts[b-1]
	}
	m.heads = make([]uint32, nb+1)
	copy(m.heads, counts)
	m.order = make([]int32, int(counts[nb]))
	fill := make([]uint32, nb)
	copy(fill, counts[:nb])
	for i, n := range m.needles {
		if len(n.text) < 3 {
			continue
		}
		b := bucket(n.key)
		m.order[fill[b]] = int32(i)
		fill[b]++
	}
	if len(m.short) > 16 {
		return fmt.Errorf("agents: %d catalogue needles are shorter than 3 bytes", len(m.short))
	}
	return nil
}

// candidate is one entry found in a User-Agent.
type candidate struct {
	entry int32
	pos   int32
	n     int32 // length of the matched needle
	word  bool
}

func hasPrefixFold(s, lowerPrefix string) bool {
	if len(s) < len(lowerPrefix) {
		return false
	}
	for i := 0; i < len(lowerPrefix); i++ {
		if lower(s[i]) != lowerPrefix[i] {
			return false
		}
	}
	return true
}

// covers reports whether c's matched text strictly contains d's.
func (c *candidate) covers(d *candidate) bool {
	return c.n > d.n && c.pos <= d.pos && c.pos+c.n >= d.pos+d.n
}

// better reports whether candidate a identifies the client better than b.
func (m *matcher) better(a, b *candidate) bool {
	ea, eb := &m.entries[a.entry], &m.entries[b.entry]
	if ea.generic != eb.generic {
		return !ea.generic // a crawler built on a library is the crawler
	}
	for _, d := range ea.deps {
		if d == b.entry {
			return true
		}
	}
	for _, d := range eb.deps {
		if d == a.entry {
			return false
		}
	}
	if a.word != b.word {
		// A pattern whose literal text covers the other's word names the
		// client more precisely ("Screaming Frog SEO Spider" over the
		// "Spider" of another entry); otherwise a product name beats a
		// pattern on, say, a URL.
		if a.covers(b) {
			return true
		}
		if b.covers(a) {
			return false
		}
		return a.word
	}
	if a.n != b.n {
		return a.n > b.n // the longer, more specific name
	}
	if a.pos != b.pos {
		return a.pos < b.pos
	}
	return a.entry < b.entry
}

// match returns the index of the entry that best identifies ua, or -1.
func (m *matcher) match(ua string) int32 {
	var (
		best    candidate
		found   bool
		checked [8]int32 // regular expressions already run
		nc      int
	)
	consider := func(c candidate) {
		if !found || m.better(&c, &best) {
			best, found = c, true
		}
	}
	test := func(id int32, i int) {
		n := &m.needles[id]
		end := i + len(n.text)
		if len(n.text) > 8 && !hasPrefixFold(ua[i:], n.text) || end > len(ua) {
			return
		}
		switch n.kind {
		case kindWord:
			if uatext.WordAt(ua, i, end) {
				consider(candidate{entry: n.entry, pos: int32(i), n: int32(len(n.text)), word: true})
			}
		case kindLiteral:
			if ua[i:end] == n.lit {
				consider(candidate{entry: n.entry, pos: int32(i), n: int32(len(n.text))})
			}
		case kindRegexp:
			for k := 0; k < nc; k++ {
				if checked[k] == n.pat {
					return
				}
			}
			if nc < len(checked) {
				checked[nc] = n.pat
				nc++
			}
			if m.res[n.pat].MatchString(ua) {
				consider(candidate{entry: n.entry, pos: int32(i), n: int32(len(n.text))})
			}
		}
	}
	if len(ua) >= 3 {
		// w holds ua[i:i+8] in lower case, big-endian, zero-padded.
		var w uint64
		for j := 0; j < 8; j++ {
			w <<= 8
			if j < len(ua) {
				w |= uint64(lower(ua[j]))
			}
		}
		for i := 0; i+2 < len(ua); i++ {
			if i > 0 {
				w <<= 8
				if i+7 < len(ua) {
					w |= uint64(lower(ua[i+7]))
				}
			}
			k := uint32(w >> 40)
			bk := bucket(k)
			lo, hi := m.heads[bk], m.heads[bk+1]
			for _, id := range m.order[lo:hi] {
				if n := &m.needles[id]; w&n.mask == n.pre {
					test(id, i)
				}
			}
		}
	}
	for _, id := range m.short {
		t := m.needles[id].text
		for i := 0; i+len(t) <= len(ua); i++ {
			test(id, i)
		}
	}
	if !found {
		return -1
	}
	return best.entry
}
