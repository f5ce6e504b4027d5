package enforce

import (
	"math/bits"
	"slices"
	"strings"
	"sync"
)

// The one-pass fallback of the wildcard matcher.
//
// Wildcard rules are normally verified one by one (match.go), which is fast
// when few rules are candidates but costs up to one scan of the target per
// candidate. match counts the octets those verifications may read; past
// acBudget it hands every wildcard set it has not finished over to acRun,
// whose cost is linear in the target plus the number of segments of the
// rules it tracks, whatever the target holds:
//
//   - at compile time, an Aho–Corasick automaton is built over the distinct
//     "middle" segments of the matcher's wildcard rules (every segment after
//     the prefix, except the last segment of a '$' rule, which is checked as
//     a suffix). It reads units, not octets: a "%XY" escape is one symbol, so
//     every occurrence it reports starts on a unit, as the rules require;
//   - at decision time, every candidate rule (rank above the best match so
//     far, and not dominated: a rule of the same set with the same segments
//     and a higher rank matches whenever it does) gets an entry that waits
//     for its next segment. Greedy leftmost matching is exact for '*'
//     globs, so an entry only needs the first occurrence of that segment
//     that starts at or after the end of the previous one (q): the entry is
//     "armed" at offset q+len(seg), the first end an acceptable occurrence
//     can have, and from then on the next occurrence the automaton reports
//     advances it;
//   - the automaton reports, at each offset, the segments that end there: a
//     chain of nested suffixes in the "output tree" (a segment's parent is
//     its longest proper suffix that is a segment). Only segments with
//     armed entries are wanted; they are marked in a bitmap laid out by a
//     heavy-path decomposition of that tree, so the marked segments of a
//     chain are found with a few bit scans (one per light edge, at most
//     log2 of the number of segments) rather than one step per segment.
//
// A segment found this way advances all its entries and is unmarked, so
// the work of a decision is one automaton step per unit of the target (the
// failure links add at most as many), a few bit scans per unit, and a
// constant per entry per segment. A step is usually one 4-octet load from
// the row of the current state, which gives both the next state and the
// segment to report (see acSlow): the loads that depend on the previous
// step, which bound the speed of the scan, are one per unit.

// acBudget is the work that one-by-one verification may do for one decision
// before acRun takes over, in octets read: each octet a substring search
// reads counts one, plus 32 per search; each octet an index scan reads
// counts two. A variable only so that tests can force the fallback.
var acBudget = 32 << 10

// acm is the automaton of a matcher, nil when it has no wildcard rule.
type acm struct {
	w      uint32      // bitmap words per node
	cls    [384]uint16 // class of each symbol: octets < 128, then 128+v for the escape of v; 0: in no segment
	bm     []uint64    // children bitmaps, w words per node
	base   []uint32    // per bitmap word, the node of the first child it counts
	fail   []uint32
	out    []int64  // the longest segment that is a suffix of the node's string (low half; -1: none) and the head of its heavy path (high half)
	stride uint32   // cells of a row of dfa: one per class, 0 included
	dfa    []uint32 // rows of cells (see acSlow): one per node that is not a leaf, the shallowest first, up to acDFACells cells
	rowOf  []int32  // the row of each node; -1: none
	so     []int64  // the out of the segment a cell reports: so[0] = -1, so[b+1] = the out of segment b

	// Segments are numbered by their bit: the heavy paths of the output
	// tree are contiguous, head first.
	slen []uint32 // octets of each segment
	par  []int32  // output tree: the longest segment that is a proper suffix; -1: none
	upo  []int64  // par as out holds it: the parent and the head of its heavy path; -1: none
	head []int32  // the head of the heavy path of each segment

	rseg  []uint32 // the middle segments of wr[i] are slots[rseg[i]:], up to a 0
	fin   []uint16 // the first and last octets of the last middle segment of wr[i]
	suf   []uint32 // the last (up to) two octets of the suffix of '$' rule wr[i], and its length
	slots []uint64 // segment<<32 | its length

	// Sets of many rules are also kept grouped by their first middle
	// segment, so that the rules whose first segment does not occur cost
	// nothing (see acRun).
	sgroup []uint32 // per set: 1 + index in groups; 0: none
	groups []acGroups

	// dom marks (by index in wr) the rules that another rule of the same
	// set with the same segments and a higher rank dominates: that rule
	// matches whenever they do, so acRun need not track them.
	dom []uint64
}

// acGroups holds the rules of a set with at least one middle segment,
// grouped by the first one, and those without.
type acGroups struct {
	seg   []int32  // the first middle segment of each group, ascending
	bits  []uint64 // the segments of seg as a bitmap, when that is not much larger
	rank  []uint32 // rank[j]: the set bits of bits before word j
	start []uint32 // group g is recs[start[g]:start[g+1]]
	recs  []acRec
	fin   []uint16  // per rec, fin of its rule when it has a second middle segment; 0: none
	fins  [4]uint64 // the octets of fin
	solo  []uint32  // indexes in wr of the '$' rules without middle segments
}

