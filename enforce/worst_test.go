package enforce

import (
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// This file holds the worst-case benchmarks: groups of 10,000 wildcard
// rules and targets of MaxTargetLength octets built against the n-gram
// index and the one-by-one verification (see ac.go), and the tests that
// check the same shapes, at full and at reduced size, against the
// reference of fuzz_test.go.

// worstShape is a group of wildcard rules and targets built against it.
type worstShape struct {
	name    string
	file    string
	targets []string
}

// randSeg returns a random string of n octets from alphabet.
func randSeg(rng *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.Intn(len(alphabet))]
	}
	return string(b)
}

// fill returns "/" followed by blocks from gen until the target is tlen
// octets long (cut there, then with end appended).
func fillTarget(tlen int, end string, gen func() string) string {
	var sb strings.Builder
	sb.WriteString("/")
	for sb.Len() < tlen-len(end) {
		sb.WriteString(gen())
	}
	s := sb.String()[:tlen-len(end)] + end
	return s
}

// worstShapes builds the adversarial groups with nrules wildcard rules
// each and targets of tlen octets. Every file stays under MaxSize. The
// shapes draw from one random source in this order.
func worstShapes(nrules, tlen int, seed int64) []worstShape {
	rng := rand.New(rand.NewSource(seed))
	return []worstShape{
		worstNgramOrder(rng, nrules, tlen),
		worstMissingLast(rng, nrules, tlen),
		worstRun(rng, nrules, tlen),
		worstEscapes(rng, nrules, tlen),
		worstNested(rng, nrules, tlen),
		worstAnchored(rng, nrules, tlen),
	}
}

// worstVerb is the verb of rule i of a shape: one rule in five is an Allow.
func worstVerb(i int) string {
	if i%5 == 0 {
		return "Allow"
	}
	return "Disallow"
}

// worstNgramOrder builds shape 1: the attack report: "/*abc*def*ghi" with
// random segments; the target holds the segments of many rules in reverse
// order, so every n-gram the index asks for is there and verification
// fails.
func worstNgramOrder(rng *rand.Rand, nrules, tlen int) worstShape {
	const abc = "abcdefghijklmnopqrstuvwxyz"
	var sb strings.Builder
	sb.WriteString("User-agent: *\n")
	segs := make([][]string, nrules)
	for i := range segs {
		n := 2 + rng.Intn(3)
		for j := 0; j < n; j++ {
			segs[i] = append(segs[i], randSeg(rng, abc, 2+rng.Intn(3)))
		}
		fmt.Fprintf(&sb, "%s: /*%s\n", worstVerb(i), strings.Join(segs[i], "*"))
	}
	rev := func() string {
		s := segs[rng.Intn(len(segs))]
		var b strings.Builder
		for j := len(s) - 1; j >= 0; j-- {
			b.WriteString(s[j])
		}
		return b.String()
	}
	var targets []string
	for k := 0; k < 4; k++ {
		targets = append(targets, fillTarget(tlen, "", rev))
	}
	// One where a rule matches, placed at the end.
	s := segs[rng.Intn(len(segs))]
	targets = append(targets, fillTarget(tlen, strings.Join(s, "-"), rev))
	return worstShape{"NgramOrder", sb.String(), targets}
}

// worstMissingLast builds shape 2: the same with a last segment that never
// occurs ("/*abc*def*q"): every rule but the last segment is found, many
// times over.
func worstMissingLast(rng *rand.Rand, nrules, tlen int) worstShape {
	const abc = "abcdefgh"
	var sb strings.Builder
	sb.WriteString("User-agent: *\n")
	for i := 0; i < nrules; i++ {
		n := 2 + rng.Intn(3)
		var s []string
		for j := 0; j < n; j++ {
			s = append(s, randSeg(rng, abc, 1+rng.Intn(3)))
		}
		fmt.Fprintf(&sb, "%s: /*%s*%s\n", worstVerb(i), strings.Join(s, "*"), randSeg(rng, "qrstuvwxyz", 1+rng.Intn(2)))
	}
	var targets []string
	for k := 0; k < 4; k++ {
		targets = append(targets, fillTarget(tlen, "", func() string { return randSeg(rng, abc, 16) }))
	}
	targets = append(targets, fillTarget(tlen, "q", func() string { return randSeg(rng, abc, 16) }))
	return worstShape{"MissingLast", sb.String(), targets}
}

