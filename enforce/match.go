package enforce

import (
	"math/bits"
	"slices"
	"strings"
)

// The compiled matcher of one (merged) group.
//
// Every rule is reduced to a normalised glob: literal segments separated by
// '*', optionally anchored at the end by '$'. The first segment of every
// rule is a literal prefix of the targets it matches, so all rules hang off a
// single radix trie keyed by that prefix, and a single walk down the trie
// along the target reaches every rule whose prefix the target has:
//
//   - rules that are only a literal (plain prefixes, "prefix$" exact rules,
//     and "prefix*" forms, which match exactly like the plain prefix) are
//     decided by the walk itself;
//   - the other ("wildcard") rules are attached, as a set, to the trie node
//     of their prefix. After the walk, the sets met on the way are tried,
//     deepest first, skipping every rule that cannot beat the best match
//     found so far. Sets of more than smallSet rules are indexed: '$' rules
//     by the last two octets of their last segment (the target must end
//     with them: one lookup), the others by the rarest 4-octet (else
//     2-octet) substring of their remaining segments, which the target must
//     contain (one lookup per octet of the target, filtered by a bitmap).
//     The rules tried one by one are first filtered by the octets and
//     2-grams of the target (a 128-bit summary computed once).
//
// A wildcard rule is verified segment by segment with leftmost
// strings.Index searches that only accept matches starting on a unit (an
// octet or a "%XY" escape), which is exact for '*'-only globs (the last
// segment of a '$' rule must be a suffix that starts after the previous
// segments): no backtracking, no regexp. Each verification can read the
// rest of the target, so a decision counts what its verifications and index
// scans read; past acBudget, the sets not yet settled go to acRun (ac.go),
// which matches all their rules in one pass over the target.
//
// Memory layout, for few cache misses per decision: trie nodes are 64
// octets (one cache line) in one slice, children contiguous, with the keys
// of the first 16 children and the first and last 8 octets of the label
// inline; a copy of the node where walks start sits in the matcher itself.
// Longer labels, more children and the wildcard segments are in one string
// (blob), the wildcard rules of all sets in one slice (wr), and the index
// tables in one []uint32 (tab).
//
// The walk compares labels 8 octets at a time and finds children with an
// 8-keys-at-a-time octet search. It also lets Decide skip normalisation: a
// target is usually already in normal form, and the walk checks, on the
// way, the octets its answer depends on (see walk).
//
// Precedence is encoded in a single integer, the rank: the pattern length
// (octets of the normalised pattern, each '*' and a final '$' counting one),
// then allow over disallow, then the earlier rule. A larger rank wins; 0
// means "no rule matched". The rank holds the index of its rule, so the
// winner needs no lookup.

// rankOf builds the rank of rule number idx.
func rankOf(prio int, allow bool, idx int) uint64 {
	r := uint64(prio)<<32 | uint64(0x7FFFFFFF-idx)
	if allow {
		r |= 1 << 31
	}
	return r
}

// rankRule returns the index of the rule of rank r and whether it allows.
func rankRule(r uint64) (idx int, allow bool) {
	return 0x7FFFFFFF - int(r&0x7FFFFFFF), r&(1<<31) != 0
}

// tnode is a trie node: 64 octets, one cache line.
type tnode struct {
	keys8  uint64 // the keys of the first 8 children, little-endian, 0-padded
	keys16 uint64 // the keys of the next 8 children
	lab8   uint64 // the first 8 octets of the label, little-endian, 0-padded
	labT   uint64 // the last 8 octets of the label, when it is longer than 8
	pre    uint64 // rank of the best prefix rule ending here
	lab    uint32 // offset in blob of the edge label from the parent
	labn   uint32 // length of the edge label (0 for the root)
	keys   uint32 // offset in blob of the first octet of each child's label
	kid0   uint32 // index of the first child; children are contiguous
	nk     uint32 // number of children
	ws     uint32 // 1 + index in sets of the exact and wildcard rules whose prefix ends here, | wsWild and wsExact when there are such rules; 0: none
}

const (
	wsWild  = 1 << 31
	wsExact = 1 << 30
	wsIndex = wsExact - 1
)