// acRec is what expanding a group reads of one of its rules, in one place.
type acRec struct {
	rank uint64
	sl   uint64 // slots[k]
	rule uint32 // index in wr
	k    uint32 // the slot of the second middle segment
	suf  uint32 // suf[rule] of a '$' rule; 0: not one
	fin  uint16 // fin[rule]
}

// acEnt is a rule tracked by acRun: it waits for the segment of slot k.
type acEnt struct {
	k    uint32 // index in slots of the awaited segment
	next int32  // next entry in the same list, 1-based; 0: none
	lim  int32  // offset the middle segments must end by
	rule uint32 // index in wr
	b    uint32 // the awaited segment (slots[k]>>32)
}

type acScratch struct {
	ent  []acEnt
	arm  []int32  // arm[f]: entries armed at offset f (1-based list heads)
	wait []int32  // wait[s]: entries waiting for segment s, valid when dyn has s
	dyn  []uint64 // segments with waiting entries
	bits []uint64 // marks: segments with waiting entries or a pending group (dyn | stat)
	stat []uint64 // segments with a pending group
	sets []uint64 // the sets to match, as walk stores them
	last [256]int32
}

// acScratchPool keeps acRun's scratch buffers between runs.
var acScratchPool = sync.Pool{New: func() any { return new(acScratch) }}

// acKeepMax bounds the buffers kept: a run on a huge file does not pin its
// scratch memory for good.
const acKeepMax = 1 << 20

func getScratch() *acScratch { return acScratchPool.Get().(*acScratch) }

func putScratch(sc *acScratch) {
	if cap(sc.ent) > acKeepMax || cap(sc.arm) > acKeepMax || cap(sc.wait) > acKeepMax {
		return
	}
	acScratchPool.Put(sc)
}

var hexVal = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		if v, ok := unhex(byte(c)); ok {
			t[c] = v
		}
	}
	return t
}()

// units calls f with the symbol of each unit of the normal form s.
func units(s string, f func(sym int)) {
	for i := 0; i < len(s); {
		var sym int
		sym, i = nextUnit(s, i)
		f(sym)
	}
}

// nextUnit returns the symbol of the unit of s that starts at offset i
// (octets below 128 are themselves; the escape "%XY" is 128+0xXY), and the
// offset after it.
func nextUnit(s string, i int) (sym, next int) {
	if s[i] == '%' && i+2 < len(s) {
		return 128 + int(hexVal[s[i+1]])<<4 | int(hexVal[s[i+2]]), i + 3
	}
	return int(s[i] & 127), i + 1
}

// buildAC builds the automaton of the wildcard rules wr, whose segments
// after the prefix are rests: the distinct segments get one trie with
// failure links (Aho-Corasick), laid out for the scan.
func buildAC(wr []wrule, rests [][]string) *acm {
	a := &acm{rseg: make([]uint32, len(wr)), fin: make([]uint16, len(wr)), suf: make([]uint32, len(wr))}
	segs, distinct := a.internSegments(wr, rests)
	nc := a.assignClasses(distinct)
	items := a.sortedKeys(distinct)
	out, remap := a.buildTrie(items, distinct)
	bit := a.layout()
	a.setOuts(out, bit)
	a.buildRows(nc)
	a.slots = make([]uint64, len(segs))
	for i, sg := range segs {
		if sg >= 0 {
			b := bit[remap[sg]]
			a.slots[i] = uint64(b)<<32 | uint64(a.slen[b])
		}
	}
	return a
}

// internSegments records each rule's first segment (rseg), the first and
// last octets of its last middle segment (fin) and, for an anchored rule,
// the key of its suffix (suf); it returns the segments of all rules as
// indexes into the distinct segments, each rule's ended by -1.
func (a *acm) internSegments(wr []wrule, rests [][]string) (segs []int32, distinct []string) {
	ids := map[string]int32{}
	var nsegs int
	for i := range wr {
		mid := rests[i]
		if wr[i].anchored {
			mid = mid[:len(mid)-1]
		}
		nsegs += len(mid) + 1
	}
	segs = make([]int32, 0, nsegs)
	for i := range wr {
		mid := rests[i]
		if wr[i].anchored {
			mid = mid[:len(mid)-1]
		}
		a.rseg[i] = uint32(len(segs))
		if len(mid) > 0 {
			f := mid[len(mid)-1]
			a.fin[i] = uint16(f[0]) | uint16(f[len(f)-1])<<8
		}
		if wr[i].anchored {
			l := rests[i][len(rests[i])-1]
			a.suf[i] = sufKey(l)
		}
		for _, s := range mid {
			id, ok := ids[s]
			if !ok {
				id = int32(len(distinct))
				ids[s] = id
				distinct = append(distinct, s)
			}
			segs = append(segs, id)
		}
		segs = append(segs, -1)
	}
	return segs, distinct
}