// worstRun builds shape 3: long runs of one octet against runs of it in the
// rules.
func worstRun(rng *rand.Rand, nrules, tlen int) worstShape {
	var sb strings.Builder
	sb.WriteString("User-agent: *\n")
	for i := 0; i < nrules; i++ {
		var p string
		switch i % 4 {
		case 0:
			p = "/*" + strings.Repeat("a", 1+rng.Intn(12)) + "*" + strings.Repeat("a", 1+rng.Intn(12)) + "b"
		case 1:
			p = "/*" + strings.Repeat("a", 1+rng.Intn(30)) + "*b" + strings.Repeat("a", rng.Intn(4))
		case 2:
			p = "/*" + strings.Repeat("a", 1+rng.Intn(8)) + "*" + strings.Repeat("a", 1+rng.Intn(8)) + "*" + randSeg(rng, "abc", 1+rng.Intn(3)) + "b"
		default:
			p = "/*" + strings.Repeat("a", 1+rng.Intn(20)) + "b*a$"
		}
		fmt.Fprintf(&sb, "%s: %s\n", worstVerb(i), p)
	}
	run := func() string { return "aaaaaaaaaaaaaaaa" }
	targets := []string{
		fillTarget(tlen, "", run),
		fillTarget(tlen, "c", run),
		fillTarget(tlen, "ba", run),
	}
	return worstShape{"Run", sb.String(), targets}
}

// worstEscapes builds shape 4: many escapes: segments that occur inside
// escapes but never on a unit, and escapes the rules do ask for.
func worstEscapes(rng *rand.Rand, nrules, tlen int) worstShape {
	units := []string{"%2F", "F", "2F", "%3A", "3A", "A", "%2F%2F", "F%2F", "2F%3A", "%3A%2F"}
	var sb strings.Builder
	sb.WriteString("User-agent: *\n")
	for i := 0; i < nrules; i++ {
		n := 2 + rng.Intn(3)
		var s []string
		for j := 0; j < n; j++ {
			s = append(s, units[rng.Intn(len(units))]+units[rng.Intn(len(units))])
		}
		fmt.Fprintf(&sb, "%s: /*%s*%s\n", worstVerb(i), strings.Join(s, "*"), randSeg(rng, "xyz", 1+rng.Intn(2)))
	}
	esc := func() string { return []string{"%2F", "%3A", "%2F%3A", "%2F%2F%2F"}[rng.Intn(4)] }
	targets := []string{
		fillTarget(tlen, "", func() string { return "%2F" }),
		fillTarget(tlen, "", esc),
		fillTarget(tlen, "x", esc),
		// Not in normal form: Decide normalises it first.
		fillTarget(tlen, "", func() string { return "%2f%3a" }),
	}
	for i, t := range targets {
		for len(t) > tlen || t[len(t)-1] == '%' || t[len(t)-2] == '%' {
			t = t[:len(t)-1]
		}
		targets[i] = t
	}
	return worstShape{"Escapes", sb.String(), targets}
}

// worstNested builds shape 5: nested runs "/*a*aa*aaa*...", each rule
// ending with a tag that does not occur, plus a few long chains.
func worstNested(rng *rand.Rand, nrules, tlen int) worstShape {
	var sb strings.Builder
	sb.WriteString("User-agent: *\n")
	for i := 0; i < nrules; i++ {
		k := 2 + rng.Intn(6)
		if i%(nrules/8+1) == 0 {
			k = 24 + rng.Intn(8)
		}
		var s []string
		c := string("ab"[i%2])
		for j := 1; j <= k; j++ {
			s = append(s, strings.Repeat(c, j))
		}
		fmt.Fprintf(&sb, "%s: /*%s*%s\n", worstVerb(i), strings.Join(s, "*"), randSeg(rng, "xyz", 2))
	}
	targets := []string{
		fillTarget(tlen, "", func() string { return "a" }),
		fillTarget(tlen, "", func() string { return "ab" }),
		fillTarget(tlen, "xy", func() string { return "aaaaaaab" }),
	}
	return worstShape{"Nested", sb.String(), targets}
}

