package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// feed gives s the event at t0+at.
func feed(t *testing.T, s *summary, t0 time.Time, at time.Duration, e event) {
	t.Helper()
	line, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	s.line(line, t0.Add(at))
}

const itPkg = "example.com/m/integration"

// TestProgress: a package running past the interval gets a progress line,
// then at most one per interval, naming the tests done and the innermost
// test running; a finished package gets none (once all are, the run says
// it waits); a paused parallel test is not running.
func TestProgress(t *testing.T) {
	var out strings.Builder
	s := newSummary(&out, 25*time.Second)
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	s.begin, s.lastOut = t0, t0
	sec := time.Second
	feed(t, s, t0, 0, event{Action: "start", Package: itPkg})
	feed(t, s, t0, 0, event{Action: "start", Package: "example.com/m/quick"})
	feed(t, s, t0, 1*sec, event{Action: "run", Package: "example.com/m/quick", Test: "TestQuick"})
	feed(t, s, t0, 2*sec, event{Action: "pass", Package: "example.com/m/quick", Test: "TestQuick", Elapsed: 1})
	feed(t, s, t0, 2*sec, event{Action: "pass", Package: "example.com/m/quick", Elapsed: 2})
	for i := range 3 {
		name := fmt.Sprintf("TestDone%d", i)
		feed(t, s, t0, time.Duration(i)*sec, event{Action: "run", Package: itPkg, Test: name})
		feed(t, s, t0, time.Duration(i+1)*sec, event{Action: "pass", Package: itPkg, Test: name, Elapsed: 1})
	}
	feed(t, s, t0, 3*sec, event{Action: "run", Package: itPkg, Test: "TestParallel"})
	feed(t, s, t0, 3*sec, event{Action: "pause", Package: itPkg, Test: "TestParallel"})
	feed(t, s, t0, 4*sec, event{Action: "run", Package: itPkg, Test: "TestCrawl"})
	feed(t, s, t0, 10*sec, event{Action: "run", Package: itPkg, Test: "TestCrawl/wget2"})

	s.progress(t0.Add(20 * sec)) // too early
	if out.Len() != len("PASS example.com/m/quick 2.0s\n") {
		t.Fatalf("progress before the interval:\n%s", out.String())
	}
	s.progress(t0.Add(25 * sec))
	want := "...  example.com/m/integration 25s: 3 tests done, running TestCrawl/wget2 (15s)\n"
	if !strings.HasSuffix(out.String(), want) {
		t.Fatalf("first progress line: got\n%s\nwant it to end with\n%s", out.String(), want)
	}
	n := out.Len()
	s.progress(t0.Add(40 * sec)) // within the interval of the last line
	if out.Len() != n {
		t.Fatalf("a second line within the interval:\n%s", out.String()[n:])
	}
	s.progress(t0.Add(50 * sec))
	want = "...  example.com/m/integration 50s: 3 tests done, running TestCrawl/wget2 (40s)\n"
	if got := out.String()[n:]; got != want {
		t.Fatalf("second progress line: %q, want %q", got, want)
	}
	feed(t, s, t0, 60*sec, event{Action: "pass", Package: itPkg, Test: "TestCrawl/wget2", Elapsed: 50})
	feed(t, s, t0, 60*sec, event{Action: "pass", Package: itPkg, Test: "TestCrawl", Elapsed: 56})
	feed(t, s, t0, 61*sec, event{Action: "cont", Package: itPkg, Test: "TestParallel"})
	n = out.Len()
	s.progress(t0.Add(80 * sec))
	want = "...  example.com/m/integration 1m20s: 4 tests done, running TestParallel (19s)\n"
	if got := out.String()[n:]; got != want {
		t.Fatalf("third progress line: %q, want %q", got, want)
	}
	feed(t, s, t0, 90*sec, event{Action: "pass", Package: itPkg, Test: "TestParallel", Elapsed: 29})
	feed(t, s, t0, 90*sec, event{Action: "pass", Package: itPkg, Elapsed: 90})
	n = out.Len()
	s.progress(t0.Add(200 * sec))
	if got, want := out.String()[n:], "...  3m20s: waiting for the tests' output\n"; got != want {
		t.Fatalf("after every package finished: %q, want %q (and no line for a finished package)", got, want)
	}
}