// assignClasses numbers the symbols the segments use (a.cls), in symbol
// order, so that children sorted by class are sorted by symbol; it sets the
// bitmap width a.w and returns the number of classes.
func (a *acm) assignClasses(distinct []string) int {
	var used [384]bool
	for _, s := range distinct {
		units(s, func(sym int) { used[sym] = true })
	}
	nc := 0
	for sym, u := range used {
		if u {
			nc++
			a.cls[sym] = uint16(nc)
		}
	}
	a.w = uint32(nc+1+63) / 64
	return nc
}

// acItem is a distinct segment spelt as its key: two octets per unit (its
// class, big-endian).
type acItem struct {
	key string
	seg int32 // index in distinct
}

// sortedKeys returns the keys of the distinct segments, sorted.
func (a *acm) sortedKeys(distinct []string) []acItem {
	items := make([]acItem, len(distinct))
	var kb []byte
	for i, s := range distinct {
		kb = kb[:0]
		units(s, func(sym int) { c := a.cls[sym]; kb = append(kb, byte(c>>8), byte(c)) })
		items[i] = acItem{string(kb), int32(i)}
	}
	slices.SortFunc(items, func(x, y acItem) int { return strings.Compare(x.key, y.key) })
	return items
}

// acRange is a trie node to build: the items lo..hi that go through it, at
// depth d in units.
type acRange struct {
	node   uint32
	lo, hi int32
	d      int
}

// buildTrie builds the trie of the sorted items, breadth first (the
// children of a node are contiguous), with failure links (a.bm, a.base,
// a.fail) and the segments (a.slen, a.par). It returns the segment each
// node reports (out, -1 for none) and the segment id of each distinct
// segment (remap).
func (a *acm) buildTrie(items []acItem, distinct []string) (out, remap []int32) {
	w := int(a.w)
	remap = make([]int32, len(distinct)) // index in distinct -> segment id
	a.bm = make([]uint64, w, w*(len(distinct)+1))
	a.base = make([]uint32, w, w*(len(distinct)+1))
	a.fail = []uint32{0}
	out = []int32{-1}
	units := 1
	for _, it := range items {
		units += len(it.key) / 2
	}
	q := make([]acRange, 1, units) // at most one node per unit
	q[0] = acRange{0, 0, int32(len(items)), 0}
	for qi := 0; qi < len(q); qi++ {
		r := q[qi]
		v := r.node
		lo := r.lo
		o := int32(-1)
		if v != 0 {
			o = out[a.fail[v]]
		}
		if lo < r.hi && len(items[lo].key) == 2*r.d {
			id := int32(len(a.slen))
			remap[items[lo].seg] = id
			a.slen = append(a.slen, uint32(len(distinct[items[lo].seg])))
			a.par = append(a.par, o)
			o = id
			lo++
		}
		out[v] = o
		first := uint32(len(a.fail))
		q, out = a.addChildren(q, items, r, lo, v, out)
		n := first
		for k := 0; k < w; k++ {
			a.base[int(v)*w+k] = n
			n += uint32(bits.OnesCount64(a.bm[int(v)*w+k]))
		}
	}
	return out, remap
}

// addChildren adds the children of node v, the items lo..r.hi grouped by
// their class at depth r.d, each with its failure link: the longest proper
// suffix that is a node. It returns q with the children to build appended,
// and out grown by one entry per child.
func (a *acm) addChildren(q []acRange, items []acItem, r acRange, lo int32, v uint32, out []int32) ([]acRange, []int32) {
	w := int(a.w)
	for i := lo; i < r.hi; {
		c := uint16(items[i].key[2*r.d])<<8 | uint16(items[i].key[2*r.d+1])
		j := i + 1
		for j < r.hi && items[j].key[2*r.d] == items[i].key[2*r.d] && items[j].key[2*r.d+1] == items[i].key[2*r.d+1] {
			j++
		}
		child := uint32(len(a.fail))
		a.bm[int(v)*w+int(c>>6)] |= 1 << (c & 63)
		a.bm = append(a.bm, make([]uint64, w)...)
		a.base = append(a.base, make([]uint32, w)...)
		f := uint32(0)
		if v != 0 {
			for g := a.fail[v]; ; g = a.fail[g] {
				if k, ok := a.child(g, c); ok {
					f = k
					break
				}
				if g == 0 {
					break
				}
			}
		}
		a.fail = append(a.fail, f)
		out = append(out, -1)
		q = append(q, acRange{child, i, j, r.d + 1})
		i = j
	}
	return q, out
}