// worstAnchored builds shape 6: '$'-anchored rules that all end with the
// target's last octets, so the index of '$' rules selects them all.
func worstAnchored(rng *rand.Rand, nrules, tlen int) worstShape {
	const abc = "abcdefghij"
	var sb strings.Builder
	sb.WriteString("User-agent: *\n")
	var segs [][]string
	for i := 0; i < nrules; i++ {
		n := 1 + rng.Intn(3)
		var s []string
		for j := 0; j < n; j++ {
			s = append(s, randSeg(rng, abc, 2+rng.Intn(2)))
		}
		segs = append(segs, s)
		fmt.Fprintf(&sb, "%s: /*%s*%s.php$\n", worstVerb(i), strings.Join(s, "*"), randSeg(rng, "xyz", 1))
	}
	rev := func() string {
		s := segs[rng.Intn(len(segs))]
		var b strings.Builder
		for j := len(s) - 1; j >= 0; j-- {
			b.WriteString(s[j])
		}
		return b.String()
	}
	targets := []string{
		fillTarget(tlen, "x.php", rev),
		fillTarget(tlen, "x.php?", rev),
		fillTarget(tlen, strings.Join(segs[0], "")+"z.php", rev),
	}
	return worstShape{"Anchored", sb.String(), targets}
}

// withBudget runs f with the one-by-one verification budget set to b.
func withBudget(b int, f func()) {
	old := acBudget
	acBudget = b
	defer func() { acBudget = old }()
	f()
}

// TestWorstCaseShapesReference checks the engine against the reference on
// the adversarial shapes at a size the reference can afford, with the
// usual budget, with the one-pass matcher forced from the start, and with
// one-by-one verification only.
func TestWorstCaseShapesReference(t *testing.T) {
	nrules, tlen := 300, 1500
	if testing.Short() {
		nrules, tlen = 100, 600
	}
	for _, seed := range []int64{1, 2} {
		for _, sh := range worstShapes(nrules, tlen, seed) {
			r := Parse([]byte(sh.file))
			rules, found := refSelect(sh.file, "x")
			for _, target := range sh.targets {
				// Also a few shorter cuts of each target.
				for _, tg := range []string{target, target[:len(target)/2], target[:len(target)/7]} {
					for _, b := range []int{acBudget, 0, 1 << 40} {
						withBudget(b, func() {
							if diff := vsReference(r, "x", rules, found, tg); diff != "" {
								t.Fatalf("%s seed %d budget %d: %s", sh.name, seed, b, diff)
							}
						})
					}
				}
			}
		}
	}
}

// TestWorstCaseShapesFull checks, at full size (10,000 rules, targets of
// MaxTargetLength), that the one-pass matcher and one-by-one verification
// give the same decisions, and that the shapes are what the benchmarks
// claim: 10,000 wildcard rules in a file under MaxSize.
func TestWorstCaseShapesFull(t *testing.T) {
	if testing.Short() {
		t.Skip("full-size shapes in -short mode")
	}
	matched := 0
	for _, sh := range worstShapes(10000, MaxTargetLength, 1) {
		if len(sh.file) > MaxSize {
			t.Fatalf("%s: file of %d octets", sh.name, len(sh.file))
		}
		r := Parse([]byte(sh.file))
		g := r.Select(nil, true)
		if n := len(g.m.wr); n < 10000-10 {
			t.Fatalf("%s: %d wildcard rules", sh.name, n)
		}
		// Beyond MaxTargetLength the answer must be exact too.
		long := sh.targets[0] + sh.targets[len(sh.targets)-1][1:] + sh.targets[0][1:]
		for _, target := range append(sh.targets, long) {
			if len(target) > MaxTargetLength && target != long {
				t.Fatalf("%s: target of %d octets", sh.name, len(target))
			}
			var fast, slow Decision
			withBudget(0, func() { fast = g.Decide(target) })
			withBudget(1<<40, func() { slow = g.Decide(target) })
			if fast != slow {
				t.Fatalf("%s target %.40q...: one pass %v, one by one %v", sh.name, target, fast, slow)
			}
			if fast.Rule != nil {
				matched++
			}
		}
	}
	if matched < 4 {
		t.Fatalf("only %d targets match a rule: the shapes test too little", matched)
	}
}

