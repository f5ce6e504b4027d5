// Command testsum reads `go test -json` output on stdin, prints the output of
// failed tests and the packages that did not build, lists skipped tests and
// the slowest tests, and ends with a closing line "N passed, N failed, N
// skipped". It exits 1 when anything failed, and also when a test was
// skipped while CI=true: in CI an integration test that skips (no
// redis-server, no Chromium, -short) would hide a missing install step.
//
// A test's log line tagged "[report]" (t.Logf("[report] ...")) is a figure
// the run should show whether the test passes or fails: the differential
// test's count, for one. Those lines are printed with the summary.
//
// It prints a line per package when the package finishes and, while a
// package runs for long (the integration tests run for minutes), a progress
// line for it at most every 25 seconds: how many of its tests are done,
// which are running and for how long. When it has printed nothing for 25
// seconds otherwise (go test is compiling the next test binaries, which
// takes minutes under -race with a cold cache), it says so, naming the
// packages given as arguments that have not started yet: no stretch of a
// run is silent for more than 30 seconds.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// progressEvery is how long a package runs before its first progress line,
// and the least time between two of its progress lines.
const progressEvery = 25 * time.Second

// slowest is how many of the slowest tests the summary lists.
const slowest = 10

// reportTag marks a test's log line that the summary prints.
const reportTag = "[report] "

// Usage: go test -json ... | testsum [package...]; the packages are those
// the input is expected to cover, for the lines while they compile.
func main() {
	os.Exit(run(os.Stdin, os.Stdout, os.Getenv("CI") == "true", progressEvery, os.Args[1:]))
}

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

type key struct{ pkg, test string }

// pkgRun is what the progress lines know of a package that is running.
type pkgRun struct {
	start    time.Time            // its first event
	noted    time.Time            // its last progress line, or start
	done     int                  // top-level tests finished
	running  map[string]time.Time // tests (any level) running, by name, with their start
	finished bool
}

// timing is the time one top-level test took.
type timing struct {
	key
	elapsed time.Duration
}

// summary collects the events of a `go test -json` run and writes what
// testsum prints to out.
type summary struct {
	out        io.Writer
	every      time.Duration
	output     map[key]*strings.Builder
	passed     []key
	failed     []key
	skipped    []key
	failedPkgs []string
	pkgs       map[string]*pkgRun
	order      []string // packages in the order they started
	timings    []timing
	reports    []string // the tests' [report] lines, in order
	expect     []string // packages the input should cover (testsum's arguments)
	begin      time.Time
	lastOut    time.Time // when testsum last printed a line
}

func newSummary(out io.Writer, every time.Duration) *summary {
	return &summary{out: out, every: every, output: map[key]*strings.Builder{}, pkgs: map[string]*pkgRun{}}
}

// run reads `go test -json` lines from in until it ends, printing to out,
// with a progress line at most every every (see the package comment);
// expect lists the packages the input should cover. It returns the exit
// code.
func run(in io.Reader, out io.Writer, ci bool, every time.Duration, expect []string) int {
	// The ticker only looks; s.progress decides whether a line is due.
	tick := time.NewTicker(min(every, time.Second))
	defer tick.Stop()
	s := newSummary(out, every)
	s.expect = expect
	return s.loop(in, ci, tick.C, time.Now)
}

// loop is run on a given ticker and clock, which the tests control.
func (s *summary) loop(in io.Reader, ci bool, tick <-chan time.Time, now func() time.Time) int {
	s.begin = now()
	s.lastOut = s.begin
	lines := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		errc <- sc.Err()
		close(lines)
	}()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				if err := <-errc; err != nil {
					fmt.Fprintln(os.Stderr, "testsum: reading input:", err)
					return 1
				}
				return s.finish(ci)
			}
			s.line(line, now())
		case t := <-tick:
			s.progress(t)
		}
	}
}

// line takes one line of input, received at now.
func (s *summary) line(line []byte, now time.Time) {
	var e event
	if err := json.Unmarshal(line, &e); err != nil {
		// build errors and other plain lines
		s.lastOut = now
		fmt.Fprintln(s.out, string(line))
		return
	}
	s.event(e, now)
}

// event takes one test event, received at now.
func (s *summary) event(e event, now time.Time) {
	k := key{e.Package, e.Test}
	if e.Package == "" {
		// Events of the build (Go 1.24+) name no package.
		if e.Action == "build-output" {
			s.lastOut = now
			fmt.Fprint(s.out, e.Output)
		}
		return
	}
	p := s.pkg(e.Package, now)
	switch e.Action {
	case "output":
		if i := strings.Index(e.Output, reportTag); i >= 0 {
			s.reports = append(s.reports, strings.TrimSpace(e.Output[i+len(reportTag):]))
		}
		b := s.output[k]
		if b == nil {
			b = &strings.Builder{}
			s.output[k] = b
		}
		if b.Len() < 256<<10 {
			b.WriteString(e.Output)
		}
	case "build-output":
		s.lastOut = now
		fmt.Fprint(s.out, e.Output)
	case "run", "cont":
		if e.Test != "" {
			if _, ok := p.running[e.Test]; !ok || e.Action == "run" {
				p.running[e.Test] = now
			}
		}
	case "pause":
		// A parallel test waits for the sequential ones: not running.
		delete(p.running, e.Test)
	case "pass":
		if e.Test != "" {
			s.passed = append(s.passed, k)
		}
	case "fail":
		if e.Test != "" {
			s.failed = append(s.failed, k)
		} else {
			s.failedPkgs = append(s.failedPkgs, e.Package)
		}
	case "skip":
		if e.Test != "" {
			s.skipped = append(s.skipped, k)
		}
	}
	if e.Action == "pass" || e.Action == "fail" || e.Action == "skip" {
		if e.Test == "" {
			p.finished = true
			s.lastOut = now
			fmt.Fprintf(s.out, "%-4s %s %.1fs\n", strings.ToUpper(e.Action), e.Package, e.Elapsed)
			return
		}
		delete(p.running, e.Test)
		if !strings.Contains(e.Test, "/") {
			p.done++
			s.timings = append(s.timings, timing{k, time.Duration(e.Elapsed * float64(time.Second))})
		}
	}
}