// setOuts sets a.out: for each node, the head and bit of the segment it
// reports (bit maps segment ids to their bits), or -1.
func (a *acm) setOuts(out []int32, bit []uint32) {
	a.out = make([]int64, len(out))
	for v, o := range out {
		a.out[v] = -1
		if o >= 0 {
			b := bit[o]
			a.out[v] = int64(a.head[b])<<32 | int64(b)
		}
	}
}

// isLeaf reports whether node x has no children; the root always has a
// row, so it is never a leaf.
func (a *acm) isLeaf(x uint32) bool {
	w := int(a.w)
	for k := 0; k < w; k++ {
		if a.bm[int(x)*w+k] != 0 {
			return false
		}
	}
	return x != 0
}

// nonLeaf returns x, or the nearest node on its failure chain that is not
// a leaf when x is one.
func (a *acm) nonLeaf(x uint32) uint32 {
	for a.isLeaf(x) {
		x = a.fail[x]
	}
	return x
}

// buildRows builds the rows of the scan (a.rowOf, a.dfa, a.so) over nc
// classes: for the nodes that are not leaves, the shallowest first, the
// step on each class in one cell (see acSlow): the row of the next state
// and the segment the step reports, so that a step is one load that depends
// on the previous step, and the reported segments are looked up beside that
// chain of loads. A step into a leaf goes to the nearest node on its
// failure chain that is not a leaf (the same transitions follow), and
// reports the leaf's out: leaves need no row.
func (a *acm) buildRows(nc int) {
	a.stride = uint32(nc + 1)
	st := int(a.stride)
	nn := len(a.fail)
	a.rowOf = make([]int32, nn)
	maxRows := max(1, min(acDFACells/st, acRowMax)) // the root has a row
	var rows []uint32                               // the node of each row
	for x := range nn {
		a.rowOf[x] = -1
		if !a.isLeaf(uint32(x)) && len(rows) < maxRows {
			a.rowOf[x] = int32(len(rows))
			rows = append(rows, uint32(x))
		}
	}
	// The target node of each step, for the rows in order: the failure
	// node of a node with a row, made not a leaf, is shallower and has a
	// row already.
	targ := make([]uint32, len(rows)*st)
	for r, x := range rows {
		for c := 1; c <= nc; c++ {
			if y, ok := a.child(x, uint16(c)); ok {
				targ[r*st+c] = y
			} else if x != 0 {
				targ[r*st+c] = targ[int(a.rowOf[a.nonLeaf(a.fail[x])])*st+c]
			}
		}
	}
	a.so = make([]int64, len(a.par)+1)
	a.so[0] = -1
	for b := range a.par {
		a.so[b+1] = a.up(int32(b))
	}
	a.dfa = make([]uint32, len(targ))
	for i, y := range targ {
		next := a.nonLeaf(y)
		o := a.out[y]
		sg := uint32(0)
		if o >= 0 {
			sg = uint32(o) + 1
		}
		if rw := a.rowOf[next]; rw >= 0 && sg <= uint32(min(acSegCap, acSegMax)) {
			a.dfa[i] = uint32(rw) | sg<<16
		} else {
			a.dfa[i] = acSlow | y
		}
	}
}

// child returns the child of node v for class c.
func (a *acm) child(v uint32, c uint16) (uint32, bool) {
	i := v*a.w + uint32(c>>6)
	x := a.bm[i]
	b := uint64(1) << (c & 63)
	if x&b == 0 {
		return 0, false
	}
	return a.base[i] + uint32(bits.OnesCount64(x&(b-1))), true
}

// layout decomposes the output tree into heavy paths, renumbers the
// segments by their bit (slen, par and head), and returns the bit of each
// former segment number. Segment numbers are in breadth-first order, so a
// parent's number is smaller than its children's.
func (a *acm) layout() []uint32 {
	n := len(a.par)
	size := make([]int32, n)
	heavy := make([]int32, n)
	for i := range heavy {
		heavy[i] = -1
	}
	// size[s] is final when s is reached: its children have larger numbers.
	for s := int32(n - 1); s >= 0; s-- {
		size[s]++
		if p := a.par[s]; p >= 0 {
			size[p] += size[s]
			if heavy[p] < 0 || size[s] > size[heavy[p]] {
				heavy[p] = s
			}
		}
	}
	size = nil
	bit := make([]uint32, n)
	head := make([]int32, n)
	pos := uint32(0)
	for s := int32(0); s < int32(n); s++ {
		// s heads a path when it is a root or a light child.
		if p := a.par[s]; p >= 0 && heavy[p] == s {
			continue
		}
		for u := s; u >= 0; u = heavy[u] {
			head[u] = s
			bit[u] = pos
			pos++
		}
	}
	par, slen := make([]int32, n), make([]uint32, n)
	a.head = make([]int32, n)
	for s := range n {
		b := bit[s]
		a.head[b] = int32(bit[head[s]])
		par[b] = -1
		if p := a.par[s]; p >= 0 {
			par[b] = int32(bit[p])
		}
		slen[b] = a.slen[s]
	}
	a.par, a.slen = par, slen
	a.upo = make([]int64, n)
	for b := range n {
		a.upo[b] = a.up(par[b])
	}
	return bit
}