// TestOnePassDifferential compares the one-pass matcher, forced for every
// decision, with the reference on random structured files.
func TestOnePassDifferential(t *testing.T) {
	rng := rand.New(rand.NewSource(1401))
	prefixes := []string{"", "/", "/a", "/ab", "/a/", "/b", "/ab/c", "/%2F", "/a%2f", "/aaaa", "/a%2Fb"}
	atoms := []string{"a", "b", "ab", "ba", "aa", "aab", "?", "=", "%61", "%2F", "%2f", "%2A", "%24", "/", "F", "2F", "%", "é", "c", "*", "**"}
	tatoms := []string{"a", "b", "ab", "aa", "aaaa", "%2F", "%2f", "F", "2F", "2", "%", "*", "$", "?", "/", "é", "c", "#"}
	gen := func(parts []string, n int) string {
		var sb strings.Builder
		for i := 0; i < n; i++ {
			sb.WriteString(parts[rng.Intn(len(parts))])
		}
		return sb.String()
	}
	n := 1500
	if testing.Short() {
		n = 200
	}
	for iter := 0; iter < n; iter++ {
		var sb strings.Builder
		sb.WriteString("User-agent: *\n")
		nrules := 1 + rng.Intn(12)
		if iter%4 == 0 {
			nrules = 20 + rng.Intn(100)
		}
		for i := 0; i < nrules; i++ {
			verb := "Disallow"
			if rng.Intn(3) == 0 {
				verb = "Allow"
			}
			p := prefixes[rng.Intn(len(prefixes))]
			switch rng.Intn(4) {
			case 0:
				p += gen(atoms, rng.Intn(4))
			case 1:
				p += "*" + gen(atoms, 1+rng.Intn(4)) + "$"
			default:
				for k := 1 + rng.Intn(4); k > 0; k-- {
					p += "*" + gen(atoms, 1+rng.Intn(3))
				}
				if rng.Intn(4) == 0 {
					p += "$"
				}
			}
			sb.WriteString(verb + ": " + p + "\n")
		}
		file := sb.String()
		r := Parse([]byte(file))
		rules, found := refSelect(file, "x")
		for k := 0; k < 25; k++ {
			target := "/" + gen(tatoms, rng.Intn(16))
			if k%8 == 0 {
				target = "/" + strings.Repeat(gen(tatoms, 1+rng.Intn(2)), 10+rng.Intn(60)) + gen(tatoms, rng.Intn(3))
			}
			withBudget(0, func() {
				if diff := vsReference(r, "x", rules, found, target); diff != "" {
					t.Fatalf("file:\n%s\n%s", file, diff)
				}
			})
		}
	}
}

// FuzzOnePass is FuzzMatch with the one-pass matcher forced for every
// decision that reaches wildcard rules.
func FuzzOnePass(f *testing.F) {
	f.Add("User-agent: *\nDisallow: /*a*aa*aaa*b\nAllow: /*a*a$\n", "/aaaaaaaaaab")
	f.Add("User-agent: *\nDisallow: /*F%2F*2F\nDisallow: /*%2F*x$\n", "/%2F%2f%2Fx")
	f.Add("User-agent: *\nDisallow: /a*b*c\nAllow: /ab*c\nDisallow: /*$*%24\n", "/abbc$x$")
	f.Fuzz(func(t *testing.T, file, target string) {
		if !utf8.ValidString(file) {
			return
		}
		r := Parse([]byte(file))
		rules, found := refSelect(file, "x")
		withBudget(0, func() {
			if diff := vsReference(r, "x", rules, found, target); diff != "" {
				t.Fatal(diff)
			}
		})
	})
}

