// Command testsum reads `go test -json` output on stdin, prints the output of
// failed tests and the packages that did not build, lists skipped tests, and
// ends with a closing line "N passed, N failed, N skipped". It exits 1 when
// anything failed, and also when a test was skipped while CI=true: in CI an
// integration test that skips (no redis-server, no shared data, -short)
// would hide a missing install step.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	type key struct{ pkg, test string }
	output := map[key]*strings.Builder{}
	var passed, failed, skipped []key
	var failedPkgs []string
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			// build errors and other plain lines
			fmt.Println(string(line))
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output":
			b := output[k]
			if b == nil {
				b = &strings.Builder{}
				output[k] = b
			}
			if b.Len() < 256<<10 {
				b.WriteString(e.Output)
			}
		case "build-output":
			fmt.Print(e.Output)
		case "pass":
			if e.Test != "" {
				passed = append(passed, k)
			}
		case "fail":
			if e.Test != "" {
				failed = append(failed, k)
			} else {
				failedPkgs = append(failedPkgs, e.Package)
			}
		case "skip":
			if e.Test != "" {
				skipped = append(skipped, k)
			}
		}
		if e.Action == "pass" || e.Action == "fail" || e.Action == "skip" {
			if e.Test == "" {
				fmt.Printf("%-4s %s %.1fs\n", strings.ToUpper(e.Action), e.Package, e.Elapsed)
			}
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testsum: reading input:", err)
		os.Exit(1)
	}
	for _, k := range failed {
		fmt.Printf("\n--- FAIL: %s %s\n%s", k.pkg, k.test, output[k])
	}
	for _, p := range failedPkgs {
		if b := output[key{p, ""}]; b != nil && strings.Contains(b.String(), "FAIL") {
			fmt.Printf("\n--- package %s:\n%s", p, b.String())
		}
	}
	sort.Slice(skipped, func(i, j int) bool { return skipped[i].pkg+skipped[i].test < skipped[j].pkg+skipped[j].test })
	for _, k := range skipped {
		msg := strings.TrimSpace(lastLines(output[k], 3))
		fmt.Printf("SKIP %s %s: %s\n", k.pkg, k.test, msg)
	}
	ci := os.Getenv("CI") == "true"
	fmt.Printf("\n%d passed, %d failed, %d skipped\n", len(passed), len(failed), len(skipped))
	if len(failed) > 0 || len(failedPkgs) > 0 {
		os.Exit(1)
	}
	if ci && len(skipped) > 0 {
		fmt.Println("FAIL: tests were skipped under CI=true; every test must run in CI")
		os.Exit(1)
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
