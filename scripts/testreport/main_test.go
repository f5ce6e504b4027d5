package main

import (
	"strings"
	"testing"
)

// TestSkipsUnderCI: under CI=true a skipped test fails the run and is
// named; elsewhere it does not fail. A package without tests is not a
// skipped test.
func TestSkipsUnderCI(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"example.com/m/integration","Test":"TestRedis"}`,
		`{"Action":"output","Package":"example.com/m/integration","Test":"TestRedis","Output":"    redis_test.go:45: redis-server not found\n"}`,
		`{"Action":"skip","Package":"example.com/m/integration","Test":"TestRedis","Elapsed":0}`,
		`{"Action":"skip","Package":"example.com/m/notests","Elapsed":0}`,
		`{"Action":"pass","Package":"example.com/m/integration","Elapsed":1}`,
	}, "\n")
	for _, ci := range []bool{false, true} {
		var out strings.Builder
		code := report(strings.NewReader(in), &out, ci)
		if want := map[bool]int{false: 0, true: 1}[ci]; code != want {
			t.Errorf("CI=%v: exit code %d, want %d\n%s", ci, code, want, out.String())
		}
		if ci != strings.Contains(out.String(), "FAIL: tests were skipped under CI=true") ||
			ci != strings.Contains(out.String(), "  example.com/m/integration TestRedis\n") {
			t.Errorf("CI=%v: output:\n%s", ci, out.String())
		}
		if strings.Contains(out.String(), "notests") {
			t.Errorf("CI=%v: a package without tests listed as skipped:\n%s", ci, out.String())
		}
	}
}

// TestReportLines: a test's [report] lines are printed, passing or not,
// and lines that are not events are ignored.
func TestReportLines(t *testing.T) {
	in := strings.Join([]string{
		`# p`,
		`./x.go:1:1: a build error`,
		`{"Action":"run","Package":"p","Test":"TestD"}`,
		`{"Action":"output","Package":"p","Test":"TestD","Output":"    d_test.go:9: [report] differential: 2150 requests; 0 disagreements\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestD","Elapsed":1}`,
		`{"Action":"output","Package":"p","Test":"TestE","Output":"    e_test.go:3: [report] fairness: 3 \u003c 4\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestE","Elapsed":1}`,
	}, "\n")
	var out strings.Builder
	if code := report(strings.NewReader(in), &out, true); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	if want := "\nReported by the tests:\n  differential: 2150 requests; 0 disagreements\n  fairness: 3 < 4\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}
