// Package bench compares the enforce engine with github.com/temoto/robotstxt
// on the real robots.txt corpus, decision by decision. It is a separate
// module so that the plugin's go.mod does not depend on temoto.
//
//	cd bench && go test -run '^$' -bench . -benchmem -count 3
//
// Both engines answer the same questions in the same order: "enforce" and
// "temoto" select the group for the agent and decide the target on every
// call (Robots.Decide, RobotsData.TestAgent); "enforce-group" and
// "temoto-group" select the group once beforehand (Robots.Select,
// RobotsData.FindGroup) and time only the decision.
package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/temoto/robotstxt"
)

type fileCases struct {
	name    string
	ours    *enforce.Robots
	temoto  *robotstxt.RobotsData // nil when temoto rejects the file
	targets []string
}

type decision struct {
	ours   *enforce.Robots
	temoto *robotstxt.RobotsData
	agent  string
	tokens []string
	target string
}

// targets derives deterministic, realistic targets from a file's own rule
// paths plus a few generic ones (the same recipe as the enforce benchmarks).
func targets(body []byte) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, g := range []string{"/", "/index.html", "/about/", "/search?q=robots+txt", "/images/logo.png", "/wp-admin/admin-ajax.php", "/news/2019/07/some-article-title.html?utm_source=x"} {
		add(g)
	}
	n := 0
	for _, ln := range strings.Split(strings.ReplaceAll(string(body), "\r", "\n"), "\n") {
		k := strings.IndexByte(ln, ':')
		if k < 0 {
			continue
		}
		key := strings.ToLower(strings.TrimSpace(ln[:k]))
		if key != "disallow" && key != "allow" {
			continue
		}
		v := strings.TrimSpace(ln[k+1:])
		if i := strings.IndexByte(v, '#'); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		if v == "" || v[0] != '/' {
			continue
		}
		v = strings.TrimSuffix(v, "$")
		v = strings.ReplaceAll(v, "*", "abc")
		if n%3 == 0 {
			add(v)
		} else {
			add(v + "page-" + fmt.Sprint(n) + ".html")
		}
		n++
		if n >= 12 {
			break
		}
	}
	return out
}

func load(tb testing.TB) (files []fileCases, rejected int) {
	dir := filepath.Join("..", "..", "shared", "data", "robots-corpus")
	names, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	if len(names) == 0 {
		tb.Skipf("corpus missing at %s", dir)
	}
	sort.Strings(names)
	bodies := make([][]byte, len(names))
	for i, n := range names {
		body, err := os.ReadFile(n)
		if err != nil {
			tb.Fatal(err)
		}
		bodies[i] = body
		files = append(files, fileCases{name: filepath.Base(n), targets: targets(body)})
	}
	// Each engine parses all the files in a row, so that its parsed data
	// is laid out in memory as in a server that uses only that engine,
	// rather than interleaved with the other's.
	for i := range files {
		files[i].ours = enforce.Parse(bodies[i])
	}
	for i := range files {
		if t, err := robotstxt.FromBytes(bodies[i]); err == nil {
			files[i].temoto = t
		} else {
			rejected++
		}
	}
	return files, rejected
}

// decisions lists the (file, agent, target) triples of the files temoto
// accepts, so both engines answer exactly the same questions.
func decisions(files []fileCases) []decision {
	agents := []string{"Googlebot", "bingbot", "SomeNewBot"}
	// One token chain per crawler, shared by its decisions, as a server
	// keeps one per identified crawler (temoto's side shares the agent
	// string likewise).
	chains := make([][]string, len(agents))
	for i, a := range agents {
		chains[i] = []string{a}
	}
	var out []decision
	for _, f := range files {
		if f.temoto == nil {
			continue
		}
		for i, t := range f.targets {
			a := i % len(agents)
			out = append(out, decision{f.ours, f.temoto, agents[a], chains[a], t})
		}
	}
	return out
}

// next returns the index after i in ds, wrapping around.
func next(i int, ds []decision) int {
	if i++; i == len(ds) {
		return 0
	}
	return i
}

func BenchmarkCorpus(b *testing.B) {
	files, rejected := load(b)
	ds := decisions(files)
	b.Logf("%d files, %d rejected by temoto (skipped for both), %d decisions", len(files), rejected, len(ds))
	// The loops step through ds with a wrapping index rather than i%len(ds):
	// a division per decision would add some 10ns to both sides.
	//
	// What a server does per request, on both sides: the file is parsed
	// once; each request is one agent lookup plus one target decision.
	b.Run("enforce", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i = next(i, ds) {
			d := &ds[i]
			d.ours.Decide(d.tokens, d.target)
		}
	})
	// The same with the group selected once per decision beforehand, the
	// counterpart of temoto-group below.
	b.Run("enforce-group", func(b *testing.B) {
		groups := make([]*enforce.Group, len(ds))
		for i, d := range ds {
			groups[i] = d.ours.Select(d.tokens, true)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i = next(i, ds) {
			groups[i].Decide(ds[i].target)
		}
	})
	b.Run("temoto", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i = next(i, ds) {
			d := &ds[i]
			d.temoto.TestAgent(d.target, d.agent)
		}
	})
	// temoto's documented fast path: look the group up once, then test.
	b.Run("temoto-group", func(b *testing.B) {
		groups := make([]*robotstxt.Group, len(ds))
		for i, d := range ds {
			groups[i] = d.temoto.FindGroup(d.agent)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i = next(i, ds) {
			groups[i].Test(ds[i].target)
		}
	})
}

// TestAgreement reports how often the two engines disagree (they differ by
// design: prefix agent matching, first-rule ties, no percent-encoding
// normalisation in temoto). It only logs.
func TestAgreement(t *testing.T) {
	files, rejected := load(t)
	ds := decisions(files)
	differ := 0
	for _, d := range ds {
		if d.ours.Decide(d.tokens, d.target).Allowed != d.temoto.TestAgent(d.target, d.agent) {
			differ++
		}
	}
	t.Logf("%d files, temoto rejected %d; %d decisions, %d differ", len(files), rejected, len(ds), differ)
}