// wrule is a wildcard rule attached to the trie node of its prefix. The
// segments after the prefix are stored in the blob at off, each as a
// 4-octet little-endian length followed by its octets; the last segment of
// an anchored rule comes first, since it is checked first.
type wrule struct {
	rank     uint64
	needB    uint64 // octets the target must contain (bit c&63)
	needG    uint64 // 2-grams the target must contain (hashed to 6 bits)
	off      uint32 // offset in blob of the segments after the prefix
	nseg     uint16 // number of segments after the prefix, >= 1
	anchored bool
}

// wset is the set of wildcard rules attached to one trie node.
type wset struct {
	exact uint64 // rank of the best exact ("$") rule ending at the node
	max   uint64 // highest rank of the wildcard rules
	lin   uint32 // the rules tried one by one are wr[lin:lin+nlin], by descending rank
	nlin  uint32
	idx   uint32 // 1 + index in idx of the indexes of the other rules; 0: none
	end   uint32 // the rules of the set are wr[lin:end]
}

// windex holds the indexes of the rules of a large set.
type windex struct {
	anch gindex // '$' rules by the last 2-gram of their last segment
	g4   gindex // other rules by a 4-gram that the target must contain
	g2   gindex // other rules by a 2-gram that the target must contain
}

// gindex distributes rules into buckets by an n-gram (2 or 4 octets, read
// little-endian as the key), hashed; rank order is kept inside each bucket.
// A bitmap with more bits than there are buckets filters the hashes first.
type gindex struct {
	max    uint64 // highest rank in the index; 0: empty
	fshift uint32 // 32 - log2 of the number of filter bits
	bshift uint32 // 32 - log2 of the number of buckets
	filt   uint32 // tab[filt:] holds the filter bits
	start  uint32 // tab[start+h : start+h+2] are the bounds of bucket h, relative to rules
	keys   uint32 // tab[keys+i] is the key of rule wr[rules+i]
	rules  uint32
}

type matcher struct {
	root    tnode // a copy of nodes[start], next to the fields read with it
	nodes   []tnode
	start   uint32 // node where walks start: the root, or its only child when the root holds nothing
	wildMax uint64 // highest rank of any wildcard rule
	sets    []wset
	blob    string   // edge labels, child keys and wildcard segments, followed by 8 zero octets
	wr      []wrule  // the wildcard rules, set by set
	tab     []uint32 // filters, bucket bounds and keys of the indexes
	idx     []windex
	ac      *acm       // the one-pass fallback (ac.go); nil without wildcard rules
	rests   [][]string // while compiling: the segments after the prefix of each rule of wr
}

// Sets of more rules than smallSet are indexed. When more than bloomLin
// rules are tried one by one, they are first filtered by the octets and
// 2-grams of the target.
const (
	smallSet = 8
	bloomLin = 1
)

// parsedPattern is the normalised form of one rule value.
type parsedPattern struct {
	segs     []string
	anchored bool
	prio     int
}

// parsePattern splits and normalises a non-empty rule value.
func parsePattern(v string) parsedPattern {
	var p parsedPattern
	p.prio = 0
	if strings.HasSuffix(v, "$") {
		p.anchored = true
		v = v[:len(v)-1]
		p.prio++
	}
	parts := strings.Split(v, "*")
	p.prio += len(parts) - 1
	p.segs = make([]string, 0, len(parts))
	for i, s := range parts {
		n := normalString(s)
		p.prio += len(n)
		if i > 0 && n == "" {
			continue // runs of '*' act as one; a trailing '*' is dropped below
		}
		p.segs = append(p.segs, n)
	}
	// "x*" and "x*$" match exactly like the prefix "x".
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		p.anchored = false
	}
	return p
}

type trieKey struct {
	key   string
	pre   uint64
	exact uint64
	wild  []wbuild
}

// wbuild is a wildcard rule being compiled.
type wbuild struct {
	w    wrule
	rest []string // the segments after the prefix
	key  uint32   // its index key
}

func gramBit(a, b byte) uint64 { return 1 << ((uint32(a)<<8 | uint32(b)) * 0x9E3779B1 >> 26) }