// pkg returns the state of package name, which has an event at now.
func (s *summary) pkg(name string, now time.Time) *pkgRun {
	p := s.pkgs[name]
	if p == nil {
		p = &pkgRun{start: now, noted: now, running: map[string]time.Time{}}
		s.pkgs[name] = p
		s.order = append(s.order, name)
	}
	return p
}

// progress prints, at now, a line for each package that is still running
// and has had no line (nor started) for s.every; then, if testsum has
// printed nothing for s.every, a line saying what the run waits for.
func (s *summary) progress(now time.Time) {
	for _, name := range s.order {
		p := s.pkgs[name]
		if p.finished || now.Sub(p.noted) < s.every {
			continue
		}
		p.noted = now
		s.lastOut = now
		fmt.Fprintf(s.out, "...  %s %s: %d tests done%s\n", name, round(now.Sub(p.start)), p.done, p.describeRunning(now))
	}
	if now.Sub(s.lastOut) < s.every {
		return
	}
	s.lastOut = now
	var waiting []string
	for _, name := range s.expect {
		if s.pkgs[name] == nil {
			waiting = append(waiting, name)
		}
	}
	if len(waiting) == 0 {
		fmt.Fprintf(s.out, "...  %s: waiting for the tests' output\n", round(now.Sub(s.begin)))
		return
	}
	more := ""
	if len(waiting) > 3 {
		more = fmt.Sprintf(" and %d more", len(waiting)-3)
		waiting = waiting[:3]
	}
	fmt.Fprintf(s.out, "...  %s: compiling the tests; not started yet: %s%s\n", round(now.Sub(s.begin)), strings.Join(waiting, ", "), more)
}

// describeRunning names the innermost running tests, longest running
// first, at most two of them.
func (p *pkgRun) describeRunning(now time.Time) string {
	var leaves []string
	for name := range p.running {
		inner := false
		for other := range p.running {
			if strings.HasPrefix(other, name+"/") {
				inner = true
				break
			}
		}
		if !inner {
			leaves = append(leaves, name)
		}
	}
	if len(leaves) == 0 {
		return ""
	}
	sort.Slice(leaves, func(i, j int) bool {
		a, b := p.running[leaves[i]], p.running[leaves[j]]
		if !a.Equal(b) {
			return a.Before(b)
		}
		return leaves[i] < leaves[j]
	})
	var parts []string
	for _, name := range leaves[:min(2, len(leaves))] {
		parts = append(parts, fmt.Sprintf("%s (%s)", name, round(now.Sub(p.running[name]))))
	}
	more := ""
	if len(leaves) > 2 {
		more = fmt.Sprintf(" and %d more", len(leaves)-2)
	}
	return ", running " + strings.Join(parts, ", ") + more
}

// round rounds d to whole seconds for a progress line.
func round(d time.Duration) time.Duration { return d.Round(time.Second) }

// finish prints the failures, the skipped tests, the slowest tests and the
// closing line, and returns the exit code.
func (s *summary) finish(ci bool) int {
	for _, k := range s.failed {
		fmt.Fprintf(s.out, "\n--- FAIL: %s %s\n%s", k.pkg, k.test, s.output[k])
	}
	for _, p := range s.failedPkgs {
		if b := s.output[key{p, ""}]; b != nil && strings.Contains(b.String(), "FAIL") {
			fmt.Fprintf(s.out, "\n--- package %s:\n%s", p, b.String())
		}
	}
	sort.Slice(s.skipped, func(i, j int) bool {
		return s.skipped[i].pkg+s.skipped[i].test < s.skipped[j].pkg+s.skipped[j].test
	})
	for _, k := range s.skipped {
		msg := strings.TrimSpace(lastLines(s.output[k], 3))
		fmt.Fprintf(s.out, "SKIP %s %s: %s\n", k.pkg, k.test, msg)
	}
	s.printSlowest()
	if len(s.reports) > 0 {
		fmt.Fprintln(s.out, "\nReported by the tests:")
		for _, r := range s.reports {
			fmt.Fprintln(s.out, "  "+r)
		}
	}
	fmt.Fprintf(s.out, "\n%d passed, %d failed, %d skipped\n", len(s.passed), len(s.failed), len(s.skipped))
	if len(s.failed) > 0 || len(s.failedPkgs) > 0 {
		return 1
	}
	if ci && len(s.skipped) > 0 {
		fmt.Fprintln(s.out, "FAIL: tests were skipped under CI=true; every test must run in CI")
		return 1
	}
	return 0
}

// printSlowest lists the slowest top-level tests with their times.
func (s *summary) printSlowest() {
	if len(s.timings) == 0 {
		return
	}
	t := append([]timing(nil), s.timings...)
	sort.SliceStable(t, func(i, j int) bool { return t[i].elapsed > t[j].elapsed })
	t = t[:min(slowest, len(t))]
	fmt.Fprintf(s.out, "\nThe %d slowest tests:\n", len(t))
	for _, x := range t {
		fmt.Fprintf(s.out, "%8.1fs  %s %s\n", x.elapsed.Seconds(), x.pkg, x.test)
	}
}

func lastLines(b *strings.Builder, n int) string {
	if b == nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
