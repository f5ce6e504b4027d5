package audit

import (
	"io"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce"
)

const benchRobots = `User-agent: *
Disallow: /private/
Allow: /private/public/
Disallow: /*?q=
Crawl-delay: 2

User-agent: GPTBot
User-agent: ClaudeBot
User-agent: CCBot
Disallow: /

User-agent: Googlebot
Disallow: /search
`

// cycleReader serves the lines of a pool, in order and again, until n
// lines were served: a log of any length from a pool that fits in memory.
type cycleReader struct {
	pool [][]byte
	n, i int
	cur  []byte
}

func (c *cycleReader) Read(p []byte) (int, error) {
	w := 0
	for w < len(p) {
		if len(c.cur) == 0 {
			if c.i == c.n {
				break
			}
			c.cur = c.pool[c.i%len(c.pool)]
			c.i++
		}
		k := copy(p[w:], c.cur)
		c.cur = c.cur[k:]
		w += k
	}
	if w == 0 {
		return 0, io.EOF
	}
	return w, nil
}

// BenchmarkAudit streams a generated log of 2,000,000 lines (60% browsers
// from testdata/browsers.txt, 40% crawlers, some spoofed) through an
// Auditor with a --robots-new preview, on one goroutine, and reports lines/s.
func BenchmarkAudit(b *testing.B) { benchAudit(b, benchRobots) }

// BenchmarkAuditPreferences is BenchmarkAudit with AI usage preferences in
// the robots.txt: the search crawlers (Googlebot, bingbot) and the AI
// crawler claims judged by "*" (spoofed GPTBot and ClaudeBot) pay a
// preference lookup on allowed paths.
func BenchmarkAuditPreferences(b *testing.B) {
	benchAudit(b, "Content-Signal: ai-input=no\n"+benchRobots+"Content-Usage: /blog/ search=n\n\nUser-agent: *\nContent-Usage: train-ai=n\n")
}

func benchAudit(b *testing.B, robotsTxt string) {
	g := newGenerator(b, 42)
	pool := make([][]byte, 100000)
	for i := range pool {
		pool[i] = append(g.line(i), '\n')
	}
	const lines = 2000000
	robots := enforce.Parse([]byte(robotsTxt))
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		a, err := New(Config{Robots: robots, RobotsNew: robots})
		if err != nil {
			b.Fatal(err)
		}
		if err := a.Feed("bench", &cycleReader{pool: pool, n: lines}, nil); err != nil {
			b.Fatal(err)
		}
		if r := a.Report(); r.Lines != lines {
			b.Fatalf("read %d lines, want %d", r.Lines, lines)
		}
	}
	b.ReportMetric(float64(lines*b.N)/time.Since(start).Seconds(), "lines/s")
}