// TestFinish: the slowest top-level tests are listed, slowest first, at
// most ten; subtests are not; failures' output is printed; the closing
// line counts every test; the exit code is 1 for a failure.
func TestFinish(t *testing.T) {
	var out strings.Builder
	s := newSummary(&out, time.Minute)
	t0 := time.Now()
	for i := range 12 {
		name := fmt.Sprintf("TestT%02d", i)
		feed(t, s, t0, 0, event{Action: "run", Package: itPkg, Test: name})
		feed(t, s, t0, 0, event{Action: "pass", Package: itPkg, Test: name, Elapsed: float64(i)})
	}
	feed(t, s, t0, 0, event{Action: "run", Package: itPkg, Test: "TestBig"})
	feed(t, s, t0, 0, event{Action: "run", Package: itPkg, Test: "TestBig/sub"})
	feed(t, s, t0, 0, event{Action: "output", Package: itPkg, Test: "TestBig/sub", Output: "    big_test.go:9: it broke\n"})
	feed(t, s, t0, 0, event{Action: "fail", Package: itPkg, Test: "TestBig/sub", Elapsed: 99})
	feed(t, s, t0, 0, event{Action: "fail", Package: itPkg, Test: "TestBig", Elapsed: 100})
	feed(t, s, t0, 0, event{Action: "fail", Package: itPkg, Elapsed: 101})
	if code := s.finish(false); code != 1 {
		t.Errorf("exit code %d with a failure, want 1", code)
	}
	got := out.String()
	for _, want := range []string{
		"FAIL example.com/m/integration 101.0s\n",
		"--- FAIL: example.com/m/integration TestBig/sub\n    big_test.go:9: it broke\n",
		"\nThe 10 slowest tests:\n   100.0s  example.com/m/integration TestBig\n    11.0s  example.com/m/integration TestT11\n",
		"     3.0s  example.com/m/integration TestT03\n\n12 passed, 2 failed, 0 skipped\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestT02\n") || strings.Contains(got, "s  example.com/m/integration TestBig/sub") {
		t.Errorf("more than ten, or a subtest, among the slowest:\n%s", got)
	}
}

// TestSkipsUnderCI: skipped tests are listed with their reason; under
// CI=true a skip fails the run, elsewhere it does not.
func TestSkipsUnderCI(t *testing.T) {
	for _, ci := range []bool{false, true} {
		var out strings.Builder
		s := newSummary(&out, time.Minute)
		t0 := time.Now()
		feed(t, s, t0, 0, event{Action: "run", Package: itPkg, Test: "TestRedis"})
		feed(t, s, t0, 0, event{Action: "output", Package: itPkg, Test: "TestRedis", Output: "    redis_test.go:45: redis-server not found\n"})
		feed(t, s, t0, 0, event{Action: "skip", Package: itPkg, Test: "TestRedis"})
		feed(t, s, t0, 0, event{Action: "pass", Package: itPkg, Elapsed: 1})
		code := s.finish(ci)
		if want := map[bool]int{false: 0, true: 1}[ci]; code != want {
			t.Errorf("CI=%v: exit code %d, want %d", ci, code, want)
		}
		if !strings.Contains(out.String(), "SKIP example.com/m/integration TestRedis: redis_test.go:45: redis-server not found\n") ||
			!strings.Contains(out.String(), "0 passed, 0 failed, 1 skipped\n") {
			t.Errorf("CI=%v: output:\n%s", ci, out.String())
		}
		if ci != strings.Contains(out.String(), "FAIL: tests were skipped under CI=true") {
			t.Errorf("CI=%v: output:\n%s", ci, out.String())
		}
	}
}

// TestRun: run reads the whole input, passes plain lines through and
// returns the exit code.
func TestRun(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.5}
# p
./x.go:1:1: a build error
{"Action":"pass","Package":"p","Elapsed":0.6}
`
	var out strings.Builder
	if code := run(strings.NewReader(in), &out, true, time.Minute, nil); code != 0 {
		t.Errorf("exit code %d, want 0:\n%s", code, out.String())
	}
	for _, want := range []string{"./x.go:1:1: a build error\n", "PASS p 0.6s\n", "     0.5s  p TestA\n", "1 passed, 0 failed, 0 skipped\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestReportLines: a test's [report] lines are printed with the summary,
// passing or not.
func TestReportLines(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestD"}`,
		`{"Action":"output","Package":"p","Test":"TestD","Output":"    d_test.go:9: [report] differential: 2150 requests; 0 disagreements\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestD","Elapsed":1}`,
		`{"Action":"pass","Package":"p","Elapsed":1}`,
	}, "\n")
	var out bytes.Buffer
	if code := run(strings.NewReader(in), &out, false, time.Hour, nil); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "Reported by the tests:\n  differential: 2150 requests; 0 disagreements\n") {
		t.Errorf("no report line:\n%s", out.String())
	}
}