// compile builds into m the matcher for rules (in file order) and sets
// their precedence.
func compile(m *matcher, rules []Rule) {
	pats := make([]parsedPattern, len(rules))
	ranks := make([]uint64, 0, len(rules))
	for i := range rules {
		ru := &rules[i]
		if ru.Pattern == "" {
			continue
		}
		pats[i] = parsePattern(ru.Pattern)
		ru.prio = pats[i].prio
		ranks = append(ranks, rankOf(ru.prio, ru.Allow, i))
	}
	// Ranks are distinct.
	slices.Sort(ranks)
	slices.Reverse(ranks)

	keys := map[string]*trieKey{}
	key := func(s string) *trieKey {
		k := keys[s]
		if k == nil {
			k = &trieKey{key: s}
			keys[s] = k
		}
		return k
	}
	// By descending rank, so that the wildcard rules of each prefix are in
	// the order in which they are tried.
	for _, o := range ranks {
		i, _ := rankRule(o)
		p := &pats[i]
		k := key(p.segs[0])
		if len(p.segs) == 1 {
			if p.anchored {
				k.exact = max(k.exact, o)
			} else {
				k.pre = max(k.pre, o)
			}
			continue
		}
		w := wbuild{w: wrule{rank: o, anchored: p.anchored, nseg: uint16(len(p.segs) - 1)}, rest: p.segs[1:]}
		for _, sg := range w.rest {
			for j := 0; j < len(sg); j++ {
				w.w.needB |= 1 << (sg[j] & 63)
				if j+1 < len(sg) {
					w.w.needG |= gramBit(sg[j], sg[j+1])
				}
			}
		}
		k.wild = append(k.wild, w)
		m.wildMax = max(m.wildMax, o)
	}
	list := make([]*trieKey, 0, len(keys))
	for _, k := range keys {
		list = append(list, k)
	}
	slices.SortFunc(list, func(a, b *trieKey) int { return strings.Compare(a.key, b.key) })
	m.nodes = make([]tnode, 1, 2*len(list)+1)
	var blob []byte
	var sets [][]wbuild
	var exacts []uint64
	m.build(0, list, 0, &blob, &sets, &exacts)
	for i, wild := range sets {
		blob = m.addSet(wild, exacts[i], blob)
	}
	blob = append(blob, make([]byte, 8)...)
	m.blob = string(blob)
	if len(m.wr) > 0 {
		m.ac = buildAC(m.wr, m.rests)
		m.ac.group(m)
	}
	m.rests = nil
	if r := &m.nodes[0]; r.pre == 0 && r.ws == 0 && r.nk == 1 && m.blob[r.keys] != '%' {
		m.start = r.kid0
	}
	m.root = m.nodes[m.start]
	if len(m.nodes) < cap(m.nodes)*3/4 {
		m.nodes = slices.Clone(m.nodes)
	}
}

// build fills node ni, which sits at depth d, from the sorted keys that all
// share their first d bytes.
func (m *matcher) build(ni int, list []*trieKey, d int, blob *[]byte, sets *[][]wbuild, exacts *[]uint64) {
	if len(list) > 0 && len(list[0].key) == d {
		m.nodes[ni].pre = list[0].pre
		if len(list[0].wild) > 0 || list[0].exact != 0 {
			*sets = append(*sets, list[0].wild)
			*exacts = append(*exacts, list[0].exact)
			m.nodes[ni].ws = uint32(len(*sets))
			if len(list[0].wild) > 0 {
				m.nodes[ni].ws |= wsWild
			}
			if list[0].exact != 0 {
				m.nodes[ni].ws |= wsExact
			}
		}
		list = list[1:]
	}
	// Group by the byte at position d.
	type grp struct{ lo, hi int }
	var groups []grp
	for i := 0; i < len(list); {
		j := i + 1
		for j < len(list) && list[j].key[d] == list[i].key[d] {
			j++
		}
		groups = append(groups, grp{i, j})
		i = j
	}
	if len(groups) == 0 {
		return
	}
	first := len(m.nodes)
	m.nodes[ni].keys = uint32(len(*blob))
	m.nodes[ni].kid0 = uint32(first)
	m.nodes[ni].nk = uint32(len(groups))
	for i, g := range groups {
		k := list[g.lo].key[d]
		*blob = append(*blob, k)
		if i < 8 {
			m.nodes[ni].keys8 |= uint64(k) << (8 * i)
		} else if i < 16 {
			m.nodes[ni].keys16 |= uint64(k) << (8 * (i - 8))
		}
		m.nodes = append(m.nodes, tnode{})
	}
	for i, g := range groups {
		// Labels are cut before each '%', which thus only starts labels.
		a, b := list[g.lo].key, list[g.hi-1].key
		l := d + 1
		for l < len(a) && l < len(b) && a[l] == b[l] && a[l] != '%' {
			l++
		}
		m.nodes[first+i].lab = uint32(len(*blob))
		m.nodes[first+i].labn = uint32(l - d)
		for k := d; k < l && k < d+8; k++ {
			m.nodes[first+i].lab8 |= uint64(a[k]) << (8 * (k - d))
		}
		if l-d > 8 {
			m.nodes[first+i].labT = load64(a, l-8)
		}
		*blob = append(*blob, a[d:l]...)
		m.build(first+i, list[g.lo:g.hi], l, blob, sets, exacts)
	}
}