// fullShape returns the shape called name at full size: 10,000 rules and
// targets of MaxTargetLength octets.
func fullShape(b *testing.B, name string) worstShape {
	for _, s := range worstShapes(10000, MaxTargetLength, 1) {
		if s.name == name {
			return s
		}
	}
	b.Fatalf("no worst-case shape %q", name)
	return worstShape{}
}

// benchWorst benchmarks the decisions of one shape, target after target.
func benchWorst(b *testing.B, name string) {
	sh := fullShape(b, name)
	r := Parse([]byte(sh.file))
	tokens := []string{"FooBot"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i = wrap(i+1, len(sh.targets)) {
		r.Decide(tokens, sh.targets[i])
	}
}

func BenchmarkWorstCaseNgramOrder(b *testing.B)  { benchWorst(b, "NgramOrder") }
func BenchmarkWorstCaseMissingLast(b *testing.B) { benchWorst(b, "MissingLast") }
func BenchmarkWorstCaseRun(b *testing.B)         { benchWorst(b, "Run") }
func BenchmarkWorstCaseEscapes(b *testing.B)     { benchWorst(b, "Escapes") }
func BenchmarkWorstCaseNested(b *testing.B)      { benchWorst(b, "Nested") }
func BenchmarkWorstCaseAnchored(b *testing.B)    { benchWorst(b, "Anchored") }

// ngramOrder returns the NgramOrder shape at full size, its group's
// matcher, and each target's winning rank.
func ngramOrder(b *testing.B) (worstShape, *matcher, []uint64) {
	sh := fullShape(b, "NgramOrder")
	g := Parse([]byte(sh.file)).Select([]string{"FooBot"}, true)
	m := &g.m
	if m.ac == nil || len(m.sets) != 1 {
		b.Fatalf("the shape compiled to %d wildcard sets, want 1 with an automaton", len(m.sets))
	}
	wins := make([]uint64, len(sh.targets))
	for i, t := range sh.targets {
		wins[i] = m.acRun(t, 0, []uint64{1<<32 | 1}, 0, 1)
		if got, _ := m.match(t, false); got != wins[i] || got == 0 {
			b.Fatalf("target %d: the scan from the set gives rank %x, a whole decision %x", i, wins[i], got)
		}
	}
	return sh, m, wins
}

// BenchmarkWorstCaseNgramOrderSteps is a floor under NgramOrder: the
// automaton's steps alone along each target (one dependent load per
// unit), without reporting a segment or tracking a rule. Its 18,245
// segments take a transition table of about 880 KiB, close to a core's
// L2 cache, so each step waits on that cache. The figure bounds what any
// rework of the reporting and tracking can save; the table-B metric is
// the table's size.
func BenchmarkWorstCaseNgramOrderSteps(b *testing.B) {
	sh, m, _ := ngramOrder(b)
	a := m.ac
	var sink uint32
	for i := 0; b.Loop(); i = wrap(i+1, len(sh.targets)) {
		t := sh.targets[i]
		r := uint32(0)
		for j := 1; j < len(t); {
			var sym int
			sym, j = nextUnit(t, j)
			x := a.dfa[r*a.stride+uint32(a.cls[sym])]
			if x >= acSlow {
				b.Fatal("a step left the table: the floor would not be the fast path")
			}
			r = x & acRowMax
			sink += x >> 16
		}
	}
	_ = sink
	b.ReportMetric(float64(len(a.dfa)*4), "table-B")
}

// BenchmarkWorstCaseNgramOrderKnownWinner is NgramOrder's one-pass scan
// started with each target's winner already known, so that only the rules
// that could beat it are tracked: what the best possible "early winner"
// would leave of the scan's cost.
func BenchmarkWorstCaseNgramOrderKnownWinner(b *testing.B) {
	sh, m, wins := ngramOrder(b)
	for i := 0; b.Loop(); i = wrap(i+1, len(sh.targets)) {
		if got := m.acRun(sh.targets[i], wins[i]-1, []uint64{1<<32 | 1}, 0, 1); got != wins[i] {
			b.Fatalf("target %d: rank %x, want %x", i, got, wins[i])
		}
	}
}

// wild500k returns MaxSize octets of wildcard rules of the shapes above
// (random segments, runs, escapes, nested runs, '$' rules), in one group.
func wild500k() []byte {
	var sb strings.Builder
	sb.WriteString("User-agent: *\n")
	for seed := int64(1); sb.Len() < MaxSize; seed++ {
		for _, sh := range worstShapes(2000, 64, seed) {
			sb.WriteString(strings.TrimPrefix(sh.file, "User-agent: *\n"))
		}
	}
	return []byte(sb.String()[:MaxSize])
}

// BenchmarkWorstCaseCompile500KiB parses and compiles MaxSize octets of
// wildcard rules; heap-B is the memory the result keeps.
func BenchmarkWorstCaseCompile500KiB(b *testing.B) {
	body := wild500k()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var r *Robots
	for b.Loop() {
		r = Parse(body)
	}
	b.StopTimer()
	nw := len(r.Select(nil, true).m.wr)
	keepRobots, r = r, nil
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	keepRobots = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(before.HeapAlloc-after.HeapAlloc), "heap-B")
	b.ReportMetric(float64(nw), "wildcard-rules")
}