// TestSilentCompile: while go test compiles and nothing arrives, testsum
// says so at least every interval, naming the expected packages that have
// not started; once they all have, it still says what it waits for. The
// input stays silent for 100 virtual seconds, then 60 more after a quick
// package; the ticker and the clock are the test's.
func TestSilentCompile(t *testing.T) {
	in, feedIn := io.Pipe()
	var out syncBuilder
	s := newSummary(&out, 25*time.Second)
	s.expect = []string{"example.com/m/quick", itPkg, "example.com/m/a", "example.com/m/b", "example.com/m/c"}
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var now atomic.Int64 // virtual seconds since t0
	clock := func() time.Time { return t0.Add(time.Duration(now.Load()) * time.Second) }
	tick := make(chan time.Time)
	code := make(chan int, 1)
	go func() { code <- s.loop(in, false, tick, clock) }()
	tick <- clock() // the loop has started, at 0
	// advance sends a tick every virtual second up to sec; an unbuffered
	// tick is taken only once the one before it was handled, so a last one
	// at the same time (which prints nothing more) ends the handling of sec.
	advance := func(sec int64) {
		for now.Load() < sec {
			now.Add(1)
			tick <- clock()
		}
		tick <- clock()
	}
	advance(24)
	if got := out.String(); got != "" {
		t.Fatalf("a line within the interval: %q", got)
	}
	advance(100)
	want := "...  25s: compiling the tests; not started yet: example.com/m/quick, example.com/m/integration, example.com/m/a and 2 more\n" +
		"...  50s: compiling the tests; not started yet: example.com/m/quick, example.com/m/integration, example.com/m/a and 2 more\n" +
		"...  1m15s: compiling the tests; not started yet: example.com/m/quick, example.com/m/integration, example.com/m/a and 2 more\n" +
		"...  1m40s: compiling the tests; not started yet: example.com/m/quick, example.com/m/integration, example.com/m/a and 2 more\n"
	if got := out.String(); got != want {
		t.Fatalf("silent compile: got\n%s\nwant\n%s", got, want)
	}
	// sendAndWait sends lines, the last of which prints wait, and waits
	// until it is printed: the loop has taken them all.
	sendAndWait := func(wait string, lines ...string) {
		t.Helper()
		for _, l := range lines {
			if _, err := io.WriteString(feedIn, l+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), wait); {
			if time.Now().After(deadline) {
				t.Fatalf("%q never printed:\n%s", wait, out.String())
			}
			time.Sleep(time.Millisecond)
		}
	}
	// A package runs: its own lines keep the run from being silent.
	sendAndWait("SKIP example.com/m/c",
		`{"Action":"start","Package":"example.com/m/integration"}`,
		`{"Action":"run","Package":"example.com/m/integration","Test":"TestLong"}`,
		`{"Action":"start","Package":"example.com/m/quick"}`,
		`{"Action":"pass","Package":"example.com/m/quick","Elapsed":0.1}`,
		`{"Action":"skip","Package":"example.com/m/a"}`,
		`{"Action":"skip","Package":"example.com/m/b"}`,
		`{"Action":"skip","Package":"example.com/m/c"}`)
	n := len(out.String())
	advance(160)
	want = "...  example.com/m/integration 25s: 0 tests done, running TestLong (25s)\n" +
		"...  example.com/m/integration 50s: 0 tests done, running TestLong (50s)\n"
	if got := out.String()[n:]; got != want {
		t.Fatalf("while a package runs: got\n%s\nwant\n%s", got, want)
	}
	// Every package is done, and still no event (the engine's tests run
	// apart and come last): testsum says it waits.
	sendAndWait("PASS example.com/m/integration",
		`{"Action":"pass","Package":"example.com/m/integration","Test":"TestLong","Elapsed":60}`,
		`{"Action":"pass","Package":"example.com/m/integration","Elapsed":60}`)
	n = len(out.String())
	advance(220)
	want = "...  3m5s: waiting for the tests' output\n...  3m30s: waiting for the tests' output\n"
	if got := out.String()[n:]; got != want {
		t.Fatalf("after every package: got\n%s\nwant\n%s", got, want)
	}
	feedIn.Close()
	if c := <-code; c != 0 {
		t.Fatalf("exit code %d", c)
	}
}

// syncBuilder is a strings.Builder safe for the test and the loop.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuilder) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuilder) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