// addSet compiles a set of wildcard rules (the sets are added in the order
// of the ws numbers of their nodes) and appends their segments to blob.
func (m *matcher) addSet(wild []wbuild, exact uint64, blob []byte) []byte {
	s := wset{exact: exact}
	if len(wild) == 0 {
		m.sets = append(m.sets, s)
		return blob
	}
	// wild is sorted by descending rank.
	s.max = wild[0].w.rank
	var lin, anch, g4, g2 []wbuild
	if len(wild) <= smallSet {
		lin = wild
	} else {
		longest := func(w *wbuild) int {
			n := 0
			for _, sg := range w.rest {
				n = max(n, len(sg))
			}
			return n
		}
		for _, w := range wild {
			switch {
			case w.w.anchored && len(w.rest[len(w.rest)-1]) >= 2:
				last := w.rest[len(w.rest)-1]
				w.key = key2(last, len(last)-2)
				anch = append(anch, w)
			case longest(&w) >= 4:
				g4 = append(g4, w)
			case longest(&w) >= 2:
				g2 = append(g2, w)
			default:
				lin = append(lin, w)
			}
		}
		rarest(g4, 4)
		rarest(g2, 2)
	}
	s.lin, s.nlin = uint32(len(m.wr)), uint32(len(lin))
	blob = m.addRules(lin, blob)
	if len(anch)+len(g4)+len(g2) > 0 {
		var x windex
		x.anch, blob = m.addIndex(anch, blob)
		x.g4, blob = m.addIndex(g4, blob)
		x.g2, blob = m.addIndex(g2, blob)
		m.idx = append(m.idx, x)
		s.idx = uint32(len(m.idx))
	}
	s.end = uint32(len(m.wr))
	m.sets = append(m.sets, s)
	return blob
}

// addRules appends rules to wr and their segments to blob.
func (m *matcher) addRules(rules []wbuild, blob []byte) []byte {
	for _, w := range rules {
		w.w.off = uint32(len(blob))
		segs := w.rest
		if w.w.anchored {
			blob = appendSeg(blob, segs[len(segs)-1])
			segs = segs[:len(segs)-1]
		}
		for _, sg := range segs {
			blob = appendSeg(blob, sg)
		}
		m.wr = append(m.wr, w.w)
		m.rests = append(m.rests, w.rest)
	}
	return blob
}

