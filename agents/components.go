package agents

import (
	_ "embed"
	"strings"

	"github.com/caddyrobots/caddy-robots/agents/internal/uatext"
)

// componentsText lists the product names and platform words of real
// browsers' User-Agents; the file's header says where they come from.
//
//go:embed data/browser-components.txt
var componentsText string

// maxComponentLen is the longest name isComponent looks up; longer names
// are no browser's.
const maxComponentLen = 32

// components holds the names of componentsText, lower-cased.
var components = newComponentSet(parseComponents(componentsText))

// parseComponents reads the format of data/browser-components.txt: one
// name a line, "#" comments, "[section]" lines. It returns the names
// lower-cased, each once.
func parseComponents(text string) []string {
	seen := map[string]bool{}
	var names []string
	for _, line := range strings.Split(text, "\n") {
		if k := strings.IndexByte(line, '#'); k >= 0 {
			line = line[:k]
		}
		line = strings.ToLower(strings.TrimSpace(line))
		if line == "" || line[0] == '[' || len(line) > maxComponentLen || seen[line] {
			continue
		}
		seen[line] = true
		names = append(names, line)
	}
	return names
}

// componentSet is a set of lower-case names, looked up with a hash of the
// name computed while it is lower-cased: an open-addressing table, so that
// a lookup neither allocates nor hashes the name twice. It is built once
// and read-only after.
type componentSet struct {
	slots []string // "" is an empty slot; len is a power of two
	n     int      // names in the set
}

func newComponentSet(names []string) componentSet {
	size := 16
	for size < 4*len(names) {
		size <<= 1
	}
	set := componentSet{slots: make([]string, size), n: len(names)}
	for _, name := range names {
		i := componentHash(name) & uint32(size-1)
		for set.slots[i] != "" {
			i = (i + 1) & uint32(size-1)
		}
		set.slots[i] = name
	}
	return set
}

// componentHash is FNV-1a of s, which is lower case.
func componentHash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// has reports whether the lower-case name b, hashed to h, is in the set.
func (set *componentSet) has(b []byte, h uint32) bool {
	mask := uint32(len(set.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := set.slots[i]
		if s == "" {
			return false
		}
		if s == string(b) {
			return true
		}
	}
}

// isComponent reports whether name, ignoring ASCII case, is a product name
// or platform word of real browsers (data/browser-components.txt). A name
// that ends in "_" and a build number or version, as apps write their
// names ("musical_ly_2024309030", "aweme_37.5.0"), is looked up without
// them. It does not allocate.
func isComponent(name string) bool {
	if len(name) == 0 || len(name) > maxComponentLen {
		return false
	}
	var buf [maxComponentLen]byte
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
		h = (h ^ uint32(c)) * 16777619
	}
	if components.has(buf[:len(name)], h) {
		return true
	}
	if base := trimBuildNumber(name); len(base) < len(name) {
		return components.has(buf[:len(base)], componentHash(string(buf[:len(base)])))
	}
	return false
}

// trimBuildNumber returns name without a trailing "_" and a build number
// or version ("musical_ly_2024309030" -> "musical_ly", "aweme_37.5.0" ->
// "aweme"), or name itself.
func trimBuildNumber(name string) string {
	i := len(name)
	for i > 0 && (name[i-1] >= '0' && name[i-1] <= '9' || name[i-1] == '.') {
		i--
	}
	if i < len(name) && i > 1 && name[i-1] == '_' && name[i] != '.' {
		return name[:i-1]
	}
	return name
}

// productName returns the name of a product or comment item ("Chrome" of
// "Chrome/131.0.0.0", "MSIE" of "MSIE 10.0"), or "" when the text starts
// with no name: a version ("406.0.0.58.159"), a URL or a mark ("+http://").
func productName(text string) string {
	j, letter := 0, false
	for j < len(text) && uatext.IsWordByte(text[j]) {
		if c := text[j] | 0x20; c >= 'a' && c <= 'z' {
			letter = true
		}
		j++
	}
	for j > 0 && (text[j-1] == '.' || text[j-1] == '-') {
		j--
	}
	if !letter || j == 0 {
		return ""
	}
	return text[:j]
}

// foreignProduct returns the first name of ua that no browser carries: a
// product outside the comments ("MyAgent" of "... Safari/537.36
// MyAgent/1.0") or the name in the "(compatible; Name)" position
// ("ContentGrabber" of "Mozilla/5.0 (compatible; ContentGrabber/3.1)"),
// when it is not a browser component (isComponent). It returns "" when
// every such name is a browser's. It does not allocate.
func foreignProduct(ua string) string {
	name := ""
	uatext.Parts(ua, func(p uatext.Part) bool {
		if p.Kind == uatext.Comment {
			return true
		}
		if n := productName(p.Text); n != "" && !isComponent(n) {
			name = n
			return false
		}
		return true
	})
	return name
}