// group builds the groups of the sets of m with at least acGroupMin rules.
func (a *acm) group(m *matcher) {
	a.sgroup = make([]uint32, len(m.sets))
	a.dom = make([]uint64, (len(m.wr)+63)/64)
	seen := map[string]uint32{}
	var kb []byte
	for si, s := range m.sets {
		if s.end-s.lin < 2 {
			continue
		}
		for i := s.lin; i < s.end; i++ {
			kb = append(kb[:0], byte(si), byte(si>>8), byte(si>>16), byte(si>>24))
			if m.wr[i].anchored {
				kb = append(kb, '$')
			}
			for _, sg := range m.rests[i] {
				kb = append(kb, '*')
				kb = append(kb, sg...) // normal forms hold no '*'
			}
			j, ok := seen[string(kb)]
			if ok && m.wr[j].rank > m.wr[i].rank {
				a.dom[i>>6] |= 1 << (i & 63)
				continue
			}
			if ok {
				a.dom[j>>6] |= 1 << (j & 63)
			}
			seen[string(kb)] = i
		}
	}
	for si, s := range m.sets {
		if s.end-s.lin < acGroupMin {
			continue
		}
		var g acGroups
		idx := make([]uint32, 0, s.end-s.lin)
		for i := s.lin; i < s.end; i++ {
			if a.dominated(i) {
				continue
			}
			if a.slots[a.rseg[i]] == 0 {
				g.solo = append(g.solo, i)
			} else {
				idx = append(idx, i)
			}
		}
		first := func(i uint32) int32 { return int32(a.slots[a.rseg[i]] >> 32) }
		slices.SortStableFunc(idx, func(x, y uint32) int { return int(first(x)) - int(first(y)) })
		g.recs = make([]acRec, len(idx))
		g.fin = make([]uint16, len(idx))
		for j, i := range idx {
			k := a.rseg[i] + 1
			g.recs[j] = acRec{rank: m.wr[i].rank, sl: a.slots[k], rule: i, k: k, suf: a.suf[i], fin: a.fin[i]}
			if f := a.fin[i]; a.slots[k] != 0 {
				g.fin[j] = f
				g.fins[f>>6&3] |= 1 << (f & 63)
				g.fins[f>>14] |= 1 << (f >> 8 & 63)
			}
		}
		for j := range idx {
			if j == 0 || first(idx[j]) != first(idx[j-1]) {
				g.seg = append(g.seg, first(idx[j]))
				g.start = append(g.start, uint32(j))
			}
		}
		g.start = append(g.start, uint32(len(idx)))
		if nb := (len(a.par) + 63) / 64; nb <= 4*len(g.seg) {
			g.bits = make([]uint64, nb)
			for _, b := range g.seg {
				g.bits[b>>6] |= 1 << (b & 63)
			}
			g.rank = make([]uint32, nb)
			n := uint32(0)
			for j, x := range g.bits {
				g.rank[j] = n
				n += uint32(bits.OnesCount64(x))
			}
		}
		a.groups = append(a.groups, g)
		a.sgroup[si] = uint32(len(a.groups))
	}
}

// dominated reports whether rule i of wr need not be tracked (see dom).
func (a *acm) dominated(i uint32) bool { return a.dom[i>>6]&(1<<(i&63)) != 0 }

// acGroupMin is the number of rules from which a set is grouped.
const acGroupMin = 8

// acDFACells bounds the transition rows of an automaton (4 octets each);
// acSegCap (at most acSegMax) bounds the segments fast cells report.
// Variables only so that tests can force the other steps.
var (
	acDFACells = 1 << 18
	acSegCap   = acSegMax
)

// A cell of dfa below acSlow is a fast step: the row of the next state in
// the low 16 bits (at most acRowMax), and 1 + the segment the step
// reports (0: none; at most acSegMax) above. From acSlow up, it is a step
// into node cell-acSlow, which has no row or whose segment does not fit:
// the scan then steps with bm and fail until it reaches a node with a row.
const (
	acSlow   = 1 << 31
	acRowMax = 0xFFFF
	acSegMax = 0x7FFF
)

// sufKey packs the last two octets of s (the last one in bits 8-15) with
// its length (from bit 16), to reject most '$' rules whose suffix the
// target does not end with without comparing strings.
func sufKey(s string) uint32 {
	return uint32(s[len(s)-1])<<8 | uint32(s[max(len(s)-2, 0)]) | uint32(min(len(s), 1<<15))<<16
}