func appendSeg(blob []byte, s string) []byte {
	n := uint32(len(s))
	blob = append(blob, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	return append(blob, s...)
}

// addIndex builds the index of rules (sorted by rank) by their keys.
func (m *matcher) addIndex(rules []wbuild, blob []byte) (gindex, []byte) {
	if len(rules) == 0 {
		return gindex{}, blob
	}
	bbits := uint32(3)
	for bbits < 12 && 1<<bbits < 2*len(rules) {
		bbits++
	}
	fbits := min(bbits+3, 16)
	fbits = max(fbits, 6)
	x := gindex{max: rules[0].w.rank, fshift: 32 - fbits, bshift: 32 - bbits}
	nb := 1 << bbits
	// Filter.
	x.filt = uint32(len(m.tab))
	m.tab = append(m.tab, make([]uint32, 1<<fbits/32+1)...)
	for _, w := range rules {
		f := keyHash(w.key, x.fshift)
		m.tab[x.filt+f>>5] |= 1 << (f & 31)
	}
	// Buckets.
	count := make([]uint32, nb+1)
	for _, w := range rules {
		count[keyHash(w.key, x.bshift)+1]++
	}
	for h := 0; h < nb; h++ {
		count[h+1] += count[h]
	}
	x.start = uint32(len(m.tab))
	m.tab = append(m.tab, count...)
	sorted := make([]wbuild, len(rules))
	fill := make([]uint32, nb)
	for _, w := range rules { // rank order is kept inside each bucket
		h := keyHash(w.key, x.bshift)
		sorted[count[h]+fill[h]] = w
		fill[h]++
	}
	x.keys = uint32(len(m.tab))
	for _, w := range sorted {
		m.tab = append(m.tab, w.key)
	}
	x.rules = uint32(len(m.wr))
	return x, m.addRules(sorted, blob)
}

func key2(s string, i int) uint32 { return uint32(s[i]) | uint32(s[i+1])<<8 }

func key4(s string, i int) uint32 {
	s = s[i : i+4]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// gramKey is the key of the n-gram (n is 2 or 4) of s at i.
func gramKey(s string, i, n int) uint32 {
	if n == 4 {
		return key4(s, i)
	}
	return key2(s, i)
}

func keyHash(k, shift uint32) uint32 { return k * 0x9E3779B1 >> shift }

// rarest sets the key of each rule to the n-gram of its segments after the
// prefix that the fewest rules of the list contain.
func rarest(rules []wbuild, n int) {
	grams := func(w *wbuild, f func(k uint32)) {
		for _, sg := range w.rest {
			for i := 0; i+n <= len(sg); i++ {
				f(gramKey(sg, i, n))
			}
		}
	}
	freq := map[uint32]int{}
	var seen []uint32
	for i := range rules {
		seen = seen[:0]
		grams(&rules[i], func(k uint32) {
			if !slices.Contains(seen, k) {
				seen = append(seen, k)
				freq[k]++
			}
		})
	}
	for i := range rules {
		bestF := -1
		grams(&rules[i], func(k uint32) {
			if f := freq[k]; bestF < 0 || f < bestF {
				rules[i].key, bestF = k, f
			}
		})
	}
}

// load64 reads 8 octets of s at i, little-endian.
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// tbloom is the octet set and 2-gram set of a target, computed on demand,
// and the budget of one-by-one verification left to the decision (see
// acBudget).
type tbloom struct {
	b, g uint64
	ok   bool
	work int
}

func (f *tbloom) fill(t string) {
	var b, g uint64
	if len(t) > 256 {
		// For long targets the filter would cost more than it saves.
		b, g = ^uint64(0), ^uint64(0)
	} else if len(t) > 0 {
		b = 1 << (t[0] & 63)
		for i := 1; i < len(t); i++ {
			b |= 1 << (t[i] & 63)
			g |= gramBit(t[i-1], t[i])
		}
	}
	f.b, f.g, f.ok = b, g, true
}

func (f *tbloom) covers(w *wrule) bool { return w.needB&^f.b|w.needG&^f.g == 0 }

// match reports whether the wildcard rule w, whose segments are in blob,
// matches the normalised target t whose first pos octets are its prefix.
//
// Patterns and targets are compared unit by unit, a unit being an octet or
// a "%XY" escape: a segment may only match where a unit starts, not inside
// an escape ("0" does not match the "%20" of "/a%20b"). In a normal form
// every '%' starts an escape, so offset i starts a unit unless t[i-1] or
// t[i-2] is '%'; segments are whole units, so a match that starts on a
// unit also ends on one.
//
// The octets it searches (and a constant per search) are charged to *work;
// when *work drops below 0 while it retries past occurrences inside escapes,
// match gives up (false): its caller then hands the whole set over to acRun.
func (w *wrule) match(blob, t string, pos int, work *int) bool {
	p := int(w.off)
	n := int(w.nseg)
	end := len(t)
	if w.anchored {
		l := int(load32(blob, p))
		last := blob[p+4 : p+4+l]
		p += 4 + l
		n--
		end -= l
		if end < pos || t[len(t)-1] != last[l-1] || t[end:] != last || !unitStart(t, end) {
			return false
		}
	}
	for ; n > 0; n-- {
		l := int(load32(blob, p))
		seg := blob[p+4 : p+4+l]
		i := strings.Index(t[pos:end], seg)
		for i >= 0 && !unitStart(t, pos+i) {
			// Inside an escape: look further.
			if *work -= 32 + i; *work < 0 {
				return false
			}
			pos += i + 1
			i = strings.Index(t[pos:end], seg)
		}
		if i < 0 {
			*work -= 32 + end - pos
			return false
		}
		*work -= 32 + i + l
		p += 4 + l
		pos += i + l
	}
	return true
}

// unitStart reports whether offset i of the normal form t starts a unit.
func unitStart(t string, i int) bool {
	return (i < 1 || t[i-1] != '%') && (i < 2 || t[i-2] != '%')
}

// stackSets is the number of wildcard sets the trie walk collects before
// they are tried.
const stackSets = 8

// match returns the rank of the winning rule for target t, or 0 when no
// rule matches. With raw false, t is in normal form. With raw true, t is a
// target that may not be: match checks that the octets its answer depends
// on are kept as they are by normalisation, and reports false when one is
// not.
func (m *matcher) match(t string, raw bool) (uint64, bool) {
	var stk [stackSets]uint64
	best, ns, ni, pos := m.walk(t, raw, &m.root, m.start, 0, &stk, 0, 0)
	if pos < 0 {
		return 0, false
	}
	if ni == 0 && (ns == 0 || m.wildMax <= best) {
		return best, true
	}
	// Wildcard rules read the whole target.
	if raw && !cleanPrefix(t, len(t)) {
		return 0, false
	}
	tb := tbloom{work: acBudget}
	for {
		// The deepest sets first: their rules tend to be the longest.
		for k := ns - 1; k >= 0; k-- {
			if s := &m.sets[uint32(stk[k])&wsIndex-1]; s.max > best {
				best = m.try(s, t, int(stk[k]>>32), best, &tb)
				if tb.work < 0 {
					// Over budget: the sets left (this one included) in one pass.
					return m.acRun(t, best, stk[:k+1], ni, pos), true
				}
			}
		}
		if ni == 0 {
			return best, true
		}
		best, ns, ni, pos = m.walk(t, false, &m.nodes[ni], ni, pos, &stk, best, 0)
	}
}

// walk walks the trie along t from node n (number ni), whose label starts
// at offset pos. It returns the best literal rule that matches and the
// number of wildcard sets met, which it stores in stk as pos<<32 | ws. When
// stk is full, it stops at the next node that has a set and returns that
// node and offset, to be resumed from there; otherwise it returns node 0.
//
// With raw true, walk also checks that the octets of t its answer depends
// on are kept as they are by normalisation, and returns offset -1 when one
// is not. Labels hold normal forms, which contain no octet that is not
// kept other than '%', and '%' only starts labels (the trie is split
// before each '%'): so the octets that match labels are all kept, and only
// the octets where the walk stops, and the first octet of each label, need
// checking.
//
// walk compares labels of at most 8 octets a word at a time and hands
// the others to label; it finds a child among at most 16 a word at a
// time, and hands the search among more children over to walkSlow.
func (m *matcher) walk(t string, raw bool, n *tnode, ni uint32, pos int, stk *[stackSets]uint64, best uint64, ns int) (uint64, int, uint32, int) {
	nodes := m.nodes
	for {
		// The label of n must follow. Most labels are at most 8 octets
		// and not near the end of t: one word compares them, here; label
		// compares the others.
		if l := int(n.labn); l > 0 {
			var d int
			var matched, ended bool
			if l <= 8 && pos+8 <= len(t) {
				if x := (load64(t, pos) ^ n.lab8) << (64 - 8*l); x == 0 {
					matched = true
				} else {
					d = bits.TrailingZeros64(x)>>3 - (8 - l)
				}
			} else {
				d, matched, ended = m.label(t, pos, n)
			}
			switch {
			case ended:
				// t ends inside the label: the octets of t all match it.
				return best, ns, 0, len(t)
			case !matched:
				if raw && byteClass[t[pos+d]] != clKeep {
					return best, ns, 0, -1
				}
				return best, ns, 0, len(t)
			}
			pos += l
		}
		best = max(best, n.pre)
		if n.ws&wsWild != 0 {
			if ns == stackSets {
				return best, ns, ni, pos - int(n.labn)
			}
			stk[ns] = uint64(pos)<<32 | uint64(n.ws)
			ns++
		}
		if pos >= len(t) {
			if n.ws&wsExact != 0 {
				best = max(best, m.sets[n.ws&wsIndex-1].exact)
			}
			return best, ns, 0, len(t)
		}
		// Find the child whose label starts with t[pos]: the lowest
		// flagged octet of z is a true match.
		if raw && byteClass[t[pos]] != clKeep {
			return best, ns, 0, -1
		}
		c := uint64(t[pos]) * lsb
		x := n.keys8 ^ c
		var j uint32
		if z := (x - lsb) &^ x & msb; z != 0 {
			j = uint32(bits.TrailingZeros64(z) >> 3)
		} else if n.nk <= 8 {
			return best, ns, 0, len(t)
		} else if x = n.keys16 ^ c; (x-lsb)&^x&msb != 0 {
			j = 8 + uint32(bits.TrailingZeros64((x-lsb)&^x&msb)>>3)
		} else if n.nk <= 16 {
			return best, ns, 0, len(t)
		} else {
			return m.walkSlow(t, raw, ni, pos, stk, best, ns)
		}
		if j >= n.nk {
			return best, ns, 0, len(t)
		}
		ni = n.kid0 + j
		n = &nodes[ni]
	}
}

// label compares the label of n (n.labn > 0 octets) with t from pos, 8
// octets at a time where it can, for the labels walk does not compare
// itself (those longer than 8 octets, or near the end of t): it reports
// whether the whole label matched, or else whether t ended inside it (its
// octets all matching), or else d, the offset in the label of the first
// octet that differs.
func (m *matcher) label(t string, pos int, n *tnode) (d int, matched, ended bool) {
	l := int(n.labn)
	switch {
	case l <= 8 && len(t) >= 8 && pos+8 > len(t):
		// Near the end of t: its last r octets, the top of its last
		// word, are compared with the first r of the label.
		r := min(l, len(t)-pos)
		x := (load64(t, len(t)-8)>>(8*(pos+8-len(t))) ^ n.lab8) << (64 - 8*r)
		if x == 0 {
			return r, r == l, r < l
		}
		return bits.TrailingZeros64(x)>>3 - (8 - r), false, false
	case l <= 8:
		// t is shorter than 8 octets.
		r := min(l, len(t)-pos)
		for w := n.lab8; d < r && t[pos+d] == byte(w); d++ {
			w >>= 8
		}
		return d, d == l, d == r && r < l
	case l <= 16 && pos+l <= len(t):
		if x := load64(t, pos) ^ n.lab8; x != 0 {
			return bits.TrailingZeros64(x) >> 3, false, false
		}
		if x := load64(t, pos+l-8) ^ n.labT; x != 0 {
			return l - 8 + bits.TrailingZeros64(x)>>3, false, false
		}
		return 0, true, false
	}
	// A label of more than 16 octets, or t ends inside one of 9 to 16:
	// octet by octet.
	lab := m.blob[n.lab : int(n.lab)+l]
	for d < l && pos+d < len(t) && t[pos+d] == lab[d] {
		d++
	}
	return d, d == l, d < l && pos+d == len(t)
}

// walkSlow is walk's search of the children of node ni when it has more
// than 16 (walk has matched its label and checked t[pos]), then walk again
// from the child.
func (m *matcher) walkSlow(t string, raw bool, ni uint32, pos int, stk *[stackSets]uint64, best uint64, ns int) (uint64, int, uint32, int) {
	n := &m.nodes[ni]
	j := strings.IndexByte(m.blob[n.keys:n.keys+n.nk], t[pos])
	if j < 0 {
		return best, ns, 0, len(t)
	}
	ni = n.kid0 + uint32(j)
	return m.walk(t, raw, &m.nodes[ni], ni, pos, stk, best, ns)
}

// try returns the better of best and the best rule of the set s that
// matches t, whose first pos octets are the prefix of the set.
func (m *matcher) try(s *wset, t string, pos int, best uint64, tb *tbloom) uint64 {
	if s.nlin > 0 {
		lin := m.wr[s.lin : s.lin+s.nlin]
		filter := len(lin) > bloomLin
		if filter && lin[0].rank > best && !tb.ok {
			tb.fill(t)
		}
		for i := range lin {
			w := &lin[i]
			if w.rank <= best {
				break
			}
			if !filter || tb.covers(w) {
				if w.match(m.blob, t, pos, &tb.work) {
					best = w.rank
					break
				}
				if tb.work < 0 {
					return best
				}
			}
		}
	}
	if s.idx == 0 {
		return best
	}
	x := &m.idx[s.idx-1]
	if a := &x.anch; a.max > best && len(t)-pos >= 2 {
		k := key2(t, len(t)-2)
		h := keyHash(k, a.bshift)
		b := m.tab[a.start+h : a.start+h+2]
		for i := b[0]; i < b[1]; i++ {
			w := &m.wr[a.rules+i]
			if w.rank <= best {
				break
			}
			if m.tab[a.keys+i] == k {
				if w.match(m.blob, t, pos, &tb.work) {
					best = w.rank
					break
				}
				if tb.work < 0 {
					return best
				}
			}
		}
	}
	if x.g4.max > best {
		if best = m.scan(&x.g4, t, pos, 4, best, tb); tb.work < 0 {
			return best
		}
	}
	if x.g2.max > best {
		best = m.scan(&x.g2, t, pos, 2, best, tb)
	}
	return best
}

// scan tries the rules of index x whose n-gram occurs in t[pos:]. Each
// n-gram of the target is looked up once: the first distinct n-grams found
// are remembered in a short list; past them, scanAll takes over.
func (m *matcher) scan(x *gindex, t string, pos, n int, best uint64, tb *tbloom) uint64 {
	if tb.work -= 2 * (len(t) - pos); tb.work < 0 {
		return best
	}
	var few [4]uint32
	nfew := 0
	tab := m.tab
	filt := tab[x.filt:]
	for i := pos; i+n <= len(t); i++ {
		k := gramKey(t, i, n)
		hh := k * 0x9E3779B1
		if f := hh >> x.fshift; filt[f>>5]&(1<<(f&31)) == 0 {
			continue
		}
		h := hh >> x.bshift
		b := tab[x.start+h : x.start+h+2]
		lo, hi := b[0], b[1]
		found := false
		for _, kk := range tab[x.keys+lo : x.keys+hi] {
			found = found || kk == k
		}
		if !found {
			continue
		}
		dup := false
		for _, f := range few[:nfew] {
			dup = dup || f == k
		}
		if dup {
			continue
		}
		if nfew == len(few) {
			return m.scanAll(x, t, pos, n, best, tb)
		}
		few[nfew] = k
		nfew++
		if n == 2 && !tb.ok {
			tb.fill(t)
		}
		for j := lo; j < hi; j++ {
			w := &m.wr[x.rules+j]
			if w.rank <= best {
				break
			}
			if tab[x.keys+j] == k && (n == 4 || tb.covers(w)) {
				if w.match(m.blob, t, pos, &tb.work) {
					best = w.rank
					if best >= x.max {
						return best
					}
					break
				}
				if tb.work < 0 {
					return best
				}
			}
		}
	}
	return best
}

// scanAll is scan for targets with many distinct n-grams in the index: it
// visits each bucket once and tries every rule of it whose n-gram occurs
// in t[pos:], so that each rule is verified at most once.
func (m *matcher) scanAll(x *gindex, t string, pos, n int, best uint64, tb *tbloom) uint64 {
	if tb.work -= 2 * (len(t) - pos); tb.work < 0 {
		return best
	}
	var seen [1 << 12 / 64]uint64
	if !tb.ok {
		tb.fill(t)
	}
	for i := pos; i+n <= len(t); i++ {
		k := gramKey(t, i, n)
		h := keyHash(k, x.bshift)
		b := m.tab[x.start+h : x.start+h+2]
		if b[0] == b[1] || seen[h>>6]&(1<<(h&63)) != 0 {
			continue
		}
		seen[h>>6] |= 1 << (h & 63)
		for j := b[0]; j < b[1]; j++ {
			w := &m.wr[x.rules+j]
			if w.rank <= best {
				break
			}
			if !tb.covers(w) {
				continue
			}
			if m.tab[x.keys+j] != k {
				// hasKey reads t[pos:].
				if tb.work -= len(t) - pos + 32; tb.work < 0 {
					return best
				}
				if !hasKey(t[pos:], m.tab[x.keys+j], n) {
					continue
				}
			}
			if w.match(m.blob, t, pos, &tb.work) {
				best = w.rank
				break
			}
			if tb.work < 0 {
				return best
			}
		}
	}
	return best
}

// hasKey reports whether the n-gram k occurs in t.
func hasKey(t string, k uint32, n int) bool {
	var b [4]byte
	for i := range n {
		b[i] = byte(k >> (8 * i))
	}
	return strings.Contains(t, string(b[:n]))
}