var keepRobots *Robots

// TestOnePassNestedSets checks the one-pass matcher on walks that meet more
// wildcard sets than the walk's stack holds, and whose largest set (the
// grouped one) starts deeper than others, so that its segments occur both
// before and after its prefix ends.
func TestOnePassNestedSets(t *testing.T) {
	rng := rand.New(rand.NewSource(77))
	atoms := []string{"a", "b", "ab", "ba", "aa", "%2F", "F", "c"}
	gen := func(n int) string {
		var sb strings.Builder
		for i := 0; i < n; i++ {
			sb.WriteString(atoms[rng.Intn(len(atoms))])
		}
		return sb.String()
	}
	n := 150
	if testing.Short() {
		n = 30
	}
	for iter := 0; iter < n; iter++ {
		var sb strings.Builder
		sb.WriteString("User-agent: *\n")
		big := rng.Intn(14)
		for k := 0; k < 14; k++ {
			prefix := "/" + strings.Repeat("a", k)
			nr := 1 + rng.Intn(3)
			if k == big {
				nr = acGroupMin + rng.Intn(40)
			}
			for i := 0; i < nr; i++ {
				verb := "Disallow"
				if rng.Intn(3) == 0 {
					verb = "Allow"
				}
				p := prefix
				for j := 1 + rng.Intn(3); j > 0; j-- {
					p += "*" + gen(1+rng.Intn(2))
				}
				if rng.Intn(5) == 0 {
					p += "$"
				}
				sb.WriteString(verb + ": " + p + "\n")
			}
		}
		file := sb.String()
		r := Parse([]byte(file))
		rules, found := refSelect(file, "x")
		for k := 0; k < 20; k++ {
			target := "/" + strings.Repeat("a", rng.Intn(20)) + gen(rng.Intn(30))
			for _, b := range []int{0, 200} {
				withBudget(b, func() {
					if diff := vsReference(r, "x", rules, found, target); diff != "" {
						t.Fatalf("budget %d, file:\n%s\n%s", b, file, diff)
					}
				})
			}
		}
	}
}

// TestOnePassSlowSteps runs the one-pass tests with automata whose rows
// hold only a few states and whose cells report only the first segments,
// so that most steps take the slow way (bm and fail).
func TestOnePassSlowSteps(t *testing.T) {
	for _, lim := range [][2]int{{64, 3}, {1, 0}} {
		oldC, oldS := acDFACells, acSegCap
		acDFACells, acSegCap = lim[0], lim[1]
		t.Run(fmt.Sprintf("cells%d-segs%d", lim[0], lim[1]), func(t *testing.T) {
			t.Run("Reference", TestWorstCaseShapesReference)
			t.Run("Differential", TestOnePassDifferential)
			t.Run("NestedSets", TestOnePassNestedSets)
		})
		acDFACells, acSegCap = oldC, oldS
	}
}