// up returns segment s with the head of its heavy path as out does, or -1.
func (a *acm) up(s int32) int64 {
	if s < 0 {
		return -1
	}
	return int64(a.head[s])<<32 | int64(s)
}

// highestSet returns the highest set bit of bits in [lo, hi], or -1.
func highestSet(bs []uint64, lo, hi uint32) int {
	wi := hi >> 6
	x := bs[wi] & (2<<(hi&63) - 1)
	lw := lo >> 6
	for {
		if wi == lw {
			x &= ^uint64(0) << (lo & 63)
			if x == 0 {
				return -1
			}
			return int(wi)<<6 + 63 - bits.LeadingZeros64(x)
		}
		if x != 0 {
			return int(wi)<<6 + 63 - bits.LeadingZeros64(x)
		}
		wi--
		x = bs[wi]
	}
}

// acRun returns the better of best and the best rule of the wildcard sets
// in stk (entries pos<<32 | ws, as walk stores them) and of the sets the
// walk meets when resumed from node ni at offset pos (when ni is not 0)
// that matches the normalised target t.
//
// Every rule of those sets that could beat best is tracked, except in the
// grouped set (the one with the most rules, when it has groups): there,
// the rules whose first middle segment is the same wait together, and are
// tracked one by one only from the first occurrence of that segment on.
func (m *matcher) acRun(t string, best uint64, stk []uint64, ni uint32, pos int) uint64 {
	a := m.ac
	sc := getScratch()
	sets := append(sc.sets[:0], stk...)
	var more [stackSets]uint64
	for ni != 0 {
		var ns int
		best, ns, ni, pos = m.walk(t, false, &m.nodes[ni], ni, pos, &more, best, 0)
		sets = append(sets, more[:ns]...)
	}
	sc.sets = sets
	var gs *acGroups
	gk := -1
	for k, x := range sets {
		si := uint32(x)&wsIndex - 1
		if g := a.sgroup[si]; g != 0 && m.sets[si].max > best && (gs == nil || len(a.groups[g-1].recs) > len(gs.recs)) {
			gs, gk = &a.groups[g-1], k
		}
	}
	sc.prepare(len(t)+1, len(m.wr)+1, len(a.par))
	st := acState{m: m, a: a, t: t, ent: sc.ent, arm: sc.arm, ne: 1, best: best, best0: best, last: &sc.last}
	st.tsuf = sufKey(t) & 0xFFFF
	for c := range sc.last {
		sc.last[c] = -1
	}
	for i := range len(t) {
		sc.last[t[i]] = int32(i)
	}
	start, gp := len(t), len(t)
	for k, x := range sets {
		s := &m.sets[uint32(x)&wsIndex-1]
		p := int(x >> 32)
		if s.max <= st.best {
			continue
		}
		start = min(start, p)
		if k == gk {
			gp = p
			for _, i := range gs.solo {
				st.track(i, a.rseg[i], p)
			}
			continue
		}
		for i := s.lin; i < s.end; i++ {
			if !a.dominated(i) {
				st.track(i, a.rseg[i], p)
			}
		}
	}
	if st.live > 0 || gs != nil {
		st.scan(start, gs, gp, sc)
	}
	putScratch(sc)
	return st.best
}

// prepare sizes the scratch for a target of n-1 octets, ne-1 entries and
// nseg segments, and clears the arm lists and the marks.
func (sc *acScratch) prepare(n, ne, nseg int) {
	if cap(sc.arm) < n {
		sc.arm = make([]int32, n)
	} else {
		sc.arm = sc.arm[:n]
		clear(sc.arm)
	}
	if cap(sc.ent) < ne {
		sc.ent = make([]acEnt, ne)
	}
	sc.ent = sc.ent[:ne]
	nb := (nseg + 63) / 64
	if cap(sc.bits) < nb {
		sc.bits = make([]uint64, nb)
		sc.stat = make([]uint64, nb)
		sc.dyn = make([]uint64, nb)
	} else {
		sc.bits = sc.bits[:nb]
		clear(sc.bits)
		sc.dyn = sc.dyn[:nb]
		clear(sc.dyn)
		sc.stat = sc.stat[:nb]
		clear(sc.stat)
	}
	if cap(sc.wait) < nseg {
		sc.wait = make([]int32, nseg)
	}
	sc.wait = sc.wait[:nseg]
}

// acState is the state of one acRun.
type acState struct {
	m     *matcher
	a     *acm
	t     string
	ent   []acEnt
	arm   []int32
	ne    int32
	live  int
	best  uint64
	best0 uint64      // best when the first entry was made
	tsuf  uint32      // the last two octets of the target, as sufKey packs them
	last  *[256]int32 // the offset of the last occurrence of each octet in the target; -1: none
}

