package enforce

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentDecisions decides the same targets from several goroutines
// at once and compares each answer with the one decided alone. The engine's
// only shared mutable state is scratch memory: the one-pass matcher's pool
// (acScratchPool), the pooled buffers and the lazily built readings. make test
// runs this test under the race detector; the rest of the package (single
// goroutine matcher checks, ~6x slower under it) runs without.
func TestConcurrentDecisions(t *testing.T) {
	type job struct {
		g       *Group
		r       *Robots
		target  string
		want    Decision
		reading Readings
	}
	var jobs []job
	// Hostile shapes large enough to take the one-pass matcher with the
	// default budget, plus ordinary files.
	for _, sh := range worstShapes(3000, 4000, 7) {
		r := Parse([]byte(sh.file))
		g := r.Select(nil, true)
		for _, tg := range sh.targets[:min(2, len(sh.targets))] {
			jobs = append(jobs, job{g: g, r: r, target: tg})
		}
	}
	plain := Parse([]byte("User-agent: *\nDisallow: /private/\nAllow: /private/ok*.html$\nDisallow: /*.pdf$\n"))
	for _, tg := range []string{"/", "/private/x", "/private/ok1.html", "/a/b.pdf", "/a/b.pdf?x"} {
		jobs = append(jobs, job{g: plain.Select(nil, true), r: plain, target: tg})
	}
	// Empty the pool, then count the scratch buffers it makes: a count of
	// zero means no decision took the one-pass matcher.
	newScratch := acScratchPool.New
	acScratchPool.New = nil
	for acScratchPool.Get() != nil {
	}
	var made atomic.Int32
	acScratchPool.New = func() any { made.Add(1); return newScratch() }
	defer func() { acScratchPool.New = newScratch }()
	for i := range jobs {
		jobs[i].want = jobs[i].g.Decide(jobs[i].target)
		jobs[i].reading = jobs[i].r.Readings(nil, true, jobs[i].target)
	}
	if made.Load() == 0 {
		t.Fatal("no decision took the one-pass matcher: the test no longer reaches its shared scratch")
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for k := 0; k < 3; k++ {
				for i := range jobs {
					j := jobs[(i+w)%len(jobs)]
					if got := j.g.Decide(j.target); got != j.want {
						errs <- "decision differs under concurrency for " + j.target[:min(40, len(j.target))]
						return
					}
					if got := j.r.Readings(nil, true, j.target); got != j.reading {
						errs <- "readings differ under concurrency for " + j.target[:min(40, len(j.target))]
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
