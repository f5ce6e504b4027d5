// Command testreport reads the `go test -json` events that gotestsum saved
// (gotestsum --jsonfile) and adds what gotestsum does not do, for
// scripts/unit.sh:
//
//   - it prints the tests' "[report]" lines: a figure a test logs with
//     t.Logf("[report] ...") (the differential test's count of
//     disagreements, for one) is shown whether the test passed or not;
//   - under CI=true it fails when a test was skipped: in CI an integration
//     test that skips (no redis-server, no Chromium, -short) would hide a
//     missing install step.
//
// Usage: testreport FILE.json. It exits 1 when the rule above fails the
// run, 2 when the file cannot be read.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// reportTag marks a test's log line that the report prints.
const reportTag = "[report] "

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: testreport FILE.json")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	defer f.Close()
	os.Exit(report(f, os.Stdout, os.Getenv("CI") == "true"))
}

// event is the part of a test2json event the report reads.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// report prints the [report] lines of the events read from in and, when
// ci, the skipped tests; it returns the exit code.
func report(in io.Reader, out io.Writer, ci bool) int {
	var reports, skipped []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20) // a test may print long lines
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // not an event: a build error's text
		}
		switch {
		case e.Action == "output" && strings.Contains(e.Output, reportTag):
			_, r, _ := strings.Cut(e.Output, reportTag)
			reports = append(reports, strings.TrimSpace(r))
		case e.Action == "skip" && e.Test != "":
			skipped = append(skipped, e.Package+" "+e.Test)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "testreport:", err)
		return 2
	}
	if len(reports) > 0 {
		fmt.Fprintln(out, "\nReported by the tests:")
		for _, r := range reports {
			fmt.Fprintln(out, "  "+r)
		}
	}
	if ci && len(skipped) > 0 {
		fmt.Fprintln(out, "\nFAIL: tests were skipped under CI=true; every test must run in CI:")
		for _, s := range skipped {
			fmt.Fprintln(out, "  "+s)
		}
		return 1
	}
	return 0
}