// track starts tracking rule i of wr, whose part before slot k ends at
// offset e of the target: it waits for the segment of slot k, or matches
// when there is none.
func (st *acState) track(i, k uint32, e int) {
	m := st.m
	w := &m.wr[i]
	if w.rank <= st.best {
		return
	}
	t := st.t
	lim := len(t)
	if f := st.a.fin[i]; f != 0 && (int(st.last[f&0xFF]) < e || int(st.last[f>>8]) < e) {
		return // the last middle segment cannot start at e or later
	}
	if w.anchored {
		if k := st.a.suf[i]; int(k>>16) > len(t)-e || k&0xFF00 != st.tsuf&0xFF00 || k>>16 > 1 && k&0xFF != st.tsuf&0xFF {
			return
		}
		o := int(w.off)
		l := int(load32(m.blob, o))
		lim -= l
		if lim < e || t[lim:] != m.blob[o+4:o+4+l] || !unitStart(t, lim) {
			return
		}
	}
	sl := st.a.slots[k]
	if sl == 0 {
		st.best = w.rank
		return
	}
	f := e + int(uint32(sl))
	if f > lim {
		return
	}
	st.ent[st.ne] = acEnt{k: k, next: st.arm[f], lim: int32(lim), rule: i, b: uint32(sl >> 32)}
	st.arm[f] = st.ne
	st.ne++
	st.live++
}

// expand tracks the rules of a group whose first middle segment ends at e.
func (st *acState) expand(recs []acRec, e int) {
	t, last := st.t, st.last
	for j := range recs {
		r := &recs[j]
		if r.rank <= st.best {
			continue
		}
		if f := r.fin; r.sl != 0 && (int(last[f&0xFF]) < e || int(last[f>>8]) < e) {
			continue // the last middle segment, still to come, cannot start at e or later
		}
		lim := len(t)
		if k := r.suf; k != 0 {
			if int(k>>16) > len(t)-e || k&0xFF00 != st.tsuf&0xFF00 || k>>16 > 1 && k&0xFF != st.tsuf&0xFF {
				continue
			}
			m := st.m
			o := int(m.wr[r.rule].off)
			l := int(load32(m.blob, o))
			lim -= l
			if lim < e || t[lim:] != m.blob[o+4:o+4+l] || !unitStart(t, lim) {
				continue
			}
		}
		if r.sl == 0 {
			st.best = r.rank
			continue
		}
		f := e + int(uint32(r.sl))
		if f > lim {
			continue
		}
		st.ent[st.ne] = acEnt{k: r.k, next: st.arm[f], lim: int32(lim), rule: r.rule, b: uint32(r.sl >> 32)}
		st.arm[f] = st.ne
		st.ne++
		st.live++
	}
}

// scan runs the automaton along the target from offset start, advancing
// the entries, until none is left. The groups of gs are marked when the
// scan reaches gp, the offset where the prefix of their set ends.
func (st *acState) scan(start int, gs *acGroups, gp int, sc *acScratch) {
	a, t := st.a, st.t
	ent, arm, wait, dyn, bs, stat := st.ent, st.arm, sc.wait, sc.dyn, sc.bits, sc.stat
	slen, out, upo := a.slen, a.out, a.upo
	cls := &a.cls
	dfa, stride, so := a.dfa, a.stride, a.so
	r := uint32(0) // the row of the state, when slow is false
	slow := false
	v := uint32(0)
	pending := 0 // groups not yet expanded
	if gs == nil {
		gp = -1
	}
	done := start // the arm lists of offsets up to done are processed
	for i := start; i < len(t); {
		if i == gp {
			pending = st.markGroups(gs, gp, sc)
		}
		if st.live == 0 && pending == 0 && i >= gp {
			break
		}
		var sym int
		sym, i = nextUnit(t, i)
		// Arm the entries whose first acceptable end is at or before i.
		for ; done < i; done++ {
			for x := arm[done+1]; x != 0; {
				en := &ent[x]
				nx := en.next
				b := en.b
				if dyn[b>>6]&(1<<(b&63)) == 0 {
					dyn[b>>6] |= 1 << (b & 63)
					bs[b>>6] |= 1 << (b & 63)
					en.next = 0
				} else {
					en.next = wait[b]
				}
				wait[b] = x
				x = nx
			}
		}
		// Step.
		c := uint32(cls[sym])
		var o int64
		if !slow {
			x := dfa[r*stride+c]
			if x < acSlow {
				r = x & acRowMax
				o = so[x>>16]
			} else {
				v, slow = x-acSlow, true
				o = out[v]
			}
		} else {
			r, v, slow, o = a.slowStep(v, c)
		}
		// The marked segments that end here, deepest first.
		for o >= 0 {
			lo, hi := uint32(o>>32), uint32(o)
			var b uint32
			if x := bs[hi>>6] & (2<<(hi&63) - 1) &^ (1<<(lo&63) - 1); lo>>6 == hi>>6 {
				if x == 0 {
					o = upo[lo]
					continue
				}
				b = hi&^63 + 63 - uint32(bits.LeadingZeros64(x))
			} else if h := highestSet(bs, lo, hi); h >= 0 {
				b = uint32(h)
			} else {
				o = upo[lo]
				continue
			}
			if dyn[b>>6]&(1<<(b&63)) != 0 {
				dyn[b>>6] &^= 1 << (b & 63)
				st.advance(wait[b], i)
			}
			keep := false
			if stat[b>>6]&(1<<(b&63)) != 0 {
				if i-int(slen[b]) >= gp {
					st.expandGroup(gs, b, i, sc)
					pending--
				} else {
					keep = true // an occurrence that starts before the prefix ends
				}
			}
			if !keep {
				bs[b>>6] &^= 1 << (b & 63)
			}
			o = upo[b]
		}
	}
}

// markGroups marks the first segments of the grouped set gs when the scan
// reaches gp, the offset where the prefix of their set ends: those of the
// groups with a rule whose last middle segment can still occur, when some
// cannot. It returns the number of groups marked.
func (st *acState) markGroups(gs *acGroups, gp int, sc *acScratch) int {
	last, bs, stat := st.last, sc.bits, sc.stat
	var occ [4]uint64 // the octets of t[gp:]
	for c, l := range last {
		if int(l) >= gp {
			occ[c>>6] |= 1 << (c & 63)
		}
	}
	if gs.fins[0]&^occ[0]|gs.fins[1]&^occ[1]|gs.fins[2]&^occ[2]|gs.fins[3]&^occ[3] != 0 {
		pending := 0
		for g, b := range gs.seg {
			for _, f := range gs.fin[gs.start[g]:gs.start[g+1]] {
				if f == 0 || int(last[f&0xFF]) >= gp && int(last[f>>8]) >= gp {
					bs[b>>6] |= 1 << (b & 63)
					stat[b>>6] |= 1 << (b & 63)
					pending++
					break
				}
			}
		}
		return pending
	}
	if gs.bits != nil {
		for j, x := range gs.bits {
			bs[j] |= x
			stat[j] = x
		}
		return len(gs.seg)
	}
	for _, b := range gs.seg {
		bs[b>>6] |= 1 << (b & 63)
		stat[b>>6] |= 1 << (b & 63)
	}
	return len(gs.seg)
}

// slowStep is the step on class c from node v, which the rows may not
// cover: along the failure links to a node with a row or with a child on c.
// It returns the new state (row r when slow is false, else node next) and
// the segments the step reports.
func (a *acm) slowStep(v, c uint32) (r, next uint32, slow bool, o int64) {
	for {
		if rw := a.rowOf[v]; rw >= 0 {
			x := a.dfa[uint32(rw)*a.stride+c]
			if x < acSlow {
				return x & acRowMax, v, false, a.so[x>>16]
			}
			return 0, x - acSlow, true, a.out[x-acSlow]
		}
		if k, ok := a.child(v, uint16(c)); ok {
			return 0, k, true, a.out[k]
		}
		v = a.fail[v] // not the root, which has a row
	}
}

// advance moves on the entries of the wait list x, whose segment ends at
// i: an entry in time either completes its rule or is armed for its next
// segment, if that can still occur.
func (st *acState) advance(x int32, i int) {
	ent, arm, wr := st.ent, st.arm, st.m.wr
	slots, fin, last := st.a.slots, st.a.fin, st.last
	for x != 0 {
		en := &ent[x]
		nx := en.next
		st.live--
		if st.best == st.best0 || wr[en.rule].rank > st.best {
			if i > int(en.lim) {
				// too late
			} else if sl := slots[en.k+1]; sl == 0 {
				st.best = max(st.best, wr[en.rule].rank)
			} else if f := i + int(uint32(sl)); f <= int(en.lim) && int(last[fin[en.rule]&0xFF]) >= i && int(last[fin[en.rule]>>8]) >= i {
				en.k++
				en.b = uint32(sl >> 32)
				en.next = arm[f]
				arm[f] = x
				st.live++
			}
		}
		x = nx
	}
}

// expandGroup expands the group of gs whose first segment b occurs at i,
// after the prefix of its set.
func (st *acState) expandGroup(gs *acGroups, b uint32, i int, sc *acScratch) {
	sc.stat[b>>6] &^= 1 << (b & 63)
	var g int
	if gs.bits != nil {
		g = int(gs.rank[b>>6]) + bits.OnesCount64(gs.bits[b>>6]&(1<<(b&63)-1))
	} else {
		g, _ = slices.BinarySearch(gs.seg, int32(b))
	}
	st.expand(gs.recs[gs.start[g]:gs.start[g+1]], i)
}
